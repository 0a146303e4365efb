/*
 * embed/cut.c — MG04 §5.2 consistent watertight fracturing of an embedded
 * surface: the surface cut where the tet mesh has come apart and closed
 * with caps, every piece's surface bound to that piece's elements.
 *
 * Everything is done in rest coordinates, from scratch for the mesh as it
 * is (defo_embed_create_cut).  The cracks are the pairs of boundary faces
 * of the tet mesh that lie at the same rest position (a crack copies nodes
 * without moving them); a pair whose elements belong to two pieces
 * (connected components) separates them — a crack still inside one piece is
 * left alone (the surface stays whole across it until it separates).  With
 * S the embedded surface (closed and manifold, inside the tets, MG04 §5.2's
 * two requirements) and C the separating crack faces:
 *
 *   1 every pair (triangle t of S, face f of C) is intersected: the points
 *     where an edge of t pierces f and where an edge of f pierces t, each
 *     computed once for its (edge, triangle) pair (memoised), so triangles
 *     sharing an edge agree on it; two points make a segment of t and of f;
 *   2 every triangle of S with segments is split along them: the planar
 *     graph of its edges (with their pierce points in order) and its
 *     segments, faces found by turning left at every vertex, triangulated by
 *     ear clipping; every face goes to the piece of the element containing
 *     an interior point of it;
 *   3 every face of C is split the same way by its segments; the parts
 *     inside S (generalised winding number of S at an interior point > ½)
 *     are the caps — MG04's "triangles at the location of Tv, subdivided
 *     along the surface, those outside deleted" — one copy for each side,
 *     oriented outward from that side's element;
 *   4 a vertex is a (point, piece) pair: a cut point on the crack is one
 *     vertex per side, bound to the crack face's element on that side (so
 *     the two copies part as the crack opens), a vertex of S one vertex bound
 *     to the element containing it.
 * So every cut edge of S is an edge of a cap with the same two points, and
 * each piece's surface is closed: it bounds (inside S) ∩ (its elements).
 * Coincidences (a vertex of S on a crack face's plane, an edge of S through
 * a crack edge, coplanar triangles — common when the surface and the mesh
 * share a grid) are resolved by a perturbation of S (perturb()); what still
 * defeats the cut (a triangle whose graph cannot be split, more than two
 * crossings of one pair) is left whole and counted in
 * defo_embed_info.degenerate.
 */
#include "embed/embed_internal.h"

#include "defo/element.h"
#include "defo/math.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define M_PI_VAL 3.14159265358979323846

/* ------------------------------------------------------------ helpers */
static void sub3(const double *a, const double *b, double *c) {
    c[0] = a[0] - b[0], c[1] = a[1] - b[1], c[2] = a[2] - b[2];
}
static double orient(const double *a, const double *b, const double *c, const double *d) {
    double u[3], v[3], w[3];
    sub3(b, a, u), sub3(c, a, v), sub3(d, a, w);
    return u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) +
           u[2] * (v[0] * w[1] - v[1] * w[0]);
}

/* Does segment pq pierce triangle abc (strictly)?  *s: the fraction along pq. */
static int pierce(const double *p, const double *q, const double *a, const double *b,
                  const double *c, double *s) {
    const double dp = orient(a, b, c, p), dq = orient(a, b, c, q);
    if (!(dp * dq < 0)) return 0;
    const double o1 = orient(p, q, a, b), o2 = orient(p, q, b, c), o3 = orient(p, q, c, a);
    if (!((o1 > 0 && o2 > 0 && o3 > 0) || (o1 < 0 && o2 < 0 && o3 < 0))) return 0;
    *s = dp / (dp - dq);
    return 1;
}

/* The fraction along pq where it crosses the plane of abc, sp when pq
 * lies in that plane (the perturbed crossing decided that there is one). */
static double along(const double *p, const double *q, const double *a, const double *b,
                    const double *c, double sp) {
    const double dp = orient(a, b, c, p), dq = orient(a, b, c, q);
    if (!(dp != dq) || !(dp * dq <= 0)) return sp;
    const double s = dp / (dp - dq);
    return s >= 0 && s <= 1 ? s : sp;
}

/* A growable array. */
#define PUSH(arr, n, cap, val, fail)                                                               \
    do {                                                                                           \
        if ((n) == (cap)) {                                                                        \
            size_t nc_ = (cap) ? 2 * (cap) : 64;                                                   \
            void *q_ = defo_realloc((arr), nc_ * sizeof *(arr));                                   \
            if (!q_) goto fail;                                                                    \
            (arr) = q_;                                                                            \
            (cap) = nc_;                                                                           \
        }                                                                                          \
        (arr)[(n)++] = (val);                                                                      \
    } while (0)

/* An open-addressing map from a 64-bit key to an int64 value. */
typedef struct map64 {
    uint64_t *key;
    int64_t *val;
    size_t cap, n;
} map64;
static void map_free(map64 *m) {
    defo_free(m->key);
    defo_free(m->val);
    memset(m, 0, sizeof *m);
}
static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static int map_grow(map64 *m) {
    map64 nm;
    nm.cap = m->cap ? 2 * m->cap : 1024;
    nm.n = 0;
    nm.key = defo_malloc(nm.cap * sizeof *nm.key);
    nm.val = defo_malloc(nm.cap * sizeof *nm.val);
    if (!nm.key || !nm.val) {
        defo_free(nm.key), defo_free(nm.val);
        return 0;
    }
    for (size_t i = 0; i < nm.cap; i++) nm.key[i] = UINT64_MAX;
    for (size_t i = 0; i < m->cap; i++)
        if (m->key[i] != UINT64_MAX) {
            size_t h = (size_t)mix(m->key[i]) & (nm.cap - 1);
            while (nm.key[h] != UINT64_MAX) h = (h + 1) & (nm.cap - 1);
            nm.key[h] = m->key[i], nm.val[h] = m->val[i], nm.n++;
        }
    map_free(m);
    *m = nm;
    return 1;
}
/* The slot of key (inserted with val when absent); NULL when out of memory. */
static int64_t *map_get(map64 *m, uint64_t key, int64_t val, int *found) {
    if (2 * (m->n + 1) > m->cap && !map_grow(m)) return NULL;
    size_t h = (size_t)mix(key) & (m->cap - 1);
    while (m->key[h] != UINT64_MAX && m->key[h] != key) h = (h + 1) & (m->cap - 1);
    *found = m->key[h] == key;
    if (!*found) m->key[h] = key, m->val[h] = val, m->n++;
    return &m->val[h];
}
static uint64_t key2(int kind, int64_t a, int64_t b) {
    return ((uint64_t)kind << 60) ^ ((uint64_t)a << 30) ^ (uint64_t)b;
}

