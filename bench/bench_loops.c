/*
 * bench/bench_loops.c — one-thread cost of each loop kind a step runs, the
 * numbers the parallel work thresholds are set from (base/parallel.h,
 * force/force_internal.h): per element for the force model's passes (force
 * evaluation with and without the tangent data, tangent and damping
 * products, diagonal blocks, matrix assembly per element), tet4 and tet10,
 * invertible and corotated; per node for the 3-wide gather and a block
 * sparse product (tet4); per entry for an axpy and a dot product.  Each figure is the median of 15
 * runs on a unit box mesh of about 6 K tet4 / 750 tet10 elements
 * (positions perturbed by ±2.5 mm, damping time 0.01 s), where everything
 * stays in cache as it does for the bodies these thresholds decide about.
 * JSON on stdout; asserts nothing.  With a work budget W (ns) a loop is
 * worth a region above W / cost iterations.
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/solver.h"
#include "defo/sparse.h"

#include "base/parallel.h"
#include "bench.h"

#include <stdio.h>
#include <string.h>

enum { REPS = 15 };

typedef struct pass {
    defo_force_model *fm;
    double *x, *v, *y, *blocks;
    int kind;
} pass;

static void run_pass(pass *p) {
    switch (p->kind) {
    case 0:
        defo_force_model_evaluate(p->fm, p->x, 0, p->y, NULL);
        break;
    case 1:
        defo_force_model_evaluate(p->fm, p->x, DEFO_EVAL_TANGENT, p->y, NULL);
        break;
    case 2:
        defo_force_model_tangent_apply(p->fm, p->v, p->y);
        break;
    case 3:
        defo_force_model_damping_apply(p->fm, p->v, p->y);
        break;
    case 4:
        defo_force_model_tangent_diagonal(p->fm, p->blocks);
        break;
    case 5:
        defo_force_model_assemble(p->fm, 1.0, 0.0, NULL, 0.0);
        break;
    }
}

static const char *const pass_names[] = {"force",         "force_tangent",    "tangent_apply",
                                         "damping_apply", "tangent_diagonal", "assemble"};

static double time_pass(pass *p) {
    double t[REPS];
    run_pass(p); /* warm (the first assemble builds the pattern) */
    for (int r = 0; r < REPS; r++) {
        double t0 = bench_now();
        run_pass(p);
        t[r] = bench_now() - t0;
    }
    return bench_median(t, REPS);
}

static int first_row = 1;

static void row(const char *what, int order, const char *form, const char *unit, double ns) {
    printf("%s{\"loop\": \"%s\", \"order\": %d, \"formulation\": \"%s\", \"ns_per_%s\": %.1f}",
           first_row ? "" : ",\n  ", what, order, form, unit, ns);
    first_row = 0;
}

static void force_rows(int order, defo_formulation form) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = d.cells[1] = d.cells[2] = order == 1 ? 10 : 5;
    d.order = order;
    defo_mesh *mesh = NULL;
    defo_element_rest *rest = NULL;
    defo_material *mat = NULL;
    defo_force_model *fm = NULL;
    defo_material_def md = defo_default_material();
    md.damping_time = 0.01;
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = form;
    if (defo_generate_box(&d, &mesh) || defo_element_rest_create(mesh, &rest) ||
        defo_material_create(&md, &mat) || defo_force_model_create(mesh, rest, mat, &fd, &fm)) {
        fprintf(stderr, "bench_loops: %s\n", defo_last_error());
        return;
    }
    const size_t n = (size_t)mesh->num_nodes, m = 3 * n;
    pass p = {fm,
              malloc(m * sizeof(double)),
              malloc(m * sizeof(double)),
              malloc(m * sizeof(double)),
              malloc(9 * n * sizeof(double)),
              0};
    unsigned long long s = 88172645463325252ULL;
    for (size_t j = 0; j < m; j++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double r = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        p.x[j] = mesh->x[j] + 0.005 * r;
        p.v[j] = r;
    }
    defo_force_model_evaluate(fm, p.x, DEFO_EVAL_TANGENT, p.y, NULL);
    const double ne = (double)mesh->num_elems;
    const char *fname = defo_formulation_name(form);
    for (int k = 0; k < 6; k++) {
        p.kind = k;
        if (k == 1 && form == DEFO_FORMULATION_COROTATED) continue; /* same as force */
        row(pass_names[k], order, fname, "element", 1e9 * time_pass(&p) / ne);
        if (k == 1) defo_force_model_evaluate(fm, p.x, DEFO_EVAL_TANGENT, p.y, NULL);
    }
    if (order == 1 && form == DEFO_FORMULATION_INVERTIBLE) {
        /* the gathers and vector loops, per node / entry */
        defo_incidence inc;
        defo_incidence_build(&inc, mesh->elems, mesh->num_elems, mesh->nodes_per_elem,
                             mesh->num_nodes);
        double *slot = calloc(9 * (size_t)mesh->num_elems * 4, sizeof(double));
        double t[REPS];
        for (int r = 0; r < REPS; r++) {
            double t0 = bench_now();
            defo_gather3(&inc, slot, p.y);
            t[r] = bench_now() - t0;
        }
        row("gather3", order, fname, "node", 1e9 * bench_median(t, REPS) / (double)n);
        for (int r = 0; r < REPS; r++) {
            double t0 = bench_now();
            for (size_t j = 0; j < m; j++) p.y[j] += 0.5 * p.v[j];
            t[r] = bench_now() - t0;
        }
        row("axpy", order, fname, "entry", 1e9 * bench_median(t, REPS) / (double)m);
        volatile double sink = 0;
        for (int r = 0; r < REPS; r++) {
            double t0 = bench_now();
            sink += defo_dot(p.y, p.v, m);
            t[r] = bench_now() - t0;
        }
        row("dot", order, fname, "entry", 1e9 * bench_median(t, REPS) / (double)m);
        defo_bcsr *A = defo_force_model_assemble(fm, 1.0, 0.0, NULL, 0.0);
        for (int r = 0; r < REPS; r++) {
            double t0 = bench_now();
            defo_bcsr_multiply(A, p.v, p.y);
            t[r] = bench_now() - t0;
        }
        row("bcsr_multiply", order, fname, "node", 1e9 * bench_median(t, REPS) / (double)n);
        (void)sink;
        free(slot);
        defo_incidence_free(&inc);
    }
    free(p.x);
    free(p.v);
    free(p.y);
    free(p.blocks);
    defo_force_model_destroy(fm);
    defo_material_destroy(mat);
    defo_element_rest_destroy(rest);
    defo_mesh_destroy(mesh);
}

int main(void) {
    defo_set_threads(1);
    printf("{\"benchmark\": \"loops\", \"threads\": 1, \"results\": [\n  ");
    for (int order = 1; order <= 2; order++) {
        force_rows(order, DEFO_FORMULATION_INVERTIBLE);
        force_rows(order, DEFO_FORMULATION_COROTATED);
    }
    printf("\n]}\n");
    return 0;
}
