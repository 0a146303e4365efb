/*
 * bench/bench_corotated.c — warped-stiffness corotational FEM with implicit
 * Euler (MG04 §6) through the world: a corotated body stepped by a
 * backward Euler integrator.  The scenario of issue 6:
 *   cantilever bar of 4n×n×n cubes, 6 tets per cube (DEFO_SPLIT_6), n = 8, 13,
 *   20; 1.0 m long (x), 0.25 m square section; E = 1e6 Pa, ν = 0.45,
 *   ρ = 1000 kg/m³; x = 0 face clamped (defo_body_prescribe); gravity;
 *   Δt = 0.01 s, 20 steps in one frame (a lagged preconditioner lives within
 *   a frame: every frame starts by refactoring); PCG to a relative tolerance
 *   of 1e-6, warm-started from the previous velocity.
 * Reports per configuration: ms per step, and split into rotations+forces
 * (the force-model evaluation of a step), assembly (the matrix) and the
 * rest, "ms_solve" (PCG with the preconditioner setups, plus the world's own
 * work per step: loads, targets, statistics); CG iterations per step,
 * refactorisations, peak memory, the bytes the world holds after the run
 * (model_mb: mesh, rest data, force model, matrix, solver, snapshot) and the
 * mean tip (x = 1 face) displacement after 20 steps; with 1 and 2 threads.
 * The split is timed on a twin force model at the run's final state (the
 * world reports one wall time per frame), median of 5 repetitions.
 * Plus a ~5 K-tet bar in interactive mode (20 CG iterations per step):
 * steps per second, 300 steps in one frame; and (frame_steps 3) the same
 * stepped 3 steps per frame, as an application drawing every 30 ms does.
 * Plus tet10 cantilevers (MTPS08 §4.3, a rotation per cubature point) of
 * about 2 K and 20 K elements, same material and steps, two-level PCG.
 * JSON on stdout; asserts nothing.
 *
 * Preconditioners: the lagged sparse Cholesky (when built with CHOLMOD),
 * block IC(0), two-level and block Jacobi; "refactors" counts the
 * preconditioner setups.
 *
 * Usage: bench_corotated [max_n [max_threads [preconditioner]]]
 *   (defaults 20, 2, all; e.g. "cholesky" runs only that one)
 */
#include "defo/cholesky.h"
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/mesh.h"
#include "defo/world.h"

#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct run_result {
    double ms_rot, ms_asm, ms_solve, ms_total, iters, tip, peak_mb, model_mb;
    int refactors;
    double cpu_ms; /* process CPU time per step: with 1 thread, fairer on a shared machine */
    defo_index tets, nodes;
    int ok;
} run_result;

static defo_mesh *bar(int cx, int cy, int cz, int order) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = cx;
    d.cells[1] = cy;
    d.cells[2] = cz;
    d.size[0] = 1.0;
    d.size[1] = 0.25;
    d.size[2] = 0.25;
    d.split = DEFO_SPLIT_6;
    d.order = order;
    defo_mesh *m = NULL;
    if (defo_generate_box(&d, &m)) return NULL;
    return m;
}

static defo_material_def bench_material(void) {
    defo_material_def mat = defo_default_material();
    mat.youngs_modulus = 1e6;
    mat.poisson = 0.45;
    mat.density = 1000;
    return mat;
}

/* The force-model work of one implicit Euler step at positions x (one
 * evaluation: the rotations of x and the forces; the matrix), timed on a
 * twin model of the body: medians of 5 repetitions [ms]. */
static void time_split(const defo_mesh *m, const defo_force_model_def *fd, const double *x,
                       const double *mass, double *ms_rot, double *ms_asm) {
    defo_material_def md = bench_material();
    defo_element_rest *rest = NULL;
    defo_material *mat = NULL;
    defo_force_model *fm = NULL;
    double *f = malloc(3 * (size_t)m->num_nodes * sizeof *f);
    *ms_rot = *ms_asm = 0;
    if (f && !defo_element_rest_create(m, &rest) && !defo_material_create(&md, &mat) &&
        !defo_force_model_create(m, rest, mat, fd, &fm)) {
        double tr[5], ta[5];
        const double h = 0.01;
        defo_force_model_assemble(fm, h * h, h, mass, 1.0); /* builds the pattern */
        for (int k = 0; k < 5; k++) {
            double t0 = bench_now();
            defo_force_model_evaluate(fm, x, 0, f, NULL);
            double t1 = bench_now();
            defo_force_model_assemble(fm, h * h, h, mass, 1.0);
            double t2 = bench_now();
            tr[k] = 1e3 * (t1 - t0);
            ta[k] = 1e3 * (t2 - t1);
        }
        *ms_rot = bench_median(tr, 5);
        *ms_asm = bench_median(ta, 5);
    }
    free(f);
    defo_force_model_destroy(fm);
    defo_material_destroy(mat);
    defo_element_rest_destroy(rest);
}

