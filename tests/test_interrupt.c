/*
 * tests/test_interrupt.c — a stop that stops (defo_interrupt, defo/base.h):
 * the flag is looked for inside the CG loop, between Newton iterations and
 * line-search trials, and between a world's steps, and what each level keeps.
 *
 * What each test checks against:
 *   - test_cg: an SPD chain operator whose k-th product requests the
 *     interrupt: defo_cg_solve returns DEFO_ERR_INTERRUPTED after exactly k
 *     iterations with x bitwise the k-th iterate of an uninterrupted run
 *     capped at k iterations.
 *   - test_newton: a strictly convex quartic on a chain (its minimiser c is
 *     known) solved by defo_newton_solve; an interrupt requested (a) by an
 *     evaluation, (b) by a CG product inside the first linear solve, (c) in
 *     a line search that keeps failing (an energy rising along the force):
 *     DEFO_ERR_INTERRUPTED, reason interrupted, x bitwise the last accepted
 *     iterate of the uninterrupted solve (x₀ for b and c), and the problem's
 *     last evaluation at that x.  Cleared, the same solve converges to c.
 *   - test_world_newton: a backward-Euler invertible beam (Newton steps)
 *     interrupted by SIGALRM at delays chosen from the frame's own wall
 *     time until the interrupt lands inside a Newton or CG solve: every
 *     interrupted step returns DEFO_ERR_INTERRUPTED with positions,
 *     velocities, time and frame bitwise those of the frame's start, every
 *     step the alarm missed equals the uninterrupted frame bitwise, and the
 *     frame re-run after defo_interrupt_clear equals it too.
 */
#define _POSIX_C_SOURCE 200809L

#include "defo/base.h"
#include "defo/integrator.h"
#include "defo/mesh.h"
#include "defo/solver.h"
#include "defo/world.h"
#include "test.h"

#include <math.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

/* ------------------------------------------------------------ CG */
/* y = (I + κ L) x on a chain of n nodes (L the graph Laplacian, per
 * component); the k-th product (interrupt_at) requests an interrupt. */
typedef struct chain_op {
    defo_index n;
    double kappa;
    int calls, interrupt_at;
} chain_op;

static void chain_apply(void *ctx, const double *x, double *y) {
    chain_op *c = ctx;
    if (++c->calls == c->interrupt_at) defo_interrupt();
    for (defo_index i = 0; i < c->n; i++)
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            double v = x[j];
            if (i > 0) v += c->kappa * (x[j] - x[j - 3]);
            if (i + 1 < c->n) v += c->kappa * (x[j] - x[j + 3]);
            y[j] = v;
        }
}

static void test_cg(void) {
    enum { N = 200 };
    static double b[3 * N], x[3 * N], xr[3 * N], work[12 * N];
    for (int j = 0; j < 3 * N; j++) b[j] = sin(0.37 * j) + 0.2;
    defo_cg_def d = defo_default_cg_def();
    d.tolerance = 1e-12;
    d.max_iterations = 1000;
    chain_op op = {N, 50.0, 0, 7};
    defo_cg_result r;
    defo_interrupt_clear();
    memset(x, 0, sizeof x);
    defo_status s = defo_cg_solve(&d, N, chain_apply, &op, NULL, NULL, NULL, b, x, work, &r);
    CHECK(s == DEFO_ERR_INTERRUPTED);
    CHECK(defo_interrupt_requested());
    CHECK(strstr(defo_last_error(), "interrupted") != NULL);
    CHECK(r.iterations == 7 && !r.converged);
    defo_interrupt_clear();
    /* the reference: the same solve stopped by its iteration cap at 7 */
    chain_op ref = {N, 50.0, 0, 0};
    d.max_iterations = 7;
    memset(xr, 0, sizeof xr);
    CHECK(defo_cg_solve(&d, N, chain_apply, &ref, NULL, NULL, NULL, b, xr, work, &r) ==
          DEFO_WARN_NOT_CONVERGED);
    CHECK(memcmp(x, xr, sizeof x) == 0);
    /* cleared, the solve runs to its tolerance */
    d.max_iterations = 1000;
    memset(x, 0, sizeof x);
    CHECK_OK(defo_cg_solve(&d, N, chain_apply, &ref, NULL, NULL, NULL, b, x, work, &r));
    TEST_REPORT("CG: interrupted after 7 iterations (the 7th iterate kept); cleared: converged "
                "in %d",
                r.iterations);
    CHECK(r.converged && r.iterations > 7);
}

