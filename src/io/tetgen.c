/*
 * io/tetgen.c — TetGen .node / .ele / .face files, read and write.
 *
 * Format (wias-berlin.de/software/tetgen/fformats.html): line based, '#'
 * starts a comment anywhere, blank lines are ignored.
 *   .node  <#points> <dim = 3> <#attributes> <#markers 0|1>, then
 *          <i> <x> <y> <z> [attributes] [marker]
 *   .ele   <#tets> <nodes per tet 4|10> <#attributes>, then
 *          <i> <n1..n4|n10> [attributes]      (first attribute = region -> elem_tag)
 *   .face  <#faces> <#markers 0|1>, then
 *          <i> <n1 n2 n3 [n4 n5 n6]> [marker] (marker -> tri_tag)
 *
 * Invariants and why:
 *   - The index base (0 or 1) is the first node's number; node numbers must
 *     then be consecutive, so element indices mean the same as in TetGen.
 *   - Counts are checked against the remaining bytes before allocating.
 *   - TetGen's 10-node order (tetgen 1.5/1.6 outelements: corners, then the
 *     edges of its edge2ver table) is (2,3)(0,3)(0,1)(1,2)(1,3)(0,2); defo
 *     (VTK) uses (0,1)(1,2)(0,2)(0,3)(1,3)(2,3).  Converted on read and write.
 *     6-node faces list edges (0,1)(1,2)(2,0), as defo does.
 *   - Region attributes must be integers to become tags (TetGen writes the
 *     region numbers of the .poly file); anything else is refused rather
 *     than silently rounded.
 *   - The writer numbers from 1 (TetGen's default) and writes coordinates
 *     as shortest round-trip decimals, so write -> read is bitwise.
 */
#include "io/formats.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

/* defo slot k holds TetGen slot tg_from_defo[k]. */
static const int tg_from_defo[10] = {0, 1, 2, 3, 6, 7, 9, 5, 8, 4};

typedef struct tg_file {
    defo_cursor c;
    int64_t line; /* line number of the current record */
    const char *tok[64];
    size_t len[64];
    int ntok;
} tg_file;

static defo_status tg_error(const tg_file *f, defo_status status, const char *fmt, ...)
    DEFO_PRINTF(3, 4);
static defo_status tg_error(const tg_file *f, defo_status status, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return defo_error(status, "%s:%lld: %s", f->c.name, (long long)f->line, msg);
}

/* Next record: a non-empty line without its comment, split into tokens.
 * False at the end of the file. */
static bool tg_next(tg_file *f) {
    const char *line;
    size_t len;
    for (;;) {
        int64_t at = f->c.line;
        if (!defo_cursor_next_line(&f->c, &line, &len)) return false;
        f->line = at;
        const char *hash = memchr(line, '#', len);
        if (hash) len = (size_t)(hash - line);
        f->ntok = 0;
        const char *p = line, *end = line + len;
        while (p < end) {
            while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == ',')) p++;
            if (p >= end) break;
            const char *q = p;
            while (q < end && *q != ' ' && *q != '\t' && *q != '\r' && *q != ',') q++;
            if (f->ntok < 64) {
                f->tok[f->ntok] = p;
                f->len[f->ntok] = (size_t)(q - p);
                f->ntok++;
            }
            p = q;
        }
        if (f->ntok > 0) return true;
    }
}

static defo_status tg_int(tg_file *f, int k, const char *what, int64_t *out) {
    if (k >= f->ntok) return tg_error(f, DEFO_ERR_PARSE, "missing %s", what);
    if (!defo_parse_int64(f->tok[k], f->tok[k] + f->len[k], out)) {
        /* TetGen may write integral values as reals ("1.0"): accept those */
        double d;
        if (defo_parse_double(f->tok[k], f->tok[k] + f->len[k], &d) && d == floor(d) &&
            fabs(d) < 9e15) {
            *out = (int64_t)d;
            return DEFO_OK;
        }
        return tg_error(f, DEFO_ERR_PARSE, "%s: \"%.*s\" is not an integer", what,
                        (int)DEFO_MIN(f->len[k], 32), f->tok[k]);
    }
    return DEFO_OK;
}

