/*
 * scene/scene.c — JSON scene files: parse with jansson, validate every key,
 * fill the internal scene (scene_internal.h).  docs/scene-format.md is the
 * user's reference; keep the two in step.
 *
 * Validation collects every error instead of stopping at the first: a user
 * fixing a scene wants the whole list at once.  Each message is one line
 * "NAME: json.path: reason".  Unknown keys are errors (a misspelt key
 * silently ignored is a simulation run with the wrong setting) with the
 * closest allowed key by edit distance as a suggestion.  Referenced files
 * must exist; they are read only when the simulation is built.
 *
 * Invariant: a scene that parses without errors has every number in its
 * documented range and every file present, so defo_simulation_create can only
 * fail on what needs the file contents (malformed meshes, empty node sets).
 *
 * jansson allocates with malloc (its hook is process-global, so defo leaves it
 * alone); everything defo keeps goes through defo_malloc.
 */
#define _POSIX_C_SOURCE 200809L

#include "scene/scene_internal.h"
#include "defo/io.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- errors */
typedef struct vctx {
    const char *name;
    defo_scene_errors errs;
    int oom;
} vctx;

static void verr(vctx *c, const char *path, const char *fmt, ...) DEFO_PRINTF(3, 4);
static void verr(vctx *c, const char *path, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = strlen(c->name) + strlen(path) + strlen(msg) + 8;
    char *line = defo_malloc(n);
    char **lines = defo_realloc(c->errs.lines, (size_t)(c->errs.count + 1) * sizeof *lines);
    if (!line || !lines) {
        defo_free(line);
        if (lines) c->errs.lines = lines;
        c->oom = 1;
        return;
    }
    c->errs.lines = lines;
    if (path[0])
        snprintf(line, n, "%s: %s: %s", c->name, path, msg);
    else
        snprintf(line, n, "%s: %s", c->name, msg);
    c->errs.lines[c->errs.count++] = line;
}

void defo_scene_errors_free(defo_scene_errors *e) {
    if (!e) return;
    for (int i = 0; i < e->count; i++) defo_free(e->lines[i]);
    defo_free(e->lines);
    e->lines = NULL;
    e->count = 0;
}

/* ------------------------------------------------------------- paths */
typedef struct jpath {
    char s[256];
} jpath;

/* Appends by hand: snprintf into a fixed jpath would warn (truncation) at
 * every call site, and a path longer than 255 bytes is simply cut. */
static void jappend(jpath *r, const char *s) {
    size_t l = strlen(r->s), n = strlen(s);
    if (l + n >= sizeof r->s) n = sizeof r->s - 1 - l;
    memcpy(r->s + l, s, n);
    r->s[l + n] = 0;
}

static jpath pkey(const jpath *p, const char *key) {
    jpath r = *p;
    if (r.s[0]) jappend(&r, ".");
    jappend(&r, key);
    return r;
}

static jpath pidx(const jpath *p, size_t i) {
    jpath r = *p;
    char num[32];
    snprintf(num, sizeof num, "[%zu]", i);
    jappend(&r, num);
    return r;
}

/* ------------------------------------------------------ key checking */
static size_t edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 64;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            size_t best = diag + cost;
            if (row[j] + 1 < best) best = row[j] + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Nearest of the allowed words (NULL-terminated) within a distance that
 * still reads as a typo, else NULL. */
static const char *nearest_word(const char *word, const char *const *allowed) {
    const char *best = NULL;
    size_t bd = (size_t)-1;
    for (int i = 0; allowed[i]; i++) {
        size_t d = edit_distance(word, allowed[i]);
        if (d < bd) {
            bd = d;
            best = allowed[i];
        }
    }
    size_t len = strlen(word), limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    return bd <= limit ? best : NULL;
}

static void list_words(char *out, size_t n, const char *const *allowed) {
    out[0] = 0;
    for (int i = 0; allowed[i]; i++) {
        size_t l = strlen(out);
        snprintf(out + l, n - l, "%s%s", i ? ", " : "", allowed[i]);
    }
}

static void check_keys(vctx *c, json_t *obj, const jpath *p, const char *const *allowed) {
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++) ok = !strcmp(key, allowed[i]);
        if (ok) continue;
        jpath kp = pkey(p, key);
        const char *near = nearest_word(key, allowed);
        if (near) {
            verr(c, kp.s, "unknown key (did you mean '%s'?)", near);
        } else {
            char words[512];
            list_words(words, sizeof words, allowed);
            verr(c, kp.s, "unknown key (allowed: %s)", words);
        }
    }
}

static const char *type_name(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

/* ------------------------------------------------------------- getters */
/* Range of a number: lo/hi (±INFINITY for none) with inclusive flags. */
typedef struct range {
    double lo, hi;
    int lo_inc, hi_inc;
} range;
static const range ANY = {-INFINITY, INFINITY, 0, 0};
static const range POS = {0, INFINITY, 0, 0};
static const range NONNEG = {0, INFINITY, 1, 0};

static int in_range(double v, range r) {
    if (!isfinite(v)) return 0;
    if (r.lo_inc ? v < r.lo : v <= r.lo) return 0;
    if (r.hi_inc ? v > r.hi : v >= r.hi) return 0;
    return 1;
}

static void range_error(vctx *c, const jpath *p, double v, range r) {
    if (isfinite(r.lo) && isfinite(r.hi))
        verr(c, p->s, "%g is not in %c%g, %g%c", v, r.lo_inc ? '[' : '(', r.lo, r.hi,
             r.hi_inc ? ']' : ')');
    else if (isfinite(r.lo))
        verr(c, p->s, "%g is not %s %g", v, r.lo_inc ? ">=" : ">", r.lo);
    else
        verr(c, p->s, "%g is not %s %g", v, r.hi_inc ? "<=" : "<", r.hi);
}

/* Optional number: *out keeps its default when the key is absent.  Returns
 * 1 when present and valid. */
static int get_num(vctx *c, json_t *obj, const jpath *p, const char *key, range r, double *out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    jpath kp = pkey(p, key);
    if (!json_is_number(v)) {
        verr(c, kp.s, "expected a number, got %s", type_name(v));
        return 0;
    }
    double d = json_number_value(v);
    if (!in_range(d, r)) {
        range_error(c, &kp, d, r);
        return 0;
    }
    *out = d;
    return 1;
}

static int get_int(vctx *c, json_t *obj, const jpath *p, const char *key, long lo, long hi,
                   int *out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    jpath kp = pkey(p, key);
    if (!json_is_integer(v)) {
        verr(c, kp.s, "expected an integer, got %s", json_is_real(v) ? "a fraction" : type_name(v));
        return 0;
    }
    json_int_t d = json_integer_value(v);
    if (d < lo || d > hi) {
        verr(c, kp.s, "%lld is not in [%ld, %ld]", (long long)d, lo, hi);
        return 0;
    }
    *out = (int)d;
    return 1;
}

static int get_bool(vctx *c, json_t *obj, const jpath *p, const char *key, int *out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_boolean(v)) {
        jpath kp = pkey(p, key);
        verr(c, kp.s, "expected true or false, got %s", type_name(v));
        return 0;
    }
    *out = json_is_true(v);
    return 1;
}

static const char *get_str(vctx *c, json_t *obj, const jpath *p, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v) return NULL;
    if (!json_is_string(v)) {
        jpath kp = pkey(p, key);
        verr(c, kp.s, "expected a string, got %s", type_name(v));
        return NULL;
    }
    return json_string_value(v);
}

static int vec3_of(vctx *c, json_t *v, const jpath *kp, range r, double out[3]) {
    if (!json_is_array(v) || json_array_size(v) != 3) {
        verr(c, kp->s, "expected an array of 3 numbers, got %s", type_name(v));
        return 0;
    }
    double t[3];
    int ok = 1;
    for (size_t i = 0; i < 3; i++) {
        json_t *e = json_array_get(v, i);
        jpath ep = pidx(kp, i);
        if (!json_is_number(e)) {
            verr(c, ep.s, "expected a number, got %s", type_name(e));
            ok = 0;
        } else if (!in_range(json_number_value(e), r)) {
            range_error(c, &ep, json_number_value(e), r);
            ok = 0;
        } else {
            t[i] = json_number_value(e);
        }
    }
    if (ok) memcpy(out, t, sizeof t);
    return ok;
}

