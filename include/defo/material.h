/*
 * defo/material.h — isotropic constitutive models written once in the
 * diagonal frame F = U diag(σ) Vᵀ (ITF04 §5–6, TSIF05 §7–9).
 *
 * A material is described by a defo_material_def (filled by
 * defo_default_material(), then edited) and compiled into an opaque
 * defo_material holding the derived constants (Lamé parameters, spline
 * coefficients, damping moduli).  Forces and solvers call, per element:
 *
 *   defo_svd3(&F, &U, &sigma, &V);
 *   psi = defo_material_eval(mat, sigma, &phat, &dpdf);   // ψ, P̂, dP/dF blocks
 *   defo_dpdf_project_psd(&dpdf);                           // TSIF05 §8 (optional)
 *   P = U diag(phat) Vᵀ;  δP = U {dpdf : Uᵀ δF V} Vᵀ       // ITF04 eq. 1, TSIF05 eq. 4
 *
 * Units: SI.  σ (principal stretches) and the compression thresholds are
 * dimensionless (fractions of the rest length); stresses, energy densities
 * and moduli are in Pa (= J/m³); density in kg/m³; damping time in s.
 *
 * dP/dF in the diagonal frame (TSIF05 §8): with δF̂ arranged as
 * (f11, f22, f33 | f12, f21 | f13, f31 | f23, f32), the 9×9 tensor is block
 * diagonal: A (3×3, A[i][j] = ∂P̂i/∂σj) acts on the diagonal, and each 2×2
 * block B[p] maps (δF̂ij, δF̂ji) to (δP̂ij, δP̂ji) for the pairs p = 0:(1,2),
 * 1:(1,3), 2:(2,3).
 */
#ifndef DEFO_MATERIAL_H
#define DEFO_MATERIAL_H

#include "defo/base.h"
#include "defo/math.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- models */
typedef enum defo_material_model {
    /* ITF04 Fig. 3 "rotated linear": P̂ = 2μ(F̂ − I) + λ tr(F̂ − I) I,
     * ψ = μ Σ(σi − 1)² + λ/2 (Σ(σi − 1))².  Defined for any σ. */
    DEFO_MODEL_COROTATED = 0,
    /* ψ = μ/2 (Σσi² − 3) − μ ln J + λ/2 (ln J)², J = σ1σ2σ3.  Undefined for
     * J ≤ 0: only usable with an inversion extension (validation says so). */
    DEFO_MODEL_NEO_HOOKEAN = 1,
    /* St. Venant–Kirchhoff: ψ = μ E:E + λ/2 (tr E)², E = ½(F̂ᵀF̂ − I).
     * Softens in compression and keeps inverted elements inverted (ITF04 §6,
     * Fig. 3); the extension only helps above its stress extremum. */
    DEFO_MODEL_STVK = 2,
    /* ITF04 §6 biphasic model: per principal stretch a stress curve that is
     * linear outside [compression, elongation] thresholds, with given slopes
     * there and at rest, joined by cubic splines; plus the linear pressure
     * term λ tr(F̂ − I).  See defo_biphasic_def. */
    DEFO_MODEL_BIPHASIC = 3,
    DEFO_MODEL_COUNT = 4
} defo_material_model;

/* Name used in scene files ("corotated", "neo_hookean", "stvk",
 * "biphasic"); "unknown" for an out-of-range value. */
DEFO_API const char *defo_material_model_name(defo_material_model model);
/* Inverse of defo_material_model_name; DEFO_ERR_INVALID_ARGUMENT (message
 * lists the valid names) for anything else. */
DEFO_API defo_status defo_material_model_from_name(const char *name, defo_material_model *out);