/* ------------------------------------------------------------- the data */
typedef struct cpoint {
    double x[3]; /* where it is (output positions) */
    double p[3]; /* where it is with S perturbed (every decision) */
} cpoint;

typedef struct cface {  /* a separating crack face */
    double v[9];        /* corners, A's order (A's outward normal) */
    int64_t vid[3];     /* crack vertex ids (rest positions) */
    int64_t eid[3];     /* crack edge ids: (0,1) (1,2) (2,0) */
    defo_index elem[2]; /* A, B */
    defo_index comp[2]; /* their pieces */
} cface;

typedef struct seg {
    int64_t p, q;  /* point ids */
    int64_t owner; /* the S triangle or crack face it belongs to */
    int64_t other; /* the crack face (for S) or S triangle (for C) */
} seg;

typedef struct cutter {
    const defo_mesh *tets, *S;
    double *Sp; /* S's vertices perturbed (3 per vertex) */
    int P;
    /* points */
    cpoint *pt;
    size_t npt, cappt;
    map64 pmap; /* (kind, a, b) → point id, or −1: tested, no pierce */
    /* S edges */
    map64 smap;     /* (min, max) vertex → S edge id */
    int64_t *sedge; /* 2 per S edge */
    size_t nse, capse;
    /* crack faces, vertices, edges */
    cface *cf;
    size_t ncf, capcf;
    map64 cvmap, cemap;
    double *cv; /* 3 per crack vertex */
    size_t ncv, capcv;
    int64_t *ce; /* 2 per crack edge (crack vertex ids) */
    size_t nce, capce;
    /* segments */
    seg *sseg, *cseg;
    size_t nss, capss, ncs, capcs;
    int64_t degenerate;
    /* tet location */
    grid g;
    double *dmi;
    defo_index *comp;
} cutter;

/* ------------------------------------------------------------ the cracks */
/* A rest-position key of a node's coordinates (exact: copies share them). */
static int cmp_face_rec(const void *pa, const void *pb) {
    const double *a = pa, *b = pb;
    for (int k = 0; k < 9; k++)
        if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return 0;
}

/* The crack vertex or edge id of rest points (exact coordinates). */
static int64_t vertex_id(cutter *c, const double *X) {
    uint64_t h = 1469598103934665603ull;
    unsigned char b[24];
    memcpy(b, X, 24);
    for (int i = 0; i < 24; i++) h = (h ^ b[i]) * 1099511628211ull;
    /* ids are offsets into cv; a hash collision probes the next key */
    for (uint64_t probe = 0;; probe++) {
        int found = 0;
        int64_t *v = map_get(&c->cvmap, h + probe, (int64_t)c->ncv, &found);
        if (!v) return -1;
        if (!found) {
            const int64_t id = *v;
            for (int k = 0; k < 3; k++) PUSH(c->cv, c->ncv, c->capcv, X[k], oom);
            return id;
        }
        if (!memcmp(c->cv + *v, X, 24)) return *v;
    }
oom:
    return -1;
}

static int64_t edge_id(cutter *c, int64_t a, int64_t b) {
    if (a > b) {
        const int64_t t = a;
        a = b, b = t;
    }
    int found = 0;
    int64_t *v = map_get(&c->cemap, key2(1, a, b), (int64_t)(c->nce / 2), &found);
    if (!v) return -1;
    if (!found) {
        PUSH(c->ce, c->nce, c->capce, a, oom);
        PUSH(c->ce, c->nce, c->capce, b, oom);
    }
    return *v;
oom:
    return -1;
}

static defo_status find_cracks(cutter *c) {
    const defo_mesh *m = c->tets;
    defo_boundary bd;
    defo_status st = defo_mesh_boundary(m, 0, &bd);
    if (st) return defo_error_prefix("embed cut");
    /* per boundary face: sorted corner coordinates (9), face index */
    double *rec = defo_malloc(10 * (size_t)bd.num_faces * sizeof(double) + 1);
    if (!rec) {
        defo_boundary_free(&bd);
        return defo_error_oom("embed cut", 80 * (size_t)bd.num_faces);
    }
    for (defo_index q = 0; q < bd.num_faces; q++) {
        const double *p[3];
        for (int j = 0; j < 3; j++) p[j] = m->x + 3 * (size_t)bd.faces[3 * (size_t)q + j];
        /* sort the three corners lexicographically */
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2 - i; j++) {
                int swap = 0;
                for (int k = 0; k < 3; k++)
                    if (p[j][k] != p[j + 1][k]) {
                        swap = p[j][k] > p[j + 1][k];
                        break;
                    }
                if (swap) {
                    const double *t = p[j];
                    p[j] = p[j + 1], p[j + 1] = t;
                }
            }
        double *r = rec + 10 * (size_t)q;
        for (int j = 0; j < 3; j++) memcpy(r + 3 * j, p[j], 24);
        r[9] = (double)q;
    }
    qsort(rec, (size_t)bd.num_faces, 10 * sizeof(double), cmp_face_rec);
    for (defo_index q = 0; q + 1 < bd.num_faces; q++) {
        const double *r0 = rec + 10 * (size_t)q, *r1 = r0 + 10;
        if (memcmp(r0, r1, 9 * sizeof(double)) != 0) continue;
        const defo_index fa = (defo_index)r0[9], fb = (defo_index)r1[9];
        const defo_index ea = bd.elem[fa], eb = bd.elem[fb];
        q++;
        if (c->comp[ea] == c->comp[eb]) continue; /* not separating (yet) */
        cface f;
        memset(&f, 0, sizeof f);
        for (int j = 0; j < 3; j++)
            memcpy(f.v + 3 * j, m->x + 3 * (size_t)bd.faces[3 * (size_t)fa + j], 24);
        f.elem[0] = ea, f.elem[1] = eb;
        f.comp[0] = c->comp[ea], f.comp[1] = c->comp[eb];
        for (int j = 0; j < 3; j++) {
            f.vid[j] = vertex_id(c, f.v + 3 * j);
            if (f.vid[j] < 0) goto oom;
        }
        for (int j = 0; j < 3; j++) {
            f.eid[j] = edge_id(c, f.vid[j], f.vid[(j + 1) % 3]);
            if (f.eid[j] < 0) goto oom;
        }
        PUSH(c->cf, c->ncf, c->capcf, f, oom);
    }
    defo_free(rec);
    defo_boundary_free(&bd);
    return DEFO_OK;
