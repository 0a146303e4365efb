/*
 * rigid/rigid.c — rigid bodies (defo/rigid.h, MMDJ01 §2.7): mass properties
 * of a tet mesh, the quaternion/angular-momentum state, its motion (the
 * implicit midpoint rule of Euler's equations with a Cayley rotation) and
 * sequential-impulse contact (Gauss–Seidel sweeps, patches as blocks, and
 * island steps that solve each group of bodies held by sticking contacts
 * at once: a stack with its heaviest body on top).
 *
 * Invariants: the orientation is renormalised after every product (a unit
 * quaternion to rounding); L is the state, ω derived, so a torque-free step
 * keeps L to rounding whatever the iteration's accuracy; every loop runs in
 * a fixed order (deterministic); nothing allocates but a contact solve
 * given no workspace (its scratch for the call).
 */
#include "defo/rigid.h"

#include "defo/math.h"

#include "base/base.h"

#include <float.h>
#include <math.h>
#include <string.h>

/* Every RIGID_FULL_SWEEP-th sweep of a contact solve visits every contact
 * (the others only those that are not idle). */
#define RIGID_FULL_SWEEP 8

/* ------------------------------------------------------------ small math */
static void mat_vec(const double A[9], const double x[3], double y[3]) {
    for (int i = 0; i < 3; i++) y[i] = A[3 * i] * x[0] + A[3 * i + 1] * x[1] + A[3 * i + 2] * x[2];
}
static void mat_tvec(const double A[9], const double x[3], double y[3]) {
    for (int i = 0; i < 3; i++) y[i] = A[i] * x[0] + A[3 + i] * x[1] + A[6 + i] * x[2];
}
static void cross(const double a[3], const double b[3], double c[3]) {
    const double t[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                         a[0] * b[1] - a[1] * b[0]};
    memcpy(c, t, sizeof t);
}
static double dot(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static void quat_matrix(const double q[4], double R[9]) {
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

static void quat_mul(const double a[4], const double b[4], double c[4]) {
    const double t[4] = {a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
                         a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
                         a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
                         a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0]};
    memcpy(c, t, sizeof t);
}

static void quat_normalize(double q[4]) {
    const double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    for (int k = 0; k < 4; k++) q[k] /= n;
}

/* The unit quaternion of a rotation matrix (Shepperd: the largest of the
 * four squares first, so no cancellation). */
static void matrix_quat(const double R[9], double q[4]) {
    const double tr = R[0] + R[4] + R[8];
    if (tr >= R[0] && tr >= R[4] && tr >= R[8]) {
        const double s = 2 * sqrt(1 + tr);
        q[0] = 0.25 * s, q[1] = (R[7] - R[5]) / s, q[2] = (R[2] - R[6]) / s,
        q[3] = (R[3] - R[1]) / s;
    } else if (R[0] >= R[4] && R[0] >= R[8]) {
        const double s = 2 * sqrt(1 + R[0] - R[4] - R[8]);
        q[0] = (R[7] - R[5]) / s, q[1] = 0.25 * s, q[2] = (R[1] + R[3]) / s,
        q[3] = (R[2] + R[6]) / s;
    } else if (R[4] >= R[8]) {
        const double s = 2 * sqrt(1 + R[4] - R[0] - R[8]);
        q[0] = (R[2] - R[6]) / s, q[1] = (R[1] + R[3]) / s, q[2] = 0.25 * s,
        q[3] = (R[5] + R[7]) / s;
    } else {
        const double s = 2 * sqrt(1 + R[8] - R[0] - R[4]);
        q[0] = (R[3] - R[1]) / s, q[1] = (R[2] + R[6]) / s, q[2] = (R[5] + R[7]) / s,
        q[3] = 0.25 * s;
    }
    quat_normalize(q);
}

/* ------------------------------------------------------ mass properties */
defo_status defo_mass_properties_of(const defo_mesh *mesh, const double *x, double density,
                                    defo_mass_properties *out) {
    if (!mesh || !out || mesh->num_elems <= 0 ||
        (mesh->nodes_per_elem != 4 && mesh->nodes_per_elem != 10))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "mass properties: a tet4 or tet10 mesh with elements is needed");
    if (!(density > 0) || !isfinite(density))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "mass properties: density %g is not > 0",
                          density);
    const double *P = x ? x : mesh->x;
    const int npe = mesh->nodes_per_elem;
    /* moments about the first node (small coordinates: accuracy far from the
     * origin), then shifted to the centre */
    const double *o = P + 3 * (size_t)mesh->elems[0];
    double V = 0, S[3] = {0, 0, 0}, C[9] = {0};
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + (size_t)npe * (size_t)e;
        double p[4][3], s[3] = {0, 0, 0};
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < 3; k++) {
                p[a][k] = P[3 * (size_t)v[a] + k] - o[k];
                s[k] += p[a][k];
            }
        double u[3], w[3], z[3], c[3];
        for (int k = 0; k < 3; k++)
            u[k] = p[1][k] - p[0][k], w[k] = p[2][k] - p[0][k], z[k] = p[3][k] - p[0][k];
        cross(w, z, c);
        const double ve = dot(u, c) / 6;
        if (!(ve > 0))
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "mass properties: element %ld has volume %g (not > 0)", (long)e, ve);
        V += ve;
        for (int k = 0; k < 3; k++) S[k] += ve * s[k] / 4;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double t = s[i] * s[j];
                for (int a = 0; a < 4; a++) t += p[a][i] * p[a][j];
                C[3 * i + j] += ve / 20 * t;
            }
    }
    if (!(V > 0) || !isfinite(V))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "mass properties: volume %g", V);
    memset(out, 0, sizeof *out);
    out->volume = V;
    out->mass = density * V;
    double g[3];
    for (int k = 0; k < 3; k++) g[k] = S[k] / V, out->center[k] = o[k] + g[k];
    /* second moment about the centre: C − V g gᵀ; inertia ρ (tr C 1 − C) */
    double Cc[9];
    for (int i = 0; i < 9; i++) Cc[i] = C[i] - V * g[i / 3] * g[i % 3];
    const double tr = Cc[0] + Cc[4] + Cc[8];
    for (int i = 0; i < 9; i++) out->inertia[i] = density * ((i % 4 == 0 ? tr : 0.0) - Cc[i]);
    for (int i = 0; i < 3; i++) /* exactly symmetric */
        for (int j = i + 1; j < 3; j++)
            out->inertia[3 * j + i] = out->inertia[3 * i + j] =
                0.5 * (out->inertia[3 * i + j] + out->inertia[3 * j + i]);
    defo_mat3 A, Q;
    defo_vec3 lam;
    memcpy(A.m, out->inertia, sizeof A.m);
    defo_sym3_eigen(&A, &lam, &Q); /* descending */
    const double l[3] = {lam.z, lam.y, lam.x};
    for (int k = 0; k < 3; k++) {
        out->principal[k] = l[k];
        for (int r = 0; r < 3; r++) out->axes[3 * r + k] = Q.m[r][2 - k];
    }
    /* a rotation (det +1): the reversed order flips the sign */
    const double det = out->axes[0] * (out->axes[4] * out->axes[8] - out->axes[5] * out->axes[7]) -
                       out->axes[1] * (out->axes[3] * out->axes[8] - out->axes[5] * out->axes[6]) +
                       out->axes[2] * (out->axes[3] * out->axes[7] - out->axes[4] * out->axes[6]);
    if (det < 0)
        for (int r = 0; r < 3; r++) out->axes[3 * r + 2] = -out->axes[3 * r + 2];
    return DEFO_OK;
}

