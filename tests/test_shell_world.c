/*
 * tests/test_shell_world.c — shells and cloth (ITF04 §8) as bodies of the
 * world, stepped by every integrator.
 *
 * References used, per test:
 *   - hanging cloth: a square of cloth pinned at two corners falls under
 *     gravity with damping under newmark, backward Euler and BDF2: the
 *     total energy (kinetic, elastic, gravitational) never rises from
 *     frame to frame, no triangle is inverted against its reference normal
 *     and no value is NaN at any frame;
 *   - recovery: a triangle in the middle of the cloth collapsed to zero
 *     area (a node moved onto the opposite edge) opens again;
 *   - cantilever strip under a tip load (Euler–Bernoulli, ν = 0):
 *     w = P L³ / (3 E I), I = b t³ / 12, within 3 % on 20 cells and the
 *     error falling from 10 (static solve; -0.23 %, -0.06 %, -0.01 % on 10,
 *     20, 40 cells);
 *   - clamped square plate under a uniform pressure (Kirchhoff):
 *     w = 0.00126532 q a⁴ / D at the centre (Timoshenko & Woinowsky-Krieger,
 *     Table 35), within 5 % on 15 cells and the error falling from 7
 *     (-6.3 %, -1.25 %, -0.29 % on 7, 15, 31 cells);
 *   - cloth dropped on a sphere collider: no node inside the sphere beyond
 *     the projection tolerance at any frame (ITF04 §9 projection, both
 *     sides of a shell are surface);
 *   - cloth dropped on a soft ball: no cloth node inside the ball's deformed
 *     boundary (winding numbers) at any frame;
 *   - a strip folded onto itself (self contact): no two of its triangles
 *     that share no vertex intersect at any frame (Möller's exact test,
 *     tests/test_intersect.h), while the same fold without self contact
 *     cuts through itself;
 *   - 1 and 2 threads bit for bit.
 */
#include "defo/collision.h"
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/world.h"
#include "determinism.h"
#include "test.h"
#include "test_intersect.h"
#include "test_sheets.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static defo_material_def cloth_material(void) {
    defo_material_def d = defo_default_material();
    d.model = DEFO_MODEL_NEO_HOOKEAN;
    d.youngs_modulus = 5e5; /* E t = 250 N/m */
    d.poisson = 0.3;
    d.density = 300; /* 0.15 kg/m² */
    d.thickness = 5e-4;
    d.damping_time = 0.004;
    return d;
}

/* A world with one horizontal cloth body (z = 0) pinned at the two corners
 * of its edge y = 0.25: it swings down and hangs. */
static defo_world *hanging(defo_integrator_kind kind, int cells, defo_body_id *id) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def id_ = defo_default_integrator_def(kind);
    if (kind == DEFO_INTEGRATOR_BACKWARD_EULER || kind == DEFO_INTEGRATOR_BDF2)
        id_.time_step = 1.0 / 120;
    id_.rayleigh_mass = 3.0; /* air: the swing itself deforms nothing */
    CHECK_OK(defo_world_add_integrator(w, &id_, NULL));
    defo_mesh *m = grid(cells, cells, 0.5, 0.5);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = cloth_material();
    bd.name = "cloth";
    CHECK_OK(defo_world_add_body(w, &bd, id));
    defo_mesh_destroy(m);
    const double lo0[3] = {-0.26, 0.24, -1}, hi0[3] = {-0.24, 0.26, 1};
    const double lo1[3] = {0.24, 0.24, -1}, hi1[3] = {0.26, 0.26, 1};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    CHECK_OK(defo_body_prescribe(w, *id, &r0, NULL, NULL));
    CHECK_OK(defo_body_prescribe(w, *id, &r1, NULL, NULL));
    return w;
}

static double total_energy(defo_world *w, defo_body_id id) {
    double k = 0, e = 0, g = 0;
    CHECK_OK(defo_body_energy(w, id, &k, &e, &g));
    return k + e + g;
}

