/*
 * force/kernel_hyperelastic.c — the one invertible hyperelastic kernel
 * (ITF04 §3–6.2, TSIF05 §5–9), over the quadrature points of any element.
 *
 * Per point q of element e, with g_a = ∇ξN_a(q), J⁻¹ and w the rest data:
 *   H = Σ_a x_a g_aᵀ,  F = H J⁻¹ = U F̂ Vᵀ (defo_svd3: det U = det V = +1,
 *   σ3 < 0 when inverted, ITF04 §5),  ψ, P̂ (, dP/dF) = material(σ),
 *   D̂ = J⁻¹ V,  f_a = −w U P̂ D̂ᵀ g_a   (= P Bm e_a of ITF04 eq. 2 for tet4:
 *   Bm = −V Dm⁻ᵀ, J = Dm).  For tet4 the forces on nodes 1..3 are the columns
 *   of W = −w U P̂ D̂ᵀ and node 0 gets minus their sum, so each element's
 *   forces sum to zero; since P̂ is diagonal they are torque-free (ITF04 §6).
 * Force differential (TSIF05 eq. 4): δF̂ = Uᵀ δH D̂, δP̂ = dP/dF : δF̂,
 *   (K δx)_a = w U δP̂ D̂ᵀ g_a.  Blocks K_ab = w U K̂_ab Uᵀ with, for
 *   d_a = D̂ᵀ g_a, K̂_ab[:, k] = δP̂(e_k d_bᵀ) d_a written out from the block
 *   form of dP/dF (hyper_block).  Definiteness (TSIF05 §6–8): δxᵀKδx =
 *   Σ_q w δF̂ : dP/dF : δF̂, so clamping the negative eigenvalues of the blocks
 *   A, B12, B13, B23 makes every element matrix, hence K, PSD.
 * Damping (ITF04 §6.2): Ḟ̂ = Uᵀ Ḣ D̂, P̂_d = μ_d(Ḟ̂ + Ḟ̂ᵀ) + λ_d tr(Ḟ̂) I,
 *   (D v)_a = w U P̂_d D̂ᵀ g_a; its blocks are the isotropic closed form with
 *   c_a = U D̂ᵀ g_a = (U Vᵀ) J⁻ᵀ g_a.
 *
 * Fibre term (ITF04 §6.1, TSIF05 §11; material.h): ψ_f(λ), λ = |F a| for the
 *   point's unit rest direction a.  §6.1 rotates a into the diagonal frame
 *   (â = Vᵀ a) where P̂_f = (T/λ) F̂ â âᵀ; rotated back, U P̂_f Vᵀ = (T/λ) F a aᵀ,
 *   which the kernel forms directly (no SVD: the SVD-free path keeps it):
 *   with b = F a and ã = J⁻¹ a, f_a = −w (T/λ) b (ã·g_a), a rank-one
 *   addition to W (on the SVD-free path P gains (T/λ) b aᵀ before
 *   W = −w P J⁻ᵀ, the same term).  Tangent: (K δx)_a = w K_f (δH ã)(ã·g_a) with
 *   K_f = (T/λ)(I − t tᵀ) + K t tᵀ, t = b/λ, blocks w (ã·g_a)(ã·g_b) K_f.  The
 *   TSIF05 §8 fix clamps the isotropic blocks as above and, separately, T/λ
 *   and K at 0 (the exact PSD part of the fibre term, whose dP/dF
 *   eigenvalues are T/λ twice, K and 0): a sum of two PSD parts, so K stays
 *   PSD.  The inversion extension keeps acting on the isotropic part; the
 *   fibre stresses vanish near λ = 0, so flat and inverted points need
 *   nothing more.
 *
 * Plasticity (defo/plasticity.h): with a plastic part F_p the point's
 *   F_e = F F_p⁻¹ (ITF04 §6.3): every formula above with J⁻¹ replaced by
 *   J⁻¹ F_p⁻¹, which the model keeps in place of J⁻¹ (force_internal.h).
 *
 * Invariants: a non-finite F never reaches defo_svd3 (flagged FM_BAD and
 * reported naming the element); per-element results go to the element's
 * slot, gathered per node in slot order: bitwise identical for any thread
 * count; no allocation.
 */
#include "force/force_internal.h"
#include "math/lanes.h"

static inline void load9(double *d, const double *s) {
    memcpy(d, s, 9 * sizeof *d);
}

/* An element's stable length from the largest bound `stiff` of its points'
 * tangents dP/dF (0 when untracked): the eigenvalue length over √r with
 * r = max(stiff, the rest bound) / (λ + 2μ).  At cfl ½ its time ℓ/(c√r)
 * gives the element's bound of the explicit stability limit 2/ω_e
 * (defo_element_rest_eigen_length), so the smallest over the elements
 * bounds the whole body's limit from below.  The floor at the rest bound
 * keeps a stretched, softened element from allowing longer steps than at
 * rest: it can stiffen again within one step. */
static inline double fm_stable_len(const defo_force_model *fm, defo_index e, double stiff) {
    const fm_part *pt = fm_part_of(fm, e);
    const double b = stiff > pt->rest_bound ? stiff : pt->rest_bound;
    return fm->elen[e] / sqrt(b / pt->stiffness_scale);
}

/* The fibre term at point pq of element e (top of the file).  With Pd (the
 * SVD-free path, before W = −w P J⁻ᵀ is formed) P gains the fibre stress
 * (T/λ) b aᵀ; otherwise W (= −w U P̂ D̂ᵀ, row-major) gains −w (T/λ) b ãᵀ.
 * The point keeps t, T and λ (the stress output's) and, with `tangent`, ã
 * and the tangent's K_f (force_internal.h; T/λ and K clamped at 0 under the
 * definiteness fix).  Returns w ψ_f; *bound gets the term's largest dP/dF
 * eigenvalue magnitude max(T/λ, |K|), added to the isotropic bound (the
 * spectral norm of a sum is at most the sum of the norms). */
