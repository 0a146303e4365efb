/*
 * mesh/mesh.c — lifecycle of defo_mesh: create, grow, clone, attach fields
 * and groups, validate, orient (ITF04 §3: elements must be positively
 * oriented for Dm⁻¹ and Bm to mean what the force code expects).
 *
 * Invariants kept by every function here:
 *   - num_* <= *_capacity, arrays hold at least capacity entries;
 *   - elem_tag / tri_tag are NULL or hold capacity entries (0 = untagged);
 *   - a point field holds components * node_capacity values, a cell field
 *     components * elem_capacity, so adding nodes or elements never leaves a
 *     field short (new entries are 0);
 *   - any failure (out of memory, bad argument) leaves the mesh as it was:
 *     buffers are grown first, counts updated last.
 * Growth doubles capacity (amortised O(1) appends), capped at DEFO_INDEX_MAX.
 */
#include "defo/mesh.h"
#include "defo/math.h"
#include "base/base.h"
#include "mesh/mesh_internal.h"

#include <math.h>
#include <string.h>

const int defo_tet_faces[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};
const int defo_tet_edges[6][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {2, 3}};
const int defo_tri6_split[4][3] = {{0, 3, 5}, {3, 1, 4}, {5, 4, 2}, {3, 4, 5}};

defo_status defo_mesh_create(int order, defo_mesh **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_create: out is NULL");
    *out = NULL;
    if (order < 0 || order > 2)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_mesh_create: order %d (must be 0, 1 or 2)", order);
    defo_mesh *m = defo_calloc(1, sizeof *m);
    if (!m) return defo_error_oom("mesh", sizeof *m);
    m->order = order;
    m->nodes_per_elem = order == 0 ? 0 : order == 1 ? 4 : 10;
    *out = m;
    return DEFO_OK;
}

void defo_mesh_destroy(defo_mesh *mesh) {
    if (!mesh) return;
    defo_free(mesh->x);
    defo_free(mesh->elems);
    defo_free(mesh->elem_tag);
    defo_free(mesh->tris);
    defo_free(mesh->tri_tag);
    defo_free(mesh->groups);
    for (int i = 0; i < mesh->num_fields; i++) defo_free(mesh->fields[i].data);
    defo_free(mesh->fields);
    defo_free(mesh);
}

/* Grow *p (count `have` items of `item` bytes, valid) to `want` items; new
 * bytes zeroed.  On failure *p is unchanged. */
static defo_status grow_array(void **p, size_t have, size_t want, size_t item, const char *what) {
    size_t bytes;
    if (!defo_mul_size(want, item, &bytes)) return defo_error_oom(what, SIZE_MAX);
    void *q = defo_realloc(*p, bytes ? bytes : 1);
    if (!q) return defo_error_oom(what, bytes);
    if (want > have) memset((char *)q + have * item, 0, (want - have) * item);
    *p = q;
    return DEFO_OK;
}

static size_t field_stride(const defo_mesh *m, const defo_field *f) {
    DEFO_UNUSED(m);
    return (size_t)f->components;
}

static defo_status reserve_nodes(defo_mesh *m, defo_index want) {
    if (want <= m->node_capacity) return DEFO_OK;
    size_t have = (size_t)m->node_capacity;
    defo_status s =
        grow_array((void **)&m->x, have * 3, (size_t)want * 3, sizeof(double), "mesh nodes");
    if (s) return s;
    for (int i = 0; i < m->num_fields; i++) {
        defo_field *f = &m->fields[i];
        if (f->location != DEFO_FIELD_POINT) continue;
        size_t c = field_stride(m, f);
        s = grow_array((void **)&f->data, have * c, (size_t)want * c, sizeof(double),
                       "mesh point field");
        if (s) return s; /* arrays already grown are simply larger: still valid */
    }
    m->node_capacity = want;
    return DEFO_OK;
}

