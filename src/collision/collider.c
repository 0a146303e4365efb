/*
 * collision/collider.c — rigid colliders with scripted motion and the node
 * collision processing of ITF04 §9.
 *
 * Motion (defo_motion_def, evaluated by geometry/motion.c): a
 * collider-frame point p is at x = R(t)(p - pivot) + pivot(t), pivot(t) =
 * pivot + velocity t.  φ at a world point is φ_local(Rᵀ(x - pivot(t)) +
 * pivot) (defo_motion_pose_unmap), the normal is rotated forward by R, and
 * the rigid velocity field is velocity + ω × (x - pivot(t))
 * (defo_motion_pose_velocity).
 *
 * Collision processing (ITF04 §9, after [BMF03]): every node inside a
 * collider — interior nodes too, so small colliders cannot slip between
 * surface nodes — is projected to the surface, x ← x - φ n.  With a union
 * the projected point may lie inside another shape of the same collider, so
 * the projection repeats (a few times at most) until φ ≥ -tol; Δx_N is the
 * total distance moved.  The relative normal velocity is set to zero unless
 * the node already separates, and the relative tangential velocity becomes
 *     v_T' = max(0, 1 - μ (Δv_N + Δx_N/Δt) / |v_T|) v_T
 * so friction is proportional to the normal impulse, including the one the
 * position projection implies (the Δx_N/Δt term ITF04 adds to [BMF03]); the
 * max(0, ·) means friction can stop a node but never reverse it.
 *
 * Initial penetration (defo_collision_respond).  Projecting a body that
 * starts deep inside a collider squashes it flat in one step, and the
 * elastic energy of that squash launches it (70 % of a block inside the
 * ground: 15 m/s upward from rest).  A node that was already inside at the
 * start of the step, deeper than separation_speed·Δt (φ(x_prev, t − Δt), the
 * collider in its pose of that time, so a collider that moved into a node
 * still sweeps it out at once), is projected only to the depth it had less
 * separation_speed·Δt: the body rises out at no more than that speed, its
 * inside kept nearly undeformed, and ends with about the kinetic energy of
 * that speed.  Every other node (the only kind when nothing starts inside)
 * takes the ITF04 projection unchanged, bit for bit.
 *
 * Invariants: no allocation in defo_collide_nodes; each node is processed
 * independently (colliders in their given order), so the result is bitwise
 * identical for any thread count; n is never NaN.
 */
#include "collision/collision_internal.h"

#include "base/parallel.h"
#include "defo/math.h"
#include "defo/solver.h"

#include <math.h>
#include <string.h>

/* Projection passes per collider; a union of convex pieces needs one per
 * piece the node can land in, in practice two. */
#define DEFO_COLLIDE_MAX_PASSES 8
/* Relative tolerance of "on the surface" (times the collider/coordinate size). */
#define DEFO_COLLIDE_REL_TOL 1e-13

typedef defo_motion_pose pose;

defo_collider_def defo_default_collider_def(void) {
    defo_collider_def d;
    memset(&d, 0, sizeof d);
    d.motion = defo_default_motion_def();
    d.friction = 0.5;
    d.separation_speed = 0.5;
    return d;
}

