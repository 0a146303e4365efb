/*
 * force/kernel_corotated.c — the one corotated kernel: element-based warped
 * stiffness (MG04 §2.3–2.4) for tet4, a rotation per cubature point for
 * tet10 (MTPS08 §4.3), lazy rotation updates per point (MTPS08 §4.4).
 *
 * Rotations, per point: F = H J⁻¹ (H = Σ_a x_a ∇ξN_aᵀ); R = polar(F) by the
 * scaled Newton iteration when det F > 0 (unique, ~5× cheaper than the SVD),
 * else defo_polar3 (ITF04 §5.1: a proper rotation also for an inverted F, so
 * the element is pushed back).  Kept with R: M = R J⁻ᵀ, whose products with
 * the ξ-gradients are the rotated shape gradients c_a = R ∇N_a.
 *
 * Forces (MG04 eq. 7 per point), with relative displacements in the rotated
 * frame r_a = Rᵀ(x_a − x_0) − (X_a − X_0) (a translation of Rᵀx − X, which
 * the gradients annihilate, and rigid motions stay at zero force to rounding
 * relative to the element size rather than |x|):
 *   E = (Σ_a r_a ∇ξN_aᵀ) J⁻¹ = Rᵀ F − I,  ε = sym E,
 *   σ = λ tr ε I + 2μ ε,  f_a = −w R σ J⁻ᵀ ∇ξN_a,  energy ½ w σ : ε.
 * With a plastic part (ITF04 §6.3 split, defo/plasticity.h) J⁻¹ is the
 * model's J⁻¹ F_p⁻¹ and R the rotation of F_e = F F_p⁻¹: since
 * Σ_a (X_a − X_0) ∇ξN_aᵀ J⁻¹ F_p⁻¹ = F_p⁻¹, E = Rᵀ F_e − I takes the extra
 * term F_p⁻¹ − I, and the element rests where F = R F_p.
 * For tet4 this is MG04's f_e = −R_e K_e (R_eᵀ x − x_0) with K_e = V Beᵀ E Be
 * (the Voigt product) and node 0 taking minus the others: no ghost forces.
 * det F = det(I + E) (det R = 1) counts inverted points for free.
 * Stiffness K' = Σ_q w R Ke,q Rᵀ with blocks w (λ c_a c_bᵀ + μ c_b c_aᵀ +
 * μ (c_a·c_b) I) (force_internal.h), K' d by the same map matrix-free.
 * The tet10 assembly makes every c_a of a point once (fm->cvec) and sums a
 * block's sources with the four points in the four lanes of math/lanes.h.
 * Damping D: the same with the damping moduli (μ_d, λ_d) = τ (μ, λ), so
 * D = τ K' for each element's material.
 *
 * Lazy rule (MTPS08 §4.4): with a lazy_tolerance, d = ‖F − F_last‖∞ (max
 * row sum) is measured at every point first; when it exceeds the tolerance
 * at one point or more, every rotation of the body is recomputed — the
 * stiffness matrix K' has to be made again anyway, and all points then start
 * afresh — else every rotation is kept (rotation_interval still renews a
 * point once it is that many updates old).  rot_serial counts the
 * evaluations that recomputed a rotation: while it stands, K' is the same
 * matrix and a factorisation of it may be kept (integrator/implicit.c).
 *
 * Invariants: rotations are proper (det +1) or I; M = R J⁻ᵀ for the stored
 * R; rotations are written only once every F is known finite, so an error
 * leaves them intact; per-element buffers gathered in fixed order.
 */
#include "force/force_internal.h"
#include "math/lanes.h"

/* max row sum of |a − b| (MTPS08 §4.4) */
static inline double rowsum_dist(const defo_mat3 *a, const double *b) {
    double m = 0;
    for (int r = 0; r < 3; r++) {
        double s = 0;
        for (int k = 0; k < 3; k++) s += fabs(a->m[r][k] - b[3 * r + k]);
        m = fmax(m, s);
    }
    return m;
}

