/*
 * tests/test_penalty.c — penalty contact (TSIF05 §10) and signed-distance
 * grids.
 *
 * References used:
 *   - finite differences of the penalty energy for the force, and of the
 *     force for the Gauss–Newton + PSD-curvature stiffness (concave source);
 *   - equilibrium (a conserved balance): a block pressed onto a plane by a
 *     traction p on its top carries Σ kφ = p·A, so its mean penetration is
 *     p·A/(k·n_contact), the force/(k·area) scale;
 *   - the exact BVH signed distance of the surface for the grid (error O(h));
 *   - the grid's rigid motion: φ(t, x + v t) = φ(0, x).
 * The equilibria are world steps of the quasistatic integrator, contact from
 * the world's colliders (constant extrapolation and the definiteness fix on,
 * no gravity: the quasistatic solver's setup).
 */
#include "defo/contact.h"
#include "defo/element.h"
#include "defo/geometry.h"
#include "defo/mesh.h"
#include "defo/world.h"
#include "test.h"

/* A world without gravity holding mesh m (default material) as the one body
 * of a quasistatic integrator with penalty stiffness k and tolerance tol. */
static defo_world *qs_world(const defo_mesh *m, double k, double tol, defo_body_id *id) {
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.predictor = DEFO_PREDICTOR_CUBIC;
    d.tolerance = tol;
    d.contact_stiffness = k;
    int integ = -1;
    CHECK_OK(defo_world_add_integrator(w, &d, &integ));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.force.constant_extrapolation = 1;
    bd.force.definiteness_fix = 1;
    bd.integrator = integ;
    CHECK_OK(defo_world_add_body(w, &bd, id));
    return w;
}

/* The default penalty stiffness 10 (2μ+λ) h of the default material [N/m]. */
static double default_penalty(const defo_mesh *m) {
    defo_material_def md = defo_default_material();
    double mu, lambda;
    defo_lame(md.youngs_modulus, md.poisson, &mu, &lambda);
    return 10 * (2 * mu + lambda) * defo_mesh_mean_edge(m);
}

static defo_collider *plane_collider(double z) {
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_PLANE;
    sh.center[0] = sh.center[1] = 0;
    sh.center[2] = z;
    sh.normal[0] = sh.normal[1] = 0;
    sh.normal[2] = 1;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    defo_collider *c = NULL;
    defo_collider_create(&cd, &c);
    return c;
}

/* Closed triangle surface of a tet sphere (its boundary faces). */
static defo_mesh *sphere_surface(double radius) {
    defo_sphere_def sd = defo_default_sphere_def();
    sd.radius = radius;
    sd.cell_size = radius / 5;
    defo_mesh *vol = NULL;
    defo_generate_sphere(&sd, &vol);
    defo_boundary b;
    memset(&b, 0, sizeof b);
    defo_mesh_boundary(vol, 0, &b);
    defo_mesh *s = NULL;
    defo_mesh_create(1, &s);
    for (defo_index i = 0; i < vol->num_nodes; i++)
        defo_mesh_add_node(s, vol->x[3 * i], vol->x[3 * i + 1], vol->x[3 * i + 2], NULL);
    for (defo_index f = 0; f < b.num_faces; f++)
        defo_mesh_add_tri(s, b.faces + 3 * (size_t)f, 3, 0);
    defo_boundary_free(&b);
    defo_mesh_destroy(vol);
    return s;
}

/* Force = −∂ψ/∂x (central differences of the penalty energy) for a sphere
 * and a plane collider; the stiffness block is PSD for both, and for the
 * plane (no curvature term) it equals the FD of the force. */
