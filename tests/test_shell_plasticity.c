/*
 * tests/test_shell_plasticity.c — plastic shells (ITF04 §8): in-plane
 * plasticity of tri3 through the plasticity interface, plastic bending by
 * flowing the hinges' rest angles, and the continuous hinge angle.
 *
 * References used, per test:
 *   - hinge angle through ±π: two triangles, one turned about their common
 *     edge in 2° steps to 200°, the shape tracked at each step: the energy is
 *     the hinge's ½ k θ² (k fitted at 90°) with θ continuing past π (the
 *     wrapped angle would give ½ k (2π − θ)²), and the forces near 180°
 *     are −dE/dx by central differences;
 *   - von Mises in plane stress: a sheet in uniaxial (lateral stretch solved
 *     for σ_yy = 0) and equibiaxial stretch through load, unload, reverse
 *     against the closed-form loop of linear kinematic (+ isotropic)
 *     hardening (yield at σ_y, slope past it, reverse yield at σ_max − 2σ_y;
 *     equibiaxial: modulus E/(1 − ν), the plastic modulus doubled), within
 *     1 % of max(|σ|, σ_y); L_zz = −(L_xx + L_yy); forces = −dE/dx by
 *     central differences with the plastic state;
 *   - multiplicative on a sheet: held at diag(λ, 1), the flow rule by hand
 *     (L_p = ±(½ ln λ − γ/√2), area kept), released it rests at
 *     diag(e^p, e^−p) X; crushed, folded, collapsed, turned over: det F_p
 *     = 1 (> 0) and L_p within the limit surface, never NaN; ITF04 §7
 *     control: held beyond the goal shape, the flow stops at the goal;
 *   - in plane: a sheet held at the stretch diag(λ, 1) for several updates
 *     with mg04 (deviatoric): the return map's closed form, L_p =
 *     (1 − (1 − r)^K) d₀ with d₀ = ½ ln λ diag(1, −1) and K the updates
 *     whose elastic deviator ‖(1 − r)^j d₀‖ exceeds the yield, r = Δt c_creep;
 *     released, the sheet is at rest (zero energy and forces) at
 *     diag(e^p, e^−p) X, an area-keeping shape (tr L_p = 0);
 *   - bending: a strip clamped at one end, its other end turned so every
 *     bend line holds the same angle φ (the static equilibrium: a regular
 *     polygon), held for several steps, released: it keeps the bend the
 *     flow rule gives by hand, (n − 1) φ (1 − (1 − r)^K) at the tip, K the
 *     held updates whose elastic bending strain exceeds bending_yield;
 *   - checkpoint: a plastic cloth (each in-plane model, plastic bending)
 *     resumed after 2 frames equals 4 uninterrupted frames bit for bit
 *     (positions, velocities, plastic state); 1 and 2 threads bit for bit;
 *   - bad input: bad parameters of every model on a shell and bending keys
 *     on a solid are refused naming the body (or JSON path) and the key.
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/plasticity.h"
#include "defo/scene.h"
#include "defo/world.h"
#include "determinism.h"
#include "test.h"
#include "test_sheets.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846

/* x = the rest positions of m stretched by lam along x (F = diag(lam, 1)). */
static void stretch_x(const defo_mesh *m, double lam, double *x) {
    for (defo_index i = 0; i < m->num_nodes; i++) {
        x[3 * i] = lam * m->x[3 * i];
        x[3 * i + 1] = m->x[3 * i + 1];
        x[3 * i + 2] = m->x[3 * i + 2];
    }
}

static defo_material_def sheet_material(void) {
    defo_material_def d = defo_default_material();
    d.model = DEFO_MODEL_STVK;
    d.youngs_modulus = 1e9;
    d.poisson = 0.3;
    d.density = 1000;
    d.thickness = 1e-3;
    return d;
}

/* A shell force model of m with the sheet material (rest data and
 * material owned; shell_model_drop frees all three). */
typedef struct shell_model {
    defo_element_rest *rest;
    defo_material *mat;
    defo_force_model *fm;
} shell_model;

static shell_model shell_model_make(const defo_mesh *m) {
    shell_model sm = {NULL, NULL, NULL};
    CHECK_OK(defo_element_rest_create(m, &sm.rest));
    defo_material_def md = sheet_material();
    CHECK_OK(defo_material_create(&md, &sm.mat));
    defo_force_model_def fd = defo_default_force_model_def();
    CHECK_OK(defo_force_model_create(m, sm.rest, sm.mat, &fd, &sm.fm));
    return sm;
}

static void shell_model_drop(shell_model *sm) {
    defo_force_model_destroy(sm->fm);
    defo_material_destroy(sm->mat);
    defo_element_rest_destroy(sm->rest);
}

/* ------------------------------------------------ the hinge through ±π */
static double hinge_energy(defo_force_model *fm, const double *x, double *f) {
    double e = 0;
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, f, &e));
    return e;
}

