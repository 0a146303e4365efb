/*
 * io/vtkcells.h — what the XML (.vtu) and legacy (.vtk) VTK readers and
 * writers share: VTK cell types <-> defo elements and triangles, and cell data
 * <-> element fields.  Implemented in vtk.c.
 *
 * Supported cells: VTK_TETRA (10), VTK_QUADRATIC_TETRA (24), VTK_TRIANGLE (5)
 * and VTK_QUADRATIC_TRIANGLE (22).  Their VTK node orders are defo's own
 * (defo/mesh.h), so connectivity is copied unchanged.  A grid mixing linear
 * and quadratic cells reads as quadratic: linear cells get edge-midpoint
 * nodes appended after the file's points (DEFO_WARNING says how many).  Elements are written
 * first, triangles after them; cell data is the elements' values, padded with
 * zeros for the triangle cells (VTK needs one value per cell), and a reader
 * keeps the values of the volume cells only.
 */
#ifndef DEFO_IO_VTKCELLS_H
#define DEFO_IO_VTKCELLS_H

#include "io/ioutil.h"

enum {
    DEFO_VTK_TRIANGLE = 5,
    DEFO_VTK_TETRA = 10,
    DEFO_VTK_QUADRATIC_TRIANGLE = 22,
    DEFO_VTK_QUADRATIC_TETRA = 24
};

/* An unstructured grid as the file states it (all arrays borrowed). */
typedef struct defo_vtk_grid {
    int64_t num_points;
    const double *points; /* 3 per point, finite */
    int64_t num_cells;
    const int64_t *types; /* num_cells */
    const int64_t
        *offsets; /* num_cells + 1, offsets[0] == 0: cell c is conn[offsets[c]..offsets[c+1]) */
    int64_t conn_size;
    const int64_t *conn;
} defo_vtk_grid;

/* Build a mesh from a grid: checks offsets, sizes per type, index ranges, and
 * refuses other cell types (named).  Linear cells mixed with quadratic ones
 * are promoted (DEFO_WARNING, *out set).  cell_elem (num_cells entries, may
 * be NULL) receives each cell's element index or -1.  Messages are
 * "name:line: ..." (line > 0) or "name: ...". */
defo_status defo_vtk_build_mesh(const defo_vtk_grid *g, const char *name, int64_t line,
                                defo_mesh **out, defo_index *cell_elem);

/* Attach point data (num_points rows as the file has them) as a point field;
 * nodes added by promotion get the mean of their edge ends. */
defo_status defo_vtk_add_point_field(defo_mesh *mesh, const char *field_name, int components,
                                     const double *values, int64_t num_points);

/* Attach cell data (components values per cell) as an element field, keeping
 * the values of cells that became elements.  Nothing is added when the mesh
 * has no elements. */
defo_status defo_vtk_add_cell_field(defo_mesh *mesh, const char *field_name, int components,
                                    const double *values, int64_t num_cells,
                                    const defo_index *cell_elem);

/* Cells a mesh writes as: elements then triangles. */
int64_t defo_vtk_num_cells(const defo_mesh *mesh);
int defo_vtk_elem_type(const defo_mesh *mesh); /* 10 or 24 */
int defo_vtk_tri_type(const defo_mesh *mesh);  /* 5 or 22 */
/* Name of a VTK cell type for messages ("VTK_HEXAHEDRON"), or "unknown". */
const char *defo_vtk_cell_type_name(int64_t type);

#endif