/* ---------------------------------------------------- inversion extension */
typedef enum defo_inversion_mode {
    /* The raw model.  Not allowed with neo-Hookean. */
    DEFO_INVERSION_NONE = 0,
    /* ITF04 §6 "clamping the stress": below the threshold c each principal
     * stress is held at its value at c (the energy grows linearly).  Energy
     * consistent; P̂ is C0 at c. */
    DEFO_INVERSION_C0 = 1,
    /* ITF04 §6 "linearizing at a given compression limit": below c each
     * principal stress continues along its tangent at c.  Energy consistent;
     * P̂ is C1 at c, except for StVK, whose extension must drop to C0 in
     * slope to restore inverted elements (src/material/inversion.c). */
    DEFO_INVERSION_C1 = 2,
    /* TSIF05 §9 constant extrapolation: ψ, P̂ and dP/dF are all evaluated at
     * σ clamped to max(σ, c).  What the quasistatic solver uses; note that its
     * dP/dF is that of the clamped state, not the derivative of its P̂. */
    DEFO_INVERSION_CLAMP = 3
} defo_inversion_mode;

typedef struct defo_inversion_def {
    defo_inversion_mode mode; /* default DEFO_INVERSION_C1 */
    /* Compression threshold c: a principal stretch below c (fraction of the
     * rest length) is extended.  Range (0, 1); default 0.3.  The papers give
     * no number; 0.3 keeps the physical model over the whole range of
     * compression a graphics simulation normally sees while removing the
     * neo-Hookean singularity well before the flat state. */
    double threshold;
} defo_inversion_def;

/* ITF04 §6 biphasic model, per principal stretch s: the stress curve f(s)
 * has slope k0 at rest (f(1) = 0), slope kc for s ≤ compression_threshold and
 * ke for s ≥ elongation_threshold; in between, one cubic per side with
 * f(1) = 0, f'(1) = k0, f'(t) = kt and f''(t) = 0 (so it joins its linear tail
 * with C2 continuity; at s = 1 the curve is C1).  The paper leaves the knot
 * values open; this choice fixes them.  Slopes are dimensionless multiples of
 * 2μ, so rest_slope = 1 reproduces linear elasticity at small strain. */
typedef struct defo_biphasic_def {
    double compression_threshold; /* stretch in (0, 1); default 0.8 */
    double elongation_threshold;  /* stretch > 1; default 1.2 */
    double rest_slope;            /* × 2μ, > 0; default 1 */
    double compression_slope;     /* × 2μ, ≥ 0; default 4 (stiffens) */
    double elongation_slope;      /* × 2μ, ≥ 0; default 4 (stiffens) */
} defo_biphasic_def;

/* ------------------------------------------------------------- fibres */
/* Transversely isotropic materials (ITF04 §6.1, TSIF05 §11): the isotropic
 * model above plus a term of the fibre stretch λ = |F a|, a the unit fibre
 * direction in rest space (one per quadrature point: defo/fibre.h),
 *
 *     ψ = ψ_iso(σ) + ψ_p(λ) + α ψ_a(λ),   α ∈ [0, 1] the activation.
 *
 * T = dψ_f/dλ is the fibre's nominal stress (force per rest area across the
 * fibre) [Pa]; the first Piola stress of the term is P_f = (T/λ) F a aᵀ.
 * With x = λ − 1:
 *   passive (fibres resist stretch, never compression: T_p = 0 for λ ≤ 1)
 *     EXPONENTIAL  T_p = P1 (e^{P2 x} − 1 − P2 x) up to λ*, continued along
 *                  its tangent beyond (the exponential muscle curve of
 *                  Blemker et al. 2005 that TSIF05 §11 cites, with its
 *                  slope at rest taken out: T_p starts with zero slope, the
 *                  "toe" of collagen fibres straightening, so T_p is C1 and
 *                  Newton's tangent continuous at rest);
 *     POLYNOMIAL   T_p = c2 x² + c3 x³;
 *   active (force–length curve times the activation; max_active_stress 0
 *   leaves it out)
 *     T_a = σ_max f_L(λ/λ_o),  f_L(s) = (1 − ((s − 1)/w)²)² for |s − 1| < w,
 *     0 outside: a C1 bump, 1 at the optimal stretch λ_o, zero outside
 *     [λ_o(1 − w), λ_o(1 + w)] (the shape of the Gordon–Huxley–Julian
 *     curve that Blemker's piecewise quadratic follows, without its slope
 *     jumps).
 * Energies are the integrals from λ = 1, so ψ_f(1) = 0 for any α.  Both
 * stresses vanish near λ = 0 (w < 1), which keeps T/λ bounded through flat
 * and inverted elements: the term needs no inversion extension and the
 * isotropic part's extension acts as without it (force_model.h). */
