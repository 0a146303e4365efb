/*
 * defo/element.h — the element layer: what every kernel needs to know about an
 * element kind, and nothing about materials or time (docs/architecture.md
 * "Adding an element kind").  One ops table per kind:
 *
 *   tet4   linear tetrahedron, 4 nodes (ITF04 §3);
 *   tet10  quadratic tetrahedron, 10 nodes in VTK order — corners 0..3, then the
 *          edge nodes of (0,1) (1,2) (0,2) (0,3) (1,3) (2,3) (MTPS08 §4.1);
 *   tri3   a triangle of a shell or cloth (ITF04 §8), 3 nodes; its one face
 *          is the triangle itself.  Reference coordinates ξ = (λ1, λ2) and a
 *          third direction along the unit normal N̂: dX/dξ = [X1 − X0,
 *          X2 − X0, N̂], det J = 2A.  Thickness and bending are the force
 *          model's (defo/force_model.h); here a triangle is a surface, its
 *          measure an area.
 *
 * Reference element: barycentric coordinates λ0..λ3 (Σ = 1) with the
 * reference coordinates ξ = (λ1, λ2, λ3) on the unit tetrahedron of volume
 * 1/6.  Shape functions: tet4 N_a = λ_a; tet10 corners N_a = λ_a(2λ_a − 1),
 * edge (a,b) N = 4 λ_a λ_b.  Gradients are with respect to ξ:
 * ∂N/∂ξ_k = ∂N/∂λ_k − ∂N/∂λ_0.
 *
 * Quadrature rules (weights are fractions of the reference volume, Σ = 1):
 *   stiffness  tet4: the centroid (exact: F is constant); tet10: the 4-point
 *              rule of MTPS08 §4.2, permutations of (a, b, b, b) with
 *              a = 1/4 + 3√5/20, b = 1/4 − √5/20, weights 1/4 (degree 2);
 *   mass       exact for N_a N_b det J: tet4 degree 2 (4 points); tet10
 *              degree 7 (64-point conical product: N_a N_b is quartic and
 *              det J of a curved element cubic);
 *   face       on the reference triangle, degree 7 (16-point conical
 *              product), for traction loads on 3- and 6-node faces.
 *
 * Rest data per quadrature point (defo_element_rest): J⁻¹ = (dX/dξ)⁻¹ and the
 * volume weight w = ω_q det J / 6, so that at a deformed state x the
 * deformation gradient is F = (Σ_a x_a ∇ξN_aᵀ) J⁻¹ and a first Piola–
 * Kirchhoff stress P gives the nodal forces f_a = −Σ_q w_q P J⁻ᵀ ∇ξN_a.  For
 * tet4 this is exactly ITF04 §3: J = Dm, F = Ds Dm⁻¹, f_a = P Bm e_a with
 * Bm = −V Dm⁻ᵀ.
 *
 * Units: SI (m, kg).  Every function reads the mesh only.
 */
#ifndef DEFO_ELEMENT_H
#define DEFO_ELEMENT_H

#include "defo/base.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum defo_element_kind {
    DEFO_ELEMENT_TET4 = 0,
    DEFO_ELEMENT_TET10 = 1,
    DEFO_ELEMENT_TRI3 = 2 /* shells and cloth (ITF04 §8) */
} defo_element_kind;

#define DEFO_ELEMENT_MAX_NODES  10 /* nodes of the largest element kind */
#define DEFO_ELEMENT_MAX_POINTS 4  /* points of the largest stiffness rule */

/* A quadrature rule with its shape functions and gradients tabulated at the
 * points (read-only, static storage). */
typedef struct defo_quadrature {
    int num_points;
    int degree;           /* exact for polynomials of this total degree in ξ */
    const double *point;  /* barycentric λ0..λ3, 4 per point (3 on faces) */
    const double *weight; /* fractions of the reference measure, Σ = 1 */
    const double *shape;  /* N_a at each point, `nodes` per point (faces: face nodes) */
    const double *grad;   /* ∂N_a/∂ξ_k, 3 per node per point, row (a, k) (NULL on faces) */
} defo_quadrature;

typedef struct defo_element_ops {
    defo_element_kind kind;
    const char *name; /* "tet4", "tet10" */
    int order;        /* polynomial order: 1 or 2 */
    int nodes;        /* nodes per element: 4 or 10 */
    int corners;      /* 4 */
    int num_faces;    /* 4: face f is opposite corner f */
    int face_nodes;   /* 3 or 6 */
    /* num_faces × face_nodes local node indices: corners counter-clockwise
     * seen from outside, then (6-node) the edge nodes of (c0,c1) (c1,c2) (c2,c0) */
    const int *face;
    defo_quadrature stiffness; /* rules above */
    defo_quadrature mass;
    defo_quadrature face_rule; /* points on the reference triangle, shape of the face nodes */
    /* N_a(λ) for every node (nodes values) and ∂N_a/∂ξ (3 per node). */
    void (*shape)(const double bary[4], double *N);
    void (*shape_grad)(const double bary[4], double *dN);
} defo_element_ops;

