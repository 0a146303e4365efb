/*
 * fracture/vertex_split.c — MG04 §4 fracture: maximum principal stress per
 * element, vertex split by the plane normal to its direction, crack tips.
 * defo/fracture.h states the algorithm; this file keeps these invariants:
 *
 * - The stress pass is parallel over elements into per-element buffers; the
 *   splits are sequential in a fixed order (decreasing σ_max, then element
 *   index) with a splitmix64 generator seeded by def.seed, so a run is
 *   bitwise reproducible for any thread count.
 * - Node → element incidence is built once per call.  It stays valid for
 *   every node not split in this call, because a split only re-links the
 *   elements of the split node v to its new copy; elements touching a node
 *   split in this call are skipped, so v's copy never needs an incidence.
 * - New nodes are appended (defo_mesh_add_node, capacity-based growth) with
 *   the rest position of their parent; parents precede children, so copying
 *   state in creation order resolves chains.
 * - Element rest data (Dm⁻¹, Ke, Pe) never changes: a split only re-links
 *   nodes of identical rest position (MG04 §4: "the stiffness matrices Ke of
 *   the elements do not change").
 */
#include "defo/fracture.h"
#include "defo/corotated.h"

#include "defo/math.h"

#include "base/parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct defo_fracture {
    defo_mesh *mesh;
    defo_fracture_def def;
    double mu, lambda;
    defo_index num_elems;
    double *grad;     /* 9 per element: b_1..b_3 (rows of Dm⁻¹) */
    double *sigma;    /* per element σ_max of the last pass */
    double *dir;      /* 3 per element n_max */
    double *centroid; /* 3 per element at the positions of this call (splits move no node) */
    defo_index *order;
    unsigned char *elem_skip; /* per element, this call */
    unsigned char *tip;       /* per node (capacity tip_cap) */
    unsigned char *split;     /* per node: split in this call */
    defo_index *parent;       /* per node */
    defo_index node_cap;
    uint64_t rng;
    /* connected components of the mesh, recounted only when the topology
     * changed (counting allocates; a step without splits must not) */
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

/* splitmix64 (Steele, Lea, Flood 2014): small state, good enough to pick
 * one of four vertices, and fully specified so runs repeat everywhere. */
