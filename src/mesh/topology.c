/*
 * mesh/topology.c — adjacency computed from connectivity: node→element
 * incidence, unique edges, boundary faces, connected components, inverted
 * elements, and tet4→tet10 elevation.
 *
 * Design: nothing is cached on the mesh.  Fracture (MG04 §4) splits vertices
 * and changes connectivity mid-simulation, so every function takes the mesh
 * and recomputes; results are plain arrays owned by the caller's struct.
 *
 * Edges and faces are found without hashing: each one gets a key of sorted
 * node indices (a < b [< c]); a counting sort buckets keys by their smallest
 * node a (O(n)), then each bucket — a few dozen keys around one node — is
 * sorted by (b, c, slot).  Equal keys are then adjacent.  The whole is
 * O(n + Σ k log k) and deterministic: the result depends only on the
 * connectivity, never on thread count or memory addresses.
 */
#include "defo/mesh.h"
#include "defo/math.h"
#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct sort_key {
    defo_index b, c; /* second and third smallest node (c = 0 for edges) */
    int64_t slot;    /* element * per_elem + local edge/face */
} sort_key;

static int key_less(const sort_key *x, const sort_key *y) {
    if (x->b != y->b) return x->b < y->b;
    if (x->c != y->c) return x->c < y->c;
    return x->slot < y->slot;
}

static int key_cmp(const void *pa, const void *pb) {
    const sort_key *x = pa, *y = pb;
    return key_less(x, y) ? -1 : key_less(y, x) ? 1 : 0;
}

/* Sort each bucket [off[a], off[a+1]).  Insertion sort for the usual small
 * buckets; qsort keeps a high-valence node (a fan) from going quadratic. */
static void sort_buckets(sort_key *keys, const int64_t *off, defo_index num_nodes) {
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(num_nodes))
    for (defo_index a = 0; a < num_nodes; a++) {
        sort_key *k = keys + off[a];
        int64_t n = off[a + 1] - off[a];
        if (n > 24) {
            qsort(k, (size_t)n, sizeof *k, key_cmp);
            continue;
        }
        for (int64_t i = 1; i < n; i++) {
            sort_key t = k[i];
            int64_t j = i - 1;
            while (j >= 0 && key_less(&t, &k[j])) {
                k[j + 1] = k[j];
                j--;
            }
            k[j + 1] = t;
        }
    }
}

static defo_status check_tets(const defo_mesh *mesh, const char *fn) {
    if (!mesh) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh is NULL", fn);
    int npe = mesh->nodes_per_elem;
    if (mesh->num_elems > 0 && npe != 4 && npe != 10 && npe != 3)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh has no elements", fn);
    size_t n = (size_t)mesh->num_elems * (size_t)npe;
    for (size_t i = 0; i < n; i++)
        if (mesh->elems[i] < 0 || mesh->elems[i] >= mesh->num_nodes)
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "element %ld refers to node %ld, but there are %ld nodes",
                              (long)(i / (size_t)npe), (long)mesh->elems[i], (long)mesh->num_nodes);
    return DEFO_OK;
}

/* ------------------------------------------------------- incidence */
defo_status defo_mesh_node_elems(const defo_mesh *mesh, defo_node_elems *out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_node_elems: out is NULL");
    memset(out, 0, sizeof *out);
    defo_status s = check_tets(mesh, "defo_mesh_node_elems");
    if (s) return s;
    int npe = mesh->nodes_per_elem ? mesh->nodes_per_elem : 4;
    defo_incidence inc;
    s = defo_incidence_build(&inc, mesh->elems, mesh->num_elems, npe, mesh->num_nodes);
    if (s) return s;
    int64_t total = inc.offset[mesh->num_nodes];
    out->elem = defo_malloc((size_t)total * sizeof *out->elem + 1);
    out->local = defo_malloc((size_t)total * sizeof *out->local + 1);
    if (!out->elem || !out->local) {
        defo_free(out->elem);
        defo_free(out->local);
        defo_incidence_free(&inc);
        memset(out, 0, sizeof *out);
        return defo_error_oom("node incidence", (size_t)total * 5);
    }
    for (int64_t k = 0; k < total; k++) {
        out->elem[k] = (defo_index)(inc.slot[k] / npe);
        out->local[k] = (int8_t)(inc.slot[k] % npe);
    }
    out->offset = inc.offset; /* take ownership */
    inc.offset = NULL;
    defo_incidence_free(&inc);
    out->num_nodes = mesh->num_nodes;
    return DEFO_OK;
}

