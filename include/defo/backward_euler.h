/*
 * defo/backward_euler.h — implicit Euler for one corotated body (MG04 §6).
 *
 * Each step, with the rotations Re of xⁱ (defo/corotated.h), lumped masses M,
 * Rayleigh damping C = αM + βK':
 *   (M + ΔtC + Δt²K') vⁱ⁺¹ = M vⁱ − Δt (K'xⁱ + f'0 − f_ext),
 *   xⁱ⁺¹ = xⁱ + Δt vⁱ⁺¹,
 * f_ext = M g + the user's external force.  The linear system is solved by
 * PCG on the assembled 3×3-block matrix, warm-started from vⁱ, either to a
 * relative tolerance or for a fixed number of iterations (MG04's interactive
 * mode: 20), by the body's defo_linear_solver (defo/solver.h).  Fixed nodes are CG projections: their velocity is whatever the
 * caller put in the velocity array (0 = clamped; non-zero = a kinematic
 * handle).  f_plastic (MG04 §3) is a per-node array the plasticity module
 * (defo/plasticity.h) fills before each step; it enters like f_ext.
 * Fracture (defo/fracture.h) appends nodes and renumbers elements of the
 * mesh, then calls defo_backward_euler_topology_changed.
 *
 * Failure: a step that would produce a non-finite value is refused with
 * DEFO_ERR_NUMERICAL and leaves x and v untouched.
 */
#ifndef DEFO_BACKWARD_EULER_H
#define DEFO_BACKWARD_EULER_H

#include "defo/base.h"
#include "defo/corotated.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/solver.h"
#include "defo/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_backward_euler_def {
    double time_step;          /* Δt [s] > 0; default 0.01 */
    double gravity[3];         /* [m/s²]; default (0, 0, −9.81) */
    double rayleigh_mass;      /* α [1/s] ≥ 0; default 0 */
    double rayleigh_stiffness; /* β [s] ≥ 0; default 0 */
    /* > 0: interactive mode, exactly this many CG iterations per step
     * (MG04 §6 uses 20); 0 (default): iterate to cg_tolerance. */
    int cg_fixed_iterations;
    double cg_tolerance;              /* relative residual in (0, 1); default 1e-6 */
    int cg_max_iterations;            /* > 0; default 5000 */
    defo_precond_kind preconditioner; /* default DEFO_PRECOND_TWO_LEVEL */
    /* Lagged preconditioners (DEFO_PRECOND_CHOLESKY, DEFO_PRECOND_TWO_LEVEL,
     * DEFO_PRECOND_BLOCK_IC0): the preconditioner of an earlier step's
     * matrix preconditions the current one until the lag policy of
     * defo_linear_solver_def (defo/solver.h) says refactor: after
     * precond_max_age solves (0 = no limit; default 0), or when a step
     * needed more than precond_rate_growth × the CG iterations per decade of
     * residual reduction of the first step after the refactorisation
     * (default 2, > 0), or when the constraints or topology changed.  With
     * these kinds cg_fixed_iterations stops early at cg_tolerance.  Without
     * CHOLMOD, CHOLESKY falls back to BLOCK_IC0.  (Replaces the former
     * refactor_iterations rule; measured on bench_corotated: the n = 8 and
     * 13 cantilevers still factor once in 20 steps with two-level and
     * IC(0), twice instead of 3 times with Cholesky.) */
    int precond_max_age;
    double precond_rate_growth;
    /* CG initial guess: 0 = zero, 1 (default) = vⁱ (MG04), 2 = 2vⁱ − vⁱ⁻¹
     * (extrapolated with the last acceleration; tolerance mode only: with a
     * fixed iteration count the extrapolation feeds truncation errors back
     * and was measured to blow up).  Measured on the n = 8 cantilever: 62
     * instead of 67 iterations per step. */
    int warm_start;
    defo_corotated_def corotated; /* rotations: linear / lazy options */
} defo_backward_euler_def;
DEFO_API defo_backward_euler_def defo_default_backward_euler_def(void);

