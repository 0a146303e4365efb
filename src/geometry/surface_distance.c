/*
 * geometry/surface_distance.c — signed distance to a triangle surface
 * (defo/geometry.h), queried by the mesher and by signed-distance grids.
 *
 * Distance: the exact closest point on the triangles (Ericson, Real-Time
 * Collision Detection §5.1.5), found through a bounding volume hierarchy of
 * axis-aligned boxes built by median splits of the triangle centroids along
 * the longest axis (depth <= log2(n) + 1, so a fixed 64-entry traversal
 * stack on the caller's stack is enough).  Queries visit the nearer child
 * first and prune boxes farther than the best distance so far.
 *
 * Sign: the generalised winding number w(p) = sum of the triangles' signed
 * solid angles / 4π (Jacobson, Kavan, Sorkine-Hornung 2013), 1 inside a
 * closed outward surface and 0 outside; with a small hole it degrades
 * gracefully (the hole's solid angle is missing), which is why ITF04 §10's
 * lattice is cut by w > 1/2 rather than by ray parity.  The hierarchical
 * evaluation (Barill et al. 2018, "Fast winding numbers for soups and
 * clouds") replaces a BVH node by its dipole — the area-weighted normal sum N
 * at the area-weighted centre c — when |p - c| > beta * r (r the node's
 * radius around c), the first-order term of the far-field expansion; near
 * nodes recurse down to exact solid angles (Van Oosterom & Strackee 1983).
 *
 * Orientation repair: across every manifold edge two neighbours must use the
 * edge in opposite directions.  A breadth-first walk over each edge-connected
 * component fixes the relative orientation; the component then keeps the
 * orientation of the majority of its triangles, so a few flipped triangles
 * are turned back while nested shells (a hollow body) keep their own sense.
 *
 * Invariants: the object is immutable after creation (queries are const and
 * thread-safe); triangles are stored in BVH leaf order with their input
 * index; nothing here allocates per query.
 */
#include "defo/geometry.h"
#include "defo/math.h"
#include "base/base.h"
#include "geometry/geometry_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LEAF_SIZE   4
#define STACK_DEPTH 64
#define DEFO_PI     3.14159265358979323846

typedef struct bvh_node {
    double lo[3], hi[3];
    double n[3];   /* area vector sum: sum of (b-a)x(c-a)/2 */
    double c[3];   /* area-weighted centre */
    double r;      /* radius of the node's box around c */
    int32_t right; /* inner: index of the right child (left is this + 1) */
    int32_t start; /* leaf: first triangle; inner: -1 */
    int32_t count; /* leaf: triangle count; inner: 0 */
} bvh_node;

struct defo_surface_sdf {
    defo_index num_tris;
    double *tv;         /* 9 per triangle (corners), in BVH order */
    defo_index *tri_id; /* input triangle index per stored triangle */
    int32_t num_nodes;
    bvh_node *nodes;
    double beta;
    defo_surface_info info;
};

/* ---------------------------------------------------------------- helpers */
static double box_dist2(const bvh_node *nd, const double p[3]) {
    double d2 = 0;
    for (int k = 0; k < 3; k++) {
        double d = 0;
        if (p[k] < nd->lo[k])
            d = nd->lo[k] - p[k];
        else if (p[k] > nd->hi[k])
            d = p[k] - nd->hi[k];
        d2 += d * d;
    }
    return d2;
}

/* Closest point to p on the segment [a, b]. */
static defo_vec3 closest_on_segment(defo_vec3 p, defo_vec3 a, defo_vec3 b) {
    defo_vec3 ab = defo_v3_sub(b, a);
    double l2 = defo_v3_dot(ab, ab);
    double t = l2 > 0 ? defo_v3_dot(defo_v3_sub(p, a), ab) / l2 : 0;
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    return defo_v3_axpy(a, t, ab);
}

