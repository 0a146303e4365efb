/*
 * geometry/mocap_bvh.c — Biovision hierarchy (.bvh) motion capture read
 * into a keyframed skeleton (defo/skeleton.h), for skeleton-driven flesh
 * (TSIF05 §11).
 *
 * Grammar (whitespace-separated tokens, names to the end of their line):
 *   HIERARCHY
 *   ROOT name { OFFSET x y z  CHANNELS n c1 .. cn  (JOINT name { .. } | End Site { OFFSET x y z })* }
 *   (more ROOTs)
 *   MOTION
 *   Frames: N
 *   Frame Time: dt
 *   N × (total channels) numbers, frame by frame in hierarchy order.
 * A joint's rotation channels (degrees) compose in the listed order,
 * q = q_c1 q_c2 q_c3 (R = R_c1 R_c2 R_c3: the last listed acts first on a
 * point); its position channels add to its OFFSET.  Frame k is the key at
 * time k·dt.  End Sites are not bones (they carry no motion).
 *
 * Robustness: every count is checked against the bytes left before
 * anything is allocated for it; every number must be finite; each error is
 * "file:line: reason" (DEFO_ERR_PARSE) — unknown keywords and channels,
 * repeated channels or names, unbalanced braces, a missing MOTION section,
 * a frame list that ends early or runs on.
 */
#include "defo/skeleton.h"

#include "io/ioutil.h"

#include <math.h>
#include <string.h>

#define BVH_MAX_JOINTS 10000
#define BVH_MAX_DEPTH  250

typedef struct bvh_joint {
    char name[DEFO_NAME_MAX];
    int parent;
    double offset[3];
    int nch;
    int ch[6]; /* 0..2 X/Y/Z position, 3..5 X/Y/Z rotation */
} bvh_joint;

typedef struct bvh {
    defo_cursor c;
    bvh_joint *j;
    int n, cap;
    int channels; /* total */
} bvh;

static const char *const channel_names[6] = {"Xposition", "Yposition", "Zposition",
                                             "Xrotation", "Yrotation", "Zrotation"};

/* The rest of the line as a name (trimmed), for ROOT and JOINT. */
static defo_status read_name(bvh *b, const char *kw, char *name) {
    defo_cursor_skip_blank(&b->c);
    const int64_t line = b->c.line;
    const char *s;
    size_t len;
    if (!defo_cursor_next_line(&b->c, &s, &len)) len = 0;
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t')) len--;
    if (!len) {
        defo_cursor at = b->c;
        at.line = line;
        return defo_cursor_error(&at, DEFO_ERR_PARSE, "%s without a name", kw);
    }
    if (len >= DEFO_NAME_MAX) {
        defo_cursor at = b->c;
        at.line = line;
        return defo_cursor_error(&at, DEFO_ERR_PARSE, "%s name '%.20s...' is longer than %d bytes",
                                 kw, s, DEFO_NAME_MAX - 1);
    }
    memcpy(name, s, len);
    name[len] = '\0';
    for (int k = 0; k < b->n - 1; k++) /* the last is the one being named */
        if (!strcmp(b->j[k].name, name)) {
            defo_cursor at = b->c;
            at.line = line;
            return defo_cursor_error(&at, DEFO_ERR_PARSE, "joint '%s' is named twice", name);
        }
    return DEFO_OK;
}

static defo_status expect(bvh *b, const char *want, const char *context) {
    const char *t;
    size_t l;
    if (!defo_cursor_token(&b->c, &t, &l))
        return defo_cursor_error(&b->c, DEFO_ERR_PARSE, "truncated: expected '%s' %s", want,
                                 context);
    if (!defo_token_is(t, l, want))
        return defo_cursor_error(&b->c, DEFO_ERR_PARSE, "expected '%s' %s, found '%.*s'", want,
                                 context, (int)(l < 40 ? l : 40), t);
    return DEFO_OK;
}

static defo_status read_offset(bvh *b, double o[3]) {
    for (int k = 0; k < 3; k++) {
        defo_status s = defo_cursor_double(&b->c, "OFFSET", &o[k]);
        if (s) return s;
    }
    return DEFO_OK;
}

