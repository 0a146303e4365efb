/*
 * io/vtu.c — VTK XML UnstructuredGrid (.vtu), read and written, ASCII and
 * inline base64 binary, with point and cell data as defo fields.
 *
 * Format (VTK File Formats, "XML File Formats"): <VTKFile type=
 * "UnstructuredGrid" byte_order=... header_type=UInt32|UInt64> holding one
 * <Piece NumberOfPoints NumberOfCells> with <Points>, <Cells> (connectivity,
 * offsets, types), <PointData> and <CellData> DataArrays.  A binary DataArray
 * is base64 of [byte count as header_type][raw values]; writers encode the
 * header and the values either as one stream or as two padded streams, and
 * defo_base64_decode accepts both.
 *
 * The XML is read by a small tokenizer of our own (tags, attributes in any
 * order, comments, <?xml?> and <!DOCTYPE> skipped, line numbers kept), not a
 * general XML parser: DataArray payloads are taken as the text up to the
 * next '<'.
 *
 * Compressed and appended data (what meshio and VTK/ParaView write by
 * default): compressor="vtkZLibDataCompressor" makes every binary array a
 * zlib block list [#blocks][block size][last block size or 0][compressed
 * sizes...][zlib streams], header integers of header_type; other compressors
 * (LZ4, LZMA) are DEFO_ERR_UNSUPPORTED.  format="appended" arrays name an
 * offset into <AppendedData encoding="raw|base64">, whose bytes after the
 * '_' are taken up to the last </AppendedData> without tokenizing (raw data
 * may hold any byte) and decoded after the document.  Every size a header
 * announces is checked against the bytes present, and a zlib block against
 * zlib's largest expansion, before anything is allocated for it.
 *
 * Invariants: every array's size is taken from its own text (token count or
 * decoded bytes), so no allocation trusts a count attribute; declared counts
 * are only compared.  On error nothing leaks and *out is NULL.
 */
#include "io/formats.h"
#include "io/vtkcells.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

/* ============================================================ tokenizer */
#define XML_MAX_ATTRS 48
#define XML_MAX_DEPTH 32

typedef enum xml_kind { XML_EOF, XML_START, XML_END } xml_kind;

typedef struct xml_attr {
    const char *name, *value;
    size_t name_len, value_len;
} xml_attr;

typedef struct xml_tag {
    xml_kind kind;
    const char *name;
    size_t name_len;
    bool empty; /* <x/> */
    int num_attrs;
    xml_attr attrs[XML_MAX_ATTRS];
    int64_t line;
} xml_tag;

static bool xml_name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '_' || ch == '-' || ch == ':' || ch == '.';
}

static void adv(defo_cursor *c) {
    if (*c->p == '\n') c->line++;
    c->p++;
}

/* Skip to just after `term` (counting lines); false when it never comes. */
static bool skip_past(defo_cursor *c, const char *term) {
    size_t n = strlen(term);
    while ((size_t)(c->end - c->p) >= n) {
        if (memcmp(c->p, term, n) == 0) {
            c->p += n;
            return true;
        }
        adv(c);
    }
    c->p = c->end;
    return false;
}

/* Next start or end tag.  The character data before it is returned in
 * (text, text_len); the caller decides whether it matters. */
static defo_status xml_next(defo_cursor *c, xml_tag *t, const char **text, size_t *text_len,
                            int64_t *text_line) {
    for (;;) {
        *text = c->p;
        *text_line = c->line;
        while (c->p < c->end && *c->p != '<') adv(c);
        *text_len = (size_t)(c->p - *text);
        if (c->p >= c->end) {
            t->kind = XML_EOF;
            return DEFO_OK;
        }
        t->line = c->line;
        size_t rem = (size_t)(c->end - c->p);
        if (rem >= 4 && memcmp(c->p, "<!--", 4) == 0) {
            if (!skip_past(c, "-->"))
                return defo_cursor_error(c, DEFO_ERR_PARSE, "unterminated comment");
            continue;
        }
        if (rem >= 9 && memcmp(c->p, "<![CDATA[", 9) == 0)
            return defo_cursor_error(c, DEFO_ERR_UNSUPPORTED, "CDATA sections are not supported");
        if (rem >= 2 && (c->p[1] == '?' || c->p[1] == '!')) {
            char kind = c->p[1];
            if (!skip_past(c, ">"))
                return defo_cursor_error(c, DEFO_ERR_PARSE, "unterminated <%c", kind);
            continue;
        }
        c->p++;
        t->kind = XML_START;
        if (c->p < c->end && *c->p == '/') {
            t->kind = XML_END;
            c->p++;
        }
        t->name = c->p;
        while (c->p < c->end && xml_name_char(*c->p)) c->p++;
        t->name_len = (size_t)(c->p - t->name);
        if (t->name_len == 0)
            return defo_cursor_error(c, DEFO_ERR_PARSE, "malformed XML: expected a tag name");
        t->empty = false;
        t->num_attrs = 0;
        for (;;) {
            defo_cursor_skip_space(c);
            if (c->p >= c->end)
                return defo_cursor_error(c, DEFO_ERR_PARSE,
                                         "malformed XML: end of file inside <%.*s>",
                                         (int)DEFO_MIN(t->name_len, 40), t->name);
            if (*c->p == '>') {
                c->p++;
                return DEFO_OK;
            }
            if (*c->p == '/' && t->kind == XML_START && c->end - c->p >= 2 && c->p[1] == '>') {
                c->p += 2;
                t->empty = true;
                return DEFO_OK;
            }
            if (t->kind == XML_END)
                return defo_cursor_error(c, DEFO_ERR_PARSE, "malformed XML: junk in </%.*s>",
                                         (int)DEFO_MIN(t->name_len, 40), t->name);
            xml_attr a;
            a.name = c->p;
            while (c->p < c->end && xml_name_char(*c->p)) c->p++;
            a.name_len = (size_t)(c->p - a.name);
            if (a.name_len == 0)
                return defo_cursor_error(c, DEFO_ERR_PARSE,
                                         "malformed XML: bad character '%c' in <%.*s>",
                                         (*c->p >= 32 && *c->p < 127) ? *c->p : '?',
                                         (int)DEFO_MIN(t->name_len, 40), t->name);
            defo_cursor_skip_space(c);
            if (c->p >= c->end || *c->p != '=')
                return defo_cursor_error(c, DEFO_ERR_PARSE,
                                         "malformed XML: expected '=' after attribute %.*s",
                                         (int)DEFO_MIN(a.name_len, 40), a.name);
            c->p++;
            defo_cursor_skip_space(c);
            if (c->p >= c->end || (*c->p != '"' && *c->p != '\''))
                return defo_cursor_error(c, DEFO_ERR_PARSE,
                                         "malformed XML: attribute %.*s needs a quoted value",
                                         (int)DEFO_MIN(a.name_len, 40), a.name);
            char q = *c->p++;
            a.value = c->p;
            while (c->p < c->end && *c->p != q) {
                if (*c->p == '<')
                    return defo_cursor_error(c, DEFO_ERR_PARSE,
                                             "malformed XML: '<' in attribute %.*s",
                                             (int)DEFO_MIN(a.name_len, 40), a.name);
                adv(c);
            }
            if (c->p >= c->end)
                return defo_cursor_error(c, DEFO_ERR_PARSE,
                                         "malformed XML: unterminated attribute %.*s",
                                         (int)DEFO_MIN(a.name_len, 40), a.name);
            a.value_len = (size_t)(c->p - a.value);
            c->p++;
            if (t->num_attrs >= XML_MAX_ATTRS)
                return defo_cursor_error(c, DEFO_ERR_UNSUPPORTED,
                                         "more than %d attributes in <%.*s>", XML_MAX_ATTRS,
                                         (int)DEFO_MIN(t->name_len, 40), t->name);
            t->attrs[t->num_attrs++] = a;
        }
    }
}

