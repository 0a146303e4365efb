/*
 * solver/newton.c — the shared Newton driver (defo/solver.h): minimise E(x)
 * over 3n unknowns with fixed nodes, TSIF05 §3–4.
 *
 * Iteration k at x_k with f_k = −∇E(x_k):
 *   1  stop when max over free nodes |f_k,i| ≤ target (or at max_iterations);
 *   2  K Δx = f_k by the linear solver (K = ∇²E as the problem gives it,
 *      assembled or matrix-free), to the relative residual η_k of the
 *      forcing rule; CG stops at non-positive curvature with a descent
 *      direction (DEFO_CURVATURE_STOP);
 *   3  Δx capped by the problem (cap_step);
 *   4  backtracking line search on E along Δx: α = 1, ½, ¼, ... (40
 *      halvings), accepted by Armijo (E(x + αΔx) ≤ E + 10⁻⁴ α ∇E·Δx) or,
 *      failing that, by a decrease of the free residual norm |f|₂ by the
 *      factor (1 − 10⁻⁴ α) — the Newton merit ½|f|², needed where an
 *      energy extrapolated flat (TSIF05 §9) has a force but no slope;
 *   5  when no α is accepted, the capped full step is taken anyway (the
 *      paper's full Newton step) so that later iterations can recover;
 *      more than max_forced_steps of them in a row stop the solve as
 *      STALLED with x at the last accepted iterate;
 *   6  with PCG steps and a problem that has both (exact_tangent): the
 *      projected tangent first, the exact one after a full step that
 *      reduced |f|₂ less than twice (linear convergence: the projection,
 *      not the distance, limits the model), back to the projected one at
 *      non-positive curvature, a cut step or a slow one; at most 4 turns to
 *      the exact one a solve, each made at x (one evaluation more), the
 *      lagged preconditioner of the projected tangent kept for the exact
 *      one (a direct solver factors the exact matrix).
 * Without line search the full step is taken when its evaluation is
 * finite.  Forcing (defo_forcing): TARGET η = 0.5·target/|f|∞, or
 * Eisenstat–Walker choice 2 with its safeguard, both clamped to
 * [cg_min, cg_max] and never below 0.5·target/|f|∞ (Kelley 1995 §6.3).
 * An interrupt (defo_interrupt) is looked for before every iteration and
 * every line-search trial, and inside the linear solve at every CG
 * iteration: the solve stops at x_k, the last accepted iterate
 * (DEFO_ERR_INTERRUPTED, DEFO_REASON_INTERRUPTED).
 *
 * Invariants: the problem's linearisation is that of the last evaluated
 * point, and after a solve that of the returned x (a rejected trial point
 * is re-evaluated away); buffers are allocated at create, so a solve
 * allocates nothing besides what the linear solver allocates on its first
 * solve; reductions are defo_dot or sequential sums, so iterates do not
 * depend on the thread count.
 */
#include "defo/solver.h"

#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <string.h>
#include <time.h>

struct defo_newton {
    defo_newton_def def;
    defo_index n;
    defo_linear_solver *linear;
    double *f, *dx, *xt, *ft; /* 3n each */
    double *diag;             /* 9n, on first matrix-free use */
    double ew_eta;            /* Eisenstat–Walker: η of the previous iteration */
    int exact;                /* the problem evaluates the exact tangent (exact_tangent) */
};

const char *defo_convergence_reason_name(defo_convergence_reason reason) {
    switch (reason) {
    case DEFO_REASON_CONVERGED:
        return "converged";
    case DEFO_REASON_MAX_ITERATIONS:
        return "max_iterations";
    case DEFO_REASON_STALLED:
        return "stalled";
    case DEFO_REASON_NUMERICAL:
        return "numerical";
    case DEFO_REASON_INTERRUPTED:
        return "interrupted";
    }
    return "unknown";
}

defo_newton_def defo_default_newton_def(void) {
    defo_newton_def d;
    memset(&d, 0, sizeof d);
    d.max_iterations = 100;
    d.line_search = 1;
    d.forcing = DEFO_FORCING_EISENSTAT_WALKER;
    d.cg_min_tolerance = 1e-10;
    d.cg_max_tolerance = 0.1;
    d.max_forced_steps = 10;
    d.linear = defo_default_linear_solver_def();
    d.linear.precond.kind = DEFO_PRECOND_TWO_LEVEL;
    d.linear.max_age = 8;
    d.linear.rate_growth = 2.0;
    d.linear.curvature = DEFO_CURVATURE_STOP;
    d.linear.max_iterations = 2000;
    d.linear.tolerance = 0.1;
    return d;
}

