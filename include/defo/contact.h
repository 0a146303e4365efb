/*
 * defo/contact.h — penalty contact with rigid implicit surfaces (TSIF05 §10).
 *
 * A contact SOURCE is anything that can tell, at a world point x and time t,
 * its signed distance φ (negative inside), ∇φ and ∇²φ.  Two kinds exist:
 *   - a rigid collider of defo/collision.h (union of exact shapes with
 *     scripted motion; ∇²φ by central differences of its normal), and
 *   - a signed-distance GRID sampled from a closed triangle surface
 *     (defo_surface_sdf of defo/geometry.h), trilinearly interpolated and
 *     moved rigidly by a defo_motion_def.
 * Deformable–deformable and self contact (TSIF05 §10, material-space level
 * sets found through a BVH) will be a third kind whose φ comes from another
 * body's deformed mesh; such a source couples the node to the nodes of the
 * tetrahedron it falls in, so defo_penalty_eval reports contacts as a list of
 * (node, block) pairs in the node-diagonal case today and will add
 * off-diagonal pairs then — callers add the blocks, they never assume the
 * source kind.
 *
 * Penalty (TSIF05 §10) per node inside a source:
 *     ψ = k φ² / 2,   f = −k φ ∇φ,   ∂²ψ/∂x² = k (∇φ ∇φᵀ + φ ∇²φ),
 * where the curvature term φ∇²φ is replaced by its positive semidefinite
 * part (its negative eigenvalues dropped), which, as TSIF05 §10 notes for the
 * element stiffness, changes the Newton path and never the equilibrium.
 *
 * Units: SI.  The penalty stiffness k is per node [N/m].
 */
#ifndef DEFO_CONTACT_H
#define DEFO_CONTACT_H

#include "defo/base.h"
#include "defo/collision.h"
#include "defo/geometry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------- signed-distance grid */
typedef struct defo_sdf_grid defo_sdf_grid;

typedef struct defo_sdf_grid_def {
    /* Grid spacing [m]; <= 0 (default): the largest extent of the surface's
     * bounding box / 64. */
    double cell_size;
    /* Cells added around the bounding box on every side, >= 1; default 3. */
    int padding;
    /* Rigid motion of the grid's frame (defo/geometry.h, as for colliders:
     * x(t) = R(t)(p − pivot) + pivot + velocity·t).  Default: at rest. */
    defo_motion_def motion;
} defo_sdf_grid_def;
DEFO_API defo_sdf_grid_def defo_default_sdf_grid_def(void);

/* Sample sdf at the nodes of a regular grid over its bounding box (+padding).
 * Errors: bad def (DEFO_ERR_INVALID_ARGUMENT naming the field), more than
 * 2^31 samples, out of memory.  The sdf may be destroyed afterwards. */
DEFO_API defo_status defo_sdf_grid_create(const defo_surface_sdf *sdf, const defo_sdf_grid_def *def,
                                          defo_sdf_grid **out);
DEFO_API void defo_sdf_grid_destroy(defo_sdf_grid *grid);
/* Samples per axis and the grid spacing [m]. */
DEFO_API void defo_sdf_grid_dims(const defo_sdf_grid *grid, int dims[3], double *cell_size);

/* φ at world point x and time t (trilinear; outside the grid: the value at
 * the nearest grid point plus the distance to it, a lower bound that keeps
 * far points outside).  grad (∇φ of the interpolant) and hess (9, row-major,
 * the interpolant's second derivatives; the diagonal of a trilinear function
 * is zero) may be NULL.  Thread-safe. */
DEFO_API double defo_sdf_grid_phi(const defo_sdf_grid *grid, double t, const double x[3],
                                  double grad[3], double hess[9]);

/* ------------------------------------------------------------ sources */
typedef enum defo_contact_kind {
    DEFO_CONTACT_COLLIDER = 0, /* rigid collider (defo/collision.h) */
    DEFO_CONTACT_SDF_GRID = 1  /* rigid signed-distance grid */
} defo_contact_kind;

typedef struct defo_contact_source {
    defo_contact_kind kind;
    const defo_collider *collider; /* DEFO_CONTACT_COLLIDER (borrowed) */
    const defo_sdf_grid *grid;     /* DEFO_CONTACT_SDF_GRID (borrowed) */
    double stiffness;              /* penalty k per node [N/m], > 0 */
    /* 1 (default in defo_contact_from_*): include the PSD part of φ∇²φ in the
     * stiffness; 0: Gauss–Newton term k∇φ∇φᵀ only. */
    int curvature;
} defo_contact_source;

DEFO_API defo_contact_source defo_contact_from_collider(const defo_collider *c, double stiffness);
DEFO_API defo_contact_source defo_contact_from_grid(const defo_sdf_grid *g, double stiffness);

/* φ, ∇φ (may be NULL) and ∇²φ (9, may be NULL) of one source at x, time t. */
DEFO_API double defo_contact_phi(const defo_contact_source *src, double t, const double x[3],
                                 double grad[3], double hess[9]);

/* Penalty over n nodes at positions x (3n), time t:
 *   energy  Σ k φ²/2 over penetrating (node, source) pairs (may be NULL),
 *   force   3n, the penalty forces are ADDED (may be NULL),
 *   block   9n, overwritten: the node-diagonal stiffness blocks
 *           k(∇φ∇φᵀ + PSD(φ∇²φ)) summed over sources (may be NULL),
 *   count   number of penetrating (node, source) pairs (may be NULL),
 *   capped  number of (node, collider) pairs held by separation_speed (may
 *           be NULL; 0 without x_start).
 * skip (n, may be NULL): nodes with skip[i] != 0 are ignored (prescribed).
 * x_start (3n, may be NULL): the positions at the start of a step of dt
 * ending at t; a node already inside a collider there is penalised only for
 * the depth beyond max(0, depth at the start − separation_speed · dt) — φ is
 * shifted by that much — so a body that starts inside comes out no faster
 * than the response lets it (defo_collision_respond).  NULL: every
 * penetration is penalised in full (the equilibrium solvers).
 * work: n doubles of scratch (per-node energies, summed in a fixed order).
 * Parallel over nodes, bitwise identical for any thread count.  A
 * non-finite φ is DEFO_ERR_NUMERICAL naming the node. */
DEFO_API defo_status defo_penalty_eval(const defo_contact_source *src, int num_sources, double t,
                                       defo_index n, const double *x, const unsigned char *skip,
                                       const double *x_start, double dt, double *energy,
                                       double *force, double *block, defo_index *count,
                                       defo_index *capped, double *work);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_CONTACT_H */
