/*
 * geometry/motion.c — scripted rigid motion (defo/geometry.h), the one place
 * a defo_motion_def is evaluated: colliders, signed-distance grids,
 * quasistatic bones (TSIF05 §11), kinematic handles and the renderer's
 * collider placement all go through defo_motion_pose_at.
 *
 * At time t a frame point p is at
 *     x(t) = R(t) (p − pivot) + pivot + velocity·t,
 * R(t) the rotation by θ = angular_speed·t about the unit axis k (Rodrigues:
 * R = cos θ I + sin θ [k]ₓ + (1 − cos θ) k kᵀ, written as defo_m3_rotation
 * writes it).
 * Differentiating, ẋ = Ṙ (p − pivot) + velocity = ω × R (p − pivot) +
 * velocity with ω = angular_speed · k, and R (p − pivot) = x − pivot(t),
 * pivot(t) = pivot + velocity·t, so the rigid velocity field is
 *     v(x) = velocity + ω × (x − pivot(t)).
 *
 * A bone (TSIF05 §11, defo/skeleton.h) gives its transform x = R p + T
 * instead, with the rigid velocity field v = Ṫ + ω × (x − T), [ω]× = Ṙ Rᵀ
 * (stored as pivot = 0, pivot(t) = T, velocity = Ṫ, so unmap and velocity
 * read it unchanged).
 *
 * Invariants: R is exactly the identity when θ = 0 (a motion at rest moves
 * nothing, not even by rounding); the axis is normalised once per pose
 * (k = a · (1/|a|), scaled first when |a|² would overflow or underflow, so
 * any finite nonzero axis works); x is summed as (R (p − pivot) + pivot) + velocity·t, the order
 * the formula is written in, in every caller.
 */
#include "defo/geometry.h"
#include "defo/skeleton.h"

#include "base/base.h"
#include "defo/math.h"

#include <math.h>
#include <string.h>

defo_motion_def defo_default_motion_def(void) {
    defo_motion_def d;
    memset(&d, 0, sizeof d);
    d.angular_axis[2] = 1.0;
    d.skeleton = NULL;
    d.bone = -1;
    return d;
}

defo_status defo_motion_validate(const defo_motion_def *m, const char *what) {
    const char *w = what ? what : "motion";
    if (!m) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: NULL", w);
    static const char *const names[3] = {"velocity", "pivot", "angular_axis"};
    const double *v[3] = {m->velocity, m->pivot, m->angular_axis};
    for (int f = 0; f < 3; f++)
        for (int k = 0; k < 3; k++)
            if (!isfinite(v[f][k]))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: %s[%d] = %g is not finite", w,
                                  names[f], k, v[f][k]);
    if (!isfinite(m->angular_speed))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: angular_speed = %g is not finite", w,
                          m->angular_speed);
    const double *a = m->angular_axis;
    if (m->angular_speed != 0.0 && a[0] == 0.0 && a[1] == 0.0 && a[2] == 0.0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: angular_axis is zero but angular_speed is %g (rad/s)", w,
                          m->angular_speed);
    if (m->skeleton) {
        const int nb = defo_skeleton_num_bones(m->skeleton);
        if (m->bone < 0 || m->bone >= nb)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "%s: bone %d is not one of the skeleton's %d bones", w, m->bone, nb);
        for (int k = 0; k < 3; k++)
            if (m->velocity[k] != 0 || m->pivot[k] != 0)
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "%s: follows bone '%s' and has a scripted motion too (give "
                                  "one of them)",
                                  w, defo_skeleton_bone_name(m->skeleton, m->bone));
        if (m->angular_speed != 0)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "%s: follows bone '%s' and has an angular_speed too (give one of "
                              "them)",
                              w, defo_skeleton_bone_name(m->skeleton, m->bone));
    }
    return DEFO_OK;
}

/* Unit vector along a (k, returns 1), or 0 for a zero a.  One square root
 * and one division; a is scaled by its largest component first only when
 * its squared length would overflow or underflow. */
static int unit_axis(const double a[3], double k[3]) {
    double amax = fabs(a[0]);
    if (fabs(a[1]) > amax) amax = fabs(a[1]);
    if (fabs(a[2]) > amax) amax = fabs(a[2]);
    if (!(amax > 0.0)) return 0;
    double b[3] = {a[0], a[1], a[2]};
    if (amax < 0x1p-500 || amax > 0x1p500)
        for (int i = 0; i < 3; i++) b[i] = a[i] / amax;
    const double inv = 1.0 / sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    for (int i = 0; i < 3; i++) k[i] = b[i] * inv;
    return 1;
}

