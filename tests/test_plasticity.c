/*
 * tests/test_plasticity.c — the plasticity models (defo/plasticity.h) on the
 * force model: return maps against closed forms, the plastic part the
 * kernels receive, invertibility, finite differences, bytes, threads.
 *
 * References used:
 *   - hand computation: under a held uniaxial stretch x = X + s X_x e_x the
 *     trial elastic log strain is diag(log(1+s) − p, 0, 0) (coaxial), so
 *     mg04's literal (volumetric) rule is the scalar recursion
 *     p ← p + Δt c_creep (ℓ − p) while ℓ − p > c_yield, ℓ = log(1+s), then
 *     p ← min(p, c_max); the same at each of the 4 points of a tet10;
 *   - conservation of volume: the deviatoric rules keep tr L_p = 0 to
 *     rounding, det F_p = 1, at every point of a tet10 and of a tet4 body
 *     under a uniform volume change; a tet4 body under a random one trades
 *     volume between its elements over node patches (plasticity.c) and
 *     keeps Σ V_e det F_p to 1e-12 relative; without memory for the
 *     exchange each element keeps its own, counted in the stats;
 *   - closed form of linear kinematic (+ isotropic) hardening in uniaxial
 *     stress (MTPS08 Fig. 4): yield at σ_y, slope E·H/(E+H) past it, reverse
 *     yield at σ_max − 2σ_y; a single element loaded, unloaded and reversed
 *     (its lateral stretch solved so the lateral stress vanishes), stresses
 *     within 1 % of max(|σ|, σ_y);
 *   - consistency: an element whose deformation is R F_p sits in its plastic
 *     rest shape: zero force, both formulations, tet4 and tet10;
 *   - finite differences: f = −∂E/∂x and K = −∂f/∂x of an invertible body
 *     with a multiplicative plastic state (central differences);
 *   - invariants: F_p never inverts and stays within the limit surface for
 *     flat, inverted and wildly stretched elements; no NaN anywhere;
 *   - bytes: the state written and read back gives the same F_p⁻¹ bit for
 *     bit; damaged bytes are refused before anything changes;
 *   - determinism: 1 vs 2 threads bitwise; the return maps in batches of
 *     PLAST_LANES points (their eigen-decompositions in vector lanes) against one
 *     point at a time, and the eigen-solver's baseline and AVX2 builds and
 *     every lane against the one-matrix call: bitwise;
 *   - the closed-form symmetric eigen-decomposition the return maps use
 *     against matrices built from known eigenvalues (distinct, clustered to
 *     1e-12, repeated, a multiple of I): V diag(h) Vᵀ = A to 16 ε ‖A‖, V
 *     a rotation, h sorted and equal to the known values to 32 ε ‖A‖ (A's
 *     rounding moves its eigenvalues by up to its own error, Weyl).
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/mesh.h"
#include "defo/plasticity.h"
#include "determinism.h"
#include "plasticity/plasticity_internal.h"

#include <float.h>
#include "test.h"

static defo_mesh *box(int cx, int cy, int cz, double lx, double ly, double lz, int order) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = cx, d.cells[1] = cy, d.cells[2] = cz;
    d.size[0] = lx, d.size[1] = ly, d.size[2] = lz;
    d.order = order;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&d, &m));
    return m;
}

/* One right-angled tet4 with unit legs. */
static defo_mesh *one_tet(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(1, &m));
    const double p[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    for (int i = 0; i < 4; i++) CHECK_OK(defo_mesh_add_node(m, p[i][0], p[i][1], p[i][2], NULL));
    const defo_index v[4] = {0, 1, 2, 3};
    CHECK_OK(defo_mesh_add_elem(m, v, 0));
    return m;
}

static defo_material_def material(defo_material_model model, double E, double nu) {
    defo_material_def mat = defo_default_material();
    mat.model = model;
    mat.youngs_modulus = E;
    mat.poisson = nu;
    mat.density = 1000;
    return mat;
}

typedef struct model {
    defo_element_rest *rest;
    defo_material *mat;
    defo_force_model *fm;
} model;

static int model_make(model *m, const defo_mesh *mesh, const defo_material_def *md,
                      defo_formulation form) {
    memset(m, 0, sizeof *m);
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = form;
    defo_status s = defo_element_rest_create(mesh, &m->rest);
    if (!s) s = defo_material_create(md, &m->mat);
    if (!s) s = defo_force_model_create(mesh, m->rest, m->mat, &fd, &m->fm);
    CHECK_OK(s);
    return s == DEFO_OK;
}

static void model_drop(model *m) {
    defo_force_model_destroy(m->fm);
    defo_material_destroy(m->mat);
    defo_element_rest_destroy(m->rest);
}

/* x = A X (row-major A) */
static void affine(const defo_mesh *m, const double A[9], double *x) {
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *X = m->x + 3 * i;
        for (int r = 0; r < 3; r++)
            x[3 * i + r] = A[3 * r] * X[0] + A[3 * r + 1] * X[1] + A[3 * r + 2] * X[2];
    }
}

static double max_abs(const double *a, size_t n) {
    double m = 0;
    for (size_t k = 0; k < n; k++) m = fmax(m, fabs(a[k]));
    return m;
}

/* mg04's scalar recursion (the hand computation) */
static double hand_plastic(double l, double yield, double rate, double cmax, int steps) {
    double p = 0;
    for (int n = 0; n < steps; n++) {
        if (l - p > yield) p += rate * (l - p);
        if (fabs(p) > cmax) p = cmax;
    }
    return p;
}

