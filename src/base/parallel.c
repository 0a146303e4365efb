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

#include <math.h>
#include <stdint.h>
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
/* One record per loop site (the call site of defo_parallel_go, told apart by
 * its return address), per calling thread.  A site's sample is the time from
 * its call to the next wanted loop's call on the same thread: the loop and
 * whatever serial code follows it, which is the same in both modes.  Sites
 * are timed separately because the loops of a step are not alike (a 25 ms
 * force pass, a 40 µs dot product, a factorisation once a frame): a window
 * mixing them compared one phase of a step with another and kept one
 * thread, 1.8x slower, for a 98 K-tet quasistatic run on a quiet machine.
 *
 * A trial is six phases of GOV_RUN samples, one-thread first (the cut-off
 * below needs its time), interleaved so a drift in the machine's load hits
 * both alike; a phase's figure is the mean of its samples after the first
 * (when the trial's first sample took more than GOV_LONG_SECONDS, four
 * phases of one sample, S P S P, each mode's figure the faster of its two:
 * a loop called once per Newton iteration would otherwise need 24
 * iterations to decide, and the first region of a process creates the
 * thread team);
 * threads are kept when their median beats one thread's by GOV_KEEP.  The
 * verdict then holds for GOV_HOLD seconds or GOV_HOLD_TRIALS times the
 * trial's length, whichever is longer, twice as long each time the next
 * trial agrees, up to 16x; GOV_SLOW_SAMPLES parallel samples in a row over
 * GOV_CUT times the trial's parallel median end a hold of threads early.  A parallel sample slower than GOV_CUT times the
 * one-thread median (and longer than GOV_CUT_MIN_SECONDS) ends the trial at
 * once: on a loaded machine a region can wait a whole time slice for its
 * second thread, and a bad trial then costs one region per site. */
#define GOV_SITES           64
#define GOV_TRIAL           6
#define GOV_RUN             4
#define GOV_LONG_SECONDS    0.002
#define GOV_KEEP            0.90
#define GOV_CUT             2.0
#define GOV_CUT_MIN_SECONDS 0.002
#define GOV_HOLD            0.5
#define GOV_HOLD_TRIALS     40
#define GOV_SLOW_SAMPLES    3
#define GOV_BACKOFF_MAX     16
#define GOV_HOLD_MAX        8.0 /* s: the longest a verdict holds */
static const unsigned char trial_parallel[GOV_TRIAL] = {0, 1, 1, 0, 0, 1};
/* Long loops: two phases of each, one sample per phase. */
#define GOV_TRIAL_LONG 4
static const unsigned char trial_parallel_long[GOV_TRIAL_LONG] = {0, 1, 0, 1};

typedef struct gov_site {
    const void *key;  /* the site's return address; NULL: unused */
    int trial;        /* 1 while sampling, 0 while holding a verdict */
    int index;        /* call index within the trial */
    double phase_sum; /* this phase's samples after its first */
    int run;          /* samples per phase: GOV_RUN, or 1 for long loops */
    int count[2];
    double per[2][GOV_TRIAL / 2]; /* samples [s], [parallel][k] */
    double until;                 /* holding: the verdict holds until then */
    double trial_start;           /* when the trial began */
    double par_ref;               /* parallel verdict: the trial's parallel median */
    int slow;                     /* parallel verdict: consecutive samples > GOV_CUT x par_ref */
    int backoff;
    int verdict; /* last trial's choice (-1: none yet) */
} gov_site;

typedef struct governor {
    gov_site site[GOV_SITES];
    gov_site *open; /* the site whose sample is running */
    int open_mode;
    double open_start;
} governor;

static _Thread_local governor gov;

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

static void site_trial(gov_site *s, double t) {
    s->trial = 1;
    s->trial_start = t;
    s->index = 0;
    s->phase_sum = 0;
    s->run = GOV_RUN;
    s->count[0] = s->count[1] = 0;
}

/* The mode of the trial's current call: phases of GOV_RUN calls. */
static int site_trial_mode(const gov_site *s) {
    return s->run == 1 ? trial_parallel_long[s->index] : trial_parallel[s->index / s->run];
}

static void site_verdict(gov_site *s, int parallel, double t) {
    s->backoff = parallel == s->verdict && s->backoff > 0
                     ? (s->backoff < GOV_BACKOFF_MAX ? 2 * s->backoff : GOV_BACKOFF_MAX)
                     : 1;
    s->verdict = parallel;
    s->trial = 0;
    s->par_ref = parallel ? median3(s->per[1], s->count[1]) : 0;
    s->slow = 0;
    /* a trial forgoes the better mode for about half its length: hold the
     * verdict at least GOV_HOLD_TRIALS times that long */
    const double hold = fmax(GOV_HOLD, GOV_HOLD_TRIALS * (t - s->trial_start));
    s->until = t + fmin(hold * s->backoff, GOV_HOLD_MAX);
}

