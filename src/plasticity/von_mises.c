/*
 * plasticity/von_mises.c — von Mises plasticity with linear kinematic and
 * isotropic hardening, MTPS08 §5.1–5.2 (defo/plasticity.h has the rule and
 * how its σ_y and H relate to the paper's).
 *
 * State per point: L_p (the plastic Hencky strain, MTPS08's ε_pl), the back
 * stress κ [Pa] (6, in the intermediate frame where F_e acts) and the
 * accumulated plastic strain ᾱ.  The trial elastic strain is the Hencky
 * strain of F_e = F F_p⁻¹ and the trial stress the linear one,
 * s = 2μ dev ε_e (μ the element material's shear modulus), so the radial
 * return below puts the stress exactly on the moved yield surface for a
 * linear material (MTPS08's λ with the hardening in the denominator): for
 * the corotated linear material at small elastic strain the uniaxial closed
 * form holds to O(ε_e).  Flow is along n = ξ/‖ξ‖, a deviatoric direction,
 * as F_p ← exp(Δγ n) F_p (the stretch kept, κ turned with the rotation
 * dropped): tr L_p and det F_p are kept (on tet4 solids plasticity.c then
 * trades volume between elements over node patches).
 *
 * Invariants: ‖L_p‖ ≤ max, L_p within the limit surface, tr L_p unchanged
 * by the flow; a
 * step cut by max or the limit hardens only by the part it took.
 */
#include "plasticity/plasticity_internal.h"

static double vm_radius(const defo_plasticity_def *d, const double *state, double stiff) {
    /* ‖ξ‖ ≤ stiff ‖ε_e‖ + ‖κ‖ (stiff = 2μ): below this ‖ε_e‖ the trial
     * stays inside */
    const double r = sqrt(2.0 / 3.0) * (d->yield_stress + d->isotropic_hardening * state[12]);
    const double room = r - plast_sym_norm(state + 6);
    return room > 0 && stiff > 0 ? room / stiff : 0.0;
}

static unsigned vm_flow(const defo_plasticity_def *d, const plast_point *in, double *state) {
    double eps[6], xi[6], kn[6];
    double *L = state, *kappa = state + 6;
    unsigned fl = 0;
    memcpy(kn, kappa, sizeof kn);
    double dg = 0;
    plast_eig e;
    int have = 0;
    if (!defo_plast_elastic_log(&in->Fe, 3, eps, NULL, NULL)) {
        fl |= PLAST_SKIPPED;
    } else {
        plast_sym_dev(eps);
        for (int k = 0; k < 6; k++) xi[k] = 2 * in->mu * eps[k] - kappa[k];
        const double nx = plast_sym_norm(xi);
        const double H = d->hardening, K = d->isotropic_hardening;
        const double f = nx - sqrt(2.0 / 3.0) * (d->yield_stress + K * state[12]);
        if (f > 0 && nx > 0) { /* radial return onto the moved, grown surface */
            dg = f / (2 * in->mu + (2.0 / 3.0) * (H + K));
            /* F_p ← exp(Δγ n) F_p, n = ξ/‖ξ‖ in F_e's frame */
            defo_mat3 W, Q;
            double nv[3];
            defo_plast_sym_eig(xi, nv, &W);
            const double step[3] = {dg * nv[0] / nx, dg * nv[1] / nx, dg * nv[2] / nx};
            if (defo_plast_push(in->fpi, 3, &W, step, &e, &Q)) {
                const double sh = (plast_sym_trace(L) - e.h[0] - e.h[1] - e.h[2]) / 3;
                for (int i = 0; i < 3; i++) e.h[i] += sh;
                /* κ += (2/3) H Δγ n, carried into the new intermediate frame */
                for (int k = 0; k < 6; k++) kn[k] = kappa[k] + (2.0 / 3.0) * H * dg * xi[k] / nx;
                const defo_mat3 Km = plast_sym_to_m3(kn);
                const defo_mat3 R = defo_m3_tmul(Q, defo_m3_mul(Km, Q));
                plast_m3_to_sym(&R, kn);
                have = 1;
                fl |= PLAST_FLOWED;
            } else {
                dg = 0;
                fl |= PLAST_SKIPPED;
            }
        }
    }
    if (!have) {
        if (!defo_plast_may_project(L, d->max, d->limit)) return fl;
        defo_plast_eig_of(L, 3, &e);
    }
    const double full = have ? fabs(dg) : 0.0;
    double Ln[6];
    defo_plast_eig_store(&e, Ln, NULL);
    double dl[6];
    for (int k = 0; k < 6; k++) dl[k] = Ln[k] - L[k];
    const double taken0 = plast_sym_norm(dl);
    const double n = sqrt(e.h[0] * e.h[0] + e.h[1] * e.h[1] + e.h[2] * e.h[2]);
    if (n > d->max) { /* MTPS08: the range of plastic deformation is limited */
        for (int i = 0; i < 3; i++) e.h[i] *= d->max / n;
        fl |= PLAST_CAPPED;
    }
    if (defo_plast_limit(e.h, 3, d->limit, 1)) fl |= PLAST_CAPPED;
    if (!(fl & (PLAST_FLOWED | PLAST_CAPPED))) return fl;
    defo_plast_eig_store(&e, Ln, in->fpi);
    if ((fl & PLAST_CAPPED) && full > 0) {
        /* held back: harden only by the part of the step taken */
        for (int k = 0; k < 6; k++) dl[k] = Ln[k] - L[k];
        const double t = taken0 > 0 ? fmin(1.0, plast_sym_norm(dl) / taken0) : 0.0;
        for (int k = 0; k < 6; k++) kn[k] = kappa[k] + t * (kn[k] - kappa[k]);
        dg *= t;
    }
    memcpy(L, Ln, sizeof Ln);
    memcpy(kappa, kn, sizeof kn);
    state[12] += sqrt(2.0 / 3.0) * dg;
    return fl | PLAST_CHANGED;
}

static defo_status vm_check(const defo_plasticity_def *d) {
    if (!(d->yield_stress > 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "yield_stress: %g is not > 0",
                          d->yield_stress);
    if (!(d->hardening >= 0) || !isfinite(d->hardening))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "hardening: %g is not a finite value >= 0",
                          d->hardening);
    if (!(d->isotropic_hardening >= 0) || !isfinite(d->isotropic_hardening))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "isotropic_hardening: %g is not a finite value >= 0",
                          d->isotropic_hardening);
    if (!(d->max >= 0)) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "max: %g is not >= 0", d->max);
    return DEFO_OK;
}

const plast_ops defo_plast_von_mises = {"von_mises", vm_radius, vm_flow, vm_check};
