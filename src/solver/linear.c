/*
 * solver/linear.c — the linear solver every integrator uses (defo/solver.h):
 * PCG (the loop of solver/pcg_core.h) with a preconditioner it keeps between
 * solves, or a direct sparse Cholesky solve; and defo_pcg_solve, the same
 * loop with a caller's preconditioner.
 *
 * One lag policy for factorised preconditioners (IC(0), two-level, Cholesky
 * used as a preconditioner): a factor of an earlier matrix still
 * preconditions a drifting one (MG04 §6: K' changes only with the
 * rotations; TSIF05 §4: the Newton matrices of a frame and of the next
 * frames differ little), so it is kept until it has served max_age solves,
 * or until the rate of the last solve — CG iterations per decade of
 * residual reduction, its / max(log10(|r₀|/|r|), 0.5), at least 1 —
 * exceeds rate_growth times the rate of the first solve with it (the
 * matrix has drifted away), or until the caller invalidates it.  The floor
 * of one iteration per decade: a lagged Cholesky factor converges in one
 * iteration by some fifteen decades when fresh, so without it two
 * iterations a step later would already count as a 10× slowdown (measured
 * on bench_corotated: a refactorisation every other step, 5× slower).  The rate compares solves with
 * different tolerances and different starting residuals (warm starts,
 * Newton forcing), and in fixed-iteration mode a worse factor shows as less
 * reduction for the same count.  A solve that stopped at max_iterations
 * (tolerance mode) has an unknown rate: the next one refactors.
 *
 * Diagonal preconditioners are rebuilt for every solve (O(n)), robustly: a
 * node whose 3×3 block is not safely invertible (trace ≤ 0 or det ≤ 1e-9
 * trace³: a node whose elements are all flat and clamped, TSIF05 §8) gets
 * 1 / max(a_kk, floor) per component instead of an error, so a Newton step
 * can still be computed there.
 *
 * Direct method: CHOLMOD factors the matrix with the couplings of fixed
 * nodes dropped (exactly the operator projected CG sees), the analysis kept
 * while the pattern holds; x = x₀ + S (L Lᵀ)⁻¹ S (b − A x₀).  The factor is
 * made at every solve, unless the caller says the matrix is the last one
 * (same_matrix: kept rotations, MTPS08 §4.4) and the fixed nodes are the
 * factor's (a handle grabbed or released changes the factored operator).  A failed
 * factorisation or a non-finite solution falls back to block-Jacobi PCG for
 * that solve.
 *
 * Invariants: `valid` is 1 only while P holds a successful factorisation
 * of a matrix with the current pattern; buffers are sized for the largest
 * n seen and reallocated only when n grows; everything else is sequential or
 * deterministic (pcg_core.h), so results do not depend on the thread count.
 */
#include "defo/cholesky.h"
#include "defo/solver.h"

#include "base/base.h"
#include "base/parallel.h"
#include "solver/pcg_core.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <string.h>
#include <time.h>

struct defo_linear_solver {
    defo_linear_solver_def def;
    defo_precond *P;     /* factorised kinds: the lagged factor */
    defo_precond *Pd;    /* (block) Jacobi: the kind itself, stand-in or fallback */
    defo_cholesky *chol; /* method CHOLESKY */
    double *work;        /* 5 · 3n: PCG's r, z, p, q and the direct solve's step */
    defo_index work_n;
    /* lag policy */
    int valid, age;
    int direct_valid; /* chol holds the factor of the last direct solve's matrix */
    double first_rate, last_rate;
    /* initial guesses (def.history): the last solutions of hist_n nodes,
     * slot (hist_head + a) % history holding the one of a solves ago */
    double *hist;     /* history · 3 hist_n */
    double *hist_aw;  /* history · 3 hist_n: S A S of each (scratch) */
    double *hist_dot; /* the Gram products' partial sums per block (scratch) */
    int hist_count, hist_head;
    defo_index hist_n;
    void *backend; /* DEFO_LINEAR_BACKEND: the backend's state */
};

/* ---------------------------------------------------------------- traffic */
static _Thread_local defo_solve_traffic traffic;

defo_solve_traffic defo_solve_traffic_get(void) {
    return traffic;
}

static double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One solve's CG iterations: per iteration a product (the matrix's blocks,
 * columns and row offsets, p read and q written), one preconditioner
 * application, and ~14 passes over 3n-vectors (projections, three dot
 * products, the x/r and p updates). */
