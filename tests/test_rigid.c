/*
 * tests/test_rigid.c — rigid bodies (defo/rigid.h, MMDJ01 §2.7).
 *
 * What each test checks against:
 *   - test_mass_properties: a box meshed in tets: volume, centre and the
 *     inertia tensor against the analytic box (m(b²+c²)/12, …) to 1e-12,
 *     translated and rotated copies (the tensor turns with the body: R I Rᵀ);
 *     a flat element is refused naming it.
 *   - test_torque_free: the same box (1 × 0.6 × 0.2 m) spinning at 5 rad/s
 *     about its intermediate axis with a small perturbation, 20 s at 240
 *     steps a second: |L − L₀|/|L₀| ≤ 1e-10 per second (conservation),
 *     |E − E₀|/E₀ ≤ 1e-6, the orientation a unit quaternion to 1e-14, and
 *     the tumbling period (the time between flips of the intermediate-axis
 *     momentum) against the analytic period 4K(k)/√((I₃−I₂)(L²−2EI₁)/(I₁I₂I₃))
 *     of the free rigid body (Landau–Lifshitz §37, K by the arithmetic-
 *     geometric mean) within 1 %.
 *   - test_free_flight: under a constant force the centre follows c₀ + v₀t
 *     + F t²/2M exactly (to rounding).
 *   - test_two_body_contact: two bodies meeting head on, e = 1, equal masses:
 *     linear and angular momentum (about the origin) exactly kept, the
 *     velocities exchanged; e = 0: they move on together (analytic).
 *   - test_patch_contact: a box landing flat with its corners as one patch,
 *     sliding and spinning: the points' impulses sum to the box's change of
 *     momentum and angular momentum (conservation), no normal motion after,
 *     the friction at μ Σ jₙ while sliding fast (Coulomb) and sticking when
 *     slow; bad patches refused.
 *   - test_world_drop: a box as a world body under the rigid integrator,
 *     dropped 0.5 m onto a ground collider: it lands at the moment free fall
 *     says (√(2h/g), within a step), comes to rest on its face (centre at
 *     half its height within 0.1 mm, speed below 1 mm/s, no creep over the
 *     last second), and its nodes are its rigid placement.
 *   - test_world_slide: the box launched along the ground at 2 m/s with
 *     μ = 0.3 stops after v²/(2μg) = 0.680 m (Coulomb friction, analytic)
 *     within 2 %, and does not turn.
 *   - test_world_spin: torque-free in a world: L of defo_body_rigid kept to
 *     1e-12 over 2 s, and a checkpoint resumed bit for bit.
 */
#include "defo/collision.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/world.h"
#include "defo/mesh.h"
#include "defo/rigid.h"
#include "test.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static defo_mesh *box_mesh(double a, double b, double c, int order) {
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = a, bd.size[1] = b, bd.size[2] = c;
    bd.origin[0] = -a / 2 + 0.3, bd.origin[1] = -b / 2 - 0.2, bd.origin[2] = -c / 2 + 1;
    bd.cells[0] = 5, bd.cells[1] = 3, bd.cells[2] = 2;
    bd.order = order;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    return m;
}

