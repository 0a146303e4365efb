/*
 * tests/test_world.c — the one world: body ids, the formulation × element ×
 * integrator matrix, the time integrators' orders of accuracy, and bodies of
 * different formulations and integrators in one world resuming bit for bit.
 *
 * What each test checks against:
 *   - test_ids: the id rules of defo/world.h (another world's id, a stale
 *     index, generation 0 are invalid; accessors return NULL for them).
 *   - test_matrix_sag: a clamped bar under gravity, for every cell of
 *     {invertible, corotated} × {tet4, tet10} × {newmark, backward_euler,
 *     bdf2, quasistatic, static}: the static solve is the reference of its
 *     (formulation, element); dynamic integrators, damped, settle to it
 *     within 0.5 %; quasistatic equals it; the formulations agree at this
 *     small strain; tet10 agrees with Timoshenko beam theory and tet4 is
 *     stiffer (shear locking).
 *   - test_oscillator_order: one tetrahedron with three nodes clamped and
 *     a linear (R = I) corotated model is the undamped 3-dof oscillator
 *     M ẍ = −K (x − X), solved exactly by its eigenmodes; the error at
 *     t = 0.5 s falls ~2× per halving of Δt for backward Euler (first
 *     order) and ~4× for BDF2 (second order, MTPS08 §5.2).
 *   - test_mixed_world: a quasistatic invertible block and a newmark
 *     corotated ball of tet10 in one world, resumed from a checkpoint at
 *     frame 2, equal an uninterrupted run bit for bit.
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/fracture.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/collision.h"
#include "defo/world.h"
#include "test.h"

#include <math.h>
#include <stdint.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static defo_mesh *bar_mesh(const double size[3], const int cells[3], int order) {
    defo_box_def bd = defo_default_box_def();
    for (int k = 0; k < 3; k++) {
        bd.size[k] = size[k];
        bd.cells[k] = cells[k];
        bd.origin[k] = k == 0 ? 0.0 : -0.5 * size[k];
    }
    bd.order = order;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    return m;
}

static void test_ids(void) {
    defo_world *a = NULL, *b = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &a));
    CHECK_OK(defo_world_create(&wd, &b));
    const double size[3] = {1, 1, 1};
    const int cells[3] = {1, 1, 1};
    defo_mesh *m = bar_mesh(size, cells, 1);
    if (!a || !b || !m) goto out;
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    defo_body_id ia, ia2, ib;
    CHECK_OK(defo_world_add_body(a, &bd, &ia));
    CHECK_OK(defo_world_add_body(a, &bd, &ia2));
    CHECK_OK(defo_world_add_body(b, &bd, &ib));
    CHECK(defo_world_num_bodies(a) == 2 && defo_world_num_bodies(b) == 1);
    CHECK(defo_body_is_valid(a, ia) && defo_body_is_valid(a, ia2) && defo_body_is_valid(b, ib));
    /* the same index in another world is another body: caught, not aliased */
    CHECK(ia.index == ib.index);
    CHECK(!defo_body_is_valid(b, ia) && !defo_body_is_valid(a, ib));
    CHECK(defo_body_positions(b, ia) == NULL && defo_body_mesh(a, ib) == NULL);
    defo_body_id stale = ia2;
    stale.generation = 0;
    CHECK(!defo_body_is_valid(a, stale));
    stale = ia2;
    stale.index = 7;
    CHECK(!defo_body_is_valid(a, stale));
    CHECK(defo_body_num_nodes(a, stale) == 0);
    CHECK(!defo_body_is_valid(a, defo_world_body(a, 2)));
    CHECK(!defo_body_is_valid(a, defo_world_body(a, -1)));
    CHECK(defo_body_set_state(a, stale, NULL, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    /* default names and the default integrator */
    CHECK(!strcmp(defo_body_name(a, ia2), "body1"));
    CHECK(defo_world_num_integrators(a) == 1 && defo_body_integrator(a, ia) == 0);
    CHECK(defo_world_integrator(a, 0)->kind == DEFO_INTEGRATOR_NEWMARK);
out:
    defo_mesh_destroy(m);
    defo_world_destroy(a);
    defo_world_destroy(b);
}

/* ------------------------------------------------------------ the matrix */

/* The bar: L × a × a with L = 1 m, a = 0.25 m, clamped at x = 0; E = 1e8 Pa,
 * ν = 0.3, ρ = 1000 kg/m³, gravity −9.81 m/s² along z.  Tip sag ≈ 2.5 mm
 * (strain ~1e-3: the formulations differ at second order, ~1e-3 relative).
 * The 8 × 2 × 2 cubes (6 tets each) keep the explicit runs short: newmark
 * needs ~ T₁/Δt_CFL ≈ 460 steps per first-mode period on it. */
enum { BAR_NX = 8, BAR_NY = 2 };
static const double BAR_L = 1.0, BAR_A = 0.25, BAR_E = 1e8, BAR_NU = 0.3, BAR_RHO = 1000;

/* Mean z displacement of the nodes of the free end face x = L. */
static double tip_sag(const defo_mesh *m, const double *x) {
    double s = 0;
    int k = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (fabs(m->x[3 * i] - BAR_L) < 1e-9) {
            s += x[3 * i + 2] - m->x[3 * i + 2];
            k++;
        }
    return k ? s / k : NAN;
}

/* First bending frequency of the clamped bar (Euler–Bernoulli, 1.8751²). */
static double bar_omega1(void) {
    const double I = pow(BAR_A, 4) / 12, A = BAR_A * BAR_A;
    return 1.8751 * 1.8751 * sqrt(BAR_E * I / (BAR_RHO * A)) / (BAR_L * BAR_L);
}

typedef struct sag_result {
    double sag;     /* tip sag at the end [m] */
    double settled; /* |change of the tip sag over the last frame| [m] */
    int frames;
    double seconds;
} sag_result;

static sag_result run_sag(defo_formulation form, int order, defo_integrator_kind kind) {
    sag_result r = {NAN, NAN, 0, 0};
    const double size[3] = {BAR_L, BAR_A, BAR_A};
    const int cells[3] = {BAR_NX, BAR_NY, BAR_NY};
    defo_mesh *m = bar_mesh(size, cells, order);
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    if (!m || !w) goto out;
    const int dynamic = kind == DEFO_INTEGRATOR_NEWMARK || kind == DEFO_INTEGRATOR_BACKWARD_EULER ||
                        kind == DEFO_INTEGRATOR_BDF2;
    const double w1 = bar_omega1();
    defo_integrator_def id = defo_default_integrator_def(kind);
    id.tolerance = 1e-9;
    /* dynamic: the first mode critically damped by the Rayleigh mass term */
    if (dynamic) id.rayleigh_mass = 2 * w1;
    if (kind == DEFO_INTEGRATOR_BACKWARD_EULER || kind == DEFO_INTEGRATOR_BDF2)
        id.time_step = 0.2 / w1;
    CHECK_OK(defo_world_add_integrator(w, &id, NULL));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material.model = DEFO_MODEL_NEO_HOOKEAN;
    bd.material.youngs_modulus = BAR_E;
    bd.material.poisson = BAR_NU;
    bd.material.density = BAR_RHO;
    bd.force.formulation = form;
    bd.integrator = 0;
    defo_body_id id0;
    CHECK_OK(defo_world_add_body(w, &bd, &id0));
    const double p0[3] = {0, 0, 0}, nx[3] = {1, 0, 0};
    defo_region clamp = defo_region_plane(p0, nx);
    CHECK_OK(defo_body_prescribe(w, id0, &clamp, NULL, NULL));
    /* dynamic: frames of 1/4 of the first period until 3 periods */
    const double T1 = 2 * M_PI / w1;
    const double frame = dynamic ? T1 / 4 : 1.0;
    const int frames = dynamic ? 12 : 2;
    double prev = 0;
    for (int f = 0; f < frames; f++) {
        defo_status s = defo_world_step(w, frame);
        CHECK_MSG(s == DEFO_OK, "%s %s tet%d frame %d: %s", defo_integrator_name(kind),
                  defo_formulation_name(form), order == 2 ? 10 : 4, f, defo_last_error());
        if (s) goto out;
        defo_step_stats st;
        defo_world_stats(w, &st);
        r.seconds += st.seconds;
        const double sag = tip_sag(defo_body_mesh(w, id0), defo_body_positions(w, id0));
        r.settled = fabs(sag - prev);
        prev = sag;
    }
    r.sag = prev;
    r.frames = frames;
out:
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return r;
}

static void test_matrix_sag(void) {
    /* Timoshenko cantilever under its weight q = ρ g A:
     * δ = q L⁴ / (8 E I) + q L² / (2 κ G A), κ = 5/6 */
    const double A = BAR_A * BAR_A, I = pow(BAR_A, 4) / 12, G = BAR_E / (2 * (1 + BAR_NU));
    const double q = BAR_RHO * 9.81 * A;
    const double timoshenko =
        q * pow(BAR_L, 4) / (8 * BAR_E * I) + q * BAR_L * BAR_L / (2 * (5.0 / 6) * G * A);
    double ref[2][2] = {{0}};
    for (int order = 1; order <= 2; order++)
        for (int fi = 0; fi < 2; fi++) {
            const defo_formulation form =
                fi ? DEFO_FORMULATION_COROTATED : DEFO_FORMULATION_INVERTIBLE;
            sag_result st = run_sag(form, order, DEFO_INTEGRATOR_STATIC);
            const double s0 = -st.sag;
            ref[order - 1][fi] = s0;
            TEST_REPORT("tet%-2d %-10s static        sag %.5e m (%.2f ms)", order == 2 ? 10 : 4,
                        defo_formulation_name(form), s0, 1e3 * st.seconds);
            CHECK(s0 > 0);
            /* static: a second solve of the same loads does not move */
            CHECK(st.settled <= 1e-6 * s0);
            static const defo_integrator_kind others[] = {
                DEFO_INTEGRATOR_QUASISTATIC, DEFO_INTEGRATOR_NEWMARK,
                DEFO_INTEGRATOR_BACKWARD_EULER, DEFO_INTEGRATOR_BDF2};
            for (int k = 0; k < 4; k++) {
                sag_result r = run_sag(form, order, others[k]);
                const double rel = fabs(-r.sag - s0) / s0;
                TEST_REPORT("tet%-2d %-10s %-14s sag %.5e m, off %.2e, last change %.1e "
                            "(%.0f ms)",
                            order == 2 ? 10 : 4, defo_formulation_name(form),
                            defo_integrator_name(others[k]), -r.sag, rel, r.settled / s0,
                            1e3 * r.seconds);
                if (others[k] == DEFO_INTEGRATOR_QUASISTATIC) {
                    CHECK_MSG(rel <= 1e-6, "quasistatic vs static: %.3g", rel);
                } else {
                    CHECK_MSG(rel <= 5e-3, "%s %s tet%d: off by %.3g",
                              defo_integrator_name(others[k]), defo_formulation_name(form),
                              order == 2 ? 10 : 4, rel);
                    /* settled: the last frame moved the tip by < 0.1 % */
                    CHECK(r.settled <= 1e-3 * s0);
                }
            }
        }
    TEST_REPORT("Timoshenko %.5e m; tet10 %.4f / %.4f, tet4 %.4f / %.4f of it "
                "(invertible / corotated)",
                timoshenko, ref[1][0] / timoshenko, ref[1][1] / timoshenko, ref[0][0] / timoshenko,
                ref[0][1] / timoshenko);
    for (int o = 0; o < 2; o++)
        CHECK_MSG(fabs(ref[o][0] - ref[o][1]) <= 5e-3 * ref[o][1],
                  "formulations disagree: %.5e vs %.5e", ref[o][0], ref[o][1]);
    /* quadratic elements bend: within 5 % of the beam (3D clamp and the
     * coarse section account for the rest); linear ones lock */
    CHECK(fabs(ref[1][1] / timoshenko - 1) < 0.05);
    CHECK(ref[0][1] < 0.9 * ref[1][1]);
}

/* --------------------------------------------- orders of accuracy in time */

static double oscillator_error(defo_integrator_kind kind, double dt, double *amplitude) {
    defo_mesh *m = NULL;
    defo_world *w = NULL;
    double err = NAN;
    CHECK_OK(defo_mesh_create(1, &m));
    if (!m) return err;
    const double X[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0.3, 0.2, 1}};
    for (int i = 0; i < 4; i++) CHECK_OK(defo_mesh_add_node(m, X[i][0], X[i][1], X[i][2], NULL));
    const defo_index tet[4] = {0, 1, 2, 3};
    CHECK_OK(defo_mesh_add_elem(m, tet, 0));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    if (!w) goto out;
    defo_integrator_def id = defo_default_integrator_def(kind);
    id.time_step = dt;
    id.tolerance = 1e-12;
    id.linear.tolerance = 1e-14;
    id.linear.precond.kind = DEFO_PRECOND_CHOLESKY;
    CHECK_OK(defo_world_add_integrator(w, &id, NULL));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material.youngs_modulus = 1000;
    bd.material.density = 1000;
    bd.force.formulation = DEFO_FORMULATION_COROTATED;
    bd.force.linear = 1;
    bd.integrator = 0;
    defo_body_id b;
    CHECK_OK(defo_world_add_body(w, &bd, &b));
    const double p0[3] = {0, 0, 0}, nz[3] = {0, 0, 1};
    defo_region base = defo_region_plane(p0, nz);
    CHECK_OK(defo_body_prescribe(w, b, &base, NULL, NULL));
    /* the exact solution: node 3 obeys m ẍ = −K u (u = x − X), K its 3×3
     * stiffness block; K is read column by column from the (linear) forces */
    const double mass = defo_body_masses(w, b)[3];
    defo_element_rest *rest = NULL;
    defo_material *mat = NULL;
    defo_force_model *fm = NULL;
    CHECK_OK(defo_element_rest_create(m, &rest));
    CHECK_OK(defo_material_create(&bd.material, &mat));
    if (!rest || !mat) goto out2;
    CHECK_OK(defo_force_model_create(m, rest, mat, &bd.force, &fm));
    if (!fm) goto out2;
    defo_mat3 K;
    for (int c = 0; c < 3; c++) {
        double x[12], f[12];
        memcpy(x, m->x, sizeof x);
        x[9 + c] += 1.0;
        CHECK_OK(defo_force_model_evaluate(fm, x, 0, f, NULL));
        for (int r = 0; r < 3; r++) K.m[r][c] = -f[9 + r];
    }
    defo_vec3 ev;
    defo_mat3 Q;
    defo_sym3_eigen(&K, &ev, &Q);
    const double lam[3] = {ev.x, ev.y, ev.z};
    const double u0[3] = {0.01, -0.02, 0.015};
    double x0[12];
    memcpy(x0, m->x, sizeof x0);
    for (int c = 0; c < 3; c++) x0[9 + c] += u0[c];
    CHECK_OK(defo_body_set_state(w, b, x0, NULL));
    const double T = 0.5;
    CHECK_OK(defo_world_step(w, T));
    /* u(T) = Q diag(cos ω_i T) Qᵀ u0 */
    double exact[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        double c = 0;
        for (int k = 0; k < 3; k++) c += Q.m[k][i] * u0[k];
        c *= cos(sqrt(lam[i] / mass) * T);
        for (int k = 0; k < 3; k++) exact[k] += Q.m[k][i] * c;
    }
    const double *x = defo_body_positions(w, b);
    err = 0;
    for (int k = 0; k < 3; k++) err = fmax(err, fabs(x[9 + k] - X[3][k] - exact[k]));
    if (amplitude) *amplitude = sqrt(fmax(lam[0], fmax(lam[1], lam[2])) / mass) * T;
out2:
    defo_force_model_destroy(fm);
    defo_material_destroy(mat);
    defo_element_rest_destroy(rest);
out:
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return err;
}

