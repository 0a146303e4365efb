/*
 * base/parallel.c — thread control and the thread governor, node incidence,
 * deterministic gather and sum.  See parallel.h for the determinism rule
 * these implement and for what the governor decides.
 *
 * Governor invariants: it only chooses between opening a region and running
 * the loop on the calling thread, so no result depends on it; its state is
 * per calling thread (no locks, no shared writes); it allocates nothing.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "base/parallel.h"

#include <string.h>
#include <time.h>

static int thread_policy = DEFO_THREADS_ADAPTIVE;

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

void defo_set_thread_policy(defo_thread_policy policy) {
    __atomic_store_n(&thread_policy,
                     policy == DEFO_THREADS_ALWAYS ? DEFO_THREADS_ALWAYS : DEFO_THREADS_ADAPTIVE,
                     __ATOMIC_RELAXED);
}

defo_thread_policy defo_get_thread_policy(void) {
    return (defo_thread_policy)__atomic_load_n(&thread_policy, __ATOMIC_RELAXED);
}

static _Thread_local defo_parallel_counts counts;

/* ------------------------------------------------------------ governor */
#ifdef _OPENMP
/* A window ends at the first wanted loop after both limits, or after
 * GOV_WINDOW_LONG alone (loops of several ms each: a 100 K-tet force pass
 * is 25 ms, eight of them would make a trial last seconds).  Shorter
 * windows time the scheduler rather than the work: on a loaded machine one
 * time slice taken by another process (~3 ms) is noise a window must
 * outlast.  A window's figure is its wall time over the one-thread work its
 * loops' conditions estimated, so windows over different phases of a step
 * (assembly, then CG's products and dots) compare; per loop they would not
 * (a 98 K-tet quasistatic run kept one thread, 1.8x slower, on a quiet
 * machine). */
#define GOV_WINDOW_LOOPS   8
#define GOV_WINDOW_SECONDS 0.020
#define GOV_WINDOW_LONG    0.050
/* A trial: three one-thread and three parallel windows, one-thread first
 * (the parallel windows' cut-off needs its time), interleaved so a drift in
 * the machine's load hits both alike. */
#define GOV_TRIAL 6
static const unsigned char trial_parallel[GOV_TRIAL] = {0, 1, 1, 0, 0, 1};
/* Parallel must beat one thread by this factor to be kept (a gain within
 * the noise of a loaded machine is not worth a second core). */
#define GOV_KEEP 0.90
/* A parallel trial window slower per unit of work than this many times the
 * one-thread windows ends the trial at once (a loaded machine, where one
 * region can wait a whole time slice for its second thread): checked at
 * every loop once the window is GOV_CUT_MIN_SECONDS old, so a bad trial
 * costs a region or two, not a window. */
#define GOV_CUT             2.0
#define GOV_CUT_MIN_SECONDS 0.002
/* After a trial the verdict holds for GOV_HOLD windows (~0.5 s of work),
 * twice as long each time the next trial agrees, up to 16x (~8 s).  A trial
 * on a loaded machine costs a region that waits for its second thread plus
 * what that thread spins afterwards (OpenMP's default spin: ~10 ms), so
 * trials must be rare to cost little; on a quiet machine the one-thread
 * windows of a trial forgo the gain for ~30 ms.  A process starts with a
 * trial (~60 ms of work): a quiet machine gains its second thread at once,
 * a loaded one pays a cut-short parallel window or two. */
#define GOV_HOLD        50
#define GOV_BACKOFF_MAX 16

typedef struct governor {
    int started;
    int trial;                /* 1 while trying, 0 while holding a verdict */
    int parallel;             /* this window opens regions */
    int index;                /* window index within the trial */
    long loops;               /* wanted loops in this window */
    double work;              /* their estimated one-thread work [ns] */
    double start;             /* this window's start (seconds) */
    double per[2][GOV_TRIAL]; /* trial seconds per ns of work, [parallel][k] */
    int count[2];
    long hold; /* windows left holding the verdict */
    int backoff;
    int verdict; /* the last trial's choice: parallel or not */
} governor;

static _Thread_local governor gov;
/* The work the last DEFO_PARALLEL_WORTH of this thread estimated; 0 once a
 * loop has taken it. */
static _Thread_local double next_work;

