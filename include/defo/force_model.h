/*
 * defo/force_model.h — the force layer: one hyperelastic kernel and one
 * corotated kernel behind one handle, over any element kind of the element
 * layer (defo/element.h), looping over the quadrature points it gives.
 *
 * Formulations:
 *   INVERTIBLE  ITF04 invertible FEM with any defo material: per point
 *               F = (Σ_a x_a ∇ξN_aᵀ) J⁻¹ = U F̂ Vᵀ (ITF04 §5 signs),
 *               P = U P̂(σ) Vᵀ, f_a = −Σ_q w_q P J⁻ᵀ ∇ξN_a (ITF04 eq. 2 for
 *               tet4).  Tangent K = −∂f/∂x from the dP/dF blocks of TSIF05 §8
 *               (eq. 4), made positive semidefinite per point by clamping
 *               their negative eigenvalues (the definiteness fix); damping
 *               ITF04 §6.2 in the rotated frame.
 *   COROTATED   MG04 §2.3–2.4 warped stiffness for tet4 (one rotation per
 *               element), MTPS08 §4.3 for tet10 (one rotation per quadrature
 *               point), with MTPS08 §4.4 lazy updates per point:
 *               R = polar(F), ε = sym(Rᵀ F) − I,
 *               σ = λ tr ε I + 2μ ε, f_a = −Σ_q w_q R σ J⁻ᵀ ∇ξN_a and
 *               K' = Σ_q w_q R Ke,q Rᵀ.  Damping: D = τ K' (τ the material's
 *               damping time: the same stiffness-proportional damping as the
 *               ITF04 §6.2 moduli μ_d = τμ, λ_d = τλ).
 *
 * Shells (tri3 meshes, ITF04 §8; src/force/kernel_shell.c): F is 3×2, its
 * diagonal frame F = U diag(σ1, σ2) Vᵀ with σ2 ≥ 0 (a shell cannot invert,
 * ITF04 §8; the neighbours' normals orient a flat triangle), the material in
 * plane stress (defo_material_eval_plane) times the thickness, and bending
 * across the hinges (interior edges) from their dihedral angles with rest
 * angles from the rest mesh: the Kirchhoff plate energy A D/2 [(1 − ν)
 * tr(S²) + ν (tr S)²] of each triangle's shape operator S from its three
 * hinges, D = E h³/(12(1 − ν²)).  Forces −dE/dx; the tangent is exact,
 * indefinite where the sheet buckles (definiteness_fix does not apply:
 * Newton's CG stops at negative curvature).  INVERTIBLE only.
 *
 * Fibres (ITF04 §6.1, TSIF05 §11): a material with a fibre term reads the
 * rest data's fibre directions (defo_element_rest_set_fibres; required) and
 * the activation per element (defo_force_model_set_activation); INVERTIBLE
 * only — COROTATED refuses it (its stress is linear in a lagged rotated
 * strain; the fibre stress is nonlinear in |F a|).
 * Plasticity (defo/plasticity.h): with a plastic part F_p per point both
 * formulations evaluate the elastic part F_e = F F_p⁻¹ (ITF04 §6.3) in
 * place of F — J⁻¹ above becomes J⁻¹ F_p⁻¹ — so an element rests where
 * F = R F_p; energies stay per rest volume.
 *
 * One closed form serves every isotropic block: with c_a = M ∇ξN_a,
 *   B_ab = w (λ c_a c_bᵀ + μ c_b c_aᵀ + μ (c_a·c_b) I),
 * M = R J⁻ᵀ for the corotated stiffness and damping and M = U Vᵀ J⁻ᵀ (the
 * polar rotation of F) for the invertible damping.
 *
 * Threads: per-element work into per-element buffers, gathered per node
 * (and per matrix block) in a fixed order: bitwise identical results for any
 * thread count.  No allocation after create except the matrix, allocated by
 * the first assemble.  Units SI.
 */
#ifndef DEFO_FORCE_MODEL_H
#define DEFO_FORCE_MODEL_H

