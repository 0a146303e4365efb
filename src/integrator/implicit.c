/*
 * integrator/implicit.c — the implicit velocity solve shared by backward
 * Euler and BDF2 (defo/integrator.h).
 *
 * Both integrators take a step as
 *   M (v⁺ − v_b) = h (f(x⁺) + f_ext − C v⁺),   x⁺ = x_b + h v⁺,
 * backward Euler with (x_b, v_b, h) = (xⁿ, vⁿ, Δt), BDF2 (MTPS08 §5.2) with
 * x_b = (4xⁿ − xⁿ⁻¹)/3, v_b = (4vⁿ − vⁿ⁻¹)/3, h = 2Δt/3.  C = αM + βK + D,
 * D the material's damping (defo/force_model.h).
 *
 * Corotated bodies (MG04 §6): the rotations are taken once per step and kept
 * through it, so f(x) = −(K'x + f'0) is linear and the step is one linear
 * solve
 *   ((1 + hα) M + (h² + hβ) K' + h D) v⁺ = M v_b + h (f(x_b) + f_ext),
 * PCG from v⁺ = vⁿ (MG04's warm start) or the direct solver.  MG04 takes the
 * rotations of xⁿ; defo takes those of the predicted end of the step
 * x̃ = x_b + h ṽ (ṽ the solve's start: vⁿ, prescribed nodes on their
 * targets).  Rotations lagged to xⁿ act on the step's own turn as if it were
 * stretch and feed energy in: a free spinning beam under BDF2 gains energy
 * without bound (backward Euler's damping hides it).  With x̃ the energy
 * follows the Newton-solved invertible formulation (test_corotated), and at
 * rest (ṽ = 0) nothing changes.  With rotations
 * kept by the MTPS08 §4.4 lazy rule the factorisation follows them: kept
 * (the direct solver not refactoring, the matrix not reassembled) while no
 * rotation was recomputed, made again as soon as one was.
 * Invertible bodies (TSIF05, MMDJ01 §2.6): Newton on the incremental
 * potential in the velocity
 *   E(v) = ½(v − v_b)ᵀM(v − v_b) + ½hα vᵀMv + ½h vᵀ(βK + D)v + Ψ(x_b + h v)
 *          − h f_extᵀ v,
 * whose gradient is the residual above (K and D held at the iterate; a
 * shell's D is that of the step's start, so there it is exact) and
 * whose Hessian (1 + hα)M + (h² + hβ)K + hD is positive definite with the
 * definiteness fix (TSIF05 §8); the shared driver (defo_newton) with its line
 * search, to |r| ≤ tolerance · h · f_ref, from the last solve's velocity
 * (before the response below moved its contact nodes; a state set from
 * outside starts from vⁿ).  Colliders are part of that
 * potential as TSIF05 §10 penalty energy at the step's end (gradient h f_pen,
 * Hessian h² K_pen): a body meets the ground during the solve instead of
 * being projected out of it afterwards, which inverted elements.
 * Prescribed nodes move with (target − x_b)/h, so they land on their targets.
 * Then the ITF04 §9 response (projection, normal velocity, friction), and
 * for corotated bodies, whose linear step has no contact term, the
 * explicit response between bodies.
 *
 * Failure: the solve works in scratch arrays; x and v change only when it
 * succeeded.
 */
#include "integrator/integrator_internal.h"

static void free_arrays(defo_implicit_body *d) {
    double *a[] = {d->xb,     d->vb,       d->vn,     d->y,      d->f,    d->rhs,    d->tmp,
                   d->normal, d->friction, d->x_prev, d->v_prev, d->diag, d->x_fact, d->v_solved};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) defo_free(a[i]);
    defo_free(d->constraint);
    defo_free(d->contact);
    defo_free(d->cblock);
    d->cblock = NULL;
    d->xb = d->vb = d->vn = d->y = d->f = d->rhs = d->tmp = d->normal = d->friction = d->diag =
        d->x_fact = d->v_solved = NULL;
    d->have_solved = 0;
    d->have_fact = d->rebuild = 0;
    d->x_prev = d->v_prev = NULL;
    d->constraint = d->contact = NULL;
}

