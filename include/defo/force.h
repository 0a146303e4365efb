/*
 * defo/force.h — the `nonlinear` force model: invertible finite elements
 * over a tet4 mesh with any defo material (ITF04 §3–6.2).
 *
 * Per element and per evaluation (ITF04 eq. 2):
 *   F = Ds Dm⁻¹,  F = U F̂ Vᵀ (defo_svd3, inversion convention of ITF04 §5),
 *   P̂ = P̂(F̂) from the material (inversion extension included),
 *   G = U P̂ B̂m with B̂m = Vᵀ Bm;  columns g1..g3 are the forces on nodes
 *   1..3, g0 = −(g1 + g2 + g3).
 * U, B̂m and σ are stored per element: ITF04 §9 computes F and its
 * diagonalization once per time step, and the damping operator (ITF04 §6.2)
 * reuses them for every product inside the implicit velocity solve.
 *
 * Damping (ITF04 §6.2): Ḟ = Dv Dm⁻¹, Ḟ̂ = Uᵀ Ḟ V, P̂_d = μ_d(Ḟ̂ + Ḟ̂ᵀ) +
 * λ_d tr(Ḟ̂) I, G_d = U P̂_d B̂m.  The force is linear in v: f_d = −D v, with
 * D symmetric positive semidefinite for the stored rotation (vᵀ D v =
 * Σ_e V_e P̂_d : Ḟ̂ ≥ 0).
 *
 * Threads: elements write per-element buffers, nodes gather them in a fixed
 * order (base/parallel.h), so every output is bitwise identical for any
 * thread count.  No allocation after defo_force_create.  The damping calls
 * write the object's scratch buffer: one force object per thread of use.
 */
#ifndef DEFO_FORCE_H
#define DEFO_FORCE_H

#include "defo/base.h"
#include "defo/material.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_force defo_force;

/* Borrows mesh, rest and material: they must outlive the force object and
 * keep their topology.  Only tet4 meshes (order 1): DEFO_ERR_UNSUPPORTED
 * otherwise.  rest must come from defo_rest_compute(mesh). */
DEFO_API defo_status defo_force_create(const defo_mesh *mesh, const defo_rest *rest,
                                       const defo_material *material, defo_force **out);
DEFO_API void defo_force_destroy(defo_force *force);

/* Elastic forces at positions x (3 per node): F, its SVD and P̂ per element;
 * the stored rotations are replaced by those of x.  force (3 per node,
 * overwritten) and energy (Σ V_e ψ_e, J) may each be NULL.  A non-finite
 * position or stress is DEFO_ERR_NUMERICAL naming the element; the outputs
 * are then unspecified. */
DEFO_API defo_status defo_force_elastic(defo_force *force, const double *x, double *out_force,
                                        double *energy);

/* Damping force f_d = −D v (3 per node, overwritten) for velocities v with
 * the rotations of the last defo_force_elastic.  Zeros when the material's
 * damping_time is 0. */
DEFO_API void defo_force_damping(defo_force *force, const double *v, double *out_force);
/* The operator itself: out = D v (positive semidefinite; the product CG uses). */
DEFO_API void defo_force_damping_apply(defo_force *force, const double *v, double *out);
/* Diagonal of D per node and axis (3 per node, overwritten): for a Jacobi
 * preconditioner of M + c·D. */
DEFO_API void defo_force_damping_diagonal(defo_force *force, double *out);
/* 1 when the material damps (damping_time > 0). */
DEFO_API int defo_force_has_damping(const defo_force *force);

/* Signed principal stretches of the last evaluation, 3 per element
 * (σ1 ≥ σ2 ≥ |σ3|, σ3 < 0 for an inverted element). */
DEFO_API const double *defo_force_sigma(const defo_force *force);
/* Elements with σ3 ≤ 0 (inverted or flat) at the last evaluation. */
DEFO_API defo_index defo_force_count_inverted(const defo_force *force);

/* Stable explicit time step estimate [s]: min over elements of h_e / c with
 * h_e the smallest altitude of the rest element (3V / largest face area) and
 * c = sqrt((λ + 2μ)/ρ) the dilatational wave speed.  Multiply by a CFL
 * number ≤ 1 (defo_world_def.cfl). */
DEFO_API double defo_force_wave_time(const defo_force *force);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_FORCE_H */
