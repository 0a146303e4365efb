/*
 * defo/contact.h — penalty contact with rigid implicit surfaces (TSIF05 §10).
 *
 * A contact SOURCE is anything that can tell, at a world point x and time t,
 * its signed distance φ (negative inside), ∇φ and ∇²φ.  Two kinds exist:
 *   - a rigid collider of defo/collision.h (union of exact shapes with
 *     scripted motion; ∇²φ by central differences of its normal), and
 *   - a signed-distance GRID sampled from a closed triangle surface
 *     (defo_surface_sdf of defo/geometry.h), trilinearly interpolated and
 *     moved rigidly by a defo_motion_def.
 * Deformable–deformable and self contact (TSIF05 §10, material-space level
 * sets found through a BVH) will be a third kind whose φ comes from another
 * body's deformed mesh; such a source couples the node to the nodes of the
 * tetrahedron it falls in, so defo_penalty_eval reports contacts as a list of
 * (node, block) pairs in the node-diagonal case today and will add
 * off-diagonal pairs then — callers add the blocks, they never assume the
 * source kind.
 *
 * Penalty (TSIF05 §10) per node inside a source:
 *     ψ = k φ² / 2,   f = −k φ ∇φ,   ∂²ψ/∂x² = k (∇φ ∇φᵀ + φ ∇²φ),
 * where the curvature term φ∇²φ is replaced by its positive semidefinite
 * part (its negative eigenvalues dropped), which, as TSIF05 §10 notes for the
 * element stiffness, changes the Newton path and never the equilibrium.
 *
 * Units: SI.  The penalty stiffness k is per node [N/m].
 */
#ifndef DEFO_CONTACT_H
#define DEFO_CONTACT_H

#include "defo/base.h"
#include "defo/collision.h"
#include "defo/geometry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------- signed-distance grid */
typedef struct defo_sdf_grid defo_sdf_grid;

typedef struct defo_sdf_grid_def {
    /* Grid spacing [m]; <= 0 (default): the largest extent of the surface's
     * bounding box / 64. */
    double cell_size;
    /* Cells added around the bounding box on every side, >= 1; default 3. */
    int padding;
    /* Rigid motion of the grid's frame (defo/geometry.h, as for colliders:
     * x(t) = R(t)(p − pivot) + pivot + velocity·t).  Default: at rest. */
    defo_motion_def motion;
} defo_sdf_grid_def;
DEFO_API defo_sdf_grid_def defo_default_sdf_grid_def(void);

/* Sample sdf at the nodes of a regular grid over its bounding box (+padding).
 * Errors: bad def (DEFO_ERR_INVALID_ARGUMENT naming the field), more than
 * 2^31 samples, out of memory.  The sdf may be destroyed afterwards. */
DEFO_API defo_status defo_sdf_grid_create(const defo_surface_sdf *sdf, const defo_sdf_grid_def *def,
                                          defo_sdf_grid **out);
DEFO_API void defo_sdf_grid_destroy(defo_sdf_grid *grid);
/* Samples per axis and the grid spacing [m]. */
DEFO_API void defo_sdf_grid_dims(const defo_sdf_grid *grid, int dims[3], double *cell_size);

/* φ at world point x and time t (trilinear; outside the grid: the value at
 * the nearest grid point plus the distance to it, a lower bound that keeps
 * far points outside).  grad (∇φ of the interpolant) and hess (9, row-major,
 * the interpolant's second derivatives; the diagonal of a trilinear function
 * is zero) may be NULL.  Thread-safe. */
DEFO_API double defo_sdf_grid_phi(const defo_sdf_grid *grid, double t, const double x[3],
                                  double grad[3], double hess[9]);

/* ------------------------------------------------------------ sources */
typedef enum defo_contact_kind {
    DEFO_CONTACT_COLLIDER = 0, /* rigid collider (defo/collision.h) */
    DEFO_CONTACT_SDF_GRID = 1  /* rigid signed-distance grid */
} defo_contact_kind;

typedef struct defo_contact_source {
    defo_contact_kind kind;
    const defo_collider *collider; /* DEFO_CONTACT_COLLIDER (borrowed) */
    const defo_sdf_grid *grid;     /* DEFO_CONTACT_SDF_GRID (borrowed) */
    double stiffness;              /* penalty k per node [N/m], > 0 */
    /* 1 (default in defo_contact_from_*): include the PSD part of φ∇²φ in the
     * stiffness; 0: Gauss–Newton term k∇φ∇φᵀ only. */
    int curvature;
} defo_contact_source;

