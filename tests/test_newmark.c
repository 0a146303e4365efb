/*
 * tests/test_newmark.c — the ITF04 §9 Newmark integrator (a NEWMARK
 * integrator of the world, defo/integrator.h) through the world API: bodies,
 * gravity, damping, prescribed nodes, rigid colliders.
 *
 * References used:
 *   - free fall: the centre of mass follows x0 + v0 t + ½ g t² (analytic;
 *     internal forces sum to zero);
 *   - conservation: a free spinning, stretched body (no gravity, damping or
 *     contact) keeps linear and angular momentum (exact for this scheme,
 *     which is velocity Verlet without damping); energy drift is reported;
 *   - determinism: 1 and 2 threads give identical bits after several steps
 *     with damping, gravity and a ground collider;
 *   - torus puddle (ITF04 Fig. 2, reduced): a nearly stiffness-free torus
 *     falls flat (many inverted elements), then with stiffness restored
 *     recovers its rest volume and shape (Procrustes alignment);
 *   - random scatter (ITF04): all nodes at random points recover the rest
 *     shape with damping;
 *   - friction on an incline (Coulomb: stick for μ > tan θ, slide with
 *     a = g (sin θ − μ cos θ));
 *   - breaking away from static friction: one step by hand (Coulomb impulse
 *     μ R_N against the push);
 *   - a blow-up is refused with an error naming the body, and the state
 *     stays at the last good step: the stepper itself driven 1000× past
 *     its stable step (the world never exceeds it), and a world frame whose
 *     overflowing load makes the state non-finite.
 */
#include "defo/collision.h"
#include "defo/element.h"
#include "defo/world.h"
#include "determinism.h"
#include "test.h"

static defo_mesh *box_mesh(double size, int cells) {
    defo_box_def d = defo_default_box_def();
    for (int k = 0; k < 3; k++) {
        d.origin[k] = -0.5 * size;
        d.size[k] = size;
        d.cells[k] = cells;
    }
    defo_mesh *m = NULL;
    defo_generate_box(&d, &m);
    return m;
}

/* A world (gravity g_z) with one default NEWMARK integrator, index 0. */
static defo_world *newmark_world(double gz) {
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = gz;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    int index = -1;
    CHECK_OK(defo_world_add_integrator(w, &id, &index));
    CHECK(index == 0);
    return w;
}

/* The NEWMARK integrator's own step for body id's integrator: a 1 s
 * interval's share (defo_world_steps_per_frame), so a frame this long is one
 * step. */
static double stable_dt(const defo_world *w, defo_body_id id) {
    const int k = defo_world_steps_per_frame(w, defo_body_integrator(w, id), 1.0);
    return k > 0 ? 1.0 / k : NAN;
}

static defo_collider *ground_plane(double friction, const double normal[3]) {
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_PLANE;
    sh.center[0] = sh.center[1] = sh.center[2] = 0;
    for (int k = 0; k < 3; k++) sh.normal[k] = normal[k];
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    cd.friction = friction;
    defo_collider *c = NULL;
    defo_collider_create(&cd, &c);
    return c;
}

static void momenta(const defo_world *w, defo_body_id id, double P[3], double L[3], double *pscale,
                    double *lscale) {
    defo_index n = defo_body_num_nodes(w, id);
    const double *x = defo_body_positions(w, id), *v = defo_body_velocities(w, id);
    const double *m = defo_body_masses(w, id);
    for (int k = 0; k < 3; k++) P[k] = L[k] = 0;
    *pscale = *lscale = 0;
    for (defo_index i = 0; i < n; i++) {
        const double *p = x + 3 * i, *q = v + 3 * i;
        for (int k = 0; k < 3; k++) P[k] += m[i] * q[k];
        L[0] += m[i] * (p[1] * q[2] - p[2] * q[1]);
        L[1] += m[i] * (p[2] * q[0] - p[0] * q[2]);
        L[2] += m[i] * (p[0] * q[1] - p[1] * q[0]);
        double vn = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
        *pscale += m[i] * vn;
        *lscale += m[i] * vn * sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
    }
}

static void center_of_mass(const defo_world *w, defo_body_id id, double c[3]) {
    defo_index n = defo_body_num_nodes(w, id);
    const double *x = defo_body_positions(w, id), *m = defo_body_masses(w, id);
    double mt = 0;
    c[0] = c[1] = c[2] = 0;
    for (defo_index i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) c[k] += m[i] * x[3 * i + k];
        mt += m[i];
    }
    for (int k = 0; k < 3; k++) c[k] /= mt;
}

/* Largest node distance between x and the best rigid placement of the rest
 * positions X (Procrustes: R = polar part of Σ (x − x̄)(X − X̄)ᵀ). */
static double procrustes_error(defo_index n, const double *X, const double *x) {
    double cX[3] = {0, 0, 0}, cx[3] = {0, 0, 0};
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            cX[k] += X[3 * i + k] / n;
            cx[k] += x[3 * i + k] / n;
        }
    defo_mat3 H = defo_m3_zero();
    for (defo_index i = 0; i < n; i++)
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                H.m[a][b] += (x[3 * i + a] - cx[a]) * (X[3 * i + b] - cX[b]);
    defo_mat3 R;
    defo_polar3(&H, &R, NULL);
    double err = 0;
    for (defo_index i = 0; i < n; i++) {
        defo_vec3 d = defo_v3(X[3 * i] - cX[0], X[3 * i + 1] - cX[1], X[3 * i + 2] - cX[2]);
        defo_vec3 y = defo_m3_mulv(R, d);
        defo_vec3 e =
            defo_v3(x[3 * i] - cx[0] - y.x, x[3 * i + 1] - cx[1] - y.y, x[3 * i + 2] - cx[2] - y.z);
        err = fmax(err, defo_v3_norm(e));
    }
    return err;
}

