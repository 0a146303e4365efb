/*
 * material/damping.c — damping in the rotated frame (ITF04 §6.2).
 *
 * The velocity gradient Ḟ is rotated by the U, V that diagonalise F,
 * Ḟ̂ = Uᵀ Ḟ V (not diagonal in general), the damping stress is computed there
 * as the analogue of the rotated linear model,
 *     P̂_d = μ_d (Ḟ̂ + Ḟ̂ᵀ) + λ_d tr(Ḟ̂) I,
 * and rotated back, P_d = U P̂_d Vᵀ.  μ_d = τ μ and λ_d = τ λ with τ the
 * material's damping_time [s] (stiffness-proportional, Rayleigh β = τ).
 *
 * Properties the integrators rely on: P_d is linear in Ḟ (so the same call
 * gives dP_d/dḞ applied to a differential, for implicit damping), and
 * Ḟ : P_d ≥ 0 (it only dissipates: Ḟ̂ : P̂_d = 2μ_d |sym Ḟ̂|² + λ_d tr(Ḟ̂)²).
 * It does not vanish for flat elements — ITF04 wants that, to stop
 * oscillations of degenerate elements — and, as the paper notes, it
 * conserves angular momentum only near the rest state: a rigid spin of a
 * deformed element is slightly damped.  A rigid spin of an undeformed
 * element (Ḟ = W F with W skew and F a rotation) gives Ḟ̂ skew and no stress.
 */
#include "material/material_internal.h"

defo_mat3 defo_material_damping_hat(const defo_material *mat, const defo_mat3 *Fd) {
    defo_mat3 r;
    double tr = mat->lambda_d * defo_m3_trace(*Fd);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) r.m[i][j] = mat->mu_d * (Fd->m[i][j] + Fd->m[j][i]);
    for (int i = 0; i < 3; i++) r.m[i][i] += tr;
    return r;
}

defo_mat3 defo_material_damping_P(const defo_material *mat, const defo_mat3 *U, const defo_mat3 *V,
                                  const defo_mat3 *Fdot) {
    defo_mat3 fh = defo_m3_mul(defo_m3_tmul(*U, *Fdot), *V);
    defo_mat3 ph = defo_material_damping_hat(mat, &fh);
    return defo_m3_mult(defo_m3_mul(*U, ph), *V);
}

void defo_material_damping_moduli(const defo_material *mat, double *mu_d, double *lambda_d) {
    if (mu_d) *mu_d = mat->mu_d;
    if (lambda_d) *lambda_d = mat->lambda_d;
}
