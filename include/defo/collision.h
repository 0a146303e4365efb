/*
 * defo/collision.h — rigid colliders as implicit surfaces with scripted
 * motion, and the node collision processing of ITF04 §9.
 *
 * A collider is the UNION of simple shapes (plane, sphere, box, cylinder,
 * capsule) given in the collider's local frame; its signed distance is the
 * minimum of the shapes' exact signed distances (negative inside).  The whole
 * collider moves rigidly with a scripted motion.  defo_collide_nodes projects
 * every node found inside a collider (interior nodes too) to its surface,
 * sets the normal velocity to the collider's and applies Coulomb friction
 * with the Δx_N/Δt term of ITF04 §9.
 *
 * Frames:
 *   shape local frame --(shape.rotation, about the collider origin)-->
 *   collider frame   --(motion at time t)--> world,
 * the motion being a defo_motion_def (defo/geometry.h):
 * x(t) = R(t)(p − pivot) + pivot + velocity·t.
 * A point p_local of a shape is p_c = rotation · p_local in the collider
 * frame; center, normal, axis and half_extent are given in the shape local
 * frame.  This lets a gear be one cylinder hub plus N box teeth whose
 * rotation is "about the gear axis by 2πk/N" (the gear axis through the
 * collider origin).
 *
 * Units: SI (m, s, rad).  Ownership: defo_collider_create copies the shapes.
 */
#ifndef DEFO_COLLISION_H
#define DEFO_COLLISION_H

#include "defo/base.h"
#include "defo/geometry.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum defo_shape_type {
    DEFO_SHAPE_PLANE,
    DEFO_SHAPE_SPHERE,
    DEFO_SHAPE_BOX,
    DEFO_SHAPE_CYLINDER,
    DEFO_SHAPE_CAPSULE,
    /* a closed triangle surface (mesh colliders): the exact distance to its
     * triangles through a hierarchy, inside by the generalised winding
     * number, so small holes and a few flipped triangles do not turn it
     * inside out (defo_surface_sdf, defo/geometry.h) */
    DEFO_SHAPE_MESH
} defo_shape_type;

/* One primitive shape, in its local frame.  Defaults (defo_default_shape_def):
 * a unit sphere at the origin, normal and axis +z, identity rotation. */
typedef struct defo_shape_def {
    defo_shape_type type;
    double center[3];      /* sphere/box/cylinder/capsule centre; plane: a point on it [m] */
    double normal[3];      /* plane: outward unit normal (the solid is below) */
    double axis[3];        /* cylinder/capsule: unit axis */
    double radius;         /* sphere, cylinder, capsule [m], > 0 (default 1) */
    double half_extent[3]; /* box half sizes along the local axes [m], > 0 (default 1) */
    double half_length; /* cylinder (> 0) / capsule (>= 0) half length along axis [m] (default 1) */
    double rotation[9]; /* row-major rotation local -> collider frame, about the collider
                              origin (default identity); must be orthonormal with det +1 */
    /* mesh: its triangles in the shape's local frame, placed at center
     * (borrowed until defo_collider_create, which builds what it needs) */
    const defo_mesh *mesh;
} defo_shape_def;

DEFO_API defo_shape_def defo_default_shape_def(void);

typedef struct defo_collider_def {
    int num_shapes;               /* >= 1 */
    const defo_shape_def *shapes; /* the UNION of these shapes (copied) */
    defo_motion_def motion;       /* scripted motion of the collider frame (defo/geometry.h);
                                     default: at rest */
    double friction;              /* Coulomb coefficient μ >= 0 (default 0.5) */
    /* How fast defo_collision_respond pushes out a node that was already
     * inside at the start of the step (a body that starts inside the
     * collider) [m/s]: its depth falls by at most this times the step, so a
     * deep penetration is resolved over several steps instead of being
     * squashed flat at once (which launches the body).  > 0 (INFINITY: at
     * once, as ITF04 §9); default 0.5. */
    double separation_speed;
} defo_collider_def;

DEFO_API defo_collider_def defo_default_collider_def(void);

typedef struct defo_collider defo_collider;

/* Validate def (finite values, unit-able normals/axes, positive sizes,
 * orthonormal rotations, μ >= 0) and create the collider.  On error *out is
 * NULL and the message names the offending shape and field. */
