/*
 * element/mass.c — masses, volumes and Jacobian quality of the element layer.
 *
 * Consistent mass (MTPS08 eq. 3): Me_ab = ∫ ρ N_a N_b dV = Σ_q ρ ω_q N_a N_b
 * det J / 6 with the mass rule — exact: N_a N_b is of degree 2·order and
 * det J of degree 3(order − 1).  Lumped mass: tet4 ρV/4 per corner (the row
 * sums); tet10 HRZ (Hinton, Rock, Zienkiewicz 1976): Me's diagonal scaled to
 * the element mass, positive where row sums are not (a straight tet10's
 * corner rows sum to −ρV/20).  For a straight element the diagonal is ρV/70
 * (corner) and 8ρV/105 (edge), summing to 18ρV/35, so HRZ gives ρV/36 and
 * 4ρV/27.
 *
 * Volumes at any positions use the same rule (det J exact).  Sums run
 * sequentially in element order: deterministic.
 */
#include "element/element_internal.h"

#include <math.h>
#include <string.h>

static defo_status check_mesh(const defo_mesh *mesh, const char *fn, const defo_element_ops **ops) {
    *ops = defo_element_ops_for_mesh(mesh);
    if (!*ops) return defo_error_prefix("%s", fn);
    const size_t n = (size_t)mesh->num_elems * (size_t)mesh->nodes_per_elem;
    for (size_t i = 0; i < n; i++)
        if (mesh->elems[i] < 0 || mesh->elems[i] >= mesh->num_nodes)
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "%s: element %ld refers to node %ld, but there are %ld nodes", fn,
                              (long)(i / (size_t)mesh->nodes_per_elem), (long)mesh->elems[i],
                              (long)mesh->num_nodes);
    return DEFO_OK;
}

/* Signed volume of element v at positions x. */
static double elem_volume(const defo_element_ops *ops, const double *x, const defo_index *v) {
    double J[9];
    if (ops->order == 1) {
        defo_element_jacobian(ops, x, v, ops->stiffness.point, J);
        return defo_det9(J) * defo_element_ref_measure(ops);
    }
    double vol = 0;
    for (int q = 0; q < ops->mass.num_points; q++) {
        defo_element_jacobian(ops, x, v, ops->mass.point + 4 * q, J);
        vol += ops->mass.weight[q] * defo_det9(J);
    }
    return vol / 6.0;
}

/* Me (nodes², unit density) of element v at positions x; returns its volume. */
static double elem_mass(const defo_element_ops *ops, const double *x, const defo_index *v,
                        double *Me) {
    const int p = ops->nodes;
    memset(Me, 0, (size_t)(p * p) * sizeof *Me);
    double vol = 0;
    for (int q = 0; q < ops->mass.num_points; q++) {
        double J[9];
        defo_element_jacobian(ops, x, v, ops->mass.point + 4 * q, J);
        const double w = ops->mass.weight[q] * defo_det9(J) * defo_element_ref_measure(ops);
        const double *N = ops->mass.shape + p * q;
        vol += w;
        for (int a = 0; a < p; a++)
            for (int b = 0; b < p; b++) Me[a * p + b] += w * N[a] * N[b];
    }
    return vol;
}

defo_status defo_element_mass_matrix(const defo_mesh *mesh, defo_index e, double density,
                                     double *Me) {
    const defo_element_ops *ops;
    defo_status s = check_mesh(mesh, "defo_element_mass_matrix", &ops);
    if (s) return s;
    if (!Me || e < 0 || e >= mesh->num_elems || !(density >= 0) || !isfinite(density))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_element_mass_matrix: element %ld of %ld, density %g", (long)e,
                          (long)mesh->num_elems, density);
    const int p = ops->nodes;
    elem_mass(ops, mesh->x, mesh->elems + (size_t)e * (size_t)p, Me);
    for (int k = 0; k < p * p; k++) Me[k] *= density;
    return DEFO_OK;
}

