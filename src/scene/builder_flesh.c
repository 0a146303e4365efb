/*
 * scene/builder_flesh.c — a scene body's fibre directions (ITF04 §6.1) and
 * activation groups, built on its transformed rest mesh (defo/fibre.h,
 * defo/world.h).
 *
 * Directions: "direction" is in the scene's frame, as every position and
 * region of a scene; a "field" of the mesh file is in the file's frame and
 * turns with the body's transform x' = R (S x) + t as a material direction
 * does, a' ∝ R S a; a "line_of_action" runs between two node sets selected
 * on the transformed mesh.
 */
#include "scene/scene_internal.h"

#include "defo/fibre.h"

#include <string.h>

defo_status scene_body_fibres(const scene_body *b, const defo_mesh *m, double **out) {
    *out = NULL;
    if (b->fibres.source == FIBRES_NONE) return DEFO_OK;
    const size_t np = defo_fibre_field_points(m);
    double *dir = defo_malloc(3 * np * sizeof(double) + 1);
    if (!dir) return defo_error_oom("fibre directions", 3 * np * sizeof(double));
    defo_status s = DEFO_OK;
    switch (b->fibres.source) {
    case FIBRES_DIRECTION:
        s = defo_fibre_field_constant(m, b->fibres.direction, dir);
        break;
    case FIBRES_FIELD: {
        const defo_field *f = defo_mesh_find_field(m, b->fibres.field, DEFO_FIELD_CELL);
        if (!f || f->components != 3)
            f = defo_mesh_find_field(m, b->fibres.field, DEFO_FIELD_POINT);
        if (!f || f->components != 3) {
            char list[512] = "";
            size_t len = 0;
            for (int i = 0; i < m->num_fields && len < sizeof list - 80; i++) {
                const int k =
                    snprintf(list + len, sizeof list - len, "%s%s '%s' (%d)", i ? "," : "",
                             m->fields[i].location == DEFO_FIELD_CELL ? " cell" : " point",
                             m->fields[i].name, m->fields[i].components);
                if (k > 0) len += (size_t)k;
            }
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "material.fibres.field: '%s' is not a 3-component cell or point array "
                           "of '%s' (its arrays:%s)",
                           b->fibres.field, b->file, len ? list : " none");
            break;
        }
        const defo_index rows = f->location == DEFO_FIELD_CELL ? m->num_elems : m->num_nodes;
        double *v = defo_malloc(3 * (size_t)rows * sizeof(double) + 1);
        if (!v) {
            s = defo_error_oom("fibre field", 3 * (size_t)rows * sizeof(double));
            break;
        }
        const double *R = b->rotation;
        for (defo_index i = 0; i < rows; i++) {
            const double *a = f->data + 3 * (size_t)i;
            const double sa[3] = {b->scale[0] * a[0], b->scale[1] * a[1], b->scale[2] * a[2]};
            for (int k = 0; k < 3; k++)
                v[3 * (size_t)i + (size_t)k] =
                    R[3 * k] * sa[0] + R[3 * k + 1] * sa[1] + R[3 * k + 2] * sa[2];
        }
        s = f->location == DEFO_FIELD_CELL ? defo_fibre_field_cells(m, v, dir)
                                           : defo_fibre_field_nodes(m, v, dir);
        defo_free(v);
        if (s) defo_error_prefix("material.fibres.field '%s'", b->fibres.field);
        break;
    }
    case FIBRES_LINE: {
        unsigned char *from = defo_calloc((size_t)m->num_nodes + 1, 2);
        if (!from) {
            s = defo_error_oom("line of action", 2 * (size_t)m->num_nodes);
            break;
        }
        unsigned char *to = from + m->num_nodes;
        s = defo_region_mark(m, &b->fibres.from.region, from);
        if (!s) s = defo_region_mark(m, &b->fibres.to.region, to);
        if (!s) s = defo_fibre_field_line_of_action(m, from, to, dir, NULL);
        if (s) defo_error_prefix("material.fibres.line_of_action");
        defo_free(from);
        break;
    }
    case FIBRES_NONE:
        break;
    }
    if (s < 0) {
        defo_free(dir);
        return s;
    }
    *out = dir;
    return DEFO_OK;
}

defo_status scene_body_activation(const scene_body *b, defo_world *w, defo_body_id id) {
    for (int k = 0; k < b->num_acts; k++) {
        const scene_activation *a = &b->acts[k];
        defo_activation_def d = defo_default_activation_def();
        d.region = a->has_region ? &a->region.region : NULL;
        d.num_keys = a->num_keys;
        d.times = a->times;
        d.levels = a->levels;
        d.level = a->level;
        d.interpolation = a->interpolation;
        defo_status s = defo_body_add_activation(w, id, &d, NULL);
        if (s) return defo_error_prefix("activation[%d]", k);
    }
    return DEFO_OK;
}
