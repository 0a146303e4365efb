/*
 * mesh/generate.c — procedural tet meshes: box/bar (5-, 6- and 24-tet cube
 * splits); tet4 or tet10 (MTPS08 §4.1).
 *
 * Box splits (all conforming: a face shared by two cubes is cut the same way
 * from both sides):
 *   6 tets: Kuhn/Freudenthal — one tet per permutation (a,b,c) of the axes,
 *     path v000 → +e_a → +e_b → +e_c = v111.  Every cube is cut alike, and a
 *     cube face is cut along its diagonal through the lattice point with the
 *     smaller coordinate sum, which both neighbours agree on.
 *   5 tets: a central tet on the 4 cube corners whose GLOBAL lattice parity
 *     (i+j+k) is even and 4 corner tets at the odd corners.  A face diagonal
 *     joins the two even corners of the face, whichever cube looks at it.
 *   24 tets: extra nodes at face and cube centres; each face fans into 4
 *     triangles around its centre, each coned to the cube centre.  Keeps the
 *     cube's full symmetry (no preferred diagonal), e.g. for bending tests.
 *
 * Sphere, cylinder and torus: mesher/shapes.c (they are meshed by the
 * mesher).
 */
#include "defo/mesh.h"
#include "defo/math.h"
#include "base/base.h"
#include "mesh/mesh_internal.h"

#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */
static double tet_det(const double *x, const defo_index *v) {
    defo_vec3 p0 = defo_v3_load(x + 3 * (size_t)v[0]);
    defo_vec3 a = defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[1]), p0);
    defo_vec3 b = defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[2]), p0);
    defo_vec3 c = defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[3]), p0);
    return defo_v3_dot(a, defo_v3_cross(b, c));
}

/* Append tet a b c d, swapping two corners if it is negatively oriented. */
static defo_status add_tet(defo_mesh *m, defo_index a, defo_index b, defo_index c, defo_index d) {
    defo_index v[4] = {a, b, c, d};
    if (tet_det(m->x, v) < 0) {
        v[1] = c;
        v[2] = b;
    }
    return defo_mesh_add_elem(m, v, 0);
}

/* Replace *mesh by its tet10 version when order == 2. */
static defo_status maybe_quadratic(defo_mesh **mesh, int order) {
    if (order != 2) return DEFO_OK;
    defo_mesh *q = NULL;
    defo_status s = defo_mesh_to_quadratic(*mesh, &q);
    if (s) return s;
    defo_mesh_destroy(*mesh);
    *mesh = q;
    return DEFO_OK;
}

static defo_status check_order(int order, const char *fn) {
    if (order != 1 && order != 2)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: order %d (must be 1 or 2)", fn, order);
    return DEFO_OK;
}

