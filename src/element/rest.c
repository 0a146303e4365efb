/*
 * element/rest.c — rest data per quadrature point (defo/element.h).
 *
 * For element e and stiffness point q: J = dX/dξ = Σ_a X_a ∇ξN_a(q)ᵀ (the
 * reference coordinates ξ = λ1..λ3), its inverse and the volume weight
 * w = ω_q det J / 6.  For tet4, J = Dm = [X1−X0, X2−X0, X3−X0] (ITF04 §3)
 * computed as the same sum, which rounds exactly like the differences.
 * The exact element volume comes from the mass rule (degree 7 ≥ 3, the degree
 * of det J of a curved tet10).  The eigenvalue length 4/√γ bounds the
 * element's highest frequency for the explicit step (γ from its gradients
 * and lumped masses, eigen_length below).
 *
 * tri3 (shells, ITF04 §8): J = [X1 − X0, X2 − X0, N̂] (N̂ the unit normal),
 * w = det J / 2 = the area, and the triangle's 2-D rest frame: axes b1
 * along X1 − X0 and b2 = N̂ × b1, and Dm⁻¹ with Dm = Bᵀ[X1 − X0, X2 − X0]
 * (B = [b1 b2]), so that F = Ds Dm⁻¹ is the 3×2 deformation gradient.
 *
 * Fibre directions (ITF04 §6.1), when set, are unit vectors per stiffness
 * point: the transversely isotropic kernels read them beside J⁻¹ and w.
 *
 * Invariants: det J > 1e-12 L³ (tri3: 1e-12 L²) at every stiffness point
 * and every corner (L the longest corner edge), so J⁻¹ and w are finite and w > 0; arrays are
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
    double *eigen;  /* per e: eigenvalue length */
    double *fibre;  /* 3 per (e, q): unit fibre directions, or NULL */
    double *frame;  /* tri3: 10 per e, b1, b2, Dm⁻¹ (row-major); NULL otherwise */
};

void defo_element_rest_destroy(defo_element_rest *r) {
    if (!r) return;
    defo_free(r->jinv);
    defo_free(r->weight);
    defo_free(r->volume);
    defo_free(r->eigen);
    defo_free(r->fibre);
    defo_free(r->frame);
    defo_free(r);
}

/* det J at barycentric point l of element v. */
static double det_at(const defo_element_ops *ops, const double *x, const defo_index *v,
                     const double l[4]) {
    double J[9];
    defo_element_jacobian(ops, x, v, l, J);
    return defo_det9(J);
}

/* The eigenvalue length of element v (see defo_element_rest_eigen_length):
 * 4/√γ with γ the largest eigenvalue of m^{-1/2} K m^{-1/2}, K_ab =
 * Σ_q w_q ∇N_a·∇N_b over the stiffness points (∇N_a = J⁻ᵀ∇ξN_a) and m the
 * element's lumped masses at unit density. */
static double eigen_length(const defo_element_ops *ops, const double *x, const defo_index *v,
                           const double *jinv, const double *w) {
    const int P = ops->nodes, nq = ops->stiffness.num_points;
    double K[DEFO_ELEMENT_MAX_NODES * DEFO_ELEMENT_MAX_NODES] = {0}, m[DEFO_ELEMENT_MAX_NODES];
    for (int q = 0; q < nq; q++) {
        const double *g = ops->stiffness.grad + 3 * P * q, *Ji = jinv + 9 * q;
        double b[DEFO_ELEMENT_MAX_NODES][3];
        for (int a = 0; a < P; a++)
            for (int k = 0; k < 3; k++)
                b[a][k] = g[3 * a] * Ji[k] + g[3 * a + 1] * Ji[3 + k] + g[3 * a + 2] * Ji[6 + k];
        for (int a = 0; a < P; a++)
            for (int c = 0; c < P; c++)
                K[a * P + c] += w[q] * (b[a][0] * b[c][0] + b[a][1] * b[c][1] + b[a][2] * b[c][2]);
    }
    defo_element_lumped_shares(ops, x, v, 1.0, m);
    for (int a = 0; a < P; a++) {
        if (!(m[a] > 0)) return 0.0;
        for (int c = 0; c < P; c++) K[a * P + c] /= sqrt(m[a] * m[c]);
    }
    double lam[DEFO_ELEMENT_MAX_NODES];
    defo_symn_eigen(P, K, lam, NULL);
    double gamma = -INFINITY;
    for (int a = 0; a < P; a++) gamma = lam[a] > gamma ? lam[a] : gamma;
    return gamma > 0 ? 4.0 / sqrt(gamma) : 0.0;
}

/* tri3: the 2-D rest frame of J = [X1 − X0, X2 − X0, N̂] (row-major): b1,
 * b2, then Dm⁻¹ (2×2 row-major), Dm = Bᵀ [X1 − X0, X2 − X0]. */
