/*
 * tests/test_quasistatic.c — TSIF05 quasistatics through the world: the
 * QUASISTATIC integrator (one equilibrium per frame, Newton with the
 * definiteness fix, constant extrapolation, bones as prescribed sets,
 * penalty contact from the world's colliders) and the STATIC one.
 *
 * References used (each test says which):
 *   - finite differences of the forces for the stiffness (fix off), a
 *     smallest-eigenvalue estimate for its definiteness (fix on / off);
 *   - the rest shape for scattered recovery (TSIF05 Fig. 1, reduced);
 *   - the same equilibrium with and without the definiteness fix;
 *   - Euler–Bernoulli δ = PL³/(3EI) for a cantilever under a small tip load;
 *   - convergence (data, not a crash) for large loads, a 360° twist and a
 *     block squashed to 10 % of its height by a rigid plate;
 *   - 1 vs 2 threads bitwise identical;
 *   - the sparse Cholesky Newton step reaches PCG's equilibrium in no more
 *     iterations (CHOLMOD builds only);
 *   - the static integrator: the quasistatic equilibrium of the same loads,
 *     velocities zero.
 *
 * Bodies are set up as the quasistatic solver has always run them: TSIF05
 * §9 constant extrapolation and the §8 definiteness fix on, no gravity, and
 * (where a test uses several frames) the cubic predictor.
 */
#include "defo/cholesky.h"
#include "defo/collision.h"
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/geometry.h"
#include "defo/mesh.h"
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

static int all_finite(const double *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

/* The quasistatic integrator with the predictor the solver used by default. */
static defo_integrator_def qs_def(void) {
    defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.predictor = DEFO_PREDICTOR_CUBIC;
    return d;
}

/* A world without gravity with mesh m (neo-Hookean E, ν) as its one body,
 * stepped by integrator def; fix: the TSIF05 §8 definiteness fix. */
static defo_world *qs_world(const defo_mesh *m, double E, double nu, const defo_integrator_def *def,
                            int fix, defo_body_id *id) {
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    int integ = -1;
    CHECK_OK(defo_world_add_integrator(w, def, &integ));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material.youngs_modulus = E;
    bd.material.poisson = nu;
    bd.force.constant_extrapolation = 1;
    bd.force.definiteness_fix = fix;
    bd.integrator = integ;
    CHECK_OK(defo_world_add_body(w, &bd, id));
    return w;
}

/* Prescribe the ends of a bar along x: x ≤ x0 held, x ≥ x1 moved by mo. */
static int bar_bones(defo_world *w, defo_body_id id, double x0, double x1,
                     const defo_motion_def *mo) {
    double lo0[3] = {-10, -10, -10}, hi0[3] = {x0, 10, 10};
    double lo1[3] = {x1, -10, -10}, hi1[3] = {10, 10, 10};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    int set = -1;
    CHECK_OK(defo_body_prescribe(w, id, &r0, NULL, NULL));
    CHECK_OK(defo_body_prescribe(w, id, &r1, mo, &set));
    return set;
}

static defo_motion_def twist_about_x(double speed, double pull) {
    defo_motion_def mo = defo_default_motion_def();
    mo.angular_axis[0] = 1;
    mo.angular_axis[2] = 0;
    mo.angular_speed = speed;
    mo.velocity[0] = pull;
    return mo;
}

/* The default penalty stiffness of a body: 10 (2μ+λ) h [N/m]. */
static double default_penalty(const defo_mesh *m, double E, double nu) {
    double mu, lambda;
    defo_lame(E, nu, &mu, &lambda);
    return 10 * (2 * mu + lambda) * defo_mesh_mean_edge(m);
}

/* Smallest eigenvalue of a dense symmetric matrix by power iteration on
 * (s I − K), s a Gershgorin bound (test-only, small n). */
static double min_eig(const double *K, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        double r = 0;
        for (int j = 0; j < n; j++) r += fabs(K[(size_t)i * (size_t)n + (size_t)j]);
        s = fmax(s, r);
    }
    double *v = malloc(sizeof(double) * (size_t)n), *w = malloc(sizeof(double) * (size_t)n);
    test_rng rng = {12345};
    for (int i = 0; i < n; i++) v[i] = test_range(&rng, -1, 1);
    double lam = 0;
    for (int it = 0; it < 20000; it++) {
        double nn = 0;
        for (int i = 0; i < n; i++) {
            double a = s * v[i];
            for (int j = 0; j < n; j++) a -= K[(size_t)i * (size_t)n + (size_t)j] * v[j];
            w[i] = a;
            nn += a * a;
        }
        nn = sqrt(nn);
        double vw = 0;
        for (int i = 0; i < n; i++) vw += v[i] * w[i];
        lam = s - vw; /* Rayleigh quotient of K with unit v */
        for (int i = 0; i < n; i++) v[i] = w[i] / nn;
    }
    free(v);
    free(w);
    return lam;
}