FM_INLINE double fm_fibre(defo_force_model *fm, defo_index e, size_t pq, const defo_mat3 *F,
                          const defo_mat3 *Ji, double w, defo_mat3 *Pd, double W[9], double *bound,
                          int with_energy, int tangent) {
    const double *a = fm->fibre + 3 * pq;
    double *d = fm->fib + FM_FIB * pq, b[3], at[3] = {0, 0, 0};
    for (int r = 0; r < 3; r++) b[r] = F->m[r][0] * a[0] + F->m[r][1] * a[1] + F->m[r][2] * a[2];
    if (tangent || !Pd)
        for (int r = 0; r < 3; r++)
            at[r] = Ji->m[r][0] * a[0] + Ji->m[r][1] * a[1] + Ji->m[r][2] * a[2];
    const double lam = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
    double T, K, psi = 0.0;
    const double al = fm->activation ? fm->activation[e] : 0.0;
    const defo_material *mat = fm_part_of(fm, e)->mat;
    if (with_energy)
        psi = defo_material_fibre_eval(mat, lam, al, &T, &K);
    else
        T = defo_material_fibre_stress(mat, lam, al, &K);
    /* T > 0 only where λ ≥ min(1, λ_o(1 − w)) > 0 */
    const double il = lam > 0.0 ? 1.0 / lam : 0.0, g = T > 0.0 ? T * il : 0.0;
    for (int r = 0; r < 3; r++) d[r] = b[r] * il;
    d[FM_FIB_T] = T;
    d[FM_FIB_LAM] = lam;
    if (tangent) {
        /* K_f = kp I + (kt − kp) t tᵀ, kp = T/λ and kt = K clamped at 0
         * under the fix (the exact PSD part) */
        const int fix = fm->fix;
        const double kp = fix && g < 0.0 ? 0.0 : g, kt = fix && K < 0.0 ? 0.0 : K;
        for (int r = 0; r < 3; r++) d[FM_FIB_A + r] = at[r];
        d[FM_FIB_KP] = kp;
        d[FM_FIB_DK] = kt - kp;
    }
    if (Pd) {
        for (int r = 0; r < 3; r++) {
            const double gb = g * b[r];
            for (int k = 0; k < 3; k++) Pd->m[r][k] += gb * a[k];
        }
    } else {
        const double c = -w * g;
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) W[3 * r + k] += c * b[r] * at[k];
    }
    const double aK = fabs(K);
    *bound = g < aK ? aK : g; /* fmax(g, |K|) without a libm call: neither is NaN */
    return w * psi;
}

/* t, T and λ of four consecutive points (lanes) into their fib records from
 * d (fm_fibre's stores): t and T of each as one vector (a 4×4 transpose). */
_Static_assert(FM_FIB_T == 3, "fib_store4 writes t and T as one vector");
DEFO_LANES_INLINE void fib_store4(double *d, const defo_d4 t[3], const defo_d4 *T,
                                  const defo_d4 *lam) {
    defo_d4 v[4] = {t[0], t[1], t[2], *T};
    defo_d4_transpose(&v[0], &v[1], &v[2], &v[3]);
    for (int l = 0; l < 4; l++) {
        defo_d4_store(d + FM_FIB * l, v[l]);
        d[FM_FIB * l + FM_FIB_LAM] = (*lam)[l];
    }
}

/* fm_fibre on the SVD-free path without energy or tangent at the four
 * points of tet10 element e, lanewise (lane q: point q; fm_fibre's
 * expressions in its order, the curves by defo_material_fibre_stress4, the
 * one-point call's bits), from their b = F a and directions a: the point
 * keeps t, T and λ, Pf[·][q] gets the fibre stress (T/λ) b aᵀ (row-major,
 * to be added to P) and fb[q] the bound max(T/λ, |K|).  One vector pass for
 * the four instead of four scalar chains through a square root, a division
 * and the curves. */
DEFO_LANES_CLONES
static void fibre_points4(defo_force_model *fm, defo_index e, double B[3][4], double A[3][4],
                          double Pf[9][4], double fb[4]) {
    const defo_d4 b[3] = {defo_d4_load(B[0]), defo_d4_load(B[1]), defo_d4_load(B[2])};
    const defo_d4 a[3] = {defo_d4_load(A[0]), defo_d4_load(A[1]), defo_d4_load(A[2])};
    defo_d4 lam = b[0] * b[0] + b[1] * b[1] + b[2] * b[2];
    defo_d4_sqrt(&lam);
    double la[4], al[4], Ta[4], Ka[4];
    defo_d4_store(la, lam);
    const double a1 = fm->activation ? fm->activation[e] : 0.0;
    for (int q = 0; q < 4; q++) al[q] = a1;
    defo_material_fibre_stress4(fm_part_of(fm, e)->mat, la, al, Ta, Ka);
    const defo_d4 T = defo_d4_load(Ta), K = defo_d4_load(Ka), zero = defo_d4_splat(0.0);
    const defo_d4 il = defo_d4_select(lam > 0.0, 1.0 / lam, zero);
    const defo_d4 g = defo_d4_select(T > 0.0, T * il, zero);
    const defo_d4 t[3] = {b[0] * il, b[1] * il, b[2] * il};
    fib_store4(fm->fib + FM_FIB * 4 * (size_t)e, t, &T, &lam);
    for (int r = 0; r < 3; r++) {
        const defo_d4 gb = g * b[r];
        for (int k = 0; k < 3; k++) defo_d4_store(Pf[3 * r + k], gb * a[k]);
    }
    const defo_d4 aK = defo_d4_abs(K);
    defo_d4_store(fb, defo_d4_select(g < aK, aK, g)); /* fmax(g, |K|): neither is NaN */
}

/* C = FᵀF and the lower end of its Gershgorin discs (≤ σ_min²). */
static inline double gershgorin_low(const defo_mat3 *F, defo_mat3 *C) {
    for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++)
            C->m[i][j] = C->m[j][i] =
                F->m[0][i] * F->m[0][j] + F->m[1][i] * F->m[1][j] + F->m[2][i] * F->m[2][j];
    double l = INFINITY;
    for (int i = 0; i < 3; i++) {
        const double r = fabs(C->m[i][(i + 1) % 3]) + fabs(C->m[i][(i + 2) % 3]);
        l = C->m[i][i] - r < l ? C->m[i][i] - r : l;
    }
    return l;
}

/* The stiffness bound at a direct point: σ from C's eigenvalues (closed form). */
static inline double direct_exact_bound(const defo_material *mat, const defo_mat3 *C) {
    defo_vec3 l;
    defo_sym3_eigenvalues(C, &l);
    /* ternaries, not fmax: a libm call per use in this loop */
    const defo_vec3 s =
        defo_v3(sqrt(l.x > 0 ? l.x : 0.0), sqrt(l.y > 0 ? l.y : 0.0), sqrt(l.z > 0 ? l.z : 0.0));
    return defo_material_stiffness_bound(mat, s);
}

