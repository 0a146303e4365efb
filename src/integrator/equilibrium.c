/*
 * integrator/equilibrium.c — the equilibrium solve shared by the quasistatic
 * (TSIF05) and static (MMDJ01 §2.3) integrators (defo/integrator.h).
 *
 * At time t the prescribed nodes (bones, TSIF05 §11) sit at their targets
 * and the free nodes minimise
 *   E(x) = Ψ(x) − f_extᵀx + Σ k φ²/2
 * (elastic energy of the body's force model, dead loads with gravity, TSIF05
 * §10 penalty contact from the step context), by the shared Newton driver:
 * K Δx = f with K the tangent made positive semidefinite by the definiteness
 * fix (TSIF05 §8) plus the penalty blocks, a line search, steps capped at the
 * larger of the rest and current bounding-box diagonals (a nearly singular,
 * clamped stiffness can give huge components no line search recovers from),
 * to max_i |f_i| ≤ tolerance · f_ref over the free nodes.
 *
 * Predictor (quasistatic, beyond the paper): with moving bones the last
 * equilibrium is a poor start; the last 2, 3 or 4 equilibria extrapolated to
 * t (Lagrange in t) are a start close to the next one, kept only when its
 * energy is below that of the last equilibrium with the bones moved.  Only
 * the start changes: the iteration and its stopping test do not.  The
 * equilibria are history (checkpointed: a resumed run continues bit for bit).
 *
 * The bodies of one stepper are solved together (joint.c): body–body
 * contact adds its penalty, with blocks between the bodies, to the one
 * potential; the predictor stays each body's own.
 *
 * Failure: on an error x is left at its value before the call.
 */
#include "integrator/integrator_internal.h"

struct defo_equilibrium_body {
    defo_index cap;
    double *f, *x0, *xt, *ft, *cblock, *y;
    double *xstep;             /* the step's start (x0: the start of the solve in progress) */
    unsigned char *constraint; /* FIXED at the prescribed nodes */
    double rest_diag;          /* rest bounding-box diagonal */
    unsigned eval;             /* the Newton evaluations' flags (the exact tangent or not) */
    /* predictor history: newest first */
    double *xh[4];
    double th[4];
    int nhist, hsize;
    /* elastic energy Ψ at xh[0] (the predictor's check: the energy of the
     * last equilibrium with the bones moved is Ψ plus the change on the
     * elements touching them); history too */
    double psi_last;
    double psi;        /* Ψ at the last evaluation */
    defo_index *elems; /* scratch: elements touching prescribed nodes */
    defo_index num_elems;
    /* where the joint solve's lagged factor was made (history; joint.c) */
    double *x_fact;
    /* the solve in progress */
    defo_step_body *b;
    const defo_step_context *ctx;
    double t;
    defo_index contacts;
    int have_contact;
    int predicted;
};

static int history_size(const defo_integrator_def *def, int with_time) {
    if (!with_time) return 0;
    return def->predictor == DEFO_PREDICTOR_CUBIC       ? 4
           : def->predictor == DEFO_PREDICTOR_QUADRATIC ? 3
           : def->predictor == DEFO_PREDICTOR_LINEAR    ? 2
                                                        : 0;
}

static void free_arrays(defo_equilibrium_body *d) {
    defo_free(d->f);
    defo_free(d->x0);
    defo_free(d->xt);
    defo_free(d->ft);
    defo_free(d->cblock);
    defo_free(d->constraint);
    defo_free(d->elems);
    defo_free(d->x_fact);
    defo_free(d->y);
    defo_free(d->xstep);
    d->xstep = NULL;
    d->constraint = NULL;
    d->elems = NULL;
    d->x_fact = NULL;
    for (int k = 0; k < 4; k++) defo_free(d->xh[k]), d->xh[k] = NULL;
    d->f = d->x0 = d->xt = d->ft = d->cblock = d->y = NULL;
}

