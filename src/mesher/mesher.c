/*
 * mesher/mesher.c — closed triangle surface → tet4/tet10 simulation mesh.
 *
 * The crystalline approach of ITF04 §10 after [MBTF03], simplified:
 *  1. A body-centred cubic lattice of spacing h (cube corners and cube
 *     centres) covers the surface's box padded by 2h.  Its tets join two
 *     face-adjacent cube centres and an edge of the shared face: 12 per cube,
 *     all congruent, dihedral angles 60° and 90°.
 *  2. A tet is kept when the generalised winding number at its centroid is
 *     above 1/2 in magnitude (sdf.c), or when its centroid is outside but
 *     within def->band × h of the surface (the boundary band: without it the
 *     kept set sits inside the surface and the volume comes out 1-4 % low at
 *     20 cells; 0.1 roughly halves that and keeps nodes within h/2).
 *     Cheaply: a cube whose centre has no triangle within (0.6 + band)h is
 *     "far": its 12 tets' centroids (within 0.56h of the centre) and their
 *     band lie in a surface-free ball, and 6-adjacent far cubes' balls
 *     overlap, so a connected set of far cubes has one winding number,
 *     evaluated once.  Only tets owned by cubes near the surface evaluate
 *     their own centroid.  Blocks of 4³ cubes are tested first the same way.
 *  3. Boundary nodes move toward their closest point on the surface (the
 *     snapping/compression of MBTF03 without the physics): a move is taken
 *     only if every incident tet stays positively oriented with a minimum
 *     dihedral angle >= def->min_dihedral (or no worse than before); a
 *     refused move tries 3/4, 1/2, 1/4 of the way.  Sweeps repeat because a
 *     neighbour's move can unblock a node.
 *  4. Quality optimisation (optimize.c): flips, removal of boundary
 *     wedges, smoothing that maximises each node's worst dihedral angle
 *     (boundary nodes slide on the surface), renewed snapping, until no tet
 *     is below def->target_dihedral; then the same for the smallest
 *     altitude (def->target_altitude) without an angle falling below the
 *     target; then boundary nodes move along their normals to cancel the
 *     chord error so the volume is the surface's.  The quality after step
 *     3 is reported as quality_snapped.
 *  5. tet10 (MTPS08 §6.1): edge midpoints (defo_mesh_to_quadratic) of the
 *     optimised corners; each boundary edge node moves to the surface point
 *     closest to it when every incident element keeps det J >=
 *     tet10_min_jacobian × the straight element's at its corners, edge
 *     nodes, centroid and the 4 cubature points (else half way, else it
 *     stays).
 * No refinement near the surface (uniform h).  Step 3's guard
 * (def->min_dihedral, 10°) keeps the snapped mesh untangled for step 4.
 *
 * Determinism: parallel loops only fill per-cube / per-node slots; all
 * decisions that depend on order (numbering, snapping sweeps, the
 * optimisation) run serially in lattice / node / tet index order.  Same surface + definition = same mesh bit
 * for bit, for any thread count.
 */
#include "mesher/mesher_internal.h"
#include "defo/element.h"
#include "defo/math.h"
#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define BLOCK 4 /* cubes per block side in the coarse far test */

defo_mesher_def defo_default_mesher_def(void) {
    defo_mesher_def d;
    memset(&d, 0, sizeof d);
    d.cells = 20;
    d.cell_size = 0;
    d.order = 1;
    d.min_dihedral = 10.0;
    d.tet10_min_jacobian = 0.1;
    d.band = 0.1;
    d.target_dihedral = 20.0;
    d.target_altitude = 0.2;
    d.max_boundary_distance = 0.45;
    d.sdf = defo_default_sdf_def();
    return d;
}

/* ------------------------------------------------------------ lattice */
typedef struct lattice {
    double lo[3];
    double h;
    int n[3];        /* cubes per axis */
    size_t n_corner; /* (n+1)^3 corner nodes, then n^3 centre nodes */
    size_t n_cells;
} lattice;

static size_t cell_id(const lattice *L, int i, int j, int k) {
    return (size_t)i + (size_t)L->n[0] * ((size_t)j + (size_t)L->n[1] * (size_t)k);
}
static size_t corner_id(const lattice *L, int i, int j, int k) {
    return (size_t)i + (size_t)(L->n[0] + 1) * ((size_t)j + (size_t)(L->n[1] + 1) * (size_t)k);
}
static void cell_centre(const lattice *L, int i, int j, int k, double p[3]) {
    p[0] = L->lo[0] + L->h * ((double)i + 0.5);
    p[1] = L->lo[1] + L->h * ((double)j + 0.5);
    p[2] = L->lo[2] + L->h * ((double)k + 0.5);
}