static defo_status tg_double(tg_file *f, int k, const char *what, double *out) {
    if (k >= f->ntok) return tg_error(f, DEFO_ERR_PARSE, "missing %s", what);
    if (!defo_parse_double(f->tok[k], f->tok[k] + f->len[k], out))
        return tg_error(f, DEFO_ERR_PARSE, "%s: \"%.*s\" is not a finite number", what,
                        (int)DEFO_MIN(f->len[k], 32), f->tok[k]);
    return DEFO_OK;
}

/* defo_cursor_check_count, reported at the header's line. */
static defo_status tg_check_count(tg_file *f, int64_t count, size_t min_bytes, const char *what) {
    int64_t line = f->c.line;
    f->c.line = f->line;
    defo_status s = defo_cursor_check_count(&f->c, count, min_bytes, what);
    f->c.line = line;
    return s;
}

static defo_status tg_header(tg_file *f, const char *kind) {
    if (!tg_next(f)) {
        f->line = f->c.line;
        return tg_error(f, DEFO_ERR_PARSE, "empty %s file (no header line)", kind);
    }
    return DEFO_OK;
}

static defo_status tg_truncated(tg_file *f, int64_t got, int64_t want, const char *what) {
    f->line = f->c.line;
    return tg_error(f, DEFO_ERR_PARSE, "file ends after %lld of %lld %s (truncated?)",
                    (long long)got, (long long)want, what);
}

/* Anything after the announced records other than comments is an error:
 * the header count and the data disagree. */
static defo_status tg_expect_end(tg_file *f, int64_t count, const char *what) {
    if (tg_next(f))
        return tg_error(f, DEFO_ERR_PARSE, "more %s than the %lld the header announces", what,
                        (long long)count);
    return DEFO_OK;
}

static defo_status tg_index(tg_file *f, int k, int64_t base, int64_t n, const char *what,
                            defo_index *out) {
    int64_t v;
    defo_status s = tg_int(f, k, what, &v);
    if (s != DEFO_OK) return s;
    if (v < base || v - base >= n)
        return tg_error(f, DEFO_ERR_PARSE, "%s %lld is out of range [%lld, %lld]", what,
                        (long long)v, (long long)base, (long long)(base + n - 1));
    *out = (defo_index)(v - base);
    return DEFO_OK;
}

static defo_status tg_tag(tg_file *f, int k, const char *what, int32_t *out) {
    double d;
    defo_status s = tg_double(f, k, what, &d);
    if (s != DEFO_OK) return s;
    if (d != floor(d) || d < INT32_MIN || d > INT32_MAX)
        return tg_error(f, DEFO_ERR_UNSUPPORTED,
                        "%s %.17g is not an integer; defo stores it as a tag", what, d);
    *out = (int32_t)d;
    return DEFO_OK;
}