static void test_penalty_derivatives(void) {
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_SPHERE;
    sh.radius = 0.5;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    defo_collider *ball = NULL;
    CHECK_OK(defo_collider_create(&cd, &ball));
    defo_collider *pl = plane_collider(0.0);
    const double k = 1e3;
    defo_contact_source src[2] = {defo_contact_from_collider(ball, k),
                                  defo_contact_from_collider(pl, k)};
    test_rng rng = {5};
    double worst_f = 0, worst_k = 0, min_eig = 1e300;
    for (int trial = 0; trial < 200; trial++) {
        int which = trial % 2;
        double x[3] = {test_range(&rng, -0.3, 0.3), test_range(&rng, -0.3, 0.3),
                       test_range(&rng, -0.3, -0.02)};
        double e0, f[3] = {0, 0, 0}, K[9], w[1];
        defo_index cnt = 0;
        CHECK_OK(
            defo_penalty_eval(&src[which], 1, 0, 1, x, NULL, NULL, 0.0, &e0, f, K, &cnt, NULL, w));
        CHECK(cnt == 1);
        const double h = 1e-6;
        for (int a = 0; a < 3; a++) {
            double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]}, ep, em;
            double fp[3] = {0, 0, 0}, fm[3] = {0, 0, 0};
            xp[a] += h;
            xm[a] -= h;
            defo_penalty_eval(&src[which], 1, 0, 1, xp, NULL, NULL, 0.0, &ep, fp, NULL, NULL, NULL,
                              w);
            defo_penalty_eval(&src[which], 1, 0, 1, xm, NULL, NULL, 0.0, &em, fm, NULL, NULL, NULL,
                              w);
            worst_f = fmax(worst_f, fabs(-(ep - em) / (2 * h) - f[a]) / (k * 0.5));
            if (which == 1) /* plane: no curvature, K exact */
                for (int b = 0; b < 3; b++)
                    worst_k = fmax(worst_k, fabs(-(fp[b] - fm[b]) / (2 * h) - K[3 * b + a]) / k);
        }
        defo_mat3 M;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) M.m[i][j] = K[3 * i + j];
        defo_vec3 lam;
        defo_mat3 Q;
        defo_sym3_eigen(&M, &lam, &Q);
        min_eig = fmin(min_eig, lam.z / k);
    }
    TEST_REPORT("force vs FD of energy: %.2e (rel.), plane stiffness vs FD: %.2e, min eig(K)/k = "
                "%.2e",
                worst_f, worst_k, min_eig);
    CHECK(worst_f < 1e-6);
    CHECK(worst_k < 1e-6);
    CHECK(min_eig > -1e-12);
    defo_collider_destroy(ball);
    defo_collider_destroy(pl);
}

/* A 1×1×0.5 block whose bottom rests on the plane z = 0 is pressed by a
 * traction p on its top.  Equilibrium: Σ_i k φ_i = −p·A over the contact
 * nodes, so the mean penetration is p·A/(k·n); the residual bound is the
 * Newton target tolerance · f_ref, f_ref = max |f_ext| + (2μ+λ)h². */
static void test_block_on_plane(void) {
    defo_box_def bd = defo_default_box_def();
    bd.origin[0] = bd.origin[1] = -0.5;
    bd.origin[2] = 0;
    bd.size[2] = 0.5;
    bd.cells[0] = bd.cells[1] = 4;
    bd.cells[2] = 2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    const double k = default_penalty(m), tol = 1e-9;
    defo_body_id id;
    defo_world *w = qs_world(m, k, tol, &id);
    defo_collider *pl = plane_collider(0.0);
    CHECK_OK(defo_world_add_collider(w, pl));
    const double p = 2e3; /* Pa */
    double lo[3] = {-1, -1, 0.5 - 1e-9}, hi[3] = {1, 1, 1}, tr[3] = {0, 0, -p}, area = 0;
    defo_region top = defo_region_box(lo, hi);
    unsigned char *mark = malloc((size_t)m->num_nodes);
    CHECK_OK(defo_region_mark(m, &top, mark));
    double *f = defo_body_external_force(w, id);
    CHECK_OK(defo_element_traction_load(m, mark, tr, f, &area));
    double fbig = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *fi = f + 3 * (size_t)i;
        fbig = fmax(fbig, sqrt(fi[0] * fi[0] + fi[1] * fi[1] + fi[2] * fi[2]));
    }
    double mu, lambda;
    defo_material_def md = defo_default_material();
    defo_lame(md.youngs_modulus, md.poisson, &mu, &lambda);
    const double h = defo_mesh_mean_edge(m), fref = fbig + (2 * mu + lambda) * h * h;
    CHECK_OK(defo_world_step(w, 1.0));
    defo_step_stats st;
    defo_world_stats(w, &st);
    const double *x = defo_body_positions(w, id);
    double sum = 0, mn = 1e300, mx = -1e300;
    int n = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        double z = x[3 * (size_t)i + 2];
        if (z < 0) {
            sum += -z;
            mn = fmin(mn, -z);
            mx = fmax(mx, -z);
            n++;
        }
    }
    double expect = p * area / (k * n);
    TEST_REPORT("%d Newton iterations, %d contact nodes (%d reported), mean penetration %.4e m vs "
                "p*A/(k*n) = %.4e m (min %.3e, max %.3e), rel. residual %.1e",
                st.newton_iterations, n, (int)st.collisions, sum / n, expect, mn, mx, st.residual);
    CHECK(st.reason == DEFO_REASON_CONVERGED);
    CHECK(n == 25); /* the 5×5 bottom nodes, nothing else */
    CHECK(st.collisions == 25);
    CHECK_NEAR(sum / n, expect, 1e-6 * expect + 2 * st.residual * fref / k);
    CHECK(mx < 3 * expect); /* the force/(k·area) scale */
    free(mark);
    defo_world_destroy(w);
    defo_collider_destroy(pl);
    defo_mesh_destroy(m);
}

