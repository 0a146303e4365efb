/*
 * integrator/bdf2.c — second-order backward differences (MTPS08 §5.2):
 *   xⁿ⁺¹ = (4xⁿ − xⁿ⁻¹)/3 + (2Δt/3) vⁿ⁺¹,
 *   M (vⁿ⁺¹ − (4vⁿ − vⁿ⁻¹)/3) = (2Δt/3) (f(xⁿ⁺¹) + f_ext − C vⁿ⁺¹),
 * i.e. the implicit velocity solve (implicit.c) with x_b = (4xⁿ − xⁿ⁻¹)/3,
 * v_b = (4vⁿ − vⁿ⁻¹)/3 and h = 2Δt/3.  The first step (no previous state) is
 * backward Euler.  Second order: the error at a fixed time falls 4× when Δt
 * halves (tested).  The previous state (xⁿ⁻¹, vⁿ⁻¹) is history: checkpoints
 * hold it, so a resumed run continues bit for bit.
 */
#include "integrator/integrator_internal.h"

static defo_status bdf2_attach(defo_stepper *s, defo_step_body *b) {
    return defo_implicit_attach(&s->def, b, 1);
}

static defo_status bdf2_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                             const defo_step_context *ctx) {
    defo_status st = defo_stepper_scratch(s, count);
    if (st) return st;
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_implicit_body *d = b->data;
        const size_t m = 3 * (size_t)b->n;
        /* the first step is backward Euler: x_b, v_b are xⁿ, vⁿ themselves */
        s->hs[i] = ctx->dt;
        s->base[i] = b->x;
        s->base[count + i] = b->v;
        if (d->have_prev) {
            for (size_t j = 0; j < m; j++) {
                d->xb[j] = (4.0 * b->x[j] - d->x_prev[j]) / 3.0;
                d->vb[j] = (4.0 * b->v[j] - d->v_prev[j]) / 3.0;
            }
            s->hs[i] = 2.0 * ctx->dt / 3.0;
            s->base[i] = d->xb;
            s->base[count + i] = d->vb;
        }
        /* xⁿ, vⁿ become the history now (x_b, v_b hold what the step needs of
         * xⁿ⁻¹); a failed step is undone by the world, history included */
        memcpy(d->x_prev, b->x, m * sizeof(double));
        memcpy(d->v_prev, b->v, m * sizeof(double));
        d->have_prev = 1;
    }
    return defo_implicit_step(s, bodies, count, s->base, s->base + count, s->hs, ctx);
}

static size_t bdf2_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_implicit_fact_bytes(b) + 8 + 6 * (size_t)b->n * sizeof(double);
}

static void bdf2_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    const defo_implicit_body *d = b->data;
    defo_implicit_fact_save(s, b, out);
    unsigned char *o = (unsigned char *)out + defo_implicit_fact_bytes(b);
    const uint64_t have = (uint64_t)d->have_prev;
    const size_t m = 3 * (size_t)b->n * sizeof(double);
    memcpy(o, &have, 8);
    memcpy(o + 8, d->x_prev, m);
    memcpy(o + 8 + m, d->v_prev, m);
}

static defo_status bdf2_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size) {
    defo_implicit_body *d = b->data;
    if (size != bdf2_history_bytes(s, b))
        return defo_error(DEFO_ERR_PARSE, "BDF2 history of body '%s': %zu bytes, %zu expected",
                          b->name, size, bdf2_history_bytes(s, b));
    defo_status st = defo_implicit_fact_restore(s, b, in);
    if (st) return st;
    const unsigned char *p = (const unsigned char *)in + defo_implicit_fact_bytes(b);
    uint64_t have;
    const size_t m = 3 * (size_t)b->n * sizeof(double);
    memcpy(&have, p, 8);
    if (have > 1) return defo_error(DEFO_ERR_PARSE, "BDF2 history of body '%s': bad flag", b->name);
    memcpy(d->x_prev, p + 8, m);
    memcpy(d->v_prev, p + 8 + m, m);
    d->have_prev = (int)have;
    return DEFO_OK;
}

const defo_integrator_ops defo_bdf2_ops = {DEFO_INTEGRATOR_BDF2,
                                           "bdf2",
                                           1,
                                           defo_time_step_steps,
                                           defo_stepper_create,
                                           defo_stepper_destroy,
                                           bdf2_attach,
                                           defo_implicit_op_detach,
                                           bdf2_step,
                                           defo_implicit_op_topology_changed,
                                           defo_implicit_op_frame_start,
                                           bdf2_history_bytes,
                                           bdf2_save,
                                           bdf2_restore,
                                           defo_implicit_op_bytes};
