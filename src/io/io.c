/*
 * io/io.c — the front door of the io module: format by extension, read and
 * write dispatch, and the orientation policy shared by every volume reader.
 *
 * Readers (formats.h) only parse; this file then
 *   1. validates the mesh (indices, finite coordinates, repeated nodes), so
 *      every format gets the same guarantees;
 *   2. orients volume elements (ITF04 §3 assumes det Dm > 0 for every rest
 *      element): with opts->reorient, negatively oriented elements are
 *      flipped by defo_mesh_orient and the read returns DEFO_WARN_REPAIRED
 *      with "name: reoriented N elements with negative volume"; without it,
 *      the first negatively oriented element is an error naming it.
 *      Degenerate (zero-volume) elements are errors either way.
 *      DEFO_ORIENT_KEEP skips step 2 entirely, for tools that report what a
 *      file holds (defo info counts inverted elements, then orients).
 * TetGen is the one multi-file format: a path ending in .node, .ele or .face
 * reads stem.node plus stem.ele and stem.face when present; in memory the
 * .node text comes first, then a line "# .ele", then the .ele text (and
 * optionally a line "# .face" and the .face text).
 */
#include "io/formats.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>

static bool ends_with(const char *s, const char *ext) {
    size_t n = strlen(s), m = strlen(ext);
    if (n < m) return false;
    for (size_t i = 0; i < m; i++)
        if (tolower((unsigned char)s[n - m + i]) != tolower((unsigned char)ext[i])) return false;
    return true;
}