void defo_newton_destroy(defo_newton *N) {
    if (!N) return;
    defo_linear_solver_destroy(N->linear);
    defo_free(N->f);
    defo_free(N->dx);
    defo_free(N->xt);
    defo_free(N->ft);
    defo_free(N->diag);
    defo_free(N);
}

defo_status defo_newton_create(const defo_newton_def *def, defo_index n, defo_newton **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "newton: out is NULL");
    *out = NULL;
    defo_newton_def d = def ? *def : defo_default_newton_def();
    if (n < 0) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "newton: %ld nodes", (long)n);
    if (d.max_iterations < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "newton.max_iterations: %d is not >= 1",
                          d.max_iterations);
    if (d.line_search != 0 && d.line_search != 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "newton.line_search: %d is not 0 or 1",
                          d.line_search);
    if (d.forcing != DEFO_FORCING_TARGET && d.forcing != DEFO_FORCING_EISENSTAT_WALKER)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "newton.forcing: %d is unknown",
                          (int)d.forcing);
    if (!(d.cg_min_tolerance > 0.0 && d.cg_min_tolerance <= d.cg_max_tolerance &&
          d.cg_max_tolerance < 1.0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "newton.cg_min_tolerance/cg_max_tolerance: need 0 < min <= max < 1");
    if (d.max_forced_steps < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "newton.max_forced_steps: %d is not >= 0",
                          d.max_forced_steps);
    if (d.linear.fixed_iterations != 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "newton.linear.fixed_iterations: %d (Newton steps use the forcing "
                          "tolerance; must be 0)",
                          d.linear.fixed_iterations);
    defo_newton *N = defo_calloc(1, sizeof *N);
    if (!N) return defo_error_oom("newton", sizeof *N);
    N->def = d;
    N->n = n;
    defo_status st = defo_linear_solver_create(&d.linear, &N->linear);
    if (st) {
        defo_newton_destroy(N);
        return defo_error_prefix("newton");
    }
    const size_t m = 3 * (size_t)n + 1;
    N->f = defo_malloc(m * sizeof(double));
    N->dx = defo_malloc(m * sizeof(double));
    N->xt = defo_malloc(m * sizeof(double));
    N->ft = defo_malloc(m * sizeof(double));
    if (!N->f || !N->dx || !N->xt || !N->ft) {
        defo_newton_destroy(N);
        return defo_error_oom("newton buffers", 4 * m * sizeof(double));
    }
    *out = N;
    return DEFO_OK;
}

const defo_newton_def *defo_newton_get_def(const defo_newton *N) {
    return &N->def;
}

void defo_newton_invalidate(defo_newton *N) {
    if (N) defo_linear_solver_invalidate(N->linear);
}

size_t defo_newton_bytes(const defo_newton *N) {
    if (!N) return 0;
    return sizeof *N + 12 * (size_t)N->n * sizeof(double) +
           (N->diag ? 9 * (size_t)N->n * sizeof(double) : 0) + defo_linear_solver_bytes(N->linear);
}

/* ---------------------------------------------------------------- helpers */
static double now_seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int is_free(const unsigned char *constraint, defo_index i) {
    return !constraint || !constraint[i];
}

/* max over free nodes of |f_i| */
static double free_residual(const defo_newton_problem *p, const double *f) {
    double m = 0.0;
    for (defo_index i = 0; i < p->n; i++) {
        if (!is_free(p->constraint, i)) continue;
        const double *a = f + 3 * (size_t)i;
        m = fmax(m, sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]));
    }
    return m;
}

/* |f|₂ over free nodes (sequential sum: deterministic) */
static double free_norm2(const defo_newton_problem *p, const double *f) {
    double s = 0.0;
    for (defo_index i = 0; i < p->n; i++) {
        if (!is_free(p->constraint, i)) continue;
        const double *a = f + 3 * (size_t)i;
        s += a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
    }
    return sqrt(s);
}

