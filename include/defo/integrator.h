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
 *                   linearisation (the rotations of the predicted step end
 *                   xⁿ + Δt vⁿ, kept through one linear solve);
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
 *   rigid           MMDJ01 §2.7: every body moves as one rigid body (mass
 *                   properties of its tets, a unit quaternion and the
 *                   angular momentum; defo/rigid.h), sequential-impulse
 *                   contact with colliders and bodies (one solve of all
 *                   the bodies), Coulomb friction.
 *   hybrid          MMDJ01 §2.6–2.8: rigid between impacts; at an impact the
 *                   contact impulses become nodal forces and a static
 *                   analysis anchored beyond impact_radius gives the
 *                   stresses that break the body (defo/fracture.h, at once);
 *                   its pieces become rigid bodies of their own (the world).
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
    DEFO_INTEGRATOR_RIGID = 5,
    DEFO_INTEGRATOR_HYBRID = 6,
    DEFO_INTEGRATOR_COUNT = 7
} defo_integrator_kind;

/* "newmark", "backward_euler", "bdf2", "quasistatic", "static", "rigid", "hybrid". */
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
     * reference force (the largest load on a free node; (2μ+λ)h² when no
     * load acts, h the mean rest edge), never below the round-off of the
     * elastic forces; default 1e-6, in (0, 1) */
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
    /* rigid, hybrid: coefficient of restitution of contacts, [0, 1]; 0.2 */
    double restitution;
    /* hybrid: r_coll, the radius around an impact within which the body
     * deforms in its static analysis (nodes beyond are anchored, MMDJ01
     * §2.7.1), as a fraction of the body's bounding-box diagonal, (0, 10];
     * default 0.5 */
    double impact_radius;
    /* hybrid: a piece whose volume is below fragment_size³ no longer breaks
     * [m], ≥ 0; 0 (default): twice the body's mean edge */
    double fragment_size;
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
    int exact_iterations; /* Newton iterations with the exact tangent (defo/solver.h) */
    int precond_setups;
    int solver_recoveries; /* linear solves that recovered from a failed preconditioner */
    defo_index collisions; /* nodes in contact at the end (response or penalty) */
    int extra_steps;       /* sub-steps beyond one a stepper took inside a step */
    /* loaded solves that stalled, or met their target only at the round-off
     * floor with a residual above √tolerance of the loads */
    int unresolved;
    int contact_sweeps; /* rigid, hybrid: Gauss–Seidel sweeps of the contact solve */
    /* rigid, hybrid: the contacts that carried an impulse at the solve's
     * last step, and how many of them this step's solve found again (and
     * started from that impulse) */
    int contacts_loaded, contacts_refound;
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
    double reference_force; /* [N]: max |load_i| over free nodes; if 0 (2μ+λ) h² (shells t³/h) */
    void *data;             /* the stepper's */
    defo_step_body_stats stats;
    /* What changed since the last frame_start besides the steps (DEFO_CHANGED_*
     * bits, set by the world, read by frame_start, then cleared). */
    unsigned changed;
    /* rigid, hybrid: the rigid state of the body (defo/rigid.h), kept by
     * the stepper (NULL for other integrators) */
    const struct defo_rigid_body *rigid;
    /* hybrid: the stepper left x deformed by an impact's static analysis in
     * its last step (the world's fracture passes read the stresses there) */
    int impact;
    /* hybrid (set by the world): the body may break (it has fracture and is
     * not below the fragment size); its longitudinal wave speed √((λ+2μ)/ρ) */
    int breaks;
    double wave_speed;
    /* hybrid: the nodes the last impact's analysis anchored (n flags, or
     * NULL): the stress next to an anchor is the anchor's, no crack starts
     * there (defo_fracture_step's held nodes) */
    const unsigned char *anchors;
    int loaded;            /* a load acts on a free node (reference_force is one) */
    double residual_floor; /* [N]: round-off of the elastic forces; no target below it */
    /* During topology_changed only (else NULL): new node i ≥ old_n lies at
     * (1 − parent_w[i])·parent[i] + parent_w[i]·parent_b[i] (a fracture cut
     * point; a copy has weight 0): history is interpolated alike. */
    const defo_index *parent_b;
    const double *parent_w;
    /* n flags (may be NULL): 1 = a node of a piece that broke off a body
     * under an equilibrium integrator, held where it is (no equilibrium: it
     * has no support) — the equilibrium solves keep it fixed */
    const unsigned char *held;
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

/* A node near a collider (defo_step_context.probe). */
typedef struct defo_node_contact {
    defo_index node;
    double phi;         /* signed distance to the nearest collider surface [m] */
    double normal[3];   /* its outward unit normal */
    double velocity[3]; /* the collider's velocity there [m/s] */
    double friction;    /* its Coulomb μ */
} defo_node_contact;

/* A point where two bodies' surfaces meet (defo_step_context.body_points):
 * side 0 a vertex (or a point of an edge), side 1 the closest point of the
 * other surface (a triangle's, or an edge's), each a weighted sum of its
 * body's nodes. */
typedef struct defo_body_point {
    defo_step_body *body[2]; /* a body of the call, or another colliding one */
    int nodes[2];            /* 1 … 3 nodes per side */
    defo_index node[2][3];
    double weight[2][3]; /* ≥ 0, summing to 1 per side */
    double normal[3];    /* unit, from side 1 towards side 0 */
    double gap;          /* signed distance along normal: < 0 penetrating [m] */
    double thickness;    /* the contact layer's δ of the pair [m] */
    double friction;     /* Coulomb μ of the two bodies */
} defo_body_point;

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
     * be NULL.  exact: the barrier pairs' terms carry their distance's
     * curvature too (defo_contact_pair_curvature: the exact tangent of a
     * Newton solve near its solution; indefinite); 0: positive
     * semidefinite.  NULL when no two bodies can touch. */
    defo_status (*contact)(void *ctx, defo_step_body *const *bodies, int count,
                           const double *const *x, int exact, double *energy, double *const *force,
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
    /* The nodes of body b at positions x (time t) closer than margin to a
     * collider (φ < margin; the smallest φ over the colliders), in node
     * order: the first cap into out, *count gets how many there are.
     * Prescribed nodes are left out.  NULL when the world has no colliders. */
    defo_status (*probe)(void *ctx, const defo_step_body *b, double t, const double *x,
                         double margin, defo_node_contact *out, defo_index cap, defo_index *count);
    /* The positions of b's prescribed nodes at time t (their scripted
     * motion) into out (3n; the other nodes' entries untouched): a stepper
     * that cuts its step places them along the motion.  NULL: targets only
     * at the step's end (b->target). */
    void (*targets)(void *ctx, const defo_step_body *b, double t, double *out);
    /* Where the call's bodies touch each other or any other colliding body,
     * all at their current positions (b->x): the signed vertex–triangle and
     * edge–edge pairs of the contact layer (defo/contact.h) within each
     * surface's reach, in a fixed order, as points (owned by the world,
     * valid until its next contact call).  The rigid steppers' body–body
     * contact.  NULL when no two bodies can touch. */
    defo_status (*body_points)(void *ctx, defo_step_body *const *bodies, int count,
                               const defo_body_point **points, size_t *num_points);
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