static bool tag_is(const xml_tag *t, const char *name) {
    return defo_token_is(t->name, t->name_len, name);
}

static const xml_attr *tag_attr(const xml_tag *t, const char *name) {
    for (int i = 0; i < t->num_attrs; i++)
        if (defo_token_is(t->attrs[i].name, t->attrs[i].name_len, name)) return &t->attrs[i];
    return NULL;
}

static bool attr_is(const xml_attr *a, const char *s) {
    return a && defo_token_is(a->value, a->value_len, s);
}

/* Unescape an attribute value into out (DEFO_NAME_MAX); false if too long. */
static bool attr_string(const xml_attr *a, char *out) {
    static const struct {
        const char *ent;
        char ch;
    } ents[] = {{"&lt;", '<'}, {"&gt;", '>'}, {"&amp;", '&'}, {"&quot;", '"'}, {"&apos;", '\''}};
    size_t o = 0;
    for (size_t i = 0; i < a->value_len;) {
        char ch = a->value[i];
        size_t step = 1;
        if (ch == '&')
            for (size_t e = 0; e < sizeof ents / sizeof ents[0]; e++) {
                size_t n = strlen(ents[e].ent);
                if (a->value_len - i >= n && memcmp(a->value + i, ents[e].ent, n) == 0) {
                    ch = ents[e].ch;
                    step = n;
                    break;
                }
            }
        if (o + 1 >= DEFO_NAME_MAX) return false;
        out[o++] = ch;
        i += step;
    }
    out[o] = '\0';
    return true;
}

static bool attr_int(const xml_attr *a, int64_t *v) {
    if (!a) return false;
    const char *s = a->value, *e = a->value + a->value_len;
    while (s < e && (*s == ' ' || *s == '\t')) s++;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
    return defo_parse_int64(s, e, v);
}

/* ============================================================ data arrays */
typedef enum vtype {
    VT_NONE,
    VT_I8,
    VT_U8,
    VT_I16,
    VT_U16,
    VT_I32,
    VT_U32,
    VT_I64,
    VT_U64,
    VT_F32,
    VT_F64
} vtype;

static vtype vtu_type(const xml_attr *a) {
    static const struct {
        const char *name;
        vtype type;
    } map[] = {{"Int8", VT_I8},     {"UInt8", VT_U8},    {"Int16", VT_I16}, {"UInt16", VT_U16},
               {"Int32", VT_I32},   {"UInt32", VT_U32},  {"Int64", VT_I64}, {"UInt64", VT_U64},
               {"Float32", VT_F32}, {"Float64", VT_F64}, {"Char", VT_I8},   {"UChar", VT_U8},
               {"Short", VT_I16},   {"Int", VT_I32},     {"Float", VT_F32}, {"Double", VT_F64}};
    if (!a) return VT_NONE;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (attr_is(a, map[i].name)) return map[i].type;
    return VT_NONE;
}

static size_t vtype_size(vtype t) {
    switch (t) {
    case VT_I8:
    case VT_U8:
        return 1;
    case VT_I16:
    case VT_U16:
        return 2;
    case VT_I32:
    case VT_U32:
    case VT_F32:
        return 4;
    default:
        return 8;
    }
}

typedef enum role {
    ROLE_OTHER,
    ROLE_POINTS,
    ROLE_CONN,
    ROLE_OFFSETS,
    ROLE_TYPES,
    ROLE_PDATA,
    ROLE_CDATA
} role;

typedef struct varray {
    char name[DEFO_NAME_MAX];
    role role;
    int components;
    int64_t count; /* values */
    int64_t line;
    double *d;  /* float roles */
    int64_t *i; /* integer roles */
    /* format="appended": decoded after the document, from <AppendedData> */
    bool appended;
    int64_t offset; /* bytes (raw) or characters (base64) after the '_' */
    vtype type;
} varray;

typedef struct vreader {
    defo_cursor c;
    bool big_endian;
    bool zlib;          /* compressor="vtkZLibDataCompressor": binary arrays are zlib blocks */
    size_t header_size; /* 4 or 8 */
    /* <AppendedData>: the bytes after its '_' up to </AppendedData> */
    const char *app;
    size_t app_len;
    bool app_base64;
    int pieces;
    int64_t num_points, num_cells;
    int64_t piece_line;
    varray *arrays;
    int num_arrays;
} vreader;

static void vreader_free(vreader *r) {
    for (int i = 0; i < r->num_arrays; i++) {
        defo_free(r->arrays[i].d);
        defo_free(r->arrays[i].i);
    }
    defo_free(r->arrays);
}

/* Raw value at p (file byte order) as a double or integer. */
static void raw_value(const unsigned char *p, vtype t, bool big, double *d, int64_t *iv,
                      bool *is_int) {
    size_t n = vtype_size(t);
    uint64_t u = 0;
    for (size_t k = 0; k < n; k++) {
        size_t idx = big ? k : n - 1 - k;
        u = (u << 8) | p[idx];
    }
    *is_int = true;
    switch (t) {
    case VT_I8:
        *iv = (int8_t)(uint8_t)u;
        break;
    case VT_U8:
        *iv = (int64_t)(uint8_t)u;
        break;
    case VT_I16:
        *iv = (int16_t)(uint16_t)u;
        break;
    case VT_U16:
        *iv = (int64_t)(uint16_t)u;
        break;
    case VT_I32:
        *iv = (int32_t)(uint32_t)u;
        break;
    case VT_U32:
        *iv = (int64_t)(uint32_t)u;
        break;
    case VT_I64:
        *iv = (int64_t)u;
        break;
    case VT_U64:
        *iv = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
        break;
    case VT_F32: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        *d = (double)f;
        *is_int = false;
        return;
    }
    default: {
        double v;
        memcpy(&v, &u, 8);
        *d = v;
        *is_int = false;
        return;
    }
    }
    *d = (double)*iv;
}

static defo_status array_error(const vreader *r, const varray *a, defo_status st,
                               const char *what) {
    return defo_error(st, "%s:%lld: DataArray '%s': %s", r->c.name, (long long)a->line, a->name,
                      what);
}

