/*
 * element/rest.c — rest data per quadrature point (defo/element.h).
 *
 * For element e and stiffness point q: J = dX/dξ = Σ_a X_a ∇ξN_a(q)ᵀ (the
 * reference coordinates ξ = λ1..λ3), its inverse and the volume weight
 * w = ω_q det J / 6.  For tet4, J = Dm = [X1−X0, X2−X0, X3−X0] (ITF04 §3)
 * computed as the same sum, which rounds exactly like the differences.
 * The exact element volume comes from the mass rule (degree 7 ≥ 3, the degree
 * of det J of a curved tet10).  The element length for the explicit step is
 * the smallest altitude 3V/A_max of the corner tetrahedron over the order.
 *
 * Invariants: det J > 1e-12 L³ at every stiffness point and every corner
 * (L the longest corner edge), so J⁻¹ and w are finite and w > 0; arrays are
 * element-major; nothing depends on the thread count (sequential loop).
 */
#include "element/element_internal.h"

#include <math.h>
#include <string.h>

struct defo_element_rest {
    const defo_element_ops *ops;
    defo_index num_elems;
    int points;
    double *jinv;   /* 9 per (e, q) */
    double *weight; /* per (e, q) */
    double *volume; /* per e */
    double *length; /* per e */
};

void defo_element_rest_destroy(defo_element_rest *r) {
    if (!r) return;
    defo_free(r->jinv);
    defo_free(r->weight);
    defo_free(r->volume);
    defo_free(r->length);
    defo_free(r);
}

/* det J at barycentric point l of element v. */
static double det_at(const defo_element_ops *ops, const double *x, const defo_index *v,
                     const double l[4]) {
    double J[9];
    defo_element_jacobian(ops, x, v, l, J);
    return defo_det9(J);
}

static double min_altitude(const double *x, const defo_index *v, double vol) {
    double amax = 0;
    for (int f = 0; f < 4; f++) {
        defo_vec3 a = defo_v3_load(x + 3 * (size_t)v[defo_tet_faces[f][0]]);
        defo_vec3 b = defo_v3_load(x + 3 * (size_t)v[defo_tet_faces[f][1]]);
        defo_vec3 c = defo_v3_load(x + 3 * (size_t)v[defo_tet_faces[f][2]]);
        amax = fmax(amax, 0.5 * defo_v3_norm(defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a))));
    }
    return amax > 0 ? 3.0 * fabs(vol) / amax : 0.0;
}

static defo_status bad_element(const defo_mesh *mesh, defo_index e, double det, double L) {
    const defo_index *v = mesh->elems + (size_t)e * (size_t)mesh->nodes_per_elem;
    return defo_error(
        DEFO_ERR_INVALID_MESH,
        "element %ld is %s (det J = %.3g, longest edge %.3g; corners %ld %ld %ld %ld)", (long)e,
        det < 0 && fabs(det) > 1e-12 * L * L * L ? "inverted" : "degenerate", det, L, (long)v[0],
        (long)v[1], (long)v[2], (long)v[3]);
}

defo_status defo_element_rest_create(const defo_mesh *mesh, defo_element_rest **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_element_rest_create: out is NULL");
    *out = NULL;
    const defo_element_ops *ops = defo_element_ops_for_mesh(mesh);
    if (!ops) return defo_last_status();
    const int npe = ops->nodes, nq = ops->stiffness.num_points;
    const size_t ne = (size_t)mesh->num_elems;
    for (size_t i = 0; i < ne * (size_t)npe; i++)
        if (mesh->elems[i] < 0 || mesh->elems[i] >= mesh->num_nodes)
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "element %ld refers to node %ld, but there are %ld nodes",
                              (long)(i / (size_t)npe), (long)mesh->elems[i], (long)mesh->num_nodes);
    defo_element_rest *r = defo_calloc(1, sizeof *r);
    if (!r) return defo_error_oom("element rest data", sizeof *r);
    r->ops = ops;
    r->num_elems = mesh->num_elems;
    r->points = nq;
    r->jinv = defo_malloc(9 * ne * (size_t)nq * sizeof(double) + 1);
    r->weight = defo_malloc(ne * (size_t)nq * sizeof(double) + 1);
    r->volume = defo_malloc(ne * sizeof(double) + 1);
    r->length = defo_malloc(ne * sizeof(double) + 1);
    if (!r->jinv || !r->weight || !r->volume || !r->length) {
        defo_element_rest_destroy(r);
        return defo_error_oom("element rest data", ne * (size_t)nq * 10 * sizeof(double));
    }
    static const double corner[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
    for (size_t e = 0; e < ne; e++) {
        const defo_index *v = mesh->elems + e * (size_t)npe;
        const double L = defo_element_corner_length(mesh->x, v), tol = 1e-12 * L * L * L;
        for (int q = 0; q < nq; q++) {
            double J[9];
            defo_element_jacobian(ops, mesh->x, v, ops->stiffness.point + 4 * q, J);
            defo_mat3 Jm, Ji;
            memcpy(Jm.m, J, sizeof J);
            double det = defo_m3_det(Jm);
            if (!(det > tol) || !defo_m3_inverse(Jm, &Ji)) {
                defo_element_rest_destroy(r);
                return bad_element(mesh, (defo_index)e, det, L);
            }
            memcpy(r->jinv + 9 * (e * (size_t)nq + (size_t)q), Ji.m, 9 * sizeof(double));
            r->weight[e * (size_t)nq + (size_t)q] = ops->stiffness.weight[q] * det / 6.0;
        }
        if (ops->order > 1)
            for (int c = 0; c < 4; c++) {
                double det = det_at(ops, mesh->x, v, corner[c]);
                if (!(det > tol)) {
                    defo_element_rest_destroy(r);
                    return bad_element(mesh, (defo_index)e, det, L);
                }
            }
        double vol = 0;
        if (ops->order == 1) {
            vol = r->weight[e]; /* det Dm / 6: exact */
        } else {
            for (int q = 0; q < ops->mass.num_points; q++)
                vol += ops->mass.weight[q] * det_at(ops, mesh->x, v, ops->mass.point + 4 * q);
            vol /= 6.0;
        }
        r->volume[e] = vol;
        double corner_vol = det_at(defo_element_ops_of(DEFO_ELEMENT_TET4), mesh->x, v, corner[0]);
        r->length[e] = min_altitude(mesh->x, v, corner_vol / 6.0) / ops->order;
    }
    *out = r;
    return DEFO_OK;
}

const defo_element_ops *defo_element_rest_ops(const defo_element_rest *r) {
    return r ? r->ops : NULL;
}
defo_index defo_element_rest_num_elems(const defo_element_rest *r) {
    return r ? r->num_elems : 0;
}
const double *defo_element_rest_jinv(const defo_element_rest *r) {
    return r ? r->jinv : NULL;
}
const double *defo_element_rest_weight(const defo_element_rest *r) {
    return r ? r->weight : NULL;
}
const double *defo_element_rest_volume(const defo_element_rest *r) {
    return r ? r->volume : NULL;
}
const double *defo_element_rest_length(const defo_element_rest *r) {
    return r ? r->length : NULL;
}
size_t defo_element_rest_bytes(const defo_element_rest *r) {
    if (!r) return 0;
    return sizeof *r + (size_t)r->num_elems * ((size_t)r->points * 10 + 2) * sizeof(double);
}