static double body_volume(const defo_world *w, defo_body_id id) {
    double v = 0;
    defo_element_volume(defo_body_mesh(w, id), defo_body_positions(w, id), &v);
    return v;
}

/* --------------------------------------------------------- free fall */
static void test_free_fall(void) {
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(NULL, &w));
    defo_mesh *mesh = box_mesh(0.5, 2);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mesh;
    bd.velocity[0] = 1.0;
    bd.velocity[2] = 2.0;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    /* a world without integrators steps its bodies with a default NEWMARK one */
    CHECK(defo_world_num_integrators(w) == 1 &&
          defo_world_integrator(w, 0)->kind == DEFO_INTEGRATOR_NEWMARK);
    double c0[3], c1[3];
    center_of_mass(w, id, c0);
    for (int f = 0; f < 30; f++) CHECK_OK(defo_world_step(w, 1.0 / 30));
    defo_step_stats st;
    defo_world_stats(w, &st);
    center_of_mass(w, id, c1);
    double t = defo_world_time(w);
    double ex[3] = {c0[0] + 1.0 * t, c0[1], c0[2] + 2.0 * t - 0.5 * 9.81 * t * t};
    double err = 0;
    for (int k = 0; k < 3; k++) err = fmax(err, fabs(c1[k] - ex[k]));
    double el = 0;
    CHECK_OK(defo_body_energy(w, id, NULL, &el, NULL));
    TEST_REPORT("t = %.17g, %d steps/frame: centre of mass error %.2e m, elastic energy %.2e J", t,
                st.steps, err, el);
    CHECK(fabs(t - 1.0) < 1e-14); /* 30 frame sums of 1/30 */
    CHECK(err < 1e-12);
    CHECK(el < 1e-20); /* rigid translation: no deformation at all */
    defo_world_destroy(w);
    defo_mesh_destroy(mesh);
}

/* ------------------------------------------------------ conservation */
static void conservation_case(defo_formulation formulation) {
    defo_world *w = newmark_world(0);
    defo_mesh *mesh = box_mesh(1.0, 4);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mesh;
    bd.force.formulation = formulation;
    bd.material.model = DEFO_MODEL_NEO_HOOKEAN;
    bd.material.youngs_modulus = 1e5;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    /* stretched along x by 20 %, spinning about an oblique axis, drifting */
    defo_index n = defo_body_num_nodes(w, id);
    double *x = malloc(3 * (size_t)n * sizeof *x), *v = malloc(3 * (size_t)n * sizeof *v);
    const double *X = defo_body_positions(w, id);
    defo_vec3 om = defo_v3(1.0, 2.0, 3.0);
    for (defo_index i = 0; i < n; i++) {
        x[3 * i] = 1.2 * X[3 * i];
        x[3 * i + 1] = X[3 * i + 1];
        x[3 * i + 2] = X[3 * i + 2];
        defo_vec3 r = defo_v3_cross(om, defo_v3_load(x + 3 * i));
        v[3 * i] = r.x + 0.5;
        v[3 * i + 1] = r.y - 0.2;
        v[3 * i + 2] = r.z;
    }
    CHECK_OK(defo_body_set_state(w, id, x, v));
    double P0[3], L0[3], ps, ls, ke, el;
    momenta(w, id, P0, L0, &ps, &ls);
    CHECK_OK(defo_body_energy(w, id, &ke, &el, NULL));
    /* frames of one stable step each */
    double E0 = ke + el, dt = stable_dt(w, id), emax = 0;
    int steps = TEST_HEAVY(1000), single = 1;
    for (int s = 0; s < steps; s++) {
        CHECK_OK(defo_world_step(w, dt));
        defo_step_stats st;
        defo_world_stats(w, &st);
        single &= st.steps == 1 && st.dt == dt;
        if (s % 50 == 49) {
            CHECK_OK(defo_body_energy(w, id, &ke, &el, NULL));
            emax = fmax(emax, fabs(ke + el - E0) / E0);
        }
    }
    double P[3], L[3], ps1, ls1;
    momenta(w, id, P, L, &ps1, &ls1);
    double dP = 0, dL = 0;
    for (int k = 0; k < 3; k++) {
        dP = fmax(dP, fabs(P[k] - P0[k]));
        dL = fmax(dL, fabs(L[k] - L0[k]));
    }
    TEST_REPORT("%s: %d steps of %.3g s: |dP|/sum m|v| = %.2e, |dL|/sum m|x||v| = %.2e, max "
                "energy drift %.2e (E0 = %.4g J)",
                defo_formulation_name(formulation), steps, dt, dP / ps, dL / ls, emax, E0);
    CHECK(single);
    CHECK(dP <= 1e-9 * ps);
    CHECK(dL <= 1e-9 * ls);
    /* symplectic scheme: bounded energy error, a loose sanity bound */
    CHECK(emax < 0.05);
    free(x);
    free(v);
    defo_world_destroy(w);
    defo_mesh_destroy(mesh);
}