/* The tracked stiffness bound of one point of a forces-only evaluation
 * exactly as hyper_element's exact paths compute it (SVD-free form: σ from
 * C; otherwise from the SVD). */
static double point_exact_bound(const defo_force_model *fm, defo_index e, size_t pq,
                                const defo_mat3 *F) {
    double fb = 0.0;
    const defo_material *mat = fm_part_of(fm, e)->mat;
    if (fm->fibres) {
        const double *a = fm->fibre + 3 * pq;
        const defo_vec3 b = defo_m3_mulv(*F, defo_v3(a[0], a[1], a[2]));
        fb = defo_material_fibre_bound(mat, defo_v3_norm(b),
                                       fm->activation ? fm->activation[e] : 0.0);
    }
    defo_mat3 Pd, C;
    if (defo_material_eval_direct(mat, F, NULL, &Pd)) {
        (void)gershgorin_low(F, &C);
        return direct_exact_bound(mat, &C) + fb;
    }
    defo_mat3 U, V;
    defo_vec3 s;
    defo_svd3(F, &U, &s, &V);
    return defo_material_stiffness_bound(mat, s) + fb;
}

/* One element: forces into its slot (3 per node), energy, flags, and the
 * per-point state (U, D̂, σ, P̂, dP/dF when tangent).  With `direct` (forces
 * and energy only: no tangent, no damping) a point whose material has an
 * SVD-free form there (material/direct.c) takes it: W = −w P J⁻ᵀ, the same
 * as −w U P̂ D̂ᵀ since D̂ = J⁻¹V; M keeps F for the stress.  Where the
 * stable time is tracked the point's stiffness bound is the rough one (from
 * J and FᵀF's Gershgorin discs), or, where that has none, σ from the
 * eigenvalues of FᵀF (J > 0 there).  Without
 * with_energy such points leave ψ out (elem_energy is read only by the
 * evaluation that asks for the energy). */
FM_INLINE void hyper_element(defo_force_model *fm, const int P, const int NQ, defo_index e,
                             const double *x, int tangent, int direct, int with_energy) {
    const defo_quadrature *rule = &fm->ops->stiffness;
    const int fix = fm->fix;
    const defo_material *mat = fm_part_of(fm, e)->mat;
    double *out = fm->slot + 3 * (size_t)P * (size_t)e;
    double psi_e = 0.0, stiff = 0.0, rough = 0.0; /* exact and rough bounds */
    unsigned char fl = 0;
    /* tet10 forces with fibres: F of the four points first, then their
     * fibre terms four-wide (fibre_points4: fm_fibre's bits) */
    defo_mat3 Fq[4], Jq[4];
    double Pf[9][4], fbq[4];
    int pre = 0;
    if (NQ == 4 && fm->fibres && direct && !with_energy) {
        double B[3][4], A[3][4];
        pre = 1;
        for (int q = 0; q < 4; q++) {
            Fq[q] = fm_point_F(fm, P, e, q, x, &Jq[q]);
            pre &= defo_m3_isfinite(Fq[q]);
            const double *a = fm->fibre + 3 * ((size_t)e * 4 + (size_t)q);
            for (int r = 0; r < 3; r++) {
                B[r][q] = Fq[q].m[r][0] * a[0] + Fq[q].m[r][1] * a[1] + Fq[q].m[r][2] * a[2];
                A[r][q] = a[r];
            }
        }
        if (pre) fibre_points4(fm, e, B, A, Pf, fbq);
    }
    for (int q = 0; q < NQ; q++) {
        const size_t pq = (size_t)e * NQ + (size_t)q;
        const double *g = rule->grad + 3 * P * q;
        const defo_mat3 *F = &Fq[q], *Ji = &Jq[q];
        if (!pre) Fq[q] = fm_point_F(fm, P, e, q, x, &Jq[q]);
        if (!defo_m3_isfinite(*F)) {
            fl |= FM_BAD;
            psi_e = NAN;
            break;
        }
        const double w = fm->w[pq];
        defo_mat3 Pd;
        double psi_d = 0.0;
        if (direct && defo_material_eval_direct(mat, F, with_energy ? &psi_d : NULL, &Pd)) {
            /* P (+ the fibre stress), then W = −w P J⁻ᵀ */
            double W[9], fb = 0.0;
            if (pre) {
                for (int i = 0; i < 9; i++) Pd.m[i / 3][i % 3] += Pf[i][q];
                fb = fbq[q];
            } else if (fm->fibres) {
                psi_e += fm_fibre(fm, e, pq, F, Ji, w, &Pd, NULL, &fb, with_energy, 0);
            }
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++)
                    W[3 * r + k] = -w * (Pd.m[r][0] * Ji->m[k][0] + Pd.m[r][1] * Ji->m[k][1] +
                                         Pd.m[r][2] * Ji->m[k][2]);
            if (fm->track_stable_time) {
                /* first the rough bound (no σ); exact when it has none */
                defo_mat3 C;
                const double lo = gershgorin_low(F, &C);
                const double b = defo_material_stiffness_bound_rough(mat, defo_m3_det(*F), lo);
                if (b < INFINITY) {
                    rough = b + fb > rough ? b + fb : rough;
                } else {
                    const double be = direct_exact_bound(mat, &C) + fb;
                    stiff = be > stiff ? be : stiff;
                }
            }
            fm_scatter(P, W, g, out, q > 0);
            memcpy(fm->M + 9 * pq, F->m, 9 * sizeof(double));
            fm->direct[pq] = 1;
            psi_e += w * psi_d;
            continue;
        }
        fm->direct[pq] = 0;
        defo_mat3 U, V;
        defo_vec3 s, ph;
        defo_svd3(F, &U, &s, &V);
        defo_dpdf dp;
        const double psi = defo_material_eval(mat, s, &ph, tangent ? &dp : NULL);
        if (s.z <= 0.0) fl |= FM_INVERTED;
        if (tangent) {
            if (fix && defo_dpdf_project_psd(&dp) > 0) fl |= FM_CLAMPED;
            fm->dpdf[pq] = dp;
        }
        const defo_mat3 Dh = defo_m3_mul(*Ji, V);
        /* W = −w U P̂ D̂ᵀ */
        double W[9];
        const double p3[3] = {ph.x, ph.y, ph.z};
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) {
                double t = 0;
                for (int j = 0; j < 3; j++) t += U.m[r][j] * p3[j] * Dh.m[k][j];
                W[3 * r + k] = -w * t;
            }
        double fb = 0.0;
        if (fm->fibres) psi_e += fm_fibre(fm, e, pq, F, Ji, w, NULL, W, &fb, 1, tangent);
        /* tracked, the tangent's bound sets the stable step (the material may
         * stiffen: neo-Hookean at σ = 0.5 is ~7× its rest modulus) */
        if (fm->track_stable_time) stiff = fmax(stiff, defo_material_stiffness_bound(mat, s) + fb);
        fm_scatter(P, W, g, out, q > 0);
        memcpy(fm->R + 9 * pq, U.m, 9 * sizeof(double));
        memcpy(fm->M + 9 * pq, Dh.m, 9 * sizeof(double));
        fm->sig[3 * pq] = s.x, fm->sig[3 * pq + 1] = s.y, fm->sig[3 * pq + 2] = s.z;
        fm->phat[3 * pq] = ph.x, fm->phat[3 * pq + 1] = ph.y, fm->phat[3 * pq + 2] = ph.z;
        psi_e += w * psi;
    }
    if (!isfinite(psi_e)) fl |= FM_BAD;
    if (fl & FM_BAD)
        for (int k = 0; k < 3 * P; k++) out[k] = 0.0;
    fm->elem_energy[e] = psi_e;
    /* rough above the exact part: stable_len is only a lower bound (FM_ROUGH);
     * otherwise it is exact (the rough points' true bounds are below it) */
    if (rough > stiff) fl |= FM_ROUGH, stiff = rough;
    fm->flag[e] = fl;
    fm->stable_len[e] = fm_stable_len(fm, e, stiff);
}

