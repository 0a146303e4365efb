/*
 * material/fibre.c — the fibre term of transversely isotropic materials
 * (ITF04 §6.1, TSIF05 §11): ψ_f(λ) = ψ_p(λ) + α ψ_a(λ) of the fibre stretch
 * λ = |F a| (defo/material.h gives the curves), its first Piola stress and
 * its stress differential.
 *
 * Curves, with x = λ − 1 (T = dψ/dλ, K = dT/dλ):
 *   exponential  T = P1 φ₂(P2 x), ψ = (P1/P2) φ₃(P2 x), K = P1 P2 (e^{P2 x} − 1)
 *                for 0 < x ≤ x* = λ* − 1, with φ₂(y) = e^y − 1 − y and
 *                φ₃(y) = e^y − 1 − y − y²/2 (series below |y| = 1/2, where
 *                the differences cancel); beyond x* the tangent line:
 *                T = T* + K*(λ − λ*), ψ = ψ* + T*(λ − λ*) + K*(λ − λ*)²/2;
 *   polynomial   T = c2 x² + c3 x³, ψ = c2 x³/3 + c3 x⁴/4, K = 2 c2 x + 3 c3 x²;
 *   active       u = (λ/λ_o − 1)/w, T = σ_max (1 − u²)², K = −4 σ_max u (1 − u²)/(w λ_o)
 *                for |u| < 1 (0 outside), ψ = σ_max λ_o w (G(ū) − G(ū₁)) with
 *                G(u) = u − 2u³/3 + u⁵/5 the integral of (1 − u²)², ū = u
 *                clamped to [−1, 1] and ū₁ its value at λ = 1.
 * The exponential's e^y − 1 is the file's own (exp_parts4: lanewise IEEE
 * arithmetic, no libm, one path for every y), so defo_material_fibre_stress4's
 * four lanes equal the one-point calls bit for bit, and the stress-only call
 * the energy call.
 * All three are 0 with T = K = 0 at λ ≤ 1 (passive) or outside the
 * support (active), so ψ_f(1) = 0.
 *
 * Stress (world frame, equal to ITF04 §6.1's diagonal-frame form, see
 * material.h): b = F a, λ = |b|, P_f = (T/λ) b aᵀ.  Differential:
 * δP_f = (K_f δF a) aᵀ, K_f = (T/λ)(I − t tᵀ) + K t tᵀ, t = b/λ; with
 * projection T/λ and K are clamped at 0 separately (the PSD part of the
 * term, since its eigenvalues are exactly T/λ, T/λ, K and six zeros).
 *
 * Invariants: no allocation; finite results for finite input (T/λ is
 * taken only where T > 0, which needs λ ≥ min(1, λ_o(1 − w)) > 0).
 */
#include "material/material_internal.h"

#include "base/base.h"
#include "math/lanes.h"

#include <math.h>
#include <string.h>

defo_status defo_fibre_def_validate(const defo_fibre_def *f) {
    const int p = (int)f->passive;
    if (p < DEFO_FIBRE_PASSIVE_NONE || p > DEFO_FIBRE_PASSIVE_POLYNOMIAL)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "fibre.passive: %d is not a defo_fibre_passive", p);
    if (p == DEFO_FIBRE_PASSIVE_EXPONENTIAL) {
        if (!(f->exp_stress >= 0) || !isfinite(f->exp_stress))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fibre.exp_stress: %g is not >= 0",
                              f->exp_stress);
        if (!(f->exp_rate >= 0 && f->exp_rate <= 1000))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fibre.exp_rate: %g is not in [0, 1000]",
                              f->exp_rate);
        if (!(f->linear_stretch > 1 && f->linear_stretch <= 10))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "fibre.linear_stretch: %g is not in (1, 10]", f->linear_stretch);
        if (f->exp_rate * (f->linear_stretch - 1) > 50)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "fibre: exp_rate %g times linear_stretch − 1 (%g) exceeds 50 (the "
                              "curve would reach e^50 before it turns linear)",
                              f->exp_rate, f->linear_stretch - 1);
    }
    if (p == DEFO_FIBRE_PASSIVE_POLYNOMIAL) {
        if (!(f->poly2 >= 0) || !isfinite(f->poly2))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fibre.poly2: %g is not >= 0", f->poly2);
        if (!(f->poly3 >= 0) || !isfinite(f->poly3))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fibre.poly3: %g is not >= 0", f->poly3);
    }
    if (!(f->max_active_stress >= 0) || !isfinite(f->max_active_stress))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fibre.max_active_stress: %g is not >= 0",
                          f->max_active_stress);
    if (f->max_active_stress > 0) {
        if (!(f->optimal_stretch > 0 && f->optimal_stretch <= 10))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "fibre.optimal_stretch: %g is not in (0, 10]", f->optimal_stretch);
        if (!(f->active_width > 0 && f->active_width < 1))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "fibre.active_width: %g is not in (0, 1) (the force–length curve "
                              "must vanish before the fibre does)",
                              f->active_width);
    }
    return DEFO_OK;
}

