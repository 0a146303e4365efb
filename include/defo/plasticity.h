/*
 * defo/plasticity.h — plastic flow on any body of the world, whatever
 * integrator steps it: three models behind one interface, a plastic part
 * F_p per quadrature point handed to the force model, control toward a goal
 * shape, and the state a checkpoint keeps.
 *
 * Per quadrature point of the body's force model (one per tet4 element,
 * four per tet10 — MTPS08 §5 keeps plastic state per cubature point) every
 * model keeps a symmetric plastic stretch F_p = exp(L_p) (L_p its logarithm,
 * the plastic Hencky strain, in the rest frame) and hands F_p⁻¹ to the force
 * model, which evaluates the elastic part F_e = F F_p⁻¹ (ITF04 §6.3; an
 * element rests where F = R F_p).  Being an exponential, F_p never inverts:
 * det F_p = exp(tr L_p) > 0.  Every update starts from the trial elastic
 * part F_e = U Σ Vᵀ (ITF04 §5) and its logarithmic strain ε_e = V log Σ Vᵀ;
 * points whose F_e is flat or inverted (σ₃ ≤ 0) do not flow that step (the
 * inversion recovery of the elastic model pushes them back first).  Norms
 * ‖·‖ are Frobenius norms of 3×3 tensors (isotropic).
 *
 *   mg04 — MG04 §3 (eqs. 13–15) with the strain decomposition ε = ε_e + ε_p
 *     read as Hencky strains (equal to MG04's linear strains to first order):
 *       d = dev ε_e (default) or ε_e ("volumetric": the paper's literal rule)
 *       if ‖d‖ > c_yield:  L_p += min(1, Δt c_creep) · d
 *       if ‖L_p‖ > c_max:  L_p *= c_max / ‖L_p‖
 *     The deviatoric default keeps tr L_p = 0, so det F_p = 1: flow keeps
 *     volume.  The literal rule lets the volumetric strain creep too — a
 *     squashed block keeps a smaller volume for good (the paper's rule; its
 *     volume loss is the price).
 *   von_mises — MTPS08 §5.1–5.2: von Mises yield on the deviatoric stress
 *     with linear kinematic hardening (back stress κ) and optional linear
 *     isotropic hardening, by the radial return map, exact for a linear
 *     stress s = 2μ dev ε_e:
 *       ξ = 2μ dev ε_e − κ,  f = ‖ξ‖ − √(2/3) (σ_y + K ᾱ)
 *       f > 0:  Δγ = f / (2μ + (2/3)(H + K)),  n = ξ/‖ξ‖,
 *               L_p += Δγ n,  κ += (2/3) H Δγ n,  ᾱ += √(2/3) Δγ
 *     σ_y (yield_stress) is the uniaxial yield stress and H (hardening) the
 *     uniaxial plastic modulus: in tension the stress rises with slope
 *     E·H/(E + H) past σ_y and, reversed from σ_max, yields again at
 *     σ_max − 2σ_y (the Bauschinger effect of MTPS08 Fig. 4).  MTPS08's
 *     yield radius and κ̇ = H ε̇_pl are these with its σ_y = √(2/3)·ours and
 *     its H = (2/3)·ours.  Plastic flow is deviatoric: volume is kept.
 *     ‖L_p‖ ≤ max (MTPS08's limit on the range of plastic deformation; past
 *     it the material is elastic again).
 *   multiplicative — ITF04 §6.3: F_e = F F_p⁻¹ = U F̂_e Vᵀ; if a yield
 *     criterion on F̂_e is exceeded, project log F̂_e back onto it (F̂_e,proj
 *     has positive entries), F_p,trial = F̂_e,proj⁻¹ Uᵀ F (its symmetric
 *     stretch is kept: the rotation of F_p is arbitrary for an isotropic
 *     material).  Yield: ‖dev log F̂_e‖ ≤ γ (default: flow keeps det F_p, so
 *     volume) or ‖log F̂_e‖ ≤ γ ("volumetric", ITF04 §7's test).  With a goal
 *     shape (§7 plasticity control, defo_plasticity_set_goal) the test is
 *     ‖log F̂_e‖ ≤ γ and the new log F_p is the point of the segment from
 *     the old one to the trial one closest to the goal's log F_p.
 * Volume on tet4 bodies: a linear tet has one F, and if every element had
 * to keep its own volume the mesh would lock (a squashed block springs back
 * part of the way).  So on tet4 solids the volume-keeping rules (every
 * model's default) keep the volume over node patches instead: after the
 * return maps, each element that flowed (and was not capped) scales its
 * F_p so that its elastic volume ratio det F_e relaxes, at the flow's rate,
 * toward its patch's (the mean over its nodes of the plastic-volume
 * weighted det F_e of the elements around each), in a form that keeps
 * Σ V_e det F_p of those elements exactly (plasticity.c, patch_volume).
 * tet10 points and shells keep their own volume as above.
 * Every model: the limit surface — each eigenvalue of L_p within
 * ±log(limit) and |tr L_p| ≤ log(limit), so every singular value of F_p and
 * det F_p lie in [1/limit, limit] (volume-keeping flows are scaled back
 * along their direction, the others clamped): F_p stays well conditioned,
 * which the explicit stable time depends on (ITF04 §6.3).
 *
 * MG04 Table 1 (mg04 parameters of the paper's animations; E in kPa):
 *   model   E    ν     ρ     fracture σ   c_yield  c_creep [1/s]  c_max
 *   snake   100  0.33  1000  ∞            ∞        0              0
 *   cow     50   0.33  1000  ∞            0.01     100            10
 *   dragon  100  0.33  1000  60 kPa       0.10     1              1
 * c_creep must lie in [0, 1/Δt]: 1/Δt absorbs the excess strain at once.
 *
 * Shells (tri3 bodies, ITF04 §8: "in-plane plasticity is analogous to the
 * three dimensional case").  In plane, F is 3×2 and the plastic part F_p a
 * 2×2 stretch in the triangle's rest frame (F_p⁻¹ is stored as the 3×3
 * diag(F_p,2⁻¹, e^(−L_zz))), and the force model evaluates F_e = F F_p⁻¹
 * with the thickness stretch condensed (plane stress).  Every model applies:
 *   mg04 and multiplicative as above in two dimensions: ε_e the 2×2 Hencky
 *     strain of F_e, the deviatoric default d = ε_e − ½ tr ε_e I₂ (mg04)
 *     and ‖dev₂ log F̂_e‖ ≤ γ (multiplicative, the mean kept), so flow keeps
 *     every triangle's area (tr L_p = 0, L_zz = 0), the limit surface on the
 *     two in-plane eigenvalues with |tr L_p| ≤ log(limit);
 *   von_mises in plane stress (σ_zz = 0): the trial stress is the shell's
 *     at small elastic strain, σ = 2μ ε_e + λ* tr ε_e I₂ (λ* = 2μλ/(λ + 2μ),
 *     the thickness strain condensed), the yield test the 3-D one on
 *     ξ = dev σ − κ, the flow 3-D and deviatoric, so L_p has a thickness
 *     part L_zz = −(L_xx + L_yy) (plastic thinning: det F_p = 1, while a
 *     triangle's area may change); the return map is the closest-point one
 *     of plane stress (von_mises.c), exact for the linear material.  max
 *     and the limit surface act on L_p's three eigenvalues.  The shell's
 *     bending stiffness keeps the rest thickness.
 * Bending, whatever the in-plane model: each hinge (an
 * interior edge) keeps a plastic bending strain ε_b,p, and its rest angle is
 * the rest mesh's plus ε_b,p · 2(A1 + A2)/(h |e|) (defo/force_model.h: the
 * bending strain ε_b = h κ/2 of the outer fibre, κ = (θ − θ_rest)|e|/(A1 +
 * A2)); per update, as MG04 eqs. 13–15 on ε_b:
 *     e = ε_b − ε_b,p;  |e| > bending_yield:  ε_b,p += min(1, Δt bending_creep) e
 *     |ε_b,p| > bending_max:  ε_b,p = ±bending_max
 * A hinge between triangles of two parameter sets takes the set with the
 * lower bending_yield (it bends plastically as soon as its weaker side
 * would; ties: its first triangle's).
 *
 * Parameters may differ per element (parameter sets, e.g. a scene's
 * material_regions: MG04 Fig. 9's heated region) and change at run time.
 */
