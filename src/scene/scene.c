/*
 * scene/scene.c — the public scene object (defo/scene.h): parse a JSON text
 * with jansson and validate it against the schema (schema.c), its physics
 * hash, its canonical text, accessors.
 *
 * jansson allocates with malloc (its hook is process-global, so defo leaves it
 * alone); everything defo keeps goes through defo_malloc.
 */
#define _POSIX_C_SOURCE 200809L

#include "scene/scene_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
        defo_free(s->bodies[i].regions);
        defo_free(s->bodies[i].anneal);
        defo_free(s->bodies[i].forces);
        defo_free(s->bodies[i].tractions);
        scene_body_flesh_free(&s->bodies[i]);
    }
    defo_skeleton_destroy(s->skeleton);
    defo_free(s->bodies);
    for (int i = 0; i < s->num_colliders; i++) {
        for (int k = 0; s->colliders[i].meshes && k < s->colliders[i].def.num_shapes; k++)
            defo_mesh_destroy(s->colliders[i].meshes[k]);
        defo_free(s->colliders[i].meshes);
        defo_free(s->colliders[i].shapes);
    }
    defo_free(s->colliders);
    defo_free(s->integrators);
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

/* Hash of the physics in canonical form: keys sorted, numbers as jansson
 * prints them (%.17g, round-trip exact). */
static uint64_t physics_hash(json_t *root) {
    static const char *const keys[] = {"gravity", "integrator", "bodies", "colliders", "skeleton"};
    uint64_t h = SCENE_FNV_BASIS;
    for (int i = 0; i < 5; i++) {
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
    jv_ctx c = {name ? name : "scene", {0, NULL}, 0};
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
        jv_error(&c, "", "%s", je.text);
        c.name = saved;
        status = DEFO_ERR_PARSE;
    } else if (!json_is_object(root)) {
        jv_error(&c, "", "a scene is a JSON object {...}, not %s", jv_type_name(root));
        status = DEFO_ERR_INVALID_ARGUMENT;
    } else {
        s = defo_calloc(1, sizeof *s);
        if (!s) {
            json_decref(root);
            return defo_error_oom("scene", sizeof *s);
        }
        scene_parse_root(&c, root, s, base_dir);
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