static int finite_state(const defo_world *w, defo_body_id id) {
    const double *x = defo_body_positions(w, id), *v = defo_body_velocities(w, id);
    for (size_t j = 0; j < 3 * (size_t)defo_body_num_nodes(w, id); j++)
        if (!isfinite(x[j]) || !isfinite(v[j])) return 0;
    return 1;
}

static void test_hanging_cloth(void) {
    const defo_integrator_kind kinds[] = {DEFO_INTEGRATOR_NEWMARK, DEFO_INTEGRATOR_BACKWARD_EULER,
                                          DEFO_INTEGRATOR_BDF2};
    const int frames[] = {8, 15, 15};
    for (int k = 0; k < 3; k++) {
        defo_body_id id;
        defo_world *w = hanging(kinds[k], 8, &id);
        double E = total_energy(w, id), rise = 0, e0 = E;
        defo_index inverted = 0;
        int finite = 1;
        for (int f = 0; f < frames[k]; f++) {
            defo_status s = defo_world_step(w, 1.0 / 30);
            CHECK_MSG(s == DEFO_OK, "%s frame %d: %s", defo_integrator_name(kinds[k]), f,
                      defo_last_error());
            if (s) break;
            defo_index c = 0;
            CHECK_OK(defo_body_count_inverted(w, id, &c));
            inverted += c;
            finite &= finite_state(w, id);
            const double En = total_energy(w, id);
            rise = fmax(rise, En - E);
            E = En;
        }
        CHECK(inverted == 0);
        CHECK(finite);
        CHECK(e0 - E > 0.02); /* the cloth fell (0.0375 kg, its centre by ~0.25 m at rest) */
        CHECK_MSG(rise <= 1e-9 * fabs(e0 - E), "%s: energy rose by %.3g (drop %.3g)",
                  defo_integrator_name(kinds[k]), rise, e0 - E);
        const double *x = defo_body_positions(w, id);
        double zmin = INFINITY;
        for (defo_index i = 0; i < defo_body_num_nodes(w, id); i++) zmin = fmin(zmin, x[3 * i + 2]);
        TEST_REPORT("%s: lowest point %.4f m after %d frames, energy drop %.4g J, largest rise "
                    "%.2g J",
                    defo_integrator_name(kinds[k]), zmin, frames[k], e0 - E, rise);
        defo_world_destroy(w);
    }
}

/* A triangle in the middle collapsed to zero area at the start (its third
 * node moved onto the opposite edge) opens again, and nothing is NaN. */
static void test_degenerate_recovers(void) {
    defo_body_id id;
    defo_world *w = hanging(DEFO_INTEGRATOR_NEWMARK, 8, &id);
    const defo_mesh *m = defo_body_mesh(w, id);
    const defo_index n = defo_body_num_nodes(w, id);
    double *x = malloc(3 * (size_t)n * sizeof *x);
    memcpy(x, defo_body_positions(w, id), 3 * (size_t)n * sizeof *x);
    /* the triangle nearest the centre */
    defo_index e = 0;
    double best = INFINITY;
    for (defo_index t = 0; t < m->num_elems; t++) {
        const defo_index *v = m->elems + 3 * (size_t)t;
        double c[2] = {0, 0};
        for (int a = 0; a < 3; a++)
            for (int d = 0; d < 2; d++) c[d] += x[3 * v[a] + d] / 3;
        const double r = hypot(c[0], c[1]);
        if (r < best) best = r, e = t;
    }
    const defo_index *v = m->elems + 3 * (size_t)e;
    for (int d = 0; d < 3; d++) x[3 * v[2] + d] = 0.5 * (x[3 * v[0] + d] + x[3 * v[1] + d]);
    CHECK_OK(defo_body_set_state(w, id, x, NULL));
    double area = 1;
    for (int f = 0; f < 5; f++) CHECK_OK(defo_world_step(w, 1.0 / 30));
    CHECK(finite_state(w, id));
    const double *y = defo_body_positions(w, id);
    double u[3], q[3], c[3];
    for (int d = 0; d < 3; d++) u[d] = y[3 * v[1] + d] - y[3 * v[0] + d];
    for (int d = 0; d < 3; d++) q[d] = y[3 * v[2] + d] - y[3 * v[0] + d];
    c[0] = u[1] * q[2] - u[2] * q[1], c[1] = u[2] * q[0] - u[0] * q[2],
    c[2] = u[0] * q[1] - u[1] * q[0];
    area = 0.5 * sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    const double rest = 0.5 * (0.5 / 8) * (0.5 / 8);
    TEST_REPORT("collapsed triangle %u: area %.3g of its rest %.3g after 5 frames", (unsigned)e,
                area, rest);
    CHECK(area > 0.5 * rest);
    defo_index inv = 1;
    CHECK_OK(defo_body_count_inverted(w, id, &inv));
    CHECK(inv == 0);
    free(x);
    defo_world_destroy(w);
}

