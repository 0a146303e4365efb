/*
 * tests/test_linear.c — the linear solver (defo_linear_solver, defo/solver.h):
 * its lag policy, the stop-at-curvature mode, the direct Cholesky method,
 * determinism.
 *
 * References used (each test says which):
 *   - the lag policy: the documented rule re-computed by the test from each
 *     solve's own statistics (iterations and residual reduction), compared
 *     solve by solve with what the solver did on a scripted sequence of
 *     matrices; age and invalidation by their counts;
 *   - stop mode: the iterate of the error mode stopped one iteration before
 *     the breakdown (bitwise), and the preconditioned residual when the
 *     first direction already has negative curvature;
 *   - the Cholesky method: a dense Gaussian elimination of the free block;
 *   - initial guesses from the history: the Galerkin guess computed densely
 *     by the test, its A-norm error against x₀'s, fewer iterations;
 *   - 1 vs 2 threads bitwise identical (tests/determinism.h).
 */
#include "defo/cholesky.h"
#include "defo/mesh.h"
#include "defo/solver.h"
#include "defo/sparse.h"
#include "determinism.h"
#include "test.h"

static defo_mesh *box(int a, int b, int c) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = a;
    d.cells[1] = b;
    d.cells[2] = c;
    defo_mesh *m = NULL;
    defo_generate_box(&d, &m);
    return m;
}

/* A random SPD matrix on the mesh's pattern: Σ_e G_e G_eᵀ (G_e random
 * 12×12) plus diag · I. */
static defo_bcsr *random_spd(const defo_mesh *m, unsigned seed, double diag) {
    defo_bcsr *A = NULL;
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, m->num_nodes, &A));
    test_rng rng = {seed};
    const size_t ne = (size_t)m->num_elems;
    double *mats = malloc(ne * 144 * sizeof(double)), G[144];
    for (size_t e = 0; e < ne; e++) {
        for (int k = 0; k < 144; k++) G[k] = test_range(&rng, -1, 1);
        for (int i = 0; i < 12; i++)
            for (int j = 0; j < 12; j++) {
                double s = 0;
                for (int k = 0; k < 12; k++) s += G[12 * i + k] * G[12 * j + k];
                mats[144 * e + 12 * (size_t)i + (size_t)j] = s;
            }
    }
    defo_bcsr_assemble(A, mats, 1.0);
    double *d = malloc((size_t)m->num_nodes * sizeof(double));
    for (defo_index i = 0; i < m->num_nodes; i++) d[i] = diag;
    defo_bcsr_add_diagonal(A, d, 1.0);
    free(d);
    free(mats);
    return A;
}

static defo_linear_system system_of(const defo_bcsr *A, const unsigned char *con,
                                    const double *coords) {
    defo_linear_system s;
    memset(&s, 0, sizeof s);
    s.n = defo_bcsr_get_pattern(A)->num_rows;
    s.matrix = A;
    s.constraint = con;
    s.coords = coords;
    return s;
}

/* The lag policy on scripted sequences.  Age: max_age 3 refactors at
 * solves 1, 4, 7; invalidate refactors the next solve.  Rate: the test
 * recomputes each solve's CG iterations per decade from its statistics
 * (x₀ = 0, so the reduction is the final relative residual; at least 1 per
 * decade) and predicts
 * every refactorisation from the documented rule; the solver must do
 * exactly that, in tolerance and in fixed-iteration mode, and the sequence
 * (matrices A1 and a very different A2) must trigger the rate rule at
 * least once.  A solve stopped by max_iterations makes the next one
 * refactor. */
