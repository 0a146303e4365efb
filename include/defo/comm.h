/*
 * defo/comm.h — the processes of one distributed run as the engine sees
 * them (docs/distributed.md): a rank, a size and three collective
 * operations that a message layer provides (defo/petsc.h hands out one on
 * MPI).  The engine never calls MPI itself: the world, the force model and
 * the solvers exchange data only through this table, so the library builds
 * and runs without MPI, and a run of one process has no comm at all.
 *
 * Every operation is collective: all processes call it in the same order
 * with the same sizes.  Results are bitwise identical on every process and
 * from run to run: a sum is made by every process from the gathered
 * contributions in rank order, never by a reduction whose association order
 * may differ between processes (a process that saw another bit would take
 * another line-search branch and the run would hang).
 */
#ifndef DEFO_COMM_H
#define DEFO_COMM_H

#include "defo/base.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_comm {
    int rank; /* this process, 0 .. size − 1 */
    int size; /* processes, >= 1 */
    void *ctx;
    /* all[r·count .. (r+1)·count) = rank r's `mine` (count doubles each) */
    defo_status (*allgather)(void *ctx, const double *mine, int count, double *all);
    /* all[displs[r] .. displs[r] + counts[r]) = rank r's `mine`; count is
     * this rank's counts[rank] */
    defo_status (*allgatherv)(void *ctx, const double *mine, int count, double *all,
                              const int *counts, const int *displs);
    /* bytes bytes of root's buf into every process's buf */
    defo_status (*broadcast)(void *ctx, void *buf, size_t bytes, int root);
} defo_comm;

/* vals[0..count) summed over the processes in rank order, in place (every
 * process gets the same bits).  A NULL comm leaves vals alone. */
DEFO_API defo_status defo_comm_sum(const defo_comm *comm, double *vals, int count);
/* The smallest / largest over the processes, in place. */
DEFO_API defo_status defo_comm_min(const defo_comm *comm, double *vals, int count);
DEFO_API defo_status defo_comm_max(const defo_comm *comm, double *vals, int count);
/* One outcome for every process: when some process passes an error, every
 * process returns the error of the lowest such rank with its message
 * (prefixed "rank R: " on the others); otherwise each returns its own
 * status.  So a failure on one process (a NaN in one of its elements) ends
 * the call the same way everywhere. */
DEFO_API defo_status defo_comm_agree(const defo_comm *comm, defo_status status);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_COMM_H */