static void test_oscillator_order(void) {
    static const defo_integrator_kind kinds[] = {DEFO_INTEGRATOR_BACKWARD_EULER,
                                                 DEFO_INTEGRATOR_BDF2};
    for (int k = 0; k < 2; k++) {
        double e[4], wT = 0;
        const double dt0 = 0.5 / 64;
        for (int h = 0; h < 4; h++) e[h] = oscillator_error(kinds[k], dt0 / (1 << h), &wT);
        const double r1 = e[0] / e[1], r2 = e[1] / e[2], r3 = e[2] / e[3];
        TEST_REPORT("%-14s error at t = 0.5 s (ω_max t = %.2f rad): %.3e %.3e %.3e %.3e; "
                    "ratios %.2f %.2f %.2f",
                    defo_integrator_name(kinds[k]), wT, e[0], e[1], e[2], e[3], r1, r2, r3);
        /* first order: ratio → 2; second order: ratio → 4 */
        const double want = k == 0 ? 2.0 : 4.0;
        CHECK(fabs(r3 - want) < 0.15 * want);
        CHECK(fabs(r2 - want) < 0.25 * want);
    }
}

/* -------------------------------------------- different bodies, one world */

typedef struct mixed_world {
    defo_world *w;
    defo_mesh *block, *ball;
    defo_body_id flesh, rock;
} mixed_world;