/* The stiffness the equilibrium solvers use is the force model's tangent
 * (defo/force_model.h).  K = −∂f/∂x by central differences (fix and constant
 * extrapolation off), matrix-free and assembled; with the fix on, an inverted
 * state's stiffness is PSD while without it has a negative eigenvalue (both
 * with constant extrapolation, as the solvers run it). */
static defo_force_model *model(const defo_mesh *m, const defo_element_rest *rest,
                               const defo_material *mat, int fix, int constant) {
    defo_force_model_def fd = defo_default_force_model_def();
    fd.definiteness_fix = fix;
    fd.constant_extrapolation = constant;
    defo_force_model *fm = NULL;
    CHECK_OK(defo_force_model_create(m, rest, mat, &fd, &fm));
    return fm;
}

static void test_stiffness_fd_and_psd(void) {
    double o[3] = {0, 0, 0}, s[3] = {1, 1, 1};
    defo_mesh *m = box(o, s, 2, 2, 2);
    defo_material_def md = defo_default_material();
    md.youngs_modulus = 1e5;
    md.poisson = 0.3;
    defo_material *mat = NULL;
    CHECK_OK(defo_material_create(&md, &mat));
    defo_element_rest *rest = NULL;
    CHECK_OK(defo_element_rest_create(m, &rest));
    const defo_index n = m->num_nodes;
    const size_t N = 3 * (size_t)n;
    double *x = malloc(sizeof(double) * N);
    memcpy(x, m->x, sizeof(double) * N);
    test_rng rng = {7};
    for (size_t i = 0; i < N; i++) x[i] += test_range(&rng, -0.15, 0.15);
    double *fp = malloc(sizeof(double) * N), *fm = malloc(sizeof(double) * N);
    double *e = calloc(N, sizeof(double)), *y = malloc(sizeof(double) * N);
    double *y2 = malloc(sizeof(double) * N);
    for (int mode = 0; mode < 2; mode++) {
        defo_force_model *fmod = model(m, rest, mat, 0, 0);
        double maxerr = 0, scale = 0;
        const double h = 1e-6;
        for (size_t j = 0; j < N; j += 5) {
            x[j] += h;
            CHECK_OK(defo_force_model_evaluate(fmod, x, 0, fp, NULL));
            x[j] -= 2 * h;
            CHECK_OK(defo_force_model_evaluate(fmod, x, 0, fm, NULL));
            x[j] += h;
            CHECK_OK(defo_force_model_evaluate(fmod, x, DEFO_EVAL_TANGENT, NULL, NULL));
            e[j] = 1;
            if (mode) {
                defo_force_model_tangent_apply(fmod, e, y);
            } else {
                defo_bcsr *A = defo_force_model_assemble(fmod, 1.0, 0.0, NULL, 0.0);
                CHECK(A != NULL);
                if (A) defo_bcsr_multiply(A, e, y);
            }
            e[j] = 0;
            for (size_t i = 0; i < N; i++) {
                double fd = -(fp[i] - fm[i]) / (2 * h);
                maxerr = fmax(maxerr, fabs(fd - y[i]));
                scale = fmax(scale, fabs(y[i]));
            }
        }
        TEST_REPORT("%s: max |K - FD| / max|K| = %.2e", mode ? "matrix-free" : "assembled",
                    maxerr / scale);
        CHECK(maxerr <= 1e-5 * scale);
        defo_force_model_destroy(fmod);
    }
    /* Assembled and matrix-free products agree (same element formula). */
    {
        defo_force_model *fmod = model(m, rest, mat, 1, 1);
        CHECK_OK(defo_force_model_evaluate(fmod, x, DEFO_EVAL_TANGENT, NULL, NULL));
        for (size_t i = 0; i < N; i++) e[i] = test_range(&rng, -1, 1);
        defo_bcsr *A = defo_force_model_assemble(fmod, 1.0, 0.0, NULL, 0.0);
        CHECK(A != NULL);
        if (A) defo_bcsr_multiply(A, e, y);
        defo_force_model_tangent_apply(fmod, e, y2);
        double err = 0, sc = 0;
        for (size_t i = 0; i < N; i++) {
            err = fmax(err, fabs(y[i] - y2[i]));
            sc = fmax(sc, fabs(y[i]));
        }
        CHECK(err <= 1e-12 * sc);
        defo_force_model_destroy(fmod);
        memset(e, 0, sizeof(double) * N);
    }
    /* Inverted state: flip a block of nodes through the mid plane. */
    for (defo_index i = 0; i < n; i++)
        if (m->x[3 * (size_t)i + 2] > 0.75)
            x[3 * (size_t)i + 2] = 0.5 - 0.4 * (m->x[3 * (size_t)i + 2] - 0.5);
    double lam[2];
    for (int fix = 0; fix < 2; fix++) {
        defo_force_model *fmod = model(m, rest, mat, fix, 1);
        CHECK_OK(defo_force_model_evaluate(fmod, x, DEFO_EVAL_TANGENT, NULL, NULL));
        CHECK(defo_force_model_count_inverted(fmod) > 0);
        const defo_bcsr *A = defo_force_model_assemble(fmod, 1.0, 0.0, NULL, 0.0);
        double *K = malloc(sizeof(double) * N * N);
        CHECK(A != NULL);
        if (A) defo_bcsr_to_dense(A, K);
        double sc = 0;
        for (size_t i = 0; i < N; i++) sc = fmax(sc, fabs(K[i * N + i]));
        lam[fix] = min_eig(K, (int)N) / sc;
        free(K);
        defo_force_model_destroy(fmod);
    }
    TEST_REPORT("inverted state: lambda_min(K)/max diag = %.3e without fix, %.3e with fix", lam[0],
                lam[1]);
    CHECK(lam[0] < -1e-3);
    CHECK(lam[1] >= -1e-9);
    free(fp);
    free(fm);
    free(e);
    free(y);
    free(y2);
    free(x);
    defo_element_rest_destroy(rest);
    defo_material_destroy(mat);
    defo_mesh_destroy(m);
}

