/*
 * bench/bench_fibre.c — the cost of the fibre term (ITF04 §6.1; force/
 * kernel_hyperelastic.c) and of skeleton-driven flesh (TSIF05 §11).
 *
 * Kernel rows: one thread, a box of tet4 (about 20 K elements, one point
 * each) and of tet10 (about 3 K, four points each), neo-Hookean with the C1
 * extension, positions perturbed by ±3 % of a cell; the same body without
 * and with fibres (exponential passive curve, active curve at α = 0.5,
 * directions varying per point).  Per quadrature point, medians of 9 runs:
 *   forces_ns    a forces-only pass (the explicit steppers' pass: tet4 goes
 *                four elements at a time, the fibre term and its curves
 *                lanewise too, SVD-free where the material allows);
 *   tangent_ns   a pass keeping the tangent (SVD, dP/dF blocks, definiteness
 *                fix; the implicit and quasistatic steppers' pass);
 *   apply_ns     one tangent product (a CG iteration's);
 *   assemble_ns  the tangent's assembly into the sparse matrix;
 * and the ratio fibre / isotropic of each (goal ≤ 1.3; the median of the
 * per-rep ratios, with their quartiles beside it).  A third
 * column times the isotropic body point by point (its four-wide tet4 pass
 * off).  The three bodies are timed in turn in
 * each of 15 reps, in CPU time of the one working thread (load from other
 * processes falls on all three and its waits are not counted); a forces or
 * apply sample is the mean of four passes, the bodies taking turns.
 *
 * Arm row: examples/scenes/arm_flex.json meshed at about 50 K tets (its
 * BVH skeleton, two bound bones, bone capsules, activated biceps),
 * quasistatic, 30 frames (to 1 s, the elbow at ~60°): median and 90th
 * percentile of the wall time per frame and Newton iterations per frame,
 * with the default threads.  The source tree is found from this file's
 * path or given as the first argument.
 *
 * JSON on stdout; asserts nothing.
 */
#include "defo/element.h"
#include "defo/fibre.h"
#include "defo/force_model.h"
#include "defo/scene.h"
#include "defo/world.h"

#include "base/base.h"
#include "force/force_internal.h"
#include "bench.h"

#include <stdio.h>
#include <string.h>

enum { REPS = 15 };

typedef struct model {
    defo_element_rest *rest;
    defo_material *mat;
    defo_force_model *fm;
    double *dir, *act;
} model;

/* kind 0: isotropic, 1: isotropic point by point (no four-wide pass), 2: fibres */
static void model_make(const defo_mesh *mesh, int kind, model *md) {
    memset(md, 0, sizeof *md);
    defo_material_def d = defo_default_material();
    if (kind == 2) {
        d.fibre.passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL;
        d.fibre.exp_stress = 2e4;
        d.fibre.max_active_stress = 5e4;
    }
    const size_t np = defo_fibre_field_points(mesh);
    md->dir = malloc(3 * np * sizeof(double));
    md->act = malloc((size_t)mesh->num_elems * sizeof(double));
    for (size_t p = 0; p < np; p++)
        md->dir[3 * p] = 1, md->dir[3 * p + 1] = 0.3 * sin((double)p), md->dir[3 * p + 2] = 0.2;
    for (defo_index e = 0; e < mesh->num_elems; e++) md->act[e] = 0.5;
    if (defo_element_rest_create(mesh, &md->rest) ||
        (kind == 2 && defo_element_rest_set_fibres(md->rest, md->dir)) ||
        defo_material_create(&d, &md->mat) ||
        defo_force_model_create(mesh, md->rest, md->mat, NULL, &md->fm)) {
        fprintf(stderr, "bench_fibre: %s\n", defo_last_error());
        exit(1);
    }
    defo_force_model_set_activation(md->fm, md->act);
    if (kind == 1) md->fm->lanes = 0;
}

static void model_free(model *md) {
    defo_force_model_destroy(md->fm);
    defo_material_destroy(md->mat);
    defo_element_rest_destroy(md->rest);
    free(md->dir);
    free(md->act);
}

