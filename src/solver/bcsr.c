/*
 * solver/bcsr.c — 3×3-block CSR matrices built from element connectivity,
 * with a precomputed element→block assembly map (MG04 §2.3: K' = Σ_e K'_e is
 * re-summed every step from rotated element matrices, over a pattern that only
 * changes with the topology).
 *
 * Construction (once per topology):
 *   1. node → slot incidence (base/parallel.h), i.e. the elements of each node;
 *   2. per row, the distinct nodes of those elements, sorted: the pattern;
 *   3. elem_block[s] for every slot s = e·p² + i·p + j by a search in row
 *      conn[e,i] for column conn[e,j];
 *   4. a counting sort of slots by block, stable, so each block's sources are
 *      listed in increasing slot order;
 *   5. transpose[b], the block at the mirrored position (for assemblies that
 *      sum the upper blocks and mirror them).
 * Invariants: columns strictly increasing per row; every row has its diagonal
 * block; src lists every slot exactly once.  Assembly is a parallel loop over
 * blocks summing their sources in list order: bitwise identical for any
 * thread count (docs/architecture.md "Threads").
 */
#include "defo/sparse.h"

#include "base/parallel.h"
#include "solver/solver_internal.h"

#include <stdlib.h>
#include <string.h>

void defo_bcsr_destroy(defo_bcsr *A) {
    if (!A) return;
    defo_free(A->row_offset);
    defo_free(A->col);
    defo_free(A->diag);
    defo_free(A->val);
    defo_free(A->elem_block);
    defo_free(A->src_offset);
    defo_free(A->src);
    defo_free(A->transpose);
    defo_free((void *)A->join_part);
    defo_free(A->join_part_blocks);
    defo_free(A->join_dest);
    defo_free(A->join_pos);
    defo_free(A->join_pos_dest);
    defo_free(A);
}

const defo_bcsr_pattern *defo_bcsr_get_pattern(const defo_bcsr *A) {
    return &A->view;
}

double *defo_bcsr_values(defo_bcsr *A) {
    return A->val;
}

const double *defo_bcsr_values_const(const defo_bcsr *A) {
    return A->val;
}

void defo_bcsr_zero(defo_bcsr *A) {
    memset(A->val, 0, (size_t)A->num_blocks * 9 * sizeof *A->val);
}

int64_t defo_bcsr_find(const defo_bcsr *A, defo_index row, defo_index col) {
    if (row < 0 || row >= A->num_rows) return -1;
    int64_t lo = A->row_offset[row], hi = A->row_offset[row + 1];
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (A->col[mid] < col)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo < A->row_offset[row + 1] && A->col[lo] == col) ? lo : -1;
}

static void sort_small(defo_index *v, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        defo_index t = v[i];
        int64_t j = i;
        while (j > 0 && v[j - 1] > t) {
            v[j] = v[j - 1];
            j--;
        }
        v[j] = t;
    }
}