static int get_vec3(vctx *c, json_t *obj, const jpath *p, const char *key, range r, double out[3]) {
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    jpath kp = pkey(p, key);
    return vec3_of(c, v, &kp, r, out);
}

/* Unit-able direction: finite and not zero. */
static int get_dir(vctx *c, json_t *obj, const jpath *p, const char *key, double out[3]) {
    double d[3];
    if (!get_vec3(c, obj, p, key, ANY, d)) return 0;
    double n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(n > 0)) {
        jpath kp = pkey(p, key);
        verr(c, kp.s, "the direction is zero");
        return 0;
    }
    for (int k = 0; k < 3; k++) out[k] = d[k] / n;
    return 1;
}

static json_t *get_obj(vctx *c, json_t *obj, const jpath *p, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v) return NULL;
    if (!json_is_object(v)) {
        jpath kp = pkey(p, key);
        verr(c, kp.s, "expected an object, got %s", type_name(v));
        return NULL;
    }
    return v;
}

static json_t *get_arr(vctx *c, json_t *obj, const jpath *p, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v) return NULL;
    if (!json_is_array(v)) {
        jpath kp = pkey(p, key);
        verr(c, kp.s, "expected an array, got %s", type_name(v));
        return NULL;
    }
    return v;
}

/* One of the words (NULL-terminated); returns its index or -1. */
static int word_of(vctx *c, const char *s, const jpath *kp, const char *const *words) {
    for (int i = 0; words[i]; i++)
        if (!strcmp(s, words[i])) return i;
    const char *near = nearest_word(s, words);
    char list[512];
    list_words(list, sizeof list, words);
    if (near)
        verr(c, kp->s, "unknown value '%s' (did you mean '%s'?)", s, near);
    else
        verr(c, kp->s, "unknown value '%s' (one of: %s)", s, list);
    return -1;
}

/* Rotation matrix (row-major) from {"axis": [..], "angle_deg": a}. */
static void axis_angle(const double axis[3], double angle, double R[9]) {
    double x = axis[0], y = axis[1], z = axis[2];
    double cs = cos(angle), sn = sin(angle), t = 1 - cs;
    R[0] = t * x * x + cs;
    R[1] = t * x * y - sn * z;
    R[2] = t * x * z + sn * y;
    R[3] = t * x * y + sn * z;
    R[4] = t * y * y + cs;
    R[5] = t * y * z - sn * x;
    R[6] = t * x * z - sn * y;
    R[7] = t * y * z + sn * x;
    R[8] = t * z * z + cs;
}

static void identity(double R[9]) {
    memset(R, 0, 9 * sizeof(double));
    R[0] = R[4] = R[8] = 1;
}

static void parse_rotate(vctx *c, json_t *obj, const jpath *p, const char *key, double R[9]) {
    identity(R);
    json_t *r = get_obj(c, obj, p, key);
    if (!r) return;
    jpath rp = pkey(p, key);
    static const char *const keys[] = {"axis", "angle_deg", NULL};
    check_keys(c, r, &rp, keys);
    double axis[3] = {0, 0, 1}, deg = 0;
    get_dir(c, r, &rp, "axis", axis);
    get_num(c, r, &rp, "angle_deg", ANY, &deg);
    axis_angle(axis, deg * (3.14159265358979323846 / 180.0), R);
}

/* A file path relative to base_dir, which must exist. */
static int get_file(vctx *c, json_t *obj, const jpath *p, const char *key, const char *base,
                    char out[SCENE_PATH_MAX]) {
    const char *f = get_str(c, obj, p, key);
    if (!f) return 0;
    jpath kp = pkey(p, key);
    if (f[0] == '/' || !base[0])
        snprintf(out, SCENE_PATH_MAX, "%s", f);
    else
        snprintf(out, SCENE_PATH_MAX, "%s/%s", base, f);
    if (access(out, R_OK) != 0) {
        verr(c, kp.s, "file '%s' does not exist or cannot be read", out);
        return 0;
    }
    return 1;
}

/* ------------------------------------------------------------ material */
static const char *const material_keys[] = {"model",   "youngs",    "poisson",  "density",
                                            "damping", "inversion", "biphasic", NULL};

static void parse_material(vctx *c, json_t *m, const jpath *p, defo_material_def *mat) {
    check_keys(c, m, p, material_keys);
    int before = c->errs.count;
    const char *model = get_str(c, m, p, "model");
    if (model) {
        static const char *const models[] = {"corotated", "neo_hookean", "stvk", "biphasic", NULL};
        jpath kp = pkey(p, "model");
        int k = word_of(c, model, &kp, models);
        if (k >= 0) defo_material_model_from_name(models[k], &mat->model);
    }
    get_num(c, m, p, "youngs", POS, &mat->youngs_modulus);
    get_num(c, m, p, "poisson", (range){0, 0.5, 1, 0}, &mat->poisson);
    get_num(c, m, p, "density", POS, &mat->density);
    get_num(c, m, p, "damping", NONNEG, &mat->damping_time);
    json_t *inv = json_object_get(m, "inversion");
    if (inv) {
        jpath ip = pkey(p, "inversion");
        static const char *const modes[] = {"none", "c0", "c1", "clamp", NULL};
        const char *mode = NULL;
        if (json_is_string(inv)) {
            mode = json_string_value(inv);
        } else if (json_is_object(inv)) {
            static const char *const keys[] = {"mode", "threshold", NULL};
            check_keys(c, inv, &ip, keys);
            mode = get_str(c, inv, &ip, "mode");
            get_num(c, inv, &ip, "threshold", (range){0, 1, 0, 0}, &mat->inversion.threshold);
            if (mode) ip = pkey(&ip, "mode");
        } else {
            verr(c, ip.s, "expected a mode name or an object, got %s", type_name(inv));
        }
        if (mode) {
            int k = word_of(c, mode, &ip, modes);
            if (k >= 0) mat->inversion.mode = (defo_inversion_mode)k;
        }
    }
    json_t *bi = get_obj(c, m, p, "biphasic");
    if (bi) {
        jpath bp = pkey(p, "biphasic");
        static const char *const keys[] = {
            "compression_threshold", "elongation_threshold", "rest_slope",
            "compression_slope",     "elongation_slope",     NULL};
        check_keys(c, bi, &bp, keys);
        defo_biphasic_def *b = &mat->biphasic;
        get_num(c, bi, &bp, "compression_threshold", (range){0, 1, 0, 0},
                &b->compression_threshold);
        get_num(c, bi, &bp, "elongation_threshold", (range){1, INFINITY, 0, 0},
                &b->elongation_threshold);
        get_num(c, bi, &bp, "rest_slope", POS, &b->rest_slope);
        get_num(c, bi, &bp, "compression_slope", NONNEG, &b->compression_slope);
        get_num(c, bi, &bp, "elongation_slope", NONNEG, &b->elongation_slope);
    }
    /* Combinations (e.g. neo-Hookean without an inversion extension) are the
     * material module's to judge; only when each field is fine on its own. */
    if (c->errs.count == before && defo_material_def_validate(mat) != DEFO_OK)
        verr(c, p->s, "%s", defo_last_error());
}

