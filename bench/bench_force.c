/*
 * bench/bench_force.c — cost of the force layer's pass (defo_force_model_
 * evaluate: F + SVD + P̂ + forces + gather, ITF04 eq. 2), of one damping
 * product (ITF04 §6.2) and of one Newmark step (ITF04 §9, damping on, no
 * contact) of a world with a NEWMARK integrator, with 1 and 2 threads:
 *   tet4, invertible: box and torus meshes of about 10 K and 100 K tets
 *                     (400 K with "large");
 *   tet10, invertible and corotated: box meshes of about 2 K and 20 K
 *                     elements (4 quadrature points each).
 * Neo-Hookean with the C1 inversion extension (the corotated formulation
 * reads only its Lamé moduli), damping time 0.01 s, positions randomly
 * perturbed by up to ±2.5 mm (the unit box: 3 % of a 10 K mesh's cell).  Medians of repeated runs (with 2 threads after 0.4 s of untimed passes: the thread
 * governor's first trial); JSON on stdout;
 * asserts nothing.  Goal: ≤ 100 ns/element for the tet4 force pass on one
 * core.
 *
 * Keys per row: force_ns_per_elem, damping_ns_per_elem; substep_ms, one
 * world frame of one step of the world's own (defo_world_step(dt), dt the
 * step a 1/30 s frame is cut into) — the frame's own work included (forces recomputed at
 * its start, inverted elements counted at its end); step_in_frame_ms, the
 * same step inside a frame of 4; cg_per_substep, damping-solve CG iterations
 * per step.
 *
 * Usage: bench_force [large]
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/world.h"

#include "base/parallel.h"
#include "bench.h"

#include <stdio.h>
#include <string.h>

static defo_mesh *make_mesh(int torus, int order, double target_elems) {
    defo_mesh *m = NULL;
    if (torus) {
        /* torus volume 2π²Rr² ≈ 3.16 m³ with the defaults; BCC ≈ 6 tets/cell³ */
        defo_torus_def d = defo_default_torus_def();
        d.cell_size = cbrt(12.0 * 3.16 / target_elems);
        d.order = order;
        defo_generate_torus(&d, &m);
    } else {
        defo_box_def d = defo_default_box_def();
        int c = (int)lround(cbrt(target_elems / 6.0));
        d.cells[0] = d.cells[1] = d.cells[2] = c;
        d.order = order;
        defo_generate_box(&d, &m);
    }
    return m;
}

static int first_row = 1;