static void count_traffic(const defo_linear_system *sys, const defo_precond *P, int iterations,
                          double seconds) {
    const double m = 3.0 * (double)sys->n;
    double per = 14 * 8 * m;
    if (sys->matrix)
        per += (double)sys->matrix->num_blocks * (9 * sizeof(double) + sizeof(defo_index)) +
               (double)sys->matrix->num_rows * sizeof(int64_t) + 2 * 8 * m;
    if (P) per += defo_precond_apply_bytes(P);
    traffic.solves++;
    traffic.iterations += iterations;
    traffic.seconds += seconds;
    traffic.bytes += per * iterations;
}

defo_linear_solver_def defo_default_linear_solver_def(void) {
    defo_linear_solver_def d;
    memset(&d, 0, sizeof d);
    d.method = DEFO_LINEAR_PCG;
    d.precond = defo_default_precond_def();
    d.max_iterations = 1000;
    d.tolerance = 1e-8;
    d.fixed_iterations = 0;
    d.curvature = DEFO_CURVATURE_ERROR;
    d.max_age = 0;
    d.rate_growth = 2.0;
    return d;
}

static int factorised(defo_precond_kind k) {
    return k == DEFO_PRECOND_BLOCK_IC0 || k == DEFO_PRECOND_TWO_LEVEL || k == DEFO_PRECOND_CHOLESKY;
}

static defo_status validate(const defo_linear_solver_def *d) {
    if (d->method == DEFO_LINEAR_BACKEND &&
        (!d->backend || !d->backend->create || !d->backend->setup || !d->backend->solve))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver.method: backend without a complete backend table");
    if (memchr(d->backend_options, 0, sizeof d->backend_options) == NULL)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver.backend_options: not NUL-terminated");
    if (d->method != DEFO_LINEAR_PCG && d->method != DEFO_LINEAR_CHOLESKY &&
        d->method != DEFO_LINEAR_BACKEND)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver.method: %d is unknown",
                          (int)d->method);
    if (d->max_iterations < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver.max_iterations: %d is not >= 1",
                          d->max_iterations);
    if (d->fixed_iterations < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver.fixed_iterations: %d is not >= 0", d->fixed_iterations);
    if (d->fixed_iterations > 0 ? !(d->tolerance >= 0 && d->tolerance < 1)
                                : !(d->tolerance > 0 && d->tolerance < 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver.tolerance: %g is not in %s",
                          d->tolerance, d->fixed_iterations > 0 ? "[0, 1)" : "(0, 1)");
    if (d->curvature != DEFO_CURVATURE_ERROR && d->curvature != DEFO_CURVATURE_STOP)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver.curvature: %d is unknown",
                          (int)d->curvature);
    if (d->max_age < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver.max_age: %d is not >= 0",
                          d->max_age);
    if (d->history < 0 || d->history > DEFO_LINEAR_HISTORY_MAX)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver.history: %d is not in [0, %d]",
                          d->history, DEFO_LINEAR_HISTORY_MAX);
    if (!(d->rate_growth > 0) || !isfinite(d->rate_growth))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver.rate_growth: %g is not > 0",
                          d->rate_growth);
    if (d->method == DEFO_LINEAR_CHOLESKY && !defo_cholesky_available())
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "linear_solver.method: cholesky requested but defo was built without "
                          "CHOLMOD (-DDEFO_CHOLMOD=OFF); use pcg");
    return DEFO_OK;
}

void defo_linear_solver_destroy(defo_linear_solver *s) {
    if (!s) return;
    defo_free(s->hist);
    defo_free(s->hist_aw);
    defo_free(s->hist_dot);
    defo_precond_destroy(s->P);
    defo_precond_destroy(s->Pd);
    defo_cholesky_destroy(s->chol);
    if (s->backend) s->def.backend->destroy(s->backend);
    defo_free(s->work);
    defo_free(s);
}

defo_status defo_linear_solver_create(const defo_linear_solver_def *def, defo_linear_solver **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver: out is NULL");
    *out = NULL;
    defo_linear_solver_def d = def ? *def : defo_default_linear_solver_def();
    defo_status st = validate(&d);
    if (st) return st;
    defo_linear_solver *s = defo_calloc(1, sizeof *s);
    if (!s) return defo_error_oom("linear solver", sizeof *s);
    s->def = d;
    if (factorised(d.precond.kind)) st = defo_precond_create(&d.precond, &s->P);
    defo_precond_def dd = d.precond;
    dd.kind = d.precond.kind == DEFO_PRECOND_JACOBI && d.method == DEFO_LINEAR_PCG
                  ? DEFO_PRECOND_JACOBI
                  : DEFO_PRECOND_BLOCK_JACOBI;
    if (!st) st = defo_precond_create(&dd, &s->Pd);
    if (!st && d.method == DEFO_LINEAR_CHOLESKY) st = defo_cholesky_create(&s->chol);
    if (!st && d.method == DEFO_LINEAR_BACKEND) st = d.backend->create(&s->def, &s->backend);
    if (st) {
        defo_linear_solver_destroy(s);
        return defo_error_prefix("linear_solver");
    }
    s->Pd->robust = 1;
    *out = s;
    return DEFO_OK;
}