static void test_mass_properties(void) {
    const double a = 1, b = 0.6, c = 0.2, rho = 2500;
    defo_mesh *m = box_mesh(a, b, c, 1);
    defo_mass_properties mp;
    CHECK_OK(defo_mass_properties_of(m, NULL, rho, &mp));
    const double M = rho * a * b * c;
    const double I[3] = {M * (b * b + c * c) / 12, M * (a * a + c * c) / 12,
                         M * (a * a + b * b) / 12};
    TEST_REPORT("box: V %.15f (%.15f), centre (%.15f %.15f %.15f), I %.12g %.12g %.12g "
                "(analytic %.12g %.12g %.12g)",
                mp.volume, a * b * c, mp.center[0], mp.center[1], mp.center[2], mp.principal[0],
                mp.principal[1], mp.principal[2], I[0], I[1], I[2]);
    CHECK(fabs(mp.volume - a * b * c) < 1e-14);
    CHECK(fabs(mp.mass - M) < 1e-10);
    CHECK(fabs(mp.center[0] - 0.3) < 1e-14 && fabs(mp.center[1] + 0.2) < 1e-14 &&
          fabs(mp.center[2] - 1) < 1e-14);
    for (int k = 0; k < 3; k++) {
        CHECK(fabs(mp.principal[k] - I[k]) < 1e-12 * I[2]);
        CHECK(fabs(mp.inertia[4 * k] - I[k]) < 1e-12 * I[2]);
    }
    CHECK(fabs(mp.inertia[1]) < 1e-12 * I[2] && fabs(mp.inertia[5]) < 1e-12 * I[2]);
    /* rotated by 30° about z and moved: the tensor is R I Rᵀ */
    const double th = M_PI / 6, cs = cos(th), sn = sin(th);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *X = m->x + 3 * i;
        x[3 * i] = cs * X[0] - sn * X[1] + 5;
        x[3 * i + 1] = sn * X[0] + cs * X[1] - 7;
        x[3 * i + 2] = X[2] + 100;
    }
    defo_mass_properties mr;
    CHECK_OK(defo_mass_properties_of(m, x, rho, &mr));
    const double Ixx = cs * cs * I[0] + sn * sn * I[1], Ixy = cs * sn * (I[0] - I[1]);
    CHECK(fabs(mr.inertia[0] - Ixx) < 1e-11 * I[2]);
    CHECK(fabs(mr.inertia[1] - Ixy) < 1e-11 * I[2]);
    CHECK(fabs(mr.principal[0] - I[0]) < 1e-11 * I[2]);
    /* the axes are a rotation whose first column is the body's long axis */
    CHECK(fabs(fabs(mr.axes[0]) - cs) < 1e-9 && fabs(fabs(mr.axes[3]) - sn) < 1e-9);
    free(x);
    /* tet10 (straight): the same */
    defo_mesh *q = box_mesh(a, b, c, 2);
    defo_mass_properties mq;
    CHECK_OK(defo_mass_properties_of(q, NULL, rho, &mq));
    CHECK(fabs(mq.principal[1] - I[1]) < 1e-12 * I[2]);
    defo_mesh_destroy(q);
    /* a flat element: refused, named */
    const defo_index e0 = 0;
    const defo_index *v = m->elems + 4 * e0;
    for (int k = 0; k < 3; k++) m->x[3 * v[3] + k] = m->x[3 * v[0] + k];
    CHECK(defo_mass_properties_of(m, NULL, rho, &mp) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "element 0") != NULL);
    CHECK(defo_mass_properties_of(m, NULL, 0, &mp) == DEFO_ERR_INVALID_ARGUMENT);
    /* a body without mass has no rigid motion: refused */
    defo_rigid_body rb;
    defo_mass_properties none = mq;
    none.mass = 0;
    CHECK(defo_rigid_init(&rb, &none) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "mass 0") != NULL);
    defo_mesh_destroy(m);
}

/* The complete elliptic integral K(k) by the arithmetic-geometric mean. */
static double elliptic_K(double k) {
    double a = 1, b = sqrt(1 - k * k);
    for (int i = 0; i < 40; i++) {
        const double an = 0.5 * (a + b), bn = sqrt(a * b);
        a = an, b = bn;
    }
    return M_PI / (2 * a);
}

/* The period of the body-frame angular velocity of a free rigid body
 * (Landau–Lifshitz §37): I₁ < I₂ < I₃, L² > 2E I₂ (else 1 and 3 swap). */
static double tumbling_period(const double I[3], const double L[3]) {
    double I1 = I[0], I2 = I[1], I3 = I[2], L2 = 0, E2 = 0;
    for (int k = 0; k < 3; k++) L2 += L[k] * L[k], E2 += L[k] * L[k] / I[k];
    if (L2 < E2 * I2) {
        const double t = I1;
        I1 = I3, I3 = t;
    }
    const double k2 = (I2 - I1) * (E2 * I3 - L2) / ((I3 - I2) * (L2 - E2 * I1));
    const double rate = sqrt((I3 - I2) * (L2 - E2 * I1) / (I1 * I2 * I3));
    return 4 * elliptic_K(sqrt(k2)) / rate;
}

