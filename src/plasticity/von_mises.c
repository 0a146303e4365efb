/*
 * plasticity/von_mises.c — von Mises plasticity with linear kinematic and
 * isotropic hardening, MTPS08 §5.1–5.2 (defo/plasticity.h has the rule and
 * how its σ_y and H relate to the paper's).
 *
 * State per point: L_p (the plastic Hencky strain, MTPS08's ε_pl), the back
 * stress κ [Pa] (6) and the accumulated plastic strain ᾱ.  The trial elastic
 * strain is the Hencky strain of F_e = F F_p⁻¹ and the trial stress the
 * linear one, s = 2μ dev ε_e (μ the element material's shear modulus), so
 * the radial return below puts the stress exactly on the moved yield
 * surface for a linear material (MTPS08's λ with the hardening in the
 * denominator): for the corotated linear material at small elastic strain
 * the uniaxial closed form holds to O(ε_e).  Flow is along n = ξ/‖ξ‖, a
 * deviatoric direction: tr L_p = 0, det F_p = 1.
 *
 * Invariants: ‖L_p‖ ≤ max, L_p within the limit surface, κ = (2/3) H ×
 * (the plastic strain actually taken) — a step cut by max or the limit
 * hardens only by what it took.
 */
#include "plasticity/plasticity_internal.h"

static double vm_radius(const defo_plasticity_def *d, const double *state, double mu) {
    /* ‖ξ‖ ≤ 2μ ‖ε_e‖ + ‖κ‖: below this ‖ε_e‖ the trial stays inside */
    const double r = sqrt(2.0 / 3.0) * (d->yield_stress + d->isotropic_hardening * state[12]);
    const double room = r - plast_sym_norm(state + 6);
    return room > 0 && mu > 0 ? room / (2 * mu) : 0.0;
}

static unsigned vm_flow(const defo_plasticity_def *d, const plast_point *in, double *state) {
    double eps[6], xi[6], Ln[6], dL[6];
    double *L = state, *kappa = state + 6;
    unsigned fl = 0;
    memcpy(Ln, L, sizeof Ln);
    if (!defo_plast_elastic_log(&in->Fe, eps, NULL, NULL, NULL)) {
        fl |= PLAST_SKIPPED;
    } else {
        plast_sym_dev(eps);
        for (int k = 0; k < 6; k++) xi[k] = 2 * in->mu * eps[k] - kappa[k];
        const double nx = plast_sym_norm(xi);
        const double H = d->hardening, K = d->isotropic_hardening;
        const double f = nx - sqrt(2.0 / 3.0) * (d->yield_stress + K * state[12]);
        if (f > 0 && nx > 0) { /* radial return onto the moved, grown surface */
            const double dg = f / (2 * in->mu + (2.0 / 3.0) * (H + K));
            for (int k = 0; k < 6; k++) Ln[k] += dg * xi[k] / nx;
            plast_sym_dev(Ln);
            fl |= PLAST_FLOWED;
        }
    }
    const double n = plast_sym_norm(Ln);
    if (n > d->max) { /* MTPS08: the range of plastic deformation is limited */
        for (int k = 0; k < 6; k++) Ln[k] *= d->max / n;
        fl |= PLAST_CAPPED;
    }
    if (defo_plast_limit(Ln, d->limit, 1)) fl |= PLAST_CAPPED;
    if (memcmp(Ln, L, sizeof Ln) == 0) return fl;
    for (int k = 0; k < 6; k++) dL[k] = Ln[k] - L[k];
    for (int k = 0; k < 6; k++) kappa[k] += (2.0 / 3.0) * d->hardening * dL[k];
    if (fl & PLAST_FLOWED) state[12] += sqrt(2.0 / 3.0) * plast_sym_norm(dL);
    memcpy(L, Ln, sizeof Ln);
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
    if (!(d->max >= 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "max: %g is not >= 0", d->max);
    return DEFO_OK;
}

const plast_ops defo_plast_von_mises = {"von_mises", vm_radius, vm_flow, vm_check};