defo_status defo_collider_create(const defo_collider_def *def, defo_collider **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_collider_create: out is NULL");
    *out = NULL;
    if (!def) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_collider_create: def is NULL");
    if (def->num_shapes < 1 || !def->shapes)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "collider: needs at least one shape (num_shapes = %d, shapes %s)",
                          def->num_shapes, def->shapes ? "set" : "NULL");
    if (!(def->friction >= 0) || !isfinite(def->friction))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "collider: friction %g must be >= 0",
                          def->friction);
    if (!(def->separation_speed > 0)) /* NaN too */
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "collider: separation_speed %g must be > 0 (INFINITY: at once)",
                          def->separation_speed);
    defo_status vs = defo_motion_validate(&def->motion, "collider motion");
    if (vs != DEFO_OK) return vs;

    size_t bytes;
    if (!defo_mul_size((size_t)def->num_shapes, sizeof(defo_shape), &bytes))
        return defo_error_oom("collider shapes", SIZE_MAX);
    defo_collider *c = defo_calloc(1, sizeof *c);
    defo_shape *shapes = defo_calloc((size_t)def->num_shapes, sizeof *shapes);
    if (!c || !shapes) {
        defo_free(c);
        defo_free(shapes);
        return defo_error_oom("collider", bytes + sizeof *c);
    }
    c->num_shapes = def->num_shapes;
    c->shapes = shapes;
    double size = 0;
    for (int k = 0; k < def->num_shapes; k++) {
        defo_status st = defo_shape_init(&def->shapes[k], k, &shapes[k]);
        if (st != DEFO_OK) {
            defo_collider_destroy(c);
            return st;
        }
        const double *cc = shapes[k].center;
        size = DEFO_MAX(size, defo_shape_size(&shapes[k]) +
                                  sqrt(cc[0] * cc[0] + cc[1] * cc[1] + cc[2] * cc[2]));
    }
    c->size = size > 0 ? size : 1.0; /* a lone plane through the origin: unit scale */
    c->motion = def->motion;
    c->friction = def->friction;
    c->separation_speed = def->separation_speed;
    *out = c;
    return DEFO_OK;
}

void defo_collider_destroy(defo_collider *c) {
    if (!c) return;
    for (int k = 0; c->shapes && k < c->num_shapes; k++) defo_shape_release(&c->shapes[k]);
    defo_free(c->shapes);
    defo_free(c);
}

double defo_collider_size(const defo_collider *c) {
    return c ? c->size : 0.0;
}

const defo_surface_info *defo_collider_surface_info(const defo_collider *c, int shape) {
    if (!c || shape < 0 || shape >= c->num_shapes || !c->shapes[shape].sdf) return NULL;
    return defo_surface_sdf_info(c->shapes[shape].sdf);
}

double defo_collider_friction(const defo_collider *c) {
    return c ? c->friction : 0.0;
}

static void pose_at(const defo_collider *c, double t, pose *P) {
    defo_motion_pose_at(&c->motion, t, P);
}

/* φ, normal and velocity at world point x for the collider in pose P. */
static double eval_posed(const defo_collider *c, const pose *P, const double x[3], double n[3],
                         double vel[3]) {
    const double *R = P->R;
    double p[3];
    defo_motion_pose_unmap(P, x, p);
    double best = INFINITY, nb[3] = {0, 0, 1};
    for (int k = 0; k < c->num_shapes; k++) {
        double nk[3];
        double phi = defo_shape_phi(&c->shapes[k], p, nk);
        if (phi < best) { /* strict: ties keep the first shape */
            best = phi;
            memcpy(nb, nk, sizeof nb);
        }
    }
    if (n) {
        for (int i = 0; i < 3; i++)
            n[i] = R[3 * i] * nb[0] + R[3 * i + 1] * nb[1] + R[3 * i + 2] * nb[2];
    }
    if (vel) defo_motion_pose_velocity(P, x, vel);
    return best;
}

double defo_collider_phi(const defo_collider *c, double t, const double x[3], double n[3],
                         double vel[3]) {
    if (!c || !x) return INFINITY;
    pose P;
    pose_at(c, t, &P);
    return eval_posed(c, &P, x, n, vel);
}

/* One node at φ(x) = phi (normal n) against one collider: projected to the
 * depth keep ≥ 0 (0: to the surface); returns 1 when it collided. */
