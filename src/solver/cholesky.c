/*
 * solver/cholesky.c — sparse direct Cholesky A = L Lᵀ of a 3×3-block CSR
 * matrix through CHOLMOD, behind defo's own interface (defo/cholesky.h).
 *
 * Used as a lagged preconditioner for the implicit Euler system
 * (M + ΔtC + Δt²K') v = b of MG04 §6: the corotated K' changes only through
 * the element rotations, so a factor of an earlier step's matrix makes PCG
 * converge in a few iterations and costs one forward/back substitution per
 * iteration.  (MG04 §6 solves the same system with plain CG; the direct
 * factor sits behind defo's own interface: docs/architecture.md "Sparse
 * matrices".)
 *
 * Conversion: CHOLMOD takes a compressed-column matrix; we pass its lower
 * triangle (stype −1).  Scalar column c = 3I + a of the lower triangle is
 * scalar row c of the upper part of the symmetric block row I, so the
 * pattern is built once per block pattern by walking block row I from its
 * diagonal block, and map[k] records which value of A->val feeds entry k:
 * refilling the values each factorisation is one gather.
 *
 * Supernodal factor: CHOLMOD's supernodal numeric factorisation reads
 * S = tril(P A Pᵀ) (P the fill-reducing ordering); cholmod_factorize makes
 * it from a lower triangle by two permuted transposes and two allocations at
 * every call (a fifth of a 2223-unknown refactorisation's time).  Here S is
 * made once per analysis by those same two transposes applied to the entry
 * numbers 0, 1, …, so smap[k] is the value of A->val feeding S entry k and a
 * refactorisation is one gather into S plus cholmod_super_numeric: the
 * same S, the same factor bit for bit.
 *
 * Fixed nodes: their couplings are left out of the pattern, not stored as
 * zeros: a fixed node is a 3×3 diagonal block of its own, so the ordering
 * and the symbolic factor see the free nodes alone and their fill (the
 * MTPS08 bunny held at its base and pulled by its ears: 2223 unknowns,
 * 4.3e7 flops with the couplings kept as zeros, 2.7e7 without).  The
 * set of fixed nodes is then part of the pattern: a handle grabbed or
 * released means a new analysis.
 *
 * Invariants: the analysis (ordering + symbolic factor) matches the block
 * pattern stored in row_offset/col and the fixed flags (copies kept to
 * detect a changed pattern);
 * `factored` is 1 only after CHOLMOD reported a complete LLᵀ.  CHOLMOD
 * would otherwise keep an LDLᵀ of an indefinite matrix with negative
 * pivots and report success: final_ll = 1 makes the simplicial path fail on
 * a non-positive pivot like the supernodal one (docs/architecture.md
 * "Sparse matrices"), and the status and L->minor are checked.
 *
 * Licence: libcholmod's Supernodal module is GPL-2+; linking it makes the
 * resulting binary GPL.  -DDEFO_CHOLMOD=OFF builds defo without any GPL
 * code: this file then compiles to stubs returning DEFO_ERR_UNSUPPORTED and
 * the integrators fall back to IC(0).
 *
 * Allocation: CHOLMOD allocates through SuiteSparse_config, a process-wide
 * table; defo does not redirect it (that would change every other CHOLMOD
 * user in the process), so factor memory is reported by
 * defo_cholesky_bytes, not by defo_allocated_bytes.  CHOLMOD never prints
 * (Common.print = 0): its errors become defo_error messages here.
 */
#include "defo/cholesky.h"

#include "base/base.h"
#include "base/parallel.h"
#include "solver/solver_internal.h"

#include <string.h>

#ifdef DEFO_HAVE_CHOLMOD

#include <cholmod.h>

