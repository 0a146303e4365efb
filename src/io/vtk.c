/*
 * io/vtk.c — legacy VTK unstructured grids (.vtk), ASCII and BINARY, and the
 * cell-type mapping shared with the XML reader (io/vtkcells.h).
 *
 * Format (VTK File Formats, "Simple Legacy Formats"): a "# vtk DataFile
 * Version x.y" line, a title, ASCII or BINARY, then keyword sections.  BINARY
 * payloads are big-endian and follow the keyword line directly.  Read:
 * POINTS (float/double), CELLS in the classic n-prefixed form or the 5.1
 * OFFSETS/CONNECTIVITY form, CELL_TYPES, POINT_DATA/CELL_DATA with SCALARS
 * (+ LOOKUP_TABLE), VECTORS, NORMALS, TENSORS and FIELD arrays; METADATA,
 * standalone LOOKUP_TABLEs, COLOR_SCALARS and TEXTURE_COORDINATES are read
 * past.  Written: version 3.0 (read by every VTK since 2000), doubles, fields
 * as FIELD arrays.
 *
 * Invariants: no allocation is sized by a count from the file before
 * defo_cursor_check_count proved the remaining input can hold it; every
 * value is finite; every connectivity index is in range; on error nothing
 * leaks and *out is NULL.
 */
#include "io/formats.h"
#include "io/vtkcells.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ============================================================ shared cells */
static defo_status grid_error(const char *name, int64_t line, defo_status st, const char *fmt, ...)
    DEFO_PRINTF(4, 5);
static defo_status grid_error(const char *name, int64_t line, defo_status st, const char *fmt,
                              ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (line > 0) return defo_error(st, "%s:%lld: %s", name, (long long)line, msg);
    return defo_error(st, "%s: %s", name, msg);
}

const char *defo_vtk_cell_type_name(int64_t type) {
    switch (type) {
    case 1:
        return "VTK_VERTEX";
    case 2:
        return "VTK_POLY_VERTEX";
    case 3:
        return "VTK_LINE";
    case 4:
        return "VTK_POLY_LINE";
    case 5:
        return "VTK_TRIANGLE";
    case 6:
        return "VTK_TRIANGLE_STRIP";
    case 7:
        return "VTK_POLYGON";
    case 8:
        return "VTK_PIXEL";
    case 9:
        return "VTK_QUAD";
    case 10:
        return "VTK_TETRA";
    case 11:
        return "VTK_VOXEL";
    case 12:
        return "VTK_HEXAHEDRON";
    case 13:
        return "VTK_WEDGE";
    case 14:
        return "VTK_PYRAMID";
    case 21:
        return "VTK_QUADRATIC_EDGE";
    case 22:
        return "VTK_QUADRATIC_TRIANGLE";
    case 23:
        return "VTK_QUADRATIC_QUAD";
    case 24:
        return "VTK_QUADRATIC_TETRA";
    case 25:
        return "VTK_QUADRATIC_HEXAHEDRON";
    case 42:
        return "VTK_POLYHEDRON";
    default:
        return "unknown";
    }
}

static int cell_size(int64_t type) {
    switch (type) {
    case DEFO_VTK_TRIANGLE:
        return 3;
    case DEFO_VTK_TETRA:
        return 4;
    case DEFO_VTK_QUADRATIC_TRIANGLE:
        return 6;
    case DEFO_VTK_QUADRATIC_TETRA:
        return 10;
    default:
        return 0;
    }
}

