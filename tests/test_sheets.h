/*
 * tests/test_sheets.h — the flat sheet the shell tests start from: a
 * rectangle of nx × ny cells (two triangles each), sx × sy metres, in the
 * z = 0 plane (defo_generate_rectangle's defaults otherwise).
 */
#ifndef DEFO_TESTS_TEST_SHEETS_H
#define DEFO_TESTS_TEST_SHEETS_H

#include "defo/mesh.h"
#include "defo/world.h"
#include "test.h"

#include <math.h>

static inline defo_mesh *grid(int nx, int ny, double sx, double sy) {
    defo_rectangle_def d = defo_default_rectangle_def();
    d.cells[0] = nx, d.cells[1] = ny;
    d.size[0] = sx, d.size[1] = sy;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_rectangle(&d, &m));
    return m;
}

/* The angle against +x, in the xz plane, of the segment from the node
 * column at rest x = xa to the one at x = xb (their summed positions): a
 * strip's tip angle when the two are its last columns. */
static inline double tip_angle(const defo_world *w, defo_body_id id, const defo_mesh *m, double xa,
                               double xb) {
    const double *x = defo_body_positions(w, id);
    double dx = 0, dz = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double X = m->x[3 * i];
        const double s = fabs(X - xb) < 1e-9 ? 1.0 : fabs(X - xa) < 1e-9 ? -1.0 : 0.0;
        dx += s * x[3 * i], dz += s * x[3 * i + 2];
    }
    return atan2(dz, dx);
}

#endif
