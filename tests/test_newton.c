/*
 * tests/test_newton.c — the shared Newton driver (defo_newton, defo/solver.h)
 * on problems whose answers are known.
 *
 * The strictly convex quartic in 3n unknowns (reference: its minimiser c,
 * where every term vanishes)
 *   E(x) = Σ_i [ ¼|d_i|⁴ + ½|d_i|² ] + κ/2 Σ_e Σ_{a<b in e} |d_a − d_b|²,
 *   d_i = x_i − c_i,
 * over the nodes and tetrahedra of a box mesh, with some nodes fixed at c.
 * Its Hessian is the block diagonal (|d|² + 1) I + 2 d dᵀ plus κ times the
 * element graph Laplacian: assembled into a BCSR matrix, or applied
 * matrix-free.  Checked: convergence to c with reason converged (assembled,
 * matrix-free, Cholesky steps), reason max_iterations with one iteration,
 * reason numerical when the evaluation fails (x left at the start), reason
 * stalled when the energy contradicts the force (after max_forced_steps
 * forced steps), and 1 vs 2 threads bitwise.
 *
 * The exact tangent (defo_newton_problem.exact_tangent): the quartic less
 * γ/2 Σ|d_i|² (γ < 1: still strictly convex) whose "projected" tangent
 * leaves the −γ I out, as the definiteness fix drops negative curvature:
 * with it alone Newton converges linearly with rate γ (analytic, near c:
 * the error's factor is 1 − (1 − γ)/1), with the exact one near c
 * quadratically.  Checked: far fewer iterations, turns counted, the solve
 * ending with the projected tangent, the same minimiser c.
 */
#include "base/base.h"
#include "defo/cholesky.h"
#include "defo/mesh.h"
#include "defo/solver.h"
#include "defo/sparse.h"
#include "determinism.h"
#include "test.h"

typedef struct quartic {
    const defo_mesh *m;
    double kappa;
    const double *c;
    unsigned char *con;
    defo_bcsr *K;
    double *lap;     /* 144 per element: κ × the element Laplacian */
    double *d;       /* 3n: x − c at the last evaluation */
    int evaluations; /* counted */
    int fail_after;  /* evaluations beyond this many fail (0 = never) */
    int contradict;  /* 1: energy increasing along the force (stall test) */
    double gamma;    /* −γ/2 Σ|d|² added: the curvature a projected tangent drops */
    int exact;       /* the tangent keeps −γ I (exact_tangent) */
    int lin_exact;   /* the linearisation's kind (set by evaluate) */
} quartic;

static defo_status q_evaluate(void *ctx, const double *x, double *f, double *energy) {
    quartic *q = ctx;
    q->evaluations++;
    if (q->fail_after > 0 && q->evaluations > q->fail_after)
        return defo_error(DEFO_ERR_NUMERICAL, "quartic: evaluation %d refused", q->evaluations);
    const defo_index n = q->m->num_nodes;
    const size_t n3 = 3 * (size_t)n;
    if (q->contradict) { /* f = 1 everywhere, E = Σ x: rises along f */
        double e = 0;
        for (size_t k = 0; k < n3; k++) {
            f[k] = 1.0;
            e += x[k];
        }
        *energy = e;
        return DEFO_OK;
    }
    double e = 0;
    for (size_t k = 0; k < n3; k++) q->d[k] = x[k] - q->c[k];
    for (defo_index i = 0; i < n; i++) {
        const double *d = q->d + 3 * (size_t)i;
        double s = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        e += 0.25 * s * s + 0.5 * (1.0 - q->gamma) * s;
        for (int k = 0; k < 3; k++) f[3 * (size_t)i + (size_t)k] = -(s + 1.0 - q->gamma) * d[k];
    }
    q->lin_exact = q->exact;
    for (defo_index el = 0; el < q->m->num_elems; el++) {
        const defo_index *v = q->m->elems + 4 * (size_t)el;
        for (int a = 0; a < 4; a++)
            for (int b = a + 1; b < 4; b++)
                for (int k = 0; k < 3; k++) {
                    double g =
                        q->d[3 * (size_t)v[a] + (size_t)k] - q->d[3 * (size_t)v[b] + (size_t)k];
                    e += 0.5 * q->kappa * g * g;
                    f[3 * (size_t)v[a] + (size_t)k] -= q->kappa * g;
                    f[3 * (size_t)v[b] + (size_t)k] += q->kappa * g;
                }
    }
    *energy = e;
    return DEFO_OK;
}