static defo_status alloc_arrays(defo_equilibrium_body *d, defo_index n) {
    const size_t m = 3 * (size_t)n + 1;
    int ok = (d->f = defo_calloc(m, sizeof(double))) != NULL;
    ok &= (d->x0 = defo_calloc(m, sizeof(double))) != NULL;
    ok &= (d->xt = defo_calloc(m, sizeof(double))) != NULL;
    ok &= (d->ft = defo_calloc(m, sizeof(double))) != NULL;
    ok &= (d->cblock = defo_calloc(3 * m, sizeof(double))) != NULL;
    ok &= (d->constraint = defo_calloc((size_t)n + 1, 1)) != NULL;
    ok &= (d->x_fact = defo_calloc(m, sizeof(double))) != NULL;
    ok &= (d->y = defo_calloc(m, sizeof(double))) != NULL;
    ok &= (d->xstep = defo_calloc(m, sizeof(double))) != NULL;
    if (d->hsize)
        ok &= (d->elems = defo_calloc((size_t)d->num_elems + 1, sizeof(defo_index))) != NULL;
    for (int k = 0; k < d->hsize; k++) ok &= (d->xh[k] = defo_calloc(m, sizeof(double))) != NULL;
    d->cap = n;
    d->nhist = 0;
    return ok ? DEFO_OK : defo_error_oom("equilibrium solver state", 20 * m * sizeof(double));
}

void defo_equilibrium_detach(defo_step_body *b) {
    defo_equilibrium_body *d = b->data;
    if (!d) return;
    free_arrays(d);
    defo_free(d);
    b->data = NULL;
}

static double bbox_diag(const double *x, defo_index n) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], x[3 * (size_t)i + (size_t)k]);
            hi[k] = fmax(hi[k], x[3 * (size_t)i + (size_t)k]);
        }
    return sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                (hi[2] - lo[2]) * (hi[2] - lo[2]));
}

defo_status defo_equilibrium_attach(const defo_integrator_def *def, defo_step_body *b) {
    defo_equilibrium_body *d = defo_calloc(1, sizeof *d);
    if (!d) return defo_error_oom("equilibrium solver", sizeof *d);
    b->data = d;
    d->hsize = history_size(def, def->kind == DEFO_INTEGRATOR_QUASISTATIC);
    d->num_elems = b->mesh->num_elems;
    defo_status st = alloc_arrays(d, b->n);
    if (!st) st = defo_joint_check(def);
    d->rest_diag = bbox_diag(b->mesh->x, b->mesh->num_nodes);
    if (st) defo_equilibrium_detach(b);
    return st;
}

defo_status defo_equilibrium_resize(defo_step_body *b) {
    defo_equilibrium_body *d = b->data;
    free_arrays(d);
    d->num_elems = b->mesh->num_elems;
    defo_status st = alloc_arrays(d, b->n);
    d->rest_diag = bbox_diag(b->mesh->x, b->mesh->num_nodes);
    return st;
}

size_t defo_equilibrium_bytes(const defo_step_body *b) {
    const defo_equilibrium_body *d = b->data;
    return sizeof *d + (size_t)d->cap * (9 + 5 * 3 + (size_t)d->hsize * 3) * sizeof(double);
}

/* history: the joint solve's factor record (joint.c) with this body's
 * x_fact, then the predictor's: nhist (8 bytes), th[4], Ψ of the last
 * equilibrium, hsize positions */
#define HISTORY_HEAD (8 + 5 * sizeof(double))
size_t defo_equilibrium_history_bytes(const defo_step_body *b) {
    const defo_equilibrium_body *d = b->data;
    const size_t m = 3 * (size_t)b->n * sizeof(double);
    return defo_joint_record_bytes(b) + (d->hsize ? HISTORY_HEAD + (size_t)d->hsize * m : 0);
}

