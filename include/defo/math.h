/*
 * defo/math.h — 3-vectors, 3×3 matrices, and the robust 3×3 decompositions
 * every formulation rests on (ITF04 §5).
 *
 * Storage: defo_mat3 is row-major, m[r][c].  All operations are inline value
 * functions except the decompositions, which live in src/math/.
 *
 * The SVD convention (ITF04 §5): F = U diag(σ) Vᵀ with U and V proper
 * rotations (det = +1); σ₁ ≥ σ₂ ≥ |σ₃|; when det F < 0 exactly one entry is
 * negative, σ₃, the one of smallest magnitude.  Near-zero σ get a U column
 * orthogonal to the others; F = 0 gives U = V = I, σ = 0.
 */
#ifndef DEFO_MATH_H
#define DEFO_MATH_H

#include "defo/base.h"
#include <math.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_vec3 {
    double x, y, z;
} defo_vec3;

typedef struct defo_mat3 {
    double m[3][3]; /* row-major: m[row][col] */
} defo_mat3;

/* ---------------------------------------------------------------- vec3 */
static inline defo_vec3 defo_v3(double x, double y, double z) {
    defo_vec3 r = {x, y, z};
    return r;
}
static inline defo_vec3 defo_v3_add(defo_vec3 a, defo_vec3 b) {
    return defo_v3(a.x + b.x, a.y + b.y, a.z + b.z);
}
static inline defo_vec3 defo_v3_sub(defo_vec3 a, defo_vec3 b) {
    return defo_v3(a.x - b.x, a.y - b.y, a.z - b.z);
}
static inline defo_vec3 defo_v3_scale(defo_vec3 a, double s) {
    return defo_v3(a.x * s, a.y * s, a.z * s);
}
/* a + s*b */
static inline defo_vec3 defo_v3_axpy(defo_vec3 a, double s, defo_vec3 b) {
    return defo_v3(a.x + s * b.x, a.y + s * b.y, a.z + s * b.z);
}
static inline double defo_v3_dot(defo_vec3 a, defo_vec3 b) {
    return a.x * b.x + a.y * b.y + a.z * b.z;
}
static inline defo_vec3 defo_v3_cross(defo_vec3 a, defo_vec3 b) {
    return defo_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static inline double defo_v3_norm2(defo_vec3 a) {
    return defo_v3_dot(a, a);
}
static inline double defo_v3_norm(defo_vec3 a) {
    return sqrt(defo_v3_dot(a, a));
}
/* a/|a|, or the zero vector when |a| = 0. */
static inline defo_vec3 defo_v3_normalize(defo_vec3 a) {
    double n = defo_v3_norm(a);
    return n > 0 ? defo_v3_scale(a, 1.0 / n) : defo_v3(0, 0, 0);
}
static inline defo_vec3 defo_v3_load(const double *p) {
    return defo_v3(p[0], p[1], p[2]);
}
static inline void defo_v3_store(double *p, defo_vec3 a) {
    p[0] = a.x;
    p[1] = a.y;
    p[2] = a.z;
}
static inline double defo_v3_get(defo_vec3 a, int i) {
    return i == 0 ? a.x : i == 1 ? a.y : a.z;
}

/* ---------------------------------------------------------------- mat3 */
static inline defo_mat3 defo_m3_zero(void) {
    defo_mat3 r = {{{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}};
    return r;
}
static inline defo_mat3 defo_m3_identity(void) {
    defo_mat3 r = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};
    return r;
}
static inline defo_mat3 defo_m3_diag(defo_vec3 d) {
    defo_mat3 r = {{{d.x, 0, 0}, {0, d.y, 0}, {0, 0, d.z}}};
    return r;
}
/* Matrix whose columns are a, b, c. */
static inline defo_mat3 defo_m3_from_cols(defo_vec3 a, defo_vec3 b, defo_vec3 c) {
    defo_mat3 r = {{{a.x, b.x, c.x}, {a.y, b.y, c.y}, {a.z, b.z, c.z}}};
    return r;
}
static inline defo_vec3 defo_m3_col(const defo_mat3 *a, int c) {
    return defo_v3(a->m[0][c], a->m[1][c], a->m[2][c]);
}
static inline defo_vec3 defo_m3_row(const defo_mat3 *a, int r) {
    return defo_v3(a->m[r][0], a->m[r][1], a->m[r][2]);
}
static inline defo_mat3 defo_m3_add(defo_mat3 a, defo_mat3 b) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) a.m[i][j] += b.m[i][j];
    return a;
}
static inline defo_mat3 defo_m3_sub(defo_mat3 a, defo_mat3 b) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) a.m[i][j] -= b.m[i][j];
    return a;
}
static inline defo_mat3 defo_m3_scale(defo_mat3 a, double s) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) a.m[i][j] *= s;
    return a;
}
static inline defo_mat3 defo_m3_transpose(defo_mat3 a) {
    defo_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) r.m[i][j] = a.m[j][i];
    return r;
}
/* a·b */
static inline defo_mat3 defo_m3_mul(defo_mat3 a, defo_mat3 b) {
    defo_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[i][j] = a.m[i][0] * b.m[0][j] + a.m[i][1] * b.m[1][j] + a.m[i][2] * b.m[2][j];
    return r;
}
/* aᵀ·b */
static inline defo_mat3 defo_m3_tmul(defo_mat3 a, defo_mat3 b) {
    defo_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[i][j] = a.m[0][i] * b.m[0][j] + a.m[1][i] * b.m[1][j] + a.m[2][i] * b.m[2][j];
    return r;
}
/* a·bᵀ */
static inline defo_mat3 defo_m3_mult(defo_mat3 a, defo_mat3 b) {
    defo_mat3 r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[i][j] = a.m[i][0] * b.m[j][0] + a.m[i][1] * b.m[j][1] + a.m[i][2] * b.m[j][2];
    return r;
}
static inline defo_vec3 defo_m3_mulv(defo_mat3 a, defo_vec3 v) {
    return defo_v3(a.m[0][0] * v.x + a.m[0][1] * v.y + a.m[0][2] * v.z,
                   a.m[1][0] * v.x + a.m[1][1] * v.y + a.m[1][2] * v.z,
                   a.m[2][0] * v.x + a.m[2][1] * v.y + a.m[2][2] * v.z);
}
/* aᵀ·v */
static inline defo_vec3 defo_m3_tmulv(defo_mat3 a, defo_vec3 v) {
    return defo_v3(a.m[0][0] * v.x + a.m[1][0] * v.y + a.m[2][0] * v.z,
                   a.m[0][1] * v.x + a.m[1][1] * v.y + a.m[2][1] * v.z,
                   a.m[0][2] * v.x + a.m[1][2] * v.y + a.m[2][2] * v.z);
}
static inline double defo_m3_det(defo_mat3 a) {
    return a.m[0][0] * (a.m[1][1] * a.m[2][2] - a.m[1][2] * a.m[2][1]) -
           a.m[0][1] * (a.m[1][0] * a.m[2][2] - a.m[1][2] * a.m[2][0]) +
           a.m[0][2] * (a.m[1][0] * a.m[2][1] - a.m[1][1] * a.m[2][0]);
}
static inline double defo_m3_trace(defo_mat3 a) {
    return a.m[0][0] + a.m[1][1] + a.m[2][2];
}
/* Frobenius inner product a:b and norm. */
static inline double defo_m3_ddot(defo_mat3 a, defo_mat3 b) {
    double s = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) s += a.m[i][j] * b.m[i][j];
    return s;
}
static inline double defo_m3_fnorm(defo_mat3 a) {
    return sqrt(defo_m3_ddot(a, a));
}
/* Largest absolute entry. */
static inline double defo_m3_maxabs(defo_mat3 a) {
    double s = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) s = fmax(s, fabs(a.m[i][j]));
    return s;
}
/* Cofactor matrix: cof(a) = det(a)·a⁻ᵀ, defined for singular a too. */
static inline defo_mat3 defo_m3_cofactor(defo_mat3 a) {
    defo_mat3 r;
    r.m[0][0] = a.m[1][1] * a.m[2][2] - a.m[1][2] * a.m[2][1];
    r.m[0][1] = a.m[1][2] * a.m[2][0] - a.m[1][0] * a.m[2][2];
    r.m[0][2] = a.m[1][0] * a.m[2][1] - a.m[1][1] * a.m[2][0];
    r.m[1][0] = a.m[0][2] * a.m[2][1] - a.m[0][1] * a.m[2][2];
    r.m[1][1] = a.m[0][0] * a.m[2][2] - a.m[0][2] * a.m[2][0];
    r.m[1][2] = a.m[0][1] * a.m[2][0] - a.m[0][0] * a.m[2][1];
    r.m[2][0] = a.m[0][1] * a.m[1][2] - a.m[0][2] * a.m[1][1];
    r.m[2][1] = a.m[0][2] * a.m[1][0] - a.m[0][0] * a.m[1][2];
    r.m[2][2] = a.m[0][0] * a.m[1][1] - a.m[0][1] * a.m[1][0];
    return r;
}
/* Inverse; returns 0 (and leaves *out untouched) when |det| is not safely
 * invertible relative to the matrix scale, 1 otherwise. */
