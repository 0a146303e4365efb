/*
 * defo/corotated.h — the `corotated` force model: element-based warped
 * stiffness, i.e. corotational linear FEM on tet4 meshes (MG04 §2.3–2.4).
 *
 * Precomputed per element (MG04 §2.1): Ke = V·Beᵀ·E·Be (12×12), from the
 * rest shape and the isotropic Hooke matrix E(E, ν).  Per step: the rotation
 * Re of the polar decomposition of F = Ds Dm⁻¹ (defo_polar3: a proper
 * rotation also for inverted elements, ITF04 §5.1), and
 *   fe = −Re Ke (Reᵀ x − x0) = −(K'e x + f'0e),  K'e = Re Ke Reᵀ,
 *   f'0e = −Re Ke x0   (MG04 eq. 7; Re here is 4 copies of the 3×3 rotation).
 * The elastic force is the negative of MG04's K'x + f'0: the force on the
 * nodes.  Forces of every element sum to zero and vanish for rigid motions
 * (no ghost forces, MG04 §2.3).
 *
 * Lazy rotations (MTPS08 §4.4): an element's Re is recomputed when its age
 * reaches rotation_interval updates, or (lazy_tolerance > 0) as soon as its F
 * has moved more than lazy_tolerance from the F of its last rotation in the
 * max-row-sum norm.  Between recomputations the stale Re is used for both
 * the forces and K'; elements whose Re did not change need no re-assembly.
 *
 * The object borrows the mesh (its rest positions and connectivity) for its
 * lifetime.  Threads: elements write per-element buffers, gathered per node /
 * per block in a fixed order: bitwise identical for any thread count.
 */
#ifndef DEFO_COROTATED_H
#define DEFO_COROTATED_H

#include "defo/base.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_corotated_def {
    /* 1: Re = I always — plain linear FEM (MG04 §2.1), for comparison;
     * default 0 */
    int linear;
    /* Recompute an element's rotation once it is this many updates old;
     * 1 (default) = every update; 0 = only by lazy_tolerance. */
    int rotation_interval;
    /* MTPS08 §4.4: recompute early when ‖F − F_last‖∞ exceeds this
     * (dimensionless; MTPS08 suggests 0.1); 0 (default) = off. */
    double lazy_tolerance;
} defo_corotated_def;
DEFO_API defo_corotated_def defo_default_corotated_def(void);

typedef struct defo_corotated defo_corotated;

/* Precompute Ke (and the assembly pattern of K') for a tet4 mesh (order 1,
 * positively oriented; DEFO_ERR_UNSUPPORTED for tet10) with the Young's
 * modulus and Poisson ratio of material (other fields unused).  The mesh is
 * borrowed.  Rotations start at I. */
DEFO_API defo_status defo_corotated_create(const defo_mesh *mesh, const defo_material_def *material,
                                           const defo_corotated_def *def, defo_corotated **out);
DEFO_API void defo_corotated_destroy(defo_corotated *c);

/* Rotations from positions x (3 per node) following the lazy rules above;
 * *updated (may be NULL) gets the number of elements whose Re was recomputed.
 * A non-finite position is DEFO_ERR_NUMERICAL naming the element (rotations
 * unchanged then). */
DEFO_API defo_status defo_corotated_update_rotations(defo_corotated *c, const double *x,
                                                     defo_index *updated);
/* Force the next update to recompute every rotation. */
DEFO_API void defo_corotated_invalidate_rotations(defo_corotated *c);

/* Elastic force f = −(K'x + f'0) with the current rotations (3 per node,
 * overwritten), and the energy ½ Σ uᵀ Ke u with u = Reᵀx − x0 (may be NULL). */
DEFO_API defo_status defo_corotated_forces(defo_corotated *c, const double *x, double *force,
                                           double *energy);

/* The model's matrix (pattern from the mesh; values from the last assemble). */
DEFO_API defo_bcsr *defo_corotated_matrix(defo_corotated *c);
/* matrix = stiffness_scale · K' + mass_scale · diag(mass ⊗ I₃) with the
 * current rotations (mass: one value per node, or NULL for none).  MG04 §6
 * uses stiffness_scale = Δt² + Δt·β and mass_scale = 1 + Δt·α. */
DEFO_API void defo_corotated_assemble(defo_corotated *c, double stiffness_scale, const double *mass,
                                      double mass_scale);

/* Current rotations, 9 per element, row-major. */
DEFO_API const double *defo_corotated_rotations(const defo_corotated *c);
/* Elements whose F had det ≤ 0 at the last rotation update. */
DEFO_API defo_index defo_corotated_count_inverted(const defo_corotated *c);
/* Ke of element e, 144 doubles row-major (node-major dofs x0 y0 z0 x1 ...). */
DEFO_API void defo_corotated_element_stiffness(const defo_corotated *c, defo_index e, double *Ke);
/* MG04 §3 plasticity matrix Pe = V·Beᵀ·E of element e, 12×6 row-major; the
 * strain is Voigt (εxx, εyy, εzz, γxy, γyz, γzx) with γ = 2ε. */
DEFO_API void defo_corotated_plastic_matrix(const defo_corotated *c, defo_index e, double *Pe);
/* MG04 §3–4 warped strain of element e, ε = Be(Reᵀx − x0), as the Voigt
 * 6-vector (εxx, εyy, εzz, γxy, γyz, γzx) with engineering shear γ = 2ε.
 * Dm_inv: the element's 9 rest values (row-major, rows b1..b3 = shape
 * gradients of nodes 1..3, defo_rest); R: its rotation Re (row-major);
 * x: current positions of mesh's nodes.  Shared by plasticity and fracture. */
DEFO_API void defo_corotated_strain(const defo_mesh *mesh, const double *Dm_inv, const double *R,
                                    const double *x, defo_index e, double eps[6]);
/* Bytes held (precomputed data, rotations, matrix, buffers). */
DEFO_API size_t defo_corotated_bytes(const defo_corotated *c);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_COROTATED_H */