/* 1/n! for n = 0..18 (the exponential's series below). */
static const double inv_fact[19] = {1.0,
                                    1.0,
                                    1.0 / 2,
                                    1.0 / 6,
                                    1.0 / 24,
                                    1.0 / 120,
                                    1.0 / 720,
                                    1.0 / 5040,
                                    1.0 / 40320,
                                    1.0 / 362880,
                                    1.0 / 3628800,
                                    1.0 / 39916800,
                                    1.0 / 479001600,
                                    1.0 / 6227020800.0,
                                    1.0 / 87178291200.0,
                                    1.0 / 1307674368000.0,
                                    1.0 / 20922789888000.0,
                                    1.0 / 355687428096000.0,
                                    1.0 / 6402373705728000.0};

/* Σ_{i<13} c[i] yⁱ by Estrin's scheme (pairs, then pairs of pairs in y²,
 * y⁴, y⁸): four levels deep instead of Horner's thirteen. */
DEFO_LANES_INLINE void estrin13(const double *c, const defo_d4 *yp, defo_d4 *out) {
    const defo_d4 y = *yp, y2 = y * y, y4 = y2 * y2, y8 = y4 * y4;
    defo_d4 p[6];
    for (int j = 0; j < 6; j++) p[j] = c[2 * j] + c[2 * j + 1] * y;
    const defo_d4 q0 = p[0] + p[1] * y2, q1 = p[2] + p[3] * y2, q2 = p[4] + p[5] * y2;
    *out = (q0 + q1 * y4) + (q2 + c[12] * y4) * y8;
}

/* e^y − 1 (*em1) and φ₂(y) = e^y − 1 − y (*p2) for 0 ≤ y ≤ 50, four lanes,
 * with lanewise IEEE arithmetic only (no libm call): the one-point curves
 * (exp_parts1) and the four-wide force passes get the same bits.  One path
 * for every lane (no branch on y):
 *   y = n ln2 + r (Cody–Waite: ln2 split so n ln2_hi is exact, n = y/ln2
 *   rounded, |r| ≤ ln2/2; r = y exactly where n = 0),
 *   φ₂(r) = r² Σ_{k=2}^{14} r^{k−2}/k! (the first term left out,
 *   2 r¹³/15! relative, is below 2e-18),
 *   e^r − 1 = r + φ₂(r), e^y − 1 = 2ⁿ (e^r − 1) + (2ⁿ − 1),
 *   φ₂(y) = φ₂(r) where n = 0 (y < ln2/2: no cancellation), else
 *   (e^y − 1) − y (y ≥ ln2/2: cancellation of at most a few ε).
 * 2ⁿ is built from its exponent bits: n comes out of y/ln2 + 1.5·2⁵² as the
 * low bits of the sum's significand. */
