/*
 * bench/bench_hybrid.c — the hybrid integrator (MMDJ01 §2.6–2.8): its loop
 * over many fragments, and the static analysis at an impact.
 *
 * 1. The loop: 200 fragments (stone boxes of 0.1 m, 2 × 2 × 2 cells = 48
 *    tets each, E = 1 GPa, toughness 10 MPa) on a 20 × 10 grid, one world
 *    step per 1/240 s step (the hybrid default), gravity on, a ground plane
 *    (friction 0.5):
 *      at_rest    resting on the ground (contacts every step, no impact);
 *      in_flight  1 m above it, each thrown with its own velocity and spin
 *                 (no contact);
 *      stacked    a pile: 50 columns of 4 on a 10 × 5 grid, side by side,
 *                 each box resting on the one below (MMDJ01 §2.8: fragments
 *                 on fragments; every step a body–body contact solve);
 *      heavy_on_light  50 stacks of 4 apart (0.3 m grid), each box twice
 *                 as dense as the one below (2500 … 20000 kg/m³) and shifted
 *                 by 1–2 cm from it: Gauss–Seidel's hardest case (each stack
 *                 one island of rigid/rigid.c's island steps).
 *    Also reported: body–body contact pairs at the last step and the share
 *    of the step spent in body–body contact (search and response).
 *    Reported: the median wall time per step (min, max) over `steps` timed
 *    steps after `warmup`, and per fragment; the process CPU time per step
 *    (the machine is shared: wall times above it say how busy it was).  MMDJ01 §3 reports 5–10 frames
 *    per second for its whole scenes of 1–4 K tets.
 * 2. The static analysis at an impact: a stone slab (4:1:1) of about 1 K,
 *    10 K and 100 K tets (a 6-tet split of cx × cy × cz cells) falling flat
 *    at 5 m/s onto a ridge (a cylinder collider across its middle), the
 *    toughness above every stress so nothing breaks: the step that meets
 *    the ridge against the median step of its flight before; the difference
 *    is the analysis (impulse to forces, anchors, the Newton solve of the
 *    static equilibrium from the rest shape; MMDJ01 §2.6), reported with its
 *    Newton and CG iterations (stats.impacts = 1); the step after it runs
 *    the fracture passes (the stresses, the criterion), its excess reported
 *    as ms_fracture_passes.  Repeated `repeat` times
 *    (fresh worlds), the median reported.
 *
 *    Also: the contact solves' Gauss–Seidel sweeps per step (velocity and
 *    push-out passes) and the solves that ran out of sweeps.
 * 3. The pile scene: examples/scenes/rigid_pile.json (two plates breaking
 *    over a ridge, blocks dropped on the pieces and on a Newmark cushion),
 *    its first `pile-frames` frames, `repeat` times: the contact solves that
 *    ran out of sweeps and the sweeps, per frame and per rigid step (the
 *    same every repeat: the run is deterministic), the CPU time per frame
 *    (median).
 *   bench_hybrid [--steps N] [--warmup N] [--repeat N] [--max-tets N]
 *                [--threads N] [--only loop|impact|pile|CASE]
 *                [--pile PATH] [--pile-frames N]  JSON on stdout
 *     --only CASE   one loop case (at_rest, in_flight, stacked), no impact
 *                   analysis; --case CASE says the same
 *     --max-tets N  the largest slab (default 110000: all three)
 *     --threads N   the world's threads (default 1)
 *     --pile PATH   the pile scene (default examples/scenes/rigid_pile.json,
 *                   from the repository's root); --pile-frames N its frames
 *                   (default 10)
 */
#include "defo/collision.h"
#include "defo/fracture.h"
#include "defo/integrator.h"
#include "defo/mesh.h"
#include "defo/scene.h"
#include "defo/world.h"

#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int g_steps = 60, g_warmup = 10, g_repeat = 3, g_threads = 1;
static long g_max_tets = 110000;
static int g_loop = 1, g_impact = 1, g_case = -1; /* g_case: one loop case (--only NAME) */
static int g_pile = 1, g_pile_frames = 10;
static const char *g_pile_path = "examples/scenes/rigid_pile.json";