/* d = ‖F − F_last‖∞ exceeds the lazy tolerance at some point of element e
 * (MTPS08 §4.4). */
FM_INLINE int corot_drifted(const defo_force_model *fm, const int P, const int NQ, defo_index e,
                            const double *x) {
    const defo_index *v = fm->mesh->elems + (size_t)e * P;
    const defo_quadrature *rule = &fm->ops->stiffness;
    for (int q = 0; q < NQ; q++) {
        const size_t pq = (size_t)e * NQ + (size_t)q;
        const double *Ji = fm->jinv + 9 * pq;
        double H[9];
        fm_grad_sum(P, x, v, rule->grad + 3 * P * q, H);
        defo_mat3 F;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                F.m[r][k] = H[3 * r] * Ji[k] + H[3 * r + 1] * Ji[3 + k] + H[3 * r + 2] * Ji[6 + k];
        if (rowsum_dist(&F, fm->F_last + 9 * pq) > fm->def.lazy_tolerance) return 1;
    }
    return 0;
}

/* Rotations of element e at x: all of them, or those the interval rule
 * renews; returns the number of points whose rotation was recomputed. */
FM_INLINE int corot_rotations(defo_force_model *fm, const int P, const int NQ, defo_index e,
                              const double *x, int all) {
    const defo_index *v = fm->mesh->elems + (size_t)e * P;
    const defo_quadrature *rule = &fm->ops->stiffness;
    const int interval = fm->def.rotation_interval;
    int updated = 0;
    for (int q = 0; q < NQ; q++) {
        const size_t pq = (size_t)e * NQ + (size_t)q;
        const double *Ji = fm->jinv + 9 * pq;
        if (fm->def.linear) {
            if (!all) continue;
            double *R = fm->R + 9 * pq, *M = fm->M + 9 * pq;
            for (int k = 0; k < 9; k++) R[k] = (k % 4 == 0) ? 1.0 : 0.0;
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) M[3 * r + k] = Ji[3 * k + r];
            continue;
        }
        int32_t age = fm->age[pq] + 1;
        double H[9];
        fm_grad_sum(P, x, v, rule->grad + 3 * P * q, H);
        defo_mat3 F;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                F.m[r][k] = H[3 * r] * Ji[k] + H[3 * r + 1] * Ji[3 + k] + H[3 * r + 2] * Ji[6 + k];
        const int redo = all || (interval > 0 && age >= interval);
        if (!redo) {
            fm->age[pq] = age;
            continue;
        }
        defo_mat3 R;
        if (!defo_polar3_newton(&F, &R)) defo_polar3(&F, &R, NULL);
        memcpy(fm->R + 9 * pq, R.m, 9 * sizeof(double));
        double *M = fm->M + 9 * pq;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                M[3 * r + k] =
                    R.m[r][0] * Ji[3 * k] + R.m[r][1] * Ji[3 * k + 1] + R.m[r][2] * Ji[3 * k + 2];
        if (fm->F_last) memcpy(fm->F_last + 9 * pq, F.m, 9 * sizeof(double));
        fm->age[pq] = 0;
        updated++;
    }
    return updated;
}

/* E = (Σ_a r_a ∇ξN_aᵀ) J⁻¹ with r_a = Rᵀ(x_a − x_0) − (X_a − X_0); for the
 * differential (rest = 0) δE = Rᵀ δH J⁻¹. */
