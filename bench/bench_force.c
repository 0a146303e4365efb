/*
 * bench/bench_force.c — cost of the invertible FEM force pass (F + SVD + P̂ +
 * G + gather, ITF04 eq. 2), of one damping product (ITF04 §6.2) and of one
 * Newmark substep (ITF04 §9, damping on, no contact), on box and torus tet
 * meshes of about 10 K and 100 K tets (400 K with "large"), with 1 and 2
 * threads.  Neo-Hookean with the C1 inversion extension, positions randomly
 * perturbed by 5 % of the cell size.  Medians of repeated runs; JSON on
 * stdout; asserts nothing.  Goal: ≤ 100 ns/element for the force pass on
 * one core.
 *
 * Usage: bench_force [large]
 */
#include "defo/force.h"
#include "defo/world.h"

#include "bench.h"

#include <stdio.h>
#include <string.h>

static defo_mesh *make_mesh(int torus, double target_tets) {
    defo_mesh *m = NULL;
    if (torus) {
        /* torus volume 2π²Rr² ≈ 3.16 m³ with the defaults; BCC ≈ 6 tets/cell³ */
        defo_torus_def d = defo_default_torus_def();
        d.cell_size = cbrt(12.0 * 3.16 / target_tets);
        defo_generate_torus(&d, &m);
    } else {
        defo_box_def d = defo_default_box_def();
        int c = (int)lround(cbrt(target_tets / 6.0));
        d.cells[0] = d.cells[1] = d.cells[2] = c;
        defo_generate_box(&d, &m);
    }
    return m;
}

static void run(const char *name, int torus, double target, int first) {
    defo_mesh *mesh = make_mesh(torus, target);
    if (!mesh) return;
    defo_rest rest;
    defo_material_def md = defo_default_material();
    md.damping_time = 0.01;
    defo_material *mat = NULL;
    defo_force *force = NULL;
    if (defo_rest_compute(mesh, &rest) || defo_material_create(&md, &mat) ||
        defo_force_create(mesh, &rest, mat, &force)) {
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
    for (int threads = 1; threads <= 2; threads++) {
        defo_set_threads(threads);
        enum { REPS = 7 };
        double tf[REPS], td[REPS], e;
        for (int r = 0; r < REPS; r++) {
            double t0 = bench_now();
            defo_force_elastic(force, x, f, &e);
            tf[r] = bench_now() - t0;
            t0 = bench_now();
            defo_force_damping_apply(force, v, f);
            td[r] = bench_now() - t0;
        }
        /* Newmark substeps through the world (damping, gravity, no contact) */
        defo_world_def wd = defo_default_world_def();
        defo_world *w = NULL;
        defo_world_create(&wd, &w);
        defo_body_def bd = defo_default_body_def();
        bd.mesh = mesh;
        bd.material = md;
        defo_body_id id;
        defo_world_add_body(w, &bd, &id);
        double dt = defo_world_stable_dt(w), ts[5];
        defo_step_stats st;
        int cg = 0;
        for (int r = 0; r < 5; r++) {
            double t0 = bench_now();
            defo_world_substep(w, dt);
            ts[r] = bench_now() - t0;
            defo_world_stats(w, &st);
            cg += st.cg_iterations;
        }
        defo_world_destroy(w);
        printf("%s{\"mesh\": \"%s\", \"tets\": %ld, \"threads\": %d, \"force_ns_per_elem\": %.1f, "
               "\"damping_ns_per_elem\": %.1f, \"substep_ms\": %.3f, \"cg_per_substep\": %.1f}",
               first && threads == 1 ? "" : ",\n  ", name, (long)mesh->num_elems, threads,
               1e9 * bench_median(tf, REPS) / ne, 1e9 * bench_median(td, REPS) / ne,
               1e3 * bench_median(ts, 5), cg / 5.0);
        fflush(stdout);
    }
    defo_set_threads(0);
    free(x);
    free(f);
    free(v);
    defo_force_destroy(force);
    defo_material_destroy(mat);
    defo_rest_free(&rest);
    defo_mesh_destroy(mesh);
}

int main(int argc, char **argv) {
    int large = argc > 1 && strcmp(argv[1], "large") == 0;
    printf("{\"benchmark\": \"force\", \"results\": [\n  ");
    run("box", 0, 1e4, 1);
    run("torus", 1, 1e4, 0);
    run("box", 0, 1e5, 0);
    run("torus", 1, 1e5, 0);
    if (large) {
        run("box", 0, 4e5, 0);
        run("torus", 1, 4e5, 0);
    }
    printf("\n]}\n");
    return 0;
}
