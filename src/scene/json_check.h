/*
 * scene/json_check.h — the JSON validator the scene schema is written with
 * (json_check.c).  Internal to the scene module.
 */
#ifndef DEFO_SCENE_JSON_CHECK_H
#define DEFO_SCENE_JSON_CHECK_H

#include "defo/scene.h"

#include "base/base.h"

#include <jansson.h>

#define JV_PATH_MAX 4096

/* The error list being collected; name prefixes every message. */
typedef struct jv_ctx {
    const char *name;
    defo_scene_errors errs;
    int oom;
} jv_ctx;

/* A JSON path such as "bodies[1].material.poisson". */
typedef struct jv_path {
    char s[256];
} jv_path;

/* Range of a number: lo/hi (±INFINITY for none) with inclusive flags. */
typedef struct jv_range {
    double lo, hi;
    int lo_inc, hi_inc;
} jv_range;
extern const jv_range JV_ANY, JV_POS, JV_NONNEG;

void jv_error(jv_ctx *c, const char *path, const char *fmt, ...) DEFO_PRINTF(3, 4);
jv_path jv_key(const jv_path *p, const char *key);
jv_path jv_index(const jv_path *p, size_t i);
void jv_check_keys(jv_ctx *c, json_t *obj, const jv_path *p, const char *const *allowed);
int jv_in_range(double v, jv_range r);
void jv_range_error(jv_ctx *c, const jv_path *p, double v, jv_range r);
int jv_num(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, jv_range r, double *out);
int jv_int(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, long lo, long hi, int *out);
int jv_bool(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, int *out);
int jv_vec3_value(jv_ctx *c, json_t *v, const jv_path *kp, jv_range r, double out[3]);
int jv_vec3(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, jv_range r, double out[3]);
int jv_dir(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, double out[3]);
const char *jv_nearest(const char *word, const char *const *allowed);
const char *jv_type_name(const json_t *v);
const char *jv_str(jv_ctx *c, json_t *obj, const jv_path *p, const char *key);
json_t *jv_obj(jv_ctx *c, json_t *obj, const jv_path *p, const char *key);
json_t *jv_arr(jv_ctx *c, json_t *obj, const jv_path *p, const char *key);
int jv_word(jv_ctx *c, const char *s, const jv_path *kp, const char *const *words);
int jv_file(jv_ctx *c, json_t *obj, const jv_path *p, const char *key, const char *base,
            char out[JV_PATH_MAX]);

#endif
