/*
 * math/decomp.c — the robust 3×3 decompositions every formulation rests on
 * (ITF04 §5 and §5.1): symmetric eigen-decomposition, the SVD with the
 * inversion sign convention, the polar decomposition built from it, and the
 * closed-form symmetric 2×2 eigen-problem.
 *
 * SVD algorithm (ITF04 §5, made accurate for widely spread σ):
 *   1. Prescale F by a power of two (exact) when its largest entry is outside
 *      [2^-100, 2^100], so squares of entries neither overflow nor underflow.
 *   2. A = FᵀF; cyclic Jacobi with exact rotations gives V (ITF04 §5's
 *      "normal equations").  A alone is not enough: its small eigenvalues
 *      carry an absolute error ε·σ₁², so a reconstruction through it is only
 *      ε·σ₁/σ₂ accurate.
 *      Fast path (defo_svd_fast_v, taken by all but ~1e-6 of random F): V
 *      from the closed-form eigen-decomposition of A (trigonometric cubic,
 *      cross products of rows of A − λI), skipping the Jacobi sweeps; when an
 *      eigenvalue gap of A is below 1e-4·λ₁ (repeated σ, rotations) or
 *      anything is non-finite, the Jacobi sweeps run as described.  After the
 *      fast path one simultaneous small-angle sweep (defo_hestenes_polish)
 *      precedes the cyclic sweeps of step 3, which still decide convergence.
 *   3. B = F V, then one-sided (Hestenes) Jacobi sweeps on B's columns, with
 *      the same rotations applied to V, until every pair of columns is
 *      orthogonal to relative precision ε (usually one sweep of tiny angles).
 *      Each rotation reads the Gram entries from the columns themselves, so
 *      small columns lose no relative accuracy: F = B Vᵀ holds to ε‖F‖ and
 *      the columns of B are σᵢuᵢ.  Columns at the rounding level of F
 *      (|b| ≤ ε‖F‖, rank-deficient F) are left alone: their direction is
 *      noise and orthogonalising it would never converge.
 *   4. Sort columns by norm (descending); each swap negates one column of both
 *      B and V so that det V stays +1 and B = F V still holds.
 *   5. u₁ = b₁/|b₁|; u₂ = b₂ minus its u₁ component, normalised, with a second
 *      Gram–Schmidt pass when the first cancels ("twice is enough"), or any
 *      unit vector ⟂ u₁ when b₂ is numerically in span(u₁) (a flat element,
 *      ITF04 §5); u₃ = u₁ × u₂, so det U = +1 by construction.  σ₁ = |b₁|,
 *      σ₂ = u₂·b₂ ≥ 0 and σ₃ = u₃·b₃ signed: it is negative exactly when
 *      det F < 0, and it is the σ of smallest magnitude — the ITF04 §5
 *      convention, obtained without any separate sign fix.
 *
 * Invariants of the outputs, for every finite input: U and V are rotations
 * (orthonormal to a few ε, det +1), σ₁ ≥ σ₂ ≥ |σ₃|, σ₂ ≥ 0, no NaN/Inf (up to
 * σ overflow for entries near DBL_MAX), F = 0 gives U = V = I, σ = 0.
 * Measured (tests/test_math.c): ‖U diag(σ) Vᵀ − F‖ ≤ 9ε‖F‖, ‖UᵀU − I‖ ≤ 14ε.
 *
 * Jacobi rotation (Golub & Van Loan §8.5; Numerical Recipes jacobi): for the
 * 2×2 Gram block [[α, γ], [γ, β]] with τ = β − α the rotation angle satisfies
 * t = tan θ = sgn(τ)·2γ / (|τ| + √(τ² + 4γ²)) (the smaller root, |θ| ≤ π/4).
 * With r = √(τ²+4γ²), h = |τ| + r one has 1 + t² = 2rh/h², so q = 1/√(2rh)
 * gives c = h·q, s = sgn(τ)·2γ·q and t = s/c = sgn(τ)·2γ·2r·q²: no
 * trigonometry, two square roots and one division.  Small angles (|2γ/τ| <
 * 2^-10, every rotation after the first two sweeps) use a truncated series
 * with one division instead.  The whole thing is latency-bound (each rotation
 * feeds the next), so the formulas are arranged for short dependency chains.
 */
#include "defo/math.h"

#include <float.h>
#include <stdbool.h>

/* Stopping tests.  A pair (p, q) is left alone when γ² ≤ tol²·α·β: the
 * columns are orthogonal to relative precision tol (Demmel & Veselić's test,
 * which keeps relative accuracy of small singular values). */
#define DEFO_EIG_TOL (0.5 * DBL_EPSILON)
#define DEFO_SVD_TOL (0.5 * DBL_EPSILON)
/* The eigen-phase of the SVD only preconditions the one-sided sweeps, which
 * converge quadratically from it and do the final ε polish themselves, so it
 * stops at √ε-ish: that saves about one of its ~4 sweeps. */
#define DEFO_SVD_ATOL 0x1p-30
/* Sweep caps: cyclic Jacobi converges quadratically, 3×3 needs ~3-4 sweeps;
 * the caps only bound the work for pathological rounding. */
