/*
 * mesh/generate.c — procedural tet meshes: box/bar (5-, 6- and 24-tet cube
 * splits), sphere, cylinder, torus; tet4 or tet10 (MTPS08 §4.1).
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
 * Curved shapes (sphere, cylinder, torus): a BCC lattice (cube corners and
 * centres, spacing h; each pair of face-adjacent cubes gives 4 tets on the
 * shared face, all congruent with dihedral angles 60° and 90°) covers the
 * shape's box padded by 2h; a tet is kept when its centroid is inside.  Then
 * each boundary node moves toward its closest point on the analytic surface
 * if every incident tet stays positive with a minimum dihedral angle of at
 * least 10° (or no worse than before); nodes that cannot move the full way
 * try half, then a quarter.  Sweeps repeat because a node may be unblocked by
 * its neighbours' moves.  Everything runs in index order: deterministic.
 * tet10: edge midpoints; boundary edge nodes go to the surface point nearest
 * the midpoint when det J stays >= 0.1 of the straight-sided element's at the
 * 15 sample points (corners, edge midpoints, centroid, MTPS08's 4 cubature points).
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

/* ------------------------------------------------------ curved shapes */
typedef enum shape_kind { SHAPE_SPHERE, SHAPE_CYLINDER, SHAPE_TORUS } shape_kind;

typedef struct shape {
    shape_kind kind;
    defo_vec3 c;
    double r;  /* sphere / cylinder radius, torus minor radius */
    double R;  /* torus major radius */
    double hh; /* cylinder half height */
} shape;

/* Signed distance (negative inside). */
static double shape_phi(const shape *sh, defo_vec3 p) {
    defo_vec3 d = defo_v3_sub(p, sh->c);
    switch (sh->kind) {
    case SHAPE_SPHERE:
        return defo_v3_norm(d) - sh->r;
    case SHAPE_CYLINDER: {
        double dr = sqrt(d.x * d.x + d.y * d.y) - sh->r, dz = fabs(d.z) - sh->hh;
        double ox = fmax(dr, 0), oz = fmax(dz, 0);
        return sqrt(ox * ox + oz * oz) + fmin(fmax(dr, dz), 0);
    }
    case SHAPE_TORUS: {
        double q = sqrt(d.x * d.x + d.y * d.y) - sh->R;
        return sqrt(q * q + d.z * d.z) - sh->r;
    }
    }
    return 0;
}

/* Unit vector of (x, y) in the plane, or (1, 0) on the axis. */
static void radial(double x, double y, double *ux, double *uy) {
    double rho = sqrt(x * x + y * y);
    if (rho > 0) {
        *ux = x / rho;
        *uy = y / rho;
    } else {
        *ux = 1;
        *uy = 0;
    }
}

/* Closest point on the surface. */
static defo_vec3 shape_project(const shape *sh, defo_vec3 p) {
    defo_vec3 d = defo_v3_sub(p, sh->c);
    switch (sh->kind) {
    case SHAPE_SPHERE: {
        double n = defo_v3_norm(d);
        defo_vec3 u = n > 0 ? defo_v3_scale(d, 1.0 / n) : defo_v3(1, 0, 0);
        return defo_v3_axpy(sh->c, sh->r, u);
    }
    case SHAPE_CYLINDER: {
        double ux, uy, rho = sqrt(d.x * d.x + d.y * d.y);
        radial(d.x, d.y, &ux, &uy);
        double dr = rho - sh->r, dz = fabs(d.z) - sh->hh, sz = d.z < 0 ? -1 : 1;
        defo_vec3 q;
        if (dr <= 0 && dz <= 0) { /* inside: nearest of side and cap */
            if (dr > dz)
                q = defo_v3(sh->r * ux, sh->r * uy, d.z);
            else
                q = defo_v3(d.x, d.y, sz * sh->hh);
        } else { /* outside: clamp onto the solid */
            double rr = fmin(rho, sh->r), zz = fmax(-sh->hh, fmin(sh->hh, d.z));
            q = defo_v3(rr * ux, rr * uy, zz);
        }
        return defo_v3_add(sh->c, q);
    }
    case SHAPE_TORUS: {
        double ux, uy;
        radial(d.x, d.y, &ux, &uy);
        defo_vec3 ring = defo_v3(sh->R * ux, sh->R * uy, 0);
        defo_vec3 t = defo_v3_sub(d, ring);
        double n = defo_v3_norm(t);
        defo_vec3 u = n > 0 ? defo_v3_scale(t, 1.0 / n) : defo_v3(ux, uy, 0);
        return defo_v3_add(sh->c, defo_v3_axpy(ring, sh->r, u));
    }
    }
    return p;
}