/* -------------------------------------------------------------- state */
defo_status defo_rigid_init(defo_rigid_body *b, const defo_mass_properties *mp) {
    if (!b || !mp || !(mp->mass > 0) || !(mp->principal[0] > 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "rigid body: mass %g and principal moments must be > 0 (a flat or "
                          "empty body has no rigid motion)",
                          mp ? mp->mass : 0.0);
    memset(b, 0, sizeof *b);
    b->mass = mp->mass;
    memcpy(b->inertia, mp->principal, sizeof b->inertia);
    memcpy(b->rest_center, mp->center, sizeof b->rest_center);
    memcpy(b->rest_axes, mp->axes, sizeof b->rest_axes);
    memcpy(b->center, mp->center, sizeof b->center);
    matrix_quat(mp->axes, b->orientation);
    return DEFO_OK;
}

void defo_rigid_rotation(const defo_rigid_body *b, double R[9]) {
    quat_matrix(b->orientation, R);
}

void defo_rigid_placement(const defo_rigid_body *b, double P[9]) {
    double R[9];
    quat_matrix(b->orientation, R);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            P[3 * i + j] = R[3 * i] * b->rest_axes[3 * j] + R[3 * i + 1] * b->rest_axes[3 * j + 1] +
                           R[3 * i + 2] * b->rest_axes[3 * j + 2];
}

void defo_rigid_set_placement(defo_rigid_body *b, const double P[9]) {
    double R[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            R[3 * i + j] = P[3 * i] * b->rest_axes[j] + P[3 * i + 1] * b->rest_axes[3 + j] +
                           P[3 * i + 2] * b->rest_axes[6 + j];
    matrix_quat(R, b->orientation);
}

void defo_rigid_angular_velocity(const defo_rigid_body *b, double w[3]) {
    double R[9], P[3];
    quat_matrix(b->orientation, R);
    mat_tvec(R, b->momentum, P);
    for (int k = 0; k < 3; k++) P[k] /= b->inertia[k];
    mat_vec(R, P, w);
}

void defo_rigid_world_inertia(const defo_rigid_body *b, double I[9], double Iinv[9]) {
    double R[9];
    quat_matrix(b->orientation, R);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double s = 0, t = 0;
            for (int k = 0; k < 3; k++) {
                s += R[3 * i + k] * b->inertia[k] * R[3 * j + k];
                t += R[3 * i + k] / b->inertia[k] * R[3 * j + k];
            }
            if (I) I[3 * i + j] = s;
            if (Iinv) Iinv[3 * i + j] = t;
        }
}

double defo_rigid_kinetic_energy(const defo_rigid_body *b) {
    double w[3];
    defo_rigid_angular_velocity(b, w);
    return 0.5 * b->mass * dot(b->velocity, b->velocity) + 0.5 * dot(w, b->momentum);
}

void defo_rigid_set_angular_velocity(defo_rigid_body *b, const double w[3]) {
    double I[9];
    defo_rigid_world_inertia(b, I, NULL);
    mat_vec(I, w, b->momentum);
}

void defo_rigid_point(const defo_rigid_body *b, const double X[3], double x[3], double v[3]) {
    double P[9], d[3], r[3];
    defo_rigid_placement(b, P);
    for (int k = 0; k < 3; k++) d[k] = X[k] - b->rest_center[k];
    mat_vec(P, d, r);
    if (x)
        for (int k = 0; k < 3; k++) x[k] = b->center[k] + r[k];
    if (v) {
        double w[3], c[3];
        defo_rigid_angular_velocity(b, w);
        cross(w, r, c);
        for (int k = 0; k < 3; k++) v[k] = b->velocity[k] + c[k];
    }
}

void defo_rigid_velocity_at(const defo_rigid_body *b, const double p[3], double v[3]) {
    double w[3], r[3], c[3];
    defo_rigid_angular_velocity(b, w);
    for (int k = 0; k < 3; k++) r[k] = p[k] - b->center[k];
    cross(w, r, c);
    for (int k = 0; k < 3; k++) v[k] = b->velocity[k] + c[k];
}

void defo_rigid_apply_impulse(defo_rigid_body *b, const double p[3], const double J[3]) {
    double r[3], c[3];
    for (int k = 0; k < 3; k++) {
        b->velocity[k] += J[k] / b->mass;
        r[k] = p[k] - b->center[k];
    }
    cross(r, J, c);
    for (int k = 0; k < 3; k++) b->momentum[k] += c[k];
}

/* The torque-free rotation over h: body momentum Π = Rᵀ L, the midpoint
 * ω = I⁻¹(Π + Π⁺)/2 with Π⁺ = cay(h ω̂)ᵀ Π by fixed-point iteration, then
 * q ⊗ q_cay.  Returns 0 when the iteration does not settle (h ω too large):
 * the caller halves the step. */
static int rotate(defo_rigid_body *b, double h) {
    double R[9], Pi[3], w[3], Pn[3], qc[4] = {1, 0, 0, 0};
    quat_matrix(b->orientation, R);
    mat_tvec(R, b->momentum, Pi);
    for (int k = 0; k < 3; k++) w[k] = Pi[k] / b->inertia[k];
    int settled = 0;
    for (int it = 0; it < 60 && !settled; it++) {
        qc[0] = 1, qc[1] = 0.5 * h * w[0], qc[2] = 0.5 * h * w[1], qc[3] = 0.5 * h * w[2];
        quat_normalize(qc);
        double Q[9];
        quat_matrix(qc, Q);
        mat_tvec(Q, Pi, Pn);
        double wn[3], d = 0, s = 0;
        for (int k = 0; k < 3; k++) {
            wn[k] = 0.5 * (Pi[k] + Pn[k]) / b->inertia[k];
            d += fabs(wn[k] - w[k]);
            s += fabs(wn[k]);
        }
        memcpy(w, wn, sizeof w);
        settled = d <= 4 * DBL_EPSILON * s;
    }
    if (!settled) {
        /* one more check: settled to a few ulps is enough when it cycles */
        double d = 0, s = 0;
        qc[0] = 1, qc[1] = 0.5 * h * w[0], qc[2] = 0.5 * h * w[1], qc[3] = 0.5 * h * w[2];
        quat_normalize(qc);
        double Q[9], wn[3];
        quat_matrix(qc, Q);
        mat_tvec(Q, Pi, Pn);
        for (int k = 0; k < 3; k++) {
            wn[k] = 0.5 * (Pi[k] + Pn[k]) / b->inertia[k];
            d += fabs(wn[k] - w[k]);
            s += fabs(wn[k]);
        }
        if (!(d <= 1e-12 * s)) return 0;
    }
    qc[0] = 1, qc[1] = 0.5 * h * w[0], qc[2] = 0.5 * h * w[1], qc[3] = 0.5 * h * w[2];
    quat_normalize(qc);
    double qn[4];
    quat_mul(b->orientation, qc, qn);
    quat_normalize(qn);
    memcpy(b->orientation, qn, sizeof qn);
    return 1;
}

static defo_status rotate_over(defo_rigid_body *b, double dt) {
    /* pieces short enough for the iteration (h ω ≲ 0.5 rad): halved until
     * it settles */
    double w[3];
    defo_rigid_angular_velocity(b, w);
    const double wn = sqrt(dot(w, w));
    int pieces = 1;
    while (pieces < (1 << 20) && wn * dt / pieces > 0.5) pieces *= 2;
    for (;;) {
        defo_rigid_body keep = *b;
        int ok = 1;
        for (int k = 0; k < pieces && ok; k++) ok = rotate(b, dt / pieces);
        if (ok) return DEFO_OK;
        *b = keep;
        if (pieces >= (1 << 20))
            return defo_error(DEFO_ERR_NUMERICAL, "rigid body: the rotation does not settle");
        pieces *= 2;
    }
}

defo_status defo_rigid_advance(defo_rigid_body *b, const double F[3], const double tau[3],
                               double dt) {
    if (!b || !(dt > 0) || !isfinite(dt))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "rigid body: step %g is not > 0", dt);
    const double z[3] = {0, 0, 0};
    const double *f = F ? F : z, *t = tau ? tau : z;
    for (int k = 0; k < 3; k++) {
        b->center[k] += dt * (b->velocity[k] + 0.5 * dt * f[k] / b->mass);
        b->velocity[k] += dt * f[k] / b->mass;
        b->momentum[k] += 0.5 * dt * t[k];
    }
    defo_status st = rotate_over(b, dt);
    if (st) return st;
    for (int k = 0; k < 3; k++) b->momentum[k] += 0.5 * dt * t[k];
    for (int k = 0; k < 3; k++)
        if (!isfinite(b->center[k]) || !isfinite(b->velocity[k]) || !isfinite(b->momentum[k]))
            return defo_error(DEFO_ERR_NUMERICAL, "rigid body: non-finite state");
    return DEFO_OK;
}

/* ------------------------------------------------------------ contact */
defo_rigid_contact_def defo_default_rigid_contact_def(void) {
    defo_rigid_contact_def d;
    d.restitution = 0.2;
    d.bounce_speed = 0.05;
    d.iterations = 30;
    d.tolerance = 1e-10;
    d.push_tolerance = 1e-10;
    d.slop = 0;
    d.push_out = 0.8;
    d.warm_start = 0;
    d.workspace = NULL;
    return d;
}

/* The effective inverse mass of a body at arm r for direction d:
 * 1/M + (r × d)·I⁻¹(r × d). */
static double inv_mass_along(double mass, const double Iinv[9], const double r[3],
                             const double d[3]) {
    double rd[3], t[3];
    cross(r, d, rd);
    mat_vec(Iinv, rd, t);
    return 1 / mass + dot(rd, t);
}

/* The velocity state a pass works on: the bodies' own (v, L) in pass 0,
 * the push-out pseudo-velocities (v, ω) in pass 1. */
typedef struct vel_view {
    defo_rigid_body *bodies;
    double *push; /* 6 per body, pass 1 */
    int pass;
} vel_view;

static void view_get(const vel_view *V, int i, const double Iinv[9], double v[3], double w[3]) {
    if (V->pass == 0) {
        memcpy(v, V->bodies[i].velocity, 3 * sizeof(double));
        mat_vec(Iinv, V->bodies[i].momentum, w);
    } else {
        memcpy(v, V->push + 6 * i, 3 * sizeof(double));
        memcpy(w, V->push + 6 * i + 3, 3 * sizeof(double));
    }
}

/* An impulse J at arm r on body i (sign −1: the other body). */
static void view_kick(const vel_view *V, int i, const double Iinv[9], const double r[3],
                      const double J[3], double sign) {
    defo_rigid_body *b = &V->bodies[i];
    double rJ[3];
    cross(r, J, rJ);
    if (V->pass == 0) {
        for (int k = 0; k < 3; k++) {
            b->velocity[k] += sign * J[k] / b->mass;
            b->momentum[k] += sign * rJ[k];
        }
    } else {
        double dw[3];
        mat_vec(Iinv, rJ, dw);
        for (int k = 0; k < 3; k++) {
            V->push[6 * i + k] += sign * J[k] / b->mass;
            V->push[6 * i + 3 + k] += sign * dw[k];
        }
    }
}

/* The relative velocity at contact k (body minus other or obstacle). */
static void relative(const vel_view *V, const defo_rigid_contact *k, const double Ia[9],
                     const double Io[9], const double ra[3], const double ro[3], double rel[3]) {
    double va[3], wa[3], t[3];
    view_get(V, k->body, Ia, va, wa);
    cross(wa, ra, t);
    for (int q = 0; q < 3; q++) rel[q] = va[q] + t[q];
    if (k->other >= 0) {
        double vo[3], wo[3];
        view_get(V, k->other, Io, vo, wo);
        cross(wo, ro, t);
        for (int q = 0; q < 3; q++) rel[q] -= vo[q] + t[q];
    } else if (k->nodes > 0) {
        for (int a = 0; a < k->nodes; a++) {
            const double *u = V->pass == 0 ? k->node_velocity[a] : k->node_push[a];
            if (u)
                for (int q = 0; q < 3; q++) rel[q] -= k->weight[a] * u[q];
        }
    } else if (V->pass == 0) {
        for (int q = 0; q < 3; q++) rel[q] -= k->obstacle_velocity[q];
    }
}

/* The opposite impulse −J on a deformable obstacle's nodes (their
 * velocities, or in the push-out their pseudo-velocities when given). */
static void nodes_kick(const vel_view *V, defo_rigid_contact *k, const double J[3]) {
    for (int a = 0; a < k->nodes; a++) {
        double *u = V->pass == 0 ? k->node_velocity[a] : k->node_push[a];
        if (!u) continue;
        const double s = k->weight[a] * k->inv_mass[a];
        for (int q = 0; q < 3; q++) u[q] -= s * J[q];
    }
}

/* Σ cₐ² / mₐ: a deformable obstacle's inverse mass at its point (any
 * direction). */
static double nodes_inv_mass(const defo_rigid_contact *k) {
    double s = 0;
    for (int a = 0; a < k->nodes; a++) s += k->weight[a] * k->weight[a] * k->inv_mass[a];
    return s;
}

/* Both bodies' inverse world inertias (from Iinv: 9 per body, the
 * orientations do not change while contacts are solved) and arms of
 * contact k. */
static void arms(const defo_rigid_contact *k, defo_rigid_body *bodies, const double *Iinv,
                 double Ia[9], double Io[9], double ra[3], double ro[3]) {
    const defo_rigid_body *a = &bodies[k->body];
    memcpy(Ia, Iinv + 9 * (size_t)k->body, 9 * sizeof(double));
    for (int q = 0; q < 3; q++) ra[q] = k->point[q] - a->center[q], ro[q] = 0;
    if (k->other >= 0) {
        const defo_rigid_body *o = &bodies[k->other];
        memcpy(Io, Iinv + 9 * (size_t)k->other, 9 * sizeof(double));
        for (int q = 0; q < 3; q++) ro[q] = k->point[q] - o->center[q];
    } else {
        memset(Io, 0, 9 * sizeof(double));
    }
}

