/*
 * geometry/skeleton.c — keyframed skeletons and their bone transforms
 * (defo/skeleton.h; TSIF05 §11 kinematic skeletons driving flesh).
 *
 * Per joint the local motion at time t is a rotation q(t) and a
 * translation p(t) between two keys with parameter s (linear in time, or
 * eased s ↦ s²(3 − 2s)):
 *     q(s) = [sin((1 − s)Ω) q₀ + sin(sΩ) q₁] / sin Ω,  cos Ω = q₀·q₁ ≥ 0
 * (keys are sign-aligned at creation: the shortest arc), p(s) = p₀ + s (p₁ − p₀).
 * Derivatives: dq/ds = Ω [cos(sΩ) q₁ − cos((1 − s)Ω) q₀] / sin Ω, the local
 * angular velocity ω = 2 vec(q̇ q*) (parent frame), Ṙ = [ω]× R.  Below
 * Ω = 1e-6 the normalised linear blend (error O(Ω²), under 1e-12) with
 * dq/ds = q₁ − q₀ is used.  The global transforms chain from the root:
 *     R = R_p R_L,  T = R_p T_L + T_p,  Ṙ = Ṙ_p R_L + R_p Ṙ_L,
 *     Ṫ = Ṙ_p T_L + R_p Ṫ_L + Ṫ_p,
 * and the bone transform (defo/skeleton.h) with the bind pose (R_b, T_b) and
 * the placement x_w = s_A Q x + d:
 *     R_M = Q R Rbᵀ Qᵀ,  T_M = d + s_A Q (T − R Rbᵀ T_b) − R_M d,
 *     Ṙ_M = Q Ṙ Rbᵀ Qᵀ,  Ṫ_M = s_A Q (Ṫ − Ṙ Rbᵀ T_b) − Ṙ_M d.
 *
 * Invariants: joints are stored parents first (the definition's order), at
 * most SK_MAX_DEPTH deep, so a chain is walked with a fixed stack array;
 * everything is computed on the stack (thread-safe, no allocation after
 * create); at a key time (s = 0) the key itself is returned exactly.
 */
#include "defo/skeleton.h"

#include "base/base.h"
#include "defo/math.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SK_MAX_DEPTH 256

typedef struct sk_joint {
    char name[DEFO_NAME_MAX];
    int parent;
    double offset[3];
    int num_keys;
    double *times; /* num_keys */
    double *q;     /* 4 per key, unit, sign-aligned */
    double *p;     /* 3 per key, or NULL */
    double RbT[9]; /* bind rotation, transposed */
    double c[3];   /* Rbᵀ T_b */
} sk_joint;

struct defo_skeleton {
    int n;
    sk_joint *joint;
    double *pool;
    defo_skeleton_place place;
    double duration;
};

defo_skeleton_place defo_default_skeleton_place(void) {
    defo_skeleton_place p;
    memset(&p, 0, sizeof p);
    p.scale = 1.0;
    p.rotation[0] = p.rotation[4] = p.rotation[8] = 1.0;
    p.bind_frame = -1;
    p.interpolation = DEFO_INTERP_LINEAR;
    return p;
}

void defo_skeleton_destroy(defo_skeleton *sk) {
    if (!sk) return;
    defo_free(sk->joint);
    defo_free(sk->pool);
    defo_free(sk);
}