#define DEFO_EIG_MAX_SWEEPS 12
#define DEFO_SVD_A_SWEEPS   12
#define DEFO_SVD_H_SWEEPS   6
/* 2rh below this means the whole 2×2 block is at the bottom of the exponent
 * range after prescaling (≤ 2^-400 relative to the largest entry): it cannot
 * affect any result above ε and its rotation could underflow, so skip it. */
#define DEFO_ROT_TINY 0x1p-900

/* Rotation (c, s, t) annihilating γ in [[α, γ], [γ, β]]; false when nothing
 * needs doing (γ negligible or the block is at the underflow threshold). */
static inline bool defo_jacobi_rot(double alpha, double beta, double gamma, double tol, double *c,
                                   double *s, double *t) {
    if (gamma * gamma <= tol * tol * fabs(alpha * beta)) return false;
    double tau = beta - alpha;
    double g2 = 2.0 * gamma;
    if (fabs(g2) < 0x1p-10 * fabs(tau)) {
        /* Small angle (most rotations after the first sweep): with
         * z = 2γ/τ = tan 2θ, |z| < 2^-10, the series
         *   t = tan(½ atan z) = z/2 − z³/8 + z⁵/16 − …,  c = 1 − t²/2 + 3t⁴/8 − …
         * truncated as below are exact to < 1e-19 relative, so c² + s² = 1 to
         * rounding, at the cost of one division instead of two square roots
         * and a division. */
        double z = g2 / tau;
        double z2 = z * z;
        double tt = z * (0.5 - z2 * (0.125 - 0.0625 * z2));
        double t2 = tt * tt;
        double cc = 1.0 - t2 * (0.5 - 0.375 * t2);
        *c = cc;
        *s = tt * cc;
        *t = tt;
        return true;
    }
    double r = sqrt(tau * tau + g2 * g2);
    double h = fabs(tau) + r;
    double rh2 = 2.0 * r * h;
    if (!(rh2 > DEFO_ROT_TINY)) return false;
    /* q = 1/√(2rh) as √x·(1/x): the square root and the division run in
     * parallel instead of back to back (this loop is latency-bound). */
    double inv = 1.0 / rh2;
    double q = sqrt(rh2) * inv;
    double sg = tau < 0 ? -g2 : g2;
    *c = h * q;
    *s = sg * q;
    *t = sg * (2.0 * r * inv);
    return true;
}

/* Rotate the pair of 3-vectors (x, y) → (c x − s y, s x + c y). */
static inline void defo_rot_cols(double *x, double *y, double c, double s) {
    for (int i = 0; i < 3; i++) {
        double xi = x[i], yi = y[i];
        x[i] = c * xi - s * yi;
        y[i] = s * xi + c * yi;
    }
}

/* Largest |entry| of a 3×3 given as 9 doubles. */
static inline double defo_maxabs9(const double *a) {
    double m = 0;
    for (int i = 0; i < 9; i++) {
        double x = fabs(a[i]);
        m = x > m ? x : m; /* not fmax(): that is a libm call (NaN rules) */
    }
    return m;
}

/* Scale the n entries of a by a power of two bringing their largest
 * magnitude m into [1, 2) when m is outside [lo, hi]; *unscale receives the
 * inverse factor.  Exact (no significand changes) barring entries that become
 * subnormal, which are then below 2^-1000 relative to m.  Two steps when the
 * factor itself is not representable (m subnormal). */
static inline void defo_prescale(double *a, int n, double m, double lo, double hi,
                                 double *unscale) {
    *unscale = 1.0;
    if (m >= lo && m <= hi) return;
    int e;
    (void)frexp(m, &e); /* m = f·2^e, f in [0.5, 1) */
    e -= 1;
    *unscale = ldexp(1.0, e);
    if (e < -1000) {
        for (int i = 0; i < n; i++) a[i] *= 0x1p600;
        e += 600;
    }
    double s = ldexp(1.0, -e);
    for (int i = 0; i < n; i++) a[i] *= s;
}

/* One Jacobi rotation of the symmetric matrix a in the (p, q) plane (r is the
 * third index), accumulated into the columns vc[p], vc[q].  Called with
 * constant indices so that, inlined, everything stays in registers. */
static inline bool defo_jacobi_pq(double a[3][3], double vc[3][3], int p, int q, int r,
                                  double tol) {
    double c, s, t;
    if (!defo_jacobi_rot(a[p][p], a[q][q], a[p][q], tol, &c, &s, &t)) return false;
    double apq = a[p][q];
    a[p][p] -= t * apq;
    a[q][q] += t * apq;
    a[p][q] = a[q][p] = 0.0;
    double arp = a[r][p], arq = a[r][q];
    a[r][p] = a[p][r] = c * arp - s * arq;
    a[r][q] = a[q][r] = s * arp + c * arq;
    defo_rot_cols(vc[p], vc[q], c, s);
    return true;
}

/* Cyclic Jacobi on the symmetric matrix a (3×3, both triangles kept in
 * sync), accumulating the rotations into the columns of vc (vc[k] = k-th
 * column).  Diagonal entries end up as eigenvalues. */