defo_status defo_bcsr_create(const defo_index *conn, defo_index num_elems, int per_elem,
                             defo_index num_nodes, defo_bcsr **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bcsr: out is NULL");
    *out = NULL;
    if (num_elems < 0 || num_nodes < 0 || per_elem <= 0 || per_elem > 64 ||
        (num_elems > 0 && !conn))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bcsr: bad sizes or missing connectivity");
    defo_bcsr *A = defo_calloc(1, sizeof *A);
    if (!A) return defo_error_oom("block sparse matrix", sizeof *A);
    defo_incidence inc;
    defo_status st = defo_incidence_build(&inc, conn, num_elems, per_elem, num_nodes);
    if (st) {
        defo_free(A);
        return defo_error_prefix("bcsr");
    }
    const int64_t p = per_elem, p2 = p * p;
    const int64_t slots = (int64_t)num_elems * p2;
    defo_index *mark = defo_malloc(((size_t)num_nodes + 1) * sizeof *mark);
    A->row_offset = defo_calloc((size_t)num_nodes + 1, sizeof *A->row_offset);
    A->diag = defo_malloc(((size_t)num_nodes + 1) * sizeof *A->diag);
    if (!mark || !A->row_offset || !A->diag) goto oom;
    for (defo_index n = 0; n < num_nodes; n++) mark[n] = -1;

    /* Pass 1: count distinct neighbours (incl. self) per row. */
    for (defo_index n = 0; n < num_nodes; n++) {
        int64_t cnt = 1;
        mark[n] = n;
        for (int64_t k = inc.offset[n]; k < inc.offset[n + 1]; k++) {
            const defo_index *en = conn + (inc.slot[k] / p) * p;
            for (int64_t j = 0; j < p; j++)
                if (mark[en[j]] != n) {
                    mark[en[j]] = n;
                    cnt++;
                }
        }
        A->row_offset[n + 1] = A->row_offset[n] + cnt;
    }
    A->num_rows = num_nodes;
    A->num_blocks = A->row_offset[num_nodes];
    A->col = defo_malloc((size_t)A->num_blocks * sizeof *A->col + 1);
    A->val = defo_calloc((size_t)A->num_blocks * 9 + 1, sizeof *A->val);
    if (!A->col || !A->val) goto oom;
    /* Pass 2: fill and sort columns. */
    for (defo_index n = 0; n < num_nodes; n++) mark[n] = -1;
    for (defo_index n = 0; n < num_nodes; n++) {
        int64_t w = A->row_offset[n];
        A->col[w++] = n;
        mark[n] = n;
        for (int64_t k = inc.offset[n]; k < inc.offset[n + 1]; k++) {
            const defo_index *en = conn + (inc.slot[k] / p) * p;
            for (int64_t j = 0; j < p; j++)
                if (mark[en[j]] != n) {
                    mark[en[j]] = n;
                    A->col[w++] = en[j];
                }
        }
        sort_small(A->col + A->row_offset[n], w - A->row_offset[n]);
        A->diag[n] = defo_bcsr_find(A, n, n);
    }
    defo_free(mark);
    mark = NULL;
    defo_incidence_free(&inc);

    /* Assembly map. */
    A->per_elem = per_elem;
    A->num_elems = num_elems;
    A->elem_block = defo_malloc((size_t)slots * sizeof *A->elem_block + 1);
    A->src_offset = defo_calloc((size_t)A->num_blocks + 1, sizeof *A->src_offset);
    A->src = defo_malloc((size_t)slots * sizeof *A->src + 1);
    if (!A->elem_block || !A->src_offset || !A->src) goto oom2;
    for (defo_index e = 0; e < num_elems; e++) {
        const defo_index *en = conn + (int64_t)e * p;
        for (int64_t i = 0; i < p; i++)
            for (int64_t j = 0; j < p; j++) {
                int64_t b = defo_bcsr_find(A, en[i], en[j]);
                A->elem_block[e * p2 + i * p + j] = b;
                A->src_offset[b + 1]++;
            }
    }
    for (int64_t b = 0; b < A->num_blocks; b++) A->src_offset[b + 1] += A->src_offset[b];
    {
        int64_t *fill = defo_malloc((size_t)A->num_blocks * sizeof *fill + 1);
        if (!fill) goto oom2;
        memcpy(fill, A->src_offset, (size_t)A->num_blocks * sizeof *fill);
        for (int64_t s = 0; s < slots; s++) A->src[fill[A->elem_block[s]]++] = s;
        defo_free(fill);
    }
    /* 5. the mirror of block b is the block of the mirrored slot of any of its
     *    sources (e, i, j) → (e, j, i); a source-less block is a lone diagonal */
    A->transpose = defo_malloc((size_t)A->num_blocks * sizeof *A->transpose + 1);
    if (!A->transpose) goto oom2;
    for (int64_t b = 0; b < A->num_blocks; b++) {
        if (A->src_offset[b] == A->src_offset[b + 1]) {
            A->transpose[b] = b;
            continue;
        }
        int64_t s = A->src[A->src_offset[b]], e = s / p2, ij = s % p2;
        A->transpose[b] = A->elem_block[e * p2 + (ij % p) * p + ij / p];
    }
    A->view = (defo_bcsr_pattern){A->num_rows,   A->num_blocks, A->row_offset, A->col,
                                  A->diag,       A->per_elem,   A->num_elems,  A->elem_block,
                                  A->src_offset, A->src,        A->transpose};
    *out = A;
    return DEFO_OK;
oom:
    defo_free(mark);
    defo_incidence_free(&inc);
oom2:
    defo_bcsr_destroy(A);
    return defo_error_oom("block sparse matrix", (size_t)slots * 2 * sizeof(int64_t));
}

