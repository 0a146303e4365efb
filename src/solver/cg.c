/*
 * solver/cg.c — defo_dot, and matrix-free preconditioned conjugate gradients
 * with constraint projection (the loop of solver/pcg_core.h) (ITF04 §9 implicit damping solve; [BW98] "modified
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
#include "solver/pcg_core.h"

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
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
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

struct jacobi_ctx {
    const double *inv_diag;
    size_t m;
};

/* z ← D⁻¹ r with D⁻¹ the caller's Jacobi inv_diag. */
static void jacobi_apply(void *ctx, const double *r, double *z) {
    const struct jacobi_ctx *j = ctx;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(j->m))
    for (size_t i = 0; i < j->m; i++) z[i] = j->inv_diag[i] * r[i];
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
    struct jacobi_ctx jac = {inv_diag, 3 * (size_t)n};
    defo_pcg_opts o = {d.max_iterations, d.tolerance, 0, 0, 0};
    defo_pcg_out out;
    defo_status st =
        defo_pcg_run("CG", "operator", &o, n, apply, ctx, inv_diag ? jacobi_apply : NULL, &jac,
                     constraint, normal, b, x, work, &out);
    if (result) {
        result->iterations = out.iterations;
        result->residual = out.residual;
        result->converged = out.converged;
    }
    return st;
}
