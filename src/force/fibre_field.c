/*
 * force/fibre_field.c — fibre direction fields (defo/fibre.h) for the
 * transversely isotropic term of ITF04 §6.1 / TSIF05 §11: constant, per
 * element, per node (interpolated at the stiffness points), or a line of
 * action between two node sets.
 *
 * Line of action: the harmonic field u with u = 0 on `from`, u = 1 on `to`
 * and zero flux elsewhere minimises ∫|∇u|² dV; with u = u_D + y (u_D the
 * boundary values, 0 inside) the free values solve K y = −K u_D on the free
 * nodes, K_ab = Σ_q w_q (J⁻ᵀ∇ξN_a)·(J⁻ᵀ∇ξN_b) from the element rest data.
 * defo_cg_solve takes 3-vectors per node: u rides in the first component,
 * the other two stay 0 (their right-hand side is 0).  The fibre at a point
 * is ∇u = Σ_a u_a J⁻ᵀ∇ξN_a, normalised.
 *
 * Invariants: every output point is unit length or the call fails naming
 * the element; sequential loops (any thread count gives the same bits).
 */
#include "defo/fibre.h"

#include "defo/element.h"
#include "defo/solver.h"
#include "defo/math.h"

#include "base/base.h"

#include <math.h>
#include <string.h>

size_t defo_fibre_field_points(const defo_mesh *mesh) {
    const defo_element_ops *ops = mesh ? defo_element_ops_for_mesh(mesh) : NULL;
    return ops ? (size_t)mesh->num_elems * (size_t)ops->stiffness.num_points : 0;
}

/* The element kind of a mesh, or an error. */
static const defo_element_ops *kind_of(const defo_mesh *mesh, const char *what) {
    if (!mesh) {
        defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: mesh is NULL", what);
        return NULL;
    }
    const defo_element_ops *ops = defo_element_ops_for_mesh(mesh);
    if (!ops) defo_error_prefix("%s", what);
    return ops;
}

/* 1 when v is finite and nonzero. */
static int usable(const double *v) {
    return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]) &&
           (v[0] != 0 || v[1] != 0 || v[2] != 0);
}

/* v / |v| into o (v usable), scaled first against overflow. */
static void unit3(const double *v, double *o) {
    const double m = fmax(fabs(v[0]), fmax(fabs(v[1]), fabs(v[2])));
    const double b[3] = {v[0] / m, v[1] / m, v[2] / m};
    const double inv = 1.0 / sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    for (int k = 0; k < 3; k++) o[k] = b[k] * inv;
}

defo_status defo_fibre_field_constant(const defo_mesh *mesh, const double a[3], double *out) {
    const defo_element_ops *ops = kind_of(mesh, "fibre field");
    if (!ops) return defo_last_status();
    if (!a || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fibre field: NULL argument");
    if (!usable(a))
        return defo_error(
            DEFO_ERR_INVALID_ARGUMENT, "fibre direction (%g, %g, %g) is %s", a[0], a[1], a[2],
            isfinite(a[0]) && isfinite(a[1]) && isfinite(a[2]) ? "zero" : "not finite");
    double u[3];
    unit3(a, u);
    const size_t np = defo_fibre_field_points(mesh);
    for (size_t p = 0; p < np; p++) memcpy(out + 3 * p, u, sizeof u);
    return DEFO_OK;
}

defo_status defo_fibre_field_cells(const defo_mesh *mesh, const double *per_elem, double *out) {
    const defo_element_ops *ops = kind_of(mesh, "fibre field");
    if (!ops) return defo_last_status();
    if (!per_elem || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fibre field: NULL argument");
    const int nq = ops->stiffness.num_points;
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        const double *v = per_elem + 3 * (size_t)e;
        if (!usable(v))
            return defo_error(
                DEFO_ERR_INVALID_ARGUMENT, "element %ld: fibre direction (%g, %g, %g) is %s",
                (long)e, v[0], v[1], v[2],
                isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]) ? "zero" : "not finite");
        for (int q = 0; q < nq; q++) unit3(v, out + 3 * ((size_t)e * (size_t)nq + (size_t)q));
    }
    return DEFO_OK;
}

