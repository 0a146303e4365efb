/*
 * bench/bench_scaling.c — what each thread count buys on the four scenes a
 * user with a workstation runs, measured as the user would: the scene from
 * its start, every frame, with the default adaptive thread policy.
 *
 *   cantilever n = 13   bench/scenes/cantilever_n13.json (53 K tets, corotated
 *                       backward Euler, two-level PCG to 1e-6: the problem Vega
 *                       FEM is compared on — one step per frame)
 *   cantilever n = 20   bench/scenes/cantilever_n20.json (192 K tets)
 *   squash 98 K         bench/scenes/squash_98k.json (quasistatic Newton per frame)
 *   bunny drop 20 K     bench/scenes/drop_bunny.json (the default integrator:
 *                       explicit Newmark, many steps per frame)
 *
 * For each scene and each thread count (1, 2, 4, ... up to the machine's
 * cores, and the core count itself) the scene is run REPS times, thread
 * counts interleaved (odd repetitions in reverse order, so a drift of the
 * machine's load hits all alike); a row reports the median wall time per
 * frame (one step per frame in the cantilevers: ms per step), its range,
 * the process CPU time per frame (all threads: on a shared machine the
 * honest figure for one thread), the speed-up over one thread, steps, CG
 * and Newton iterations per frame, and what the CG iterations streamed:
 * the estimated bytes (matrix, preconditioner, vectors; solver/linear.c)
 * over the wall time spent inside them (GB/s) and that time's share of the
 * frame.  The final positions of every run are hashed: "identical" says
 * whether all thread counts and repetitions ended bit for bit alike (they
 * must: docs/architecture.md "Threads").  The tip of the cantilevers (the
 * mean displacement of the x = 1 face) checks that a faster solve did not
 * change the answer.
 *
 * JSON on stdout, the table of the issue on stderr.  Asserts nothing.
 * Usage: bench_scaling [--reps R] [--threads 1,2,4] [--frames F] [SCENE.json ...]
 * (defaults: 3 repetitions, the thread counts above, each scene's frames;
 * scene paths from the repository root, where `make bench` runs).
 * Like `defo run`, it restarts itself with a short OpenMP spin
 * (GOMP_SPINCOUNT=1000) unless OMP_WAIT_POLICY or GOMP_SPINCOUNT is set
 * (or it was started through the dynamic loader, which a restart would
 * lose: then set GOMP_SPINCOUNT; scripts/bench_scaling_device.sh does).
 */
#define _POSIX_C_SOURCE 200809L /* setenv, execv */
#include "defo/defo.h"

#include "base/parallel.h"
#include "bench.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAX_REPS = 15, MAX_COUNTS = 16, MAX_SCENES = 16 };

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

/* Mean displacement of the nodes on the body's largest-x face (the free end
 * of a cantilever clamped at its smallest x). */
static double tip_displacement(defo_simulation *sim) {
    defo_world *w = defo_simulation_world(sim);
    defo_body_id id = defo_simulation_body(sim, 0);
    const defo_mesh *m = defo_body_mesh(w, id);
    const double *x = defo_body_positions(w, id);
    double xmax = -INFINITY, sum = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) xmax = fmax(xmax, m->x[3 * i]);
    int cnt = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] >= xmax - 1e-9) {
            double d2 = 0;
            for (int k = 0; k < 3; k++) d2 += pow(x[3 * i + k] - m->x[3 * i + k], 2);
            sum += sqrt(d2);
            cnt++;
        }
    return cnt ? sum / cnt : 0;
}

typedef struct run_result {
    double ms, cpu_ms, steps, cg, newton, solve_s, solve_bytes, tip;
    uint64_t hash;
    long elems;
    int ok;
} run_result;