/* TSIF05 Fig. 1 (reduced): every node scattered at random over a box 10×
 * the mesh size, two end regions prescribed at rest; one frame must return
 * to the rest shape (the unique equilibrium) with no NaN and no negative
 * curvature in CG. */
static void test_scattered_recovery(void) {
    double o[3] = {0, 0, 0}, s[3] = {2, 0.5, 0.5};
    int c = TEST_HEAVY(10) >= 4 ? 8 : 4;
    defo_mesh *m = box(o, s, 2 * c, c / 2, c / 2);
    defo_integrator_def d = qs_def();
    d.newton.max_iterations = 400;
    defo_body_id id;
    defo_world *w = qs_world(m, 1e5, 0.3, &d, 1, &id);
    bar_bones(w, id, 0.01, 1.99, NULL);
    size_t N = 3 * (size_t)m->num_nodes;
    double *x = malloc(sizeof(double) * N);
    test_rng rng = {99};
    for (defo_index i = 0; i < m->num_nodes; i++)
        for (int k = 0; k < 3; k++)
            x[3 * (size_t)i + (size_t)k] = test_range(&rng, -10 * s[k], 10 * s[k]);
    CHECK_OK(defo_body_set_state(w, id, x, NULL));
    CHECK_OK(defo_world_step(w, 1.0));
    defo_step_stats st;
    defo_world_stats(w, &st);
    const double *xr = defo_body_positions(w, id);
    double err = 0;
    for (size_t i = 0; i < N; i++) err = fmax(err, fabs(xr[i] - m->x[i]));
    TEST_REPORT("%d tets: %d Newton iterations, %d CG, %d backtracks, reason %s, inverted at the "
                "end %d, negative curvature %d, |x - X|max = %.2e m",
                (int)m->num_elems, st.newton_iterations, st.cg_iterations, st.backtracks,
                defo_convergence_reason_name(st.reason), (int)st.inverted, st.negative_curvature,
                err);
    CHECK(all_finite(xr, N));
    CHECK(st.reason == DEFO_REASON_CONVERGED);
    CHECK(st.negative_curvature == 0);
    CHECK(st.inverted == 0);
    CHECK(err <= 1e-4 * 2.0);
    defo_world_destroy(w);
    free(x);
    defo_mesh_destroy(m);
}

/* A bar twisted 90° by its end bones and stretched: solved with and without
 * the definiteness fix from the same start; both converge to the same
 * equilibrium (the fix changes the path, not the answer). */