static defo_status alloc_arrays(defo_implicit_body *d, defo_index n, int history) {
    const size_t m = 3 * (size_t)n + 1;
    double **a[] = {&d->xb,  &d->vb,  &d->vn,     &d->y,      &d->f,
                    &d->rhs, &d->tmp, &d->normal, &d->x_fact, &d->v_solved};
    int ok = 1;
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        ok &= (*a[i] = defo_calloc(m, sizeof(double))) != NULL;
    ok &= (d->friction = defo_calloc((size_t)n + 1, sizeof(double))) != NULL;
    ok &= (d->diag = defo_calloc(3 * m, sizeof(double))) != NULL;
    ok &= (d->cblock = defo_calloc(3 * m, sizeof(double))) != NULL;
    ok &= (d->constraint = defo_calloc((size_t)n + 1, 1)) != NULL;
    ok &= (d->contact = defo_calloc((size_t)n + 1, 1)) != NULL;
    if (history) {
        ok &= (d->x_prev = defo_calloc(m, sizeof(double))) != NULL;
        ok &= (d->v_prev = defo_calloc(m, sizeof(double))) != NULL;
    }
    d->cap = n;
    return ok ? DEFO_OK : defo_error_oom("implicit integrator state", 12 * m * sizeof(double));
}

void defo_implicit_detach(defo_step_body *b) {
    defo_implicit_body *d = b->data;
    if (!d) return;
    free_arrays(d);
    defo_linear_solver_destroy(d->linear);
    defo_free(d);
    b->data = NULL;
}

static int is_linear(const defo_step_body *b) {
    return defo_force_model_formulation(b->force) == DEFO_FORMULATION_COROTATED;
}

defo_status defo_implicit_attach(const defo_integrator_def *def, defo_step_body *b, int history) {
    defo_implicit_body *d = defo_calloc(1, sizeof *d);
    if (!d) return defo_error_oom("implicit integrator", sizeof *d);
    b->data = d;
    d->b = b;
    defo_status st = alloc_arrays(d, b->n, history);
    if (!st && is_linear(b)) {
        defo_linear_solver_def ld = def->linear;
        ld.curvature = DEFO_CURVATURE_ERROR; /* positive definite */
        st = defo_linear_solver_create(&ld, &d->linear);
    } else if (!st) {
        st = defo_joint_check(def); /* the joint Newton solve takes this body */
    }
    if (st) defo_implicit_detach(b);
    return st;
}

defo_status defo_implicit_resize(defo_step_body *b, defo_index old_n, const defo_index *parent) {
    defo_implicit_body *d = b->data;
    const int history = d->x_prev != NULL;
    double *xp = d->x_prev, *vp = d->v_prev;
    d->x_prev = d->v_prev = NULL;
    free_arrays(d);
    defo_status st = alloc_arrays(d, b->n, history);
    if (!st && history) {
        /* the old nodes keep their history, new ones take their parent's */
        memcpy(d->x_prev, xp, 3 * (size_t)old_n * sizeof(double));
        memcpy(d->v_prev, vp, 3 * (size_t)old_n * sizeof(double));
        for (defo_index i = old_n; i < b->n; i++) {
            const defo_index p = parent[i], q = b->parent_b ? b->parent_b[i] : p;
            const double w = b->parent_w ? b->parent_w[i] : 0.0;
            for (int k = 0; k < 3; k++) { /* a cut point lies between two nodes */
                d->x_prev[3 * (size_t)i + k] =
                    (1 - w) * d->x_prev[3 * (size_t)p + k] + w * d->x_prev[3 * (size_t)q + k];
                d->v_prev[3 * (size_t)i + k] =
                    (1 - w) * d->v_prev[3 * (size_t)p + k] + w * d->v_prev[3 * (size_t)q + k];
            }
        }
    }
    defo_free(xp);
    defo_free(vp);
    if (d->linear) {
        defo_linear_solver_invalidate(d->linear);
        defo_linear_solver_forget_history(d->linear);
    }
    return st;
}

