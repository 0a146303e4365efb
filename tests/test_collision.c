/*
 * tests/test_collision.c — rigid colliders (implicit surfaces, scripted
 * motion) and the ITF04 §9 node collision processing with friction.
 *
 * References used: closed-form distances written independently of the
 * library (clamped nearest points, face distances), central finite
 * differences of φ and of the motion, the paper's friction formula evaluated
 * by hand, and 1-vs-2-thread bitwise comparison.
 */
#include "defo/defo.h"
#include "determinism.h"
#include "test.h"

#define PI 3.14159265358979323846

/* ----------------------------------------------------------- helpers */

static defo_collider *make(const defo_shape_def *shapes, int count, double mu) {
    defo_collider_def d = defo_default_collider_def();
    d.num_shapes = count;
    d.shapes = shapes;
    d.friction = mu;
    defo_collider *c = NULL;
    CHECK_OK(defo_collider_create(&d, &c));
    return c;
}

static void rot_store(defo_mat3 R, double out[9]) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) out[3 * i + j] = R.m[i][j];
}

static double norm3(const double a[3]) {
    return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

/* Local coordinates (relative to the centre) of collider-frame point p. */
static void to_local(const defo_shape_def *s, const double p[3], double d[3]) {
    const double *R = s->rotation;
    for (int i = 0; i < 3; i++)
        d[i] = R[i] * p[0] + R[3 + i] * p[1] + R[6 + i] * p[2] - s->center[i];
}

/* Reference signed distances, written as "distance to the nearest surface
 * point" (outside) and "smallest distance to a face" (inside), a formulation
 * different from the library's. */
static double ref_phi(const defo_shape_def *s, const double p[3]) {
    double d[3];
    to_local(s, p, d);
    switch (s->type) {
    case DEFO_SHAPE_PLANE: {
        double len = norm3(s->normal);
        return (d[0] * s->normal[0] + d[1] * s->normal[1] + d[2] * s->normal[2]) / len;
    }
    case DEFO_SHAPE_SPHERE:
        return norm3(d) - s->radius;
    case DEFO_SHAPE_BOX: {
        const double *h = s->half_extent;
        int inside = fabs(d[0]) <= h[0] && fabs(d[1]) <= h[1] && fabs(d[2]) <= h[2];
        if (inside) {
            double m = INFINITY;
            for (int i = 0; i < 3; i++) m = fmin(m, h[i] - fabs(d[i]));
            return -m;
        }
        double e[3];
        for (int i = 0; i < 3; i++) e[i] = d[i] - fmax(-h[i], fmin(h[i], d[i]));
        return norm3(e);
    }
    case DEFO_SHAPE_CYLINDER:
    case DEFO_SHAPE_CAPSULE: {
        const double *a = s->axis; /* tests pass unit axes */
        double ax = d[0] * a[0] + d[1] * a[1] + d[2] * a[2];
        double rr[3] = {d[0] - ax * a[0], d[1] - ax * a[1], d[2] - ax * a[2]};
        double rho = norm3(rr), r = s->radius, L = s->half_length;
        if (s->type == DEFO_SHAPE_CAPSULE) {
            /* Union of the two end spheres and the open cylinder between them. */
            double d1 = hypot(rho, ax - L) - r, d2 = hypot(rho, ax + L) - r;
            double dc = fabs(ax) <= L ? rho - r : INFINITY;
            return fmin(dc, fmin(d1, d2));
        }
        if (rho <= r && fabs(ax) <= L) return -fmin(r - rho, L - fabs(ax));
        double cr = fmin(rho, r), ca = fmax(-L, fmin(L, ax));
        return hypot(rho - cr, ax - ca);
    }
    case DEFO_SHAPE_MESH: /* test_mesh_collider has its own reference */
        break;
    }
    return NAN;
}

/* Distance from p to the medial set of shape s (a lower bound, enough to
 * keep finite-difference stencils away from kinks). */
static double medial_gap(const defo_shape_def *s, const double p[3]) {
    double d[3];
    to_local(s, p, d);
    switch (s->type) {
    case DEFO_SHAPE_PLANE:
        return INFINITY;
    case DEFO_SHAPE_SPHERE:
        return norm3(d);
    case DEFO_SHAPE_BOX: {
        const double *h = s->half_extent;
        double q[3] = {fabs(d[0]) - h[0], fabs(d[1]) - h[1], fabs(d[2]) - h[2]};
        if (q[0] > 0 || q[1] > 0 || q[2] > 0) return INFINITY;
        double g = INFINITY;
        for (int i = 0; i < 3; i++) {
            g = fmin(g, fabs(d[i])); /* the sign of the normal flips across d_i = 0 */
            for (int j = i + 1; j < 3; j++) g = fmin(g, fabs(q[i] - q[j]) / 2);
        }
        return g;
    }
    case DEFO_SHAPE_CYLINDER:
    case DEFO_SHAPE_CAPSULE: {
        const double *a = s->axis;
        double ax = d[0] * a[0] + d[1] * a[1] + d[2] * a[2];
        double rr[3] = {d[0] - ax * a[0], d[1] - ax * a[1], d[2] - ax * a[2]};
        double rho = norm3(rr);
        if (s->type == DEFO_SHAPE_CAPSULE) return rho;
        double er = rho - s->radius, eh = fabs(ax) - s->half_length;
        if (er > 0 || eh > 0) return INFINITY;
        return fmin(rho, fmin(fabs(ax), fabs(er - eh) / 2));
    }
    case DEFO_SHAPE_MESH:
        break;
    }
    return 0;
}

/* A set of shapes of every type, rotated and off-centre. */
static int sample_shapes(defo_shape_def *s) {
    defo_mat3 R = defo_m3_rotation(defo_v3(1, 2, 3), 0.7);
    for (int k = 0; k < 5; k++) {
        s[k] = defo_default_shape_def();
        rot_store(R, s[k].rotation);
        s[k].center[0] = 0.3;
        s[k].center[1] = -0.2;
        s[k].center[2] = 0.1;
    }
    s[0].type = DEFO_SHAPE_PLANE;
    s[0].normal[0] = 0.48;
    s[0].normal[1] = 0.6;
    s[0].normal[2] = 0.64; /* unit */
    s[1].type = DEFO_SHAPE_SPHERE;
    s[1].radius = 0.8;
    s[2].type = DEFO_SHAPE_BOX;
    s[2].half_extent[0] = 0.5;
    s[2].half_extent[1] = 0.8;
    s[2].half_extent[2] = 0.3;
    s[3].type = DEFO_SHAPE_CYLINDER;
    s[3].axis[0] = 0;
    s[3].axis[1] = 0.6;
    s[3].axis[2] = 0.8;
    s[3].radius = 0.4;
    s[3].half_length = 0.7;
    s[4].type = DEFO_SHAPE_CAPSULE;
    s[4].axis[0] = 0.6;
    s[4].axis[1] = 0;
    s[4].axis[2] = -0.8;
    s[4].radius = 0.3;
    s[4].half_length = 0.5;
    return 5;
}

/* ------------------------------------------------------------- tests */

static void test_validation(void) {
    int64_t before = defo_allocated_bytes();
    defo_shape_def s = defo_default_shape_def();
    defo_collider_def d = defo_default_collider_def();
    CHECK(d.friction == 0.5 && d.num_shapes == 0);
    defo_collider *c = (defo_collider *)&d; /* must be reset to NULL on error */
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT && c == NULL);
    d.num_shapes = 1;
    d.shapes = &s;
    s.radius = 0;
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT && c == NULL);
    CHECK(strstr(defo_last_error(), "radius") != NULL);
    s.radius = 1;
    s.rotation[0] = 2; /* not a rotation */
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT);
    s.rotation[0] = -1; /* a reflection, det -1 */
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT);
    s.rotation[0] = 1;
    s.type = DEFO_SHAPE_CYLINDER;
    s.axis[2] = 0;
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT);
    s.axis[2] = 2; /* normalised */
    s.half_length = 0;
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT);
    s.type = DEFO_SHAPE_CAPSULE; /* a capsule of zero length is a sphere */
    CHECK_OK(defo_collider_create(&d, &c));
    double x[3] = {0, 0, 3}, n[3];
    CHECK_NEAR(defo_collider_phi(c, 0, x, n, NULL), 2, 1e-15);
    defo_collider_destroy(c);
    s.type = DEFO_SHAPE_BOX;
    s.half_extent[1] = -1;
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT);
    s.half_extent[1] = 1;
    d.friction = -0.1;
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT);
    d.friction = NAN;
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT);
    d.friction = 0.3;
    d.motion.angular_axis[2] = 0;
    d.motion.angular_speed = 1;
    CHECK(defo_collider_create(&d, &c) == DEFO_ERR_INVALID_ARGUMENT);
    d.motion.angular_axis[0] = 1;
    CHECK_OK(defo_collider_create(&d, &c));
    /* collide_nodes argument checks */
    double xs[3] = {0, 0, 0};
    unsigned char con[1];
    defo_index count = -1;
    CHECK(defo_collide_nodes(&c, 1, 0, 0, 1, xs, NULL, con, NULL, &count) ==
          DEFO_ERR_INVALID_ARGUMENT);
    defo_collider *null_c = NULL;
    CHECK(defo_collide_nodes(&null_c, 1, 0, 0.1, 1, xs, NULL, con, NULL, &count) ==
          DEFO_ERR_INVALID_ARGUMENT);
    CHECK_OK(defo_collide_nodes(NULL, 0, 0, 0.1, 1, xs, NULL, con, NULL, &count));
    CHECK(count == 0 && con[0] == 0);
    CHECK_OK(defo_collide_nodes(&c, 1, 0, 0.1, 0, NULL, NULL, NULL, NULL, &count));
    defo_collider_destroy(c);
    defo_collider_destroy(NULL);
    CHECK(defo_allocated_bytes() == before); /* nothing leaked on the error paths */
}

