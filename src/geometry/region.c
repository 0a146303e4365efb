/*
 * geometry/region.c — node sets of a mesh selected by a region of its rest
 * positions: a box, a sphere, or the nodes of the elements with a tag.
 * Used for fixed sets and bones (TSIF05 §11), kinematic handles and loads
 * by every integrator.  Deterministic: nodes in increasing order.
 */
#include "defo/geometry.h"

#include "base/base.h"

#include <string.h>

defo_region defo_region_box(const double lo[3], const double hi[3]) {
    defo_region r;
    memset(&r, 0, sizeof r);
    r.kind = DEFO_REGION_BOX;
    for (int k = 0; k < 3; k++) {
        r.lo[k] = lo[k];
        r.hi[k] = hi[k];
    }
    return r;
}

defo_region defo_region_sphere(const double center[3], double radius) {
    defo_region r;
    memset(&r, 0, sizeof r);
    r.kind = DEFO_REGION_SPHERE;
    for (int k = 0; k < 3; k++) r.center[k] = center[k];
    r.radius = radius;
    return r;
}

defo_region defo_region_tag(int32_t tag) {
    defo_region r;
    memset(&r, 0, sizeof r);
    r.kind = DEFO_REGION_TAG;
    r.tag = tag;
    return r;
}

void defo_region_nodes_free(defo_index *nodes) {
    defo_free(nodes);
}

defo_status defo_region_mark(const defo_mesh *mesh, const defo_region *region,
                             unsigned char *mark) {
    if (!mesh || !region || !mark)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_region_mark: NULL argument");
    memset(mark, 0, (size_t)mesh->num_nodes);
    switch (region->kind) {
    case DEFO_REGION_BOX:
        for (defo_index i = 0; i < mesh->num_nodes; i++) {
            const double *x = mesh->x + 3 * (size_t)i;
            int in = 1;
            for (int k = 0; k < 3; k++) in &= x[k] >= region->lo[k] && x[k] <= region->hi[k];
            mark[i] = (unsigned char)in;
        }
        return DEFO_OK;
    case DEFO_REGION_SPHERE:
        if (!(region->radius >= 0.0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "region: sphere radius %g is not >= 0",
                              region->radius);
        for (defo_index i = 0; i < mesh->num_nodes; i++) {
            const double *x = mesh->x + 3 * (size_t)i;
            double d2 = 0;
            for (int k = 0; k < 3; k++)
                d2 += (x[k] - region->center[k]) * (x[k] - region->center[k]);
            mark[i] = d2 <= region->radius * region->radius;
        }
        return DEFO_OK;
    case DEFO_REGION_TAG:
        if (!mesh->elem_tag) return DEFO_OK;
        for (defo_index e = 0; e < mesh->num_elems; e++)
            if (mesh->elem_tag[e] == region->tag)
                for (int a = 0; a < mesh->nodes_per_elem; a++)
                    mark[mesh->elems[(size_t)e * (size_t)mesh->nodes_per_elem + (size_t)a]] = 1;
        return DEFO_OK;
    }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT, "region: unknown kind %d", (int)region->kind);
}

defo_status defo_region_nodes(const defo_mesh *mesh, const defo_region *region, defo_index **nodes,
                              defo_index *count) {
    if (!mesh || !region || !nodes || !count)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_region_nodes: NULL argument");
    *nodes = NULL;
    *count = 0;
    unsigned char *mark = defo_malloc((size_t)mesh->num_nodes + 1);
    if (!mark) return defo_error_oom("region mark", (size_t)mesh->num_nodes);
    defo_status st = defo_region_mark(mesh, region, mark);
    if (st != DEFO_OK) {
        defo_free(mark);
        return st;
    }
    defo_index c = 0;
    for (defo_index i = 0; i < mesh->num_nodes; i++) c += mark[i];
    defo_index *out = defo_malloc(sizeof(defo_index) * ((size_t)c + 1));
    if (!out) {
        defo_free(mark);
        return defo_error_oom("region nodes", sizeof(defo_index) * (size_t)c);
    }
    c = 0;
    for (defo_index i = 0; i < mesh->num_nodes; i++)
        if (mark[i]) out[c++] = i;
    defo_free(mark);
    *nodes = out;
    *count = c;
    return DEFO_OK;
}
