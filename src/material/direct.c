/*
 * material/direct.c — ψ and the first Piola stress P straight from F, without
 * its SVD, for the models whose constituents (material_internal.h) have
 * matrix forms, wherever F lies outside the inversion extension.
 *
 * With F = U diag(σ) Vᵀ and P = U diag(P̂) Vᵀ, P̂i = h'(σi) + λ L g'(σi)
 * (ITF04 eq. 1), the diagonal maps σ ↦ σ, 1/σ, σ³ are F, F⁻ᵀ, F FᵀF, so
 *     neo-Hookean  h' = μ(s − 1/s), g' = 1/s, L = ln J:
 *                  P = μ F + (λ ln J − μ) F⁻ᵀ,
 *                  ψ = μ/2 (I₁ − 3) − μ ln J + λ/2 (ln J)²;
 *     StVK         h' = μ(s³ − s), g' = s, L = tr E, E = (FᵀF − I)/2:
 *                  P = F (2μ E + λ tr E I),  ψ = μ E:E + λ/2 (tr E)².
 * Corotated (h' = 2μ(s − 1) needs the rotation) and biphasic (a spline of s)
 * have no such form.  F⁻ᵀ = cof F / J.
 *
 * Near rest both forms cancel (I₁ − 3 against 2 ln J, C − I): they are
 * written in G = F − I instead, J − 1 = tr G + I₂(G) + det G and
 * ψ_NH = μ/2 (‖G‖² − 2(I₂ + det G) + 2(j − ln(1 + j))) + λ/2 ln²(1 + j), j = J − 1,
 * so a translated body has ψ at ε², not ε; under a large rotation the
 * entries of F round at ε and ψ does at μ ε per volume.
 *
 * Where the forms hold: the extension (inversion.c) changes h and g only
 * below the threshold c, so the raw model is exact when every σ ≥ c.  The
 * smallest singular value is σ₃ = J/(σ₁σ₂) and σ₁σ₂ = ‖cof F‖₂ ≤ ‖cof F‖_F,
 * so J > 0 and J² ≥ c² ‖cof F‖²_F prove it without the SVD (at rest the
 * bound is 1/√3 ≈ 0.58).  Everything else returns 0 and the caller takes
 * the SVD path; both give the same ψ and P up to rounding.
 *
 * Without ψ (psi NULL) neo-Hookean takes ln J directly: P is as accurate,
 * and ψ's cancellation-free form is what costs.
 *
 * defo_material_eval_direct4 is the neo-Hookean one without ψ over four
 * points in lockstep (the explicit force pass of tet4,
 * force/kernel_hyperelastic.c): the same expressions in the same order,
 * lanewise, so every lane equals the one-point call bit for bit; only the
 * logarithms are per lane.  StVK has none: its stiffness has no rough bound,
 * so an explicit pass (which tracks the stable time) takes its points one
 * by one anyway.
 *
 * Invariants: no allocation; nothing is written when 0 is returned; what is
 * written is finite.
 */
#include "material/material_internal.h"
#include "math/lanes.h"

#include <math.h>

/* x − ln(1 + x) ≥ 0 without the cancellation near 0: its series below 1e-3
 * (truncation x⁸/8, relative 3e-16), the difference above (absolute error a
 * few ε·|x|). */
static inline double x_minus_log1p(double x) {
    if (fabs(x) < 1e-3)
        return x * x *
               (0.5 - x * (1.0 / 3 - x * (0.25 - x * (0.2 - x * (1.0 / 6 - x * (1.0 / 7))))));
    return x - log1p(x);
}

