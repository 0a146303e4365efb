/*
 * scene/schema_flesh.c — the flesh part of the scene schema (docs/scene-
 * format.md "skeleton", "material.fibres", "activation", "bone"): animated
 * skeletons from a BVH file or scene keyframes (TSIF05 §11), node sets and
 * colliders that follow bones, transversely isotropic materials (ITF04
 * §6.1) with their fibre directions, and activation schedules.
 *
 * As the rest of the schema: every error collected with its JSON path; a
 * BVH file is read at parse time, so `defo validate` reports its defects as
 * "skeleton.file: arm.bvh:12: reason".  The skeleton is the scene's (freed
 * with it); motions that follow a bone borrow it.
 */
#include "scene/scene_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* ------------------------------------------------------------ skeleton */
/* {"axis": [3], "angle_deg": a} as a quaternion (w, x, y, z) */
static void parse_quat(jv_ctx *c, json_t *o, const jv_path *p, const char *key, double q[4]) {
    q[0] = 1, q[1] = q[2] = q[3] = 0;
    json_t *r = jv_obj(c, o, p, key);
    if (!r) return;
    jv_path rp = jv_key(p, key);
    static const char *const keys[] = {"axis", "angle_deg", NULL};
    jv_check_keys(c, r, &rp, keys);
    double axis[3] = {0, 0, 1}, deg = 0;
    jv_dir(c, r, &rp, "axis", axis);
    jv_num(c, r, &rp, "angle_deg", JV_ANY, &deg);
    const double h = 0.5 * deg * (M_PI / 180.0);
    q[0] = cos(h);
    for (int k = 0; k < 3; k++) q[k + 1] = sin(h) * axis[k];
}

/* "joints": [{"name", "parent", "offset", "keyframes": [{"time", "rotate", "translate"}]}] */
static void parse_joints(jv_ctx *c, json_t *arr, const jv_path *p, defo_scene *s,
                         const defo_skeleton_place *pl) {
    const size_t n = json_array_size(arr);
    if (!n) {
        jv_error(c, p->s, "needs at least one joint");
        return;
    }
    defo_joint_def *j = defo_calloc(n, sizeof *j);
    double **pool = defo_calloc(n, sizeof *pool);
    char(*names)[DEFO_NAME_MAX] = defo_calloc(n, DEFO_NAME_MAX);
    if (!j || !pool || !names) {
        c->oom = 1;
        goto done;
    }
    const int before = c->errs.count;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(arr, i);
        jv_path ip = jv_index(p, i);
        j[i].parent = -1;
        j[i].name = names[i];
        snprintf(names[i], DEFO_NAME_MAX, "joint%zu", i);
        if (!json_is_object(o)) {
            jv_error(c, ip.s, "expected an object, got %s", jv_type_name(o));
            continue;
        }
        static const char *const keys[] = {"name", "parent", "offset", "keyframes", NULL};
        jv_check_keys(c, o, &ip, keys);
        const char *nm = jv_str(c, o, &ip, "name");
        if (nm) snprintf(names[i], DEFO_NAME_MAX, "%s", nm);
        const char *par = jv_str(c, o, &ip, "parent");
        if (par) {
            for (size_t k = 0; k < i; k++)
                if (!strcmp(names[k], par)) j[i].parent = (int)k;
            if (j[i].parent < 0) {
                jv_path pp = jv_key(&ip, "parent");
                jv_error(c, pp.s, "'%s' is not an earlier joint", par);
            }
        }
        jv_vec3(c, o, &ip, "offset", JV_ANY, j[i].offset);
        json_t *keys_arr = jv_arr(c, o, &ip, "keyframes");
        const size_t nk = keys_arr ? json_array_size(keys_arr) : 0;
        if (!nk) continue;
        pool[i] = defo_calloc(8 * nk, sizeof(double));
        if (!pool[i]) {
            c->oom = 1;
            continue;
        }
        double *t = pool[i], *q = t + nk, *tr = q + 4 * nk;
        jv_path kp = jv_key(&ip, "keyframes");
        for (size_t k = 0; k < nk; k++) {
            json_t *e = json_array_get(keys_arr, k);
            jv_path ep = jv_index(&kp, k);
            q[4 * k] = 1;
            if (!json_is_object(e)) {
                jv_error(c, ep.s, "expected {\"time\", \"rotate\", \"translate\"}, got %s",
                         jv_type_name(e));
                continue;
            }
            static const char *const ek[] = {"time", "rotate", "translate", NULL};
            jv_check_keys(c, e, &ep, ek);
            if (!json_object_get(e, "time")) jv_error(c, ep.s, "needs \"time\"");
            jv_num(c, e, &ep, "time", JV_NONNEG, &t[k]);
            if (k > 0 && !(t[k] > t[k - 1]))
                jv_error(c, ep.s, "times must increase (%g after %g)", t[k], t[k - 1]);
            parse_quat(c, e, &ep, "rotate", q + 4 * k);
            jv_vec3(c, e, &ep, "translate", JV_ANY, tr + 3 * k);
        }
        j[i].num_keys = (int)nk;
        j[i].times = t;
        j[i].rotations = q;
        j[i].translations = tr;
    }
    if (c->errs.count == before && !c->oom &&
        defo_skeleton_create(j, (int)n, pl, &s->skeleton) != DEFO_OK)
        jv_error(c, p->s, "%s", defo_last_error());
