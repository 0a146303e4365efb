/*
 * tests/test_math.c — the robust 3×3 decompositions (ITF04 §5, §5.1) and
 * the n×n symmetric eigen-decomposition (test_symn_eigen).
 *
 * Every SVD is checked against the defining identities (the reference is the
 * input itself): reconstruction ‖U diag(σ) Vᵀ − F‖_F ≤ C·ε·‖F‖_F, UᵀU = I and
 * VᵀV = I to C·ε, det U = det V = 1 to C·ε, σ₁ ≥ σ₂ ≥ |σ₃|, σ₂ ≥ 0, sign(σ₃)
 * = sign(det F) when |det F| is not negligible, nothing NaN/Inf.  Residuals
 * are evaluated in long double so the check itself adds no double rounding.
 * Singular values are compared with independent references: the closed form
 * for R₁ diag(d) R₂ inputs, and the eigenvalues of FᵀF from the
 * trigonometric cubic formula (long double) for random well-conditioned F.
 * The worst ratio (error / ε, relative to ‖F‖) per family is printed.
 */
#include "defo/math.h"
#include "test.h"

#include <float.h>

#define EPS DBL_EPSILON
/* Bound constant C of the header comment.  The SVD is a handful of
 * rotations, each exact to a few ulps; 20 leaves room for the sums. */
#define C_BOUND 20.0

typedef long double ld;

/* ------------------------------------------------------------ helpers */
static defo_mat3 random_matrix(test_rng *r) {
    defo_mat3 a;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) a.m[i][j] = test_range(r, -1, 1);
    return a;
}

/* Uniformly distributed rotation from a normalised random quaternion. */
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

/* R1 diag(d) R2 with random rotations. */
static defo_mat3 rot_diag_rot(test_rng *r, double d0, double d1, double d2) {
    defo_mat3 r1 = random_rotation(r), r2 = random_rotation(r);
    return defo_m3_mul(defo_m3_mul(r1, defo_m3_diag(defo_v3(d0, d1, d2))), r2);
}

static ld det_ld(const defo_mat3 *a) {
    ld m[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) m[i][j] = a->m[i][j];
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
           m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

static ld fnorm_ld(const defo_mat3 *a) {
    ld s = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) s += (ld)a->m[i][j] * a->m[i][j];
    return sqrtl(s);
}

/* ‖QᵀQ − I‖_F in long double. */
static ld orth_err(const defo_mat3 *q) {
    ld s = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            ld x = 0;
            for (int k = 0; k < 3; k++) x += (ld)q->m[k][i] * q->m[k][j];
            x -= (i == j);
            s += x * x;
        }
    return sqrtl(s);
}

static int vec_finite(defo_vec3 v) {
    return isfinite(v.x) && isfinite(v.y) && isfinite(v.z);
}

/* ------------------------------------------------------------ SVD check */
typedef struct family {
    const char *name;
    long count;
    long failures;
    double worst_rec, worst_orth, worst_det, worst_sigma; /* in units of ε */
} family;

static family family_make(const char *name) {
    family f = {name, 0, 0, 0, 0, 0, 0};
    return f;
}

static void family_fail(family *fam, const defo_mat3 *F, const char *what, double value) {
    if (fam->failures++ < 5)
        fprintf(
            stderr,
            "  %s: %s = %.3g for F = [%.17g %.17g %.17g; %.17g %.17g %.17g; %.17g %.17g %.17g]\n",
            fam->name, what, value, F->m[0][0], F->m[0][1], F->m[0][2], F->m[1][0], F->m[1][1],
            F->m[1][2], F->m[2][0], F->m[2][1], F->m[2][2]);
}

/* Full SVD check of one matrix; returns σ for further reference checks. */
static defo_vec3 check_svd(family *fam, const defo_mat3 *F) {
    defo_mat3 U, V;
    defo_vec3 s;
    defo_svd3(F, &U, &s, &V);
    fam->count++;
    if (!defo_m3_isfinite(U) || !defo_m3_isfinite(V) || !vec_finite(s)) {
        family_fail(fam, F, "non-finite output", 0);
        return s;
    }
    ld nf = fnorm_ld(F);
    /* Reconstruction, relative to ‖F‖ (reference: F itself). */
    ld sg[3] = {s.x, s.y, s.z}, rec = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            ld x = 0;
            for (int k = 0; k < 3; k++) x += (ld)U.m[i][k] * sg[k] * V.m[j][k];
            x -= F->m[i][j];
            rec += x * x;
        }
    rec = sqrtl(rec);
    /* The DBL_TRUE_MIN term: for subnormal F, σ itself is stored to an
     * absolute 2^-1075, which no algorithm can beat. */
    double rr = (double)(rec / (nf * EPS + DBL_TRUE_MIN));
    double ro = (double)(fmaxl(orth_err(&U), orth_err(&V)) / EPS);
    double rd = (double)(fmaxl(fabsl(det_ld(&U) - 1), fabsl(det_ld(&V) - 1)) / EPS);
    if (rr > fam->worst_rec) fam->worst_rec = rr;
    if (ro > fam->worst_orth) fam->worst_orth = ro;
    if (rd > fam->worst_det) fam->worst_det = rd;
    if (!(rr <= C_BOUND)) family_fail(fam, F, "reconstruction/eps", rr);
    if (!(ro <= C_BOUND)) family_fail(fam, F, "orthogonality/eps", ro);
    if (!(rd <= C_BOUND)) family_fail(fam, F, "|det-1|/eps", rd);
    /* Ordering (exact, the implementation guarantees it). */
    if (!(s.x >= s.y && s.y >= fabs(s.z) && s.y >= 0))
        family_fail(fam, F, "ordering violated, sigma2", s.y);
    /* Sign of σ₃ against det F when |det F| is well above the error of σ₃
     * (|σ₃| ≥ |det F|/σ₁² and σ₃ is accurate to C·ε·‖F‖). */
    ld det = det_ld(F);
    if (fabsl(det) > 100 * C_BOUND * EPS * nf * nf * nf) {
        if ((det < 0) != (s.z < 0))
            family_fail(fam, F, "sign(sigma3) != sign(det F), det", (double)det);
    }
    /* F = 0 must give U = V = I (ITF04 §5). */
    if (nf == 0) {
        defo_mat3 I = defo_m3_identity();
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                if (U.m[i][j] != I.m[i][j] || V.m[i][j] != I.m[i][j])
                    family_fail(fam, F, "F = 0 without U = V = I", 0);
    }
    return s;
}