static defo_collider *make_plane(void) {
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_PLANE;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    cd.friction = 0.5;
    defo_collider *c = NULL;
    return defo_collider_create(&cd, &c) ? NULL : c;
}

static defo_collider *make_ridge(double z, double half) {
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_CYLINDER;
    sh.center[2] = z;
    sh.axis[0] = 0, sh.axis[1] = 1, sh.axis[2] = 0;
    sh.radius = 0.05;
    sh.half_length = half;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    defo_collider *c = NULL;
    return defo_collider_create(&cd, &c) ? NULL : c;
}

static defo_body_def stone(defo_mesh *m, const defo_fracture_def *fd) {
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    b.material.youngs_modulus = 1e9;
    b.material.poisson = 0.25;
    b.material.density = 2500;
    b.fracture = fd;
    b.integrator = 0;
    return b;
}

static defo_world *hybrid_world(void) {
    defo_world_def wd = defo_default_world_def();
    defo_world *w = NULL;
    if (defo_world_create(&wd, &w)) return NULL;
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_HYBRID);
    if (defo_world_add_integrator(w, &id, NULL)) {
        defo_world_destroy(w);
        return NULL;
    }
    return w;
}

/* ---------------------------------------------------- 1. the loop */
typedef struct loop_result {
    double ms, ms_min, ms_max, cpu_ms;
    int bodies, impacts, contacts, pairs;
    long sweeps, not_converged; /* the contact solves' sweeps and caps reached, timed steps */
    long tets;
    double contact_share;
} loop_result;

enum { AT_REST, IN_FLIGHT, STACKED, HEAVY_ON_LIGHT, LOOP_CASES };
static const char *const loop_case[LOOP_CASES] = {"at_rest", "in_flight", "stacked",
                                                  "heavy_on_light"};

static int run_loop(int mode, loop_result *r) {
    const int in_flight = mode == IN_FLIGHT;
    memset(r, 0, sizeof *r);
    defo_world *w = hybrid_world();
    defo_collider *ground = make_plane();
    if (!w || !ground || defo_world_add_collider(w, ground)) return 1;
    defo_fracture_def fd = defo_default_fracture_def();
    fd.threshold = 1e7;
    unsigned long long seed = 12345;
    for (int i = 0; i < 200; i++) {
        defo_box_def bd = defo_default_box_def();
        for (int k = 0; k < 3; k++) bd.size[k] = 0.1, bd.cells[k] = 2;
        bd.origin[0] = 0.3 * (i % 20), bd.origin[1] = 0.3 * (i / 20);
        bd.origin[2] = in_flight ? 1.0 : 0.0;
        const int level = i / 50;
        if (mode == STACKED) {
            const int col = i % 50;
            bd.origin[0] = 0.1 * (col % 10), bd.origin[1] = 0.1 * (col / 10);
            bd.origin[2] = 0.1 * level;
        } else if (mode == HEAVY_ON_LIGHT) {
            const int col = i % 50;
            bd.origin[0] = 0.3 * (col % 10) + 0.01 * (level % 2);
            bd.origin[1] = 0.3 * (col / 10) + 0.02 * (level % 3 == 1);
            bd.origin[2] = 0.1 * level;
        }
        defo_mesh *m = NULL;
        if (defo_generate_box(&bd, &m)) return 1;
        defo_body_def b = stone(m, &fd);
        if (mode == HEAVY_ON_LIGHT) b.material.density *= (double)(1 << level);
        if (in_flight) {
            for (int k = 0; k < 3; k++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                const double u = (double)(seed >> 11) / 9007199254740992.0;
                b.velocity[k] = (k == 2 ? 4.0 : 1.0) * (u - 0.5) + (k == 2 ? 3.0 : 0.0);
                b.angular_velocity[k] = 20.0 * (u - 0.3);
            }
        }
        r->tets = m->num_elems;
        defo_body_id id;
        const defo_status s = defo_world_add_body(w, &b, &id);
        defo_mesh_destroy(m);
        if (s) return 1;
    }
    r->bodies = 200;
    const double dt = 1.0 / 240;
    double *t = malloc((size_t)g_steps * sizeof *t), cpu = 0, contact = 0, all = 0;
    for (int i = 0; i < g_warmup + g_steps; i++) {
        if (i == g_warmup) cpu = bench_cpu_now();
        const double t0 = bench_now();
        if (defo_world_step(w, dt)) {
            free(t);
            return 1;
        }
        const double t1 = bench_now();
        defo_step_stats st;
        defo_world_stats(w, &st);
        r->impacts += st.impacts;
        if (i >= g_warmup) {
            t[i - g_warmup] = 1e3 * (t1 - t0);
            r->contacts = (int)st.collisions;
            r->sweeps += st.contact_sweeps;
            r->not_converged += st.not_converged;
            r->pairs = (int)st.contacts;
            contact += st.contact_seconds, all += t1 - t0;
        }
    }
    r->cpu_ms = 1e3 * (bench_cpu_now() - cpu) / g_steps;
    r->contact_share = all > 0 ? contact / all : 0;
    r->ms = bench_median(t, g_steps);
    r->ms_min = t[0], r->ms_max = t[g_steps - 1];
    free(t);
    defo_world_destroy(w);
    defo_collider_destroy(ground);
    return 0;
}

