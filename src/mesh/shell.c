/*
 * mesh/shell.c — shell meshes (thin shells and cloth, ITF04 §8): triangles as
 * elements, their hinges (the interior edges bending acts across, [BMF03],
 * [GHDS03]), boundary edges and a consistent orientation.
 *
 * Every edge is keyed by its sorted node pair and the keys sorted (qsort with
 * the slot as the last key: deterministic, O(n log n)); equal keys are then
 * adjacent.  An edge used once is boundary, twice a hinge, more often
 * non-manifold (refused: a hinge needs exactly two faces).  Two triangles
 * that run a shared edge the same way are oppositely oriented: the hinge
 * angle's sign and the ITF04 §8 reference normal would be meaningless, so
 * the topology refuses it and defo_mesh_orient repairs it by flipping
 * triangles (breadth first from the lowest-numbered triangle of each piece;
 * a non-orientable piece such as a Möbius strip is refused).
 *
 * Invariants: the mesh is never changed on error; results depend only on the
 * connectivity.
 */
#include "defo/mesh.h"
#include "base/base.h"
#include "mesh/mesh_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

defo_status defo_mesh_create_shell(defo_mesh **out) {
    defo_status s = defo_mesh_create(1, out);
    if (s) return s;
    (*out)->nodes_per_elem = 3;
    return DEFO_OK;
}

defo_status defo_mesh_shell_from_triangles(const defo_mesh *surf, defo_mesh **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "shell mesh: out is NULL");
    *out = NULL;
    if (!surf) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "shell mesh: surface is NULL");
    if (surf->num_tris == 0)
        return defo_error(DEFO_ERR_INVALID_MESH, "shell mesh: the surface has no triangle");
    if (surf->nodes_per_tri != 3)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "shell mesh: %d-node triangles (shells are made of 3-node triangles)",
                          surf->nodes_per_tri);
    const size_t nn = (size_t)surf->num_nodes, nt = (size_t)surf->num_tris;
    for (size_t i = 0; i < 3 * nt; i++)
        if (surf->tris[i] < 0 || surf->tris[i] >= surf->num_nodes)
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "triangle %ld refers to node %ld, but there are %ld nodes",
                              (long)(i / 3), (long)surf->tris[i], (long)surf->num_nodes);
    defo_index *map = defo_malloc(nn * sizeof *map + 1);
    if (!map) return defo_error_oom("shell mesh", nn * sizeof *map);
    for (size_t i = 0; i < nn; i++) map[i] = -1;
    for (size_t i = 0; i < 3 * nt; i++) map[surf->tris[i]] = 0;
    defo_index used = 0;
    for (size_t i = 0; i < nn; i++)
        if (map[i] == 0) map[i] = used++;
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_create_shell(&m);
    if (!s) s = defo_mesh_reserve(m, used, surf->num_tris, 0);
    for (size_t i = 0; !s && i < nn; i++)
        if (map[i] >= 0)
            s = defo_mesh_add_node(m, surf->x[3 * i], surf->x[3 * i + 1], surf->x[3 * i + 2], NULL);
    for (size_t t = 0; !s && t < nt; t++) {
        const defo_index *v = surf->tris + 3 * t;
        const defo_index e[3] = {map[v[0]], map[v[1]], map[v[2]]};
        s = defo_mesh_add_elem(m, e, surf->tri_tag ? surf->tri_tag[t] : 0);
    }
    for (int g = 0; !s && g < surf->num_groups; g++)
        if (surf->groups[g].dim == 2)
            s = defo_mesh_set_group(m, 2, surf->groups[g].tag, surf->groups[g].name);
    /* point fields of the kept nodes */
    double *buf = NULL;
    for (int f = 0; !s && f < surf->num_fields; f++) {
        const defo_field *fd = &surf->fields[f];
        if (fd->location != DEFO_FIELD_POINT) continue;
        const size_t c = (size_t)fd->components;
        double *nb = defo_realloc(buf, ((size_t)used * c + 1) * sizeof *buf);
        if (!nb) {
            s = defo_error_oom("shell mesh fields", (size_t)used * c * sizeof *buf);
            break;
        }
        buf = nb;
        for (size_t i = 0; i < nn; i++)
            if (map[i] >= 0) memcpy(buf + (size_t)map[i] * c, fd->data + i * c, c * sizeof *buf);
        s = defo_mesh_add_field(m, fd->name, DEFO_FIELD_POINT, fd->components, buf);
    }
    defo_free(buf);
    defo_free(map);
    if (s) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return DEFO_OK;
}

/* An edge occurrence: sorted nodes, then the slot 3·t + i (local edge i). */
typedef struct edge_key {
    defo_index a, b;
    int64_t slot;
} edge_key;

