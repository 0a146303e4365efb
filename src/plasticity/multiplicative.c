/*
 * plasticity/multiplicative.c — ITF04 §6.3 multiplicative plasticity for
 * invertible bodies, with §7 plasticity control toward a goal shape
 * (defo/plasticity.h has the rule).
 *
 * With the stored plastic stretch S = exp(L_p) (symmetric: the rotation of
 * F_p is arbitrary for an isotropic material, ITF04 §6.3) and the trial
 * F_e = F S⁻¹ = U F̂_e Vᵀ, log F̂_e is projected onto the yield surface:
 * ‖dev log F̂_e‖ ≤ γ keeping its mean (default: det F̂_e, hence det F_p, is
 * kept) or ‖log F̂_e‖ ≤ γ (volumetric, and always with a goal: ITF04 §7
 * notes a goal rarely keeps volume).  F̂_e,proj = exp(projection) has
 * positive entries, so the trial plastic part
 *   F_p,trial = F̂_e,proj⁻¹ Uᵀ F = D Vᵀ S,  D = F̂_e F̂_e,proj⁻¹ (positive)
 * never inverts; its stretch is sqrt(S V D² Vᵀ S), whose logarithm comes
 * from one symmetric eigendecomposition.  Control (§7): on the logarithms
 * (world rotation removed), the point of the segment from L_p to L_trial
 * closest to L_goal.  Then the limit surface on F_p (§6.3's separate limit
 * criterion keeping F_p well conditioned).
 *
 * Invariants: L_p finite and within the limit surface; with the default
 * (deviatoric) yield tr L_p is exactly the old one after a flow (re-centred:
 * rounding never changes the volume).
 */
#include "plasticity/plasticity_internal.h"

static double mult_radius(const defo_plasticity_def *d, const double *state, double stiff) {
    (void)state, (void)stiff;
    return d->gamma; /* ‖dev log F̂_e‖ ≤ ‖log F̂_e‖ = ‖ε_e‖ */
}

static void mult_trial(const defo_plasticity_def *d, const plast_point *in, double *state,
                       plast_trial *t) {
    (void)state;
    const int dim = in->n; /* 3, or 2 in a shell's rest plane */
    const int full = d->volumetric || in->goal;
    if (!in->log_ok) {
        t->fl |= PLAST_SKIPPED;
        return;
    }
    const double *l = in->l;
    double lp[3] = {0, 0, 0}, m = 0, n = 0;
    for (int i = 0; i < dim; i++) m += l[i];
    m = full ? 0.0 : m / dim;
    for (int i = 0; i < dim; i++) n += (l[i] - m) * (l[i] - m);
    n = sqrt(n);
    if (n > d->gamma) { /* project onto the yield surface */
        for (int i = 0; i < dim; i++) lp[i] = m + (l[i] - m) * (d->gamma / n);
        /* the stretch of F_p,trial = D Vᵀ S: sqrt(S V D² Vᵀ S) */
        t->push = 1;
        t->W = in->V;
        for (int i = 0; i < 3; i++) t->d[i] = l[i] - lp[i];
    }
}

static unsigned mult_finish(const defo_plasticity_def *d, const plast_point *in, double *state,
                            const plast_trial *t, int ok, const plast_eig *pushed,
                            const defo_mat3 *Q) {
    (void)Q;
    double *L = state;
    const int dim = in->n;
    unsigned fl = t->fl;
    plast_eig e;
    int have = 0;
    const int full = d->volumetric || in->goal;
    if (t->push && ok) {
        e = *pushed;
        if (!full) { /* the same volume (area) exactly */
            /* the in-plane trace: a von Mises state before (L_zz) is dropped */
            double sh = dim == 3 ? plast_sym_trace(L) : L[0] + L[1];
            for (int i = 0; i < dim; i++) sh -= e.h[i];
            sh /= dim;
            for (int i = 0; i < dim; i++) e.h[i] += sh;
        }
        if (in->goal) { /* ITF04 §7: closest point of [L, Lt] to the goal */
            double Lt[6], dL[6], dG[6], Ln[6];
            defo_plast_eig_store(&e, Lt, NULL);
            for (int k = 0; k < 6; k++) dL[k] = Lt[k] - L[k], dG[k] = in->goal[k] - L[k];
            const double dd = plast_sym_dot(dL, dL);
            double tt = dd > 0 ? plast_sym_dot(dG, dL) / dd : 0.0;
            tt = tt < 0 ? 0 : tt > 1 ? 1 : tt;
            for (int k = 0; k < 6; k++) Ln[k] = L[k] + tt * dL[k];
            defo_plast_eig_of(Ln, dim, &e);
        }
        have = 1;
        fl |= PLAST_FLOWED;
    } else if (t->push) {
        fl |= PLAST_SKIPPED;
    }
    if (!have) {
        if (!defo_plast_may_project(L, INFINITY, d->limit)) return fl;
        defo_plast_eig_of(L, dim, &e);
    }
    if (defo_plast_limit(e.h, dim, d->limit, !full)) fl |= PLAST_CAPPED;
    if (!(fl & (PLAST_FLOWED | PLAST_CAPPED))) return fl;
    defo_plast_eig_store(&e, L, in->fpi);
    return fl | PLAST_CHANGED;
}

static defo_status mult_check(const defo_plasticity_def *d) {
    if (!(d->gamma >= 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "gamma: %g is not >= 0", d->gamma);
    return DEFO_OK;
}

const plast_ops defo_plast_multiplicative = {"multiplicative", mult_radius, mult_trial, NULL,
                                             mult_finish,      mult_check};
