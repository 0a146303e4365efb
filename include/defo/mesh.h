/*
 * defo/mesh.h — one mesh type for linear (tet4) and quadratic (tet10)
 * tetrahedra and for triangle surfaces (ITF04 §3, TSIF05 §5, MTPS08 §4.1).
 *
 * The struct is a plain data container: its fields are the API, documented
 * here, and may be read directly.  Modify it through defo_mesh_* functions so
 * capacities and derived data stay consistent.
 *
 * Node order: tet4 as given, positively oriented (det[x1-x0, x2-x0, x3-x0] > 0).
 * tet10 uses VTK's order: corners 0..3, then edge nodes on (0,1) (1,2) (0,2)
 * (0,3) (1,3) (2,3).  Readers of formats with other orders convert on read and
 * write.  Triangles: 3 corners, or 6 nodes (corners, then edges (0,1) (1,2) (2,0)).
 *
 * Topology may change during a simulation (fracture splits vertices), so node
 * and element arrays have capacities and grow amortised.
 */
#ifndef DEFO_MESH_H
#define DEFO_MESH_H

#include "defo/base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DEFO_NAME_MAX 64

typedef enum defo_field_location { DEFO_FIELD_POINT = 0, DEFO_FIELD_CELL = 1 } defo_field_location;

/* A named array attached to nodes or elements (VTK point/cell data). */
typedef struct defo_field {
    char name[DEFO_NAME_MAX];
    defo_field_location location;
    int components; /* 1 (scalar), 3 (vector), 9 (tensor), or any >= 1 */
    double *data;   /* components * (num_nodes | num_elems), owned by the mesh */
} defo_field;

/* A physical group (Gmsh physical tag): elements (dim 3) or triangles (dim 2)
 * carrying `tag` in elem_tag / tri_tag, with an optional name. */
typedef struct defo_group {
    int dim; /* 2 or 3 */
    int32_t tag;
    char name[DEFO_NAME_MAX];
} defo_group;

typedef struct defo_mesh {
    /* nodes */
    defo_index num_nodes;
    defo_index node_capacity;
    double *x; /* rest positions, 3 per node (x, y, z) */

    /* volume elements; order 0 means the mesh holds only triangles */
    int order;          /* 0, 1 (tet4) or 2 (tet10) */
    int nodes_per_elem; /* 0, 4 or 10 */
    defo_index num_elems;
    defo_index elem_capacity;
    defo_index *elems; /* nodes_per_elem per element */
    int32_t *elem_tag; /* one per element, 0 = untagged; NULL when no element is tagged */

    /* triangles: a surface mesh, or boundary faces read from a file */
    int nodes_per_tri; /* 3 or 6 (0 when there are none) */
    defo_index num_tris;
    defo_index tri_capacity;
    defo_index *tris;
    int32_t *tri_tag; /* one per triangle or NULL */

    int num_groups;
    defo_group *groups;

    int num_fields;
    defo_field *fields;
} defo_mesh;

/* ------------------------------------------------------------ lifecycle */
/* Empty mesh of the given order (0, 1 or 2). */
DEFO_API defo_status defo_mesh_create(int order, defo_mesh **out);
DEFO_API void defo_mesh_destroy(defo_mesh *mesh);
DEFO_API defo_status defo_mesh_clone(const defo_mesh *mesh, defo_mesh **out);

/* Reserve room (never shrinks).  Existing data is kept. */
DEFO_API defo_status defo_mesh_reserve(defo_mesh *mesh, defo_index nodes, defo_index elems,
                                       defo_index tris);
/* Append one node; its index is returned in *index (may be NULL). */
DEFO_API defo_status defo_mesh_add_node(defo_mesh *mesh, double x, double y, double z,
                                        defo_index *index);
/* Append one element of mesh->nodes_per_elem node indices with a tag (0 = none). */
DEFO_API defo_status defo_mesh_add_elem(defo_mesh *mesh, const defo_index *nodes, int32_t tag);
/* Append one triangle of nodes_per_tri indices (3 or 6; the first triangle
 * fixes mesh->nodes_per_tri). */
DEFO_API defo_status defo_mesh_add_tri(defo_mesh *mesh, const defo_index *nodes, int nodes_per_tri,
                                       int32_t tag);
/* Name (or rename) a physical group. */
DEFO_API defo_status defo_mesh_set_group(defo_mesh *mesh, int dim, int32_t tag, const char *name);
/* Attach a copy of data (components * count values) as a field; replaces a
 * field of the same name and location. */
DEFO_API defo_status defo_mesh_add_field(defo_mesh *mesh, const char *name,
                                         defo_field_location location, int components,
                                         const double *data);
DEFO_API const defo_field *defo_mesh_find_field(const defo_mesh *mesh, const char *name,
                                                defo_field_location location);

/* Check every index is in range, coordinates are finite, no element repeats
 * a node.  Returns DEFO_ERR_INVALID_MESH naming the first offender. */
DEFO_API defo_status defo_mesh_validate(const defo_mesh *mesh);

/* Make every element positively oriented: a negatively oriented one has two
 * corners swapped (tet10: and the matching edge nodes), *flipped counts them
 * (may be NULL).  An element whose volume is zero relative to its edge
 * lengths is DEFO_ERR_INVALID_MESH naming its index; nothing is changed then. */
DEFO_API defo_status defo_mesh_orient(defo_mesh *mesh, defo_index *flipped);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_MESH_H */