/* Singular values of R1 diag(d) R2 are |d| sorted, σ₃ carrying the sign of
 * d0·d1·d2 (ITF04 §5).  Perturbation theory (Weyl): rounding F moves σ by
 * ≤ ‖δF‖ ≈ ε‖F‖, so compare to C·ε·‖F‖. */
static void check_sigma_ref(family *fam, const defo_mat3 *F, defo_vec3 s, double d0, double d1,
                            double d2) {
    double e[3] = {fabs(d0), fabs(d1), fabs(d2)};
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (e[j] > e[i]) {
                double t = e[i];
                e[i] = e[j];
                e[j] = t;
            }
    if (d0 * d1 * d2 < 0) e[2] = -e[2];
    double nf = (double)fnorm_ld(F);
    double err = fmax(fabs(s.x - e[0]), fmax(fabs(s.y - e[1]), fabs(s.z - e[2])));
    double ratio = nf > 0 ? err / (EPS * nf) : err;
    if (ratio > fam->worst_sigma) fam->worst_sigma = ratio;
    /* When the smallest value is below the noise level its sign is not
     * determined by F: compare magnitudes only then. */
    if (fabs(e[2]) <= 4 * C_BOUND * EPS * nf) {
        err = fmax(fabs(s.x - e[0]), fmax(fabs(s.y - e[1]), fabs(fabs(s.z) - fabs(e[2]))));
        ratio = nf > 0 ? err / (EPS * nf) : err;
    }
    if (!(ratio <= C_BOUND)) family_fail(fam, F, "sigma vs closed form /eps", ratio);
}

static void family_report(family *fam) {
    TEST_REPORT("%-22s n=%-8ld worst/eps: recon %.2f orth %.2f det %.2f sigma %.2f", fam->name,
                fam->count, fam->worst_rec, fam->worst_orth, fam->worst_det, fam->worst_sigma);
    CHECK_MSG(fam->failures == 0, "%s: %ld of %ld matrices failed", fam->name, fam->failures,
              fam->count);
}

/* Eigenvalues of a symmetric PSD 3×3 by the trigonometric cubic formula in
 * long double (an independent method), sorted descending. */
static void sym_eigvals_cubic(ld a[3][3], ld out[3]) {
    ld p1 = a[0][1] * a[0][1] + a[0][2] * a[0][2] + a[1][2] * a[1][2];
    ld q = (a[0][0] + a[1][1] + a[2][2]) / 3;
    ld p2 = (a[0][0] - q) * (a[0][0] - q) + (a[1][1] - q) * (a[1][1] - q) +
            (a[2][2] - q) * (a[2][2] - q) + 2 * p1;
    ld p = sqrtl(p2 / 6);
    if (p == 0) {
        out[0] = out[1] = out[2] = q;
        return;
    }
    ld b[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) b[i][j] = (a[i][j] - (i == j ? q : 0)) / p;
    ld detb = b[0][0] * (b[1][1] * b[2][2] - b[1][2] * b[2][1]) -
              b[0][1] * (b[1][0] * b[2][2] - b[1][2] * b[2][0]) +
              b[0][2] * (b[1][0] * b[2][1] - b[1][1] * b[2][0]);
    ld r = detb / 2;
    if (r < -1) r = -1;
    if (r > 1) r = 1;
    ld phi = acosl(r) / 3;
    const ld pi = 3.14159265358979323846264338327950288L;
    out[0] = q + 2 * p * cosl(phi);
    out[2] = q + 2 * p * cosl(phi + 2 * pi / 3);
    out[1] = 3 * q - out[0] - out[2];
}

/* ------------------------------------------------------------ SVD tests */

/* 10^6 random matrices, entries uniform in [-1, 1]; σ are also compared to
 * √eig(FᵀF) from the cubic formula when F is well conditioned. */