/* steps implicit Euler steps of Δt = 0.01 s, frame_steps per world step. */
static run_result run_cantilever(const defo_mesh *m, defo_precond_kind pk, int fixed_iters,
                                 int steps, int frame_steps, double lazy) {
    run_result r;
    memset(&r, 0, sizeof r);
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    id.time_step = 0.01;
    id.linear.tolerance = 1e-6;
    id.linear.precond.kind = pk;
    id.linear.fixed_iterations = fixed_iters;
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = bench_material();
    bd.force.formulation = DEFO_FORMULATION_COROTATED;
    if (lazy > 0) { /* MTPS08 §4.4: recompute R only when F moved by more than lazy */
        bd.force.rotation_interval = 0;
        bd.force.lazy_tolerance = lazy;
    }
    defo_reset_peak_allocated_bytes();
    int64_t base = defo_allocated_bytes();
    defo_world *w = NULL;
    defo_body_id body;
    const double lo[3] = {-INFINITY, -INFINITY, -INFINITY}, hi[3] = {0, INFINITY, INFINITY};
    defo_region clamp = defo_region_box(lo, hi);
    if (defo_world_create(NULL, &w) || defo_world_add_integrator(w, &id, &bd.integrator) ||
        defo_world_add_body(w, &bd, &body) || defo_body_prescribe(w, body, &clamp, NULL, NULL)) {
        fprintf(stderr, "create: %s\n", defo_last_error());
        defo_world_destroy(w);
        return r;
    }
    double t0 = bench_now(), c0 = bench_cpu_now();
    r.ok = 1;
    int cg = 0;
    for (int s = 0; s < steps; s += frame_steps) {
        const int k = steps - s < frame_steps ? steps - s : frame_steps;
        defo_status status = defo_world_step(w, 0.01 * k);
        if (status < 0) {
            fprintf(stderr, "step %d: %s\n", s, defo_last_error());
            r.ok = 0;
            break;
        }
        defo_step_stats st;
        defo_world_stats(w, &st);
        cg += st.cg_iterations;
        r.refactors += st.precond_setups;
    }
    double t1 = bench_now();
    r.cpu_ms = 1e3 * (bench_cpu_now() - c0) / steps;
    r.ms_total = 1e3 * (t1 - t0) / steps;
    r.iters = (double)cg / steps;
    const double *x = defo_body_positions(w, body);
    double sum = 0;
    int cnt = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] >= 1.0 - 1e-9) {
            double dx = x[3 * i] - m->x[3 * i], dy = x[3 * i + 1] - m->x[3 * i + 1],
                   dz = x[3 * i + 2] - m->x[3 * i + 2];
            sum += sqrt(dx * dx + dy * dy + dz * dz);
            cnt++;
        }
    r.tip = cnt ? sum / cnt : 0;
    r.peak_mb = (double)(defo_peak_allocated_bytes() - base) / 1e6;
    r.model_mb = (double)(defo_allocated_bytes() - base) / 1e6;
    r.tets = m->num_elems;
    r.nodes = m->num_nodes;
    time_split(m, &bd.force, x, defo_body_masses(w, body), &r.ms_rot, &r.ms_asm);
    r.ms_solve = r.ms_total - r.ms_rot - r.ms_asm;
    defo_world_destroy(w);
    return r;
}

static int wanted(const char *only, defo_precond_kind k) {
    if (k == DEFO_PRECOND_CHOLESKY && !defo_cholesky_available()) return 0;
    return !only || !strcmp(only, defo_precond_name(k));
}

static void print_run(int first, int n, const run_result *r, defo_precond_kind k, int threads) {
    printf("%s    {\"n\": %d, \"tets\": %ld, \"nodes\": %ld, \"preconditioner\": "
           "\"%s\", \"threads\": %d, \"ok\": %d, \"ms_per_step\": %.2f, "
           "\"cpu_ms_per_step\": %.2f, "
           "\"ms_rotations_forces\": %.2f, \"ms_assembly_precond\": %.2f, "
           "\"ms_solve\": %.2f, \"cg_iterations_per_step\": %.1f, \"refactors\": %d, "
           "\"peak_mb\": %.1f, \"model_mb\": %.1f, \"mean_tip_displacement_m\": "
           "%.6f}",
           first ? "" : ",\n", n, (long)r->tets, (long)r->nodes, defo_precond_name(k), threads,
           r->ok, r->ms_total, r->cpu_ms, r->ms_rot, r->ms_asm, r->ms_solve, r->iters, r->refactors,
           r->peak_mb, r->model_mb, r->tip);
    fflush(stdout);
}

