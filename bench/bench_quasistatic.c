/*
 * bench/bench_quasistatic.c — the TSIF05 quasistatic Newton solver on a bar
 * (4:1:1, neo-Hookean, E = 1e5 Pa) whose end bones twist it at 90°/s, one
 * frame per 1/30 s: moving boundary conditions every frame.  Reports ms per
 * frame and per Newton iteration, Newton and CG iterations, the share of
 * time spent in CG, and memory, for ~12 K, ~100 K and ~420 K tets, 1 and 2
 * threads, assembled and matrix-free stiffness; the Newton step by PCG and,
 * at ~12 K tets when built with CHOLMOD, by sparse Cholesky
 * ("solver": "cholesky", assembled only).  JSON on stdout.
 *
 *   bench_quasistatic [max_cells]   (default 26: up to 421 824 tets)
 */
#include "bench.h"
#include "defo/cholesky.h"
#include "defo/quasistatic.h"

#include <stdio.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct result {
    double ms_frame, ms_newton, newton_per_frame, cg_per_newton, mb_solver, mb_peak;
    int frames, converged, fallbacks;
} result;

static result run(const defo_mesh *m, const defo_material *mat, int threads, defo_qs_linear lin,
                  defo_qs_solver solver, int frames, double tol) {
    result r;
    memset(&r, 0, sizeof r);
    defo_set_threads(threads);
    defo_reset_peak_allocated_bytes();
    int64_t base = defo_allocated_bytes();
    defo_quasistatic_def d = defo_default_quasistatic_def();
    d.linear = lin;
    d.tolerance = tol;
    d.linear_solver = solver;
    defo_quasistatic *qs = NULL;
    if (defo_quasistatic_create(m, mat, &d, &qs) != DEFO_OK) return r;
    double lo0[3] = {-1, -1, -1}, hi0[3] = {1e-9, 2, 2}, lo1[3] = {4 - 1e-9, -1, -1},
           hi1[3] = {5, 2, 2};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    defo_motion_def mo;
    memset(&mo, 0, sizeof mo);
    mo.angular_axis[0] = 1;
    mo.angular_speed = 0.5 * M_PI; /* 90°/s */
    mo.pivot[1] = mo.pivot[2] = 0.5;
    defo_quasistatic_add_bone(qs, &r0, NULL, NULL);
    defo_quasistatic_add_bone(qs, &r1, &mo, NULL);
    size_t bytes = 3 * (size_t)m->num_nodes * sizeof(double);
    double *x = malloc(bytes);
    memcpy(x, m->x, bytes);
    int newton = 0, cg = 0, conv = 0;
    double t0 = bench_now();
    for (int f = 1; f <= frames; f++) {
        defo_quasistatic_stats st;
        if (defo_quasistatic_solve(qs, f / 30.0, x, &st) == DEFO_OK) conv++;
        newton += st.newton_iterations;
        cg += st.cg_iterations;
        r.fallbacks += st.cholesky_fallbacks;
    }
    double el = bench_now() - t0;
    r.frames = frames;
    r.converged = conv;
    r.ms_frame = 1e3 * el / frames;
    r.ms_newton = newton ? 1e3 * el / newton : 0;
    r.newton_per_frame = (double)newton / frames;
    r.cg_per_newton = newton ? (double)cg / newton : 0;
    r.mb_solver = (double)defo_quasistatic_bytes(qs) / 1e6;
    r.mb_peak = (double)(defo_peak_allocated_bytes() - base) / 1e6;
    free(x);
    defo_quasistatic_destroy(qs);
    return r;
}

int main(int argc, char **argv) {
    int max_cells = argc > 1 ? atoi(argv[1]) : 26;
    int sizes[3] = {8, 16, 26};
    defo_material_def md = defo_default_material();
    defo_material *mat = NULL;
    defo_material_create(&md, &mat);
    printf("{\n  \"benchmark\": \"quasistatic\",\n  \"scene\": \"bar 4x1x1 twisted by end bones at "
           "90 deg/s, 30 frames/s, neo-Hookean\",\n  \"runs\": [\n");
    int first = 1;
    for (int s = 0; s < 3; s++) {
        int c = sizes[s];
        if (c > max_cells) break;
        defo_box_def bd = defo_default_box_def();
        bd.size[0] = 4;
        bd.cells[0] = 4 * c;
        bd.cells[1] = bd.cells[2] = c;
        defo_mesh *m = NULL;
        if (defo_generate_box(&bd, &m) != DEFO_OK) return 1;
        int frames = c <= 8 ? 30 : (c <= 16 ? 5 : 2);
        for (int lin = 1; lin <= 2; lin++) {
            if (lin == 2 && c > 16) continue; /* matrix-free measured slower; skip at 400 K */
            for (int th = 1; th <= 2; th++) {
                double tols[2] = {1e-6, 1e-4};
                for (int run_i = 0; run_i < 3; run_i++) {
                    /* 0, 1: PCG at the two tolerances; 2: Cholesky (12 K) */
                    int ti = run_i == 1 ? 1 : 0;
                    int sol = run_i == 2 ? DEFO_QS_SOLVER_CHOLESKY : DEFO_QS_SOLVER_PCG;
                    if (ti == 1 && (c > 8 || lin == 2)) continue;
                    if (sol == DEFO_QS_SOLVER_CHOLESKY &&
                        (lin != 1 || c > 8 || !defo_cholesky_available()))
                        continue;
                    result r =
                        run(m, mat, th, (defo_qs_linear)lin, (defo_qs_solver)sol, frames, tols[ti]);
                    printf(
                        "%s    {\"tets\": %d, \"nodes\": %d, \"threads\": %d, \"linear\": \"%s\", "
                        "\"solver\": \"%s\", \"cholesky_fallbacks\": %d, "
                        "\"tolerance\": %g, \"frames\": %d, \"converged_frames\": %d, "
                        "\"ms_per_frame\": %.2f, \"frames_per_s\": %.1f, "
                        "\"ms_per_newton\": %.2f, \"newton_per_frame\": %.2f, "
                        "\"cg_per_newton\": %.1f, \"solver_mb\": %.1f, \"peak_mb\": %.1f}",
                        first ? "" : ",\n", (int)m->num_elems, (int)m->num_nodes, th,
                        lin == 1 ? "assembled" : "matrix_free",
                        sol == DEFO_QS_SOLVER_CHOLESKY ? "cholesky" : "pcg", r.fallbacks, tols[ti],
                        r.frames, r.converged, r.ms_frame, r.ms_frame > 0 ? 1e3 / r.ms_frame : 0.0,
                        r.ms_newton, r.newton_per_frame, r.cg_per_newton, r.mb_solver, r.mb_peak);
                    first = 0;
                    fflush(stdout);
                }
            }
        }
        defo_mesh_destroy(m);
    }
    printf("\n  ]\n}\n");
    defo_material_destroy(mat);
    return 0;
}