static void test_svd_random(void) {
    test_rng r = {0x9E3779B97F4A7C15ULL};
    family fam = family_make("random [-1,1]");
    long n = TEST_HEAVY(1000000L);
    double worst_ref = 0;
    for (long it = 0; it < n; it++) {
        defo_mat3 F = random_matrix(&r);
        defo_vec3 s = check_svd(&fam, &F);
        if (it % 16 == 0) { /* independent reference on a subset */
            ld a[3][3], l[3];
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) {
                    a[i][j] = 0;
                    for (int k = 0; k < 3; k++) a[i][j] += (ld)F.m[k][i] * F.m[k][j];
                }
            sym_eigvals_cubic(a, l);
            /* Condition σ₁/σ₃ ≤ 1e3: the cubic formula's eigenvalue error is
             * ~1e-19·σ₁², i.e. ~1e-19·σ₁²/(2σ) in σ. */
            if (!(sqrtl(fmaxl(l[2], 0)) > 1e-3L * sqrtl(l[0]))) continue;
            double e = 0;
            double sv[3] = {s.x, s.y, fabs(s.z)};
            for (int k = 0; k < 3; k++)
                e = fmax(e, fabs(sv[k] - (double)sqrtl(l[k])) / (EPS * sv[0]));
            if (e > worst_ref) worst_ref = e;
            if (!(e <= C_BOUND)) family_fail(&fam, &F, "sigma vs cubic reference /eps", e);
        }
    }
    family_report(&fam);
    TEST_REPORT("random: worst |sigma - sqrt(eig(F^T F))| / (eps sigma1) = %.2f", worst_ref);
}

/* Rank 0, 1 and 2 matrices. */
static void test_svd_rank_deficient(void) {
    test_rng r = {12345};
    family f0 = family_make("rank 0"), f1 = family_make("rank 1"), f2 = family_make("rank 2");
    defo_mat3 Z = defo_m3_zero();
    check_svd(&f0, &Z);
    defo_mat3 nz = defo_m3_scale(Z, -1.0); /* negative zeros */
    check_svd(&f0, &nz);
    long n = TEST_HEAVY(100000L);
    for (long it = 0; it < n; it++) {
        defo_vec3 a = defo_v3(test_range(&r, -1, 1), test_range(&r, -1, 1), test_range(&r, -1, 1));
        defo_vec3 b = defo_v3(test_range(&r, -1, 1), test_range(&r, -1, 1), test_range(&r, -1, 1));
        defo_mat3 F1 = defo_m3_outer(a, b);
        check_svd(&f1, &F1);
        /* Exactly representable rank 1 with zero rows/columns. */
        defo_mat3 F1b = defo_m3_zero();
        F1b.m[it % 3][(it / 3) % 3] = test_range(&r, -2, 2);
        check_svd(&f1, &F1b);
        /* Rank 2: third column an exact combination (small integers keep it
         * exactly representable), and R1 diag(a, b, 0) R2. */
        defo_mat3 F2;
        for (int i = 0; i < 3; i++) {
            double x = (double)((long)(test_range(&r, -8, 8))),
                   y = (double)((long)test_range(&r, -8, 8));
            F2.m[i][0] = x;
            F2.m[i][1] = y;
            F2.m[i][2] = x - y;
        }
        defo_vec3 s = check_svd(&f2, &F2);
        if (!(fabs(s.z) <= C_BOUND * EPS * (double)fnorm_ld(&F2)))
            family_fail(&f2, &F2, "sigma3", s.z);
        double d0 = test_range(&r, 0.1, 1), d1 = test_range(&r, 0.1, 1);
        defo_mat3 F3 = rot_diag_rot(&r, d0, d1, 0);
        s = check_svd(&f2, &F3);
        check_sigma_ref(&f2, &F3, s, d0, d1, 0);
        defo_mat3 F4 = rot_diag_rot(&r, d0, 0, 0);
        s = check_svd(&f1, &F4);
        check_sigma_ref(&f1, &F4, s, d0, 0, 0);
    }
    family_report(&f0);
    family_report(&f1);
    family_report(&f2);
}

/* Repeated singular values: all equal, two equal (largest pair or smallest
 * pair), with both signs of det. */
static void test_svd_repeated(void) {
    test_rng r = {777};
    family fam = family_make("repeated sigma");
    long n = TEST_HEAVY(100000L);
    for (long it = 0; it < n; it++) {
        double sv = test_range(&r, 0.1, 2), tv = test_range(&r, 0.1, 2);
        double sgn = (it & 1) ? -1.0 : 1.0;
        double d[4][3] = {{sv, sv, sgn * sv}, {sv, sv, sgn * tv}, {tv, sgn * sv, sv}, {sv, sv, 0}};
        for (int k = 0; k < 4; k++) {
            defo_mat3 F = rot_diag_rot(&r, d[k][0], d[k][1], d[k][2]);
            defo_vec3 s = check_svd(&fam, &F);
            check_sigma_ref(&fam, &F, s, d[k][0], d[k][1], d[k][2]);
        }
        /* Exactly representable: scaled identity and diag with ties. */
        defo_mat3 D = defo_m3_diag(defo_v3(sv, sgn * tv, sv));
        defo_vec3 s = check_svd(&fam, &D);
        check_sigma_ref(&fam, &D, s, sv, sgn * tv, sv);
    }
    family_report(&fam);
}