FM_INLINE void corot_strain_gradient(const int P, const double *x, const double *X,
                                     const defo_index *v, const double *g, const double *R,
                                     const double *Ji, int relative, double E[9]) {
    double Hr[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
    const double *x0 = x + 3 * (size_t)v[0], *X0 = relative ? X + 3 * (size_t)v[0] : NULL;
    for (int a = 1; a < P; a++) {
        const double *xa = x + 3 * (size_t)v[a];
        const double d0 = xa[0] - x0[0], d1 = xa[1] - x0[1], d2 = xa[2] - x0[2];
        double r[3];
        for (int k = 0; k < 3; k++) {
            r[k] = R[k] * d0 + R[3 + k] * d1 + R[6 + k] * d2;
            if (relative) r[k] -= X[3 * (size_t)v[a] + k] - X0[k];
        }
        if (P == 4) {
            for (int k = 0; k < 3; k++) Hr[3 * k + a - 1] = r[k];
        } else {
            for (int k = 0; k < 3; k++)
                for (int j = 0; j < 3; j++) Hr[3 * k + j] += r[k] * g[3 * a + j];
        }
    }
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            E[3 * r + k] =
                Hr[3 * r] * Ji[k] + Hr[3 * r + 1] * Ji[3 + k] + Hr[3 * r + 2] * Ji[6 + k];
}

/* σ = λ tr ε I + 2μ ε from E (ε = sym E); returns σ : ε. */
FM_INLINE double corot_stress(double mu, double lambda, const double E[9], double sig[9]) {
    double eps[9];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) eps[3 * r + k] = 0.5 * (E[3 * r + k] + E[3 * k + r]);
    const double tr = eps[0] + eps[4] + eps[8];
    double se = 0;
    for (int k = 0; k < 9; k++) {
        sig[k] = 2 * mu * eps[k] + ((k % 4 == 0) ? lambda * tr : 0.0);
        se += sig[k] * eps[k];
    }
    return se;
}

/* W = s·w R σ J⁻ᵀ, so that f_a = W ∇ξN_a */
FM_INLINE void corot_weight(const double *R, const double sig[9], const double *Ji, double s,
                            double W[9]) {
    double RS[9];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            RS[3 * r + k] =
                R[3 * r] * sig[k] + R[3 * r + 1] * sig[3 + k] + R[3 * r + 2] * sig[6 + k];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            W[3 * r + k] = s * (RS[3 * r] * Ji[3 * k] + RS[3 * r + 1] * Ji[3 * k + 1] +
                                RS[3 * r + 2] * Ji[3 * k + 2]);
}

FM_INLINE void corot_force_element(defo_force_model *fm, const int P, const int NQ, defo_index e,
                                   const double *x) {
    const defo_index *v = fm->mesh->elems + (size_t)e * P;
    const defo_quadrature *rule = &fm->ops->stiffness;
    double *out = fm->slot + 3 * (size_t)P * (size_t)e;
    double en = 0;
    unsigned char fl = 0;
    for (int q = 0; q < NQ; q++) {
        const size_t pq = (size_t)e * NQ + (size_t)q;
        const double *g = rule->grad + 3 * P * q, *R = fm->R + 9 * pq, *Ji = fm->jinv + 9 * pq;
        double E[9], sig[9], W[9];
        corot_strain_gradient(P, x, fm->mesh->x, v, g, R, Ji, 1, E);
        if (fm->fp_inv) /* E = Rᵀ F_e − I (top of the file) */
            for (int k = 0; k < 9; k++) E[k] += fm->fp_inv[9 * pq + (size_t)k] - (k % 4 == 0);
        const double detF = (1 + E[0]) * ((1 + E[4]) * (1 + E[8]) - E[5] * E[7]) -
                            E[1] * (E[3] * (1 + E[8]) - E[5] * E[6]) +
                            E[2] * (E[3] * E[7] - (1 + E[4]) * E[6]);
        if (!(detF > 0)) fl |= FM_INVERTED;
        const double w = fm->w[pq];
        const fm_part *pt = fm_part_of(fm, e);
        en += 0.5 * w * corot_stress(pt->mu, pt->lambda, E, sig);
        /* keep σ (Voigt order xx yy zz xy yz zx) for the stress queries */
        double *keep = fm->sig + 3 * pq, *keep2 = fm->phat + 3 * pq;
        keep[0] = sig[0], keep[1] = sig[4], keep[2] = sig[8];
        keep2[0] = sig[1], keep2[1] = sig[5], keep2[2] = sig[2];
        corot_weight(R, sig, Ji, -w, W);
        fm_scatter(P, W, g, out, q > 0);
    }
    if (!isfinite(en)) fl |= FM_BAD;
    fm->elem_energy[e] = en;
    fm->flag[e] = fl;
}

