/*
 * bench/bench_quasistatic.c — the world's QUASISTATIC integrator (TSIF05
 * Newton per frame) on a bar (4:1:1, neo-Hookean, E = 1e5 Pa, constant
 * extrapolation and the definiteness fix on, no gravity) whose end bones
 * twist it at 90°/s, one world step per 1/30 s frame: moving boundary
 * conditions every frame (targets: a ~10 K tet frame in ≤ 33 ms, a Newton
 * iteration on ≥ 300 K tets in ≤ 1 s).
 *
 * Each run steps `warmup` frames untimed (the cubic predictor needs four
 * equilibria), then times `frames` world steps; a configuration is run
 * `repeat` times and the MEDIAN of the wall time per frame is reported with
 * its min and max (the machine is shared: the spread says how noisy it was)
 * and the process CPU time.  The time is the whole defo_world_step: the
 * equilibrium solve, and the world's own work per frame (the frame's
 * snapshot, the count of inverted elements at the end).  Every world frame
 * starts with a fresh factorisation of the preconditioner (frame_start), so
 * precond_setups_per_frame is at least 1 with block_ic0 / two_level.
 * Reported per run: ms per frame and per Newton iteration, Newton iterations
 * per frame, CG iterations per Newton iteration, preconditioner
 * factorisations per frame, memory ("solver_mb": what the world holds at the
 * end of the run — mesh copy, rest data, force model, matrix, solver,
 * history; "peak_mb": the peak during the run).  The world reports no
 * predicted frames, fallbacks or time inside the linear solves: those keys
 * are null.
 *
 *   bench_quasistatic [large | max_cells] [options]      JSON on stdout
 *     large / max_cells  the default sweep has 8 and 16 cells across (12 288
 *                        and 98 304 tets), "large" (or max_cells ≥ 26) adds
 *                        26 (421 824 tets); with PETSc, rows "petsc" (the
 *                        backend's default on one process) and "petsc_gamg"
 *                        (CG + GAMG, the many-process default) on one thread
 *                        beside "default" (docs/distributed.md; the many-
 *                        process table is bench/mpi_scaling.sh's); then
 *                        tet10 rows: 4 and 9 cells
 *                        across (1 536 and 17 496 tet10), both formulations
 *   options (any of them replaces the sweep by the single configuration):
 *     --cells N          bar of 4N × N × N cells (24 N³ tets)
 *     --order 1|2        tet4 (default) or tet10
 *     --formulation NAME invertible (default) | corotated
 *     --threads N        default 1
 *     --precond NAME     jacobi | block_jacobi | block_ic0 | cholesky | two_level
 *     --forcing NAME     target | ew
 *     --predictor NAME   none | linear | quadratic | cubic (default cubic)
 *     --solver NAME      pcg | cholesky | petsc (defo/petsc.h, one process)
 *     --petsc-options S  the PETSc backend's options ("-pc_type gamg")
 *     --tolerance T      Newton tolerance (default 1e-6, the library's)
 *     --max-age N        the linear solver's max_age
 *     --frames N --warmup N --repeat N
 *     --baseline         block_jacobi, target forcing, no predictor
 */
#include "bench.h"
#include "defo/cholesky.h"
#include "defo/petsc.h"
#include "defo/world.h"

#include <stdio.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct config {
    int cells, order, threads, frames, warmup, repeat, max_age;
    double tolerance;
    defo_formulation formulation;
    defo_linear_method solver;
    const char *petsc_options; /* DEFO_LINEAR_BACKEND: the backend's options */
    defo_precond_kind precond;
    defo_forcing forcing;
    defo_predictor predictor;
} config;

typedef struct result {
    double ms_frame, ms_frame_min, ms_frame_max, cpu_ms_frame, ms_newton, newton_per_frame,
        cg_per_newton, setups_per_frame, mb_solver, mb_peak;
    int frames, converged, negative_curvature;
} result;

