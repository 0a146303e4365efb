/*
 * plasticity/mg04.c — MG04 §3 strain plasticity (yield, creep, max; eqs.
 * 13–15) as a defo plasticity model (defo/plasticity.h has the rule).
 *
 * MG04's total strain is the corotated linear strain and its decomposition
 * additive, ε = ε_e + ε_p.  Here the strains are logarithmic: ε_e is the
 * Hencky strain of the trial elastic part F_e = F F_p⁻¹ and ε_p = L_p =
 * log F_p, which agree with the paper's to first order and make the plastic
 * part exp(L_p) invertible whatever the flow.  By default the creep moves
 * only the deviatoric part, so tr L_p stays 0 and det F_p = 1 (volume kept);
 * "volumetric" is the paper's literal rule.
 *
 * Invariants (every update): ‖L_p‖ ≤ c_max (to rounding), L_p within the
 * limit surface, tr L_p = 0 for the deviatoric rule (re-centred each flow,
 * so rounding never accumulates into a volume change).
 */
#include "plasticity/plasticity_internal.h"

static double mg04_radius(const defo_plasticity_def *d, const double *state, double mu) {
    (void)state, (void)mu;
    /* ‖dev ε_e‖ ≤ ‖ε_e‖: either yield test fails below c_yield */
    return d->yield;
}

static unsigned mg04_flow(const defo_plasticity_def *d, const plast_point *in, double *state) {
    double eps[6], L0[6];
    double *L = state;
    memcpy(L0, L, sizeof L0);
    unsigned fl = 0;
    if (!defo_plast_elastic_log(&in->Fe, eps, NULL, NULL, NULL)) {
        fl |= PLAST_SKIPPED;
    } else {
        if (!d->volumetric) plast_sym_dev(eps);
        if (plast_sym_norm(eps) > d->yield) { /* eq. 14: creep toward the total strain */
            const double rate = fmin(1.0, in->dt * d->creep);
            for (int k = 0; k < 6; k++) L[k] += rate * eps[k];
            if (!d->volumetric) plast_sym_dev(L);
            fl |= PLAST_FLOWED;
        }
    }
    const double n = plast_sym_norm(L);
    if (n > d->max) { /* eq. 15 */
        const double sc = d->max / n;
        for (int k = 0; k < 6; k++) L[k] *= sc;
        fl |= PLAST_CAPPED;
    }
    if (defo_plast_limit(L, d->limit, !d->volumetric)) fl |= PLAST_CAPPED;
    if (memcmp(L, L0, sizeof L0) != 0) fl |= PLAST_CHANGED;
    return fl;
}

static defo_status mg04_check(const defo_plasticity_def *d) {
    if (!(d->yield >= 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "yield: %g is not >= 0", d->yield);
    if (!(d->creep >= 0) || !isfinite(d->creep))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "creep: %g is not a finite value >= 0",
                          d->creep);
    if (!(d->max >= 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "max: %g is not >= 0", d->max);
    return DEFO_OK;
}

const plast_ops defo_plast_mg04 = {"mg04", mg04_radius, mg04_flow, mg04_check};
