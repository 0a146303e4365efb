/*
 * force/corotated.c — element-based warped stiffness (MG04 §2.3–2.4).
 *
 * Precomputation (MG04 §2.1, Fig. 6 "forall elements e compute Be, Pe, Ke"):
 * with the shape-function gradients b_i = ∇N_i of the rest tet (rows of Dm⁻¹
 * for i = 1..3, b_0 = −Σ b_i), Be = [Be_0 .. Be_3] maps the 12 nodal
 * displacements to the Voigt strain (εxx, εyy, εzz, γxy, γyz, γzx), E is the
 * isotropic Hooke matrix from (λ, μ) = defo_lame(E, ν), and
 * Ke = V Beᵀ E Be.  For isotropic E its blocks have the closed form
 *   Ke_ij = V (λ b_i b_jᵀ + μ b_j b_iᵀ + μ (b_i·b_j) I),
 * so defo stores b_i and V (13 doubles) rather than Ke (90): the kernels
 * below evaluate Ke's products from them, which is the same linear map with
 * a seventh of the memory traffic (defo_corotated_element_stiffness still
 * builds Ke as V Beᵀ E Be, the reference the tests compare against).
 *
 * Per step (MG04 §2.4): F = Ds Dm⁻¹ (the B of A = Q P⁻¹), Re = polar(F).
 * For det F > 0 the polar rotation is unique and a scaled Newton iteration
 * finds it ~5× faster than the SVD; inverted or nearly flat elements use
 * defo_polar3 (ITF04 §5.1: a proper rotation when det F < 0, so an inverted
 * element is pushed back rather than further in).
 *
 * Forces (MG04 eq. 7) with relative positions, u_j = Reᵀ(x_j − x_0) −
 * (X_j − X_0): mathematically u differs from Reᵀx_j − X_j by a translation,
 * which Ke annihilates, and this form keeps a rigidly moved mesh at zero
 * force to rounding relative to the element size rather than to |x|.
 * f_i = −Re Σ_j Ke_ij u_j = −V Re σ b_i with H = Σ_j u_j b_jᵀ, ε = sym H,
 * σ = λ tr(ε) I + 2μ ε (the Voigt E Be u), for i = 1..3, and
 * f_0 = −(f_1 + f_2 + f_3) (b_0 = −Σ b_i): no ghost forces, Σ_i f_i = 0 to
 * the rounding of that one sum.  Energy V (μ ε:ε + λ tr(ε)²/2) = ½ uᵀKe u.
 *
 * Assembly of K' = Σ_e Re Ke Reᵀ: block (I, J), J ≥ I, of the global matrix
 * is the sum over its sources (e, i, j) — the bcsr assembly map, in
 * increasing slot order — of Re Ke_ij Reᵀ = V (λ c_i c_jᵀ + μ c_j c_iᵀ +
 * μ (c_i·c_j) I) with the rotated gradients c_i = Re b_i (stored with Re);
 * no per-element buffer.  Block (J, I) is the transpose of (I, J) and
 * diagonal blocks are symmetrised, so K' is exactly symmetric.  Parallel
 * over block rows; deterministic.
 *
 * Invariants: rotations are always proper (det +1) or I; c_i = Re b_i for
 * the stored Re; b_i, V fixed until the topology changes (then the object
 * is rebuilt).
 */
#include "defo/corotated.h"

#include "defo/math.h"

#include "base/parallel.h"

#include <math.h>
#include <string.h>

struct defo_corotated {
    const defo_mesh *mesh;
    defo_corotated_def def;
    double mu, lambda;
    defo_index num_nodes, num_elems;
    double *grad;       /* 12 per element: b_0..b_3 */
    double *volume;     /* per element */
    double *Dm_inv;     /* 9 per element, row-major */
    double max_dm_inv;  /* max |Dm⁻¹ entry| over all elements */
    double *R;          /* 9 per element */
    double *rgrad;      /* 12 per element: c_i = Re b_i, updated with Re */
    double *F_last;     /* 9 per element, lazy_tolerance > 0 only */
    int32_t *age;       /* updates since the element's rotation was computed */
    double *slot_force; /* 12 per element */
    double *elem_energy;
    defo_incidence inc;
    defo_bcsr *A;
    defo_index num_inverted;
    int all_stale;
};

