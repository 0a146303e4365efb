/*
 * embed/embed.c — MG04 §5.1 mesh coupling: surface vertices bound to tets by
 * barycentric coordinates, moved by the tets, normals rotated by Re.
 *
 * Closest-tet search: a uniform grid over the tet mesh's bounding box, cell
 * size h ≈ the mean element size (at most ~4 cells per element), each cell
 * listing the tets whose bounding box overlaps it (CSR, built by counting:
 * no per-cell allocation).  For a vertex p, q = p clamped into the grid box
 * lies in cell c0; rings r = 0, 1, 2, … of cells at Chebyshev distance r from
 * c0 are searched.  Every point y of a cell beyond ring r is at least r·h from
 * q along one axis, and clamping only moves p closer to the grid along each
 * axis, so |p − y| ≥ |q − y| ≥ r·h: once the best distance found is ≤ r·h
 * (or every cell was visited) the answer is final.
 *
 * Distance of p to a tet: 0 when all barycentric coordinates are ≥ 0
 * (inside), else the smallest distance to its four faces (Ericson's closest
 * point on a triangle).  Tolerances are relative: nothing here compares with
 * an absolute epsilon; ties are broken by the smallest barycentric
 * coordinate (larger wins) and then the element index.
 *
 * Interpolation uses corner differences x_i − x_0 so a rigid translation far
 * from the origin keeps its accuracy relative to the element size.
 */
#include "embed/embed_internal.h"

#include "defo/element.h"
#include "defo/math.h"

#include "base/parallel.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void defo_embed_destroy(defo_embed *e) {
    if (!e) return;
    defo_free(e->elem);
    defo_free(e->bary);
    defo_free(e->normal0);
    defo_free(e->covec);
    defo_free(e->tris);
    defo_free(e);
}

static double dot3(const double *a, const double *b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Squared distance from p to triangle (a, b, c) (Ericson, Real-Time
 * Collision Detection §5.1.5). */
static double tri_dist2(const double *p, const double *a, const double *b, const double *c) {
    double ab[3], ac[3], ap[3], q[3];
    for (int k = 0; k < 3; k++) {
        ab[k] = b[k] - a[k];
        ac[k] = c[k] - a[k];
        ap[k] = p[k] - a[k];
    }
    double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
    if (d1 <= 0 && d2 <= 0) {
        memcpy(q, a, sizeof q);
    } else {
        double bp[3], cp[3];
        for (int k = 0; k < 3; k++) {
            bp[k] = p[k] - b[k];
            cp[k] = p[k] - c[k];
        }
        double d3 = dot3(ab, bp), d4 = dot3(ac, bp);
        double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
        double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
        if (d3 >= 0 && d4 <= d3) {
            memcpy(q, b, sizeof q);
        } else if (d6 >= 0 && d5 <= d6) {
            memcpy(q, c, sizeof q);
        } else if (vc <= 0 && d1 >= 0 && d3 <= 0) {
            double v = d1 / (d1 - d3);
            for (int k = 0; k < 3; k++) q[k] = a[k] + v * ab[k];
        } else if (vb <= 0 && d2 >= 0 && d6 <= 0) {
            double w = d2 / (d2 - d6);
            for (int k = 0; k < 3; k++) q[k] = a[k] + w * ac[k];
        } else if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
            double w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
            for (int k = 0; k < 3; k++) q[k] = b[k] + w * (c[k] - b[k]);
        } else {
            double den = 1.0 / (va + vb + vc), v = vb * den, w = vc * den;
            for (int k = 0; k < 3; k++) q[k] = a[k] + ab[k] * v + ac[k] * w;
        }
    }
    double d = 0;
    for (int k = 0; k < 3; k++) d += (p[k] - q[k]) * (p[k] - q[k]);
    return d;
}

