/*
 * collision/contact_surface.c — a body's contact surface (defo/contact.h):
 * the triangles, edges and vertices of its boundary, their hierarchies
 * (refit every update) and pseudo-normals, and the rest-state exclusions of
 * self contact.
 *
 * Triangles: the boundary faces (defo_mesh_boundary), a tet10 face as the 4
 * flat triangles of defo_tri6_split through its 6 nodes (what pictures and
 * OBJ files draw), or a triangle mesh's own triangles (two-sided).  Edges:
 * each unordered node pair of the triangles once, with its one or two
 * triangles.  Vertices: the nodes on the triangles, ascending.
 *
 * Pseudo-normals (Bærentzen & Aanæs 2005, the sign of a signed distance):
 * unit face normals n_f; an edge's n_e = Σ of its faces' n_f; a vertex's n_v
 * = Σ of its faces' n_f weighted by the face angle at the vertex.  With them
 * sign((p − q)·n̂) is the inside/outside of p for the closest point q on a
 * closed surface, whatever feature q lies on.
 *
 * Exclusions (self contact only): a vertex and a triangle, or two edges, that
 * share a node or are within 2·reach of each other at rest never pair: what
 * touches in the rest shape is not contact.  Stored per vertex and per edge
 * as sorted lists (binary search).
 *
 * Invariants: every array is sized at create; an update allocates nothing.
 */
#include "collision/contact_internal.h"

#include "base/parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

defo_contact_surface_def defo_default_contact_surface_def(void) {
    defo_contact_surface_def d;
    memset(&d, 0, sizeof d);
    d.thickness = 0;
    d.reach = 0;
    d.two_sided = 0;
    d.self_contact = 0;
    return d;
}

void defo_contact_surface_destroy(defo_contact_surface *s) {
    if (!s) return;
    defo_bvh_destroy(s->tri_bvh);
    defo_bvh_destroy(s->edge_bvh);
    void *a[] = {s->tri_edge,  s->tri,        s->edge, s->edge_tri,  s->vert,
                 s->vert_of,   s->vtri_start, s->vtri, s->fn,        s->en,
                 s->vn,        s->tbox,       s->ebox, s->ex_vstart, s->ex_vtri,
                 s->ex_estart, s->ex_edge,    s->wtmp, s->inside};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) defo_free(a[i]);
    defo_free(s);
}

typedef struct edge_key {
    defo_index a, b, tri;
} edge_key;

static int edge_cmp(const void *pa, const void *pb) {
    const edge_key *x = pa, *y = pb;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    return (x->tri > y->tri) - (x->tri < y->tri);
}

static int index_cmp(const void *pa, const void *pb) {
    const defo_index x = *(const defo_index *)pa, y = *(const defo_index *)pb;
    return (x > y) - (x < y);
}

/* The triangles of the mesh's boundary (or its own triangles): 3 nodes each
 * in *tri (allocated), their count in *nt; *two_sided set for a triangle
 * mesh. */