static inline void defo_jacobi_sym(double a[3][3], double vc[3][3], double tol, int max_sweeps) {
    for (int sweep = 0; sweep < max_sweeps; sweep++) {
        bool r01 = defo_jacobi_pq(a, vc, 0, 1, 2, tol);
        bool r02 = defo_jacobi_pq(a, vc, 0, 2, 1, tol);
        bool r12 = defo_jacobi_pq(a, vc, 1, 2, 0, tol);
        if (!(r01 | r02 | r12)) break;
    }
}

/* One-sided (Hestenes) rotation of columns p, q of b (and of v): the Gram
 * entries are read from the columns themselves, which is what keeps the
 * relative accuracy of small columns. */
static inline bool defo_hestenes_pq(double b[3][3], double v[3][3], int p, int q, double tol,
                                    double noise2) {
    double c, s, t;
    double alpha = b[p][0] * b[p][0] + b[p][1] * b[p][1] + b[p][2] * b[p][2];
    double beta = b[q][0] * b[q][0] + b[q][1] * b[q][1] + b[q][2] * b[q][2];
    /* A column at the rounding level of F (|b|² ≤ noise2 = (ε‖F‖)²) has a
     * direction made of rounding errors: orthogonalising it is meaningless
     * (and never converges).  Leaving it costs at most its norm, ε‖F‖, in
     * the reconstruction; U still gets an orthonormal column for it. */
    if (alpha <= noise2 || beta <= noise2) return false;
    double gamma = b[p][0] * b[q][0] + b[p][1] * b[q][1] + b[p][2] * b[q][2];
    if (!defo_jacobi_rot(alpha, beta, gamma, tol, &c, &s, &t)) return false;
    defo_rot_cols(b[p], b[q], c, s);
    defo_rot_cols(v[p], v[q], c, s);
    return true;
}

/* Compare-swap step of a 3-element descending sort of key, carrying the
 * columns of v (and of b when given) along; the column moved to j is negated
 * so that det V stays +1 (and B = F V still holds). */
static inline void defo_sort_step(double key[3], double v[3][3], double b[3][3], int i, int j) {
    if (!(key[i] < key[j])) return;
    double tk = key[i];
    key[i] = key[j];
    key[j] = tk;
    for (int k = 0; k < 3; k++) {
        double tv = v[i][k];
        v[i][k] = v[j][k];
        v[j][k] = -tv;
    }
    if (b)
        for (int k = 0; k < 3; k++) {
            double tb = b[i][k];
            b[i][k] = b[j][k];
            b[j][k] = -tb;
        }
}

static inline double defo_dot3(const double *x, const double *y) {
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
}

/* Any unit vector orthogonal to the unit vector u: Gram–Schmidt of the
 * coordinate axis least aligned with u (|w|² ≥ 2/3, no cancellation). */
static inline void defo_any_orthogonal(const double *u, double *w) {
    double ax = fabs(u[0]), ay = fabs(u[1]), az = fabs(u[2]);
    int k = ax <= ay ? (ax <= az ? 0 : 2) : (ay <= az ? 1 : 2);
    for (int i = 0; i < 3; i++) w[i] = -u[k] * u[i];
    w[k] += 1.0;
    double n = 1.0 / sqrt(defo_dot3(w, w));
    for (int i = 0; i < 3; i++) w[i] *= n;
}

void defo_sym3_eigen(const defo_mat3 *A, defo_vec3 *lambda, defo_mat3 *Q) {
    double a[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++) a[i][j] = a[j][i] = A->m[i][j];
    double unscale;
    defo_prescale(&a[0][0], 9, defo_maxabs9(&a[0][0]), 0x1p-200, 0x1p200, &unscale);
    double vc[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    defo_jacobi_sym(a, vc, DEFO_EIG_TOL, DEFO_EIG_MAX_SWEEPS);

    /* Sort descending; every swap negates a column so det Q stays +1 (the
     * Jacobi product of rotations starts with det +1). */
    double l[3] = {a[0][0], a[1][1], a[2][2]};
    defo_sort_step(l, vc, NULL, 0, 1);
    defo_sort_step(l, vc, NULL, 0, 2);
    defo_sort_step(l, vc, NULL, 1, 2);
    *lambda = defo_v3(l[0] * unscale, l[1] * unscale, l[2] * unscale);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) Q->m[i][j] = vc[j][i];
}

/* Eigenvector of the symmetric 3×3 with deviator rows (d0, o01, o02),
 * (o01, d1, o12), (o02, o12, d2) for the eigenvalue q + e (q the mean of the
 * diagonal): the largest of the three cross products of two rows of
 * A − λI = D − eI (every row of its adjugate is a multiple of the null
 * vector; the largest has norm ≥ |μ₂μ₃|/√3, μ the two other shifted
 * eigenvalues).  Branch-free selection; *n2 receives its squared norm. */
