/*
 * defo/quasistatic.h — robust quasistatic Newton solver (TSIF05).
 *
 * Each frame solves the equilibrium f(x, t) = f_elastic(x) + f_ext +
 * f_contact(x, t) = 0 for the free nodes by Newton–Raphson (TSIF05 §3–4),
 * starting from the previous equilibrium, with the prescribed nodes ("bones",
 * TSIF05 §11) placed by their scripted rigid transforms at time t.
 *
 * Robustness (the point of TSIF05):
 *   - the element stiffness is made positive semidefinite by clamping the
 *     negative eigenvalues of the diagonal-frame dP/dF blocks (TSIF05 §7–8),
 *     so CG never sees negative curvature (counted in the statistics);
 *   - ψ, P̂ and dP/dF are evaluated at σ clamped to the material's
 *     compression threshold (TSIF05 §9 constant extrapolation; switchable to
 *     the material's own extension);
 *   - a backtracking line search on the total potential energy, accepting a
 *     decrease of the residual norm where the extrapolated energy is flat
 *     (beyond the paper, switchable off);
 *   - steps capped at the larger of the rest and current bounding-box
 *     diagonals.
 * Non-convergence is data (defo_quasistatic_stats.reason), never a crash.
 *
 * Speed (none of it changes the answer beyond the tolerance): PCG with a
 * factorised preconditioner reused over iterations and frames (precond,
 * precond_max_age), a forcing rule for the inexact Newton steps (forcing),
 * and a start extrapolated from the last equilibria (predictor).
 *
 * Convergence: max over free nodes of |f_i| ≤ tolerance · f_ref with the
 * REFERENCE FORCE
 *     f_ref = max_i |f_ext,i| + (2μ + λ) · h²,
 * h the mean rest edge length: (2μ+λ)h² is the nodal force of an element
 * strained by 100 %, so tolerance is a strain-like number, independent of
 * units and resolution-aware.
 *
 * Units: SI.  Ownership: the mesh and material are borrowed (must outlive the
 * solver); colliders and grids added as contact sources are borrowed too.
 */
#ifndef DEFO_QUASISTATIC_H
#define DEFO_QUASISTATIC_H

#include "defo/base.h"
#include "defo/collision.h"
#include "defo/contact.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/solver.h"
#include "defo/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Regions (defo_region, defo_region_nodes): defo/mesh.h. */

/* ------------------------------------------------------------ definition */
typedef enum defo_qs_linear {
    DEFO_QS_LINEAR_AUTO = 0,      /* assembled (measured faster: bench_quasistatic) */
    DEFO_QS_LINEAR_ASSEMBLED = 1, /* 3×3-block CSR stiffness, assembled per Newton step */
    DEFO_QS_LINEAR_MATRIX_FREE = 2 /* δf = −Σ_e vol U{dP/dF : Uᵀ δF V}Vᵀ… per CG product */
} defo_qs_linear;

/* Linear solver of the Newton step K δx = f (free nodes; bones decoupled). */
typedef enum defo_qs_solver {
    DEFO_QS_SOLVER_PCG = 0, /* inexact-Newton PCG (default) */
    /* Sparse Cholesky (CHOLMOD, defo/cholesky.h) of the assembled K (contact
     * blocks included): exact steps; the symbolic analysis is done once per
     * solver (the pattern never changes) and reused over Newton iterations
     * and frames.  A factorisation that fails (K not positive definite, e.g.
     * definiteness_fix = 0 near inversion) falls back to PCG for that
     * iteration (stats.cholesky_fallbacks).  Needs the assembled matrix
     * (linear AUTO or ASSEMBLED) and a CHOLMOD build: otherwise create
     * returns DEFO_ERR_UNSUPPORTED (defo_cholesky_available()). */
    DEFO_QS_SOLVER_CHOLESKY = 1
} defo_qs_solver;

