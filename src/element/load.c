/*
 * element/load.c — consistent traction loads on element faces and point
 * location in an element (defo/element.h).
 *
 * Traction: f_a = ∫_face N_a t dA.  On a 3-node face N_a is linear and the
 * integral is t·A/3 per corner (exact).  On a 6-node face the face is the
 * image of the reference triangle under the quadratic map x(l) = Σ X_a N_a(l)
 * with dA = |x,s × x,t| ds dt (s = l1, t = l2); the face rule (degree 7)
 * integrates it — exactly for a straight face, where the corners get
 * ∫ l(2l − 1) = 0 and each edge node ∫ 4 l_a l_b = A/3.
 *
 * Location (MTPS08 §6.2 embedding): the affine inverse of the corner
 * tetrahedron, then for tet10 Newton's method on x(ξ) = p with the exact
 * Jacobian of the quadratic map.
 */
#include "element/element_internal.h"

#include <math.h>
#include <string.h>

/* dN/ds, dN/dt (s = l1, t = l2, l0 = 1 − s − t) of the 6-node triangle. */
static void tri6_grad(const double l[3], double ds[6], double dt[6]) {
    const double d0[6] = {4 * l[0] - 1, 0, 0, 4 * l[1], 0, 4 * l[2]}; /* ∂/∂l0 */
    const double d1[6] = {0, 4 * l[1] - 1, 0, 4 * l[0], 4 * l[2], 0}; /* ∂/∂l1 */
    const double d2[6] = {0, 0, 4 * l[2] - 1, 0, 4 * l[1], 4 * l[0]}; /* ∂/∂l2 */
    for (int a = 0; a < 6; a++) {
        ds[a] = d1[a] - d0[a];
        dt[a] = d2[a] - d0[a];
    }
}

/* ∫ N_a t dA of one face (nodes v, 3 or 6) added to f; its area. */
static double face_load(const defo_mesh *mesh, const defo_quadrature *fr, const defo_index *v,
                        int fn, const double t[3], double *f) {
    if (fn == 3) {
        defo_vec3 p0 = defo_v3_load(mesh->x + 3 * (size_t)v[0]);
        defo_vec3 p1 = defo_v3_load(mesh->x + 3 * (size_t)v[1]);
        defo_vec3 p2 = defo_v3_load(mesh->x + 3 * (size_t)v[2]);
        double a = 0.5 * defo_v3_norm(defo_v3_cross(defo_v3_sub(p1, p0), defo_v3_sub(p2, p0)));
        for (int c = 0; c < 3; c++)
            for (int k = 0; k < 3; k++) f[3 * (size_t)v[c] + (size_t)k] += t[k] * a / 3.0;
        return a;
    }
    double load[6] = {0, 0, 0, 0, 0, 0}, total = 0;
    for (int p = 0; p < fr->num_points; p++) {
        double ds[6], dt[6];
        tri6_grad(fr->point + 3 * p, ds, dt);
        double xs[3] = {0, 0, 0}, xt[3] = {0, 0, 0};
        for (int a = 0; a < 6; a++)
            for (int k = 0; k < 3; k++) {
                xs[k] += mesh->x[3 * (size_t)v[a] + (size_t)k] * ds[a];
                xt[k] += mesh->x[3 * (size_t)v[a] + (size_t)k] * dt[a];
            }
        defo_vec3 n = defo_v3_cross(defo_v3(xs[0], xs[1], xs[2]), defo_v3(xt[0], xt[1], xt[2]));
        const double dA = 0.5 * fr->weight[p] * defo_v3_norm(n);
        total += dA;
        for (int a = 0; a < 6; a++) load[a] += dA * fr->shape[6 * p + a];
    }
    for (int a = 0; a < 6; a++)
        for (int k = 0; k < 3; k++) f[3 * (size_t)v[a] + (size_t)k] += t[k] * load[a];
    return total;
}

