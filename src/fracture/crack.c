/*
 * fracture/crack.c — brittle fracture along planes (MMDJ01 §2.5), growing
 * at a crack speed; tet4 elements bisected along the plane, tet10 elements
 * separated at faces.  defo/fracture.h states the algorithm; this file keeps
 * these invariants:
 *
 * - The stress pass is parallel over elements into per-element slots; every
 *   topology change is sequential in a fixed order (edges by node index,
 *   elements by index), so a run is bitwise reproducible for any thread
 *   count and nothing depends on chance.
 * - A crack is decided in rest coordinates: its plane (p, N), the side of
 *   every node (fixed when the crack starts, stored: later bisections add
 *   nodes of side 0 and new short edges, which must not change a decision
 *   made before), and the reached elements (by the rest centroid of their
 *   original element).  A growing crack therefore cuts the same elements
 *   whether its radius is reached in one step or in twenty.
 * - Bisection: edge (u, w) cut at fraction s gets the node m = (1 − s) u +
 *   s w; an element (…u…w…) becomes (…u…m…) in place and (…m…w…) appended.
 *   Both keep the parent's orientation (their volumes are s and 1 − s of
 *   it).  A face is split only by bisections of its own edges, applied in
 *   the global edge order by both elements sharing it: conforming.
 * - Opening: all groups are computed on the connectivity before any copy is
 *   made, then the copies are written; nodes are appended in increasing
 *   order of the node they copy, groups by their lowest element.
 * - New nodes record (a, b, w) with a, b older, so a caller fills its state
 *   in creation order and a checkpoint rebuilds rest positions exactly.
 */
#include "defo/fracture.h"

#include "defo/math.h"

#include "base/base.h"
#include "base/parallel.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct defo_fracture {
    defo_fracture_def def;
    int npe; /* 4 or 10 */
    /* the original elements' rest centroids: who a crack reaches */
    defo_index num_orig;
    double *orig_centroid;
    /* per element (capacity elem_cap) */
    defo_index elem_cap;
    defo_index *origin;  /* the original element */
    defo_index *eparent; /* the element it was split from (itself if none) */
    double *sigma, *dir; /* the last pass: σ_max and n (3) of the averaged stress */
    double *serr;        /* a bound on |σ_max − sigma| (0: sigma and dir are exact) */
    int points;          /* quadrature points per element */
    double *savg;        /* 6 per (element, point): the stress averaged over tau */
    double tau;          /* the incubation time [s] */
    signed char *side;   /* scratch: +1 / −1 for reached elements, 0 */
    /* per node (capacity node_cap) */
    defo_index node_cap;
    defo_index *na, *nb;
    double *nw;
    signed char *nside; /* the active crack's side of every node */
    /* cracks, oldest first */
    defo_crack *cracks;
    int num_cracks, crack_cap;
    double next_start; /* no crack starts before this time */
    defo_index n, ne;  /* the mesh's node and element counts after the last call */
    defo_index components;
    int components_valid;
};

defo_fracture_def defo_default_fracture_def(void) {
    defo_fracture_def d;
    d.threshold = INFINITY;
    d.radius = INFINITY;
    d.crack_speed = 0;
    d.sliver = 0.2;
    d.incubation = 0;
    return d;
}