static void test_hinge_through_pi(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create_shell(&m));
    /* a b on the y axis, c at x = −1; d at angle α about the edge from +x */
    CHECK_OK(defo_mesh_add_node(m, 0, 0, 0, NULL));
    CHECK_OK(defo_mesh_add_node(m, 0, 1, 0, NULL));
    CHECK_OK(defo_mesh_add_node(m, -1, 0.4, 0, NULL));
    CHECK_OK(defo_mesh_add_node(m, 1, 0.6, 0, NULL));
    const defo_index t0[3] = {0, 1, 2}, t1[3] = {1, 0, 3};
    CHECK_OK(defo_mesh_add_elem(m, t0, 0));
    CHECK_OK(defo_mesh_add_elem(m, t1, 0));
    shell_model sm = shell_model_make(m);
    defo_force_model *fm = sm.fm;
    CHECK(defo_force_model_num_hinges(fm) == 1);
    double x[12], f[12];
    memcpy(x, m->x, sizeof x);
    double k = 0, worst = 0;
    for (int deg = 2; deg <= 200; deg += 2) {
        const double a = deg * PI / 180;
        x[9] = cos(a), x[11] = sin(a);
        defo_force_model_track_hinges(fm, x);
        const double e = hinge_energy(fm, x, NULL);
        if (deg == 90) k = 2 * e / (a * a);
        if (deg > 90) worst = fmax(worst, fabs(e / (0.5 * k * a * a) - 1));
    }
    const double e200 = hinge_energy(fm, x, NULL), a200 = 200 * PI / 180;
    TEST_REPORT("hinge turned to 200°: energy %.6g J, ½kθ² %.6g J, wrapped ½k(2π−θ)² %.6g J; "
                "largest relative difference past 90° %.2g",
                e200, 0.5 * k * a200 * a200, 0.5 * k * (2 * PI - a200) * (2 * PI - a200), worst);
    CHECK(k > 0);
    CHECK(worst < 1e-9);
    /* forces at 181° against central differences of the energy */
    const double a = 181 * PI / 180;
    x[9] = cos(a), x[11] = sin(a);
    defo_force_model_track_hinges(fm, x);
    hinge_energy(fm, x, f);
    double err = 0, scale = 0;
    for (int i = 0; i < 12; i++) {
        const double h = 1e-7, x0 = x[i];
        x[i] = x0 + h;
        const double ep = hinge_energy(fm, x, NULL);
        x[i] = x0 - h;
        const double em = hinge_energy(fm, x, NULL);
        x[i] = x0;
        err = fmax(err, fabs(f[i] + (ep - em) / (2 * h)));
        scale = fmax(scale, fabs(f[i]));
    }
    TEST_REPORT("forces at 181°: largest |f + dE/dx| %.3g of %.3g N", err, scale);
    CHECK(err < 1e-5 * scale);
    shell_model_drop(&sm);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------ in plane */
static void test_inplane_return_map(void) {
    defo_mesh *m = grid(3, 2, 1.0, 0.8);
    defo_plasticity *p = NULL;
    shell_model sm = shell_model_make(m);
    defo_force_model *fm = sm.fm;
    const double dt = 0.01, r = 0.4, Y = 0.03, lam = 1.2;
    defo_plasticity_def pd = defo_default_plasticity_def();
    pd.yield = Y, pd.creep = r / dt, pd.max = 10;
    CHECK_OK(defo_plasticity_create(&pd, m->num_elems, 1, &p));
    CHECK_OK(defo_plasticity_bind(p, fm));
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof(double)), *f = malloc(n3 * sizeof(double));
    stretch_x(m, lam, x);
    /* the closed form: flows while √2 · ½ ln λ · (1 − r)^j > Y */
    const double d0 = 0.5 * log(lam);
    int K = 0;
    while (sqrt(2.0) * d0 * pow(1 - r, K) > Y) K++;
    const double pw = d0 * (1 - pow(1 - r, K));
    defo_plasticity_stats st;
    for (int j = 0; j < K + 3; j++) CHECK_OK(defo_plasticity_update(p, fm, x, dt, &st));
    CHECK(st.yielding == 0); /* the last updates are elastic */
    double err = 0, tr = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        double L[6];
        defo_plasticity_log(p, e, 0, L);
        const double mean = 0.5 * (L[0] + L[1]),
                     rad = sqrt(0.25 * (L[0] - L[1]) * (L[0] - L[1]) + L[3] * L[3]);
        err = fmax(err, fabs(rad - pw));
        tr = fmax(tr, fabs(2 * mean));
        CHECK(L[2] == 0 && L[4] == 0 && L[5] == 0);
    }
    TEST_REPORT("sheet held at λ = %.2f: %d flows, plastic strain ±%.12f (closed form ±%.12f, "
                "largest difference %.2g), |tr L_p| ≤ %.2g",
                lam, K, pw - err, pw, err, tr);
    CHECK(K == 3);
    CHECK(err < 1e-13);
    CHECK(tr < 1e-15);
    /* released: at rest at diag(e^p, e^−p) X, with the sheet's area */
    double e_held = 0, e_rel = 0;
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, NULL, &e_held));
    for (defo_index i = 0; i < m->num_nodes; i++) {
        x[3 * i] = exp(pw) * m->x[3 * i];
        x[3 * i + 1] = exp(-pw) * m->x[3 * i + 1];
    }
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, f, &e_rel));
    double fmax_ = 0;
    for (size_t k = 0; k < n3; k++) fmax_ = fmax(fmax_, fabs(f[k]));
    TEST_REPORT("released shape diag(e^p, e^-p): energy %.3g J (held %.3g J), largest force "
                "%.3g N",
                e_rel, e_held, fmax_);
    CHECK(e_rel < 1e-18 * e_held);
    CHECK(fmax_ < 1e-6);
    /* forces = −dE/dx with the plastic parts (in plane and bent rest
     * angles) at a crumpled shape, by central differences */
    const defo_index nh = defo_force_model_num_hinges(fm);
    double *bend = malloc((size_t)nh * sizeof(double));
    for (defo_index h = 0; h < nh; h++) bend[h] = 0.002 * sin(1.0 + 2.0 * (double)h);
    defo_force_model_set_plastic_bending(fm, bend);
    for (size_t k = 0; k < n3; k++) x[k] += 0.02 * sin(0.7 * (double)k + 0.3);
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, f, &e_rel));
    double ferr = 0, fscale = 0;
    for (size_t k = 0; k < n3; k++) {
        const double h = 1e-7, x0 = x[k];
        double ep = 0, em = 0;
        x[k] = x0 + h;
        CHECK_OK(defo_force_model_evaluate(fm, x, 0, NULL, &ep));
        x[k] = x0 - h;
        CHECK_OK(defo_force_model_evaluate(fm, x, 0, NULL, &em));
        x[k] = x0;
        ferr = fmax(ferr, fabs(f[k] + (ep - em) / (2 * h)));
        fscale = fmax(fscale, fabs(f[k]));
    }
    TEST_REPORT("plastic sheet, crumpled: largest |f + dE/dx| %.3g of %.3g N", ferr, fscale);
    CHECK(ferr < 1e-6 * fscale);
    defo_force_model_set_plastic_bending(fm, NULL);
    free(bend);
    free(x);
    free(f);
    defo_plasticity_destroy(p);
    shell_model_drop(&sm);
    defo_mesh_destroy(m);
}

