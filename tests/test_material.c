/*
 * tests/test_material.c — the material framework (ITF04 §5–6.2, TSIF05 §6–9).
 *
 * References used, per test:
 *   - central finite differences of ψ(σ) (→ P̂), of P̂(σ) (→ A), of P(F) in
 *     the world frame (→ the full 9×9 dP/dF) and of Ψ(F) (→ P);
 *   - isotropy P(Q F Rᵀ) = Q P(F) Rᵀ (a symmetry of the continuum model);
 *   - linear elasticity 2μ sym(εH) + λ tr(εH) I as the small-strain limit;
 *   - analytic values: zero stress/energy at rest, Lamé parameters by hand,
 *     eigenvalues of the clamped blocks, damping of a rigid spin = 0.
 * Random σ cover stretched, inverted (one negative), nearly flat and doubly
 * compressed (below the inversion threshold) states.  Worst errors are
 * printed with TEST_REPORT.
 */
#include "defo/material.h"
#include "test.h"

#include <string.h>

#define NSAMPLES TEST_HEAVY(1000)

/* ------------------------------------------------------------ helpers */
typedef struct config {
    defo_material_model model;
    defo_inversion_mode mode;
} config;

/* Every energy-consistent combination (CLAMP is tested separately). */
static const config consistent[] = {
    {DEFO_MODEL_COROTATED, DEFO_INVERSION_NONE}, {DEFO_MODEL_COROTATED, DEFO_INVERSION_C1},
    {DEFO_MODEL_COROTATED, DEFO_INVERSION_C0},   {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C1},
    {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C0}, {DEFO_MODEL_STVK, DEFO_INVERSION_NONE},
    {DEFO_MODEL_STVK, DEFO_INVERSION_C1},        {DEFO_MODEL_STVK, DEFO_INVERSION_C0},
    {DEFO_MODEL_BIPHASIC, DEFO_INVERSION_NONE},  {DEFO_MODEL_BIPHASIC, DEFO_INVERSION_C1},
    {DEFO_MODEL_BIPHASIC, DEFO_INVERSION_C0},
};
#define NCONSISTENT ((int)(sizeof consistent / sizeof consistent[0]))

static const char *mode_name(defo_inversion_mode m) {
    return m == DEFO_INVERSION_NONE ? "none"
           : m == DEFO_INVERSION_C0 ? "c0"
           : m == DEFO_INVERSION_C1 ? "c1"
                                    : "clamp";
}

static defo_material *make(defo_material_model model, defo_inversion_mode mode, double nu) {
    defo_material_def d = defo_default_material();
    d.model = model;
    d.inversion.mode = mode;
    d.poisson = nu;
    d.damping_time = 0.01;
    defo_material *m = NULL;
    CHECK_OK(defo_material_create(&d, &m));
    return m;
}