void defo_node_elems_free(defo_node_elems *ne) {
    if (!ne) return;
    defo_free(ne->offset);
    defo_free(ne->elem);
    defo_free(ne->local);
    memset(ne, 0, sizeof *ne);
}

/* Counting sort of keys by smallest node: off gets num_nodes+1 offsets. */
static defo_status bucket_keys(defo_index num_nodes, int64_t nkeys, const defo_index *first,
                               const sort_key *in, sort_key **out, int64_t **off_out) {
    int64_t *off = defo_calloc((size_t)num_nodes + 1, sizeof *off);
    sort_key *keys = defo_malloc((size_t)nkeys * sizeof *keys + 1);
    if (!off || !keys) {
        defo_free(off);
        defo_free(keys);
        return defo_error_oom("edge/face keys", (size_t)nkeys * sizeof *keys);
    }
    for (int64_t i = 0; i < nkeys; i++) off[first[i] + 1]++;
    for (defo_index a = 0; a < num_nodes; a++) off[a + 1] += off[a];
    int64_t *fill = defo_malloc((size_t)num_nodes * sizeof *fill + 1);
    if (!fill) {
        defo_free(off);
        defo_free(keys);
        return defo_error_oom("edge/face keys", (size_t)num_nodes * sizeof *fill);
    }
    memcpy(fill, off, (size_t)num_nodes * sizeof *fill);
    for (int64_t i = 0; i < nkeys; i++) keys[fill[first[i]]++] = in[i];
    defo_free(fill);
    sort_buckets(keys, off, num_nodes);
    *out = keys;
    *off_out = off;
    return DEFO_OK;
}

/* ------------------------------------------------------------ edges */
defo_status defo_mesh_edges(const defo_mesh *mesh, int with_elem_edges, defo_edges *out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_edges: out is NULL");
    memset(out, 0, sizeof *out);
    defo_status s = check_tets(mesh, "defo_mesh_edges");
    if (s) return s;
    /* a shell's triangles have 3 edges (0,1) (1,2) (2,0), a tet 6 */
    static const int tri_edges[3][2] = {{0, 1}, {1, 2}, {2, 0}};
    const int npe = mesh->nodes_per_elem, per = npe == 3 ? 3 : 6;
    const int(*ed)[2] = npe == 3 ? tri_edges : defo_tet_edges;
    int64_t ne = mesh->num_elems, nk = per * ne;
    defo_index *first = defo_malloc((size_t)nk * sizeof *first + 1);
    sort_key *raw = defo_malloc((size_t)nk * sizeof *raw + 1);
    if (!first || !raw) {
        defo_free(first);
        defo_free(raw);
        return defo_error_oom("edges", (size_t)nk * sizeof *raw);
    }
    for (int64_t e = 0; e < ne; e++) {
        const defo_index *v = mesh->elems + e * npe;
        for (int k = 0; k < per; k++) {
            defo_index a = v[ed[k][0]], b = v[ed[k][1]];
            int64_t i = per * e + k;
            first[i] = DEFO_MIN(a, b);
            raw[i].b = DEFO_MAX(a, b);
            raw[i].c = 0;
            raw[i].slot = i;
        }
    }
    sort_key *keys = NULL;
    int64_t *off = NULL;
    s = bucket_keys(mesh->num_nodes, nk, first, raw, &keys, &off);
    defo_free(first);
    defo_free(raw);
    if (s) return s;
    /* count unique */
    int64_t nu = 0;
    for (defo_index a = 0; a < mesh->num_nodes; a++)
        for (int64_t i = off[a]; i < off[a + 1]; i++)
            if (i == off[a] || keys[i].b != keys[i - 1].b) nu++;
    out->nodes = defo_malloc((size_t)nu * 2 * sizeof *out->nodes + 1);
    if (with_elem_edges) out->elem_edges = defo_malloc((size_t)nk * sizeof *out->elem_edges + 1);
    if (!out->nodes || (with_elem_edges && !out->elem_edges)) {
        defo_free(keys);
        defo_free(off);
        defo_edges_free(out);
        return defo_error_oom("edges", (size_t)nu * 2 * sizeof(defo_index));
    }
    int64_t id = -1;
    for (defo_index a = 0; a < mesh->num_nodes; a++)
        for (int64_t i = off[a]; i < off[a + 1]; i++) {
            if (i == off[a] || keys[i].b != keys[i - 1].b) {
                id++;
                out->nodes[2 * id] = a;
                out->nodes[2 * id + 1] = keys[i].b;
            }
            if (out->elem_edges) out->elem_edges[keys[i].slot] = (defo_index)id;
        }
    out->num_edges = (defo_index)nu;
    defo_free(keys);
    defo_free(off);
    return DEFO_OK;
}

