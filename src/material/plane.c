/*
 * material/plane.c — every isotropic model in plane stress, for the in-plane
 * response of shells and cloth (ITF04 §8): the diagonal frame of a 3×2
 * deformation gradient F = U diag(σ1, σ2) Vᵀ.
 *
 * A shell point has two in-plane stretches; its thickness stretch σ3 is
 * free and takes the value where the stress across the thickness vanishes
 * (plane stress): ∂ψ/∂σ3 = P̂3(σ1, σ2, σ3) = 0, so the shell's energy density
 * is the model's own, ψ̃(σ1, σ2) = ψ(σ1, σ2, σ3*), with every model written
 * once as ψ = Σ h(σi) + λ/2 L², L = Σ g(σi) (material_internal.h) and its
 * inversion extension (inversion.c) acting as in 3-D.  Then
 *     P̂i = ∂ψ̃/∂σi = ∂ψ/∂σi                       (i = 1, 2: P̂3 = 0),
 *     Ãij = Aij − Ai3 A3j / A33                    (static condensation),
 * exact for any model; for corotated this is the familiar plane-stress
 * λ* = 2μλ/(λ + 2μ), for StVK too in terms of E3.  σ3* solves
 * f(s) = h'(s) + λ (G + g(s)) g'(s) = 0 with G = g(σ1) + g(σ2): f(1) has
 * the sign of G (h'(1) = g(1) = 0, g'(1) = 1), which brackets the root from
 * s = 1; safeguarded Newton (bisection when a step leaves the bracket)
 * finds it to rounding.  f' = A33 > 0 where the model is convex in σ3; where
 * it is not (A33 ≤ 0, far outside any physical range) the condensation is
 * skipped (Ã = A).
 *
 * The 3×2 F has six entries: in the frame [U n̂] × V (n̂ the unit normal)
 * δF̂ = (f11, f22 | f12, f21 | f31, f32).  dP/dF is block diagonal: A on
 * (f11, f22), B on (f12, f21) — TSIF05 §8's block of the pair, from
 * q₁ = (P̂1 − P̂2)/(σ1 − σ2) (the constituents' divided differences, exact at
 * σ1 = σ2) and q₂ = (P̂1 + P̂2)/(σ1 + σ2) — and on each out-of-plane entry
 * f3i the scalar P̂i/σi: turning a fibre out of the plane changes σi only to
 * second order, σi → σi + ε²/(2σi), so ψ changes by P̂i ε²/(2σi).  The
 * TSIF05 §8 definiteness fix clamps the negative eigenvalues of A and B and
 * negative P̂i/σi (a compressed cloth has no out-of-plane stiffness: it
 * buckles).
 *
 * Invariants: no allocation; finite output for finite σ (denominators kept
 * at least 1e-6 in magnitude, as defo_material_eval does).
 */
#include "material/material_internal.h"

#include <math.h>
#include <string.h>

/* f(s) and f'(s) for the thickness stretch. */
static void thickness_residual(const defo_material *m, double G, double s, double *f, double *df) {
    defo_mat_jet j;
    defo_material_jet(m, s, &j);
    const double lam = m->lambda, L = G + j.g0;
    *f = j.h1 + lam * L * j.g1;
    *df = j.h2 + lam * j.g1 * j.g1 + lam * L * j.g2;
}

/* σ3* with P̂3 = 0 (top of the file). */
static double thickness_stretch(const defo_material *m, double G) {
    if (G == 0.0 || m->lambda == 0.0) return 1.0;
    double f, df;
    /* bracket [lo, hi] with f(lo) < 0 < f(hi), growing away from 1 */
    double lo = 1.0, hi = 1.0;
    if (G > 0) {
        for (double d = 0.5; d < 1e30; d *= 2) {
            lo = 1.0 - d;
            thickness_residual(m, G, lo, &f, &df);
            if (f < 0) break;
            hi = lo;
        }
    } else {
        for (double d = 0.5; d < 1e30; d *= 2) {
            hi = 1.0 + d;
            thickness_residual(m, G, hi, &f, &df);
            if (f > 0) break;
            lo = hi;
        }
    }
    double s = 0.5 * (lo + hi);
    for (int it = 0; it < 200; it++) {
        thickness_residual(m, G, s, &f, &df);
        if (f == 0.0 || !isfinite(f)) break;
        if (f < 0)
            lo = s;
        else
            hi = s;
        double t = df > 0 ? s - f / df : 0.5 * (lo + hi);
        if (!(t > lo && t < hi)) t = 0.5 * (lo + hi);
        if (fabs(t - s) <= 4e-16 * fmax(1.0, fabs(s)) || hi - lo <= 4e-16 * fmax(1.0, fabs(s))) {
            s = t;
            break;
        }
        s = t;
    }
    return s;
}

double defo_material_eval_plane(const defo_material *m, double s1, double s2,
                                double *thickness_stretch_out, double phat[2], defo_dpdf2 *dpdf) {
    double s[2] = {s1, s2};
    if (m->mode == DEFO_INVERSION_CLAMP)
        for (int i = 0; i < 2; i++)
            if (s[i] < m->c) s[i] = m->c; /* not fmax: a NaN stays visible */
    defo_mat_jet j[3];
    defo_material_jet(m, s[0], &j[0]);
    defo_material_jet(m, s[1], &j[1]);
    const double G = j[0].g0 + j[1].g0;
    const double s3 = thickness_stretch(m, G);
    defo_material_jet(m, s3, &j[2]);
    if (thickness_stretch_out) *thickness_stretch_out = s3;
    const double lam = m->lambda, L = G + j[2].g0;
    const double psi = j[0].h0 + j[1].h0 + j[2].h0 + 0.5 * lam * L * L;
    double p[2];
    for (int i = 0; i < 2; i++) p[i] = j[i].h1 + lam * L * j[i].g1;
    if (phat) phat[0] = p[0], phat[1] = p[1];
    if (!dpdf) return psi;
    double A[3][3];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) A[i][k] = lam * j[i].g1 * j[k].g1;
    for (int i = 0; i < 3; i++) A[i][i] += j[i].h2 + lam * L * j[i].g2;
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++)
            dpdf->A[i][k] = A[2][2] > 0 ? A[i][k] - A[i][2] * A[2][k] / A[2][2] : A[i][k];
    double ddh, ddg;
    defo_material_dd(m, s[0], s[1], &j[0], &j[1], &ddh, &ddg);
    const double q1 = ddh + lam * L * ddg;
    double den = s[0] + s[1];
    if (fabs(den) < 1e-6) den = den < 0 ? -1e-6 : 1e-6;
    const double q2 = (p[0] + p[1]) / den;
    dpdf->B[0][0] = dpdf->B[1][1] = 0.5 * (q1 + q2);
    dpdf->B[0][1] = dpdf->B[1][0] = 0.5 * (q1 - q2);
    for (int i = 0; i < 2; i++) {
        double d = s[i];
        if (fabs(d) < 1e-6) d = d < 0 ? -1e-6 : 1e-6;
        dpdf->N[i] = p[i] / d;
    }
    return psi;
}

double defo_dpdf2_bound(const defo_dpdf2 *d) {
    double m = 0;
    for (int i = 0; i < 2; i++) {
        m = fmax(m, fabs(d->A[i][0]) + fabs(d->A[i][1]));
        m = fmax(m, fabs(d->B[i][0]) + fabs(d->B[i][1]));
        m = fmax(m, fabs(d->N[i]));
    }
    return m;
}