/* The invertible model (ITF04) and — new with the one engine — the MG04
 * corotated one: its forces −R K (Rᵀx − X) with R the polar rotation are
 * rotation invariant too, so the same momenta are conserved. */
static void test_conservation(void) {
    conservation_case(DEFO_FORMULATION_INVERTIBLE);
    conservation_case(DEFO_FORMULATION_COROTATED);
}

/* A step that starts at rest and ends squashed: a neo-Hookean cube whose
 * nodes all move toward its centre, fast enough to shrink it by a quarter
 * in one world step.  At the start the full step is stable (the rest wave
 * time); at its end the tangent bound has doubled, so the step is too long
 * there and is taken again as shorter sub-steps (newmark.c's rejection) —
 * the frame reports more than one step, where taking the start state's word
 * would report one.  A sanity bound on the result: the same motion in 16
 * frames of a sixteenth lands within 5 % of the squash of the same place
 * (measured 2.5 %: two steps near their limit against sixteen), and the
 * energy stays within 2 % of its start (measured 1e-4; symplectic). */
static void test_stiffening_step(void) {
    defo_mesh *mesh = box_mesh(1.0, 3);
    double xs[2][3 * 64], E[2] = {0, 0}, E0 = 0;
    int steps0 = 0;
    for (int run = 0; run < 2; run++) {
        defo_world *w = newmark_world(0.0);
        defo_body_def bd = defo_default_body_def();
        bd.mesh = mesh;
        bd.material.model = DEFO_MODEL_NEO_HOOKEAN;
        bd.material.youngs_modulus = 1e7; /* the wave time, not time_step, sets the step */
        defo_body_id id;
        CHECK_OK(defo_world_add_body(w, &bd, &id));
        const defo_index n = defo_body_num_nodes(w, id);
        CHECK(n == 64);
        const double dt = stable_dt(w, id), rate = 0.25 / dt;
        double v[3 * 64];
        const double *X = defo_body_positions(w, id);
        for (int j = 0; j < 3 * 64; j++) v[j] = -rate * X[j];
        CHECK_OK(defo_body_set_state(w, id, NULL, v));
        double ke, el;
        CHECK_OK(defo_body_energy(w, id, &ke, &el, NULL));
        E0 = ke + el;
        const int frames = run ? 16 : 1;
        for (int f = 0; f < frames; f++) {
            CHECK_OK(defo_world_step(w, dt / frames));
            defo_step_stats st;
            defo_world_stats(w, &st);
            if (!run) steps0 = st.steps;
        }
        memcpy(xs[run], defo_body_positions(w, id), sizeof xs[run]);
        CHECK_OK(defo_body_energy(w, id, &ke, &el, NULL));
        E[run] = ke + el;
        defo_world_destroy(w);
    }
    double d = 0, squash = 0;
    for (int j = 0; j < 3 * 64; j++) {
        d = fmax(d, fabs(xs[0][j] - xs[1][j]));
        squash = fmax(squash, fabs(mesh->x[j] - xs[1][j]));
    }
    TEST_REPORT("squashed in one step: %d sub-steps; %.2e of the squash from 16 frames; energy "
                "%.4f and %.4f of the start",
                steps0, d / squash, E[0] / E0, E[1] / E0);
    CHECK(steps0 >= 2);
    CHECK(d <= 0.05 * squash);
    CHECK(fabs(E[0] / E0 - 1) <= 0.02 && fabs(E[1] / E0 - 1) <= 0.02);
    defo_mesh_destroy(mesh);
}

/* ------------------------------------------------------- determinism */
typedef struct det_ctx {
    defo_mesh *mesh;
    defo_collider *ground;
    defo_formulation formulation;
    int failures;
} det_ctx;

static void det_compute(void *vctx, void *out) {
    det_ctx *c = vctx;
    defo_world *w = newmark_world(-9.81);
    c->failures += defo_world_add_collider(w, c->ground) != DEFO_OK;
    defo_body_def bd = defo_default_body_def();
    bd.mesh = c->mesh;
    bd.force.formulation = c->formulation;
    bd.material.damping_time = 0.01;
    bd.velocity[2] = -2.0;
    defo_body_id id;
    c->failures += defo_world_add_body(w, &bd, &id) != DEFO_OK;
    for (int s = 0; s < 4; s++) c->failures += defo_world_step(w, 0.02) < 0;
    size_t m = 3 * (size_t)defo_body_num_nodes(w, id);
    memcpy(out, defo_body_positions(w, id), m * sizeof(double));
    memcpy((double *)out + m, defo_body_velocities(w, id), m * sizeof(double));
    defo_world_destroy(w);
}

/* Both formulations (newmark of corotated bodies is new with the one
 * engine: the same scheme on the MG04 forces and D = τK'). */