/* Closest point to p on triangle (a, b, c): Ericson §5.1.5, by Voronoi regions. */
defo_vec3 defo_closest_on_triangle(defo_vec3 p, defo_vec3 a, defo_vec3 b, defo_vec3 c) {
    defo_vec3 ab = defo_v3_sub(b, a), ac = defo_v3_sub(c, a), ap = defo_v3_sub(p, a);
    double d1 = defo_v3_dot(ab, ap), d2 = defo_v3_dot(ac, ap);
    if (d1 <= 0 && d2 <= 0) return a;
    defo_vec3 bp = defo_v3_sub(p, b);
    double d3 = defo_v3_dot(ab, bp), d4 = defo_v3_dot(ac, bp);
    if (d3 >= 0 && d4 <= d3) return b;
    double vc = d1 * d4 - d3 * d2;
    if (vc <= 0 && d1 >= 0 && d3 <= 0) {
        double den = d1 - d3;
        return den > 0 ? defo_v3_axpy(a, d1 / den, ab) : a;
    }
    defo_vec3 cp = defo_v3_sub(p, c);
    double d5 = defo_v3_dot(ab, cp), d6 = defo_v3_dot(ac, cp);
    if (d6 >= 0 && d5 <= d6) return c;
    double vb = d5 * d2 - d1 * d6;
    if (vb <= 0 && d2 >= 0 && d6 <= 0) {
        double den = d2 - d6;
        return den > 0 ? defo_v3_axpy(a, d2 / den, ac) : a;
    }
    double va = d3 * d6 - d5 * d4;
    if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
        double den = (d4 - d3) + (d5 - d6);
        return den > 0 ? defo_v3_axpy(b, (d4 - d3) / den, defo_v3_sub(c, b)) : b;
    }
    double sum = va + vb + vc;
    if (!(sum > 0)) { /* degenerate (zero-area) triangle: nearest of its edges */
        defo_vec3 q[3] = {closest_on_segment(p, a, b), closest_on_segment(p, b, c),
                          closest_on_segment(p, c, a)};
        int best = 0;
        double bd = defo_v3_norm2(defo_v3_sub(q[0], p));
        for (int i = 1; i < 3; i++) {
            double d = defo_v3_norm2(defo_v3_sub(q[i], p));
            if (d < bd) {
                bd = d;
                best = i;
            }
        }
        return q[best];
    }
    double v = vb / sum, w = vc / sum;
    return defo_v3_add(a, defo_v3_add(defo_v3_scale(ab, v), defo_v3_scale(ac, w)));
}

/* Signed solid angle of triangle (a, b, c) seen from p (Van Oosterom &
 * Strackee 1983); positive when p sees the triangle's back (inside). */
static double solid_angle(const double *t, const double p[3]) {
    defo_vec3 a = defo_v3(t[0] - p[0], t[1] - p[1], t[2] - p[2]);
    defo_vec3 b = defo_v3(t[3] - p[0], t[4] - p[1], t[5] - p[2]);
    defo_vec3 c = defo_v3(t[6] - p[0], t[7] - p[1], t[8] - p[2]);
    double la = defo_v3_norm(a), lb = defo_v3_norm(b), lc = defo_v3_norm(c);
    double num = defo_v3_dot(a, defo_v3_cross(b, c));
    double den =
        la * lb * lc + defo_v3_dot(a, b) * lc + defo_v3_dot(a, c) * lb + defo_v3_dot(b, c) * la;
    if (num == 0 && den <= 0) return 0; /* p on the triangle's plane, outside or on it */
    return 2 * atan2(num, den);
}

/* ------------------------------------------------------------------ build */
typedef struct sort_key {
    double key;
    defo_index idx;
} sort_key;