static void run(const char *name, int torus, int order, defo_formulation form, double target) {
    defo_mesh *mesh = make_mesh(torus, order, target);
    if (!mesh) return;
    defo_element_rest *rest = NULL;
    defo_material_def md = defo_default_material();
    md.damping_time = 0.01;
    defo_material *mat = NULL;
    defo_force_model *force = NULL;
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = form;
    if (defo_element_rest_create(mesh, &rest) || defo_material_create(&md, &mat) ||
        defo_force_model_create(mesh, rest, mat, &fd, &force)) {
        fprintf(stderr, "bench_force: %s\n", defo_last_error());
        return;
    }
    size_t m = 3 * (size_t)mesh->num_nodes;
    double *x = malloc(m * sizeof *x), *f = malloc(m * sizeof *f), *v = malloc(m * sizeof *v);
    unsigned long long s = 88172645463325252ULL;
    for (size_t j = 0; j < m; j++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        double r = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        x[j] = mesh->x[j] + 0.05 * r * 0.1;
        v[j] = r;
    }
    double ne = (double)mesh->num_elems;
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    for (int threads = 1; threads <= 2; threads++) {
        defo_set_threads(threads);
        enum { REPS = 7, STEPS = 5, FRAME = 4 };
        double tf[REPS], td[REPS], e;
        /* a row of 7 passes is about the thread governor's first trial of
         * these loops (4 to 24 calls of each): time it after 0.4 s of the
         * same passes, as in a run's steady state (governor reset: the
         * verdicts for the previous row's sizes are not this row's) */
        defo_parallel_governor_reset();
        for (double t0 = bench_now(); threads > 1 && bench_now() - t0 < 0.4;) {
            defo_force_model_evaluate(force, x, 0, f, &e);
            defo_force_model_damping_apply(force, v, f);
        }
        for (int r = 0; r < REPS; r++) {
            double t0 = bench_now();
            defo_force_model_evaluate(force, x, 0, f, &e);
            tf[r] = bench_now() - t0;
            t0 = bench_now();
            defo_force_model_damping_apply(force, v, f);
            td[r] = bench_now() - t0;
        }
        /* Newmark steps through the world (damping, gravity, no contact) */
        defo_world *w = NULL;
        defo_world_create(NULL, &w);
        defo_world_add_integrator(w, &id, NULL);
        defo_body_def bd = defo_default_body_def();
        bd.mesh = mesh;
        bd.material = md;
        bd.force = fd;
        defo_body_id body;
        if (defo_world_add_body(w, &bd, &body)) {
            fprintf(stderr, "bench_force: %s\n", defo_last_error());
            return;
        }
        /* one step of the world's own (a 1/30 s frame's share) */
        const double dt = (1.0 / 30) / defo_world_steps_per_frame(w, 0, 1.0 / 30);
        double ts[STEPS], tk[STEPS];
        defo_step_stats st;
        int cg = 0, steps = 0;
        for (int r = 0; r < STEPS; r++) {
            double t0 = bench_now();
            defo_world_step(w, dt);
            ts[r] = bench_now() - t0;
            defo_world_stats(w, &st);
            cg += st.cg_iterations;
            steps += st.steps;
        }
        for (int r = 0; r < STEPS; r++) {
            double t0 = bench_now();
            defo_world_step(w, FRAME * dt);
            tk[r] = (bench_now() - t0) / FRAME;
        }
        defo_world_destroy(w);
        printf("%s{\"mesh\": \"%s\", \"order\": %d, \"formulation\": \"%s\", \"tets\": %ld, "
               "\"threads\": %d, \"force_ns_per_elem\": %.1f, \"damping_ns_per_elem\": %.1f, "
               "\"substep_ms\": %.3f, \"step_in_frame_ms\": %.3f, \"cg_per_substep\": %.1f}",
               first_row ? "" : ",\n  ", name, order, defo_formulation_name(form),
               (long)mesh->num_elems, threads, 1e9 * bench_median(tf, REPS) / ne,
               1e9 * bench_median(td, REPS) / ne, 1e3 * bench_median(ts, STEPS),
               1e3 * bench_median(tk, STEPS), steps ? (double)cg / steps : 0.0);
        first_row = 0;
        fflush(stdout);
    }
    defo_set_threads(0);
    free(x);
    free(f);
    free(v);
    defo_force_model_destroy(force);
    defo_material_destroy(mat);
    defo_element_rest_destroy(rest);
    defo_mesh_destroy(mesh);
}

int main(int argc, char **argv) {
    int large = argc > 1 && strcmp(argv[1], "large") == 0;
    const defo_formulation inv = DEFO_FORMULATION_INVERTIBLE, cor = DEFO_FORMULATION_COROTATED;
    printf("{\"benchmark\": \"force\", \"results\": [\n  ");
    run("box", 0, 1, inv, 1e4);
    run("torus", 1, 1, inv, 1e4);
    run("box", 0, 1, inv, 1e5);
    run("torus", 1, 1, inv, 1e5);
    if (large) {
        run("box", 0, 1, inv, 4e5);
        run("torus", 1, 1, inv, 4e5);
    }
    run("box", 0, 2, inv, 2e3);
    run("box", 0, 2, cor, 2e3);
    run("box", 0, 2, inv, 2e4);
    run("box", 0, 2, cor, 2e4);
    printf("\n]}\n");
    return 0;
}
