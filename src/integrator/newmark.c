/*
 * integrator/newmark.c — the Newmark scheme of ITF04 §9 (after [BMF03]):
 * explicit elastic forces, implicit damping, rigid-body collisions with the
 * colliding nodes' normal velocity held fixed in the final velocity solve.
 * From step n to n+1, with a(t, x, v) = M⁻¹(f_e(x) + f_d(x, v) + f_ext) and
 * the damping D = the material's (ITF04 §6.2) + α M (Rayleigh mass term,
 * folded into the mass: M + Δt/2 αM = (1 + αΔt/2) M):
 *
 *   1  (M + Δt/2 Dⁿ) ṽ^{n+½} = M vⁿ + Δt/2 (f_e(xⁿ) + f_ext)              [CG]
 *   2  x̃^{n+1} = xⁿ + Δt ṽ^{n+½}
 *   3  the response (defo_step_context.respond: projection, normal velocity,
 *      friction, static friction) with x̃^{n+1} and vⁿ gives x^{n+1}, ṽⁿ
 *   4  (M + Δt/2 D^{n+1}) v^{n+1} = M ṽⁿ + Δt/2 (f_e(xⁿ) − Dⁿ ṽⁿ
 *                                    + f_e(x^{n+1}) + 2 f_ext)             [CG]
 *
 * Line 4 is the trapezoidal rule on the velocities, the explicit half at
 * (xⁿ, ṽⁿ) with the rotations of xⁿ, the implicit half at x^{n+1}.  F and its
 * diagonalisation are computed once per step, right after line 3 (ITF04 §9);
 * f_e(xⁿ) and the rotations of xⁿ are the previous step's, so Dⁿ ṽⁿ is
 * evaluated before the force model moves to x^{n+1}.
 *
 * Constraints are projections inside CG (docs/architecture.md): prescribed nodes move
 * with v = (target − xⁿ)/Δt in both solves (so they land on their targets);
 * nodes the response put in contact keep the normal component of ṽⁿ in line
 * 4 only (ITF04 §9), sticking nodes all of it.  Without damping M + Δt/2 D =
 * M is diagonal, both solves are exact per-node divisions (velocity Verlet:
 * linear and angular momentum are conserved — tested).
 *
 * Friction time τ = Δt/2 (a deliberate deviation, measured by the incline
 * test): a node in resting contact penetrates by Δt²/2 |a_N| in line 2 while
 * its normal impulse per step is Δt |a_N|; τ = Δt, as written in the paper,
 * gives sliding friction μ/2; τ = Δt/2 makes μ Δx_N/τ the Coulomb impulse of
 * the full normal load.
 *
 * 4b, the Coulomb check of the sticking nodes: the constraint impulse
 * R = (M + Δt/2 D) v^{n+1} − rhs must lie in the friction cone |R_T| ≤ μ R_N;
 * outside it the node slides after all (with R_N > 0 its tangential impulse
 * becomes μ R_N opposing the slip, exact per node without damping; with
 * R_N ≤ 0 only the normal is held) and the velocity is solved again.
 *
 * Failure: every body steps into scratch arrays and is committed only when
 * all succeeded; a non-finite value is refused naming the body and node, and
 * the force models are put back on xⁿ.
 */
#include "integrator/integrator_internal.h"

#include <stdio.h>

typedef struct nm_body {
    defo_linear_solver *solver;
    defo_index cap; /* nodes the arrays hold */
    double *fe, *fe_new, *x_new, *v_new, *vt, *rhs, *tmp, *normal, *friction, *diag;
    double *x_start, *v_start, *target; /* sub-steps: the step's start, targets */
    unsigned char *constraint, *contact;
    int fe_valid; /* fe is f_e(x) of the current x */
    int stepped;  /* the force model was moved to x_new */
    /* nm_each: the status of the body's part of the step and its message
     * (raised on the thread that stepped it) */
    defo_status status;
    char message[1024];
} nm_body;

static void nm_free_arrays(nm_body *d) {
    double *a[] = {d->fe,     d->fe_new,   d->x_new, d->v_new,   d->vt,      d->rhs,   d->tmp,
                   d->normal, d->friction, d->diag,  d->x_start, d->v_start, d->target};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) defo_free(a[i]);
    defo_free(d->constraint);
    defo_free(d->contact);
}

