/*
 * defo/world.h — one world: bodies, the integrators that step them,
 * colliders, the step order, statistics and checkpoints.
 *
 * A body is a tet4 or tet10 mesh (copied) with its rest data (element layer),
 * a material, a force model (invertible or corotated, defo/force_model.h),
 * the state (positions x, velocities v, 3 per node), lumped masses, dead
 * loads, prescribed node sets (held at rest or moved by a scripted rigid
 * motion: fixed sets, TSIF05 §11 bones, kinematic handles), and optionally
 * plasticity (defo/plasticity.h: MG04 §3, MTPS08 §5, ITF04 §6.3 and §7),
 * annealing (MTPS08 §5.3) and fracture (defo/fracture.h).  Each body is stepped by one of
 * the world's integrators (defo/integrator.h); bodies of one world may use
 * different integrators on one frame clock.
 *
 * defo_world_step(frame_dt): for every integrator, the frame is cut into its
 * equal steps; each step runs, in this order,
 *   1 topology changes (fracture: MMDJ01 §2.5 cracks; the integrator is told),
 *   2 plasticity (the return map of the body's plasticity model),
 *   3 the integrator's step (the ITF04 §9 collision response inside it for
 *     dynamic integrators; TSIF05 §10 penalty contact for the equilibrium
 *     solvers),
 * then the frame's statistics.  A frame depends only on the state at its
 * start (x, v, plastic strains, topology, integrator history), so a run
 * resumed from a checkpoint continues bit for bit.
 *
 * Bodies are named by ids {index, world, generation}: an id of a removed body
 * or of another world is caught (defo_body_is_valid) instead of aliasing.
 * The hybrid integrator (MMDJ01 §2.7) removes a body that breaks at an
 * impact and adds its pieces as new bodies ("<name>.<k>") during a step:
 * defo_world_num_bodies then counts the removed slots too — walk them with
 * defo_world_body and keep those defo_body_is_valid accepts.  Restoring a
 * checkpoint makes or drops pieces to match it.
 * Units: SI.
 */
#ifndef DEFO_WORLD_H
#define DEFO_WORLD_H

#include "defo/base.h"
#include "defo/comm.h"
#include "defo/force_model.h"
#include "defo/fracture.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/partition.h"
#include "defo/plasticity.h"
#include "defo/rigid.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_collider defo_collider; /* defo/collision.h */
typedef struct defo_world defo_world;

typedef struct defo_body_id {
    int32_t index;
    uint32_t world;      /* the world's serial number */
    uint32_t generation; /* 0 is never valid */
} defo_body_id;

typedef struct defo_world_def {
    double gravity[3]; /* [m/s²]; default (0, 0, −9.81) */
} defo_world_def;
DEFO_API defo_world_def defo_default_world_def(void);

DEFO_API defo_status defo_world_create(const defo_world_def *def, defo_world **out);
/* Frees bodies and integrators; colliders are borrowed and stay the caller's. */
DEFO_API void defo_world_destroy(defo_world *world);

/* An integrator for bodies to use; *index (may be NULL) names it in
 * defo_body_def.integrator.  Validated (defo_integrator_def_validate). */
DEFO_API defo_status defo_world_add_integrator(defo_world *world, const defo_integrator_def *def,
                                               int *index);
DEFO_API int defo_world_num_integrators(const defo_world *world);
DEFO_API const defo_integrator_def *defo_world_integrator(const defo_world *world, int index);

