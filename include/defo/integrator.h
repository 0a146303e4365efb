/*
 * defo/integrator.h — integrators as interchangeable steppers behind one ops
 * table (docs/architecture.md "Adding an integrator").
 *
 * A stepper advances a set of bodies over one step of length dt.  It sees a
 * body only through defo_step_body — its state arrays, lumped masses, dead
 * loads (gravity included), prescribed nodes with their positions at the end
 * of the step, and its force model (defo/force_model.h) — and contact only
 * through the callbacks of defo_step_context: the ITF04 §9 response of
 * dynamic steppers (projection, normal velocity, friction) and the TSIF05
 * §10 penalty term of the equilibrium solvers.  It never sees the world,
 * the colliders or the scene.
 *
 * Integrators (one file each in src/integrator/):
 *   newmark         ITF04 §9: explicit elasticity, implicit damping, the
 *                   response between its two half steps; CFL-bounded steps.
 *   backward_euler  implicit Euler in velocity form: M(v⁺ − v) = Δt (f(x⁺) +
 *                   f_ext − C v⁺), x⁺ = x + Δt v⁺.  Corotated bodies: MG04 §6's
 *                   linearisation (rotations of xⁿ, one linear solve);
 *                   invertible bodies: Newton on the incremental potential
 *                   with the definiteness fix and the shared line search
 *                   (TSIF05 §8, MMDJ01 §2.6).
 *   bdf2            MTPS08 §5.2 second-order backward differences, the same
 *                   solve with x̂ = (4xⁿ − xⁿ⁻¹)/3, v̂ = (4vⁿ − vⁿ⁻¹)/3 and
 *                   2Δt/3; its first step is backward Euler; the previous
 *                   state is history (checkpointed).
 *   quasistatic     TSIF05: each frame the equilibrium at the frame's time,
 *                   started from the last equilibria (predictor, history).
 *   static          MMDJ01 §2.3: one equilibrium solve of the current loads;
 *                   quasistatic without time (velocities are zero).
 *
 * Units: SI.  Determinism: every stepper is bitwise identical for any thread
 * count and a step depends only on (x, v, history) and the loads.
 */
#ifndef DEFO_INTEGRATOR_H
#define DEFO_INTEGRATOR_H

#include "defo/base.h"
#include "defo/force_model.h"
#include "defo/mesh.h"
#include "defo/solver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum defo_integrator_kind {
    DEFO_INTEGRATOR_NEWMARK = 0,
    DEFO_INTEGRATOR_BACKWARD_EULER = 1,
    DEFO_INTEGRATOR_BDF2 = 2,
    DEFO_INTEGRATOR_QUASISTATIC = 3,
    DEFO_INTEGRATOR_STATIC = 4,
    DEFO_INTEGRATOR_COUNT = 5
} defo_integrator_kind;

/* "newmark", "backward_euler", "bdf2", "quasistatic", "static". */
DEFO_API const char *defo_integrator_name(defo_integrator_kind kind);
DEFO_API defo_status defo_integrator_from_name(const char *name, defo_integrator_kind *out);

/* Starting point of an equilibrium solve (quasistatic). */
typedef enum defo_predictor {
    DEFO_PREDICTOR_NONE = 0, /* the previous equilibrium */
    /* the last 2 / 3 / 4 equilibria extrapolated to the new time (Lagrange
     * in t), kept only when it lowers the energy */
    DEFO_PREDICTOR_LINEAR = 1,
    DEFO_PREDICTOR_QUADRATIC = 2,
    DEFO_PREDICTOR_CUBIC = 3
} defo_predictor;

/* One definition for every integrator: each reads the fields that apply to
 * it (listed per field); the others are ignored. */
