/*
 * tests/test_threads.c — parallel regions open only for work worth a fork
 * (base/parallel.h "Work thresholds"), counted, not timed.
 *
 * With 2 threads and DEFO_THREADS_ALWAYS (every loop that meets its
 * threshold opens a region), a world steps small damped bodies with the
 * Newmark integrator (ITF04 §9: one force evaluation per step, two damping
 * solves of many CG iterations, each iteration one damping product).  The
 * debug counters of base/parallel.c say how many loops met their threshold
 * and how many regions opened:
 *   - a 48-tet body: no loop is worth a region (the counters stay at 0);
 *   - a 1 500-tet body (force pass ~300 µs, diagonal blocks ~100 µs,
 *     damping product ~32 µs) and a 192-element tet10 bar (~170, ~120 and
 *     ~37 µs): per step the force pass and the two solves' diagonal blocks
 *     open a region each, the products none — at most 3.5 regions per step
 *     (the frame's own evaluations included) against the CG iterations'
 *     dozens (checked > 8 per step, so one region per product fails).
 * A region per product, per vector loop or per gather of a small body
 * coming back fails here.  The same runs under the adaptive policy end
 * bitwise identical to one thread.
 */
#include "defo/defo.h"

#include "base/parallel.h"
#include "test.h"

typedef struct run {
    double regions_per_step, wanted_per_step, cg_per_step;
    double *x; /* final positions (caller frees) */
    size_t bytes;
} run;

/* A damped box of cx×cy×cz cubes falling freely through `frames` Newmark
 * frames of 1/60 s. */
static int step_box(int order, int cx, int cy, int cz, int frames, run *out) {
    memset(out, 0, sizeof *out);
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = cx, bd.cells[1] = cy, bd.cells[2] = cz;
    bd.size[0] = 1.0, bd.size[1] = 0.2, bd.size[2] = 0.2;
    bd.order = order;
    defo_mesh *mesh = NULL;
    if (defo_generate_box(&bd, &mesh)) return 0;
    defo_world *w = NULL;
    defo_world_create(NULL, &w);
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    defo_world_add_integrator(w, &id, NULL);
    defo_body_def b = defo_default_body_def();
    b.mesh = mesh;
    b.material.youngs_modulus = 1e5;
    b.material.damping_time = 0.01;
    defo_body_id body;
    int ok = defo_world_add_body(w, &b, &body) == DEFO_OK;
    long long steps = 0, cg = 0;
    const defo_parallel_counts c0 = defo_parallel_get_counts();
    for (int f = 0; ok && f < frames; f++) {
        ok = defo_world_step(w, 1.0 / 60) >= 0;
        defo_step_stats st;
        defo_world_stats(w, &st);
        steps += st.steps;
        cg += st.cg_iterations;
    }
    const defo_parallel_counts c1 = defo_parallel_get_counts();
    if (ok && steps > 0) {
        out->regions_per_step = (double)(c1.opened - c0.opened) / (double)steps;
        out->wanted_per_step = (double)(c1.wanted - c0.wanted) / (double)steps;
        out->cg_per_step = (double)cg / (double)steps;
        out->bytes = 3 * (size_t)defo_body_num_nodes(w, body) * sizeof(double);
        out->x = malloc(out->bytes);
        memcpy(out->x, defo_body_positions(w, body), out->bytes);
    }
    defo_world_destroy(w);
    defo_mesh_destroy(mesh);
    return ok && steps > 0;
}

static void test_regions_small_bodies(void) {
    const int saved = defo_get_threads();
    defo_set_threads(2);
    defo_set_thread_policy(DEFO_THREADS_ALWAYS);
    struct {
        const char *name;
        int order, cx, cy, cz;
        double max_regions;
    } cases[] = {{"48 tet4", 1, 4, 1, 2, 0.0},
                 {"1500 tet4", 1, 25, 5, 2, 3.5},
                 {"192 tet10", 2, 16, 2, 1, 3.5}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        run r;
        CHECK(step_box(cases[k].order, cases[k].cx, cases[k].cy, cases[k].cz, 2, &r));
        TEST_REPORT("%s: %.2f regions, %.2f loops over threshold, %.1f CG iterations per step",
                    cases[k].name, r.regions_per_step, r.wanted_per_step, r.cg_per_step);
        CHECK_MSG(r.cg_per_step > 8, "%s: %.1f CG iterations per step: the bound is no test",
                  cases[k].name, r.cg_per_step);
        CHECK_MSG(r.regions_per_step <= cases[k].max_regions,
                  "%s: %.2f regions per step (at most %.1f)", cases[k].name, r.regions_per_step,
                  cases[k].max_regions);
        if (cases[k].max_regions == 0.0) CHECK(r.wanted_per_step == 0.0);
        free(r.x);
    }
    defo_set_thread_policy(DEFO_THREADS_ADAPTIVE);
    defo_set_threads(saved);
}

static void test_adaptive_bitwise(void) {
    /* whatever the governor decides, the result is the one-thread result */
    const int saved = defo_get_threads();
    run one, two;
    defo_set_threads(1);
    CHECK(step_box(1, 25, 5, 2, 3, &one));
    defo_set_threads(2);
    defo_parallel_governor_reset();
    CHECK(step_box(1, 25, 5, 2, 3, &two));
    CHECK(one.x && two.x && one.bytes == two.bytes && !memcmp(one.x, two.x, one.bytes));
    free(one.x);
    free(two.x);
    defo_set_threads(saved);
}

int main(void) {
    RUN(test_regions_small_bodies);
    RUN(test_adaptive_bitwise);
    return test_summary();
}