static defo_status reserve_elems(defo_mesh *m, defo_index want) {
    if (want <= m->elem_capacity) return DEFO_OK;
    if (m->nodes_per_elem == 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "mesh of order 0 holds no volume elements");
    size_t have = (size_t)m->elem_capacity, npe = (size_t)m->nodes_per_elem;
    defo_status s = grow_array((void **)&m->elems, have * npe, (size_t)want * npe,
                               sizeof(defo_index), "mesh elements");
    if (s) return s;
    if (m->elem_tag) {
        s = grow_array((void **)&m->elem_tag, have, (size_t)want, sizeof(int32_t), "element tags");
        if (s) return s;
    }
    for (int i = 0; i < m->num_fields; i++) {
        defo_field *f = &m->fields[i];
        if (f->location != DEFO_FIELD_CELL) continue;
        size_t c = field_stride(m, f);
        s = grow_array((void **)&f->data, have * c, (size_t)want * c, sizeof(double),
                       "mesh cell field");
        if (s) return s;
    }
    m->elem_capacity = want;
    return DEFO_OK;
}

static defo_status reserve_tris(defo_mesh *m, defo_index want, int npt) {
    if (want <= m->tri_capacity) return DEFO_OK;
    size_t have = (size_t)m->tri_capacity;
    /* capacity is counted in 6-node slots so the first triangle may fix 3 or 6 */
    DEFO_UNUSED(npt);
    defo_status s = grow_array((void **)&m->tris, have * 6, (size_t)want * 6, sizeof(defo_index),
                               "mesh triangles");
    if (s) return s;
    if (m->tri_tag) {
        s = grow_array((void **)&m->tri_tag, have, (size_t)want, sizeof(int32_t), "triangle tags");
        if (s) return s;
    }
    m->tri_capacity = want;
    return DEFO_OK;
}

/* Next capacity for one more item beyond n: doubling, at least 16. */
static defo_status next_capacity(defo_index n, defo_index cap, defo_index *out, const char *what) {
    if (n < cap) {
        *out = cap;
        return DEFO_OK;
    }
    if (n >= DEFO_INDEX_MAX)
        return defo_error(DEFO_ERR_OUT_OF_MEMORY, "too many %s (limit %ld)", what,
                          (long)DEFO_INDEX_MAX);
    int64_t c = cap < 16 ? 16 : 2 * (int64_t)cap;
    if (c > DEFO_INDEX_MAX) c = DEFO_INDEX_MAX;
    *out = (defo_index)c;
    return DEFO_OK;
}