static int key_cmp(const void *pa, const void *pb) {
    const sort_key *x = pa, *y = pb;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

typedef struct builder {
    const double *tv_in; /* 9 per input triangle */
    double *cen;         /* 3 per input triangle */
    defo_index *order;   /* permutation being built */
    sort_key *keys;
    bvh_node *nodes;
    int32_t num_nodes;
} builder;

static int32_t build_node(builder *b, defo_index begin, defo_index end) {
    int32_t id = b->num_nodes++;
    bvh_node *nd = &b->nodes[id];
    double clo[3] = {INFINITY, INFINITY, INFINITY}, chi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int k = 0; k < 3; k++) {
        nd->lo[k] = INFINITY;
        nd->hi[k] = -INFINITY;
    }
    for (defo_index i = begin; i < end; i++) {
        const double *t = b->tv_in + 9 * (size_t)b->order[i];
        const double *c = b->cen + 3 * (size_t)b->order[i];
        for (int v = 0; v < 3; v++)
            for (int k = 0; k < 3; k++) {
                nd->lo[k] = fmin(nd->lo[k], t[3 * v + k]);
                nd->hi[k] = fmax(nd->hi[k], t[3 * v + k]);
            }
        for (int k = 0; k < 3; k++) {
            clo[k] = fmin(clo[k], c[k]);
            chi[k] = fmax(chi[k], c[k]);
        }
    }
    if (end - begin <= LEAF_SIZE) {
        nd->start = begin;
        nd->count = end - begin;
        nd->right = -1;
        return id;
    }
    int axis = 0;
    for (int k = 1; k < 3; k++)
        if (chi[k] - clo[k] > chi[axis] - clo[axis]) axis = k;
    for (defo_index i = begin; i < end; i++) {
        b->keys[i].key = b->cen[3 * (size_t)b->order[i] + (size_t)axis];
        b->keys[i].idx = b->order[i];
    }
    qsort(b->keys + begin, (size_t)(end - begin), sizeof *b->keys, key_cmp);
    for (defo_index i = begin; i < end; i++) b->order[i] = b->keys[i].idx;
    defo_index mid = begin + (end - begin) / 2;
    nd->start = -1;
    nd->count = 0;
    build_node(b, begin, mid);
    int32_t r = build_node(b, mid, end);
    b->nodes[id].right = r;
    return id;
}

/* Dipole data bottom-up (children have larger indices than their parent).
 * area is scratch, one per node. */
static void node_moments(defo_surface_sdf *s, double *area) {
    for (int32_t id = s->num_nodes - 1; id >= 0; id--) {
        bvh_node *nd = &s->nodes[id];
        double n[3] = {0, 0, 0}, c[3] = {0, 0, 0}, ar = 0;
        if (nd->count > 0) {
            for (int32_t i = nd->start; i < nd->start + nd->count; i++) {
                const double *t = s->tv + 9 * (size_t)i;
                defo_vec3 a = defo_v3_load(t), b = defo_v3_load(t + 3), cc = defo_v3_load(t + 6);
                defo_vec3 an =
                    defo_v3_scale(defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(cc, a)), 0.5);
                double at = defo_v3_norm(an);
                for (int k = 0; k < 3; k++) {
                    n[k] += defo_v3_get(an, k);
                    c[k] += at * (t[k] + t[3 + k] + t[6 + k]) / 3.0;
                }
                ar += at;
            }
        } else {
            const bvh_node *l = &s->nodes[id + 1], *r = &s->nodes[nd->right];
            double al = area[id + 1], arr = area[nd->right];
            for (int k = 0; k < 3; k++) {
                n[k] = l->n[k] + r->n[k];
                c[k] = al * l->c[k] + arr * r->c[k];
            }
            ar = al + arr;
        }
        area[id] = ar;
        double r2 = 0;
        for (int k = 0; k < 3; k++) {
            nd->n[k] = n[k];
            nd->c[k] = ar > 0 ? c[k] / ar : 0.5 * (nd->lo[k] + nd->hi[k]);
            /* the centre must lie in the box for the radius bound below */
            nd->c[k] = fmin(fmax(nd->c[k], nd->lo[k]), nd->hi[k]);
            double e = fmax(nd->c[k] - nd->lo[k], nd->hi[k] - nd->c[k]);
            r2 += e * e;
        }
        nd->r = sqrt(r2);
    }
}

/* ------------------------------------------------------- surface checks */
typedef struct half_edge {
    defo_index a, b; /* a < b */
    defo_index tri;
    int8_t forward; /* 1 when the triangle runs a -> b */
} half_edge;

static int half_edge_cmp(const void *pa, const void *pb) {
    const half_edge *x = pa, *y = pb;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    return (x->tri > y->tri) - (x->tri < y->tri);
}