/* row-major 3×3 products */
static void mul3(const double *a, const double *b, double *o) {
    double t[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            t[3 * i + j] = a[3 * i] * b[j] + a[3 * i + 1] * b[3 + j] + a[3 * i + 2] * b[6 + j];
    memcpy(o, t, sizeof t);
}
static void mulv(const double *a, const double *v, double *o) {
    double t[3];
    for (int i = 0; i < 3; i++) t[i] = a[3 * i] * v[0] + a[3 * i + 1] * v[1] + a[3 * i + 2] * v[2];
    memcpy(o, t, sizeof t);
}

/* R of the unit quaternion (w, x, y, z). */
static void quat_matrix(const double *q, double *R) {
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    R[0] = 1 - 2 * (y * y + z * z), R[1] = 2 * (x * y - w * z), R[2] = 2 * (x * z + w * y);
    R[3] = 2 * (x * y + w * z), R[4] = 1 - 2 * (x * x + z * z), R[5] = 2 * (y * z - w * x);
    R[6] = 2 * (x * z - w * y), R[7] = 2 * (y * z + w * x), R[8] = 1 - 2 * (x * x + y * y);
}

/* A joint's local transform (R, T = offset + p) and derivatives at time t
 * (bind ≥ 0: key `bind` exactly, no motion). */
static void local(const defo_skeleton *sk, const sk_joint *j, double t, int bind, double *R,
                  double *T, double *Rd, double *Td) {
    double q[4] = {1, 0, 0, 0}, qd[4] = {0, 0, 0, 0}, p[3] = {0, 0, 0}, pd[3] = {0, 0, 0};
    const int n = j->num_keys;
    if (n > 0) {
        int k = 0;
        double s = 0.0, sdot = 0.0;
        if (bind >= 0) {
            k = bind;
        } else if (t <= j->times[0] || n == 1) {
            k = 0;
        } else if (t >= j->times[n - 1]) {
            k = n - 1;
        } else {
            int lo = 0, hi = n - 1; /* times[lo] < t < times[hi] */
            while (hi - lo > 1) {
                const int mid = (lo + hi) / 2;
                if (j->times[mid] <= t)
                    lo = mid;
                else
                    hi = mid;
            }
            k = lo;
            const double h = j->times[k + 1] - j->times[k];
            s = (t - j->times[k]) / h;
            sdot = 1.0 / h;
            if (sk->place.interpolation == DEFO_INTERP_SMOOTH) {
                sdot *= 6.0 * s * (1.0 - s);
                s = s * s * (3.0 - 2.0 * s);
            }
        }
        const double *q0 = j->q + 4 * k;
        const double *p0 = j->p ? j->p + 3 * k : NULL;
        if (s == 0.0) {
            memcpy(q, q0, sizeof q);
            if (p0) memcpy(p, p0, sizeof p);
            if (sdot != 0.0) { /* at a key inside the motion: the rate of the segment ahead */
                const double *q1 = q0 + 4, *p1 = p0 ? p0 + 3 : NULL;
                const double d = q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3];
                const double Om = acos(d < 1.0 ? d : 1.0);
                const double f = Om > 1e-6 ? Om / sin(Om) : 1.0;
                for (int i = 0; i < 4; i++) qd[i] = sdot * f * (q1[i] - cos(Om) * q0[i]);
                if (p1)
                    for (int i = 0; i < 3; i++) pd[i] = sdot * (p1[i] - p0[i]);
            }
        } else {
            const double *q1 = q0 + 4;
            const double d = q0[0] * q1[0] + q0[1] * q1[1] + q0[2] * q1[2] + q0[3] * q1[3];
            const double Om = acos(d < 1.0 ? d : 1.0);
            if (Om > 1e-6) {
                const double is = 1.0 / sin(Om);
                const double a = sin((1.0 - s) * Om) * is, b = sin(s * Om) * is;
                const double da = -Om * cos((1.0 - s) * Om) * is, db = Om * cos(s * Om) * is;
                for (int i = 0; i < 4; i++) {
                    q[i] = a * q0[i] + b * q1[i];
                    qd[i] = sdot * (da * q0[i] + db * q1[i]);
                }
            } else {
                double nn = 0;
                for (int i = 0; i < 4; i++) {
                    q[i] = (1.0 - s) * q0[i] + s * q1[i];
                    nn += q[i] * q[i];
                }
                nn = 1.0 / sqrt(nn);
                for (int i = 0; i < 4; i++) q[i] *= nn, qd[i] = sdot * (q1[i] - q0[i]);
            }
            if (p0)
                for (int i = 0; i < 3; i++) {
                    p[i] = p0[i] + s * (p0[3 + i] - p0[i]);
                    pd[i] = sdot * (p0[3 + i] - p0[i]);
                }
        }
    }
    quat_matrix(q, R);
    for (int i = 0; i < 3; i++) T[i] = j->offset[i] + p[i], Td[i] = pd[i];
    /* ω = 2 vec(q̇ q*), Ṙ = [ω]× R */
    const double w = q[0], x = q[1], y = q[2], z = q[3];
    const double om[3] = {2 * (-qd[0] * x + qd[1] * w - qd[2] * z + qd[3] * y),
                          2 * (-qd[0] * y + qd[1] * z + qd[2] * w - qd[3] * x),
                          2 * (-qd[0] * z - qd[1] * y + qd[2] * x + qd[3] * w)};
    const double W[9] = {0, -om[2], om[1], om[2], 0, -om[0], -om[1], om[0], 0};
    mul3(W, R, Rd);
}