/* The 4 tets of cube (i,j,k) and its neighbour along axis: tet r joins the
 * two centres and the face edge (ring[r], ring[r+1]).  Writes the 4 lattice
 * node ids and the centroid.  Returns 0 when the neighbour is off the lattice. */
static int cube_tet(const lattice *L, int i, int j, int k, int axis, int r, size_t v[4],
                    double centroid[3]) {
    int di = axis == 0, dj = axis == 1, dk = axis == 2;
    if (i + di >= L->n[0] || j + dj >= L->n[1] || k + dk >= L->n[2]) return 0;
    int c[2][3];
    for (int s = 0; s < 2; s++) {
        int rr = (r + s) % 4;
        int su = (rr == 1 || rr == 2), sw = (rr >= 2);
        int o[3] = {0, 0, 0};
        o[axis] = 1;
        o[(axis + 1) % 3] = su;
        o[(axis + 2) % 3] = sw;
        c[s][0] = i + o[0];
        c[s][1] = j + o[1];
        c[s][2] = k + o[2];
    }
    v[0] = L->n_corner + cell_id(L, i, j, k);
    v[1] = L->n_corner + cell_id(L, i + di, j + dj, k + dk);
    v[2] = corner_id(L, c[0][0], c[0][1], c[0][2]);
    v[3] = corner_id(L, c[1][0], c[1][1], c[1][2]);
    int a[3] = {i, j, k}, d[3] = {di, dj, dk};
    for (int q = 0; q < 3; q++)
        centroid[q] = L->lo[q] + L->h * (2 * a[q] + d[q] + 1 + c[0][q] + c[1][q]) * 0.25;
    return 1;
}

static void lattice_node_pos(const lattice *L, size_t id, double p[3]) {
    if (id < L->n_corner) {
        size_t nx = (size_t)L->n[0] + 1, ny = (size_t)L->n[1] + 1;
        size_t i = id % nx, j = id / nx % ny, k = id / (nx * ny);
        p[0] = L->lo[0] + L->h * (double)i;
        p[1] = L->lo[1] + L->h * (double)j;
        p[2] = L->lo[2] + L->h * (double)k;
    } else {
        size_t c = id - L->n_corner, nx = (size_t)L->n[0], ny = (size_t)L->n[1];
        cell_centre(L, (int)(c % nx), (int)(c / nx % ny), (int)(c / (nx * ny)), p);
    }
}

/* -------------------------------------------------- tet classification */
/* keep[c]: bit (4*axis + r) set when that tet of cube c is inside; amb[c]:
 * the same for kept tets whose winding number is ambiguous (|w| < 3/4),
 * which only happens in bulk when the surface has large holes. */
