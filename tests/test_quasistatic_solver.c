/*
 * tests/test_quasistatic_solver.c — the speed options of the quasistatic
 * integrator (TSIF05 Newton per frame; preconditioner, forcing rule,
 * predictor) change the work, never the answer.
 *
 * References used (each test says which):
 *   - the equilibrium of the block-Jacobi / target-forcing / no-predictor
 *     solver at a tight tolerance: every preconditioner, forcing rule and
 *     predictor reaches the same one, to a bound the Newton tolerance implies
 *     (residual ≤ 1e-8 f_ref, f_ref ≈ (2μ+λ)h², so |Δx| ≲ 1e-8 h per node
 *     times the conditioning: 1e-6 m on a 0.2 m bar, as the Cholesky test in
 *     test_quasistatic.c);
 *   - iteration counts measured on these problems, asserted with margin (not
 *     timings): a factorised preconditioner needs far fewer CG iterations
 *     than block Jacobi, Eisenstat–Walker forcing fewer CG iterations in
 *     total than the target forcing, the predictor fewer Newton iterations;
 *   - the predictor's gates, against the same world without a predictor
 *     (bitwise: a frame whose start was not predicted is exactly the
 *     no-predictor frame): the predictor of order p starts from frame p + 2,
 *     a state that is not the last equilibrium is used as given, a frame
 *     solved again at its own time is not extrapolated; bones that stop make
 *     the extrapolated start lose the energy comparison (the previous
 *     equilibrium is then exact: 0 Newton iterations);
 *   - a counting allocator: warm world steps allocate nothing;
 *   - 1 vs 2 threads bitwise identical with the factorised preconditioners
 *     and the predictor over several frames;
 *   - scenes: the settings map (bad values named), a checkpoint with the
 *     scene defaults resumes bit for bit (the uninterrupted run), a
 *     predictor asked for in the scene cuts Newton iterations.
 *
 * Bodies run as the quasistatic solver always ran them: constant
 * extrapolation (TSIF05 §9) and the definiteness fix (§8) on, no gravity.
 */
#include "defo/cholesky.h"
#include "defo/collision.h"
#include "defo/geometry.h"
#include "defo/mesh.h"
#include "defo/scene.h"
#include "defo/world.h"
#include "determinism.h"
#include "test.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static defo_mesh *box(const double origin[3], const double size[3], int cx, int cy, int cz) {
    defo_box_def d = defo_default_box_def();
    for (int k = 0; k < 3; k++) {
        d.origin[k] = origin[k];
        d.size[k] = size[k];
    }
    d.cells[0] = cx;
    d.cells[1] = cy;
    d.cells[2] = cz;
    defo_mesh *m = NULL;
    defo_generate_box(&d, &m);
    return m;
}

/* A world without gravity with mesh m (neo-Hookean, E = 1e5 Pa, ν = 0.3) as
 * its one body, stepped by integrator def. */
static defo_world *qs_world(const defo_mesh *m, const defo_integrator_def *def, defo_body_id *id) {
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    int integ = -1;
    CHECK_OK(defo_world_add_integrator(w, def, &integ));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material.youngs_modulus = 1e5;
    bd.material.poisson = 0.3;
    bd.force.constant_extrapolation = 1;
    bd.force.definiteness_fix = 1;
    bd.integrator = integ;
    CHECK_OK(defo_world_add_body(w, &bd, id));
    return w;
}

/* Bar [0, 1] × [−0.1, 0.1]² clamped at x = 0, the end x = 1 a bone turning
 * about the x axis at `speed` rad/s (optionally also pulled along x); *set
 * (may be NULL) gets the moving bone's set. */
static defo_world *twisted_bar(const defo_mesh *m, const defo_integrator_def *d, double speed,
                               double pull, defo_body_id *id, int *set) {
    defo_world *w = qs_world(m, d, id);
    double lo0[3] = {-1, -1, -1}, hi0[3] = {0.001, 1, 1}, lo1[3] = {0.999, -1, -1},
           hi1[3] = {2, 1, 1};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    defo_motion_def mo = defo_default_motion_def();
    mo.angular_axis[0] = 1;
    mo.angular_axis[2] = 0;
    mo.angular_speed = speed;
    mo.velocity[0] = pull;
    CHECK_OK(defo_body_prescribe(w, *id, &r0, NULL, NULL));
    CHECK_OK(defo_body_prescribe(w, *id, &r1, &mo, set));
    return w;
}

