/*
 * solver/solver_internal.h — the layout of the solver module's opaque types,
 * shared by its files (bcsr.c, pcg.c, cholesky.c, linear.c).  Not part of
 * the public API: other modules see defo_bcsr through defo_bcsr_get_pattern
 * and defo_bcsr_values (defo/sparse.h).
 */
#ifndef DEFO_INTERNAL_SOLVER_H
#define DEFO_INTERNAL_SOLVER_H

#include "defo/solver.h"
#include "defo/sparse.h"

struct defo_cholesky;

/* 1 when the analysed pattern of c has exactly the fixed nodes of
 * constraint (NULL: none) — a factor kept for an unchanged matrix is still
 * the right one (solver/cholesky.c: fixed nodes are part of the pattern). */
int defo_cholesky_same_fixed(const struct defo_cholesky *c, const unsigned char *constraint);
/* 1 when c holds a supernodal analysis (refactored through its kept
 * permuted lower triangle, solver/cholesky.c) */
int defo_cholesky_is_supernodal(const struct defo_cholesky *c);

struct defo_bcsr {
    defo_index num_rows; /* block rows = block columns = nodes */
    int64_t num_blocks;  /* stored 3×3 blocks */
    int64_t *row_offset; /* num_rows + 1 */
    defo_index *col;     /* num_blocks block-column indices, sorted per row */
    int64_t *diag;       /* num_rows: index of the diagonal block of each row */
    double *val;         /* 9 per block, row-major within the block */
    /* assembly map (defo/sparse.h) */
    int per_elem; /* nodes per element p */
    defo_index num_elems;
    int64_t *elem_block; /* num_elems · p² */
    int64_t *src_offset; /* num_blocks + 1 */
    int64_t *src;        /* num_elems · p² slots, grouped by block */
    int64_t *transpose;  /* num_blocks: index of the block at the mirrored position */
    defo_bcsr_pattern view;
    /* a joined matrix (defo_bcsr_join): where each part block and each
     * distinct extra position goes, and what the pattern was built from */
    int join_count;
    const defo_bcsr **join_part; /* join_count: the parts it was built from */
    int64_t *join_part_blocks;   /* join_count: their block counts */
    int64_t *join_dest;          /* Σ part blocks: destination block of each */
    int64_t *join_pos;           /* 2 per distinct extra position (row, col) */
    int64_t *join_pos_dest;      /* destination block of each */
    int64_t join_num_pos, join_pos_cap;
};

struct defo_precond {
    defo_precond_kind kind;
    defo_index n;
    /* JACOBI / BLOCK_JACOBI: 1 = a node whose diagonal (block) is not
     * positive definite gets 1 / max(a_kk, floor) instead of an error (the
     * linear solver's rebuilt-every-solve preconditioners; floor = 1e-12 ×
     * the largest diagonal entry of a free node), fixed nodes 0 */
    int robust;
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
    double *inv_pivot;         /* BLOCK_IC0: 9n, inverses of U's diagonal blocks D (symmetrised) */
    int64_t *pos;              /* BLOCK_IC0: n, scratch of the factorisation */
    int64_t num_blocks;        /* BLOCK_IC0: size of factor / 9 */
    double shift;              /* BLOCK_IC0: relative diagonal shift that was needed (0 usually) */
    int domains;               /* defo_precond_def.domains */
    int num_domains;           /* in use, set by setup */
    int *domain_of;            /* n: subdomain of each node */
    defo_index *domain_rows;   /* n: the nodes of domain 0, then 1, ..., each ascending */
    defo_index *domain_offset; /* num_domains + 1: where each domain starts in domain_rows */
    struct defo_cholesky *cholesky; /* CHOLESKY: the factor (owned) */
    /* TWO_LEVEL (coords borrowed during setup only) */
    const double *coords;
    defo_index num_aggregates;
    defo_index *aggregate; /* n: aggregate of each node, −1 for fixed nodes */
    double *offset;        /* 3n: node position − aggregate centre at setup */
    double *coarse;        /* (6 num_aggregates)²: Cholesky factor of Rᵀ A R */
    double *coarse_work;   /* 6 num_aggregates */
};

/* JACOBI / BLOCK_JACOBI of P from n diagonal blocks: blocks + 9 i, or
 * blocks + 9 diag[i] when diag is not NULL (a matrix's values).  Strict or
 * robust by P->robust (above). */
defo_status defo_precond_setup_diagonal(defo_precond *P, defo_index n, const double *blocks,
                                        const int64_t *diag, const unsigned char *constraint);

/* Y[j] = A X[j] for k ≤ DEFO_BCSR_MANY_MAX vectors of 3n: one pass over
 * A's blocks for all of them (each Y[j] bitwise what defo_bcsr_multiply
 * gives). */
enum { DEFO_BCSR_MANY_MAX = 16 };
void defo_bcsr_multiply_many(const defo_bcsr *A, int k, const double *const *X, double *const *Y);

/* What the linear solves of the calling thread streamed, since the process
 * started (benchmarks: bench_scaling's GB/s): solves, CG iterations, their
 * wall time and an estimate of the bytes they read and wrote — per
 * iteration the matrix (or nothing for an operator), the preconditioner's
 * arrays, and the CG vectors.  Counting only, never read by a solve. */
typedef struct defo_solve_traffic {
    long long solves, iterations;
    double seconds, bytes;
} defo_solve_traffic;
defo_solve_traffic defo_solve_traffic_get(void);

/* Bytes one application of P reads and writes (its arrays, r and z). */
double defo_precond_apply_bytes(const defo_precond *P);

#endif