const defo_linear_solver_def *defo_linear_solver_get_def(const defo_linear_solver *s) {
    return &s->def;
}

void defo_linear_solver_invalidate(defo_linear_solver *s) {
    if (s) s->valid = s->direct_valid = 0;
}

/* ---------------------------------------------------------------- guesses
 * Successive right-hand sides (P. F. Fischer, "Projection techniques for
 * iterative solution of Ax = b with successive right-hand sides", CMAME
 * 163, 1998): the solutions of the last k solves span a space in which the
 * next solution nearly lies (the steps of a motion change little from one
 * to the next: MG04 §6's warm start vⁿ is the one-vector case).  With
 * W = S [x₁ … x_k] (projected onto the free subspace) and r₀ = S (b − A x₀)
 * for the caller's x₀, the guess x₀ + W c with
 *     (Wᵀ A W) c = Wᵀ r₀
 * is the best in x₀ + span W in the A-norm of the error (Galerkin), so
 * never worse than x₀ itself; then PCG goes on from it with
 * r = r₀ − A W c.  The products A W are one pass over the matrix for all k
 * (defo_bcsr_multiply_many), the Gram products one blocked pass over the
 * vectors; Wᵀ A W is factored by LDLᵀ, a column whose pivot has lost all
 * but 1e-12 of its diagonal (a solution nearly in the span of the newer
 * ones) dropped.  On the n = 13 cantilever: 53 → 22-28 PCG iterations per
 * step once eight solutions are known (bench_scaling).  The solutions are
 * state: checkpoints keep them (defo_linear_solver_history_save), so a
 * resumed run makes the same guesses. */
#define HIST_BLOCK 4096
_Static_assert((int)DEFO_LINEAR_HISTORY_MAX <= (int)DEFO_BCSR_MANY_MAX,
               "one product pass for the history");

static size_t hist_dot_count(int k, defo_index n) {
    const size_t blocks = (3 * (size_t)n + HIST_BLOCK - 1) / HIST_BLOCK;
    return blocks * ((size_t)k * (size_t)(k + 1) / 2 + (size_t)k);
}

static defo_status ensure_history(defo_linear_solver *s, defo_index n) {
    const int k = s->def.history;
    if (s->hist && s->hist_n == n) return DEFO_OK;
    defo_free(s->hist);
    defo_free(s->hist_aw);
    defo_free(s->hist_dot);
    s->hist_count = s->hist_head = 0;
    s->hist_n = n;
    const size_t m = 3 * (size_t)n * (size_t)k;
    s->hist = defo_calloc(m + 1, sizeof(double));
    s->hist_aw = defo_malloc((m + 1) * sizeof(double));
    s->hist_dot = defo_malloc((hist_dot_count(k, n) + 1) * sizeof(double));
    if (s->hist && s->hist_aw && s->hist_dot) return DEFO_OK;
    defo_free(s->hist);
    defo_free(s->hist_aw);
    defo_free(s->hist_dot);
    s->hist = s->hist_aw = s->hist_dot = NULL;
    return defo_error_oom("linear solver history", 2 * m * sizeof(double));
}

/* The stored solution of a solves ago. */
static double *hist_slot(const defo_linear_solver *s, int a) {
    return s->hist + (size_t)((s->hist_head + a) % s->def.history) * 3 * (size_t)s->hist_n;
}

/* x → the newest stored solution (the oldest is overwritten). */
static void hist_push(defo_linear_solver *s, const double *x) {
    const int k = s->def.history;
    s->hist_head = (s->hist_head + k - 1) % k;
    memcpy(hist_slot(s, 0), x, 3 * (size_t)s->hist_n * sizeof(double));
    if (s->hist_count < k) s->hist_count++;
}

/* x ← x + W c, r ← r − A W c (r = S (b − A x) on input), W the projected
 * history (module comment), its columns newest first.  Everything is
 * elementwise or summed in fixed blocks in the order of the solutions' age
 * (not of their slots: a restored history sits in other slots): bitwise
 * identical for any thread count and after a restore. */