/* ---------------------------------------- von Mises in plane stress */
/* A shell force model of m with material md (rest data and material
 * owned, as shell_model_make). */
static shell_model shell_model_with(const defo_mesh *m, const defo_material_def *md) {
    shell_model sm = {NULL, NULL, NULL};
    CHECK_OK(defo_element_rest_create(m, &sm.rest));
    CHECK_OK(defo_material_create(md, &sm.mat));
    defo_force_model_def fd = defo_default_force_model_def();
    CHECK_OK(defo_force_model_create(m, sm.rest, sm.mat, &fd, &sm.fm));
    return sm;
}

/* The closed-form loop of linear kinematic (H) and isotropic (K)
 * hardening for a stress σ = M (ε − β q) with the yield |σ − H q| ≤ σ_y +
 * K ᾱ, ᾱ = Σ |Δq|: uniaxial stress M = E, β = 1 (q = ε_p); equibiaxial
 * stress (σ_xx = σ_yy = σ, ε the in-plane strain) M = E/(1 − ν), β = ½
 * (q = 2 ε_p,xx = −ε_p,zz: the von Mises radius ‖ξ‖ = √(2/3)|σ − H q| and
 * Δᾱ = |Δq|).  The exact return at strain eps. */
typedef struct loop1d {
    double M, beta, sy, H, K, q, abar;
} loop1d;
static double loop1d_stress(loop1d *v, double eps) {
    const double tr = v->M * (eps - v->beta * v->q), xi = tr - v->H * v->q;
    const double r = v->sy + v->K * v->abar;
    if (fabs(xi) <= r) return tr;
    const double dq = (fabs(xi) - r) / (v->M * v->beta + v->H + v->K), sg = xi > 0 ? 1 : -1;
    v->q += sg * dq, v->abar += dq;
    return v->M * (eps - v->beta * v->q);
}

/* The sheet at x = diag(a, b, 1) X; σ_xx and σ_yy of triangle 0 */
static void sheet_stress(defo_force_model *fm, const defo_mesh *m, double a, double b, double *x,
                         double *sxx, double *syy) {
    for (defo_index i = 0; i < m->num_nodes; i++) {
        x[3 * i] = a * m->x[3 * i];
        x[3 * i + 1] = b * m->x[3 * i + 1];
        x[3 * i + 2] = m->x[3 * i + 2];
    }
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, NULL, NULL));
    double s[9];
    defo_force_model_stress(fm, 0, 0, s);
    *sxx = s[0];
    if (syy) *syy = s[4];
}

/* Uniaxial in-plane stress: stretch a along x, b solved (secant) so that
 * σ_yy = 0 with the current plastic state; returns σ_xx. */
static double sheet_uniaxial(defo_force_model *fm, const defo_mesh *m, double a, double *b,
                             double *x) {
    double b0 = *b, b1 = *b * (1 + 1e-7), f0 = 0, f1 = 0, sx = 0;
    sheet_stress(fm, m, a, b0, x, &sx, &f0);
    for (int it = 0; it < 30; it++) {
        sheet_stress(fm, m, a, b1, x, &sx, &f1);
        if (fabs(f1) < 1e-12 * fabs(sx) + 1e-9 || f1 == f0) break;
        const double bn = b1 - f1 * (b1 - b0) / (f1 - f0);
        b0 = b1, f0 = f1, b1 = bn;
    }
    *b = b1;
    sheet_stress(fm, m, a, b1, x, &sx, NULL);
    return sx;
}