/* the node blocks (|d|² + 1 − γ) I + 2 d dᵀ, 9 per node (the projected
 * tangent without the −γ) */
static void node_blocks(const quartic *q, double *B) {
    const double g = q->lin_exact ? q->gamma : 0.0;
    for (defo_index i = 0; i < q->m->num_nodes; i++) {
        const double *d = q->d + 3 * (size_t)i;
        double s = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] - g;
        double *b = B + 9 * (size_t)i;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) b[3 * r + c] = (r == c ? s + 1.0 : 0.0) + 2 * d[r] * d[c];
    }
}

static const defo_bcsr *q_matrix(void *ctx) {
    quartic *q = ctx;
    defo_bcsr_assemble(q->K, q->lap, 1.0);
    double *B = malloc(9 * (size_t)q->m->num_nodes * sizeof *B);
    node_blocks(q, B);
    defo_bcsr_add_diagonal_blocks(q->K, B, 1.0);
    free(B);
    return q->K;
}

static void q_apply(void *ctx, const double *dx, double *y) {
    quartic *q = ctx;
    const defo_index n = q->m->num_nodes;
    double *B = malloc(9 * (size_t)n * sizeof *B);
    node_blocks(q, B);
    for (defo_index i = 0; i < n; i++)
        for (int r = 0; r < 3; r++) {
            const double *b = B + 9 * (size_t)i + 3 * (size_t)r, *a = dx + 3 * (size_t)i;
            y[3 * (size_t)i + (size_t)r] = b[0] * a[0] + b[1] * a[1] + b[2] * a[2];
        }
    free(B);
    for (defo_index el = 0; el < q->m->num_elems; el++) {
        const defo_index *v = q->m->elems + 4 * (size_t)el;
        for (int a = 0; a < 4; a++)
            for (int b = a + 1; b < 4; b++)
                for (int k = 0; k < 3; k++) {
                    double g = dx[3 * (size_t)v[a] + (size_t)k] - dx[3 * (size_t)v[b] + (size_t)k];
                    y[3 * (size_t)v[a] + (size_t)k] += q->kappa * g;
                    y[3 * (size_t)v[b] + (size_t)k] -= q->kappa * g;
                }
    }
}

/* diagonal blocks: node blocks plus κ·(3 neighbours in each element) I */
static void q_diagonal(void *ctx, double *blocks) {
    quartic *q = ctx;
    node_blocks(q, blocks);
    for (defo_index el = 0; el < q->m->num_elems; el++)
        for (int a = 0; a < 4; a++) {
            double *b = blocks + 9 * (size_t)q->m->elems[4 * (size_t)el + (size_t)a];
            for (int k = 0; k < 3; k++) b[4 * k] += 3 * q->kappa;
        }
}

static quartic make_quartic(const defo_mesh *m, const double *c, double kappa) {
    quartic q;
    memset(&q, 0, sizeof q);
    q.m = m;
    q.c = c;
    q.kappa = kappa;
    const defo_index n = m->num_nodes;
    q.con = calloc((size_t)n, 1);
    for (defo_index i = 0; i < n; i++)
        if (m->x[3 * i] < 1e-9) q.con[i] = DEFO_CONSTRAINT_FIXED;
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, n, &q.K));
    q.lap = calloc((size_t)m->num_elems * 144, sizeof(double));
    for (defo_index el = 0; el < m->num_elems; el++) {
        double *L = q.lap + 144 * (size_t)el;
        for (int a = 0; a < 4; a++)
            for (int b = 0; b < 4; b++)
                for (int k = 0; k < 3; k++)
                    L[(3 * a + k) * 12 + 3 * b + k] = kappa * (a == b ? 3.0 : -1.0);
    }
    q.d = malloc(3 * (size_t)n * sizeof(double));
    return q;
}