static void hist_guess(defo_linear_solver *s, const defo_linear_system *sys, double *x, double *r) {
    const int k = s->hist_count;
    const defo_index n = sys->n;
    const size_t m = 3 * (size_t)n;
    const double *W[DEFO_LINEAR_HISTORY_MAX] = {0};
    double *AW[DEFO_LINEAR_HISTORY_MAX] = {0};
    for (int a = 0; a < k; a++) {
        double *w = hist_slot(s, a);
        defo_pcg_project(n, sys->constraint, sys->normal, w);
        W[a] = w;
        AW[a] = s->hist_aw + (size_t)a * m;
    }
    if (sys->matrix)
        defo_bcsr_multiply_many(sys->matrix, k, W, AW);
    else
        for (int a = 0; a < k; a++) sys->apply(sys->ctx, W[a], AW[a]);
    for (int a = 0; a < k; a++) defo_pcg_project(n, sys->constraint, sys->normal, AW[a]);
    /* G = Wᵀ A W (upper triangle by rows) and g = Wᵀ r, per fixed block of
     * HIST_BLOCK entries, then summed in block order */
    const int np = k * (k + 1) / 2 + k;
    const size_t blocks = (m + HIST_BLOCK - 1) / HIST_BLOCK;
    double *part = s->hist_dot;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m * (size_t)np / 2))
    for (size_t bl = 0; bl < blocks; bl++) {
        const size_t lo = bl * HIST_BLOCK, hi = lo + HIST_BLOCK < m ? lo + HIST_BLOCK : m;
        double *pp = part + bl * (size_t)np;
        int q = 0;
        for (int a = 0; a < k; a++) {
            const double *wa = W[a];
            for (int c = a; c < k; c++) {
                const double *ac = AW[c];
                double t = 0;
                for (size_t i = lo; i < hi; i++) t += wa[i] * ac[i];
                pp[q++] = t;
            }
            double t = 0;
            for (size_t i = lo; i < hi; i++) t += wa[i] * r[i];
            pp[q++] = t;
        }
    }
    double G[DEFO_LINEAR_HISTORY_MAX][DEFO_LINEAR_HISTORY_MAX], g[DEFO_LINEAR_HISTORY_MAX];
    {
        double tot[DEFO_LINEAR_HISTORY_MAX * (DEFO_LINEAR_HISTORY_MAX + 3) / 2];
        for (int q = 0; q < np; q++) tot[q] = 0;
        for (size_t bl = 0; bl < blocks; bl++)
            for (int q = 0; q < np; q++) tot[q] += part[bl * (size_t)np + (size_t)q];
        int q = 0;
        for (int a = 0; a < k; a++) {
            for (int c = a; c < k; c++, q++) G[a][c] = G[c][a] = tot[q];
            g[a] = tot[q++];
        }
    }
    /* LDLᵀ, newest first, a column whose pivot is below 1e-12 of its
     * diagonal dropped; then c = G⁻¹ g over the kept ones */
    double L[DEFO_LINEAR_HISTORY_MAX][DEFO_LINEAR_HISTORY_MAX], D[DEFO_LINEAR_HISTORY_MAX];
    int keep[DEFO_LINEAR_HISTORY_MAX];
    for (int j = 0; j < k; j++) {
        double dj = G[j][j];
        for (int p = 0; p < j; p++)
            if (keep[p]) dj -= L[j][p] * L[j][p] * D[p];
        keep[j] = G[j][j] > 0 && dj > 1e-12 * G[j][j] && isfinite(dj);
        D[j] = keep[j] ? dj : 0;
        for (int i = j + 1; i < k; i++) {
            double t = G[i][j];
            for (int p = 0; p < j; p++)
                if (keep[p]) t -= L[i][p] * L[j][p] * D[p];
            L[i][j] = keep[j] ? t / dj : 0;
        }
    }
    double c[DEFO_LINEAR_HISTORY_MAX];
    for (int i = 0; i < k; i++) { /* L y = g */
        double t = g[i];
        for (int p = 0; p < i; p++) t -= L[i][p] * c[p];
        c[i] = keep[i] ? t : 0;
    }
    for (int i = 0; i < k; i++) c[i] = keep[i] ? c[i] / D[i] : 0;
    int any = 0;
    for (int i = k - 1; i >= 0; i--) { /* Lᵀ c = D⁻¹ y */
        double t = c[i];
        for (int p = i + 1; p < k; p++) t -= L[p][i] * c[p];
        c[i] = keep[i] ? t : 0;
        if (!isfinite(c[i])) return; /* keep x₀ */
        any |= c[i] != 0;
    }
    if (!any) return;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m * (size_t)k))
    for (size_t i = 0; i < m; i++) {
        double dx = 0, dr = 0;
        for (int a = 0; a < k; a++) {
            dx += c[a] * W[a][i];
            dr += c[a] * AW[a][i];
        }
        x[i] += dx;
        r[i] -= dr;
    }
}