static void test_von_mises_sheet_loop(void) {
    const double E = 1e7, nu = 0.3, sy = 2e3, H = 2.5e6; /* yield strain 2e-4, slope E/5 */
    defo_mesh *m = grid(1, 1, 1.0, 1.0);
    defo_material_def md = sheet_material();
    md.model = DEFO_MODEL_COROTATED, md.youngs_modulus = E, md.poisson = nu;
    double *x = malloc(3 * (size_t)m->num_nodes * sizeof(double));
    for (int c = 0; c < 3; c++) { /* uniaxial, uniaxial + isotropic, equibiaxial */
        const int biax = c == 2, iso = c == 1;
        shell_model sm = shell_model_with(m, &md);
        defo_plasticity_def pd = defo_default_von_mises_def(sy, H);
        pd.isotropic_hardening = iso ? 1e6 : 0;
        defo_plasticity *p = NULL;
        CHECK_OK(defo_plasticity_create(&pd, m->num_elems, 1, &p));
        CHECK_OK(defo_plasticity_bind(p, sm.fm));
        loop1d ref = {
            biax ? E / (1 - nu) : E, biax ? 0.5 : 1.0, sy, H, pd.isotropic_hardening, 0, 0};
        double b = 1, worst = 0, smax = 0, rev0 = 0, rev1 = 0, prev = 0;
        /* 0 → 5 ε_y, back to −3 ε_y, up to +2 ε_y (ε_y of the loop's M) */
        const double ey = sy / ref.M, path[4] = {0, 5 * ey, -3 * ey, 2 * ey};
        for (int leg = 0; leg < 3; leg++)
            for (int k = 1; k <= 60; k++) {
                const double eps = path[leg] + (path[leg + 1] - path[leg]) * k / 60.0;
                const double a = exp(eps);
                double sig = 0;
                /* the return map at this strain, the lateral stretch
                 * re-solved until the state settles */
                for (int r = 0; r < 4; r++) {
                    if (biax)
                        sheet_stress(sm.fm, m, a, a, x, &sig, NULL);
                    else
                        sig = sheet_uniaxial(sm.fm, m, a, &b, x);
                    CHECK_OK(defo_plasticity_update(p, sm.fm, x, 0.01, NULL));
                }
                if (biax)
                    sheet_stress(sm.fm, m, a, a, x, &sig, NULL);
                else
                    sig = sheet_uniaxial(sm.fm, m, a, &b, x);
                const double abar = ref.abar, want = loop1d_stress(&ref, eps);
                worst = fmax(worst, fabs(sig - want) / fmax(fabs(want), sy));
                if (leg == 0) smax = sig;
                if (leg == 1 && rev0 == 0 && ref.abar > abar) rev0 = prev, rev1 = sig;
                prev = sig;
            }
        /* the slope past yield: M·H'/(M + H') with H' = H/β */
        const double Hb = H / ref.beta, Et = ref.M * Hb / (ref.M + Hb);
        const double smax_cf = sy + Et * (5 * ey - ey);
        TEST_REPORT("%s: largest stress error %.3f %% of max(|σ|, σ_y); σ_max %.1f Pa (closed "
                    "form %.1f), reverse yield between %.1f and %.1f Pa (σ_max − 2σ_y = %.1f)",
                    biax  ? "equibiaxial"
                    : iso ? "uniaxial + isotropic"
                          : "uniaxial",
                    100 * worst, smax, iso ? smax : smax_cf, rev0, rev1, smax - 2 * sy);
        CHECK(worst < 0.01);
        if (!iso) {
            CHECK(fabs(smax - smax_cf) < 0.01 * smax);
            CHECK(rev0 >= smax - 2 * sy - 0.01 * sy && rev1 <= smax - 2 * sy + 0.01 * sy);
        }
        /* plastic incompressibility: L_zz = −(L_xx + L_yy), det F_p = 1 */
        defo_plasticity_stats st;
        CHECK_OK(defo_plasticity_update(p, sm.fm, x, 0.01, &st));
        double L[6];
        defo_plasticity_log(p, 0, 0, L);
        CHECK(fabs(L[0] + L[1] + L[2]) < 1e-15 && fabs(L[2]) > 1e-5);
        CHECK(fabs(log(st.max_det)) < 1e-14 && fabs(log(st.min_det)) < 1e-14);
        if (biax) { /* forces = −dE/dx with this plastic state, crumpled */
            const size_t n3 = 3 * (size_t)m->num_nodes;
            double *f = malloc(n3 * sizeof(double)), e0 = 0, ferr = 0, fs = 0;
            for (size_t k = 0; k < n3; k++) x[k] += 0.05 * sin(0.9 * (double)k + 0.2);
            CHECK_OK(defo_force_model_evaluate(sm.fm, x, 0, f, &e0));
            for (size_t k = 0; k < n3; k++) {
                const double h = 1e-7, x0 = x[k];
                double ep = 0, em = 0;
                x[k] = x0 + h;
                CHECK_OK(defo_force_model_evaluate(sm.fm, x, 0, NULL, &ep));
                x[k] = x0 - h;
                CHECK_OK(defo_force_model_evaluate(sm.fm, x, 0, NULL, &em));
                x[k] = x0;
                ferr = fmax(ferr, fabs(f[k] + (ep - em) / (2 * h)));
                fs = fmax(fs, fabs(f[k]));
            }
            TEST_REPORT("von Mises plastic sheet, crumpled: largest |f + dE/dx| %.3g of %.3g N",
                        ferr, fs);
            CHECK(ferr < 1e-6 * fs);
            free(f);
        }
        CHECK_OK(defo_force_model_set_plastic(sm.fm, NULL));
        defo_plasticity_destroy(p);
        shell_model_drop(&sm);
    }
    free(x);
    defo_mesh_destroy(m);
}

