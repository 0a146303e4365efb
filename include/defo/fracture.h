/*
 * defo/fracture.h — brittle fracture by vertex splitting (MG04 §4).
 *
 * Every call, for every element: σ = E Be(Reᵀx − x0) (the corotated strain
 * of defo/plasticity.h times the isotropic Hooke matrix; the Voigt stress
 * (σxx, σyy, σzz, τxy, τyz, τzx) becomes the symmetric 3×3 tensor with τ off
 * the diagonal), its largest eigenvalue σ_max and unit eigenvector n_max
 * (defo_sym3_eigen).  Elements with σ_max > threshold are visited in order of
 * decreasing σ_max (ties: lower index first).  For each, a vertex v is
 * chosen — at random among its vertices marked as crack tips, else among all
 * four (a seeded generator: deterministic for a given seed) — and split by
 * the plane through v normal to n_max: the elements around v whose centroid
 * (current positions) lies on the positive side get a new copy v+ of v (same
 * rest position, position, velocity and constraint), the others keep v.
 * For every pair of elements on opposite sides that shared a face
 * (v, v1, v2), v1 and v2 become crack tips.  A choice that would leave one
 * side empty is no split: the other candidates are tried.
 *
 * Within one call a node is split at most once, and an element one of whose
 * vertices was split in this call is skipped: its stress predates the crack
 * that just relieved it (it is re-examined next step).  This keeps a
 * uniformly loaded body from shattering in one step.
 *
 * Afterwards (when anything split) the stepper rebuilds: state arrays grow,
 * lumped masses are recomputed from the new connectivity (a split node's
 * mass is shared between its copies by their incident elements, so total
 * mass and momentum are conserved), the matrix pattern (BCSR) and force model
 * are rebuilt.  Splitting moves no node, so it inverts no element.
 */
#ifndef DEFO_FRACTURE_H
#define DEFO_FRACTURE_H

#include "defo/backward_euler.h"
#include "defo/base.h"
#include "defo/corotated.h"
#include "defo/material.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_fracture_def {
    double threshold; /* largest principal stress that breaks [Pa], > 0; default
                         INFINITY (never); MG04 Table 1 "dragon": 60e3 */
    uint64_t seed;    /* vertex choice; default 1 */
    /* at most this many vertex splits per call; 0 = no limit (MG04 as
     * written); default 1.  Under nearly uniform stress (a bar pulled at its
     * ends) an unlimited pass splits vertices all over the body in one step
     * (measured: 40 splits on a 240-tet bar, which then never separated);
     * a few splits per step let the crack grow from its tips and cut
     * cleanly (the same bar: 9 splits in 9 steps, two pieces). */
    int max_splits;
} defo_fracture_def;
DEFO_API defo_fracture_def defo_default_fracture_def(void);

typedef struct defo_fracture_stats {
    defo_index over_threshold; /* elements with σ_max > threshold */
    defo_index splits;         /* vertex splits done (= nodes added) */
    defo_index components;     /* connected components after the call */
    double max_stress;         /* largest σ_max over all elements [Pa] */
    defo_index max_stress_elem;
} defo_fracture_stats;

typedef struct defo_fracture defo_fracture;

/* Fracture state for a tet4 mesh (borrowed and MODIFIED by defo_fracture_step:
 * nodes appended, element connectivity changed).  E and ν from material. */
DEFO_API defo_status defo_fracture_create(defo_mesh *mesh, const defo_material_def *material,
                                          const defo_fracture_def *def, defo_fracture **out);
DEFO_API void defo_fracture_destroy(defo_fracture *f);

/* σ_max per element (num_elems values) and, when dir is not NULL, n_max (3
 * per element) with the model's current rotations at positions x. */
DEFO_API defo_status defo_fracture_stress(defo_fracture *f, const defo_corotated *model,
                                          const double *x, double *sigma_max, double *dir);

/* One MG04 §4 pass on the body of be (whose mesh must be the fracture's):
 * rotations of the current positions (defo_backward_euler_update_rotations),
 * stresses, splits, then defo_backward_euler_topology_changed and the new
 * nodes' state copied from their parents.  Call it before the plasticity
 * update and the step.  stats may be NULL. */
DEFO_API defo_status defo_fracture_step(defo_fracture *f, defo_backward_euler *be,
                                        defo_fracture_stats *stats);

/* Crack-tip marks, one per node (1 = tip).  A mark persists (later passes
 * try tips first) and is part of the fracture state. */
DEFO_API const unsigned char *defo_fracture_crack_tips(const defo_fracture *f);
/* Parent of each node: itself for original nodes, the node it was split
 * from for added ones (num_nodes entries). */
DEFO_API const defo_index *defo_fracture_parents(const defo_fracture *f);

/* Checkpoints.  The state that carries from one call to the next is the
 * mesh (nodes appended, connectivity), the crack tips, the parents and the
 * generator state; everything else is recomputed per call. */
DEFO_API uint64_t defo_fracture_rng_state(const defo_fracture *f);
/* Restore a saved state: the caller has already put the fracture's mesh back
 * (mesh->num_nodes nodes, connectivity); tips and parents hold num_nodes
 * entries (parents[i] <= i, parents precede children), rng is the value of
 * defo_fracture_rng_state when it was saved.  Marks of nodes past
 * mesh->num_nodes are cleared, so a restored fracture continues bit for bit
 * like the one that was saved. */
DEFO_API defo_status defo_fracture_restore(defo_fracture *f, uint64_t rng,
                                           const unsigned char *tips, const defo_index *parents);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_FRACTURE_H */