static defo_status nm_alloc(nm_body *d, defo_index n) {
    nm_free_arrays(d);
    const size_t m = 3 * (size_t)n + 1;
    double **a3[] = {&d->fe,  &d->fe_new, &d->x_new,   &d->v_new,   &d->vt,    &d->rhs,
                     &d->tmp, &d->normal, &d->x_start, &d->v_start, &d->target};
    int ok = 1;
    for (size_t i = 0; i < sizeof a3 / sizeof a3[0]; i++)
        ok &= (*a3[i] = defo_calloc(m, sizeof(double))) != NULL;
    ok &= (d->friction = defo_calloc((size_t)n + 1, sizeof(double))) != NULL;
    ok &= (d->diag = defo_calloc(3 * m, sizeof(double))) != NULL;
    ok &= (d->constraint = defo_calloc((size_t)n + 1, 1)) != NULL;
    ok &= (d->contact = defo_calloc((size_t)n + 1, 1)) != NULL;
    d->cap = n;
    d->fe_valid = 0;
    return ok ? DEFO_OK : defo_error_oom("newmark state", 12 * m * sizeof(double));
}

static void nm_detach(defo_stepper *s, defo_step_body *b) {
    (void)s;
    nm_body *d = b->data;
    if (!d) return;
    nm_free_arrays(d);
    defo_linear_solver_destroy(d->solver);
    defo_free(d);
    b->data = NULL;
}

static defo_status nm_attach(defo_stepper *s, defo_step_body *b) {
    nm_body *d = defo_calloc(1, sizeof *d);
    if (!d) return defo_error_oom("newmark body", sizeof *d);
    b->data = d;
    defo_linear_solver_def ld = s->def.linear;
    ld.curvature = DEFO_CURVATURE_ERROR; /* M + Δt/2 D is positive definite */
    defo_status st = defo_linear_solver_create(&ld, &d->solver);
    if (!st) st = nm_alloc(d, b->n);
    if (st) nm_detach(s, b);
    return st;
}

/* The frame's steps: at most time_step and NM_HEADROOM · cfl · the rest
 * wave time.  The headroom lets a body stiffen a little — a 1 % squash
 * raises a neo-Hookean element's bound 2.4 % (ν = 0.3), a body resting under its
 * weight more — before a step must be cut in two (nm_step): without it,
 * every step of a slightly loaded body would be, for a 1 % shorter limit. */
#define NM_HEADROOM 0.9
static int nm_steps(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                    double T) {
    double dt = def->time_step;
    for (int i = 0; i < count; i++)
        dt = fmin(dt, NM_HEADROOM * def->cfl * defo_force_model_wave_time(bodies[i]->force));
    double k = ceil(T / dt * (1.0 - 1e-12));
    if (!(k >= 1)) k = 1;
    return k > 1e9 ? -1 : (int)k;
}

typedef struct op_ctx {
    defo_force_model *force;
    const double *mass;
    double c;     /* Δt/2 */
    double scale; /* 1 + c α: the Rayleigh mass term folded into M */
    defo_index n;
} op_ctx;

/* y = ((1 + cα) M + c D) x */
static void apply_op(void *vctx, const double *x, double *y) {
    op_ctx *ctx = vctx;
    defo_force_model_damping_apply(ctx->force, x, y);
    const double *m = ctx->mass;
    const double c = ctx->c, a = ctx->scale;
    const defo_index n = ctx->n;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(3 * (size_t)n))
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            y[j] = a * m[i] * x[j] + c * y[j];
        }
}

/* Solve ((1 + cα) M + c D) v = rhs (α the Rayleigh mass coefficient, D the
 * material's damping); v holds the guess with the constrained values. */