/* φ against the independent reference, ∇φ against central differences,
 * |∇φ| = 1 away from medial sets, at random points inside and outside. */
static void test_shapes_phi_and_gradient(void) {
    defo_shape_def s[5];
    int ns = sample_shapes(s);
    test_rng rng = {12345};
    double worst_phi = 0, worst_grad = 0;
    int checked_grad = 0, inside = 0;
    for (int k = 0; k < ns; k++) {
        defo_collider *c = make(&s[k], 1, 0.5);
        double size = defo_collider_size(c);
        for (int it = 0; it < TEST_HEAVY(4000); it++) {
            double x[3], n[3];
            for (int i = 0; i < 3; i++) x[i] = s[k].center[i] + test_range(&rng, -1.5, 1.5);
            double phi = defo_collider_phi(c, 0, x, n, NULL);
            double ref = ref_phi(&s[k], x);
            if (ref < 0) inside++;
            worst_phi = fmax(worst_phi, fabs(phi - ref) / size);
            CHECK_MSG(fabs(phi - ref) <= 1e-12 * size, "shape %d: phi %.17g ref %.17g", k, phi,
                      ref);
            CHECK_NEAR(norm3(n), 1, 1e-14);
            double h = 1e-6 * size;
            if (medial_gap(&s[k], x) < 100 * h) continue;
            /* If phi is near zero the stencil crosses the surface: fine, φ is C1 there. */
            double g[3];
            for (int i = 0; i < 3; i++) {
                double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]};
                xp[i] += h;
                xm[i] -= h;
                g[i] = (defo_collider_phi(c, 0, xp, NULL, NULL) -
                        defo_collider_phi(c, 0, xm, NULL, NULL)) /
                       (2 * h);
            }
            double e = 0;
            for (int i = 0; i < 3; i++) e = fmax(e, fabs(g[i] - n[i]));
            worst_grad = fmax(worst_grad, e);
            CHECK_MSG(e <= 1e-6, "shape %d: grad error %.3g at (%g %g %g)", k, e, x[0], x[1], x[2]);
            CHECK_NEAR(norm3(g), 1, 1e-6);
            checked_grad++;
        }
        defo_collider_destroy(c);
    }
    CHECK(inside > TEST_HEAVY(20000) / 10); /* both sides were sampled */
    TEST_REPORT("max |phi-ref|/size %.2e, max |n - FD grad| %.2e over %d points (%d inside)",
                worst_phi, worst_grad, checked_grad, inside);
}

