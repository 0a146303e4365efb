/*
 * bench/bench_corotated.c — warped-stiffness corotational FEM with implicit
 * Euler (MG04 §6), the scenario of issue 6:
 *   cantilever bar of 4n×n×n cubes, 6 tets per cube (DEFO_SPLIT_6), n = 8, 13,
 *   20; 1.0 m long (x), 0.25 m square section; E = 1e6 Pa, ν = 0.45,
 *   ρ = 1000 kg/m³; x = 0 face clamped; gravity; Δt = 0.01 s, 20 steps; PCG
 *   to a relative tolerance of 1e-6, warm-started from the previous velocity.
 * Reports per configuration: ms per step split into rotations+forces,
 * assembly and solve (the preconditioner's setup is in the solve: the
 * linear solver decides when to refactor; the JSON key keeps its name
 * "ms_assembly_precond"), CG iterations per step, peak memory and
 * the mean tip (x = 1 face) displacement after 20 steps; with 1 and 2 threads.
 * Plus a ~5 K-tet bar in interactive mode (20 CG iterations per step):
 * steps per second.  JSON on stdout; asserts nothing.
 *
 * Preconditioners: the lagged sparse Cholesky (when built with CHOLMOD),
 * block IC(0) and block Jacobi; "refactors" counts the steps that
 * recomputed the preconditioner.
 *
 * Usage: bench_corotated [max_n [max_threads [preconditioner]]]
 *   (defaults 20, 2, all; e.g. "cholesky" runs only that one)
 */
#include "defo/backward_euler.h"
#include "defo/cholesky.h"
#include "defo/mesh.h"

#include "bench.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct run_result {
    double ms_rot, ms_asm, ms_solve, ms_total, iters, tip, peak_mb, model_mb;
    int refactors;
    double cpu_ms; /* process CPU time per step: with 1 thread, fairer on a shared machine */
    defo_index tets;
    int ok;
} run_result;

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static defo_mesh *bar(int cx, int cy, int cz) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = cx;
    d.cells[1] = cy;
    d.cells[2] = cz;
    d.size[0] = 1.0;
    d.size[1] = 0.25;
    d.size[2] = 0.25;
    d.split = DEFO_SPLIT_6;
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

static run_result run_cantilever(defo_mesh *m, defo_precond_kind pk, int fixed_iters, int steps,
                                 double lazy) {
    run_result r;
    memset(&r, 0, sizeof r);
    defo_material_def mat = bench_material();
    defo_backward_euler_def def = defo_default_backward_euler_def();
    def.time_step = 0.01;
    def.cg_tolerance = 1e-6;
    def.preconditioner = pk;
    def.cg_fixed_iterations = fixed_iters;
    if (lazy > 0) { /* MTPS08 §4.4: recompute Re only when F moved by more than lazy */
        def.corotated.rotation_interval = 0;
        def.corotated.lazy_tolerance = lazy;
    }
    defo_reset_peak_allocated_bytes();
    int64_t base = defo_allocated_bytes();
    defo_backward_euler *be = NULL;
    if (defo_backward_euler_create(m, &mat, &def, &be)) {
        fprintf(stderr, "create: %s\n", defo_last_error());
        return r;
    }
    unsigned char *con = defo_backward_euler_constraints(be);
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] <= 1e-9) con[i] = 2; /* DEFO_CONSTRAINT_FIXED */
    double t0 = bench_now(), c0 = cpu_now();
    r.ok = 1;
    for (int s = 0; s < steps; s++) {
        defo_backward_euler_stats st;
        defo_status status = defo_backward_euler_step(be, &st);
        if (status < 0) {
            fprintf(stderr, "step %d: %s\n", s, defo_last_error());
            r.ok = 0;
            break;
        }
        r.ms_rot += 1e3 * st.seconds_rotations;
        r.ms_asm += 1e3 * st.seconds_assembly;
        r.ms_solve += 1e3 * st.seconds_solve;
        r.iters += st.cg_iterations;
        r.refactors += st.refactored;
    }
    double t1 = bench_now();
    r.cpu_ms = 1e3 * (cpu_now() - c0) / steps;
    r.ms_total = 1e3 * (t1 - t0) / steps;
    r.ms_rot /= steps;
    r.ms_asm /= steps;
    r.ms_solve /= steps;
    r.iters /= steps;
    const double *x = defo_backward_euler_positions(be);
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
    r.model_mb = (double)defo_backward_euler_bytes(be) / 1e6;
    r.tets = m->num_elems;
    defo_backward_euler_destroy(be);
    return r;
}