static double edge_length(const defo_index *tri, const double *tv, const half_edge *h) {
    const defo_index *tr = tri + 3 * (size_t)h->tri;
    const double *t = tv + 9 * (size_t)h->tri;
    int ia = 0, ib = 0;
    for (int k = 0; k < 3; k++) {
        if (tr[k] == h->a) ia = k;
        if (tr[k] == h->b) ib = k;
    }
    return defo_v3_norm(defo_v3_sub(defo_v3_load(t + 3 * ia), defo_v3_load(t + 3 * ib)));
}

/* Edge statistics and orientation repair on input triangles tri (3 vertex
 * ids each) and corner copies tv (9 each, flipped in place when repair). */
static defo_status edge_pass(defo_index nt, defo_index *tri, double *tv, int repair,
                             defo_surface_info *info) {
    size_t ne = 3 * (size_t)nt;
    half_edge *he = defo_malloc(ne * sizeof *he);
    /* adjacency: for each half-edge, the other half-edge of a manifold edge or -1 */
    int64_t *mate = defo_malloc(ne * sizeof *mate);
    int8_t *flip = defo_malloc((size_t)nt + 1);
    defo_index *queue = defo_malloc(((size_t)nt + 1) * sizeof *queue);
    if (!he || !mate || !flip || !queue) {
        defo_free(he);
        defo_free(mate);
        defo_free(flip);
        defo_free(queue);
        return defo_error_oom("surface edges", ne * (sizeof *he + sizeof *mate));
    }
    for (defo_index t = 0; t < nt; t++)
        for (int e = 0; e < 3; e++) {
            defo_index u = tri[3 * (size_t)t + (size_t)e],
                       v = tri[3 * (size_t)t + (size_t)(e + 1) % 3];
            half_edge *h = &he[3 * (size_t)t + (size_t)e];
            h->a = u < v ? u : v;
            h->b = u < v ? v : u;
            h->tri = t;
            h->forward = (int8_t)(u < v);
        }
    qsort(he, ne, sizeof *he, half_edge_cmp);
    /* mate is indexed by sorted position; he[].tri maps back to triangles */
    for (size_t i = 0; i < ne;) {
        size_t j = i;
        while (j < ne && he[j].a == he[i].a && he[j].b == he[i].b) j++;
        for (size_t k = i; k < j; k++) mate[k] = -1;
        if (j - i == 1) {
            info->open_edges++;
            info->hole_length += edge_length(tri, tv, &he[i]);
        } else if (j - i == 2) {
            mate[i] = (int64_t)i + 1;
            mate[i + 1] = (int64_t)i;
        } else {
            info->nonmanifold_edges++;
        }
        i = j;
    }
    /* the three sorted positions of each triangle's half-edges */
    int64_t *pos = defo_malloc(ne * sizeof *pos);
    if (!pos) {
        defo_free(he);
        defo_free(mate);
        defo_free(flip);
        defo_free(queue);
        return defo_error_oom("surface edges", ne * sizeof *pos);
    }
    memset(flip, 0, (size_t)nt + 1); /* used as a 0..3 fill counter here */
    for (size_t i = 0; i < ne; i++) {
        defo_index t = he[i].tri;
        pos[3 * (size_t)t + (size_t)flip[t]++] = (int64_t)i;
    }
    if (repair) {
        /* flip[t]: -1 unvisited, else 0/1 relative to the component's seed */
        memset(flip, 0xff, (size_t)nt + 1);
        for (defo_index seed = 0; seed < nt; seed++) {
            if (flip[seed] >= 0) continue;
            size_t head = 0, tail = 0, n_flip = 0;
            flip[seed] = 0;
            queue[tail++] = seed;
            while (head < tail) {
                defo_index t = queue[head++];
                for (int k = 0; k < 3; k++) {
                    int64_t p = pos[3 * (size_t)t + (size_t)k], q = mate[p];
                    if (q < 0) continue;
                    defo_index u = he[q].tri;
                    if (flip[u] >= 0) continue;
                    /* consistent neighbours run the shared edge in opposite directions */
                    int same_dir = he[p].forward == he[q].forward;
                    flip[u] = (int8_t)(flip[t] ^ same_dir);
                    queue[tail++] = u;
                }
            }
            for (size_t k = 0; k < tail; k++) n_flip += (size_t)flip[queue[k]];
            int invert = 2 * n_flip > tail; /* the majority keeps its orientation */
            for (size_t k = 0; k < tail; k++) {
                defo_index t = queue[k];
                if ((flip[t] ^ invert) == 0) continue;
                info->flipped++;
                double *c = tv + 9 * (size_t)t;
                for (int d = 0; d < 3; d++) {
                    double tmp = c[3 + d];
                    c[3 + d] = c[6 + d];
                    c[6 + d] = tmp;
                }
                defo_index tmp = tri[3 * (size_t)t + 1];
                tri[3 * (size_t)t + 1] = tri[3 * (size_t)t + 2];
                tri[3 * (size_t)t + 2] = tmp;
            }
        }
    }
    defo_free(pos);
    defo_free(he);
    defo_free(mate);
    defo_free(flip);
    defo_free(queue);
    return DEFO_OK;
}