/* Medial points: sphere centre, box centre and medial plane, cylinder and
 * capsule axis.  φ exact, n a finite unit vector. */
static void test_medial_points(void) {
    defo_shape_def s = defo_default_shape_def();
    struct {
        defo_shape_type type;
        double x[3];
        double phi;
    } cases[] = {
        {DEFO_SHAPE_SPHERE, {0, 0, 0}, -1},         {DEFO_SHAPE_BOX, {0, 0, 0}, -1},
        {DEFO_SHAPE_BOX, {0.5, 0.5, 0}, -0.5},      {DEFO_SHAPE_BOX, {0.3, -0.3, 0.3}, -0.7},
        {DEFO_SHAPE_CYLINDER, {0, 0, 0}, -1},       {DEFO_SHAPE_CYLINDER, {0, 0, 0.4}, -0.6},
        {DEFO_SHAPE_CYLINDER, {0.5, 0, 0.5}, -0.5}, {DEFO_SHAPE_CAPSULE, {0, 0, 0.3}, -1},
        {DEFO_SHAPE_CAPSULE, {0, 0, 1.0}, -1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        s.type = cases[k].type;
        defo_collider *c = make(&s, 1, 0.5);
        double n[3] = {NAN, NAN, NAN}, v[3];
        double phi = defo_collider_phi(c, 0, cases[k].x, n, v);
        CHECK_NEAR(phi, cases[k].phi, 1e-15);
        CHECK_MSG(isfinite(n[0]) && isfinite(n[1]) && isfinite(n[2]), "case %zu", k);
        CHECK_NEAR(norm3(n), 1, 1e-15);
        /* Projecting along n must land on the surface. */
        double y[3] = {cases[k].x[0] - phi * n[0], cases[k].x[1] - phi * n[1],
                       cases[k].x[2] - phi * n[2]};
        CHECK_NEAR(defo_collider_phi(c, 0, y, NULL, NULL), 0, 1e-15);
        defo_collider_destroy(c);
    }
}

/* Union = min over shapes; a gear (hub + rotated teeth) works as a union and
 * is periodic under rotation by one tooth pitch. */
static void test_union_and_gear(void) {
    defo_shape_def s[5];
    sample_shapes(s);
    defo_collider *all = make(s + 1, 4, 0.5), *one[4];
    for (int k = 0; k < 4; k++) one[k] = make(s + 1 + k, 1, 0.5);
    test_rng rng = {99};
    for (int it = 0; it < 2000; it++) {
        double x[3], n[3], nk[3];
        for (int i = 0; i < 3; i++) x[i] = test_range(&rng, -1.5, 1.5);
        double m = INFINITY, nm[3] = {0, 0, 0};
        for (int k = 0; k < 4; k++) {
            double p = defo_collider_phi(one[k], 0, x, nk, NULL);
            if (p < m) {
                m = p;
                memcpy(nm, nk, sizeof nm);
            }
        }
        double phi = defo_collider_phi(all, 0, x, n, NULL);
        CHECK(phi == m); /* exactly the minimum, with that shape's normal */
        CHECK(n[0] == nm[0] && n[1] == nm[1] && n[2] == nm[2]);
    }
    for (int k = 0; k < 4; k++) defo_collider_destroy(one[k]);
    defo_collider_destroy(all);

    /* Gear: hub radius 1 plus 8 teeth (boxes 0.3 x 0.1 x 0.2 half sizes) centred
     * at radius 1.2, rotated about z.  A tooth's outer face is at radius 1.5. */
    enum { TEETH = 8 };
    defo_shape_def g[TEETH + 1];
    g[0] = defo_default_shape_def();
    g[0].type = DEFO_SHAPE_CYLINDER;
    g[0].half_length = 0.2;
    for (int k = 1; k <= TEETH; k++) {
        g[k] = defo_default_shape_def();
        g[k].type = DEFO_SHAPE_BOX;
        g[k].center[0] = 1.2;
        g[k].half_extent[0] = 0.3;
        g[k].half_extent[1] = 0.1;
        g[k].half_extent[2] = 0.2;
        rot_store(defo_m3_rotation(defo_v3(0, 0, 1), 2 * PI * (k - 1) / TEETH), g[k].rotation);
    }
    defo_collider_def d = defo_default_collider_def();
    d.num_shapes = TEETH + 1;
    d.shapes = g;
    d.motion.angular_speed = 2.0; /* rad/s about z through the origin */
    defo_collider *gear = NULL;
    CHECK_OK(defo_collider_create(&d, &gear));
    /* Tip of the tooth at angle 0 and of the tooth at 45 degrees (t = 0). */
    double tip[3] = {1.6, 0, 0}, n[3], v[3];
    CHECK_NEAR(defo_collider_phi(gear, 0, tip, n, v), 0.1, 1e-14);
    CHECK_NEAR(n[0], 1, 1e-14);
    CHECK_NEAR(v[1], 2.0 * 1.6, 1e-14); /* ω × r */
    double c45 = cos(PI / 4), tip45[3] = {1.45 * c45, 1.45 * c45, 0.1};
    CHECK_NEAR(defo_collider_phi(gear, 0, tip45, n, NULL), -0.05, 1e-14);
    /* Between two teeth at radius 1.3: outside, distance to the hub or a tooth flank. */
    double gap[3] = {1.3 * cos(PI / 8), 1.3 * sin(PI / 8), 0};
    /* The hub (0.3 away) is nearer than the tooth flank (1.3 sin 22.5° - 0.1 = 0.397). */
    CHECK_NEAR(defo_collider_phi(gear, 0, gap, NULL, NULL), 0.3, 1e-14);
    /* Periodicity: after one pitch (2π/8 / ω) the gear looks the same. */
    double T = (2 * PI / TEETH) / 2.0;
    double worst = 0;
    for (int it = 0; it < 500; it++) {
        double x[3];
        for (int i = 0; i < 3; i++) x[i] = test_range(&rng, -1.7, 1.7);
        worst = fmax(worst, fabs(defo_collider_phi(gear, T, x, NULL, NULL) -
                                 defo_collider_phi(gear, 0, x, NULL, NULL)));
    }
    CHECK(worst <= 1e-13);
    /* Project a cloud of nodes inside the gear (hub and teeth overlap at
     * radius 0.9..1): every node ends on the surface. */
    enum { N = 400 };
    double x[3 * N], vel[3 * N], nrm[3 * N];
    unsigned char con[N];
    int inside = 0;
    for (int i = 0; i < N; i++) {
        double r = test_range(&rng, 0, 1.5), a = test_range(&rng, 0, 2 * PI);
        x[3 * i] = r * cos(a);
        x[3 * i + 1] = r * sin(a);
        x[3 * i + 2] = test_range(&rng, -0.25, 0.25);
        vel[3 * i] = vel[3 * i + 1] = vel[3 * i + 2] = 0;
        inside += defo_collider_phi(gear, 0.3, x + 3 * i, NULL, NULL) < 0;
    }
    defo_index count = 0;
    CHECK_OK(defo_collide_nodes(&gear, 1, 0.3, 0.01, N, x, vel, con, nrm, &count));
    CHECK(count == inside && inside > 50);
    double worst_phi = 0;
    for (int i = 0; i < N; i++) {
        double p = defo_collider_phi(gear, 0.3, x + 3 * i, NULL, NULL);
        if (con[i]) worst_phi = fmax(worst_phi, fabs(p));
        CHECK(p >= -1e-12 * defo_collider_size(gear));
    }
    CHECK(worst_phi <= 1e-12 * defo_collider_size(gear));
    TEST_REPORT("gear: %d of %d nodes projected, max |phi| after %.2e", inside, N, worst_phi);
    defo_collider_destroy(gear);
}

/* Moving collider: φ(x, t) = φ_static(R(t)ᵀ(x - pivot(t)) + pivot), normal
 * rotated by R(t); velocity = d/dt of a material point's motion (central
 * differences) = v + ω × (x - pivot(t)). */
static void test_moving_collider(void) {
    defo_shape_def s[5];
    sample_shapes(s);
    defo_collider_def d = defo_default_collider_def();
    d.num_shapes = 4;
    d.shapes = s + 1;
    defo_collider *still = NULL, *moving = NULL;
    CHECK_OK(defo_collider_create(&d, &still));
    double vel0[3] = {0.3, -0.5, 0.2}, piv[3] = {0.5, 0.1, -0.4}, ax[3] = {1, -2, 2};
    memcpy(d.motion.velocity, vel0, sizeof vel0);
    memcpy(d.motion.pivot, piv, sizeof piv);
    memcpy(d.motion.angular_axis, ax, sizeof ax); /* |ax| = 3, normalised by the library */
    d.motion.angular_speed = 1.7;
    CHECK_OK(defo_collider_create(&d, &moving));
    defo_vec3 axis = defo_v3(1.0 / 3, -2.0 / 3, 2.0 / 3);
    test_rng rng = {7};
    double worst_v = 0;
    for (int it = 0; it < 500; it++) {
        double t = test_range(&rng, -2, 3);
        double x[3];
        for (int i = 0; i < 3; i++) x[i] = test_range(&rng, -2, 2);
        defo_mat3 R = defo_m3_rotation(axis, 1.7 * t);
        defo_vec3 r = defo_v3(x[0] - piv[0] - vel0[0] * t, x[1] - piv[1] - vel0[1] * t,
                              x[2] - piv[2] - vel0[2] * t);
        defo_vec3 p = defo_v3_add(defo_m3_tmulv(R, r), defo_v3_load(piv));
        double pl[3], ns[3], nm[3], v[3];
        defo_v3_store(pl, p);
        double ps = defo_collider_phi(still, 0, pl, ns, NULL);
        double pm = defo_collider_phi(moving, t, x, nm, v);
        CHECK_NEAR(pm, ps, 1e-13);
        defo_vec3 nr = defo_m3_mulv(R, defo_v3_load(ns));
        CHECK_NEAR(nm[0], nr.x, 1e-13);
        CHECK_NEAR(nm[1], nr.y, 1e-13);
        CHECK_NEAR(nm[2], nr.z, 1e-13);
        /* The material point p moves as X(τ) = R(τ)(p - pivot) + pivot + v τ. */
        double h = 1e-5, xv[3];
        defo_vec3 q = defo_v3_sub(p, defo_v3_load(piv));
        defo_vec3 xp = defo_m3_mulv(defo_m3_rotation(axis, 1.7 * (t + h)), q);
        defo_vec3 xm = defo_m3_mulv(defo_m3_rotation(axis, 1.7 * (t - h)), q);
        defo_v3_store(xv, defo_v3_scale(defo_v3_sub(xp, xm), 1 / (2 * h)));
        for (int i = 0; i < 3; i++) {
            double e = fabs(xv[i] + vel0[i] - v[i]);
            worst_v = fmax(worst_v, e);
            CHECK(e <= 1e-8 * (1 + norm3(v)));
        }
    }
    TEST_REPORT("max |velocity - FD of motion| %.2e", worst_v);
    defo_collider_destroy(still);
    defo_collider_destroy(moving);
}

/* Projection of random nodes against a moving union: every colliding node
 * ends on the surface, its relative normal velocity is zero if it was
 * approaching (kept if separating), with μ = 0 the tangential relative
 * velocity is untouched; non-colliding nodes are untouched bitwise. */
static void test_projection(void) {
    defo_shape_def s[5];
    sample_shapes(s);
    defo_collider_def d = defo_default_collider_def();
    d.num_shapes = 4;
    d.shapes = s + 1;
    d.friction = 0;
    d.motion.velocity[0] = 0.4;
    d.motion.angular_speed = -0.9;
    d.motion.angular_axis[0] = 1;
    d.motion.angular_axis[2] = 1;
    defo_collider *c = NULL;
    CHECK_OK(defo_collider_create(&d, &c));
    const double t = 0.37, dt = 1e-2, size = defo_collider_size(c);
    enum { N = 3000 };
    static double x0[3 * N], v0[3 * N], x[3 * N], v[3 * N], nrm[3 * N];
    static unsigned char con[N];
    test_rng rng = {2024};
    int inside = 0, deep = 0;
    for (int i = 0; i < 3 * N; i++) {
        x0[i] = test_range(&rng, -1.6, 1.9);
        v0[i] = test_range(&rng, -2, 2);
    }
    for (int i = 0; i < N; i++) {
        double p = defo_collider_phi(c, t, x0 + 3 * i, NULL, NULL);
        inside += p < 0;
        deep += p < -0.2; /* interior nodes well inside the collider */
    }
    memcpy(x, x0, sizeof x);
    memcpy(v, v0, sizeof v);
    defo_index count = 0;
    CHECK_OK(defo_collide_nodes(&c, 1, t, dt, N, x, v, con, nrm, &count));
    CHECK(count == inside && deep > 20);
    double worst_phi = 0, worst_vn = 0;
    int deep_done = 0;
    for (int i = 0; i < N; i++) {
        double *xi = x + 3 * i, *vi = v + 3 * i;
        double p0 = defo_collider_phi(c, t, x0 + 3 * i, NULL, NULL);
        if (p0 >= 0) {
            CHECK(con[i] == 0 && memcmp(xi, x0 + 3 * i, 3 * sizeof(double)) == 0 &&
                  memcmp(vi, v0 + 3 * i, 3 * sizeof(double)) == 0);
            continue;
        }
        CHECK(con[i] == 1);
        double n[3], vc[3];
        double p = defo_collider_phi(c, t, xi, n, vc);
        worst_phi = fmax(worst_phi, fabs(p));
        CHECK(fabs(p) <= 1e-12 * size);
        CHECK(nrm[3 * i] == n[0] && nrm[3 * i + 1] == n[1] && nrm[3 * i + 2] == n[2]);
        deep_done += p0 < -0.2;
        /* Relative velocities before (at the new point's collider velocity) and after. */
        double r0[3], r1[3];
        for (int k = 0; k < 3; k++) {
            r0[k] = v0[3 * i + k] - vc[k];
            r1[k] = vi[k] - vc[k];
        }
        double vn0 = r0[0] * n[0] + r0[1] * n[1] + r0[2] * n[2];
        double vn1 = r1[0] * n[0] + r1[1] * n[1] + r1[2] * n[2];
        double expect = vn0 < 0 ? 0 : vn0;
        worst_vn = fmax(worst_vn, fabs(vn1 - expect));
        CHECK_NEAR(vn1, expect, 1e-12);
        for (int k = 0; k < 3; k++) /* μ = 0: tangential part unchanged */
            CHECK_NEAR(r1[k] - vn1 * n[k], r0[k] - vn0 * n[k], 1e-12);
    }
    CHECK(deep_done == deep);
    TEST_REPORT("%d of %d nodes inside (%d deep): max |phi| after %.2e, max vn error %.2e", inside,
                N, deep, worst_phi, worst_vn);
    defo_collider_destroy(c);
}

/* Friction against a static plane z = 0 with ITF04 §9's formula
 *   v_T' = max(0, 1 - μ (Δv_N + Δx_N/Δt)/|v_T|) v_T. */
static void run_plane(double mu, double depth, double vx, double vz, double dt, double *xo,
                      double *vo, const double *plate_vel) {
    defo_shape_def s = defo_default_shape_def();
    s.type = DEFO_SHAPE_PLANE;
    defo_collider_def d = defo_default_collider_def();
    d.num_shapes = 1;
    d.shapes = &s;
    d.friction = mu;
    if (plate_vel) memcpy(d.motion.velocity, plate_vel, 3 * sizeof(double));
    defo_collider *c = NULL;
    CHECK_OK(defo_collider_create(&d, &c));
    /* At t = 0 the moving plate passes through z = 0. */
    xo[0] = 0.25;
    xo[1] = -0.5;
    xo[2] = -depth;
    vo[0] = vx;
    vo[1] = 0;
    vo[2] = vz;
    unsigned char con = 0;
    double n[3] = {0, 0, 0};
    defo_index count = 0;
    CHECK_OK(defo_collide_nodes(&c, 1, 0, dt, 1, xo, vo, &con, n, &count));
    CHECK(con == 1 && count == 1 && n[2] == 1);
    CHECK(xo[0] == 0.25 && xo[1] == -0.5 && xo[2] == 0); /* projected straight up */
    defo_collider_destroy(c);
}

static void test_friction(void) {
    double x[3], v[3];
    const double dt = 1e-2, depth = 1e-3; /* Δx_N/Δt = 0.1 m/s */
    /* μ = 0: tangential velocity kept exactly. */
    run_plane(0, depth, 1.0, 0, dt, x, v, NULL);
    CHECK(v[0] == 1.0 && v[1] == 0 && v[2] == 0);
    /* Small μ, sliding (Δv_N = 0): loses exactly μ Δx_N/Δt = 0.2 * 0.1. */
    run_plane(0.2, depth, 1.0, 0, dt, x, v, NULL);
    CHECK_NEAR(v[0], 1.0 - 0.2 * depth / dt, 1e-14);
    CHECK(v[2] == 0);
    /* Approaching at -0.5 m/s: Δv_N = 0.5 adds to the normal impulse. */
    run_plane(0.2, depth, 1.0, -0.5, dt, x, v, NULL);
    CHECK_NEAR(v[0], 1.0 - 0.2 * (0.5 + depth / dt), 1e-14);
    CHECK(v[2] == 0);
    /* Separating at +0.3 m/s: normal velocity kept, Δv_N = 0. */
    run_plane(0.2, depth, 1.0, 0.3, dt, x, v, NULL);
    CHECK_NEAR(v[0], 1.0 - 0.2 * depth / dt, 1e-14);
    CHECK(v[2] == 0.3);
    /* Large μ with enough penetration: sticks, never reverses. */
    run_plane(20, depth, 1.0, 0, dt, x, v, NULL);
    CHECK(v[0] == 0 && v[1] == 0 && v[2] == 0);
    run_plane(20, depth, -3.0, -0.1, dt, x, v, NULL);
    CHECK(v[0] == 0 && v[2] == 0);
    /* Friction acts on the RELATIVE velocity: a resting node on a plate moving
     * at 0.5 m/s is dragged along when μ is large, partly when small. */
    double plate[3] = {0.5, 0, 0};
    run_plane(20, depth, 0, 0, dt, x, v, plate);
    CHECK_NEAR(v[0], 0.5, 1e-15);
    run_plane(0.2, depth, 0, 0, dt, x, v, plate);
    CHECK_NEAR(v[0], 0.5 - 0.5 * (1 - 0.2 * depth / dt / 0.5), 1e-14);
    /* A plate moving up at 1 m/s hits a resting node: normal velocity becomes 1. */
    double up[3] = {0, 0, 1};
    run_plane(0, depth, 0.7, 0, dt, x, v, up);
    CHECK(v[0] == 0.7 && v[2] == 1);
}

/* Bitwise identical for 1 and 2 threads, with enough nodes to go parallel. */
typedef struct det_ctx {
    defo_collider *c[2];
    double *x0, *v0;
    defo_index n;
} det_ctx;

static void det_run(void *vctx, void *out) {
    det_ctx *ctx = vctx;
    size_t n = (size_t)ctx->n;
    double *x = out, *v = x + 3 * n, *nrm = v + 3 * n;
    unsigned char *con = (unsigned char *)(nrm + 3 * n);
    memcpy(x, ctx->x0, 3 * n * sizeof(double));
    memcpy(v, ctx->v0, 3 * n * sizeof(double));
    memset(nrm, 0, 3 * n * sizeof(double));
    defo_index count = 0;
    CHECK_OK(defo_collide_nodes(ctx->c, 2, 0.2, 1e-3, ctx->n, x, v, con, nrm, &count));
}

static void test_determinism(void) {
    defo_shape_def s[5];
    sample_shapes(s);
    det_ctx ctx;
    defo_collider_def d = defo_default_collider_def();
    d.num_shapes = 4;
    d.shapes = s + 1;
    d.motion.angular_speed = 3;
    CHECK_OK(defo_collider_create(&d, &ctx.c[0]));
    d.num_shapes = 1;
    d.shapes = s;
    d.motion.velocity[2] = 1;
    CHECK_OK(defo_collider_create(&d, &ctx.c[1]));
    ctx.n = TEST_HEAVY(40000) > 4 * 2048 ? TEST_HEAVY(40000) : 4 * 2048;
    size_t n = (size_t)ctx.n;
    ctx.x0 = malloc(3 * n * sizeof(double));
    ctx.v0 = malloc(3 * n * sizeof(double));
    test_rng rng = {31337};
    for (size_t i = 0; i < 3 * n; i++) {
        ctx.x0[i] = test_range(&rng, -2, 2);
        ctx.v0[i] = test_range(&rng, -1, 1);
    }
    CHECK(test_bitwise_same_for_threads(det_run, &ctx, n * (9 * sizeof(double) + 1), 2));
    free(ctx.x0);
    free(ctx.v0);
    defo_collider_destroy(ctx.c[0]);
    defo_collider_destroy(ctx.c[1]);
}

/* defo_collision_respond against hand-computed ITF04 §9 values: a node
 * that moved from (0,0,0.01) to (0.1,0,−0.005) at v = (1,0,−1) into the
 * ground z = 0, friction time τ = 0.01, step 0.01: projected to z = 0
 * (Δx_N = 0.005), normal velocity zeroed (Δv_N = 1); friction takes
 * μ(Δv_N + Δx_N/τ) = 1.5μ off |v_T| = 1.  μ = 0.5: slides at 0.25 m/s,
 * NORMAL constraint.  μ = 1: stops, sticks (FIXED) and its tangential
 * displacement is undone (back to x = 0).  A skipped node is untouched. */
static void test_respond(void) {
    for (int stick = 0; stick < 2; stick++) {
        defo_shape_def sh = defo_default_shape_def();
        sh.type = DEFO_SHAPE_PLANE;
        defo_collider_def cd = defo_default_collider_def();
        cd.num_shapes = 1;
        cd.shapes = &sh;
        cd.friction = stick ? 1.0 : 0.5;
        defo_collider *c = NULL;
        CHECK_OK(defo_collider_create(&cd, &c));
        double xp[6] = {0, 0, 0.01, 0, 0, 0.01}, x[6] = {0.1, 0, -0.005, 0.1, 0, -0.005};
        double v[6] = {1, 0, -1, 1, 0, -1}, normal[6] = {0}, mu[2] = {-1, -1};
        unsigned char con[2], skip[2] = {0, 1};
        defo_index hits = 0;
        CHECK_OK(defo_collision_respond(&c, 1, 0.0, 0.01, 0.01, 2, xp, skip, x, v, con, normal, mu,
                                        &hits));
        CHECK(hits == 1 && con[1] == 0 && x[5] == -0.005 && v[3] == 1);
        CHECK_NEAR(x[2], 0.0, 1e-15);
        CHECK_NEAR(v[2], 0.0, 1e-15);
        CHECK_NEAR(normal[2], 1.0, 1e-15);
        CHECK_NEAR(mu[0], cd.friction, 0);
        if (stick) {
            CHECK(con[0] == DEFO_CONSTRAINT_FIXED);
            CHECK_NEAR(v[0], 0.0, 1e-15);
            CHECK_NEAR(x[0], 0.0, 1e-15);
        } else {
            CHECK(con[0] == DEFO_CONSTRAINT_NORMAL);
            CHECK_NEAR(v[0], 0.25, 1e-14);
            CHECK_NEAR(x[0], 0.1, 1e-15);
        }
        defo_collider_destroy(c);
    }
}

/* ------------------------------------------------------- mesh colliders */
/* The boundary triangles of tet mesh m as a mesh with no elements (the
 * same nodes); drop: leave the first triangle out (a hole).  m is freed. */
static defo_mesh *boundary_surface(defo_mesh *m, int drop) {
    defo_mesh *s = NULL;
    defo_boundary b;
    CHECK_OK(defo_mesh_boundary(m, 0, &b));
    CHECK_OK(defo_mesh_create(0, &s));
    for (defo_index i = 0; i < m->num_nodes; i++)
        CHECK_OK(defo_mesh_add_node(s, m->x[3 * i], m->x[3 * i + 1], m->x[3 * i + 2], NULL));
    for (defo_index f = drop ? 1 : 0; f < b.num_faces; f++)
        CHECK_OK(defo_mesh_add_tri(s, b.faces + 3 * f, 3, 0));
    defo_boundary_free(&b);
    defo_mesh_destroy(m);
    return s;
}

/* The surface of a box [−h, h] (cells per side); drop: with a hole. */
static defo_mesh *box_surface(const double h[3], int cells, int drop) {
    defo_box_def bd = defo_default_box_def();
    for (int i = 0; i < 3; i++) {
        bd.origin[i] = -h[i];
        bd.size[i] = 2 * h[i];
        bd.cells[i] = cells;
    }
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    return boundary_surface(m, drop);
}

/* A soft 0.2 m block (E = 1e5 Pa) dropped from 5 cm over z = 0 onto the
 * collider of shape sh, for frames frames of dt: lowest[f] its lowest node
 * after frame f, x_end (3 × its 27 nodes, may be NULL) where it ends, and
 * *collisions the most nodes in contact at a frame's end. */
enum { BLOCK_NODES = 27 };
static void drop_block(const defo_shape_def *sh, int frames, double dt, double *lowest,
                       double *x_end, defo_index *collisions) {
    defo_collider *c = make(sh, 1, 0.5);
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(NULL, &w));
    CHECK_OK(defo_world_add_collider(w, c));
    defo_box_def bd = defo_default_box_def();
    bd.origin[0] = bd.origin[1] = -0.1, bd.origin[2] = 0.05;
    bd.size[0] = bd.size[1] = bd.size[2] = 0.2;
    bd.cells[0] = bd.cells[1] = bd.cells[2] = 2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    CHECK(m->num_nodes == BLOCK_NODES);
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    b.material.youngs_modulus = 1e5;
    b.material.damping_time = 0.01;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &b, &id));
    *collisions = 0;
    for (int f = 0; f < frames; f++) {
        CHECK_OK(defo_world_step(w, dt));
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (st.collisions > *collisions) *collisions = st.collisions;
        const double *x = defo_body_positions(w, id);
        lowest[f] = INFINITY;
        for (defo_index i = 0; i < m->num_nodes; i++) lowest[f] = fmin(lowest[f], x[3 * i + 2]);
    }
    if (x_end) memcpy(x_end, defo_body_positions(w, id), 3 * BLOCK_NODES * sizeof(double));
    defo_world_destroy(w);
    defo_collider_destroy(c);
    defo_mesh_destroy(m);
}

