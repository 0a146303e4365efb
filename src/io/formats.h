/*
 * io/formats.h — the per-format readers and writers behind defo_mesh_read /
 * defo_mesh_write (io.c dispatches by defo_format).
 *
 * Readers parse an in-memory buffer (not necessarily NUL-terminated) into a
 * new mesh and never orient elements themselves: io.c calls defo_mesh_orient
 * afterwards.  On error they free everything, leave *out NULL, and raise a
 * message "name:line: reason" or "name: byte N: reason".
 * Writers write atomically through defo_out (ioutil.h).
 */
#ifndef DEFO_IO_FORMATS_H
#define DEFO_IO_FORMATS_H

#include "io/ioutil.h"

/* Gmsh .msh 2.2 and 4.1, ASCII and binary. */
defo_status defo_read_msh(const char *data, size_t size, const char *name, defo_mesh **out);
defo_status defo_write_msh(const char *path, const defo_mesh *mesh, const defo_write_options *o);

/* TetGen: .node plus .ele (volume) and optional .face.  ele may be NULL for a
 * node-only file; face may be NULL. */
defo_status defo_read_tetgen(const char *node, size_t node_size, const char *node_name,
                             const char *ele, size_t ele_size, const char *ele_name,
                             const char *face, size_t face_size, const char *face_name,
                             defo_mesh **out);
/* path names the .node file; .ele (and .face when the mesh has triangles) are
 * written beside it with the same stem. */
defo_status defo_write_tetgen(const char *path, const defo_mesh *mesh, const defo_write_options *o);

/* VTK XML unstructured grid (.vtu), ASCII or base64 binary, with fields. */
defo_status defo_read_vtu(const char *data, size_t size, const char *name, defo_mesh **out);
defo_status defo_write_vtu(const char *path, const defo_mesh *mesh, const defo_write_options *o);
/* Several meshes as one grid, each keeping its cell types (o->positions: 3
 * per node of every part in order, or NULL for each part's own x). */
defo_status defo_write_vtu_parts(const char *path, const defo_mesh *const *parts, int count,
                                 const defo_write_options *o);
/* Legacy VTK unstructured grid (.vtk), ASCII or binary (big-endian). */
defo_status defo_read_vtk(const char *data, size_t size, const char *name, defo_mesh **out);
defo_status defo_write_vtk(const char *path, const defo_mesh *mesh, const defo_write_options *o);

/* Surfaces (triangles only; polygons are fan-triangulated). */
defo_status defo_read_obj(const char *data, size_t size, const char *name, defo_mesh **out);
defo_status defo_write_obj(const char *path, const defo_mesh *mesh, const defo_write_options *o);
/* Several meshes into one OBJ, one after the other; o->positions (may be
 * NULL) holds 3 values per node of every part in order. */
defo_status defo_write_obj_parts(const char *path, const defo_mesh *const *parts, int count,
                                 const defo_write_options *o);
defo_status defo_read_stl(const char *data, size_t size, const char *name, defo_mesh **out);
defo_status defo_read_off(const char *data, size_t size, const char *name, defo_mesh **out);
defo_status defo_read_ply(const char *data, size_t size, const char *name, defo_mesh **out);

#endif
