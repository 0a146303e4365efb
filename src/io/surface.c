/*
 * io/surface.c — triangle surfaces: OBJ, STL (ASCII and binary), OFF and PLY
 * (ASCII, binary little- and big-endian) readers, and the OBJ writer.
 *
 * Surfaces become meshes of order 0 (mesh->tris, no elements): they feed the
 * mesher (docs/architecture.md "Surfaces to meshes") and the embedded
 * render surfaces.
 * Polygons are fan-triangulated (i0, ik, ik+1).  STL stores every triangle's
 * corners separately; they are welded by exact equality of coordinates with
 * a sort (O(n log n)), so a closed STL becomes a closed indexed surface, and
 * triangles that collapse under welding are dropped.  Binary STL is detected
 * by its size (84 + 50 n), never by the "solid" keyword, which many binary
 * files also start with.
 *
 * The OBJ writer writes mesh->tris, or for a volume mesh without triangles
 * its boundary (defo_mesh_boundary: outward faces used by one element), with
 * only the vertices those use.  A 6-node triangle (a curved tet10 face or a
 * tri6 surface) is written as the 4 flat triangles of defo_tri6_split through
 * its edge nodes, so a curved body looks curved in Blender.  Several meshes
 * (defo_mesh_write_parts) go into one file one after the other.
 *
 * Invariants: counts from a header are checked against the remaining input
 * before any allocation; every index is in range and every coordinate finite
 * before a mesh is made; on error nothing leaks and *out is NULL.
 */
#include "io/formats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ============================================================ builder */
typedef struct sbuild {
    double *v;
    int64_t nv, cap_v;
    int64_t *t;
    int64_t nt, cap_t;
} sbuild;

static void sb_free(sbuild *b) {
    defo_free(b->v);
    defo_free(b->t);
}

static defo_status sb_grow(void **p, int64_t *capacity, int64_t need, size_t each,
                           const char *what) {
    if (need <= *capacity) return DEFO_OK;
    if (need > DEFO_INDEX_MAX)
        return defo_error(DEFO_ERR_UNSUPPORTED, "more than %ld %s", (long)DEFO_INDEX_MAX, what);
    int64_t cap = *capacity < 64 ? 64 : *capacity;
    while (cap < need) cap *= 2;
    if (cap > DEFO_INDEX_MAX) cap = DEFO_INDEX_MAX;
    void *q = defo_realloc(*p, (size_t)cap * each);
    if (!q) return defo_error_oom(what, (size_t)cap * each);
    *p = q;
    *capacity = cap;
    return DEFO_OK;
}

static defo_status sb_vertex(sbuild *b, double x, double y, double z) {
    defo_status s = sb_grow((void **)&b->v, &b->cap_v, b->nv + 1, 3 * sizeof(double), "vertices");
    if (s < 0) return s;
    b->v[3 * b->nv] = x;
    b->v[3 * b->nv + 1] = y;
    b->v[3 * b->nv + 2] = z;
    b->nv++;
    return DEFO_OK;
}

static defo_status sb_tri(sbuild *b, int64_t i, int64_t j, int64_t k) {
    defo_status s = sb_grow((void **)&b->t, &b->cap_t, b->nt + 1, 3 * sizeof(int64_t), "triangles");
    if (s < 0) return s;
    b->t[3 * b->nt] = i;
    b->t[3 * b->nt + 1] = j;
    b->t[3 * b->nt + 2] = k;
    b->nt++;
    return DEFO_OK;
}

/* Fan-triangulate a polygon of n >= 3 vertex indices. */
static defo_status sb_polygon(sbuild *b, const int64_t *idx, int64_t n) {
    for (int64_t k = 1; k + 1 < n; k++) {
        defo_status s = sb_tri(b, idx[0], idx[k], idx[k + 1]);
        if (s < 0) return s;
    }
    return DEFO_OK;
}

/* Make the mesh; indices are checked here as a last line of defence. */
static defo_status sb_finish(sbuild *b, const char *name, defo_mesh **out) {
    for (int64_t t = 0; t < 3 * b->nt; t++)
        if (b->t[t] < 0 || b->t[t] >= b->nv)
            return defo_error(DEFO_ERR_PARSE,
                              "%s: face %lld: vertex index %lld out of range [0, %lld)", name,
                              (long long)(t / 3), (long long)b->t[t], (long long)b->nv);
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_create(0, &m);
    if (s < 0) return s;
    s = defo_mesh_reserve(m, (defo_index)b->nv, 0, (defo_index)b->nt);
    for (int64_t i = 0; s >= 0 && i < b->nv; i++)
        s = defo_mesh_add_node(m, b->v[3 * i], b->v[3 * i + 1], b->v[3 * i + 2], NULL);
    for (int64_t t = 0; s >= 0 && t < b->nt; t++) {
        defo_index tri[3] = {(defo_index)b->t[3 * t], (defo_index)b->t[3 * t + 1],
                             (defo_index)b->t[3 * t + 2]};
        s = defo_mesh_add_tri(m, tri, 3, 0);
    }
    if (s < 0) {
        defo_mesh_destroy(m);
        return defo_error_prefix("%s", name);
    }
    *out = m;
    return DEFO_OK;
}

