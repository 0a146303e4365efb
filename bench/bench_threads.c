/*
 * bench/bench_threads.c — what a second thread buys, on a quiet machine and
 * on one where other processes compete for the cores.  Each scene is run
 * from its start for the frames it names, alternately with 1 and 2 threads
 * (defo_set_threads), REPS times; a row gives the median wall time per frame
 * of each count and their ratio, and whether the final positions of both
 * counts are bitwise identical (they must be: DESIGN.md "Threads").
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
 * Usage: bench_threads [--busy N] [--reps R] [--frames F] [--threads N] [SCENE.json ...]
 * (--threads N: that count only, for profiling; both columns are then its)
 * JSON on stdout; asserts nothing.
 */
#include "defo/defo.h"

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
    if (defo_simulation_create(scene, &sim)) return -1;
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
static int only_threads; /* --threads N: run that count only (profiling) */

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
    double t[2][MAX_REPS];
    uint64_t hash[2] = {0, 0};
    long elems = 0;
    int ok = 1;
    for (int r = 0; r < reps && ok; r++)
        for (int k = 0; k < 2 && ok; k++) {
            /* alternate which count goes first: a drift in the machine's
             * load then hits both alike */
            int threads = (r % 2 == 0) ? k + 1 : 2 - k;
            if (only_threads) {
                if (threads != 1) continue;
                threads = only_threads;
                defo_set_threads(threads);
                ok = run_once(scene, frames, &t[0][r], &hash[0], &elems) == 0;
                t[1][r] = t[0][r], hash[1] = hash[0];
                continue;
            }
            defo_set_threads(threads);
            ok = run_once(scene, frames, &t[threads - 1][r], &hash[threads - 1], &elems) == 0;
        }
    busy_stop();
    defo_set_threads(0);
    if (!ok) {
        fprintf(stderr, "bench_threads: %s: %s\n", path, defo_last_error());
        defo_scene_destroy(scene);
        return;
    }
    double lo[2], hi[2], med[2];
    for (int k = 0; k < 2; k++) {
        med[k] = bench_median(t[k], reps); /* sorts */
        lo[k] = t[k][0];
        hi[k] = t[k][reps - 1];
    }
    printf("%s{\"scene\": \"%s\", \"elements\": %ld, \"frames\": %d, \"busy\": %d, "
           "\"load_before\": %.2f, \"ms_per_frame_1\": %.1f, \"ms_per_frame_2\": %.1f, "
           "\"range_1\": [%.1f, %.1f], \"range_2\": [%.1f, %.1f], \"ratio_2_over_1\": %.3f, "
           "\"identical\": %s}",
           first_row ? "" : ",\n  ", path, elems, frames, busy, load, 1e3 * med[0], 1e3 * med[1],
           1e3 * lo[0], 1e3 * hi[0], 1e3 * lo[1], 1e3 * hi[1], med[1] / med[0],
           hash[0] == hash[1] ? "true" : "false");
    first_row = 0;
    fflush(stdout);
    defo_scene_destroy(scene);
}

int main(int argc, char **argv) {
    int busy = -1, reps = 5, frames = 0;
    const char *scenes[64];
    int ns = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--busy") && i + 1 < argc)
            busy = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            only_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
            frames = atoi(argv[++i]);
        else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: bench_threads [--busy N] [--reps R] [--frames F] "
                            "[SCENE.json ...]\n");
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