defo_status defo_read_tetgen(const char *node, size_t node_size, const char *node_name,
                             const char *ele, size_t ele_size, const char *ele_name,
                             const char *face, size_t face_size, const char *face_name,
                             defo_mesh **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_read_tetgen: out is NULL");
    *out = NULL;
    if ((!node && node_size) || (!ele && ele_size) || (!face && face_size))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_read_tetgen: data is NULL");
    tg_file f;
    memset(&f, 0, sizeof f);
    defo_mesh *m = NULL;
    defo_status s;
    int64_t n, dim, nattr, nmark, base = 0;

    /* ------------------------------------------------------------- .node */
    defo_cursor_init(&f.c, node_name ? node_name : "<node>", node ? node : "", node_size);
    if ((s = tg_header(&f, ".node")) != DEFO_OK) return s;
    if ((s = tg_int(&f, 0, "number of points", &n)) != DEFO_OK) return s;
    dim = 3, nattr = 0, nmark = 0;
    if (f.ntok > 1 && (s = tg_int(&f, 1, "dimension", &dim)) != DEFO_OK) return s;
    if (f.ntok > 2 && (s = tg_int(&f, 2, "number of attributes", &nattr)) != DEFO_OK) return s;
    if (f.ntok > 3 && (s = tg_int(&f, 3, "number of boundary markers", &nmark)) != DEFO_OK)
        return s;
    if (dim != 3)
        return tg_error(&f, DEFO_ERR_UNSUPPORTED, "dimension %lld is not supported (defo needs 3)",
                        (long long)dim);
    if (nattr < 0 || nattr > 1000 || (nmark != 0 && nmark != 1))
        return tg_error(&f, DEFO_ERR_PARSE, "bad header: %lld attributes, %lld markers",
                        (long long)nattr, (long long)nmark);
    if ((s = tg_check_count(&f, n, 8, "points")) != DEFO_OK) return s;

    /* the element order is known only from the .ele header: read it first */
    tg_file fe;
    memset(&fe, 0, sizeof fe);
    int64_t ne = 0, npe = 4, eattr = 0;
    if (ele) {
        defo_cursor_init(&fe.c, ele_name ? ele_name : "<ele>", ele, ele_size);
        if ((s = tg_header(&fe, ".ele")) != DEFO_OK) return s;
        if ((s = tg_int(&fe, 0, "number of tetrahedra", &ne)) != DEFO_OK) return s;
        if (fe.ntok > 1 && (s = tg_int(&fe, 1, "nodes per tetrahedron", &npe)) != DEFO_OK) return s;
        if (fe.ntok > 2 && (s = tg_int(&fe, 2, "number of attributes", &eattr)) != DEFO_OK)
            return s;
        if (npe != 4 && npe != 10)
            return tg_error(&fe, DEFO_ERR_UNSUPPORTED,
                            "%lld nodes per tetrahedron is not supported (4 or 10)",
                            (long long)npe);
        if (eattr < 0 || eattr > 1000)
            return tg_error(&fe, DEFO_ERR_PARSE, "bad number of attributes %lld", (long long)eattr);
        if ((s = tg_check_count(&fe, ne, 2 * (size_t)npe, "tetrahedra")) != DEFO_OK) return s;
    }

    if ((s = defo_mesh_create(ele ? (npe == 10 ? 2 : 1) : 0, &m)) != DEFO_OK) return s;
    if ((s = defo_mesh_reserve(m, (defo_index)n, (defo_index)ne, 0)) != DEFO_OK) goto fail;
    for (int64_t i = 0; i < n; i++) {
        if (!tg_next(&f)) {
            s = tg_truncated(&f, i, n, "points");
            goto fail;
        }
        int64_t id;
        double x[3];
        if ((s = tg_int(&f, 0, "point number", &id)) != DEFO_OK) goto fail;
        if (i == 0) {
            if (id != 0 && id != 1) {
                s = tg_error(&f, DEFO_ERR_PARSE,
                             "the first point is numbered %lld (must be 0 or 1)", (long long)id);
                goto fail;
            }
            base = id;
        } else if (id != base + i) {
            s = tg_error(&f, DEFO_ERR_PARSE,
                         "point number %lld, expected %lld (numbers must be "
                         "consecutive)",
                         (long long)id, (long long)(base + i));
            goto fail;
        }
        for (int k = 0; k < 3; k++)
            if ((s = tg_double(&f, 1 + k, "coordinate", &x[k])) != DEFO_OK) goto fail;
        if (f.ntok < 4 + nattr + nmark) {
            s = tg_error(&f, DEFO_ERR_PARSE, "point has %d values, the header announces %lld",
                         f.ntok - 1, (long long)(3 + nattr + nmark));
            goto fail;
        }
        if ((s = defo_mesh_add_node(m, x[0], x[1], x[2], NULL)) != DEFO_OK) goto fail;
    }
    if ((s = tg_expect_end(&f, n, "points")) != DEFO_OK) goto fail;

    /* -------------------------------------------------------------- .ele */
    for (int64_t e = 0; ele && e < ne; e++) {
        if (!tg_next(&fe)) {
            s = tg_truncated(&fe, e, ne, "tetrahedra");
            goto fail;
        }
        defo_index tg[10], v[10];
        int32_t tag = 0;
        int64_t id;
        if ((s = tg_int(&fe, 0, "tetrahedron number", &id)) != DEFO_OK) goto fail;
        for (int k = 0; k < npe; k++)
            if ((s = tg_index(&fe, 1 + k, base, n, "node index", &tg[k])) != DEFO_OK) goto fail;
        if (eattr > 0 && (s = tg_tag(&fe, 1 + (int)npe, "region attribute", &tag)) != DEFO_OK)
            goto fail;
        for (int k = 0; k < npe; k++) v[k] = tg[npe == 10 ? tg_from_defo[k] : k];
        if ((s = defo_mesh_add_elem(m, v, tag)) != DEFO_OK) goto fail;
    }
    if (ele && (s = tg_expect_end(&fe, ne, "tetrahedra")) != DEFO_OK) goto fail;

    /* ------------------------------------------------------------- .face */
    if (face) {
        tg_file ff;
        memset(&ff, 0, sizeof ff);
        defo_cursor_init(&ff.c, face_name ? face_name : "<face>", face, face_size);
        int64_t nf, fmark = 0;
        if ((s = tg_header(&ff, ".face")) != DEFO_OK) goto fail;
        if ((s = tg_int(&ff, 0, "number of faces", &nf)) != DEFO_OK) goto fail;
        if (ff.ntok > 1 && (s = tg_int(&ff, 1, "number of boundary markers", &fmark)) != DEFO_OK)
            goto fail;
        if (fmark != 0 && fmark != 1) {
            s = tg_error(&ff, DEFO_ERR_PARSE, "bad number of boundary markers %lld",
                         (long long)fmark);
            goto fail;
        }
        if ((s = tg_check_count(&ff, nf, 8, "faces")) != DEFO_OK) goto fail;
        if ((s = defo_mesh_reserve(m, m->num_nodes, m->num_elems, (defo_index)nf)) != DEFO_OK)
            goto fail;
        /* 6-node faces go with 10-node tetrahedra; without a .ele the token
         * count decides (extra tokens such as -nn neighbours are ignored) */
        int per = 0;
        for (int64_t t = 0; t < nf; t++) {
            if (!tg_next(&ff)) {
                s = tg_truncated(&ff, t, nf, "faces");
                goto fail;
            }
            if (per == 0) per = ele ? (npe == 10 ? 6 : 3) : (ff.ntok == 7 + fmark ? 6 : 3);
            defo_index v[6];
            int32_t tag = 0;
            int64_t id;
            if ((s = tg_int(&ff, 0, "face number", &id)) != DEFO_OK) goto fail;
            for (int k = 0; k < per; k++)
                if ((s = tg_index(&ff, 1 + k, base, n, "node index", &v[k])) != DEFO_OK) goto fail;
            if (fmark && (s = tg_tag(&ff, 1 + per, "boundary marker", &tag)) != DEFO_OK) goto fail;
            if ((s = defo_mesh_add_tri(m, v, per, tag)) != DEFO_OK) goto fail;
        }
        if ((s = tg_expect_end(&ff, nf, "faces")) != DEFO_OK) goto fail;
    }
    *out = m;
    return DEFO_OK;
fail:
    defo_mesh_destroy(m);
    return s;
}