size_t defo_linear_solver_history_bytes(const defo_linear_solver *s, defo_index n) {
    if (!s || s->def.history == 0) return 0;
    return 8 + 3 * (size_t)s->def.history * (size_t)n * sizeof(double);
}

void defo_linear_solver_history_save(const defo_linear_solver *s, defo_index n, void *out) {
    if (!s || s->def.history == 0) return;
    unsigned char *o = out;
    const int32_t head[2] = {s->hist && s->hist_n == n ? s->hist_count : 0, 0};
    memcpy(o, head, 8);
    const size_t m = 3 * (size_t)n;
    for (int a = 0; a < s->def.history; a++) {
        unsigned char *d = o + 8 + (size_t)a * m * sizeof(double);
        if (a < head[0])
            memcpy(d, hist_slot(s, a), m * sizeof(double));
        else
            memset(d, 0, m * sizeof(double));
    }
}

defo_status defo_linear_solver_history_restore(defo_linear_solver *s, defo_index n,
                                               const void *in) {
    if (!s || s->def.history == 0) return DEFO_OK;
    const unsigned char *p = in;
    int32_t head[2];
    memcpy(head, p, 8);
    if (head[0] < 0 || head[0] > s->def.history)
        return defo_error(DEFO_ERR_PARSE, "linear solver history: %d solutions of at most %d",
                          (int)head[0], s->def.history);
    defo_status st = ensure_history(s, n);
    if (st) return st;
    const size_t m = 3 * (size_t)n;
    s->hist_head = 0;
    s->hist_count = 0;
    for (int a = head[0] - 1; a >= 0; a--) /* oldest first */
        hist_push(s, (const double *)(const void *)(p + 8 + (size_t)a * m * sizeof(double)));
    return DEFO_OK;
}

void defo_linear_solver_forget_history(defo_linear_solver *s) {
    if (s) s->hist_count = s->hist_head = 0;
}

size_t defo_linear_solver_bytes(const defo_linear_solver *s) {
    if (!s) return 0;
    const size_t hist = s->hist ? (2 * 3 * (size_t)s->def.history * (size_t)s->hist_n +
                                   hist_dot_count(s->def.history, s->hist_n)) *
                                      sizeof(double)
                                : 0;
    return sizeof *s + 15 * (size_t)s->work_n * sizeof(double) + defo_precond_bytes(s->P) +
           defo_precond_bytes(s->Pd) + defo_cholesky_bytes(s->chol) + hist +
           (s->backend && s->def.backend->bytes ? s->def.backend->bytes(s->backend) : 0);
}

/* ---------------------------------------------------------------- callbacks */
typedef struct op_ctx {
    const defo_linear_system *sys;
    const defo_precond *P;
} op_ctx;

static void op_apply(void *ctx, const double *x, double *y) {
    const defo_linear_system *sys = ((const op_ctx *)ctx)->sys;
    if (sys->apply)
        sys->apply(sys->ctx, x, y);
    else
        defo_bcsr_multiply(sys->matrix, x, y);
}

static void op_precond(void *ctx, const double *r, double *z) {
    defo_precond_apply(((const op_ctx *)ctx)->P, r, z);
}

/* ---------------------------------------------------------------- solve */
static defo_status check_system(const defo_linear_solver *s, const defo_linear_system *sys,
                                const double *b, const double *x) {
    if (!sys || !b || !x || sys->n < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver: missing argument");
    if (!sys->matrix && !sys->apply)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver: the system has neither a matrix nor an apply function");
    if (sys->matrix && sys->matrix->num_rows != sys->n)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver: matrix has %ld block rows, system %ld nodes",
                          (long)sys->matrix->num_rows, (long)sys->n);
    if (!sys->matrix && s->def.precond.kind != DEFO_PRECOND_NONE && !sys->diagonal)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver: matrix-free system without diagonal blocks for the "
                          "%s preconditioner",
                          defo_precond_name(s->def.precond.kind));
    if (sys->matrix && s->def.precond.kind == DEFO_PRECOND_TWO_LEVEL && !sys->coords &&
        s->def.method == DEFO_LINEAR_PCG)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver: the two_level preconditioner needs node coordinates");
    if (s->def.method == DEFO_LINEAR_CHOLESKY) {
        if (!sys->matrix)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "linear_solver: the cholesky method needs the assembled matrix");
        if (sys->constraint)
            for (defo_index i = 0; i < sys->n; i++)
                if (sys->constraint[i] == DEFO_CONSTRAINT_NORMAL)
                    return defo_error(DEFO_ERR_UNSUPPORTED,
                                      "linear_solver: the cholesky method does not take normal "
                                      "constraints (node %ld); use pcg",
                                      (long)i);
    }
    return DEFO_OK;
}