/* Four tet4 elements 4b..4b+3 of an explicit force pass (forces only: no
 * tangent, damping or energy) in lockstep, a fibre term included:
 * hyper_element's
 * SVD-free path written over lanes (math/lanes.h), the same expressions in
 * the same order, so every lane's forces, F, flag and stable length equal
 * the one-element pass bit for bit.  Every lane's outputs are written;
 * returns the lanes the caller must redo with hyper_element: a non-finite
 * F, a point without the SVD-free form (inverted or near the inversion
 * threshold), a stiffness bound that needs σ. */
DEFO_LANES_TARGET static unsigned hyper_tet4_block(defo_force_model *fm, defo_index b,
                                                   const double *x) {
    const defo_index e0 = 4 * b;
    /* one material for the four (material regions: else one by one) */
    if (fm->part_of &&
        (fm->part_of[e0] != fm->part_of[e0 + 1] || fm->part_of[e0] != fm->part_of[e0 + 2] ||
         fm->part_of[e0] != fm->part_of[e0 + 3]))
        return 15u;
    const fm_part *pt = fm_part_of(fm, e0);
    const defo_index *v = fm->mesh->elems + (size_t)e0 * 4;
    /* node k of the four elements, coordinate r: X[k][r] */
    defo_d4 X[4][3];
    for (int k = 0; k < 4; k++) {
        const double *p0 = x + 3 * (size_t)v[k], *p1 = x + 3 * (size_t)v[4 + k],
                     *p2 = x + 3 * (size_t)v[8 + k], *p3 = x + 3 * (size_t)v[12 + k];
        for (int r = 0; r < 3; r++) X[k][r] = (defo_d4){p0[r], p1[r], p2[r], p3[r]};
    }
    const defo_d4u *Ji = (const defo_d4u *)(fm->jinv4 + 36 * (size_t)b);
    double Fl[9][4], Pl[9][4];
    defo_d4u *f = (defo_d4u *)Fl;
    /* H = Ds (fm_grad_sum), F = H J⁻¹ (defo_m3_mul) */
    for (int r = 0; r < 3; r++) {
        const defo_d4 h0 = X[1][r] - X[0][r], h1 = X[2][r] - X[0][r], h2 = X[3][r] - X[0][r];
        for (int k = 0; k < 3; k++) f[3 * r + k] = h0 * Ji[k] + h1 * Ji[3 + k] + h2 * Ji[6 + k];
    }
    defo_m4 finite = f[0] - f[0] == 0.0;
    for (int i = 1; i < 9; i++) finite &= f[i] - f[i] == 0.0;
    unsigned done = defo_m4_bits(finite);
    /* the fibre term first (fm_fibre's expressions in its order, lanewise;
     * the curves by defo_material_fibre_stress4, the one-point call's bits):
     * its chain through √λ², the curves and 1/λ runs beside the material's
     * call below; P gets its part after.  Lanes redone one by one rewrite
     * what they stored. */
    const defo_d4 mw = -defo_d4_load(fm->w + e0), zero = defo_d4_splat(0.0);
    defo_d4 fb = zero, gb[3] = {zero, zero, zero}, a[3] = {zero, zero, zero};
    if (fm->fibres && done) {
        const double *a0 = fm->fibre + 3 * (size_t)e0;
        defo_d4 fa[3];
        for (int r = 0; r < 3; r++) a[r] = (defo_d4){a0[r], a0[3 + r], a0[6 + r], a0[9 + r]};
        for (int r = 0; r < 3; r++)
            fa[r] = f[3 * r] * a[0] + f[3 * r + 1] * a[1] + f[3 * r + 2] * a[2];
        defo_d4 lam = fa[0] * fa[0] + fa[1] * fa[1] + fa[2] * fa[2];
        defo_d4_sqrt(&lam);
        static const double no_activation[4] = {0, 0, 0, 0};
        double la[4], Ta[4], Ka[4];
        defo_d4_store(la, lam);
        defo_material_fibre_stress4(pt->mat, la,
                                    fm->activation ? fm->activation + e0 : no_activation, Ta, Ka);
        const defo_d4 T = defo_d4_load(Ta), K = defo_d4_load(Ka);
        const defo_d4 il = defo_d4_select(lam > 0.0, 1.0 / lam, zero);
        const defo_d4 g = defo_d4_select(T > 0.0, T * il, zero);
        /* what the stress output reads (t, T, λ), as fm_fibre without
         * tangent */
        const defo_d4 t[3] = {fa[0] * il, fa[1] * il, fa[2] * il};
        fib_store4(fm->fib + FM_FIB * (size_t)e0, t, &T, &lam);
        for (int r = 0; r < 3; r++) gb[r] = g * fa[r];
        const defo_d4 aK = defo_d4_abs(K);
        fb = defo_d4_select(g < aK, aK, g); /* fmax(g, |K|): neither is NaN */
    }
    if (done) done &= defo_material_eval_direct4(pt->mat, (const double(*)[4])Fl, Pl);
    if (!done) return 15u;
    /* P (+ the fibre stress (T/λ) b aᵀ), W = −w P J⁻ᵀ; forces: its columns
     * on nodes 1..3, minus their sum on 0 */
    defo_d4u *P = (defo_d4u *)Pl;
    if (fm->fibres)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) P[3 * r + k] += gb[r] * a[k];
    defo_d4 W[9];
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            W[3 * r + k] = mw * (P[3 * r] * Ji[3 * k] + P[3 * r + 1] * Ji[3 * k + 1] +
                                 P[3 * r + 2] * Ji[3 * k + 2]);
    defo_d4 stiff = defo_d4_splat(0.0);
    if (fm->track_stable_time) {
        /* C = FᵀF and its Gershgorin discs' lower end (gershgorin_low) */
        defo_d4 C[3][3];
        for (int i = 0; i < 3; i++)
            for (int j = i; j < 3; j++)
                C[i][j] = C[j][i] = f[i] * f[j] + f[3 + i] * f[3 + j] + f[6 + i] * f[6 + j];
        defo_d4 lo = defo_d4_splat(INFINITY);
        for (int i = 0; i < 3; i++) {
            const defo_d4 r = defo_d4_abs(C[i][(i + 1) % 3]) + defo_d4_abs(C[i][(i + 2) % 3]);
            lo = defo_d4_min(C[i][i] - r, lo);
        }
        /* the rough bound at det F (defo_m3_det) and the discs' lower end */
        const defo_d4 J = f[0] * (f[4] * f[8] - f[5] * f[7]) - f[1] * (f[3] * f[8] - f[5] * f[6]) +
                          f[2] * (f[3] * f[7] - f[4] * f[6]);
        double Ja[4], La[4], Ba[4];
        defo_d4_store(Ja, J), defo_d4_store(La, lo);
        defo_material_stiffness_bound_rough4(pt->mat, Ja, La, Ba);
        const defo_d4 bound = defo_d4_load(Ba);
        done &= ~defo_m4_bits(~(bound < INFINITY)); /* σ needed: one by one */
        stiff = defo_d4_max(bound + fb, stiff);
    }
    /* the 12 force components per element (node-major), then element-major
     * through three 4×4 transposes: slot e holds them contiguously */
    defo_d4 o[12];
    for (int r = 0; r < 3; r++) {
        o[r] = -(W[3 * r] + W[3 * r + 1] + W[3 * r + 2]);
        for (int k = 0; k < 3; k++) o[3 * (k + 1) + r] = W[3 * r + k];
    }
    for (int g = 0; g < 3; g++)
        defo_d4_transpose(&o[4 * g], &o[4 * g + 1], &o[4 * g + 2], &o[4 * g + 3]);
    /* o[4g + l] holds lane l's components 4g..4g+3 */
    defo_d4u *slot = (defo_d4u *)(fm->slot + 12 * (size_t)e0);
    for (int l = 0; l < 4; l++)
        for (int g = 0; g < 3; g++) slot[3 * l + g] = o[4 * g + l];
    /* F kept for the stress (M, element-major): two transposes and one row */
    defo_d4 m0 = f[0], m1 = f[1], m2 = f[2], m3 = f[3], m4 = f[4], m5 = f[5], m6 = f[6], m7 = f[7];
    defo_d4_transpose(&m0, &m1, &m2, &m3);
    defo_d4_transpose(&m4, &m5, &m6, &m7);
    const defo_d4 lo4[4] = {m0, m1, m2, m3}, hi4[4] = {m4, m5, m6, m7};
    double *M = fm->M + 9 * (size_t)e0;
    for (int l = 0; l < 4; l++) {
        *(defo_d4u *)(M + 9 * l) = lo4[l];
        *(defo_d4u *)(M + 9 * l + 4) = hi4[l];
        M[9 * l + 8] = f[8][l];
    }

    /* stable length (fm_stable_len) */
    const defo_d4 elen = defo_d4_load(fm->elen + e0);
    const defo_d4 floor = defo_d4_max(stiff, defo_d4_splat(pt->rest_bound));
    defo_d4 root = floor / pt->stiffness_scale;
    defo_d4_sqrt(&root);
    defo_d4_store(fm->stable_len + e0, elen / root);
    defo_d4_store(fm->elem_energy + e0, defo_d4_splat(0.0));
    for (int l = 0; l < 4; l++) {
        fm->direct[e0 + l] = 1;
        fm->flag[e0 + l] = stiff[l] > 0.0 ? FM_ROUGH : 0;
    }
    return 15u & ~done;
}