/* A mesh collider made of a box's boundary triangles against the analytic
 * box of the same centre and rotation (the reference): near the box both are
 * the exact signed distance to the faces, so φ agrees to rounding and the
 * normals agree away from the medial sets; far away the mesh's φ is a
 * positive lower bound of the reference.  A surface with a hole is reported
 * as open (and still inside/outside by its winding number); a mesh shape
 * without a mesh or triangles is refused naming the shape. */
static void test_mesh_collider(void) {
    const double h[3] = {0.5, 0.8, 0.3};
    defo_mesh *surf = box_surface(h, 3, 0);
    defo_shape_def sb = defo_default_shape_def(), sm = defo_default_shape_def();
    sb.type = DEFO_SHAPE_BOX;
    memcpy(sb.half_extent, h, sizeof h);
    sb.center[0] = 0.3, sb.center[1] = -0.2, sb.center[2] = 1.1;
    rot_store(defo_m3_rotation(defo_v3(1, 2, 3), 0.7), sb.rotation);
    sm.type = DEFO_SHAPE_MESH;
    sm.mesh = surf;
    memcpy(sm.center, sb.center, sizeof sm.center);
    memcpy(sm.rotation, sb.rotation, sizeof sm.rotation);
    defo_collider *cb = make(&sb, 1, 0.5), *cm = make(&sm, 1, 0.5);
    const defo_surface_info *info = defo_collider_surface_info(cm, 0);
    CHECK(info && info->open_edges == 0 && info->flipped == 0);
    CHECK_NEAR(info->volume, 8 * h[0] * h[1] * h[2], 1e-12);
    CHECK(defo_collider_surface_info(cb, 0) == NULL);
    test_rng rng = {777};
    double worst = 0, worst_n = 0;
    int near = 0, far = 0, inside = 0;
    const int samples = TEST_HEAVY(3000);
    for (int it = 0; it < samples; it++) {
        double x[3], nb[3], nm[3];
        const double r = it % 2 ? 1.6 : 0.9;
        for (int i = 0; i < 3; i++) x[i] = sb.center[i] + test_range(&rng, -r, r);
        const double pb = defo_collider_phi(cb, 0, x, nb, NULL);
        const double pm = defo_collider_phi(cm, 0, x, nm, NULL);
        CHECK_NEAR(norm3(nm), 1, 1e-12);
        if (pb < 0) inside++;
        if (pb < 0.05) { /* within the mesh's box margin: exact */
            near++;
            worst = fmax(worst, fabs(pm - pb));
            CHECK_MSG(fabs(pm - pb) <= 1e-12, "mesh %.17g box %.17g", pm, pb);
            if (medial_gap(&sb, x) > 1e-3) {
                worst_n =
                    fmax(worst_n, norm3((double[3]){nm[0] - nb[0], nm[1] - nb[1], nm[2] - nb[2]}));
                CHECK(fabs(nm[0] - nb[0]) + fabs(nm[1] - nb[1]) + fabs(nm[2] - nb[2]) < 1e-9);
            }
        } else {
            far++;
            CHECK(pm > 0 && pm <= pb * (1 + 1e-12));
        }
    }
    CHECK(inside > samples / 30 && near > samples / 10 && far > samples / 10);
    TEST_REPORT("box of %ld triangles vs the analytic box: %d points near (%d inside) |dphi| <= "
                "%.1e m, normals <= %.1e off; %d far points outside below the distance",
                (long)info->num_triangles, near, inside, worst, worst_n, far);
    defo_collider_destroy(cm);
    /* a hole: reported, the inside still the inside */
    defo_mesh *holed = box_surface(h, 3, 1);
    sm.mesh = holed;
    cm = make(&sm, 1, 0.5);
    info = defo_collider_surface_info(cm, 0);
    CHECK(info && info->open_edges == 3 && info->hole_length > 0);
    double mid[3]; /* the box's centre in the collider frame: R c */
    for (int i = 0; i < 3; i++)
        mid[i] = sb.rotation[3 * i] * sb.center[0] + sb.rotation[3 * i + 1] * sb.center[1] +
                 sb.rotation[3 * i + 2] * sb.center[2];
    CHECK_NEAR(defo_collider_phi(cb, 0, mid, NULL, NULL), -h[2], 1e-14);
    const double pc = defo_collider_phi(cm, 0, mid, NULL, NULL);
    CHECK_NEAR(pc, -h[2], 1e-14);
    defo_collider_destroy(cm);
    defo_mesh_destroy(holed);
    /* refusals */
    defo_collider_def d = defo_default_collider_def();
    d.num_shapes = 1;
    d.shapes = &sm;
    defo_collider *bad = NULL;
    sm.mesh = NULL;
    CHECK(defo_collider_create(&d, &bad) == DEFO_ERR_INVALID_ARGUMENT && !bad);
    CHECK(strstr(defo_last_error(), "shape 0 (mesh)") && strstr(defo_last_error(), "no mesh"));
    defo_mesh *empty = NULL;
    CHECK_OK(defo_mesh_create(0, &empty));
    sm.mesh = empty;
    CHECK(defo_collider_create(&d, &bad) == DEFO_ERR_INVALID_ARGUMENT && !bad);
    CHECK(strstr(defo_last_error(), "no triangles"));
    defo_mesh_destroy(empty);
    defo_collider_destroy(cb);
    defo_mesh_destroy(surf);
}