/* One static solve of a shell body: the rest mesh m, the nodes within
 * `clamp` of the region fixed. */
static defo_world *static_world(defo_mesh *m, defo_material_def mat, defo_body_id *id) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[0] = wd.gravity[1] = wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_STATIC);
    idf.tolerance = 1e-12; /* small loads (the linear regime): tight */
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = mat;
    bd.name = "shell";
    CHECK_OK(defo_world_add_body(w, &bd, id));
    return w;
}

/* Cantilever strip, ν = 0, clamped by fixing its first two node columns,
 * a load P shared by the tip nodes.  A hinge shell's clamp acts in the
 * middle of the fixed strip (the clamped line's hinge energy is shared by
 * the fixed triangle and the free one): with the free length measured from
 * the clamp line the deflection converges at first order as (1 + h/2L)³
 * (7.6 %, 3.8 %, 1.9 % on 20, 40, 80 cells); measured from the strip's
 * middle, L = (nx + ½) h. */
static double cantilever(int nx, int ny) {
    const double L = 0.1, b = 0.02, t = 1e-3, E = 1e9;
    const double hx = L / (nx + 0.5);
    defo_mesh *m = grid(nx + 1, ny, (nx + 1) * hx, b);
    defo_material_def mat = defo_default_material();
    mat.model = DEFO_MODEL_STVK;
    mat.youngs_modulus = E, mat.poisson = 0, mat.thickness = t, mat.density = 1000;
    defo_body_id id;
    defo_world *w = static_world(m, mat, &id);
    defo_mesh_destroy(m);
    const double x0 = -0.5 * (nx + 1) * hx;
    const double lo[3] = {x0 - 1e-9, -1, -1}, hi[3] = {x0 + hx + 1e-9, 1, 1};
    defo_region r = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, id, &r, NULL, NULL));
    const double I = b * t * t * t / 12, w_beam_per_P = L * L * L / (3 * E * I);
    const double P = 1e-3 * L / w_beam_per_P; /* tip deflection L/1000: linear */
    double *f = defo_body_external_force(w, id);
    const double *x = defo_body_positions(w, id);
    const defo_index n = defo_body_num_nodes(w, id);
    int ntip = 0;
    for (defo_index i = 0; i < n; i++) ntip += x[3 * i] > -x0 - 1e-9;
    for (defo_index i = 0; i < n; i++)
        if (x[3 * i] > -x0 - 1e-9) f[3 * i + 2] = P / ntip;
    CHECK_OK(defo_world_step(w, 1.0));
    x = defo_body_positions(w, id);
    double wt = 0;
    for (defo_index i = 0; i < n; i++)
        if (x[3 * i] > -x0 - 1e-6) wt += x[3 * i + 2] / ntip;
    const double want = P * w_beam_per_P;
    TEST_REPORT("cantilever %dx%d: tip deflection %.6g m, beam theory %.6g m (%.2f %%)", nx, ny, wt,
                want, 100 * (wt / want - 1));
    defo_world_destroy(w);
    return fabs(wt / want - 1);
}