#include "defo/base.h"
#include "defo/comm.h"
#include "defo/element.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum defo_formulation {
    DEFO_FORMULATION_INVERTIBLE = 0,
    DEFO_FORMULATION_COROTATED = 1
} defo_formulation;

/* "invertible", "corotated"; "unknown" otherwise. */
DEFO_API const char *defo_formulation_name(defo_formulation f);
DEFO_API defo_status defo_formulation_from_name(const char *name, defo_formulation *out);

typedef struct defo_force_model_def {
    defo_formulation formulation; /* default INVERTIBLE */
    /* INVERTIBLE: TSIF05 §8 — clamp the negative eigenvalues of the dP/dF
     * blocks in the tangent (never changes the forces).  Default 1. */
    int definiteness_fix;
    /* INVERTIBLE: TSIF05 §9 constant extrapolation — ψ, P̂ and dP/dF at σ
     * clamped to the material's compression threshold (an internal
     * DEFO_INVERSION_CLAMP copy of the material).  Default 0: the material's
     * own inversion extension. */
    int constant_extrapolation;
    /* COROTATED: 1 = R = I always (plain linear FEM, MG04 §2.1); default 0. */
    int linear;
    /* COROTATED: recompute a point's rotation once it is this many updates
     * old; 1 (default) = every update; 0 = only by lazy_tolerance. */
    int rotation_interval;
    /* COROTATED, MTPS08 §4.4: recompute early when ‖F − F_last‖∞ (max row
     * sum) exceeds this at the point; 0 (default) = off. */
    double lazy_tolerance;
} defo_force_model_def;

DEFO_API defo_force_model_def defo_default_force_model_def(void);

typedef struct defo_force_model defo_force_model;

/* Borrows mesh (connectivity, rest positions), rest (its rest data) and
 * material: they must outlive the model and keep their topology (fracture
 * makes a new model).  rest must come from defo_element_rest_create(mesh). */
DEFO_API defo_status defo_force_model_create(const defo_mesh *mesh, const defo_element_rest *rest,
                                             const defo_material *material,
                                             const defo_force_model_def *def,
                                             defo_force_model **out);
DEFO_API void defo_force_model_destroy(defo_force_model *fm);
DEFO_API defo_formulation defo_force_model_formulation(const defo_force_model *fm);

/* Evaluation flags. */
enum {
    /* keep what tangent products and assembly need (INVERTIBLE: the dP/dF
     * blocks, projected when definiteness_fix) */
    DEFO_EVAL_TANGENT = 1u << 0,
    /* COROTATED: keep the current rotations (the MG04 §6 linearisation taken
     * at the start of a step) instead of updating them at x */
    DEFO_EVAL_KEEP_ROTATIONS = 1u << 1,
    /* COROTATED: renew the rotations at x (the lazy rule applies) and stop:
     * no forces, energy, inverted count nor stresses, so force and energy
     * must be NULL; the next evaluation with DEFO_EVAL_KEEP_ROTATIONS takes
     * them (the implicit step's rotations of its predicted end).  Other
     * formulations refuse it. */
    DEFO_EVAL_ROTATIONS_ONLY = 1u << 2,
    /* with DEFO_EVAL_TANGENT: the exact dP/dF blocks even under
     * definiteness_fix (a Newton solve near its solution, where the
     * projected tangent converges only linearly: defo/solver.h) */
    DEFO_EVAL_EXACT_TANGENT = 1u << 3
};

/* Elastic forces at positions x (3 per node): force (3 per node,
 * overwritten; may be NULL) and energy (J; may be NULL); the linearisation
 * (rotations, SVDs, tangent data) becomes that of x.  A non-finite position
 * or result is DEFO_ERR_NUMERICAL naming the element; the outputs are then
 * unspecified (evaluate a good state again before using the model). */
DEFO_API defo_status defo_force_model_evaluate(defo_force_model *fm, const double *x,
                                               unsigned flags, double *force, double *energy);

