/*
 * tests/test_surfaces.h — triangle surfaces and reference distances shared by
 * the geometry and mesher tests: a UV sphere and a torus (outward,
 * counter-clockwise),
 * the brute-force distance to a surface computed by a different method from
 * the library's (projection on each triangle's plane, then its edges), and
 * the inscribed radius of a convex polyhedron about a centre.
 */
#ifndef DEFO_TESTS_TEST_SURFACES_H
#define DEFO_TESTS_TEST_SURFACES_H

#include "defo/mesh.h"

#include <math.h>

#define PI 3.14159265358979323846

/* UV sphere: poles + (nlat-1) rings of nlon vertices, outward CCW. */
static inline defo_mesh *uv_sphere(double cx, double cy, double cz, double r, int nlat, int nlon) {
    defo_mesh *m = NULL;
    if (defo_mesh_create(0, &m)) return NULL;
    defo_mesh_add_node(m, cx, cy, cz + r, NULL); /* 0: north */
    for (int i = 1; i < nlat; i++) {
        double th = PI * i / nlat;
        for (int j = 0; j < nlon; j++) {
            double ph = 2 * PI * j / nlon;
            defo_mesh_add_node(m, cx + r * sin(th) * cos(ph), cy + r * sin(th) * sin(ph),
                               cz + r * cos(th), NULL);
        }
    }
    defo_index south = m->num_nodes;
    defo_mesh_add_node(m, cx, cy, cz - r, NULL);
#define RING(i, j) (1 + ((i)-1) * nlon + ((j) % nlon))
    for (int j = 0; j < nlon; j++) {
        defo_index t[3] = {0, RING(1, j), RING(1, j + 1)};
        defo_mesh_add_tri(m, t, 3, 0);
    }
    for (int i = 1; i < nlat - 1; i++)
        for (int j = 0; j < nlon; j++) {
            defo_index a = RING(i, j), b = RING(i, j + 1), c = RING(i + 1, j),
                       d = RING(i + 1, j + 1);
            defo_index t1[3] = {a, c, d}, t2[3] = {a, d, b};
            defo_mesh_add_tri(m, t1, 3, 0);
            defo_mesh_add_tri(m, t2, 3, 0);
        }
    for (int j = 0; j < nlon; j++) {
        defo_index t[3] = {south, RING(nlat - 1, j + 1), RING(nlat - 1, j)};
        defo_mesh_add_tri(m, t, 3, 0);
    }
#undef RING
    return m;
}

/* Torus around the z axis: tube centre at distance R from the axis, tube
 * radius r; n1 segments around the axis, n2 around the tube; outward CCW. */
static inline defo_mesh *torus_surface(double R, double r, int n1, int n2) {
    defo_mesh *m = NULL;
    if (defo_mesh_create(0, &m)) return NULL;
    for (int i = 0; i < n1; i++) {
        double u = 2 * PI * i / n1;
        for (int j = 0; j < n2; j++) {
            double v = 2 * PI * j / n2;
            defo_mesh_add_node(m, (R + r * cos(v)) * cos(u), (R + r * cos(v)) * sin(u), r * sin(v),
                               NULL);
        }
    }
    for (int i = 0; i < n1; i++)
        for (int j = 0; j < n2; j++) {
            defo_index a = (defo_index)(i * n2 + j), b = (defo_index)(((i + 1) % n1) * n2 + j),
                       c = (defo_index)(i * n2 + (j + 1) % n2),
                       d = (defo_index)(((i + 1) % n1) * n2 + (j + 1) % n2);
            defo_index t1[3] = {a, b, d}, t2[3] = {a, d, c};
            defo_mesh_add_tri(m, t1, 3, 0);
            defo_mesh_add_tri(m, t2, 3, 0);
        }
    return m;
}

static inline double dot3(const double *a, const double *b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Distance from p to segment ab. */
static inline double seg_dist(const double *p, const double *a, const double *b) {
    double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
           ap[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
    double l2 = dot3(ab, ab), t = l2 > 0 ? dot3(ap, ab) / l2 : 0;
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    double d[3] = {ap[0] - t * ab[0], ap[1] - t * ab[1], ap[2] - t * ab[2]};
    return sqrt(dot3(d, d));
}

/* Distance from p to triangle abc, by projection on the plane then edges
 * (a different algorithm from the library's Voronoi-region walk). */
static inline double tri_dist(const double *p, const double *a, const double *b, const double *c) {
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
           v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    double nn = dot3(n, n);
    if (nn > 0) {
        double w[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
        double s = dot3(w, n) / nn;
        double q[3] = {w[0] - s * n[0], w[1] - s * n[1], w[2] - s * n[2]};
        /* barycentric of q in (u, v) */
        double uu = dot3(u, u), uv = dot3(u, v), vv = dot3(v, v), qu = dot3(q, u), qv = dot3(q, v);
        double den = uu * vv - uv * uv;
        double beta = (vv * qu - uv * qv) / den, gamma = (uu * qv - uv * qu) / den;
        if (beta >= 0 && gamma >= 0 && beta + gamma <= 1) return fabs(s) * sqrt(nn);
    }
    double d = seg_dist(p, a, b);
    d = fmin(d, seg_dist(p, b, c));
    return fmin(d, seg_dist(p, c, a));
}

static inline double brute_dist(const defo_mesh *s, const double *p) {
    double best = INFINITY;
    for (defo_index t = 0; t < s->num_tris; t++) {
        const defo_index *v = s->tris + 3 * (size_t)t;
        best = fmin(best, tri_dist(p, s->x + 3 * (size_t)v[0], s->x + 3 * (size_t)v[1],
                                   s->x + 3 * (size_t)v[2]));
    }
    return best;
}

/* Smallest distance from c to the triangles' planes (inscribed radius). */
static inline double inscribed_radius(const defo_mesh *s, const double *c) {
    double rin = INFINITY;
    for (defo_index t = 0; t < s->num_tris; t++) {
        const double *a = s->x + 3 * (size_t)s->tris[3 * t],
                     *b = s->x + 3 * (size_t)s->tris[3 * t + 1],
                     *e = s->x + 3 * (size_t)s->tris[3 * t + 2];
        double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
               v[3] = {e[0] - a[0], e[1] - a[1], e[2] - a[2]};
        double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                       u[0] * v[1] - u[1] * v[0]};
        double w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        rin = fmin(rin, fabs(dot3(w, n)) / sqrt(dot3(n, n)));
    }
    return rin;
}

#endif