static void mixed_destroy(mixed_world *mw) {
    defo_world_destroy(mw->w);
    defo_mesh_destroy(mw->block);
    defo_mesh_destroy(mw->ball);
}

static int mixed_create(mixed_world *mw) {
    memset(mw, 0, sizeof *mw);
    const double size[3] = {0.4, 0.4, 0.2};
    const int cells[3] = {4, 4, 2};
    mw->block = bar_mesh(size, cells, 1);
    defo_sphere_def sd = defo_default_sphere_def();
    sd.center[0] = 1.0;
    sd.center[2] = 0.5;
    sd.radius = 0.15;
    sd.cell_size = 0.06;
    sd.order = 2;
    CHECK_OK(defo_generate_sphere(&sd, &mw->ball));
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &mw->w));
    if (!mw->block || !mw->ball || !mw->w) return 0;
    int qs = -1, nm = -1;
    defo_integrator_def q = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    q.predictor = DEFO_PREDICTOR_LINEAR;
    CHECK_OK(defo_world_add_integrator(mw->w, &q, &qs));
    defo_integrator_def n = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    CHECK_OK(defo_world_add_integrator(mw->w, &n, &nm));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mw->block;
    bd.name = "flesh";
    bd.integrator = qs;
    bd.material.youngs_modulus = 2e4;
    if (defo_world_add_body(mw->w, &bd, &mw->flesh)) return 0;
    /* the flesh's base held, its top pushed down by a moving bone plate */
    const double lo[3] = {-1, -1, -1}, hi[3] = {1, 1, -0.099};
    defo_region base = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(mw->w, mw->flesh, &base, NULL, NULL));
    const double lo2[3] = {0.1, -1, 0.099}, hi2[3] = {1, 1, 1};
    defo_region plate = defo_region_box(lo2, hi2);
    defo_motion_def down = defo_default_motion_def();
    down.velocity[2] = -0.3;
    CHECK_OK(defo_body_prescribe(mw->w, mw->flesh, &plate, &down, NULL));
    bd = defo_default_body_def();
    bd.mesh = mw->ball;
    bd.name = "rock";
    bd.integrator = nm;
    bd.force.formulation = DEFO_FORMULATION_COROTATED;
    bd.material.youngs_modulus = 5e4;
    bd.angular_velocity[1] = 3;
    bd.velocity[0] = -1;
    if (defo_world_add_body(mw->w, &bd, &mw->rock)) return 0;
    return 1;
}