static void test_mg04_hand_computation(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = box(5, 1, 1, 1.0, 0.2, 0.2, order);
        defo_material_def mat = material(DEFO_MODEL_COROTATED, 1e5, 0.3);
        model c;
        if (!model_make(&c, m, &mat, DEFO_FORMULATION_COROTATED)) return;
        const int points = defo_force_model_points(c.fm);
        const double s = 0.05, dt = 0.01, l = log(1 + s);
        double *x = malloc(3 * (size_t)m->num_nodes * sizeof(double));
        const double A[9] = {1 + s, 0, 0, 0, 1, 0, 0, 0, 1};
        affine(m, A, x);
        /* case 0: yield stops the creep (ℓ·0.8^4 < 0.02 < ℓ·0.8^3);
         * case 1: c_max caps it */
        const double yields[2] = {0.02, 0.01}, maxes[2] = {1.0, 0.03};
        for (int cs = 0; cs < 2; cs++) {
            defo_plasticity_def pd = defo_default_plasticity_def();
            pd.yield = yields[cs], pd.creep = 20, pd.max = maxes[cs], pd.volumetric = 1;
            defo_plasticity *p = NULL;
            CHECK_OK(defo_plasticity_create(&pd, m->num_elems, points, &p));
            CHECK_OK(defo_plasticity_bind(p, c.fm));
            double worst = 0;
            for (int n = 1; n <= 12; n++) {
                defo_plasticity_stats st;
                CHECK_OK(defo_plasticity_update(p, c.fm, x, dt, &st));
                const double expect = hand_plastic(l, pd.yield, dt * pd.creep, pd.max, n);
                for (defo_index e = 0; e < m->num_elems; e++)
                    for (int q = 0; q < points; q++) {
                        double L[6];
                        defo_plasticity_log(p, e, q, L);
                        worst = fmax(worst, fabs(L[0] - expect));
                        for (int k = 1; k < 6; k++) worst = fmax(worst, fabs(L[k]));
                    }
            }
            const double final = hand_plastic(l, pd.yield, 0.2, pd.max, 12);
            if (cs == 0) CHECK_NEAR(final, l * (1 - pow(0.8, 4)), 1e-15);
            if (cs == 1) CHECK_NEAR(final, 0.03, 0);
            double L0[6];
            defo_plasticity_log(p, 0, 0, L0);
            TEST_REPORT("%s case %d: log F_p,xx %.6f, largest deviation from the hand "
                        "computation %.2e",
                        order == 1 ? "tet4" : "tet10", cs, L0[0], worst);
            CHECK(worst <= 1e-12 * l);
            CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
            defo_plasticity_destroy(p);
        }
        /* the default (deviatoric) rule: tr L_p = 0, L_p ∝ diag(2, −1, −1) */
        defo_plasticity_def pd = defo_default_plasticity_def();
        pd.yield = 0.001, pd.creep = 20, pd.max = 1;
        defo_plasticity *p = NULL;
        CHECK_OK(defo_plasticity_create(&pd, m->num_elems, points, &p));
        CHECK_OK(defo_plasticity_bind(p, c.fm));
        for (int n = 0; n < 12; n++) CHECK_OK(defo_plasticity_update(p, c.fm, x, dt, NULL));
        double tr = 0, shape = 0, L[6];
        defo_plasticity_log(p, 0, 0, L);
        for (defo_index e = 0; e < m->num_elems; e++)
            for (int q = 0; q < points; q++) {
                double Lq[6];
                defo_plasticity_log(p, e, q, Lq);
                tr = fmax(tr, fabs(Lq[0] + Lq[1] + Lq[2]));
                shape = fmax(shape, fabs(Lq[1] + 0.5 * Lq[0]) + fabs(Lq[2] + 0.5 * Lq[0]));
            }
        TEST_REPORT("deviatoric rule: log F_p,xx %.5f, max |tr log F_p| %.1e, off diag(2,-1,-1) "
                    "%.1e",
                    L[0], tr, shape);
        CHECK(L[0] > 0.01);
        CHECK(tr <= 1e-15);
        CHECK(shape <= 1e-12);
        CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
        defo_plasticity_destroy(p);
        free(x);
        model_drop(&c);
        defo_mesh_destroy(m);
    }
}

/* ---------------------------------------------------------- von Mises */
/* The 1D closed form (linear kinematic hardening H, isotropic K) at strain
 * eps after the state (ep, alpha, abar): the exact 1D return map. */
typedef struct vm1d {
    double E, sy, H, K, ep, alpha, abar;
} vm1d;
static double vm1d_stress(vm1d *v, double eps) {
    const double tr = v->E * (eps - v->ep), xi = tr - v->alpha, r = v->sy + v->K * v->abar;
    if (fabs(xi) <= r) return tr;
    const double dg = (fabs(xi) - r) / (v->E + v->H + v->K), sg = xi > 0 ? 1 : -1;
    v->ep += sg * dg, v->alpha += sg * v->H * dg, v->abar += dg;
    return v->E * (eps - v->ep);
}

/* σ_xx of element 0 (world axes) at the last evaluation */
static double stress_xx(defo_force_model *fm) {
    double s[9];
    defo_force_model_stress(fm, 0, 0, s);
    return s[0];
}

/* One element under uniaxial stress along x: stretch a along x, lateral b
 * solved (secant) so σ_yy = σ_zz = 0 with the current plastic state;
 * returns σ_xx. */
static double uniaxial(defo_force_model *fm, const defo_mesh *m, double a, double *b, double *x) {
    double b0 = *b, b1 = *b * (1 + 1e-7), f0 = 0, f1 = 0;
    for (int it = 0; it < 30; it++) {
        const double A1[9] = {a, 0, 0, 0, b1, 0, 0, 0, b1};
        affine(m, A1, x);
        CHECK_OK(defo_force_model_evaluate(fm, x, 0, NULL, NULL));
        double s[9];
        defo_force_model_stress(fm, 0, 0, s);
        f1 = s[4];
        if (it == 0) {
            const double A0[9] = {a, 0, 0, 0, b0, 0, 0, 0, b0};
            affine(m, A0, x);
            CHECK_OK(defo_force_model_evaluate(fm, x, 0, NULL, NULL));
            defo_force_model_stress(fm, 0, 0, s);
            f0 = s[4];
        }
        if (fabs(f1) < 1e-12 * stress_xx(fm) + 1e-9 || f1 == f0) break;
        const double bn = b1 - f1 * (b1 - b0) / (f1 - f0);
        b0 = b1, f0 = f1, b1 = bn;
    }
    *b = b1;
    const double A[9] = {a, 0, 0, 0, b1, 0, 0, 0, b1};
    affine(m, A, x);
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, NULL, NULL));
    return stress_xx(fm);
}