/* The next evaluation recomputes everything it may otherwise keep from an
 * earlier one (COROTATED: every lazily kept rotation, MTPS08 §4.4), as after
 * creation.  Returns 1 when evaluations may depend on earlier ones (lazy
 * rotations).  Lazily kept rotations carry from frame to frame: checkpoints
 * hold them (defo_force_model_save_history). */
DEFO_API int defo_force_model_forget_history(defo_force_model *fm);
/* 1 when rotations are kept from one evaluation to the next (COROTATED with
 * rotation_interval != 1: MTPS08 §4.4 lazy updates). */
DEFO_API int defo_force_model_keeps_rotations(const defo_force_model *fm);
/* A count of the evaluations that recomputed a rotation.  While it stands
 * the rotations, hence the corotated matrix K' (and a factorisation of
 * k K' + m M), are those of the last such evaluation. */
DEFO_API uint64_t defo_force_model_rotation_serial(const defo_force_model *fm);
/* The kept rotations as a record for checkpoints, so that a run resumed at
 * a frame boundary continues with the rotations an uninterrupted run keeps
 * (bit for bit): its size (0 when none are kept), a copy into out (that
 * many bytes), and the restore (DEFO_ERR_PARSE for a record of another
 * size or with non-finite entries, the model unchanged). */
DEFO_API size_t defo_force_model_history_bytes(const defo_force_model *fm);
DEFO_API void defo_force_model_save_history(const defo_force_model *fm, void *out);
DEFO_API defo_status defo_force_model_restore_history(defo_force_model *fm, const void *in,
                                                      size_t size);

/* Σ ψ_e [J] over the listed elements at positions x (each element's own
 * energy, plastic strain included), summed in list order; nothing of the
 * model's state changes.  INVERTIBLE only (COROTATED energies depend on the
 * kept rotations): DEFO_ERR_UNSUPPORTED.  Used to compare states that differ
 * on a few elements (the quasistatic predictor's check). */
DEFO_API defo_status defo_force_model_energy_of(const defo_force_model *fm, const double *x,
                                                const defo_index *elems, defo_index count,
                                                double *energy);

/* y = K d (3 per node each) with K = −∂f/∂x at the last evaluation
 * (INVERTIBLE: needs DEFO_EVAL_TANGENT there), matrix-free. */
DEFO_API void defo_force_model_tangent_apply(defo_force_model *fm, const double *d, double *y);
/* Diagonal 3×3 blocks of K, 9 per node (row-major). */
DEFO_API void defo_force_model_tangent_diagonal(defo_force_model *fm, double *blocks);

/* Damping (top of the file): 1 when the material damps. */
DEFO_API int defo_force_model_has_damping(const defo_force_model *fm);
/* y = D v with the rotations of the last evaluation (symmetric PSD). */
DEFO_API void defo_force_model_damping_apply(defo_force_model *fm, const double *v, double *y);
/* Diagonal 3×3 blocks of D, 9 per node. */
DEFO_API void defo_force_model_damping_diagonal(defo_force_model *fm, double *blocks);

/* The model's matrix: A = k·K + c·D + m·diag(mass ⊗ I₃) at the last
 * evaluation (mass: one value per node, or NULL), assembled without element
 * buffers, exactly symmetric, deterministic.  The pattern (nodes sharing an
 * element) is built by the first call.  Returns NULL when out of memory
 * (message set).  The matrix stays the model's; callers may add to its
 * values (contact blocks) until the next assemble. */
DEFO_API defo_bcsr *defo_force_model_assemble(defo_force_model *fm, double k, double c,
                                              const double *mass, double m);

/* Elements with det F ≤ 0 at some quadrature point at the last evaluation
 * (shells: flat triangles, σ2 ≤ 1e-12 σ1). */
DEFO_API defo_index defo_force_model_count_inverted(const defo_force_model *fm);
/* The same at positions x (3 per node) without an evaluation: det F per
 * point only (no SVD, no stress), the linearisation untouched.  A
 * non-finite F counts as inverted. */