typedef struct defo_integrator_def {
    defo_integrator_kind kind; /* default NEWMARK */
    /* Upper bound on a step [s], > 0.  newmark: default 1/240 (and the CFL
     * bound); backward_euler, bdf2: default 0.01.  Frames are cut into equal
     * steps.  quasistatic, static: one solve per frame (ignored). */
    double time_step;
    double cfl; /* newmark: step ≤ cfl · the stable time (defo_force_model_wave_time, then
                 * defo_force_model_stable_time as elements stiffen); ½ is the
                 * element eigenvalue bound of the stability limit; (0, 1], 0.5 */
    /* Rayleigh damping C = αM + βK added to the material's (α [1/s], β [s],
     * ≥ 0; default 0): α for newmark, backward_euler and bdf2, β for
     * backward_euler and bdf2 (newmark's stiffness-proportional damping is
     * the material's damping_time) */
    double rayleigh_mass, rayleigh_stiffness;
    /* implicit and equilibrium solves: residual target relative to the
     * reference force (defo/force_model.h bodies: max |f_ext| + (2μ+λ)h²,
     * h the mean rest edge); default 1e-6, in (0, 1) */
    double tolerance;
    /* The Newton solves (backward_euler and bdf2 of invertible bodies,
     * quasistatic, static); its `linear` member is ignored: see linear. */
    defo_newton_def newton;
    /* The linear solver of every integrator: newmark's damping solves
     * (matrix-free: Jacobi), the implicit steps (default two_level lagged),
     * the Newton steps.  defo_default_integrator_def fills it per kind. */
    defo_linear_solver_def linear;
    defo_predictor predictor; /* quasistatic; default NONE */
    /* quasistatic, static: penalty stiffness of contact with colliders per
     * node [N/m]; 0 (default): 10 (2μ+λ) h of each body */
    double contact_stiffness;
} defo_integrator_def;

/* The defaults of an integrator kind. */
DEFO_API defo_integrator_def defo_default_integrator_def(defo_integrator_kind kind);
/* DEFO_ERR_INVALID_ARGUMENT naming the first bad field, e.g.
 * "integrator.time_step: -1 is not > 0". */
DEFO_API defo_status defo_integrator_def_validate(const defo_integrator_def *def);

/* ----------------------------------------------------------- the stepper */
/* Per-body results of a step, accumulated by the stepper. */
typedef struct defo_step_body_stats {
    int newton_iterations;
    int cg_iterations;
    int cg_max_iterations;          /* largest single linear solve */
    int not_converged;              /* solves that stopped short of their tolerance */
    defo_convergence_reason reason; /* the worst of the step (converged when none) */
    double residual;                /* largest final relative residual (linear or Newton) */
    int negative_curvature;
    int backtracks;
    int precond_setups;
    defo_index collisions; /* nodes in contact at the end (response or penalty) */
    int extra_steps;       /* sub-steps beyond one a stepper took inside a step */
} defo_step_body_stats;

/* One body as a stepper sees it.  The world fills it; the stepper advances
 * x and v in place and may keep its own per-body state in `data`. */
typedef struct defo_step_body {
    int index;             /* the body's index in the world (for messages) */
    const char *name;      /* for messages */
    const defo_mesh *mesh; /* connectivity and rest positions */
    defo_index n;          /* nodes */
    double *x, *v;         /* 3n each: state, advanced in place */
    const double *mass;    /* n lumped masses [kg] */
    const double *load;    /* 3n dead loads [N], gravity included */
    /* n flags: 1 = prescribed node (fixed or moved by a script); its
     * position at the end of the step is target[3i..3i+2] */
    const unsigned char *prescribed;
    const double *target;
    defo_force_model *force;
    double reference_force; /* [N]: max |load_i| + (2μ+λ) h² (tolerances) */
    void *data;             /* the stepper's */
    defo_step_body_stats stats;
    /* What changed since the last frame_start besides the steps (DEFO_CHANGED_*
     * bits, set by the world, read by frame_start, then cleared). */
    unsigned changed;
    /* A distributed run (docs/distributed.md; NULL on one process): the
     * nodes' owners.  Every array above is whole on every process and the
     * force model is this process's part (defo_force_model_set_share), so a
     * stepper runs the same on each; its linear systems carry the layout to
     * the distributed solver backend. */
    const defo_layout *layout;
} defo_step_body;