static double orient3(defo_vec3 a, defo_vec3 b, defo_vec3 c, defo_vec3 d) {
    return defo_v3_dot(defo_v3_sub(b, a), defo_v3_cross(defo_v3_sub(c, a), defo_v3_sub(d, a)));
}

/* Does the open segment (p, q) cross the open triangle t?  Strict tests:
 * touching does not count. */
static int segment_crosses(defo_vec3 p, defo_vec3 q, const double *t) {
    defo_vec3 a = defo_v3_load(t), b = defo_v3_load(t + 3), c = defo_v3_load(t + 6);
    double d0 = orient3(a, b, c, p), d1 = orient3(a, b, c, q);
    if (!((d0 > 0 && d1 < 0) || (d0 < 0 && d1 > 0))) return 0;
    double s1 = orient3(p, q, a, b), s2 = orient3(p, q, b, c), s3 = orient3(p, q, c, a);
    return (s1 > 0 && s2 > 0 && s3 > 0) || (s1 < 0 && s2 < 0 && s3 < 0);
}

/* Count (edge, triangle) crossings between triangles sharing no vertex. */
static int64_t count_self_intersections(const defo_surface_sdf *s, const defo_index *vid) {
    int64_t count = 0;
    for (defo_index i = 0; i < s->num_tris; i++) {
        const double *t = s->tv + 9 * (size_t)i;
        const defo_index *vi = vid + 3 * (size_t)i;
        for (int e = 0; e < 3; e++) {
            defo_vec3 p = defo_v3_load(t + 3 * e), q = defo_v3_load(t + 3 * ((e + 1) % 3));
            double lo[3], hi[3];
            for (int k = 0; k < 3; k++) {
                lo[k] = fmin(defo_v3_get(p, k), defo_v3_get(q, k));
                hi[k] = fmax(defo_v3_get(p, k), defo_v3_get(q, k));
            }
            int32_t stack[STACK_DEPTH];
            int sp = 0;
            stack[sp++] = 0;
            while (sp > 0) {
                const bvh_node *nd = &s->nodes[stack[--sp]];
                if (nd->lo[0] > hi[0] || nd->hi[0] < lo[0] || nd->lo[1] > hi[1] ||
                    nd->hi[1] < lo[1] || nd->lo[2] > hi[2] || nd->hi[2] < lo[2])
                    continue;
                if (nd->count > 0) {
                    for (int32_t j = nd->start; j < nd->start + nd->count; j++) {
                        const defo_index *vj = vid + 3 * (size_t)j;
                        int shared = 0;
                        for (int x = 0; x < 3; x++)
                            for (int y = 0; y < 3; y++) shared |= vi[x] == vj[y];
                        if (!shared && segment_crosses(p, q, s->tv + 9 * (size_t)j)) count++;
                    }
                } else if (sp + 2 <= STACK_DEPTH) {
                    stack[sp++] = nd->right;
                    stack[sp++] = (int32_t)(nd - s->nodes) + 1;
                }
            }
        }
    }
    return count;
}