/* ------------------------------------------ multiplicative on a sheet */
static void test_multiplicative_sheet(void) {
    defo_mesh *m = grid(4, 3, 1.0, 0.8);
    shell_model sm = shell_model_make(m);
    const double gamma = 0.02, lam = 1.2;
    defo_plasticity_def pd = defo_default_multiplicative_def(gamma);
    defo_plasticity *p = NULL;
    CHECK_OK(defo_plasticity_create(&pd, m->num_elems, 1, &p));
    CHECK_OK(defo_plasticity_bind(p, sm.fm));
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof(double)), *f = malloc(n3 * sizeof(double));
    /* stretched to diag(λ, 1): log F̂_e = (ln λ, 0), its 2-D deviator of
     * norm ln λ/√2 projected to γ (the mean kept): L_p = p diag(1, −1),
     * p = ½ ln λ − γ/√2; held again: on the yield surface, no more flow */
    stretch_x(m, lam, x);
    defo_plasticity_stats st;
    CHECK_OK(defo_plasticity_update(p, sm.fm, x, 0.01, &st));
    CHECK(st.yielding == m->num_elems);
    CHECK_OK(defo_plasticity_update(p, sm.fm, x, 0.01, &st));
    const double pw = 0.5 * log(lam) - gamma / sqrt(2.0);
    double err = 0, tr = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        double L[6];
        defo_plasticity_log(p, e, 0, L);
        /* in the triangle's rest frame: by its invariants */
        err = fmax(err, fabs(sqrt(0.25 * (L[0] - L[1]) * (L[0] - L[1]) + L[3] * L[3]) - pw));
        tr = fmax(tr, fabs(L[0] + L[1]) + fabs(L[2]));
    }
    /* released: at rest at diag(e^p, e^−p) X, the area kept */
    for (defo_index i = 0; i < m->num_nodes; i++) {
        x[3 * i] = exp(pw) * m->x[3 * i];
        x[3 * i + 1] = exp(-pw) * m->x[3 * i + 1];
    }
    double e_rel = 0, fm_ = 0;
    CHECK_OK(defo_force_model_evaluate(sm.fm, x, 0, f, &e_rel));
    for (size_t k = 0; k < n3; k++) fm_ = fmax(fm_, fabs(f[k]));
    TEST_REPORT("multiplicative sheet held at λ = %.2f: plastic strain ±%.12f (flow rule ±%.12f, "
                "difference %.2g; %ld points flowed again), |tr L_p| ≤ %.2g; released at "
                "diag(e^p, e^-p): energy %.3g J, largest force %.3g N",
                lam, pw - err, pw, err, (long)st.yielding, tr, e_rel, fm_);
    CHECK(err < 1e-13 && tr < 1e-15);
    CHECK(st.yielding <= m->num_elems); /* on the surface: a rounding's flow at most */
    CHECK(e_rel < 1e-18 && fm_ < 1e-6);
    /* crushed along x to 1 %, folded as an accordion, collapsed to a line
     * and to a point, turned over: F_p stays a stretch within the limit
     * surface with the area kept, never NaN */
    const double lim = log(pd.limit);
    double dlo = INFINITY, dhi = 0, hmax = 0, trmax = 0;
    int finite = 1;
    for (int step = 0; step < 40; step++) {
        const double s = step < 20 ? 1 - 0.99 * step / 19.0 : 0.01;
        for (defo_index i = 0; i < m->num_nodes; i++) {
            const double X = m->x[3 * i], Y = m->x[3 * i + 1];
            x[3 * i] = s * X;
            x[3 * i + 1] = step == 30 ? 0 : step == 31 ? 0.5 : step == 32 ? -Y : Y;
            x[3 * i + 2] = step == 31 ? 0.5 : 0.15 * (1 - s) * fabs(sin(12 * X));
            if (step == 31) x[3 * i] = 0.5;
        }
        CHECK_OK(defo_plasticity_update(p, sm.fm, x, 0.01, &st));
        const double *fpi = defo_plasticity_inverse(p);
        for (defo_index e = 0; e < m->num_elems; e++) {
            const double *A = fpi + 9 * (size_t)e;
            const double det = 1 / (A[0] * A[4] - A[1] * A[3]); /* det F_p */
            double L[6];
            defo_plasticity_log(p, e, 0, L);
            const double mean = 0.5 * (L[0] + L[1]);
            const double rad = sqrt(0.25 * (L[0] - L[1]) * (L[0] - L[1]) + L[3] * L[3]);
            finite &= isfinite(det) && isfinite(rad);
            dlo = fmin(dlo, det), dhi = fmax(dhi, det);
            hmax = fmax(hmax, fabs(mean) + rad), trmax = fmax(trmax, fabs(2 * mean));
        }
    }
    TEST_REPORT("crushed to 1 %%, folded, collapsed, turned over: det F_p in [%.15f, %.15f], "
                "largest |eigenvalue of L_p| %.4f (log limit %.4f), |tr L_p| ≤ %.2g",
                dlo, dhi, hmax, lim, trmax);
    CHECK(finite);
    CHECK(dlo > 0 && fabs(log(dlo)) < 1e-14 && fabs(log(dhi)) < 1e-14);
    CHECK(hmax <= lim * (1 + 1e-12) && hmax > 0.5 * lim);
    CHECK(trmax < 1e-14);
    /* ITF04 §7 control on a sheet: goal diag(λ, 1/λ) X, the sheet held at
     * diag(λ², 1/λ²) X, beyond it: the flow stops at the goal, L_p =
     * ±ln λ (without control it would go to ±(2 ln λ − γ/√2)) */
    defo_plasticity *pg = NULL;
    CHECK_OK(defo_plasticity_create(&pd, m->num_elems, 1, &pg));
    CHECK_OK(defo_plasticity_bind(pg, sm.fm));
    for (defo_index i = 0; i < m->num_nodes; i++) {
        x[3 * i] = lam * m->x[3 * i];
        x[3 * i + 1] = m->x[3 * i + 1] / lam;
        x[3 * i + 2] = 0;
    }
    CHECK_OK(defo_plasticity_set_goal(pg, sm.fm, x, m->num_nodes));
    for (defo_index i = 0; i < m->num_nodes; i++) x[3 * i] *= lam, x[3 * i + 1] /= lam;
    for (int k = 0; k < 3; k++) CHECK_OK(defo_plasticity_update(pg, sm.fm, x, 0.01, &st));
    double gerr = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        double L[6];
        defo_plasticity_log(pg, e, 0, L);
        const double rad = sqrt(0.25 * (L[0] - L[1]) * (L[0] - L[1]) + L[3] * L[3]);
        gerr = fmax(gerr, fabs(rad - log(lam)) + fabs(L[0] + L[1]));
    }
    TEST_REPORT("controlled toward diag(λ, 1/λ), held at diag(λ², 1/λ²): L_p = ±ln λ to %.2g",
                gerr);
    CHECK(gerr < 1e-13);
    CHECK_OK(defo_force_model_set_plastic(sm.fm, NULL));
    defo_plasticity_destroy(pg);
    defo_plasticity_destroy(p);
    free(x);
    free(f);
    shell_model_drop(&sm);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------- bending */
