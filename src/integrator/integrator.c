/*
 * integrator/integrator.c — the table of integrators (defo/integrator.h):
 * names, per-kind defaults, validation of a definition, and the ops table
 * each stepper file exports.  Adding an integrator: its file with an ops
 * table, one row here, one row in the scene schema.
 */
#include "integrator/integrator_internal.h"

#include "defo/petsc.h"

#include "base/base.h"

#include <math.h>
#include <string.h>

extern const defo_integrator_ops defo_newmark_ops;
extern const defo_integrator_ops defo_backward_euler_ops;
extern const defo_integrator_ops defo_bdf2_ops;
extern const defo_integrator_ops defo_quasistatic_ops;
extern const defo_integrator_ops defo_static_ops;
extern const defo_integrator_ops defo_rigid_ops;
extern const defo_integrator_ops defo_hybrid_ops;

static const defo_integrator_ops *const table[DEFO_INTEGRATOR_COUNT] = {
    &defo_newmark_ops, &defo_backward_euler_ops, &defo_bdf2_ops,  &defo_quasistatic_ops,
    &defo_static_ops,  &defo_rigid_ops,          &defo_hybrid_ops};

const defo_integrator_ops *defo_integrator_ops_of(defo_integrator_kind kind) {
    if ((int)kind < 0 || kind >= DEFO_INTEGRATOR_COUNT) return NULL;
    return table[kind];
}

const char *defo_integrator_name(defo_integrator_kind kind) {
    const defo_integrator_ops *o = defo_integrator_ops_of(kind);
    return o ? o->name : "unknown";
}

defo_status defo_integrator_from_name(const char *name, defo_integrator_kind *out) {
    for (int k = 0; name && out && k < DEFO_INTEGRATOR_COUNT; k++)
        if (strcmp(name, table[k]->name) == 0) {
            *out = (defo_integrator_kind)k;
            return DEFO_OK;
        }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                      "integrator '%s' is unknown (newmark, backward_euler, bdf2, quasistatic, "
                      "static, rigid, hybrid)",
                      name ? name : "(null)");
}

defo_integrator_def defo_default_integrator_def(defo_integrator_kind kind) {
    defo_integrator_def d;
    memset(&d, 0, sizeof d);
    d.kind = kind;
    d.cfl = 0.5;
    d.tolerance = 1e-6;
    d.newton = defo_default_newton_def();
    d.linear = d.newton.linear;
    d.predictor = DEFO_PREDICTOR_NONE;
    d.restitution = 0.2;
    d.impact_radius = 0.5;
    d.fragment_size = 0;
    switch (kind) {
    case DEFO_INTEGRATOR_NEWMARK:
        /* the ITF04 §9 damping solves: matrix-free, Jacobi */
        d.time_step = 1.0 / 240.0;
        d.linear = defo_default_linear_solver_def();
        d.linear.precond.kind = DEFO_PRECOND_JACOBI;
        d.linear.max_iterations = 200;
        d.linear.tolerance = 1e-8;
        break;
    case DEFO_INTEGRATOR_BACKWARD_EULER:
    case DEFO_INTEGRATOR_BDF2:
        /* MG04 §6: PCG to 1e-6 on (M + ΔtC + Δt²K) v = b, two-level lagged */
        d.time_step = 0.01;
        d.linear = defo_default_linear_solver_def();
        d.linear.precond.kind = DEFO_PRECOND_TWO_LEVEL;
        d.linear.tolerance = 1e-6;
        d.linear.max_iterations = 5000;
        d.linear.max_age = 0;
        d.linear.history = 8; /* initial guesses from the last 8 steps (solver/linear.c) */
        break;
    case DEFO_INTEGRATOR_RIGID:
    case DEFO_INTEGRATOR_HYBRID:
        d.time_step = 1.0 / 240.0;
        break;
    case DEFO_INTEGRATOR_QUASISTATIC:
    case DEFO_INTEGRATOR_STATIC:
    case DEFO_INTEGRATOR_COUNT:
        d.time_step = 1.0; /* one solve per frame: not read */
        break;
    }
    return d;
}