static void test_von_mises_uniaxial_loop(void) {
    const double E = 1e6, sy = 1e3, H = 2.5e5; /* yield strain 1e-3, slope E/5 */
    const defo_formulation forms[2] = {DEFO_FORMULATION_INVERTIBLE, DEFO_FORMULATION_COROTATED};
    for (int f = 0; f < 2; f++)
        for (int iso = 0; iso < 2; iso++) {
            defo_mesh *m = one_tet();
            defo_material_def mat = material(DEFO_MODEL_COROTATED, E, 0.3);
            model c;
            if (!model_make(&c, m, &mat, forms[f])) return;
            defo_plasticity_def pd = defo_default_von_mises_def(sy, H);
            pd.isotropic_hardening = iso ? 1e5 : 0;
            defo_plasticity *p = NULL;
            CHECK_OK(defo_plasticity_create(&pd, 1, 1, &p));
            CHECK_OK(defo_plasticity_bind(p, c.fm));
            vm1d ref = {E, sy, H, pd.isotropic_hardening, 0, 0, 0};
            double x[12], b = 1, worst = 0, smax = 0, rev0 = 0, rev1 = 0, prev = 0;
            /* 0 → 5 ε_y, back to −3 ε_y, up to +2 ε_y: 200 steps */
            const double path[4] = {0, 5e-3, -3e-3, 2e-3};
            int n = 0;
            for (int leg = 0; leg < 3; leg++)
                for (int k = 1; k <= 60; k++, n++) {
                    const double eps = path[leg] + (path[leg + 1] - path[leg]) * k / 60.0;
                    const double a = exp(eps);
                    double sig = 0;
                    /* the return map at this strain, the lateral stretch
                     * re-solved until the state settles */
                    for (int r = 0; r < 4; r++) {
                        sig = uniaxial(c.fm, m, a, &b, x);
                        CHECK_OK(defo_plasticity_update(p, c.fm, x, 0.01, NULL));
                    }
                    sig = uniaxial(c.fm, m, a, &b, x);
                    const double abar = ref.abar;
                    const double want = vm1d_stress(&ref, eps);
                    worst = fmax(worst, fabs(sig - want) / fmax(fabs(want), sy));
                    if (leg == 0) smax = sig;
                    /* the reverse yield: between the last elastic step of
                     * leg 1 and the first that flows */
                    if (leg == 1 && rev0 == 0 && ref.abar > abar) rev0 = prev, rev1 = sig;
                    prev = sig;
                }
            const double Et = E * H / (E + H);
            TEST_REPORT("%s%s: largest stress error %.3f %% of max(|σ|, σ_y); σ_max %.1f Pa "
                        "(closed form %.1f), reverse yield between %.1f and %.1f Pa (σ_max − "
                        "2σ_y = %.1f)",
                        forms[f] ? "corotated" : "invertible", iso ? " + isotropic" : "",
                        100 * worst, smax, iso ? smax : sy + Et * (5e-3 - sy / E), rev0, rev1,
                        smax - 2 * sy);
            CHECK(worst < 0.01);
            if (!iso) {
                CHECK(fabs(smax - (sy + Et * (5e-3 - sy / E))) < 0.01 * smax);
                /* steps of E·ε_y/12 straddle the Bauschinger point */
                CHECK(rev0 >= smax - 2 * sy - 0.01 * sy && rev1 <= smax - 2 * sy + 0.01 * sy);
            }
            defo_plasticity_stats st;
            CHECK_OK(defo_plasticity_update(p, c.fm, x, 0.01, &st));
            CHECK(fabs(log(st.max_det)) < 1e-14 && fabs(log(st.min_det)) < 1e-14);
            CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
            defo_plasticity_destroy(p);
            model_drop(&c);
            defo_mesh_destroy(m);
        }
}

/* ------------------------------------------------- plastic rest shape */
static void test_rests_in_plastic_shape(void) {
    for (int order = 1; order <= 2; order++)
        for (int f = 0; f < 2; f++) {
            defo_mesh *m = box(3, 2, 2, 1.0, 0.4, 0.3, order);
            defo_material_def mat = material(DEFO_MODEL_NEO_HOOKEAN, 1e5, 0.35);
            model c;
            if (!model_make(&c, m, &mat,
                            f ? DEFO_FORMULATION_COROTATED : DEFO_FORMULATION_INVERTIBLE))
                return;
            const int points = defo_force_model_points(c.fm);
            const size_t n3 = 3 * (size_t)m->num_nodes;
            double *x = malloc(n3 * sizeof *x), *fe = malloc(n3 * sizeof *fe),
                   *fp = malloc(n3 * sizeof *fp);
            /* a rotated symmetric stretch S: F = R S */
            const double S[9] = {1.2, 0.05, 0, 0.05, 0.9, 0.03, 0, 0.03, 0.95};
            const double ang = 0.7, ca = cos(ang), sa = sin(ang);
            const double R[9] = {ca, -sa, 0, sa, ca, 0, 0, 0, 1};
            double A[9];
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++)
                    A[3 * r + k] =
                        R[3 * r] * S[k] + R[3 * r + 1] * S[3 + k] + R[3 * r + 2] * S[6 + k];
            affine(m, A, x);
            CHECK_OK(defo_force_model_evaluate(c.fm, x, 0, fe, NULL));
            /* the multiplicative map with γ = 0 takes the whole stretch into
             * F_p in one update (volumetric: det S ≠ 1) */
            defo_plasticity_def pd = defo_default_multiplicative_def(0);
            pd.volumetric = 1;
            defo_plasticity *p = NULL;
            CHECK_OK(defo_plasticity_create(&pd, m->num_elems, points, &p));
            CHECK_OK(defo_plasticity_bind(p, c.fm));
            CHECK_OK(defo_plasticity_update(p, c.fm, x, 0.01, NULL));
            double energy = 0;
            CHECK_OK(defo_force_model_evaluate(c.fm, x, 0, fp, &energy));
            const double f0 = max_abs(fe, n3), f1 = max_abs(fp, n3);
            TEST_REPORT("tet%d %s: max |f| elastic %.3e N, in the plastic rest shape %.2e N "
                        "(energy %.1e J)",
                        order == 1 ? 4 : 10, f ? "corotated" : "invertible", f0, f1, energy);
            CHECK(f0 > 100);
            CHECK(f1 <= 1e-10 * f0);
            CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
            defo_plasticity_destroy(p);
            free(x);
            free(fe);
            free(fp);
            model_drop(&c);
            defo_mesh_destroy(m);
        }
}

