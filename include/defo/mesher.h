/*
 * defo/mesher.h — from a closed (or nearly closed) triangle surface to a
 * simulation tet mesh (ITF04 §10 after [MBTF03]; MTPS08 §6 for tet10).
 *
 * defo_mesh_surface cuts a body-centred cubic lattice by the generalised
 * winding number of the surface, moves the boundary nodes onto it without
 * inverting or flattening an element, then optimises the mesh (flips,
 * smoothing, boundary nodes sliding on the surface) until its smallest
 * dihedral angle is at least target_dihedral (20° by default) with the
 * enclosed volume kept the surface's; optional tet10 whose boundary edge
 * nodes lie on the surface where the Jacobian allows.  The signed distance
 * and winding number it queries (defo_surface_sdf) are in defo/geometry.h.
 *
 * Units are those of the surface (metres by convention).  Output meshes are
 * positively oriented and deterministic: the same surface and definition give
 * the same mesh bit for bit, whatever the thread count.
 */
#ifndef DEFO_MESHER_H
#define DEFO_MESHER_H

#include "defo/geometry.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------ mesher */
typedef struct defo_mesher_def {
    int cells;        /* lattice cells across the longest side of the bounding box; default 20 */
    double cell_size; /* lattice spacing h (m); > 0 overrides cells; default 0 */
    int order;        /* 1 (tet4, default) or 2 (tet10) */
    /* Degrees: while snapping, a boundary node moves only while every
     * incident tet keeps at least this minimum dihedral angle (or does not
     * get worse); [0, 60), default 10.  The optimisation then raises it. */
    double min_dihedral;
    /* tet10 edge nodes move onto the surface only while det J at the corners,
     * edge nodes, centroid and 4 cubature points stays >= this fraction of
     * the straight element's; (0, 1), default 0.1. */
    double tet10_min_jacobian;
    /* Boundary band: also keep tets whose centroid is outside but within
     * band × h of the surface (the snapping then pulls their nodes in);
     * [0, 0.5], default 0.1. */
    double band;
    /* Degrees: after snapping, the mesh is optimised until no element has a
     * smaller dihedral angle than this (or nothing improves); 0 skips the
     * optimisation; [0, 60), default 20.  Reached on closed surfaces meshed
     * with a few cells across their thinnest part (tests state the
     * figures). */
    double target_dihedral;
    /* Fraction of h: once the angles meet target_dihedral, the smallest
     * altitude of every element (3 × volume / face area, the length that
     * bounds a stable explicit step; 0.71 h for a lattice tet) is raised
     * toward this, never letting an angle fall below target_dihedral; 0
     * skips it; [0, 0.5], default 0.2. */
    double target_altitude;
    /* Boundary nodes stay within this many h of the surface during the
     * optimisation and the volume correction; (0, 0.5], default 0.45. */
    double max_boundary_distance;
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
    defo_index snapped_nodes;       /* of those, on the surface before the volume correction */
    defo_index edge_nodes_snapped;  /* tet10: boundary edge nodes placed on the surface */
    defo_index edge_nodes_boundary; /* tet10: boundary edge nodes */
    defo_quality_summary quality;   /* of the output mesh */
    /* smallest altitude of an element (3 × volume / face area, of the
     * corner tet; m): the length that bounds a stable explicit step */
    double min_altitude;
    double min_altitude_snapped;          /* the same before the optimisation */
    defo_quality_summary quality_snapped; /* after snapping, before the optimisation */
    int optimize_sweeps;                  /* sweeps of the optimisation */
    int64_t optimize_moves;               /* node moves it made */
    int64_t optimize_deleted;             /* boundary wedges and caps it removed */
    int64_t optimize_flips;               /* edge removals and 2-3 face flips */
    /* largest move of a boundary node along its normal by the volume
     * correction, which cancels the facets' chord error (m) */
    double volume_offset;
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