static defo_mat3 random_rotation(test_rng *r) {
    double q[4], n2;
    do {
        for (int i = 0; i < 4; i++) q[i] = test_range(r, -1, 1);
        n2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    } while (n2 > 1 || n2 < 1e-6);
    double n = 1.0 / sqrt(n2);
    double w = q[0] * n, x = q[1] * n, y = q[2] * n, z = q[3] * n;
    defo_mat3 m = {{{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                    {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                    {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}}};
    return m;
}

/* A principal-stretch triple of one of four families, sorted with the ITF04
 * §5 convention (σ1 ≥ σ2 ≥ |σ3|), kept 2e-3 away from the threshold 0.3 so
 * finite differences never straddle the C0 kink. */
static defo_vec3 random_sigma(test_rng *r, int family) {
    for (;;) {
        double s[3];
        switch (family % 4) {
        case 0: /* general, compressed to stretched */
            for (int i = 0; i < 3; i++) s[i] = test_range(r, 0.4, 1.8);
            break;
        case 1: /* inverted: one negative, |σ3| ≤ 0.9 σ2 */
            s[0] = test_range(r, 0.5, 1.5);
            s[1] = test_range(r, 0.5, 1.5);
            s[2] = -test_range(r, 0.05, 0.9) * fmin(s[0], s[1]);
            break;
        case 2: /* nearly flat, either side */
            s[0] = test_range(r, 0.5, 1.5);
            s[1] = test_range(r, 0.5, 1.5);
            s[2] = (test_uniform(r) < 0.5 ? -1 : 1) * test_range(r, 1e-3, 1e-2);
            break;
        default: /* two stretches below the threshold */
            s[0] = test_range(r, 0.5, 1.5);
            s[1] = test_range(r, 0.05, 0.25);
            s[2] = (test_uniform(r) < 0.5 ? -1 : 1) * test_range(r, 0.05, 0.9) * s[1];
            break;
        }
        /* sort by value, descending; the negative one stays last */
        for (int i = 0; i < 3; i++)
            for (int j = i + 1; j < 3; j++)
                if (s[j] > s[i]) {
                    double t = s[i];
                    s[i] = s[j];
                    s[j] = t;
                }
        int ok = 1;
        for (int i = 0; i < 3; i++)
            if (fabs(s[i] - 0.3) < 2e-3) ok = 0;
        if (ok) return defo_v3(s[0], s[1], s[2]);
    }
}

static double vget(defo_vec3 v, int i) {
    return defo_v3_get(v, i);
}
static defo_vec3 vset(defo_vec3 v, int i, double x) {
    if (i == 0)
        v.x = x;
    else if (i == 1)
        v.y = x;
    else
        v.z = x;
    return v;
}

static defo_mat3 unit(int k, int l) {
    defo_mat3 e = defo_m3_zero();
    e.m[k][l] = 1;
    return e;
}

static const char *label(const config *c) {
    static char buf[64];
    snprintf(buf, sizeof buf, "%s/%s", defo_material_model_name(c->model), mode_name(c->mode));
    return buf;
}

/* ------------------------------------------------------------- tests */

/* Lamé parameters against values worked by hand. */
static void test_lame(void) {
    double mu, lam;
    defo_lame(1e5, 0.3, &mu, &lam);
    CHECK_NEAR(mu, 1e5 / 2.6, 1e-9);   /* 38461.538... */
    CHECK_NEAR(lam, 3e4 / 0.52, 1e-9); /* 57692.307... */
    defo_lame(2.5, 0.25, &mu, &lam);   /* μ = 2.5/2.5, λ = 0.625/(1.25·0.5) */
    CHECK_NEAR(mu, 1.0, 1e-15);
    CHECK_NEAR(lam, 1.0, 1e-15);
    defo_lame(7.0, 0.0, &mu, &lam);
    CHECK_NEAR(mu, 3.5, 1e-15);
    CHECK(lam == 0.0);
    defo_material *m = make(DEFO_MODEL_COROTATED, DEFO_INVERSION_C1, 0.3);
    CHECK_NEAR(defo_material_mu(m), 1e5 / 2.6, 1e-9);
    CHECK_NEAR(defo_material_lambda(m), 3e4 / 0.52, 1e-9);
    double mud, lamd;
    defo_material_damping_moduli(m, &mud, &lamd);
    CHECK_NEAR(mud, 0.01 * 1e5 / 2.6, 1e-9);
    CHECK_NEAR(lamd, 0.01 * 3e4 / 0.52, 1e-9);
    defo_material_destroy(m);
}

static void expect_invalid(const defo_material_def *d, const char *msg) {
    defo_material *m = (defo_material *)1;
    defo_clear_error();
    CHECK(defo_material_def_validate(d) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK_MSG(strstr(defo_last_error(), msg) != NULL, "got \"%s\", want \"%s\"", defo_last_error(),
              msg);
    CHECK(defo_material_create(d, &m) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(m == NULL);
}

/* Every bad field is refused with a message naming it and its value. */
static void test_validation(void) {
    defo_material_def d = defo_default_material();
    CHECK_OK(defo_material_def_validate(&d));
    d.poisson = 0.52;
    expect_invalid(&d, "poisson: 0.52 is not in [0, 0.5)");
    d.poisson = 0.5;
    expect_invalid(&d, "poisson: 0.5 is not in [0, 0.5)");
    d.poisson = -0.1;
    expect_invalid(&d, "poisson: -0.1 is not in [0, 0.5)");
    d = defo_default_material();
    d.youngs_modulus = -3;
    expect_invalid(&d, "youngs_modulus: -3 is not > 0");
    d.youngs_modulus = NAN;
    expect_invalid(&d, "youngs_modulus: nan is not > 0");
    d = defo_default_material();
    d.density = 0;
    expect_invalid(&d, "density: 0 is not > 0");
    d = defo_default_material();
    d.inversion.threshold = 1.5;
    expect_invalid(&d, "inversion.threshold: 1.5 is not in (0, 1)");
    d = defo_default_material();
    d.inversion.mode = DEFO_INVERSION_NONE;
    expect_invalid(&d, "inversion.mode: none is not allowed for neo_hookean");
    d = defo_default_material();
    d.damping_time = -1;
    expect_invalid(&d, "damping_time: -1 is not >= 0");
    d = defo_default_material();
    d.model = DEFO_MODEL_BIPHASIC;
    d.biphasic.elongation_threshold = 0.9;
    expect_invalid(&d, "biphasic.elongation_threshold: 0.9 is not > 1");
    d.biphasic.elongation_threshold = 1.2;
    d.biphasic.compression_threshold = 1.0;
    expect_invalid(&d, "biphasic.compression_threshold: 1 is not in (0, 1)");
    d.biphasic.compression_threshold = 0.8;
    d.biphasic.rest_slope = 0;
    expect_invalid(&d, "biphasic.rest_slope: 0 is not > 0");
    d = defo_default_material();
    d.model = (defo_material_model)9;
    expect_invalid(&d, "model: 9");
    CHECK(defo_material_create(NULL, NULL) == DEFO_ERR_INVALID_ARGUMENT);

    defo_material_model mm = DEFO_MODEL_COROTATED;
    for (int i = 0; i < DEFO_MODEL_COUNT; i++) {
        CHECK_OK(
            defo_material_model_from_name(defo_material_model_name((defo_material_model)i), &mm));
        CHECK((int)mm == i);
    }
    CHECK(defo_material_model_from_name("rubber", &mm) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "\"rubber\"") != NULL);
    CHECK(strcmp(defo_material_model_name((defo_material_model)42), "unknown") == 0);
}

/* P̂ = ∂ψ/∂σ and A = ∂P̂/∂σ (central differences, step 1e-6) for every
 * energy-consistent model/extension pair and every σ family. */
static void test_diagonal_fd(void) {
    test_rng r = {0x1234567ULL};
    double worst_p = 0, worst_a = 0, worst_sym = 0;
    const double h = 1e-6;
    for (int c = 0; c < NCONSISTENT; c++) {
        defo_material *m = make(consistent[c].model, consistent[c].mode, 0.3);
        double scale = defo_material_stiffness_scale(m);
        double cw_p = 0, cw_a = 0;
        for (int n = 0; n < NSAMPLES; n++) {
            defo_vec3 s = random_sigma(&r, n);
            defo_vec3 p;
            defo_dpdf d;
            defo_material_eval(m, s, &p, &d);
            double pn = fmax(fmax(fabs(p.x), fabs(p.y)), fabs(p.z)) + defo_material_mu(m);
            double an = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) an = fmax(an, fabs(d.A[i][j]));
            an += scale;
            for (int i = 0; i < 3; i++) {
                defo_vec3 sp = vset(s, i, vget(s, i) + h), sm = vset(s, i, vget(s, i) - h);
                defo_vec3 pp, pm;
                double fp = defo_material_eval(m, sp, &pp, NULL);
                double fm = defo_material_eval(m, sm, &pm, NULL);
                double e = fabs((fp - fm) / (2 * h) - vget(p, i)) / pn;
                cw_p = fmax(cw_p, e);
                for (int j = 0; j < 3; j++) {
                    double ea = fabs((vget(pp, j) - vget(pm, j)) / (2 * h) - d.A[j][i]) / an;
                    cw_a = fmax(cw_a, ea);
                    worst_sym = fmax(worst_sym, fabs(d.A[i][j] - d.A[j][i]) / an);
                }
            }
        }
        CHECK_MSG(cw_p <= 1e-6, "%s: P̂ vs FD of ψ: %.3g", label(&consistent[c]), cw_p);
        CHECK_MSG(cw_a <= 1e-6, "%s: A vs FD of P̂: %.3g", label(&consistent[c]), cw_a);
        worst_p = fmax(worst_p, cw_p);
        worst_a = fmax(worst_a, cw_a);
        defo_material_destroy(m);
    }
    CHECK(worst_sym <= 1e-15);
    TEST_REPORT("max rel err P̂ vs dψ/dσ %.2e, A vs dP̂/dσ %.2e (%d configs x %d σ)", worst_p,
                worst_a, NCONSISTENT, NSAMPLES);
}

/* Full 9×9 dP/dF at F = Q diag(σ) Rᵀ: column (k, l) by central differences
 * of P(F) in the world frame vs the blocks rotated back. */
static double dpdf_fd_error(const defo_material *m, const defo_mat3 *F, double h) {
    double err = 0, norm = 0;
    defo_mat3 J[3][3];
    for (int k = 0; k < 3; k++)
        for (int l = 0; l < 3; l++) {
            defo_mat3 e = unit(k, l);
            J[k][l] = defo_material_dP(m, F, &e, 0);
            norm = fmax(norm, defo_m3_maxabs(J[k][l]));
        }
    for (int k = 0; k < 3; k++)
        for (int l = 0; l < 3; l++) {
            defo_mat3 fp = *F, fm = *F;
            fp.m[k][l] += h;
            fm.m[k][l] -= h;
            defo_mat3 fd = defo_m3_scale(
                defo_m3_sub(defo_material_P(m, &fp), defo_material_P(m, &fm)), 0.5 / h);
            err = fmax(err, defo_m3_maxabs(defo_m3_sub(fd, J[k][l])));
        }
    return err / norm;
}

static void test_world_dpdf_fd(void) {
    test_rng r = {0xfeedULL};
    double worst = 0;
    for (int c = 0; c < NCONSISTENT; c++) {
        defo_material *m = make(consistent[c].model, consistent[c].mode, 0.3);
        double cw = 0;
        for (int n = 0; n < NSAMPLES / 4; n++) {
            defo_vec3 s = random_sigma(&r, n);
            defo_mat3 Q = random_rotation(&r), R = random_rotation(&r);
            defo_mat3 F = defo_m3_mult(defo_m3_mul(Q, defo_m3_diag(s)), R);
            cw = fmax(cw, dpdf_fd_error(m, &F, 1e-6));
        }
        CHECK_MSG(cw <= 1e-5, "%s: 9x9 dP/dF vs FD: %.3g", label(&consistent[c]), cw);
        worst = fmax(worst, cw);
        defo_material_destroy(m);
    }
    TEST_REPORT("max rel err of the 9x9 dP/dF vs FD of P(F): %.2e", worst);
}

/* P(F) = ∂Ψ/∂F by central differences, random F of every family. */
static void test_P_is_energy_gradient(void) {
    test_rng r = {0xabcdefULL};
    double worst = 0;
    const double h = 1e-6;
    for (int c = 0; c < NCONSISTENT; c++) {
        defo_material *m = make(consistent[c].model, consistent[c].mode, 0.3);
        for (int n = 0; n < NSAMPLES / 4; n++) {
            defo_vec3 s = random_sigma(&r, n);
            defo_mat3 Q = random_rotation(&r), R = random_rotation(&r);
            defo_mat3 F = defo_m3_mult(defo_m3_mul(Q, defo_m3_diag(s)), R);
            defo_mat3 P = defo_material_P(m, &F);
            double pn = defo_m3_maxabs(P) + defo_material_mu(m);
            for (int k = 0; k < 3; k++)
                for (int l = 0; l < 3; l++) {
                    defo_mat3 fp = F, fm = F;
                    fp.m[k][l] += h;
                    fm.m[k][l] -= h;
                    double fd =
                        (defo_material_psi_F(m, &fp) - defo_material_psi_F(m, &fm)) / (2 * h);
                    worst = fmax(worst, fabs(fd - P.m[k][l]) / pn);
                }
        }
        defo_material_destroy(m);
    }
    CHECK(worst <= 1e-6);
    TEST_REPORT("max rel err P vs dΨ/dF: %.2e", worst);
}

/* Isotropy and frame indifference: P(Q F Rᵀ) = Q P(F) Rᵀ, Ψ unchanged. */
static void test_isotropy(void) {
    test_rng r = {0x5eedULL};
    double worst = 0, worst_psi = 0;
    for (int c = 0; c < NCONSISTENT; c++) {
        defo_material *m = make(consistent[c].model, consistent[c].mode, 0.3);
        for (int n = 0; n < NSAMPLES / 4; n++) {
            defo_vec3 s = random_sigma(&r, n);
            defo_mat3 A = random_rotation(&r), B = random_rotation(&r);
            defo_mat3 F = defo_m3_mult(defo_m3_mul(A, defo_m3_diag(s)), B);
            defo_mat3 Q = random_rotation(&r), R = random_rotation(&r);
            defo_mat3 G = defo_m3_mult(defo_m3_mul(Q, F), R);
            defo_mat3 P = defo_material_P(m, &F), PG = defo_material_P(m, &G);
            defo_mat3 want = defo_m3_mult(defo_m3_mul(Q, P), R);
            double pn = defo_m3_maxabs(P) + defo_material_mu(m);
            worst = fmax(worst, defo_m3_maxabs(defo_m3_sub(PG, want)) / pn);
            double a = defo_material_psi_F(m, &F), b = defo_material_psi_F(m, &G);
            worst_psi = fmax(worst_psi, fabs(a - b) / (fabs(a) + defo_material_mu(m)));
        }
        defo_material_destroy(m);
    }
    CHECK(worst <= 1e-12);
    CHECK(worst_psi <= 1e-12);
    TEST_REPORT("max rel err P(QFRᵀ) - Q P(F) Rᵀ: %.2e, Ψ: %.2e", worst, worst_psi);
}

/* Rest state: ψ = 0, P̂ = 0, and the small-strain limit is linear
 * elasticity: |P(I + εH) − (2μ sym(εH) + λ tr(εH) I)| = O(ε²). */
static void test_rest_and_small_strain(void) {
    test_rng r = {0x77ULL};
    double worst = 0;
    const double eps = 1e-6;
    for (int c = 0; c < NCONSISTENT; c++) {
        defo_material *m = make(consistent[c].model, consistent[c].mode, 0.3);
        defo_vec3 p;
        double psi = defo_material_eval(m, defo_v3(1, 1, 1), &p, NULL);
        CHECK(psi == 0.0);
        CHECK(p.x == 0.0 && p.y == 0.0 && p.z == 0.0);
        defo_mat3 I = defo_m3_identity();
        CHECK(defo_m3_maxabs(defo_material_P(m, &I)) == 0.0);
        double mu = defo_material_mu(m), lam = defo_material_lambda(m);
        for (int n = 0; n < 20; n++) {
            defo_mat3 H;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) H.m[i][j] = test_range(&r, -1, 1);
            defo_mat3 F = defo_m3_add(I, defo_m3_scale(H, eps));
            defo_mat3 P = defo_material_P(m, &F);
            defo_mat3 sym = defo_m3_scale(defo_m3_add(H, defo_m3_transpose(H)), 0.5 * eps);
            defo_mat3 lin = defo_m3_add(defo_m3_scale(sym, 2 * mu),
                                        defo_m3_scale(I, lam * eps * defo_m3_trace(H)));
            /* error relative to the stiffness scale, in units of ε² */
            double e = defo_m3_maxabs(defo_m3_sub(P, lin)) /
                       (defo_material_stiffness_scale(m) * eps * eps);
            worst = fmax(worst, e);
        }
        defo_material_destroy(m);
    }
    CHECK(worst <= 20.0);
    TEST_REPORT("max |P - P_lin| / ((2μ+λ) ε²) = %.2f at ε = 1e-6", worst);
}

/* C1 extension: P̂ and A continuous at the threshold (for StVK P̂ only, see
 * inversion.c); C0: P̂ continuous.  Checked on either side of c = 0.3 by
 * δ = 1e-10, relative to the stiffness scale. */
static void test_extension_continuity(void) {
    test_rng r = {0x31ULL};
    double worst_p = 0, worst_a = 0, stvk_jump = 0;
    const double c = 0.3, dl = 1e-10;
    for (int model = 0; model < DEFO_MODEL_COUNT; model++)
        for (int mode = DEFO_INVERSION_C0; mode <= DEFO_INVERSION_C1; mode++) {
            defo_material *m = make((defo_material_model)model, (defo_inversion_mode)mode, 0.3);
            double scale = defo_material_stiffness_scale(m);
            for (int n = 0; n < 50; n++) {
                defo_vec3 s = defo_v3(test_range(&r, 0.5, 1.5), test_range(&r, 0.35, 1.5), c);
                defo_vec3 pa, pb;
                defo_dpdf da, db;
                double ea = defo_material_eval(m, vset(s, 2, c - dl), &pa, &da);
                double eb = defo_material_eval(m, vset(s, 2, c + dl), &pb, &db);
                CHECK(fabs(ea - eb) <= 1e-7 * scale);
                worst_p = fmax(worst_p, defo_v3_norm(defo_v3_sub(pa, pb)) / scale);
                double ja = 0;
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) ja = fmax(ja, fabs(da.A[i][j] - db.A[i][j]));
                for (int q = 0; q < 3; q++)
                    for (int i = 0; i < 2; i++)
                        for (int j = 0; j < 2; j++)
                            ja = fmax(ja, fabs(da.B[q][i][j] - db.B[q][i][j]));
                if (mode == DEFO_INVERSION_C1 && model != DEFO_MODEL_STVK)
                    worst_a = fmax(worst_a, ja / scale);
                if (mode == DEFO_INVERSION_C1 && model == DEFO_MODEL_STVK)
                    stvk_jump = fmax(stvk_jump, ja / scale);
            }
            defo_material_destroy(m);
        }
    CHECK(worst_p <= 1e-7);
    CHECK(worst_a <= 1e-7);
    TEST_REPORT("jump at c: |ΔP̂| %.1e, C1 |ΔdP/dF| %.1e (relative to 2μ+λ); StVK C1 slope jump "
                "%.2f (documented)",
                worst_p, worst_a, stvk_jump);
}