static defo_status classify(const defo_surface_sdf *sdf, const lattice *L, double band,
                            uint16_t *keep, uint16_t *amb) {
    const size_t nc = L->n_cells;
    uint8_t *far = defo_calloc(nc + 1, 1);
    int32_t *comp = defo_malloc((nc + 1) * sizeof *comp);
    size_t *queue = defo_malloc((nc + 1) * sizeof *queue);
    uint8_t *comp_inside = NULL;
    if (!far || !comp || !queue) {
        defo_free(far);
        defo_free(comp);
        defo_free(queue);
        return defo_error_oom("mesher lattice", nc * (1 + sizeof *comp + sizeof *queue));
    }
    const double h = L->h;
    const double far_r = (0.6 + band) * h; /* step 2 */
    const int bx = (L->n[0] + BLOCK - 1) / BLOCK, by = (L->n[1] + BLOCK - 1) / BLOCK,
              bz = (L->n[2] + BLOCK - 1) / BLOCK;
    const int64_t nblocks = (int64_t)bx * by * bz;
    /* far flags: each block writes only its own cubes */
    DEFO_PARALLEL_FOR
    for (int64_t b = 0; b < nblocks; b++) {
        int b0 = (int)(b % bx), b1 = (int)(b / bx % by), b2 = (int)(b / ((int64_t)bx * by));
        int i0 = b0 * BLOCK, j0 = b1 * BLOCK, k0 = b2 * BLOCK;
        int i1 = DEFO_MIN(i0 + BLOCK, L->n[0]), j1 = DEFO_MIN(j0 + BLOCK, L->n[1]),
            k1 = DEFO_MIN(k0 + BLOCK, L->n[2]);
        double bc[3] = {L->lo[0] + h * 0.5 * (i0 + i1), L->lo[1] + h * 0.5 * (j0 + j1),
                        L->lo[2] + h * 0.5 * (k0 + k1)};
        double half =
            0.5 * h *
            sqrt((double)((i1 - i0) * (i1 - i0) + (j1 - j0) * (j1 - j0) + (k1 - k0) * (k1 - k0)));
        int block_far = !defo_surface_sdf_within(sdf, bc, half + far_r);
        for (int k = k0; k < k1; k++)
            for (int j = j0; j < j1; j++)
                for (int i = i0; i < i1; i++) {
                    double p[3];
                    cell_centre(L, i, j, k, p);
                    far[cell_id(L, i, j, k)] =
                        (uint8_t)(block_far || !defo_surface_sdf_within(sdf, p, far_r));
                }
    }
    /* connected components of far cubes, in cube order */
    int32_t ncomp = 0;
    for (size_t c = 0; c < nc; c++) comp[c] = -1;
    for (size_t c = 0; c < nc; c++) {
        if (!far[c] || comp[c] >= 0) continue;
        size_t head = 0, tail = 0;
        comp[c] = ncomp;
        queue[tail++] = c;
        while (head < tail) {
            size_t q = queue[head++];
            int i = (int)(q % (size_t)L->n[0]), j = (int)(q / (size_t)L->n[0] % (size_t)L->n[1]),
                k = (int)(q / ((size_t)L->n[0] * (size_t)L->n[1]));
            const int nb[6][3] = {{-1, 0, 0}, {1, 0, 0},  {0, -1, 0},
                                  {0, 1, 0},  {0, 0, -1}, {0, 0, 1}};
            for (int e = 0; e < 6; e++) {
                int a = i + nb[e][0], b = j + nb[e][1], d = k + nb[e][2];
                if (a < 0 || b < 0 || d < 0 || a >= L->n[0] || b >= L->n[1] || d >= L->n[2])
                    continue;
                size_t u = cell_id(L, a, b, d);
                if (!far[u] || comp[u] >= 0) continue;
                comp[u] = ncomp;
                queue[tail++] = u;
            }
        }
        ncomp++;
    }
    comp_inside = defo_calloc((size_t)ncomp + 1, 1);
    double *comp_w = defo_malloc(((size_t)ncomp + 1) * sizeof *comp_w);
    size_t *comp_seed = defo_malloc(((size_t)ncomp + 1) * sizeof *comp_seed);
    if (!comp_inside || !comp_w || !comp_seed) {
        defo_free(far);
        defo_free(comp);
        defo_free(queue);
        defo_free(comp_inside);
        defo_free(comp_w);
        defo_free(comp_seed);
        return defo_error_oom("mesher components", (size_t)ncomp * 16);
    }
    for (size_t c = nc; c-- > 0;)
        if (comp[c] >= 0) comp_seed[comp[c]] = c; /* lowest cube of each component */
    DEFO_PARALLEL_FOR
    for (int32_t q = 0; q < ncomp; q++) {
        size_t c = comp_seed[q];
        double p[3];
        cell_centre(L, (int)(c % (size_t)L->n[0]), (int)(c / (size_t)L->n[0] % (size_t)L->n[1]),
                    (int)(c / ((size_t)L->n[0] * (size_t)L->n[1])), p);
        comp_w[q] = defo_surface_sdf_winding(sdf, p);
    }
    for (int32_t q = 0; q < ncomp; q++)
        comp_inside[q] = (uint8_t)((fabs(comp_w[q]) > 0.5) + (fabs(comp_w[q]) > 0.75));
    /* tets: from a far owner (or far neighbour) when possible, else their centroid */
    DEFO_PARALLEL_FOR
    for (int64_t c = 0; c < (int64_t)nc; c++) {
        int i = (int)((size_t)c % (size_t)L->n[0]),
            j = (int)((size_t)c / (size_t)L->n[0] % (size_t)L->n[1]),
            k = (int)((size_t)c / ((size_t)L->n[0] * (size_t)L->n[1]));
        uint16_t bits = 0, abits = 0;
        for (int axis = 0; axis < 3; axis++)
            for (int r = 0; r < 4; r++) {
                size_t v[4];
                double cen[3];
                if (!cube_tet(L, i, j, k, axis, r, v, cen)) continue;
                size_t ca = v[0] - L->n_corner, cb = v[1] - L->n_corner;
                int inside; /* 0 out, 1 ambiguous inside, 2 inside */
                if (far[ca])
                    inside = comp_inside[comp[ca]];
                else if (far[cb])
                    inside = comp_inside[comp[cb]];
                else {
                    double w = fabs(defo_surface_sdf_winding(sdf, cen));
                    inside = (w > 0.5) + (w > 0.75);
                    /* the boundary band: centroids just outside the surface */
                    if (!inside && band > 0 && defo_surface_sdf_within(sdf, cen, band * h))
                        inside = 2;
                }
                if (inside) bits = (uint16_t)(bits | (1u << (4 * axis + r)));
                if (inside == 1) abits = (uint16_t)(abits | (1u << (4 * axis + r)));
            }
        keep[c] = bits;
        amb[c] = abits;
    }
    defo_free(far);
    defo_free(comp);
    defo_free(queue);
    defo_free(comp_inside);
    defo_free(comp_w);
    defo_free(comp_seed);
    return DEFO_OK;
}