static void test_fix_changes_path_not_answer(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    defo_mesh *m = box(o, s, 10, 2, 2);
    size_t N = 3 * (size_t)m->num_nodes;
    double *xs[2];
    defo_step_stats st[2];
    for (int fix = 0; fix < 2; fix++) {
        defo_integrator_def d = qs_def();
        d.tolerance = 1e-9;
        defo_body_id id;
        defo_world *w = qs_world(m, 1e5, 0.3, &d, fix, &id);
        defo_motion_def mo = twist_about_x(M_PI / 2, 0.1);
        bar_bones(w, id, 0.001, 0.999, &mo);
        CHECK(defo_world_step(w, 1.0) >= 0);
        defo_world_stats(w, &st[fix]);
        xs[fix] = malloc(sizeof(double) * N);
        memcpy(xs[fix], defo_body_positions(w, id), sizeof(double) * N);
        defo_world_destroy(w);
    }
    double diff = 0;
    for (size_t i = 0; i < N; i++) diff = fmax(diff, fabs(xs[0][i] - xs[1][i]));
    TEST_REPORT("90 deg twist in one step: %d iterations without fix (neg. curvature %d), %d with "
                "fix (neg. curvature %d); max |x_nofix - x_fix| = %.2e m",
                st[0].newton_iterations, st[0].negative_curvature, st[1].newton_iterations,
                st[1].negative_curvature, diff);
    CHECK(st[0].reason == DEFO_REASON_CONVERGED && st[1].reason == DEFO_REASON_CONVERGED);
    CHECK(st[1].negative_curvature == 0);
    CHECK(diff <= 1e-6);
    free(xs[0]);
    free(xs[1]);
    defo_mesh_destroy(m);
}

/* Cantilever L = 1, square section a = 0.1, clamped at x = 0, tip traction
 * P/a² on x = L (defo_element_traction_load into the body's dead loads).
 * Reference: Euler–Bernoulli δ = PL³/(3EI), I = a⁴/12.  kind: the
 * integrator (quasistatic or static: the same equilibrium). */
static double cantilever(int cells, double P, defo_integrator_kind kind, defo_step_stats *st,
                         int *tets, double *vmax) {
    const double L = 1, a = 0.1, E = 1e6;
    double o[3] = {0, -a / 2, -a / 2}, s[3] = {L, a, a};
    int cs = cells / 10 > 0 ? cells / 10 : 1;
    defo_mesh *m = box(o, s, cells, cs, cs);
    *tets = (int)m->num_elems;
    defo_integrator_def d = qs_def();
    d.kind = kind;
    d.tolerance = 1e-8;
    defo_body_id id;
    defo_world *w = qs_world(m, E, 0.3, &d, 1, &id);
    double lo0[3] = {-1, -1, -1}, hi0[3] = {1e-9, 1, 1};
    double lo1[3] = {L - 1e-9, -1, -1}, hi1[3] = {2, 1, 1};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    CHECK_OK(defo_body_prescribe(w, id, &r0, NULL, NULL));
    unsigned char *mark = malloc((size_t)m->num_nodes);
    CHECK_OK(defo_region_mark(m, &r1, mark));
    double tr[3] = {0, 0, -P / (a * a)}, area = 0;
    CHECK_OK(defo_element_traction_load(m, mark, tr, defo_body_external_force(w, id), &area));
    CHECK_NEAR(area, a * a, 1e-12);
    CHECK(defo_world_step(w, 1.0) >= 0);
    defo_world_stats(w, st);
    /* tip deflection: mean z displacement of the loaded end */
    const double *x = defo_body_positions(w, id), *v = defo_body_velocities(w, id);
    double dz = 0;
    int cnt = 0;
    *vmax = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        for (int k = 0; k < 3; k++) *vmax = fmax(*vmax, fabs(v[3 * (size_t)i + (size_t)k]));
        if (m->x[3 * (size_t)i] > L - 1e-9) {
            dz += x[3 * (size_t)i + 2] - m->x[3 * (size_t)i + 2];
            cnt++;
        }
    }
    free(mark);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return -dz / cnt;
}

static void test_cantilever(void) {
    const double L = 1, a = 0.1, E = 1e6, I = a * a * a * a / 12;
    const double P = 1e-3 * 3 * E * I / (L * L * L); /* δ_EB = 1e-3 L */
    const double eb = P * L * L * L / (3 * E * I);
    int levels = TEST_HEAVY(10) >= 4 ? 3 : 2;
    int cells[3] = {10, 20, 40};
    double prev = 0, vmax = 0;
    for (int l = 0; l < levels; l++) {
        defo_step_stats st;
        int tets = 0;
        double dl = cantilever(cells[l], P, DEFO_INTEGRATOR_QUASISTATIC, &st, &tets, &vmax);
        TEST_REPORT("small load, %d tets (%d x %d x %d cells): delta/delta_EB = %.4f, %d Newton "
                    "iterations, %d CG",
                    tets, cells[l], cells[l] / 10, cells[l] / 10, dl / eb, st.newton_iterations,
                    st.cg_iterations);
        CHECK(st.reason == DEFO_REASON_CONVERGED);
        CHECK(dl > prev); /* refinement relieves the locking of linear tets */
        CHECK(dl < 1.05 * eb);
        prev = dl;
    }
    /* the finest level is within 30 % of Euler–Bernoulli (linear tets lock) */
    CHECK(prev > (levels == 3 ? 0.7 : 0.3) * eb);
    /* large load (δ_EB = 0.6 L): converges in one frame, no load stepping */
    defo_step_stats st;
    int tets = 0;
    double dl = cantilever(20, 600 * P, DEFO_INTEGRATOR_QUASISTATIC, &st, &tets, &vmax);
    TEST_REPORT("large load (delta_EB = 0.6 L), %d tets: tip drop %.3f m, %d Newton iterations, "
                "%d backtracks, inverted at the end %d",
                tets, dl, st.newton_iterations, st.backtracks, (int)st.inverted);
    CHECK(st.reason == DEFO_REASON_CONVERGED);
    CHECK(dl > 0.2 && dl < 0.6);
}