/* Barycentric coordinates of p in tet t (rest), its distance (0 inside). */
static double tet_query(const defo_mesh *m, const double *Dm_inv, defo_index t, const double *p,
                        double lam[4]) {
    const defo_index *en = m->elems + (size_t)m->nodes_per_elem * (size_t)t;
    const double *X0 = m->x + 3 * (size_t)en[0];
    const double *Di = Dm_inv + 9 * (size_t)t;
    double d[3] = {p[0] - X0[0], p[1] - X0[1], p[2] - X0[2]};
    for (int r = 0; r < 3; r++)
        lam[r + 1] = Di[3 * r] * d[0] + Di[3 * r + 1] * d[1] + Di[3 * r + 2] * d[2];
    lam[0] = 1 - lam[1] - lam[2] - lam[3];
    if (lam[0] >= 0 && lam[1] >= 0 && lam[2] >= 0 && lam[3] >= 0) return 0;
    double best = INFINITY;
    for (int f = 0; f < 4; f++) {
        const int *fi = defo_tet_faces[f];
        best = fmin(best, tri_dist2(p, m->x + 3 * (size_t)en[fi[0]], m->x + 3 * (size_t)en[fi[1]],
                                    m->x + 3 * (size_t)en[fi[2]]));
    }
    return sqrt(best);
}

static double min4(const double *l) {
    return fmin(fmin(l[0], l[1]), fmin(l[2], l[3]));
}

void defo_embed_grid_free(grid *g) {
    defo_free(g->start);
    defo_free(g->item);
}

static int cell_of(const grid *g, double v, int k) {
    double c = floor((v - g->lo[k]) / g->h);
    if (!(c >= 0)) return 0;
    if (c >= g->dim[k]) return g->dim[k] - 1;
    return (int)c;
}

defo_status defo_embed_grid_build(grid *g, const defo_mesh *m) {
    memset(g, 0, sizeof *g);
    double lo[3], hi[3];
    if (defo_mesh_bbox(m, lo, hi)) return defo_error_prefix("embed");
    double ext = fmax(fmax(hi[0] - lo[0], hi[1] - lo[1]), hi[2] - lo[2]);
    double vol = 1;
    for (int k = 0; k < 3; k++) vol *= fmax(hi[k] - lo[k], 1e-3 * ext);
    double h = cbrt(vol / (double)m->num_elems);
    int64_t cells = 1;
    for (int k = 0; k < 3; k++) {
        g->lo[k] = lo[k];
        double n = ceil((hi[k] - lo[k]) / h);
        g->dim[k] = n < 1 ? 1 : (n > 1024 ? 1024 : (int)n);
        cells *= g->dim[k];
    }
    g->h = h;
    for (int k = 0; k < 3; k++) /* cells cover the box even when capped */
        g->h = fmax(g->h, (hi[k] - lo[k]) / g->dim[k]);
    g->start = defo_calloc((size_t)cells + 1, sizeof(int64_t));
    if (!g->start) return defo_error_oom("embed grid", (size_t)cells * 8);
    for (int pass = 0; pass < 2; pass++) {
        for (defo_index t = 0; t < m->num_elems; t++) {
            int a[3], b[3];
            for (int k = 0; k < 3; k++) {
                double mn = INFINITY, mx = -INFINITY;
                for (int i = 0; i < 4; i++) {
                    double v =
                        m->x[3 * (size_t)m->elems[(size_t)m->nodes_per_elem * (size_t)t + i] + k];
                    mn = fmin(mn, v);
                    mx = fmax(mx, v);
                }
                a[k] = cell_of(g, mn, k);
                b[k] = cell_of(g, mx, k);
            }
            for (int z = a[2]; z <= b[2]; z++)
                for (int y = a[1]; y <= b[1]; y++)
                    for (int x = a[0]; x <= b[0]; x++) {
                        int64_t c = ((int64_t)z * g->dim[1] + y) * g->dim[0] + x;
                        if (pass == 0)
                            g->start[c + 1]++;
                        else
                            g->item[g->start[c]++] = t;
                    }
        }
        if (pass == 0) {
            for (int64_t c = 0; c < cells; c++) g->start[c + 1] += g->start[c];
            g->item = defo_malloc((size_t)g->start[cells] * sizeof(defo_index) + 1);
            if (!g->item) {
                defo_embed_grid_free(g);
                return defo_error_oom("embed grid", (size_t)g->start[cells] * 4);
            }
        } else { /* start[c] advanced to start[c+1]: shift back */
            for (int64_t c = cells; c > 0; c--) g->start[c] = g->start[c - 1];
            g->start[0] = 0;
        }
    }
    return DEFO_OK;
}