/* Reflections: det = −1 with |σ| all 1 → σ = (1, 1, −1). */
static void test_svd_reflections(void) {
    test_rng r = {4242};
    family fam = family_make("reflections");
    long n = TEST_HEAVY(100000L);
    for (long it = 0; it < n; it++) {
        defo_vec3 nv = defo_v3_normalize(
            defo_v3(test_range(&r, -1, 1), test_range(&r, -1, 1), test_range(&r, -1, 1)));
        /* Householder I − 2nnᵀ. */
        defo_mat3 H = defo_m3_sub(defo_m3_identity(), defo_m3_scale(defo_m3_outer(nv, nv), 2.0));
        defo_vec3 s = check_svd(&fam, &H);
        check_sigma_ref(&fam, &H, s, 1, 1, -1);
        defo_mat3 G = rot_diag_rot(&r, 1, 1, -1);
        s = check_svd(&fam, &G);
        check_sigma_ref(&fam, &G, s, 1, 1, -1);
        /* Reflection of a general stretch: the smallest |σ| must be negated. */
        double a = test_range(&r, 0.5, 2), b = test_range(&r, 0.5, 2), c = test_range(&r, 0.5, 2);
        defo_mat3 K = rot_diag_rot(&r, -a, b, c);
        s = check_svd(&fam, &K);
        check_sigma_ref(&fam, &K, s, -a, b, c);
    }
    family_report(&fam);
}

/* Uniform scales 1e-8 … 1e8 (and the extremes of the exponent range for
 * robustness: finite outputs, same relative accuracy). */
static void test_svd_scales(void) {
    test_rng r = {99};
    family fam = family_make("scales 1e-8..1e8");
    family ext = family_make("scales 1e-300..1e300");
    long n = TEST_HEAVY(20000L);
    for (long it = 0; it < n; it++) {
        defo_mat3 F0 = random_matrix(&r);
        for (int e = -8; e <= 8; e++) {
            defo_mat3 F = defo_m3_scale(F0, pow(10.0, e));
            check_svd(&fam, &F);
        }
        static const double big[] = {1e-300, 1e-200, 1e-120, 1e120, 1e200, 1e300, 4.9e-324 * 1e10};
        for (int k = 0; k < 7; k++) {
            defo_mat3 F = defo_m3_scale(F0, big[k]);
            check_svd(&ext, &F);
        }
    }
    /* A matrix mixing a huge and a subnormal entry: finite, ordered. */
    defo_mat3 M = defo_m3_zero();
    M.m[0][0] = 1e300;
    M.m[1][1] = 4.9e-324;
    M.m[2][1] = -1e-310;
    check_svd(&ext, &M);
    family_report(&fam);
    family_report(&ext);
}

/* Nearly inverted: det ≈ 0 with either sign (one σ of 1e-6 … 1e-16 or
 * exactly zero, random sign), and nearly-planar random matrices. */
static void test_svd_nearly_inverted(void) {
    test_rng r = {31337};
    family fam = family_make("nearly inverted");
    long n = TEST_HEAVY(100000L);
    for (long it = 0; it < n; it++) {
        double d0 = test_range(&r, 0.2, 2), d1 = test_range(&r, 0.2, 2);
        double d2 = pow(10.0, -test_range(&r, 6, 16)) * ((it & 1) ? -1 : 1);
        defo_mat3 F = rot_diag_rot(&r, d0, d1, d2);
        defo_vec3 s = check_svd(&fam, &F);
        check_sigma_ref(&fam, &F, s, d0, d1, d2);
        /* Third column = combination of the first two + a tiny push. */
        defo_mat3 G = random_matrix(&r);
        double a = test_range(&r, -1, 1), b = test_range(&r, -1, 1);
        for (int i = 0; i < 3; i++)
            G.m[i][2] = a * G.m[i][0] + b * G.m[i][1] + 1e-14 * test_range(&r, -1, 1);
        check_svd(&fam, &G);
    }
    family_report(&fam);
}

/* Entries 16 orders of magnitude apart. */
static void test_svd_graded(void) {
    test_rng r = {2718};
    family fam = family_make("16 orders apart");
    family dia = family_make("graded diagonal");
    long n = TEST_HEAVY(100000L);
    for (long it = 0; it < n; it++) {
        double sg = (it & 1) ? -1 : 1;
        defo_mat3 F = rot_diag_rot(&r, 1, 1e-8, sg * 1e-16);
        defo_vec3 s = check_svd(&fam, &F);
        check_sigma_ref(&fam, &F, s, 1, 1e-8, sg * 1e-16);
        /* Each entry either O(1) or O(1e-16), random signs. */
        defo_mat3 G;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                G.m[i][j] = test_range(&r, -1, 1) * (test_uniform(&r) < 0.5 ? 1.0 : 1e-16);
        check_svd(&fam, &G);
        /* Diagonal-ish: diag(1, 1e-8, 1e-16) plus off-diagonal entries of
         * 1e-16 … its σ are known to high relative accuracy for the exact
         * diagonal; there the relative error of every σ is checked. */
        double dd[3] = {test_range(&r, 0.5, 1), test_range(&r, 0.5, 1) * 1e-8,
                        sg * test_range(&r, 0.5, 1) * 1e-16};
        int perm = (int)(it % 3);
        defo_mat3 D = defo_m3_zero();
        for (int k = 0; k < 3; k++) D.m[(k + perm) % 3][(k + perm) % 3] = dd[k];
        s = check_svd(&dia, &D);
        double rel = fmax(fabs(s.x - dd[0]) / fabs(dd[0]),
                          fmax(fabs(s.y - dd[1]) / fabs(dd[1]), fabs(s.z - dd[2]) / fabs(dd[2])));
        if (rel / EPS > dia.worst_sigma) dia.worst_sigma = rel / EPS;
        if (!(rel <= C_BOUND * EPS)) family_fail(&dia, &D, "relative sigma error /eps", rel / EPS);
        D.m[0][1] = 1e-16 * test_range(&r, -1, 1);
        D.m[2][0] = 1e-16 * test_range(&r, -1, 1);
        check_svd(&dia, &D);
    }
    family_report(&fam);
    family_report(&dia);
}

