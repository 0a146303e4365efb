/*
 * plasticity/strain_plasticity.c — MG04 §3 additive strain plasticity on the
 * corotated model (defo/plasticity.h has the equations and conventions).
 *
 * Data per element: the shape-function gradients b_1..b_3 (rows of Dm⁻¹; b_0
 * = −Σ b_j is not needed because strains are computed from displacements
 * relative to node 0), Pe = V Beᵀ E (12×6, from the corotated model, so the
 * plastic force is consistent with Ke = Pe Be by construction), ε_plastic.
 *
 * Why relative displacements: Reᵀx − x0 and Reᵀ(x − x_0) − (X − X_0) differ
 * by a translation, which Be maps to zero strain; the relative form keeps the
 * strain of a rigidly moved element at rounding relative to its size rather
 * than to |x| (same choice as force/corotated.c).
 *
 * Invariants: ε_plastic stays finite and ‖ε_plastic‖₂ ≤ c_max (to rounding)
 * after every update; per-element results are gathered per node in a fixed
 * order (bitwise identical for any thread count).
 */
#include "defo/plasticity.h"
#include "defo/corotated.h"

#include "base/parallel.h"

#include <math.h>
#include <string.h>

struct defo_plasticity {
    const defo_mesh *mesh;
    defo_plasticity_def def;
    defo_index num_elems;
    double *grad;         /* 9 per element: b_1, b_2, b_3 */
    double *Pe;           /* 72 per element, 12×6 row-major */
    double *eps;          /* 6 per element: ε_plastic */
    double *slot;         /* 12 per element: per-element forces before the gather */
    double *el_norm;      /* per element: ‖ε_elastic‖ before the update */
    unsigned char *flags; /* per element: 1 yielding, 2 capped */
    defo_incidence inc;
    defo_index inc_nodes; /* mesh->num_nodes the incidence was built for */
};

defo_plasticity_def defo_default_plasticity_def(void) {
    defo_plasticity_def d;
    d.yield = INFINITY;
    d.creep = 0;
    d.max = 0;
    return d;
}

defo_plasticity_def defo_plasticity_wax_def(void) {
    defo_plasticity_def d;
    d.yield = 0.01;
    d.creep = 100;
    d.max = 10;
    return d;
}

static defo_status check_def(const defo_plasticity_def *d) {
    if (!(d->yield >= 0) || !(d->creep >= 0) || !isfinite(d->creep) || !(d->max >= 0) ||
        !isfinite(d->max))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "plasticity: c_yield %g, c_creep %g, c_max %g must be >= 0 (c_creep and "
                          "c_max finite)",
                          d->yield, d->creep, d->max);
    return DEFO_OK;
}

void defo_plasticity_destroy(defo_plasticity *p) {
    if (!p) return;
    defo_free(p->grad);
    defo_free(p->Pe);
    defo_free(p->eps);
    defo_free(p->slot);
    defo_free(p->el_norm);
    defo_free(p->flags);
    defo_incidence_free(&p->inc);
    defo_free(p);
}

