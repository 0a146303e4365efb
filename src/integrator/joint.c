/*
 * integrator/joint.c — the bodies of one Newton stepper solved as ONE
 * problem (backward Euler and BDF2 of invertible bodies, quasistatic,
 * static): each body is a part with its own unknowns, energy, tangent and
 * constraints (implicit.c: velocities; equilibrium.c: positions), and
 * body–body contact (TSIF05 §10, through defo_step_context.contact) couples
 * them:
 *     E(u) = Σ_k E_k(u_k) + Σ_pairs ½ k (δ − φ(y))²,   y_k = base_k + s_k u_k,
 * s_k = dy_k/du_k (h for velocities, 1 for positions).  The Hessian is the
 * parts' (each made positive semidefinite by its definiteness fix) plus the
 * pairs' Gauss–Newton terms k ∇φ∇φᵀ scaled by s_a s_b — positive
 * semidefinite as a whole, with blocks between the nodes of different
 * bodies.  Assembled: the parts' matrices joined with those blocks
 * (defo_bcsr_join); one body without contact is its own matrix.
 * Matrix-free: the parts' products plus the terms'.
 *
 * The line search never carries a surface through another: every Newton
 * step is first scaled by the contact step bound (defo_contact_step_bound),
 * then by the parts' own caps.
 *
 * The factorisation the shared driver lags is the joint matrix's.  It is
 * carried from frame to frame as a record (the positions each body had when
 * it was made, its time and step, the lag state) so a restored run rebuilds
 * it before its first solve — unless contact pairs with a body outside the
 * solve, or pairs held back by a separation speed, were in it: those depend
 * on more than the record, so such a factor is dropped after its step.
 */
#include "integrator/integrator_internal.h"

void defo_joint_destroy(defo_joint *J) {
    if (!J) return;
    defo_newton_destroy(J->newton);
    defo_bcsr_destroy(J->matrix);
    void *a[] = {J->parts,    J->offset,    J->u,  J->f,  J->constraint, J->coords, J->dx,
                 J->extra_rc, J->extra_val, J->ys, J->fs, J->cforce,     J->dxs,    J->owner};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) defo_free(a[i]);
    defo_free(J);
}

defo_status defo_joint_create(const defo_newton_def *def, defo_joint **out) {
    defo_joint *J = defo_calloc(1, sizeof *J);
    if (!J) return defo_error_oom("joint solve", sizeof *J);
    J->def = *def;
    *out = J;
    return DEFO_OK;
}

defo_status defo_joint_check(const defo_integrator_def *def) {
    defo_newton_def nd = def->newton;
    nd.linear = def->linear;
    nd.linear.curvature = DEFO_CURVATURE_STOP;
    /* a backend is made with the first solve (not for a check) */
    if (nd.linear.method == DEFO_LINEAR_BACKEND) nd.linear.method = DEFO_LINEAR_PCG;
    defo_newton *N = NULL;
    defo_status st = defo_newton_create(&nd, 1, &N);
    defo_newton_destroy(N);
    return st;
}

void defo_joint_invalidate(defo_joint *J) {
    if (!J) return;
    defo_newton_invalidate(J->newton);
    J->have_fact = J->rebuild = 0;
}

