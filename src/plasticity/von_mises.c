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
 * Shells (vm_flow_plane): plane stress.  The shell's membrane condenses
 * the thickness stretch (σ_zz = 0), which for the linear material at small
 * elastic strain is the in-plane law σ = 2μ ε_e + λ* tr ε_e I₂ with
 * λ* = 2μλ/(λ + 2μ); ε_e is the 2×2 Hencky strain of the in-plane F_e.  The
 * yield function is the 3-D one on ξ = dev σ − κ with σ_zz = 0 (κ 3-D,
 * deviatoric), and the flow the 3-D associative one, Δε_p = Δγ ξ/‖ξ‖, whose
 * thickness part ε_p,zz = −tr of the in-plane part is kept in L_p (the
 * elastic thickness strain is condensed anew by the shell at every
 * evaluation).  The plane-stress condition makes the return not radial: with
 * g = Δγ/‖ξ_new‖, the in-plane deviator of ξ scales by 1/(1 + a g) and its
 * zz part by 1/(1 + b g), a = 2μ + (2/3)H, b = (2/3)(μ + λ* + H) (the trace
 * couples through λ*), and the consistency condition is one scalar equation
 *   (1 − (2/3)K g) √(A/(1 + a g)² + B/(1 + b g)²) = √(2/3)(σ_y + K ᾱ),
 * A = ‖dev₂ ξ_trial‖², B = (3/2) ξ_trial,zz², with one root in the bracket
 * plane_root keeps (Simo & Taylor 1986's plane-stress closest-point
 * projection).  Backward Euler on the flow: exact for the linear material
 * in the sense the solid's radial return is (under proportional loading,
 * e.g. the uniaxial and equibiaxial loops, it reproduces the closed form);
 * other materials see the linear trial stress, an O(ε_e) approximation.
 * The shell's thickness itself (its bending stiffness and the membrane's
 * h A weight) stays the rest one: the weight is exact (det F_p = 1), the
 * bending ignores plastic thinning.
 *
 * Invariants: ‖L_p‖ ≤ max, L_p within the limit surface, tr L_p unchanged
 * by the flow (shells: L_zz = −(L_xx + L_yy) and κ_zz = −(κ_xx + κ_yy)
 * set exactly); a step cut by max or the limit hardens only by the part it
 * took.
 */
#include "plasticity/plasticity_internal.h"

#include <float.h>

static double vm_radius(const defo_plasticity_def *d, const double *state, double stiff) {
    /* ‖ξ‖ ≤ stiff ‖ε_e‖ + ‖κ‖ (stiff: 2μ; a shell's plane stress 2(μ + λ*)):
     * below this ‖ε_e‖ the trial stays inside */
    const double r = sqrt(2.0 / 3.0) * (d->yield_stress + d->isotropic_hardening * state[12]);
    const double room = r - plast_sym_norm(state + 6);
    return room > 0 && stiff > 0 ? room / stiff : 0.0;
}

/* The plane-stress consistency condition (top of the file): the root g of
 * ψ(g) = (1 − c g) N(g) − R,  N² = A/(1 + a g)² + B/(1 + b g)²,
 * ψ(0) > 0 and ψ decreasing; Newton kept inside a shrinking bracket, a
 * fixed rule (the same bits on any thread). */
static double plane_root(double A, double B, double a, double b, double c, double R) {
    double lo = 0, hi = (sqrt(A + B) / R - 1) / fmin(a, b);
    if (c > 0) hi = fmin(hi, 1 / c);
    double g = 0;
    for (int it = 0; it < 100; it++) {
        const double ia = 1 / (1 + a * g), ib = 1 / (1 + b * g);
        const double N = sqrt(A * ia * ia + B * ib * ib);
        const double psi = (1 - c * g) * N - R;
        if (psi > 0)
            lo = g;
        else
            hi = g;
        if (psi == 0 || !(N > 0)) break;
        const double dN = -(a * A * ia * ia * ia + b * B * ib * ib * ib) / N;
        double gn = g - psi / (-c * N + (1 - c * g) * dN);
        if (!(gn > lo && gn < hi)) gn = 0.5 * (lo + hi);
        const double step = fabs(gn - g);
        g = gn;
        if (step <= 4 * DBL_EPSILON * g) break;
    }
    return g;
}

