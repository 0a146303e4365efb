/*
 * geometry/bvh.c — bounding volume hierarchies of axis-aligned boxes that
 * are refit, not rebuilt, as their primitives move (defo/geometry.h).
 *
 * Build (once): top-down median split of the box centres along the longest
 * axis of their bounds, leaves of at most LEAF boxes, nodes in preorder (a
 * node's children come after it), so a refit is one backward sweep: a leaf
 * takes the union of its boxes, an inner node that of its two children.
 * Median splits keep the depth at most log2(n) + 1, so queries use a fixed
 * stack of DEPTH entries on the caller's stack and allocate nothing.
 *
 * Invariants: the primitives' order in the leaves is fixed at build time and
 * a query walks the tree in a fixed order (left child before right), so the
 * sequence of reported boxes depends only on the boxes, never on a thread
 * count; a refit tree is exact (every overlapping box is found) — only its
 * pruning loosens as the boxes drift from their arrangement at build time.
 */
#include "defo/geometry.h"

#include "base/base.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LEAF  4
#define DEPTH 96

typedef struct bvh_node {
    double box[6];
    int32_t right; /* inner: index of the right child (left is this + 1); leaf: −1 */
    int32_t start; /* leaf: first entry of order */
    int32_t count; /* leaf: entries */
} bvh_node;

struct defo_bvh {
    defo_index n;
    int32_t num_nodes;
    bvh_node *nodes;
    defo_index *order; /* primitives in leaf order */
    double *boxes;     /* 6 per primitive, input order */
};

typedef struct key {
    double v;
    defo_index i;
} key;

static int key_cmp(const void *pa, const void *pb) {
    const key *a = pa, *b = pb;
    if (a->v != b->v) return a->v < b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

static void box_empty(double b[6]) {
    b[0] = b[1] = b[2] = INFINITY;
    b[3] = b[4] = b[5] = -INFINITY;
}

static void box_grow(double b[6], const double c[6]) {
    for (int k = 0; k < 3; k++) {
        b[k] = fmin(b[k], c[k]);
        b[3 + k] = fmax(b[3 + k], c[3 + k]);
    }
}

typedef struct builder {
    defo_bvh *t;
    key *keys;
} builder;

static int32_t build(builder *B, defo_index begin, defo_index end) {
    defo_bvh *t = B->t;
    const int32_t id = t->num_nodes++;
    bvh_node *nd = &t->nodes[id];
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    box_empty(nd->box);
    for (defo_index k = begin; k < end; k++) {
        const double *b = t->boxes + 6 * (size_t)t->order[k];
        box_grow(nd->box, b);
        for (int a = 0; a < 3; a++) {
            const double c = 0.5 * (b[a] + b[3 + a]);
            lo[a] = fmin(lo[a], c);
            hi[a] = fmax(hi[a], c);
        }
    }
    if (end - begin <= LEAF) {
        nd->right = -1;
        nd->start = (int32_t)begin;
        nd->count = (int32_t)(end - begin);
        return id;
    }
    int axis = 0;
    for (int a = 1; a < 3; a++)
        if (hi[a] - lo[a] > hi[axis] - lo[axis]) axis = a;
    for (defo_index k = begin; k < end; k++) {
        const double *b = t->boxes + 6 * (size_t)t->order[k];
        B->keys[k].v = 0.5 * (b[axis] + b[3 + axis]);
        B->keys[k].i = t->order[k];
    }
    qsort(B->keys + begin, (size_t)(end - begin), sizeof(key), key_cmp);
    for (defo_index k = begin; k < end; k++) t->order[k] = B->keys[k].i;
    const defo_index mid = begin + (end - begin) / 2;
    nd->start = -1;
    nd->count = 0;
    (void)build(B, begin, mid);
    const int32_t r = build(B, mid, end);
    t->nodes[id].right = r;
    return id;
}

defo_status defo_bvh_create(const double *boxes, defo_index n, defo_bvh **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bvh: out is NULL");
    *out = NULL;
    if (n < 0 || (n > 0 && !boxes))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bvh: %ld boxes", (long)n);
    for (size_t j = 0; j < 6 * (size_t)n; j++)
        if (isnan(boxes[j]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bvh: box %zu has a NaN bound", j / 6);
    defo_bvh *t = defo_calloc(1, sizeof *t);
    if (!t) return defo_error_oom("bvh", sizeof *t);
    t->n = n;
    const size_t max_nodes = 2 * (size_t)n + 1;
    t->nodes = defo_malloc(max_nodes * sizeof *t->nodes);
    t->order = defo_malloc(((size_t)n + 1) * sizeof *t->order);
    t->boxes = defo_malloc((6 * (size_t)n + 1) * sizeof *t->boxes);
    key *keys = defo_malloc(((size_t)n + 1) * sizeof *keys);
    if (!t->nodes || !t->order || !t->boxes || !keys) {
        defo_free(keys);
        defo_bvh_destroy(t);
        return defo_error_oom("bvh", max_nodes * sizeof(bvh_node));
    }
    memcpy(t->boxes, boxes, 6 * (size_t)n * sizeof(double));
    for (defo_index i = 0; i < n; i++) t->order[i] = i;
    if (n > 0) {
        builder B = {t, keys};
        (void)build(&B, 0, n);
    }
    defo_free(keys);
    *out = t;
    return DEFO_OK;
}

void defo_bvh_destroy(defo_bvh *t) {
    if (!t) return;
    defo_free(t->nodes);
    defo_free(t->order);
    defo_free(t->boxes);
    defo_free(t);
}

defo_index defo_bvh_count(const defo_bvh *t) {
    return t ? t->n : 0;
}

void defo_bvh_refit(defo_bvh *t, const double *boxes) {
    if (!t || !boxes || t->n == 0) return;
    memcpy(t->boxes, boxes, 6 * (size_t)t->n * sizeof(double));
    for (int32_t id = t->num_nodes - 1; id >= 0; id--) {
        bvh_node *nd = &t->nodes[id];
        box_empty(nd->box);
        if (nd->right < 0) {
            for (int32_t k = 0; k < nd->count; k++)
                box_grow(nd->box, t->boxes + 6 * (size_t)t->order[nd->start + k]);
        } else {
            box_grow(nd->box, t->nodes[id + 1].box);
            box_grow(nd->box, t->nodes[nd->right].box);
        }
    }
}

void defo_bvh_bounds(const defo_bvh *t, double box[6]) {
    if (!t || t->n == 0) {
        box_empty(box);
        return;
    }
    memcpy(box, t->nodes[0].box, sizeof(double) * 6);
}

static int overlap(const double a[6], const double b[6]) {
    return a[0] <= b[3] && b[0] <= a[3] && a[1] <= b[4] && b[1] <= a[4] && a[2] <= b[5] &&
           b[2] <= a[5];
}

void defo_bvh_query(const defo_bvh *t, const double q[6], int (*fn)(void *ctx, defo_index i),
                    void *ctx) {
    if (!t || t->n == 0 || !q || !fn) return;
    int32_t stack[DEPTH];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const bvh_node *nd = &t->nodes[stack[--top]];
        if (!overlap(nd->box, q)) continue;
        if (nd->right < 0) {
            for (int32_t k = 0; k < nd->count; k++) {
                const defo_index i = t->order[nd->start + k];
                if (overlap(t->boxes + 6 * (size_t)i, q) && fn(ctx, i)) return;
            }
            continue;
        }
        /* right pushed first: the left child is visited first */
        stack[top++] = nd->right;
        stack[top++] = (int32_t)(nd - t->nodes) + 1;
    }
}
