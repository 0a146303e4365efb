/*
 * defo/geometry.h — geometric queries shared by the modules above the mesh
 * (the mesher, collision and contact, the integrators' constraints, scenes).
 *
 * Three parts:
 *   defo_surface_sdf  signed distance to a triangle surface: the exact
 *                     closest point through a bounding volume hierarchy,
 *                     inside/outside by the generalised winding number
 *                     (Jacobson et al. 2013) with the hierarchical dipole
 *                     approximation of Barill et al. 2018, so small holes and
 *                     a few flipped triangles do not turn the inside out.
 *                     Immutable once built: every query takes a const pointer
 *                     and keeps its scratch on the stack, so any number of
 *                     threads may query at once.
 *   defo_region       a region of rest positions selecting a node set (fixed
 *                     sets, bones, handles, loads, tractions): box, sphere,
 *                     plane or element tag, with ONE tolerance rule.
 *   defo_motion_def   scripted rigid motion (colliders, signed-distance
 *                     grids, bones, kinematic handles), evaluated in one
 *                     place: defo_motion_pose_at.
 *
 * Units are SI (m, s, rad); surfaces are in their own units (metres by
 * convention).  Depends on defo/mesh.h only.
 */
#ifndef DEFO_GEOMETRY_H
#define DEFO_GEOMETRY_H

#include "defo/base.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------- signed distance */
typedef struct defo_surface_sdf defo_surface_sdf;

/* What the builder found about the surface (all counts over its triangles). */
typedef struct defo_surface_info {
    defo_index num_triangles;
    double area;       /* total area (m^2) */
    double volume;     /* enclosed volume by the divergence theorem (m^3), after repair */
    double bbox_lo[3]; /* bounding box of the triangles' corners */
    double bbox_hi[3];
    int64_t open_edges;         /* edges used by one triangle (hole borders) */
    int64_t nonmanifold_edges;  /* edges used by three or more triangles */
    double hole_length;         /* total length of the open edges (m) */
    defo_index degenerate;      /* triangles with zero area relative to their edges */
    defo_index flipped;         /* triangles reoriented to agree with their component's majority */
    int64_t self_intersections; /* (edge, triangle) crossings between non-adjacent triangles */
} defo_surface_info;

typedef struct defo_sdf_def {
    /* Reorient triangles that disagree with their neighbours across manifold
     * edges: each edge-connected component takes the orientation of the
     * majority of its triangles.  Default 1. */
    int repair_orientation;
    /* Count self-intersections in defo_surface_info (one BVH pass over the
     * edges).  Default 1. */
    int check_self_intersections;
    /* Far-field accuracy of the hierarchical winding number: a cluster is
     * replaced by its dipole when the query point is farther than beta times
     * the cluster's radius.  Default 2 (Barill et al. 2018); > 1. */
    double winding_beta;
} defo_sdf_def;
DEFO_API defo_sdf_def defo_default_sdf_def(void);

/* Build from the triangles of surface (mesh->tris with 3 or 6 nodes per
 * triangle; 6-node triangles use their corners).  Copies what it needs: the
 * mesh may be destroyed afterwards.  def may be NULL (defaults).  Errors:
 * no triangles, a non-finite coordinate (DEFO_ERR_INVALID_MESH naming the
 * node), out of memory. */
DEFO_API defo_status defo_surface_sdf_create(const defo_mesh *surface, const defo_sdf_def *def,
                                             defo_surface_sdf **out);
DEFO_API void defo_surface_sdf_destroy(defo_surface_sdf *sdf);
DEFO_API const defo_surface_info *defo_surface_sdf_info(const defo_surface_sdf *sdf);

typedef struct defo_sdf_sample {
    double distance;     /* signed distance: negative inside (winding > 1/2) */
    double closest[3];   /* closest point on the surface */
    defo_index triangle; /* index (in the input) of the triangle holding it */
    double winding;      /* generalised winding number (1 inside, 0 outside) */
    double normal[3];    /* unit normal of that triangle (its orientation; 0 if degenerate) */
} defo_sdf_sample;