void defo_element_lumped_shares(const defo_element_ops *ops, const double *x, const defo_index *v,
                                double rho, double *m) {
    const int p = ops->nodes;
    if (p == 4 || p == 3) {
        /* |V|: an inverted element still has positive mass (tri3: ρA/3) */
        const double mv = rho * fabs(elem_volume(ops, x, v));
        for (int a = 0; a < p; a++) m[a] = mv / p;
        return;
    }
    double Me[DEFO_ELEMENT_MAX_NODES * DEFO_ELEMENT_MAX_NODES];
    const double vol = elem_mass(ops, x, v, Me);
    double diag = 0;
    for (int a = 0; a < p; a++) diag += Me[a * p + a];
    const double scale = diag > 0 ? rho * fabs(vol) / diag : 0.0;
    for (int a = 0; a < p; a++) m[a] = scale * Me[a * p + a];
}

defo_status defo_element_lumped_mass(const defo_mesh *mesh, double density,
                                     const double *density_per_elem, double *mass) {
    const defo_element_ops *ops;
    defo_status s = check_mesh(mesh, "defo_element_lumped_mass", &ops);
    if (s) return s;
    if (!mass)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_element_lumped_mass: mass is NULL");
    if (!density_per_elem && !(density >= 0 && isfinite(density)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_element_lumped_mass: density %g (must be finite and >= 0)",
                          density);
    if (density_per_elem)
        for (defo_index e = 0; e < mesh->num_elems; e++)
            if (!(density_per_elem[e] >= 0 && isfinite(density_per_elem[e])))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "defo_element_lumped_mass: element %ld has density %g (must be "
                                  "finite and >= 0)",
                                  (long)e, density_per_elem[e]);
    memset(mass, 0, (size_t)mesh->num_nodes * sizeof *mass);
    const int p = ops->nodes;
    double m[DEFO_ELEMENT_MAX_NODES];
    for (size_t e = 0; e < (size_t)mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + e * (size_t)p;
        defo_element_lumped_shares(ops, mesh->x, v,
                                   density_per_elem ? density_per_elem[e] : density, m);
        for (int a = 0; a < p; a++) mass[v[a]] += m[a];
    }
    return DEFO_OK;
}

defo_status defo_element_volume(const defo_mesh *mesh, const double *x, double *volume) {
    if (!volume)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_element_volume: volume is NULL");
    *volume = 0;
    const defo_element_ops *ops;
    defo_status s = check_mesh(mesh, "defo_element_volume", &ops);
    if (s) return s;
    if (!x) x = mesh->x;
    double total = 0;
    for (size_t e = 0; e < (size_t)mesh->num_elems; e++)
        total += elem_volume(ops, x, mesh->elems + e * (size_t)ops->nodes);
    *volume = total;
    return DEFO_OK;
}

/* The points where the map of a tet is sampled: the stiffness points
 * first, then the corners, the edge midpoints and the centroid; returns
 * their count. */
enum { SAMPLE_MAX = DEFO_ELEMENT_MAX_POINTS + 4 + 6 + 1 };
static int sample_points(const defo_element_ops *ops, double pts[SAMPLE_MAX][4]) {
    int np = 0;
    for (int q = 0; q < ops->stiffness.num_points; q++, np++)
        memcpy(pts[np], ops->stiffness.point + 4 * q, 4 * sizeof(double));
    for (int c = 0; c < 4; c++, np++)
        for (int k = 0; k < 4; k++) pts[np][k] = k == c ? 1.0 : 0.0;
    for (int e = 0; e < 6; e++, np++)
        for (int k = 0; k < 4; k++)
            pts[np][k] = (k == defo_tet_edges[e][0] || k == defo_tet_edges[e][1]) ? 0.5 : 0.0;
    for (int k = 0; k < 4; k++) pts[np][k] = 0.25;
    return np + 1;
}