DEFO_API defo_contact_source defo_contact_from_collider(const defo_collider *c, double stiffness);
DEFO_API defo_contact_source defo_contact_from_grid(const defo_sdf_grid *g, double stiffness);

/* φ, ∇φ (may be NULL) and ∇²φ (9, may be NULL) of one source at x, time t. */
DEFO_API double defo_contact_phi(const defo_contact_source *src, double t, const double x[3],
                                 double grad[3], double hess[9]);

/* Penalty over n nodes at positions x (3n), time t:
 *   energy  Σ k φ²/2 over penetrating (node, source) pairs (may be NULL),
 *   force   3n, the penalty forces are ADDED (may be NULL),
 *   block   9n, overwritten: the node-diagonal stiffness blocks
 *           k(∇φ∇φᵀ + PSD(φ∇²φ)) summed over sources (may be NULL),
 *   count   number of penetrating (node, source) pairs (may be NULL),
 *   capped  number of (node, collider) pairs held by separation_speed (may
 *           be NULL; 0 without x_start).
 * skip (n, may be NULL): nodes with skip[i] != 0 are ignored (prescribed).
 * x_start (3n, may be NULL): the positions at the start of a step of dt
 * ending at t; a node already inside a collider there is penalised only for
 * the depth beyond max(0, depth at the start − separation_speed · dt) — φ is
 * shifted by that much — so a body that starts inside comes out no faster
 * than the response lets it (defo_collision_respond).  NULL: every
 * penetration is penalised in full (the equilibrium solvers).
 * work: n doubles of scratch (per-node energies, summed in a fixed order).
 * Parallel over nodes, bitwise identical for any thread count.  A
 * non-finite φ is DEFO_ERR_NUMERICAL naming the node. */
DEFO_API defo_status defo_penalty_eval(const defo_contact_source *src, int num_sources, double t,
                                       defo_index n, const double *x, const unsigned char *skip,
                                       const double *x_start, double dt, double *energy,
                                       double *force, double *block, defo_index *count,
                                       defo_index *capped, double *work);

/* ============================================= contact between bodies
 * Contact between deformable bodies and of a body with itself (ITF04 §9–10,
 * TSIF05 §10, MMDJ01 §2.8), on each body's boundary: the triangles of its
 * boundary faces (tet10 faces as the 4 flat triangles of defo_tri6_split,
 * which every picture draws), their edges and their vertices (surface nodes).
 *
 * Every pair is a vertex and a triangle, or two edges, with a distance φ and
 * its gradient
 *     ∇φ = Σ wₐ eₐ ⊗ n   (exact, by the envelope theorem),
 * wₐ = (1, −b₀, −b₁, −b₂) for a vertex p and the barycentric weights bᵢ of
 * its closest point q on the triangle, (1 − s, s, −(1 − t), −t) for two
 * edges' closest points, n the unit direction from q to p.  Σ wₐ = 0, so
 * whatever acts along n through a pair moves no centre of mass, and since n
 * is parallel to p − q it exerts no moment either.
 *
 * Two kinds of pair, for two kinds of response:
 *   barrier pairs (the Newton solves; after IPC, Li et al. 2020): every
 *     vertex–triangle pair closer than the thickness δ (a vertex of each
 *     surface against the triangles of the other: no edge–edge pairs, whose
 *     distance is not differentiable where the edges turn parallel), with
 *     the unsigned distance φ = |p − q| > 0 and the energy
 *         ψ = k δ² b(φ/δ),  b(u) = −(u − 1)² ln u  (0 < u < 1),
 *     zero with its first two derivatives at φ = δ and unbounded as φ → 0,
 *     so any impact is stopped short of the surface.  Its Hessian is taken
 *     as ψ''(φ) ∇φ∇φᵀ (Gauss–Newton; b'' > 0: positive semidefinite, TSIF05
 *     §8).  A Newton step is first cut by conservative advancement (additive
 *     CCD, Li et al. 2021) so no pair's distance falls to zero along it:
 *     surfaces never pass through each other in a solve;
 *   signed pairs (the explicit response, and vertices found inside another
 *     closed surface at a solve's start — bodies placed overlapping): the
 *     vertex against the closest point of the other surface within `reach`,
 *     φ = ±|p − q| signed by the pseudo-normal n̂ of the feature holding q
 *     (face normal, the sum of an edge's two face normals, the
 *     angle-weighted normal of a vertex; Bærentzen & Aanæs 2005), so a
 *     vertex inside is pushed back out, never further in; edges are signed
 *     by both edges' pseudo-normals, (p₁ − p₂)·(n̂₂ − n̂₁).  Their penalty is
 *     ½ k (δ − φ)² (φ shifted by a depth held back by a separation speed)
 *     and the impulses push them apart to δ.
 * A two-sided surface (a shell) has no inside: its pairs are unsigned.
 *
 * Self contact excludes what touches at rest: a vertex and a triangle that
 * share a node or lie within 2·reach of each other in the rest shape, two
 * edges likewise — so adjacent triangles never repel.
 *
 * Determinism: detection is parallel over vertices with per-vertex results
 * gathered in order; pairs come in a fixed order; sums in pair order. */
