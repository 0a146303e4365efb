/*
 * rigid/rigid.c — rigid bodies (defo/rigid.h, MMDJ01 §2.7): mass properties
 * of a tet mesh, the quaternion/angular-momentum state, its motion (the
 * implicit midpoint rule of Euler's equations with a Cayley rotation) and
 * sequential-impulse contact.
 *
 * Invariants: the orientation is renormalised after every product (a unit
 * quaternion to rounding); L is the state, ω derived, so a torque-free step
 * keeps L to rounding whatever the iteration's accuracy; every loop runs in
 * a fixed order (deterministic); nothing allocates.
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
        memset(k->impulse, 0, sizeof k->impulse);
        k->push_impulse = 0;
        if (!d.warm_start || !(k->normal_impulse > 0) || !isfinite(k->normal_impulse)) {
            memset(k->tangent_impulse, 0, sizeof k->tangent_impulse);
            k->normal_impulse = 0;
            continue;
        }
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
    double *Iinv = defo_malloc((9 * (size_t)count + 8 * (size_t)num_contacts) * sizeof(double) +
                               (size_t)num_contacts + 1);
    if (!Iinv) return defo_error_oom("rigid contacts", 72 * (size_t)count);
    /* ra, ro, the bodies' inverse effective normal mass, a deformable
     * obstacle's inverse mass */
    double *geo = Iinv + 9 * (size_t)count;
    /* per contact: idle (no impulse, none taken at its last visit) */
    unsigned char *idle = (unsigned char *)(geo + 8 * (size_t)num_contacts);
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
        k->bias = k->gap > 0 ? -k->gap / dt : 0.0;
        if (vn < -d.bounce_speed && vn * dt <= -fmax(k->gap, 0.0))
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
                if (!full && idle[ci]) continue;
                /* Gauss–Seidel in the contacts' order, every sweep forward:
                 * sweeping forward and back in turn was measured worse (a
                 * stack of three drifted 3e-4 m instead of 2.2e-5 m, and
                 * fragments ended up to 6 vertices inside each other) */
                const int c = ci;
                defo_rigid_contact *k = &contacts[c];
                const defo_rigid_body *a = &bodies[k->body];
                const defo_rigid_body *o = k->other >= 0 ? &bodies[k->other] : NULL;
                const double *g = geo + 8 * (size_t)c, *ra = g, *ro = g + 3;
                const double mnodes = V.pass == 0 || k->node_push[0] ? g[7] : 0.0;
                const double mn = g[6] + mnodes;
                const double *Ia = Iinv + 9 * (size_t)k->body,
                             *Io = o ? Iinv + 9 * (size_t)k->other : Iinv;
                double rel[3];
                const double *n = k->normal;
                relative(&V, k, Ia, Io, ra, ro, rel);
                double target;
                double *acc;
                if (V.pass == 0) {
                    target = k->bias;
                    acc = &k->normal_impulse;
                } else {
                    const double pen = -k->gap - d.slop;
                    target = pen > 0 ? d.push_out * pen / dt : 0.0;
                    acc = &k->push_impulse;
                }
                const double vn = dot(rel, n);
                double nj = *acc + (target - vn) / mn;
                if (nj < 0) nj = 0;
                const double dj = nj - *acc;
                *acc = nj;
                change = fmax(change, fabs(dj));
                largest = fmax(largest, nj);
                idle[ci] = nj == 0 && dj == 0 &&
                           (V.pass == 1 || dot(k->tangent_impulse, k->tangent_impulse) == 0);
                if (idle[ci]) continue;
                const double J[3] = {dj * n[0], dj * n[1], dj * n[2]};
                view_kick(&V, k->body, Ia, ra, J, 1);
                if (o) view_kick(&V, k->other, Io, ro, J, -1);
                nodes_kick(&V, k, J);
                if (V.pass == 1 || !(k->friction > 0)) continue;
                /* Coulomb: the tangential slip to zero, the accumulated
                 * tangential impulse within μ of the normal one */
                relative(&V, k, Ia, Io, ra, ro, rel);
                const double vn2 = dot(rel, n);
                const double vt[3] = {rel[0] - vn2 * n[0], rel[1] - vn2 * n[1],
                                      rel[2] - vn2 * n[2]};
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
                change = fmax(change, sqrt(dot(dJ, dJ)));
                memcpy(k->tangent_impulse, want, sizeof want);
                view_kick(&V, k->body, Ia, ra, dJ, 1);
                if (o) view_kick(&V, k->other, Io, ro, dJ, -1);
                nodes_kick(&V, k, dJ);
            }
            sweeps++;
            const int met = change <= (V.pass == 0 ? d.tolerance : d.push_tolerance) * largest;
            converged = met && full;
            full = met || (it + 1) % RIGID_FULL_SWEEP == 0;
            last = largest > 0 ? change / largest : 0.0;
            if (V.pass == 0) scale = largest;
        }
        if (stats) {
            stats->sweeps[V.pass] = sweeps;
            stats->converged[V.pass] = converged || d.iterations <= 0;
            stats->change[V.pass] = last;
        }
    }
    defo_free(Iinv);
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