void defo_edges_free(defo_edges *edges) {
    if (!edges) return;
    defo_free(edges->nodes);
    defo_free(edges->elem_edges);
    memset(edges, 0, sizeof *edges);
}

/* --------------------------------------------------------- boundary */
/* Local node of the edge node between corners a and b of a tet10. */
static int tet10_edge_node(int a, int b) {
    for (int e = 0; e < 6; e++)
        if ((defo_tet_edges[e][0] == a && defo_tet_edges[e][1] == b) ||
            (defo_tet_edges[e][0] == b && defo_tet_edges[e][1] == a))
            return 4 + e;
    return -1;
}

/* A shell's surface is its triangles, each as it is oriented. */
static defo_status shell_faces(const defo_mesh *mesh, defo_boundary *out) {
    const size_t nt = (size_t)mesh->num_elems;
    out->faces = defo_malloc(3 * nt * sizeof *out->faces + 1);
    out->elem = defo_malloc(nt * sizeof *out->elem + 1);
    out->local_face = defo_calloc(nt + 1, sizeof *out->local_face);
    if (!out->faces || !out->elem || !out->local_face) {
        defo_boundary_free(out);
        return defo_error_oom("boundary faces", nt * 32);
    }
    if (nt) memcpy(out->faces, mesh->elems, 3 * nt * sizeof *out->faces);
    for (size_t t = 0; t < nt; t++) out->elem[t] = (defo_index)t;
    out->num_faces = (defo_index)nt;
    out->nodes_per_face = 3;
    return DEFO_OK;
}