typedef struct defo_contact_surface defo_contact_surface;

typedef struct defo_contact_surface_def {
    double thickness; /* δ [m], > 0: pairs closer than this repel */
    /* [m], >= thickness: how far from the surface (inside it, for a signed
     * one) a vertex is still paired with it; default 0: one mean edge */
    double reach;
    int two_sided;    /* 1: unsigned distance (open surfaces, shells); default 0 */
    int self_contact; /* 1: pairs within the surface itself; default 0 */
} defo_contact_surface_def;
DEFO_API defo_contact_surface_def defo_default_contact_surface_def(void);

/* The boundary of a tet4 or tet10 mesh (or the triangles of a shell mesh or
 * of a mesh with no elements, two-sided), in rest positions.  The mesh is not kept.  A mesh
 * whose boundary has no triangle is DEFO_ERR_INVALID_MESH. */
DEFO_API defo_status defo_contact_surface_create(const defo_mesh *mesh,
                                                 const defo_contact_surface_def *def,
                                                 defo_contact_surface **out);
DEFO_API void defo_contact_surface_destroy(defo_contact_surface *s);
/* Move to node positions x (3 per node of the mesh): hierarchies refit,
 * pseudo-normals recomputed.  Non-finite positions: DEFO_ERR_NUMERICAL. */
DEFO_API defo_status defo_contact_surface_update(defo_contact_surface *s, const double *x);
/* Move to x lazily: only the box (defo_contact_surface_bounds) follows now;
 * the normals and hierarchies follow when a detection (defo_contact_find,
 * _classify, _inside, _step_bound) first finds this surface's box meeting
 * another's, so a body far from every other costs O(its vertices) per
 * detection and results equal those after defo_contact_surface_update bit
 * for bit.  x is borrowed: it must hold the same positions until that
 * detection.  Non-finite positions: DEFO_ERR_NUMERICAL. */
DEFO_API defo_status defo_contact_surface_move(defo_contact_surface *s, const double *x);
/* Counts (triangles, edges, vertices) and the mean edge length at rest. */
DEFO_API void defo_contact_surface_info(const defo_contact_surface *s, defo_index *triangles,
                                        defo_index *edges, defo_index *vertices, double *mean_edge);
/* The bounding box of the last update, grown by the reach (6 doubles). */
DEFO_API void defo_contact_surface_bounds(const defo_contact_surface *s, double box[6]);
/* The triangles (3 node indices each; num from defo_contact_surface_info). */
DEFO_API const defo_index *defo_contact_surface_triangles(const defo_contact_surface *s);

/* One contact pair (above).  side[a] says whose node node[a] is: 0 the first
 * surface (the vertex, or the first edge), 1 the second. */
typedef struct defo_contact_pair {
    int32_t surface[2]; /* indices into the surfaces of the call */
    int32_t kind;       /* 0 vertex–triangle, 1 edge–edge */
    int32_t side[4];
    defo_index node[4];
    double w[4];
    double n[3];     /* unit; ∇φ = Σ wₐ eₐ ⊗ n */
    double phi;      /* signed distance [m] */
    double delta;    /* the pair's thickness [m] */
    double k;        /* penalty stiffness [N/m] */
    double mu;       /* Coulomb coefficient */
    double kept;     /* depth held back by a separation speed [m] (0: none) */
    defo_index id;   /* the vertex or first edge within its surface, for messages */
    int32_t barrier; /* 1: a barrier pair (unsigned, the Newton solves); 0: signed */
} defo_contact_pair;