typedef struct defo_body_def {
    const defo_mesh *mesh;      /* tet4 or tet10, positively oriented; copied */
    defo_material_def material; /* default defo_default_material() */
    defo_force_model_def force; /* formulation and its options; default invertible */
    /* index from defo_world_add_integrator; −1 (default): the first one,
     * a default newmark one being added if the world has none */
    int integrator;
    const char *name;   /* copied (truncated to 63 bytes); NULL: "body<k>" */
    double velocity[3]; /* initial velocity of every node [m/s]; default 0 */
    /* initial spin ω about the centre of mass c: v += ω × (x − c) [rad/s] */
    double angular_velocity[3];
    /* plastic flow (defo/plasticity.h; NULL: elastic); copied */
    const defo_plasticity_def *plasticity;
    /* MG04 §4 brittle fracture (NULL: never breaks); copied */
    const defo_fracture_def *fracture;
    /* Contact with the world's other bodies (defo_world_set_contact): 1
     * (default) takes part, 0 passes through them (colliders still act). */
    int collide;
    /* Contact of the body with itself (a bar folding, flesh at a joint):
     * default 0.  Costs a search of its own surface every step (about as
     * much as contact with one more body of its size) and excludes what
     * touches at rest. */
    int self_contact;
    /* Coulomb coefficient against other bodies, >= 0 (a pair takes
     * √(μ₁μ₂)); default 0.5 */
    double friction;
    /* ITF04 §6.1 fibre directions, 3 per (element, stiffness point) in rest
     * space (defo/fibre.h builds them); copied and normalised.  Required
     * when the material has a fibre term; NULL: none. */
    const double *fibres;
} defo_body_def;
DEFO_API defo_body_def defo_default_body_def(void);

/* Validate and add a body at its rest positions. */
DEFO_API defo_status defo_world_add_body(defo_world *world, const defo_body_def *def,
                                         defo_body_id *out);
DEFO_API int defo_body_is_valid(const defo_world *world, defo_body_id id);
DEFO_API int defo_world_num_bodies(const defo_world *world);
/* The id of the i-th body (creation order); invalid id for a bad i. */
DEFO_API defo_body_id defo_world_body(const defo_world *world, int i);

/* Prescribe the nodes of region (selected on the rest positions) to follow
 * motion from their rest positions X: x(t) = R(t)(X − pivot) + pivot +
 * velocity·t (NULL: held at rest).  A node in several sets follows the last;
 * a node a crack copies follows its node's set (a cut point: its edge's,
 * when both ends follow the same one).  A region that
 * selects no node is DEFO_ERR_INVALID_ARGUMENT.  *set (may be NULL) gets the
 * set's index. */
DEFO_API defo_status defo_body_prescribe(defo_world *world, defo_body_id id,
                                         const defo_region *region, const defo_motion_def *motion,
                                         int *set);
/* Free the nodes of prescribed set `set` (those that follow it now: a node
 * of a later set keeps that one) from the next step on; the set stays, empty,
 * so other sets keep their indices. */
DEFO_API defo_status defo_body_release(defo_world *world, defo_body_id id, int set);
/* Drive prescribed set `set` by an explicit transform x = R X + T from now on
 * (R row-major rotation; a skeleton's animation), replacing its motion. */
DEFO_API defo_status defo_body_set_transform(defo_world *world, defo_body_id id, int set,
                                             const double R[9], const double T[3]);
/* Pause (paused = 1) or resume (0) a fracturing body's MG04 §4 splits from
 * the next step on, e.g. while a person reshapes it interactively; a
 * setting, not state: checkpoints do not hold it.  No effect on a body
 * without fracture. */
DEFO_API defo_status defo_body_pause_fracture(defo_world *world, defo_body_id id, int paused);
/* Activation of the fibre term's active curve (ITF04 §6.1 muscle, defo/
 * material.h) over time, per group of elements: keyframed levels in
 * [0, 1] (held before the first key and after the last; linear or smooth
 * between), or a constant level.  Each step uses the levels at its end
 * time, as the prescribed sets do.  An element in several groups follows
 * the last added; in none, 0. */
typedef struct defo_activation_def {
    /* the elements whose corner nodes the region all selects (TAG: the
     * elements with that tag); NULL: every element of the body */
    const defo_region *region;
    int num_keys;                     /* ≥ 0; 0: the constant level */
    const double *times;              /* num_keys increasing times [s] (copied) */
    const double *levels;             /* num_keys levels in [0, 1] (copied) */
    double level;                     /* num_keys 0: the level, in [0, 1]; default 0 */
    defo_interpolation interpolation; /* default LINEAR */
} defo_activation_def;
DEFO_API defo_activation_def defo_default_activation_def(void);
/* Add a group (validated: levels in [0, 1], times increasing and finite, a
 * region that selects at least one element).  *group (may be NULL) gets
 * its index. */