static void test_mixed_world(void) {
    mixed_world a, b;
    const int ok = mixed_create(&a) && mixed_create(&b);
    CHECK(ok);
    void *ck = NULL;
    size_t ck_size = 0;
    const double frame = 1.0 / 30;
    if (ok) {
        for (int f = 0; f < 2; f++) CHECK_OK(defo_world_step(a.w, frame));
        CHECK_OK(defo_world_serialize(a.w, 42, &ck, &ck_size));
        for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(a.w, frame));
        CHECK_OK(defo_world_deserialize(b.w, 42, ck, ck_size));
        CHECK(defo_world_deserialize(b.w, 43, ck, ck_size) == DEFO_ERR_INVALID_ARGUMENT);
        CHECK(defo_world_frame(b.w) == 2);
        for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(b.w, frame));
        const defo_body_id ids[2][2] = {{a.flesh, a.rock}, {b.flesh, b.rock}};
        for (int k = 0; k < 2; k++) {
            const defo_index n = defo_body_num_nodes(a.w, ids[0][k]);
            const size_t bytes = 3 * (size_t)n * sizeof(double);
            CHECK(n == defo_body_num_nodes(b.w, ids[1][k]));
            CHECK(!memcmp(defo_body_positions(a.w, ids[0][k]), defo_body_positions(b.w, ids[1][k]),
                          bytes));
            CHECK(!memcmp(defo_body_velocities(a.w, ids[0][k]),
                          defo_body_velocities(b.w, ids[1][k]), bytes));
        }
        CHECK(defo_world_time(a.w) == defo_world_time(b.w));
        /* both bodies did something: the flesh is squashed, the ball flew */
        const defo_mesh *fm = defo_body_mesh(a.w, a.flesh);
        const double *xf = defo_body_positions(a.w, a.flesh);
        double squash = 0;
        for (defo_index i = 0; i < fm->num_nodes; i++)
            squash = fmin(squash, xf[3 * i + 2] - fm->x[3 * i + 2]);
        const defo_mesh *rm = defo_body_mesh(a.w, a.rock);
        const double *xr = defo_body_positions(a.w, a.rock);
        double cx = 0;
        for (defo_index i = 0; i < rm->num_nodes; i++) cx += xr[3 * i] - rm->x[3 * i];
        cx /= (double)rm->num_nodes;
        defo_step_stats st;
        defo_world_stats(a.w, &st);
        TEST_REPORT("flesh (quasistatic, invertible tet4) pressed %.3f m; rock (newmark, corotated "
                    "tet10, %ld nodes) moved %.3f m; %d steps in the last frame",
                    -squash, (long)rm->num_nodes, cx, st.steps);
        CHECK(squash < -0.04);
        CHECK(fabs(cx + 5 * frame) < 0.02);
    }
    defo_free(ck);
    mixed_destroy(&a);
    mixed_destroy(&b);
}