/* Rotations, identity, −I (det −1: σ = (1, 1, −1)), zero. */
static void test_svd_special(void) {
    test_rng r = {5};
    family fam = family_make("rotations/I/-I/0");
    long n = TEST_HEAVY(100000L);
    for (long it = 0; it < n; it++) {
        defo_mat3 R = random_rotation(&r);
        defo_vec3 s = check_svd(&fam, &R);
        check_sigma_ref(&fam, &R, s, 1, 1, 1);
        /* polar of a rotation is itself with S = I. */
        defo_mat3 Rp, S;
        defo_polar3(&R, &Rp, &S);
        double e =
            defo_m3_fnorm(defo_m3_sub(Rp, R)) + defo_m3_fnorm(defo_m3_sub(S, defo_m3_identity()));
        /* Sum of two errors, each of a product of three matrices: 2·C. */
        if (!(e <= 2 * C_BOUND * EPS)) family_fail(&fam, &R, "polar of rotation /eps", e / EPS);
    }
    defo_mat3 I = defo_m3_identity();
    defo_vec3 s = check_svd(&fam, &I);
    CHECK(s.x == 1 && s.y == 1 && s.z == 1);
    defo_mat3 nI = defo_m3_scale(I, -1);
    s = check_svd(&fam, &nI);
    CHECK(s.x == 1 && s.y == 1 && s.z == -1);
    defo_mat3 Z = defo_m3_zero(), U, V;
    defo_svd3(&Z, &U, &s, &V);
    CHECK(s.x == 0 && s.y == 0 && s.z == 0);
    CHECK(defo_m3_fnorm(defo_m3_sub(U, I)) == 0 && defo_m3_fnorm(defo_m3_sub(V, I)) == 0);
    family_report(&fam);
}

/* ------------------------------------------------------------ polar */
/* R rotation, S exactly symmetric, R S = F (reference: F); for inverted F, S
 * has exactly one negative eigenvalue (trace of the sign convention). */
static void test_polar(void) {
    test_rng r = {8080};
    long n = TEST_HEAVY(100000L);
    double worst_rec = 0, worst_orth = 0;
    long bad = 0;
    for (long it = 0; it < n; it++) {
        defo_mat3 F = random_matrix(&r);
        if (it % 4 == 1) F = rot_diag_rot(&r, 1, 0.5, -1e-9);
        if (it % 4 == 2) F = rot_diag_rot(&r, 2, 2, 0);
        defo_mat3 R, S;
        defo_polar3(&F, &R, &S);
        double nf = defo_m3_fnorm(F);
        double rec = defo_m3_fnorm(defo_m3_sub(defo_m3_mul(R, S), F)) / (EPS * nf);
        double orth = (double)orth_err(&R) / EPS;
        double det = (double)det_ld(&R);
        worst_rec = fmax(worst_rec, rec);
        worst_orth = fmax(worst_orth, orth);
        int sym = S.m[0][1] == S.m[1][0] && S.m[0][2] == S.m[2][0] && S.m[1][2] == S.m[2][1];
        /* The product R S adds a few ε of its own: allow 2·C. */
        if (!(rec <= 2 * C_BOUND && orth <= C_BOUND && fabs(det - 1) <= C_BOUND * EPS && sym)) {
            if (bad++ < 5)
                fprintf(stderr, "  polar: rec %g orth %g det %.17g sym %d\n", rec, orth, det, sym);
        }
        /* det S = det F (det R = 1): sign preserved under inversion. */
        double dS = defo_m3_det(S), dF = defo_m3_det(F);
        if (fabs(dF) > 1e-6 * nf * nf * nf && (dS < 0) != (dF < 0)) bad++;
    }
    /* S may be NULL. */
    defo_mat3 F = defo_m3_diag(defo_v3(2, 3, -1)), R;
    defo_polar3(&F, &R, NULL);
    CHECK(fabs(defo_m3_det(R) - 1) <= 4 * EPS);
    TEST_REPORT("polar n=%ld worst/eps: R S - F %.2f, orth(R) %.2f", n, worst_rec, worst_orth);
    CHECK_MSG(bad == 0, "%ld polar failures", bad);
}