/* One ROOT/JOINT block after its name, the '{' next. */
static defo_status read_joint(bvh *b, int parent, int depth) {
    if (depth > BVH_MAX_DEPTH)
        return defo_cursor_error(&b->c, DEFO_ERR_PARSE, "joints nested deeper than %d",
                                 BVH_MAX_DEPTH);
    const int me = b->n - 1;
    b->j[me].parent = parent;
    defo_status s = expect(b, "{", "after the joint name");
    if (s) return s;
    int have_offset = 0, have_channels = 0;
    for (;;) {
        const char *t;
        size_t l;
        if (!defo_cursor_token(&b->c, &t, &l))
            return defo_cursor_error(&b->c, DEFO_ERR_PARSE,
                                     "truncated: joint '%s' is not closed by '}'", b->j[me].name);
        if (defo_token_is(t, l, "}")) break;
        if (defo_token_is(t, l, "OFFSET")) {
            if (have_offset++)
                return defo_cursor_error(&b->c, DEFO_ERR_PARSE, "joint '%s': a second OFFSET",
                                         b->j[me].name);
            s = read_offset(b, b->j[me].offset);
            if (s) return s;
        } else if (defo_token_is(t, l, "CHANNELS")) {
            if (have_channels++)
                return defo_cursor_error(&b->c, DEFO_ERR_PARSE, "joint '%s': a second CHANNELS",
                                         b->j[me].name);
            int64_t n;
            s = defo_cursor_int64(&b->c, "CHANNELS count", &n);
            if (s) return s;
            if (n < 0 || n > 6)
                return defo_cursor_error(&b->c, DEFO_ERR_PARSE,
                                         "joint '%s': %lld channels (0 to 6)", b->j[me].name,
                                         (long long)n);
            b->j[me].nch = (int)n;
            unsigned seen = 0;
            for (int k = 0; k < (int)n; k++) {
                if (!defo_cursor_token(&b->c, &t, &l))
                    return defo_cursor_error(&b->c, DEFO_ERR_PARSE,
                                             "truncated: joint '%s' lists %d of %lld channels",
                                             b->j[me].name, k, (long long)n);
                int which = -1;
                for (int c = 0; c < 6; c++)
                    if (defo_token_is(t, l, channel_names[c])) which = c;
                if (which < 0)
                    return defo_cursor_error(&b->c, DEFO_ERR_PARSE,
                                             "joint '%s': unknown channel '%.*s' (Xposition, "
                                             "Yposition, Zposition, Xrotation, Yrotation, "
                                             "Zrotation)",
                                             b->j[me].name, (int)(l < 40 ? l : 40), t);
                if (seen & (1u << which))
                    return defo_cursor_error(&b->c, DEFO_ERR_PARSE,
                                             "joint '%s': channel %s listed twice", b->j[me].name,
                                             channel_names[which]);
                seen |= 1u << which;
                b->j[me].ch[k] = which;
            }
            b->channels += (int)n;
        } else if (defo_token_is(t, l, "JOINT")) {
            if (b->n == BVH_MAX_JOINTS)
                return defo_cursor_error(&b->c, DEFO_ERR_PARSE, "more than %d joints",
                                         BVH_MAX_JOINTS);
            if (b->n == b->cap) {
                const int cap = b->cap ? 2 * b->cap : 32;
                bvh_joint *nj = defo_realloc(b->j, (size_t)cap * sizeof *nj);
                if (!nj) return defo_error_oom("BVH joints", (size_t)cap * sizeof *nj);
                b->j = nj, b->cap = cap;
            }
            memset(&b->j[b->n], 0, sizeof b->j[b->n]);
            b->n++;
            s = read_name(b, "JOINT", b->j[b->n - 1].name);
            if (!s) s = read_joint(b, me, depth + 1);
            if (s) return s;
        } else if (defo_token_is(t, l, "End")) {
            s = expect(b, "Site", "after 'End'");
            if (!s) s = expect(b, "{", "after 'End Site'");
            double o[3];
            if (!s) s = expect(b, "OFFSET", "in 'End Site'");
            if (!s) s = read_offset(b, o);
            if (!s) s = expect(b, "}", "closing 'End Site'");
            if (s) return s;
        } else {
            return defo_cursor_error(&b->c, DEFO_ERR_PARSE,
                                     "joint '%s': unknown keyword '%.*s' (OFFSET, CHANNELS, "
                                     "JOINT, End Site or '}')",
                                     b->j[me].name, (int)(l < 40 ? l : 40), t);
        }
    }
    if (!have_offset)
        return defo_cursor_error(&b->c, DEFO_ERR_PARSE, "joint '%s' has no OFFSET", b->j[me].name);
    return DEFO_OK;
}

