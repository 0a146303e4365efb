/*
 * integrator/backward_euler.c — implicit Euler (defo/integrator.h): each step
 * the implicit velocity solve (implicit.c) with x_b = xⁿ, v_b = vⁿ, h = Δt —
 * MG04 §6 for corotated bodies (one linear solve with the rotations of xⁿ),
 * Newton with the definiteness fix for invertible ones (TSIF05 §8, MMDJ01
 * §2.6).  First order: the error at a fixed time halves with Δt (tested).
 * No history: a step depends on (xⁿ, vⁿ) only.
 */
#include "integrator/integrator_internal.h"

static defo_status be_attach(defo_stepper *s, defo_step_body *b) {
    return defo_implicit_attach(&s->def, b, 0);
}

static defo_status be_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    defo_status st = defo_stepper_scratch(s, count);
    if (st) return st;
    /* x_b, v_b are xⁿ, vⁿ themselves; h = Δt for every body */
    for (int i = 0; i < count; i++) {
        s->base[i] = bodies[i]->x;
        s->base[count + i] = bodies[i]->v;
        s->hs[i] = ctx->dt;
    }
    return defo_implicit_step(s, bodies, count, s->base, s->base + count, s->hs, ctx);
}

/* history: the factorisation record (implicit.c) */
static size_t be_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_implicit_fact_bytes(b);
}
static void be_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    defo_implicit_fact_save(s, b, out);
}
static defo_status be_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size) {
    if (size != defo_implicit_fact_bytes(b))
        return defo_error(DEFO_ERR_PARSE,
                          "backward Euler history of body '%s': %zu bytes, %zu "
                          "expected",
                          b->name, size, defo_implicit_fact_bytes(b));
    return defo_implicit_fact_restore(s, b, in);
}

const defo_integrator_ops defo_backward_euler_ops = {DEFO_INTEGRATOR_BACKWARD_EULER,
                                                     "backward_euler",
                                                     1,
                                                     defo_time_step_steps,
                                                     defo_stepper_create,
                                                     defo_stepper_destroy,
                                                     be_attach,
                                                     defo_implicit_op_detach,
                                                     be_step,
                                                     defo_implicit_op_topology_changed,
                                                     defo_implicit_op_frame_start,
                                                     be_history_bytes,
                                                     be_save,
                                                     be_restore,
                                                     defo_implicit_op_bytes};

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