typedef struct totals {
    int frames, converged, newton, cg, setups, negative, contacts;
} totals;

static void add_frame(totals *t, defo_status rc, const defo_step_stats *st, double tolerance) {
    t->frames++;
    t->converged += rc == DEFO_OK && st->reason == DEFO_REASON_CONVERGED &&
                    st->residual <= tolerance * 1.0000001;
    t->newton += st->newton_iterations;
    t->cg += st->cg_iterations;
    t->setups += st->precond_setups;
    t->negative += st->negative_curvature;
    t->contacts = (int)st->collisions;
}

/* Step `frames` frames of dt into the world; x (may be NULL) gets the last
 * equilibrium. */
static totals run_frames(defo_world *w, defo_body_id id, double dt, int frames, double *x) {
    totals t;
    memset(&t, 0, sizeof t);
    const double tol = defo_world_integrator(w, defo_body_integrator(w, id))->tolerance;
    for (int f = 1; f <= frames; f++) {
        defo_status rc = defo_world_step(w, dt);
        defo_step_stats st;
        defo_world_stats(w, &st);
        add_frame(&t, rc, &st, tol);
    }
    if (x) memcpy(x, defo_body_positions(w, id), sizeof(double) * 3 * defo_body_num_nodes(w, id));
    return t;
}

static double max_diff(const double *a, const double *b, size_t n) {
    double d = 0;
    for (size_t i = 0; i < n; i++) d = fmax(d, fabs(a[i] - b[i]));
    return d;
}

static defo_integrator_def tight(defo_precond_kind pc, defo_forcing forcing, defo_predictor pred) {
    defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.tolerance = 1e-8;
    d.linear.precond.kind = pc;
    d.newton.forcing = forcing;
    d.predictor = pred;
    return d;
}

/* Every preconditioner reaches block Jacobi's equilibrium (reference) over 6
 * frames of a twisted, stretched bar (22.5° and 2 cm a frame) to 1e-6 m
 * (measured ≤ 1.5e-8 m); the factorised ones (IC(0), two-level) with under
 * half its CG iterations (measured 0.34× and 0.16× optimised, 0.39× and
 * 0.30× under the sanitizers), reusing factorisations across the Newton
 * iterations of a frame (fewer factorisations than Newton iterations), no
 * negative curvature (definiteness fix on).  With CHOLMOD, the sparse
 * Cholesky factor as a lagged preconditioner too. */
static void test_preconditioners_same_equilibrium(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    int k = TEST_HEAVY(10) >= 4 ? 4 : 2;
    defo_mesh *m = box(o, s, 5 * k, k, k);
    const size_t N = 3 * (size_t)m->num_nodes;
    const int frames = 6;
    const defo_precond_kind kinds[5] = {DEFO_PRECOND_BLOCK_JACOBI, DEFO_PRECOND_JACOBI,
                                        DEFO_PRECOND_BLOCK_IC0, DEFO_PRECOND_TWO_LEVEL,
                                        DEFO_PRECOND_CHOLESKY};
    const int count = defo_cholesky_available() ? 5 : 4;
    double *x[5];
    totals t[5];
    for (int i = 0; i < count; i++) {
        x[i] = malloc(sizeof(double) * N);
        defo_integrator_def d =
            tight(kinds[i], DEFO_FORCING_EISENSTAT_WALKER, DEFO_PREDICTOR_QUADRATIC);
        defo_body_id id;
        defo_world *w = twisted_bar(m, &d, M_PI / 8, 0.02, &id, NULL);
        t[i] = run_frames(w, id, 1.0, frames, x[i]);
        defo_world_destroy(w);
        double diff = max_diff(x[i], x[0], N);
        TEST_REPORT("%d tets, %-12s: %d/%d converged, %d Newton, %d CG (%.1f per Newton), %d "
                    "factorisations, max |x - x_block_jacobi| = %.2e m",
                    (int)m->num_elems, defo_precond_name(kinds[i]), t[i].converged, frames,
                    t[i].newton, t[i].cg, (double)t[i].cg / t[i].newton, t[i].setups, diff);
        CHECK(t[i].converged == frames);
        CHECK(t[i].negative == 0);
        CHECK(diff < 1e-6);
        if (i >= 2) {
            CHECK(2 * t[i].cg < t[0].cg);
            CHECK(t[i].setups >= 1 && t[i].setups < t[i].newton);
        } else {
            CHECK(t[i].setups == 0);
        }
    }
    for (int i = 0; i < count; i++) free(x[i]);
    defo_mesh_destroy(m);
}

