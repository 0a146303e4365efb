/*
 * embed/embed_internal.h — what embed.c (binding, updates) and cut.c (the
 * surface cut along cracks, MG04 §5.2) share.  Never installed.
 */
#ifndef DEFO_EMBED_INTERNAL_H
#define DEFO_EMBED_INTERNAL_H

#include "defo/embed.h"

#include "base/base.h"

struct defo_embed {
    const defo_mesh *tets;
    const defo_mesh *surface; /* not kept beyond create: triangles copied */
    defo_index nv, nt;
    defo_index *elem; /* per vertex */
    double *bary;     /* 4 per vertex */
    double *normal0;  /* 3 per vertex, rest */
    double *covec;    /* 3 per vertex: J_Xᵀ n0, the rest normal in reference coordinates */
    defo_index *tris; /* 3 per triangle */
    defo_embed_info info;
};

/* A uniform grid over the tets' bounding boxes (closest-tet searches). */
typedef struct grid {
    double lo[3], h;
    int dim[3];
    int64_t *start; /* cells + 1 */
    defo_index *item;
} grid;
defo_status defo_embed_grid_build(grid *g, const defo_mesh *m);
void defo_embed_grid_free(grid *g);
/* e->covec from e's binding and rest normals (nonzero: out of memory). */
int defo_embed_make_covec(defo_embed *e);
/* The tet closest to p (0: containing it) with its barycentric coordinates;
 * Dm_inv: 9 per element, the corner tets' inverse edge matrices. */
double defo_embed_closest_tet(const grid *g, const defo_mesh *m, const double *Dm_inv,
                              const double *p, defo_index *elem, double lam[4]);

#endif
