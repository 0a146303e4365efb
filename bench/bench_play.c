/*
 * bench/bench_play.c — what `defo play` needs to run at frame rate.
 *
 *   lazy     the MTPS08 setting: a tet10 bar of 240 elements (10×2×2 cubes,
 *            1 m), corotated, BDF2 with 40 ms steps, the direct solver, its
 *            mid-span pulled by a handle at (0, 0.1, 0.25) m/s, 40 steps;
 *            every rotation recomputed (rotation_interval 1) against the
 *            MTPS08 §4.4 lazy rule (tolerance 0.1): ms per step (median of
 *            3 runs), factorisations, and the free tip's distance between
 *            the two runs over its displacement.
 *   mtps08   MTPS08's model: the bunny meshed with ~350 tet10 (cells 5,
 *            scaled to 0.3 m), a detail surface of 58 784 triangles (the
 *            bunny's own surface split twice, 4 triangles per triangle)
 *            bound to it; BDF2 40 ms, held at its base, the ears pulled by
 *            a handle, 25 steps; one thread, CPU time, median of 5 rounds
 *            of three runs interleaved: the direct solver with every
 *            rotation recomputed (a refactorisation every step, the worst
 *            case), the direct solver with the MTPS08 §4.4 lazy rule
 *            (tolerance 0.1), and PCG preconditioned by a lagged Cholesky
 *            factor (solver/linear.c's lag rule) with every rotation.  Per
 *            run: simulation steps per second, factorisations, CG
 *            iterations, and the most-moved free node's distance from the
 *            first run's over its displacement (the runs' accuracy).  The
 *            detail surface's positions and normals (MTPS08 §6.2) are
 *            `defo play`'s once per displayed frame: their ms apart.
 *            A third argument names a file for the runs' final positions
 *            (3 × 3n doubles) to compare builds.
 *   mg04     MG04's interactive scale: a 5 K-tet4 corotated bar with
 *            plasticity and fracture, backward Euler with 20 PCG iterations
 *            a step (MG04's interactive mode), one step per 1/60 s frame, an
 *            end pulled away at 0.72 m/s until it tears (fracture threshold
 *            1e5 Pa, E 1e6 Pa): frames per second, 1 and 2 threads, and the
 *            splits made in the 60 frames.
 *   render   the mtps08 model's picture at 1280×720 as the window draws it
 *            (fast mode, detail surface with its normals): ms (median of 5).
 * JSON on stdout; asserts nothing.  Usage: bench_play [DATA_DIR [ROW [FILE]]]
 * (ROW: lazy, mtps08 or mg04 alone; mtps08 then renders nothing)
 */
#include "defo/cholesky.h"
#include "defo/embed.h"
#include "defo/io.h"
#include "defo/mesh.h"
#include "defo/mesher.h"
#include "defo/render.h"
#include "defo/world.h"

#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef DEFO_BENCH_DATA
#define DEFO_BENCH_DATA "data"
#endif

typedef struct sim {
    defo_world *w;
    defo_body_id id;
} sim;

static defo_integrator_def bdf2_direct(void) {
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_BDF2);
    id.time_step = 0.04;
    if (defo_cholesky_available()) id.linear.method = DEFO_LINEAR_CHOLESKY;
    return id;
}

static int make(sim *s, const defo_mesh *m, const defo_integrator_def *id, double E, int lazy,
                const defo_plasticity_def *pl, const defo_fracture_def *fr) {
    memset(s, 0, sizeof *s);
    if (defo_world_create(NULL, &s->w)) return 0;
    int integ = -1;
    if (defo_world_add_integrator(s->w, id, &integ)) return 0;
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material.model = DEFO_MODEL_COROTATED;
    bd.material.youngs_modulus = E;
    bd.material.poisson = 0.3;
    bd.material.density = 1000;
    bd.material.damping_time = 0.02;
    bd.force.formulation = DEFO_FORMULATION_COROTATED;
    if (lazy) {
        bd.force.rotation_interval = 0;
        bd.force.lazy_tolerance = 0.1;
    }
    bd.integrator = integ;
    bd.plasticity = pl;
    bd.fracture = fr;
    return defo_world_add_body(s->w, &bd, &s->id) == DEFO_OK;
}