static void test_strip_bend(void) {
    const int nx = 8;
    const double L = 0.1, b = 0.02, t = 1e-3, hx = L / nx, phi = 0.1;
    const double r = 0.3, dt = 1.0;
    defo_mesh *m = grid(nx, 1, L, b);
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[0] = wd.gravity[1] = wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_STATIC);
    idf.tolerance = 1e-12;
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = sheet_material();
    bd.material.poisson = 0;
    bd.material.thickness = t;
    /* the bending strain φ t / (2 hx) of a bend line, a yield of 0.3 of it */
    const double eps = phi * t / (2 * hx), Y = 0.3 * eps;
    defo_plasticity_def pd = defo_default_plasticity_def();
    pd.bending_yield = Y, pd.bending_creep = r / dt;
    bd.plasticity = &pd;
    bd.name = "strip";
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    int tip_set = -1;
    const double x0 = -0.5 * L, al = bend_strip(w, id, L, hx, nx, phi, &tip_set);
    CHECK_OK(defo_world_step(w, dt)); /* bent (plasticity saw the flat strip) */
    const double held = tip_angle(w, id, m, -x0 - hx, -x0);
    int K = 0;
    while (eps * pow(1 - r, K) > Y) K++;
    for (int j = 0; j < K + 2; j++) CHECK_OK(defo_world_step(w, dt));
    const double bent = tip_angle(w, id, m, -x0 - hx, -x0);
    CHECK_OK(defo_body_release(w, id, tip_set));
    for (int j = 0; j < 2; j++) CHECK_OK(defo_world_step(w, dt));
    const double kept = tip_angle(w, id, m, -x0 - hx, -x0);
    const double want = (nx - 1) * phi * (1 - pow(1 - r, K));
    defo_index nh = 0;
    const double *bp = defo_plasticity_bending(defo_body_plasticity(w, id), &nh);
    double bmax = 0;
    for (defo_index h = 0; h < nh; h++) bmax = fmax(bmax, fabs(bp[h]));
    TEST_REPORT("strip bent to %.6f rad at the tip (held %.6f), %d flows, released: keeps %.6f "
                "rad; the flow rule by hand %.6f (%.2g relative); largest plastic bending strain "
                "%.4g (held strain %.4g)",
                held, bent, K, kept, want, kept / want - 1, bmax, eps);
    CHECK_NEAR(held, al, 1e-9);
    CHECK(K == 4);
    CHECK(fabs(kept / want - 1) < 1e-6);
    CHECK_NEAR(bmax, eps * (1 - pow(1 - r, K)), 1e-9 * eps);
    /* annealed: the bent shape is the rest shape, at zero energy, and stays */
    double ke = 0, ee = 0, ge = 0, mass0 = 0, mass1 = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) mass0 += defo_body_masses(w, id)[i];
    CHECK_OK(defo_body_anneal(w, id));
    for (defo_index i = 0; i < m->num_nodes; i++) mass1 += defo_body_masses(w, id)[i];
    bp = defo_plasticity_bending(defo_body_plasticity(w, id), &nh);
    bmax = 0;
    for (defo_index h = 0; h < nh; h++) bmax = fmax(bmax, fabs(bp[h]));
    CHECK_OK(defo_body_energy(w, id, &ke, &ee, &ge));
    CHECK_OK(defo_world_step(w, dt));
    const double after = tip_angle(w, id, m, -x0 - hx, -x0);
    TEST_REPORT("annealed: elastic energy %.3g J, plastic bending left %.3g, tip %.9f rad after "
                "a step, mass %.9g kg (was %.9g)",
                ee, bmax, after, mass1, mass0);
    CHECK(bmax == 0);
    CHECK(ee < 1e-20);
    CHECK_NEAR(after, kept, 1e-9);
    CHECK_NEAR(mass1, mass0, 1e-12 * mass0);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------ ITF04 Fig. 8's dent */
/* Half a torus shell, its cut ends held, pressed in at the top of its
 * middle by a patch of nodes moved down 6 cm (static solves), released:
 * with plasticity it keeps a dent (its rest angles moved), an elastic one
 * springs back to its rest shape.  Returns the dent left at the patch. */
static double dent(int plastic, double *bend_max) {
    defo_torus_shell_def td = defo_default_torus_shell_def();
    td.major_radius = 0.3, td.minor_radius = 0.1, td.sweep = 180;
    td.cells[0] = 18, td.cells[1] = 12;
    td.center[2] = 0.1;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_torus_shell(&td, &m));
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[0] = wd.gravity[1] = wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_STATIC);
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = sheet_material();
    bd.material.youngs_modulus = 5e7, bd.material.thickness = 0.004;
    defo_plasticity_def pd = defo_default_plasticity_def();
    pd.yield = 0.005, pd.creep = 10, pd.max = 1;
    pd.bending_yield = 0.003, pd.bending_creep = 10;
    bd.plasticity = plastic ? &pd : NULL;
    bd.name = "half torus";
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    const double lo[3] = {-1, -1e-6, -1}, hi[3] = {1, 1e-6, 1};
    defo_region ends = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, id, &ends, NULL, NULL));
    const double top[3] = {0, 0.3, 0.2};
    defo_region patch = defo_region_sphere(top, 0.04);
    defo_motion_def mo = defo_default_motion_def();
    mo.velocity[2] = -0.2;
    int set = -1;
    CHECK_OK(defo_body_prescribe(w, id, &patch, &mo, &set));
    for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(w, 0.1));
    CHECK_OK(defo_body_release(w, id, set));
    for (int f = 0; f < 2; f++) CHECK_OK(defo_world_step(w, 0.1));
    const double *x = defo_body_positions(w, id);
    double d = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *X = m->x + 3 * i;
        if (hypot(X[0] - top[0], hypot(X[1] - top[1], X[2] - top[2])) < 1e-6)
            d = X[2] - x[3 * i + 2];
    }
    *bend_max = 0;
    defo_index nh = 0;
    const double *bp = defo_plasticity_bending(defo_body_plasticity(w, id), &nh);
    for (defo_index h = 0; h < nh; h++) *bend_max = fmax(*bend_max, fabs(bp[h]));
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return d;
}

static void test_half_torus_dent(void) {
    double bp = 0, be = 0;
    const double dp = dent(1, &bp), de = dent(0, &be);
    TEST_REPORT("half torus pressed 6 cm and released: plastic keeps a dent of %.4f m (largest "
                "plastic bending strain %.4g), elastic %.2g m",
                dp, bp, de);
    CHECK(dp > 0.02);
    CHECK(bp > 0.003);
    CHECK(fabs(de) < 1e-6);
}

/* ------------------------------------------- resume, threads, bad input */
/* A plastic cloth strip clamped at one end sags under gravity (backward
 * Euler), bending and stretching past yield (in plane: model). */