void defo_equilibrium_save_history(const defo_stepper *s, const defo_step_body *b, void *out) {
    const defo_equilibrium_body *d = b->data;
    unsigned char *o = out;
    defo_joint_record_save(s->joint, b, d->x_fact, o);
    o += defo_joint_record_bytes(b);
    if (!d->hsize) return;
    const uint64_t nh = (uint64_t)d->nhist;
    memcpy(o, &nh, 8);
    memcpy(o + 8, d->th, 4 * sizeof(double));
    memcpy(o + 8 + 4 * sizeof(double), &d->psi_last, sizeof(double));
    const size_t m = 3 * (size_t)b->n * sizeof(double);
    for (int k = 0; k < d->hsize; k++) memcpy(o + HISTORY_HEAD + (size_t)k * m, d->xh[k], m);
}

defo_status defo_equilibrium_restore_history(defo_stepper *s, defo_step_body *b, const void *in,
                                             size_t size) {
    defo_equilibrium_body *d = b->data;
    if (size != defo_equilibrium_history_bytes(b))
        return defo_error(DEFO_ERR_PARSE, "equilibria of body '%s': %zu bytes, %zu expected",
                          b->name, size, defo_equilibrium_history_bytes(b));
    const unsigned char *p = in;
    defo_status st = defo_joint_record_restore(s->joint, b, d->x_fact, p);
    if (st) return st;
    p += defo_joint_record_bytes(b);
    if (!d->hsize) return DEFO_OK;
    uint64_t nh;
    memcpy(&nh, p, 8);
    if (nh > (uint64_t)d->hsize)
        return defo_error(DEFO_ERR_PARSE, "equilibria of body '%s': %llu kept, at most %d", b->name,
                          (unsigned long long)nh, d->hsize);
    d->nhist = (int)nh;
    memcpy(d->th, p + 8, 4 * sizeof(double));
    memcpy(&d->psi_last, p + 8 + 4 * sizeof(double), sizeof(double));
    const size_t m = 3 * (size_t)b->n * sizeof(double);
    for (int k = 0; k < d->hsize; k++) memcpy(d->xh[k], p + HISTORY_HEAD + (size_t)k * m, m);
    return DEFO_OK;
}

/* ------------------------------------------------------ the problem */
static void eq_exact_tangent(void *vctx, int exact) {
    defo_equilibrium_body *d = vctx;
    d->eval = exact ? DEFO_EVAL_EXACT_TANGENT : 0u;
}

static defo_status eq_evaluate(void *vctx, const double *x, double *f, double *energy) {
    defo_equilibrium_body *d = vctx;
    defo_step_body *b = d->b;
    const size_t m = 3 * (size_t)b->n;
    if (x != d->y) memcpy(d->y, x, m * sizeof(double));
    double psi = 0;
    defo_status s = defo_force_model_evaluate(b->force, x, DEFO_EVAL_TANGENT | d->eval, f, &psi);
    if (s) return s;
    d->psi = psi;
    double E = psi - defo_dot(b->load, x, m);
    for (size_t j = 0; j < m; j++) f[j] += b->load[j];
    d->contacts = 0;
    d->have_contact = 0;
    if (d->ctx->penalty) {
        s = d->ctx->penalty(d->ctx->ctx, b, d->t, x, NULL, 0.0, &E, f, d->cblock, &d->contacts,
                            NULL);
        if (s) return s;
        d->have_contact = 1;
    }
    if (energy) *energy = E;
    return isfinite(E) ? DEFO_OK
                       : defo_error(DEFO_ERR_NUMERICAL, "body '%s': non-finite energy", b->name);
}

static const defo_bcsr *eq_matrix(void *vctx) {
    defo_equilibrium_body *d = vctx;
    defo_bcsr *A = defo_force_model_assemble(d->b->force, 1.0, 0.0, NULL, 0.0);
    if (!A) return NULL;
    if (d->have_contact && d->contacts > 0) defo_bcsr_add_diagonal_blocks(A, d->cblock, 1.0);
    return A;
}