oom:
    defo_free(rec);
    defo_boundary_free(&bd);
    return defo_error_oom("embed cut", 0);
}

/* ------------------------------------------------------------ points */
static int64_t new_point(cutter *c, const double X[3], const double Xp[3]) {
    cpoint p;
    memcpy(p.x, X, sizeof p.x);
    memcpy(p.p, Xp, sizeof p.p);
    PUSH(c->pt, c->npt, c->cappt, p, oom);
    return (int64_t)c->npt - 1;
oom:
    return -2;
}

/* A point by key, made by make() the first time (−1: none, −2: no memory). */
static int64_t keyed(cutter *c, uint64_t key, const double *X, const double *Xp, int exists) {
    int found = 0;
    int64_t *v = map_get(&c->pmap, key, -1, &found);
    if (!v) return -2;
    if (found) return *v;
    if (!exists) return -1;
    const int64_t id = new_point(c, X, Xp);
    if (id < 0) return -2;
    v = map_get(&c->pmap, key, -1, &found);
    if (!v) return -2;
    *v = id;
    return id;
}

static int64_t s_vertex(cutter *c, defo_index i) {
    return keyed(c, key2(5, i, 0), c->S->x + 3 * (size_t)i, c->Sp + 3 * (size_t)i, 1);
}
static int64_t c_vertex(cutter *c, int64_t vid) {
    return keyed(c, key2(4, vid, 0), c->cv + vid, c->cv + vid, 1);
}

/* Where S edge se pierces crack face f (−1: it does not). */
static int64_t ef_point(cutter *c, int64_t se, int64_t f) {
    int found = 0;
    int64_t *v = map_get(&c->pmap, key2(2, se, f), -1, &found);
    if (!v) return -2;
    if (found) return *v;
    const double *a = c->Sp + 3 * (size_t)c->sedge[2 * se],
                 *b = c->Sp + 3 * (size_t)c->sedge[2 * se + 1];
    const double *ax = c->S->x + 3 * (size_t)c->sedge[2 * se],
                 *bx = c->S->x + 3 * (size_t)c->sedge[2 * se + 1];
    const cface *cf = &c->cf[f];
    double s;
    if (!pierce(a, b, cf->v, cf->v + 3, cf->v + 6, &s)) return -1;
    const double sx = along(ax, bx, cf->v, cf->v + 3, cf->v + 6, s);
    double X[3], Xp[3];
    for (int k = 0; k < 3; k++)
        X[k] = ax[k] + sx * (bx[k] - ax[k]), Xp[k] = a[k] + s * (b[k] - a[k]);
    const int64_t id = new_point(c, X, Xp);
    if (id < 0) return id;
    v = map_get(&c->pmap, key2(2, se, f), -1, &found);
    if (!v) return -2;
    *v = id;
    return id;
}

/* Where crack edge g pierces S triangle t (−1: it does not). */
static int64_t gt_point(cutter *c, int64_t g, int64_t t) {
    int found = 0;
    int64_t *v = map_get(&c->pmap, key2(3, g, t), -1, &found);
    if (!v) return -2;
    if (found) return *v;
    const double *a = c->cv + c->ce[2 * g], *b = c->cv + c->ce[2 * g + 1];
    const defo_index *tr = c->S->tris + 3 * (size_t)t;
    double s;
    if (!pierce(a, b, c->Sp + 3 * (size_t)tr[0], c->Sp + 3 * (size_t)tr[1],
                c->Sp + 3 * (size_t)tr[2], &s))
        return -1;
    const double sx = along(a, b, c->S->x + 3 * (size_t)tr[0], c->S->x + 3 * (size_t)tr[1],
                            c->S->x + 3 * (size_t)tr[2], s);
    double X[3], Xp[3];
    for (int k = 0; k < 3; k++) X[k] = a[k] + sx * (b[k] - a[k]), Xp[k] = a[k] + s * (b[k] - a[k]);
    const int64_t id = new_point(c, X, Xp);
    if (id < 0) return id;
    v = map_get(&c->pmap, key2(3, g, t), -1, &found);
    if (!v) return -2;
    *v = id;
    return id;
}

/* ------------------------------------------------- splitting a triangle */
/* A triangle (3 corner point ids, in order) with points on its edges and
 * segments inside, as the faces of that planar graph, triangulated. */
typedef struct poly_in {
    int64_t corner[3];
    const double *normal; /* orientation */
    /* points on edge k (corner k → k+1), unordered */
    int64_t *on_edge[3];
    size_t n_on[3];
    const seg *segs;
    size_t nseg;
} poly_in;