DEFO_LANES_INLINE void exp_parts4(const defo_d4 *yp, defo_d4 *em1, defo_d4 *p2) {
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const defo_d4 y = *yp, shift = defo_d4_splat(0x1.8p52);
    const defo_d4 t = y * (1.0 / 0.69314718055994530942) + shift;
    const defo_d4 n = t - shift;
    const defo_d4 r = (y - n * ln2_hi) - n * ln2_lo;
    defo_d4 s;
    estrin13(inv_fact + 2, &r, &s);
    const defo_d4 pr = r * r * s; /* φ₂(r) */
    const defo_d4 scale = (defo_d4)(((defo_m4)t - (defo_m4)shift + 1023) << 52);
    const defo_d4 big = scale * (r + pr) + (scale - 1.0);
    *p2 = defo_d4_select(n == 0.0, pr, big - y);
    *em1 = big;
}

/* The one-point twins of estrin13 and exp_parts4: the same expressions in
 * the same order on doubles (lanewise IEEE arithmetic, contraction off), so
 * the same bits: the energy call (defo_material_fibre_eval, the tangent
 * passes' one point at a time). */
static inline double estrin13_1(const double *c, double y) {
    const double y2 = y * y, y4 = y2 * y2, y8 = y4 * y4;
    double p[6];
    for (int j = 0; j < 6; j++) p[j] = c[2 * j] + c[2 * j + 1] * y;
    const double q0 = p[0] + p[1] * y2, q1 = p[2] + p[3] * y2, q2 = p[4] + p[5] * y2;
    return (q0 + q1 * y4) + (q2 + c[12] * y4) * y8;
}

/* Σ_{i<16} c[i] yⁱ by Estrin's scheme (φ₃'s series below). */
static inline double estrin16_1(const double *c, double y) {
    const double y2 = y * y, y4 = y2 * y2, y8 = y4 * y4;
    double p[8], q[4];
    for (int j = 0; j < 8; j++) p[j] = c[2 * j] + c[2 * j + 1] * y;
    for (int j = 0; j < 4; j++) q[j] = p[2 * j] + p[2 * j + 1] * y2;
    return (q[0] + q[1] * y4) + (q[2] + q[3] * y4) * y8;
}

static inline void exp_parts1(double y, double *em1, double *p2) {
    const double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
    const double shift = 0x1.8p52;
    const double t = y * (1.0 / 0.69314718055994530942) + shift;
    const double n = t - shift;
    const double r = (y - n * ln2_hi) - n * ln2_lo;
    const double pr = r * r * estrin13_1(inv_fact + 2, r); /* φ₂(r) */
    long long tb, sb;
    memcpy(&tb, &t, sizeof tb);
    memcpy(&sb, &shift, sizeof sb);
    const long long bits = (tb - sb + 1023) << 52;
    double scale;
    memcpy(&scale, &bits, sizeof scale);
    const double big = scale * (r + pr) + (scale - 1.0);
    *p2 = n == 0.0 ? pr : big - y;
    *em1 = big;
}

/* The curves' T and K at four stretches λ with activations α (the file's
 * top gives the formulas); lanewise, so lane l equals the one-point call at
 * (λ_l, α_l) bit for bit. */
DEFO_LANES_INLINE void fibre_stress_lanes(const defo_material *m, const defo_d4 *lamp,
                                          const defo_d4 *alp, defo_d4 *Tp, defo_d4 *Kp) {
    const defo_fibre_def *f = &m->def.fibre;
    const defo_d4 lam = *lamp, x = lam - 1.0, zero = defo_d4_splat(0.0);
    const defo_m4 pos = x > 0.0;
    defo_d4 t = zero, k = zero;
    if (f->passive == DEFO_FIBRE_PASSIVE_EXPONENTIAL) {
        const defo_m4 curve = pos & (x <= m->fx_star);
        const defo_d4 d = x - m->fx_star;
        t = defo_d4_select(pos, m->fT_star + m->fK_star * d, zero);
        k = defo_d4_select(pos, defo_d4_splat(m->fK_star), zero);
        if (f->exp_rate != 0.0) { /* e^0 − 1 − 0 = 0: no passive stress */
            const defo_d4 y = defo_d4_select(curve, f->exp_rate * x, zero);
            defo_d4 em1, p2;
            exp_parts4(&y, &em1, &p2);
            t = defo_d4_select(curve, f->exp_stress * p2, t);
            k = defo_d4_select(curve, f->exp_stress * f->exp_rate * em1, k);
        } else {
            t = defo_d4_select(curve, zero, t);
            k = defo_d4_select(curve, zero, k);
        }
    } else if (f->passive == DEFO_FIBRE_PASSIVE_POLYNOMIAL) {
        t = defo_d4_select(pos, x * x * (f->poly2 + f->poly3 * x), zero);
        k = defo_d4_select(pos, x * (2.0 * f->poly2 + 3.0 * f->poly3 * x), zero);
    }
    if (f->max_active_stress > 0) {
        const defo_d4 al = *alp, u = lam * m->fu_scale - m->fu_shift;
        const defo_m4 in = (al != 0.0) & (u > -1.0) & (u < 1.0);
        const defo_d4 smax = al * f->max_active_stress, q = 1.0 - u * u;
        t = defo_d4_select(in, t + smax * q * q, t);
        k = defo_d4_select(in, k + -4.0 * smax * u * q * m->fu_scale, k);
    }
    *Tp = t, *Kp = k;
}