/* ------------------------------------------------------------- lifecycle */
defo_sdf_def defo_default_sdf_def(void) {
    defo_sdf_def d;
    memset(&d, 0, sizeof d);
    d.repair_orientation = 1;
    d.check_self_intersections = 1;
    d.winding_beta = 2.0;
    return d;
}

void defo_surface_sdf_destroy(defo_surface_sdf *sdf) {
    if (!sdf) return;
    defo_free(sdf->tv);
    defo_free(sdf->tri_id);
    defo_free(sdf->nodes);
    defo_free(sdf);
}

const defo_surface_info *defo_surface_sdf_info(const defo_surface_sdf *sdf) {
    return sdf ? &sdf->info : NULL;
}

defo_status defo_surface_sdf_create(const defo_mesh *surface, const defo_sdf_def *def,
                                    defo_surface_sdf **out) {
    static const char fn[] = "defo_surface_sdf_create";
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: out is NULL", fn);
    *out = NULL;
    if (!surface) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: surface is NULL", fn);
    defo_sdf_def d = def ? *def : defo_default_sdf_def();
    if (!(d.winding_beta > 1) || !isfinite(d.winding_beta))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: winding_beta %g (must be > 1)", fn,
                          d.winding_beta);
    const defo_index nt = surface->num_tris;
    const int npt = surface->nodes_per_tri;
    if (nt <= 0 || !surface->tris || (npt != 3 && npt != 6))
        return defo_error(DEFO_ERR_INVALID_MESH, "surface is empty: it has no triangles");
    if (nt > DEFO_INDEX_MAX / 2)
        return defo_error(DEFO_ERR_UNSUPPORTED, "%s: %d triangles is too many", fn, (int)nt);
    for (defo_index t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++) {
            defo_index v = surface->tris[(size_t)npt * (size_t)t + (size_t)k];
            if (v < 0 || v >= surface->num_nodes)
                return defo_error(DEFO_ERR_INVALID_MESH,
                                  "surface triangle %d: node %d out of range", (int)t, (int)v);
            const double *x = surface->x + 3 * (size_t)v;
            if (!isfinite(x[0]) || !isfinite(x[1]) || !isfinite(x[2]))
                return defo_error(DEFO_ERR_INVALID_MESH,
                                  "surface node %d has a non-finite coordinate (triangle %d)",
                                  (int)v, (int)t);
        }

    defo_surface_sdf *s = defo_calloc(1, sizeof *s);
    double *tv_in = defo_malloc(9 * (size_t)nt * sizeof *tv_in);
    double *cen = defo_malloc(3 * (size_t)nt * sizeof *cen);
    defo_index *vid_in = defo_malloc(3 * (size_t)nt * sizeof *vid_in);
    defo_index *vid = defo_malloc(3 * (size_t)nt * sizeof *vid);
    defo_index *order = defo_malloc((size_t)nt * sizeof *order);
    sort_key *keys = defo_malloc((size_t)nt * sizeof *keys);
    double *area = NULL;
    defo_status st = DEFO_OK;
    if (s) {
        s->tv = defo_malloc(9 * (size_t)nt * sizeof *s->tv);
        s->tri_id = defo_malloc((size_t)nt * sizeof *s->tri_id);
        s->nodes = defo_malloc(2 * (size_t)nt * sizeof *s->nodes);
        area = defo_malloc(2 * (size_t)nt * sizeof *area);
    }
    if (!s || !tv_in || !cen || !vid_in || !vid || !order || !keys || !s->tv || !s->tri_id ||
        !s->nodes || !area) {
        st = defo_error_oom("surface distance", 9 * (size_t)nt * sizeof(double) * 4);
        goto done;
    }
    s->num_tris = nt;
    s->beta = d.winding_beta;
    defo_surface_info *info = &s->info;
    info->num_triangles = nt;
    for (int k = 0; k < 3; k++) {
        info->bbox_lo[k] = INFINITY;
        info->bbox_hi[k] = -INFINITY;
    }
    for (defo_index t = 0; t < nt; t++) {
        for (int k = 0; k < 3; k++) {
            defo_index v = surface->tris[(size_t)npt * (size_t)t + (size_t)k];
            vid_in[3 * (size_t)t + (size_t)k] = v;
            for (int c = 0; c < 3; c++) {
                double xc = surface->x[3 * (size_t)v + (size_t)c];
                tv_in[9 * (size_t)t + 3 * (size_t)k + (size_t)c] = xc;
                info->bbox_lo[c] = fmin(info->bbox_lo[c], xc);
                info->bbox_hi[c] = fmax(info->bbox_hi[c], xc);
            }
        }
    }
    st = edge_pass(nt, vid_in, tv_in, d.repair_orientation, info);
    if (st) goto done;
    /* area, volume (about the box centre, for accuracy), degenerate triangles */
    defo_vec3 mid = defo_v3(0.5 * (info->bbox_lo[0] + info->bbox_hi[0]),
                            0.5 * (info->bbox_lo[1] + info->bbox_hi[1]),
                            0.5 * (info->bbox_lo[2] + info->bbox_hi[2]));
    for (defo_index t = 0; t < nt; t++) {
        const double *c = tv_in + 9 * (size_t)t;
        defo_vec3 a = defo_v3_sub(defo_v3_load(c), mid), b = defo_v3_sub(defo_v3_load(c + 3), mid),
                  e = defo_v3_sub(defo_v3_load(c + 6), mid);
        defo_vec3 cr = defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(e, a));
        double ar2 = defo_v3_norm(cr);
        double l2 = fmax(defo_v3_norm2(defo_v3_sub(b, a)),
                         fmax(defo_v3_norm2(defo_v3_sub(e, b)), defo_v3_norm2(defo_v3_sub(a, e))));
        if (!(ar2 > 1e-12 * l2)) info->degenerate++;
        info->area += 0.5 * ar2;
        info->volume += defo_v3_dot(a, defo_v3_cross(b, e)) / 6.0;
        for (int k = 0; k < 3; k++)
            cen[3 * (size_t)t + (size_t)k] = (c[k] + c[3 + k] + c[6 + k]) / 3;
        order[t] = t;
    }
    builder b = {tv_in, cen, order, keys, s->nodes, 0};
    build_node(&b, 0, nt);
    s->num_nodes = b.num_nodes;
    for (defo_index i = 0; i < nt; i++) {
        memcpy(s->tv + 9 * (size_t)i, tv_in + 9 * (size_t)order[i], 9 * sizeof(double));
        memcpy(vid + 3 * (size_t)i, vid_in + 3 * (size_t)order[i], 3 * sizeof(defo_index));
        s->tri_id[i] = order[i];
    }
    node_moments(s, area);
    if (d.check_self_intersections) info->self_intersections = count_self_intersections(s, vid);