static void test_cantilever(void) {
    const double e10 = cantilever(10, 2), e20 = cantilever(20, 2);
    CHECK(e20 < 0.03);
    CHECK(e20 < e10);
}

/* Clamped square plate of side a under a uniform pressure q, n (odd)
 * cells across a: a grid of n + 1 cells of size h = a / n whose outer two
 * node rings are fixed (the clamp acts in the middle of the fixed strip,
 * as for the cantilever, so the plate is a = n h), q h² on every free
 * node. */
static double plate_error(int cells) {
    const double a = 0.2, t = 2e-3, E = 1e9, nu = 0.3, q = 10;
    const double h = a / cells, side = (cells + 1) * h;
    defo_mesh *m = grid(cells + 1, cells + 1, side, side);
    defo_material_def mat = defo_default_material();
    mat.model = DEFO_MODEL_STVK;
    mat.youngs_modulus = E, mat.poisson = nu, mat.thickness = t, mat.density = 1000;
    defo_body_id id;
    defo_world *w = static_world(m, mat, &id);
    defo_mesh_destroy(m);
    /* the outer two rings: |x| or |y| beyond the second ring */
    const double half = 0.5 * side - h - 1e-9;
    const double *x = defo_body_positions(w, id);
    const defo_index n = defo_body_num_nodes(w, id);
    double *f = defo_body_external_force(w, id);
    const double lo1[3] = {-1, -1, -1}, hi1[3] = {-half, 1, 1};
    const double lo2[3] = {half, -1, -1}, hi2[3] = {1, 1, 1};
    const double lo3[3] = {-1, -1, -1}, hi3[3] = {1, -half, 1};
    const double lo4[3] = {-1, half, -1}, hi4[3] = {1, 1, 1};
    defo_region rs[4] = {defo_region_box(lo1, hi1), defo_region_box(lo2, hi2),
                         defo_region_box(lo3, hi3), defo_region_box(lo4, hi4)};
    for (int k = 0; k < 4; k++) CHECK_OK(defo_body_prescribe(w, id, &rs[k], NULL, NULL));
    for (defo_index i = 0; i < n; i++)
        if (fabs(x[3 * i]) < half && fabs(x[3 * i + 1]) < half) f[3 * i + 2] = q * h * h;
    CHECK_OK(defo_world_step(w, 1.0));
    x = defo_body_positions(w, id);
    double wc = 0;
    for (defo_index i = 0; i < n; i++)
        if (fabs(x[3 * i]) < 1e-9 && fabs(x[3 * i + 1]) < 1e-9) wc = x[3 * i + 2];
    const double D = E * t * t * t / (12 * (1 - nu * nu));
    const double want = 0.00126532 * q * a * a * a * a / D;
    TEST_REPORT("clamped plate %dx%d: centre deflection %.6g m, Kirchhoff %.6g m (%.2f %%)", cells,
                cells, wc, want, 100 * (wc / want - 1));
    defo_world_destroy(w);
    return fabs(wc / want - 1);
}

static void test_clamped_plate(void) {
    const double e7 = plate_error(7), e15 = plate_error(15);
    CHECK(e15 < 0.05);
    CHECK(e15 < e7);
}

/* A cloth dropped on a sphere collider under backward Euler: every node
 * stays outside the sphere (less the projection's tolerance) at every
 * frame, and the cloth rests on it (its centre node on the sphere's top). */