/* ------------------------------------------------------------ sym3 eigen */
static void check_eig(const defo_mat3 *A, double *worst_rec, double *worst_orth, long *bad) {
    defo_vec3 l;
    defo_mat3 Q;
    defo_sym3_eigen(A, &l, &Q);
    ld na = fnorm_ld(A);
    ld lv[3] = {l.x, l.y, l.z}, rec = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            ld x = 0;
            for (int k = 0; k < 3; k++) x += (ld)Q.m[i][k] * lv[k] * Q.m[j][k];
            x -= A->m[i][j];
            rec += x * x;
        }
    double rr = na > 0 ? (double)(sqrtl(rec) / (na * EPS)) : (double)sqrtl(rec);
    double ro = (double)(orth_err(&Q) / EPS);
    double rd = (double)(fabsl(det_ld(&Q) - 1) / EPS);
    *worst_rec = fmax(*worst_rec, rr);
    *worst_orth = fmax(*worst_orth, ro);
    int ok = defo_m3_isfinite(Q) && vec_finite(l) && rr <= C_BOUND && ro <= C_BOUND &&
             rd <= C_BOUND && l.x >= l.y && l.y >= l.z;
    if (!ok && (*bad)++ < 5)
        fprintf(stderr, "  sym3_eigen: rec %g orth %g det %g l = %g %g %g\n", rr, ro, rd, l.x, l.y,
                l.z);
}

static void test_sym3_eigen(void) {
    test_rng r = {1111};
    long n = TEST_HEAVY(200000L), bad = 0;
    double wr = 0, wo = 0, wl = 0;
    for (long it = 0; it < n; it++) {
        defo_mat3 A = random_matrix(&r);
        A = defo_m3_add(A, defo_m3_transpose(A)); /* symmetric, indefinite */
        check_eig(&A, &wr, &wo, &bad);
        /* Known spectrum, with ties and both signs: compare to the reference
         * eigenvalues (Weyl: error ≤ ‖δA‖ ≈ ε‖A‖). */
        double a = test_range(&r, -2, 2), b = test_range(&r, -2, 2);
        double specs[4][3] = {{a, a, b}, {a, b, b}, {a, a, a}, {a, b, 0}};
        for (int k = 0; k < 4; k++) {
            defo_mat3 Rm = random_rotation(&r);
            defo_mat3 B = defo_m3_mult(
                defo_m3_mul(Rm, defo_m3_diag(defo_v3(specs[k][0], specs[k][1], specs[k][2]))), Rm);
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < i; j++) B.m[i][j] = B.m[j][i];
            check_eig(&B, &wr, &wo, &bad);
            double e[3] = {specs[k][0], specs[k][1], specs[k][2]};
            for (int i = 0; i < 3; i++)
                for (int j = i + 1; j < 3; j++)
                    if (e[j] > e[i]) {
                        double t = e[i];
                        e[i] = e[j];
                        e[j] = t;
                    }
            defo_vec3 l;
            defo_mat3 Q;
            defo_sym3_eigen(&B, &l, &Q);
            double err = fmax(fabs(l.x - e[0]), fmax(fabs(l.y - e[1]), fabs(l.z - e[2]))) /
                         (EPS * defo_m3_fnorm(B));
            wl = fmax(wl, err);
            if (!(err <= C_BOUND) && bad++ < 5) fprintf(stderr, "  sym3 eigenvalue err %g\n", err);
        }
    }
    /* A = I, A = 0, A = diag with ties: exact answers, Q = I. */
    defo_vec3 l;
    defo_mat3 Q;
    defo_mat3 I = defo_m3_identity();
    defo_sym3_eigen(&I, &l, &Q);
    CHECK(l.x == 1 && l.y == 1 && l.z == 1 && defo_m3_fnorm(defo_m3_sub(Q, I)) == 0);
    defo_mat3 Z = defo_m3_zero();
    defo_sym3_eigen(&Z, &l, &Q);
    CHECK(l.x == 0 && l.y == 0 && l.z == 0 && defo_m3_fnorm(defo_m3_sub(Q, I)) == 0);
    defo_mat3 D = defo_m3_diag(defo_v3(-1, 3, 3));
    defo_sym3_eigen(&D, &l, &Q);
    CHECK(l.x == 3 && l.y == 3 && l.z == -1);
    CHECK_NEAR(defo_m3_det(Q), 1.0, 4 * EPS);
    /* Only the upper triangle is read. */
    defo_mat3 T = {{{2, 1, 0}, {1e300, 2, 0}, {-7, 5, 1}}};
    defo_sym3_eigen(&T, &l, &Q);
    CHECK_NEAR(l.x, 3.0, 8 * EPS);
    CHECK_NEAR(l.y, 1.0, 8 * EPS);
    CHECK_NEAR(l.z, 1.0, 8 * EPS);
    /* Extreme scales stay finite and accurate. */
    static const double sc[] = {1e-300, 1e300, 1e-150, 1e150};
    for (int k = 0; k < 4; k++) {
        defo_mat3 A = random_matrix(&r);
        A = defo_m3_scale(defo_m3_add(A, defo_m3_transpose(A)), sc[k]);
        check_eig(&A, &wr, &wo, &bad);
    }
    TEST_REPORT("sym3_eigen n=%ld worst/eps: recon %.2f orth %.2f eigenvalues %.2f", n * 5, wr, wo,
                wl);
    CHECK_MSG(bad == 0, "%ld sym3_eigen failures", bad);
}

/* Closed-form eigenvalues against the Jacobi ones (accurate to ε‖A‖) and
 * within the header's bound:
 * random symmetric matrices, known spectra with ties, and the edge cases
 * (I and 0 exact, huge scales through the iterative fallback, NaN kept). */