/* Header integer k (header_type wide, file byte order) at p. */
static uint64_t header_int(const vreader *r, const unsigned char *p) {
    bool is_int;
    int64_t v = 0;
    double d;
    raw_value(p, r->header_size == 8 ? VT_U64 : VT_U32, r->big_endian, &d, &v, &is_int);
    return (uint64_t)v;
}

/* The values of a binary array into a->d or a->i: vals holds nbytes of
 * values of type t in the file's byte order. */
static defo_status store_values(vreader *r, varray *a, vtype t, const unsigned char *vals,
                                size_t nbytes) {
    bool want_int = a->role == ROLE_CONN || a->role == ROLE_OFFSETS || a->role == ROLE_TYPES;
    size_t vs = vtype_size(t);
    int64_t n = (int64_t)(nbytes / vs);
    a->count = n;
    if (want_int)
        a->i = defo_malloc((size_t)(n + 1) * sizeof(int64_t));
    else
        a->d = defo_malloc((size_t)(n + 1) * sizeof(double));
    if (!a->i && !a->d) return defo_error_oom("DataArray", (size_t)n * sizeof(double));
    const unsigned char *p = vals;
    for (int64_t k = 0; k < n; k++, p += vs) {
        double v;
        int64_t iv = 0;
        bool is_int;
        raw_value(p, t, r->big_endian, &v, &iv, &is_int);
        if (want_int)
            a->i[k] = iv;
        else if (!isfinite(v))
            return array_error(r, a, DEFO_ERR_PARSE, "non-finite value in binary data");
        else
            a->d[k] = v;
    }
    return DEFO_OK;
}

/* zlib's largest expansion is about 1032:1 (deflate's longest match over its
 * shortest code); a block claiming more is damaged, not compressed. */
#define ZLIB_MAX_RATIO 1100

/* A binary array as decoded bytes raw[0, nraw): uncompressed, [byte count]
 * [values]; with zlib (vtkZLibDataCompressor), [#blocks][block size][last
 * block size, 0 = full][compressed size of each block][the blocks, each a
 * zlib stream], integers header_size wide.  Only the bytes the headers
 * announce are read (appended raw data continues with the next array). */
static defo_status decode_binary(vreader *r, varray *a, vtype t, const unsigned char *raw,
                                 size_t nraw) {
    const size_t hs = r->header_size, vs = vtype_size(t);
    char msg[200];
    if (!r->zlib) {
        if (nraw < hs)
            return array_error(r, a, DEFO_ERR_PARSE, "binary payload shorter than its header");
        uint64_t declared = header_int(r, raw);
        size_t avail = nraw - hs;
        if (declared > avail || declared % vs != 0) {
            snprintf(msg, sizeof msg,
                     "binary header announces %llu bytes but %zu follow (or not a multiple of %zu)",
                     (unsigned long long)declared, avail, vs);
            return array_error(r, a, DEFO_ERR_PARSE, msg);
        }
        return store_values(r, a, t, raw + hs, (size_t)declared);
    }
    if (nraw < 3 * hs)
        return array_error(r, a, DEFO_ERR_PARSE, "compressed payload shorter than its header");
    uint64_t nb = header_int(r, raw), bs = header_int(r, raw + hs),
             last = header_int(r, raw + 2 * hs);
    if (nb > (nraw - 3 * hs) / hs || (nb > 0 && bs == 0) || last > bs) {
        snprintf(msg, sizeof msg,
                 "compression header: %llu blocks of %llu bytes (last %llu) do not fit %zu bytes",
                 (unsigned long long)nb, (unsigned long long)bs, (unsigned long long)last, nraw);
        return array_error(r, a, DEFO_ERR_PARSE, msg);
    }
    size_t head = (size_t)(3 + nb) * hs, csum = 0;
    for (uint64_t b = 0; b < nb; b++) {
        uint64_t cs = header_int(r, raw + (3 + b) * hs);
        if (cs > nraw - head - csum) {
            snprintf(msg, sizeof msg, "compressed block %llu (%llu bytes) runs past the data",
                     (unsigned long long)b, (unsigned long long)cs);
            return array_error(r, a, DEFO_ERR_PARSE, msg);
        }
        csum += (size_t)cs;
    }
    uint64_t total = nb == 0 ? 0 : (nb - 1) * bs + (last ? last : bs);
    if (total / ZLIB_MAX_RATIO > csum + nb || total % vs != 0 || total > (uint64_t)SIZE_MAX / 2) {
        snprintf(msg, sizeof msg,
                 "compressed blocks announce %llu bytes from %zu compressed (damaged header, or "
                 "not a multiple of %zu)",
                 (unsigned long long)total, csum, vs);
        return array_error(r, a, DEFO_ERR_PARSE, msg);
    }
    unsigned char *out = defo_malloc((size_t)total + 1);
    if (!out) return defo_error_oom("decompressed DataArray", (size_t)total);
    size_t at = 0, src = head;
    defo_status s = DEFO_OK;
    for (uint64_t b = 0; b < nb && s >= 0; b++) {
        uLong cs = (uLong)header_int(r, raw + (3 + b) * hs);
        uLongf want = (uLongf)(b + 1 == nb && last ? last : bs), got = want;
        int z = uncompress(out + at, &got, raw + src, cs);
        if (z != Z_OK || got != want) {
            snprintf(msg, sizeof msg, "zlib block %llu does not inflate to %lu bytes (%s)",
                     (unsigned long long)b, (unsigned long)want,
                     z == Z_OK           ? "size differs"
                     : z == Z_DATA_ERROR ? "corrupt data"
                     : z == Z_BUF_ERROR  ? "too long"
                                         : "zlib error");
            s = array_error(r, a, DEFO_ERR_PARSE, msg);
        }
        at += (size_t)want;
        src += (size_t)cs;
    }
    if (s >= 0) s = store_values(r, a, t, out, (size_t)total);
    defo_free(out);
    return s;
}

/* An appended array: its bytes at a->offset in <AppendedData> — raw, or
 * base64 text running to the next array's offset (or the end). */
static defo_status decode_appended(vreader *r, varray *a) {
    if (!r->app)
        return array_error(r, a, DEFO_ERR_PARSE, "format=\"appended\" but no <AppendedData>");
    if (a->offset < 0 || (size_t)a->offset > r->app_len) {
        char msg[120];
        snprintf(msg, sizeof msg, "offset %lld is outside <AppendedData> (%zu bytes)",
                 (long long)a->offset, r->app_len);
        return array_error(r, a, DEFO_ERR_PARSE, msg);
    }
    const char *p = r->app + a->offset;
    size_t len = r->app_len - (size_t)a->offset;
    if (!r->app_base64) return decode_binary(r, a, a->type, (const unsigned char *)p, len);
    for (int i = 0; i < r->num_arrays; i++) {
        const varray *o = &r->arrays[i];
        if (o->appended && o->offset > a->offset && (size_t)(o->offset - a->offset) < len)
            len = (size_t)(o->offset - a->offset);
    }
    size_t cap = 3 * (len / 4) + 8;
    unsigned char *raw = defo_malloc(cap);
    if (!raw) return defo_error_oom("base64 payload", cap);
    size_t nraw = 0;
    defo_status s =
        defo_base64_decode(p, len, raw, &nraw)
            ? decode_binary(r, a, a->type, raw, nraw)
            : array_error(r, a, DEFO_ERR_PARSE, "bad base64 character in appended data");
    defo_free(raw);
    return s;
}