/* A cursor over one line, keeping the file's name and line number. */
static defo_cursor line_cursor(const defo_cursor *file, const char *line, size_t len,
                               int64_t line_no) {
    defo_cursor lc;
    defo_cursor_init(&lc, file->name, line, len);
    lc.line = line_no;
    return lc;
}

/* ============================================================ OBJ */
defo_status defo_read_obj(const char *data, size_t size, const char *name, defo_mesh **out) {
    *out = NULL;
    defo_cursor c;
    defo_cursor_init(&c, name, data, size);
    sbuild b = {0};
    int64_t *poly = NULL, poly_cap = 0;
    defo_status s = DEFO_OK;
    const char *line;
    size_t len;
    int64_t line_no = c.line;
    while (s >= 0 && defo_cursor_next_line(&c, &line, &len)) {
        defo_cursor lc = line_cursor(&c, line, len, line_no);
        line_no = c.line;
        const char *kw;
        size_t kl;
        if (!defo_cursor_token(&lc, &kw, &kl) || kw[0] == '#') continue;
        if (defo_token_is(kw, kl, "v")) {
            double x, y, z;
            if ((s = defo_cursor_double(&lc, "vertex x", &x)) < 0) break;
            if ((s = defo_cursor_double(&lc, "vertex y", &y)) < 0) break;
            if ((s = defo_cursor_double(&lc, "vertex z", &z)) < 0) break;
            s = sb_vertex(&b, x, y, z);
        } else if (defo_token_is(kw, kl, "f")) {
            int64_t n = 0;
            const char *tok;
            size_t tl;
            while (defo_cursor_token(&lc, &tok, &tl)) {
                /* v, v/vt, v//vn, v/vt/vn: the position index is before the first '/' */
                size_t k = 0;
                while (k < tl && tok[k] != '/') k++;
                int64_t idx;
                if (!defo_parse_int64(tok, tok + k, &idx) || idx == 0) {
                    s = defo_cursor_error(&lc, DEFO_ERR_PARSE, "bad face vertex '%.*s'",
                                          (int)DEFO_MIN(tl, 40), tok);
                    break;
                }
                /* positive: 1-based; negative: relative to the vertices so far */
                int64_t v = idx > 0 ? idx - 1 : b.nv + idx;
                if (v < 0 || v >= b.nv) {
                    s = defo_cursor_error(&lc, DEFO_ERR_PARSE,
                                          "face vertex %lld out of range (%lld vertices so far)",
                                          (long long)idx, (long long)b.nv);
                    break;
                }
                if ((s = sb_grow((void **)&poly, &poly_cap, n + 1, sizeof(int64_t), "face")) < 0)
                    break;
                poly[n++] = v;
            }
            if (s < 0) break;
            if (n < 3) {
                s = defo_cursor_error(&lc, DEFO_ERR_PARSE, "face with %lld vertices (needs 3)",
                                      (long long)n);
                break;
            }
            s = sb_polygon(&b, poly, n);
        }
        /* vn, vt, vp, o, g, s, usemtl, mtllib, l, p, ...: not geometry defo uses */
    }
    defo_free(poly);
    if (s >= 0 && b.nt == 0)
        s = defo_error(DEFO_ERR_PARSE, "%s: no faces (an OBJ surface needs 'f' records)", c.name);
    if (s >= 0) s = sb_finish(&b, c.name, out);
    sb_free(&b);
    return s;
}

/* ============================================================ STL */
typedef struct wvert {
    double x, y, z;
    int64_t idx;
} wvert;