/* Forcing term of iteration k (defo_forcing).  res: |f|∞ and res2: |f|₂
 * over the free nodes now, res2_prev: |f|₂ at the previous iterate.  EW has
 * no ratio at k = 0 and starts at η_max; a predicted start is near enough
 * for one accurate step (measured on bench_quasistatic, cubic predictor:
 * 1.25 Newton iterations per frame instead of 1.57), so its first step uses
 * the TARGET rule. */
static double forcing(defo_newton *N, int k, int predicted, double res, double res2,
                      double res2_prev, double target) {
    const double lo = N->def.cg_min_tolerance, hi = N->def.cg_max_tolerance;
    double eta = 0.0;
    if (N->def.forcing == DEFO_FORCING_EISENSTAT_WALKER && !(k == 0 && predicted)) {
        if (k == 0 || !(res2_prev > 0.0)) {
            eta = hi;
        } else {
            const double gamma = 0.9;
            double ratio = res2 / res2_prev;
            eta = gamma * ratio * ratio;
            double safe = gamma * N->ew_eta * N->ew_eta;
            if (safe > 0.1) eta = fmax(eta, safe);
        }
        eta = fmin(eta, hi);
    }
    eta = fmax(eta, 0.5 * target / res);
    eta = fmin(hi, fmax(lo, eta));
    N->ew_eta = eta;
    return eta;
}

/* Backtracking along dx from x (energy E, force f); on success the trial
 * point and its force are in N->xt / N->ft, its energy in *Et, and the
 * problem's state is the trial point's. */
static int line_search(defo_newton *N, const defo_newton_problem *p, const double *x,
                       const double *f, double E, const double *dx, double *Et, int *backtracks,
                       defo_status *status) {
    const size_t m = 3 * (size_t)p->n;
    double slope = -defo_dot(f, dx, m); /* dE/dα at α = 0 */
    double r0 = free_norm2(p, f);
    double alpha = 1.0;
    int tries = N->def.line_search ? 40 : 1;
    double *xt = N->xt;
    for (int ls = 0; ls < tries; ls++) {
        if (ls > 0 && defo_interrupt_requested()) {
            *status = defo_error(DEFO_ERR_INTERRUPTED, "newton: interrupted in the line search");
            return 0;
        }
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
        for (size_t i = 0; i < m; i++) xt[i] = x[i] + alpha * dx[i];
        *status = p->evaluate(p->ctx, xt, N->ft, Et);
        if (*status == DEFO_OK) {
            if (!N->def.line_search) return 1;
            if (slope < 0.0 && *Et <= E + 1e-4 * alpha * slope) return 1;
            if (free_norm2(p, N->ft) < (1.0 - 1e-4 * alpha) * r0) return 1;
        }
        (*backtracks)++;
        alpha *= 0.5;
    }
    return 0;
}

/* K dx = f for this iteration; the statistics into s. */
static defo_status linear_step(defo_newton *N, const defo_newton_problem *p, const double *x,
                               const double *f, double eta, defo_newton_stats *s) {
    const size_t m = 3 * (size_t)p->n;
    defo_linear_system sys;
    memset(&sys, 0, sizeof sys);
    sys.n = p->n;
    sys.matrix = p->matrix ? p->matrix(p->ctx) : NULL;
    sys.constraint = p->constraint;
    sys.coords = p->coords ? p->coords : x;
    sys.layout = p->layout;
    sys.keep_precond = N->exact;
    if (!sys.matrix) {
        if (!p->apply)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "newton: the problem has neither a matrix nor an apply function");
        sys.apply = p->apply;
        sys.ctx = p->ctx;
        if (p->diagonal && N->def.linear.precond.kind != DEFO_PRECOND_NONE) {
            if (!N->diag) {
                N->diag = defo_malloc(9 * (size_t)p->n * sizeof(double) + 1);
                if (!N->diag)
                    return defo_error_oom("newton diagonal", 9 * (size_t)p->n * sizeof(double));
            }
            p->diagonal(p->ctx, N->diag);
            sys.diagonal = N->diag;
        }
    }
    memset(N->dx, 0, m * sizeof(double));
    defo_linear_stats ls;
    defo_status st = defo_linear_solver_solve(N->linear, &sys, f, N->dx, eta, &ls);
    s->cg_iterations += ls.iterations;
    s->negative_curvature += ls.negative_curvature;
    s->precond_setups += ls.refactored;
    s->fallbacks += ls.fallback;
    s->recoveries += ls.recovered;
    if (ls.refactored && st >= 0 && p->factored) p->factored(p->ctx, x);
    return st < 0 ? st : DEFO_OK;
}