static run_result run_once(const defo_scene *scene, int frames) {
    run_result r;
    memset(&r, 0, sizeof r);
    defo_simulation *sim = NULL;
    if (defo_simulation_create(scene, &sim) < 0) return r; /* > 0: a warning */
    defo_world *w = defo_simulation_world(sim);
    for (int b = 0; b < defo_simulation_num_bodies(sim); b++)
        r.elems += (long)defo_body_mesh(w, defo_simulation_body(sim, b))->num_elems;
    defo_parallel_governor_reset(); /* each run as in a new process */
    const defo_solve_traffic t0 = defo_solve_traffic_get();
    const double w0 = bench_now(), c0 = bench_cpu_now();
    r.ok = 1;
    for (int f = 0; f < frames && r.ok; f++) {
        if (defo_simulation_step_frame(sim) < 0) {
            fprintf(stderr, "bench_scaling: %s\n", defo_last_error());
            r.ok = 0;
        }
        defo_step_stats st;
        defo_world_stats(w, &st);
        r.steps += st.steps;
        r.cg += st.cg_iterations;
        r.newton += st.newton_iterations;
    }
    const double w1 = bench_now(), c1 = bench_cpu_now();
    const defo_solve_traffic t1 = defo_solve_traffic_get();
    r.ms = 1e3 * (w1 - w0) / frames;
    r.cpu_ms = 1e3 * (c1 - c0) / frames;
    r.steps /= frames;
    r.cg /= frames;
    r.newton /= frames;
    r.solve_s = (t1.seconds - t0.seconds) / frames;
    r.solve_bytes = (t1.bytes - t0.bytes) / frames;
    r.hash = positions_hash(sim);
    r.tip = tip_displacement(sim);
    defo_simulation_destroy(sim);
    return r;
}

typedef struct row {
    const char *path;
    char name[48];
    int frames, ok, identical;
    long elems;
    double ms[MAX_COUNTS], steps, cg, newton, gbs[MAX_COUNTS];
} row;

static int counts[MAX_COUNTS], num_counts;
static int first_json = 1;

static int bench_scene(const char *path, int reps, int frames_opt, row *out) {
    memset(out, 0, sizeof *out);
    out->path = path;
    defo_scene *scene = NULL;
    defo_scene_errors errs;
    if (defo_scene_load(path, &scene, &errs) < 0) {
        fprintf(stderr, "bench_scaling: %s: %s\n", path, errs.count ? errs.lines[0] : "");
        defo_scene_errors_free(&errs);
        return -1;
    }
    defo_scene_errors_free(&errs);
    const char *slash = strrchr(path, '/');
    snprintf(out->name, sizeof out->name, "%s", slash ? slash + 1 : path);
    char *dot = strrchr(out->name, '.');
    if (dot) *dot = '\0';
    const int frames = frames_opt > 0 ? frames_opt : defo_scene_frames(scene);
    out->frames = frames;
    static run_result res[MAX_COUNTS][MAX_REPS];
    int ok = 1;
    for (int r = 0; r < reps && ok; r++)
        for (int k = 0; k < num_counts && ok; k++) {
            const int c = r % 2 == 0 ? k : num_counts - 1 - k;
            defo_set_threads(counts[c]);
            res[c][r] = run_once(scene, frames);
            ok = res[c][r].ok;
        }
    defo_set_threads(0);
    defo_scene_destroy(scene);
    out->ok = ok;
    if (!ok) return -1;
    out->identical = 1;
    out->elems = res[0][0].elems;
    printf("%s    {\"scene\": \"%s\", \"elements\": %ld, \"frames\": %d, \"reps\": %d, "
           "\"steps_per_frame\": %.2f, \"cg_per_frame\": %.1f, \"cg_per_step\": %.1f, "
           "\"newton_per_frame\": %.2f, \"tip_displacement_m\": %.9f, \"by_threads\": [",
           first_json ? "" : ",\n", path, out->elems, frames, reps, res[0][0].steps, res[0][0].cg,
           res[0][0].cg / fmax(res[0][0].steps, 1), res[0][0].newton, res[0][0].tip);
    first_json = 0;
    out->steps = res[0][0].steps;
    out->cg = res[0][0].cg;
    out->newton = res[0][0].newton;
    for (int c = 0; c < num_counts; c++) {
        double ms[MAX_REPS], cpu[MAX_REPS], gbs[MAX_REPS], share[MAX_REPS];
        for (int r = 0; r < reps; r++) {
            const run_result *q = &res[c][r];
            ms[r] = q->ms;
            cpu[r] = q->cpu_ms;
            gbs[r] = q->solve_s > 0 ? q->solve_bytes / q->solve_s / 1e9 : 0;
            share[r] = q->solve_s * 1e3 / q->ms;
            out->identical &= q->hash == res[0][0].hash;
        }
        const double med = bench_median(ms, reps); /* sorts */
        out->ms[c] = med;
        out->gbs[c] = bench_median(gbs, reps);
        printf("%s\n      {\"threads\": %d, \"ms_per_frame\": %.2f, \"ms_per_step\": %.3f, "
               "\"range\": [%.2f, %.2f], \"cpu_ms_per_frame\": %.2f, \"speedup\": %.2f, "
               "\"cg_gb_per_s\": %.2f, \"cg_share\": %.3f}",
               c ? "," : "", counts[c], med, med / fmax(res[c][0].steps, 1), ms[0], ms[reps - 1],
               bench_median(cpu, reps), out->ms[0] / med, out->gbs[c], bench_median(share, reps));
    }
    printf("\n    ], \"identical\": %s}", out->identical ? "true" : "false");
    fflush(stdout);
    return 0;
}

