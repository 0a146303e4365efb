/*
 * defo/rigid.h — rigid bodies (MMDJ01 §2.7): mass properties from a tet
 * mesh, motion with a unit quaternion and the angular momentum, impulses
 * and contact with friction.
 *
 * Frames.  A body's rest shape (mesh rest positions X) has its centre of
 * mass C and principal axes B (columns, a rotation): its body coordinates
 * are r = Bᵀ(X − C), in which the inertia tensor is diag(I₁, I₂, I₃).  The
 * state is the centre c, the orientation q (unit quaternion, body → world),
 * the velocity v of the centre and the angular momentum L about it (world
 * axes): a point of the body is at x = c + R(q) r and moves with v + ω × (x −
 * c), ω = R I⁻¹ Rᵀ L.
 *
 * Motion over a step of dt under a constant force F and torque τ about the
 * centre: c += dt (v + dt F/2M), v += dt F/M (exact for a constant force);
 * L += τ dt/2, the torque-free rotation, L += τ dt/2.  The torque-free
 * rotation is the implicit midpoint rule of Euler's equations in the body
 * frame, Π' = Π × I⁻¹Π: Π⁺ = cay(dt ω̂)ᵀ Π with ω = I⁻¹(Π + Π⁺)/2 (solved by
 * fixed-point iteration to rounding), and q⁺ = q ⊗ q_cay, q_cay the unit
 * quaternion of the Cayley rotation (∝ (1, dt ω/2)).  Since R⁺Π⁺ = R Π, L is
 * kept to rounding; the midpoint rule keeps the quadratic invariants |Π|²
 * and the kinetic energy ½ Π·I⁻¹Π to the solve's accuracy; the motion is
 * second order, so the tumbling period of a body spinning near its
 * intermediate axis is off by O((ω dt)²) (tests/test_rigid.c: 1e-10, 1e-12
 * and 1e-4 over 20 s at 240 steps a second).  (ODE 0.16, measured on the same
 * box: L drifts 6 % and the energy 14 % with its gyroscopic term, and the
 * body does not tumble at all without it.)
 *
 * Contact (defo_rigid_solve_contacts): points where a body touches an
 * obstacle (a collider, or another body of the call), each with its normal,
 * depth (or gap) and Coulomb coefficient, resolved by sequential impulses:
 * Gauss–Seidel sweeps in a fixed order over the points, each accumulating a
 * normal impulse ≥ 0 that brings the relative normal velocity to at least
 * −gap/dt (a point not yet touching may close its gap within the step, so
 * nothing tunnels) or to −e times the approach speed (restitution e, above a
 * speed threshold), and a tangential one within the friction cone of it.
 * The points of a patch (defo_rigid_contact.patch: the corners of a face
 * resting on another) have their normal impulses each and one friction
 * impulse for them all (patch friction, as game-physics engines solve a
 * manifold of four points): a force across the normal and a twist about it
 * at the points' centre, the force within μ Σ jₙ and the twist within
 * μ Σ jₙ ρ (ρ: a point's distance from the centre across the normal),
 * shared by the points in fixed proportions (the force equally, the twist
 * as n × ρ), so the points' impulses are exactly what the bodies took.  A
 * patch of up to four points is solved as one block at each visit (normals
 * and friction together; a block started cold is over-relaxed): per-point
 * Gauss–Seidel with per-point friction couples a resting face's tilt to
 * its sliding through a stack and crawls (a column of four boxes: 2 118
 * sweeps to 1e-9, 33 as blocks).
 * Penetration left after the step is removed by a separate pseudo-velocity
 * solve that moves positions only (no energy is added).  An obstacle may
 * also be a point of a deformable surface carried by lumped node masses
 * (defo_rigid_contact.nodes): it takes the opposite impulses, so the
 * momentum of the bodies and the nodes together is kept.  Deterministic.
 *
 * Units: SI.
 */
#ifndef DEFO_RIGID_H
#define DEFO_RIGID_H

#include "defo/base.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Mass properties of a tet4 or tet10 mesh (its corner tetrahedra: exact for
 * straight-sided elements) at positions x (NULL: rest), density ρ: integrals
 * of ρ, ρx and ρ x xᵀ over every tet (a tet's second moment is V/20 (Σ pₐpₐᵀ
 * + s sᵀ), s = Σ pₐ, about any origin).  inertia is about the centre, world
 * axes; principal (ascending) and axes (columns, a rotation) its
 * eigen-decomposition. */