defo_corotated_def defo_default_corotated_def(void) {
    defo_corotated_def d;
    d.linear = 0;
    d.rotation_interval = 1;
    d.lazy_tolerance = 0;
    return d;
}

/* Row r (0..5) of Be_i times a 3-vector: Be_i rows in Voigt order. */
static void be_block(const double *b, double be[6][3]) {
    memset(be, 0, 18 * sizeof(double));
    be[0][0] = b[0];
    be[1][1] = b[1];
    be[2][2] = b[2];
    be[3][0] = b[1];
    be[3][1] = b[0];
    be[4][1] = b[2];
    be[4][2] = b[1];
    be[5][0] = b[2];
    be[5][2] = b[0];
}

static void hooke(double mu, double lambda, double E[6][6]) {
    memset(E, 0, 36 * sizeof(double));
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) E[i][j] = lambda;
        E[i][i] = lambda + 2 * mu;
        E[3 + i][3 + i] = mu;
    }
}

/* out (3×3) = V Be_iᵀ E Be_j */
static void ke_block(const double *bi, const double *bj, double V, double mu, double lambda,
                     double *out) {
    double Bi[6][3], Bj[6][3], E[6][6];
    be_block(bi, Bi);
    be_block(bj, Bj);
    hooke(mu, lambda, E);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++) {
            double s = 0;
            for (int a = 0; a < 6; a++)
                for (int b = 0; b < 6; b++) s += Bi[a][r] * E[a][b] * Bj[b][c];
            out[3 * r + c] = V * s;
        }
}

void defo_corotated_destroy(defo_corotated *c) {
    if (!c) return;
    defo_free(c->grad);
    defo_free(c->volume);
    defo_free(c->Dm_inv);
    defo_free(c->rgrad);
    defo_free(c->R);
    defo_free(c->F_last);
    defo_free(c->age);
    defo_free(c->slot_force);
    defo_free(c->elem_energy);
    defo_incidence_free(&c->inc);
    defo_bcsr_destroy(c->A);
    defo_free(c);
}

