/*
 * base/parallel.h — deterministic parallel loops (docs/architecture.md "Threads").
 *
 * The rule every module follows: a parallel loop over elements writes each
 * element's contribution into its own slot of a per-element buffer; a second
 * parallel loop over nodes sums, for each node, the slots that touch it in a
 * fixed (increasing slot) order.  No atomics on doubles, no reductions whose
 * order depends on the thread count, so results are bitwise identical for any
 * number of threads.  Scalar sums use defo_sum, whose blocking is fixed.
 */
#ifndef DEFO_INTERNAL_PARALLEL_H
#define DEFO_INTERNAL_PARALLEL_H

#include "base/base.h"

#ifdef _OPENMP
#include <omp.h>
#define DEFO_PRAGMA(x) _Pragma(#x)
/* Static schedule: loop iterations are independent, so any split is correct.
 * DEFO_PARALLEL_FOR is for one-off loops (mesh generation, grids) that are
 * large by construction; every loop a simulation step runs uses
 * DEFO_PARALLEL_FOR_IF with a work threshold, which the thread governor
 * (defo_parallel_go) may still turn down. */
#define DEFO_PARALLEL_FOR DEFO_PRAGMA(omp parallel for schedule(static))
#define DEFO_PARALLEL_FOR_IF(cond)                                                                 \
    DEFO_PRAGMA(omp parallel for schedule(static) if (defo_parallel_go(cond)))
/* The same decision for a hand-written omp pragma's if clause. */
#define DEFO_PARALLEL_GO(cond) defo_parallel_go(cond)
/* One region around several loops (an element pass and its node gather):
 * one fork and join instead of one per loop.  Inside it, DEFO_FOR shares a
 * loop among the team (an implicit barrier at its end); outside any region
 * DEFO_FOR runs the whole loop on the calling thread. */
#define DEFO_PARALLEL_REGION_IF(cond) DEFO_PRAGMA(omp parallel if (defo_parallel_go(cond)))
#define DEFO_FOR DEFO_PRAGMA(omp for schedule(static))
/* DEFO_FOR with integer sums (exact, so any split gives the same total). */
#define DEFO_FOR_SUM(...) DEFO_PRAGMA(omp for schedule(static) reduction(+ : __VA_ARGS__))
#else
#define DEFO_PARALLEL_FOR
#define DEFO_PARALLEL_FOR_IF(cond)
#define DEFO_PARALLEL_GO(cond) 0
#define DEFO_PARALLEL_REGION_IF(cond)
#define DEFO_FOR
#define DEFO_FOR_SUM(...)
#endif

/* Work thresholds.  A parallel region costs a fork and a join: about 1-3 µs
 * while the other thread spins, 10-50 µs when it has gone to sleep, and up
 * to a scheduler time slice (milliseconds) when another process holds its
 * core.  A loop is worth a region when one thread would spend at least
 * DEFO_PARALLEL_WORK_NS on it: its iteration count times the measured
 * one-thread cost of one iteration of its kind (bench_loops), not the
 * iteration count alone — a tet10 force pass is worth a region at 50
 * elements, a tet4 damping product only at ~1800. */
#define DEFO_PARALLEL_WORK_NS 40000.0
#define DEFO_PARALLEL_WORTH(count, ns_each)                                                        \
    ((double)(count) * (double)(ns_each) >= DEFO_PARALLEL_WORK_NS)
/* Per-node loops of a few dozen flops (block inverses, node updates in the
 * integrators, gathers: ~8-20 ns per node): 4096 nodes. */
#define DEFO_PARALLEL_MIN 4096
/* Elementwise vector loops (dot blocks ~0.5 ns per entry, axpy,
 * projections and diagonal scalings 0.1-0.3 ns in cache): from 65536
 * entries a dot product carries ~33 µs (a 5 K-tet body: ~4 K entries, ~1 µs
 * of work per loop, ~160 such loops per step of 20 CG iterations). */
#define DEFO_PARALLEL_MIN_VECTOR 65536
/* The two thresholds above as work estimates (~10 ns per node, ~0.6 ns per
 * vector entry): the if clauses of per-node and vector loops. */
#define DEFO_PARALLEL_NODES(n) DEFO_PARALLEL_WORTH(n, DEFO_PARALLEL_WORK_NS / DEFO_PARALLEL_MIN)
#define DEFO_PARALLEL_VECTOR(m)                                                                    \
    DEFO_PARALLEL_WORTH(m, DEFO_PARALLEL_WORK_NS / DEFO_PARALLEL_MIN_VECTOR)

/* The if clause of every step loop: 1 when the loop should open a parallel
 * region — wanted (its work threshold is met), more than one thread
 * allowed, not already inside a region, and the thread governor has not
 * found one thread faster.
 *
 * The governor (DEFO_THREADS_ADAPTIVE, the default): for each loop site and
 * calling thread it times the site's loops now and then with a region and
 * on one thread (a sample: from the site's call to the next wanted loop)
 * and keeps the faster (threads must win by 10 %) for a stretch of time
 * that doubles while trials agree (0.5 s up to 8 s, never longer).  A process starts with
 * a trial per site; a parallel sample far slower than one thread (a loaded
 * machine) ends that site's trial at once.  Results do not depend on any
 * of this (bitwise identical for any thread count). */
int defo_parallel_go(int wanted);
/* Forget the calling thread's verdicts: each site's next loop starts a trial,
 * as in a new process (benchmarks comparing runs of different scenes). */
void defo_parallel_governor_reset(void);

/* Debug counters (tests): loops that met their threshold and regions
 * actually opened, since the process started. */
typedef struct defo_parallel_counts {
    long long wanted;
    long long opened;
} defo_parallel_counts;
defo_parallel_counts defo_parallel_get_counts(void);

/* Node -> slot incidence in CSR form.  A slot is (element * per_elem + local
 * node).  For node n the slots are slot[offset[n] .. offset[n+1]) in
 * increasing order, which fixes the summation order of defo_gather3. */
typedef struct defo_incidence {
    defo_index num_nodes;
    int64_t *offset; /* num_nodes + 1 */
    int64_t *slot;   /* offset[num_nodes] */
} defo_incidence;

/* Build the incidence of conn (num_elems * per_elem node indices, all in
 * [0, num_nodes)).  Counting sort: O(nodes + slots), deterministic. */
defo_status defo_incidence_build(defo_incidence *inc, const defo_index *conn, int64_t num_elems,
                                 int per_elem, defo_index num_nodes);
void defo_incidence_free(defo_incidence *inc);

/* out[3n..3n+2] = sum over the slots s of node n of per_slot[3s..3s+2],
 * summed in increasing slot order.  Opens its own region when large. */
void defo_gather3(const defo_incidence *inc, const double *per_slot, double *out);
/* The same, shared by the team when called inside a parallel region
 * (DEFO_FOR; every thread of the team must call it), on the calling thread
 * otherwise. */
void defo_gather3_team(const defo_incidence *inc, const double *per_slot, double *out);

/* Sum of v[0..n) with a fixed blocking (independent of the thread count). */
double defo_sum(const double *v, size_t n);

#endif
