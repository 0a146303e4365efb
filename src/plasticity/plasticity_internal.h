/*
 * plasticity/plasticity_internal.h — the models' ops table and the pieces
 * they share: symmetric tensors as 6 numbers, functions of them through the
 * eigendecomposition (exp, log), the trial elastic strain from F_e, and the
 * limit surface.  Shared by the plasticity module's files only.
 *
 * Adding a model: one file with its ops row (the radius of the elastic
 * region a cheap bound can clear, the return map in two halves around its
 * flow (plast_trial), its parameter checks) and one line in
 * defo_plast_ops_of (plasticity.c).  A model's state per point begins with L_p
 * (6 numbers, plast_sym below); the rest is its own (von_mises: κ, ᾱ).
 */
#ifndef DEFO_PLASTICITY_INTERNAL_H
#define DEFO_PLASTICITY_INTERNAL_H

#include "defo/math.h"
#include "defo/plasticity.h"

#include "base/base.h"

#include <math.h>
#include <string.h>

/* the largest state of any model (von_mises: L_p 6, κ 6, ᾱ 1) */
#define PLAST_STATE 13

/* return map outcome flags */
enum {
    PLAST_FLOWED = 1,  /* L_p changed by flow */
    PLAST_CAPPED = 2,  /* held at max or at the limit surface */
    PLAST_SKIPPED = 4, /* F_e flat or inverted: no flow */
    PLAST_CHANGED = 8  /* L_p changed (flow or projection) */
};

/* What a point's return map reads; fpi is the point's F_p⁻¹ (9), which a
 * return map that changes L_p writes anew (plast_eig_store).  n: 3 for a
 * solid's point, 2 for a shell's (F_e = diag(F₂, 1), L_p and F_p⁻¹ in the
 * triangle's rest plane: "The rest plane" below).  The driver fills in F_e's
 * logarithm (defo_plast_elastic_log: log_ok, l, V) before the model runs. */
typedef struct plast_point {
    defo_mat3 Fe;       /* trial elastic part F F_p⁻¹ */
    double dt;          /* [s] */
    double mu;          /* shear modulus of the element's material [Pa] */
    double lambda;      /* shells: the plane-stress Lamé λ* = 2μλ/(λ + 2μ) [Pa] */
    const double *goal; /* log F_p,goal (6) for plasticity control, or NULL */
    double *fpi;        /* in/out */
    int n;              /* 3 or 2 */
    int log_ok;         /* 0: F_e flat, inverted or not finite (l, V unspecified) */
    double l[3];        /* log Σ of F_e = U Σ Vᵀ, descending */
    defo_mat3 V;
} plast_point;

/* A return map in two halves around its flow F_p ← exp(Δ) F_p, Δ = W
 * diag(d) Wᵀ (defo_plast_push), so that the driver pushes several points
 * together (their eigen-decompositions in the lanes of defo_plast_sym_eig_lanes).
 * trial sets fl and, to flow, push = 1 with W, d (want_q: the rotation Q
 * too), or want_eig = 1: the flow's axes are those of the symmetric aux[0..5],
 * whose eigen-decomposition (batched too) goes to the model's direct, which
 * then sets push, W and d; aux carries the model's own numbers to finish;
 * done = 1: trial did the whole return map (fl holds its outcome). */
typedef struct plast_trial {
    unsigned fl;
    int push, want_q, want_eig, done;
    defo_mat3 W;
    double d[3];
    double aux[8];
} plast_trial;

/* A symmetric tensor by its eigendecomposition V diag(h) Vᵀ: L_p in this
 * form gives F_p⁻¹ = V diag(e^−h) Vᵀ without another decomposition, and
 * shifts (tr), scalings (max) and clamps (limit) act on h alone.  n = 2:
 * the rest plane's 2×2 (h[2] = 0, V a rotation about z: its first column
 * (c, s, 0) for h[0], the second (−s, c, 0)). */
typedef struct plast_eig {
    defo_mat3 V;
    double h[3];
    int n;
} plast_eig;