/* ---------------------------------------------------------------- body */
static void parse_generator(vctx *c, json_t *g, const jpath *p, scene_body *b) {
    const char *type = get_str(c, g, p, "type");
    jpath tp = pkey(p, "type");
    if (!type) {
        if (!json_object_get(g, "type")) verr(c, tp.s, "missing (box, sphere, cylinder or torus)");
        return;
    }
    static const char *const types[] = {"box", "sphere", "cylinder", "torus", NULL};
    int k = word_of(c, type, &tp, types);
    if (k < 0) return;
    b->generator = (scene_generator)k;
    switch (b->generator) {
    case GEN_BOX: {
        static const char *const keys[] = {"type",      "center", "size", "cells",
                                           "cell_size", "split",  NULL};
        check_keys(c, g, p, keys);
        defo_box_def *d = &b->box;
        double center[3] = {0, 0, 0};
        get_vec3(c, g, p, "center", ANY, center);
        get_vec3(c, g, p, "size", POS, d->size);
        json_t *cells = json_object_get(g, "cells");
        if (cells && json_is_integer(cells)) {
            int n = 4;
            if (get_int(c, g, p, "cells", 1, 1000, &n)) d->cells[0] = d->cells[1] = d->cells[2] = n;
        } else if (cells) {
            double cv[3];
            jpath cp = pkey(p, "cells");
            if (vec3_of(c, cells, &cp, (range){1, 1000, 1, 1}, cv))
                for (int i = 0; i < 3; i++) d->cells[i] = (int)cv[i];
        }
        get_num(c, g, p, "cell_size", POS, &d->cell_size);
        const char *split = get_str(c, g, p, "split");
        if (split) {
            static const char *const splits[] = {"6", "5", "24", NULL};
            jpath sp = pkey(p, "split");
            int s = word_of(c, split, &sp, splits);
            if (s >= 0) d->split = (defo_box_split)s;
        }
        for (int i = 0; i < 3; i++) d->origin[i] = center[i] - 0.5 * d->size[i];
        break;
    }
    case GEN_SPHERE: {
        static const char *const keys[] = {"type", "center", "radius", "cell_size", NULL};
        check_keys(c, g, p, keys);
        get_vec3(c, g, p, "center", ANY, b->sphere.center);
        get_num(c, g, p, "radius", POS, &b->sphere.radius);
        get_num(c, g, p, "cell_size", POS, &b->sphere.cell_size);
        break;
    }
    case GEN_CYLINDER: {
        static const char *const keys[] = {"type", "center", "radius", "height", "cell_size", NULL};
        check_keys(c, g, p, keys);
        get_vec3(c, g, p, "center", ANY, b->cylinder.center);
        get_num(c, g, p, "radius", POS, &b->cylinder.radius);
        get_num(c, g, p, "height", POS, &b->cylinder.height);
        get_num(c, g, p, "cell_size", POS, &b->cylinder.cell_size);
        break;
    }
    case GEN_TORUS: {
        static const char *const keys[] = {"type",         "center",    "major_radius",
                                           "minor_radius", "cell_size", NULL};
        check_keys(c, g, p, keys);
        defo_torus_def *d = &b->torus;
        get_vec3(c, g, p, "center", ANY, d->center);
        get_num(c, g, p, "major_radius", POS, &d->major_radius);
        get_num(c, g, p, "minor_radius", POS, &d->minor_radius);
        get_num(c, g, p, "cell_size", POS, &d->cell_size);
        if (!(d->minor_radius < d->major_radius))
            verr(c, p->s, "minor_radius %g must be smaller than major_radius %g", d->minor_radius,
                 d->major_radius);
        break;
    }
    }
}

/* The scripted rigid motion object shared by colliders and fixed sets. */
static void parse_motion(vctx *c, json_t *m, const jpath *mp, defo_motion_def *md) {
    static const char *const mk[] = {"velocity", "pivot", "axis", "angular_speed", NULL};
    check_keys(c, m, mp, mk);
    get_vec3(c, m, mp, "velocity", ANY, md->velocity);
    get_vec3(c, m, mp, "pivot", ANY, md->pivot);
    get_dir(c, m, mp, "axis", md->angular_axis);
    get_num(c, m, mp, "angular_speed", ANY, &md->angular_speed);
}

/* One region of f (box, sphere, plane when allow_plane, or tag) into x; the
 * caller checks the keys.  Returns 1 when exactly one region is given. */
static int parse_region(vctx *c, json_t *f, const jpath *fp, scene_fix *x, int allow_plane) {
    int kinds = 0;
    json_t *v;
    if ((v = get_obj(c, f, fp, "box"))) {
        kinds++;
        x->kind = FIX_BOX;
        jpath kp = pkey(fp, "box");
        static const char *const bk[] = {"min", "max", NULL};
        check_keys(c, v, &kp, bk);
        if (!get_vec3(c, v, &kp, "min", ANY, x->a) || !get_vec3(c, v, &kp, "max", ANY, x->b))
            verr(c, kp.s, "needs \"min\" and \"max\" corners");
    }
    if ((v = get_obj(c, f, fp, "sphere"))) {
        kinds++;
        x->kind = FIX_SPHERE;
        jpath kp = pkey(fp, "sphere");
        static const char *const sk[] = {"center", "radius", NULL};
        check_keys(c, v, &kp, sk);
        if (!get_vec3(c, v, &kp, "center", ANY, x->a) ||
            !get_num(c, v, &kp, "radius", POS, &x->radius))
            verr(c, kp.s, "needs \"center\" and \"radius\"");
    }
    if ((v = get_obj(c, f, fp, "plane"))) {
        kinds++;
        x->kind = FIX_PLANE;
        jpath kp = pkey(fp, "plane");
        if (!allow_plane) {
            verr(c, kp.s, "not available for loads (use a box, sphere or tag region)");
            return 0;
        }
        static const char *const pk[] = {"point", "normal", NULL};
        check_keys(c, v, &kp, pk);
        if (!get_vec3(c, v, &kp, "point", ANY, x->a) || !get_dir(c, v, &kp, "normal", x->b))
            verr(c, kp.s, "needs \"point\" and \"normal\"");
    }
    int tag = 0;
    if (get_int(c, f, fp, "tag", 1, INT32_MAX, &tag)) {
        kinds++;
        x->kind = FIX_TAG;
        x->tag = tag;
    }
    if (kinds != 1) {
        verr(c, fp->s, "give exactly one of box, sphere%s or tag (found %d)",
             allow_plane ? ", plane" : "", kinds);
        return 0;
    }
    return 1;
}

static void parse_fixed(vctx *c, json_t *arr, const jpath *p, scene_body *b) {
    size_t n = json_array_size(arr);
    if (!n) return;
    b->fixed = defo_calloc(n, sizeof *b->fixed);
    if (!b->fixed) {
        c->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(arr, i);
        jpath fp = pidx(p, i);
        if (!json_is_object(f)) {
            verr(c, fp.s,
                 "expected an object ({\"box\": ..}, {\"sphere\": ..}, {\"plane\": ..} "
                 "or {\"tag\": N}), got %s",
                 type_name(f));
            continue;
        }
        static const char *const keys[] = {"box", "sphere", "plane", "tag", "motion", NULL};
        check_keys(c, f, &fp, keys);
        scene_fix *x = &b->fixed[b->num_fixed];
        memset(x, 0, sizeof *x);
        json_t *m = get_obj(c, f, &fp, "motion");
        if (m) {
            jpath mp = pkey(&fp, "motion");
            x->has_motion = 1;
            x->motion = defo_default_collider_def().motion;
            parse_motion(c, m, &mp, &x->motion);
        }
        if (parse_region(c, f, &fp, x, 1)) b->num_fixed++;
    }
}

/* "forces" (value key "force", N per node) or "tractions" ("traction", Pa). */
static void parse_loads(vctx *c, json_t *arr, const jpath *p, const char *value_key,
                        scene_load **out, int *count) {
    size_t n = json_array_size(arr);
    if (!n) return;
    *out = defo_calloc(n, sizeof **out);
    if (!*out) {
        c->oom = 1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *f = json_array_get(arr, i);
        jpath fp = pidx(p, i);
        if (!json_is_object(f)) {
            verr(c, fp.s,
                 "expected an object ({\"box\": ..} or {\"sphere\": ..} or {\"tag\": N} "
                 "with \"%s\"), got %s",
                 value_key, type_name(f));
            continue;
        }
        const char *keys[] = {"box", "sphere", "plane", "tag", value_key, NULL};
        check_keys(c, f, &fp, keys);
        scene_load *l = &(*out)[*count];
        memset(l, 0, sizeof *l);
        int ok = parse_region(c, f, &fp, &l->region, 0);
        if (!json_object_get(f, value_key)) {
            verr(c, fp.s, "needs \"%s\" ([3] %s)", value_key,
                 !strcmp(value_key, "force") ? "N per node" : "Pa");
            ok = 0;
        } else if (!get_vec3(c, f, &fp, value_key, ANY, l->value)) {
            ok = 0;
        }
        if (ok) (*count)++;
    }
}

