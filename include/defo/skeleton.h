/*
 * defo/skeleton.h — animated skeletons for skeleton-driven flesh (TSIF05
 * §11: flesh attached to bones that follow a kinematic skeleton, a
 * quasistatic or dynamic solve between them, penalty contact against bone
 * shapes).  A skeleton is a tree of joints, each with a bind-pose offset
 * from its parent and keyframed local motion; every joint is a bone whose
 * rigid transform over time moves the flesh nodes bound to it
 * (defo_body_prescribe with a bone motion, defo/geometry.h) and the
 * colliders that stand for its shape (a defo_collider_def whose motion is
 * the bone's).
 *
 * Transforms.  Joint j's global transform G_j = G_parent · L_j, L_j(t) the
 * translation by offset_j + p_j(t) after the rotation q_j(t) (x ↦ R(q) x +
 * offset + p); a root's parent is the identity.  The bone transform maps a
 * bind-pose point to its place at time t,
 *     M_j(t) = A · G_j(t) · G_j(bind)⁻¹ · A⁻¹,   x = R_j(t) X + T_j(t),
 * A the skeleton's placement in the world (x_w = s Q x + d: a uniform
 * scale s, e.g. 0.01 for a motion capture in centimetres, a rotation Q and
 * a translation d).  The bind pose is the one the flesh mesh was built in:
 * every channel 0 (the hierarchy's own pose) or a chosen frame.  M_j is
 * rigid (the scale cancels).
 *
 * Keys: times increasing; before the first key the first holds, after the
 * last the last.  Between keys the rotation is interpolated spherically
 * (shortest arc) and the translation linearly in the key parameter s,
 * itself linear in time or eased (DEFO_INTERP_SMOOTH, defo/geometry.h).
 * Velocities (Ṙ, Ṫ) are the exact derivatives of that interpolation,
 * chained down the tree.
 *
 * BVH (Biovision hierarchy, the common motion-capture format): HIERARCHY
 * with ROOT / JOINT / End Site blocks, OFFSET and CHANNELS (X/Y/Zposition,
 * X/Y/Zrotation in degrees, applied in the listed order: R = R_c1 R_c2 R_c3),
 * then MOTION, "Frames: N", "Frame Time: dt" and N frames of the channel
 * values; frame k is the key at time k·dt.  Every error names the file and
 * line ("arm.bvh:12: ..."): unknown keywords and channels, braces that do
 * not close, repeated joint names, a truncated frame list, non-finite or
 * missing numbers, counts the file cannot hold.
 *
 * Immutable once created: evaluation is thread-safe and allocation-free.
 * Units: SI (m, s, rad), BVH values in the file's units (scale converts)
 * and degrees.
 */
#ifndef DEFO_SKELETON_H
#define DEFO_SKELETON_H

#include "defo/base.h"
#include "defo/geometry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One joint of a keyframed skeleton built in code (or from a scene). */
typedef struct defo_joint_def {
    const char *name;           /* unique (copied; at most DEFO_NAME_MAX − 1 bytes) */
    int parent;                 /* an earlier joint's index, or −1 for a root */
    double offset[3];           /* bind-pose origin relative to the parent's [skeleton units] */
    int num_keys;               /* ≥ 0 (0: fixed to its parent) */
    const double *times;        /* num_keys increasing times [s] */
    const double *rotations;    /* 4 per key, quaternion (w, x, y, z), any nonzero length */
    const double *translations; /* 3 per key added to the offset, or NULL (none) */
} defo_joint_def;

/* The skeleton's placement in the world: x_world = scale · Q x + translate. */
typedef struct defo_skeleton_place {
    double scale;        /* > 0; default 1 */
    double rotation[9];  /* Q, row-major rotation; default identity */
    double translate[3]; /* [m]; default 0 */
    /* the bind pose: −1 (default) every channel/key value 0, the
     * hierarchy's own pose; k ≥ 0 the pose at key (BVH frame) k */
    int bind_frame;
    defo_interpolation interpolation; /* default LINEAR */
} defo_skeleton_place;
DEFO_API defo_skeleton_place defo_default_skeleton_place(void);

/* A skeleton from joints (copied).  Errors name the joint and field:
 * parents must come first, names be unique and non-empty, numbers finite,
 * times increasing, quaternions nonzero, bind_frame below every joint's
 * key count that has keys. */
DEFO_API defo_status defo_skeleton_create(const defo_joint_def *joints, int num_joints,
                                          const defo_skeleton_place *place, defo_skeleton **out);
/* A BVH file (place may be NULL: defaults).  DEFO_ERR_IO for an unreadable
 * file, DEFO_ERR_PARSE with "file:line: reason" for a malformed one. */
DEFO_API defo_status defo_skeleton_read_bvh(const char *path, const defo_skeleton_place *place,
                                            defo_skeleton **out);
/* The same from memory; name is used in messages. */
DEFO_API defo_status defo_skeleton_parse_bvh(const char *text, size_t size, const char *name,
                                             const defo_skeleton_place *place, defo_skeleton **out);
DEFO_API void defo_skeleton_destroy(defo_skeleton *sk);

DEFO_API int defo_skeleton_num_bones(const defo_skeleton *sk);
/* NULL / −1 for a bad index. */
DEFO_API const char *defo_skeleton_bone_name(const defo_skeleton *sk, int bone);
DEFO_API int defo_skeleton_parent(const defo_skeleton *sk, int bone);
/* The bone named name, or −1. */
DEFO_API int defo_skeleton_find(const defo_skeleton *sk, const char *name);
/* The last key time over every joint [s] (0 without keys). */
DEFO_API double defo_skeleton_duration(const defo_skeleton *sk);

/* Bone transform M (top of the file) at time t: R (row-major rotation)
 * and T [m], and their time derivatives Rdot, Tdot (either may be NULL).
 * A bad bone index gives the identity. */
DEFO_API void defo_skeleton_transform(const defo_skeleton *sk, int bone, double t, double R[9],
                                      double T[3], double Rdot[9], double Tdot[3]);
/* World position of the bone's joint (its origin) at time t [m]. */
DEFO_API void defo_skeleton_joint_position(const defo_skeleton *sk, int bone, double t,
                                           double p[3]);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_SKELETON_H */