/* Patches of up to RIGID_BLOCK points are solved as one block at each
 * visit (patch_block): their normal impulses and friction together, the
 * relative motion of the two bodies at the patch brought to its target in
 * one step (the active sets of a small complementarity problem; a visit
 * whose answer slides, or that no set fits, goes point by point).  Why:
 * point by point, the friction of a face resting on another couples the
 * face's tilt to its sliding through the stack, and Gauss–Seidel crawls
 * (0.993 a sweep on a column of four boxes: 2 118 sweeps to 1e-9); as
 * blocks, what remains is the chain of bodies (120 sweeps), and a patch
 * started cold (no warm impulse) is over-relaxed by RIGID_BLOCK_SOR (33;
 * warm patches are not: over-relaxing a solve started at its answer costs
 * sweeps).  RIGID_BLOCK_TOL: a row meets its target within this fraction
 * of the patch's impulses (times its effective mass), RIGID_BLOCK_FIT or
 * within this fraction of the visit's residual (what block_step leaves). */
#define RIGID_BLOCK 4
/* A patch whose points all lie within RIGID_TOUCHING of its size of the
 * other surface (either side) is touching: its points aim at no approach
 * (bias 0), where a point's gap above the surface would let it approach at
 * gap/dt.  The gaps a face resting on another keeps (the resting solve's
 * rounding, ~1e-7 of its size) ask its corners for approach speeds that
 * no motion of the face gives (four corners, three motions), and the
 * block's active sets would trade a corner's share of the load back and
 * forth between sweeps. */
#define RIGID_TOUCHING  1e-5
#define RIGID_BLOCK_TOL 1e-10
#define RIGID_BLOCK_FIT 1e-4
#define RIGID_BLOCK_SOR 1.5

/* Patch friction (defo/rigid.h): the points [first, first + m) of a patch
 * share one friction impulse λ = (λ₁, λ₂, λ₃) in the patch's frame (n, t₁,
 * t₂: n the first point's normal turned towards the patch's body A).  Point
 * i takes the impulse Bᵢλ on A (its own body's, sign sᵢ = ±1: a point of
 * the other side takes −Bᵢλ), Bᵢλ = (λ₁t₁ + λ₂t₂)/m + λ₃ (n × dᵢ)/S, dᵢ = pᵢ −
 * p̄ (p̄ the points' mean), S = Σ |n × dᵢ|²: the force equally shared, the
 * twist as n × dᵢ.  What λₖ does to A: the impulse lin[k] = Σᵢ Bᵢₖ and the
 * angular impulse angA[k] = Σᵢ (pᵢ − c_A) × Bᵢₖ; to the other body −lin[k]
 * and −angO[k] (arms from c_O): the Jacobian of λ exactly, so what the
 * points report is what the bodies took.  K: its 3 × 3 effective mass, kinv
 * the inverse (twist = 0: a patch whose points coincide, λ₃ stays 0). */
typedef struct rigid_patch {
    int first, m, body, other, twist;
    int resting;        /* every point touching (RIGID_TOUCHING) */
    int cold;           /* no point warm-started */
    double spread;      /* S = Σ |n × (p − mid)|² over the points */
    double size;        /* √(S/m): the points' spread across n */
    double twist_share; /* the largest ρ/S of its points */
    double n[3], t[2][3], mid[3];
    double lin[3][3], angA[3][3], angO[3][3];
    double kinv[9];
    double lambda[3];
    /* the block (RIGID_BLOCK points at most): rows the points' normals,
     * then the friction's (2, or 3 with the twist); jac[r]: the row's
     * impulse on A, its angular impulse about c_A, and about c_O (the
     * other body takes the opposite); chol: the Cholesky factor (lower,
     * row-major) of its effective mass, the diagonal × (1 + RIGID_BLOCK_EPS) */
    int block, rows;
    double jac[RIGID_BLOCK + 3][9];
    double A[(RIGID_BLOCK + 3) * (RIGID_BLOCK + 3)], chol[(RIGID_BLOCK + 3) * (RIGID_BLOCK + 3)];
} rigid_patch;

/* Bᵢ (3 columns, world) of point p of patch P. */
static void patch_share(const rigid_patch *P, const double p[3], double S, double B[3][3]) {
    const double d[3] = {p[0] - P->mid[0], p[1] - P->mid[1], p[2] - P->mid[2]};
    double nd[3];
    cross(P->n, d, nd);
    for (int q = 0; q < 3; q++) {
        B[0][q] = P->t[0][q] / P->m;
        B[1][q] = P->t[1][q] / P->m;
        B[2][q] = S > 0 ? nd[q] / S : 0.0;
    }
}

/* The frame, Jacobian and effective mass of patch P (first, m, body,
 * other set). */
static void patch_setup(rigid_patch *P, const defo_rigid_contact *contacts,
                        const defo_rigid_body *bodies, const double *Iinv) {
    const defo_rigid_contact *k0 = &contacts[P->first];
    memcpy(P->n, k0->normal, sizeof P->n);
    /* t₁: across n from the axis least along it; t₂ = n × t₁ */
    int ax = 0;
    for (int q = 1; q < 3; q++)
        if (fabs(P->n[q]) < fabs(P->n[ax])) ax = q;
    double e[3] = {0, 0, 0};
    e[ax] = 1;
    cross(P->n, e, P->t[1]);
    const double l = sqrt(dot(P->t[1], P->t[1]));
    for (int q = 0; q < 3; q++) P->t[1][q] /= l;
    cross(P->t[1], P->n, P->t[0]);
    memset(P->mid, 0, sizeof P->mid);
    for (int i = 0; i < P->m; i++)
        for (int q = 0; q < 3; q++) P->mid[q] += contacts[P->first + i].point[q] / P->m;
    double S = 0;
    for (int i = 0; i < P->m; i++) {
        const double *p = contacts[P->first + i].point;
        const double d[3] = {p[0] - P->mid[0], p[1] - P->mid[1], p[2] - P->mid[2]};
        double nd[3];
        cross(P->n, d, nd);
        S += dot(nd, nd);
    }
    /* coincident points: no twist */
    P->spread = S;
    P->twist = S > 0;
    P->size = sqrt(S / P->m);
    P->twist_share = 0;
    for (int i = 0; i < P->m && P->twist; i++) {
        const double *p = contacts[P->first + i].point;
        const double d[3] = {p[0] - P->mid[0], p[1] - P->mid[1], p[2] - P->mid[2]};
        double nd[3];
        cross(P->n, d, nd);
        P->twist_share = fmax(P->twist_share, sqrt(dot(nd, nd)) / S);
    }
    memset(P->lin, 0, sizeof P->lin);
    memset(P->angA, 0, sizeof P->angA);
    memset(P->angO, 0, sizeof P->angO);
    const double *ca = bodies[P->body].center, *co = P->other >= 0 ? bodies[P->other].center : NULL;
    for (int i = 0; i < P->m; i++) {
        const double *p = contacts[P->first + i].point;
        double B[3][3];
        patch_share(P, p, P->twist ? S : 0.0, B);
        const double ra[3] = {p[0] - ca[0], p[1] - ca[1], p[2] - ca[2]};
        for (int k = 0; k < 3; k++) {
            double a[3];
            cross(ra, B[k], a);
            for (int q = 0; q < 3; q++) P->lin[k][q] += B[k][q], P->angA[k][q] += a[q];
            if (co) {
                const double ro[3] = {p[0] - co[0], p[1] - co[1], p[2] - co[2]};
                cross(ro, B[k], a);
                for (int q = 0; q < 3; q++) P->angO[k][q] += a[q];
            }
        }
    }
    double K[9];
    const int nk = P->twist ? 3 : 2;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            if (a >= nk || b >= nk) {
                K[3 * a + b] = a == b;
                continue;
            }
            double u[3];
            mat_vec(Iinv + 9 * (size_t)P->body, P->angA[b], u);
            double v = dot(P->lin[a], P->lin[b]) / bodies[P->body].mass + dot(P->angA[a], u);
            if (P->other >= 0) {
                mat_vec(Iinv + 9 * (size_t)P->other, P->angO[b], u);
                v += dot(P->lin[a], P->lin[b]) / bodies[P->other].mass + dot(P->angO[a], u);
            }
            K[3 * a + b] = v;
        }
    /* the inverse by cofactors (K symmetric positive definite) */
    const double c00 = K[4] * K[8] - K[5] * K[7], c01 = K[5] * K[6] - K[3] * K[8],
                 c02 = K[3] * K[7] - K[4] * K[6];
    const double det = K[0] * c00 + K[1] * c01 + K[2] * c02;
    const double id = det > 0 ? 1 / det : 0.0;
    P->kinv[0] = c00 * id, P->kinv[1] = (K[2] * K[7] - K[1] * K[8]) * id;
    P->kinv[2] = (K[1] * K[5] - K[2] * K[4]) * id;
    P->kinv[3] = c01 * id, P->kinv[4] = (K[0] * K[8] - K[2] * K[6]) * id;
    P->kinv[5] = (K[2] * K[3] - K[0] * K[5]) * id;
    P->kinv[6] = c02 * id, P->kinv[7] = (K[1] * K[6] - K[0] * K[7]) * id;
    P->kinv[8] = (K[0] * K[4] - K[1] * K[3]) * id;
    if (!P->twist) P->kinv[2] = P->kinv[5] = P->kinv[6] = P->kinv[7] = P->kinv[8] = 0;
}

/* The friction limits of patch P: μ Σ jₙ for the force, μ Σ jₙ ρ for the
 * twist. */
static void patch_limits(const rigid_patch *P, const defo_rigid_contact *contacts, double *force,
                         double *twist) {
    double N = 0, T = 0;
    for (int i = 0; i < P->m; i++) {
        const defo_rigid_contact *k = &contacts[P->first + i];
        const double d[3] = {k->point[0] - P->mid[0], k->point[1] - P->mid[1],
                             k->point[2] - P->mid[2]};
        double nd[3];
        cross(P->n, d, nd);
        N += k->normal_impulse;
        T += k->normal_impulse * sqrt(dot(nd, nd));
    }
    const double mu = contacts[P->first].friction;
    *force = mu * N;
    *twist = P->twist ? mu * T : 0.0;
}

/* λ clamped to the limits. */
static void patch_clamp(double lambda[3], double force, double twist) {
    const double l = sqrt(lambda[0] * lambda[0] + lambda[1] * lambda[1]);
    if (l > force) {
        const double f = l > 0 ? force / l : 0.0;
        lambda[0] *= f, lambda[1] *= f;
    }
    lambda[2] = fmax(-twist, fmin(twist, lambda[2]));
}

/* The impulse dλ of patch P on its bodies (pass 0: velocities). */
static void patch_kick(defo_rigid_body *bodies, const rigid_patch *P, const double dl[3]) {
    defo_rigid_body *a = &bodies[P->body];
    for (int k = 0; k < 3; k++) {
        if (dl[k] == 0) continue;
        for (int q = 0; q < 3; q++) {
            a->velocity[q] += dl[k] * P->lin[k][q] / a->mass;
            a->momentum[q] += dl[k] * P->angA[k][q];
        }
        if (P->other < 0) continue;
        defo_rigid_body *o = &bodies[P->other];
        for (int q = 0; q < 3; q++) {
            o->velocity[q] -= dl[k] * P->lin[k][q] / o->mass;
            o->momentum[q] -= dl[k] * P->angO[k][q];
        }
    }
}