defo_format defo_format_from_path(const char *path) {
    if (!path) return DEFO_FORMAT_AUTO;
    static const struct {
        const char *ext;
        defo_format format;
    } table[] = {{".node", DEFO_FORMAT_TETGEN}, {".ele", DEFO_FORMAT_TETGEN},
                 {".face", DEFO_FORMAT_TETGEN}, {".msh", DEFO_FORMAT_MSH},
                 {".vtu", DEFO_FORMAT_VTU},     {".vtk", DEFO_FORMAT_VTK},
                 {".obj", DEFO_FORMAT_OBJ},     {".stl", DEFO_FORMAT_STL},
                 {".off", DEFO_FORMAT_OFF},     {".ply", DEFO_FORMAT_PLY}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (ends_with(path, table[i].ext)) return table[i].format;
    return DEFO_FORMAT_AUTO;
}

const char *defo_format_name(defo_format format) {
    switch (format) {
    case DEFO_FORMAT_AUTO:
        return "auto";
    case DEFO_FORMAT_TETGEN:
        return "tetgen";
    case DEFO_FORMAT_MSH:
        return "msh";
    case DEFO_FORMAT_VTU:
        return "vtu";
    case DEFO_FORMAT_VTK:
        return "vtk";
    case DEFO_FORMAT_OBJ:
        return "obj";
    case DEFO_FORMAT_STL:
        return "stl";
    case DEFO_FORMAT_OFF:
        return "off";
    case DEFO_FORMAT_PLY:
        return "ply";
    }
    return "unknown";
}

defo_read_options defo_default_read_options(void) {
    defo_read_options o;
    memset(&o, 0, sizeof o);
    o.format = DEFO_FORMAT_AUTO;
    o.reorient = DEFO_ORIENT_REPAIR;
    return o;
}

defo_write_options defo_default_write_options(void) {
    defo_write_options o;
    memset(&o, 0, sizeof o);
    o.format = DEFO_FORMAT_AUTO;
    o.binary = 1;
    o.msh_version = 4;
    o.positions = NULL;
    o.compress = 0;
    o.part_names = NULL;
    return o;
}

/* Signed 6x volume of element e's corners (relative sign is all we need). */
static double corner_det(const defo_mesh *m, defo_index e) {
    const defo_index *v = &m->elems[(size_t)e * (size_t)m->nodes_per_elem];
    const double *a = &m->x[3 * v[0]], *b = &m->x[3 * v[1]], *c = &m->x[3 * v[2]],
                 *d = &m->x[3 * v[3]];
    double u[3], w[3], z[3];
    for (int k = 0; k < 3; k++) {
        u[k] = b[k] - a[k];
        w[k] = c[k] - a[k];
        z[k] = d[k] - a[k];
    }
    return u[0] * (w[1] * z[2] - w[2] * z[1]) - u[1] * (w[0] * z[2] - w[2] * z[0]) +
           u[2] * (w[0] * z[1] - w[1] * z[0]);
}

/* Validation and the orientation policy (see the top comment). */
static defo_status finish_read(defo_mesh *m, const char *name, const defo_read_options *o) {
    defo_status s = defo_mesh_validate(m);
    if (s != DEFO_OK) return defo_error_prefix("%s", name);
    if (m->num_elems == 0 || m->nodes_per_elem < 4) return DEFO_OK;
    if (o->reorient == DEFO_ORIENT_KEEP) return DEFO_OK; /* inspection: the caller decides */
    if (o->reorient == DEFO_ORIENT_REJECT) {
        for (defo_index e = 0; e < m->num_elems; e++)
            if (corner_det(m, e) < 0)
                return defo_error(DEFO_ERR_INVALID_MESH,
                                  "%s: element %d is negatively oriented (reorient is off)", name,
                                  (int)e);
    }
    defo_index flipped = 0;
    s = defo_mesh_orient(m, &flipped);
    if (s < 0) return defo_error_prefix("%s", name);
    if (flipped > 0)
        return defo_error(DEFO_WARN_REPAIRED, "%s: reoriented %d elements with negative volume",
                          name, (int)flipped);
    return DEFO_OK;
}

/* finish_read after a reader that may have returned a warning (a mixed-order
 * grid read as quadratic): an error or a repair replaces it, else it stays
 * with its message. */
static defo_status finish_read_keep_warning(defo_mesh *m, const char *name,
                                            const defo_read_options *o, defo_status read) {
    char warning[512] = "";
    if (read > 0) snprintf(warning, sizeof warning, "%s", defo_last_error());
    defo_status s = finish_read(m, name, o);
    if (s != DEFO_OK || read == DEFO_OK) return s;
    return defo_error(read, "%s", warning);
}

/* A line "marker" (trailing blanks/CR allowed) in [data, data+size): the
 * offset of its first byte and of the byte after its line end. */
static bool find_marker_line(const char *data, size_t size, const char *marker, size_t *at,
                             size_t *after) {
    size_t m = strlen(marker), i = 0;
    while (i < size) {
        const char *nl = memchr(data + i, '\n', size - i);
        size_t end = nl ? (size_t)(nl - data) : size, e = end;
        while (e > i && (data[e - 1] == ' ' || data[e - 1] == '\t' || data[e - 1] == '\r')) e--;
        if (e - i == m && memcmp(data + i, marker, m) == 0) {
            *at = i;
            *after = nl ? end + 1 : size;
            return true;
        }
        i = nl ? end + 1 : size;
    }
    return false;
}

static char *with_ext(const char *path, const char *ext) {
    size_t len = strlen(path);
    static const char *const exts[3] = {".node", ".ele", ".face"};
    for (int i = 0; i < 3; i++)
        if (ends_with(path, exts[i])) {
            len -= strlen(exts[i]);
            break;
        }
    char *p = defo_malloc(len + strlen(ext) + 1);
    if (!p) return NULL;
    memcpy(p, path, len);
    strcpy(p + len, ext);
    return p;
}

static defo_status read_tetgen_memory(const char *data, size_t size, const char *name,
                                      defo_mesh **out) {
    size_t ele_at = size, ele_after = size, face_at = size, face_after = size;
    bool has_ele = find_marker_line(data, size, "# .ele", &ele_at, &ele_after);
    bool has_face = find_marker_line(data, size, "# .face", &face_at, &face_after);
    if (has_face && has_ele && face_at < ele_at)
        return defo_error(DEFO_ERR_PARSE, "%s: \"# .face\" must come after \"# .ele\"", name);
    char *ele_name = with_ext(name, ".ele"), *face_name = with_ext(name, ".face");
    defo_status s = DEFO_OK;
    if (!ele_name || !face_name) s = defo_error_oom("file names", strlen(name) + 8);
    size_t node_end = has_ele ? ele_at : has_face ? face_at : size;
    size_t ele_end = has_face ? face_at : size;
    if (s == DEFO_OK)
        s = defo_read_tetgen(data, node_end, name, has_ele ? data + ele_after : NULL,
                             has_ele ? ele_end - ele_after : 0, ele_name,
                             has_face ? data + face_after : NULL, has_face ? size - face_after : 0,
                             face_name, out);
    defo_free(ele_name);
    defo_free(face_name);
    return s;
}

static defo_status read_buffer(const char *data, size_t size, const char *name, defo_format f,
                               defo_mesh **out) {
    switch (f) {
    case DEFO_FORMAT_TETGEN:
        return read_tetgen_memory(data, size, name, out);
    case DEFO_FORMAT_MSH:
        return defo_read_msh(data, size, name, out);
    case DEFO_FORMAT_VTU:
        return defo_read_vtu(data, size, name, out);
    case DEFO_FORMAT_VTK:
        return defo_read_vtk(data, size, name, out);
    case DEFO_FORMAT_OBJ:
        return defo_read_obj(data, size, name, out);
    case DEFO_FORMAT_STL:
        return defo_read_stl(data, size, name, out);
    case DEFO_FORMAT_OFF:
        return defo_read_off(data, size, name, out);
    case DEFO_FORMAT_PLY:
        return defo_read_ply(data, size, name, out);
    case DEFO_FORMAT_AUTO:
        break;
    }
    return defo_error(DEFO_ERR_UNSUPPORTED,
                      "%s: unknown file format (use one of .node/.ele, "
                      ".msh, .vtu, .vtk, .obj, .stl, .off, .ply)",
                      name);
}

/* Read an optional sibling file: absent is fine (*data stays NULL). */
static defo_status read_optional(const char *path, char **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) return DEFO_OK;
        return defo_error(DEFO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    fclose(f);
    return defo_read_file(path, data, size);
}

static defo_status read_tetgen_files(const char *path, defo_mesh **out) {
    char *node_path = with_ext(path, ".node"), *ele_path = with_ext(path, ".ele"),
         *face_path = with_ext(path, ".face");
    char *node = NULL, *ele = NULL, *face = NULL;
    size_t node_size = 0, ele_size = 0, face_size = 0;
    defo_status s = DEFO_OK;
    if (!node_path || !ele_path || !face_path) s = defo_error_oom("file names", strlen(path) + 8);
    if (s == DEFO_OK) s = defo_read_file(node_path, &node, &node_size);
    /* the .ele is required when it was named, optional beside a .node */
    if (s == DEFO_OK)
        s = ends_with(path, ".ele") ? defo_read_file(ele_path, &ele, &ele_size)
                                    : read_optional(ele_path, &ele, &ele_size);
    if (s == DEFO_OK) s = read_optional(face_path, &face, &face_size);
    if (s == DEFO_OK)
        s = defo_read_tetgen(node, node_size, node_path, ele, ele_size, ele_path, face, face_size,
                             face_path, out);
    defo_free(node);
    defo_free(ele);
    defo_free(face);
    defo_free(node_path);
    defo_free(ele_path);
    defo_free(face_path);
    return s;
}

static defo_format pick_format(defo_format f, const char *path) {
    return f != DEFO_FORMAT_AUTO ? f : defo_format_from_path(path);
}

defo_status defo_mesh_read(const char *path, const defo_read_options *opts, defo_mesh **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_read: out is NULL");
    *out = NULL;
    if (!path) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_read: path is NULL");
    defo_read_options def = defo_default_read_options();
    if (!opts) opts = &def;
    defo_format f = pick_format(opts->format, path);
    defo_mesh *m = NULL;
    defo_status s;
    if (f == DEFO_FORMAT_TETGEN) {
        s = read_tetgen_files(path, &m);
    } else if (f == DEFO_FORMAT_AUTO) {
        s = read_buffer(NULL, 0, path, f, &m);
    } else {
        char *data = NULL;
        size_t size = 0;
        s = defo_read_file(path, &data, &size);
        if (s == DEFO_OK) s = read_buffer(data, size, path, f, &m);
        defo_free(data);
    }
    if (s >= 0) s = finish_read_keep_warning(m, path, opts, s);
    if (s < 0) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return s;
}

defo_status defo_mesh_read_memory(const void *data, size_t size, const char *name,
                                  const defo_read_options *opts, defo_mesh **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_read_memory: out is NULL");
    *out = NULL;
    if (!data && size)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_read_memory: data is NULL");
    if (!name) name = "<memory>";
    defo_read_options def = defo_default_read_options();
    if (!opts) opts = &def;
    defo_format f = pick_format(opts->format, name);
    defo_mesh *m = NULL;
    defo_status s = read_buffer(data ? data : "", size, name, f, &m);
    if (s >= 0) s = finish_read_keep_warning(m, name, opts, s);
    if (s < 0) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return s;
}

defo_status defo_mesh_write(const char *path, const defo_mesh *mesh,
                            const defo_write_options *opts) {
    if (!path || !mesh)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_write: path or mesh is NULL");
    defo_write_options def = defo_default_write_options();
    if (!opts) opts = &def;
    defo_format f = pick_format(opts->format, path);
    switch (f) {
    case DEFO_FORMAT_TETGEN:
        return defo_write_tetgen(path, mesh, opts);
    case DEFO_FORMAT_MSH:
        return defo_write_msh(path, mesh, opts);
    case DEFO_FORMAT_VTU:
        return defo_write_vtu(path, mesh, opts);
    case DEFO_FORMAT_VTK:
        return defo_write_vtk(path, mesh, opts);
    case DEFO_FORMAT_OBJ:
        return defo_write_obj(path, mesh, opts);
    case DEFO_FORMAT_STL:
    case DEFO_FORMAT_OFF:
    case DEFO_FORMAT_PLY:
        return defo_error(DEFO_ERR_UNSUPPORTED, "%s: writing %s is not supported (write .obj)",
                          path, defo_format_name(f));
    case DEFO_FORMAT_AUTO:
        break;
    }
    return defo_error(DEFO_ERR_UNSUPPORTED,
                      "%s: unknown file format (use .node, .msh, .vtu, .vtk or .obj)", path);
}

defo_status defo_mesh_write_parts(const char *path, const defo_mesh *const *parts, int count,
                                  const defo_write_options *opts) {
    if (!path || !parts || count < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_write_parts: no path or no parts");
    for (int p = 0; p < count; p++)
        if (!parts[p])
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_write_parts: part %d is NULL",
                              p);
    defo_write_options def = defo_default_write_options();
    if (!opts) opts = &def;
    defo_format f = pick_format(opts->format, path);
    if (f == DEFO_FORMAT_VTU) return defo_write_vtu_parts(path, parts, count, opts);
    if (f == DEFO_FORMAT_OBJ) return defo_write_obj_parts(path, parts, count, opts);
    if (count == 1) return defo_mesh_write(path, parts[0], opts);
    return defo_error(DEFO_ERR_UNSUPPORTED,
                      "%s: several meshes go into one .vtu or .obj file, not %s", path,
                      defo_format_name(f));
}
