/*
 * tests/test_scene_shell.c — shells and cloth (tri3, ITF04 §8) in scene
 * files: the generators rectangle, sphere_shell and torus_shell, a triangle
 * mesh file given as a body's "mesh", the material's thickness, and every
 * broken input refused with its JSON path.
 *
 * References used: the generated node and triangle counts of each generator
 * ((n+1)² and 2n² for a rectangle of n × n cells, 10k² + 2 and 20k² for a
 * sphere of k subdivisions); the mass of a rectangle, ρ t × area (the
 * masses per area of a shell); a checkpoint resumed bit for bit.
 */
#include "defo/mesh.h"
#include "defo/scene.h"
#include "defo/world.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static defo_status parse(const char *text, defo_scene **out, defo_scene_errors *errs) {
    return defo_scene_parse(text, strlen(text), "scene.json", NULL, out, errs);
}

static int has_sub(const defo_scene_errors *e, const char *sub) {
    for (int i = 0; i < e->count; i++)
        if (strstr(e->lines[i], sub)) return 1;
    return 0;
}

static const char *const good =
    "{\"duration\": {\"frames\": 2, \"fps\": 30}, \"outputs\": {\"png\": false},\n"
    " \"bodies\": [\n"
    "  {\"name\": \"sheet\", \"generator\": {\"type\": \"rectangle\", \"size\": [0.4, 0.2],\n"
    "   \"cells\": [8, 4]}, \"material\": {\"youngs\": 1e6, \"density\": 200, \"thickness\": "
    "0.001},\n"
    "   \"fixed\": [{\"box\": {\"min\": [-1, -1, -1], \"max\": [-0.19, 1, 1]}}]},\n"
    "  {\"name\": \"ball\", \"generator\": {\"type\": \"sphere_shell\", \"radius\": 0.1,\n"
    "   \"subdivisions\": 3, \"center\": [0, 0, 0.5]}, \"material\": {\"thickness\": 0.002}},\n"
    "  {\"name\": \"ring\", \"generator\": {\"type\": \"torus_shell\", \"major_radius\": 0.2,\n"
    "   \"minor_radius\": 0.05, \"sweep\": 180, \"cells\": [12, 6], \"center\": [0, 0, 1]},\n"
    "   \"material\": {\"thickness\": 0.002}}\n"
    " ]}";

static void test_shell_scene(void) {
    defo_scene *s = NULL;
    defo_scene_errors e;
    defo_status st = parse(good, &s, &e);
    for (int i = 0; st && i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
    CHECK_OK(st);
    if (st) {
        defo_scene_errors_free(&e);
        return;
    }
    defo_simulation *sim = NULL;
    CHECK_OK(defo_simulation_create(s, &sim));
    if (!sim) {
        defo_scene_destroy(s);
        return;
    }
    defo_world *w = defo_simulation_world(sim);
    const defo_body_id sheet = defo_simulation_body(sim, 0), ball = defo_simulation_body(sim, 1);
    const defo_mesh *m = defo_body_mesh(w, sheet);
    CHECK(m->nodes_per_elem == 3);
    CHECK(m->num_nodes == 9 * 5 && m->num_elems == 2 * 8 * 4);
    const defo_mesh *mb = defo_body_mesh(w, ball);
    CHECK(mb->nodes_per_elem == 3 && mb->num_nodes == 10 * 9 + 2 && mb->num_elems == 20 * 9);
    double mass = 0;
    const double *ms = defo_body_masses(w, sheet);
    for (defo_index i = 0; i < m->num_nodes; i++) mass += ms[i];
    CHECK_NEAR(mass, 200 * 0.001 * 0.4 * 0.2, 1e-12);
    for (int f = 0; f < 2; f++) CHECK_OK(defo_simulation_step_frame(sim));
    /* the sheet's free end fell, the clamped one stayed */
    const double *x = defo_body_positions(w, sheet);
    double zfree = 0, zfix = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        if (m->x[3 * i] > 0.19) zfree = fmin(zfree, x[3 * i + 2]);
        if (m->x[3 * i] < -0.19) zfix = fmax(zfix, fabs(x[3 * i + 2]));
    }
    TEST_REPORT("sheet: free end at z = %.4g m, clamped end %.1g m after 2 frames", zfree, zfix);
    CHECK(zfree < -1e-3);
    CHECK(zfix == 0);
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
}