/* Closest tet to p: writes *elem and lam; returns the distance. */
double defo_embed_closest_tet(const grid *g, const defo_mesh *m, const double *Dm_inv,
                              const double *p, defo_index *elem, double lam[4]) {
    int c0[3];
    for (int k = 0; k < 3; k++) c0[k] = cell_of(g, p[k], k);
    int rmax = 0;
    for (int k = 0; k < 3; k++) {
        if (c0[k] > rmax) rmax = c0[k];
        if (g->dim[k] - 1 - c0[k] > rmax) rmax = g->dim[k] - 1 - c0[k];
    }
    double best = INFINITY, best_min = -INFINITY;
    defo_index best_t = -1;
    for (int r = 0; r <= rmax; r++) {
        for (int z = c0[2] - r; z <= c0[2] + r; z++) {
            if (z < 0 || z >= g->dim[2]) continue;
            for (int y = c0[1] - r; y <= c0[1] + r; y++) {
                if (y < 0 || y >= g->dim[1]) continue;
                for (int x = c0[0] - r; x <= c0[0] + r; x++) {
                    if (x < 0 || x >= g->dim[0]) continue;
                    int on_ring = abs(z - c0[2]) == r || abs(y - c0[1]) == r || abs(x - c0[0]) == r;
                    if (!on_ring) continue;
                    int64_t c = ((int64_t)z * g->dim[1] + y) * g->dim[0] + x;
                    for (int64_t k = g->start[c]; k < g->start[c + 1]; k++) {
                        defo_index t = g->item[k];
                        double l[4];
                        double d = tet_query(m, Dm_inv, t, p, l);
                        double mn = min4(l);
                        if (d < best ||
                            (d == best && (mn > best_min || (mn == best_min && t < best_t)))) {
                            best = d;
                            best_min = mn;
                            best_t = t;
                            memcpy(lam, l, 4 * sizeof(double));
                        }
                    }
                }
            }
        }
        if (best_t >= 0 && best <= r * g->h) break;
    }
    *elem = best_t;
    return best;
}

/* The rest normal of every vertex as a covector of the reference element,
 * J_Xᵀ n0 (the map's gradient at the vertex turns it into the deformed
 * normal).  Nonzero when out of memory. */
int defo_embed_make_covec(defo_embed *e) {
    const defo_mesh *tets = e->tets;
    const defo_element_ops *ops = defo_element_ops_for_mesh(tets);
    defo_free(e->covec);
    e->covec = defo_malloc(3 * (size_t)e->nv * sizeof(double) + 1);
    if (!e->covec) return 1;
    for (defo_index i = 0; i < e->nv; i++) {
        double J[9];
        defo_element_jacobian(ops, tets->x, tets->elems + (size_t)ops->nodes * (size_t)e->elem[i],
                              e->bary + 4 * (size_t)i, J);
        const double *n0 = e->normal0 + 3 * (size_t)i;
        for (int k = 0; k < 3; k++)
            e->covec[3 * (size_t)i + (size_t)k] =
                J[k] * n0[0] + J[3 + k] * n0[1] + J[6 + k] * n0[2];
    }
    return 0;
}

