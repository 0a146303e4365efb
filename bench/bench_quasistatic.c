/*
 * bench/bench_quasistatic.c — the TSIF05 quasistatic Newton solver on a bar
 * (4:1:1, neo-Hookean, E = 1e5 Pa) whose end bones twist it at 90°/s, one
 * frame per 1/30 s: moving boundary conditions every frame (issue 5: a ~10 K
 * tet frame in ≤ 33 ms, a Newton iteration on ≥ 300 K tets in ≤ 1 s).
 *
 * Each run solves `warmup` frames untimed (the cubic predictor needs four
 * equilibria, the preconditioner its first factorisation), then times
 * `frames` frames; a configuration is run `repeat` times and the MEDIAN of
 * the wall time per frame is reported with its min and max (the machine is
 * shared: the spread says how noisy it was) and the process CPU time.
 * Reported per run: ms per frame and per Newton iteration, Newton iterations
 * per frame, CG iterations per Newton iteration, preconditioner
 * factorisations per frame, frames started from the predictor, the share of
 * the time in the linear solves (preconditioner setup included), memory.
 *
 *   bench_quasistatic [max_cells] [options]      JSON on stdout
 *     max_cells          largest size of the default sweep (8, 16, 26 cells
 *                        across: 12 288, 98 304, 421 824 tets; default 26)
 *   options (any of them replaces the sweep by the single configuration):
 *     --cells N          bar of 4N × N × N cells (24 N³ tets)
 *     --threads N        default 1
 *     --precond NAME     jacobi | block_jacobi | block_ic0 | two_level
 *     --forcing NAME     target | ew
 *     --predictor NAME   none | linear | quadratic | cubic
 *     --linear NAME      assembled | matrix_free
 *     --solver NAME      pcg | cholesky
 *     --tolerance T      Newton tolerance (default 1e-6, the library's)
 *     --max-age N        newton.linear.max_age (the lag policy's age limit)
 *     --frames N --warmup N --repeat N
 *     --baseline         the algorithm before issue 5 (block_jacobi, target
 *                        forcing, no predictor) on today's kernels
 */
#include "bench.h"
#include "defo/cholesky.h"
#include "defo/quasistatic.h"

#include <stdio.h>
#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

typedef struct config {
    int cells, threads, frames, warmup, repeat, max_age;
    double tolerance;
    defo_qs_linear linear;
    defo_linear_method solver;
    defo_precond_kind precond;
    defo_forcing forcing;
    defo_qs_predictor predictor;
} config;

typedef struct result {
    double ms_frame, ms_frame_min, ms_frame_max, cpu_ms_frame, ms_newton, newton_per_frame,
        cg_per_newton, setups_per_frame, linear_share, mb_solver, mb_peak;
    int frames, converged, predicted, fallbacks, negative_curvature;
} result;

static double bench_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One run of cfg on mesh m: warm-up frames, then the timed frames. */
static int run_once(const defo_mesh *m, const defo_material *mat, const config *cfg, result *r,
                    double *wall, double *cpu) {
    memset(r, 0, sizeof *r);
    defo_set_threads(cfg->threads);
    defo_reset_peak_allocated_bytes();
    int64_t base = defo_allocated_bytes();
    defo_quasistatic_def d = defo_default_quasistatic_def();
    d.linear = cfg->linear;
    d.tolerance = cfg->tolerance;
    d.newton.linear.method = cfg->solver;
    d.newton.linear.precond.kind = cfg->precond;
    d.newton.forcing = cfg->forcing;
    d.predictor = cfg->predictor;
    d.newton.linear.max_age = cfg->max_age;
    defo_quasistatic *qs = NULL;
    if (defo_quasistatic_create(m, mat, &d, &qs) != DEFO_OK) {
        fprintf(stderr, "bench_quasistatic: %s\n", defo_last_error());
        return 0;
    }
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
    int newton = 0, cg = 0, setups = 0;
    double lin = 0;
    double t0 = 0, c0 = 0;
    for (int f = 1; f <= cfg->warmup + cfg->frames; f++) {
        if (f == cfg->warmup + 1) {
            t0 = bench_now();
            c0 = bench_cpu();
        }
        defo_quasistatic_stats st;
        defo_status rc = defo_quasistatic_solve(qs, f / 30.0, x, &st);
        if (f <= cfg->warmup) continue;
        if (rc == DEFO_OK) r->converged++;
        newton += st.newton_iterations;
        cg += st.cg_iterations;
        setups += st.precond_setups;
        lin += st.linear_seconds;
        r->predicted += st.predicted;
        r->fallbacks += st.precond_fallbacks;
        r->negative_curvature += st.negative_curvature;
    }
    *wall = bench_now() - t0;
    *cpu = bench_cpu() - c0;
    const int frames = cfg->frames;
    r->frames = frames;
    r->ms_frame = 1e3 * *wall / frames;
    r->cpu_ms_frame = 1e3 * *cpu / frames;
    r->ms_newton = newton ? 1e3 * *wall / newton : 0;
    r->newton_per_frame = (double)newton / frames;
    r->cg_per_newton = newton ? (double)cg / newton : 0;
    r->setups_per_frame = (double)setups / frames;
    r->linear_share = *wall > 0 ? lin / *wall : 0;
    r->mb_solver = (double)defo_quasistatic_bytes(qs) / 1e6;
    r->mb_peak = (double)(defo_peak_allocated_bytes() - base) / 1e6;
    free(x);
    defo_quasistatic_destroy(qs);
    return 1;
}