/* Each point's tangential impulse from λ (on its own body). */
static void patch_spread(const rigid_patch *P, defo_rigid_contact *contacts) {
    const double S = P->spread;
    for (int i = 0; i < P->m; i++) {
        defo_rigid_contact *k = &contacts[P->first + i];
        double B[3][3];
        patch_share(P, k->point, P->twist ? S : 0.0, B);
        const double sg = k->body == P->body ? 1.0 : -1.0;
        for (int q = 0; q < 3; q++)
            k->tangent_impulse[q] =
                sg * (P->lambda[0] * B[0][q] + P->lambda[1] * B[1][q] + P->lambda[2] * B[2][q]);
    }
}

/* λ from the points' tangential impulses (a warm start): the inverse of
 * patch_spread (Σᵢ dᵢ = 0). */
static void patch_gather(rigid_patch *P, const defo_rigid_contact *contacts) {
    memset(P->lambda, 0, sizeof P->lambda);
    for (int i = 0; i < P->m; i++) {
        const defo_rigid_contact *k = &contacts[P->first + i];
        const double sg = k->body == P->body ? 1.0 : -1.0;
        const double d[3] = {k->point[0] - P->mid[0], k->point[1] - P->mid[1],
                             k->point[2] - P->mid[2]};
        double nd[3];
        cross(P->n, d, nd);
        P->lambda[0] += sg * dot(k->tangent_impulse, P->t[0]);
        P->lambda[1] += sg * dot(k->tangent_impulse, P->t[1]);
        P->lambda[2] += sg * dot(k->tangent_impulse, nd);
    }
}

/* One Gauss–Seidel step of patch P's friction (pass 0); the largest change
 * of a point's tangential impulse. */
static double patch_friction(defo_rigid_body *bodies, const double *Iinv, rigid_patch *P,
                             const defo_rigid_contact *contacts) {
    double force, twist;
    patch_limits(P, contacts, &force, &twist);
    if (!(force > 0) && P->lambda[0] == 0 && P->lambda[1] == 0 && P->lambda[2] == 0) return 0;
    const defo_rigid_body *a = &bodies[P->body];
    double wa[3], u[3];
    mat_vec(Iinv + 9 * (size_t)P->body, a->momentum, wa);
    double vo[3] = {0, 0, 0}, wo[3] = {0, 0, 0};
    if (P->other >= 0) {
        vo[0] = bodies[P->other].velocity[0], vo[1] = bodies[P->other].velocity[1],
        vo[2] = bodies[P->other].velocity[2];
        mat_vec(Iinv + 9 * (size_t)P->other, bodies[P->other].momentum, wo);
    } else {
        memcpy(vo, contacts[P->first].obstacle_velocity, sizeof vo);
    }
    for (int k = 0; k < 3; k++)
        u[k] = dot(P->lin[k], a->velocity) + dot(P->angA[k], wa) - dot(P->lin[k], vo) -
               dot(P->angO[k], wo);
    double next[3];
    for (int k = 0; k < 3; k++) next[k] = P->lambda[k] - dot(P->kinv + 3 * k, u);
    patch_clamp(next, force, twist);
    const double dl[3] = {next[0] - P->lambda[0], next[1] - P->lambda[1], next[2] - P->lambda[2]};
    memcpy(P->lambda, next, sizeof next);
    patch_kick(bodies, P, dl);
    /* a point's change: |dλ_t|/m + |dλ₃| ρ/S ≤ this bound */
    return sqrt(dl[0] * dl[0] + dl[1] * dl[1]) / P->m + fabs(dl[2]) * P->twist_share;
}

/* The least-squares step of a block: for the symmetric positive
 * semidefinite n × n matrix A (row-major, n ≤ RIGID_BLOCK + 3), L the
 * Cholesky factor of A + εI (ε = RIGID_BLOCK_EPS × its largest diagonal),
 * x = (A + εI)⁻¹ A (A + εI)⁻¹ b: along an eigenvector of A of eigenvalue λ
 * that is λ/(λ + ε)² — 1/λ within 2ε/λ where λ ≫ ε (an exact step but for
 * that fraction, which the next visit removes), 0 along the impulses that
 * move nothing (λ = 0: a flat patch's corners pressing against each
 * other), so that rounding never drifts along them; the pseudo-inverse's
 * answer without an eigen-decomposition.  chol_reg: that factor, with
 * ε = eps_rel × A's largest diagonal (the islands' smaller one too); 0
 * when it fails. */
#define RIGID_BLOCK_EPS 1e-7
static int chol_reg(const double *A, int n, double eps_rel, double *L) {
    double top = 0;
    for (int i = 0; i < n; i++) top = fmax(top, A[n * i + i]);
    const double eps = eps_rel * top;
    for (int j = 0; j < n; j++) {
        double djj = A[n * j + j] + eps;
        for (int q = 0; q < j; q++) djj -= L[n * j + q] * L[n * j + q];
        if (!(djj > 0)) return 0;
        L[n * j + j] = sqrt(djj);
        for (int i = j + 1; i < n; i++) {
            double v = A[n * i + j];
            for (int q = 0; q < j; q++) v -= L[n * i + q] * L[n * j + q];
            L[n * i + j] = v / L[n * j + j];
            L[n * j + i] = 0;
        }
    }
    return 1;
}
static void chol_solve(const double *L, int n, double *x) {
    for (int i = 0; i < n; i++) {
        for (int q = 0; q < i; q++) x[i] -= L[n * i + q] * x[q];
        x[i] /= L[n * i + i];
    }
    for (int i = n - 1; i >= 0; i--) {
        for (int q = i + 1; q < n; q++) x[i] -= L[n * q + i] * x[q];
        x[i] /= L[n * i + i];
    }
}
static void block_step(const double *A, const double *L, int n, const double *b, double *x) {
    double y[RIGID_BLOCK + 3];
    memcpy(y, b, (size_t)n * sizeof(double));
    chol_solve(L, n, y);
    for (int i = 0; i < n; i++) {
        x[i] = 0;
        for (int j = 0; j < n; j++) x[i] += A[n * i + j] * y[j];
    }
    chol_solve(L, n, x);
}

/* The block of patch P (after patch_setup): its rows, their effective mass
 * and the factor of its least-squares step (block_step); P->block 0 when
 * it has too many points or the factor fails. */
static void patch_block_setup(rigid_patch *P, const defo_rigid_contact *contacts,
                              const defo_rigid_body *bodies, const double *Iinv) {
    P->block = P->m <= RIGID_BLOCK;
    if (!P->block) return;
    const int nf = contacts[P->first].friction > 0 ? (P->twist ? 3 : 2) : 0;
    P->rows = P->m + nf;
    const defo_rigid_body *a = &bodies[P->body], *o = P->other >= 0 ? &bodies[P->other] : NULL;
    for (int i = 0; i < P->m; i++) {
        const defo_rigid_contact *k = &contacts[P->first + i];
        const double sg = k->body == P->body ? 1.0 : -1.0;
        double *J = P->jac[i];
        for (int q = 0; q < 3; q++) J[q] = sg * k->normal[q];
        const double ra[3] = {k->point[0] - a->center[0], k->point[1] - a->center[1],
                              k->point[2] - a->center[2]};
        cross(ra, J, J + 3);
        memset(J + 6, 0, 3 * sizeof(double));
        if (o) {
            const double ro[3] = {k->point[0] - o->center[0], k->point[1] - o->center[1],
                                  k->point[2] - o->center[2]};
            cross(ro, J, J + 6);
        }
    }
    for (int f = 0; f < nf; f++) {
        memcpy(P->jac[P->m + f], P->lin[f], 3 * sizeof(double));
        memcpy(P->jac[P->m + f] + 3, P->angA[f], 3 * sizeof(double));
        memcpy(P->jac[P->m + f] + 6, P->angO[f], 3 * sizeof(double));
    }
    const int R = P->rows;
    const double im = 1 / a->mass + (o ? 1 / o->mass : 0.0);
    for (int r = 0; r < R; r++)
        for (int c = 0; c <= r; c++) {
            double ua[3], v = im * dot(P->jac[r], P->jac[c]);
            mat_vec(Iinv + 9 * (size_t)P->body, P->jac[c] + 3, ua);
            v += dot(P->jac[r] + 3, ua);
            if (o) {
                mat_vec(Iinv + 9 * (size_t)P->other, P->jac[c] + 6, ua);
                v += dot(P->jac[r] + 6, ua);
            }
            P->A[R * r + c] = P->A[R * c + r] = v;
        }
    P->block = chol_reg(P->A, R, RIGID_BLOCK_EPS, P->chol);
}

/* One visit of patch P as a block (pass 0): the normal impulses and the
 * friction of the patch solved together for the current motion of
 * everything else — a small linear complementarity problem, by its active
 * sets: every point pressing first, then without one point, two, …, none
 * (a fixed order); for a set, the rows of its points and the friction's
 * brought to their targets (a normal's: its bias; the friction's: no
 * slip) by the least-squares step (block_step: a flat patch's
 * corners are one more than the motions they hold), the others' impulses
 * to zero.  The first set whose rows meet their targets, whose impulses
 * stay ≥ 0 and whose points left out do not approach faster than allowed
 * is taken (1 returned); when its friction is beyond its limits (sliding),
 * or no set fits, nothing is done (0): the visit goes point by point.
 * change, largest as point_step's. */