/* q = q_a q_b (Hamilton product), (w, x, y, z). */
static void qmul(const double *a, const double *b, double *o) {
    const double w = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    const double x = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    const double y = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    const double z = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    o[0] = w, o[1] = x, o[2] = y, o[3] = z;
}

defo_status defo_skeleton_parse_bvh(const char *text, size_t size, const char *name,
                                    const defo_skeleton_place *place, defo_skeleton **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "BVH: out is NULL");
    *out = NULL;
    if (!text) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "BVH: no text");
    bvh b;
    memset(&b, 0, sizeof b);
    defo_cursor_init(&b.c, name ? name : "bvh", text, size);
    double *values = NULL, *times = NULL, *keys = NULL;
    defo_joint_def *defs = NULL;
    defo_status s = expect(&b, "HIERARCHY", "at the start of a BVH file");
    const char *t;
    size_t l;
    int roots = 0;
    while (!s) {
        if (!defo_cursor_token(&b.c, &t, &l)) {
            s = defo_cursor_error(&b.c, DEFO_ERR_PARSE, "truncated: no MOTION section");
            break;
        }
        if (defo_token_is(t, l, "MOTION")) break;
        if (!defo_token_is(t, l, "ROOT")) {
            s = defo_cursor_error(&b.c, DEFO_ERR_PARSE, "expected ROOT or MOTION, found '%.*s'",
                                  (int)(l < 40 ? l : 40), t);
            break;
        }
        if (b.n == b.cap) {
            const int cap = b.cap ? 2 * b.cap : 32;
            bvh_joint *nj = defo_realloc(b.j, (size_t)cap * sizeof *nj);
            if (!nj) {
                s = defo_error_oom("BVH joints", (size_t)cap * sizeof *nj);
                break;
            }
            b.j = nj, b.cap = cap;
        }
        memset(&b.j[b.n], 0, sizeof b.j[b.n]);
        b.n++;
        roots++;
        s = read_name(&b, "ROOT", b.j[b.n - 1].name);
        if (!s) s = read_joint(&b, -1, 0);
    }
    if (!s && !roots) s = defo_cursor_error(&b.c, DEFO_ERR_PARSE, "no ROOT joint");
    int64_t frames = 0;
    double dt = 0;
    if (!s) s = expect(&b, "Frames:", "after MOTION");
    if (!s) s = defo_cursor_int64(&b.c, "Frames", &frames);
    if (!s && frames < 1)
        s = defo_cursor_error(&b.c, DEFO_ERR_PARSE, "Frames: %lld is not >= 1", (long long)frames);
    const int64_t frames_line = b.c.line;
    if (!s) s = expect(&b, "Frame", "after the frame count");
    if (!s) s = expect(&b, "Time:", "after 'Frame'");
    if (!s) s = defo_cursor_double(&b.c, "Frame Time", &dt);
    if (!s && !(dt > 0))
        s = defo_cursor_error(&b.c, DEFO_ERR_PARSE, "Frame Time: %g is not > 0", dt);
    const int C = b.channels;
    if (!s && C > 0 &&
        ((double)frames * C > (double)(b.c.end - b.c.p) / 2 + 1 || frames > INT32_MAX / 8)) {
        defo_cursor at = b.c;
        at.line = frames_line;
        s = defo_cursor_error(&at, DEFO_ERR_PARSE,
                              "truncated: Frames: %lld needs %lld values of %d channels, the "
                              "%lld bytes left cannot hold them",
                              (long long)frames, (long long)frames * C, C,
                              (long long)(b.c.end - b.c.p));
    }
    const size_t nf = (size_t)frames;
    if (!s) {
        values = defo_malloc(nf * (size_t)C * sizeof(double) + 1);
        times = defo_malloc(nf * sizeof(double) + 1);
        if (!values || !times) s = defo_error_oom("BVH frames", nf * (size_t)C * sizeof(double));
    }
    int64_t last_line = b.c.line; /* of the last value read */
    for (size_t f = 0; !s && f < nf; f++) {
        times[f] = (double)f * dt;
        for (int k = 0; k < C; k++) {
            if (!defo_cursor_token(&b.c, &t, &l)) {
                b.c.line = last_line;
                s = defo_cursor_error(&b.c, DEFO_ERR_PARSE,
                                      "truncated: frame %zu of %lld ends after %d of %d values", f,
                                      (long long)frames, k, C);
                break;
            }
            if (!defo_parse_double(t, t + l, &values[f * (size_t)C + (size_t)k])) {
                s = defo_cursor_error(&b.c, DEFO_ERR_PARSE,
                                      "frame %zu, value %d: '%.*s' is not a finite number", f, k,
                                      (int)(l < 40 ? l : 40), t);
                break;
            }
            last_line = b.c.line;
        }
    }
    if (!s && defo_cursor_token(&b.c, &t, &l))
        s = defo_cursor_error(&b.c, DEFO_ERR_PARSE,
                              "more values after the %lld frames of %d channels ('%.*s')",
                              (long long)frames, C, (int)(l < 40 ? l : 40), t);
    /* joints with their keys: a rotation per frame (identity without
     * rotation channels) and a translation where position channels exist */
    if (!s) {
        defs = defo_calloc((size_t)b.n, sizeof *defs);
        keys = defo_malloc((size_t)b.n * nf * 7 * sizeof(double) + 1);
        if (!defs || !keys) s = defo_error_oom("BVH keys", (size_t)b.n * nf * 7 * sizeof(double));
    }
    int col = 0;
    for (int i = 0; !s && i < b.n; i++) {
        const bvh_joint *J = &b.j[i];
        defo_joint_def *d = &defs[i];
        d->name = J->name;
        d->parent = J->parent;
        memcpy(d->offset, J->offset, sizeof d->offset);
        if (!J->nch) continue;
        int has_pos = 0;
        for (int k = 0; k < J->nch; k++) has_pos |= J->ch[k] < 3;
        double *q = keys + (size_t)i * nf * 7, *p = q + 4 * nf;
        for (size_t f = 0; f < nf; f++) {
            const double *v = values + f * (size_t)C + (size_t)col;
            double r[4] = {1, 0, 0, 0};
            p[3 * f] = p[3 * f + 1] = p[3 * f + 2] = 0;
            for (int k = 0; k < J->nch; k++) {
                const int c = J->ch[k];
                if (c < 3) {
                    p[3 * f + (size_t)c] = v[k];
                    continue;
                }
                const double h = 0.5 * v[k] * (3.14159265358979323846 / 180.0);
                double e[4] = {cos(h), 0, 0, 0};
                e[c - 2] = sin(h);
                qmul(r, e, r);
            }
            memcpy(q + 4 * f, r, sizeof r);
        }
        col += J->nch;
        d->num_keys = (int)nf;
        d->times = times;
        d->rotations = q;
        d->translations = has_pos ? p : NULL;
    }
    if (!s) {
        s = defo_skeleton_create(defs, b.n, place, out);
        if (s) defo_error_prefix("%s", b.c.name);
    }
    defo_free(values);
    defo_free(times);
    defo_free(keys);
    defo_free(defs);
    defo_free(b.j);
    return s;
}

defo_status defo_skeleton_read_bvh(const char *path, const defo_skeleton_place *place,
                                   defo_skeleton **out) {
    if (out) *out = NULL;
    if (!path) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "BVH: path is NULL");
    char *data = NULL;
    size_t size = 0;
    defo_status s = defo_read_file(path, &data, &size);
    if (s) return s;
    s = defo_skeleton_parse_bvh(data, size, path, place, out);
    defo_free(data);
    return s;
}