typedef struct lvert {
    int64_t pid;
    double u, v;
} lvert;

static double area2(const lvert *a, const lvert *b, const lvert *c) {
    return (b->u - a->u) * (c->v - a->v) - (b->v - a->v) * (c->u - a->u);
}

/* Triangles of the faces: out gets 3 point ids per triangle and, per face,
 * its first triangle index in face_start (faces + 1 entries). */
typedef struct tri_out {
    int64_t *t; /* 3 per triangle */
    size_t nt, capt;
    size_t *face_start; /* per face: its first triangle */
    size_t nf, capf;
} tri_out;

static int local_index(lvert *lv, int *n, int64_t pid, const cutter *c, const int ax[2]) {
    for (int i = 0; i < *n; i++)
        if (lv[i].pid == pid) return i;
    lv[*n].pid = pid;
    lv[*n].u = c->pt[pid].p[ax[0]];
    lv[*n].v = c->pt[pid].p[ax[1]];
    return (*n)++;
}

#define MAXL 256 /* points in one triangle's graph */

static int split_triangle(cutter *c, const poly_in *in, tri_out *out) {
    /* projection keeping the orientation */
    const double *n = in->normal;
    int k = fabs(n[0]) > fabs(n[1]) ? (fabs(n[0]) > fabs(n[2]) ? 0 : 2)
                                    : (fabs(n[1]) > fabs(n[2]) ? 1 : 2);
    int ax[2] = {(k + 1) % 3, (k + 2) % 3};
    if (n[k] < 0) {
        const int t = ax[0];
        ax[0] = ax[1], ax[1] = t;
    }
    lvert lv[MAXL];
    int nl = 0;
    int eu[4 * MAXL], ev[4 * MAXL], ne = 0;
    /* the boundary: each edge's points sorted along it */
    for (int e = 0; e < 3; e++) {
        if (nl + 2 + (int)in->n_on[e] > MAXL) return 0;
        const int a = local_index(lv, &nl, in->corner[e], c, ax);
        const int b = local_index(lv, &nl, in->corner[(e + 1) % 3], c, ax);
        int idx[MAXL];
        double par[MAXL];
        int m = 0;
        const double *A = c->pt[in->corner[e]].p, *B = c->pt[in->corner[(e + 1) % 3]].p;
        double d[3];
        sub3(B, A, d);
        const double dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        for (size_t q = 0; q < in->n_on[e]; q++) {
            const int li = local_index(lv, &nl, in->on_edge[e][q], c, ax);
            int dup = 0;
            for (int r = 0; r < m; r++) dup |= idx[r] == li;
            if (dup) continue;
            double w[3];
            sub3(c->pt[in->on_edge[e][q]].p, A, w);
            idx[m] = li;
            par[m] = (w[0] * d[0] + w[1] * d[1] + w[2] * d[2]) / dd;
            m++;
        }
        for (int i = 1; i < m; i++) /* insertion sort by parameter */
            for (int j = i; j > 0 && par[j] < par[j - 1]; j--) {
                const double tp = par[j];
                par[j] = par[j - 1], par[j - 1] = tp;
                const int ti = idx[j];
                idx[j] = idx[j - 1], idx[j - 1] = ti;
            }
        int prev = a;
        for (int i = 0; i < m; i++) eu[ne] = prev, ev[ne] = idx[i], ne++, prev = idx[i];
        eu[ne] = prev, ev[ne] = b, ne++;
    }
    for (size_t q = 0; q < in->nseg; q++) {
        if (nl + 2 > MAXL || ne + 1 > 4 * MAXL) return 0;
        const int a = local_index(lv, &nl, in->segs[q].p, c, ax);
        const int b = local_index(lv, &nl, in->segs[q].q, c, ax);
        if (a == b) continue;
        int dup = 0;
        for (int r = 0; r < ne && !dup; r++)
            dup = (eu[r] == a && ev[r] == b) || (eu[r] == b && ev[r] == a);
        if (!dup) eu[ne] = a, ev[ne] = b, ne++;
    }
    /* adjacency sorted by angle */
    int deg[MAXL], adj[MAXL][16];
    memset(deg, 0, sizeof deg);
    for (int e = 0; e < ne; e++) {
        if (deg[eu[e]] >= 16 || deg[ev[e]] >= 16) return 0;
        adj[eu[e]][deg[eu[e]]++] = ev[e];
        adj[ev[e]][deg[ev[e]]++] = eu[e];
    }
    for (int i = 0; i < nl; i++) {
        if (deg[i] < 2) return 0; /* a dangling segment: not a cut */
        for (int a = 1; a < deg[i]; a++)
            for (int b = a; b > 0; b--) {
                const int j0 = adj[i][b - 1], j1 = adj[i][b];
                const double t0 = atan2(lv[j0].v - lv[i].v, lv[j0].u - lv[i].u);
                const double t1 = atan2(lv[j1].v - lv[i].v, lv[j1].u - lv[i].u);
                if (t1 < t0)
                    adj[i][b - 1] = j1, adj[i][b] = j0;
                else
                    break;
            }
    }
    /* faces: left turns; each directed edge once */
    unsigned char used[MAXL][16];
    memset(used, 0, sizeof used);
    for (int s0 = 0; s0 < nl; s0++)
        for (int d0 = 0; d0 < deg[s0]; d0++) {
            if (used[s0][d0]) continue;
            int face[MAXL], nf = 0, u = s0, di = d0;
            while (!used[u][di] && nf < MAXL) {
                used[u][di] = 1;
                face[nf++] = u;
                const int v = adj[u][di];
                int kk = 0;
                while (kk < deg[v] && adj[v][kk] != u) kk++;
                di = (kk - 1 + deg[v]) % deg[v];
                u = v;
            }
            double A = 0;
            for (int i = 0; i < nf; i++) {
                const lvert *p = &lv[face[i]], *q = &lv[face[(i + 1) % nf]];
                A += p->u * q->v - q->u * p->v;
            }
            if (!(A > 0)) continue; /* the outside */
            /* ear clipping */
            PUSH(out->face_start, out->nf, out->capf, out->nt, oom);
            int m = nf, guard = 0;
            while (m > 3 && guard++ < 4 * MAXL) {
                int clipped = 0;
                for (int i = 0; i < m && !clipped; i++) {
                    const int ia = face[(i + m - 1) % m], ib = face[i], ic = face[(i + 1) % m];
                    if (!(area2(&lv[ia], &lv[ib], &lv[ic]) > 0)) continue;
                    int inside = 0;
                    for (int j = 0; j < m && !inside; j++) {
                        const int q = face[j];
                        if (q == ia || q == ib || q == ic) continue;
                        inside = area2(&lv[ia], &lv[ib], &lv[q]) >= 0 &&
                                 area2(&lv[ib], &lv[ic], &lv[q]) >= 0 &&
                                 area2(&lv[ic], &lv[ia], &lv[q]) >= 0;
                    }
                    if (inside) continue;
                    PUSH(out->t, out->nt, out->capt, lv[ia].pid, oom);
                    PUSH(out->t, out->nt, out->capt, lv[ib].pid, oom);
                    PUSH(out->t, out->nt, out->capt, lv[ic].pid, oom);
                    for (int j = i; j + 1 < m; j++) face[j] = face[j + 1];
                    m--;
                    clipped = 1;
                }
                if (!clipped) break;
            }
            if (m != 3) return 0;
            PUSH(out->t, out->nt, out->capt, lv[face[0]].pid, oom);
            PUSH(out->t, out->nt, out->capt, lv[face[1]].pid, oom);
            PUSH(out->t, out->nt, out->capt, lv[face[2]].pid, oom);
        }
    return 1;
oom:
    return -1;
}