/* ITF04 §6: flat (σ3 = 0) and inverted (σ3 < 0) elements are pushed back:
 * P̂3 < 0 (∂ψ/∂σ3 < 0) for σ1, σ2 in [0.5, 1.2], σ3 in [−1, 0], for every
 * model through every extension (and raw where the raw model is defined). */
static void test_restoring(void) {
    test_rng r = {0x99ULL};
    static const config cases[] = {
        {DEFO_MODEL_COROTATED, DEFO_INVERSION_NONE},
        {DEFO_MODEL_COROTATED, DEFO_INVERSION_C1},
        {DEFO_MODEL_COROTATED, DEFO_INVERSION_C0},
        {DEFO_MODEL_COROTATED, DEFO_INVERSION_CLAMP},
        {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C1},
        {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C0},
        {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_CLAMP},
        {DEFO_MODEL_STVK, DEFO_INVERSION_C0},
        {DEFO_MODEL_STVK, DEFO_INVERSION_C1},
        {DEFO_MODEL_STVK, DEFO_INVERSION_CLAMP},
        {DEFO_MODEL_BIPHASIC, DEFO_INVERSION_NONE},
        {DEFO_MODEL_BIPHASIC, DEFO_INVERSION_C1},
        {DEFO_MODEL_BIPHASIC, DEFO_INVERSION_C0},
        {DEFO_MODEL_BIPHASIC, DEFO_INVERSION_CLAMP},
    };
    double nus[2] = {0.3, 0.45};
    double least = -INFINITY; /* largest (closest to 0) P̂3 / 2μ seen */
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int k = 0; k < 2; k++) {
            defo_material *m = make(cases[c].model, cases[c].mode, nus[k]);
            int bad = 0;
            for (int n = 0; n < 200; n++) {
                defo_vec3 s = defo_v3(test_range(&r, 0.5, 1.2), test_range(&r, 0.5, 1.2),
                                      n == 0 ? 0.0 : -test_range(&r, 0, 1));
                defo_vec3 p;
                defo_material_eval(m, s, &p, NULL);
                if (!(p.z < 0)) bad++;
                least = fmax(least, p.z / (2 * defo_material_mu(m)));
            }
            CHECK_MSG(bad == 0, "%s nu %.2f: %d states not restoring", label(&cases[c]), nus[k],
                      bad);
            defo_material_destroy(m);
        }
    /* StVK without extension keeps inverted elements inverted (ITF04 §6). */
    defo_material *m = make(DEFO_MODEL_STVK, DEFO_INVERSION_NONE, 0.3);
    defo_vec3 p;
    defo_material_eval(m, defo_v3(1, 1, -0.5), &p, NULL);
    CHECK(p.z > 0);
    defo_material_destroy(m);
    TEST_REPORT("max P̂3/2μ over flat and inverted states: %.3f (< 0 restores)", least);
}