static void test_drape_sphere(void) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    idf.rayleigh_mass = 3.0;
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_mesh *m = grid(10, 10, 0.8, 0.8);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = cloth_material();
    /* corotated: neo-Hookean membranes stiffen without bound when the
     * draping folds compress them, past newmark's step from the rest
     * stiffness */
    bd.material.model = DEFO_MODEL_COROTATED;
    bd.name = "cloth";
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    defo_mesh_destroy(m);
    const double R = 0.2;
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_SPHERE;
    sh.radius = R;
    sh.center[2] = -R - 0.02;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1, cd.shapes = &sh;
    defo_collider *ball = NULL;
    CHECK_OK(defo_collider_create(&cd, &ball));
    CHECK_OK(defo_world_add_collider(w, ball));
    const defo_index n = defo_body_num_nodes(w, id);
    double worst = INFINITY;
    for (int f = 0; f < 10; f++) {
        CHECK_OK(defo_world_step(w, 1.0 / 30));
        const double *x = defo_body_positions(w, id);
        for (defo_index i = 0; i < n; i++) {
            const double d[3] = {x[3 * i], x[3 * i + 1], x[3 * i + 2] - sh.center[2]};
            worst = fmin(worst, sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) - R);
        }
    }
    CHECK(finite_state(w, id));
    const double *x = defo_body_positions(w, id);
    double zmin = INFINITY;
    for (defo_index i = 0; i < n; i++) zmin = fmin(zmin, x[3 * i + 2]);
    TEST_REPORT("draped cloth: deepest node %.3g m from the sphere (negative: inside), lowest "
                "node %.3f m",
                worst, zmin);
    CHECK(worst > -1e-6 * R);
    CHECK(zmin < sh.center[2]); /* the cloth hangs down around the sphere */
    defo_world_destroy(w);
    defo_collider_destroy(ball);
}

/* 1 and 2 threads: the same positions bit for bit. */
static void three_frames(void *ctx, void *out) {
    (void)ctx;
    defo_body_id id;
    defo_world *w = hanging(DEFO_INTEGRATOR_BACKWARD_EULER, 8, &id);
    for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(w, 1.0 / 30));
    memcpy(out, defo_body_positions(w, id), 3 * 81 * sizeof(double));
    defo_world_destroy(w);
}

static void test_threads(void) {
    CHECK(test_bitwise_same_for_threads(three_frames, NULL, 3 * 81 * sizeof(double), 2));
}

/* A checkpoint after 2 frames, resumed for 2 more, equals 4 uninterrupted
 * frames bit for bit (positions and velocities). */
static void test_checkpoint(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/test_shell_world.ckpt", DEFO_TEST_TMP);
    defo_body_id id;
    defo_world *a = hanging(DEFO_INTEGRATOR_BDF2, 6, &id);
    for (int f = 0; f < 2; f++) CHECK_OK(defo_world_step(a, 1.0 / 30));
    CHECK_OK(defo_world_save(a, 7, path));
    for (int f = 0; f < 2; f++) CHECK_OK(defo_world_step(a, 1.0 / 30));
    defo_body_id jd;
    defo_world *b = hanging(DEFO_INTEGRATOR_BDF2, 6, &jd);
    CHECK_OK(defo_world_load(b, 7, path));
    for (int f = 0; f < 2; f++) CHECK_OK(defo_world_step(b, 1.0 / 30));
    const size_t bytes = 3 * (size_t)defo_body_num_nodes(a, id) * sizeof(double);
    CHECK(memcmp(defo_body_positions(a, id), defo_body_positions(b, jd), bytes) == 0);
    CHECK(memcmp(defo_body_velocities(a, id), defo_body_velocities(b, jd), bytes) == 0);
    defo_world_destroy(a);
    defo_world_destroy(b);
    remove(path);
}

/* Cloth dropped on a soft volumetric ball resting on a ground plane
 * (newmark, body contact of ITF04 §9–10 between the shell's two-sided
 * surface and the ball's boundary): at every frame no cloth node is inside
 * the ball's boundary (an exact test: the winding number of the deformed
 * boundary triangles about the node), and the cloth comes to lie over it
 * (its edges drop below the ball's top). */