/* A block dropped on a slab given once as a mesh collider and once as the
 * analytic box (the reference): near its faces the mesh's φ and normal are
 * the box's, so the fall and the rest agree node for node. */
static void test_mesh_collider_in_world(void) {
    const double h[3] = {1.0, 1.0, 0.1};
    defo_mesh *surf = box_surface(h, 2, 0);
    double low[2][20], x[2][3 * BLOCK_NODES];
    defo_index collisions[2];
    for (int pass = 0; pass < 2; pass++) {
        defo_shape_def sh = defo_default_shape_def();
        sh.type = pass ? DEFO_SHAPE_MESH : DEFO_SHAPE_BOX;
        memcpy(sh.half_extent, h, sizeof h);
        sh.mesh = surf;
        sh.center[2] = -0.1; /* the top at z = 0 */
        drop_block(&sh, 20, 1.0 / 30, low[pass], x[pass], &collisions[pass]);
    }
    double worst = 0;
    for (int k = 0; k < 3 * BLOCK_NODES; k++) worst = fmax(worst, fabs(x[1][k] - x[0][k]));
    TEST_REPORT("lowest node at rest: %.9f m on the mesh, %.9f m on the analytic box; nodes "
                "%.1e m apart at the end (%ld / %ld colliding nodes at most)",
                low[1][19], low[0][19], worst, (long)collisions[1], (long)collisions[0]);
    CHECK(collisions[0] > 0 && collisions[1] == collisions[0]);
    CHECK(fabs(low[0][19]) < 1e-3); /* resting on the top face at z = 0 */
    CHECK(worst < 1e-9);
    defo_mesh_destroy(surf);
}

