/*
 * io/gmsh.c — Gmsh .msh 2.2 and 4.1 meshes, ASCII and binary, read and write.
 *
 * What it reads: nodes, 4- and 10-node tetrahedra (types 4, 11), 3- and
 * 6-node triangles (types 2, 9), physical tags (2.2: first element tag; 4.1:
 * first physical tag of the element's entity in $Entities) and
 * $PhysicalNames.  Points and lines (types 15, 1, 8, 26-28) are boundary
 * decorations and are skipped; any other type is refused by name, since
 * defo's elements are tetrahedra.  Data views ($ElementData, $NodeData,
 * after $Elements) become cell and point fields named by the view's first
 * string tag, e.g. a fibre direction field (3 components) for transversely
 * isotropic bodies; tetrahedra a view does not list get zeros, entries for
 * other elements are skipped, and a later view of the same name (another
 * time step) replaces an earlier one.  Other unknown sections ($Periodic,
 * $ElementNodeData...) are skipped up to their $End line.
 *
 * Invariants and why:
 *   - Node tags are arbitrary positive integers (sparse, unordered).  They
 *     are mapped to 0-based indices with a direct table when the largest tag
 *     is close to the node count, otherwise with a sorted (tag, index) array,
 *     so an absurd tag cannot cause an absurd allocation.
 *   - Every count read from the file is checked with defo_cursor_check_count
 *     against the bytes left before anything is allocated for it.
 *   - Gmsh numbers the tet10 edge nodes (0,1)(1,2)(2,0)(3,0)(3,2)(3,1); defo
 *     (VTK) uses (0,1)(1,2)(0,2)(0,3)(1,3)(2,3): the last two are swapped on
 *     read and on write (checked numerically against a mesh made by gmsh in
 *     tests/test_io_gmsh.c).  Edge direction does not matter for midpoints.
 *     Triangles (tri6) share defo's order.
 *   - Binary files: 2.2 and 4.1 carry the integer 1 after the header; a
 *     byte-swapped 1 means the other endianness and every value is swapped.
 *     4.1's data-size gives the width of size_t fields (4 or 8).
 *   - The writer numbers nodes and elements from 1 in mesh order.  In 4.1 it
 *     makes one entity per distinct tag and one element block per run of
 *     equal tags, so write -> read keeps element order and tags exactly.
 *     Coordinates are written as shortest round-trip decimals (ASCII) or raw
 *     doubles (binary): the round trip is bitwise.
 */
#include "io/formats.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- element types */
typedef struct msh_type_info {
    int nodes; /* 0: unknown type */
    int dim;
    const char *name;
} msh_type_info;

static msh_type_info msh_type(int64_t type) {
    static const msh_type_info table[] = {
        {0, 0, NULL},
        {2, 1, "2-node line"},
        {3, 2, "3-node triangle"},
        {4, 2, "4-node quadrangle"},
        {4, 3, "4-node tetrahedron"},
        {8, 3, "8-node hexahedron"},
        {6, 3, "6-node prism"},
        {5, 3, "5-node pyramid"},
        {3, 1, "3-node line"},
        {6, 2, "6-node triangle"},
        {9, 2, "9-node quadrangle"},
        {10, 3, "10-node tetrahedron"},
        {27, 3, "27-node hexahedron"},
        {18, 3, "18-node prism"},
        {14, 3, "14-node pyramid"},
        {1, 0, "1-node point"},
        {8, 2, "8-node quadrangle"},
        {20, 3, "20-node hexahedron"},
        {15, 3, "15-node prism"},
        {13, 3, "13-node pyramid"},
        {9, 2, "9-node triangle"},
        {10, 2, "10-node triangle"},
        {12, 2, "12-node triangle"},
        {15, 2, "15-node triangle"},
        {15, 2, "15-node triangle"},
        {21, 2, "21-node triangle"},
        {4, 1, "4-node line"},
        {5, 1, "5-node line"},
        {6, 1, "6-node line"},
        {20, 3, "20-node tetrahedron"},
        {35, 3, "35-node tetrahedron"},
        {56, 3, "56-node tetrahedron"},
    };
    msh_type_info none = {0, 0, NULL};
    if (type >= 1 && type < (int64_t)(sizeof table / sizeof table[0])) return table[type];
    if (type == 92) return (msh_type_info){64, 3, "64-node hexahedron"};
    if (type == 93) return (msh_type_info){125, 3, "125-node hexahedron"};
    return none;
}

enum { MSH_TRI3 = 2, MSH_TET4 = 4, MSH_TRI6 = 9, MSH_TET10 = 11 };
/* Gmsh tet10 slot k holds defo slot msh_tet10_perm[k] (an involution). */
static const int msh_tet10_perm[10] = {0, 1, 2, 3, 4, 5, 6, 7, 9, 8};

/* --------------------------------------------------------------- reader */
typedef struct msh_entity {
    int32_t tag;
    int32_t phys;
} msh_entity;

typedef struct msh_name {
    int dim;
    int32_t tag;
    char name[DEFO_NAME_MAX];
} msh_name;

typedef struct msh_tag_index {
    int64_t tag;
    defo_index index;
} msh_tag_index;

typedef struct msh_reader {
    defo_cursor c;
    int version; /* 2 or 4 */
    int binary;
    int size_bytes; /* 4.1 binary size_t width */
    bool swap;      /* binary data of the other endianness */

    /* nodes */
    int64_t num_nodes;
    int64_t *node_tag;
    double *x;
    int64_t nodes_line; /* line of $Nodes, for messages about the whole section */
    /* tag -> index: dense table or sorted pairs */
    int32_t *dense;
    int64_t dense_len;
    msh_tag_index *sorted;

    /* 4.1 entities of dim 2 and 3 (sorted by tag) */
    msh_entity *ent[4];
    int64_t num_ent[4];
    bool have_entities;

    /* elements */
    int elem_type; /* 0 until the first tetrahedron */
    int64_t num_elems, elem_cap;
    defo_index *elems;
    int32_t *elem_tag;
    msh_tag_index *elem_ids; /* (file tag, index) of the tetrahedra, sorted for data views */
    int64_t elem_ids_cap;
    int tri_type;
    int64_t num_tris, tri_cap;
    defo_index *tris;
    int32_t *tri_tag;

    /* physical names */
    msh_name *names;
    int64_t num_names;

    /* data views read so far, attached to the mesh at the end */
    struct msh_field *fields;
    int num_fields;
} msh_reader;

/* A data view ($ElementData / $NodeData) as a field. */
typedef struct msh_field {
    char name[DEFO_NAME_MAX];
    defo_field_location location;
    int components;
    double *data;
} msh_field;

static void msh_reader_free(msh_reader *r) {
    defo_free(r->node_tag);
    defo_free(r->x);
    defo_free(r->dense);
    defo_free(r->sorted);
    for (int d = 0; d < 4; d++) defo_free(r->ent[d]);
    defo_free(r->elems);
    defo_free(r->elem_tag);
    defo_free(r->elem_ids);
    defo_free(r->fields);
    defo_free(r->tris);
    defo_free(r->tri_tag);
    defo_free(r->names);
}

/* Error at the cursor: byte offset inside binary payloads, line otherwise. */
static defo_status msh_error(const msh_reader *r, defo_status status, const char *fmt, ...)
    DEFO_PRINTF(3, 4);
static defo_status msh_error(const msh_reader *r, defo_status status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (r->binary) return defo_cursor_error_at_byte(&r->c, status, "%s", msg);
    return defo_cursor_error(&r->c, status, "%s", msg);
}

static void msh_swap_bytes(void *p, size_t n) {
    unsigned char *b = p;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned char t = b[i];
        b[i] = b[n - 1 - i];
        b[n - 1 - i] = t;
    }
}

static defo_status msh_bin(msh_reader *r, const char *what, void *dst, size_t n) {
    defo_status s = defo_cursor_bytes(&r->c, what, dst, n);
    if (s == DEFO_OK && r->swap) msh_swap_bytes(dst, n);
    return s;
}

