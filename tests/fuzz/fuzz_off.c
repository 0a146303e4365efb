/*
 * tests/fuzz/fuzz_off.c — libFuzzer target for the in-memory .off reader
 * (defo_read_off).  Any input must be read or refused with a status and a
 * message; ASan/UBSan (enabled by make fuzz) catch overreads, leaks and UB.
 */
#include "io/formats.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    defo_mesh *mesh = NULL;
    defo_status s = defo_read_off((const char *)data, size, "fuzz.off", &mesh);
    if (s >= 0 && !mesh) __builtin_trap(); /* success must produce a mesh */
    if (s < 0 && mesh) __builtin_trap();   /* failure must leave *out NULL */
    defo_mesh_destroy(mesh);
    return 0;
}