/* --------------------------------------------------------------- writer */
static char *tg_sibling(const char *path, const char *ext) {
    size_t len = strlen(path);
    static const char *const exts[3] = {".node", ".ele", ".face"};
    for (int i = 0; i < 3; i++) {
        size_t el = strlen(exts[i]);
        if (len >= el && strcmp(path + len - el, exts[i]) == 0) {
            len -= el;
            break;
        }
    }
    char *p = defo_malloc(len + strlen(ext) + 1);
    if (!p) return NULL;
    memcpy(p, path, len);
    strcpy(p + len, ext);
    return p;
}

static void tg_write_nodes(defo_out *o, const defo_mesh *m, const double *x) {
    defo_out_printf(o, "# written by defo\n%d 3 0 0\n", (int)m->num_nodes);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        defo_out_printf(o, "%d ", (int)i + 1);
        defo_out_double(o, x[3 * i]);
        defo_out_printf(o, " ");
        defo_out_double(o, x[3 * i + 1]);
        defo_out_printf(o, " ");
        defo_out_double(o, x[3 * i + 2]);
        defo_out_printf(o, "\n");
    }
}

static void tg_write_elems(defo_out *o, const defo_mesh *m) {
    int npe = m->nodes_per_elem;
    defo_out_printf(o, "# written by defo\n%d %d %d\n", (int)m->num_elems, npe,
                    m->elem_tag ? 1 : 0);
    for (defo_index e = 0; e < m->num_elems; e++) {
        const defo_index *v = &m->elems[(size_t)e * (size_t)npe];
        defo_index tg[10];
        for (int k = 0; k < npe; k++) tg[npe == 10 ? tg_from_defo[k] : k] = v[k];
        defo_out_printf(o, "%d", (int)e + 1);
        for (int k = 0; k < npe; k++) defo_out_printf(o, " %d", (int)tg[k] + 1);
        if (m->elem_tag) defo_out_printf(o, " %d", (int)m->elem_tag[e]);
        defo_out_printf(o, "\n");
    }
}

