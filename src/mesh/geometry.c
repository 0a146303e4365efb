/*
 * mesh/geometry.c — the bounding box, and the tet10 Jacobian the generators
 * check when they move boundary edge nodes onto a curved surface.  Rest
 * data, masses, volumes and loads are the element layer's (defo/element.h).
 */
#include "defo/mesh.h"
#include "defo/math.h"
#include "base/base.h"
#include "mesh/mesh_internal.h"

#include <math.h>
#include <string.h>

/* Jacobian dX/dξ of a tet10 at barycentric point l (ξ = λ1..λ3). */
defo_mat3 defo_tet10_jacobian(const double *x, const defo_index *v, const double l[4]) {
    /* dN/dλ_k for each node, then dN/dξ_k = dN/dλ_k - dN/dλ_0 */
    double dn[10][4];
    memset(dn, 0, sizeof dn);
    for (int i = 0; i < 4; i++) dn[i][i] = 4 * l[i] - 1;
    for (int e = 0; e < 6; e++) {
        int a = defo_tet_edges[e][0], b = defo_tet_edges[e][1];
        dn[4 + e][a] = 4 * l[b];
        dn[4 + e][b] = 4 * l[a];
    }
    defo_mat3 j = defo_m3_zero();
    for (int i = 0; i < 10; i++) {
        const double *p = x + 3 * (size_t)v[i];
        for (int k = 0; k < 3; k++) {
            double d = dn[i][k + 1] - dn[i][0];
            for (int r = 0; r < 3; r++) j.m[r][k] += p[r] * d;
        }
    }
    return j;
}

double defo_mesh_mean_edge(const defo_mesh *mesh) {
    if (!mesh || mesh->num_elems <= 0) return 0.0;
    static const int tri_edges[3][2] = {{0, 1}, {1, 2}, {2, 0}};
    const int shell = mesh->nodes_per_elem == 3, per = shell ? 3 : 6;
    const int(*ed)[2] = shell ? tri_edges : defo_tet_edges;
    double sum = 0;
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + (size_t)e * (size_t)mesh->nodes_per_elem;
        for (int a = 0; a < per; a++) {
            const double *p0 = mesh->x + 3 * (size_t)v[ed[a][0]];
            const double *p1 = mesh->x + 3 * (size_t)v[ed[a][1]];
            sum += sqrt((p1[0] - p0[0]) * (p1[0] - p0[0]) + (p1[1] - p0[1]) * (p1[1] - p0[1]) +
                        (p1[2] - p0[2]) * (p1[2] - p0[2]));
        }
    }
    return sum / ((double)per * (double)mesh->num_elems);
}

defo_status defo_mesh_bbox(const defo_mesh *mesh, double lo[3], double hi[3]) {
    if (!mesh || !lo || !hi) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_bbox: NULL");
    if (mesh->num_nodes == 0) return defo_error(DEFO_ERR_INVALID_MESH, "defo_mesh_bbox: no nodes");
    for (int k = 0; k < 3; k++) lo[k] = hi[k] = mesh->x[k];
    for (size_t i = 1; i < (size_t)mesh->num_nodes; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], mesh->x[3 * i + (size_t)k]);
            hi[k] = fmax(hi[k], mesh->x[3 * i + (size_t)k]);
        }
    return DEFO_OK;
}