static void test_torque_free(void) {
    const double a = 1, b = 0.6, c = 0.2, rho = 1000;
    defo_mesh *m = box_mesh(a, b, c, 1);
    defo_mass_properties mp;
    CHECK_OK(defo_mass_properties_of(m, NULL, rho, &mp));
    defo_rigid_body rb;
    CHECK_OK(defo_rigid_init(&rb, &mp));
    /* ω near the intermediate axis (body axis 2 = the rest axes' column 1) */
    double R[9];
    defo_rigid_rotation(&rb, R);
    const double wb[3] = {0.05, 5, 0.05};
    double w[3];
    for (int i = 0; i < 3; i++)
        w[i] = R[3 * i] * wb[0] + R[3 * i + 1] * wb[1] + R[3 * i + 2] * wb[2];
    defo_rigid_set_angular_velocity(&rb, w);
    const double L0[3] = {rb.momentum[0], rb.momentum[1], rb.momentum[2]};
    const double Ln = sqrt(L0[0] * L0[0] + L0[1] * L0[1] + L0[2] * L0[2]);
    const double E0 = defo_rigid_kinetic_energy(&rb);
    double Lb[3];
    for (int k = 0; k < 3; k++) Lb[k] = rb.inertia[k] * wb[k];
    const double T = tumbling_period(rb.inertia, Lb);
    const double h = 1.0 / 240, dur = 20;
    double Lerr = 0, Eerr = 0, qerr = 0, last = -1, period = 0, prev = 1;
    int flips = 0;
    for (int s = 1; s <= (int)lround(dur / h); s++) {
        CHECK_OK(defo_rigid_advance(&rb, NULL, NULL, h));
        double dL = 0;
        for (int k = 0; k < 3; k++) dL += (rb.momentum[k] - L0[k]) * (rb.momentum[k] - L0[k]);
        Lerr = fmax(Lerr, sqrt(dL) / Ln);
        Eerr = fmax(Eerr, fabs(defo_rigid_kinetic_energy(&rb) - E0) / E0);
        const double *q = rb.orientation;
        qerr = fmax(qerr, fabs(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] - 1));
        /* body momentum along the intermediate axis: Π₂ = (R(q)ᵀ L)₂ */
        defo_rigid_rotation(&rb, R);
        const double P2 = R[1] * rb.momentum[0] + R[4] * rb.momentum[1] + R[7] * rb.momentum[2];
        if (prev > 0 && P2 <= 0) {
            if (last >= 0) period = s * h - last;
            last = s * h;
            flips++;
        }
        prev = P2;
    }
    TEST_REPORT("20 s at 240 steps/s: |ΔL|/|L| ≤ %.2e (%.2e per second), |ΔE|/E ≤ %.2e, "
                "| |q| − 1 | ≤ %.1e; tumbling period %.5f s, analytic %.5f s (%.4f %%), %d "
                "flips",
                Lerr, Lerr / dur, Eerr, qerr, period, T, 100 * (period - T) / T, flips);
    CHECK(Lerr / dur <= 1e-10);
    CHECK(Eerr <= 1e-6);
    CHECK(qerr <= 1e-14);
    CHECK(flips >= 2);
    CHECK(fabs(period - T) <= 0.01 * T);
    defo_mesh_destroy(m);
}

static void test_free_flight(void) {
    defo_mesh *m = box_mesh(1, 0.6, 0.2, 1);
    defo_mass_properties mp;
    CHECK_OK(defo_mass_properties_of(m, NULL, 1000, &mp));
    defo_rigid_body rb;
    CHECK_OK(defo_rigid_init(&rb, &mp));
    const double v0[3] = {1, -2, 3}, F[3] = {0, 0, -9.81 * rb.mass};
    memcpy(rb.velocity, v0, sizeof v0);
    const double c0[3] = {rb.center[0], rb.center[1], rb.center[2]};
    for (int s = 0; s < 240; s++) CHECK_OK(defo_rigid_advance(&rb, F, NULL, 1.0 / 240));
    double err = 0;
    for (int k = 0; k < 3; k++)
        err = fmax(err, fabs(rb.center[k] - (c0[k] + v0[k] + 0.5 * F[k] / rb.mass)));
    TEST_REPORT("1 s of free flight: |c − (c₀ + v₀t + gt²/2)| = %.1e m", err);
    CHECK(err < 1e-12);
    defo_mesh_destroy(m);
}