done:
    for (size_t i = 0; pool && i < n; i++) defo_free(pool[i]);
    defo_free(pool);
    defo_free(j);
    defo_free(names);
}

void scene_parse_skeleton(jv_ctx *c, json_t *o, const jv_path *p, defo_scene *s) {
    static const char *const keys[] = {"file",       "joints",        "transform",
                                       "bind_frame", "interpolation", NULL};
    jv_check_keys(c, o, p, keys);
    defo_skeleton_place pl = defo_default_skeleton_place();
    json_t *t = jv_obj(c, o, p, "transform");
    if (t) {
        jv_path tp = jv_key(p, "transform");
        static const char *const tk[] = {"scale", "rotate", "translate", NULL};
        jv_check_keys(c, t, &tp, tk);
        jv_num(c, t, &tp, "scale", JV_POS, &pl.scale);
        double q[4];
        parse_quat(c, t, &tp, "rotate", q);
        const double w = q[0], x = q[1], y = q[2], z = q[3];
        const double R[9] = {
            1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
            2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
            2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
        memcpy(pl.rotation, R, sizeof R);
        jv_vec3(c, t, &tp, "translate", JV_ANY, pl.translate);
    }
    jv_int(c, o, p, "bind_frame", 0, 100000000, &pl.bind_frame);
    const char *interp = jv_str(c, o, p, "interpolation");
    if (interp) {
        static const char *const words[] = {"linear", "smooth", NULL};
        jv_path ip = jv_key(p, "interpolation");
        const int k = jv_word(c, interp, &ip, words);
        if (k >= 0) pl.interpolation = (defo_interpolation)k;
    }
    const int has_file = json_object_get(o, "file") != NULL,
              has_joints = json_object_get(o, "joints") != NULL;
    if (has_file + has_joints != 1) {
        jv_error(c, p->s, "give \"file\" (a .bvh motion capture) or \"joints\", not %s",
                 has_file ? "both" : "neither");
        return;
    }
    if (has_file) {
        char path[JV_PATH_MAX];
        if (!jv_file(c, o, p, "file", s->base_dir, path)) return;
        jv_path fp = jv_key(p, "file");
        if (defo_skeleton_read_bvh(path, &pl, &s->skeleton) != DEFO_OK)
            jv_error(c, fp.s, "%s", defo_last_error());
        return;
    }
    json_t *arr = jv_arr(c, o, p, "joints");
    if (arr) {
        jv_path jp = jv_key(p, "joints");
        parse_joints(c, arr, &jp, s, &pl);
    }
}

int scene_parse_bone(jv_ctx *c, json_t *m, const jv_path *p, const defo_scene *s,
                     defo_motion_def *motion) {
    if (!json_object_get(m, "bone")) return 0;
    const char *name = jv_str(c, m, p, "bone");
    if (!name) return 0;
    jv_path bp = jv_key(p, "bone");
    if (!s->skeleton) {
        jv_error(c, bp.s, "'%s': the scene has no \"skeleton\" (or it did not load)", name);
        return 0;
    }
    const int b = defo_skeleton_find(s->skeleton, name);
    if (b < 0) {
        const int n = defo_skeleton_num_bones(s->skeleton);
        const char **words = defo_calloc((size_t)n + 1, sizeof *words);
        if (!words) {
            c->oom = 1;
            return 0;
        }
        char list[512] = "";
        size_t len = 0;
        for (int i = 0; i < n; i++) {
            words[i] = defo_skeleton_bone_name(s->skeleton, i);
            if (len < sizeof list - 80) {
                const int k =
                    snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", words[i]);
                if (k > 0) len += (size_t)k;
            }
        }
        const char *near = jv_nearest(name, words);
        if (near)
            jv_error(c, bp.s, "'%s' is not a bone of the skeleton (did you mean '%s'?)", name,
                     near);
        else
            jv_error(c, bp.s, "'%s' is not a bone of the skeleton (bones: %s)", name, list);
        defo_free(words);
        return 0;
    }
    *motion = defo_default_motion_def();
    motion->skeleton = s->skeleton;
    motion->bone = b;
    return 1;
}

/* ------------------------------------------------------------- fibres */
static const char *const fibre_keys[] = {"direction", "field",  "line_of_action",
                                         "passive",   "active", NULL};

void scene_parse_fibre_curves(jv_ctx *c, json_t *f, const jv_path *p, defo_material_def *mat) {
    jv_check_keys(c, f, p, fibre_keys);
    defo_fibre_def *d = &mat->fibre;
    json_t *pas = json_object_get(f, "passive");
    jv_path pp = jv_key(p, "passive");
    if (pas && json_is_string(pas)) {
        if (strcmp(json_string_value(pas), "none"))
            jv_error(c, pp.s, "expected \"none\" or an object {\"curve\": ...}, got '%s'",
                     json_string_value(pas));
        else
            d->passive = DEFO_FIBRE_PASSIVE_NONE;
    } else if (pas && json_is_object(pas)) {
        const char *curve = jv_str(c, pas, &pp, "curve");
        int k = 0; /* exponential unless said */
        if (curve) {
            static const char *const words[] = {"exponential", "polynomial", NULL};
            jv_path cp = jv_key(&pp, "curve");
            k = jv_word(c, curve, &cp, words);
        }
        if (k == 0) {
            static const char *const keys[] = {"curve", "stress", "rate", "linear_from", NULL};
            jv_check_keys(c, pas, &pp, keys);
            d->passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL;
            jv_num(c, pas, &pp, "stress", JV_NONNEG, &d->exp_stress);
            jv_num(c, pas, &pp, "rate", (jv_range){0, 1000, 1, 1}, &d->exp_rate);
            jv_num(c, pas, &pp, "linear_from", (jv_range){1, 10, 0, 1}, &d->linear_stretch);
        } else if (k == 1) {
            static const char *const keys[] = {"curve", "c2", "c3", NULL};
            jv_check_keys(c, pas, &pp, keys);
            d->passive = DEFO_FIBRE_PASSIVE_POLYNOMIAL;
            jv_num(c, pas, &pp, "c2", JV_NONNEG, &d->poly2);
            jv_num(c, pas, &pp, "c3", JV_NONNEG, &d->poly3);
        }
    } else if (pas) {
        jv_error(c, pp.s, "expected \"none\" or an object, got %s", jv_type_name(pas));
    }
    json_t *act = jv_obj(c, f, p, "active");
    if (act) {
        jv_path ap = jv_key(p, "active");
        static const char *const keys[] = {"max_stress", "optimal_stretch", "width", NULL};
        jv_check_keys(c, act, &ap, keys);
        if (!json_object_get(act, "max_stress"))
            jv_error(c, ap.s, "needs \"max_stress\" (the active curve's peak, Pa > 0)");
        jv_num(c, act, &ap, "max_stress", JV_POS, &d->max_active_stress);
        jv_num(c, act, &ap, "optimal_stretch", (jv_range){0, 10, 0, 1}, &d->optimal_stretch);
        jv_num(c, act, &ap, "width", (jv_range){0, 1, 0, 0}, &d->active_width);
    }
}

/* A node set {box | sphere | plane | tag} at o[key]. */
static void parse_set(jv_ctx *c, json_t *o, const jv_path *p, const char *key, scene_fix *x) {
    json_t *r = jv_obj(c, o, p, key);
    jv_path rp = jv_key(p, key);
    if (!r) {
        if (!json_object_get(o, key))
            jv_error(c, rp.s,
                     "missing (a node set: {\"box\"}, {\"sphere\"}, {\"plane\"} or "
                     "{\"tag\"})");
        return;
    }
    static const char *const keys[] = {"box", "sphere", "plane", "tag", NULL};
    jv_check_keys(c, r, &rp, keys);
    scene_parse_region(c, r, &rp, x, 1);
}

void scene_parse_fibre_source(jv_ctx *c, json_t *f, const jv_path *p, scene_body *b) {
    scene_fibres *fs = &b->fibres;
    int n = 0;
    if (json_object_get(f, "direction")) {
        n++;
        if (jv_dir(c, f, p, "direction", fs->direction)) fs->source = FIBRES_DIRECTION;
    }
    const char *field = jv_str(c, f, p, "field");
    if (field) {
        n++;
        jv_path fp = jv_key(p, "field");
        if (!field[0] || strlen(field) >= DEFO_NAME_MAX)
            jv_error(c, fp.s, "an array name of 1 to %d bytes", DEFO_NAME_MAX - 1);
        else if (b->source != SRC_FILE)
            jv_error(c, fp.s,
                     "'%s': a field is read from the body's \"mesh\" file (this body is "
                     "generated or meshed from a surface: give \"direction\" or "
                     "\"line_of_action\")",
                     field);
        else {
            snprintf(fs->field, sizeof fs->field, "%s", field);
            fs->source = FIBRES_FIELD;
        }
    }
    json_t *loa = jv_obj(c, f, p, "line_of_action");
    if (loa) {
        n++;
        jv_path lp = jv_key(p, "line_of_action");
        static const char *const keys[] = {"from", "to", NULL};
        jv_check_keys(c, loa, &lp, keys);
        parse_set(c, loa, &lp, "from", &fs->from);
        parse_set(c, loa, &lp, "to", &fs->to);
        fs->source = FIBRES_LINE;
    }
    if (n > 1) {
        jv_error(c, p->s, "give one of \"direction\", \"field\" or \"line_of_action\" (found %d)",
                 n);
        fs->source = FIBRES_NONE;
    }
}

/* ---------------------------------------------------------- activation */
static void parse_group(jv_ctx *c, json_t *o, const jv_path *p, scene_activation *a) {
    a->interpolation = DEFO_INTERP_LINEAR;
    if (json_is_number(o)) {
        jv_range r = {0, 1, 1, 1};
        const double v = json_number_value(o);
        if (!jv_in_range(v, r))
            jv_range_error(c, p, v, r);
        else
            a->level = v;
        return;
    }
    if (!json_is_object(o)) {
        jv_error(c, p->s,
                 "expected a level in [0, 1] or an object {\"level\" | \"keyframes\"}, "
                 "got %s",
                 jv_type_name(o));
        return;
    }
    static const char *const keys[] = {"level",  "keyframes", "interpolation", "box",
                                       "sphere", "plane",     "tag",           NULL};
    jv_check_keys(c, o, p, keys);
    if (json_object_get(o, "box") || json_object_get(o, "sphere") || json_object_get(o, "plane") ||
        json_object_get(o, "tag"))
        a->has_region = scene_parse_region(c, o, p, &a->region, 1);
    const char *interp = jv_str(c, o, p, "interpolation");
    if (interp) {
        static const char *const words[] = {"linear", "smooth", NULL};
        jv_path ip = jv_key(p, "interpolation");
        const int k = jv_word(c, interp, &ip, words);
        if (k >= 0) a->interpolation = (defo_interpolation)k;
    }
    const int has_level = json_object_get(o, "level") != NULL;
    json_t *keys_arr = jv_arr(c, o, p, "keyframes");
    if (has_level + (json_object_get(o, "keyframes") != NULL) != 1) {
        jv_error(c, p->s, "give \"level\" or \"keyframes\" ([[time, level], ...]), not %s",
                 has_level ? "both" : "neither");
        return;
    }
    if (has_level) {
        jv_num(c, o, p, "level", (jv_range){0, 1, 1, 1}, &a->level);
        return;
    }
    const size_t n = keys_arr ? json_array_size(keys_arr) : 0;
    jv_path kp = jv_key(p, "keyframes");
    if (!n) {
        if (keys_arr) jv_error(c, kp.s, "needs at least one [time, level]");
        return;
    }
    a->times = defo_calloc(n, sizeof(double));
    a->levels = defo_calloc(n, sizeof(double));
    if (!a->times || !a->levels) {
        c->oom = 1;
        return;
    }
    a->num_keys = (int)n;
    for (size_t k = 0; k < n; k++) {
        json_t *e = json_array_get(keys_arr, k);
        jv_path ep = jv_index(&kp, k);
        if (!json_is_array(e) || json_array_size(e) != 2 || !json_is_number(json_array_get(e, 0)) ||
            !json_is_number(json_array_get(e, 1))) {
            jv_error(c, ep.s, "expected [time, level]");
            continue;
        }
        const double t = json_number_value(json_array_get(e, 0)),
                     v = json_number_value(json_array_get(e, 1));
        if (!(t >= 0) || !isfinite(t)) {
            jv_path tp = jv_index(&ep, 0);
            jv_error(c, tp.s, "time %g is not >= 0", t);
        } else if (k > 0 && !(t > a->times[k - 1])) {
            jv_path tp = jv_index(&ep, 0);
            jv_error(c, tp.s, "times must increase (%g after %g)", t, a->times[k - 1]);
        }
        if (!(v >= 0 && v <= 1)) {
            jv_path vp = jv_index(&ep, 1);
            jv_error(c, vp.s, "level %g is not in [0, 1]", v);
        }
        a->times[k] = t;
        a->levels[k] = v;
    }
}

void scene_parse_activation(jv_ctx *c, json_t *v, const jv_path *p, scene_body *b) {
    const size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (json_is_array(v) && !n) return;
    b->acts = defo_calloc(n, sizeof *b->acts);
    if (!b->acts) {
        c->oom = 1;
        return;
    }
    b->num_acts = (int)n;
    if (!json_is_array(v)) {
        parse_group(c, v, p, &b->acts[0]);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        jv_path ip = jv_index(p, i);
        parse_group(c, json_array_get(v, i), &ip, &b->acts[i]);
    }
}

void scene_check_fibres(jv_ctx *c, const jv_path *p, const scene_body *b) {
    const defo_fibre_def *f = &b->material.fibre;
    const int term = f->passive != DEFO_FIBRE_PASSIVE_NONE || f->max_active_stress > 0;
    jv_path mp = jv_key(p, "material"), fp = jv_key(&mp, "fibres");
    if (term && b->fibres.source == FIBRES_NONE)
        jv_error(c, fp.s,
                 "a fibre term needs its directions: give \"direction\", \"field\" or "
                 "\"line_of_action\"");
    if (!term && b->fibres.source != FIBRES_NONE)
        jv_error(c, fp.s, "directions without a fibre term: give \"passive\" or \"active\"");
    if (term && b->formulation == DEFO_FORMULATION_COROTATED) {
        jv_path op = jv_key(p, "formulation");
        jv_error(c, op.s,
                 "'corotated' cannot carry a fibre term: its stress is linear in a lagged rotated "
                 "strain (MG04 §2.3), the fibre stress (ITF04 §6.1) nonlinear in the fibre "
                 "stretch |F a|; use \"invertible\"");
    }
    if (b->num_acts && !(f->max_active_stress > 0)) {
        jv_path ap = jv_key(p, "activation");
        jv_error(c, ap.s,
                 "the material has no active fibre term to activate "
                 "(material.fibres.active.max_stress)");
    }
}

void scene_body_flesh_free(scene_body *b) {
    for (int i = 0; i < b->num_acts; i++) {
        defo_free(b->acts[i].times);
        defo_free(b->acts[i].levels);
    }
    defo_free(b->acts);
    b->acts = NULL;
    b->num_acts = 0;
}
