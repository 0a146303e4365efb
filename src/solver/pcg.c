/*
 * solver/pcg.c — preconditioned conjugate gradients on a 3×3-block CSR
 * matrix (MG04 §6: the implicit Euler system (M + ΔtC + Δt²K') v = b, solved
 * with CG to a tolerance or for a fixed number of iterations), and its
 * preconditioners: Jacobi, block Jacobi (inverted 3×3 diagonal blocks) and
 * block incomplete Cholesky with zero fill-in.
 *
 * Constraints are projections (as defo_cg_solve, [BW98]): S per node is I,
 * I − n nᵀ or 0; with x₀ carrying the constrained values CG runs on
 * S A S δ = S (b − A x₀) with preconditioner S P⁻¹ S, symmetric positive
 * definite on range(S).
 *
 * Block IC(0): the IKJ form of incomplete LU restricted to A's pattern, on
 * 3×3 blocks in node order.  For symmetric A it is the incomplete Cholesky
 * L D Lᵀ (U = D Lᵀ).  The couplings of fixed nodes are dropped first, so the
 * factor approximates the operator CG sees.  A pivot that is not positive
 * definite (IC(0) can break down for matrices that are not M-matrices)
 * restarts the factorisation on A + α·diag(A) with α = 1e-3, 1e-2, ...
 * The triangular solves are sequential: on the machines defo targets they
 * cost about two sparse products and cut the iteration count severalfold.
 *
 * Determinism: dot products by defo_dot (fixed blocking); everything else is
 * elementwise or sequential, so iterates do not depend on the thread count.
 */
#include "defo/sparse.h"

#include "defo/math.h"

#include "base/parallel.h"

#include <math.h>
#include <string.h>

const char *defo_precond_name(defo_precond_kind kind) {
    switch (kind) {
    case DEFO_PRECOND_NONE:
        return "none";
    case DEFO_PRECOND_JACOBI:
        return "jacobi";
    case DEFO_PRECOND_BLOCK_JACOBI:
        return "block_jacobi";
    case DEFO_PRECOND_BLOCK_IC0:
        return "block_ic0";
    }
    return "unknown";
}

void defo_precond_free(defo_precond *P) {
    if (!P) return;
    defo_free(P->inv);
    defo_free(P->factor);
    defo_free(P->inv_pivot);
    defo_free(P->pos);
    memset(P, 0, sizeof *P);
}

static defo_mat3 load3(const double *v) {
    defo_mat3 m;
    memcpy(m.m, v, 9 * sizeof *v);
    return m;
}
static void store3(double *v, defo_mat3 m) {
    memcpy(v, m.m, 9 * sizeof *v);
}

/* Invert a block expected to be (nearly) symmetric positive definite:
 * leading minors of its symmetric part must be positive, relative to scale. */
static int invert_spd(const double *b, double *out) {
    defo_mat3 m = load3(b);
    double s = defo_m3_maxabs(m);
    double m1 = m.m[0][0];
    double m2 = m.m[0][0] * m.m[1][1] - 0.25 * (m.m[0][1] + m.m[1][0]) * (m.m[0][1] + m.m[1][0]);
    if (!(s > 0) || !(m1 > 1e-12 * s) || !(m2 > 1e-12 * s * s) ||
        !(defo_m3_det(m) > 1e-12 * s * s * s))
        return 0;
    defo_mat3 inv;
    if (!defo_m3_inverse(m, &inv)) return 0;
    store3(out, inv);
    return 1;
}

static int is_fixed(const unsigned char *constraint, defo_index i) {
    return constraint && constraint[i] == DEFO_CONSTRAINT_FIXED;
}

/* One attempt of the block IC(0) factorisation with diagonal shift alpha;
 * returns −1 on success or the node whose pivot failed. */