defo_status defo_corotated_create(const defo_mesh *mesh, const defo_material_def *material,
                                  const defo_corotated_def *def, defo_corotated **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "corotated: out is NULL");
    *out = NULL;
    if (!mesh || !material)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "corotated: mesh or material is NULL");
    if (mesh->order != 1)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "corotated: only tet4 meshes (order 1) are supported, mesh has order %d",
                          mesh->order);
    defo_corotated_def d = def ? *def : defo_default_corotated_def();
    if (d.rotation_interval < 0 || !(d.lazy_tolerance >= 0) || !isfinite(d.lazy_tolerance))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "corotated: rotation_interval %d / lazy_tolerance %g out of range",
                          d.rotation_interval, d.lazy_tolerance);
    if (d.rotation_interval == 0 && d.lazy_tolerance == 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "corotated: rotation_interval 0 needs a lazy_tolerance > 0");
    if (!(material->youngs_modulus > 0) || !(material->poisson >= 0 && material->poisson < 0.5))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "corotated: Young's modulus %g must be > 0 and Poisson ratio %g in "
                          "[0, 0.5)",
                          material->youngs_modulus, material->poisson);
    defo_rest rest;
    defo_status st = defo_rest_compute(mesh, &rest);
    if (st) return defo_error_prefix("corotated");

    defo_corotated *c = defo_calloc(1, sizeof *c);
    if (!c) {
        defo_rest_free(&rest);
        return defo_error_oom("corotated model", sizeof *c);
    }
    c->mesh = mesh;
    c->def = d;
    defo_lame(material->youngs_modulus, material->poisson, &c->mu, &c->lambda);
    c->num_nodes = mesh->num_nodes;
    c->num_elems = mesh->num_elems;
    const size_t ne = (size_t)mesh->num_elems;
    c->grad = defo_malloc(12 * ne * sizeof(double) + 1);
    c->volume = defo_malloc(ne * sizeof(double) + 1);
    c->Dm_inv = defo_malloc(9 * ne * sizeof(double) + 1);
    c->rgrad = defo_malloc(12 * ne * sizeof(double) + 1);
    c->R = defo_malloc(9 * ne * sizeof(double) + 1);
    c->age = defo_calloc(ne + 1, sizeof(int32_t));
    c->slot_force = defo_malloc(12 * ne * sizeof(double) + 1);
    c->elem_energy = defo_malloc(ne * sizeof(double) + 1);
    if (d.lazy_tolerance > 0) c->F_last = defo_malloc(9 * ne * sizeof(double) + 1);
    if (!c->grad || !c->volume || !c->Dm_inv || !c->rgrad || !c->R || !c->age || !c->slot_force ||
        !c->elem_energy || (d.lazy_tolerance > 0 && !c->F_last)) {
        defo_rest_free(&rest);
        defo_corotated_destroy(c);
        return defo_error_oom("corotated element data", 64 * ne * sizeof(double));
    }
    memcpy(c->Dm_inv, rest.Dm_inv, 9 * ne * sizeof(double));
    for (size_t k = 0; k < 9 * ne; k++) c->max_dm_inv = fmax(c->max_dm_inv, fabs(c->Dm_inv[k]));
    memcpy(c->volume, rest.volume, ne * sizeof(double));
    defo_rest_free(&rest);

    const defo_index nelem = c->num_elems;
    DEFO_PARALLEL_FOR_IF(nelem > DEFO_PARALLEL_MIN / 4)
    for (defo_index e = 0; e < nelem; e++) {
        double *g = c->grad + 12 * (size_t)e;
        const double *Di = c->Dm_inv + 9 * (size_t)e;
        for (int k = 0; k < 3; k++) {
            g[3 + k] = Di[k];
            g[6 + k] = Di[3 + k];
            g[9 + k] = Di[6 + k];
            g[k] = -(Di[k] + Di[3 + k] + Di[6 + k]);
        }
        memcpy(c->rgrad + 12 * (size_t)e, g, 12 * sizeof(double));
        double *R = c->R + 9 * (size_t)e;
        for (int k = 0; k < 9; k++) R[k] = (k % 4 == 0) ? 1.0 : 0.0;
        if (c->F_last)
            for (int k = 0; k < 9; k++) c->F_last[9 * (size_t)e + (size_t)k] = R[k];
    }
    c->all_stale = 1;
    st = defo_incidence_build(&c->inc, mesh->elems, mesh->num_elems, 4, mesh->num_nodes);
    if (!st) st = defo_bcsr_create(mesh->elems, mesh->num_elems, 4, mesh->num_nodes, &c->A);
    if (st) {
        defo_corotated_destroy(c);
        return defo_error_prefix("corotated");
    }
    *out = c;
    return DEFO_OK;
}

void defo_corotated_invalidate_rotations(defo_corotated *c) {
    if (c) c->all_stale = 1;
}

static defo_mat3 elem_F(const defo_corotated *c, const double *x, defo_index e) {
    const defo_index *en = c->mesh->elems + 4 * (size_t)e;
    const double *x0 = x + 3 * (size_t)en[0];
    defo_mat3 Ds, Di;
    for (int j = 0; j < 3; j++) {
        const double *xj = x + 3 * (size_t)en[j + 1];
        for (int r = 0; r < 3; r++) Ds.m[r][j] = xj[r] - x0[r];
    }
    memcpy(Di.m, c->Dm_inv + 9 * (size_t)e, 9 * sizeof(double));
    return defo_m3_mul(Ds, Di);
}

/* max row sum of |a − b| (MTPS08 §4.4) */
static double rowsum_dist(const defo_mat3 *a, const double *b) {
    double m = 0;
    for (int r = 0; r < 3; r++) {
        double s = 0;
        for (int k = 0; k < 3; k++) s += fabs(a->m[r][k] - b[3 * r + k]);
        m = fmax(m, s);
    }
    return m;
}