/* Buffers for these parts (allocated when the count or the size grows). */
static defo_status joint_size(defo_joint *J, const defo_joint_part *parts, int count) {
    defo_index n = 0;
    for (int k = 0; k < count; k++) n += parts[k].b->n;
    if (count > J->cap_parts) {
        defo_free(J->parts);
        defo_free(J->offset);
        defo_free(J->ys);
        defo_free(J->fs);
        defo_free(J->dxs);
        J->parts = defo_calloc((size_t)count, sizeof *J->parts);
        J->offset = defo_calloc((size_t)count + 1, sizeof *J->offset);
        J->ys = defo_calloc((size_t)count, sizeof *J->ys);
        J->fs = defo_calloc((size_t)count, sizeof *J->fs);
        J->dxs = defo_calloc((size_t)count, sizeof *J->dxs);
        if (!J->parts || !J->offset || !J->ys || !J->fs || !J->dxs) {
            J->cap_parts = 0;
            return defo_error_oom("joint solve", (size_t)count * 64);
        }
        J->cap_parts = count;
    }
    if (n != J->n || !J->newton) {
        /* a factor is kept only for the same problem size; a record restored
         * before the first solve is rebuilt at that solve */
        if (J->newton) J->have_fact = J->rebuild = 0;
        defo_newton_destroy(J->newton);
        J->newton = NULL;
        defo_free(J->u);
        defo_free(J->f);
        defo_free(J->constraint);
        defo_free(J->coords);
        defo_free(J->dx);
        defo_free(J->cforce);
        defo_free(J->owner);
        J->owner = NULL;
        const size_t m = 3 * (size_t)n + 1;
        J->u = defo_calloc(m, sizeof(double));
        J->f = defo_calloc(m, sizeof(double));
        J->coords = defo_calloc(m, sizeof(double));
        J->dx = defo_calloc(m, sizeof(double));
        J->cforce = defo_calloc(m, sizeof(double));
        J->constraint = defo_calloc((size_t)n + 1, 1);
        if (!J->u || !J->f || !J->coords || !J->dx || !J->cforce || !J->constraint)
            return defo_error_oom("joint solve", 6 * m * sizeof(double));
        defo_status st = defo_newton_create(&J->def, n, &J->newton);
        if (st) return st;
        J->n = n;
    }
    J->count = count;
    J->offset[0] = 0;
    for (int k = 0; k < count; k++) {
        J->parts[k] = parts[k];
        J->offset[k + 1] = J->offset[k] + parts[k].b->n;
    }
    /* a distributed run: the parts' owners side by side */
    J->lay = NULL;
    if (count > 0 && parts[0].b->layout) {
        if (!J->owner) J->owner = defo_malloc((size_t)n * sizeof *J->owner + 1);
        if (!J->owner) return defo_error_oom("joint layout", (size_t)n * sizeof *J->owner);
        for (int k = 0; k < count; k++)
            memcpy(J->owner + J->offset[k], parts[k].b->layout->owner,
                   (size_t)parts[k].b->n * sizeof *J->owner);
        J->layout = *parts[0].b->layout;
        J->layout.owner = J->owner;
        J->lay = &J->layout;
    }
    return DEFO_OK;
}

static double *slice(double *v, const defo_joint *J, int k) {
    return v + 3 * (size_t)J->offset[k];
}

/* ------------------------------------------------------- the problem */
static defo_status contact_at(defo_joint *J, double *E) {
    J->terms = NULL;
    J->num_terms = 0;
    const defo_step_context *ctx = J->ctx;
    if (!ctx || !ctx->contact) return DEFO_OK;
    for (int k = 0; k < J->count; k++) {
        J->ys[k] = J->parts[k].y;
        J->fs[k] = slice(J->cforce, J, k);
    }
    memset(J->cforce, 0, 3 * (size_t)J->n * sizeof(double));
    defo_index held = 0;
    int lagged = 0;
    double e = 0;
    defo_status s = ctx->contact(ctx->ctx, J->bodies, J->count, (const double *const *)J->ys,
                                 J->exact, &e, J->fs, &J->terms, &J->num_terms, &held, &lagged);
    if (s) return s;
    J->held |= held > 0;
    if (E) *E += e;
    return DEFO_OK;
}

