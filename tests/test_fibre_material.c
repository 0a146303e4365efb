/*
 * tests/test_fibre_material.c — the fibre term of transversely isotropic
 * materials (ITF04 §6.1, TSIF05 §11; src/material/fibre.c).
 *
 * References used, per test:
 *   - analytic curve values worked by hand (exponential, polynomial and the
 *     force–length bump at chosen stretches);
 *   - central finite differences: of ψ_f(λ) (→ T) and T(λ) (→ K) along the
 *     curves, of ψ_f(F) (→ P_f), of P_f(F) (→ the differential δP_f);
 *   - the eigen-structure the projection relies on: δF = u aᵀ with u ⊥ t
 *     gives δF : δP = (T/λ)|u|², u = t gives K, δF a = 0 gives 0;
 *   - ITF04 §6.1's diagonal frame: U [(T/λ) F̂ â âᵀ] Vᵀ with â = Vᵀ a equals
 *     the world-frame P_f, and F̂⁻¹P̂ is symmetric;
 *   - invariance: P_f(Q F, a) = Q P_f(F, a) (world rotation) and
 *     P_f(F Rᵀ, R a) = P_f(F, a) Rᵀ (material rotation with the fibre).
 * States: stretched and compressed along and across the fibre, near-flat
 * and inverted F.  Worst errors are printed with TEST_REPORT.
 */
#include "defo/material.h"
#include "test.h"

#include <string.h>

#define NSAMPLES TEST_HEAVY(400)