static inline void defo_null3(double d0, double d1, double d2, double o01, double o02, double o12,
                              double e, double w[3], double *n2) {
    double x0 = d0 - e, x1 = d1 - e, x2 = d2 - e;
    /* rows r0 = (x0, o01, o02), r1 = (o01, x1, o12), r2 = (o02, o12, x2) */
    double cp[3][3] = {{o01 * o12 - o02 * x1, o02 * o01 - x0 * o12, x0 * x1 - o01 * o01},
                       {o01 * x2 - o02 * o12, o02 * o02 - x0 * x2, x0 * o12 - o01 * o02},
                       {x1 * x2 - o12 * o12, o12 * o02 - o01 * x2, o01 * o12 - x1 * o02}};
    double nn[3];
    for (int k = 0; k < 3; k++) nn[k] = defo_dot3(cp[k], cp[k]);
    /* The choice is data-dependent and unpredictable: select by index
     * (integer conditional moves), not by branches. */
    int k = nn[1] > nn[0];
    k = nn[2] > nn[k] ? 2 : k;
    for (int i = 0; i < 3; i++) w[i] = cp[k][i];
    *n2 = nn[k];
}

/* Coefficients (of u⁰ … u¹³) of the polynomials g and h of defo_svd_fast_v. */
static const double defo_svd_gc[14] = {
    0.5000000000002465,      0.5773502690903707,   -0.11111110445016,     0.053458181089965445,
    -0.032919331438991124,   0.02284728328023193,  -0.016953377114318647, 0.01291650081790104,
    -0.009573562284440985,   0.006399278902146793, -0.003518936501270401, 0.0014314086353252506,
    -0.00037229589836521574, 4.568587153934618e-05};
static const double defo_svd_hc[14] = {
    0.8660254037808718,    -0.333333331893419,    0.24056251525692865,  -0.1975282777645873,
    0.17147588207279563,   -0.15332530496494384,  0.1386457401341702,   -0.12326066866599383,
    0.10250324100478454,   -0.07427220193796912,  0.043110119950002926, -0.01817353791024792,
    0.0048409519456199335, -0.0006038643438983734};

/* Σ c[k]·u^k, k = 0 … 13, by Estrin's scheme (short dependency chain). */
static inline double defo_poly13(double u, const double c[14]) {
    double u2 = u * u, u4 = u2 * u2, u8 = u4 * u4;
    double p0 = c[0] + c[1] * u, p1 = c[2] + c[3] * u, p2 = c[4] + c[5] * u;
    double p3 = c[6] + c[7] * u, p4 = c[8] + c[9] * u, p5 = c[10] + c[11] * u;
    double p6 = c[12] + c[13] * u;
    double q0 = p0 + p1 * u2, q1 = p2 + p3 * u2, q2 = p4 + p5 * u2;
    return (q0 + q1 * u4) + (q2 + p6 * u4) * u8;
}

/* Relative eigenvalue gap of A = FᵀF below which the closed form is not
 * trusted (its eigenvectors are accurate to ~ε·λ₁²/(gap·(λ₁−λ₃)) only). */
#define DEFO_SVD_FAST_GAP 1e-4

/* The trigonometric core shared by defo_svd_fast_v and
 * defo_sym3_eigenvalues: for D = A − qI (diagonal d, off-diagonal o) with
 * p2 = ‖D‖²_F = 6p² (normal, > 0), p and φ's cosine c and sine s. */
static inline void defo_sym3_trig(double d0, double d1, double d2, double o01, double o02,
                                  double o12, double p2, double *pp, double *cp, double *sp_out) {
    double det =
        d0 * (d1 * d2 - o12 * o12) - o01 * (o01 * d2 - o12 * o02) + o02 * (o01 * o12 - d1 * o02);
    /* r = det/(2p³) = 3√6·det·√(6p²)/(6p²)²: the square root and the division
     * run in parallel. */
    double sp = sqrt(p2);
    double ip = 1.0 / (p2 * p2);
    double r = 7.3484692283495342946 * det * (sp * ip);
    r = r > 1.0 ? 1.0 : r;
    r = r < -1.0 ? -1.0 : r;
    /* c = cos φ, s = sin φ for φ = acos(r)/3 without libm trigonometry (its
     * latency was over half the fast path): with 2ψ = acos r,
     * u = cos ψ = √((1+r)/2) and w = sin ψ = √((1−r)/2), c = g(u) and
     * s = w·h(u) where g(u) = cos(2ψ/3) and h(u) = sin(2ψ/3)/sin ψ are
     * analytic on [0, 1]: degree-13 polynomials (Chebyshev interpolants)
     * give them to 2.5e-13 and 3.6e-12.  That is far more than the fast
     * path needs — V only has to be accurate enough for the polish sweep to
     * converge — and NaN r fails the gap test below. */
    double u = sqrt(0.5 + 0.5 * r), w = sqrt(0.5 - 0.5 * r);
    *cp = defo_poly13(u, defo_svd_gc);
    *sp_out = w * defo_poly13(u, defo_svd_hc);
    *pp = sp * 0.40824829046386301637; /* √(p2/6) */
}