static defo_status jt_evaluate(void *vctx, const double *u, double *f, double *energy) {
    defo_joint *J = vctx;
    double E = 0;
    for (int k = 0; k < J->count; k++) {
        const defo_joint_part *p = &J->parts[k];
        double Ek = 0;
        const size_t o = 3 * (size_t)J->offset[k];
        defo_status s = p->evaluate(p->pctx, u + o, f + o, &Ek);
        if (s) return s;
        E += Ek;
        memcpy(J->coords + o, p->y, 3 * (size_t)p->b->n * sizeof(double));
    }
    defo_status s = contact_at(J, &E);
    if (s) return s;
    if (J->num_terms > 0) {
        for (int k = 0; k < J->count; k++) {
            const double sk = J->parts[k].scale;
            double *fk = slice(f, J, k);
            const double *ck = slice(J->cforce, J, k);
            for (size_t j = 0; j < 3 * (size_t)J->parts[k].b->n; j++) fk[j] += sk * ck[j];
        }
    }
    if (energy) *energy = E;
    return isfinite(E) ? DEFO_OK : defo_error(DEFO_ERR_NUMERICAL, "non-finite energy");
}

/* The terms' blocks (a, b): k s_a s_b w_a w_b n nᵀ, in joint rows. */
static defo_status term_blocks(defo_joint *J) {
    size_t need = 16 * J->num_terms;
    if (need > J->extra_cap) {
        size_t c = J->extra_cap ? J->extra_cap : 256;
        while (c < need) c *= 2;
        int64_t *rc = defo_realloc(J->extra_rc, 2 * c * sizeof *rc);
        if (rc) J->extra_rc = rc;
        double *v = defo_realloc(J->extra_val, 9 * c * sizeof *v);
        if (v) J->extra_val = v;
        if (!rc || !v) return defo_error_oom("contact blocks", c * 88);
        J->extra_cap = c;
    }
    size_t e = 0;
    for (size_t t = 0; t < J->num_terms; t++) {
        const defo_contact_term *T = &J->terms[t];
        for (int a = 0; a < 4; a++) {
            if (T->body[a] < 0 || T->w[a] == 0) continue;
            const double sa = J->parts[T->body[a]].scale;
            for (int b = 0; b < 4; b++) {
                if (T->body[b] < 0 || T->w[b] == 0) continue;
                const double sb = J->parts[T->body[b]].scale;
                const double c = sa * sb * T->w[a] * T->w[b];
                J->extra_rc[2 * e] = J->offset[T->body[a]] + T->node[a];
                J->extra_rc[2 * e + 1] = J->offset[T->body[b]] + T->node[b];
                for (int q = 0; q < 9; q++) J->extra_val[9 * e + q] = c * T->S[q];
                e++;
            }
        }
    }
    J->num_extra = e;
    return DEFO_OK;
}

static const defo_bcsr *jt_matrix(void *vctx) {
    defo_joint *J = vctx;
    if (J->count == 1 && J->num_terms == 0) return J->parts[0].matrix(J->parts[0].pctx);
    const defo_bcsr *mats[64];
    const defo_bcsr **pm = J->count <= 64 ? mats : defo_malloc((size_t)J->count * sizeof *pm);
    if (!pm) {
        J->status = defo_error_oom("joint matrix", (size_t)J->count * sizeof *pm);
        return NULL;
    }
    defo_status s = DEFO_OK;
    for (int k = 0; k < J->count && !s; k++) {
        pm[k] = J->parts[k].matrix(J->parts[k].pctx);
        if (!pm[k]) s = defo_last_status();
    }
    if (!s) s = term_blocks(J);
    if (!s) s = defo_bcsr_join(&J->matrix, pm, J->count, J->extra_rc, J->extra_val, J->num_extra);
    if (pm != mats) defo_free((void *)pm);
    if (s) {
        J->status = s;
        return NULL;
    }
    return J->matrix;
}