static void test_sym3_eigenvalues(void) {
    test_rng r = {2222};
    long n = TEST_HEAVY(100000L), bad = 0;
    double worst = 0;
    for (long it = 0; it < n; it++) {
        defo_mat3 A = random_matrix(&r);
        A = defo_m3_add(A, defo_m3_transpose(A));
        if (it % 2) { /* a known spectrum with a tie, rotated */
            const double a = test_range(&r, -2, 2), b = test_range(&r, -2, 2);
            const defo_mat3 Rm = random_rotation(&r);
            A = defo_m3_mult(defo_m3_mul(Rm, defo_m3_diag(defo_v3(a, a, b))), Rm);
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < i; j++) A.m[i][j] = A.m[j][i];
        }
        defo_vec3 l, e;
        defo_mat3 Q;
        defo_sym3_eigenvalues(&A, &l);
        defo_sym3_eigen(&A, &e, &Q);
        /* the documented bound: 1e-11 ‖A‖_F + 2 √(ε ‖A‖_F (λ₁ − λ₃)) */
        const double bound =
            1e-11 * defo_m3_fnorm(A) + 2.0 * sqrt(EPS * defo_m3_fnorm(A) * (e.x - e.z));
        const double err = fmax(fabs(l.x - e.x), fmax(fabs(l.y - e.y), fabs(l.z - e.z))) / bound;
        worst = fmax(worst, err);
        if (!(err <= 1 && l.x >= l.y && l.y >= l.z) && bad++ < 5)
            fprintf(stderr, "  sym3 eigenvalues: err %g (%g %g %g)\n", err, l.x, l.y, l.z);
    }
    defo_vec3 l;
    defo_mat3 I = defo_m3_identity(), Z = defo_m3_zero();
    defo_sym3_eigenvalues(&I, &l);
    CHECK(l.x == 1 && l.y == 1 && l.z == 1);
    defo_sym3_eigenvalues(&Z, &l);
    CHECK(l.x == 0 && l.y == 0 && l.z == 0);
    defo_mat3 H = defo_m3_diag(defo_v3(3e300, -1e300, 1e300));
    defo_sym3_eigenvalues(&H, &l);
    CHECK(l.x == 3e300 && l.y == 1e300 && l.z == -1e300);
    defo_mat3 N = I;
    N.m[0][1] = N.m[1][0] = NAN;
    defo_sym3_eigenvalues(&N, &l);
    CHECK(isnan(l.x) || isnan(l.y) || isnan(l.z));
    TEST_REPORT("sym3_eigenvalues n=%ld worst error / bound %.2f", n, worst);
    CHECK_MSG(bad == 0, "%ld sym3_eigenvalues failures", bad);
}

/* ------------------------------------------------------------ sym2 eigen */
/* Against the quadratic formula in long double, plus A v = hi v. */
static void check_sym2(double a, double b, double d, double *worst, long *bad) {
    double lo, hi, c, s;
    defo_sym2_eigen(a, b, d, &lo, &hi, &c, &s);
    ld m = ((ld)a + d) / 2, h = ((ld)a - d) / 2;
    ld rt = sqrtl(h * h + (ld)b * b);
    ld rhi = m + rt, rlo = m - rt;
    double scale = fmax(fabs(a), fmax(fabs(b), fabs(d)));
    if (scale == 0) scale = 1;
    double e1 = (double)fmaxl(fabsl(hi - rhi), fabsl(lo - rlo)) / (EPS * scale);
    /* Residual of the eigenvector and its norm. */
    double rx = (a * c + b * s - hi * c) / scale, ry = (b * c + d * s - hi * s) / scale;
    double e2 = sqrt(rx * rx + ry * ry) / EPS;
    double e3 = fabs(c * c + s * s - 1) / EPS;
    double e = fmax(e1, fmax(e2, e3));
    if (e > *worst) *worst = e;
    if (!(e <= 8 && lo <= hi) && (*bad)++ < 5)
        fprintf(stderr, "  sym2 (%g %g %g): err/eps %g %g %g\n", a, b, d, e1, e2, e3);
}

static void test_sym2_eigen(void) {
    test_rng r = {2024};
    double worst = 0;
    long bad = 0, n = TEST_HEAVY(200000L);
    for (long it = 0; it < n; it++) {
        double a = test_range(&r, -1, 1), b = test_range(&r, -1, 1), d = test_range(&r, -1, 1);
        check_sym2(a, b, d, &worst, &bad);
        check_sym2(a, b * 1e-12, d, &worst, &bad);     /* b → 0 */
        check_sym2(a, b, a + 1e-14 * d, &worst, &bad); /* a → d */
        check_sym2(a, b, -a, &worst, &bad);            /* zero trace */
        check_sym2(a * 1e200, b * 1e200, d * 1e200, &worst, &bad);
        check_sym2(a * 1e-200, b * 1e-200, d * 1e-200, &worst, &bad);
    }
    static const double special[][3] = {{0, 0, 0}, {1, 0, 1}, {1, 0, 2},   {2, 0, 1},
                                        {0, 1, 0}, {1, 1, 1}, {-1, 0, -1}, {3, -2, 3}};
    for (int k = 0; k < 8; k++)
        check_sym2(special[k][0], special[k][1], special[k][2], &worst, &bad);
    double lo, hi, c, s;
    defo_sym2_eigen(2, 0, 1, &lo, &hi, &c, &s);
    CHECK(hi == 2 && lo == 1 && fabs(c) == 1 && s == 0);
    defo_sym2_eigen(1, 0, 2, &lo, &hi, &c, &s);
    CHECK(hi == 2 && lo == 1 && c == 0 && fabs(s) == 1);
    TEST_REPORT("sym2_eigen worst error / (eps max|entry|) = %.2f", worst);
    CHECK_MSG(bad == 0, "%ld sym2_eigen failures", bad);
}