defo_status defo_corotated_update_rotations(defo_corotated *c, const double *x,
                                            defo_index *updated) {
    if (updated) *updated = 0;
    if (!c || !x) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "corotated: missing argument");
    const defo_index ne = c->num_elems;
    const int interval = c->def.rotation_interval;
    const double tol = c->def.lazy_tolerance;
    const int all = c->all_stale || (interval == 1);
    const int linear = c->def.linear;
    defo_index n_updated = 0, n_inverted = 0, bad = DEFO_INDEX_MAX;
    /* Rotations are written only once every F is known finite, so an error
     * leaves them intact.  When all |x| ≤ 1e100 no F can overflow
     * (|F_ij| ≤ 6 max|x| max|Dm⁻¹|, Dm⁻¹ finite) and one cheap pass over x
     * replaces a pass over the elements. */
    const size_t n3 = 3 * (size_t)c->num_nodes;
    double xmax = 0;
    for (size_t k = 0; k < n3; k++) xmax = fmax(xmax, fabs(x[k])); /* NaN: fmax ignores it */
    int x_ok = xmax <= 1e100 && 6.0 * xmax * c->max_dm_inv < 1e300;
    for (size_t k = 0; x_ok && k < n3; k++) x_ok = isfinite(x[k]);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)                                                          \
    reduction(min                                                                                  \
              : bad) if (!x_ok && ne > DEFO_PARALLEL_MIN / 4)
#endif
    for (defo_index e = 0; e < (x_ok ? 0 : ne); e++) {
        defo_mat3 F = elem_F(c, x, e);
        if (!defo_m3_isfinite(F)) bad = bad < e ? bad : e;
    }
    if (bad != DEFO_INDEX_MAX)
        return defo_error(DEFO_ERR_NUMERICAL,
                          "corotated: element %ld has a non-finite deformation gradient",
                          (long)bad);
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(+ : n_updated, n_inverted) if (ne > DEFO_PARALLEL_MIN / 4)
#endif
    for (defo_index e = 0; e < ne; e++) {
        defo_mat3 F = elem_F(c, x, e);
        if (defo_m3_det(F) <= 0) n_inverted++;
        if (linear) continue;
        int32_t age = c->age[e] + 1;
        int redo = all || (interval > 0 && age >= interval);
        if (!redo && tol > 0) redo = rowsum_dist(&F, c->F_last + 9 * (size_t)e) > tol;
        if (!redo) {
            c->age[e] = age;
            continue;
        }
        defo_mat3 R;
        if (!defo_polar3_newton(&F, &R)) defo_polar3(&F, &R, NULL); /* ITF04 §5.1 when inverted */
        memcpy(c->R + 9 * (size_t)e, R.m, 9 * sizeof(double));
        const double *b = c->grad + 12 * (size_t)e;
        double *cg = c->rgrad + 12 * (size_t)e;
        for (int i = 0; i < 4; i++)
            for (int r = 0; r < 3; r++)
                cg[3 * i + r] =
                    R.m[r][0] * b[3 * i] + R.m[r][1] * b[3 * i + 1] + R.m[r][2] * b[3 * i + 2];
        if (c->F_last) memcpy(c->F_last + 9 * (size_t)e, F.m, 9 * sizeof(double));
        c->age[e] = 0;
        n_updated++;
    }
    c->all_stale = 0;
    c->num_inverted = n_inverted;
    if (updated) *updated = n_updated;
    return DEFO_OK;
}