/* A block resting on a plane under a dynamic Newton integrator (backward
 * Euler, BDF2): after each step the collision response puts the nodes the
 * penalty held below the plane back on it.  The next solve starts from the
 * last solve's velocity, so a body at rest does not find the penalty's depth
 * again at every step.  Against the same run whose start is reset before
 * every step (defo_body_set_state with the velocity it has, one step a
 * frame: the committed velocity as the start, as before): at rest at most
 * half the reset run's Newton iterations (5 a step there); the block at rest
 * on the plane (no node below it, its 25 bottom nodes in contact); both runs'
 * positions equal within the Newton tolerance; a checkpoint restored into a
 * new world continues bit for bit (the start is part of the history). */
static defo_world *rest_world(const defo_mesh *m, defo_integrator_kind kind, defo_collider *pl,
                              defo_body_id *id) {
    defo_world_def wd = defo_default_world_def();
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def d = defo_default_integrator_def(kind);
    d.time_step = 0.01;
    int integ = -1;
    CHECK_OK(defo_world_add_integrator(w, &d, &integ));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material.youngs_modulus = 1e5;
    bd.material.damping_time = 0.01;
    bd.integrator = integ;
    CHECK_OK(defo_world_add_body(w, &bd, id));
    CHECK_OK(defo_world_add_collider(w, pl));
    return w;
}

/* One step of 0.01 s with the solve's start reset to the committed velocity;
 * its Newton iterations. */
static int reset_step(defo_world *w, defo_body_id id) {
    CHECK_OK(defo_body_set_state(w, id, NULL, defo_body_velocities(w, id)));
    CHECK_OK(defo_world_step(w, 0.01));
    defo_step_stats st;
    defo_world_stats(w, &st);
    return st.newton_iterations;
}