DEFO_API defo_status defo_body_add_activation(defo_world *world, defo_body_id id,
                                              const defo_activation_def *def, int *group);
/* A controller's level for group `group` from now on (its keys are
 * dropped): in [0, 1].  Like an explicit transform this is an input, not
 * state: a checkpoint keeps the scheduled levels (functions of time) but
 * not levels set here, which a controller sets again after restoring. */
DEFO_API defo_status defo_body_set_activation(defo_world *world, defo_body_id id, int group,
                                              double level);
/* The activation per element (num_elems values) the last step used (or
 * set since), NULL for a body without activation groups. */
DEFO_API const double *defo_body_activation(const defo_world *world, defo_body_id id);

/* Dead loads [N] per node (3n, writable, zero initially), added to gravity in
 * every step until changed.  A non-finite entry makes defo_world_step fail
 * (DEFO_ERR_INVALID_ARGUMENT naming the body and node) with the world
 * unchanged.  A crack's copy of a node shares its load in proportion to
 * their masses (the total is kept); a cut point gets none. */
DEFO_API double *defo_body_external_force(defo_world *world, defo_body_id id);
/* A dead traction t [Pa] on the boundary faces whose corner nodes the region
 * selects (rest positions), as the consistent load ∫ N_a t dA
 * (defo_element_face_load).  The faces are fixed now: after cracks the same
 * faces stay loaded (a bisected one on each part) and crack faces never are.  *area (may
 * be NULL) gets the loaded area [m²]; a region that selects no boundary face
 * is DEFO_ERR_INVALID_ARGUMENT. */
DEFO_API defo_status defo_body_add_traction(defo_world *world, defo_body_id id,
                                            const defo_region *region, const double t[3],
                                            double *area);
/* Replace the material (e.g. restore stiffness); the state is kept. */
DEFO_API defo_status defo_body_set_material(defo_world *world, defo_body_id id,
                                            const defo_material_def *material);
/* Material regions (MG04 Fig. 9: a heated region that yields first): the
 * elements of region (all four corners in it, or its tag) take material and
 * — when plasticity is not NULL — their own plasticity parameters (else the
 * body's); a later region takes over elements of an earlier one.  *index
 * (may be NULL) gets the region's index for the calls below.  A region
 * selecting no element, or a bad parameter, is DEFO_ERR_INVALID_ARGUMENT.
 * Masses, gravity, damping and stable times follow each element's
 * material. */
#define DEFO_MAX_MATERIAL_REGIONS 64
DEFO_API defo_status defo_body_add_material_region(defo_world *world, defo_body_id id,
                                                   const defo_region *region,
                                                   const defo_material_def *material,
                                                   const defo_plasticity_def *plasticity,
                                                   int *index);
DEFO_API int defo_body_num_material_regions(const defo_world *world, defo_body_id id);
/* The material of region `region` (−1: the body's own); NULL for a bad one. */
DEFO_API const defo_material_def *defo_body_region_material(const defo_world *world,
                                                            defo_body_id id, int region);
/* Replace region `region`'s material (−1: defo_body_set_material). */
DEFO_API defo_status defo_body_set_region_material(defo_world *world, defo_body_id id, int region,
                                                   const defo_material_def *material);
/* Replace (or give: a body without plasticity gets it, F_p = I) the
 * plasticity parameters of the body's own elements (region −1) or of
 * material region `region`; the plastic state is kept (defo_plasticity_
 * set_def).  A bad parameter is DEFO_ERR_INVALID_ARGUMENT naming it. */
DEFO_API defo_status defo_body_set_plasticity(defo_world *world, defo_body_id id, int region,
                                              const defo_plasticity_def *plasticity);