static void free_quartic(quartic *q) {
    free(q->con);
    free(q->lap);
    free(q->d);
    defo_bcsr_destroy(q->K);
}

static defo_newton_problem problem_of(quartic *q, int matrix_free) {
    defo_newton_problem p;
    memset(&p, 0, sizeof p);
    p.n = q->m->num_nodes;
    p.ctx = q;
    p.evaluate = q_evaluate;
    p.matrix = matrix_free ? NULL : q_matrix;
    p.apply = q_apply;
    p.diagonal = q_diagonal;
    p.constraint = q->con;
    return p;
}

static defo_mesh *box(int a, int b, int c) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = a;
    d.cells[1] = b;
    d.cells[2] = c;
    defo_mesh *m = NULL;
    defo_generate_box(&d, &m);
    return m;
}

/* c: a smooth field; start: c on the fixed nodes, c + a large smooth
 * perturbation elsewhere */
static void setup_points(const defo_mesh *m, double *c, double *x0) {
    for (defo_index i = 0; i < m->num_nodes; i++)
        for (int k = 0; k < 3; k++) {
            size_t j = 3 * (size_t)i + (size_t)k;
            c[j] = m->x[j] + 0.1 * sin(3.0 * m->x[3 * i] + k);
            x0[j] = m->x[3 * i] < 1e-9 ? c[j] : c[j] + 2.0 * cos(2.0 * m->x[j] + 1.3 * k);
        }
}

static void test_quartic_minimiser(void) {
    defo_mesh *m = box(6, 3, 3);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *c = malloc(n3 * sizeof *c), *x0 = malloc(n3 * sizeof *x0), *x = malloc(n3 * sizeof *x);
    setup_points(m, c, x0);
    const char *names[4] = {"assembled, two-level", "matrix-free, block Jacobi",
                            "assembled, block IC(0), target forcing", "Cholesky steps"};
    for (int v = 0; v < 4; v++) {
        if (v == 3 && !defo_cholesky_available()) continue;
        quartic q = make_quartic(m, c, 0.5);
        defo_newton_def d = defo_default_newton_def();
        if (v == 1) d.linear.precond.kind = DEFO_PRECOND_BLOCK_JACOBI;
        if (v == 2) {
            d.linear.precond.kind = DEFO_PRECOND_BLOCK_IC0;
            d.forcing = DEFO_FORCING_TARGET;
        }
        if (v == 3) d.linear.method = DEFO_LINEAR_CHOLESKY;
        defo_newton *N = NULL;
        CHECK_OK(defo_newton_create(&d, m->num_nodes, &N));
        defo_newton_problem p = problem_of(&q, v == 1);
        memcpy(x, x0, n3 * sizeof *x);
        defo_newton_stats st;
        const double target = 1e-10;
        CHECK_OK(defo_newton_solve(N, &p, target, x, NULL, 0, 0, &st));
        double err = 0;
        for (size_t k = 0; k < n3; k++) err = fmax(err, fabs(x[k] - c[k]));
        TEST_REPORT("%-38s: %s after %d Newton / %d CG iterations, %d backtracks, %d "
                    "factorisations; residual %.1e, max |x - c| = %.1e",
                    names[v], defo_convergence_reason_name(st.reason), st.iterations,
                    st.cg_iterations, st.backtracks, st.precond_setups, st.residual, err);
        CHECK(st.reason == DEFO_REASON_CONVERGED && st.residual <= target);
        CHECK(st.initial_residual > 1.0);
        /* the Hessian is ≥ I: |x − c| ≤ |f| */
        CHECK(err <= 2 * target);
        CHECK(st.negative_curvature == 0 && st.fallbacks == 0);
        CHECK(st.energy >= 0 && st.energy < 1e-18);
        if (v == 3) CHECK(st.cg_iterations == 0 && st.precond_setups == st.iterations);
        defo_newton_destroy(N);
        free_quartic(&q);
    }
    free(c);
    free(x0);
    free(x);
    defo_mesh_destroy(m);
}