static void eq_apply(void *vctx, const double *dx, double *y) {
    defo_equilibrium_body *d = vctx;
    defo_force_model_tangent_apply(d->b->force, dx, y);
    if (!d->have_contact || !d->contacts) return;
    for (defo_index i = 0; i < d->b->n; i++) {
        const double *C = d->cblock + 9 * (size_t)i, *a = dx + 3 * (size_t)i;
        double *o = y + 3 * (size_t)i;
        for (int k = 0; k < 3; k++)
            o[k] += C[3 * k] * a[0] + C[3 * k + 1] * a[1] + C[3 * k + 2] * a[2];
    }
}

static void eq_diagonal(void *vctx, double *blocks) {
    defo_equilibrium_body *d = vctx;
    defo_force_model_tangent_diagonal(d->b->force, blocks);
    if (d->have_contact && d->contacts)
        for (size_t k = 0; k < 9 * (size_t)d->b->n; k++) blocks[k] += d->cblock[k];
}

static void eq_cap_step(void *vctx, const double *x, double *dx) {
    defo_equilibrium_body *d = vctx;
    const defo_index n = d->b->n;
    double mx = 0;
    for (defo_index i = 0; i < n; i++) {
        const double *a = dx + 3 * (size_t)i;
        mx = fmax(mx, a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
    }
    mx = sqrt(mx);
    const double cap = fmax(d->rest_diag, bbox_diag(x, n));
    if (mx > cap)
        for (size_t j = 0; j < 3 * (size_t)n; j++) dx[j] *= cap / mx;
}

/* The linearisation at positions x and time t (a restored factor made
 * again: joint.c). */
static defo_status eq_linearize_at(void *vctx, const double *x, double t) {
    defo_equilibrium_body *d = vctx;
    const double keep = d->t;
    d->t = t;
    double E = 0;
    defo_status s = eq_evaluate(d, x, d->ft, &E);
    d->t = keep;
    return s;
}

/* ------------------------------------------------------ the predictor */
static int can_extrapolate(const defo_equilibrium_body *d, double t, const double *x,
                           defo_index n) {
    if (d->hsize == 0 || d->nhist < d->hsize) return 0;
    for (int k = 0; k + 1 < d->hsize; k++)
        if (!(d->th[k] > d->th[k + 1])) return 0;
    const double sc = (t - d->th[0]) / (d->th[0] - d->th[1]);
    if (!(sc > 0.0 && sc <= 4.0)) return 0;
    return memcmp(x, d->xh[0], 3 * (size_t)n * sizeof(double)) == 0;
}

/* the Lagrange polynomial through the equilibria, at t, into xt; prescribed
 * nodes at their targets */
static void extrapolate(defo_equilibrium_body *d, const defo_step_body *b, double t) {
    const int h = d->hsize;
    double w[4] = {0, 0, 0, 0};
    for (int j = 0; j < h; j++) {
        w[j] = 1.0;
        for (int l = 0; l < h; l++)
            if (l != j) w[j] *= (t - d->th[l]) / (d->th[j] - d->th[l]);
    }
    const double *x0 = d->xh[0], *x1 = d->xh[1], *x2 = h > 2 ? d->xh[2] : x1,
                 *x3 = h > 3 ? d->xh[3] : x1;
    for (defo_index i = 0; i < b->n; i++)
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            d->xt[j] = (b->prescribed && b->prescribed[i])
                           ? b->target[j]
                           : w[0] * x0[j] + w[1] * x1[j] + w[2] * x2[j] + w[3] * x3[j];
        }
}

static void remember(defo_equilibrium_body *d, const defo_step_body *b, double t, const double *x) {
    if (!d->hsize) return;
    double *oldest = d->xh[d->hsize - 1];
    for (int k = d->hsize - 1; k > 0; k--) {
        d->xh[k] = d->xh[k - 1];
        d->th[k] = d->th[k - 1];
    }
    d->xh[0] = oldest;
    memcpy(d->xh[0], x, 3 * (size_t)b->n * sizeof(double));
    d->th[0] = t;
    if (d->nhist < d->hsize) d->nhist++;
}