/* Element e's exact stable length at x: every point as hyper_element's exact
 * paths would take it (the same decisions, the same arithmetic). */
static double exact_stable_len(const defo_force_model *fm, defo_index e, const double *x) {
    double stiff = 0.0;
    for (int q = 0; q < fm->nq; q++) {
        defo_mat3 Ji;
        const defo_mat3 F =
            fm->npe == 4 ? fm_point_F(fm, 4, e, q, x, &Ji) : fm_point_F(fm, 10, e, q, x, &Ji);
        const double b = point_exact_bound(fm, e, (size_t)e * (size_t)fm->nq + (size_t)q, &F);
        stiff = b > stiff ? b : stiff;
    }
    return fm_stable_len(fm, e, stiff);
}

/* The smallest stable length over the elements (stable_time's numerator).
 * Rough elements (FM_ROUGH: a stable length below their exact one) matter
 * only if they could be the minimum.  U, the exact length of the element
 * with the smallest rough-or-exact length, bounds the true minimum from
 * above; a rough element whose lower bound is at least U cannot be below
 * it.  The others are made exact, in element order (U shrinks as exact
 * values come in), so the minimum is the one an exact pass over every
 * element gives, bit for bit; only lengths that cannot be the minimum stay
 * rough. */
static double min_stable_len(defo_force_model *fm, const double *x, defo_index rough) {
    const defo_index ne = fm->ne;
    defo_index arg = -1;
    double best = INFINITY;
    for (defo_index e = 0; e < ne; e++)
        if (fm->stable_len[e] < best) best = fm->stable_len[e], arg = e;
    if (!rough || arg < 0) return best;
    double U = fm->stable_len[arg];
    if (fm->flag[arg] & FM_ROUGH) {
        U = fm->stable_len[arg] = exact_stable_len(fm, arg, x);
        fm->flag[arg] &= (unsigned char)~FM_ROUGH;
    }
    double t = INFINITY;
    for (defo_index e = 0; e < ne; e++) {
        if ((fm->flag[e] & FM_ROUGH) && fm->stable_len[e] < U) {
            fm->stable_len[e] = exact_stable_len(fm, e, x);
            fm->flag[e] &= (unsigned char)~FM_ROUGH;
            U = fm->stable_len[e] < U ? fm->stable_len[e] : U;
        }
        t = fm->stable_len[e] < t ? fm->stable_len[e] : t;
    }
    return t;
}