/* The body's plasticity (NULL without): parameters, per-point state. */
DEFO_API const defo_plasticity *defo_body_plasticity(const defo_world *world, defo_body_id id);
/* ITF04 §7 plasticity control toward the shape with positions goal_x (3 per
 * node, num_nodes values: the count must be the body's), used by its
 * multiplicative parameter sets; NULL removes the goal.  A body without
 * plasticity, a wrong count, a non-finite position or a goal that is flat
 * or inverted somewhere is DEFO_ERR_INVALID_ARGUMENT. */
DEFO_API defo_status defo_body_set_plastic_goal(defo_world *world, defo_body_id id,
                                                const double *goal_x, defo_index num_nodes);
/* Annealing (MTPS08 §5.3, MMDJ01 §2.4): the current shape becomes the rest
 * shape — new rest data at every quadrature point, the plastic state reset
 * (a goal carried to the new rest shape) — so the elastic forces vanish at
 * the committed state.  Each element keeps its mass (its density follows its
 * volume); prescribed motions keep their frame (they move the nodes they
 * moved before, from where they were).  A shape that is flat or inverted
 * somewhere cannot be a rest shape: DEFO_ERR_INVALID_ARGUMENT naming the
 * element, the body unchanged.  Checkpoints keep the rest shape. */
DEFO_API defo_status defo_body_anneal(defo_world *world, defo_body_id id);
/* Overwrite positions and/or velocities (3 per node; either may be NULL).
 * Must be finite. */
DEFO_API defo_status defo_body_set_state(defo_world *world, defo_body_id id, const double *x,
                                         const double *v);

/* State access; NULL for an invalid id.  Valid until the next step (a
 * fracturing body's arrays grow). */
DEFO_API defo_index defo_body_num_nodes(const defo_world *world, defo_body_id id);
DEFO_API const defo_mesh *defo_body_mesh(const defo_world *world, defo_body_id id);
DEFO_API const double *defo_body_positions(const defo_world *world, defo_body_id id);
DEFO_API const double *defo_body_velocities(const defo_world *world, defo_body_id id);
DEFO_API const double *defo_body_masses(const defo_world *world, defo_body_id id);
/* The loads the steppers saw in the last frame (3n [N]: dead loads,
 * tractions, gravity), or at creation before the first frame. */
DEFO_API const double *defo_body_loads(const defo_world *world, defo_body_id id);
DEFO_API const char *defo_body_name(const defo_world *world, defo_body_id id);
DEFO_API const defo_material_def *defo_body_material(const defo_world *world, defo_body_id id);
DEFO_API int defo_body_integrator(const defo_world *world, defo_body_id id);
/* Parent of each node (itself for original nodes; for nodes added by
 * fracture the node a copy was made of, or a cut point's first edge end:
 * defo_fracture_node_origin has both ends), num_nodes entries. */
DEFO_API const defo_index *defo_body_parents(const defo_world *world, defo_body_id id);
/* 1 per node held by a prescribed set (fixed, moved or following a bone),
 * num_nodes flags; NULL for an invalid id. */
DEFO_API const unsigned char *defo_body_prescribed(const defo_world *world, defo_body_id id);

/* Energies [J] at the current state: kinetic ½ Σ m v², elastic (the force
 * model's), gravitational −Σ m g·x.  Any output may be NULL. */
DEFO_API defo_status defo_body_energy(defo_world *world, defo_body_id id, double *kinetic,
                                      double *elastic, double *gravitational);
/* Derived fields (J, von Mises, principal stress; defo/force_model.h) at
 * the current state. */
DEFO_API defo_status defo_body_fields(defo_world *world, defo_body_id id, defo_force_fields *out);
/* Elements with det F ≤ 0 at some quadrature point, at the current state. */
DEFO_API defo_status defo_body_count_inverted(const defo_world *world, defo_body_id id,
                                              defo_index *count);
