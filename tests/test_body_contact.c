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
#include "test_intersect.h"

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

static head_on run_head_on(defo_integrator_kind kind, int frames, double c) {
    head_on r = {0, 0, 0, 0, 0, 0, 0};
    const double R = 0.5;
    defo_mesh *a = NULL, *b = NULL;
    mirrored_balls(R, 0.2, c, &a, &b);
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
        head_on r = run_head_on(kinds[q], 20, 0.56);
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

/* The same balls from afar (centres ±0.9 m: their boxes, grown by the
 * reach, apart for the first frames, while the contact layer looks into
 * neither), Newmark: they meet, bounce and never overlap, as from near. */
static void test_head_on_from_afar(void) {
    head_on r = run_head_on(DEFO_INTEGRATOR_NEWMARK, 32, 0.9);
    TEST_REPORT("from ±0.9 m: momentum %.1e, energy peak %.6f, deepest %.1e r, %ld pairs at most, "
                "ball a ends at %.3f m/s",
                r.momentum, r.energy, r.depth, (long)r.pairs, r.vx);
    CHECK(r.momentum <= 1e-9);
    CHECK(r.energy <= 1.0 + 1e-9);
    CHECK(r.asymmetry <= 1e-3);
    CHECK(r.depth == 0.0);
    CHECK(r.pairs > 0);
    CHECK(r.vx < -0.5); /* bounced back */
}

/* ------------------------------------------------------------ stack */
static defo_mesh *block(double x, double y, double z, double a, int cells) {
    defo_box_def d = defo_default_box_def();
    d.origin[0] = x - a / 2, d.origin[1] = y - a / 2, d.origin[2] = z;
    d.size[0] = d.size[1] = d.size[2] = a;
    d.cells[0] = d.cells[1] = d.cells[2] = cells;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&d, &m));
    return m;
}

static defo_collider *ground(void) {
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_PLANE;
    defo_collider_def cd = defo_default_collider_def();
    cd.shapes = &sh;
    cd.num_shapes = 1;
    defo_collider *c = NULL;
    CHECK_OK(defo_collider_create(&cd, &c));
    return c;
}

/* Three blocks stacked with gaps, dropped on the ground (Newmark with
 * material damping): after 1.5 s none is inside another, the stack has not
 * drifted sideways, and no node moves faster than 10 g Δt. */
static void test_stack_at_rest(void) {
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(NULL, &w));
    defo_collider *g = ground();
    CHECK_OK(defo_world_add_collider(w, g));
    defo_mesh *m[3];
    defo_body_id id[3];
    const double a = 0.3;
    for (int k = 0; k < 3; k++) {
        m[k] = block(0, 0, 0.02 + k * (a + 0.03), a, 3);
        defo_body_def bd = defo_default_body_def();
        bd.mesh = m[k];
        bd.material.youngs_modulus = 5e5;
        bd.material.damping_time = 0.02;
        CHECK_OK(defo_world_add_body(w, &bd, &id[k]));
    }
    double c0[3][3], p[3], mabs = 0;
    for (int k = 0; k < 3; k++) centre(w, id[k], c0[k], p, &mabs);
    const int frames = 45;
    double dt = 0;
    for (int f = 0; f < frames; f++) {
        CHECK_MSG(defo_world_step(w, 1.0 / 30) >= 0, "%s", defo_last_error());
        defo_step_stats st;
        defo_world_stats(w, &st);
        dt = st.dt;
    }
    double deepest = 0, fastest = 0, drift = 0;
    for (int k = 0; k < 3; k++) {
        for (int j = 0; j < 3; j++)
            if (j != k)
                deepest = fmax(deepest, depth_inside(m[k], defo_body_positions(w, id[k]), m[j],
                                                     defo_body_positions(w, id[j])));
        const double *v = defo_body_velocities(w, id[k]);
        for (defo_index i = 0; i < defo_body_num_nodes(w, id[k]); i++)
            fastest = fmax(fastest, sqrt(v[3 * i] * v[3 * i] + v[3 * i + 1] * v[3 * i + 1] +
                                         v[3 * i + 2] * v[3 * i + 2]));
        double c[3];
        centre(w, id[k], c, p, &mabs);
        drift = fmax(drift, hypot(c[0] - c0[k][0], c[1] - c0[k][1]));
    }
    const double bound = 10 * 9.81 * dt;
    TEST_REPORT("after %.1f s: deepest node %.2e m inside another block, fastest node %.2e m/s "
                "(bound 10 g dt = %.2e), sideways drift %.2e m",
                frames / 30.0, deepest, fastest, bound, drift);
    CHECK(deepest == 0.0);
    CHECK(fastest < bound);
    CHECK(drift < 0.01 * a);
    /* defo_body_contact_nodes: the middle block touches the one below with
     * its bottom face and the one above with its top face, nowhere else
     * (a node flagged lies within 5 % of the block's height of its lowest
     * or highest node); bad arguments are refused */
    const defo_index n1 = defo_body_num_nodes(w, id[1]);
    const double *x1 = defo_body_positions(w, id[1]);
    double *flag = calloc((size_t)n1, sizeof *flag), zlo = INFINITY, zhi = -INFINITY;
    CHECK_OK(defo_body_contact_nodes(w, id[1], flag));
    for (defo_index i = 0; i < n1; i++)
        zlo = fmin(zlo, x1[3 * i + 2]), zhi = fmax(zhi, x1[3 * i + 2]);
    int below = 0, above = 0, elsewhere = 0;
    for (defo_index i = 0; i < n1; i++) {
        if (flag[i] == 0.0) continue;
        const double z = x1[3 * i + 2];
        below += z<zlo + 0.05 * a, above += z> zhi - 0.05 * a;
        elsewhere += z >= zlo + 0.05 * a && z <= zhi - 0.05 * a;
    }
    TEST_REPORT("middle block's touching nodes: %d on its bottom, %d on its top, %d elsewhere",
                below, above, elsewhere);
    CHECK(below > 0 && above > 0 && elsewhere == 0);
    CHECK(defo_body_contact_nodes(w, id[1], NULL) == DEFO_ERR_INVALID_ARGUMENT);
    const defo_body_id stale = {id[1].index + 7, id[1].world, 0};
    CHECK(defo_body_contact_nodes(w, stale, flag) == DEFO_ERR_INVALID_ARGUMENT);
    free(flag);
    for (int k = 0; k < 3; k++) defo_mesh_destroy(m[k]);
    defo_world_destroy(w);
    defo_collider_destroy(g);
}