static void prescribe(sim *s, const double lo[3], const double hi[3], const double vel[3]) {
    defo_region r = defo_region_box(lo, hi);
    defo_motion_def mo = defo_default_motion_def();
    if (vel) memcpy(mo.velocity, vel, sizeof mo.velocity);
    defo_body_prescribe(s->w, s->id, &r, vel ? &mo : NULL, NULL);
}

/* ------------------------------------------------------------ lazy */
static void tip(const defo_mesh *m, const double *x, double out[3]) {
    int cnt = 0;
    out[0] = out[1] = out[2] = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] > 1 - 1e-9) {
            for (int k = 0; k < 3; k++) out[k] += x[3 * i + k];
            cnt++;
        }
    for (int k = 0; k < 3; k++) out[k] /= cnt;
}

static void bench_lazy(void) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 10;
    bd.cells[1] = bd.cells[2] = 2;
    bd.size[0] = 1.0;
    bd.size[1] = bd.size[2] = 0.2;
    bd.origin[1] = -0.1;
    bd.origin[2] = 0.4;
    bd.order = 2;
    defo_mesh *m = NULL;
    if (defo_generate_box(&bd, &m)) return;
    const defo_integrator_def id = bdf2_direct();
    double ms[2] = {0, 0}, tips[2][3], rest[3];
    int fact[2] = {0, 0};
    for (int lazy = 0; lazy < 2; lazy++) {
        double rep[3];
        for (int r = 0; r < 3; r++) {
            sim s;
            if (!make(&s, m, &id, 5e5, lazy, NULL, NULL)) return;
            const double lo[3] = {-1, -1, -1}, hi[3] = {1e-3, 1, 2};
            prescribe(&s, lo, hi, NULL);
            const double plo[3] = {0.5 - 1e-3, -1, -1}, phi[3] = {0.5 + 1e-3, 1, 2},
                         v[3] = {0, 0.1, 0.25};
            prescribe(&s, plo, phi, v);
            int f = 0;
            const double t0 = bench_now();
            for (int k = 0; k < 40; k++) {
                defo_world_step(s.w, 0.04);
                defo_step_stats st;
                defo_world_stats(s.w, &st);
                f += st.precond_setups;
            }
            rep[r] = 1e3 * (bench_now() - t0) / 40;
            fact[lazy] = f;
            tip(m, defo_body_positions(s.w, s.id), tips[lazy]);
            defo_world_destroy(s.w);
        }
        ms[lazy] = bench_median(rep, 3);
    }
    tip(m, m->x, rest);
    double moved = 0, off = 0;
    for (int k = 0; k < 3; k++) {
        moved += pow(tips[0][k] - rest[k], 2);
        off += pow(tips[0][k] - tips[1][k], 2);
    }
    printf(
        "  \"lazy\": {\"elements\": %ld, \"solver\": \"%s\", \"steps\": 40, \"ms_per_step_full\": "
        "%.3f, \"ms_per_step_lazy\": %.3f, \"speedup\": %.2f, \"factorisations_full\": %d, "
        "\"factorisations_lazy\": %d, \"tip_offset_of_move\": %.2e},\n",
        (long)m->num_elems, defo_cholesky_available() ? "cholesky" : "pcg", ms[0], ms[1],
        ms[0] / ms[1], fact[0], fact[1], sqrt(off) / sqrt(moved));
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------ mtps08 */
typedef struct edge_slot {
    int64_t key;
    size_t slot;
} edge_slot;

