/*
 * material/material.c — material definitions, validation, Lamé parameters,
 * the compiled material, the TSIF05 §8 definiteness fix and the world-frame
 * conveniences.
 *
 * World frame (ITF04 eq. 1, TSIF05 eq. 4): with F = U diag(σ) Vᵀ from
 * defo_svd3 (U, V rotations, σ3 < 0 for inverted F),
 *     P = U diag(P̂(σ)) Vᵀ,   δP = U {dP/dF|σ : Uᵀ δF V} Vᵀ.
 * Definiteness (TSIF05 §6–8): δF : dP/dF : δF ≥ 0 for all δF iff A and the
 * three B blocks are positive semidefinite, so clamping their negative
 * eigenvalues makes every element stiffness matrix PSD.
 */
#include "material/material_internal.h"

#include "base/base.h"

#include <math.h>
#include <string.h>

defo_material_def defo_default_material(void) {
    defo_material_def d;
    memset(&d, 0, sizeof d);
    d.model = DEFO_MODEL_NEO_HOOKEAN;
    d.youngs_modulus = 1e5;
    d.poisson = 0.3;
    d.density = 1000.0;
    d.inversion.mode = DEFO_INVERSION_C1;
    d.inversion.threshold = 0.3;
    d.biphasic.compression_threshold = 0.8;
    d.biphasic.elongation_threshold = 1.2;
    d.biphasic.rest_slope = 1.0;
    d.biphasic.compression_slope = 4.0;
    d.biphasic.elongation_slope = 4.0;
    d.damping_time = 0.0;
    d.fibre.passive = DEFO_FIBRE_PASSIVE_NONE;
    d.fibre.exp_stress = 5e4;
    d.fibre.exp_rate = 6.6;
    d.fibre.linear_stretch = 1.4;
    d.fibre.poly2 = 1e5;
    d.fibre.poly3 = 0.0;
    d.fibre.max_active_stress = 0.0;
    d.fibre.optimal_stretch = 1.0;
    d.fibre.active_width = 0.5;
    return d;
}

void defo_lame(double youngs_modulus, double poisson, double *mu, double *lambda) {
    double e = youngs_modulus, nu = poisson;
    if (mu) *mu = e / (2.0 * (1.0 + nu));
    if (lambda) *lambda = e * nu / ((1.0 + nu) * (1.0 - 2.0 * nu));
}

defo_status defo_material_model_from_name(const char *name, defo_material_model *out) {
    for (int i = 0; i < DEFO_MODEL_COUNT; i++) {
        if (name && strcmp(name, defo_material_model_name((defo_material_model)i)) == 0) {
            if (out) *out = (defo_material_model)i;
            return DEFO_OK;
        }
    }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                      "model: \"%s\" is not one of corotated, neo_hookean, stvk, biphasic",
                      name ? name : "(null)");
}

defo_status defo_material_def_validate(const defo_material_def *d) {
    if (!d) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "material: definition is NULL");
    if ((int)d->model < 0 || (int)d->model >= DEFO_MODEL_COUNT)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "model: %d is not a defo_material_model",
                          (int)d->model);
    if (!(d->youngs_modulus > 0) || !isfinite(d->youngs_modulus))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "youngs_modulus: %g is not > 0",
                          d->youngs_modulus);
    if (!(d->poisson >= 0 && d->poisson < 0.5))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "poisson: %g is not in [0, 0.5)", d->poisson);
    if (!(d->density > 0) || !isfinite(d->density))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "density: %g is not > 0", d->density);
    if (!(d->damping_time >= 0) || !isfinite(d->damping_time))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "damping_time: %g is not >= 0",
                          d->damping_time);
    if (!(d->thickness >= 0) || !isfinite(d->thickness))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "thickness: %g is not >= 0", d->thickness);
    int mode = (int)d->inversion.mode;
    if (mode < DEFO_INVERSION_NONE || mode > DEFO_INVERSION_CLAMP)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "inversion.mode: %d is not a defo_inversion_mode", mode);
    if (mode != DEFO_INVERSION_NONE && !(d->inversion.threshold > 0 && d->inversion.threshold < 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "inversion.threshold: %g is not in (0, 1)",
                          d->inversion.threshold);
    if (mode == DEFO_INVERSION_NONE && d->model == DEFO_MODEL_NEO_HOOKEAN)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "inversion.mode: none is not allowed for neo_hookean (its energy is "
                          "undefined for flat and inverted elements; use c0, c1 or clamp)");
    if (d->model == DEFO_MODEL_BIPHASIC) {
        const defo_biphasic_def *b = &d->biphasic;
        if (!(b->compression_threshold > 0 && b->compression_threshold < 1))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "biphasic.compression_threshold: %g is not in (0, 1)",
                              b->compression_threshold);
        if (!(b->elongation_threshold > 1) || !isfinite(b->elongation_threshold))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "biphasic.elongation_threshold: %g is not > 1",
                              b->elongation_threshold);
        if (!(b->rest_slope > 0) || !isfinite(b->rest_slope))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "biphasic.rest_slope: %g is not > 0",
                              b->rest_slope);
        if (!(b->compression_slope >= 0) || !isfinite(b->compression_slope))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "biphasic.compression_slope: %g is not >= 0", b->compression_slope);
        if (!(b->elongation_slope >= 0) || !isfinite(b->elongation_slope))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "biphasic.elongation_slope: %g is not >= 0", b->elongation_slope);
    }
    return defo_fibre_def_validate(&d->fibre);
}