defo_status defo_corotated_forces(defo_corotated *c, const double *x, double *force,
                                  double *energy) {
    if (!c || !x || !force)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "corotated: missing argument");
    const defo_index ne = c->num_elems;
    const defo_index *elems = c->mesh->elems;
    const double *X = c->mesh->x;
    const double mu = c->mu, lambda = c->lambda;
    DEFO_PARALLEL_FOR_IF(ne > DEFO_PARALLEL_MIN / 4)
    for (defo_index e = 0; e < ne; e++) {
        const defo_index *en = elems + 4 * (size_t)e;
        const double *R = c->R + 9 * (size_t)e;
        const double *b = c->grad + 12 * (size_t)e;
        /* H = Σ_j u_j b_jᵀ, u_j = Reᵀ(x_j − x_0) − (X_j − X_0), u_0 = 0 */
        double H[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
        const double *xa = x + 3 * (size_t)en[0], *Xa = X + 3 * (size_t)en[0];
        for (int j = 1; j < 4; j++) {
            const double *xj = x + 3 * (size_t)en[j], *Xj = X + 3 * (size_t)en[j];
            double d0 = xj[0] - xa[0], d1 = xj[1] - xa[1], d2 = xj[2] - xa[2];
            for (int r = 0; r < 3; r++) {
                double u = R[r] * d0 + R[3 + r] * d1 + R[6 + r] * d2 - (Xj[r] - Xa[r]);
                for (int k = 0; k < 3; k++) H[r][k] += u * b[3 * j + k];
            }
        }
        /* σ = λ tr(ε) I + 2μ ε, ε = sym H (the Voigt E Be u of MG04 eq. 7) */
        const double V = c->volume[e], tr = H[0][0] + H[1][1] + H[2][2];
        double sig[3][3], en_e = 0;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) {
                double eps = 0.5 * (H[r][k] + H[k][r]);
                sig[r][k] = 2 * mu * eps + (r == k ? lambda * tr : 0.0);
                en_e += sig[r][k] * eps;
            }
        /* f_i = −V Re σ b_i (i = 1..3), f_0 = −(f_1 + f_2 + f_3): Σ f = 0 */
        double *f = c->slot_force + 12 * (size_t)e;
        f[0] = f[1] = f[2] = 0;
        for (int i = 1; i < 4; i++) {
            double g[3];
            for (int r = 0; r < 3; r++)
                g[r] = sig[r][0] * b[3 * i] + sig[r][1] * b[3 * i + 1] + sig[r][2] * b[3 * i + 2];
            for (int r = 0; r < 3; r++) {
                double v = -V * (R[3 * r] * g[0] + R[3 * r + 1] * g[1] + R[3 * r + 2] * g[2]);
                f[3 * i + r] = v;
                f[r] -= v;
            }
        }
        c->elem_energy[e] = 0.5 * V * en_e;
    }
    defo_gather3(&c->inc, c->slot_force, force);
    if (energy) *energy = defo_sum(c->elem_energy, (size_t)ne);
    for (defo_index e = 0; e < ne; e++)
        if (!isfinite(c->elem_energy[e]))
            return defo_error(DEFO_ERR_NUMERICAL, "corotated: non-finite force in element %ld",
                              (long)e);
    return DEFO_OK;
}

defo_bcsr *defo_corotated_matrix(defo_corotated *c) {
    return c ? c->A : NULL;
}

/* Block row I of K' (blocks on and above the diagonal summed from their
 * sources, each mirror below written as the transpose), for p nodes per
 * element: called with a literal p where it is known, so the slot decoding
 * divides by constants. */
static inline void assemble_row(const defo_corotated *c, const defo_bcsr_pattern *P, double *val,
                                defo_index I, int p, double stiffness_scale) {
    const double mu = c->mu, lambda = c->lambda;
    for (int64_t b = P->diag[I]; b < P->row_offset[I + 1]; b++) {
        double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t k = P->src_offset[b]; k < P->src_offset[b + 1]; k++) {
            int64_t e;
            int i, j;
            defo_bcsr_slot(P->src[k], p, &e, &i, &j);
            /* Re Ke_ij Reᵀ = V (λ c_i c_jᵀ + μ c_j c_iᵀ + μ (c_i·c_j) I), c = Re b */
            const double *ci = c->rgrad + 3 * p * e + 3 * i, *cj = c->rgrad + 3 * p * e + 3 * j;
            const double V = c->volume[e], la = V * lambda, m = V * mu;
            const double g = m * (ci[0] * cj[0] + ci[1] * cj[1] + ci[2] * cj[2]);
            for (int r = 0; r < 3; r++) {
                const double ai = la * ci[r], mj = m * cj[r];
                for (int q = 0; q < 3; q++) s[3 * r + q] += ai * cj[q] + mj * ci[q];
                s[4 * r] += g;
            }
        }
        double *v = val + 9 * b;
        if (b == P->diag[I]) { /* symmetric: average the two rounding orders */
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 3; q++)
                    v[3 * r + q] = stiffness_scale * 0.5 * (s[3 * r + q] + s[3 * q + r]);
            continue;
        }
        double *w = val + 9 * P->transpose[b];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++)
                v[3 * r + q] = w[3 * q + r] = stiffness_scale * s[3 * r + q];
    }
}

