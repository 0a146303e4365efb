/*
 * tests/fuzz/fuzz_tetgen.c — libFuzzer entry point for the TetGen reader.
 * The input is the in-memory layout of defo_mesh_read_memory: the .node
 * text, a line "# .ele", the .ele text, optionally "# .face" and the .face
 * text.  Build with `make fuzz` (clang, DEFO_FUZZ=ON).
 */
#include "defo/io.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    defo_read_options opts = defo_default_read_options();
    opts.format = DEFO_FORMAT_TETGEN;
    defo_mesh *mesh = NULL;
    if (defo_mesh_read_memory(data, size, "fuzz.node", &opts, &mesh) >= 0) defo_mesh_destroy(mesh);
    return 0;
}
