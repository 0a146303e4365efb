/*
 * mesh/geometry.c — rest-state data, volumes, lumped masses, bounding box.
 *
 * Rest data (ITF04 §3, TSIF05 §5): Dm = [X1-X0, X2-X0, X3-X0], F = Ds Dm⁻¹,
 * Bm = -V Dm⁻ᵀ so that the nodal forces of a stress P are G = P Bm and
 * g0 = -(g1+g2+g3).  Column i of Bm is A_i N_i / 3 (outward area-weighted
 * normal of the face opposite node i): ∇λ_i = Dm⁻ᵀ e_i = -A_i N_i / (3V).
 * tet10 elements use their corners (the affine part, as MTPS08 §4.1's
 * quadratic elements are straight-sided at rest unless snapped).
 *
 * Volumes of tet10 elements are integrated exactly: det J of the quadratic
 * map is a cubic polynomial, and the 5-point Keast rule is exact for cubics.
 *
 * Lumped mass (tet10): HRZ lumping.  With barycentric λ and ∫λ^k dV =
 * k!·3!/(k+3)!·V, the consistent mass diagonal is ∫(λ(2λ-1))² = V/70 for a
 * corner and ∫(4λaλb)² = 8V/105 for an edge node; their sum is 18V/35, so
 * scaling to V gives corners V/36 and edges 4V/27 (4/36 + 6·4/27 = 1).
 *
 * Traction dead loads (TSIF05 §11 loads): a constant traction t on a linear
 * boundary triangle of area A gives ∫ N_i t dA = t·A/3 at each corner.
 *
 * Sums over elements run sequentially in element order: deterministic.
 */
#include "defo/mesh.h"
#include "defo/math.h"
#include "base/base.h"
#include "mesh/mesh_internal.h"

#include <math.h>
#include <string.h>

static defo_mat3 corner_dm(const double *x, const defo_index *v) {
    defo_vec3 p0 = defo_v3_load(x + 3 * (size_t)v[0]);
    return defo_m3_from_cols(defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[1]), p0),
                             defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[2]), p0),
                             defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[3]), p0));
}

static double longest_edge(const double *x, const defo_index *v) {
    double l2 = 0;
    for (int e = 0; e < 6; e++) {
        defo_vec3 a = defo_v3_load(x + 3 * (size_t)v[defo_tet_edges[e][0]]);
        defo_vec3 b = defo_v3_load(x + 3 * (size_t)v[defo_tet_edges[e][1]]);
        l2 = fmax(l2, defo_v3_norm2(defo_v3_sub(b, a)));
    }
    return sqrt(l2);
}

static defo_status check_volume_mesh(const defo_mesh *mesh, const char *fn) {
    if (!mesh) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh is NULL", fn);
    if (mesh->num_elems > 0 && mesh->nodes_per_elem != 4 && mesh->nodes_per_elem != 10)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh has no tetrahedra", fn);
    return DEFO_OK;
}

void defo_rest_free(defo_rest *rest) {
    if (!rest) return;
    defo_free(rest->Dm_inv);
    defo_free(rest->Bm);
    defo_free(rest->volume);
    memset(rest, 0, sizeof *rest);
}