static uint64_t next_rand(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void defo_fracture_destroy(defo_fracture *f) {
    if (!f) return;
    defo_free(f->grad);
    defo_free(f->sigma);
    defo_free(f->dir);
    defo_free(f->centroid);
    defo_free(f->order);
    defo_free(f->elem_skip);
    defo_free(f->tip);
    defo_free(f->split);
    defo_free(f->parent);
    defo_free(f);
}

/* Per-node arrays sized for n nodes (new entries: no tip, own parent). */
static defo_status ensure_nodes(defo_fracture *f, defo_index n) {
    if (n <= f->node_cap) return DEFO_OK;
    defo_index cap = f->node_cap > 0 ? f->node_cap : 16;
    while (cap < n) cap = cap > DEFO_INDEX_MAX / 2 ? DEFO_INDEX_MAX : 2 * cap;
    unsigned char *t = defo_realloc(f->tip, (size_t)cap);
    if (t) f->tip = t;
    unsigned char *s = defo_realloc(f->split, (size_t)cap);
    if (s) f->split = s;
    defo_index *p = defo_realloc(f->parent, (size_t)cap * sizeof(defo_index));
    if (p) f->parent = p;
    if (!t || !s || !p) return defo_error_oom("fracture node data", (size_t)cap * 6);
    for (defo_index i = f->node_cap; i < cap; i++) {
        f->tip[i] = 0;
        f->split[i] = 0;
        f->parent[i] = i;
    }
    f->node_cap = cap;
    return DEFO_OK;
}

defo_status defo_fracture_create(defo_mesh *mesh, const defo_material_def *material,
                                 const defo_fracture_def *def, defo_fracture **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: out is NULL");
    *out = NULL;
    if (!mesh || !material)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: mesh or material is NULL");
    if (mesh->order != 1)
        return defo_error(DEFO_ERR_UNSUPPORTED, "fracture: only tet4 meshes are supported");
    defo_fracture_def d = def ? *def : defo_default_fracture_def();
    if (!(d.threshold > 0) || d.max_splits < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "fracture: threshold %g must be > 0 and max_splits %d >= 0", d.threshold,
                          d.max_splits);
    if (!(material->youngs_modulus > 0) || !(material->poisson >= 0 && material->poisson < 0.5))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "fracture: Young's modulus %g / Poisson ratio %g out of range",
                          material->youngs_modulus, material->poisson);
    defo_rest rest;
    if (defo_rest_compute(mesh, &rest)) return defo_error_prefix("fracture");
    defo_fracture *f = defo_calloc(1, sizeof *f);
    if (!f) {
        defo_rest_free(&rest);
        return defo_error_oom("fracture", sizeof *f);
    }
    f->mesh = mesh;
    f->def = d;
    f->rng = d.seed;
    defo_lame(material->youngs_modulus, material->poisson, &f->mu, &f->lambda);
    f->num_elems = mesh->num_elems;
    const size_t ne = (size_t)mesh->num_elems;
    f->grad = defo_malloc(9 * ne * sizeof(double) + 1);
    f->sigma = defo_malloc(ne * sizeof(double) + 1);
    f->dir = defo_malloc(3 * ne * sizeof(double) + 1);
    f->centroid = defo_malloc(3 * ne * sizeof(double) + 1);
    f->order = defo_malloc(ne * sizeof(defo_index) + 1);
    f->elem_skip = defo_malloc(ne + 1);
    defo_status st = DEFO_OK;
    if (!f->grad || !f->sigma || !f->dir || !f->centroid || !f->order || !f->elem_skip)
        st = defo_error_oom("fracture element data", 14 * ne * sizeof(double));
    if (!st) st = ensure_nodes(f, mesh->num_nodes);
    if (st) {
        defo_rest_free(&rest);
        defo_fracture_destroy(f);
        return st;
    }
    memcpy(f->grad, rest.Dm_inv, 9 * ne * sizeof(double));
    defo_rest_free(&rest);
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

defo_status defo_fracture_restore(defo_fracture *f, uint64_t rng, const unsigned char *tips,
                                  const defo_index *parents) {
    if (!f || !tips || !parents)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture restore: missing argument");
    const defo_index n = f->mesh->num_nodes;
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
        f->split[i] = 0;
    }
    f->rng = rng;
    f->components_valid = 0; /* the connectivity was restored too */
    return DEFO_OK;
}

/* σ = E ε of element e (ε as in plasticity: relative displacements in the
 * rotated frame, Voigt with engineering shear), its largest eigenvalue and
 * eigenvector in world coordinates (the tensor lives in the element's
 * unrotated frame, so n_max is rotated by Re). */
static void elem_stress(const defo_fracture *f, const double *R, const double *x, defo_index e,
                        double *smax, double n[3]) {
    double eps[6];
    defo_corotated_strain(f->mesh, f->grad + 9 * (size_t)e, R, x, e, eps);
    const double tr = f->lambda * (eps[0] + eps[1] + eps[2]), m2 = 2 * f->mu;
    defo_mat3 S;
    S.m[0][0] = tr + m2 * eps[0];
    S.m[1][1] = tr + m2 * eps[1];
    S.m[2][2] = tr + m2 * eps[2];
    S.m[0][1] = S.m[1][0] = f->mu * eps[3];
    S.m[1][2] = S.m[2][1] = f->mu * eps[4];
    S.m[0][2] = S.m[2][0] = f->mu * eps[5];
    defo_vec3 lam;
    defo_mat3 Q;
    defo_sym3_eigen(&S, &lam, &Q);
    *smax = lam.x;
    const double q[3] = {Q.m[0][0], Q.m[1][0], Q.m[2][0]};
    for (int r = 0; r < 3; r++) n[r] = R[3 * r] * q[0] + R[3 * r + 1] * q[1] + R[3 * r + 2] * q[2];
}

