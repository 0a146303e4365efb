/*
 * solver/pcg_core.h — internal: THE constraint-projected preconditioned CG
 * loop of defo.  Every CG in the library runs here: defo_cg_solve
 * (matrix-free operator, Jacobi diagonal), defo_pcg_solve and the linear
 * solver (defo_linear_solver: BCSR matrix or callback, any preconditioner,
 * curvature mode, fixed iteration count).  Not part of the public API.
 *
 * S is the per-node projection onto the free subspace: S_i = I (free),
 * I − n nᵀ (normal constraint), 0 (fixed).  With x₀ carrying the constrained
 * values, the iteration solves S A S δ = S (b − A x₀) for δ = x − x₀ in
 * range(S) with the preconditioner S P⁻¹ S, so the constrained components of
 * x never move.  The stopping test is |S r| ≤ tolerance · |S b|.
 *
 * Non-positive curvature pᵀAp ≤ 0 (A not positive definite on range(S)):
 * an error (DEFO_ERR_NUMERICAL) or, in stop mode (Newton steps, TSIF05 §3:
 * any descent direction will do), the end of the solve with the last iterate
 * kept — or x₀ + S P⁻¹ S r₀, the preconditioned residual, when it happens at
 * the first iteration — counted in the result.
 *
 * An interrupt (defo_interrupt, a Ctrl-C) is looked for before every
 * iteration — one flag read next to a matrix product — so a long solve stops
 * within one iteration: DEFO_ERR_INTERRUPTED with x the last iterate.
 *
 * The only reductions are defo_dot (fixed blocking), vector updates are
 * elementwise, and nothing is allocated: iterates are bitwise identical for
 * any thread count.
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

/* What one run does. */
typedef struct defo_pcg_opts {
    int max_iterations; /* > 0 */
    /* > 0: stop once |S r| ≤ tolerance · |S b|; 0: only at r = 0 */
    double tolerance;
    /* 1: max_iterations is the intended count (MG04 §6 interactive mode):
     * reaching it is no warning */
    int fixed;
    int stop_at_curvature; /* 1: stop mode (top of the file); 0: error */
    /* 1: the caller has put S (b − A x) in the work's r (the first 3n
     * doubles): no first product */
    int given_residual;
} defo_pcg_opts;

/* What one run did. */
typedef struct defo_pcg_out {
    int iterations;  /* completed iterations */
    double residual; /* |S r| / |S b| at the end (0 when S b = 0) */
    double initial;  /* |S r₀| / |S b| at the start (0 when S b = 0) */
    int converged;   /* the tolerance (or r = 0) was reached */
    int negative;    /* stop mode: 1 when stopped at pᵀAp ≤ 0 */
    int hit_max;     /* stopped by max_iterations without converging */
} defo_pcg_out;

/* v ← S v in place. */
static inline void defo_pcg_project(defo_index n, const unsigned char *constraint,
                                    const double *normal, double *v) {
    if (!constraint) return;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(3 * (size_t)n))
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

/* 1 when every entry of v is zero (then A v = 0 needs no product). */
static inline int defo_pcg_all_zero(const double *v, size_t m) {
    for (size_t i = 0; i < m; i++)
        if (v[i] != 0.0) return 0;
    return 1;
}

/* The PCG loop.  `name` ("CG"/"PCG") and `what` ("operator"/"matrix") only
 * shape error messages.  work holds 4·3n doubles (r, z, p, q).  x holds x₀
 * on input (an all-zero x₀ saves the first product).  Returns DEFO_OK
 * (converged, fixed count done, or stopped at curvature in stop mode),
 * DEFO_WARN_NOT_CONVERGED (max_iterations reached; x is the last iterate),
 * DEFO_ERR_NUMERICAL (non-finite values; non-positive curvature in error
 * mode; x is the last good iterate) or DEFO_ERR_INTERRUPTED (an interrupt
 * was requested; x is the last iterate).  *out is always written. */