/* Fast path for the eigenvectors of A = FᵀF (columns v[k], a rotation):
 * eigenvalues from the trigonometric solution of the characteristic cubic
 * (Smith 1961): with q = tr A/3, D = A − qI, 6p² = ‖D‖²_F and
 * r = det(D)/(2p³) = cos 3φ, the eigenvalues are q + 2p cos(φ + 2πk/3).
 * v₁ and v₃ (largest and smallest) come from cross products of rows of
 * A − λI, v₃ is orthogonalised against v₁ and v₂ = v₃ × v₁, so V is a
 * rotation to a few ε.  Returns false (v untouched) for the hard cases: a
 * relative eigenvalue gap below DEFO_SVD_FAST_GAP (repeated σ, rotations,
 * near-multiples of a rotation) or anything non-finite; the cyclic Jacobi
 * path handles those.  The accuracy of V only decides how many one-sided
 * sweeps follow: their stopping test is what makes the result accurate. */
static inline bool defo_svd_fast_v(double a[3][3], double v[3][3]) {
    double q = (a[0][0] + a[1][1] + a[2][2]) * (1.0 / 3.0);
    double d0 = a[0][0] - q, d1 = a[1][1] - q, d2 = a[2][2] - q;
    double o01 = a[0][1], o02 = a[0][2], o12 = a[1][2];
    double p2 = d0 * d0 + d1 * d1 + d2 * d2 + 2.0 * (o01 * o01 + o02 * o02 + o12 * o12); /* 6p² */
    /* Gaps ≥ 1e-4·λ₁ imply 6p² ≥ (λ₁ − λ₃)²/2 ≥ 5e-9·q²; this also keeps p2²
     * (below) normal and excludes NaN. */
    if (!(p2 > 0x1p-40 * q * q)) return false;
    double p, c, s;
    defo_sym3_trig(d0, d1, d2, o01, o02, o12, p2, &p, &c, &s);
    double e1 = 2.0 * p * c;                          /* λ₁ − q */
    double e3 = -p * (c + 1.7320508075688772935 * s); /* λ₃ − q */
    double lam1 = q + e1;
    double g12 = p * (3.0 * c - 1.7320508075688772935 * s); /* λ₁ − λ₂ = 2√3 p sin(π/3 − φ) */
    double g23 = 3.4641016151377545871 * p * s;             /* λ₂ − λ₃ = 2√3 p sin φ */
    double gmin = g12 < g23 ? g12 : g23;
    if (!(gmin >= DEFO_SVD_FAST_GAP * lam1)) return false;
    double w1[3], w3[3], n1, n3;
    defo_null3(d0, d1, d2, o01, o02, o12, e1, w1, &n1);
    defo_null3(d0, d1, d2, o01, o02, o12, e3, w3, &n3);
    if (!(n1 > 0x1p-900 && n3 > 0x1p-900 && n1 < 0x1p900 && n3 < 0x1p900)) return false;
    /* w₃ ⟂ w₁ (one Gram–Schmidt step; they are orthogonal up to the
     * eigenvector error), then normalise both: 1/√n as √n·(1/n), in parallel. */
    double g = defo_dot3(w3, w1), pr = g / n1;
    for (int i = 0; i < 3; i++) w3[i] -= pr * w1[i];
    n3 -= pr * g; /* |w₃ − pr·w₁|² without a dependent dot: pr·g ≪ n3 */
    double s1 = sqrt(n1) * (1.0 / n1), s3 = sqrt(n3) * (1.0 / n3);
    for (int i = 0; i < 3; i++) {
        v[0][i] = w1[i] * s1;
        v[2][i] = w3[i] * s3;
    }
    v[1][0] = v[2][1] * v[0][2] - v[2][2] * v[0][1];
    v[1][1] = v[2][2] * v[0][0] - v[2][0] * v[0][2];
    v[1][2] = v[2][0] * v[0][1] - v[2][1] * v[0][0];
    return true;
}

void defo_sym3_eigenvalues(const defo_mat3 *A, defo_vec3 *lambda) {
    const double(*a)[3] = A->m;
    const double m = defo_maxabs9(&A->m[0][0]);
    if (m > 0x1p200 || (m > 0 && m < 0x1p-200)) { /* squares out of range: iterate */
        defo_mat3 Q;
        defo_sym3_eigen(A, lambda, &Q);
        return;
    }
    double q = (a[0][0] + a[1][1] + a[2][2]) * (1.0 / 3.0);
    double d0 = a[0][0] - q, d1 = a[1][1] - q, d2 = a[2][2] - q;
    double o01 = a[0][1], o02 = a[0][2], o12 = a[1][2];
    double p2 = d0 * d0 + d1 * d1 + d2 * d2 + 2.0 * (o01 * o01 + o02 * o02 + o12 * o12);
    /* a spread below 2^-40 m: all three are q, to that; NaN stays NaN */
    if (!(p2 > 0x1p-80 * m * m)) {
        *lambda = defo_v3(q + 0.0 * p2, q + 0.0 * p2, q + 0.0 * p2);
        return;
    }
    double p, c, s;
    defo_sym3_trig(d0, d1, d2, o01, o02, o12, p2, &p, &c, &s);
    const double l1 = q + 2.0 * p * c, l3 = q - p * (c + 1.7320508075688772935 * s);
    double l2 = 3.0 * q - l1 - l3; /* the trace */
    l2 = l2 > l1 ? l1 : l2;
    l2 = l2 < l3 ? l3 : l2;
    *lambda = defo_v3(l1, l2, l3);
}