/* --------------------------------------------- finite differences */
static void test_finite_differences_with_plastic_state(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = box(2, 2, 1, 0.6, 0.5, 0.3, order);
        defo_material_def mat = material(DEFO_MODEL_NEO_HOOKEAN, 1e5, 0.3);
        model c;
        memset(&c, 0, sizeof c);
        defo_force_model_def fdef = defo_default_force_model_def();
        fdef.definiteness_fix = 0; /* the exact tangent, to compare with differences */
        CHECK_OK(defo_element_rest_create(m, &c.rest));
        CHECK_OK(defo_material_create(&mat, &c.mat));
        CHECK_OK(defo_force_model_create(m, c.rest, c.mat, &fdef, &c.fm));
        if (!c.fm) return;
        const size_t n3 = 3 * (size_t)m->num_nodes;
        double *x = malloc(n3 * sizeof *x), *f = malloc(n3 * sizeof *f),
               *fa = malloc(n3 * sizeof *fa), *fb = malloc(n3 * sizeof *fb),
               *d = malloc(n3 * sizeof *d), *kd = malloc(n3 * sizeof *kd);
        test_rng rng = {77};
        /* a plastic state from a random deformation (multiplicative, γ 0.02) */
        for (size_t k = 0; k < n3; k++) x[k] = m->x[k] * 1.1 + test_range(&rng, -0.04, 0.04);
        defo_plasticity_def pd = defo_default_multiplicative_def(0.02);
        defo_plasticity *p = NULL;
        CHECK_OK(defo_plasticity_create(&pd, m->num_elems, defo_force_model_points(c.fm), &p));
        CHECK_OK(defo_plasticity_bind(p, c.fm));
        defo_plasticity_stats st;
        CHECK_OK(defo_plasticity_update(p, c.fm, x, 0.01, &st));
        CHECK(st.yielding > 0);
        /* another random state, with the plastic part in place */
        for (size_t k = 0; k < n3; k++) x[k] = m->x[k] + test_range(&rng, -0.05, 0.05);
        for (size_t k = 0; k < n3; k++) d[k] = test_range(&rng, -1, 1);
        CHECK_OK(defo_force_model_evaluate(c.fm, x, DEFO_EVAL_TANGENT, f, NULL));
        defo_force_model_tangent_apply(c.fm, d, kd);
        double fd = 0, fdot = 0, kerr = 0, kmax = max_abs(kd, n3);
        const double h = 1e-6;
        double Ea, Eb;
        for (size_t k = 0; k < n3; k++) fa[k] = x[k] + h * d[k], fb[k] = x[k] - h * d[k];
        CHECK_OK(defo_force_model_evaluate(c.fm, fa, 0, NULL, &Ea));
        CHECK_OK(defo_force_model_evaluate(c.fm, fb, 0, NULL, &Eb));
        fd = -(Ea - Eb) / (2 * h);
        for (size_t k = 0; k < n3; k++) fdot += f[k] * d[k];
        /* K d against −(f(x + h d) − f(x − h d)) / 2h */
        double *xa = malloc(n3 * sizeof *xa), *xb = malloc(n3 * sizeof *xb);
        memcpy(xa, fa, n3 * sizeof *xa);
        memcpy(xb, fb, n3 * sizeof *xb);
        CHECK_OK(defo_force_model_evaluate(c.fm, xa, 0, fa, NULL));
        CHECK_OK(defo_force_model_evaluate(c.fm, xb, 0, fb, NULL));
        for (size_t k = 0; k < n3; k++) kerr = fmax(kerr, fabs(kd[k] + (fa[k] - fb[k]) / (2 * h)));
        TEST_REPORT("tet%d, %ld of %ld points plastic: f·d %.8e vs −dE/dh %.8e; |K d + df/dh| "
                    "%.2e of %.2e",
                    order == 1 ? 4 : 10, (long)st.yielding,
                    (long)(m->num_elems * defo_force_model_points(c.fm)), fdot, fd, kerr, kmax);
        CHECK(fabs(fdot - fd) <= 1e-6 * fabs(fdot));
        CHECK(kerr <= 1e-5 * kmax);
        free(xa);
        free(xb);
        CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
        defo_plasticity_destroy(p);
        free(x);
        free(f);
        free(fa);
        free(fb);
        free(d);
        free(kd);
        model_drop(&c);
        defo_mesh_destroy(m);
    }
}

/* ------------------------------------------ never inverted, no NaN */
static void test_never_inverts(void) {
    defo_mesh *m = box(3, 3, 3, 1, 1, 1, 1);
    defo_material_def mat = material(DEFO_MODEL_NEO_HOOKEAN, 1e5, 0.3);
    model c;
    if (!model_make(&c, m, &mat, DEFO_FORMULATION_INVERTIBLE)) return;
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x);
    defo_plasticity_def defs[4] = {defo_default_plasticity_def(), defo_default_plasticity_def(),
                                   defo_default_von_mises_def(100, 1e4),
                                   defo_default_multiplicative_def(0.01)};
    defs[0].yield = 0, defs[0].creep = 100, defs[0].max = 50;
    defs[1] = defs[0], defs[1].volumetric = 1;
    const char *names[4] = {"mg04", "mg04 volumetric", "von_mises", "multiplicative"};
    for (int k = 0; k < 4; k++) {
        defo_plasticity *p = NULL;
        CHECK_OK(defo_plasticity_create(&defs[k], m->num_elems, 1, &p));
        CHECK_OK(defo_plasticity_bind(p, c.fm));
        test_rng rng = {1234 + (uint64_t)k};
        defo_plasticity_stats st;
        double lo = 1, hi = 1, worst = 0;
        defo_index skipped = 0;
        for (int round = 0; round < 30; round++) {
            /* crushed flat, inverted, torn apart and random */
            for (defo_index i = 0; i < m->num_nodes; i++) {
                const double *X = m->x + 3 * i;
                double *y = x + 3 * i;
                switch (round % 5) {
                case 0:
                    y[0] = X[0], y[1] = X[1], y[2] = 0.01 * X[2];
                    break;
                case 1:
                    y[0] = X[0], y[1] = X[1], y[2] = -0.5 * X[2];
                    break;
                case 2:
                    y[0] = 20 * X[0], y[1] = X[1], y[2] = X[2];
                    break;
                case 3:
                    y[0] = X[0], y[1] = X[1], y[2] = 0;
                    break;
                default:
                    for (int r = 0; r < 3; r++) y[r] = test_range(&rng, -1, 2);
                }
            }
            CHECK_OK(defo_plasticity_update(p, c.fm, x, 0.01, &st));
            lo = fmin(lo, st.min_det), hi = fmax(hi, st.max_det);
            skipped += st.skipped;
            double *f = malloc(n3 * sizeof *f), E = 0;
            CHECK_OK(defo_force_model_evaluate(c.fm, x, DEFO_EVAL_TANGENT, f, &E));
            CHECK(isfinite(E) && isfinite(max_abs(f, n3)));
            free(f);
            const double *A = defo_plasticity_inverse(p);
            for (size_t j = 0; j < 9 * (size_t)m->num_elems; j++) CHECK(isfinite(A[j]));
            /* the singular values of F_p within [1/limit, limit] */
            for (defo_index e = 0; e < m->num_elems; e++) {
                double L[6];
                defo_plasticity_log(p, e, 0, L);
                const double nrm = sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2] +
                                        2 * (L[3] * L[3] + L[4] * L[4] + L[5] * L[5]));
                worst = fmax(worst, nrm);
            }
        }
        TEST_REPORT("%s: det F_p in [%.4f, %.4f] (limit 4), largest |log F_p| %.3f, %ld point "
                    "updates skipped (flat or inverted F_e)",
                    names[k], lo, hi, worst, (long)skipped);
        CHECK(lo >= 0.25 * (1 - 1e-12) && hi <= 4 * (1 + 1e-12));
        CHECK(worst <= sqrt(3.0) * log(4.0) * (1 + 1e-12));
        CHECK(skipped > 0);
        CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
        defo_plasticity_destroy(p);
    }
    free(x);
    model_drop(&c);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------ parameters, bytes */