static defo_index ic0_factor(defo_precond *P, const defo_bcsr *A, const unsigned char *constraint,
                             double alpha) {
    const defo_index n = A->num_rows;
    const int64_t *ro = A->row_offset;
    const defo_index *col = A->col;
    double *F = P->factor;
    int64_t *pos = P->pos;
    memcpy(F, A->val, (size_t)A->num_blocks * 9 * sizeof *F);
    for (defo_index i = 0; i < n; i++) {
        for (int64_t q = ro[i]; q < ro[i + 1]; q++)
            if (col[q] != i && (is_fixed(constraint, i) || is_fixed(constraint, col[q])))
                memset(F + 9 * q, 0, 9 * sizeof *F);
        if (alpha > 0) {
            double *d = F + 9 * A->diag[i];
            d[0] *= 1 + alpha;
            d[4] *= 1 + alpha;
            d[8] *= 1 + alpha;
        }
    }
    for (defo_index i = 0; i < n; i++) pos[i] = -1;
    for (defo_index i = 0; i < n; i++) {
        for (int64_t q = ro[i]; q < ro[i + 1]; q++) pos[col[q]] = q;
        for (int64_t q = ro[i]; q < ro[i + 1] && col[q] < i; q++) {
            defo_index k = col[q];
            /* L_ik = A_ik U_kk⁻¹ */
            defo_mat3 lik = defo_m3_mul(load3(F + 9 * q), load3(P->inv_pivot + 9 * (int64_t)k));
            store3(F + 9 * q, lik);
            for (int64_t r = A->diag[k] + 1; r < ro[k + 1]; r++) {
                int64_t t = pos[col[r]];
                if (t < 0) continue;
                store3(F + 9 * t,
                       defo_m3_sub(load3(F + 9 * t), defo_m3_mul(lik, load3(F + 9 * r))));
            }
        }
        for (int64_t q = ro[i]; q < ro[i + 1]; q++) pos[col[q]] = -1;
        if (!invert_spd(F + 9 * A->diag[i], P->inv_pivot + 9 * (int64_t)i)) return i;
    }
    return -1;
}

defo_status defo_precond_setup(defo_precond *P, defo_precond_kind kind, const defo_bcsr *A,
                               const unsigned char *constraint) {
    if (!P || !A) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "precond: missing argument");
    const defo_index n = A->num_rows;
    if (P->kind != kind || P->n != n ||
        (kind == DEFO_PRECOND_BLOCK_IC0 && P->num_blocks != A->num_blocks)) {
        defo_precond_free(P);
        P->kind = kind;
        P->n = n;
        size_t m = 3 * (size_t)n;
        if (kind == DEFO_PRECOND_JACOBI) P->inv = defo_malloc(m * sizeof *P->inv + 1);
        if (kind == DEFO_PRECOND_BLOCK_JACOBI) P->inv = defo_malloc(3 * m * sizeof *P->inv + 1);
        if (kind == DEFO_PRECOND_BLOCK_IC0) {
            P->num_blocks = A->num_blocks;
            P->factor = defo_malloc((size_t)A->num_blocks * 9 * sizeof *P->factor + 1);
            P->inv_pivot = defo_malloc(3 * m * sizeof *P->inv_pivot + 1);
            P->pos = defo_malloc((size_t)n * sizeof *P->pos + 1);
            if (!P->factor || !P->inv_pivot || !P->pos) {
                defo_precond_free(P);
                return defo_error_oom("incomplete Cholesky factor",
                                      (size_t)A->num_blocks * 9 * sizeof(double));
            }
        } else if (kind != DEFO_PRECOND_NONE && !P->inv) {
            defo_precond_free(P);
            return defo_error_oom("preconditioner", 9 * (size_t)n * sizeof(double));
        }
    }
    P->shift = 0;
    switch (kind) {
    case DEFO_PRECOND_NONE:
        return DEFO_OK;
    case DEFO_PRECOND_JACOBI: {
        defo_index bad = -1;
        for (defo_index i = 0; i < n; i++) {
            const double *d = A->val + 9 * A->diag[i];
            for (int k = 0; k < 3; k++) {
                if (!(d[4 * k] > 0) || !isfinite(d[4 * k])) {
                    if (bad < 0) bad = i;
                    P->inv[3 * (int64_t)i + k] = 0;
                } else {
                    P->inv[3 * (int64_t)i + k] = 1.0 / d[4 * k];
                }
            }
        }
        if (bad >= 0)
            return defo_error(DEFO_ERR_NUMERICAL,
                              "Jacobi preconditioner: non-positive diagonal at node %ld",
                              (long)bad);
        return DEFO_OK;
    }
    case DEFO_PRECOND_BLOCK_JACOBI: {
        defo_index bad = -1;
        DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
        for (defo_index i = 0; i < n; i++) {
            if (!invert_spd(A->val + 9 * A->diag[i], P->inv + 9 * (int64_t)i)) {
                memset(P->inv + 9 * (int64_t)i, 0, 9 * sizeof(double));
#ifdef _OPENMP
#pragma omp critical(defo_precond_bad)
#endif
                if (bad < 0 || i < bad) bad = i;
            }
        }
        if (bad >= 0)
            return defo_error(DEFO_ERR_NUMERICAL,
                              "block-Jacobi preconditioner: diagonal block of node %ld is not "
                              "positive definite",
                              (long)bad);
        return DEFO_OK;
    }
    case DEFO_PRECOND_BLOCK_IC0: {
        double alpha = 0;
        for (int attempt = 0; attempt < 8; attempt++) {
            defo_index bad = ic0_factor(P, A, constraint, alpha);
            if (bad < 0) {
                P->shift = alpha;
                P->matrix = A;
                return DEFO_OK;
            }
            if (attempt == 0) {
                /* A diagonal block itself indefinite is not a breakdown of
                 * IC(0) but a bad matrix: say so rather than shifting. */
                double tmp[9];
                if (!invert_spd(A->val + 9 * A->diag[bad], tmp))
                    return defo_error(DEFO_ERR_NUMERICAL,
                                      "incomplete Cholesky: diagonal block of node %ld is not "
                                      "positive definite",
                                      (long)bad);
            }
            alpha = alpha > 0 ? alpha * 10 : 1e-3;
        }
        return defo_error(DEFO_ERR_NUMERICAL,
                          "incomplete Cholesky broke down even with a diagonal shift of %g",
                          alpha / 10);
    }
    }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT, "precond: unknown kind %d", (int)kind);
}