static inline int defo_m3_inverse(defo_mat3 a, defo_mat3 *out) {
    double det = defo_m3_det(a);
    double s = defo_m3_maxabs(a);
    if (!(fabs(det) > 1e-300) || !(fabs(det) > 1e-14 * s * s * s)) return 0;
    *out = defo_m3_scale(defo_m3_transpose(defo_m3_cofactor(a)), 1.0 / det);
    return 1;
}
/* Outer product a bᵀ. */
static inline defo_mat3 defo_m3_outer(defo_vec3 a, defo_vec3 b) {
    defo_mat3 r = {{{a.x * b.x, a.x * b.y, a.x * b.z},
                    {a.y * b.x, a.y * b.y, a.y * b.z},
                    {a.z * b.x, a.z * b.y, a.z * b.z}}};
    return r;
}
/* Rotation by angle (radians) about a unit axis (Rodrigues). */
static inline defo_mat3 defo_m3_rotation(defo_vec3 axis, double angle) {
    defo_vec3 k = defo_v3_normalize(axis);
    double c = cos(angle), s = sin(angle), t = 1 - c;
    defo_mat3 r = {{{t * k.x * k.x + c, t * k.x * k.y - s * k.z, t * k.x * k.z + s * k.y},
                    {t * k.x * k.y + s * k.z, t * k.y * k.y + c, t * k.y * k.z - s * k.x},
                    {t * k.x * k.z - s * k.y, t * k.y * k.z + s * k.x, t * k.z * k.z + c}}};
    return r;
}
static inline int defo_m3_isfinite(defo_mat3 a) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (!isfinite(a.m[i][j])) return 0;
    return 1;
}