struct defo_cholesky {
    cholmod_common cm;
    cholmod_sparse *A;   /* lower triangle, pattern of the analysed matrix */
    int64_t *map;        /* per entry of A: index into defo_bcsr.val */
    cholmod_sparse *S;   /* supernodal L: tril(P A Pᵀ), the pattern it factors */
    int64_t *smap;       /* per entry of S: index into defo_bcsr.val */
    int64_t *row_offset; /* copy of the analysed block pattern */
    defo_index *col;
    unsigned char *fixed; /* n: 1 for a node fixed in the analysed pattern */
    defo_index n;
    int64_t num_blocks;
    cholmod_factor *L;
    cholmod_dense *X, *Y, *E; /* solve workspace, reused */
    int factored;
};

int defo_cholesky_available(void) {
    return 1;
}

static defo_status cm_error(const defo_cholesky *c, const char *what) {
    if (c->cm.status == CHOLMOD_OUT_OF_MEMORY)
        return defo_error(DEFO_ERR_OUT_OF_MEMORY, "Cholesky: out of memory in %s", what);
    return defo_error(DEFO_ERR_INTERNAL, "Cholesky: CHOLMOD status %d in %s", c->cm.status, what);
}

defo_status defo_cholesky_create(defo_cholesky **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_cholesky_create: out is NULL");
    *out = NULL;
    defo_cholesky *c = defo_calloc(1, sizeof *c);
    if (!c) return defo_error_oom("Cholesky object", sizeof *c);
    if (!cholmod_l_start(&c->cm)) {
        defo_free(c);
        return defo_error(DEFO_ERR_INTERNAL, "Cholesky: cholmod_start failed");
    }
    c->cm.print = 0;       /* the library never prints */
    c->cm.final_ll = 1;    /* LLᵀ: an indefinite matrix fails, not LDLᵀ */
    c->cm.final_asis = 0;  /* honour final_ll */
    c->cm.final_super = 1; /* supernodal L solves with BLAS blocks */
    c->cm.supernodal = CHOLMOD_AUTO;
    c->cm.quick_return_if_not_posdef = 1;
    *out = c;
    return DEFO_OK;
}

static void release_analysis(defo_cholesky *c) {
    if (c->L) cholmod_l_free_factor(&c->L, &c->cm);
    if (c->A) cholmod_l_free_sparse(&c->A, &c->cm);
    if (c->S) cholmod_l_free_sparse(&c->S, &c->cm);
    defo_free(c->map);
    defo_free(c->smap);
    c->smap = NULL;
    defo_free(c->row_offset);
    defo_free(c->col);
    defo_free(c->fixed);
    c->map = NULL;
    c->row_offset = NULL;
    c->col = NULL;
    c->fixed = NULL;
    c->n = 0;
    c->num_blocks = 0;
    c->factored = 0;
}

void defo_cholesky_destroy(defo_cholesky *c) {
    if (!c) return;
    release_analysis(c);
    if (c->X) cholmod_l_free_dense(&c->X, &c->cm);
    if (c->Y) cholmod_l_free_dense(&c->Y, &c->cm);
    if (c->E) cholmod_l_free_dense(&c->E, &c->cm);
    cholmod_l_finish(&c->cm);
    defo_free(c);
}

static int is_fixed(const unsigned char *constraint, defo_index i) {
    return constraint && constraint[i] == DEFO_CONSTRAINT_FIXED;
}

static int same_fixed(const defo_cholesky *c, const unsigned char *constraint) {
    for (defo_index i = 0; i < c->n; i++)
        if (c->fixed[i] != is_fixed(constraint, i)) return 0;
    return 1;
}

static int same_pattern(const defo_cholesky *c, const defo_bcsr *A,
                        const unsigned char *constraint) {
    return c->L && c->n == A->num_rows && c->num_blocks == A->num_blocks &&
           !memcmp(c->row_offset, A->row_offset,
                   ((size_t)A->num_rows + 1) * sizeof *c->row_offset) &&
           !memcmp(c->col, A->col, (size_t)A->num_blocks * sizeof *c->col) &&
           same_fixed(c, constraint);
}

/* S = tril(P A Pᵀ) and smap (the file's comment): CHOLMOD's transposes of A
 * holding its own entry numbers (exact in a double below 2⁵³). */