/* An int field (32-bit in binary). */
static defo_status msh_int(msh_reader *r, const char *what, int64_t *out) {
    if (!r->binary) return defo_cursor_int64(&r->c, what, out);
    int32_t v;
    defo_status s = msh_bin(r, what, &v, 4);
    *out = v;
    return s;
}

/* A size_t field (4.1): data-size bytes in binary; never negative. */
static defo_status msh_size(msh_reader *r, const char *what, int64_t *out) {
    if (!r->binary) {
        defo_status s = defo_cursor_int64(&r->c, what, out);
        if (s == DEFO_OK && *out < 0)
            return msh_error(r, DEFO_ERR_PARSE, "%s must not be negative (%lld)", what,
                             (long long)*out);
        return s;
    }
    if (r->size_bytes == 4) {
        uint32_t v;
        defo_status s = msh_bin(r, what, &v, 4);
        *out = (int64_t)v;
        return s;
    }
    uint64_t v;
    defo_status s = msh_bin(r, what, &v, 8);
    if (s != DEFO_OK) return s;
    if (v > (uint64_t)INT64_MAX) return msh_error(r, DEFO_ERR_PARSE, "%s is absurd", what);
    *out = (int64_t)v;
    return DEFO_OK;
}

static defo_status msh_double(msh_reader *r, const char *what, double *out) {
    if (!r->binary) return defo_cursor_double(&r->c, what, out);
    defo_status s = msh_bin(r, what, out, 8);
    if (s == DEFO_OK && !isfinite(*out)) {
        r->c.p -= 8; /* report the value's own offset */
        return msh_error(r, DEFO_ERR_PARSE, "%s is not a finite number", what);
    }
    return s;
}

/* defo_cursor_check_count, but with a byte offset inside binary payloads. */
static defo_status msh_check_count(msh_reader *r, int64_t count, size_t min_bytes_each,
                                   const char *what) {
    if (!r->binary) return defo_cursor_check_count(&r->c, count, min_bytes_each, what);
    size_t remaining = (size_t)(r->c.end - r->c.p);
    if (count < 0 || count > DEFO_INDEX_MAX ||
        (min_bytes_each > 0 && (uint64_t)count > remaining / min_bytes_each))
        return defo_cursor_error_at_byte(
            &r->c, count > DEFO_INDEX_MAX ? DEFO_ERR_UNSUPPORTED : DEFO_ERR_PARSE,
            "%s count %lld cannot fit in the %zu bytes that remain "
            "(truncated file or wrong count)",
            what, (long long)count, remaining);
    return DEFO_OK;
}

/* After an ASCII header line that precedes binary data: consume the rest of
 * the line including its line end, so the cursor sits on the first byte. */
static defo_status msh_end_of_line(msh_reader *r) {
    defo_cursor_skip_blank(&r->c);
    if (r->c.p < r->c.end && *r->c.p == '\r') r->c.p++;
    if (r->c.p < r->c.end && *r->c.p == '\n') {
        r->c.p++;
        r->c.line++;
        return DEFO_OK;
    }
    return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "expected the end of the line");
}

/* The next non-empty line must be exactly `marker` (trailing blanks allowed). */
static defo_status msh_expect(msh_reader *r, const char *marker) {
    defo_cursor_skip_space(&r->c);
    const char *line;
    size_t len;
    int64_t at = r->c.line;
    const char *start = r->c.p;
    if (!defo_cursor_next_line(&r->c, &line, &len))
        return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "missing %s (file truncated?)", marker);
    while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
    if (defo_token_is(line, len, marker)) return DEFO_OK;
    /* report where the unexpected text starts, with a printable excerpt */
    char shown[24];
    size_t n = 0;
    for (size_t i = 0; i < len && n < sizeof shown - 1; i++)
        shown[n++] = (line[i] >= 32 && line[i] < 127) ? line[i] : '?';
    shown[n] = 0;
    r->c.p = start;
    r->c.line = at;
    return msh_error(r, DEFO_ERR_PARSE, "expected %s, found \"%s%s\"", marker, shown,
                     len > n ? "..." : "");
}

/* ---------------------------------------------------------- $MeshFormat */
static defo_status msh_read_format(msh_reader *r) {
    const char *tok;
    size_t len;
    defo_cursor_skip_space(&r->c);
    if (!defo_cursor_token(&r->c, &tok, &len))
        return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "missing version in $MeshFormat");
    if (defo_token_is(tok, len, "2.2") || defo_token_is(tok, len, "2.1") ||
        defo_token_is(tok, len, "2") || defo_token_is(tok, len, "2.0")) {
        r->version = 2;
    } else if (defo_token_is(tok, len, "4.1")) {
        r->version = 4;
    } else {
        char v[16];
        size_t n = DEFO_MIN(len, sizeof v - 1);
        for (size_t i = 0; i < n; i++) v[i] = (tok[i] >= 32 && tok[i] < 127) ? tok[i] : '?';
        v[n] = 0;
        return defo_cursor_error(&r->c, DEFO_ERR_UNSUPPORTED,
                                 "msh version %s is not supported (defo reads 2.2 and 4.1)", v);
    }
    int64_t file_type, data_size;
    defo_status s = defo_cursor_int64(&r->c, "file type", &file_type);
    if (s == DEFO_OK) s = defo_cursor_int64(&r->c, "data size", &data_size);
    if (s != DEFO_OK) return s;
    if (file_type != 0 && file_type != 1)
        return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "file type must be 0 or 1, not %lld",
                                 (long long)file_type);
    /* binary: doubles are 8 bytes; 4.1's data size is the width of size_t */
    if (file_type == 1 && data_size != 8 && !(r->version == 4 && data_size == 4))
        return defo_cursor_error(&r->c, DEFO_ERR_UNSUPPORTED, "data size %lld is not supported",
                                 (long long)data_size);
    r->size_bytes = (int)data_size;
    if (file_type == 1) {
        if ((s = msh_end_of_line(r)) != DEFO_OK) return s;
        r->binary = 1;
        int32_t one;
        if ((s = defo_cursor_bytes(&r->c, "endianness check", &one, 4)) != DEFO_OK) return s;
        if (one != 1) {
            msh_swap_bytes(&one, 4);
            if (one != 1) {
                r->c.p -= 4;
                return defo_cursor_error_at_byte(&r->c, DEFO_ERR_PARSE,
                                                 "bad endianness check (expected the integer 1)");
            }
            r->swap = true;
        }
    }
    return msh_expect(r, "$EndMeshFormat");
}

/* -------------------------------------------------------- $PhysicalNames */
static defo_status msh_read_names(msh_reader *r) {
    int64_t count;
    defo_status s = defo_cursor_int64(&r->c, "number of physical names", &count);
    if (s == DEFO_OK) s = defo_cursor_check_count(&r->c, count, 8, "physical names");
    if (s != DEFO_OK) return s;
    defo_free(r->names);
    r->num_names = 0;
    r->names = defo_calloc((size_t)DEFO_MAX(count, 1), sizeof *r->names);
    if (!r->names) return defo_error_oom("physical names", (size_t)count * sizeof *r->names);
    for (int64_t i = 0; i < count; i++) {
        int64_t dim, tag;
        if ((s = defo_cursor_int64(&r->c, "physical dimension", &dim)) != DEFO_OK ||
            (s = defo_cursor_int64(&r->c, "physical tag", &tag)) != DEFO_OK)
            return s;
        if (dim < 0 || dim > 3)
            return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "physical dimension %lld is not 0-3",
                                     (long long)dim);
        if (tag < INT32_MIN || tag > INT32_MAX)
            return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "physical tag %lld is out of range",
                                     (long long)tag);
        defo_cursor_skip_blank(&r->c);
        if (r->c.p >= r->c.end || *r->c.p != '"')
            return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "expected a quoted physical name");
        const char *q = r->c.p + 1;
        const char *e = q;
        while (e < r->c.end && *e != '"' && *e != '\n') e++;
        if (e >= r->c.end || *e != '"')
            return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "unterminated physical name");
        r->c.p = e + 1;
        if (dim < 2) continue; /* defo groups are triangles or tetrahedra */
        msh_name *n = &r->names[r->num_names++];
        n->dim = (int)dim;
        n->tag = (int32_t)tag;
        size_t len = DEFO_MIN((size_t)(e - q), (size_t)DEFO_NAME_MAX - 1);
        memcpy(n->name, q, len);
        n->name[len] = 0;
    }
    return msh_expect(r, "$EndPhysicalNames");
}

