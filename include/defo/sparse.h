/*
 * defo/sparse.h — 3×3-block compressed sparse row matrices over nodes and
 * their element-by-element assembly (MG04 §2.3 and §6: the global stiffness
 * K' summed from rotated element matrices every step; a matrix keeps its
 * pattern until the topology changes: docs/architecture.md "Sparse
 * matrices").  The
 * preconditioners and solvers that use them: defo/solver.h.
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
    /* unsigned: slots are never negative, and with a constant p (4, 10) the
     * divisions compile to shifts or multiplications */
    const uint64_t pu = (uint64_t)p, p2 = pu * pu, su = (uint64_t)s;
    const uint64_t el = su / p2, ij = su - el * p2, row = ij / pu;
    *e = (int64_t)el;
    *i = (int)row;
    *j = (int)(ij - row * pu);
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

/* *A = blockdiag(parts) + extra: a matrix of Σ n_k block rows, part k's
 * blocks in rows and columns offset by the rows of the parts before it, plus
 * num_extra 3×3 blocks at (extra_rc[2e], extra_rc[2e+1]) with values
 * extra_val[9e..] (positions may repeat: their values are summed in input
 * order).  The joined matrix has no element assembly map (per_elem 0).  An
 * existing *A from an earlier join is refilled, its pattern rebuilt only when
 * the parts or the distinct extra positions differ.  The coupled systems of
 * bodies in contact (the Newton solves' joint matrix). */
DEFO_API defo_status defo_bcsr_join(defo_bcsr **A, const defo_bcsr *const *parts, int count,
                                    const int64_t *extra_rc, const double *extra_val,
                                    size_t num_extra);

/* Bytes held by the matrix (values, pattern and assembly map). */
DEFO_API size_t defo_bcsr_bytes(const defo_bcsr *A);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_SPARSE_H */