defo_status defo_integrator_def_validate(const defo_integrator_def *d) {
    if (!d) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator: definition is NULL");
    if (!defo_integrator_ops_of(d->kind))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator.kind: %d is unknown",
                          (int)d->kind);
    if (!(d->time_step > 0) || !isfinite(d->time_step))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator.time_step: %g is not > 0",
                          d->time_step);
    if (!(d->cfl > 0 && d->cfl <= 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator.cfl: %g is not in (0, 1]", d->cfl);
    if (!(d->rayleigh_mass >= 0) || !isfinite(d->rayleigh_mass))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator.rayleigh_mass: %g is not >= 0",
                          d->rayleigh_mass);
    if (!(d->rayleigh_stiffness >= 0) || !isfinite(d->rayleigh_stiffness))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "integrator.rayleigh_stiffness: %g is not >= 0", d->rayleigh_stiffness);
    if (!(d->tolerance > 0 && d->tolerance < 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator.tolerance: %g is not in (0, 1)",
                          d->tolerance);
    if ((int)d->predictor < 0 || d->predictor > DEFO_PREDICTOR_CUBIC)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator.predictor: %d is unknown",
                          (int)d->predictor);
    if (!(d->restitution >= 0 && d->restitution <= 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator.restitution: %g is not in [0, 1]",
                          d->restitution);
    if (!(d->impact_radius > 0 && d->impact_radius <= 10))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "integrator.impact_radius: %g is not in (0, 10]", d->impact_radius);
    if (!(d->fragment_size >= 0) || !isfinite(d->fragment_size))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator.fragment_size: %g is not >= 0",
                          d->fragment_size);
    if (!(d->contact_stiffness >= 0) || !isfinite(d->contact_stiffness))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "integrator.contact_stiffness: %g is not >= 0",
                          d->contact_stiffness);
    /* the solver layer names its own fields; create them once to check */
    defo_newton_def nd = d->newton;
    nd.linear = d->linear;
    if (d->kind != DEFO_INTEGRATOR_NEWMARK) nd.linear.curvature = DEFO_CURVATURE_STOP;
    defo_status s = DEFO_OK;
    if (nd.linear.method == DEFO_LINEAR_BACKEND) {
        /* the backend itself is made with the first solve; here its
         * availability and the fields defo reads */
        if (!nd.linear.backend && !defo_petsc_available())
            return defo_error(DEFO_ERR_UNSUPPORTED,
                              "integrator.solver: petsc: defo was built without PETSc (apt-get "
                              "install libpetsc-real-dev libopenmpi-dev, then build again)");
        nd.linear.method = DEFO_LINEAR_PCG;
        nd.linear.backend_options[0] = '\0';
    }
    if (d->kind == DEFO_INTEGRATOR_NEWMARK || d->kind == DEFO_INTEGRATOR_BACKWARD_EULER ||
        d->kind == DEFO_INTEGRATOR_BDF2) {
        /* linear solves (newmark's damping, the MG04 §6 step of corotated
         * bodies) take a fixed iteration count (MG04 §6 interactive mode);
         * the Newton steps of invertible bodies refuse it when such a body
         * is attached */
        defo_linear_solver *L = NULL;
        s = defo_linear_solver_create(&nd.linear, &L);
        defo_linear_solver_destroy(L);
        if (nd.linear.fixed_iterations > 0) {
            nd.linear.fixed_iterations = 0;
            if (!(nd.linear.tolerance > 0)) nd.linear.tolerance = 0.1; /* Newton forces its own */
        }
    }
    defo_newton *N = NULL;
    if (!s) s = defo_newton_create(&nd, 1, &N);
    defo_newton_destroy(N);
    if (s) return defo_error_prefix("integrator");
    return DEFO_OK;
}

/* ------------------------------------------------ shared stepper ops */
defo_status defo_stepper_create(const defo_integrator_def *def, defo_stepper **out) {
    defo_stepper *s = defo_calloc(1, sizeof *s);
    if (!s) return defo_error_oom(defo_integrator_name(def->kind), sizeof *s);
    s->def = *def;
    /* "solver": "petsc": the PETSc backend (Integrator → Petsc; the solver
     * layer sees only its table) */
    if (s->def.linear.method == DEFO_LINEAR_BACKEND && !s->def.linear.backend) {
        s->def.linear.backend = defo_petsc_backend();
        if (!s->def.linear.backend) {
            defo_status st = defo_last_status();
            defo_free(s);
            return st;
        }
    }
    if (def->kind != DEFO_INTEGRATOR_NEWMARK) {
        /* the Newton steppers' joint solve: the integrator's linear solver,
         * stopping at non-positive curvature with a descent direction */
        defo_newton_def nd = def->newton;
        nd.linear = s->def.linear;
        nd.linear.curvature = DEFO_CURVATURE_STOP;
        /* Newton steps take no guesses from earlier solutions: those would
         * be state the joint solve's checkpoint record does not hold */
        nd.linear.history = 0;
        defo_status st = defo_joint_create(&nd, &s->joint);
        if (st) {
            defo_free(s);
            return st;
        }
    }
    *out = s;
    return DEFO_OK;
}

void defo_stepper_destroy(defo_stepper *s) {
    if (!s) return;
    defo_joint_destroy(s->joint);
    defo_free(s->parts);
    defo_free(s->set);
    defo_free((void *)s->xs);
    defo_free(s->vs);
    defo_free(s->ws);
    defo_free((void *)s->base);
    defo_free(s->hs);
    defo_rb_scratch_free(s->rb);
    defo_free(s);
}

defo_status defo_stepper_scratch(defo_stepper *s, int count) {
    if (count <= s->cap_parts) return DEFO_OK;
    defo_free(s->parts);
    defo_free(s->set);
    defo_free((void *)s->xs);
    defo_free(s->vs);
    defo_free(s->ws);
    defo_free((void *)s->base);
    defo_free(s->hs);
    s->parts = defo_calloc((size_t)count, sizeof *s->parts);
    s->base = defo_calloc(2 * (size_t)count, sizeof *s->base);
    s->hs = defo_calloc((size_t)count, sizeof *s->hs);
    s->set = defo_calloc((size_t)count, sizeof *s->set);
    s->xs = defo_calloc((size_t)count, sizeof *s->xs);
    s->vs = defo_calloc((size_t)count, sizeof *s->vs);
    s->ws = defo_calloc((size_t)count, sizeof *s->ws);
    if (!s->parts || !s->set || !s->xs || !s->vs || !s->ws || !s->base || !s->hs) {
        s->cap_parts = 0;
        return defo_error_oom("stepper scratch", (size_t)count * 160);
    }
    s->cap_parts = count;
    return DEFO_OK;
}

int defo_time_step_steps(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                         double T) {
    (void)bodies, (void)count;
    double k = ceil(T / def->time_step * (1.0 - 1e-12));
    if (!(k >= 1)) k = 1;
    return k > 1e9 ? -1 : (int)k;
}

int defo_one_step(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                  double T) {
    (void)def, (void)bodies, (void)count, (void)T;
    return 1;
}
