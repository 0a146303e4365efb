/*
 * bench/bench_contact.c — contact between bodies at the sizes users meet.
 *
 *   pile:  N soft balls (radius 0.1 m, about 2.3 K tets each, E = 5e4 Pa)
 *          dropped in layers of four into a 0.6 m square box (ground and
 *          four walls), the default integrator, 30 frames/s;
 *   balls: two balls of 50 K tets each (radius 0.5 m), head on at ±2 m/s
 *          without gravity;
 *   slab:  a ball of 50 K tets dropped on a slab of 50 K tets lying on the
 *          ground.
 *
 * Reported per case: frames per second, the median frame, the share of the
 * step's wall time spent in body-body contact (search, response, the Newton
 * solves' contact terms: defo_step_stats.contact_seconds over .seconds), the
 * most pairs in a step and the deepest signed pair (contact_depth: how far a
 * node went through another body's surface).  The goal: contact costs at
 * most as much as the elastic forces (share <= 0.5).
 *
 * Usage: bench_contact [threads [case [bodies|frames]]]
 *        (defaults 2, "quick": the pile of 20 for 30 frames; "all": the
 *        pile, then the 100 K-tet balls and slab for 15 frames each)
 */
#include "defo/base.h"
#include "defo/scene.h"
#include "defo/world.h"

#include "base/parallel.h"
#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAT                                                                                        \
    "\"material\": {\"youngs\": 5e4, \"poisson\": 0.3, \"density\": 1000, \"damping\": 0.01}"

typedef struct result {
    double fps, frame_ms, share, depth, seconds;
    long pairs, tets;
    int frames, ok;
} result;

static result run(const char *text, int frames) {
    result r;
    memset(&r, 0, sizeof r);
    defo_scene *s = NULL;
    defo_simulation *sim = NULL;
    if (defo_scene_parse(text, strlen(text), "contact.json", NULL, &s, NULL) ||
        defo_simulation_create(s, &sim) < 0) {
        fprintf(stderr, "bench_contact: %s\n", defo_last_error());
        defo_scene_destroy(s);
        return r;
    }
    defo_world *w = defo_simulation_world(sim);
    for (int b = 0; b < defo_world_num_bodies(w); b++)
        r.tets += (long)defo_body_mesh(w, defo_simulation_body(sim, b))->num_elems;
    defo_parallel_governor_reset();
    if (frames > defo_scene_frames(s)) frames = defo_scene_frames(s);
    double *ms = malloc((size_t)frames * sizeof *ms);
    double contact = 0, stepping = 0;
    const double t0 = bench_now();
    r.ok = ms != NULL;
    for (int f = 0; r.ok && f < frames; f++) {
        const double a = bench_now();
        if (defo_simulation_step_frame(sim) < 0) {
            fprintf(stderr, "bench_contact: %s\n", defo_last_error());
            r.ok = 0;
            break;
        }
        ms[f] = 1e3 * (bench_now() - a);
        defo_step_stats st;
        defo_world_stats(w, &st);
        contact += st.contact_seconds;
        stepping += st.seconds;
        if ((long)st.contacts > r.pairs) r.pairs = (long)st.contacts;
        if (st.contact_depth > r.depth) r.depth = st.contact_depth;
        r.frames = f + 1;
    }
    r.seconds = bench_now() - t0;
    if (r.ok && r.frames > 0) {
        r.fps = r.frames / r.seconds;
        r.frame_ms = bench_median(ms, r.frames);
        r.share = stepping > 0 ? contact / stepping : 0;
    }
    free(ms);
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
    return r;
}

static void print(const char *label, const result *r, int last) {
    printf("    {\"case\": \"%s\", \"ok\": %d, \"tets\": %ld, \"frames\": %d, \"frames_per_s\": "
           "%.3f, \"frame_median_ms\": %.1f, \"contact_share\": %.3f, \"pairs_max\": %ld, "
           "\"deepest_m\": %.3e}%s\n",
           label, r->ok, r->tets, r->frames, r->fps, r->frame_ms, r->share, r->pairs, r->depth,
           last ? "" : ",");
    fflush(stdout);
}