/* E(x) at the last equilibrium x_last = d->x0 with the prescribed nodes
 * moved to their targets (x): an invertible body's Ψ(x) is the last
 * equilibrium's Ψ plus the change on the elements touching prescribed nodes
 * (no full evaluation); the loads' and the penalty's terms are computed
 * whole.  Other bodies evaluate fully (*evaluated = 1: d->f and the
 * linearisation are then x's). */
static defo_status moved_energy(defo_equilibrium_body *d, defo_step_body *b, double t,
                                const double *x, double *E, int *evaluated) {
    *evaluated = 0;
    /* a shell's triangles feel their neighbours (hinges, reference
     * normals): evaluated whole too */
    if (defo_force_model_formulation(b->force) != DEFO_FORMULATION_INVERTIBLE ||
        b->mesh->nodes_per_elem == 3) {
        *evaluated = 1;
        return eq_evaluate(d, x, d->f, E);
    }
    const defo_mesh *mesh = b->mesh;
    const int P = mesh->nodes_per_elem;
    defo_index ns = 0;
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + (size_t)e * P;
        int touch = 0;
        for (int a = 0; a < P && !touch; a++) touch = b->prescribed && b->prescribed[v[a]];
        if (touch) d->elems[ns++] = e;
    }
    double before = 0, after = 0;
    defo_status s = defo_force_model_energy_of(b->force, d->x0, d->elems, ns, &before);
    if (!s) s = defo_force_model_energy_of(b->force, x, d->elems, ns, &after);
    if (s) return s;
    const size_t m = 3 * (size_t)b->n;
    double En = d->psi_last + (after - before) - defo_dot(b->load, x, m);
    if (d->ctx->penalty) {
        memset(d->ft, 0, m * sizeof(double));
        defo_index contacts = 0;
        s = d->ctx->penalty(d->ctx->ctx, b, t, x, NULL, 0.0, &En, d->ft, d->cblock, &contacts,
                            NULL);
        if (s) return s;
    }
    *E = En;
    return isfinite(En) ? DEFO_OK
                        : defo_error(DEFO_ERR_NUMERICAL, "body '%s': non-finite energy", b->name);
}

/* Body b's start: the prescribed nodes at their targets, the predictor's
 * extrapolation when it lowers the energy (with_time). */
/* The start of a solve for the fraction w of the step (1: its end) at time
 * t: the prescribed nodes at their targets, or where their motion has them
 * at t (w of the way from the step's start when the context cannot say),
 * fixed for the solve (held ones where they are); the predictor only for a
 * whole step. */
static defo_status start_of(defo_equilibrium_body *d, defo_step_body *b, double t, int with_time,
                            double w) {
    const defo_index n = b->n;
    const size_t m = 3 * (size_t)n;
    const int predict = with_time && w == 1.0 && can_extrapolate(d, t, b->x, n);
    double *x = b->x;
    const int along = w != 1.0 && d->ctx->targets;
    if (along) d->ctx->targets(d->ctx->ctx, b, t, d->xt);
    for (defo_index i = 0; i < n; i++) {
        const int pr = b->prescribed && b->prescribed[i];
        const int fixed = pr || (b->held && b->held[i]);
        d->constraint[i] = fixed ? DEFO_CONSTRAINT_FIXED : DEFO_CONSTRAINT_NONE;
        if (!pr) continue;
        const size_t o = 3 * (size_t)i;
        if (w == 1.0)
            memcpy(x + o, b->target + o, 3 * sizeof(double));
        else if (along)
            memcpy(x + o, d->xt + o, 3 * sizeof(double));
        else
            for (int k = 0; k < 3; k++)
                x[o + k] = d->xstep[o + k] + w * (b->target[o + k] - d->xstep[o + k]);
    }
    d->predicted = 0;
    if (!predict) return DEFO_OK;
    /* E at the last equilibrium with the bones moved, and at the
     * extrapolated start: the prediction is kept when it is lower */
    double Em = 0;
    int evaluated = 0;
    defo_status st = moved_energy(d, b, t, x, &Em, &evaluated);
    if (st) return st;
    extrapolate(d, b, t);
    double Ep = 0;
    if (eq_evaluate(d, d->xt, d->ft, &Ep) == DEFO_OK && Ep < Em) {
        memcpy(x, d->xt, m * sizeof(double));
        d->predicted = 1;
    }
    return DEFO_OK;
}