void defo_newton_get_lag(const defo_newton *N, defo_linear_lag *out) {
    defo_linear_solver_get_lag(N ? N->linear : NULL, out);
}

defo_status defo_newton_restore_lag(defo_newton *N, const defo_newton_problem *p, const double *x,
                                    const defo_linear_lag *lag) {
    if (!N || !p || !x || !lag)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "newton: missing argument");
    defo_linear_system sys;
    memset(&sys, 0, sizeof sys);
    sys.n = p->n;
    sys.matrix = lag->valid && p->matrix ? p->matrix(p->ctx) : NULL;
    sys.constraint = p->constraint;
    sys.coords = p->coords ? p->coords : x;
    sys.layout = p->layout;
    if (lag->valid && p->matrix && !sys.matrix)
        return defo_error(DEFO_ERR_NUMERICAL, "newton: no matrix to restore the factor from");
    return defo_linear_solver_restore_lag(N->linear, &sys, lag);
}

/* The problem's tangent made exact (1) or projected (0), and its
 * linearisation at x made again in that kind (f and E do not change). */
static defo_status set_tangent(defo_newton *N, const defo_newton_problem *p, const double *x,
                               int exact) {
    N->exact = exact;
    p->exact_tangent(p->ctx, exact);
    double E = 0.0;
    return p->evaluate(p->ctx, x, N->ft, &E);
}

