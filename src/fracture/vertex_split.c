/*
 * fracture/vertex_split.c — MG04 §4 fracture: maximum principal stress per
 * element, vertex split by the plane normal to its direction, crack tips;
 * tet4 and tet10.  defo/fracture.h states the algorithm; this file keeps
 * these invariants:
 *
 * - The stress pass is parallel over elements into per-element buffers; the
 *   splits are sequential in a fixed order (decreasing σ_max, then element
 *   index) with a splitmix64 generator seeded by def.seed, so a run is
 *   bitwise reproducible for any thread count.
 * - Node → element incidence is built once per call.  It stays valid for
 *   every node not touched in this call: a split only re-links elements
 *   around the split corner v, all of which are then skipped, and a corner
 *   is split only when none of its elements was re-linked in this call.
 * - New nodes are appended with the rest position of their parent; parents
 *   precede children, so copying state in creation order resolves chains.
 * - tet10: an edge node on an edge (v, w) is shared by the elements around
 *   that edge, all of which contain v; when they end on both sides of the
 *   plane the positive ones get a copy of it too.
 */
#include "defo/fracture.h"

#include "defo/math.h"

#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <string.h>

struct defo_fracture {
    defo_fracture_def def;
    defo_index num_elems;
    double *sigma;    /* per element σ_max of the last pass */
    double *dir;      /* 3 per element n_max */
    double *centroid; /* 3 per element at this call's positions */
    defo_index *order;
    unsigned char *elem_skip; /* per element, this call */
    unsigned char *tip;       /* per node (capacity node_cap) */
    defo_index *parent;       /* per node */
    defo_index node_cap;
    uint64_t rng;
    defo_index components;
    int components_valid;
};

defo_fracture_def defo_default_fracture_def(void) {
    defo_fracture_def d;
    d.threshold = INFINITY;
    d.seed = 1;
    d.max_splits = 1;
    return d;
}

/* splitmix64 (Steele, Lea, Flood 2014): fully specified, so runs repeat. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void defo_fracture_destroy(defo_fracture *f) {
    if (!f) return;
    defo_free(f->sigma);
    defo_free(f->dir);
    defo_free(f->centroid);
    defo_free(f->order);
    defo_free(f->elem_skip);
    defo_free(f->tip);
    defo_free(f->parent);
    defo_free(f);
}

/* Per-node arrays for n nodes (new entries: no tip, own parent). */
static defo_status ensure_nodes(defo_fracture *f, defo_index n) {
    if (n <= f->node_cap) return DEFO_OK;
    defo_index cap = f->node_cap > 0 ? f->node_cap : 16;
    while (cap < n) cap = cap > DEFO_INDEX_MAX / 2 ? DEFO_INDEX_MAX : 2 * cap;
    unsigned char *t = defo_realloc(f->tip, (size_t)cap);
    if (t) f->tip = t;
    defo_index *p = defo_realloc(f->parent, (size_t)cap * sizeof(defo_index));
    if (p) f->parent = p;
    if (!t || !p) return defo_error_oom("fracture node data", (size_t)cap * 5);
    for (defo_index i = f->node_cap; i < cap; i++) {
        f->tip[i] = 0;
        f->parent[i] = i;
    }
    f->node_cap = cap;
    return DEFO_OK;
}

defo_status defo_fracture_create(const defo_mesh *mesh, const defo_fracture_def *def,
                                 defo_fracture **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: out is NULL");
    *out = NULL;
    if (!mesh || (mesh->nodes_per_elem != 4 && mesh->nodes_per_elem != 10))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: a tet4 or tet10 mesh is needed");
    defo_fracture_def d = def ? *def : defo_default_fracture_def();
    if (!(d.threshold > 0) || d.max_splits < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "fracture: threshold %g must be > 0 and max_splits %d >= 0", d.threshold,
                          d.max_splits);
    defo_fracture *f = defo_calloc(1, sizeof *f);
    if (!f) return defo_error_oom("fracture", sizeof *f);
    f->def = d;
    f->rng = d.seed;
    f->num_elems = mesh->num_elems;
    const size_t ne = (size_t)mesh->num_elems;
    f->sigma = defo_malloc(ne * sizeof(double) + 1);
    f->dir = defo_malloc(3 * ne * sizeof(double) + 1);
    f->centroid = defo_malloc(3 * ne * sizeof(double) + 1);
    f->order = defo_malloc(ne * sizeof(defo_index) + 1);
    f->elem_skip = defo_malloc(ne + 1);
    defo_status st = DEFO_OK;
    if (!f->sigma || !f->dir || !f->centroid || !f->order || !f->elem_skip)
        st = defo_error_oom("fracture element data", 8 * ne * sizeof(double));
    if (!st) st = ensure_nodes(f, mesh->num_nodes);
    if (st) {
        defo_fracture_destroy(f);
        return st;
    }
    *out = f;
    return DEFO_OK;
}