/* The first count bodies back where the solve in progress started (x0). */
static void back_to_start(defo_step_body *const *bodies, int count) {
    for (int i = 0; i < count; i++) {
        const defo_equilibrium_body *d = bodies[i]->data;
        memcpy(bodies[i]->x, d->x0, 3 * (size_t)bodies[i]->n * sizeof(double));
    }
}

/* One Newton solve of the bodies for the fraction w of the step (t its
 * time, ctx its interval), from where they are; on an error every body is
 * put back where it was. */
static defo_status solve_part(defo_stepper *stp, defo_step_body *const *bodies, int count,
                              const defo_step_context *ctx, int with_time, double t, double w,
                              defo_newton_stats *ns) {
    const defo_integrator_def *def = &stp->def;
    defo_status st = DEFO_OK;
    double target = INFINITY;
    int predicted = count > 0;
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_equilibrium_body *d = b->data;
        d->b = b;
        d->ctx = ctx;
        d->t = t;
        memcpy(d->x0, b->x, 3 * (size_t)b->n * sizeof(double));
        st = start_of(d, b, t, with_time, w);
        if (st) {
            back_to_start(bodies, i + 1);
            return defo_error_prefix("body '%s' at t = %g", b->name, t);
        }
        predicted &= d->predicted;
        stp->xs[i] = d->x0; /* what overlaps at the last equilibrium is pushed apart */
        defo_joint_part *p = &stp->parts[i];
        memset(p, 0, sizeof *p);
        p->b = b;
        p->pctx = d;
        p->u = b->x;
        p->constraint = d->constraint;
        p->scale = 1.0;
        p->x_safe = d->x0; /* the last equilibrium */
        p->y = d->y;
        p->x_fact = d->x_fact;
        p->evaluate = eq_evaluate;
        p->matrix = eq_matrix;
        p->apply = eq_apply;
        p->diagonal = eq_diagonal;
        p->cap = eq_cap_step;
        p->linearize_at = eq_linearize_at;
        p->exact_tangent = eq_exact_tangent;
        d->eval = 0;
        target = fmin(target, fmax(def->tolerance * b->reference_force, b->residual_floor));
    }
    st = defo_joint_solve(stp->joint, stp->parts, count, bodies, ctx, t,
                          (const double *const *)stp->xs, 0.0, target, predicted, ns);
    if (st < 0) back_to_start(bodies, count);
    return st;
}

/* Load steps: when prescribed nodes move in the step, a solve that ends at
 * its iteration limit is taken again from where it started over half the
 * interval (the prescribed nodes half as far, colliders and loads at the
 * middle time), down to EQ_MIN_PART of the step; after each part that
 * converges the next may be twice as long.  (Without prescribed motion a
 * part would be the same problem again: not cut.)  A solve that fails for
 * another reason than the size of its load (an element it cannot uninvert)
 * would fail in every part: after EQ_TRIES solves in a row at the limit
 * (the whole part, its half and its quarter), or once the step has spent
 * EQ_BUDGET · max_iterations, the cutting stops and the rest of the step is
 * one more solve: a step costs at most 7 solves' iterations where it cost
 * one.  A static press of
 * two spheres that one Newton solve of 100 iterations leaves at a residual
 * 10⁶ above its target converges so.  The cuts are a function of the
 * state (deterministic) and are counted as extra steps. */