defo_status defo_fibre_field_nodes(const defo_mesh *mesh, const double *per_node, double *out) {
    const defo_element_ops *ops = kind_of(mesh, "fibre field");
    if (!ops) return defo_last_status();
    if (!per_node || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fibre field: NULL argument");
    for (defo_index i = 0; i < mesh->num_nodes; i++) {
        const double *v = per_node + 3 * (size_t)i;
        if (!usable(v))
            return defo_error(
                DEFO_ERR_INVALID_ARGUMENT, "node %ld: fibre direction (%g, %g, %g) is %s", (long)i,
                v[0], v[1], v[2],
                isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]) ? "zero" : "not finite");
    }
    const int P = ops->nodes, nq = ops->stiffness.num_points;
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + (size_t)e * (size_t)P;
        /* each node's unit axis, turned to agree with the first node's */
        double a[DEFO_ELEMENT_MAX_NODES][3];
        for (int k = 0; k < P; k++) {
            unit3(per_node + 3 * (size_t)v[k], a[k]);
            if (a[k][0] * a[0][0] + a[k][1] * a[0][1] + a[k][2] * a[0][2] < 0)
                for (int c = 0; c < 3; c++) a[k][c] = -a[k][c];
        }
        for (int q = 0; q < nq; q++) {
            const double *N = ops->stiffness.shape + (size_t)P * (size_t)q;
            double s[3] = {0, 0, 0};
            for (int k = 0; k < P; k++)
                for (int c = 0; c < 3; c++) s[c] += N[k] * a[k][c];
            const double n = sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]);
            /* a tet10 point weighs corners negatively: a cancelling
             * combination is refused rather than given a random axis */
            if (!(n > 1e-6))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "element %ld point %d: the node fibres cancel (their "
                                  "interpolation is %.3g long): the field turns too fast for "
                                  "the mesh",
                                  (long)e, q, n);
            for (int c = 0; c < 3; c++)
                out[3 * ((size_t)e * (size_t)nq + (size_t)q) + c] = s[c] / n;
        }
    }
    return DEFO_OK;
}

/* ------------------------------------------------------ line of action */
typedef struct laplace {
    const defo_mesh *mesh;
    const defo_element_ops *ops;
    const double *jinv, *w;
    double *grad; /* 3 per (e, q, a): J⁻ᵀ∇ξN_a */
} laplace;

/* y = K x on the first components (the others copied through as 0). */
static void laplace_apply(void *ctx, const double *x, double *y) {
    const laplace *L = ctx;
    const int P = L->ops->nodes, nq = L->ops->stiffness.num_points;
    memset(y, 0, 3 * (size_t)L->mesh->num_nodes * sizeof *y);
    for (defo_index e = 0; e < L->mesh->num_elems; e++) {
        const defo_index *v = L->mesh->elems + (size_t)e * (size_t)P;
        for (int q = 0; q < nq; q++) {
            const size_t pq = (size_t)e * (size_t)nq + (size_t)q;
            const double *G = L->grad + 3 * (size_t)P * pq;
            double g[3] = {0, 0, 0};
            for (int a = 0; a < P; a++)
                for (int k = 0; k < 3; k++) g[k] += x[3 * (size_t)v[a]] * G[3 * a + k];
            for (int a = 0; a < P; a++)
                y[3 * (size_t)v[a]] +=
                    L->w[pq] * (G[3 * a] * g[0] + G[3 * a + 1] * g[1] + G[3 * a + 2] * g[2]);
        }
    }
}

/* The elements inside an attachment (out all zero there) take the mean axis
 * of the elements they share a node with, pass by pass outward from the
 * field (each pass reads only the previous passes' results). */
