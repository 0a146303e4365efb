/*
 * defo/cholesky.h — sparse direct Cholesky factorisation of a symmetric
 * positive definite 3×3-block CSR matrix (defo/sparse.h), used by the
 * implicit integrators as a LAGGED preconditioner: factor A once, then run
 * PCG with that factor while A drifts (the corotated K' changes a little
 * with the rotations every step), refactoring only when PCG needs too many
 * iterations.  Analysis (fill-reducing ordering, symbolic factor) is kept
 * while the block pattern is unchanged, i.e. until fracture changes the
 * topology.
 *
 * Backend: CHOLMOD (SuiteSparse) when defo was built with DEFO_CHOLMOD
 * (the default when the library is found).  Debian's libcholmod contains
 * GPL-2+ modules (Supernodal among them): a defo binary linked with it is
 * distributed under the GPL (see README).  Without CHOLMOD every function
 * below returns DEFO_ERR_UNSUPPORTED and defo_cholesky_available() is 0;
 * callers then use the iterative preconditioners.
 *
 * Constraints: with constraint kinds per node (DEFO_CONSTRAINT_FIXED nodes),
 * the factor is of A with the couplings of fixed nodes dropped, i.e. exactly
 * the operator that the projected CG of defo_pcg_solve sees on the free
 * nodes.  Those couplings are left out of the analysed pattern (the fill of
 * the free nodes alone), so a changed set of fixed nodes means a new
 * analysis.  Other constraint kinds are not treated specially (the factor
 * is then only a preconditioner).
 *
 * Determinism: the factor and solves are sequential inside defo (CHOLMOD
 * does not use threads here: no GPU, and the BLAS it calls is expected to be
 * single-threaded or deterministic), so results are identical for any
 * defo thread count.
 */
#ifndef DEFO_CHOLESKY_H
#define DEFO_CHOLESKY_H

#include "defo/base.h"
#include "defo/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_cholesky defo_cholesky;

/* 1 when defo was built with a sparse direct solver, 0 otherwise. */
DEFO_API int defo_cholesky_available(void);

/* An empty factorisation object (no analysis yet).  DEFO_ERR_UNSUPPORTED
 * without CHOLMOD. */
DEFO_API defo_status defo_cholesky_create(defo_cholesky **out);
DEFO_API void defo_cholesky_destroy(defo_cholesky *c);

/* Symbolic analysis of A's block pattern (fill-reducing ordering, elimination
 * tree, supernodes).  Values are not read.  Needed once per pattern;
 * defo_cholesky_factor calls it itself when the pattern changed. */
DEFO_API defo_status defo_cholesky_analyze(defo_cholesky *c, const defo_bcsr *A);

/* Numerical factorisation A = L Lᵀ of A (with fixed nodes decoupled when
 * constraint, n kinds, is not NULL).  A matrix that is not positive definite
 * is DEFO_ERR_NUMERICAL (never a silent LDLᵀ with negative pivots); the
 * object then holds no valid factor. */
DEFO_API defo_status defo_cholesky_factor(defo_cholesky *c, const defo_bcsr *A,
                                          const unsigned char *constraint);

/* 1 after a successful defo_cholesky_factor. */
DEFO_API int defo_cholesky_is_factored(const defo_cholesky *c);

/* x = (L Lᵀ)⁻¹ b, 3n values each (x and b may be the same array).  Uses
 * workspace held by c, so one object must not solve from two threads at
 * once. */
DEFO_API defo_status defo_cholesky_solve(defo_cholesky *c, const double *b, double *x);

/* Nonzeros of L (0 before the analysis) and bytes held by the factor and its
 * workspace (CHOLMOD allocates with its own allocator: these bytes are not
 * in defo_allocated_bytes). */
DEFO_API int64_t defo_cholesky_nonzeros(const defo_cholesky *c);
DEFO_API size_t defo_cholesky_bytes(const defo_cholesky *c);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_CHOLESKY_H */