static const char *forcing_name(defo_forcing f) {
    return f == DEFO_FORCING_TARGET ? "target" : "ew";
}
static const char *predictor_name(defo_qs_predictor p) {
    static const char *const names[] = {"none", "linear", "quadratic", "cubic"};
    return names[p];
}

/* Median over cfg->repeat runs; prints one JSON object. */
static void run(const defo_mesh *m, const defo_material *mat, const config *cfg, const char *label,
                int *first) {
    double ms[32], cpu[32];
    int n = cfg->repeat < 1 ? 1 : cfg->repeat > 32 ? 32 : cfg->repeat;
    result r, keep;
    memset(&keep, 0, sizeof keep);
    for (int i = 0; i < n; i++) {
        double w = 0, c = 0;
        if (!run_once(m, mat, cfg, &r, &w, &c)) return;
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
    printf("%s    {\"label\": \"%s\", \"tets\": %d, \"nodes\": %d, \"threads\": %d, "
           "\"linear\": \"%s\", \"solver\": \"%s\", \"precond\": \"%s\", \"forcing\": \"%s\", "
           "\"predictor\": \"%s\", \"precond_max_age\": %d, \"tolerance\": %g, \"warmup\": %d, "
           "\"frames\": %d, "
           "\"converged_frames\": %d, \"repeats\": %d, \"ms_per_frame\": %.2f, "
           "\"ms_per_frame_min\": %.2f, \"ms_per_frame_max\": %.2f, \"cpu_ms_per_frame\": %.2f, "
           "\"frames_per_s\": %.1f, \"ms_per_newton\": %.2f, \"newton_per_frame\": %.2f, "
           "\"cg_per_newton\": %.1f, \"precond_setups_per_frame\": %.2f, "
           "\"predicted_frames\": %d, \"linear_share\": %.2f, \"fallbacks\": %d, "
           "\"negative_curvature\": %d, \"solver_mb\": %.1f, \"peak_mb\": %.1f}",
           *first ? "" : ",\n", label, (int)m->num_elems, (int)m->num_nodes, cfg->threads,
           cfg->linear == DEFO_QS_LINEAR_MATRIX_FREE ? "matrix_free" : "assembled",
           cfg->solver == DEFO_LINEAR_CHOLESKY ? "cholesky" : "pcg",
           defo_precond_name(cfg->precond), forcing_name(cfg->forcing),
           predictor_name(cfg->predictor), cfg->max_age, cfg->tolerance, cfg->warmup, keep.frames,
           keep.converged, n, med, lo, hi, medc, med > 0 ? 1e3 / med : 0.0, keep.ms_newton,
           keep.newton_per_frame, keep.cg_per_newton, keep.setups_per_frame, keep.predicted,
           keep.linear_share, keep.fallbacks, keep.negative_curvature, keep.mb_solver,
           keep.mb_peak);
    *first = 0;
    fflush(stdout);
}

static int parse_kind(const char *s, const char *const *names, int count) {
    for (int i = 0; i < count; i++)
        if (names[i] && !strcmp(s, names[i])) return i;
    return -1;
}

static config default_config(int cells) {
    defo_quasistatic_def d = defo_default_quasistatic_def();
    config c;
    memset(&c, 0, sizeof c);
    c.cells = cells;
    c.threads = 1;
    c.frames = cells <= 8 ? 30 : 3;
    c.warmup = 4;
    c.repeat = cells <= 8 ? 5 : 1;
    c.tolerance = d.tolerance;
    c.linear = DEFO_QS_LINEAR_ASSEMBLED;
    c.solver = d.newton.linear.method;
    c.precond = d.newton.linear.precond.kind;
    c.forcing = d.newton.forcing;
    c.predictor = d.predictor;
    c.max_age = d.newton.linear.max_age;
    return c;
}

static void baseline(config *c) {
    c->precond = DEFO_PRECOND_BLOCK_JACOBI;
    c->forcing = DEFO_FORCING_TARGET;
    c->predictor = DEFO_QS_PREDICTOR_NONE;
}

static defo_mesh *bar(int c) {
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = 4;
    bd.cells[0] = 4 * c;
    bd.cells[1] = bd.cells[2] = c;
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
    static const char *const precs[] = {NULL,        "jacobi", "block_jacobi",
                                        "block_ic0", NULL,     "two_level"};
    static const char *const forcings[] = {"target", "ew"};
    static const char *const preds[] = {"none", "linear", "quadratic", "cubic"};
    static const char *const linears[] = {NULL, "assembled", "matrix_free"};
    static const char *const solvers[] = {"pcg", "cholesky"};
    int max_cells = 26, single = 0, is_base = 0;
    config one = default_config(8);
    int set_frames = 0, set_repeat = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int k = 0;
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
            one.predictor = (defo_qs_predictor)k;
        } else if (!strcmp(a, "--linear") && (k = parse_kind(v, linears, 3)) >= 0) {
            one.linear = (defo_qs_linear)k;
        } else if (!strcmp(a, "--solver") && (k = parse_kind(v, solvers, 2)) >= 0) {
            one.solver = (defo_linear_method)k;
        } else {
            return usage(a);
        }
    }
    defo_material_def md = defo_default_material();
    defo_material *mat = NULL;
    defo_material_create(&md, &mat);
    printf("{\n  \"benchmark\": \"quasistatic\",\n  \"scene\": \"bar 4x1x1 twisted by end bones at "
           "90 deg/s, 30 frames/s, neo-Hookean\",\n  \"runs\": [\n");
    int first = 1;
    if (single) {
        config d = default_config(one.cells);
        if (!set_frames) one.frames = d.frames;
        if (!set_repeat) one.repeat = d.repeat;
        if (is_base) baseline(&one);
        defo_mesh *m = bar(one.cells);
        if (!m) return 1;
        run(m, mat, &one, is_base ? "baseline" : "single", &first);
        defo_mesh_destroy(m);
    } else {
        int sizes[3] = {8, 16, 26};
        for (int s = 0; s < 3 && sizes[s] <= max_cells; s++) {
            int c = sizes[s];
            defo_mesh *m = bar(c);
            if (!m) return 1;
            for (int th = 1; th <= 2; th++) {
                config cf = default_config(c);
                cf.threads = th;
                run(m, mat, &cf, "default", &first);
                cf.precond = DEFO_PRECOND_BLOCK_IC0;
                run(m, mat, &cf, "block_ic0", &first);
                cf = default_config(c);
                cf.threads = th;
                cf.forcing = DEFO_FORCING_TARGET;
                run(m, mat, &cf, "forcing", &first);
                if (c > 16) continue;
                config b = default_config(c);
                b.threads = th;
                baseline(&b);
                run(m, mat, &b, "baseline", &first);
            }
            if (c == 8) {
                /* one lever at a time from the default (1 thread) */
                const defo_precond_kind pk[3] = {DEFO_PRECOND_JACOBI, DEFO_PRECOND_BLOCK_JACOBI,
                                                 DEFO_PRECOND_BLOCK_IC0};
                for (int k = 0; k < 3; k++) {
                    config cf = default_config(c);
                    cf.precond = pk[k];
                    run(m, mat, &cf, "precond", &first);
                }
                config cf = default_config(c);
                cf.forcing = DEFO_FORCING_TARGET;
                run(m, mat, &cf, "forcing", &first);
                cf.precond = DEFO_PRECOND_BLOCK_JACOBI;
                run(m, mat, &cf, "forcing", &first);
                for (int p = 0; p < 3; p++) {
                    cf = default_config(c);
                    cf.predictor = (defo_qs_predictor)p;
                    run(m, mat, &cf, "predictor", &first);
                }
                cf = default_config(c);
                cf.tolerance = 1e-4;
                run(m, mat, &cf, "tolerance", &first);
                cf = default_config(c);
                cf.linear = DEFO_QS_LINEAR_MATRIX_FREE;
                run(m, mat, &cf, "matrix_free", &first);
                if (defo_cholesky_available()) {
                    cf = default_config(c);
                    cf.solver = DEFO_LINEAR_CHOLESKY;
                    cf.repeat = 1;
                    cf.frames = 5;
                    run(m, mat, &cf, "cholesky", &first);
                }
            }
            defo_mesh_destroy(m);
        }
    }
    printf("\n  ]\n}\n");
    defo_material_destroy(mat);
    return 0;
}