/* A state set from outside or another stiffness: the factor is not kept
 * (a Newton body's is the joint solve's: every body of it forgets). */
static void forget_factor(defo_stepper *s, defo_step_body *b) {
    defo_implicit_body *d = b->data;
    if (d->linear) {
        defo_linear_solver_invalidate(d->linear);
        d->have_fact = d->rebuild = 0;
        d->A_fact = NULL;
    } else {
        defo_joint_invalidate(s->joint);
    }
}

/* record: have_fact, lag.valid, lag.age, 0 (int32 each), t_fact,
 * lag.first_rate, lag.last_rate (the joint record's head), then h_fact,
 * then x_fact (3n); a corotated body's linear solver then adds the
 * solutions its initial guesses are made from; then have_solved (int64)
 * and v_solved (3n) */
static size_t fact_head_bytes(const defo_step_body *b) {
    const defo_implicit_body *d = b->data;
    return defo_joint_record_bytes(b) + sizeof(double) +
           (d && d->linear ? defo_linear_solver_history_bytes(d->linear, b->n) : 0);
}

size_t defo_implicit_fact_bytes(const defo_step_body *b) {
    return fact_head_bytes(b) + 8 + 3 * (size_t)b->n * sizeof(double);
}

void defo_implicit_fact_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    const defo_implicit_body *d = b->data;
    unsigned char *o = out;
    if (d->linear) {
        /* the body's own factor, in the same layout */
        defo_linear_lag lag;
        memset(&lag, 0, sizeof lag);
        if (d->rebuild)
            lag = d->lag; /* restored, not yet rebuilt */
        else if (d->have_fact)
            defo_linear_solver_get_lag(d->linear, &lag);
        const int32_t head[4] = {d->have_fact && lag.valid, lag.valid, lag.age, 0};
        const double dh[3] = {d->t_fact, lag.first_rate, lag.last_rate};
        memcpy(o, head, 16);
        memcpy(o + 16, dh, sizeof dh);
        memcpy(o + DEFO_JOINT_HEAD, d->x_fact, 3 * (size_t)b->n * sizeof(double));
    } else {
        defo_joint_record_save(s->joint, b, d->x_fact, o);
    }
    memcpy(o + defo_joint_record_bytes(b), &d->h_fact, sizeof(double));
    if (d->linear)
        defo_linear_solver_history_save(d->linear, b->n,
                                        o + defo_joint_record_bytes(b) + sizeof(double));
    const int64_t have = d->have_solved;
    memcpy(o + fact_head_bytes(b), &have, 8);
    memcpy(o + fact_head_bytes(b) + 8, d->v_solved, 3 * (size_t)b->n * sizeof(double));
}

defo_status defo_implicit_fact_restore(defo_stepper *s, defo_step_body *b, const void *in) {
    defo_implicit_body *d = b->data;
    const unsigned char *p = in;
    double h;
    memcpy(&h, p + defo_joint_record_bytes(b), sizeof h);
    int32_t head[4];
    memcpy(head, p, 16);
    if (head[0] && !(h > 0 && isfinite(h)))
        return defo_error(DEFO_ERR_PARSE, "body '%s': bad factorisation record", b->name);
    d->h_fact = h;
    int64_t have;
    memcpy(&have, p + fact_head_bytes(b), 8);
    if (have < 0 || have > 1)
        return defo_error(DEFO_ERR_PARSE, "body '%s': bad solve record", b->name);
    d->have_solved = (int)have;
    memcpy(d->v_solved, p + fact_head_bytes(b) + 8, 3 * (size_t)b->n * sizeof(double));
    if (!d->linear) return defo_joint_record_restore(s->joint, b, d->x_fact, in);
    double dh[3];
    memcpy(dh, p + 16, sizeof dh);
    if (head[0] < 0 || head[0] > 1 || head[1] < 0 || head[1] > 1 || head[2] < 0 || !isfinite(dh[0]))
        return defo_error(DEFO_ERR_PARSE, "body '%s': bad factorisation record", b->name);
    forget_factor(s, b);
    d->have_fact = d->rebuild = head[0];
    d->lag.valid = head[1];
    d->lag.age = head[2];
    d->t_fact = dh[0];
    d->lag.first_rate = dh[1];
    d->lag.last_rate = dh[2];
    memcpy(d->x_fact, p + DEFO_JOINT_HEAD, 3 * (size_t)b->n * sizeof(double));
    return defo_linear_solver_history_restore(d->linear, b->n,
                                              p + defo_joint_record_bytes(b) + sizeof(double));
}