static int patch_block(defo_rigid_body *bodies, const double *Iinv, rigid_patch *P,
                       defo_rigid_contact *contacts, double *change, double *largest) {
    enum { NB = RIGID_BLOCK + 3 };
    const int R = P->rows, m = P->m;
    defo_rigid_body *a = &bodies[P->body], *o = P->other >= 0 ? &bodies[P->other] : NULL;
    double wa[3], vo[3] = {0, 0, 0}, wo[3] = {0, 0, 0};
    mat_vec(Iinv + 9 * (size_t)P->body, a->momentum, wa);
    if (o) {
        memcpy(vo, o->velocity, sizeof vo);
        mat_vec(Iinv + 9 * (size_t)P->other, o->momentum, wo);
    } else {
        memcpy(vo, contacts[P->first].obstacle_velocity, sizeof vo);
    }
    const double dv[3] = {a->velocity[0] - vo[0], a->velocity[1] - vo[1], a->velocity[2] - vo[2]};
    double res[NB], cur[NB], top = 0, rmax = 0, amax = 0;
    for (int r = 0; r < R; r++) {
        const double *J = P->jac[r];
        const double u = dot(J, dv) + dot(J + 3, wa) - dot(J + 6, wo);
        res[r] = u - (r < m ? contacts[P->first + r].bias : 0.0);
        cur[r] = r < m ? contacts[P->first + r].normal_impulse : P->lambda[r - m];
        if (r < m) top = fmax(top, cur[r]);
        rmax = fmax(rmax, fabs(res[r]));
        amax = fmax(amax, P->A[R * r + r]);
    }
    /* a row meets its target within this speed: the solve's tolerance of
     * the patch's impulses, or RIGID_BLOCK_FIT of the residual (what the
     * least-squares step leaves) */
    const double tol = RIGID_BLOCK_TOL * amax * top + RIGID_BLOCK_FIT * rmax;
    const double mu = contacts[P->first].friction;
    double x[NB];
    int found = 0;
    for (int size = m; size >= 0 && !found; size--)
        for (int mask = (1 << m) - 1; mask >= 0 && !found; mask--) {
            if (__builtin_popcount((unsigned)mask) != size) continue;
            /* the rows of the set (the friction's while a point presses) */
            int rows[NB], nq = 0;
            for (int r = 0; r < R; r++)
                if ((r >= m && mask) || (r < m && (mask >> r & 1))) rows[nq++] = r;
            /* the points left out let go (with no point, the friction);
             * the others' step for the rest */
            double rhs[NB];
            for (int r = 0; r < R; r++)
                x[r] = r < m ? (mask >> r & 1 ? 0.0 : -cur[r]) : mask ? 0.0 : -cur[r];
            for (int q = 0; q < nq; q++) {
                rhs[q] = -res[rows[q]];
                for (int r = 0; r < R; r++) rhs[q] -= P->A[R * rows[q] + r] * x[r];
            }
            double Q[NB * NB], QL[NB * NB], xq[NB];
            if (nq == R) {
                block_step(P->A, P->chol, R, rhs, xq);
            } else {
                for (int i = 0; i < nq; i++)
                    for (int j = 0; j < nq; j++) Q[nq * i + j] = P->A[R * rows[i] + rows[j]];
                if (!chol_reg(Q, nq, RIGID_BLOCK_EPS, QL)) continue;
                block_step(Q, QL, nq, rhs, xq);
            }
            for (int i = 0; i < nq; i++) x[rows[i]] = xq[i];
            /* the residual after the step: the set's rows at their targets,
             * the points left out not approaching beyond theirs */
            int ok = 1;
            for (int r = 0; r < R && ok; r++) {
                double after = res[r];
                for (int c = 0; c < R; c++) after += P->A[R * r + c] * x[c];
                const int in = r < m ? mask >> r & 1 : mask != 0;
                if (r >= m)
                    ok = !in || fabs(after) <= tol;
                else
                    ok = in ? fabs(after) <= tol && cur[r] + x[r] >= 0 : after >= -tol;
            }
            if (!ok) continue;
            found = 1;
        }
    if (!found) return 0;
    /* a patch started cold: over-relaxed (RIGID_BLOCK_SOR) where every
     * impulse stays ≥ 0 */
    int over = P->cold;
    for (int r = 0; r < m && over; r++) over = cur[r] + RIGID_BLOCK_SOR * x[r] >= 0;
    if (over)
        for (int r = 0; r < R; r++) x[r] *= RIGID_BLOCK_SOR;
    /* the friction within its limits? */
    double N = 0, T = 0;
    for (int i = 0; i < m; i++) {
        const defo_rigid_contact *k = &contacts[P->first + i];
        const double d[3] = {k->point[0] - P->mid[0], k->point[1] - P->mid[1],
                             k->point[2] - P->mid[2]};
        double nd[3];
        cross(P->n, d, nd);
        const double nj = fmax(0.0, cur[i] + x[i]);
        N += nj, T += nj * sqrt(dot(nd, nd));
    }
    double next[3] = {P->lambda[0], P->lambda[1], P->lambda[2]};
    for (int f = 0; f < R - m; f++) next[f] += x[m + f];
    if (R > m && (sqrt(next[0] * next[0] + next[1] * next[1]) > mu * N ||
                  (P->twist && fabs(next[2]) > mu * T)))
        return 0;
    /* taken: the rows' impulses on both bodies at once */
    double lin[3] = {0, 0, 0}, angA[3] = {0, 0, 0}, angO[3] = {0, 0, 0};
    for (int r = 0; r < R; r++)
        for (int q = 0; q < 3; q++) {
            lin[q] += x[r] * P->jac[r][q];
            angA[q] += x[r] * P->jac[r][3 + q];
            angO[q] += x[r] * P->jac[r][6 + q];
        }
    for (int q = 0; q < 3; q++) {
        a->velocity[q] += lin[q] / a->mass;
        a->momentum[q] += angA[q];
        if (o) {
            o->velocity[q] -= lin[q] / o->mass;
            o->momentum[q] -= angO[q];
        }
    }
    for (int i = 0; i < m; i++) {
        defo_rigid_contact *k = &contacts[P->first + i];
        k->normal_impulse = fmax(0.0, cur[i] + x[i]);
        *change = fmax(*change, fabs(x[i]));
        *largest = fmax(*largest, k->normal_impulse);
    }
    if (R > m) {
        const double dl[3] = {next[0] - P->lambda[0], next[1] - P->lambda[1],
                              next[2] - P->lambda[2]};
        *change =
            fmax(*change, sqrt(dl[0] * dl[0] + dl[1] * dl[1]) / m + fabs(dl[2]) * P->twist_share);
        memcpy(P->lambda, next, sizeof next);
    }
    return 1;
}

/* One Gauss–Seidel visit of contact c in pass V->pass: its normal impulse,
 * then (pass 0, a point alone) its friction; the largest change and the
 * largest impulse so far updated, idle[c] set. */
static void point_step(const vel_view *V, defo_rigid_contact *contacts, int c, const double *geo,
                       const double *Iinv, const defo_rigid_contact_def *d, double dt,
                       unsigned char *idle, double *change, double *largest) {
    defo_rigid_body *bodies = V->bodies;
    defo_rigid_contact *k = &contacts[c];
    const defo_rigid_body *a = &bodies[k->body];
    const defo_rigid_body *o = k->other >= 0 ? &bodies[k->other] : NULL;
    const double *g = geo + 8 * (size_t)c, *ra = g, *ro = g + 3;
    const double mnodes = V->pass == 0 || k->node_push[0] ? g[7] : 0.0;
    const double mn = g[6] + mnodes;
    const double *Ia = Iinv + 9 * (size_t)k->body, *Io = o ? Iinv + 9 * (size_t)k->other : Iinv;
    double rel[3];
    const double *n = k->normal;
    relative(V, k, Ia, Io, ra, ro, rel);
    double target;
    double *acc;
    if (V->pass == 0) {
        target = k->bias;
        acc = &k->normal_impulse;
    } else {
        const double pen = -k->gap - d->slop;
        target = pen > 0 ? d->push_out * pen / dt : 0.0;
        acc = &k->push_impulse;
    }
    const double vn = dot(rel, n);
    double nj = *acc + (target - vn) / mn;
    if (nj < 0) nj = 0;
    const double dj = nj - *acc;
    *acc = nj;
    *change = fmax(*change, fabs(dj));
    *largest = fmax(*largest, nj);
    idle[c] = nj == 0 && dj == 0 &&
              (V->pass == 1 || k->patch > 0 || dot(k->tangent_impulse, k->tangent_impulse) == 0);
    if (idle[c]) return;
    const double J[3] = {dj * n[0], dj * n[1], dj * n[2]};
    view_kick(V, k->body, Ia, ra, J, 1);
    if (o) view_kick(V, k->other, Io, ro, J, -1);
    nodes_kick(V, k, J);
    if (V->pass == 1 || !(k->friction > 0) || k->patch > 0) return;
    /* Coulomb: the tangential slip to zero, the accumulated
         * tangential impulse within μ of the normal one */
    relative(V, k, Ia, Io, ra, ro, rel);
    const double vn2 = dot(rel, n);
    const double vt[3] = {rel[0] - vn2 * n[0], rel[1] - vn2 * n[1], rel[2] - vn2 * n[2]};
    const double s = sqrt(dot(vt, vt));
    double want[3];
    memcpy(want, k->tangent_impulse, sizeof want);
    if (s > 0) {
        const double t[3] = {vt[0] / s, vt[1] / s, vt[2] / s};
        const double mt = inv_mass_along(a->mass, Ia, ra, t) +
                          (o ? inv_mass_along(o->mass, Io, ro, t) : 0.0) + mnodes;
        for (int q = 0; q < 3; q++) want[q] -= s / mt * t[q];
    }
    const double lim = k->friction * k->normal_impulse, wl = sqrt(dot(want, want));
    if (wl > lim)
        for (int q = 0; q < 3; q++) want[q] *= lim / wl;
    double dJ[3];
    for (int q = 0; q < 3; q++) dJ[q] = want[q] - k->tangent_impulse[q];
    *change = fmax(*change, sqrt(dot(dJ, dJ)));
    memcpy(k->tangent_impulse, want, sizeof want);
    view_kick(V, k->body, Ia, ra, dJ, 1);
    if (o) view_kick(V, k->other, Io, ro, dJ, -1);
    nodes_kick(V, k, dJ);
}

/* ------------------------------------------------------ island steps */
/* Gauss–Seidel carries an impulse one contact a visit: down a stack the
 * weight of the top reaches the ground a body a sweep, and a heavy body on
 * a light one converges at a rate near 1 (0.96 a sweep on a stack of three
 * boxes of 1000, 1500 and 2000 kg/m³, the heaviest on top: 300 sweeps do
 * not reach 1e-9).  An island step solves at once the contacts that press
 * in each group of bodies they join (an island): every pressing point's
 * normal and the friction of those that stick (a lone point's two
 * tangents, a patch's force and twist) brought to their targets for the
 * current motion of everything else — the subspace step of projected
 * Gauss–Seidel with subspace minimisation (Silcowitz, Niebe and Erleben
 * 2010) — by the regularised least squares of block_step on the island's
 * effective mass J M⁻¹ Jᵀ (dense; the redundant corners of flat patches
 * are its null space, a deformable obstacle's nodes couple the rows that
 * share them through their lumped masses), refined RIGID_ISLAND_REFINE
 * times.  Only where the sweeps have found the active set and the answer
 * is unique in the velocities: an island is left to the sweeps when one of
 * its points slides (its friction at its limit: the sweeps decide the
 * friction's direction), or bounces (a target above zero: restitution asks
 * each point of an impact for its own speed, which no motion need meet, and
 * how an impact's impulse shares out among redundant points is what the
 * hybrid's fracture reads as nodal loads — the least-squares share cracked
 * a falling plate into slivers where the sweeps' did not); and a step is
 * taken only where every normal impulse stays ≥ 0, every sticking friction
 * within its limits, every row at its target within RIGID_ISLAND_FIT, and
 * no contact of its bodies that does not press is made to approach beyond
 * its target.  The sweeps go on from there and decide convergence as
 * before: a step moves the impulses to where the sweeps would converge; a
 * pass that runs out of sweeps is counted as before.  Islands of more than
 * RIGID_ISLAND_ROWS rows are left to the sweeps.  Tried after sweep
 * RIGID_ISLAND_FIRST and every RIGID_FULL_SWEEP sweeps after it. */