/* The STATIC integrator (MMDJ01 §2.3) solves the same equilibrium as the
 * quasistatic one for the same loads (reference: the quasistatic tip drop
 * of the large-load cantilever, both to 1e-8 f_ref), and leaves the
 * velocities zero where the quasistatic frame reports its motion Δx/Δt. */
static void test_static_matches_quasistatic(void) {
    const double L = 1, a = 0.1, E = 1e6, I = a * a * a * a / 12;
    const double P = 600 * 1e-3 * 3 * E * I / (L * L * L);
    defo_step_stats sq, ss;
    int tets = 0;
    double vq = 0, vs = 0;
    double dq = cantilever(20, P, DEFO_INTEGRATOR_QUASISTATIC, &sq, &tets, &vq);
    double ds = cantilever(20, P, DEFO_INTEGRATOR_STATIC, &ss, &tets, &vs);
    TEST_REPORT("%d tets, large tip load: tip drop quasistatic %.9f m (%d Newton, max |v| %.3f "
                "m/s), static %.9f m (%d Newton, max |v| %g m/s)",
                tets, dq, sq.newton_iterations, vq, ds, ss.newton_iterations, vs);
    CHECK(sq.reason == DEFO_REASON_CONVERGED && ss.reason == DEFO_REASON_CONVERGED);
    CHECK(fabs(dq - ds) <= 1e-6);
    CHECK(vq > 0.1); /* the frame's motion: the tip fell ~0.4 m in 1 s */
    CHECK(vs == 0);
}

/* Bar twisted 360° through its end bones over 8 frames (45° each). */
static void test_twist_360(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    int c = TEST_HEAVY(10) >= 4 ? 4 : 2;
    defo_mesh *m = box(o, s, 10 * c / 2, c, c);
    defo_integrator_def d = qs_def();
    defo_body_id id;
    defo_world *w = qs_world(m, 1e5, 0.3, &d, 1, &id);
    defo_motion_def mo = twist_about_x(2 * M_PI, 0);
    bar_bones(w, id, 0.001, 0.999, &mo);
    char line[512];
    int pos = 0, all = 1, neg = 0;
    for (int f = 1; f <= 8; f++) {
        defo_status rc = defo_world_step(w, 1.0 / 8);
        defo_step_stats st;
        defo_world_stats(w, &st);
        all &= rc == DEFO_OK;
        neg += st.negative_curvature;
        pos += snprintf(line + pos, sizeof line - (size_t)pos, " %d(%d)", st.newton_iterations,
                        (int)st.inverted);
    }
    TEST_REPORT("%d tets, Newton iterations per frame (inverted at the end):%s", (int)m->num_elems,
                line);
    CHECK(all);
    CHECK(neg == 0);
    CHECK(all_finite(defo_body_positions(w, id), 3 * (size_t)m->num_nodes));
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* Load steps of the equilibrium solver: a bar twisted 180° through its end
 * bones in ONE static solve of at most 20 Newton iterations does not
 * converge (the start is the bar untwisted with one end turned over); the
 * solver takes the step again in parts (the bones part of the way along
 * their motion), converges, and counts the parts as steps.  The answer is
 * checked against the same twist in 16 frames of 11.25° with room for 100
 * iterations each: an elastic equilibrium does not depend on the path, so
 * the two differ by what their residuals allow, at most 2 r / k with r the
 * residual target and k = 3EI/L³ the bar's softest (bending) stiffness. */
static void test_load_steps(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    defo_mesh *m = box(o, s, 10, 2, 2);
    double *ref = NULL;
    for (int run = 0; run < 2; run++) {
        defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_STATIC);
        d.newton.max_iterations = run ? 20 : 100;
        defo_body_id id;
        defo_world *w = qs_world(m, 1e5, 0.3, &d, 1, &id);
        defo_motion_def mo = twist_about_x(M_PI, 0);
        bar_bones(w, id, 0.001, 0.999, &mo);
        const int frames = run ? 1 : 16;
        int ok = 1, newton = 0, extra = 0, unconverged = 0;
        for (int f = 0; f < frames; f++) {
            ok &= defo_world_step(w, 1.0 / frames) == DEFO_OK;
            defo_step_stats st;
            defo_world_stats(w, &st);
            newton += st.newton_iterations;
            extra += st.steps - 1;
            unconverged += st.not_converged;
        }
        const double *x = defo_body_positions(w, id);
        const size_t N = 3 * (size_t)m->num_nodes;
        if (!run) {
            ref = malloc(N * sizeof *ref);
            if (ref) memcpy(ref, x, N * sizeof *ref);
            TEST_REPORT("16 frames of 11.25°: %d Newton iterations", newton);
        } else {
            double diff = 0;
            for (size_t j = 0; ref && j < N; j++) diff = fmax(diff, fabs(x[j] - ref[j]));
            /* r: the target of an unloaded body, tolerance · (2μ+λ) h² */
            double mu, lambda;
            defo_lame(1e5, 0.3, &mu, &lambda);
            const double hm = defo_mesh_mean_edge(m);
            const double I = pow(0.2, 4) / 12, k = 3 * 1e5 * I;
            const double r = d.tolerance * (2 * mu + lambda) * hm * hm;
            TEST_REPORT("one static solve of 180° capped at 20 iterations: %d Newton iterations in "
                        "%d parts, %d left short; %.2e m from the 16-frame twist (bound %.2e m)",
                        newton, extra + 1, unconverged, diff, 2 * r / k);
            CHECK(extra > 0);
            CHECK(unconverged == 0);
            CHECK(diff < 2 * r / k);
        }
        CHECK_MSG(ok, "%s", defo_last_error());
        defo_world_destroy(w);
    }
    free(ref);
    defo_mesh_destroy(m);
}

