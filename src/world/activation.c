/*
 * world/activation.c — activation of the fibre term's active curve (ITF04
 * §6.1 muscle, TSIF05 §11; defo/world.h): groups of elements with a
 * keyframed schedule or a controller's level, evaluated at each step's end
 * time into one level per element, which the body's force model reads
 * (defo_force_model_set_activation).
 *
 * Schedule between keys k and k+1: α = α_k + s (α_{k+1} − α_k) with s the
 * time fraction (LINEAR) or s²(3 − 2s) of it (SMOOTH); held outside the
 * keys.  Levels stay in [0, 1] (a convex combination of keys in [0, 1]).
 *
 * Invariants: an element follows the last group that selects it; levels
 * change only through defo_world_activation_update and the API calls, and
 * a change is reported so the stepper knows the forces moved
 * (DEFO_CHANGED_MODEL).  No allocation while stepping.
 */
#include "world/world_internal.h"

#include <math.h>
#include <string.h>

defo_activation_def defo_default_activation_def(void) {
    defo_activation_def d;
    memset(&d, 0, sizeof d);
    d.interpolation = DEFO_INTERP_LINEAR;
    return d;
}

void defo_world_activation_free(world_body *b) {
    for (int g = 0; g < b->num_acts; g++) {
        defo_free(b->acts[g].times);
        defo_free(b->acts[g].levels);
    }
    defo_free(b->acts);
    defo_free(b->act_of);
    defo_free(b->activation);
    b->acts = NULL;
    b->act_of = NULL;
    b->activation = NULL;
    b->num_acts = 0;
}

