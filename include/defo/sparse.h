/*
 * defo/sparse.h — 3×3-block compressed sparse row matrices over nodes, their
 * element-by-element assembly, and preconditioned conjugate gradients on them
 * (MG04 §2.3 and §6: the global stiffness K' summed from rotated element
 * matrices every step; DESIGN.md "Sparse matrices keep their pattern until the
 * topology changes").
 *
 * defo_bcsr is an opaque handle: its pattern is read through a read-only view
 * (defo_bcsr_get_pattern), its values through defo_bcsr_values, and it is
 * changed only by the defo_bcsr_* functions.
 *
 * Pattern: one block row per node; block (I, J) exists when nodes I and J
 * share an element.  The pattern is symmetric and stored in full (both
 * triangles), columns sorted within each row, so y = A x is a parallel loop
 * over rows with no write conflicts.
 *
 * Assembly map: element e with p nodes owns p² "slots" s = e·p² + i·p + j,
 * slot s holding its 3×3 block (i, j) (defo_bcsr_slot decodes it for any
 * p).  elem_block[s] is the block the slot adds into; src[src_offset[b] ..
 * src_offset[b+1]) lists the slots adding into block b in increasing order.
 * Assembly sums each block's slots in that fixed order, so the values are
 * bitwise identical for any thread count.
 */
#ifndef DEFO_SPARSE_H
#define DEFO_SPARSE_H

#include "defo/base.h"
#include "defo/solver.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_bcsr defo_bcsr;

/* Read-only view of a matrix's pattern and assembly map (owned by the
 * matrix, valid until it is destroyed). */
typedef struct defo_bcsr_pattern {
    defo_index num_rows;       /* block rows = block columns = nodes */
    int64_t num_blocks;        /* stored 3×3 blocks; values hold 9 per block, row-major */
    const int64_t *row_offset; /* num_rows + 1 */
    const defo_index *col;     /* num_blocks block-column indices, sorted per row */
    const int64_t *diag;       /* num_rows: index of the diagonal block of each row */
    int per_elem;              /* nodes per element p */
    defo_index num_elems;
    const int64_t *elem_block; /* num_elems · p²: the block each slot adds into */
    const int64_t *src_offset; /* num_blocks + 1 */
    const int64_t *src;        /* num_elems · p² slots, grouped by block, increasing */
    const int64_t *transpose;  /* num_blocks: the block at the mirrored position */
} defo_bcsr_pattern;

/* Element e and local block (i, j) of slot s for p nodes per element
 * (s = e·p² + i·p + j). */
static inline void defo_bcsr_slot(int64_t s, int p, int64_t *e, int *i, int *j) {
    const int64_t p2 = (int64_t)p * p;
    const int64_t el = s / p2;
    const int ij = (int)(s - el * p2), row = ij / p;
    *e = el;
    *i = row;
    *j = ij - row * p;
}

/* Build the pattern and assembly map of the elements conn (num_elems · per_elem
 * node indices in [0, num_nodes)); values are zero.  Nodes in no element get
 * a diagonal block only.  On error *out is NULL. */
DEFO_API defo_status defo_bcsr_create(const defo_index *conn, defo_index num_elems, int per_elem,
                                      defo_index num_nodes, defo_bcsr **out);
DEFO_API void defo_bcsr_destroy(defo_bcsr *A);

DEFO_API const defo_bcsr_pattern *defo_bcsr_get_pattern(const defo_bcsr *A);
/* The values: 9 per block, row-major within the block, blocks in pattern
 * order. */
DEFO_API double *defo_bcsr_values(defo_bcsr *A);
DEFO_API const double *defo_bcsr_values_const(const defo_bcsr *A);

/* Index of block (row, col), or -1 when it is not in the pattern. */
DEFO_API int64_t defo_bcsr_find(const defo_bcsr *A, defo_index row, defo_index col);

/* A = 0. */
DEFO_API void defo_bcsr_zero(defo_bcsr *A);

/* A = scale · Σ_e (element matrix e), from (3p)×(3p) row-major element
 * matrices, (3p)² doubles per element.  Deterministic. */
DEFO_API void defo_bcsr_assemble(defo_bcsr *A, const double *elem_mats, double scale);

/* A_II += scale · d_I · I₃ for every node I (a lumped mass).  d has num_rows
 * entries. */
DEFO_API void defo_bcsr_add_diagonal(defo_bcsr *A, const double *d, double scale);

/* A_II += scale · B_I for every node I: blocks holds 9 per node (row-major
 * 3×3, e.g. penalty contact blocks). */
DEFO_API void defo_bcsr_add_diagonal_blocks(defo_bcsr *A, const double *blocks, double scale);

/* y = A x (3·num_rows each; x and y must not overlap).  Parallel over rows. */
DEFO_API void defo_bcsr_multiply(const defo_bcsr *A, const double *x, double *y);