/* z = (L U)⁻¹ r with the pattern of A. */
static void ic0_apply(const defo_precond *P, const defo_bcsr *A, const double *r, double *z) {
    const defo_index n = A->num_rows;
    const int64_t *ro = A->row_offset;
    const defo_index *col = A->col;
    const double *F = P->factor;
    for (defo_index i = 0; i < n; i++) { /* L y = r (unit lower) */
        double s0 = r[3 * (int64_t)i], s1 = r[3 * (int64_t)i + 1], s2 = r[3 * (int64_t)i + 2];
        for (int64_t q = ro[i]; q < A->diag[i]; q++) {
            const double *v = F + 9 * q, *y = z + 3 * (int64_t)col[q];
            s0 -= v[0] * y[0] + v[1] * y[1] + v[2] * y[2];
            s1 -= v[3] * y[0] + v[4] * y[1] + v[5] * y[2];
            s2 -= v[6] * y[0] + v[7] * y[1] + v[8] * y[2];
        }
        z[3 * (int64_t)i] = s0;
        z[3 * (int64_t)i + 1] = s1;
        z[3 * (int64_t)i + 2] = s2;
    }
    for (defo_index i = n - 1; i >= 0; i--) { /* U x = y */
        double s0 = z[3 * (int64_t)i], s1 = z[3 * (int64_t)i + 1], s2 = z[3 * (int64_t)i + 2];
        for (int64_t q = A->diag[i] + 1; q < ro[i + 1]; q++) {
            const double *v = F + 9 * q, *x = z + 3 * (int64_t)col[q];
            s0 -= v[0] * x[0] + v[1] * x[1] + v[2] * x[2];
            s1 -= v[3] * x[0] + v[4] * x[1] + v[5] * x[2];
            s2 -= v[6] * x[0] + v[7] * x[1] + v[8] * x[2];
        }
        const double *b = P->inv_pivot + 9 * (int64_t)i;
        z[3 * (int64_t)i] = b[0] * s0 + b[1] * s1 + b[2] * s2;
        z[3 * (int64_t)i + 1] = b[3] * s0 + b[4] * s1 + b[5] * s2;
        z[3 * (int64_t)i + 2] = b[6] * s0 + b[7] * s1 + b[8] * s2;
    }
}

void defo_precond_apply(const defo_precond *P, const double *r, double *z) {
    const defo_index n = P->n;
    const size_t m = 3 * (size_t)n;
    switch (P->kind) {
    case DEFO_PRECOND_JACOBI:
        DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN)
        for (size_t i = 0; i < m; i++) z[i] = P->inv[i] * r[i];
        return;
    case DEFO_PRECOND_BLOCK_JACOBI:
        DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
        for (defo_index i = 0; i < n; i++) {
            const double *b = P->inv + 9 * (int64_t)i;
            const double *ri = r + 3 * (int64_t)i;
            double *zi = z + 3 * (int64_t)i;
            double r0 = ri[0], r1 = ri[1], r2 = ri[2];
            zi[0] = b[0] * r0 + b[1] * r1 + b[2] * r2;
            zi[1] = b[3] * r0 + b[4] * r1 + b[5] * r2;
            zi[2] = b[6] * r0 + b[7] * r1 + b[8] * r2;
        }
        return;
    case DEFO_PRECOND_BLOCK_IC0:
        ic0_apply(P, P->matrix, r, z);
        return;
    case DEFO_PRECOND_NONE:
    default:
        memcpy(z, r, m * sizeof *z);
        return;
    }
}