static int wvert_cmp(const void *pa, const void *pb) {
    const wvert *a = pa, *b = pb;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    if (a->y != b->y) return a->y < b->y ? -1 : 1;
    if (a->z != b->z) return a->z < b->z ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Weld the 3 corners per triangle in b (b->t[i] == i) into shared vertices,
 * numbered by first occurrence. */
static defo_status weld(sbuild *b) {
    int64_t n = b->nv;
    wvert *w = defo_malloc((size_t)(n + 1) * sizeof(wvert));
    int64_t *map = defo_malloc((size_t)(n + 1) * sizeof(int64_t));
    if (!w || !map) {
        defo_free(w);
        defo_free(map);
        return defo_error_oom("STL welding", (size_t)n * (sizeof(wvert) + 8));
    }
    for (int64_t i = 0; i < n; i++)
        w[i] = (wvert){b->v[3 * i], b->v[3 * i + 1], b->v[3 * i + 2], i};
    qsort(w, (size_t)n, sizeof(wvert), wvert_cmp);
    /* map[i] = first (smallest) index with the same coordinates */
    for (int64_t i = 0; i < n;) {
        int64_t j = i;
        while (j < n && w[j].x == w[i].x && w[j].y == w[i].y && w[j].z == w[i].z) {
            map[w[j].idx] = w[i].idx;
            j++;
        }
        i = j;
    }
    defo_free(w);
    int64_t count = 0;
    for (int64_t i = 0; i < n; i++) {
        if (map[i] == i) {
            memmove(b->v + 3 * count, b->v + 3 * i, 3 * sizeof(double));
            map[i] = -1 - count++; /* negative marks "already renumbered" */
        } else {
            map[i] = map[map[i]];
        }
    }
    int64_t nt = 0;
    for (int64_t t = 0; t < b->nt; t++) {
        int64_t a = -1 - map[b->t[3 * t]], c = -1 - map[b->t[3 * t + 1]],
                d = -1 - map[b->t[3 * t + 2]];
        if (a == c || c == d || a == d) continue; /* collapsed by welding */
        b->t[3 * nt] = a;
        b->t[3 * nt + 1] = c;
        b->t[3 * nt + 2] = d;
        nt++;
    }
    b->nt = nt;
    b->nv = count;
    defo_free(map);
    return DEFO_OK;
}

static float le_f32(const unsigned char *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static defo_status stl_binary(defo_cursor *c, sbuild *b, int64_t n) {
    const unsigned char *base = (const unsigned char *)c->begin;
    defo_status s = DEFO_OK;
    if ((s = sb_grow((void **)&b->v, &b->cap_v, 3 * n, 3 * sizeof(double), "vertices")) < 0)
        return s;
    if ((s = sb_grow((void **)&b->t, &b->cap_t, n, 3 * sizeof(int64_t), "triangles")) < 0) return s;
    for (int64_t t = 0; t < n; t++) {
        const unsigned char *rec = base + 84 + 50 * t;
        for (int k = 0; k < 3; k++) {
            double x[3];
            for (int d = 0; d < 3; d++) {
                x[d] = (double)le_f32(rec + 12 + 12 * k + 4 * d);
                if (!isfinite(x[d])) {
                    c->p = (const char *)(rec + 12 + 12 * k + 4 * d);
                    return defo_cursor_error_at_byte(
                        c, DEFO_ERR_PARSE, "triangle %lld: non-finite coordinate", (long long)t);
                }
            }
            sb_vertex(b, x[0], x[1], x[2]);
        }
        sb_tri(b, 3 * t, 3 * t + 1, 3 * t + 2);
    }
    return DEFO_OK;
}

static defo_status expect_word(defo_cursor *c, const char *w) {
    const char *tok;
    size_t len;
    if (!defo_cursor_token(c, &tok, &len))
        return defo_cursor_error(c, DEFO_ERR_PARSE, "unexpected end of file, expected '%s'", w);
    if (!defo_token_is(tok, len, w))
        return defo_cursor_error(c, DEFO_ERR_PARSE, "expected '%s', found '%.*s'", w,
                                 (int)DEFO_MIN(len, 40), tok);
    return DEFO_OK;
}

static defo_status stl_ascii(defo_cursor *c, sbuild *b) {
    const char *tok, *line;
    size_t len;
    defo_status s;
    int64_t poly[64];
    bool in_solid = false;
    while (defo_cursor_token(c, &tok, &len)) {
        if (defo_token_is(tok, len, "solid")) {
            defo_cursor_next_line(c, &line, &len); /* the solid's name */
            in_solid = true;
            continue;
        }
        if (defo_token_is(tok, len, "endsolid")) {
            defo_cursor_next_line(c, &line, &len);
            in_solid = false;
            continue;
        }
        if (!in_solid || !defo_token_is(tok, len, "facet"))
            return defo_cursor_error(c, DEFO_ERR_PARSE, "expected 'facet', found '%.*s'",
                                     (int)DEFO_MIN(len, 40), tok);
        double nrm;
        if ((s = expect_word(c, "normal")) < 0) return s;
        for (int d = 0; d < 3; d++)
            if ((s = defo_cursor_double(c, "facet normal", &nrm)) < 0) return s;
        if ((s = expect_word(c, "outer")) < 0 || (s = expect_word(c, "loop")) < 0) return s;
        int64_t n = 0;
        for (;;) {
            if (!defo_cursor_token(c, &tok, &len))
                return defo_cursor_error(c, DEFO_ERR_PARSE, "unexpected end of file in a facet");
            if (defo_token_is(tok, len, "endloop")) break;
            if (!defo_token_is(tok, len, "vertex"))
                return defo_cursor_error(c, DEFO_ERR_PARSE, "expected 'vertex', found '%.*s'",
                                         (int)DEFO_MIN(len, 40), tok);
            double x[3];
            for (int d = 0; d < 3; d++)
                if ((s = defo_cursor_double(c, "vertex coordinate", &x[d])) < 0) return s;
            if (n >= 64) return defo_cursor_error(c, DEFO_ERR_PARSE, "facet with over 64 vertices");
            if ((s = sb_vertex(b, x[0], x[1], x[2])) < 0) return s;
            poly[n++] = b->nv - 1;
        }
        if (n < 3)
            return defo_cursor_error(c, DEFO_ERR_PARSE, "facet with %lld vertices (needs 3)",
                                     (long long)n);
        if ((s = expect_word(c, "endfacet")) < 0) return s;
        if ((s = sb_polygon(b, poly, n)) < 0) return s;
    }
    if (in_solid) return defo_cursor_error(c, DEFO_ERR_PARSE, "missing 'endsolid'");
    return DEFO_OK;
}

defo_status defo_read_stl(const char *data, size_t size, const char *name, defo_mesh **out) {
    *out = NULL;
    defo_cursor c;
    defo_cursor_init(&c, name, data, size);
    sbuild b = {0};
    defo_status s;
    uint64_t nbin = 0;
    if (size >= 84) {
        const unsigned char *h = (const unsigned char *)data + 80;
        nbin = (uint64_t)h[0] | (uint64_t)h[1] << 8 | (uint64_t)h[2] << 16 | (uint64_t)h[3] << 24;
    }
    bool binary = size >= 84 && 84 + 50 * nbin == size;
    if (binary) {
        if (nbin > (uint64_t)DEFO_INDEX_MAX / 3)
            return defo_error(DEFO_ERR_UNSUPPORTED, "%s: %llu triangles is beyond defo's limit",
                              c.name, (unsigned long long)nbin);
        s = stl_binary(&c, &b, (int64_t)nbin);
    } else {
        const char *p = data, *e = data + size;
        while (p < e && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
        if ((size_t)(e - p) < 5 || memcmp(p, "solid", 5) != 0) {
            if (size >= 84)
                return defo_error(DEFO_ERR_PARSE,
                                  "%s: byte 80: not an ASCII STL (no 'solid') and not a binary "
                                  "one: %llu triangles need %llu bytes, the file has %zu",
                                  c.name, (unsigned long long)nbin,
                                  (unsigned long long)(84 + 50 * nbin), size);
            return defo_error(DEFO_ERR_PARSE,
                              "%s: byte 0: too short for a binary STL and no 'solid'", c.name);
        }
        s = stl_ascii(&c, &b);
    }
    if (s >= 0) s = weld(&b);
    if (s >= 0 && b.nt == 0) s = defo_error(DEFO_ERR_PARSE, "%s: no triangles", c.name);
    if (s >= 0) s = sb_finish(&b, c.name, out);
    sb_free(&b);
    return s;
}

/* ============================================================ OFF */
/* Next line with content, comments ('#' to the end) removed. */
static bool off_line(defo_cursor *c, defo_cursor *lc) {
    const char *line;
    size_t len;
    for (;;) {
        int64_t no = c->line;
        if (!defo_cursor_next_line(c, &line, &len)) return false;
        const char *hash = memchr(line, '#', len);
        if (hash) len = (size_t)(hash - line);
        size_t k = 0;
        while (k < len && (line[k] == ' ' || line[k] == '\t' || line[k] == '\r')) k++;
        if (k == len) continue;
        *lc = line_cursor(c, line, len, no);
        return true;
    }
}

defo_status defo_read_off(const char *data, size_t size, const char *name, defo_mesh **out) {
    *out = NULL;
    defo_cursor c, lc;
    defo_cursor_init(&c, name, data, size);
    sbuild b = {0};
    const char *tok;
    size_t len;
    if (!off_line(&c, &lc) || !defo_cursor_token(&lc, &tok, &len) || len < 3 ||
        memcmp(tok + len - 3, "OFF", 3) != 0)
        return defo_cursor_error(&c, DEFO_ERR_PARSE, "not an OFF file (no OFF header)");
    /* [ST][C][N]OFF; 4OFF (4-D) and nOFF (n-D) are other formats */
    size_t k = 0;
    if (len - k >= 5 && memcmp(tok, "ST", 2) == 0) k += 2;
    if (tok[k] == 'C') k++;
    if (tok[k] == 'N') k++;
    if (k != len - 3)
        return defo_cursor_error(&lc, DEFO_ERR_UNSUPPORTED, "OFF variant '%.*s' is not supported",
                                 (int)DEFO_MIN(len, 40), tok);
    if (defo_cursor_token(&lc, &tok, &len)) {
        if (defo_token_is(tok, len, "BINARY"))
            return defo_cursor_error(&lc, DEFO_ERR_UNSUPPORTED, "binary OFF is not supported");
        lc.p = tok; /* the counts share the header line */
    } else if (!off_line(&c, &lc)) {
        return defo_cursor_error(&c, DEFO_ERR_PARSE, "truncated: missing vertex and face counts");
    }
    int64_t nv, nf;
    defo_status s;
    if ((s = defo_cursor_int64(&lc, "vertex count", &nv)) < 0) return s;
    if ((s = defo_cursor_int64(&lc, "face count", &nf)) < 0) return s;
    if ((s = defo_cursor_check_count(&lc, nv, 0, "vertex")) < 0) return s;
    if ((s = defo_cursor_check_count(&c, nv, 6, "vertex")) < 0) return s;
    if ((s = defo_cursor_check_count(&c, nf, 6, "face")) < 0) return s;
    int64_t *poly = NULL, poly_cap = 0;
    if ((s = sb_grow((void **)&b.v, &b.cap_v, nv, 3 * sizeof(double), "vertices")) < 0) goto done;
    for (int64_t i = 0; i < nv; i++) {
        double x[3];
        if (!off_line(&c, &lc)) {
            s = defo_cursor_error(&c, DEFO_ERR_PARSE, "truncated: %lld of %lld vertices read",
                                  (long long)i, (long long)nv);
            goto done;
        }
        for (int d = 0; d < 3; d++)
            if ((s = defo_cursor_double(&lc, "vertex coordinate", &x[d])) < 0) goto done;
        sb_vertex(&b, x[0], x[1], x[2]);
    }
    for (int64_t f = 0; f < nf; f++) {
        int64_t n;
        if (!off_line(&c, &lc)) {
            s = defo_cursor_error(&c, DEFO_ERR_PARSE, "truncated: %lld of %lld faces read",
                                  (long long)f, (long long)nf);
            goto done;
        }
        if ((s = defo_cursor_int64(&lc, "face size", &n)) < 0) goto done;
        if (n < 3 || (size_t)n > (size_t)(lc.end - lc.p)) {
            s = defo_cursor_error(&lc, DEFO_ERR_PARSE, "face %lld: bad vertex count %lld",
                                  (long long)f, (long long)n);
            goto done;
        }
        if ((s = sb_grow((void **)&poly, &poly_cap, n, sizeof(int64_t), "face")) < 0) goto done;
        for (int64_t j = 0; j < n; j++) {
            if ((s = defo_cursor_int64(&lc, "face vertex", &poly[j])) < 0) goto done;
            if (poly[j] < 0 || poly[j] >= nv) {
                s = defo_cursor_error(&lc, DEFO_ERR_PARSE,
                                      "face %lld: vertex index %lld out of range [0, %lld)",
                                      (long long)f, (long long)poly[j], (long long)nv);
                goto done;
            }
        }
        if ((s = sb_polygon(&b, poly, n)) < 0) goto done;
    }
    s = sb_finish(&b, c.name, out);
done:
    defo_free(poly);
    sb_free(&b);
    return s;
}

/* ============================================================ PLY */
typedef enum ptype { PT_NONE, PT_I8, PT_U8, PT_I16, PT_U16, PT_I32, PT_U32, PT_F32, PT_F64 } ptype;

static ptype ply_type(const char *t, size_t n) {
    static const struct {
        const char *name;
        ptype type;
    } map[] = {{"char", PT_I8},   {"int8", PT_I8},     {"uchar", PT_U8},   {"uint8", PT_U8},
               {"short", PT_I16}, {"int16", PT_I16},   {"ushort", PT_U16}, {"uint16", PT_U16},
               {"int", PT_I32},   {"int32", PT_I32},   {"uint", PT_U32},   {"uint32", PT_U32},
               {"float", PT_F32}, {"float32", PT_F32}, {"double", PT_F64}, {"float64", PT_F64}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (defo_token_is(t, n, map[i].name)) return map[i].type;
    return PT_NONE;
}

static size_t ptype_size(ptype t) {
    switch (t) {
    case PT_I8:
    case PT_U8:
        return 1;
    case PT_I16:
    case PT_U16:
        return 2;
    case PT_F64:
        return 8;
    default:
        return 4;
    }
}

#define PLY_MAX_PROPS 64
#define PLY_MAX_ELEMS 32

typedef struct pprop {
    char name[32];
    ptype type;       /* value type (item type for lists) */
    ptype count_type; /* PT_NONE unless a list */
} pprop;

typedef struct pelem {
    char name[32];
    int64_t count;
    int num_props;
    pprop props[PLY_MAX_PROPS];
} pelem;

typedef struct preader {
    defo_cursor c;
    int format; /* 0 ascii, 1 binary little endian, 2 binary big endian */
} preader;

/* One scalar; integers are returned exactly in a double. */
static defo_status ply_value(preader *r, ptype t, const char *what, double *v) {
    if (r->format == 0) return defo_cursor_double(&r->c, what, v);
    size_t n = ptype_size(t);
    if ((size_t)(r->c.end - r->c.p) < n)
        return defo_cursor_error_at_byte(&r->c, DEFO_ERR_PARSE, "truncated reading %s", what);
    const unsigned char *p = (const unsigned char *)r->c.p;
    uint64_t u = 0;
    for (size_t k = 0; k < n; k++) u = (u << 8) | p[r->format == 2 ? k : n - 1 - k];
    switch (t) {
    case PT_I8:
        *v = (int8_t)(uint8_t)u;
        break;
    case PT_U8:
        *v = (uint8_t)u;
        break;
    case PT_I16:
        *v = (int16_t)(uint16_t)u;
        break;
    case PT_U16:
        *v = (uint16_t)u;
        break;
    case PT_I32:
        *v = (int32_t)(uint32_t)u;
        break;
    case PT_U32:
        *v = (uint32_t)u;
        break;
    case PT_F32: {
        uint32_t w = (uint32_t)u;
        float f;
        memcpy(&f, &w, 4);
        *v = (double)f;
        break;
    }
    default:
        memcpy(v, &u, 8);
        break;
    }
    if (!isfinite(*v))
        return defo_cursor_error_at_byte(&r->c, DEFO_ERR_PARSE, "non-finite %s", what);
    r->c.p += n;
    return DEFO_OK;
}

static defo_status ply_count(preader *r, ptype t, int64_t *n) {
    double v;
    defo_status s = ply_value(r, t, "list count", &v);
    if (s < 0) return s;
    if (v < 0 || v != floor(v) || v > 1e9)
        return r->format ? defo_cursor_error_at_byte(&r->c, DEFO_ERR_PARSE, "bad list count")
                         : defo_cursor_error(&r->c, DEFO_ERR_PARSE, "bad list count");
    *n = (int64_t)v;
    return DEFO_OK;
}

/* Skip one property value (a list with its items), without interpreting it. */
static defo_status ply_skip(preader *r, const pprop *p) {
    int64_t n = 1;
    defo_status s;
    if (p->count_type != PT_NONE && (s = ply_count(r, p->count_type, &n)) < 0) return s;
    for (int64_t k = 0; k < n; k++) {
        if (r->format == 0) {
            const char *tok;
            size_t len;
            if (!defo_cursor_token(&r->c, &tok, &len))
                return defo_cursor_error(&r->c, DEFO_ERR_PARSE, "truncated in property %s",
                                         p->name);
        } else {
            size_t sz = ptype_size(p->type);
            if ((size_t)(r->c.end - r->c.p) < sz)
                return defo_cursor_error_at_byte(&r->c, DEFO_ERR_PARSE, "truncated in property %s",
                                                 p->name);
            r->c.p += sz;
        }
    }
    return DEFO_OK;
}

static void copy_word(char *dst, size_t cap, const char *s, size_t n) {
    n = DEFO_MIN(n, cap - 1);
    memcpy(dst, s, n);
    dst[n] = '\0';
}

static defo_status ply_header(preader *r, pelem *elems, int *num_elems) {
    defo_cursor *c = &r->c;
    const char *line;
    size_t len;
    if (!defo_cursor_next_line(c, &line, &len) || !defo_token_is(line, len, "ply")) {
        c->line = 1;
        return defo_cursor_error(c, DEFO_ERR_PARSE, "not a PLY file (first line must be 'ply')");
    }
    bool have_format = false;
    for (;;) {
        int64_t no = c->line;
        if (!defo_cursor_next_line(c, &line, &len))
            return defo_cursor_error(c, DEFO_ERR_PARSE, "truncated header: no end_header");
        defo_cursor lc = line_cursor(c, line, len, no);
        const char *w[6];
        size_t wl[6];
        int n = 0;
        while (n < 6 && defo_cursor_token(&lc, &w[n], &wl[n])) n++;
        if (n == 0) continue;
        if (defo_token_is(w[0], wl[0], "end_header")) break;
        if (defo_token_is(w[0], wl[0], "comment") || defo_token_is(w[0], wl[0], "obj_info"))
            continue;
        if (defo_token_is(w[0], wl[0], "format")) {
            if (n < 2) return defo_cursor_error(&lc, DEFO_ERR_PARSE, "format needs a type");
            if (defo_token_is(w[1], wl[1], "ascii"))
                r->format = 0;
            else if (defo_token_is(w[1], wl[1], "binary_little_endian"))
                r->format = 1;
            else if (defo_token_is(w[1], wl[1], "binary_big_endian"))
                r->format = 2;
            else
                return defo_cursor_error(&lc, DEFO_ERR_UNSUPPORTED, "PLY format '%.*s'",
                                         (int)DEFO_MIN(wl[1], 40), w[1]);
            have_format = true;
        } else if (defo_token_is(w[0], wl[0], "element")) {
            int64_t count;
            if (n < 3 || !defo_parse_int64(w[2], w[2] + wl[2], &count))
                return defo_cursor_error(&lc, DEFO_ERR_PARSE, "element needs a name and a count");
            if (*num_elems >= PLY_MAX_ELEMS)
                return defo_cursor_error(&lc, DEFO_ERR_UNSUPPORTED, "more than %d elements",
                                         PLY_MAX_ELEMS);
            defo_status s = defo_cursor_check_count(&lc, count, 0, "element");
            if (s < 0) return s;
            pelem *e = &elems[(*num_elems)++];
            memset(e, 0, sizeof *e);
            copy_word(e->name, sizeof e->name, w[1], wl[1]);
            e->count = count;
        } else if (defo_token_is(w[0], wl[0], "property")) {
            if (*num_elems == 0)
                return defo_cursor_error(&lc, DEFO_ERR_PARSE, "property before any element");
            pelem *e = &elems[*num_elems - 1];
            if (e->num_props >= PLY_MAX_PROPS)
                return defo_cursor_error(&lc, DEFO_ERR_UNSUPPORTED, "more than %d properties",
                                         PLY_MAX_PROPS);
            pprop *p = &e->props[e->num_props];
            bool list = n >= 2 && defo_token_is(w[1], wl[1], "list");
            if (n < (list ? 5 : 3))
                return defo_cursor_error(&lc, DEFO_ERR_PARSE, "incomplete property line");
            p->count_type = list ? ply_type(w[2], wl[2]) : PT_NONE;
            p->type = ply_type(w[list ? 3 : 1], wl[list ? 3 : 1]);
            if (p->type == PT_NONE || (list && p->count_type == PT_NONE))
                return defo_cursor_error(&lc, DEFO_ERR_UNSUPPORTED, "unknown property type");
            copy_word(p->name, sizeof p->name, w[list ? 4 : 2], wl[list ? 4 : 2]);
            e->num_props++;
        } else {
            return defo_cursor_error(&lc, DEFO_ERR_PARSE, "unknown header line '%.*s'",
                                     (int)DEFO_MIN(wl[0], 40), w[0]);
        }
    }
    if (!have_format) return defo_cursor_error(c, DEFO_ERR_PARSE, "header has no format line");
    return DEFO_OK;
}

static int find_prop(const pelem *e, const char *name) {
    for (int i = 0; i < e->num_props; i++)
        if (strcmp(e->props[i].name, name) == 0) return i;
    return -1;
}

defo_status defo_read_ply(const char *data, size_t size, const char *name, defo_mesh **out) {
    *out = NULL;
    preader r;
    defo_cursor_init(&r.c, name, data, size);
    r.format = 0;
    pelem *elems = defo_malloc(PLY_MAX_ELEMS * sizeof(pelem));
    if (!elems) return defo_error_oom("PLY header", PLY_MAX_ELEMS * sizeof(pelem));
    int num_elems = 0;
    sbuild b = {0};
    int64_t *poly = NULL, poly_cap = 0;
    bool have_vertices = false, have_faces = false;
    defo_status s = ply_header(&r, elems, &num_elems);
    for (int ei = 0; s >= 0 && ei < num_elems; ei++) {
        pelem *e = &elems[ei];
        /* minimum bytes of one instance, to refuse absurd counts up front */
        size_t min_bytes = 0;
        for (int p = 0; p < e->num_props; p++)
            min_bytes += r.format
                             ? ptype_size(e->props[p].count_type != PT_NONE ? e->props[p].count_type
                                                                            : e->props[p].type)
                             : 2;
        if ((s = defo_cursor_check_count(&r.c, e->count, min_bytes, e->name)) < 0) break;
        bool is_vertex = strcmp(e->name, "vertex") == 0 && !have_vertices;
        bool is_face = strcmp(e->name, "face") == 0 && !have_faces;
        int px = find_prop(e, "x"), py = find_prop(e, "y"), pz = find_prop(e, "z");
        int pf = find_prop(e, "vertex_indices");
        if (pf < 0) pf = find_prop(e, "vertex_index");
        if (is_vertex &&
            (px < 0 || py < 0 || pz < 0 || e->props[px].count_type != PT_NONE ||
             e->props[py].count_type != PT_NONE || e->props[pz].count_type != PT_NONE)) {
            s = defo_error(DEFO_ERR_PARSE, "%s: vertex element lacks scalar x, y, z properties",
                           r.c.name);
            break;
        }
        if (is_face && (pf < 0 || e->props[pf].count_type == PT_NONE)) {
            s = defo_error(DEFO_ERR_PARSE, "%s: face element lacks a vertex_indices list",
                           r.c.name);
            break;
        }
        if (is_vertex &&
            (s = sb_grow((void **)&b.v, &b.cap_v, e->count, 3 * sizeof(double), "vertices")) < 0)
            break;
        for (int64_t i = 0; s >= 0 && i < e->count; i++) {
            double x[3] = {0, 0, 0};
            for (int p = 0; s >= 0 && p < e->num_props; p++) {
                const pprop *pp = &e->props[p];
                if (is_vertex && (p == px || p == py || p == pz)) {
                    s = ply_value(&r, pp->type, "vertex coordinate",
                                  &x[p == px   ? 0
                                     : p == py ? 1
                                               : 2]);
                } else if (is_face && p == pf) {
                    int64_t n;
                    if ((s = ply_count(&r, pp->count_type, &n)) < 0) break;
                    if (n < 3 || (uint64_t)n > (uint64_t)(r.c.end - r.c.p)) {
                        s = r.format ? defo_cursor_error_at_byte(&r.c, DEFO_ERR_PARSE,
                                                                 "face %lld has %lld vertices",
                                                                 (long long)i, (long long)n)
                                     : defo_cursor_error(&r.c, DEFO_ERR_PARSE,
                                                         "face %lld has %lld vertices",
                                                         (long long)i, (long long)n);
                        break;
                    }
                    if ((s = sb_grow((void **)&poly, &poly_cap, n, sizeof(int64_t), "face")) < 0)
                        break;
                    for (int64_t j = 0; s >= 0 && j < n; j++) {
                        double v;
                        if ((s = ply_value(&r, pp->type, "face vertex index", &v)) < 0) break;
                        bool bad = v != floor(v) || v < 0 || (have_vertices && v >= (double)b.nv);
                        if (bad) {
                            s = r.format ? defo_cursor_error_at_byte(
                                               &r.c, DEFO_ERR_PARSE,
                                               "face %lld: vertex index %.17g out of range",
                                               (long long)i, v)
                                         : defo_cursor_error(
                                               &r.c, DEFO_ERR_PARSE,
                                               "face %lld: vertex index %.17g out of range",
                                               (long long)i, v);
                            break;
                        }
                        poly[j] = v > 4e18 ? INT64_MAX : (int64_t)v;
                    }
                    if (s >= 0) s = sb_polygon(&b, poly, n);
                } else {
                    s = ply_skip(&r, pp);
                }
            }
            if (s >= 0 && is_vertex) s = sb_vertex(&b, x[0], x[1], x[2]);
        }
        if (is_vertex) have_vertices = true;
        if (is_face) have_faces = true;
    }
    if (s >= 0 && !have_vertices) s = defo_error(DEFO_ERR_PARSE, "%s: no vertex element", r.c.name);
    if (s >= 0 && b.nt == 0) s = defo_error(DEFO_ERR_PARSE, "%s: no faces", r.c.name);
    if (s >= 0) s = sb_finish(&b, r.c.name, out);
    defo_free(poly);
    defo_free(elems);
    sb_free(&b);
    return s;
}

/* ============================================================ OBJ writer */
/* The triangles a part contributes: its own, or for a volume mesh without
 * triangles its boundary (6-node faces on a tet10 mesh). */
static defo_status obj_part_faces(const defo_mesh *m, defo_boundary *bd, const defo_index **tris,
                                  int64_t *nt, int *stride) {
    memset(bd, 0, sizeof *bd);
    *tris = m->tris;
    *nt = m->num_tris;
    *stride = m->nodes_per_tri;
    if (*nt == 0 && m->num_elems > 0) {
        defo_status s = defo_mesh_boundary(m, m->nodes_per_elem == 10, bd);
        if (s < 0) return s;
        *tris = bd->faces;
        *nt = bd->num_faces;
        *stride = bd->nodes_per_face;
    }
    return DEFO_OK;
}

defo_status defo_write_obj_parts(const char *path, const defo_mesh *const *parts, int count,
                                 const defo_write_options *opt) {
    const double *xall = opt && opt->positions ? opt->positions : NULL;
    typedef struct obj_part {
        defo_boundary bd;
        const defo_index *tris;
        int64_t nt;
        int stride;
        defo_index *map; /* node -> 1-based OBJ vertex, or -1 */
    } obj_part;
    obj_part *op = defo_calloc((size_t)count + 1, sizeof *op);
    if (!op) return defo_error_oom("OBJ parts", (size_t)count * sizeof *op);
    defo_status s = DEFO_OK;
    defo_index nv = 0;
    for (int p = 0; p < count && s >= 0; p++) {
        const defo_mesh *m = parts[p];
        obj_part *q = &op[p];
        if ((s = obj_part_faces(m, &q->bd, &q->tris, &q->nt, &q->stride)) < 0) break;
        q->map = defo_malloc((size_t)(m->num_nodes + 1) * sizeof(defo_index));
        if (!q->map) {
            s = defo_error_oom("OBJ vertex map", (size_t)m->num_nodes * sizeof(defo_index));
            break;
        }
        /* only the vertices the triangles use, in index order (OBJ is 1-based) */
        for (defo_index i = 0; i < m->num_nodes; i++) q->map[i] = -1;
        for (int64_t t = 0; t < q->nt; t++)
            for (int k = 0; k < q->stride; k++) q->map[q->tris[t * q->stride + k]] = 0;
        for (defo_index i = 0; i < m->num_nodes; i++)
            if (q->map[i] == 0) q->map[i] = ++nv;
    }
    defo_out o;
    if (s >= 0) s = defo_out_open(&o, path);
    if (s >= 0) {
        defo_out_printf(&o, "# defo %s\n", DEFO_VERSION_STRING);
        /* each part: its name (an object in Blender), vertices, faces; OBJ
         * vertex indices are global */
        size_t node_off = 0;
        for (int p = 0; p < count; p++) {
            const defo_mesh *m = parts[p];
            const double *x = xall ? xall + 3 * node_off : m->x;
            const char *name = opt && opt->part_names ? opt->part_names[p] : NULL;
            if (name && name[0]) {
                defo_out_write(&o, "o ", 2);
                for (const char *c = name; *c; c++) /* one line, no control characters */
                    defo_out_write(&o, (unsigned char)*c < 32 ? "_" : c, 1);
                defo_out_write(&o, "\n", 1);
            }
            for (defo_index i = 0; i < m->num_nodes; i++) {
                if (op[p].map[i] < 0) continue;
                defo_out_write(&o, "v ", 2);
                for (int d = 0; d < 3; d++) {
                    if (d) defo_out_write(&o, " ", 1);
                    defo_out_double(&o, x[3 * (size_t)i + (size_t)d]);
                }
                defo_out_write(&o, "\n", 1);
            }
            node_off += (size_t)m->num_nodes;
            const obj_part *q = &op[p];
            for (int64_t t = 0; t < q->nt; t++) {
                const defo_index *f = q->tris + t * q->stride;
                if (q->stride == 6) /* a curved face: 4 flat triangles through its edge nodes */
                    for (int k = 0; k < 4; k++)
                        defo_out_printf(&o, "f %d %d %d\n", (int)q->map[f[defo_tri6_split[k][0]]],
                                        (int)q->map[f[defo_tri6_split[k][1]]],
                                        (int)q->map[f[defo_tri6_split[k][2]]]);
                else
                    defo_out_printf(&o, "f %d %d %d\n", (int)q->map[f[0]], (int)q->map[f[1]],
                                    (int)q->map[f[2]]);
            }
        }
        s = defo_out_commit(&o);
    }
    for (int p = 0; p < count; p++) {
        defo_boundary_free(&op[p].bd);
        defo_free(op[p].map);
    }
    defo_free(op);
    return s;
}

defo_status defo_write_obj(const char *path, const defo_mesh *mesh, const defo_write_options *opt) {
    return defo_write_obj_parts(path, &mesh, 1, opt);
}