defo_status defo_fm_corot_evaluate(defo_force_model *fm, const double *x, unsigned flags,
                                   double *force, double *energy) {
    const defo_index ne = fm->ne;
    const int P = fm->npe;
    /* Every F must be finite before a rotation changes.  When all |x| ≤ 1e100
     * none can overflow (|F_ij| ≤ 2P max|x| max|J⁻¹|), so one cheap pass over
     * x replaces a pass over the elements. */
    const size_t n3 = 3 * (size_t)fm->n;
    double xmax = 0;
    for (size_t k = 0; k < n3; k++) xmax = fmax(xmax, fabs(x[k])); /* NaN: fmax ignores it */
    int x_ok = xmax <= 1e100 && 2.0 * P * xmax * fm->max_jinv < 1e300;
    for (size_t k = 0; x_ok && k < n3; k++) x_ok = isfinite(x[k]);
    if (!x_ok) {
        const defo_quadrature *rule = &fm->ops->stiffness;
        for (defo_index e = 0; e < ne; e++) fm->flag[e] = 0;
        for (defo_index e = 0; e < ne; e++)
            for (int q = 0; q < fm->nq; q++) {
                double H[9];
                const size_t pq = (size_t)e * fm->nq + (size_t)q;
                if (P == 4)
                    fm_grad_sum(4, x, fm->mesh->elems + 4 * (size_t)e, rule->grad, H);
                else
                    fm_grad_sum(10, x, fm->mesh->elems + 10 * (size_t)e, rule->grad + 30 * q, H);
                defo_mat3 Hm, Ji;
                memcpy(Hm.m, H, sizeof H);
                memcpy(Ji.m, fm->jinv + 9 * pq, sizeof H);
                if (!defo_m3_isfinite(defo_m3_mul(Hm, Ji))) {
                    fm->flag[e] = FM_BAD;
                    return defo_fm_report_bad(fm, x);
                }
            }
    }
    const int only = (flags & DEFO_EVAL_ROTATIONS_ONLY) != 0;
    /* never-computed rotations are computed whatever the flags say */
    const int rotate = !(flags & DEFO_EVAL_KEEP_ROTATIONS) || fm->all_stale;
    int all = fm->all_stale || fm->def.rotation_interval == 1;
    if (rotate && !all && fm->def.lazy_tolerance > 0 && !fm->def.linear) {
        /* MTPS08 §4.4: one point past the tolerance renews every rotation */
        defo_index drifted = 0;
        DEFO_PARALLEL_REGION_IF(FM_WORTH(fm, FM_NS_COROT_FORCE4 / 4, FM_NS_COROT_FORCE10 / 4)) {
            if (P == 4) {
                DEFO_FOR_SUM(drifted)
                for (defo_index e = 0; e < ne; e++) drifted += corot_drifted(fm, 4, 1, e, x);
            } else {
                DEFO_FOR_SUM(drifted)
                for (defo_index e = 0; e < ne; e++) drifted += corot_drifted(fm, 10, 4, e, x);
            }
        }
        all = drifted > 0;
    }
    defo_index inverted = 0, bad = 0, updated = 0;
    /* one region: rotations, forces, then (no element bad) the gather */
    DEFO_PARALLEL_REGION_IF(FM_WORTH(fm, FM_NS_COROT_FORCE4, FM_NS_COROT_FORCE10)) {
        if (rotate) {
            if (P == 4) {
                DEFO_FOR_SUM(updated)
                for (defo_index e = 0; e < ne; e++) updated += corot_rotations(fm, 4, 1, e, x, all);
            } else {
                DEFO_FOR_SUM(updated)
                for (defo_index e = 0; e < ne; e++)
                    updated += corot_rotations(fm, 10, 4, e, x, all);
            }
        }
        if (only) {
            /* the rotations alone (DEFO_EVAL_ROTATIONS_ONLY) */
        } else if (P == 4) {
            DEFO_FOR_SUM(inverted, bad)
            for (defo_index e = 0; e < ne; e++) {
                corot_force_element(fm, 4, 1, e, x);
                inverted += (fm->flag[e] & FM_INVERTED) != 0;
                bad += (fm->flag[e] & FM_BAD) != 0;
            }
        } else {
            DEFO_FOR_SUM(inverted, bad)
            for (defo_index e = 0; e < ne; e++) {
                corot_force_element(fm, 10, 4, e, x);
                inverted += (fm->flag[e] & FM_INVERTED) != 0;
                bad += (fm->flag[e] & FM_BAD) != 0;
            }
        }
        if (force && !bad && !only) defo_gather3_team(&fm->inc, fm->slot, force);
    }
    if (rotate) fm->all_stale = 0;
    if (updated > 0 || (rotate && all)) fm->rot_serial++;
    if (only) return DEFO_OK;
    fm->inverted = inverted;
    if (bad) return defo_fm_report_bad(fm, x);
    if (energy) *energy = defo_fm_sum_energy(fm);
    return DEFO_OK;
}

