/*
 * defo/fibre.h — fibre direction fields of transversely isotropic bodies
 * (ITF04 §6.1, TSIF05 §11): a unit rest-space direction a per stiffness
 * point of every element, the input of the material's fibre term
 * (defo_fibre_def in defo/material.h) through the element rest data
 * (defo_element_rest_set_fibres) or a body definition (defo/world.h).
 *
 * Every builder writes 3 values per (element, point) of the mesh's element
 * kind — tet4 one point per element, tet10 the four points of its
 * stiffness rule (defo/element.h) — element-major, unit length.  A fibre is
 * an axis, not an arrow (ψ depends on |F a| only): a and −a are the same
 * fibre, which lets node data whose neighbours point opposite ways be
 * interpolated (each element's node vectors are first turned to agree with
 * its first node's).
 *
 * Errors: a zero or non-finite input vector is DEFO_ERR_INVALID_ARGUMENT
 * naming the element or node; out is then unspecified.  Units: directions
 * are dimensionless; positions SI.
 */
#ifndef DEFO_FIBRE_H
#define DEFO_FIBRE_H

#include "defo/base.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Points of the field (elements × stiffness points; out holds 3 per point),
 * 0 for a mesh without tet4 or tet10 elements. */
DEFO_API size_t defo_fibre_field_points(const defo_mesh *mesh);

/* One direction a (need not be unit) everywhere. */
DEFO_API defo_status defo_fibre_field_constant(const defo_mesh *mesh, const double a[3],
                                               double *out);
/* One direction per element (3 per element: VTK cell data, a Gmsh element
 * data view), the same at each of its points. */
DEFO_API defo_status defo_fibre_field_cells(const defo_mesh *mesh, const double *per_elem,
                                            double *out);
/* One direction per node (3 per node: VTK point data, a Gmsh node data
 * view), interpolated at each point with the element's shape functions
 * (signs aligned first, above) and normalised.  A point where the
 * interpolated axis vanishes is an error naming the element and point. */
DEFO_API defo_status defo_fibre_field_nodes(const defo_mesh *mesh, const double *per_node,
                                            double *out);

/* A line of action from one node set to another (muscle origin to
 * insertion), the way muscle tools lay fibres between attachments: the
 * harmonic field u (Δu = 0 in the body, u = 0 on the `from` nodes, 1 on
 * the `to` nodes, no flux through the rest of the boundary) solved on the
 * rest mesh by matrix-free Jacobi-preconditioned CG (defo_cg_solve) over
 * the element Laplacian K_ab = Σ_q w_q ∇N_a·∇N_b, and the fibre ∇u/|∇u| at
 * each point: the fibres run from one attachment to the other and follow
 * the body's shape, fanning out where it widens.  from and to: num_nodes
 * flags each, both non-empty and disjoint.  Elements whose nodes all lie
 * in the sets (inside an attachment, u constant) take the mean axis of the
 * elements they share a node with.  A point where ∇u vanishes otherwise (a
 * part of the body the two sets do not bracket) is an error naming the
 * element.  stats (may be NULL): the CG iterations and final relative
 * residual (DEFO_WARN_NOT_CONVERGED with the directions of the last iterate
 * when it stopped above 1e-8). */
typedef struct defo_fibre_line_stats {
    int iterations;
    double residual;
} defo_fibre_line_stats;
DEFO_API defo_status defo_fibre_field_line_of_action(const defo_mesh *mesh,
                                                     const unsigned char *from,
                                                     const unsigned char *to, double *out,
                                                     defo_fibre_line_stats *stats);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_FIBRE_H */
