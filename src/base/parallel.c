/*
 * base/parallel.c — thread control, node incidence, deterministic gather and sum.
 * See parallel.h for the determinism rule these implement.
 */
#include "base/parallel.h"

#include <string.h>

void defo_set_threads(int threads) {
#ifdef _OPENMP
    if (threads <= 0) threads = omp_get_num_procs();
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

int defo_get_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

defo_status defo_incidence_build(defo_incidence *inc, const defo_index *conn, int64_t num_elems,
                                 int per_elem, defo_index num_nodes) {
    memset(inc, 0, sizeof *inc);
    if (num_elems < 0 || per_elem <= 0 || num_nodes < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "incidence: bad sizes");
    int64_t slots = num_elems * per_elem;
    inc->offset = defo_calloc((size_t)num_nodes + 1, sizeof *inc->offset);
    inc->slot = defo_malloc((size_t)slots * sizeof *inc->slot);
    if (!inc->offset || !inc->slot) {
        defo_incidence_free(inc);
        return defo_error_oom("node incidence", (size_t)slots * sizeof(int64_t));
    }
    for (int64_t s = 0; s < slots; s++) {
        defo_index n = conn[s];
        if (n < 0 || n >= num_nodes) {
            defo_incidence_free(inc);
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "incidence: element %lld refers to node %ld, but there are %ld nodes",
                              (long long)(s / per_elem), (long)n, (long)num_nodes);
        }
        inc->offset[n + 1]++;
    }
    for (defo_index n = 0; n < num_nodes; n++) inc->offset[n + 1] += inc->offset[n];
    int64_t *fill = defo_malloc((size_t)num_nodes * sizeof *fill + 1);
    if (!fill) {
        defo_incidence_free(inc);
        return defo_error_oom("node incidence", (size_t)num_nodes * sizeof(int64_t));
    }
    memcpy(fill, inc->offset, (size_t)num_nodes * sizeof *fill);
    for (int64_t s = 0; s < slots; s++) inc->slot[fill[conn[s]]++] = s;
    defo_free(fill);
    inc->num_nodes = num_nodes;
    return DEFO_OK;
}

void defo_incidence_free(defo_incidence *inc) {
    defo_free(inc->offset);
    defo_free(inc->slot);
    memset(inc, 0, sizeof *inc);
}

void defo_gather3(const defo_incidence *inc, const double *per_slot, double *out) {
    const int64_t *off = inc->offset;
    const int64_t *slot = inc->slot;
    defo_index n_nodes = inc->num_nodes;
    DEFO_PARALLEL_FOR_IF(n_nodes > DEFO_PARALLEL_MIN)
    for (defo_index n = 0; n < n_nodes; n++) {
        double sx = 0, sy = 0, sz = 0;
        for (int64_t k = off[n]; k < off[n + 1]; k++) {
            const double *p = per_slot + 3 * slot[k];
            sx += p[0];
            sy += p[1];
            sz += p[2];
        }
        out[3 * n] = sx;
        out[3 * n + 1] = sy;
        out[3 * n + 2] = sz;
    }
}

#define SUM_BLOCK 4096

double defo_sum(const double *v, size_t n) {
    size_t blocks = (n + SUM_BLOCK - 1) / SUM_BLOCK;
    if (blocks <= 1) {
        double s = 0;
        for (size_t i = 0; i < n; i++) s += v[i];
        return s;
    }
    /* Block partial sums: each block summed sequentially, blocks combined
     * sequentially, so the grouping never depends on the thread count. */
    double stack_partial[64];
    double *partial = blocks <= 64 ? stack_partial : defo_malloc(blocks * sizeof *partial);
    if (!partial) { /* fall back to a sequential sum with the same grouping */
        double total = 0;
        for (size_t b = 0; b < blocks; b++) {
            double s = 0;
            size_t end = DEFO_MIN(n, (b + 1) * SUM_BLOCK);
            for (size_t i = b * SUM_BLOCK; i < end; i++) s += v[i];
            total += s;
        }
        return total;
    }
    DEFO_PARALLEL_FOR
    for (size_t b = 0; b < blocks; b++) {
        double s = 0;
        size_t end = DEFO_MIN(n, (b + 1) * SUM_BLOCK);
        for (size_t i = b * SUM_BLOCK; i < end; i++) s += v[i];
        partial[b] = s;
    }
    double total = 0;
    for (size_t b = 0; b < blocks; b++) total += partial[b];
    if (partial != stack_partial) defo_free(partial);
    return total;
}