/* ------------------------------------------------------------ products */
FM_INLINE void corot_apply_element(defo_force_model *fm, const int P, const int NQ, defo_index e,
                                   const double *d, int mode) {
    const defo_index *v = fm->mesh->elems + (size_t)e * P;
    const defo_quadrature *rule = &fm->ops->stiffness;
    const fm_part *pt = fm_part_of(fm, e);
    const double mu = mode ? pt->mu_d : pt->mu, la = mode ? pt->lambda_d : pt->lambda;
    double *out = fm->slot + 3 * (size_t)P * (size_t)e;
    for (int q = 0; q < NQ; q++) {
        const size_t pq = (size_t)e * NQ + (size_t)q;
        const double *g = rule->grad + 3 * P * q, *R = fm->R + 9 * pq, *Ji = fm->jinv + 9 * pq;
        double E[9], sig[9], W[9];
        corot_strain_gradient(P, d, NULL, v, g, R, Ji, 0, E);
        corot_stress(mu, la, E, sig);
        corot_weight(R, sig, Ji, fm->w[pq], W);
        fm_scatter(P, W, g, out, q > 0);
    }
}

void defo_fm_corot_apply(defo_force_model *fm, const double *d, double *y, int mode) {
    const defo_index ne = fm->ne;
    DEFO_PARALLEL_REGION_IF(FM_WORTH(fm, FM_NS_APPLY4, FM_NS_APPLY10)) {
        if (fm->npe == 4) {
            DEFO_FOR
            for (defo_index e = 0; e < ne; e++) corot_apply_element(fm, 4, 1, e, d, mode);
        } else {
            DEFO_FOR
            for (defo_index e = 0; e < ne; e++) corot_apply_element(fm, 10, 4, e, d, mode);
        }
        defo_gather3_team(&fm->inc, fm->slot, y);
    }
}

/* ------------------------------------------------------------- blocks */
/* The block (i, j) of element e for the moduli k(μ, λ) + c(μ_d, λ_d):
 * K' and D are isotropic blocks of the same node vectors, linear in the
 * moduli, so (k, c) = (1, 0) gives K', (0, 1) D and any pair k K' + c D in
 * one pass (exactly: 1·μ + 0·μ_d = μ). */