static int edge_cmp(const void *pa, const void *pb) {
    const defo_index *x = pa, *y = pb;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

defo_status defo_vtk_build_mesh(const defo_vtk_grid *g, const char *name, int64_t line,
                                defo_mesh **out, defo_index *cell_elem) {
    *out = NULL;
    if (g->num_points < 0 || g->num_points > DEFO_INDEX_MAX)
        return grid_error(name, line, DEFO_ERR_UNSUPPORTED, "point count %lld out of range",
                          (long long)g->num_points);
    if (g->num_cells < 0 || g->num_cells > DEFO_INDEX_MAX)
        return grid_error(name, line, DEFO_ERR_UNSUPPORTED, "cell count %lld out of range",
                          (long long)g->num_cells);
    if (g->num_cells > 0 && g->offsets[0] != 0)
        return grid_error(name, line, DEFO_ERR_PARSE, "cell offsets must start at 0, not %lld",
                          (long long)g->offsets[0]);
    int64_t elem_type = 0, tri_type = 0, num_elems = 0, num_tris = 0, lin_tets = 0, lin_tris = 0;
    for (int64_t c = 0; c < g->num_cells; c++) {
        int64_t t = g->types[c];
        int64_t a = g->offsets[c], b = g->offsets[c + 1];
        int want = cell_size(t);
        if (want == 0)
            return grid_error(name, line, DEFO_ERR_UNSUPPORTED,
                              "cell %lld has unsupported VTK cell type %lld (%s); defo reads "
                              "tetrahedra (10, 24) and triangles (5, 22)",
                              (long long)c, (long long)t, defo_vtk_cell_type_name(t));
        if (b < a || b > g->conn_size)
            return grid_error(name, line, DEFO_ERR_PARSE,
                              "cell %lld: offsets %lld..%lld are decreasing or past the end of "
                              "the %lld connectivity entries",
                              (long long)c, (long long)a, (long long)b, (long long)g->conn_size);
        if (b - a != want)
            return grid_error(name, line, DEFO_ERR_PARSE,
                              "cell %lld (%s) has %lld nodes, expected %d", (long long)c,
                              defo_vtk_cell_type_name(t), (long long)(b - a), want);
        bool tet = t == DEFO_VTK_TETRA || t == DEFO_VTK_QUADRATIC_TETRA;
        int64_t *kind = tet ? &elem_type : &tri_type;
        /* mixed orders: the quadratic type wins (linear cells are promoted) */
        if (*kind == 0 || cell_size(t) > cell_size(*kind)) *kind = t;
        if (t == DEFO_VTK_TETRA) lin_tets++;
        if (t == DEFO_VTK_TRIANGLE) lin_tris++;
        if (tet)
            num_elems++;
        else
            num_tris++;
        for (int64_t k = a; k < b; k++)
            if (g->conn[k] < 0 || g->conn[k] >= g->num_points)
                return grid_error(name, line, DEFO_ERR_PARSE,
                                  "cell %lld: node index %lld out of range [0, %lld)", (long long)c,
                                  (long long)g->conn[k], (long long)g->num_points);
    }
    if (g->num_cells > 0 && g->offsets[g->num_cells] != g->conn_size)
        return grid_error(name, line, DEFO_ERR_PARSE,
                          "connectivity has %lld entries but the cells use %lld",
                          (long long)g->conn_size, (long long)g->offsets[g->num_cells]);

    int order = elem_type == DEFO_VTK_TETRA ? 1 : elem_type == DEFO_VTK_QUADRATIC_TETRA ? 2 : 0;
    /* A grid mixing linear and quadratic cells (e.g. the tet4 and tet10
     * bodies of one scene in a defo run frame): each linear cell gets a node
     * at the midpoint of each of its edges, shared by the linear cells along
     * that edge and appended after the file's points — the same straight
     * geometry as a quadratic cell. */
    bool promote_tets = elem_type == DEFO_VTK_QUADRATIC_TETRA && lin_tets > 0;
    bool promote_tris = tri_type == DEFO_VTK_QUADRATIC_TRIANGLE && lin_tris > 0;
    defo_index *edges = NULL; /* sorted unique (a, b) pairs, a < b */
    int64_t num_edges = 0;
    if (promote_tets || promote_tris) {
        int64_t cap = 6 * (promote_tets ? lin_tets : 0) + 3 * (promote_tris ? lin_tris : 0);
        edges = defo_malloc((size_t)(2 * cap + 2) * sizeof *edges);
        if (!edges) return defo_error_oom("edge midpoints", (size_t)cap * 2 * sizeof *edges);
        for (int64_t c = 0; c < g->num_cells; c++) {
            const int64_t *v = g->conn + g->offsets[c];
            bool lt = promote_tets && g->types[c] == DEFO_VTK_TETRA;
            bool lr = promote_tris && g->types[c] == DEFO_VTK_TRIANGLE;
            for (int e = 0; (lt && e < 6) || (lr && e < 3); e++) {
                defo_index a = (defo_index)v[lt ? defo_tet_edges[e][0] : e];
                defo_index b = (defo_index)v[lt ? defo_tet_edges[e][1] : (e + 1) % 3];
                edges[2 * num_edges] = a < b ? a : b;
                edges[2 * num_edges + 1] = a < b ? b : a;
                num_edges++;
            }
        }
        qsort(edges, (size_t)num_edges, 2 * sizeof *edges, edge_cmp);
        int64_t u = 0;
        for (int64_t k = 0; k < num_edges; k++)
            if (u == 0 || edges[2 * k] != edges[2 * u - 2] ||
                edges[2 * k + 1] != edges[2 * u - 1]) {
                edges[2 * u] = edges[2 * k];
                edges[2 * u + 1] = edges[2 * k + 1];
                u++;
            }
        num_edges = u;
        if (g->num_points + num_edges > DEFO_INDEX_MAX) {
            defo_free(edges);
            return grid_error(name, line, DEFO_ERR_UNSUPPORTED, "too many points with midpoints");
        }
    }
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_create(order, &m);
    if (s < 0) {
        defo_free(edges);
        return s;
    }
    s = defo_mesh_reserve(m, (defo_index)(g->num_points + num_edges), (defo_index)num_elems,
                          (defo_index)num_tris);
    for (int64_t i = 0; s >= 0 && i < g->num_points; i++)
        s = defo_mesh_add_node(m, g->points[3 * i], g->points[3 * i + 1], g->points[3 * i + 2],
                               NULL);
    for (int64_t k = 0; s >= 0 && k < num_edges; k++) {
        const double *a = g->points + 3 * edges[2 * k], *b = g->points + 3 * edges[2 * k + 1];
        s = defo_mesh_add_node(m, 0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2]),
                               NULL);
    }
    defo_index elem = 0;
    for (int64_t c = 0; s >= 0 && c < g->num_cells; c++) {
        defo_index nodes[10];
        int n = cell_size(g->types[c]);
        for (int k = 0; k < n; k++) nodes[k] = (defo_index)g->conn[g->offsets[c] + k];
        bool tet = g->types[c] == DEFO_VTK_TETRA || g->types[c] == DEFO_VTK_QUADRATIC_TETRA;
        bool lt = promote_tets && g->types[c] == DEFO_VTK_TETRA;
        bool lr = promote_tris && g->types[c] == DEFO_VTK_TRIANGLE;
        for (int e = 0; (lt && e < 6) || (lr && e < 3); e++) {
            defo_index a = nodes[lt ? defo_tet_edges[e][0] : e];
            defo_index b = nodes[lt ? defo_tet_edges[e][1] : (e + 1) % 3];
            defo_index key[2] = {a < b ? a : b, a < b ? b : a};
            const defo_index *hit =
                bsearch(key, edges, (size_t)num_edges, 2 * sizeof *edges, edge_cmp);
            nodes[(lt ? 4 : 3) + e] = (defo_index)(g->num_points + (hit - edges) / 2);
        }
        if (lr) n = 6;
        if (tet)
            s = defo_mesh_add_elem(m, nodes, 0);
        else
            s = defo_mesh_add_tri(m, nodes, n, 0);
        if (cell_elem) cell_elem[c] = tet ? elem : -1;
        if (tet) elem++;
    }
    defo_free(edges);
    if (s < 0) {
        defo_mesh_destroy(m);
        return defo_error_prefix("%s", name);
    }
    *out = m;
    if (num_edges > 0)
        return defo_error(DEFO_WARNING,
                          "%s: %lld linear cells mixed with quadratic ones read as quadratic "
                          "(%lld edge-midpoint nodes added after the file's %lld points)",
                          name, (long long)(lin_tets * promote_tets + lin_tris * promote_tris),
                          (long long)num_edges, (long long)g->num_points);
    return DEFO_OK;
}

/* Point data for a mesh built by defo_vtk_build_mesh: the file's num_points
 * rows, then for each edge-midpoint node added to a linear cell the mean of
 * its two edge ends (exact for the linear field the cell interpolates).  The
 * ends are found from the cells that hold the added node. */
