/*
 * defo/fracture.h — brittle fracture by vertex splitting (MG04 §4), on any
 * body of the world whatever integrator steps it (tet4 and tet10).
 *
 * Every call, for every element: the largest principal value σ_max of the
 * stress at its quadrature points (defo_force_model_stress: the Cauchy
 * stress of an invertible body, MG04's σ = E Be(Reᵀx − x0) of a corotated
 * one) and its unit direction n_max.  Elements with σ_max > threshold are
 * visited in order of decreasing σ_max (ties: lower index first).  For each,
 * a corner v is chosen — at random among its corners marked as crack tips,
 * else among all four (a seeded generator: deterministic for a given seed)
 * — and split by the plane through v normal to n_max: the elements around v
 * whose centroid (current positions) lies on the positive side get a new
 * copy v+ of v (same rest position; the caller copies its state), the
 * others keep v.  tet10: an edge node on an edge (v, w) whose elements lie
 * on both sides is split too, so the crack opens along whole faces.  For
 * every pair of elements on opposite sides that shared a face, its other
 * corners become crack tips.  A choice that would leave one side empty is
 * no split: the other candidates are tried.
 *
 * Within one call a node is split at most once, and an element one of whose
 * nodes was split in this call is skipped (its stress predates the crack
 * that relieved it; it is re-examined next call).  Splitting moves no node,
 * so it inverts no element; element rest data never changes (MG04 §4).
 */
#ifndef DEFO_FRACTURE_H
#define DEFO_FRACTURE_H

#include "defo/base.h"
#include "defo/force_model.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_fracture_def {
    double threshold; /* largest principal stress that breaks [Pa], > 0; default
                         INFINITY (never); MG04 Table 1 "dragon": 60e3 */
    uint64_t seed;    /* vertex choice; default 1 */
    /* at most this many vertex splits per call; 0 = no limit (MG04 as
     * written); default 1.  Under nearly uniform stress an unlimited pass
     * splits vertices all over the body in one step (measured: 40 splits on
     * a 240-tet bar, which then never separated); a few splits per step let
     * the crack grow from its tips and cut cleanly. */
    int max_splits;
} defo_fracture_def;
DEFO_API defo_fracture_def defo_default_fracture_def(void);

typedef struct defo_fracture_stats {
    defo_index over_threshold; /* elements with σ_max > threshold */
    defo_index splits;         /* vertex splits done */
    defo_index nodes_added;    /* nodes appended (tet10: edge nodes too) */
    defo_index components;     /* connected components after the call */
    double max_stress;         /* largest σ_max over all elements [Pa] */
    defo_index max_stress_elem;
} defo_fracture_stats;

typedef struct defo_fracture defo_fracture;

/* Fracture state for mesh (tet4 or tet10; its node count now). */
DEFO_API defo_status defo_fracture_create(const defo_mesh *mesh, const defo_fracture_def *def,
                                          defo_fracture **out);
DEFO_API void defo_fracture_destroy(defo_fracture *f);

/* One pass on mesh at positions x with its force model fm (evaluated at x
 * here): nodes are appended to mesh (rest position of their parent) and
 * element connectivity changes; x itself is not touched (the caller grows its
 * state arrays, copying each new node's parent: defo_fracture_parents, and
 * rebuilds the force model).  stats may be NULL. */
DEFO_API defo_status defo_fracture_step(defo_fracture *f, defo_mesh *mesh, defo_force_model *fm,
                                        const double *x, defo_fracture_stats *stats);

/* Crack-tip marks, one per node (1 = tip); part of the state. */
DEFO_API const unsigned char *defo_fracture_crack_tips(const defo_fracture *f);
/* Parent of each node: itself for original nodes, the node it was split
 * from for added ones (num_nodes entries; parents precede children). */
DEFO_API const defo_index *defo_fracture_parents(const defo_fracture *f);

/* Checkpoints: the state carried from one call to the next is the mesh
 * (nodes appended, connectivity), the crack tips, the parents and the
 * generator state. */
DEFO_API uint64_t defo_fracture_rng_state(const defo_fracture *f);
/* Restore a saved state for a mesh of n nodes that the caller has already
 * put back: tips and parents hold n entries (parents[i] ≤ i). */
DEFO_API defo_status defo_fracture_restore(defo_fracture *f, defo_index n, uint64_t rng,
                                           const unsigned char *tips, const defo_index *parents);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_FRACTURE_H */