static int collide_from(const defo_collider *c, const pose *P, double dt, double keep, double phi,
                        double n[3], double *x, double *v, double *nout) {
    if (!(phi < -keep)) return 0;
    double scale = DEFO_MAX(
        c->size, DEFO_MAX(fabs(x[0] - P->pivot_t[0]),
                          DEFO_MAX(fabs(x[1] - P->pivot_t[1]), fabs(x[2] - P->pivot_t[2]))));
    double tol = DEFO_COLLIDE_REL_TOL * scale;
    double dxn = 0;
    for (int pass = 0; pass < DEFO_COLLIDE_MAX_PASSES && phi < -keep; pass++) {
        const double push = phi + keep; /* keep = 0: exactly φ */
        for (int i = 0; i < 3; i++) x[i] -= push * n[i];
        dxn -= push;
        phi = eval_posed(c, P, x, n, NULL);
        if (phi >= -keep - tol) break;
    }
    double vc[3];
    eval_posed(c, P, x, n, vc);
    if (v) {
        double vr[3] = {v[0] - vc[0], v[1] - vc[1], v[2] - vc[2]};
        double vn = vr[0] * n[0] + vr[1] * n[1] + vr[2] * n[2];
        /* ITF04 §9: set the normal velocity to the object's unless separating. */
        double vn_new = vn < 0 ? 0.0 : vn;
        double dvn = vn_new - vn;
        double vt[3] = {vr[0] - vn * n[0], vr[1] - vn * n[1], vr[2] - vn * n[2]};
        double vt_len = sqrt(vt[0] * vt[0] + vt[1] * vt[1] + vt[2] * vt[2]);
        double dec = c->friction * (dvn + dxn / dt);
        double s = dec >= vt_len ? 0.0 : 1.0 - dec / vt_len; /* vt_len > 0 here */
        for (int i = 0; i < 3; i++) v[i] = vc[i] + vn_new * n[i] + s * vt[i];
    }
    memcpy(nout, n, 3 * sizeof(double));
    return 1;
}

/* One node against one collider, projected to the surface. */
static int collide_one(const defo_collider *c, const pose *P, double dt, double *x, double *v,
                       double *nout) {
    double n[3];
    double phi = eval_posed(c, P, x, n, NULL);
    return collide_from(c, P, dt, 0.0, phi, n, x, v, nout);
}

defo_status defo_collide_nodes(defo_collider *const *colliders, int num_colliders, double t,
                               double dt, defo_index n, double *x, double *v,
                               unsigned char *constrained, double *normal, defo_index *count) {
    if (count) *count = 0;
    if (num_colliders < 0 || (num_colliders > 0 && !colliders))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_collide_nodes: %d colliders with colliders %s", num_colliders,
                          colliders ? "set" : "NULL");
    if (n < 0 || (n > 0 && (!x || !constrained)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_collide_nodes: n = %ld needs x and constrained", (long)n);
    if (!(dt > 0) || !isfinite(dt) || !isfinite(t))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_collide_nodes: dt = %g must be > 0 and t = %g finite", dt, t);
    for (int k = 0; k < num_colliders; k++)
        if (!colliders[k])
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_collide_nodes: collider %d is NULL",
                              k);
    /* Poses once per call.  A small fixed batch keeps the call allocation-free
     * for any number of colliders: nodes loop inside each batch, and
     * colliders keep their order per node because batches run in order. */
    enum { BATCH = 16 };
    pose poses[BATCH];
    for (defo_index i = 0; i < n; i++) constrained[i] = 0;
    for (int k0 = 0; k0 < num_colliders; k0 += BATCH) {
        int nb = DEFO_MIN(BATCH, num_colliders - k0);
        for (int k = 0; k < nb; k++) pose_at(colliders[k0 + k], t, &poses[k]);
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
        for (defo_index i = 0; i < n; i++) {
            double *xi = x + 3 * (size_t)i;
            double *vi = v ? v + 3 * (size_t)i : NULL;
            for (int k = 0; k < nb; k++) {
                double nk[3];
                if (collide_one(colliders[k0 + k], &poses[k], dt, xi, vi, nk)) {
                    constrained[i] = 1;
                    if (normal) memcpy(normal + 3 * (size_t)i, nk, sizeof nk);
                }
            }
        }
    }
    defo_index hits = 0;
    for (defo_index i = 0; i < n; i++) hits += constrained[i];
    if (count) *count = hits;
    return DEFO_OK;
}

/* ITF04 §9 response of n nodes, the one routine every dynamic stepper uses
 * (defo/collision.h).  Per node (parallel, deterministic): every collider in
 * order projects, sets the normal velocity and applies friction over τ; then
 * the collider the node rests on (smallest |φ|, the last on ties) gives μ and
 * its velocity v_c, and a node whose relative tangential velocity friction
 * brought to rest sticks: the tangential part of its displacement relative to
 * the collider, x − x_prev − Δt v_c, is undone (static friction). */