/* Parse the payload text of one DataArray into a->d or a->i. */
static defo_status decode_array(vreader *r, varray *a, vtype t, bool binary, const char *text,
                                size_t len, int64_t text_line) {
    bool want_int = a->role == ROLE_CONN || a->role == ROLE_OFFSETS || a->role == ROLE_TYPES;
    if (want_int && (t == VT_F32 || t == VT_F64))
        return array_error(r, a, DEFO_ERR_PARSE, "cell arrays must have an integer type");
    if (!binary) {
        /* count tokens first so the allocation is exact and bounded by the text */
        int64_t n = 0;
        for (size_t k = 0; k < len;) {
            while (k < len &&
                   (text[k] == ' ' || text[k] == '\n' || text[k] == '\r' || text[k] == '\t'))
                k++;
            if (k < len) n++;
            while (k < len &&
                   !(text[k] == ' ' || text[k] == '\n' || text[k] == '\r' || text[k] == '\t'))
                k++;
        }
        a->count = n;
        if (want_int)
            a->i = defo_malloc((size_t)(n + 1) * sizeof(int64_t));
        else
            a->d = defo_malloc((size_t)(n + 1) * sizeof(double));
        if (!a->i && !a->d) return defo_error_oom("DataArray", (size_t)n * sizeof(double));
        defo_cursor tc;
        defo_cursor_init(&tc, r->c.name, text, len);
        tc.line = text_line;
        for (int64_t k = 0; k < n; k++) {
            defo_status s = want_int ? defo_cursor_int64(&tc, a->name, &a->i[k])
                                     : defo_cursor_double(&tc, a->name, &a->d[k]);
            if (s < 0) return s;
        }
        return DEFO_OK;
    }
    size_t cap = 3 * (len / 4) + 8;
    unsigned char *raw = defo_malloc(cap);
    if (!raw) return defo_error_oom("base64 payload", cap);
    size_t nraw = 0;
    if (!defo_base64_decode(text, len, raw, &nraw)) {
        defo_free(raw);
        return array_error(r, a, DEFO_ERR_PARSE, "bad base64 character in the binary payload");
    }
    defo_status s = decode_binary(r, a, t, raw, nraw);
    defo_free(raw);
    return s;
}

/* A <DataArray ...> start tag: read its payload and closing tag. */
static defo_status read_data_array(vreader *r, const xml_tag *t, const char *parent,
                                   size_t parent_len) {
    defo_cursor *c = &r->c;
    varray a;
    memset(&a, 0, sizeof a);
    a.line = t->line;
    a.components = 1;
    const xml_attr *nm = tag_attr(t, "Name");
    if (nm && !attr_string(nm, a.name))
        return defo_error(DEFO_ERR_UNSUPPORTED, "%s:%lld: DataArray name longer than %d characters",
                          c->name, (long long)t->line, DEFO_NAME_MAX - 1);
    if (!nm) /* unnamed (usual for Points): messages name the parent */
        snprintf(a.name, sizeof a.name, "%.*s", (int)DEFO_MIN(parent_len, 40), parent);
    if (defo_token_is(parent, parent_len, "Points"))
        a.role = ROLE_POINTS;
    else if (defo_token_is(parent, parent_len, "PointData"))
        a.role = ROLE_PDATA;
    else if (defo_token_is(parent, parent_len, "CellData"))
        a.role = ROLE_CDATA;
    else if (defo_token_is(parent, parent_len, "Cells")) {
        if (attr_is(nm, "connectivity"))
            a.role = ROLE_CONN;
        else if (attr_is(nm, "offsets"))
            a.role = ROLE_OFFSETS;
        else if (attr_is(nm, "types"))
            a.role = ROLE_TYPES;
    }
    const xml_attr *fmt = tag_attr(t, "format");
    bool binary = false;
    if (attr_is(fmt, "appended")) {
        a.appended = true;
        if (!attr_int(tag_attr(t, "offset"), &a.offset) || a.offset < 0)
            return defo_error(DEFO_ERR_PARSE,
                              "%s:%lld: DataArray '%s': format=\"appended\" needs an offset >= 0",
                              c->name, (long long)t->line, a.name);
    } else if (attr_is(fmt, "binary"))
        binary = true;
    else if (fmt && !attr_is(fmt, "ascii"))
        return defo_error(DEFO_ERR_PARSE, "%s:%lld: DataArray '%s': unknown format '%.*s'", c->name,
                          (long long)t->line, a.name, (int)DEFO_MIN(fmt->value_len, 40),
                          fmt->value);
    const xml_attr *nc = tag_attr(t, "NumberOfComponents");
    int64_t comps = 1;
    if (nc && (!attr_int(nc, &comps) || comps < 1 || comps > 1024))
        return defo_error(DEFO_ERR_PARSE, "%s:%lld: DataArray '%s': bad NumberOfComponents",
                          c->name, (long long)t->line, a.name);
    a.components = (int)comps;
    vtype vt = vtu_type(tag_attr(t, "type"));
    /* Arrays defo does not use (FieldData, strings) are read past unparsed. */
    if (a.role != ROLE_OTHER && vt == VT_NONE) {
        const xml_attr *ty = tag_attr(t, "type");
        return defo_error(DEFO_ERR_UNSUPPORTED, "%s:%lld: DataArray '%s': unsupported type '%.*s'",
                          c->name, (long long)t->line, a.name,
                          ty ? (int)DEFO_MIN(ty->value_len, 40) : 0, ty ? ty->value : "");
    }
    const char *text = "";
    size_t text_len = 0;
    int64_t text_line = c->line;
    xml_tag end;
    if (!t->empty) {
        defo_status s = xml_next(c, &end, &text, &text_len, &text_line);
        if (s < 0) return s;
        if (end.kind != XML_END || !tag_is(&end, "DataArray"))
            return defo_error(DEFO_ERR_PARSE, "%s:%lld: malformed XML: expected </DataArray>",
                              c->name, (long long)(end.kind == XML_EOF ? c->line : end.line));
    }
    if (a.role == ROLE_OTHER) return DEFO_OK;
    if (!nm && (a.role == ROLE_PDATA || a.role == ROLE_CDATA))
        return defo_error(DEFO_ERR_PARSE, "%s:%lld: %s DataArray without a Name", c->name,
                          (long long)t->line, a.name);
    a.type = vt;
    bool want_int = a.role == ROLE_CONN || a.role == ROLE_OFFSETS || a.role == ROLE_TYPES;
    defo_status s = DEFO_OK;
    if (!a.appended)
        s = decode_array(r, &a, vt, binary, text, text_len, text_line);
    else if (want_int && (vt == VT_F32 || vt == VT_F64))
        s = array_error(r, &a, DEFO_ERR_PARSE, "cell arrays must have an integer type");
    if (s >= 0) {
        varray *na = defo_realloc(r->arrays, (size_t)(r->num_arrays + 1) * sizeof(varray));
        if (!na)
            s = defo_error_oom("DataArray list", (size_t)(r->num_arrays + 1) * sizeof(varray));
        else {
            r->arrays = na;
            r->arrays[r->num_arrays++] = a;
            return DEFO_OK;
        }
    }
    defo_free(a.d);
    defo_free(a.i);
    return s;
}