defo_status defo_fm_hyper_evaluate(defo_force_model *fm, const double *x, unsigned flags,
                                   double *force, double *energy) {
    const defo_index ne = fm->ne;
    const int tangent = (flags & DEFO_EVAL_TANGENT) != 0;
    fm->fix = fm->def.definiteness_fix && !(flags & DEFO_EVAL_EXACT_TANGENT);
    /* products and blocks read U and D̂: the SVD everywhere then */
    const int direct = !tangent && !fm->damping;
    defo_index inverted = 0, bad = 0, rough = 0, lane_elems = 0;
    const int lanes = fm->lanes && direct && !energy;
    /* one region: the element pass, then (no element bad) the gather */
    DEFO_PARALLEL_REGION_IF(
        FM_WORTH(fm, lanes ? FM_NS_HYPER_LANES4 : FM_NS_HYPER_FORCE4, FM_NS_HYPER_FORCE10)) {
        if (lanes) {
            /* four elements at a time; the last ne % 4, and the lanes a
             * block leaves, one by one */
            const defo_index nb = (ne + 3) / 4;
            DEFO_FOR_SUM(inverted, bad, rough, lane_elems)
            for (defo_index b = 0; b < nb; b++) {
                const defo_index e0 = 4 * b, n = ne - e0 < 4 ? ne - e0 : 4;
                const unsigned left = n == 4 ? hyper_tet4_block(fm, b, x) : 15u;
                for (defo_index e = e0; e < e0 + n; e++) {
                    if (left >> (e - e0) & 1)
                        hyper_element(fm, 4, 1, e, x, 0, 1, 0);
                    else
                        lane_elems++;
                    inverted += (fm->flag[e] & FM_INVERTED) != 0;
                    bad += (fm->flag[e] & FM_BAD) != 0;
                    rough += (fm->flag[e] & FM_ROUGH) != 0;
                }
            }
        } else if (fm->npe == 4) {
            DEFO_FOR_SUM(inverted, bad, rough)
            for (defo_index e = 0; e < ne; e++) {
                hyper_element(fm, 4, 1, e, x, tangent, direct, energy != NULL);
                inverted += (fm->flag[e] & FM_INVERTED) != 0;
                bad += (fm->flag[e] & FM_BAD) != 0;
                rough += (fm->flag[e] & FM_ROUGH) != 0;
            }
        } else {
            DEFO_FOR_SUM(inverted, bad, rough)
            for (defo_index e = 0; e < ne; e++) {
                hyper_element(fm, 10, 4, e, x, tangent, direct, energy != NULL);
                inverted += (fm->flag[e] & FM_INVERTED) != 0;
                bad += (fm->flag[e] & FM_BAD) != 0;
                rough += (fm->flag[e] & FM_ROUGH) != 0;
            }
        }
        if (force && !bad) defo_gather3_team(&fm->inc, fm->slot, force);
    }
    fm->inverted = inverted;
    fm->lane_elems = lane_elems;
    if (bad) return defo_fm_report_bad(fm, x);
    if (fm->track_stable_time) {
        /* the stable time at the stiffness of this evaluation */
        const double t = min_stable_len(fm, x, rough);
        fm->stable_time = ne > 0 && fm->wave_speed > 0 ? t / fm->wave_speed : INFINITY;
    }
    if (energy) *energy = defo_fm_sum_energy(fm);
    return DEFO_OK;
}

/* Σ ψ_e over the listed elements at x, in list order, touching no state:
 * the same per-point arithmetic as hyper_element (SVD, the material's ψ). */
defo_status defo_fm_hyper_energy_of(const defo_force_model *fm, const double *x,
                                    const defo_index *elems, defo_index count, double *energy) {
    const int P = fm->npe, NQ = fm->nq;
    double total = 0.0;
    for (defo_index k = 0; k < count; k++) {
        const defo_index e = elems[k];
        double psi_e = 0.0;
        for (int q = 0; q < NQ; q++) {
            const size_t pq = (size_t)e * NQ + (size_t)q;
            defo_mat3 Ji, U, V;
            const defo_mat3 F =
                P == 4 ? fm_point_F(fm, 4, e, q, x, &Ji) : fm_point_F(fm, 10, e, q, x, &Ji);
            if (!defo_m3_isfinite(F))
                return defo_error(DEFO_ERR_NUMERICAL, "element %ld: non-finite deformation",
                                  (long)e);
            defo_vec3 sg, ph;
            defo_svd3(&F, &U, &sg, &V);
            const defo_material *mat = fm_part_of(fm, e)->mat;
            psi_e += fm->w[pq] * defo_material_eval(mat, sg, &ph, NULL);
            if (fm->fibres) {
                const double *a = fm->fibre + 3 * pq;
                const double lam = defo_v3_norm(defo_m3_mulv(F, defo_v3(a[0], a[1], a[2])));
                psi_e +=
                    fm->w[pq] * defo_material_fibre_eval(
                                    mat, lam, fm->activation ? fm->activation[e] : 0.0, NULL, NULL);
            }
        }
        total += psi_e;
    }
    if (!isfinite(total))
        return defo_error(DEFO_ERR_NUMERICAL, "non-finite energy of %ld elements", (long)count);
    *energy = total;
    return DEFO_OK;
}