/* defo_step_body.changed */
enum {
    /* x or v were overwritten (defo_body_set_state, a restored checkpoint):
     * values a stepper kept of the last state (forces) are stale */
    DEFO_CHANGED_STATE = 1u << 0,
    /* the forces are another function of x than at the last frame (material,
     * plastic strains, lazily kept rotations, prescribed sets): matrices and
     * factorisations made from them are stale */
    DEFO_CHANGED_MODEL = 1u << 1
};

/* A term of body–body contact in a Newton solve (TSIF05 §10 penalty and
 * lagged Coulomb friction between two bodies' surfaces): its Hessian has
 * the blocks
 *     H_ab = wₐ w_b S   (3×3, between node a and node b),
 * S symmetric positive semidefinite (TSIF05 §8): the normal part ψ'' n nᵀ,
 * the tangential part of friction — so the blocks couple the nodes of the
 * two bodies.  body[a] < 0: a node of a body outside the call (held where
 * it is), which takes no part in the solve. */
typedef struct defo_contact_term {
    int body[4];        /* index into the bodies of the call, or −1 */
    defo_index node[4]; /* node within that body */
    double w[4];
    double S[9]; /* row-major */
} defo_contact_term;

/* What a stepper may call back into. */
typedef struct defo_step_context {
    double t;  /* start of the step [s] */
    double dt; /* its length [s] */
    /* ITF04 §9 response of body b at the end of a position update over dt
     * (time t_end): colliding nodes of x are projected to the surfaces, their
     * normal velocity set to the collider's and Coulomb friction applied to
     * v over the friction time τ (defo_collision_respond); a node that
     * friction brought to rest gets the tangential part of its displacement
     * since x_prev undone (static friction).  constraint
     * (n): DEFO_CONSTRAINT_NONE, NORMAL (sliding, normal[3i..] its surface
     * normal) or FIXED (sticking); friction (n): the μ of the surface it
     * touches.  Prescribed nodes are left alone.  NULL when the world has no
     * colliders. */
    defo_status (*respond)(void *ctx, const defo_step_body *b, double t_end, double dt, double tau,
                           const double *x_prev, double *x, double *v, unsigned char *constraint,
                           double *normal, double *friction, defo_index *hits);
    /* TSIF05 §10 penalty contact of body b at positions x and time t:
     * energy added to *energy, forces added to force (3n), the node-diagonal
     * stiffness blocks into blocks (9n, overwritten), *count contacts,
     * *capped pairs held back by separation_speed.  x_start (may be NULL):
     * the positions at the start of a step of dt ending at t, for a body
     * that starts inside a collider (defo_penalty_eval).  Any output may be
     * NULL.  NULL when the world has no colliders. */
    defo_status (*penalty)(void *ctx, const defo_step_body *b, double t, const double *x,
                           const double *x_start, double dt, double *energy, double *force,
                           double *blocks, defo_index *count, defo_index *capped);
    /* The start of a Newton solve of the bodies over a step of length dt (0:
     * an equilibrium, no separation speed) from positions x_start[i]: what
     * lies inside another body there (pushed apart by signed pairs), and
     * the Coulomb friction of the step, lagged from there (normal forces and
     * tangent planes).  NULL when no two bodies can touch. */
    defo_status (*contact_begin)(void *ctx, defo_step_body *const *bodies, int count,
                                 const double *const *x_start, double dt);
    /* Body–body contact of the Newton solves at positions x[i] (3n each),
     * among the bodies of the call and between them and the world's other
     * colliding bodies where those are: the energy of every pair and of the
     * step's friction added to *energy, forces added to force[i] (NULL
     * entries skipped), the Hessian terms in *terms (owned by the world,
     * valid until the next call), *held pairs held back by a separation
     * speed, *lagged whether friction terms are among them.  Any output may
     * be NULL.  NULL when no two bodies can touch. */
    defo_status (*contact)(void *ctx, defo_step_body *const *bodies, int count,
                           const double *const *x, double *energy, double *const *force,
                           const defo_contact_term **terms, size_t *num_terms, defo_index *held,
                           int *lagged);
    /* The largest α in (0, 1] such that moving the bodies from x[i] by
     * α·dx[i] cannot carry a surface through another (the line search's
     * guard; defo_contact_step_bound).  NULL with contact. */
    double (*contact_bound)(void *ctx, defo_step_body *const *bodies, int count,
                            const double *const *x, const double *const *dx);
    /* The explicit response between bodies (ITF04 §9 generalised: inelastic,
     * Coulomb friction over τ, momentum kept): positions x[i] (pushed apart
     * when positions is 1; x_prev[i] the step's start, for the separation
     * speed over dt) and velocities v[i], changed in place; prescribed nodes
     * do not move.  A call with positions 0 right after one with positions 1
     * of the same bodies (a velocity pass) acts on that call's pairs: a pair
     * held at its gap stays in contact even where the push left it just
     * outside the detection's reach.  *pairs gets the pairs that did not
     * settle.  NULL with contact. */
    defo_status (*contact_respond)(void *ctx, defo_step_body *const *bodies, int count, double dt,
                                   double tau, const double *const *x_prev, double *const *x,
                                   double *const *v, int positions, defo_index *pairs);
    void *ctx;
} defo_step_context;