/* Contact: a block pressed 20 % by a rigid plate (penalty 100× the default,
 * so the contact blocks dominate the diagonal of the nodes under the plate).
 * The factorisation includes them: IC(0) and two-level reach block Jacobi's
 * equilibrium (reference) with fewer CG iterations.  Solved again at the
 * same time, the equilibrium needs no iteration. */
static void test_preconditioners_with_contact(void) {
    double o[3] = {-0.5, -0.5, 0}, s[3] = {1, 1, 1};
    defo_mesh *m = box(o, s, 4, 4, 4);
    const size_t N = 3 * (size_t)m->num_nodes;
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_BOX;
    sh.center[2] = 1.5;
    sh.half_extent[0] = sh.half_extent[1] = 3;
    sh.half_extent[2] = 0.5;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    cd.motion.velocity[2] = -0.05; /* plate bottom at z = 1 − 0.05 t */
    defo_collider *plate = NULL;
    CHECK_OK(defo_collider_create(&cd, &plate));
    /* 100× the default penalty 10 (2μ+λ) h, h the mean rest edge */
    double mu, lambda;
    defo_lame(1e5, 0.3, &mu, &lambda);
    const double h = defo_mesh_mean_edge(m);
    const defo_precond_kind kinds[3] = {DEFO_PRECOND_BLOCK_JACOBI, DEFO_PRECOND_BLOCK_IC0,
                                        DEFO_PRECOND_TWO_LEVEL};
    double *x[3];
    totals t[3];
    for (int i = 0; i < 3; i++) {
        x[i] = malloc(sizeof(double) * N);
        defo_integrator_def d =
            tight(kinds[i], DEFO_FORCING_EISENSTAT_WALKER, DEFO_PREDICTOR_QUADRATIC);
        d.contact_stiffness = 100 * 10 * (2 * mu + lambda) * h;
        defo_body_id id;
        defo_world *w = qs_world(m, &d, &id);
        double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, 1e-9};
        defo_region floor_ = defo_region_box(lo, hi);
        CHECK_OK(defo_body_prescribe(w, id, &floor_, NULL, NULL));
        CHECK_OK(defo_world_add_collider(w, plate));
        t[i] = run_frames(w, id, 1.0, 4, x[i]);
        /* the frame at t = 4 again, from its own equilibrium: no iteration */
        CHECK_OK(defo_world_set_time(w, 3.0, 3));
        CHECK_OK(defo_world_step(w, 1.0));
        defo_step_stats st;
        defo_world_stats(w, &st);
        CHECK(st.newton_iterations == 0);
        CHECK(!memcmp(x[i], defo_body_positions(w, id), sizeof(double) * N));
        defo_world_destroy(w);
        double diff = max_diff(x[i], x[0], N);
        TEST_REPORT("%-12s: %d/4 converged, %d contacts, %d Newton, %d CG, %d factorisations, "
                    "max |x - x_block_jacobi| = %.2e m",
                    defo_precond_name(kinds[i]), t[i].converged, t[i].contacts, t[i].newton,
                    t[i].cg, t[i].setups, diff);
        CHECK(t[i].converged == 4 && t[i].negative == 0);
        CHECK(t[i].contacts >= 25); /* the 5 × 5 top nodes */
        CHECK(diff < 1e-6);
        if (i > 0) CHECK(t[i].cg < t[0].cg);
    }
    for (int i = 0; i < 3; i++) free(x[i]);
    defo_collider_destroy(plate);
    defo_mesh_destroy(m);
}

/* Eisenstat–Walker forcing against the TARGET forcing (which solves every
 * Newton step at once to the accuracy the Newton target needs): the same
 * equilibrium (reference: the TARGET solve), fewer CG iterations in total —
 * measured 0.40× (block Jacobi) and 0.40× (two-level) of them on the
 * optimised size, 0.41× and 0.50× on the sanitizer size, for 2 to 6 more
 * Newton iterations of ~45; asserted < 0.65×. */