static defo_status parse_document(vreader *r) {
    defo_cursor *c = &r->c;
    const char *stack[XML_MAX_DEPTH];
    size_t stack_len[XML_MAX_DEPTH];
    int depth = 0;
    bool seen_root = false;
    xml_tag t;
    for (;;) {
        const char *text;
        size_t text_len;
        int64_t text_line;
        defo_status s = xml_next(c, &t, &text, &text_len, &text_line);
        if (s < 0) return s;
        if (t.kind == XML_EOF) {
            if (depth > 0)
                return defo_cursor_error(c, DEFO_ERR_PARSE,
                                         "malformed XML: end of file inside <%.*s>",
                                         (int)DEFO_MIN(stack_len[depth - 1], 40), stack[depth - 1]);
            if (!seen_root)
                return defo_cursor_error(c, DEFO_ERR_PARSE,
                                         "no <VTKFile> element: not a .vtu file");
            return DEFO_OK;
        }
        if (t.kind == XML_END) {
            if (depth == 0)
                return defo_error(DEFO_ERR_PARSE, "%s:%lld: malformed XML: unexpected </%.*s>",
                                  c->name, (long long)t.line, (int)DEFO_MIN(t.name_len, 40),
                                  t.name);
            if (t.name_len != stack_len[depth - 1] ||
                memcmp(t.name, stack[depth - 1], t.name_len) != 0)
                return defo_error(DEFO_ERR_PARSE, "%s:%lld: malformed XML: </%.*s> closes <%.*s>",
                                  c->name, (long long)t.line, (int)DEFO_MIN(t.name_len, 40), t.name,
                                  (int)DEFO_MIN(stack_len[depth - 1], 40), stack[depth - 1]);
            depth--;
            continue;
        }
        /* start tag */
        if (depth == 0) {
            if (seen_root || !tag_is(&t, "VTKFile"))
                return defo_error(DEFO_ERR_PARSE, "%s:%lld: expected <VTKFile>, found <%.*s>",
                                  c->name, (long long)t.line, (int)DEFO_MIN(t.name_len, 40),
                                  t.name);
            seen_root = true;
            const xml_attr *ty = tag_attr(&t, "type");
            if (!attr_is(ty, "UnstructuredGrid"))
                return defo_error(DEFO_ERR_UNSUPPORTED,
                                  "%s:%lld: VTK XML type '%.*s' is not supported; defo reads "
                                  "UnstructuredGrid (.vtu)",
                                  c->name, (long long)t.line,
                                  ty ? (int)DEFO_MIN(ty->value_len, 40) : 0, ty ? ty->value : "");
            const xml_attr *bo = tag_attr(&t, "byte_order");
            r->big_endian = attr_is(bo, "BigEndian");
            if (bo && !r->big_endian && !attr_is(bo, "LittleEndian"))
                return defo_error(DEFO_ERR_PARSE, "%s:%lld: unknown byte_order", c->name,
                                  (long long)t.line);
            const xml_attr *ht = tag_attr(&t, "header_type");
            r->header_size = 4;
            if (attr_is(ht, "UInt64"))
                r->header_size = 8;
            else if (ht && !attr_is(ht, "UInt32"))
                return defo_error(DEFO_ERR_UNSUPPORTED,
                                  "%s:%lld: header_type '%.*s' is not supported (UInt32, UInt64)",
                                  c->name, (long long)t.line, (int)DEFO_MIN(ht->value_len, 40),
                                  ht->value);
            const xml_attr *cm = tag_attr(&t, "compressor");
            if (attr_is(cm, "vtkZLibDataCompressor"))
                r->zlib = true;
            else if (cm && cm->value_len > 0)
                return defo_error(DEFO_ERR_UNSUPPORTED,
                                  "%s:%lld: compressor '%.*s' is not supported (defo reads "
                                  "vtkZLibDataCompressor); write the .vtu with zlib or "
                                  "uncompressed",
                                  c->name, (long long)t.line, (int)DEFO_MIN(cm->value_len, 40),
                                  cm->value);
        } else if (tag_is(&t, "Piece")) {
            if (++r->pieces > 1)
                return defo_error(DEFO_ERR_UNSUPPORTED,
                                  "%s:%lld: more than one <Piece> is not supported", c->name,
                                  (long long)t.line);
            r->piece_line = t.line;
            if (!attr_int(tag_attr(&t, "NumberOfPoints"), &r->num_points) ||
                !attr_int(tag_attr(&t, "NumberOfCells"), &r->num_cells) || r->num_points < 0 ||
                r->num_cells < 0 || r->num_points > DEFO_INDEX_MAX || r->num_cells > DEFO_INDEX_MAX)
                return defo_error(DEFO_ERR_PARSE,
                                  "%s:%lld: <Piece> needs NumberOfPoints and NumberOfCells in "
                                  "[0, 2^31)",
                                  c->name, (long long)t.line);
        } else if (tag_is(&t, "AppendedData") && !t.empty) {
            /* raw bytes may hold anything, '<' included: no tokenizing them.
             * The data is from the '_' to the last </AppendedData>. */
            if (r->app)
                return defo_error(DEFO_ERR_UNSUPPORTED, "%s:%lld: more than one <AppendedData>",
                                  c->name, (long long)t.line);
            const xml_attr *enc = tag_attr(&t, "encoding");
            r->app_base64 = attr_is(enc, "base64");
            if (!r->app_base64 && !attr_is(enc, "raw"))
                return defo_error(
                    DEFO_ERR_UNSUPPORTED, "%s:%lld: <AppendedData> encoding '%.*s' (raw or base64)",
                    c->name, (long long)t.line, enc ? (int)DEFO_MIN(enc->value_len, 40) : 0,
                    enc ? enc->value : "");
            while (c->p < c->end && *c->p != '_') {
                if (*c->p != ' ' && *c->p != '\t' && *c->p != '\r' && *c->p != '\n')
                    return defo_cursor_error(c, DEFO_ERR_PARSE,
                                             "<AppendedData> must start with '_'");
                adv(c);
            }
            if (c->p >= c->end)
                return defo_cursor_error(c, DEFO_ERR_PARSE, "<AppendedData> without its '_'");
            const char *start = c->p + 1, *end = NULL;
            static const char close[] = "</AppendedData>";
            const size_t cl = sizeof close - 1;
            for (const char *q = c->end - cl; q >= start; q--)
                if (memcmp(q, close, cl) == 0) {
                    end = q;
                    break;
                }
            if (!end) return defo_cursor_error(c, DEFO_ERR_PARSE, "unterminated <AppendedData>");
            r->app = start;
            r->app_len = (size_t)(end - start);
            c->p = end + cl;
            continue;
        } else if (tag_is(&t, "DataArray")) {
            s = read_data_array(r, &t, stack[depth - 1], stack_len[depth - 1]);
            if (s < 0) return s;
            continue; /* its end tag is consumed */
        }
        if (!t.empty) {
            if (depth >= XML_MAX_DEPTH)
                return defo_error(DEFO_ERR_PARSE, "%s:%lld: XML nested too deeply", c->name,
                                  (long long)t.line);
            stack[depth] = t.name;
            stack_len[depth] = t.name_len;
            depth++;
        }
    }
}