static defo_status solve_velocity(defo_step_body *b, double c, double alpha, const double *rhs,
                                  double *v) {
    nm_body *d = b->data;
    const defo_index n = b->n;
    const unsigned char *con = d->constraint;
    const double scale = 1.0 + c * alpha;
    if (!defo_force_model_has_damping(b->force)) {
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
        for (defo_index i = 0; i < n; i++) {
            double *p = v + 3 * (size_t)i;
            if (con[i] == DEFO_CONSTRAINT_FIXED) continue;
            const double *r = rhs + 3 * (size_t)i;
            const double inv = 1.0 / (scale * b->mass[i]);
            double f[3] = {r[0] * inv, r[1] * inv, r[2] * inv};
            if (con[i] == DEFO_CONSTRAINT_NORMAL) {
                /* tangential part free, normal part kept from the guess */
                const double *q = d->normal + 3 * (size_t)i;
                const double dn =
                    (p[0] - f[0]) * q[0] + (p[1] - f[1]) * q[1] + (p[2] - f[2]) * q[2];
                for (int k = 0; k < 3; k++) f[k] += dn * q[k];
            }
            p[0] = f[0], p[1] = f[1], p[2] = f[2];
        }
        return DEFO_OK;
    }
    /* diagonal blocks of M + c D for the (block) Jacobi preconditioner */
    defo_force_model_damping_diagonal(b->force, d->diag);
    for (defo_index i = 0; i < n; i++) {
        double *B = d->diag + 9 * (size_t)i;
        for (int k = 0; k < 9; k++) B[k] *= c;
        for (int k = 0; k < 3; k++) B[4 * k] += scale * b->mass[i];
    }
    op_ctx ctx = {b->force, b->mass, c, scale, n};
    defo_linear_system sys;
    memset(&sys, 0, sizeof sys);
    sys.n = n;
    sys.apply = apply_op;
    sys.ctx = &ctx;
    sys.diagonal = d->diag;
    sys.constraint = con;
    sys.normal = d->normal;
    sys.layout = b->layout;
    defo_linear_stats ls;
    defo_status s = defo_linear_solver_solve(d->solver, &sys, rhs, v, 0.0, &ls);
    defo_step_body_stats *st = &b->stats;
    st->cg_iterations += ls.iterations;
    if (ls.iterations > st->cg_max_iterations) st->cg_max_iterations = ls.iterations;
    if (ls.residual > st->residual) st->residual = ls.residual;
    st->solver_recoveries += ls.recovered;
    if (s == DEFO_WARN_NOT_CONVERGED) st->not_converged++;
    if (s < 0) return defo_error_prefix("body '%s': damping solve", b->name);
    return s;
}

/* Lines 1-3 of body b: the half-step velocity, the position update, the
 * response to colliders. */
static defo_status step_body_start(const defo_integrator_def *def, defo_step_body *b,
                                   const double *target, const defo_step_context *ctx) {
    nm_body *d = b->data;
    const defo_index n = b->n;
    const double dt = ctx->dt, h = 0.5 * dt, t1 = ctx->t + dt;
    const double alpha = def->rayleigh_mass;
    const double *m = b->mass, *fx = b->load;
    defo_status s, warn = DEFO_OK;
    double *x = b->x, *v = b->v, *xn = d->x_new, *vn = d->v_new, *vt = d->vt, *rhs = d->rhs;
    /* d->fe is f_e(xⁿ): nm_step made it current, every commit keeps it so */

    /* 1: (M + Δt/2 Dⁿ) ṽ^{n+½} = M vⁿ + Δt/2 (f_e(xⁿ) + f_ext); prescribed
     * nodes move with (target − xⁿ)/Δt */
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
    for (defo_index i = 0; i < n; i++) {
        const int p = b->prescribed && b->prescribed[i];
        d->constraint[i] = p ? DEFO_CONSTRAINT_FIXED : DEFO_CONSTRAINT_NONE;
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            rhs[j] = m[i] * v[j] + h * (d->fe[j] + fx[j]);
            vn[j] = p ? (target[j] - x[j]) / dt : v[j];
        }
    }
    s = solve_velocity(b, h, alpha, rhs, vn);
    if (s < 0) return s;
    if (s > 0) warn = s;

    /* 2: x̃^{n+1} = xⁿ + Δt ṽ^{n+½} (prescribed nodes land on their targets) */
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
    for (defo_index i = 0; i < n; i++) {
        const int p = b->prescribed && b->prescribed[i];
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            xn[j] = p ? target[j] : x[j] + dt * vn[j];
            vt[j] = p ? vn[j] : v[j];
        }
    }

    /* 3: the response with x̃^{n+1} and vⁿ → x^{n+1}, ṽⁿ (friction time Δt/2) */
    defo_index hits = 0;
    memset(d->contact, 0, (size_t)n);
    if (ctx->respond) {
        s = ctx->respond(ctx->ctx, b, t1, dt, h, x, xn, vt, d->contact, d->normal, d->friction,
                         &hits);
        if (s < 0) return defo_error_prefix("body '%s': collisions", b->name);
    }
    b->stats.collisions = hits;

    return warn;
}