/* Checked product of counts for node/element totals. */
static defo_status count_ok(double n, const char *what, const char *fn) {
    if (!(n <= (double)DEFO_INDEX_MAX / 24.0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: too many %s (%.3g)", fn, what, n);
    return DEFO_OK;
}

/* ---------------------------------------------------------------- box */
defo_box_def defo_default_box_def(void) {
    defo_box_def d;
    memset(&d, 0, sizeof d);
    for (int k = 0; k < 3; k++) {
        d.size[k] = 1;
        d.cells[k] = 4;
    }
    d.split = DEFO_SPLIT_6;
    d.order = 1;
    return d;
}

defo_status defo_generate_box(const defo_box_def *def, defo_mesh **out) {
    static const char fn[] = "defo_generate_box";
    if (!def || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    defo_status s = check_order(def->order, fn);
    if (s) return s;
    int n[3];
    for (int k = 0; k < 3; k++) {
        if (!(def->size[k] > 0 && isfinite(def->size[k])) || !isfinite(def->origin[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: size[%d] = %g (must be > 0)", fn, k,
                              def->size[k]);
        if (def->cell_size > 0) {
            double c = ceil(def->size[k] / def->cell_size - 1e-9);
            s = count_ok(c, "cells", fn);
            if (s) return s;
            n[k] = c < 1 ? 1 : (int)c;
        } else {
            n[k] = def->cells[k];
        }
        if (n[k] < 1)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: cells[%d] = %d (must be >= 1)", fn, k,
                              n[k]);
    }
    if (def->split != DEFO_SPLIT_5 && def->split != DEFO_SPLIT_6 && def->split != DEFO_SPLIT_24)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: unknown split %d", fn, (int)def->split);
    s = count_ok((double)(n[0] + 1) * (n[1] + 1) * (n[2] + 1) * 2, "nodes", fn);
    if (!s) s = count_ok((double)n[0] * n[1] * n[2], "cells", fn);
    if (s) return s;

    const int nx = n[0], ny = n[1], nz = n[2];
    const double hx = def->size[0] / nx, hy = def->size[1] / ny, hz = def->size[2] / nz;
    const double *o = def->origin;
    defo_index n_corner = (defo_index)((nx + 1) * (ny + 1) * (nz + 1));
    defo_index n_fx = (defo_index)((nx + 1) * ny * nz), n_fy = (defo_index)(nx * (ny + 1) * nz),
               n_fz = (defo_index)(nx * ny * (nz + 1)), n_cell = (defo_index)(nx * ny * nz);
    int per_cube = def->split == DEFO_SPLIT_5 ? 5 : def->split == DEFO_SPLIT_6 ? 6 : 24;
    defo_index n_nodes = n_corner + (def->split == DEFO_SPLIT_24 ? n_fx + n_fy + n_fz + n_cell : 0);

    defo_mesh *m = NULL;
    s = defo_mesh_create(1, &m);
    if (!s) s = defo_mesh_reserve(m, n_nodes, n_cell * per_cube, 0);
    /* corners, x fastest */
    for (int k = 0; !s && k <= nz; k++)
        for (int j = 0; !s && j <= ny; j++)
            for (int i = 0; !s && i <= nx; i++)
                s = defo_mesh_add_node(m, o[0] + i * hx, o[1] + j * hy, o[2] + k * hz, NULL);
    if (!s && def->split == DEFO_SPLIT_24) {
        for (int k = 0; !s && k < nz; k++) /* x faces */
            for (int j = 0; !s && j < ny; j++)
                for (int i = 0; !s && i <= nx; i++)
                    s = defo_mesh_add_node(m, o[0] + i * hx, o[1] + (j + 0.5) * hy,
                                           o[2] + (k + 0.5) * hz, NULL);
        for (int k = 0; !s && k < nz; k++) /* y faces */
            for (int j = 0; !s && j <= ny; j++)
                for (int i = 0; !s && i < nx; i++)
                    s = defo_mesh_add_node(m, o[0] + (i + 0.5) * hx, o[1] + j * hy,
                                           o[2] + (k + 0.5) * hz, NULL);
        for (int k = 0; !s && k <= nz; k++) /* z faces */
            for (int j = 0; !s && j < ny; j++)
                for (int i = 0; !s && i < nx; i++)
                    s = defo_mesh_add_node(m, o[0] + (i + 0.5) * hx, o[1] + (j + 0.5) * hy,
                                           o[2] + k * hz, NULL);
        for (int k = 0; !s && k < nz; k++) /* cube centres */
            for (int j = 0; !s && j < ny; j++)
                for (int i = 0; !s && i < nx; i++)
                    s = defo_mesh_add_node(m, o[0] + (i + 0.5) * hx, o[1] + (j + 0.5) * hy,
                                           o[2] + (k + 0.5) * hz, NULL);
    }
#define CORNER(i, j, k) ((defo_index)((i) + (nx + 1) * ((j) + (ny + 1) * (k))))
    for (int k = 0; !s && k < nz; k++)
        for (int j = 0; !s && j < ny; j++)
            for (int i = 0; !s && i < nx; i++) {
                defo_index c[8]; /* local corner b = bit0 x, bit1 y, bit2 z */
                for (int b = 0; b < 8; b++)
                    c[b] = CORNER(i + (b & 1), j + (b >> 1 & 1), k + (b >> 2));
                if (def->split == DEFO_SPLIT_6) {
                    static const int perm[6][3] = {{1, 2, 4}, {1, 4, 2}, {2, 1, 4},
                                                   {2, 4, 1}, {4, 1, 2}, {4, 2, 1}};
                    for (int p = 0; !s && p < 6; p++) {
                        int b1 = perm[p][0], b2 = b1 | perm[p][1];
                        s = add_tet(m, c[0], c[b1], c[b2], c[7]);
                    }
                } else if (def->split == DEFO_SPLIT_5) {
                    int even_local[4], odd_local[4], ne = 0, no = 0;
                    for (int b = 0; b < 8; b++) {
                        int par = (i + j + k + (b & 1) + (b >> 1 & 1) + (b >> 2)) & 1;
                        if (par == 0)
                            even_local[ne++] = b;
                        else
                            odd_local[no++] = b;
                    }
                    s = add_tet(m, c[even_local[0]], c[even_local[1]], c[even_local[2]],
                                c[even_local[3]]);
                    for (int q = 0; !s && q < 4; q++) {
                        int b = odd_local[q];
                        s = add_tet(m, c[b], c[b ^ 1], c[b ^ 2], c[b ^ 4]);
                    }
                } else {
                    defo_index centre =
                        n_corner + n_fx + n_fy + n_fz + (defo_index)(i + nx * (j + ny * k));
                    /* the 6 faces: axis, side; 4 corners in cyclic order */
                    for (int axis = 0; !s && axis < 3; axis++)
                        for (int side = 0; !s && side < 2; side++) {
                            int u = 1 << ((axis + 1) % 3), w = 1 << ((axis + 2) % 3);
                            int base = side << axis;
                            int ring[4] = {base, base | u, base | u | w, base | w};
                            defo_index fc;
                            if (axis == 0)
                                fc = n_corner + (defo_index)(i + side + (nx + 1) * (j + ny * k));
                            else if (axis == 1)
                                fc = n_corner + n_fx +
                                     (defo_index)(i + nx * (j + side + (ny + 1) * k));
                            else
                                fc = n_corner + n_fx + n_fy +
                                     (defo_index)(i + nx * (j + ny * (k + side)));
                            for (int r = 0; !s && r < 4; r++)
                                s = add_tet(m, centre, fc, c[ring[r]], c[ring[(r + 1) % 4]]);
                        }
                }
            }
#undef CORNER
    if (!s) s = maybe_quadratic(&m, def->order);
    if (s) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return DEFO_OK;
}
