/*
 * partition/partition.c — elements to parts, nodes to owners, and each
 * part's local elements (defo/partition.h; docs/distributed.md).
 *
 * METIS (Karypis & Kumar 1998, multilevel k-way) partitions the dual graph:
 * elements are vertices, joined when they share a face (three common
 * corners; tet10 meshes by their corners).  Its random choices come from a
 * fixed seed, so every process gets the same parts.  Without METIS, or when
 * it fails (more parts than elements), recursive coordinate bisection: the
 * elements sorted by the centroid coordinate along the longest side of their
 * bounding box (ties by index) and cut in the ratio of the parts on either
 * side, recursively.
 *
 * Invariants: every element has exactly one part in [0, parts), every node
 * one owner among the parts of its elements; everything is a function of
 * the mesh and the part count alone (no thread count, no process).
 */
#include "defo/partition.h"

#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef DEFO_HAVE_METIS
#include <metis.h>
#endif

const char *defo_partition_method_name(defo_partition_method m) {
    switch (m) {
    case DEFO_PARTITION_AUTO:
        return "auto";
    case DEFO_PARTITION_METIS:
        return "metis";
    case DEFO_PARTITION_RCB:
        return "rcb";
    }
    return "unknown";
}

int defo_partition_metis_available(void) {
#ifdef DEFO_HAVE_METIS
    return 1;
#else
    return 0;
#endif
}

void defo_partition_destroy(defo_partition *p) {
    if (!p) return;
    defo_free(p->elem_part);
    defo_free(p->node_owner);
    defo_free(p);
}

/* ------------------------------------------------------------ RCB */
typedef struct rcb_key {
    double key;
    defo_index elem;
} rcb_key;

static int rcb_cmp(const void *a, const void *b) {
    const rcb_key *x = a, *y = b;
    if (x->key < y->key) return -1;
    if (x->key > y->key) return 1;
    return (x->elem > y->elem) - (x->elem < y->elem);
}

/* keys[0..n) (elements with their centroids in cen) into parts first ..
 * first + parts − 1 */
static void rcb(rcb_key *keys, defo_index n, const double *cen, int first, int parts, int *out) {
    if (parts <= 1 || n <= 1) {
        for (defo_index i = 0; i < n; i++) out[keys[i].elem] = first;
        return;
    }
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const double c = cen[3 * (size_t)keys[i].elem + (size_t)k];
            lo[k] = fmin(lo[k], c);
            hi[k] = fmax(hi[k], c);
        }
    int axis = 0;
    for (int k = 1; k < 3; k++)
        if (hi[k] - lo[k] > hi[axis] - lo[axis]) axis = k;
    for (defo_index i = 0; i < n; i++) keys[i].key = cen[3 * (size_t)keys[i].elem + (size_t)axis];
    qsort(keys, (size_t)n, sizeof *keys, rcb_cmp);
    const int left = parts / 2;
    const defo_index cut = (defo_index)(((int64_t)n * left + parts / 2) / parts);
    rcb(keys, cut, cen, first, left, out);
    rcb(keys + cut, n - cut, cen, first + left, parts - left, out);
}

static defo_status partition_rcb(const defo_mesh *mesh, int parts, int *out) {
    const defo_index ne = mesh->num_elems;
    const int p = mesh->nodes_per_elem, corners = 4;
    double *cen = defo_malloc(3 * (size_t)ne * sizeof *cen + 1);
    rcb_key *keys = defo_malloc((size_t)ne * sizeof *keys + 1);
    if (!cen || !keys) {
        defo_free(cen);
        defo_free(keys);
        return defo_error_oom("partition", (size_t)ne * 40);
    }
    for (defo_index e = 0; e < ne; e++) {
        const defo_index *v = mesh->elems + (size_t)e * (size_t)p;
        for (int k = 0; k < 3; k++) {
            double s = 0;
            for (int a = 0; a < corners; a++) s += mesh->x[3 * (size_t)v[a] + (size_t)k];
            cen[3 * (size_t)e + (size_t)k] = 0.25 * s;
        }
        keys[e].elem = e;
    }
    rcb(keys, ne, cen, 0, parts, out);
    defo_free(cen);
    defo_free(keys);
    return DEFO_OK;
}