/* The site of key: open addressing on the address bits; a full table
 * reuses the home slot (that site starts a new trial). */
static gov_site *site_of(governor *g, const void *key, double t) {
    const uintptr_t h = ((uintptr_t)key >> 2) * 0x9E3779B97F4A7C15ULL;
    const unsigned home = (unsigned)(h >> 58) & (GOV_SITES - 1);
    for (unsigned k = 0; k < GOV_SITES; k++) {
        gov_site *s = &g->site[(home + k) & (GOV_SITES - 1)];
        if (s->key == key) return s;
        if (!s->key) {
            memset(s, 0, sizeof *s);
            s->key = key;
            s->verdict = -1;
            site_trial(s, t);
            return s;
        }
    }
    gov_site *s = &g->site[home];
    memset(s, 0, sizeof *s);
    s->key = key;
    s->verdict = -1;
    site_trial(s, t);
    return s;
}

/* The open site's sample ended at t.  The first sample of a phase is not
 * counted: after a stretch in the other mode it pays for a cold second core
 * (a halted virtual CPU takes ~0.1 ms to wake) or a cold cache. */
static void site_sample(gov_site *s, int mode, double dt, double t) {
    if (!s->trial) {
        /* holding threads: samples far slower than the trial's (another
         * process took the second core) end the hold */
        if (s->verdict == 1 && mode == 1) {
            s->slow = dt > GOV_CUT_MIN_SECONDS && dt > GOV_CUT * s->par_ref ? s->slow + 1 : 0;
            if (s->slow >= GOV_SLOW_SAMPLES) s->until = t;
        }
        return;
    }
    if (mode != site_trial_mode(s)) return;
    if (s->index == 0) s->run = dt > GOV_LONG_SECONDS ? 1 : GOV_RUN;
    const int run = s->run;
    if (mode && s->count[0] > 0 && (run == 1 || s->index % run)) {
        const double serial = median3(s->per[0], s->count[0]);
        if (dt > GOV_CUT_MIN_SECONDS && dt > GOV_CUT * serial) {
            site_verdict(s, 0, t);
            return;
        }
    }
    if (run == 1 || s->index % run) s->phase_sum += dt;
    if (++s->index % run) return;
    s->per[mode][s->count[mode]++] = s->phase_sum / (run == 1 ? 1 : run - 1);
    s->phase_sum = 0;
    if (run == 1 && s->index == GOV_TRIAL_LONG) /* the faster of two: a cold start is slow */
        site_verdict(
            s, fmin(s->per[1][0], s->per[1][1]) < GOV_KEEP * fmin(s->per[0][0], s->per[0][1]), t);
    else if (s->index == GOV_TRIAL * run)
        site_verdict(
            s, median3(s->per[1], s->count[1]) < GOV_KEEP * median3(s->per[0], s->count[0]), t);
}

static int gov_decide(governor *g, const void *key) {
    const double t = gov_now();
    if (g->open) site_sample(g->open, g->open_mode, t - g->open_start, t);
    gov_site *s = site_of(g, key, t);
    if (!s->trial && t >= s->until) site_trial(s, t);
    const int mode = s->trial ? site_trial_mode(s) : s->verdict;
    g->open = s;
    g->open_mode = mode;
    g->open_start = t;
    return mode;
}

#endif /* _OPENMP */

/* Not inlined: its return address names the loop site. */
__attribute__((noinline)) int defo_parallel_go(int wanted) {
    if (!wanted) return 0;
    counts.wanted++;
#ifdef _OPENMP
    if (omp_in_parallel()) return 0; /* the enclosing region's sample runs on */
    /* one thread allowed, or regions always: the open sample ends unmeasured
     * (it would span this stretch — seconds, say — and cut a trial for
     * nothing when threads come back) */
    if (omp_get_max_threads() < 2) {
        gov.open = NULL;
        return 0;
    }
    if (defo_get_thread_policy() == DEFO_THREADS_ALWAYS) gov.open = NULL;
    const int go = defo_get_thread_policy() == DEFO_THREADS_ALWAYS
                       ? 1
                       : gov_decide(&gov, __builtin_return_address(0));
    counts.opened += go;
    return go;
#else
    return 0;
#endif
}

void defo_parallel_governor_reset(void) {
#ifdef _OPENMP
    memset(&gov, 0, sizeof gov);
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