/* Global transform of joint b and its derivative (bind ≥ 0: the bind pose
 * of key `bind`; −2: every local the identity with its offset). */
static void global(const defo_skeleton *sk, int b, double t, int bind, double *R, double *T,
                   double *Rd, double *Td) {
    int path[SK_MAX_DEPTH], depth = 0;
    for (int j = b; j >= 0 && depth < SK_MAX_DEPTH; j = sk->joint[j].parent) path[depth++] = j;
    for (int i = 0; i < 9; i++) R[i] = i % 4 == 0, Rd[i] = 0;
    for (int i = 0; i < 3; i++) T[i] = 0, Td[i] = 0;
    for (int k = depth - 1; k >= 0; k--) {
        const sk_joint *jt = &sk->joint[path[k]];
        double RL[9], TL[3], RLd[9], TLd[3];
        if (bind == -2) {
            for (int i = 0; i < 9; i++) RL[i] = i % 4 == 0, RLd[i] = 0;
            for (int i = 0; i < 3; i++) TL[i] = jt->offset[i], TLd[i] = 0;
        } else {
            local(sk, jt, t, bind, RL, TL, RLd, TLd);
        }
        /* Ṫ = Ṙ_p T_L + R_p Ṫ_L + Ṫ_p, Ṙ = Ṙ_p R_L + R_p Ṙ_L (before R, T change) */
        double a[3], c[3], A[9], B[9];
        mulv(Rd, TL, a);
        mulv(R, TLd, c);
        for (int i = 0; i < 3; i++) Td[i] += a[i] + c[i];
        mul3(Rd, RL, A);
        mul3(R, RLd, B);
        for (int i = 0; i < 9; i++) Rd[i] = A[i] + B[i];
        double e[3];
        mulv(R, TL, e);
        for (int i = 0; i < 3; i++) T[i] += e[i];
        mul3(R, RL, R);
    }
}