/* ------------------------------------------------------------ quality */
/* Would node `node` at p keep every incident tet acceptable? */
static int move_ok(double *x, const defo_mesh *m, const defo_node_elems *ne, defo_index node,
                   const double p[3], double cos_limit) {
    double *xn = x + 3 * (size_t)node;
    double old[3] = {xn[0], xn[1], xn[2]};
    int ok = 1;
    for (int64_t k = ne->offset[node]; k < ne->offset[node + 1] && ok; k++) {
        const defo_index *v = m->elems + 4 * (size_t)ne->elem[k];
        double det0, det1;
        double c0 = mesher_tet_max_cos(x, v, &det0);
        xn[0] = p[0];
        xn[1] = p[1];
        xn[2] = p[2];
        double c1 = mesher_tet_max_cos(x, v, &det1);
        xn[0] = old[0];
        xn[1] = old[1];
        xn[2] = old[2];
        if (!(det1 > 0) || !(c1 <= cos_limit || c1 <= c0)) ok = 0;
    }
    return ok;
}

/* Step 3 (see the top of the file).  is_bd marks boundary nodes. */
static defo_status snap_nodes(const defo_surface_sdf *sdf, defo_mesh *m, const uint8_t *is_bd,
                              double min_dihedral, uint8_t *on_surf, defo_mesher_report *rep) {
    const defo_index nn = m->num_nodes;
    defo_node_elems ne;
    defo_status s = defo_mesh_node_elems(m, &ne);
    if (s) return s;
    double *target = defo_malloc(3 * ((size_t)nn + 1) * sizeof *target);
    uint8_t *state = defo_malloc((size_t)nn + 1); /* 0 interior, 1 to move, 2 done */
    if (!target || !state) {
        defo_node_elems_free(&ne);
        defo_free(target);
        defo_free(state);
        return defo_error_oom("mesher snapping", (size_t)nn * 25);
    }
    DEFO_PARALLEL_FOR
    for (defo_index i = 0; i < nn; i++) {
        state[i] = is_bd[i];
        if (is_bd[i])
            defo_surface_sdf_distance(sdf, m->x + 3 * (size_t)i, target + 3 * (size_t)i, NULL);
    }
    /* a hair above the limit so the reported angle (computed another way) is >= it */
    const double cos_limit = cos((min_dihedral + 1e-6) * 3.14159265358979323846 / 180.0);
    const double fractions[4] = {1.0, 0.75, 0.5, 0.25};
    for (int f = 0; f < 4; f++) {
        for (int sweep = 0; sweep < 4; sweep++) {
            int moved = 0;
            for (defo_index i = 0; i < nn; i++) {
                if (state[i] != 1) continue;
                double *xi = m->x + 3 * (size_t)i, *ti = target + 3 * (size_t)i;
                double p[3];
                for (int k = 0; k < 3; k++) p[k] = xi[k] + fractions[f] * (ti[k] - xi[k]);
                if (move_ok(m->x, m, &ne, i, p, cos_limit)) {
                    if (f == 0) { /* full move: exactly the target */
                        for (int k = 0; k < 3; k++) p[k] = ti[k];
                        state[i] = 2;
                        on_surf[i] = 1;
                        rep->snapped_nodes++;
                    }
                    memcpy(xi, p, sizeof p);
                    moved = 1;
                }
            }
            if (!moved) break;
        }
    }
    defo_free(target);
    defo_free(state);
    defo_node_elems_free(&ne);
    return DEFO_OK;
}