static int wanted(const char *only, defo_precond_kind k) {
    if (k == DEFO_PRECOND_CHOLESKY && !defo_cholesky_available()) return 0;
    return !only || !strcmp(only, defo_precond_name(k));
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
        defo_mesh *m = bar(4 * n, n, n);
        if (!m) return 1;
        defo_precond_kind kinds[4] = {DEFO_PRECOND_TWO_LEVEL, DEFO_PRECOND_CHOLESKY,
                                      DEFO_PRECOND_BLOCK_IC0, DEFO_PRECOND_BLOCK_JACOBI};
        for (int ki = 0; ki < 4; ki++) {
            if (kinds[ki] == DEFO_PRECOND_CHOLESKY && n > 8) continue; /* 16 M nonzeros at 13 */
            if (kinds[ki] == DEFO_PRECOND_BLOCK_JACOBI && n > 13) continue;
            if (!wanted(only, kinds[ki])) continue;
            for (int threads = 1; threads <= max_threads; threads++) {
                defo_set_threads(threads);
                run_result r = run_cantilever(m, kinds[ki], 0, 20, 0);
                printf("%s    {\"n\": %d, \"tets\": %ld, \"nodes\": %ld, \"preconditioner\": "
                       "\"%s\", \"threads\": %d, \"ok\": %d, \"ms_per_step\": %.2f, "
                       "\"cpu_ms_per_step\": %.2f, "
                       "\"ms_rotations_forces\": %.2f, \"ms_assembly_precond\": %.2f, "
                       "\"ms_solve\": %.2f, \"cg_iterations_per_step\": %.1f, \"refactors\": %d, "
                       "\"peak_mb\": %.1f, \"model_mb\": %.1f, \"mean_tip_displacement_m\": "
                       "%.6f}",
                       first ? "" : ",\n", n, (long)r.tets, (long)m->num_nodes,
                       defo_precond_name(kinds[ki]), threads, r.ok, r.ms_total, r.cpu_ms, r.ms_rot,
                       r.ms_asm, r.ms_solve, r.iters, r.refactors, r.peak_mb, r.model_mb, r.tip);
                fflush(stdout);
                first = 0;
            }
        }
        defo_mesh_destroy(m);
    }
    printf("\n  ],\n  \"interactive\": [\n");
    /* ~5 K tets: 13×8×8 cubes × 6 = 4992 tets, same material and clamping,
     * 20 CG iterations per step (MG04 §6). */
    defo_mesh *m = bar(13, 8, 8);
    first = 1;
    defo_precond_kind kinds[4] = {DEFO_PRECOND_BLOCK_JACOBI, DEFO_PRECOND_BLOCK_IC0,
                                  DEFO_PRECOND_CHOLESKY, DEFO_PRECOND_TWO_LEVEL};
    /* block Jacobi also with lazy rotation updates (tolerance 0.05 on the
     * max row sum of F − F_last), whose accuracy cost shows in the tip */
    for (int ki = 0; ki < 5; ki++)
        for (int threads = 1; threads <= max_threads; threads++) {
            defo_precond_kind k = kinds[ki < 4 ? ki : 0];
            double lazy = ki == 4 ? 0.05 : 0;
            if (!wanted(only, k)) continue;
            defo_set_threads(threads);
            const int steps = 300;
            run_result r = run_cantilever(m, k, 20, steps, lazy);
            printf("%s    {\"tets\": %ld, \"preconditioner\": \"%s\", \"lazy_tolerance\": %g, "
                   "\"threads\": %d, \"ok\": %d, "
                   "\"cg_iterations\": 20, \"cg_iterations_per_step\": %.1f, \"refactors\": %d, "
                   "\"steps_per_second\": %.1f, \"ms_per_step\": %.3f, \"cpu_ms_per_step\": %.3f, "
                   "\"ms_rotations_forces\": %.3f, \"ms_assembly_precond\": %.3f, "
                   "\"ms_solve\": %.3f, \"mean_tip_displacement_m\": %.6f}",
                   first ? "" : ",\n", (long)r.tets, defo_precond_name(k), lazy, threads, r.ok,
                   r.iters, r.refactors, 1e3 / r.ms_total, r.ms_total, r.cpu_ms, r.ms_rot, r.ms_asm,
                   r.ms_solve, r.tip);
            fflush(stdout);
            first = 0;
        }
    defo_mesh_destroy(m);
    printf("\n  ]\n}\n");
    return 0;
}