static defo_status permuted_lower(defo_cholesky *c) {
    const size_t nnz = (size_t)((const SuiteSparse_long *)c->A->p)[c->A->ncol];
    double *x = c->A->x;
    for (size_t k = 0; k < nnz; k++) x[k] = (double)k;
    cholmod_sparse *U = cholmod_l_ptranspose(c->A, 2, c->L->Perm, NULL, 0, &c->cm);
    if (U) c->S = cholmod_l_ptranspose(U, 2, NULL, NULL, 0, &c->cm);
    if (U) cholmod_l_free_sparse(&U, &c->cm);
    if (c->S) c->smap = defo_malloc(nnz * sizeof *c->smap + 1);
    if (!c->S || !c->smap) {
        defo_status st = c->S ? defo_error_oom("Cholesky pattern", nnz * sizeof(int64_t))
                              : cm_error(c, "transpose");
        release_analysis(c);
        return st;
    }
    const double *sx = c->S->x;
    for (size_t k = 0; k < nnz; k++) c->smap[k] = c->map[(size_t)sx[k]];
    return DEFO_OK;
}

/* The analysis of A's pattern with the couplings of fixed nodes left out. */
static defo_status analyze(defo_cholesky *c, const defo_bcsr *A, const unsigned char *constraint) {
    if (same_pattern(c, A, constraint)) return DEFO_OK;
    release_analysis(c);
    const defo_index n = A->num_rows;
    const size_t m = 3 * (size_t)n;
    /* entries of the lower triangle: per block row, the diagonal block
     * gives 6, every block right of it 9 (none for a fixed node's) */
    size_t nnz = 0;
    for (defo_index i = 0; i < n; i++)
        for (int64_t q = A->diag[i]; q < A->row_offset[i + 1]; q++)
            nnz += q == A->diag[i]                                              ? 6
                   : is_fixed(constraint, i) || is_fixed(constraint, A->col[q]) ? 0
                                                                                : 9;
    c->row_offset = defo_malloc(((size_t)n + 1) * sizeof *c->row_offset);
    c->col = defo_malloc((size_t)A->num_blocks * sizeof *c->col + 1);
    c->fixed = defo_malloc((size_t)n + 1);
    c->map = defo_malloc(nnz * sizeof *c->map + 1);
    if (!c->row_offset || !c->col || !c->fixed || !c->map) {
        release_analysis(c);
        return defo_error_oom("Cholesky pattern", nnz * sizeof(int64_t));
    }
    c->A = cholmod_l_allocate_sparse(m, m, nnz, 1, 1, -1, CHOLMOD_REAL, &c->cm);
    if (!c->A) {
        defo_status st = cm_error(c, "allocate_sparse");
        release_analysis(c);
        return st;
    }
    SuiteSparse_long *cp = c->A->p, *ri = c->A->i;
    size_t k = 0;
    for (defo_index i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) {
            cp[3 * (size_t)i + (size_t)a] = (SuiteSparse_long)k;
            for (int64_t q = A->diag[i]; q < A->row_offset[i + 1]; q++) {
                if (q != A->diag[i] && (is_fixed(constraint, i) || is_fixed(constraint, A->col[q])))
                    continue;
                for (int b = q == A->diag[i] ? a : 0; b < 3; b++) {
                    ri[k] = 3 * (SuiteSparse_long)A->col[q] + b;
                    c->map[k] = 9 * q + 3 * a + b;
                    k++;
                }
            }
        }
    cp[m] = (SuiteSparse_long)k;
    memcpy(c->row_offset, A->row_offset, ((size_t)n + 1) * sizeof *c->row_offset);
    memcpy(c->col, A->col, (size_t)A->num_blocks * sizeof *c->col);
    for (defo_index i = 0; i < n; i++) c->fixed[i] = (unsigned char)is_fixed(constraint, i);
    c->n = n;
    c->num_blocks = A->num_blocks;
    c->L = cholmod_l_analyze(c->A, &c->cm);
    if (!c->L) {
        defo_status st = cm_error(c, "analyze");
        release_analysis(c);
        return st;
    }
    return c->L->is_super ? permuted_lower(c) : DEFO_OK;
}