/* Queries: sdf must be a built object and p finite (not checked, for speed).
 * Signed distance, closest point and winding number at p. */
DEFO_API void defo_surface_sdf_query(const defo_surface_sdf *sdf, const double p[3],
                                     defo_sdf_sample *out);
/* Unsigned distance to the closest point (written to closest, may be NULL;
 * triangle may be NULL).  The exact closest point on the triangles. */
DEFO_API double defo_surface_sdf_distance(const defo_surface_sdf *sdf, const double p[3],
                                          double closest[3], defo_index *triangle);
/* 1 when some triangle comes within distance r of p (cheaper than the full
 * distance query: the search stops at the first one). */
DEFO_API int defo_surface_sdf_within(const defo_surface_sdf *sdf, const double p[3], double r);
/* Generalised winding number at p: the hierarchical approximation (error up
 * to ~2e-2 right next to the surface, far smaller away from it) ... */
DEFO_API double defo_surface_sdf_winding(const defo_surface_sdf *sdf, const double p[3]);
/* ... and the exact sum of solid angles over every triangle (O(n), for tests). */
DEFO_API double defo_surface_sdf_winding_exact(const defo_surface_sdf *sdf, const double p[3]);

/* ------------------------------------------------------- box hierarchies */
/* A bounding volume hierarchy over n axis-aligned boxes (6 doubles each:
 * lo x y z, hi x y z), built once by median splits of the box centres along
 * the longest axis and REFIT, not rebuilt, when the boxes move (the contact
 * layer refits a body's hierarchy when a detection looks into it).  Leaves hold up to 4
 * boxes.  Queries visit the tree in a fixed order: the same boxes give the
 * same sequence of callbacks on every run and thread.  A refit tree answers
 * exactly (every overlapping box is reported); only its pruning gets looser
 * as the boxes drift from the build's arrangement. */
typedef struct defo_bvh defo_bvh;
/* n >= 0 boxes, copied; a box with a NaN bound is DEFO_ERR_INVALID_ARGUMENT. */
DEFO_API defo_status defo_bvh_create(const double *boxes, defo_index n, defo_bvh **out);
DEFO_API void defo_bvh_destroy(defo_bvh *bvh);
DEFO_API defo_index defo_bvh_count(const defo_bvh *bvh);
/* New boxes for the same n primitives (the tree's topology is kept). */
DEFO_API void defo_bvh_refit(defo_bvh *bvh, const double *boxes);
/* The box around every box (empty: lo = +inf, hi = -inf). */
DEFO_API void defo_bvh_bounds(const defo_bvh *bvh, double box[6]);
/* fn(ctx, i) for every box i overlapping q (closed boxes); fn returning
 * nonzero stops the query.  Thread-safe for concurrent queries. */
DEFO_API void defo_bvh_query(const defo_bvh *bvh, const double q[6],
                             int (*fn)(void *ctx, defo_index i), void *ctx);

/* ------------------------------------------------------------- proximity */
/* Closest point q = w0 a + w1 b + w2 c of triangle (a, b, c) to p (Ericson,
 * Real-Time Collision Detection §5.1.5).  *feature: 0 the face's interior, 1
 * edge ab, 2 edge bc, 3 edge ca, 4 corner a, 5 corner b, 6 corner c (a
 * zero-area triangle: the closest of its edges).  Returns |p − q|². */
DEFO_API double defo_point_triangle_closest(const double p[3], const double a[3], const double b[3],
                                            const double c[3], double w[3], int *feature);
/* Closest points p0 + s (p1 − p0) and q0 + t (q1 − q0) of two segments, s
 * and t in [0, 1] (parallel segments: the middle of the overlap along the
 * first); returns the squared distance.  Degenerate segments are points. */
DEFO_API double defo_segment_segment_closest(const double p0[3], const double p1[3],
                                             const double q0[3], const double q1[3], double *s,
                                             double *t);