static double gov_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double median3(const double *v, int n) {
    if (n == 1) return v[0];
    if (n == 2) return 0.5 * (v[0] + v[1]);
    double a = v[0], b = v[1], c = v[2];
    if (a > b) {
        double t = a;
        a = b;
        b = t;
    }
    return c < a ? a : (c > b ? b : c);
}

static void gov_trial_start(governor *g) {
    g->trial = 1;
    g->index = 0;
    g->count[0] = g->count[1] = 0;
    g->parallel = trial_parallel[0];
}

static void gov_verdict(governor *g, int parallel) {
    g->backoff = parallel == g->verdict && g->backoff > 0
                     ? (g->backoff < GOV_BACKOFF_MAX ? 2 * g->backoff : GOV_BACKOFF_MAX)
                     : 1;
    g->verdict = parallel;
    g->trial = 0;
    g->parallel = parallel;
    g->hold = (long)GOV_HOLD * g->backoff;
}

/* End the current window at time t. */
static void gov_window_end(governor *g, double t) {
    if (g->trial) {
        const int p = g->parallel;
        g->per[p][g->count[p]++] = (t - g->start) / g->work;
        if (++g->index == GOV_TRIAL) {
            const double serial = median3(g->per[0], g->count[0]);
            const double par = median3(g->per[1], g->count[1]);
            gov_verdict(g, par < GOV_KEEP * serial);
        } else {
            g->parallel = trial_parallel[g->index];
        }
    } else if (--g->hold <= 0) {
        gov_trial_start(g);
    }
    g->loops = 0;
    g->work = 0;
    g->start = t;
}

static int gov_tick(governor *g, double work) {
    if (!g->started) {
        memset(g, 0, sizeof *g);
        g->started = 1;
        g->verdict = -1;
        gov_trial_start(g);
        g->start = gov_now();
    }
    g->loops++;
    g->work += work;
    double t = 0;
    if (g->trial && g->parallel && g->count[0] > 0) {
        /* a parallel trial window far slower per unit of work than one thread (a
         * loaded machine): end the trial at once */
        t = gov_now();
        const double serial = median3(g->per[0], g->count[0]);
        if (t - g->start > GOV_CUT_MIN_SECONDS && t - g->start > GOV_CUT * serial * g->work) {
            g->loops = 0;
            g->work = 0;
            g->start = t;
            gov_verdict(g, 0);
            return 0;
        }
    }
    if (t == 0) t = gov_now();
    if (t - g->start >= (g->loops >= GOV_WINDOW_LOOPS ? GOV_WINDOW_SECONDS : GOV_WINDOW_LONG))
        gov_window_end(g, t);
    return g->parallel;
}

#endif /* _OPENMP */

int defo_parallel_worth(double work_ns) {
#ifdef _OPENMP
    next_work = work_ns;
#endif
    return work_ns >= DEFO_PARALLEL_WORK_NS;
}

int defo_parallel_go(int wanted) {
#ifdef _OPENMP
    const double work = next_work > 0 ? next_work : DEFO_PARALLEL_WORK_NS;
    next_work = 0;
#endif
    if (!wanted) return 0;
    counts.wanted++;
#ifdef _OPENMP
    if (omp_in_parallel() || omp_get_max_threads() < 2) return 0;
    const int go = defo_get_thread_policy() == DEFO_THREADS_ALWAYS ? 1 : gov_tick(&gov, work);
    counts.opened += go;
    return go;
#else
    return 0;
#endif
}

void defo_parallel_governor_reset(void) {
#ifdef _OPENMP
    gov.started = 0;
#endif
}

defo_parallel_counts defo_parallel_get_counts(void) {
    return counts;
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

static inline void gather3_node(const int64_t *off, const int64_t *slot, const double *per_slot,
                                defo_index n, double *out) {
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

void defo_gather3(const defo_incidence *inc, const double *per_slot, double *out) {
    const defo_index n_nodes = inc->num_nodes;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n_nodes))
    for (defo_index n = 0; n < n_nodes; n++) gather3_node(inc->offset, inc->slot, per_slot, n, out);
}

void defo_gather3_team(const defo_incidence *inc, const double *per_slot, double *out) {
    const defo_index n_nodes = inc->num_nodes;
    DEFO_FOR
    for (defo_index n = 0; n < n_nodes; n++) gather3_node(inc->offset, inc->slot, per_slot, n, out);
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
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(n))
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
