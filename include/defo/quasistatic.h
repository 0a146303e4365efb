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
 * The Newton iteration, its line search and its linear solves are the
 * shared ones of defo/solver.h (defo_newton, defo_linear_solver).
 *
 * Speed (none of it changes the answer beyond the tolerance): PCG with a
 * factorised preconditioner reused over iterations and frames
 * (newton.linear.precond, its lag policy), a forcing rule for the inexact
 * Newton steps (newton.forcing), and a start extrapolated from the last
 * equilibria (predictor).
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
#include "defo/geometry.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/solver.h"
#include "defo/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Regions (defo_region, defo_region_nodes) and motions (defo_motion_def):
 * defo/geometry.h. */

/* ------------------------------------------------------------ definition */
typedef enum defo_qs_linear {
    DEFO_QS_LINEAR_AUTO = 0,      /* assembled (measured faster: bench_quasistatic) */
    DEFO_QS_LINEAR_ASSEMBLED = 1, /* 3×3-block CSR stiffness, assembled per Newton step */
    DEFO_QS_LINEAR_MATRIX_FREE = 2 /* δf = −Σ_e vol U{dP/dF : Uᵀ δF V}Vᵀ… per CG product */
} defo_qs_linear;

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
    int definiteness_fix; /* TSIF05 §8 clamping; default 1 (0 reproduces "no fix") */
    /* TSIF05 §9 constant extrapolation: ψ, P̂ and dP/dF evaluated at σ
     * clamped to max(σ, c), c the material's compression threshold (an
     * internal DEFO_INVERSION_CLAMP copy of the material).  Default 1.  0:
     * the material's own extension with its exact dP/dF. */
    int constant_extrapolation;
    defo_qs_linear linear;       /* default AUTO */
    double gravity[3];           /* [m/s²], body force ρg lumped to the nodes; default 0 */
    defo_qs_predictor predictor; /* default CUBIC */
    /* 1: a frame's result depends only on t, the x passed in and the setup
     * (no factorisation reused from an earlier frame: it is refreshed at
     * each frame's first iteration; no predictor), so a simulation resumed
     * from a checkpoint of (t, x) continues bit for bit.  Default 0. */
    int frame_local;
    /* The Newton iteration (defo/solver.h, the driver every solver shares):
     *   max_iterations per frame (default 100), line_search (default 1),
     *   forcing (default EISENSTAT_WALKER), cg_min/cg_max_tolerance
     *   (defaults 1e-10, 0.1), max_forced_steps (default 10), and the linear
     *   solver of its steps, newton.linear:
     *   - method: DEFO_LINEAR_PCG (default) or DEFO_LINEAR_CHOLESKY (sparse
     *     Cholesky of the assembled K with the contact blocks: exact steps,
     *     analysis once per solver; a factorisation that fails, e.g.
     *     definiteness_fix = 0 near inversion, falls back to block-Jacobi
     *     PCG for that iteration, stats.precond_fallbacks; needs linear AUTO
     *     or ASSEMBLED and a CHOLMOD build, else create returns
     *     DEFO_ERR_INVALID_ARGUMENT / DEFO_ERR_UNSUPPORTED);
     *   - precond.kind: DEFO_PRECOND_JACOBI, _BLOCK_JACOBI (rebuilt every
     *     Newton iteration), _BLOCK_IC0 or _TWO_LEVEL (default; of the
     *     assembled K with the contact blocks, bones decoupled, lagged by the
     *     linear solver's policy: max_age default 8, rate_growth default 2;
     *     with linear MATRIX_FREE block Jacobi stands in for them);
     *     precond.domains 0 = two IC(0) subdomains from 2048 nodes;
     *   - max_iterations per Newton step (default 2000); curvature
     *     DEFO_CURVATURE_STOP (default: a non-positive curvature, which the
     *     definiteness fix rules out, ends the step with a descent
     *     direction). */
    defo_newton_def newton;
} defo_quasistatic_def;

DEFO_API defo_quasistatic_def defo_default_quasistatic_def(void);

/* ------------------------------------------------------------ statistics */
typedef struct defo_quasistatic_stats {
    int newton_iterations;
    int cg_iterations;      /* total over the frame */
    int negative_curvature; /* CG directions with pᵀKp ≤ 0 (0 with the fix) */
    int line_search_backtracks;
    defo_convergence_reason reason; /* defo/solver.h */
    double residual;                /* max_i |f_i| over free nodes at the end [N] */
    double reference_force;         /* f_ref [N] */
    double initial_residual;        /* before the first iteration [N] */
    double energy;                  /* total potential energy at the end [J] */
    defo_index inverted;            /* elements with σ3 ≤ 0 at the end */
    defo_index max_inverted;        /* largest count seen at any iterate of the frame */
    defo_index contacts;            /* penetrating (node, source) pairs at the end */
    defo_index clamped_elements; /* elements whose dP/dF was modified by the fix (last iterate) */
    double seconds;              /* wall time of the frame */
    /* factorisations in this frame (BLOCK_IC0 / TWO_LEVEL preconditioner:
     * the rest of the iterations reused a lagged one; method CHOLESKY: one
     * per Newton iteration) */
    int precond_setups;
    /* iterations solved with block Jacobi because the factorisation failed
     * (a singular diagonal block, or K not positive definite for CHOLESKY) */
    int precond_fallbacks;
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
 * of defo/geometry.h, checked by defo_motion_validate; NULL = fixed at
 * rest).  *bone (may be NULL) receives the bone's index.  A node claimed by
 * several bones follows the last.  An empty region is
 * DEFO_ERR_INVALID_ARGUMENT. */
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
/* The assembled stiffness of the last evaluation, contact blocks included
 * (assembles on demand; NULL with linear MATRIX_FREE).  Borrowed: valid
 * until the next evaluation. */
DEFO_API const defo_bcsr *defo_quasistatic_stiffness(defo_quasistatic *qs);
/* Bytes held by the solver (per-element data, matrix, vectors). */
DEFO_API size_t defo_quasistatic_bytes(const defo_quasistatic *qs);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_QUASISTATIC_H */