/* Unit block on a fixed floor squashed to 10 % of its height by a rigid
 * plate (penalty contact with a collider of the world moving down). */
static void test_squash_plate(void) {
    double o[3] = {-0.5, -0.5, 0}, s[3] = {1, 1, 1};
    int c = 4; /* 3 cells buckle into a slower path; 4 is the tested size everywhere */
    defo_mesh *m = box(o, s, c, c, c);
    /* The block buckles sideways under the frictionless plate around half
     * height; there the clamped (PSD) Newton model converges only linearly,
     * so this test allows 300 iterations at a 1e-5 tolerance. */
    defo_integrator_def d = qs_def();
    d.tolerance = 1e-5;
    d.newton.max_iterations = 300;
    d.contact_stiffness = 100 * default_penalty(m, 1e5, 0.3);
    defo_body_id id;
    defo_world *w = qs_world(m, 1e5, 0.3, &d, 1, &id);
    double lo0[3] = {-1, -1, -1}, hi0[3] = {1, 1, 1e-9};
    defo_region r0 = defo_region_box(lo0, hi0);
    CHECK_OK(defo_body_prescribe(w, id, &r0, NULL, NULL));
    /* plate: a thick box whose bottom face starts at z = 1 and moves down */
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_BOX;
    sh.center[0] = 0;
    sh.center[1] = 0;
    sh.center[2] = 1.5;
    sh.half_extent[0] = sh.half_extent[1] = 3;
    sh.half_extent[2] = 0.5;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    cd.motion.velocity[2] = -0.9; /* bottom at z = 1 − 0.9 t */
    defo_collider *plate = NULL;
    CHECK_OK(defo_collider_create(&cd, &plate));
    CHECK_OK(defo_world_add_collider(w, plate));
    char line[1200];
    int pos = 0, all = 1, frames = 18;
    for (int f = 1; f <= frames; f++) {
        defo_status rc = defo_world_step(w, 1.0 / frames);
        defo_step_stats st;
        defo_world_stats(w, &st);
        all &= rc == DEFO_OK && st.negative_curvature == 0;
        pos += snprintf(line + pos, sizeof line - (size_t)pos, " %d(%d)", st.newton_iterations,
                        (int)st.inverted);
    }
    const double *x = defo_body_positions(w, id);
    double top = -1e9;
    for (defo_index i = 0; i < m->num_nodes; i++) top = fmax(top, x[3 * (size_t)i + 2]);
    TEST_REPORT("%d tets squashed to plate height 0.1: Newton iterations per frame (inverted):%s; "
                "top node at z = %.4f",
                (int)m->num_elems, line, top);
    CHECK(all);
    CHECK(top < 0.1 + 0.02 && top > 0.05);
    defo_world_destroy(w);
    defo_collider_destroy(plate);
    defo_mesh_destroy(m);
}