static defo_status ensure_work(defo_linear_solver *s, defo_index n) {
    if (s->work && n <= s->work_n) return DEFO_OK;
    double *w = defo_malloc(15 * (size_t)n * sizeof *w + 1);
    if (!w) return defo_error_oom("linear solver buffers", 15 * (size_t)n * sizeof(double));
    defo_free(s->work);
    s->work = w;
    s->work_n = n;
    return DEFO_OK;
}

/* The (block) Jacobi preconditioner Pd from the matrix or the system's
 * diagonal blocks. */
static defo_status setup_diagonal(defo_linear_solver *s, const defo_linear_system *sys) {
    if (sys->matrix)
        return defo_precond_setup_diagonal(s->Pd, sys->n, sys->matrix->val, sys->matrix->diag,
                                           sys->constraint);
    return defo_precond_setup_diagonal(s->Pd, sys->n, sys->diagonal, NULL, sys->constraint);
}

/* Direct solve; DEFO_OK with x updated, or an error (x unchanged) after
 * which the caller falls back to PCG. */
static defo_status direct_solve(defo_linear_solver *s, const defo_linear_system *sys,
                                const double *b, double *x, defo_linear_stats *ls) {
    const defo_index n = sys->n;
    const size_t m = 3 * (size_t)n;
    double *r = s->work, *d = s->work + 4 * m;
    defo_status st = DEFO_OK;
    if (!(sys->same_matrix && s->direct_valid &&
          defo_cholesky_same_fixed(s->chol, sys->constraint))) {
        s->direct_valid = 0;
        st = defo_cholesky_factor(s->chol, sys->matrix, sys->constraint);
        if (st) return st;
        s->direct_valid = 1;
        ls->refactored = 1;
    }
    memcpy(r, b, m * sizeof *r);
    defo_pcg_project(n, sys->constraint, sys->normal, r);
    const double bnorm = sqrt(defo_dot(r, r, m));
    const int zero = defo_pcg_all_zero(x, m);
    if (!zero) {
        op_ctx c = {sys, NULL};
        op_apply(&c, x, d);
        for (size_t i = 0; i < m; i++) r[i] = b[i] - d[i];
        defo_pcg_project(n, sys->constraint, sys->normal, r);
    }
    st = defo_cholesky_solve(s->chol, r, d);
    if (st) return st;
    defo_pcg_project(n, sys->constraint, sys->normal, d);
    for (size_t i = 0; i < m; i++)
        if (!isfinite(d[i]))
            return defo_error(DEFO_ERR_NUMERICAL,
                              "linear_solver: Cholesky step not finite at node %ld", (long)(i / 3));
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
    for (size_t i = 0; i < m; i++) x[i] += d[i];
    /* the residual it left, for the statistics */
    op_ctx c = {sys, NULL};
    op_apply(&c, x, d);
    for (size_t i = 0; i < m; i++) r[i] = b[i] - d[i];
    defo_pcg_project(n, sys->constraint, sys->normal, r);
    ls->residual = bnorm > 0 ? sqrt(defo_dot(r, r, m)) / bnorm : 0.0;
    ls->converged = 1;
    return DEFO_OK;
}

/* The lag policy's book-keeping after a backend solve with a kept
 * preconditioner: its iterations per decade of residual reduction (the
 * rule of the PCG path below). */
static void lag_account(defo_linear_solver *s, int iterations, double initial, double residual,
                        int hit_max) {
    double reduction = initial > 0 ? residual / initial : 1.0;
    double decades = fmax(-log10(fmax(reduction, 1e-300)), 0.5);
    double rate = fmax(iterations / decades, 1.0);
    if (s->age == 0) s->first_rate = rate;
    s->last_rate = rate;
    s->age++;
    if (s->def.fixed_iterations == 0 && hit_max) s->valid = 0; /* rate unknown: refactor */
}

/* DEFO_LINEAR_BACKEND: the backend's preconditioner made again by the lag
 * policy, then its solve. */
