/*
 * integrator/static.c — MMDJ01 §2.3 static analysis (defo/integrator.h): one
 * equilibrium solve of the current loads per frame (equilibrium.c), without
 * time: no predictor, no history, velocities zero.  With time-dependent
 * bones the frame's equilibrium is that of the frame's end.
 */
#include "integrator/integrator_internal.h"

struct defo_stepper {
    defo_integrator_def def;
};

static int st_steps(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                    double T) {
    (void)def, (void)bodies, (void)count, (void)T;
    return 1;
}
static defo_status st_create(const defo_integrator_def *def, defo_stepper **out) {
    defo_stepper *s = defo_calloc(1, sizeof *s);
    if (!s) return defo_error_oom("static", sizeof *s);
    s->def = *def;
    *out = s;
    return DEFO_OK;
}
static void st_destroy(defo_stepper *s) {
    defo_free(s);
}
static defo_status st_attach(defo_stepper *s, defo_step_body *b) {
    return defo_equilibrium_attach(&s->def, b);
}
static void st_detach(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_equilibrium_detach(b);
}
static defo_status st_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    defo_status st = DEFO_OK, warn = DEFO_OK;
    for (int i = 0; i < count && st >= 0; i++) {
        st = defo_equilibrium_solve(&s->def, bodies[i], ctx, 0);
        if (st > 0) warn = st;
    }
    return st < 0 ? st : warn;
}
static defo_status st_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                       const defo_index *parent) {
    (void)s, (void)old_n, (void)parent;
    return defo_equilibrium_resize(b);
}
static void st_frame_start(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_equilibrium_frame_start(b);
}
/* history: the factorisation record (equilibrium.c) */
static size_t st_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_equilibrium_history_bytes(b);
}
static void st_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    (void)s;
    defo_equilibrium_save_history(b, out);
}
static defo_status st_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size) {
    (void)s;
    return defo_equilibrium_restore_history(b, in, size);
}
static size_t st_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_equilibrium_bytes(b);
}

const defo_integrator_ops defo_static_ops = {DEFO_INTEGRATOR_STATIC,
                                             "static",
                                             0,
                                             st_steps,
                                             st_create,
                                             st_destroy,
                                             st_attach,
                                             st_detach,
                                             st_step,
                                             st_topology_changed,
                                             st_frame_start,
                                             st_history_bytes,
                                             st_save,
                                             st_restore,
                                             st_bytes};