static void jt_apply(void *vctx, const double *d, double *y) {
    defo_joint *J = vctx;
    for (int k = 0; k < J->count; k++) {
        const size_t o = 3 * (size_t)J->offset[k];
        J->parts[k].apply(J->parts[k].pctx, d + o, y + o);
    }
    for (size_t t = 0; t < J->num_terms; t++) {
        const defo_contact_term *T = &J->terms[t];
        double g[3] = {0, 0, 0}; /* Σ wₐ sₐ dₐ */
        for (int a = 0; a < 4; a++) {
            if (T->body[a] < 0) continue;
            const double *da = d + 3 * (size_t)(J->offset[T->body[a]] + T->node[a]);
            const double c = T->w[a] * J->parts[T->body[a]].scale;
            for (int r = 0; r < 3; r++) g[r] += c * da[r];
        }
        const double Sg[3] = {T->S[0] * g[0] + T->S[1] * g[1] + T->S[2] * g[2],
                              T->S[3] * g[0] + T->S[4] * g[1] + T->S[5] * g[2],
                              T->S[6] * g[0] + T->S[7] * g[1] + T->S[8] * g[2]};
        for (int b = 0; b < 4; b++) {
            if (T->body[b] < 0) continue;
            double *yb = y + 3 * (size_t)(J->offset[T->body[b]] + T->node[b]);
            const double c = T->w[b] * J->parts[T->body[b]].scale;
            for (int r = 0; r < 3; r++) yb[r] += c * Sg[r];
        }
    }
}

static void jt_diagonal(void *vctx, double *blocks) {
    defo_joint *J = vctx;
    for (int k = 0; k < J->count; k++)
        J->parts[k].diagonal(J->parts[k].pctx, blocks + 9 * (size_t)J->offset[k]);
    for (size_t t = 0; t < J->num_terms; t++) {
        const defo_contact_term *T = &J->terms[t];
        for (int a = 0; a < 4; a++) {
            if (T->body[a] < 0) continue;
            const double s = J->parts[T->body[a]].scale * T->w[a];
            double *B = blocks + 9 * (size_t)(J->offset[T->body[a]] + T->node[a]);
            for (int q = 0; q < 9; q++) B[q] += s * s * T->S[q];
        }
    }
}

static void jt_cap_step(void *vctx, const double *u, double *du) {
    defo_joint *J = vctx;
    const defo_step_context *ctx = J->ctx;
    if (ctx && ctx->contact_bound) {
        for (int k = 0; k < J->count; k++) {
            const double s = J->parts[k].scale;
            double *dk = slice(J->dx, J, k);
            const double *uk = slice(du, J, k);
            for (size_t j = 0; j < 3 * (size_t)J->parts[k].b->n; j++) dk[j] = s * uk[j];
            J->dxs[k] = dk;
            J->ys[k] = J->parts[k].y;
        }
        const double a =
            ctx->contact_bound(ctx->ctx, J->bodies, J->count, (const double *const *)J->ys,
                               (const double *const *)J->dxs);
        if (a < 1.0)
            for (size_t j = 0; j < 3 * (size_t)J->n; j++) du[j] *= a;
    }
    for (int k = 0; k < J->count; k++)
        if (J->parts[k].cap) {
            const size_t o = 3 * (size_t)J->offset[k];
            J->parts[k].cap(J->parts[k].pctx, u + o, du + o);
        }
}

static void jt_factored(void *vctx, const double *u) {
    (void)u;
    defo_joint *J = vctx;
    for (int k = 0; k < J->count; k++) {
        memcpy(J->parts[k].x_fact, J->parts[k].y, 3 * (size_t)J->parts[k].b->n * sizeof(double));
        if (J->parts[k].param_fact) *J->parts[k].param_fact = J->parts[k].param;
    }
    J->t_fact = J->t;
    J->have_fact = 1;
    /* a factor whose matrix held contact between bodies depends on more than
     * the record (the step's start, other integrators' bodies): it is not
     * kept past its step */
    J->fact_unkept = J->num_terms > 0;
}

static void jt_exact_tangent(void *vctx, int exact) {
    defo_joint *J = vctx;
    J->exact = exact;
    for (int k = 0; k < J->count; k++)
        if (J->parts[k].exact_tangent) J->parts[k].exact_tangent(J->parts[k].pctx, exact);
}