static void test_two_body_contact(void) {
    defo_mesh *m = box_mesh(1, 0.6, 0.2, 1);
    defo_mass_properties mp;
    CHECK_OK(defo_mass_properties_of(m, NULL, 1000, &mp));
    for (int elastic = 0; elastic < 2; elastic++) {
        defo_rigid_body rb[2];
        CHECK_OK(defo_rigid_init(&rb[0], &mp));
        CHECK_OK(defo_rigid_init(&rb[1], &mp));
        rb[1].center[0] += 1.0; /* touching end to end at x = c + 0.5 */
        rb[0].velocity[0] = 2, rb[1].velocity[0] = -1;
        rb[0].velocity[1] = 0.3; /* sliding sideways: friction */
        const double w0[3] = {0, 0, 0.7};
        defo_rigid_set_angular_velocity(&rb[0], w0);
        /* a point contact on the axis: body 1 pushed by body 0 (normal +x
         * from body 0 to body 1) */
        defo_rigid_contact k;
        memset(&k, 0, sizeof k);
        k.body = 1, k.other = 0;
        k.point[0] = rb[0].center[0] + 0.5, k.point[1] = rb[0].center[1],
        k.point[2] = rb[0].center[2];
        k.normal[0] = 1;
        k.gap = 0;
        k.friction = 0.3;
        defo_rigid_contact_def cd = defo_default_rigid_contact_def();
        cd.restitution = elastic ? 1.0 : 0.0;
        cd.iterations = 50;
        double P0[3], A0[3];
        for (int q = 0; q < 3; q++)
            P0[q] = rb[0].mass * rb[0].velocity[q] + rb[1].mass * rb[1].velocity[q];
        /* angular momentum about the origin: Σ c × M v + L */
        for (int q = 0; q < 3; q++) A0[q] = rb[0].momentum[q] + rb[1].momentum[q];
        for (int i = 0; i < 2; i++) {
            const double *c = rb[i].center, *v = rb[i].velocity;
            A0[0] += rb[i].mass * (c[1] * v[2] - c[2] * v[1]);
            A0[1] += rb[i].mass * (c[2] * v[0] - c[0] * v[2]);
            A0[2] += rb[i].mass * (c[0] * v[1] - c[1] * v[0]);
        }
        CHECK_OK(defo_rigid_solve_contacts(rb, 2, &k, 1, &cd, 0.01, NULL, NULL));
        double P1[3], A1[3];
        for (int q = 0; q < 3; q++)
            P1[q] = rb[0].mass * rb[0].velocity[q] + rb[1].mass * rb[1].velocity[q];
        for (int q = 0; q < 3; q++) A1[q] = rb[0].momentum[q] + rb[1].momentum[q];
        for (int i = 0; i < 2; i++) {
            const double *c = rb[i].center, *v = rb[i].velocity;
            A1[0] += rb[i].mass * (c[1] * v[2] - c[2] * v[1]);
            A1[1] += rb[i].mass * (c[2] * v[0] - c[0] * v[2]);
            A1[2] += rb[i].mass * (c[0] * v[1] - c[1] * v[0]);
        }
        double dP = 0, dA = 0, sP = 0, sA = 0;
        for (int q = 0; q < 3; q++) {
            dP = fmax(dP, fabs(P1[q] - P0[q]));
            dA = fmax(dA, fabs(A1[q] - A0[q]));
            sP = fmax(sP, fabs(P0[q]));
            sA = fmax(sA, fabs(A0[q]));
        }
        TEST_REPORT("e = %d: velocities %.12f, %.12f (x); ΔP %.1e of %.3g, ΔL_origin %.1e of %.3g",
                    elastic, rb[0].velocity[0], rb[1].velocity[0], dP, sP, dA, sA);
        CHECK(dP <= 1e-12 * sP && dA <= 1e-12 * sA);
        if (elastic) {
            CHECK(fabs(rb[0].velocity[0] + 1) < 1e-9 && fabs(rb[1].velocity[0] - 2) < 1e-9);
        } else {
            CHECK(fabs(rb[0].velocity[0] - 0.5) < 1e-9 && fabs(rb[1].velocity[0] - 0.5) < 1e-9);
        }
        /* the friction impulse stays within the cone */
        const double jt = sqrt(k.tangent_impulse[0] * k.tangent_impulse[0] +
                               k.tangent_impulse[1] * k.tangent_impulse[1] +
                               k.tangent_impulse[2] * k.tangent_impulse[2]);
        CHECK(jt <= 0.3 * k.normal_impulse * (1 + 1e-12));
    }
    defo_mesh_destroy(m);
}