/* Forcing term η of the inexact Newton step: CG stops when the relative
 * residual of K δx = f is ≤ η.  Either way η is clamped to
 * [cg_min_tolerance, cg_max_tolerance] and never made smaller than
 * 0.5·tolerance·f_ref/|f|∞ (solving further than the Newton target is
 * wasted, Kelley 1995 §6.3). */
typedef enum defo_qs_forcing {
    /* η = 0.5·tolerance·f_ref/|f|∞ (clamped): every step solved at once to
     * the accuracy the Newton target needs (the rule before issue 5); a
     * frame usually ends well below the tolerance */
    DEFO_QS_FORCING_TARGET = 0,
    /* Eisenstat–Walker choice 2 (SIAM J. Sci. Comput. 17, 1996):
     * η_k = 0.9 (|f_k|₂/|f_{k−1}|₂)², safeguarded by 0.9 η_{k−1}² when that
     * is > 0.1; η_0 = cg_max_tolerance, or the TARGET rule when the frame
     * starts from the predictor (near the answer: one accurate step).  Loose
     * steps while the residual is large: fewer CG iterations, sometimes one
     * more Newton iteration, and a frame that ends just below the tolerance */
    DEFO_QS_FORCING_EISENSTAT_WALKER = 1
} defo_qs_forcing;

/* Starting point of a frame's Newton iteration. */
typedef enum defo_qs_predictor {
    DEFO_QS_PREDICTOR_NONE = 0, /* the x passed in (the previous equilibrium) */
    /* When x is the equilibrium this solver returned last and the ones
     * before it are known (converged frames at increasing times, none of
     * add_bone/add_* in between): the free nodes are extrapolated to t by the
     * Lagrange polynomial through the last 2 (LINEAR), 3 (QUADRATIC) or 4
     * (CUBIC) equilibria, kept only if its total energy (bones at t) is
     * below that of x.  Only the start changes: the iteration and its
     * stopping test are the same. */
    DEFO_QS_PREDICTOR_LINEAR = 1,
    DEFO_QS_PREDICTOR_QUADRATIC = 2,
    DEFO_QS_PREDICTOR_CUBIC = 3
} defo_qs_predictor;

typedef struct defo_quasistatic_def {
    double tolerance;     /* relative to f_ref (top of file); default 1e-6, in (0, 1) */
    int max_iterations;   /* Newton iterations per frame, default 100, >= 1 */
    int definiteness_fix; /* TSIF05 §8 clamping; default 1 (0 reproduces "no fix") */
    int line_search;      /* energy backtracking; default 1 (0 = full Newton steps) */
    /* TSIF05 §9 constant extrapolation: ψ, P̂ and dP/dF evaluated at σ
     * clamped to max(σ, c), c the material's compression threshold (an
     * internal DEFO_INVERSION_CLAMP copy of the material).  Default 1.  0:
     * the material's own extension with its exact dP/dF. */
    int constant_extrapolation;
    defo_qs_linear linear; /* default AUTO */
    /* PCG preconditioner: DEFO_PRECOND_JACOBI, _BLOCK_JACOBI (both rebuilt
     * every Newton iteration), _BLOCK_IC0 or _TWO_LEVEL (defo/sparse.h, of
     * the assembled K with the contact blocks, bones decoupled; lagged, see
     * precond_max_age; with linear MATRIX_FREE, which has no assembled K,
     * block Jacobi stands in for them).  Default TWO_LEVEL (fastest
     * measured: bench_quasistatic). */
    defo_precond_kind precond;
    /* BLOCK_IC0 / TWO_LEVEL: a factorisation is reused for later Newton
     * iterations and frames (a factor of a recent K still preconditions the
     * current one) until it has served this many linear solves, or until a
     * solve needs more than 2× the CG iterations per decade of residual
     * reduction that the first solve with it needed.  1 = factor every
     * iteration.  Default 8, >= 1. */
    int precond_max_age;
    int max_cg_iterations; /* per Newton iteration, default 2000 */
    /* Inexact Newton forcing (defo_qs_forcing above) between
     * cg_min_tolerance and cg_max_tolerance: defaults 1e-10 and 0.1. */
    double cg_max_tolerance;
    double cg_min_tolerance;
    double gravity[3];            /* [m/s²], body force ρg lumped to the nodes; default 0 */
    defo_qs_solver linear_solver; /* default PCG */
    defo_qs_forcing forcing;      /* default EISENSTAT_WALKER */
    defo_qs_predictor predictor;  /* default CUBIC */
    /* 1: a frame's result depends only on t, the x passed in and the setup
     * (no factorisation reused from an earlier frame: it is refreshed at
     * each frame's first iteration; no predictor), so a simulation resumed
     * from a checkpoint of (t, x) continues bit for bit.  Default 0. */
    int frame_local;
} defo_quasistatic_def;