/* Minimum dihedral angle a moved node's incident tets must keep (degrees). */
#define SNAP_MIN_DIHEDRAL 10.0

/* Would moving node `node` to p keep all incident tets acceptable? */
static int move_ok(defo_mesh *m, const defo_node_elems *ne, defo_index node, defo_vec3 p) {
    double *xn = m->x + 3 * (size_t)node;
    double old[3] = {xn[0], xn[1], xn[2]};
    double old_min[64];
    int64_t b = ne->offset[node], cnt = ne->offset[node + 1] - b;
    if (cnt > 64) return 0;
    for (int64_t k = 0; k < cnt; k++) {
        double hi, ar;
        defo_tet_quality(m->x, m->elems + 4 * (size_t)ne->elem[b + k], &old_min[k], &hi, &ar);
    }
    defo_v3_store(xn, p);
    int ok = 1;
    for (int64_t k = 0; k < cnt && ok; k++) {
        const defo_index *v = m->elems + 4 * (size_t)ne->elem[b + k];
        double lo, hi, ar;
        defo_tet_quality(m->x, v, &lo, &hi, &ar);
        if (!(tet_det(m->x, v) > 0) || !(lo >= SNAP_MIN_DIHEDRAL || lo >= old_min[k])) ok = 0;
    }
    xn[0] = old[0];
    xn[1] = old[1];
    xn[2] = old[2];
    return ok;
}

/* Move boundary nodes onto the surface (see the top of the file). */
static defo_status snap_boundary(defo_mesh *m, const shape *sh, double h) {
    defo_boundary bd;
    defo_status s = defo_mesh_boundary(m, 0, &bd);
    if (s) return s;
    defo_node_elems ne;
    s = defo_mesh_node_elems(m, &ne);
    unsigned char *state = defo_calloc((size_t)m->num_nodes + 1, 1); /* 1 boundary, 2 done */
    if (s || !state) {
        defo_boundary_free(&bd);
        defo_node_elems_free(&ne);
        defo_free(state);
        return s ? s : defo_error_oom("generator", (size_t)m->num_nodes);
    }
    for (size_t i = 0; i < 3 * (size_t)bd.num_faces; i++) state[bd.faces[i]] = 1;
    defo_boundary_free(&bd);
    const double fractions[3] = {1.0, 0.5, 0.25};
    for (int f = 0; f < 3; f++) {
        for (int sweep = 0; sweep < 4; sweep++) {
            int moved = 0;
            for (defo_index i = 0; i < m->num_nodes; i++) {
                if (state[i] != 1) continue;
                defo_vec3 p = defo_v3_load(m->x + 3 * (size_t)i);
                defo_vec3 q = shape_project(sh, p);
                if (defo_v3_norm(defo_v3_sub(q, p)) <= 1e-12 * h) {
                    state[i] = 2;
                    continue;
                }
                defo_vec3 t = defo_v3_axpy(p, fractions[f], defo_v3_sub(q, p));
                if (move_ok(m, &ne, i, t)) {
                    defo_v3_store(m->x + 3 * (size_t)i, t);
                    if (f == 0) state[i] = 2; /* partial moves may be retried later */
                    moved = 1;
                }
            }
            if (!moved) break;
        }
    }
    defo_free(state);
    defo_node_elems_free(&ne);
    return DEFO_OK;
}