/* ------------------------------------------------------------- tet10 */
/* det J of a tet10 (VTK order) at barycentric point l. */
static double tet10_detj(const double *x, const defo_index *v, const double l[4]) {
    static const int E[6][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {2, 3}};
    double dNdL[10][4];
    memset(dNdL, 0, sizeof dNdL);
    for (int i = 0; i < 4; i++) dNdL[i][i] = 4 * l[i] - 1;
    for (int e = 0; e < 6; e++) {
        dNdL[4 + e][E[e][0]] = 4 * l[E[e][1]];
        dNdL[4 + e][E[e][1]] = 4 * l[E[e][0]];
    }
    double J[3][3] = {{0}};
    for (int n = 0; n < 10; n++) {
        const double *xn = x + 3 * (size_t)v[n];
        for (int q = 0; q < 3; q++) { /* ξ_q = L_{q+1}, L_0 = 1 - Σξ */
            double g = dNdL[n][q + 1] - dNdL[n][0];
            for (int r = 0; r < 3; r++) J[r][q] += xn[r] * g;
        }
    }
    return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
           J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
           J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

/* The 15 barycentric points of step 5. */
static void tet10_samples(double pts[15][4]) {
    static const int E[6][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {2, 3}};
    int n = 0;
    for (int i = 0; i < 4; i++, n++)
        for (int k = 0; k < 4; k++) pts[n][k] = k == i ? 1 : 0;
    for (int e = 0; e < 6; e++, n++)
        for (int k = 0; k < 4; k++) pts[n][k] = (k == E[e][0] || k == E[e][1]) ? 0.5 : 0;
    for (int k = 0; k < 4; k++) pts[n][k] = 0.25;
    n++;
    const double a = 0.25 + 3 * sqrt(5.0) / 20, b = 0.25 - sqrt(5.0) / 20; /* MTPS08 §4.2 */
    for (int i = 0; i < 4; i++, n++)
        for (int k = 0; k < 4; k++) pts[n][k] = k == i ? a : b;
}

static int tet10_ok(const double *x, const defo_index *v, double pts[15][4], double frac) {
    double det0;
    (void)mesher_tet_max_cos(x, v, &det0);
    for (int q = 0; q < 15; q++)
        if (!(tet10_detj(x, v, pts[q]) >= frac * det0)) return 0;
    return 1;
}

/* the closest point of the surface (a defo_surface_sdf) */
static void sdf_closest(const void *ctx, const double p[3], double q[3]) {
    defo_surface_sdf_distance(ctx, p, q, NULL);
}

static defo_status snap_edge_nodes(defo_mesh *m, mesher_closest_fn closest, const void *ctx,
                                   double frac, defo_mesher_report *rep) {
    defo_boundary bd;
    defo_status s = defo_mesh_boundary(m, 1, &bd);
    if (s) return s;
    defo_node_elems ne;
    s = defo_mesh_node_elems(m, &ne);
    uint8_t *is_bd = defo_calloc((size_t)m->num_nodes + 1, 1);
    if (s || !is_bd) {
        defo_boundary_free(&bd);
        if (!s) defo_node_elems_free(&ne);
        defo_free(is_bd);
        return s ? s : defo_error_oom("mesher tet10", (size_t)m->num_nodes);
    }
    for (defo_index f = 0; f < bd.num_faces; f++)
        for (int c = 3; c < 6; c++) is_bd[bd.faces[6 * (size_t)f + (size_t)c]] = 1;
    defo_boundary_free(&bd);
    double pts[15][4];
    tet10_samples(pts);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        if (!is_bd[i]) continue;
        if (rep) rep->edge_nodes_boundary++;
        double *xi = m->x + 3 * (size_t)i;
        double old[3] = {xi[0], xi[1], xi[2]}, q[3];
        closest(ctx, old, q);
        const double fr[2] = {1.0, 0.5};
        for (int f = 0; f < 2; f++) {
            for (int k = 0; k < 3; k++) xi[k] = old[k] + fr[f] * (q[k] - old[k]);
            if (f == 0) memcpy(xi, q, sizeof q);
            int ok = 1;
            for (int64_t k = ne.offset[i]; k < ne.offset[i + 1] && ok; k++)
                ok = tet10_ok(m->x, m->elems + 10 * (size_t)ne.elem[k], pts, frac);
            if (ok) {
                if (f == 0 && rep) rep->edge_nodes_snapped++;
                break;
            }
            memcpy(xi, old, sizeof old);
        }
    }
    defo_free(is_bd);
    defo_node_elems_free(&ne);
    return DEFO_OK;
}

defo_status mesher_make_tet10(defo_mesh **m, mesher_closest_fn closest, const void *ctx,
                              double frac, defo_mesher_report *rep) {
    defo_mesh *q = NULL;
    defo_status s = defo_mesh_to_quadratic(*m, &q);
    if (s) return s;
    defo_mesh_destroy(*m);
    *m = q;
    return snap_edge_nodes(q, closest, ctx, frac, rep);
}