static defo_status fill_attached(const defo_mesh *mesh, int nq, double *out, defo_index pending) {
    defo_node_elems ne;
    defo_status s = defo_mesh_node_elems(mesh, &ne);
    if (s) return s;
    const defo_index nel = mesh->num_elems;
    const int P = mesh->nodes_per_elem;
    unsigned char *done = defo_malloc((size_t)nel + 1), *now = defo_malloc((size_t)nel + 1);
    if (!done || !now) {
        defo_free(done), defo_free(now), defo_node_elems_free(&ne);
        return defo_error_oom("fibre line of action", 2 * (size_t)nel);
    }
    for (defo_index e = 0; e < nel; e++) {
        const double *a = out + 3 * (size_t)e * (size_t)nq;
        done[e] = a[0] != 0 || a[1] != 0 || a[2] != 0;
    }
    while (pending > 0 && !s) {
        memcpy(now, done, (size_t)nel);
        defo_index filled = 0;
        for (defo_index e = 0; e < nel; e++) {
            if (done[e]) continue;
            double sum[3] = {0, 0, 0}, ref[3] = {0, 0, 0};
            int any = 0;
            for (int k = 0; k < P; k++) {
                const defo_index v = mesh->elems[(size_t)e * (size_t)P + (size_t)k];
                for (int64_t j = ne.offset[v]; j < ne.offset[v + 1]; j++) {
                    const defo_index f = ne.elem[j];
                    if (!done[f]) continue;
                    for (int q = 0; q < nq; q++) {
                        const double *a = out + 3 * ((size_t)f * (size_t)nq + (size_t)q);
                        if (!any) memcpy(ref, a, sizeof ref), any = 1;
                        const double sg =
                            a[0] * ref[0] + a[1] * ref[1] + a[2] * ref[2] < 0 ? -1 : 1;
                        for (int c = 0; c < 3; c++) sum[c] += sg * a[c];
                    }
                }
            }
            const double n = sqrt(sum[0] * sum[0] + sum[1] * sum[1] + sum[2] * sum[2]);
            if (!any || !(n > 0)) continue;
            for (int q = 0; q < nq; q++)
                for (int c = 0; c < 3; c++)
                    out[3 * ((size_t)e * (size_t)nq + (size_t)q) + (size_t)c] = sum[c] / n;
            now[e] = 1;
            filled++;
        }
        if (!filled)
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "fibre line of action: %ld elements lie inside the point sets with no "
                           "neighbour the field runs through",
                           (long)pending);
        pending -= filled;
        memcpy(done, now, (size_t)nel);
    }
    defo_free(done);
    defo_free(now);
    defo_node_elems_free(&ne);
    return s;
}