DEFO_API defo_status defo_collider_create(const defo_collider_def *def, defo_collider **out);
DEFO_API void defo_collider_destroy(defo_collider *c);

/* Signed distance φ at world point x and time t (negative inside), the unit
 * outward normal n = ∇φ (may be NULL) and the collider's velocity at x (may be
 * NULL).  Union: min of the shapes' φ (ties: the first shape).  At medial
 * points (sphere centre, box medial planes, cylinder/capsule axis) n is a
 * deterministic valid unit direction, never NaN.  Thread-safe. */
DEFO_API double defo_collider_phi(const defo_collider *c, double t, const double x[3], double n[3],
                                  double vel[3]);

/* Largest characteristic length of the collider's shapes (radius, half
 * extents, half length; 1 for a lone plane).  Tolerances are relative to it. */
DEFO_API double defo_collider_size(const defo_collider *c);
/* Its Coulomb coefficient μ. */
DEFO_API double defo_collider_friction(const defo_collider *c);

/* What the signed distance builder found about mesh shape `shape` (holes,
 * flipped and degenerate triangles, self-intersections); NULL for a shape
 * that is not a mesh. */
DEFO_API const defo_surface_info *defo_collider_surface_info(const defo_collider *c, int shape);

/* ITF04 §9 collision processing for n nodes after the position update.  For
 * every node with φ(x, t) < 0 for a collider (all nodes, interior too;
 * colliders processed in order), the node is projected to the surface along
 * n (repeated if it lands inside another shape of the union), its relative
 * normal velocity is set to zero if it was moving into the collider (kept if
 * already separating, as in the paper), and friction changes the relative
 * tangential velocity to
 *     v_T' = max(0, 1 - μ (Δv_N + Δx_N/Δt) / |v_T|) v_T
 * (Δx_N: projection distance, Δv_N: normal velocity change).  Colliding nodes
 * get constrained[i] = 1 and normal[3i..3i+2] = n (the last collider's);
 * others get constrained[i] = 0 and normal untouched.  *count = number of
 * colliding nodes.  x and v (3n each) are updated in place; v, normal and
 * count may be NULL (v NULL: positions only).  colliders may be empty.  Deterministic for any thread
 * count, parallel over nodes, allocation-free.  dt > 0. */
DEFO_API defo_status defo_collide_nodes(defo_collider *const *colliders, int num_colliders,
                                        double t, double dt, defo_index n, double *x, double *v,
                                        unsigned char *constrained, double *normal,
                                        defo_index *count);

/* The ITF04 §9 response every dynamic stepper uses, after a position update
 * over dt that ended at time t (n nodes, x_prev their positions before it):
 * the nodes of x inside a collider are projected out, their relative normal
 * velocity set to zero when approaching, Coulomb friction applied over the
 * friction time tau (v_T' = max(0, 1 − μ(Δv_N + Δx_N/τ)/|v_T|) v_T), as
 * defo_collide_nodes; then each colliding node is classified by the collider
 * it rests on (smallest |φ|): sliding — constraint DEFO_CONSTRAINT_NORMAL,
 * normal[3i..] its unit normal — or, when friction brought its relative
 * tangential velocity to rest, sticking — DEFO_CONSTRAINT_FIXED, and the
 * tangential part of its displacement relative to the collider since x_prev
 * is undone (static friction: a resting node does not creep).  A node that
 * was already inside a collider at x_prev (at time t − dt) by more than
 * separation_speed · dt is not projected to the surface but only to the
 * depth it had there less separation_speed · dt (initial penetration,
 * resolved over several steps; defo_collider_def).  friction (n, may be
 * NULL) gets that collider's μ for colliding nodes.  Nodes with
 * skip[i] != 0 (prescribed; skip may be NULL) are left alone.  constraint is
 * 0 for nodes not in contact.  Deterministic for any thread count,
 * allocation-free. */
DEFO_API defo_status defo_collision_respond(defo_collider *const *colliders, int num_colliders,
                                            double t, double dt, double tau, defo_index n,
                                            const double *x_prev, const unsigned char *skip,
                                            double *x, double *v, unsigned char *constraint,
                                            double *normal, double *friction, defo_index *count);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_COLLISION_H */
