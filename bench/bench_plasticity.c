/*
 * bench/bench_plasticity.c — cost of plasticity (defo/plasticity.h): one
 * update per quadrature point, and one Newmark world step (damping 0.01 s,
 * gravity, no contact) of a plastic body against the same elastic body, for
 * each model, with 1 and 2 threads:
 *   tet4 invertible neo-Hookean, a box of about 100 K tets (100 K points);
 *   tet10 invertible, a box of about 20 K elements (80 K points).
 * Positions randomly perturbed by up to ±1 mm (a few % strain on the 100 K
 * mesh's cells).  Keys per row:
 *   update_elastic_ns_per_point — an update where no point can flow (the
 *     bound of plasticity.c clears them: the usual step of a body at rest
 *     or moving elastically);
 *   update_flow_ns_per_point — an update where every point runs its return
 *     map and flows (yield 0);
 *   flow_update_pct — that flowing update against one elastic step;
 *   elastic_step_ms — one integrator step of the body without plasticity
 *     (a world step of the elastic body's stable length, a 1/30 s frame's
 *     share); step_ms — with plasticity whose thresholds lie above this
 *     state's strains (every update, no flow: the cost of carrying
 *     plasticity), overhead_pct its excess; flow_step_ms and
 *     flow_overhead_pct — every point flowing every step (yield 0: the
 *     worst case), with the quartiles of the excess;
 *   steps — the integrator steps of one such world step: elastic, carrying,
 *     flowing.  Flow that shortens an element shortens the stable step, so
 *     a flowing body may take 2 where the elastic one takes 1; the times
 *     above are per integrator step, the cost of each step;
 *   cg_per_step — the damping solve's CG iterations per integrator step
 *     (elastic, carrying, flowing): a step's cost follows them.
 * The three bodies start each row from the same state and step in turn,
 * and each excess is the median of the step-by-step ratios, so a change in the machine's load falls on both
 * sides of a ratio.  Times are CPU time with one thread (what other
 * processes take is not counted) and wall time with two ("clock"); medians
 * (after 0.4 s of untimed passes with 2 threads: the thread governor's
 * first trial); JSON on stdout; asserts nothing.
 * Goal: a step ≤ 15 % over the elastic one (overhead_pct and
 * flow_overhead_pct).
 *
 * Usage: bench_plasticity [quick]   (quick: the tet4 row with one thread)
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/plasticity.h"
#include "defo/world.h"

#include "base/parallel.h"
#include "bench.h"

#include <stdio.h>
#include <string.h>

static int first_row = 1;

/* flow 0: thresholds above the strains of this state (every point clears
 * the elastic bound); 1: every point flows (yield 0) */
static defo_plasticity_def model_def(int k, int flow_all) {
    defo_plasticity_def d = defo_default_plasticity_def();
    if (k == 0) d.yield = flow_all ? 0 : 0.3, d.creep = 100, d.max = 1;
    if (k == 1) d = defo_default_von_mises_def(flow_all ? 1 : 1e5, 1e4);
    if (k == 2) d = defo_default_multiplicative_def(flow_all ? 0 : 0.3);
    return d;
}

/* A world of one Newmark body (no plasticity when pd is NULL) at x0. */
static defo_world *make_world(const defo_mesh *mesh, const defo_material_def *md,
                              const defo_plasticity_def *pd, const double *x0) {
    defo_world *w = NULL;
    defo_world_create(NULL, &w);
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    defo_world_add_integrator(w, &id, NULL);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = mesh;
    bd.material = *md;
    bd.plasticity = pd;
    defo_body_id body;
    if (defo_world_add_body(w, &bd, &body) || defo_body_set_state(w, body, x0, NULL)) {
        fprintf(stderr, "bench_plasticity: %s\n", defo_last_error());
        defo_world_destroy(w);
        return NULL;
    }
    return w;
}

/* One world step of length dt: ms per integrator step (CPU time with one
 * thread, wall time with more), the integrator steps it took and their CG
 * iterations.  A plastic part that shortened an element shortens the
 * stable step: more steps, each counted on its own. */
static double clock_now(int threads) {
    return threads == 1 ? bench_cpu_now() : bench_now();
}

static double step_ms(defo_world *w, double dt, int threads, int *steps, int *cg) {
    const double t0 = clock_now(threads);
    defo_world_step(w, dt);
    const double t = clock_now(threads) - t0;
    defo_step_stats st;
    defo_world_stats(w, &st);
    *steps = st.steps;
    *cg = st.cg_iterations;
    return 1e3 * t / (st.steps > 0 ? st.steps : 1);
}