DEFO_API defo_index defo_force_model_count_inverted_at(const defo_force_model *fm, const double *x);
/* Stable explicit step scale at rest [s]: min over elements of the
 * eigenvalue length ℓ (defo_element_rest_eigen_length) over c √r₀, with
 * c = sqrt((λ + 2μ)/ρ) the dilatational wave speed and r₀ the rest tangent
 * bound (3λ + 2μ for the isotropic models) over λ + 2μ.  Half of it is the
 * element eigenvalue inequality's bound of the explicit stability limit
 * 2/ω_max of the lumped-mass system at rest: Newmark's default cfl ½ steps
 * exactly there, below the true limit (tests/test_force_model.c). */
DEFO_API double defo_force_model_wave_time(const defo_force_model *fm);
/* The same at the stiffness of the last evaluation, once tracked
 * (defo_force_model_track_stable_time; wave_time until then): min over
 * elements of ℓ_e / (c √r_e), r_e the largest Gershgorin bound of dP/dF's
 * eigenvalues at its points — never below the rest bound: a stretched,
 * softened element can stiffen again within a step — over λ + 2μ.  So at
 * cfl ½ every element's frequency bound, hence the body's, allows the step.
 * Uniformly squashed to σ = 0.5 a neo-Hookean element has r ≈ 10 (r₀ = 1.86
 * at ν = 0.3): the stable time falls to √(r₀/r) ≈ 0.43 of the wave time.
 * Bounds come from the rough (J, σ_min) form where it cannot be the minimum
 * (material.h), so tracking costs an evaluation a few percent; COROTATED
 * keeps its rest stiffness (= wave_time). */
DEFO_API double defo_force_model_stable_time(const defo_force_model *fm);
/* From the next evaluation on, keep the stable time (its tangent bounds
 * cost a forces-only pass about a third: 26 -> 34 ns an element on the
 * 20 K-tet bunny, four-wide, one thread; explicit steppers ask for it, the
 * implicit ones do not).  Returns 1 when tracking was off:
 * the last evaluation's stable time is then the rest one, re-evaluate. */
DEFO_API int defo_force_model_track_stable_time(defo_force_model *fm);
DEFO_API size_t defo_force_model_bytes(const defo_force_model *fm);
/* Quadrature points per element. */
DEFO_API int defo_force_model_points(const defo_force_model *fm);
/* The mesh the model was made with (borrowed). */
DEFO_API const defo_mesh *defo_force_model_mesh(const defo_force_model *fm);

/* ------------------------------------------------------- derived fields */
/* What a person looks at, at positions x (the model is evaluated there):
 * per element (cell data; tet10: the weighted mean over its points) and per
 * node (point data: each element's point values extrapolated to its nodes —
 * linear fit through the 4 points for tet10, the constant for tet4 — and
 * averaged over the elements of the node with their volumes).  Cauchy stress
 * σ = P Fᵀ / J (INVERTIBLE; J held at ≥ 0.01 where the element is flat or
 * inverted, so the value stays finite with the sign of the Kirchhoff stress)
 * or R σ Rᵀ (COROTATED).  Any array may be NULL. */
typedef struct defo_force_fields {
    double *J;                  /* det F, per element */
    double *von_mises;          /* [Pa], per element */
    double *max_principal;      /* largest principal Cauchy stress [Pa], per element */
    double *node_von_mises;     /* [Pa], per node */
    double *node_max_principal; /* [Pa], per node */
    defo_index inverted;        /* out: elements with det F ≤ 0 at some point */
    double min_J;               /* out: smallest det F over all points */
    double
        *min_principal; /* smallest principal Cauchy stress [Pa] (compression < 0), per element */
} defo_force_fields;
DEFO_API defo_status defo_force_model_fields(defo_force_model *fm, const double *x,
                                             defo_force_fields *out);