/* ---------------------------------------------------------- products */
/* mode 0: y = K d (tangent); mode 1: y = D v (damping) */
FM_INLINE void hyper_apply_element(defo_force_model *fm, const int P, const int NQ, defo_index e,
                                   const double *d, int mode) {
    const defo_index *v = fm->mesh->elems + (size_t)e * P;
    const defo_quadrature *rule = &fm->ops->stiffness;
    double *out = fm->slot + 3 * (size_t)P * (size_t)e;
    double dH[9];
    if (NQ == 1) fm_grad_sum(P, d, v, rule->grad, dH);
    for (int q = 0; q < NQ; q++) {
        const size_t pq = (size_t)e * NQ + (size_t)q;
        const double *g = rule->grad + 3 * P * q;
        if (NQ > 1) fm_grad_sum(P, d, v, g, dH);
        defo_mat3 U, Dh, H;
        load9(&U.m[0][0], fm->R + 9 * pq);
        load9(&Dh.m[0][0], fm->M + 9 * pq);
        load9(&H.m[0][0], dH);
        const defo_mat3 Fh = defo_m3_tmul(U, defo_m3_mul(H, Dh)); /* Uᵀ δH D̂ */
        defo_mat3 Ph;
        if (mode == 0) {
            Ph = defo_dpdf_apply(&fm->dpdf[pq], &Fh);
        } else {
            const fm_part *pt = fm_part_of(fm, e);
            const double tr = pt->lambda_d * (Fh.m[0][0] + Fh.m[1][1] + Fh.m[2][2]);
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 3; j++) Ph.m[i][j] = pt->mu_d * (Fh.m[i][j] + Fh.m[j][i]);
            for (int i = 0; i < 3; i++) Ph.m[i][i] += tr;
        }
        /* W = w U δP̂ D̂ᵀ */
        const defo_mat3 UP = defo_m3_mul(U, Ph);
        const defo_mat3 Wm = defo_m3_scale(defo_m3_mult(UP, Dh), fm->w[pq]);
        double W[9];
        memcpy(W, Wm.m, sizeof W);
        if (mode == 0 && fm->fibres) {
            /* + w K_f (δH ã) ãᵀ */
            const double *f = fm->fib + FM_FIB * pq, *ar = f + FM_FIB_A;
            double u[3];
            for (int r = 0; r < 3; r++)
                u[r] = dH[3 * r] * ar[0] + dH[3 * r + 1] * ar[1] + dH[3 * r + 2] * ar[2];
            const double kp = f[FM_FIB_KP],
                         tv = f[FM_FIB_DK] * (f[0] * u[0] + f[1] * u[1] + f[2] * u[2]);
            for (int r = 0; r < 3; r++) {
                const double kv = fm->w[pq] * (kp * u[r] + tv * f[r]);
                for (int k = 0; k < 3; k++) W[3 * r + k] += kv * ar[k];
            }
        }
        fm_scatter(P, W, g, out, q > 0);
    }
}

static void hyper_apply(defo_force_model *fm, const double *d, double *y, int mode) {
    const defo_index ne = fm->ne;
    DEFO_PARALLEL_REGION_IF(FM_WORTH(fm, FM_NS_APPLY4, FM_NS_APPLY10)) {
        if (fm->npe == 4) {
            DEFO_FOR
            for (defo_index e = 0; e < ne; e++) hyper_apply_element(fm, 4, 1, e, d, mode);
        } else {
            DEFO_FOR
            for (defo_index e = 0; e < ne; e++) hyper_apply_element(fm, 10, 4, e, d, mode);
        }
        defo_gather3_team(&fm->inc, fm->slot, y);
    }
}

void defo_fm_hyper_tangent_apply(defo_force_model *fm, const double *d, double *y) {
    hyper_apply(fm, d, y, 0);
}

void defo_fm_hyper_damping_apply(defo_force_model *fm, const double *v, double *y) {
    hyper_apply(fm, v, y, 1);
}

/* ------------------------------------------------------------- blocks */
/* Tangent block (a, b) at one point: w U K̂ Uᵀ with d_a = D̂ᵀ g_a (top of the
 * file).  For δF̂ = e_k d_bᵀ only row k is nonzero, so with the pair p = (i, j),
 * i < j, of blocks B_p: S_ij = B_p[0][0], S_ji = B_p[1][1], T_ij = B_p[0][1],
 * T_ji = B_p[1][0],
 *   K̂[a][a] = A_aa dm_a dn_a + Σ_{b≠a} S_ab dm_b dn_b,
 *   K̂[a][k] = A_ak dm_a dn_k + T_ak dn_a dm_k (k ≠ a). */
FM_INLINE void hyper_block(const defo_force_model *fm, size_t pq, const double dm[3],
                           const double dn[3], double *s) {
    const double *U = fm->R + 9 * pq;
    const defo_dpdf *dp = &fm->dpdf[pq];
    const double S01 = dp->B[0][0][0], S10 = dp->B[0][1][1], T01 = dp->B[0][0][1],
                 T10 = dp->B[0][1][0];
    const double S02 = dp->B[1][0][0], S20 = dp->B[1][1][1], T02 = dp->B[1][0][1],
                 T20 = dp->B[1][1][0];
    const double S12 = dp->B[2][0][0], S21 = dp->B[2][1][1], T12 = dp->B[2][0][1],
                 T21 = dp->B[2][1][0];
    double Kh[3][3];
    Kh[0][0] = dp->A[0][0] * dm[0] * dn[0] + S01 * dm[1] * dn[1] + S02 * dm[2] * dn[2];
    Kh[1][1] = dp->A[1][1] * dm[1] * dn[1] + S10 * dm[0] * dn[0] + S12 * dm[2] * dn[2];
    Kh[2][2] = dp->A[2][2] * dm[2] * dn[2] + S20 * dm[0] * dn[0] + S21 * dm[1] * dn[1];
    Kh[0][1] = dp->A[0][1] * dm[0] * dn[1] + T01 * dn[0] * dm[1];
    Kh[1][0] = dp->A[1][0] * dm[1] * dn[0] + T10 * dn[1] * dm[0];
    Kh[0][2] = dp->A[0][2] * dm[0] * dn[2] + T02 * dn[0] * dm[2];
    Kh[2][0] = dp->A[2][0] * dm[2] * dn[0] + T20 * dn[2] * dm[0];
    Kh[1][2] = dp->A[1][2] * dm[1] * dn[2] + T12 * dn[1] * dm[2];
    Kh[2][1] = dp->A[2][1] * dm[2] * dn[1] + T21 * dn[2] * dm[1];
    const double w = fm->w[pq];
    double W[3][3];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            W[i][k] = U[3 * i] * Kh[0][k] + U[3 * i + 1] * Kh[1][k] + U[3 * i + 2] * Kh[2][k];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            s[3 * i + j] +=
                w * (W[i][0] * U[3 * j] + W[i][1] * U[3 * j + 1] + W[i][2] * U[3 * j + 2]);
}