typedef struct defo_mass_properties {
    double volume;       /* [m³] */
    double mass;         /* [kg] */
    double center[3];    /* [m] */
    double inertia[9];   /* [kg m²], row-major */
    double principal[3]; /* I₁ ≤ I₂ ≤ I₃ */
    double axes[9];      /* row-major; column k is the axis of principal[k] */
} defo_mass_properties;

/* DEFO_ERR_INVALID_ARGUMENT for a mesh without elements, ρ ≤ 0, or a total
 * volume ≤ 0; DEFO_ERR_INVALID_MESH naming an element of negative volume. */
DEFO_API defo_status defo_mass_properties_of(const defo_mesh *mesh, const double *x, double density,
                                             defo_mass_properties *out);

typedef struct defo_rigid_body {
    /* constant */
    double mass;       /* M [kg] > 0 */
    double inertia[3]; /* principal moments [kg m²] > 0 */
    double rest_center[3];
    double rest_axes[9]; /* B, row-major: r = Bᵀ(X − C) */
    /* state */
    double center[3];      /* c [m] */
    double orientation[4]; /* q = (w, x, y, z), unit, body → world */
    double velocity[3];    /* v [m/s] */
    double momentum[3];    /* L [kg m²/s], world, about c */
} defo_rigid_body;

/* A body at rest in its rest placement (c = C, R(q) = B) from mass
 * properties of its rest shape. */
DEFO_API defo_status defo_rigid_init(defo_rigid_body *b, const defo_mass_properties *rest);

/* R(q) (row-major; body → world) and the rotation X − C ↦ x − c that places
 * the rest shape (R(q) Bᵀ). */
DEFO_API void defo_rigid_rotation(const defo_rigid_body *b, double R[9]);
DEFO_API void defo_rigid_placement(const defo_rigid_body *b, double P[9]);
/* Place the rest shape by the rotation P (row-major, X − C ↦ x − c): the
 * orientation becomes P B.  L is kept. */
DEFO_API void defo_rigid_set_placement(defo_rigid_body *b, const double P[9]);
/* ω = R I⁻¹ Rᵀ L (world). */
DEFO_API void defo_rigid_angular_velocity(const defo_rigid_body *b, double w[3]);
/* The world inertia R diag(I) Rᵀ (row-major) and its inverse. */
DEFO_API void defo_rigid_world_inertia(const defo_rigid_body *b, double I[9], double Iinv[9]);
/* ½ M v² + ½ ω·L. */
DEFO_API double defo_rigid_kinetic_energy(const defo_rigid_body *b);
/* Set ω (world) at the current orientation: L = R I Rᵀ ω. */
DEFO_API void defo_rigid_set_angular_velocity(defo_rigid_body *b, const double w[3]);
/* Position and velocity of the material point with rest position X. */
DEFO_API void defo_rigid_point(const defo_rigid_body *b, const double X[3], double x[3],
                               double v[3]);
/* The velocity of the body's material at world point p: v + ω × (p − c). */
DEFO_API void defo_rigid_velocity_at(const defo_rigid_body *b, const double p[3], double v[3]);
/* An impulse J [N s] at world point p: v += J/M, L += (p − c) × J. */
DEFO_API void defo_rigid_apply_impulse(defo_rigid_body *b, const double p[3], const double J[3]);
/* Advance over dt > 0 under force F and torque τ about the centre (may be
 * NULL: none).  DEFO_ERR_NUMERICAL for a non-finite state. */
DEFO_API defo_status defo_rigid_advance(defo_rigid_body *b, const double F[3], const double tau[3],
                                        double dt);