DEFO_API defo_quasistatic_def defo_default_quasistatic_def(void);

/* ------------------------------------------------------------ statistics */
typedef enum defo_qs_reason {
    DEFO_QS_CONVERGED = 0,
    DEFO_QS_MAX_ITERATIONS = 1, /* max_iterations reached */
    DEFO_QS_STALLED = 2,  /* no step along the Newton direction reduced the energy or residual */
    DEFO_QS_NUMERICAL = 3 /* a non-finite value appeared; x is the last finite iterate */
} defo_qs_reason;

DEFO_API const char *defo_qs_reason_name(defo_qs_reason reason);

typedef struct defo_quasistatic_stats {
    int newton_iterations;
    int cg_iterations;      /* total over the frame */
    int negative_curvature; /* CG directions with pᵀKp ≤ 0 (0 with the fix) */
    int line_search_backtracks;
    defo_qs_reason reason;
    double residual;             /* max_i |f_i| over free nodes at the end [N] */
    double reference_force;      /* f_ref [N] */
    double initial_residual;     /* before the first iteration [N] */
    double energy;               /* total potential energy at the end [J] */
    defo_index inverted;         /* elements with σ3 ≤ 0 at the end */
    defo_index max_inverted;     /* largest count seen at any iterate of the frame */
    defo_index contacts;         /* penetrating (node, source) pairs at the end */
    defo_index clamped_elements; /* elements whose dP/dF was modified by the fix (last iterate) */
    double seconds;              /* wall time of the frame */
    /* DEFO_QS_SOLVER_CHOLESKY only (0 otherwise): */
    int cholesky_analyses;       /* symbolic analyses done in this frame (1 in the first) */
    int cholesky_factorizations; /* successful numerical factorisations */
    int cholesky_fallbacks;      /* iterations solved by PCG because the factorisation failed */
    /* BLOCK_IC0 / TWO_LEVEL preconditioner (0 otherwise): */
    int precond_setups;    /* factorisations in this frame (the rest reused a lagged one) */
    int precond_fallbacks; /* iterations preconditioned by block Jacobi because the
                              factorisation failed (a singular diagonal block) */
    int predicted;         /* 1 when the frame started from the extrapolated guess */
    double linear_seconds; /* wall time in the linear solves, assembly and preconditioner
                              setup included */
} defo_quasistatic_stats;

/* ------------------------------------------------------------ the solver */
typedef struct defo_quasistatic defo_quasistatic;

/* tet4 meshes only (DEFO_ERR_UNSUPPORTED otherwise); rest data computed here
 * (an inverted or flat rest element is DEFO_ERR_INVALID_MESH). */
DEFO_API defo_status defo_quasistatic_create(const defo_mesh *mesh, const defo_material *material,
                                             const defo_quasistatic_def *def,
                                             defo_quasistatic **out);
DEFO_API void defo_quasistatic_destroy(defo_quasistatic *qs);

/* Prescribe the nodes of region to follow a rigid motion of their rest
 * positions X: x(t) = R(t)(X − pivot) + pivot + velocity·t (defo_motion_def
 * of defo/collision.h; NULL = fixed at rest).  *bone (may be NULL) receives
 * the bone's index.  A node claimed by several bones follows the last.  An
 * empty region is DEFO_ERR_INVALID_ARGUMENT. */
