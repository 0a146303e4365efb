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

static defo_status qs_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    return defo_equilibrium_step(s, bodies, count, ctx, 1);
}

const defo_integrator_ops defo_quasistatic_ops = {DEFO_INTEGRATOR_QUASISTATIC,
                                                  "quasistatic",
                                                  0,
                                                  defo_one_step,
                                                  defo_stepper_create,
                                                  defo_stepper_destroy,
                                                  defo_equilibrium_op_attach,
                                                  defo_equilibrium_op_detach,
                                                  qs_step,
                                                  defo_equilibrium_op_topology_changed,
                                                  defo_equilibrium_op_frame_start,
                                                  defo_equilibrium_op_history_bytes,
                                                  defo_equilibrium_op_save,
                                                  defo_equilibrium_op_restore,
                                                  defo_equilibrium_op_bytes};