/* ------------------------------------------------------------------ regions */
/* A region of a mesh's REST positions selecting a node set.
 *
 * Tolerance (one rule for every kind and every caller): with D the diagonal
 * of the bounding box of the mesh's rest positions and tol = tolerance · D,
 *   BOX     lo_k − tol ≤ x_k ≤ hi_k + tol for k = 0, 1, 2
 *   SPHERE  |x − center| ≤ radius + tol
 *   PLANE   (x − point) · n ≤ tol, n = normal / |normal|  (the side the
 *           normal points away from, the plane itself included)
 *   TAG     the nodes of the elements with elem_tag == tag (no tolerance)
 * The default tolerance, DEFO_REGION_TOLERANCE = 1e-9, lets a box face or a
 * plane placed exactly on a layer of nodes select that layer despite the
 * rounding of generated or transformed coordinates, while a node 2e-9·D
 * outside is not selected.  0 makes the tests exact. */
#define DEFO_REGION_TOLERANCE 1e-9

typedef enum defo_region_kind {
    DEFO_REGION_BOX = 0,
    DEFO_REGION_SPHERE = 1,
    DEFO_REGION_TAG = 2,
    DEFO_REGION_PLANE = 3
} defo_region_kind;

typedef struct defo_region {
    defo_region_kind kind;
    double lo[3], hi[3]; /* BOX corners [m]; not NaN (±infinity allowed) */
    double center[3];    /* SPHERE centre [m], finite */
    double radius;       /* SPHERE radius [m], >= 0 */
    double point[3];     /* PLANE: a point on it [m], finite */
    double normal[3];    /* PLANE: normal, finite and nonzero (need not be unit) */
    int32_t tag;         /* TAG */
    double tolerance;    /* relative to the rest bounding-box diagonal, finite and >= 0;
                            the constructors set DEFO_REGION_TOLERANCE */
} defo_region;

DEFO_API defo_region defo_region_box(const double lo[3], const double hi[3]);
DEFO_API defo_region defo_region_sphere(const double center[3], double radius);
DEFO_API defo_region defo_region_plane(const double point[3], const double normal[3]);
DEFO_API defo_region defo_region_tag(int32_t tag);

/* Nodes of mesh in region (increasing order).  *nodes is allocated with the
 * library allocator (release with defo_region_nodes_free); *count may be 0.
 * A region with a bad field is DEFO_ERR_INVALID_ARGUMENT naming the field. */
DEFO_API defo_status defo_region_nodes(const defo_mesh *mesh, const defo_region *region,
                                       defo_index **nodes, defo_index *count);
DEFO_API void defo_region_nodes_free(defo_index *nodes);
/* mark[i] = 1 for the nodes in region, 0 otherwise (num_nodes flags). */
DEFO_API defo_status defo_region_mark(const defo_mesh *mesh, const defo_region *region,
                                      unsigned char *mark);
/* mark[e] = 1 for the elements in region, 0 otherwise (num_elems flags):
 * TAG those with elem_tag == tag, the other kinds those whose corner nodes
 * it selects, all of them (a tetrahedron's four, a triangle's three:
 * material regions). */
DEFO_API defo_status defo_region_elements(const defo_mesh *mesh, const defo_region *region,
                                          unsigned char *mark);

/* ------------------------------------------------------------------- motion */
/* How keyframed values run between their keys (skeletons, defo/skeleton.h;
 * activation schedules, defo/world.h): LINEAR at constant rate (rotations
 * by spherical interpolation), SMOOTH eased in and out with the parameter
 * s ↦ s²(3 − 2s), so the value's rate is 0 at every key. */
typedef enum defo_interpolation {
    DEFO_INTERP_LINEAR = 0,
    DEFO_INTERP_SMOOTH = 1
} defo_interpolation;

typedef struct defo_skeleton defo_skeleton; /* defo/skeleton.h */