#define EQ_MIN_PART (1.0 / 64)
#define EQ_TRIES    3 /* solves in a row at max_iterations before the cutting stops */
#define EQ_BUDGET   6 /* Newton iterations of a step: at most this · max_iterations, then one solve */
defo_status defo_equilibrium_step(defo_stepper *stp, defo_step_body *const *bodies, int count,
                                  const defo_step_context *ctx, int with_time) {
    const defo_integrator_def *def = &stp->def;
    defo_status st = defo_stepper_scratch(stp, count);
    if (st) return st;
    const double t = ctx->t + ctx->dt;
    int moves = 0; /* prescribed nodes move in this step: a part is a smaller load */
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_equilibrium_body *d = b->data;
        memcpy(d->xstep, b->x, 3 * (size_t)b->n * sizeof(double));
        if (b->changed) defo_joint_invalidate(stp->joint); /* plastic flow in this step */
        for (defo_index k = 0; b->prescribed && k < b->n && !moves; k++)
            moves = b->prescribed[k] && memcmp(b->x + 3 * (size_t)k, b->target + 3 * (size_t)k,
                                               3 * sizeof(double)) != 0;
    }
    defo_newton_stats ns, sum;
    memset(&sum, 0, sizeof sum);
    double done = 0.0, part = 1.0;  /* fractions of the step */
    int taken = 0, failures = 0;    /* failures: solves in a row at max_iterations */
    defo_status short_of = DEFO_OK; /* a part left short of its tolerance */
    defo_convergence_reason worst = DEFO_REASON_CONVERGED;
    for (;;) {
        const int last = done + part >= 1.0 - 1e-12;
        const double w = last ? 1.0 : done + part;
        defo_step_context sub = *ctx;
        sub.t = ctx->t + done * ctx->dt;
        sub.dt = last ? t - sub.t : part * ctx->dt;
        memset(&ns, 0, sizeof ns);
        st = solve_part(stp, bodies, count, &sub, with_time, last ? t : sub.t + sub.dt, w, &ns);
        sum.iterations += ns.iterations;
        sum.cg_iterations += ns.cg_iterations;
        sum.negative_curvature += ns.negative_curvature;
        sum.backtracks += ns.backtracks;
        sum.exact_iterations += ns.exact_iterations;
        sum.precond_setups += ns.precond_setups;
        sum.recoveries += ns.recoveries;
        if (st < 0) break;
        const int failed = ns.reason == DEFO_REASON_MAX_ITERATIONS;
        failures = failed ? failures + 1 : 0;
        const int hopeless =
            failures >= EQ_TRIES || sum.iterations >= EQ_BUDGET * def->newton.max_iterations;
        if (moves && failed && part > EQ_MIN_PART && !hopeless) {
            back_to_start(bodies, count);
            defo_joint_invalidate(stp->joint);
            part *= 0.5;
            continue;
        }
        taken++;
        if (st > 0) short_of = st;
        if (ns.reason > worst) worst = ns.reason;
        if (last) break;
        done = w;
        /* the load grows again after a success; after a hopeless part the
         * rest of the step is one part */
        part = hopeless ? 1.0 : fmin(2.0 * part, 1.0);
        if (hopeless) failures = 0;
    }
    if (st >= 0 && short_of) st = short_of;
    if (st >= 0) ns.reason = worst;
    ns.iterations = sum.iterations;
    ns.cg_iterations = sum.cg_iterations;
    ns.negative_curvature = sum.negative_curvature;
    ns.backtracks = sum.backtracks;
    ns.exact_iterations = sum.exact_iterations;
    ns.precond_setups = sum.precond_setups;
    ns.recoveries = sum.recoveries;
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_equilibrium_body *d = b->data;
        const size_t m = 3 * (size_t)b->n;
        defo_step_body_stats *s = &b->stats;
        /* the driver's iterations count once, on the first body */
        if (i == 0) {
            s->newton_iterations += ns.iterations;
            s->cg_iterations += ns.cg_iterations;
            s->negative_curvature += ns.negative_curvature;
            s->backtracks += ns.backtracks;
            s->exact_iterations += ns.exact_iterations;
            s->precond_setups += ns.precond_setups;
            s->solver_recoveries += ns.recoveries;
            if (st > 0) s->not_converged++;
        }
        s->extra_steps += taken > 1 ? taken - 1 : 0;
        if (ns.cg_iterations > s->cg_max_iterations) s->cg_max_iterations = ns.cg_iterations;
        const double rel = b->reference_force > 0 ? ns.residual / b->reference_force : ns.residual;
        if (rel > s->residual) s->residual = rel;
        if (ns.reason > s->reason) s->reason = ns.reason;
        s->collisions = d->contacts;
        if (st < 0) continue;
        /* a loaded solve that stalled, or "converged" (at iteration 0, say)
         * with a residual above √tolerance of its loads — only the round-off
         * floor let it pass — has not resolved its loads: said, counted */
        if (b->loaded && (ns.reason == DEFO_REASON_STALLED ||
                          (ns.reason == DEFO_REASON_CONVERGED &&
                           ns.residual > sqrt(def->tolerance) * b->reference_force))) {
            s->unresolved++;
            st = defo_error(DEFO_WARN_NOT_CONVERGED,
                            "body '%s' at t = %g: the equilibrium does not resolve its loads "
                            "(residual %g N against loads of %g N, round-off floor %g N; %s)",
                            b->name, t, ns.residual, b->reference_force, b->residual_floor,
                            ns.reason == DEFO_REASON_STALLED ? "stalled"
                                                             : "the floor is above them");
        }
        if (ns.reason == DEFO_REASON_CONVERGED) {
            remember(d, b, t, b->x);
            d->psi_last = d->psi; /* Newton's last evaluation was at x */
        } else {
            d->nhist = 0;
        }
        /* velocities: the motion over the frame (quasistatic) or none (static) */
        for (size_t j = 0; j < m; j++)
            b->v[j] = with_time ? (b->x[j] - d->xstep[j]) / ctx->dt : 0.0;
    }
    if (st < 0) {
        for (int i = 0; i < count; i++) {
            defo_equilibrium_body *d = bodies[i]->data;
            memcpy(bodies[i]->x, d->xstep, 3 * (size_t)bodies[i]->n * sizeof(double));
        }
        if (count == 1) return defo_error_prefix("body '%s' at t = %g", bodies[0]->name, t);
        return defo_error_prefix("bodies '%s' and %d more at t = %g", bodies[0]->name, count - 1,
                                 t);
    }
    return st;
}

/* ------------------------------------ ops shared by quasistatic and static */
defo_status defo_equilibrium_op_attach(defo_stepper *s, defo_step_body *b) {
    return defo_equilibrium_attach(&s->def, b);
}
void defo_equilibrium_op_detach(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_equilibrium_detach(b);
}
defo_status defo_equilibrium_op_topology_changed(defo_stepper *s, defo_step_body *b,
                                                 defo_index old_n, const defo_index *parent) {
    (void)old_n, (void)parent;
    defo_joint_invalidate(s->joint);
    return defo_equilibrium_resize(b);
}
void defo_equilibrium_op_frame_start(defo_stepper *s, defo_step_body *b) {
    /* the factor is kept while the stiffness is the same function of x and
     * the state is the steps' own */
    if (b->changed) defo_joint_invalidate(s->joint);
}
size_t defo_equilibrium_op_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_equilibrium_history_bytes(b);
}
void defo_equilibrium_op_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    defo_equilibrium_save_history(s, b, out);
}
defo_status defo_equilibrium_op_restore(defo_stepper *s, defo_step_body *b, const void *in,
                                        size_t size) {
    return defo_equilibrium_restore_history(s, b, in, size);
}
size_t defo_equilibrium_op_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_equilibrium_bytes(b);
}
