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

    /* elements; order 0 means the mesh holds only triangles (a surface).
     * A shell mesh (defo_mesh_create_shell) has order 1 and 3 nodes per
     * element: its elements are triangles with a thickness (tri3). */
    int order;          /* 0, 1 (tet4, tri3) or 2 (tet10) */
    int nodes_per_elem; /* 0, 4 (tet4), 10 (tet10) or 3 (tri3) */
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
 * lengths is DEFO_ERR_INVALID_MESH naming its index; nothing is changed then.
 * Shell meshes: the triangles of each connected piece are oriented like its
 * lowest-numbered triangle across every shared edge (defo_mesh_shell_orient). */
DEFO_API defo_status defo_mesh_orient(defo_mesh *mesh, defo_index *flipped);

/* Rest data, masses, volumes and traction loads are the element layer's
 * (defo/element.h): they depend on the element kind's shape functions. */

/* Axis-aligned bounding box of all nodes.  Empty mesh: DEFO_ERR_INVALID_MESH. */
DEFO_API defo_status defo_mesh_bbox(const defo_mesh *mesh, double lo[3], double hi[3]);
/* Mean length of the elements' six corner edges (defo_tet_edges; a shell's
 * three), an edge shared by k elements counted k times [m]: the scale of the default penalty
 * stiffness, 10 (2μ+λ) h, and of relative tolerances.  0 without elements. */
DEFO_API double defo_mesh_mean_edge(const defo_mesh *mesh);

/* ------------------------------------------------------------- topology */
/* Every function below recomputes from the current connectivity: there are
 * no caches to go stale when fracture changes the topology. */

/* Node -> element incidence (CSR): the elements touching node n are
 * elem[offset[n] .. offset[n+1]) in increasing order, local[k] being the
 * local node index (0..nodes_per_elem-1) of n in elem[k]. */
typedef struct defo_node_elems {
    defo_index num_nodes;
    int64_t *offset; /* num_nodes + 1 */
    defo_index *elem;
    int8_t *local;
} defo_node_elems;
DEFO_API defo_status defo_mesh_node_elems(const defo_mesh *mesh, defo_node_elems *out);
DEFO_API void defo_node_elems_free(defo_node_elems *ne);

/* Unique edges between element corners (tet10: the 6 geometric edges; the
 * edge node is elems[4+e]).  nodes[2k] < nodes[2k+1], edges sorted by
 * (first, second): deterministic.  With with_elem_edges, elem_edges holds 6
 * edge indices per element in VTK edge order (0,1)(1,2)(0,2)(0,3)(1,3)(2,3);
 * otherwise it is NULL. */
typedef struct defo_edges {
    defo_index num_edges;
    defo_index *nodes;      /* 2 per edge */
    defo_index *elem_edges; /* 6 per element (shells: 3, (0,1) (1,2) (2,0)), or NULL */
} defo_edges;
DEFO_API defo_status defo_mesh_edges(const defo_mesh *mesh, int with_elem_edges, defo_edges *out);
DEFO_API void defo_edges_free(defo_edges *edges);

/* Local faces of a positively oriented tet, face f opposite corner f, each
 * listed counter-clockwise seen from outside (normal pointing out):
 *   f0 = (1,2,3), f1 = (0,3,2), f2 = (0,1,3), f3 = (0,2,1). */
DEFO_API extern const int defo_tet_faces[4][3];
/* VTK edge order of tet10: edge e joins corners defo_tet_edges[e][0..1] and
 * its node is local node 4+e. */
DEFO_API extern const int defo_tet_edges[6][2];
/* A 6-node triangle (corners a b c, then edge nodes (a,b) (b,c) (c,a)) as 4
 * flat triangles through its edge nodes, each with the parent's orientation:
 * (a, ab, ca) (ab, b, bc) (ca, bc, c) (ab, bc, ca) as local node indices.
 * What every picture and OBJ of a curved tet10 boundary draws: the flat
 * triangles meet the curved face at its 6 nodes. */
DEFO_API extern const int defo_tri6_split[4][3];

/* Boundary faces: faces used by exactly one element, oriented outward
 * (counter-clockwise seen from outside), sorted by owning element then local
 * face.  A shell's faces are its triangles (elem e, local_face 0), both of
 * whose sides are surface.  quadratic = 1 on a tet10 mesh gives 6-node triangles (corners a b c,
 * then edge nodes (a,b) (b,c) (c,a)); otherwise 3-node.  A face shared by
 * three or more elements is DEFO_ERR_INVALID_MESH.  O(n) counting sort on the
 * smallest node of each face, then a small sort per bucket. */
