/*
 * integrator/backward_euler.c — implicit Euler for a corotated body (MG04 §6).
 *
 * One step from (xⁱ, vⁱ):
 *   1  Re from xⁱ (lazily, MTPS08 §4.4, when the force model's def asks);
 *   2  if any Re changed (or on the first step): A = (1 + Δtα) M +
 *      (Δt² + Δtβ) K';
 *   3  b = M vⁱ + Δt (f_el(xⁱ) + f_ext + f_plastic), f_el = −(K'xⁱ + f'0);
 *   4  PCG on A v = b from v = vⁱ (warm start) with fixed nodes projected —
 *      their velocity stays the caller's value — by the body's
 *      defo_linear_solver, whose lag policy decides when the preconditioner
 *      of A is recomputed;
 *   5  xⁱ⁺¹ = xⁱ + Δt vⁱ⁺¹.
 * Derivation: M (v⁺ − v) = Δt (−C v⁺ − (K'x⁺ + f'0) + f_ext) with
 * x⁺ = x + Δt v⁺ gives exactly the system of line 2–3 (MG04 §6).
 * The step writes into scratch arrays and commits only when every value is
 * finite, so a refused step leaves the state at step i.
 */
#include "defo/backward_euler.h"

#include "defo/cholesky.h"
#include "defo/solver.h"

#include "base/parallel.h"

#include <math.h>
#include <string.h>
#include <time.h>

struct defo_backward_euler {
    const defo_mesh *mesh;
    defo_backward_euler_def def;
    defo_corotated *model;
    defo_linear_solver *solver; /* PCG with the lagged preconditioner */
    defo_index n;
    double *x, *v, *f_ext, *mass;
    double *v_prev; /* vⁱ⁻¹, for the extrapolated warm start */
    int steps;
    unsigned char *constraint;
    double *force, *rhs, *v_new;
    double time;
    int assembled;
    /* MG04 §3 plastic force (3n), added to the right-hand side like f_ext */
    double *f_plastic;
    defo_material_def material; /* kept to rebuild after a topology change */
    /* 1 when defo_backward_euler_update_rotations ran since the last step:
     * the step reuses its rotations, force and update count */
    int rotations_fresh;
    defo_index fresh_updated;
};

defo_backward_euler_def defo_default_backward_euler_def(void) {
    defo_backward_euler_def d;
    memset(&d, 0, sizeof d);
    d.time_step = 0.01;
    d.gravity[2] = -9.81;
    d.cg_tolerance = 1e-6;
    d.cg_max_iterations = 5000;
    d.preconditioner = DEFO_PRECOND_TWO_LEVEL;
    d.warm_start = 1;
    d.precond_max_age = 0;
    d.precond_rate_growth = 2.0;
    d.corotated = defo_default_corotated_def();
    return d;
}

static double now_seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void defo_backward_euler_destroy(defo_backward_euler *be) {
    if (!be) return;
    defo_corotated_destroy(be->model);
    defo_linear_solver_destroy(be->solver);
    defo_free(be->x);
    defo_free(be->v);
    defo_free(be->v_prev);
    defo_free(be->f_ext);
    defo_free(be->mass);
    defo_free(be->constraint);
    defo_free(be->force);
    defo_free(be->rhs);
    defo_free(be->v_new);
    defo_free(be->f_plastic);
    defo_free(be);
}

/* The linear solver of the step: PCG on A v = b with the preconditioner
 * kept by the one lag policy (defo_linear_solver_def).  In interactive mode
 * (cg_fixed_iterations) the count is exact (MG04 §6), except that a
 * factorised preconditioner stops at cg_tolerance when it gets there first
 * (a lagged Cholesky factor typically does in a few iterations). */
static defo_linear_solver_def linear_def(const defo_backward_euler_def *d) {
    defo_linear_solver_def ld = defo_default_linear_solver_def();
    ld.precond.kind = d->preconditioner;
    ld.max_iterations = d->cg_max_iterations;
    ld.tolerance = d->cg_tolerance;
    if (d->cg_fixed_iterations > 0) {
        const int factorised = d->preconditioner == DEFO_PRECOND_CHOLESKY ||
                               d->preconditioner == DEFO_PRECOND_TWO_LEVEL ||
                               d->preconditioner == DEFO_PRECOND_BLOCK_IC0;
        ld.fixed_iterations = d->cg_fixed_iterations;
        ld.tolerance = factorised ? d->cg_tolerance : 0;
    }
    ld.max_age = d->precond_max_age;
    ld.rate_growth = d->precond_rate_growth;
    return ld;
}