defo_status defo_fracture_stress(defo_fracture *f, const defo_corotated *model, const double *x,
                                 double *sigma_max, double *dir) {
    if (!f || !model || !x || !sigma_max)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: missing argument");
    if (f->mesh->num_elems != f->num_elems)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: element count changed");
    const double *Rall = defo_corotated_rotations(model);
    const defo_index ne = f->num_elems;
    DEFO_PARALLEL_FOR_IF(ne > DEFO_PARALLEL_MIN / 4)
    for (defo_index e = 0; e < ne; e++) {
        double n[3];
        elem_stress(f, Rall + 9 * (size_t)e, x, e, sigma_max + e, n);
        if (dir) memcpy(dir + 3 * (size_t)e, n, sizeof n);
    }
    return DEFO_OK;
}

/* Heap sort of element indices by decreasing σ, then increasing index (a
 * total order: the result does not depend on the algorithm). */
static void sort_candidates(defo_index *idx, defo_index count, const double *sigma) {
#define FR_LESS(a, b) (sigma[a] > sigma[b] || (sigma[a] == sigma[b] && (a) < (b)))
    for (defo_index start = count / 2 - 1; start >= 0; start--) {
        defo_index root = start;
        for (;;) {
            defo_index child = 2 * root + 1;
            if (child >= count) break;
            if (child + 1 < count && FR_LESS(idx[child], idx[child + 1])) child++;
            if (FR_LESS(idx[root], idx[child])) {
                defo_index t = idx[root];
                idx[root] = idx[child];
                idx[child] = t;
                root = child;
            } else
                break;
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
            if (FR_LESS(idx[root], idx[child])) {
                t = idx[root];
                idx[root] = idx[child];
                idx[child] = t;
                root = child;
            } else
                break;
        }
    }
#undef FR_LESS
}

/* Side of element e relative to the plane through p normal to n: 1 when
 * its centroid (this call's positions) is strictly on the positive side. */
static int positive_side(const defo_fracture *f, defo_index e, const double *p, const double *n) {
    const double *c = f->centroid + 3 * (size_t)e;
    return (c[0] - p[0]) * n[0] + (c[1] - p[1]) * n[1] + (c[2] - p[2]) * n[2] > 0;
}

/* Number of incident elements of v on the positive side (0 or all = no split). */
static defo_index count_positive(const defo_fracture *f, const defo_node_elems *ne, const double *x,
                                 defo_index v, const double *n) {
    defo_index c = 0;
    for (int64_t k = ne->offset[v]; k < ne->offset[v + 1]; k++)
        c += positive_side(f, ne->elem[k], x + 3 * (size_t)v, n);
    return c;
}

/* Mark v1, v2 of every face (v, v1, v2) shared by a positive and a negative
 * element around v (before the split: both still reference v). */
static void mark_tips(defo_fracture *f, const defo_node_elems *ne, const double *x, defo_index v,
                      const double *n) {
    const defo_mesh *mesh = f->mesh;
    for (int64_t a = ne->offset[v]; a < ne->offset[v + 1]; a++) {
        defo_index ea = ne->elem[a];
        if (!positive_side(f, ea, x + 3 * (size_t)v, n)) continue;
        const defo_index *na = mesh->elems + 4 * (size_t)ea;
        for (int64_t b = ne->offset[v]; b < ne->offset[v + 1]; b++) {
            defo_index eb = ne->elem[b];
            if (positive_side(f, eb, x + 3 * (size_t)v, n)) continue;
            const defo_index *nb = mesh->elems + 4 * (size_t)eb;
            defo_index common[4];
            int c = 0;
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    if (na[i] == nb[j] && na[i] != v) common[c++] = na[i];
            if (c == 2) {
                f->tip[common[0]] = 1;
                f->tip[common[1]] = 1;
            }
        }
    }
}