static int edge_cmp(const void *pa, const void *pb) {
    const edge_key *x = pa, *y = pb;
    if (x->a != y->a) return x->a < y->a ? -1 : 1;
    if (x->b != y->b) return x->b < y->b ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

static defo_status check_shell(const defo_mesh *mesh, const char *fn) {
    if (!mesh) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh is NULL", fn);
    if (mesh->nodes_per_elem != 3)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: not a shell mesh (%d nodes per element; shells have 3)", fn,
                          mesh->nodes_per_elem);
    for (size_t i = 0; i < 3 * (size_t)mesh->num_elems; i++)
        if (mesh->elems[i] < 0 || mesh->elems[i] >= mesh->num_nodes)
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "element %ld refers to node %ld, but there are %ld nodes",
                              (long)(i / 3), (long)mesh->elems[i], (long)mesh->num_nodes);
    return DEFO_OK;
}

/* The sorted edge occurrences of every triangle (3 per triangle). */
static defo_status sorted_edges(const defo_mesh *mesh, edge_key **out) {
    const size_t nt = (size_t)mesh->num_elems;
    edge_key *k = defo_malloc(3 * nt * sizeof *k + 1);
    if (!k) return defo_error_oom("shell edges", 3 * nt * sizeof *k);
    for (size_t t = 0; t < nt; t++) {
        const defo_index *v = mesh->elems + 3 * t;
        for (int i = 0; i < 3; i++) {
            const defo_index p = v[(i + 1) % 3], q = v[(i + 2) % 3];
            edge_key *e = &k[3 * t + (size_t)i];
            e->a = p < q ? p : q;
            e->b = p < q ? q : p;
            e->slot = (int64_t)(3 * t + (size_t)i);
        }
    }
    qsort(k, 3 * nt, sizeof *k, edge_cmp);
    *out = k;
    return DEFO_OK;
}

/* The first node of local edge i of triangle v (as the triangle runs it). */
static defo_index edge_from(const defo_index *v, int i) {
    return v[(i + 1) % 3];
}

/* Two triangles with the same node set: DEFO_ERR_INVALID_MESH naming them. */
static defo_status find_duplicates(const defo_mesh *mesh) {
    const size_t nt = (size_t)mesh->num_elems;
    edge_key *k = defo_malloc(nt * sizeof *k + 1);
    defo_index *third = defo_malloc(nt * sizeof *third + 1);
    if (!k || !third) {
        defo_free(k);
        defo_free(third);
        return defo_error_oom("shell triangles", nt * sizeof *k);
    }
    /* key (a, b) = the two smallest nodes, slot = triangle; then compare c */
    for (size_t t = 0; t < nt; t++) {
        defo_index v[3] = {mesh->elems[3 * t], mesh->elems[3 * t + 1], mesh->elems[3 * t + 2]}, s;
        if (v[0] > v[1]) s = v[0], v[0] = v[1], v[1] = s;
        if (v[1] > v[2]) s = v[1], v[1] = v[2], v[2] = s;
        if (v[0] > v[1]) s = v[0], v[0] = v[1], v[1] = s;
        k[t].a = v[0];
        k[t].b = v[1];
        k[t].slot = (int64_t)t;
        third[t] = v[2];
    }
    qsort(k, nt, sizeof *k, edge_cmp);
    defo_status st = DEFO_OK;
    for (size_t i = 0; i < nt && !st; i++)
        for (size_t j = i + 1; j < nt && k[j].a == k[i].a && k[j].b == k[i].b; j++)
            if (third[k[j].slot] == third[k[i].slot]) {
                st = defo_error(DEFO_ERR_INVALID_MESH,
                                "elements %ld and %ld are the same triangle (nodes %ld %ld %ld): "
                                "remove the duplicate",
                                (long)k[i].slot, (long)k[j].slot, (long)k[i].a, (long)k[i].b,
                                (long)third[k[i].slot]);
                break;
            }
    defo_free(k);
    defo_free(third);
    return st;
}

void defo_shell_topology_free(defo_shell_topology *t) {
    if (!t) return;
    defo_free(t->hinge);
    defo_free(t->hinge_tri);
    defo_free(t->tri_hinge);
    defo_free(t->tri_opposite);
    defo_free(t->boundary_edge);
    defo_free(t->boundary_tri);
    memset(t, 0, sizeof *t);
}

/* Group the sorted occurrences: edge ranges [i, j).  Non-manifold edges are
 * an error; with orient == 0, two occurrences running the same way too. */