/* ------------------------------------------- 2. the static analysis */
typedef struct impact_result {
    long tets, nodes;
    double ms_impact, ms_flight, ms_analysis, ms_fracture, cpu_impact;
    int newton, cg, impacts, cracks;
} impact_result;

static int run_impact(const int cells[3], impact_result *r) {
    memset(r, 0, sizeof *r);
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = 0.8, bd.size[1] = 0.2, bd.size[2] = 0.2 * cells[2] / cells[1];
    for (int k = 0; k < 3; k++) bd.cells[k] = cells[k], bd.origin[k] = -0.5 * bd.size[k];
    bd.origin[2] = 0.12;
    defo_mesh *m = NULL;
    if (defo_generate_box(&bd, &m)) return 1;
    r->tets = m->num_elems, r->nodes = m->num_nodes;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    if (defo_world_create(&wd, &w)) return 1;
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_HYBRID);
    if (defo_world_add_integrator(w, &id, NULL)) return 1;
    defo_fracture_def fd = defo_default_fracture_def();
    fd.threshold = 1e12; /* analysed, never broken */
    defo_body_def b = stone(m, &fd);
    b.velocity[2] = -5;
    defo_body_id body;
    if (defo_world_add_body(w, &b, &body)) return 1;
    defo_mesh_destroy(m);
    defo_collider *ridge = make_ridge(0.0, 1.0);
    if (!ridge || defo_world_add_collider(w, ridge)) return 1;
    const double dt = 1.0 / 240;
    /* the step that meets the ridge analyses the impact (its Newton
     * iterations, stats.impacts); the next one breaks what breaks (the
     * world's fracture passes) */
    double flight[64], ms_break = 0;
    int nf = 0, analysed = 0;
    for (int i = 0; i < 240 && !(analysed && ms_break > 0); i++) {
        const double t0 = bench_now(), c0 = bench_cpu_now();
        if (defo_world_step(w, dt)) return 1;
        const double ms = 1e3 * (bench_now() - t0), cpu = 1e3 * (bench_cpu_now() - c0);
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (analysed) {
            r->cracks = st.cracks, ms_break = ms;
        } else if (st.newton_iterations > 0) {
            r->ms_impact = ms, r->newton = st.newton_iterations, r->cg = st.cg_iterations;
            r->cpu_impact = cpu, r->impacts = st.impacts, analysed = 1;
        } else if (nf < 64) {
            flight[nf++] = ms;
        }
    }
    r->ms_flight = nf ? bench_median(flight, nf) : 0;
    r->ms_analysis = r->ms_impact - r->ms_flight;
    r->ms_fracture = ms_break - r->ms_flight;
    defo_world_destroy(w);
    defo_collider_destroy(ridge);
    return r->impacts ? 0 : 1;
}

