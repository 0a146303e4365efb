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

#include <math.h>

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

/* φ₂(y) = e^y − 1 − y and φ₃(y) = e^y − 1 − y − y²/2 for y ≥ 0: their
 * Taylor series below 1/2 (terms to y^18/18!, truncation below 1e-17
 * relative), expm1 above (cancellation at most a few ε there). */
static void phi23(double y, double *p2, double *p3) {
    if (y < 0.5) {
        /* Horner on Σ_{n≥3} yⁿ/n! = y³/6 (1 + y/4 (1 + y/5 (...))) */
        double s = 1.0;
        for (int n = 18; n >= 4; n--) s = 1.0 + s * y / n;
        const double t3 = y * y * y / 6.0 * s;
        *p3 = t3;
        *p2 = 0.5 * y * y + t3;
        return;
    }
    const double e = expm1(y);
    *p2 = e - y;
    *p3 = e - y - 0.5 * y * y;
}

/* Passive curve at x = λ − 1 > 0 below the linear part. */
static double passive_exp(const defo_fibre_def *f, double x, double *T, double *K) {
    const double k = f->exp_rate, P1 = f->exp_stress;
    if (k == 0.0) { /* e^{0} − 1 − 0 = 0: no passive stress */
        *T = 0.0, *K = 0.0;
        return 0.0;
    }
    double p2, p3;
    phi23(k * x, &p2, &p3);
    *T = P1 * p2;
    *K = P1 * k * expm1(k * x);
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
    m->fG_rest = f->max_active_stress > 0
                     ? active_G((1.0 / f->optimal_stretch - 1.0) / f->active_width)
                     : 0.0;
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
        const double u = (lam / lo - 1.0) / w;
        psi += smax * lo * w * (active_G(u) - m->fG_rest);
        if (u > -1.0 && u < 1.0) {
            const double q = 1.0 - u * u;
            t += smax * q * q;
            k += -4.0 * smax * u * q / (w * lo);
        }
    }
    if (T) *T = t;
    if (K) *K = k;
    return psi;
}

double defo_material_fibre_stress(const defo_material *m, double lam, double alpha, double *K) {
    const defo_fibre_def *f = &m->def.fibre;
    double t = 0.0, k = 0.0;
    const double x = lam - 1.0;
    if (x > 0.0) {
        if (f->passive == DEFO_FIBRE_PASSIVE_EXPONENTIAL) {
            if (x <= m->fx_star) {
                const double y = f->exp_rate * x, e = expm1(y);
                t = f->exp_stress * (e - y);
                k = f->exp_stress * f->exp_rate * e;
            } else {
                t = m->fT_star + m->fK_star * (x - m->fx_star);
                k = m->fK_star;
            }
        } else if (f->passive == DEFO_FIBRE_PASSIVE_POLYNOMIAL) {
            t = x * x * (f->poly2 + f->poly3 * x);
            k = x * (2.0 * f->poly2 + 3.0 * f->poly3 * x);
        }
    }
    if (f->max_active_stress > 0 && alpha != 0.0) {
        const double lo = f->optimal_stretch, w = f->active_width;
        const double u = (lam / lo - 1.0) / w;
        if (u > -1.0 && u < 1.0) {
            const double smax = alpha * f->max_active_stress, q = 1.0 - u * u;
            t += smax * q * q;
            k += -4.0 * smax * u * q / (w * lo);
        }
    }
    if (K) *K = k;
    return t;
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