/* A growable list of pairs (capacity kept between calls: warm steps do not
 * allocate). */
typedef struct defo_contact_list {
    defo_contact_pair *pairs;
    size_t count, capacity;
    /* the broad phase's scratch (sorted boxes, pairs of surfaces), kept
     * between calls; zero-initialise with the rest, freed with the list */
    void *broad;
    size_t broad_capacity;
} defo_contact_list;
DEFO_API void defo_contact_list_free(defo_contact_list *list);

/* Per-surface settings of one detection. */
typedef struct defo_contact_body {
    defo_contact_surface *surface; /* updated to x */
    const double *x;               /* its positions (3 per node) */
    double stiffness;              /* penalty k [N/m] of its nodes; a pair takes the smaller */
    double friction;               /* μ >= 0; a pair takes √(μ₁μ₂) */
    /* 1: held where it is — paired only with bodies that are not obstacles
     * (a body of another integrator during this one's step) */
    int obstacle;
} defo_contact_body;

/* Which pairs defo_contact_find looks for. */
typedef enum defo_contact_mode {
    DEFO_CONTACT_SIGNED = 0, /* each vertex's closest point of every other surface; edges */
    DEFO_CONTACT_BARRIER = 1 /* barrier pairs, and signed pairs of the vertices marked inside */
} defo_contact_mode;

/* Mark the vertices of every surface that lie inside another closed
 * surface (or its own, with self contact) within its reach, at the bodies'
 * positions: what a Newton solve treats as placed overlapping (signed
 * pairs) for its whole course.  Kept by each surface until the next call. */
DEFO_API defo_status defo_contact_classify(const defo_contact_body *bodies, int count);
/* Unmark every vertex (nothing overlaps). */
DEFO_API void defo_contact_unclassify(const defo_contact_body *bodies, int count);

/* Every active pair among the bodies (each pair of distinct surfaces both
 * ways for vertices, once for edges; a surface with itself when it has self
 * contact), in a fixed order.  Signed pairs deeper than the reach are not
 * found.  Bodies must be the same, in the same order, as at the last
 * classification (BARRIER mode).  Appends nothing on error. */
DEFO_API defo_status defo_contact_find(const defo_contact_body *bodies, int count,
                                       defo_contact_mode mode, defo_contact_list *out);

/* How the vertices of a lie inside b's closed surface (b's signed distance
 * over its whole box, not only within the reach): *count vertices deeper
 * than tolerance [m], the deepest one's node and depth.  A two-sided b has
 * no inside: *count = 0. */
DEFO_API defo_status defo_contact_inside(const defo_contact_body *a, const defo_contact_body *b,
                                         double tolerance, defo_index *count,
                                         defo_index *deepest_node, double *depth);

/* Energy of the pairs at the positions of bodies[] (each pair's φ
 * recomputed from its nodes with its normal and weights kept — the
 * linearisation of the detection, exact where it was detected): barrier
 * pairs k δ² b(φ/δ) (+∞ at φ <= 0), signed pairs ½ k (δ − φ − kept)²
 * (added to *energy, may be NULL); forces −∇E added to force[b] (3 per node
 * of body b; NULL entries skipped); hess[i] (may be NULL) the pair's ψ''(φ),
 * 0 when inactive.  *depth (may be NULL): the largest −φ of a signed pair
 * (0 when none penetrates). */
DEFO_API void defo_contact_penalty(const defo_contact_pair *pairs, size_t count,
                                   const double *const *x, double *energy, double *const *force,
                                   double *hess, double *depth);

/* What the Gauss–Newton term ψ'' n nᵀ of a barrier pair leaves out, for the
 * exact tangent near a solution: ψ'(φ) times the curvature of the distance
 * where it grows as 1/φ — a vertex nearest to a vertex, (I − n nᵀ)/φ, or
 * to an edge of direction t, (I − n nᵀ − t tᵀ)/φ (sliding along the edge
 * keeps the distance) — added to S (3×3, row-major; the pair's blocks are
 * wₐ w_b S).  Negative semidefinite (ψ' < 0): the barrier's pull along a
 * round feature.  The terms of a triangle's or an edge's turning, bounded
 * as φ → 0, are left out; a signed or inactive pair, or one nearest to a
 * triangle's inside, adds nothing. */