static int cmp_impact(const void *a, const void *b) {
    const double x = ((const impact_result *)a)->ms_impact,
                 y = ((const impact_result *)b)->ms_impact;
    return (x > y) - (x < y);
}

/* ------------------------------------------------- 3. the pile scene */
typedef struct pile_result {
    int frames;
    double fps;
    long steps, not_converged, sweeps;
    double cpu_ms; /* per frame, median of the repeats */
} pile_result;

static int run_pile(pile_result *r) {
    memset(r, 0, sizeof *r);
    defo_scene *scene = NULL;
    defo_scene_errors errs;
    if (defo_scene_load(g_pile_path, &scene, &errs) < 0) {
        fprintf(stderr, "bench_hybrid: %s: %s\n", g_pile_path, errs.count ? errs.lines[0] : "");
        defo_scene_errors_free(&errs);
        return 1;
    }
    defo_scene_errors_free(&errs);
    const int frames =
        g_pile_frames < defo_scene_frames(scene) ? g_pile_frames : defo_scene_frames(scene);
    double cpu[16];
    const int n = g_repeat < 16 ? g_repeat : 16;
    for (int k = 0; k < n; k++) {
        defo_simulation *sim = NULL;
        if (defo_simulation_create(scene, &sim) < 0) {
            defo_scene_destroy(scene);
            return 1;
        }
        defo_world *w = defo_simulation_world(sim);
        long steps = 0, caps = 0, sweeps = 0;
        const double c0 = bench_cpu_now();
        for (int f = 0; f < frames; f++) {
            if (defo_simulation_step_frame(sim) < 0) {
                defo_simulation_destroy(sim);
                defo_scene_destroy(scene);
                return 1;
            }
            defo_step_stats st;
            defo_world_stats(w, &st);
            steps += st.steps, caps += st.not_converged, sweeps += st.contact_sweeps;
        }
        cpu[k] = 1e3 * (bench_cpu_now() - c0) / frames;
        r->steps = steps, r->not_converged = caps, r->sweeps = sweeps;
        defo_simulation_destroy(sim);
    }
    r->frames = frames;
    r->fps = defo_scene_fps(scene);
    r->cpu_ms = bench_median(cpu, n);
    defo_scene_destroy(scene);
    return 0;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            g_steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
            g_warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--repeat") && i + 1 < argc)
            g_repeat = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--max-tets") && i + 1 < argc)
            g_max_tets = atol(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            g_threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--pile") && i + 1 < argc)
            g_pile_path = argv[++i];
        else if (!strcmp(argv[i], "--pile-frames") && i + 1 < argc)
            g_pile_frames = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            ++i;
            g_loop = !strcmp(argv[i], "loop"), g_impact = !strcmp(argv[i], "impact");
            g_pile = !strcmp(argv[i], "pile");
            for (int c = 0; c < LOOP_CASES; c++)
                if (!strcmp(argv[i], loop_case[c])) g_loop = 1, g_case = c;
        } else if (!strcmp(argv[i], "--case") && i + 1 < argc) {
            ++i;
            g_loop = 1, g_impact = 0, g_pile = 0, g_case = LOOP_CASES;
            for (int c = 0; c < LOOP_CASES; c++)
                if (!strcmp(argv[i], loop_case[c])) g_case = c;
            if (g_case == LOOP_CASES) {
                fprintf(stderr,
                        "bench_hybrid: --case %s: not at_rest, in_flight, stacked or "
                        "heavy_on_light\n",
                        argv[i]);
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_hybrid [--steps N] [--warmup N] [--repeat N] "
                            "[--max-tets N] [--threads N] "
                            "[--only loop|impact|pile|at_rest|in_flight|stacked|heavy_on_light] "
                            "[--case at_rest|in_flight|stacked|heavy_on_light] [--pile PATH] "
                            "[--pile-frames N]\n");
            return 2;
        }
    }
    if (g_steps < 1 || g_repeat < 1 || g_warmup < 0 || g_threads < 1 || g_pile_frames < 1) return 2;
    defo_set_threads(g_threads);
    printf("{\n  \"benchmark\": \"hybrid\",\n  \"threads\": %d,\n  \"loop\": [", g_threads);
    int printed = 0;
    for (int c = 0; c < LOOP_CASES && g_loop; c++) {
        if (g_case >= 0 && c != g_case) continue;
        loop_result r;
        if (run_loop(c, &r)) {
            fprintf(stderr, "bench_hybrid: loop failed: %s\n", defo_last_error());
            return 1;
        }
        printf("%s\n    {\"case\": \"%s\", \"bodies\": %d, \"tets_per_body\": %ld, \"steps\": %d, "
               "\"ms_per_step\": %.4f, \"ms_per_step_min\": %.4f, \"ms_per_step_max\": %.4f, "
               "\"cpu_ms_per_step\": %.4f, \"us_per_body_step\": %.3f, \"nodes_in_contact\": %d, "
               "\"impacts\": %d, \"body_pairs\": %d, \"contact_share\": %.3f, "
               "\"contact_sweeps_per_step\": %.1f, \"contact_not_converged\": %ld}",
               printed++ ? "," : "", loop_case[c], r.bodies, r.tets, g_steps, r.ms, r.ms_min,
               r.ms_max, r.cpu_ms, 1e3 * r.ms / r.bodies, r.contacts, r.impacts, r.pairs,
               r.contact_share, (double)r.sweeps / g_steps, r.not_converged);
        fflush(stdout);
    }
    printf("\n  ],\n  \"static_analysis\": [");
    static const int sizes[3][3] = {{12, 4, 4}, {26, 8, 8}, {56, 17, 17}};
    int first = 1;
    for (int c = 0; c < 3 && g_impact; c++) {
        if (6L * sizes[c][0] * sizes[c][1] * sizes[c][2] > g_max_tets) break;
        impact_result rr[16];
        const int n = g_repeat < 16 ? g_repeat : 16;
        for (int k = 0; k < n; k++)
            if (run_impact(sizes[c], &rr[k])) {
                fprintf(stderr, "bench_hybrid: impact failed: %s\n", defo_last_error());
                return 1;
            }
        qsort(rr, (size_t)n, sizeof rr[0], cmp_impact);
        const impact_result *m = &rr[n / 2];
        printf("%s\n    {\"tets\": %ld, \"nodes\": %ld, \"ms_impact_step\": %.3f, "
               "\"ms_impact_step_min\": %.3f, \"ms_impact_step_max\": %.3f, "
               "\"cpu_ms_impact_step\": %.3f, "
               "\"ms_flight_step\": "
               "%.4f, \"ms_analysis\": %.3f, \"ms_fracture_passes\": %.3f, \"newton_iterations\": "
               "%d, \"cg_iterations\": %d, \"cracks\": %d}",
               first ? "" : ",", m->tets, m->nodes, m->ms_impact, rr[0].ms_impact,
               rr[n - 1].ms_impact, m->cpu_impact, m->ms_flight, m->ms_analysis, m->ms_fracture,
               m->newton, m->cg, m->cracks);
        first = 0;
        fflush(stdout);
    }
    printf("\n  ],\n  \"pile\": [");
    if (g_pile) {
        pile_result p;
        if (run_pile(&p)) {
            fprintf(stderr, "bench_hybrid: pile failed: %s\n", defo_last_error());
            return 1;
        }
        /* the hybrid's steps of 1/240 s (its default) */
        const double rigid_steps = p.frames * 240.0 / p.fps;
        printf("\n    {\"scene\": \"%s\", \"frames\": %d, \"repeat\": %d, \"steps\": %ld, "
               "\"contact_not_converged\": %ld, \"not_converged_per_rigid_step\": %.3f, "
               "\"contact_sweeps_per_rigid_step\": %.1f, \"cpu_ms_per_frame\": %.2f}",
               g_pile_path, p.frames, g_repeat, p.steps, p.not_converged,
               (double)p.not_converged / rigid_steps, (double)p.sweeps / rigid_steps, p.cpu_ms);
    }
    printf("\n  ]\n}\n");
    return 0;
}