static void test_cloth_on_soft_ball(void) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    idf.rayleigh_mass = 3.0;
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_sphere_def sd = defo_default_sphere_def();
    sd.radius = 0.15;
    sd.center[2] = 0.15;
    sd.cell_size = 0.05;
    defo_mesh *bm = NULL;
    CHECK_OK(defo_generate_sphere(&sd, &bm));
    defo_body_def bb = defo_default_body_def();
    bb.mesh = bm;
    bb.material.youngs_modulus = 2e4;
    bb.material.density = 1000;
    bb.name = "ball";
    defo_body_id ball;
    CHECK_OK(defo_world_add_body(w, &bb, &ball));
    defo_mesh_destroy(bm);
    defo_rectangle_def rd = defo_default_rectangle_def();
    rd.size[0] = rd.size[1] = 0.6;
    rd.cells[0] = rd.cells[1] = 10;
    rd.center[2] = 0.33;
    defo_mesh *cm = NULL;
    CHECK_OK(defo_generate_rectangle(&rd, &cm));
    defo_body_def bc = defo_default_body_def();
    bc.mesh = cm;
    bc.material = cloth_material();
    bc.material.model = DEFO_MODEL_COROTATED;
    bc.name = "cloth";
    defo_body_id cloth;
    CHECK_OK(defo_world_add_body(w, &bc, &cloth));
    defo_mesh_destroy(cm);
    defo_shape_def pl = defo_default_shape_def();
    pl.type = DEFO_SHAPE_PLANE;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1, cd.shapes = &pl;
    defo_collider *ground = NULL;
    CHECK_OK(defo_collider_create(&cd, &ground));
    CHECK_OK(defo_world_add_collider(w, ground));
    const defo_index nc = defo_body_num_nodes(w, cloth);
    const defo_mesh *mm = defo_body_mesh(w, ball);
    defo_boundary bd;
    CHECK_OK(defo_mesh_boundary(mm, 0, &bd));
    const double skin = defo_world_contact(w)->thickness * defo_mesh_mean_edge(mm);
    long inside = 0;
    for (int f = 0; f < 12; f++) {
        CHECK_OK(defo_world_step(w, 1.0 / 30));
        /* inside the ball: the winding number of its boundary about the node */
        const double *xb = defo_body_positions(w, ball), *xc = defo_body_positions(w, cloth);
        for (defo_index i = 0; i < nc; i++) {
            const double *p = xc + 3 * i;
            double wn = 0;
            for (defo_index t = 0; t < bd.num_faces; t++) {
                const defo_index *v = bd.faces + 3 * (size_t)t;
                double a[3][3], l[3];
                for (int k = 0; k < 3; k++) {
                    for (int d = 0; d < 3; d++) a[k][d] = xb[3 * v[k] + d] - p[d];
                    l[k] = sqrt(a[k][0] * a[k][0] + a[k][1] * a[k][1] + a[k][2] * a[k][2]);
                }
                const double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
                                   a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                                   a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
                const double d01 = a[0][0] * a[1][0] + a[0][1] * a[1][1] + a[0][2] * a[1][2];
                const double d12 = a[1][0] * a[2][0] + a[1][1] * a[2][1] + a[1][2] * a[2][2];
                const double d20 = a[2][0] * a[0][0] + a[2][1] * a[0][1] + a[2][2] * a[0][2];
                wn += 2 * atan2(det, l[0] * l[1] * l[2] + d01 * l[2] + d12 * l[0] + d20 * l[1]);
            }
            /* the solid angle sums to 4π inside, 0 outside */
            if (wn > 2 * 3.14159265358979323846) inside++;
        }
    }
    CHECK(finite_state(w, cloth) && finite_state(w, ball));
    const double *xc = defo_body_positions(w, cloth), *xb = defo_body_positions(w, ball);
    double ztop = -INFINITY, zc = INFINITY;
    for (defo_index i = 0; i < defo_body_num_nodes(w, ball); i++) ztop = fmax(ztop, xb[3 * i + 2]);
    for (defo_index i = 0; i < nc; i++) zc = fmin(zc, xc[3 * i + 2]);
    TEST_REPORT("cloth on a soft ball: lowest cloth node %.3f m, ball top %.3f m, skin %.3g m, "
                "cloth nodes inside the ball over all frames: %ld",
                zc, ztop, skin, inside);
    CHECK(inside == 0);
    CHECK(zc < ztop - 0.05); /* the cloth drapes over the sides */
    defo_boundary_free(&bd);
    defo_world_destroy(w);
    defo_collider_destroy(ground);
}

