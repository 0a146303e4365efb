/*
 * material/models.c — the four isotropic models of defo, each written as two
 * functions of one principal stretch (see material_internal.h):
 * ψ(σ) = Σ h(σi) + λ/2 (Σ g(σi))².
 *
 * Per model this file gives h, g with two derivatives (the "jet") and the
 * divided differences (h'(a) − h'(b))/(a − b), (g'(a) − g'(b))/(a − b) that
 * the off-diagonal dP/dF blocks need (TSIF05 §8).  Writing them in closed
 * form (e.g. neo-Hookean: μ(1 + 1/(ab))) is what keeps the B blocks exact at
 * repeated stretches σi = σj, where the quotient form is 0/0.
 *
 * Biphasic model (ITF04 §6).  The paper: "choosing threshold values for
 * compression and elongation, specifying the slope of the stress curve
 * outside these threshold values and at the undeformed state, and using a
 * cubic spline to interpolate between them ... equipped with a linear
 * pressure component".  It leaves the spline's knot values open.  defo uses
 * one cubic per side, t the threshold, kt its slope, k0 the rest slope:
 *     f(1) = 0, f'(1) = k0, f'(t) = kt, f''(t) = 0,
 * i.e. f'(s) = kt + (k0 − kt) u², u = (s − t)/(1 − t) ∈ [0, 1], so the curve
 * joins its linear tail with C2 continuity and is C1 at rest.  The linear
 * pressure component is λ tr(F̂ − I), i.e. g(s) = s − 1 as for corotated.
 */
#include "material/material_internal.h"

#include <math.h>

/* ------------------------------------------------------------ biphasic */
/* Which piece a stretch lies on: 0 compression tail, 1 compression spline,
 * 2 elongation spline, 3 elongation tail. */
static int biphasic_piece(const defo_material *m, double s) {
    if (s <= m->side[0].t) return 0;
    if (s < 1.0) return 1;
    if (s < m->side[1].t) return 2;
    return 3;
}

/* f, f', f'' and h = ∫₁ˢ f on one piece. */
static void biphasic_eval(const defo_material *m, int piece, double s, double *h, double *f,
                          double *df, double *ddf) {
    const defo_biphasic_side *sd = &m->side[piece < 2 ? 0 : 1];
    double t = sd->t, kt = sd->kt, k0 = m->k0;
    if (piece == 0 || piece == 3) {
        double d = s - t;
        *h = sd->h_t + sd->f_t * d + 0.5 * kt * d * d;
        *f = sd->f_t + kt * d;
        *df = kt;
        *ddf = 0;
        return;
    }
    double w = 1.0 - t, u = (s - t) / w, dk = k0 - kt;
    *f = kt * (s - 1.0) + dk * w * (u * u * u - 1.0) / 3.0;
    *df = kt + dk * u * u;
    *ddf = 2.0 * dk * u / w;
    *h = 0.5 * kt * (s - 1.0) * (s - 1.0) +
         dk * w * w * ((u * u * u * u - 1.0) / 4.0 - (u - 1.0)) / 3.0;
}

/* (f(a) − f(b))/(a − b) for the biphasic curve. */
static double biphasic_dd(const defo_material *m, double a, double b) {
    int pa = biphasic_piece(m, a), pb = biphasic_piece(m, b);
    if (pa == pb) {
        const defo_biphasic_side *sd = &m->side[pa < 2 ? 0 : 1];
        if (pa == 0 || pa == 3) return sd->kt;
        /* (u_a³ − u_b³)/(a − b) = (u_a² + u_a u_b + u_b²)/(1 − t): exact. */
        double w = 1.0 - sd->t, ua = (a - sd->t) / w, ub = (b - sd->t) / w;
        return sd->kt + (m->k0 - sd->kt) * (ua * ua + ua * ub + ub * ub) / 3.0;
    }
    double h, fa, fb, d1, d2;
    if (fabs(a - b) > defo_mat_gap_tol(a, b)) {
        biphasic_eval(m, pa, a, &h, &fa, &d1, &d2);
        biphasic_eval(m, pb, b, &h, &fb, &d1, &d2);
        return (fa - fb) / (a - b);
    }
    /* Tiny gap across a knot k: ∫ f' over [a, k] and [k, b] by midpoints. */
    double lo = a < b ? a : b, hi = a < b ? b : a;
    int plo = a < b ? pa : pb, phi = a < b ? pb : pa;
    double k = plo == 0 ? m->side[0].t : plo == 1 ? 1.0 : m->side[1].t;
    if (phi != plo + 1 || !(k >= lo && k <= hi)) k = 0.5 * (lo + hi);
    double f, s1, s2;
    biphasic_eval(m, plo, 0.5 * (lo + k), &h, &f, &s1, &d2);
    biphasic_eval(m, phi, 0.5 * (k + hi), &h, &f, &s2, &d2);
    return (s1 * (k - lo) + s2 * (hi - k)) / (hi - lo);
}