FM_INLINE void corot_pair(const defo_force_model *fm, const int P, const int NQ, int64_t e, int i,
                          int j, double k, double c, double s[9]) {
    const defo_quadrature *rule = &fm->ops->stiffness;
    const fm_part *pt = fm_part_of(fm, (defo_index)e);
    const double mu = k * pt->mu + c * pt->mu_d, la = k * pt->lambda + c * pt->lambda_d;
    for (int q = 0; q < NQ; q++) {
        const size_t pq = (size_t)e * NQ + (size_t)q;
        const double *g = rule->grad + 3 * P * q, *M = fm->M + 9 * pq;
        double ci[3], cj[3];
        fm_node_vector(P, M, g, i, ci);
        fm_node_vector(P, M, g, j, cj);
        const double w = fm->w[pq];
        fm_iso_block(ci, cj, w * la, w * mu, s);
    }
}
/* the tet4 assembly's: k and c set by defo_fm_corot_assemble (asm_k, asm_c) */
FM_INLINE void sum4(const defo_force_model *fm, int64_t e, int i, int j, double s[9]) {
    corot_pair(fm, 4, 1, e, i, j, fm->asm_k, fm->asm_c, s);
}

/* tet10, block row I: each source's four points in the four lanes of
 * defo_d4 accumulators (fm_iso_block's expressions lanewise, point q in
 * lane q, summed over the sources in slot order), the lanes then added in
 * point order; the c_a of fm->cvec at 120 e + 12 a + 4 r + q.  Lanewise
 * IEEE arithmetic: the AVX2 and the SSE2 builds give the same bits. */
#define COROT10_ROW_BODY                                                                           \
    const double k = fm->asm_k, c = fm->asm_c;                                                     \
    for (int64_t b = A->diag[I]; b < A->row_offset[I + 1]; b++) {                                  \
        defo_d4 acc[9];                                                                            \
        for (int t = 0; t < 9; t++) acc[t] = defo_d4_splat(0.0);                                   \
        for (int64_t src = A->src_offset[b]; src < A->src_offset[b + 1]; src++) {                  \
            int64_t e;                                                                             \
            int i, j;                                                                              \
            fm_slot(10, A->src[src], &e, &i, &j);                                                  \
            const fm_part *pt = fm_part_of(fm, (defo_index)e);                                     \
            const double mu = k * pt->mu + c * pt->mu_d, la = k * pt->lambda + c * pt->lambda_d;   \
            const defo_d4 w = defo_d4_load(fm->w + 4 * e);                                         \
            const defo_d4 wl = w * defo_d4_splat(la), wm = w * defo_d4_splat(mu);                  \
            const double *pi = fm->cvec + 120 * e + 12 * i, *pj = fm->cvec + 120 * e + 12 * j;     \
            const defo_d4 ci[3] = {defo_d4_load(pi), defo_d4_load(pi + 4), defo_d4_load(pi + 8)};  \
            const defo_d4 cj[3] = {defo_d4_load(pj), defo_d4_load(pj + 4), defo_d4_load(pj + 8)};  \
            const defo_d4 g = wm * (ci[0] * cj[0] + ci[1] * cj[1] + ci[2] * cj[2]);                \
            for (int r = 0; r < 3; r++) {                                                          \
                const defo_d4 ai = wl * ci[r], mj = wm * cj[r];                                    \
                for (int q = 0; q < 3; q++) acc[3 * r + q] += ai * cj[q] + mj * ci[q];             \
                acc[4 * r] += g;                                                                   \
            }                                                                                      \
        }                                                                                          \
        double s[9];                                                                               \
        for (int t = 0; t < 9; t++) s[t] = ((acc[t][0] + acc[t][1]) + acc[t][2]) + acc[t][3];      \
        double *v = val + 9 * b;                                                                   \
        if (b == A->diag[I]) {                                                                     \
            for (int r = 0; r < 3; r++)                                                            \
                for (int q = 0; q < 3; q++) v[3 * r + q] = 0.5 * (s[3 * r + q] + s[3 * q + r]);    \
            continue;                                                                              \
        }                                                                                          \
        double *tr = val + 9 * A->transpose[b];                                                    \
        for (int r = 0; r < 3; r++)                                                                \
            for (int q = 0; q < 3; q++) v[3 * r + q] = tr[3 * q + r] = s[3 * r + q];               \
    }

