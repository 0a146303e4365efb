/*
 * integrator/newmark.c — the Newmark scheme of ITF04 §9 (after [BMF03]):
 * explicit elastic forces, implicit damping, rigid-body collisions with the
 * colliding nodes' normal velocity held fixed in the final velocity solve.
 * From step n to n+1, with a(t, x, v) = M⁻¹(f_e(x) + f_d(x, v)) + g:
 *
 *   1  ṽ^{n+½} = vⁿ + Δt/2 · a(tⁿ, xⁿ, ṽ^{n+½})
 *        (M + Δt/2 Dⁿ) ṽ^{n+½} = M vⁿ + Δt/2 (f_e(xⁿ) + M g)            [CG]
 *   2  x̃^{n+1} = xⁿ + Δt ṽ^{n+½}
 *   3  collisions with x̃^{n+1} and vⁿ give x^{n+1} and ṽⁿ (defo_collide_nodes)
 *   4  v^{n+1} = ṽⁿ + Δt/2 (a(tⁿ, xⁿ, ṽⁿ) + a(t^{n+1}, x^{n+1}, v^{n+1}))
 *        (M + Δt/2 D^{n+1}) v^{n+1} = M ṽⁿ + Δt/2 (f_e(xⁿ) − Dⁿ ṽⁿ
 *                                    + f_e(x^{n+1}) + 2 M g)                [CG]
 *
 * Line 4 is the paper's exactly: the trapezoidal rule on the velocities,
 * with the explicit half evaluated at (xⁿ, ṽⁿ) — the collision-modified
 * velocity — using the rotations of xⁿ, and the implicit half at x^{n+1}.
 * Dⁿ is the damping operator with the U, V of xⁿ: because positions change
 * only in lines 2–3, F and its SVD are computed once per step, right after
 * line 3 (ITF04 §9), and the previous step's f_e(xⁿ) and rotations are
 * reused for lines 1 and 4.  Dⁿ ṽⁿ is therefore evaluated before the force
 * model moves its rotations to x^{n+1}.
 *
 * Constraints are projections inside CG (DESIGN.md): fixed nodes keep v = 0
 * in both solves; nodes flagged by the collision step keep the normal
 * component of ṽⁿ (the collider's normal velocity) in line 4 only (ITF04 §9:
 * "held fixed during the final trapezoidal rule step"), sticking nodes
 * (below) all of ṽⁿ or a kinetic-friction velocity.  Without damping
 * M + Δt/2 D = M is diagonal and isotropic per node, so both solves are
 * exact per-node divisions (and the scheme is velocity Verlet, which keeps
 * linear and angular momentum — the conservation test relies on it).
 *
 * Friction (one deliberate deviation, measured by the incline test): the
 * collision step scales the tangential velocity by μ (Δv_N + Δx_N/τ).  In
 * this scheme a node in resting contact (vⁿ_N = 0) penetrates by
 * Δx_N = Δt²/2 |a_N| in line 2 — only half a step of normal acceleration,
 * since ṽ^{n+½} carries Δt/2 of it — while the normal impulse it really
 * receives per step is Δt |a_N| (the rest is absorbed by the normal
 * constraint of line 4, which has no friction).  With τ = Δt, as written
 * in the paper, sliding friction comes out as μ/2 (a = g(sin θ − μ/2 cos θ)
 * measured).  Passing τ = Δt/2 makes μ Δx_N/τ = μ Δt |a_N|, the Coulomb
 * impulse of the full normal load; an impact (vⁿ_N < 0) then sees a
 * friction impulse larger by 2|Δv_N| than its normal impulse — an
 * overestimate only during the one step of an impact.
 *
 * Static friction (Coulomb sticking).  Line 3 alone cannot hold a node:
 * line 2 has already moved it tangentially by Δt ṽ^{n+½}_T and line 4 adds
 * Δt a_T again, so a block with μ > tan θ crept at ≈ 12 % of frictionless.
 * Hence, for every colliding node whose relative tangential velocity line 3
 * brought to rest (b->collided = 2, "sticking"):
 *   3b  the tangential part of its line-2 displacement relative to the
 *       collider is undone: x^{n+1}_T = xⁿ_T + Δt v_c,T (v_c the collider's
 *       velocity there), so the elastic forces of line 4 see it stuck;
 *   4   its whole velocity ṽⁿ is held (DEFO_CONSTRAINT_FIXED), and then
 *   4b  the constraint impulse R = (M + Δt/2 D) v^{n+1} − rhs is checked
 *       against the friction cone |R_T| <= μ R_N.  Outside it the node
 *       slides after all: with R_N > 0 its tangential velocity is set so
 *       that the tangential impulse is μ R_N opposing the slip (exact per
 *       node without damping; with damping it uses the node's mass), with
 *       R_N <= 0 only the normal is held; the velocity is then solved again.
 * Sliding nodes (line 3 left relative tangential velocity) are unchanged,
 * so the kinetic rate above still holds; μ and v_c are those of the
 * collider the node rests on (smallest |φ| at x^{n+1}).  All of it is per
 * node, so 1 and N threads stay bitwise identical.
 *
 * Failure: every body is stepped into scratch arrays and committed only when
 * all succeeded; a non-finite value is refused with an error naming the body
 * and the element or node, and the force model's rotations are restored to
 * xⁿ, so the world is left exactly at step n.
 */