/* Line 4 and 4b of body b (after the responses of line 3 made x^{n+1} and
 * ṽⁿ, in d->x_new and d->vt). */
static defo_status step_body_end(const defo_integrator_def *def, defo_step_body *b,
                                 const defo_step_context *ctx) {
    nm_body *d = b->data;
    const defo_index n = b->n;
    const double dt = ctx->dt, h = 0.5 * dt;
    const double alpha = def->rayleigh_mass;
    const double *m = b->mass, *fx = b->load;
    defo_status s, warn = DEFO_OK;
    double *xn = d->x_new, *vn = d->v_new, *vt = d->vt, *rhs = d->rhs;
    const defo_index hits = b->stats.collisions;
    /* 4, explicit half with the rotations of xⁿ:
     * rhs = M ṽⁿ + Δt/2 (f_e(xⁿ) − (αM + Dⁿ) ṽⁿ + 2 f_ext) */
    defo_force_model_damping_apply(b->force, vt, d->tmp);
    const double keep = 1.0 - h * alpha;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            rhs[j] = keep * m[i] * vt[j] + h * (d->fe[j] - d->tmp[j] + 2.0 * fx[j]);
        }
    /* F and its diagonalisation once per step, after line 3 (ITF04 §9) */
    d->stepped = 1;
    s = defo_force_model_evaluate(b->force, xn, 0, d->fe_new, NULL);
    if (s) return defo_error_prefix("body '%s'", b->name);
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
    for (defo_index i = 0; i < n; i++) {
        const int p = b->prescribed && b->prescribed[i];
        d->constraint[i] = p ? DEFO_CONSTRAINT_FIXED : d->contact[i];
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            rhs[j] += h * d->fe_new[j];
            vn[j] = vt[j]; /* the guess carries the constrained velocities */
        }
    }
    s = solve_velocity(b, h, alpha, rhs, vn);
    if (s < 0) return s;
    if (s > 0) warn = s;

    /* 4b: Coulomb check of the sticking nodes */
    if (hits > 0) {
        const double scale = 1.0 + h * alpha;
        if (defo_force_model_has_damping(b->force)) {
            op_ctx oc = {b->force, b->mass, h, scale, n};
            apply_op(&oc, vn, d->tmp);
        } else {
            DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
            for (defo_index i = 0; i < n; i++)
                for (int k = 0; k < 3; k++)
                    d->tmp[3 * (size_t)i + k] = scale * m[i] * vn[3 * (size_t)i + k];
        }
        int again = 0;
        for (defo_index i = 0; i < n; i++) {
            if (d->contact[i] != DEFO_CONSTRAINT_FIXED || (b->prescribed && b->prescribed[i]))
                continue;
            const size_t o = 3 * (size_t)i;
            const double *q = d->normal + o, mu = d->friction[i];
            double R[3], rn = 0, rt = 0;
            for (int k = 0; k < 3; k++) {
                R[k] = d->tmp[o + k] - rhs[o + k];
                rn += R[k] * q[k];
            }
            for (int k = 0; k < 3; k++) rt += (R[k] - rn * q[k]) * (R[k] - rn * q[k]);
            rt = sqrt(rt);
            if (rn > 0 && mu * rn >= rt) continue;
            again = 1; /* slides after all */
            if (rn > 0) {
                /* kinetic: the tangential impulse is μ R_N opposing the slip;
                 * the whole velocity stays held (FIXED), at this value — a
                 * NORMAL constraint would let the solve drop the friction */
                const double f = (1.0 - mu * rn / rt) / (scale * m[i]);
                for (int k = 0; k < 3; k++) vn[o + k] = vt[o + k] - f * (R[k] - rn * q[k]);
            } else {
                d->constraint[i] = DEFO_CONSTRAINT_NORMAL;
                for (int k = 0; k < 3; k++) vn[o + k] = vt[o + k];
            }
        }
        if (again) {
            s = solve_velocity(b, h, alpha, rhs, vn);
            if (s < 0) return s;
            if (s > 0) warn = s;
        }
    }
    defo_index bad = defo_first_non_finite(n, xn, vn);
    if (bad >= 0)
        return defo_error(DEFO_ERR_NUMERICAL,
                          "body '%s': node %ld has a non-finite position or velocity after the "
                          "step (t = %g, dt = %g)",
                          b->name, (long)bad, ctx->t, dt);
    return warn;
}