static void test_forcing_reduces_cg(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    int k = TEST_HEAVY(10) >= 4 ? 4 : 2;
    defo_mesh *m = box(o, s, 5 * k, k, k);
    const size_t N = 3 * (size_t)m->num_nodes;
    double *xf = malloc(sizeof(double) * N), *xe = malloc(sizeof(double) * N);
    const defo_precond_kind kinds[2] = {DEFO_PRECOND_BLOCK_JACOBI, DEFO_PRECOND_TWO_LEVEL};
    for (int i = 0; i < 2; i++) {
        defo_integrator_def d = tight(kinds[i], DEFO_FORCING_TARGET, DEFO_PREDICTOR_NONE);
        defo_body_id id;
        defo_world *w = twisted_bar(m, &d, M_PI / 8, 0.02, &id, NULL);
        totals tf = run_frames(w, id, 1.0, 4, xf);
        defo_world_destroy(w);
        d.newton.forcing = DEFO_FORCING_EISENSTAT_WALKER;
        w = twisted_bar(m, &d, M_PI / 8, 0.02, &id, NULL);
        totals te = run_frames(w, id, 1.0, 4, xe);
        defo_world_destroy(w);
        double diff = max_diff(xf, xe, N);
        TEST_REPORT("%d tets, %s: target forcing %d Newton / %d CG (%.1f per Newton), "
                    "Eisenstat-Walker %d Newton / %d CG (%.1f per Newton); max |dx| = %.2e m",
                    (int)m->num_elems, defo_precond_name(kinds[i]), tf.newton, tf.cg,
                    (double)tf.cg / tf.newton, te.newton, te.cg, (double)te.cg / te.newton, diff);
        CHECK(tf.converged == 4 && te.converged == 4);
        CHECK(te.cg < 0.65 * tf.cg);
        CHECK(diff < 1e-6);
    }
    free(xf);
    free(xe);
    defo_mesh_destroy(m);
}

/* The predictor over 12 frames of a steadily twisting bar: linear,
 * quadratic and cubic extrapolation reach the same equilibria as no
 * predictor (reference), frame after frame, to 1e-6 m (measured ≤ 1e-7 m),
 * with fewer Newton iterations (measured none / linear / quadratic / cubic:
 * 76 / 38 / 39 / 35 on the optimised size, 70 / 40 / 39 / 28 on the
 * sanitizer size; asserted: each ≤ 2/3 of none; at this tight tolerance the
 * order matters less than on bench_quasistatic).  The
 * predictor of order p has its p + 1 equilibria after frame p + 1: frames
 * 1 .. p + 1 are bitwise the no-predictor frames, frame p + 2 starts from
 * the extrapolation (and so differs in its last bits). */
