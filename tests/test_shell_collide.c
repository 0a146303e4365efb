/*
 * tests/test_shell_collide.c — undamped cloth dropped onto colliders keeps
 * its energy (ITF04 §8 shells, §9 collision projection).
 *
 * A square of cloth with no damping at all (no material damping, no
 * Rayleigh mass damping) falls onto a sphere, onto a box and onto the
 * ground under newmark and backward Euler.  References, per frame:
 *   - energy: kinetic + elastic + gravitational never rises above its start
 *     by more than 1e-4 J (the collisions only take energy out: friction
 *     and the zeroed normal velocity; the cloth releases about 0.1 J of
 *     potential energy).  A shell energy that jumps when a fold turns a
 *     triangle over against its neighbours (a sign rule against a reference
 *     normal) gave +1100 J and 480 m/s here under newmark, and stopped
 *     backward Euler's Newton at 0.26 s;
 *   - speed on the ground: the cloth lands flat, and no node is faster than
 *     free fall from its drop height, √(2 g d);
 *   - speed on the sphere and the box: the free corners whip past the
 *     free-fall speed as the cloth folds (energy flows from the whole cloth
 *     into its lightest nodes), so the bound is energy's: the centre of
 *     mass moves no faster than its free fall, |v_cm| ≤ √(2 g Δz_cm), and no
 *     node faster than if it alone had taken all the energy released,
 *     ½ m_i v_i² ≤ M g Δz_cm;
 *   - no NaN, and no cloth node inside the collider past the projection's
 *     tolerance.
 */
#include "defo/collision.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/world.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { SPHERE, BOX, GROUND };
static const char *const shape_name[] = {"sphere", "box", "ground"};

#define CELLS 8
#define SIDE  0.8
#define G     9.81
#define E_TOL 1e-4 /* J */

/* Signed distance of x from the collider of `shape` (negative inside). */
static double distance(int shape, const double *x) {
    if (shape == SPHERE)
        return sqrt(x[0] * x[0] + x[1] * x[1] + (x[2] + 0.22) * (x[2] + 0.22)) - 0.2;
    if (shape == BOX) {
        const double q[3] = {fabs(x[0]) - 0.15, fabs(x[1]) - 0.15, fabs(x[2] + 0.17) - 0.15};
        const double m = fmax(q[0], fmax(q[1], q[2]));
        if (m <= 0) return m;
        double s = 0;
        for (int k = 0; k < 3; k++) s += q[k] > 0 ? q[k] * q[k] : 0;
        return sqrt(s);
    }
    return x[2] + 0.05;
}