size_t defo_implicit_bytes(const defo_step_body *b);
size_t defo_implicit_bytes(const defo_step_body *b) {
    const defo_implicit_body *d = b->data;
    size_t s = sizeof *d + (size_t)d->cap * ((d->x_prev ? 12 : 10) * 3 * sizeof(double) + 2);
    if (d->linear) s += defo_linear_solver_bytes(d->linear);
    return s;
}

/* ------------------------------------------------ a Newton body's part */
/* f = −r(v) and E(v) (top of the file); the linearisation becomes y's. */
static defo_status ip_evaluate(void *vctx, const double *v, double *f, double *energy) {
    defo_implicit_body *d = vctx;
    defo_step_body *b = d->b;
    const defo_index n = b->n;
    const size_t m = 3 * (size_t)n;
    const double h = d->h;
    d->h_lin = h;
    for (size_t i = 0; i < m; i++) d->y[i] = d->x_base[i] + h * v[i];
    double psi = 0;
    defo_status s = defo_force_model_evaluate(b->force, d->y, DEFO_EVAL_TANGENT | d->eval, f, &psi);
    if (s) return s;
    /* TSIF05 §10 penalty contact at the end of the step, part of the
     * potential: colliders push during the solve, not only after it */
    d->contacts = 0;
    d->have_contact = 0;
    if (d->ctx && d->ctx->penalty) {
        /* from xⁿ (b->x until the commit): a node that starts inside comes
         * out no faster than separation_speed */
        defo_index capped = 0;
        s = d->ctx->penalty(d->ctx->ctx, b, d->t_end, d->y, b->x, d->ctx->dt, &psi, f, d->cblock,
                            &d->contacts, &capped);
        if (s) return s;
        d->have_contact = 1;
        d->capped |= capped > 0;
    }
    /* damping (βK + D) v at the iterate */
    double *t = d->tmp, *t2 = d->rhs;
    defo_force_model_damping_apply(b->force, v, t);
    if (d->beta > 0) {
        defo_force_model_tangent_apply(b->force, v, t2);
        for (size_t i = 0; i < m; i++) t[i] += d->beta * t2[i];
    }
    double kin = 0, damp = 0, ext = 0;
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            const double dv = v[j] - d->v_base[j];
            kin += b->mass[i] * (dv * dv + h * d->alpha * v[j] * v[j]);
            damp += v[j] * t[j];
            ext += b->load[j] * v[j];
            f[j] = h * (f[j] + b->load[j]) - b->mass[i] * (dv + h * d->alpha * v[j]) - h * t[j];
        }
    if (energy) *energy = 0.5 * kin + 0.5 * h * damp + psi - h * ext;
    return energy && !isfinite(*energy) ? defo_error(DEFO_ERR_NUMERICAL, "non-finite energy")
                                        : DEFO_OK;
}

static void ip_exact_tangent(void *vctx, int exact) {
    defo_implicit_body *d = vctx;
    d->eval = exact ? DEFO_EVAL_EXACT_TANGENT : 0u;
}

static const defo_bcsr *ip_matrix(void *vctx) {
    defo_implicit_body *d = vctx;
    const double h = d->h_lin;
    defo_bcsr *A = defo_force_model_assemble(d->b->force, h * h + h * d->beta, h, d->b->mass,
                                             1.0 + h * d->alpha);
    if (!A) return NULL;
    if (d->have_contact && d->contacts > 0) defo_bcsr_add_diagonal_blocks(A, d->cblock, h * h);
    return A;
}