#include "world/world_internal.h"

#include "collision/collision_internal.h"
#include "defo/collision.h"

#include "base/parallel.h"

#include <math.h>
#include <string.h>

typedef struct op_ctx {
    defo_force *force;
    const double *mass;
    double c; /* Δt/2 */
    defo_index n;
} op_ctx;

/* y = (M + c D) x */
static void apply_op(void *vctx, const double *x, double *y) {
    op_ctx *ctx = vctx;
    defo_force_damping_apply(ctx->force, x, y);
    const double *m = ctx->mass;
    const double c = ctx->c;
    defo_index n = ctx->n;
    DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            size_t j = 3 * (size_t)i + (size_t)k;
            y[j] = m[i] * x[j] + c * y[j];
        }
}

/* Solve (M + c D) v = rhs; v holds the initial guess with the constrained
 * values (constraint kinds per node, normals for DEFO_CONSTRAINT_NORMAL). */
static defo_status solve_velocity(defo_world *w, defo_body *b, double c, const double *rhs,
                                  double *v) {
    defo_index n = b->n;
    const unsigned char *con = b->constraint;
    if (!defo_force_has_damping(b->force)) {
        DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
        for (defo_index i = 0; i < n; i++) {
            double *p = v + 3 * (size_t)i;
            if (con[i] == DEFO_CONSTRAINT_FIXED) continue;
            const double *r = rhs + 3 * (size_t)i;
            double inv = 1.0 / b->mass[i];
            double f[3] = {r[0] * inv, r[1] * inv, r[2] * inv};
            if (con[i] == DEFO_CONSTRAINT_NORMAL) {
                /* tangential part free, normal part kept from the guess */
                const double *q = b->normal + 3 * (size_t)i;
                double d = (p[0] - f[0]) * q[0] + (p[1] - f[1]) * q[1] + (p[2] - f[2]) * q[2];
                for (int k = 0; k < 3; k++) f[k] += d * q[k];
            }
            p[0] = f[0];
            p[1] = f[1];
            p[2] = f[2];
        }
        return DEFO_OK;
    }
    /* Jacobi preconditioner 1 / (m + c diag D). */
    defo_force_damping_diagonal(b->force, b->inv_diag);
    DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            size_t j = 3 * (size_t)i + (size_t)k;
            b->inv_diag[j] = 1.0 / (b->mass[i] + c * b->inv_diag[j]);
        }
    op_ctx ctx = {b->force, b->mass, c, n};
    defo_cg_def cg = {w->def.cg_max_iterations, w->def.cg_tolerance};
    defo_cg_result res;
    defo_status s = defo_cg_solve(&cg, n, apply_op, &ctx, b->inv_diag, con, b->normal, rhs, v,
                                  b->cg_work, &res);
    defo_step_stats *st = &w->stats;
    st->cg_iterations += res.iterations;
    st->cg_max_iterations = DEFO_MAX(st->cg_max_iterations, res.iterations);
    st->cg_residual = fmax(st->cg_residual, res.residual);
    if (s == DEFO_WARN_NOT_CONVERGED) st->cg_not_converged++;
    if (s < 0) return defo_error_prefix("body '%s': damping solve", b->name);
    return s;
}