/* A box (1 × 0.6 × 0.2 m) landing flat on the ground at 0.3 m/s with its
 * four bottom corners as one patch (defo_rigid_contact.patch), sliding and
 * spinning about the normal, μ = 0.4:
 *   - the points' reported impulses are what the box took: their sum is
 *     M Δv and their moment about the centre ΔL, to rounding (the patch's
 *     friction, solved at the patch's centre, shared among the points);
 *   - it lands flat: no corner moves along the normal after (to 1e-9 m/s);
 *   - sliding fast (0.54 m/s: more than μ g dt could stop), the friction
 *     force is at its limit μ Σ jₙ (Coulomb) and never beyond; sliding
 *     slowly (1 cm/s), it sticks: no slip and no spin left (1e-9);
 *   - a patch of points of other friction, or a negative patch number, is
 *     refused with a message naming the contacts. */
static void test_patch_contact(void) {
    defo_mesh *m = box_mesh(1, 0.6, 0.2, 1);
    defo_mass_properties mp;
    CHECK_OK(defo_mass_properties_of(m, NULL, 1000, &mp));
    const double mu = 0.4, dt = 0.01;
    for (int slow = 0; slow < 2; slow++) {
        defo_rigid_body rb;
        CHECK_OK(defo_rigid_init(&rb, &mp));
        rb.velocity[0] = slow ? 0.01 : 0.5, rb.velocity[1] = slow ? 0 : 0.2;
        rb.velocity[2] = -0.3;
        const double w0[3] = {0, 0, slow ? 0.02 : 3.0};
        defo_rigid_set_angular_velocity(&rb, w0);
        const defo_rigid_body before = rb;
        defo_rigid_contact k[4];
        memset(k, 0, sizeof k);
        for (int i = 0; i < 4; i++) {
            k[i].body = 0, k[i].other = -1;
            k[i].point[0] = rb.center[0] + (i % 2 ? 0.5 : -0.5);
            k[i].point[1] = rb.center[1] + (i / 2 ? 0.3 : -0.3);
            k[i].point[2] = rb.center[2] - 0.1;
            k[i].normal[2] = 1;
            k[i].friction = mu;
            k[i].patch = 1;
        }
        defo_rigid_contact_def cd = defo_default_rigid_contact_def();
        cd.restitution = 0;
        cd.iterations = 100;
        defo_rigid_solve_stats ss;
        CHECK_OK(defo_rigid_solve_contacts(&rb, 1, k, 4, &cd, dt, NULL, &ss));
        double J[3] = {0, 0, 0}, T[3] = {0, 0, 0}, N = 0, Jt = 0;
        for (int i = 0; i < 4; i++) {
            const double r[3] = {k[i].point[0] - before.center[0], k[i].point[1] - before.center[1],
                                 k[i].point[2] - before.center[2]};
            const double *j = k[i].impulse;
            for (int q = 0; q < 3; q++) J[q] += j[q];
            T[0] += r[1] * j[2] - r[2] * j[1];
            T[1] += r[2] * j[0] - r[0] * j[2];
            T[2] += r[0] * j[1] - r[1] * j[0];
            N += k[i].normal_impulse;
        }
        Jt = sqrt(J[0] * J[0] + J[1] * J[1]);
        double dP = 0, dL = 0, vn = 0, slip = 0, w[3];
        for (int q = 0; q < 3; q++) {
            dP = fmax(dP, fabs(rb.mass * (rb.velocity[q] - before.velocity[q]) - J[q]));
            dL = fmax(dL, fabs(rb.momentum[q] - before.momentum[q] - T[q]));
        }
        defo_rigid_angular_velocity(&rb, w);
        for (int i = 0; i < 4; i++) {
            double v[3];
            defo_rigid_velocity_at(&rb, k[i].point, v);
            vn = fmax(vn, fabs(v[2]));
            slip = fmax(slip, sqrt(v[0] * v[0] + v[1] * v[1]));
        }
        TEST_REPORT("%s: %d sweeps; Σ impulses − M Δv %.1e, Σ r × impulses − ΔL %.1e (of %.3g); "
                    "normal speed after %.1e; friction %.6f of μ Σ jₙ = %.6f; slip after %.2e m/s, "
                    "spin %.2e rad/s",
                    slow ? "slow" : "fast", ss.sweeps[0], dP, dL, rb.mass * 0.3, vn, Jt, mu * N,
                    slip, w[2]);
        CHECK(ss.converged[0]);
        CHECK(dP <= 1e-12 * rb.mass && dL <= 1e-12 * rb.mass);
        CHECK(vn < 1e-9);
        CHECK(Jt <= mu * N * (1 + 1e-12));
        if (slow) {
            CHECK(slip < 1e-9 && fabs(w[2]) < 1e-9);
        } else {
            CHECK(Jt >= mu * N * (1 - 1e-9) && slip > 0.1);
        }
        /* bad patches */
        k[2].friction = 0.5;
        const defo_status bad = defo_rigid_solve_contacts(&rb, 1, k, 4, &cd, dt, NULL, NULL);
        CHECK(bad == DEFO_ERR_INVALID_ARGUMENT &&
              strstr(defo_last_error(), "contacts 1 and 2 of patch 1") != NULL);
        k[2].friction = mu, k[3].patch = -1;
        const defo_status neg = defo_rigid_solve_contacts(&rb, 1, k, 4, &cd, dt, NULL, NULL);
        CHECK(neg == DEFO_ERR_INVALID_ARGUMENT && strstr(defo_last_error(), "contact 3") != NULL);
    }
    defo_mesh_destroy(m);
}