defo_status defo_skeleton_create(const defo_joint_def *joints, int n,
                                 const defo_skeleton_place *place, defo_skeleton **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "skeleton: out is NULL");
    *out = NULL;
    const defo_skeleton_place pl = place ? *place : defo_default_skeleton_place();
    if (n < 1 || !joints)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "skeleton: needs at least one joint");
    if (!(pl.scale > 0) || !isfinite(pl.scale))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "skeleton scale: %g is not > 0", pl.scale);
    for (int i = 0; i < 3; i++)
        if (!isfinite(pl.translate[i]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "skeleton translate[%d] is not finite", i);
    {
        const double *Q = pl.rotation;
        double err = 0;
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 3; k++) {
                const double d = Q[3 * i] * Q[3 * k] + Q[3 * i + 1] * Q[3 * k + 1] +
                                 Q[3 * i + 2] * Q[3 * k + 2] - (i == k);
                err = isfinite(d) && fabs(d) <= err ? err : fabs(d);
                if (!isfinite(d)) err = INFINITY;
            }
        const double det = Q[0] * (Q[4] * Q[8] - Q[5] * Q[7]) - Q[1] * (Q[3] * Q[8] - Q[5] * Q[6]) +
                           Q[2] * (Q[3] * Q[7] - Q[4] * Q[6]);
        if (!(err < 1e-9) || !(det > 0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "skeleton rotation: not a rotation (|QQᵀ − I| = %.3g, det %.3g)", err,
                              det);
    }
    if (pl.interpolation != DEFO_INTERP_LINEAR && pl.interpolation != DEFO_INTERP_SMOOTH)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "skeleton interpolation: %d is unknown",
                          (int)pl.interpolation);
    if (pl.bind_frame < -1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "skeleton bind_frame: %d is not >= -1",
                          pl.bind_frame);
    size_t values = 0;
    for (int i = 0; i < n; i++) {
        const defo_joint_def *j = &joints[i];
        const char *nm = j->name ? j->name : "";
        if (!nm[0])
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "skeleton joint %d: empty name", i);
        if (strlen(nm) >= DEFO_NAME_MAX)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "skeleton joint %d: name '%.20s...' is longer than %d bytes", i, nm,
                              DEFO_NAME_MAX - 1);
        for (int k = 0; k < i; k++)
            if (!strcmp(joints[k].name, nm))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "skeleton joint %d: '%s' is already the name of joint %d", i, nm,
                                  k);
        if (j->parent < -1 || j->parent >= i)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "skeleton joint '%s': parent %d is not an earlier joint", nm,
                              j->parent);
        int depth = 1;
        for (int p = j->parent; p >= 0; p = joints[p].parent) depth++;
        if (depth > SK_MAX_DEPTH)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "skeleton joint '%s': deeper than %d joints", nm, SK_MAX_DEPTH);
        for (int k = 0; k < 3; k++)
            if (!isfinite(j->offset[k]))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "skeleton joint '%s': offset[%d] is not finite", nm, k);
        if (j->num_keys < 0 || (j->num_keys > 0 && (!j->times || !j->rotations)))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "skeleton joint '%s': %d keys without times or rotations", nm,
                              j->num_keys);
        for (int k = 0; k < j->num_keys; k++) {
            const double *q = j->rotations + 4 * k;
            if (!isfinite(j->times[k]) || (k > 0 && !(j->times[k] > j->times[k - 1])))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "skeleton joint '%s': key %d time %g does not follow %g", nm, k,
                                  j->times[k], k ? j->times[k - 1] : -INFINITY);
            const double qq = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
            if (!(qq > 0) || !isfinite(qq))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "skeleton joint '%s': key %d rotation is zero or not finite", nm,
                                  k);
            for (int c = 0; j->translations && c < 3; c++)
                if (!isfinite(j->translations[3 * k + c]))
                    return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                      "skeleton joint '%s': key %d translation is not finite", nm,
                                      k);
        }
        if (pl.bind_frame >= 0 && j->num_keys > 0 && pl.bind_frame >= j->num_keys)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "skeleton bind_frame %d: joint '%s' has %d keys", pl.bind_frame, nm,
                              j->num_keys);
        values += (size_t)j->num_keys * (j->translations ? 8 : 5);
    }
    defo_skeleton *sk = defo_calloc(1, sizeof *sk);
    if (sk) {
        sk->joint = defo_calloc((size_t)n, sizeof *sk->joint);
        sk->pool = defo_malloc(values * sizeof(double) + 1);
    }
    if (!sk || !sk->joint || !sk->pool) {
        defo_skeleton_destroy(sk);
        return defo_error_oom("skeleton", values * sizeof(double));
    }
    sk->n = n;
    sk->place = pl;
    double *pool = sk->pool;
    for (int i = 0; i < n; i++) {
        const defo_joint_def *d = &joints[i];
        sk_joint *j = &sk->joint[i];
        snprintf(j->name, sizeof j->name, "%s", d->name);
        j->parent = d->parent;
        memcpy(j->offset, d->offset, sizeof j->offset);
        j->num_keys = d->num_keys;
        j->times = pool, pool += d->num_keys;
        j->q = pool, pool += 4 * (size_t)d->num_keys;
        if (d->translations) j->p = pool, pool += 3 * (size_t)d->num_keys;
        for (int k = 0; k < d->num_keys; k++) {
            j->times[k] = d->times[k];
            sk->duration = fmax(sk->duration, d->times[k]);
            const double *q = d->rotations + 4 * k;
            const double m = fmax(fmax(fabs(q[0]), fabs(q[1])), fmax(fabs(q[2]), fabs(q[3])));
            double u[4] = {q[0] / m, q[1] / m, q[2] / m, q[3] / m};
            const double inv = 1.0 / sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2] + u[3] * u[3]);
            /* sign-aligned with the previous key: slerp takes the short arc */
            double sgn = inv;
            if (k > 0) {
                const double *pq = j->q + 4 * (k - 1);
                if (pq[0] * u[0] + pq[1] * u[1] + pq[2] * u[2] + pq[3] * u[3] < 0) sgn = -inv;
            }
            for (int c = 0; c < 4; c++) j->q[4 * k + c] = u[c] * sgn;
            if (j->p) memcpy(j->p + 3 * k, d->translations + 3 * k, 3 * sizeof(double));
        }
    }
    /* bind poses: Rbᵀ and Rbᵀ T_b */
    for (int i = 0; i < n; i++) {
        double R[9], T[3], Rd[9], Td[3];
        global(sk, i, 0.0, pl.bind_frame >= 0 ? pl.bind_frame : -2, R, T, Rd, Td);
        sk_joint *j = &sk->joint[i];
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) j->RbT[3 * r + c] = R[3 * c + r];
        mulv(j->RbT, T, j->c);
    }
    *out = sk;
    return DEFO_OK;
}