/* Passive curve at x = λ − 1 > 0 below the linear part: T, K and ψ, with
 * φ₃(y) = φ₂(y) − y²/2 (its own series below 1/2, where the difference
 * cancels). */
static double passive_exp(const defo_fibre_def *f, double x, double *T, double *K) {
    const double k = f->exp_rate, P1 = f->exp_stress;
    if (k == 0.0) { /* e^{0} − 1 − 0 = 0: no passive stress */
        *T = 0.0, *K = 0.0;
        return 0.0;
    }
    const double y = k * x;
    double em1, p2, p3;
    exp_parts1(y, &em1, &p2);
    if (y < 0.5)
        p3 = y * y * y * estrin16_1(inv_fact + 3, y);
    else
        p3 = p2 - 0.5 * y * y;
    *T = P1 * p2;
    *K = P1 * k * em1;
    return P1 / k * p3;
}

/* G(u) = ∫₀ᵘ (1 − s²)² ds with u clamped to [−1, 1]. */
static double active_G(double u) {
    u = u < -1.0 ? -1.0 : u > 1.0 ? 1.0 : u;
    const double u2 = u * u;
    return u * (1.0 - u2 * (2.0 / 3.0 - u2 / 5.0));
}

void defo_fibre_prepare(defo_material *m) {
    const defo_fibre_def *f = &m->def.fibre;
    m->fibres = f->passive != DEFO_FIBRE_PASSIVE_NONE || f->max_active_stress > 0;
    m->fx_star = f->linear_stretch - 1.0;
    m->fT_star = m->fK_star = m->fpsi = 0.0;
    if (f->passive == DEFO_FIBRE_PASSIVE_EXPONENTIAL)
        m->fpsi = passive_exp(f, m->fx_star, &m->fT_star, &m->fK_star);
    m->fu_scale = m->fu_shift = 0.0;
    if (f->max_active_stress > 0) {
        m->fu_scale = 1.0 / (f->active_width * f->optimal_stretch);
        m->fu_shift = 1.0 / f->active_width;
    }
    m->fG_rest = f->max_active_stress > 0 ? active_G(m->fu_scale - m->fu_shift) : 0.0;
}

int defo_material_has_fibres(const defo_material *m) {
    return m->fibres;
}

double defo_material_fibre_eval(const defo_material *m, double lam, double alpha, double *T,
                                double *K) {
    const defo_fibre_def *f = &m->def.fibre;
    double psi = 0.0, t = 0.0, k = 0.0;
    const double x = lam - 1.0;
    if (x > 0.0) {
        if (f->passive == DEFO_FIBRE_PASSIVE_EXPONENTIAL) {
            if (x <= m->fx_star) {
                psi = passive_exp(f, x, &t, &k);
            } else {
                const double d = x - m->fx_star;
                psi = m->fpsi + d * (m->fT_star + 0.5 * m->fK_star * d);
                t = m->fT_star + m->fK_star * d;
                k = m->fK_star;
            }
        } else if (f->passive == DEFO_FIBRE_PASSIVE_POLYNOMIAL) {
            const double x2 = x * x;
            psi = x2 * x * (f->poly2 / 3.0 + 0.25 * f->poly3 * x);
            t = x2 * (f->poly2 + f->poly3 * x);
            k = x * (2.0 * f->poly2 + 3.0 * f->poly3 * x);
        }
    }
    if (f->max_active_stress > 0 && alpha != 0.0) {
        const double smax = alpha * f->max_active_stress, lo = f->optimal_stretch,
                     w = f->active_width;
        const double u = lam * m->fu_scale - m->fu_shift;
        psi += smax * lo * w * (active_G(u) - m->fG_rest);
        if (u > -1.0 && u < 1.0) {
            const double q = 1.0 - u * u;
            t += smax * q * q;
            k += -4.0 * smax * u * q * m->fu_scale;
        }
    }
    if (T) *T = t;
    if (K) *K = k;
    return psi;
}