/* ------------------------------------------------------------ self fold */
/* A soft bar clamped at its middle, its halves swung up towards each other
 * (self contact): no two boundary triangles intersect at any frame, and the
 * ends did meet (pairs found). */
static void test_self_fold(void) {
    defo_box_def d = defo_default_box_def();
    d.origin[0] = -1.0, d.origin[1] = -0.1, d.origin[2] = -0.1;
    d.size[0] = 2.0, d.size[1] = d.size[2] = 0.2;
    d.cells[0] = 20, d.cells[1] = d.cells[2] = 2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&d, &m));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material.youngs_modulus = 3e4;
    bd.material.damping_time = 0.01;
    bd.self_contact = 1;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    const double lo[3] = {-0.11, -1, -1}, hi[3] = {0.11, 1, 1};
    defo_region mid = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, id, &mid, NULL, NULL));
    /* both halves swing up about the clamp: v = ω × r, opposite ω */
    double *v = malloc(3 * (size_t)m->num_nodes * sizeof *v);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *X = m->x + 3 * i;
        const double om = X[0] > 0 ? -5.0 : 5.0; /* about y */
        v[3 * i] = om * X[2];
        v[3 * i + 1] = 0;
        v[3 * i + 2] = -om * X[0];
    }
    CHECK_OK(defo_body_set_state(w, id, NULL, v));
    free(v);
    defo_boundary bb;
    CHECK_OK(defo_mesh_boundary(m, 0, &bb));
    long worst = 0;
    defo_index most = 0;
    const int frames = 30;
    for (int f = 0; f < frames; f++) {
        CHECK_MSG(defo_world_step(w, 1.0 / 60) >= 0, "%s", defo_last_error());
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (st.contacts > most) most = st.contacts;
        const long n = intersecting_pairs(bb.faces, bb.num_faces, defo_body_positions(w, id));
        if (n > worst) worst = n;
    }
    const double *x = defo_body_positions(w, id);
    double top = -INFINITY;
    for (defo_index i = 0; i < m->num_nodes; i++) top = fmax(top, x[3 * i + 2]);
    TEST_REPORT("%d frames: %ld intersecting triangle pairs at worst, %ld self-contact pairs at "
                "most, the ends rose to z = %.2f m",
                frames, worst, (long)most, top);
    CHECK(worst == 0);
    CHECK(most > 0);
    CHECK(top > 0.5);
    defo_boundary_free(&bb);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------ determinism */
typedef struct det_ctx {
    defo_integrator_kind kind;
} det_ctx;

static void head_on_state(void *vctx, void *out) {
    det_ctx *c = vctx;
    defo_mesh *a = NULL, *b = NULL;
    mirrored_balls(0.5, 0.25, 0.52, &a, &b);
    defo_body_id id[2];
    defo_world *w = head_on_world(c->kind, a, b, id);
    for (int f = 0; f < 5; f++) CHECK(defo_world_step(w, 1.0 / 60) >= 0);
    const size_t na = 3 * (size_t)a->num_nodes * sizeof(double);
    memcpy(out, defo_body_positions(w, id[0]), na);
    memcpy((char *)out + na, defo_body_positions(w, id[1]), na);
    defo_world_destroy(w);
    defo_mesh_destroy(a);
    defo_mesh_destroy(b);
}