static void parse_counts(const char *s) {
    num_counts = 0;
    while (*s && num_counts < MAX_COUNTS) {
        int v = atoi(s);
        if (v >= 1) counts[num_counts++] = v;
        const char *c = strchr(s, ',');
        if (!c) break;
        s = c + 1;
    }
}

/* Whether this process was started by running the dynamic loader itself
 * (ld-linux-x86-64.so.2 --library-path lib ./bench_scaling ...): then
 * /proc/self/exe is the loader, and restarting it would lose its options. */
static int started_by_loader(void) {
    char exe[4096];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len <= 0) return 1; /* unknown: do not restart */
    exe[len] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    return strncmp(base, "ld-", 3) == 0 || strstr(base, "ld.so") != NULL;
}

int main(int argc, char **argv) {
    if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) {
        if (started_by_loader())
            fprintf(stderr, "bench_scaling: started through the dynamic loader, so it cannot "
                            "restart itself with a short OpenMP spin: set GOMP_SPINCOUNT=1000 "
                            "as `defo run` does\n");
        else if (setenv("GOMP_SPINCOUNT", "1000", 1) == 0)
            execv("/proc/self/exe", argv);
    }
    int reps = 3, frames = 0, ns = 0;
    const char *scenes[MAX_SCENES];
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    for (int t = 1; t < cores && num_counts < MAX_COUNTS - 1; t *= 2) counts[num_counts++] = t;
    counts[num_counts++] = (int)(cores > 0 ? cores : 1);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            parse_counts(argv[++i]);
        else if (!strcmp(argv[i], "--frames") && i + 1 < argc)
            frames = atoi(argv[++i]);
        else if (argv[i][0] == '-' || ns == MAX_SCENES) {
            fprintf(stderr, "usage: bench_scaling [--reps R] [--threads 1,2,4] [--frames F] "
                            "[SCENE.json ...]\n");
            return 2;
        } else
            scenes[ns++] = argv[i];
    }
    if (num_counts < 1) return 2;
    reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
    if (!ns) {
        scenes[ns++] = "bench/scenes/cantilever_n13.json";
        scenes[ns++] = "bench/scenes/cantilever_n20.json";
        scenes[ns++] = "bench/scenes/squash_98k.json";
        scenes[ns++] = "bench/scenes/drop_bunny.json";
    }
    printf("{\n  \"benchmark\": \"scaling\", \"cores\": %ld, \"threads\": [", cores);
    for (int c = 0; c < num_counts; c++) printf("%s%d", c ? ", " : "", counts[c]);
    printf("],\n  \"scenes\": [\n");
    static row rows[MAX_SCENES];
    for (int i = 0; i < ns; i++) bench_scene(scenes[i], reps, frames, &rows[i]);
    printf("\n  ]\n}\n");

    /* the table: ms per frame (per step where a frame is one step) */
    fprintf(stderr, "\n| scene | tets |");
    for (int c = 0; c < num_counts; c++) fprintf(stderr, " %d |", counts[c]);
    fprintf(stderr, " best | CG/step | GB/s (1 thread) | identical |\n|---|---|");
    for (int c = 0; c < num_counts + 4; c++) fprintf(stderr, "---|");
    fprintf(stderr, "\n");
    for (int i = 0; i < ns; i++) {
        const row *r = &rows[i];
        if (!r->ok) {
            fprintf(stderr, "| %s | failed |\n", r->path);
            continue;
        }
        fprintf(stderr, "| %s (ms per %s) | %ld |", r->name, r->steps > 1.5 ? "frame" : "step",
                r->elems);
        double best = 0;
        for (int c = 0; c < num_counts; c++) {
            fprintf(stderr, " %.1f |", r->ms[c]);
            best = fmax(best, r->ms[0] / r->ms[c]);
        }
        fprintf(stderr, " %.2fx | %.1f | %.1f | %s |\n", best, r->cg / fmax(r->steps, 1), r->gbs[0],
                r->identical ? "yes" : "NO");
    }
    return 0;
}