/* ------------------------------------------------------------ $Entities */
static int msh_entity_cmp(const void *a, const void *b) {
    const msh_entity *x = a, *y = b;
    return (x->tag > y->tag) - (x->tag < y->tag);
}

static defo_status msh_read_entities(msh_reader *r) {
    int64_t count[4];
    defo_status s;
    static const char *const what[4] = {"number of points", "number of curves",
                                        "number of surfaces", "number of volumes"};
    for (int d = 0; d < 4; d++)
        if ((s = msh_size(r, what[d], &count[d])) != DEFO_OK) return s;
    for (int d = 0; d < 4; d++) {
        /* a point is at least tag + 3 doubles + a count; others more */
        if ((s = msh_check_count(r, count[d], r->binary ? 32 : 10, what[d])) != DEFO_OK) return s;
        defo_free(r->ent[d]);
        r->ent[d] = defo_calloc((size_t)DEFO_MAX(count[d], 1), sizeof(msh_entity));
        r->num_ent[d] = count[d];
        if (!r->ent[d]) return defo_error_oom("entities", (size_t)count[d] * sizeof(msh_entity));
        for (int64_t i = 0; i < count[d]; i++) {
            int64_t tag, nphys, nbound, v;
            double box;
            if ((s = msh_int(r, "entity tag", &tag)) != DEFO_OK) return s;
            for (int k = 0; k < (d == 0 ? 3 : 6); k++)
                if ((s = msh_double(r, "entity bounding box", &box)) != DEFO_OK) return s;
            if ((s = msh_size(r, "number of physical tags", &nphys)) != DEFO_OK ||
                (s = msh_check_count(r, nphys, r->binary ? 4 : 2, "physical tags")) != DEFO_OK)
                return s;
            if (tag < INT32_MIN || tag > INT32_MAX)
                return msh_error(r, DEFO_ERR_PARSE, "entity tag %lld is out of range",
                                 (long long)tag);
            r->ent[d][i].tag = (int32_t)tag;
            for (int64_t k = 0; k < nphys; k++) {
                if ((s = msh_int(r, "physical tag", &v)) != DEFO_OK) return s;
                if (v < INT32_MIN || v > INT32_MAX)
                    return msh_error(r, DEFO_ERR_PARSE, "physical tag %lld is out of range",
                                     (long long)v);
                if (k == 0) r->ent[d][i].phys = (int32_t)v;
            }
            if (d == 0) continue;
            if ((s = msh_size(r, "number of bounding entities", &nbound)) != DEFO_OK ||
                (s = msh_check_count(r, nbound, r->binary ? 4 : 2, "bounding entities")) != DEFO_OK)
                return s;
            for (int64_t k = 0; k < nbound; k++)
                if ((s = msh_int(r, "bounding entity", &v)) != DEFO_OK) return s;
        }
        qsort(r->ent[d], (size_t)count[d], sizeof(msh_entity), msh_entity_cmp);
    }
    r->have_entities = true;
    return msh_expect(r, "$EndEntities");
}

static int32_t msh_entity_phys(const msh_reader *r, int64_t dim, int64_t tag) {
    if (dim < 0 || dim > 3 || !r->ent[dim]) return 0;
    msh_entity key = {(int32_t)tag, 0};
    if (tag < INT32_MIN || tag > INT32_MAX) return 0;
    const msh_entity *e =
        bsearch(&key, r->ent[dim], (size_t)r->num_ent[dim], sizeof key, msh_entity_cmp);
    return e ? e->phys : 0;
}

/* ---------------------------------------------------------------- $Nodes */
static defo_status msh_alloc_nodes(msh_reader *r, int64_t n) {
    r->num_nodes = n;
    r->node_tag = defo_malloc((size_t)DEFO_MAX(n, 1) * sizeof(int64_t));
    r->x = defo_malloc((size_t)DEFO_MAX(n, 1) * 3 * sizeof(double));
    if (!r->node_tag || !r->x) return defo_error_oom("nodes", (size_t)n * 32);
    return DEFO_OK;
}

static defo_status msh_read_nodes2(msh_reader *r) {
    int64_t n;
    defo_status s = defo_cursor_int64(&r->c, "number of nodes", &n);
    if (s == DEFO_OK) s = defo_cursor_check_count(&r->c, n, r->binary ? 28 : 8, "nodes");
    if (s == DEFO_OK && r->binary) s = msh_end_of_line(r);
    if (s == DEFO_OK) s = msh_alloc_nodes(r, n);
    if (s != DEFO_OK) return s;
    for (int64_t i = 0; i < n; i++) {
        if ((s = msh_int(r, "node tag", &r->node_tag[i])) != DEFO_OK) return s;
        if (r->node_tag[i] < 0)
            return msh_error(r, DEFO_ERR_PARSE, "node tag %lld is negative",
                             (long long)r->node_tag[i]);
        for (int k = 0; k < 3; k++)
            if ((s = msh_double(r, "node coordinate", &r->x[3 * i + k])) != DEFO_OK) return s;
    }
    return msh_expect(r, "$EndNodes");
}

static defo_status msh_read_nodes4(msh_reader *r) {
    int64_t blocks, n, min_tag, max_tag;
    defo_status s;
    if ((s = msh_size(r, "number of node blocks", &blocks)) != DEFO_OK ||
        (s = msh_size(r, "number of nodes", &n)) != DEFO_OK ||
        (s = msh_size(r, "minimum node tag", &min_tag)) != DEFO_OK ||
        (s = msh_size(r, "maximum node tag", &max_tag)) != DEFO_OK)
        return s;
    if ((s = msh_check_count(r, blocks, r->binary ? 12 + (size_t)r->size_bytes : 8,
                             "node blocks")) != DEFO_OK ||
        (s = msh_check_count(r, n, r->binary ? 24 + (size_t)r->size_bytes : 8, "nodes")) !=
            DEFO_OK ||
        (s = msh_alloc_nodes(r, n)) != DEFO_OK)
        return s;
    int64_t done = 0;
    for (int64_t b = 0; b < blocks; b++) {
        int64_t dim, entity, parametric, count;
        if ((s = msh_int(r, "entity dimension", &dim)) != DEFO_OK ||
            (s = msh_int(r, "entity tag", &entity)) != DEFO_OK ||
            (s = msh_int(r, "parametric flag", &parametric)) != DEFO_OK ||
            (s = msh_size(r, "nodes in block", &count)) != DEFO_OK)
            return s;
        if (dim < 0 || dim > 3 || (parametric != 0 && parametric != 1))
            return msh_error(r, DEFO_ERR_PARSE,
                             "bad node block header (dimension %lld, "
                             "parametric %lld)",
                             (long long)dim, (long long)parametric);
        if (count > n - done)
            return msh_error(r, DEFO_ERR_PARSE,
                             "node blocks hold more nodes than the %lld the header announces",
                             (long long)n);
        for (int64_t i = 0; i < count; i++) {
            int64_t *t = &r->node_tag[done + i];
            if ((s = msh_size(r, "node tag", t)) != DEFO_OK) return s;
            if (*t < min_tag || *t > max_tag)
                return msh_error(r, DEFO_ERR_PARSE,
                                 "node tag %lld is outside the announced range [%lld, %lld]",
                                 (long long)*t, (long long)min_tag, (long long)max_tag);
        }
        int extra = parametric ? (int)dim : 0;
        for (int64_t i = 0; i < count; i++) {
            double *p = &r->x[3 * (done + i)], u;
            for (int k = 0; k < 3; k++)
                if ((s = msh_double(r, "node coordinate", &p[k])) != DEFO_OK) return s;
            for (int k = 0; k < extra; k++)
                if ((s = msh_double(r, "parametric coordinate", &u)) != DEFO_OK) return s;
        }
        done += count;
    }
    if (done != n)
        return msh_error(r, DEFO_ERR_PARSE,
                         "node blocks hold %lld nodes but the header announces %lld",
                         (long long)done, (long long)n);
    return msh_expect(r, "$EndNodes");
}

