/*
 * plasticity/strain_plasticity.c — MG04 §3 additive strain plasticity on any
 * body, whatever steps it (defo/plasticity.h has the equations).
 *
 * Per quadrature point of the body's force model (one per tet4, four per
 * tet10: MTPS08 §5 keeps plastic state per cubature point): the total strain
 * ε = sym(Rᵀ F) − I (defo_force_model_strain: the corotated strain, R the
 * point's rotation — for an invertible body the polar rotation of F), the
 * elastic part ε − ε_plastic, and MG04 eqs. 13–15.  The force model reads
 * ε_plastic (defo_plasticity_bind): the corotated kernel subtracts it from
 * the strain (MG04's f_plastic = Re Pe ε_plastic, folded into the stress);
 * the invertible kernel divides it out of F, F_e = F (I + ε_plastic)⁻¹
 * (ITF04 §6.3's multiplicative split with the symmetric plastic stretch
 * I + ε_plastic).
 *
 * Invariants: ε_plastic finite and ‖ε_plastic‖₂ ≤ c_max (to rounding) after
 * every update; per-point work, no gathers: bitwise identical for any
 * thread count.  The number of points never changes (fracture keeps its
 * elements).
 */
#include "defo/plasticity.h"

#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <string.h>

struct defo_plasticity {
    defo_plasticity_def def;
    defo_index num_elems;
    int points;
    double *eps;          /* 6 per point: ε_plastic */
    double *total;        /* 6 per point: scratch */
    double *el_norm;      /* per point: ‖ε_elastic‖ before the update */
    unsigned char *flags; /* per point: 1 yielding, 2 capped */
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
                          "plasticity: yield %g, creep %g and max %g must be >= 0 (creep and "
                          "max finite)",
                          d->yield, d->creep, d->max);
    return DEFO_OK;
}

void defo_plasticity_destroy(defo_plasticity *p) {
    if (!p) return;
    defo_free(p->eps);
    defo_free(p->total);
    defo_free(p->el_norm);
    defo_free(p->flags);
    defo_free(p);
}

defo_status defo_plasticity_create(const defo_plasticity_def *def, defo_index num_elems, int points,
                                   defo_plasticity **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: out is NULL");
    *out = NULL;
    defo_plasticity_def d = def ? *def : defo_default_plasticity_def();
    defo_status s = check_def(&d);
    if (s) return s;
    if (num_elems < 0 || points < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: %ld elements of %d points",
                          (long)num_elems, points);
    defo_plasticity *p = defo_calloc(1, sizeof *p);
    if (!p) return defo_error_oom("plasticity", sizeof *p);
    p->def = d;
    p->num_elems = num_elems;
    p->points = points;
    const size_t np = (size_t)num_elems * (size_t)points;
    p->eps = defo_calloc(6 * np + 1, sizeof(double));
    p->total = defo_calloc(6 * np + 1, sizeof(double));
    p->el_norm = defo_calloc(np + 1, sizeof(double));
    p->flags = defo_calloc(np + 1, 1);
    if (!p->eps || !p->total || !p->el_norm || !p->flags) {
        defo_plasticity_destroy(p);
        return defo_error_oom("plastic strains", 13 * np * sizeof(double));
    }
    *out = p;
    return DEFO_OK;
}

defo_status defo_plasticity_set_def(defo_plasticity *p, const defo_plasticity_def *def) {
    if (!p || !def) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    defo_status s = check_def(def);
    if (!s) p->def = *def;
    return s;
}

double *defo_plasticity_strain(defo_plasticity *p) {
    return p ? p->eps : NULL;
}

size_t defo_plasticity_values(const defo_plasticity *p) {
    return p ? 6 * (size_t)p->num_elems * (size_t)p->points : 0;
}

defo_status defo_plasticity_bind(defo_plasticity *p, defo_force_model *fm) {
    if (!p || !fm) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    if (defo_force_model_points(fm) != p->points)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "plasticity: %d points per element, the force model has %d", p->points,
                          defo_force_model_points(fm));
    defo_force_model_set_plastic_strain(fm, p->eps);
    return DEFO_OK;
}

static double norm6(const double *v) {
    return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3] + v[4] * v[4] + v[5] * v[5]);
}

defo_status defo_plasticity_update(defo_plasticity *p, defo_force_model *fm, const double *x,
                                   double dt, defo_plasticity_stats *stats) {
    if (stats) memset(stats, 0, sizeof *stats);
    if (!p || !fm || !x)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    if (!(dt > 0) || !isfinite(dt))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: time step %g must be > 0", dt);
    if (p->def.creep * dt > 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "plasticity: c_creep %g exceeds 1/dt = %g (MG04 §3: c_creep in "
                          "[0, 1/dt]; lower creep or the time step)",
                          p->def.creep, 1 / dt);
    /* rotations of x, then the total strain at every point */
    defo_status s = defo_force_model_evaluate(fm, x, 0, NULL, NULL);
    if (!s) s = defo_force_model_strain(fm, x, p->total);
    if (s) return defo_error_prefix("plasticity");
    const double yield = p->def.yield, rate = dt * p->def.creep, cmax = p->def.max;
    const defo_index np = p->num_elems * p->points;
    defo_index bad = DEFO_INDEX_MAX;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)                                                          \
    reduction(min                                                                                  \
              : bad) if (DEFO_PARALLEL_GO(DEFO_PARALLEL_WORTH(np, 40)))
#endif
    for (defo_index q = 0; q < np; q++) {
        double el[6], *ep = p->eps + 6 * (size_t)q;
        const double *et = p->total + 6 * (size_t)q;
        for (int k = 0; k < 6; k++) el[k] = et[k] - ep[k];
        const double nel = norm6(el);
        unsigned char fl = 0;
        double nq[6];
        memcpy(nq, ep, sizeof nq);
        if (nel > yield) { /* MG04 eq. 14: creep towards the total strain */
            for (int k = 0; k < 6; k++) nq[k] += rate * el[k];
            fl |= 1;
        }
        const double npl = norm6(nq);
        if (npl > cmax) { /* eq. 15 */
            const double sc = cmax / npl;
            for (int k = 0; k < 6; k++) nq[k] *= sc;
            fl |= 2;
        }
        if (!isfinite(nel) || !isfinite(norm6(nq))) {
            bad = bad < q ? bad : q;
            continue;
        }
        memcpy(ep, nq, sizeof nq);
        p->el_norm[q] = nel;
        p->flags[q] = fl;
    }
    if (bad != DEFO_INDEX_MAX)
        return defo_error(DEFO_ERR_NUMERICAL,
                          "plasticity: element %ld has a non-finite strain at point %ld",
                          (long)(bad / p->points), (long)(bad % p->points));
    if (stats)
        for (defo_index q = 0; q < np; q++) {
            stats->yielding += p->flags[q] & 1;
            stats->capped += (p->flags[q] >> 1) & 1;
            stats->max_elastic_strain = fmax(stats->max_elastic_strain, p->el_norm[q]);
            stats->max_plastic_strain =
                fmax(stats->max_plastic_strain, norm6(p->eps + 6 * (size_t)q));
        }
    return DEFO_OK;
}

defo_status defo_plasticity_norms(const defo_plasticity *p, double *out) {
    if (!p || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    for (defo_index e = 0; e < p->num_elems; e++) {
        double m = 0;
        for (int q = 0; q < p->points; q++)
            m = fmax(m, norm6(p->eps + 6 * ((size_t)e * (size_t)p->points + (size_t)q)));
        out[e] = m;
    }
    return DEFO_OK;
}