/* ------------------------------------------------------------ Newton */
/* E(x) = Σ_i [¼|d_i|⁴ + ½|d_i|²] + κ/2 Σ_i |d_i − d_{i+1}|², d = x − c: its
 * minimiser is c.  Matrix-free Hessian (node blocks (|d|² + 1) I + 2 d dᵀ
 * plus κ L).  contradict: f = 1, E = Σ x (rises along f: no trial is ever
 * accepted). */
typedef struct quartic {
    defo_index n;
    double kappa;
    const double *c;
    double *d, *last; /* 3n: x − c and x at the last evaluation */
    int contradict;
    int evaluations, interrupt_at_eval;
    int applies, interrupt_at_apply;
    int accepted;
    double **iterates; /* when set: a copy of every accepted iterate */
} quartic;

static defo_status q_evaluate(void *ctx, const double *x, double *f, double *energy) {
    quartic *q = ctx;
    if (++q->evaluations == q->interrupt_at_eval) defo_interrupt();
    const size_t m = 3 * (size_t)q->n;
    memcpy(q->last, x, m * sizeof *x);
    double e = 0;
    if (q->contradict) {
        for (size_t j = 0; j < m; j++) {
            f[j] = 1.0;
            e += x[j];
        }
        *energy = e;
        return DEFO_OK;
    }
    for (size_t j = 0; j < m; j++) q->d[j] = x[j] - q->c[j];
    for (defo_index i = 0; i < q->n; i++) {
        const double *a = q->d + 3 * (size_t)i;
        const double s = a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
        e += 0.25 * s * s + 0.5 * s;
        for (int k = 0; k < 3; k++) f[3 * (size_t)i + (size_t)k] = -(s + 1.0) * a[k];
    }
    for (defo_index i = 0; i + 1 < q->n; i++)
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            const double g = q->d[j] - q->d[j + 3];
            e += 0.5 * q->kappa * g * g;
            f[j] -= q->kappa * g;
            f[j + 3] += q->kappa * g;
        }
    *energy = e;
    return DEFO_OK;
}

static void q_apply(void *ctx, const double *dx, double *y) {
    quartic *q = ctx;
    if (++q->applies == q->interrupt_at_apply) defo_interrupt();
    for (defo_index i = 0; i < q->n; i++) {
        const double *a = q->d + 3 * (size_t)i, *v = dx + 3 * (size_t)i;
        const double s = a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
        const double av = a[0] * v[0] + a[1] * v[1] + a[2] * v[2];
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            double r = (s + 1.0) * v[k] + 2.0 * a[k] * av;
            if (i > 0) r += q->kappa * (dx[j] - dx[j - 3]);
            if (i + 1 < q->n) r += q->kappa * (dx[j] - dx[j + 3]);
            y[j] = r;
        }
    }
}

static void q_diagonal(void *ctx, double *blocks) {
    quartic *q = ctx;
    for (defo_index i = 0; i < q->n; i++) {
        const double *a = q->d + 3 * (size_t)i;
        const double s = a[0] * a[0] + a[1] * a[1] + a[2] * a[2];
        const double lap = (i > 0 ? q->kappa : 0.0) + (i + 1 < q->n ? q->kappa : 0.0);
        double *B = blocks + 9 * (size_t)i;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++)
                B[3 * r + c] = (r == c ? s + 1.0 + lap : 0.0) + 2.0 * a[r] * a[c];
    }
}

static void q_accepted(void *ctx, const double *x) {
    quartic *q = ctx;
    q->accepted++;
    if (q->iterates) memcpy(q->iterates[q->accepted], x, 3 * (size_t)q->n * sizeof *x);
}

enum { QN = 300, QMAX = 100 }; /* QMAX: the default newton.max_iterations */

typedef struct newton_case {
    quartic q;
    defo_newton *N;
    defo_newton_problem p;
    double c[3 * QN], x0[3 * QN], x[3 * QN], d[3 * QN], last[3 * QN];
} newton_case;