/* Shells (in->n = 2): the plane-stress return of the top of the file.
 * Tensors as 6 numbers with zz the thickness direction: L_p and κ are 3-D
 * and traceless (zz = −(xx + yy), kept exactly), F_p⁻¹ = diag(block, e^(−L_zz)). */
/* The back stress after a flow: κ + c ξ (c ξ = (2/3) H Δγ n, MTPS08
 * §5.2's linear kinematic hardening), carried into the new intermediate
 * frame by Q (Qᵀ (·) Q). */
static void back_stress(const double kappa[6], double c, const double xi[6], const defo_mat3 *Q,
                        double out[6]) {
    for (int k = 0; k < 6; k++) out[k] = kappa[k] + c * xi[k];
    const defo_mat3 K = plast_sym_to_m3(out);
    const defo_mat3 R = defo_m3_tmul(*Q, defo_m3_mul(K, *Q));
    plast_m3_to_sym(&R, out);
}

static unsigned vm_flow_plane(const defo_plasticity_def *d, const plast_point *in, double *state) {
    double *L = state, *kappa = state + 6;
    const double mu = in->mu, ls = in->lambda, H = d->hardening, K = d->isotropic_hardening;
    unsigned fl = 0;
    double kn[6], eps[6], dg = 0;
    memcpy(kn, kappa, sizeof kn);
    plast_eig e;
    int have = 0;
    if (!in->log_ok) {
        fl |= PLAST_SKIPPED;
    } else {
        defo_plast_log_strain(in, eps);
        /* trial σ = 2μ ε_e + λ* tr ε_e I₂ (σ_zz = 0); ξ = dev σ − κ as its
         * in-plane deviator X (xx, yy, xy) and ξ_zz */
        const double te = eps[0] + eps[1];
        const double sx = 2 * mu * eps[0] + ls * te, sy = 2 * mu * eps[1] + ls * te;
        const double sxy = 2 * mu * eps[3], p3 = (sx + sy) / 3;
        const double z = -p3 - kappa[2];
        const double hx = 0.5 * (sx - kappa[0] - sy + kappa[1]);
        const double X[3] = {hx, -hx, sxy - kappa[3]};
        const double A = 2 * (hx * hx + X[2] * X[2]), B = 1.5 * z * z;
        const double R = sqrt(2.0 / 3.0) * (d->yield_stress + K * state[12]);
        if (sqrt(A + B) > R) {
            const double a = 2 * mu + (2.0 / 3.0) * H, b = (2.0 / 3.0) * (mu + ls + H);
            const double g = plane_root(A, B, a, b, (2.0 / 3.0) * K, R);
            /* ξ at the end; the flow g ξ (Δγ = g ‖ξ‖) */
            const double xa = hx / (1 + a * g), xy = X[2] / (1 + a * g), zn = z / (1 + b * g);
            const double xi[6] = {xa - 0.5 * zn, -xa - 0.5 * zn, zn, xy, 0, 0};
            dg = g * sqrt(plast_sym_dot(xi, xi));
            double Dl[6];
            for (int k = 0; k < 6; k++) Dl[k] = g * xi[k];
            plast_eig w;
            defo_plast_eig_of(Dl, 2, &w); /* the in-plane block's axes */
            defo_mat3 Q;
            if (g > 0 && defo_plast_push(in->fpi, 2, &w.V, w.h, &e, &Q)) {
                back_stress(kappa, (2.0 / 3.0) * H * g, xi, &Q, kn);
                kn[2] = -(kn[0] + kn[1]);
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
        defo_plast_eig_of(L, 2, &e);
    }
    /* the 3-D eigenvalues (h0, h1, −h0 − h1) under max and the limit */
    double Ln[6], dl[6];
    defo_plast_eig_store(&e, Ln, NULL);
    Ln[2] = -(e.h[0] + e.h[1]);
    for (int k = 0; k < 6; k++) dl[k] = Ln[k] - L[k];
    const double taken0 = plast_sym_norm(dl);
    double h3[3] = {e.h[0], e.h[1], -(e.h[0] + e.h[1])};
    const double n = sqrt(h3[0] * h3[0] + h3[1] * h3[1] + h3[2] * h3[2]);
    if (n > d->max) {
        for (int i = 0; i < 3; i++) h3[i] *= d->max / n;
        fl |= PLAST_CAPPED;
    }
    if (defo_plast_limit(h3, 3, d->limit, 1)) fl |= PLAST_CAPPED;
    if (!(fl & (PLAST_FLOWED | PLAST_CAPPED))) return fl;
    e.h[0] = h3[0], e.h[1] = h3[1];
    defo_plast_eig_store(&e, Ln, in->fpi);
    Ln[2] = -(e.h[0] + e.h[1]);
    in->fpi[8] = exp(e.h[0] + e.h[1]);
    if ((fl & PLAST_CAPPED) && dg > 0) {
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

/* Solids: trial up to the flow's size (aux: ξ, ‖ξ‖, Δγ), its axes ξ's;
 * shells: the whole plane-stress return (done). */
static void vm_trial(const defo_plasticity_def *d, const plast_point *in, double *state,
                     plast_trial *t) {
    if (in->n == 2) {
        /* the plane return reads and writes the state: it runs here whole */
        t->fl = vm_flow_plane(d, in, state);
        t->done = 1;
        return;
    }
    const double *kappa = state + 6;
    if (!in->log_ok) {
        t->fl |= PLAST_SKIPPED;
        return;
    }
    double eps[6], *xi = t->aux;
    defo_plast_log_strain(in, eps);
    plast_sym_dev(eps);
    for (int k = 0; k < 6; k++) xi[k] = 2 * in->mu * eps[k] - kappa[k];
    const double nx = plast_sym_norm(xi);
    const double H = d->hardening, K = d->isotropic_hardening;
    const double f = nx - sqrt(2.0 / 3.0) * (d->yield_stress + K * state[12]);
    if (f > 0 && nx > 0) { /* radial return onto the moved, grown surface */
        t->aux[6] = nx, t->aux[7] = f / (2 * in->mu + (2.0 / 3.0) * (H + K));
        t->want_eig = 1; /* ξ's axes: vm_direct */
    }
}

/* F_p ← exp(Δγ n) F_p, n = ξ/‖ξ‖ in F_e's frame (ξ = W diag(nv) Wᵀ) */
static void vm_direct(const defo_plasticity_def *d, const plast_point *in, plast_trial *t,
                      const double nv[3], const defo_mat3 *W) {
    (void)d, (void)in;
    const double nx = t->aux[6], dg = t->aux[7];
    t->W = *W;
    for (int i = 0; i < 3; i++) t->d[i] = dg * nv[i] / nx;
    t->push = t->want_q = 1;
}

static unsigned vm_finish(const defo_plasticity_def *d, const plast_point *in, double *state,
                          const plast_trial *t, int ok, const plast_eig *pushed,
                          const defo_mat3 *Q) {
    (void)in;
    double kn[6];
    double *L = state, *kappa = state + 6;
    unsigned fl = t->fl;
    memcpy(kn, kappa, sizeof kn);
    double dg = 0;
    plast_eig e;
    int have = 0;
    if (t->push && ok) {
        const double *xi = t->aux, nx = t->aux[6];
        dg = t->aux[7];
        e = *pushed;
        const double sh = (plast_sym_trace(L) - e.h[0] - e.h[1] - e.h[2]) / 3;
        for (int i = 0; i < 3; i++) e.h[i] += sh;
        back_stress(kappa, (2.0 / 3.0) * d->hardening * dg / nx, xi, Q, kn);
        have = 1;
        fl |= PLAST_FLOWED;
    } else if (t->push) {
        fl |= PLAST_SKIPPED;
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
        const double tk = taken0 > 0 ? fmin(1.0, plast_sym_norm(dl) / taken0) : 0.0;
        for (int k = 0; k < 6; k++) kn[k] = kappa[k] + tk * (kn[k] - kappa[k]);
        dg *= tk;
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

const plast_ops defo_plast_von_mises = {"von_mises", vm_radius, vm_trial,
                                        vm_direct,   vm_finish, vm_check};