static void test_determinism(void) {
    defo_torus_def td = defo_default_torus_def();
    td.center[2] = 0.41; /* just above the ground: it hits within the frames */
    /* well above DEFO_PARALLEL_MIN elements, so both threads get work */
    td.cell_size = td.minor_radius / 2.0;
    det_ctx c = {NULL, NULL, DEFO_FORMULATION_INVERTIBLE, 0};
    CHECK_OK(defo_generate_torus(&td, &c.mesh));
    double up[3] = {0, 0, 1};
    c.ground = ground_plane(0.5, up);
    CHECK(c.ground != NULL);
    size_t m = 3 * (size_t)c.mesh->num_nodes;
    TEST_REPORT("torus %ld nodes, %ld tets, 4 frames with damping and contact",
                (long)c.mesh->num_nodes, (long)c.mesh->num_elems);
    for (int f = 0; f < 2; f++) {
        c.formulation = (defo_formulation)f;
        CHECK_MSG(test_bitwise_same_for_threads(det_compute, &c, 2 * m * sizeof(double), 2), "%s",
                  defo_formulation_name(c.formulation));
        CHECK(c.failures == 0);
    }
    defo_collider_destroy(c.ground);
    defo_mesh_destroy(c.mesh);
}

/* ------------------------------------------------------- torus puddle */
static void test_torus_puddle(void) {
    defo_torus_def td = defo_default_torus_def();
    td.major_radius = 0.5;
    td.minor_radius = 0.2;
    td.cell_size = 0.2 / 1.5;
    td.center[2] = 0.3; /* falls 0.1 m onto the ground */
    defo_mesh *mesh = NULL;
    CHECK_OK(defo_generate_torus(&td, &mesh));
    double up[3] = {0, 0, 1};
    defo_collider *ground = ground_plane(0.3, up);
    defo_world *w = newmark_world(-9.81);
    CHECK_OK(defo_world_add_collider(w, ground));
    /* ITF04 §6: the torus puddle uses the rotated linear model (with the
     * invertible formulation, ITF04's) */
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mesh;
    bd.force.formulation = DEFO_FORMULATION_INVERTIBLE;
    bd.material.model = DEFO_MODEL_COROTATED;
    bd.material.youngs_modulus = 10.0; /* ρ g h ≈ 4 kPa ≫ E: it collapses */
    bd.material.damping_time = 0.02;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    double vol0 = body_volume(w, id);
    defo_index peak = 0;
    int frames_soft = 60; /* cheap: soft material, steps of time_step */
    for (int f = 0; f < frames_soft; f++) {
        CHECK_OK(defo_world_step(w, 1.0 / 30));
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (st.inverted_peak > peak) peak = st.inverted_peak;
    }
    double lo[3], hi[3];
    defo_mesh *cur = NULL;
    CHECK_OK(defo_mesh_clone(mesh, &cur));
    memcpy(cur->x, defo_body_positions(w, id), 3 * (size_t)mesh->num_nodes * sizeof(double));
    CHECK_OK(defo_mesh_bbox(cur, lo, hi));
    double height = hi[2] - lo[2];
    TEST_REPORT("%ld tets; soft phase %.2f s: peak inverted %ld (%.0f %%), height %.3f m (rest "
                "0.4 m), lowest z %.2e",
                (long)mesh->num_elems, frames_soft / 30.0, (long)peak,
                100.0 * peak / mesh->num_elems, height, lo[2]);
    CHECK(height < 0.1);
    CHECK(peak > mesh->num_elems / 10);
    CHECK(lo[2] > -1e-9);
    /* restore stiffness */
    defo_material_def stiff = bd.material;
    stiff.youngs_modulus = 1e5;
    stiff.damping_time = 0.01;
    CHECK_OK(defo_body_set_material(w, id, &stiff));
    int frames_stiff = TEST_HEAVY(30), substeps = 0, cg = 0;
    for (int f = 0; f < frames_stiff; f++) {
        CHECK_OK(defo_world_step(w, 1.0 / 30));
        defo_step_stats st;
        defo_world_stats(w, &st);
        substeps += st.steps;
        cg += st.cg_iterations;
        if (getenv("DEFO_TEST_VERBOSE")) {
            defo_index iv;
            defo_body_count_inverted(w, id, &iv);
            printf("frame %d: steps %d cg %d inverted %ld vol %.4f\n", f, st.steps,
                   st.cg_iterations, (long)iv, body_volume(w, id) / vol0);
        }
    }
    defo_index inv = -1;
    CHECK_OK(defo_body_count_inverted(w, id, &inv));
    double vol = body_volume(w, id);
    double shape = procrustes_error(mesh->num_nodes, mesh->x, defo_body_positions(w, id));
    double size = 2 * (td.major_radius + td.minor_radius);
    TEST_REPORT("recovery %.2f s (%d steps, %d CG iterations): inverted %ld, volume %.4f of "
                "rest, shape error "
                "%.3f %% of size",
                frames_stiff / 30.0, substeps, cg, (long)inv, vol / vol0, 100 * shape / size);
#ifndef DEFO_SANITIZED
    CHECK(inv == 0);
    CHECK(fabs(vol / vol0 - 1) < 0.02);
    CHECK(shape < 0.02 * size);
#endif
    defo_mesh_destroy(cur);
    defo_world_destroy(w);
    defo_collider_destroy(ground);
    defo_mesh_destroy(mesh);
}