/* A bone's pose (TSIF05 §11): x = R p + T, v = Ṫ + ω × (x − T) with [ω]× = Ṙ Rᵀ. */
static void bone_pose(const defo_motion_def *m, double t, defo_motion_pose *P) {
    double Rd[9];
    defo_skeleton_transform(m->skeleton, m->bone, t, P->R, P->pivot_t, Rd, P->velocity);
    const double *R = P->R;
    double W[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            W[3 * i + j] =
                Rd[3 * i] * R[3 * j] + Rd[3 * i + 1] * R[3 * j + 1] + Rd[3 * i + 2] * R[3 * j + 2];
    /* the skew part (W is skew up to rounding) */
    P->omega[0] = 0.5 * (W[7] - W[5]);
    P->omega[1] = 0.5 * (W[2] - W[6]);
    P->omega[2] = 0.5 * (W[3] - W[1]);
    P->pivot[0] = P->pivot[1] = P->pivot[2] = 0.0;
    P->bone = 1;
}

void defo_motion_pose_at(const defo_motion_def *m, double t, defo_motion_pose *pose) {
    defo_motion_pose *P = pose;
    P->t = t;
    P->bone = 0;
    if (m->skeleton) {
        bone_pose(m, t, P);
        return;
    }
    double k[3] = {0, 0, 0};
    const int rotating = unit_axis(m->angular_axis, k);
    const double angle = rotating ? m->angular_speed * t : 0.0;
    if (angle != 0.0) { /* Rodrigues, as defo_m3_rotation (k is unit already) */
        const double c = cos(angle), s = sin(angle), u = 1 - c;
        double *R = P->R;
        R[0] = u * k[0] * k[0] + c;
        R[1] = u * k[0] * k[1] - s * k[2];
        R[2] = u * k[0] * k[2] + s * k[1];
        R[3] = u * k[0] * k[1] + s * k[2];
        R[4] = u * k[1] * k[1] + c;
        R[5] = u * k[1] * k[2] - s * k[0];
        R[6] = u * k[0] * k[2] - s * k[1];
        R[7] = u * k[1] * k[2] + s * k[0];
        R[8] = u * k[2] * k[2] + c;
    } else {
        for (int i = 0; i < 9; i++) P->R[i] = i % 4 == 0 ? 1.0 : 0.0;
    }
    for (int i = 0; i < 3; i++) {
        P->pivot[i] = m->pivot[i];
        P->velocity[i] = m->velocity[i];
        P->omega[i] = m->angular_speed * k[i];
        P->pivot_t[i] = m->pivot[i] + m->velocity[i] * t;
    }
}

void defo_motion_pose_velocity(const defo_motion_pose *P, const double x[3], double v[3]) {
    const double r[3] = {x[0] - P->pivot_t[0], x[1] - P->pivot_t[1], x[2] - P->pivot_t[2]};
    const double *w = P->omega;
    v[0] = P->velocity[0] + w[1] * r[2] - w[2] * r[1];
    v[1] = P->velocity[1] + w[2] * r[0] - w[0] * r[2];
    v[2] = P->velocity[2] + w[0] * r[1] - w[1] * r[0];
}

void defo_motion_pose_map(const defo_motion_pose *P, const double p[3], double x[3], double v[3]) {
    const double *R = P->R;
    const double r[3] = {p[0] - P->pivot[0], p[1] - P->pivot[1], p[2] - P->pivot[2]};
    double y[3];
    if (P->bone)
        for (int i = 0; i < 3; i++)
            y[i] = R[3 * i] * p[0] + R[3 * i + 1] * p[1] + R[3 * i + 2] * p[2] + P->pivot_t[i];
    else
        for (int i = 0; i < 3; i++)
            y[i] = R[3 * i] * r[0] + R[3 * i + 1] * r[1] + R[3 * i + 2] * r[2] + P->pivot[i] +
                   P->velocity[i] * P->t;
    if (v) defo_motion_pose_velocity(P, y, v);
    if (x) memcpy(x, y, sizeof y);
}

void defo_motion_pose_unmap(const defo_motion_pose *P, const double x[3], double p[3]) {
    const double *R = P->R;
    const double r[3] = {x[0] - P->pivot_t[0], x[1] - P->pivot_t[1], x[2] - P->pivot_t[2]};
    double q[3];
    for (int i = 0; i < 3; i++)
        q[i] = R[i] * r[0] + R[3 + i] * r[1] + R[6 + i] * r[2] + P->pivot[i];
    memcpy(p, q, sizeof q);
}

void defo_motion_eval(const defo_motion_def *m, double t, const double p[3], double x[3],
                      double v[3]) {
    defo_motion_pose P;
    defo_motion_pose_at(m, t, &P);
    defo_motion_pose_map(&P, p, x, v);
}

void defo_motion_rotation(const defo_motion_def *m, double t, double R[9]) {
    defo_motion_pose P;
    defo_motion_pose_at(m, t, &P);
    memcpy(R, P.R, sizeof P.R);
}
