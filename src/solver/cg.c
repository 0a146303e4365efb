/*
 * solver/cg.c — matrix-free preconditioned conjugate gradients with
 * constraint projection (ITF04 §9 implicit damping solve; [BW98] "modified
 * PCG" as used by ITF04 for colliding nodes).
 *
 * S is the per-node projection onto the free subspace: S_i = I (free),
 * I − n nᵀ (normal constraint), 0 (fixed).  With x₀ carrying the constrained
 * values, the iteration solves S A S δ = S (b − A x₀) for δ = x − x₀ in
 * range(S), with the preconditioner S P⁻¹ S (P the Jacobi diagonal) — a
 * symmetric positive definite system on range(S), so plain PCG applies and
 * the constrained components of x never move.
 *
 * Determinism: the only reductions are dot products, computed by defo_dot
 * with a fixed block size; vector updates are elementwise.  So every iterate
 * is bitwise identical for any thread count.
 */
#include "defo/solver.h"

#include "base/parallel.h"

#include <math.h>
#include <string.h>

#define DOT_BLOCK 4096

defo_cg_def defo_default_cg_def(void) {
    defo_cg_def d;
    d.max_iterations = 200;
    d.tolerance = 1e-8;
    return d;
}

double defo_dot(const double *a, const double *b, size_t m) {
    size_t blocks = (m + DOT_BLOCK - 1) / DOT_BLOCK;
    if (blocks <= 1) {
        double s = 0;
        for (size_t i = 0; i < m; i++) s += a[i] * b[i];
        return s;
    }
    /* Partial sums per fixed block, combined in block order; the stack holds
     * 64 blocks (262144 values); bigger vectors combine in chunks of 64 with
     * the same grouping. */
    double total = 0;
    for (size_t b0 = 0; b0 < blocks; b0 += 64) {
        size_t nb = DEFO_MIN((size_t)64, blocks - b0);
        double partial[64];
        DEFO_PARALLEL_FOR_IF(nb > 1)
        for (size_t k = 0; k < nb; k++) {
            size_t lo = (b0 + k) * DOT_BLOCK, hi = DEFO_MIN(m, lo + DOT_BLOCK);
            double s = 0;
            for (size_t i = lo; i < hi; i++) s += a[i] * b[i];
            partial[k] = s;
        }
        for (size_t k = 0; k < nb; k++) total += partial[k];
    }
    return total;
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

/* z ← S P⁻¹ r (r already in range(S)). */
static void precondition(defo_index n, const double *inv_diag, const unsigned char *constraint,
                         const double *normal, const double *r, double *z) {
    size_t m = 3 * (size_t)n;
    if (inv_diag) {
        DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN)
        for (size_t i = 0; i < m; i++) z[i] = inv_diag[i] * r[i];
    } else {
        memcpy(z, r, m * sizeof *z);
    }
    project(n, constraint, normal, z);
}

defo_status defo_cg_solve(const defo_cg_def *def, defo_index n, defo_linop_fn apply, void *ctx,
                          const double *inv_diag, const unsigned char *constraint,
                          const double *normal, const double *b, double *x, double *work,
                          defo_cg_result *result) {
    defo_cg_def d = def ? *def : defo_default_cg_def();
    defo_cg_result res = {0, 0.0, 0};
    if (result) *result = res;
    if (n < 0 || !apply || !b || !x || !work)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_cg_solve: missing argument");
    if (d.max_iterations <= 0 || !(d.tolerance > 0 && d.tolerance < 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_cg_solve: max_iterations %d / tolerance %g out of range",
                          d.max_iterations, d.tolerance);
    size_t m = 3 * (size_t)n;
    double *r = work, *z = work + m, *p = work + 2 * m, *q = work + 3 * m;

    /* |S b| sets the scale of the stopping test. */
    memcpy(r, b, m * sizeof *r);
    project(n, constraint, normal, r);
    double bnorm = sqrt(defo_dot(r, r, m));

    apply(ctx, x, q);
    DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN)
    for (size_t i = 0; i < m; i++) r[i] = b[i] - q[i];
    project(n, constraint, normal, r);
    double rr = defo_dot(r, r, m);
    if (!isfinite(rr)) return defo_error(DEFO_ERR_NUMERICAL, "CG: non-finite initial residual");
    if (bnorm == 0 || sqrt(rr) <= d.tolerance * bnorm) {
        res.residual = bnorm > 0 ? sqrt(rr) / bnorm : 0.0;
        res.converged = 1;
        if (result) *result = res;
        return DEFO_OK;
    }
    precondition(n, inv_diag, constraint, normal, r, z);
    memcpy(p, z, m * sizeof *p);
    double rz = defo_dot(r, z, m);
    int it = 0;
    for (it = 1; it <= d.max_iterations; it++) {
        apply(ctx, p, q);
        project(n, constraint, normal, q);
        double pq = defo_dot(p, q, m);
        if (!(pq > 0) || !isfinite(pq)) {
            res.iterations = it;
            res.residual = sqrt(rr) / bnorm;
            if (result) *result = res;
            return defo_error(DEFO_ERR_NUMERICAL,
                              "CG: curvature pᵀAp = %g at iteration %d (operator not positive "
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
            return defo_error(DEFO_ERR_NUMERICAL, "CG: non-finite residual at iteration %d", it);
        }
        if (res.residual <= d.tolerance) {
            res.converged = 1;
            break;
        }
        precondition(n, inv_diag, constraint, normal, r, z);
        double rz_new = defo_dot(r, z, m);
        double beta = rz_new / rz;
        rz = rz_new;
        DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN)
        for (size_t i = 0; i < m; i++) p[i] = z[i] + beta * p[i];
    }
    if (result) *result = res;
    if (!res.converged)
        return defo_error(DEFO_WARN_NOT_CONVERGED,
                          "CG: relative residual %.3g after %d iterations (tolerance %.3g)",
                          res.residual, res.iterations, d.tolerance);
    return DEFO_OK;
}