defo_status defo_embed_create(const defo_mesh *tets, const defo_mesh *surface, defo_embed **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "embed: out is NULL");
    *out = NULL;
    if (!tets || !surface)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "embed: tets or surface is NULL");
    const defo_element_ops *ops = defo_element_ops_for_mesh(tets);
    if (!ops || tets->num_elems <= 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "embed: the volume mesh must be a non-empty tet4 or tet10 mesh");
    if (surface->num_tris <= 0 || surface->nodes_per_tri != 3)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "embed: the surface needs 3-node triangles (has %ld of %d nodes)",
                          (long)surface->num_tris, surface->nodes_per_tri);
    for (int64_t i = 0; i < 3 * (int64_t)surface->num_tris; i++)
        if (surface->tris[i] < 0 || surface->tris[i] >= surface->num_nodes)
            return defo_error(DEFO_ERR_INVALID_MESH, "embed: triangle %ld has a node out of range",
                              (long)(i / 3));
    for (int64_t i = 0; i < 3 * (int64_t)surface->num_nodes; i++)
        if (!isfinite(surface->x[i]))
            return defo_error(DEFO_ERR_INVALID_MESH, "embed: surface vertex %ld is not finite",
                              (long)(i / 3));
    /* the inverse edge matrix of every element's corner tetrahedron */
    const defo_element_ops *lin = defo_element_ops_of(DEFO_ELEMENT_TET4);
    double *cdm = defo_malloc(9 * (size_t)tets->num_elems * sizeof(double) + 1);
    if (!cdm) return defo_error_oom("embed", 9 * (size_t)tets->num_elems * sizeof(double));
    for (defo_index t = 0; t < tets->num_elems; t++) {
        double J[9];
        defo_element_jacobian(lin, tets->x, tets->elems + (size_t)ops->nodes * (size_t)t,
                              lin->stiffness.point, J);
        defo_mat3 Jm, Ji;
        memcpy(Jm.m, J, sizeof J);
        const double det = defo_m3_det(Jm);
        if (!(fabs(det) > 0) || !defo_m3_inverse(Jm, &Ji)) {
            defo_free(cdm);
            return defo_error(DEFO_ERR_INVALID_MESH, "embed: element %ld is flat", (long)t);
        }
        memcpy(cdm + 9 * (size_t)t, Ji.m, 9 * sizeof(double));
    }
    defo_embed *e = defo_calloc(1, sizeof *e);
    grid g;
    memset(&g, 0, sizeof g);
    defo_status st = DEFO_OK;
    if (!e) {
        defo_free(cdm);
        return defo_error_oom("embed", sizeof *e);
    }
    e->tets = tets;
    e->nv = surface->num_nodes;
    e->nt = surface->num_tris;
    const size_t nv = (size_t)e->nv;
    e->elem = defo_malloc(nv * sizeof(defo_index) + 1);
    e->bary = defo_malloc(4 * nv * sizeof(double) + 1);
    e->normal0 = defo_calloc(3 * nv + 1, sizeof(double));
    e->tris = defo_malloc(3 * (size_t)e->nt * sizeof(defo_index) + 1);
    if (!e->elem || !e->bary || !e->normal0 || !e->tris)
        st = defo_error_oom("embed vertex data", 8 * nv * sizeof(double));
    if (!st) st = defo_embed_grid_build(&g, tets);
    if (st) {
        defo_free(cdm);
        defo_embed_destroy(e);
        return st;
    }
    memcpy(e->tris, surface->tris, 3 * (size_t)e->nt * sizeof(defo_index));
    /* area-weighted vertex normals: Σ over incident triangles of the
     * (unnormalised) cross product, in triangle order */
    for (defo_index t = 0; t < e->nt; t++) {
        const defo_index *tr = e->tris + 3 * (size_t)t;
        const double *a = surface->x + 3 * (size_t)tr[0], *b = surface->x + 3 * (size_t)tr[1],
                     *c = surface->x + 3 * (size_t)tr[2];
        double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        double v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                       u[0] * v[1] - u[1] * v[0]};
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) e->normal0[3 * (size_t)tr[i] + (size_t)k] += n[k];
    }
    for (size_t i = 0; i < nv; i++) {
        double *n = e->normal0 + 3 * i;
        double l = sqrt(dot3(n, n));
        if (l > 0)
            for (int k = 0; k < 3; k++) n[k] /= l;
    }
    defo_embed_info info;
    memset(&info, 0, sizeof info);
    info.num_vertices = e->nv;
    const defo_index nvi = e->nv;
    double *dist = defo_malloc(nv * sizeof(double) + 1);
    if (!dist) {
        defo_free(cdm);
        defo_embed_grid_free(&g);
        defo_embed_destroy(e);
        return defo_error_oom("embed", nv * sizeof(double));
    }
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(nvi, 160))
    for (defo_index i = 0; i < nvi; i++)
        dist[i] = defo_embed_closest_tet(&g, tets, cdm, surface->x + 3 * (size_t)i, e->elem + i,
                                         e->bary + 4 * (size_t)i);
    /* tet10: the reference coordinates in the curved element (MTPS08 §6.2:
     * the vertex follows the quadratic shape functions) */
    if (ops->order > 1)
        for (defo_index i = 0; i < nvi; i++) {
            double l[4];
            int ok = 0;
            if (defo_element_locate(tets, NULL, e->elem[i], surface->x + 3 * (size_t)i, l, &ok) ==
                    DEFO_OK &&
                ok)
                memcpy(e->bary + 4 * (size_t)i, l, sizeof l);
        }
    if (defo_embed_make_covec(e)) {
        defo_free(dist);
        defo_free(cdm);
        defo_embed_grid_free(&g);
        defo_embed_destroy(e);
        return defo_error_oom("embed", 3 * nv * sizeof(double));
    }
    for (defo_index i = 0; i < nvi; i++) {
        if (dist[i] > 0) info.outside++;
        info.max_distance = fmax(info.max_distance, dist[i]);
        info.most_negative = fmin(info.most_negative, min4(e->bary + 4 * (size_t)i));
    }
    e->info = info;
    defo_free(dist);
    defo_free(cdm);
    defo_embed_grid_free(&g);
    *out = e;
    return DEFO_OK;
}