static void test_resting_newton(void) {
    defo_box_def bd = defo_default_box_def();
    bd.origin[0] = bd.origin[1] = -0.1;
    bd.origin[2] = 0;
    bd.size[0] = bd.size[1] = bd.size[2] = 0.2;
    bd.cells[0] = bd.cells[1] = bd.cells[2] = 4;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_collider *pl = plane_collider(0.0);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    const defo_integrator_kind kinds[2] = {DEFO_INTEGRATOR_BACKWARD_EULER, DEFO_INTEGRATOR_BDF2};
    for (int c = 0; c < 2; c++) {
        defo_body_id id, id2, id3;
        defo_world *w = rest_world(m, kinds[c], pl, &id);
        defo_world *reset = rest_world(m, kinds[c], pl, &id2);
        for (int f = 0; f < 10; f++) CHECK_OK(defo_world_step(w, 0.1)); /* 1 s: at rest */
        for (int k = 0; k < 100; k++) reset_step(reset, id2);
        void *s0 = NULL, *s1 = NULL, *s2 = NULL;
        size_t n0 = 0, n1 = 0, n2 = 0;
        CHECK_OK(defo_world_serialize(w, 1, &s0, &n0));
        defo_step_stats st;
        CHECK_OK(defo_world_step(w, 0.1));
        defo_world_stats(w, &st);
        int iters_reset = 0;
        for (int k = 0; k < 10; k++) iters_reset += reset_step(reset, id2);
        CHECK_OK(defo_world_serialize(w, 1, &s1, &n1));
        const double *x = defo_body_positions(w, id), *v = defo_body_velocities(w, id);
        const double *xr = defo_body_positions(reset, id2);
        double zmin = 1e300, vmax = 0, dx = 0;
        for (size_t k = 0; k < n3; k++) {
            if (k % 3 == 2) zmin = fmin(zmin, x[k]);
            vmax = fmax(vmax, fabs(v[k]));
            dx = fmax(dx, fabs(x[k] - xr[k]));
        }
        /* a new world from the checkpoint */
        defo_world *w3 = rest_world(m, kinds[c], pl, &id3);
        CHECK_OK(defo_world_deserialize(w3, 1, s0, n0));
        CHECK_OK(defo_world_step(w3, 0.1));
        CHECK_OK(defo_world_serialize(w3, 1, &s2, &n2));
        const int same = n1 == n2 && memcmp(s1, s2, n1) == 0;
        TEST_REPORT("%s at rest: %.1f Newton iterations a step (start reset every step: %.1f); "
                    "%d nodes in contact, lowest z %.1e m, |v| <= %.1e m/s, %.1e m from the reset "
                    "run; resumed %s",
                    c ? "BDF2" : "backward Euler", (double)st.newton_iterations / st.steps,
                    iters_reset / 10.0, (int)st.collisions, zmin, vmax, dx,
                    same ? "identical" : "DIFFERS");
        CHECK(2 * st.newton_iterations <= iters_reset);
        CHECK(st.reason == DEFO_REASON_CONVERGED && st.not_converged == 0);
        CHECK(st.collisions == 25);
        CHECK(zmin >= -1e-9);
        CHECK(dx < 1e-6); /* both solved to the Newton tolerance from different starts */
        CHECK(same);
        defo_free(s0);
        defo_free(s1);
        defo_free(s2);
        defo_world_destroy(w);
        defo_world_destroy(reset);
        defo_world_destroy(w3);
    }
    defo_collider_destroy(pl);
    defo_mesh_destroy(m);
}

/* Grid vs the exact BVH signed distance of a closed sphere-like surface. */
static void test_sdf_grid_vs_exact(void) {
    defo_mesh *s = sphere_surface(1.0);
    defo_surface_sdf *sdf = NULL;
    CHECK_OK(defo_surface_sdf_create(s, NULL, &sdf));
    defo_sdf_grid_def gd = defo_default_sdf_grid_def();
    gd.cell_size = TEST_HEAVY(10) >= 4 ? 0.05 : 0.1;
    defo_sdf_grid *g = NULL;
    CHECK_OK(defo_sdf_grid_create(sdf, &gd, &g));
    int dims[3];
    double h;
    defo_sdf_grid_dims(g, dims, &h);
    test_rng rng = {11};
    double maxerr = 0, sq = 0, gerr = 0;
    int cnt = TEST_HEAVY(4000);
    for (int i = 0; i < cnt; i++) {
        double p[3] = {test_range(&rng, -1.2, 1.2), test_range(&rng, -1.2, 1.2),
                       test_range(&rng, -1.2, 1.2)};
        defo_sdf_sample smp;
        defo_surface_sdf_query(sdf, p, &smp);
        double grad[3];
        double phi = defo_sdf_grid_phi(g, 0, p, grad, NULL);
        double e = fabs(phi - smp.distance);
        maxerr = fmax(maxerr, e);
        sq += e * e;
        /* gradient consistency with the interpolant (central differences
         * with a step far below the cell size) */
        const double dh = 1e-7;
        for (int a = 0; a < 3; a++) {
            double pp[3] = {p[0], p[1], p[2]}, pm[3] = {p[0], p[1], p[2]};
            pp[a] += dh;
            pm[a] -= dh;
            double fd = (defo_sdf_grid_phi(g, 0, pp, NULL, NULL) -
                         defo_sdf_grid_phi(g, 0, pm, NULL, NULL)) /
                        (2 * dh);
            gerr = fmax(gerr, fabs(fd - grad[a]));
        }
    }
    double rms = sqrt(sq / cnt);
    TEST_REPORT("grid %dx%dx%d, h = %.3f: |phi_grid - phi_exact| max %.3e (%.2f h), rms %.3e; "
                "gradient vs FD max %.1e",
                dims[0], dims[1], dims[2], h, maxerr, maxerr / h, rms, gerr);
    CHECK(maxerr <= 0.5 * h);
    CHECK(rms <= 0.05 * h);
    CHECK(gerr <= 1e-4); /* kinks at cell faces only perturb a few samples */
    /* a moving grid: φ(t, x + v t) = φ(0, x) */
    gd.cell_size = 0.2;
    gd.motion.velocity[0] = 0.3;
    gd.motion.velocity[2] = -0.2;
    defo_sdf_grid *gm = NULL;
    CHECK_OK(defo_sdf_grid_create(sdf, &gd, &gm));
    double worst = 0;
    for (int i = 0; i < 100; i++) {
        double p[3] = {test_range(&rng, -1, 1), test_range(&rng, -1, 1), test_range(&rng, -1, 1)};
        double t = 2.0, q[3] = {p[0] + 0.3 * t, p[1], p[2] - 0.2 * t};
        worst = fmax(worst, fabs(defo_sdf_grid_phi(gm, t, q, NULL, NULL) -
                                 defo_sdf_grid_phi(gm, 0, p, NULL, NULL)));
    }
    CHECK(worst < 1e-12);
    /* bad definitions are refused */
    gd.padding = 0;
    defo_sdf_grid *bad = NULL;
    CHECK(defo_sdf_grid_create(sdf, &gd, &bad) == DEFO_ERR_INVALID_ARGUMENT && !bad);
    defo_sdf_grid_destroy(gm);
    defo_sdf_grid_destroy(g);
    defo_surface_sdf_destroy(sdf);
    defo_mesh_destroy(s);
}

