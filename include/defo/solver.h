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
#include "defo/sparse.h"

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

/* ---------------------------------------------------- preconditioners
 * z = P⁻¹ r for a 3×3-block CSR matrix (defo/sparse.h), an opaque object
 * made from a definition and set up (factored) from a matrix. */
typedef enum defo_precond_kind {
    DEFO_PRECOND_NONE = 0,
    DEFO_PRECOND_JACOBI = 1,       /* 1 / diag(A) */
    DEFO_PRECOND_BLOCK_JACOBI = 2, /* inverted 3×3 diagonal blocks */
    DEFO_PRECOND_BLOCK_IC0 = 3,    /* incomplete block Cholesky, zero fill-in */
    /* sparse direct Cholesky (defo/cholesky.h; needs CHOLMOD): exact for the
     * matrix it was set up with, used lagged while the matrix drifts */
    DEFO_PRECOND_CHOLESKY = 4,
    /* BLOCK_IC0 plus an additive coarse correction R (Rᵀ A R)⁻¹ Rᵀ over the
     * rigid-body modes of geometric node aggregates (needs coords) */
    DEFO_PRECOND_TWO_LEVEL = 5
} defo_precond_kind;

/* Name ("none", "jacobi", "block_jacobi", "block_ic0", "cholesky",
 * "two_level"); "unknown" otherwise. */
DEFO_API const char *defo_precond_name(defo_precond_kind kind);
/* The kind of a name above; DEFO_ERR_INVALID_ARGUMENT (message listing the
 * names) for any other. */
DEFO_API defo_status defo_precond_from_name(const char *name, defo_precond_kind *kind);

typedef struct defo_precond_def {
    defo_precond_kind kind; /* default DEFO_PRECOND_BLOCK_JACOBI */
    /* BLOCK_IC0 / TWO_LEVEL: the factor is that of A restricted to each of
     * `domains` subdomains (slabs of breadth-first levels of A's pattern;
     * couplings between them dropped), so its factorisation and triangular
     * solves run one subdomain per thread.  0 (default) = automatic: 1 below
     * 4096 nodes, else 2.  The result depends on this number, never on the
     * thread count.  >= 0. */
    int domains;
} defo_precond_def;
DEFO_API defo_precond_def defo_default_precond_def(void);

typedef struct defo_precond defo_precond;

/* An empty preconditioner of def's kind (storage comes with the first
 * setup).  Bad kind or domains: DEFO_ERR_INVALID_ARGUMENT; CHOLESKY without
 * CHOLMOD: DEFO_ERR_UNSUPPORTED (defo_cholesky_available()). */
DEFO_API defo_status defo_precond_create(const defo_precond_def *def, defo_precond **out);
DEFO_API void defo_precond_destroy(defo_precond *P);
DEFO_API defo_precond_kind defo_precond_get_kind(const defo_precond *P);

/* (Re)compute the preconditioner of A.  Storage is allocated on the first
 * call and reused while the pattern size stays the same.  constraint (n
 * kinds, may be NULL): BLOCK_IC0 drops the couplings of DEFO_CONSTRAINT_FIXED
 * nodes, so it factors the constrained operator the projected CG actually
 * sees.  A singular or indefinite diagonal block is DEFO_ERR_NUMERICAL naming
 * the node.  BLOCK_IC0 retries with a growing diagonal shift when a pivot is
 * not positive definite.  CHOLESKY factors A (fixed nodes decoupled as for
 * BLOCK_IC0), keeps the symbolic analysis while the pattern is unchanged,
 * and is DEFO_ERR_NUMERICAL for a matrix that is not positive definite.
 * coords (3n node positions, read only here): TWO_LEVEL's aggregates and
 * rigid modes (DEFO_ERR_INVALID_ARGUMENT when NULL); ignored otherwise. */
DEFO_API defo_status defo_precond_setup(defo_precond *P, const defo_bcsr *A,
                                        const unsigned char *constraint, const double *coords);
/* z = P⁻¹ r (3n each) with the last setup. */
DEFO_API void defo_precond_apply(const defo_precond *P, const double *r, double *z);
/* Bytes the preconditioner holds (the object and what setup allocated). */
DEFO_API size_t defo_precond_bytes(const defo_precond *P);

/* Preconditioned CG on a BCSR matrix with the constraint projections of
 * defo_cg_solve (constraint kinds per node, normals for
 * DEFO_CONSTRAINT_NORMAL; the constrained values are taken from the initial
 * x).  P (set up) may be NULL (no preconditioner).  work: 4 · 3n doubles.
 * def->tolerance = 0 runs exactly def->max_iterations iterations (MG04 §6
 * interactive mode) and returns DEFO_OK; otherwise the tolerance must be in
 * (0, 1) and reaching max_iterations returns DEFO_WARN_NOT_CONVERGED (x is
 * the last iterate).  Iterates are bitwise identical for any thread
 * count. */
DEFO_API defo_status defo_pcg_solve(const defo_cg_def *def, const defo_bcsr *A,
                                    const defo_precond *P, const unsigned char *constraint,
                                    const double *normal, const double *b, double *x, double *work,
                                    defo_cg_result *result);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_SOLVER_H */