/* Curved (tet10) elements folded between their quadrature points at the
 * current state: det J > 0 at every quadrature point but ≤ 0 at a corner,
 * an edge midpoint or the centroid (defo_element_fold_state) — a fold no
 * force sees; not counted by defo_body_count_inverted. */
DEFO_API defo_status defo_body_count_folded(const defo_world *world, defo_body_id id,
                                            defo_index *count);
/* Connected components of the body's elements (1 until it breaks apart). */
DEFO_API defo_status defo_body_components(const defo_world *world, defo_body_id id,
                                          defo_index *count);
/* The rigid state of a body stepped by the rigid or hybrid integrator
 * (defo/rigid.h: mass, principal moments, centre, orientation, velocity,
 * angular momentum); DEFO_ERR_INVALID_ARGUMENT for another body. */
DEFO_API defo_status defo_body_rigid(const defo_world *world, defo_body_id id,
                                     defo_rigid_body *out);
/* The body's cracks so far (MMDJ01 §2.5, defo/fracture.h), oldest first;
 * *count gets their number (0, and NULL returned, without fracture). */
DEFO_API const defo_crack *defo_body_cracks(const defo_world *world, defo_body_id id, int *count);
/* ‖log F_p‖ per element (the plastic Hencky strain, the largest over its
 * points; 0 without plasticity), num_elems values. */
DEFO_API defo_status defo_body_plastic_strain(const defo_world *world, defo_body_id id,
                                              double *out);
/* Shells: the plastic bending strain |ε_b,p| per triangle, the largest over
 * the hinges it shares (ITF04 §8 plastic bending, defo/plasticity.h); 0 for
 * tets, for shells without plastic bending and for triangles without
 * hinges.  num_elems values. */
DEFO_API defo_status defo_body_plastic_bending(const defo_world *world, defo_body_id id,
                                               double *out);

/* Contact between bodies (ITF04 §9–10, TSIF05 §10, MMDJ01 §2.8; the layer
 * is defo/contact.h): every colliding body's boundary against every other's
 * and, with self_contact, its own — the Newton solves (backward Euler and
 * BDF2 of invertible bodies, quasistatic, static) minimise its penalty
 * ½ k (δ − φ)² together with the bodies' energies, the explicit steppers
 * (newmark; corotated bodies under backward Euler and BDF2) take equal and
 * opposite impulses (inelastic, Coulomb friction), the rigid and hybrid
 * steppers one sequential-impulse solve of all their bodies' contacts
 * (src/integrator/rigid.c).  Bodies of different integrators meet too: each
 * sees the other held where it is during its own step — except that a
 * deformable body's step leaves rigid bodies out: they meet in the rigid
 * stepper's solve, both ways. */
typedef struct defo_contact_def {
    int enabled; /* 1 (default): bodies collide with each other */
    /* The skin δ around every surface, relative to the body's mean surface
     * edge (bodies at rest sit about δ apart); (0, 1], default 0.1 */
    double thickness;
    /* Penalty per node [N/m]; 0 (default): 10 (2μ+λ) h of each body (h its
     * mean rest edge; a pair takes the softer) */
    double stiffness;
    /* A pair that starts interpenetrating comes apart no faster than this
     * [m/s] in the dynamic steppers (never a launch); > 0, default 0.5 */
    double separation_speed;
    /* Jacobi sweeps of the explicit response per step with friction (as
     * many again on the normals only if those did not settle), >= 1;
     * default 64 (a settled response stops early) */
    int sweeps;
} defo_contact_def;
DEFO_API defo_contact_def defo_default_contact_def(void);
/* Validated (DEFO_ERR_INVALID_ARGUMENT naming the field, e.g.
 * "contact.thickness: 2 is not in (0, 1]"). */
DEFO_API defo_status defo_world_set_contact(defo_world *world, const defo_contact_def *def);
DEFO_API const defo_contact_def *defo_world_contact(const defo_world *world);
/* The body's nodes that touch another body, or the body itself with
 * self_contact, at the world's last body–body contact detection (the last
 * step's): 1.0 for each node of a pair closer than the contact thickness,
 * 0.0 elsewhere; num_nodes values into out.  A body that does not collide,
 * or a world without contact, gives zeros. */