/* Sample points (barycentric) where a tet10's Jacobian is checked. */
static void tet10_samples(double pts[15][4]) {
    int n = 0;
    for (int i = 0; i < 4; i++, n++)
        for (int k = 0; k < 4; k++) pts[n][k] = k == i ? 1 : 0;
    for (int e = 0; e < 6; e++, n++)
        for (int k = 0; k < 4; k++)
            pts[n][k] = (k == defo_tet_edges[e][0] || k == defo_tet_edges[e][1]) ? 0.5 : 0;
    for (int k = 0; k < 4; k++) pts[n][k] = 0.25;
    n++;
    const double a = 0.25 + 3 * sqrt(5.0) / 20, b = 0.25 - sqrt(5.0) / 20; /* MTPS08 §4.2 */
    for (int i = 0; i < 4; i++, n++)
        for (int k = 0; k < 4; k++) pts[n][k] = k == i ? a : b;
}

static int tet10_valid(const double *x, const defo_index *v, double pts[15][4]) {
    double det0 = tet_det(x, v); /* straight-sided det J (constant) */
    for (int q = 0; q < 15; q++)
        if (!(defo_m3_det(defo_tet10_jacobian(x, v, pts[q])) >= 0.1 * det0)) return 0;
    return 1;
}

/* Move boundary edge nodes of a tet10 mesh onto the surface. */
static defo_status snap_edges(defo_mesh *m, const shape *sh) {
    defo_boundary bd;
    defo_status s = defo_mesh_boundary(m, 1, &bd);
    if (s) return s;
    defo_node_elems ne;
    s = defo_mesh_node_elems(m, &ne);
    unsigned char *is_bd = defo_calloc((size_t)m->num_nodes + 1, 1);
    if (s || !is_bd) {
        defo_boundary_free(&bd);
        defo_node_elems_free(&ne);
        defo_free(is_bd);
        return s ? s : defo_error_oom("generator", (size_t)m->num_nodes);
    }
    for (defo_index f = 0; f < bd.num_faces; f++)
        for (int c = 3; c < 6; c++) is_bd[bd.faces[6 * (size_t)f + (size_t)c]] = 1;
    defo_boundary_free(&bd);
    double pts[15][4];
    tet10_samples(pts);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        if (!is_bd[i]) continue;
        double *xi = m->x + 3 * (size_t)i;
        defo_vec3 old = defo_v3_load(xi);
        defo_v3_store(xi, shape_project(sh, old));
        int ok = 1;
        for (int64_t k = ne.offset[i]; k < ne.offset[i + 1] && ok; k++)
            ok = tet10_valid(m->x, m->elems + 10 * (size_t)ne.elem[k], pts);
        if (!ok) defo_v3_store(xi, old);
    }
    defo_free(is_bd);
    defo_node_elems_free(&ne);
    return DEFO_OK;
}