static void test_parameters_and_bytes(void) {
    defo_plasticity_def d = defo_default_plasticity_def();
    d.limit = 0.5;
    CHECK(defo_plasticity_def_validate(&d) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "limit: 0.5") != NULL);
    d = defo_default_von_mises_def(-5, 0);
    CHECK(defo_plasticity_def_validate(&d) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "yield_stress: -5") != NULL);
    d = defo_default_von_mises_def(5, -1);
    CHECK(defo_plasticity_def_validate(&d) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "hardening: -1") != NULL);
    d = defo_default_multiplicative_def(NAN);
    CHECK(defo_plasticity_def_validate(&d) == DEFO_ERR_INVALID_ARGUMENT);
    d = defo_default_plasticity_def();
    d.creep = -1;
    CHECK(defo_plasticity_def_validate(&d) == DEFO_ERR_INVALID_ARGUMENT);
    defo_plasticity_model mm;
    CHECK(defo_plasticity_model_from_name("von_misses", &mm) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK_OK(defo_plasticity_model_from_name("multiplicative", &mm));
    CHECK(mm == DEFO_PLASTICITY_MULTIPLICATIVE);

    defo_mesh *m = box(3, 2, 2, 1, 0.5, 0.5, 2);
    defo_material_def mat = material(DEFO_MODEL_NEO_HOOKEAN, 1e5, 0.3);
    model c;
    if (!model_make(&c, m, &mat, DEFO_FORMULATION_INVERTIBLE)) return;
    const size_t n3 = 3 * (size_t)m->num_nodes, np = 4 * (size_t)m->num_elems;
    double *x = malloc(n3 * sizeof *x);
    test_rng rng = {5};
    for (size_t k = 0; k < n3; k++) x[k] = m->x[k] * 1.3 + test_range(&rng, -0.05, 0.05);
    /* two parameter sets: von Mises on even elements, mg04 on odd */
    defo_plasticity_def sets[2] = {defo_default_von_mises_def(2e3, 1e4),
                                   defo_default_plasticity_def()};
    sets[1].yield = 0.01, sets[1].creep = 50, sets[1].max = 1;
    int32_t *set_of = malloc((size_t)m->num_elems * sizeof *set_of);
    for (defo_index e = 0; e < m->num_elems; e++) set_of[e] = (int32_t)(e % 2);
    defo_plasticity *p = NULL, *q = NULL;
    CHECK_OK(defo_plasticity_create(NULL, m->num_elems, 4, &p));
    CHECK_OK(defo_plasticity_set_regions(p, 2, sets, set_of));
    CHECK_OK(defo_plasticity_bind(p, c.fm));
    CHECK_OK(defo_plasticity_update(p, c.fm, x, 0.01, NULL));
    CHECK_OK(defo_plasticity_set_goal(p, c.fm, x, m->num_nodes));
    const size_t nb = defo_plasticity_state_bytes(p);
    unsigned char *buf = malloc(nb);
    defo_plasticity_write_state(p, buf);
    CHECK_OK(defo_plasticity_create(NULL, m->num_elems, 4, &q));
    CHECK_OK(defo_plasticity_read_state(q, buf, nb));
    CHECK(defo_plasticity_num_sets(q) == 2 && defo_plasticity_has_goal(q));
    CHECK(defo_plasticity_get_def(q, 0)->model == DEFO_PLASTICITY_VON_MISES);
    CHECK(memcmp(defo_plasticity_inverse(p), defo_plasticity_inverse(q), 9 * np * 8) == 0);
    /* damaged bytes: refused, q unchanged */
    unsigned char *bad = malloc(nb);
    memcpy(bad, buf, nb);
    double big = 1e3;
    /* L_xx of point 0 beyond the limit (the state follows the header;
     * then F_p⁻¹ and the goal: 13 + 9 + 15 numbers per point) */
    memcpy(bad + nb - 37 * np * 8, &big, 8);
    CHECK(defo_plasticity_read_state(q, bad, nb) == DEFO_ERR_PARSE);
    CHECK(strstr(defo_last_error(), "beyond its limit") != NULL);
    memcpy(bad, buf, nb);
    memcpy(bad + nb - 24 * np * 8, &big, 8); /* F_p⁻¹ of point 0 */
    CHECK(defo_plasticity_read_state(q, bad, nb) == DEFO_ERR_PARSE);
    CHECK(strstr(defo_last_error(), "is not exp(−L_p)") != NULL);
    CHECK(defo_plasticity_read_state(q, buf, nb - 8) == DEFO_ERR_PARSE);
    bad[0] = 'X';
    CHECK(defo_plasticity_read_state(q, bad, nb) == DEFO_ERR_PARSE);
    CHECK(memcmp(defo_plasticity_inverse(p), defo_plasticity_inverse(q), 9 * np * 8) == 0);
    /* a goal that inverts an element is refused naming it */
    for (size_t k = 0; k < n3; k += 3) x[k + 2] = -x[k + 2];
    CHECK(defo_plasticity_set_goal(p, c.fm, x, m->num_nodes) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "flat or inverted at element") != NULL);
    CHECK(defo_plasticity_set_regions(p, 2, sets, NULL) == DEFO_OK);
    set_of[3] = 7;
    CHECK(defo_plasticity_set_regions(p, 2, sets, set_of) == DEFO_ERR_INVALID_ARGUMENT);
    TEST_REPORT("%zu state bytes for %zu points (2 sets, a goal)", nb, np);
    free(bad);
    free(buf);
    free(set_of);
    free(x);
    CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
    defo_plasticity_destroy(p);
    defo_plasticity_destroy(q);
    model_drop(&c);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------- batches and lanes */