defo_status defo_plasticity_create(const defo_mesh *mesh, const defo_corotated *model,
                                   const defo_plasticity_def *def, defo_plasticity **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: out is NULL");
    *out = NULL;
    if (!mesh || !model)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: mesh or model is NULL");
    if (mesh->order != 1)
        return defo_error(DEFO_ERR_UNSUPPORTED, "plasticity: only tet4 meshes are supported");
    defo_plasticity_def d = def ? *def : defo_default_plasticity_def();
    if (check_def(&d)) return DEFO_ERR_INVALID_ARGUMENT;
    defo_rest rest;
    if (defo_rest_compute(mesh, &rest)) return defo_error_prefix("plasticity");
    defo_plasticity *p = defo_calloc(1, sizeof *p);
    if (!p) {
        defo_rest_free(&rest);
        return defo_error_oom("plasticity", sizeof *p);
    }
    p->mesh = mesh;
    p->def = d;
    p->num_elems = mesh->num_elems;
    const size_t ne = (size_t)mesh->num_elems;
    p->grad = defo_malloc(9 * ne * sizeof(double) + 1);
    p->Pe = defo_malloc(72 * ne * sizeof(double) + 1);
    p->eps = defo_calloc(6 * ne + 1, sizeof(double));
    p->slot = defo_malloc(12 * ne * sizeof(double) + 1);
    p->el_norm = defo_malloc(ne * sizeof(double) + 1);
    p->flags = defo_malloc(ne + 1);
    if (!p->grad || !p->Pe || !p->eps || !p->slot || !p->el_norm || !p->flags) {
        defo_rest_free(&rest);
        defo_plasticity_destroy(p);
        return defo_error_oom("plasticity element data", 100 * ne * sizeof(double));
    }
    memcpy(p->grad, rest.Dm_inv, 9 * ne * sizeof(double));
    defo_rest_free(&rest);
    for (size_t e = 0; e < ne; e++)
        defo_corotated_plastic_matrix(model, (defo_index)e, p->Pe + 72 * e);
    *out = p;
    return DEFO_OK;
}

defo_status defo_plasticity_set_def(defo_plasticity *p, const defo_plasticity_def *def) {
    if (!p || !def) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    if (check_def(def)) return DEFO_ERR_INVALID_ARGUMENT;
    p->def = *def;
    return DEFO_OK;
}

double *defo_plasticity_strain(defo_plasticity *p) {
    return p ? p->eps : NULL;
}

/* ε_total of element e: Σ_j Be_j u_j with u_j = Reᵀ(x_j − x_0) − (X_j − X_0),
 * Be_j the 6×3 Voigt block of b_j (engineering shear). */
static void elem_strain(const defo_plasticity *p, const double *R, const double *x, defo_index e,
                        double eps[6]) {
    defo_corotated_strain(p->mesh, p->grad + 9 * (size_t)e, R, x, e, eps);
}

static double norm6(const double *v) {
    double s = 0;
    for (int k = 0; k < 6; k++) s += v[k] * v[k];
    return sqrt(s);
}

defo_status defo_plasticity_total_strain(const defo_plasticity *p, const defo_corotated *model,
                                         const double *x, double *strain) {
    if (!p || !model || !x || !strain)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    const double *Rall = defo_corotated_rotations(model);
    const defo_index ne = p->num_elems;
    DEFO_PARALLEL_FOR_IF(ne > DEFO_PARALLEL_MIN / 4)
    for (defo_index e = 0; e < ne; e++)
        elem_strain(p, Rall + 9 * (size_t)e, x, e, strain + 6 * (size_t)e);
    return DEFO_OK;
}

defo_status defo_plasticity_forces(defo_plasticity *p, const defo_corotated *model,
                                   double *f_plastic) {
    if (!p || !model || !f_plastic)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    const defo_mesh *mesh = p->mesh;
    if (mesh->num_elems != p->num_elems)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "plasticity: the mesh has %ld elements, the plastic state %ld",
                          (long)mesh->num_elems, (long)p->num_elems);
    if (!p->inc.offset || p->inc_nodes != mesh->num_nodes) {
        /* fracture appended nodes: the element -> node map changed */
        defo_incidence_free(&p->inc);
        if (defo_incidence_build(&p->inc, mesh->elems, mesh->num_elems, 4, mesh->num_nodes))
            return defo_error_prefix("plasticity");
        p->inc_nodes = mesh->num_nodes;
    }
    const double *Rall = defo_corotated_rotations(model);
    const defo_index ne = p->num_elems;
    DEFO_PARALLEL_FOR_IF(ne > DEFO_PARALLEL_MIN / 4)
    for (defo_index e = 0; e < ne; e++) {
        const double *P = p->Pe + 72 * (size_t)e, *ep = p->eps + 6 * (size_t)e;
        const double *R = Rall + 9 * (size_t)e;
        double *f = p->slot + 12 * (size_t)e;
        for (int i = 0; i < 4; i++) {
            double q[3]; /* (Pe ε_plastic) of node i, then rotated by Re */
            for (int r = 0; r < 3; r++) {
                const double *row = P + 6 * (3 * i + r);
                q[r] = row[0] * ep[0] + row[1] * ep[1] + row[2] * ep[2] + row[3] * ep[3] +
                       row[4] * ep[4] + row[5] * ep[5];
            }
            for (int r = 0; r < 3; r++)
                f[3 * i + r] = R[3 * r] * q[0] + R[3 * r + 1] * q[1] + R[3 * r + 2] * q[2];
        }
    }
    defo_gather3(&p->inc, p->slot, f_plastic);
    return DEFO_OK;
}