defo_status defo_fracture_def_validate(const defo_fracture_def *d) {
    if (!d) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: definition is NULL");
    if (!(d->threshold > 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture.threshold: %g is not > 0",
                          d->threshold);
    if (!(d->radius > 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture.radius: %g is not > 0", d->radius);
    if (!(d->crack_speed >= 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture.crack_speed: %g is not >= 0",
                          d->crack_speed);
    if (!(d->incubation >= 0) || !isfinite(d->incubation))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture.incubation: %g is not >= 0",
                          d->incubation);
    if (!(d->sliver >= 0 && d->sliver <= 0.45))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture.sliver: %g is not in [0, 0.45]",
                          d->sliver);
    return DEFO_OK;
}

void defo_fracture_destroy(defo_fracture *f) {
    if (!f) return;
    defo_free(f->orig_centroid);
    defo_free(f->origin);
    defo_free(f->eparent);
    defo_free(f->sigma);
    defo_free(f->serr);
    defo_free(f->dir);
    defo_free(f->savg);
    defo_free(f->side);
    defo_free(f->na);
    defo_free(f->nb);
    defo_free(f->nw);
    defo_free(f->nside);
    defo_free(f->cracks);
    defo_free(f);
}

#define GROW_TO(ptr, type, cap)                                                                    \
    do {                                                                                           \
        type *q_ = defo_realloc((ptr), (size_t)(cap) * sizeof(type) + 1);                          \
        if (!q_) return defo_error_oom("fracture state", (size_t)(cap) * sizeof(type));            \
        (ptr) = q_;                                                                                \
    } while (0)

static defo_index grown(defo_index cap, defo_index n) {
    cap = cap > 0 ? cap : 16;
    while (cap < n) cap = cap > DEFO_INDEX_MAX / 2 ? DEFO_INDEX_MAX : 2 * cap;
    return cap;
}

/* Per-node arrays for n nodes (new entries: their own origin). */
static defo_status ensure_nodes(defo_fracture *f, defo_index n) {
    if (n <= f->node_cap) return DEFO_OK;
    const defo_index cap = grown(f->node_cap, n);
    GROW_TO(f->na, defo_index, cap);
    GROW_TO(f->nb, defo_index, cap);
    GROW_TO(f->nw, double, cap);
    GROW_TO(f->nside, signed char, cap);
    for (defo_index i = f->node_cap; i < cap; i++) {
        f->na[i] = f->nb[i] = i;
        f->nw[i] = 0;
        f->nside[i] = 0;
    }
    f->node_cap = cap;
    return DEFO_OK;
}

static defo_status ensure_elems(defo_fracture *f, defo_index n) {
    if (n <= f->elem_cap) return DEFO_OK;
    const defo_index cap = grown(f->elem_cap, n);
    GROW_TO(f->origin, defo_index, cap);
    GROW_TO(f->eparent, defo_index, cap);
    GROW_TO(f->sigma, double, cap);
    GROW_TO(f->serr, double, cap);
    GROW_TO(f->dir, double, 3 * (size_t)cap);
    GROW_TO(f->savg, double, 6 * (size_t)f->points * (size_t)cap);
    memset(f->savg + 6 * (size_t)f->points * (size_t)f->elem_cap, 0,
           6 * (size_t)f->points * (size_t)(cap - f->elem_cap) * sizeof(double));
    GROW_TO(f->side, signed char, cap);
    f->elem_cap = cap;
    return DEFO_OK;
}

static void rest_centroid(const defo_mesh *m, defo_index e, double c[3]) {
    const defo_index *v = m->elems + (size_t)m->nodes_per_elem * (size_t)e;
    for (int k = 0; k < 3; k++)
        c[k] = 0.25 * (m->x[3 * (size_t)v[0] + k] + m->x[3 * (size_t)v[1] + k] +
                       m->x[3 * (size_t)v[2] + k] + m->x[3 * (size_t)v[3] + k]);
}

defo_status defo_fracture_create(const defo_mesh *mesh, const defo_fracture_def *def,
                                 defo_fracture **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: out is NULL");
    *out = NULL;
    if (!mesh || (mesh->nodes_per_elem != 4 && mesh->nodes_per_elem != 10))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: a tet4 or tet10 mesh is needed");
    defo_fracture_def d = def ? *def : defo_default_fracture_def();
    defo_status st = defo_fracture_def_validate(&d);
    if (st) return st;
    if (!(d.crack_speed > 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "fracture.crack_speed: %g is not > 0 (a body definition's 0 is filled "
                          "in by the world)",
                          d.crack_speed);
    defo_fracture *f = defo_calloc(1, sizeof *f);
    if (!f) return defo_error_oom("fracture", sizeof *f);
    f->def = d;
    f->npe = mesh->nodes_per_elem;
    f->points = f->npe == 4 ? 1 : 4;
    f->num_orig = mesh->num_elems;
    /* the incubation time: by default two crossings of a mean element by
     * the crack front */
    f->tau = d.incubation > 0 ? d.incubation : 2 * defo_mesh_mean_edge(mesh) / d.crack_speed;
    f->next_start = -INFINITY;
    f->orig_centroid = defo_malloc(3 * (size_t)mesh->num_elems * sizeof(double) + 1);
    if (!f->orig_centroid) st = defo_error_oom("fracture", 3 * (size_t)mesh->num_elems * 8);
    if (!st) st = ensure_elems(f, mesh->num_elems);
    if (!st) st = ensure_nodes(f, mesh->num_nodes);
    if (st) {
        defo_fracture_destroy(f);
        return st;
    }
    f->n = mesh->num_nodes;
    f->ne = mesh->num_elems;
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        f->origin[e] = f->eparent[e] = e;
        rest_centroid(mesh, e, f->orig_centroid + 3 * (size_t)e);
    }
    *out = f;
    return DEFO_OK;
}

void defo_fracture_node_origin(const defo_fracture *f, const defo_index **a, const defo_index **b,
                               const double **w) {
    if (a) *a = f ? f->na : NULL;
    if (b) *b = f ? f->nb : NULL;
    if (w) *w = f ? f->nw : NULL;
}
const defo_index *defo_fracture_elem_origin(const defo_fracture *f) {
    return f ? f->origin : NULL;
}
const defo_index *defo_fracture_elem_parent(const defo_fracture *f) {
    return f ? f->eparent : NULL;
}
int defo_fracture_num_cracks(const defo_fracture *f) {
    return f ? f->num_cracks : 0;
}
const defo_crack *defo_fracture_crack(const defo_fracture *f, int i) {
    return f && i >= 0 && i < f->num_cracks ? &f->cracks[i] : NULL;
}

/* ------------------------------------------------------------ stress */
/* The averaged stress g (6: xx yy zz xy yz xz) as a matrix. */
static defo_mat3 stress_matrix(const double *g) {
    defo_mat3 S;
    S.m[0][0] = g[0], S.m[1][1] = g[1], S.m[2][2] = g[2];
    S.m[0][1] = S.m[1][0] = g[3];
    S.m[1][2] = S.m[2][1] = g[4];
    S.m[0][2] = S.m[2][0] = g[5];
    return S;
}

/* The element's stress averaged over the incubation time (a, the weight of
 * the new value: 1 − exp(−dt/τ)), then its largest principal value over
 * the points in closed form (defo_sym3_eigenvalues) with a bound on its
 * error: four times the documented one.  Only elements whose comparisons
 * that bound leaves open get the exact value and direction (elem_exact). */
static void elem_stress(const defo_force_model *fm, defo_index e, int points, double a, double *avg,
                        double *smax, double *err) {
    *smax = -INFINITY;
    *err = 0;
    for (int q = 0; q < points; q++) {
        double S[9];
        defo_force_model_stress(fm, e, q, S);
        double *g = avg + 6 * ((size_t)e * (size_t)points + (size_t)q);
        const double now[6] = {S[0], S[4], S[8], S[1], S[5], S[2]};
        for (int k = 0; k < 6; k++) g[k] += a * (now[k] - g[k]);
        const defo_mat3 Sm = stress_matrix(g);
        defo_vec3 lam;
        defo_sym3_eigenvalues(&Sm, &lam);
        double fro = 0;
        for (int k = 0; k < 6; k++) fro += (k < 3 ? 1.0 : 2.0) * g[k] * g[k];
        fro = sqrt(fro);
        const double bound =
            4.0 * (1e-11 * fro + 2.0 * sqrt(DBL_EPSILON * fro * fabs(lam.x - lam.z)));
        if (q == 0 || lam.x > *smax) *smax = lam.x;
        *err = fmax(*err, bound);
    }
}

/* The exact largest principal value over the points (cyclic Jacobi) and
 * its direction, from the averages elem_stress made. */
static void elem_exact(defo_index e, int points, const double *avg, double *smax, double dir[3]) {
    *smax = -INFINITY;
    for (int q = 0; q < points; q++) {
        const defo_mat3 Sm = stress_matrix(avg + 6 * ((size_t)e * (size_t)points + (size_t)q));
        defo_mat3 Q;
        defo_vec3 lam;
        defo_sym3_eigen(&Sm, &lam, &Q);
        if (q == 0 || lam.x > *smax) {
            *smax = lam.x;
            dir[0] = Q.m[0][0], dir[1] = Q.m[1][0], dir[2] = Q.m[2][0];
        }
    }
}

/* An element holding a held node: its stress is the grip's. */
static int gripped(const defo_mesh *m, const unsigned char *held, defo_index e) {
    const int P = m->nodes_per_elem;
    for (int j = 0; held && j < P; j++)
        if (held[m->elems[(size_t)P * (size_t)e + (size_t)j]]) return 1;
    return 0;
}

/* N ∝ Fᵀ n: the rest normal of the material plane whose current normal is
 * n, F the corner tetrahedron's deformation gradient. */
static int rest_normal(const defo_mesh *m, const double *x, defo_index e, const double n[3],
                       double N[3]) {
    const defo_index *v = m->elems + (size_t)m->nodes_per_elem * (size_t)e;
    defo_mat3 Ds, Dm, Dmi;
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < 3; k++) {
            Ds.m[k][c] = x[3 * (size_t)v[c + 1] + k] - x[3 * (size_t)v[0] + k];
            Dm.m[k][c] = m->x[3 * (size_t)v[c + 1] + k] - m->x[3 * (size_t)v[0] + k];
        }
    if (!defo_m3_inverse(Dm, &Dmi)) return 0;
    defo_mat3 F = defo_m3_mul(Ds, Dmi);
    double len = 0;
    for (int k = 0; k < 3; k++) {
        N[k] = F.m[0][k] * n[0] + F.m[1][k] * n[1] + F.m[2][k] * n[2];
        len += N[k] * N[k];
    }
    len = sqrt(len);
    if (!(len > 0) || !isfinite(len)) return 0;
    for (int k = 0; k < 3; k++) N[k] /= len;
    return 1;
}

/* ------------------------------------------------------------ growth */
static double plane_distance(const defo_crack *c, const double *X) {
    return c->normal[0] * (X[0] - c->origin[0]) + c->normal[1] * (X[1] - c->origin[1]) +
           c->normal[2] * (X[2] - c->origin[2]);
}

static int reached(const defo_fracture *f, const defo_crack *c, defo_index e) {
    const double *q = f->orig_centroid + 3 * (size_t)f->origin[e];
    const double d[3] = {q[0] - c->origin[0], q[1] - c->origin[1], q[2] - c->origin[2]};
    return sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) <= c->reach;
}