static void drop(defo_integrator_kind kind, int shape, int frames) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(kind);
    if (kind != DEFO_INTEGRATOR_NEWMARK) idf.time_step = 1.0 / 120;
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_rectangle_def rd = defo_default_rectangle_def();
    rd.cells[0] = rd.cells[1] = CELLS;
    rd.size[0] = rd.size[1] = SIDE;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_rectangle(&rd, &m));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = defo_default_material();
    bd.material.model = DEFO_MODEL_COROTATED;
    bd.material.youngs_modulus = 5e5; /* E t = 250 N/m */
    bd.material.poisson = 0.3;
    bd.material.density = 300; /* 0.15 kg/m² */
    bd.material.thickness = 5e-4;
    bd.material.damping_time = 0;
    bd.name = "cloth";
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    defo_mesh_destroy(m);
    defo_shape_def sh = defo_default_shape_def();
    if (shape == SPHERE) {
        sh.type = DEFO_SHAPE_SPHERE;
        sh.radius = 0.2;
        sh.center[2] = -0.22;
    } else if (shape == BOX) {
        sh.type = DEFO_SHAPE_BOX;
        sh.half_extent[0] = sh.half_extent[1] = sh.half_extent[2] = 0.15;
        sh.center[2] = -0.17;
    } else {
        sh.type = DEFO_SHAPE_PLANE;
        sh.center[2] = -0.05;
    }
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1, cd.shapes = &sh;
    defo_collider *c = NULL;
    CHECK_OK(defo_collider_create(&cd, &c));
    CHECK_OK(defo_world_add_collider(w, c));

    const defo_index n = defo_body_num_nodes(w, id);
    const double *mass = defo_body_masses(w, id);
    double M = 0;
    for (defo_index i = 0; i < n; i++) M += mass[i];
    double k, e, g;
    CHECK_OK(defo_body_energy(w, id, &k, &e, &g));
    const double E0 = k + e + g;
    double rise = -INFINITY, vmax = 0, vcm_ratio = 0, vnode_ratio = 0, deepest = INFINITY;
    int ok = 1, f = 0;
    for (; f < frames && ok; f++) {
        const defo_status s = defo_world_step(w, 1.0 / 120);
        CHECK_MSG(s == DEFO_OK, "%s on the %s, frame %d: %s", defo_integrator_name(kind),
                  shape_name[shape], f, defo_last_error());
        if (s) break;
        CHECK_OK(defo_body_energy(w, id, &k, &e, &g));
        rise = fmax(rise, k + e + g - E0);
        const double *x = defo_body_positions(w, id), *v = defo_body_velocities(w, id);
        double pcm[3] = {0, 0, 0}, zcm = 0, vfast = 0;
        for (defo_index i = 0; i < n; i++) {
            const double *vi = v + 3 * (size_t)i;
            ok &= isfinite(x[3 * i] + x[3 * i + 1] + x[3 * i + 2] + vi[0] + vi[1] + vi[2]);
            for (int d = 0; d < 3; d++) pcm[d] += mass[i] * vi[d];
            zcm += mass[i] * x[3 * i + 2];
            const double sp = sqrt(vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
            vfast = fmax(vfast, sp);
            deepest = fmin(deepest, distance(shape, x + 3 * (size_t)i));
        }
        const double dzcm = -zcm / M; /* the cloth starts at z = 0 */
        const double vff = sqrt(2 * G * fmax(dzcm, 0));
        const double vcm = sqrt(pcm[0] * pcm[0] + pcm[1] * pcm[1] + pcm[2] * pcm[2]) / M;
        vmax = fmax(vmax, vfast);
        if (vff > 0) {
            vcm_ratio = fmax(vcm_ratio, vcm / vff);
            for (defo_index i = 0; i < n; i++) {
                const double *vi = v + 3 * (size_t)i;
                const double bound = sqrt(2 * M * G * dzcm / mass[i]); /* ½ m_i v_i² ≤ M g Δz_cm */
                vnode_ratio =
                    fmax(vnode_ratio, sqrt(vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]) / bound);
            }
        }
    }
    const double v_drop = sqrt(2 * G * 0.05); /* the ground lies 0.05 m below */
    TEST_REPORT("%s on the %s, %d frames: energy above its start at most %.3g J, fastest node "
                "%.3g m/s (free fall from the start to the ground %.3g m/s), |v_cm| / free fall "
                "%.3f, node speed / energy bound %.3f, deepest node %.3g m",
                defo_integrator_name(kind), shape_name[shape], f, rise, vmax, v_drop, vcm_ratio,
                vnode_ratio, deepest);
    CHECK(ok);
    CHECK(rise <= E_TOL);
    CHECK(vcm_ratio <= 1 + 1e-6);
    CHECK(vnode_ratio <= 1 + 1e-6);
    if (shape == GROUND) CHECK(vmax <= v_drop * (1 + 1e-6));
    CHECK(deepest > -1e-6);
    defo_world_destroy(w);
    defo_collider_destroy(c);
}

/* 0.5 s: the cloth lands at 0.065 s, folds over the sphere by 0.2 s (where
 * a flipping sign blew up), its corners swing under it until 0.4 s. */
static void test_newmark_sphere(void) {
    drop(DEFO_INTEGRATOR_NEWMARK, SPHERE, 60);
}
static void test_newmark_box(void) {
    drop(DEFO_INTEGRATOR_NEWMARK, BOX, 60);
}
static void test_newmark_ground(void) {
    drop(DEFO_INTEGRATOR_NEWMARK, GROUND, 30);
}
static void test_backward_euler_sphere(void) {
    drop(DEFO_INTEGRATOR_BACKWARD_EULER, SPHERE, 40);
}
static void test_backward_euler_box(void) {
    drop(DEFO_INTEGRATOR_BACKWARD_EULER, BOX, 36);
}
static void test_backward_euler_ground(void) {
    drop(DEFO_INTEGRATOR_BACKWARD_EULER, GROUND, 20);
}

int main(void) {
    RUN(test_newmark_sphere);
    RUN(test_newmark_box);
    RUN(test_newmark_ground);
    RUN(test_backward_euler_sphere);
    RUN(test_backward_euler_box);
    RUN(test_backward_euler_ground);
    return test_summary();
}
