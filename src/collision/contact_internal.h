/*
 * collision/contact_internal.h — the layout of a contact surface, shared by
 * contact_surface.c (building, updating), contact_find.c (pairs) and
 * contact_response.c.  Never installed.
 */
#ifndef DEFO_INTERNAL_CONTACT_H
#define DEFO_INTERNAL_CONTACT_H

#include "base/base.h"
#include "defo/contact.h"

struct defo_contact_surface {
    defo_index num_nodes; /* of the body */
    int two_sided, self_contact;
    double thickness, reach, mean_edge;
    defo_index nt, ne, nv;
    defo_index *tri;      /* 3 nodes per triangle */
    defo_index *edge;     /* 2 nodes per edge, first < second */
    defo_index *edge_tri; /* 2 triangles per edge (−1: an open edge) */
    defo_index *tri_edge; /* 3 edges per triangle: (a,b), (b,c), (c,a) */
    defo_index *vert;     /* surface nodes, ascending */
    defo_index *vert_of;  /* num_nodes: vertex of each node, −1 off the surface */
    int64_t *vtri_start;  /* nv + 1 */
    defo_index *vtri;     /* triangles of each vertex */
    double *fn, *en, *vn; /* pseudo-normals: unit faces, edges (sums), vertices (angle-weighted) */
    double *tbox, *ebox;  /* 6 per triangle / edge at the last update */
    defo_bvh *tri_bvh, *edge_bvh;
    const double *x; /* positions of the last update or move (borrowed) */
    /* box of the positions x (min/max over the vertices: the triangle
     * hierarchy's root box, bit for bit); stale: moved to x, the normals,
     * boxes and hierarchies not yet (defo_contact_surface_move) */
    double box[6];
    int stale;
    double disp; /* scratch of defo_contact_step_bound: the largest vertex move */
    /* self contact: excluded (vertex, triangle) and (edge, edge) pairs */
    int64_t *ex_vstart, *ex_estart;
    defo_index *ex_vtri, *ex_edge;
    double *wtmp; /* nv scratch */
    /* classification (defo_contact_classify): the surface each vertex was
     * found inside, −1 for none (nv); any: whether one is */
    int32_t *inside;
    int any_inside;
};

/* 1 when (vertex item, triangle other) — edge = 0 — or (edge item, edge
 * other) — edge = 1 — touch in the rest shape (self contact). */
int defo_contact_excluded(const defo_contact_surface *s, int edge, defo_index item,
                          defo_index other);

/* Bring a moved surface's normals and hierarchies to its positions (no-op
 * when not stale).  Called by every detection on the surfaces whose boxes
 * meet, before it looks inside them; not thread-safe (call it outside
 * parallel loops). */
void defo_contact_surface_refit(defo_contact_surface *s);

#endif