DEFO_API void defo_contact_pair_curvature(const defo_contact_pair *pair, const double *const *x,
                                          double S[9]);

/* The explicit steppers' response to the pairs at positions x[b] with
 * velocities v[b] (both changed in place), inverse lumped masses inv_mass[b]
 * (0 for prescribed nodes): Jacobi sweeps, at most `sweeps`, each computing
 * every pair's impulses from the same state — pushed back to its surface
 * (φ with the pair's kept offset reaching 0) when positions is 1, its
 * approaching normal velocity removed, Coulomb friction applied over the
 * friction time tau (the tangential impulse at most μ times the normal one,
 * the position's included as Δφ/τ) — and applying each scaled by the
 * inverse of the largest number of pairs at its nodes, so no node is
 * corrected more than once over.  With positions and x_start[b] (the
 * positions at the step's start; NULL: none), the pair's relative
 * tangential displacement over the step is reduced too, by at most μ times
 * its normal push (positional Coulomb friction).  No pair goes before
 * another: bodies placed as mirror images stay mirror images.  Impulses are
 * equal and opposite through the weights: linear momentum is kept to
 * rounding.  When `sweeps` sweeps leave a pair approaching or through its
 * surface, up to `sweeps` more act on the normal only (each pushes pairs
 * apart; the friction already applied stays within its bound).
 * node_work[b]: scratch of the body's node count; pair_work: 17·count
 * doubles.  The sweeps stop once settled: no pair through its surface by
 * more than 1e-5 of its thickness δ, none approaching faster than 1e-5 δ per
 * tau.  Returns the pairs that did not settle (0: settled). */
DEFO_API size_t defo_contact_respond(const defo_contact_pair *pairs, size_t count, double *const *x,
                                     const double *const *x_start, double *const *v,
                                     const double *const *inv_mass, double tau, int positions,
                                     int sweeps, double *const *node_work, double *pair_work);

/* Coulomb friction of a Newton solve, lagged from its start (after IPC, Li
 * et al. 2020 §5): each pair in contact at the start keeps its normal force
 * λ, tangent plane T (3×2, orthonormal columns ⟂ n) and weights; over the
 * solve the relative tangential slip u = Tᵀ Σ wₐ (xₐ − xₐ⁰) dissipates
 *     D = μ λ f₀(|u|),   f₀(y) = y for y >= ε, −y³/(3ε²) + y²/ε + ε/3 below,
 * Coulomb's law with a static zone |u| < ε smoothed so D is C¹; its Hessian
 * μ λ T [f₁' ûûᵀ + (f₁/y)(I − ûûᵀ)] Tᵀ (f₁ = f₀') is positive semidefinite. */
typedef struct defo_contact_friction {
    int32_t surface[2];
    int32_t side[4];
    defo_index node[4];
    double w[4];
    double T[6];  /* the tangent plane: two columns, row-major 3×2 */
    double r0[3]; /* Σ wₐ xₐ⁰ */
    double force; /* λ [N] */
    double mu;    /* Coulomb coefficient */
    double eps;   /* ε [m] */
} defo_contact_friction;

/* Friction of the pairs at positions x (each pair with φ below its
 * thickness and μ > 0), its static zone ε = eps_rel times the pair's
 * thickness, appended to *out (count and capacity in *num, *cap; grown with
 * the library allocator). */
DEFO_API defo_status defo_contact_friction_lag(const defo_contact_pair *pairs, size_t count,
                                               const double *const *x, double eps_rel,
                                               defo_contact_friction **out, size_t *num,
                                               size_t *cap);
/* D at positions x added to *energy (may be NULL), −∇D added to force[b]
 * (NULL entries skipped), each pair's S (9 doubles, row-major) into S (may
 * be NULL). */
DEFO_API void defo_contact_friction_eval(const defo_contact_friction *f, size_t count,
                                         const double *const *x, double *energy,
                                         double *const *force, double *S);

/* The largest α in (0, 1] such that moving every body b from x[b] by α·dx[b]
 * (NULL dx: not moving) keeps every vertex–triangle distance (and edge–edge
 * distance where a surface is two-sided) above a tenth of its current value
 * (additive CCD, Li et al. 2021): no vertex passes through a surface.
 * Vertices marked inside (classified) are left out.  Surfaces must be
 * updated to x. */
DEFO_API double defo_contact_step_bound(const defo_contact_body *bodies, int count,
                                        const double *const *dx);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_CONTACT_H */