static defo_status generate_shape(const shape *sh, defo_vec3 lo, defo_vec3 hi, double h, int order,
                                  const char *fn, defo_mesh **out) {
    *out = NULL;
    defo_status s = check_order(order, fn);
    if (s) return s;
    if (!(h > 0) || !isfinite(h))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: cell_size %g (must be > 0)", fn, h);
    /* lattice over the box padded by 2h */
    lo = defo_v3_sub(lo, defo_v3(2 * h, 2 * h, 2 * h));
    hi = defo_v3_add(hi, defo_v3(2 * h, 2 * h, 2 * h));
    double fx = ceil((hi.x - lo.x) / h), fy = ceil((hi.y - lo.y) / h), fz = ceil((hi.z - lo.z) / h);
    s = count_ok(2 * (fx + 1) * (fy + 1) * (fz + 1), "lattice nodes", fn);
    if (!s) s = count_ok(fx * fy * fz, "lattice cells", fn);
    if (s) return s;
    const int nx = (int)fx, ny = (int)fy, nz = (int)fz;
    const size_t n_corner = (size_t)(nx + 1) * (size_t)(ny + 1) * (size_t)(nz + 1);
    const size_t n_lat = n_corner + (size_t)nx * (size_t)ny * (size_t)nz;
    defo_index *map = defo_malloc(n_lat * sizeof *map);
    if (!map) return defo_error_oom("lattice", n_lat * sizeof *map);
    for (size_t i = 0; i < n_lat; i++) map[i] = -1;

#define LCORNER(i, j, k)                                                                           \
    ((size_t)(i) + (size_t)(nx + 1) * ((size_t)(j) + (size_t)(ny + 1) * (size_t)(k)))
#define LCENTRE(i, j, k)                                                                           \
    (n_corner + (size_t)(i) + (size_t)nx * ((size_t)(j) + (size_t)ny * (size_t)(k)))
    /* Two passes over the BCC tets: pass 0 marks used lattice nodes, pass 1
     * emits tets; node numbering follows lattice order (deterministic). */
    defo_mesh *m = NULL;
    s = defo_mesh_create(1, &m);
    for (int pass = 0; pass < 2 && !s; pass++) {
        if (pass == 1) {
            defo_index count = 0;
            for (size_t i = 0; i < n_lat && !s; i++) {
                if (map[i] < 0) continue;
                double px, py, pz;
                if (i < n_corner) {
                    size_t ii = i % (size_t)(nx + 1), jj = i / (size_t)(nx + 1) % (size_t)(ny + 1),
                           kk = i / ((size_t)(nx + 1) * (size_t)(ny + 1));
                    px = lo.x + (double)ii * h;
                    py = lo.y + (double)jj * h;
                    pz = lo.z + (double)kk * h;
                } else {
                    size_t c = i - n_corner;
                    size_t ii = c % (size_t)nx, jj = c / (size_t)nx % (size_t)ny,
                           kk = c / ((size_t)nx * (size_t)ny);
                    px = lo.x + ((double)ii + 0.5) * h;
                    py = lo.y + ((double)jj + 0.5) * h;
                    pz = lo.z + ((double)kk + 0.5) * h;
                }
                map[i] = count++;
                s = defo_mesh_add_node(m, px, py, pz, NULL);
            }
        }
        for (int k = 0; k < nz && !s; k++)
            for (int j = 0; j < ny && !s; j++)
                for (int i = 0; i < nx && !s; i++)
                    for (int axis = 0; axis < 3 && !s; axis++) {
                        int di = axis == 0, dj = axis == 1, dk = axis == 2;
                        if (i + di >= nx || j + dj >= ny || k + dk >= nz) continue;
                        size_t ca = LCENTRE(i, j, k), cb = LCENTRE(i + di, j + dj, k + dk);
                        /* the shared face: corners at offset +1 along axis, square in the
                         * other two axes u, w, in cyclic order */
                        int ci[4], cj[4], ck[4];
                        for (int r = 0; r < 4; r++) {
                            int su = (r == 1 || r == 2), sw = (r >= 2);
                            int o[3] = {0, 0, 0};
                            o[axis] = 1;
                            o[(axis + 1) % 3] = su;
                            o[(axis + 2) % 3] = sw;
                            ci[r] = i + o[0];
                            cj[r] = j + o[1];
                            ck[r] = k + o[2];
                        }
                        for (int r = 0; r < 4 && !s; r++) {
                            int r2 = (r + 1) % 4;
                            size_t pa = LCORNER(ci[r], cj[r], ck[r]),
                                   pb = LCORNER(ci[r2], cj[r2], ck[r2]);
                            /* centroid: (ca + cb + pa + pb) / 4 */
                            defo_vec3 cen =
                                defo_v3(lo.x + h * (2 * i + di + 1 + ci[r] + ci[r2]) * 0.25,
                                        lo.y + h * (2 * j + dj + 1 + cj[r] + cj[r2]) * 0.25,
                                        lo.z + h * (2 * k + dk + 1 + ck[r] + ck[r2]) * 0.25);
                            if (!(shape_phi(sh, cen) < 0)) continue;
                            if (pass == 0) {
                                map[ca] = map[cb] = map[pa] = map[pb] = 0;
                            } else {
                                s = add_tet(m, map[ca], map[cb], map[pa], map[pb]);
                            }
                        }
                    }
    }
#undef LCORNER
#undef LCENTRE
    defo_free(map);
    if (!s && m->num_elems == 0)
        s = defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: cell_size %g is too large for the shape", fn,
                       h);
    if (!s) s = snap_boundary(m, sh, h);
    if (!s) s = maybe_quadratic(&m, order);
    if (!s && order == 2) s = snap_edges(m, sh);
    if (s) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return DEFO_OK;
}