/* The ops table of a kind; NULL (and an error message) for an unknown one. */
DEFO_API const defo_element_ops *defo_element_ops_of(defo_element_kind kind);
/* The ops table of a mesh's elements: tet4 (order 1), tet10 (order 2) or
 * tri3 (a shell mesh: order 1, 3 nodes per element); NULL with
 * DEFO_ERR_INVALID_ARGUMENT's message for a mesh without elements. */
DEFO_API const defo_element_ops *defo_element_ops_for_mesh(const defo_mesh *mesh);

/* dX/dξ of element nodes v at positions x (3 per node) at bary (row-major
 * 3×3: column k is Σ_a x_a ∂N_a/∂ξ_k; tri3: the third column is the unit
 * normal, zero for a degenerate triangle). */
DEFO_API void defo_element_jacobian(const defo_element_ops *ops, const double *x,
                                    const defo_index *v, const double bary[4], double J[9]);

/* ------------------------------------------------------------ rest data */
typedef struct defo_element_rest defo_element_rest;

/* Rest data of every element of mesh at its rest positions mesh->x, at the
 * points of its stiffness rule.  An element whose det J is not positive at
 * a quadrature point or at a corner — relative to its size: det J ≤ 1e-12
 * L³ with L the longest corner edge (tri3: 1e-12 L², a zero area) — is
 * DEFO_ERR_INVALID_MESH naming the element ("inverted" or "degenerate");
 * run defo_mesh_orient first. */
DEFO_API defo_status defo_element_rest_create(const defo_mesh *mesh, defo_element_rest **out);
DEFO_API void defo_element_rest_destroy(defo_element_rest *rest);
DEFO_API const defo_element_ops *defo_element_rest_ops(const defo_element_rest *rest);
DEFO_API defo_index defo_element_rest_num_elems(const defo_element_rest *rest);
/* J⁻¹ = (dX/dξ)⁻¹, 9 per (element, point), row-major, element-major. */
DEFO_API const double *defo_element_rest_jinv(const defo_element_rest *rest);
/* Volume weights w = ω_q det J / 6 [m³], 1 per (element, point); tri3:
 * the area w = det J / 2 [m²]. */
DEFO_API const double *defo_element_rest_weight(const defo_element_rest *rest);
/* Exact rest volume per element [m³] (tet10: with the mass rule, exact for
 * curved elements; tri3: the area [m²]). */
DEFO_API const double *defo_element_rest_volume(const defo_element_rest *rest);
/* The eigenvalue length ℓ of each element [m]: with the element's lumped
 * masses m (defo_element_lumped_mass's shares, density ρ) and K_ab =
 * Σ_q w_q ∇N_a·∇N_b, γ = λmax(m^{-1/2} K m^{-1/2}) per unit density and
 * ℓ = 4/√γ.  Where the tangent dP/dF has no eigenvalue above β in magnitude,
 * the element's stiffness is at most β K ⊗ I, so its highest frequency is
 * ω_e ≤ √(βγ/ρ), and the whole lumped-mass system's is at most the largest
 * ω_e (the element eigenvalue inequality: Rayleigh quotients of sums).  With
 * the dilatational speed c = √((λ+2μ)/ρ) and r = β/(λ+2μ), half of ℓ/(c√r)
 * is 2/ω_e's bound — the explicit step's stability limit (force_model.h).
 * tet4: 2/√λmax(Σ_a ∇N_a∇N_aᵀ). */
DEFO_API const double *defo_element_rest_eigen_length(const defo_element_rest *rest);
/* tri3 (ITF04 §8): each triangle's 2-D rest frame, 10 values per element —
 * the unit axes b1 (along X1 − X0) and b2 = N̂ × b1 in its plane, then Dm⁻¹
 * (2×2, row-major) with Dm = Bᵀ [X1 − X0, X2 − X0], B = [b1 b2] — so the
 * 3×2 deformation gradient at x is F = [x1 − x0, x2 − x0] Dm⁻¹.  NULL for
 * tetrahedra. */
DEFO_API const double *defo_element_rest_frame(const defo_element_rest *rest);
/* Fibre directions (ITF04 §6.1 transversely isotropic materials): a unit
 * vector in rest space per stiffness point, 3 per (element, point),
 * element-major (defo/fibre.h builds them from constants, cell or node data
 * and lines of action).  dir is copied and normalised; a non-finite or zero
 * vector is DEFO_ERR_INVALID_ARGUMENT naming the element and point, and the
 * rest data keeps what it had.  NULL removes them. */
DEFO_API defo_status defo_element_rest_set_fibres(defo_element_rest *rest, const double *dir);
/* The unit fibre directions (3 per point), or NULL when none were set. */
DEFO_API const double *defo_element_rest_fibres(const defo_element_rest *rest);
/* Bytes held. */
DEFO_API size_t defo_element_rest_bytes(const defo_element_rest *rest);

