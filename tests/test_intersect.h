/*
 * tests/test_intersect.h — an exact check that a deformed surface does not
 * pass through itself, independent of defo's contact code: Möller's
 * triangle–triangle test with exact orientation signs (an edge of one
 * triangle crossing the other's interior), over every pair of triangles
 * that share no vertex.
 */
#ifndef DEFO_TESTS_TEST_INTERSECT_H
#define DEFO_TESTS_TEST_INTERSECT_H

#include "defo/mesh.h"

static inline double orient3(const double *a, const double *b, const double *c, const double *d) {
    double u[3], v[3], w[3];
    for (int k = 0; k < 3; k++) u[k] = b[k] - a[k], v[k] = c[k] - a[k], w[k] = d[k] - a[k];
    return u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) +
           u[2] * (v[0] * w[1] - v[1] * w[0]);
}

static inline int segment_crosses(const double *p, const double *q, const double *a,
                                  const double *b, const double *c) {
    const double sp = orient3(a, b, c, p), sq = orient3(a, b, c, q);
    if ((sp > 0 && sq > 0) || (sp < 0 && sq < 0) || sp == sq) return 0;
    const double s1 = orient3(p, q, a, b), s2 = orient3(p, q, b, c), s3 = orient3(p, q, c, a);
    return (s1 > 0 && s2 > 0 && s3 > 0) || (s1 < 0 && s2 < 0 && s3 < 0);
}

static inline int tris_intersect(const double *t0[3], const double *t1[3]) {
    for (int e = 0; e < 3; e++) {
        if (segment_crosses(t0[e], t0[(e + 1) % 3], t1[0], t1[1], t1[2])) return 1;
        if (segment_crosses(t1[e], t1[(e + 1) % 3], t0[0], t0[1], t0[2])) return 1;
    }
    return 0;
}

/* Pairs of the triangles (3 node indices each) at positions x that share
 * no vertex and intersect. */
static inline long intersecting_pairs(const defo_index *faces, defo_index num_faces,
                                      const double *x) {
    long n = 0;
    for (defo_index i = 0; i < num_faces; i++)
        for (defo_index j = i + 1; j < num_faces; j++) {
            const defo_index *a = faces + 3 * i, *b = faces + 3 * j;
            int share = 0;
            for (int p = 0; p < 3; p++)
                for (int q = 0; q < 3; q++) share |= a[p] == b[q];
            if (share) continue;
            const double *t0[3] = {x + 3 * a[0], x + 3 * a[1], x + 3 * a[2]};
            const double *t1[3] = {x + 3 * b[0], x + 3 * b[1], x + 3 * b[2]};
            n += tris_intersect(t0, t1);
        }
    return n;
}

#endif