defo_status defo_mesh_boundary(const defo_mesh *mesh, int quadratic, defo_boundary *out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_boundary: out is NULL");
    memset(out, 0, sizeof *out);
    defo_status s = check_tets(mesh, "defo_mesh_boundary");
    if (s) return s;
    int npe = mesh->nodes_per_elem;
    if (npe == 3) return shell_faces(mesh, out);
    int quad = quadratic && npe == 10;
    int64_t ne = mesh->num_elems, nk = 4 * ne;
    defo_index *first = defo_malloc((size_t)nk * sizeof *first + 1);
    sort_key *raw = defo_malloc((size_t)nk * sizeof *raw + 1);
    if (!first || !raw) {
        defo_free(first);
        defo_free(raw);
        return defo_error_oom("faces", (size_t)nk * sizeof *raw);
    }
    for (int64_t e = 0; e < ne; e++) {
        const defo_index *v = mesh->elems + e * npe;
        for (int f = 0; f < 4; f++) {
            defo_index p = v[defo_tet_faces[f][0]], q = v[defo_tet_faces[f][1]],
                       r = v[defo_tet_faces[f][2]], t;
            if (p > q) t = p, p = q, q = t;
            if (q > r) t = q, q = r, r = t;
            if (p > q) t = p, p = q, q = t;
            int64_t i = 4 * e + f;
            first[i] = p;
            raw[i].b = q;
            raw[i].c = r;
            raw[i].slot = i;
        }
    }
    sort_key *keys = NULL;
    int64_t *off = NULL;
    s = bucket_keys(mesh->num_nodes, nk, first, raw, &keys, &off);
    defo_free(first);
    defo_free(raw);
    if (s) return s;
    /* mark faces used once (by slot, so the output is in element order) */
    unsigned char *once = defo_calloc((size_t)nk + 1, 1);
    if (!once) {
        defo_free(keys);
        defo_free(off);
        return defo_error_oom("faces", (size_t)nk);
    }
    int64_t nb = 0;
    for (defo_index a = 0; a < mesh->num_nodes && !s; a++) {
        int64_t i = off[a];
        while (i < off[a + 1]) {
            int64_t j = i + 1;
            while (j < off[a + 1] && keys[j].b == keys[i].b && keys[j].c == keys[i].c) j++;
            if (j - i == 1) {
                once[keys[i].slot] = 1;
                nb++;
            } else if (j - i > 2) {
                s = defo_error(DEFO_ERR_INVALID_MESH,
                               "face (%ld %ld %ld) is shared by %ld elements (%ld, %ld, %ld...)",
                               (long)a, (long)keys[i].b, (long)keys[i].c, (long)(j - i),
                               (long)(keys[i].slot / 4), (long)(keys[i + 1].slot / 4),
                               (long)(keys[i + 2].slot / 4));
                break;
            }
            i = j;
        }
    }
    defo_free(keys);
    defo_free(off);
    if (s) {
        defo_free(once);
        return s;
    }
    int npf = quad ? 6 : 3;
    out->faces = defo_malloc((size_t)nb * (size_t)npf * sizeof *out->faces + 1);
    out->elem = defo_malloc((size_t)nb * sizeof *out->elem + 1);
    out->local_face = defo_malloc((size_t)nb * sizeof *out->local_face + 1);
    if (!out->faces || !out->elem || !out->local_face) {
        defo_free(once);
        defo_boundary_free(out);
        return defo_error_oom("boundary faces", (size_t)nb * 32);
    }
    int64_t k = 0;
    for (int64_t i = 0; i < nk; i++) {
        if (!once[i]) continue;
        int64_t e = i / 4;
        int f = (int)(i % 4);
        const defo_index *v = mesh->elems + e * npe;
        defo_index *dst = out->faces + k * npf;
        for (int c = 0; c < 3; c++) dst[c] = v[defo_tet_faces[f][c]];
        if (quad)
            for (int c = 0; c < 3; c++)
                dst[3 + c] =
                    v[tet10_edge_node(defo_tet_faces[f][c], defo_tet_faces[f][(c + 1) % 3])];
        out->elem[k] = (defo_index)e;
        out->local_face[k] = (int8_t)f;
        k++;
    }
    defo_free(once);
    out->num_faces = (defo_index)nb;
    out->nodes_per_face = npf;
    return DEFO_OK;
}

void defo_boundary_free(defo_boundary *b) {
    if (!b) return;
    defo_free(b->faces);
    defo_free(b->elem);
    defo_free(b->local_face);
    memset(b, 0, sizeof *b);
}

/* ------------------------------------------------------- components */
static defo_index uf_find(defo_index *parent, defo_index i) {
    while (parent[i] != i) {
        parent[i] = parent[parent[i]]; /* path halving */
        i = parent[i];
    }
    return i;
}

defo_status defo_mesh_components(const defo_mesh *mesh, defo_index *elem_component,
                                 defo_index *num_components) {
    if (!num_components)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_mesh_components: num_components is NULL");
    *num_components = 0;
    defo_status s = check_tets(mesh, "defo_mesh_components");
    if (s) return s;
    size_t nn = (size_t)mesh->num_nodes;
    defo_index *parent = defo_malloc(nn * sizeof *parent + 1);
    defo_index *label = defo_malloc(nn * sizeof *label + 1);
    if (!parent || !label) {
        defo_free(parent);
        defo_free(label);
        return defo_error_oom("components", nn * 2 * sizeof *parent);
    }
    for (size_t i = 0; i < nn; i++) {
        parent[i] = (defo_index)i;
        label[i] = -1;
    }
    int npe = mesh->nodes_per_elem;
    for (size_t e = 0; e < (size_t)mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + e * (size_t)npe;
        defo_index r0 = uf_find(parent, v[0]);
        for (int a = 1; a < npe; a++) {
            defo_index r = uf_find(parent, v[a]);
            if (r == r0) continue;
            /* union by smaller index keeps the roots deterministic */
            if (r < r0) {
                parent[r0] = r;
                r0 = r;
            } else {
                parent[r] = r0;
            }
        }
    }
    defo_index count = 0;
    for (size_t e = 0; e < (size_t)mesh->num_elems; e++) {
        defo_index r = uf_find(parent, mesh->elems[e * (size_t)npe]);
        if (label[r] < 0) label[r] = count++;
        if (elem_component) elem_component[e] = label[r];
    }
    defo_free(parent);
    defo_free(label);
    *num_components = count;
    return DEFO_OK;
}

