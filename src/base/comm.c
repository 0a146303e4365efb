/*
 * base/comm.c — reductions and the shared outcome of a collective call on
 * a defo_comm (defo/comm.h).
 *
 * Every reduction gathers each process's values (allgather) and combines
 * them on every process in rank order, so all processes hold the same bits:
 * IEEE addition is commutative but not associative, and an MPI reduction
 * may associate differently on different processes.  Scratch up to
 * COMM_STACK doubles lives on the stack (the hot callers reduce one to four
 * values per call), beyond that it is allocated.
 */
#include "defo/comm.h"

#include "base/base.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define COMM_STACK 1024

typedef enum { COMM_SUM, COMM_MIN, COMM_MAX } comm_op;

static defo_status reduce(const defo_comm *c, double *vals, int count, comm_op op) {
    if (!c || c->size <= 1 || count <= 0) return DEFO_OK;
    double stack[COMM_STACK];
    const size_t total = (size_t)c->size * (size_t)count;
    double *all = total <= COMM_STACK ? stack : defo_malloc(total * sizeof *all);
    if (!all) return defo_error_oom("reduction", total * sizeof *all);
    defo_status s = c->allgather(c->ctx, vals, count, all);
    if (!s)
        for (int k = 0; k < count; k++) {
            double v = all[k];
            for (int r = 1; r < c->size; r++) {
                const double a = all[(size_t)r * (size_t)count + (size_t)k];
                v = op == COMM_SUM ? v + a : op == COMM_MIN ? fmin(v, a) : fmax(v, a);
            }
            vals[k] = v;
        }
    if (all != stack) defo_free(all);
    return s;
}

defo_status defo_comm_sum(const defo_comm *comm, double *vals, int count) {
    return reduce(comm, vals, count, COMM_SUM);
}
defo_status defo_comm_min(const defo_comm *comm, double *vals, int count) {
    return reduce(comm, vals, count, COMM_MIN);
}
defo_status defo_comm_max(const defo_comm *comm, double *vals, int count) {
    return reduce(comm, vals, count, COMM_MAX);
}

defo_status defo_comm_agree(const defo_comm *comm, defo_status status) {
    if (!comm || comm->size <= 1) return status;
    double mine = (double)status, stack[COMM_STACK];
    double *all = comm->size <= COMM_STACK ? stack : defo_malloc((size_t)comm->size * sizeof *all);
    if (!all) return defo_error_oom("status agreement", (size_t)comm->size * sizeof *all);
    defo_status s = comm->allgather(comm->ctx, &mine, 1, all);
    int first = -1;
    defo_status err = DEFO_OK;
    for (int r = 0; !s && r < comm->size && first < 0; r++)
        if (all[r] < 0) first = r, err = (defo_status)all[r];
    if (all != stack) defo_free(all);
    if (s) return s;
    if (first < 0) return status;
    /* the message of the lowest failing rank, to every process */
    char msg[1024];
    memset(msg, 0, sizeof msg);
    if (comm->rank == first) snprintf(msg, sizeof msg, "%s", defo_last_error());
    s = comm->broadcast(comm->ctx, msg, sizeof msg, first);
    if (s) return s;
    msg[sizeof msg - 1] = '\0';
    if (comm->rank == first) return defo_error(err, "%s", msg);
    return defo_error(err, "rank %d: %s", first, msg);
}