static void q_exact_tangent(void *ctx, int exact) {
    ((quartic *)ctx)->exact = exact;
}

static void test_exact_tangent(void) {
    defo_mesh *m = box(6, 3, 3);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *c = malloc(n3 * sizeof *c), *x0 = malloc(n3 * sizeof *x0), *x = malloc(n3 * sizeof *x);
    setup_points(m, c, x0);
    const double target = 1e-10, gamma = 0.9;
    for (int mf = 0; mf < 2; mf++) {
        int its[2] = {0, 0};
        for (int with = 0; with < 2; with++) {
            quartic q = make_quartic(m, c, 0.5);
            q.gamma = gamma;
            defo_newton_def d = defo_default_newton_def();
            d.max_iterations = 400;
            if (mf) d.linear.precond.kind = DEFO_PRECOND_BLOCK_JACOBI;
            defo_newton *N = NULL;
            CHECK_OK(defo_newton_create(&d, m->num_nodes, &N));
            defo_newton_problem p = problem_of(&q, mf);
            if (with) p.exact_tangent = q_exact_tangent;
            memcpy(x, x0, n3 * sizeof *x);
            defo_newton_stats st;
            CHECK_OK(defo_newton_solve(N, &p, target, x, NULL, 0, 0, &st));
            double err = 0;
            for (size_t k = 0; k < n3; k++) err = fmax(err, fabs(x[k] - c[k]));
            TEST_REPORT("%s, %s tangent: %d Newton iterations (%d exact, %d turns to it, %d "
                        "curvature stops), residual %.1e, max |x - c| = %.1e",
                        mf ? "matrix-free" : "assembled",
                        with ? "projected then exact" : "projected", st.iterations,
                        st.exact_iterations, st.exact_turns, st.exact_curvature, st.residual, err);
            CHECK(st.reason == DEFO_REASON_CONVERGED);
            /* the Hessian is ≥ (1 − γ) I: |x − c| ≤ |f| / (1 − γ) */
            CHECK(err <= 2 * target / (1 - gamma));
            CHECK(with ? st.exact_turns >= 1 && st.exact_iterations >= 1
                       : st.exact_turns == 0 && st.exact_iterations == 0);
            CHECK(q.exact == 0 && q.lin_exact == 0); /* ends with the projected one */
            its[with] = st.iterations;
            defo_newton_destroy(N);
            free_quartic(&q);
        }
        /* linear (the slowest mode's rate γ = 0.9) against quadratic near c */
        CHECK(its[1] * 4 <= its[0]);
    }
    free(c);
    free(x0);
    free(x);
    defo_mesh_destroy(m);
}