typedef struct defo_boundary {
    defo_index num_faces;
    int nodes_per_face; /* 3 or 6 */
    defo_index *faces;  /* nodes_per_face per face */
    defo_index *elem;   /* owning element per face */
    int8_t *local_face; /* 0..3: local face index (opposite that corner) */
} defo_boundary;
DEFO_API defo_status defo_mesh_boundary(const defo_mesh *mesh, int quadratic, defo_boundary *out);
DEFO_API void defo_boundary_free(defo_boundary *b);

/* Connected components of elements (elements sharing a node are connected;
 * union-find).  Components are numbered 0.. in order of their lowest element.
 * elem_component (num_elems entries) may be NULL. */
DEFO_API defo_status defo_mesh_components(const defo_mesh *mesh, defo_index *elem_component,
                                          defo_index *num_components);

/* Number of elements whose corners at positions x (NULL = rest) have
 * det[x1-x0, x2-x0, x3-x0] <= 0 (inverted or flat).  first (may be NULL)
 * gets the lowest such element, or -1.  Shells: triangles whose area is
 * zero relative to their longest edge (|(x1−x0)×(x2−x0)| ≤ 1e-12 L²): a
 * shell has no other inversion (ITF04 §8). */
DEFO_API defo_status defo_mesh_count_inverted(const defo_mesh *mesh, const double *x,
                                              defo_index *count, defo_index *first);

/* New tet10 mesh from a tet4 mesh: one node at the midpoint of every unique
 * edge (shared between neighbours), numbered after the corner nodes in edge
 * order.  Fields and triangles are not carried over; element tags and groups are. */
DEFO_API defo_status defo_mesh_to_quadratic(const defo_mesh *mesh, defo_mesh **out);

/* -------------------------------------------------------------- quality */
/* Per-element shape measures at positions x (NULL = rest), from the corners:
 *   dihedral angles (degrees) between the two faces meeting at each of the 6
 *   edges; a regular tet has all six = acos(1/3) = 70.53°.
 *   aspect ratio = longest edge / (2·sqrt(6)·inradius), inradius = 3V/(sum
 *   of face areas): 1 for the regular tet, larger is worse, +INFINITY for a
 *   flat element.  Any output array may be NULL (num_elems entries each).
 * Shells: the triangles' interior angles stand for the dihedral angles (an
 * equilateral triangle has three of 60°) and the aspect ratio is the longest
 * edge / (2·sqrt(3)·inradius), 1 for the equilateral triangle. */
DEFO_API defo_status defo_mesh_quality(const defo_mesh *mesh, const double *x, double *min_dihedral,
                                       double *max_dihedral, double *aspect);

#define DEFO_QUALITY_BINS 18 /* 10° bins covering 0..180° */
typedef struct defo_quality_summary {
    defo_index num_elems;
    double min_dihedral;   /* smallest dihedral angle in the mesh (degrees) */
    double max_dihedral;   /* largest (degrees) */
    double worst_aspect;   /* largest aspect ratio (+INFINITY if a flat element) */
    double mean_aspect;    /* mean over finite aspect ratios */
    defo_index worst_elem; /* element with the smallest dihedral angle, -1 if none */
    defo_index inverted;   /* elements with det <= 0 (defo_mesh_count_inverted) */
    /* histogram of each element's minimum dihedral angle: bin b counts
     * angles in [10b, 10b+10) degrees */
    defo_index min_dihedral_hist[DEFO_QUALITY_BINS];
} defo_quality_summary;
DEFO_API defo_status defo_mesh_quality_summary(const defo_mesh *mesh, const double *x,
                                               defo_quality_summary *out);

/* ----------------------------------------------------------- generators */
/* All generators make positively oriented meshes, deterministically (same
 * definition, same mesh, bit for bit), in metres.  order 2 adds edge nodes
 * (shared between neighbours); on curved surfaces the boundary edge nodes are
 * moved onto the analytic surface when that keeps the element's Jacobian
 * determinant >= 0.1 of the straight-sided element's at its corners, edge
 * nodes, centroid and 4 cubature points. */