/* ------------------------------------------------ fracture with dead loads */

/* A bar 0.4 × 0.1 × 0.1 m clamped at x = 0, pulled by a traction on its end
 * face x = 0.4 and pushed sideways by a dead force on every node (so the
 * nodes a split copies carry one),
 * corotated under backward Euler, breaking (MG04 §4).  Conserved through
 * the splits (checked every frame against the values at creation): the
 * total traction load t·A (the faces loaded stay the original end face:
 * every node carrying x-load rests at x = 0.4, never on a crack face) and
 * the total dead force (a split shares a node's force with its copy).  A
 * checkpoint across splits resumes bit for bit, the shared loads included. */
static defo_world *pulled_bar(int order, defo_body_id *id, defo_mesh **mesh) {
    const double size[3] = {0.4, 0.1, 0.1};
    const int cells[3] = {8, 2, 2};
    *mesh = bar_mesh(size, cells, order);
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    if (!w || !*mesh) return w;
    defo_integrator_def id0 = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    id0.time_step = 0.005;
    id0.rayleigh_mass = 1;
    CHECK_OK(defo_world_add_integrator(w, &id0, NULL));
    defo_fracture_def fd = defo_default_fracture_def();
    fd.threshold = 1.5e4;
    defo_body_def bd = defo_default_body_def();
    bd.mesh = *mesh;
    bd.material.model = DEFO_MODEL_COROTATED;
    bd.material.youngs_modulus = 1e5;
    bd.force.formulation = DEFO_FORMULATION_COROTATED;
    bd.integrator = 0;
    bd.fracture = &fd;
    CHECK_OK(defo_world_add_body(w, &bd, id));
    const double o[3] = {0, 0, 0}, nx[3] = {1, 0, 0}, end[3] = {0.4, 0, 0}, mx[3] = {-1, 0, 0};
    defo_region clamp = defo_region_plane(o, nx), face = defo_region_plane(end, mx);
    CHECK_OK(defo_body_prescribe(w, *id, &clamp, NULL, NULL));
    const double t[3] = {3e4, 0, 0};
    double area = 0;
    CHECK_OK(defo_body_add_traction(w, *id, &face, t, &area));
    CHECK(fabs(area - 0.01) < 1e-12);
    double *f = defo_body_external_force(w, *id);
    for (defo_index i = 0; i < (*mesh)->num_nodes; i++) f[3 * i + 1] += 0.05;
    return w;
}