#ifndef DEFO_PLASTICITY_H
#define DEFO_PLASTICITY_H

#include "defo/base.h"
#include "defo/force_model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum defo_plasticity_model {
    DEFO_PLASTICITY_MG04 = 0,
    DEFO_PLASTICITY_VON_MISES = 1,
    DEFO_PLASTICITY_MULTIPLICATIVE = 2
} defo_plasticity_model;
#define DEFO_PLASTICITY_MODELS 3

/* "mg04", "von_mises", "multiplicative"; "unknown" otherwise. */
DEFO_API const char *defo_plasticity_model_name(defo_plasticity_model m);
DEFO_API defo_status defo_plasticity_model_from_name(const char *name, defo_plasticity_model *out);

typedef struct defo_plasticity_def {
    defo_plasticity_model model; /* default MG04 */
    /* mg04: c_yield ≥ 0 (strain); default INFINITY (purely elastic, MG04
     * "snake") */
    double yield;
    double creep; /* mg04: c_creep [1/s] ≥ 0, at most 1/Δt at each update; default 0 */
    /* mg04 and von_mises: the largest ‖L_p‖ ≥ 0; default 0 (mg04: MG04's
     * c_max), INFINITY for von_mises (defo_default_von_mises_def) */
    double max;
    /* mg04 and multiplicative: 1 = flow of the whole elastic strain (the
     * papers' literal rules, volume not kept); default 0: deviatoric */
    int volumetric;
    double yield_stress;        /* von_mises: σ_y [Pa] > 0; default INFINITY */
    double hardening;           /* von_mises: kinematic H [Pa] ≥ 0; default 0 */
    double isotropic_hardening; /* von_mises: K [Pa] ≥ 0; default 0 */
    double gamma;               /* multiplicative: yield γ ≥ 0 (log strain); default INFINITY */
    /* every model: singular values and det of F_p within [1/limit, limit];
     * ≥ 1, default 4 */
    double limit;
    /* shells (tri3) only, any model: plastic bending (ITF04 §8, the rest
     * dihedral angles flow; the rule under "Shells" above).  bending_yield:
     * the bending strain ≥ 0 that starts flow, default INFINITY (no plastic
     * bending); bending_creep [1/s] ≥ 0, at most 1/Δt, default 0;
     * bending_max: the largest plastic bending strain ≥ 0, default INFINITY */
    double bending_yield, bending_creep, bending_max;
} defo_plasticity_def;
/* MG04, never yielding (c_yield ∞, c_creep 0, c_max 0), limit 4. */
DEFO_API defo_plasticity_def defo_default_plasticity_def(void);
/* MG04 Table 1 "cow" (warm wax): c_yield 0.01, c_creep 100 /s, c_max 10. */
DEFO_API defo_plasticity_def defo_plasticity_wax_def(void);
/* von_mises with σ_y, H (kinematic) and no isotropic hardening, max ∞. */
DEFO_API defo_plasticity_def defo_default_von_mises_def(double yield_stress, double hardening);
/* multiplicative with yield γ. */
DEFO_API defo_plasticity_def defo_default_multiplicative_def(double gamma);
/* Every field in its range (the message names the field). */
DEFO_API defo_status defo_plasticity_def_validate(const defo_plasticity_def *def);
/* Field by field. */
DEFO_API int defo_plasticity_def_equal(const defo_plasticity_def *a, const defo_plasticity_def *b);