/* Small-angle rotation of the Gram pair (α, β, γ), z = 2γ/(β − α) given
 * (|z| < 2^-10): the series of defo_jacobi_rot; (c, s) = (1, 0) exactly when
 * the pair already passes the stopping test. */
static inline void defo_small_rot(double alpha, double beta, double gamma, double z, double *c,
                                  double *s) {
    double z2 = z * z;
    double tt = z * (0.5 - z2 * (0.125 - 0.0625 * z2));
    double t2 = tt * tt;
    double cc = 1.0 - t2 * (0.5 - 0.375 * t2);
    bool keep = gamma * gamma <= DEFO_SVD_TOL * DEFO_SVD_TOL * fabs(alpha * beta);
    *c = keep ? 1.0 : cc;
    *s = keep ? 0.0 : tt * cc;
}

/* First one-sided sweep after the fast path: V is already accurate, so all
 * three angles are tiny.  They are computed at once from the Gram matrix of
 * B (three independent divisions instead of a chain of three rotations) and
 * then applied in the cyclic order; using the pre-sweep Gram entries for the
 * later pairs only changes their angles by a product of two small angles,
 * so the sweep still converges quadratically, and the cyclic sweeps that
 * follow decide convergence exactly as before.  Skipped (returns without
 * touching b, v) when a column is at the noise level or an angle is not
 * small. */
static inline void defo_hestenes_polish(double b[3][3], double v[3][3], double noise2) {
    double g00 = defo_dot3(b[0], b[0]), g11 = defo_dot3(b[1], b[1]), g22 = defo_dot3(b[2], b[2]);
    double g01 = defo_dot3(b[0], b[1]), g02 = defo_dot3(b[0], b[2]), g12 = defo_dot3(b[1], b[2]);
    double t01 = g11 - g00, t02 = g22 - g00, t12 = g22 - g11;
    double z01 = 2.0 * g01 / t01, z02 = 2.0 * g02 / t02, z12 = 2.0 * g12 / t12;
    double zm = fabs(z01) > fabs(z02) ? fabs(z01) : fabs(z02);
    zm = fabs(z12) > zm ? fabs(z12) : zm;
    double gm = g00 < g11 ? g00 : g11;
    gm = g22 < gm ? g22 : gm;
    if (!(zm < 0x1p-10 && gm > noise2)) return;
    double c01, s01, c02, s02, c12, s12;
    defo_small_rot(g00, g11, g01, z01, &c01, &s01);
    defo_small_rot(g00, g22, g02, z02, &c02, &s02);
    defo_small_rot(g11, g22, g12, z12, &c12, &s12);
    defo_rot_cols(b[0], b[1], c01, s01);
    defo_rot_cols(v[0], v[1], c01, s01);
    defo_rot_cols(b[0], b[2], c02, s02);
    defo_rot_cols(v[0], v[2], c02, s02);
    defo_rot_cols(b[1], b[2], c12, s12);
    defo_rot_cols(v[1], v[2], c12, s12);
}