defo_status defo_material_create(const defo_material_def *def, defo_material **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "material: out is NULL");
    *out = NULL;
    defo_status st = defo_material_def_validate(def);
    if (st != DEFO_OK) return st;
    defo_material *m = defo_calloc(1, sizeof *m);
    if (!m) return defo_error_oom("material", sizeof *m);
    m->def = *def;
    defo_lame(def->youngs_modulus, def->poisson, &m->mu, &m->lambda);
    m->scale = 2.0 * m->mu + m->lambda;
    m->mu_d = def->damping_time * m->mu;
    m->lambda_d = def->damping_time * m->lambda;
    defo_model_prepare(m);
    defo_inversion_prepare(m);
    defo_fibre_prepare(m);
    *out = m;
    return DEFO_OK;
}

void defo_material_destroy(defo_material *mat) {
    defo_free(mat);
}

const defo_material_def *defo_material_get_def(const defo_material *mat) {
    return &mat->def;
}
double defo_material_mu(const defo_material *mat) {
    return mat->mu;
}
double defo_material_lambda(const defo_material *mat) {
    return mat->lambda;
}
double defo_material_stiffness_scale(const defo_material *mat) {
    return mat->scale;
}

/* ------------------------------------------------- definiteness fix */
int defo_dpdf_project_psd(defo_dpdf *d) {
    int changed = 0;
    /* Positive leading minors (Sylvester) prove A positive definite without
     * the eigen-solve, the common case near rest; otherwise decide by the
     * eigenvalues (sorted descending: lam.z is the smallest). */
    double(*a)[3] = d->A;
    double m2 = a[0][0] * a[1][1] - a[0][1] * a[0][1];
    double m3 = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[1][2]) -
                a[0][1] * (a[0][1] * a[2][2] - a[1][2] * a[0][2]) +
                a[0][2] * (a[0][1] * a[1][2] - a[1][1] * a[0][2]);
    int pd = a[0][0] > 0 && m2 > 0 && m3 > 0;
    defo_mat3 A;
    memcpy(A.m, d->A, sizeof A.m);
    defo_vec3 lam = {1, 1, 1};
    defo_mat3 Q = defo_m3_identity();
    if (!pd) defo_sym3_eigen(&A, &lam, &Q);
    if (lam.z < 0) {
        /* keep the two largest (clamped at 0), drop the third */
        double l0 = fmax(lam.x, 0), l1 = fmax(lam.y, 0);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                d->A[i][j] = l0 * Q.m[i][0] * Q.m[j][0] + l1 * Q.m[i][1] * Q.m[j][1];
        changed++;
    }
    for (int p = 0; p < 3; p++) {
        double lo, hi, c, s;
        defo_sym2_eigen(d->B[p][0][0], d->B[p][0][1], d->B[p][1][1], &lo, &hi, &c, &s);
        if (lo < 0) {
            double h = fmax(hi, 0);
            d->B[p][0][0] = h * c * c;
            d->B[p][0][1] = d->B[p][1][0] = h * c * s;
            d->B[p][1][1] = h * s * s;
            changed++;
        }
    }
    return changed;
}

defo_mat3 defo_dpdf_apply(const defo_dpdf *d, const defo_mat3 *dF) {
    defo_mat3 r;
    for (int i = 0; i < 3; i++)
        r.m[i][i] = d->A[i][0] * dF->m[0][0] + d->A[i][1] * dF->m[1][1] + d->A[i][2] * dF->m[2][2];
    static const int pair[3][2] = {{0, 1}, {0, 2}, {1, 2}};
    for (int p = 0; p < 3; p++) {
        int i = pair[p][0], j = pair[p][1];
        double x = dF->m[i][j], y = dF->m[j][i];
        r.m[i][j] = d->B[p][0][0] * x + d->B[p][0][1] * y;
        r.m[j][i] = d->B[p][1][0] * x + d->B[p][1][1] * y;
    }
    return r;
}

defo_mat3 defo_dpdf_apply_world(const defo_dpdf *d, const defo_mat3 *U, const defo_mat3 *V,
                                const defo_mat3 *dF) {
    defo_mat3 dFh = defo_m3_mul(defo_m3_tmul(*U, *dF), *V);
    defo_mat3 dPh = defo_dpdf_apply(d, &dFh);
    return defo_m3_mult(defo_m3_mul(*U, dPh), *V);
}

/* ------------------------------------------------- full-F conveniences */
defo_mat3 defo_material_P(const defo_material *mat, const defo_mat3 *F) {
    defo_mat3 U, V;
    defo_vec3 s, p;
    defo_svd3(F, &U, &s, &V);
    defo_material_eval(mat, s, &p, NULL);
    return defo_m3_mult(defo_m3_mul(U, defo_m3_diag(p)), V);
}

double defo_material_psi_F(const defo_material *mat, const defo_mat3 *F) {
    defo_mat3 U, V;
    defo_vec3 s;
    defo_svd3(F, &U, &s, &V);
    return defo_material_eval(mat, s, NULL, NULL);
}

defo_mat3 defo_material_dP(const defo_material *mat, const defo_mat3 *F, const defo_mat3 *dF,
                           int project_psd) {
    defo_mat3 U, V;
    defo_vec3 s;
    defo_dpdf d;
    defo_svd3(F, &U, &s, &V);
    defo_material_eval(mat, s, NULL, &d);
    if (project_psd) defo_dpdf_project_psd(&d);
    return defo_dpdf_apply_world(&d, &U, &V, dF);
}