/* --------------------------------------------------- random scatter */
static void test_random_scatter(void) {
    defo_world *w = newmark_world(0);
    defo_mesh *mesh = box_mesh(1.0, 3);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mesh;
    bd.material.model = DEFO_MODEL_COROTATED;
    /* ITF04 §6.2: this damping model does not conserve angular momentum for
     * large non-uniform Ḟ̂, so the body ends up spinning slowly; a softer
     * material (1e4 Pa) then keeps a centrifugal stretch of ~1.5 %. */
    bd.material.youngs_modulus = 1e5;
    bd.material.damping_time = 0.02;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    defo_index n = mesh->num_nodes;
    double *x = malloc(3 * (size_t)n * sizeof *x);
    test_rng r = {2024};
    for (size_t j = 0; j < 3 * (size_t)n; j++) x[j] = test_range(&r, -5, 5); /* 10× the mesh */
    CHECK_OK(defo_body_set_state(w, id, x, NULL));
    defo_index inv0;
    CHECK_OK(defo_body_count_inverted(w, id, &inv0));
    double t_rec = -1, shape = INFINITY;
    int steps = 0;
    int max_frames = TEST_HEAVY(300);
    for (int f = 0; f < max_frames; f++) {
        CHECK_OK(defo_world_step(w, 1.0 / 30));
        defo_step_stats st;
        defo_world_stats(w, &st);
        steps += st.steps;
        defo_index inv;
        CHECK_OK(defo_body_count_inverted(w, id, &inv));
        shape = procrustes_error(n, mesh->x, defo_body_positions(w, id));
        if (getenv("DEFO_TEST_VERBOSE") && f % 10 == 0)
            printf("frame %d inverted %ld shape %.3e\n", f, (long)inv, shape);
        if (inv == 0 && shape < 0.02) {
            t_rec = defo_world_time(w);
            break;
        }
    }
    double P[3], L[3], ps, ls, ke, el;
    momenta(w, id, P, L, &ps, &ls);
    CHECK_OK(defo_body_energy(w, id, &ke, &el, NULL));
    TEST_REPORT("%ld tets, %ld inverted at start: recovered (no inversion, shape error < 2 %%) "
                "at t = %.3f s after %d steps; shape error %.2e; kinetic %.2e J, elastic "
                "%.2e J, |L| %.2e",
                (long)mesh->num_elems, (long)inv0, t_rec, steps, shape, ke, el,
                sqrt(L[0] * L[0] + L[1] * L[1] + L[2] * L[2]));
#ifndef DEFO_SANITIZED
    CHECK(t_rec > 0);
#endif
    free(x);
    defo_world_destroy(w);
    defo_mesh_destroy(mesh);
}

/* ----------------------------------------------------------- incline */
/* Block on a plane tilted by theta about y; returns the downhill
 * acceleration fitted from the centre of mass between t = 0.2 and 0.6 s. */
static double incline_accel(double theta, double mu, double damping_time, double slip[3]) {
    double n[3] = {sin(theta), 0, cos(theta)};
    defo_collider *plane = ground_plane(mu, n);
    defo_world *w = newmark_world(-9.81);
    CHECK_OK(defo_world_add_collider(w, plane));
    defo_mesh *mesh = box_mesh(0.2, 2);
    /* rest the block's bottom face on the plane: lift by half its size,
     * then rotate z onto n */
    defo_mat3 R = defo_m3_rotation(defo_v3(0, 1, 0), theta);
    for (defo_index i = 0; i < mesh->num_nodes; i++) {
        double *p = mesh->x + 3 * i;
        defo_vec3 q = defo_m3_mulv(R, defo_v3(p[0], p[1], p[2] + 0.1 + 1e-6));
        defo_v3_store(p, q);
    }
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mesh;
    bd.material.youngs_modulus = 1e5;
    /* undamped: the implicit damping of line 1 couples the contact nodes to
     * the block and lowers their penetration, hence their friction (≈ 15 %
     * less at damping_time 0.005) */
    bd.material.damping_time = damping_time;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    double d[3] = {cos(theta), 0, -sin(theta)}, c[3], s1 = 0, s2 = 0;
    /* slip (when asked): displacement along the slope of the bottom-face
     * nodes (mean) from 0 to 1 s and from 0.25 to 1 s, and of the centre
     * of mass from 0 to 1 s */
    defo_index nn = defo_body_num_nodes(w, id);
    const double *xb = defo_body_positions(w, id);
    double bottom0 = 0, c0 = 0, zmin = INFINITY;
    int nbot = 0;
    for (defo_index i = 0; i < nn; i++) zmin = fmin(zmin, xb[3 * i] * n[0] + xb[3 * i + 2] * n[2]);
    for (defo_index i = 0; i < nn; i++)
        if (xb[3 * i] * n[0] + xb[3 * i + 2] * n[2] < zmin + 1e-9) {
            bottom0 += xb[3 * i] * d[0] + xb[3 * i + 2] * d[2];
            nbot++;
        }
    center_of_mass(w, id, c);
    c0 = c[0] * d[0] + c[2] * d[2];
    for (int f = 1; f <= (slip ? 60 : 36); f++) {
        CHECK_OK(defo_world_step(w, 1.0 / 60));
        if (getenv("DEFO_TEST_VERBOSE")) {
            defo_step_stats st;
            defo_world_stats(w, &st);
            center_of_mass(w, id, c);
            double bt = 0;
            for (defo_index i = 0; i < nn; i++)
                if (mesh->x[3 * i] * n[0] + mesh->x[3 * i + 2] * n[2] < zmin + 1e-9)
                    bt += xb[3 * i] * d[0] + xb[3 * i + 2] * d[2];
            printf("f %d bottom %.3e\n", f, (bt - bottom0) / nbot);
            printf("f %d steps %d collisions %ld s %.5f cz %.5f\n", f, st.steps,
                   (long)st.collisions, c[0] * d[0] + c[2] * d[2], c[0] * n[0] + c[2] * n[2]);
        }
        if (slip && f == 15) {
            slip[1] = 0;
            for (defo_index i = 0; i < nn; i++)
                if (mesh->x[3 * i] * n[0] + mesh->x[3 * i + 2] * n[2] < zmin + 1e-9)
                    slip[1] += xb[3 * i] * d[0] + xb[3 * i + 2] * d[2];
        }
        if (f == 12 || f == 36) {
            center_of_mass(w, id, c);
            double s = c[0] * d[0] + c[1] * d[1] + c[2] * d[2];
            if (f == 12)
                s1 = s;
            else
                s2 = s;
        }
    }
    if (slip) {
        double bottom = 0;
        for (defo_index i = 0; i < nn; i++)
            if (mesh->x[3 * i] * n[0] + mesh->x[3 * i + 2] * n[2] < zmin + 1e-9)
                bottom += xb[3 * i] * d[0] + xb[3 * i + 2] * d[2];
        center_of_mass(w, id, c);
        slip[0] = (bottom - bottom0) / nbot;
        slip[1] = (bottom - slip[1]) / nbot;
        slip[2] = c[0] * d[0] + c[2] * d[2] - c0;
    }
    /* s(t) = s0 + ½ a t² from rest: a = 2 (s2 − s1) / (t2² − t1²) */
    double a = 2 * (s2 - s1) / (0.6 * 0.6 - 0.2 * 0.2);
    defo_world_destroy(w);
    defo_collider_destroy(plane);
    defo_mesh_destroy(mesh);
    return a;
}