static void parse_body(vctx *c, json_t *o, const jpath *p, const char *base, scene_body *b,
                       size_t index) {
    static const char *const keys[] = {"name",
                                       "mesh",
                                       "generator",
                                       "surface",
                                       "transform",
                                       "velocity",
                                       "angular_velocity",
                                       "material",
                                       "material_changes",
                                       "formulation",
                                       "fixed",
                                       "forces",
                                       "tractions",
                                       "plasticity",
                                       "fracture",
                                       "embedded",
                                       NULL};
    check_keys(c, o, p, keys);
    snprintf(b->name, sizeof b->name, "body%zu", index);
    const char *name = get_str(c, o, p, "name");
    if (name) snprintf(b->name, sizeof b->name, "%s", name);
    b->box = defo_default_box_def();
    b->sphere = defo_default_sphere_def();
    b->cylinder = defo_default_cylinder_def();
    b->torus = defo_default_torus_def();
    b->mesher = defo_default_mesher_def();
    b->material = defo_default_material();
    identity(b->rotation);
    b->scale[0] = b->scale[1] = b->scale[2] = 1;

    int sources = 0;
    json_t *v;
    if ((v = json_object_get(o, "mesh"))) {
        sources++;
        b->source = SRC_FILE;
        jpath mp = pkey(p, "mesh");
        if (json_is_string(v)) {
            get_file(c, o, p, "mesh", base, b->file);
        } else if (json_is_object(v)) {
            static const char *const mk[] = {"file", NULL};
            check_keys(c, v, &mp, mk);
            if (!json_object_get(v, "file"))
                verr(c, mp.s, "needs \"file\"");
            else
                get_file(c, v, &mp, "file", base, b->file);
        } else {
            verr(c, mp.s, "expected a file name, got %s", type_name(v));
        }
    }
    if ((v = get_obj(c, o, p, "generator"))) {
        sources++;
        b->source = SRC_GENERATOR;
        jpath gp = pkey(p, "generator");
        parse_generator(c, v, &gp, b);
    }
    if ((v = get_obj(c, o, p, "surface"))) {
        sources++;
        b->source = SRC_SURFACE;
        jpath sp = pkey(p, "surface");
        static const char *const sk[] = {"file", "cells", "cell_size", NULL};
        check_keys(c, v, &sp, sk);
        if (!json_object_get(v, "file"))
            verr(c, sp.s, "needs \"file\" (a closed surface: .obj .stl .off .ply)");
        else
            get_file(c, v, &sp, "file", base, b->file);
        get_int(c, v, &sp, "cells", 2, 1000, &b->mesher.cells);
        get_num(c, v, &sp, "cell_size", POS, &b->mesher.cell_size);
    }
    if (sources != 1)
        verr(c, p->s, "give exactly one of \"mesh\", \"generator\" or \"surface\" (found %d)",
             sources);

    if ((v = get_obj(c, o, p, "transform"))) {
        jpath tp = pkey(p, "transform");
        static const char *const tk[] = {"translate", "rotate", "scale", NULL};
        check_keys(c, v, &tp, tk);
        get_vec3(c, v, &tp, "translate", ANY, b->translate);
        parse_rotate(c, v, &tp, "rotate", b->rotation);
        json_t *s = json_object_get(v, "scale");
        if (s && json_is_number(s)) {
            double k = 1;
            if (get_num(c, v, &tp, "scale", POS, &k)) b->scale[0] = b->scale[1] = b->scale[2] = k;
        } else if (s) {
            get_vec3(c, v, &tp, "scale", POS, b->scale);
        }
    }
    get_vec3(c, o, p, "velocity", ANY, b->velocity);
    get_vec3(c, o, p, "angular_velocity", ANY, b->angular_velocity);

    const char *form = get_str(c, o, p, "formulation");
    if (form) {
        static const char *const forms[] = {"invertible", "corotated", "quadratic", NULL};
        jpath fp = pkey(p, "formulation");
        int k = word_of(c, form, &fp, forms);
        if (k == 1) b->formulation = FORM_COROTATED;
        if (k == 2)
            verr(c, fp.s, "'%s' is not yet available in defo run (use 'invertible' or 'corotated')",
                 form);
    }
    if ((v = get_obj(c, o, p, "material"))) {
        jpath mp = pkey(p, "material");
        parse_material(c, v, &mp, &b->material);
    }
    if ((v = get_arr(c, o, p, "material_changes"))) {
        jpath cp = pkey(p, "material_changes");
        size_t n = json_array_size(v);
        b->changes = n ? defo_calloc(n, sizeof *b->changes) : NULL;
        if (n && !b->changes) c->oom = 1;
        defo_material_def cur = b->material;
        double last = -1;
        for (size_t i = 0; i < n && b->changes; i++) {
            json_t *e = json_array_get(v, i);
            jpath ep = pidx(&cp, i);
            if (!json_is_object(e)) {
                verr(c, ep.s, "expected an object {\"time\": t, \"material\": {..}}");
                continue;
            }
            static const char *const ck[] = {"time", "material", NULL};
            check_keys(c, e, &ep, ck);
            double t = 0;
            if (!json_object_get(e, "time")) verr(c, ep.s, "needs \"time\"");
            get_num(c, e, &ep, "time", NONNEG, &t);
            if (t <= last) verr(c, ep.s, "times must increase (%g after %g)", t, last);
            last = t;
            json_t *m = get_obj(c, e, &ep, "material");
            if (m) {
                jpath mp = pkey(&ep, "material");
                parse_material(c, m, &mp, &cur); /* a change edits the previous material */
            }
            b->changes[b->num_changes].time = t;
            b->changes[b->num_changes].material = cur;
            b->num_changes++;
        }
    }
    if ((v = get_arr(c, o, p, "fixed"))) {
        jpath fp = pkey(p, "fixed");
        parse_fixed(c, v, &fp, b);
    }
    if ((v = get_obj(c, o, p, "plasticity"))) {
        jpath pp = pkey(p, "plasticity");
        static const char *const pk[] = {"yield", "creep", "max", NULL};
        check_keys(c, v, &pp, pk);
        b->has_plasticity = 1;
        b->plasticity = defo_default_plasticity_def();
        get_num(c, v, &pp, "yield", NONNEG, &b->plasticity.yield);
        get_num(c, v, &pp, "creep", NONNEG, &b->plasticity.creep);
        get_num(c, v, &pp, "max", NONNEG, &b->plasticity.max);
        if (b->formulation != FORM_COROTATED)
            verr(c, pp.s,
                 "needs \"formulation\": \"corotated\" (MG04 §3 plasticity of the warped "
                 "stiffness model)");
    }
    if ((v = get_obj(c, o, p, "fracture"))) {
        /* MG04 §4; which bodies may fracture is checked with the integrator
         * (parse_root) */
        jpath fp = pkey(p, "fracture");
        static const char *const fk[] = {"threshold", "seed", "max_splits", NULL};
        check_keys(c, v, &fp, fk);
        b->fracture = defo_default_fracture_def();
        if (!json_object_get(v, "threshold"))
            verr(c, fp.s, "needs \"threshold\" (the largest principal stress that breaks, Pa > 0)");
        else
            get_num(c, v, &fp, "threshold", POS, &b->fracture.threshold);
        json_t *seed = json_object_get(v, "seed");
        if (seed) {
            jpath sp = pkey(&fp, "seed");
            if (!json_is_integer(seed)) {
                verr(c, sp.s, "expected an integer, got %s",
                     json_is_real(seed) ? "a fraction" : type_name(seed));
            } else if (json_integer_value(seed) < 0) {
                verr(c, sp.s, "%lld is not >= 0", (long long)json_integer_value(seed));
            } else {
                b->fracture.seed = (uint64_t)json_integer_value(seed);
            }
        }
        get_int(c, v, &fp, "max_splits", 0, 1000000000, &b->fracture.max_splits);
        b->has_fracture = 1;
    }
    if ((v = get_obj(c, o, p, "embedded"))) {
        jpath ep = pkey(p, "embedded");
        static const char *const ek[] = {"file", NULL};
        check_keys(c, v, &ep, ek);
        if (!json_object_get(v, "file"))
            verr(c, ep.s, "needs \"file\" (a triangle surface: .obj .stl .off .ply)");
        else if (get_file(c, v, &ep, "file", base, b->embedded_file)) {
            /* a readable triangle surface (read now, so validate catches it) */
            jpath fp = pkey(&ep, "file");
            defo_mesh *surf = NULL;
            defo_status st = defo_mesh_read(b->embedded_file, NULL, &surf);
            if (st < 0)
                verr(c, fp.s, "'%s' is not a readable surface: %s", b->embedded_file,
                     defo_last_error());
            else if (surf->num_tris == 0 || surf->nodes_per_tri != 3)
                verr(c, fp.s, "'%s' has no 3-node triangles (a surface: .obj .stl .off .ply)",
                     b->embedded_file);
            else
                b->has_embedded = 1;
            defo_mesh_destroy(surf);
        }
    }
    if ((v = get_arr(c, o, p, "forces"))) {
        jpath fp = pkey(p, "forces");
        parse_loads(c, v, &fp, "force", &b->forces, &b->num_forces);
    }
    if ((v = get_arr(c, o, p, "tractions"))) {
        jpath tp = pkey(p, "tractions");
        parse_loads(c, v, &tp, "traction", &b->tractions, &b->num_tractions);
    }
}