/* ------------------------------------------------------------- contact */
typedef struct defo_rigid_contact {
    int body;         /* index of the body in the call */
    int other;        /* −1: an obstacle of infinite mass (a collider); else a body index */
    double point[3];  /* the contact point on `body` [m] */
    double normal[3]; /* unit, from the obstacle (or `other`) towards `body` */
    double gap;       /* signed distance along normal: < 0 penetrating [m] */
    double obstacle_velocity[3]; /* the obstacle's velocity at the point (other = −1) */
    double friction;             /* Coulomb μ ≥ 0 */
    /* other = −1 with nodes > 0: the obstacle is a point of a deformable
     * surface, Σ weight[a] × node a (a vertex, a triangle's closest point or
     * an edge's; weights ≥ 0 summing to 1) — its velocity is Σ cₐ vₐ (not
     * obstacle_velocity), and the impulse −J on it goes to the nodes by
     * their weights and lumped masses: vₐ −= cₐ J inv_mass[a] (effective
     * inverse mass Σ cₐ² inv_mass[a]); the push-out likewise through
     * node_push when given. */
    int nodes;                /* 0 … 3 */
    double weight[3];         /* cₐ */
    double inv_mass[3];       /* 1/mₐ (0: a prescribed node) */
    double *node_velocity[3]; /* vₐ (3 each), changed by the solve */
    /* the nodes' push-out pseudo-velocities (3 each, accumulated by the
     * push-out like the bodies'; the caller moves the nodes by them × dt);
     * NULL: the push-out moves only the rigid body */
    double *node_push[3];
    /* > 0: the contact is a point of a patch, the run of consecutive
     * contacts with the same patch number (one pair of bodies, or one body
     * and a collider moving with one velocity; one friction coefficient;
     * normals that agree; no deformable nodes): their friction is solved
     * together at the patch's centre (patch friction, above) and a patch
     * of up to four points as one block; 0: alone */
    int patch;
    /* results: the impulse on `body` (on `other` the opposite) [N s]: its
     * normal part ≥ 0 along normal, its tangential part within μ of it (a
     * patch's points: their friction together within the patch's limits) */
    double impulse[3];
    double normal_impulse, tangent_impulse[3];
    double push_impulse; /* of the push-out solve */
    double bias;         /* the normal speed aimed at (set by the solve) */
} defo_rigid_contact;

typedef struct defo_rigid_contact_def {
    double restitution; /* e in [0, 1]; default 0.2 */
    /* approach speeds below this bounce with e = 0 [m/s]; default 0.05 */
    double bounce_speed;
    int iterations; /* Gauss–Seidel sweeps at most, each pass (default 30) */
    /* the velocity pass stops after the sweep in which no accumulated
     * impulse moved by more than tolerance × the largest one (default
     * 1e-10); the push-out pass after the sweep in which none moved by more
     * than push_tolerance × the largest of either pass (default 1e-10: a
     * push-out of rounding-size overlaps is measured against the step's
     * impulses, not against itself) */
    double tolerance, push_tolerance;
    double slop;     /* penetration left alone by the push-out [m]; default 0 */
    double push_out; /* fraction of the penetration removed per step, (0, 1]; default 0.8 */
    /* 1: start from each contact's normal_impulse and tangent_impulse as
     * given (a previous step's, applied first: sequential impulses converge
     * from there); 0 (default): from zero */
    int warm_start;
    /* NULL (default): the solve allocates its scratch for the call; else
     * defo_rigid_solve_bytes(count, contacts, num_contacts) bytes, aligned
     * as malloc's, that it uses instead (a caller solving every step keeps
     * one and allocates nothing) */
    void *workspace;
} defo_rigid_contact_def;
DEFO_API defo_rigid_contact_def defo_default_rigid_contact_def(void);
/* The workspace a solve of these contacts among count bodies uses. */
DEFO_API size_t defo_rigid_solve_bytes(int count, const defo_rigid_contact *contacts,
                                       int num_contacts);

/* What a solve did: the sweeps of the velocity pass and of the push-out
 * pass, and for each whether it stopped at def->tolerance (1) or ran out of
 * sweeps (0; a pass with no impulse at all converges at once); change: the
 * largest impulse change of each pass's last sweep over its largest
 * impulse. */
typedef struct defo_rigid_solve_stats {
    int sweeps[2];
    int converged[2];
    double change[2];
} defo_rigid_solve_stats;

/* Resolve the contacts of a step of dt among bodies[] (their v and L
 * those of the step's end before contact: forces applied): sequential
 * impulses change v and L and are accumulated in each contact's impulse.
 * push (6 per body: a velocity and an angular velocity, may be NULL) gets
 * the pseudo-velocities that remove def->push_out of each penetration beyond
 * the slop over dt, from a second solve that touches no velocity: the caller
 * moves the body by push · dt besides its motion.  stats (may be NULL):
 * what the sweeps did. */
DEFO_API defo_status defo_rigid_solve_contacts(defo_rigid_body *bodies, int count,
                                               defo_rigid_contact *contacts, int num_contacts,
                                               const defo_rigid_contact_def *def, double dt,
                                               double *pushes, defo_rigid_solve_stats *stats);
/* Move a body by a pseudo-velocity v, ω (world) over dt: c += dt v, the
 * orientation turned by dt ω; L unchanged. */
DEFO_API void defo_rigid_displace(defo_rigid_body *b, const double v[3], const double w[3],
                                  double dt);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_RIGID_H */