/* Lines 1-3 (end = 0) or 4 (end = 1) of every body, in parallel over the
 * bodies when the thread governor finds that faster than body after body
 * with each body's own loops parallel (many small bodies: a pile).  A body
 * stepped on one thread runs its loops on it, the same arithmetic: bit for
 * bit what body after body gives.  As body after body: *warn gets the last
 * body's warning, and an error is the first failing body's (its message
 * raised again on the calling thread); the rest are not committed. */
static defo_status nm_each(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx, int sub, int end, defo_status *warn) {
#ifdef _OPENMP
    DEFO_PRAGMA(omp parallel for schedule(dynamic, 1) if (DEFO_PARALLEL_GO(count > 1)))
#endif
    for (int i = 0; i < count; i++) {
        nm_body *d = bodies[i]->data;
        d->status =
            end ? step_body_end(&s->def, bodies[i], ctx)
                : step_body_start(&s->def, bodies[i], sub ? d->target : bodies[i]->target, ctx);
        if (d->status) snprintf(d->message, sizeof d->message, "%s", defo_last_error());
    }
    for (int i = 0; i < count; i++) {
        const nm_body *d = bodies[i]->data;
        if (!d->status) continue;
        (void)defo_error(d->status, "%s", d->message);
        if (d->status < 0) return d->status;
        *warn = d->status;
    }
    return DEFO_OK;
}

/* cfl · the smallest stable time of the bodies' last evaluations */
static double nm_limit(const defo_stepper *s, defo_step_body *const *bodies, int count) {
    double lim = INFINITY;
    for (int i = 0; i < count; i++)
        lim = fmin(lim, s->def.cfl * defo_force_model_stable_time(bodies[i]->force));
    return lim;
}

/* One Newmark step of every body over ctx->dt, prescribed nodes landing on
 * target(b) (b->target, or the sub-step's); committed only when all
 * succeeded.  With *reject (not NULL), a step whose end state allows only a
 * shorter one — an element squashed within the step, a far stiffer tangent —
 * is not committed either: *reject gets that state's limit (cfl · its stable
 * time) and the bodies stay at xⁿ (their force models evaluated there). */