/* ------------------------------------------------------------ METIS */
#ifdef DEFO_HAVE_METIS
/* 0 on success */
static int partition_metis(const defo_mesh *mesh, int parts, int *out) {
    const defo_index ne = mesh->num_elems;
    const int p = mesh->nodes_per_elem;
    idx_t *eptr = defo_malloc(((size_t)ne + 1) * sizeof *eptr);
    idx_t *eind = defo_malloc(4 * (size_t)ne * sizeof *eind + 1);
    idx_t *epart = defo_malloc((size_t)ne * sizeof *epart + 1);
    idx_t *npart = defo_malloc((size_t)mesh->num_nodes * sizeof *npart + 1);
    int rc = -1;
    if (eptr && eind && epart && npart) {
        for (defo_index e = 0; e <= ne; e++) eptr[e] = (idx_t)(4 * e);
        for (defo_index e = 0; e < ne; e++)
            for (int a = 0; a < 4; a++)
                eind[4 * (size_t)e + (size_t)a] = (idx_t)mesh->elems[(size_t)e * (size_t)p + a];
        idx_t opts[METIS_NOPTIONS];
        METIS_SetDefaultOptions(opts);
        opts[METIS_OPTION_SEED] = 7; /* the same parts on every process and every run */
        opts[METIS_OPTION_NUMBERING] = 0;
        idx_t n_e = (idx_t)ne, n_n = (idx_t)mesh->num_nodes, common = 3, np = (idx_t)parts, cut = 0;
        rc = METIS_PartMeshDual(&n_e, &n_n, eptr, eind, NULL, NULL, &common, &np, NULL, opts, &cut,
                                epart, npart) == METIS_OK
                 ? 0
                 : -1;
        for (defo_index e = 0; rc == 0 && e < ne; e++) {
            if (epart[e] < 0 || epart[e] >= np) rc = -1;
            out[e] = (int)epart[e];
        }
    }
    defo_free(eptr);
    defo_free(eind);
    defo_free(epart);
    defo_free(npart);
    return rc;
}
#endif

/* ------------------------------------------------------------ owners */
static defo_status node_owners(const defo_mesh *mesh, defo_partition *P) {
    const int p = mesh->nodes_per_elem;
    defo_incidence inc;
    defo_status s = defo_incidence_build(&inc, mesh->elems, mesh->num_elems, p, mesh->num_nodes);
    if (s) return s;
    defo_index *owned = defo_calloc((size_t)P->parts + 1, sizeof *owned);
    if (!owned) {
        defo_incidence_free(&inc);
        return defo_error_oom("partition", (size_t)P->parts * sizeof *owned);
    }
    for (defo_index i = 0; i < mesh->num_nodes && !s; i++) {
        int best = -1;
        for (int64_t k = inc.offset[i]; k < inc.offset[i + 1]; k++) {
            const int q = P->elem_part[inc.slot[k] / p];
            if (best < 0 || owned[q] < owned[best] || (owned[q] == owned[best] && q < best))
                best = q;
        }
        if (best < 0)
            s = defo_error(DEFO_ERR_INVALID_MESH, "partition: node %ld belongs to no element",
                           (long)i);
        else {
            P->node_owner[i] = best;
            owned[best]++;
        }
    }
    defo_free(owned);
    defo_incidence_free(&inc);
    return s;
}

static defo_status check_mesh(const defo_mesh *mesh, int parts) {
    if (!mesh || (mesh->nodes_per_elem != 4 && mesh->nodes_per_elem != 10))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "partition: a tet4 or tet10 mesh is needed");
    if (parts < 1) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "partition: %d parts", parts);
    return DEFO_OK;
}

static defo_status alloc_partition(const defo_mesh *mesh, int parts, defo_partition **out) {
    defo_partition *P = defo_calloc(1, sizeof *P);
    if (!P) return defo_error_oom("partition", sizeof *P);
    P->parts = parts;
    P->num_elems = mesh->num_elems;
    P->num_nodes = mesh->num_nodes;
    P->elem_part = defo_calloc((size_t)mesh->num_elems + 1, sizeof *P->elem_part);
    P->node_owner = defo_calloc((size_t)mesh->num_nodes + 1, sizeof *P->node_owner);
    if (!P->elem_part || !P->node_owner) {
        defo_partition_destroy(P);
        return defo_error_oom("partition", (size_t)(mesh->num_elems + mesh->num_nodes) * 4);
    }
    *out = P;
    return DEFO_OK;
}