/* ------------------------------------------------ distributed evaluation
 * A model over one process's local elements of a distributed run
 * (defo/partition.h: the elements touching the nodes it owns, so the force
 * and the matrix row of every owned node are complete and in the serial
 * summation order).  With a share set, every call below is collective and
 * its node outputs are whole on every process: evaluate's forces, the
 * tangent and damping products and diagonal blocks are completed (each
 * node's value becomes the one its owner computed); the energy, the
 * inverted count and the stable time are those of the whole body (the
 * counted elements' sums added over the processes in rank order, minima
 * taken over them); energy_of counts the listed elements this process
 * counts; a failure on one process (an element's NaN) is every process's
 * error, with its message (defo_comm_agree).  The assembled matrix stays
 * local: only the rows of owned nodes are whole (the distributed solver
 * backend reads those). */
typedef struct defo_force_share {
    const defo_comm *comm;
    /* one flag per element of the model: 1 for those whose energy and
     * statistics this process counts (every element of the body counted by
     * exactly one process) */
    const unsigned char *counted;
    /* v (width values per node: 3 or 9) made whole: every node's value
     * replaced by its owner's */
    defo_status (*complete)(void *ctx, double *v, int width);
    void *ctx;
} defo_force_share;
/* Make fm a process's part of a distributed evaluation (share copied; its
 * arrays borrowed: they must outlive the model); NULL makes it serial
 * again.  Collective (the wave time becomes the body's). */
DEFO_API defo_status defo_force_model_set_share(defo_force_model *fm,
                                                const defo_force_share *share);

/* ------------------------------------------------- plasticity, fracture */
/* F at every point at positions x, 9 per (element, point), row-major,
 * element-major: the whole deformation H J⁻¹ (elastic 0) or its elastic part
 * F_e = F F_p⁻¹ (elastic 1; F itself without a plastic part).  A non-finite
 * entry is DEFO_ERR_NUMERICAL naming the element.  Touches no state.
 * A tri3 shell's 3×2 F is given as diag(F₂, 1) with F₂ (2×2) its in-plane
 * part in the triangle's 2-D rest frame (F₂ᵀF₂ = FᵀF; the rotation into
 * space dropped: the stretch is what plasticity reads). */
DEFO_API defo_status defo_force_model_deformation(const defo_force_model *fm, const double *x,
                                                  int elastic, double *F);
/* The plastic part (ITF04 §6.3): F_p⁻¹ per point, 9 each (row-major,
 * element-major; borrowed: it must outlive its use; NULL = none).  Every
 * evaluation from now on uses F_e = F F_p⁻¹ (top of the file); the stable
 * times follow F_p's conditioning.  A non-finite entry is
 * DEFO_ERR_INVALID_ARGUMENT.  The plasticity layer keeps det F_p > 0.
 * Shells (tri3): the in-plane plastic part is the 2×2 block (rows and
 * columns 0, 1) in the triangle's rest frame; the rest is ignored. */
DEFO_API defo_status defo_force_model_set_plastic(defo_force_model *fm, const double *fp_inv);
/* A material per element (material regions): materials[k] (count ≥ 1,
 * borrowed like the one given to create, which they replace) and the
 * material of each element (material_of: num_elems values in [0, count),
 * borrowed; may be NULL when count is 1).  Every kernel evaluates an
 * element with its own material; damping and stable times follow. */
DEFO_API defo_status defo_force_model_set_materials(defo_force_model *fm, int count,
                                                    const defo_material *const *materials,
                                                    const int32_t *material_of);
/* Each element's density over the material's (num_elems values > 0,
 * borrowed; NULL = 1): the stable times follow (an annealed body's elements
 * keep their masses as their rest volumes change). */
DEFO_API defo_status defo_force_model_set_density_scale(defo_force_model *fm, const double *scale);
/* The array given to defo_force_model_set_plastic changed at the points
 * flagged in `changed` (one byte per (element, point); NULL: anywhere). */