static void ip_apply(void *vctx, const double *dv, double *y) {
    defo_implicit_body *d = vctx;
    defo_step_body *b = d->b;
    const double h = d->h_lin;
    const size_t m = 3 * (size_t)b->n;
    defo_force_model_tangent_apply(b->force, dv, y);
    defo_force_model_damping_apply(b->force, dv, d->tmp);
    for (size_t j = 0; j < m; j++)
        y[j] = (h * h + h * d->beta) * y[j] + h * d->tmp[j] +
               (1.0 + h * d->alpha) * b->mass[j / 3] * dv[j];
    if (d->have_contact && d->contacts > 0)
        for (defo_index i = 0; i < b->n; i++) {
            const double *C = d->cblock + 9 * (size_t)i, *a = dv + 3 * (size_t)i;
            double *o = y + 3 * (size_t)i;
            for (int k = 0; k < 3; k++)
                o[k] += h * h * (C[3 * k] * a[0] + C[3 * k + 1] * a[1] + C[3 * k + 2] * a[2]);
        }
}

static void ip_diagonal(void *vctx, double *blocks) {
    defo_implicit_body *d = vctx;
    defo_step_body *b = d->b;
    const double h = d->h_lin;
    defo_force_model_tangent_diagonal(b->force, blocks);
    for (defo_index i = 0; i < b->n; i++) {
        double *B = blocks + 9 * (size_t)i;
        for (int k = 0; k < 9; k++) B[k] *= h * h + h * d->beta;
        for (int k = 0; k < 3; k++) B[4 * k] += (1.0 + h * d->alpha) * b->mass[i];
    }
    if (defo_force_model_has_damping(b->force)) {
        defo_force_model_damping_diagonal(b->force, d->diag);
        for (size_t k = 0; k < 9 * (size_t)b->n; k++) blocks[k] += h * d->diag[k];
    }
    if (d->have_contact && d->contacts > 0)
        for (size_t k = 0; k < 9 * (size_t)b->n; k++) blocks[k] += h * h * d->cblock[k];
}

/* The linearisation at positions x and step end t with the recorded step
 * h_fact (a restored factor made again). */
static defo_status ip_linearize_at(void *vctx, const double *x, double t) {
    defo_implicit_body *d = vctx;
    defo_step_body *b = d->b;
    d->h_lin = d->h_fact; /* the matrix of the factor's step, not this step's */
    memcpy(d->y, x, 3 * (size_t)b->n * sizeof(double));
    defo_status s = defo_force_model_evaluate(b->force, x, DEFO_EVAL_TANGENT, NULL, NULL);
    d->contacts = 0;
    d->have_contact = 0;
    if (!s && d->ctx && d->ctx->penalty) {
        double e = 0;
        /* no step start: a factor made while separation_speed held nodes
         * back is never kept past its step (defo_joint_solve) */
        s = d->ctx->penalty(d->ctx->ctx, b, t, x, NULL, 0.0, &e, NULL, d->cblock, &d->contacts,
                            NULL);
        d->have_contact = s == DEFO_OK;
    }
    return s;
}

static void accumulate(defo_step_body *b, int newton, int cg, int cg_max, double residual,
                       int not_converged, defo_convergence_reason reason) {
    defo_step_body_stats *s = &b->stats;
    s->newton_iterations += newton;
    s->cg_iterations += cg;
    if (cg_max > s->cg_max_iterations) s->cg_max_iterations = cg_max;
    if (residual > s->residual) s->residual = residual;
    s->not_converged += not_converged;
    if (reason > s->reason) s->reason = reason;
}

/* ------------------------------------------------ a corotated body */
/* After a restore: the factor the run had, made again from the matrix at
 * the positions and step length it was made at. */