static defo_status check_traction(const double t[3], const char *what) {
    for (int k = 0; k < 3; k++)
        if (!isfinite(t[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: traction[%d] = %g is not finite",
                              what, k, t[k]);
    return DEFO_OK;
}

defo_status defo_element_face_load(const defo_mesh *mesh, const defo_index *elems,
                                   const int8_t *local_faces, defo_index count, const double t[3],
                                   double *f, double *area) {
    if (area) *area = 0;
    if (!mesh || (count > 0 && (!elems || !local_faces)) || !t || !f)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_element_face_load: NULL argument");
    const defo_element_ops *ops = defo_element_ops_for_mesh(mesh);
    if (!ops) return defo_error_prefix("defo_element_face_load");
    defo_status st = check_traction(t, "defo_element_face_load");
    if (st) return st;
    const int fn = ops->face_nodes;
    double total = 0;
    for (defo_index q = 0; q < count; q++) {
        const defo_index e = elems[q];
        const int lf = local_faces[q];
        if (e < 0 || e >= mesh->num_elems || lf < 0 || lf >= ops->num_faces)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "defo_element_face_load: face %ld (element %ld, local face %d) "
                              "does not exist",
                              (long)q, (long)e, lf);
        const defo_index *ev = mesh->elems + (size_t)e * (size_t)ops->nodes;
        defo_index v[6];
        for (int c = 0; c < fn; c++) v[c] = ev[ops->face[fn * lf + c]];
        total += face_load(mesh, &ops->face_rule, v, fn, t, f);
    }
    if (area) *area = total;
    return DEFO_OK;
}

defo_status defo_element_traction_load(const defo_mesh *mesh, const unsigned char *mark,
                                       const double t[3], double *f, double *area) {
    if (area) *area = 0;
    if (!mesh || !mark || !t || !f)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_element_traction_load: NULL argument");
    const defo_element_ops *ops = defo_element_ops_for_mesh(mesh);
    if (!ops) return defo_error_prefix("defo_element_traction_load");
    defo_status st = check_traction(t, "defo_element_traction_load");
    if (st) return st;
    defo_boundary b;
    st = defo_mesh_boundary(mesh, ops->order > 1, &b);
    if (st) return st;
    const int fn = b.nodes_per_face;
    double total = 0;
    for (defo_index q = 0; q < b.num_faces; q++) { /* faces in a fixed order */
        const defo_index *v = b.faces + (size_t)fn * (size_t)q;
        if (mark[v[0]] && mark[v[1]] && mark[v[2]])
            total += face_load(mesh, &ops->face_rule, v, fn, t, f);
    }
    defo_boundary_free(&b);
    if (area) *area = total;
    return DEFO_OK;
}

defo_status defo_element_locate(const defo_mesh *mesh, const double *x, defo_index e,
                                const double p[3], double bary[4], int *converged) {
    if (converged) *converged = 0;
    const defo_element_ops *ops = defo_element_ops_for_mesh(mesh);
    if (!ops) return defo_error_prefix("defo_element_locate");
    if (!p || !bary || e < 0 || e >= mesh->num_elems)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_element_locate: element %ld of %ld",
                          (long)e, (long)mesh->num_elems);
    if (!x) x = mesh->x;
    const defo_index *v = mesh->elems + (size_t)e * (size_t)ops->nodes;
    if (ops->kind == DEFO_ELEMENT_TRI3) {
        /* the closest point of the triangle's plane: J = [x1 − x0, x2 − x0,
         * n̂] takes p − x0 to (λ1, λ2, distance along n̂) */
        double J[9];
        defo_element_jacobian(ops, x, v, ops->stiffness.point, J);
        defo_mat3 Jm, Ji;
        memcpy(Jm.m, J, sizeof J);
        if (!defo_m3_inverse(Jm, &Ji))
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "defo_element_locate: element %ld is a degenerate triangle", (long)e);
        const double *x0 = x + 3 * (size_t)v[0];
        const defo_vec3 xi = defo_m3_mulv(Ji, defo_v3(p[0] - x0[0], p[1] - x0[1], p[2] - x0[2]));
        bary[0] = 1.0 - xi.x - xi.y;
        bary[1] = xi.x;
        bary[2] = xi.y;
        bary[3] = 0.0;
        if (converged) *converged = 1;
        return DEFO_OK;
    }
    const defo_element_ops *lin = defo_element_ops_of(DEFO_ELEMENT_TET4);
    double J[9];
    defo_element_jacobian(lin, x, v, lin->stiffness.point, J);
    defo_mat3 Jm, Ji;
    memcpy(Jm.m, J, sizeof J);
    if (!defo_m3_inverse(Jm, &Ji))
        return defo_error(DEFO_ERR_INVALID_MESH, "defo_element_locate: element %ld is flat",
                          (long)e);
    const double *x0 = x + 3 * (size_t)v[0];
    defo_vec3 xi = defo_m3_mulv(Ji, defo_v3(p[0] - x0[0], p[1] - x0[1], p[2] - x0[2]));
    int ok = 1;
    if (ops->order > 1) {
        const double L = defo_element_corner_length(x, v);
        ok = 0;
        for (int it = 0; it < 20 && !ok; it++) {
            double l[4] = {1.0 - xi.x - xi.y - xi.z, xi.x, xi.y, xi.z};
            double N[DEFO_ELEMENT_MAX_NODES];
            ops->shape(l, N);
            double r[3] = {-p[0], -p[1], -p[2]};
            for (int a = 0; a < ops->nodes; a++)
                for (int k = 0; k < 3; k++) r[k] += N[a] * x[3 * (size_t)v[a] + (size_t)k];
            if (sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]) <= 1e-13 * L) {
                ok = 1;
                break;
            }
            defo_element_jacobian(ops, x, v, l, J);
            memcpy(Jm.m, J, sizeof J);
            if (!defo_m3_inverse(Jm, &Ji)) break;
            defo_vec3 d = defo_m3_mulv(Ji, defo_v3(r[0], r[1], r[2]));
            xi = defo_v3_sub(xi, d);
        }
    }
    bary[0] = 1.0 - xi.x - xi.y - xi.z;
    bary[1] = xi.x;
    bary[2] = xi.y;
    bary[3] = xi.z;
    if (converged) *converged = ok;
    return DEFO_OK;
}
