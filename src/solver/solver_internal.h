/*
 * solver/solver_internal.h — the layout of the solver module's opaque types,
 * shared by its files (bcsr.c, pcg.c, cholesky.c, linear.c).  Not part of
 * the public API: other modules see defo_bcsr through defo_bcsr_get_pattern
 * and defo_bcsr_values (defo/sparse.h).
 */
#ifndef DEFO_INTERNAL_SOLVER_H
#define DEFO_INTERNAL_SOLVER_H

#include "defo/sparse.h"

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
};

#endif