/* ------------------------------------------------ bodies of a world */
static defo_collider *ground(double mu) {
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_PLANE;
    sh.center[2] = 0;
    sh.normal[0] = 0, sh.normal[1] = 0, sh.normal[2] = 1;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    cd.friction = mu;
    defo_collider *c = NULL;
    CHECK_OK(defo_collider_create(&cd, &c));
    return c;
}

/* A 0.4 × 0.3 × 0.2 box (tet4) whose bottom is at z = z0, rigid. */
static defo_world *rigid_world(double z0, double mu, double gravity, defo_collider **col,
                               defo_body_id *id, const double v0[3], const double w0[3]) {
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = 0.4, bd.size[1] = 0.3, bd.size[2] = 0.2;
    bd.origin[0] = -0.2, bd.origin[1] = -0.15, bd.origin[2] = z0;
    bd.cells[0] = 4, bd.cells[1] = 3, bd.cells[2] = 2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = -gravity;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def id0 = defo_default_integrator_def(DEFO_INTEGRATOR_RIGID);
    id0.restitution = 0;
    CHECK_OK(defo_world_add_integrator(w, &id0, NULL));
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    b.material.density = 1000;
    b.integrator = 0;
    if (v0) memcpy(b.velocity, v0, sizeof b.velocity);
    if (w0) memcpy(b.angular_velocity, w0, sizeof b.angular_velocity);
    CHECK_OK(defo_world_add_body(w, &b, id));
    *col = mu >= 0 ? ground(mu) : NULL;
    if (*col) CHECK_OK(defo_world_add_collider(w, *col));
    defo_mesh_destroy(m);
    return w;
}

/* max |x − (c + P (X − C))| over the nodes: the nodes are the placement */
static double placement_error(defo_world *w, defo_body_id id) {
    defo_rigid_body rb;
    CHECK_OK(defo_body_rigid(w, id, &rb));
    double P[9], err = 0;
    defo_rigid_placement(&rb, P);
    const defo_mesh *m = defo_body_mesh(w, id);
    const double *x = defo_body_positions(w, id);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *X = m->x + 3 * i;
        const double r[3] = {X[0] - rb.rest_center[0], X[1] - rb.rest_center[1],
                             X[2] - rb.rest_center[2]};
        for (int k = 0; k < 3; k++)
            err = fmax(err, fabs(x[3 * i + k] - (rb.center[k] + P[3 * k] * r[0] +
                                                 P[3 * k + 1] * r[1] + P[3 * k + 2] * r[2])));
    }
    return err;
}

static void test_world_drop(void) {
    defo_collider *col = NULL;
    defo_body_id id;
    defo_world *w = rigid_world(0.5, 0.5, 9.81, &col, &id, NULL, NULL);
    const double T = sqrt(2 * 0.5 / 9.81);
    double landed = -1, creep = 0, z_end = 0, speed = 0;
    for (int f = 0; f < 3 * 240; f++) {
        CHECK_OK(defo_world_step(w, 1.0 / 240));
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (st.collisions > 0 && landed < 0) landed = defo_world_time(w);
        defo_rigid_body rb;
        CHECK_OK(defo_body_rigid(w, id, &rb));
        if (f >= 2 * 240) {
            creep = fmax(creep, fabs(rb.center[2] - z_end) * (f > 2 * 240));
            speed =
                fmax(speed, sqrt(rb.velocity[0] * rb.velocity[0] + rb.velocity[1] * rb.velocity[1] +
                                 rb.velocity[2] * rb.velocity[2]));
        }
        z_end = rb.center[2];
    }
    const double perr = placement_error(w, id);
    TEST_REPORT("landed at t = %.4f s (free fall %.4f s); rest height %.6f m (0.1), speed ≤ %.1e "
                "m/s and creep %.1e m over the last second; nodes off the placement by %.1e m",
                landed, T, z_end, speed, creep, perr);
    CHECK(fabs(landed - T) <= 1.0 / 240 + 1e-9);
    CHECK(fabs(z_end - 0.1) < 1e-4);
    CHECK(speed < 1e-3 && creep < 1e-5);
    CHECK(perr < 1e-12);
    defo_world_destroy(w);
    defo_collider_destroy(col);
}