static void jt_problem(defo_joint *J, defo_newton_problem *p) {
    memset(p, 0, sizeof *p);
    p->n = J->n;
    p->ctx = J;
    p->evaluate = jt_evaluate;
    p->matrix = jt_matrix;
    p->apply = jt_apply;
    p->diagonal = jt_diagonal;
    p->cap_step = jt_cap_step;
    p->factored = jt_factored;
    p->exact_tangent = jt_exact_tangent;
    p->constraint = J->constraint;
    p->coords = J->coords;
    p->layout = J->lay;
}

/* A start no surface has passed through to get to: the guess u (inertia,
 * a predictor) moved from the parts' safe positions only as far as the
 * contact step bound allows (prescribed nodes go all the way: their motion
 * is the script's). */
static defo_status safe_start(defo_joint *J) {
    const defo_step_context *ctx = J->ctx;
    if (!ctx || !ctx->contact_bound) return DEFO_OK;
    int any = 0;
    for (int k = 0; k < J->count; k++) any |= J->parts[k].x_safe != NULL;
    if (!any) return DEFO_OK;
    for (int k = 0; k < J->count; k++) {
        const defo_joint_part *p = &J->parts[k];
        double *dk = slice(J->dx, J, k);
        const double *uk = slice(J->u, J, k);
        const size_t m = 3 * (size_t)p->b->n;
        for (size_t j = 0; j < m; j++) {
            const double y = (p->base ? p->base[j] : 0.0) + p->scale * uk[j];
            dk[j] = p->x_safe ? y - p->x_safe[j] : 0.0;
        }
        J->dxs[k] = dk;
        J->ys[k] = p->x_safe ? p->x_safe : p->y;
    }
    const double a = ctx->contact_bound(ctx->ctx, J->bodies, J->count, (const double *const *)J->ys,
                                        (const double *const *)J->dxs);
    if (!(a < 1.0)) return DEFO_OK;
    for (int k = 0; k < J->count; k++) {
        const defo_joint_part *p = &J->parts[k];
        if (!p->x_safe) continue;
        double *uk = slice(J->u, J, k);
        const double *dk = slice(J->dx, J, k);
        for (defo_index i = 0; i < p->b->n; i++) {
            if (p->constraint[i]) continue;
            for (int c = 0; c < 3; c++) {
                const size_t j = 3 * (size_t)i + (size_t)c;
                uk[j] -= (1.0 - a) * dk[j] / p->scale;
            }
        }
    }
    return DEFO_OK;
}

/* The factor a restored run had, made again at the recorded positions. */
static defo_status rebuild(defo_joint *J) {
    J->rebuild = 0;
    defo_status s = DEFO_OK;
    for (int k = 0; k < J->count && !s; k++) {
        const defo_joint_part *p = &J->parts[k];
        s = p->linearize_at(p->pctx, p->x_fact, J->t_fact);
        if (!s) memcpy(slice(J->coords, J, k), p->y, 3 * (size_t)p->b->n * sizeof(double));
    }
    J->num_terms = 0; /* a kept factor held no contact between bodies */
    if (!s) {
        defo_newton_problem p;
        jt_problem(J, &p);
        s = defo_newton_restore_lag(J->newton, &p, J->coords, &J->lag);
        if (!s && J->status) s = J->status;
    }
    if (s) J->have_fact = 0;
    return s;
}