DEFO_API defo_status defo_body_contact_nodes(const defo_world *world, defo_body_id id, double *out);

/* Two bodies whose surfaces interpenetrate (defo_world_overlaps). */
typedef struct defo_body_overlap {
    int body, other;  /* body indices (defo_world_body) */
    defo_index nodes; /* surface nodes of `body` inside `other` */
    defo_index deepest_node;
    double depth; /* how far that node is inside [m] */
} defo_body_overlap;
/* The pairs of colliding bodies that interpenetrate now (a surface node of
 * one inside the other's closed surface, by more than 1e-9 of its size), up
 * to max of them into out; *count gets how many there are.  What a scene
 * reports at its start. */
DEFO_API defo_status defo_world_overlaps(defo_world *world, defo_body_overlap *out, int max,
                                         int *count);

/* Borrowed: the collider must outlive the world. */
DEFO_API defo_status defo_world_add_collider(defo_world *world, defo_collider *collider);

/* Statistics of the last defo_world_step, over its bodies and steps. */
typedef struct defo_step_stats {
    int steps;                      /* integrator steps, all integrators */
    double dt;                      /* the smallest step length [s] */
    int newton_iterations;          /* total */
    int cg_iterations;              /* total */
    int cg_max_iterations;          /* largest single linear solve */
    double residual;                /* largest final relative residual */
    int not_converged;              /* solves that stopped short of their tolerance */
    defo_convergence_reason reason; /* the worst */
    int negative_curvature, backtracks, precond_setups;
    /* Newton iterations with the exact tangent near a solution (the
     * projected one converging slowly there; defo_newton_problem) */
    int exact_iterations;
    /* linear solves that recovered from a failed preconditioner (its
     * factorisation failed, or it broke down in CG: made again, or
     * Jacobi instead; defo_linear_stats.recovered) */
    int solver_recoveries;
    defo_index inverted;      /* inverted elements at the end, all bodies */
    defo_index inverted_peak; /* the largest count after any step */
    defo_index collisions;    /* nodes in contact at the end */
    defo_index contacts;      /* pairs in contact between bodies at the end */
    double contact_depth;     /* deepest penetration between bodies over the frame [m] */
    double contact_seconds;   /* wall time of body-body contact (search and response) */
    defo_index splits;        /* fracture: nodes added (cut points and crack copies) */
    int yielding;             /* plastic points that flowed, summed over the frame's steps */
    /* flowed tet4 elements that kept their own volume because the patch
     * volume exchange had no memory (defo_plasticity_stats.unpatched) */
    int unpatched;
    double seconds; /* wall time */
    int cracks;     /* MMDJ01 §2.5 cracks started */
    int held;       /* pieces broken off under static/quasistatic, held in place */
    int impacts;    /* hybrid: impacts analysed */
    int fragments;  /* hybrid: bodies made by breaking (the broken ones removed) */
    /* loaded equilibrium solves that stalled or met their target only at the
     * round-off floor, short of the loads (defo_step_body_stats) */
    int unresolved;
    /* rigid, hybrid: Gauss–Seidel sweeps of the contact solves (a solve
     * that ran out of them counts in not_converged) */
    int contact_sweeps;
    /* rigid, hybrid: contacts that carried an impulse a step before, and
     * how many of them the next step's solve found again (warm starts;
     * resting contact keeps them all) */
    int contacts_loaded, contacts_refound;
} defo_step_stats;

/* Advance every body by frame_dt > 0 (above).  On error the world is left
 * at the frame's start. */
