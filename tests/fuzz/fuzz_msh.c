/*
 * tests/fuzz/fuzz_msh.c — libFuzzer entry point for the Gmsh reader
 * (2.2 / 4.1, ASCII / binary) through the public in-memory reader, so the
 * orientation and validation that follow a read are fuzzed too.
 * Build with `make fuzz` (clang, DEFO_FUZZ=ON).
 */
#include "defo/io.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    defo_read_options opts = defo_default_read_options();
    opts.format = DEFO_FORMAT_MSH;
    defo_mesh *mesh = NULL;
    if (defo_mesh_read_memory(data, size, "fuzz.msh", &opts, &mesh) >= 0) defo_mesh_destroy(mesh);
    return 0;
}