DEFO_LANES_TARGET static void corot10_row_avx2(const defo_force_model *fm,
                                               const defo_bcsr_pattern *A, double *val,
                                               defo_index I) {
    COROT10_ROW_BODY
}
static void corot10_row(const defo_force_model *fm, const defo_bcsr_pattern *A, double *val,
                        defo_index I) {
    COROT10_ROW_BODY
}

/* A = k K' + c D (D only when a material damps). */
void defo_fm_corot_assemble(defo_force_model *fm, double k, double c) {
    const int worth = FM_WORTH(fm, FM_NS_COROT_ASSEMBLE4, FM_NS_COROT_ASSEMBLE10);
    fm->asm_k = k;
    fm->asm_c = fm->damping ? c : 0.0;
    if (fm->npe == 4) {
        FM_ASSEMBLE_BLOCKS(fm, 4, sum4, 1.0, NULL, 0.0, worth);
        return;
    }
    /* tet10: each c_a once per point (a block of a node pair sums over
     * every element around the edge, and c_a serves 10 blocks) */
    const defo_index ne = fm->ne;
    const defo_quadrature *rule = &fm->ops->stiffness;
    DEFO_PARALLEL_FOR_IF(worth)
    for (defo_index e = 0; e < ne; e++)
        for (int q = 0; q < 4; q++)
            for (int a = 0; a < 10; a++) {
                double cv[3];
                fm_node_vector(10, fm->M + 9 * (4 * (size_t)e + (size_t)q), rule->grad + 30 * q, a,
                               cv);
                for (int r = 0; r < 3; r++) fm->cvec[120 * (size_t)e + 12 * a + 4 * r + q] = cv[r];
            }
    const defo_bcsr_pattern *A = defo_bcsr_get_pattern(fm->A);
    double *val = defo_bcsr_values(fm->A);
    const defo_index nr = A->num_rows;
    const int wide = !fm->corot_plain && defo_lanes_supported();
    DEFO_PARALLEL_FOR_IF(worth)
    for (defo_index I = 0; I < nr; I++) {
        if (wide)
            corot10_row_avx2(fm, A, val, I);
        else
            corot10_row(fm, A, val, I);
    }
}

void defo_fm_corot_diagonal(defo_force_model *fm, double *blocks, int mode) {
    const defo_index ne = fm->ne;
    const int P = fm->npe;
    DEFO_PARALLEL_REGION_IF(FM_WORTH(fm, FM_NS_COROT_DIAG4, FM_NS_COROT_DIAG10)) {
        DEFO_FOR
        for (defo_index e = 0; e < ne; e++) {
            double *out = fm->slot + 9 * (size_t)P * (size_t)e;
            for (int a = 0; a < P; a++) {
                double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
                const double ks = mode ? 0.0 : 1.0, cs = mode ? 1.0 : 0.0;
                if (P == 4)
                    corot_pair(fm, 4, 1, e, a, a, ks, cs, s);
                else
                    corot_pair(fm, 10, 4, e, a, a, ks, cs, s);
                for (int k = 0; k < 9; k++) out[9 * a + k] = s[k];
            }
        }
        defo_fm_gather9_team(fm, fm->slot, blocks);
    }
}

void defo_fm_corot_plastic_changed(defo_force_model *fm, const unsigned char *changed) {
    const size_t np = (size_t)fm->ne * (size_t)fm->nq;
    for (size_t pq = 0; pq < np; pq++) {
        if (changed && !changed[pq]) continue;
        const double *R = fm->R + 9 * pq, *Ji = fm->jinv + 9 * pq;
        double *M = fm->M + 9 * pq;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                M[3 * r + k] = R[3 * r] * Ji[3 * k] + R[3 * r + 1] * Ji[3 * k + 1] +
                               R[3 * r + 2] * Ji[3 * k + 2];
    }
}