typedef enum defo_fibre_passive {
    DEFO_FIBRE_PASSIVE_NONE = 0,
    DEFO_FIBRE_PASSIVE_EXPONENTIAL = 1,
    DEFO_FIBRE_PASSIVE_POLYNOMIAL = 2
} defo_fibre_passive;

typedef struct defo_fibre_def {
    defo_fibre_passive passive; /* default NONE */
    /* EXPONENTIAL: P1 [Pa] ≥ 0 (default 5e4), P2 ≥ 0 (default 6.6) and the
     * stretch λ* > 1 where the curve turns linear (default 1.4): the
     * magnitudes Blemker et al. 2005 give for skeletal muscle. */
    double exp_stress, exp_rate, linear_stretch;
    /* POLYNOMIAL: c2, c3 [Pa] ≥ 0 (default 1e5, 0) */
    double poly2, poly3;
    /* active: σ_max [Pa] ≥ 0 (default 0: no active term; 3e5 is Blemker's
     * for skeletal muscle), λ_o > 0 (default 1), w in (0, 1) (default 0.5) */
    double max_active_stress, optimal_stretch, active_width;
} defo_fibre_def;

typedef struct defo_material_def {
    defo_material_model model; /* default DEFO_MODEL_NEO_HOOKEAN */
    double youngs_modulus;     /* E [Pa], > 0; default 1e5 (soft rubber) */
    double poisson;            /* ν in [0, 0.5); default 0.3 */
    double density;            /* [kg/m³], > 0; default 1000 */
    defo_inversion_def inversion;
    defo_biphasic_def biphasic; /* read only by DEFO_MODEL_BIPHASIC */
    /* ITF04 §6.2 damping in the rotated frame, stiffness-proportional: the
     * damping moduli are μ_d = damping_time·μ and λ_d = damping_time·λ, so a
     * mode of angular frequency ω is damped with ratio ζ ≈ ω·damping_time/2.
     * [s], ≥ 0; default 0 (no damping). */
    double damping_time;
    /* ITF04 §6.1 fibre term (see defo_fibre_def); default none.  Needs
     * fibre directions (defo/fibre.h) and the invertible formulation. */
    defo_fibre_def fibre;
    /* Shells and cloth (tri3 bodies, ITF04 §8): the thickness h [m], ≥ 0 and
     * required > 0 by a shell body.  The in-plane energy is h times the
     * plane-stress density per area, the mass ρh per area and the bending
     * stiffness D = E h³ / (12 (1 − ν²)).  Ignored by solids; default 0. */
    double thickness;
} defo_material_def;

DEFO_API defo_material_def defo_default_material(void);

/* DEFO_OK, or DEFO_ERR_INVALID_ARGUMENT with a message naming the first bad
 * field, e.g. "poisson: 0.52 is not in [0, 0.5)". */
DEFO_API defo_status defo_material_def_validate(const defo_material_def *def);

/* Lamé parameters from Young's modulus and Poisson's ratio — the one place
 * defo converts them: μ = E / (2(1 + ν)), λ = E ν / ((1 + ν)(1 − 2ν)). */
DEFO_API void defo_lame(double youngs_modulus, double poisson, double *mu, double *lambda);

/* ------------------------------------------------------- compiled object */
typedef struct defo_material defo_material;