enum { PASSES = 4 };
static const char *const pass_name[PASSES] = {"forces_ns", "tangent_ns", "apply_ns", "assemble_ns"};

/* CPU time of this thread [s]: one thread works here, and time the machine
 * gives other processes is not counted (the medians of wall times on a
 * shared machine drifted by 2x between runs) */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double pass(model *md, int which, const double *x, const double *d, double *f) {
    const double t0 = cpu_now();
    if (which == 0) defo_force_model_evaluate(md->fm, x, 0, f, NULL);
    if (which == 1) defo_force_model_evaluate(md->fm, x, DEFO_EVAL_TANGENT, f, NULL);
    if (which == 2) defo_force_model_tangent_apply(md->fm, d, f);
    if (which == 3) defo_force_model_assemble(md->fm, 1, 0, NULL, 0);
    return cpu_now() - t0;
}

/* the short passes (a millisecond or two) summed over several runs per
 * sample, the three bodies taking turns run by run: a sample is not one
 * time slice of a loaded machine, and the load falls on the three alike */
static const int pass_runs[PASSES] = {4, 1, 4, 1};

static void kernel_row(int order, int cells) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = bd.cells[1] = bd.cells[2] = cells;
    bd.order = order;
    defo_mesh *mesh = NULL;
    if (defo_generate_box(&bd, &mesh)) return;
    const size_t m = 3 * (size_t)mesh->num_nodes;
    double *x = malloc(m * sizeof *x), *d = malloc(m * sizeof *d), *f = malloc(m * sizeof *f);
    unsigned long long s = 88172645463325252ULL;
    for (size_t j = 0; j < m; j++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const double r = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        x[j] = mesh->x[j] * (1 + 0.05 * (j % 3 == 0)) + 0.06 * r / cells;
        d[j] = r;
    }
    model md[3];
    for (int k = 0; k < 3; k++) model_make(mesh, k, &md[k]);
    /* interleaved: each rep times the three models back to back, so load
     * from other processes falls on all of them; the ratio is the median
     * of the per-rep ratios */
    const double pts = (double)defo_fibre_field_points(mesh);
    double t[3][PASSES][REPS], ratio[PASSES][REPS];
    for (int r = 0; r < REPS; r++)
        for (int p = 0; p < PASSES; p++) {
            double sum[3] = {0, 0, 0};
            for (int i = 0; i < pass_runs[p]; i++)
                for (int k = 0; k < 3; k++) sum[k] += pass(&md[k], p, x, d, f);
            for (int k = 0; k < 3; k++) t[k][p][r] = 1e9 * sum[k] / pass_runs[p] / pts;
            ratio[p][r] = t[2][p][r] / t[0][p][r];
        }
    static const char *const kind[3] = {"isotropic", "isotropic_point_by_point", "fibre"};
    printf("  {\"mesh\": \"box\", \"order\": %d, \"elements\": %ld, \"points\": %.0f, "
           "\"threads\": 1,\n",
           order, (long)mesh->num_elems, pts);
    for (int k = 0; k < 3; k++) {
        printf("   \"%s\": {", kind[k]);
        for (int p = 0; p < PASSES; p++)
            printf("%s\"%s\": %.1f", p ? ", " : "", pass_name[p], bench_median(t[k][p], REPS));
        printf("},\n");
    }
    printf("   \"fibre_over_isotropic\": {");
    for (int p = 0; p < PASSES; p++)
        printf("%s\"%.*s\": %.2f", p ? ", " : "", (int)(strlen(pass_name[p]) - 3), pass_name[p],
               bench_median(ratio[p], REPS));
    /* the per-rep ratios' quartiles (bench_median sorted them): the spread
     * the load of the machine gave the median */
    printf("},\n   \"fibre_over_isotropic_quartiles\": {");
    for (int p = 0; p < PASSES; p++)
        printf("%s\"%.*s\": [%.2f, %.2f]", p ? ", " : "", (int)(strlen(pass_name[p]) - 3),
               pass_name[p], ratio[p][REPS / 4], ratio[p][(3 * REPS) / 4]);
    printf("}},\n");
    fflush(stdout);
    for (int k = 0; k < 3; k++) model_free(&md[k]);
    free(x), free(d), free(f);
    defo_mesh_destroy(mesh);
}