static defo_world *sagging(defo_body_id *id, defo_plasticity_model model) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    idf.time_step = 1.0 / 120;
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_mesh *m = grid(8, 4, 0.4, 0.2);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = sheet_material();
    bd.material.model = DEFO_MODEL_NEO_HOOKEAN;
    bd.material.youngs_modulus = 5e5, bd.material.density = 300;
    bd.material.thickness = 5e-4, bd.material.damping_time = 0.004;
    defo_plasticity_def pd = defo_default_plasticity_def();
    pd.yield = 1e-4, pd.creep = 50, pd.max = 1;
    if (model == DEFO_PLASTICITY_VON_MISES) pd = defo_default_von_mises_def(300, 5e4);
    if (model == DEFO_PLASTICITY_MULTIPLICATIVE) pd = defo_default_multiplicative_def(5e-4);
    pd.bending_yield = 1e-4, pd.bending_creep = 50;
    bd.plasticity = &pd;
    bd.name = "strip";
    CHECK_OK(defo_world_add_body(w, &bd, id));
    defo_mesh_destroy(m);
    const double lo[3] = {-0.21, -1, -1}, hi[3] = {-0.19, 1, 1};
    defo_region r = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, *id, &r, NULL, NULL));
    return w;
}

static void two_frames(void *ctx, void *out) {
    defo_body_id id;
    defo_world *w = sagging(&id, *(const defo_plasticity_model *)ctx);
    for (int f = 0; f < 2; f++) CHECK_OK(defo_world_step(w, 1.0 / 30));
    memcpy(out, defo_body_positions(w, id), 3 * 45 * sizeof(double));
    defo_world_destroy(w);
}

static void test_threads(void) {
    for (int k = 0; k < DEFO_PLASTICITY_MODELS; k++) {
        const defo_plasticity_model model = (defo_plasticity_model)k;
        CHECK(
            test_bitwise_same_for_threads(two_frames, (void *)&model, 3 * 45 * sizeof(double), 2));
    }
}

static void resume(defo_plasticity_model model, int frames) {
    char path[512];
    snprintf(path, sizeof path, "%s/test_shell_plasticity.ckpt", DEFO_TEST_TMP);
    defo_body_id id, jd;
    defo_world *a = sagging(&id, model);
    for (int f = 0; f < frames; f++) {
        CHECK_OK(defo_world_step(a, 1.0 / 30));
        defo_step_stats ss;
        defo_world_stats(a, &ss);
        TEST_REPORT("%s, frame %d: %d steps, %d Newton, %d CG, %d yielding",
                    defo_plasticity_model_name(model), f, ss.steps, ss.newton_iterations,
                    ss.cg_iterations, (int)ss.yielding);
    }
    CHECK_OK(defo_world_save(a, 7, path));
    for (int f = 0; f < frames; f++) CHECK_OK(defo_world_step(a, 1.0 / 30));
    defo_world *b = sagging(&jd, model);
    CHECK_OK(defo_world_load(b, 7, path));
    for (int f = 0; f < frames; f++) CHECK_OK(defo_world_step(b, 1.0 / 30));
    const size_t bytes = 3 * (size_t)defo_body_num_nodes(a, id) * sizeof(double);
    CHECK(memcmp(defo_body_positions(a, id), defo_body_positions(b, jd), bytes) == 0);
    CHECK(memcmp(defo_body_velocities(a, id), defo_body_velocities(b, jd), bytes) == 0);
    const defo_plasticity *pa = defo_body_plasticity(a, id), *pb = defo_body_plasticity(b, jd);
    defo_index na = 0, nb = 0;
    const double *ba = defo_plasticity_bending(pa, &na), *bb = defo_plasticity_bending(pb, &nb);
    CHECK(na == nb && na > 0 && memcmp(ba, bb, (size_t)na * sizeof(double)) == 0);
    double bm = 0, lm = 0;
    for (defo_index h = 0; h < na; h++) bm = fmax(bm, fabs(ba[h]));
    const defo_index ne = defo_body_mesh(a, id)->num_elems;
    for (defo_index e = 0; e < ne; e++) {
        double La[6], Lb[6];
        defo_plasticity_log(pa, e, 0, La);
        defo_plasticity_log(pb, e, 0, Lb);
        CHECK(memcmp(La, Lb, sizeof La) == 0);
        lm = fmax(lm, sqrt(La[0] * La[0] + La[1] * La[1] + La[2] * La[2] + 2 * La[3] * La[3]));
    }
    TEST_REPORT("%s: sagging plastic strip after %d frames: largest plastic bending strain "
                "%.3g, in-plane %.3g; resumed bit for bit",
                defo_plasticity_model_name(model), 2 * frames, bm, lm);
    CHECK(bm > 0 && lm > 0);
    defo_world_destroy(a);
    defo_world_destroy(b);
    remove(path);
}

static void test_checkpoint(void) {
    for (int k = 0; k < DEFO_PLASTICITY_MODELS; k++) resume((defo_plasticity_model)k, k ? 1 : 2);
}