static defo_status nm_substep(defo_stepper *s, defo_step_body *const *bodies, int count,
                              const defo_step_context *ctx, int sub, double *reject) {
    defo_status st = DEFO_OK, warn = DEFO_OK;
    for (int i = 0; i < count; i++) ((nm_body *)bodies[i]->data)->stepped = 0;
    st = nm_each(s, bodies, count, ctx, sub, 0, &warn);
    /* 3, between bodies: positions x^{n+1} and velocities ṽⁿ of every body
     * at once (equal and opposite impulses), after the colliders' */
    const int between = st >= 0 && ctx->contact_respond;
    if (between) {
        st = defo_stepper_scratch(s, count);
        for (int i = 0; !st && i < count; i++) {
            nm_body *d = bodies[i]->data;
            s->xs[i] = bodies[i]->x;
            s->vs[i] = d->x_new;
            s->ws[i] = d->vt;
        }
        defo_index pairs = 0;
        if (!st)
            st = ctx->contact_respond(ctx->ctx, bodies, count, ctx->dt, 0.5 * ctx->dt, s->xs, s->vs,
                                      s->ws, 1, &pairs);
    }
    if (st >= 0) {
        const defo_status e = nm_each(s, bodies, count, ctx, sub, 1, &warn);
        if (e < 0) st = e;
    }
    /* 4c: the final velocities of pairs still in contact do not approach
     * (the elastic half of line 4 knows no contact) */
    if (between && st >= 0) {
        for (int i = 0; i < count; i++) {
            nm_body *d = bodies[i]->data;
            s->ws[i] = d->v_new;
        }
        defo_index pairs = 0;
        st = ctx->contact_respond(ctx->ctx, bodies, count, ctx->dt, 0.5 * ctx->dt, s->xs, s->vs,
                                  s->ws, 0, &pairs);
        for (int i = 0; st >= 0 && i < count; i++) {
            nm_body *d = bodies[i]->data;
            defo_index bad = defo_first_non_finite(bodies[i]->n, d->x_new, d->v_new);
            if (bad >= 0)
                st = defo_error(DEFO_ERR_NUMERICAL,
                                "body '%s': node %ld has a non-finite position or velocity after "
                                "contact (t = %g)",
                                bodies[i]->name, (long)bad, ctx->t);
        }
    }
    if (st >= 0 && reject) {
        const double lim = nm_limit(s, bodies, count);
        *reject = ctx->dt > lim * (1.0 + 1e-12) ? lim : 0.0;
    }
    if (st < 0 || (reject && *reject > 0)) {
        /* put every moved force model back on xⁿ; a failure's message stays */
        for (int i = 0; i < count; i++) {
            nm_body *d = bodies[i]->data;
            if (d->stepped) {
                const defo_status e =
                    defo_force_model_evaluate(bodies[i]->force, bodies[i]->x, 0, NULL, NULL);
                if (st >= 0 && e) st = defo_error_prefix("body '%s'", bodies[i]->name);
            }
            d->stepped = 0;
        }
        return st < 0 ? st : warn;
    }
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        nm_body *d = b->data;
        memcpy(b->x, d->x_new, 3 * (size_t)b->n * sizeof(double));
        memcpy(b->v, d->v_new, 3 * (size_t)b->n * sizeof(double));
        double *t = d->fe;
        d->fe = d->fe_new;
        d->fe_new = t;
        d->fe_valid = 1;
        d->stepped = 0;
    }
    return warn;
}

/* Sub-steps over an interval T: the fewest equal parts of T no longer than
 * cfl · the stable time of each body's last evaluation (1 when T already
 * is), at most `cap`. */
static int nm_parts(const defo_stepper *s, defo_step_body *const *bodies, int count, double T,
                    int cap) {
    const double lim = nm_limit(s, bodies, count);
    if (!(lim > 0) || !(T > lim * (1.0 + 1e-12))) return 1;
    const double k = ceil(T / lim);
    return k > cap ? cap : (int)k;
}

/* The frame's steps are cut from the rest wave time (nm_steps); a body that
 * has stiffened since (a compressed neo-Hookean element: σ = 0.5 is ~7× its
 * rest modulus, defo_force_model_stable_time) would make that step unstable,
 * so the step is cut into sub-steps no longer than cfl · the stable time.
 * After each sub-step the rest of the step is cut again from the stable
 * time of the state it reached (nm_parts), and a sub-step whose end state
 * allows only a shorter one — stiffening within the step, an ear squashed
 * against the ground — is taken again, shorter (nm_substep's rejection): so
 * every sub-step is stable at both its ends.  Prescribed nodes move
 * linearly to their targets.  Every cut is a function of the state:
 * deterministic. */
