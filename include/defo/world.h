/*
 * defo/world.h — bodies, colliders and time stepping.
 *
 * A body is a tet4 mesh (copied) with its rest data, a material, the state
 * (positions x, velocities v, 3 per node), lumped masses and fixed nodes.  A
 * world holds bodies, borrowed colliders (defo/collision.h), gravity and the
 * integrator settings.  defo_world_step advances by one output frame with
 * ITF04 §9 Newmark substeps (explicit elasticity, implicit damping, rigid
 * collisions with normal-velocity constraints):
 *
 *   1  ṽ^{n+½} = vⁿ + Δt/2 · a(tⁿ, xⁿ, ṽ^{n+½})                  [CG]
 *   2  x̃^{n+1} = xⁿ + Δt ṽ^{n+½}
 *   3  collisions with x̃^{n+1} and vⁿ → x^{n+1}, ṽⁿ
 *   4  v^{n+1} = ṽⁿ + Δt/2 · (a(tⁿ, xⁿ, ṽⁿ) + a(t^{n+1}, x^{n+1}, v^{n+1}))  [CG]
 *
 * with a = M⁻¹(f_elastic(x) + f_damping(x, v)) + gravity.  Substeps are of
 * equal length, frame_dt / ceil(frame_dt / Δt_CFL), so frames land exactly
 * on the frame times; Δt_CFL = cfl · min_e h_e / c (defo_force_wave_time).
 *
 * Bodies are named by ids {index, generation}: a removed body's id stops
 * being valid (defo_body_is_valid) instead of aliasing a later body.
 */
#ifndef DEFO_WORLD_H
#define DEFO_WORLD_H

#include "defo/base.h"
#include "defo/material.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_collider defo_collider; /* defo/collision.h */
typedef struct defo_world defo_world;

typedef struct defo_body_id {
    int32_t index;
    uint32_t generation; /* 0 is never valid */
} defo_body_id;

typedef struct defo_world_def {
    double gravity[3]; /* [m/s²]; default (0, 0, −9.81) */
    /* Substep = cfl · min over elements of (smallest rest altitude / wave
     * speed sqrt((λ+2μ)/ρ)).  (0, 1]; default 0.5: the elastic forces are
     * explicit (ITF04 §9), so this is a stability bound. */
    double cfl;
    double max_dt;         /* upper bound on a substep [s], > 0; default 1/240 */
    int cg_max_iterations; /* implicit damping solves; default 200 */
    double cg_tolerance;   /* relative residual; default 1e-8 */
} defo_world_def;
DEFO_API defo_world_def defo_default_world_def(void);

DEFO_API defo_status defo_world_create(const defo_world_def *def, defo_world **out);
/* Frees bodies; colliders are borrowed and stay the caller's. */
DEFO_API void defo_world_destroy(defo_world *world);

typedef struct defo_body_def {
    const defo_mesh *mesh;      /* tet4, positively oriented; copied */
    defo_material_def material; /* default defo_default_material() */
    const char *name;           /* copied (truncated to 63 bytes); NULL: "body<k>" */
    double velocity[3];         /* initial velocity of every node [m/s]; default 0 */
} defo_body_def;
DEFO_API defo_body_def defo_default_body_def(void);

/* Validate and add a body at its rest positions. */
DEFO_API defo_status defo_world_add_body(defo_world *world, const defo_body_def *def,
                                         defo_body_id *out);
DEFO_API int defo_body_is_valid(const defo_world *world, defo_body_id id);
/* Replace the body's material (e.g. restore stiffness); the state is kept. */
DEFO_API defo_status defo_body_set_material(defo_world *world, defo_body_id id,
                                            const defo_material_def *material);
/* Fix (1) or free (0) a node: a fixed node keeps its position, velocity 0. */
DEFO_API defo_status defo_body_fix_node(defo_world *world, defo_body_id id, defo_index node,
                                        int fixed);

/* State access; NULL for an invalid id.  The arrays stay at the same address
 * for the body's lifetime and are updated by each step. */
DEFO_API defo_index defo_body_num_nodes(const defo_world *world, defo_body_id id);
/* External dead load [N] per node (3n, writable, zero initially): added to
 * gravity in every step until changed. */
DEFO_API double *defo_body_external_force(defo_world *world, defo_body_id id);
DEFO_API const defo_mesh *defo_body_mesh(const defo_world *world, defo_body_id id);
DEFO_API const double *defo_body_positions(const defo_world *world, defo_body_id id);
DEFO_API const double *defo_body_velocities(const defo_world *world, defo_body_id id);
/* Overwrite positions and/or velocities (3 per node; either may be NULL),
 * e.g. initial conditions.  Must be finite; fixed nodes get velocity 0. */
DEFO_API defo_status defo_body_set_state(defo_world *world, defo_body_id id, const double *x,
                                         const double *v);
DEFO_API const double *defo_body_masses(const defo_world *world, defo_body_id id);
DEFO_API const char *defo_body_name(const defo_world *world, defo_body_id id);

/* Energies [J] at the current state: kinetic ½ Σ m v², elastic Σ V_e ψ_e,
 * gravitational −Σ m g·x.  Any output may be NULL. */
DEFO_API defo_status defo_body_energy(defo_world *world, defo_body_id id, double *kinetic,
                                      double *elastic, double *gravitational);
/* Elements with det F ≤ 0 (σ3 ≤ 0) at the current positions. */
DEFO_API defo_status defo_body_count_inverted(defo_world *world, defo_body_id id,
                                              defo_index *count);

/* Borrowed: the collider must outlive the world (or be removed... colliders
 * are never removed; destroy the world first). */
DEFO_API defo_status defo_world_add_collider(defo_world *world, defo_collider *collider);

/* Per-frame statistics of the last defo_world_step (or substep). */
typedef struct defo_step_stats {
    int substeps;
    double dt;                /* substep length [s] */
    int cg_iterations;        /* total over substeps, bodies and both solves */
    int cg_max_iterations;    /* largest single solve */
    double cg_residual;       /* largest final relative residual */
    int cg_not_converged;     /* solves that hit the iteration limit */
    defo_index inverted;      /* inverted elements at the end, all bodies */
    defo_index inverted_peak; /* largest count seen after any substep */
    defo_index collisions;    /* colliding nodes in the last substep */
} defo_step_stats;

/* Advance by frame_dt > 0 in equal CFL-bounded substeps. */
DEFO_API defo_status defo_world_step(defo_world *world, double frame_dt);
/* One Newmark step of exactly dt (no CFL check: the caller's choice). */
DEFO_API defo_status defo_world_substep(defo_world *world, double dt);
/* The substep defo_world_step would use at most: min(max_dt, cfl · wave time). */
DEFO_API double defo_world_stable_dt(const defo_world *world);
DEFO_API double defo_world_time(const defo_world *world);
/* Set the simulated time [s] (finite), e.g. when restoring a checkpoint:
 * scripted collider motion is a function of it. */
DEFO_API defo_status defo_world_set_time(defo_world *world, double time);
DEFO_API void defo_world_stats(const defo_world *world, defo_step_stats *out);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_WORLD_H */