/* ------------------------------------------------------------ driver */
static defo_status build_mesh(const lattice *L, const uint16_t *keep, defo_mesh **out) {
    const size_t n_lat = L->n_corner + L->n_cells;
    defo_index *map = defo_malloc(n_lat * sizeof *map);
    if (!map) return defo_error_oom("mesher lattice", n_lat * sizeof *map);
    for (size_t i = 0; i < n_lat; i++) map[i] = -1;
    int64_t ntet = 0;
    for (size_t c = 0; c < L->n_cells; c++) {
        if (!keep[c]) continue;
        int i = (int)(c % (size_t)L->n[0]), j = (int)(c / (size_t)L->n[0] % (size_t)L->n[1]),
            k = (int)(c / ((size_t)L->n[0] * (size_t)L->n[1]));
        for (int b = 0; b < 12; b++) {
            if (!(keep[c] >> b & 1u)) continue;
            size_t v[4];
            double cen[3];
            cube_tet(L, i, j, k, b / 4, b % 4, v, cen);
            for (int q = 0; q < 4; q++) map[v[q]] = 0;
            ntet++;
        }
    }
    int64_t nnode = 0;
    for (size_t i = 0; i < n_lat; i++)
        if (map[i] >= 0) nnode++;
    if (ntet > DEFO_INDEX_MAX / 10 || nnode > DEFO_INDEX_MAX / 8) {
        defo_free(map);
        return defo_error(DEFO_ERR_UNSUPPORTED, "mesher: %lld tets is too many for defo_index",
                          (long long)ntet);
    }
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_create(1, &m);
    if (!s) s = defo_mesh_reserve(m, (defo_index)nnode, (defo_index)ntet, 0);
    for (size_t i = 0; i < n_lat && !s; i++) {
        if (map[i] < 0) continue;
        double p[3];
        lattice_node_pos(L, i, p);
        s = defo_mesh_add_node(m, p[0], p[1], p[2], &map[i]);
    }
    for (size_t c = 0; c < L->n_cells && !s; c++) {
        if (!keep[c]) continue;
        int i = (int)(c % (size_t)L->n[0]), j = (int)(c / (size_t)L->n[0] % (size_t)L->n[1]),
            k = (int)(c / ((size_t)L->n[0] * (size_t)L->n[1]));
        for (int b = 0; b < 12 && !s; b++) {
            if (!(keep[c] >> b & 1u)) continue;
            size_t v[4];
            double cen[3];
            cube_tet(L, i, j, k, b / 4, b % 4, v, cen);
            defo_index t[4] = {map[v[0]], map[v[1]], map[v[2]], map[v[3]]};
            double det;
            (void)mesher_tet_max_cos(m->x, t, &det);
            if (det < 0) {
                defo_index tmp = t[2];
                t[2] = t[3];
                t[3] = tmp;
            }
            s = defo_mesh_add_elem(m, t, 0);
        }
    }
    defo_free(map);
    if (s) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return DEFO_OK;
}

/* Smallest altitude (3V / face area) of the corner tets of m. */
static double min_altitude(const defo_mesh *m) {
    double best = INFINITY;
    for (defo_index e = 0; e < m->num_elems; e++) {
        const defo_index *v = m->elems + (size_t)m->nodes_per_elem * (size_t)e;
        defo_vec3 p[4];
        for (int c = 0; c < 4; c++) p[c] = defo_v3_load(m->x + 3 * (size_t)v[c]);
        double det = defo_v3_dot(defo_v3_sub(p[1], p[0]),
                                 defo_v3_cross(defo_v3_sub(p[2], p[0]), defo_v3_sub(p[3], p[0])));
        static const int F[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};
        for (int f = 0; f < 4; f++) {
            defo_vec3 a = p[F[f][0]], b = p[F[f][1]], c = p[F[f][2]];
            double l = defo_v3_norm(defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a)));
            best = fmin(best, l > 0 ? det / l : 0); /* 3V / A = det / (2A) */
        }
    }
    return best;
}

/* Boundary corner nodes of a tet4 mesh. */
static defo_status boundary_nodes(const defo_mesh *m, uint8_t **out) {
    defo_boundary bd;
    defo_status s = defo_mesh_boundary(m, 0, &bd);
    if (s) return s;
    uint8_t *is_bd = defo_calloc((size_t)m->num_nodes + 1, 1);
    if (!is_bd) {
        defo_boundary_free(&bd);
        return defo_error_oom("mesher boundary", (size_t)m->num_nodes);
    }
    for (size_t i = 0; i < 3 * (size_t)bd.num_faces; i++) is_bd[bd.faces[i]] = 1;
    defo_boundary_free(&bd);
    *out = is_bd;
    return DEFO_OK;
}

/* Warning text about the surface, or "" when it looks clean. */
static int surface_warning(const defo_surface_info *si, char *buf, size_t size) {
    int n = 0;
    buf[0] = 0;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if ((size_t)n < size)                                                                      \
            n += snprintf(buf + n, size - (size_t)n, "%s", n ? "; " : "surface: ");                \
        if ((size_t)n < size) n += snprintf(buf + n, size - (size_t)n, __VA_ARGS__);               \
    } while (0)
    if (si->open_edges)
        ADD("open: %lld boundary edges (holes, total length %.3g); inside decided by the winding "
            "number",
            (long long)si->open_edges, si->hole_length);
    if (si->nonmanifold_edges)
        ADD("%lld non-manifold edges (used by 3 or more triangles)",
            (long long)si->nonmanifold_edges);
    if (si->self_intersections)
        ADD("self-intersecting: %lld edge/triangle crossings", (long long)si->self_intersections);
    if (si->flipped) ADD("%d triangles had the wrong orientation (repaired)", (int)si->flipped);
    if (si->degenerate) ADD("%d zero-area triangles", (int)si->degenerate);
    if (si->volume < 0) ADD("inside out (negative enclosed volume): meshed as its reverse");