static result pile(int n, int frames) {
    static char text[1 << 16];
    int len = snprintf(text, sizeof text,
                       "{\"name\": \"pile\", \"duration\": {\"frames\": %d, \"fps\": 30},"
                       " \"colliders\": [{\"type\": \"plane\"},"
                       " {\"type\": \"plane\", \"point\": [-0.3, 0, 0], \"normal\": [1, 0, 0]},"
                       " {\"type\": \"plane\", \"point\": [0.3, 0, 0], \"normal\": [-1, 0, 0]},"
                       " {\"type\": \"plane\", \"point\": [0, -0.3, 0], \"normal\": [0, 1, 0]},"
                       " {\"type\": \"plane\", \"point\": [0, 0.3, 0], \"normal\": [0, -1, 0]}],"
                       " \"bodies\": [",
                       frames);
    for (int k = 0; k < n && len < (int)sizeof text - 512; k++) {
        const int layer = k / 4, q = k % 4;
        /* each layer turned a little so balls land off centre */
        const double x = (q % 2 ? 0.12 : -0.12) + 0.02 * layer, y = (q / 2 ? 0.12 : -0.12),
                     z = 0.15 + 0.25 * layer;
        len +=
            snprintf(text + len, sizeof text - (size_t)len,
                     "%s{\"name\": \"ball%d\", \"generator\": {\"type\": \"sphere\", "
                     "\"center\": [%g, %g, %g], \"radius\": 0.1, \"cell_size\": 0.028}, " MAT "}",
                     k ? ", " : "", k, x, y, z);
    }
    snprintf(text + len, sizeof text - (size_t)len, "]}");
    return run(text, frames);
}

static result balls(int frames) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\": \"balls\", \"duration\": {\"frames\": %d, \"fps\": 30}, \"gravity\": [0, "
             "0, 0], \"bodies\": ["
             "{\"name\": \"a\", \"generator\": {\"type\": \"sphere\", \"center\": [-0.6, 0, 0], "
             "\"radius\": 0.5, \"cell_size\": 0.05}, \"velocity\": [2, 0, 0], " MAT "},"
             "{\"name\": \"b\", \"generator\": {\"type\": \"sphere\", \"center\": [0.6, 0, 0], "
             "\"radius\": 0.5, \"cell_size\": 0.05}, \"velocity\": [-2, 0, 0], " MAT "}]}",
             frames);
    return run(text, frames);
}

static result slab(int frames) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"name\": \"slab\", \"duration\": {\"frames\": %d, \"fps\": 30},"
             " \"colliders\": [{\"type\": \"plane\"}], \"bodies\": ["
             "{\"name\": \"slab\", \"generator\": {\"type\": \"box\", \"center\": [0, 0, 0.1], "
             "\"size\": [2, 2, 0.2], \"cells\": [40, 40, 5]}, " MAT "},"
             "{\"name\": \"ball\", \"generator\": {\"type\": \"sphere\", \"center\": [0, 0, 0.75], "
             "\"radius\": 0.5, \"cell_size\": 0.05}, \"velocity\": [0, 0, -1], " MAT "}]}",
             frames);
    return run(text, frames);
}

int main(int argc, char **argv) {
    const int threads = argc > 1 ? atoi(argv[1]) : 2;
    const char *which = argc > 2 ? argv[2] : "quick";
    const int arg = argc > 3 ? atoi(argv[3]) : 0;
    if (threads < 1 || (strcmp(which, "quick") && strcmp(which, "all") && strcmp(which, "pile") &&
                        strcmp(which, "balls") && strcmp(which, "slab"))) {
        fprintf(stderr, "usage: bench_contact [threads >= 1 [quick|all|pile|balls|slab "
                        "[bodies (pile) | frames]]]\n");
        return 2;
    }
    defo_set_threads(threads);
    printf("{\n  \"benchmark\": \"contact\",\n  \"threads\": %d,\n  \"runs\": [\n", threads);
    int ok = 1;
    const int all = !strcmp(which, "all");
    if (all || !strcmp(which, "quick") || !strcmp(which, "pile")) {
        const int n = !strcmp(which, "pile") && arg > 0 ? arg : 20;
        const result r = pile(n, 30);
        print("pile of soft balls, 1 s", &r, !all);
        ok &= r.ok;
    }
    if (all || !strcmp(which, "balls")) {
        const result r = balls(arg > 0 ? arg : 15);
        print("two balls head on", &r, !all);
        ok &= r.ok;
    }
    if (all || !strcmp(which, "slab")) {
        const result r = slab(arg > 0 ? arg : 15);
        print("ball on a slab", &r, 1);
        ok &= r.ok;
    }
    printf("  ]\n}\n");
    return ok ? 0 : 1;
}