static inline defo_status defo_pcg_run(const char *name, const char *what, const defo_pcg_opts *o,
                                       defo_index n, defo_linop_fn apply, void *actx,
                                       defo_pcg_precond_fn precond, void *pctx,
                                       const unsigned char *constraint, const double *normal,
                                       const double *b, double *x, double *work,
                                       defo_pcg_out *out) {
    const size_t m = 3 * (size_t)n;
    double *r = work, *z = work + m, *p = work + 2 * m, *q = work + 3 * m;
    defo_pcg_out res;
    memset(&res, 0, sizeof res);
    *out = res;

    /* |S b| sets the scale of the stopping test. */
    double *sb = o->given_residual ? z : r;
    memcpy(sb, b, m * sizeof *r);
    defo_pcg_project(n, constraint, normal, sb);
    const double bnorm = sqrt(defo_dot(sb, sb, m));
    if (!o->given_residual && !defo_pcg_all_zero(x, m)) {
        apply(actx, x, q);
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
        for (size_t i = 0; i < m; i++) r[i] = b[i] - q[i];
        defo_pcg_project(n, constraint, normal, r);
    }
    double rr = defo_dot(r, r, m);
    if (!isfinite(rr) || !isfinite(bnorm))
        return defo_error(DEFO_ERR_NUMERICAL, "%s: non-finite initial residual", name);
    res.initial = res.residual = bnorm > 0 ? sqrt(rr) / bnorm : 0.0;
    if (bnorm == 0 || rr == 0 || sqrt(rr) <= o->tolerance * bnorm) {
        res.converged = 1;
        *out = res;
        return DEFO_OK;
    }
    defo_pcg_precondition(n, precond, pctx, constraint, normal, r, z);
    memcpy(p, z, m * sizeof *p);
    double rz = defo_dot(r, z, m);
    for (int it = 1; it <= o->max_iterations; it++) {
        if (defo_interrupt_requested()) {
            *out = res;
            return defo_error(DEFO_ERR_INTERRUPTED, "%s: interrupted after %d iterations", name,
                              it - 1);
        }
        apply(actx, p, q);
        defo_pcg_project(n, constraint, normal, q);
        double pq = defo_dot(p, q, m);
        if (o->stop_at_curvature && !(pq > 0)) {
            res.negative = 1;
            if (it == 1) {
                DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
                for (size_t i = 0; i < m; i++) x[i] += z[i];
            }
            *out = res;
            return DEFO_OK;
        }
        if (!(pq > 0) || !isfinite(pq)) {
            res.iterations = it;
            *out = res;
            if (pq == 0 && rr == 0) return DEFO_OK;
            return defo_error(DEFO_ERR_NUMERICAL,
                              "%s: curvature pᵀAp = %g at iteration %d (%s not positive "
                              "definite, or non-finite)",
                              name, pq, it, what);
        }
        double alpha = rz / pq;
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
        for (size_t i = 0; i < m; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        rr = defo_dot(r, r, m);
        const double rn = sqrt(rr);
        res.residual = rn / bnorm;
        res.iterations = it;
        if (!isfinite(rr)) {
            *out = res;
            return defo_error(DEFO_ERR_NUMERICAL, "%s: non-finite residual at iteration %d", name,
                              it);
        }
        if (rn <= o->tolerance * bnorm || rr == 0) {
            res.converged = 1;
            break;
        }
        if (it == o->max_iterations) break;
        defo_pcg_precondition(n, precond, pctx, constraint, normal, r, z);
        double rz_new = defo_dot(r, z, m);
        double beta = rz_new / rz;
        rz = rz_new;
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
        for (size_t i = 0; i < m; i++) p[i] = z[i] + beta * p[i];
    }
    res.hit_max = !res.converged;
    *out = res;
    if (o->fixed || res.converged) return DEFO_OK;
    return defo_error(DEFO_WARN_NOT_CONVERGED,
                      "%s: relative residual %.3g after %d iterations (tolerance %.3g)", name,
                      res.residual, res.iterations, o->tolerance);
}

#endif