void defo_svd3(const defo_mat3 *F, defo_mat3 *U, defo_vec3 *sigma, defo_mat3 *V) {
    double f[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) f[i][j] = F->m[i][j];
    double m = defo_maxabs9(&f[0][0]);
    if (!(m > 0)) { /* F = 0 (ITF04 §5: U = I) */
        *U = defo_m3_identity();
        *V = defo_m3_identity();
        *sigma = defo_v3(0, 0, 0);
        return;
    }
    double unscale;
    defo_prescale(&f[0][0], 9, m, 0x1p-100, 0x1p100, &unscale);

    /* A = FᵀF and its eigenvectors V (columns v[k]). */
    double a[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++)
            a[i][j] = a[j][i] = f[0][i] * f[0][j] + f[1][i] * f[1][j] + f[2][i] * f[2][j];
    double v[3][3];
    bool fast = defo_svd_fast_v(a, v);
    if (!fast) {
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) v[i][j] = i == j;
        defo_jacobi_sym(a, v, DEFO_SVD_ATOL, DEFO_SVD_A_SWEEPS);
    }

    /* B = F V, stored by columns: b[k] = F v[k]. */
    double b[3][3];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 3; i++)
            b[k][i] = f[i][0] * v[k][0] + f[i][1] * v[k][1] + f[i][2] * v[k][2];

    /* One-sided Jacobi: orthogonalise B's columns to relative precision. */
    double noise2 = DBL_EPSILON * DBL_EPSILON * (a[0][0] + a[1][1] + a[2][2]); /* ε²‖F‖² */
    if (fast) defo_hestenes_polish(b, v, noise2);
    for (int sweep = 0; sweep < DEFO_SVD_H_SWEEPS; sweep++) {
        bool r01 = defo_hestenes_pq(b, v, 0, 1, DEFO_SVD_TOL, noise2);
        bool r02 = defo_hestenes_pq(b, v, 0, 2, DEFO_SVD_TOL, noise2);
        bool r12 = defo_hestenes_pq(b, v, 1, 2, DEFO_SVD_TOL, noise2);
        if (!(r01 | r02 | r12)) break;
    }

    /* Sort by column norm, descending. */
    double n[3] = {defo_dot3(b[0], b[0]), defo_dot3(b[1], b[1]), defo_dot3(b[2], b[2])};
    defo_sort_step(n, v, b, 0, 1);
    defo_sort_step(n, v, b, 0, 2);
    defo_sort_step(n, v, b, 1, 2);

    /* U column by column (step 5 of the design comment). */
    double u[3][3];
    double s1 = sqrt(n[0]);
    double inv1 = s1 * (1.0 / n[0]); /* n[0] ≥ |F|²/3 > 0 after prescaling; √ ∥ ÷ */
    for (int i = 0; i < 3; i++) u[0][i] = b[0][i] * inv1;
    /* u₂: Gram–Schmidt of b₂ against u₁.  After the Hestenes sweeps b₂ is
     * already orthogonal to b₁ and one pass loses nothing; when it loses more
     * than a factor √2 (b₂ numerically parallel to b₁, e.g. rank 1 with
     * exactly proportional columns) a second pass on a rescaled copy decides
     * ("twice is enough", Kahan–Parlett): if that loses as much again, b₂ is
     * in span(u₁) to working precision and any unit vector ⟂ u₁ will do. */
    double w[3];
    double p12 = defo_dot3(b[0], b[1]) / n[0]; /* via b₁, not u₁: overlaps √n₁ */
    for (int i = 0; i < 3; i++) w[i] = b[1][i] - p12 * b[0][i];
    double nw = defo_dot3(w, w);
    bool have_u2 = true;
    if (!(nw > 0.5 * n[1]) || !(nw > 0x1p-900)) {
        double mw = fabs(w[0]) > fabs(w[1]) ? fabs(w[0]) : fabs(w[1]);
        mw = fabs(w[2]) > mw ? fabs(w[2]) : mw;
        have_u2 = mw > 0;
        if (have_u2) {
            double inv = 1.0 / mw; /* w/mw has entries ≤ 1, one of them ±1 */
            for (int i = 0; i < 3; i++) w[i] *= inv;
            double n0 = defo_dot3(w, w);
            double p = defo_dot3(u[0], w);
            for (int i = 0; i < 3; i++) w[i] -= p * u[0][i];
            nw = defo_dot3(w, w);
            have_u2 = nw > 0.5 * n0;
        }
    }
    if (have_u2) {
        double inv = sqrt(nw) * (1.0 / nw); /* √ ∥ ÷ (nw > 2^-900) */
        for (int i = 0; i < 3; i++) u[1][i] = w[i] * inv;
    } else {
        defo_any_orthogonal(u[0], u[1]); /* rank ≤ 1: ITF04 §5, flat element */
    }
    double s2 = defo_dot3(u[1], b[1]);
    if (s2 < 0) { /* only possible on the arbitrary branch */
        s2 = -s2;
        for (int i = 0; i < 3; i++) u[1][i] = -u[1][i];
    }
    u[2][0] = u[0][1] * u[1][2] - u[0][2] * u[1][1];
    u[2][1] = u[0][2] * u[1][0] - u[0][0] * u[1][2];
    u[2][2] = u[0][0] * u[1][1] - u[0][1] * u[1][0];
    double s3 = defo_dot3(u[2], b[2]);

    /* Rounding can break the ordering by an ulp when σ's tie; restoring it
     * moves the reconstruction by at most that ulp. */
    if (s2 > s1) s2 = s1;
    if (fabs(s3) > s2) s3 = copysign(s2, s3);

    *sigma = defo_v3(s1 * unscale, s2 * unscale, s3 * unscale);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            U->m[i][j] = u[j][i];
            V->m[i][j] = v[j][i];
        }
}

void defo_polar3(const defo_mat3 *F, defo_mat3 *R, defo_mat3 *S) {
    defo_mat3 U, V;
    defo_vec3 sg;
    defo_svd3(F, &U, &sg, &V);
    /* ITF04 §5.1: R = U Vᵀ is a rotation even for inverted F. */
    *R = defo_m3_mult(U, V);
    if (S) {
        double d[3] = {sg.x, sg.y, sg.z};
        for (int i = 0; i < 3; i++)
            for (int j = i; j < 3; j++) {
                double x = 0;
                for (int k = 0; k < 3; k++) x += V.m[i][k] * d[k] * V.m[j][k];
                S->m[i][j] = S->m[j][i] = x; /* exactly symmetric */
            }
    }
}

/* Port of the logic of LAPACK's dlaev2 (BSD): the eigenvalue of larger
 * magnitude is formed without cancellation, the other from the determinant
 * written as (acmx/rt1)·acmn − (b/rt1)·b, and the eigenvector from the larger
 * of two equivalent expressions. */
