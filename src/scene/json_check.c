/*
 * scene/json_check.c — a small validator for JSON documents (jansson):
 * every error collected as one line "NAME: json.path: reason", unknown keys
 * reported with the nearest allowed key by edit distance, typed getters
 * with ranges, names of files that must exist.  Nothing here knows about
 * scenes; schema.c describes the scene with it.
 */
#define _POSIX_C_SOURCE 200809L

#include "scene/json_check.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------- errors */

void jv_error(jv_ctx *c, const char *path, const char *fmt, ...) DEFO_PRINTF(3, 4);
void jv_error(jv_ctx *c, const char *path, const char *fmt, ...) {
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

/* Appends by hand: snprintf into a fixed jv_path would warn (truncation) at
 * every call site, and a path longer than 255 bytes is simply cut. */
static void jappend(jv_path *r, const char *s) {
    size_t l = strlen(r->s), n = strlen(s);
    if (l + n >= sizeof r->s) n = sizeof r->s - 1 - l;
    memcpy(r->s + l, s, n);
    r->s[l + n] = 0;
}

jv_path jv_key(const jv_path *p, const char *key) {
    jv_path r = *p;
    if (r.s[0]) jappend(&r, ".");
    jappend(&r, key);
    return r;
}

jv_path jv_index(const jv_path *p, size_t i) {
    jv_path r = *p;
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
const char *jv_nearest(const char *word, const char *const *allowed) {
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

void jv_check_keys(jv_ctx *c, json_t *obj, const jv_path *p, const char *const *allowed) {
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++) ok = !strcmp(key, allowed[i]);
        if (ok) continue;
        jv_path kp = jv_key(p, key);
        const char *near = jv_nearest(key, allowed);
        if (near) {
            jv_error(c, kp.s, "unknown key (did you mean '%s'?)", near);
        } else {
            char words[512];
            list_words(words, sizeof words, allowed);
            jv_error(c, kp.s, "unknown key (allowed: %s)", words);
        }
    }
}

const char *jv_type_name(const json_t *v) {
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
const jv_range JV_ANY = {-INFINITY, INFINITY, 0, 0};
const jv_range JV_POS = {0, INFINITY, 0, 0};
const jv_range JV_NONNEG = {0, INFINITY, 1, 0};

int jv_in_range(double v, jv_range r) {
    if (!isfinite(v)) return 0;
    if (r.lo_inc ? v < r.lo : v <= r.lo) return 0;
    if (r.hi_inc ? v > r.hi : v >= r.hi) return 0;
    return 1;
}

void jv_range_error(jv_ctx *c, const jv_path *p, double v, jv_range r) {
    if (isfinite(r.lo) && isfinite(r.hi))
        jv_error(c, p->s, "%g is not in %c%g, %g%c", v, r.lo_inc ? '[' : '(', r.lo, r.hi,
                 r.hi_inc ? ']' : ')');
    else if (isfinite(r.lo))
        jv_error(c, p->s, "%g is not %s %g", v, r.lo_inc ? ">=" : ">", r.lo);
    else
        jv_error(c, p->s, "%g is not %s %g", v, r.hi_inc ? "<=" : "<", r.hi);
}

/* Optional number: *out keeps its default when the key is absent.  Returns
 * 1 when present and valid. */
int jv_num(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, jv_range r, double *out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    jv_path kp = jv_key(p, key);
    if (!json_is_number(v)) {
        jv_error(c, kp.s, "expected a number, got %s", jv_type_name(v));
        return 0;
    }
    double d = json_number_value(v);
    if (!jv_in_range(d, r)) {
        jv_range_error(c, &kp, d, r);
        return 0;
    }
    *out = d;
    return 1;
}

int jv_int(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, long lo, long hi, int *out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    jv_path kp = jv_key(p, key);
    if (!json_is_integer(v)) {
        jv_error(c, kp.s, "expected an integer, got %s",
                 json_is_real(v) ? "a fraction" : jv_type_name(v));
        return 0;
    }
    json_int_t d = json_integer_value(v);
    if (d < lo || d > hi) {
        jv_error(c, kp.s, "%lld is not in [%ld, %ld]", (long long)d, lo, hi);
        return 0;
    }
    *out = (int)d;
    return 1;
}

int jv_bool(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, int *out) {
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_boolean(v)) {
        jv_path kp = jv_key(p, key);
        jv_error(c, kp.s, "expected true or false, got %s", jv_type_name(v));
        return 0;
    }
    *out = json_is_true(v);
    return 1;
}

const char *jv_str(jv_ctx *c, json_t *obj, const jv_path *p, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v) return NULL;
    if (!json_is_string(v)) {
        jv_path kp = jv_key(p, key);
        jv_error(c, kp.s, "expected a string, got %s", jv_type_name(v));
        return NULL;
    }
    return json_string_value(v);
}