void defo_bcsr_assemble(defo_bcsr *A, const double *elem_mats, double scale) {
    const int64_t p = A->per_elem, n3 = 3 * p;
    const int64_t nb = A->num_blocks;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(nb))
    for (int64_t b = 0; b < nb; b++) {
        double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t k = A->src_offset[b]; k < A->src_offset[b + 1]; k++) {
            int64_t e;
            int i, j;
            defo_bcsr_slot(A->src[k], (int)p, &e, &i, &j);
            const double *m = elem_mats + e * n3 * n3 + (3 * i) * n3 + 3 * j;
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) s[3 * r + c] += m[r * n3 + c];
        }
        for (int q = 0; q < 9; q++) A->val[9 * b + q] = scale * s[q];
    }
}

void defo_bcsr_add_diagonal(defo_bcsr *A, const double *d, double scale) {
    defo_index n = A->num_rows;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(9 * (size_t)n))
    for (defo_index i = 0; i < n; i++) {
        double *v = A->val + 9 * A->diag[i];
        double a = scale * d[i];
        v[0] += a;
        v[4] += a;
        v[8] += a;
    }
}

void defo_bcsr_add_diagonal_blocks(defo_bcsr *A, const double *blocks, double scale) {
    defo_index n = A->num_rows;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(9 * (size_t)n))
    for (defo_index i = 0; i < n; i++) {
        double *v = A->val + 9 * A->diag[i];
        const double *b = blocks + 9 * (size_t)i;
        for (int k = 0; k < 9; k++) v[k] += scale * b[k];
    }
}

/* One-thread cost of a block row of y = A x with a tet4 mesh's ~14 blocks
 * per row, ns (bench_loops): the product is worth a region from ~2 K rows. */
#define BCSR_NS_ROW 18

void defo_bcsr_multiply(const defo_bcsr *A, const double *x, double *y) {
    const defo_index n = A->num_rows;
    const int64_t *ro = A->row_offset;
    const defo_index *col = A->col;
    const double *val = A->val;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(n, BCSR_NS_ROW))
    for (defo_index i = 0; i < n; i++) {
        double s0 = 0, s1 = 0, s2 = 0;
        for (int64_t k = ro[i]; k < ro[i + 1]; k++) {
            const double *v = val + 9 * k;
            const double *xc = x + 3 * (int64_t)col[k];
            double x0 = xc[0], x1 = xc[1], x2 = xc[2];
            s0 += v[0] * x0 + v[1] * x1 + v[2] * x2;
            s1 += v[3] * x0 + v[4] * x1 + v[5] * x2;
            s2 += v[6] * x0 + v[7] * x1 + v[8] * x2;
        }
        y[3 * (int64_t)i] = s0;
        y[3 * (int64_t)i + 1] = s1;
        y[3 * (int64_t)i + 2] = s2;
    }
}

void defo_bcsr_multiply_many(const defo_bcsr *A, int k, const double *const *X, double *const *Y) {
    const defo_index n = A->num_rows;
    const int64_t *ro = A->row_offset;
    const defo_index *col = A->col;
    const double *val = A->val;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(n, BCSR_NS_ROW * (1 + k) / 2))
    for (defo_index i = 0; i < n; i++) {
        double s[3 * DEFO_BCSR_MANY_MAX];
        for (int j = 0; j < 3 * k; j++) s[j] = 0;
        for (int64_t q = ro[i]; q < ro[i + 1]; q++) {
            const double *v = val + 9 * q;
            for (int j = 0; j < k; j++) {
                const double *xc = X[j] + 3 * (int64_t)col[q];
                double x0 = xc[0], x1 = xc[1], x2 = xc[2];
                s[3 * j] += v[0] * x0 + v[1] * x1 + v[2] * x2;
                s[3 * j + 1] += v[3] * x0 + v[4] * x1 + v[5] * x2;
                s[3 * j + 2] += v[6] * x0 + v[7] * x1 + v[8] * x2;
            }
        }
        for (int j = 0; j < k; j++)
            for (int c = 0; c < 3; c++) Y[j][3 * (size_t)i + (size_t)c] = s[3 * j + c];
    }
}

void defo_bcsr_to_dense(const defo_bcsr *A, double *dense) {
    const size_t m = 3 * (size_t)A->num_rows;
    memset(dense, 0, m * m * sizeof *dense);
    for (defo_index i = 0; i < A->num_rows; i++)
        for (int64_t k = A->row_offset[i]; k < A->row_offset[i + 1]; k++)
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++)
                    dense[(3 * (size_t)i + (size_t)r) * m + 3 * (size_t)A->col[k] + (size_t)c] =
                        A->val[9 * k + 3 * r + c];
}