static void run(const char *name, int order, double target, int max_threads) {
    defo_box_def bx = defo_default_box_def();
    const int c = (int)lround(cbrt(target / 6.0));
    bx.cells[0] = bx.cells[1] = bx.cells[2] = c;
    bx.order = order;
    defo_mesh *mesh = NULL;
    defo_element_rest *rest = NULL;
    defo_material *mat = NULL;
    defo_force_model *force = NULL;
    defo_material_def md = defo_default_material();
    md.damping_time = 0.01;
    if (defo_generate_box(&bx, &mesh) || defo_element_rest_create(mesh, &rest) ||
        defo_material_create(&md, &mat) || defo_force_model_create(mesh, rest, mat, NULL, &force)) {
        fprintf(stderr, "bench_plasticity: %s\n", defo_last_error());
        return;
    }
    const size_t m = 3 * (size_t)mesh->num_nodes;
    double *x = malloc(m * sizeof *x);
    unsigned long long s = 88172645463325252ULL;
    for (size_t j = 0; j < m; j++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        const double r = (double)(s >> 11) / 9007199254740992.0 - 0.5;
        x[j] = mesh->x[j] + 0.002 * r;
    }
    const int points = defo_force_model_points(force);
    const double np = (double)mesh->num_elems * points;
    for (int threads = 1; threads <= max_threads; threads++) {
        defo_set_threads(threads);
        defo_world *w0 = make_world(mesh, &md, NULL, x);
        if (!w0) break;
        const double dt = (1.0 / 30) / defo_world_steps_per_frame(w0, 0, 1.0 / 30);
        defo_world_destroy(w0);
        for (int k = 0; k < DEFO_PLASTICITY_MODELS; k++) {
            enum { REPS = 7 };
            double te[REPS], tf[REPS];
            defo_parallel_governor_reset();
            for (int flow = 0; flow < 2; flow++) {
                defo_plasticity_def pd = model_def(k, flow);
                defo_plasticity *p = NULL;
                defo_plasticity_create(&pd, mesh->num_elems, points, &p);
                defo_plasticity_bind(p, force);
                for (double t0 = bench_now(); threads > 1 && bench_now() - t0 < 0.4;)
                    defo_plasticity_update(p, force, x, 0.001, NULL);
                for (int r = 0; r < REPS; r++) {
                    double t0 = clock_now(threads);
                    defo_plasticity_update(p, force, x, 0.001, NULL);
                    (flow ? tf : te)[r] = clock_now(threads) - t0;
                }
                defo_force_model_set_plastic(force, NULL);
                defo_plasticity_destroy(p);
            }
            /* the elastic, carrying and flowing bodies step in turn, so a
             * change in the machine's load falls on all three alike; the
             * ratios are taken rep by rep */
            /* all three from the same state: a fresh elastic body per row (one
             * stepped on through the rows would compare a later state,
             * with other CG counts, against the plastic ones') */
            const defo_plasticity_def pq = model_def(k, 0), pf = model_def(k, 1);
            defo_world *we = make_world(mesh, &md, NULL, x);
            defo_world *wc = make_world(mesh, &md, &pq, x), *wf = make_world(mesh, &md, &pf, x);
            if (!we || !wc || !wf) {
                defo_world_destroy(we);
                defo_world_destroy(wc);
                defo_world_destroy(wf);
                break;
            }
            enum { STEPS = 7 };
            double me[STEPS], mc[STEPS], mf[STEPS], rc[STEPS], rf[STEPS];
            int n[3] = {0, 0, 0}, cg[3] = {0, 0, 0}, ns, ncg;
            step_ms(we, dt, threads, &ns, &ncg); /* the first step flows most */
            step_ms(wc, dt, threads, &ns, &ncg);
            step_ms(wf, dt, threads, &ns, &ncg);
            for (int r = 0; r < STEPS; r++) {
                me[r] = step_ms(we, dt, threads, &ns, &ncg);
                n[0] += ns, cg[0] += ncg;
                mc[r] = step_ms(wc, dt, threads, &ns, &ncg);
                n[1] += ns, cg[1] += ncg;
                mf[r] = step_ms(wf, dt, threads, &ns, &ncg);
                n[2] += ns, cg[2] += ncg;
                rc[r] = mc[r] / me[r], rf[r] = mf[r] / me[r];
            }
            defo_world_destroy(we);
            defo_world_destroy(wc);
            defo_world_destroy(wf);
            const double rf_med = bench_median(rf, STEPS); /* sorts rf: then its quartiles */
            printf("%s{\"mesh\": \"%s\", \"order\": %d, \"tets\": %ld, \"points\": %.0f, "
                   "\"model\": \"%s\", \"threads\": %d, \"clock\": \"%s\", "
                   "\"update_elastic_ns_per_point\": %.1f, \"update_flow_ns_per_point\": %.1f, "
                   "\"flow_update_pct\": %.1f, \"elastic_step_ms\": %.3f, \"step_ms\": %.3f, "
                   "\"overhead_pct\": %.1f, \"flow_step_ms\": %.3f, \"flow_overhead_pct\": %.1f, "
                   "\"flow_overhead_quartiles_pct\": [%.1f, %.1f], \"steps\": [%d, %d, %d], "
                   "\"cg_per_step\": [%.1f, %.1f, %.1f]}",
                   first_row ? "" : ",\n  ", name, order, (long)mesh->num_elems, np,
                   defo_plasticity_model_name((defo_plasticity_model)k), threads,
                   threads == 1 ? "cpu" : "wall", 1e9 * bench_median(te, REPS) / np,
                   1e9 * bench_median(tf, REPS) / np,
                   100 * bench_median(tf, REPS) / (1e-3 * bench_median(me, STEPS)),
                   bench_median(me, STEPS), bench_median(mc, STEPS),
                   100 * (bench_median(rc, STEPS) - 1), bench_median(mf, STEPS), 100 * (rf_med - 1),
                   100 * (rf[STEPS / 4] - 1), 100 * (rf[3 * STEPS / 4] - 1), n[0] / STEPS,
                   n[1] / STEPS, n[2] / STEPS, (double)cg[0] / n[0], (double)cg[1] / n[1],
                   (double)cg[2] / n[2]);
            first_row = 0;
            fflush(stdout);
        }
    }
    defo_set_threads(0);
    free(x);
    defo_force_model_destroy(force);
    defo_material_destroy(mat);
    defo_element_rest_destroy(rest);
    defo_mesh_destroy(mesh);
}

int main(int argc, char **argv) {
    const int quick = argc > 1 && !strcmp(argv[1], "quick"); /* the tet4 row, one thread */
    printf("{\"benchmark\": \"plasticity\", \"results\": [\n  ");
    run("box", 1, 1e5, quick ? 1 : 2);
    if (!quick) run("box", 2, 2e4, 2);
    printf("\n]}\n");
    return 0;
}