static varray *find_role(vreader *r, role ro) {
    varray *found = NULL;
    for (int i = 0; i < r->num_arrays; i++)
        if (r->arrays[i].role == ro) {
            if (found) return NULL;
            found = &r->arrays[i];
        }
    return found;
}

defo_status defo_read_vtu(const char *data, size_t size, const char *name, defo_mesh **out) {
    *out = NULL;
    vreader r;
    memset(&r, 0, sizeof r);
    defo_cursor_init(&r.c, name, data, size);
    name = r.c.name;
    defo_status s = parse_document(&r);
    for (int i = 0; s >= 0 && i < r.num_arrays; i++)
        if (r.arrays[i].appended) s = decode_appended(&r, &r.arrays[i]);
    if (s < 0) {
        vreader_free(&r);
        return s;
    }
    int64_t pl = r.piece_line;
    varray *pts = find_role(&r, ROLE_POINTS), *conn = find_role(&r, ROLE_CONN),
           *offs = find_role(&r, ROLE_OFFSETS), *types = find_role(&r, ROLE_TYPES);
    if (r.pieces == 0)
        s = defo_error(DEFO_ERR_PARSE, "%s: no <Piece> element", name);
    else if (!pts && r.num_points > 0)
        s = defo_error(DEFO_ERR_PARSE, "%s:%lld: missing or repeated <Points> DataArray", name,
                       (long long)pl);
    else if (r.num_cells > 0 && (!conn || !offs || !types))
        s = defo_error(DEFO_ERR_PARSE,
                       "%s:%lld: <Cells> needs one each of connectivity, offsets and types", name,
                       (long long)pl);
    else if (pts && (pts->components != 3 || pts->count != 3 * r.num_points))
        s = defo_error(DEFO_ERR_PARSE,
                       "%s:%lld: Points has %lld values in %d components, NumberOfPoints=%lld "
                       "needs %lld in 3",
                       name, (long long)pts->line, (long long)pts->count, pts->components,
                       (long long)r.num_points, (long long)(3 * r.num_points));
    else if (r.num_cells > 0 && (offs->count != r.num_cells || types->count != r.num_cells))
        s = defo_error(DEFO_ERR_PARSE,
                       "%s:%lld: offsets (%lld) and types (%lld) must have NumberOfCells=%lld "
                       "entries",
                       name, (long long)offs->line, (long long)offs->count, (long long)types->count,
                       (long long)r.num_cells);
    for (int i = 0; s >= 0 && i < r.num_arrays; i++) {
        varray *a = &r.arrays[i];
        int64_t rows = a->role == ROLE_PDATA ? r.num_points : r.num_cells;
        if ((a->role == ROLE_PDATA || a->role == ROLE_CDATA) && a->count != rows * a->components)
            s = defo_error(DEFO_ERR_PARSE,
                           "%s:%lld: DataArray '%s' has %lld values, expected %lld (%lld %s x %d)",
                           name, (long long)a->line, a->name, (long long)a->count,
                           (long long)(rows * a->components), (long long)rows,
                           a->role == ROLE_PDATA ? "points" : "cells", a->components);
    }
    int64_t *offsets = NULL;
    defo_index *cell_elem = NULL;
    defo_mesh *m = NULL;
    if (s >= 0) {
        /* VTK stores end offsets; the shared builder takes begin offsets + 1 */
        offsets = defo_malloc((size_t)(r.num_cells + 1) * sizeof(int64_t));
        cell_elem = defo_malloc((size_t)(r.num_cells + 1) * sizeof(defo_index));
        if (!offsets || !cell_elem) s = defo_error_oom("cells", (size_t)r.num_cells * 12);
    }
    if (s >= 0) {
        offsets[0] = 0;
        for (int64_t k = 0; k < r.num_cells; k++) offsets[k + 1] = offs->i[k];
        double nopts = 0;
        int64_t notypes = 0;
        defo_vtk_grid g = {r.num_points,
                           pts ? pts->d : &nopts,
                           r.num_cells,
                           r.num_cells ? types->i : &notypes,
                           offsets,
                           r.num_cells ? conn->count : 0,
                           r.num_cells ? conn->i : &notypes};
        s = defo_vtk_build_mesh(&g, name, r.num_cells ? types->line : pl, &m, cell_elem);
    }
    /* a mixed-order grid read as quadratic: the warning survives the fields */
    char warning[512] = "";
    if (s > 0) snprintf(warning, sizeof warning, "%s", defo_last_error());
    for (int i = 0; s >= 0 && i < r.num_arrays; i++) {
        varray *a = &r.arrays[i];
        if (a->role != ROLE_PDATA && a->role != ROLE_CDATA) continue;
        if (a->role == ROLE_PDATA)
            s = defo_vtk_add_point_field(m, a->name, a->components, a->d, r.num_points);
        else
            s = defo_vtk_add_cell_field(m, a->name, a->components, a->d, r.num_cells, cell_elem);
    }
    defo_free(offsets);
    defo_free(cell_elem);
    vreader_free(&r);
    if (s < 0) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return warning[0] ? defo_error(DEFO_WARNING, "%s", warning) : DEFO_OK;
}

/* ============================================================ writer */
/* Streaming base64 of [UInt64 byte count][values], in 3-byte-aligned chunks
 * so no buffer grows with the mesh. */
typedef struct b64w {
    defo_out *o;
    unsigned char in[3 * 1024];
    size_t n;
    char enc[4 * 1024 + 4];
} b64w;

static void b64_flush(b64w *w) {
    if (!w->n) return;
    defo_base64_encode(w->in, w->n, w->enc);
    defo_out_write(w->o, w->enc, defo_base64_encoded_size(w->n));
    w->n = 0;
}
static void b64_put(b64w *w, const void *p, size_t n) {
    const unsigned char *b = p;
    while (n) {
        size_t k = DEFO_MIN(n, sizeof w->in - w->n);
        memcpy(w->in + w->n, b, k);
        w->n += k;
        b += k;
        n -= k;
        if (w->n == sizeof w->in) b64_flush(w);
    }
}