defo_status defo_collision_respond(defo_collider *const *colliders, int num_colliders, double t,
                                   double dt, double tau, defo_index n, const double *x_prev,
                                   const unsigned char *skip, double *x, double *v,
                                   unsigned char *constraint, double *normal, double *friction,
                                   defo_index *count) {
    if (count) *count = 0;
    if (num_colliders < 0 || (num_colliders > 0 && !colliders) || n < 0 ||
        (n > 0 && (!x || !v || !x_prev || !constraint || !normal)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_collision_respond: missing argument");
    if (!(dt > 0) || !(tau > 0) || !isfinite(dt) || !isfinite(tau) || !isfinite(t))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_collision_respond: dt = %g and tau = %g must be > 0, t = %g finite",
                          dt, tau, t);
    for (int k = 0; k < num_colliders; k++)
        if (!colliders[k])
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "defo_collision_respond: collider %d is NULL", k);
    enum { BATCH = 16 };
    pose poses[BATCH], before[BATCH]; /* at t and at the step's start t − dt */
    for (defo_index i = 0; i < n; i++) constraint[i] = 0;
    for (int k0 = 0; k0 < num_colliders; k0 += BATCH) {
        int nb = DEFO_MIN(BATCH, num_colliders - k0);
        for (int k = 0; k < nb; k++) {
            pose_at(colliders[k0 + k], t, &poses[k]);
            pose_at(colliders[k0 + k], t - dt, &before[k]);
        }
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
        for (defo_index i = 0; i < n; i++) {
            if (skip && skip[i]) continue;
            double *xi = x + 3 * (size_t)i, *vi = v + 3 * (size_t)i;
            for (int k = 0; k < nb; k++) {
                const defo_collider *c = colliders[k0 + k];
                double nk[3], n0[3], keep = 0.0;
                const double phi = eval_posed(c, &poses[k], xi, n0, NULL);
                if (phi < 0) /* inside: was it already, deeper than a step's push? */
                    keep = defo_collider_kept_depth(
                        c, eval_posed(c, &before[k], x_prev + 3 * (size_t)i, NULL, NULL), dt);
                if (collide_from(c, &poses[k], tau, keep, phi, n0, xi, vi, nk)) {
                    constraint[i] = 1;
                    memcpy(normal + 3 * (size_t)i, nk, sizeof nk);
                }
            }
        }
    }
    defo_index hits = 0;
    for (defo_index i = 0; i < n; i++) hits += constraint[i] != 0;
    if (count) *count = hits;
    if (!hits) return DEFO_OK;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
    for (defo_index i = 0; i < n; i++) {
        if (!constraint[i]) continue;
        const size_t o = 3 * (size_t)i;
        /* the collider the node rests on */
        double best = INFINITY, mu = 0, vc[3] = {0, 0, 0};
        for (int k = 0; k < num_colliders; k++) {
            double nk[3], vk[3];
            double phi = fabs(defo_collider_phi(colliders[k], t, x + o, nk, vk));
            if (phi <= best) {
                best = phi;
                mu = colliders[k]->friction;
                memcpy(vc, vk, sizeof vk);
            }
        }
        if (friction) friction[i] = mu;
        const double *q = normal + o;
        double r[3], d[3], rn = 0, dn = 0, rt = 0, sc = 0;
        for (int k = 0; k < 3; k++) {
            r[k] = v[o + k] - vc[k];
            d[k] = x[o + k] - x_prev[o + k] - dt * vc[k];
            rn += r[k] * q[k];
            dn += d[k] * q[k];
            sc += fabs(vc[k]) + fabs(v[o + k]) + fabs(x[o + k] - x_prev[o + k]) / dt;
        }
        for (int k = 0; k < 3; k++) rt += (r[k] - rn * q[k]) * (r[k] - rn * q[k]);
        if (!(sqrt(rt) <= 1e-12 * sc)) {
            constraint[i] = DEFO_CONSTRAINT_NORMAL;
            continue;
        }
        constraint[i] = DEFO_CONSTRAINT_FIXED; /* sticking */
        for (int k = 0; k < 3; k++) x[o + k] -= d[k] - dn * q[k];
    }
    return DEFO_OK;
}