typedef struct defo_plasticity_stats {
    defo_index yielding;       /* points that flowed */
    defo_index capped;         /* points held at max or at the limit surface */
    defo_index skipped;        /* points that could not flow: F_e flat or inverted */
    defo_index checked;        /* points whose return map ran (the rest were elastic by a bound) */
    double max_plastic_strain; /* largest ‖L_p‖ after the update */
    defo_index bending_yielding; /* shells: hinges whose rest angle flowed */
    double max_bending_strain;   /* shells: largest |ε_b,p| after the update */
    double min_det, max_det;     /* range of det F_p after the update */
    /* tet4: elements that flowed but kept their own volume, the volume
     * exchange over node patches being out of memory (0 normally) */
    defo_index unpatched;
} defo_plasticity_stats;

typedef struct defo_plasticity defo_plasticity;

/* F_p = I for num_elems elements of `points` quadrature points each, every
 * element in parameter set 0 (def; NULL: the default). */
DEFO_API defo_status defo_plasticity_create(const defo_plasticity_def *def, defo_index num_elems,
                                            int points, defo_plasticity **out);
DEFO_API void defo_plasticity_destroy(defo_plasticity *p);
/* num_sets ≥ 1 parameter sets and the set of each element (set_of:
 * num_elems values in [0, num_sets); NULL: all 0).  The state is kept. */