/* v ← S v in place. */
static void project(defo_index n, const unsigned char *constraint, const double *normal,
                    double *v) {
    if (!constraint) return;
    DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
    for (defo_index i = 0; i < n; i++) {
        double *p = v + 3 * (size_t)i;
        if (constraint[i] == DEFO_CONSTRAINT_FIXED) {
            p[0] = p[1] = p[2] = 0;
        } else if (constraint[i] == DEFO_CONSTRAINT_NORMAL) {
            const double *q = normal + 3 * (size_t)i;
            double d = p[0] * q[0] + p[1] * q[1] + p[2] * q[2];
            p[0] -= d * q[0];
            p[1] -= d * q[1];
            p[2] -= d * q[2];
        }
    }
}

static void precondition(const defo_precond *P, const defo_bcsr *A, const unsigned char *constraint,
                         const double *normal, const double *r, double *z) {
    if (!P || P->kind == DEFO_PRECOND_NONE)
        memcpy(z, r, 3 * (size_t)A->num_rows * sizeof *z);
    else
        defo_precond_apply(P, r, z);
    project(A->num_rows, constraint, normal, z);
}

defo_status defo_pcg_solve(const defo_cg_def *def, const defo_bcsr *A, const defo_precond *P,
                           const unsigned char *constraint, const double *normal, const double *b,
                           double *x, double *work, defo_cg_result *result) {
    defo_cg_def d = def ? *def : defo_default_cg_def();
    defo_cg_result res = {0, 0.0, 0};
    if (result) *result = res;
    if (!A || !b || !x || !work)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_pcg_solve: missing argument");
    const int fixed_count = d.tolerance == 0;
    if (d.max_iterations <= 0 || !(fixed_count || (d.tolerance > 0 && d.tolerance < 1)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_pcg_solve: max_iterations %d / tolerance %g out of range",
                          d.max_iterations, d.tolerance);
    if (P && P->kind != DEFO_PRECOND_NONE && P->n != A->num_rows)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_pcg_solve: preconditioner built for %ld nodes, matrix has %ld",
                          (long)P->n, (long)A->num_rows);
    const defo_index n = A->num_rows;
    const size_t m = 3 * (size_t)n;
    double *r = work, *z = work + m, *p = work + 2 * m, *q = work + 3 * m;

    memcpy(r, b, m * sizeof *r);
    project(n, constraint, normal, r);
    double bnorm = sqrt(defo_dot(r, r, m));

    defo_bcsr_multiply(A, x, q);
    DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN)
    for (size_t i = 0; i < m; i++) r[i] = b[i] - q[i];
    project(n, constraint, normal, r);
    double rr = defo_dot(r, r, m);
    if (!isfinite(rr)) return defo_error(DEFO_ERR_NUMERICAL, "PCG: non-finite initial residual");
    if (bnorm == 0 || sqrt(rr) <= d.tolerance * bnorm || rr == 0) {
        res.residual = bnorm > 0 ? sqrt(rr) / bnorm : 0.0;
        res.converged = 1;
        if (result) *result = res;
        return DEFO_OK;
    }
    precondition(P, A, constraint, normal, r, z);
    memcpy(p, z, m * sizeof *p);
    double rz = defo_dot(r, z, m);
    for (int it = 1; it <= d.max_iterations; it++) {
        defo_bcsr_multiply(A, p, q);
        project(n, constraint, normal, q);
        double pq = defo_dot(p, q, m);
        if (!(pq > 0) || !isfinite(pq)) {
            res.iterations = it;
            res.residual = sqrt(rr) / bnorm;
            if (result) *result = res;
            if (pq == 0 && rr == 0) return DEFO_OK;
            return defo_error(DEFO_ERR_NUMERICAL,
                              "PCG: curvature pᵀAp = %g at iteration %d (matrix not positive "
                              "definite, or non-finite)",
                              pq, it);
        }
        double alpha = rz / pq;
        DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN)
        for (size_t i = 0; i < m; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        rr = defo_dot(r, r, m);
        res.residual = sqrt(rr) / bnorm;
        res.iterations = it;
        if (!isfinite(rr)) {
            if (result) *result = res;
            return defo_error(DEFO_ERR_NUMERICAL, "PCG: non-finite residual at iteration %d", it);
        }
        if (res.residual <= d.tolerance || rr == 0) {
            res.converged = 1;
            break;
        }
        if (it == d.max_iterations) break;
        precondition(P, A, constraint, normal, r, z);
        double rz_new = defo_dot(r, z, m);
        double beta = rz_new / rz;
        rz = rz_new;
        DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN)
        for (size_t i = 0; i < m; i++) p[i] = z[i] + beta * p[i];
    }
    if (result) *result = res;
    if (fixed_count) return DEFO_OK;
    if (!res.converged)
        return defo_error(DEFO_WARN_NOT_CONVERGED,
                          "PCG: relative residual %.3g after %d iterations (tolerance %.3g)",
                          res.residual, res.iterations, d.tolerance);
    return DEFO_OK;
}