defo_status defo_fibre_field_line_of_action(const defo_mesh *mesh, const unsigned char *from,
                                            const unsigned char *to, double *out,
                                            defo_fibre_line_stats *stats) {
    const defo_element_ops *ops = kind_of(mesh, "fibre line of action");
    if (!ops) return defo_last_status();
    if (!from || !to || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "fibre line of action: NULL argument");
    const defo_index n = mesh->num_nodes;
    defo_index nf = 0, nt = 0;
    for (defo_index i = 0; i < n; i++) {
        if (from[i] && to[i])
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "fibre line of action: node %ld is in both point sets", (long)i);
        nf += from[i] != 0, nt += to[i] != 0;
    }
    if (!nf || !nt)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "fibre line of action: the '%s' point set selects no node",
                          nf ? "to" : "from");
    defo_element_rest *rest = NULL;
    defo_status s = defo_element_rest_create(mesh, &rest);
    if (s) return defo_error_prefix("fibre line of action");
    const int P = ops->nodes, nq = ops->stiffness.num_points;
    const size_t np = (size_t)mesh->num_elems * (size_t)nq, m = 3 * (size_t)n;
    laplace L = {mesh, ops, defo_element_rest_jinv(rest), defo_element_rest_weight(rest), NULL};
    L.grad = defo_malloc(3 * (size_t)P * np * sizeof(double) + 1);
    double *buf = defo_calloc(16 * m + 1, sizeof(double));
    unsigned char *con = defo_calloc((size_t)n + 1, 1);
    if (!L.grad || !buf || !con) {
        s = defo_error_oom("fibre line of action", 16 * m * sizeof(double));
        goto done;
    }
    double *inv_diag = buf, *b = buf + m, *y = buf + 2 * m, *ud = buf + 3 * m,
           *work = buf + 4 * m; /* 12 m */
    /* ∇N_a = J⁻ᵀ ∇ξN_a per point, and the diagonal Σ w |∇N_a|² */
    for (defo_index e = 0; e < mesh->num_elems; e++)
        for (int q = 0; q < nq; q++) {
            const size_t pq = (size_t)e * (size_t)nq + (size_t)q;
            const double *Ji = L.jinv + 9 * pq,
                         *g = ops->stiffness.grad + 3 * (size_t)P * (size_t)q;
            double *G = L.grad + 3 * (size_t)P * pq;
            for (int a = 0; a < P; a++) {
                for (int k = 0; k < 3; k++)
                    G[3 * a + k] =
                        Ji[k] * g[3 * a] + Ji[3 + k] * g[3 * a + 1] + Ji[6 + k] * g[3 * a + 2];
                const double d =
                    G[3 * a] * G[3 * a] + G[3 * a + 1] * G[3 * a + 1] + G[3 * a + 2] * G[3 * a + 2];
                ud[3 * (size_t)mesh->elems[(size_t)e * (size_t)P + (size_t)a]] += L.w[pq] * d;
            }
        }
    for (defo_index i = 0; i < n; i++) {
        const double d = ud[3 * (size_t)i];
        for (int k = 0; k < 3; k++) inv_diag[3 * (size_t)i + (size_t)k] = d > 0 ? 1.0 / d : 1.0;
        ud[3 * (size_t)i] = to[i] ? 1.0 : 0.0;
        ud[3 * (size_t)i + 1] = ud[3 * (size_t)i + 2] = 0.0;
        con[i] = from[i] || to[i] ? DEFO_CONSTRAINT_FIXED : DEFO_CONSTRAINT_NONE;
    }
    /* b = −K u_D (the constraint projection inside CG drops the fixed rows) */
    laplace_apply(&L, ud, b);
    for (size_t j = 0; j < m; j++) b[j] = -b[j];
    defo_cg_def cd = defo_default_cg_def();
    cd.tolerance = 1e-10;
    cd.max_iterations = 20000;
    defo_cg_result res;
    s = defo_cg_solve(&cd, n, laplace_apply, &L, inv_diag, con, NULL, b, y, work, &res);
    if (stats) stats->iterations = res.iterations, stats->residual = res.residual;
    if (s < 0) {
        defo_error_prefix("fibre line of action: the harmonic field");
        goto done;
    }
    const int warn = s == DEFO_WARN_NOT_CONVERGED && !(res.residual <= 1e-8);
    for (defo_index i = 0; i < n; i++) ud[3 * (size_t)i] += y[3 * (size_t)i];
    /* ∇u per point; a vanishing gradient means the sets do not bracket the
     * element (relative to the element's size: |∇u| L against the drop of 1
     * across the body) */
    double lo[3], hi[3];
    defo_mesh_bbox(mesh, lo, hi);
    const double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                             (hi[2] - lo[2]) * (hi[2] - lo[2]));
    s = DEFO_OK;
    /* elements whose every node is in a set (an attachment's own elements,
     * u constant there) take the fibres of their neighbours (fill_attached) */
    defo_index pending = 0;
    for (defo_index e = 0; e < mesh->num_elems && !s; e++) {
        const defo_index *v = mesh->elems + (size_t)e * (size_t)P;
        int attached = 1;
        for (int a = 0; a < P; a++) attached &= con[v[a]] != DEFO_CONSTRAINT_NONE;
        pending += attached;
        for (int q = 0; q < nq; q++) {
            const size_t pq = (size_t)e * (size_t)nq + (size_t)q;
            const double *G = L.grad + 3 * (size_t)P * pq;
            double g[3] = {0, 0, 0};
            for (int a = 0; a < P; a++)
                for (int k = 0; k < 3; k++) g[k] += ud[3 * (size_t)v[a]] * G[3 * a + k];
            const double len = sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2]);
            if (attached) {
                for (int k = 0; k < 3; k++) out[3 * pq + (size_t)k] = 0.0;
                continue;
            }
            if (!(len * diag > 1e-9)) {
                s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                               "fibre line of action: element %ld lies where the field from "
                               "'from' to 'to' is flat (|grad u| = %.3g /m): no path between the "
                               "two point sets runs through it",
                               (long)e, len);
                break;
            }
            for (int k = 0; k < 3; k++) out[3 * pq + (size_t)k] = g[k] / len;
        }
    }
    if (!s && pending) s = fill_attached(mesh, nq, out, pending);
    if (!s && warn)
        s = defo_error(DEFO_WARN_NOT_CONVERGED,
                       "fibre line of action: CG stopped after %d iterations at relative "
                       "residual %.3g",
                       res.iterations, res.residual);
done:
    defo_free(L.grad);
    defo_free(buf);
    defo_free(con);
    defo_element_rest_destroy(rest);
    return s;
}