#define RIGID_ISLAND_ROWS   96
#define RIGID_ISLAND_FIRST  4
#define RIGID_ISLAND_REFINE 2
#define RIGID_ISLAND_EPS    1e-11 /* the regularisation, of the largest diagonal */
/* a row meets its target within this fraction of the island's largest
 * speed change asked */
#define RIGID_ISLAND_FIT 1e-6
/* a friction impulse within this fraction of its limit is sliding */
#define RIGID_ISLAND_STICK 1e-6
/* an island's dense scratch [doubles]: its matrix, factor, three vectors */
#define RIGID_ISLAND_DENSE (2 * RIGID_ISLAND_ROWS * RIGID_ISLAND_ROWS + 3 * RIGID_ISLAND_ROWS)

/* A row of an island: an impulse x along it acts on body a (v += x lin/M,
 * L += x angA) and oppositely on o (−lin, −angO) or, for a deformable
 * obstacle, on contact idx's nodes (vₐ −= x cₐ lin/mₐ); its velocity
 * lin·(v_a − v_o) + angA·ω_a − angO·ω_o less the obstacle's (or nodes')
 * along lin.  kind: 0 the normal of contact idx, 1 the friction component
 * f of patch idx, 2 the tangent lin of contact idx. */
typedef struct island_row {
    int a, o, kind, idx, f;
    double lin[3], angA[3], angO[3];
    double target, cur;
} island_row;

static int uf_find(int *parent, int i) {
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}
static void uf_join(int *parent, int i, int j) {
    const int x = uf_find(parent, i), y = uf_find(parent, j);
    if (x != y) parent[x > y ? x : y] = x < y ? x : y;
}

/* The row's velocity now. */
static double row_velocity(const island_row *R, const defo_rigid_body *bodies, const double *Iinv,
                           const defo_rigid_contact *contacts, const rigid_patch *patches) {
    const defo_rigid_body *a = &bodies[R->a];
    double w[3];
    mat_vec(Iinv + 9 * (size_t)R->a, a->momentum, w);
    double u = dot(R->lin, a->velocity) + dot(R->angA, w);
    if (R->o >= 0) {
        const defo_rigid_body *o = &bodies[R->o];
        mat_vec(Iinv + 9 * (size_t)R->o, o->momentum, w);
        return u - dot(R->lin, o->velocity) - dot(R->angO, w);
    }
    const defo_rigid_contact *k =
        R->kind == 1 ? &contacts[patches[R->idx].first] : &contacts[R->idx];
    if (k->nodes == 0) return u - dot(R->lin, k->obstacle_velocity);
    for (int q = 0; q < k->nodes; q++) u -= k->weight[q] * dot(R->lin, k->node_velocity[q]);
    return u;
}

/* The impulse x along row R. */
static void row_kick(const island_row *R, defo_rigid_body *bodies, defo_rigid_contact *contacts,
                     double x) {
    defo_rigid_body *a = &bodies[R->a];
    for (int q = 0; q < 3; q++) {
        a->velocity[q] += x * R->lin[q] / a->mass;
        a->momentum[q] += x * R->angA[q];
    }
    if (R->o >= 0) {
        defo_rigid_body *o = &bodies[R->o];
        for (int q = 0; q < 3; q++) {
            o->velocity[q] -= x * R->lin[q] / o->mass;
            o->momentum[q] -= x * R->angO[q];
        }
    } else if (R->kind != 1) {
        defo_rigid_contact *k = &contacts[R->idx];
        for (int q = 0; q < k->nodes; q++) {
            const double s = x * k->weight[q] * k->inv_mass[q];
            for (int e = 0; e < 3; e++) k->node_velocity[q][e] -= s * R->lin[e];
        }
    }
}

/* (J M⁻¹ Jᵀ) between rows R and S. */
static double row_couple(const island_row *R, const island_row *S, const defo_rigid_body *bodies,
                         const double *Iinv, const defo_rigid_contact *contacts) {
    double v = 0, u[3];
    const int rb[2] = {R->a, R->o}, sb[2] = {S->a, S->o};
    const double *ra[2] = {R->angA, R->angO}, *sa[2] = {S->angA, S->angO};
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            if (rb[i] < 0 || rb[i] != sb[j]) continue;
            mat_vec(Iinv + 9 * (size_t)rb[i], sa[j], u);
            v += (i == j ? 1.0 : -1.0) * (dot(R->lin, S->lin) / bodies[rb[i]].mass + dot(ra[i], u));
        }
    if (R->o < 0 && S->o < 0 && R->kind != 1 && S->kind != 1) {
        const defo_rigid_contact *p = &contacts[R->idx], *q = &contacts[S->idx];
        for (int i = 0; i < p->nodes; i++)
            for (int j = 0; j < q->nodes; j++)
                if (p->node_velocity[i] == q->node_velocity[j])
                    v += p->weight[i] * q->weight[j] * p->inv_mass[i] * dot(R->lin, S->lin);
    }
    return v;
}

/* A lone point's tangent directions t₁, t₂ (as patch_setup's). */
static void tangents(const double n[3], double t[2][3]) {
    int ax = 0;
    for (int q = 1; q < 3; q++)
        if (fabs(n[q]) < fabs(n[ax])) ax = q;
    double e[3] = {0, 0, 0};
    e[ax] = 1;
    cross(n, e, t[1]);
    const double l = sqrt(dot(t[1], t[1]));
    for (int q = 0; q < 3; q++) t[1][q] /= l;
    cross(t[1], n, t[0]);
}

/* The rows of the contacts that press, into rows (returns how many);
 * parent: the islands (union–find over the bodies), skip[root] set
 * for an island with a friction at its limit or a bounce (above). */
static int island_rows(const defo_rigid_contact *contacts, int num_contacts,
                       const rigid_patch *patches, int num_patches, const int *patch_of,
                       const double *geo, int count, int *parent, unsigned char *skip,
                       island_row *rows) {
    int n = 0;
    for (int i = 0; i < count; i++) parent[i] = i, skip[i] = 0;
    for (int c = 0; c < num_contacts; c++) {
        const defo_rigid_contact *k = &contacts[c];
        if (!(k->normal_impulse > 0)) continue;
        const double *g = geo + 8 * (size_t)c;
        island_row *R = &rows[n++];
        memset(R, 0, sizeof *R);
        R->a = k->body, R->o = k->other, R->idx = c;
        memcpy(R->lin, k->normal, sizeof R->lin);
        cross(g, k->normal, R->angA);
        if (k->other >= 0) {
            cross(g + 3, k->normal, R->angO);
            uf_join(parent, k->body, k->other);
        }
        R->target = k->bias;
        R->cur = k->normal_impulse;
        if (k->bias > 0) skip[k->body] = 1; /* a bounce */
        if (patch_of[c] >= 0 || !(k->friction > 0)) continue;
        const double tl = sqrt(dot(k->tangent_impulse, k->tangent_impulse));
        if (!(tl < (1 - RIGID_ISLAND_STICK) * k->friction * k->normal_impulse)) {
            skip[k->body] = 1;
            continue;
        }
        double t[2][3];
        tangents(k->normal, t);
        for (int f = 0; f < 2; f++) {
            island_row *T = &rows[n++];
            *T = rows[n - 2 - f];
            T->kind = 2, T->f = f;
            memcpy(T->lin, t[f], sizeof T->lin);
            cross(g, t[f], T->angA);
            if (k->other >= 0) cross(g + 3, t[f], T->angO);
            T->target = 0;
            T->cur = dot(k->tangent_impulse, t[f]);
        }
    }
    for (int p = 0; p < num_patches; p++) {
        const rigid_patch *P = &patches[p];
        double force, twist;
        patch_limits(P, contacts, &force, &twist);
        if (!(force > 0)) continue;
        const double lt = sqrt(P->lambda[0] * P->lambda[0] + P->lambda[1] * P->lambda[1]);
        if (!(lt < (1 - RIGID_ISLAND_STICK) * force) ||
            (P->twist && !(fabs(P->lambda[2]) < (1 - RIGID_ISLAND_STICK) * twist))) {
            skip[P->body] = 1;
            continue;
        }
        for (int f = 0; f < (P->twist ? 3 : 2); f++) {
            island_row *T = &rows[n++];
            memset(T, 0, sizeof *T);
            T->a = P->body, T->o = P->other, T->kind = 1, T->idx = p, T->f = f;
            memcpy(T->lin, P->lin[f], sizeof T->lin);
            memcpy(T->angA, P->angA[f], sizeof T->angA);
            memcpy(T->angO, P->angO[f], sizeof T->angO);
            T->cur = P->lambda[f];
        }
    }
    for (int i = 0; i < count; i++)
        if (skip[i]) skip[uf_find(parent, i)] = 1;
    return n;
}

/* 1 when the step x of island isl (its rows ix) leaves every contact of
 * its bodies that does not press (no normal impulse) approaching no faster
 * than its target allows, within fit: the bodies' changes of velocity
 * (delta: 6 per body) through each such contact's arms. */
static int island_apart_kept(const defo_rigid_body *bodies, int count,
                             const defo_rigid_contact *contacts, int num_contacts,
                             const double *geo, const double *Iinv, int *parent, int isl,
                             const island_row *rows, const int *ix, int m, const double *x,
                             double fit, double *delta) {
    memset(delta, 0, 6 * (size_t)count * sizeof(double));
    for (int i = 0; i < m; i++) {
        const island_row *R = &rows[ix[i]];
        for (int q = 0; q < 3; q++) {
            delta[6 * R->a + q] += x[i] * R->lin[q] / bodies[R->a].mass;
            delta[6 * R->a + 3 + q] += x[i] * R->angA[q];
            if (R->o < 0) continue;
            delta[6 * R->o + q] -= x[i] * R->lin[q] / bodies[R->o].mass;
            delta[6 * R->o + 3 + q] -= x[i] * R->angO[q];
        }
    }
    for (int c = 0; c < num_contacts; c++) {
        const defo_rigid_contact *k = &contacts[c];
        if (k->normal_impulse > 0) continue;
        const int in_a = uf_find(parent, k->body) == isl;
        const int in_o = k->other >= 0 && uf_find(parent, k->other) == isl;
        if (!in_a && !in_o) continue;
        const double *g = geo + 8 * (size_t)c;
        double dvn = 0, w[3], t[3];
        mat_vec(Iinv + 9 * (size_t)k->body, delta + 6 * k->body + 3, w);
        cross(w, g, t);
        for (int q = 0; q < 3; q++) dvn += k->normal[q] * (delta[6 * k->body + q] + t[q]);
        if (k->other >= 0) {
            mat_vec(Iinv + 9 * (size_t)k->other, delta + 6 * k->other + 3, w);
            cross(w, g + 3, t);
            for (int q = 0; q < 3; q++) dvn -= k->normal[q] * (delta[6 * k->other + q] + t[q]);
        }
        if (!(dvn < 0)) continue;
        /* its normal speed now */
        const defo_rigid_body *a = &bodies[k->body];
        double va[3];
        mat_vec(Iinv + 9 * (size_t)k->body, a->momentum, w);
        cross(w, g, t);
        for (int q = 0; q < 3; q++) va[q] = a->velocity[q] + t[q];
        if (k->other >= 0) {
            const defo_rigid_body *o = &bodies[k->other];
            mat_vec(Iinv + 9 * (size_t)k->other, o->momentum, w);
            cross(w, g + 3, t);
            for (int q = 0; q < 3; q++) va[q] -= o->velocity[q] + t[q];
        } else if (k->nodes > 0) {
            for (int e = 0; e < k->nodes; e++)
                for (int q = 0; q < 3; q++) va[q] -= k->weight[e] * k->node_velocity[e][q];
        } else {
            for (int q = 0; q < 3; q++) va[q] -= k->obstacle_velocity[q];
        }
        if (dot(va, k->normal) + dvn < k->bias - fit) return 0;
    }
    return 1;
}

