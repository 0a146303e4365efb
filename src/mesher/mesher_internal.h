/*
 * mesher/mesher_internal.h — what mesher.c and optimize.c share.
 */
#ifndef DEFO_MESHER_INTERNAL_H
#define DEFO_MESHER_INTERNAL_H

#include "defo/mesher.h"

#include <stdint.h>

/* Cosine of the smallest dihedral angle of tet v (4 node ids into x), and its
 * determinant (6 × signed volume) in *det.  A flat tet gives 1. */
double mesher_tet_max_cos(const double *x, const defo_index *v, double *det);

/* Step 4 of mesher.c (see optimize.c): improve the tet4 mesh m in place so
 * that its smallest dihedral angle reaches target_deg (degrees), then its
 * smallest altitude alt_frac × h (0: skipped) without an angle falling
 * below target_deg, keeping the boundary nodes (is_bd) within max_dist of
 * the surface and on it when they were (on_surf, updated when a node
 * reaches the surface); then the volume correction.  Flips change the tets
 * and removals may drop tets and nodes (m, is_bd and on_surf are compacted:
 * nodes keep their relative order).  Adds to rep->optimize_* and
 * rep->volume_offset.  The same mesh for any thread count. */
defo_status mesher_optimize(const defo_surface_sdf *sdf, defo_mesh *m, uint8_t *is_bd,
                            uint8_t *on_surf, double h, double target_deg, double alt_frac,
                            double max_dist, defo_mesher_report *rep);

/* The point q of a surface closest to p (ctx: the surface). */
typedef void (*mesher_closest_fn)(const void *ctx, const double p[3], double q[3]);

/* Step 5 of mesher.c: *m (tet4) made tet10 (the tet4 mesh destroyed and
 * *m replaced), then each boundary edge node moves to its closest surface
 * point (else half way, else it stays) when every incident element keeps
 * det J >= frac × the straight element's at 15 sample points.  Counts in
 * rep (may be NULL).  On an error *m is the mesh reached so far (the
 * caller destroys it). */
defo_status mesher_make_tet10(defo_mesh **m, mesher_closest_fn closest, const void *ctx,
                              double frac, defo_mesher_report *rep);

#endif