static void test_lag_policy(void) {
    defo_mesh *m = box(6, 4, 4);
    defo_bcsr *A1 = random_spd(m, 11, 2.0), *A2 = random_spd(m, 97, 0.01);
    const defo_index n = m->num_nodes;
    const size_t n3 = 3 * (size_t)n;
    double *b = malloc(n3 * sizeof *b), *x = malloc(n3 * sizeof *x);
    test_rng rng = {5};
    for (size_t k = 0; k < n3; k++) b[k] = test_range(&rng, -1, 1);
    unsigned char *con = calloc((size_t)n, 1);
    for (defo_index i = 0; i < n; i += 9) con[i] = DEFO_CONSTRAINT_FIXED;
    defo_linear_stats st;

    /* age */
    defo_linear_solver_def d = defo_default_linear_solver_def();
    d.precond.kind = DEFO_PRECOND_BLOCK_IC0;
    d.max_age = 3;
    d.rate_growth = 1e9;
    defo_linear_solver *s = NULL;
    CHECK_OK(defo_linear_solver_create(&d, &s));
    defo_linear_system sys = system_of(A1, con, NULL);
    int pattern = 0;
    for (int k = 0; k < 7; k++) {
        memset(x, 0, n3 * sizeof *x);
        CHECK_OK(defo_linear_solver_solve(s, &sys, b, x, 0, &st));
        pattern = 2 * pattern + st.refactored;
    }
    CHECK(pattern == 0x49); /* 1001001 */
    /* invalidate */
    memset(x, 0, n3 * sizeof *x);
    CHECK_OK(defo_linear_solver_solve(s, &sys, b, x, 0, &st));
    CHECK(st.refactored == 0);
    defo_linear_solver_invalidate(s);
    memset(x, 0, n3 * sizeof *x);
    CHECK_OK(defo_linear_solver_solve(s, &sys, b, x, 0, &st));
    CHECK(st.refactored == 1);
    defo_linear_solver_destroy(s);

    /* rate growth, both modes */
    const defo_bcsr *script[10] = {A1, A1, A2, A2, A2, A1, A2, A1, A1, A2};
    for (int mode = 0; mode < 2; mode++) {
        d = defo_default_linear_solver_def();
        d.precond.kind = DEFO_PRECOND_BLOCK_IC0;
        d.rate_growth = 2.0;
        if (mode) {
            d.fixed_iterations = 12;
            d.tolerance = 0;
        }
        CHECK_OK(defo_linear_solver_create(&d, &s));
        double first = 0, last = 0;
        int mismatches = 0, by_rate = 0;
        for (int k = 0; k < 10; k++) {
            int expect = k == 0 || last > 2.0 * first;
            sys = system_of(script[k], con, NULL);
            memset(x, 0, n3 * sizeof *x);
            CHECK(defo_linear_solver_solve(s, &sys, b, x, 0, &st) >= 0);
            mismatches += st.refactored != expect;
            by_rate += k > 0 && st.refactored;
            double rate = fmax(st.iterations / fmax(-log10(st.residual), 0.5), 1.0);
            if (st.refactored) first = rate;
            last = rate;
        }
        TEST_REPORT("%s mode: %d refactorisations by the rate rule in 10 solves, %d mismatches",
                    mode ? "fixed-iteration" : "tolerance", by_rate, mismatches);
        CHECK(mismatches == 0);
        CHECK(by_rate >= 1 && by_rate <= 6);
        defo_linear_solver_destroy(s);
    }

    /* max_iterations reached: refactor every time */
    d = defo_default_linear_solver_def();
    d.precond.kind = DEFO_PRECOND_BLOCK_IC0;
    d.max_iterations = 3;
    d.tolerance = 1e-12;
    CHECK_OK(defo_linear_solver_create(&d, &s));
    sys = system_of(A1, con, NULL);
    int all = 1;
    for (int k = 0; k < 4; k++) {
        memset(x, 0, n3 * sizeof *x);
        CHECK(defo_linear_solver_solve(s, &sys, b, x, 0, &st) == DEFO_WARN_NOT_CONVERGED);
        all &= st.refactored && st.iterations == 3;
    }
    CHECK(all);
    defo_linear_solver_destroy(s);
    free(con);
    free(b);
    free(x);
    defo_bcsr_destroy(A1);
    defo_bcsr_destroy(A2);
    defo_mesh_destroy(m);
}

/* Stop mode on an indefinite matrix (diagonal with both signs, no
 * preconditioner): PCG stops where error mode fails, keeps the iterate of
 * the last completed iteration (the error-mode run capped there gives the
 * same bits), counts it, and returns DEFO_OK; a right-hand side on the
 * negative entries alone stops at once with x = S P⁻¹ S b = b. */