/* --------------------------------------------------------- inverted */
defo_status defo_mesh_count_inverted(const defo_mesh *mesh, const double *x, defo_index *count,
                                     defo_index *first) {
    if (count) *count = 0;
    if (first) *first = -1;
    defo_status s = check_tets(mesh, "defo_mesh_count_inverted");
    if (s) return s;
    if (!x) x = mesh->x;
    defo_index n = 0, f = -1;
    int npe = mesh->nodes_per_elem;
    for (size_t e = 0; npe == 3 && e < (size_t)mesh->num_elems; e++) {
        /* a shell: zero area relative to the longest edge */
        const defo_index *v = mesh->elems + 3 * e;
        defo_vec3 p0 = defo_v3_load(x + 3 * (size_t)v[0]);
        defo_vec3 a = defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[1]), p0);
        defo_vec3 b = defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[2]), p0);
        const double l2 =
            fmax(defo_v3_norm2(a), fmax(defo_v3_norm2(b), defo_v3_norm2(defo_v3_sub(b, a))));
        if (!(defo_v3_norm(defo_v3_cross(a, b)) > 1e-12 * l2)) {
            if (f < 0) f = (defo_index)e;
            n++;
        }
    }
    for (size_t e = 0; npe != 3 && e < (size_t)mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + e * (size_t)npe;
        defo_vec3 p0 = defo_v3_load(x + 3 * (size_t)v[0]);
        defo_vec3 a = defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[1]), p0);
        defo_vec3 b = defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[2]), p0);
        defo_vec3 c = defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[3]), p0);
        if (!(defo_v3_dot(a, defo_v3_cross(b, c)) > 0)) {
            if (f < 0) f = (defo_index)e;
            n++;
        }
    }
    if (count) *count = n;
    if (first) *first = f;
    return DEFO_OK;
}

/* ------------------------------------------------ tet4 -> tet10 */
defo_status defo_mesh_to_quadratic(const defo_mesh *mesh, defo_mesh **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_to_quadratic: out is NULL");
    *out = NULL;
    defo_status s = check_tets(mesh, "defo_mesh_to_quadratic");
    if (s) return s;
    if (mesh->nodes_per_elem != 4)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_to_quadratic: mesh is not tet4");
    defo_edges edges;
    s = defo_mesh_edges(mesh, 1, &edges);
    if (s) return s;
    if ((int64_t)mesh->num_nodes + edges.num_edges > DEFO_INDEX_MAX) {
        defo_edges_free(&edges);
        return defo_error(DEFO_ERR_OUT_OF_MEMORY, "defo_mesh_to_quadratic: too many nodes");
    }
    defo_mesh *q = NULL;
    s = defo_mesh_create(2, &q);
    if (!s) s = defo_mesh_reserve(q, mesh->num_nodes + edges.num_edges, mesh->num_elems, 0);
    for (defo_index i = 0; !s && i < mesh->num_nodes; i++)
        s = defo_mesh_add_node(q, mesh->x[3 * (size_t)i], mesh->x[3 * (size_t)i + 1],
                               mesh->x[3 * (size_t)i + 2], NULL);
    for (defo_index k = 0; !s && k < edges.num_edges; k++) {
        const double *a = mesh->x + 3 * (size_t)edges.nodes[2 * k];
        const double *b = mesh->x + 3 * (size_t)edges.nodes[2 * k + 1];
        s = defo_mesh_add_node(q, 0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2]),
                               NULL);
    }
    for (defo_index e = 0; !s && e < mesh->num_elems; e++) {
        defo_index v[10];
        memcpy(v, mesh->elems + 4 * (size_t)e, 4 * sizeof *v);
        for (int k = 0; k < 6; k++)
            v[4 + k] = mesh->num_nodes + edges.elem_edges[6 * (size_t)e + k];
        s = defo_mesh_add_elem(q, v, mesh->elem_tag ? mesh->elem_tag[e] : 0);
    }
    for (int g = 0; !s && g < mesh->num_groups; g++)
        s = defo_mesh_set_group(q, mesh->groups[g].dim, mesh->groups[g].tag, mesh->groups[g].name);
    defo_edges_free(&edges);
    if (s) {
        defo_mesh_destroy(q);
        return s;
    }
    *out = q;
    return DEFO_OK;
}