/* TSIF05 §9 constant extrapolation: everything equals the model at
 * max(σ, c) (the C1 material coincides with the raw model above c). */
static void test_clamp_mode(void) {
    test_rng r = {0x42ULL};
    for (int model = 0; model < DEFO_MODEL_COUNT; model++) {
        defo_material *mc = make((defo_material_model)model, DEFO_INVERSION_CLAMP, 0.3);
        defo_material *m1 = make((defo_material_model)model, DEFO_INVERSION_C1, 0.3);
        for (int n = 0; n < 100; n++) {
            defo_vec3 s = random_sigma(&r, n);
            defo_vec3 sc = defo_v3(fmax(s.x, 0.3), fmax(s.y, 0.3), fmax(s.z, 0.3));
            defo_vec3 pa, pb;
            defo_dpdf da, db;
            double ea = defo_material_eval(mc, s, &pa, &da);
            double eb = defo_material_eval(m1, sc, &pb, &db);
            CHECK(ea == eb);
            CHECK(memcmp(&pa, &pb, sizeof pa) == 0);
            CHECK(memcmp(&da, &db, sizeof da) == 0);
        }
        defo_material_destroy(mc);
        defo_material_destroy(m1);
    }
}

/* Repeated stretches (σi = σj, where the quotient form is 0/0) and opposite
 * ones (σi = −σj): blocks finite; at σi = σj the full 9×9 matches FD; at
 * σi = −σj the (1, 1) mode q₁ is continuous and the singular (1, −1) mode is
 * bounded; close to it (σi + σj = 1e-2, 1e-3) the full 9×9 matches FD. */