/* The side of every node for a new crack: 0 within sliver · (its longest
 * corner edge) of the plane. */
static void node_sides(defo_fracture *f, const defo_mesh *m, const defo_crack *c) {
    const defo_index n = m->num_nodes;
    double *longest = (double *)defo_calloc((size_t)n + 1, sizeof(double));
    for (defo_index e = 0; longest && e < m->num_elems; e++) {
        const defo_index *v = m->elems + (size_t)f->npe * (size_t)e;
        for (int k = 0; k < 6; k++) {
            const defo_index a = v[defo_tet_edges[k][0]], b = v[defo_tet_edges[k][1]];
            const double *A = m->x + 3 * (size_t)a, *B = m->x + 3 * (size_t)b;
            const double L = sqrt((A[0] - B[0]) * (A[0] - B[0]) + (A[1] - B[1]) * (A[1] - B[1]) +
                                  (A[2] - B[2]) * (A[2] - B[2]));
            if (L > longest[a]) longest[a] = L;
            if (L > longest[b]) longest[b] = L;
        }
    }
    for (defo_index i = 0; i < n; i++) {
        const double d = plane_distance(c, m->x + 3 * (size_t)i);
        const double snap = longest ? f->def.sliver * longest[i] : 0.0;
        f->nside[i] = fabs(d) <= snap ? 0 : d > 0 ? 1 : -1;
    }
    defo_free(longest);
}

/* A crossing edge: its ends' sides differ in sign; u < w. */
typedef struct cut_edge {
    defo_index u, w, m;
    double s; /* m = (1 − s) u + s w */
} cut_edge;

static int cmp_edge(const void *pa, const void *pb) {
    const cut_edge *a = pa, *b = pb;
    if (a->u != b->u) return a->u < b->u ? -1 : 1;
    if (a->w != b->w) return a->w < b->w ? -1 : 1;
    return 0;
}

static defo_status new_node(defo_fracture *f, defo_mesh *m, defo_index a, defo_index b, double w,
                            defo_index *out) {
    double X[3];
    for (int k = 0; k < 3; k++)
        X[k] = (1.0 - w) * m->x[3 * (size_t)a + k] + w * m->x[3 * (size_t)b + k];
    defo_status st = defo_mesh_add_node(m, X[0], X[1], X[2], out);
    if (!st) st = ensure_nodes(f, m->num_nodes);
    if (st) return st;
    f->na[*out] = a;
    f->nb[*out] = b;
    f->nw[*out] = w;
    f->nside[*out] = 0;
    return DEFO_OK;
}

/* Split element e (tet4) along its crossing edges, in the global order. */
static defo_status bisect_elem(defo_fracture *f, defo_mesh *m, defo_index e, const cut_edge *edges,
                               const defo_index *list, int count, defo_index *elems_added) {
    defo_index piece[16][4];
    int np = 1;
    memcpy(piece[0], m->elems + 4 * (size_t)e, sizeof piece[0]);
    for (int k = 0; k < count; k++) {
        const cut_edge *c = &edges[list[k]];
        const int before = np;
        for (int p = 0; p < before; p++) {
            int iu = -1, iw = -1;
            for (int j = 0; j < 4; j++) {
                if (piece[p][j] == c->u) iu = j;
                if (piece[p][j] == c->w) iw = j;
            }
            if (iu < 0 || iw < 0 || np == 16) continue;
            memcpy(piece[np], piece[p], sizeof piece[0]);
            piece[p][iw] = c->m;
            piece[np][iu] = c->m;
            np++;
        }
    }
    memcpy(m->elems + 4 * (size_t)e, piece[0], sizeof piece[0]);
    const int32_t tag = m->elem_tag ? m->elem_tag[e] : 0;
    for (int p = 1; p < np; p++) {
        defo_status st = defo_mesh_add_elem(m, piece[p], tag);
        if (!st) st = ensure_elems(f, m->num_elems);
        if (st) return st;
        f->origin[m->num_elems - 1] = f->origin[e];
        f->eparent[m->num_elems - 1] = e;
        const size_t per = 6 * (size_t)f->points;
        memcpy(f->savg + per * (size_t)(m->num_elems - 1), f->savg + per * (size_t)e,
               per * sizeof(double));
        (*elems_added)++;
    }
    return DEFO_OK;
}