static int msh_tag_index_cmp(const void *a, const void *b) {
    const msh_tag_index *x = a, *y = b;
    return (x->tag > y->tag) - (x->tag < y->tag);
}

/* Build the tag -> index map (after $Nodes, before the first element). */
static defo_status msh_build_map(msh_reader *r) {
    int64_t n = r->num_nodes, max_tag = -1;
    if (n > DEFO_INDEX_MAX)
        return defo_error(DEFO_ERR_UNSUPPORTED, "%s:%lld: %lld nodes exceed defo's index range",
                          r->c.name, (long long)r->nodes_line, (long long)n);
    for (int64_t i = 0; i < n; i++) max_tag = DEFO_MAX(max_tag, r->node_tag[i]);
    if (max_tag < 2 * n + 1024) {
        r->dense_len = max_tag + 1;
        r->dense = defo_malloc((size_t)DEFO_MAX(r->dense_len, 1) * sizeof(int32_t));
        if (!r->dense) return defo_error_oom("node tag table", (size_t)r->dense_len * 4);
        for (int64_t t = 0; t < r->dense_len; t++) r->dense[t] = -1;
        for (int64_t i = 0; i < n; i++) {
            int32_t *slot = &r->dense[r->node_tag[i]];
            if (*slot >= 0)
                return defo_error(DEFO_ERR_PARSE, "%s:%lld: $Nodes: node tag %lld appears twice",
                                  r->c.name, (long long)r->nodes_line, (long long)r->node_tag[i]);
            *slot = (int32_t)i;
        }
        return DEFO_OK;
    }
    r->sorted = defo_malloc((size_t)n * sizeof(msh_tag_index));
    if (!r->sorted) return defo_error_oom("node tag table", (size_t)n * sizeof(msh_tag_index));
    for (int64_t i = 0; i < n; i++) r->sorted[i] = (msh_tag_index){r->node_tag[i], (int32_t)i};
    qsort(r->sorted, (size_t)n, sizeof(msh_tag_index), msh_tag_index_cmp);
    for (int64_t i = 1; i < n; i++)
        if (r->sorted[i].tag == r->sorted[i - 1].tag)
            return defo_error(DEFO_ERR_PARSE, "%s:%lld: $Nodes: node tag %lld appears twice",
                              r->c.name, (long long)r->nodes_line, (long long)r->sorted[i].tag);
    return DEFO_OK;
}

static defo_index msh_lookup(const msh_reader *r, int64_t tag) {
    if (r->dense) return (tag >= 0 && tag < r->dense_len) ? r->dense[tag] : -1;
    if (!r->sorted) return -1;
    msh_tag_index key = {tag, 0};
    const msh_tag_index *e =
        bsearch(&key, r->sorted, (size_t)r->num_nodes, sizeof key, msh_tag_index_cmp);
    return e ? e->index : -1;
}

/* ------------------------------------------------------------- $Elements */
static defo_status msh_grow(void **p, int64_t *cap, int64_t need, size_t each) {
    if (need <= *cap) return DEFO_OK;
    int64_t c = DEFO_MAX(need, *cap * 2);
    c = DEFO_MAX(c, 64);
    size_t bytes;
    if (!defo_mul_size((size_t)c, each, &bytes)) return defo_error_oom("elements", SIZE_MAX);
    void *q = defo_realloc(*p, bytes);
    if (!q) return defo_error_oom("elements", bytes);
    *p = q;
    *cap = c;
    return DEFO_OK;
}

/* One element of `type` with physical tag `phys` and file node tags. */
static defo_status msh_add_element(msh_reader *r, int64_t id, int64_t type, int64_t phys,
                                   const int64_t *tags) {
    msh_type_info info = msh_type(type);
    if (info.dim <= 1) return DEFO_OK; /* points and lines: boundary decorations */
    bool tet = type == MSH_TET4 || type == MSH_TET10;
    bool tri = type == MSH_TRI3 || type == MSH_TRI6;
    if (!tet && !tri)
        return msh_error(r, DEFO_ERR_UNSUPPORTED,
                         "element type %lld (%s) is not supported; defo needs tetrahedra",
                         (long long)type, info.name);
    if (phys < INT32_MIN || phys > INT32_MAX)
        return msh_error(r, DEFO_ERR_PARSE, "element %lld: physical tag %lld is out of range",
                         (long long)id, (long long)phys);
    int *have = tet ? &r->elem_type : &r->tri_type;
    if (*have && *have != type)
        return msh_error(r, DEFO_ERR_UNSUPPORTED,
                         "element %lld: mixes %s and %s elements (types %d and %lld); defo "
                         "needs one order per mesh",
                         (long long)id, msh_type(*have).name, info.name, *have, (long long)type);
    *have = (int)type;
    defo_index nodes[10];
    for (int k = 0; k < info.nodes; k++) {
        defo_index v = msh_lookup(r, tags[k]);
        if (v < 0)
            return msh_error(r, DEFO_ERR_PARSE, "element %lld: node tag %lld is not in $Nodes",
                             (long long)id, (long long)tags[k]);
        nodes[type == MSH_TET10 ? msh_tet10_perm[k] : k] = v;
    }
    defo_status s;
    if (tet) {
        if (r->num_elems >= DEFO_INDEX_MAX)
            return msh_error(r, DEFO_ERR_UNSUPPORTED, "too many elements");
        int64_t old_cap = r->elem_cap;
        if ((s = msh_grow((void **)&r->elems, &r->elem_cap, r->num_elems + 1,
                          10 * sizeof(defo_index))) != DEFO_OK)
            return s;
        if (r->elem_cap != old_cap || !r->elem_tag) {
            /* elem_tag follows elems' capacity; resized only when it grows
             * (amortised O(1) per element, never a copy per element) */
            int32_t *t = defo_realloc(r->elem_tag, (size_t)r->elem_cap * sizeof(int32_t));
            if (!t) return defo_error_oom("element tags", (size_t)r->elem_cap * 4);
            r->elem_tag = t;
        }
        if ((s = msh_grow((void **)&r->elem_ids, &r->elem_ids_cap, r->num_elems + 1,
                          sizeof(msh_tag_index))) != DEFO_OK)
            return s;
        r->elem_ids[r->num_elems] = (msh_tag_index){id, (defo_index)r->num_elems};
        memcpy(&r->elems[r->num_elems * info.nodes], nodes, (size_t)info.nodes * sizeof *nodes);
        r->elem_tag[r->num_elems++] = (int32_t)phys;
    } else {
        if (r->num_tris >= DEFO_INDEX_MAX)
            return msh_error(r, DEFO_ERR_UNSUPPORTED, "too many triangles");
        int64_t old_cap = r->tri_cap;
        if ((s = msh_grow((void **)&r->tris, &r->tri_cap, r->num_tris + 1,
                          6 * sizeof(defo_index))) != DEFO_OK)
            return s;
        if (r->tri_cap != old_cap || !r->tri_tag) {
            int32_t *t = defo_realloc(r->tri_tag, (size_t)r->tri_cap * sizeof(int32_t));
            if (!t) return defo_error_oom("triangle tags", (size_t)r->tri_cap * 4);
            r->tri_tag = t;
        }
        memcpy(&r->tris[r->num_tris * info.nodes], nodes, (size_t)info.nodes * sizeof *nodes);
        r->tri_tag[r->num_tris++] = (int32_t)phys;
    }
    return DEFO_OK;
}