/* Dense copy (3n × 3n row-major, 9n² doubles) for tests and debugging. */
DEFO_API void defo_bcsr_to_dense(const defo_bcsr *A, double *dense);

/* Bytes held by the matrix (values, pattern and assembly map). */
DEFO_API size_t defo_bcsr_bytes(const defo_bcsr *A);

/* ---------------------------------------------------- preconditioners */
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

typedef struct defo_precond {
    defo_precond_kind kind;
    defo_index n;
    double *inv; /* JACOBI: 3n; BLOCK_JACOBI: 9n (inverted diagonal blocks) */
    /* BLOCK_IC0: 9 per block of A's pattern: L strictly below the diagonal
     * (unit diagonal implied), U on and above it, A ≈ L U = L D Lᵀ */
    double *factor;
    /* BLOCK_IC0: what the triangular solves read — L's blocks below the
     * diagonal within each subdomain, in single precision, row by row in
     * domain_rows order: row h at lower_offset[h] .. lower_offset[h + 1],
     * block columns lower_col */
    float *lower;
    int64_t *lower_offset;
    defo_index *lower_col;
    double *inv_pivot;  /* BLOCK_IC0: 9n, inverses of U's diagonal blocks D (symmetrised) */
    int64_t *pos;       /* BLOCK_IC0: n, scratch of the factorisation */
    int64_t num_blocks; /* BLOCK_IC0: size of factor / 9 */
    double shift;       /* BLOCK_IC0: relative diagonal shift that was needed (0 usually) */
    /* BLOCK_IC0 / TWO_LEVEL: the factor is that of A restricted to each of
     * `domains` subdomains (slabs of breadth-first levels of A's pattern;
     * couplings between them dropped), so its factorisation and triangular
     * solves run one subdomain per thread.  Set by the caller before setup;
     * 0 = automatic (1 below 4096 nodes, else 2).  The result depends on this
     * number, never on the thread count. */
    int domains;
    int num_domains;                /* in use, set by setup */
    int *domain_of;                 /* n: subdomain of each node */
    defo_index *domain_rows;        /* n: the nodes of domain 0, then 1, ..., each ascending */
    defo_index *domain_offset;      /* num_domains + 1: where each domain starts in domain_rows */
    struct defo_cholesky *cholesky; /* CHOLESKY: the factor (owned) */
    /* TWO_LEVEL: node positions (3n), set by the caller before setup and
     * read only there (borrowed); the rest is owned, computed by setup */
    const double *coords;
    defo_index num_aggregates;
    defo_index *aggregate; /* n: aggregate of each node, −1 for fixed nodes */
    double *offset;        /* 3n: node position − aggregate centre at setup */
    double *coarse;        /* (6 num_aggregates)²: Cholesky factor of Rᵀ A R */
    double *coarse_work;   /* 6 num_aggregates */
} defo_precond;

/* (Re)compute the preconditioner of A.  Storage is allocated on the first
 * call and reused while kind and the pattern size stay the same (P must be
 * zero-initialised before the first call).  constraint (n kinds, may be NULL):
 * BLOCK_IC0 drops the couplings of DEFO_CONSTRAINT_FIXED nodes, so it factors
 * the constrained operator the projected CG actually sees.  A singular or
 * indefinite diagonal block is DEFO_ERR_NUMERICAL naming the node.  BLOCK_IC0
 * retries with a growing diagonal shift when a pivot is not positive definite
 * (the shift is recorded in P->shift).  CHOLESKY factors A (fixed nodes
 * decoupled as for BLOCK_IC0), keeps the symbolic analysis while the pattern
 * is unchanged, and is DEFO_ERR_UNSUPPORTED without CHOLMOD and
 * DEFO_ERR_NUMERICAL for a matrix that is not positive definite.
 * TWO_LEVEL needs P->coords (DEFO_ERR_INVALID_ARGUMENT otherwise). */
DEFO_API defo_status defo_precond_setup(defo_precond *P, defo_precond_kind kind, const defo_bcsr *A,
                                        const unsigned char *constraint);
DEFO_API void defo_precond_free(defo_precond *P);
/* Bytes the preconditioner owns (0 before its first setup). */
DEFO_API size_t defo_precond_bytes(const defo_precond *P);
/* z = P⁻¹ r (3n each). */
DEFO_API void defo_precond_apply(const defo_precond *P, const double *r, double *z);

/* Preconditioned CG on a BCSR matrix with the constraint projections of
 * defo_cg_solve (defo/solver.h: constraint kinds per node, normals for
 * DEFO_CONSTRAINT_NORMAL; the constrained values are taken from the initial
 * x).  P may be NULL (no preconditioner).  work: 4 · 3n doubles.
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
#endif /* DEFO_SPARSE_H */