typedef struct plast_ops {
    const char *name;
    /* Largest ‖ε_e‖ (Frobenius norm of the elastic log strain) that surely
     * does not flow at this state (0: always run the return map); stiff
     * bounds ‖stress‖/‖ε_e‖ (2μ for a solid, 2(μ + λ*) for a shell). */
    double (*radius)(const defo_plasticity_def *d, const double *state, double stiff);
    /* The return map (solids and shells, in->n) in its two halves
     * (plast_trial): trial reads the state (writes it only when it does the
     * whole map, done = 1), finish gets the push's result
     * (ok = 0: none requested or it failed; e, Q unspecified then), updates
     * the state in place and returns the PLAST_* flags. */
    void (*trial)(const defo_plasticity_def *d, const plast_point *in, double *state,
                  plast_trial *t);
    /* after a trial with want_eig: aux[0..5] = V diag(h) Vᵀ (NULL: never asked) */
    void (*direct)(const defo_plasticity_def *d, const plast_point *in, plast_trial *t,
                   const double h[3], const defo_mat3 *V);
    unsigned (*finish)(const defo_plasticity_def *d, const plast_point *in, double *state,
                       const plast_trial *t, int ok, const plast_eig *e, const defo_mat3 *Q);
    /* Parameters beyond the shared checks (NULL: none); message names the key. */
    defo_status (*check)(const defo_plasticity_def *d);
} plast_ops;

extern const plast_ops defo_plast_mg04, defo_plast_von_mises, defo_plast_multiplicative;
const plast_ops *defo_plast_ops_of(defo_plasticity_model m);

/* ----------------------------------------------------- symmetric tensors */
/* A symmetric 3×3 as xx, yy, zz, xy, yz, zx (tensor shear, not engineering). */
static inline defo_mat3 plast_sym_to_m3(const double *s) {
    defo_mat3 a = {{{s[0], s[3], s[5]}, {s[3], s[1], s[4]}, {s[5], s[4], s[2]}}};
    return a;
}
static inline void plast_m3_to_sym(const defo_mat3 *a, double *s) {
    s[0] = a->m[0][0], s[1] = a->m[1][1], s[2] = a->m[2][2];
    s[3] = 0.5 * (a->m[0][1] + a->m[1][0]);
    s[4] = 0.5 * (a->m[1][2] + a->m[2][1]);
    s[5] = 0.5 * (a->m[0][2] + a->m[2][0]);
}
/* Frobenius inner product and norm */
static inline double plast_sym_dot(const double *a, const double *b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + 2 * (a[3] * b[3] + a[4] * b[4] + a[5] * b[5]);
}
static inline double plast_sym_norm(const double *a) {
    return sqrt(plast_sym_dot(a, a));
}
static inline double plast_sym_trace(const double *a) {
    return a[0] + a[1] + a[2];
}
/* a −= (tr a)/3 I */
static inline void plast_sym_dev(double *a) {
    const double m = plast_sym_trace(a) / 3;
    a[0] -= m, a[1] -= m, a[2] -= m;
}
/* Q diag(v) Qᵀ as 6 numbers */
static inline void plast_sym_from_eigen(const defo_mat3 *Q, const double v[3], double *s) {
    const int r[6] = {0, 1, 2, 0, 1, 0}, c[6] = {0, 1, 2, 1, 2, 2};
    for (int k = 0; k < 6; k++)
        s[k] = Q->m[r[k]][0] * v[0] * Q->m[c[k]][0] + Q->m[r[k]][1] * v[1] * Q->m[c[k]][1] +
               Q->m[r[k]][2] * v[2] * Q->m[c[k]][2];
}

/* a = V diag(h) Vᵀ (6 numbers), h descending, V a rotation: closed form
 * (Smith 1961's cubic for the eigenvalue farther from the other two, its
 * eigenvector from a cross product, then the symmetric 2×2 problem in the
 * plane normal to it, so meeting eigenvalues lose nothing); cyclic Jacobi
 * (defo_sym3_eigen) for a multiple of I, entries out of range or not
 * finite.  Errors of a few ε ‖a‖ in V diag(h) Vᵀ. */
void defo_plast_sym_eig(const double *a, double h[3], defo_mat3 *V);
/* The same for PLAST_LANES matrices a[j] at once (sym_eig.c: the lanes of
 * a vector unit, AVX2's four doubles); each gets the bits
 * defo_plast_sym_eig gives it. */
#define PLAST_LANES 4
void defo_plast_sym_eig_lanes(const double *const a[PLAST_LANES], double h[][3], defo_mat3 V[]);
/* defo_plast_sym_eig_lanes by the baseline build (avx2 = 0) or the AVX2 one
 * (avx2 = 1; returns 0, outputs untouched, where the CPU lacks AVX2) */
int defo_plast_sym_eig_with(int avx2, const double *const a[PLAST_LANES], double h[][3],
                            defo_mat3 V[]);
/* exp(a) as a full 3×3 (symmetric), a symmetric */
defo_mat3 defo_plast_sym_exp(const double *a);
/* L in eigen form (defo_plast_sym_eig; n = 2: L's in-plane block xx, yy,
 * xy by defo_sym2_eigen) */