#undef ADD
    return n > 0;
}

defo_status defo_mesh_surface_sdf(const defo_surface_sdf *sdf, const defo_mesher_def *def,
                                  defo_mesh **out, defo_mesher_report *report) {
    static const char fn[] = "defo_mesh_surface";
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    *out = NULL;
    if (!sdf) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: sdf is NULL", fn);
    defo_mesher_def d = def ? *def : defo_default_mesher_def();
    defo_mesher_report rep_local, *rep = report ? report : &rep_local;
    memset(rep, 0, sizeof *rep);
    const defo_surface_info *si = defo_surface_sdf_info(sdf);
    rep->surface = *si;
    rep->surface_volume = fabs(si->volume);
    if (d.order != 1 && d.order != 2)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: order %d (must be 1 or 2)", fn, d.order);
    if (!(d.min_dihedral >= 0 && d.min_dihedral < 60))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: min_dihedral %g (must be in [0, 60))", fn,
                          d.min_dihedral);
    if (!(d.target_dihedral >= 0 && d.target_dihedral < 60))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: target_dihedral %g (must be in [0, 60))",
                          fn, d.target_dihedral);
    if (!(d.target_altitude >= 0 && d.target_altitude <= 0.5))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: target_altitude %g (must be in [0, 0.5])",
                          fn, d.target_altitude);
    if (!(d.max_boundary_distance > 0 && d.max_boundary_distance <= 0.5))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: max_boundary_distance %g (must be in (0, 0.5])", fn,
                          d.max_boundary_distance);
    if (!(d.band >= 0 && d.band <= 0.5))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: band %g (must be in [0, 0.5])", fn,
                          d.band);
    if (!(d.tet10_min_jacobian > 0 && d.tet10_min_jacobian < 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: tet10_min_jacobian %g (must be in (0, 1))", fn,
                          d.tet10_min_jacobian);
    double ext[3], longest = 0, shortest = INFINITY;
    for (int k = 0; k < 3; k++) {
        ext[k] = si->bbox_hi[k] - si->bbox_lo[k];
        longest = fmax(longest, ext[k]);
        shortest = fmin(shortest, ext[k]);
    }
    if (!(shortest > 0) || !isfinite(longest))
        return defo_error(DEFO_ERR_INVALID_MESH,
                          "surface is flat (its bounding box is %g x %g x %g): it encloses no "
                          "volume",
                          ext[0], ext[1], ext[2]);
    double h = d.cell_size;
    if (!(h > 0)) {
        if (d.cells < 1)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: cells %d (must be >= 1)", fn,
                              d.cells);
        h = longest / d.cells;
    }
    if (!isfinite(h))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: cell size %g (must be finite)", fn, h);
    lattice L;
    double count = 1;
    for (int k = 0; k < 3; k++) {
        L.lo[k] = si->bbox_lo[k] - 2 * h;
        double nk = ceil((ext[k] + 4 * h) / h);
        count *= nk + 1;
        if (!(nk < 1e6)) count = INFINITY;
        L.n[k] = (int)fmin(nk, 1e6);
    }
    if (!(count * 2 < (double)DEFO_INDEX_MAX / 4))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: cell size %g gives a lattice of %.3g nodes (too many; use fewer "
                          "cells)",
                          fn, h, 2 * count);
    L.h = h;
    rep->h = h;
    L.n_corner = (size_t)(L.n[0] + 1) * (size_t)(L.n[1] + 1) * (size_t)(L.n[2] + 1);
    L.n_cells = (size_t)L.n[0] * (size_t)L.n[1] * (size_t)L.n[2];

    uint16_t *keep = defo_malloc(L.n_cells * sizeof *keep);
    uint16_t *amb = defo_malloc(L.n_cells * sizeof *amb);
    if (!keep || !amb) {
        defo_free(keep);
        defo_free(amb);
        return defo_error_oom("mesher lattice", L.n_cells * sizeof *keep * 2);
    }
    defo_status s = classify(sdf, &L, d.band, keep, amb);
    int64_t n_keep = 0, n_amb = 0;
    for (size_t c = 0; !s && c < L.n_cells; c++) {
        for (int b = 0; b < 12; b++) {
            n_keep += keep[c] >> b & 1u;
            n_amb += amb[c] >> b & 1u;
        }
    }
    defo_free(amb);
    /* A closed surface has |w| ~ 1 in all but a sliver of tets touching it;
     * when a fifth of the kept tets are ambiguous the holes are too large for
     * "inside" to mean anything. */
    if (!s && (n_keep == 0 || 5 * n_amb > n_keep))
        s = defo_error(DEFO_ERR_INVALID_MESH, "nothing inside the surface at cell size %g: %s", h,
                       n_keep == 0 ? "it encloses no volume (open with large holes?) or the "
                                     "cells are too coarse"
                                   : "it is open with large holes (the winding number is "
                                     "ambiguous in most of the volume); close the holes");
    defo_mesh *m = NULL;
    if (!s) s = build_mesh(&L, keep, &m);
    defo_free(keep);
    uint8_t *is_bd = NULL;
    if (!s) s = boundary_nodes(m, &is_bd);
    defo_index n_corner_nodes = m ? m->num_nodes : 0;
    uint8_t *on_surf = NULL;
    if (!s && !(on_surf = defo_calloc((size_t)m->num_nodes + 1, 1)))
        s = defo_error_oom("mesher snapping", (size_t)m->num_nodes);
    if (!s) s = snap_nodes(sdf, m, is_bd, d.min_dihedral, on_surf, rep);
    if (!s) s = defo_mesh_quality_summary(m, NULL, &rep->quality_snapped);
    if (!s) rep->min_altitude_snapped = min_altitude(m);
    if (!s && d.target_dihedral > 0)
        s = mesher_optimize(sdf, m, is_bd, on_surf, rep->h, d.target_dihedral, d.target_altitude,
                            d.max_boundary_distance * rep->h, rep);
    if (!s) {
        rep->snapped_nodes = 0;
        for (defo_index i = 0; i < m->num_nodes; i++) rep->snapped_nodes += on_surf[i];
    }
    defo_free(on_surf);
    if (!s && d.order == 2) s = mesher_make_tet10(&m, sdf_closest, sdf, d.tet10_min_jacobian, rep);
    /* report: boundary distance over corner (and tet10 edge) boundary nodes */
    if (!s) {
        defo_boundary bd;
        s = defo_mesh_boundary(m, d.order == 2, &bd);
        if (!s) {
            uint8_t *mark = defo_calloc((size_t)m->num_nodes + 1, 1);
            double *dist = defo_calloc((size_t)m->num_nodes + 1, sizeof *dist);
            if (!mark || !dist) {
                s = defo_error_oom("mesher report", (size_t)m->num_nodes * 9);
            } else {
                for (size_t i = 0; i < (size_t)bd.num_faces * (size_t)bd.nodes_per_face; i++)
                    mark[bd.faces[i]] = 1;
                DEFO_PARALLEL_FOR
                for (defo_index i = 0; i < m->num_nodes; i++)
                    if (mark[i])
                        dist[i] = defo_surface_sdf_distance(sdf, m->x + 3 * (size_t)i, NULL, NULL);
                double sum = 0;
                int64_t nb = 0;
                for (defo_index i = 0; i < m->num_nodes; i++) {
                    if (!mark[i]) continue;
                    rep->max_boundary_distance = fmax(rep->max_boundary_distance, dist[i]);
                    sum += dist[i];
                    nb++;
                }
                rep->mean_boundary_distance = nb ? sum / (double)nb : 0;
            }
            defo_free(mark);
            defo_free(dist);
            defo_boundary_free(&bd);
        }
    }
    /* corner boundary nodes (tet10 keeps the corners' numbering) */
    for (defo_index i = 0; is_bd && i < n_corner_nodes; i++) rep->boundary_nodes += is_bd[i];
    defo_free(is_bd);
    if (!s) s = defo_element_volume(m, NULL, &rep->volume);
    if (!s) s = defo_mesh_quality_summary(m, NULL, &rep->quality);
    if (!s) rep->min_altitude = min_altitude(m);
    if (s) {
        defo_mesh_destroy(m);
        return s;
    }
    rep->volume_error =
        rep->surface_volume > 0 ? (rep->volume - rep->surface_volume) / rep->surface_volume : 0;
    *out = m;
    char msg[512];
    if (surface_warning(si, msg, sizeof msg)) return defo_error(DEFO_WARNING, "%s", msg);
    return DEFO_OK;
}

defo_status defo_mesh_surface(const defo_mesh *surface, const defo_mesher_def *def, defo_mesh **out,
                              defo_mesher_report *report) {
    if (out) *out = NULL;
    defo_mesher_def d = def ? *def : defo_default_mesher_def();
    defo_surface_sdf *sdf = NULL;
    defo_status s = defo_surface_sdf_create(surface, &d.sdf, &sdf);
    if (s) return s;
    s = defo_mesh_surface_sdf(sdf, &d, out, report);
    defo_surface_sdf_destroy(sdf);
    return s;
}