static void write_xml_string(defo_out *o, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&':
            defo_out_write(o, "&amp;", 5);
            break;
        case '<':
            defo_out_write(o, "&lt;", 4);
            break;
        case '>':
            defo_out_write(o, "&gt;", 4);
            break;
        case '"':
            defo_out_write(o, "&quot;", 6);
            break;
        default:
            defo_out_write(o, s, 1);
        }
    }
}

typedef enum wkind { W_F64, W_I64, W_U8 } wkind;

/* Source of one array's values over the parts of the grid (one mesh, or
 * several side by side): which = 0 a field (each part's data; cell data
 * padded with zeros for the part's triangles), 1 connectivity (each part's
 * elements then triangles, node indices offset), 2 offsets, 3 types, 4 the
 * points (one array of 3 per node over all parts).  Values are requested in
 * increasing k, so a cursor (part, its first k) finds the part. */
typedef struct wsrc {
    const defo_mesh *const *parts;
    int count;
    int which;
    const double *const *d; /* which 0: data per part */
    int comps;              /* which 0: components */
    bool cell;              /* which 0: cell data */
    const double *x;        /* which 4 */
    int p;                  /* cursor: current part */
    int64_t start;          /* k of its first value */
    int64_t node_off;       /* nodes before it */
    int64_t conn_off;       /* connectivity entries before it */
} wsrc;

static int64_t part_size(const wsrc *s, const defo_mesh *m) {
    switch (s->which) {
    case 0:
        return (int64_t)s->comps * (s->cell ? defo_vtk_num_cells(m) : (int64_t)m->num_nodes);
    case 1:
        return (int64_t)m->num_elems * m->nodes_per_elem + (int64_t)m->num_tris * m->nodes_per_tri;
    case 4:
        return 3 * (int64_t)m->num_nodes;
    default:
        return defo_vtk_num_cells(m);
    }
}

static int64_t wsrc_size(const wsrc *s) {
    int64_t n = 0;
    for (int p = 0; p < s->count; p++) n += part_size(s, s->parts[p]);
    return n;
}

static void wsrc_rewind(wsrc *s) {
    s->p = 0;
    s->start = s->node_off = s->conn_off = 0;
}

static void wsrc_get(wsrc *s, int64_t k, double *d, int64_t *iv) {
    while (s->p < s->count - 1 && k >= s->start + part_size(s, s->parts[s->p])) {
        const defo_mesh *pm = s->parts[s->p];
        s->start += part_size(s, pm);
        s->node_off += pm->num_nodes;
        s->conn_off +=
            (int64_t)pm->num_elems * pm->nodes_per_elem + (int64_t)pm->num_tris * pm->nodes_per_tri;
        s->p++;
    }
    const defo_mesh *m = s->parts[s->p];
    int64_t l = k - s->start;
    int64_t ne = m->num_elems, npe = m->nodes_per_elem, npt = m->nodes_per_tri;
    switch (s->which) {
    case 0:
        *d = l < (int64_t)s->comps * (s->cell ? ne : (int64_t)m->num_nodes) ? s->d[s->p][l] : 0.0;
        break;
    case 1:
        *iv = s->node_off + (l < ne * npe ? m->elems[l] : m->tris[l - ne * npe]);
        break;
    case 2:
        *iv = s->conn_off + (l < ne ? (l + 1) * npe : ne * npe + (l + 1 - ne) * npt);
        break;
    case 3:
        *iv = l < ne ? defo_vtk_elem_type(m) : defo_vtk_tri_type(m);
        break;
    default:
        *d = s->x[k];
        break;
    }
}

/* zlib-compressed binary payload (vtkZLibDataCompressor, header_type
 * UInt64): values gathered into blocks of ZBLOCK bytes, each deflated;
 * then base64 of the header [#blocks][ZBLOCK][last block size or 0]
 * [compressed sizes] and, as a second stream, of the blocks. */
#define ZBLOCK 32768

typedef struct zw {
    unsigned char block[ZBLOCK];
    size_t n;            /* bytes in block */
    unsigned char *data; /* compressed blocks */
    size_t size, cap;    /* bytes in data, capacity */
    uint64_t *sizes;     /* compressed size per block */
    size_t nb, nb_cap;
    uint64_t last; /* bytes in the last block */
    bool failed;
} zw;

static void zw_flush(zw *z) {
    if (z->n == 0 || z->failed) return;
    uLongf bound = compressBound((uLong)z->n);
    if (z->size + bound > z->cap) {
        size_t cap = 2 * (z->size + bound) + 4096;
        unsigned char *d = defo_realloc(z->data, cap);
        if (!d) {
            z->failed = true;
            return;
        }
        z->data = d;
        z->cap = cap;
    }
    if (z->nb == z->nb_cap) {
        size_t cap = z->nb_cap ? 2 * z->nb_cap : 16;
        uint64_t *q = defo_realloc(z->sizes, cap * sizeof *q);
        if (!q) {
            z->failed = true;
            return;
        }
        z->sizes = q;
        z->nb_cap = cap;
    }
    uLongf out = bound;
    if (compress2(z->data + z->size, &out, z->block, (uLong)z->n, Z_DEFAULT_COMPRESSION) != Z_OK) {
        z->failed = true;
        return;
    }
    z->size += (size_t)out;
    z->sizes[z->nb++] = (uint64_t)out;
    z->last = z->n;
    z->n = 0;
}

static void zw_put(zw *z, const void *p, size_t n) {
    const unsigned char *b = p;
    while (n) {
        size_t k = DEFO_MIN(n, ZBLOCK - z->n);
        memcpy(z->block + z->n, b, k);
        z->n += k;
        b += k;
        n -= k;
        if (z->n == ZBLOCK) zw_flush(z);
    }
}

