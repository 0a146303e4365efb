/*
 * force/force_internal.h — the force model's layout and the pieces its two
 * kernels share: per-point arithmetic written once for any nodes per element
 * P (instantiated with the constants 4 and 10 so loops unroll), the one
 * isotropic block closed form, the symmetric block assembly loop and the
 * 9-wide gather.  Shared by the force module's files only.
 */
#ifndef DEFO_FORCE_INTERNAL_H
#define DEFO_FORCE_INTERNAL_H

#include "defo/force_model.h"
#include "defo/math.h"

#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <string.h>

#define FM_INLINE static inline __attribute__((always_inline))

/* Work per element of each pass, one thread, in ns (bench_loops; tet4 and
 * tet10, rounded): a pass opens a parallel region — one for its element
 * loop and its node gather together — when ne · cost reaches
 * DEFO_PARALLEL_WORK_NS (base/parallel.h).  Forces carry an SVD (invertible)
 * or a polar decomposition (corotated) per point; products and diagonal
 * blocks a few dozen flops per node pair. */
#define FM_NS_HYPER_FORCE4     200
#define FM_NS_HYPER_LANES4     35 /* the four-wide explicit pass, tracked (20 K-tet bunny) */
#define FM_NS_HYPER_FORCE10    900
#define FM_NS_COROT_FORCE4     130
#define FM_NS_COROT_FORCE10    730
#define FM_NS_APPLY4           21
#define FM_NS_APPLY10          195
#define FM_NS_HYPER_DIAG4      69
#define FM_NS_HYPER_DIAG10     610
#define FM_NS_COROT_DIAG4      27
#define FM_NS_COROT_DIAG10     254
#define FM_NS_HYPER_ASSEMBLE4  220
#define FM_NS_HYPER_ASSEMBLE10 4000
#define FM_NS_COROT_ASSEMBLE4  85
#define FM_NS_COROT_ASSEMBLE10 2000
/* 1 when a pass over the model's elements is worth a region. */
#define FM_WORTH(fm, ns4, ns10) DEFO_PARALLEL_WORTH((fm)->ne, (fm)->npe == 4 ? (ns4) : (ns10))

/* FM_ROUGH: stable_len holds only a lower bound (kernel_hyperelastic.c) */
enum { FM_INVERTED = 1, FM_CLAMPED = 2, FM_BAD = 4, FM_ROUGH = 8 };

/* One material of the model and what the kernels read of it: a body's
 * elements may have their own (material regions, defo_force_model_set_
 * materials); part 0 is the material the model was created with. */
typedef struct fm_part {
    const defo_material *mat; /* the material the kernel evaluates */
    defo_material *own;       /* TSIF05 §9 CLAMP copy (constant_extrapolation) */
    double mu, lambda;        /* Lamé */
    double mu_d, lambda_d;    /* damping moduli (τμ, τλ) */
    double wave_speed;        /* rest dilatational speed sqrt((λ+2μ)/ρ) */
    double stiffness_scale;   /* λ + 2μ */
    double rest_bound; /* the tangent bound at rest (3λ + 2μ): stiffness floor of the stable time */
} fm_part;