static void test_stop_at_curvature(void) {
    defo_index conn[4] = {0, 1, 2, 3};
    defo_bcsr *A = NULL;
    CHECK_OK(defo_bcsr_create(conn, 1, 4, 4, &A));
    const double diag[12] = {2, 1, 3, 1, 2, 1, 1, 1, 1, -1, -2, -1};
    double *v = defo_bcsr_values(A);
    const defo_bcsr_pattern *pa = defo_bcsr_get_pattern(A);
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++) v[9 * pa->diag[i] + 4 * k] = diag[3 * i + k];
    double b[12], x[12], y[12];
    for (int k = 0; k < 12; k++) b[k] = 1.0 + 0.1 * k;
    defo_linear_system sys = system_of(A, NULL, NULL);
    defo_linear_solver_def d = defo_default_linear_solver_def();
    d.precond.kind = DEFO_PRECOND_NONE;
    d.tolerance = 1e-14;
    defo_linear_solver *err = NULL, *stop = NULL;
    CHECK_OK(defo_linear_solver_create(&d, &err));
    d.curvature = DEFO_CURVATURE_STOP;
    CHECK_OK(defo_linear_solver_create(&d, &stop));
    defo_linear_stats se, ss;
    memset(x, 0, sizeof x);
    CHECK(defo_linear_solver_solve(err, &sys, b, x, 0, &se) == DEFO_ERR_NUMERICAL);
    memset(x, 0, sizeof x);
    CHECK_OK(defo_linear_solver_solve(stop, &sys, b, x, 0, &ss));
    TEST_REPORT("error mode fails at iteration %d; stop mode: %d iterations, negative curvature "
                "%d",
                se.iterations, ss.iterations, ss.negative_curvature);
    CHECK(se.iterations >= 2);
    CHECK(ss.iterations == se.iterations - 1 && ss.negative_curvature == 1);
    defo_linear_solver_destroy(err);
    d.curvature = DEFO_CURVATURE_ERROR;
    d.max_iterations = ss.iterations;
    CHECK_OK(defo_linear_solver_create(&d, &err));
    memset(y, 0, sizeof y);
    CHECK(defo_linear_solver_solve(err, &sys, b, y, 0, &se) == DEFO_WARN_NOT_CONVERGED);
    CHECK(memcmp(x, y, sizeof x) == 0);
    /* negative at once: the preconditioned residual (no preconditioner: b) */
    for (int k = 0; k < 12; k++) b[k] = k >= 9 ? 1.0 : 0.0;
    memset(x, 0, sizeof x);
    CHECK_OK(defo_linear_solver_solve(stop, &sys, b, x, 0, &ss));
    CHECK(ss.iterations == 0 && ss.negative_curvature == 1);
    CHECK(memcmp(x, b, sizeof x) == 0);
    defo_linear_solver_destroy(err);
    defo_linear_solver_destroy(stop);
    defo_bcsr_destroy(A);
}

/* x_f of A_ff x_f = b_f − A_fc x_c by dense Gaussian elimination with
 * partial pivoting (the reference for the direct method). */