static defo_status boundary_triangles(const defo_mesh *mesh, defo_index **tri, defo_index *nt,
                                      int *two_sided) {
    *tri = NULL;
    *nt = 0;
    if (mesh->num_elems == 0) {
        if (mesh->num_tris == 0)
            return defo_error(DEFO_ERR_INVALID_MESH, "contact surface: the mesh has no element "
                                                     "and no triangle");
        const int p = mesh->nodes_per_tri;
        const int split = p == 6 ? 4 : 1;
        defo_index *t = defo_malloc((size_t)mesh->num_tris * (size_t)split * 3 * sizeof *t + 1);
        if (!t) return defo_error_oom("contact surface", (size_t)mesh->num_tris * 12);
        defo_index k = 0;
        for (defo_index f = 0; f < mesh->num_tris; f++) {
            const defo_index *v = mesh->tris + (size_t)f * (size_t)p;
            for (int s = 0; s < split; s++, k++)
                for (int c = 0; c < 3; c++)
                    t[3 * (size_t)k + (size_t)c] = v[split == 4 ? defo_tri6_split[s][c] : c];
        }
        *tri = t;
        *nt = k;
        *two_sided = 1;
        return DEFO_OK;
    }
    defo_boundary bd;
    defo_status st = defo_mesh_boundary(mesh, mesh->order == 2, &bd);
    if (st) return defo_error_prefix("contact surface");
    if (mesh->nodes_per_elem == 3) *two_sided = 1; /* a shell: both sides are surface */
    const int split = bd.nodes_per_face == 6 ? 4 : 1;
    if (bd.num_faces == 0) {
        defo_boundary_free(&bd);
        return defo_error(DEFO_ERR_INVALID_MESH, "contact surface: the mesh has no boundary face");
    }
    defo_index *t = defo_malloc((size_t)bd.num_faces * (size_t)split * 3 * sizeof *t + 1);
    if (!t) {
        defo_boundary_free(&bd);
        return defo_error_oom("contact surface", (size_t)bd.num_faces * 12);
    }
    defo_index k = 0;
    for (defo_index f = 0; f < bd.num_faces; f++) {
        const defo_index *v = bd.faces + (size_t)f * (size_t)bd.nodes_per_face;
        for (int s = 0; s < split; s++, k++)
            for (int c = 0; c < 3; c++)
                t[3 * (size_t)k + (size_t)c] = v[split == 4 ? defo_tri6_split[s][c] : c];
    }
    defo_boundary_free(&bd);
    *tri = t;
    *nt = k;
    return DEFO_OK;
}

static void tri_box(const defo_contact_surface *s, const double *x, defo_index t, double pad,
                    double *b) {
    const defo_index *v = s->tri + 3 * (size_t)t;
    for (int k = 0; k < 3; k++) {
        b[k] = INFINITY;
        b[3 + k] = -INFINITY;
    }
    for (int c = 0; c < 3; c++) {
        const double *p = x + 3 * (size_t)v[c];
        for (int k = 0; k < 3; k++) {
            b[k] = fmin(b[k], p[k] - pad);
            b[3 + k] = fmax(b[3 + k], p[k] + pad);
        }
    }
}

static void edge_box(const defo_contact_surface *s, const double *x, defo_index e, double pad,
                     double *b) {
    const double *p = x + 3 * (size_t)s->edge[2 * (size_t)e];
    const double *q = x + 3 * (size_t)s->edge[2 * (size_t)e + 1];
    for (int k = 0; k < 3; k++) {
        b[k] = fmin(p[k], q[k]) - pad;
        b[3 + k] = fmax(p[k], q[k]) + pad;
    }
}

/* Rest-state neighbourhoods of self contact (collected with the rest
 * hierarchies, before they are refit to anything). */
typedef struct ex_ctx {
    const defo_contact_surface *s;
    const double *x;
    const double *p; /* vertex position, or NULL for an edge query */
    defo_index item;
    double r;
    defo_index *buf;
    defo_index count, cap;
    int oom;
} ex_ctx;

static void ex_push(ex_ctx *c, defo_index v) {
    if (c->count == c->cap) {
        defo_index nc = c->cap ? 2 * c->cap : 64;
        defo_index *nb = defo_realloc(c->buf, (size_t)nc * sizeof *nb);
        if (!nb) {
            c->oom = 1;
            return;
        }
        c->buf = nb;
        c->cap = nc;
    }
    c->buf[c->count++] = v;
}

static int ex_tri(void *vctx, defo_index t) {
    ex_ctx *c = vctx;
    const defo_index *v = c->s->tri + 3 * (size_t)t;
    const defo_index node = c->s->vert[c->item];
    int near = v[0] == node || v[1] == node || v[2] == node;
    if (!near) {
        double w[3];
        const double d2 =
            defo_point_triangle_closest(c->p, c->x + 3 * (size_t)v[0], c->x + 3 * (size_t)v[1],
                                        c->x + 3 * (size_t)v[2], w, NULL);
        near = d2 < c->r * c->r;
    }
    if (near) ex_push(c, t);
    return c->oom;
}