/* Every broken shell input, each with its JSON path. */
static void test_shell_errors(void) {
    const char *text =
        "{\"bodies\": [\n"
        "  {\"generator\": {\"type\": \"rectangle\", \"size\": [1]}},\n"
        "  {\"generator\": {\"type\": \"rectangle\", \"cells\": [0, 2], \"order\": 2},\n"
        "   \"material\": {\"thickness\": -1}},\n"
        "  {\"generator\": {\"type\": \"sphere_shell\", \"subdivisions\": 0},\n"
        "   \"material\": {\"thickness\": 0.01}},\n"
        "  {\"generator\": {\"type\": \"torus_shell\", \"major_radius\": 0.1, \"minor_radius\": "
        "0.2,\n"
        "   \"sweep\": 400}, \"material\": {\"thickness\": 0.01}}\n"
        " ]}";
    defo_scene *s = NULL;
    defo_scene_errors e;
    defo_status st = parse(text, &s, &e);
    CHECK(st == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    for (int i = 0; i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
    CHECK(has_sub(&e, "scene.json: bodies[0].generator.size: expected [width, height]"));
    CHECK(has_sub(&e, "scene.json: bodies[0].material.thickness: missing: a shell (tri3) needs a "
                      "thickness > 0 [m]"));
    CHECK(has_sub(&e, "scene.json: bodies[1].generator.cells: expected two integers in [1, 2000]"));
    CHECK(has_sub(&e, "scene.json: bodies[1].generator.order: unknown key"));
    CHECK(has_sub(&e, "scene.json: bodies[1].material.thickness: -1 is not > 0"));
    CHECK(has_sub(&e, "scene.json: bodies[2].generator.subdivisions: 0 is not in [1, 2000]"));
    CHECK(has_sub(&e, "scene.json: bodies[3].generator.sweep: 400 is not in (0, 360]"));
    CHECK(has_sub(&e, "scene.json: bodies[3].generator: minor_radius 0.2 must be smaller than "
                      "major_radius 0.1"));
    defo_scene_errors_free(&e);
}

/* Inputs refused when the world is built, naming the body: a triangle mesh
 * file (a shell) without a thickness, a non-manifold one, a fracturing
 * shell; the same file with a thickness builds (a shell of 2 triangles). */
static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static const char *build_error(const char *text) {
    defo_scene *s = NULL;
    defo_scene_errors e;
    defo_status st = parse(text, &s, &e);
    for (int i = 0; st && i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
    CHECK_OK(st);
    if (st) {
        defo_scene_errors_free(&e);
        return "";
    }
    defo_simulation *sim = NULL;
    st = defo_simulation_create(s, &sim);
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
    return st ? defo_last_error() : NULL;
}

static void test_shell_build_errors(void) {
    char quad[512], fan[512], text[2048];
    snprintf(quad, sizeof quad, "%s/test_scene_shell_quad.obj", DEFO_TEST_TMP);
    snprintf(fan, sizeof fan, "%s/test_scene_shell_fan.obj", DEFO_TEST_TMP);
    write_file(quad, "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nf 1 2 3\nf 1 3 4\n");
    write_file(fan, "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 -1 0\nv 0 0 1\nf 1 2 3\nf 2 1 4\nf 1 2 5\n");
    const char *fmt = "{\"bodies\": [{\"name\": \"s\", \"mesh\": \"%s\"%s}]}";
    snprintf(text, sizeof text, fmt, quad, ", \"material\": {\"thickness\": 0.001}");
    CHECK(build_error(text) == NULL);
    snprintf(text, sizeof text, fmt, quad, "");
    const char *why = build_error(text);
    TEST_REPORT("no thickness: %s", why ? why : "(built)");
    CHECK(why && strstr(why, "bodies[0]: body 's'") && strstr(why, "thickness > 0"));
    snprintf(text, sizeof text, fmt, fan, ", \"material\": {\"thickness\": 0.001}");
    why = build_error(text);
    TEST_REPORT("non-manifold: %s", why ? why : "(built)");
    CHECK(why && strstr(why, "bodies[0]: body 's'") && strstr(why, "shared by 3 triangles"));
    snprintf(text, sizeof text, fmt, quad,
             ", \"material\": {\"thickness\": 0.001}, \"formulation\": \"corotated\", "
             "\"fracture\": {\"threshold\": 1e4}, \"integrator\": {\"type\": \"backward_euler\"}");
    why = build_error(text);
    TEST_REPORT("fracture: %s", why ? why : "(built)");
    CHECK(why && strstr(why, "fracture of a shell"));
    remove(quad);
    remove(fan);
}

int main(void) {
    RUN(test_shell_scene);
    RUN(test_shell_errors);
    RUN(test_shell_build_errors);
    return test_summary();
}