struct defo_force_model {
    defo_force_model_def def;
    const defo_mesh *mesh;
    const defo_element_rest *rest;
    const defo_element_ops *ops;
    fm_part *part; /* num_parts materials */
    int num_parts;
    const int32_t *part_of; /* per element (borrowed); NULL: every element part 0 */
    int npe, nq;
    defo_index n, ne;
    int damping; /* some part damps */
    /* the definiteness fix of the current evaluation: def.definiteness_fix
     * unless it asked for the exact tangent (DEFO_EVAL_EXACT_TANGENT) */
    int fix;
    double wave_time;
    /* part 0's wave speed: stable times are lengths over it (the other
     * parts' speeds are folded into their elements' lengths, elen_own) */
    double wave_speed;
    double stable_time;    /* the wave time at the last evaluation's stiffness */
    int track_stable_time; /* evaluations bound the stiffness (stable_time) */
    /* per element at the last evaluation (stable_time is their minimum over
     * the wave speed): the eigenvalue length over √r, r the tangent bound
     * (at least the rest one) over λ + 2μ (kernel_hyperelastic.c,
     * fm_stable_len) */
    double *stable_len;
    const double *elen;     /* per element: eigenvalue length (defo_element_rest_eigen_length) */
    const double *jinv, *w; /* rest data per point */
    defo_incidence inc;     /* node → slot (slot = e·P + a) */
    double *slot;           /* 9·P per element: forces (3) or blocks (9) per node */
    double *elem_energy;    /* per element */
    unsigned char *flag;    /* per element: FM_* of the last evaluation */
    /* per point (e·nq + q) */
    double *R;    /* 9: INVERTIBLE U, COROTATED R */
    double *M;    /* 9: INVERTIBLE D̂ = J⁻¹V, COROTATED R J⁻ᵀ */
    double *sig;  /* 3: INVERTIBLE σ */
    double *phat; /* 3: INVERTIBLE P̂ */
    /* INVERTIBLE: 1 where the last evaluation took the SVD-free form
     * (defo_material_eval_direct); M then holds F there (R nothing) */
    unsigned char *direct;
    /* tet4 INVERTIBLE neo-Hookean on a CPU with 256-bit lanes (math/lanes.h): J⁻¹ four
     * elements at a time (entry i of element 4b + l at 36 b + 4 i + l) for
     * the four-wide explicit pass (kernel_hyperelastic.c); NULL otherwise */
    double *jinv4;
    int lanes;             /* 1: that pass is taken (tests switch it off to compare) */
    defo_index lane_elems; /* elements it finished at the last evaluation */
    defo_dpdf *dpdf;       /* INVERTIBLE tangent blocks */
    /* COROTATED lazy rotations */
    double *F_last; /* 9 per point, lazy_tolerance > 0 */
    int32_t *age;   /* per point */
    int all_stale;  /* the next update recomputes every rotation */
    /* COROTATED assembly k K' + c D: the coefficients of the moduli, one
     * block pass for both (kernel_corotated.c) */
    double asm_k, asm_c;
    /* COROTATED tet10 assembly: the rotated shape gradients c_a = M ∇ξN_a
     * per element, node and point (120 per element: c_a[r] at point q at
     * 120 e + 12 a + 4 r + q), made once per assembly instead of once per
     * block and source (kernel_corotated.c); NULL for other models */
    double *cvec;
    int corot_plain;     /* 1: that assembly's build without AVX2 on any CPU (tests compare) */
    uint64_t rot_serial; /* evaluations that recomputed a rotation (kernel_corotated.c) */
    double max_jinv;     /* max |J⁻¹ entry|: bounds |F| by |x| */
    /* ITF04 §6.1 fibre term (material with fibres, INVERTIBLE): the unit
     * rest directions a per point (the rest data's), the activation per
     * element (borrowed; NULL: 0) and, per point at the last evaluation,
     * FM_FIB values (fm_fibre in kernel_hyperelastic.c) */
    int fibres;
    const double *fibre;
    const double *activation;
    double *fib;
    /* Plasticity (defo_force_model_set_plastic): F_p⁻¹ per point (borrowed,
     * 9 each) folded into the rest data, so the kernels evaluate the elastic
     * part F_e = F F_p⁻¹ (ITF04 §6.3) with no work of their own: jinv points
     * at jinv_plastic = J⁻¹ F_p⁻¹ and elen at elen_plastic, the eigenvalue
     * length times the smallest singular value of F_p over the element's
     * points (its shape gradients F_p⁻ᵀ ∇N are at most ‖F_p⁻¹‖ longer) and
     * √ of the element's density over the material's (density_scale, after
     * annealing: ω ∝ 1/√ρ) and part 0's wave speed over the element's
     * material's.  The rest data's own arrays stay in jinv_rest and
     * elen_rest. */
    const double *fp_inv, *density_scale;
    const double *jinv_rest, *elen_rest;
    double *jinv_plastic, *elen_own;
    defo_bcsr *A; /* the model's matrix (built by the first assemble) */
    defo_index inverted;
    /* tri3 (shells and cloth, ITF04 §8: kernel_shell.c); NULL for tets.
     * Then npe is 6, the stencil of a triangle and its three neighbours'
     * opposite corners, and slots, incidence and the matrix pattern are the
     * stencils'. */
    struct fm_shell *shell;
    /* a process's part of a distributed evaluation (defo_force_model_set_share) */
    int shared;
    defo_force_share share;
    /* a completion that failed in a call without a status: the next
     * evaluation reports it */
    defo_status share_status;
};