defo_status defo_vtk_add_point_field(defo_mesh *mesh, const char *field_name, int components,
                                     const double *values, int64_t num_points) {
    if (mesh->num_nodes == num_points)
        return defo_mesh_add_field(mesh, field_name, DEFO_FIELD_POINT, components, values);
    size_t n;
    if (!defo_mul_size((size_t)mesh->num_nodes, (size_t)components, &n))
        return defo_error_oom("point field", SIZE_MAX);
    double *d = defo_malloc(n * sizeof(double));
    if (!d) return defo_error_oom("point field", n * sizeof(double));
    memcpy(d, values, (size_t)num_points * (size_t)components * sizeof(double));
    for (int pass = 0; pass < 2; pass++) {
        const defo_index *cells = pass ? mesh->tris : mesh->elems;
        int64_t count = pass ? mesh->num_tris : mesh->num_elems;
        int per = pass ? mesh->nodes_per_tri : mesh->nodes_per_elem, ne = pass ? 3 : 6;
        if (per != (pass ? 6 : 10)) continue;
        for (int64_t c = 0; c < count; c++) {
            const defo_index *v = cells + c * per;
            for (int e = 0; e < ne; e++) {
                defo_index mid = v[(pass ? 3 : 4) + e];
                if (mid < num_points) continue;
                defo_index a = v[pass ? e : defo_tet_edges[e][0]],
                           b = v[pass ? (e + 1) % 3 : defo_tet_edges[e][1]];
                for (int k = 0; k < components; k++)
                    d[(size_t)mid * (size_t)components + (size_t)k] =
                        0.5 * (d[(size_t)a * (size_t)components + (size_t)k] +
                               d[(size_t)b * (size_t)components + (size_t)k]);
            }
        }
    }
    defo_status s = defo_mesh_add_field(mesh, field_name, DEFO_FIELD_POINT, components, d);
    defo_free(d);
    return s;
}

defo_status defo_vtk_add_cell_field(defo_mesh *mesh, const char *field_name, int components,
                                    const double *values, int64_t num_cells,
                                    const defo_index *cell_elem) {
    if (mesh->num_elems == 0) return DEFO_OK;
    size_t n;
    if (!defo_mul_size((size_t)mesh->num_elems, (size_t)components, &n))
        return defo_error_oom("cell field", SIZE_MAX);
    double *d = defo_malloc(n * sizeof(double));
    if (!d) return defo_error_oom("cell field", n * sizeof(double));
    for (int64_t c = 0; c < num_cells; c++) {
        if (cell_elem[c] < 0) continue;
        memcpy(d + (size_t)cell_elem[c] * (size_t)components, values + c * components,
               (size_t)components * sizeof(double));
    }
    defo_status s = defo_mesh_add_field(mesh, field_name, DEFO_FIELD_CELL, components, d);
    defo_free(d);
    return s;
}

int64_t defo_vtk_num_cells(const defo_mesh *mesh) {
    return (int64_t)mesh->num_elems + (int64_t)mesh->num_tris;
}
int defo_vtk_elem_type(const defo_mesh *mesh) {
    /* a shell's elements are triangles (tri3, ITF04 §8) */
    if (mesh->nodes_per_elem == 3) return DEFO_VTK_TRIANGLE;
    return mesh->nodes_per_elem == 10 ? DEFO_VTK_QUADRATIC_TETRA : DEFO_VTK_TETRA;
}
int defo_vtk_tri_type(const defo_mesh *mesh) {
    return mesh->nodes_per_tri == 6 ? DEFO_VTK_QUADRATIC_TRIANGLE : DEFO_VTK_TRIANGLE;
}

/* ============================================================ legacy reader */
typedef enum ltype {
    LT_NONE,
    LT_U8,
    LT_I8,
    LT_U16,
    LT_I16,
    LT_U32,
    LT_I32,
    LT_U64,
    LT_I64,
    LT_F32,
    LT_F64
} ltype;

static ltype legacy_type(const char *t, size_t n) {
    static const struct {
        const char *name;
        ltype type;
    } map[] = {{"bit", LT_NONE},
               {"unsigned_char", LT_U8},
               {"char", LT_I8},
               {"unsigned_short", LT_U16},
               {"short", LT_I16},
               {"unsigned_int", LT_U32},
               {"int", LT_I32},
               {"unsigned_long", LT_U64},
               {"long", LT_I64},
               {"vtktypeint64", LT_I64},
               {"vtktypeuint64", LT_U64},
               {"vtkIdType", LT_I64},
               {"vtktypeint8", LT_I8},
               {"vtktypeuint8", LT_U8},
               {"vtktypeint16", LT_I16},
               {"vtktypeuint16", LT_U16},
               {"vtktypeint32", LT_I32},
               {"vtktypeuint32", LT_U32},
               {"vtktypefloat32", LT_F32},
               {"vtktypefloat64", LT_F64},
               {"float", LT_F32},
               {"double", LT_F64}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (defo_token_is(t, n, map[i].name)) return map[i].type;
    return LT_NONE;
}

static size_t ltype_size(ltype t) {
    switch (t) {
    case LT_U8:
    case LT_I8:
        return 1;
    case LT_U16:
    case LT_I16:
        return 2;
    case LT_U32:
    case LT_I32:
    case LT_F32:
        return 4;
    default:
        return 8;
    }
}

/* Big-endian value at p as a double (integers exactly up to 2^53). */
static double be_value(const unsigned char *p, ltype t, bool *is_int, int64_t *ival) {
    uint64_t u = 0;
    size_t n = ltype_size(t);
    for (size_t i = 0; i < n; i++) u = (u << 8) | p[i];
    *is_int = true;
    switch (t) {
    case LT_U8:
        *ival = (int64_t)(uint8_t)u;
        break;
    case LT_I8:
        *ival = (int8_t)(uint8_t)u;
        break;
    case LT_U16:
        *ival = (int64_t)(uint16_t)u;
        break;
    case LT_I16:
        *ival = (int16_t)(uint16_t)u;
        break;
    case LT_U32:
        *ival = (int64_t)(uint32_t)u;
        break;
    case LT_I32:
        *ival = (int32_t)(uint32_t)u;
        break;
    case LT_U64:
        *ival = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
        break;
    case LT_I64:
        *ival = (int64_t)u;
        break;
    case LT_F32: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        *is_int = false;
        return (double)f;
    }
    default: {
        double d;
        memcpy(&d, &u, 8);
        *is_int = false;
        return d;
    }
    }
    return (double)*ival;
}