static defo_status check_edges(const defo_mesh *mesh, const edge_key *k, size_t n, int orient) {
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && k[j].a == k[i].a && k[j].b == k[i].b) j++;
        if (j - i > 2)
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "edge (%ld %ld) is shared by %ld triangles (elements %ld, %ld, "
                              "%ld...): a shell must be a manifold, bending needs exactly two "
                              "faces at an edge",
                              (long)k[i].a, (long)k[i].b, (long)(j - i), (long)(k[i].slot / 3),
                              (long)(k[i + 1].slot / 3), (long)(k[i + 2].slot / 3));
        if (j - i == 2 && !orient) {
            const defo_index t0 = (defo_index)(k[i].slot / 3), t1 = (defo_index)(k[i + 1].slot / 3);
            const int i0 = (int)(k[i].slot % 3), i1 = (int)(k[i + 1].slot % 3);
            if (edge_from(mesh->elems + 3 * (size_t)t0, i0) ==
                edge_from(mesh->elems + 3 * (size_t)t1, i1))
                return defo_error(DEFO_ERR_INVALID_MESH,
                                  "elements %ld and %ld are oriented opposite ways across edge "
                                  "(%ld %ld) (run defo_mesh_orient)",
                                  (long)t0, (long)t1, (long)k[i].a, (long)k[i].b);
        }
        i = j;
    }
    return DEFO_OK;
}

defo_status defo_mesh_shell_topology(const defo_mesh *mesh, defo_shell_topology *out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "shell topology: out is NULL");
    memset(out, 0, sizeof *out);
    defo_status s = check_shell(mesh, "shell topology");
    if (s) return s;
    s = find_duplicates(mesh);
    if (s) return s;
    edge_key *k = NULL;
    s = sorted_edges(mesh, &k);
    if (s) return s;
    const size_t n = 3 * (size_t)mesh->num_elems;
    s = check_edges(mesh, k, n, 0);
    if (s) {
        defo_free(k);
        return s;
    }
    size_t nh = 0, nb = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && k[j].a == k[i].a && k[j].b == k[i].b) j++;
        if (j - i == 2)
            nh++;
        else
            nb++;
        i = j;
    }
    const size_t nt = (size_t)mesh->num_elems;
    out->hinge = defo_malloc(4 * nh * sizeof(defo_index) + 1);
    out->hinge_tri = defo_malloc(2 * nh * sizeof(defo_index) + 1);
    out->tri_hinge = defo_malloc(3 * nt * sizeof(defo_index) + 1);
    out->tri_opposite = defo_malloc(3 * nt * sizeof(defo_index) + 1);
    out->boundary_edge = defo_malloc(2 * nb * sizeof(defo_index) + 1);
    out->boundary_tri = defo_malloc(nb * sizeof(defo_index) + 1);
    if (!out->hinge || !out->hinge_tri || !out->tri_hinge || !out->tri_opposite ||
        !out->boundary_edge || !out->boundary_tri) {
        defo_free(k);
        defo_shell_topology_free(out);
        return defo_error_oom("shell topology", (nh * 6 + nt * 6 + nb * 3) * sizeof(defo_index));
    }
    for (size_t i = 0; i < 3 * nt; i++) out->tri_hinge[i] = out->tri_opposite[i] = -1;
    size_t h = 0, b = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && k[j].a == k[i].a && k[j].b == k[i].b) j++;
        const defo_index t0 = (defo_index)(k[i].slot / 3);
        const int i0 = (int)(k[i].slot % 3);
        const defo_index *v0 = mesh->elems + 3 * (size_t)t0;
        if (j - i == 2) {
            const defo_index t1 = (defo_index)(k[i + 1].slot / 3);
            const int i1 = (int)(k[i + 1].slot % 3);
            const defo_index *v1 = mesh->elems + 3 * (size_t)t1;
            defo_index *hv = out->hinge + 4 * h;
            hv[0] = v0[(i0 + 1) % 3];
            hv[1] = v0[(i0 + 2) % 3];
            hv[2] = v0[i0];
            hv[3] = v1[i1];
            out->hinge_tri[2 * h] = t0;
            out->hinge_tri[2 * h + 1] = t1;
            out->tri_hinge[3 * (size_t)t0 + (size_t)i0] = (defo_index)h;
            out->tri_hinge[3 * (size_t)t1 + (size_t)i1] = (defo_index)h;
            out->tri_opposite[3 * (size_t)t0 + (size_t)i0] = v1[i1];
            out->tri_opposite[3 * (size_t)t1 + (size_t)i1] = v0[i0];
            h++;
        } else {
            out->boundary_edge[2 * b] = v0[(i0 + 1) % 3];
            out->boundary_edge[2 * b + 1] = v0[(i0 + 2) % 3];
            out->boundary_tri[b] = t0;
            b++;
        }
        i = j;
    }
    defo_free(k);
    out->num_hinges = (defo_index)nh;
    out->num_boundary_edges = (defo_index)nb;
    return DEFO_OK;
}

