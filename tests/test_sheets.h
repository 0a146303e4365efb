/*
 * tests/test_sheets.h — the flat sheet the shell tests start from: a
 * rectangle of nx × ny cells (two triangles each), sx × sy metres, in the
 * z = 0 plane (defo_generate_rectangle's defaults otherwise).
 */
#ifndef DEFO_TESTS_TEST_SHEETS_H
#define DEFO_TESTS_TEST_SHEETS_H

#include "defo/mesh.h"
#include "test.h"

static inline defo_mesh *grid(int nx, int ny, double sx, double sy) {
    defo_rectangle_def d = defo_default_rectangle_def();
    d.cells[0] = nx, d.cells[1] = ny;
    d.size[0] = sx, d.size[1] = sy;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_rectangle(&d, &m));
    return m;
}

#endif