int jv_vec3_value(jv_ctx *c, json_t *v, const jv_path *kp, jv_range r, double out[3]) {
    if (!json_is_array(v) || json_array_size(v) != 3) {
        jv_error(c, kp->s, "expected an array of 3 numbers, got %s", jv_type_name(v));
        return 0;
    }
    double t[3];
    int ok = 1;
    for (size_t i = 0; i < 3; i++) {
        json_t *e = json_array_get(v, i);
        jv_path ep = jv_index(kp, i);
        if (!json_is_number(e)) {
            jv_error(c, ep.s, "expected a number, got %s", jv_type_name(e));
            ok = 0;
        } else if (!jv_in_range(json_number_value(e), r)) {
            jv_range_error(c, &ep, json_number_value(e), r);
            ok = 0;
        } else {
            t[i] = json_number_value(e);
        }
    }
    if (ok) memcpy(out, t, sizeof t);
    return ok;
}

int jv_vec3(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, jv_range r, double out[3]) {
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    jv_path kp = jv_key(p, key);
    return jv_vec3_value(c, v, &kp, r, out);
}

/* Unit-able direction: finite and not zero. */
int jv_dir(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, double out[3]) {
    double d[3];
    if (!jv_vec3(c, obj, p, key, JV_ANY, d)) return 0;
    double n = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(n > 0)) {
        jv_path kp = jv_key(p, key);
        jv_error(c, kp.s, "the direction is zero");
        return 0;
    }
    for (int k = 0; k < 3; k++) out[k] = d[k] / n;
    return 1;
}

json_t *jv_obj(jv_ctx *c, json_t *obj, const jv_path *p, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v) return NULL;
    if (!json_is_object(v)) {
        jv_path kp = jv_key(p, key);
        jv_error(c, kp.s, "expected an object, got %s", jv_type_name(v));
        return NULL;
    }
    return v;
}

json_t *jv_arr(jv_ctx *c, json_t *obj, const jv_path *p, const char *key) {
    json_t *v = json_object_get(obj, key);
    if (!v) return NULL;
    if (!json_is_array(v)) {
        jv_path kp = jv_key(p, key);
        jv_error(c, kp.s, "expected an array, got %s", jv_type_name(v));
        return NULL;
    }
    return v;
}

/* One of the words (NULL-terminated); returns its index or -1. */
int jv_word(jv_ctx *c, const char *s, const jv_path *kp, const char *const *words) {
    for (int i = 0; words[i]; i++)
        if (!strcmp(s, words[i])) return i;
    const char *near = jv_nearest(s, words);
    char list[512];
    list_words(list, sizeof list, words);
    if (near)
        jv_error(c, kp->s, "unknown value '%s' (did you mean '%s'?)", s, near);
    else
        jv_error(c, kp->s, "unknown value '%s' (one of: %s)", s, list);
    return -1;
}

/* A file path relative to base_dir, which must exist. */
int jv_file(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, const char *base,
            char out[JV_PATH_MAX]) {
    const char *f = jv_str(c, obj, p, key);
    if (!f) return 0;
    jv_path kp = jv_key(p, key);
    if (f[0] == '/' || !base[0])
        snprintf(out, JV_PATH_MAX, "%s", f);
    else
        snprintf(out, JV_PATH_MAX, "%s/%s", base, f);
    if (access(out, R_OK) != 0) {
        jv_error(c, kp.s, "file '%s' does not exist or cannot be read", out);
        return 0;
    }
    return 1;
}