/* 1 vs 2 threads: the result of a frame (a 90° twist of the end bone) is
 * bitwise identical, with PCG (lagged two-level) and with Cholesky. */
typedef struct det_ctx {
    defo_mesh *m;
    defo_linear_method solver;
} det_ctx;

static void det_run(void *vctx, void *out) {
    det_ctx *c = vctx;
    defo_integrator_def d = qs_def();
    d.linear.method = c->solver;
    defo_body_id id;
    defo_world *w = qs_world(c->m, 1e5, 0.3, &d, 1, &id);
    defo_motion_def mo = twist_about_x(M_PI, 0);
    bar_bones(w, id, 0.001, 0.999, &mo);
    CHECK_OK(defo_world_step(w, 0.5)); /* a refused step would compare equal too */
    memcpy(out, defo_body_positions(w, id), sizeof(double) * 3 * (size_t)c->m->num_nodes);
    defo_world_destroy(w);
}

static void test_threads_bitwise(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    det_ctx c;
    int k = TEST_HEAVY(10) >= 4
                ? 5
                : 2; /* 3750 tets optimised (above the parallel threshold), 240 under ASan */
    c.m = box(o, s, 5 * k, k, k);
    c.solver = DEFO_LINEAR_PCG;
    CHECK(
        test_bitwise_same_for_threads(det_run, &c, sizeof(double) * 3 * (size_t)c.m->num_nodes, 2));
    defo_mesh_destroy(c.m);
}

/* Twisted bar (4 frames of 45°) solved with PCG and with sparse Cholesky:
 * the same equilibrium within the Newton tolerance, no more Newton
 * iterations, one factorisation per Newton iteration (a failed one would
 * fall back to PCG: no CG iteration means none did). */
static void twist_frames(const defo_mesh *m, defo_linear_method solver, double *x, int frames,
                         int *newton, int *factorizations, int *cg, int *converged) {
    defo_integrator_def d = qs_def();
    d.tolerance = 1e-8;
    d.linear.method = solver;
    defo_body_id id;
    defo_world *w = qs_world(m, 1e5, 0.3, &d, 1, &id);
    defo_motion_def mo = twist_about_x(M_PI / 4, 0);
    bar_bones(w, id, 0.001, 0.999, &mo);
    *newton = *factorizations = *cg = 0;
    *converged = 1;
    for (int f = 1; f <= frames; f++) {
        defo_status rc = defo_world_step(w, 1.0);
        defo_step_stats st;
        defo_world_stats(w, &st);
        *converged &=
            rc == DEFO_OK && st.reason == DEFO_REASON_CONVERGED && st.residual <= d.tolerance;
        *newton += st.newton_iterations;
        *factorizations += st.precond_setups;
        *cg += st.cg_iterations;
    }
    memcpy(x, defo_body_positions(w, id), sizeof(double) * 3 * (size_t)m->num_nodes);
    defo_world_destroy(w);
}

static void test_cholesky_matches_pcg(void) {
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    defo_mesh *m = box(o, s, 10, 2, 2);
    if (!defo_cholesky_available()) {
        printf("  (skipped: defo built without CHOLMOD; CHOLESKY refused by the integrator)\n");
        defo_integrator_def d = qs_def();
        d.linear.method = DEFO_LINEAR_CHOLESKY;
        CHECK(defo_integrator_def_validate(&d) == DEFO_ERR_UNSUPPORTED);
        defo_mesh_destroy(m);
        return;
    }
    const int frames = 4;
    size_t nn = 3 * (size_t)m->num_nodes;
    double *xp = malloc(sizeof(double) * nn), *xc = malloc(sizeof(double) * nn);
    int np, fp, gp, cp, nc, fc, gc, cc;
    twist_frames(m, DEFO_LINEAR_PCG, xp, frames, &np, &fp, &gp, &cp);
    twist_frames(m, DEFO_LINEAR_CHOLESKY, xc, frames, &nc, &fc, &gc, &cc);
    double dmax = 0;
    for (size_t i = 0; i < nn; i++) dmax = fmax(dmax, fabs(xp[i] - xc[i]));
    TEST_REPORT("%d tets twisted 4 x 45 deg: Newton iterations PCG %d (%d factorisations of "
                "the lagged preconditioner, %d CG), Cholesky %d (%d factorisations, %d CG); max "
                "|x_pcg - x_chol| = %.3g m",
                (int)m->num_elems, np, fp, gp, nc, fc, gc, dmax);
    CHECK(cp && cc);
    CHECK(fp >= 1 && fp < np);
    /* the direct method factors every Newton matrix, and never fails here */
    CHECK(fc == nc && gc == 0);
    CHECK(nc <= np);
    /* both residuals are below 1e-8 f_ref: the equilibria agree to a tiny
     * fraction of the bar width (0.2 m) */
    CHECK(dmax < 1e-6);
    free(xp);
    free(xc);
    defo_mesh_destroy(m);
}