/* Totals of the loads; *copies counts the nodes made by splits (index ≥
 * n0, the nodes at creation) that carry a share of a sideways force. */
static void load_totals(defo_world *w, defo_body_id id, defo_index n0, double *fx, double *fy,
                        int *off_face, int *copies) {
    const defo_mesh *m = defo_body_mesh(w, id);
    const double *ld = defo_body_loads(w, id), *dead = defo_body_external_force(w, id);
    *fx = *fy = 0;
    *off_face = *copies = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        *fx += ld[3 * i];
        *fy += dead[3 * i + 1];
        if (ld[3 * i] != 0 && fabs(m->x[3 * i] - 0.4) > 1e-12) (*off_face)++;
        if (i >= n0 && dead[3 * i + 1] != 0) (*copies)++;
    }
}

static void test_fracture_loads(void) {
    for (int order = 1; order <= 2; order++) {
        defo_body_id a, b;
        defo_mesh *ma = NULL, *mb = NULL;
        defo_world *wa = pulled_bar(order, &a, &ma), *wb = pulled_bar(order, &b, &mb);
        if (!wa || !wb || !ma || !mb) {
            defo_world_destroy(wa), defo_world_destroy(wb);
            defo_mesh_destroy(ma), defo_mesh_destroy(mb);
            continue;
        }
        double fx0, fy0, fx, fy;
        int off, copies;
        const defo_index n0 = ma->num_nodes;
        load_totals(wa, a, n0, &fx0, &fy0, &off, &copies);
        CHECK(off == 0 && copies == 0);
        int splits = 0, bad_fx = 0, bad_fy = 0, bad_face = 0;
        void *ck = NULL;
        size_t ck_size = 0;
        for (int f = 0; f < 4; f++) {
            CHECK_OK(defo_world_step(wa, 1.0 / 30));
            defo_step_stats st;
            defo_world_stats(wa, &st);
            splits += (int)st.splits;
            load_totals(wa, a, n0, &fx, &fy, &off, &copies);
            bad_fx += fabs(fx - fx0) > 1e-12 * fabs(fx0);
            bad_fy += fabs(fy - fy0) > 1e-12 * fabs(fy0);
            bad_face += off;
            if (f == 1) CHECK_OK(defo_world_serialize(wa, 7, &ck, &ck_size));
        }
        defo_index comps = 0;
        CHECK_OK(defo_body_components(wa, a, &comps));
        TEST_REPORT("tet%d: %d splits, %ld components; traction load %.6g N (t·A = 300), dead "
                    "force %.6g N (%.6g at creation) with %d split copies sharing it, x-load off "
                    "the end face on %d nodes",
                    order == 2 ? 10 : 4, splits, (long)comps, fx, fy, fy0, copies, off);
        CHECK(splits > 0);
        CHECK(copies > 0); /* the conservation below is of shared forces */
        CHECK(fabs(fx0 - 300) < 1e-9);
        CHECK(bad_fx == 0 && bad_fy == 0 && bad_face == 0);
        /* resume from frame 2 across the splits: the same bits */
        CHECK_OK(defo_world_deserialize(wb, 7, ck, ck_size));
        for (int f = 2; f < 4; f++) CHECK_OK(defo_world_step(wb, 1.0 / 30));
        const defo_index n = defo_body_num_nodes(wa, a);
        CHECK(n == defo_body_num_nodes(wb, b));
        if (n == defo_body_num_nodes(wb, b)) {
            const size_t bytes = 3 * (size_t)n * sizeof(double);
            CHECK(!memcmp(defo_body_positions(wa, a), defo_body_positions(wb, b), bytes));
            CHECK(!memcmp(defo_body_velocities(wa, a), defo_body_velocities(wb, b), bytes));
            CHECK(!memcmp(defo_body_external_force(wa, a), defo_body_external_force(wb, b), bytes));
        }
        defo_free(ck);
        defo_world_destroy(wa);
        defo_world_destroy(wb);
        defo_mesh_destroy(ma);
        defo_mesh_destroy(mb);
    }
}

/* ------------------------------------------------------------ free fall */

/* A free tet10 cube under gravity: every dynamic integrator pairs gravity
 * with the lumped masses it steps (m_a g), so every node falls with g and
 * the body does not deform (analytic: v = g t, no strain). */