defo_status defo_element_jacobian_quality(const defo_mesh *mesh, const double *x, double *quality,
                                          double *worst, defo_index *worst_elem) {
    if (worst) *worst = INFINITY;
    if (worst_elem) *worst_elem = -1;
    const defo_element_ops *ops;
    defo_status s = check_mesh(mesh, "defo_element_jacobian_quality", &ops);
    if (s) return s;
    if (!x) x = mesh->x;
    if (ops->kind == DEFO_ELEMENT_TRI3) {
        /* flat: a triangle's map is affine, so 1 unless it has no area */
        double lowest = INFINITY;
        defo_index lowest_e = -1;
        for (defo_index e = 0; e < mesh->num_elems; e++) {
            const defo_index *v = mesh->elems + 3 * (size_t)e;
            double J[9];
            defo_element_jacobian(ops, x, v, ops->stiffness.point, J);
            const double L = defo_element_corner_length_n(x, v, 3);
            const double qe = defo_det9(J) > 1e-12 * L * L ? 1.0 : -INFINITY;
            if (quality) quality[e] = qe;
            if (qe < lowest || lowest_e < 0) lowest = qe, lowest_e = e;
        }
        if (worst) *worst = lowest;
        if (worst_elem) *worst_elem = lowest_e;
        return DEFO_OK;
    }
    const defo_element_ops *lin = defo_element_ops_of(DEFO_ELEMENT_TET4);
    double pts[SAMPLE_MAX][4];
    const int np = sample_points(ops, pts);
    double lowest = INFINITY;
    defo_index lowest_e = -1;
    for (defo_index e = 0; e < mesh->num_elems; e++) {
        const defo_index *v = mesh->elems + (size_t)e * (size_t)ops->nodes;
        double J[9];
        defo_element_jacobian(lin, x, v, pts[0], J);
        const double straight = defo_det9(J);
        double qmin = -INFINITY;
        const double L = defo_element_corner_length(x, v);
        if (straight > 1e-12 * L * L * L) {
            qmin = INFINITY;
            for (int k = 0; k < (ops->order > 1 ? np : 1); k++) {
                defo_element_jacobian(ops, x, v, pts[k], J);
                qmin = fmin(qmin, defo_det9(J) / straight);
            }
        }
        if (quality) quality[e] = qmin;
        if (qmin < lowest || lowest_e < 0) {
            lowest = qmin;
            lowest_e = e;
        }
    }
    if (worst) *worst = lowest;
    if (worst_elem) *worst_elem = lowest_e;
    return DEFO_OK;
}

defo_status defo_element_fold_state(const defo_mesh *mesh, const double *x, unsigned char *state,
                                    defo_index *inverted, defo_index *folded) {
    if (inverted) *inverted = 0;
    if (folded) *folded = 0;
    const defo_element_ops *ops;
    defo_status s = check_mesh(mesh, "defo_element_fold_state", &ops);
    if (s) return s;
    if (!x) x = mesh->x;
    defo_index n_inv = 0, n_fold = 0;
    if (ops->kind == DEFO_ELEMENT_TRI3) {
        /* a shell cannot invert (ITF04 §8): only a triangle with no area */
        for (defo_index e = 0; e < mesh->num_elems; e++) {
            const defo_index *v = mesh->elems + 3 * (size_t)e;
            double J[9];
            defo_element_jacobian(ops, x, v, ops->stiffness.point, J);
            const double L = defo_element_corner_length_n(x, v, 3);
            const int bad = !(defo_det9(J) > 1e-12 * L * L);
            if (state) state[e] = bad ? DEFO_FOLD_INVERTED : DEFO_FOLD_NONE;
            n_inv += bad;
        }
    } else {
        double pts[SAMPLE_MAX][4];
        const int np = sample_points(ops, pts), nq = ops->stiffness.num_points;
        /* a straight element's det J is constant: its one stiffness point
         * decides; the other points only when folds are asked for */
        const int last = ops->order > 1 && (state || folded) ? np : nq;
        for (defo_index e = 0; e < mesh->num_elems; e++) {
            const defo_index *v = mesh->elems + (size_t)e * (size_t)ops->nodes;
            unsigned char st = DEFO_FOLD_NONE;
            for (int k = 0; k < last; k++) {
                double J[9];
                defo_element_jacobian(ops, x, v, pts[k], J);
                if (!(defo_det9(J) > 0)) {
                    st = k < nq ? DEFO_FOLD_INVERTED : DEFO_FOLD_BETWEEN;
                    break;
                }
            }
            if (state) state[e] = st;
            n_inv += st == DEFO_FOLD_INVERTED;
            n_fold += st == DEFO_FOLD_BETWEEN;
        }
    }
    if (inverted) *inverted = n_inv;
    if (folded) *folded = n_fold;
    return DEFO_OK;
}