defo_status defo_mesh_reserve(defo_mesh *mesh, defo_index nodes, defo_index elems,
                              defo_index tris) {
    if (!mesh) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_reserve: mesh is NULL");
    if (nodes < 0 || elems < 0 || tris < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_reserve: negative count");
    defo_status s = reserve_nodes(mesh, nodes);
    if (!s && elems > 0) s = reserve_elems(mesh, elems);
    if (!s) s = reserve_tris(mesh, tris, 6);
    return s;
}

defo_status defo_mesh_add_node(defo_mesh *mesh, double x, double y, double z, defo_index *index) {
    if (!mesh) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_add_node: mesh is NULL");
    defo_index cap = 0;
    defo_status s = next_capacity(mesh->num_nodes, mesh->node_capacity, &cap, "nodes");
    if (!s) s = reserve_nodes(mesh, cap);
    if (s) return s;
    defo_index n = mesh->num_nodes;
    mesh->x[3 * (size_t)n] = x;
    mesh->x[3 * (size_t)n + 1] = y;
    mesh->x[3 * (size_t)n + 2] = z;
    for (int i = 0; i < mesh->num_fields; i++) {
        defo_field *f = &mesh->fields[i];
        if (f->location == DEFO_FIELD_POINT)
            memset(f->data + (size_t)n * (size_t)f->components, 0,
                   (size_t)f->components * sizeof(double));
    }
    mesh->num_nodes = n + 1;
    if (index) *index = n;
    return DEFO_OK;
}

defo_status defo_mesh_add_elem(defo_mesh *mesh, const defo_index *nodes, int32_t tag) {
    if (!mesh || !nodes)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_add_elem: NULL argument");
    if (mesh->nodes_per_elem == 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_mesh_add_elem: mesh of order 0 holds no volume elements");
    defo_index cap = 0;
    defo_status s = next_capacity(mesh->num_elems, mesh->elem_capacity, &cap, "elements");
    if (!s) s = reserve_elems(mesh, cap);
    if (!s && tag != 0 && !mesh->elem_tag) {
        int32_t *t = defo_calloc((size_t)mesh->elem_capacity, sizeof *t);
        if (!t) return defo_error_oom("element tags", (size_t)mesh->elem_capacity * sizeof *t);
        mesh->elem_tag = t;
    }
    if (s) return s;
    defo_index e = mesh->num_elems;
    size_t npe = (size_t)mesh->nodes_per_elem;
    memcpy(mesh->elems + (size_t)e * npe, nodes, npe * sizeof *nodes);
    if (mesh->elem_tag) mesh->elem_tag[e] = tag;
    for (int i = 0; i < mesh->num_fields; i++) {
        defo_field *f = &mesh->fields[i];
        if (f->location == DEFO_FIELD_CELL)
            memset(f->data + (size_t)e * (size_t)f->components, 0,
                   (size_t)f->components * sizeof(double));
    }
    mesh->num_elems = e + 1;
    return DEFO_OK;
}

defo_status defo_mesh_add_tri(defo_mesh *mesh, const defo_index *nodes, int nodes_per_tri,
                              int32_t tag) {
    if (!mesh || !nodes)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_add_tri: NULL argument");
    if (nodes_per_tri != 3 && nodes_per_tri != 6)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_mesh_add_tri: %d nodes per triangle (must be 3 or 6)",
                          nodes_per_tri);
    if (mesh->num_tris > 0 && mesh->nodes_per_tri != nodes_per_tri)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_mesh_add_tri: %d-node triangle in a mesh of %d-node triangles",
                          nodes_per_tri, mesh->nodes_per_tri);
    defo_index cap = 0;
    defo_status s = next_capacity(mesh->num_tris, mesh->tri_capacity, &cap, "triangles");
    if (!s) s = reserve_tris(mesh, cap, nodes_per_tri);
    if (!s && tag != 0 && !mesh->tri_tag) {
        int32_t *t = defo_calloc((size_t)mesh->tri_capacity, sizeof *t);
        if (!t) return defo_error_oom("triangle tags", (size_t)mesh->tri_capacity * sizeof *t);
        mesh->tri_tag = t;
    }
    if (s) return s;
    defo_index t = mesh->num_tris;
    mesh->nodes_per_tri = nodes_per_tri;
    memcpy(mesh->tris + (size_t)t * (size_t)nodes_per_tri, nodes,
           (size_t)nodes_per_tri * sizeof *nodes);
    if (mesh->tri_tag) mesh->tri_tag[t] = tag;
    mesh->num_tris = t + 1;
    return DEFO_OK;
}

static defo_status copy_name(char dst[DEFO_NAME_MAX], const char *name, const char *what) {
    size_t len = name ? strlen(name) : 0;
    if (len >= DEFO_NAME_MAX)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s name '%.20s...' longer than %d bytes",
                          what, name, DEFO_NAME_MAX - 1);
    memset(dst, 0, DEFO_NAME_MAX);
    if (len) memcpy(dst, name, len);
    return DEFO_OK;
}

defo_status defo_mesh_set_group(defo_mesh *mesh, int dim, int32_t tag, const char *name) {
    if (!mesh) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_set_group: mesh is NULL");
    if (dim != 2 && dim != 3)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_set_group: dim %d (must be 2 or 3)",
                          dim);
    char buf[DEFO_NAME_MAX];
    defo_status s = copy_name(buf, name, "group");
    if (s) return s;
    for (int i = 0; i < mesh->num_groups; i++) {
        if (mesh->groups[i].dim == dim && mesh->groups[i].tag == tag) {
            memcpy(mesh->groups[i].name, buf, DEFO_NAME_MAX);
            return DEFO_OK;
        }
    }
    defo_group *g = defo_realloc(mesh->groups, (size_t)(mesh->num_groups + 1) * sizeof *g);
    if (!g) return defo_error_oom("mesh groups", (size_t)(mesh->num_groups + 1) * sizeof *g);
    mesh->groups = g;
    g[mesh->num_groups].dim = dim;
    g[mesh->num_groups].tag = tag;
    memcpy(g[mesh->num_groups].name, buf, DEFO_NAME_MAX);
    mesh->num_groups++;
    return DEFO_OK;
}