static defo_status msh_check_type(msh_reader *r, int64_t type, msh_type_info *info) {
    *info = msh_type(type);
    if (info->nodes == 0)
        return msh_error(r, DEFO_ERR_UNSUPPORTED, "unknown element type %lld", (long long)type);
    if (info->dim >= 2 && type != MSH_TET4 && type != MSH_TET10 && type != MSH_TRI3 &&
        type != MSH_TRI6)
        return msh_error(r, DEFO_ERR_UNSUPPORTED,
                         "element type %lld (%s) is not supported; defo needs tetrahedra",
                         (long long)type, info->name);
    return DEFO_OK;
}

static defo_status msh_read_elements2(msh_reader *r) {
    int64_t n;
    defo_status s = defo_cursor_int64(&r->c, "number of elements", &n);
    if (s == DEFO_OK) s = defo_cursor_check_count(&r->c, n, r->binary ? 12 : 8, "elements");
    if (s == DEFO_OK && r->binary) s = msh_end_of_line(r);
    if (s != DEFO_OK) return s;
    int64_t tags[128 + 125];
    msh_type_info info;
    if (!r->binary) {
        for (int64_t i = 0; i < n; i++) {
            int64_t id, type, ntags;
            if ((s = defo_cursor_int64(&r->c, "element number", &id)) != DEFO_OK ||
                (s = defo_cursor_int64(&r->c, "element type", &type)) != DEFO_OK ||
                (s = defo_cursor_int64(&r->c, "number of tags", &ntags)) != DEFO_OK ||
                (s = msh_check_type(r, type, &info)) != DEFO_OK)
                return s;
            if (ntags < 0 || ntags > 128)
                return defo_cursor_error(&r->c, DEFO_ERR_PARSE,
                                         "element %lld: absurd number of tags %lld", (long long)id,
                                         (long long)ntags);
            int64_t phys = 0;
            for (int64_t k = 0; k < ntags; k++) {
                int64_t v;
                if ((s = defo_cursor_int64(&r->c, "element tag", &v)) != DEFO_OK) return s;
                if (k == 0) phys = v;
            }
            for (int k = 0; k < info.nodes; k++)
                if ((s = defo_cursor_int64(&r->c, "element node", &tags[k])) != DEFO_OK) return s;
            if ((s = msh_add_element(r, id, type, phys, tags)) != DEFO_OK) return s;
        }
        return msh_expect(r, "$EndElements");
    }
    int64_t done = 0;
    while (done < n) {
        int64_t type, follow, ntags;
        if ((s = msh_int(r, "element type", &type)) != DEFO_OK ||
            (s = msh_int(r, "number of elements following", &follow)) != DEFO_OK ||
            (s = msh_int(r, "number of tags", &ntags)) != DEFO_OK ||
            (s = msh_check_type(r, type, &info)) != DEFO_OK)
            return s;
        if (follow < 1 || follow > n - done)
            return msh_error(r, DEFO_ERR_PARSE,
                             "element group of %lld elements disagrees with the %lld announced",
                             (long long)follow, (long long)n);
        if (ntags < 0 || ntags > 128)
            return msh_error(r, DEFO_ERR_PARSE, "absurd number of tags %lld", (long long)ntags);
        for (int64_t e = 0; e < follow; e++) {
            int64_t id, phys = 0, v;
            if ((s = msh_int(r, "element number", &id)) != DEFO_OK) return s;
            for (int64_t k = 0; k < ntags; k++) {
                if ((s = msh_int(r, "element tag", &v)) != DEFO_OK) return s;
                if (k == 0) phys = v;
            }
            for (int k = 0; k < info.nodes; k++)
                if ((s = msh_int(r, "element node", &tags[k])) != DEFO_OK) return s;
            if ((s = msh_add_element(r, id, type, phys, tags)) != DEFO_OK) return s;
        }
        done += follow;
    }
    return msh_expect(r, "$EndElements");
}

static defo_status msh_read_elements4(msh_reader *r) {
    int64_t blocks, n, min_tag, max_tag;
    defo_status s;
    if ((s = msh_size(r, "number of element blocks", &blocks)) != DEFO_OK ||
        (s = msh_size(r, "number of elements", &n)) != DEFO_OK ||
        (s = msh_size(r, "minimum element tag", &min_tag)) != DEFO_OK ||
        (s = msh_size(r, "maximum element tag", &max_tag)) != DEFO_OK)
        return s;
    if ((s = msh_check_count(r, blocks, r->binary ? 12 + (size_t)r->size_bytes : 8,
                             "element blocks")) != DEFO_OK ||
        (s = msh_check_count(r, n, r->binary ? 2 * (size_t)r->size_bytes : 4, "elements")) !=
            DEFO_OK)
        return s;
    int64_t done = 0, tags[125];
    for (int64_t b = 0; b < blocks; b++) {
        int64_t dim, entity, type, count;
        msh_type_info info;
        if ((s = msh_int(r, "entity dimension", &dim)) != DEFO_OK ||
            (s = msh_int(r, "entity tag", &entity)) != DEFO_OK ||
            (s = msh_int(r, "element type", &type)) != DEFO_OK ||
            (s = msh_size(r, "elements in block", &count)) != DEFO_OK ||
            (s = msh_check_type(r, type, &info)) != DEFO_OK)
            return s;
        if (count > n - done)
            return msh_error(r, DEFO_ERR_PARSE,
                             "element blocks hold more elements than the %lld the header "
                             "announces",
                             (long long)n);
        int64_t phys = msh_entity_phys(r, dim, entity);
        for (int64_t e = 0; e < count; e++) {
            int64_t id;
            if ((s = msh_size(r, "element tag", &id)) != DEFO_OK) return s;
            for (int k = 0; k < info.nodes; k++)
                if ((s = msh_size(r, "element node", &tags[k])) != DEFO_OK) return s;
            if ((s = msh_add_element(r, id, type, phys, tags)) != DEFO_OK) return s;
        }
        done += count;
    }
    if (done != n)
        return msh_error(r, DEFO_ERR_PARSE,
                         "element blocks hold %lld elements but the header announces %lld",
                         (long long)done, (long long)n);
    return msh_expect(r, "$EndElements");
}

/* Skip an unknown section: find its "$End<name>" line. */
static defo_status msh_skip_section(msh_reader *r, const char *name, size_t len) {
    char end[80];
    if (len + 4 >= sizeof end)
        return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "section name too long");
    memcpy(end, "$End", 4);
    memcpy(end + 4, name + 1, len - 1);
    end[len + 3] = 0;
    int64_t at = r->c.line;
    const char *line;
    size_t n;
    while (defo_cursor_next_line(&r->c, &line, &n)) {
        while (n > 0 && (line[n - 1] == ' ' || line[n - 1] == '\t')) n--;
        if (defo_token_is(line, n, end)) return DEFO_OK;
    }
    return defo_error(DEFO_ERR_PARSE, "%s:%lld: section %.*s has no %s (file truncated?)",
                      r->c.name, (long long)at - 1, (int)len, name, end);
}

/* ------------------------------------------------------ data views */
static void msh_fields_free(msh_reader *r) {
    for (int i = 0; i < r->num_fields; i++) defo_free(r->fields[i].data);
}

/* A view's string tag: "quoted" (spaces allowed) or one token, up to the
 * end of its line. */
static defo_status msh_string_tag(msh_reader *r, char *out, size_t cap) {
    defo_cursor_skip_space(&r->c);
    const char *line;
    size_t len;
    if (!defo_cursor_next_line(&r->c, &line, &len))
        return msh_error(r, DEFO_ERR_PARSE, "truncated data view (string tag)");
    while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '	')) len--;
    if (len >= 2 && line[0] == '"' && line[len - 1] == '"') line++, len -= 2;
    if (len == 0 || len >= cap) {
        r->c.line--;
        return msh_error(r, DEFO_ERR_PARSE, "data view name is empty or longer than %zu bytes",
                         cap - 1);
    }
    memcpy(out, line, len);
    out[len] = 0;
    return DEFO_OK;
}