/* Validate def and compile it.  *out is NULL on error. */
DEFO_API defo_status defo_material_create(const defo_material_def *def, defo_material **out);
DEFO_API void defo_material_destroy(defo_material *mat);
/* The definition the material was created from (a copy). */
DEFO_API const defo_material_def *defo_material_get_def(const defo_material *mat);
DEFO_API double defo_material_mu(const defo_material *mat);
DEFO_API double defo_material_lambda(const defo_material *mat);
/* 2μ + λ [Pa]: the stiffness scale for relative tolerances. */
DEFO_API double defo_material_stiffness_scale(const defo_material *mat);

/* ----------------------------------------------- diagonal-frame kernels */
/* dP/dF in the block form of TSIF05 §8 (see the top of this file). */
typedef struct defo_dpdf {
    double A[3][3];    /* ∂P̂i/∂σj */
    double B[3][2][2]; /* pairs 0:(1,2) 1:(1,3) 2:(2,3); rows (δP̂ij, δP̂ji) */
} defo_dpdf;

/* The per-element entry point: energy density ψ(σ) (returned), the diagonal
 * stress P̂(σ) into *phat and the dP/dF blocks into *dpdf (each may be NULL),
 * with the inversion extension applied.  σ in any order, any signs.  No
 * function pointers inside (a switch on the model), no allocation.  The
 * (1, −1) eigenvalue (P̂i + P̂j)/(σi + σj) of each B block is unbounded as
 * σi + σj → 0 (ψ(F) has a kink there); its denominator is kept ≥ 1e-6 in
 * magnitude so the blocks stay finite. */
DEFO_API double defo_material_eval(const defo_material *mat, defo_vec3 sigma, defo_vec3 *phat,
                                   defo_dpdf *dpdf);
/* Batch form over n elements: sigma, phat are 3n doubles (xyz per element);
 * psi (n) and dpdf (n) may be NULL. */
DEFO_API void defo_material_eval_batch(const defo_material *mat, size_t n, const double *sigma,
                                       double *psi, double *phat, defo_dpdf *dpdf);
/* ψ (into *psi; NULL: not computed) and the first Piola stress P from F
 * itself, without its SVD:
 * neo-Hookean P = μ F + (λ ln J − μ) F⁻ᵀ, StVK P = F (2μ E + λ tr E I), used
 * where det F > 0 and det F / ‖cof F‖_F — a lower bound of the smallest
 * singular value — is at least the inversion threshold, so the extension
 * cannot apply.  Returns 1 then, equal to defo_material_eval at F's
 * singular values up to rounding; 0 (nothing written) for the other models
 * or any other F: take the SVD path. */
DEFO_API int defo_material_eval_direct(const defo_material *mat, const defo_mat3 *F, double *psi,
                                       defo_mat3 *P);
/* Neo-Hookean, four points in lockstep (lane l of F[k] is entry k,
 * row-major, of the l-th F): defo_material_eval_direct without ψ at each, bit
 * for bit.  Bit l of the result is set where lane l answered (P[·][l]
 * written); elsewhere P[·][l] is unspecified and the point takes another
 * path.  Other models: 0. */
DEFO_API unsigned defo_material_eval_direct4(const defo_material *mat, const double F[9][4],
                                             double P[9][4]);

/* Gershgorin bound of the largest eigenvalue magnitude of dP/dF from its
 * blocks (row sums of A and of each 2×2 B block) [Pa]: what explicit step
 * control needs. */
DEFO_API double defo_dpdf_bound(const defo_dpdf *dpdf);
/* The same at σ without forming the blocks where the model allows
 * (neo-Hookean outside the extension: one logarithm, no jets); equal to
 * defo_dpdf_bound of defo_material_eval's blocks up to rounding. */
DEFO_API double defo_material_stiffness_bound(const defo_material *mat, defo_vec3 sigma);
/* An upper bound of defo_material_stiffness_bound over every σ with
 * σ1σ2σ3 = J and every σi² ≥ smin2, from those two numbers alone (no SVD,
 * no eigenvalues, no logarithm): neo-Hookean with smin2 at or above the
 * squared inversion threshold; INFINITY otherwise (no rough bound). */
