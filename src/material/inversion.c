/*
 * material/inversion.c — the inversion extension (ITF04 §6, TSIF05 §9) and
 * the per-element evaluation of ψ, P̂ and the dP/dF blocks (TSIF05 §8).
 *
 * Extension.  ITF04 §6 extends a model below a compression threshold c by
 * "linearizing at a given compression limit or simply clamping the stress".
 * Applied literally to the vector P̂ — P̂(σ*) + A(σ*)(σ − σ*) with σ* =
 * max(σ, c) — the result is not the gradient of any energy: A(σ*) depends on
 * the unclamped stretches, so ∂P̂i/∂σj ≠ ∂P̂j/∂σi and the "stiffness" is not
 * symmetric.  defo applies the extension to the one-dimensional constituents
 * h and g of the model instead (ψ = Σ h(σi) + λ/2 (Σ g(σi))²): for s < c
 *     C1:  h̃(s) = h(c) + h'(c) d + ½ h₂ d²,  g̃(s) = g(c) + g'(c) d + ½ g₂ d²
 *     C0:  the same without the quadratic terms (h̃', g̃' held at their
 *          values at c; P̂ still varies through L),
 * d = s − c.  The extended ψ is an exact energy, so P̂ = ∂ψ/∂σ and A is its
 * symmetric Hessian everywhere.  In C1 mode h₂ = max(h''(c), 0) and
 * g₂ = min(g''(c), 0): the limits keep h̃' decreasing and g̃' positive as s
 * falls, which is what makes the force un-invert (P̂3 < 0 for σ3 ≤ 0 when the
 * element is compressed overall).  They never bind for corotated, biphasic
 * and neo-Hookean, which are exactly C1 at c.  StVK is the exception: its
 * volumetric g = (s² − 1)/2 is even (g'' = 1 > 0, and h'' < 0 below 1/√3),
 * so a C1 extension would keep inverted elements inverted; with the limits
 * its C1 extension is linear below c (C0 in slope at c, like C0 mode) and
 * restores.
 *     CLAMP (TSIF05 §9): σ is replaced by max(σ, c) and everything, dP/dF
 * included, is evaluated there.
 *
 * Blocks.  A[i][j] = δij (h''(σi) + λ L g''(σi)) + λ g'(σi) g'(σj).  For the
 * pair (i, j), with q₁ = (P̂i − P̂j)/(σi − σj) and q₂ = (P̂i + P̂j)/(σi + σj),
 *     B = ½ [[q₁ + q₂, q₁ − q₂], [q₁ − q₂, q₁ + q₂]]
 * (the eigenvalues are q₁ on (1, 1) and q₂ on (1, −1)).  q₁ = Δh' + λ L Δg'
 * from the constituents' divided differences, exact at σi = σj.  q₂ is
 * genuinely unbounded at σi = −σj (ψ(F) has a kink there: either stretch may
 * carry the sign); its denominator is kept at least 1e-6 in magnitude so the
 * block stays finite, and TSIF05 §8's clamping removes it when negative.
 *
 * Invariants: no allocation, no function pointers, finite output for finite
 * σ in every mode except DEFO_INVERSION_NONE with neo-Hookean (refused by
 * validation).
 */
#include "material/material_internal.h"
#include "math/lanes.h"

#include <math.h>

void defo_inversion_prepare(defo_material *m) {
    m->c = m->def.inversion.threshold;
    m->mode = (int)m->def.inversion.mode;
    defo_mat_jet j = {0, 0, 0, 0, 0, 0};
    if (m->mode != DEFO_INVERSION_NONE) defo_model_jet(m, m->c, &j);
    if (m->mode == DEFO_INVERSION_C1) {
        j.h2 = fmax(j.h2, 0.0);
        j.g2 = fmin(j.g2, 0.0);
    } else {
        j.h2 = 0.0;
        j.g2 = 0.0;
    }
    m->at_c = j;
}

