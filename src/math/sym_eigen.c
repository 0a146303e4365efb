/*
 * math/sym_eigen.c — eigen-decomposition of a small symmetric n×n matrix
 * (Golub & Van Loan §8.3): the hinge Hessians of shells (9×9: the 12×12
 * less translations, projected to positive semidefinite, TSIF05 §8) and
 * the element eigenvalue lengths of stable time steps (up to 10×10).
 *
 * Householder reflections H = I − β v vᵀ reduce A to tridiagonal T = Qᵀ A Q
 * (GVL Alg. 8.3.1: v = x − α e₁ with α = −sign(x₀)‖x‖, so vᵀv = 2(‖x‖² −
 * α x₀) never cancels).  Then implicit symmetric QR steps with Wilkinson's
 * shift (GVL Alg. 8.3.2): the shift μ is the eigenvalue of T's trailing 2×2
 * nearer its last entry; a Givens rotation on (d_l − μ, e_l) starts the step
 * and each next one chases the bulge down to row m.  An off-diagonal entry
 * with |e_i| ≤ ε (|d_i| + |d_{i+1}|) splits T there.  Both stages are
 * orthogonal transformations, so the eigenvalues come with backward error
 * O(ε ‖A‖) and Q (the product of every reflection and rotation) is
 * orthonormal to rounding; convergence is cubic near the end, about two
 * steps per eigenvalue.  A cyclic Jacobi solver did the same to 1e-12 at
 * about 3× the cost per 9×9 hinge Hessian (it dominated an implicit cloth
 * step).
 *
 * Invariants: A = Q diag(λ) Qᵀ to rounding, Q orthonormal; the eigenvalues
 * do not depend on whether Q is asked for (Q only receives the rotations);
 * no allocation (n ≤ 16); the same arithmetic for the same input
 * (deterministic).  A non-finite entry stops after 30 n steps with
 * non-finite output.
 */
#include "defo/math.h"

#include <float.h>
#include <math.h>

/* √(x² + z²) without libm's hypot where no square can overflow or
 * underflow */
static inline double norm2(double x, double z) {
    const double ax = fabs(x), az = fabs(z);
    if (ax < 1e150 && az < 1e150 && (ax > 1e-150 || az > 1e-150)) return sqrt(x * x + z * z);
    return hypot(x, z);
}

#define DEFO_SYMN_MAX_ITERATIONS(n) (30 * (n))

/* Householder reduction of symmetric A (n×n, row-major, overwritten) to
 * tridiagonal T = Qᵀ A Q: d its diagonal, e its subdiagonal (e[i] =
 * T[i+1][i]); Q (may be NULL) the product of the reflections. */
static void tridiagonalize(int n, double *A, double *d, double *e, double *Q) {
    double v[16], p[16];
    for (int k = 0; k + 2 < n; k++) {
        const int m = k + 1; /* the reflection acts on rows and columns m … n−1 */
        double tail = 0;
        for (int i = m + 1; i < n; i++) tail += A[i * n + k] * A[i * n + k];
        const double x0 = A[m * n + k];
        if (tail == 0) { /* already tridiagonal in this column */
            e[k] = x0;
            continue;
        }
        const double sigma = tail + x0 * x0;
        const double alpha = x0 > 0 ? -sqrt(sigma) : sqrt(sigma);
        /* H = I − β v vᵀ, v = x − α e₁, vᵀv = 2 (σ − α x₀) */
        for (int i = m; i < n; i++) v[i] = A[i * n + k];
        v[m] -= alpha;
        const double beta = 1.0 / (sigma - alpha * x0);
        /* p = β A' v, w = p − (β/2)(vᵀp) v, A' ← A' − v wᵀ − w vᵀ */
        double vp = 0;
        for (int i = m; i < n; i++) {
            double s = 0;
            for (int j = m; j < n; j++) s += A[i * n + j] * v[j];
            p[i] = beta * s;
            vp += v[i] * p[i];
        }
        const double K = 0.5 * beta * vp;
        for (int i = m; i < n; i++) p[i] -= K * v[i];
        for (int i = m; i < n; i++)
            for (int j = m; j <= i; j++) {
                const double a = A[i * n + j] - v[i] * p[j] - p[i] * v[j];
                A[i * n + j] = A[j * n + i] = a;
            }
        e[k] = alpha;
        if (Q) /* Q ← Q H on columns m … n−1 */
            for (int r = 0; r < n; r++) {
                double s = 0;
                for (int j = m; j < n; j++) s += Q[r * n + j] * v[j];
                s *= beta;
                for (int j = m; j < n; j++) Q[r * n + j] -= s * v[j];
            }
    }
    for (int i = 0; i < n; i++) d[i] = A[i * n + i];
    if (n >= 2) e[n - 2] = A[(n - 1) * n + n - 2];
}

int defo_symn_eigen(int n, double *A, double *lambda, double *Q) {
    if (n < 1 || n > 16) return -1;
    if (Q) {
        for (int i = 0; i < n * n; i++) Q[i] = 0;
        for (int i = 0; i < n; i++) Q[i * n + i] = 1;
    }
    double e[16];
    double *d = lambda;
    tridiagonalize(n, A, d, e, Q);
    int iterations = 0;
    int m = n - 1;
    while (m > 0 && iterations < DEFO_SYMN_MAX_ITERATIONS(n)) {
        if (fabs(e[m - 1]) <= DBL_EPSILON * (fabs(d[m - 1]) + fabs(d[m]))) {
            m--;
            continue;
        }
        int l = m - 1;
        while (l > 0 && !(fabs(e[l - 1]) <= DBL_EPSILON * (fabs(d[l - 1]) + fabs(d[l])))) l--;
        iterations++;
        /* Wilkinson's shift: the eigenvalue of the trailing 2×2 nearer d[m] */
        const double h = 0.5 * (d[m - 1] - d[m]), b = e[m - 1];
        const double r0 = norm2(h, b);
        const double mu = d[m] - b * b / (h + (h >= 0 ? r0 : -r0));
        double x = d[l] - mu, z = e[l];
        for (int k = l; k < m; k++) {
            const double r = norm2(x, z);
            const double c = r > 0 ? x / r : 1.0, s = r > 0 ? -z / r : 0.0;
            if (k > l) e[k - 1] = r;
            const double a = d[k], bb = e[k], cc = d[k + 1];
            d[k] = c * c * a - 2 * c * s * bb + s * s * cc;
            d[k + 1] = s * s * a + 2 * c * s * bb + c * c * cc;
            e[k] = c * s * (a - cc) + (c * c - s * s) * bb;
            if (k + 1 < m) {
                x = e[k];
                z = -s * e[k + 1];
                e[k + 1] *= c;
            }
            if (Q)
                for (int i = 0; i < n; i++) {
                    const double qk = Q[i * n + k], q1 = Q[i * n + k + 1];
                    Q[i * n + k] = c * qk - s * q1;
                    Q[i * n + k + 1] = s * qk + c * q1;
                }
        }
    }
    return iterations;
}