const unsigned char *defo_fracture_crack_tips(const defo_fracture *f) {
    return f ? f->tip : NULL;
}
const defo_index *defo_fracture_parents(const defo_fracture *f) {
    return f ? f->parent : NULL;
}
uint64_t defo_fracture_rng_state(const defo_fracture *f) {
    return f ? f->rng : 0;
}

defo_status defo_fracture_restore(defo_fracture *f, defo_index n, uint64_t rng,
                                  const unsigned char *tips, const defo_index *parents) {
    if (!f || !tips || !parents || n < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture restore: missing argument");
    for (defo_index i = 0; i < n; i++)
        if (parents[i] < 0 || parents[i] > i)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "fracture restore: node %ld has parent %ld (must be in [0, %ld])",
                              (long)i, (long)parents[i], (long)i);
    defo_status st = ensure_nodes(f, n);
    if (st) return st;
    for (defo_index i = 0; i < f->node_cap; i++) {
        f->tip[i] = i < n ? (tips[i] != 0) : 0;
        f->parent[i] = i < n ? parents[i] : i;
    }
    f->rng = rng;
    f->components_valid = 0;
    return DEFO_OK;
}

/* Heap sort of element indices by decreasing σ, then increasing index. */
static void sort_candidates(defo_index *idx, defo_index count, const double *sigma) {
#define FR_LESS(a, b) (sigma[a] > sigma[b] || (sigma[a] == sigma[b] && (a) < (b)))
    for (defo_index start = count / 2 - 1; start >= 0; start--) {
        defo_index root = start;
        for (;;) {
            defo_index child = 2 * root + 1;
            if (child >= count) break;
            if (child + 1 < count && FR_LESS(idx[child], idx[child + 1])) child++;
            if (!FR_LESS(idx[root], idx[child])) break;
            defo_index t = idx[root];
            idx[root] = idx[child];
            idx[child] = t;
            root = child;
        }
    }
    for (defo_index end = count - 1; end > 0; end--) {
        defo_index t = idx[0];
        idx[0] = idx[end];
        idx[end] = t;
        defo_index root = 0;
        for (;;) {
            defo_index child = 2 * root + 1;
            if (child >= end) break;
            if (child + 1 < end && FR_LESS(idx[child], idx[child + 1])) child++;
            if (!FR_LESS(idx[root], idx[child])) break;
            t = idx[root];
            idx[root] = idx[child];
            idx[child] = t;
            root = child;
        }
    }
#undef FR_LESS
}

static int positive_side(const defo_fracture *f, defo_index e, const double *p, const double *n) {
    const double *c = f->centroid + 3 * (size_t)e;
    return (c[0] - p[0]) * n[0] + (c[1] - p[1]) * n[1] + (c[2] - p[2]) * n[2] > 0;
}

/* Mark the other corners of every face around v shared by a positive and a
 * negative element (before the split: both still reference v). */