static void test_degenerate_blocks(void) {
    test_rng r = {0x1eULL};
    static const double rep[][3] = {{1, 1, 1},         {1.1, 1.1, 0.8},  {1.3, 0.7, 0.7},
                                    {0.9, 0.9, 0.9},   {1.2, 1.2, -0.5}, {0.2, 0.2, 0.2},
                                    {1.0, 0.15, 0.15}, {1.0, 1.0, 0.0},  {0.8, 0.8, 1e-3}};
    double worst = 0, worst_near = 0, worst_q1 = 0;
    for (int c = 0; c < NCONSISTENT; c++) {
        defo_material *m = make(consistent[c].model, consistent[c].mode, 0.3);
        double scale = defo_material_stiffness_scale(m);
        for (size_t k = 0; k < sizeof rep / sizeof rep[0]; k++) {
            if (consistent[c].mode == DEFO_INVERSION_C0) {
                int near = 0; /* the C0 slope kink sits at c = 0.3 */
                for (int i = 0; i < 3; i++) near |= fabs(rep[k][i] - 0.3) < 1e-3;
                if (near) continue;
            }
            defo_mat3 Q = random_rotation(&r), R = random_rotation(&r);
            defo_mat3 F = defo_m3_mult(
                defo_m3_mul(Q, defo_m3_diag(defo_v3(rep[k][0], rep[k][1], rep[k][2]))), R);
            /* step 1e-7: the biphasic curve is only C1 at s = 1, so FD
             * across (1, 1, 1) carries an O(h) error */
            worst = fmax(worst, dpdf_fd_error(m, &F, 1e-7));
        }
        /* σ2 = −σ3 exactly: ψ(F) has a kink there (either stretch may carry
         * the sign) and P(F) is not single valued, so no FD; the blocks must
         * be finite, q₁ continuous with its neighbours, q₂ bounded. */
        defo_vec3 s = defo_v3(1.2, 0.5, -0.5), pe;
        defo_dpdf d, dn;
        defo_material_eval(m, s, &pe, &d);
        defo_material_eval(m, defo_v3(1.2, 0.5 + 1e-7, -0.5 + 1e-7), NULL, &dn);
        for (int q = 0; q < 3; q++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++) CHECK(isfinite(d.B[q][i][j]));
        double q1 = d.B[2][0][0] + d.B[2][0][1], q1n = dn.B[2][0][0] + dn.B[2][0][1];
        double q2 = d.B[2][0][0] - d.B[2][0][1];
        worst_q1 = fmax(worst_q1, fabs(q1 - q1n) / scale);
        CHECK(fabs(q2) <= fabs(pe.y + pe.z) / 1e-6 * (1 + 1e-12));
        /* σ2 + σ3 = 1e-2 and 1e-3: the full 9×9 against FD (small steps) */
        for (int g = 0; g < 2; g++) {
            double gap = g ? 1e-3 : 1e-2;
            defo_mat3 Q = random_rotation(&r), Rr = random_rotation(&r);
            defo_vec3 sg = defo_v3(1.2, 0.5 + gap / 2, -0.5 + gap / 2);
            defo_mat3 G = defo_m3_mult(defo_m3_mul(Q, defo_m3_diag(sg)), Rr);
            worst_near = fmax(worst_near, dpdf_fd_error(m, &G, gap * 1e-5));
        }
        defo_material_destroy(m);
    }
    CHECK(worst <= 1e-5);
    CHECK(worst_q1 <= 1e-4); /* q₁ moves by 1e-7·∂q₁/∂σ */
    CHECK(worst_near <= 1e-5);
    TEST_REPORT("σi=σj: 9x9 vs FD %.2e; σi=-σj: q1 jump %.2e; σi+σj=1e-2,1e-3: 9x9 vs FD %.2e",
                worst, worst_q1, worst_near);
}

/* TSIF05 §8 clamping: the result is PSD (min eigenvalue ≥ −1e-12 scale,
 * checked through δF:dP/dF:δF on the eigenvectors and random δF), leaves
 * PSD blocks bitwise unchanged, keeps the non-negative spectrum (the
 * Frobenius norm drops by exactly the clamped eigenvalues) and is idempotent. */
static void test_psd_projection(void) {
    test_rng r = {0x2024ULL};
    int modified = 0, unchanged = 0;
    double worst_neg = 0;
    for (int c = 0; c < NCONSISTENT; c++) {
        defo_material *m = make(consistent[c].model, consistent[c].mode, 0.3);
        double scale = defo_material_stiffness_scale(m);
        for (int n = 0; n < NSAMPLES / 4; n++) {
            defo_vec3 s = random_sigma(&r, n);
            defo_dpdf d, p;
            defo_material_eval(m, s, NULL, &d);
            p = d;
            /* expected: eigenvalues of the blocks before clamping */
            defo_mat3 A;
            memcpy(A.m, d.A, sizeof A.m);
            defo_vec3 lam;
            defo_mat3 Qe;
            defo_sym3_eigen(&A, &lam, &Qe);
            int neg = lam.z < 0;
            double lo[3];
            for (int q = 0; q < 3; q++) {
                /* [[a, b], [b, a]]: eigenvalues a ± b */
                double a = d.B[q][0][0], b = d.B[q][0][1];
                lo[q] = fmin(a + b, a - b);
                neg += lo[q] < 0;
            }
            int changed = defo_dpdf_project_psd(&p);
            CHECK(changed == neg);
            if (changed)
                modified++;
            else {
                unchanged++;
                CHECK(memcmp(&p, &d, sizeof p) == 0);
            }
            /* A: the eigen-directions with λ ≥ 0 keep their eigenvalue */
            defo_mat3 Ap;
            memcpy(Ap.m, p.A, sizeof Ap.m);
            for (int k = 0; k < 3; k++) {
                defo_vec3 v = defo_m3_col(&Qe, k);
                double want = fmax(vget(lam, k), 0);
                double got = defo_v3_dot(v, defo_m3_mulv(Ap, v));
                CHECK(fabs(got - want) <= 1e-12 * (scale + fabs(vget(lam, 0))));
                worst_neg = fmin(worst_neg, got / (scale + fabs(vget(lam, 0))));
            }
            /* random δF: δF : dP/dF : δF ≥ 0 */
            for (int t = 0; t < 4; t++) {
                defo_mat3 X;
                for (int i = 0; i < 3; i++)
                    for (int j = 0; j < 3; j++) X.m[i][j] = test_range(&r, -1, 1);
                defo_mat3 Y = defo_dpdf_apply(&p, &X);
                double big = 0;
                for (int q = 0; q < 3; q++)
                    big = fmax(big, fabs(d.B[q][0][0]) + fabs(d.B[q][0][1]));
                double e = defo_m3_ddot(X, Y) / (scale + big + fabs(vget(lam, 0)));
                worst_neg = fmin(worst_neg, e);
                CHECK(e >= -1e-12);
            }
            defo_dpdf p2 = p;
            defo_dpdf_project_psd(&p2);
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++)
                    CHECK(fabs(p2.A[i][j] - p.A[i][j]) <= 1e-12 * (scale + fabs(vget(lam, 0))));
        }
        defo_material_destroy(m);
    }
    CHECK(modified > 0 && unchanged > 0);
    TEST_REPORT("%d blocks sets clamped, %d already PSD (bitwise unchanged); min normalised "
                "quadratic form %.1e",
                modified, unchanged, worst_neg);
}

/* defo_dpdf_apply against the 9×9 layout of TSIF05 §8, and the world-frame
 * version against rotating by hand. */
static void test_apply_layout(void) {
    defo_dpdf d;
    double v = 1;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) d.A[i][j] = v++;
    for (int q = 0; q < 3; q++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) d.B[q][i][j] = v++;
    defo_mat3 X = {{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}};
    defo_mat3 Y = defo_dpdf_apply(&d, &X);
    /* diagonal: A (f11, f22, f33) */
    CHECK(Y.m[0][0] == 1 * 1 + 2 * 5 + 3 * 9);
    CHECK(Y.m[2][2] == 7 * 1 + 8 * 5 + 9 * 9);
    /* pair (1,3) is block 1 = [[14, 15], [16, 17]] on (f13, f31) = (3, 7) */
    CHECK(Y.m[0][2] == 14 * 3 + 15 * 7);
    CHECK(Y.m[2][0] == 16 * 3 + 17 * 7);
    /* pair (2,3) is block 2 = [[18, 19], [20, 21]] on (f23, f32) = (6, 8) */
    CHECK(Y.m[1][2] == 18 * 6 + 19 * 8);
    CHECK(Y.m[2][1] == 20 * 6 + 21 * 8);
    test_rng r = {5};
    defo_mat3 U = random_rotation(&r), V = random_rotation(&r);
    defo_mat3 W = defo_dpdf_apply_world(&d, &U, &V, &X);
    defo_mat3 xh = defo_m3_mul(defo_m3_tmul(U, X), V);
    defo_mat3 yh = defo_dpdf_apply(&d, &xh);
    defo_mat3 want = defo_m3_mult(defo_m3_mul(U, yh), V);
    CHECK(defo_m3_maxabs(defo_m3_sub(W, want)) <= 1e-12 * defo_m3_maxabs(want));
}

