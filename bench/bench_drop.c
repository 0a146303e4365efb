/*
 * bench/bench_drop.c — a new user's first scene: a scanned animal meshed
 * from its surface (data/meshes/bunny.off at 20 cells: about 20 K tets,
 * scaled to 1 m), E = 1e5 Pa, dropped from 0.3 m onto the ground (friction
 * 0.5) at 30 frames/s for 1 s, with the scene's default settings — the
 * default integrator and its defaults — and with each other integrator.
 *
 * Reported per configuration: frames per second (1 s of simulation / wall
 * time, and the median frame), steps per frame, CG iterations, inverted
 * elements at the peak, and the largest node distance at 1 s from a
 * small-step Newmark reference (cfl 0.1) relative to the body's size (the
 * diagonal of its rest bounding box), with the 99th percentile and the
 * median of the node distances (the largest can be one thin feature whose
 * motion a rounding-level change alters).  The goal for the default: at least
 * 4 frames per second on two cores, at a distance no picture shows.
 *
 * Usage: bench_drop [threads [surface [cells [seconds]]]]
 *        (defaults 2, data/meshes/bunny.off, 20, 1; `make test` runs a
 *        small, short one under the sanitizers to keep this program sound)
 */
#include "defo/base.h"
#include "defo/scene.h"
#include "defo/world.h"

#include "base/parallel.h"
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *scene_fmt =
    "{\"name\": \"drop\", \"duration\": {\"seconds\": %g, \"fps\": 30}, %s"
    " \"bodies\": [{\"name\": \"animal\", \"surface\": {\"file\": \"%s\", \"cells\": %d},"
    "   \"transform\": {\"scale\": 0.1, \"rotate\": {\"axis\": [1, 0, 0], \"angle_deg\": 90},"
    "   \"translate\": [0, 0, 0.3]}, \"material\": {\"youngs\": 1e5}}],"
    " \"colliders\": [{\"name\": \"ground\", \"type\": \"plane\", \"point\": [0, 0, 0],"
    "   \"normal\": [0, 0, 1], \"friction\": 0.5}]}";

static double g_seconds = 1.0; /* simulated */
static int g_cells = 20;

static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct result {
    double seconds, frame_median_ms, steps_per_frame, cg_per_frame, newton_per_frame;
    long inverted_peak, nodes, elems;
    int frames;
    double *x; /* positions at 1 s */
    int ok;
} result;

static result run(const char *surface, const char *integrator) {
    result r;
    memset(&r, 0, sizeof r);
    char text[4096];
    snprintf(text, sizeof text, scene_fmt, g_seconds, integrator, surface, g_cells);
    defo_scene *s = NULL;
    defo_simulation *sim = NULL;
    if (defo_scene_parse(text, strlen(text), "drop.json", NULL, &s, NULL) ||
        defo_simulation_create(s, &sim) < 0) {
        fprintf(stderr, "bench_drop: %s\n", defo_last_error());
        defo_scene_destroy(s);
        return r;
    }
    defo_world *w = defo_simulation_world(sim);
    const defo_body_id id = defo_simulation_body(sim, 0);
    /* each run as in a new process: the thread governor's verdicts on the
     * previous run's loops are not this run's */
    defo_parallel_governor_reset();
    int frames = defo_scene_frames(s);
    double ms[64];
    if (frames > 64) frames = 64; /* seconds ≤ 2 (checked in main) */
    r.frames = frames;
    const double t0 = bench_now();
    r.ok = 1;
    for (int f = 0; f < frames; f++) {
        const double a = bench_now();
        if (defo_simulation_step_frame(sim) < 0) {
            fprintf(stderr, "bench_drop: %s\n", defo_last_error());
            r.ok = 0;
            break;
        }
        ms[f] = 1e3 * (bench_now() - a);
        defo_step_stats st;
        defo_world_stats(w, &st);
        r.steps_per_frame += st.steps;
        r.cg_per_frame += st.cg_iterations;
        r.newton_per_frame += st.newton_iterations;
        if (st.inverted_peak > r.inverted_peak) r.inverted_peak = (long)st.inverted_peak;
    }
    r.seconds = bench_now() - t0;
    if (r.ok) {
        r.frame_median_ms = bench_median(ms, frames);
        r.steps_per_frame /= frames;
        r.cg_per_frame /= frames;
        r.newton_per_frame /= frames;
        const defo_index n = defo_body_num_nodes(w, id);
        r.nodes = (long)n;
        r.elems = (long)defo_body_mesh(w, id)->num_elems;
        r.x = malloc(3 * (size_t)n * sizeof(double));
        if (r.x) memcpy(r.x, defo_body_positions(w, id), 3 * (size_t)n * sizeof(double));
    }
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
    return r;
}