defo_status defo_cholesky_analyze(defo_cholesky *c, const defo_bcsr *A) {
    if (!c || !A) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_cholesky_analyze: NULL");
    return analyze(c, A, NULL);
}

int defo_cholesky_same_fixed(const defo_cholesky *c, const unsigned char *constraint) {
    return c && c->L && same_fixed(c, constraint);
}

int defo_cholesky_is_supernodal(const defo_cholesky *c) {
    return c && c->S;
}

/* The numeric factorisation: cholmod_factorize's supernodal branch on the
 * kept S (workspace, the factorisation, the final form), else
 * cholmod_factorize itself. */
static int numeric(defo_cholesky *c) {
    if (!c->S) return cholmod_l_factorize(c->A, c->L, &c->cm);
    const size_t n = c->L->n;
    c->cm.status = CHOLMOD_OK;
    if (!cholmod_l_allocate_work(n, 2 * n + 2 * c->L->nsuper, 0, &c->cm)) return 0;
    double zero[2] = {0, 0};
    cholmod_l_super_numeric(c->S, NULL, zero, c->L, &c->cm);
    const int status = c->cm.status;
    if (status >= CHOLMOD_OK && !c->cm.final_asis)
        cholmod_l_change_factor(c->L->xtype, c->cm.final_ll, c->cm.final_super, c->cm.final_pack,
                                c->cm.final_monotonic, c->L, &c->cm);
    if (status < c->cm.status) c->cm.status = status;
    return c->cm.status >= CHOLMOD_OK;
}

defo_status defo_cholesky_factor(defo_cholesky *c, const defo_bcsr *A,
                                 const unsigned char *constraint) {
    if (!c || !A) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_cholesky_factor: NULL");
    defo_status st = analyze(c, A, constraint);
    if (st) return st;
    c->factored = 0;
    /* the pattern holds no coupling of a fixed node: one gather (into S
     * for a supernodal factor) */
    const cholmod_sparse *T = c->S ? c->S : c->A;
    const size_t nnz = (size_t)((const SuiteSparse_long *)T->p)[T->ncol];
    double *x = T->x;
    const int64_t *map = c->S ? c->smap : c->map;
    for (size_t k = 0; k < nnz; k++) x[k] = A->val[map[k]];
    /* CHOLMOD's supernodal factorisation opens parallel regions of its own
     * with a fixed team of CHOLMOD_OMP_NUM_THREADS (4) for clearing and
     * scattering large supernodes, whatever defo's thread count: on two
     * cores each is a fork and join of four threads (measured: 15 % of the
     * CPU time of a 2223-unknown refactorisation spent waking them, more
     * when another process holds a core).  No nested level allowed while it
     * runs keeps them on the calling thread (the ICV is the calling task's:
     * other threads are not affected). */
    int ok;
#ifdef _OPENMP
    const int levels = omp_get_max_active_levels();
    omp_set_max_active_levels(0);
    ok = numeric(c);
    omp_set_max_active_levels(levels);
#else
    ok = numeric(c);
#endif
    if (!ok && c->cm.status < CHOLMOD_OK) return cm_error(c, "factorize");
    if (c->cm.status == CHOLMOD_NOT_POSDEF || c->L->minor < c->L->n) {
        size_t bad =
            c->L->minor < c->L->n ? (size_t)((SuiteSparse_long *)c->L->Perm)[c->L->minor] : 0;
        return defo_error(DEFO_ERR_NUMERICAL,
                          "Cholesky: matrix is not positive definite (pivot of unknown %zu, "
                          "node %zu)",
                          bad, bad / 3);
    }
    if (c->cm.status != CHOLMOD_OK) return cm_error(c, "factorize");
    c->factored = 1;
    return DEFO_OK;
}

int defo_cholesky_is_factored(const defo_cholesky *c) {
    return c && c->factored;
}