/* Each model against its textbook world-frame formula (for det F > 0 and all
 * σ above the threshold, where the extension is inactive):
 *   corotated    P = 2μ(F − R) + λ tr(RᵀF − I) R,  R = polar rotation
 *   neo-Hookean  P = μ(F − F⁻ᵀ) + λ ln J F⁻ᵀ
 *   StVK         P = F (2μE + λ tr E I),  E = ½(FᵀF − I). */
static void test_closed_forms(void) {
    test_rng r = {0xc105ULL};
    double worst = 0;
    for (int model = 0; model < 3; model++) {
        defo_material *m = make((defo_material_model)model, DEFO_INVERSION_C1, 0.3);
        double mu = defo_material_mu(m), lam = defo_material_lambda(m);
        for (int n = 0; n < 100; n++) {
            defo_vec3 s = random_sigma(&r, 0);
            defo_mat3 Q = random_rotation(&r), R = random_rotation(&r);
            defo_mat3 F = defo_m3_mult(defo_m3_mul(Q, defo_m3_diag(s)), R);
            defo_mat3 I = defo_m3_identity(), want, Finv = I;
            if (model == DEFO_MODEL_COROTATED) {
                defo_mat3 Rot = defo_m3_mult(Q, R); /* polar rotation of Q diag(σ>0) Rᵀ */
                double tr = defo_m3_trace(defo_m3_tmul(Rot, F)) - 3;
                want = defo_m3_add(defo_m3_scale(defo_m3_sub(F, Rot), 2 * mu),
                                   defo_m3_scale(Rot, lam * tr));
            } else if (model == DEFO_MODEL_NEO_HOOKEAN) {
                CHECK(defo_m3_inverse(F, &Finv));
                defo_mat3 FiT = defo_m3_transpose(Finv);
                want = defo_m3_add(defo_m3_scale(defo_m3_sub(F, FiT), mu),
                                   defo_m3_scale(FiT, lam * log(defo_m3_det(F))));
            } else {
                defo_mat3 E = defo_m3_scale(defo_m3_sub(defo_m3_tmul(F, F), I), 0.5);
                defo_mat3 S =
                    defo_m3_add(defo_m3_scale(E, 2 * mu), defo_m3_scale(I, lam * defo_m3_trace(E)));
                want = defo_m3_mul(F, S);
            }
            defo_mat3 P = defo_material_P(m, &F);
            worst = fmax(worst, defo_m3_maxabs(defo_m3_sub(P, want)) / (defo_m3_maxabs(want) + mu));
        }
        defo_material_destroy(m);
    }
    CHECK(worst <= 1e-12);
    TEST_REPORT("max rel err vs textbook P(F): %.2e", worst);
}

/* The SVD-free form (material/direct.c) against the SVD path, per model and
 * inversion mode, over all four σ families: where it answers, P and ψ agree
 * with U diag(P̂) Vᵀ and ψ(σ) to rounding and the smallest stretch is really
 * at or above the threshold (the extension would have changed them below);
 * it refuses every inverted F, the models without a matrix form, and leaves
 * its outputs untouched then.  It must also answer in the general family
 * (the kernel's speed depends on it), and at rest give P = 0, ψ = 0. */
static void test_direct_form(void) {
    static const config all[] = {
        {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C1},    {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C0},
        {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_CLAMP}, {DEFO_MODEL_STVK, DEFO_INVERSION_NONE},
        {DEFO_MODEL_STVK, DEFO_INVERSION_C1},           {DEFO_MODEL_STVK, DEFO_INVERSION_CLAMP},
        {DEFO_MODEL_COROTATED, DEFO_INVERSION_C1},      {DEFO_MODEL_BIPHASIC, DEFO_INVERSION_C1},
    };
    test_rng r = {0xd1ecULL};
    double worst_p = 0, worst_psi = 0;
    for (size_t c = 0; c < sizeof all / sizeof all[0]; c++) {
        defo_material *m = make(all[c].model, all[c].mode, 0.3);
        const double mu = defo_material_mu(m);
        const int has_form =
            all[c].model == DEFO_MODEL_NEO_HOOKEAN || all[c].model == DEFO_MODEL_STVK;
        int answered[4] = {0, 0, 0, 0};
        for (int n = 0; n < NSAMPLES; n++) {
            const int family = n % 4;
            defo_vec3 s = random_sigma(&r, family);
            defo_mat3 Q = random_rotation(&r), R = random_rotation(&r);
            defo_mat3 F = defo_m3_mult(defo_m3_mul(Q, defo_m3_diag(s)), R);
            defo_mat3 P = defo_m3_identity();
            double psi = 12345.0;
            const int ok = defo_material_eval_direct(m, &F, &psi, &P);
            if (!ok) {
                CHECK(psi == 12345.0 && defo_m3_maxabs(defo_m3_sub(P, defo_m3_identity())) == 0);
                continue;
            }
            answered[family]++;
            CHECK(has_form);
            defo_mat3 Pn; /* without ψ: ln J directly, the same P to rounding */
            CHECK(defo_material_eval_direct(m, &F, NULL, &Pn));
            worst_p = fmax(worst_p, defo_m3_maxabs(defo_m3_sub(Pn, P)) / (defo_m3_maxabs(P) + mu));
            CHECK(s.z > 0);
            if (all[c].mode != DEFO_INVERSION_NONE) CHECK(s.z >= 0.3);
            const defo_mat3 want = defo_material_P(m, &F);
            const double want_psi = defo_material_psi_F(m, &F);
            worst_p =
                fmax(worst_p, defo_m3_maxabs(defo_m3_sub(P, want)) / (defo_m3_maxabs(want) + mu));
            worst_psi = fmax(worst_psi, fabs(psi - want_psi) / (fabs(want_psi) + mu));
        }
        CHECK(answered[1] == 0);                         /* inverted */
        if (has_form) CHECK(answered[0] > NSAMPLES / 8); /* most of the general family */
        const defo_mat3 I = defo_m3_identity();
        defo_mat3 P0;
        double psi0 = -1;
        CHECK(defo_material_eval_direct(m, &I, &psi0, &P0) == has_form);
        if (has_form) CHECK(psi0 == 0.0 && defo_m3_maxabs(P0) == 0.0);
        /* near rest no cancellation: F = I + ε with |ε| ~ 1e-7 gives the
         * linear-elastic energy μ ε:ε + λ/2 (tr ε)² to 1e-6 (the form
         * I₁ − 3 − 2 ln J would be off by ~ε_machine/|ε|² ~ 1e-2) */
        if (has_form) {
            defo_mat3 Fs = defo_m3_identity(), e = defo_m3_zero();
            for (int i = 0; i < 3; i++)
                for (int j = i; j < 3; j++) e.m[i][j] = e.m[j][i] = 1e-7 * test_range(&r, -1, 1);
            Fs = defo_m3_add(Fs, e);
            double lin = 0.0, tr = e.m[0][0] + e.m[1][1] + e.m[2][2];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) lin += mu * e.m[i][j] * e.m[i][j];
            lin += 0.5 * defo_material_lambda(m) * tr * tr;
            double psi_s = 0;
            defo_mat3 Ps;
            CHECK(defo_material_eval_direct(m, &Fs, &psi_s, &Ps));
            CHECK(fabs(psi_s - lin) <= 1e-6 * lin);
        }
        defo_material_destroy(m);
    }
    CHECK(worst_p <= 1e-12 && worst_psi <= 1e-12);
    TEST_REPORT("direct vs SVD path: P %.2e, psi %.2e (relative to |P| + mu)", worst_p, worst_psi);
}

