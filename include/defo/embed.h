/*
 * defo/embed.h — a high-resolution surface driven by a tet4 or tet10 mesh (MG04
 * §5.1; MTPS08 §6.2 for tet10: the quadratic shape functions).
 *
 * Binding (once, at rest): every surface vertex p is linked to the closest
 * tet of the volume mesh — the one containing it, or for a vertex outside
 * every tet the one at the smallest Euclidean distance — and stores its
 * barycentric coordinates λ in that tet (extrapolated, some λ < 0, when the
 * vertex lies outside).  Candidates come from a uniform grid of the tets'
 * bounding boxes searched in rings of growing radius until no unvisited cell
 * can hold a closer tet.  Ties (a vertex on a shared face) go to the tet
 * with the largest smallest λ, then the lowest index: deterministic.
 *
 * tet4: λ are the barycentric coordinates in the tet.  tet10: the closest
 * element is found by its corner tetrahedron, then λ are refined to the
 * reference coordinates of the vertex in the curved element (Newton,
 * defo_element_locate).
 *
 * Each frame: p = x_0 + Σ_{a≥1} N_a(λ) (x_a − x_0) over the element's nodes
 * (N_a = λ_a for tet4, the quadratic shape functions for tet10; the maps the
 * element represents — affine for tet4, quadratic for tet10, rigid motions
 * included — are reproduced exactly, also for extrapolated λ since Σ N = 1),
 * and normals either n = Re n_rest with a given rotation per element (MG04
 * Fig. 5), or n ∝ cof(F) n_rest with F the gradient of the element's map at
 * the vertex (the affine map of a tet4, the quadratic map of a tet10: MTPS08
 * §6.2) — the exact transform of a normal under that map, stretch included,
 * so an outward rest normal stays outward.
 *
 * A fracturing body: defo_embed_create_cut (MG04 §5.2) after its cracks.
 * OBJ files are written atomically (temporary file, then rename).
 */
#ifndef DEFO_EMBED_H
#define DEFO_EMBED_H

#include "defo/base.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_embed defo_embed;

typedef struct defo_embed_info {
    defo_index num_vertices;
    defo_index outside;   /* vertices outside every tet (extrapolated) */
    double max_distance;  /* largest distance of a vertex to its tet at binding [m] */
    double most_negative; /* smallest barycentric coordinate used (≤ 0 outside) */
    /* defo_embed_create_cut: crack faces that separate pieces, and contacts
     * with the surface too degenerate to cut (a vertex on a crack face,
     * coplanar triangles: left whole) */
    defo_index cut_faces, degenerate;
} defo_embed_info;

/* Bind the triangles of surface (3-node triangles; its x are the rest
 * positions) to the tet4 or tet10 mesh tets at its rest positions.  Rest normals are
 * the area-weighted vertex normals of the surface.  Both meshes are only read
 * (tets is borrowed: updates use its current connectivity). */
DEFO_API defo_status defo_embed_create(const defo_mesh *tets, const defo_mesh *surface,
                                       defo_embed **out);
DEFO_API void defo_embed_destroy(defo_embed *e);
DEFO_API defo_embed_info defo_embed_get_info(const defo_embed *e);
/* MG04 §5.2: surface (closed and manifold, inside the tets' rest shape)
 * cut where the fractured tet mesh has come apart — pairs of boundary faces
 * at the same rest position whose elements belong to different pieces — and
 * closed with caps (the crack faces' parts inside the surface, one copy per
 * side), each piece's triangles and vertices bound to its own elements: as
 * the pieces move apart every piece keeps a closed surface.  A crack still
 * inside one piece leaves the surface whole.  Without such cracks: the
 * binding of defo_embed_create.  Vertices on a crack are one per side; the
 * triangles are new (defo_embed_triangles).  Call it again after the mesh
 * cracks further. */
DEFO_API defo_status defo_embed_create_cut(const defo_mesh *tets, const defo_mesh *surface,
                                           defo_embed **out);
/* The embedding's triangles (3 vertex indices each) and their count. */
DEFO_API defo_index defo_embed_num_triangles(const defo_embed *e);
DEFO_API const defo_index *defo_embed_triangles(const defo_embed *e);
/* Tet of each vertex and its 4 barycentric coordinates (read-only). */
DEFO_API const defo_index *defo_embed_elements(const defo_embed *e);
DEFO_API const double *defo_embed_barycentric(const defo_embed *e);
/* Rest normals, 3 per vertex (unit). */
DEFO_API const double *defo_embed_rest_normals(const defo_embed *e);

/* Positions (3 per vertex) from tet positions x; unit normals (3 per
 * vertex, may be NULL) rotated by rotations (9 per element, row-major) or,
 * when rotations is NULL, transformed by the cofactor of the map's gradient
 * at the vertex (above; the rest normal where the map is degenerate). */
DEFO_API defo_status defo_embed_update(const defo_embed *e, const double *x,
                                       const double *rotations, double *positions, double *normals);

/* Per-vertex values from per-node values of the tets (one scalar per node),
 * interpolated with the element's shape functions at the vertex (linear for
 * tet4, quadratic for tet10: MTPS08 §6.2's stress colours on the detail
 * surface, from the stresses extrapolated to the nodes). */
DEFO_API defo_status defo_embed_interpolate(const defo_embed *e, const double *node_values,
                                            double *out);

/* Wavefront OBJ of the surface with the given positions and normals
 * (normals may be NULL), atomically. */
DEFO_API defo_status defo_embed_write_obj(const defo_embed *e, const char *path,
                                          const double *positions, const double *normals);

/* Wavefront OBJ of the boundary faces of a tet4 or tet10 mesh at positions x
 * (NULL = rest), only the nodes the boundary uses, atomically — the surface
 * of a fracturing body.  A curved 6-node face of a tet10 mesh is written as
 * the 4 flat triangles of defo_tri6_split through its edge nodes. */
DEFO_API defo_status defo_boundary_write_obj(const defo_mesh *tets, const double *x,
                                             const char *path);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_EMBED_H */