static void case_init(newton_case *t, int contradict, defo_forcing forcing) {
    memset(&t->q, 0, sizeof t->q);
    t->q.n = QN;
    t->q.kappa = 40.0;
    t->q.c = t->c;
    t->q.d = t->d;
    t->q.last = t->last;
    t->q.contradict = contradict;
    for (int j = 0; j < 3 * QN; j++) {
        t->c[j] = 0.01 * j + 0.1 * sin(0.5 * j);
        t->x0[j] = t->c[j] + 2.0 * cos(0.11 * j);
    }
    memcpy(t->x, t->x0, sizeof t->x);
    defo_newton_def d = defo_default_newton_def();
    d.max_forced_steps = 0; /* contradict: stop at the first failed line search */
    d.forcing = forcing;
    t->N = NULL;
    CHECK_OK(defo_newton_create(&d, QN, &t->N));
    memset(&t->p, 0, sizeof t->p);
    t->p.n = QN;
    t->p.ctx = &t->q;
    t->p.evaluate = q_evaluate;
    t->p.apply = q_apply;
    t->p.diagonal = q_diagonal;
    t->p.accepted = q_accepted;
}

static void test_newton(void) {
    static newton_case ref, t;
    static double iter_store[QMAX + 1][3 * QN];
    double *iterates[QMAX + 1];
    for (int k = 0; k <= QMAX; k++) iterates[k] = iter_store[k];
    const double target = 1e-10;
    defo_newton_stats st;
    defo_interrupt_clear();

    /* the uninterrupted solve, every accepted iterate kept */
    case_init(&ref, 0, DEFO_FORCING_EISENSTAT_WALKER);
    ref.q.iterates = iterates;
    memcpy(iterates[0], ref.x0, sizeof ref.x0);
    CHECK_OK(defo_newton_solve(ref.N, &ref.p, target, ref.x, NULL, 0, 0, &st));
    const int total = ref.q.accepted;
    double err = 0;
    for (int j = 0; j < 3 * QN; j++) err = fmax(err, fabs(ref.x[j] - ref.c[j]));
    TEST_REPORT("quartic chain: converged in %d Newton / %d CG iterations, max |x - c| = %.1e",
                st.iterations, st.cg_iterations, err);
    CHECK(st.reason == DEFO_REASON_CONVERGED && err < 1e-9 && total >= 3 && total <= QMAX);
    const int evals = ref.q.evaluations;

    /* (a) an evaluation requests the interrupt: every evaluation of the
     * solve in turn, each stop at the last accepted iterate */
    int stops = 0;
    for (int e = 2; e <= evals && total <= QMAX; e++) {
        case_init(&t, 0, DEFO_FORCING_EISENSTAT_WALKER);
        t.q.interrupt_at_eval = e;
        defo_status s = defo_newton_solve(t.N, &t.p, target, t.x, NULL, 0, 0, &st);
        if (s == DEFO_OK) { /* the last evaluation: converged before any check */
            CHECK(e == evals);
            defo_interrupt_clear();
            defo_newton_destroy(t.N);
            continue;
        }
        stops++;
        CHECK_MSG(s == DEFO_ERR_INTERRUPTED && st.reason == DEFO_REASON_INTERRUPTED,
                  "evaluation %d: status %d reason %s", e, s,
                  defo_convergence_reason_name(st.reason));
        CHECK(strstr(defo_last_error(), "interrupted") != NULL);
        CHECK(t.q.accepted < total);
        CHECK_MSG(memcmp(t.x, iterates[t.q.accepted], sizeof t.x) == 0,
                  "evaluation %d: x is not accepted iterate %d", e, t.q.accepted);
        CHECK(memcmp(t.last, t.x, sizeof t.x) == 0); /* the problem's state is x's */
        defo_interrupt_clear();
        defo_newton_destroy(t.N);
    }
    TEST_REPORT("interrupt requested by each of the %d evaluations: %d stops, each at the last "
                "accepted iterate",
                evals - 1, stops);
    CHECK(stops >= evals - 2);

    /* (b) inside the first linear solve (its 3rd CG product; TARGET forcing:
     * solved to the Newton target, many more iterations) */
    case_init(&t, 0, DEFO_FORCING_TARGET);
    t.q.interrupt_at_apply = 3;
    CHECK(defo_newton_solve(t.N, &t.p, target, t.x, NULL, 0, 0, &st) == DEFO_ERR_INTERRUPTED);
    CHECK(st.reason == DEFO_REASON_INTERRUPTED && st.iterations == 1 && st.cg_iterations == 3);
    CHECK(strstr(defo_last_error(), "PCG: interrupted") != NULL);
    CHECK(t.q.accepted == 0 && memcmp(t.x, t.x0, sizeof t.x) == 0);
    CHECK(memcmp(t.last, t.x0, sizeof t.x) == 0);
    /* cleared, the same driver converges to c (the interrupted solve left
     * nothing behind that changes the answer) */
    defo_interrupt_clear();
    t.q.interrupt_at_apply = 0;
    CHECK_OK(defo_newton_solve(t.N, &t.p, target, t.x, NULL, 0, 0, &st));
    CHECK(st.reason == DEFO_REASON_CONVERGED);
    err = 0;
    for (int j = 0; j < 3 * QN; j++) err = fmax(err, fabs(t.x[j] - t.c[j]));
    CHECK(err < 1e-9);
    defo_newton_destroy(t.N);

    /* (c) in a line search that never succeeds (trial 2 of iteration 1) */
    case_init(&t, 1, DEFO_FORCING_EISENSTAT_WALKER);
    t.q.interrupt_at_eval = 3; /* 1: the start, 2: trial α = 1, 3: trial α = ½ */
    CHECK(defo_newton_solve(t.N, &t.p, target, t.x, NULL, 0, 0, &st) == DEFO_ERR_INTERRUPTED);
    CHECK(st.reason == DEFO_REASON_INTERRUPTED && st.backtracks == 2);
    CHECK(strstr(defo_last_error(), "line search") != NULL);
    CHECK(memcmp(t.x, t.x0, sizeof t.x) == 0 && memcmp(t.last, t.x0, sizeof t.x) == 0);
    defo_interrupt_clear();
    defo_newton_destroy(t.N);
    defo_newton_destroy(ref.N);
}