/* $ElementData (cell) or $NodeData (node) after its header line. */
static defo_status msh_read_data(msh_reader *r, int cell, int64_t at) {
    const char *section = cell ? "$ElementData" : "$NodeData";
    if (cell && !r->elem_ids && r->num_elems == 0)
        return defo_error(DEFO_ERR_PARSE, "%s:%lld: %s before any tetrahedron ($Elements)",
                          r->c.name, (long long)at, section);
    if (!cell && r->num_nodes == 0)
        return defo_error(DEFO_ERR_PARSE, "%s:%lld: %s before $Nodes", r->c.name, (long long)at,
                          section);
    int64_t ns, nr, ni, v[4] = {0, 0, 0, 0};
    char name[DEFO_NAME_MAX] = "";
    defo_status s = defo_cursor_int64(&r->c, "number of string tags", &ns);
    if (!s && (ns < 0 || ns > 16))
        s = defo_cursor_error(&r->c, DEFO_ERR_PARSE, "%s: %lld string tags", section,
                              (long long)ns);
    for (int64_t k = 0; !s && k < ns; k++) {
        char tmp[DEFO_NAME_MAX];
        s = msh_string_tag(r, k == 0 ? name : tmp, sizeof name);
    }
    if (!s && !name[0])
        s = defo_cursor_error(&r->c, DEFO_ERR_PARSE, "%s without a name (string tag)", section);
    if (!s) s = defo_cursor_int64(&r->c, "number of real tags", &nr);
    if (!s && (nr < 0 || nr > 16))
        s = defo_cursor_error(&r->c, DEFO_ERR_PARSE, "%s: %lld real tags", section, (long long)nr);
    for (int64_t k = 0; !s && k < nr; k++) {
        double t;
        s = defo_cursor_double(&r->c, "real tag", &t);
    }
    if (!s) s = defo_cursor_int64(&r->c, "number of integer tags", &ni);
    if (!s && (ni < 3 || ni > 16))
        s = defo_cursor_error(&r->c, DEFO_ERR_PARSE,
                              "%s: %lld integer tags (time step, components, entries ...)", section,
                              (long long)ni);
    for (int64_t k = 0; !s && k < ni; k++) {
        int64_t t;
        s = defo_cursor_int64(&r->c, "integer tag", &t);
        if (k < 4) v[k] = t;
    }
    if (s) return s;
    const int64_t comps = v[1], count = v[2];
    if (comps < 1 || comps > 9)
        return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "%s '%s': %lld components (1 to 9)",
                                 section, name, (long long)comps);
    s = msh_check_count(r, count, r->binary ? 4 + 8 * (size_t)comps : 2 * (1 + (size_t)comps),
                        "data entries");
    if (!s && r->binary) s = msh_end_of_line(r);
    if (s) return s;
    const int64_t rows = cell ? r->num_elems : r->num_nodes;
    double *data = defo_calloc((size_t)(rows * comps) + 1, sizeof(double));
    if (!data) return defo_error_oom("data view", (size_t)(rows * comps) * 8);
    if (cell && r->elem_ids)
        qsort(r->elem_ids, (size_t)r->num_elems, sizeof(msh_tag_index), msh_tag_index_cmp);
    for (int64_t k = 0; !s && k < count; k++) {
        int64_t tag;
        s = msh_int(r, "data entry tag", &tag);
        defo_index row = -1;
        if (!s && cell) {
            const msh_tag_index key = {tag, 0};
            const msh_tag_index *e = r->elem_ids ? bsearch(&key, r->elem_ids, (size_t)r->num_elems,
                                                           sizeof key, msh_tag_index_cmp)
                                                 : NULL;
            row = e ? e->index : -1; /* not a tetrahedron: skipped */
        } else if (!s) {
            row = msh_lookup(r, tag);
            if (row < 0)
                s = msh_error(r, DEFO_ERR_PARSE, "%s '%s': node tag %lld is not in $Nodes", section,
                              name, (long long)tag);
        }
        for (int64_t c = 0; !s && c < comps; c++) {
            double x;
            s = msh_double(r, "data value", &x);
            if (!s && row >= 0) data[row * comps + c] = x;
        }
    }
    if (!s) s = msh_expect(r, cell ? "$EndElementData" : "$EndNodeData");
    msh_field *nf = s ? NULL : defo_realloc(r->fields, (size_t)(r->num_fields + 1) * sizeof *nf);
    if (!s && !nf) s = defo_error_oom("data views", sizeof *nf);
    if (s) {
        defo_free(data);
        return s;
    }
    r->fields = nf;
    msh_field *f = &r->fields[r->num_fields++];
    snprintf(f->name, sizeof f->name, "%s", name);
    f->location = cell ? DEFO_FIELD_CELL : DEFO_FIELD_POINT;
    f->components = (int)comps;
    f->data = data;
    return DEFO_OK;
}

static defo_status msh_build_mesh(msh_reader *r, defo_mesh **out) {
    int order = r->elem_type == MSH_TET10 ? 2 : r->elem_type == MSH_TET4 ? 1 : 0;
    int npe = order == 2 ? 10 : 4, npt = r->tri_type == MSH_TRI6 ? 6 : 3;
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_create(order, &m);
    if (s == DEFO_OK)
        s = defo_mesh_reserve(m, (defo_index)r->num_nodes, (defo_index)r->num_elems,
                              (defo_index)r->num_tris);
    for (int64_t i = 0; s == DEFO_OK && i < r->num_nodes; i++)
        s = defo_mesh_add_node(m, r->x[3 * i], r->x[3 * i + 1], r->x[3 * i + 2], NULL);
    for (int64_t e = 0; s == DEFO_OK && e < r->num_elems; e++)
        s = defo_mesh_add_elem(m, &r->elems[e * npe], r->elem_tag[e]);
    for (int64_t t = 0; s == DEFO_OK && t < r->num_tris; t++)
        s = defo_mesh_add_tri(m, &r->tris[t * npt], npt, r->tri_tag[t]);
    for (int64_t g = 0; s == DEFO_OK && g < r->num_names; g++)
        s = defo_mesh_set_group(m, r->names[g].dim, r->names[g].tag, r->names[g].name);
    /* cell views only with tetrahedra (they index the elements) */
    for (int i = 0; s == DEFO_OK && i < r->num_fields; i++)
        if (r->fields[i].location == DEFO_FIELD_POINT || r->num_elems > 0)
            s = defo_mesh_add_field(m, r->fields[i].name, r->fields[i].location,
                                    r->fields[i].components, r->fields[i].data);
    if (s != DEFO_OK) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return DEFO_OK;
}