void defo_sym2_eigen(double a, double b, double d, double *lo, double *hi, double *c, double *s) {
    double sm = a + d, df = a - d, adf = fabs(df), tb = b + b, ab = fabs(tb);
    double acmx = fabs(a) > fabs(d) ? a : d;
    double acmn = fabs(a) > fabs(d) ? d : a;
    double rt;
    if (adf > ab) {
        double x = ab / adf;
        rt = adf * sqrt(1.0 + x * x);
    } else if (adf < ab) {
        double x = adf / ab;
        rt = ab * sqrt(1.0 + x * x);
    } else {
        rt = ab * 1.4142135623730951; /* includes b = 0 = a − d: rt = 0 */
    }
    double rt1, rt2;
    int sgn1;
    if (sm < 0) {
        rt1 = 0.5 * (sm - rt);
        sgn1 = -1;
        rt2 = (acmx / rt1) * acmn - (b / rt1) * b;
    } else if (sm > 0) {
        rt1 = 0.5 * (sm + rt);
        sgn1 = 1;
        rt2 = (acmx / rt1) * acmn - (b / rt1) * b;
    } else {
        rt1 = 0.5 * rt;
        rt2 = -0.5 * rt;
        sgn1 = 1;
    }
    /* Eigenvector (cs1, sn1) of rt1. */
    double cs;
    int sgn2;
    if (df >= 0) {
        cs = df + rt;
        sgn2 = 1;
    } else {
        cs = df - rt;
        sgn2 = -1;
    }
    double cs1, sn1;
    if (fabs(cs) > ab) {
        double ct = -tb / cs;
        sn1 = 1.0 / sqrt(1.0 + ct * ct);
        cs1 = ct * sn1;
    } else if (ab == 0) {
        cs1 = 1.0;
        sn1 = 0.0;
    } else {
        double tn = -cs / tb;
        cs1 = 1.0 / sqrt(1.0 + tn * tn);
        sn1 = tn * cs1;
    }
    if (sgn1 == sgn2) {
        double tn = cs1;
        cs1 = -sn1;
        sn1 = tn;
    }
    /* dlaev2's (cs1, sn1) is the unit eigenvector of rt1; the other is its
     * perpendicular. */
    if (rt1 >= rt2) {
        *hi = rt1;
        *lo = rt2;
        *c = cs1;
        *s = sn1;
    } else {
        *hi = rt2;
        *lo = rt1;
        *c = -sn1;
        *s = cs1;
    }
}

/* Rotation of the polar decomposition of F by the scaled Newton iteration
 * X ← ½(γX + γ⁻¹X⁻ᵀ), γ = (‖X⁻¹‖_F/‖X‖_F)^½ (Higham 1986), which converges
 * quadratically to the polar factor when det F > 0.  For such F the polar
 * rotation is unique, so this equals defo_polar3's U Vᵀ to rounding at a
 * fraction of the SVD's cost.  Returns 0 (caller falls back to the SVD) when
 * F is inverted, nearly flat relative to its size, or the iteration has not
 * converged. */
int defo_polar3_newton(const defo_mat3 *F, defo_mat3 *R) {
    double s = defo_m3_fnorm(*F);
    double det = defo_m3_det(*F);
    if (!(s > 0) || !(det > 1e-6 * s * s * s)) return 0;
    defo_mat3 X = *F;
    int scaled = 1;
    for (int it = 0; it < 20; it++) {
        defo_mat3 cof = defo_m3_cofactor(X); /* det(X)·X⁻ᵀ */
        double d = X.m[0][0] * cof.m[0][0] + X.m[0][1] * cof.m[0][1] + X.m[0][2] * cof.m[0][2];
        if (!(d > 0)) return 0;
        double inv_d = 1.0 / d, g = 1.0, ig = 1.0;
        if (scaled) { /* γ = (‖X⁻¹‖_F / ‖X‖_F)^½ = (‖cof‖_F / (d ‖X‖_F))^½ */
            double nx = 0, nc = 0;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) {
                    nx += X.m[i][j] * X.m[i][j];
                    nc += cof.m[i][j] * cof.m[i][j];
                }
            g = sqrt(sqrt(nc / nx) * inv_d);
            ig = 1.0 / g;
        }
        double delta2 = 0, hi = 0.5 * inv_d * ig, hg = 0.5 * g;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double v = hg * X.m[i][j] + hi * cof.m[i][j];
                double dv = v - X.m[i][j];
                delta2 += dv * dv;
                X.m[i][j] = v;
            }
        /* near convergence γ → 1: unscaled steps converge quadratically */
        if (delta2 < 1e-4) scaled = 0;
        if (delta2 <= 1e-20) { /* error ~ delta², below rounding after one more step */
            /* one unscaled step more polishes the last bits */
            defo_mat3 c2 = defo_m3_cofactor(X);
            double d2 = X.m[0][0] * c2.m[0][0] + X.m[0][1] * c2.m[0][1] + X.m[0][2] * c2.m[0][2];
            double h2 = 0.5 / d2;
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) R->m[i][j] = 0.5 * X.m[i][j] + h2 * c2.m[i][j];
            return 1;
        }
    }
    return 0;
}