defo_status defo_mesh_add_field(defo_mesh *mesh, const char *name, defo_field_location location,
                                int components, const double *data) {
    if (!mesh || !name || !data)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_add_field: NULL argument");
    if (location != DEFO_FIELD_POINT && location != DEFO_FIELD_CELL)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_add_field: bad location %d",
                          (int)location);
    if (components < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_add_field '%s': %d components",
                          name, components);
    if (name[0] == '\0')
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_add_field: empty name");
    char buf[DEFO_NAME_MAX];
    defo_status s = copy_name(buf, name, "field");
    if (s) return s;
    size_t count = (size_t)(location == DEFO_FIELD_POINT ? mesh->num_nodes : mesh->num_elems);
    size_t cap = (size_t)(location == DEFO_FIELD_POINT ? mesh->node_capacity : mesh->elem_capacity);
    if (cap < count) cap = count;
    size_t n_cap, n_count;
    if (!defo_mul_size(cap, (size_t)components, &n_cap) ||
        !defo_mul_size(n_cap, sizeof(double), &n_cap))
        return defo_error_oom("mesh field", SIZE_MAX);
    n_count = count * (size_t)components;
    double *copy = defo_calloc(1, n_cap ? n_cap : 1);
    if (!copy) return defo_error_oom("mesh field", n_cap);
    if (n_count) memcpy(copy, data, n_count * sizeof(double));

    for (int i = 0; i < mesh->num_fields; i++) {
        defo_field *f = &mesh->fields[i];
        if (f->location == location && strcmp(f->name, buf) == 0) {
            defo_free(f->data);
            f->data = copy;
            f->components = components;
            return DEFO_OK;
        }
    }
    defo_field *fs = defo_realloc(mesh->fields, (size_t)(mesh->num_fields + 1) * sizeof *fs);
    if (!fs) {
        defo_free(copy);
        return defo_error_oom("mesh fields", (size_t)(mesh->num_fields + 1) * sizeof *fs);
    }
    mesh->fields = fs;
    defo_field *f = &fs[mesh->num_fields];
    memset(f, 0, sizeof *f);
    memcpy(f->name, buf, DEFO_NAME_MAX);
    f->location = location;
    f->components = components;
    f->data = copy;
    mesh->num_fields++;
    return DEFO_OK;
}

const defo_field *defo_mesh_find_field(const defo_mesh *mesh, const char *name,
                                       defo_field_location location) {
    if (!mesh || !name) return NULL;
    for (int i = 0; i < mesh->num_fields; i++)
        if (mesh->fields[i].location == location && strcmp(mesh->fields[i].name, name) == 0)
            return &mesh->fields[i];
    return NULL;
}

/* Copy n_items of item bytes into a fresh buffer of cap_items (zero-padded). */
static void *dup_array(const void *src, size_t n_items, size_t cap_items, size_t item, int *fail) {
    if (!src) return NULL;
    size_t bytes = cap_items * item;
    void *p = defo_calloc(1, bytes ? bytes : 1);
    if (!p) {
        *fail = 1;
        return NULL;
    }
    if (n_items) memcpy(p, src, n_items * item);
    return p;
}