/* A soft block pressed by a rigid ball moving down: every frame converges,
 * the contact carries the load, no negative curvature.  (The world's
 * contact sources are its colliders: the ball is an exact sphere collider;
 * the grid of the same surface is checked against the exact distance
 * above.) */
static void test_ball_press(void) {
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_SPHERE;
    sh.radius = 0.3;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    cd.motion.velocity[2] = -0.2;
    defo_collider *ball = NULL;
    CHECK_OK(defo_collider_create(&cd, &ball));
    defo_box_def bd = defo_default_box_def();
    bd.origin[0] = bd.origin[1] = -0.5;
    bd.origin[2] = -1.3; /* top at z = −0.3: the ball (centre 0) touches it at t = 0 */
    int c = TEST_HEAVY(10) >= 4 ? 6 : 4; /* even: a node at the top centre */
    bd.cells[0] = bd.cells[1] = c;
    bd.cells[2] = c;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_body_id id;
    defo_world *w = qs_world(m, 10 * default_penalty(m), 1e-6, &id);
    double lo[3] = {-1, -1, -2}, hi[3] = {1, 1, -1.3 + 1e-9};
    defo_region bottom = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, id, &bottom, NULL, NULL));
    CHECK_OK(defo_world_add_collider(w, ball));
    int all = 1, neg = 0;
    char line[256];
    int pos = 0;
    defo_step_stats st;
    for (int f = 1; f <= 5; f++) {
        all &= defo_world_step(w, 0.2) == DEFO_OK;
        defo_world_stats(w, &st);
        neg += st.negative_curvature;
        pos += snprintf(line + pos, sizeof line - (size_t)pos, " %d(%d)", st.newton_iterations,
                        (int)st.collisions);
    }
    /* the top-centre node, initially at (0, 0, −0.3), under the ball whose
     * lowest point is at −0.3 − 0.2 at the end */
    const double *x = defo_body_positions(w, id);
    double top = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (fabs(m->x[3 * (size_t)i]) < 1e-9 && fabs(m->x[3 * (size_t)i + 1]) < 1e-9 &&
            fabs(m->x[3 * (size_t)i + 2] + 0.3) < 1e-9)
            top = x[3 * (size_t)i + 2];
    TEST_REPORT("ball pushed 0.2 m into the block: iterations (contacts) per frame:%s; top-centre "
                "z = %.4f (ball bottom at -0.5)",
                line, top);
    CHECK(all);
    CHECK(neg == 0);
    CHECK(st.collisions > 0);
    CHECK(top < -0.45 && top > -0.5 - 1e-9); /* pushed down, above the ball's bottom */
    defo_world_destroy(w);
    defo_collider_destroy(ball);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_penalty_derivatives);
    RUN(test_block_on_plane);
    RUN(test_resting_newton);
    RUN(test_sdf_grid_vs_exact);
    RUN(test_ball_press);
    return test_summary();
}