typedef struct lfield {
    char name[DEFO_NAME_MAX];
    defo_field_location location;
    int components;
    double *data;
} lfield;

typedef struct lreader {
    defo_cursor c;
    bool binary;
    int64_t num_points;
    double *points;
    int64_t num_cells; /* from CELLS */
    int64_t *offsets;  /* num_cells + 1 */
    int64_t conn_size;
    int64_t *conn;
    int64_t num_types;
    int64_t *types;
    int64_t types_line;
    int data_location; /* -1 before POINT_DATA / CELL_DATA */
    int64_t data_count;
    lfield *fields;
    int num_fields;
    defo_cursor kc; /* the cursor after the last keyword line, with that line's number */
} lreader;

/* Read count values of type t as doubles (dst_d) or integers (dst_i). */
static defo_status read_values(lreader *r, ltype t, int64_t count, double *dst_d, int64_t *dst_i,
                               const char *what) {
    defo_cursor *c = &r->c;
    if (r->binary) {
        size_t sz = ltype_size(t);
        size_t nbytes;
        if (!defo_mul_size((size_t)count, sz, &nbytes) || nbytes > (size_t)(c->end - c->p))
            return defo_cursor_error_at_byte(c, DEFO_ERR_PARSE,
                                             "truncated: %s needs %lld values of %zu bytes", what,
                                             (long long)count, sz);
        const unsigned char *p = (const unsigned char *)c->p;
        for (int64_t i = 0; i < count; i++, p += sz) {
            bool is_int;
            int64_t iv = 0;
            double v = be_value(p, t, &is_int, &iv);
            if (dst_i) {
                if (!is_int)
                    return defo_cursor_error_at_byte(c, DEFO_ERR_PARSE,
                                                     "%s must have an integer type", what);
                dst_i[i] = iv;
            } else {
                if (!isfinite(v)) {
                    c->p = (const char *)p;
                    return defo_cursor_error_at_byte(c, DEFO_ERR_PARSE, "non-finite value in %s",
                                                     what);
                }
                dst_d[i] = v;
            }
        }
        c->p += nbytes;
        return DEFO_OK;
    }
    for (int64_t i = 0; i < count; i++) {
        defo_status s =
            dst_i ? defo_cursor_int64(c, what, &dst_i[i]) : defo_cursor_double(c, what, &dst_d[i]);
        if (s < 0) return s;
    }
    return DEFO_OK;
}

/* Next non-empty line, split into at most 8 whitespace-separated tokens. */
typedef struct ltoks {
    int n;
    const char *t[8];
    size_t len[8];
} ltoks;

static bool next_keyword_line(lreader *r, ltoks *k) {
    const char *line;
    size_t len;
    for (;;) {
        defo_cursor_skip_space(&r->c);
        int64_t kw_line = r->c.line;
        if (!defo_cursor_next_line(&r->c, &line, &len)) return false;
        r->kc = r->c; /* errors about the keyword name its own line */
        r->kc.line = kw_line;
        k->n = 0;
        size_t i = 0;
        while (i < len && k->n < 8) {
            while (i < len && (line[i] == ' ' || line[i] == '\t')) i++;
            if (i >= len) break;
            size_t st = i;
            while (i < len && line[i] != ' ' && line[i] != '\t') i++;
            k->t[k->n] = line + st;
            k->len[k->n] = i - st;
            k->n++;
        }
        if (k->n > 0) return true;
    }
}

static defo_status tok_int(const lreader *r, const ltoks *k, int i, const char *what,
                           int64_t *out) {
    if (i >= k->n || !defo_parse_int64(k->t[i], k->t[i] + k->len[i], out))
        return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "expected an integer for %s", what);
    return DEFO_OK;
}

static defo_status tok_type(const lreader *r, const ltoks *k, int i, ltype *out) {
    if (i >= k->n)
        return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "missing data type after %.*s",
                                 (int)k->len[0], k->t[0]);
    *out = legacy_type(k->t[i], k->len[i]);
    if (*out == LT_NONE)
        return defo_cursor_error(&r->kc, DEFO_ERR_UNSUPPORTED, "unsupported data type '%.*s'",
                                 (int)(k->len[i] > 40 ? 40 : k->len[i]), k->t[i]);
    return DEFO_OK;
}

/* Copy a legacy name, decoding %XX escapes (VTK writes spaces as %20). */
static defo_status tok_name(const lreader *r, const ltoks *k, int i, char *out) {
    if (i >= k->n) return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "missing array name");
    size_t o = 0;
    for (size_t j = 0; j < k->len[i]; j++) {
        char ch = k->t[i][j];
        if (ch == '%' && j + 2 < k->len[i]) {
            unsigned v = 0;
            bool ok = true;
            for (int h = 1; h <= 2; h++) {
                char x = k->t[i][j + (size_t)h];
                unsigned d = x >= '0' && x <= '9'   ? (unsigned)(x - '0')
                             : x >= 'a' && x <= 'f' ? (unsigned)(x - 'a' + 10)
                             : x >= 'A' && x <= 'F' ? (unsigned)(x - 'A' + 10)
                                                    : 99u;
                if (d > 15) ok = false;
                v = v * 16 + d;
            }
            if (ok) {
                ch = (char)v;
                j += 2;
            }
        }
        if (o + 1 >= DEFO_NAME_MAX)
            return defo_cursor_error(&r->kc, DEFO_ERR_UNSUPPORTED,
                                     "array name longer than %d characters", DEFO_NAME_MAX - 1);
        out[o++] = ch;
    }
    out[o] = '\0';
    return DEFO_OK;
}

/* After a binary payload the next keyword starts after a newline; in ASCII
 * the cursor is already between tokens. */