defo_status defo_partition_from_parts(const defo_mesh *mesh, int parts, const int *elem_part,
                                      defo_partition **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "partition: out is NULL");
    *out = NULL;
    defo_status s = check_mesh(mesh, parts);
    if (s) return s;
    for (defo_index e = 0; e < mesh->num_elems; e++)
        if (!elem_part || elem_part[e] < 0 || elem_part[e] >= parts)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "partition: element %ld has part %d, not in [0, %d)", (long)e,
                              elem_part ? elem_part[e] : -1, parts);
    defo_partition *P = NULL;
    s = alloc_partition(mesh, parts, &P);
    if (s) return s;
    P->method = DEFO_PARTITION_RCB;
    memcpy(P->elem_part, elem_part, (size_t)mesh->num_elems * sizeof *elem_part);
    s = node_owners(mesh, P);
    if (s) {
        defo_partition_destroy(P);
        return s;
    }
    *out = P;
    return DEFO_OK;
}

defo_status defo_partition_create(const defo_mesh *mesh, int parts, defo_partition_method method,
                                  defo_partition **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "partition: out is NULL");
    *out = NULL;
    defo_status s = check_mesh(mesh, parts);
    if (s) return s;
    if (method == DEFO_PARTITION_METIS && !defo_partition_metis_available())
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "partition: METIS was asked for but defo was built without it "
                          "(install libmetis-dev and configure again, or use rcb)");
    if (method != DEFO_PARTITION_AUTO && method != DEFO_PARTITION_METIS &&
        method != DEFO_PARTITION_RCB)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "partition: method %d is unknown",
                          (int)method);
    defo_partition *P = NULL;
    s = alloc_partition(mesh, parts, &P);
    if (s) return s;
    int done = parts == 1; /* calloc'd: every element in part 0 */
    P->method = DEFO_PARTITION_RCB;
#ifdef DEFO_HAVE_METIS
    if (!done && method != DEFO_PARTITION_RCB && mesh->num_elems >= parts) {
        done = partition_metis(mesh, parts, P->elem_part) == 0;
        if (done) P->method = DEFO_PARTITION_METIS;
    }
#endif
    if (!done) s = partition_rcb(mesh, parts, P->elem_part);
    if (!s) s = node_owners(mesh, P);
    if (s) {
        defo_partition_destroy(P);
        return defo_error_prefix("partition");
    }
    *out = P;
    return DEFO_OK;
}

defo_status defo_partition_local(const defo_partition *p, const defo_mesh *mesh, int part,
                                 defo_index **elems, unsigned char **counted, defo_index *count) {
    if (!p || !mesh || !elems || !count || part < 0 || part >= p->parts ||
        mesh->num_elems != p->num_elems || mesh->num_nodes != p->num_nodes)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "partition: bad arguments for the local elements");
    *elems = NULL;
    if (counted) *counted = NULL;
    const int npe = mesh->nodes_per_elem;
    defo_index n = 0;
    for (int pass = 0; pass < 2; pass++) {
        defo_index k = 0;
        for (defo_index e = 0; e < mesh->num_elems; e++) {
            const defo_index *v = mesh->elems + (size_t)e * (size_t)npe;
            int mine = 0;
            for (int a = 0; a < npe && !mine; a++) mine = p->node_owner[v[a]] == part;
            if (!mine) continue;
            if (pass == 1) {
                (*elems)[k] = e;
                if (counted) (*counted)[k] = p->node_owner[v[0]] == part;
            }
            k++;
        }
        if (pass == 0) {
            n = k;
            *elems = defo_malloc((size_t)n * sizeof **elems + 1);
            if (counted) *counted = defo_malloc((size_t)n + 1);
            if (!*elems || (counted && !*counted)) {
                defo_free(*elems);
                if (counted) defo_free(*counted);
                *elems = NULL;
                if (counted) *counted = NULL;
                return defo_error_oom("local elements", (size_t)n * 5);
            }
        }
    }
    *count = n;
    return DEFO_OK;
}
