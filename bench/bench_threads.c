/*
 * bench/bench_threads.c — what a second thread buys, on a quiet machine and
 * on one where other processes compete for the cores.  Each scene is run
 * from its start for the frames it names, alternately with 1 and 2 threads
 * (defo_set_threads; the default adaptive thread policy, its governor reset
 * before each run as in a new process), REPS times; a row gives the median
 * and range of the wall time per frame of each count, their ratio, the
 * loops per frame that met their work threshold and the regions the 2-thread
 * runs opened, and whether the final positions of all runs are bitwise
 * identical (they must be: docs/architecture.md "Threads").
 *
 * --busy N forks N processes that spin on the CPU for as long as the scene
 * runs (the "loaded machine" case: on 2 cores, 1 leaves one core to defo, 2
 * leave none).  Without --busy the scenes run once quiet and once with 2
 * busy processes.  The system's load average at the start of each row is
 * reported: a quiet row on a busy machine is not quiet.
 *
 * Default scenes (bench/scenes/threads_*.json, paths from the repository
 * root, where `make bench` runs): a damped Newmark drop of ~3 K tets, the
 * tet10 Newmark sag bar, a corotated backward Euler cantilever with the
 * two-level preconditioner, and a quasistatic squash.
 *
 * Like `defo run`, the benchmark restarts itself with a short OpenMP spin
 * (GOMP_SPINCOUNT=1000) unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set.
 *
 * Usage: bench_threads [--busy N] [--reps R] [--frames F] [--always] [--threads N]
 *                      [SCENE.json ...]
 * --always adds a column of 2 threads under DEFO_THREADS_ALWAYS (every loop
 * above its threshold threaded: what the governor avoids); --threads N runs
 * N threads only (profiling).
 * JSON on stdout; asserts nothing.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, execv, kill */
#include "defo/defo.h"

#include "base/parallel.h"
#include "bench.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { MAX_BUSY = 16, MAX_REPS = 31 };

static pid_t busy_pid[MAX_BUSY];
static int busy_count;

static void busy_start(int n) {
    for (int i = 0; i < n && i < MAX_BUSY; i++) {
        pid_t p = fork();
        if (p == 0) {
            volatile unsigned long long k = 0;
            for (;;) k++;
        }
        if (p > 0) busy_pid[busy_count++] = p;
    }
}

static void busy_stop(void) {
    for (int i = 0; i < busy_count; i++) kill(busy_pid[i], SIGKILL);
    for (int i = 0; i < busy_count; i++) waitpid(busy_pid[i], NULL, 0);
    busy_count = 0;
}

