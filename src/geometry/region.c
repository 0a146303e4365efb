/*
 * geometry/region.c — node sets of a mesh selected by a region of its rest
 * positions: a box, a sphere, a plane's lower side, or the nodes of the
 * elements with a tag.  Every fixed set, bone (TSIF05 §11), kinematic
 * handle, node load and traction of every integrator is selected here, and
 * the element sets of material regions (all four corners in the region, or
 * the tag).
 *
 * One tolerance rule (defo/geometry.h): tol = tolerance · D, D the diagonal
 * of the rest bounding box, so a region drawn exactly on a layer of nodes
 * selects it whatever the rounding of the coordinates, and the test scales
 * with the mesh (an absolute epsilon would be wrong for a 1 mm part and a
 * 100 m one alike).
 *
 * Invariants: the marks depend on each node's own coordinates only (no
 * order effects); node lists are in increasing order.
 */
#include "defo/geometry.h"

#include "base/base.h"

#include <math.h>
#include <string.h>

static defo_region region_new(defo_region_kind kind) {
    defo_region r;
    memset(&r, 0, sizeof r);
    r.kind = kind;
    r.tolerance = DEFO_REGION_TOLERANCE;
    return r;
}

defo_region defo_region_box(const double lo[3], const double hi[3]) {
    defo_region r = region_new(DEFO_REGION_BOX);
    for (int k = 0; k < 3; k++) {
        r.lo[k] = lo[k];
        r.hi[k] = hi[k];
    }
    return r;
}

defo_region defo_region_sphere(const double center[3], double radius) {
    defo_region r = region_new(DEFO_REGION_SPHERE);
    for (int k = 0; k < 3; k++) r.center[k] = center[k];
    r.radius = radius;
    return r;
}

defo_region defo_region_plane(const double point[3], const double normal[3]) {
    defo_region r = region_new(DEFO_REGION_PLANE);
    for (int k = 0; k < 3; k++) {
        r.point[k] = point[k];
        r.normal[k] = normal[k];
    }
    return r;
}

defo_region defo_region_tag(int32_t tag) {
    defo_region r = region_new(DEFO_REGION_TAG);
    r.tag = tag;
    return r;
}

void defo_region_nodes_free(defo_index *nodes) {
    defo_free(nodes);
}

static int finite3(const double v[3]) {
    return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

/* The fields the region's kind reads, checked; the plane's unit normal in n. */
static defo_status check_region(const defo_region *r, double n[3]) {
    if (!isfinite(r->tolerance) || !(r->tolerance >= 0.0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "region: tolerance %g is not finite and >= 0",
                          r->tolerance);
    switch (r->kind) {
    case DEFO_REGION_BOX:
        for (int k = 0; k < 3; k++)
            if (isnan(r->lo[k]) || isnan(r->hi[k]))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT, "region: box %s[%d] is not a number",
                                  isnan(r->lo[k]) ? "lo" : "hi", k);
        return DEFO_OK;
    case DEFO_REGION_SPHERE:
        if (!finite3(r->center))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "region: sphere center is not finite");
        if (!(r->radius >= 0.0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "region: sphere radius %g is not >= 0",
                              r->radius);
        return DEFO_OK;
    case DEFO_REGION_PLANE: {
        if (!finite3(r->point) || !finite3(r->normal))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "region: plane point or normal is not finite");
        /* scaled by the largest component first: no overflow or underflow */
        double a = fmax(fabs(r->normal[0]), fmax(fabs(r->normal[1]), fabs(r->normal[2])));
        if (!(a > 0.0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "region: plane normal is zero");
        double b[3] = {r->normal[0] / a, r->normal[1] / a, r->normal[2] / a};
        double len = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
        for (int k = 0; k < 3; k++) n[k] = b[k] / len;
        return DEFO_OK;
    }
    case DEFO_REGION_TAG:
        return DEFO_OK;
    }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT, "region: unknown kind %d", (int)r->kind);
}