/* ------------------------------------------------------------ mass */
/* Lumped nodal masses [kg] (num_nodes values, overwritten) from one density
 * [kg/m³] (density_per_elem NULL) or one per element.  tri3: the density is
 * per unit area [kg/m²] (ρ times the thickness) and each corner gets ρA/3.
 * tet4: ρV/4 per corner.  tet10: HRZ lumping (Hinton, Rock, Zienkiewicz 1976) — the
 * diagonal of the element's consistent mass scaled so its total is ρV (for a
 * straight element: corners ρV/36, edge nodes 4ρV/27; all positive, where
 * row sums would give negative corner masses).  Curved tet10 elements use
 * their exact consistent diagonal.  Nodes in no element get 0. */
DEFO_API defo_status defo_element_lumped_mass(const defo_mesh *mesh, double density,
                                              const double *density_per_elem, double *mass);
/* Consistent mass matrix of element e, Me_ab = ∫ ρ N_a N_b dV (nodes² values,
 * row-major; the 3-vector mass is Me ⊗ I₃), integrated exactly (tri3: ρ per
 * area, ρA(1 + δ_ab)/12). */
DEFO_API defo_status defo_element_mass_matrix(const defo_mesh *mesh, defo_index e, double density,
                                              double *Me);

/* ------------------------------------------------------------ volumes, quality */
/* Total signed volume [m³] at positions x (3 per node; NULL: rest), curved
 * tet10 elements integrated exactly (det J is cubic; the mass rule is exact
 * for it).  tri3: the total area [m²]. */
DEFO_API defo_status defo_element_volume(const defo_mesh *mesh, const double *x, double *volume);
/* Jacobian quality of every element at positions x (NULL: rest): the
 * smallest det J over the corners, edge nodes, stiffness points and centroid,
 * divided by det J of the straight element through its corners (1 for a
 * straight tet10 and for every tet4; ≤ 0 means the curved map folds; a flat
 * or inverted corner tetrahedron gives −INFINITY; tri3: 1, or −INFINITY for
 * a zero area).  quality: num_elems values
 * (may be NULL); *worst (may be NULL) the smallest, *worst_elem its element. */
DEFO_API defo_status defo_element_jacobian_quality(const defo_mesh *mesh, const double *x,
                                                   double *quality, double *worst,
                                                   defo_index *worst_elem);

/* How the map of each element stands at positions x (NULL: rest) — the one
 * definition the world's counts, the run's stats and the pictures share:
 *   DEFO_FOLD_INVERTED  det J ≤ 0 at a stiffness point: what the forces
 *                       see (ITF04 §5; det F ≤ 0 there on a valid rest mesh);
 *   DEFO_FOLD_BETWEEN   a curved tet10 whose det J is positive at every
 *                       stiffness point but ≤ 0 at a corner, an edge
 *                       midpoint or the centroid: the map folds where no
 *                       quadrature point sees it, so no force unfolds it;
 *   DEFO_FOLD_NONE      neither.
 * tri3: a triangle without area (det ≤ 1e-12 L²) is INVERTED; a shell
 * cannot invert otherwise (ITF04 §8).  state: num_elems values (may be
 * NULL); inverted, folded (may be NULL): the counts. */
enum { DEFO_FOLD_NONE = 0, DEFO_FOLD_INVERTED = 1, DEFO_FOLD_BETWEEN = 2 };
DEFO_API defo_status defo_element_fold_state(const defo_mesh *mesh, const double *x,
                                             unsigned char *state, defo_index *inverted,
                                             defo_index *folded);

/* ------------------------------------------------------------ loads */
/* Consistent dead load of a constant traction t [Pa] on the boundary faces
 * (rest positions) whose corner nodes are all marked (mark: num_nodes flags):
 * f_a += ∫ N_a t dA over each such face, added to f (3 per node).  A 3-node
 * face puts t·A/3 on each corner; a straight 6-node face puts nothing on its
 * corners and t·A/3 on each edge node; curved 6-node faces are integrated
 * with the face rule.  The loaded area in *area (may be NULL). */
DEFO_API defo_status defo_element_traction_load(const defo_mesh *mesh, const unsigned char *mark,
                                                const double t[3], double *f, double *area);
/* The same over listed element faces (element e, local face lf as in
 * defo_tet_faces; a tet10 face with its edge nodes), whatever the mesh's
 * boundary is now: a fracturing body keeps loading the faces it was loaded
 * on, not the crack faces its splits open. */
DEFO_API defo_status defo_element_face_load(const defo_mesh *mesh, const defo_index *elems,
                                            const int8_t *local_faces, defo_index count,
                                            const double t[3], double *f, double *area);

/* ------------------------------------------------------------ embedding */
/* Reference coordinates of point p in element e at positions x (NULL:
 * rest): barycentric λ (4 values, Σ = 1; extrapolated outside the element).
 * tri3: those of p's closest point in the triangle's plane (λ3 = 0): the
 * embedding weights of a point on a shell.
 * tet4: the affine inverse.  tet10: Newton's method on the quadratic map from
 * the corners' affine guess (MTPS08 §6.2), at most 20 iterations to 1e-13
 * of the element size; *converged (may be NULL) says whether it got there. */
DEFO_API defo_status defo_element_locate(const defo_mesh *mesh, const double *x, defo_index e,
                                         const double p[3], double bary[4], int *converged);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_ELEMENT_H */