/* One update sequence (three updates at three states: flowing, capped,
 * flat and inverted points, every model, a goal) with the return maps in
 * batches or one point at a time; the state's bytes out. */
static size_t batched_run(const defo_mesh *m, const double *x, int batched, unsigned char **bytes,
                          defo_plasticity_stats *st) {
    defo_material_def mat = material(DEFO_MODEL_NEO_HOOKEAN, 1e5, 0.3);
    model c;
    if (!model_make(&c, m, &mat, DEFO_FORMULATION_INVERTIBLE)) return 0;
    defo_plasticity_def sets[4] = {
        defo_default_plasticity_def(), defo_default_von_mises_def(2e3, 1e4),
        defo_default_multiplicative_def(0.01), defo_default_multiplicative_def(0.02)};
    sets[0].yield = 0.005, sets[0].creep = 50, sets[0].max = 0.2;
    sets[1].isotropic_hardening = 5e3, sets[1].max = 0.3;
    sets[3].volumetric = 1, sets[3].limit = 1.5;
    const int nq = defo_force_model_points(c.fm);
    int32_t *set_of = malloc((size_t)m->num_elems * sizeof *set_of);
    for (defo_index e = 0; e < m->num_elems; e++) set_of[e] = (int32_t)((e / 3) % 4);
    defo_plasticity *p = NULL;
    CHECK_OK(defo_plasticity_create(NULL, m->num_elems, nq, &p));
    CHECK_OK(defo_plasticity_set_regions(p, 4, sets, set_of));
    CHECK_OK(defo_plasticity_bind(p, c.fm));
    defo_plast_set_batched(p, batched);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *y = malloc(n3 * sizeof *y);
    CHECK_OK(defo_plasticity_set_goal(p, c.fm, m->x, m->num_nodes)); /* the rest shape */
    for (int n = 0; n < 3; n++) {
        for (size_t j = 0; j < n3; j++) y[j] = m->x[j] + (1 + n) * (x[j] - m->x[j]);
        CHECK_OK(defo_plasticity_update(p, c.fm, y, 0.01, &st[n]));
    }
    const size_t nb = defo_plasticity_state_bytes(p);
    *bytes = malloc(nb);
    defo_plasticity_write_state(p, *bytes);
    free(y);
    free(set_of);
    CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
    defo_plasticity_destroy(p);
    model_drop(&c);
    return nb;
}

/* The batched return maps (PLAST_LANES points at a time, the
 * eigen-decompositions in the lanes of defo_plast_sym_eig_lanes) against one point at a time: the
 * same bits, tet4 and tet10; and the eigen-solver's two builds (baseline,
 * AVX2) and every lane against the one-matrix call: the same bits. */
static void test_batched_equals_single(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = box(6, 3, 3, 1.5, 1.0, 1.0, order);
        const size_t n3 = 3 * (size_t)m->num_nodes;
        double *x = malloc(n3 * sizeof *x);
        test_rng rng = {31};
        for (size_t j = 0; j < n3; j++) x[j] = m->x[j] * 1.03 + test_range(&rng, -0.03, 0.03);
        for (size_t j = 0; j < n3; j += 3 * 5) x[j] += 0.2; /* some elements inverted */
        unsigned char *a = NULL, *b = NULL;
        defo_plasticity_stats sa[3], sb[3];
        const size_t na = batched_run(m, x, 1, &a, sa), nb = batched_run(m, x, 0, &b, sb);
        CHECK(na > 0 && na == nb && !memcmp(a, b, na));
        for (int n = 0; n < 3; n++)
            CHECK(sa[n].yielding == sb[n].yielding && sa[n].capped == sb[n].capped &&
                  sa[n].skipped == sb[n].skipped && sa[n].checked == sb[n].checked);
        TEST_REPORT("tet%d: %zu state bytes identical; last update %ld points flowed, %ld capped, "
                    "%ld skipped (flat or inverted) of %ld checked",
                    order == 1 ? 4 : 10, na, (long)sa[2].yielding, (long)sa[2].capped,
                    (long)sa[2].skipped, (long)sa[2].checked);
        CHECK(sa[2].yielding > 0 && sa[2].capped > 0 && sa[2].skipped > 0);
        free(a), free(b), free(x);
        defo_mesh_destroy(m);
    }
    /* the solver: random, clustered, repeated, a multiple of I (Jacobi), not finite */
    test_rng rng = {11};
    long differ = 0, tried = 0;
    int avx2 = 1;
    for (int it = 0; it < 10000; it++) {
        double in[PLAST_LANES][6];
        const double *ap[PLAST_LANES];
        for (int j = 0; j < PLAST_LANES; j++) {
            for (int k = 0; k < 6; k++) in[j][k] = test_range(&rng, -1, 1);
            const int kind = (it + j) % 7;
            if (kind == 1) in[j][1] = in[j][0] * (1 + 1e-13), in[j][3] = in[j][4] = in[j][5] = 0;
            if (kind == 2) in[j][1] = in[j][2] = in[j][0], in[j][3] = in[j][4] = in[j][5] = 0;
            if (kind == 3) in[j][3] = NAN;
            if (kind == 4) in[j][4] = 1e-12 * in[j][4];
            ap[j] = in[j];
        }
        double h0[PLAST_LANES][3], h1[PLAST_LANES][3], hs[3];
        defo_mat3 V0[PLAST_LANES], V1[PLAST_LANES], Vs;
        defo_plast_sym_eig_with(0, ap, h0, V0);
        if (avx2) avx2 = defo_plast_sym_eig_with(1, ap, h1, V1);
        for (int j = 0; j < PLAST_LANES; j++) {
            defo_plast_sym_eig(in[j], hs, &Vs);
            tried++;
            differ += memcmp(hs, h0[j], sizeof hs) != 0 || memcmp(&Vs, &V0[j], sizeof Vs) != 0;
            if (avx2)
                differ +=
                    memcmp(h1[j], h0[j], sizeof hs) != 0 || memcmp(&V1[j], &V0[j], sizeof Vs) != 0;
        }
    }
    TEST_REPORT("eigen-solver: %ld matrices, %ld lanes differ from the one-matrix call%s", tried,
                differ, avx2 ? " or between the baseline and AVX2 builds" : " (no AVX2 here)");
    CHECK(differ == 0);
}