void defo_model_prepare(defo_material *m) {
    const defo_biphasic_def *b = &m->def.biphasic;
    double two_mu = 2.0 * m->mu;
    m->k0 = b->rest_slope * two_mu;
    double t[2] = {b->compression_threshold, b->elongation_threshold};
    double kt[2] = {b->compression_slope * two_mu, b->elongation_slope * two_mu};
    for (int i = 0; i < 2; i++) {
        defo_biphasic_side *sd = &m->side[i];
        double w = 1.0 - t[i], dk = m->k0 - kt[i];
        sd->t = t[i];
        sd->kt = kt[i];
        /* u = 0 at s = t in the spline formulas above. */
        sd->f_t = kt[i] * (t[i] - 1.0) - dk * w / 3.0;
        sd->h_t = 0.5 * kt[i] * w * w + dk * w * w / 4.0;
    }
}

/* ------------------------------------------------------------- jets */
void defo_model_jet(const defo_material *m, double s, defo_mat_jet *j) {
    double mu = m->mu;
    switch (m->def.model) {
    case DEFO_MODEL_COROTATED:
        j->h0 = mu * (s - 1.0) * (s - 1.0);
        j->h1 = 2.0 * mu * (s - 1.0);
        j->h2 = 2.0 * mu;
        j->g0 = s - 1.0;
        j->g1 = 1.0;
        j->g2 = 0.0;
        break;
    case DEFO_MODEL_NEO_HOOKEAN: {
        double inv = 1.0 / s, ls = log(s);
        j->h0 = 0.5 * mu * (s * s - 1.0) - mu * ls;
        j->h1 = mu * (s - inv);
        j->h2 = mu * (1.0 + inv * inv);
        j->g0 = ls;
        j->g1 = inv;
        j->g2 = -inv * inv;
        break;
    }
    case DEFO_MODEL_STVK: {
        double e = 0.5 * (s * s - 1.0);
        j->h0 = mu * e * e;
        j->h1 = 2.0 * mu * e * s;
        j->h2 = mu * (3.0 * s * s - 1.0);
        j->g0 = e;
        j->g1 = s;
        j->g2 = 1.0;
        break;
    }
    case DEFO_MODEL_BIPHASIC:
    default:
        biphasic_eval(m, biphasic_piece(m, s), s, &j->h0, &j->h1, &j->h2, &(double){0});
        j->g0 = s - 1.0;
        j->g1 = 1.0;
        j->g2 = 0.0;
        break;
    }
}

void defo_model_dd(const defo_material *m, double a, double b, double *ddh, double *ddg) {
    double mu = m->mu;
    switch (m->def.model) {
    case DEFO_MODEL_COROTATED:
        *ddh = 2.0 * mu;
        *ddg = 0.0;
        break;
    case DEFO_MODEL_NEO_HOOKEAN:
        /* (a − 1/a − b + 1/b)/(a − b) = 1 + 1/(ab); (1/a − 1/b)/(a − b) = −1/(ab) */
        *ddh = mu * (1.0 + 1.0 / (a * b));
        *ddg = -1.0 / (a * b);
        break;
    case DEFO_MODEL_STVK:
        /* (a³ − a − b³ + b)/(a − b) = a² + ab + b² − 1 */
        *ddh = mu * (a * a + a * b + b * b - 1.0);
        *ddg = 1.0;
        break;
    case DEFO_MODEL_BIPHASIC:
    default:
        *ddh = biphasic_dd(m, a, b);
        *ddg = 0.0;
        break;
    }
}

/* ------------------------------------------------------------- names */
static const char *const model_names[DEFO_MODEL_COUNT] = {"corotated", "neo_hookean", "stvk",
                                                          "biphasic"};

const char *defo_material_model_name(defo_material_model model) {
    if ((int)model < 0 || (int)model >= DEFO_MODEL_COUNT) return "unknown";
    return model_names[model];
}