/* |(x1 − x0) × (x2 − x0)| and the longest edge of triangle v. */
static double twice_area(const double *x, const defo_index *v, double *longest) {
    const double *p0 = x + 3 * (size_t)v[0], *p1 = x + 3 * (size_t)v[1], *p2 = x + 3 * (size_t)v[2];
    const double a[3] = {p1[0] - p0[0], p1[1] - p0[1], p1[2] - p0[2]};
    const double b[3] = {p2[0] - p0[0], p2[1] - p0[1], p2[2] - p0[2]};
    const double c[3] = {p2[0] - p1[0], p2[1] - p1[1], p2[2] - p1[2]};
    const double n[3] = {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                         a[0] * b[1] - a[1] * b[0]};
    const double l2 = fmax(
        a[0] * a[0] + a[1] * a[1] + a[2] * a[2],
        fmax(b[0] * b[0] + b[1] * b[1] + b[2] * b[2], c[0] * c[0] + c[1] * c[1] + c[2] * c[2]));
    *longest = sqrt(l2);
    return sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
}

defo_status defo_mesh_shell_orient(defo_mesh *mesh, defo_index *flipped) {
    if (flipped) *flipped = 0;
    defo_status s = check_shell(mesh, "defo_mesh_orient");
    if (s) return s;
    const size_t nt = (size_t)mesh->num_elems;
    for (size_t t = 0; t < nt; t++) {
        double L;
        const double a2 = twice_area(mesh->x, mesh->elems + 3 * t, &L);
        if (!(a2 > 1e-12 * L * L))
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "element %ld is a degenerate triangle (zero area; nodes %ld %ld %ld)",
                              (long)t, (long)mesh->elems[3 * t], (long)mesh->elems[3 * t + 1],
                              (long)mesh->elems[3 * t + 2]);
    }
    s = find_duplicates(mesh);
    if (s) return s;
    edge_key *k = NULL;
    s = sorted_edges(mesh, &k);
    if (s) return s;
    const size_t n = 3 * nt;
    s = check_edges(mesh, k, n, 1);
    /* the neighbour across each local edge */
    defo_index *across = s ? NULL : defo_malloc(n * sizeof *across + 1);
    defo_index *queue = s ? NULL : defo_malloc(nt * sizeof *queue + 1);
    signed char *flip = s ? NULL : defo_calloc(nt + 1, 1); /* 0 unseen, 1 keep, 2 flip */
    if (!s && (!across || !queue || !flip)) s = defo_error_oom("shell orientation", n * 16);
    if (!s) {
        for (size_t i = 0; i < n; i++) across[i] = -1;
        for (size_t i = 0; i + 1 < n; i++)
            if (k[i].a == k[i + 1].a && k[i].b == k[i + 1].b) {
                across[k[i].slot] = (defo_index)(k[i + 1].slot);
                across[k[i + 1].slot] = (defo_index)(k[i].slot);
            }
        for (size_t seed = 0; seed < nt && !s; seed++) {
            if (flip[seed]) continue;
            size_t head = 0, tail = 0;
            flip[seed] = 1;
            queue[tail++] = (defo_index)seed;
            while (head < tail && !s) {
                const size_t t = (size_t)queue[head++];
                for (int i = 0; i < 3; i++) {
                    const defo_index o = across[3 * t + (size_t)i];
                    if (o < 0) continue;
                    const size_t u = (size_t)o / 3;
                    const int j = (int)((size_t)o % 3);
                    /* consistent when the edge runs opposite ways once both
                     * triangles carry their final orientation */
                    const int same =
                        edge_from(mesh->elems + 3 * t, i) == edge_from(mesh->elems + 3 * u, j);
                    const int want = (flip[t] == 2) ^ same ? 2 : 1;
                    if (!flip[u]) {
                        flip[u] = (signed char)want;
                        queue[tail++] = (defo_index)u;
                    } else if (flip[u] != want) {
                        s = defo_error(DEFO_ERR_INVALID_MESH,
                                       "the shell is not orientable (a Möbius strip): elements %ld "
                                       "and %ld cannot agree across edge (%ld %ld)",
                                       (long)t, (long)u,
                                       (long)mesh->elems[3 * t + (size_t)(i + 1) % 3],
                                       (long)mesh->elems[3 * t + (size_t)(i + 2) % 3]);
                    }
                }
            }
        }
    }
    defo_index count = 0;
    if (!s)
        for (size_t t = 0; t < nt; t++)
            if (flip[t] == 2) {
                defo_index *v = mesh->elems + 3 * t, tmp = v[1];
                v[1] = v[2];
                v[2] = tmp;
                count++;
            }
    defo_free(k);
    defo_free(across);
    defo_free(queue);
    defo_free(flip);
    if (!s && flipped) *flipped = count;
    return s;
}