/* The material part of element e. */
static inline const fm_part *fm_part_of(const defo_force_model *fm, defo_index e) {
    return &fm->part[fm->part_of ? fm->part_of[e] : 0];
}

/* Rotations kept from one evaluation to the next (MTPS08 §4.4 lazy
 * updates): COROTATED, not linear, not recomputed at every update — with
 * rotation_interval 1 the kernel recomputes every rotation (its `all`) and a
 * lazy_tolerance changes nothing. */
static inline int defo_fm_lazy(const defo_force_model_def *d) {
    return d->formulation == DEFO_FORMULATION_COROTATED && !d->linear && d->rotation_interval != 1;
}

/* Per point of a fibre model (fm->fib): t = F a/λ (3), T and λ (the stress
 * output's, contiguous: the four-wide passes store t and T as one vector),
 * ã = J⁻¹ a (3) and the tangent's K_f = kp I + dk t tᵀ as kp = T/λ and
 * dk = K − T/λ (T/λ and K projected under definiteness_fix); ã, kp and dk
 * only from a tangent evaluation (products and blocks read them).  Ten
 * values: the force passes write five of every record, so a longer record
 * costs them memory traffic. */
enum { FM_FIB = 10, FM_FIB_T = 3, FM_FIB_LAM = 4, FM_FIB_A = 5, FM_FIB_KP = 8, FM_FIB_DK = 9 };

/* ------------------------------------------------------------- kernels */
defo_status defo_fm_hyper_evaluate(defo_force_model *fm, const double *x, unsigned flags,
                                   double *force, double *energy);
defo_status defo_fm_hyper_energy_of(const defo_force_model *fm, const double *x,
                                    const defo_index *elems, defo_index count, double *energy);
void defo_fm_hyper_tangent_apply(defo_force_model *fm, const double *d, double *y);
void defo_fm_hyper_tangent_diagonal(defo_force_model *fm, double *blocks);
void defo_fm_hyper_assemble(defo_force_model *fm, double k, double c);
void defo_fm_hyper_damping_apply(defo_force_model *fm, const double *v, double *y);
void defo_fm_hyper_damping_diagonal(defo_force_model *fm, double *blocks);

defo_status defo_fm_corot_evaluate(defo_force_model *fm, const double *x, unsigned flags,
                                   double *force, double *energy);
/* mode 0: the stiffness K' (moduli μ, λ); 1: the damping D (μ_d, λ_d),
 * = τ K' per material */
void defo_fm_corot_apply(defo_force_model *fm, const double *d, double *y, int mode);
void defo_fm_corot_diagonal(defo_force_model *fm, double *blocks, int mode);
void defo_fm_corot_assemble(defo_force_model *fm, double k, double c);
/* COROTATED: M = R J⁻ᵀ again at the listed points (the plastic part in J⁻¹
 * changed; the kept rotations stay). */
void defo_fm_corot_plastic_changed(defo_force_model *fm, const unsigned char *changed);

struct fm_shell;
defo_status defo_fm_shell_create(defo_force_model *fm);
defo_status defo_fm_shell_stable_time(defo_force_model *fm);
/* Material regions: the parts' constants, bending forms and bound again. */
defo_status defo_fm_shell_set_parts(defo_force_model *fm);
void defo_fm_shell_destroy(struct fm_shell *S);
/* The stencils (6 per triangle) for the incidence and the matrix pattern. */
const defo_index *defo_fm_shell_stencil(const defo_force_model *fm);
defo_status defo_fm_shell_evaluate(defo_force_model *fm, const double *x, unsigned flags,
                                   double *force, double *energy);
defo_status defo_fm_shell_energy_of(const defo_force_model *fm, const double *x,
                                    const defo_index *elems, defo_index count, double *energy);
void defo_fm_shell_tangent_apply(defo_force_model *fm, const double *d, double *y);
void defo_fm_shell_damping_apply(defo_force_model *fm, const double *v, double *y);
void defo_fm_shell_tangent_diagonal(defo_force_model *fm, double *blocks);
void defo_fm_shell_damping_diagonal(defo_force_model *fm, double *blocks);
void defo_fm_shell_assemble(defo_force_model *fm, double k, double c);
defo_index defo_fm_shell_count_inverted_at(const defo_force_model *fm, const double *x);
double defo_fm_shell_stress(const defo_force_model *fm, defo_index t, double sigma[9],
                            double pr[3]);