/* The collider a collided node at x (time t) rests on — the one with the
 * smallest |φ|, the last on ties — its velocity there in vc; returns μ. */
static double contact_at(const defo_world *w, double t, const double *x, double vc[3]) {
    double best = INFINITY, mu = 0;
    vc[0] = vc[1] = vc[2] = 0;
    for (int k = 0; k < w->num_colliders; k++) {
        double nk[3], vk[3];
        double phi = fabs(defo_collider_phi(w->colliders[k], t, x, nk, vk));
        if (phi <= best) {
            best = phi;
            mu = w->colliders[k]->friction;
            memcpy(vc, vk, sizeof vk);
        }
    }
    return mu;
}

/* First node with a non-finite position or velocity, or -1. */
static defo_index first_non_finite(defo_index n, const double *x, const double *v) {
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            size_t j = 3 * (size_t)i + (size_t)k;
            if (!isfinite(x[j]) || !isfinite(v[j])) return i;
        }
    return -1;
}

static defo_status step_body(defo_world *w, defo_body *b, double dt) {
    const defo_index n = b->n;
    const double h = 0.5 * dt, t1 = w->time + dt;
    const double *g = w->def.gravity;
    const double *m = b->mass;
    defo_status s, warn = DEFO_OK;
    double *x = b->x, *v = b->v, *xn = b->x_new, *vn = b->v_new, *vt = b->vt, *rhs = b->rhs;

    /* 1: (M + Δt/2 Dⁿ) ṽ^{n+½} = M vⁿ + Δt/2 (f_e(xⁿ) + M g); ṽ^{n+½} in vn */
    DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
    for (defo_index i = 0; i < n; i++) {
        b->constraint[i] = b->fixed[i] ? DEFO_CONSTRAINT_FIXED : DEFO_CONSTRAINT_NONE;
        for (int k = 0; k < 3; k++) {
            size_t j = 3 * (size_t)i + (size_t)k;
            rhs[j] = m[i] * v[j] + h * (b->fe[j] + b->fx[j] + m[i] * g[k]);
            vn[j] = b->fixed[i] ? 0.0 : v[j];
        }
    }
    s = solve_velocity(w, b, h, rhs, vn);
    if (s < 0) return s;
    if (s > 0) warn = s;

    /* 2: x̃^{n+1} = xⁿ + Δt ṽ^{n+½} */
    DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            size_t j = 3 * (size_t)i + (size_t)k;
            xn[j] = x[j] + dt * vn[j];
            vt[j] = v[j];
        }

    /* 3: collisions with x̃^{n+1} and vⁿ → x^{n+1}, ṽⁿ.  Fixed nodes are
     * kinematic: they ignore colliders.  The friction time is Δt/2 (see the
     * top of the file: it makes the friction impulse the full normal
     * impulse of a resting contact). */
    defo_index hits = 0;
    if (w->num_colliders > 0) {
        s = defo_collide_nodes(w->colliders, w->num_colliders, t1, h, n, xn, vt, b->collided,
                               b->normal, &hits);
        if (s < 0) return defo_error_prefix("body '%s': collisions", b->name);
    } else {
        memset(b->collided, 0, (size_t)n);
    }
    for (defo_index i = 0; i < n; i++) {
        if (!b->fixed[i]) continue;
        if (b->collided[i]) hits--;
        b->collided[i] = 0;
        for (int k = 0; k < 3; k++) {
            xn[3 * (size_t)i + (size_t)k] = x[3 * (size_t)i + (size_t)k];
            vt[3 * (size_t)i + (size_t)k] = 0.0;
        }
    }
    w->stats.collisions += hits;

    /* 3b, static friction (see the top of the file): a node whose relative
     * tangential velocity friction brought to rest sticks — the tangential
     * part of its line-2 displacement relative to the collider is undone,
     * and it is a candidate for a full velocity constraint in line 4. */
    if (hits > 0) {
        DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
        for (defo_index i = 0; i < n; i++) {
            if (!b->collided[i]) continue;
            const size_t o = 3 * (size_t)i;
            const double *q = b->normal + o;
            double vc[3];
            (void)contact_at(w, t1, xn + o, vc);
            double r[3], d[3], rn = 0, dn = 0, rt = 0, sc = 0;
            for (int k = 0; k < 3; k++) {
                r[k] = vt[o + k] - vc[k];
                d[k] = xn[o + k] - x[o + k] - dt * vc[k];
                rn += r[k] * q[k];
                dn += d[k] * q[k];
                sc += fabs(vc[k]) + fabs(v[o + k]) + fabs(vt[o + k]);
            }
            for (int k = 0; k < 3; k++) rt += (r[k] - rn * q[k]) * (r[k] - rn * q[k]);
            if (!(sqrt(rt) <= 1e-12 * sc)) continue;
            b->collided[i] = 2;
            for (int k = 0; k < 3; k++) xn[o + k] -= d[k] - dn * q[k];
        }
    }

    /* 4, explicit half with the rotations of xⁿ: rhs = M ṽⁿ + Δt/2 (f_e(xⁿ)
     * − Dⁿ ṽⁿ + 2 (M g + f_x)), f_x the dead load */
    defo_force_damping(b->force, vt, b->tmp);
    DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            size_t j = 3 * (size_t)i + (size_t)k;
            rhs[j] = m[i] * vt[j] + h * (b->fe[j] + b->tmp[j] + 2.0 * (b->fx[j] + m[i] * g[k]));
        }
    /* F and its diagonalization once per step, after line 3 (ITF04 §9). */
    b->stepped = 1;
    s = defo_force_elastic(b->force, xn, b->fe_new, &b->elastic_energy_new);
    if (s) return defo_error_prefix("body '%s'", b->name);
    DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
    for (defo_index i = 0; i < n; i++) {
        b->constraint[i] = b->fixed[i] || b->collided[i] == 2 ? DEFO_CONSTRAINT_FIXED
                           : b->collided[i]                   ? DEFO_CONSTRAINT_NORMAL
                                                              : DEFO_CONSTRAINT_NONE;
        for (int k = 0; k < 3; k++) {
            size_t j = 3 * (size_t)i + (size_t)k;
            rhs[j] += h * b->fe_new[j];
            vn[j] = vt[j]; /* initial guess carries the constrained normal velocity */
        }
    }
    s = solve_velocity(w, b, h, rhs, vn);
    if (s < 0) return s;
    if (s > 0) warn = s;

    /* 4b, Coulomb check of the sticking nodes: the constraint impulse
     * R = (M + Δt/2 D) v − rhs must lie in the friction cone,
     * |R_T| <= μ R_N; nodes outside it slide (normal constraint only) and
     * the velocity is solved again. */
    if (hits > 0) {
        if (defo_force_has_damping(b->force)) {
            op_ctx ctx = {b->force, b->mass, h, n};
            apply_op(&ctx, vn, b->tmp);
        } else {
            DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
            for (defo_index i = 0; i < n; i++)
                for (int k = 0; k < 3; k++)
                    b->tmp[3 * (size_t)i + k] = m[i] * vn[3 * (size_t)i + k];
        }
        DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
        for (defo_index i = 0; i < n; i++) {
            if (b->collided[i] != 2 || b->fixed[i]) continue;
            const size_t o = 3 * (size_t)i;
            const double *q = b->normal + o;
            double vc[3];
            double mu = contact_at(w, t1, xn + o, vc);
            double R[3], rn = 0, rt = 0;
            for (int k = 0; k < 3; k++) {
                R[k] = b->tmp[o + k] - rhs[o + k];
                rn += R[k] * q[k];
            }
            for (int k = 0; k < 3; k++) rt += (R[k] - rn * q[k]) * (R[k] - rn * q[k]);
            rt = sqrt(rt);
            if (rn > 0 && mu * rn >= rt) continue;
            b->collided[i] = 3; /* slides after all */
            if (rn > 0) {
                /* kinetic: the tangential impulse is μ R_N, opposing the slip
                 * (exact without damping, per-node mass with it) */
                double f = (1.0 - mu * rn / rt) / m[i];
                for (int k = 0; k < 3; k++) vn[o + k] = vt[o + k] - f * (R[k] - rn * q[k]);
            } else {
                b->constraint[i] = DEFO_CONSTRAINT_NORMAL;
                for (int k = 0; k < 3; k++) vn[o + k] = vt[o + k];
            }
        }
        int again = 0;
        for (defo_index i = 0; i < n; i++)
            if (b->collided[i] == 3) {
                b->collided[i] = 1;
                again = 1;
            }
        if (again) {
            s = solve_velocity(w, b, h, rhs, vn);
            if (s < 0) return s;
            if (s > 0) warn = s;
        }
    }

    defo_index bad = first_non_finite(n, xn, vn);
    if (bad >= 0)
        return defo_error(DEFO_ERR_NUMERICAL,
                          "body '%s': node %ld has a non-finite position or velocity after the "
                          "step (t = %g, dt = %g)",
                          b->name, (long)bad, w->time, dt);
    return warn;
}