DEFO_API defo_status defo_world_step(defo_world *world, double frame_dt);
/* Steps a frame of frame_dt would take with the integrator (≥ 1). */
DEFO_API int defo_world_steps_per_frame(const defo_world *world, int integrator, double frame_dt);
DEFO_API double defo_world_time(const defo_world *world);
DEFO_API int defo_world_frame(const defo_world *world);
/* Set the simulated time (finite) and frame count, e.g. when restoring. */
DEFO_API defo_status defo_world_set_time(defo_world *world, double time, int frame);
DEFO_API void defo_world_stats(const defo_world *world, defo_step_stats *out);

/* To stop a step in progress call defo_interrupt() (defo/base.h; one flag
 * per process, async-signal-safe): at the next safe point (between steps,
 * Newton, line-search and CG iterations) defo_world_step returns
 * DEFO_ERR_INTERRUPTED with the world at the frame's start, and every step
 * does until defo_interrupt_clear(). */

/* Checkpoints: the whole state after the current frame — time, frame, per
 * body x, v, topology (fracture), rest shape (annealing), plastic state,
 * material and plasticity parameters, fracture state and the
 * integrators' history — in a versioned binary with a checksum.  tag (e.g.
 * a scene's physics hash) is stored and must match on restore.  Written
 * atomically (temporary file, then rename).  Restore checks everything
 * before it changes anything: DEFO_ERR_PARSE for a damaged file or another
 * version, DEFO_ERR_INVALID_ARGUMENT for another world (tag, body count or
 * sizes). */
DEFO_API defo_status defo_world_save(const defo_world *world, uint64_t tag, const char *path);
DEFO_API defo_status defo_world_load(defo_world *world, uint64_t tag, const char *path);
/* The same in memory (buffer owned by the caller, defo_free it). */
DEFO_API defo_status defo_world_serialize(const defo_world *world, uint64_t tag, void **data,
                                          size_t *size);
DEFO_API defo_status defo_world_deserialize(defo_world *world, uint64_t tag, const void *data,
                                            size_t size);

/* ------------------------------------------------------ distributed runs
 * One world on several processes (docs/distributed.md): every process
 * builds the same world, then defo_world_distribute splits each body's
 * elements among them (defo/partition.h).  Each process keeps every node's
 * state whole (positions, velocities, loads; what outputs and checkpoints
 * read, bit for bit the same on every process) and computes the forces,
 * rotations and tangents of its own elements only (with the ghost elements
 * that complete its nodes' rows); the linear systems of the implicit and
 * equilibrium integrators are solved by the distributed PETSc backend
 * (defo/petsc.h).  Every call that steps or changes the world is then
 * collective: all processes make it in the same order.  Not distributed
 * yet, refused with the feature's name: fracture (topology changes),
 * plasticity, contact between bodies, lazily kept corotated rotations. */
typedef struct defo_distribute_def {
    defo_partition_method method; /* default AUTO (METIS when built in) */
    /* elements split by hand (tests): the part of element e of body b
     * (world body index), or NULL (default) for the method above */
    int (*part_of)(void *ctx, int body, defo_index elem);
    void *ctx;
} defo_distribute_def;
DEFO_API defo_distribute_def defo_default_distribute_def(void);
/* Spread the world over comm's processes (collective; comm borrowed: it
 * must outlive the world).  Refusals (DEFO_ERR_UNSUPPORTED) name the body
 * and the feature; worlds that differ between the processes (another scene
 * file on one of them) are DEFO_ERR_INVALID_ARGUMENT.  A comm of one process
 * changes nothing. */
DEFO_API defo_status defo_world_distribute(defo_world *world, const defo_comm *comm,
                                           const defo_distribute_def *def);
/* The world's comm, or NULL when it runs on one process. */
DEFO_API const defo_comm *defo_world_comm(const defo_world *world);
/* Body id's partition (NULL on one process). */
DEFO_API const defo_partition *defo_body_partition(const defo_world *world, defo_body_id id);
/* v (width values per node, 3 or 9) made whole: every node's value becomes
 * the one its owner holds (collective; the exchange the force model's
 * outputs go through). */
DEFO_API defo_status defo_body_complete(defo_world *world, defo_body_id id, double *v, int width);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_WORLD_H */