DEFO_API double defo_material_stiffness_bound_rough(const defo_material *mat, double J,
                                                    double smin2);
/* The same for four (J, smin2) pairs, bit for bit. */
DEFO_API void defo_material_stiffness_bound_rough4(const defo_material *mat, const double J[4],
                                                   const double smin2[4], double out[4]);

/* TSIF05 §8 definiteness fix: negative eigenvalues of A (3×3 symmetric
 * eigen) and of each B block (2×2, analytic) are clamped to zero.  Blocks
 * that are already positive semidefinite are left bitwise unchanged.
 * Returns the number of blocks that were modified (0..4). */
DEFO_API int defo_dpdf_project_psd(defo_dpdf *dpdf);
/* δP̂ = dP/dF : δF̂ in the diagonal frame (3×3 in, 3×3 out). */
DEFO_API defo_mat3 defo_dpdf_apply(const defo_dpdf *dpdf, const defo_mat3 *dF_hat);
/* World frame (TSIF05 eq. 4): δP = U {dP/dF : (Uᵀ δF V)} Vᵀ. */
DEFO_API defo_mat3 defo_dpdf_apply_world(const defo_dpdf *dpdf, const defo_mat3 *U,
                                         const defo_mat3 *V, const defo_mat3 *dF);

/* ------------------------------------------------- full-F conveniences */
/* For tests and simple callers; each runs an SVD.  P = U diag(P̂(σ)) Vᵀ. */
DEFO_API defo_mat3 defo_material_P(const defo_material *mat, const defo_mat3 *F);
DEFO_API double defo_material_psi_F(const defo_material *mat, const defo_mat3 *F);
/* δP = dP/dF|F : δF; with project_psd the blocks are clamped first. */
DEFO_API defo_mat3 defo_material_dP(const defo_material *mat, const defo_mat3 *F,
                                    const defo_mat3 *dF, int project_psd);

/* ------------------------------------------------------------ fibres */
/* 1 when the material has a fibre term (a passive curve or σ_max > 0). */
DEFO_API int defo_material_has_fibres(const defo_material *mat);
/* The fibre term at fibre stretch λ ≥ 0 and activation α: ψ_f (returned)
 * [Pa = J/m³], T = dψ_f/dλ (*T) and dT/dλ (*K) [Pa] (either may be NULL).
 * 0 everywhere for a material without fibres. */
DEFO_API double defo_material_fibre_eval(const defo_material *mat, double stretch,
                                         double activation, double *T, double *K);
/* The same without ψ_f: T (returned) and K (*K, may be NULL), equal to
 * defo_material_fibre_eval's bit for bit. */
DEFO_API double defo_material_fibre_stress(const defo_material *mat, double stretch,
                                           double activation, double *K);
/* defo_material_fibre_stress at four stretches and activations (the
 * explicit force pass of tet4, four elements at a time): T[l] and K[l] equal
 * the one-point call at (stretch[l], activation[l]) bit for bit. */
DEFO_API void defo_material_fibre_stress4(const defo_material *mat, const double stretch[4],
                                          const double activation[4], double T[4], double K[4]);
/* The fibre term at F for the unit rest direction a (ITF04 §6.1): ψ_f
 * (returned) and its first Piola stress P_f = (T/λ) F a aᵀ (*P, may be
 * NULL; λ = |F a|).  In the diagonal frame F = U F̂ Vᵀ this is
 * P̂_f = (T/λ) F̂ â âᵀ with â = Vᵀ a — F̂ times a symmetric matrix, as §6.1
 * asks, so Ŝ = F̂⁻¹P̂ stays symmetric — and P_f = U P̂_f Vᵀ: the same
 * matrix, formed here without the SVD. */
DEFO_API double defo_material_fibre_P(const defo_material *mat, const defo_mat3 *F, defo_vec3 a,
                                      double activation, defo_mat3 *P);