defo_status defo_read_msh(const char *data, size_t size, const char *name, defo_mesh **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_read_msh: out is NULL");
    *out = NULL;
    if (!data && size) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_read_msh: data is NULL");
    msh_reader r;
    memset(&r, 0, sizeof r);
    defo_cursor_init(&r.c, name ? name : "<msh>", data ? data : "", size);
    defo_status s = DEFO_OK;
    bool have_nodes = false, have_elems = false;
    for (;;) {
        defo_cursor_skip_space(&r.c);
        if (defo_cursor_eof(&r.c)) break;
        const char *line;
        size_t len;
        int64_t at = r.c.line;
        defo_cursor_next_line(&r.c, &line, &len);
        while (len > 0 && (line[len - 1] == ' ' || line[len - 1] == '\t')) len--;
        if (len == 0 || line[0] != '$') {
            s = defo_error(DEFO_ERR_PARSE,
                           "%s:%lld: expected a section such as $Nodes, found "
                           "text outside any section",
                           r.c.name, (long long)at);
            break;
        }
        if (!r.version && !defo_token_is(line, len, "$MeshFormat")) {
            s = defo_error(DEFO_ERR_PARSE,
                           "%s:%lld: not a Gmsh file (it must start with "
                           "$MeshFormat)",
                           r.c.name, (long long)at);
            break;
        }
        if (defo_token_is(line, len, "$MeshFormat")) {
            if (r.version) {
                s = defo_error(DEFO_ERR_PARSE, "%s:%lld: second $MeshFormat", r.c.name,
                               (long long)at);
                break;
            }
            s = msh_read_format(&r);
        } else if (defo_token_is(line, len, "$PhysicalNames")) {
            s = msh_read_names(&r); /* ASCII even in binary files */
        } else if (defo_token_is(line, len, "$Entities") && r.version == 4) {
            s = msh_read_entities(&r);
        } else if (defo_token_is(line, len, "$Nodes")) {
            if (have_nodes) {
                s = defo_error(DEFO_ERR_PARSE, "%s:%lld: second $Nodes section", r.c.name,
                               (long long)at);
                break;
            }
            have_nodes = true;
            r.nodes_line = at;
            s = r.version == 4 ? msh_read_nodes4(&r) : msh_read_nodes2(&r);
            if (s == DEFO_OK) s = msh_build_map(&r);
        } else if (defo_token_is(line, len, "$Elements")) {
            if (!have_nodes || have_elems) {
                s = defo_error(DEFO_ERR_PARSE, "%s:%lld: %s", r.c.name, (long long)at,
                               have_elems ? "second $Elements section" : "$Elements before $Nodes");
                break;
            }
            have_elems = true;
            s = r.version == 4 ? msh_read_elements4(&r) : msh_read_elements2(&r);
        } else if (defo_token_is(line, len, "$ElementData") ||
                   defo_token_is(line, len, "$NodeData")) {
            s = msh_read_data(&r, line[1] == 'E', at);
        } else if (len > 4 && memcmp(line, "$End", 4) == 0) {
            s = defo_error(DEFO_ERR_PARSE, "%s:%lld: %.*s without its section", r.c.name,
                           (long long)at, (int)DEFO_MIN(len, 40), line);
        } else {
            s = msh_skip_section(&r, line, len);
        }
        if (s != DEFO_OK) break;
    }
    if (s == DEFO_OK && !r.version)
        s = defo_error(DEFO_ERR_PARSE, "%s: empty file (no $MeshFormat)", r.c.name);
    if (s == DEFO_OK && !have_nodes)
        s = defo_error(DEFO_ERR_PARSE, "%s: no $Nodes section", r.c.name);
    if (s == DEFO_OK) s = msh_build_mesh(&r, out);
    msh_fields_free(&r);
    msh_reader_free(&r);
    return s;
}

/* --------------------------------------------------------------- writer */
typedef struct msh_writer {
    defo_out o;
    int version;
    int binary;
    const double *x;
} msh_writer;

static void msh_w_int(msh_writer *w, int64_t v) {
    if (w->binary) {
        int32_t i = (int32_t)v;
        defo_out_write(&w->o, &i, 4);
    } else {
        defo_out_printf(&w->o, "%lld", (long long)v);
    }
}
static void msh_w_size(msh_writer *w, int64_t v) {
    if (w->binary) {
        uint64_t u = (uint64_t)v;
        defo_out_write(&w->o, &u, 8);
    } else {
        defo_out_printf(&w->o, "%lld", (long long)v);
    }
}
static void msh_w_double(msh_writer *w, double v) {
    if (w->binary)
        defo_out_write(&w->o, &v, 8);
    else
        defo_out_double(&w->o, v);
}
static void msh_w_sep(msh_writer *w, char c) {
    if (!w->binary) defo_out_write(&w->o, &c, 1);
}