done:
    defo_free(tv_in);
    defo_free(cen);
    defo_free(vid_in);
    defo_free(vid);
    defo_free(order);
    defo_free(keys);
    defo_free(area);
    if (st) {
        defo_surface_sdf_destroy(s);
        return st;
    }
    *out = s;
    return DEFO_OK;
}

/* ---------------------------------------------------------------- queries */
/* Closest triangle to p with squared distance below *best2 (updated);
 * stop_early: return as soon as one is found.  Returns the stored index or -1. */
static int32_t closest_search(const defo_surface_sdf *s, const double p[3], double *best2,
                              defo_vec3 *best_point, int stop_early) {
    int32_t best = -1;
    int32_t stack[STACK_DEPTH];
    int sp = 0;
    defo_vec3 pv = defo_v3_load(p);
    if (box_dist2(&s->nodes[0], p) >= *best2) return -1;
    stack[sp++] = 0;
    while (sp > 0) {
        int32_t id = stack[--sp];
        const bvh_node *nd = &s->nodes[id];
        if (box_dist2(nd, p) >= *best2) continue;
        if (nd->count > 0) {
            for (int32_t i = nd->start; i < nd->start + nd->count; i++) {
                const double *t = s->tv + 9 * (size_t)i;
                defo_vec3 q = defo_closest_on_triangle(pv, defo_v3_load(t), defo_v3_load(t + 3),
                                                       defo_v3_load(t + 6));
                double d2 = defo_v3_norm2(defo_v3_sub(q, pv));
                if (d2 < *best2) {
                    *best2 = d2;
                    *best_point = q;
                    best = i;
                    if (stop_early) return best;
                }
            }
            continue;
        }
        int32_t l = id + 1, r = nd->right;
        double dl = box_dist2(&s->nodes[l], p), dr = box_dist2(&s->nodes[r], p);
        if (sp + 2 > STACK_DEPTH) continue; /* cannot happen: depth <= log2(n) + 1 */
        /* push the farther first so the nearer is searched first */
        if (dl <= dr) {
            if (dr < *best2) stack[sp++] = r;
            if (dl < *best2) stack[sp++] = l;
        } else {
            if (dl < *best2) stack[sp++] = l;
            if (dr < *best2) stack[sp++] = r;
        }
    }
    return best;
}