/* defo_symn_eigen on A = R diag(λ) Rᵀ with a known spectrum (R a product of
 * random plane rotations, λ random with repeats and zeros), n = 1 … 16:
 * the sorted eigenvalues against λ within 1e-13 max|λ| (orthogonal
 * transformations: backward error O(ε ‖A‖), and Weyl's bound carries it to
 * the eigenvalues), Q Λ Qᵀ = A and QᵀQ = I, the eigenvalues alone (Q NULL)
 * bitwise the same; n = 0 and 17 refused. */
static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_symn_eigen(void) {
    test_rng r = {77};
    double werr = 0, wrec = 0, worth = 0;
    long bad = 0;
    int wsweeps = 0;
    for (int it = 0; it < TEST_HEAVY(400); it++) {
        const int n = 1 + it % 16;
        double lam[16], R[256], A[256], B[256], Q[256], got[16], got2[16];
        for (int i = 0; i < n; i++) {
            const int kind = (int)(test_range(&r, 0, 4));
            lam[i] = kind == 0 ? 0.0 : kind == 1 && i > 0 ? lam[i - 1] : test_range(&r, -3, 3);
        }
        for (int i = 0; i < n * n; i++) R[i] = 0;
        for (int i = 0; i < n; i++) R[i * n + i] = 1;
        for (int k = 0; k < 3 * n; k++) { /* R ← R G(p, q, φ) */
            const int p = (int)test_range(&r, 0, n), q = (int)test_range(&r, 0, n);
            if (p == q || p >= n || q >= n) continue;
            const double phi = test_range(&r, -3.14, 3.14), c = cos(phi), sn = sin(phi);
            for (int i = 0; i < n; i++) {
                const double a = R[i * n + p], b = R[i * n + q];
                R[i * n + p] = c * a - sn * b;
                R[i * n + q] = sn * a + c * b;
            }
        }
        double big = 0;
        for (int i = 0; i < n; i++) big = fmax(big, fabs(lam[i]));
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = 0;
                for (int k = 0; k < n; k++) s += R[i * n + k] * lam[k] * R[j * n + k];
                A[i * n + j] = s;
            }
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) A[j * n + i] = A[i * n + j];
        memcpy(B, A, sizeof A);
        const int sweeps = defo_symn_eigen(n, B, got, Q);
        wsweeps = sweeps > wsweeps ? sweeps : wsweeps;
        memcpy(B, A, sizeof A);
        defo_symn_eigen(n, B, got2, NULL);
        if (memcmp(got, got2, (size_t)n * sizeof *got)) bad++;
        double rec = 0, orth = 0;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                double s = 0, o = 0;
                for (int k = 0; k < n; k++) {
                    s += Q[i * n + k] * got[k] * Q[j * n + k];
                    o += Q[k * n + i] * Q[k * n + j];
                }
                rec = fmax(rec, fabs(s - A[i * n + j]));
                orth = fmax(orth, fabs(o - (i == j)));
            }
        qsort(got, (size_t)n, sizeof *got, cmp_double);
        qsort(lam, (size_t)n, sizeof *lam, cmp_double);
        double err = 0;
        for (int i = 0; i < n; i++) err = fmax(err, fabs(got[i] - lam[i]));
        const double scale = big > 0 ? big : 1;
        werr = fmax(werr, err / scale), wrec = fmax(wrec, rec / scale), worth = fmax(worth, orth);
        if (!(err <= 1e-13 * scale) || !(rec <= 1e-13 * scale) || !(orth <= 1e-13)) bad++;
    }
    TEST_REPORT("symn_eigen n = 1..16: eigenvalues %.2g, Q L Qt - A %.2g (relative), QtQ - I "
                "%.2g, at most %d QR steps",
                werr, wrec, worth, wsweeps);
    CHECK_MSG(bad == 0, "%ld symn_eigen failures", bad);
    double Z[289] = {0}, lz[17];
    CHECK(defo_symn_eigen(17, Z, lz, NULL) == -1 && defo_symn_eigen(0, Z, lz, NULL) == -1);
}

int main(void) {
    RUN(test_svd_special);
    RUN(test_svd_rank_deficient);
    RUN(test_svd_repeated);
    RUN(test_svd_reflections);
    RUN(test_svd_scales);
    RUN(test_svd_nearly_inverted);
    RUN(test_svd_graded);
    RUN(test_svd_random);
    RUN(test_polar);
    RUN(test_sym3_eigen);
    RUN(test_sym3_eigenvalues);
    RUN(test_sym2_eigen);
    RUN(test_symn_eigen);
    return test_summary();
}