static defo_status read_field_block(lreader *r, const char *fname, int comps, ltype t, bool keep) {
    int64_t n = r->data_count;
    size_t each = r->binary ? ltype_size(t) : 2;
    defo_status s = defo_cursor_check_count(&r->c, n * comps, each, "data value");
    if (s < 0) return s;
    double *d = defo_malloc((size_t)(n * comps) * sizeof(double));
    if (!d) return defo_error_oom("field data", (size_t)(n * comps) * sizeof(double));
    s = read_values(r, t, n * comps, d, NULL, fname);
    if (s < 0 || !keep) {
        defo_free(d);
        return s;
    }
    lfield *nf = defo_realloc(r->fields, (size_t)(r->num_fields + 1) * sizeof(lfield));
    if (!nf) {
        defo_free(d);
        return defo_error_oom("field list", (size_t)(r->num_fields + 1) * sizeof(lfield));
    }
    r->fields = nf;
    lfield *f = &r->fields[r->num_fields++];
    memset(f, 0, sizeof *f);
    strncpy(f->name, fname, DEFO_NAME_MAX - 1);
    f->location = r->data_location == 0 ? DEFO_FIELD_POINT : DEFO_FIELD_CELL;
    f->components = comps;
    f->data = d;
    return DEFO_OK;
}

static defo_status legacy_cells(lreader *r, const ltoks *k) {
    defo_cursor *c = &r->c;
    int64_t a, b;
    defo_status s = tok_int(r, k, 1, "CELLS count", &a);
    if (s >= 0) s = tok_int(r, k, 2, "CELLS size", &b);
    if (s < 0) return s;
    if (r->offsets) return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "second CELLS section");
    /* The 5.1 form announces itself by an OFFSETS line right after. */
    const char *save_p = c->p;
    int64_t save_line = c->line;
    bool v51 = false;
    if (!r->binary) defo_cursor_skip_space(c);
    if ((size_t)(c->end - c->p) >= 7 && memcmp(c->p, "OFFSETS", 7) == 0) v51 = true;
    c->p = save_p;
    c->line = save_line;
    if (v51) {
        ltoks kk;
        ltype t;
        if (a < 1)
            return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "CELLS offset count must be >= 1");
        size_t each = r->binary ? 4 : 2;
        if ((s = defo_cursor_check_count(&r->kc, a, each, "cell offset")) < 0) return s;
        if ((s = defo_cursor_check_count(&r->kc, b, each, "connectivity entry")) < 0) return s;
        next_keyword_line(r, &kk);
        if ((s = tok_type(r, &kk, 1, &t)) < 0) return s;
        r->num_cells = a - 1;
        r->offsets = defo_malloc((size_t)a * sizeof(int64_t));
        if (!r->offsets) return defo_error_oom("cell offsets", (size_t)a * sizeof(int64_t));
        if ((s = read_values(r, t, a, NULL, r->offsets, "OFFSETS")) < 0) return s;
        if (!next_keyword_line(r, &kk) || !defo_token_is(kk.t[0], kk.len[0], "CONNECTIVITY"))
            return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "expected CONNECTIVITY after OFFSETS");
        if ((s = tok_type(r, &kk, 1, &t)) < 0) return s;
        r->conn_size = b;
        r->conn = defo_malloc((size_t)(b > 0 ? b : 1) * sizeof(int64_t));
        if (!r->conn) return defo_error_oom("connectivity", (size_t)b * sizeof(int64_t));
        return read_values(r, t, b, NULL, r->conn, "CONNECTIVITY");
    }
    /* Classic form: a cells, b integers in all, each cell "n i0 .. in-1". */
    size_t each = r->binary ? 4 : 2;
    if ((s = defo_cursor_check_count(&r->kc, a, 2 * each, "cell")) < 0) return s;
    if ((s = defo_cursor_check_count(&r->kc, b, each, "CELLS integer")) < 0) return s;
    if (b < a)
        return defo_cursor_error(&r->kc, DEFO_ERR_PARSE,
                                 "CELLS size %lld is smaller than the count %lld", (long long)b,
                                 (long long)a);
    int64_t *raw = defo_malloc((size_t)(b > 0 ? b : 1) * sizeof(int64_t));
    if (!raw) return defo_error_oom("cells", (size_t)b * sizeof(int64_t));
    int64_t raw_line = c->line;
    int64_t raw_byte = (int64_t)(c->p - c->begin);
    s = read_values(r, LT_I32, b, NULL, raw, "CELLS");
    if (s < 0) {
        defo_free(raw);
        return s;
    }
    r->num_cells = a;
    r->offsets = defo_malloc((size_t)(a + 1) * sizeof(int64_t));
    r->conn = defo_malloc((size_t)(b - a + 1) * sizeof(int64_t));
    if (!r->offsets || !r->conn) {
        defo_free(raw);
        return defo_error_oom("cells", (size_t)b * sizeof(int64_t));
    }
    int64_t pos = 0, o = 0;
    r->offsets[0] = 0;
    for (int64_t i = 0; i < a; i++) {
        int64_t n = pos < b ? raw[pos] : -1;
        /* the a - i - 1 cells after this one need at least one integer each */
        if (n < 0 || n > b - pos - 1 - (a - i - 1)) {
            defo_free(raw);
            if (r->binary)
                return defo_error(DEFO_ERR_PARSE,
                                  "%s: byte %lld: cell %lld: node count %lld disagrees with the "
                                  "CELLS size %lld",
                                  c->name, (long long)(raw_byte + 4 * pos), (long long)i,
                                  (long long)n, (long long)b);
            return grid_error(c->name, raw_line + i, DEFO_ERR_PARSE,
                              "cell %lld: node count %lld disagrees with the CELLS size %lld",
                              (long long)i, (long long)n, (long long)b);
        }
        memcpy(r->conn + o, raw + pos + 1, (size_t)n * sizeof(int64_t));
        o += n;
        pos += n + 1;
        r->offsets[i + 1] = o;
    }
    defo_free(raw);
    if (pos != b)
        return defo_cursor_error(&r->kc, DEFO_ERR_PARSE,
                                 "CELLS size %lld disagrees with the %lld integers the cells use",
                                 (long long)b, (long long)pos);
    r->conn_size = o;
    return DEFO_OK;
}

/* METADATA blocks end at an empty line. */
static void skip_metadata(lreader *r) {
    const char *line;
    size_t len;
    defo_cursor_skip_space(&r->c);
    while (defo_cursor_next_line(&r->c, &line, &len)) {
        bool blank = true;
        for (size_t i = 0; i < len; i++)
            if (line[i] != ' ' && line[i] != '\t') blank = false;
        if (blank) break;
    }
}