defo_embed_info defo_embed_get_info(const defo_embed *e) {
    defo_embed_info z;
    memset(&z, 0, sizeof z);
    return e ? e->info : z;
}
const defo_index *defo_embed_elements(const defo_embed *e) {
    return e ? e->elem : NULL;
}
const double *defo_embed_barycentric(const defo_embed *e) {
    return e ? e->bary : NULL;
}
const double *defo_embed_rest_normals(const defo_embed *e) {
    return e ? e->normal0 : NULL;
}

/* A tet4 or tet10 vertex's position and the Jacobian J = ∂x/∂ξ of the
 * element's map there (J[3r + k] = ∂x_r/∂ξ_k, ξ = (λ1, λ2, λ3)), on node
 * differences y_a = x_a − x_0 (the translation kept exact, see the
 * header).  With g_a = ∂y/∂λ_a of the map written homogeneous of degree 2
 * in λ — tet10: g_a = (4λ_a − 1) y_a + Σ_{edges e ∋ a} 4λ_b y_e (b the
 * edge's other corner), tet4: g_a = y_a — the columns of J are g_{k+1} − g_0
 * (the same values as defo_element_jacobian, without its table of shape
 * gradients) and, by Euler's identity for the quadratic part,
 *   y = ½ (Σ_a λ_a g_a − Σ_a λ_a y_a)   (tet10),   y = Σ_a λ_a y_a (tet4).
 * One pass over the nodes gives both: the per-frame update of a 50 K-
 * triangle detail surface is this function. */
static void tet_map(int P, const double *x, const defo_index *en, const double l[4], double p[3],
                    double J[9]) {
    const double *x0 = x + 3 * (size_t)en[0];
    double g[4][3], y[10][3];
    for (int a = 0; a < P; a++) {
        const double *xa = x + 3 * (size_t)en[a];
        for (int r = 0; r < 3; r++) y[a][r] = xa[r] - x0[r];
    }
    if (P == 10) {
        /* the edges in defo_tet_edges' order, nodes 4–9: 01 12 02 03 13 23 */
        const double w1 = 4 * l[1] - 1, w2 = 4 * l[2] - 1, w3 = 4 * l[3] - 1;
        for (int r = 0; r < 3; r++) {
            g[0][r] = 4 * (l[1] * y[4][r] + l[2] * y[6][r] + l[3] * y[7][r]); /* y_0 = 0 */
            g[1][r] = w1 * y[1][r] + 4 * (l[0] * y[4][r] + l[2] * y[5][r] + l[3] * y[8][r]);
            g[2][r] = w2 * y[2][r] + 4 * (l[1] * y[5][r] + l[0] * y[6][r] + l[3] * y[9][r]);
            g[3][r] = w3 * y[3][r] + 4 * (l[0] * y[7][r] + l[1] * y[8][r] + l[2] * y[9][r]);
            const double lin = l[1] * y[1][r] + l[2] * y[2][r] + l[3] * y[3][r];
            const double q = l[0] * g[0][r] + l[1] * g[1][r] + l[2] * g[2][r] + l[3] * g[3][r];
            p[r] = x0[r] + 0.5 * (q - lin);
        }
    } else {
        for (int r = 0; r < 3; r++) {
            g[0][r] = 0, g[1][r] = y[1][r], g[2][r] = y[2][r], g[3][r] = y[3][r];
            p[r] = x0[r] + (l[1] * y[1][r] + l[2] * y[2][r] + l[3] * y[3][r]);
        }
    }
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) J[3 * r + k] = g[k + 1][r] - g[0][r];
}