static defo_status write_array(defo_out *o, bool binary, bool compress, const char *type,
                               const char *name, int comps, wkind kind, wsrc *src) {
    int64_t n = wsrc_size(src);
    wsrc_rewind(src);
    defo_out_printf(o, "        <DataArray type=\"%s\" Name=\"", type);
    write_xml_string(o, name);
    defo_out_printf(o, "\" NumberOfComponents=\"%d\" format=\"%s\">\n          ", comps,
                    binary ? "binary" : "ascii");
    if (binary && compress) {
        zw *z = defo_calloc(1, sizeof *z);
        if (!z) return defo_error_oom("zlib block", sizeof *z);
        for (int64_t k = 0; k < n; k++) {
            double d = 0;
            int64_t iv = 0;
            wsrc_get(src, k, &d, &iv);
            if (kind == W_F64)
                zw_put(z, &d, 8);
            else if (kind == W_I64)
                zw_put(z, &iv, 8);
            else {
                uint8_t u = (uint8_t)iv;
                zw_put(z, &u, 1);
            }
        }
        zw_flush(z);
        if (!z->failed) {
            b64w w;
            w.o = o;
            w.n = 0;
            uint64_t head[3] = {(uint64_t)z->nb, ZBLOCK, z->last == ZBLOCK ? 0 : z->last};
            b64_put(&w, head, sizeof head);
            b64_put(&w, z->sizes, z->nb * sizeof *z->sizes);
            b64_flush(&w);
            b64_put(&w, z->data, z->size);
            b64_flush(&w);
        }
        bool failed = z->failed;
        defo_free(z->data);
        defo_free(z->sizes);
        defo_free(z);
        if (failed)
            return defo_error(DEFO_ERR_OUT_OF_MEMORY, "zlib compression of '%s' failed", name);
    } else if (binary) {
        b64w w;
        w.o = o;
        w.n = 0;
        size_t vs = kind == W_U8 ? 1 : 8;
        uint64_t header = (uint64_t)n * vs;
        b64_put(&w, &header, 8);
        for (int64_t k = 0; k < n; k++) {
            double d = 0;
            int64_t iv = 0;
            wsrc_get(src, k, &d, &iv);
            if (kind == W_F64)
                b64_put(&w, &d, 8);
            else if (kind == W_I64)
                b64_put(&w, &iv, 8);
            else {
                uint8_t u = (uint8_t)iv;
                b64_put(&w, &u, 1);
            }
        }
        b64_flush(&w);
    } else {
        int per_line = comps > 1 ? comps : 8;
        for (int64_t k = 0; k < n; k++) {
            double d = 0;
            int64_t iv = 0;
            wsrc_get(src, k, &d, &iv);
            if (k > 0)
                defo_out_write(o, (k % per_line) ? " " : "\n          ", (k % per_line) ? 1 : 11);
            if (kind == W_F64)
                defo_out_double(o, d);
            else
                defo_out_printf(o, "%lld", (long long)iv);
        }
    }
    defo_out_printf(o, "\n        </DataArray>\n");
    return DEFO_OK;
}

static bool host_big_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 0;
}

/* The field of a part matching f (name, location, components), or NULL. */
static const defo_field *part_field(const defo_mesh *m, const defo_field *f) {
    const defo_field *g = defo_mesh_find_field(m, f->name, f->location);
    return g && g->components == f->components ? g : NULL;
}

defo_status defo_write_vtu_parts(const char *path, const defo_mesh *const *parts, int count,
                                 const defo_write_options *opt) {
    bool binary = opt ? opt->binary != 0 : true;
    bool compress = opt && opt->compress;
    if (compress && !binary)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: compression applies to binary .vtu data, not ASCII", path);
    if (count < 1 || !parts)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: no mesh to write", path);
    int64_t npoints = 0, ncells = 0;
    bool any_elems = false;
    for (int p = 0; p < count; p++) {
        npoints += parts[p]->num_nodes;
        ncells += defo_vtk_num_cells(parts[p]);
        any_elems |= parts[p]->num_elems > 0;
    }
    /* the fields of the first part, which every part must have (a part
     * without rows at a field's location needs none) */
    const defo_mesh *m0 = parts[0];
    for (int i = 0; i < m0->num_fields; i++)
        for (int p = 1; p < count; p++) {
            const defo_field *f = &m0->fields[i];
            int64_t rows =
                f->location == DEFO_FIELD_POINT ? parts[p]->num_nodes : parts[p]->num_elems;
            if (rows > 0 && !part_field(parts[p], f))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "%s: part %d has no %s field '%s' with %d components", path, p,
                                  f->location == DEFO_FIELD_POINT ? "point" : "cell", f->name,
                                  f->components);
        }
    const double **data = defo_calloc((size_t)count + 1, sizeof *data);
    double *xall = NULL;
    if (!data) return defo_error_oom("field list", (size_t)count * sizeof *data);
    const double *x = opt ? opt->positions : NULL;
    if (!x && count == 1) x = m0->x;
    if (!x) { /* each part's own positions, gathered */
        xall = defo_malloc((size_t)(3 * npoints + 1) * sizeof(double));
        if (!xall) {
            defo_free(data);
            return defo_error_oom("points", (size_t)npoints * 24);
        }
        size_t o = 0;
        for (int p = 0; p < count; p++) {
            memcpy(xall + o, parts[p]->x, 3 * (size_t)parts[p]->num_nodes * sizeof(double));
            o += 3 * (size_t)parts[p]->num_nodes;
        }
        x = xall;
    }
    defo_out o;
    defo_status s = defo_out_open(&o, path);
    if (s < 0) {
        defo_free(data);
        defo_free(xall);
        return s;
    }
    defo_out_printf(&o,
                    "<?xml version=\"1.0\"?>\n"
                    "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"%s\" "
                    "header_type=\"UInt64\"%s>\n  <UnstructuredGrid>\n"
                    "    <Piece NumberOfPoints=\"%lld\" NumberOfCells=\"%lld\">\n",
                    host_big_endian() ? "BigEndian" : "LittleEndian",
                    compress ? " compressor=\"vtkZLibDataCompressor\"" : "", (long long)npoints,
                    (long long)ncells);
    wsrc src;
    memset(&src, 0, sizeof src);
    src.parts = parts;
    src.count = count;
    for (int loc = 0; loc < 2 && s >= 0; loc++) {
        bool any = false;
        for (int i = 0; i < m0->num_fields; i++)
            if ((int)m0->fields[i].location == loc) any = true;
        if (loc == 1 && !any_elems) any = false;
        if (!any) continue;
        defo_out_printf(&o, "      <%s>\n", loc == 0 ? "PointData" : "CellData");
        for (int i = 0; i < m0->num_fields && s >= 0; i++) {
            const defo_field *f = &m0->fields[i];
            if ((int)f->location != loc) continue;
            for (int p = 0; p < count; p++) {
                const defo_field *g = part_field(parts[p], f);
                data[p] = g ? g->data : NULL;
            }
            src.which = 0;
            src.d = data;
            src.comps = f->components;
            src.cell = loc == 1;
            s = write_array(&o, binary, compress, "Float64", f->name, f->components, W_F64, &src);
        }
        defo_out_printf(&o, "      </%s>\n", loc == 0 ? "PointData" : "CellData");
    }
    defo_out_printf(&o, "      <Points>\n");
    src.which = 4;
    src.x = x;
    if (s >= 0) s = write_array(&o, binary, compress, "Float64", "Points", 3, W_F64, &src);
    defo_out_printf(&o, "      </Points>\n      <Cells>\n");
    src.which = 1;
    if (s >= 0) s = write_array(&o, binary, compress, "Int64", "connectivity", 1, W_I64, &src);
    src.which = 2;
    if (s >= 0) s = write_array(&o, binary, compress, "Int64", "offsets", 1, W_I64, &src);
    src.which = 3;
    if (s >= 0) s = write_array(&o, binary, compress, "UInt8", "types", 1, W_U8, &src);
    defo_out_printf(&o, "      </Cells>\n    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n");
    defo_free(data);
    defo_free(xall);
    if (s < 0) {
        defo_out_abort(&o);
        return s;
    }
    return defo_out_commit(&o);
}

defo_status defo_write_vtu(const char *path, const defo_mesh *mesh, const defo_write_options *opt) {
    return defo_write_vtu_parts(path, &mesh, 1, opt);
}