/* defo_material_stiffness_bound (neo-Hookean's shortcut included) against
 * the Gershgorin bound of the blocks defo_material_eval forms, for every
 * model and mode and all four σ families; as a row-sum bound it is at least
 * every diagonal entry of A.  The rough bound is never below it. */
static void test_stiffness_bound(void) {
    static const config all[] = {
        {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C1},    {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C0},
        {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_CLAMP}, {DEFO_MODEL_STVK, DEFO_INVERSION_C1},
        {DEFO_MODEL_COROTATED, DEFO_INVERSION_C1},      {DEFO_MODEL_BIPHASIC, DEFO_INVERSION_C0},
    };
    test_rng r = {0xb0adULL};
    double worst = 0;
    for (size_t c = 0; c < sizeof all / sizeof all[0]; c++) {
        defo_material *m = make(all[c].model, all[c].mode, 0.3);
        for (int n = 0; n < NSAMPLES; n++) {
            const defo_vec3 s = random_sigma(&r, n % 4);
            defo_dpdf d;
            defo_material_eval(m, s, NULL, &d);
            const double want = defo_dpdf_bound(&d), got = defo_material_stiffness_bound(m, s);
            worst = fmax(worst, fabs(got - want) / want);
            /* Gershgorin: every diagonal entry of the blocks is within the bound */
            for (int i = 0; i < 3; i++) CHECK(fabs(d.A[i][i]) <= got * (1 + 1e-12));
        }
        defo_material_destroy(m);
    }
    CHECK(worst <= 1e-12);
    TEST_REPORT("stiffness bound vs the blocks' Gershgorin bound: max rel diff %.2e", worst);
    /* the rough bound from (J, a lower bound of σ_min²) is above the exact
     * one wherever it answers (neo-Hookean, σ_min² bound ≥ c²) */
    double lo = INFINITY, hi = 0;
    long answered = 0;
    for (int mode = 0; mode < 2; mode++) {
        defo_material *m =
            make(DEFO_MODEL_NEO_HOOKEAN, mode ? DEFO_INVERSION_CLAMP : DEFO_INVERSION_C1, 0.3);
        for (int n = 0; n < NSAMPLES; n++) {
            const defo_vec3 s = random_sigma(&r, 0);
            const double J = s.x * s.y * s.z, smin2 = s.z * s.z * test_range(&r, 0.5, 1.0);
            const double rough = defo_material_stiffness_bound_rough(m, J, smin2);
            if (smin2 < 0.09) {
                CHECK(rough == INFINITY);
                continue;
            }
            const double exact = defo_material_stiffness_bound(m, s);
            CHECK(rough >= exact * (1 - 1e-12));
            lo = fmin(lo, rough / exact), hi = fmax(hi, rough / exact);
            answered++;
        }
        defo_material_destroy(m);
    }
    CHECK(answered > NSAMPLES / 2);
    defo_material *m = make(DEFO_MODEL_STVK, DEFO_INVERSION_C1, 0.3);
    CHECK(defo_material_stiffness_bound_rough(m, 1.0, 1.0) == INFINITY);
    defo_material_destroy(m);
    TEST_REPORT("rough bound / exact over %ld samples: %.3f .. %.3f", answered, lo, hi);
}

/* The four-point forms against their one-point twins, bit for bit, on any
 * CPU (each has an AVX2 and a plain version chosen at load time): the
 * neo-Hookean P of defo_material_eval_direct4 and which lanes answer, over
 * all four σ families mixed in one call (inverted lanes refused beside
 * answering ones); StVK and corotated answer no lane; the rough bound of
 * defo_material_stiffness_bound_rough4, answering or not. */
static void test_four_wide(void) {
    test_rng r = {0x4444ULL};
    long answered = 0, refused = 0, mismatch = 0;
    for (int c = 0; c < 3; c++) {
        static const config all[] = {{DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C1},
                                     {DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_CLAMP},
                                     {DEFO_MODEL_STVK, DEFO_INVERSION_C1}};
        defo_material *m = make(all[c].model, all[c].mode, 0.3);
        for (int n = 0; n < NSAMPLES / 4; n++) {
            double F4[9][4], P4[9][4], J4[4], S4[4], B4[4];
            defo_mat3 F[4];
            for (int l = 0; l < 4; l++) {
                const defo_vec3 s = random_sigma(&r, (n + l) % 4);
                F[l] = defo_m3_mult(defo_m3_mul(random_rotation(&r), defo_m3_diag(s)),
                                    random_rotation(&r));
                for (int k = 0; k < 9; k++) F4[k][l] = F[l].m[k / 3][k % 3];
                J4[l] = test_range(&r, -0.5, 3.0);
                S4[l] = test_range(&r, -0.1, 2.0);
            }
            const unsigned bits = defo_material_eval_direct4(m, (const double(*)[4])F4, P4);
            defo_material_stiffness_bound_rough4(m, J4, S4, B4);
            for (int l = 0; l < 4; l++) {
                defo_mat3 P;
                const int one = defo_material_eval_direct(m, &F[l], NULL, &P);
                const int want = all[c].model == DEFO_MODEL_NEO_HOOKEAN && one;
                if (want != (int)(bits >> l & 1)) mismatch++;
                if (want) {
                    answered++;
                    for (int k = 0; k < 9; k++)
                        if (memcmp(&P.m[k / 3][k % 3], &P4[k][l], sizeof(double))) mismatch++;
                } else {
                    refused++;
                }
                const double b = defo_material_stiffness_bound_rough(m, J4[l], S4[l]);
                if (memcmp(&b, &B4[l], sizeof b)) mismatch++;
            }
        }
        defo_material_destroy(m);
    }
    TEST_REPORT("four-wide = one-point: %ld lanes answered, %ld refused, %ld mismatches", answered,
                refused, mismatch);
    CHECK(mismatch == 0);
    CHECK(answered > NSAMPLES / 4 && refused > NSAMPLES / 4);
}

/* ITF04 §6 biphasic curve, probed uniaxially (σ = (s, 1, 1), so P̂1 = f(s) +
 * λ(s − 1) and A11 = f'(s) + λ): slopes k0 = 2μ at rest, kc = ke = 4·2μ on
 * the tails, f(1) = 0, f' and f'' continuous at the thresholds (C2 join),
 * f'' jumps at s = 1 (the documented C1 point). */