int defo_skeleton_num_bones(const defo_skeleton *sk) {
    return sk ? sk->n : 0;
}
const char *defo_skeleton_bone_name(const defo_skeleton *sk, int b) {
    return sk && b >= 0 && b < sk->n ? sk->joint[b].name : NULL;
}
int defo_skeleton_parent(const defo_skeleton *sk, int b) {
    return sk && b >= 0 && b < sk->n ? sk->joint[b].parent : -1;
}
int defo_skeleton_find(const defo_skeleton *sk, const char *name) {
    for (int i = 0; sk && name && i < sk->n; i++)
        if (!strcmp(sk->joint[i].name, name)) return i;
    return -1;
}
double defo_skeleton_duration(const defo_skeleton *sk) {
    return sk ? sk->duration : 0.0;
}

void defo_skeleton_transform(const defo_skeleton *sk, int b, double t, double RM[9], double TM[3],
                             double RMd[9], double TMd[3]) {
    if (!sk || b < 0 || b >= sk->n) {
        for (int i = 0; i < 9; i++) {
            if (RM) RM[i] = i % 4 == 0;
            if (RMd) RMd[i] = 0;
        }
        for (int i = 0; i < 3; i++) {
            if (TM) TM[i] = 0;
            if (TMd) TMd[i] = 0;
        }
        return;
    }
    const sk_joint *j = &sk->joint[b];
    const double *Q = sk->place.rotation, *d = sk->place.translate, s = sk->place.scale;
    const double QT[9] = {Q[0], Q[3], Q[6], Q[1], Q[4], Q[7], Q[2], Q[5], Q[8]};
    double R[9], T[3], Rd[9], Td[3];
    global(sk, b, t, -1, R, T, Rd, Td);
    /* R_M = Q R Rbᵀ Qᵀ, T_M = d + s Q (T − R Rbᵀ T_b) − R_M d */
    double A[9], Rm[9], u[3], v[3];
    mul3(R, j->RbT, A);
    mul3(Q, A, Rm);
    mul3(Rm, QT, Rm);
    mulv(R, j->c, u); /* R Rbᵀ T_b */
    for (int i = 0; i < 3; i++) u[i] = T[i] - u[i];
    mulv(Q, u, v);
    double rd[3];
    mulv(Rm, d, rd);
    if (RM) memcpy(RM, Rm, sizeof Rm);
    if (TM)
        for (int i = 0; i < 3; i++) TM[i] = d[i] + s * v[i] - rd[i];
    if (RMd || TMd) {
        double B[9], Rmd[9], w[3], z[3], rdd[3];
        mul3(Rd, j->RbT, B);
        mul3(Q, B, Rmd);
        mul3(Rmd, QT, Rmd);
        mulv(Rd, j->c, w); /* Ṙ Rbᵀ T_b */
        for (int i = 0; i < 3; i++) w[i] = Td[i] - w[i];
        mulv(Q, w, z);
        mulv(Rmd, d, rdd);
        if (RMd) memcpy(RMd, Rmd, sizeof Rmd);
        if (TMd)
            for (int i = 0; i < 3; i++) TMd[i] = s * z[i] - rdd[i];
    }
}

void defo_skeleton_joint_position(const defo_skeleton *sk, int b, double t, double p[3]) {
    if (!sk || b < 0 || b >= sk->n) {
        p[0] = p[1] = p[2] = 0;
        return;
    }
    double R[9], T[3], Rd[9], Td[3], q[3];
    global(sk, b, t, -1, R, T, Rd, Td);
    mulv(sk->place.rotation, T, q);
    for (int i = 0; i < 3; i++) p[i] = sk->place.scale * q[i] + sk->place.translate[i];
}