defo_status defo_region_mark(const defo_mesh *mesh, const defo_region *region,
                             unsigned char *mark) {
    if (!mesh || !region || !mark)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_region_mark: NULL argument");
    double n[3] = {0, 0, 1};
    defo_status st = check_region(region, n);
    if (st != DEFO_OK) return st;
    const defo_index nn = mesh->num_nodes;
    if (nn == 0) return DEFO_OK;
    memset(mark, 0, (size_t)nn);
    if (region->kind == DEFO_REGION_TAG) {
        if (!mesh->elem_tag) return DEFO_OK;
        for (defo_index e = 0; e < mesh->num_elems; e++)
            if (mesh->elem_tag[e] == region->tag)
                for (int a = 0; a < mesh->nodes_per_elem; a++)
                    mark[mesh->elems[(size_t)e * (size_t)mesh->nodes_per_elem + (size_t)a]] = 1;
        return DEFO_OK;
    }
    double blo[3], bhi[3];
    st = defo_mesh_bbox(mesh, blo, bhi);
    if (st != DEFO_OK) return st;
    const double diag =
        sqrt((bhi[0] - blo[0]) * (bhi[0] - blo[0]) + (bhi[1] - blo[1]) * (bhi[1] - blo[1]) +
             (bhi[2] - blo[2]) * (bhi[2] - blo[2]));
    const double tol = region->tolerance * diag;
    switch (region->kind) {
    case DEFO_REGION_BOX: {
        double lo[3], hi[3];
        for (int k = 0; k < 3; k++) {
            lo[k] = region->lo[k] - tol;
            hi[k] = region->hi[k] + tol;
        }
        for (defo_index i = 0; i < nn; i++) {
            const double *x = mesh->x + 3 * (size_t)i;
            int in = 1;
            for (int k = 0; k < 3; k++) in &= x[k] >= lo[k] && x[k] <= hi[k];
            mark[i] = (unsigned char)in;
        }
        break;
    }
    case DEFO_REGION_SPHERE: {
        const double *c = region->center, rt = region->radius + tol;
        for (defo_index i = 0; i < nn; i++) {
            const double *x = mesh->x + 3 * (size_t)i;
            double d2 = 0;
            for (int k = 0; k < 3; k++) d2 += (x[k] - c[k]) * (x[k] - c[k]);
            mark[i] = sqrt(d2) <= rt;
        }
        break;
    }
    case DEFO_REGION_PLANE: {
        const double *p = region->point;
        for (defo_index i = 0; i < nn; i++) {
            const double *x = mesh->x + 3 * (size_t)i;
            double d = 0;
            for (int k = 0; k < 3; k++) d += (x[k] - p[k]) * n[k];
            mark[i] = d <= tol;
        }
        break;
    }
    case DEFO_REGION_TAG:
        break;
    }
    return DEFO_OK;
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

defo_status defo_region_elements(const defo_mesh *mesh, const defo_region *region,
                                 unsigned char *mark) {
    if (!mesh || !region || !mark)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_region_elements: NULL argument");
    const int npe = mesh->nodes_per_elem;
    if (region->kind == DEFO_REGION_TAG) {
        for (defo_index e = 0; e < mesh->num_elems; e++)
            mark[e] = mesh->elem_tag && mesh->elem_tag[e] == region->tag;
        return DEFO_OK;
    }
    unsigned char *nodes = defo_malloc((size_t)mesh->num_nodes + 1);
    if (!nodes) return defo_error_oom("region mark", (size_t)mesh->num_nodes);
    defo_status st = defo_region_mark(mesh, region, nodes);
    for (defo_index e = 0; !st && e < mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + (size_t)e * (size_t)npe;
        /* its corners: a triangle's three, a tetrahedron's four (tet10: the
         * first four nodes) */
        mark[e] = nodes[v[0]] && nodes[v[1]] && nodes[v[2]] && (npe == 3 || nodes[v[3]]);
    }
    defo_free(nodes);
    return st;
}