defo_status defo_mesh_clone(const defo_mesh *mesh, defo_mesh **out) {
    if (!mesh || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_clone: NULL argument");
    *out = NULL;
    defo_mesh *c = defo_calloc(1, sizeof *c);
    if (!c) return defo_error_oom("mesh", sizeof *c);
    *c = *mesh;
    c->x = NULL;
    c->elems = NULL;
    c->elem_tag = NULL;
    c->tris = NULL;
    c->tri_tag = NULL;
    c->groups = NULL;
    c->fields = NULL;
    c->num_groups = 0;
    c->num_fields = 0;
    int fail = 0;
    size_t nc = (size_t)mesh->node_capacity, ec = (size_t)mesh->elem_capacity,
           tc = (size_t)mesh->tri_capacity, npe = (size_t)mesh->nodes_per_elem;
    c->x = dup_array(mesh->x, (size_t)mesh->num_nodes * 3, nc * 3, sizeof(double), &fail);
    c->elems =
        dup_array(mesh->elems, (size_t)mesh->num_elems * npe, ec * npe, sizeof(defo_index), &fail);
    c->elem_tag = dup_array(mesh->elem_tag, (size_t)mesh->num_elems, ec, sizeof(int32_t), &fail);
    c->tris = dup_array(mesh->tris, (size_t)mesh->num_tris * (size_t)mesh->nodes_per_tri, tc * 6,
                        sizeof(defo_index), &fail);
    c->tri_tag = dup_array(mesh->tri_tag, (size_t)mesh->num_tris, tc, sizeof(int32_t), &fail);
    if (mesh->num_groups > 0) {
        c->groups = dup_array(mesh->groups, (size_t)mesh->num_groups, (size_t)mesh->num_groups,
                              sizeof(defo_group), &fail);
        if (!fail) c->num_groups = mesh->num_groups;
    }
    if (!fail && mesh->num_fields > 0) {
        c->fields = defo_calloc((size_t)mesh->num_fields, sizeof(defo_field));
        if (!c->fields) fail = 1;
        for (int i = 0; !fail && i < mesh->num_fields; i++) {
            const defo_field *f = &mesh->fields[i];
            int point = f->location == DEFO_FIELD_POINT;
            size_t n = (size_t)(point ? mesh->num_nodes : mesh->num_elems);
            size_t cap = point ? nc : ec;
            c->fields[i] = *f;
            c->fields[i].data = dup_array(f->data, n * (size_t)f->components,
                                          cap * (size_t)f->components, sizeof(double), &fail);
            if (!fail) c->num_fields = i + 1;
        }
    }
    if (fail) {
        defo_mesh_destroy(c);
        return defo_error_oom("mesh clone", 0);
    }
    *out = c;
    return DEFO_OK;
}

defo_status defo_mesh_validate(const defo_mesh *mesh) {
    if (!mesh) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_validate: mesh is NULL");
    if (mesh->num_nodes < 0 || mesh->num_elems < 0 || mesh->num_tris < 0)
        return defo_error(DEFO_ERR_INVALID_MESH, "negative count");
    const int shell = mesh->order == 1 && mesh->nodes_per_elem == 3;
    if (mesh->num_elems > 0 && mesh->nodes_per_elem != 4 && mesh->nodes_per_elem != 10 && !shell)
        return defo_error(DEFO_ERR_INVALID_MESH, "elements with %d nodes (must be 4, 10 or 3)",
                          mesh->nodes_per_elem);
    if (!shell && mesh->nodes_per_elem != (mesh->order == 0 ? 0 : mesh->order == 1 ? 4 : 10))
        return defo_error(DEFO_ERR_INVALID_MESH, "order %d does not match %d nodes per element",
                          mesh->order, mesh->nodes_per_elem);
    for (defo_index i = 0; i < mesh->num_nodes; i++) {
        const double *p = mesh->x + 3 * (size_t)i;
        if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]))
            return defo_error(DEFO_ERR_INVALID_MESH, "node %ld has a non-finite coordinate",
                              (long)i);
    }
    int npe = mesh->nodes_per_elem;
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + (size_t)e * (size_t)npe;
        for (int a = 0; a < npe; a++) {
            if (v[a] < 0 || v[a] >= mesh->num_nodes)
                return defo_error(DEFO_ERR_INVALID_MESH,
                                  "element %ld refers to node %ld, but there are %ld nodes",
                                  (long)e, (long)v[a], (long)mesh->num_nodes);
            for (int b = 0; b < a; b++)
                if (v[a] == v[b])
                    return defo_error(DEFO_ERR_INVALID_MESH, "element %ld repeats node %ld",
                                      (long)e, (long)v[a]);
        }
    }
    if (mesh->num_tris > 0 && mesh->nodes_per_tri != 3 && mesh->nodes_per_tri != 6)
        return defo_error(DEFO_ERR_INVALID_MESH, "triangles with %d nodes", mesh->nodes_per_tri);
    int npt = mesh->nodes_per_tri;
    for (defo_index t = 0; t < mesh->num_tris; t++) {
        const defo_index *v = mesh->tris + (size_t)t * (size_t)npt;
        for (int a = 0; a < npt; a++) {
            if (v[a] < 0 || v[a] >= mesh->num_nodes)
                return defo_error(DEFO_ERR_INVALID_MESH,
                                  "triangle %ld refers to node %ld, but there are %ld nodes",
                                  (long)t, (long)v[a], (long)mesh->num_nodes);
            for (int b = 0; b < a; b++)
                if (v[a] == v[b])
                    return defo_error(DEFO_ERR_INVALID_MESH, "triangle %ld repeats node %ld",
                                      (long)t, (long)v[a]);
        }
    }
    return DEFO_OK;
}