static void test_determinism_and_resume(void) {
    defo_mesh *a = NULL, *b = NULL;
    mirrored_balls(0.5, 0.25, 0.52, &a, &b);
    const size_t bytes = 6 * (size_t)a->num_nodes * sizeof(double);
    const defo_integrator_kind kinds[3] = {DEFO_INTEGRATOR_NEWMARK, DEFO_INTEGRATOR_BACKWARD_EULER,
                                           DEFO_INTEGRATOR_BDF2};
    for (int q = 0; q < 3; q++) {
        det_ctx c = {kinds[q]};
        CHECK(test_bitwise_same_for_threads(head_on_state, &c, bytes, 2));
        /* resumed from the frame in contact equals the uninterrupted run */
        defo_body_id ia[2], ib[2];
        defo_world *wa = head_on_world(kinds[q], a, b, ia), *wb = head_on_world(kinds[q], a, b, ib);
        void *ck = NULL;
        size_t ck_size = 0;
        for (int f = 0; f < 6; f++) {
            CHECK(defo_world_step(wa, 1.0 / 60) >= 0);
            if (f == 2) CHECK_OK(defo_world_serialize(wa, 7, &ck, &ck_size));
        }
        defo_step_stats st;
        defo_world_stats(wa, &st);
        CHECK_OK(defo_world_deserialize(wb, 7, ck, ck_size));
        for (int f = 3; f < 6; f++) CHECK(defo_world_step(wb, 1.0 / 60) >= 0);
        for (int k = 0; k < 2; k++) {
            CHECK(!memcmp(defo_body_positions(wa, ia[k]), defo_body_positions(wb, ib[k]),
                          3 * (size_t)a->num_nodes * sizeof(double)));
            CHECK(!memcmp(defo_body_velocities(wa, ia[k]), defo_body_velocities(wb, ib[k]),
                          3 * (size_t)a->num_nodes * sizeof(double)));
        }
        TEST_REPORT("%s: 1 and 2 threads bitwise equal; resumed in contact (%ld pairs) bit for "
                    "bit",
                    defo_integrator_name(kinds[q]), (long)st.contacts);
        defo_free(ck);
        defo_world_destroy(wa);
        defo_world_destroy(wb);
    }
    defo_mesh_destroy(a);
    defo_mesh_destroy(b);
}

/* ------------------------------------------------------------ settings */
static void test_contact_settings(void) {
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(NULL, &w));
    defo_contact_def cd = defo_default_contact_def();
    cd.thickness = 2;
    CHECK(defo_world_set_contact(w, &cd) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "contact.thickness") != NULL);
    cd = defo_default_contact_def();
    cd.separation_speed = 0;
    CHECK(defo_world_set_contact(w, &cd) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "separation_speed") != NULL);
    cd = defo_default_contact_def();
    cd.sweeps = 0;
    CHECK(defo_world_set_contact(w, &cd) == DEFO_ERR_INVALID_ARGUMENT);
    defo_mesh *m = block(0, 0, 0, 0.3, 2);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.friction = -1;
    defo_body_id id;
    CHECK(defo_world_add_body(w, &bd, &id) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "friction") != NULL);
    bd.friction = 0.5;
    bd.collide = 2;
    CHECK(defo_world_add_body(w, &bd, &id) == DEFO_ERR_INVALID_ARGUMENT);
    /* two blocks placed inside each other are reported, with the depth */
    bd.collide = 1;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    defo_mesh *m2 = block(0.1, 0, 0.1, 0.3, 2);
    bd.mesh = m2;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    defo_body_overlap ov[4];
    int count = 0;
    CHECK_OK(defo_world_overlaps(w, ov, 4, &count));
    CHECK(count == 2);
    if (count >= 1) {
        CHECK(ov[0].nodes > 0);
        CHECK(ov[0].depth > 0.05 && ov[0].depth < 0.3);
        TEST_REPORT("overlap found: body %d in body %d, %ld nodes, %.3f m deep", ov[0].body,
                    ov[0].other, (long)ov[0].nodes, ov[0].depth);
    }
    /* one that does not collide: no overlap reported, and it passes through */
    defo_world_destroy(w);
    CHECK_OK(defo_world_create(NULL, &w));
    bd.mesh = m;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    bd.mesh = m2;
    bd.collide = 0;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    CHECK_OK(defo_world_overlaps(w, ov, 4, &count));
    CHECK(count == 0);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    defo_mesh_destroy(m2);
}

int main(void) {
    RUN(test_head_on);
    RUN(test_head_on_from_afar);
    RUN(test_stack_at_rest);
    RUN(test_self_fold);
    RUN(test_determinism_and_resume);
    RUN(test_contact_settings);
    return test_summary();
}