static void arm_row(const char *src) {
    char dir[1100], path[1200];
    snprintf(dir, sizeof dir, "%.1000s/examples/scenes", src);
    snprintf(path, sizeof path, "%s/arm_flex.json", dir);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "bench_fibre: cannot open %s (give the source tree as the argument)\n",
                path);
        return;
    }
    static char file[1 << 16], text[1 << 16];
    const size_t n = fread(file, 1, sizeof file - 1, fp);
    fclose(fp);
    file[n] = 0;
    /* about 50 K tets: the example's cell size 0.016 (11 K) times (11.2/50)^(1/3) */
    char *cs = strstr(file, "\"cell_size\": 0.016");
    if (!cs) {
        fprintf(stderr, "bench_fibre: arm_flex.json has no cell_size 0.016\n");
        return;
    }
    const char *cell = "\"cell_size\": 0.0097";
    const size_t head = (size_t)(cs - file), cl = strlen(cell), tail = strlen(cs + 18);
    memcpy(text, file, head);
    memcpy(text + head, cell, cl);
    memcpy(text + head + cl, cs + 18, tail + 1);
    defo_scene *scene = NULL;
    defo_simulation *sim = NULL;
    if (defo_scene_parse(text, strlen(text), "arm_flex.json", dir, &scene, NULL) < 0 ||
        defo_simulation_create(scene, &sim) < 0) {
        fprintf(stderr, "bench_fibre: %s\n", defo_last_error());
        defo_scene_destroy(scene);
        return;
    }
    const defo_body_id id = defo_simulation_body(sim, 0);
    const defo_index tets = defo_body_mesh(defo_simulation_world(sim), id)->num_elems;
    enum { FRAMES = 30 };
    double ms[FRAMES], it[FRAMES];
    defo_index inverted = 0;
    for (int f = 0; f < FRAMES; f++) {
        const double t0 = bench_now();
        if (defo_simulation_step_frame(sim) < 0) {
            fprintf(stderr, "bench_fibre: frame %d: %s\n", f + 1, defo_last_error());
            break;
        }
        ms[f] = 1e3 * (bench_now() - t0);
        defo_step_stats st;
        defo_world_stats(defo_simulation_world(sim), &st);
        it[f] = st.newton_iterations;
        inverted = st.inverted;
    }
    const double med = bench_median(ms, FRAMES), p90 = ms[(int)(0.9 * FRAMES)];
    printf("  {\"scene\": \"arm_flex\", \"tets\": %ld, \"frames\": %d, \"threads\": %d, "
           "\"frame_ms_median\": %.1f, \"frame_ms_p90\": %.1f, \"newton_per_frame_median\": %.1f, "
           "\"inverted_at_end\": %ld}\n",
           (long)tets, FRAMES, defo_get_threads(), med, p90, bench_median(it, FRAMES),
           (long)inverted);
    defo_simulation_destroy(sim);
    defo_scene_destroy(scene);
}

int main(int argc, char **argv) {
    char src[1024];
    if (argc > 1) {
        snprintf(src, sizeof src, "%s", argv[1]);
    } else { /* this file is SRC/bench/bench_fibre.c */
        snprintf(src, sizeof src, "%s", __FILE__);
        char *b = strstr(src, "/bench/bench_fibre.c");
        if (b)
            *b = 0;
        else
            snprintf(src, sizeof src, ".");
    }
    printf("{\"benchmark\": \"fibre\", \"results\": [\n");
    defo_set_threads(1);
    kernel_row(1, 15); /* 20 250 tets */
    kernel_row(2, 8);  /* 3 072 tet10 */
    defo_set_threads(0);
    arm_row(src);
    printf("]}\n");
    return 0;
}