DEFO_API defo_status defo_plasticity_set_regions(defo_plasticity *p, int num_sets,
                                                 const defo_plasticity_def *defs,
                                                 const int32_t *set_of);
/* More elements (fracture splitting elements: MMDJ01 §2.5 bisection):
 * num_elems ≥ the current count; element e ≥ the old count is a copy of
 * element parent[e − old count] (an older element) — its per-point state,
 * F_p⁻¹, parameter set and goal.  The force model must be bound again
 * (defo_plasticity_bind) to the rebuilt model. */
DEFO_API defo_status defo_plasticity_grow(defo_plasticity *p, defo_index num_elems,
                                          const defo_index *parent);
DEFO_API int defo_plasticity_num_sets(const defo_plasticity *p);
/* The parameter set of element e. */
DEFO_API int defo_plasticity_set_of(const defo_plasticity *p, defo_index e);
DEFO_API const defo_plasticity_def *defo_plasticity_get_def(const defo_plasticity *p, int set);
/* Change set `set`'s parameters (e.g. heating: a lower yield).  The state
 * is kept (a change of model keeps F_p and resets the rest); max and limit
 * apply to every point at the next update. */
DEFO_API defo_status defo_plasticity_set_def(defo_plasticity *p, int set,
                                             const defo_plasticity_def *def);
/* Make the force model use the plastic parts (again after the model was
 * rebuilt: material or topology change). */
DEFO_API defo_status defo_plasticity_bind(defo_plasticity *p, defo_force_model *fm);
/* One update at positions x with time step dt; the bound force model is
 * told which points changed.  c_creep·dt > 1 is DEFO_ERR_INVALID_ARGUMENT.
 * stats may be NULL. */
DEFO_API defo_status defo_plasticity_update(defo_plasticity *p, defo_force_model *fm,
                                            const double *x, double dt,
                                            defo_plasticity_stats *stats);
/* ITF04 §7 plasticity control: the goal is the shape with node positions
 * goal_x (3 per node of fm's mesh, num_nodes of them): per point the goal
 * plastic part is the stretch of its deformation gradient.  A goal that is
 * flat or inverted at some point is DEFO_ERR_INVALID_ARGUMENT naming the
 * element.  goal_x NULL removes the goal.  Used by multiplicative sets. */
DEFO_API defo_status defo_plasticity_set_goal(defo_plasticity *p, const defo_force_model *fm,
                                              const double *goal_x, defo_index num_nodes);
DEFO_API int defo_plasticity_has_goal(const defo_plasticity *p);
/* Annealing (MTPS08 §5.3, MMDJ01 §2.4): the rest shape becomes the
 * deformation F_commit (9 per point, as defo_force_model_deformation(…, 0,
 * …) gives it before the rest data changes): every point's plastic state is
 * reset (F_p = I, back stress and hardening 0; a shell's plastic bending
 * strains 0: its new rest angles are the current ones) and a goal is
 * carried to the new rest shape (F_goal ← F_goal F_commit⁻¹). */
DEFO_API defo_status defo_plasticity_commit(defo_plasticity *p, const double *F_commit);
/* ‖L_p‖ per element, the largest over its points (num_elems values). */
DEFO_API defo_status defo_plasticity_norms(const defo_plasticity *p, double *out);
/* F_p⁻¹ per point, 9 each (what the force model reads). */
DEFO_API const double *defo_plasticity_inverse(const defo_plasticity *p);
/* Shells: the plastic bending strain of each hinge (*count of them; NULL
 * and 0 before the plasticity is bound to a shell force model). */
DEFO_API const double *defo_plasticity_bending(const defo_plasticity *p, defo_index *count);
/* L_p = log F_p at element e, point q: xx, yy, zz, xy, yz, zx. */
DEFO_API void defo_plasticity_log(const defo_plasticity *p, defo_index e, int q, double out[6]);

/* The whole state (parameter sets, the set of each element, per-point
 * state, goal) as bytes, for checkpoints: a resumed run continues bit for
 * bit.  read checks everything (sizes, parameters, finite values) before it
 * changes anything: DEFO_ERR_PARSE. */
DEFO_API size_t defo_plasticity_state_bytes(const defo_plasticity *p);
DEFO_API void defo_plasticity_write_state(const defo_plasticity *p, void *out);
DEFO_API defo_status defo_plasticity_read_state(defo_plasticity *p, const void *in, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_PLASTICITY_H */
