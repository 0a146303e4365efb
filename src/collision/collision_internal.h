/*
 * collision/collision_internal.h — the collider's private layout, shared by
 * shapes.c (exact signed distances) and collider.c (motion, projection).
 */
#ifndef DEFO_INTERNAL_COLLISION_H
#define DEFO_INTERNAL_COLLISION_H

#include "base/base.h"
#include "defo/collision.h"

/* A validated shape: unit normal/axis, a precomputed unit vector
 * perpendicular to the axis (the deterministic normal on the axis), and its
 * rotation (local -> collider frame, row-major). */
typedef struct defo_shape {
    defo_shape_type type;
    double rot[9];
    double center[3];
    double dir[3];  /* plane normal, or cylinder/capsule axis (unit) */
    double perp[3]; /* unit, perpendicular to dir */
    double radius;
    double half[3];
    double half_length;
    defo_surface_sdf *sdf; /* mesh: owned */
    double box[6];         /* mesh: its bounding box (local frame, relative to center) */
    double size;           /* mesh: half its box diagonal */
} defo_shape;

struct defo_collider {
    int num_shapes;
    defo_shape *shapes;
    defo_motion_def motion; /* validated (defo_motion_validate) */
    double friction;
    double separation_speed; /* initial penetration resolved at most this fast [m/s] */
    double size;             /* largest characteristic length, for relative tolerances */
};

/* How deep a node may stay inside collider c at the end of a step of dt
 * when it was φ_prev deep at the start (φ_prev < 0: inside): a body that
 * starts inside comes out at no more than separation_speed (the response's
 * projection and the penalty of the implicit steppers both use it). */
static inline double defo_collider_kept_depth(const defo_collider *c, double phi_prev, double dt) {
    const double keep = -phi_prev - c->separation_speed * dt;
    return keep > 0 ? keep : 0.0;
}

/* Signed distance of the collider-frame point p to one shape, and the unit
 * outward normal in the collider frame (never NaN). */
double defo_shape_phi(const defo_shape *s, const double p[3], double n[3]);

/* Validate d (index k for messages) and fill s. */
defo_status defo_shape_init(const defo_shape_def *d, int k, defo_shape *s);

/* Characteristic length of a shape (0 for a plane). */
double defo_shape_size(const defo_shape *s);

/* Release what a shape owns (a mesh's signed distance). */
void defo_shape_release(defo_shape *s);

#endif