/* ---------------------------------------------------------------- solve */
defo_status defo_newton_solve(defo_newton *N, const defo_newton_problem *p, double target,
                              double *x, const double *f0, double E0, int predicted,
                              defo_newton_stats *stats) {
    defo_newton_stats s;
    memset(&s, 0, sizeof s);
    s.reason = DEFO_REASON_NUMERICAL;
    if (stats) *stats = s;
    if (!N || !p || !x || !p->evaluate)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "newton: missing argument");
    if (p->n != N->n)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "newton: problem of %ld nodes, driver created for %ld", (long)p->n,
                          (long)N->n);
    if (!(target >= 0) || !isfinite(target))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "newton: target %g is not >= 0", target);
    const size_t m = 3 * (size_t)p->n;
    double *f = N->f, *xt = N->xt, *ft = N->ft, *dx = N->dx;
    double E = E0;
    defo_status st = DEFO_OK, ret = DEFO_OK;
    if (f0) {
        if (f0 != f) memcpy(f, f0, m * sizeof(double));
    } else {
        st = p->evaluate(p->ctx, x, f, &E);
        if (st != DEFO_OK) {
            if (stats) *stats = s;
            return st;
        }
    }
    double res = free_residual(p, f);
    double res2 = free_norm2(p, f), res2_prev = 0.0;
    s.initial_residual = res;
    s.reason = DEFO_REASON_MAX_ITERATIONS;
    int forced = 0;
    /* the exact tangent: entered at most 4 times a solve */
    const int can_exact = p->exact_tangent != NULL;
    int entries = 0;
    N->exact = 0;
    for (int k = 0;; k++) {
        if (res <= target) {
            s.reason = DEFO_REASON_CONVERGED;
            break;
        }
        if (k >= N->def.max_iterations) break;
        if (defo_interrupt_requested()) { /* the state is x's */
            s.reason = DEFO_REASON_INTERRUPTED;
            ret = defo_error(DEFO_ERR_INTERRUPTED, "newton: interrupted after %d iterations", k);
            break;
        }
        s.iterations++;
        s.exact_iterations += N->exact;
        const int bt0 = s.backtracks, nc0 = s.negative_curvature;
        int curved = 0; /* this step's CG stopped at non-positive curvature */
        double tl = now_seconds();
        double eta = forcing(N, k, predicted, res, res2, res2_prev, target);
        st = linear_step(N, p, x, f, eta, &s);
        s.linear_seconds += now_seconds() - tl;
        if (st != DEFO_OK) { /* the state is still x's: nothing evaluated since */
            s.reason = st == DEFO_ERR_INTERRUPTED ? DEFO_REASON_INTERRUPTED : DEFO_REASON_NUMERICAL;
            ret = st;
            break;
        }
        if (N->exact) { /* expected there: the exact tangent's, counted apart */
            curved = s.negative_curvature > nc0;
            s.negative_curvature = nc0;
            s.exact_curvature += curved;
        }
        double dx2 = can_exact && p->cap_step ? defo_dot(dx, dx, m) : 0.0;
        if (p->cap_step) p->cap_step(p->ctx, x, dx);
        /* a step cut by the problem is not the Newton step */
        const int cut = can_exact && p->cap_step && defo_dot(dx, dx, m) < dx2;
        double Et = 0.0;
        int accepted = line_search(N, p, x, f, E, dx, &Et, &s.backtracks, &st);
        if (st == DEFO_ERR_INTERRUPTED) {
            double Er = 0.0;
            (void)p->evaluate(p->ctx, x, f, &Er); /* restore the state at x */
            s.reason = DEFO_REASON_INTERRUPTED;
            ret = defo_error(DEFO_ERR_INTERRUPTED,
                             "newton: interrupted in the line search of "
                             "iteration %d",
                             k + 1);
            break;
        }
        if (!accepted && N->def.line_search) {
            /* Neither merit decreased along the Newton direction (the
             * extrapolated energy and the force disagree near inverted
             * elements, or contact switches): take the full step, capped,
             * and let the following iterations recover; several in a row
             * mean the solve is stuck. */
            forced++;
            if (forced <= N->def.max_forced_steps) {
                DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
                for (size_t i = 0; i < m; i++) xt[i] = x[i] + dx[i];
                st = p->evaluate(p->ctx, xt, ft, &Et);
                accepted = st == DEFO_OK;
            }
        } else {
            forced = 0;
        }
        if (!accepted) {
            double Er = 0.0;
            defo_status st2 = p->evaluate(p->ctx, x, f, &Er); /* restore the state at x */
            (void)st2;
            s.reason = st != DEFO_OK ? DEFO_REASON_NUMERICAL : DEFO_REASON_STALLED;
            if (st != DEFO_OK) ret = st;
            break;
        }
        double res_new = free_residual(p, ft);
        memcpy(x, xt, m * sizeof(double));
        memcpy(f, ft, m * sizeof(double));
        E = Et;
        res = res_new;
        res2_prev = res2;
        res2 = free_norm2(p, f);
        if (p->accepted) p->accepted(p->ctx, x);
        if (can_exact) {
            /* A full Newton step that reduced |f|₂ less than twice: the
             * model is wrong, not the step too long.  The projected tangent
             * is stiffer than the energy wherever it dropped negative
             * curvature (elements compressed past their projected
             * eigenvalues; a contact barrier's pull along a vertex or an
             * edge), and Newton then converges linearly, as slowly as the
             * two differ (TSIF05 §8 trades that for robustness far from
             * the solution).  The exact tangent from here, as long as its
             * full steps halve |f|₂: back to the projected one at
             * non-positive curvature, a step the line search or the
             * problem cut, or a slow one (what limits the model is then
             * not the projection). */
            const int full = forced == 0 && s.backtracks == bt0 && !cut;
            const int slow = res2 > 0.5 * res2_prev;
            int want = N->exact;
            if (!N->exact && full && slow && entries < 4)
                want = 1;
            else if (N->exact && (!full || slow || curved))
                want = 0;
            if (want != N->exact) {
                entries += want;
                s.exact_turns += want;
                st = set_tangent(N, p, x, want);
                if (st != DEFO_OK) {
                    s.reason = DEFO_REASON_NUMERICAL;
                    ret = st;
                    break;
                }
            }
        }
    }
    if (N->exact) { /* the projected linearisation at x, as every solve ends */
        defo_status st2 = set_tangent(N, p, x, 0);
        if (st2 != DEFO_OK && ret == DEFO_OK) ret = st2;
    }
    s.residual = res;
    s.energy = E;
    if (ret == DEFO_OK && s.reason != DEFO_REASON_CONVERGED)
        ret = defo_error(DEFO_WARN_NOT_CONVERGED,
                         "newton: not converged (%s after %d iterations, residual %g, target %g)",
                         defo_convergence_reason_name(s.reason), s.iterations, res, target);
    if (stats) *stats = s;
    return ret;
}