static void test_cholesky_threads_bitwise(void) {
    if (!defo_cholesky_available()) {
        printf("  (skipped: defo built without CHOLMOD)\n");
        return;
    }
    double o[3] = {0, -0.1, -0.1}, s[3] = {1, 0.2, 0.2};
    det_ctx c;
    int k = TEST_HEAVY(10) >= 4 ? 5 : 2;
    c.m = box(o, s, 5 * k, k, k);
    c.solver = DEFO_LINEAR_CHOLESKY;
    CHECK(
        test_bitwise_same_for_threads(det_run, &c, sizeof(double) * 3 * (size_t)c.m->num_nodes, 2));
    defo_mesh_destroy(c.m);
}

/* Errors are data: bad definitions are refused with a message, a frame that
 * cannot converge in the allowed iterations says why and leaves x finite,
 * non-finite state and loads are refused naming the node. */
static void test_errors_and_reasons(void) {
    double o[3] = {0, 0, 0}, s[3] = {1, 1, 1};
    defo_mesh *m = box(o, s, 2, 2, 2);
    defo_integrator_def d = qs_def();
    d.tolerance = 2;
    CHECK(defo_integrator_def_validate(&d) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "tolerance") != NULL);
    d = qs_def();
    d.newton.max_iterations = 1;
    defo_body_id id;
    defo_world *w = qs_world(m, 1e5, 0.3, &d, 1, &id);
    double lo[3] = {5, 5, 5}, hi[3] = {6, 6, 6};
    defo_region empty = defo_region_box(lo, hi);
    CHECK(defo_body_prescribe(w, id, &empty, NULL, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    const size_t N = 3 * (size_t)m->num_nodes;
    double *x = malloc(sizeof(double) * N);
    memcpy(x, m->x, sizeof(double) * N);
    for (defo_index i = 0; i < m->num_nodes; i++) x[3 * (size_t)i] *= 3;
    CHECK_OK(defo_body_set_state(w, id, x, NULL));
    CHECK(defo_world_step(w, 1.0) == DEFO_WARN_NOT_CONVERGED);
    defo_step_stats st;
    defo_world_stats(w, &st);
    CHECK(st.reason == DEFO_REASON_MAX_ITERATIONS && st.newton_iterations == 1);
    CHECK(all_finite(defo_body_positions(w, id), N));
    x[0] = NAN;
    CHECK(defo_body_set_state(w, id, x, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    /* a dead load that is not finite: the step is refused naming the node,
     * the state stays that of the frame's start */
    memcpy(x, defo_body_positions(w, id), sizeof(double) * N);
    double *load = defo_body_external_force(w, id);
    load[3 * 5 + 1] = INFINITY;
    CHECK(defo_world_step(w, 1.0) == DEFO_ERR_INVALID_ARGUMENT);
    TEST_REPORT("non-finite load: %s", defo_last_error());
    CHECK(strstr(defo_last_error(), "node 5") != NULL);
    CHECK(!memcmp(x, defo_body_positions(w, id), sizeof(double) * N));
    free(x);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

int main(int argc, char **argv) {
    /* optional argument: run only the tests whose name contains it */
    const char *only = argc > 1 ? argv[1] : NULL;
    if (!only || strstr("test_stiffness_fd_and_psd", only)) RUN(test_stiffness_fd_and_psd);
    if (!only || strstr("test_errors_and_reasons", only)) RUN(test_errors_and_reasons);
    if (!only || strstr("test_scattered_recovery", only)) RUN(test_scattered_recovery);
    if (!only || strstr("test_fix_changes_path_not_answer", only))
        RUN(test_fix_changes_path_not_answer);
    if (!only || strstr("test_cantilever", only)) RUN(test_cantilever);
    if (!only || strstr("test_static_matches_quasistatic", only))
        RUN(test_static_matches_quasistatic);
    if (!only || strstr("test_twist_360", only)) RUN(test_twist_360);
    if (!only || strstr("test_load_steps", only)) RUN(test_load_steps);
    if (!only || strstr("test_squash_plate", only)) RUN(test_squash_plate);
    if (!only || strstr("test_threads_bitwise", only)) RUN(test_threads_bitwise);
    if (!only || strstr("test_cholesky_matches_pcg", only)) RUN(test_cholesky_matches_pcg);
    if (!only || strstr("test_cholesky_threads_bitwise", only)) RUN(test_cholesky_threads_bitwise);
    return test_summary();
}