/* tet4: bisect every edge of a reached element that crosses the plane. */
static defo_status cut_edges(defo_fracture *f, defo_mesh *m, const defo_crack *c,
                             defo_fracture_stats *s) {
    cut_edge *edges = NULL;
    size_t ne = 0, cap = 0;
    defo_status st = DEFO_OK;
    for (defo_index e = 0; e < m->num_elems && !st; e++) {
        if (!reached(f, c, e)) continue;
        const defo_index *v = m->elems + 4 * (size_t)e;
        for (int k = 0; k < 6; k++) {
            defo_index a = v[defo_tet_edges[k][0]], b = v[defo_tet_edges[k][1]];
            if (f->nside[a] * f->nside[b] >= 0) continue;
            if (ne == cap) {
                cap = cap ? 2 * cap : 64;
                cut_edge *q = defo_realloc(edges, cap * sizeof *q);
                if (!q) {
                    st = defo_error_oom("fracture edges", cap * sizeof *q);
                    break;
                }
                edges = q;
            }
            if (a > b) {
                const defo_index t = a;
                a = b;
                b = t;
            }
            edges[ne].u = a, edges[ne].w = b, edges[ne].m = -1;
            ne++;
        }
    }
    if (!st && ne) {
        qsort(edges, ne, sizeof *edges, cmp_edge);
        size_t u = 0;
        for (size_t k = 0; k < ne; k++)
            if (u == 0 || cmp_edge(&edges[u - 1], &edges[k]) != 0) edges[u++] = edges[k];
        ne = u;
    }
    if (st || !ne) {
        defo_free(edges);
        return st;
    }
    /* the cut points */
    for (size_t k = 0; k < ne && !st; k++) {
        const double du = plane_distance(c, m->x + 3 * (size_t)edges[k].u);
        const double dw = plane_distance(c, m->x + 3 * (size_t)edges[k].w);
        double sf = du / (du - dw);
        if (!(sf > 0 && sf < 1)) sf = 0.5; /* cannot happen: the sides differ */
        edges[k].s = sf;
        st = new_node(f, m, edges[k].u, edges[k].w, sf, &edges[k].m);
    }
    /* the elements holding them: incidence of the edges' first nodes */
    defo_node_elems inc;
    memset(&inc, 0, sizeof inc);
    if (!st) st = defo_mesh_node_elems(m, &inc);
    defo_index *list = NULL, *count = NULL, *start = NULL;
    const defo_index nel = m->num_elems;
    if (!st) {
        count = defo_calloc((size_t)nel + 1, sizeof *count);
        start = defo_calloc((size_t)nel + 2, sizeof *start);
        if (!count || !start) st = defo_error_oom("fracture", 2 * (size_t)nel * sizeof *count);
    }
    /* two passes: count, then fill, each element's edges in global order */
    for (int pass = 0; pass < 2 && !st; pass++) {
        if (pass == 1) {
            for (defo_index e = 0; e < nel; e++) start[e + 1] = start[e] + count[e];
            list = defo_malloc((size_t)start[nel] * sizeof *list + 1);
            if (!list) {
                st = defo_error_oom("fracture", (size_t)start[nel] * sizeof *list);
                break;
            }
            memset(count, 0, (size_t)nel * sizeof *count);
        }
        for (size_t k = 0; k < ne; k++) {
            const defo_index a = edges[k].u, b = edges[k].w;
            if (a >= inc.num_nodes) continue;
            for (int64_t q = inc.offset[a]; q < inc.offset[a + 1]; q++) {
                const defo_index e = inc.elem[q];
                const defo_index *v = m->elems + 4 * (size_t)e;
                if (v[0] != b && v[1] != b && v[2] != b && v[3] != b) continue;
                if (pass == 1) list[start[e] + count[e]] = (defo_index)k;
                count[e]++;
            }
        }
    }
    defo_node_elems_free(&inc);
    for (defo_index e = 0; e < nel && !st; e++)
        if (count[e] > 0)
            st = bisect_elem(f, m, e, edges, list + start[e], (int)count[e], &s->elems_added);
    s->edges_cut += (defo_index)ne;
    defo_free(list);
    defo_free(count);
    defo_free(start);
    defo_free(edges);
    return st;
}

/* ------------------------------------------------------------ opening */
typedef struct face_key {
    defo_index a, b, c; /* sorted corners */
    defo_index elem;
    int local;
} face_key;

static int cmp_face(const void *pa, const void *pb) {
    const face_key *x = pa, *y = pb;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    if (x->c != y->c) return x->c < y->c ? -1 : 1;
    if (x->elem != y->elem) return x->elem < y->elem ? -1 : 1;
    return 0;
}

static face_key make_key(const defo_index *v, int lf, defo_index e) {
    defo_index t[3] = {v[defo_tet_faces[lf][0]], v[defo_tet_faces[lf][1]],
                       v[defo_tet_faces[lf][2]]};
    for (int i = 0; i < 2; i++)
        for (int j = i + 1; j < 3; j++)
            if (t[j] < t[i]) {
                const defo_index q = t[i];
                t[i] = t[j];
                t[j] = q;
            }
    face_key k = {t[0], t[1], t[2], e, lf};
    return k;
}

static defo_index uf_find(defo_index *p, defo_index i) {
    while (p[i] != i) {
        p[i] = p[p[i]];
        i = p[i];
    }
    return i;
}