static void test_friction_incline(void) {
    double theta = 30.0 * 3.14159265358979323846 / 180.0, g = 9.81;
    double mus[3] = {0.1, 0.3, 0.8};
    for (int k = 0; k < 3; k++) {
        double a = incline_accel(theta, mus[k], 0, NULL);
        double ex = fmax(0, g * (sin(theta) - mus[k] * cos(theta)));
        TEST_REPORT("theta 30 deg, mu %.2f (tan theta %.3f): a = %.4f m/s^2, Coulomb %.4f", mus[k],
                    tan(theta), a, ex);
        if (ex > 0) {
            CHECK(fabs(a - ex) < 0.05 * ex);
        } else {
            /* Sticking.  Undamped, the block's elastic bounce (it starts
             * unstressed) unloads its contact nodes periodically and they
             * slip a little: the fitted rate stays below 2 % of sliding. */
            CHECK(fabs(a) < 0.02 * g * sin(theta));
            /* With the bounce damped the bottom face must stay put.
             * Frictionless sliding covers ½ g sin θ (1 s)² in 1 s; the
             * contact nodes move less than 1e-3 of that in 1 s (the
             * settling transient: Poisson bulge and shear of the block
             * loading its downhill edge), and less than 1e-4 of it from
             * 0.25 s on.  The centre of mass also sways with the elastic
             * shear of the block (ρ g sin θ L² / 2G ≈ 1–2 mm). */
            double slip[3] = {0, 0, 0}, free1 = 0.5 * g * sin(theta);
            double a_d = incline_accel(theta, mus[k], 0.005, slip);
            TEST_REPORT("mu %.2f, damping_time 0.005: a = %.2e m/s^2; after 1 s bottom-face slip "
                        "%.3e m (%.3e m from 0.25 s), centre of mass %.3e m; frictionless "
                        "%.3f m, ratios %.2e, %.2e",
                        mus[k], a_d, slip[0], slip[1], slip[2], free1, fabs(slip[0]) / free1,
                        fabs(slip[1]) / free1);
            CHECK(fabs(slip[0]) < 1e-3 * free1);
            CHECK(fabs(slip[1]) < 1e-4 * free1);
            CHECK(fabs(slip[2]) < 3e-3 * free1);
        }
    }
}

/* Breaking away from static friction, by hand.  A cube at rest on the
 * ground (μ = 0.3, no gravity, no damping) whose bottom nodes are pushed by
 * dead loads f = m a (1, 0, −1): in the first step they penetrate, the
 * response finds them at rest relative to the ground (sticking: FIXED, the
 * tangential move undone), so the elastic forces stay zero and the
 * constraint impulse of line 4 is R = −Δt m a (1, 0, −1) — outside the
 * friction cone (|R_T| = R_N > μ R_N).  Coulomb: the node slides with the
 * tangential impulse μ R_N against the push, v_x = Δt a (1 − μ), v_z = 0;
 * the other nodes do not move. */