/* The fibre term's stress differential at F: δP_f = (K_f δF a) aᵀ with the
 * 3×3 K_f = (T/λ)(I − t tᵀ) + K t tᵀ, t = F a / λ — as a form in δF,
 * δF : δP_f = (T/λ)|v⊥|² + K (t·v)² with v = δF a, so its eigenvalues are
 * T/λ (twice), K and 0 (six times).  project_psd clamps T/λ and K at 0:
 * the exact PSD projection of the term on its own (TSIF05 §8 applied to
 * the fibre term separately; T/λ ≥ 0 always, K < 0 on the descending limb
 * of the force–length curve).  λ = 0 (F a = 0) gives 0. */
DEFO_API defo_mat3 defo_material_fibre_dP(const defo_material *mat, const defo_mat3 *F, defo_vec3 a,
                                          double activation, const defo_mat3 *dF, int project_psd);
/* Largest eigenvalue magnitude of the fibre term's dP/dF at stretch λ,
 * max(|T/λ|, |K|) [Pa], for the explicit step bound (an upper bound of the
 * whole tangent's is this plus the isotropic one's). */
DEFO_API double defo_material_fibre_bound(const defo_material *mat, double stretch,
                                          double activation);

/* --------------------------------------------- shells: plane stress */
/* dP/dF of a shell point (ITF04 §8: F is 3×2, F = U diag(σ1, σ2) Vᵀ with U
 * 3×2 orthonormal and V a 2×2 rotation) in its diagonal frame: with
 * δF̂ = [U n̂]ᵀ δF V arranged as (f11, f22 | f12, f21 | f31, f32), A (2×2)
 * acts on the diagonal, B (2×2) on the pair (f12, f21) as in TSIF05 §8, and
 * N[i] on the out-of-plane entry f3i (N[i] = P̂i/σi). */
typedef struct defo_dpdf2 {
    double A[2][2];
    double B[2][2];
    double N[2];
} defo_dpdf2;

/* The material in plane stress (src/material/plane.c): the thickness
 * stretch σ3 where ∂ψ/∂σ3 = 0 (*thickness_stretch, may be NULL), the energy
 * density ψ(σ1, σ2, σ3) per rest volume (returned) [Pa], the in-plane stress
 * P̂ (phat, 2 values, may be NULL) and dP/dF with σ3 condensed out (may be
 * NULL), the inversion extension applied as in defo_material_eval.  Any
 * model; σ in any order and signs. */
DEFO_API double defo_material_eval_plane(const defo_material *mat, double s1, double s2,
                                         double *thickness_stretch, double phat[2],
                                         defo_dpdf2 *dpdf);
/* Gershgorin bound of the largest eigenvalue magnitude of the blocks [Pa]. */
DEFO_API double defo_dpdf2_bound(const defo_dpdf2 *dpdf);

/* ---------------------------------------------------------- damping */
/* ITF04 §6.2 damping stress in the rotated frame, linear in Ḟ̂ = Uᵀ Ḟ V:
 * P̂_d = μ_d (Ḟ̂ + Ḟ̂ᵀ) + λ_d tr(Ḟ̂) I.  Since it is linear, the same call
 * applies its derivative dP_d/dḞ to a differential (implicit integrators). */
DEFO_API defo_mat3 defo_material_damping_hat(const defo_material *mat, const defo_mat3 *Fdot_hat);
/* World frame: P_d = U P̂_d(Uᵀ Ḟ V) Vᵀ, with U, V from the SVD of F. */
DEFO_API defo_mat3 defo_material_damping_P(const defo_material *mat, const defo_mat3 *U,
                                           const defo_mat3 *V, const defo_mat3 *Fdot);
/* μ_d, λ_d [Pa·s]. */
DEFO_API void defo_material_damping_moduli(const defo_material *mat, double *mu_d,
                                           double *lambda_d);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_MATERIAL_H */