static defo_status backend_solve(defo_linear_solver *s, const defo_linear_system *sys,
                                 const double *b, double *x, double tolerance,
                                 defo_linear_stats *ls) {
    const defo_linear_solver_def *d = &s->def;
    if (!sys || !b || !x || sys->n < 0 || (!sys->matrix && !sys->apply))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver: missing argument");
    if (sys->matrix && sys->matrix->num_rows != sys->n)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver: matrix has %ld block rows, system %ld nodes",
                          (long)sys->matrix->num_rows, (long)sys->n);
    defo_status st = DEFO_OK;
    const int stale = !s->valid || (d->max_age > 0 && s->age >= d->max_age) ||
                      s->last_rate > d->rate_growth * s->first_rate;
    if (stale && !(sys->keep_precond && s->valid)) {
        s->valid = 0;
        st = d->backend->setup(s->backend, sys);
        if (st) return defo_error_prefix("linear_solver (%s)", d->backend->name);
        s->valid = 1;
        s->age = 0;
        s->first_rate = s->last_rate = 0.0;
        ls->refactored = 1;
    }
    defo_backend_result r;
    memset(&r, 0, sizeof r);
    st = d->backend->solve(s->backend, sys, b, x, tolerance, &r);
    ls->iterations = r.iterations;
    ls->residual = r.residual;
    ls->converged = r.converged;
    ls->negative_curvature = r.negative;
    ls->fallback = r.fallback;
    ls->recovered = r.retried || r.fallback;
    if (r.setup) { /* a new pattern: the backend made its preconditioner again */
        s->age = 0;
        s->first_rate = s->last_rate = 0.0;
        ls->refactored = 1;
    }
    if (r.iterations > 0 && st >= 0) lag_account(s, r.iterations, r.initial, r.residual, r.hit_max);
    return st;
}

defo_status defo_linear_solver_solve(defo_linear_solver *s, const defo_linear_system *sys,
                                     const double *b, double *x, double tolerance,
                                     defo_linear_stats *stats) {
    defo_linear_stats ls;
    memset(&ls, 0, sizeof ls);
    if (stats) *stats = ls;
    if (!s) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver: NULL solver");
    if (s->def.method == DEFO_LINEAR_BACKEND) {
        defo_status bs = backend_solve(s, sys, b, x, tolerance, &ls);
        if (stats) *stats = ls;
        return bs;
    }
    if (sys && sys->layout && sys->layout->size > 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver: a system spread over %d processes needs a distributed "
                          "backend (\"solver\": \"petsc\")",
                          sys->layout->size);
    defo_status st = check_system(s, sys, b, x);
    if (!st) st = ensure_work(s, sys->n);
    if (st) return st;
    const defo_linear_solver_def *d = &s->def;

    if (d->method == DEFO_LINEAR_CHOLESKY) {
        st = direct_solve(s, sys, b, x, &ls);
        if (st == DEFO_OK) {
            if (stats) *stats = ls;
            return DEFO_OK;
        }
        ls.refactored = 0;
        ls.fallback = 1;
        ls.recovered = 1;
    }

    /* the preconditioner of this solve */
    const defo_precond *P = NULL;
    int lagged = 0;
    const defo_precond_kind kind = d->precond.kind;
    if (ls.fallback) {
        st = setup_diagonal(s, sys);
        if (st) return st;
        P = s->Pd;
    } else if (factorised(kind) && sys->matrix) {
        const int stale = !s->valid || (d->max_age > 0 && s->age >= d->max_age) ||
                          s->last_rate > d->rate_growth * s->first_rate;
        if (stale && !sys->keep_precond) {
            st = defo_precond_setup(s->P, sys->matrix, sys->constraint, sys->coords);
            s->valid = st == DEFO_OK;
            s->age = 0;
            s->first_rate = s->last_rate = 0.0;
            ls.refactored = s->valid;
            ls.fallback = !s->valid;
            ls.recovered = ls.fallback;
        }
        if (s->valid) {
            P = s->P;
            lagged = 1;
        } else {
            st = setup_diagonal(s, sys);
            if (st) return st;
            P = s->Pd;
        }
    } else if (kind != DEFO_PRECOND_NONE) {
        /* (block) Jacobi, or its stand-in for a factor without a matrix */
        st = setup_diagonal(s, sys);
        if (st) return st;
        P = s->Pd;
    }

    const int fixed = d->fixed_iterations > 0;
    defo_pcg_opts o;
    o.max_iterations = fixed ? d->fixed_iterations : d->max_iterations;
    o.tolerance = tolerance > 0 ? tolerance : d->tolerance;
    o.fixed = fixed;
    o.stop_at_curvature = d->curvature == DEFO_CURVATURE_STOP;
    op_ctx c = {sys, P};
    defo_pcg_out out;
    const int history = d->history > 0;
    if (history) {
        st = ensure_history(s, sys->n);
        if (st) return st;
    }
    const double t0 = wall_seconds();
    o.given_residual = 0;
    if (history && s->hist_count > 0) {
        /* r₀ for the caller's x, then the projection onto the history */
        const size_t m = 3 * (size_t)sys->n;
        double *r = s->work;
        op_apply(&c, x, r + m);
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
        for (size_t i = 0; i < m; i++) r[i] = b[i] - r[m + i];
        defo_pcg_project(sys->n, sys->constraint, sys->normal, r);
        hist_guess(s, sys, x, r);
        o.given_residual = 1;
    }
    st = defo_pcg_run("PCG", sys->matrix ? "matrix" : "operator", &o, sys->n, op_apply, &c,
                      P ? op_precond : NULL, &c, sys->constraint, sys->normal, b, x, s->work, &out);
    count_traffic(sys, P, out.iterations, wall_seconds() - t0);
    ls.iterations = out.iterations;
    ls.residual = out.residual;
    ls.converged = out.converged;
    ls.negative_curvature = out.negative;
    if (history && st >= 0) hist_push(s, x);
    /* the lag policy's book-keeping: this solve's CG iterations per decade
     * (an interrupted solve says nothing about the factor) */
    if (lagged && out.iterations > 0 && st != DEFO_ERR_INTERRUPTED) {
        double reduction = out.initial > 0 ? out.residual / out.initial : 1.0;
        double decades = fmax(-log10(fmax(reduction, 1e-300)), 0.5);
        double rate = fmax(out.iterations / decades, 1.0);
        if (s->age == 0) s->first_rate = rate;
        s->last_rate = rate;
        s->age++;
        if (!fixed && out.hit_max) s->valid = 0; /* rate unknown: refactor next time */
    }
    if (stats) *stats = ls;
    return st;
}