typedef struct defo_backward_euler_stats {
    int cg_iterations;
    double cg_residual;           /* final relative residual */
    int cg_converged;             /* 1 when the tolerance was met (always 0/1 in fixed mode) */
    defo_index rotations_updated; /* elements whose Re was recomputed */
    int reassembled;              /* 1 when the matrix was rebuilt */
    int refactored;               /* 1 when the preconditioner was recomputed */
    double seconds_rotations;     /* wall time: rotations + forces */
    double seconds_assembly;      /* matrix */
    double seconds_solve;         /* PCG, preconditioner setup included */
} defo_backward_euler_stats;

typedef struct defo_backward_euler defo_backward_euler;

/* A body at rest at the mesh's rest positions, with v = 0, no fixed nodes,
 * lumped masses from material->density.  The mesh is borrowed (it must
 * outlive the stepper). */
DEFO_API defo_status defo_backward_euler_create(const defo_mesh *mesh,
                                                const defo_material_def *material,
                                                const defo_backward_euler_def *def,
                                                defo_backward_euler **out);
DEFO_API void defo_backward_euler_destroy(defo_backward_euler *be);

/* State arrays (3 per node) owned by the stepper, writable between steps. */
DEFO_API double *defo_backward_euler_positions(defo_backward_euler *be);
DEFO_API double *defo_backward_euler_velocities(defo_backward_euler *be);
/* Extra external force [N] per node (3 per node), 0 initially. */
DEFO_API double *defo_backward_euler_external_force(defo_backward_euler *be);
/* MG04 §3 plastic force [N] per node (3 per node), 0 initially; the right-hand
 * side uses it like the external force: K'x + f'0 − f_plastic − f_ext. */
DEFO_API double *defo_backward_euler_plastic_force(defo_backward_euler *be);
/* Bring the rotations Re (and the elastic force) up to date with the current
 * positions now, for work that needs this step's Re before the solve
 * (plasticity, fracture: MG04 Fig. 6).  The next step reuses them instead of
 * recomputing: do not change the positions in between. */
DEFO_API defo_status defo_backward_euler_update_rotations(defo_backward_euler *be);
/* Forget what the stepper carries over between steps besides x and v: the
 * next step recomputes every rotation (lazy updates start afresh) and
 * rebuilds the preconditioner, exactly as a stepper just created from the
 * same x and v would.  defo run calls it at every frame start, so a run
 * resumed from a frame's checkpoint takes bit-identical steps. */
DEFO_API void defo_backward_euler_refresh(defo_backward_euler *be);
/* The (borrowed) mesh changed topology: nodes were appended (mesh->num_nodes
 * grew; mesh->x holds their rest positions) and element connectivity changed.
 * State arrays grow (old nodes keep their values; new nodes get x = rest
 * position, v = 0, no force, no constraint — the caller copies what they
 * should inherit), lumped masses are recomputed from the new connectivity,
 * the force model and its matrix pattern are rebuilt.  Array pointers
 * returned earlier are invalid afterwards. */
DEFO_API defo_status defo_backward_euler_topology_changed(defo_backward_euler *be);
/* Per-node constraint kinds (DEFO_CONSTRAINT_NONE or DEFO_CONSTRAINT_FIXED),
 * writable; NONE initially. */
DEFO_API unsigned char *defo_backward_euler_constraints(defo_backward_euler *be);
/* Lumped masses [kg], one per node. */
DEFO_API const double *defo_backward_euler_mass(const defo_backward_euler *be);
DEFO_API defo_corotated *defo_backward_euler_force_model(defo_backward_euler *be);
DEFO_API double defo_backward_euler_time(const defo_backward_euler *be);
/* Bytes held by the stepper, its force model and matrix. */
DEFO_API size_t defo_backward_euler_bytes(const defo_backward_euler *be);

/* Advance one step of def.time_step.  stats may be NULL.  DEFO_OK also in
 * fixed-iteration mode; DEFO_WARN_NOT_CONVERGED when the tolerance was not
 * met within cg_max_iterations (the step is taken with the last iterate). */
DEFO_API defo_status defo_backward_euler_step(defo_backward_euler *be,
                                              defo_backward_euler_stats *stats);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_BACKWARD_EULER_H */