static defo_status legacy_body(lreader *r) {
    defo_cursor *c = &r->c;
    ltoks k;
    defo_status s;
    while (next_keyword_line(r, &k)) {
        const char *kw = k.t[0];
        size_t kl = k.len[0];
        if (defo_token_is(kw, kl, "DATASET")) {
            if (k.n < 2 || !defo_token_is(k.t[1], k.len[1], "UNSTRUCTURED_GRID"))
                return defo_cursor_error(&r->kc, DEFO_ERR_UNSUPPORTED,
                                         "dataset '%.*s' is not supported; defo reads "
                                         "UNSTRUCTURED_GRID",
                                         k.n < 2 ? 0 : (int)DEFO_MIN(k.len[1], 40),
                                         k.n < 2 ? "" : k.t[1]);
        } else if (defo_token_is(kw, kl, "POINTS")) {
            int64_t n;
            ltype t;
            if ((s = tok_int(r, &k, 1, "POINTS count", &n)) < 0) return s;
            if ((s = tok_type(r, &k, 2, &t)) < 0) return s;
            if (r->points)
                return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "second POINTS section");
            if ((s = defo_cursor_check_count(&r->kc, n, r->binary ? 3 * ltype_size(t) : 6,
                                             "point")) < 0)
                return s;
            r->num_points = n;
            r->points = defo_malloc((size_t)(3 * n + 1) * sizeof(double));
            if (!r->points) return defo_error_oom("points", (size_t)(3 * n) * sizeof(double));
            if ((s = read_values(r, t, 3 * n, r->points, NULL, "POINTS")) < 0) return s;
        } else if (defo_token_is(kw, kl, "CELLS")) {
            if ((s = legacy_cells(r, &k)) < 0) return s;
        } else if (defo_token_is(kw, kl, "CELL_TYPES")) {
            int64_t n;
            if ((s = tok_int(r, &k, 1, "CELL_TYPES count", &n)) < 0) return s;
            if (r->types)
                return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "second CELL_TYPES section");
            if ((s = defo_cursor_check_count(&r->kc, n, r->binary ? 4 : 2, "cell type")) < 0)
                return s;
            r->num_types = n;
            r->types_line = c->line;
            r->types = defo_malloc((size_t)(n + 1) * sizeof(int64_t));
            if (!r->types) return defo_error_oom("cell types", (size_t)n * sizeof(int64_t));
            if ((s = read_values(r, LT_I32, n, NULL, r->types, "CELL_TYPES")) < 0) return s;
        } else if (defo_token_is(kw, kl, "POINT_DATA") || defo_token_is(kw, kl, "CELL_DATA")) {
            bool point = kw[0] == 'P';
            if ((s = tok_int(r, &k, 1, "data count", &r->data_count)) < 0) return s;
            int64_t want = point ? r->num_points : r->num_cells;
            if (r->data_count != want)
                return defo_cursor_error(
                    &r->kc, DEFO_ERR_PARSE, "%.*s %lld disagrees with the %lld %s", (int)kl, kw,
                    (long long)r->data_count, (long long)want, point ? "points" : "cells");
            r->data_location = point ? 0 : 1;
        } else if (defo_token_is(kw, kl, "SCALARS") || defo_token_is(kw, kl, "VECTORS") ||
                   defo_token_is(kw, kl, "NORMALS") || defo_token_is(kw, kl, "TENSORS")) {
            char fname[DEFO_NAME_MAX];
            ltype t;
            int64_t comps = kw[0] == 'S' ? 1 : kw[0] == 'T' ? 9 : 3;
            if (r->data_location < 0)
                return defo_cursor_error(&r->kc, DEFO_ERR_PARSE,
                                         "%.*s before POINT_DATA or CELL_DATA", (int)kl, kw);
            if ((s = tok_name(r, &k, 1, fname)) < 0) return s;
            if ((s = tok_type(r, &k, 2, &t)) < 0) return s;
            if (kw[0] == 'S' && k.n > 3) {
                if ((s = tok_int(r, &k, 3, "SCALARS components", &comps)) < 0) return s;
                if (comps < 1 || comps > 4)
                    return defo_cursor_error(&r->kc, DEFO_ERR_PARSE,
                                             "SCALARS components %lld out of range 1..4",
                                             (long long)comps);
            }
            if (kw[0] == 'S') {
                /* LOOKUP_TABLE line (required by the format, tolerated when absent) */
                const char *save_p = c->p;
                int64_t save_line = c->line;
                if (!r->binary) defo_cursor_skip_space(c);
                if ((size_t)(c->end - c->p) >= 12 && memcmp(c->p, "LOOKUP_TABLE", 12) == 0) {
                    ltoks kk;
                    next_keyword_line(r, &kk);
                } else {
                    c->p = save_p;
                    c->line = save_line;
                }
            }
            if ((s = read_field_block(r, fname, (int)comps, t, true)) < 0) return s;
        } else if (defo_token_is(kw, kl, "FIELD")) {
            int64_t narrays;
            if (r->data_location < 0)
                return defo_cursor_error(&r->kc, DEFO_ERR_PARSE,
                                         "FIELD before POINT_DATA or CELL_DATA");
            if ((s = tok_int(r, &k, 2, "FIELD array count", &narrays)) < 0) return s;
            if ((s = defo_cursor_check_count(&r->kc, narrays, 8, "FIELD array")) < 0) return s;
            for (int64_t a = 0; a < narrays; a++) {
                ltoks kk;
                char fname[DEFO_NAME_MAX];
                int64_t comps, tuples;
                ltype t;
                if (!next_keyword_line(r, &kk))
                    return defo_cursor_error(&r->kc, DEFO_ERR_PARSE,
                                             "unexpected end of file in FIELD array %lld",
                                             (long long)a);
                if (defo_token_is(kk.t[0], kk.len[0], "NULL_ARRAY")) continue;
                if ((s = tok_name(r, &kk, 0, fname)) < 0) return s;
                if ((s = tok_int(r, &kk, 1, "FIELD components", &comps)) < 0) return s;
                if ((s = tok_int(r, &kk, 2, "FIELD tuples", &tuples)) < 0) return s;
                if ((s = tok_type(r, &kk, 3, &t)) < 0) return s;
                if (comps < 1 || comps > 1024)
                    return defo_cursor_error(&r->kc, DEFO_ERR_PARSE,
                                             "FIELD array '%s': %lld components", fname,
                                             (long long)comps);
                if (tuples != r->data_count)
                    return defo_cursor_error(&r->kc, DEFO_ERR_PARSE,
                                             "FIELD array '%s' has %lld tuples, expected %lld",
                                             fname, (long long)tuples, (long long)r->data_count);
                if ((s = read_field_block(r, fname, (int)comps, t, true)) < 0) return s;
                /* VTK 9 writes METADATA after an array */
                const char *save_p = c->p;
                int64_t save_line = c->line;
                defo_cursor_skip_space(c);
                if ((size_t)(c->end - c->p) >= 8 && memcmp(c->p, "METADATA", 8) == 0) {
                    skip_metadata(r);
                } else {
                    c->p = save_p;
                    c->line = save_line;
                }
            }
        } else if (defo_token_is(kw, kl, "METADATA")) {
            skip_metadata(r);
        } else if (defo_token_is(kw, kl, "LOOKUP_TABLE") ||
                   defo_token_is(kw, kl, "COLOR_SCALARS") ||
                   defo_token_is(kw, kl, "TEXTURE_COORDINATES")) {
            /* read past: colours and texture coordinates are not mesh data */
            int64_t n, per;
            ltype t = LT_F32;
            if (kw[0] == 'L') {
                if ((s = tok_int(r, &k, 2, "LOOKUP_TABLE size", &n)) < 0) return s;
                per = 4;
                if (r->binary) t = LT_U8;
            } else if (kw[0] == 'C') {
                if ((s = tok_int(r, &k, 2, "COLOR_SCALARS components", &per)) < 0) return s;
                n = r->data_count;
                if (r->binary) t = LT_U8;
            } else {
                if ((s = tok_int(r, &k, 2, "TEXTURE_COORDINATES dimension", &per)) < 0) return s;
                if ((s = tok_type(r, &k, 3, &t)) < 0) return s;
                n = r->data_count;
            }
            if (r->data_location < 0 && kw[0] != 'L')
                return defo_cursor_error(&r->kc, DEFO_ERR_PARSE,
                                         "%.*s before POINT_DATA or CELL_DATA", (int)kl, kw);
            if (per < 1 || per > 16 || n < 0)
                return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "bad %.*s sizes", (int)kl, kw);
            int64_t save = r->data_count;
            r->data_count = n;
            s = read_field_block(r, "ignored", (int)per, t, false);
            r->data_count = save;
            if (s < 0) return s;
        } else {
            return defo_cursor_error(&r->kc, DEFO_ERR_PARSE, "unknown keyword '%.*s'",
                                     (int)DEFO_MIN(kl, 40), kw);
        }
    }
    return DEFO_OK;
}