/* ---------------------------------------------------------------- wrapper */
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
                          "defo_pcg_solve: preconditioner set up for %ld nodes, matrix has %ld",
                          (long)P->n, (long)A->num_rows);
    defo_linear_system sys;
    memset(&sys, 0, sizeof sys);
    sys.n = A->num_rows;
    sys.matrix = A;
    op_ctx c = {&sys, P};
    defo_pcg_opts o = {d.max_iterations, d.tolerance, fixed_count, 0, 0};
    defo_pcg_out out;
    defo_status st = defo_pcg_run("PCG", "matrix", &o, A->num_rows, op_apply, &c,
                                  P && P->kind != DEFO_PRECOND_NONE ? op_precond : NULL, &c,
                                  constraint, normal, b, x, work, &out);
    if (result) {
        result->iterations = out.iterations;
        result->residual = out.residual;
        result->converged = out.converged;
    }
    return st;
}

void defo_linear_solver_get_lag(const defo_linear_solver *s, defo_linear_lag *out) {
    if (!out) return;
    memset(out, 0, sizeof *out);
    if (!s) return;
    out->valid = s->valid;
    out->age = s->age;
    out->first_rate = s->first_rate;
    out->last_rate = s->last_rate;
}

defo_status defo_linear_solver_restore_lag(defo_linear_solver *s, const defo_linear_system *sys,
                                           const defo_linear_lag *lag) {
    if (!s || !lag) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver: NULL argument");
    s->valid = 0;
    const defo_linear_solver_def *d = &s->def;
    if (lag->valid && d->method == DEFO_LINEAR_BACKEND) {
        if (!sys) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "linear_solver: no system");
        defo_status st = d->backend->setup(s->backend, sys);
        if (st) return defo_error_prefix("linear_solver (%s)", d->backend->name);
        s->valid = 1;
        s->age = lag->age;
        s->first_rate = lag->first_rate;
        s->last_rate = lag->last_rate;
        return DEFO_OK;
    }
    if (!lag->valid || d->method == DEFO_LINEAR_CHOLESKY || !factorised(d->precond.kind))
        return DEFO_OK;
    if (!sys || !sys->matrix)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "linear_solver: restoring a factor needs the assembled system");
    defo_status st = ensure_work(s, sys->n);
    if (st) return st;
    st = defo_precond_setup(s->P, sys->matrix, sys->constraint, sys->coords);
    if (st) return st;
    s->valid = 1;
    s->age = lag->age;
    s->first_rate = lag->first_rate;
    s->last_rate = lag->last_rate;
    return DEFO_OK;
}