defo_status defo_fracture_step(defo_fracture *f, defo_backward_euler *be,
                               defo_fracture_stats *stats) {
    defo_fracture_stats s;
    memset(&s, 0, sizeof s);
    s.max_stress_elem = -1;
    if (stats) *stats = s;
    if (!f || !be) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fracture: missing argument");
    defo_mesh *mesh = f->mesh;
    defo_status st = defo_backward_euler_update_rotations(be);
    if (st) return defo_error_prefix("fracture step");
    const double *x = defo_backward_euler_positions(be);
    st = defo_fracture_stress(f, defo_backward_euler_force_model(be), x, f->sigma, f->dir);
    if (st) return st;
    const defo_index ne = f->num_elems;
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
            const defo_index *en = mesh->elems + 4 * (size_t)e;
            for (int r = 0; r < 3; r++)
                f->centroid[3 * (size_t)e + (size_t)r] =
                    0.25 * (x[3 * (size_t)en[0] + r] + x[3 * (size_t)en[1] + r] +
                            x[3 * (size_t)en[2] + r] + x[3 * (size_t)en[3] + r]);
        }
        defo_node_elems inc;
        st = defo_mesh_node_elems(mesh, &inc);
        if (st) return defo_error_prefix("fracture step");
        memset(f->elem_skip, 0, (size_t)ne);
        memset(f->split, 0, (size_t)old_n);
        for (defo_index k = 0; k < count; k++) {
            if (f->def.max_splits > 0 && s.splits >= f->def.max_splits) break;
            const defo_index e = f->order[k];
            if (f->elem_skip[e]) continue;
            const defo_index *en = mesh->elems + 4 * (size_t)e;
            const double *n = f->dir + 3 * (size_t)e;
            /* candidates: crack tips first, then the other vertices, each
             * group in a seeded random order */
            defo_index cand[4];
            int nc = 0, ntip = 0;
            for (int i = 0; i < 4; i++)
                if (f->tip[en[i]]) cand[nc++] = en[i];
            ntip = nc;
            for (int i = 0; i < 4; i++)
                if (!f->tip[en[i]]) cand[nc++] = en[i];
            for (int lo = 0, hi = ntip; lo < 4; lo = hi, hi = 4) { /* shuffle each group */
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
                defo_index c = cand[i];
                defo_index pos = count_positive(f, &inc, x, c, n);
                defo_index all = (defo_index)(inc.offset[c + 1] - inc.offset[c]);
                if (pos > 0 && pos < all) v = c;
            }
            if (v < 0) continue;
            mark_tips(f, &inc, x, v, n);
            defo_index nv = -1;
            st = defo_mesh_add_node(mesh, mesh->x[3 * (size_t)v], mesh->x[3 * (size_t)v + 1],
                                    mesh->x[3 * (size_t)v + 2], &nv);
            if (!st) st = ensure_nodes(f, mesh->num_nodes);
            if (st) {
                defo_node_elems_free(&inc);
                return defo_error_prefix("fracture step");
            }
            f->parent[nv] = v;
            for (int64_t q = inc.offset[v]; q < inc.offset[v + 1]; q++) {
                const defo_index el = inc.elem[q];
                if (positive_side(f, el, x + 3 * (size_t)v, n))
                    mesh->elems[4 * (size_t)el + (size_t)inc.local[q]] = nv;
                f->elem_skip[el] = 1;
            }
            f->split[v] = 1;
            s.splits++;
        }
        defo_node_elems_free(&inc);
    }
    if (s.splits > 0) {
        st = defo_backward_euler_topology_changed(be);
        if (st) return defo_error_prefix("fracture step");
        double *xs = defo_backward_euler_positions(be);
        double *vs = defo_backward_euler_velocities(be);
        unsigned char *con = defo_backward_euler_constraints(be);
        for (defo_index i = old_n; i < mesh->num_nodes; i++) {
            const defo_index p = f->parent[i];
            memcpy(xs + 3 * (size_t)i, xs + 3 * (size_t)p, 3 * sizeof(double));
            memcpy(vs + 3 * (size_t)i, vs + 3 * (size_t)p, 3 * sizeof(double));
            con[i] = con[p];
        }
    }
    if (s.splits > 0 || !f->components_valid) {
        st = defo_mesh_components(mesh, NULL, &f->components);
        if (st) return defo_error_prefix("fracture step");
        f->components_valid = 1;
    }
    s.components = f->components;
    if (stats) *stats = s;
    return DEFO_OK;
}