defo_status defo_read_vtk(const char *data, size_t size, const char *name, defo_mesh **out) {
    *out = NULL;
    lreader r;
    memset(&r, 0, sizeof r);
    r.data_location = -1;
    defo_cursor_init(&r.c, name, data, size);
    defo_cursor *c = &r.c;
    const char *line;
    size_t len;
    defo_status s = DEFO_OK;
    if (!defo_cursor_next_line(c, &line, &len) || len < 22 ||
        memcmp(line, "# vtk DataFile Version", 22) != 0) {
        c->line = 1;
        return defo_cursor_error(c, DEFO_ERR_PARSE,
                                 "not a legacy VTK file (first line must be '# vtk DataFile "
                                 "Version x.x')");
    }
    if (!defo_cursor_next_line(c, &line, &len) || !defo_cursor_next_line(c, &line, &len))
        return defo_cursor_error(c, DEFO_ERR_PARSE, "truncated header (title and ASCII/BINARY)");
    while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
    while (len > 0 && (line[0] == ' ' || line[0] == '\t')) line++, len--;
    if (defo_token_is(line, len, "BINARY"))
        r.binary = true;
    else if (!defo_token_is(line, len, "ASCII")) {
        c->line--;
        return defo_cursor_error(c, DEFO_ERR_PARSE, "third line must be ASCII or BINARY");
    }
    s = legacy_body(&r);
    if (s >= 0 && !r.points) s = defo_cursor_error(c, DEFO_ERR_PARSE, "no POINTS section");
    if (s >= 0 && r.offsets && r.num_types != r.num_cells)
        s = defo_cursor_error(c, DEFO_ERR_PARSE, "CELL_TYPES has %lld entries, CELLS %lld",
                              (long long)r.num_types, (long long)r.num_cells);
    if (s >= 0 && !r.offsets && r.types)
        s = defo_cursor_error(c, DEFO_ERR_PARSE, "CELL_TYPES without CELLS");
    defo_index *cell_elem = NULL;
    defo_mesh *m = NULL;
    if (s >= 0) {
        int64_t zero = 0;
        defo_vtk_grid g = {
            r.num_points, r.points, r.num_cells, r.types, r.offsets ? r.offsets : &zero,
            r.conn_size,  r.conn};
        cell_elem = defo_malloc((size_t)(r.num_cells + 1) * sizeof(defo_index));
        if (!cell_elem) s = defo_error_oom("cells", (size_t)r.num_cells * sizeof(defo_index));
        if (s >= 0) s = defo_vtk_build_mesh(&g, name, r.binary ? 0 : r.types_line, &m, cell_elem);
    }
    /* a mixed-order grid read as quadratic: the warning survives the fields */
    char warning[512] = "";
    if (s > 0) snprintf(warning, sizeof warning, "%s", defo_last_error());
    for (int i = 0; s >= 0 && i < r.num_fields; i++) {
        lfield *f = &r.fields[i];
        if (f->location == DEFO_FIELD_POINT)
            s = defo_vtk_add_point_field(m, f->name, f->components, f->data, r.num_points);
        else
            s = defo_vtk_add_cell_field(m, f->name, f->components, f->data, r.num_cells, cell_elem);
    }
    for (int i = 0; i < r.num_fields; i++) defo_free(r.fields[i].data);
    defo_free(r.fields);
    defo_free(cell_elem);
    defo_free(r.points);
    defo_free(r.offsets);
    defo_free(r.conn);
    defo_free(r.types);
    if (s < 0) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return warning[0] ? defo_error(DEFO_WARNING, "%s", warning) : DEFO_OK;
}