static int ex_edge(void *vctx, defo_index e) {
    ex_ctx *c = vctx;
    const defo_index *a = c->s->edge + 2 * (size_t)c->item, *b = c->s->edge + 2 * (size_t)e;
    int near = a[0] == b[0] || a[0] == b[1] || a[1] == b[0] || a[1] == b[1];
    if (!near) {
        double s, t;
        const double d2 =
            defo_segment_segment_closest(c->x + 3 * (size_t)a[0], c->x + 3 * (size_t)a[1],
                                         c->x + 3 * (size_t)b[0], c->x + 3 * (size_t)b[1], &s, &t);
        near = d2 < c->r * c->r;
    }
    if (near) ex_push(c, e);
    return c->oom;
}

static defo_status build_exclusions(defo_contact_surface *s, const double *x) {
    const double r = 2.0 * s->reach;
    ex_ctx c;
    memset(&c, 0, sizeof c);
    c.s = s;
    c.x = x;
    c.r = r;
    s->ex_vstart = defo_malloc(((size_t)s->nv + 1) * sizeof *s->ex_vstart);
    s->ex_estart = defo_malloc(((size_t)s->ne + 1) * sizeof *s->ex_estart);
    if (!s->ex_vstart || !s->ex_estart) return defo_error_oom("contact exclusions", 0);
    /* vertices: triangles within r */
    size_t total = 0, cap = 0;
    defo_index *list = NULL;
    for (int pass = 0; pass < 2; pass++) {
        const defo_index items = pass == 0 ? s->nv : s->ne;
        int64_t *start = pass == 0 ? s->ex_vstart : s->ex_estart;
        total = 0;
        for (defo_index i = 0; i < items; i++) {
            c.count = 0;
            c.item = i;
            double q[6];
            if (pass == 0) {
                c.p = x + 3 * (size_t)s->vert[i];
                for (int k = 0; k < 3; k++) q[k] = c.p[k] - r, q[3 + k] = c.p[k] + r;
                defo_bvh_query(s->tri_bvh, q, ex_tri, &c);
            } else {
                edge_box(s, x, i, r, q);
                defo_bvh_query(s->edge_bvh, q, ex_edge, &c);
            }
            if (c.oom) break;
            qsort(c.buf, (size_t)c.count, sizeof *c.buf, index_cmp);
            start[i] = (int64_t)total;
            if (total + (size_t)c.count > cap) {
                size_t nc = cap ? 2 * cap : 1024;
                while (nc < total + (size_t)c.count) nc *= 2;
                defo_index *nl = defo_realloc(list, nc * sizeof *nl);
                if (!nl) {
                    c.oom = 1;
                    break;
                }
                list = nl;
                cap = nc;
            }
            memcpy(list + total, c.buf, (size_t)c.count * sizeof *list);
            total += (size_t)c.count;
        }
        if (c.oom) break;
        start[items] = (int64_t)total;
        defo_index *own = defo_malloc((total + 1) * sizeof *own);
        if (!own) {
            c.oom = 1;
            break;
        }
        memcpy(own, list, total * sizeof *own);
        if (pass == 0)
            s->ex_vtri = own;
        else
            s->ex_edge = own;
    }
    defo_free(list);
    defo_free(c.buf);
    return c.oom ? defo_error_oom("contact exclusions", total * sizeof(defo_index)) : DEFO_OK;
}