typedef struct defo_stepper defo_stepper; /* an integrator instance (opaque) */

typedef struct defo_integrator_ops {
    defo_integrator_kind kind;
    const char *name;
    int dynamic; /* 1: inertia, velocities and the collision response */
    /* Equal steps a frame of length T needs for these bodies (≥ 1). */
    int (*steps)(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                 double T);
    defo_status (*create)(const defo_integrator_def *def, defo_stepper **out);
    void (*destroy)(defo_stepper *s);
    /* Per-body state into b->data (solvers, buffers, history). */
    defo_status (*attach)(defo_stepper *s, defo_step_body *b);
    void (*detach)(defo_stepper *s, defo_step_body *b);
    /* Advance the bodies by ctx->dt from ctx->t.  On error every body is
     * left at its state before the call. */
    defo_status (*step)(defo_stepper *s, defo_step_body *const *bodies, int count,
                        const defo_step_context *ctx);
    /* b's topology changed (fracture): node count, connectivity, force
     * model, masses are new; history of the old nodes is kept, new nodes
     * copy their parent's (parent[i] for i ≥ old_n). */
    defo_status (*topology_changed)(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                    const defo_index *parent);
    /* The start of a frame: drop what b->changed makes stale.  Whatever a
     * stepper carries from frame to frame must be a function of the state
     * and the history (so a frame restarted from a checkpoint takes
     * bit-identical steps): carried factorisations are rebuilt from the
     * positions they were made at (history), not stored. */
    void (*frame_start)(defo_stepper *s, defo_step_body *b);
    /* History that a checkpoint must hold (BDF2's previous state, the
     * quasistatic predictor's equilibria): its size in bytes, a copy out
     * and a copy in (checked: DEFO_ERR_PARSE for a size that does not fit). */
    size_t (*history_bytes)(const defo_stepper *s, const defo_step_body *b);
    void (*save_history)(const defo_stepper *s, const defo_step_body *b, void *out);
    defo_status (*restore_history)(defo_stepper *s, defo_step_body *b, const void *in, size_t size);
    size_t (*bytes)(const defo_stepper *s, const defo_step_body *b);
} defo_integrator_ops;

/* The ops table of a kind (NULL for an unknown one). */
DEFO_API const defo_integrator_ops *defo_integrator_ops_of(defo_integrator_kind kind);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_INTEGRATOR_H */