/* ----------------------------------------------------------- colliders */
static const char *const shape_keys[] = {"type",   "point",        "center",      "normal", "axis",
                                         "radius", "half_extents", "half_length", "rotate", NULL};

static void parse_shape(vctx *c, json_t *o, const jpath *p, defo_shape_def *s) {
    *s = defo_default_shape_def();
    const char *type = get_str(c, o, p, "type");
    jpath tp = pkey(p, "type");
    if (!type) {
        if (!json_object_get(o, "type"))
            verr(c, tp.s, "missing (plane, sphere, box, cylinder or capsule)");
        return;
    }
    static const char *const types[] = {"plane", "sphere", "box", "cylinder", "capsule", NULL};
    int k = word_of(c, type, &tp, types);
    if (k < 0) return;
    s->type = (defo_shape_type)k;
    get_vec3(c, o, p, "center", ANY, s->center);
    if (s->type == DEFO_SHAPE_PLANE) get_vec3(c, o, p, "point", ANY, s->center);
    get_dir(c, o, p, "normal", s->normal);
    get_dir(c, o, p, "axis", s->axis);
    get_num(c, o, p, "radius", POS, &s->radius);
    get_vec3(c, o, p, "half_extents", POS, s->half_extent);
    get_num(c, o, p, "half_length", s->type == DEFO_SHAPE_CAPSULE ? NONNEG : POS, &s->half_length);
    parse_rotate(c, o, p, "rotate", s->rotation);
}

static void parse_collider(vctx *c, json_t *o, const jpath *p, scene_collider *col, size_t index) {
    snprintf(col->name, sizeof col->name, "collider%zu", index);
    col->def = defo_default_collider_def();
    int inline_shape = json_object_get(o, "type") != NULL;
    if (inline_shape) {
        static const char *const keys[] = {
            "type",        "point",  "center", "normal", "axis",     "radius", "half_extents",
            "half_length", "rotate", "name",   "motion", "friction", "origin", NULL};
        check_keys(c, o, p, keys);
    } else {
        static const char *const keys[] = {"name", "shapes", "motion", "friction", "origin", NULL};
        check_keys(c, o, p, keys);
    }
    const char *name = get_str(c, o, p, "name");
    if (name) snprintf(col->name, sizeof col->name, "%s", name);
    get_num(c, o, p, "friction", NONNEG, &col->def.friction);
    json_t *m = get_obj(c, o, p, "motion");
    if (m) {
        jpath mp = pkey(p, "motion");
        parse_motion(c, m, &mp, &col->def.motion);
    }
    int before = c->errs.count;
    if (inline_shape) {
        col->shapes = defo_calloc(1, sizeof *col->shapes);
        if (!col->shapes) {
            c->oom = 1;
            return;
        }
        parse_shape(c, o, p, &col->shapes[0]);
        col->def.num_shapes = 1;
    } else {
        json_t *arr = get_arr(c, o, p, "shapes");
        jpath sp = pkey(p, "shapes");
        if (!arr || !json_array_size(arr)) {
            if (!json_object_get(o, "shapes") || arr)
                verr(c, sp.s, "needs at least one shape (or give \"type\" for a single shape)");
            return;
        }
        size_t n = json_array_size(arr);
        col->shapes = defo_calloc(n, sizeof *col->shapes);
        if (!col->shapes) {
            c->oom = 1;
            return;
        }
        for (size_t i = 0; i < n; i++) {
            json_t *e = json_array_get(arr, i);
            jpath ep = pidx(&sp, i);
            col->shapes[i] = defo_default_shape_def();
            if (!json_is_object(e)) {
                verr(c, ep.s, "expected an object, got %s", type_name(e));
                continue;
            }
            check_keys(c, e, &ep, shape_keys);
            parse_shape(c, e, &ep, &col->shapes[i]);
        }
        col->def.num_shapes = (int)n;
    }
    col->def.shapes = col->shapes;
    /* "origin" places the collider frame: shape rotations turn about it and
     * it is the default rotation pivot (so a gear is written around its own
     * axis).  Shape centres are stored in the frame at the world origin:
     * p = rotation · c' with c' = c + rotationᵀ · origin. */
    double origin[3] = {0, 0, 0};
    if (get_vec3(c, o, p, "origin", ANY, origin)) {
        for (int i = 0; i < col->def.num_shapes; i++) {
            defo_shape_def *sh = &col->shapes[i];
            for (int k = 0; k < 3; k++)
                sh->center[k] += sh->rotation[k] * origin[0] + sh->rotation[3 + k] * origin[1] +
                                 sh->rotation[6 + k] * origin[2];
        }
        json_t *mo = json_object_get(o, "motion");
        if (!mo || !json_object_get(mo, "pivot"))
            memcpy(col->def.motion.pivot, origin, sizeof origin);
    }
    /* Cross-field checks (orthonormal rotations, sizes) are the collision
     * module's: build and drop one. */
    if (c->errs.count == before) {
        defo_collider *tmp = NULL;
        if (defo_collider_create(&col->def, &tmp) != DEFO_OK)
            verr(c, p->s, "%s", defo_last_error());
        defo_collider_destroy(tmp);
    }
}

/* ------------------------------------------------------------- outputs */
static const char *const field_names[] = {"displacement",   "velocity",  "J",
                                          "inverted",       "von_mises", "max_principal_stress",
                                          "plastic_strain", "body_id",   NULL};

static void parse_outputs(vctx *c, json_t *o, const jpath *p, defo_scene_outputs *out) {
    static const char *const keys[] = {"vtu", "surface_obj", "png", "checkpoint", "fields", NULL};
    check_keys(c, o, p, keys);
    get_bool(c, o, p, "vtu", &out->vtu);
    get_bool(c, o, p, "surface_obj", &out->surface_obj);
    get_bool(c, o, p, "checkpoint", &out->checkpoint);
    json_t *png = json_object_get(o, "png");
    jpath pp = pkey(p, "png");
    if (png && json_is_boolean(png)) {
        out->png = json_is_true(png);
    } else if (png && json_is_object(png)) {
        out->png = 1;
        static const char *const pk[] = {"enabled", "width", "height", "color", NULL};
        check_keys(c, png, &pp, pk);
        get_bool(c, png, &pp, "enabled", &out->png);
        get_int(c, png, &pp, "width", 16, 8192, &out->png_width);
        get_int(c, png, &pp, "height", 16, 8192, &out->png_height);
        const char *col = get_str(c, png, &pp, "color");
        if (col) {
            jpath cp = pkey(&pp, "color");
            if (col[0] && word_of(c, col, &cp, field_names) < 0) {
                /* reported by word_of */
            } else {
                snprintf(out->png_color, sizeof out->png_color, "%s", col);
            }
        }
    } else if (png) {
        verr(c, pp.s, "expected true, false or an object, got %s", type_name(png));
    }
    json_t *f = get_arr(c, o, p, "fields");
    if (f) {
        jpath fp = pkey(p, "fields");
        out->fields = 0;
        for (size_t i = 0; i < json_array_size(f); i++) {
            json_t *e = json_array_get(f, i);
            jpath ep = pidx(&fp, i);
            if (!json_is_string(e)) {
                verr(c, ep.s, "expected a field name, got %s", type_name(e));
                continue;
            }
            int k = word_of(c, json_string_value(e), &ep, field_names);
            if (k >= 0) out->fields |= 1u << k;
        }
    }
}