/* ------------------------------------------------------ decompositions */
/* Eigen-decomposition of a symmetric matrix A (only the upper triangle is
 * read): A = Q diag(lambda) Qᵀ, lambda sorted descending, Q a rotation
 * (det +1).  Cyclic Jacobi: robust for repeated and zero eigenvalues. */
DEFO_API void defo_sym3_eigen(const defo_mat3 *A, defo_vec3 *lambda, defo_mat3 *Q);
/* Eigenvalues only, descending, in closed form (the trigonometric solution of
 * the characteristic cubic, Smith 1961; no iteration; cos and sin of the
 * angle from polynomials good to 4e-12): absolute error at most
 * 1e-11 ‖A‖_F + 2 √(ε ‖A‖_F (λ₁ − λ₃)), the second term where two
 * eigenvalues (nearly) coincide — for bounds on a spectrum (stable steps),
 * not where ε accuracy
 * is needed (defo_sym3_eigen).  Entries beyond 2^±200 go to defo_sym3_eigen.
 * NaN in, NaN out. */
DEFO_API void defo_sym3_eigenvalues(const defo_mat3 *A, defo_vec3 *lambda);

/* SVD with the inversion convention of ITF04 §5 (see the top of this file).
 * Input must be finite.  Any output pointer may alias nothing else. */
DEFO_API void defo_svd3(const defo_mat3 *F, defo_mat3 *U, defo_vec3 *sigma, defo_mat3 *V);

/* Polar decomposition F = R S from the SVD (ITF04 §5.1): R = U Vᵀ is always
 * a rotation (also for inverted F), S = V diag(σ) Vᵀ is symmetric (and
 * indefinite when det F < 0).  S may be NULL. */
DEFO_API void defo_polar3(const defo_mat3 *F, defo_mat3 *R, defo_mat3 *S);

/* The rotation of the polar decomposition of F when det F > 0 (unique then),
 * by the scaled Newton iteration X ← ½(γX + γ⁻¹X⁻ᵀ) (Higham 1986): equal to
 * defo_polar3's U Vᵀ to rounding at a fraction of the SVD's cost.  Returns 0
 * (R untouched: use defo_polar3) when F is inverted, nearly flat relative to
 * its size (det F ≤ 1e-6 ‖F‖³) or the iteration did not converge. */
DEFO_API int defo_polar3_newton(const defo_mat3 *F, defo_mat3 *R);

/* Eigen-decomposition of a symmetric n×n A (row-major, both triangles
 * read; overwritten), 1 ≤ n ≤ 16: A = Q diag(lambda) Qᵀ, lambda unsorted, Q
 * (row-major, n×n, may be NULL) orthonormal with the eigenvectors as its
 * columns.  Householder tridiagonalisation and implicit QR steps
 * (src/math/sym_eigen.c); returns the QR steps it took, or −1 (nothing
 * written) for n outside [1, 16].  For the small matrices of elements. */
DEFO_API int defo_symn_eigen(int n, double *A, double *lambda, double *Q);

/* Eigenvalues of a symmetric 2×2 [[a, b], [b, d]]: lo ≤ hi, and the unit
 * eigenvector (c, s) of hi.  Closed form, stable for b → 0 and a → d. */
DEFO_API void defo_sym2_eigen(double a, double b, double d, double *lo, double *hi, double *c,
                              double *s);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_MATH_H */
