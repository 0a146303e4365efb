/*
 * plasticity/mg04.c — MG04 §3 strain plasticity (yield, creep, max; eqs.
 * 13–15) as a defo plasticity model (defo/plasticity.h has the rule).
 *
 * MG04's total strain is the corotated linear strain and its decomposition
 * additive, ε = ε_e + ε_p.  Here the strains are logarithmic: ε_e is the
 * Hencky strain of the trial elastic part F_e = F F_p⁻¹ = U Σ Vᵀ (the strain
 * the force model's stress comes from) and the creep step r·d (d = dev ε_e,
 * or ε_e for the literal rule) flows as F_p ← exp(r d) F_p, which takes
 * exactly r·d out of the elastic strain (d shares F_e's axes) and agrees
 * with the paper's additive rule to first order; F_p = exp(L_p) stays
 * invertible whatever the flow.  By default the creep moves only the
 * deviatoric part, so tr L_p stays as it was and det F_p with it (volume
 * kept; on tet4 solids plasticity.c then trades volume between elements
 * over node patches); "volumetric" is the paper's literal rule.
 *
 * Shells: the same rule in the triangle's rest plane (n = 2):
 * 2×2 Hencky strains, d = ε_e − ½ tr ε_e I₂ by default, so each triangle
 * keeps its area (tr L_p stays 0).
 *
 * Invariants (every update): ‖L_p‖ ≤ c_max (to rounding), L_p within the
 * limit surface, tr L_p unchanged by the deviatoric rule's flow
 * (re-centred each flow, so rounding never accumulates into a volume
 * change).
 */
#include "plasticity/plasticity_internal.h"

static double mg04_radius(const defo_plasticity_def *d, const double *state, double stiff) {
    (void)state, (void)stiff;
    /* ‖dev ε_e‖ ≤ ‖ε_e‖: either yield test fails below c_yield */
    return d->yield;
}

/* Solids (n = 3) and shells (n = 2, the rest plane): the same rule over
 * F_e's n principal strains. */
static void mg04_trial(const defo_plasticity_def *d, const plast_point *in, double *state,
                       plast_trial *t) {
    (void)state;
    const int n = in->n;
    if (!in->log_ok) {
        t->fl |= PLAST_SKIPPED;
        return;
    }
    /* ε_e = V diag(l) Vᵀ; d its deviator (or itself): the same axes */
    double l[3] = {in->l[0], in->l[1], in->l[2]}, m = 0, nd = 0;
    for (int i = 0; i < n; i++) m += l[i];
    m = d->volumetric ? 0.0 : m / n;
    for (int i = 0; i < n; i++) l[i] -= m, nd += l[i] * l[i];
    if (sqrt(nd) > d->yield) {
        /* eq. 14: creep toward the total strain, F_p ← exp(r d) F_p */
        const double rate = fmin(1.0, in->dt * d->creep);
        t->push = 1;
        t->W = in->V;
        for (int i = 0; i < 3; i++) t->d[i] = rate * l[i];
    }
}

static unsigned mg04_finish(const defo_plasticity_def *d, const plast_point *in, double *state,
                            const plast_trial *t, int ok, const plast_eig *pushed,
                            const defo_mat3 *Q) {
    (void)Q;
    double *L = state;
    const int n = in->n;
    unsigned fl = t->fl;
    plast_eig e;
    int have = 0;
    if (t->push && ok) {
        e = *pushed;
        if (!d->volumetric) { /* the same volume (area) exactly */
            /* the in-plane trace: a von Mises state before (L_zz) is dropped */
            double sh = n == 3 ? plast_sym_trace(L) : L[0] + L[1];
            for (int i = 0; i < n; i++) sh -= e.h[i];
            sh /= n;
            for (int i = 0; i < n; i++) e.h[i] += sh;
        }
        have = 1;
        fl |= PLAST_FLOWED;
    } else if (t->push) {
        fl |= PLAST_SKIPPED;
    }
    if (!have) {
        if (!defo_plast_may_project(L, d->max, d->limit)) return fl;
        defo_plast_eig_of(L, n, &e);
    }
    double nh = 0;
    for (int i = 0; i < n; i++) nh += e.h[i] * e.h[i];
    nh = sqrt(nh);
    if (nh > d->max) { /* eq. 15 */
        for (int i = 0; i < n; i++) e.h[i] *= d->max / nh;
        fl |= PLAST_CAPPED;
    }
    if (defo_plast_limit(e.h, n, d->limit, !d->volumetric)) fl |= PLAST_CAPPED;
    if (!(fl & (PLAST_FLOWED | PLAST_CAPPED))) return fl;
    defo_plast_eig_store(&e, L, in->fpi);
    return fl | PLAST_CHANGED;
}

static defo_status mg04_check(const defo_plasticity_def *d) {
    if (!(d->yield >= 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "yield: %g is not >= 0", d->yield);
    if (!(d->creep >= 0) || !isfinite(d->creep))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "creep: %g is not a finite value >= 0",
                          d->creep);
    if (!(d->max >= 0)) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "max: %g is not >= 0", d->max);
    return DEFO_OK;
}

const plast_ops defo_plast_mg04 = {"mg04", mg04_radius, mg04_trial, NULL, mg04_finish, mg04_check};