/* ------------------------------------------------------ threads */
typedef struct det_ctx {
    defo_mesh *m;
    double *x;
} det_ctx;

static void det_compute(void *vctx, void *out) {
    det_ctx *ctx = vctx;
    defo_material_def mat = material(DEFO_MODEL_NEO_HOOKEAN, 1e5, 0.3);
    model c;
    if (!model_make(&c, ctx->m, &mat, DEFO_FORMULATION_INVERTIBLE)) return;
    defo_plasticity_def sets[3] = {defo_default_plasticity_def(),
                                   defo_default_von_mises_def(2e3, 1e4),
                                   defo_default_multiplicative_def(0.01)};
    sets[0].yield = 0.005, sets[0].creep = 50, sets[0].max = 0.2;
    int32_t *set_of = malloc((size_t)ctx->m->num_elems * sizeof *set_of);
    for (defo_index e = 0; e < ctx->m->num_elems; e++) set_of[e] = (int32_t)(e % 3);
    defo_plasticity *p = NULL;
    CHECK_OK(defo_plasticity_create(NULL, ctx->m->num_elems, 1, &p));
    CHECK_OK(defo_plasticity_set_regions(p, 3, sets, set_of));
    CHECK_OK(defo_plasticity_bind(p, c.fm));
    double *f = out;
    for (int n = 0; n < 3; n++) CHECK_OK(defo_plasticity_update(p, c.fm, ctx->x, 0.01, NULL));
    CHECK_OK(defo_force_model_evaluate(c.fm, ctx->x, 0, f, NULL));
    memcpy(f + 3 * (size_t)ctx->m->num_nodes, defo_plasticity_inverse(p),
           9 * (size_t)ctx->m->num_elems * sizeof(double));
    free(set_of);
    CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
    defo_plasticity_destroy(p);
    model_drop(&c);
}

static void test_determinism(void) {
    det_ctx ctx;
    ctx.m = box(12, 8, 8, 1.5, 1.0, 1.0, 1); /* 4608 tets: above the parallel threshold */
    const size_t n3 = 3 * (size_t)ctx.m->num_nodes;
    ctx.x = malloc(n3 * sizeof(double));
    test_rng rng = {99};
    for (size_t j = 0; j < n3; j++) ctx.x[j] = ctx.m->x[j] * 1.02 + test_range(&rng, -0.02, 0.02);
    const size_t bytes = (n3 + 9 * (size_t)ctx.m->num_elems) * sizeof(double);
    CHECK(test_bitwise_same_for_threads(det_compute, &ctx, bytes, 2));
    free(ctx.x);
    defo_mesh_destroy(ctx.m);
}

static void test_closed_form_eigen(void) {
    test_rng rng = {7};
    const int r[6] = {0, 1, 2, 0, 1, 0}, c[6] = {0, 1, 2, 1, 2, 2};
    double worst_a = 0, worst_h = 0, worst_q = 0;
    for (int it = 0; it < 60000; it++) {
        defo_vec3 ax =
            defo_v3(test_range(&rng, -1, 1), test_range(&rng, -1, 1), test_range(&rng, -1, 1));
        ax = defo_v3_scale(ax, 1 / defo_v3_norm(ax));
        defo_mat3 Q = defo_m3_rotation(ax, test_range(&rng, -4, 4));
        double l[3] = {test_range(&rng, -1, 1), test_range(&rng, -1, 1), test_range(&rng, -1, 1)};
        const double gap = pow(10, test_range(&rng, -12, 0));
        switch (it % 6) { /* distinct; two or three clustered; a pair equal; axes */
        case 1:
            l[1] = l[0] + gap * l[1];
            break;
        case 2:
            l[1] = l[0] + gap * l[1], l[2] = l[0] + gap * l[2];
            break;
        case 3:
            l[2] = l[1];
            break;
        case 4:
            l[1] = l[2] = l[0];
            break;
        case 5:
            Q = defo_m3_identity();
            break;
        }
        double a[6], h[3], m = 0;
        for (int k = 0; k < 6; k++) {
            a[k] = Q.m[r[k]][0] * l[0] * Q.m[c[k]][0] + Q.m[r[k]][1] * l[1] * Q.m[c[k]][1] +
                   Q.m[r[k]][2] * l[2] * Q.m[c[k]][2];
            m = fmax(m, fabs(a[k]));
        }
        defo_mat3 V;
        defo_plast_sym_eig(a, h, &V);
        for (int k = 0; k < 6; k++) {
            const double b = V.m[r[k]][0] * h[0] * V.m[c[k]][0] +
                             V.m[r[k]][1] * h[1] * V.m[c[k]][1] +
                             V.m[r[k]][2] * h[2] * V.m[c[k]][2];
            worst_a = fmax(worst_a, fabs(b - a[k]) / m);
        }
        const defo_mat3 I = defo_m3_tmul(V, V);
        for (int k = 0; k < 9; k++) worst_q = fmax(worst_q, fabs(I.m[k / 3][k % 3] - (k % 4 == 0)));
        worst_q = fmax(worst_q, fabs(defo_m3_det(V) - 1));
        for (int i = 0; i < 3; i++) /* sort the known values descending */
            for (int j = i + 1; j < 3; j++)
                if (l[j] > l[i]) {
                    const double t = l[i];
                    l[i] = l[j], l[j] = t;
                }
        CHECK(h[0] >= h[1] && h[1] >= h[2]);
        for (int i = 0; i < 3; i++) worst_h = fmax(worst_h, fabs(h[i] - l[i]) / m);
    }
    TEST_REPORT("60000 matrices: |V diag(h) Vt - A| %.1e, |h - known| %.1e (of max|A|), |VtV - I| "
                "and |det V - 1| %.1e",
                worst_a, worst_h, worst_q);
    CHECK(worst_a <= 16 * DBL_EPSILON);
    CHECK(worst_h <= 32 * DBL_EPSILON); /* A's own rounding moves them too (Weyl) */
    CHECK(worst_q <= 16 * DBL_EPSILON);
}

