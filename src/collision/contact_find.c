/*
 * collision/contact_find.c — the contact pairs between surfaces
 * (defo/contact.h, "contact between bodies").
 *
 * Broad phase: two surfaces are compared only when their boxes, grown by
 * their reaches, overlap; a vertex is compared with a surface only when it
 * lies in that surface's grown box and its query box meets the surface's
 * box (the root of its hierarchy).  A surface moved lazily is refit only
 * when a query is about to look inside it (a body near no other costs the
 * box of its vertices); the answers are those of a surface refit at once.  Narrow phase through each surface's
 * hierarchy of triangles or edges (refit to the surfaces' current
 * positions):
 *   signed vertex–triangle  the closest point q of the other surface within
 *                    R = max(reach, δ) (box query, then exact distances;
 *                    the closest triangle wins — a triangle facing the
 *                    vertex before one that does not within δ, equal
 *                    distances to the one facing it most, then the lowest
 *                    index: vt_visit);
 *                    φ = ±|p − q| signed by the pseudo-normal of q's feature
 *                    (two-sided: unsigned); a pair when −reach < φ < δ;
 *   barrier vertex–triangle  every triangle of the other surface closer than
 *                    δ, φ = |p − q|;
 *   edge–edge        (signed mode) every edge of the other surface closer
 *                    than δ, pushed along the edges' pseudo-normals
 *                    n̂₂ − n̂₁ with the gap projected on it.  Barrier mode
 *                    takes no edge pairs: the distance of two edges is not
 *                    differentiable where they turn parallel, which stalls
 *                    Newton in a flattened contact patch.
 * In barrier mode a vertex classified inside another surface takes a signed
 * pair with it instead, and no primitive touching such a vertex takes a
 * barrier pair with that surface: placed-overlapping parts are pushed
 * apart, not held together by barriers across the overlap.
 *
 * A pair's normal n is the unit ∇φ at p (the direction from q to p, or the
 * pseudo-normal when p lies on the surface), so φ = n·Σ wₐxₐ.
 *
 * Determinism: surfaces in order, vertices and edges in order, each
 * hierarchy walked in its fixed order; signed vertex pairs are examined in
 * parallel into one slot per vertex and compacted in order, so the list is
 * the same for any thread count.
 */
#include "collision/contact_internal.h"

#include "base/parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void defo_contact_list_free(defo_contact_list *list) {
    if (!list) return;
    defo_free(list->pairs);
    defo_free(list->broad);
    list->pairs = NULL;
    list->broad = NULL;
    list->count = list->capacity = list->broad_capacity = 0;
}

/* Room for n items of `size` bytes in *items (capacity *cap, doubling from
 * `first`); the contents are kept. */
static defo_status grow(void **items, size_t *cap, size_t n, size_t size, size_t first,
                        const char *what) {
    if (n <= *cap) return DEFO_OK;
    size_t c = *cap ? *cap : first;
    while (c < n) c *= 2;
    void *p = defo_realloc(*items, c * size);
    if (!p) return defo_error_oom(what, c * size);
    *items = p;
    *cap = c;
    return DEFO_OK;
}

static defo_status reserve(defo_contact_list *l, size_t n) {
    void *p = l->pairs;
    defo_status s = grow(&p, &l->capacity, n, sizeof *l->pairs, 256, "contact pairs");
    l->pairs = p;
    return s;
}

static int in_box(const double b[6], const double p[3]) {
    return p[0] >= b[0] && p[0] <= b[3] && p[1] >= b[1] && p[1] <= b[4] && p[2] >= b[2] &&
           p[2] <= b[5];
}

static int boxes_overlap(const double a[6], const double b[6]) {
    return a[0] <= b[3] && b[0] <= a[3] && a[1] <= b[4] && b[1] <= a[4] && a[2] <= b[5] &&
           b[2] <= a[5];
}