/* d = D̂ᵀ g_a (tet4: row a−1 of D̂, or minus their sum for a = 0), read from
 * D̂ in place (a transposed copy on the stack stalls the loads that follow) */
FM_INLINE void hyper_dvec(const int P, const double *Dh, const double *g, int a, double d[3]) {
    if (P == 4) {
        if (a == 0)
            for (int r = 0; r < 3; r++) d[r] = -(Dh[r] + Dh[3 + r] + Dh[6 + r]);
        else
            for (int r = 0; r < 3; r++) d[r] = Dh[3 * (a - 1) + r];
        return;
    }
    for (int r = 0; r < 3; r++)
        d[r] = Dh[r] * g[3 * a] + Dh[3 + r] * g[3 * a + 1] + Dh[6 + r] * g[3 * a + 2];
}

/* ã·g_a (tet4: ã_{a−1}, or minus their sum for a = 0: the reference
 * gradients' zeros and ones, as hyper_dvec) */
FM_INLINE double fib_dot(const int P, const double *at, const double *g, int a) {
    if (P == 4) return a == 0 ? -(at[0] + at[1] + at[2]) : at[a - 1];
    return at[0] * g[3 * a] + at[1] * g[3 * a + 1] + at[2] * g[3 * a + 2];
}

/* c_a = U D̂ᵀ g_a: the damping closed form's vectors */
FM_INLINE void hyper_cvec(const int P, const double *U, const double *Dh, const double *g, int a,
                          double c[3]) {
    double d[3];
    hyper_dvec(P, Dh, g, a, d);
    for (int r = 0; r < 3; r++) c[r] = U[3 * r] * d[0] + U[3 * r + 1] * d[1] + U[3 * r + 2] * d[2];
}

FM_INLINE void hyper_pair(const defo_force_model *fm, const int P, const int NQ, int64_t e, int i,
                          int j, double s[9], int mode) {
    const defo_quadrature *rule = &fm->ops->stiffness;
    for (int q = 0; q < NQ; q++) {
        const size_t pq = (size_t)e * NQ + (size_t)q;
        const double *g = rule->grad + 3 * P * q, *Dh = fm->M + 9 * pq;
        if (mode == 0) {
            double dm[3], dn[3];
            hyper_dvec(P, Dh, g, i, dm);
            hyper_dvec(P, Dh, g, j, dn);
            hyper_block(fm, pq, dm, dn, s);
            if (fm->fibres) {
                /* + w (ã·g_i)(ã·g_j) K_f */
                const double *f = fm->fib + FM_FIB * pq, *ar = f + FM_FIB_A;
                const double c = fm->w[pq] * fib_dot(P, ar, g, i) * fib_dot(P, ar, g, j);
                const double kp = c * f[FM_FIB_KP], kt = c * f[FM_FIB_DK];
                for (int r = 0; r < 3; r++) {
                    for (int k = 0; k < 3; k++) s[3 * r + k] += kt * f[r] * f[k];
                    s[4 * r] += kp;
                }
            }
        } else {
            double ci[3], cj[3];
            hyper_cvec(P, fm->R + 9 * pq, Dh, g, i, ci);
            hyper_cvec(P, fm->R + 9 * pq, Dh, g, j, cj);
            const double w = fm->w[pq];
            const fm_part *pt = fm_part_of(fm, (defo_index)e);
            fm_iso_block(ci, cj, w * pt->lambda_d, w * pt->mu_d, s);
        }
    }
}

FM_INLINE void tangent4(const defo_force_model *fm, int64_t e, int i, int j, double s[9]) {
    hyper_pair(fm, 4, 1, e, i, j, s, 0);
}
FM_INLINE void tangent10(const defo_force_model *fm, int64_t e, int i, int j, double s[9]) {
    hyper_pair(fm, 10, 4, e, i, j, s, 0);
}
FM_INLINE void damping4(const defo_force_model *fm, int64_t e, int i, int j, double s[9]) {
    hyper_pair(fm, 4, 1, e, i, j, s, 1);
}
FM_INLINE void damping10(const defo_force_model *fm, int64_t e, int i, int j, double s[9]) {
    hyper_pair(fm, 10, 4, e, i, j, s, 1);
}
static void hyper_diag_blocks(defo_force_model *fm, double *blocks, int mode) {
    const defo_index ne = fm->ne;
    const int P = fm->npe;
    DEFO_PARALLEL_REGION_IF(FM_WORTH(fm, FM_NS_HYPER_DIAG4, FM_NS_HYPER_DIAG10)) {
        DEFO_FOR
        for (defo_index e = 0; e < ne; e++) {
            double *out = fm->slot + 9 * (size_t)P * (size_t)e;
            for (int a = 0; a < P; a++) {
                double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
                if (P == 4)
                    hyper_pair(fm, 4, 1, e, a, a, s, mode);
                else
                    hyper_pair(fm, 10, 4, e, a, a, s, mode);
                memcpy(out + 9 * a, s, sizeof s);
            }
        }
        defo_fm_gather9_team(fm, fm->slot, blocks);
    }
}

void defo_fm_hyper_tangent_diagonal(defo_force_model *fm, double *blocks) {
    hyper_diag_blocks(fm, blocks, 0);
}

void defo_fm_hyper_damping_diagonal(defo_force_model *fm, double *blocks) {
    hyper_diag_blocks(fm, blocks, 1);
}

/* A = k K + c D (D only when the material damps). */
void defo_fm_hyper_assemble(defo_force_model *fm, double k, double c) {
    const int P = fm->npe;
    const int damp = c != 0.0 && fm->damping;
    const int worth = FM_WORTH(fm, FM_NS_HYPER_ASSEMBLE4, FM_NS_HYPER_ASSEMBLE10);
    /* constant kernels in each call, so they inline into the block loop */
    if (P == 4 && damp)
        FM_ASSEMBLE_BLOCKS(fm, 4, tangent4, k, damping4, c, worth);
    else if (P == 4)
        FM_ASSEMBLE_BLOCKS(fm, 4, tangent4, k, NULL, 0.0, worth);
    else if (damp)
        FM_ASSEMBLE_BLOCKS(fm, 10, tangent10, k, damping10, c, worth);
    else
        FM_ASSEMBLE_BLOCKS(fm, 10, tangent10, k, NULL, 0.0, worth);
}