/* Σ_e V_e det F_p over the points (V_e/points each: tet4 one, tet10 four
 * of equal weight) */
static double plastic_volume(const defo_plasticity *p, const defo_mesh *m, const double *w,
                             int points, double *lo, double *hi) {
    double P = 0;
    *lo = INFINITY, *hi = -INFINITY;
    for (defo_index e = 0; e < m->num_elems; e++)
        for (int q = 0; q < points; q++) {
            double L[6];
            defo_plasticity_log(p, e, q, L);
            const double t = L[0] + L[1] + L[2];
            P += w[e] / points * exp(t);
            *lo = fmin(*lo, t), *hi = fmax(*hi, t);
        }
    return P;
}

static void test_patch_volume(void) {
    defo_material_def mat = material(DEFO_MODEL_NEO_HOOKEAN, 1e5, 0.3);
    for (int order = 1; order <= 2; order++)
        for (int uniform = 0; uniform < 2; uniform++) {
            defo_mesh *m = box(3, 3, 3, 1, 1, 1, order);
            model c;
            if (!model_make(&c, m, &mat, DEFO_FORMULATION_INVERTIBLE)) return;
            const int points = defo_force_model_points(c.fm);
            const size_t n3 = 3 * (size_t)m->num_nodes;
            double *x = malloc(n3 * sizeof *x), V0 = 0, lo, hi;
            CHECK_OK(defo_element_volume(m, NULL, &V0));
            defo_plasticity_def pd = defo_default_plasticity_def();
            pd.yield = 0, pd.creep = 50, pd.max = 10;
            defo_plasticity *p = NULL;
            CHECK_OK(defo_plasticity_create(&pd, m->num_elems, points, &p));
            CHECK_OK(defo_plasticity_bind(p, c.fm));
            test_rng rng = {77};
            for (int round = 0; round < 8; round++) {
                /* squashed 20 % with a random 3 % on every node, or uniformly
                 * squeezed */
                for (size_t j = 0; j < n3; j++) {
                    const double X = m->x[j];
                    x[j] = uniform ? 0.9 * X
                                   : (j % 3 == 2 ? 0.8 : 1.1) * X + test_range(&rng, -0.03, 0.03);
                }
                CHECK_OK(defo_plasticity_update(p, c.fm, x, 0.01, NULL));
            }
            const double P =
                plastic_volume(p, m, defo_element_rest_volume(c.rest), points, &lo, &hi);
            TEST_REPORT("tet%d, %s: Σ V_e det F_p / V0 - 1 = %.1e, tr L_p in [%.2e, %.2e]",
                        order == 1 ? 4 : 10, uniform ? "uniform squeeze" : "random squash",
                        P / V0 - 1, lo, hi);
            CHECK(fabs(P / V0 - 1) <= 1e-12);
            if (order == 2 || uniform)
                CHECK(fabs(lo) <= 1e-14 && fabs(hi) <= 1e-14); /* each point keeps its own */
            else
                CHECK(hi - lo > 1e-3); /* the elements traded volume */
            CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
            defo_plasticity_destroy(p);
            free(x);
            model_drop(&c);
            defo_mesh_destroy(m);
        }
}

/* An allocator that refuses while `refuse` is set (malloc otherwise). */
static int refuse;
static void *refusing_alloc(size_t n, void *user) {
    (void)user;
    return refuse ? NULL : malloc(n);
}
static void refusing_free(void *q, void *user) {
    (void)user;
    free(q);
}

/* The volume exchange without memory for its sums: the elements that flowed
 * keep their own volume (tr L_p = 0 each) and are counted as unpatched; once
 * memory is back they trade again. */
static void test_patch_volume_out_of_memory(void) {
    defo_set_allocator(refusing_alloc, refusing_free, NULL);
    defo_material_def mat = material(DEFO_MODEL_NEO_HOOKEAN, 1e5, 0.3);
    defo_mesh *m = box(3, 3, 3, 1, 1, 1, 1);
    model c;
    if (!model_make(&c, m, &mat, DEFO_FORMULATION_INVERTIBLE)) return;
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x), lo, hi;
    defo_plasticity_def pd = defo_default_plasticity_def();
    pd.yield = 0, pd.creep = 50, pd.max = 10;
    defo_plasticity *p = NULL;
    CHECK_OK(defo_plasticity_create(&pd, m->num_elems, 1, &p));
    CHECK_OK(defo_plasticity_bind(p, c.fm));
    test_rng rng = {78};
    for (size_t j = 0; j < n3; j++)
        x[j] = (j % 3 == 2 ? 0.8 : 1.1) * m->x[j] + test_range(&rng, -0.03, 0.03);
    defo_plasticity_stats st;
    refuse = 1;
    CHECK_OK(defo_plasticity_update(p, c.fm, x, 0.01, &st));
    refuse = 0;
    const double *w = defo_element_rest_volume(c.rest);
    plastic_volume(p, m, w, 1, &lo, &hi);
    TEST_REPORT("out of memory: %ld of %ld flowed elements unpatched, tr L_p in [%.1e, %.1e]",
                (long)st.unpatched, (long)st.yielding, lo, hi);
    CHECK(st.yielding > 0 && st.unpatched == st.yielding);
    CHECK(fabs(lo) <= 1e-14 && fabs(hi) <= 1e-14);
    CHECK_OK(defo_plasticity_update(p, c.fm, x, 0.01, &st));
    plastic_volume(p, m, w, 1, &lo, &hi);
    CHECK(st.unpatched == 0 && hi - lo > 1e-4);
    CHECK_OK(defo_force_model_set_plastic(c.fm, NULL));
    defo_plasticity_destroy(p);
    free(x);
    model_drop(&c);
    defo_mesh_destroy(m);
    defo_set_allocator(NULL, NULL, NULL);
}

int main(void) {
    RUN(test_closed_form_eigen);
    RUN(test_mg04_hand_computation);
    RUN(test_von_mises_uniaxial_loop);
    RUN(test_rests_in_plastic_shape);
    RUN(test_finite_differences_with_plastic_state);
    RUN(test_never_inverts);
    RUN(test_patch_volume);
    RUN(test_patch_volume_out_of_memory);
    RUN(test_parameters_and_bytes);
    RUN(test_determinism);
    RUN(test_batched_equals_single);
    return test_summary();
}