static void dense_reference(const defo_bcsr *A, const unsigned char *con, const double *b,
                            double *x) {
    const size_t n3 = 3 * (size_t)defo_bcsr_get_pattern(A)->num_rows;
    double *D = malloc(n3 * n3 * sizeof *D);
    defo_bcsr_to_dense(A, D);
    size_t *f = malloc(n3 * sizeof *f), nf = 0;
    for (size_t i = 0; i < n3; i++)
        if (!con[i / 3]) f[nf++] = i;
    double *M = malloc(nf * (nf + 1) * sizeof *M);
    for (size_t r = 0; r < nf; r++) {
        double rhs = b[f[r]];
        for (size_t c = 0; c < n3; c++)
            if (con[c / 3]) rhs -= D[f[r] * n3 + c] * x[c];
        for (size_t c = 0; c < nf; c++) M[r * (nf + 1) + c] = D[f[r] * n3 + f[c]];
        M[r * (nf + 1) + nf] = rhs;
    }
    for (size_t k = 0; k < nf; k++) {
        size_t p = k;
        for (size_t r = k + 1; r < nf; r++)
            if (fabs(M[r * (nf + 1) + k]) > fabs(M[p * (nf + 1) + k])) p = r;
        for (size_t c = 0; c <= nf; c++) {
            double t = M[k * (nf + 1) + c];
            M[k * (nf + 1) + c] = M[p * (nf + 1) + c];
            M[p * (nf + 1) + c] = t;
        }
        for (size_t r = k + 1; r < nf; r++) {
            double l = M[r * (nf + 1) + k] / M[k * (nf + 1) + k];
            for (size_t c = k; c <= nf; c++) M[r * (nf + 1) + c] -= l * M[k * (nf + 1) + c];
        }
    }
    for (size_t k = nf; k-- > 0;) {
        double s = M[k * (nf + 1) + nf];
        for (size_t c = k + 1; c < nf; c++) s -= M[k * (nf + 1) + c] * x[f[c]];
        x[f[k]] = s / M[k * (nf + 1) + k];
    }
    free(M);
    free(f);
    free(D);
}

/* The direct method equals a dense solve of the free block (relative 1e-10;
 * the matrix's condition is ~1e3) from a zero and from a random start, with
 * fixed nodes keeping their values; an indefinite matrix falls back to
 * block-Jacobi PCG (stop mode) and says so. */
static void test_cholesky_method(void) {
    defo_mesh *m = box(4, 3, 2);
    defo_bcsr *A = random_spd(m, 123, 1.0);
    const defo_index n = m->num_nodes;
    const size_t n3 = 3 * (size_t)n;
    defo_linear_solver_def d = defo_default_linear_solver_def();
    d.method = DEFO_LINEAR_CHOLESKY;
    d.curvature = DEFO_CURVATURE_STOP;
    defo_linear_solver *s = NULL;
    if (!defo_cholesky_available()) {
        printf("  (skipped: defo built without CHOLMOD; the method is refused)\n");
        CHECK(defo_linear_solver_create(&d, &s) == DEFO_ERR_UNSUPPORTED && !s);
        defo_bcsr_destroy(A);
        defo_mesh_destroy(m);
        return;
    }
    CHECK_OK(defo_linear_solver_create(&d, &s));
    unsigned char *con = calloc((size_t)n, 1);
    for (defo_index i = 0; i < n; i += 5) con[i] = DEFO_CONSTRAINT_FIXED;
    double *b = malloc(n3 * sizeof *b), *x = malloc(n3 * sizeof *x),
           *ref = malloc(n3 * sizeof *ref);
    test_rng rng = {77};
    for (size_t k = 0; k < n3; k++) b[k] = test_range(&rng, -1, 1);
    for (size_t k = 0; k < n3; k++) ref[k] = con[k / 3] ? 0.25 : 0.0;
    dense_reference(A, con, b, ref);
    double scale = 0;
    for (size_t k = 0; k < n3; k++) scale = fmax(scale, fabs(ref[k]));
    defo_linear_system sys = system_of(A, con, NULL);
    for (int start = 0; start < 2; start++) {
        for (size_t k = 0; k < n3; k++)
            x[k] = con[k / 3] ? 0.25 : start ? test_range(&rng, -1, 1) : 0.0;
        defo_linear_stats st;
        CHECK_OK(defo_linear_solver_solve(s, &sys, b, x, 0, &st));
        double err = 0;
        for (size_t k = 0; k < n3; k++) err = fmax(err, fabs(x[k] - ref[k]));
        TEST_REPORT("%s start: max |x - x_dense| = %.2e of %.2e, residual %.1e",
                    start ? "random" : "zero", err, scale, st.residual);
        CHECK(err <= 1e-10 * scale);
        CHECK(st.refactored == 1 && st.fallback == 0 && st.iterations == 0 && st.converged);
        CHECK(st.residual < 1e-12);
    }
    /* the same matrix (kept rotations) with another node fixed (a handle
     * grabbed): the factor of the old fixed set would leave that node's
     * couplings in, so it is made again and the solve is exact again */
    con[1] = DEFO_CONSTRAINT_FIXED;
    for (size_t k = 0; k < n3; k++) ref[k] = con[k / 3] ? 0.25 : 0.0;
    dense_reference(A, con, b, ref);
    for (size_t k = 0; k < n3; k++) x[k] = con[k / 3] ? 0.25 : 0.0;
    sys.same_matrix = 1;
    {
        defo_linear_stats st;
        CHECK_OK(defo_linear_solver_solve(s, &sys, b, x, 0, &st));
        double err = 0;
        for (size_t k = 0; k < n3; k++) err = fmax(err, fabs(x[k] - ref[k]));
        TEST_REPORT("same matrix, node 1 fixed too: refactored %d, max |x - x_dense| = %.2e",
                    st.refactored, err);
        CHECK(st.refactored == 1 && err <= 1e-10 * scale);
        /* and unchanged: the factor is kept */
        CHECK_OK(defo_linear_solver_solve(s, &sys, b, x, 0, &st));
        CHECK(st.refactored == 0);
    }
    sys.same_matrix = 0;
    /* indefinite: A − σI with σ above the smallest eigenvalue */
    double *dg = malloc((size_t)n * sizeof *dg);
    for (defo_index i = 0; i < n; i++) dg[i] = -30.0;
    defo_bcsr_add_diagonal(A, dg, 1.0);
    memset(x, 0, n3 * sizeof *x);
    defo_linear_stats st;
    CHECK(defo_linear_solver_solve(s, &sys, b, x, 1e-6, &st) >= 0);
    int finite = 1;
    for (size_t k = 0; k < n3; k++) finite &= isfinite(x[k]);
    TEST_REPORT("indefinite: fallback %d, %d PCG iterations, negative curvature %d", st.fallback,
                st.iterations, st.negative_curvature);
    CHECK(st.fallback == 1 && st.refactored == 0 && finite);
    free(dg);
    free(b);
    free(x);
    free(ref);
    free(con);
    defo_linear_solver_destroy(s);
    defo_bcsr_destroy(A);
    defo_mesh_destroy(m);
}