static void test_predictor_same_answer(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    int k = TEST_HEAVY(10) >= 4 ? 4 : 2;
    defo_mesh *m = box(o, s, 5 * k, k, k);
    const size_t N = 3 * (size_t)m->num_nodes;
    const int frames = 12;
    double *x[4];
    totals t[4];
    defo_world *w[4];
    defo_body_id id[4];
    int first_diff[4] = {0, 0, 0, 0};
    for (int p = 0; p < 4; p++) {
        x[p] = malloc(sizeof(double) * N);
        defo_integrator_def d =
            tight(DEFO_PRECOND_TWO_LEVEL, DEFO_FORCING_EISENSTAT_WALKER, (defo_predictor)p);
        w[p] = twisted_bar(m, &d, M_PI / 2, 0, &id[p], NULL);
        memset(&t[p], 0, sizeof t[p]);
    }
    double worst = 0;
    for (int f = 1; f <= frames; f++) {
        for (int p = 0; p < 4; p++) {
            defo_status rc = defo_world_step(w[p], 1.0 / 30);
            defo_step_stats st;
            defo_world_stats(w[p], &st);
            add_frame(&t[p], rc, &st, 1e-8);
            memcpy(x[p], defo_body_positions(w[p], id[p]), sizeof(double) * N);
            if (p > 0) {
                worst = fmax(worst, max_diff(x[p], x[0], N));
                if (!first_diff[p] && memcmp(x[p], x[0], sizeof(double) * N)) first_diff[p] = f;
            }
        }
    }
    TEST_REPORT("%d tets, %d frames of 3 deg: Newton iterations none %d, linear %d (first "
                "predicted frame %d), quadratic %d (%d), cubic %d (%d); max |x - x_none| over "
                "frames %.2e m",
                (int)m->num_elems, frames, t[0].newton, t[1].newton, first_diff[1], t[2].newton,
                first_diff[2], t[3].newton, first_diff[3], worst);
    for (int p = 0; p < 4; p++) {
        CHECK(t[p].converged == frames);
        if (p > 0) {
            CHECK(first_diff[p] == p + 2);
            CHECK(3 * t[p].newton <= 2 * t[0].newton);
        }
    }
    CHECK(worst < 1e-6);

    /* Gates (quadratic against none).  A state that is not the last
     * equilibrium is used as given: the frame is exactly the no-predictor
     * world's from that state. */
    const double *xq = defo_body_positions(w[2], id[2]);
    memcpy(x[2], xq, sizeof(double) * N);
    x[2][3 * (size_t)(m->num_nodes / 2)] += 1e-3;
    CHECK_OK(defo_body_set_state(w[2], id[2], x[2], NULL));
    CHECK_OK(defo_body_set_state(w[0], id[0], x[2], NULL));
    defo_step_stats s0, s2;
    CHECK_OK(defo_world_step(w[2], 1.0 / 30));
    CHECK_OK(defo_world_step(w[0], 1.0 / 30));
    defo_world_stats(w[2], &s2);
    defo_world_stats(w[0], &s0);
    CHECK(s2.newton_iterations == s0.newton_iterations);
    CHECK(!memcmp(defo_body_positions(w[2], id[2]), defo_body_positions(w[0], id[0]),
                  sizeof(double) * N));
    /* ... a frame solved again at its own time is not extrapolated: its
     * start is its equilibrium, 0 iterations, nothing moves */
    memcpy(x[2], defo_body_positions(w[2], id[2]), sizeof(double) * N);
    const double t_now = defo_world_time(w[2]);
    CHECK_OK(defo_world_set_time(w[2], t_now - 1.0 / 30, defo_world_frame(w[2]) - 1));
    CHECK_OK(defo_world_step(w[2], 1.0 / 30));
    defo_world_stats(w[2], &s2);
    CHECK(s2.newton_iterations == 0);
    CHECK(!memcmp(x[2], defo_body_positions(w[2], id[2]), sizeof(double) * N));
    for (int p = 0; p < 4; p++) {
        defo_world_destroy(w[p]);
        free(x[p]);
    }
    defo_mesh_destroy(m);
}

/* Bones driven by explicit transforms that stop turning: the extrapolated
 * start would keep turning, so it loses the energy comparison to the
 * previous equilibrium, which is exact (reference): 0 Newton iterations.
 * Frames 4 and 5 (quadratic) are predicted: they differ from the same world
 * without a predictor.  Without contact and with a collider far away (the
 * penalty term in every evaluation). */