/* Is s in the extended region? */
static inline int extended(const defo_material *m, double s) {
    return (m->mode == DEFO_INVERSION_C0 || m->mode == DEFO_INVERSION_C1) && s < m->c;
}

static inline void jet(const defo_material *m, double s, defo_mat_jet *j) {
    if (!extended(m, s)) {
        defo_model_jet(m, s, j);
        return;
    }
    const defo_mat_jet *b = &m->at_c;
    double d = s - m->c;
    j->h0 = b->h0 + d * (b->h1 + 0.5 * b->h2 * d);
    j->h1 = b->h1 + b->h2 * d;
    j->h2 = b->h2;
    j->g0 = b->g0 + d * (b->g1 + 0.5 * b->g2 * d);
    j->g1 = b->g1 + b->g2 * d;
    j->g2 = b->g2;
}

/* Divided differences of h̃' and g̃' over [a, b] for the extended model. */
static void dd(const defo_material *m, double a, double b, const defo_mat_jet *ja,
               const defo_mat_jet *jb, double *ddh, double *ddg) {
    int ea = extended(m, a), eb = extended(m, b);
    if (!ea && !eb) {
        defo_model_dd(m, a, b, ddh, ddg);
        return;
    }
    if (ea && eb) { /* both on the quadratic extension: exact */
        *ddh = m->at_c.h2;
        *ddg = m->at_c.g2;
        return;
    }
    if (fabs(a - b) > defo_mat_gap_tol(a, b)) {
        *ddh = (ja->h1 - jb->h1) / (a - b);
        *ddg = (ja->g1 - jb->g1) / (a - b);
        return;
    }
    /* Tiny gap across c: integrate the second derivative piecewise, the
     * extension's constant one below c and the model's at the midpoint of
     * the rest, so a slope jump at c is weighted correctly. */
    double lo = ea ? a : b, hi = ea ? b : a;
    defo_mat_jet mid;
    defo_model_jet(m, 0.5 * (m->c + hi), &mid);
    double w = hi - lo;
    *ddh = (m->at_c.h2 * (m->c - lo) + mid.h2 * (hi - m->c)) / w;
    *ddg = (m->at_c.g2 * (m->c - lo) + mid.g2 * (hi - m->c)) / w;
}

void defo_material_jet(const defo_material *m, double s, defo_mat_jet *j) {
    if (m->mode == DEFO_INVERSION_CLAMP && s < m->c) {
        /* the thickness stretch of a shell (plane.c) is an inner minimiser,
         * not a deformation to clamp: continue C0 (at_c has no curvature) */
        const defo_mat_jet *b = &m->at_c;
        const double d = s - m->c;
        j->h0 = b->h0 + d * b->h1;
        j->h1 = b->h1;
        j->h2 = 0.0;
        j->g0 = b->g0 + d * b->g1;
        j->g1 = b->g1;
        j->g2 = 0.0;
        return;
    }
    jet(m, s, j);
}

void defo_material_dd(const defo_material *m, double a, double b, const defo_mat_jet *ja,
                      const defo_mat_jet *jb, double *ddh, double *ddg) {
    dd(m, a, b, ja, jb, ddh, ddg);
}