defo_status defo_backward_euler_create(const defo_mesh *mesh, const defo_material_def *material,
                                       const defo_backward_euler_def *def,
                                       defo_backward_euler **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "backward_euler: out is NULL");
    *out = NULL;
    if (!mesh || !material)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "backward_euler: mesh or material is NULL");
    defo_backward_euler_def d = def ? *def : defo_default_backward_euler_def();
    if (!(d.time_step > 0) || !isfinite(d.time_step))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "backward_euler: time_step %g must be > 0",
                          d.time_step);
    if (!(d.rayleigh_mass >= 0) || !(d.rayleigh_stiffness >= 0) || !isfinite(d.rayleigh_mass) ||
        !isfinite(d.rayleigh_stiffness))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "backward_euler: Rayleigh coefficients %g, %g must be >= 0",
                          d.rayleigh_mass, d.rayleigh_stiffness);
    if (d.cg_fixed_iterations < 0 || d.cg_max_iterations <= 0 ||
        (d.cg_fixed_iterations == 0 && !(d.cg_tolerance > 0 && d.cg_tolerance < 1)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "backward_euler: CG settings out of range (fixed %d, max %d, "
                          "tolerance %g)",
                          d.cg_fixed_iterations, d.cg_max_iterations, d.cg_tolerance);
    if ((int)d.preconditioner < 0 || (int)d.preconditioner > (int)DEFO_PRECOND_TWO_LEVEL)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "backward_euler: unknown preconditioner %d",
                          (int)d.preconditioner);
    if (d.precond_max_age < 0 || !(d.precond_rate_growth > 0) || !isfinite(d.precond_rate_growth))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "backward_euler: precond_max_age %d must be >= 0 and "
                          "precond_rate_growth %g > 0",
                          d.precond_max_age, d.precond_rate_growth);
    /* built without CHOLMOD: the iterative fallback */
    if (d.preconditioner == DEFO_PRECOND_CHOLESKY && !defo_cholesky_available())
        d.preconditioner = DEFO_PRECOND_BLOCK_IC0;
    for (int k = 0; k < 3; k++)
        if (!isfinite(d.gravity[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "backward_euler: gravity not finite");
    if (!(material->density > 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "backward_euler: density %g must be > 0",
                          material->density);

    defo_backward_euler *be = defo_calloc(1, sizeof *be);
    if (!be) return defo_error_oom("backward Euler stepper", sizeof *be);
    be->mesh = mesh;
    be->def = d;
    be->n = mesh->num_nodes;
    defo_status st = defo_corotated_create(mesh, material, &d.corotated, &be->model);
    if (st) {
        defo_free(be);
        return defo_error_prefix("backward_euler");
    }
    size_t m = 3 * (size_t)be->n;
    be->x = defo_malloc(m * sizeof(double) + 1);
    be->v = defo_calloc(m + 1, sizeof(double));
    be->v_prev = defo_calloc(m + 1, sizeof(double));
    be->f_ext = defo_calloc(m + 1, sizeof(double));
    be->mass = defo_malloc((size_t)be->n * sizeof(double) + 1);
    be->constraint = defo_calloc((size_t)be->n + 1, 1);
    be->force = defo_malloc(m * sizeof(double) + 1);
    be->rhs = defo_malloc(m * sizeof(double) + 1);
    be->v_new = defo_malloc(m * sizeof(double) + 1);
    be->f_plastic = defo_calloc(m + 1, sizeof(double));
    be->material = *material;
    if (!be->x || !be->v || !be->v_prev || !be->f_ext || !be->mass || !be->constraint ||
        !be->force || !be->rhs || !be->v_new || !be->f_plastic) {
        defo_backward_euler_destroy(be);
        return defo_error_oom("backward Euler state", 10 * m * sizeof(double));
    }
    defo_linear_solver_def ld = linear_def(&d);
    st = defo_linear_solver_create(&ld, &be->solver);
    if (st) {
        defo_backward_euler_destroy(be);
        return defo_error_prefix("backward_euler");
    }
    memcpy(be->x, mesh->x, m * sizeof(double));
    st = defo_mesh_lumped_mass(mesh, material->density, be->mass);
    if (st) {
        defo_backward_euler_destroy(be);
        return defo_error_prefix("backward_euler");
    }
    *out = be;
    return DEFO_OK;
}

double *defo_backward_euler_positions(defo_backward_euler *be) {
    return be->x;
}
double *defo_backward_euler_velocities(defo_backward_euler *be) {
    return be->v;
}
double *defo_backward_euler_external_force(defo_backward_euler *be) {
    return be->f_ext;
}
double *defo_backward_euler_plastic_force(defo_backward_euler *be) {
    return be->f_plastic;
}

defo_status defo_backward_euler_update_rotations(defo_backward_euler *be) {
    if (!be) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "backward_euler: NULL stepper");
    if (be->rotations_fresh) return DEFO_OK; /* positions unchanged since (by contract) */
    defo_index updated = 0;
    defo_status st = defo_corotated_update_rotations(be->model, be->x, &updated);
    if (!st) st = defo_corotated_forces(be->model, be->x, be->force, NULL);
    if (st) {
        be->rotations_fresh = 0;
        return defo_error_prefix("backward_euler rotations");
    }
    be->fresh_updated = updated;
    be->rotations_fresh = 1;
    return DEFO_OK;
}

/* A per-node array of `size` bytes per node grown from old_n to n nodes,
 * the new entries zeroed; NULL when out of memory (p is then untouched). */
static void *grow_nodes(void *p, size_t size, defo_index old_n, defo_index n) {
    char *q = defo_realloc(p, (size_t)n * size + 1);
    if (q && n > old_n) memset(q + (size_t)old_n * size, 0, (size_t)(n - old_n) * size);
    return q;
}

#define GROW(field, size)                                                                          \
    do {                                                                                           \
        void *q_ = grow_nodes(be->field, (size), old_n, n);                                        \
        if (!q_) return defo_error_oom("backward Euler state", (size_t)n * (size));                \
        be->field = q_;                                                                            \
    } while (0)

defo_status defo_backward_euler_topology_changed(defo_backward_euler *be) {
    if (!be) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "backward_euler: NULL stepper");
    const defo_mesh *mesh = be->mesh;
    const defo_index old_n = be->n, n = mesh->num_nodes;
    if (n < old_n)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "backward_euler: the mesh lost nodes (%ld -> %ld); only appended "
                          "nodes are supported",
                          (long)old_n, (long)n);
    const size_t d3 = 3 * sizeof(double);
    GROW(x, d3);
    GROW(v, d3);
    GROW(v_prev, d3);
    GROW(f_ext, d3);
    GROW(f_plastic, d3);
    GROW(mass, sizeof(double));
    GROW(constraint, 1);
    GROW(force, d3);
    GROW(rhs, d3);
    GROW(v_new, d3);
    be->n = n; /* arrays now hold n nodes (the old ones' values kept) */
    for (defo_index i = old_n; i < n; i++)
        memcpy(be->x + 3 * (size_t)i, mesh->x + 3 * (size_t)i, d3);
    /* Lumped masses from the new connectivity: a split node's mass is
     * shared between its copies by their incident elements (MG04 §4). */
    defo_status st = defo_mesh_lumped_mass(mesh, be->material.density, be->mass);
    if (st) return defo_error_prefix("backward_euler topology");
    /* Ke does not change (MG04 §4), but the assembly pattern does: rebuild
     * the model and its matrix; the rotations are recomputed next step. */
    defo_corotated *model = NULL;
    st = defo_corotated_create(mesh, &be->material, &be->def.corotated, &model);
    if (st) return defo_error_prefix("backward_euler topology");
    defo_corotated_destroy(be->model);
    be->model = model;
    defo_linear_solver_invalidate(be->solver); /* a new pattern */
    be->assembled = 0;
    be->rotations_fresh = 0;
    return DEFO_OK;
}
void defo_backward_euler_refresh(defo_backward_euler *be) {
    if (!be) return;
    defo_corotated_invalidate_rotations(be->model);
    be->assembled = 0;
    be->rotations_fresh = 0;
    defo_linear_solver_invalidate(be->solver);
}