static int msh_i32_cmp(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Sorted distinct tags of n items (tag array may be NULL: all 0). */
static defo_status msh_distinct(const int32_t *tag, defo_index n, int32_t **out, int64_t *count) {
    *out = defo_malloc((size_t)DEFO_MAX(n, 1) * sizeof(int32_t));
    if (!*out) return defo_error_oom("tags", (size_t)n * 4);
    for (defo_index i = 0; i < n; i++) (*out)[i] = tag ? tag[i] : 0;
    qsort(*out, (size_t)n, sizeof(int32_t), msh_i32_cmp);
    int64_t k = 0;
    for (defo_index i = 0; i < n; i++)
        if (k == 0 || (*out)[k - 1] != (*out)[i]) (*out)[k++] = (*out)[i];
    *count = k;
    return DEFO_OK;
}

static int64_t msh_entity_of(const int32_t *tags, int64_t count, int32_t tag) {
    const int32_t *e = bsearch(&tag, tags, (size_t)count, sizeof tag, msh_i32_cmp);
    return e ? (e - tags) + 1 : 1;
}

static void msh_write_entities(msh_writer *w, const int32_t *tags, int64_t count,
                               const double box[6]) {
    for (int64_t i = 0; i < count; i++) {
        msh_w_int(w, i + 1);
        for (int k = 0; k < 6; k++) {
            msh_w_sep(w, ' ');
            msh_w_double(w, box[k]);
        }
        msh_w_sep(w, ' ');
        msh_w_size(w, tags[i] != 0);
        if (tags[i] != 0) {
            msh_w_sep(w, ' ');
            msh_w_int(w, tags[i]);
        }
        msh_w_sep(w, ' ');
        msh_w_size(w, 0); /* bounding entities: not needed to read the mesh back */
        msh_w_sep(w, '\n');
    }
}

/* One element's nodes in Gmsh order, 1-based. */
static void msh_w_nodes(msh_writer *w, const defo_index *nodes, int n, bool tet10) {
    for (int k = 0; k < n; k++) {
        msh_w_sep(w, ' ');
        int64_t v = (int64_t)nodes[tet10 ? msh_tet10_perm[k] : k] + 1;
        if (w->version == 4)
            msh_w_size(w, v);
        else
            msh_w_int(w, v);
    }
}

static defo_status msh_write_body(msh_writer *w, const defo_mesh *m, int32_t *vt, int64_t nvt,
                                  int32_t *st, int64_t nst) {
    int npe = m->nodes_per_elem, npt = m->nodes_per_tri;
    int etype = npe == 10 ? MSH_TET10 : MSH_TET4, ttype = npt == 6 ? MSH_TRI6 : MSH_TRI3;
    defo_index ne = m->num_elems, nt = m->num_tris, nn = m->num_nodes;
    defo_out *o = &w->o;

    defo_out_printf(o, "$MeshFormat\n%s %d 8\n", w->version == 4 ? "4.1" : "2.2", w->binary);
    if (w->binary) {
        int32_t one = 1;
        defo_out_write(o, &one, 4);
        defo_out_printf(o, "\n");
    }
    defo_out_printf(o, "$EndMeshFormat\n");

    int named = 0;
    for (int g = 0; g < m->num_groups; g++) named += m->groups[g].dim >= 2;
    if (named) {
        defo_out_printf(o, "$PhysicalNames\n%d\n", named);
        for (int g = 0; g < m->num_groups; g++) {
            const defo_group *gr = &m->groups[g];
            if (gr->dim < 2) continue;
            char name[DEFO_NAME_MAX];
            size_t len = 0;
            while (len < DEFO_NAME_MAX - 1 && gr->name[len]) len++;
            /* the format has no escape for quotes or line ends */
            for (size_t i = 0; i < len; i++)
                name[i] = (gr->name[i] == '"' || gr->name[i] == '\n' || gr->name[i] == '\r')
                              ? '\''
                              : gr->name[i];
            name[len] = 0;
            defo_out_printf(o, "%d %d \"%s\"\n", gr->dim, (int)gr->tag, name);
        }
        defo_out_printf(o, "$EndPhysicalNames\n");
    }

    if (w->version == 4) {
        double box[6] = {0, 0, 0, 0, 0, 0};
        for (defo_index i = 0; i < nn; i++)
            for (int k = 0; k < 3; k++) {
                double v = w->x[3 * i + k];
                if (i == 0 || v < box[k]) box[k] = v;
                if (i == 0 || v > box[3 + k]) box[3 + k] = v;
            }
        defo_out_printf(o, "$Entities\n");
        msh_w_size(w, 0);
        msh_w_sep(w, ' ');
        msh_w_size(w, 0);
        msh_w_sep(w, ' ');
        msh_w_size(w, nst);
        msh_w_sep(w, ' ');
        msh_w_size(w, nvt);
        msh_w_sep(w, '\n');
        msh_write_entities(w, st, nst, box);
        msh_write_entities(w, vt, nvt, box);
        defo_out_printf(o, "%s$EndEntities\n", w->binary ? "\n" : "");

        /* all nodes in one block on the first entity of the highest dimension */
        defo_out_printf(o, "$Nodes\n");
        msh_w_size(w, nn > 0);
        msh_w_sep(w, ' ');
        msh_w_size(w, nn);
        msh_w_sep(w, ' ');
        msh_w_size(w, nn > 0 ? 1 : 0);
        msh_w_sep(w, ' ');
        msh_w_size(w, nn);
        msh_w_sep(w, '\n');
        if (nn > 0) {
            msh_w_int(w, nvt > 0 ? 3 : 2);
            msh_w_sep(w, ' ');
            msh_w_int(w, 1);
            msh_w_sep(w, ' ');
            msh_w_int(w, 0);
            msh_w_sep(w, ' ');
            msh_w_size(w, nn);
            msh_w_sep(w, '\n');
            for (defo_index i = 0; i < nn; i++) {
                msh_w_size(w, (int64_t)i + 1);
                msh_w_sep(w, '\n');
            }
            for (defo_index i = 0; i < nn; i++) {
                for (int k = 0; k < 3; k++) {
                    if (k) msh_w_sep(w, ' ');
                    msh_w_double(w, w->x[3 * i + k]);
                }
                msh_w_sep(w, '\n');
            }
        }
        defo_out_printf(o, "%s$EndNodes\n", w->binary ? "\n" : "");

        /* one block per run of equal tags keeps element order */
        int64_t blocks = 0;
        for (defo_index e = 0; e < ne; e++)
            blocks += e == 0 || (m->elem_tag && m->elem_tag[e] != m->elem_tag[e - 1]);
        for (defo_index t = 0; t < nt; t++)
            blocks += t == 0 || (m->tri_tag && m->tri_tag[t] != m->tri_tag[t - 1]);
        int64_t total = (int64_t)ne + nt;
        defo_out_printf(o, "$Elements\n");
        msh_w_size(w, blocks);
        msh_w_sep(w, ' ');
        msh_w_size(w, total);
        msh_w_sep(w, ' ');
        msh_w_size(w, total > 0 ? 1 : 0);
        msh_w_sep(w, ' ');
        msh_w_size(w, total);
        msh_w_sep(w, '\n');
        int64_t id = 1;
        for (int pass = 0; pass < 2; pass++) {
            defo_index n = pass == 0 ? ne : nt;
            const int32_t *tag = pass == 0 ? m->elem_tag : m->tri_tag;
            const defo_index *conn = pass == 0 ? m->elems : m->tris;
            int per = pass == 0 ? npe : npt;
            for (defo_index a = 0; a < n;) {
                int32_t t = tag ? tag[a] : 0;
                defo_index b = a + 1;
                while (b < n && (tag ? tag[b] : 0) == t) b++;
                msh_w_int(w, pass == 0 ? 3 : 2);
                msh_w_sep(w, ' ');
                msh_w_int(w, pass == 0 ? msh_entity_of(vt, nvt, t) : msh_entity_of(st, nst, t));
                msh_w_sep(w, ' ');
                msh_w_int(w, pass == 0 ? etype : ttype);
                msh_w_sep(w, ' ');
                msh_w_size(w, b - a);
                msh_w_sep(w, '\n');
                for (defo_index e = a; e < b; e++) {
                    msh_w_size(w, id++);
                    msh_w_nodes(w, &conn[(size_t)e * (size_t)per], per, pass == 0 && per == 10);
                    msh_w_sep(w, '\n');
                }
                a = b;
            }
        }
        defo_out_printf(o, "%s$EndElements\n", w->binary ? "\n" : "");
        return DEFO_OK;
    }

    /* 2.2 */
    defo_out_printf(o, "$Nodes\n%d\n", (int)nn);
    for (defo_index i = 0; i < nn; i++) {
        msh_w_int(w, (int64_t)i + 1);
        for (int k = 0; k < 3; k++) {
            msh_w_sep(w, ' ');
            msh_w_double(w, w->x[3 * i + k]);
        }
        msh_w_sep(w, '\n');
    }
    defo_out_printf(o, "%s$EndNodes\n", w->binary ? "\n" : "");
    defo_out_printf(o, "$Elements\n%lld\n", (long long)ne + nt);
    int64_t id = 1;
    for (int pass = 0; pass < 2; pass++) {
        defo_index n = pass == 0 ? ne : nt;
        const int32_t *tag = pass == 0 ? m->elem_tag : m->tri_tag;
        const defo_index *conn = pass == 0 ? m->elems : m->tris;
        int per = pass == 0 ? npe : npt, type = pass == 0 ? etype : ttype;
        if (w->binary && n > 0) { /* one group header per element type */
            int32_t head[3] = {type, (int32_t)n, 2};
            defo_out_write(o, head, sizeof head);
        }
        for (defo_index e = 0; e < n; e++) {
            int32_t t = tag ? tag[e] : 0;
            msh_w_int(w, id++);
            if (!w->binary) defo_out_printf(o, " %d 2", type);
            msh_w_sep(w, ' ');
            msh_w_int(w, t);
            msh_w_sep(w, ' ');
            msh_w_int(w, t > 0 ? t : 1); /* elementary entity: must be positive */
            msh_w_nodes(w, &conn[(size_t)e * (size_t)per], per, pass == 0 && per == 10);
            msh_w_sep(w, '\n');
        }
    }
    defo_out_printf(o, "%s$EndElements\n", w->binary ? "\n" : "");
    return DEFO_OK;
}

defo_status defo_write_msh(const char *path, const defo_mesh *mesh, const defo_write_options *o) {
    if (!path || !mesh)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_write_msh: NULL argument");
    defo_write_options def = defo_default_write_options();
    if (!o) o = &def;
    if (o->msh_version != 2 && o->msh_version != 4)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: msh_version must be 2 or 4, not %d", path,
                          o->msh_version);
    if (mesh->num_elems > 0 && mesh->nodes_per_elem != 4 && mesh->nodes_per_elem != 10)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh has %d nodes per element", path,
                          mesh->nodes_per_elem);
    if (mesh->num_tris > 0 && mesh->nodes_per_tri != 3 && mesh->nodes_per_tri != 6)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh has %d nodes per triangle", path,
                          mesh->nodes_per_tri);
    if (mesh->num_nodes >= INT32_MAX || (int64_t)mesh->num_elems + mesh->num_tris >= INT32_MAX)
        return defo_error(DEFO_ERR_UNSUPPORTED, "%s: mesh too large for msh", path);
    msh_writer w;
    memset(&w, 0, sizeof w);
    w.version = o->msh_version;
    w.binary = o->binary ? 1 : 0;
    w.x = o->positions ? o->positions : mesh->x;
    int32_t *vt = NULL, *st = NULL;
    int64_t nvt = 0, nst = 0;
    defo_status s = DEFO_OK;
    if (w.version == 4) {
        s = msh_distinct(mesh->elem_tag, mesh->num_elems, &vt, &nvt);
        if (s == DEFO_OK) s = msh_distinct(mesh->tri_tag, mesh->num_tris, &st, &nst);
        /* the node block needs an entity to live on */
        if (s == DEFO_OK && nvt == 0 && nst == 0 && mesh->num_nodes > 0) {
            vt[0] = 0;
            nvt = 1;
        }
    }
    if (s == DEFO_OK) s = defo_out_open(&w.o, path);
    if (s == DEFO_OK) {
        s = msh_write_body(&w, mesh, vt, nvt, st, nst);
        if (s == DEFO_OK)
            s = defo_out_commit(&w.o);
        else
            defo_out_abort(&w.o);
    }
    defo_free(vt);
    defo_free(st);
    return s;
}