size_t defo_fm_shell_bytes(const defo_force_model *fm);
size_t defo_fm_shell_history_bytes(const defo_force_model *fm);
void defo_fm_shell_save_history(const defo_force_model *fm, void *out);
defo_status defo_fm_shell_restore_history(defo_force_model *fm, const void *in);
void defo_fm_shell_plastic_changed(defo_force_model *fm);
void defo_fm_shell_deformation(const defo_force_model *fm, const double *x, int elastic, double *F);

/* --------------------------------------------------- per-point arithmetic */
/* H = Σ_a x_a ∇ξN_aᵀ (row-major 3×3) over the P nodes v of an element, g the
 * ξ-gradients at the point (3 per node).  tet4: the edge matrix Ds. */
FM_INLINE void fm_grad_sum(const int P, const double *x, const defo_index *v, const double *g,
                           double H[9]) {
    if (P == 4) {
        const double *x0 = x + 3 * (size_t)v[0];
        for (int k = 0; k < 3; k++) {
            const double *xk = x + 3 * (size_t)v[k + 1];
            for (int r = 0; r < 3; r++) H[3 * r + k] = xk[r] - x0[r];
        }
        return;
    }
    for (int i = 0; i < 9; i++) H[i] = 0.0;
    for (int a = 0; a < P; a++) {
        const double *p = x + 3 * (size_t)v[a];
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) H[3 * r + k] += p[r] * g[3 * a + k];
    }
}

/* out[a] (+)= W ∇ξN_a for every node, W row-major 3×3.  tet4: columns of W
 * on nodes 1..3 and minus their sum on node 0 (forces sum to zero exactly). */
FM_INLINE void fm_scatter(const int P, const double W[9], const double *g, double *out, int add) {
    if (P == 4) {
        double f0[3];
        for (int r = 0; r < 3; r++) {
            f0[r] = -(W[3 * r] + W[3 * r + 1] + W[3 * r + 2]);
            for (int k = 0; k < 3; k++) {
                if (add)
                    out[3 * (k + 1) + r] += W[3 * r + k];
                else
                    out[3 * (k + 1) + r] = W[3 * r + k];
            }
            if (add)
                out[r] += f0[r];
            else
                out[r] = f0[r];
        }
        return;
    }
    for (int a = 0; a < P; a++)
        for (int r = 0; r < 3; r++) {
            double s =
                W[3 * r] * g[3 * a] + W[3 * r + 1] * g[3 * a + 1] + W[3 * r + 2] * g[3 * a + 2];
            if (add)
                out[3 * a + r] += s;
            else
                out[3 * a + r] = s;
        }
}

/* F = H J⁻¹ at point q of element e (P nodes) at positions x, J⁻¹ with the
 * point's plastic part when the model has one (F_e = F F_p⁻¹, ITF04 §6.3);
 * *Ji gets it. */
FM_INLINE defo_mat3 fm_point_F(const defo_force_model *fm, const int P, defo_index e, int q,
                               const double *x, defo_mat3 *Ji) {
    const size_t pq = (size_t)e * (size_t)fm->nq + (size_t)q;
    double h[9];
    fm_grad_sum(P, x, fm->mesh->elems + (size_t)e * P, fm->ops->stiffness.grad + 3 * P * q, h);
    defo_mat3 H;
    memcpy(H.m, h, sizeof h);
    memcpy(Ji->m, fm->jinv + 9 * pq, sizeof Ji->m);
    return defo_m3_mul(H, *Ji);
}

/* c = M ∇ξN_a (tet4: column a−1 of M, or minus their sum for a = 0). */
FM_INLINE void fm_node_vector(const int P, const double M[9], const double *g, int a, double c[3]) {
    if (P == 4) {
        if (a == 0)
            for (int r = 0; r < 3; r++) c[r] = -(M[3 * r] + M[3 * r + 1] + M[3 * r + 2]);
        else
            for (int r = 0; r < 3; r++) c[r] = M[3 * r + a - 1];
        return;
    }
    for (int r = 0; r < 3; r++)
        c[r] = M[3 * r] * g[3 * a] + M[3 * r + 1] * g[3 * a + 1] + M[3 * r + 2] * g[3 * a + 2];
}

/* s += w (λ c_i c_jᵀ + μ c_j c_iᵀ + μ (c_i·c_j) I): the isotropic block
 * (row-major) — corotated stiffness and damping, invertible damping. */