/* ------------------------------------------------------ inside the surface */
/* Generalised winding number of S at p (Van Oosterom–Strackee solid angles). */
static double winding(const defo_mesh *S, const double *Sp, const double *p) {
    double w = 0;
    for (defo_index t = 0; t < S->num_tris; t++) {
        const defo_index *tr = S->tris + 3 * (size_t)t;
        double a[3], b[3], d[3];
        sub3(Sp + 3 * (size_t)tr[0], p, a);
        sub3(Sp + 3 * (size_t)tr[1], p, b);
        sub3(Sp + 3 * (size_t)tr[2], p, d);
        const double la = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]),
                     lb = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]),
                     ld = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        const double num = a[0] * (b[1] * d[2] - b[2] * d[1]) - a[1] * (b[0] * d[2] - b[2] * d[0]) +
                           a[2] * (b[0] * d[1] - b[1] * d[0]);
        const double den = la * lb * ld + (a[0] * b[0] + a[1] * b[1] + a[2] * b[2]) * ld +
                           (b[0] * d[0] + b[1] * d[1] + b[2] * d[2]) * la +
                           (d[0] * a[0] + d[1] * a[1] + d[2] * a[2]) * lb;
        w += 2 * atan2(num, den);
    }
    return w / (4 * M_PI_VAL);
}

/* ------------------------------------------------------------ the output */
typedef struct vout {
    map64 map; /* (point, piece) → vertex */
    defo_index *elem;
    double *bary;
    size_t nv, capv, capb;
    defo_index *tris;
    size_t nt, capt;
} vout;

/* λ of X in element e's corner tet (rest). */
static void bary_of(const cutter *c, defo_index e, const double *X, double lam[4]) {
    const defo_index *en = c->tets->elems + (size_t)c->P * (size_t)e;
    const double *X0 = c->tets->x + 3 * (size_t)en[0], *Di = c->dmi + 9 * (size_t)e;
    double d[3];
    sub3(X, X0, d);
    for (int r = 0; r < 3; r++)
        lam[r + 1] = Di[3 * r] * d[0] + Di[3 * r + 1] * d[1] + Di[3 * r + 2] * d[2];
    lam[0] = 1 - lam[1] - lam[2] - lam[3];
}

/* The vertex of point pid in piece comp (made bound to elem the first time). */
static defo_index vertex_of(cutter *c, vout *o, int64_t pid, defo_index comp, defo_index elem) {
    int found = 0;
    int64_t *v = map_get(&o->map, key2(6, pid, comp), (int64_t)o->nv, &found);
    if (!v) return -1;
    if (found) return (defo_index)*v;
    PUSH(o->elem, o->nv, o->capv, elem, oom);
    double lam[4];
    bary_of(c, elem, c->pt[pid].x, lam);
    size_t nb = 4 * (o->nv - 1);
    for (int k = 0; k < 4; k++) PUSH(o->bary, nb, o->capb, lam[k], oom);
    return (defo_index)(o->nv - 1);
oom:
    return -1;
}

static int emit(vout *o, defo_index a, defo_index b, defo_index d) {
    if (a < 0 || b < 0 || d < 0) return 0;
    PUSH(o->tris, o->nt, o->capt, a, oom);
    PUSH(o->tris, o->nt, o->capt, b, oom);
    PUSH(o->tris, o->nt, o->capt, d, oom);
    return 1;
oom:
    return 0;
}

static int cmp_seg(const void *pa, const void *pb) {
    const seg *a = pa, *b = pb;
    if (a->owner != b->owner) return a->owner < b->owner ? -1 : 1;
    if (a->other != b->other) return a->other < b->other ? -1 : 1;
    return 0;
}

