/*
 * tests/fuzz/fuzz_obj.c — libFuzzer target for the in-memory .obj reader
 * (defo_read_obj).  Any input must be read or refused with a status and a
 * message; ASan/UBSan (enabled by make fuzz) catch overreads, leaks and UB.
 */
#include "io/formats.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    defo_mesh *mesh = NULL;
    defo_status s = defo_read_obj((const char *)data, size, "fuzz.obj", &mesh);
    if (s >= 0 && !mesh) __builtin_trap(); /* success must produce a mesh */
    if (s < 0 && mesh) __builtin_trap();   /* failure must leave *out NULL */
    defo_mesh_destroy(mesh);
    return 0;
}