static void test_free_fall(void) {
    static const defo_integrator_kind kinds[] = {
        DEFO_INTEGRATOR_NEWMARK, DEFO_INTEGRATOR_BACKWARD_EULER, DEFO_INTEGRATOR_BDF2};
    const double size[3] = {1, 1, 1};
    const int cells[3] = {2, 2, 2};
    for (int k = 0; k < 3; k++) {
        defo_mesh *m = bar_mesh(size, cells, 2);
        defo_world *w = NULL;
        defo_world_def wd = defo_default_world_def();
        CHECK_OK(defo_world_create(&wd, &w));
        if (!m || !w) {
            defo_world_destroy(w), defo_mesh_destroy(m);
            continue;
        }
        defo_integrator_def id = defo_default_integrator_def(kinds[k]);
        id.tolerance = 1e-12; /* the implicit steps' Newton solves, to rounding */
        CHECK_OK(defo_world_add_integrator(w, &id, NULL));
        defo_body_def bd = defo_default_body_def();
        bd.mesh = m;
        bd.integrator = 0;
        defo_body_id b;
        CHECK_OK(defo_world_add_body(w, &bd, &b));
        for (int f = 0; f < 15; f++) CHECK_OK(defo_world_step(w, 1.0 / 30));
        const double *v = defo_body_velocities(w, b);
        const double vz = -9.81 * 0.5;
        double dv = 0, ela = 1;
        for (defo_index i = 0; i < m->num_nodes; i++)
            dv = fmax(dv, fmax(fmax(fabs(v[3 * i]), fabs(v[3 * i + 1])), fabs(v[3 * i + 2] - vz)));
        CHECK_OK(defo_body_energy(w, b, NULL, &ela, NULL));
        TEST_REPORT("%-14s tet10 cube after 0.5 s: max |v - g t| %.2e m/s, elastic energy %.2e J",
                    defo_integrator_name(kinds[k]), dv, ela);
        CHECK(dv < 1e-9);
        CHECK(ela < 1e-12);
        defo_world_destroy(w);
        defo_mesh_destroy(m);
    }
}

/* Releasing a prescribed set: its nodes fall from the next step on (free
 * fall from rest: z drops by g t²/2 within the step error), and the release
 * is part of the checkpoint (a restored twin continues bit for bit). */
static void test_release(void) {
    const double size[3] = {1, 1, 1};
    const int cells[3] = {2, 2, 2};
    defo_mesh *m = bar_mesh(size, cells, 1);
    defo_world *a = NULL, *b = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &a));
    CHECK_OK(defo_world_create(&wd, &b));
    if (!m || !a || !b) goto out;
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    defo_body_id ia, ib;
    CHECK_OK(defo_world_add_body(a, &bd, &ia));
    CHECK_OK(defo_world_add_body(b, &bd, &ib));
    const double lo[3] = {-1, -1, -1}, hi[3] = {2, 2, 2};
    defo_region all = defo_region_box(lo, hi);
    int set = -1;
    CHECK_OK(defo_body_prescribe(a, ia, &all, NULL, &set));
    CHECK_OK(defo_body_prescribe(b, ib, &all, NULL, NULL));
    CHECK_OK(defo_world_step(a, 0.1));
    CHECK(!memcmp(defo_body_positions(a, ia), m->x, 3 * (size_t)m->num_nodes * sizeof(double)));
    CHECK(defo_body_release(a, ia, 3) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK_OK(defo_body_release(a, ia, set));
    void *ck = NULL;
    size_t sz = 0;
    CHECK_OK(defo_world_serialize(a, 1, &ck, &sz));
    CHECK_OK(defo_world_step(a, 0.1));
    const double *x = defo_body_positions(a, ia);
    double dz = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) dz += x[3 * i + 2] - m->x[3 * i + 2];
    dz /= (double)m->num_nodes;
    TEST_REPORT("released body: mean drop %.5f m in 0.1 s (g t^2/2 = 0.04905)", -dz);
    CHECK(fabs(-dz - 0.04905) < 1e-3);
    if (ck) {
        CHECK_OK(defo_world_deserialize(b, 1, ck, sz));
        CHECK_OK(defo_world_step(b, 0.1));
        CHECK(!memcmp(defo_body_positions(b, ib), x, 3 * (size_t)m->num_nodes * sizeof(double)));
    }
    defo_free(ck);
out:
    defo_world_destroy(a);
    defo_world_destroy(b);
    defo_mesh_destroy(m);
}

/* Newmark in a stiffened state (ITF04 §9 central differences, undamped,
 * no gravity): a neo-Hookean cube released from a uniform squash to half
 * its size is ~10x stiffer than at rest, so a step at cfl x the rest wave
 * time would be unstable.  The frame is cut into sub-steps at the stiffened
 * stable time (defo_force_model_stable_time): more steps than at rest, and
 * the total energy (elastic + kinetic, a conserved quantity here) stays
 * within a few % of the initial elastic energy over 20 frames of expansion
 * and oscillation (a blow-up multiplies it many times). */