static void test_predictor_rejected_when_bones_stop(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    defo_mesh *m = box(o, s, 10, 2, 2);
    const size_t N = 3 * (size_t)m->num_nodes;
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_SPHERE;
    sh.center[2] = 10; /* far from the bar: no contact */
    sh.radius = 1;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    defo_collider *ball = NULL;
    CHECK_OK(defo_collider_create(&cd, &ball));
    for (int with_contact = 0; with_contact < 2; with_contact++) {
        defo_world *w[2];
        defo_body_id id[2];
        int set[2];
        for (int p = 0; p < 2; p++) {
            defo_integrator_def d = tight(DEFO_PRECOND_TWO_LEVEL, DEFO_FORCING_EISENSTAT_WALKER,
                                          p ? DEFO_PREDICTOR_QUADRATIC : DEFO_PREDICTOR_NONE);
            w[p] = twisted_bar(m, &d, 0, 0, &id[p], &set[p]);
            if (with_contact) CHECK_OK(defo_world_add_collider(w[p], ball));
        }
        int predicted = 0, same_before = 1, newton_after = -1;
        for (int f = 1; f <= 7; f++) {
            double a = 0.05 * (f <= 5 ? f : 5); /* stops after frame 5 */
            double R[9] = {1, 0, 0, 0, cos(a), -sin(a), 0, sin(a), cos(a)}, T[3] = {0, 0, 0};
            for (int p = 0; p < 2; p++) {
                CHECK_OK(defo_body_set_transform(w[p], id[p], set[p], R, T));
                CHECK_OK(defo_world_step(w[p], 1.0));
            }
            const int differ = memcmp(defo_body_positions(w[0], id[0]),
                                      defo_body_positions(w[1], id[1]), sizeof(double) * N) != 0;
            if (f <= 3) same_before &= !differ;
            if (f == 4 || f == 5) predicted += differ;
            if (f == 6) {
                defo_step_stats st;
                defo_world_stats(w[1], &st);
                newton_after = st.newton_iterations;
            }
        }
        TEST_REPORT("%s: frames 1-3 as without a predictor: %s; frames 4-5 predicted %d of 2; "
                    "after the bones stop: %d Newton iterations",
                    with_contact ? "with a collider" : "no collider", same_before ? "yes" : "no",
                    predicted, newton_after);
        CHECK(same_before);
        CHECK(predicted == 2);
        CHECK(newton_after == 0);
        for (int p = 0; p < 2; p++) defo_world_destroy(w[p]);
    }
    defo_collider_destroy(ball);
    defo_mesh_destroy(m);
}

/* A counting allocator: once warm (first frames: matrix, factor, history,
 * the world's frame snapshot), world steps allocate nothing with block
 * Jacobi, IC(0) and two-level (whose coarse matrix is allocated once at its
 * largest size although the number of aggregates changes as the bar
 * twists). */
static long alloc_calls;
static void *count_alloc(size_t size, void *user) {
    (void)user;
    alloc_calls++;
    return malloc(size);
}
static void count_free(void *p, void *user) {
    (void)user;
    free(p);
}

static void test_no_allocation_when_warm(void) {
    defo_set_allocator(count_alloc, count_free, NULL);
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    defo_mesh *m = box(o, s, 10, 2, 2);
    const defo_precond_kind kinds[3] = {DEFO_PRECOND_BLOCK_JACOBI, DEFO_PRECOND_BLOCK_IC0,
                                        DEFO_PRECOND_TWO_LEVEL};
    for (int i = 0; i < 3; i++) {
        defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
        d.predictor = DEFO_PREDICTOR_CUBIC;
        d.linear.precond.kind = kinds[i];
        d.linear.max_age = 2; /* refactor often */
        defo_body_id id;
        defo_world *w = twisted_bar(m, &d, M_PI / 2, 0, &id, NULL);
        long warm = 0;
        int setups = 0;
        for (int f = 1; f <= 20; f++) {
            if (f == 6) warm = alloc_calls;
            CHECK_OK(defo_world_step(w, 1.0 / 30));
            defo_step_stats st;
            defo_world_stats(w, &st);
            if (f >= 6) setups += st.precond_setups;
        }
        TEST_REPORT("%s: %ld allocations in frames 6-20 (%d factorisations)",
                    defo_precond_name(kinds[i]), alloc_calls - warm, setups);
        CHECK(alloc_calls == warm);
        if (i > 0) CHECK(setups > 0);
        defo_world_destroy(w);
    }
    defo_mesh_destroy(m);
    defo_set_allocator(NULL, NULL, NULL);
}

/* 1 vs 2 threads: 6 frames with IC(0) / two-level (lagged) and the cubic
 * predictor, bitwise identical; the optimised size has more than 4096
 * nodes, so IC(0) factors two subdomains and the products run in
 * parallel. */
typedef struct det_ctx {
    defo_mesh *m;
    defo_precond_kind precond;
} det_ctx;

static void det_run(void *vctx, void *out) {
    det_ctx *c = vctx;
    defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.predictor = DEFO_PREDICTOR_CUBIC;
    d.linear.precond.kind = c->precond;
    defo_body_id id;
    defo_world *w = twisted_bar(c->m, &d, M_PI / 2, 0, &id, NULL);
    for (int f = 1; f <= 6; f++) CHECK_OK(defo_world_step(w, 1.0 / 30));
    memcpy(out, defo_body_positions(w, id), sizeof(double) * 3 * (size_t)c->m->num_nodes);
    defo_world_destroy(w);
}