int defo_contact_excluded(const defo_contact_surface *s, int edge, defo_index item,
                          defo_index other) {
    const int64_t *start = edge ? s->ex_estart : s->ex_vstart;
    const defo_index *list = edge ? s->ex_edge : s->ex_vtri;
    int64_t lo = start[item], hi = start[item + 1];
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (list[mid] == other) return 1;
        if (list[mid] < other)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

defo_status defo_contact_surface_create(const defo_mesh *mesh, const defo_contact_surface_def *def,
                                        defo_contact_surface **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact surface: out is NULL");
    *out = NULL;
    if (!mesh || !def)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact surface: missing argument");
    if (!(def->thickness > 0) || !isfinite(def->thickness))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact surface: thickness %g is not > 0",
                          def->thickness);
    if (!(def->reach >= 0) || !isfinite(def->reach))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact surface: reach %g is not >= 0",
                          def->reach);
    defo_contact_surface *s = defo_calloc(1, sizeof *s);
    if (!s) return defo_error_oom("contact surface", sizeof *s);
    s->num_nodes = mesh->num_nodes;
    s->two_sided = def->two_sided != 0;
    s->self_contact = def->self_contact != 0;
    defo_status st = boundary_triangles(mesh, &s->tri, &s->nt, &s->two_sided);
    if (st) {
        defo_free(s);
        return st;
    }
    const defo_index nt = s->nt;
    /* edges */
    edge_key *ek = defo_malloc(3 * (size_t)nt * sizeof *ek + 1);
    s->vert_of = defo_malloc(((size_t)mesh->num_nodes + 1) * sizeof *s->vert_of);
    if (!ek || !s->vert_of) {
        defo_free(ek);
        defo_contact_surface_destroy(s);
        return defo_error_oom("contact surface edges", 3 * (size_t)nt * sizeof *ek);
    }
    for (defo_index t = 0; t < nt; t++)
        for (int c = 0; c < 3; c++) {
            defo_index a = s->tri[3 * (size_t)t + (size_t)c],
                       b = s->tri[3 * (size_t)t + (size_t)((c + 1) % 3)];
            edge_key *k = &ek[3 * (size_t)t + (size_t)c];
            k->a = a < b ? a : b;
            k->b = a < b ? b : a;
            k->tri = t;
        }
    qsort(ek, 3 * (size_t)nt, sizeof *ek, edge_cmp);
    defo_index ne = 0;
    for (size_t i = 0; i < 3 * (size_t)nt; i++)
        if (i == 0 || ek[i].a != ek[i - 1].a || ek[i].b != ek[i - 1].b) ne++;
    s->ne = ne;
    s->edge = defo_malloc(2 * (size_t)ne * sizeof *s->edge + 1);
    s->edge_tri = defo_malloc(2 * (size_t)ne * sizeof *s->edge_tri + 1);
    s->tri_edge = defo_malloc(3 * (size_t)nt * sizeof *s->tri_edge + 1);
    if (!s->edge || !s->edge_tri || !s->tri_edge) {
        defo_free(ek);
        defo_contact_surface_destroy(s);
        return defo_error_oom("contact surface edges", 2 * (size_t)ne * sizeof(defo_index));
    }
    {
        defo_index e = -1;
        for (size_t i = 0; i < 3 * (size_t)nt; i++) {
            if (i == 0 || ek[i].a != ek[i - 1].a || ek[i].b != ek[i - 1].b) {
                e++;
                s->edge[2 * (size_t)e] = ek[i].a;
                s->edge[2 * (size_t)e + 1] = ek[i].b;
                s->edge_tri[2 * (size_t)e] = ek[i].tri;
                s->edge_tri[2 * (size_t)e + 1] = -1;
            } else if (s->edge_tri[2 * (size_t)e + 1] < 0) {
                s->edge_tri[2 * (size_t)e + 1] = ek[i].tri;
            }
            /* which edge of its triangle this is */
            const defo_index *tv = s->tri + 3 * (size_t)ek[i].tri;
            for (int c = 0; c < 3; c++) {
                const defo_index a = tv[c], b = tv[(c + 1) % 3];
                if ((a == ek[i].a && b == ek[i].b) || (a == ek[i].b && b == ek[i].a))
                    s->tri_edge[3 * (size_t)ek[i].tri + (size_t)c] = e;
            }
        }
    }
    defo_free(ek);
    /* vertices and their triangles */
    for (defo_index i = 0; i < mesh->num_nodes; i++) s->vert_of[i] = -1;
    defo_index nv = 0;
    for (size_t j = 0; j < 3 * (size_t)nt; j++)
        if (s->vert_of[s->tri[j]] < 0) s->vert_of[s->tri[j]] = 0, nv++;
    s->nv = nv;
    s->vert = defo_malloc(((size_t)nv + 1) * sizeof *s->vert);
    s->vtri_start = defo_calloc((size_t)nv + 2, sizeof *s->vtri_start);
    s->vtri = defo_malloc(3 * (size_t)nt * sizeof *s->vtri + 1);
    s->fn = defo_malloc(3 * (size_t)nt * sizeof(double) + 1);
    s->en = defo_malloc(3 * (size_t)ne * sizeof(double) + 1);
    s->vn = defo_malloc(3 * (size_t)nv * sizeof(double) + 1);
    s->tbox = defo_malloc(6 * (size_t)nt * sizeof(double) + 1);
    s->ebox = defo_malloc(6 * (size_t)ne * sizeof(double) + 1);
    s->wtmp = defo_malloc(((size_t)nv + 1) * sizeof(double));
    s->inside = defo_malloc(((size_t)nv + 1) * sizeof *s->inside);
    if (s->inside)
        for (defo_index v = 0; v < nv; v++) s->inside[v] = -1;
    if (!s->inside || !s->vert || !s->vtri_start || !s->vtri || !s->fn || !s->en || !s->vn ||
        !s->tbox || !s->ebox || !s->wtmp) {
        defo_contact_surface_destroy(s);
        return defo_error_oom("contact surface", 24 * (size_t)nt * sizeof(double));
    }
    nv = 0;
    for (defo_index i = 0; i < mesh->num_nodes; i++)
        if (s->vert_of[i] >= 0) s->vert[nv] = i, s->vert_of[i] = nv++;
    for (size_t j = 0; j < 3 * (size_t)nt; j++) s->vtri_start[s->vert_of[s->tri[j]] + 1]++;
    for (defo_index v = 0; v < nv; v++) s->vtri_start[v + 1] += s->vtri_start[v];
    {
        int64_t *fill = defo_malloc(((size_t)nv + 1) * sizeof *fill);
        if (!fill) {
            defo_contact_surface_destroy(s);
            return defo_error_oom("contact surface", (size_t)nv * 8);
        }
        memcpy(fill, s->vtri_start, (size_t)nv * sizeof *fill);
        for (size_t j = 0; j < 3 * (size_t)nt; j++)
            s->vtri[fill[s->vert_of[s->tri[j]]]++] = (defo_index)(j / 3);
        defo_free(fill);
    }
    /* mean edge at rest, reach, thickness */
    double len = 0;
    for (defo_index e = 0; e < ne; e++) {
        const double *p = mesh->x + 3 * (size_t)s->edge[2 * (size_t)e];
        const double *q = mesh->x + 3 * (size_t)s->edge[2 * (size_t)e + 1];
        len += sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) +
                    (p[2] - q[2]) * (p[2] - q[2]));
    }
    s->mean_edge = ne > 0 ? len / (double)ne : 0.0;
    s->thickness = def->thickness;
    s->reach = fmax(def->reach > 0 ? def->reach : s->mean_edge, def->thickness);
    /* hierarchies at rest */
    for (defo_index t = 0; t < nt; t++) tri_box(s, mesh->x, t, 0.0, s->tbox + 6 * (size_t)t);
    for (defo_index e = 0; e < ne; e++) edge_box(s, mesh->x, e, 0.0, s->ebox + 6 * (size_t)e);
    st = defo_bvh_create(s->tbox, nt, &s->tri_bvh);
    if (!st) st = defo_bvh_create(s->ebox, ne, &s->edge_bvh);
    if (!st && s->self_contact) st = build_exclusions(s, mesh->x);
    if (!st) st = defo_contact_surface_update(s, mesh->x);
    if (st) {
        defo_contact_surface_destroy(s);
        return st;
    }
    *out = s;
    return DEFO_OK;
}