static double dot3(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* 1 when node `node` of surface S is classified inside surface `other`. */
static int node_inside(const defo_contact_surface *S, defo_index node, int other) {
    if (!S->any_inside) return 0;
    const defo_index v = S->vert_of[node];
    return v >= 0 && S->inside[v] == other;
}

/* 1 when a vertex of A inside bbox (B's box grown by its reach) has a query
 * box (±r) that meets B's box: only then can a query of B's hierarchy find
 * anything (its root box is B's box), and only then are A and B refit
 * (surfaces moved lazily, defo_contact_surface_move).  Serial. */
static int vertex_queries_meet(const defo_contact_body *ba, const defo_contact_body *bb,
                               const double bbox[6], double r) {
    const defo_contact_surface *A = ba->surface, *B = bb->surface;
    for (defo_index v = 0; v < A->nv; v++) {
        const double *p = ba->x + 3 * (size_t)A->vert[v];
        if (!in_box(bbox, p)) continue;
        const double q[6] = {p[0] - r, p[1] - r, p[2] - r, p[0] + r, p[1] + r, p[2] + r};
        if (boxes_overlap(q, B->box)) return 1;
    }
    return 0;
}

/* ------------------------------------------------ signed vertex–triangle */
typedef struct vt_ctx {
    const defo_contact_surface *B;
    const double *xb;
    const double *p;
    defo_index self_vertex; /* vertex index in B when B is the vertex's own surface, else −1 */
    const double *na;       /* the vertex's own pseudo-normal (NULL: none, or no side) */
    double tie;             /* distances closer than this are equal [m] */
    double best;            /* squared distance */
    double facing;          /* the chosen triangle's normal · na */
    double band;            /* the thickness δ [m] */
    defo_index tri;
    double w[3];
    int feature;
} vt_ctx;

/* A query for the closest triangle of B to vertex v of A at p (self_vertex
 * set when A is B), within squared distance best. */
static void vt_init(vt_ctx *c, const defo_contact_surface *A, const defo_contact_surface *B,
                    const double *xb, const double *p, defo_index v, double best) {
    c->B = B;
    c->xb = xb;
    c->p = p;
    c->self_vertex = A == B ? v : -1;
    c->na = A->two_sided || B->two_sided ? NULL : A->vn + 3 * (size_t)v;
    c->tie = 1e-9 * fmax(A->mean_edge, B->mean_edge);
    c->best = best;
    c->facing = 0;
    c->band = fmax(A->thickness, B->thickness);
    c->tri = -1;
    c->feature = 0;
}

static int vt_visit(void *vctx, defo_index t) {
    vt_ctx *c = vctx;
    const defo_index *v = c->B->tri + 3 * (size_t)t;
    if (c->self_vertex >= 0) {
        const defo_index node = c->B->vert[c->self_vertex];
        if (v[0] == node || v[1] == node || v[2] == node) return 0;
        if (defo_contact_excluded(c->B, 0, c->self_vertex, t)) return 0;
    }
    double w[3];
    int f;
    const double d2 = defo_point_triangle_closest(
        c->p, c->xb + 3 * (size_t)v[0], c->xb + 3 * (size_t)v[1], c->xb + 3 * (size_t)v[2], w, &f);
    /* Which triangle a vertex meets is decided canonically, so that a
     * vertex resting on a crease or on a flat face's mesh edge meets the
     * same triangle from step to step:
     *   - a triangle that faces the vertex (its normal against the vertex's
     *     own pseudo-normal: the surfaces can press together across it)
     *     goes before one that does not, when their distances are within
     *     the thickness δ (both count as touching): a box's top edge
     *     exactly beside another box's top edge meets the other's side
     *     face, not its top face, which lies in the same plane as its own;
     *   - then the nearer; distances within rounding (the closest point on
     *     an edge or corner the triangles share) are equal, and of those
     *     the one facing the vertex most, then the lowest index (coplanar
     *     triangles of one flat face). */
    const double facing = c->na ? dot3(c->B->fn + 3 * (size_t)t, c->na) : 0.0;
    int take = d2 < c->best;
    if (c->tri >= 0) {
        const double d = sqrt(d2), db = sqrt(c->best);
        const int faces = facing < -1e-9, best_faces = c->facing < -1e-9;
        if (c->na && faces != best_faces && fabs(d - db) <= c->band)
            take = faces;
        else if (d > db - c->tie)
            take = d <= db + c->tie &&
                   (fabs(facing - c->facing) > 1e-9 ? facing < c->facing : t < c->tri);
    }
    if (take) {
        c->best = d2;
        c->facing = facing;
        c->tri = t;
        memcpy(c->w, w, sizeof w);
        c->feature = f;
    }
    return 0;
}

/* The pseudo-normal of feature f of triangle t (not normalised). */
static void feature_normal(const defo_contact_surface *B, defo_index t, int f, double n[3]) {
    const double *src;
    if (f == 0) {
        src = B->fn + 3 * (size_t)t;
    } else if (f <= 3) {
        src = B->en + 3 * (size_t)B->tri_edge[3 * (size_t)t + (size_t)(f - 1)];
    } else {
        const defo_index node = B->tri[3 * (size_t)t + (size_t)(f - 4)];
        src = B->vn + 3 * (size_t)B->vert_of[node];
    }
    memcpy(n, src, 3 * sizeof(double));
}

static void fill_pair(defo_contact_pair *pair, const defo_contact_body *ba,
                      const defo_contact_body *bb, int ia, int ib, int kind, const defo_index nd[4],
                      const double w[4], const double n[3], double phi, double delta, defo_index id,
                      int barrier) {
    memset(pair, 0, sizeof *pair);
    pair->surface[0] = ia;
    pair->surface[1] = ib;
    pair->kind = kind;
    for (int a = 0; a < 4; a++) {
        pair->side[a] = kind == 0 ? a > 0 : a >= 2;
        pair->node[a] = nd[a];
        pair->w[a] = w[a];
    }
    memcpy(pair->n, n, 3 * sizeof(double));
    pair->phi = phi;
    pair->delta = delta;
    pair->k = fmin(ba->stiffness, bb->stiffness);
    pair->mu = sqrt(ba->friction * bb->friction);
    pair->id = id;
    pair->barrier = barrier;
}

/* Signed distance of vertex v of A to B within reach: *phi, and the pair
 * when active (returns 1); *phi = INFINITY when nothing is within reach. */
static int signed_vertex(const defo_contact_body *ba, const defo_contact_body *bb, int ia, int ib,
                         defo_index v, const double bbox[6], double *phi_out,
                         defo_contact_pair *pair) {
    const defo_contact_surface *A = ba->surface, *B = bb->surface;
    const defo_index node = A->vert[v];
    const double *p = ba->x + 3 * (size_t)node;
    *phi_out = INFINITY;
    if (!in_box(bbox, p)) return 0;
    const double delta = fmax(A->thickness, B->thickness);
    const double R = fmax(B->reach, delta);
    vt_ctx c;
    vt_init(&c, A, B, bb->x, p, v, R * R);
    const double q6[6] = {p[0] - R, p[1] - R, p[2] - R, p[0] + R, p[1] + R, p[2] + R};
    defo_bvh_query(B->tri_bvh, q6, vt_visit, &c);
    if (c.tri < 0) return 0;
    const defo_index *tv = B->tri + 3 * (size_t)c.tri;
    double d[3];
    for (int k = 0; k < 3; k++)
        d[k] =
            p[k] - (c.w[0] * bb->x[3 * (size_t)tv[0] + k] + c.w[1] * bb->x[3 * (size_t)tv[1] + k] +
                    c.w[2] * bb->x[3 * (size_t)tv[2] + k]);
    const double dist = sqrt(dot3(d, d));
    double nh[3];
    feature_normal(B, c.tri, c.feature, nh);
    const double lnh = sqrt(dot3(nh, nh));
    double n[3], phi;
    const double tiny = 1e-12 * fmax(B->mean_edge, A->mean_edge);
    if (!B->two_sided && lnh > 0) {
        /* over a face: its normal (the distance's gradient).  At an edge or
         * a corner of B: the difference of the two surfaces' pseudo-normals
         * there, n̂_B − n̂_A(p) — p − q turns any way as p and q meet (two
         * vertices meeting head on would balance on each other and slide
         * off), and B's pseudo-normal alone pushes a corner resting on a
         * corner sideways; the difference is vertical for two aligned
         * blocks and along the line for two balls meeting pole to pole.
         * The gap is n·(p − q) (the distance over a face) */
        double m[3];
        for (int k = 0; k < 3; k++) m[k] = nh[k] / lnh;
        if (c.feature != 0 && !A->two_sided) {
            const double *na = A->vn + 3 * (size_t)v;
            const double la = sqrt(dot3(na, na));
            double q[3];
            for (int k = 0; k < 3; k++) q[k] = m[k] - (la > 0 ? na[k] / la : 0.0);
            const double lq = sqrt(dot3(q, q));
            if (lq > 0.1)
                for (int k = 0; k < 3; k++) m[k] = q[k] / lq;
        }
        memcpy(n, m, sizeof m);
        phi = dot3(d, n);
    } else if (dist > tiny) {
        for (int k = 0; k < 3; k++) n[k] = d[k] / dist;
        phi = dist;
    } else {
        return 0; /* a degenerate spot on a degenerate surface: no direction */
    }
    *phi_out = phi;
    if (!(phi < delta) || !(phi > -B->reach)) return 0;
    if (pair) {
        const defo_index nd[4] = {node, tv[0], tv[1], tv[2]};
        const double w[4] = {1.0, -c.w[0], -c.w[1], -c.w[2]};
        fill_pair(pair, ba, bb, ia, ib, 0, nd, w, n, phi, delta, v, 0);
    }
    return 1;
}

/* ------------------------------------------------ barrier vertex–triangle */
typedef struct bv_ctx {
    const defo_contact_body *ba, *bb;
    int ia, ib;
    defo_index v;
    double delta;
    defo_contact_list *out;
    defo_status status;
} bv_ctx;

static int bv_visit(void *vctx, defo_index t) {
    bv_ctx *c = vctx;
    const defo_contact_surface *A = c->ba->surface, *B = c->bb->surface;
    const defo_index *tv = B->tri + 3 * (size_t)t;
    const defo_index node = A->vert[c->v];
    if (A == B) {
        if (tv[0] == node || tv[1] == node || tv[2] == node) return 0;
        if (defo_contact_excluded(B, 0, c->v, t)) return 0;
    }
    for (int a = 0; a < 3; a++)
        if (node_inside(B, tv[a], c->ia)) return 0; /* the triangle crosses A */
    const double *p = c->ba->x + 3 * (size_t)node;
    double w[3];
    const double d2 =
        defo_point_triangle_closest(p, c->bb->x + 3 * (size_t)tv[0], c->bb->x + 3 * (size_t)tv[1],
                                    c->bb->x + 3 * (size_t)tv[2], w, NULL);
    if (!(d2 < c->delta * c->delta)) return 0;
    const double dist = sqrt(d2);
    double d[3];
    for (int k = 0; k < 3; k++)
        d[k] = p[k] -
               (w[0] * c->bb->x[3 * (size_t)tv[0] + k] + w[1] * c->bb->x[3 * (size_t)tv[1] + k] +
                w[2] * c->bb->x[3 * (size_t)tv[2] + k]);
    double n[3];
    if (dist > 1e-12 * fmax(A->mean_edge, B->mean_edge)) {
        for (int k = 0; k < 3; k++) n[k] = d[k] / dist;
    } else {
        const double *f = B->fn + 3 * (size_t)t; /* on the triangle: its normal */
        memcpy(n, f, sizeof n);
    }
    if (reserve(c->out, c->out->count + 1)) {
        c->status = DEFO_ERR_OUT_OF_MEMORY;
        return 1;
    }
    const defo_index nd[4] = {node, tv[0], tv[1], tv[2]};
    const double wp[4] = {1.0, -w[0], -w[1], -w[2]};
    fill_pair(&c->out->pairs[c->out->count++], c->ba, c->bb, c->ia, c->ib, 0, nd, wp, n, dist,
              c->delta, c->v, 1);
    return 0;
}

/* ------------------------------------------------------------ edge–edge */
typedef struct ee_ctx {
    const defo_contact_body *ba, *bb;
    int ia, ib;
    defo_index e;
    int self, barrier;
    double delta, reach;
    defo_contact_list *out;
    defo_status status;
} ee_ctx;

/* How near an end (of the edge's length) an edge's closest point is at it. */
#define EE_END 1e-9
static int ee_visit(void *vctx, defo_index e2) {
    ee_ctx *c = vctx;
    const defo_contact_surface *A = c->ba->surface, *B = c->bb->surface;
    if (c->self && e2 <= c->e) return 0;
    const defo_index *a = A->edge + 2 * (size_t)c->e, *b = B->edge + 2 * (size_t)e2;
    if (c->self && (a[0] == b[0] || a[0] == b[1] || a[1] == b[0] || a[1] == b[1])) return 0;
    if (c->self && defo_contact_excluded(A, 1, c->e, e2)) return 0;
    if (c->barrier && (node_inside(A, a[0], c->ib) || node_inside(A, a[1], c->ib) ||
                       node_inside(B, b[0], c->ia) || node_inside(B, b[1], c->ia)))
        return 0;
    const double *p0 = c->ba->x + 3 * (size_t)a[0], *p1 = c->ba->x + 3 * (size_t)a[1];
    const double *q0 = c->bb->x + 3 * (size_t)b[0], *q1 = c->bb->x + 3 * (size_t)b[1];
    double s, t;
    const double d2 = defo_segment_segment_closest(p0, p1, q0, q1, &s, &t);
    if (!(d2 < c->delta * c->delta)) return 0;
    double d[3];
    for (int k = 0; k < 3; k++) d[k] = p0[k] + s * (p1[k] - p0[k]) - q0[k] - t * (q1[k] - q0[k]);
    const double dist = sqrt(d2);
    if (!(dist > 1e-12 * fmax(A->mean_edge, B->mean_edge))) return 0;
    double n[3] = {d[0] / dist, d[1] / dist, d[2] / dist};
    double phi = dist;
    if (!c->barrier && !A->two_sided && !B->two_sided) {
        /* signed pairs push along the edges' pseudo-normals, B's outward
         * less A's (as for a vertex at an edge), the gap projected on it */
        const double *na = A->en + 3 * (size_t)c->e, *nb = B->en + 3 * (size_t)e2;
        double m[3] = {nb[0] - na[0], nb[1] - na[1], nb[2] - na[2]};
        const double lm = sqrt(dot3(m, m));
        if (!(lm > 0)) return 0;
        /* only edges crossing over each other: closest points at an end
         * (within EE_END of it: rounding leaves an end's weight ~1e-16
         * off 0 or 1) are a vertex near a surface, whose own pair holds it
         * (an edge's normals say nothing of its end), and edges side by
         * side in a surface (p₁ − p₂ across the normals) are not crossing */
        if (!(s > EE_END && s < 1 - EE_END && t > EE_END && t < 1 - EE_END)) return 0;
        if (fabs(dot3(d, m)) < 0.5 * dist * lm) return 0;
        for (int k = 0; k < 3; k++) n[k] = m[k] / lm;
        phi = dot3(d, n);
    }
    if (!(phi > -c->reach) || !(phi < c->delta)) return 0;
    if (reserve(c->out, c->out->count + 1)) {
        c->status = DEFO_ERR_OUT_OF_MEMORY;
        return 1;
    }
    const double w[4] = {1 - s, s, -(1 - t), -t};
    const defo_index nd[4] = {a[0], a[1], b[0], b[1]};
    fill_pair(&c->out->pairs[c->out->count++], c->ba, c->bb, c->ia, c->ib, 1, nd, w, n, phi,
              c->delta, c->e, c->barrier);
    return 0;
}

/* ------------------------------------------------------------ classify */
static defo_status check_bodies(const defo_contact_body *bodies, int count) {
    if (count < 0 || (count > 0 && !bodies))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact: bad arguments");
    for (int i = 0; i < count; i++)
        if (!bodies[i].surface || !bodies[i].x || !(bodies[i].stiffness > 0) ||
            !(bodies[i].friction >= 0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "contact: body %d lacks a surface, positions, a stiffness > 0 or a "
                              "friction >= 0",
                              i);
    return DEFO_OK;
}

void defo_contact_unclassify(const defo_contact_body *bodies, int count) {
    for (int i = 0; i < count; i++) {
        defo_contact_surface *S = bodies[i].surface;
        if (!S->any_inside) continue;
        for (defo_index v = 0; v < S->nv; v++) S->inside[v] = -1;
        S->any_inside = 0;
    }
}

defo_status defo_contact_classify(const defo_contact_body *bodies, int count) {
    defo_status st = check_bodies(bodies, count);
    if (st) return st;
    defo_contact_unclassify(bodies, count);
    for (int ia = 0; ia < count; ia++) {
        const defo_contact_body *ba = &bodies[ia];
        defo_contact_surface *A = ba->surface;
        double abox[6];
        defo_contact_surface_bounds(A, abox);
        for (int ib = 0; ib < count; ib++) {
            const defo_contact_body *bb = &bodies[ib];
            const defo_contact_surface *B = bb->surface;
            if ((ia == ib && !A->self_contact) || B->two_sided) continue;
            if (ba->obstacle && bb->obstacle) continue;
            double bbox[6];
            defo_contact_surface_bounds(B, bbox);
            if (!boxes_overlap(abox, bbox)) continue;
            const double R = fmax(B->reach, fmax(A->thickness, B->thickness));
            if (!vertex_queries_meet(ba, bb, bbox, R)) continue; /* nothing within reach */
            defo_contact_surface_refit(ba->surface);
            defo_contact_surface_refit(bb->surface);
            const defo_index nv = A->nv;
            int any = 0;
            DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(nv, 150))
            for (defo_index v = 0; v < nv; v++) {
                if (A->inside[v] >= 0) continue; /* the first surface it is inside */
                double phi;
                (void)signed_vertex(ba, bb, ia, ib, v, bbox, &phi, NULL);
                if (phi < 0) A->inside[v] = ib;
            }
            for (defo_index v = 0; v < nv; v++) any |= A->inside[v] >= 0;
            A->any_inside |= any;
        }
    }
    return DEFO_OK;
}

/* ------------------------------------------------------------ broad phase */
/* One surface's box (grown by its reach) in the sweep, or one candidate
 * pair of surfaces (a, b). */
typedef struct sweep_item {
    double box[6];
    double key; /* the box's low end along the sweep's axis */
    int32_t a, b;
} sweep_item;

static int sweep_cmp(const void *pa, const void *pb) {
    const sweep_item *x = pa, *y = pb;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return (x->a > y->a) - (x->a < y->a);
}

static int pair_cmp(const void *pa, const void *pb) {
    const sweep_item *x = pa, *y = pb;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    return (x->b > y->b) - (x->b < y->b);
}

static defo_status broad_reserve(defo_contact_list *l, size_t n) {
    void *p = l->broad;
    defo_status s = grow(&p, &l->broad_capacity, n, sizeof(sweep_item), 64, "contact broad phase");
    l->broad = p;
    return s;
}

/* Sort and sweep: the surfaces' grown boxes sorted along the axis where
 * their centres spread most, swept for overlaps; every ordered pair (a, b)
 * of surfaces whose boxes overlap (both ways) and a surface with itself
 * when it has self contact, in the order (a ascending, then b): the order
 * of the double loop over all pairs it replaces, so the pairs found are the
 * same.  O(n log n + overlaps).  The list's scratch holds the n sorted
 * boxes, then the candidates; *num their count, *first where they start. */
static defo_status broad_phase(const defo_contact_body *bodies, int count, defo_contact_list *l,
                               size_t *first, size_t *num) {
    defo_status st = broad_reserve(l, 2 * (size_t)count + 16);
    if (st) return st;
    sweep_item *it = l->broad;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (int i = 0; i < count; i++) {
        defo_contact_surface_bounds(bodies[i].surface, it[i].box);
        it[i].a = it[i].b = i;
        for (int k = 0; k < 3; k++) {
            const double c = 0.5 * (it[i].box[k] + it[i].box[3 + k]);
            lo[k] = fmin(lo[k], c);
            hi[k] = fmax(hi[k], c);
        }
    }
    int axis = 0;
    for (int k = 1; k < 3; k++)
        if (hi[k] - lo[k] > hi[axis] - lo[axis]) axis = k;
    for (int i = 0; i < count; i++) it[i].key = it[i].box[axis];
    qsort(it, (size_t)count, sizeof *it, sweep_cmp);
    /* count, reserve, then fill (the scratch may move when it grows) */
    size_t k = (size_t)count;
    for (int pass = 0; pass < 2; pass++) {
        sweep_item *s = l->broad;
        size_t c = (size_t)count;
        for (int i = 0; i < count; i++) {
            const int a = s[i].a;
            if (bodies[a].surface->self_contact) {
                if (pass) s[c] = (sweep_item){{0}, 0, a, a};
                c++;
            }
            for (int j = i + 1; j < count && s[j].box[axis] <= s[i].box[3 + axis]; j++) {
                if (!boxes_overlap(s[i].box, s[j].box)) continue;
                if (pass) {
                    s[c] = (sweep_item){{0}, 0, a, s[j].a};
                    s[c + 1] = (sweep_item){{0}, 0, s[j].a, a};
                }
                c += 2;
            }
        }
        if (!pass) {
            st = broad_reserve(l, c);
            if (st) return st;
        }
        k = c;
    }
    sweep_item *d = l->broad;
    qsort(d + count, k - (size_t)count, sizeof *d, pair_cmp);
    *first = (size_t)count;
    *num = k - (size_t)count;
    return DEFO_OK;
}

/* ------------------------------------------------------------------ find */
defo_status defo_contact_find(const defo_contact_body *bodies, int count, defo_contact_mode mode,
                              defo_contact_list *out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact: no list");
    defo_status st = check_bodies(bodies, count);
    if (st) return st;
    const int barrier = mode == DEFO_CONTACT_BARRIER;
    const size_t start = out->count;
    size_t first = 0, num = 0;
    st = broad_phase(bodies, count, out, &first, &num);
    if (st) return st;
    for (size_t cand = 0; cand < num; cand++) {
        const sweep_item *pr = (const sweep_item *)out->broad + first + cand;
        const int ia = pr->a, ib = pr->b;
        const defo_contact_body *ba = &bodies[ia];
        const defo_contact_surface *A = ba->surface;
        double abox[6];
        defo_contact_surface_bounds(A, abox);
        {
            const defo_contact_body *bb = &bodies[ib];
            const defo_contact_surface *B = bb->surface;
            if (ia == ib && !A->self_contact) continue;
            if (ba->obstacle && bb->obstacle) continue;
            double bbox[6];
            defo_contact_surface_bounds(B, bbox);
            if (!boxes_overlap(abox, bbox)) continue;
            const double delta = fmax(A->thickness, B->thickness);
            const defo_index nv = A->nv;
            const double R = fmax(B->reach, delta); /* signed_vertex's query radius */
            if ((!barrier || A->any_inside) && vertex_queries_meet(ba, bb, bbox, R)) {
                defo_contact_surface_refit(ba->surface);
                defo_contact_surface_refit(bb->surface);
                /* signed pairs: one slot per vertex, compacted in order */
                st = reserve(out, out->count + (size_t)nv);
                if (st) {
                    out->count = start;
                    return st;
                }
                defo_contact_pair *slot = out->pairs + out->count;
                unsigned char *hit = (unsigned char *)A->wtmp; /* nv bytes of its nv doubles */
                DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(nv, 150))
                for (defo_index v = 0; v < nv; v++) {
                    double phi;
                    hit[v] = (!barrier || A->inside[v] == ib) &&
                             signed_vertex(ba, bb, ia, ib, v, bbox, &phi, &slot[v]);
                }
                size_t w = 0;
                for (defo_index v = 0; v < nv; v++)
                    if (hit[v]) {
                        if (w != (size_t)v) slot[w] = slot[v];
                        w++;
                    }
                out->count += w;
            }
            if (barrier) {
                bv_ctx c = {ba, bb, ia, ib, 0, delta, out, DEFO_OK};
                for (defo_index v = 0; v < nv && !c.status; v++) {
                    if (A->any_inside && A->inside[v] == ib) continue;
                    const double *p = ba->x + 3 * (size_t)A->vert[v];
                    if (!in_box(bbox, p)) continue;
                    c.v = v;
                    const double q6[6] = {p[0] - delta, p[1] - delta, p[2] - delta,
                                          p[0] + delta, p[1] + delta, p[2] + delta};
                    if (!boxes_overlap(q6, B->box)) continue; /* the root would refuse it */
                    defo_contact_surface_refit(bb->surface);
                    defo_bvh_query(B->tri_bvh, q6, bv_visit, &c);
                }
                if (c.status) {
                    out->count = start;
                    return defo_error_oom("contact pairs", 0);
                }
            }
            /* edges, once per unordered pair of surfaces */
            if (ib < ia) continue;
            /* no edge–edge barrier: the distance of two edges is not
             * differentiable where they turn parallel (a flattened contact
             * patch is full of such pairs) and stalls Newton; vertices
             * against triangles both ways hold volumetric bodies apart */
            if (barrier) continue;
            ee_ctx c;
            c.ba = ba;
            c.bb = bb;
            c.ia = ia;
            c.ib = ib;
            c.self = ia == ib;
            c.barrier = barrier;
            c.delta = delta;
            c.reach = B->reach;
            c.out = out;
            c.status = DEFO_OK;
            for (defo_index e = 0; e < A->ne && !c.status; e++) {
                /* the edge's box from its nodes (A's stored boxes may wait
                 * for a refit), grown by δ */
                const double *p0 = ba->x + 3 * (size_t)A->edge[2 * (size_t)e];
                const double *p1 = ba->x + 3 * (size_t)A->edge[2 * (size_t)e + 1];
                double q[6];
                for (int k = 0; k < 3; k++) {
                    q[k] = fmin(p0[k], p1[k]) - c.delta;
                    q[3 + k] = fmax(p0[k], p1[k]) + c.delta;
                }
                if (!boxes_overlap(q, bbox) || !boxes_overlap(q, B->box)) continue;
                defo_contact_surface_refit(ba->surface); /* its edge normals */
                defo_contact_surface_refit(bb->surface);
                c.e = e;
                defo_bvh_query(B->edge_bvh, q, ee_visit, &c);
            }
            if (c.status) {
                out->count = start;
                return defo_error_oom("contact pairs", 0);
            }
        }
    }
    return DEFO_OK;
}