static int finite3(const double c[3]) {
    return isfinite(c[0]) && isfinite(c[1]) && isfinite(c[2]);
}

defo_sphere_def defo_default_sphere_def(void) {
    defo_sphere_def d;
    memset(&d, 0, sizeof d);
    d.radius = 1;
    d.cell_size = 0; /* radius / 4 */
    d.order = 1;
    return d;
}

defo_status defo_generate_sphere(const defo_sphere_def *def, defo_mesh **out) {
    static const char fn[] = "defo_generate_sphere";
    if (!def || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    if (!(def->radius > 0 && isfinite(def->radius)) || !finite3(def->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: radius %g (must be > 0)", fn,
                          def->radius);
    shape sh = {SHAPE_SPHERE, defo_v3_load(def->center), def->radius, 0, 0};
    defo_vec3 r = defo_v3(def->radius, def->radius, def->radius);
    double h = def->cell_size > 0 ? def->cell_size : 0.25 * def->radius;
    return generate_shape(&sh, defo_v3_sub(sh.c, r), defo_v3_add(sh.c, r), h, def->order, fn, out);
}

defo_cylinder_def defo_default_cylinder_def(void) {
    defo_cylinder_def d;
    memset(&d, 0, sizeof d);
    d.radius = 0.5;
    d.height = 2;
    d.cell_size = 0; /* radius / 4 */
    d.order = 1;
    return d;
}

defo_status defo_generate_cylinder(const defo_cylinder_def *def, defo_mesh **out) {
    static const char fn[] = "defo_generate_cylinder";
    if (!def || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    if (!(def->radius > 0 && isfinite(def->radius)) ||
        !(def->height > 0 && isfinite(def->height)) || !finite3(def->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: radius %g, height %g (both must be > 0)",
                          fn, def->radius, def->height);
    shape sh = {SHAPE_CYLINDER, defo_v3_load(def->center), def->radius, 0, 0.5 * def->height};
    defo_vec3 r = defo_v3(def->radius, def->radius, sh.hh);
    double h = def->cell_size > 0 ? def->cell_size : 0.25 * def->radius;
    return generate_shape(&sh, defo_v3_sub(sh.c, r), defo_v3_add(sh.c, r), h, def->order, fn, out);
}

defo_torus_def defo_default_torus_def(void) {
    defo_torus_def d;
    memset(&d, 0, sizeof d);
    d.major_radius = 1;
    d.minor_radius = 0.4;
    d.cell_size = 0; /* minor_radius / 3 */
    d.order = 1;
    return d;
}

defo_status defo_generate_torus(const defo_torus_def *def, defo_mesh **out) {
    static const char fn[] = "defo_generate_torus";
    if (!def || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    if (!(def->minor_radius > 0 && def->major_radius > def->minor_radius &&
          isfinite(def->major_radius)) ||
        !finite3(def->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: major radius %g, minor radius %g (need major > minor > 0)", fn,
                          def->major_radius, def->minor_radius);
    shape sh = {SHAPE_TORUS, defo_v3_load(def->center), def->minor_radius, def->major_radius, 0};
    double e = def->major_radius + def->minor_radius;
    defo_vec3 r = defo_v3(e, e, def->minor_radius);
    double h = def->cell_size > 0 ? def->cell_size : def->minor_radius / 3;
    return generate_shape(&sh, defo_v3_sub(sh.c, r), defo_v3_add(sh.c, r), h, def->order, fn, out);
}