/* The boundary triangles of a meshed sphere as a mesh with no elements;
 * *err gets its geometric error: the largest | |p| − r | over each
 * triangle's corners, edge midpoints and centroid (the generator's boundary
 * nodes lie near, not exactly on, the sphere). */
static defo_mesh *sphere_surface(double r, double cell, double *err) {
    defo_sphere_def sd = defo_default_sphere_def();
    sd.radius = r;
    sd.cell_size = cell;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_sphere(&sd, &m));
    defo_mesh *s = boundary_surface(m, 0);
    static const double bary[7][3] = {{1, 0, 0},
                                      {0, 1, 0},
                                      {0, 0, 1},
                                      {.5, .5, 0},
                                      {.5, 0, .5},
                                      {0, .5, .5},
                                      {1. / 3, 1. / 3, 1. / 3}};
    *err = 0;
    for (defo_index f = 0; f < s->num_tris; f++) {
        const defo_index *t = s->tris + 3 * f;
        for (int q = 0; q < 7; q++) {
            double p[3] = {0, 0, 0};
            for (int a = 0; a < 3; a++)
                for (int k = 0; k < 3; k++) p[k] += bary[q][a] * s->x[3 * t[a] + k];
            *err = fmax(*err, fabs(norm3(p) - r));
        }
    }
    return s;
}