static defo_material *make(defo_fibre_passive passive, double smax) {
    defo_material_def d = defo_default_material();
    d.youngs_modulus = 2e5;
    d.poisson = 0.45;
    d.fibre.passive = passive;
    d.fibre.exp_stress = 4e4;
    d.fibre.exp_rate = 6.6;
    d.fibre.linear_stretch = 1.4;
    d.fibre.poly2 = 3e5;
    d.fibre.poly3 = 1e5;
    d.fibre.max_active_stress = smax;
    d.fibre.optimal_stretch = 1.1;
    d.fibre.active_width = 0.5;
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

static defo_vec3 random_unit(test_rng *r) {
    defo_mat3 Q = random_rotation(r);
    return defo_v3(Q.m[0][0], Q.m[1][0], Q.m[2][0]);
}

/* F = Q diag(s) Rᵀ with the fibre a = R e_0 (so |F a| = s0) and a family of
 * stretches: 0 stretched along, 1 compressed along, 2 stretched across
 * (fibre compressed), 3 near-flat across the fibre, 4 inverted. */
static defo_mat3 random_F(test_rng *r, int family, defo_vec3 *a) {
    double s[3];
    switch (family % 5) {
    case 0:
        s[0] = test_range(r, 1.05, 1.9), s[1] = test_range(r, 0.7, 1.0),
        s[2] = test_range(r, 0.7, 1);
        break;
    case 1:
        s[0] = test_range(r, 0.5, 0.95), s[1] = test_range(r, 1, 1.3), s[2] = test_range(r, 1, 1.3);
        break;
    case 2:
        s[0] = test_range(r, 0.7, 0.98), s[1] = test_range(r, 1.1, 1.8),
        s[2] = test_range(r, 0.9, 1);
        break;
    case 3:
        s[0] = test_range(r, 0.8, 1.6), s[1] = test_range(r, 0.8, 1.2),
        s[2] = test_range(r, 1e-3, 1e-2);
        break;
    default:
        s[0] = test_range(r, 0.8, 1.6), s[1] = test_range(r, 0.8, 1.2),
        s[2] = -test_range(r, 0.1, 0.6);
        break;
    }
    defo_mat3 Q = random_rotation(r), R = random_rotation(r);
    /* keep the fibre stretch away from the curves' kinks in K (λ* = 1.4,
     * the force–length support ends 0.55 and 1.65): T is C1 there but K
     * jumps, which central differences of T would straddle */
    if (fabs(s[0] - 1.4) < 0.01 || fabs(s[0] - 0.55) < 0.01 || fabs(s[0] - 1.65) < 0.01)
        s[0] += 0.03;
    *a = defo_v3(R.m[0][0], R.m[1][0], R.m[2][0]);
    defo_mat3 D = defo_m3_diag(defo_v3(s[0], s[1], s[2]));
    /* a slight shear so the fibre is not a singular direction of F */
    D.m[1][0] = test_range(r, -0.1, 0.1);
    return defo_m3_mult(defo_m3_mul(Q, D), R);
}

static defo_mat3 unit(int k, int l) {
    defo_mat3 e = defo_m3_zero();
    e.m[k][l] = 1;
    return e;
}

/* ------------------------------------------------------------- tests */

/* Values at chosen stretches against the formulas worked by hand. */
static void test_curve_values(void) {
    defo_material *ex = make(DEFO_FIBRE_PASSIVE_EXPONENTIAL, 0);
    defo_material *po = make(DEFO_FIBRE_PASSIVE_POLYNOMIAL, 0);
    defo_material *ac = make(DEFO_FIBRE_PASSIVE_NONE, 3e5);
    double T, K;
    /* exponential at λ = 1.2: 4e4 (e^{1.32} − 1 − 1.32) */
    defo_material_fibre_eval(ex, 1.2, 0, &T, &K);
    CHECK_NEAR(T, 4e4 * (exp(1.32) - 2.32), 1e-9 * T);
    CHECK_NEAR(K, 4e4 * 6.6 * (exp(1.32) - 1), 1e-9 * K);
    /* beyond λ* = 1.4 the tangent line */
    const double Ts = 4e4 * (exp(6.6 * 0.4) - 1 - 6.6 * 0.4), Ks = 4e4 * 6.6 * (exp(6.6 * 0.4) - 1);
    defo_material_fibre_eval(ex, 1.7, 0, &T, &K);
    CHECK_NEAR(T, Ts + 0.3 * Ks, 1e-9 * T);
    CHECK_NEAR(K, Ks, 1e-9 * K);
    /* compression and rest: nothing */
    CHECK(defo_material_fibre_eval(ex, 0.8, 1, &T, &K) == 0 && T == 0 && K == 0);
    CHECK(defo_material_fibre_eval(ex, 1.0, 1, &T, &K) == 0 && T == 0 && K == 0);
    /* polynomial at λ = 1.5: 3e5·0.25 + 1e5·0.125, ψ = 3e5·0.125/3 + 1e5·0.0625/4 */
    double psi = defo_material_fibre_eval(po, 1.5, 0, &T, &K);
    CHECK_NEAR(T, 75000 + 12500, 1e-9);
    CHECK_NEAR(K, 3e5 + 3 * 1e5 * 0.25, 1e-9);
    CHECK_NEAR(psi, 12500 + 1562.5, 1e-9);
    /* force–length bump: 1 at λ_o = 1.1, 0 at and beyond 1.1·(1 ± 0.5) */
    defo_material_fibre_eval(ac, 1.1, 1, &T, &K);
    CHECK_NEAR(T, 3e5, 1e-9);
    CHECK_NEAR(K, 0, 1e-9);
    defo_material_fibre_eval(ac, 1.1 * 1.25, 0.5, &T, &K); /* u = 0.5: (3/4)² */
    CHECK_NEAR(T, 0.5 * 3e5 * 0.5625, 1e-9);
    CHECK_NEAR(K, -4 * 0.5 * 3e5 * 0.5 * 0.75 / (0.5 * 1.1), 1e-7);
    defo_material_fibre_eval(ac, 0.5, 1, &T, &K);
    CHECK(T == 0 && K == 0);
    defo_material_fibre_eval(ac, 1.7, 1, &T, &K);
    CHECK(T == 0 && K == 0);
    /* ψ_f(1) = 0 for any activation; α = 0 has no active stress */
    CHECK(defo_material_fibre_eval(ac, 1.0, 0.7, &T, NULL) == 0.0);
    CHECK_NEAR(T, 0.7 * 3e5 * pow(1 - pow((1 / 1.1 - 1) / 0.5, 2), 2), 1e-9);
    defo_material_fibre_eval(ac, 1.2, 0.0, &T, &K);
    CHECK(T == 0 && K == 0);
    CHECK(defo_material_has_fibres(ex) && defo_material_has_fibres(ac));
    defo_material_def d = defo_default_material();
    defo_material *iso = NULL;
    CHECK_OK(defo_material_create(&d, &iso));
    CHECK(!defo_material_has_fibres(iso));
    defo_mat3 P, F = defo_m3_scale(defo_m3_identity(), 1.3);
    CHECK(defo_material_fibre_P(iso, &F, defo_v3(1, 0, 0), 1, &P) == 0 && defo_m3_maxabs(P) == 0);
    defo_material_destroy(iso);
    defo_material_destroy(ex);
    defo_material_destroy(po);
    defo_material_destroy(ac);
}

/* The exponential curve's own e^y − 1 (material/fibre.c: series below
 * y = 1/2, Cody–Waite reduction above) against libm's expm1 in long double
 * over the whole admissible range 0 < y ≤ 50 (exp_rate·(λ* − 1) ≤ 50;
 * e^y − 1 − y by its series in long double below y = 1):
 * T = P1 (e^y − 1 − y) and K = P1 k (e^y − 1); the stress-only call equals
 * the energy call bit for bit; the four-wide call equals the one-point call
 * at every lane, bit for bit, mixed branches and activations included. */
static void test_exponential_accuracy(void) {
    defo_material_def d = defo_default_material();
    d.fibre.passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL;
    d.fibre.exp_stress = 4e4;
    d.fibre.exp_rate = 25;
    d.fibre.linear_stretch = 3.0;
    d.fibre.max_active_stress = 2e5;
    d.fibre.optimal_stretch = 1.6;
    d.fibre.active_width = 0.6;
    defo_material *m = NULL;
    CHECK_OK(defo_material_create(&d, &m));
    double worst_T = 0, worst_K = 0;
    long differ = 0, lanes_differ = 0;
    test_rng r = {0xe4a1};
    for (int i = 1; i <= 4000; i++) {
        /* y from 1e-6 to 50, log-spaced, so both branches and tiny stretches */
        const double y = 1e-6 * pow(5e7, i / 4000.0), lam = 1.0 + y / 25.0;
        double T, K, Te, Ke;
        T = defo_material_fibre_stress(m, lam, 0.0, &K);
        defo_material_fibre_eval(m, lam, 0.0, &Te, &Ke);
        differ += memcmp(&T, &Te, sizeof T) != 0 || memcmp(&K, &Ke, sizeof K) != 0;
        const double yr = 25.0 * (lam - 1.0); /* the y the material forms */
        const long double em1 = expm1l((long double)yr);
        /* e^y − 1 − y: its series in long double below 1 (expm1l − y would
         * cancel there), the difference above */
        long double p2 = em1 - (long double)yr, term = (long double)yr;
        if (yr < 1.0) {
            p2 = 0.0L;
            for (int n = 2; n < 40; n++) term *= (long double)yr / n, p2 += term;
        }
        const double Tr = (double)(4e4L * p2);
        const double Kr = (double)(4e4L * 25.0L * em1);
        worst_T = fmax(worst_T, fabs(T - Tr) / Tr);
        worst_K = fmax(worst_K, fabs(K - Kr) / Kr);
        double l4[4], a4[4], T4[4], K4[4];
        for (int l = 0; l < 4; l++) {
            l4[l] = l == 0 ? lam : test_range(&r, 0.5, 3.5);
            a4[l] = l == 3 ? 0.0 : test_range(&r, 0.0, 1.0);
        }
        defo_material_fibre_stress4(m, l4, a4, T4, K4);
        for (int l = 0; l < 4; l++) {
            double Kl;
            const double Tl = defo_material_fibre_stress(m, l4[l], a4[l], &Kl);
            lanes_differ +=
                memcmp(&Tl, &T4[l], sizeof Tl) != 0 || memcmp(&Kl, &K4[l], sizeof Kl) != 0;
        }
    }
    TEST_REPORT("e^y − 1 for 1e-6 ≤ y ≤ 50 vs libm: worst relative error T %.2e, K %.2e; "
                "stress ≠ eval at %ld, four-wide ≠ one-point at %ld lanes",
                worst_T, worst_K, differ, lanes_differ);
    CHECK(worst_T < 4e-15);
    CHECK(worst_K < 4e-15);
    CHECK(differ == 0);
    CHECK(lanes_differ == 0);
    defo_material_destroy(m);
}

/* T = dψ/dλ and K = dT/dλ by central differences along each curve. */
static void test_curve_derivatives(void) {
    defo_material *m[3] = {make(DEFO_FIBRE_PASSIVE_EXPONENTIAL, 2e5),
                           make(DEFO_FIBRE_PASSIVE_POLYNOMIAL, 0),
                           make(DEFO_FIBRE_PASSIVE_NONE, 3e5)};
    double worst_T = 0, worst_K = 0;
    for (int k = 0; k < 3; k++)
        for (int i = 0; i <= 400; i++) {
            const double lam = 0.2 + 2.3 * i / 400.0, h = 1e-6, al = 0.8;
            if (fabs(lam - 1.4) < 2 * h || fabs(lam - 0.55) < 2 * h || fabs(lam - 1.65) < 2 * h)
                continue;
            double T, K, Tp, Tm;
            defo_material_fibre_eval(m[k], lam, al, &T, &K);
            const double pp = defo_material_fibre_eval(m[k], lam + h, al, &Tp, NULL);
            const double pm = defo_material_fibre_eval(m[k], lam - h, al, &Tm, NULL);
            const double scale = 1e5 + fabs(T) + fabs(K);
            worst_T = fmax(worst_T, fabs((pp - pm) / (2 * h) - T) / scale);
            worst_K = fmax(worst_K, fabs((Tp - Tm) / (2 * h) - K) / scale);
        }
    TEST_REPORT("worst relative error: T vs dψ/dλ %.2e, K vs dT/dλ %.2e", worst_T, worst_K);
    CHECK(worst_T < 1e-7);
    CHECK(worst_K < 1e-7);
    for (int k = 0; k < 3; k++) defo_material_destroy(m[k]);
}

/* P_f = ∂ψ_f/∂F and δP_f = ∂P_f/∂F : δF by central differences, every family. */
static void test_stress_and_differential(void) {
    defo_material *m = make(DEFO_FIBRE_PASSIVE_EXPONENTIAL, 3e5);
    test_rng r = {0x5eed1234};
    double worst_P = 0, worst_dP = 0;
    for (int n = 0; n < NSAMPLES; n++) {
        defo_vec3 a;
        const defo_mat3 F = random_F(&r, n, &a);
        const double al = test_range(&r, 0, 1), h = 1e-6;
        defo_mat3 P;
        defo_material_fibre_P(m, &F, a, al, &P);
        const double scale = 1e5 + defo_m3_maxabs(P);
        for (int k = 0; k < 3; k++)
            for (int l = 0; l < 3; l++) {
                const defo_mat3 E = unit(k, l);
                const defo_mat3 Fp = defo_m3_add(F, defo_m3_scale(E, h)),
                                Fm = defo_m3_sub(F, defo_m3_scale(E, h));
                const double fd = (defo_material_fibre_P(m, &Fp, a, al, NULL) -
                                   defo_material_fibre_P(m, &Fm, a, al, NULL)) /
                                  (2 * h);
                worst_P = fmax(worst_P, fabs(fd - P.m[k][l]) / scale);
                defo_mat3 Pp, Pm;
                defo_material_fibre_P(m, &Fp, a, al, &Pp);
                defo_material_fibre_P(m, &Fm, a, al, &Pm);
                const defo_mat3 dfd = defo_m3_scale(defo_m3_sub(Pp, Pm), 0.5 / h);
                const defo_mat3 dP = defo_material_fibre_dP(m, &F, a, al, &E, 0);
                worst_dP = fmax(worst_dP, defo_m3_maxabs(defo_m3_sub(dfd, dP)) / scale);
            }
    }
    TEST_REPORT("worst relative error over %d states: P_f vs dψ/dF %.2e, δP_f vs dP/dF %.2e",
                NSAMPLES, worst_P, worst_dP);
    CHECK(worst_P < 1e-7);
    CHECK(worst_dP < 1e-6);
    defo_material_destroy(m);
}

/* The projection: exactly the eigenvalues T/λ (on u ⊥ t), K (on t) and 0
 * (δF a = 0), clamped at 0; never negative; unchanged when both are ≥ 0. */
static void test_projection(void) {
    /* the polynomial passive curve is weak enough that the active one's
     * descending limb makes K < 0 */
    defo_material *m = make(DEFO_FIBRE_PASSIVE_POLYNOMIAL, 3e5);
    test_rng r = {0xabcdef};
    int negative_K = 0, bad = 0;
    double worst = 0;
    for (int n = 0; n < NSAMPLES; n++) {
        defo_vec3 a;
        const defo_mat3 F = random_F(&r, n, &a);
        const double al = test_range(&r, 0, 1);
        const defo_vec3 b = defo_m3_mulv(F, a);
        const double lam = defo_v3_norm(b);
        double T, K;
        defo_material_fibre_eval(m, lam, al, &T, &K);
        const double g = T / lam;
        negative_K += K < 0;
        const defo_vec3 t = defo_v3_scale(b, 1 / lam);
        /* u ⊥ t */
        defo_vec3 u = defo_v3_cross(t, random_unit(&r));
        const defo_mat3 Du = defo_m3_outer(u, a), Dt = defo_m3_outer(t, a);
        for (int proj = 0; proj < 2; proj++) {
            const double qu = defo_m3_ddot(Du, defo_material_fibre_dP(m, &F, a, al, &Du, proj));
            const double qt = defo_m3_ddot(Dt, defo_material_fibre_dP(m, &F, a, al, &Dt, proj));
            const double eu = (proj ? fmax(g, 0) : g) * defo_v3_dot(u, u);
            const double et = proj ? fmax(K, 0) : K;
            const double sc = 1e5 + fabs(g) + fabs(K);
            worst = fmax(worst, fmax(fabs(qu - eu), fabs(qt - et)) / sc);
        }
        /* δF with δF a = 0: no stress differential */
        const defo_vec3 p = defo_v3_cross(a, random_unit(&r));
        const defo_mat3 D0 = defo_m3_outer(random_unit(&r), p);
        worst = fmax(worst, defo_m3_maxabs(defo_material_fibre_dP(m, &F, a, al, &D0, 0)) / 1e5);
        /* random δF: the projected form is never negative */
        defo_mat3 dF;
        for (int k = 0; k < 9; k++) dF.m[k / 3][k % 3] = test_range(&r, -1, 1);
        if (defo_m3_ddot(dF, defo_material_fibre_dP(m, &F, a, al, &dF, 1)) < -1e-9) bad++;
    }
    TEST_REPORT("eigenvalue error %.2e (relative); descending-limb states (K < 0) %d of %d; "
                "negative projected forms %d",
                worst, negative_K, NSAMPLES, bad);
    CHECK(worst < 1e-12);
    CHECK(negative_K > 0); /* the clamp was exercised */
    CHECK(bad == 0);
    defo_material_destroy(m);
}

/* ITF04 §6.1: in the diagonal frame the fibre is â = Vᵀ a and P̂_f =
 * (T/λ) F̂ â âᵀ — not diagonal, but F̂ times a symmetric matrix; U P̂_f Vᵀ is
 * the world-frame P_f.  And the two rotation invariances. */
static void test_diagonal_frame_and_invariance(void) {
    defo_material *m = make(DEFO_FIBRE_PASSIVE_POLYNOMIAL, 2e5);
    test_rng r = {0x77};
    double worst_frame = 0, worst_sym = 0, worst_rot = 0;
    for (int n = 0; n < NSAMPLES; n++) {
        defo_vec3 a;
        const defo_mat3 F = random_F(&r, n, &a);
        const double al = test_range(&r, 0, 1);
        defo_mat3 P;
        defo_material_fibre_P(m, &F, a, al, &P);
        const double sc = 1e5 + defo_m3_maxabs(P);
        defo_mat3 U, V;
        defo_vec3 s;
        defo_svd3(&F, &U, &s, &V);
        const defo_vec3 ah = defo_m3_tmulv(V, a);
        const defo_mat3 Fh = defo_m3_diag(s);
        const double lam = defo_v3_norm(defo_m3_mulv(Fh, ah));
        double T;
        defo_material_fibre_eval(m, lam, al, &T, NULL);
        const defo_mat3 Sh = defo_m3_scale(defo_m3_outer(ah, ah), T > 0 ? T / lam : 0);
        const defo_mat3 Ph = defo_m3_mul(Fh, Sh);
        const defo_mat3 Pw = defo_m3_mult(defo_m3_mul(U, Ph), V);
        worst_frame = fmax(worst_frame, defo_m3_maxabs(defo_m3_sub(Pw, P)) / sc);
        if (fabs(s.z) > 1e-2) {
            const defo_mat3 Fi = defo_m3_diag(defo_v3(1 / s.x, 1 / s.y, 1 / s.z));
            const defo_mat3 S = defo_m3_mul(Fi, Ph);
            worst_sym = fmax(worst_sym, defo_m3_maxabs(defo_m3_sub(S, defo_m3_transpose(S))) / sc);
        }
        /* world rotation Q and material rotation R (the fibre turns with it) */
        const defo_mat3 Q = random_rotation(&r), R = random_rotation(&r);
        defo_mat3 PQ, PR;
        const defo_mat3 FQ = defo_m3_mul(Q, F), FR = defo_m3_mult(F, R);
        defo_material_fibre_P(m, &FQ, a, al, &PQ);
        defo_material_fibre_P(m, &FR, defo_m3_mulv(R, a), al, &PR);
        worst_rot = fmax(worst_rot, defo_m3_maxabs(defo_m3_sub(PQ, defo_m3_mul(Q, P))) / sc);
        worst_rot = fmax(worst_rot, defo_m3_maxabs(defo_m3_sub(PR, defo_m3_mult(P, R))) / sc);
    }
    TEST_REPORT("U P̂ Vᵀ vs P_f %.2e; asymmetry of F̂⁻¹P̂ %.2e; rotation invariance %.2e", worst_frame,
                worst_sym, worst_rot);
    CHECK(worst_frame < 1e-13);
    CHECK(worst_sym < 1e-13);
    CHECK(worst_rot < 1e-13);
    defo_material_destroy(m);
}

/* The step bound covers the term: max(T/λ, |K|) ≥ |δF:δP|/|δF|² for any δF. */
static void test_bound(void) {
    defo_material *m = make(DEFO_FIBRE_PASSIVE_EXPONENTIAL, 3e5);
    test_rng r = {0x99};
    int bad = 0;
    for (int n = 0; n < NSAMPLES; n++) {
        defo_vec3 a;
        const defo_mat3 F = random_F(&r, n, &a);
        const double al = test_range(&r, 0, 1);
        const double bnd = defo_material_fibre_bound(m, defo_v3_norm(defo_m3_mulv(F, a)), al);
        defo_mat3 dF;
        for (int k = 0; k < 9; k++) dF.m[k / 3][k % 3] = test_range(&r, -1, 1);
        const double q = defo_m3_ddot(dF, defo_material_fibre_dP(m, &F, a, al, &dF, 0));
        if (fabs(q) > bnd * defo_m3_ddot(dF, dF) * (1 + 1e-12)) bad++;
    }
    CHECK(bad == 0);
    defo_material_destroy(m);
}

/* Bad fibre definitions: each refused with the field named. */
static void test_validation(void) {
    defo_material_def d = defo_default_material();
    defo_material *m = NULL;
#define BAD(stmt, word)                                                                            \
    do {                                                                                           \
        d = defo_default_material();                                                               \
        stmt;                                                                                      \
        CHECK(defo_material_create(&d, &m) == DEFO_ERR_INVALID_ARGUMENT && m == NULL);             \
        CHECK_MSG(strstr(defo_last_error(), word) != NULL, "%s", defo_last_error());               \
    } while (0)
    BAD(d.fibre.passive = (defo_fibre_passive)7, "fibre.passive");
    BAD((d.fibre.passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL, d.fibre.exp_stress = -1),
        "fibre.exp_stress");
    BAD((d.fibre.passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL, d.fibre.exp_rate = NAN),
        "fibre.exp_rate");
    BAD((d.fibre.passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL, d.fibre.linear_stretch = 0.9),
        "fibre.linear_stretch");
    BAD((d.fibre.passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL, d.fibre.exp_rate = 200), "exceeds 50");
    BAD((d.fibre.passive = DEFO_FIBRE_PASSIVE_POLYNOMIAL, d.fibre.poly3 = -2), "fibre.poly3");
    BAD(d.fibre.max_active_stress = INFINITY, "fibre.max_active_stress");
    BAD((d.fibre.max_active_stress = 1e5, d.fibre.active_width = 1.0), "fibre.active_width");
    BAD((d.fibre.max_active_stress = 1e5, d.fibre.optimal_stretch = 0), "fibre.optimal_stretch");
#undef BAD
    /* the default has no fibre term and is valid */
    d = defo_default_material();
    CHECK_OK(defo_material_create(&d, &m));
    CHECK(m && !defo_material_has_fibres(m));
    defo_material_destroy(m);
}

int main(void) {
    RUN(test_curve_values);
    RUN(test_curve_derivatives);
    RUN(test_exponential_accuracy);
    RUN(test_stress_and_differential);
    RUN(test_projection);
    RUN(test_diagonal_frame_and_invariance);
    RUN(test_bound);
    RUN(test_validation);
    return test_summary();
}
