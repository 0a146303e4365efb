/*
 * defo/mesher.h — from a closed (or nearly closed) triangle surface to a
 * simulation tet mesh (ITF04 §10 after [MBTF03]; MTPS08 §6 for tet10).
 *
 * Two objects:
 *   defo_surface_sdf  signed distance to a triangle surface: closest point by
 *                     a bounding volume hierarchy, inside/outside by the
 *                     generalised winding number (Jacobson et al. 2013) with
 *                     the hierarchical dipole approximation of Barill et al.
 *                     2018, so small holes and a few flipped triangles do not
 *                     turn the inside out.  Immutable once built: every query
 *                     takes a const pointer and keeps its scratch on the
 *                     stack, so any number of threads may query at once.
 *   defo_mesh_surface a body-centred cubic lattice cut by the winding number,
 *                     boundary nodes moved onto the surface without inverting
 *                     or flattening an element; optional tet10 whose boundary
 *                     edge nodes lie on the surface where the Jacobian allows.
 *
 * Units are those of the surface (metres by convention).  Output meshes are
 * positively oriented and deterministic: the same surface and definition give
 * the same mesh bit for bit, whatever the thread count.
 */
#ifndef DEFO_MESHER_H
#define DEFO_MESHER_H

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

/* ------------------------------------------------------------------ mesher */
typedef struct defo_mesher_def {
    int cells;        /* lattice cells across the longest side of the bounding box; default 20 */
    double cell_size; /* lattice spacing h (m); > 0 overrides cells; default 0 */
    int order;        /* 1 (tet4, default) or 2 (tet10) */
    /* Degrees: a boundary node moves only while every incident tet keeps at
     * least this minimum dihedral angle (or does not get worse); [0, 60),
     * default 10. */
    double min_dihedral;
    /* tet10 edge nodes move onto the surface only while det J at the corners,
     * edge nodes, centroid and 4 cubature points stays >= this fraction of
     * the straight element's; (0, 1), default 0.1. */
    double tet10_min_jacobian;
    /* Boundary band: also keep tets whose centroid is outside but within
     * band × h of the surface (the snapping then pulls their nodes in);
     * [0, 0.5], default 0.1. */
    double band;
    defo_sdf_def sdf; /* used when the mesher builds the signed distance itself */
} defo_mesher_def;
DEFO_API defo_mesher_def defo_default_mesher_def(void);

typedef struct defo_mesher_report {
    double h;                     /* lattice spacing used (m) */
    double surface_volume;        /* enclosed by the surface (m^3) */
    double volume;                /* of the tet mesh (m^3; tet10 exact, curved) */
    double volume_error;          /* (volume - surface_volume) / surface_volume */
    double max_boundary_distance; /* largest distance of a boundary node to the surface (m) */
    double mean_boundary_distance;
    defo_index boundary_nodes;      /* corner nodes on the boundary */
    defo_index snapped_nodes;       /* of those, moved all the way onto the surface */
    defo_index edge_nodes_snapped;  /* tet10: boundary edge nodes placed on the surface */
    defo_index edge_nodes_boundary; /* tet10: boundary edge nodes */
    defo_quality_summary quality;
    defo_surface_info surface;
} defo_mesher_report;

/* Tet mesh of the solid bounded by surface's triangles.  def and report may
 * be NULL.  Returns DEFO_OK, or DEFO_WARNING (the mesh is made; the message
 * says what is wrong with the surface: holes, non-manifold edges,
 * self-intersections, flipped triangles), or an error with *out NULL (no
 * triangles, non-finite coordinates, a lattice too large for defo_index,
 * nothing inside at this resolution). */
DEFO_API defo_status defo_mesh_surface(const defo_mesh *surface, const defo_mesher_def *def,
                                       defo_mesh **out, defo_mesher_report *report);
/* Same from an already built signed distance (sdf is only read). */
DEFO_API defo_status defo_mesh_surface_sdf(const defo_surface_sdf *sdf, const defo_mesher_def *def,
                                           defo_mesh **out, defo_mesher_report *report);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_MESHER_H */