static double load1(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

/* FNV-1a over the bits of every body's positions. */
static uint64_t positions_hash(defo_simulation *sim) {
    uint64_t h = 1469598103934665603ULL;
    defo_world *w = defo_simulation_world(sim);
    for (int b = 0; b < defo_simulation_num_bodies(sim); b++) {
        defo_body_id id = defo_simulation_body(sim, b);
        const unsigned char *p = (const unsigned char *)defo_body_positions(w, id);
        size_t bytes = 3 * (size_t)defo_body_num_nodes(w, id) * sizeof(double);
        for (size_t i = 0; i < bytes; i++) h = (h ^ p[i]) * 1099511628211ULL;
    }
    return h;
}

/* One run: the scene from its start, `frames` frames; seconds per frame. */
static int run_once(const defo_scene *scene, int frames, double *per_frame, uint64_t *hash,
                    long *elems) {
    defo_simulation *sim = NULL;
    if (defo_simulation_create(scene, &sim) < 0) return -1; /* > 0: a warning */
    *elems = 0;
    defo_world *w = defo_simulation_world(sim);
    for (int b = 0; b < defo_simulation_num_bodies(sim); b++)
        *elems += (long)defo_body_mesh(w, defo_simulation_body(sim, b))->num_elems;
    double t0 = bench_now();
    for (int f = 0; f < frames; f++)
        if (defo_simulation_step_frame(sim) < 0) {
            defo_simulation_destroy(sim);
            return -1;
        }
    *per_frame = (bench_now() - t0) / frames;
    *hash = positions_hash(sim);
    defo_simulation_destroy(sim);
    return 0;
}

static int first_row = 1;

/* The columns: 1 thread, 2 threads (adaptive, the default policy), and
 * with --always 2 threads under DEFO_THREADS_ALWAYS; --threads N runs N
 * threads only (profiling). */
typedef struct column {
    const char *key;
    int threads;
    defo_thread_policy policy;
} column;
static column columns[3] = {{"1", 1, DEFO_THREADS_ADAPTIVE},
                            {"2", 2, DEFO_THREADS_ADAPTIVE},
                            {"2_always", 2, DEFO_THREADS_ALWAYS}};
static int num_columns = 2;

static void bench_scene(const char *path, int busy, int reps, int frames_opt) {
    defo_scene *scene = NULL;
    defo_scene_errors errs;
    if (defo_scene_load(path, &scene, &errs) < 0) {
        fprintf(stderr, "bench_threads: %s: %s\n", path, errs.count ? errs.lines[0] : "");
        defo_scene_errors_free(&errs);
        return;
    }
    defo_scene_errors_free(&errs);
    const int frames = frames_opt > 0 ? frames_opt : defo_scene_frames(scene);
    const double load = load1();
    busy_start(busy);
    double t[3][MAX_REPS];
    uint64_t hash[3] = {0, 0, 0};
    double wanted[3] = {0, 0, 0}, opened[3] = {0, 0, 0};
    long elems = 0;
    int ok = 1;
    for (int r = 0; r < reps && ok; r++)
        for (int k = 0; k < num_columns && ok; k++) {
            /* odd repetitions run the columns in reverse: a drift in the
             * machine's load then hits all alike */
            const int c = r % 2 == 0 ? k : num_columns - 1 - k;
            defo_set_threads(columns[c].threads);
            defo_set_thread_policy(columns[c].policy);
            defo_parallel_governor_reset(); /* each run as a new process */
            const defo_parallel_counts c0 = defo_parallel_get_counts();
            ok = run_once(scene, frames, &t[c][r], &hash[c], &elems) == 0;
            const defo_parallel_counts c1 = defo_parallel_get_counts();
            wanted[c] = (double)(c1.wanted - c0.wanted) / frames;
            opened[c] = (double)(c1.opened - c0.opened) / frames;
        }
    busy_stop();
    defo_set_threads(0);
    defo_set_thread_policy(DEFO_THREADS_ADAPTIVE);
    if (!ok) {
        fprintf(stderr, "bench_threads: %s: %s\n", path, defo_last_error());
        defo_scene_destroy(scene);
        return;
    }
    printf("%s{\"scene\": \"%s\", \"elements\": %ld, \"frames\": %d, \"busy\": %d, "
           "\"load_before\": %.2f",
           first_row ? "" : ",\n  ", path, elems, frames, busy, load);
    double med[3];
    int identical = 1;
    for (int c = 0; c < num_columns; c++) {
        med[c] = bench_median(t[c], reps); /* sorts */
        printf(", \"ms_per_frame_%s\": %.1f, \"range_%s\": [%.1f, %.1f]", columns[c].key,
               1e3 * med[c], columns[c].key, 1e3 * t[c][0], 1e3 * t[c][reps - 1]);
        identical &= hash[c] == hash[0];
        if (columns[c].threads > 1)
            printf(", \"loops_per_frame\": %.0f, \"regions_per_frame_%s\": %.0f", wanted[c],
                   columns[c].key, opened[c]);
    }
    for (int c = 1; c < num_columns; c++)
        printf(", \"ratio_%s_over_%s\": %.3f", columns[c].key, columns[0].key, med[c] / med[0]);
    printf(", \"identical\": %s}", identical ? "true" : "false");
    first_row = 0;
    fflush(stdout);
    defo_scene_destroy(scene);
}

int main(int argc, char **argv) {
    /* as `defo run` does (cli/main.c): a short OpenMP spin unless the
     * environment names a policy — GOMP_SPINCOUNT=300000 measures the
     * runtime's default */
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT") &&
        setenv("GOMP_SPINCOUNT", "1000", 1) == 0)
        execv("/proc/self/exe", argv);
    int busy = -1, reps = 5, frames = 0;
    const char *scenes[64];
    int ns = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--busy") && i + 1 < argc)
            busy = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            columns[0].threads = atoi(argv[++i]);
            columns[0].key = argv[i];
            num_columns = 1;
        } else if (!strcmp(argv[i], "--always"))
            num_columns = 3;
        else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
            frames = atoi(argv[++i]);
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: bench_threads [--busy N] [--reps R] [--frames F] [--always] "
                            "[--threads N] [SCENE.json ...]\n");
            return 2;
        } else if (ns < 64)
            scenes[ns++] = argv[i];
    }
    if (reps < 1) reps = 1;
    if (reps > MAX_REPS) reps = MAX_REPS;
    if (busy > MAX_BUSY) busy = MAX_BUSY;
    if (!ns) {
        scenes[ns++] = "bench/scenes/threads_newmark.json";
        scenes[ns++] = "bench/scenes/threads_newmark_tet10.json";
        scenes[ns++] = "bench/scenes/threads_backward_euler.json";
        scenes[ns++] = "bench/scenes/threads_quasistatic.json";
    }
    printf("{\"benchmark\": \"threads\", \"cores\": %ld, \"results\": [\n  ",
           sysconf(_SC_NPROCESSORS_ONLN));
    for (int pass = 0; pass < 2; pass++) {
        int b = busy >= 0 ? busy : (pass == 0 ? 0 : 2);
        for (int i = 0; i < ns; i++) bench_scene(scenes[i], b, reps, frames);
        if (busy >= 0) break;
    }
    printf("\n]}\n");
    return 0;
}