double defo_material_eval(const defo_material *m, defo_vec3 sigma, defo_vec3 *phat,
                          defo_dpdf *dpdf) {
    double s[3] = {sigma.x, sigma.y, sigma.z};
    if (m->mode == DEFO_INVERSION_CLAMP)
        for (int i = 0; i < 3; i++)
            if (s[i] < m->c) s[i] = m->c; /* not fmax: a NaN must stay visible */
    defo_mat_jet j[3];
    for (int i = 0; i < 3; i++) jet(m, s[i], &j[i]);
    double lam = m->lambda;
    double L = j[0].g0 + j[1].g0 + j[2].g0;
    double psi = j[0].h0 + j[1].h0 + j[2].h0 + 0.5 * lam * L * L;
    double p[3];
    for (int i = 0; i < 3; i++) p[i] = j[i].h1 + lam * L * j[i].g1;
    if (phat) *phat = defo_v3(p[0], p[1], p[2]);
    if (!dpdf) return psi;

    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) dpdf->A[i][k] = lam * j[i].g1 * j[k].g1;
    for (int i = 0; i < 3; i++) dpdf->A[i][i] += j[i].h2 + lam * L * j[i].g2;

    static const int pair[3][2] = {{0, 1}, {0, 2}, {1, 2}};
    for (int q = 0; q < 3; q++) {
        int a = pair[q][0], b = pair[q][1];
        double ddh, ddg;
        dd(m, s[a], s[b], &j[a], &j[b], &ddh, &ddg);
        double q1 = ddh + lam * L * ddg;
        double den = s[a] + s[b];
        if (fabs(den) < 1e-6) den = den < 0 ? -1e-6 : 1e-6;
        double q2 = (p[a] + p[b]) / den;
        dpdf->B[q][0][0] = dpdf->B[q][1][1] = 0.5 * (q1 + q2);
        dpdf->B[q][0][1] = dpdf->B[q][1][0] = 0.5 * (q1 - q2);
    }
    return psi;
}

void defo_material_eval_batch(const defo_material *m, size_t n, const double *sigma, double *psi,
                              double *phat, defo_dpdf *dpdf) {
    for (size_t e = 0; e < n; e++) {
        defo_vec3 p;
        double v = defo_material_eval(m, defo_v3_load(sigma + 3 * e), &p, dpdf ? dpdf + e : NULL);
        if (psi) psi[e] = v;
        if (phat) defo_v3_store(phat + 3 * e, p);
    }
}

double defo_dpdf_bound(const defo_dpdf *d) {
    double m = 0;
    for (int i = 0; i < 3; i++) {
        const double r = fabs(d->A[i][0]) + fabs(d->A[i][1]) + fabs(d->A[i][2]);
        m = r > m ? r : m;
    }
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < 2; i++) {
            const double r = fabs(d->B[p][i][0]) + fabs(d->B[p][i][1]);
            m = r > m ? r : m;
        }
    return m;
}

/* Neo-Hookean with no stretch extended: A and the B blocks of
 * defo_material_eval written out with ι = 1/σ and one logarithm (L = ln J),
 *   A_ii = μ + (μ + λ(1 − L)) ιi²,  A_ik = λ ιi ιk,
 *   P̂i = μ(σi − ιi) + λ L ιi,  q₁ = μ + (μ − λL) ιa ιb,  q₂ = (P̂a + P̂b)/(σa + σb),
 * and a B block's row sum |q₁ + q₂|/2 + |q₁ − q₂|/2 = max(|q₁|, |q₂|). */
static double nh_bound(const defo_material *m, const double s[3]) {
    const double mu = m->mu, lam = m->lambda;
    /* the three reciprocals from one division (σ in [c, 2^300]: no
     * overflow or underflow in the products) */
    const double s01 = s[0] * s[1], J = s01 * s[2], iJ = 1.0 / J;
    const double io[3] = {s[1] * s[2] * iJ, s[0] * s[2] * iJ, s01 * iJ};
    const double L = log(J), k = mu + lam * (1.0 - L);
    double p[3], b = 0;
    for (int i = 0; i < 3; i++) {
        const double r =
            fabs(mu + k * io[i] * io[i]) + lam * io[i] * (io[(i + 1) % 3] + io[(i + 2) % 3]);
        b = r > b ? r : b;
        p[i] = mu * (s[i] - io[i]) + lam * L * io[i];
    }
    static const int pair[3][2] = {{0, 1}, {0, 2}, {1, 2}};
    for (int q = 0; q < 3; q++) {
        const int a = pair[q][0], c = pair[q][1];
        double den = s[a] + s[c];
        if (fabs(den) < 1e-6) den = den < 0 ? -1e-6 : 1e-6;
        const double q1 = fabs(mu + (mu - lam * L) * io[a] * io[c]);
        const double q2 = fabs((p[a] + p[c]) / den);
        const double r = q1 > q2 ? q1 : q2;
        b = r > b ? r : b;
    }
    return b;
}