/* Initial guesses from the history (Fischer 1998).  Reference: the
 * Galerkin guess computed densely by the test — x₀ + W c with
 * W = S [x₁ … x_k] the stored solutions projected onto the free subspace and
 * (Wᵀ A W) c = Wᵀ (b − A x₀) solved by Gaussian elimination — which the
 * solver must return (relative 1e-9) when a loose tolerance lets PCG stop
 * at once; its A-norm error to the dense solution is no larger than
 * x₀'s.  Then a sequence of slowly changing right-hand sides needs fewer
 * iterations with history than without, to the same tolerance; and a
 * solver restored from a saved history continues bit for bit like the one
 * it was saved from. */
static double a_norm_error(const defo_bcsr *A, const unsigned char *con, const double *x,
                           const double *ref, size_t n3) {
    double *e = calloc(n3, sizeof *e), *Ae = calloc(n3, sizeof *Ae);
    for (size_t k = 0; k < n3; k++) e[k] = con[k / 3] ? 0 : x[k] - ref[k];
    defo_bcsr_multiply(A, e, Ae);
    double s = 0;
    for (size_t k = 0; k < n3; k++) s += con[k / 3] ? 0 : e[k] * Ae[k];
    free(e);
    free(Ae);
    return sqrt(fmax(s, 0));
}