/* Scripted rigid motion of a frame (a collider, a signed-distance grid, a
 * bone, a kinematic handle).  At time t a frame point p is at
 *     x(t) = R(t) (p − pivot) + pivot + velocity·t,
 * R(t) the rotation about angular_axis by the angle angular_speed·t
 * (right-hand rule).  So the pivot moves with the translation, pivot(t) =
 * pivot + velocity·t, and the velocity of the frame at a world point x is
 *     v = velocity + ω × (x − pivot(t)),  ω = angular_speed · axis/|axis|.
 * Or the frame follows a bone of an animated skeleton (TSIF05 §11): with
 * skeleton set, x(t) = R_b(t) p + T_b(t), the bone's transform from the
 * bind pose (defo_skeleton_transform), and v = Ṫ_b + ω_b × (x − T_b); the
 * scripted fields must then be left at their defaults.
 * Default (defo_default_motion_def): at rest (zero velocity, angular_speed
 * 0, axis +z, pivot 0, no skeleton). */
typedef struct defo_motion_def {
    double velocity[3];     /* [m/s] */
    double pivot[3];        /* rotation centre at t = 0, frame = world at t = 0 [m] */
    double angular_axis[3]; /* need not be unit (normalised); nonzero when angular_speed != 0 */
    double angular_speed;   /* [rad/s] */
    const defo_skeleton *skeleton; /* borrowed (must outlive every user); NULL: scripted */
    int bone;                      /* with skeleton: its bone index; default −1 */
} defo_motion_def;
DEFO_API defo_motion_def defo_default_motion_def(void);

/* Every value finite, angular_axis nonzero when angular_speed != 0; with a
 * skeleton, a bone in range and the scripted fields at their defaults.
 * DEFO_ERR_INVALID_ARGUMENT otherwise, the message starting with what (e.g.
 * "colliders[2].motion"; NULL: "motion") and naming the field. */
DEFO_API defo_status defo_motion_validate(const defo_motion_def *m, const char *what);

/* The motion frozen at one time t: everything the maps below need, computed
 * once (one rotation, no trigonometry per point). */
typedef struct defo_motion_pose {
    double t;           /* [s] */
    double R[9];        /* R(t), row-major; exactly the identity when angular_speed·t = 0 */
    double pivot[3];    /* pivot at t = 0 (frame) [m]; a bone: 0 */
    double velocity[3]; /* [m/s]; a bone: Ṫ_b */
    double omega[3];    /* angular velocity ω [rad/s] */
    double pivot_t[3];  /* pivot(t) = pivot + velocity·t (world) [m]; a bone: T_b */
    int bone;           /* 1: a bone's pose, x = R p + pivot_t */
} defo_motion_pose;

/* The only place a defo_motion_def is evaluated: *pose (not NULL) is the
 * motion at time t.  m should be valid (defo_motion_validate); a zero axis
 * gives no rotation. */
DEFO_API void defo_motion_pose_at(const defo_motion_def *m, double t, defo_motion_pose *pose);
/* Frame point p -> world position x = R (p − pivot) + pivot + velocity·t and
 * velocity v there (defo_motion_pose_velocity); x or v may be NULL. */
DEFO_API void defo_motion_pose_map(const defo_motion_pose *pose, const double p[3], double x[3],
                                   double v[3]);
/* World point x -> frame point p = Rᵀ (x − pivot(t)) + pivot. */
DEFO_API void defo_motion_pose_unmap(const defo_motion_pose *pose, const double x[3], double p[3]);
/* Rigid velocity at world point x: velocity + ω × (x − pivot(t)). */
DEFO_API void defo_motion_pose_velocity(const defo_motion_pose *pose, const double x[3],
                                        double v[3]);

/* One point: x(t) and v(t) of frame point p (either output may be NULL). */
DEFO_API void defo_motion_eval(const defo_motion_def *m, double t, const double p[3], double x[3],
                               double v[3]);
/* R(t), row-major. */
DEFO_API void defo_motion_rotation(const defo_motion_def *m, double t, double R[9]);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_GEOMETRY_H */