static void test_kinetic_friction_breakaway(void) {
    const double mu = 0.3, a = 10.0, dt = 1e-4, up[3] = {0, 0, 1};
    defo_collider *ground = ground_plane(mu, up);
    defo_world *w = newmark_world(0);
    CHECK_OK(defo_world_add_collider(w, ground));
    defo_mesh *mesh = box_mesh(0.2, 2);
    for (defo_index i = 0; i < mesh->num_nodes; i++) mesh->x[3 * i + 2] += 0.1; /* z in [0, 0.2] */
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mesh;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    CHECK(stable_dt(w, id) > dt);
    const double *m = defo_body_masses(w, id);
    double *f = defo_body_external_force(w, id);
    int bottom = 0;
    for (defo_index i = 0; i < mesh->num_nodes; i++)
        if (mesh->x[3 * i + 2] == 0) {
            f[3 * i] = m[i] * a;
            f[3 * i + 2] = -m[i] * a;
            bottom++;
        }
    CHECK_OK(defo_world_step(w, dt));
    defo_step_stats st;
    defo_world_stats(w, &st);
    const double *v = defo_body_velocities(w, id);
    const double want = dt * a * (1 - mu);
    double err = 0, other = 0, vx = 0;
    for (defo_index i = 0; i < mesh->num_nodes; i++) {
        const double *q = v + 3 * i;
        if (mesh->x[3 * i + 2] == 0) {
            vx = q[0];
            err = fmax(err, fabs(q[0] - want) + fabs(q[1]) + fabs(q[2]));
        } else {
            other = fmax(other, fabs(q[0]) + fabs(q[1]) + fabs(q[2]));
        }
    }
    TEST_REPORT("%d bottom nodes, %ld in contact: v_x = %.6g m/s (Coulomb %.6g, frictionless "
                "%.6g), error %.2e; other nodes %.2e",
                bottom, (long)st.collisions, vx, want, dt * a, err, other);
    CHECK(bottom == 9 && st.collisions == bottom);
    CHECK(err <= 1e-12 * want);
    CHECK(other == 0);
    defo_world_destroy(w);
    defo_collider_destroy(ground);
    defo_mesh_destroy(mesh);
}

/* ----------------------------------------------------- blow-up refused */
/* The stepper itself (defo_integrator_ops of NEWMARK) on a stiff jelly cube
 * with one corner pulled out, asked for steps 1000× its stable step: it cuts
 * each into stable sub-steps (the amplitude stays bounded).  A state that
 * overflows (a node at 1e300 m/s) is refused, naming the body, and leaves x
 * and v as they were (the integrator contract). */
static void test_refuse_non_finite(void) {
    defo_mesh *mesh = box_mesh(0.1, 1);
    defo_material_def md = defo_default_material();
    md.model = DEFO_MODEL_COROTATED;
    md.youngs_modulus = 1e9;
    defo_element_rest *rest = NULL;
    defo_material *mat = NULL;
    defo_force_model *fm = NULL;
    defo_force_model_def fd = defo_default_force_model_def();
    CHECK_OK(defo_element_rest_create(mesh, &rest));
    CHECK_OK(defo_material_create(&md, &mat));
    CHECK_OK(defo_force_model_create(mesh, rest, mat, &fd, &fm));
    if (!fm) return;
    const defo_integrator_ops *ops = defo_integrator_ops_of(DEFO_INTEGRATOR_NEWMARK);
    CHECK(ops && ops->dynamic);
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    defo_index n = mesh->num_nodes;
    size_t m = 3 * (size_t)n;
    double *x = malloc(m * sizeof *x), *v = calloc(m, sizeof *v), *load = calloc(m, sizeof *load);
    double *mass = malloc((size_t)n * sizeof *mass), *x0 = malloc(m * sizeof *x0),
           *v0 = malloc(m * sizeof *v0);
    CHECK_OK(defo_element_lumped_mass(mesh, md.density, NULL, mass));
    memcpy(x, mesh->x, m * sizeof *x);
    x[0] += 0.05;
    defo_step_body b;
    memset(&b, 0, sizeof b);
    b.name = "jelly";
    b.mesh = mesh;
    b.n = n;
    b.x = x;
    b.v = v;
    b.mass = mass;
    b.load = load;
    b.force = fm;
    b.reference_force = defo_material_stiffness_scale(mat) * 0.1 * 0.1;
    defo_stepper *stepper = NULL;
    CHECK_OK(ops->create(&id, &stepper));
    CHECK_OK(ops->attach(stepper, &b));
    defo_step_body *set[1] = {&b};
    defo_step_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.dt = 1000 * id.cfl * defo_force_model_wave_time(fm);
    /* a step 1000x the stable one is cut into stable sub-steps: the body
     * keeps vibrating with bounded amplitude */
    defo_status s = DEFO_OK;
    double amp = 0;
    for (int k = 0; k < 20 && s == DEFO_OK; k++) {
        ctx.t = k * ctx.dt;
        s = ops->step(stepper, set, 1, &ctx);
    }
    for (size_t j = 0; j < m; j++) amp = fmax(amp, fabs(x[j] - mesh->x[j]));
    TEST_REPORT("20 steps of 1000x the stable step (%d sub-steps each): status %d, largest "
                "displacement %.3g m (initial 0.05)",
                1 + b.stats.extra_steps / 20, (int)s, amp);
    CHECK(s == DEFO_OK);
    CHECK(isfinite(amp) && amp < 0.2);
    /* a state that overflows is refused, naming the body, x and v untouched */
    v[0] = 1e300;
    memcpy(x0, x, m * sizeof *x);
    memcpy(v0, v, m * sizeof *v);
    s = ops->step(stepper, set, 1, &ctx);
    TEST_REPORT("a node at 1e300 m/s: %s", defo_last_error());
    CHECK(s == DEFO_ERR_NUMERICAL);
    CHECK(strstr(defo_last_error(), "jelly") != NULL);
    CHECK(memcmp(x0, x, m * sizeof *x) == 0);
    CHECK(memcmp(v0, v, m * sizeof *v) == 0);
    ops->detach(stepper, &b);
    ops->destroy(stepper);
    free(x), free(v), free(load), free(mass), free(x0), free(v0);
    defo_force_model_destroy(fm);
    defo_material_destroy(mat);
    defo_element_rest_destroy(rest);
    defo_mesh_destroy(mesh);
}