/* The island steps (above); how many islands took theirs.  The scratch:
 * rows (3 per contact and per patch), parent (count + 1), skip
 * (count), order (as rows), dense (RIGID_ISLAND_DENSE). */
static int island_steps(defo_rigid_body *bodies, int count, defo_rigid_contact *contacts,
                        int num_contacts, rigid_patch *patches, int num_patches,
                        const int *patch_of, const double *geo, const double *Iinv, int *parent,
                        unsigned char *skip, int *order, island_row *rows, double *dense,
                        double *delta) {
    const int n = island_rows(contacts, num_contacts, patches, num_patches, patch_of, geo, count,
                              parent, skip, rows);
    if (n == 0) return 0;
    /* the rows island by island (a stable counting sort by root) */
    int *start = parent + count + 1; /* count + 1 more ints after parent */
    for (int i = 0; i <= count; i++) start[i] = 0;
    for (int r = 0; r < n; r++) start[uf_find(parent, rows[r].a) + 1]++;
    for (int i = 0; i < count; i++) start[i + 1] += start[i];
    for (int r = 0; r < n; r++) order[start[uf_find(parent, rows[r].a)]++] = r;
    for (int i = count; i > 0; i--) start[i] = start[i - 1];
    start[0] = 0;
    enum { NI = RIGID_ISLAND_ROWS };
    double *A = dense, *L = A + NI * NI, *x = L + NI * NI, *b = x + NI, *y = b + NI;
    int taken = 0;
    for (int isl = 0; isl < count; isl++) {
        const int first = start[isl], m = start[isl + 1] - first;
        if (m == 0 || m > NI || skip[isl]) continue;
        const int *ix = order + first;
        for (int i = 0; i < m; i++)
            for (int j = 0; j <= i; j++)
                A[m * i + j] = A[m * j + i] =
                    row_couple(&rows[ix[i]], &rows[ix[j]], bodies, Iinv, contacts);
        if (!chol_reg(A, m, RIGID_ISLAND_EPS, L)) continue;
        /* x = (A + εI)⁻¹ A (A + εI)⁻¹ b (block_step), refined on what is
         * left: b = target − u − A x */
        for (int i = 0; i < m; i++) x[i] = 0;
        for (int pass = 0; pass <= RIGID_ISLAND_REFINE; pass++) {
            for (int i = 0; i < m; i++) {
                const island_row *R = &rows[ix[i]];
                y[i] = R->target - row_velocity(R, bodies, Iinv, contacts, patches);
                for (int j = 0; j < m; j++) y[i] -= A[m * i + j] * x[j];
            }
            chol_solve(L, m, y);
            for (int i = 0; i < m; i++) {
                b[i] = 0;
                for (int j = 0; j < m; j++) b[i] += A[m * i + j] * y[j];
            }
            chol_solve(L, m, b);
            for (int i = 0; i < m; i++) x[i] += b[i];
        }
        /* feasible: every normal ≥ 0, every friction within its limits */
        int ok = 1;
        for (int i = 0; i < m && ok; i++) {
            const island_row *R = &rows[ix[i]];
            if (R->kind == 0) {
                ok = R->cur + x[i] >= 0;
            } else if (R->kind == 2 && R->f == 0) {
                /* a lone point's normal and tangents: rows i − 1 … i + 1 */
                const double t0 = R->cur + x[i], t1 = rows[ix[i + 1]].cur + x[i + 1];
                ok = sqrt(t0 * t0 + t1 * t1) <=
                     contacts[R->idx].friction * (rows[ix[i - 1]].cur + x[i - 1]);
            } else if (R->kind == 1 && R->f == 0) {
                const rigid_patch *P = &patches[R->idx];
                double N = 0, T = 0, lam[3] = {0, 0, 0};
                for (int j = 0; j < m; j++) {
                    const island_row *S = &rows[ix[j]];
                    if (S->kind == 0 && patch_of[S->idx] == R->idx) {
                        const double jn = S->cur + x[j];
                        const double *p = contacts[S->idx].point;
                        const double d[3] = {p[0] - P->mid[0], p[1] - P->mid[1], p[2] - P->mid[2]};
                        double nd[3];
                        cross(P->n, d, nd);
                        N += jn, T += jn * sqrt(dot(nd, nd));
                    } else if (S->kind == 1 && S->idx == R->idx) {
                        lam[S->f] = S->cur + x[j];
                    }
                }
                const double mu = contacts[P->first].friction;
                ok = sqrt(lam[0] * lam[0] + lam[1] * lam[1]) <= mu * N &&
                     (!P->twist || fabs(lam[2]) <= mu * T);
            }
        }
        /* the rows at their targets (not a least-squares compromise of
         * targets no motion meets), and no contact that does not press
         * approaching beyond its target after the step (the sweeps would
         * have to undo it) */
        double top = 0;
        for (int i = 0; i < m; i++) {
            const island_row *R = &rows[ix[i]];
            b[i] = R->target - row_velocity(R, bodies, Iinv, contacts, patches);
            top = fmax(top, fabs(b[i]));
        }
        const double fit = RIGID_ISLAND_FIT * top;
        for (int i = 0; i < m && ok; i++) {
            double r = -b[i];
            for (int j = 0; j < m; j++) r += A[m * i + j] * x[j];
            ok = fabs(r) <= fit;
        }
        if (ok)
            ok = island_apart_kept(bodies, count, contacts, num_contacts, geo, Iinv, parent, isl,
                                   rows, ix, m, x, fit, delta);
        if (!ok) continue;
        taken++;
        for (int i = 0; i < m; i++) {
            const island_row *R = &rows[ix[i]];
            row_kick(R, bodies, contacts, x[i]);
            if (R->kind == 0)
                contacts[R->idx].normal_impulse = R->cur + x[i];
            else if (R->kind == 1)
                patches[R->idx].lambda[R->f] = R->cur + x[i];
            else
                for (int q = 0; q < 3; q++) contacts[R->idx].tangent_impulse[q] += x[i] * R->lin[q];
        }
    }
    return taken;
}

/* The patches of contacts[0, n): runs of one patch number > 0. */
static int count_patches(const defo_rigid_contact *contacts, int n) {
    int np = 0;
    for (int c = 0; c < n; c++)
        np += contacts[c].patch > 0 && (c == 0 || contacts[c - 1].patch != contacts[c].patch);
    return np;
}

/* The scratch of a solve: the patches, the inverse world inertias (9 per
 * body), per contact its geometry (8 doubles), patch and idle flag. */
static size_t solve_bytes(int count, int num_patches, int num_contacts) {
    const size_t rows = 3 * ((size_t)num_contacts + (size_t)num_patches);
    return (size_t)num_patches * sizeof(rigid_patch) +
           (15 * (size_t)count + 8 * (size_t)num_contacts + RIGID_ISLAND_DENSE) * sizeof(double) +
           rows * (sizeof(island_row) + sizeof(int)) + (2 * (size_t)count + 2) * sizeof(int) +
           (size_t)num_contacts * (sizeof(int) + 1) + (size_t)count + 1;
}

size_t defo_rigid_solve_bytes(int count, const defo_rigid_contact *contacts, int num_contacts) {
    if (count < 0 || num_contacts < 0 || (num_contacts > 0 && !contacts)) return 0;
    return solve_bytes(count, count_patches(contacts, num_contacts), num_contacts);
}