#define NM_MAX_SUBSTEPS 4096
static defo_status nm_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    for (int i = 0; i < count; i++) {
        /* the stable time is that of f_e(xⁿ): evaluated now if not kept */
        defo_step_body *b = bodies[i];
        nm_body *d = b->data;
        if (b->changed) d->fe_valid = 0;
        if (defo_force_model_track_stable_time(b->force)) d->fe_valid = 0;
        if (!d->fe_valid) {
            if (defo_force_model_evaluate(b->force, b->x, 0, d->fe, NULL))
                return defo_error_prefix("body '%s'", b->name);
            d->fe_valid = 1;
        }
    }
    int K = nm_parts(s, bodies, count, ctx->dt, NM_MAX_SUBSTEPS);
    defo_status st = DEFO_OK, warn = DEFO_OK;
    defo_step_context sub = *ctx;
    double done = 0.0;      /* of ctx->dt */
    int taken = 0, cut = 0; /* sub-steps taken and tried; cut: x_start holds xⁿ */
    while (st >= 0) {
        if (K > 1 && !cut) {
            cut = 1;
            for (int i = 0; i < count; i++) {
                defo_step_body *b = bodies[i];
                nm_body *d = b->data;
                memcpy(d->x_start, b->x, 3 * (size_t)b->n * sizeof(double));
                memcpy(d->v_start, b->v, 3 * (size_t)b->n * sizeof(double));
            }
        }
        const double rest = ctx->dt - done;
        const int last = K == 1;
        sub.t = ctx->t + done;
        sub.dt = last ? rest : rest / K;
        const double w = last ? 1.0 : (done + sub.dt) / ctx->dt;
        for (int i = 0; cut && i < count; i++) {
            defo_step_body *b = bodies[i];
            nm_body *d = b->data;
            for (defo_index n = 0; b->prescribed && n < b->n; n++) {
                if (!b->prescribed[n]) continue;
                for (int k = 0; k < 3; k++) {
                    const size_t q = 3 * (size_t)n + (size_t)k;
                    d->target[q] =
                        last ? b->target[q] : d->x_start[q] + w * (b->target[q] - d->x_start[q]);
                }
            }
        }
        /* the last allowed sub-step is taken whatever its end state */
        const int budget = taken < NM_MAX_SUBSTEPS - 1;
        double reject = 0.0;
        st = nm_substep(s, bodies, count, &sub, cut, budget ? &reject : NULL);
        if (st > 0) warn = st;
        if (st < 0) break;
        if (reject > 0) {
            /* not taken: cut what is left from the end state's limit */
            const double k = ceil(rest / reject);
            const int cap = NM_MAX_SUBSTEPS - taken;
            K = k > cap ? cap : (int)fmax(k, K + 1.0);
            continue;
        }
        taken++;
        if (last) break;
        done += sub.dt;
        K = nm_parts(s, bodies, count, ctx->dt - done,
                     taken < NM_MAX_SUBSTEPS - 1 ? NM_MAX_SUBSTEPS - taken : 1);
    }
    for (int i = 0; i < count; i++) bodies[i]->stats.extra_steps += taken - 1;
    if (st < 0 && cut) {
        /* every body back at the step's start */
        for (int i = 0; i < count; i++) {
            defo_step_body *b = bodies[i];
            nm_body *d = b->data;
            memcpy(b->x, d->x_start, 3 * (size_t)b->n * sizeof(double));
            memcpy(b->v, d->v_start, 3 * (size_t)b->n * sizeof(double));
            d->fe_valid = 0;
            (void)defo_force_model_evaluate(b->force, b->x, 0, NULL, NULL);
        }
    }
    return st < 0 ? st : warn;
}

static defo_status nm_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                       const defo_index *parent) {
    (void)s, (void)old_n, (void)parent;
    nm_body *d = b->data;
    defo_status st = nm_alloc(d, b->n);
    defo_linear_solver_invalidate(d->solver);
    return st;
}

/* No history; a restored state recomputes f_e from x. */
static defo_status nm_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size) {
    defo_status st = defo_no_history_restore(s, b, in, size);
    if (st) return st;
    nm_body *d = b->data;
    d->fe_valid = 0;
    defo_linear_solver_invalidate(d->solver);
    return DEFO_OK;
}

static void nm_frame_start(defo_stepper *s, defo_step_body *b) {
    (void)s;
    nm_body *d = b->data;
    /* f_e of the last step's x is kept: it is a function of x alone unless
     * the state or the model changed (then recomputed from x, as a resumed
     * run does) */
    if (b->changed) {
        d->fe_valid = 0;
        defo_linear_solver_invalidate(d->solver);
    }
}

static size_t nm_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    const nm_body *d = b->data;
    return sizeof *d + (size_t)d->cap * (9 * 3 * sizeof(double) + sizeof(double) + 2) +
           defo_linear_solver_bytes(d->solver);
}

const defo_integrator_ops defo_newmark_ops = {DEFO_INTEGRATOR_NEWMARK,
                                              "newmark",
                                              1,
                                              nm_steps,
                                              defo_stepper_create,
                                              defo_stepper_destroy,
                                              nm_attach,
                                              nm_detach,
                                              nm_step,
                                              nm_topology_changed,
                                              nm_frame_start,
                                              defo_no_history_bytes,
                                              defo_no_history_save,
                                              nm_restore,
                                              nm_bytes};
