/*
 * material/material_internal.h — what the material sources share: the
 * compiled material and the one-dimensional "constituents" every model is
 * built from.  Never installed.
 *
 * Every isotropic model defo provides has the form (in the diagonal frame)
 *
 *     ψ(σ) = Σi h(σi) + λ/2 L²,   L = Σi g(σi),
 *
 * with h and g functions of one principal stretch:
 *
 *     corotated    h = μ (s − 1)²             g = s − 1
 *     neo-Hookean  h = μ/2 (s² − 1) − μ ln s   g = ln s
 *     StVK         h = μ/4 (s² − 1)²           g = (s² − 1)/2
 *     biphasic     h = ∫₁ˢ f (ITF04 §6 spline) g = s − 1
 *
 * so P̂i = h'(σi) + λ L g'(σi) and A = ∂P̂/∂σ follows in closed form.  The
 * inversion extension (inversion.c) acts on h and g, which keeps the
 * extended model an exact gradient of an energy (see inversion.c).
 */
#ifndef DEFO_MATERIAL_INTERNAL_H
#define DEFO_MATERIAL_INTERNAL_H

#include "defo/material.h"

/* Values and first two derivatives of h and g at one stretch. */
typedef struct defo_mat_jet {
    double h0, h1, h2;
    double g0, g1, g2;
} defo_mat_jet;

/* One side (compression or elongation) of the biphasic curve, in Pa. */
typedef struct defo_biphasic_side {
    double t;   /* threshold stretch */
    double kt;  /* slope beyond the threshold [Pa] */
    double f_t; /* f(t) [Pa] */
    double h_t; /* h(t) [Pa] */
} defo_biphasic_side;

struct defo_material {
    defo_material_def def;
    double mu, lambda;
    double scale;               /* 2μ + λ */
    int mode;                   /* defo_inversion_mode */
    double c;                   /* compression threshold (unused for NONE) */
    defo_mat_jet at_c;          /* constituents at c, curvature limited per mode */
    double k0;                  /* biphasic slope at rest [Pa] */
    defo_biphasic_side side[2]; /* 0: compression, 1: elongation */
    double mu_d, lambda_d;      /* damping moduli [Pa·s] */
    /* fibre term (fibre.c), from def.fibre by defo_fibre_prepare */
    int fibres;                    /* 1: a passive curve or an active term */
    double fx_star;                /* EXPONENTIAL: λ* − 1 */
    double fT_star, fK_star, fpsi; /* T_p, dT_p/dλ, ψ_p at λ* */
    double fG_rest;                /* G(u) at λ = 1 (fibre.c), the active energy's zero */
    double fu_scale, fu_shift;     /* u = λ fu_scale − fu_shift: 1/(w λ_o), 1/w */
};

/* models.c: the raw model (no extension). */
void defo_model_jet(const defo_material *m, double s, defo_mat_jet *j);
/* Divided differences of h' and g' over [a, b]: (h'(a) − h'(b))/(a − b),
 * exact closed forms where the model has them, stable as a → b (the limit is
 * h''(a)). */
void defo_model_dd(const defo_material *m, double a, double b, double *ddh, double *ddg);
/* Precompute the biphasic spline sides from def (called by create). */
void defo_model_prepare(defo_material *m);

/* fibre.c: the fibre fields' ranges (called by validate) and the curves'
 * constants (called by create). */
defo_status defo_fibre_def_validate(const defo_fibre_def *f);
void defo_fibre_prepare(defo_material *m);

/* inversion.c: the extension's value at c (called by create). */
void defo_inversion_prepare(defo_material *m);
/* inversion.c: h, g and two derivatives at one stretch with the extension
 * (CLAMP mode: continued C0 below c, for inner minimisers such as a shell's
 * thickness stretch), and the divided differences of h', g' over [a, b]. */
void defo_material_jet(const defo_material *m, double s, defo_mat_jet *j);
void defo_material_dd(const defo_material *m, double a, double b, const defo_mat_jet *ja,
                      const defo_mat_jet *jb, double *ddh, double *ddg);

/* A gap |a − b| below which divided differences switch from the direct
 * quotient to an integral approximation; stretches are already relative to
 * the rest shape, so this is a relative tolerance. */
static inline double defo_mat_gap_tol(double a, double b) {
    double s = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return 1e-6 * (s > 1.0 ? s : 1.0);
}

#endif