defo_status defo_plasticity_update(defo_plasticity *p, const defo_corotated *model, const double *x,
                                   double dt, double *f_plastic, defo_plasticity_stats *stats) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!p || !model || !x)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    if (!(dt > 0) || !isfinite(dt))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: time step %g must be > 0", dt);
    if (p->def.creep * dt > 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "plasticity: c_creep %g exceeds 1/dt = %g (MG04 §3: c_creep in "
                          "[0, 1/dt])",
                          p->def.creep, 1 / dt);
    if (p->mesh->num_elems != p->num_elems)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: element count changed");
    const double *Rall = defo_corotated_rotations(model);
    const double yield = p->def.yield, rate = dt * p->def.creep, cmax = p->def.max;
    const defo_index ne = p->num_elems;
    defo_index bad = DEFO_INDEX_MAX;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(min : bad) if (ne > DEFO_PARALLEL_MIN / 4)
#endif
    for (defo_index e = 0; e < ne; e++) {
        double et[6], el[6], *ep = p->eps + 6 * (size_t)e;
        elem_strain(p, Rall + 9 * (size_t)e, x, e, et);
        for (int k = 0; k < 6; k++) el[k] = et[k] - ep[k];
        const double nel = norm6(el);
        unsigned char fl = 0;
        double np[6];
        memcpy(np, ep, sizeof np);
        if (nel > yield) { /* MG04 eq. 14: creep towards the total strain */
            for (int k = 0; k < 6; k++) np[k] += rate * el[k];
            fl |= 1;
        }
        const double npl = norm6(np);
        if (npl > cmax) {
            const double s = cmax / npl;
            for (int k = 0; k < 6; k++) np[k] *= s;
            fl |= 2;
        }
        if (!isfinite(nel) || !isfinite(norm6(np))) {
            bad = bad < e ? bad : e;
            continue;
        }
        memcpy(ep, np, sizeof np);
        p->el_norm[e] = nel;
        p->flags[e] = fl;
    }
    if (bad != DEFO_INDEX_MAX)
        return defo_error(DEFO_ERR_NUMERICAL, "plasticity: element %ld has a non-finite strain",
                          (long)bad);
    if (stats) {
        for (defo_index e = 0; e < ne; e++) {
            stats->yielding += p->flags[e] & 1;
            stats->capped += (p->flags[e] >> 1) & 1;
            stats->max_elastic_strain = fmax(stats->max_elastic_strain, p->el_norm[e]);
            stats->max_plastic_strain =
                fmax(stats->max_plastic_strain, norm6(p->eps + 6 * (size_t)e));
        }
    }
    if (f_plastic) return defo_plasticity_forces(p, model, f_plastic);
    return DEFO_OK;
}

defo_status defo_plasticity_step(defo_plasticity *p, defo_backward_euler *be, double dt,
                                 defo_plasticity_stats *stats) {
    if (!p || !be) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    defo_status st = defo_backward_euler_update_rotations(be);
    if (st) return defo_error_prefix("plasticity step");
    st = defo_plasticity_update(p, defo_backward_euler_force_model(be),
                                defo_backward_euler_positions(be), dt,
                                defo_backward_euler_plastic_force(be), stats);
    if (st) return defo_error_prefix("plasticity step");
    return DEFO_OK;
}