static void tg_write_faces(defo_out *o, const defo_mesh *m) {
    int per = m->nodes_per_tri;
    defo_out_printf(o, "# written by defo\n%d %d\n", (int)m->num_tris, m->tri_tag ? 1 : 0);
    for (defo_index t = 0; t < m->num_tris; t++) {
        defo_out_printf(o, "%d", (int)t + 1);
        for (int k = 0; k < per; k++)
            defo_out_printf(o, " %d", (int)m->tris[(size_t)t * (size_t)per + (size_t)k] + 1);
        if (m->tri_tag) defo_out_printf(o, " %d", (int)m->tri_tag[t]);
        defo_out_printf(o, "\n");
    }
}

defo_status defo_write_tetgen(const char *path, const defo_mesh *mesh,
                              const defo_write_options *o) {
    if (!path || !mesh)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_write_tetgen: NULL argument");
    if (mesh->num_elems > 0 && mesh->nodes_per_elem != 4 && mesh->nodes_per_elem != 10)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh has %d nodes per element", path,
                          mesh->nodes_per_elem);
    if (mesh->num_tris > 0 && mesh->nodes_per_tri != 3 && mesh->nodes_per_tri != 6)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh has %d nodes per triangle", path,
                          mesh->nodes_per_tri);
    if (mesh->num_nodes >= INT32_MAX)
        return defo_error(DEFO_ERR_UNSUPPORTED, "%s: too many nodes", path);
    const double *x = o && o->positions ? o->positions : mesh->x;
    bool want_ele = mesh->order > 0 || mesh->num_elems > 0, want_face = mesh->num_tris > 0;
    char *names[3] = {tg_sibling(path, ".node"), tg_sibling(path, ".ele"),
                      tg_sibling(path, ".face")};
    defo_out outs[3];
    memset(outs, 0, sizeof outs);
    bool open[3] = {false, false, false};
    defo_status s = DEFO_OK;
    if (!names[0] || !names[1] || !names[2]) s = defo_error_oom("file names", strlen(path) + 8);
    bool want[3] = {true, want_ele, want_face};
    for (int i = 0; i < 3 && s == DEFO_OK; i++) {
        if (!want[i]) continue;
        s = defo_out_open(&outs[i], names[i]);
        open[i] = s == DEFO_OK;
    }
    if (s == DEFO_OK) {
        tg_write_nodes(&outs[0], mesh, x);
        if (want_ele) tg_write_elems(&outs[1], mesh);
        if (want_face) tg_write_faces(&outs[2], mesh);
    }
    /* commit all or nothing (as far as renames allow) */
    for (int i = 0; i < 3; i++) {
        if (!open[i]) continue;
        if (s == DEFO_OK)
            s = defo_out_commit(&outs[i]);
        else
            defo_out_abort(&outs[i]);
    }
    /* a stale .ele/.face beside the new .node would be read back with it */
    for (int i = 1; i < 3 && s == DEFO_OK; i++)
        if (!want[i] && names[i]) remove(names[i]);
    for (int i = 0; i < 3; i++) defo_free(names[i]);
    return s;
}
