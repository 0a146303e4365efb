/*
 * defo/plasticity.h — additive strain plasticity with yield, creep and a
 * maximum for the corotated force model (MG04 §3, eqs. 13–15).
 *
 * Per element e, every step, with the rotation Re of the current positions
 * (defo/corotated.h) and the relative displacement u_j = Reᵀ(x_j − x_0) −
 * (X_j − X_0) (equal to Reᵀx − x0 up to a translation that Be annihilates):
 *   ε_total   = Be u                      (6-vector)
 *   ε_elastic = ε_total − ε_plastic
 *   if ‖ε_elastic‖₂ > c_yield:  ε_plastic += Δt · c_creep · ε_elastic
 *   if ‖ε_plastic‖₂ > c_max:    ε_plastic *= c_max / ‖ε_plastic‖₂
 *   f_plastic,e = Re Pe ε_plastic,  Pe = V Beᵀ E (12×6, precomputed)
 * Strain convention (the corotated model's): Voigt order
 * (εxx, εyy, εzz, γxy, γyz, γzx) with ENGINEERING shear γ = 2ε, so the
 * 2-norms above are √(εxx² + εyy² + εzz² + γxy² + γyz² + γzx²).
 * The plastic force is the elastic force of the plastic strain: with it the
 * element's net force is −Re Pe (ε_total − ε_plastic), zero when the element
 * sits in its plastic rest shape.  Σ_i f_plastic,i = 0 per element (the
 * shape-function gradients sum to zero): no ghost forces.
 *
 * MG04 Table 1 (parameters of the paper's animations; E in kPa):
 *   model   E    ν     ρ     fracture σ   c_yield  c_creep [1/s]  c_max
 *   snake   100  0.33  1000  ∞            ∞        0              0
 *   cow     50   0.33  1000  ∞            0.01     100            10
 *   dragon  100  0.33  1000  60 kPa       0.10     1              1
 * ("Yield stress" in the table is the fracture threshold of MG04 §4.)
 * c_creep must lie in [0, 1/Δt]: 1/Δt absorbs the excess strain at once.
 *
 * Threads: per-element work into per-element buffers, forces gathered per
 * node in a fixed order: bitwise identical for any thread count.
 */
#ifndef DEFO_PLASTICITY_H
#define DEFO_PLASTICITY_H

#include "defo/backward_euler.h"
#include "defo/base.h"
#include "defo/corotated.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_plasticity_def {
    double yield; /* c_yield: elastic strain norm that starts plastic flow, >= 0;
                     default INFINITY (purely elastic, MG04 "snake") */
    double creep; /* c_creep [1/s] >= 0, at most 1/Δt at each update; default 0 */
    double max;   /* c_max: largest plastic strain norm, >= 0; default 0 */
} defo_plasticity_def;
DEFO_API defo_plasticity_def defo_default_plasticity_def(void);
/* MG04 Table 1 "cow" (warm wax): c_yield 0.01, c_creep 100 /s, c_max 10. */
DEFO_API defo_plasticity_def defo_plasticity_wax_def(void);

typedef struct defo_plasticity_stats {
    defo_index yielding;       /* elements whose ‖ε_elastic‖ exceeded c_yield */
    defo_index capped;         /* elements whose ε_plastic was scaled back to c_max */
    double max_plastic_strain; /* largest ‖ε_plastic‖₂ after the update */
    double max_elastic_strain; /* largest ‖ε_elastic‖₂ before the update */
} defo_plasticity_stats;

typedef struct defo_plasticity defo_plasticity;

/* Plastic state (ε_plastic = 0) for the tet4 mesh of model: Pe is taken from
 * model (defo_corotated_plastic_matrix), Be from the mesh's rest shape.  The
 * mesh is borrowed; its element count must not change (fracture renumbers
 * nodes only, which is fine: the node incidence is rebuilt when
 * mesh->num_nodes changes). */
DEFO_API defo_status defo_plasticity_create(const defo_mesh *mesh, const defo_corotated *model,
                                            const defo_plasticity_def *def, defo_plasticity **out);
DEFO_API void defo_plasticity_destroy(defo_plasticity *p);
/* Change the parameters (e.g. heating: lower c_yield). */
DEFO_API defo_status defo_plasticity_set_def(defo_plasticity *p, const defo_plasticity_def *def);

/* ε_plastic, 6 per element (Voigt, engineering shear), writable. */
DEFO_API double *defo_plasticity_strain(defo_plasticity *p);

/* Total strain ε_total = Be(Reᵀx − x0) of every element (6 per element) with
 * the model's current rotations. */
DEFO_API defo_status defo_plasticity_total_strain(const defo_plasticity *p,
                                                  const defo_corotated *model, const double *x,
                                                  double *strain);

/* One MG04 §3 update with the model's current rotations (update them for x
 * first) and time step dt, then f_plastic (3 per node, overwritten; may be
 * NULL).  stats may be NULL.  c_creep·dt > 1 is DEFO_ERR_INVALID_ARGUMENT. */
DEFO_API defo_status defo_plasticity_update(defo_plasticity *p, const defo_corotated *model,
                                            const double *x, double dt, double *f_plastic,
                                            defo_plasticity_stats *stats);
/* f_plastic from the current ε_plastic without updating it. */
DEFO_API defo_status defo_plasticity_forces(defo_plasticity *p, const defo_corotated *model,
                                            double *f_plastic);

/* The per-step call for a backward Euler body: rotations of the current
 * positions (defo_backward_euler_update_rotations, reused by the step), the
 * update with the stepper's Δt, and the stepper's plastic force array.
 * Call it right before defo_backward_euler_step. */
DEFO_API defo_status defo_plasticity_step(defo_plasticity *p, defo_backward_euler *be, double dt,
                                          defo_plasticity_stats *stats);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_PLASTICITY_H */