static void test_threads_bitwise(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    det_ctx c;
    int k = TEST_HEAVY(10) >= 4 ? 9 : 2; /* 9: 45 × 9 × 9 cells, 5000 nodes */
    c.m = box(o, s, 5 * k, k, k);
    const defo_precond_kind kinds[2] = {DEFO_PRECOND_BLOCK_IC0, DEFO_PRECOND_TWO_LEVEL};
    for (int i = 0; i < 2; i++) {
        c.precond = kinds[i];
        CHECK(test_bitwise_same_for_threads(det_run, &c,
                                            sizeof(double) * 3 * (size_t)c.m->num_nodes, 2));
    }
    defo_mesh_destroy(c.m);
}

/* Bad settings are refused when the integrator is added, naming the
 * setting. */
static void test_bad_settings(void) {
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(NULL, &w));
    defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.linear.max_age = -1;
    CHECK(defo_world_add_integrator(w, &d, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "max_age") != NULL);
    d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.linear.rate_growth = 0;
    CHECK(defo_world_add_integrator(w, &d, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "rate_growth") != NULL);
    d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.newton.forcing = (defo_forcing)7;
    CHECK(defo_world_add_integrator(w, &d, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "newton.forcing") != NULL);
    d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.predictor = (defo_predictor)9;
    CHECK(defo_world_add_integrator(w, &d, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "integrator.predictor") != NULL);
    d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.contact_stiffness = -1;
    CHECK(defo_world_add_integrator(w, &d, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "contact_stiffness") != NULL);
    CHECK(defo_world_num_integrators(w) == 0);
    defo_world_destroy(w);
}

/* Scenes (src/scene): "precond", "forcing" and "predictor" of a quasistatic
 * integrator.  A bar whose end bone turns at 90°/s, 8 frames at 30 fps. */