double defo_surface_sdf_distance(const defo_surface_sdf *sdf, const double p[3], double closest[3],
                                 defo_index *triangle) {
    double best2 = INFINITY;
    defo_vec3 q = defo_v3(NAN, NAN, NAN);
    int32_t i = closest_search(sdf, p, &best2, &q, 0);
    if (closest) defo_v3_store(closest, q);
    if (triangle) *triangle = i >= 0 ? sdf->tri_id[i] : -1;
    return sqrt(best2);
}

int defo_surface_sdf_within(const defo_surface_sdf *sdf, const double p[3], double r) {
    double best2 = r * r;
    defo_vec3 q;
    return closest_search(sdf, p, &best2, &q, 1) >= 0;
}

double defo_surface_sdf_winding(const defo_surface_sdf *sdf, const double p[3]) {
    const double beta2 = sdf->beta * sdf->beta;
    double sum = 0;
    int32_t stack[STACK_DEPTH];
    int sp = 0;
    stack[sp++] = 0;
    while (sp > 0) {
        int32_t id = stack[--sp];
        const bvh_node *nd = &sdf->nodes[id];
        double dx = nd->c[0] - p[0], dy = nd->c[1] - p[1], dz = nd->c[2] - p[2];
        double d2 = dx * dx + dy * dy + dz * dz;
        if (d2 > beta2 * nd->r * nd->r) { /* far field: the node's dipole */
            sum += (nd->n[0] * dx + nd->n[1] * dy + nd->n[2] * dz) / (d2 * sqrt(d2));
            continue;
        }
        if (nd->count > 0) {
            for (int32_t i = nd->start; i < nd->start + nd->count; i++)
                sum += solid_angle(sdf->tv + 9 * (size_t)i, p);
            continue;
        }
        if (sp + 2 > STACK_DEPTH) continue;
        stack[sp++] = nd->right;
        stack[sp++] = id + 1;
    }
    return sum / (4 * DEFO_PI);
}

double defo_surface_sdf_winding_exact(const defo_surface_sdf *sdf, const double p[3]) {
    double sum = 0;
    for (defo_index i = 0; i < sdf->num_tris; i++) sum += solid_angle(sdf->tv + 9 * (size_t)i, p);
    return sum / (4 * DEFO_PI);
}

void defo_surface_sdf_query(const defo_surface_sdf *sdf, const double p[3], defo_sdf_sample *out) {
    double best2 = INFINITY;
    defo_vec3 q = defo_v3(NAN, NAN, NAN);
    const int32_t i = closest_search(sdf, p, &best2, &q, 0);
    defo_v3_store(out->closest, q);
    out->triangle = i >= 0 ? sdf->tri_id[i] : -1;
    out->normal[0] = out->normal[1] = out->normal[2] = 0;
    if (i >= 0) {
        const double *t = sdf->tv + 9 * (size_t)i;
        const defo_vec3 a = defo_v3_load(t), b = defo_v3_load(t + 3), c = defo_v3_load(t + 6);
        const defo_vec3 n = defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a));
        const double l = defo_v3_norm(n);
        if (l > 0) defo_v3_store(out->normal, defo_v3_scale(n, 1.0 / l));
    }
    const double d = sqrt(best2);
    out->winding = defo_surface_sdf_winding(sdf, p);
    out->distance = out->winding > 0.5 ? -d : d;
}