static void test_reasons(void) {
    defo_mesh *m = box(4, 2, 2);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *c = malloc(n3 * sizeof *c), *x0 = malloc(n3 * sizeof *x0), *x = malloc(n3 * sizeof *x);
    setup_points(m, c, x0);
    defo_newton_stats st;
    /* max_iterations = 1 */
    quartic q = make_quartic(m, c, 0.5);
    defo_newton_def d = defo_default_newton_def();
    d.max_iterations = 1;
    defo_newton *N = NULL;
    CHECK_OK(defo_newton_create(&d, m->num_nodes, &N));
    defo_newton_problem p = problem_of(&q, 0);
    memcpy(x, x0, n3 * sizeof *x);
    CHECK(defo_newton_solve(N, &p, 1e-10, x, NULL, 0, 0, &st) == DEFO_WARN_NOT_CONVERGED);
    CHECK(st.reason == DEFO_REASON_MAX_ITERATIONS && st.iterations == 1);
    CHECK(st.residual < st.initial_residual);
    CHECK(strstr(defo_last_error(), "max_iterations") != NULL);
    defo_newton_destroy(N);

    /* evaluations fail after the first: numerical, x back at the start */
    d = defo_default_newton_def();
    CHECK_OK(defo_newton_create(&d, m->num_nodes, &N));
    q.evaluations = 0;
    q.fail_after = 1;
    memcpy(x, x0, n3 * sizeof *x);
    CHECK(defo_newton_solve(N, &p, 1e-10, x, NULL, 0, 0, &st) == DEFO_ERR_NUMERICAL);
    CHECK(st.reason == DEFO_REASON_NUMERICAL && st.iterations == 1);
    CHECK(memcmp(x, x0, n3 * sizeof *x) == 0);
    CHECK(strstr(defo_last_error(), "refused") != NULL);
    /* ... and the very first evaluation failing */
    q.evaluations = 1;
    CHECK(defo_newton_solve(N, &p, 1e-10, x, NULL, 0, 0, &st) == DEFO_ERR_NUMERICAL);
    CHECK(st.reason == DEFO_REASON_NUMERICAL && st.iterations == 0);
    CHECK(memcmp(x, x0, n3 * sizeof *x) == 0);
    defo_newton_destroy(N);
    free_quartic(&q);

    /* an energy that contradicts the force: every line search fails, the
     * forced full steps are taken max_forced_steps times, then stalled */
    q = make_quartic(m, c, 0.5);
    q.contradict = 1;
    d = defo_default_newton_def();
    d.linear.precond.kind = DEFO_PRECOND_BLOCK_JACOBI;
    d.max_forced_steps = 4;
    CHECK_OK(defo_newton_create(&d, m->num_nodes, &N));
    p = problem_of(&q, 0);
    memcpy(x, x0, n3 * sizeof *x);
    CHECK(defo_newton_solve(N, &p, 1e-10, x, NULL, 0, 0, &st) == DEFO_WARN_NOT_CONVERGED);
    TEST_REPORT("contradicting energy: %s after %d iterations, %d backtracks",
                defo_convergence_reason_name(st.reason), st.iterations, st.backtracks);
    CHECK(st.reason == DEFO_REASON_STALLED && st.iterations == 5);
    CHECK(st.backtracks == 5 * 40);
    defo_newton_destroy(N);
    free_quartic(&q);

    /* bad settings */
    d = defo_default_newton_def();
    d.cg_min_tolerance = 0.5;
    CHECK(defo_newton_create(&d, 4, &N) == DEFO_ERR_INVALID_ARGUMENT && !N);
    d = defo_default_newton_def();
    d.linear.fixed_iterations = 5;
    CHECK(defo_newton_create(&d, 4, &N) == DEFO_ERR_INVALID_ARGUMENT && !N);
    free(c);
    free(x0);
    free(x);
    defo_mesh_destroy(m);
}

/* 1 vs 2 threads: the two-level Newton solve of the quartic on 3549 nodes
 * (parallel products, two IC(0) subdomains), bitwise identical. */
typedef struct det_ctx {
    defo_mesh *m;
    double *c, *x0;
} det_ctx;

static void det_run(void *vctx, void *out) {
    det_ctx *dc = vctx;
    quartic q = make_quartic(dc->m, dc->c, 0.5);
    defo_newton_def d = defo_default_newton_def();
    d.linear.precond.domains = 2;
    defo_newton *N = NULL;
    defo_newton_create(&d, dc->m->num_nodes, &N);
    defo_newton_problem p = problem_of(&q, 0);
    double *x = out;
    memcpy(x, dc->x0, 3 * (size_t)dc->m->num_nodes * sizeof *x);
    defo_newton_solve(N, &p, 1e-10, x, NULL, 0, 0, NULL);
    defo_newton_destroy(N);
    free_quartic(&q);
}

static void test_threads_bitwise(void) {
    det_ctx dc;
    dc.m = box(20, 12, 12);
    const size_t n3 = 3 * (size_t)dc.m->num_nodes;
    dc.c = malloc(n3 * sizeof(double));
    dc.x0 = malloc(n3 * sizeof(double));
    setup_points(dc.m, dc.c, dc.x0);
    CHECK(test_bitwise_same_for_threads(det_run, &dc, n3 * sizeof(double), 2));
    free(dc.c);
    free(dc.x0);
    defo_mesh_destroy(dc.m);
}

int main(void) {
    RUN(test_quartic_minimiser);
    RUN(test_exact_tangent);
    RUN(test_reasons);
    RUN(test_threads_bitwise);
    return test_summary();
}