static void test_stiffened_newmark(void) {
    const double size[3] = {0.1, 0.1, 0.1};
    const int cells[3] = {3, 3, 3};
    defo_mesh *m = bar_mesh(size, cells, 1);
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[0] = wd.gravity[1] = wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    double *x = m ? malloc(3 * (size_t)m->num_nodes * sizeof *x) : NULL;
    if (!m || !w || !x) goto out;
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    CHECK_OK(defo_world_add_integrator(w, &id, NULL));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material.model = DEFO_MODEL_NEO_HOOKEAN;
    bd.material.youngs_modulus = 1e5;
    bd.material.poisson = 0.3;
    bd.material.density = 1000;
    bd.material.damping_time = 0;
    bd.integrator = 0;
    defo_body_id b;
    CHECK_OK(defo_world_add_body(w, &bd, &b));
    for (size_t i = 0; i < 3 * (size_t)m->num_nodes; i++) x[i] = 0.5 * m->x[i];
    CHECK_OK(defo_body_set_state(w, b, x, NULL));
    double e0 = NAN, emin = INFINITY, emax = 0;
    CHECK_OK(defo_body_energy(w, b, NULL, &e0, NULL));
    const double frame = 1e-3;
    const int rest_steps = defo_world_steps_per_frame(w, 0, frame);
    int steps_first = 0;
    for (int f = 0; f < 20; f++) {
        if (defo_world_step(w, frame) != DEFO_OK) {
            CHECK_MSG(0, "frame %d: %s", f, defo_last_error());
            goto out;
        }
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (f == 0) steps_first = st.steps;
        double kin = NAN, ela = NAN;
        CHECK_OK(defo_body_energy(w, b, &kin, &ela, NULL));
        emin = fmin(emin, kin + ela);
        emax = fmax(emax, kin + ela);
    }
    TEST_REPORT("squashed to 0.5: first frame %d steps (%d at the rest wave time); total energy "
                "%.4g..%.4g of the initial %.4g J",
                steps_first, rest_steps, emin / e0, emax / e0, e0);
    CHECK(e0 > 0);
    CHECK(steps_first > rest_steps);
    CHECK(emin > 0.98 * e0 && emax < 1.04 * e0); /* measured 0.990..1.023 */
out:
    free(x);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* Implicit steps of an invertible body landing (TSIF05 §10 penalty contact
 * inside the Newton solve of backward Euler and BDF2): a soft cube hitting
 * the ground at 4 m/s with steps of 1/120 s keeps every element
 * non-inverted after every step.  With the contact only applied after each
 * solve (checked by switching the penalty term off) the bottom layer turned
 * over: 96 inverted elements in both. */
static void test_implicit_landing(void) {
    static const defo_integrator_kind kinds[] = {DEFO_INTEGRATOR_BACKWARD_EULER,
                                                 DEFO_INTEGRATOR_BDF2};
    for (int k = 0; k < 2; k++) {
        defo_box_def bx = defo_default_box_def();
        for (int c = 0; c < 3; c++) {
            bx.size[c] = 0.2;
            bx.cells[c] = 4;
            bx.origin[c] = c == 2 ? 0.02 : -0.1;
        }
        defo_mesh *m = NULL;
        defo_world *w = NULL;
        defo_collider *ground = NULL;
        CHECK_OK(defo_generate_box(&bx, &m));
        defo_world_def wd = defo_default_world_def();
        CHECK_OK(defo_world_create(&wd, &w));
        defo_shape_def plane = defo_default_shape_def();
        plane.type = DEFO_SHAPE_PLANE;
        defo_collider_def cd = defo_default_collider_def();
        cd.num_shapes = 1;
        cd.shapes = &plane;
        CHECK_OK(defo_collider_create(&cd, &ground));
        if (!m || !w || !ground) goto next;
        CHECK_OK(defo_world_add_collider(w, ground));
        defo_integrator_def id = defo_default_integrator_def(kinds[k]);
        id.time_step = 1.0 / 120;
        CHECK_OK(defo_world_add_integrator(w, &id, NULL));
        defo_body_def bd = defo_default_body_def();
        bd.mesh = m;
        bd.material.youngs_modulus = 2e4;
        bd.material.poisson = 0.3;
        bd.material.density = 1000;
        bd.velocity[2] = -4.0;
        bd.integrator = 0;
        defo_body_id b;
        CHECK_OK(defo_world_add_body(w, &bd, &b));
        defo_index peak = 0;
        for (int f = 0; f < 10; f++) {
            if (defo_world_step(w, 1.0 / 30) != DEFO_OK) {
                CHECK_MSG(0, "%s frame %d: %s", defo_integrator_name(kinds[k]), f,
                          defo_last_error());
                break;
            }
            defo_step_stats st;
            defo_world_stats(w, &st);
            if (st.inverted_peak > peak) peak = st.inverted_peak;
        }
        TEST_REPORT("%-14s cube at 4 m/s onto the ground: inverted peak %ld",
                    defo_integrator_name(kinds[k]), (long)peak);
        CHECK(peak == 0);
    next:
        defo_world_destroy(w);
        defo_collider_destroy(ground);
        defo_mesh_destroy(m);
    }
}

int main(void) {
    RUN(test_ids);
    RUN(test_free_fall);
    RUN(test_stiffened_newmark);
    RUN(test_implicit_landing);
    RUN(test_release);
    RUN(test_oscillator_order);
    RUN(test_mixed_world);
    RUN(test_fracture_loads);
    RUN(test_matrix_sag);
    return test_summary();
}