static void cutter_free(cutter *c) {
    defo_free(c->pt);
    map_free(&c->pmap);
    map_free(&c->smap);
    defo_free(c->sedge);
    defo_free(c->cf);
    map_free(&c->cvmap);
    map_free(&c->cemap);
    defo_free(c->cv);
    defo_free(c->ce);
    defo_free(c->sseg);
    defo_free(c->cseg);
    defo_embed_grid_free(&c->g);
    defo_free(c->dmi);
    defo_free(c->comp);
    defo_free(c->Sp);
}

/* S perturbed: every vertex moved by 1e-8 of the surface's size in a
 * direction of its own (a hash of its index), so no vertex of S lies on a
 * crack face's plane, no edge of S meets a crack edge, no triangle is
 * coplanar with a crack face — the coincidences a mesh and a surface
 * aligned to the same grid are full of.  Every decision (which edge pierces
 * which face, the layout of a split triangle, sides, insideness) uses the
 * perturbed S, so the pieces are closed; the output positions are those of
 * the exact S (the limit of the perturbed cut as the perturbation vanishes:
 * some of its triangles then have no area). */
static int perturb(cutter *c) {
    const defo_mesh *S = c->S;
    c->Sp = defo_malloc(3 * (size_t)S->num_nodes * sizeof(double) + 1);
    if (!c->Sp) return 1;
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (defo_index i = 0; i < S->num_nodes; i++)
        for (int k = 0; k < 3; k++)
            lo[k] = fmin(lo[k], S->x[3 * (size_t)i + k]),
            hi[k] = fmax(hi[k], S->x[3 * (size_t)i + k]);
    const double eps =
        1e-8 * sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                    (hi[2] - lo[2]) * (hi[2] - lo[2]));
    for (defo_index i = 0; i < S->num_nodes; i++) {
        const uint64_t h = mix((uint64_t)i + 0x9E3779B97F4A7C15ull);
        for (int k = 0; k < 3; k++) {
            const double u = (double)((h >> (21 * k)) & 0x1FFFFF) / (double)0x1FFFFF;
            c->Sp[3 * (size_t)i + k] = S->x[3 * (size_t)i + k] + eps * (2 * u - 1);
        }
    }
    return 0;
}