/* One run of cfg on mesh m: warm-up frames, then the timed frames. */
static int run_once(const defo_mesh *m, const config *cfg, result *r, double *wall, double *cpu) {
    memset(r, 0, sizeof *r);
    defo_set_threads(cfg->threads);
    defo_reset_peak_allocated_bytes();
    const int64_t base = defo_allocated_bytes();
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    d.tolerance = cfg->tolerance;
    d.linear.method = cfg->solver;
    if (cfg->petsc_options)
        snprintf(d.linear.backend_options, sizeof d.linear.backend_options, "%s",
                 cfg->petsc_options);
    d.linear.precond.kind = cfg->precond;
    d.linear.max_age = cfg->max_age;
    d.newton.forcing = cfg->forcing;
    d.predictor = cfg->predictor;
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.force.formulation = cfg->formulation;
    bd.force.constant_extrapolation = 1;
    bd.force.definiteness_fix = 1;
    defo_body_id id;
    int integ = -1;
    double lo0[3] = {-1, -1, -1}, hi0[3] = {1e-9, 2, 2}, lo1[3] = {4 - 1e-9, -1, -1},
           hi1[3] = {5, 2, 2};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    defo_motion_def mo = defo_default_motion_def();
    mo.angular_axis[0] = 1;
    mo.angular_axis[2] = 0;
    mo.angular_speed = 0.5 * M_PI; /* 90°/s */
    mo.pivot[1] = mo.pivot[2] = 0.5;
    defo_status s = defo_world_create(&wd, &w);
    if (!s) s = defo_world_add_integrator(w, &d, &integ);
    bd.integrator = integ;
    if (!s) s = defo_world_add_body(w, &bd, &id);
    if (!s) s = defo_body_prescribe(w, id, &r0, NULL, NULL);
    if (!s) s = defo_body_prescribe(w, id, &r1, &mo, NULL);
    if (s) {
        fprintf(stderr, "bench_quasistatic: %s\n", defo_last_error());
        defo_world_destroy(w);
        return 0;
    }
    int newton = 0, cg = 0, setups = 0;
    double t0 = 0, c0 = 0;
    for (int f = 1; f <= cfg->warmup + cfg->frames; f++) {
        if (f == cfg->warmup + 1) {
            t0 = bench_now();
            c0 = bench_cpu_now();
        }
        defo_status rc = defo_world_step(w, 1.0 / 30.0);
        if (rc < 0) {
            fprintf(stderr, "bench_quasistatic: frame %d: %s\n", f, defo_last_error());
            break;
        }
        if (f <= cfg->warmup) continue;
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (rc == DEFO_OK) r->converged++;
        newton += st.newton_iterations;
        cg += st.cg_iterations;
        setups += st.precond_setups;
        r->negative_curvature += st.negative_curvature;
    }
    *wall = bench_now() - t0;
    *cpu = bench_cpu_now() - c0;
    const int frames = cfg->frames;
    r->frames = frames;
    r->ms_frame = 1e3 * *wall / frames;
    r->cpu_ms_frame = 1e3 * *cpu / frames;
    r->ms_newton = newton ? 1e3 * *wall / newton : 0;
    r->newton_per_frame = (double)newton / frames;
    r->cg_per_newton = newton ? (double)cg / newton : 0;
    r->setups_per_frame = (double)setups / frames;
    r->mb_solver = (double)(defo_allocated_bytes() - base) / 1e6;
    r->mb_peak = (double)(defo_peak_allocated_bytes() - base) / 1e6;
    defo_world_destroy(w);
    return 1;
}

static const char *forcing_name(defo_forcing f) {
    return f == DEFO_FORCING_TARGET ? "target" : "ew";
}
static const char *predictor_name(defo_predictor p) {
    static const char *const names[] = {"none", "linear", "quadratic", "cubic"};
    return names[p];
}