/* ============================================================ legacy writer */
typedef struct bew {
    defo_out *o;
    unsigned char buf[4096];
    size_t n;
} bew;

static void bew_flush(bew *w) {
    defo_out_write(w->o, w->buf, w->n);
    w->n = 0;
}
static void bew_u(bew *w, uint64_t u, size_t bytes) {
    if (w->n + bytes > sizeof w->buf) bew_flush(w);
    for (size_t i = 0; i < bytes; i++)
        w->buf[w->n + i] = (unsigned char)(u >> (8 * (bytes - 1 - i)));
    w->n += bytes;
}
static void bew_double(bew *w, double v) {
    uint64_t u;
    memcpy(&u, &v, 8);
    bew_u(w, u, 8);
}

/* Values one tuple per line in ASCII; one big-endian run in binary. */
static void write_doubles(defo_out *o, bool binary, const double *v, int64_t tuples, int comps) {
    if (binary) {
        bew w = {.o = o, .n = 0};
        for (int64_t i = 0; i < tuples * comps; i++) bew_double(&w, v[i]);
        bew_flush(&w);
        defo_out_write(o, "\n", 1);
        return;
    }
    for (int64_t i = 0; i < tuples; i++) {
        for (int k = 0; k < comps; k++) {
            if (k) defo_out_write(o, " ", 1);
            defo_out_double(o, v[i * comps + k]);
        }
        defo_out_write(o, "\n", 1);
    }
}

static void write_legacy_name(defo_out *o, const char *s) {
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch <= ' ' || ch == '%' || ch > 126)
            defo_out_printf(o, "%%%02X", ch);
        else
            defo_out_write(o, s, 1);
    }
}

defo_status defo_write_vtk(const char *path, const defo_mesh *mesh, const defo_write_options *opt) {
    bool binary = opt ? opt->binary != 0 : true;
    const double *x = opt && opt->positions ? opt->positions : mesh->x;
    int64_t ncells = defo_vtk_num_cells(mesh);
    int64_t nnodes = mesh->num_nodes;
    int npe = mesh->nodes_per_elem, npt = mesh->nodes_per_tri;
    defo_out o;
    defo_status s = defo_out_open(&o, path);
    if (s < 0) return s;
    defo_out_printf(&o, "# vtk DataFile Version 3.0\ndefo %s\n%s\nDATASET UNSTRUCTURED_GRID\n",
                    DEFO_VERSION_STRING, binary ? "BINARY" : "ASCII");
    defo_out_printf(&o, "POINTS %lld double\n", (long long)nnodes);
    write_doubles(&o, binary, x, nnodes, 3);
    int64_t total = (int64_t)mesh->num_elems * (npe + 1) + (int64_t)mesh->num_tris * (npt + 1);
    defo_out_printf(&o, "CELLS %lld %lld\n", (long long)ncells, (long long)total);
    bew w = {.o = &o, .n = 0};
    for (int pass = 0; pass < 2; pass++) {
        int64_t n = pass == 0 ? mesh->num_elems : mesh->num_tris;
        int per = pass == 0 ? npe : npt;
        const defo_index *conn = pass == 0 ? mesh->elems : mesh->tris;
        for (int64_t e = 0; e < n; e++) {
            if (binary) {
                bew_u(&w, (uint32_t)per, 4);
                for (int k = 0; k < per; k++) bew_u(&w, (uint32_t)conn[e * per + k], 4);
            } else {
                defo_out_printf(&o, "%d", per);
                for (int k = 0; k < per; k++) defo_out_printf(&o, " %d", (int)conn[e * per + k]);
                defo_out_write(&o, "\n", 1);
            }
        }
    }
    if (binary) {
        bew_flush(&w);
        defo_out_write(&o, "\n", 1);
    }
    defo_out_printf(&o, "CELL_TYPES %lld\n", (long long)ncells);
    for (int64_t c = 0; c < ncells; c++) {
        int t = c < mesh->num_elems ? defo_vtk_elem_type(mesh) : defo_vtk_tri_type(mesh);
        if (binary)
            bew_u(&w, (uint32_t)t, 4);
        else
            defo_out_printf(&o, "%d\n", t);
    }
    if (binary) {
        bew_flush(&w);
        defo_out_write(&o, "\n", 1);
    }
    for (int loc = 0; loc < 2; loc++) {
        int count = 0;
        for (int i = 0; i < mesh->num_fields; i++)
            if ((int)mesh->fields[i].location == loc && (loc == 0 || mesh->num_elems > 0)) count++;
        if (!count) continue;
        defo_out_printf(&o, "%s %lld\nFIELD FieldData %d\n", loc == 0 ? "POINT_DATA" : "CELL_DATA",
                        (long long)(loc == 0 ? nnodes : ncells), count);
        for (int i = 0; i < mesh->num_fields; i++) {
            const defo_field *f = &mesh->fields[i];
            if ((int)f->location != loc || (loc == 1 && mesh->num_elems == 0)) continue;
            write_legacy_name(&o, f->name);
            defo_out_printf(&o, " %d %lld double\n", f->components,
                            (long long)(loc == 0 ? nnodes : ncells));
            int64_t rows = loc == 0 ? nnodes : mesh->num_elems;
            if (binary) {
                /* one run: element values, then zeros for the triangle cells */
                for (int64_t j = 0; j < rows * f->components; j++) bew_double(&w, f->data[j]);
                for (int64_t j = 0; loc == 1 && j < (int64_t)mesh->num_tris * f->components; j++)
                    bew_double(&w, 0.0);
                bew_flush(&w);
                defo_out_write(&o, "\n", 1);
            } else {
                write_doubles(&o, false, f->data, rows, f->components);
                for (int64_t j = 0; loc == 1 && j < mesh->num_tris; j++) {
                    for (int k = 0; k < f->components; k++)
                        defo_out_write(&o, k ? " 0" : "0", k ? 2 : 1);
                    defo_out_write(&o, "\n", 1);
                }
            }
        }
    }
    return defo_out_commit(&o);
}