void defo_plast_eig_of(const double *L, int n, plast_eig *e);
/* L = V diag(h) Vᵀ and F_p⁻¹ = V diag(e^−h) Vᵀ (fpi may be NULL); n = 2:
 * L's zz, yz, zx zero and F_p⁻¹ = diag(block, 1) */
void defo_plast_eig_store(const plast_eig *e, double *L, double *fpi);
/* The limit surface (top of defo/plasticity.h) on n eigenvalues h: each
 * within ±log(limit) and |Σ h| ≤ log(limit).  isochoric: the mean is kept
 * (or clamped) and the deviator scaled along itself; otherwise eigenvalues
 * are clamped, then shifted together (the shift keeps them in range).
 * Returns 1 when h moved. */
int defo_plast_limit(double *h, int n, double limit, int isochoric);
/* 1 when L (6) may lie outside the limit surface or beyond max (cheap
 * bounds: |h_i| ≤ ‖L‖, |Σ h| ≤ √3 ‖L‖). */
int defo_plast_may_project(const double *L, double max, double limit);

/* The flow F_p ← exp(Δ) F_p with Δ = W diag(d) Wᵀ (the flow direction in
 * the intermediate frame, where F_e acts), F_p kept as its stretch:
 * L_new = ½ log(S exp(2Δ) S), S = F_p (the inverse of fpi).  When Δ shares
 * F_e's right singular vectors the new F_e has singular values Σ exp(−d)
 * exactly.  Q (may be NULL) gets the rotation dropped, exp(Δ) S =
 * Q exp(L_new): a tensor of the intermediate frame T becomes Qᵀ T Q.
 * Returns 0 (out unspecified) when the result is not finite.  n = 2: in
 * the rest plane (W and Q rotations about z, d[2] unused, out->n = 2). */
int defo_plast_push(const double *fpi, int n, const defo_mat3 *W, const double *d, plast_eig *out,
                    defo_mat3 *Q);
/* defo_plast_push (n = 3) in two halves around the eigen-solver (as
 * defo_plast_elastic_log_begin/_end): _begin gives C = S exp(2Δ) S (c, 6
 * numbers) or 0 (F_p⁻¹ singular), _end takes C's eigen-decomposition. */
typedef struct plast_push {
    defo_mat3 S; /* F_p */
    double ed[3];
    double c[6];
} plast_push;
int defo_plast_push_begin(const double *fpi, const defo_mat3 *W, const double *d, plast_push *pp);
int defo_plast_push_end(const plast_push *pp, const defo_mat3 *W, const double lam[3],
                        const defo_mat3 *V, plast_eig *out, defo_mat3 *Q);

/* One point's return map: model o's trial, push and finish in turn (in's
 * logarithm filled in here); the batched driver in plasticity.c gives every
 * point the same bits. */
unsigned defo_plast_flow(const plast_ops *o, const defo_plasticity_def *d, plast_point *in,
                         double *state);
/* 0: every point by defo_plast_flow alone, not in batches (the default
 * 1; tests compare the two) */
void defo_plast_set_batched(defo_plasticity *p, int on);
/* ε_e = V diag(l) Vᵀ (6 numbers) from in's logarithm (n = 2: in the rest
 * plane) */
void defo_plast_log_strain(const plast_point *in, double eps[6]);

/* F_e = U Σ Vᵀ: l = log Σ (descending) and the logarithmic strain
 * ε_e = V log Σ Vᵀ (6 numbers), from F_eᵀF_e's eigen-decomposition (the
 * SVD where F_e is nearly flat, σ₃ < 1e-3 σ₁); returns 0 (outputs
 * unspecified) when F_e is flat or inverted (det ≤ 0) or not finite.  eps,
 * l, V may be NULL.  n = 2: of F_e's 2×2 block (V as in plast_eig, l[2] =
 * 0; the smaller σ from σ₁σ₂ = det, accurate when flat). */
int defo_plast_elastic_log(const defo_mat3 *Fe, int n, double *eps, double *l, defo_mat3 *V);
/* defo_plast_elastic_log (n = 3) in two halves around the eigen-solver, so
 * that several points' decompositions run together
 * (defo_plast_sym_eig_lanes):
 * _begin gives C = F_eᵀF_e (6 numbers) and det F_e, or 0 (flat, inverted,
 * not finite); _end takes C's eigen-decomposition (lam, v). */
int defo_plast_elastic_log_begin(const defo_mat3 *Fe, double c[6], double *det);
int defo_plast_elastic_log_end(const defo_mat3 *Fe, double det, const double lam[3],
                               const defo_mat3 *v, double *eps, double *l, defo_mat3 *V);

#endif