/* One point: fibre_stress_lanes on a splat, lane 0 (the force passes take
 * the four-wide call; this one serves the leftover points). */
double defo_material_fibre_stress(const defo_material *m, double lam, double alpha, double *K) {
    const defo_d4 l4 = defo_d4_splat(lam), a4 = defo_d4_splat(alpha);
    defo_d4 t, k;
    fibre_stress_lanes(m, &l4, &a4, &t, &k);
    if (K) *K = k[0];
    return t[0];
}

DEFO_LANES_CLONES
void defo_material_fibre_stress4(const defo_material *m, const double lam[4], const double alpha[4],
                                 double T[4], double K[4]) {
    const defo_d4 l4 = defo_d4_load(lam), a4 = defo_d4_load(alpha);
    defo_d4 t, k;
    fibre_stress_lanes(m, &l4, &a4, &t, &k);
    defo_d4_store(T, t);
    defo_d4_store(K, k);
}

double defo_material_fibre_bound(const defo_material *m, double lam, double alpha) {
    if (!m->fibres) return 0.0;
    double T, K;
    defo_material_fibre_eval(m, lam, alpha, &T, &K);
    const double g = T > 0.0 ? T / lam : 0.0;
    return fmax(g, fabs(K));
}

double defo_material_fibre_P(const defo_material *m, const defo_mat3 *F, defo_vec3 a, double alpha,
                             defo_mat3 *P) {
    if (P) *P = defo_m3_zero();
    if (!m->fibres) return 0.0;
    const double av[3] = {a.x, a.y, a.z};
    double b[3];
    for (int r = 0; r < 3; r++) b[r] = F->m[r][0] * av[0] + F->m[r][1] * av[1] + F->m[r][2] * av[2];
    const double lam = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    double T;
    const double psi = defo_material_fibre_eval(m, lam, alpha, &T, NULL);
    if (P && T > 0.0) {
        const double g = T / lam;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) P->m[r][k] = g * b[r] * av[k];
    }
    return psi;
}

defo_mat3 defo_material_fibre_dP(const defo_material *m, const defo_mat3 *F, defo_vec3 a,
                                 double alpha, const defo_mat3 *dF, int project_psd) {
    defo_mat3 out = defo_m3_zero();
    if (!m->fibres) return out;
    const double av[3] = {a.x, a.y, a.z};
    double b[3], v[3];
    for (int r = 0; r < 3; r++) {
        b[r] = F->m[r][0] * av[0] + F->m[r][1] * av[1] + F->m[r][2] * av[2];
        v[r] = dF->m[r][0] * av[0] + dF->m[r][1] * av[1] + dF->m[r][2] * av[2];
    }
    const double lam = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    if (!(lam > 0.0)) return out;
    double T, K;
    defo_material_fibre_eval(m, lam, alpha, &T, &K);
    double g = T > 0.0 ? T / lam : 0.0;
    if (project_psd) {
        g = fmax(g, 0.0);
        K = fmax(K, 0.0);
    }
    const double t[3] = {b[0] / lam, b[1] / lam, b[2] / lam};
    const double tv = (K - g) * (t[0] * v[0] + t[1] * v[1] + t[2] * v[2]);
    for (int r = 0; r < 3; r++) {
        const double kv = g * v[r] + tv * t[r];
        for (int k = 0; k < 3; k++) out.m[r][k] = kv * av[k];
    }
    return out;
}