static defo_status rebuild_linear(const defo_integrator_def *def, defo_step_body *b) {
    defo_implicit_body *d = b->data;
    d->rebuild = 0;
    const double h = d->h_fact, alpha = def->rayleigh_mass, beta = def->rayleigh_stiffness;
    /* kept rotations are the factor's own (it follows them): keep them */
    const unsigned keep = defo_force_model_keeps_rotations(b->force) ? DEFO_EVAL_KEEP_ROTATIONS : 0;
    defo_status s = defo_force_model_evaluate(b->force, d->x_fact, keep, NULL, NULL);
    if (!s) {
        const defo_bcsr *A =
            defo_force_model_assemble(b->force, h * h + h * beta, h, b->mass, 1.0 + h * alpha);
        if (!A) return defo_last_status();
        defo_linear_system sys;
        memset(&sys, 0, sizeof sys);
        sys.n = b->n;
        sys.matrix = A;
        sys.constraint = d->constraint;
        sys.coords = d->x_fact;
        sys.layout = b->layout;
        s = defo_linear_solver_restore_lag(d->linear, &sys, &d->lag);
        d->serial_fact = defo_force_model_rotation_serial(b->force);
        d->A_fact = A;
    }
    if (s) d->have_fact = 0;
    return s;
}

/* MG04 §6 with the rotations of the predicted end of the step (the file's
 * comment), kept through the step; one linear solve. */
static defo_status linear_step(const defo_integrator_def *def, defo_step_body *b, const double *x_b,
                               const double *v_b, double h, defo_status *warn) {
    defo_implicit_body *d = b->data;
    const defo_index n = b->n;
    const size_t m = 3 * (size_t)n;
    const double alpha = def->rayleigh_mass, beta = def->rayleigh_stiffness;
    defo_status s;
    if (d->rebuild) {
        s = rebuild_linear(def, b);
        if (s) return defo_error_prefix("body '%s': rebuilding the factorisation", b->name);
    }
    /* the rotations of x̃ = x_b + h ṽ, then f(x_b) with them */
    double *x_pred = d->tmp;
    for (size_t j = 0; j < m; j++) x_pred[j] = x_b[j] + h * d->vn[j];
    s = defo_force_model_evaluate(b->force, x_pred, DEFO_EVAL_ROTATIONS_ONLY, NULL, NULL);
    if (!s) s = defo_force_model_evaluate(b->force, x_b, DEFO_EVAL_KEEP_ROTATIONS, d->f, NULL);
    if (s) return defo_error_prefix("body '%s'", b->name);
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            d->rhs[j] = b->mass[i] * v_b[j] + h * (d->f[j] + b->load[j]);
        }
    /* MTPS08 §4.4: while every rotation is kept, K' and the factor are the
     * last step's; once one was recomputed, the factor is remade */
    const int lazy = defo_force_model_keeps_rotations(b->force);
    const uint64_t serial = defo_force_model_rotation_serial(b->force);
    const int same =
        lazy && d->have_fact && d->A_fact && serial == d->serial_fact && h == d->h_fact;
    if (lazy && !same) defo_linear_solver_invalidate(d->linear);
    const defo_bcsr *A =
        same ? d->A_fact
             : defo_force_model_assemble(b->force, h * h + h * beta, h, b->mass, 1.0 + h * alpha);
    if (!A) return defo_error_prefix("body '%s'", b->name);
    defo_linear_system sys;
    memset(&sys, 0, sizeof sys);
    sys.n = n;
    sys.matrix = A;
    sys.constraint = d->constraint;
    sys.coords = x_pred; /* the two-level aggregates (a rebuild uses x_fact) */
    sys.same_matrix = same;
    sys.layout = b->layout;
    defo_linear_stats ls;
    s = defo_linear_solver_solve(d->linear, &sys, d->rhs, d->vn, 0.0, &ls);
    if (ls.refactored && s >= 0) {
        memcpy(d->x_fact, x_pred, m * sizeof(double));
        d->h_fact = h;
        d->have_fact = 1;
        d->serial_fact = serial;
        d->A_fact = A;
    }
    accumulate(b, 0, ls.iterations, ls.iterations, ls.residual, s == DEFO_WARN_NOT_CONVERGED,
               DEFO_REASON_CONVERGED);
    b->stats.precond_setups += ls.refactored;
    b->stats.solver_recoveries += ls.recovered;
    if (s < 0) return defo_error_prefix("body '%s': implicit step", b->name);
    if (s > 0) *warn = s;
    return DEFO_OK;
}