static void mark_tips(defo_fracture *f, const defo_mesh *mesh, const defo_node_elems *ne,
                      const double *x, defo_index v, const double *n) {
    const int p = mesh->nodes_per_elem;
    for (int64_t a = ne->offset[v]; a < ne->offset[v + 1]; a++) {
        const defo_index ea = ne->elem[a];
        if (!positive_side(f, ea, x + 3 * (size_t)v, n)) continue;
        const defo_index *na = mesh->elems + (size_t)p * (size_t)ea;
        for (int64_t b = ne->offset[v]; b < ne->offset[v + 1]; b++) {
            const defo_index eb = ne->elem[b];
            if (positive_side(f, eb, x + 3 * (size_t)v, n)) continue;
            const defo_index *nb = mesh->elems + (size_t)p * (size_t)eb;
            defo_index common[4];
            int c = 0;
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    if (na[i] == nb[j] && na[i] != v) common[c++] = na[i];
            if (c == 2) f->tip[common[0]] = f->tip[common[1]] = 1;
        }
    }
}

/* Largest principal stress over the element's points and its direction. */
static void elem_stress(const defo_force_model *fm, defo_index e, double *smax, double dir[3]) {
    *smax = -INFINITY;
    for (int q = 0; q < defo_force_model_points(fm); q++) {
        double S[9];
        defo_force_model_stress(fm, e, q, S);
        defo_mat3 Sm, Q;
        defo_vec3 lam;
        memcpy(Sm.m, S, sizeof S);
        defo_sym3_eigen(&Sm, &lam, &Q);
        if (q == 0 || lam.x > *smax) {
            *smax = lam.x;
            dir[0] = Q.m[0][0], dir[1] = Q.m[1][0], dir[2] = Q.m[2][0];
        }
    }
}

