/*
 * defo/solver.h — linear solvers over nodal 3-vectors.
 *
 * defo_cg_solve: matrix-free preconditioned conjugate gradients for a
 * symmetric positive (semi)definite operator A on 3n unknowns, with
 * per-node constraints applied as projections inside the iteration
 * (DESIGN.md "Constraints ... are projections inside CG"; ITF04 §9 and
 * [BW98]): a fixed node keeps its whole initial value, a node with a
 * constraint normal n keeps its initial n-component and is free in the plane
 * ⟂ n.  The caller writes the constrained values into the initial guess.
 *
 * Dot products use a fixed blocking, so the iterates are bitwise identical
 * for any thread count.
 */
#ifndef DEFO_SOLVER_H
#define DEFO_SOLVER_H

#include "defo/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = A x for 3n-vectors; ctx is the caller's. */
typedef void (*defo_linop_fn)(void *ctx, const double *x, double *y);

/* Per-node constraint kinds for defo_cg_solve. */
enum {
    DEFO_CONSTRAINT_NONE = 0,
    DEFO_CONSTRAINT_NORMAL = 1, /* the component along normal[3i..3i+2] (unit) is fixed */
    DEFO_CONSTRAINT_FIXED = 2   /* all three components are fixed */
};

typedef struct defo_cg_def {
    int max_iterations; /* default 200; > 0 */
    /* Stop when |S(b − A x)| ≤ tolerance · |S b| (S the constraint
     * projection); default 1e-8, in (0, 1). */
    double tolerance;
} defo_cg_def;
DEFO_API defo_cg_def defo_default_cg_def(void);

typedef struct defo_cg_result {
    int iterations;
    double residual; /* final relative residual |S r| / |S b| (0 when S b = 0) */
    int converged;   /* 1 when residual ≤ tolerance */
} defo_cg_result;

/* Solve A x = b on the unconstrained subspace, starting from x (in/out).
 *   n          nodes (3n unknowns)
 *   apply      y = A x
 *   inv_diag   3n values: the Jacobi preconditioner 1/diag(A), > 0 (NULL = none)
 *   constraint n kinds (DEFO_CONSTRAINT_*) or NULL (no constraints)
 *   normal     3n unit normals read for DEFO_CONSTRAINT_NORMAL nodes (may be
 *              NULL if no node has that kind)
 *   work       12n doubles of scratch owned by the caller (no allocation here)
 * Returns DEFO_OK, DEFO_WARN_NOT_CONVERGED (x is the last iterate), or
 * DEFO_ERR_NUMERICAL when a non-finite value or a non-positive curvature
 * pᵀAp ≤ 0 appears (A not positive definite on the subspace); x is then the
 * last good iterate. */
DEFO_API defo_status defo_cg_solve(const defo_cg_def *def, defo_index n, defo_linop_fn apply,
                                   void *ctx, const double *inv_diag,
                                   const unsigned char *constraint, const double *normal,
                                   const double *b, double *x, double *work,
                                   defo_cg_result *result);

/* Deterministic dot product of two m-vectors (fixed blocking, any thread
 * count gives the same bits). */
DEFO_API double defo_dot(const double *a, const double *b, size_t m);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_SOLVER_H */