DEFO_API defo_status defo_quasistatic_add_bone(defo_quasistatic *qs, const defo_region *region,
                                               const defo_motion_def *motion, int *bone);
/* Same with an explicit node list (copied). */
DEFO_API defo_status defo_quasistatic_add_bone_nodes(defo_quasistatic *qs, const defo_index *nodes,
                                                     defo_index count,
                                                     const defo_motion_def *motion, int *bone);
/* Drive bone by an explicit transform x = R X + T from now on (R row-major
 * rotation; a skeleton's animation).  Replaces its scripted motion. */
DEFO_API defo_status defo_quasistatic_set_bone_transform(defo_quasistatic *qs, int bone,
                                                         const double R[9], const double T[3]);

/* Dead loads (added to f_ext).  force: per node of the region [N]. */
DEFO_API defo_status defo_quasistatic_add_node_force(defo_quasistatic *qs,
                                                     const defo_region *region,
                                                     const double force[3]);
/* Traction [Pa] on the boundary faces whose three nodes are all in region,
 * consistently distributed for linear triangles: area/3 per node.  *area
 * (may be NULL) receives the loaded area [m²]. */
DEFO_API defo_status defo_quasistatic_add_traction(defo_quasistatic *qs, const defo_region *region,
                                                   const double traction[3], double *area);
/* Any dead-load vector f [N] (3 per node) added to f_ext. */
DEFO_API defo_status defo_quasistatic_add_load(defo_quasistatic *qs, const double *f);
/* Penalty contact source (copied; its collider/grid is borrowed). */
DEFO_API defo_status defo_quasistatic_add_contact(defo_quasistatic *qs,
                                                  const defo_contact_source *source);
/* A default penalty stiffness for this mesh [N/m]: 10 (2μ+λ) h. */
DEFO_API double defo_quasistatic_default_penalty(const defo_quasistatic *qs);
/* f_ref of the top of the file [N]. */
DEFO_API double defo_quasistatic_reference_force(const defo_quasistatic *qs);

/* Solve the frame at time t.  x (3 per node) holds the starting guess (the
 * previous equilibrium) on input and the result on output; prescribed nodes
 * are overwritten with their positions at t.  When x is bitwise the result
 * this solver returned last, the predictor may start from an extrapolation
 * instead (defo_qs_predictor).  Returns DEFO_OK when
 * converged, DEFO_WARN_NOT_CONVERGED (stats->reason says why; x is the last
 * iterate, finite), or an error (bad arguments, DEFO_ERR_NUMERICAL: x is the
 * last finite iterate).  stats may be NULL. */
DEFO_API defo_status defo_quasistatic_solve(defo_quasistatic *qs, double t, double *x,
                                            defo_quasistatic_stats *stats);

/* Lower-level access (tests, benchmarks, other integrators): evaluate at x
 * (prescribed nodes NOT moved) the total force (3n, may be NULL: elastic +
 * external + contact at time t) and the total energy (may be NULL), and keep
 * the linearisation at x for the products below. */
DEFO_API defo_status defo_quasistatic_evaluate(defo_quasistatic *qs, double t, const double *x,
                                               double *force, double *energy);
/* y = K d with K = −∂f/∂x at the last evaluation (elastic part made PSD when
 * definiteness_fix is on; contact part included), without constraints. */
DEFO_API void defo_quasistatic_apply_stiffness(defo_quasistatic *qs, const double *d, double *y);
/* The assembled stiffness of the last evaluation (assembles on demand).
 * Borrowed: valid until the next evaluation. */
DEFO_API const defo_bcsr *defo_quasistatic_stiffness(defo_quasistatic *qs);
/* Bytes held by the solver (per-element data, matrix, vectors). */
DEFO_API size_t defo_quasistatic_bytes(const defo_quasistatic *qs);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_QUASISTATIC_H */