/* Median over cfg->repeat runs; prints one JSON object. */
static void run(const defo_mesh *m, const config *cfg, const char *label, int *first) {
    double ms[32], cpu[32];
    int n = cfg->repeat < 1 ? 1 : cfg->repeat > 32 ? 32 : cfg->repeat;
    result r, keep;
    memset(&keep, 0, sizeof keep);
    for (int i = 0; i < n; i++) {
        double w = 0, c = 0;
        if (!run_once(m, cfg, &r, &w, &c)) return;
        ms[i] = r.ms_frame;
        cpu[i] = r.cpu_ms_frame;
        if (i == 0) keep = r;
    }
    double lo = ms[0], hi = ms[0];
    for (int i = 0; i < n; i++) {
        lo = ms[i] < lo ? ms[i] : lo;
        hi = ms[i] > hi ? ms[i] : hi;
    }
    /* counts are identical between repeats (deterministic); times vary */
    double med = bench_median(ms, n), medc = bench_median(cpu, n);
    keep.ms_newton = keep.newton_per_frame > 0 ? med / keep.newton_per_frame : 0;
    printf("%s    {\"label\": \"%s\", \"element\": \"%s\", \"formulation\": \"%s\", \"tets\": %d, "
           "\"nodes\": %d, \"threads\": %d, "
           "\"linear\": \"assembled\", \"solver\": \"%s\", \"precond\": \"%s\", \"forcing\": "
           "\"%s\", \"predictor\": \"%s\", \"precond_max_age\": %d, \"tolerance\": %g, "
           "\"warmup\": %d, \"frames\": %d, "
           "\"converged_frames\": %d, \"repeats\": %d, \"ms_per_frame\": %.2f, "
           "\"ms_per_frame_min\": %.2f, \"ms_per_frame_max\": %.2f, \"cpu_ms_per_frame\": %.2f, "
           "\"frames_per_s\": %.1f, \"ms_per_newton\": %.2f, \"newton_per_frame\": %.2f, "
           "\"cg_per_newton\": %.1f, \"precond_setups_per_frame\": %.2f, "
           "\"predicted_frames\": null, \"linear_share\": null, \"fallbacks\": null, "
           "\"negative_curvature\": %d, \"solver_mb\": %.1f, \"peak_mb\": %.1f}",
           *first ? "" : ",\n", label, cfg->order == 2 ? "tet10" : "tet4",
           defo_formulation_name(cfg->formulation), (int)m->num_elems, (int)m->num_nodes,
           cfg->threads,
           cfg->solver == DEFO_LINEAR_CHOLESKY  ? "cholesky"
           : cfg->solver == DEFO_LINEAR_BACKEND ? "petsc"
                                                : "pcg",
           cfg->solver != DEFO_LINEAR_BACKEND ? defo_precond_name(cfg->precond)
           : cfg->petsc_options               ? cfg->petsc_options
                                              : "petsc default",
           forcing_name(cfg->forcing), predictor_name(cfg->predictor), cfg->max_age, cfg->tolerance,
           cfg->warmup, keep.frames, keep.converged, n, med, lo, hi, medc,
           med > 0 ? 1e3 / med : 0.0, keep.ms_newton, keep.newton_per_frame, keep.cg_per_newton,
           keep.setups_per_frame, keep.negative_curvature, keep.mb_solver, keep.mb_peak);
    *first = 0;
    fflush(stdout);
}

static int parse_kind(const char *s, const char *const *names, int count) {
    for (int i = 0; i < count; i++)
        if (names[i] && !strcmp(s, names[i])) return i;
    return -1;
}

/* The integrator's defaults, with the cubic predictor (the library's
 * default is none; the bench has always measured the cubic one). */
static config default_config(int cells) {
    defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    config c;
    memset(&c, 0, sizeof c);
    c.cells = cells;
    c.order = 1;
    c.threads = 1;
    c.frames = cells <= 8 ? 30 : 3;
    c.warmup = 4;
    c.repeat = cells <= 8 ? 5 : 1;
    c.tolerance = d.tolerance;
    c.formulation = DEFO_FORMULATION_INVERTIBLE;
    c.solver = d.linear.method;
    c.precond = d.linear.precond.kind;
    c.forcing = d.newton.forcing;
    c.predictor = DEFO_PREDICTOR_CUBIC;
    c.max_age = d.linear.max_age;
    return c;
}