defo_status defo_rest_compute(const defo_mesh *mesh, defo_rest *rest) {
    if (!rest) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_rest_compute: rest is NULL");
    memset(rest, 0, sizeof *rest);
    defo_status s = check_volume_mesh(mesh, "defo_rest_compute");
    if (s) return s;
    size_t ne = (size_t)mesh->num_elems;
    rest->Dm_inv = defo_malloc(ne * 9 * sizeof(double));
    rest->Bm = defo_malloc(ne * 9 * sizeof(double));
    rest->volume = defo_malloc(ne * sizeof(double));
    if (!rest->Dm_inv || !rest->Bm || !rest->volume) {
        defo_rest_free(rest);
        return defo_error_oom("rest data", ne * 19 * sizeof(double));
    }
    int npe = mesh->nodes_per_elem;
    for (size_t e = 0; e < ne; e++) {
        const defo_index *v = mesh->elems + e * (size_t)npe;
        for (int a = 0; a < 4; a++) {
            if (v[a] < 0 || v[a] >= mesh->num_nodes) {
                defo_rest_free(rest);
                return defo_error(DEFO_ERR_INVALID_MESH,
                                  "element %ld refers to node %ld, but there are %ld nodes",
                                  (long)e, (long)v[a], (long)mesh->num_nodes);
            }
        }
        defo_mat3 dm = corner_dm(mesh->x, v), inv;
        double det = defo_m3_det(dm), L = longest_edge(mesh->x, v);
        /* degenerate relative to the element's size, as in defo_mesh_orient */
        if (!(det > 1e-12 * L * L * L) || !defo_m3_inverse(dm, &inv)) {
            defo_rest_free(rest);
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "element %ld is %s (6V = %.3g, longest edge %.3g; nodes %ld %ld %ld "
                              "%ld)",
                              (long)e,
                              det < 0 && fabs(det) > 1e-12 * L * L * L ? "inverted" : "degenerate",
                              det, L, (long)v[0], (long)v[1], (long)v[2], (long)v[3]);
        }
        double vol = det / 6.0;
        defo_mat3 bm = defo_m3_scale(defo_m3_transpose(inv), -vol);
        memcpy(rest->Dm_inv + 9 * e, inv.m, 9 * sizeof(double));
        memcpy(rest->Bm + 9 * e, bm.m, 9 * sizeof(double));
        rest->volume[e] = vol;
    }
    rest->num_elems = mesh->num_elems;
    return DEFO_OK;
}

/* 5-point Keast rule on the reference tet, exact for cubics: barycentric
 * points and weights (weights sum to 1; multiply by the reference volume). */
static const double keast5_pts[5][4] = {{0.25, 0.25, 0.25, 0.25},
                                        {0.5, 1.0 / 6, 1.0 / 6, 1.0 / 6},
                                        {1.0 / 6, 0.5, 1.0 / 6, 1.0 / 6},
                                        {1.0 / 6, 1.0 / 6, 0.5, 1.0 / 6},
                                        {1.0 / 6, 1.0 / 6, 1.0 / 6, 0.5}};
static const double keast5_w[5] = {-0.8, 0.45, 0.45, 0.45, 0.45};

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

/* Signed volume of element e at positions x. */
static double elem_volume(const defo_mesh *mesh, const double *x, size_t e) {
    const defo_index *v = mesh->elems + e * (size_t)mesh->nodes_per_elem;
    if (mesh->nodes_per_elem == 4) return defo_m3_det(corner_dm(x, v)) / 6.0;
    double vol = 0;
    for (int q = 0; q < 5; q++)
        vol += keast5_w[q] * defo_m3_det(defo_tet10_jacobian(x, v, keast5_pts[q]));
    return vol / 6.0;
}

static defo_status check_indices(const defo_mesh *mesh) {
    int npe = mesh->nodes_per_elem;
    size_t n = (size_t)mesh->num_elems * (size_t)npe;
    for (size_t i = 0; i < n; i++)
        if (mesh->elems[i] < 0 || mesh->elems[i] >= mesh->num_nodes)
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "element %ld refers to node %ld, but there are %ld nodes",
                              (long)(i / (size_t)npe), (long)mesh->elems[i], (long)mesh->num_nodes);
    return DEFO_OK;
}

defo_status defo_mesh_volume(const defo_mesh *mesh, const double *x, double *volume) {
    if (!volume) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_volume: volume is NULL");
    *volume = 0;
    defo_status s = check_volume_mesh(mesh, "defo_mesh_volume");
    if (!s) s = check_indices(mesh);
    if (s) return s;
    if (!x) x = mesh->x;
    double total = 0;
    for (size_t e = 0; e < (size_t)mesh->num_elems; e++) total += elem_volume(mesh, x, e);
    *volume = total;
    return DEFO_OK;
}

