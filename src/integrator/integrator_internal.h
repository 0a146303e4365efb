/*
 * integrator/integrator_internal.h — pieces the integrator files share:
 * the implicit velocity solve of backward Euler and BDF2 (implicit.c), the
 * equilibrium solve of the quasistatic and static integrators
 * (equilibrium.c), and small helpers.  Never installed.
 */
#ifndef DEFO_INTEGRATOR_INTERNAL_H
#define DEFO_INTEGRATOR_INTERNAL_H

#include "defo/integrator.h"
#include "defo/math.h"

#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <string.h>

/* First node with a non-finite position or velocity, or −1. */
static inline defo_index defo_first_non_finite(defo_index n, const double *x, const double *v) {
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            if (!isfinite(x[j]) || (v && !isfinite(v[j]))) return i;
        }
    return -1;
}

/* Every stepper is its definition; the ops below are shared by the
 * integrator files (integrator.c). */
struct defo_stepper {
    defo_integrator_def def;
};
defo_status defo_stepper_create(const defo_integrator_def *def, defo_stepper **out);
void defo_stepper_destroy(defo_stepper *s);
/* Equal steps of at most def->time_step (implicit integrators). */
int defo_time_step_steps(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                         double T);
/* One step per frame (equilibrium solvers). */
int defo_one_step(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                  double T);

/* History hooks of steppers that keep none. */
size_t defo_no_history_bytes(const defo_stepper *s, const defo_step_body *b);
void defo_no_history_save(const defo_stepper *s, const defo_step_body *b, void *out);
defo_status defo_no_history_restore(defo_stepper *s, defo_step_body *b, const void *in,
                                    size_t size);

/* ------------------------------------------------- implicit velocity solve */
/* Per-body state of backward Euler and BDF2. */
typedef struct defo_implicit_body {
    defo_linear_solver *linear; /* corotated (linear) steps */
    defo_newton *newton;        /* invertible (Newton) steps */
    defo_index cap;
    double *xb, *vb; /* the step's base position and velocity */
    double *vn;      /* the unknown velocity */
    double *y;       /* positions of the current iterate xb + h vn */
    double *f, *rhs, *tmp;
    double *normal, *friction;
    double *diag;   /* 9n: damping diagonal blocks */
    double *cblock; /* 9n: penalty contact blocks at the iterate (Newton steps) */
    defo_index contacts;
    int have_contact;
    int capped; /* this step's penalty held nodes back (separation_speed) */
    unsigned char *constraint, *contact;
    /* BDF2 history: the previous state */
    double *x_prev, *v_prev;
    int have_prev;
    /* the lagged factorisation carried from frame to frame: the positions
     * and step it was made at and the lag state (history), so a restored
     * run rebuilds the same factor before its first step */
    double *x_fact;
    double h_fact, t_fact; /* t_fact: the step's end (penalty contact) */
    int have_fact, rebuild;
    defo_linear_lag lag;
} defo_implicit_body;

defo_status defo_implicit_attach(const defo_integrator_def *def, defo_step_body *b, int history);
void defo_implicit_detach(defo_step_body *b);
defo_status defo_implicit_resize(defo_step_body *b, defo_index old_n, const defo_index *parent);
void defo_implicit_frame_start(defo_step_body *b);
size_t defo_implicit_bytes(const defo_step_body *b);
/* The ops backward Euler and BDF2 share (implicit.c). */
void defo_implicit_op_detach(defo_stepper *s, defo_step_body *b);
defo_status defo_implicit_op_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                              const defo_index *parent);
void defo_implicit_op_frame_start(defo_stepper *s, defo_step_body *b);
size_t defo_implicit_op_bytes(const defo_stepper *s, const defo_step_body *b);
/* The factorisation record (history of backward Euler and BDF2). */
size_t defo_implicit_fact_bytes(const defo_step_body *b);
void defo_implicit_fact_save(const defo_step_body *b, void *out);
defo_status defo_implicit_fact_restore(defo_step_body *b, const void *in);

/* Solve M (v⁺ − v_b) = h (f(x_b + h v⁺) + f_ext − C v⁺) for v⁺ and commit
 * x = x_b + h v⁺, v = v⁺ (then the response, over ctx->dt).  x_b, v_b may be
 * b->x, b->v themselves (backward Euler): they are read before the commit.
 * The rotations of b->x (xⁿ) linearise a corotated body (MG04 §6); C = αM +
 * βK + the material's damping. */
defo_status defo_implicit_solve(const defo_integrator_def *def, defo_step_body *b,
                                const double *x_b, const double *v_b, double h,
                                const defo_step_context *ctx);

/* --------------------------------------------------- equilibrium solve */
typedef struct defo_equilibrium_body defo_equilibrium_body;
defo_status defo_equilibrium_attach(const defo_integrator_def *def, defo_step_body *b);
void defo_equilibrium_detach(defo_step_body *b);
/* One equilibrium of body b at time t (prescribed nodes at their targets),
 * from x; with_time: quasistatic (predictor, v = Δx/dt) or static (v = 0). */
defo_status defo_equilibrium_solve(const defo_integrator_def *def, defo_step_body *b,
                                   const defo_step_context *ctx, int with_time);
defo_status defo_equilibrium_resize(defo_step_body *b);
void defo_equilibrium_frame_start(defo_step_body *b);
size_t defo_equilibrium_history_bytes(const defo_step_body *b);
void defo_equilibrium_save_history(const defo_step_body *b, void *out);
defo_status defo_equilibrium_restore_history(defo_step_body *b, const void *in, size_t size);
size_t defo_equilibrium_bytes(const defo_step_body *b);
/* The ops quasistatic and static share (equilibrium.c). */
defo_status defo_equilibrium_op_attach(defo_stepper *s, defo_step_body *b);
void defo_equilibrium_op_detach(defo_stepper *s, defo_step_body *b);
defo_status defo_equilibrium_op_topology_changed(defo_stepper *s, defo_step_body *b,
                                                 defo_index old_n, const defo_index *parent);
void defo_equilibrium_op_frame_start(defo_stepper *s, defo_step_body *b);
size_t defo_equilibrium_op_history_bytes(const defo_stepper *s, const defo_step_body *b);
void defo_equilibrium_op_save(const defo_stepper *s, const defo_step_body *b, void *out);
defo_status defo_equilibrium_op_restore(defo_stepper *s, defo_step_body *b, const void *in,
                                        size_t size);
size_t defo_equilibrium_op_bytes(const defo_stepper *s, const defo_step_body *b);

#endif
