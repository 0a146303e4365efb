/*
 * solver/pcg_core.h — internal: the one constraint-projected preconditioned CG
 * loop shared by defo_cg_solve (matrix-free operator, Jacobi diagonal) and
 * defo_pcg_solve (BCSR matrix, defo_precond).  Not part of the public API.
 *
 * S is the per-node projection onto the free subspace: S_i = I (free),
 * I − n nᵀ (normal constraint), 0 (fixed).  With x₀ carrying the constrained
 * values, the iteration solves S A S δ = S (b − A x₀) for δ = x − x₀ in
 * range(S) with the preconditioner S P⁻¹ S, so the constrained components of
 * x never move.  The only reductions are defo_dot (fixed blocking), vector
 * updates are elementwise, and nothing is allocated.
 */
#ifndef DEFO_INTERNAL_PCG_CORE_H
#define DEFO_INTERNAL_PCG_CORE_H

#include "defo/solver.h"

#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <string.h>

/* z ← P⁻¹ r (unprojected; the core projects afterwards). */
typedef void (*defo_pcg_precond_fn)(void *ctx, const double *r, double *z);

/* v ← S v in place. */
static inline void defo_pcg_project(defo_index n, const unsigned char *constraint,
                                    const double *normal, double *v) {
    if (!constraint) return;
    DEFO_PARALLEL_FOR_IF(3 * (size_t)n > DEFO_PARALLEL_MIN_VECTOR)
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

/* z ← S P⁻¹ r (r already in range(S)); precond NULL = identity. */
static inline void defo_pcg_precondition(defo_index n, defo_pcg_precond_fn precond, void *pctx,
                                         const unsigned char *constraint, const double *normal,
                                         const double *r, double *z) {
    if (precond)
        precond(pctx, r, z);
    else
        memcpy(z, r, 3 * (size_t)n * sizeof *z);
    defo_pcg_project(n, constraint, normal, z);
}

/* The PCG loop.  `d` is already validated by the caller; tolerance == 0
 * means fixed-iteration-count mode (run max_iterations, no warning).  `name`
 * ("CG"/"PCG") and `what` ("operator"/"matrix") only shape error messages.
 * work holds 4·3n doubles (r, z, p, q).  Writes *result when non-NULL. */
static inline defo_status defo_pcg_run(const char *name, const char *what, const defo_cg_def *d,
                                       defo_index n, defo_linop_fn apply, void *actx,
                                       defo_pcg_precond_fn precond, void *pctx,
                                       const unsigned char *constraint, const double *normal,
                                       const double *b, double *x, double *work,
                                       defo_cg_result *result) {
    const int fixed_count = d->tolerance == 0;
    const size_t m = 3 * (size_t)n;
    double *r = work, *z = work + m, *p = work + 2 * m, *q = work + 3 * m;
    defo_cg_result res = {0, 0.0, 0};

    /* |S b| sets the scale of the stopping test. */
    memcpy(r, b, m * sizeof *r);
    defo_pcg_project(n, constraint, normal, r);
    double bnorm = sqrt(defo_dot(r, r, m));

    apply(actx, x, q);
    DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN_VECTOR)
    for (size_t i = 0; i < m; i++) r[i] = b[i] - q[i];
    defo_pcg_project(n, constraint, normal, r);
    double rr = defo_dot(r, r, m);
    if (!isfinite(rr))
        return defo_error(DEFO_ERR_NUMERICAL, "%s: non-finite initial residual", name);
    if (bnorm == 0 || sqrt(rr) <= d->tolerance * bnorm || rr == 0) {
        res.residual = bnorm > 0 ? sqrt(rr) / bnorm : 0.0;
        res.converged = 1;
        if (result) *result = res;
        return DEFO_OK;
    }
    defo_pcg_precondition(n, precond, pctx, constraint, normal, r, z);
    memcpy(p, z, m * sizeof *p);
    double rz = defo_dot(r, z, m);
    for (int it = 1; it <= d->max_iterations; it++) {
        apply(actx, p, q);
        defo_pcg_project(n, constraint, normal, q);
        double pq = defo_dot(p, q, m);
        if (!(pq > 0) || !isfinite(pq)) {
            res.iterations = it;
            res.residual = sqrt(rr) / bnorm;
            if (result) *result = res;
            if (pq == 0 && rr == 0) return DEFO_OK;
            return defo_error(DEFO_ERR_NUMERICAL,
                              "%s: curvature pᵀAp = %g at iteration %d (%s not positive "
                              "definite, or non-finite)",
                              name, pq, it, what);
        }
        double alpha = rz / pq;
        DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN_VECTOR)
        for (size_t i = 0; i < m; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        rr = defo_dot(r, r, m);
        res.residual = sqrt(rr) / bnorm;
        res.iterations = it;
        if (!isfinite(rr)) {
            if (result) *result = res;
            return defo_error(DEFO_ERR_NUMERICAL, "%s: non-finite residual at iteration %d", name,
                              it);
        }
        if (res.residual <= d->tolerance || rr == 0) {
            res.converged = 1;
            break;
        }
        if (it == d->max_iterations) break;
        defo_pcg_precondition(n, precond, pctx, constraint, normal, r, z);
        double rz_new = defo_dot(r, z, m);
        double beta = rz_new / rz;
        rz = rz_new;
        DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN_VECTOR)
        for (size_t i = 0; i < m; i++) p[i] = z[i] + beta * p[i];
    }
    if (result) *result = res;
    if (fixed_count) return DEFO_OK;
    if (!res.converged)
        return defo_error(DEFO_WARN_NOT_CONVERGED,
                          "%s: relative residual %.3g after %d iterations (tolerance %.3g)", name,
                          res.residual, res.iterations, d->tolerance);
    return DEFO_OK;
}

#endif