FM_INLINE void fm_iso_block(const double ci[3], const double cj[3], double la, double m,
                            double s[9]) {
    const double g = m * (ci[0] * cj[0] + ci[1] * cj[1] + ci[2] * cj[2]);
    for (int r = 0; r < 3; r++) {
        const double ai = la * ci[r], mj = m * cj[r];
        for (int q = 0; q < 3; q++) s[3 * r + q] += ai * cj[q] + mj * ci[q];
        s[4 * r] += g;
    }
}

/* Slot s = e·P² + i·P + j of the bcsr assembly map. */
FM_INLINE void fm_slot(const int P, int64_t slot, int64_t *e, int *i, int *j) {
    /* defo_bcsr_slot's decoding with P a compile-time constant here */
    const int64_t pp = (int64_t)P * P;
    *e = slot / pp;
    const int r = (int)(slot - *e * pp);
    *i = r / P;
    *j = r - *i * P;
}

/* Sum every block on and above the diagonal from its sources in slot order
 * with kernel(fm, e, i, j, s) adding element e's block (i, j) to s; the
 * blocks below are transposes (the element blocks are symmetric pairs) and
 * diagonal blocks are symmetrised: exactly symmetric, deterministic, parallel
 * over block rows.  A = k1·Σ kernel1 + k2·Σ kernel2 (kernel2 may be NULL). */
typedef void (*fm_block_kernel)(const defo_force_model *fm, int64_t e, int i, int j, double s[9]);
FM_INLINE void fm_assemble_row(const defo_force_model *fm, const defo_bcsr_pattern *A, double *val,
                               const int P, fm_block_kernel kernel1, double k1,
                               fm_block_kernel kernel2, double k2, defo_index I) {
    for (int64_t b = A->diag[I]; b < A->row_offset[I + 1]; b++) {
        double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, t[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t k = A->src_offset[b]; k < A->src_offset[b + 1]; k++) {
            int64_t e;
            int i, j;
            fm_slot(P, A->src[k], &e, &i, &j);
            kernel1(fm, e, i, j, s);
            if (kernel2) kernel2(fm, e, i, j, t);
        }
        for (int r = 0; r < 9; r++) s[r] = k1 * s[r] + (kernel2 ? k2 * t[r] : 0.0);
        double *v = val + 9 * b;
        if (b == A->diag[I]) {
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 3; q++) v[3 * r + q] = 0.5 * (s[3 * r + q] + s[3 * q + r]);
            continue;
        }
        double *tr = val + 9 * A->transpose[b];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++) v[3 * r + q] = tr[3 * q + r] = s[3 * r + q];
    }
}
/* A macro, not a function: the kernels must be constants inside the
 * outlined parallel loop body so they inline into the block loop (through a
 * function taking them as arguments they became indirect calls there, and
 * the tet4 corotated assembly took 1.8x as long). */
#define FM_ASSEMBLE_BLOCKS(fm, P, kernel1, k1, kernel2, k2, worth)                                 \
    do {                                                                                           \
        const defo_bcsr_pattern *fm_A_ = defo_bcsr_get_pattern((fm)->A);                           \
        double *fm_val_ = defo_bcsr_values((fm)->A);                                               \
        const defo_index fm_nr_ = fm_A_->num_rows;                                                 \
        (void)(worth);                                                                             \
        DEFO_PARALLEL_FOR_IF(worth)                                                                \
        for (defo_index fm_I_ = 0; fm_I_ < fm_nr_; fm_I_++)                                        \
            fm_assemble_row(fm, fm_A_, fm_val_, P, kernel1, k1, kernel2, k2, fm_I_);               \
    } while (0)

/* out (9 per node) = Σ over the slots of each node of slot9 (9 per slot), in
 * increasing slot order; shared by the team inside a parallel region
 * (DEFO_FOR: every thread calls it), on the calling thread outside. */
void defo_fm_gather9_team(const defo_force_model *fm, const double *slot9, double *out);
/* Name the first element flagged FM_BAD (a non-finite position or stress). */
defo_status defo_fm_report_bad(const defo_force_model *fm, const double *x);
/* stable_time from the per-element stiffness ratios of the last evaluation. */
/* Σ over elements of elem_energy, fixed grouping (any thread count). */
double defo_fm_sum_energy(const defo_force_model *fm);

#endif