/* A strip clamped across its middle (|x| ≤ 0.06 m), its 0.24 m halves
 * swung up towards each other about the clamp's edges with no gravity, so
 * that they meet face to face above it (self contact of a shell: both sides
 * are surface).  Returns the most intersecting triangle pairs (sharing no
 * vertex; an exact test independent of the contact code) at any frame;
 * *pairs the most contact pairs, *top the highest node over all frames. */
static long sheet_fold(defo_integrator_kind kind, int self, long *pairs, double *top) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(kind);
    if (kind != DEFO_INTEGRATOR_NEWMARK) idf.time_step = 1.0 / 240;
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_mesh *m = grid(24, 4, 0.6, 0.1);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = cloth_material();
    bd.self_contact = self;
    bd.name = "strip";
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    const double lo[3] = {-0.06, -1, -1}, hi[3] = {0.06, 1, 1};
    defo_region mid = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, id, &mid, NULL, NULL));
    /* v = ω × r about the clamp's edges, ω 10 and 7 rad/s: the halves pass
     * vertical at different times, so without self contact the faster
     * one's end cuts through the other */
    double *v = calloc(3 * (size_t)m->num_nodes, sizeof *v);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *X = m->x + 3 * i;
        if (fabs(X[0]) <= 0.06) continue;
        v[3 * i + 2] = (X[0] < 0 ? 10.0 : 7.0) * (fabs(X[0]) - 0.06);
    }
    CHECK_OK(defo_body_set_state(w, id, NULL, v));
    free(v);
    long worst = 0;
    *pairs = 0;
    *top = -INFINITY;
    for (int f = 0; f < 20; f++) {
        CHECK_MSG(defo_world_step(w, 1.0 / 60) >= 0, "%s", defo_last_error());
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (st.contacts > *pairs) *pairs = st.contacts;
        const double *x = defo_body_positions(w, id);
        const long n = intersecting_pairs(m->elems, m->num_elems, x);
        if (n > worst) worst = n;
        for (defo_index i = 0; i < m->num_nodes; i++) *top = fmax(*top, x[3 * i + 2]);
    }
    CHECK(finite_state(w, id));
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return worst;
}

static void test_sheet_self_fold(void) {
    const defo_integrator_kind kinds[2] = {DEFO_INTEGRATOR_NEWMARK, DEFO_INTEGRATOR_BACKWARD_EULER};
    for (int k = 0; k < 2; k++) {
        long pairs = 0, pairs_off = 0;
        double top = 0, top_off = 0;
        const long worst = sheet_fold(kinds[k], 1, &pairs, &top);
        const long worst_off = k == 0 ? sheet_fold(kinds[k], 0, &pairs_off, &top_off) : -1;
        TEST_REPORT("%s: self contact: %ld intersecting triangle pairs at worst, %ld contact "
                    "pairs at most, ends rose to z = %.2f m; without self contact: %ld",
                    k ? "backward_euler" : "newmark", worst, pairs, top, worst_off);
        CHECK(worst == 0);
        CHECK(pairs > 0);
        CHECK(top > 0.2); /* the 0.24 m halves did swing up to meet */
        if (k == 0) CHECK(worst_off > 0);
    }
}

int main(void) {
    RUN(test_hanging_cloth);
    RUN(test_degenerate_recovers);
    RUN(test_cantilever);
    RUN(test_clamped_plate);
    RUN(test_drape_sphere);
    RUN(test_threads);
    RUN(test_checkpoint);
    RUN(test_cloth_on_soft_ball);
    RUN(test_sheet_self_fold);
    return test_summary();
}