/* A request: element e's local node slot gets a copy of node v. */
typedef struct relink {
    defo_index v, group; /* group: the group's lowest element */
    defo_index elem;
    int local;
} relink;

static int cmp_relink(const void *pa, const void *pb) {
    const relink *x = pa, *y = pb;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    if (x->group != y->group) return x->group < y->group ? -1 : 1;
    if (x->elem != y->elem) return x->elem < y->elem ? -1 : 1;
    return x->local < y->local ? -1 : x->local > y->local;
}

static int is_opened(const face_key *open, size_t nopen, const face_key *k) {
    size_t lo = 0, hi = nopen;
    while (lo < hi) {
        const size_t mid = (lo + hi) / 2;
        const face_key *q = &open[mid];
        int c = q->a != k->a   ? (q->a < k->a ? -1 : 1)
                : q->b != k->b ? (q->b < k->b ? -1 : 1)
                : q->c != k->c ? (q->c < k->c ? -1 : 1)
                               : 0;
        if (c == 0) return 1;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static int cmp_index(const void *pa, const void *pb) {
    const defo_index a = *(const defo_index *)pa, b = *(const defo_index *)pb;
    return a < b ? -1 : a > b;
}

/* Do elements ea and eb (local views va, vb) share a face through node v
 * (a corner: 3 shared corners with v among them; an edge node g between
 * corners a, b: 3 shared corners with a and b among them)?  Its key in *k. */
static int share_face(const defo_index *va, const defo_index *vb, defo_index v, defo_index ea,
                      defo_index ca, defo_index cb, face_key *k) {
    defo_index common[4];
    int nc = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            if (va[i] == vb[j]) common[nc++] = va[i];
    if (nc != 3) return 0;
    int has = 0;
    for (int i = 0; i < 3; i++) has += common[i] == v || common[i] == ca || common[i] == cb;
    if (v >= 0 ? has < 1 : has < 2) return 0;
    for (int lf = 0; lf < 4; lf++) {
        const face_key q = make_key(va, lf, ea);
        int all = 1;
        for (int i = 0; i < 3; i++) all &= q.a == common[i] || q.b == common[i] || q.c == common[i];
        if (all) {
            *k = q;
            return 1;
        }
    }
    return 0;
}

/* Open the faces between the two sides of the reached elements. */
static defo_status open_faces(defo_fracture *f, defo_mesh *m, const defo_crack *c,
                              defo_fracture_stats *s) {
    const int P = f->npe;
    const defo_index nel = m->num_elems;
    size_t nk = 0;
    for (defo_index e = 0; e < nel; e++) {
        f->side[e] = 0;
        if (!reached(f, c, e)) continue;
        const defo_index *v = m->elems + (size_t)P * (size_t)e;
        int pos = 0, neg = 0;
        if (P == 4)
            for (int j = 0; j < 4; j++) pos |= f->nside[v[j]] > 0, neg |= f->nside[v[j]] < 0;
        if (pos == neg) { /* tet10, or all four on the plane: the centroid's side */
            double X[3];
            rest_centroid(m, e, X);
            pos = plane_distance(c, X) >= 0;
        }
        f->side[e] = pos ? 1 : -1;
        nk += 4;
    }
    if (!nk) return DEFO_OK;
    face_key *keys = defo_malloc(nk * sizeof *keys);
    if (!keys) return defo_error_oom("fracture faces", nk * sizeof *keys);
    size_t q = 0;
    for (defo_index e = 0; e < nel; e++)
        if (f->side[e])
            for (int lf = 0; lf < 4; lf++)
                keys[q++] = make_key(m->elems + (size_t)P * (size_t)e, lf, e);
    qsort(keys, nk, sizeof *keys, cmp_face);
    /* the opened faces (one key each, sorted), and the nodes to examine:
     * their corners (tet10: and edge nodes) */
    size_t nopen = 0;
    defo_index *nodes = defo_malloc(nk * 6 * sizeof *nodes + 1);
    if (!nodes) {
        defo_free(keys);
        return defo_error_oom("fracture", nk * 6 * sizeof *nodes);
    }
    size_t nn = 0;
    for (size_t k = 0; k + 1 < nk; k++) {
        if (!(keys[k].a == keys[k + 1].a && keys[k].b == keys[k + 1].b &&
              keys[k].c == keys[k + 1].c))
            continue;
        const face_key a = keys[k];
        k++;
        if (f->side[a.elem] == f->side[keys[k].elem]) continue;
        keys[nopen++] = a;
        const defo_index *v = m->elems + (size_t)P * (size_t)a.elem;
        const int *fc = defo_tet_faces[a.local];
        for (int j = 0; j < 3; j++) nodes[nn++] = v[fc[j]];
        if (P == 10)
            for (int j = 0; j < 3; j++) {
                const int ca = fc[j], cb = fc[(j + 1) % 3];
                for (int ed = 0; ed < 6; ed++)
                    if ((defo_tet_edges[ed][0] == ca && defo_tet_edges[ed][1] == cb) ||
                        (defo_tet_edges[ed][0] == cb && defo_tet_edges[ed][1] == ca))
                        nodes[nn++] = v[4 + ed];
            }
    }
    s->faces_opened += (defo_index)nopen;
    defo_status st = DEFO_OK;
    relink *rl = NULL;
    size_t nrl = 0, rlcap = 0;
    defo_node_elems inc;
    memset(&inc, 0, sizeof inc);
    if (nopen) {
        qsort(nodes, nn, sizeof *nodes, cmp_index);
        size_t u = 0;
        for (size_t k = 0; k < nn; k++)
            if (u == 0 || nodes[u - 1] != nodes[k]) nodes[u++] = nodes[k];
        nn = u;
        st = defo_mesh_node_elems(m, &inc);
    }
    /* groups of each node's elements, on the connectivity before any copy */
    defo_index par[512];
    for (size_t k = 0; k < nn && !st && nopen; k++) {
        const defo_index v = nodes[k];
        const int64_t o = inc.offset[v], cnt = inc.offset[v + 1] - o;
        if (cnt < 2) continue;
        if (cnt > 512) {
            st = defo_error(DEFO_ERR_INVALID_MESH, "fracture: node %ld has %ld elements (> 512)",
                            (long)v, (long)cnt);
            break;
        }
        /* a corner, or an edge node between corners ca and cb */
        defo_index ca = -1, cb = -1, vc = v;
        const int l0 = inc.local[o];
        if (l0 >= 4) {
            const defo_index *v0 = m->elems + (size_t)P * (size_t)inc.elem[o];
            ca = v0[defo_tet_edges[l0 - 4][0]];
            cb = v0[defo_tet_edges[l0 - 4][1]];
            vc = -1;
        }
        for (int64_t i = 0; i < cnt; i++) par[i] = (defo_index)i;
        for (int64_t i = 0; i < cnt; i++) {
            const defo_index ei = inc.elem[o + i];
            const defo_index *vi = m->elems + (size_t)P * (size_t)ei;
            for (int64_t j = i + 1; j < cnt; j++) {
                const defo_index ej = inc.elem[o + j];
                face_key fk;
                if (!share_face(vi, m->elems + (size_t)P * (size_t)ej, vc, ei, ca, cb, &fk))
                    continue;
                if (is_opened(keys, nopen, &fk)) continue;
                const defo_index ri = uf_find(par, (defo_index)i), rj = uf_find(par, (defo_index)j);
                if (ri != rj) par[ri > rj ? ri : rj] = ri < rj ? ri : rj;
            }
        }
        /* incidence lists elements in increasing order: a group's root is its
         * lowest element; the group of element 0 of the list keeps v */
        for (int64_t i = 0; i < cnt; i++) {
            const defo_index r = uf_find(par, (defo_index)i);
            if (r == 0) continue;
            if (nrl == rlcap) {
                rlcap = rlcap ? 2 * rlcap : 256;
                relink *qq = defo_realloc(rl, rlcap * sizeof *qq);
                if (!qq) {
                    st = defo_error_oom("fracture", rlcap * sizeof *qq);
                    break;
                }
                rl = qq;
            }
            relink r1 = {v, inc.elem[o + r], inc.elem[o + i], inc.local[o + i]};
            rl[nrl++] = r1;
        }
    }
    defo_node_elems_free(&inc);
    /* the copies, in order of (node, group) */
    if (!st && nrl) qsort(rl, nrl, sizeof *rl, cmp_relink);
    defo_index copy = -1;
    for (size_t k = 0; k < nrl && !st; k++) {
        if (k == 0 || rl[k].v != rl[k - 1].v || rl[k].group != rl[k - 1].group) {
            st = new_node(f, m, rl[k].v, rl[k].v, 0.0, &copy);
            if (st) break;
            s->nodes_added++;
        }
        m->elems[(size_t)P * (size_t)rl[k].elem + (size_t)rl[k].local] = copy;
    }
    defo_free(rl);
    defo_free(nodes);
    defo_free(keys);
    return st;
}

/* ------------------------------------------------------------ the pass */
defo_status defo_fracture_step(defo_fracture *f, defo_mesh *mesh, defo_force_model *fm,
                               const double *x, const unsigned char *held, double t, double dt,
                               defo_fracture_stats *stats) {
    defo_fracture_stats s;
    memset(&s, 0, sizeof s);
    s.max_stress_elem = -1;
    if (stats) *stats = s;
    if (!f || !mesh || !fm || !x)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: missing argument");
    if (!(dt > 0) || !isfinite(t))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: t %g, dt %g (dt must be > 0)", t,
                          dt);
    if (mesh->nodes_per_elem != f->npe || mesh->num_elems != f->ne || mesh->num_nodes != f->n)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "fracture: the mesh is not the one this state was made for");
    defo_crack *c = f->num_cracks > 0 && !f->cracks[f->num_cracks - 1].done
                        ? &f->cracks[f->num_cracks - 1]
                        : NULL;
    const defo_index ne = mesh->num_elems;
    const defo_index old_n = mesh->num_nodes;
    for (defo_index e = 0; e < ne; e++) f->eparent[e] = e;
    /* the stresses, averaged over the incubation time: every call */
    if (defo_force_model_points(fm) != f->points)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: %d points per element, not %d",
                          defo_force_model_points(fm), f->points);
    defo_status st0 = defo_force_model_evaluate(fm, x, 0, NULL, NULL);
    if (st0) return defo_error_prefix("fracture");
    const double a = f->tau > 0 && isfinite(dt) ? -expm1(-dt / f->tau) : 1.0;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(ne, 40))
    for (defo_index e = 0; e < ne; e++)
        elem_stress(fm, e, f->points, a, f->savg, f->sigma + e, f->serr + e);
    if (!c && t >= f->next_start) {
        /* exact values where the closed form's bound cannot decide: next to
         * the threshold, or possibly the largest (its value is reported and
         * its direction starts a crack) */
        double lower = -INFINITY;
        for (defo_index e = 0; e < ne; e++)
            if (!gripped(mesh, held, e)) lower = fmax(lower, f->sigma[e] - f->serr[e]);
        for (defo_index e = 0; e < ne; e++)
            if (!gripped(mesh, held, e) && (f->sigma[e] + f->serr[e] >= lower ||
                                            fabs(f->sigma[e] - f->def.threshold) <= f->serr[e]))
                elem_exact(e, f->points, f->savg, f->sigma + e, f->dir + 3 * (size_t)e);
        for (defo_index e = 0; e < ne; e++) {
            if (!isfinite(f->sigma[e]))
                return defo_error(DEFO_ERR_NUMERICAL,
                                  "fracture: element %ld has a non-finite stress", (long)e);
            if (gripped(mesh, held, e)) continue;
            if (s.max_stress_elem < 0 || f->sigma[e] > s.max_stress) {
                s.max_stress = f->sigma[e];
                s.max_stress_elem = e;
            }
            s.over_threshold += f->sigma[e] > f->def.threshold;
        }
        if (s.over_threshold > 0) {
            if (f->num_cracks == f->crack_cap) {
                const int cap = f->crack_cap ? 2 * f->crack_cap : 8;
                defo_crack *q = defo_realloc(f->cracks, (size_t)cap * sizeof *q);
                if (!q) return defo_error_oom("cracks", (size_t)cap * sizeof *q);
                f->cracks = q;
                f->crack_cap = cap;
            }
            const defo_index e = s.max_stress_elem;
            c = &f->cracks[f->num_cracks];
            memset(c, 0, sizeof *c);
            memcpy(c->current_normal, f->dir + 3 * (size_t)e, sizeof c->current_normal);
            if (!rest_normal(mesh, x, e, c->current_normal, c->normal))
                memcpy(c->normal, c->current_normal, sizeof c->normal);
            memcpy(c->origin, f->orig_centroid + 3 * (size_t)f->origin[e], sizeof c->origin);
            c->stress = f->sigma[e];
            c->elem = e;
            c->t_start = t;
            f->num_cracks++;
            node_sides(f, mesh, c);
            s.cracks = 1;
        }
    }
    defo_status st = DEFO_OK;
    if (c) {
        /* the front: how far it has run by the step's end; at most the
         * farthest original element */
        double far = 0;
        for (defo_index e = 0; e < f->num_orig; e++) {
            const double *q = f->orig_centroid + 3 * (size_t)e;
            const double d[3] = {q[0] - c->origin[0], q[1] - c->origin[1], q[2] - c->origin[2]};
            far = fmax(far, sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
        }
        const double run = isinf(f->def.crack_speed) || isinf(dt)
                               ? INFINITY
                               : f->def.crack_speed * (t + dt - c->t_start);
        c->reach = fmin(f->def.radius, run);
        if (c->reach >= far) c->reach = far;
        if (f->npe == 4) st = cut_edges(f, mesh, c, &s);
        if (!st) st = open_faces(f, mesh, c, &s);
        if (!st && (c->reach >= f->def.radius || c->reach >= far)) {
            c->done = 1;
            /* dt = ∞ (an impact's analysis): the next crack may follow at once */
            f->next_start = isinf(dt)                   ? t
                            : isinf(f->def.crack_speed) ? t + dt
                                                        : t + dt + c->reach / f->def.crack_speed;
        }
    }
    f->n = mesh->num_nodes;
    f->ne = mesh->num_elems;
    if (st) return defo_error_prefix("fracture");
    s.growing = c && !c->done;
    s.nodes_added = mesh->num_nodes - old_n;
    if (s.nodes_added > 0 || s.elems_added > 0 || !f->components_valid) {
        st = defo_mesh_components(mesh, NULL, &f->components);
        if (st) return defo_error_prefix("fracture");
        f->components_valid = 1;
    }
    s.components = f->components;
    if (stats) *stats = s;
    return DEFO_OK;
}