/* ------------------------------------------------------------ world */
static void on_alarm(int sig) {
    (void)sig;
    defo_interrupt();
}

static void alarm_in(double seconds) {
    struct itimerval it;
    memset(&it, 0, sizeof it);
    it.it_value.tv_sec = (time_t)seconds;
    it.it_value.tv_usec = (suseconds_t)(1e6 * (seconds - (double)(time_t)seconds));
    if (it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0) it.it_value.tv_usec = 1;
    setitimer(ITIMER_REAL, &it, NULL);
}

static void alarm_off(void) {
    struct itimerval it;
    memset(&it, 0, sizeof it);
    setitimer(ITIMER_REAL, &it, NULL);
}

typedef struct snap {
    double *x, *v, time;
    int frame;
} snap;

static void take(defo_world *w, defo_body_id id, snap *s) {
    const size_t m = 3 * (size_t)defo_body_num_nodes(w, id);
    memcpy(s->x, defo_body_positions(w, id), m * sizeof(double));
    memcpy(s->v, defo_body_velocities(w, id), m * sizeof(double));
    s->time = defo_world_time(w);
    s->frame = defo_world_frame(w);
}

static int same(defo_world *w, defo_body_id id, const snap *s) {
    const size_t m = 3 * (size_t)defo_body_num_nodes(w, id);
    return !memcmp(s->x, defo_body_positions(w, id), m * sizeof(double)) &&
           !memcmp(s->v, defo_body_velocities(w, id), m * sizeof(double)) &&
           s->time == defo_world_time(w) && s->frame == defo_world_frame(w);
}

