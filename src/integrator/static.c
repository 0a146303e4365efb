/*
 * integrator/static.c — MMDJ01 §2.3 static analysis (defo/integrator.h): one
 * equilibrium solve of the current loads per frame (equilibrium.c), without
 * time: no predictor, velocities zero; its history is the lagged
 * factorisation's record.  With time-dependent
 * bones the frame's equilibrium is that of the frame's end.
 */
#include "integrator/integrator_internal.h"

static defo_status st_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    return defo_equilibrium_step(s, bodies, count, ctx, 0);
}

const defo_integrator_ops defo_static_ops = {DEFO_INTEGRATOR_STATIC,
                                             "static",
                                             0,
                                             defo_one_step,
                                             defo_stepper_create,
                                             defo_stepper_destroy,
                                             defo_equilibrium_op_attach,
                                             defo_equilibrium_op_detach,
                                             st_step,
                                             defo_equilibrium_op_topology_changed,
                                             defo_equilibrium_op_frame_start,
                                             defo_equilibrium_op_history_bytes,
                                             defo_equilibrium_op_save,
                                             defo_equilibrium_op_restore,
                                             defo_equilibrium_op_bytes};