static int scene_frames(const char *extra, int frames, int ckpt_frame, const char *ckpt,
                        double *x_out, int *newton) {
    char text[1024];
    snprintf(text, sizeof text,
             "{\"duration\": {\"fps\": 30}, \"gravity\": [0, 0, 0],"
             " \"integrator\": {\"type\": \"quasistatic\"%s},"
             " \"bodies\": [{\"generator\": {\"type\": \"box\", \"size\": [1, 0.2, 0.2], "
             "\"center\": [0.5, 0, 0], \"cells\": [10, 2, 2]},"
             "  \"material\": {\"model\": \"neo_hookean\", \"youngs\": 1e5},"
             "  \"fixed\": [{\"plane\": {\"point\": [0, 0, 0], \"normal\": [1, 0, 0]}},"
             "   {\"plane\": {\"point\": [1, 0, 0], \"normal\": [-1, 0, 0]}, \"motion\": "
             "{\"axis\": [1, 0, 0], \"angular_speed\": 1.5708}}]}]}",
             extra);
    defo_scene *sc = NULL;
    defo_scene_errors e;
    defo_status st = defo_scene_parse(text, strlen(text), "scene.json", NULL, &sc, &e);
    for (int i = 0; i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
    defo_scene_errors_free(&e);
    if (st) return st;
    defo_simulation *sim = NULL;
    CHECK_OK(defo_simulation_create(sc, &sim));
    if (ckpt && ckpt_frame == 0) CHECK_OK(defo_simulation_load_checkpoint(sim, ckpt));
    *newton = 0;
    for (int f = sim ? defo_simulation_frame(sim) : frames; f < frames; f++) {
        CHECK(defo_simulation_step_frame(sim) >= 0);
        defo_step_stats ss;
        defo_world_stats(defo_simulation_world(sim), &ss);
        if (f >= 4) *newton += ss.newton_iterations;
        if (ckpt && ckpt_frame == f + 1) CHECK_OK(defo_simulation_save_checkpoint(sim, ckpt));
    }
    if (sim) {
        defo_world *w = defo_simulation_world(sim);
        defo_body_id id = defo_simulation_body(sim, 0);
        memcpy(x_out, defo_body_positions(w, id),
               sizeof(double) * 3 * (size_t)defo_body_num_nodes(w, id));
    }
    defo_simulation_destroy(sim);
    defo_scene_destroy(sc);
    return DEFO_OK;
}

static void test_scene_settings(void) {
    const size_t N = 3 * 11 * 3 * 3;
    double *a = malloc(sizeof(double) * N), *b = malloc(sizeof(double) * N);
    double *c = malloc(sizeof(double) * N);
    char path[512];
    snprintf(path, sizeof path, "%s/test_quasistatic_solver.ckpt", DEFO_TEST_TMP);
    int na = 0, nb = 0, nc = 0;
    /* scene defaults: interrupted at frame 4 and resumed == uninterrupted */
    CHECK_OK(scene_frames("", 8, 4, path, a, &na));
    CHECK_OK(scene_frames("", 8, 0, path, b, &nb));
    CHECK(!memcmp(a, b, sizeof(double) * N));
    CHECK(na == nb);
    remove(path);
    /* every setting by name; the predictor saves Newton iterations */
    CHECK_OK(scene_frames(", \"precond\": \"block_ic0\", \"forcing\": \"eisenstat_walker\", "
                          "\"predictor\": \"quadratic\"",
                          8, -1, NULL, c, &nc));
    double diff = max_diff(a, c, N);
    TEST_REPORT("frames 5-8: %d Newton iterations with the scene defaults, %d with "
                "block_ic0 + eisenstat_walker + quadratic predictor; max |dx| = %.2e m",
                na, nc, diff);
    CHECK(nc < na);
    CHECK(diff < 1e-5);
    /* the predictor's equilibria are part of the checkpoint: interrupted at
     * frame 4 and resumed == uninterrupted, with the predictor on */
    const char *pred = ", \"predictor\": \"cubic\"";
    CHECK_OK(scene_frames(pred, 8, 4, path, a, &na));
    CHECK_OK(scene_frames(pred, 8, 0, path, b, &nb));
    CHECK(!memcmp(a, b, sizeof(double) * N));
    CHECK(na == nb);
    remove(path);
    /* bad values are named with their path and the choices */
    defo_scene *sc = NULL;
    defo_scene_errors e;
    const char *bad = "{\"integrator\": {\"type\": \"quasistatic\", \"precond\": \"ic0\", "
                      "\"forcing\": 3, \"predictor\": \"quartic\"},"
                      " \"bodies\": [{\"generator\": {\"type\": \"box\"}}]}";
    CHECK(defo_scene_parse(bad, strlen(bad), "scene.json", NULL, &sc, &e) ==
          DEFO_ERR_INVALID_ARGUMENT);
    int seen = 0;
    for (int i = 0; i < e.count; i++) {
        TEST_REPORT("%s", e.lines[i]);
        seen += strstr(e.lines[i], "integrator.precond: unknown value 'ic0'") != NULL;
        seen += strstr(e.lines[i], "integrator.forcing: expected a string") != NULL;
        seen += strstr(e.lines[i], "integrator.predictor: unknown value 'quartic'") != NULL;
    }
    CHECK(seen == 3 && !sc);
    defo_scene_errors_free(&e);
    free(a);
    free(b);
    free(c);
}

int main(int argc, char **argv) {
    /* optional argument: run only the tests whose name contains it */
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || strstr("test_bad_settings", only)) RUN(test_bad_settings);
    if (!only || strstr("test_preconditioners_same_equilibrium", only))
        RUN(test_preconditioners_same_equilibrium);
    if (!only || strstr("test_preconditioners_with_contact", only))
        RUN(test_preconditioners_with_contact);
    if (!only || strstr("test_forcing_reduces_cg", only)) RUN(test_forcing_reduces_cg);
    if (!only || strstr("test_predictor_same_answer", only)) RUN(test_predictor_same_answer);
    if (!only || strstr("test_predictor_rejected_when_bones_stop", only))
        RUN(test_predictor_rejected_when_bones_stop);
    if (!only || strstr("test_no_allocation_when_warm", only)) RUN(test_no_allocation_when_warm);
    if (!only || strstr("test_threads_bitwise", only)) RUN(test_threads_bitwise);
    if (!only || strstr("test_scene_settings", only)) RUN(test_scene_settings);
    return test_summary();
}