int main(int argc, char **argv) {
    int max_n = argc > 1 ? atoi(argv[1]) : 20;
    int max_threads = argc > 2 ? atoi(argv[2]) : 2;
    const char *only = argc > 3 ? argv[3] : NULL;
    int sizes[3] = {8, 13, 20};
    printf("{\n  \"benchmark\": \"corotated_cantilever\",\n  \"steps\": 20,\n  \"runs\": [\n");
    int first = 1;
    for (int si = 0; si < 3; si++) {
        int n = sizes[si];
        if (n > max_n) break;
        defo_mesh *m = bar(4 * n, n, n, 1);
        if (!m) return 1;
        defo_precond_kind kinds[4] = {DEFO_PRECOND_TWO_LEVEL, DEFO_PRECOND_CHOLESKY,
                                      DEFO_PRECOND_BLOCK_IC0, DEFO_PRECOND_BLOCK_JACOBI};
        for (int ki = 0; ki < 4; ki++) {
            if (kinds[ki] == DEFO_PRECOND_CHOLESKY && n > 8) continue; /* 16 M nonzeros at 13 */
            if (kinds[ki] == DEFO_PRECOND_BLOCK_JACOBI && n > 13) continue;
            if (!wanted(only, kinds[ki])) continue;
            for (int threads = 1; threads <= max_threads; threads++) {
                defo_set_threads(threads);
                run_result r = run_cantilever(m, kinds[ki], 0, 20, 20, 0);
                print_run(first, n, &r, kinds[ki], threads);
                first = 0;
            }
        }
        defo_mesh_destroy(m);
    }
    printf("\n  ],\n  \"interactive\": [\n");
    /* ~5 K tets: 13×8×8 cubes × 6 = 4992 tets, same material and clamping,
     * 20 CG iterations per step (MG04 §6). */
    defo_mesh *m = bar(13, 8, 8, 1);
    first = 1;
    defo_precond_kind kinds[4] = {DEFO_PRECOND_BLOCK_JACOBI, DEFO_PRECOND_BLOCK_IC0,
                                  DEFO_PRECOND_CHOLESKY, DEFO_PRECOND_TWO_LEVEL};
    /* block Jacobi also with lazy rotation updates (tolerance 0.05 on the
     * max row sum of F − F_last), whose accuracy cost shows in the tip;
     * then IC(0) and two-level stepped 3 steps per frame */
    for (int ki = 0; ki < 7; ki++)
        for (int threads = 1; threads <= max_threads; threads++) {
            defo_precond_kind k = ki < 4    ? kinds[ki]
                                  : ki == 4 ? DEFO_PRECOND_BLOCK_JACOBI
                                  : ki == 5 ? DEFO_PRECOND_BLOCK_IC0
                                            : DEFO_PRECOND_TWO_LEVEL;
            double lazy = ki == 4 ? 0.05 : 0;
            const int steps = 300, frame_steps = ki >= 5 ? 3 : steps;
            if (!wanted(only, k)) continue;
            defo_set_threads(threads);
            run_result r = run_cantilever(m, k, 20, steps, frame_steps, lazy);
            printf("%s    {\"tets\": %ld, \"preconditioner\": \"%s\", \"lazy_tolerance\": %g, "
                   "\"frame_steps\": %d, \"threads\": %d, \"ok\": %d, "
                   "\"cg_iterations\": 20, \"cg_iterations_per_step\": %.1f, \"refactors\": %d, "
                   "\"steps_per_second\": %.1f, \"ms_per_step\": %.3f, \"cpu_ms_per_step\": %.3f, "
                   "\"ms_rotations_forces\": %.3f, \"ms_assembly_precond\": %.3f, "
                   "\"ms_solve\": %.3f, \"mean_tip_displacement_m\": %.6f}",
                   first ? "" : ",\n", (long)r.tets, defo_precond_name(k), lazy, frame_steps,
                   threads, r.ok, r.iters, r.refactors, 1e3 / r.ms_total, r.ms_total, r.cpu_ms,
                   r.ms_rot, r.ms_asm, r.ms_solve, r.tip);
            fflush(stdout);
            first = 0;
        }
    defo_mesh_destroy(m);
    printf("\n  ],\n  \"tet10\": [\n");
    /* tet10 cantilevers: 20×4×4 cubes × 6 = 1920 and 40×9×9 × 6 = 19440
     * quadratic tets, the same bar, two-level PCG to 1e-6, 20 steps */
    first = 1;
    const int cells[2][3] = {{20, 4, 4}, {40, 9, 9}};
    for (int si = 0; si < 2; si++) {
        if (si == 1 && max_n < 13) break;
        defo_mesh *q = bar(cells[si][0], cells[si][1], cells[si][2], 2);
        if (!q) return 1;
        if (wanted(only, DEFO_PRECOND_TWO_LEVEL))
            for (int threads = 1; threads <= max_threads; threads++) {
                defo_set_threads(threads);
                run_result r = run_cantilever(q, DEFO_PRECOND_TWO_LEVEL, 0, 20, 20, 0);
                print_run(first, cells[si][1], &r, DEFO_PRECOND_TWO_LEVEL, threads);
                first = 0;
            }
        defo_mesh_destroy(q);
    }
    printf("\n  ]\n}\n");
    return 0;
}