/* ------------------------------------------------ the step */
defo_status defo_implicit_step(defo_stepper *stp, defo_step_body *const *bodies, int count,
                               const double *const *xb, const double *const *vb, const double *h,
                               const defo_step_context *ctx) {
    const defo_integrator_def *def = &stp->def;
    defo_status s = defo_stepper_scratch(stp, count), warn = DEFO_OK;
    if (s) return s;
    const double t_end = ctx->t + ctx->dt;
    /* guesses vⁿ, prescribed nodes (target − x_b)/h */
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_implicit_body *d = b->data;
        /* a Newton body starts from the last solve's velocity: a node resting
         * on a collider then starts where the penalty holds it, not where
         * the response put it back (on the surface), and the solve does not
         * find that depth again at every step */
        if (b->changed & DEFO_CHANGED_STATE) d->have_solved = 0;
        const double *guess = !is_linear(b) && d->have_solved ? d->v_solved : b->v;
        for (defo_index q = 0; q < b->n; q++) {
            const int p = b->prescribed && b->prescribed[q];
            d->constraint[q] = p ? DEFO_CONSTRAINT_FIXED : DEFO_CONSTRAINT_NONE;
            for (int k = 0; k < 3; k++) {
                const size_t j = 3 * (size_t)q + (size_t)k;
                d->vn[j] = p ? (b->target[j] - xb[i][j]) / h[i] : guess[j];
            }
        }
        if (b->changed) forget_factor(stp, b); /* plastic flow in this step */
    }
    /* corotated bodies: one linear solve each */
    for (int i = 0; i < count; i++)
        if (is_linear(bodies[i])) {
            s = linear_step(def, bodies[i], xb[i], vb[i], h[i], &warn);
            if (s) return s;
        }
    /* invertible bodies: one Newton problem */
    int np = 0;
    double target = INFINITY;
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        if (is_linear(b)) continue;
        defo_implicit_body *d = b->data;
        d->x_base = xb[i];
        d->v_base = vb[i];
        d->h = h[i];
        d->alpha = def->rayleigh_mass;
        d->beta = def->rayleigh_stiffness;
        d->t_end = t_end;
        d->ctx = ctx;
        /* a shell's damping is the step's own: its factor is too */
        d->capped = defo_force_model_damping_of_step(b->force);
        defo_joint_part *p = &stp->parts[np];
        memset(p, 0, sizeof *p);
        p->b = b;
        p->pctx = d;
        p->u = d->vn;
        p->constraint = d->constraint;
        p->scale = h[i];
        p->base = xb[i];
        p->x_safe = b->x; /* xⁿ */
        p->y = d->y;
        p->x_fact = d->x_fact;
        p->param = h[i];
        p->param_fact = &d->h_fact;
        p->unkept = &d->capped;
        p->evaluate = ip_evaluate;
        p->matrix = ip_matrix;
        p->apply = ip_apply;
        p->diagonal = ip_diagonal;
        p->linearize_at = ip_linearize_at;
        p->exact_tangent = ip_exact_tangent;
        d->eval = 0;
        stp->set[np] = b;
        stp->xs[np] = b->x; /* xⁿ: the step's start */
        target = fmin(target, h[i] * fmax(def->tolerance * b->reference_force, b->residual_floor));
        np++;
    }
    if (np > 0) {
        defo_newton_stats ns;
        s = defo_joint_solve(stp->joint, stp->parts, np, stp->set, ctx, t_end,
                             (const double *const *)stp->xs, ctx->dt, target, 0, &ns);
        for (int k = 0; k < np; k++) {
            defo_step_body *b = stp->set[k];
            defo_implicit_body *d = b->data;
            /* the driver's iterations count once, on the first body */
            const double hb = d->h;
            accumulate(b, k == 0 ? ns.iterations : 0, k == 0 ? ns.cg_iterations : 0,
                       ns.cg_iterations,
                       target > 0 ? ns.residual / (hb * b->reference_force) : ns.residual,
                       k == 0 && s == DEFO_WARN_NOT_CONVERGED, ns.reason);
            if (k == 0) {
                b->stats.negative_curvature += ns.negative_curvature;
                b->stats.backtracks += ns.backtracks;
                b->stats.exact_iterations += ns.exact_iterations;
                b->stats.precond_setups += ns.precond_setups;
                b->stats.solver_recoveries += ns.recoveries;
            }
        }
        if (s < 0) {
            if (np == 1) return defo_error_prefix("body '%s': implicit step", stp->set[0]->name);
            return defo_error_prefix("bodies '%s' and %d more: implicit step", stp->set[0]->name,
                                     np - 1);
        }
        if (s > 0) warn = s;
    }
    /* commit, then the responses with the step's own friction time */
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_implicit_body *d = b->data;
        const size_t m = 3 * (size_t)b->n;
        for (size_t j = 0; j < m; j++) d->y[j] = xb[i][j] + h[i] * d->vn[j];
        defo_index bad = defo_first_non_finite(b->n, d->y, d->vn);
        if (bad >= 0)
            return defo_error(DEFO_ERR_NUMERICAL,
                              "body '%s': node %ld has a non-finite position or velocity after "
                              "the step (t = %g)",
                              b->name, (long)bad, ctx->t);
    }
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_implicit_body *d = b->data;
        const size_t m = 3 * (size_t)b->n;
        memcpy(d->tmp, b->x, m * sizeof(double)); /* xⁿ */
        memcpy(b->x, d->y, m * sizeof(double));
        memcpy(b->v, d->vn, m * sizeof(double));
        if (!is_linear(b)) {
            memcpy(d->v_solved, d->vn, m * sizeof(double));
            d->have_solved = 1;
        }
        if (ctx->respond) {
            defo_index hits = 0;
            s = ctx->respond(ctx->ctx, b, t_end, ctx->dt, ctx->dt, d->tmp, b->x, b->v, d->contact,
                             d->normal, d->friction, &hits);
            if (s < 0) return defo_error_prefix("body '%s': collisions", b->name);
            b->stats.collisions = hits;
        }
    }
    /* corotated bodies meet other bodies through the explicit response */
    if (ctx->contact_respond) {
        int nl = 0;
        for (int i = 0; i < count; i++)
            if (is_linear(bodies[i])) {
                defo_implicit_body *d = bodies[i]->data;
                stp->set[nl] = bodies[i];
                stp->xs[nl] = d->tmp;
                stp->vs[nl] = bodies[i]->x;
                stp->ws[nl] = bodies[i]->v;
                nl++;
            }
        if (nl > 0) {
            defo_index pairs = 0;
            s = ctx->contact_respond(ctx->ctx, stp->set, nl, ctx->dt, ctx->dt,
                                     (const double *const *)stp->xs, stp->vs, stp->ws, 1, &pairs);
            if (s < 0) return s;
        }
    }
    return warn;
}

/* ------------------------------------------- ops shared by BE and BDF2 */
void defo_implicit_op_detach(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_implicit_detach(b);
}
defo_status defo_implicit_op_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                              const defo_index *parent) {
    defo_joint_invalidate(s->joint);
    return defo_implicit_resize(b, old_n, parent);
}
void defo_implicit_op_frame_start(defo_stepper *s, defo_step_body *b) {
    if (b->changed) forget_factor(s, b);
    if (b->changed & DEFO_CHANGED_STATE) ((defo_implicit_body *)b->data)->have_solved = 0;
}
size_t defo_implicit_op_bytes(const defo_stepper *s, const defo_step_body *b) {
    /* the joint solve's share is counted with the first body */
    (void)s;
    return defo_implicit_bytes(b);
}