defo_status defo_fracture_step(defo_fracture *f, defo_mesh *mesh, defo_force_model *fm,
                               const double *x, defo_fracture_stats *stats) {
    defo_fracture_stats s;
    memset(&s, 0, sizeof s);
    s.max_stress_elem = -1;
    if (stats) *stats = s;
    if (!f || !mesh || !fm || !x)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: missing argument");
    if (mesh->num_elems != f->num_elems)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: the element count changed");
    defo_status st = defo_force_model_evaluate(fm, x, 0, NULL, NULL);
    if (st) return defo_error_prefix("fracture");
    const defo_index ne = f->num_elems;
    const int P = mesh->nodes_per_elem;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(ne, 40))
    for (defo_index e = 0; e < ne; e++) elem_stress(fm, e, f->sigma + e, f->dir + 3 * (size_t)e);
    defo_index count = 0;
    for (defo_index e = 0; e < ne; e++) {
        if (!isfinite(f->sigma[e]))
            return defo_error(DEFO_ERR_NUMERICAL, "fracture: element %ld has a non-finite stress",
                              (long)e);
        if (s.max_stress_elem < 0 || f->sigma[e] > s.max_stress) {
            s.max_stress = f->sigma[e];
            s.max_stress_elem = e;
        }
        if (f->sigma[e] > f->def.threshold) f->order[count++] = e;
    }
    s.over_threshold = count;
    const defo_index old_n = mesh->num_nodes;
    if (count > 0) {
        sort_candidates(f->order, count, f->sigma);
        for (defo_index e = 0; e < ne; e++) {
            const defo_index *en = mesh->elems + (size_t)P * (size_t)e;
            for (int r = 0; r < 3; r++)
                f->centroid[3 * (size_t)e + (size_t)r] =
                    0.25 * (x[3 * (size_t)en[0] + r] + x[3 * (size_t)en[1] + r] +
                            x[3 * (size_t)en[2] + r] + x[3 * (size_t)en[3] + r]);
        }
        defo_node_elems inc;
        st = defo_mesh_node_elems(mesh, &inc);
        if (st) return defo_error_prefix("fracture");
        memset(f->elem_skip, 0, (size_t)ne);
        for (defo_index k = 0; k < count && !st; k++) {
            if (f->def.max_splits > 0 && s.splits >= f->def.max_splits) break;
            const defo_index e = f->order[k];
            if (f->elem_skip[e]) continue;
            const defo_index *en = mesh->elems + (size_t)P * (size_t)e;
            const double *n = f->dir + 3 * (size_t)e;
            /* candidates: crack tips first, then the other corners, each
             * group in a seeded random order */
            defo_index cand[4];
            int nc = 0, ntip = 0;
            for (int i = 0; i < 4; i++)
                if (f->tip[en[i]]) cand[nc++] = en[i];
            ntip = nc;
            for (int i = 0; i < 4; i++)
                if (!f->tip[en[i]]) cand[nc++] = en[i];
            for (int lo = 0, hi = ntip; lo < 4; lo = hi, hi = 4) {
                for (int i = hi - 1; i > lo; i--) {
                    int j = lo + (int)(next_rand(&f->rng) % (uint64_t)(i - lo + 1));
                    defo_index t = cand[i];
                    cand[i] = cand[j];
                    cand[j] = t;
                }
                if (hi == 4) break;
            }
            defo_index v = -1;
            for (int i = 0; i < 4 && v < 0; i++) {
                const defo_index c = cand[i];
                defo_index pos = 0, all = 0;
                int touched = 0;
                for (int64_t q = inc.offset[c]; q < inc.offset[c + 1]; q++) {
                    pos += positive_side(f, inc.elem[q], x + 3 * (size_t)c, n);
                    touched |= f->elem_skip[inc.elem[q]];
                    all++;
                }
                if (pos > 0 && pos < all && !(P > 4 && touched)) v = c;
            }
            if (v < 0) continue;
            mark_tips(f, mesh, &inc, x, v, n);
            defo_index nv = -1;
            st = defo_mesh_add_node(mesh, mesh->x[3 * (size_t)v], mesh->x[3 * (size_t)v + 1],
                                    mesh->x[3 * (size_t)v + 2], &nv);
            if (!st) st = ensure_nodes(f, mesh->num_nodes);
            if (st) break;
            f->parent[nv] = v;
            /* tet10: the edge nodes around v whose elements straddle the plane */
            if (P == 10)
                for (int64_t q = inc.offset[v]; q < inc.offset[v + 1] && !st; q++) {
                    const defo_index el = inc.elem[q];
                    if (!positive_side(f, el, x + 3 * (size_t)v, n)) continue;
                    const int lv = inc.local[q];
                    defo_index *enl = mesh->elems + 10 * (size_t)el;
                    for (int ed = 0; ed < 6 && !st; ed++) {
                        if (defo_tet_edges[ed][0] != lv && defo_tet_edges[ed][1] != lv) continue;
                        const defo_index g = enl[4 + ed];
                        if (g >= old_n) continue; /* already a copy made for this split */
                        int straddles = 0;
                        for (int64_t r = inc.offset[g]; r < inc.offset[g + 1]; r++)
                            straddles |= !positive_side(f, inc.elem[r], x + 3 * (size_t)v, n);
                        if (!straddles) continue;
                        defo_index ng = -1;
                        st = defo_mesh_add_node(mesh, mesh->x[3 * (size_t)g],
                                                mesh->x[3 * (size_t)g + 1],
                                                mesh->x[3 * (size_t)g + 2], &ng);
                        if (!st) st = ensure_nodes(f, mesh->num_nodes);
                        if (st) break;
                        f->parent[ng] = g;
                        /* every positive element around g takes the copy */
                        for (int64_t r = inc.offset[g]; r < inc.offset[g + 1]; r++) {
                            const defo_index er = inc.elem[r];
                            if (positive_side(f, er, x + 3 * (size_t)v, n))
                                mesh->elems[10 * (size_t)er + (size_t)inc.local[r]] = ng;
                        }
                    }
                }
            if (st) break;
            for (int64_t q = inc.offset[v]; q < inc.offset[v + 1]; q++) {
                const defo_index el = inc.elem[q];
                if (positive_side(f, el, x + 3 * (size_t)v, n))
                    mesh->elems[(size_t)P * (size_t)el + (size_t)inc.local[q]] = nv;
                f->elem_skip[el] = 1;
            }
            s.splits++;
        }
        defo_node_elems_free(&inc);
        if (st) return defo_error_prefix("fracture");
    }
    s.nodes_added = mesh->num_nodes - old_n;
    if (s.splits > 0 || !f->components_valid) {
        st = defo_mesh_components(mesh, NULL, &f->components);
        if (st) return defo_error_prefix("fracture");
        f->components_valid = 1;
    }
    s.components = f->components;
    if (stats) *stats = s;
    return DEFO_OK;
}