static void baseline(config *c) {
    c->precond = DEFO_PRECOND_BLOCK_JACOBI;
    c->forcing = DEFO_FORCING_TARGET;
    c->predictor = DEFO_PREDICTOR_NONE;
}

static defo_mesh *bar(int c, int order) {
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = 4;
    bd.cells[0] = 4 * c;
    bd.cells[1] = bd.cells[2] = c;
    bd.order = order;
    defo_mesh *m = NULL;
    if (defo_generate_box(&bd, &m) != DEFO_OK) return NULL;
    return m;
}

static int usage(const char *arg) {
    fprintf(stderr, "bench_quasistatic: bad argument '%s' (see the top of bench_quasistatic.c)\n",
            arg);
    return 2;
}

int main(int argc, char **argv) {
    static const char *const precs[] = {NULL,        "jacobi",   "block_jacobi",
                                        "block_ic0", "cholesky", "two_level"};
    static const char *const forcings[] = {"target", "ew"};
    static const char *const preds[] = {"none", "linear", "quadratic", "cubic"};
    static const char *const solvers[] = {"pcg", "cholesky", "petsc"};
    static const char *const forms[] = {"invertible", "corotated"};
    int max_cells = 16, single = 0, is_base = 0;
    config one = default_config(8);
    int set_frames = 0, set_repeat = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int k = 0;
        if (!strcmp(a, "large")) {
            max_cells = 26;
            continue;
        }
        if (a[0] != '-') {
            max_cells = atoi(a);
            if (max_cells < 1) return usage(a);
            continue;
        }
        single = 1;
        if (!strcmp(a, "--baseline")) {
            is_base = 1;
            continue;
        }
        if (!v) return usage(a);
        i++;
        if (!strcmp(a, "--cells") && (one.cells = atoi(v)) > 0) {
        } else if (!strcmp(a, "--order") && (one.order = atoi(v)) >= 1 && one.order <= 2) {
        } else if (!strcmp(a, "--threads") && (one.threads = atoi(v)) > 0) {
        } else if (!strcmp(a, "--frames") && (one.frames = atoi(v)) > 0) {
            set_frames = 1;
        } else if (!strcmp(a, "--warmup") && (one.warmup = atoi(v)) >= 0) {
        } else if (!strcmp(a, "--repeat") && (one.repeat = atoi(v)) > 0) {
            set_repeat = 1;
        } else if (!strcmp(a, "--tolerance") && (one.tolerance = atof(v)) > 0) {
        } else if (!strcmp(a, "--max-age") && (one.max_age = atoi(v)) > 0) {
        } else if (!strcmp(a, "--precond") && (k = parse_kind(v, precs, 6)) >= 0) {
            one.precond = (defo_precond_kind)k;
        } else if (!strcmp(a, "--forcing") && (k = parse_kind(v, forcings, 2)) >= 0) {
            one.forcing = (defo_forcing)k;
        } else if (!strcmp(a, "--predictor") && (k = parse_kind(v, preds, 4)) >= 0) {
            one.predictor = (defo_predictor)k;
        } else if (!strcmp(a, "--solver") && (k = parse_kind(v, solvers, 3)) >= 0) {
            one.solver = (defo_linear_method)k;
        } else if (!strcmp(a, "--petsc-options")) {
            one.petsc_options = v;
        } else if (!strcmp(a, "--formulation") && (k = parse_kind(v, forms, 2)) >= 0) {
            one.formulation = (defo_formulation)k;
        } else {
            return usage(a);
        }
    }
    printf("{\n  \"benchmark\": \"quasistatic\",\n  \"scene\": \"bar 4x1x1 twisted by end bones at "
           "90 deg/s, 30 frames/s, neo-Hookean, world steps of the quasistatic integrator\",\n"
           "  \"runs\": [\n");
    int first = 1;
    if (single) {
        config d = default_config(one.cells);
        if (!set_frames) one.frames = d.frames;
        if (!set_repeat) one.repeat = d.repeat;
        if (is_base) baseline(&one);
        defo_mesh *m = bar(one.cells, one.order);
        if (!m) return 1;
        run(m, &one, is_base ? "baseline" : "single", &first);
        defo_mesh_destroy(m);
    } else {
        int sizes[3] = {8, 16, 26};
        for (int s = 0; s < 3 && sizes[s] <= max_cells; s++) {
            int c = sizes[s];
            defo_mesh *m = bar(c, 1);
            if (!m) return 1;
            for (int th = 1; th <= 2; th++) {
                config cf = default_config(c);
                cf.threads = th;
                run(m, &cf, "default", &first);
                if (th == 1 && defo_petsc_available()) {
                    cf.solver = DEFO_LINEAR_BACKEND;
                    run(m, &cf, "petsc", &first);
                    cf.petsc_options = "-pc_type gamg";
                    run(m, &cf, "petsc_gamg", &first);
                    cf = default_config(c);
                }
                cf.precond = DEFO_PRECOND_BLOCK_IC0;
                run(m, &cf, "block_ic0", &first);
                cf = default_config(c);
                cf.threads = th;
                cf.forcing = DEFO_FORCING_TARGET;
                run(m, &cf, "forcing", &first);
                if (c > 16) continue;
                config b = default_config(c);
                b.threads = th;
                baseline(&b);
                run(m, &b, "baseline", &first);
            }
            if (c == 8) {
                /* one lever at a time from the default (1 thread) */
                const defo_precond_kind pk[3] = {DEFO_PRECOND_JACOBI, DEFO_PRECOND_BLOCK_JACOBI,
                                                 DEFO_PRECOND_BLOCK_IC0};
                for (int k = 0; k < 3; k++) {
                    config cf = default_config(c);
                    cf.precond = pk[k];
                    run(m, &cf, "precond", &first);
                }
                config cf = default_config(c);
                cf.forcing = DEFO_FORCING_TARGET;
                run(m, &cf, "forcing", &first);
                cf.precond = DEFO_PRECOND_BLOCK_JACOBI;
                run(m, &cf, "forcing", &first);
                for (int p = 0; p < 3; p++) {
                    cf = default_config(c);
                    cf.predictor = (defo_predictor)p;
                    run(m, &cf, "predictor", &first);
                }
                cf = default_config(c);
                cf.tolerance = 1e-4;
                run(m, &cf, "tolerance", &first);
                if (defo_cholesky_available()) {
                    cf = default_config(c);
                    cf.solver = DEFO_LINEAR_CHOLESKY;
                    cf.repeat = 1;
                    cf.frames = 5;
                    run(m, &cf, "cholesky", &first);
                }
            }
            defo_mesh_destroy(m);
        }
        /* tet10 (MTPS08 §4): the same bar at about 2 K and 20 K elements,
         * both formulations, 1 and 2 threads */
        const int cells10[2] = {4, 9};
        for (int s = 0; s < 2; s++) {
            defo_mesh *m = bar(cells10[s], 2);
            if (!m) return 1;
            for (int f = 0; f < 2; f++)
                for (int th = 1; th <= 2; th++) {
                    config cf = default_config(cells10[s] <= 4 ? 8 : 16);
                    cf.cells = cells10[s];
                    cf.order = 2;
                    cf.formulation = (defo_formulation)f;
                    cf.threads = th;
                    run(m, &cf, "tet10", &first);
                }
            defo_mesh_destroy(m);
        }
    }
    printf("\n  ]\n}\n");
    defo_petsc_finalize();
    return 0;
}
