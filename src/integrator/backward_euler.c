/*
 * integrator/backward_euler.c — implicit Euler (defo/integrator.h): each step
 * the implicit velocity solve (implicit.c) with x_b = xⁿ, v_b = vⁿ, h = Δt —
 * MG04 §6 for corotated bodies (one linear solve with the rotations of xⁿ),
 * Newton with the definiteness fix for invertible ones (TSIF05 §8, MMDJ01
 * §2.6).  First order: the error at a fixed time halves with Δt (tested).
 * No history: a step depends on (xⁿ, vⁿ) only.
 */
#include "integrator/integrator_internal.h"

struct defo_stepper {
    defo_integrator_def def;
};

static int be_steps(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                    double T) {
    (void)bodies, (void)count;
    double k = ceil(T / def->time_step * (1.0 - 1e-12));
    if (!(k >= 1)) k = 1;
    return k > 1e9 ? -1 : (int)k;
}

static defo_status be_create(const defo_integrator_def *def, defo_stepper **out) {
    defo_stepper *s = defo_calloc(1, sizeof *s);
    if (!s) return defo_error_oom("backward Euler", sizeof *s);
    s->def = *def;
    *out = s;
    return DEFO_OK;
}

static void be_destroy(defo_stepper *s) {
    defo_free(s);
}

static defo_status be_attach(defo_stepper *s, defo_step_body *b) {
    return defo_implicit_attach(&s->def, b, 0);
}

static void be_detach(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_implicit_detach(b);
}

static defo_status be_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    defo_status st = DEFO_OK, warn = DEFO_OK;
    for (int i = 0; i < count && st >= 0; i++) {
        defo_step_body *b = bodies[i];
        defo_implicit_body *d = b->data;
        const size_t m = 3 * (size_t)b->n;
        memcpy(d->xb, b->x, m * sizeof(double));
        memcpy(d->vb, b->v, m * sizeof(double));
        st = defo_implicit_solve(&s->def, b, d->xb, d->vb, ctx->dt, ctx);
        if (st > 0) warn = st;
    }
    return st < 0 ? st : warn;
}

static defo_status be_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                       const defo_index *parent) {
    (void)s;
    return defo_implicit_resize(b, old_n, parent);
}

static void be_frame_start(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_implicit_frame_start(b);
}

/* history: the factorisation record (implicit.c) */
static size_t be_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_implicit_fact_bytes(b);
}
static void be_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    (void)s;
    defo_implicit_fact_save(b, out);
}
static defo_status be_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size) {
    (void)s;
    if (size != defo_implicit_fact_bytes(b))
        return defo_error(DEFO_ERR_PARSE,
                          "backward Euler history of body '%s': %zu bytes, %zu "
                          "expected",
                          b->name, size, defo_implicit_fact_bytes(b));
    return defo_implicit_fact_restore(b, in);
}

static size_t be_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_implicit_bytes(b);
}

const defo_integrator_ops defo_backward_euler_ops = {DEFO_INTEGRATOR_BACKWARD_EULER,
                                                     "backward_euler",
                                                     1,
                                                     be_steps,
                                                     be_create,
                                                     be_destroy,
                                                     be_attach,
                                                     be_detach,
                                                     be_step,
                                                     be_topology_changed,
                                                     be_frame_start,
                                                     be_history_bytes,
                                                     be_save,
                                                     be_restore,
                                                     be_bytes};

/* shared with the other steppers that keep no history */
size_t defo_no_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s, (void)b;
    return 0;
}
void defo_no_history_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    (void)s, (void)b, (void)out;
}
defo_status defo_no_history_restore(defo_stepper *s, defo_step_body *b, const void *in,
                                    size_t size) {
    (void)s, (void)b, (void)in;
    return size == 0 ? DEFO_OK
                     : defo_error(DEFO_ERR_PARSE,
                                  "%zu bytes of history for a stepper that keeps none", size);
}