/* ------------------------------------------------------------ checkpoints */
/* i64 n, ne, cracks | f64 next_start | i32 a[n] | i32 b[n] | f64 w[n] |
 * i8 side[n] | i32 origin[ne] | zeros to a multiple of 8 | f64 averaged
 * stress[6 · points · ne] | per crack: f64 origin[3], normal[3],
 * current_normal[3], stress, t_start, reach | i64 elem, done. */
#define CRACK_BYTES (12 * 8 + 16)
static size_t pad8(size_t n) {
    return (n + 7) / 8 * 8;
}
size_t defo_fracture_state_bytes(const defo_fracture *f) {
    const size_t n = (size_t)f->n, ne = (size_t)f->ne;
    return 32 + pad8(n * (4 + 4 + 8 + 1) + ne * 4) + ne * 48 * (size_t)f->points +
           (size_t)f->num_cracks * CRACK_BYTES;
}

void defo_fracture_save_state(const defo_fracture *f, void *out) {
    unsigned char *o = out;
    const int64_t head[3] = {f->n, f->ne, f->num_cracks};
    memcpy(o, head, 24);
    memcpy(o + 24, &f->next_start, 8);
    o += 32;
    const size_t n = (size_t)f->n, ne = (size_t)f->ne;
    memcpy(o, f->na, n * 4), o += n * 4;
    memcpy(o, f->nb, n * 4), o += n * 4;
    memcpy(o, f->nw, n * 8), o += n * 8;
    memcpy(o, f->nside, n), o += n;
    memcpy(o, f->origin, ne * 4), o += ne * 4;
    const size_t body = n * 17 + ne * 4;
    memset(o, 0, pad8(body) - body), o += pad8(body) - body;
    memcpy(o, f->savg, ne * 48 * (size_t)f->points), o += ne * 48 * (size_t)f->points;
    for (int k = 0; k < f->num_cracks; k++) {
        const defo_crack *c = &f->cracks[k];
        const double d[12] = {
            c->origin[0],         c->origin[1], c->origin[2],         c->normal[0],
            c->normal[1],         c->normal[2], c->current_normal[0], c->current_normal[1],
            c->current_normal[2], c->stress,    c->t_start,           c->reach};
        const int64_t i[2] = {c->elem, c->done};
        memcpy(o, d, sizeof d), o += sizeof d;
        memcpy(o, i, sizeof i), o += sizeof i;
    }
}