static int cmp_edge(const void *a, const void *b) {
    const edge_slot *x = a, *y = b;
    if (x->key != y->key) return x->key < y->key ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* Each triangle into 4 through its edge midpoints (shared). */
static defo_mesh *split4(const defo_mesh *s) {
    defo_mesh *o = NULL;
    if (defo_mesh_create(0, &o)) return NULL;
    for (defo_index i = 0; i < s->num_nodes; i++)
        defo_mesh_add_node(o, s->x[3 * i], s->x[3 * i + 1], s->x[3 * i + 2], NULL);
    /* edge → midpoint: the triangle slots sorted by their edge (min, max) */
    const size_t ne = 3 * (size_t)s->num_tris;
    edge_slot *es = malloc(ne * sizeof *es);
    defo_index *mid = malloc(ne * sizeof *mid);
    size_t *order = malloc(ne * sizeof *order);
    for (size_t k = 0; k < ne; k++) {
        const defo_index a = s->tris[k], b = s->tris[k % 3 == 2 ? k - 2 : k + 1];
        es[k].key = (int64_t)(a < b ? a : b) * s->num_nodes + (a < b ? b : a);
        es[k].slot = k;
    }
    qsort(es, ne, sizeof *es, cmp_edge);
    int64_t *key = malloc(ne * sizeof *key);
    for (size_t i = 0; i < ne; i++) {
        order[i] = es[i].slot;
        key[es[i].slot] = es[i].key;
    }
    free(es);
    for (size_t i = 0; i < ne; i++) {
        const size_t k = order[i];
        if (i > 0 && key[order[i - 1]] == key[k]) {
            mid[k] = mid[order[i - 1]];
            continue;
        }
        const defo_index a = s->tris[k], b = s->tris[k % 3 == 2 ? k - 2 : k + 1];
        defo_mesh_add_node(o, 0.5 * (s->x[3 * a] + s->x[3 * b]),
                           0.5 * (s->x[3 * a + 1] + s->x[3 * b + 1]),
                           0.5 * (s->x[3 * a + 2] + s->x[3 * b + 2]), &mid[k]);
    }
    for (defo_index t = 0; t < s->num_tris; t++) {
        const defo_index *v = s->tris + 3 * t, *e = mid + 3 * t;
        const defo_index q[4][3] = {
            {v[0], e[0], e[2]}, {e[0], v[1], e[1]}, {e[2], e[1], v[2]}, {e[0], e[1], e[2]}};
        for (int k = 0; k < 4; k++) defo_mesh_add_tri(o, q[k], 3, 0);
    }
    free(key);
    free(mid);
    free(order);
    return o;
}

/* The mtps08 row's solver settings: the direct solver refactoring every
 * step (every rotation recomputed: the worst case) or while the MTPS08 §4.4
 * lazy rule recomputes rotations, or PCG preconditioned by a lagged
 * factorisation (solver/linear.c's lag rule) with every rotation. */
typedef struct play_run {
    const char *name;
    int lazy, lagged;
} play_run;

static void bench_mtps08(const char *data, defo_renderer *rnd, const char *dump) {
    char path[1024];
    snprintf(path, sizeof path, "%s/meshes/bunny.off", data);
    defo_mesh *surf = NULL, *tets = NULL;
    if (defo_mesh_read(path, NULL, &surf)) {
        fprintf(stderr, "bench_play: %s: %s\n", path, defo_last_error());
        return;
    }
    /* 0.3 m tall, standing on z = 0 */
    double lo[3], hi[3];
    defo_mesh_bbox(surf, lo, hi);
    const double sc = 0.3 / (hi[1] - lo[1]);
    for (defo_index i = 0; i < surf->num_nodes; i++) {
        double *p = surf->x + 3 * i, y = p[1], z = p[2];
        p[0] = sc * (p[0] - 0.5 * (lo[0] + hi[0]));
        p[1] = sc * (z - 0.5 * (lo[2] + hi[2]));
        p[2] = sc * (y - lo[1]);
    }
    defo_mesher_def md = defo_default_mesher_def();
    md.cells = 5;
    md.order = 2;
    if (defo_mesh_surface(surf, &md, &tets, NULL) < 0) return;
    defo_mesh *detail = split4(surf);
    defo_mesh *detail2 = detail ? split4(detail) : NULL;
    defo_embed *emb = NULL;
    if (!detail2 || defo_embed_create(tets, detail2, &emb)) return;
    const size_t nv = (size_t)detail2->num_nodes, m3 = 3 * (size_t)tets->num_nodes;
    double *p = malloc(3 * nv * sizeof(double)), *n = malloc(3 * nv * sizeof(double));
    enum { RUNS = 3, REPS = 5, STEPS = 25 };
    const play_run runs[RUNS] = {
        {"direct, every rotation", 0, 0}, {"direct, lazy", 1, 0}, {"lagged factor", 0, 1}};
    /* one thread, CPU time (the machine may be busy); the runs interleaved */
    const int threads = defo_get_threads();
    defo_set_threads(1);
    double sps[RUNS][REPS], dms[REPS], *last = malloc(RUNS * m3 * sizeof(double));
    int fact[RUNS] = {0}, iters[RUNS] = {0};
    defo_mesh_bbox(tets, lo, hi);
    for (int r = 0; r < REPS; r++)
        for (int c = 0; c < RUNS; c++) {
            defo_integrator_def id = bdf2_direct();
            if (runs[c].lagged) {
                id.linear.method = DEFO_LINEAR_PCG;
                id.linear.precond.kind =
                    defo_cholesky_available() ? DEFO_PRECOND_CHOLESKY : DEFO_PRECOND_TWO_LEVEL;
            }
            sim s;
            if (!make(&s, tets, &id, 5e4, runs[c].lazy, NULL, NULL)) return;
            const double flo[3] = {-1, -1, -1}, fhi[3] = {1, 1, lo[2] + 0.03};
            prescribe(&s, flo, fhi, NULL);
            const double elo[3] = {-1, -1, hi[2] - 0.05}, ehi[3] = {1, 1, 1}, v[3] = {0.15, 0, 0};
            prescribe(&s, elo, ehi, v);
            double tstep = 0;
            fact[c] = iters[c] = 0;
            for (int k = 0; k < STEPS; k++) {
                const double t0 = bench_cpu_now();
                defo_world_step(s.w, 0.04);
                tstep += bench_cpu_now() - t0;
                defo_step_stats st;
                defo_world_stats(s.w, &st);
                fact[c] += st.precond_setups;
                iters[c] += st.cg_iterations;
            }
            sps[c][r] = STEPS / tstep;
            memcpy(last + c * m3, defo_body_positions(s.w, s.id), m3 * sizeof(double));
            /* the detail surface's positions and normals (MTPS08 §6.2), as
             * `defo play` makes them once per displayed frame */
            if (c == 0) {
                const double t0 = bench_cpu_now();
                defo_embed_update(emb, defo_body_positions(s.w, s.id), NULL, p, n);
                dms[r] = 1e3 * (bench_cpu_now() - t0);
            }
            if (c == RUNS - 1 && r == REPS - 1 && rnd) {
                /* the window's picture of the last state */
                defo_embed_update(emb, defo_body_positions(s.w, s.id), NULL, p, n);
                double ms[5];
                for (int q = 0; q < 5; q++) {
                    defo_render_def rd = defo_default_render_def();
                    rd.width = 1280;
                    rd.height = 720;
                    rd.fast = 1;
                    defo_render_part part;
                    memset(&part, 0, sizeof part);
                    part.mesh = defo_body_mesh(s.w, s.id);
                    part.positions = defo_body_positions(s.w, s.id);
                    part.surface = detail2;
                    part.surface_positions = p;
                    part.surface_elem = defo_embed_elements(emb);
                    part.surface_bary = defo_embed_barycentric(emb);
                    part.surface_normals = n;
                    defo_image img = {0, 0, NULL};
                    const double t1 = bench_now();
                    defo_render_parts(rnd, &rd, &part, 1, NULL, 0, &img);
                    ms[q] = 1e3 * (bench_now() - t1);
                    if (q == 0) defo_image_write_png("bench_play_mtps08.png", &img);
                    defo_image_free(&img);
                }
                printf("  \"render\": {\"width\": 1280, \"height\": 720, \"triangles\": %ld, "
                       "\"renderer\": \"%s\", \"ms\": %.1f},\n",
                       (long)detail2->num_tris, defo_renderer_name(rnd), bench_median(ms, 5));
            }
            defo_world_destroy(s.w);
        }
    defo_set_threads(threads);
    /* the free node that moved most in the first run; each run's distance
     * from it there over its displacement */
    defo_index far = 0;
    double moved = -1;
    for (defo_index i = 0; i < tets->num_nodes; i++) {
        double d = 0;
        for (int k = 0; k < 3; k++) d += pow(last[3 * i + k] - tets->x[3 * i + k], 2);
        if (d > moved && tets->x[3 * i + 2] > lo[2] + 0.03 && tets->x[3 * i + 2] < hi[2] - 0.05) {
            moved = d;
            far = i;
        }
    }
    printf("  \"mtps08\": {\"elements\": %ld, \"nodes\": %ld, \"detail_triangles\": %ld, "
           "\"threads\": 1, \"steps\": %d, \"detail_ms\": %.2f, \"node\": %ld, "
           "\"node_x\": [%.9f, %.9f, %.9f], \"runs\": [",
           (long)tets->num_elems, (long)tets->num_nodes, (long)detail2->num_tris, STEPS,
           bench_median(dms, REPS), (long)far, last[3 * far], last[3 * far + 1], last[3 * far + 2]);
    for (int c = 0; c < RUNS; c++) {
        double off = 0;
        for (int k = 0; k < 3; k++) off += pow(last[c * m3 + 3 * far + k] - last[3 * far + k], 2);
        const double med = bench_median(sps[c], REPS);
        printf("%s\n    {\"solver\": \"%s\", \"steps_per_s\": %.1f, \"step_ms\": %.2f, "
               "\"factorisations\": %d, \"cg_iterations\": %d, \"node_offset_of_move\": %.1e}",
               c ? "," : "", runs[c].name, med, 1e3 / med, fact[c], iters[c], sqrt(off / moved));
    }
    printf("]},\n");
    if (dump) {
        FILE *fo = fopen(dump, "wb");
        if (fo) {
            fwrite(last, sizeof(double), RUNS * m3, fo);
            fclose(fo);
        }
    }
    free(last);
    free(p);
    free(n);
    defo_embed_destroy(emb);
    defo_mesh_destroy(detail);
    defo_mesh_destroy(detail2);
    defo_mesh_destroy(tets);
    defo_mesh_destroy(surf);
}

/* ------------------------------------------------------------ mg04 */
static void bench_mg04(void) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 24;
    bd.cells[1] = bd.cells[2] = 6;
    bd.size[0] = 1.0;
    bd.size[1] = bd.size[2] = 0.25;
    bd.split = DEFO_SPLIT_5;
    defo_mesh *m = NULL;
    if (defo_generate_box(&bd, &m)) return;
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    id.time_step = 1.0 / 60;
    id.linear.fixed_iterations = 20;
    id.linear.precond.kind = DEFO_PRECOND_BLOCK_JACOBI;
    defo_plasticity_def pl = defo_default_plasticity_def();
    pl.yield = 0.01;
    pl.creep = 5;
    pl.max = 0.5;
    defo_fracture_def fr = defo_default_fracture_def();
    fr.threshold = 1e5;
    printf("  \"mg04\": {\"elements\": %ld, \"fps\": [", (long)m->num_elems);
    for (int th = 1; th <= 2; th++) {
        defo_set_threads(th);
        double rep[3];
        long splits = 0;
        for (int r = 0; r < 3; r++) {
            sim s;
            if (!make(&s, m, &id, 1e6, 0, &pl, &fr)) return;
            const double lo[3] = {-1, -1, -1}, hi[3] = {1e-3, 1, 1};
            prescribe(&s, lo, hi, NULL);
            const double elo[3] = {1 - 1e-3, -1, -1}, ehi[3] = {2, 1, 1}, v[3] = {0.6, 0, 0.4};
            prescribe(&s, elo, ehi, v);
            const int frames = 60;
            const double t0 = bench_now();
            splits = 0;
            for (int k = 0; k < frames; k++) {
                defo_world_step(s.w, 1.0 / 60);
                defo_step_stats st;
                defo_world_stats(s.w, &st);
                splits += st.splits;
            }
            rep[r] = frames / (bench_now() - t0);
            defo_world_destroy(s.w);
        }
        printf("%s{\"threads\": %d, \"frames_per_s\": %.1f, \"splits\": %ld}", th > 1 ? ", " : "",
               th, bench_median(rep, 3), splits);
    }
    printf("]}\n");
    defo_mesh_destroy(m);
}

int main(int argc, char **argv) {
    const char *data = argc > 1 ? argv[1] : DEFO_BENCH_DATA, *row = argc > 2 ? argv[2] : NULL;
    defo_renderer *rnd = NULL;
    if (!row && defo_renderer_create(DEFO_RENDER_AUTO, &rnd) < 0) rnd = NULL;
    printf("{\n");
    if (!row || !strcmp(row, "lazy")) bench_lazy();
    if (!row || !strcmp(row, "mtps08")) bench_mtps08(data, rnd, argc > 3 ? argv[3] : NULL);
    if (!row || !strcmp(row, "mg04")) bench_mg04();
    printf("}\n");
    defo_renderer_destroy(rnd);
    return 0;
}