static void test_bad_input(void) {
    /* every model applies to a shell; bad parameters of each are refused
     * with the key's path */
    const char *vm = "{\"bodies\": [{\"name\": \"sheet\", \"generator\": {\"type\": "
                     "\"rectangle\"}, \"material\": {\"thickness\": 0.001}, \"plasticity\": "
                     "{\"model\": \"von_mises\", \"yield_stress\": 1e6, \"bending_yield\": "
                     "0.01}}]}";
    defo_scene *s = NULL;
    defo_scene_errors e;
    CHECK_OK(defo_scene_parse(vm, strlen(vm), "scene.json", NULL, &s, &e));
    defo_scene_destroy(s);
    s = NULL;
    const char *bad = "{\"bodies\": [{\"name\": \"a\", \"generator\": {\"type\": "
                      "\"rectangle\"}, \"material\": {\"thickness\": 0.001}, \"plasticity\": "
                      "{\"model\": \"von_mises\", \"yield_stress\": -1}}, {\"name\": \"b\", "
                      "\"generator\": {\"type\": \"sphere_shell\"}, \"material\": "
                      "{\"thickness\": 0.001}, \"plasticity\": {\"model\": "
                      "\"multiplicative\", \"gamma\": -0.1}}]}";
    CHECK(defo_scene_parse(bad, strlen(bad), "scene.json", NULL, &s, &e) != DEFO_OK);
    int found = 0;
    for (int i = 0; i < e.count; i++) {
        TEST_REPORT("%s", e.lines[i]);
        found += strstr(e.lines[i], "bodies[0].plasticity.yield_stress: -1") != NULL;
        found += strstr(e.lines[i], "bodies[1].plasticity.gamma: -0.1") != NULL;
    }
    CHECK(found == 2);
    defo_scene_errors_free(&e);
    /* bending keys on a solid, and a negative bending yield */
    const char *sol = "{\"bodies\": [{\"name\": \"cube\", \"generator\": {\"type\": \"box\"}, "
                      "\"plasticity\": {\"bending_yield\": 0.01}}, {\"name\": \"sheet\", "
                      "\"generator\": {\"type\": \"rectangle\"}, \"material\": {\"thickness\": "
                      "0.001}, \"plasticity\": {\"bending_yield\": -1}}]}";
    CHECK(defo_scene_parse(sol, strlen(sol), "scene.json", NULL, &s, &e) != DEFO_OK);
    int solid = 0, neg = 0;
    for (int i = 0; i < e.count; i++) {
        TEST_REPORT("%s", e.lines[i]);
        solid |= strstr(e.lines[i], "bodies[0].plasticity.bending_yield: plastic bending is for "
                                    "shells") != NULL;
        neg |= strstr(e.lines[i], "bodies[1].plasticity.bending_yield: -1") != NULL;
    }
    CHECK(solid && neg);
    defo_scene_errors_free(&e);
    /* bending_creep · step > 1: refused when built, with the key's path */
    const char *fast = "{\"integrator\": {\"type\": \"backward_euler\", \"time_step\": 0.01}, "
                       "\"bodies\": [{\"name\": \"sheet\", \"generator\": {\"type\": "
                       "\"rectangle\", \"cells\": 2}, \"material\": {\"thickness\": 0.001}, "
                       "\"plasticity\": {\"bending_yield\": 0.01, \"bending_creep\": 1000}}]}";
    CHECK_OK(defo_scene_parse(fast, strlen(fast), "scene.json", NULL, &s, &e));
    defo_simulation *sim = NULL;
    CHECK(defo_simulation_create(s, &sim) == DEFO_ERR_INVALID_ARGUMENT);
    TEST_REPORT("%s", defo_last_error());
    CHECK(strstr(defo_last_error(), "bodies[0].plasticity.bending_creep: 1000") != NULL);
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
    /* the API: a bad von Mises set on a shell in the world names the body
     * and the key; good ones of every model are taken */
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_mesh *m = grid(2, 2, 0.2, 0.2);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = sheet_material();
    bd.name = "panel";
    const defo_plasticity_def pv = defo_default_von_mises_def(1e6, -5);
    bd.plasticity = &pv;
    defo_body_id id;
    CHECK(defo_world_add_body(w, &bd, &id) == DEFO_ERR_INVALID_ARGUMENT);
    TEST_REPORT("%s", defo_last_error());
    CHECK(strstr(defo_last_error(), "body 'panel'") && strstr(defo_last_error(), "hardening"));
    const defo_plasticity_def pg = defo_default_von_mises_def(1e6, 1e5);
    bd.plasticity = &pg;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    defo_plasticity_def pm = defo_default_multiplicative_def(NAN);
    CHECK(defo_body_set_plasticity(w, id, -1, &pm) == DEFO_ERR_INVALID_ARGUMENT);
    TEST_REPORT("%s", defo_last_error());
    CHECK(strstr(defo_last_error(), "body 'panel'") && strstr(defo_last_error(), "gamma"));
    pm.gamma = 0.01;
    CHECK_OK(defo_body_set_plasticity(w, id, -1, &pm));
    CHECK_OK(defo_world_step(w, 0.01));
    defo_mesh_destroy(m);
    defo_world_destroy(w);
}

/* A version 1 plastic state (before shells: sets of 72 bytes, no hinges)
 * still reads: made from a version 2 one by dropping what version 2 added.
 * (Shells' von_mises and multiplicative states fit version 2's layout: the
 * same 13 numbers per point.) */
static void test_state_version1(void) {
    defo_plasticity *p = NULL, *q = NULL;
    defo_plasticity_def d = defo_plasticity_wax_def();
    CHECK_OK(defo_plasticity_create(&d, 3, 1, &p));
    CHECK_OK(defo_plasticity_create(NULL, 3, 1, &q));
    const size_t n2 = defo_plasticity_state_bytes(p);
    unsigned char *b2 = malloc(n2), *b1 = malloc(n2);
    defo_plasticity_write_state(p, b2);
    /* header 32 | one set 96 (v1: 72) | zero pad to 8 | state … | i64 hinges */
    const uint32_t v1 = 1;
    memcpy(b1, b2, 32 + 72);
    memcpy(b1 + 4, &v1, 4);
    const size_t tail = n2 - (32 + 96) - 8;
    memcpy(b1 + 32 + 72, b2 + 32 + 96, tail);
    CHECK_OK(defo_plasticity_read_state(q, b1, 32 + 72 + tail));
    CHECK(defo_plasticity_def_equal(defo_plasticity_get_def(q, 0), &d));
    CHECK(defo_plasticity_read_state(q, b1, 32 + 72 + tail + 8) == DEFO_ERR_PARSE);
    /* a newer version is refused by its number */
    const uint32_t v3 = 3;
    memcpy(b2 + 4, &v3, 4);
    CHECK(defo_plasticity_read_state(q, b2, n2) == DEFO_ERR_PARSE);
    TEST_REPORT("%s", defo_last_error());
    CHECK(strstr(defo_last_error(), "version 3") != NULL);
    free(b1);
    free(b2);
    defo_plasticity_destroy(p);
    defo_plasticity_destroy(q);
}

int main(void) {
    RUN(test_hinge_through_pi);
    RUN(test_inplane_return_map);
    RUN(test_von_mises_sheet_loop);
    RUN(test_multiplicative_sheet);
    RUN(test_strip_bend);
    RUN(test_half_torus_dent);
    RUN(test_checkpoint);
    RUN(test_threads);
    RUN(test_bad_input);
    RUN(test_state_version1);
    return test_summary();
}