defo_status defo_fracture_check_state(const defo_fracture *f, const void *in, size_t size,
                                      defo_index *nodes, defo_index *elems) {
    if (!f || !in || size < 32)
        return defo_error(DEFO_ERR_PARSE, "fracture state: missing or truncated");
    const unsigned char *p = in;
    int64_t head[3];
    double next_start;
    memcpy(head, p, 24);
    memcpy(&next_start, p + 24, 8);
    if (head[0] < 0 || head[0] > DEFO_INDEX_MAX || head[1] < f->num_orig ||
        head[1] > DEFO_INDEX_MAX || head[2] < 0 || head[2] > INT32_MAX / 2 ||
        !(next_start == next_start))
        return defo_error(DEFO_ERR_PARSE, "fracture state: %lld nodes, %lld elements, %lld cracks",
                          (long long)head[0], (long long)head[1], (long long)head[2]);
    const size_t n = (size_t)head[0], ne = (size_t)head[1];
    const int nc = (int)head[2];
    const size_t sb = ne * 48 * (size_t)f->points;
    if (size != 32 + pad8(n * 17 + ne * 4) + sb + (size_t)nc * CRACK_BYTES)
        return defo_error(DEFO_ERR_PARSE, "fracture state: %zu bytes for %zu nodes", size, n);
    const unsigned char *a = p + 32, *b = a + n * 4, *w = b + n * 4, *sd = w + n * 8, *og = sd + n,
                        *sa = p + 32 + pad8(n * 17 + ne * 4), *cr = sa + sb;
    for (size_t k = 0; k < sb / 8; k++) {
        double v;
        memcpy(&v, sa + 8 * k, 8);
        if (!isfinite(v))
            return defo_error(DEFO_ERR_PARSE, "fracture state: a stress is not finite");
    }
    for (size_t i = 0; i < n; i++) {
        int32_t ai, bi;
        double wi;
        memcpy(&ai, a + 4 * i, 4), memcpy(&bi, b + 4 * i, 4), memcpy(&wi, w + 8 * i, 8);
        const int orig = ai == (int32_t)i && bi == (int32_t)i && wi == 0;
        const int added =
            ai >= 0 && bi >= 0 && (size_t)ai < i && (size_t)bi < i && wi >= 0 && wi <= 1;
        if (!orig && !added)
            return defo_error(DEFO_ERR_PARSE, "fracture state: node %zu made of %d, %d at %g", i,
                              (int)ai, (int)bi, wi);
        if (sd[i] != 0 && sd[i] != 1 && sd[i] != 0xff)
            return defo_error(DEFO_ERR_PARSE, "fracture state: node %zu has side %d", i,
                              (int)(signed char)sd[i]);
    }
    for (size_t e = 0; e < ne; e++) {
        int32_t o;
        memcpy(&o, og + 4 * e, 4);
        if (o < 0 || o >= f->num_orig)
            return defo_error(DEFO_ERR_PARSE, "fracture state: element %zu from element %d of %ld",
                              e, (int)o, (long)f->num_orig);
    }
    for (int k = 0; k < nc; k++) {
        double d[12];
        int64_t i[2];
        memcpy(d, cr + (size_t)k * CRACK_BYTES, sizeof d);
        memcpy(i, cr + (size_t)k * CRACK_BYTES + sizeof d, sizeof i);
        for (int j = 0; j < 12; j++)
            if (d[j] != d[j])
                return defo_error(DEFO_ERR_PARSE, "fracture state: crack %d is not a number", k);
        if ((i[1] != 0 && i[1] != 1) || (i[1] == 0 && k != nc - 1))
            return defo_error(DEFO_ERR_PARSE, "fracture state: crack %d is malformed", k);
    }
    if (nodes) *nodes = (defo_index)n;
    if (elems) *elems = (defo_index)ne;
    return DEFO_OK;
}