static double group_level(const world_activation *a, double t) {
    const int n = a->num_keys;
    if (n == 0) return a->level;
    if (t <= a->times[0]) return a->levels[0];
    if (t >= a->times[n - 1]) return a->levels[n - 1];
    int lo = 0, hi = n - 1;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (a->times[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    double s = (t - a->times[lo]) / (a->times[lo + 1] - a->times[lo]);
    if (a->interpolation == DEFO_INTERP_SMOOTH) s = s * s * (3.0 - 2.0 * s);
    return a->levels[lo] + s * (a->levels[lo + 1] - a->levels[lo]);
}

int defo_world_activation_update(world_body *b, double t) {
    if (!b->num_acts) return 0;
    int changed = 0;
    const defo_index ne = b->mesh->num_elems;
    for (defo_index e = 0; e < ne; e++) {
        const int g = b->act_of[e];
        const double a = g >= 0 ? group_level(&b->acts[g], t) : 0.0;
        if (a != b->activation[e]) {
            b->activation[e] = a;
            changed = 1;
        }
    }
    return changed;
}

static world_body *body_of(defo_world *w, defo_body_id id) {
    if (!defo_body_is_valid(w, id)) return NULL;
    return &w->bodies[id.index];
}

static defo_status check_level(double a) {
    if (!(a >= 0 && a <= 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "activation level: %g is not in [0, 1]", a);
    return DEFO_OK;
}

/* Element e in the group's region: every corner marked, or the tag. */
static int selected(const world_body *b, const defo_region *r, const unsigned char *mark,
                    defo_index e) {
    if (!r) return 1;
    if (r->kind == DEFO_REGION_TAG) return b->mesh->elem_tag && b->mesh->elem_tag[e] == r->tag;
    const int P = b->mesh->nodes_per_elem;
    for (int c = 0; c < 4; c++)
        if (!mark[b->mesh->elems[(size_t)e * (size_t)P + (size_t)c]]) return 0;
    return 1;
}

defo_status defo_body_add_activation(defo_world *w, defo_body_id id, const defo_activation_def *def,
                                     int *group) {
    world_body *b = body_of(w, id);
    if (!b || !def)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_add_activation: invalid body id");
    if (def->interpolation != DEFO_INTERP_LINEAR && def->interpolation != DEFO_INTERP_SMOOTH)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "activation interpolation: %d is unknown",
                          (int)def->interpolation);
    if (def->num_keys < 0 || (def->num_keys > 0 && (!def->times || !def->levels)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "activation: %d keys without times or levels",
                          def->num_keys);
    if (def->num_keys == 0) {
        defo_status s = check_level(def->level);
        if (s) return s;
    }
    for (int k = 0; k < def->num_keys; k++) {
        if (!isfinite(def->times[k]) || (k > 0 && !(def->times[k] > def->times[k - 1])))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "activation key %d: time %g does not follow %g", k, def->times[k],
                              k ? def->times[k - 1] : -INFINITY);
        if (!(def->levels[k] >= 0 && def->levels[k] <= 1))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "activation key %d: level %g is not in [0, 1]", k, def->levels[k]);
    }
    const defo_index ne = b->mesh->num_elems, n = b->n;
    /* the selected elements: all corners marked, or the tag */
    unsigned char *mark = NULL;
    if (def->region && def->region->kind != DEFO_REGION_TAG) {
        mark = defo_calloc((size_t)n + 1, 1);
        if (!mark) return defo_error_oom("activation region", (size_t)n);
        defo_status s = defo_region_mark(b->mesh, def->region, mark);
        if (s) {
            defo_free(mark);
            return s;
        }
    }
    if (!b->act_of) {
        b->act_of = defo_malloc((size_t)ne * sizeof *b->act_of + 1);
        b->activation = defo_calloc((size_t)ne + 1, sizeof *b->activation);
        if (!b->act_of || !b->activation) {
            defo_free(mark);
            defo_free(b->act_of), defo_free(b->activation);
            b->act_of = NULL, b->activation = NULL;
            return defo_error_oom("activation", (size_t)ne * 12);
        }
        for (defo_index e = 0; e < ne; e++) b->act_of[e] = -1;
    }
    world_activation *na = defo_realloc(b->acts, (size_t)(b->num_acts + 1) * sizeof *na);
    if (!na) {
        defo_free(mark);
        return defo_error_oom("activation groups", sizeof *na);
    }
    b->acts = na;
    world_activation a = {def->num_keys, NULL, NULL, def->level, def->interpolation};
    if (def->num_keys) {
        a.times = defo_malloc((size_t)def->num_keys * sizeof(double));
        a.levels = defo_malloc((size_t)def->num_keys * sizeof(double));
        if (!a.times || !a.levels) {
            defo_free(a.times), defo_free(a.levels), defo_free(mark);
            return defo_error_oom("activation keys", (size_t)def->num_keys * 16);
        }
        memcpy(a.times, def->times, (size_t)def->num_keys * sizeof(double));
        memcpy(a.levels, def->levels, (size_t)def->num_keys * sizeof(double));
    }
    const int g = b->num_acts;
    defo_index count = 0;
    for (defo_index e = 0; e < ne; e++) count += selected(b, def->region, mark, e);
    if (!count) {
        defo_free(a.times), defo_free(a.levels), defo_free(mark);
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "activation: the region selects no element of "
                          "body '%s'",
                          b->name);
    }
    for (defo_index e = 0; e < ne; e++)
        if (selected(b, def->region, mark, e)) b->act_of[e] = g;
    defo_free(mark);
    b->acts[g] = a;
    b->num_acts++;
    defo_force_model_set_activation(b->force, b->activation);
    if (defo_world_activation_update(b, w->time)) b->sb.changed |= DEFO_CHANGED_MODEL;
    if (group) *group = g;
    return DEFO_OK;
}

defo_status defo_body_set_activation(defo_world *w, defo_body_id id, int group, double level) {
    world_body *b = body_of(w, id);
    if (!b || group < 0 || group >= (b ? b->num_acts : 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_body_set_activation: bad body or group %d", group);
    defo_status s = check_level(level);
    if (s) return s;
    world_activation *a = &b->acts[group];
    defo_free(a->times), defo_free(a->levels);
    a->times = a->levels = NULL;
    a->num_keys = 0;
    a->level = level;
    if (defo_world_activation_update(b, w->time)) b->sb.changed |= DEFO_CHANGED_MODEL;
    return DEFO_OK;
}

const double *defo_body_activation(const defo_world *w, defo_body_id id) {
    if (!defo_body_is_valid(w, id)) return NULL;
    return w->bodies[id.index].activation;
}