size_t defo_bcsr_bytes(const defo_bcsr *A) {
    size_t nb = (size_t)A->num_blocks, nr = (size_t)A->num_rows;
    size_t slots = (size_t)A->num_elems * (size_t)A->per_elem * (size_t)A->per_elem;
    return nb * (9 * sizeof(double) + sizeof(defo_index) + 2 * sizeof(int64_t)) +
           nr * 2 * sizeof(int64_t) + slots * 2 * sizeof(int64_t);
}

/* ---------------------------------------------------------------- join */
typedef struct join_key {
    int64_t row, col;
    size_t idx;
} join_key;

static int join_cmp(const void *pa, const void *pb) {
    const join_key *a = pa, *b = pb;
    if (a->row != b->row) return a->row < b->row ? -1 : 1;
    if (a->col != b->col) return a->col < b->col ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* The pattern of the join: rows of each part merged with the distinct extra
 * positions (pos, sorted by row then column). */
static defo_status join_pattern(defo_bcsr *A, const defo_bcsr *const *parts, int count,
                                const int64_t *pos, int64_t npos) {
    defo_index n = 0;
    int64_t blocks = 0;
    for (int k = 0; k < count; k++) {
        n += parts[k]->num_rows;
        blocks += parts[k]->num_blocks;
    }
    defo_free(A->row_offset);
    defo_free(A->col);
    defo_free(A->diag);
    defo_free(A->val);
    defo_free(A->join_dest);
    defo_free(A->join_pos_dest);
    A->num_rows = n;
    A->row_offset = defo_calloc((size_t)n + 1, sizeof *A->row_offset);
    A->diag = defo_malloc(((size_t)n + 1) * sizeof *A->diag);
    A->col = defo_malloc(((size_t)(blocks + npos) + 1) * sizeof *A->col);
    A->join_dest = defo_malloc(((size_t)blocks + 1) * sizeof *A->join_dest);
    A->join_pos_dest = defo_malloc(((size_t)npos + 1) * sizeof *A->join_pos_dest);
    if (!A->row_offset || !A->diag || !A->col || !A->join_dest || !A->join_pos_dest)
        return defo_error_oom("joined matrix", (size_t)(blocks + npos) * 80);
    int64_t w = 0, pe = 0, src = 0;
    defo_index off = 0;
    for (int k = 0; k < count; k++) {
        const defo_bcsr *P = parts[k];
        for (defo_index r = 0; r < P->num_rows; r++) {
            const int64_t grow = off + r;
            int64_t a = P->row_offset[r], ae = P->row_offset[r + 1];
            while (a < ae || (pe < npos && pos[2 * pe] == grow)) {
                const int64_t ca = a < ae ? (int64_t)P->col[a] + off : INT64_MAX;
                const int64_t ce = pe < npos && pos[2 * pe] == grow ? pos[2 * pe + 1] : INT64_MAX;
                const int64_t c = ca < ce ? ca : ce;
                A->col[w] = (defo_index)c;
                if (ca == c) A->join_dest[src + (a - P->row_offset[0])] = w, a++;
                if (ce == c) A->join_pos_dest[pe] = w, pe++;
                w++;
            }
            A->row_offset[grow + 1] = w;
        }
        src += P->num_blocks;
        off += P->num_rows;
    }
    if (pe != npos)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bcsr join: extra position out of range");
    A->num_blocks = w;
    A->val = defo_calloc((size_t)w * 9 + 1, sizeof *A->val);
    if (!A->val) return defo_error_oom("joined matrix", (size_t)w * 72);
    for (defo_index r = 0; r < n; r++) {
        A->diag[r] = defo_bcsr_find(A, r, r);
        if (A->diag[r] < 0)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bcsr join: row %ld has no diagonal",
                              (long)r);
    }
    A->view = (defo_bcsr_pattern){A->num_rows, A->num_blocks, A->row_offset, A->col, A->diag, 0,
                                  0,           NULL,          NULL,          NULL,   NULL};
    return DEFO_OK;
}