static void test_world_slide(void) {
    defo_collider *col = NULL;
    defo_body_id id;
    const double v0[3] = {2, 0, 0}, mu = 0.3, g = 9.81;
    defo_world *w = rigid_world(0.0, mu, g, &col, &id, v0, NULL);
    defo_rigid_body r0;
    CHECK_OK(defo_body_rigid(w, id, &r0));
    for (int f = 0; f < 2 * 240; f++) CHECK_OK(defo_world_step(w, 1.0 / 240));
    defo_rigid_body rb;
    CHECK_OK(defo_body_rigid(w, id, &rb));
    double wv[3];
    defo_rigid_angular_velocity(&rb, wv);
    const double dist = rb.center[0] - r0.center[0], expect = v0[0] * v0[0] / (2 * mu * g);
    TEST_REPORT("slid %.4f m (Coulomb v²/2μg = %.4f m, %.2f %%), end speed %.1e m/s, |ω| %.1e",
                dist, expect, 100 * (dist - expect) / expect, fabs(rb.velocity[0]),
                sqrt(wv[0] * wv[0] + wv[1] * wv[1] + wv[2] * wv[2]));
    CHECK(fabs(dist - expect) <= 0.02 * expect);
    CHECK(fabs(rb.velocity[0]) < 1e-3);
    defo_world_destroy(w);
    defo_collider_destroy(col);
}

static void test_world_spin(void) {
    defo_collider *col = NULL;
    defo_body_id id;
    const double w0[3] = {0.05, 5, 0.05}, v0[3] = {0.1, 0, 0};
    defo_world *w = rigid_world(1.0, -1, 0, &col, &id, v0, w0);
    defo_rigid_body r0;
    CHECK_OK(defo_body_rigid(w, id, &r0));
    void *ck = NULL, *a = NULL, *b = NULL;
    size_t nck = 0, na = 0, nb = 0;
    for (int f = 0; f < 60; f++) {
        CHECK_OK(defo_world_step(w, 1.0 / 30));
        if (f == 29) CHECK_OK(defo_world_serialize(w, 1, &ck, &nck));
    }
    defo_rigid_body rb;
    CHECK_OK(defo_body_rigid(w, id, &rb));
    double dL = 0, Ln = 0;
    for (int k = 0; k < 3; k++) {
        dL = fmax(dL, fabs(rb.momentum[k] - r0.momentum[k]));
        Ln = fmax(Ln, fabs(r0.momentum[k]));
    }
    CHECK_OK(defo_world_serialize(w, 1, &a, &na));
    CHECK_OK(defo_world_deserialize(w, 1, ck, nck));
    for (int f = 30; f < 60; f++) CHECK_OK(defo_world_step(w, 1.0 / 30));
    CHECK_OK(defo_world_serialize(w, 1, &b, &nb));
    const int same = na == nb && !memcmp(a, b, na);
    TEST_REPORT("2 s in a world: |ΔL| %.1e of %.3g; resumed from 1 s: %s; nodes off the "
                "placement by %.1e m",
                dL, Ln, same ? "identical" : "DIFFERS", placement_error(w, id));
    CHECK(dL <= 1e-12 * Ln);
    CHECK(same);
    defo_free(ck);
    defo_free(a);
    defo_free(b);
    defo_world_destroy(w);
}

int main(void) {
    RUN(test_mass_properties);
    RUN(test_torque_free);
    RUN(test_free_flight);
    RUN(test_two_body_contact);
    RUN(test_patch_contact);
    RUN(test_world_drop);
    RUN(test_world_slide);
    RUN(test_world_spin);
    return test_summary();
}
