/*
 * integrator/quasistatic.c — TSIF05 quasistatics (defo/integrator.h): each
 * frame is the equilibrium at the frame's time (equilibrium.c: Newton with
 * the definiteness fix, TSIF05 §8; constant extrapolation, §9, through the
 * body's force model; bones, §11, as prescribed nodes; penalty contact,
 * §10, from the step context), started from the last equilibria
 * extrapolated in time when a predictor is chosen.  The stored velocity is
 * the frame's motion Δx / Δt.  History: the predictor's equilibria.
 */
#include "integrator/integrator_internal.h"

struct defo_stepper {
    defo_integrator_def def;
};

static int qs_steps(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                    double T) {
    (void)def, (void)bodies, (void)count, (void)T;
    return 1; /* one equilibrium per frame */
}

static defo_status qs_create(const defo_integrator_def *def, defo_stepper **out) {
    defo_stepper *s = defo_calloc(1, sizeof *s);
    if (!s) return defo_error_oom("quasistatic", sizeof *s);
    s->def = *def;
    *out = s;
    return DEFO_OK;
}
static void qs_destroy(defo_stepper *s) {
    defo_free(s);
}
static defo_status qs_attach(defo_stepper *s, defo_step_body *b) {
    return defo_equilibrium_attach(&s->def, b);
}
static void qs_detach(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_equilibrium_detach(b);
}
static defo_status qs_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    defo_status st = DEFO_OK, warn = DEFO_OK;
    for (int i = 0; i < count && st >= 0; i++) {
        st = defo_equilibrium_solve(&s->def, bodies[i], ctx, 1);
        if (st > 0) warn = st;
    }
    return st < 0 ? st : warn;
}
static defo_status qs_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                       const defo_index *parent) {
    (void)s, (void)old_n, (void)parent;
    return defo_equilibrium_resize(b);
}
static void qs_frame_start(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_equilibrium_frame_start(b);
}
static size_t qs_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_equilibrium_history_bytes(b);
}
static void qs_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    (void)s;
    defo_equilibrium_save_history(b, out);
}
static defo_status qs_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size) {
    (void)s;
    return defo_equilibrium_restore_history(b, in, size);
}
static size_t qs_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_equilibrium_bytes(b);
}

const defo_integrator_ops defo_quasistatic_ops = {DEFO_INTEGRATOR_QUASISTATIC,
                                                  "quasistatic",
                                                  0,
                                                  qs_steps,
                                                  qs_create,
                                                  qs_destroy,
                                                  qs_attach,
                                                  qs_detach,
                                                  qs_step,
                                                  qs_topology_changed,
                                                  qs_frame_start,
                                                  qs_history_bytes,
                                                  qs_save,
                                                  qs_restore,
                                                  qs_bytes};