defo_status defo_joint_solve(defo_joint *J, const defo_joint_part *parts, int count,
                             defo_step_body *const *bodies, const defo_step_context *ctx, double t,
                             const double *const *x_start, double dt, double target, int predicted,
                             defo_newton_stats *stats) {
    defo_status st = joint_size(J, parts, count);
    if (st) return st;
    J->bodies = bodies;
    J->ctx = ctx;
    J->t = t;
    J->x_start = x_start;
    J->dt = dt;
    J->status = DEFO_OK;
    J->held = 0;
    J->fact_unkept = 0;
    for (int k = 0; k < count; k++) {
        memcpy(J->constraint + J->offset[k], parts[k].constraint, (size_t)parts[k].b->n);
        memcpy(slice(J->u, J, k), parts[k].u, 3 * (size_t)parts[k].b->n * sizeof(double));
    }
    if (J->rebuild) {
        st = rebuild(J);
        if (st) return defo_error_prefix("rebuilding the factorisation");
    }
    if (ctx && ctx->contact_begin && x_start) {
        st = ctx->contact_begin(ctx->ctx, bodies, count, x_start, dt);
        if (st) return st;
    }
    st = safe_start(J);
    if (st) return st;
    defo_newton_problem p;
    jt_problem(J, &p);
    st = defo_newton_solve(J->newton, &p, target, J->u, NULL, 0.0, predicted, stats);
    /* the solution back into the parts (their last evaluation is of it) */
    for (int k = 0; k < count; k++)
        memcpy(parts[k].u, slice(J->u, J, k), 3 * (size_t)parts[k].b->n * sizeof(double));
    int unkept = J->fact_unkept;
    for (int k = 0; k < count; k++) unkept |= parts[k].unkept && *parts[k].unkept;
    if (J->have_fact && unkept) defo_joint_invalidate(J);
    if (J->status && st >= 0) st = J->status;
    return st;
}

/* The record: have_fact, lag.valid, lag.age, 0 (int32 each), t_fact,
 * lag.first_rate, lag.last_rate, then the body's x_fact (3n). */
size_t defo_joint_record_bytes(const defo_step_body *b) {
    return DEFO_JOINT_HEAD + 3 * (size_t)b->n * sizeof(double);
}

void defo_joint_record_save(const defo_joint *J, const defo_step_body *b, const double *x_fact,
                            void *out) {
    defo_linear_lag lag;
    memset(&lag, 0, sizeof lag);
    int have = J && J->have_fact;
    if (J && J->rebuild)
        lag = J->lag; /* restored, not yet rebuilt */
    else if (have)
        defo_newton_get_lag(J->newton, &lag);
    unsigned char *o = out;
    const int32_t head[4] = {have && lag.valid, lag.valid, lag.age, 0};
    const double dh[3] = {J ? J->t_fact : 0.0, lag.first_rate, lag.last_rate};
    memcpy(o, head, 16);
    memcpy(o + 16, dh, sizeof dh);
    memcpy(o + DEFO_JOINT_HEAD, x_fact, 3 * (size_t)b->n * sizeof(double));
}

defo_status defo_joint_record_restore(defo_joint *J, const defo_step_body *b, double *x_fact,
                                      const void *in) {
    const unsigned char *p = in;
    int32_t head[4];
    double dh[3];
    memcpy(head, p, 16);
    memcpy(dh, p + 16, sizeof dh);
    if (head[0] < 0 || head[0] > 1 || head[1] < 0 || head[1] > 1 || head[2] < 0 || !isfinite(dh[0]))
        return defo_error(DEFO_ERR_PARSE, "body '%s': bad factorisation record", b->name);
    memcpy(x_fact, p + DEFO_JOINT_HEAD, 3 * (size_t)b->n * sizeof(double));
    defo_joint_invalidate(J);
    J->have_fact = J->rebuild = head[0];
    J->lag.valid = head[1];
    J->lag.age = head[2];
    J->t_fact = dh[0];
    J->lag.first_rate = dh[1];
    J->lag.last_rate = dh[2];
    return DEFO_OK;
}

size_t defo_joint_bytes(const defo_joint *J) {
    if (!J) return 0;
    return sizeof *J + 6 * 3 * (size_t)J->n * sizeof(double) + defo_newton_bytes(J->newton) +
           (J->matrix ? defo_bcsr_bytes(J->matrix) : 0) + J->extra_cap * 88;
}