static void test_world_newton(void) {
    /* a clamped beam of invertible tet4, backward Euler by Newton, 4 steps
     * a frame, falling from rest under gravity */
    defo_box_def bd = defo_default_box_def();
    const double size[3] = {1.0, 0.2, 0.2};
    const int cells[3] = {24, 5, 5};
    for (int k = 0; k < 3; k++) {
        bd.size[k] = size[k];
        bd.cells[k] = cells[k];
        bd.origin[k] = k == 0 ? 0.0 : -0.5 * size[k];
    }
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    if (!m || !w) return;
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    const double frame = 1.0 / 30;
    id.time_step = frame / 4;
    int integ = -1;
    CHECK_OK(defo_world_add_integrator(w, &id, &integ));
    defo_body_def body = defo_default_body_def();
    body.mesh = m;
    body.name = "beam";
    body.integrator = integ;
    body.material.youngs_modulus = 1e5;
    defo_body_id b;
    CHECK_OK(defo_world_add_body(w, &body, &b));
    const double lo[3] = {-1, -1, -1}, hi[3] = {1e-9, 1, 1};
    defo_region clamp = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, b, &clamp, NULL, NULL));
    const size_t m3 = 3 * (size_t)defo_body_num_nodes(w, b);
    snap s0, s1;
    s0.x = malloc(m3 * sizeof(double));
    s0.v = malloc(m3 * sizeof(double));
    s1.x = malloc(m3 * sizeof(double));
    s1.v = malloc(m3 * sizeof(double));

    /* one frame to warm up, then the frame under test: uninterrupted */
    defo_interrupt_clear();
    CHECK_OK(defo_world_step(w, frame));
    void *ck = NULL;
    size_t ck_size = 0;
    CHECK_OK(defo_world_serialize(w, 7, &ck, &ck_size));
    take(w, b, &s0);
    CHECK_OK(defo_world_step(w, frame));
    take(w, b, &s1);
    defo_step_stats st;
    defo_world_stats(w, &st);
    const double T = st.seconds;
    CHECK(st.newton_iterations >= 4 && st.cg_iterations > st.newton_iterations);

    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, &old);
    /* delays as fractions of the frame's own time: later when the alarm
     * came before the first step, earlier when it came after the last */
    double frac = 0.5;
    int in_solve = 0, between = 0, missed = 0, attempts = 0;
    for (; attempts < 24 && !in_solve; attempts++) {
        CHECK_OK(defo_world_deserialize(w, 7, ck, ck_size));
        CHECK(same(w, b, &s0));
        defo_interrupt_clear();
        alarm_in(frac * T);
        defo_status s = defo_world_step(w, frame);
        alarm_off();
        if (s == DEFO_OK && !defo_interrupt_requested()) {
            missed++;
            CHECK(same(w, b, &s1)); /* an untouched frame is the reference */
            frac *= 0.5;
            continue;
        }
        if (s == DEFO_OK) { /* the alarm rang after the last check */
            missed++;
            CHECK(same(w, b, &s1));
            frac *= 0.7;
            continue;
        }
        CHECK_MSG(s == DEFO_ERR_INTERRUPTED, "status %s: %s", defo_status_name(s),
                  defo_last_error());
        CHECK_MSG(same(w, b, &s0), "interrupted (%s) but not at the frame's start",
                  defo_last_error());
        const char *msg = defo_last_error();
        if (strstr(msg, "newton: interrupted") || strstr(msg, "PCG: interrupted")) {
            in_solve = 1;
            TEST_REPORT("frame of %.0f ms (%d Newton, %d CG iterations) interrupted at %.0f ms: "
                        "\"%s\"; back at the frame's start",
                        1e3 * T, st.newton_iterations, st.cg_iterations, 1e3 * frac * T, msg);
        } else {
            between++;
            frac = fmin(0.9, frac * 1.3 + 0.05);
        }
    }
    sigaction(SIGALRM, &old, NULL);
    TEST_REPORT("%d attempts: %d inside a solve, %d between steps, %d after the frame", attempts,
                in_solve, between, missed);
    CHECK(in_solve == 1);
    /* cleared, the frame re-run from its start is the uninterrupted one */
    defo_interrupt_clear();
    CHECK_OK(defo_world_step(w, frame));
    CHECK(same(w, b, &s1));
    defo_free(ck);
    free(s0.x);
    free(s0.v);
    free(s1.x);
    free(s1.v);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_cg);
    RUN(test_newton);
    RUN(test_world_newton);
    return test_summary();
}