static void test_biphasic_curve(void) {
    defo_material *m = make(DEFO_MODEL_BIPHASIC, DEFO_INVERSION_C1, 0.3);
    double mu = defo_material_mu(m), lam = defo_material_lambda(m), k0 = 2 * mu;
    defo_vec3 p;
    defo_dpdf d;
    defo_material_eval(m, defo_v3(0.5, 1, 1), &p, &d);
    CHECK_NEAR(d.A[0][0], 4 * k0 + lam, 1e-12 * lam);
    defo_material_eval(m, defo_v3(1.7, 1, 1), &p, &d);
    CHECK_NEAR(d.A[0][0], 4 * k0 + lam, 1e-12 * lam);
    defo_material_eval(m, defo_v3(1, 1, 1), &p, &d);
    CHECK_NEAR(d.A[0][0], k0 + lam, 1e-12 * lam);
    const double dl = 1e-9;
    for (int k = 0; k < 3; k++) {
        double t = k == 0 ? 0.8 : k == 1 ? 1.0 : 1.2;
        defo_vec3 pa, pb;
        defo_dpdf da, db;
        defo_material_eval(m, defo_v3(t - dl, 1, 1), &pa, &da);
        defo_material_eval(m, defo_v3(t + dl, 1, 1), &pb, &db);
        CHECK(fabs(pa.x - pb.x) <= 1e-7 * k0);
        CHECK(fabs(da.A[0][0] - db.A[0][0]) <= 1e-7 * k0);
        /* f'' by one-sided differences of A11 */
        defo_dpdf da2, db2;
        defo_material_eval(m, defo_v3(t - 1e-4, 1, 1), NULL, &da2);
        defo_material_eval(m, defo_v3(t + 1e-4, 1, 1), NULL, &db2);
        double fa = (da.A[0][0] - da2.A[0][0]) / (1e-4 - dl);
        double fb = (db2.A[0][0] - db.A[0][0]) / (1e-4 - dl);
        if (k == 1)
            CHECK(fabs(fa - fb) > 1.0 * k0); /* kink at rest */
        else
            CHECK(fabs(fa - fb) <= 1e-2 * k0); /* C2 at the thresholds */
    }
    /* monotone stiffening: the tangent grows away from rest */
    double prev = INFINITY;
    for (double s = 0.5; s <= 1.0; s += 0.01) {
        defo_material_eval(m, defo_v3(s, 1, 1), &p, &d);
        CHECK(d.A[0][0] <= prev + 1e-9 * k0);
        prev = d.A[0][0];
    }
    defo_material_destroy(m);
}

/* Batch evaluation gives the same bits as one call per element. */
static void test_batch(void) {
    defo_material *m = make(DEFO_MODEL_NEO_HOOKEAN, DEFO_INVERSION_C1, 0.3);
    test_rng r = {8};
    enum { N = 16 };
    double sig[3 * N], psi[N], ph[3 * N];
    defo_dpdf d[N];
    for (int e = 0; e < N; e++) defo_v3_store(sig + 3 * e, random_sigma(&r, e));
    defo_material_eval_batch(m, N, sig, psi, ph, d);
    for (int e = 0; e < N; e++) {
        defo_vec3 p;
        defo_dpdf de;
        double v = defo_material_eval(m, defo_v3_load(sig + 3 * e), &p, &de);
        CHECK(v == psi[e]);
        CHECK(p.x == ph[3 * e] && p.y == ph[3 * e + 1] && p.z == ph[3 * e + 2]);
        CHECK(memcmp(&de, &d[e], sizeof de) == 0);
    }
    defo_material_destroy(m);
}

/* ITF04 §6.2 damping: linear in Ḟ; dissipative (Ḟ : P_d ≥ 0, equal to
 * 2μ_d|sym Ḟ̂|² + λ_d tr(Ḟ̂)²); zero for a rigid spin of an undeformed body;
 * world = U P̂_d(Uᵀ Ḟ V) Vᵀ. */
static void test_damping(void) {
    defo_material *m = make(DEFO_MODEL_COROTATED, DEFO_INVERSION_C1, 0.3);
    double mud, lamd;
    defo_material_damping_moduli(m, &mud, &lamd);
    test_rng r = {11};
    double worst = 0;
    for (int n = 0; n < 100; n++) {
        defo_mat3 U = random_rotation(&r), V = random_rotation(&r), X, Y;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                X.m[i][j] = test_range(&r, -1, 1);
                Y.m[i][j] = test_range(&r, -1, 1);
            }
        defo_mat3 px = defo_material_damping_P(m, &U, &V, &X);
        defo_mat3 py = defo_material_damping_P(m, &U, &V, &Y);
        defo_mat3 xy = defo_m3_add(defo_m3_scale(X, 2.0), defo_m3_scale(Y, -3.0));
        defo_mat3 pxy = defo_material_damping_P(m, &U, &V, &xy);
        defo_mat3 lin = defo_m3_add(defo_m3_scale(px, 2.0), defo_m3_scale(py, -3.0));
        worst = fmax(worst, defo_m3_maxabs(defo_m3_sub(pxy, lin)) / (mud + lamd));
        /* dissipation = 2μ_d |sym Ḟ̂|² + λ_d tr(Ḟ̂)² */
        defo_mat3 xh = defo_m3_mul(defo_m3_tmul(U, X), V);
        defo_mat3 sy = defo_m3_scale(defo_m3_add(xh, defo_m3_transpose(xh)), 0.5);
        double want = 2 * mud * defo_m3_ddot(sy, sy) + lamd * pow(defo_m3_trace(xh), 2);
        double got = defo_m3_ddot(X, px);
        CHECK(got >= 0);
        CHECK(fabs(got - want) <= 1e-12 * (fabs(want) + mud));
        /* rigid spin of the undeformed body: F = U Vᵀ, Ḟ = W F, W skew */
        defo_vec3 w = defo_v3(test_range(&r, -1, 1), test_range(&r, -1, 1), test_range(&r, -1, 1));
        defo_mat3 W = {{{0, -w.z, w.y}, {w.z, 0, -w.x}, {-w.y, w.x, 0}}};
        defo_mat3 Fr = defo_m3_mult(U, V);
        defo_mat3 Fd = defo_m3_mul(W, Fr);
        defo_mat3 spin = defo_material_damping_P(m, &U, &V, &Fd);
        CHECK(defo_m3_maxabs(spin) <= 1e-12 * mud);
    }
    CHECK(worst <= 1e-12);
    /* hat form by hand */
    defo_mat3 X = {{{1, 2, 0}, {0, 3, 0}, {4, 0, -1}}};
    defo_mat3 P = defo_material_damping_hat(m, &X);
    CHECK_NEAR(P.m[0][1], mud * 2, 1e-12 * mud);
    CHECK_NEAR(P.m[2][0], mud * 4, 1e-12 * mud);
    CHECK_NEAR(P.m[1][1], mud * 6 + lamd * 3, 1e-12 * mud);
    defo_material_destroy(m);
}

int main(void) {
    RUN(test_lame);
    RUN(test_validation);
    RUN(test_diagonal_fd);
    RUN(test_world_dpdf_fd);
    RUN(test_P_is_energy_gradient);
    RUN(test_isotropy);
    RUN(test_closed_forms);
    RUN(test_direct_form);
    RUN(test_stiffness_bound);
    RUN(test_four_wide);
    RUN(test_biphasic_curve);
    RUN(test_rest_and_small_strain);
    RUN(test_extension_continuity);
    RUN(test_restoring);
    RUN(test_clamp_mode);
    RUN(test_degenerate_blocks);
    RUN(test_psd_projection);
    RUN(test_apply_layout);
    RUN(test_batch);
    RUN(test_damping);
    return test_summary();
}