defo_status defo_embed_update(const defo_embed *e, const double *x, const double *rotations,
                              double *positions, double *normals) {
    if (!e || !x || !positions)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "embed: missing argument");
    const defo_mesh *m = e->tets;
    const defo_index nv = e->nv;
    const defo_element_ops *ops = defo_element_ops_for_mesh(m);
    if (!ops) return defo_error_prefix("embed");
    const int P = ops->nodes;
    const int tet = ops->kind == DEFO_ELEMENT_TET4 || ops->kind == DEFO_ELEMENT_TET10;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(nv))
    for (defo_index i = 0; i < nv; i++) {
        const defo_index t = e->elem[i];
        const defo_index *en = m->elems + (size_t)P * (size_t)t;
        const double *l = e->bary + 4 * (size_t)i;
        double *p = positions + 3 * (size_t)i;
        double J[9];
        if (tet) {
            tet_map(P, x, en, l, p, J);
        } else {
            /* the element's shape functions on differences from node 0: Σ N = 1 */
            const double *x0 = x + 3 * (size_t)en[0];
            double N[DEFO_ELEMENT_MAX_NODES];
            ops->shape(l, N);
            for (int k = 0; k < 3; k++) {
                double s = 0;
                for (int j = 1; j < P; j++) s += N[j] * (x[3 * (size_t)en[j] + k] - x0[k]);
                p[k] = x0[k] + s;
            }
            if (normals && !rotations) defo_element_jacobian(ops, x, en, l, J);
        }
        if (!normals) continue;
        const double *n0 = e->normal0 + 3 * (size_t)i;
        double *n = normals + 3 * (size_t)i;
        if (rotations) {
            const double *R = rotations + 9 * (size_t)t;
            for (int r = 0; r < 3; r++)
                n[r] = R[3 * r] * n0[0] + R[3 * r + 1] * n0[1] + R[3 * r + 2] * n0[2];
            continue;
        }
        /* n ∝ cof(F) n0 with F = J_x J_X⁻¹ the gradient of the element's map
         * at the vertex (affine for tet4, quadratic for tet10: MTPS08 §6.2),
         * cof(F) = cof(J_x) cof(J_X⁻¹) ∝ cof(J_x) J_Xᵀ: the cofactor of J_x
         * (columns j_k) applied to the covector c = J_Xᵀ n0 is
         * c0 j1×j2 + c1 j2×j0 + c2 j0×j1 */
        const double *c = e->covec + 3 * (size_t)i;
        double j[3][3];
        for (int k = 0; k < 3; k++)
            for (int r = 0; r < 3; r++) j[k][r] = J[3 * r + k];
        double len = 0;
        for (int r = 0; r < 3; r++) {
            const int a = (r + 1) % 3, b = (r + 2) % 3;
            n[r] = c[0] * (j[1][a] * j[2][b] - j[1][b] * j[2][a]) +
                   c[1] * (j[2][a] * j[0][b] - j[2][b] * j[0][a]) +
                   c[2] * (j[0][a] * j[1][b] - j[0][b] * j[1][a]);
            len += n[r] * n[r];
        }
        len = sqrt(len);
        if (len > 0 && isfinite(len)) {
            const double il = 1 / len;
            for (int r = 0; r < 3; r++) n[r] *= il;
        } else
            memcpy(n, n0, 3 * sizeof(double)); /* a degenerate map: the rest normal */
    }
    return DEFO_OK;
}

defo_status defo_embed_interpolate(const defo_embed *e, const double *node_values, double *out) {
    if (!e || !node_values || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "embed: missing argument");
    const defo_element_ops *ops = defo_element_ops_for_mesh(e->tets);
    if (!ops) return defo_error_prefix("embed");
    const int P = ops->nodes;
    const defo_index nv = e->nv;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(nv))
    for (defo_index i = 0; i < nv; i++) {
        const defo_index *en = e->tets->elems + (size_t)P * (size_t)e->elem[i];
        double N[DEFO_ELEMENT_MAX_NODES];
        ops->shape(e->bary + 4 * (size_t)i, N);
        double s = 0;
        for (int a = 0; a < P; a++) s += N[a] * node_values[en[a]];
        out[i] = s;
    }
    return DEFO_OK;
}