void defo_corotated_assemble(defo_corotated *c, double stiffness_scale, const double *mass,
                             double mass_scale) {
    defo_bcsr *A = c->A;
    const defo_bcsr_pattern *P = defo_bcsr_get_pattern(A);
    double *val = defo_bcsr_values(A);
    const defo_index nr = P->num_rows;
    const int p = P->per_elem;
    /* Blocks on and above the diagonal are summed from their sources; each
     * one below is the transpose of its mirror (Re Ke_ji Reᵀ = (Re Ke_ij
     * Reᵀ)ᵀ), so K' is exactly symmetric and costs ~10 of the 16 block
     * products per element. */
    if (p == 4) {
        DEFO_PARALLEL_FOR_IF(P->num_blocks > DEFO_PARALLEL_MIN)
        for (defo_index I = 0; I < nr; I++) assemble_row(c, P, val, I, 4, stiffness_scale);
    } else {
        DEFO_PARALLEL_FOR_IF(P->num_blocks > DEFO_PARALLEL_MIN)
        for (defo_index I = 0; I < nr; I++) assemble_row(c, P, val, I, p, stiffness_scale);
    }
    if (mass && mass_scale != 0) defo_bcsr_add_diagonal(A, mass, mass_scale);
}

const double *defo_corotated_rotations(const defo_corotated *c) {
    return c ? c->R : NULL;
}

defo_index defo_corotated_count_inverted(const defo_corotated *c) {
    return c ? c->num_inverted : 0;
}

void defo_corotated_element_stiffness(const defo_corotated *c, defo_index e, double *Ke) {
    const double *g = c->grad + 12 * (size_t)e;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            double blk[9];
            ke_block(g + 3 * i, g + 3 * j, c->volume[e], c->mu, c->lambda, blk);
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 3; q++) Ke[(3 * i + r) * 12 + 3 * j + q] = blk[3 * r + q];
        }
}

void defo_corotated_plastic_matrix(const defo_corotated *c, defo_index e, double *Pe) {
    double E[6][6];
    hooke(c->mu, c->lambda, E);
    const double V = c->volume[e];
    for (int i = 0; i < 4; i++) {
        double B[6][3];
        be_block(c->grad + 12 * (size_t)e + 3 * i, B);
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 6; q++) {
                double s = 0;
                for (int a = 0; a < 6; a++) s += B[a][r] * E[a][q];
                Pe[(3 * i + r) * 6 + q] = V * s;
            }
    }
}

size_t defo_corotated_bytes(const defo_corotated *c) {
    if (!c) return 0;
    size_t ne = (size_t)c->num_elems;
    size_t per =
        (12 + 1 + 9 + 12 + 9 + 12 + 1 + (c->F_last ? 9 : 0)) * sizeof(double) + sizeof(int32_t);
    return sizeof *c + ne * per + defo_bcsr_bytes(c->A) +
           ((size_t)c->num_nodes + 1 + 4 * ne) * sizeof(int64_t);
}

void defo_corotated_strain(const defo_mesh *mesh, const double *Dm_inv, const double *R,
                           const double *x, defo_index e, double eps[6]) {
    const defo_index *en = mesh->elems + (size_t)mesh->nodes_per_elem * (size_t)e;
    const double *xa = x + 3 * (size_t)en[0], *Xa = mesh->x + 3 * (size_t)en[0];
    for (int k = 0; k < 6; k++) eps[k] = 0;
    for (int j = 1; j < 4; j++) {
        const double *xj = x + 3 * (size_t)en[j], *Xj = mesh->x + 3 * (size_t)en[j];
        const double d0 = xj[0] - xa[0], d1 = xj[1] - xa[1], d2 = xj[2] - xa[2];
        /* u = Reᵀ(xj − x0) − (Xj − X0): the unrotated displacement of node j */
        double u[3];
        for (int r = 0; r < 3; r++)
            u[r] = R[r] * d0 + R[3 + r] * d1 + R[6 + r] * d2 - (Xj[r] - Xa[r]);
        const double *b = Dm_inv + 3 * (j - 1);
        eps[0] += b[0] * u[0];
        eps[1] += b[1] * u[1];
        eps[2] += b[2] * u[2];
        eps[3] += b[1] * u[0] + b[0] * u[1];
        eps[4] += b[2] * u[1] + b[1] * u[2];
        eps[5] += b[2] * u[0] + b[0] * u[2];
    }
}