int defo_material_eval_direct(const defo_material *m, const defo_mat3 *F, double *psi,
                              defo_mat3 *P) {
    const int model = (int)m->def.model;
    if (model != DEFO_MODEL_NEO_HOOKEAN && model != DEFO_MODEL_STVK) return 0;
    const double f00 = F->m[0][0], f01 = F->m[0][1], f02 = F->m[0][2];
    const double f10 = F->m[1][0], f11 = F->m[1][1], f12 = F->m[1][2];
    const double f20 = F->m[2][0], f21 = F->m[2][1], f22 = F->m[2][2];
    /* cof F (F⁻ᵀ = cof F / J) */
    const double c00 = f11 * f22 - f12 * f21, c01 = f12 * f20 - f10 * f22,
                 c02 = f10 * f21 - f11 * f20;
    const double c10 = f21 * f02 - f22 * f01, c11 = f22 * f00 - f20 * f02,
                 c12 = f20 * f01 - f21 * f00;
    const double c20 = f01 * f12 - f02 * f11, c21 = f02 * f10 - f00 * f12,
                 c22 = f00 * f11 - f01 * f10;
    const double J = f00 * c00 + f01 * c01 + f02 * c02;
    const double iJ = 1.0 / J; /* early: its latency hides behind what follows */
    const double n2 = c00 * c00 + c01 * c01 + c02 * c02 + c10 * c10 + c11 * c11 + c12 * c12 +
                      c20 * c20 + c21 * c21 + c22 * c22;
    /* J > 0, finite squares (so P is finite: |cof/J| ≤ 1/c for neo-Hookean,
     * |F|³ below 1e150 for StVK), outside the extension */
    if (!(J > 0.0 && n2 < 1e100)) return 0;
    if (model == DEFO_MODEL_STVK && !(f00 * f00 + f01 * f01 + f02 * f02 + f10 * f10 + f11 * f11 +
                                          f12 * f12 + f20 * f20 + f21 * f21 + f22 * f22 <
                                      1e100))
        return 0;
    if (m->mode != DEFO_INVERSION_NONE && !(J * J >= m->c * m->c * n2)) return 0;
    const double mu = m->mu, lam = m->lambda;
    /* G = F − I: exact (Sterbenz) where F is near I */
    const double g00 = f00 - 1.0, g11 = f11 - 1.0, g22 = f22 - 1.0;
    if (model == DEFO_MODEL_NEO_HOOKEAN) {
        double lj;
        if (psi) {
            /* J − 1 = tr G + I₂(G) + det G (I₂: the principal 2×2 minors) */
            const double trg = g00 + g11 + g22;
            const double i2 = g00 * g11 - f01 * f10 + g00 * g22 - f02 * f20 + g11 * g22 - f12 * f21;
            const double dg = g00 * (g11 * g22 - f12 * f21) - f01 * (f10 * g22 - f12 * f20) +
                              f02 * (f10 * f21 - g11 * f20);
            const double j1 = trg + i2 + dg;
            const double g2 = g00 * g00 + f01 * f01 + f02 * f02 + f10 * f10 + g11 * g11 +
                              f12 * f12 + f20 * f20 + f21 * f21 + g22 * g22;
            lj = log1p(j1);
            /* I₁ − 3 − 2 ln J = ‖G‖² − 2(I₂ + det G) + 2 (j₁ − ln(1 + j₁)) */
            *psi =
                0.5 * mu * (g2 - 2.0 * (i2 + dg) + 2.0 * x_minus_log1p(j1)) + 0.5 * lam * lj * lj;
        } else {
            lj = log(J);
        }
        const double k = (lam * lj - mu) * iJ;
        P->m[0][0] = mu * f00 + k * c00, P->m[0][1] = mu * f01 + k * c01;
        P->m[0][2] = mu * f02 + k * c02, P->m[1][0] = mu * f10 + k * c10;
        P->m[1][1] = mu * f11 + k * c11, P->m[1][2] = mu * f12 + k * c12;
        P->m[2][0] = mu * f20 + k * c20, P->m[2][1] = mu * f21 + k * c21;
        P->m[2][2] = mu * f22 + k * c22;
        return 1;
    }
    /* StVK: E = (G + Gᵀ + GᵀG)/2, S = 2μ E + λ tr E I, P = F S */
    const double G[3][3] = {{g00, f01, f02}, {f10, g11, f12}, {f20, f21, g22}};
    double E[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            E[i][j] = 0.5 * (G[i][j] + G[j][i] + G[0][i] * G[0][j] + G[1][i] * G[1][j] +
                             G[2][i] * G[2][j]);
    const double tr = E[0][0] + E[1][1] + E[2][2];
    double S[3][3], ee = 0.0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            S[i][j] = 2.0 * mu * E[i][j] + (i == j ? lam * tr : 0.0);
            ee += E[i][j] * E[i][j];
        }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            P->m[i][j] = F->m[i][0] * S[0][j] + F->m[i][1] * S[1][j] + F->m[i][2] * S[2][j];
    if (psi) *psi = mu * ee + 0.5 * lam * tr * tr;
    return 1;
}

DEFO_LANES_CLONES
unsigned defo_material_eval_direct4(const defo_material *m, const double F[9][4], double P[9][4]) {
    if (m->def.model != DEFO_MODEL_NEO_HOOKEAN) return 0;
    const defo_d4u *f = (const defo_d4u *)F;
    /* cof F, J, ‖cof F‖²_F as in defo_material_eval_direct */
    const defo_d4 c00 = f[4] * f[8] - f[5] * f[7], c01 = f[5] * f[6] - f[3] * f[8],
                  c02 = f[3] * f[7] - f[4] * f[6];
    const defo_d4 c10 = f[7] * f[2] - f[8] * f[1], c11 = f[8] * f[0] - f[6] * f[2],
                  c12 = f[6] * f[1] - f[7] * f[0];
    const defo_d4 c20 = f[1] * f[5] - f[2] * f[4], c21 = f[2] * f[3] - f[0] * f[5],
                  c22 = f[0] * f[4] - f[1] * f[3];
    const defo_d4 J = f[0] * c00 + f[1] * c01 + f[2] * c02;
    const defo_d4 n2 = c00 * c00 + c01 * c01 + c02 * c02 + c10 * c10 + c11 * c11 + c12 * c12 +
                       c20 * c20 + c21 * c21 + c22 * c22;
    defo_m4 ok = (J > 0.0) & (n2 < 1e100);
    if (m->mode != DEFO_INVERSION_NONE) ok &= J * J >= m->c * m->c * n2;
    const unsigned bits = defo_m4_bits(ok);
    if (!bits) return 0;
    const double mu = m->mu, lam = m->lambda;
    const defo_d4 iJ = 1.0 / J;
    defo_d4 lj = J;
    for (int l = 0; l < 4; l++) lj[l] = bits >> l & 1 ? log(J[l]) : 0.0;
    const defo_d4 k = (lam * lj - mu) * iJ;
    const defo_d4 c[9] = {c00, c01, c02, c10, c11, c12, c20, c21, c22};
    defo_d4u *p = (defo_d4u *)P;
    for (int i = 0; i < 9; i++) p[i] = mu * f[i] + k * c[i];
    return bits;
}