/* Write an OBJ to path atomically: path.tmp, then rename. */
static defo_status write_obj(const char *path, defo_index nv, const double *pos, const double *nrm,
                             defo_index nt, const defo_index *tris, const defo_index *vmap) {
    if (!path) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "embed: path is NULL");
    size_t len = strlen(path);
    char *tmp = defo_malloc(len + 8);
    if (!tmp) return defo_error_oom("embed path", len + 8);
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".tmp", 5);
    FILE *fp = fopen(tmp, "wb");
    if (!fp) {
        defo_status st = defo_error(DEFO_ERR_IO, "embed: cannot write %s", tmp);
        defo_free(tmp);
        return st;
    }
    int ok = fprintf(fp, "# defo embedded surface: %ld vertices, %ld triangles\n", (long)nv,
                     (long)nt) > 0;
    for (defo_index i = 0; i < nv && ok; i++)
        ok = fprintf(fp, "v %.9g %.9g %.9g\n", pos[3 * (size_t)i], pos[3 * (size_t)i + 1],
                     pos[3 * (size_t)i + 2]) > 0;
    for (defo_index i = 0; nrm && i < nv && ok; i++)
        ok = fprintf(fp, "vn %.6g %.6g %.6g\n", nrm[3 * (size_t)i], nrm[3 * (size_t)i + 1],
                     nrm[3 * (size_t)i + 2]) > 0;
    for (defo_index t = 0; t < nt && ok; t++) {
        long a = (long)(vmap ? vmap[tris[3 * (size_t)t]] : tris[3 * (size_t)t]) + 1;
        long b = (long)(vmap ? vmap[tris[3 * (size_t)t + 1]] : tris[3 * (size_t)t + 1]) + 1;
        long c = (long)(vmap ? vmap[tris[3 * (size_t)t + 2]] : tris[3 * (size_t)t + 2]) + 1;
        if (nrm)
            ok = fprintf(fp, "f %ld//%ld %ld//%ld %ld//%ld\n", a, a, b, b, c, c) > 0;
        else
            ok = fprintf(fp, "f %ld %ld %ld\n", a, b, c) > 0;
    }
    if (fclose(fp) != 0) ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        defo_status st = defo_error(DEFO_ERR_IO, "embed: writing %s failed", path);
        defo_free(tmp);
        return st;
    }
    defo_free(tmp);
    return DEFO_OK;
}

defo_status defo_embed_write_obj(const defo_embed *e, const char *path, const double *positions,
                                 const double *normals) {
    if (!e || !positions) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "embed: missing argument");
    return write_obj(path, e->nv, positions, normals, e->nt, e->tris, NULL);
}

defo_status defo_boundary_write_obj(const defo_mesh *tets, const double *x, const char *path) {
    if (!tets || !path) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "embed: missing argument");
    if (!x) x = tets->x;
    defo_boundary b;
    defo_status st = defo_mesh_boundary(tets, tets->nodes_per_elem == 10, &b);
    if (st) return defo_error_prefix("boundary obj");
    /* a 6-node (curved tet10) face becomes the 4 flat triangles of
     * defo_tri6_split through its edge nodes */
    const int per = b.nodes_per_face, split = per == 6 ? 4 : 1;
    const size_t nn = (size_t)tets->num_nodes, nt = (size_t)b.num_faces * (size_t)split;
    defo_index *vmap = defo_malloc(nn * sizeof(defo_index) + 1);
    double *pos = defo_malloc(3 * nn * sizeof(double) + 1);
    defo_index *tris = defo_malloc(3 * nt * sizeof(defo_index) + 1);
    if (!vmap || !pos || !tris) {
        defo_free(vmap);
        defo_free(pos);
        defo_free(tris);
        defo_boundary_free(&b);
        return defo_error_oom("boundary obj", nn * 28 + nt * 12);
    }
    for (size_t i = 0; i < nn; i++) vmap[i] = -1;
    defo_index used = 0;
    for (int64_t k = 0; k < per * (int64_t)b.num_faces; k++) {
        defo_index v = b.faces[k];
        if (vmap[v] < 0) {
            vmap[v] = used;
            memcpy(pos + 3 * (size_t)used, x + 3 * (size_t)v, 3 * sizeof(double));
            used++;
        }
    }
    for (defo_index f = 0; f < b.num_faces; f++) {
        const defo_index *fc = b.faces + (size_t)per * (size_t)f;
        for (int q = 0; q < split; q++)
            for (int k = 0; k < 3; k++)
                tris[3 * ((size_t)f * (size_t)split + (size_t)q) + (size_t)k] =
                    per == 6 ? fc[defo_tri6_split[q][k]] : fc[k];
    }
    st = write_obj(path, used, pos, NULL, (defo_index)nt, tris, vmap);
    defo_free(vmap);
    defo_free(pos);
    defo_free(tris);
    defo_boundary_free(&b);
    return st;
}
