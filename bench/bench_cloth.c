/*
 * bench/bench_cloth.c — a large cloth (tri3 shell, ITF04 §8) on each
 * integrator: a square sheet of 2 c² triangles (c = 224: 100 352
 * triangles, 50 625 nodes), 1.2 m wide, corotated membrane with hinge
 * bending (cloth-like: E t = 250 N/m, 0.15 kg/m²), falls from 3 mm above
 * a sphere collider (r = 0.3 m), so the first frame of 1/30 s already
 * drapes it over the sphere.  Per integrator the frames after `warm`
 * untimed ones: ms per frame (median), integrator steps, Newton and CG
 * iterations, collider contacts (node–collider responses) per frame, and
 * the solves that stopped short of their tolerance (all frames).  Self contact is off in the
 * integrator rows (its cost is the row "newmark_self").  The equilibrium
 * rows (quasistatic, static) hang the same sheet from its edge y = −0.6 m
 * with no sphere (a sheet on a frictional sphere has no unique rest state):
 * the first frame solves from the flat sheet to hanging, the next from
 * there.
 * JSON on stdout; asserts nothing.
 *
 * Usage: bench_cloth [cells [frames [warm [rows]]]]   (defaults 224 1 0, all
 * rows; rows a comma-separated list of row names, e.g. "backward_euler,bdf2")
 */
#include "defo/collision.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/mesh.h"
#include "defo/world.h"

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct row {
    const char *name;
    defo_integrator_kind kind;
    int self_contact;
    int hang; /* the equilibrium rows: the sheet held along one edge, no sphere */
} row;

static int run_row(const row *r, int cells, int frames, int warm, int first) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    if (defo_world_create(&wd, &w)) return 1;
    defo_integrator_def idf = defo_default_integrator_def(r->kind);
    idf.rayleigh_mass = 0.5; /* air */
    if (r->kind != DEFO_INTEGRATOR_NEWMARK) idf.time_step = 1.0 / 120;
    defo_rectangle_def rd = defo_default_rectangle_def();
    rd.cells[0] = rd.cells[1] = cells;
    rd.size[0] = rd.size[1] = 1.2;
    rd.center[2] = 0.603;
    defo_mesh *m = NULL;
    defo_body_def bd = defo_default_body_def();
    bd.material.model = DEFO_MODEL_COROTATED;
    bd.material.youngs_modulus = 5e5;
    bd.material.poisson = 0.3;
    bd.material.density = 300;
    bd.material.thickness = 5e-4;
    bd.material.damping_time = 0.002;
    bd.self_contact = r->self_contact;
    bd.name = "cloth";
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_SPHERE;
    sh.center[2] = 0.3;
    sh.radius = 0.3;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    cd.friction = 0.4;
    defo_collider *ball = NULL;
    defo_body_id id;
    defo_status s = defo_world_add_integrator(w, &idf, NULL);
    if (!s) s = defo_generate_rectangle(&rd, &m);
    if (!s) bd.mesh = m;
    if (!s) s = defo_world_add_body(w, &bd, &id);
    if (!s && r->hang) { /* the edge y = −0.6 m */
        const double lo[3] = {-1, -0.61, -1}, hi[3] = {1, -0.59, 2};
        const defo_region edge = defo_region_box(lo, hi);
        s = defo_body_prescribe(w, id, &edge, NULL, NULL);
    }
    if (!s && !r->hang) s = defo_collider_create(&cd, &ball);
    if (!s && !r->hang) s = defo_world_add_collider(w, ball);
    double *ms = calloc((size_t)frames + 1, sizeof *ms);
    long steps = 0, newton = 0, cg = 0, contacts = 0, collisions = 0, unconverged = 0;
    for (int f = 0; !s && f < warm + frames; f++) {
        const double t0 = bench_now();
        s = defo_world_step(w, 1.0 / 30);
        if (s > 0) s = DEFO_OK; /* a warning (an unconverged solve) is counted below */
        const double t1 = bench_now();
        if (f < warm) continue;
        defo_step_stats st;
        defo_world_stats(w, &st);
        ms[f - warm] = 1e3 * (t1 - t0);
        steps += st.steps;
        newton += st.newton_iterations;
        cg += st.cg_iterations;
        contacts += (long)st.contacts;
        collisions += (long)st.collisions;
        unconverged += st.not_converged;
    }
    if (s < 0) {
        fprintf(stderr, "bench_cloth %s: %s\n", r->name, defo_last_error());
    } else {
        const double med = bench_median(ms, frames);
        printf("%s  {\"row\": \"%s\", \"triangles\": %ld, \"nodes\": %ld, \"frames\": %d, "
               "\"ms_per_frame\": %.1f, \"frames_per_s\": %.3f, \"steps_per_frame\": %.1f, "
               "\"newton_per_frame\": %.1f, \"cg_per_frame\": %.1f, \"collisions_per_frame\": "
               "%.0f, \"self_contacts_per_frame\": %.0f, \"unconverged_solves\": %ld}",
               first ? "" : ",\n", r->name, (long)m->num_elems, (long)m->num_nodes, frames, med,
               1e3 / med, (double)steps / frames, (double)newton / frames, (double)cg / frames,
               (double)collisions / frames, (double)contacts / frames, unconverged);
        fflush(stdout);
    }
    free(ms);
    defo_world_destroy(w);
    defo_collider_destroy(ball);
    defo_mesh_destroy(m);
    return s < 0;
}

/* 1 when name is one of the comma-separated names in list. */
static int listed(const char *list, const char *name) {
    const size_t len = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == len && !strncmp(p, name, len)) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const int cells = argc > 1 ? atoi(argv[1]) : 224;
    const int frames = argc > 2 ? atoi(argv[2]) : 1;
    const int warm = argc > 3 ? atoi(argv[3]) : 0;
    if (cells < 2 || frames < 1 || warm < 0) {
        fprintf(stderr, "usage: bench_cloth [cells >= 2 [frames >= 1 [warm >= 0 [rows]]]]\n");
        return 2;
    }
    const row rows[] = {{"newmark", DEFO_INTEGRATOR_NEWMARK, 0, 0},
                        {"backward_euler", DEFO_INTEGRATOR_BACKWARD_EULER, 0, 0},
                        {"bdf2", DEFO_INTEGRATOR_BDF2, 0, 0},
                        {"newmark_self", DEFO_INTEGRATOR_NEWMARK, 1, 0},
                        {"quasistatic", DEFO_INTEGRATOR_QUASISTATIC, 0, 1},
                        {"static", DEFO_INTEGRATOR_STATIC, 0, 1}};
    printf("{\"benchmark\": \"cloth\", \"cells\": %d, \"rows\": [\n", cells);
    const char *only = argc > 4 ? argv[4] : NULL;
    int bad = 0, first = 1;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (only && !listed(only, rows[i].name)) continue;
        bad |= run_row(&rows[i], cells, frames, warm, first);
        first = 0;
    }
    printf("\n]}\n");
    return bad;
}