/* The world refuses a frame whose state would not be finite — here a dead
 * load of 1e305 N on one node overflows the positions within a few steps —
 * naming the body, and stays at the frame's start (time, x, v). */
static void test_world_refuses_frame(void) {
    defo_world *w = newmark_world(-9.81);
    defo_mesh *mesh = box_mesh(0.1, 1);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mesh;
    bd.name = "jelly";
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    CHECK_OK(defo_world_step(w, 1.0 / 60));
    defo_index n = defo_body_num_nodes(w, id);
    size_t m = 3 * (size_t)n;
    double *x = malloc(m * sizeof *x), *v = malloc(m * sizeof *v);
    memcpy(x, defo_body_positions(w, id), m * sizeof *x);
    memcpy(v, defo_body_velocities(w, id), m * sizeof *v);
    const double t_before = defo_world_time(w);
    defo_body_external_force(w, id)[3 * 5 + 1] = 1e305;
    defo_status s = defo_world_step(w, 1.0 / 60);
    TEST_REPORT("refused: %s", defo_last_error());
    CHECK(s == DEFO_ERR_NUMERICAL);
    CHECK(strstr(defo_last_error(), "jelly") != NULL);
    CHECK(defo_world_time(w) == t_before && defo_world_frame(w) == 1);
    CHECK(memcmp(x, defo_body_positions(w, id), m * sizeof *x) == 0);
    CHECK(memcmp(v, defo_body_velocities(w, id), m * sizeof *v) == 0);
    /* with the load removed the world steps on from there */
    defo_body_external_force(w, id)[3 * 5 + 1] = 0;
    CHECK_OK(defo_world_step(w, 1.0 / 60));
    free(x);
    free(v);
    defo_world_destroy(w);
    defo_mesh_destroy(mesh);
}

/* ----------------------------------------------------- fixed nodes */
static void test_fixed_nodes(void) {
    /* A bar held at x = min (defo_body_prescribe without a motion) hangs
     * under gravity with damping; the held nodes never move and the tip
     * sags (static: reference is that the bar comes to rest, kinetic
     * energy → 0). */
    defo_box_def d = defo_default_box_def();
    d.size[0] = 1.0;
    d.size[1] = d.size[2] = 0.2;
    d.cells[0] = 5;
    d.cells[1] = d.cells[2] = 1;
    defo_mesh *mesh = NULL;
    CHECK_OK(defo_generate_box(&d, &mesh));
    defo_world *w = newmark_world(-9.81);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mesh;
    bd.material.youngs_modulus = 1e6;
    bd.material.damping_time = 0.02;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    int nfixed = 0;
    for (defo_index i = 0; i < mesh->num_nodes; i++) nfixed += mesh->x[3 * i] < 1e-9;
    const double lo[3] = {-1, -1, -1}, hi[3] = {0, 1, 1};
    defo_region end = defo_region_box(lo, hi);
    int set = -1;
    CHECK_OK(defo_body_prescribe(w, id, &end, NULL, &set));
    CHECK(set == 0);
    /* a region with no node of the body is refused */
    const double lo2[3] = {2, 2, 2}, hi2[3] = {3, 3, 3};
    defo_region none = defo_region_box(lo2, hi2);
    CHECK(defo_body_prescribe(w, id, &none, NULL, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "selects no node") != NULL);
    for (int f = 0; f < TEST_HEAVY(60); f++) CHECK_OK(defo_world_step(w, 1.0 / 30));
    const double *x = defo_body_positions(w, id);
    double moved = 0, tip = 0, ke;
    for (defo_index i = 0; i < mesh->num_nodes; i++) {
        if (mesh->x[3 * i] < 1e-9)
            for (int k = 0; k < 3; k++)
                moved = fmax(moved, fabs(x[3 * i + k] - mesh->x[3 * i + k]));
        tip = fmin(tip, x[3 * i + 2] - mesh->x[3 * i + 2]);
    }
    defo_step_stats st;
    defo_world_stats(w, &st);
    CHECK_OK(defo_body_energy(w, id, &ke, NULL, NULL));
    TEST_REPORT("%d fixed nodes moved %.1e m; tip sag %.4f m; kinetic %.2e J; CG %d iterations "
                "per frame (max %d per solve)",
                nfixed, moved, -tip, ke, st.cg_iterations, st.cg_max_iterations);
    CHECK(nfixed == 4);
    CHECK(moved == 0);
    CHECK(tip < -1e-4);
    defo_world_destroy(w);
    defo_mesh_destroy(mesh);
}

/* With an argument, run only the tests whose name contains it. */
#define RUN_IF(fn)                                                                                 \
    do {                                                                                           \
        if (argc < 2 || strstr(#fn, argv[1])) RUN(fn);                                             \
    } while (0)

int main(int argc, char **argv) {
    RUN_IF(test_free_fall);
    RUN_IF(test_conservation);
    RUN_IF(test_stiffening_step);
    RUN_IF(test_determinism);
    RUN_IF(test_fixed_nodes);
    RUN_IF(test_refuse_non_finite);
    RUN_IF(test_world_refuses_frame);
    RUN_IF(test_friction_incline);
    RUN_IF(test_kinetic_friction_breakaway);
    RUN_IF(test_random_scatter);
    RUN_IF(test_torus_puddle);
    return test_summary();
}