defo_status defo_fracture_restore_state(defo_fracture *f, defo_mesh *mesh, defo_index n0,
                                        const void *in, size_t size) {
    defo_index nn = 0, nne = 0;
    defo_status st = defo_fracture_check_state(f, in, size, &nn, &nne);
    if (st) return st;
    if (!mesh || n0 < 0 || n0 > nn || n0 > mesh->num_nodes || mesh->nodes_per_elem != f->npe)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture state: not this mesh");
    const size_t n = (size_t)nn, ne = (size_t)nne;
    const unsigned char *p = in;
    int64_t head[3];
    double next_start;
    memcpy(head, p, 24);
    memcpy(&next_start, p + 24, 8);
    const int nc = (int)head[2];
    const size_t sb = ne * 48 * (size_t)f->points;
    const unsigned char *a = p + 32, *b = a + n * 4, *w = b + n * 4, *sd = w + n * 8, *og = sd + n,
                        *sa = p + 32 + pad8(n * 17 + ne * 4), *cr = sa + sb;
    st = ensure_nodes(f, nn);
    if (!st) st = ensure_elems(f, nne);
    if (!st) st = defo_mesh_reserve(mesh, nn, nne, 0);
    if (!st && nc > f->crack_cap) {
        defo_crack *q = defo_realloc(f->cracks, (size_t)nc * sizeof *q);
        if (!q) return defo_error_oom("cracks", (size_t)nc * sizeof *q);
        f->cracks = q;
        f->crack_cap = nc;
    }
    if (st) return st;
    memcpy(f->na, a, n * 4);
    memcpy(f->nb, b, n * 4);
    memcpy(f->nw, w, n * 8);
    memcpy(f->nside, sd, n);
    memcpy(f->origin, og, ne * 4);
    memcpy(f->savg, sa, sb);
    for (size_t e = 0; e < ne; e++) f->eparent[e] = (defo_index)e;
    /* the added nodes, rebuilt from their origins exactly as they were made */
    mesh->num_nodes = n0;
    for (defo_index i = n0; i < nn && !st; i++) {
        defo_index q = -1;
        const defo_index ia = f->na[i], ib = f->nb[i];
        const double wi = f->nw[i];
        double X[3];
        for (int k = 0; k < 3; k++)
            X[k] = (1.0 - wi) * mesh->x[3 * (size_t)ia + k] + wi * mesh->x[3 * (size_t)ib + k];
        st = defo_mesh_add_node(mesh, X[0], X[1], X[2], &q);
    }
    if (st) return st;
    mesh->num_elems = nne; /* room reserved: the caller writes the connectivity */
    for (int k = 0; k < nc; k++) {
        double d[12];
        int64_t i[2];
        memcpy(d, cr + (size_t)k * CRACK_BYTES, sizeof d);
        memcpy(i, cr + (size_t)k * CRACK_BYTES + sizeof d, sizeof i);
        defo_crack *c = &f->cracks[k];
        memcpy(c->origin, d, 24);
        memcpy(c->normal, d + 3, 24);
        memcpy(c->current_normal, d + 6, 24);
        c->stress = d[9], c->t_start = d[10], c->reach = d[11];
        c->elem = (defo_index)i[0];
        c->done = (int)i[1];
    }
    f->num_cracks = nc;
    f->next_start = next_start;
    f->n = nn;
    f->ne = nne;
    f->components_valid = 0;
    return DEFO_OK;
}