double defo_material_stiffness_bound(const defo_material *m, defo_vec3 sigma) {
    const double s[3] = {sigma.x, sigma.y, sigma.z};
    if (m->def.model == DEFO_MODEL_NEO_HOOKEAN && !extended(m, s[0]) && !extended(m, s[1]) &&
        !extended(m, s[2]) && s[2] > 0 && s[0] < 0x1p300 && s[1] < 0x1p300 && s[2] < 0x1p300 &&
        s[0] > 0 && s[1] > 0 &&
        (m->mode != DEFO_INVERSION_CLAMP || (s[0] >= m->c && s[1] >= m->c && s[2] >= m->c)))
        return nh_bound(m, s);
    defo_dpdf d;
    defo_material_eval(m, sigma, NULL, &d);
    return defo_dpdf_bound(&d);
}

/* Neo-Hookean: with ιi = 1/σi ≤ 1/√smin2 the rows of A are at most
 * μ + (|k| + 2λ)/smin2 (k = μ + λ(1 − L)) and each B block's max(|q₁|, |q₂|)
 * — both equal μ + (μ − λL) ιa ιb up to sign, q₂ = (P̂a + P̂b)/(σa + σb)
 * written out — at most μ + |μ − λL|/smin2; L = ln J lies in
 * [1 − 1/J, J − 1] (ln x ≥ 1 − 1/x, ln x ≤ x − 1), so no logarithm. */
double defo_material_stiffness_bound_rough(const defo_material *m, double J, double smin2) {
    if (m->def.model != DEFO_MODEL_NEO_HOOKEAN || !(J > 0 && J < 0x1p300) ||
        !(smin2 >= m->c * m->c && smin2 > 0 && smin2 < 0x1p300))
        return INFINITY;
    const double mu = m->mu, lam = m->lambda;
    const double l_lo = 1.0 - 1.0 / J, l_hi = J - 1.0;
    const double k_lo = fabs(mu + lam * (1.0 - l_lo)), k_hi = fabs(mu + lam * (1.0 - l_hi));
    const double q_lo = fabs(mu - lam * l_lo), q_hi = fabs(mu - lam * l_hi);
    const double k = (k_lo > k_hi ? k_lo : k_hi) + 2.0 * lam, q = q_lo > q_hi ? q_lo : q_hi;
    return mu + (k > q ? k : q) / smin2;
}

DEFO_LANES_CLONES
void defo_material_stiffness_bound_rough4(const defo_material *m, const double J4[4],
                                          const double smin2_4[4], double out[4]) {
    const defo_d4 J = defo_d4_load(J4), smin2 = defo_d4_load(smin2_4);
    const defo_d4 inf = defo_d4_splat(INFINITY);
    if (m->def.model != DEFO_MODEL_NEO_HOOKEAN) {
        defo_d4_store(out, inf);
        return;
    }
    const defo_m4 ok =
        (J > 0) & (J < 0x1p300) & (smin2 >= m->c * m->c) & (smin2 > 0) & (smin2 < 0x1p300);
    const double mu = m->mu, lam = m->lambda;
    const defo_d4 l_lo = 1.0 - 1.0 / J, l_hi = J - 1.0;
    const defo_d4 k_lo = defo_d4_abs(mu + lam * (1.0 - l_lo)),
                  k_hi = defo_d4_abs(mu + lam * (1.0 - l_hi));
    const defo_d4 q_lo = defo_d4_abs(mu - lam * l_lo), q_hi = defo_d4_abs(mu - lam * l_hi);
    const defo_d4 k = defo_d4_max(k_lo, k_hi) + 2.0 * lam, q = defo_d4_max(q_lo, q_hi);
    defo_d4_store(out, defo_d4_select(ok, mu + defo_d4_max(k, q) / smin2, inf));
}