/* ------------------------------------------------------------ the cut */
defo_status defo_embed_create_cut(const defo_mesh *tets, const defo_mesh *S, defo_embed **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "embed cut: out is NULL");
    *out = NULL;
    /* the plain binding checks the inputs (and is the answer without cracks) */
    defo_embed *plain = NULL;
    defo_status st = defo_embed_create(tets, S, &plain);
    if (st) return st;
    cutter c;
    memset(&c, 0, sizeof c);
    c.tets = tets;
    c.S = S;
    c.P = tets->nodes_per_elem;
    vout o;
    memset(&o, 0, sizeof o);
    defo_index nc = 0;
    c.comp = defo_malloc((size_t)tets->num_elems * sizeof *c.comp + 1);
    c.dmi = defo_malloc(9 * (size_t)tets->num_elems * sizeof(double) + 1);
    if (!c.comp || !c.dmi) goto oom;
    st = defo_mesh_components(tets, c.comp, &nc);
    if (st) goto fail;
    if (nc > 1) st = find_cracks(&c);
    if (st) goto fail;
    if (c.ncf == 0) { /* nothing separated: the plain binding */
        cutter_free(&c);
        *out = plain;
        return DEFO_OK;
    }
    for (defo_index e = 0; e < tets->num_elems; e++) {
        const defo_index *en = tets->elems + (size_t)c.P * (size_t)e;
        defo_mat3 D, Di;
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                D.m[k][j] = tets->x[3 * (size_t)en[j + 1] + k] - tets->x[3 * (size_t)en[0] + k];
        if (!defo_m3_inverse(D, &Di)) {
            st = defo_error(DEFO_ERR_INVALID_MESH, "embed cut: element %ld is flat", (long)e);
            goto fail;
        }
        memcpy(c.dmi + 9 * (size_t)e, Di.m, 9 * sizeof(double));
    }
    st = defo_embed_grid_build(&c.g, tets);
    if (st) goto fail;
    if (perturb(&c)) goto oom;
    /* S edges */
    const defo_index nt = S->num_tris;
    int64_t *tedge = defo_malloc(3 * (size_t)nt * sizeof *tedge + 1);
    if (!tedge) goto oom;
    for (defo_index t = 0; t < nt; t++)
        for (int k = 0; k < 3; k++) {
            defo_index a = S->tris[3 * (size_t)t + k], b = S->tris[3 * (size_t)t + (k + 1) % 3];
            if (a > b) {
                const defo_index q = a;
                a = b, b = q;
            }
            int found = 0;
            int64_t *v = map_get(&c.smap, key2(0, a, b), (int64_t)(c.nse / 2), &found);
            if (!v) {
                defo_free(tedge);
                goto oom;
            }
            const int64_t id = *v;
            if (!found) {
                PUSH(c.sedge, c.nse, c.capse, a, oom_te);
                PUSH(c.sedge, c.nse, c.capse, b, oom_te);
            }
            tedge[3 * (size_t)t + k] = id;
        }
    /* 1: the intersections */
    for (defo_index t = 0; t < nt; t++) {
        const defo_index *tr = S->tris + 3 * (size_t)t;
        double lo[3], hi[3];
        for (int k = 0; k < 3; k++) {
            const double *Sp = c.Sp;
            lo[k] = fmin(Sp[3 * (size_t)tr[0] + k],
                         fmin(Sp[3 * (size_t)tr[1] + k], Sp[3 * (size_t)tr[2] + k]));
            hi[k] = fmax(Sp[3 * (size_t)tr[0] + k],
                         fmax(Sp[3 * (size_t)tr[1] + k], Sp[3 * (size_t)tr[2] + k]));
        }
        for (size_t f = 0; f < c.ncf; f++) {
            const double *v = c.cf[f].v;
            int apart = 0;
            for (int k = 0; k < 3 && !apart; k++)
                apart = fmax(v[k], fmax(v[3 + k], v[6 + k])) < lo[k] ||
                        fmin(v[k], fmin(v[3 + k], v[6 + k])) > hi[k];
            if (apart) continue;
            int64_t pts[6];
            int np = 0;
            for (int k = 0; k < 3; k++) {
                const int64_t p = ef_point(&c, tedge[3 * (size_t)t + k], (int64_t)f);
                if (p < -1) goto oom_te;
                if (p >= 0) pts[np++] = p;
            }
            for (int k = 0; k < 3; k++) {
                const int64_t p = gt_point(&c, c.cf[f].eid[k], t);
                if (p < -1) goto oom_te;
                if (p >= 0) pts[np++] = p;
            }
            if (np == 0) continue;
            if (np != 2) {
                c.degenerate++;
                continue;
            }
            seg sg = {pts[0], pts[1], t, (int64_t)f};
            PUSH(c.sseg, c.nss, c.capss, sg, oom_te);
            seg sf = {pts[0], pts[1], (int64_t)f, t};
            PUSH(c.cseg, c.ncs, c.capcs, sf, oom_te);
        }
    }
    qsort(c.sseg, c.nss, sizeof *c.sseg, cmp_seg);
    qsort(c.cseg, c.ncs, sizeof *c.cseg, cmp_seg);
    tri_out to;
    memset(&to, 0, sizeof to);
    /* 3: the caps, first (their cut points bound to the crack's elements) */
    size_t q = 0;
    for (size_t f = 0; f < c.ncf; f++) {
        const cface *cf = &c.cf[f];
        size_t q1 = q;
        while (q1 < c.ncs && c.cseg[q1].owner == (int64_t)f) q1++;
        double nrm[3], u[3], w[3];
        sub3(cf->v + 3, cf->v, u);
        sub3(cf->v + 6, cf->v, w);
        nrm[0] = u[1] * w[2] - u[2] * w[1], nrm[1] = u[2] * w[0] - u[0] * w[2],
        nrm[2] = u[0] * w[1] - u[1] * w[0];
        poly_in in;
        memset(&in, 0, sizeof in);
        int64_t *on[3] = {NULL, NULL, NULL};
        size_t non[3] = {0, 0, 0}, capon[3] = {0, 0, 0};
        for (int k = 0; k < 3; k++) {
            in.corner[k] = c_vertex(&c, cf->vid[k]);
            if (in.corner[k] < 0) goto oom_te;
        }
        /* points on the face's edges: GT points of its edges with the S
         * triangles that cut it */
        for (size_t r = q; r < q1; r++)
            for (int k = 0; k < 3; k++) {
                int found = 0;
                int64_t *v = map_get(&c.pmap, key2(3, cf->eid[k], c.cseg[r].other), -1, &found);
                if (!v) goto oom_te;
                if (found && *v >= 0) PUSH(on[k], non[k], capon[k], *v, oom_on);
            }
        for (int k = 0; k < 3; k++) in.on_edge[k] = on[k], in.n_on[k] = non[k];
        in.normal = nrm;
        in.segs = c.cseg + q;
        in.nseg = q1 - q;
        to.nt = to.nf = 0;
        int ok = 1;
        if (q1 > q) {
            ok = split_triangle(&c, &in, &to);
            if (ok < 0) goto oom_on;
        }
        if (q1 == q || !ok) { /* whole: one face, the triangle itself */
            if (!ok) c.degenerate++;
            to.nt = to.nf = 0;
            PUSH(to.face_start, to.nf, to.capf, (size_t)0, oom_on);
            for (int k = 0; k < 3; k++) PUSH(to.t, to.nt, to.capt, in.corner[k], oom_on);
        }
        for (size_t fi = 0; fi < to.nf; fi++) {
            const size_t t0 = to.face_start[fi],
                         t1 = fi + 1 < to.nf ? to.face_start[fi + 1] : to.nt;
            /* inside S?  the first triangle's centroid */
            double X[3];
            for (int k = 0; k < 3; k++)
                X[k] =
                    (c.pt[to.t[t0]].p[k] + c.pt[to.t[t0 + 1]].p[k] + c.pt[to.t[t0 + 2]].p[k]) / 3;
            if (!(winding(S, c.Sp, X) > 0.5)) continue;
            for (int side = 0; side < 2; side++)
                for (size_t tt = t0; tt < t1; tt += 3) {
                    defo_index vv[3];
                    for (int k = 0; k < 3; k++)
                        vv[k] =
                            vertex_of(&c, &o, to.t[tt + (size_t)k], cf->comp[side], cf->elem[side]);
                    if (!(side == 0 ? emit(&o, vv[0], vv[1], vv[2])
                                    : emit(&o, vv[0], vv[2], vv[1])))
                        goto oom_on;
                }
        }
        for (int k = 0; k < 3; k++) defo_free(on[k]);
        q = q1;
        continue;
    oom_on:
        for (int k = 0; k < 3; k++) defo_free(on[k]);
        defo_free(to.t);
        defo_free(to.face_start);
        goto oom_te;
    }
    /* 2: S, split where cut */
    q = 0;
    for (defo_index t = 0; t < nt; t++) {
        const defo_index *tr = S->tris + 3 * (size_t)t;
        size_t q1 = q;
        while (q1 < c.nss && c.sseg[q1].owner == t) q1++;
        poly_in in;
        memset(&in, 0, sizeof in);
        int64_t *on[3] = {NULL, NULL, NULL};
        size_t non[3] = {0, 0, 0}, capon[3] = {0, 0, 0};
        for (int k = 0; k < 3; k++) {
            in.corner[k] = s_vertex(&c, tr[k]);
            if (in.corner[k] < 0) goto oom_s;
        }
        for (size_t r = q; r < q1; r++)
            for (int k = 0; k < 3; k++) {
                int found = 0;
                int64_t *v = map_get(&c.pmap, key2(2, tedge[3 * (size_t)t + k], c.sseg[r].other),
                                     -1, &found);
                if (!v) goto oom_s;
                if (found && *v >= 0) PUSH(on[k], non[k], capon[k], *v, oom_s);
            }
        double nrm[3], u[3], w[3];
        sub3(c.Sp + 3 * (size_t)tr[1], c.Sp + 3 * (size_t)tr[0], u);
        sub3(c.Sp + 3 * (size_t)tr[2], c.Sp + 3 * (size_t)tr[0], w);
        nrm[0] = u[1] * w[2] - u[2] * w[1], nrm[1] = u[2] * w[0] - u[0] * w[2],
        nrm[2] = u[0] * w[1] - u[1] * w[0];
        for (int k = 0; k < 3; k++) in.on_edge[k] = on[k], in.n_on[k] = non[k];
        in.normal = nrm;
        in.segs = c.sseg + q;
        in.nseg = q1 - q;
        to.nt = to.nf = 0;
        int ok = 1;
        if (q1 > q) {
            ok = split_triangle(&c, &in, &to);
            if (ok < 0) goto oom_s;
        }
        if (q1 == q || !ok) {
            if (!ok) c.degenerate++;
            to.nt = to.nf = 0;
            PUSH(to.face_start, to.nf, to.capf, (size_t)0, oom_s);
            for (int k = 0; k < 3; k++) PUSH(to.t, to.nt, to.capt, in.corner[k], oom_s);
        }
        for (size_t fi = 0; fi < to.nf; fi++) {
            const size_t t0 = to.face_start[fi],
                         t1 = fi + 1 < to.nf ? to.face_start[fi + 1] : to.nt;
            double X[3], lam[4];
            for (int k = 0; k < 3; k++)
                X[k] =
                    (c.pt[to.t[t0]].p[k] + c.pt[to.t[t0 + 1]].p[k] + c.pt[to.t[t0 + 2]].p[k]) / 3;
            defo_index elem = -1;
            defo_embed_closest_tet(&c.g, tets, c.dmi, X, &elem, lam);
            const defo_index piece = c.comp[elem];
            for (size_t tt = t0; tt < t1; tt += 3) {
                defo_index vv[3];
                for (int k = 0; k < 3; k++) {
                    const int64_t pid = to.t[tt + (size_t)k];
                    defo_index be = elem;
                    /* a vertex of S: the element holding it (in this piece) */
                    for (int j = 0; j < 3; j++)
                        if (pid == in.corner[j] && c.comp[plain->elem[tr[j]]] == piece)
                            be = plain->elem[tr[j]];
                    vv[k] = vertex_of(&c, &o, pid, piece, be);
                }
                if (!emit(&o, vv[0], vv[1], vv[2])) goto oom_s;
            }
        }
        for (int k = 0; k < 3; k++) defo_free(on[k]);
        q = q1;
        continue;
    oom_s:
        for (int k = 0; k < 3; k++) defo_free(on[k]);
        defo_free(to.t);
        defo_free(to.face_start);
        goto oom_te;
    }
    defo_free(to.t);
    defo_free(to.face_start);
    defo_free(tedge);
    /* the embedding */
    {
        defo_embed *e = defo_calloc(1, sizeof *e);
        if (!e) goto oom;
        e->tets = tets;
        e->nv = (defo_index)o.nv;
        e->nt = (defo_index)(o.nt / 3);
        e->elem = o.elem;
        e->bary = o.bary;
        e->tris = o.tris;
        o.elem = NULL, o.bary = NULL, o.tris = NULL;
        e->normal0 = defo_calloc(3 * (size_t)e->nv + 1, sizeof(double));
        if (!e->normal0) {
            defo_embed_destroy(e);
            goto oom;
        }
        /* rest positions from the bindings, area-weighted normals */
        double *X = defo_malloc(3 * (size_t)e->nv * sizeof(double) + 1);
        if (!X || defo_embed_update(e, tets->x, NULL, X, NULL)) {
            defo_free(X);
            defo_embed_destroy(e);
            goto oom;
        }
        for (defo_index t = 0; t < e->nt; t++) {
            const defo_index *tr = e->tris + 3 * (size_t)t;
            double u[3], w[3];
            sub3(X + 3 * (size_t)tr[1], X + 3 * (size_t)tr[0], u);
            sub3(X + 3 * (size_t)tr[2], X + 3 * (size_t)tr[0], w);
            const double n[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2],
                                 u[0] * w[1] - u[1] * w[0]};
            for (int i = 0; i < 3; i++)
                for (int k = 0; k < 3; k++) e->normal0[3 * (size_t)tr[i] + (size_t)k] += n[k];
        }
        for (defo_index i = 0; i < e->nv; i++) {
            double *n = e->normal0 + 3 * (size_t)i;
            const double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
            if (l > 0)
                for (int k = 0; k < 3; k++) n[k] /= l;
        }
        defo_free(X);
        if (defo_embed_make_covec(e)) {
            defo_embed_destroy(e);
            goto oom;
        }
        e->info = plain->info;
        e->info.num_vertices = e->nv;
        e->info.degenerate = (defo_index)c.degenerate;
        e->info.cut_faces = (defo_index)c.ncf;
        defo_embed_destroy(plain);
        map_free(&o.map);
        cutter_free(&c);
        *out = e;
        return DEFO_OK;
    }
oom_te:
    defo_free(tedge);
oom:
    st = defo_error_oom("embed cut", 0);
fail:
    map_free(&o.map);
    defo_free(o.elem);
    defo_free(o.bary);
    defo_free(o.tris);
    cutter_free(&c);
    defo_embed_destroy(plain);
    return st;
}

defo_index defo_embed_num_triangles(const defo_embed *e) {
    return e ? e->nt : 0;
}
const defo_index *defo_embed_triangles(const defo_embed *e) {
    return e ? e->tris : NULL;
}