defo_status defo_contact_inside(const defo_contact_body *a, const defo_contact_body *b,
                                double tolerance, defo_index *count, defo_index *deepest_node,
                                double *depth) {
    *count = 0;
    *deepest_node = -1;
    *depth = 0;
    if (!a || !b || !a->surface || !b->surface || !a->x || !b->x)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact: missing surface");
    const defo_contact_surface *A = a->surface, *B = b->surface;
    if (B->two_sided) return DEFO_OK;
    defo_contact_surface_refit(a->surface);
    defo_contact_surface_refit(b->surface);
    double box[6];
    defo_bvh_bounds(B->tri_bvh, box);
    const double R =
        sqrt((box[3] - box[0]) * (box[3] - box[0]) + (box[4] - box[1]) * (box[4] - box[1]) +
             (box[5] - box[2]) * (box[5] - box[2]));
    for (defo_index v = 0; v < A->nv; v++) {
        const defo_index node = A->vert[v];
        const double *p = a->x + 3 * (size_t)node;
        if (!in_box(box, p)) continue;
        vt_ctx c;
        vt_init(&c, A, B, b->x, p, v, INFINITY);
        const double q6[6] = {p[0] - R, p[1] - R, p[2] - R, p[0] + R, p[1] + R, p[2] + R};
        defo_bvh_query(B->tri_bvh, q6, vt_visit, &c);
        if (c.tri < 0) continue;
        const defo_index *tv = B->tri + 3 * (size_t)c.tri;
        double d[3];
        for (int k = 0; k < 3; k++)
            d[k] = p[k] -
                   (c.w[0] * b->x[3 * (size_t)tv[0] + k] + c.w[1] * b->x[3 * (size_t)tv[1] + k] +
                    c.w[2] * b->x[3 * (size_t)tv[2] + k]);
        double nh[3];
        feature_normal(B, c.tri, c.feature, nh);
        if (dot3(d, nh) >= 0) continue;
        const double dist = sqrt(c.best);
        if (!(dist > tolerance)) continue;
        (*count)++;
        if (dist > *depth) {
            *depth = dist;
            *deepest_node = node;
        }
    }
    return DEFO_OK;
}