unsigned char *defo_backward_euler_constraints(defo_backward_euler *be) {
    /* The caller may change constraints: the IC(0) factor depends on them. */
    be->assembled = 0;
    defo_linear_solver_invalidate(be->solver);
    return be->constraint;
}
const double *defo_backward_euler_mass(const defo_backward_euler *be) {
    return be->mass;
}
defo_corotated *defo_backward_euler_force_model(defo_backward_euler *be) {
    return be->model;
}
double defo_backward_euler_time(const defo_backward_euler *be) {
    return be->time;
}

size_t defo_backward_euler_bytes(const defo_backward_euler *be) {
    size_t m = 3 * (size_t)be->n;
    size_t pre = defo_linear_solver_bytes(be->solver);
    return sizeof *be + defo_corotated_bytes(be->model) + pre + 8 * m * sizeof(double) +
           (size_t)be->n * (sizeof(double) + 1);
}

defo_status defo_backward_euler_step(defo_backward_euler *be, defo_backward_euler_stats *stats) {
    defo_backward_euler_stats s;
    memset(&s, 0, sizeof s);
    if (stats) *stats = s;
    if (!be) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "backward_euler: NULL stepper");
    const defo_backward_euler_def *d = &be->def;
    const double dt = d->time_step;
    const defo_index n = be->n;
    const size_t m = 3 * (size_t)n;

    double t0 = now_seconds();
    defo_status st;
    if (be->rotations_fresh) { /* done by defo_backward_euler_update_rotations */
        s.rotations_updated = be->fresh_updated;
        be->rotations_fresh = 0;
    } else {
        st = defo_corotated_update_rotations(be->model, be->x, &s.rotations_updated);
        if (st) return defo_error_prefix("backward_euler step");
        st = defo_corotated_forces(be->model, be->x, be->force, NULL);
        if (st) return defo_error_prefix("backward_euler step");
    }
    double t1 = now_seconds();
    s.seconds_rotations = t1 - t0;

    if (!be->assembled || s.rotations_updated > 0) {
        defo_corotated_assemble(be->model, dt * dt + dt * d->rayleigh_stiffness, be->mass,
                                1 + dt * d->rayleigh_mass);
        be->assembled = 1;
        s.reassembled = 1;
    }
    double t2 = now_seconds();
    s.seconds_assembly = t2 - t1;

    /* b = M v + Δt (f_el + f_ext + M g) */
    const double *mass = be->mass, *v = be->v, *fe = be->force, *fx = be->f_ext;
    const double *fp = be->f_plastic;
    const double gx = d->gravity[0], gy = d->gravity[1], gz = d->gravity[2];
    const unsigned char *con = be->constraint;
    /* warm start: vⁱ, or 2vⁱ − vⁱ⁻¹ (the velocity extrapolated with the
     * last acceleration) once two steps are known */
    const int warm = d->warm_start;
    const double ex = (warm == 2 && be->steps > 0 && d->cg_fixed_iterations == 0) ? 1.0 : 0.0;
    const double *vp = be->v_prev;
    double *rhs = be->rhs, *vn = be->v_new;
    DEFO_PARALLEL_FOR_IF(n > DEFO_PARALLEL_MIN)
    for (defo_index i = 0; i < n; i++) {
        double g[3] = {gx, gy, gz};
        for (int k = 0; k < 3; k++) {
            size_t j = 3 * (size_t)i + (size_t)k;
            rhs[j] = mass[i] * v[j] + dt * (fe[j] + fx[j] + fp[j] + mass[i] * g[k]);
            vn[j] = con[i] == DEFO_CONSTRAINT_FIXED ? v[j]
                    : warm                          ? v[j] + ex * (v[j] - vp[j])
                                                    : 0.0;
        }
    }
    /* PCG with the preconditioner the linear solver keeps (refactored by
     * its lag policy: CHOLESKY, TWO_LEVEL and BLOCK_IC0 of an earlier
     * step's matrix precondition the current one while PCG converges about
     * as fast with it as when it was fresh; K' drifts only with the
     * rotations); be->x: TWO_LEVEL's aggregates */
    defo_linear_system sys;
    memset(&sys, 0, sizeof sys);
    sys.n = n;
    sys.matrix = defo_corotated_matrix(be->model);
    sys.constraint = con;
    sys.coords = be->x;
    defo_linear_stats res;
    st = defo_linear_solver_solve(be->solver, &sys, rhs, vn, 0, &res);
    s.cg_iterations = res.iterations;
    s.refactored = res.refactored;
    s.cg_residual = res.residual;
    s.cg_converged = res.converged;
    s.seconds_solve = now_seconds() - t2;
    if (stats) *stats = s;
    if (st < 0) return defo_error_prefix("backward_euler step");
    defo_status warn = st; /* fixed-count mode never warns */

    /* Commit only a finite state. */
    defo_index bad = -1;
    for (size_t j = 0; j < m; j++)
        if (!isfinite(vn[j]) || !isfinite(be->x[j] + dt * vn[j])) {
            bad = (defo_index)(j / 3);
            break;
        }
    if (bad >= 0)
        return defo_error(DEFO_ERR_NUMERICAL,
                          "backward_euler: step refused, node %ld would get a non-finite "
                          "velocity or position",
                          (long)bad);
    double *x = be->x;
    DEFO_PARALLEL_FOR_IF(m > DEFO_PARALLEL_MIN)
    for (size_t j = 0; j < m; j++) {
        x[j] += dt * vn[j];
        be->v_prev[j] = be->v[j];
        be->v[j] = vn[j];
    }
    be->time += dt;
    be->steps++;
    if (warn == DEFO_WARN_NOT_CONVERGED)
        return defo_error(DEFO_WARN_NOT_CONVERGED, "backward_euler: CG did not converge (%.3g)",
                          res.residual);
    return DEFO_OK;
}