typedef enum defo_box_split {
    DEFO_SPLIT_6 = 0, /* 6 tets per cube, Kuhn/Freudenthal split around the
                          (0,0,0)-(1,1,1) diagonal; all cubes alike */
    DEFO_SPLIT_5 = 1, /* 5 tets per cube (4 corner tets + 1 central); the
                          central tet alternates with cube parity so faces match */
    DEFO_SPLIT_24 = 2 /* symmetric: a node at each cube centre and each face
                          centre, every face cut into 4 triangles, each coned to
                          the cube centre: 24 tets per cube, no preferred
                          direction (the cubic symmetry is kept) */
} defo_box_split;

typedef struct defo_box_def {
    double origin[3];     /* minimum corner (m); default (0,0,0) */
    double size[3];       /* edge lengths (m) > 0; default (1,1,1) */
    int cells[3];         /* cubes per axis >= 1; default (4,4,4) */
    double cell_size;     /* if > 0, overrides cells: ceil(size/cell_size) per axis; default 0 */
    defo_box_split split; /* default DEFO_SPLIT_6 */
    int order;            /* 1 (tet4, default) or 2 (tet10) */
} defo_box_def;
DEFO_API defo_box_def defo_default_box_def(void);
/* A box (or a bar: a box with cells like 10x2x2). */
DEFO_API defo_status defo_generate_box(const defo_box_def *def, defo_mesh **out);

/* Curved shapes, meshed by the mesher (defo/mesher.h) from their analytic
 * surface tessellated finely: a body-centred cubic (BCC) lattice of spacing
 * cell_size (cube edge), snapped and optimised to dihedral angles >= 20°;
 * then boundary nodes (tet10: and edge nodes) move onto the analytic
 * surface where every incident element keeps its quality.  tet4 volumes are
 * within about 1 % of the analytic ones at cell_size <= radius/4, tet10
 * within 0.1 % (tests state the figures). */
typedef struct defo_sphere_def {
    double center[3]; /* default (0,0,0) */
    double radius;    /* m, default 1 */
    double cell_size; /* target element size (m); <= 0 (default): radius/4 */
    int order;        /* 1 or 2; default 1 */
} defo_sphere_def;
DEFO_API defo_sphere_def defo_default_sphere_def(void);
DEFO_API defo_status defo_generate_sphere(const defo_sphere_def *def, defo_mesh **out);

/* Solid cylinder with axis along z, from center.z - height/2 to center.z + height/2. */
typedef struct defo_cylinder_def {
    double center[3]; /* centre of the axis segment; default (0,0,0) */
    double radius;    /* m, default 0.5 */
    double height;    /* m, default 2 */
    double cell_size; /* m; <= 0 (default): radius/4 */
    int order;        /* 1 or 2; default 1 */
} defo_cylinder_def;
DEFO_API defo_cylinder_def defo_default_cylinder_def(void);
DEFO_API defo_status defo_generate_cylinder(const defo_cylinder_def *def, defo_mesh **out);

/* Solid torus around the z axis through center: distance major_radius from
 * the axis to the tube centre, tube radius minor_radius < major_radius. */
typedef struct defo_torus_def {
    double center[3];    /* default (0,0,0) */
    double major_radius; /* m, default 1 */
    double minor_radius; /* m, default 0.4 */
    double cell_size;    /* m; <= 0 (default): minor_radius/3 */
    int order;           /* 1 or 2; default 1 */
} defo_torus_def;
DEFO_API defo_torus_def defo_default_torus_def(void);
DEFO_API defo_status defo_generate_torus(const defo_torus_def *def, defo_mesh **out);

/* --------------------------------------------------------------- shells */
/* A shell mesh (thin shells and cloth, ITF04 §8) holds triangles as its
 * elements: order 1, 3 nodes per element (tri3 of defo/element.h), corners
 * counter-clockwise about the side its normal points to.  Bending couples
 * the two triangles of every interior edge (a hinge), so a shell must be a
 * manifold: an edge belongs to one triangle (the boundary) or two, oriented
 * alike (the shared edge runs opposite ways in the two).  Functions of this
 * file that take a mesh read only its connectivity and rest positions. */
DEFO_API defo_status defo_mesh_create_shell(defo_mesh **out);
/* A shell mesh made of the 3-node triangles of surface (a surface file's
 * triangles, or the triangle cells of a .vtu): the same nodes in the same
 * order except those no triangle uses, which are dropped (point fields are
 * carried for the kept nodes, cell fields of triangles are not); triangle
 * tags become element tags and dimension-2 groups name them.  6-node
 * triangles are DEFO_ERR_UNSUPPORTED; no triangle is DEFO_ERR_INVALID_MESH. */
