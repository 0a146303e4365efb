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

/* A strip of length L along x (centred, nx segments of hx) bent to a
 * regular polygon with turning angle φ: its first segment clamped, its last
 * one prescribed turned by (nx − 1) φ about the polygon's centre (the next
 * step takes it there).  Returns that angle, the tip's as tip_angle
 * measures it; *tip_set (may be NULL) the tip's prescribed set. */
static inline double bend_strip(defo_world *w, defo_body_id id, double L, double hx, int nx,
                                double phi, int *tip_set) {
    const double x0 = -0.5 * L;
    const double lo[3] = {x0 - 1e-9, -1, -1}, hi[3] = {x0 + hx + 1e-9, 1, 1};
    const double lo2[3] = {-x0 - hx - 1e-9, -1, -1}, hi2[3] = {-x0 + 1e-9, 1, 1};
    defo_region clamp = defo_region_box(lo, hi), tip = defo_region_box(lo2, hi2);
    int set = -1;
    CHECK_OK(defo_body_prescribe(w, id, &clamp, NULL, NULL));
    CHECK_OK(defo_body_prescribe(w, id, &tip, NULL, &set));
    if (tip_set) *tip_set = set;
    const double al = (nx - 1) * phi, ca = cos(al), sa = sin(al);
    const double C[3] = {x0 + 0.5 * hx, 0, 0.5 * hx / tan(0.5 * phi)};
    const double R[9] = {ca, 0, -sa, 0, 1, 0, sa, 0, ca};
    const double q[3] = {C[0] + (nx - 1) * hx, 0, C[2]};
    const double T[3] = {C[0] - (R[0] * q[0] + R[2] * q[2]), 0, C[2] - (R[6] * q[0] + R[8] * q[2])};
    CHECK_OK(defo_body_set_transform(w, id, set, R, T));
    return al;
}

#endif