static defo_status lumped_mass(const defo_mesh *mesh, double density, const double *per_elem,
                               double *mass, const char *fn) {
    defo_status s = check_volume_mesh(mesh, fn);
    if (s) return s;
    if (!mass) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mass is NULL", fn);
    if (!per_elem && !(density >= 0 && isfinite(density)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: density %g (must be finite and >= 0)", fn,
                          density);
    s = check_indices(mesh);
    if (s) return s;
    if (per_elem)
        for (defo_index e = 0; e < mesh->num_elems; e++)
            if (!(per_elem[e] >= 0 && isfinite(per_elem[e])))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "%s: element %ld has density %g (must be finite and >= 0)", fn,
                                  (long)e, per_elem[e]);
    memset(mass, 0, (size_t)mesh->num_nodes * sizeof *mass);
    int npe = mesh->nodes_per_elem;
    for (size_t e = 0; e < (size_t)mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + e * (size_t)npe;
        double rho = per_elem ? per_elem[e] : density;
        /* |V|: an inverted element still has positive mass */
        double m = rho * fabs(elem_volume(mesh, mesh->x, e));
        if (npe == 4) {
            for (int a = 0; a < 4; a++) mass[v[a]] += 0.25 * m;
        } else {
            for (int a = 0; a < 4; a++) mass[v[a]] += m / 36.0;
            for (int a = 4; a < 10; a++) mass[v[a]] += m * (4.0 / 27.0);
        }
    }
    return DEFO_OK;
}

defo_status defo_mesh_lumped_mass(const defo_mesh *mesh, double density, double *mass) {
    return lumped_mass(mesh, density, NULL, mass, "defo_mesh_lumped_mass");
}

defo_status defo_mesh_lumped_mass_per_elem(const defo_mesh *mesh, const double *density_per_elem,
                                           double *mass) {
    if (!density_per_elem)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_mesh_lumped_mass_per_elem: density_per_elem is NULL");
    return lumped_mass(mesh, 0, density_per_elem, mass, "defo_mesh_lumped_mass_per_elem");
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

defo_status defo_mesh_add_traction(const defo_mesh *mesh, const unsigned char *mark,
                                   const double t[3], double *f, double *area) {
    if (area) *area = 0;
    if (!mesh || !mark || !t || !f)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_add_traction: NULL argument");
    if (mesh->order != 1)
        return defo_error(DEFO_ERR_UNSUPPORTED, "defo_mesh_add_traction: tet4 meshes only");
    for (int k = 0; k < 3; k++)
        if (!isfinite(t[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "defo_mesh_add_traction: traction[%d] = %g is not finite", k, t[k]);
    defo_boundary b;
    defo_status st = defo_mesh_boundary(mesh, 0, &b);
    if (st) return st;
    double total = 0;
    for (defo_index q = 0; q < b.num_faces; q++) { /* faces in a fixed order */
        const defo_index *v = b.faces + 3 * (size_t)q;
        if (!mark[v[0]] || !mark[v[1]] || !mark[v[2]]) continue;
        defo_vec3 p0 = defo_v3_load(mesh->x + 3 * (size_t)v[0]);
        defo_vec3 p1 = defo_v3_load(mesh->x + 3 * (size_t)v[1]);
        defo_vec3 p2 = defo_v3_load(mesh->x + 3 * (size_t)v[2]);
        double a = 0.5 * defo_v3_norm(defo_v3_cross(defo_v3_sub(p1, p0), defo_v3_sub(p2, p0)));
        total += a;
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++) f[3 * (size_t)v[c] + (size_t)k] += t[k] * a / 3.0;
    }
    defo_boundary_free(&b);
    if (area) *area = total;
    return DEFO_OK;
}