DEFO_API defo_status defo_mesh_shell_from_triangles(const defo_mesh *surface, defo_mesh **out);

/* The hinges and boundary edges of a shell mesh.  Local edge i of a
 * triangle (v0 v1 v2) is the edge opposite corner i: (v[i+1], v[i+2]). */
typedef struct defo_shell_topology {
    defo_index num_hinges; /* interior edges, each shared by two triangles */
    /* 4 per hinge: the edge (a, b) as the first triangle runs it, then the
     * corner c of that triangle opposite it and the corner d of the second */
    defo_index *hinge;
    defo_index *hinge_tri; /* 2 per hinge: the first and second triangle */
    defo_index *tri_hinge; /* 3 per triangle: the hinge of local edge i, −1 on the boundary */
    defo_index
        *tri_opposite; /* 3 per triangle: the corner across local edge i, −1 on the boundary */
    defo_index num_boundary_edges;
    defo_index *boundary_edge; /* 2 per boundary edge, as its triangle runs it */
    defo_index *boundary_tri;  /* its triangle */
} defo_shell_topology;
/* Hinges sorted by (smaller node, larger node); boundary edges likewise.
 * Deterministic.  DEFO_ERR_INVALID_MESH naming the elements for an edge
 * shared by three or more triangles (non-manifold: bending needs exactly two
 * faces at an edge), two triangles with the same three nodes (duplicates)
 * and two triangles that run a shared edge the same way (inconsistent
 * orientation: defo_mesh_orient repairs it). */
DEFO_API defo_status defo_mesh_shell_topology(const defo_mesh *mesh, defo_shell_topology *out);
DEFO_API void defo_shell_topology_free(defo_shell_topology *t);

/* Generated shells (src/mesh/generate_shell.c), every triangle's normal on
 * the same side (+z for the rectangle, outward for the closed ones),
 * deterministic. */
/* A rectangle in the plane z = center.z, size[0] along x by size[1] along
 * y, of cells[0] × cells[1] squares each cut into two right triangles
 * along the same diagonal (congruent triangles: the bending energy is
 * exact for every curvature there, force_model.h). */
typedef struct defo_rectangle_def {
    double center[3]; /* default (0, 0, 0) */
    double size[2];   /* [m] > 0; default (1, 1) */
    int cells[2];     /* ≥ 1; default (10, 10) */
    double cell_size; /* > 0 overrides cells: ceil(size / cell_size); default 0 */
} defo_rectangle_def;
DEFO_API defo_rectangle_def defo_default_rectangle_def(void);
DEFO_API defo_status defo_generate_rectangle(const defo_rectangle_def *def, defo_mesh **out);

/* A sphere's surface: the icosahedron's 20 faces each cut into k²
 * triangles (k = subdivisions) and pushed onto the sphere: 20 k²
 * triangles, 10 k² + 2 nodes. */
typedef struct defo_sphere_shell_def {
    double center[3];
    double radius;    /* [m] > 0; default 1 */
    int subdivisions; /* in [1, 2000]; default 8 */
    double cell_size; /* > 0 overrides subdivisions: ceil(1.05 r / cell_size); default 0 */
} defo_sphere_shell_def;
DEFO_API defo_sphere_shell_def defo_default_sphere_shell_def(void);
DEFO_API defo_status defo_generate_sphere_shell(const defo_sphere_shell_def *def, defo_mesh **out);

/* A torus's surface about the z axis (tube centres at major_radius), or the
 * part of it swept by `sweep` degrees from the +x axis (180: ITF04 Fig. 8's
 * half torus), cells[0] quads around the axis by cells[1] around the tube,
 * each cut into two triangles. */
typedef struct defo_torus_shell_def {
    double center[3];
    double major_radius, minor_radius; /* 0 < minor < major; default 1, 0.4 */
    double sweep;                      /* degrees in (0, 360]; default 360 */
    int cells[2];                      /* default (48, 16); ≥ 1 and ≥ 3 */
} defo_torus_shell_def;
DEFO_API defo_torus_shell_def defo_default_torus_shell_def(void);
DEFO_API defo_status defo_generate_torus_shell(const defo_torus_shell_def *def, defo_mesh **out);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_MESH_H */
