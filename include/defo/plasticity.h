/*
 * defo/plasticity.h — additive strain plasticity with yield, creep and a
 * maximum (MG04 §3, eqs. 13–15), on any body of the world, whatever
 * integrator steps it.
 *
 * Per quadrature point of the body's force model (one per tet4 element,
 * four per tet10 — MTPS08 §5 keeps plastic state per cubature point), every
 * step, with the total corotated strain ε_total = sym(Rᵀ F) − I
 * (defo_force_model_strain):
 *   ε_elastic = ε_total − ε_plastic
 *   if ‖ε_elastic‖₂ > c_yield:  ε_plastic += Δt · c_creep · ε_elastic
 *   if ‖ε_plastic‖₂ > c_max:    ε_plastic *= c_max / ‖ε_plastic‖₂
 * Strains are Voigt 6-vectors (εxx, εyy, εzz, γxy, γyz, γzx) with
 * ENGINEERING shear γ = 2ε.  The force model reads ε_plastic: the corotated
 * kernel's stress is that of ε_total − ε_plastic (MG04's f_plastic =
 * Re Pe ε_plastic folded in, so an element rests in its plastic shape); the
 * invertible kernel uses F_e = F (I + ε_plastic)⁻¹.
 *
 * MG04 Table 1 (parameters of the paper's animations; E in kPa):
 *   model   E    ν     ρ     fracture σ   c_yield  c_creep [1/s]  c_max
 *   snake   100  0.33  1000  ∞            ∞        0              0
 *   cow     50   0.33  1000  ∞            0.01     100            10
 *   dragon  100  0.33  1000  60 kPa       0.10     1              1
 * c_creep must lie in [0, 1/Δt]: 1/Δt absorbs the excess strain at once.
 */
#ifndef DEFO_PLASTICITY_H
#define DEFO_PLASTICITY_H

#include "defo/base.h"
#include "defo/force_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_plasticity_def {
    double yield; /* c_yield ≥ 0; default INFINITY (purely elastic, MG04 "snake") */
    double creep; /* c_creep [1/s] ≥ 0, at most 1/Δt at each update; default 0 */
    double max;   /* c_max ≥ 0; default 0 */
} defo_plasticity_def;
DEFO_API defo_plasticity_def defo_default_plasticity_def(void);
/* MG04 Table 1 "cow" (warm wax): c_yield 0.01, c_creep 100 /s, c_max 10. */
DEFO_API defo_plasticity_def defo_plasticity_wax_def(void);

typedef struct defo_plasticity_stats {
    defo_index yielding;       /* points whose ‖ε_elastic‖ exceeded c_yield */
    defo_index capped;         /* points whose ε_plastic was scaled back to c_max */
    double max_plastic_strain; /* largest ‖ε_plastic‖₂ after the update */
    double max_elastic_strain; /* largest ‖ε_elastic‖₂ before it */
} defo_plasticity_stats;

typedef struct defo_plasticity defo_plasticity;

/* Plastic state ε_plastic = 0 for num_elems elements of `points` quadrature
 * points each. */
DEFO_API defo_status defo_plasticity_create(const defo_plasticity_def *def, defo_index num_elems,
                                            int points, defo_plasticity **out);
DEFO_API void defo_plasticity_destroy(defo_plasticity *p);
/* Change the parameters (e.g. heating: lower c_yield). */
DEFO_API defo_status defo_plasticity_set_def(defo_plasticity *p, const defo_plasticity_def *def);
/* Make the force model use these plastic strains (again after the model was
 * rebuilt: material or topology change). */
DEFO_API defo_status defo_plasticity_bind(defo_plasticity *p, defo_force_model *fm);
/* ε_plastic, 6 per (element, point), element-major; writable (checkpoints). */
DEFO_API double *defo_plasticity_strain(defo_plasticity *p);
/* Doubles in that array. */
DEFO_API size_t defo_plasticity_values(const defo_plasticity *p);
/* One update at positions x with time step dt (the model is evaluated
 * there: its rotations become x's).  c_creep·dt > 1 is
 * DEFO_ERR_INVALID_ARGUMENT.  stats may be NULL. */
DEFO_API defo_status defo_plasticity_update(defo_plasticity *p, defo_force_model *fm,
                                            const double *x, double dt,
                                            defo_plasticity_stats *stats);
/* ‖ε_plastic‖₂ per element, the largest over its points (num_elems values). */
DEFO_API defo_status defo_plasticity_norms(const defo_plasticity *p, double *out);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_PLASTICITY_H */