defo_status defo_contact_surface_move(defo_contact_surface *s, const double *x) {
    if (!s || !x) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact surface: missing argument");
    double b[6] = {INFINITY, INFINITY, INFINITY, -INFINITY, -INFINITY, -INFINITY};
    for (defo_index v = 0; v < s->nv; v++) {
        const double *p = x + 3 * (size_t)s->vert[v];
        if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]))
            return defo_error(DEFO_ERR_NUMERICAL, "contact surface: node %ld is not finite",
                              (long)s->vert[v]);
        /* every vertex lies on a triangle: the min/max of the triangles'
         * boxes (the hierarchy's root after a refit) is this, bit for bit */
        for (int k = 0; k < 3; k++) {
            b[k] = fmin(b[k], p[k]);
            b[3 + k] = fmax(b[3 + k], p[k]);
        }
    }
    memcpy(s->box, b, sizeof b);
    s->x = x;
    s->stale = 1;
    return DEFO_OK;
}

defo_status defo_contact_surface_update(defo_contact_surface *s, const double *x) {
    defo_status st = defo_contact_surface_move(s, x);
    if (st) return st;
    defo_contact_surface_refit(s);
    return DEFO_OK;
}

void defo_contact_surface_refit(defo_contact_surface *s) {
    if (!s->stale) return;
    s->stale = 0;
    const double *x = s->x;
    const defo_index nt = s->nt, ne = s->ne, nv = s->nv;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(nt, 60))
    for (defo_index t = 0; t < nt; t++) {
        const defo_index *v = s->tri + 3 * (size_t)t;
        const double *a = x + 3 * (size_t)v[0], *b = x + 3 * (size_t)v[1],
                     *c = x + 3 * (size_t)v[2];
        double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        double w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        double n[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2],
                       u[0] * w[1] - u[1] * w[0]};
        const double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        double *o = s->fn + 3 * (size_t)t;
        for (int k = 0; k < 3; k++) o[k] = l > 0 ? n[k] / l : 0.0;
        tri_box(s, x, t, 0.0, s->tbox + 6 * (size_t)t);
    }
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(ne, 30))
    for (defo_index e = 0; e < ne; e++) {
        double *o = s->en + 3 * (size_t)e;
        const double *f0 = s->fn + 3 * (size_t)s->edge_tri[2 * (size_t)e];
        const defo_index t1 = s->edge_tri[2 * (size_t)e + 1];
        for (int k = 0; k < 3; k++) o[k] = f0[k] + (t1 >= 0 ? s->fn[3 * (size_t)t1 + k] : 0.0);
        edge_box(s, x, e, 0.0, s->ebox + 6 * (size_t)e);
    }
    /* angle-weighted vertex normals, each vertex's triangles in a fixed order */
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(nv, 80))
    for (defo_index v = 0; v < nv; v++) {
        const defo_index node = s->vert[v];
        double acc[3] = {0, 0, 0};
        for (int64_t j = s->vtri_start[v]; j < s->vtri_start[v + 1]; j++) {
            const defo_index t = s->vtri[j];
            const defo_index *tv = s->tri + 3 * (size_t)t;
            const int c = tv[0] == node ? 0 : tv[1] == node ? 1 : 2;
            const double *p = x + 3 * (size_t)node, *q = x + 3 * (size_t)tv[(c + 1) % 3],
                         *r = x + 3 * (size_t)tv[(c + 2) % 3];
            double u[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
            double w[3] = {r[0] - p[0], r[1] - p[1], r[2] - p[2]};
            const double lu = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
            const double lw = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
            double cs =
                lu > 0 && lw > 0 ? (u[0] * w[0] + u[1] * w[1] + u[2] * w[2]) / (lu * lw) : 1.0;
            cs = cs > 1 ? 1 : (cs < -1 ? -1 : cs);
            const double ang = acos(cs);
            for (int k = 0; k < 3; k++) acc[k] += ang * s->fn[3 * (size_t)t + k];
        }
        memcpy(s->vn + 3 * (size_t)v, acc, sizeof acc);
    }
    defo_bvh_refit(s->tri_bvh, s->tbox);
    defo_bvh_refit(s->edge_bvh, s->ebox);
}

void defo_contact_surface_info(const defo_contact_surface *s, defo_index *triangles,
                               defo_index *edges, defo_index *vertices, double *mean_edge) {
    if (triangles) *triangles = s ? s->nt : 0;
    if (edges) *edges = s ? s->ne : 0;
    if (vertices) *vertices = s ? s->nv : 0;
    if (mean_edge) *mean_edge = s ? s->mean_edge : 0.0;
}

void defo_contact_surface_bounds(const defo_contact_surface *s, double box[6]) {
    memcpy(box, s->box, sizeof s->box);
    for (int k = 0; k < 3; k++) {
        box[k] -= s->reach;
        box[3 + k] += s->reach;
    }
}

const defo_index *defo_contact_surface_triangles(const defo_contact_surface *s) {
    return s ? s->tri : NULL;
}