int main(int argc, char **argv) {
    const int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (argc > 3) g_cells = atoi(argv[3]);
    if (argc > 4) g_seconds = atof(argv[4]);
    if (threads < 1 || g_cells < 2 || g_cells > 200 || !(g_seconds > 0 && g_seconds <= 2)) {
        fprintf(stderr, "usage: bench_drop [threads >= 1 [surface [cells 2..200 [seconds "
                        "(0, 2]]]]]\n");
        return 2;
    }
    char surface[1024];
    if (argc > 2) {
        snprintf(surface, sizeof surface, "%s", argv[2]);
    } else {
        /* the source tree's data folder, found from this file's path */
        snprintf(surface, sizeof surface, "%s", __FILE__);
        char *slash = strrchr(surface, '/');
        if (slash) *slash = '\0';
        strncat(surface, "/../data/meshes/bunny.off", sizeof surface - strlen(surface) - 1);
    }
    defo_set_threads(threads);
    static const char *const names[] = {"reference", "default", "newmark", "backward_euler",
                                        "bdf2"};
    static const char *const keys[] = {"\"integrator\": {\"type\": \"newmark\", \"cfl\": 0.1},", "",
                                       "\"integrator\": "
                                       "{\"type\": \"newmark\"},",
                                       "\"integrator\": {\"type\": \"backward_euler\"},",
                                       "\"integrator\": {\"type\": \"bdf2\"},"};
    result res[5];
    for (int k = 0; k < 5; k++) res[k] = run(surface, keys[k]);
    /* the body's size: the rest bounding-box diagonal, from a fresh build */
    double size = 0;
    {
        char text[4096];
        snprintf(text, sizeof text, scene_fmt, g_seconds, "", surface, g_cells);
        defo_scene *s = NULL;
        defo_simulation *sim = NULL;
        if (!defo_scene_parse(text, strlen(text), "drop.json", NULL, &s, NULL) &&
            defo_simulation_create(s, &sim) >= 0) {
            const defo_mesh *m =
                defo_body_mesh(defo_simulation_world(sim), defo_simulation_body(sim, 0));
            double lo[3], hi[3];
            if (!defo_mesh_bbox(m, lo, hi))
                size = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                            (hi[2] - lo[2]) * (hi[2] - lo[2]));
        }
        defo_simulation_destroy(sim);
        defo_scene_destroy(s);
    }
    printf("{\n  \"benchmark\": \"drop\",\n  \"scene\": \"%s at %d cells scaled by 0.1, "
           "E = 1e5 Pa, dropped from 0.3 m, %g s at 30 frames/s\",\n  \"threads\": %d,\n"
           "  \"body_size_m\": %.4f,\n  \"runs\": [\n",
           strrchr(surface, '/') ? strrchr(surface, '/') + 1 : surface, g_cells, g_seconds, threads,
           size);
    for (int k = 0; k < 5; k++) {
        const result *r = &res[k];
        double dmax = -1, d99 = -1, dmed = -1;
        double *d = r->ok && res[0].ok && r->x && res[0].x && r->nodes == res[0].nodes
                        ? malloc((size_t)r->nodes * sizeof *d)
                        : NULL;
        if (d) {
            for (long i = 0; i < r->nodes; i++) {
                const double dx = r->x[3 * i] - res[0].x[3 * i],
                             dy = r->x[3 * i + 1] - res[0].x[3 * i + 1],
                             dz = r->x[3 * i + 2] - res[0].x[3 * i + 2];
                d[i] = sqrt(dx * dx + dy * dy + dz * dz);
            }
            qsort(d, (size_t)r->nodes, sizeof *d, cmp_double);
            dmax = d[r->nodes - 1];
            d99 = d[(r->nodes - 1) * 99 / 100];
            dmed = d[(r->nodes - 1) / 2];
            free(d);
        }
        printf("    {\"label\": \"%s\", \"ok\": %d, \"tets\": %ld, \"frames_per_s\": %.2f, "
               "\"frame_median_ms\": %.1f, \"steps_per_frame\": %.1f, \"newton_per_frame\": "
               "%.1f, \"cg_per_frame\": %.1f, \"inverted_peak\": %ld, "
               "\"distance_to_reference\": %.3e, \"distance_relative\": %.2e, "
               "\"distance_p99\": %.3e, \"distance_median\": %.3e}%s\n",
               names[k], r->ok, r->elems, r->ok ? r->frames / r->seconds : 0.0, r->frame_median_ms,
               r->steps_per_frame, r->newton_per_frame, r->cg_per_frame, r->inverted_peak, dmax,
               size > 0 && dmax >= 0 ? dmax / size : -1.0, d99, dmed, k < 4 ? "," : "");
    }
    printf("  ]\n}\n");
    int ok = 1;
    for (int k = 0; k < 5; k++) {
        ok &= res[k].ok;
        free(res[k].x); /* after the loop: res[0].x is every row's reference */
    }
    return ok ? 0 : 1;
}