/* ---------------------------------------------------------------- scene */
uint64_t defo_scene_fnv1a(uint64_t h, const void *data, size_t size) {
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

static void scene_free(defo_scene *s) {
    if (!s) return;
    for (int i = 0; i < s->num_bodies; i++) {
        defo_free(s->bodies[i].fixed);
        defo_free(s->bodies[i].changes);
        defo_free(s->bodies[i].forces);
        defo_free(s->bodies[i].tractions);
    }
    defo_free(s->bodies);
    for (int i = 0; i < s->num_colliders; i++) defo_free(s->colliders[i].shapes);
    defo_free(s->colliders);
    defo_free(s->canonical);
    defo_free(s);
}

void defo_scene_destroy(defo_scene *s) {
    scene_free(s);
}

static char *copy_jansson_string(char *js) {
    if (!js) return NULL;
    size_t n = strlen(js) + 1;
    char *d = defo_malloc(n);
    if (d) memcpy(d, js, n);
    free(js);
    return d;
}

static void parse_root(vctx *c, json_t *root, defo_scene *s, const char *base_dir) {
    jpath p = {{0}};
    static const char *const keys[] = {"name",       "version", "base_dir",  "gravity", "duration",
                                       "integrator", "bodies",  "colliders", "outputs", NULL};
    check_keys(c, root, &p, keys);
    snprintf(s->name, sizeof s->name, "scene");
    const char *name = get_str(c, root, &p, "name");
    if (name) snprintf(s->name, sizeof s->name, "%s", name);
    int version = 1;
    get_int(c, root, &p, "version", 1, 1, &version);
    const char *bd = get_str(c, root, &p, "base_dir");
    snprintf(s->base_dir, sizeof s->base_dir, "%s", bd ? bd : base_dir ? base_dir : "");
    if (!s->base_dir[0] || s->base_dir[0] != '/') {
        /* absolute, so a copy of the scene resolves files from anywhere */
        char cwd[SCENE_PATH_MAX];
        if (getcwd(cwd, sizeof cwd)) {
            char tmp[SCENE_PATH_MAX];
            if (s->base_dir[0] && strcmp(s->base_dir, "."))
                snprintf(tmp, sizeof tmp, "%.2000s/%.2000s", cwd, s->base_dir);
            else
                snprintf(tmp, sizeof tmp, "%s", cwd);
            memcpy(s->base_dir, tmp, sizeof tmp);
        }
    }

    s->world = defo_default_world_def();
    get_vec3(c, root, &p, "gravity", ANY, s->world.gravity);

    s->fps = 30;
    s->frames = 60;
    json_t *d = get_obj(c, root, &p, "duration");
    if (d) {
        jpath dp = pkey(&p, "duration");
        static const char *const dk[] = {"frames", "fps", "seconds", NULL};
        check_keys(c, d, &dp, dk);
        get_num(c, d, &dp, "fps", (range){0, 1000, 0, 1}, &s->fps);
        get_int(c, d, &dp, "frames", 1, 1000000, &s->frames);
        double secs = 0;
        if (get_num(c, d, &dp, "seconds", POS, &secs)) {
            if (json_object_get(d, "frames"))
                verr(c, dp.s, "give \"frames\" or \"seconds\", not both");
            double f = ceil(secs * s->fps - 1e-9);
            s->frames = f < 1 ? 1 : f > 1e6 ? 1000000 : (int)f;
        }
    }

    s->integrator = INTEGRATOR_NEWMARK;
    s->backward_euler = defo_default_backward_euler_def();
    s->quasistatic = defo_default_quasistatic_def();
    s->contact_stiffness = 0;
    json_t *integ = get_obj(c, root, &p, "integrator");
    if (integ) {
        jpath ip = pkey(&p, "integrator");
        const char *type = get_str(c, integ, &ip, "type");
        if (type) {
            static const char *const types[] = {"newmark", "backward_euler", "quasistatic", "bdf2",
                                                "static",  "hybrid",         NULL};
            jpath tp = pkey(&ip, "type");
            int k = word_of(c, type, &tp, types);
            if (k == 1) s->integrator = INTEGRATOR_BACKWARD_EULER;
            if (k == 2) s->integrator = INTEGRATOR_QUASISTATIC;
            if (k > 2)
                verr(c, tp.s,
                     "'%s' is not yet available in defo run (available: newmark, "
                     "backward_euler, quasistatic)",
                     type);
        }
        json_t *cg = get_obj(c, integ, &ip, "cg");
        jpath cp = pkey(&ip, "cg");
        static const char *const ck[] = {"max_iterations", "tolerance", NULL};
        if (cg) check_keys(c, cg, &cp, ck);
        if (s->integrator == INTEGRATOR_BACKWARD_EULER) {
            static const char *const ik[] = {"type",
                                             "time_step",
                                             "rayleigh_mass",
                                             "rayleigh_stiffness",
                                             "cg_fixed_iterations",
                                             "cg",
                                             "precond",
                                             "rotation_interval",
                                             "lazy_tolerance",
                                             NULL};
            check_keys(c, integ, &ip, ik);
            defo_backward_euler_def *be = &s->backward_euler;
            get_num(c, integ, &ip, "time_step", POS, &be->time_step);
            /* PCG preconditioner (defo/sparse.h) and lazy rotations (MTPS08 §4.4) */
            static const char *const pw[] = {
                "none", "jacobi", "block_jacobi", "block_ic0", "cholesky", "two_level", NULL};
            static const defo_precond_kind pk[] = {
                DEFO_PRECOND_NONE,      DEFO_PRECOND_JACOBI,   DEFO_PRECOND_BLOCK_JACOBI,
                DEFO_PRECOND_BLOCK_IC0, DEFO_PRECOND_CHOLESKY, DEFO_PRECOND_TWO_LEVEL};
            const char *pstr = get_str(c, integ, &ip, "precond");
            jpath pp = pkey(&ip, "precond");
            int pkind = pstr ? word_of(c, pstr, &pp, pw) : -1;
            if (pkind >= 0) be->preconditioner = pk[pkind];
            get_int(c, integ, &ip, "rotation_interval", 0, 1000000,
                    &be->corotated.rotation_interval);
            get_num(c, integ, &ip, "lazy_tolerance", NONNEG, &be->corotated.lazy_tolerance);
            if (be->corotated.rotation_interval == 0 && !(be->corotated.lazy_tolerance > 0)) {
                jpath rp = pkey(&ip, "rotation_interval");
                verr(c, rp.s, "0 (rotations only when F moved) needs a lazy_tolerance > 0");
            }
            get_num(c, integ, &ip, "rayleigh_mass", NONNEG, &be->rayleigh_mass);
            get_num(c, integ, &ip, "rayleigh_stiffness", NONNEG, &be->rayleigh_stiffness);
            get_int(c, integ, &ip, "cg_fixed_iterations", 0, 1000000, &be->cg_fixed_iterations);
            if (cg) {
                get_int(c, cg, &cp, "max_iterations", 1, 1000000, &be->cg_max_iterations);
                get_num(c, cg, &cp, "tolerance", (range){0, 1, 0, 0}, &be->cg_tolerance);
            }
        } else if (s->integrator == INTEGRATOR_QUASISTATIC) {
            static const char *const ik[] = {"type",
                                             "tolerance",
                                             "max_iterations",
                                             "definiteness_fix",
                                             "line_search",
                                             "contact_stiffness",
                                             "cg",
                                             "precond",
                                             "forcing",
                                             "predictor",
                                             NULL};
            check_keys(c, integ, &ip, ik);
            defo_quasistatic_def *q = &s->quasistatic;
            get_num(c, integ, &ip, "tolerance", (range){0, 1, 0, 0}, &q->tolerance);
            get_int(c, integ, &ip, "max_iterations", 1, 1000000, &q->max_iterations);
            get_bool(c, integ, &ip, "definiteness_fix", &q->definiteness_fix);
            get_bool(c, integ, &ip, "line_search", &q->line_search);
            /* Newton-step speed options (defo/quasistatic.h) */
            static const char *const qw[3][5] = {
                {"jacobi", "block_jacobi", "block_ic0", "two_level", NULL},
                {"target", "eisenstat_walker", NULL},
                {"none", "linear", "quadratic", "cubic", NULL}};
            static const char *const qk[3] = {"precond", "forcing", "predictor"};
            static const defo_precond_kind pk[4] = {DEFO_PRECOND_JACOBI, DEFO_PRECOND_BLOCK_JACOBI,
                                                    DEFO_PRECOND_BLOCK_IC0, DEFO_PRECOND_TWO_LEVEL};
            /* scene defaults: a frame depends only on the previous frame's
             * positions, so a checkpoint of (t, x, v) resumes bit for bit
             * (unless a predictor, which reads earlier frames, is asked
             * for), and each step is solved to the Newton target at once */
            q->frame_local = 1;
            q->forcing = DEFO_QS_FORCING_TARGET;
            for (int w = 0; w < 3; w++) {
                const char *str = get_str(c, integ, &ip, qk[w]);
                jpath wp = pkey(&ip, qk[w]);
                int k = str ? word_of(c, str, &wp, qw[w]) : -1;
                if (k >= 0 && w == 0) q->precond = pk[k];
                if (k >= 0 && w == 1) q->forcing = (defo_qs_forcing)k;
                if (k >= 0 && w == 2) q->predictor = (defo_qs_predictor)k;
                if (k >= 0 && w == 2) q->frame_local = k == 0;
            }
            get_num(c, integ, &ip, "contact_stiffness", POS, &s->contact_stiffness);
            if (cg) {
                get_int(c, cg, &cp, "max_iterations", 1, 1000000, &q->max_cg_iterations);
                if (json_object_get(cg, "tolerance")) {
                    jpath tp = pkey(&cp, "tolerance");
                    verr(c, tp.s,
                         "not used by quasistatic (its CG tolerance adapts to the "
                         "Newton residual)");
                }
            }
        } else {
            static const char *const ik[] = {"type", "cfl", "max_dt", "cg", NULL};
            check_keys(c, integ, &ip, ik);
            get_num(c, integ, &ip, "cfl", (range){0, 1, 0, 1}, &s->world.cfl);
            get_num(c, integ, &ip, "max_dt", POS, &s->world.max_dt);
            if (cg) {
                get_int(c, cg, &cp, "max_iterations", 1, 1000000, &s->world.cg_max_iterations);
                get_num(c, cg, &cp, "tolerance", (range){0, 1, 0, 0}, &s->world.cg_tolerance);
            }
        }
    }

    json_t *bodies = get_arr(c, root, &p, "bodies");
    jpath bp = pkey(&p, "bodies");
    if (!json_object_get(root, "bodies")) verr(c, bp.s, "missing: a scene needs at least one body");
    if (bodies) {
        size_t n = json_array_size(bodies);
        if (!n) verr(c, bp.s, "empty: a scene needs at least one body");
        s->bodies = n ? defo_calloc(n, sizeof *s->bodies) : NULL;
        if (n && !s->bodies) c->oom = 1;
        for (size_t i = 0; i < n && s->bodies; i++) {
            json_t *o = json_array_get(bodies, i);
            jpath ep = pidx(&bp, i);
            if (!json_is_object(o)) {
                verr(c, ep.s, "expected an object, got %s", type_name(o));
                continue;
            }
            parse_body(c, o, &ep, s->base_dir, &s->bodies[s->num_bodies++], i);
        }
        for (int i = 0; i < s->num_bodies; i++)
            for (int j = 0; j < i; j++)
                if (!strcmp(s->bodies[i].name, s->bodies[j].name)) {
                    jpath ep = pidx(&bp, (size_t)i);
                    jpath np = pkey(&ep, "name");
                    verr(c, np.s, "'%s' is already the name of bodies[%d]", s->bodies[i].name, j);
                }
    }
    /* MG04's corotated bodies are stepped by its implicit Euler, the
     * invertible ones by ITF04's Newmark: one integrator per scene. */
    for (int i = 0; i < s->num_bodies; i++) {
        const scene_body *b = &s->bodies[i];
        jpath ep = pidx(&bp, (size_t)i);
        jpath fp = pkey(&ep, "formulation");
        if (s->integrator == INTEGRATOR_BACKWARD_EULER && b->formulation != FORM_COROTATED)
            verr(c, fp.s,
                 "integrator 'backward_euler' steps 'corotated' bodies only (MG04): set "
                 "\"formulation\": \"corotated\"");
        if (s->integrator == INTEGRATOR_QUASISTATIC && b->formulation == FORM_COROTATED)
            verr(c, fp.s, "integrator 'quasistatic' (TSIF05) steps 'invertible' bodies only");
        if (s->integrator == INTEGRATOR_QUASISTATIC && b->num_changes) {
            jpath mp = pkey(&ep, "material_changes");
            verr(c, mp.s, "not yet available with integrator 'quasistatic'");
        }
        if (s->integrator == INTEGRATOR_NEWMARK && b->formulation == FORM_COROTATED)
            verr(c, fp.s,
                 "'corotated' bodies need \"integrator\": {\"type\": "
                 "\"backward_euler\"} (newmark steps invertible bodies)");
        if (s->integrator == INTEGRATOR_BACKWARD_EULER && b->num_changes) {
            jpath mp = pkey(&ep, "material_changes");
            verr(c, mp.s, "not yet available with integrator 'backward_euler'");
        }
        /* MG04 §4 splits the tets of the warped-stiffness model inside its
         * implicit Euler step: the other pairings have no fracture pass */
        if (b->has_fracture &&
            (s->integrator != INTEGRATOR_BACKWARD_EULER || b->formulation != FORM_COROTATED)) {
            jpath xp = pkey(&ep, "fracture");
            verr(c, xp.s,
                 "needs a \"corotated\" body and integrator 'backward_euler' (MG04 §4 "
                 "fracture splits the warped-stiffness model's tets; this body is '%s' with "
                 "integrator '%s')",
                 b->formulation == FORM_COROTATED ? "corotated" : "invertible",
                 s->integrator == INTEGRATOR_NEWMARK          ? "newmark"
                 : s->integrator == INTEGRATOR_BACKWARD_EULER ? "backward_euler"
                                                              : "quasistatic");
        }
        if (b->has_fracture && b->has_embedded) {
            /* MG04 §5.2 (the embedded surface cut along the cracks, kept
             * watertight) is not implemented: a fracturing body writes its
             * tet boundary, cracks included */
            jpath xp = pkey(&ep, "embedded");
            verr(c, xp.s,
                 "not available on a body with \"fracture\" yet (cutting an embedded surface "
                 "along the cracks, MG04 §5.2, is not implemented): a fracturing body writes "
                 "its tet boundary surface; remove \"embedded\"");
        }
        if (b->has_fracture) {
            /* a split would have to share the loads of its node and its
             * crack faces are boundary faces: not defined yet */
            if (b->num_forces) {
                jpath lp = pkey(&ep, "forces");
                verr(c, lp.s, "not available on a body with \"fracture\" yet");
            }
            if (b->num_tractions) {
                jpath lp = pkey(&ep, "tractions");
                verr(c, lp.s, "not available on a body with \"fracture\" yet");
            }
        }
        if (s->integrator == INTEGRATOR_NEWMARK) {
            /* moving bones (quasistatic) and kinematic handles
             * (backward_euler); newmark's fixed nodes stay at rest */
            for (int f = 0; f < b->num_fixed; f++)
                if (b->fixed[f].has_motion) {
                    jpath xp = pkey(&ep, "fixed");
                    jpath fi = pidx(&xp, (size_t)f);
                    jpath mp = pkey(&fi, "motion");
                    verr(c, mp.s,
                         "needs integrator 'quasistatic' (moving bones) or 'backward_euler' "
                         "(kinematic handles)");
                }
        }
    }
    json_t *cols = get_arr(c, root, &p, "colliders");
    if (cols) {
        jpath cp = pkey(&p, "colliders");
        size_t n = json_array_size(cols);
        s->colliders = n ? defo_calloc(n, sizeof *s->colliders) : NULL;
        if (n && !s->colliders) c->oom = 1;
        for (size_t i = 0; i < n && s->colliders; i++) {
            json_t *o = json_array_get(cols, i);
            jpath ep = pidx(&cp, i);
            if (!json_is_object(o)) {
                verr(c, ep.s, "expected an object, got %s", type_name(o));
                continue;
            }
            parse_collider(c, o, &ep, &s->colliders[s->num_colliders++], i);
        }
    }

    defo_scene_outputs *o = &s->outputs;
    o->vtu = 1;
    o->surface_obj = 1;
    o->png = 0;
    o->png_width = 640;
    o->png_height = 480;
    snprintf(o->png_color, sizeof o->png_color, "J");
    o->checkpoint = 1;
    o->fields = DEFO_OUT_FIELD_ALL;
    json_t *outs = get_obj(c, root, &p, "outputs");
    if (outs) {
        jpath op = pkey(&p, "outputs");
        parse_outputs(c, outs, &op, o);
    }
}

/* Hash of the physics in canonical form: keys sorted, numbers as jansson
 * prints them (%.17g, round-trip exact). */
static uint64_t physics_hash(json_t *root) {
    static const char *const keys[] = {"gravity", "integrator", "bodies", "colliders"};
    uint64_t h = SCENE_FNV_BASIS;
    for (int i = 0; i < 4; i++) {
        json_t *v = json_object_get(root, keys[i]);
        h = defo_scene_fnv1a(h, keys[i], strlen(keys[i]) + 1);
        if (!v) continue;
        char *t = json_dumps(v, JSON_SORT_KEYS | JSON_COMPACT | JSON_ENCODE_ANY);
        if (t) h = defo_scene_fnv1a(h, t, strlen(t));
        free(t);
    }
    return h;
}

defo_status defo_scene_parse(const char *text, size_t length, const char *name,
                             const char *base_dir, defo_scene **out, defo_scene_errors *errors) {
    if (errors) memset(errors, 0, sizeof *errors);
    if (!out || !text) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_scene_parse: NULL");
    *out = NULL;
    vctx c = {name ? name : "scene", {0, NULL}, 0};
    json_error_t je;
    json_t *root = json_loadb(text, length, JSON_REJECT_DUPLICATES, &je);
    defo_status status = DEFO_OK;
    defo_scene *s = NULL;
    if (!root) {
        /* compiler style "file:line:column: reason", as editors expect */
        char name_pos[1200];
        snprintf(name_pos, sizeof name_pos, "%.1000s:%d:%d", c.name, je.line, je.column);
        const char *saved = c.name;
        c.name = name_pos;
        verr(&c, "", "%s", je.text);
        c.name = saved;
        status = DEFO_ERR_PARSE;
    } else if (!json_is_object(root)) {
        verr(&c, "", "a scene is a JSON object {...}, not %s", type_name(root));
        status = DEFO_ERR_INVALID_ARGUMENT;
    } else {
        s = defo_calloc(1, sizeof *s);
        if (!s) {
            json_decref(root);
            return defo_error_oom("scene", sizeof *s);
        }
        parse_root(&c, root, s, base_dir);
        if (c.oom) status = DEFO_ERR_OUT_OF_MEMORY;
        if (!status && c.errs.count) status = DEFO_ERR_INVALID_ARGUMENT;
        if (!status) {
            s->hash = physics_hash(root);
            json_object_set_new(root, "base_dir", json_string(s->base_dir));
            s->canonical = copy_jansson_string(json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS));
            if (!s->canonical) status = defo_error_oom("scene text", length);
        }
    }
    json_decref(root);
    if (status) {
        scene_free(s);
        if (status == DEFO_ERR_OUT_OF_MEMORY) {
            defo_scene_errors_free(&c.errs);
            return defo_error_oom("scene", length);
        }
        defo_error(status, "%s", c.errs.count ? c.errs.lines[0] : "invalid scene");
        if (errors)
            *errors = c.errs;
        else
            defo_scene_errors_free(&c.errs);
        return status;
    }
    defo_scene_errors_free(&c.errs);
    *out = s;
    return DEFO_OK;
}