defo_status defo_cholesky_solve(defo_cholesky *c, const double *b, double *x) {
    if (!c || !b || !x) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_cholesky_solve: NULL");
    if (!c->factored)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_cholesky_solve: no valid factor");
    const size_t m = 3 * (size_t)c->n;
    /* a header over the caller's b: no copy */
    cholmod_dense B;
    memset(&B, 0, sizeof B);
    B.nrow = m;
    B.ncol = 1;
    B.nzmax = m;
    B.d = m;
    B.x = (void *)(uintptr_t)b;
    B.xtype = CHOLMOD_REAL;
    B.dtype = CHOLMOD_DOUBLE;
    if (!cholmod_l_solve2(CHOLMOD_A, c->L, &B, NULL, &c->X, NULL, &c->Y, &c->E, &c->cm))
        return cm_error(c, "solve");
    memcpy(x, c->X->x, m * sizeof *x);
    return DEFO_OK;
}

int64_t defo_cholesky_nonzeros(const defo_cholesky *c) {
    if (!c || !c->L) return 0;
    if (c->L->is_super) return (int64_t)c->L->xsize;
    return (int64_t)c->L->nzmax;
}

size_t defo_cholesky_bytes(const defo_cholesky *c) {
    if (!c) return 0;
    size_t bytes = sizeof *c;
    if (c->A) bytes += c->A->nzmax * (sizeof(double) + sizeof(SuiteSparse_long) + sizeof(int64_t));
    if (c->S) bytes += c->S->nzmax * (sizeof(double) + sizeof(SuiteSparse_long) + sizeof(int64_t));
    if (c->L)
        bytes += (size_t)defo_cholesky_nonzeros(c) * sizeof(double) +
                 c->L->n * 4 * sizeof(SuiteSparse_long);
    if (c->X) bytes += c->X->nzmax * sizeof(double);
    if (c->Y) bytes += c->Y->nzmax * sizeof(double);
    if (c->E) bytes += c->E->nzmax * sizeof(double);
    return bytes;
}

#else /* !DEFO_HAVE_CHOLMOD */

struct defo_cholesky {
    int unused;
};

int defo_cholesky_available(void) {
    return 0;
}

static defo_status unsupported(void) {
    return defo_error(DEFO_ERR_UNSUPPORTED,
                      "Cholesky: defo was built without CHOLMOD (DEFO_CHOLMOD=OFF)");
}

defo_status defo_cholesky_create(defo_cholesky **out) {
    if (out) *out = NULL;
    return unsupported();
}
void defo_cholesky_destroy(defo_cholesky *c) {
    defo_free(c);
}
defo_status defo_cholesky_analyze(defo_cholesky *c, const defo_bcsr *A) {
    DEFO_UNUSED(c);
    DEFO_UNUSED(A);
    return unsupported();
}
defo_status defo_cholesky_factor(defo_cholesky *c, const defo_bcsr *A,
                                 const unsigned char *constraint) {
    DEFO_UNUSED(c);
    DEFO_UNUSED(A);
    DEFO_UNUSED(constraint);
    return unsupported();
}
int defo_cholesky_is_factored(const defo_cholesky *c) {
    DEFO_UNUSED(c);
    return 0;
}
int defo_cholesky_same_fixed(const defo_cholesky *c, const unsigned char *constraint) {
    DEFO_UNUSED(c);
    DEFO_UNUSED(constraint);
    return 0;
}
int defo_cholesky_is_supernodal(const defo_cholesky *c) {
    DEFO_UNUSED(c);
    return 0;
}
defo_status defo_cholesky_solve(defo_cholesky *c, const double *b, double *x) {
    DEFO_UNUSED(c);
    DEFO_UNUSED(b);
    DEFO_UNUSED(x);
    return unsupported();
}
int64_t defo_cholesky_nonzeros(const defo_cholesky *c) {
    DEFO_UNUSED(c);
    return 0;
}
size_t defo_cholesky_bytes(const defo_cholesky *c) {
    DEFO_UNUSED(c);
    return 0;
}

#endif