/* A soft block dropped on a tessellated sphere (a mesh collider) and on the
 * analytic sphere of the same radius (the reference): its lowest node
 * follows the same path within the tessellation's geometric error. */
static void test_mesh_sphere_trajectory(void) {
    const double r = 0.5;
    double sag = 0;
    defo_mesh *surf = sphere_surface(r, 0.06, &sag);
    double path[2][30];
    defo_index collisions;
    for (int pass = 0; pass < 2; pass++) {
        defo_shape_def sh = defo_default_shape_def();
        sh.type = pass ? DEFO_SHAPE_MESH : DEFO_SHAPE_SPHERE;
        sh.radius = r;
        sh.mesh = surf;
        sh.center[2] = -r; /* the top at z = 0 */
        drop_block(&sh, 30, 1.0 / 60, path[pass], NULL, &collisions);
        CHECK(collisions > 0);
    }
    double worst = 0;
    for (int f = 0; f < 30; f++) worst = fmax(worst, fabs(path[1][f] - path[0][f]));
    TEST_REPORT("lowest node over 0.5 s: at most %.2e m from the analytic sphere's path (the "
                "tessellation's error %.2e m); at rest %.5f m on the mesh, %.5f m on the sphere",
                worst, sag, path[1][29], path[0][29]);
    /* landed on the top (its bottom corners hang 1 cm lower over the curve) */
    CHECK(path[0][29] < 0.005 && path[0][29] > -0.03);
    CHECK(worst <= sag);
    defo_mesh_destroy(surf);
}

int main(void) {
    RUN(test_validation);
    RUN(test_shapes_phi_and_gradient);
    RUN(test_medial_points);
    RUN(test_union_and_gear);
    RUN(test_moving_collider);
    RUN(test_projection);
    RUN(test_friction);
    RUN(test_determinism);
    RUN(test_respond);
    RUN(test_mesh_collider);
    RUN(test_mesh_collider_in_world);
    RUN(test_mesh_sphere_trajectory);
    return test_summary();
}