static void rest_frame(const double J[9], double out[10]) {
    const double e1[3] = {J[0], J[3], J[6]}, e2[3] = {J[1], J[4], J[7]}, n[3] = {J[2], J[5], J[8]};
    const double l1 = sqrt(e1[0] * e1[0] + e1[1] * e1[1] + e1[2] * e1[2]);
    const double b1[3] = {e1[0] / l1, e1[1] / l1, e1[2] / l1};
    const double b2[3] = {n[1] * b1[2] - n[2] * b1[1], n[2] * b1[0] - n[0] * b1[2],
                          n[0] * b1[1] - n[1] * b1[0]};
    const double d00 = l1, d01 = b1[0] * e2[0] + b1[1] * e2[1] + b1[2] * e2[2];
    const double d11 = b2[0] * e2[0] + b2[1] * e2[1] + b2[2] * e2[2]; /* > 0: 2A / |e1| */
    memcpy(out, b1, sizeof b1);
    memcpy(out + 3, b2, sizeof b2);
    /* Dm = [[d00, d01], [0, d11]] */
    out[6] = 1.0 / d00;
    out[7] = -d01 / (d00 * d11);
    out[8] = 0.0;
    out[9] = 1.0 / d11;
}

static defo_status bad_element(const defo_mesh *mesh, defo_index e, double det, double L) {
    const defo_index *v = mesh->elems + (size_t)e * (size_t)mesh->nodes_per_elem;
    if (mesh->nodes_per_elem == 3)
        return defo_error(DEFO_ERR_INVALID_MESH,
                          "element %ld is a degenerate triangle (zero area: twice the area %.3g, "
                          "longest edge %.3g; corners %ld %ld %ld)",
                          (long)e, det, L, (long)v[0], (long)v[1], (long)v[2]);
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
    r->eigen = defo_malloc(ne * sizeof(double) + 1);
    const int tri = ops->kind == DEFO_ELEMENT_TRI3;
    if (tri) r->frame = defo_malloc(10 * ne * sizeof(double) + 1);
    if (!r->jinv || !r->weight || !r->volume || !r->eigen || (tri && !r->frame)) {
        defo_element_rest_destroy(r);
        return defo_error_oom("element rest data", ne * (size_t)nq * 10 * sizeof(double));
    }
    static const double corner[4][4] = {{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1}};
    for (size_t e = 0; e < ne; e++) {
        const defo_index *v = mesh->elems + e * (size_t)npe;
        const double L = defo_element_corner_length_n(mesh->x, v, ops->corners),
                     tol = 1e-12 * L * L * (tri ? 1.0 : L);
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
            r->weight[e * (size_t)nq + (size_t)q] =
                ops->stiffness.weight[q] * det * defo_element_ref_measure(ops);
            if (tri) rest_frame(J, r->frame + 10 * e);
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
            vol = r->weight[e]; /* det Dm / 6 (tri3: the area): exact */
        } else {
            for (int q = 0; q < ops->mass.num_points; q++)
                vol += ops->mass.weight[q] * det_at(ops, mesh->x, v, ops->mass.point + 4 * q);
            vol /= 6.0;
        }
        r->volume[e] = vol;
        r->eigen[e] =
            eigen_length(ops, mesh->x, v, r->jinv + 9 * e * (size_t)nq, r->weight + e * (size_t)nq);
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
const double *defo_element_rest_eigen_length(const defo_element_rest *r) {
    return r ? r->eigen : NULL;
}
defo_status defo_element_rest_set_fibres(defo_element_rest *r, const double *dir) {
    if (!r) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_element_rest_set_fibres: NULL");
    if (!dir) {
        defo_free(r->fibre);
        r->fibre = NULL;
        return DEFO_OK;
    }
    const size_t np = (size_t)r->num_elems * (size_t)r->points;
    for (size_t p = 0; p < np; p++) {
        const double *a = dir + 3 * p;
        const int finite = isfinite(a[0]) && isfinite(a[1]) && isfinite(a[2]);
        if (!finite || (a[0] == 0 && a[1] == 0 && a[2] == 0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "element %ld point %d: fibre direction (%g, %g, %g) is %s",
                              (long)(p / (size_t)r->points), (int)(p % (size_t)r->points), a[0],
                              a[1], a[2], finite ? "zero" : "not finite");
    }
    double *f = r->fibre ? r->fibre : defo_malloc(3 * np * sizeof(double) + 1);
    if (!f) return defo_error_oom("fibre directions", 3 * np * sizeof(double));
    for (size_t p = 0; p < np; p++) {
        /* scaled by the largest component first: no overflow or underflow */
        const double *a = dir + 3 * p;
        const double m = fmax(fabs(a[0]), fmax(fabs(a[1]), fabs(a[2])));
        const double b[3] = {a[0] / m, a[1] / m, a[2] / m};
        const double inv = 1.0 / sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
        for (int k = 0; k < 3; k++) f[3 * p + (size_t)k] = b[k] * inv;
    }
    r->fibre = f;
    return DEFO_OK;
}

const double *defo_element_rest_frame(const defo_element_rest *r) {
    return r ? r->frame : NULL;
}

const double *defo_element_rest_fibres(const defo_element_rest *r) {
    return r ? r->fibre : NULL;
}

size_t defo_element_rest_bytes(const defo_element_rest *r) {
    if (!r) return 0;
    return sizeof *r + (size_t)r->num_elems * ((size_t)r->points * 10 + 2) * sizeof(double) +
           (r->frame ? 10 * (size_t)r->num_elems * sizeof(double) : 0) +
           (r->fibre ? 3 * (size_t)r->num_elems * (size_t)r->points * sizeof(double) : 0);
}