static void test_history(void) {
    defo_mesh *m = box(4, 3, 3);
    defo_bcsr *A = random_spd(m, 41, 2.0);
    const defo_index n = m->num_nodes;
    const size_t n3 = 3 * (size_t)n;
    unsigned char *con = calloc((size_t)n, 1);
    for (defo_index i = 0; i < n; i += 7) con[i] = DEFO_CONSTRAINT_FIXED;
    defo_linear_solver_def d = defo_default_linear_solver_def();
    d.precond.kind = DEFO_PRECOND_BLOCK_JACOBI;
    d.tolerance = 1e-10;
    d.history = 4;
    defo_linear_solver *s = NULL, *plain = NULL, *twin = NULL;
    CHECK_OK(defo_linear_solver_create(&d, &s));
    CHECK_OK(defo_linear_solver_create(&d, &twin));
    defo_linear_solver_def dp = d;
    dp.history = 0;
    CHECK_OK(defo_linear_solver_create(&dp, &plain));
    defo_linear_system sys = system_of(A, con, NULL);
    double *b = malloc(n3 * sizeof *b), *x = malloc(n3 * sizeof *x), *xp = malloc(n3 * sizeof *xp),
           *sol[4], *ref = malloc(n3 * sizeof *ref);
    /* four solves of b_k = sin(0.3 i + 0.1 k): the history */
    int its_hist = 0, its_plain = 0;
    for (int k = 0; k < 8; k++) {
        for (size_t i = 0; i < n3; i++) b[i] = sin(0.3 * (double)i + 0.1 * k) + 0.01 * k;
        for (size_t i = 0; i < n3; i++) x[i] = xp[i] = con[i / 3] ? 0.5 : 0.0;
        defo_linear_stats st, sp;
        CHECK_OK(defo_linear_solver_solve(s, &sys, b, x, 0, &st));
        CHECK_OK(defo_linear_solver_solve(plain, &sys, b, xp, 0, &sp));
        if (k < 4) {
            sol[k] = malloc(n3 * sizeof(double));
            memcpy(sol[k], x, n3 * sizeof(double));
        }
        if (k >= 4) { /* once the history is full */
            its_hist += st.iterations;
            its_plain += sp.iterations;
        }
        double dx = 0, sc = 0;
        for (size_t i = 0; i < n3; i++) {
            dx = fmax(dx, fabs(x[i] - xp[i]));
            sc = fmax(sc, fabs(xp[i]));
        }
        CHECK(dx <= 1e-7 * sc);
    }
    TEST_REPORT("slowly changing right-hand sides: %d PCG iterations with a history of 4, %d "
                "without (solves 5-8)",
                its_hist, its_plain);
    CHECK(its_hist < its_plain);
    /* the guess alone: a fresh solver whose history is four solutions */
    defo_linear_solver *g = NULL;
    CHECK_OK(defo_linear_solver_create(&d, &g));
    double *x0 = malloc(n3 * sizeof *x0);
    for (int k = 0; k < 4; k++) { /* four distinct solutions: a well-conditioned W */
        for (size_t i = 0; i < n3; i++) b[i] = sin(0.3 * (double)i + 0.9 * k) + 0.2 * k;
        for (size_t i = 0; i < n3; i++) sol[k][i] = con[i / 3] ? 0.5 : 0.0;
        CHECK_OK(defo_linear_solver_solve(plain, &sys, b, sol[k], 0, NULL));
        for (size_t i = 0; i < n3; i++) b[i] = 0;
        memcpy(x, sol[k], n3 * sizeof *x);
        CHECK_OK(defo_linear_solver_solve(g, &sys, b, x, 0.999999, NULL)); /* pushes sol[k] */
    }
    test_rng rng = {5};
    for (size_t i = 0; i < n3; i++)
        b[i] = sin(0.3 * (double)i + 1.3) + 0.25 + test_range(&rng, -0.01, 0.01);
    for (size_t i = 0; i < n3; i++) x0[i] = con[i / 3] ? 0.5 : test_range(&rng, -0.01, 0.01);
    /* the dense Galerkin guess */
    double *W[4], *AW[4], *r0 = malloc(n3 * sizeof *r0), G[4][5];
    defo_bcsr_multiply(A, x0, r0);
    for (size_t i = 0; i < n3; i++) r0[i] = con[i / 3] ? 0 : b[i] - r0[i];
    for (int k = 0; k < 4; k++) {
        W[k] = malloc(n3 * sizeof(double));
        AW[k] = malloc(n3 * sizeof(double));
        for (size_t i = 0; i < n3; i++) W[k][i] = con[i / 3] ? 0 : sol[k][i];
        defo_bcsr_multiply(A, W[k], AW[k]);
    }
    for (int a = 0; a < 4; a++) {
        G[a][4] = 0;
        for (size_t i = 0; i < n3; i++) G[a][4] += W[a][i] * r0[i];
        for (int c = 0; c < 4; c++) {
            G[a][c] = 0;
            for (size_t i = 0; i < n3; i++) G[a][c] += con[i / 3] ? 0 : W[a][i] * AW[c][i];
        }
    }
    for (int a = 0; a < 4; a++)
        for (int r = a + 1; r < 4; r++) {
            const double f = G[r][a] / G[a][a];
            for (int c = a; c < 5; c++) G[r][c] -= f * G[a][c];
        }
    double c[4];
    for (int a = 3; a >= 0; a--) {
        double t = G[a][4];
        for (int q = a + 1; q < 4; q++) t -= G[a][q] * c[q];
        c[a] = t / G[a][a];
    }
    double *guess = malloc(n3 * sizeof *guess);
    for (size_t i = 0; i < n3; i++) {
        guess[i] = x0[i];
        for (int k = 0; k < 4; k++) guess[i] += c[k] * W[k][i];
    }
    memcpy(x, x0, n3 * sizeof *x);
    defo_linear_stats st;
    CHECK_OK(defo_linear_solver_solve(g, &sys, b, x, 0.5, &st));
    double diff = 0, sc = 0;
    for (size_t i = 0; i < n3; i++) {
        diff = fmax(diff, fabs(x[i] - guess[i]));
        sc = fmax(sc, fabs(guess[i]));
    }
    for (size_t i = 0; i < n3; i++) ref[i] = con[i / 3] ? 0.5 : 0.0;
    dense_reference(A, con, b, ref);
    const double e0 = a_norm_error(A, con, x0, ref, n3), eg = a_norm_error(A, con, x, ref, n3);
    TEST_REPORT("guess from 4 solutions: %d iterations, max |x - dense Galerkin| = %.1e of %.1e; "
                "A-norm error %.3e (x0: %.3e)",
                st.iterations, diff, sc, eg, e0);
    CHECK(st.iterations == 0 && diff <= 1e-9 * sc && eg <= e0);
    /* save, restore into the twin (its own history differs), continue both */
    const size_t hb = defo_linear_solver_history_bytes(s, n);
    CHECK(hb == 8 + 4 * n3 * sizeof(double));
    unsigned char *rec = malloc(hb);
    defo_linear_solver_history_save(s, n, rec);
    CHECK_OK(defo_linear_solver_history_restore(twin, n, rec));
    for (size_t i = 0; i < n3; i++) {
        b[i] = cos(0.2 * (double)i);
        x[i] = xp[i] = 0;
    }
    CHECK_OK(defo_linear_solver_solve(s, &sys, b, x, 0, NULL));
    CHECK_OK(defo_linear_solver_solve(twin, &sys, b, xp, 0, NULL));
    CHECK(memcmp(x, xp, n3 * sizeof *x) == 0);
    /* a record claiming more solutions than the history holds is refused */
    const int32_t bad = 5;
    memcpy(rec, &bad, 4);
    CHECK(defo_linear_solver_history_restore(twin, n, rec) == DEFO_ERR_PARSE);
    d.history = DEFO_LINEAR_HISTORY_MAX + 1;
    defo_linear_solver *h = NULL;
    CHECK(defo_linear_solver_create(&d, &h) == DEFO_ERR_INVALID_ARGUMENT && !h);
    CHECK(strstr(defo_last_error(), "history") != NULL);
    free(rec);
    for (int k = 0; k < 4; k++) {
        free(W[k]);
        free(AW[k]);
        free(sol[k]);
    }
    free(guess);
    free(r0);
    free(x0);
    free(ref);
    free(b);
    free(x);
    free(xp);
    free(con);
    defo_linear_solver_destroy(g);
    defo_linear_solver_destroy(s);
    defo_linear_solver_destroy(twin);
    defo_linear_solver_destroy(plain);
    defo_bcsr_destroy(A);
    defo_mesh_destroy(m);
}