/* 6V of corners and the longest edge, for the relative flatness test. */
static double tet_six_volume(const double *x, const defo_index *v, double *longest) {
    defo_vec3 p[4];
    for (int i = 0; i < 4; i++) p[i] = defo_v3_load(x + 3 * (size_t)v[i]);
    double l2 = 0;
    for (int e = 0; e < 6; e++)
        l2 = fmax(l2, defo_v3_norm2(defo_v3_sub(p[defo_tet_edges[e][1]], p[defo_tet_edges[e][0]])));
    *longest = sqrt(l2);
    defo_vec3 a = defo_v3_sub(p[1], p[0]), b = defo_v3_sub(p[2], p[0]), c = defo_v3_sub(p[3], p[0]);
    return defo_v3_dot(a, defo_v3_cross(b, c));
}

defo_status defo_mesh_orient(defo_mesh *mesh, defo_index *flipped) {
    if (flipped) *flipped = 0;
    if (!mesh) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_orient: mesh is NULL");
    int npe = mesh->nodes_per_elem;
    if (mesh->num_elems == 0 || npe == 0) return DEFO_OK;
    if (npe == 3) return defo_mesh_shell_orient(mesh, flipped);
    /* Pass 1 checks everything, pass 2 changes: an error leaves the mesh intact. */
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + (size_t)e * (size_t)npe;
        for (int a = 0; a < 4; a++)
            if (v[a] < 0 || v[a] >= mesh->num_nodes)
                return defo_error(DEFO_ERR_INVALID_MESH,
                                  "element %ld refers to node %ld, but there are %ld nodes",
                                  (long)e, (long)v[a], (long)mesh->num_nodes);
        double L;
        double six_v = tet_six_volume(mesh->x, v, &L);
        /* relative test: 6V against the cube of the longest edge */
        if (!(fabs(six_v) > 1e-12 * L * L * L))
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "element %ld has zero volume (nodes %ld %ld %ld %ld)", (long)e,
                              (long)v[0], (long)v[1], (long)v[2], (long)v[3]);
    }
    defo_index count = 0;
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        defo_index *v = mesh->elems + (size_t)e * (size_t)npe;
        double L;
        if (tet_six_volume(mesh->x, v, &L) > 0) continue;
        /* swap corners 1 and 2; in VTK edge order (0,1)(1,2)(0,2)(0,3)(1,3)(2,3)
         * this maps edge (0,1)<->(0,2) and (1,3)<->(2,3), (1,2) stays */
        defo_index t = v[1];
        v[1] = v[2];
        v[2] = t;
        if (npe == 10) {
            t = v[4];
            v[4] = v[6];
            v[6] = t;
            t = v[8];
            v[8] = v[9];
            v[9] = t;
        }
        count++;
    }
    if (flipped) *flipped = count;
    return DEFO_OK;
}