DEFO_API void defo_force_model_plastic_changed(defo_force_model *fm, const unsigned char *changed);
/* Shear modulus μ [Pa] of element e's material. */
DEFO_API double defo_force_model_shear_modulus(const defo_force_model *fm, defo_index e);
/* The plane-stress Lamé constant λ* = 2μλ/(λ + 2μ) [Pa] of element e's
 * material (a shell's in-plane stress 2μ ε + λ* tr ε I at small strain,
 * the thickness stretch condensed). */
DEFO_API double defo_force_model_plane_lambda(const defo_force_model *fm, defo_index e);
/* Activation α ∈ [0, 1] per element of the fibre term (ITF04 §6.1, the
 * active force–length curve's factor; defo/material.h), borrowed (the
 * caller keeps it alive and may change it between evaluations: the next
 * evaluation reads it); NULL: 0 everywhere.  Ignored by materials without
 * an active term. */
DEFO_API void defo_force_model_set_activation(defo_force_model *fm, const double *activation);
/* Stress tensor [Pa] at one point (element e, point q) of the last
 * evaluation in world axes, symmetric 3×3 row-major: the Cauchy stress
 * (INVERTIBLE) or R σ Rᵀ with the corotated stress σ = λ tr ε I + 2μ ε
 * (COROTATED, MG04 §4's fracture stress). */
DEFO_API void defo_force_model_stress(const defo_force_model *fm, defo_index e, int q,
                                      double sigma[9]);

/* ------------------------------------------------------------ shells */
/* 1 for a tri3 shell model. */
DEFO_API int defo_force_model_is_shell(const defo_force_model *fm);
/* Hinges of a shell model (0 for tets): 4 nodes each (the edge a b as its
 * first triangle runs it, the opposite corners c d; defo_shell_topology). */
DEFO_API defo_index defo_force_model_num_hinges(const defo_force_model *fm);
DEFO_API const defo_index *defo_force_model_hinges(const defo_force_model *fm);
/* The two triangles of each hinge (2 per hinge; NULL for tets). */
DEFO_API const defo_index *defo_force_model_hinge_triangles(const defo_force_model *fm);
/* A hinge's angle is continuous: atan2's value in (−π, π] is taken on the
 * branch (whole turns added) nearest the angle the hinge had at the last
 * call of this function — the world calls it at each step's start — so a
 * hinge folding through ±π keeps a continuous angle and energy.  The
 * branches are the model's history record (checkpoints keep them).
 * A shell's damping is linearised at the same call: its frames and hinge
 * gradients are those of x for the whole step, so the damping force of a
 * step is linear in the velocity and the implicit step's potential exact. */
DEFO_API void defo_force_model_track_hinges(defo_force_model *fm, const double *x);
/* 1 when the damping depends on the step's start (a shell with damping;
 * defo_force_model_track_hinges): a matrix holding it must not outlive the
 * step. */
DEFO_API int defo_force_model_damping_of_step(const defo_force_model *fm);
/* Dihedral angles θ of the hinges at x (NULL: rest) [rad] (theta, may be
 * NULL; NaN at a hinge next to a degenerate triangle) and the rest angles in
 * use (rest, may be NULL: the rest mesh's plus the plastic part). */
DEFO_API defo_status defo_force_model_hinge_angles(defo_force_model *fm, const double *x,
                                                   double *theta, double *rest);
/* The bending strain of every hinge at x: the strain of the shell's outer
 * fibre h κ / 2, with the hinge's curvature κ = (θ − θ_rest) |e| / (A1 + A2)
 * (θ_rest of the rest mesh, A1 A2 the two triangles' areas); NaN at a hinge
 * next to a degenerate triangle.  Plastic bending (ITF04 §8: flowing the
 * rest angles) keeps a plastic part of this strain per hinge: */
DEFO_API defo_status defo_force_model_bending_strain(defo_force_model *fm, const double *x,
                                                     double *strain);
/* The plastic bending strains, one per hinge (borrowed; NULL = none): the
 * rest angle of hinge h becomes θ_rest + ε_p 2(A1 + A2)/(h |e|). */
DEFO_API void defo_force_model_set_plastic_bending(defo_force_model *fm, const double *strain);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_FORCE_MODEL_H */