defo_status defo_rigid_solve_contacts(defo_rigid_body *bodies, int count,
                                      defo_rigid_contact *contacts, int num_contacts,
                                      const defo_rigid_contact_def *def, double dt, double *pushes,
                                      defo_rigid_solve_stats *stats) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!bodies || count < 0 || (num_contacts > 0 && !contacts) || !(dt > 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "rigid contacts: bad arguments");
    const defo_rigid_contact_def d = def ? *def : defo_default_rigid_contact_def();
    if (!(d.tolerance >= 0) || !isfinite(d.tolerance) || !(d.push_tolerance >= 0) ||
        !isfinite(d.push_tolerance))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "rigid contacts: tolerances %g, %g are not finite and >= 0", d.tolerance,
                          d.push_tolerance);
    for (int c = 0; c < num_contacts; c++) {
        defo_rigid_contact *k = &contacts[c];
        if (k->body < 0 || k->body >= count || k->other < -1 || k->other >= count ||
            k->other == k->body)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "rigid contacts: contact %d names bodies %d and %d of %d", c, k->body,
                              k->other, count);
        if (k->nodes < 0 || k->nodes > 3 || (k->nodes > 0 && k->other != -1))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "rigid contacts: contact %d has %d deformable nodes", c, k->nodes);
        for (int a = 0; a < k->nodes; a++)
            if (!k->node_velocity[a] || !(k->inv_mass[a] >= 0) || !(k->weight[a] >= 0))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "rigid contacts: contact %d: deformable node %d is not set", c,
                                  a);
        if (k->patch < 0 || (k->patch > 0 && k->nodes > 0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "rigid contacts: contact %d: patch %d (>= 0, none with deformable "
                              "nodes)",
                              c, k->patch);
        if (c > 0 && k->patch > 0 && contacts[c - 1].patch == k->patch) {
            /* one patch: one pair of bodies, one μ, one obstacle velocity,
             * normals that agree */
            const defo_rigid_contact *f = &contacts[c - 1];
            const int same = f->body == k->body && f->other == k->other;
            const int swap = f->other >= 0 && f->body == k->other && f->other == k->body;
            if ((!same && !swap) || f->friction != k->friction ||
                (k->other < 0 &&
                 memcmp(f->obstacle_velocity, k->obstacle_velocity, sizeof k->normal)) ||
                (same ? 1.0 : -1.0) * dot(f->normal, k->normal) < 0.9)
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "rigid contacts: contacts %d and %d of patch %d are not one "
                                  "patch (bodies, friction, obstacle velocity, normals)",
                                  c - 1, c, k->patch);
        }
        memset(k->impulse, 0, sizeof k->impulse);
        k->push_impulse = 0;
        if (!d.warm_start || !(k->normal_impulse > 0) || !isfinite(k->normal_impulse)) {
            memset(k->tangent_impulse, 0, sizeof k->tangent_impulse);
            k->normal_impulse = 0;
            continue;
        }
        if (k->patch > 0) continue; /* clamped with its patch, below */
        /* a warm start: the tangential part in the tangent plane, within
         * the cone */
        const double tn = dot(k->tangent_impulse, k->normal);
        for (int q = 0; q < 3; q++) k->tangent_impulse[q] -= tn * k->normal[q];
        const double tl = sqrt(dot(k->tangent_impulse, k->tangent_impulse)),
                     lim = k->friction * k->normal_impulse;
        if (!(tl <= lim) || !isfinite(tl))
            for (int q = 0; q < 3; q++)
                k->tangent_impulse[q] =
                    tl > 0 && isfinite(tl) ? k->tangent_impulse[q] * lim / tl : 0.0;
    }
    if (pushes) memset(pushes, 0, 6 * (size_t)count * sizeof(double));
    if (stats) stats->converged[0] = stats->converged[1] = 1;
    if (num_contacts == 0) return DEFO_OK;
    /* what the sweeps do not change: the inverse world inertias, and per
     * contact its arms and effective normal mass */
    const int num_patches = count_patches(contacts, num_contacts);
    /* the scratch: the caller's workspace, or allocated for the call */
    const size_t bytes = solve_bytes(count, num_patches, num_contacts);
    void *own = d.workspace ? NULL : defo_malloc(bytes);
    unsigned char *ws = d.workspace ? d.workspace : own;
    if (!ws) return defo_error_oom("rigid contacts", bytes);
    rigid_patch *patches = (rigid_patch *)ws;
    double *Iinv = (double *)(patches + num_patches);
    /* per contact: its patch, −1 none */
    /* the island steps' scratch */
    double *dense = Iinv + 9 * (size_t)count + 8 * (size_t)num_contacts;
    const size_t num_rows = 3 * ((size_t)num_contacts + (size_t)num_patches);
    double *delta = dense + RIGID_ISLAND_DENSE; /* 6 per body */
    island_row *irows = (island_row *)(delta + 6 * (size_t)count);
    int *parent = (int *)(irows + num_rows), *order = parent + 2 * (size_t)count + 2;
    int *patch_of = order + num_rows;
    /* ra, ro, the bodies' inverse effective normal mass, a deformable
     * obstacle's inverse mass */
    double *geo = Iinv + 9 * (size_t)count;
    /* per contact: idle (no impulse, none taken at its last visit) */
    unsigned char *idle = (unsigned char *)(patch_of + num_contacts);
    unsigned char *skip = idle + num_contacts; /* per body: its island is skipped */
    for (int i = 0; i < count; i++)
        defo_rigid_world_inertia(&bodies[i], NULL, Iinv + 9 * (size_t)i);
    for (int c = 0; c < num_contacts; c++) {
        const defo_rigid_contact *k = &contacts[c];
        double Ia[9], Io[9], *g = geo + 8 * (size_t)c;
        arms(k, bodies, Iinv, Ia, Io, g, g + 3);
        g[6] = inv_mass_along(bodies[k->body].mass, Ia, g, k->normal) +
               (k->other >= 0 ? inv_mass_along(bodies[k->other].mass, Io, g + 3, k->normal) : 0.0);
        g[7] = nodes_inv_mass(k);
    }
    for (int c = 0, p = -1; c < num_contacts; c++) {
        const defo_rigid_contact *k = &contacts[c];
        if (k->patch > 0 && (c == 0 || contacts[c - 1].patch != k->patch)) {
            rigid_patch *P = &patches[++p];
            P->first = c, P->m = 0, P->body = k->body, P->other = k->other;
        }
        patch_of[c] = k->patch > 0 ? p : -1;
        if (k->patch > 0) patches[p].m++;
    }
    for (int p = 0; p < num_patches; p++) {
        rigid_patch *P = &patches[p];
        patch_setup(P, contacts, bodies, Iinv);
        patch_block_setup(P, contacts, bodies, Iinv);
        /* touching: every point within RIGID_TOUCHING of the patch's size
         * of its surface */
        P->resting = 1;
        for (int i = 0; i < P->m; i++)
            P->resting = P->resting && fabs(contacts[P->first + i].gap) <= RIGID_TOUCHING * P->size;
        /* a warm start: λ from the points' impulses, within the limits */
        P->cold = 1;
        for (int i = 0; i < P->m; i++)
            P->cold = P->cold && contacts[P->first + i].normal_impulse == 0;
        patch_gather(P, contacts);
        double force, twist;
        patch_limits(P, contacts, &force, &twist);
        patch_clamp(P->lambda, force, twist);
        patch_spread(P, contacts);
    }
    vel_view V = {bodies, pushes, 0};
    double scale = 0; /* the velocity pass's largest impulse */
    /* the normal speed each contact aims at: a gap may close within the
     * step and no more; a touching point stops, or bounces back with e
     * times its approach speed when that is above the threshold */
    for (int c = 0; c < num_contacts; c++) {
        defo_rigid_contact *k = &contacts[c];
        double Ia[9], Io[9], ra[3], ro[3], rel[3];
        arms(k, bodies, Iinv, Ia, Io, ra, ro);
        relative(&V, k, Ia, Io, ra, ro, rel);
        const double vn = dot(rel, k->normal);
        const int p = patch_of[c];
        const double gap = p >= 0 && patches[p].resting ? 0.0 : k->gap;
        k->bias = gap > 0 ? -gap / dt : 0.0;
        if (vn < -d.bounce_speed && vn * dt <= -fmax(gap, 0.0))
            k->bias = fmax(k->bias, -d.restitution * vn);
    }
    if (d.warm_start)
        for (int c = 0; c < num_contacts; c++) {
            defo_rigid_contact *k = &contacts[c];
            if (!(k->normal_impulse > 0)) continue;
            const double *g = geo + 8 * (size_t)c;
            const double *Ia = Iinv + 9 * (size_t)k->body,
                         *Io = k->other >= 0 ? Iinv + 9 * (size_t)k->other : Iinv;
            double J[3];
            for (int q = 0; q < 3; q++)
                J[q] = k->normal_impulse * k->normal[q] + k->tangent_impulse[q];
            view_kick(&V, k->body, Ia, g, J, 1);
            if (k->other >= 0) view_kick(&V, k->other, Io, g + 3, J, -1);
            nodes_kick(&V, k, J);
        }
    for (V.pass = 0; V.pass < (pushes ? 2 : 1); V.pass++) {
        int converged = 0, sweeps = 0, full = 1;
        double last = 0;
        memset(idle, 0, (size_t)num_contacts);
        for (int it = 0; it < d.iterations && !converged; it++) {
            /* converged: no impulse moved by more than the tolerance times
             * the largest (the push-out's: or the velocity pass's largest)
             * in a full sweep.  Between full sweeps (every RIGID_FULL_SWEEP,
             * and after a sweep that met the tolerance) the idle contacts
             * — most of a pile's, the points near a surface that do not
             * touch — are passed over: they took nothing at their last
             * visit and a full sweep looks at them again */
            double change = 0, largest = V.pass == 1 ? scale : 0.0;
            for (int ci = 0; ci < num_contacts; ci++) {
                /* Gauss–Seidel in the contacts' order, every sweep forward:
                 * sweeping forward and back in turn was measured worse (a
                 * stack of three drifted 3e-4 m instead of 2.2e-5 m, and
                 * fragments ended up to 6 vertices inside each other) */
                const int p = patch_of[ci];
                if (V.pass == 0 && p >= 0) {
                    /* a patch at its last point: as one block, or its
                     * points' normals then its friction */
                    rigid_patch *P = &patches[p];
                    if (ci < P->first + P->m - 1) continue;
                    if (P->block && patch_block(bodies, Iinv, P, contacts, &change, &largest))
                        continue;
                    for (int c = P->first; c <= ci; c++)
                        point_step(&V, contacts, c, geo, Iinv, &d, dt, idle, &change, &largest);
                    change = fmax(change, patch_friction(bodies, Iinv, P, contacts));
                    continue;
                }
                if (full || !idle[ci])
                    point_step(&V, contacts, ci, geo, Iinv, &d, dt, idle, &change, &largest);
            }
            sweeps++;
            const int met = change <= (V.pass == 0 ? d.tolerance : d.push_tolerance) * largest;
            converged = met && full;
            full = met || (it + 1) % RIGID_FULL_SWEEP == 0;
            last = largest > 0 ? change / largest : 0.0;
            if (V.pass == 0) scale = largest;
            /* the island steps (pass 0): the sweep after one is a full one */
            if (V.pass == 0 && !converged && it + 1 >= RIGID_ISLAND_FIRST &&
                (it + 1 - RIGID_ISLAND_FIRST) % RIGID_FULL_SWEEP == 0 &&
                island_steps(bodies, count, contacts, num_contacts, patches, num_patches, patch_of,
                             geo, Iinv, parent, skip, order, irows, dense, delta) > 0)
                full = 1;
        }
        if (stats) {
            stats->sweeps[V.pass] = sweeps;
            stats->converged[V.pass] = converged || d.iterations <= 0;
            stats->change[V.pass] = last;
        }
    }
    for (int p = 0; p < num_patches; p++) patch_spread(&patches[p], contacts);
    defo_free(own);
    for (int c = 0; c < num_contacts; c++) {
        defo_rigid_contact *k = &contacts[c];
        for (int q = 0; q < 3; q++)
            k->impulse[q] = k->normal_impulse * k->normal[q] + k->tangent_impulse[q];
    }
    for (int i = 0; i < count; i++)
        for (int q = 0; q < 3; q++)
            if (!isfinite(bodies[i].velocity[q]) || !isfinite(bodies[i].momentum[q]))
                return defo_error(DEFO_ERR_NUMERICAL, "rigid contacts: body %d: non-finite", i);
    return DEFO_OK;
}

/* Move body b by the pseudo-velocity (v, ω) over dt (the push-out). */
void defo_rigid_displace(defo_rigid_body *b, const double v[3], const double w[3], double dt) {
    for (int k = 0; k < 3; k++) b->center[k] += dt * v[k];
    const double wn = sqrt(dot(w, w));
    if (!(wn > 0)) return;
    /* a world-frame rotation by dt ω: q ← r ⊗ q */
    const double half = 0.5 * dt * wn, s = sin(half) / wn;
    const double r[4] = {cos(half), s * w[0], s * w[1], s * w[2]};
    double qn[4];
    quat_mul(r, b->orientation, qn);
    quat_normalize(qn);
    /* L stays: the body's momentum in the world does not change with a
     * pseudo-rotation */
    memcpy(b->orientation, qn, sizeof qn);
}