/* Bad settings and systems are refused, naming what. */
static void test_errors(void) {
    defo_linear_solver *s = NULL;
    defo_linear_solver_def d = defo_default_linear_solver_def();
    d.tolerance = 0;
    CHECK(defo_linear_solver_create(&d, &s) == DEFO_ERR_INVALID_ARGUMENT && !s);
    CHECK(strstr(defo_last_error(), "tolerance") != NULL);
    d.fixed_iterations = 10; /* 0 is fine with a fixed count */
    CHECK_OK(defo_linear_solver_create(&d, &s));
    defo_linear_solver_destroy(s);
    d = defo_default_linear_solver_def();
    d.rate_growth = 0;
    CHECK(defo_linear_solver_create(&d, &s) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "rate_growth") != NULL);
    d = defo_default_linear_solver_def();
    d.max_age = -1;
    CHECK(defo_linear_solver_create(&d, &s) == DEFO_ERR_INVALID_ARGUMENT);
    d = defo_default_linear_solver_def();
    d.precond.kind = DEFO_PRECOND_TWO_LEVEL;
    CHECK_OK(defo_linear_solver_create(&d, &s));
    defo_mesh *m = box(2, 2, 2);
    defo_bcsr *A = random_spd(m, 3, 1.0);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *b = calloc(n3, sizeof *b), *x = calloc(n3, sizeof *x);
    defo_linear_system sys = system_of(A, NULL, NULL);
    CHECK(defo_linear_solver_solve(s, &sys, b, x, 0, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "coordinates") != NULL);
    sys.matrix = NULL; /* matrix-free needs apply and the diagonal */
    CHECK(defo_linear_solver_solve(s, &sys, b, x, 0, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    free(b);
    free(x);
    defo_linear_solver_destroy(s);
    defo_bcsr_destroy(A);
    defo_mesh_destroy(m);
}

/* 1 vs 2 threads: a sequence of lagged two-level solves (two IC(0)
 * subdomains, parallel products) on two matrices, bitwise identical. */
typedef struct det_ctx {
    defo_mesh *m;
    defo_bcsr *A[2];
} det_ctx;

static void det_run(void *vctx, void *out) {
    det_ctx *c = vctx;
    const size_t n3 = 3 * (size_t)c->m->num_nodes;
    defo_linear_solver_def d = defo_default_linear_solver_def();
    d.precond.kind = DEFO_PRECOND_TWO_LEVEL;
    d.precond.domains = 2;
    d.tolerance = 1e-9;
    d.history = 3; /* the guesses' blocked sums and products too */
    defo_linear_solver *s = NULL;
    defo_linear_solver_create(&d, &s);
    unsigned char *con = calloc((size_t)c->m->num_nodes, 1);
    for (defo_index i = 0; i < c->m->num_nodes; i++)
        if (c->m->x[3 * i] < 1e-9) con[i] = DEFO_CONSTRAINT_FIXED;
    double *b = malloc(n3 * sizeof *b), *x = out;
    memset(x, 0, n3 * sizeof *x);
    for (int k = 0; k < 4; k++) {
        for (size_t i = 0; i < n3; i++) b[i] = sin(0.37 * (double)i + 0.05 * k);
        defo_linear_system sys = system_of(c->A[k % 2], con, c->m->x);
        defo_linear_solver_solve(s, &sys, b, x, 0, NULL);
    }
    free(b);
    free(con);
    defo_linear_solver_destroy(s);
}

static void test_threads_bitwise(void) {
    det_ctx c;
    c.m = box(20, 12, 12); /* 3549 nodes: parallel products */
    c.A[0] = random_spd(c.m, 1, 1.0);
    c.A[1] = random_spd(c.m, 2, 0.5);
    CHECK(
        test_bitwise_same_for_threads(det_run, &c, 3 * (size_t)c.m->num_nodes * sizeof(double), 2));
    defo_bcsr_destroy(c.A[0]);
    defo_bcsr_destroy(c.A[1]);
    defo_mesh_destroy(c.m);
}

int main(void) {
    RUN(test_lag_policy);
    RUN(test_stop_at_curvature);
    RUN(test_cholesky_method);
    RUN(test_history);
    RUN(test_errors);
    RUN(test_threads_bitwise);
    return test_summary();
}
