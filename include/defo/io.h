/*
 * defo/io.h — reading and writing meshes in the formats real tools use.
 *
 * Volume meshes: TetGen .node/.ele(/.face), Gmsh .msh 2.2 and 4.1 (ASCII and
 * binary), VTK .vtu (ASCII and base64 binary, inline or appended, raw or
 * zlib-compressed; written inline, zlib on request) and legacy .vtk.  Surfaces: OBJ,
 * STL (ASCII and binary), OFF, PLY (ASCII and binary little-endian).  A .pvd
 * collection indexes a time series of .vtu files.
 *
 * Errors: every reader rejects malformed input with a message
 * "file:line: reason" (or "file: byte N: reason" for binary data) and returns
 * DEFO_ERR_PARSE / DEFO_ERR_UNSUPPORTED / DEFO_ERR_INVALID_MESH; *out is then
 * NULL and nothing leaks.  Writers write to a temporary name and rename, so an
 * output file is either complete or absent.
 */
#ifndef DEFO_IO_H
#define DEFO_IO_H

#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum defo_format {
    DEFO_FORMAT_AUTO = 0, /* from the file name's extension */
    DEFO_FORMAT_TETGEN,   /* .node (+ .ele, .face beside it) */
    DEFO_FORMAT_MSH,      /* Gmsh; version chosen on write by defo_write_options.msh_version */
    DEFO_FORMAT_VTU,
    DEFO_FORMAT_VTK,
    DEFO_FORMAT_OBJ,
    DEFO_FORMAT_STL,
    DEFO_FORMAT_OFF,
    DEFO_FORMAT_PLY
} defo_format;

/* Format for a path's extension (.node/.ele, .msh, .vtu, .vtk, .obj, .stl,
 * .off, .ply; case-insensitive), or DEFO_FORMAT_AUTO when unknown. */
DEFO_API defo_format defo_format_from_path(const char *path);
DEFO_API const char *defo_format_name(defo_format format);

/* What a reader does with negatively oriented elements. */
enum {
    DEFO_ORIENT_REJECT = 0, /* error naming the first one */
    DEFO_ORIENT_REPAIR = 1, /* reorient them; warning DEFO_WARN_REPAIRED with the count */
    DEFO_ORIENT_KEEP = 2    /* leave them as stored (inspection tools); no check at all */
};

typedef struct defo_read_options {
    defo_format format; /* DEFO_FORMAT_AUTO: by extension */
    int reorient;       /* DEFO_ORIENT_*; default DEFO_ORIENT_REPAIR */
} defo_read_options;
DEFO_API defo_read_options defo_default_read_options(void);

typedef struct defo_write_options {
    defo_format format; /* DEFO_FORMAT_AUTO: by extension */
    int binary;         /* 1: binary payload where the format has one (default 1) */
    int msh_version;    /* 2 (2.2) or 4 (4.1); default 4 */
    /* .vtu: 1 = zlib-compress the binary arrays (VTK's vtkZLibDataCompressor
     * layout, which ParaView and meshio read); needs binary.  Other formats
     * ignore it.  Default 0. */
    int compress;
    /* Positions to write instead of mesh->x (3 per node), e.g. the deformed
     * state; NULL writes mesh->x.  Borrowed. */
    const double *positions;
    /* defo_mesh_write_parts to .obj: one name per part, written as an object
     * ("o name", a separate object in Blender); NULL: no names.  Borrowed. */
    const char *const *part_names;
} defo_write_options;
DEFO_API defo_write_options defo_default_write_options(void);

/* Read a mesh file.  opts may be NULL (defaults).  On success *out owns a new
 * mesh; DEFO_WARN_REPAIRED is returned (with a message) when elements were
 * reoriented. */
DEFO_API defo_status defo_mesh_read(const char *path, const defo_read_options *opts,
                                    defo_mesh **out);
/* Same, from memory.  name is used in messages.  For TetGen, data holds the
 * .node file followed by the .ele file, separated by a line "# .ele". */
DEFO_API defo_status defo_mesh_read_memory(const void *data, size_t size, const char *name,
                                           const defo_read_options *opts, defo_mesh **out);
/* Write a mesh file (atomically).  opts may be NULL. */
DEFO_API defo_status defo_mesh_write(const char *path, const defo_mesh *mesh,
                                     const defo_write_options *opts);

/* Several meshes in ONE file, side by side (e.g. every body of a scene):
 * .vtu — one unstructured grid whose points and cells are the parts' in
 * order, node indices offset, each part keeping its own cell types (tet4 as
 * VTK_TETRA, tet10 as VTK_QUADRATIC_TETRA, triangles), so linear and
 * quadratic bodies share a frame and ParaView draws the tet10 ones curved;
 * the fields are those of parts[0], which every part with rows at a field's
 * location must have with the same components (DEFO_ERR_INVALID_ARGUMENT
 * naming it otherwise).  .obj — each part's surface (its triangles, or a
 * volume mesh's boundary) one after the other.  Other formats take one part.
 * opts->positions, when given, holds 3 values per node of every part in
 * order.  defo_mesh_read of a .vtu mixing tet4 and tet10 cells gives one
 * tet10 mesh: each tet4 cell gets its edge midpoints as nodes, appended
 * after the file's points (point data averaged), with DEFO_WARNING saying so. */
DEFO_API defo_status defo_mesh_write_parts(const char *path, const defo_mesh *const *parts,
                                           int count, const defo_write_options *opts);

/* ParaView collection: one <DataSet timestep="t" file="..."/> per entry;
 * file names are written relative to the .pvd's folder when possible. */
DEFO_API defo_status defo_pvd_write(const char *path, const double *times, const char *const *files,
                                    int count);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_IO_H */