defo_status defo_newmark_step(defo_world *w, double dt) {
    defo_status s = DEFO_OK, warn = DEFO_OK;
    for (int i = 0; i < w->num_bodies; i++) {
        defo_body *b = &w->bodies[i];
        b->stepped = 0;
        if (!b->generation) continue;
        if ((s = defo_body_refresh(b)) < 0) return s;
    }
    for (int i = 0; i < w->num_bodies && s >= 0; i++) {
        defo_body *b = &w->bodies[i];
        if (!b->generation) continue;
        s = step_body(w, b, dt);
        if (s > 0) warn = s;
    }
    if (s < 0) {
        /* Put every touched force model back on xⁿ; the message of the
         * failure stays (a successful evaluation raises nothing). */
        for (int i = 0; i < w->num_bodies; i++) {
            defo_body *b = &w->bodies[i];
            if (b->stepped) (void)defo_force_elastic(b->force, b->x, NULL, NULL);
            b->stepped = 0;
        }
        return s;
    }
    defo_index inverted = 0;
    for (int i = 0; i < w->num_bodies; i++) {
        defo_body *b = &w->bodies[i];
        if (!b->generation) continue;
        /* x and v are copied (callers may hold their pointers); fe is internal */
        memcpy(b->x, b->x_new, 3 * (size_t)b->n * sizeof(double));
        memcpy(b->v, b->v_new, 3 * (size_t)b->n * sizeof(double));
        double *t = b->fe;
        b->fe = b->fe_new;
        b->fe_new = t;
        b->elastic_energy = b->elastic_energy_new;
        b->stepped = 0;
        inverted += defo_force_count_inverted(b->force);
    }
    w->stats.inverted_peak = DEFO_MAX(w->stats.inverted_peak, inverted);
    return warn;
}