defo_status defo_bcsr_join(defo_bcsr **Ap, const defo_bcsr *const *parts, int count,
                           const int64_t *extra_rc, const double *extra_val, size_t num_extra) {
    if (!Ap || count < 1 || !parts || (num_extra > 0 && (!extra_rc || !extra_val)))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bcsr join: bad arguments");
    defo_index n = 0;
    for (int k = 0; k < count; k++) {
        if (!parts[k])
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bcsr join: part %d is NULL", k);
        n += parts[k]->num_rows;
    }
    for (size_t e = 0; e < num_extra; e++)
        if (extra_rc[2 * e] < 0 || extra_rc[2 * e] >= n || extra_rc[2 * e + 1] < 0 ||
            extra_rc[2 * e + 1] >= n)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "bcsr join: extra block %zu at (%lld, %lld) outside %ld rows", e,
                              (long long)extra_rc[2 * e], (long long)extra_rc[2 * e + 1], (long)n);
    defo_bcsr *A = *Ap;
    if (!A) {
        A = defo_calloc(1, sizeof *A);
        if (!A) return defo_error_oom("joined matrix", sizeof *A);
        *Ap = A;
    }
    join_key *keys = defo_malloc((num_extra + 1) * sizeof *keys);
    if (!keys) return defo_error_oom("joined matrix", num_extra * sizeof *keys);
    for (size_t e = 0; e < num_extra; e++)
        keys[e] = (join_key){extra_rc[2 * e], extra_rc[2 * e + 1], e};
    qsort(keys, num_extra, sizeof *keys, join_cmp);
    /* distinct positions, compared with the last build's */
    int64_t npos = 0;
    for (size_t e = 0; e < num_extra; e++)
        if (e == 0 || keys[e].row != keys[e - 1].row || keys[e].col != keys[e - 1].col) npos++;
    int same = A->join_count == count && A->join_num_pos == npos && A->val;
    for (int k = 0; same && k < count; k++)
        same = A->join_part[k] == parts[k] && A->join_part_blocks[k] == parts[k]->num_blocks;
    if (npos > A->join_pos_cap) {
        int64_t *np = defo_realloc(A->join_pos, 2 * (size_t)npos * sizeof *np);
        if (!np) {
            defo_free(keys);
            return defo_error_oom("joined matrix", (size_t)npos * 16);
        }
        A->join_pos = np;
        A->join_pos_cap = npos;
        same = 0;
    }
    int64_t q = -1;
    for (size_t e = 0; e < num_extra; e++) {
        if (e > 0 && keys[e].row == keys[e - 1].row && keys[e].col == keys[e - 1].col) continue;
        q++;
        if (same && (A->join_pos[2 * q] != keys[e].row || A->join_pos[2 * q + 1] != keys[e].col))
            same = 0;
        A->join_pos[2 * q] = keys[e].row;
        A->join_pos[2 * q + 1] = keys[e].col;
    }
    defo_status st = DEFO_OK;
    if (!same) {
        A->join_num_pos = npos;
        const defo_bcsr **jp = defo_realloc((void *)A->join_part, (size_t)count * sizeof *jp);
        int64_t *jb = defo_realloc(A->join_part_blocks, (size_t)count * sizeof *jb);
        if (jp) A->join_part = jp;
        if (jb) A->join_part_blocks = jb;
        if (!jp || !jb) st = defo_error_oom("joined matrix", (size_t)count * 16);
        if (!st) st = join_pattern(A, parts, count, A->join_pos, npos);
        if (st) {
            A->join_count = 0; /* rebuilt next time */
            defo_free(keys);
            return st;
        }
        A->join_count = count;
        for (int k = 0; k < count; k++) {
            A->join_part[k] = parts[k];
            A->join_part_blocks[k] = parts[k]->num_blocks;
        }
    }
    /* values: the parts' blocks, then the extra blocks in sorted order */
    memset(A->val, 0, (size_t)A->num_blocks * 9 * sizeof *A->val);
    int64_t src = 0;
    for (int k = 0; k < count; k++) {
        const defo_bcsr *P = parts[k];
        for (int64_t b = 0; b < P->num_blocks; b++) {
            double *d = A->val + 9 * A->join_dest[src + b];
            const double *v = P->val + 9 * b;
            for (int c = 0; c < 9; c++) d[c] += v[c];
        }
        src += P->num_blocks;
    }
    q = -1;
    for (size_t e = 0; e < num_extra; e++) {
        if (e == 0 || keys[e].row != keys[e - 1].row || keys[e].col != keys[e - 1].col) q++;
        double *d = A->val + 9 * A->join_pos_dest[q];
        const double *v = extra_val + 9 * keys[e].idx;
        for (int c = 0; c < 9; c++) d[c] += v[c];
    }
    defo_free(keys);
    return DEFO_OK;
}