defo_status defo_scene_load(const char *path, defo_scene **out, defo_scene_errors *errors) {
    if (errors) memset(errors, 0, sizeof *errors);
    if (!out || !path) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_scene_load: NULL");
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return defo_error(DEFO_ERR_IO, "%s: cannot open the scene file", path);
    size_t cap = 1 << 14, n = 0;
    char *buf = defo_malloc(cap);
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n < cap) break;
        if (cap > ((size_t)1 << 30)) {
            defo_free(buf);
            fclose(f);
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: scene file larger than 1 GiB", path);
        }
        char *nb = defo_realloc(buf, cap * 2);
        if (!nb) defo_free(buf);
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf) return defo_error_oom("scene file", cap);
    if (err) {
        defo_free(buf);
        return defo_error(DEFO_ERR_IO, "%s: read error", path);
    }
    char dir[SCENE_PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    else
        snprintf(dir, sizeof dir, ".");
    defo_status s = defo_scene_parse(buf, n, path, dir, out, errors);
    defo_free(buf);
    return s;
}

const char *defo_scene_name(const defo_scene *s) {
    return s->name;
}
int defo_scene_frames(const defo_scene *s) {
    return s->frames;
}
double defo_scene_fps(const defo_scene *s) {
    return s->fps;
}
uint64_t defo_scene_hash(const defo_scene *s) {
    return s->hash;
}
char *defo_scene_dump(const defo_scene *s) {
    size_t n = strlen(s->canonical) + 1;
    char *d = defo_malloc(n);
    if (d) memcpy(d, s->canonical, n);
    return d;
}
void defo_free_string(char *str) {
    defo_free(str);
}
const defo_scene_outputs *defo_scene_get_outputs(const defo_scene *s) {
    return &s->outputs;
}
int defo_scene_num_colliders(const defo_scene *s) {
    return s->num_colliders;
}
const defo_collider_def *defo_scene_collider(const defo_scene *s, int i) {
    return i >= 0 && i < s->num_colliders ? &s->colliders[i].def : NULL;
}

/* The files the builder reads (simulation.c: body_mesh, add_embedded). */
static int scene_files(const defo_scene *s, int want, defo_scene_file *out) {
    int n = 0;
    for (int b = 0; b < s->num_bodies; b++) {
        const scene_body *body = &s->bodies[b];
        if (body->source == SRC_FILE || body->source == SRC_SURFACE) {
            if (n == want) {
                out->kind =
                    body->source == SRC_FILE ? DEFO_SCENE_FILE_MESH : DEFO_SCENE_FILE_SURFACE;
                out->body = b;
                out->path = body->file;
            }
            n++;
        }
        if (body->has_embedded) {
            if (n == want) {
                out->kind = DEFO_SCENE_FILE_EMBEDDED;
                out->body = b;
                out->path = body->embedded_file;
            }
            n++;
        }
    }
    return n;
}

int defo_scene_num_files(const defo_scene *s) {
    defo_scene_file f;
    return s ? scene_files(s, -1, &f) : 0;
}

defo_scene_file defo_scene_get_file(const defo_scene *s, int i) {
    defo_scene_file f = {DEFO_SCENE_FILE_MESH, -1, NULL};
    if (s && i >= 0) scene_files(s, i, &f);
    return f;
}
