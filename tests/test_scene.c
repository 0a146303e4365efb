/*
 * tests/test_scene.c — scene files (src/scene): parse, validate, build,
 * step, checkpoint.
 *
 *   - a valid scene: every documented default and parsed value lands where
 *     docs/scene-format.md says (reference values written in the test);
 *   - a scene with many errors reports ALL of them, each with its JSON path,
 *     the exact range message, key suggestions by edit distance, missing
 *     files named; JSON syntax errors carry line:column;
 *   - reserved formulations and integrators are accepted names with a
 *     "not yet available" message;
 *   - the transform (scale, rotate, translate) moves the rest box to the
 *     analytic bounding box; the fixed plane selects the analytic node count
 *     and those nodes do not move; angular velocity gives v = ω × (x − c)
 *     (zero linear momentum for a body centred at c);
 *   - a scheduled material change is in force after its time;
 *   - checkpoint → resume continues bit for bit (memcmp of x and v against
 *     an uninterrupted run); a damaged checkpoint and one of another scene
 *     are refused;
 *   - backward_euler: the corotated/integrator pairing is enforced; the
 *     clamped end stays put, the tip falls, resume is bit for bit;
 *   - quasistatic: a clamped bar sags to an equilibrium of the right order
 *     (Euler–Bernoulli), resume is bit for bit; "forces" and "tractions"
 *     bend it, a fixed set with a "motion" is a moving bone;
 *   - plasticity (MG04 §3) on a corotated bar yields, is checkpointed;
 *   - fracture (MG04 §4) with plasticity on a bar pulled by a kinematic
 *     handle: splits grow the node count, the bar breaks into pieces, the
 *     handle follows its motion exactly, and a checkpoint between fracture
 *     events resumes bit for bit;
 *   - the built-in demo scene parses and builds.
 */
#include "defo/plasticity.h"
#include "defo/scene.h"
#include "defo/world.h"
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static defo_status parse(const char *text, defo_scene **out, defo_scene_errors *errs) {
    return defo_scene_parse(text, strlen(text), "scene.json", NULL, out, errs);
}

static int has_line(const defo_scene_errors *e, const char *line) {
    for (int i = 0; i < e->count; i++)
        if (!strcmp(e->lines[i], line)) return 1;
    return 0;
}

static int has_sub(const defo_scene_errors *e, const char *sub) {
    for (int i = 0; i < e->count; i++)
        if (strstr(e->lines[i], sub)) return 1;
    return 0;
}

static void test_valid_scene(void) {
    const char *text = "{\"name\": \"t\", \"gravity\": [0, 0, -1],"
                       " \"duration\": {\"frames\": 7, \"fps\": 24},"
                       " \"integrator\": {\"type\": \"newmark\", \"cfl\": 0.25, \"max_dt\": 0.01,"
                       "   \"cg\": {\"max_iterations\": 50, \"tolerance\": 1e-6}},"
                       " \"bodies\": [{\"generator\": {\"type\": \"box\"}}],"
                       " \"colliders\": [{\"type\": \"plane\", \"normal\": [0, 0, 2]}],"
                       " \"outputs\": {\"png\": {\"width\": 100, \"height\": 50, \"color\": "
                       "\"von_mises\"}, \"surface_obj\": false, \"fields\": [\"J\", "
                       "\"velocity\"]}}";
    defo_scene *s = NULL;
    defo_scene_errors e;
    CHECK_OK(parse(text, &s, &e));
    CHECK(e.count == 0);
    if (!s) return;
    CHECK(!strcmp(defo_scene_name(s), "t"));
    CHECK(defo_scene_frames(s) == 7);
    CHECK(defo_scene_fps(s) == 24);
    const defo_scene_outputs *o = defo_scene_get_outputs(s);
    CHECK(o->png == 1 && o->png_width == 100 && o->png_height == 50);
    CHECK(!strcmp(o->png_color, "von_mises"));
    CHECK(o->vtu == 1 && o->surface_obj == 0 && o->checkpoint == 1);
    CHECK(o->fields == (DEFO_OUT_FIELD_J | DEFO_OUT_FIELD_VELOCITY));
    CHECK(defo_scene_num_colliders(s) == 1);
    const defo_collider_def *cd = defo_scene_collider(s, 0);
    /* the plane normal is normalised: (0, 0, 2) -> (0, 0, 1) */
    CHECK(cd && cd->num_shapes == 1 && cd->shapes[0].normal[2] == 1.0);
    CHECK(defo_scene_collider(s, 1) == NULL);
    /* the physics hash ignores outputs and duration, not the physics */
    defo_scene *s2 = NULL, *s3 = NULL;
    CHECK_OK(parse("{\"gravity\": [0, 0, -1], \"integrator\": {\"type\": \"newmark\", \"cfl\": "
                   "0.25, \"max_dt\": 0.01, \"cg\": {\"max_iterations\": 50, \"tolerance\": "
                   "1e-6}}, \"bodies\": [{\"generator\": {\"type\": \"box\"}}], \"colliders\": "
                   "[{\"type\": \"plane\", \"normal\": [0, 0, 2]}]}",
                   &s2, NULL));
    CHECK_OK(parse("{\"gravity\": [0, 0, -2], \"bodies\": [{\"generator\": {\"type\": "
                   "\"box\"}}]}",
                   &s3, NULL));
    if (s2 && s3) {
        CHECK(defo_scene_hash(s) == defo_scene_hash(s2));
        CHECK(defo_scene_hash(s) != defo_scene_hash(s3));
    }
    /* the canonical copy parses back to the same physics */
    char *dump = defo_scene_dump(s);
    defo_scene *s4 = NULL;
    CHECK(dump && parse(dump, &s4, NULL) == DEFO_OK);
    if (s4) CHECK(defo_scene_hash(s4) == defo_scene_hash(s));
    defo_free(dump);
    defo_scene_destroy(s4);
    defo_scene_destroy(s3);
    defo_scene_destroy(s2);
    defo_scene_destroy(s);
}

static void test_all_errors(void) {
    const char *text =
        "{\"bodies\": [\n"
        "  {\"generator\": {\"type\": \"box\"}},\n"
        "  {\"generator\": {\"type\": \"sphere\", \"radius\": -1},\n"
        "   \"material\": {\"poisson\": 0.52, \"youngs\": 0, \"densty\": 5},\n"
        "   \"velocity\": [1, 2]},\n"
        "  {\"mesh\": \"no/such/file.vtu\"},\n"
        "  {\"generator\": {\"type\": \"cube\"}, \"formulation\": \"hybrid\"}\n"
        " ],\n"
        " \"colliders\": [{\"type\": \"sphere\", \"radius\": 1, \"frction\": 0.5}],\n"
        " \"integrator\": {\"type\": \"verlet\"},\n"
        " \"duration\": {\"frames\": 0},\n"
        " \"outputz\": {}\n"
        "}";
    defo_scene *s = NULL;
    defo_scene_errors e;
    defo_status st = parse(text, &s, &e);
    CHECK(st == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(s == NULL);
    for (int i = 0; i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
    /* the exact lines of the example and the contract */
    CHECK(has_line(&e, "scene.json: bodies[1].material.poisson: 0.52 is not in [0, 0.5)"));
    CHECK(has_line(&e, "scene.json: bodies[1].material.youngs: 0 is not > 0"));
    CHECK(has_line(&e, "scene.json: bodies[1].material.densty: unknown key (did you mean "
                       "'density'?)"));
    CHECK(has_line(&e, "scene.json: bodies[1].generator.radius: -1 is not > 0"));
    CHECK(has_line(&e, "scene.json: bodies[1].velocity: expected an array of 3 numbers, got "
                       "an array"));
    CHECK(has_sub(&e, "scene.json: bodies[2].mesh: file '"));
    CHECK(has_sub(&e, "no/such/file.vtu' does not exist"));
    CHECK(has_sub(&e, "scene.json: bodies[3].generator.type: unknown value 'cube'"));
    CHECK(has_sub(&e, "scene.json: bodies[3].formulation: unknown value 'hybrid'"));
    CHECK(has_line(&e, "scene.json: colliders[0].frction: unknown key (did you mean "
                       "'friction'?)"));
    CHECK(has_sub(&e, "scene.json: integrator.type: unknown value 'verlet'"));
    CHECK(has_line(&e, "scene.json: duration.frames: 0 is not in [1, 1000000]"));
    CHECK(has_line(&e, "scene.json: outputz: unknown key (did you mean 'outputs'?)"));
    CHECK(e.count == 12);
    /* the thread's last error is the first line */
    CHECK(!strcmp(defo_last_error(), e.lines[0]));
    defo_scene_errors_free(&e);
}

static void test_syntax_error(void) {
    defo_scene *s = NULL;
    defo_scene_errors e;
    /* line 2, the missing comma before "gravity" */
    CHECK(parse("{\"bodies\": []\n  \"gravity\": [0, 0, 0]}", &s, &e) == DEFO_ERR_PARSE);
    CHECK(e.count == 1);
    if (e.count) {
        TEST_REPORT("%s", e.lines[0]);
        CHECK(!strncmp(e.lines[0], "scene.json:2:", 13));
    }
    defo_scene_errors_free(&e);
    CHECK(parse("[1, 2]", &s, &e) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(e.count == 1 && strstr(e.lines[0], "JSON object"));
    defo_scene_errors_free(&e);
    /* duplicate keys are refused rather than one silently winning */
    CHECK(parse("{\"name\": \"a\", \"name\": \"b\", \"bodies\": []}", &s, &e) == DEFO_ERR_PARSE);
    defo_scene_errors_free(&e);
    CHECK(parse("{}", &s, &e) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(e.count == 1 && has_line(&e, "scene.json: bodies: missing: a scene needs at least one "
                                       "body"));
    defo_scene_errors_free(&e);
    CHECK(defo_scene_load("/nonexistent/scene.json", &s, &e) == DEFO_ERR_IO);
    CHECK(s == NULL);
}

/* Shorthands for body i of a scene's world. */
static defo_body_id sim_body(defo_simulation *sim, int i) {
    return defo_simulation_body(sim, i);
}
static const double *body_x(defo_simulation *sim, int i) {
    return defo_body_positions(defo_simulation_world(sim), sim_body(sim, i));
}
static const double *sim_x(defo_simulation *sim, int i) {
    return body_x(sim, i);
}
static const double *sim_v(defo_simulation *sim, int i) {
    return defo_body_velocities(defo_simulation_world(sim), sim_body(sim, i));
}
static const defo_mesh *sim_mesh(defo_simulation *sim, int i) {
    return defo_body_mesh(defo_simulation_world(sim), sim_body(sim, i));
}
static const defo_material_def *sim_material(defo_simulation *sim, int i) {
    return defo_body_material(defo_simulation_world(sim), sim_body(sim, i));
}
static void sim_stats(defo_simulation *sim, defo_step_stats *st) {
    defo_world_stats(defo_simulation_world(sim), st);
}
static int sim_newton_iterations(defo_simulation *sim) {
    defo_step_stats st;
    sim_stats(sim, &st);
    return st.newton_iterations;
}
static int sim_splits(defo_simulation *sim) {
    defo_step_stats st;
    sim_stats(sim, &st);
    return st.splits;
}
static defo_status sim_plastic_strain(defo_simulation *sim, int i, double *out) {
    return defo_body_plastic_strain(defo_simulation_world(sim), sim_body(sim, i), out);
}
static defo_status sim_components(defo_simulation *sim, int i, defo_index *count) {
    return defo_body_components(defo_simulation_world(sim), sim_body(sim, i), count);
}
static defo_status sim_energy(defo_simulation *sim, int i, double *kinetic, double *elastic) {
    return defo_body_energy(defo_simulation_world(sim), sim_body(sim, i), kinetic, elastic, NULL);
}
static defo_status sim_inverted(defo_simulation *sim, int i, defo_index *count) {
    return defo_body_count_inverted(defo_simulation_world(sim), sim_body(sim, i), count);
}

static void test_transform_fixed_spin(void) {
    /* unit box [−0.5, 0.5]³ (2 cells per axis: 27 nodes), scaled by (2, 1, 1),
     * rotated 90° about z (x → y, y → −x), translated by (10, 0, 0):
     * x ∈ [9.5, 10.5], y ∈ [−1, 1], z ∈ [−0.5, 0.5].  The plane z ≤ −0.5
     * selects the bottom layer: 3 × 3 = 9 nodes. */
    const char *text = "{\"gravity\": [0, 0, -9.81], \"duration\": {\"frames\": 2},"
                       " \"bodies\": [{\"generator\": {\"type\": \"box\", \"cells\": 2},"
                       "  \"transform\": {\"scale\": [2, 1, 1], \"rotate\": {\"axis\": [0, 0, 1],"
                       "    \"angle_deg\": 90}, \"translate\": [10, 0, 0]},"
                       "  \"fixed\": [{\"plane\": {\"point\": [0, 0, -0.5], \"normal\": [0, 0, "
                       "1]}}]},"
                       " {\"name\": \"spinner\", \"generator\": {\"type\": \"box\", \"cells\": 2,"
                       "  \"center\": [0, 0, 5]}, \"angular_velocity\": [0, 0, 2]}]}";
    defo_scene *s = NULL;
    defo_simulation *sim = NULL;
    CHECK_OK(parse(text, &s, NULL));
    if (!s) return;
    CHECK_OK(defo_simulation_create(s, &sim));
    if (!sim) {
        defo_scene_destroy(s);
        return;
    }
    defo_world *w = defo_simulation_world(sim);
    defo_index n = defo_body_num_nodes(w, defo_simulation_body(sim, 0));
    CHECK(n == 27);
    const double *x = body_x(sim, 0);
    double lo[3] = {1e9, 1e9, 1e9}, hi[3] = {-1e9, -1e9, -1e9};
    int bottom = 0;
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], x[3 * i + k]);
            hi[k] = fmax(hi[k], x[3 * i + k]);
            if (k == 2 && x[3 * i + 2] < -0.5 + 1e-9) bottom++;
        }
    CHECK_NEAR(lo[0], 9.5, 1e-12);
    CHECK_NEAR(hi[0], 10.5, 1e-12);
    CHECK_NEAR(lo[1], -1, 1e-12);
    CHECK_NEAR(hi[1], 1, 1e-12);
    CHECK_NEAR(lo[2], -0.5, 1e-12);
    CHECK_NEAR(hi[2], 0.5, 1e-12);
    CHECK(bottom == 9);
    double before[81];
    memcpy(before, x, sizeof before);
    /* spinner: v = ω × (x − c), c = (0, 0, 5): total momentum 0 */
    defo_body_id sp = defo_simulation_body(sim, 1);
    const double *v = defo_body_velocities(w, sp), *xs = defo_body_positions(w, sp);
    const double *m = defo_body_masses(w, sp);
    double P[2] = {0, 0}, vmax = 0;
    for (defo_index i = 0; i < defo_body_num_nodes(w, sp); i++) {
        CHECK_NEAR(v[3 * i], -2 * xs[3 * i + 1], 1e-12);
        CHECK_NEAR(v[3 * i + 1], 2 * xs[3 * i], 1e-12);
        P[0] += m[i] * v[3 * i];
        P[1] += m[i] * v[3 * i + 1];
        vmax = fmax(vmax, fabs(v[3 * i]));
    }
    CHECK(vmax > 0.9); /* corners at 0.5 from the axis: |v| = 1 */
    CHECK_NEAR(P[0], 0, 1e-12);
    CHECK_NEAR(P[1], 0, 1e-12);
    CHECK_OK(defo_simulation_step_frame(sim));
    CHECK(defo_simulation_frame(sim) == 1);
    /* fixed nodes keep their position exactly; the others fall */
    x = body_x(sim, 0);
    int fixed_same = 0, fell = 0;
    for (defo_index i = 0; i < n; i++) {
        if (before[3 * i + 2] < -0.5 + 1e-9)
            fixed_same += !memcmp(x + 3 * i, before + 3 * i, 3 * sizeof(double));
        else
            fell += x[3 * i + 2] < before[3 * i + 2];
    }
    CHECK(fixed_same == 9);
    CHECK(fell == 18);
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
}

static const char *ckpt_scene =
    "{\"duration\": {\"frames\": 6, \"fps\": 30},"
    " \"bodies\": [{\"name\": \"ball\", \"generator\": {\"type\": \"sphere\", \"radius\": 0.2,"
    "   \"center\": [0, 0, 0.25], \"cell_size\": 0.1}, \"velocity\": [0.3, 0, -1],"
    "  \"material\": {\"model\": \"neo_hookean\", \"youngs\": 5e3, \"damping\": 0.01},"
    "  \"material_changes\": [{\"time\": 0.1, \"material\": {\"youngs\": 1e4}}]}],"
    " \"colliders\": [{\"type\": \"plane\", \"point\": [0, 0, 0], \"normal\": [0, 0, 1]},"
    "  {\"type\": \"box\", \"half_extents\": [0.1, 0.1, 0.1], \"center\": [0.5, 0, 0.1],"
    "   \"motion\": {\"velocity\": [-1, 0, 0]}}]}";

static void test_checkpoint_resume(void) {
    defo_scene *s = NULL;
    CHECK_OK(parse(ckpt_scene, &s, NULL));
    if (!s) return;
    char path[512];
    snprintf(path, sizeof path, "%s/test_scene.ckpt", DEFO_TEST_TMP);
    defo_simulation *a = NULL, *b = NULL;
    CHECK_OK(defo_simulation_create(s, &a));
    CHECK_OK(defo_simulation_create(s, &b));
    if (!a || !b) goto out;
    /* a: 2 frames, checkpoint, 2 more; b: restore and 2 frames */
    for (int f = 0; f < 2; f++) CHECK_OK(defo_simulation_step_frame(a));
    CHECK(sim_material(a, 0)->youngs_modulus == 5e3);
    CHECK_OK(defo_simulation_save_checkpoint(a, path));
    for (int f = 0; f < 2; f++) CHECK_OK(defo_simulation_step_frame(a));
    /* the change at t = 0.1 s (frame 3 starts at 0.1) is in force */
    CHECK(sim_material(a, 0)->youngs_modulus == 1e4);
    CHECK_OK(defo_simulation_load_checkpoint(b, path));
    CHECK(defo_simulation_frame(b) == 2);
    for (int f = 0; f < 2; f++) CHECK_OK(defo_simulation_step_frame(b));
    defo_world *wa = defo_simulation_world(a), *wb = defo_simulation_world(b);
    defo_index n = defo_body_num_nodes(wa, defo_simulation_body(a, 0));
    size_t bytes = 3 * (size_t)n * sizeof(double);
    CHECK(!memcmp(body_x(a, 0), body_x(b, 0), bytes));
    CHECK(!memcmp(defo_body_velocities(wa, defo_simulation_body(a, 0)),
                  defo_body_velocities(wb, defo_simulation_body(b, 0)), bytes));
    CHECK(defo_world_time(wa) == defo_world_time(wb));
    CHECK(sim_material(b, 0)->youngs_modulus == 1e4);

    /* damaged: flip one byte in the middle */
    FILE *f = fopen(path, "r+b");
    CHECK(f != NULL);
    if (f) {
        fseek(f, 100, SEEK_SET);
        int c = fgetc(f);
        fseek(f, 100, SEEK_SET);
        fputc(c ^ 0x40, f);
        fclose(f);
    }
    CHECK(defo_simulation_load_checkpoint(b, path) == DEFO_ERR_PARSE);
    CHECK(strstr(defo_last_error(), "checksum") != NULL);
    /* another scene: refused by the hash */
    CHECK_OK(defo_simulation_save_checkpoint(a, path));
    defo_scene *other = NULL;
    defo_simulation *c2 = NULL;
    CHECK_OK(
        parse("{\"bodies\": [{\"generator\": {\"type\": \"box\", \"cells\": 1}}]}", &other, NULL));
    if (other) CHECK_OK(defo_simulation_create(other, &c2));
    if (c2) {
        CHECK(defo_simulation_load_checkpoint(c2, path) == DEFO_ERR_INVALID_ARGUMENT);
        CHECK(strstr(defo_last_error(), "different scene") != NULL);
    }
    defo_simulation_destroy(c2);
    defo_scene_destroy(other);
    remove(path);
out:
    defo_simulation_destroy(a);
    defo_simulation_destroy(b);
    defo_scene_destroy(s);
}

static void test_build_errors(void) {
    /* a fixed set that selects nothing is an input error naming the set */
    defo_scene *s = NULL;
    defo_simulation *sim = NULL;
    CHECK_OK(parse("{\"bodies\": [{\"generator\": {\"type\": \"box\"}, \"fixed\": [{\"sphere\": "
                   "{\"center\": [5, 5, 5], \"radius\": 0.1}}]}]}",
                   &s, NULL));
    if (!s) return;
    CHECK(defo_simulation_create(s, &sim) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(sim == NULL);
    CHECK(strstr(defo_last_error(), "bodies[0].fixed[0]: selects no node") != NULL);
    defo_scene_destroy(s);
}

/* integrator backward_euler (MG04 §6): a key another integrator uses is
 * named, any formulation may be stepped by it, and a checkpoint resumes bit
 * for bit as with newmark. */
static void test_backward_euler(void) {
    defo_scene *s = NULL;
    defo_scene_errors e;
    CHECK(parse("{\"integrator\": {\"type\": \"backward_euler\", \"cfl\": 0.5},"
                " \"bodies\": [{\"generator\": {\"type\": \"box\"}}]}",
                &s, &e) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(e.count == 1);
    CHECK(has_line(&e, "scene.json: integrator.cfl: not used by integrator 'backward_euler'"));
    defo_scene_errors_free(&e);
    /* an invertible body under backward Euler (ITF04 forces, MG04 §6 steps) */
    CHECK_OK(parse("{\"integrator\": {\"type\": \"backward_euler\"},"
                   " \"bodies\": [{\"formulation\": \"invertible\", \"generator\": "
                   "{\"type\": \"box\"}}]}",
                   &s, NULL));
    defo_scene_destroy(s);
    s = NULL;
    defo_scene_errors_free(&e);
    const char *text =
        "{\"duration\": {\"fps\": 30}, \"integrator\": {\"type\": \"backward_euler\", "
        "\"time_step\": 0.01},"
        " \"bodies\": [{\"formulation\": \"corotated\", \"generator\": {\"type\": \"box\", "
        "\"size\": [1, 0.2, 0.2], \"center\": [0.5, 0, 0.5], \"cells\": [5, 1, 1]},"
        "  \"material\": {\"model\": \"corotated\", \"youngs\": 1e5},"
        "  \"fixed\": [{\"plane\": {\"point\": [0, 0, 0], \"normal\": [1, 0, 0]}}]}],"
        " \"colliders\": [{\"type\": \"sphere\", \"center\": [0.9, 0, 0.2], \"radius\": "
        "0.2}]}";
    CHECK_OK(parse(text, &s, NULL));
    if (!s) return;
    defo_simulation *a = NULL, *b = NULL;
    CHECK_OK(defo_simulation_create(s, &a));
    CHECK_OK(defo_simulation_create(s, &b));
    char path[512];
    snprintf(path, sizeof path, "%s/test_scene_be.ckpt", DEFO_TEST_TMP);
    if (a && b) {
        defo_world *wa = defo_simulation_world(a);
        defo_index n = defo_body_num_nodes(wa, defo_simulation_body(a, 0));
        double x0[3 * 24];
        CHECK(n == 24);
        memcpy(x0, body_x(a, 0), sizeof x0);
        for (int f = 0; f < 3; f++) CHECK_OK(defo_simulation_step_frame(a));
        defo_step_stats st;
        sim_stats(a, &st);
        CHECK(st.steps == 4 && st.cg_iterations > 0); /* 1/30 s in steps <= 0.01 s */
        CHECK_OK(defo_simulation_save_checkpoint(a, path));
        for (int f = 0; f < 3; f++) CHECK_OK(defo_simulation_step_frame(a));
        CHECK_OK(defo_simulation_load_checkpoint(b, path));
        for (int f = 0; f < 3; f++) CHECK_OK(defo_simulation_step_frame(b));
        const double *xa = body_x(a, 0), *xb = body_x(b, 0);
        CHECK(!memcmp(xa, xb, sizeof x0));
        /* the clamped end (x = 0) did not move; the free end fell */
        int clamped = 0;
        double tip = 0;
        for (defo_index i = 0; i < n; i++) {
            if (x0[3 * i] == 0) clamped += !memcmp(xa + 3 * i, x0 + 3 * i, 3 * sizeof(double));
            if (x0[3 * i] == 1) tip = fmin(tip, xa[3 * i + 2] - x0[3 * i + 2]);
        }
        CHECK(clamped == 4);
        CHECK(tip < -1e-3);
        remove(path);
    }
    defo_simulation_destroy(a);
    defo_simulation_destroy(b);
    defo_scene_destroy(s);
}

/* integrator quasistatic (TSIF05): a bar clamped at x = 0 sags under
 * gravity to an equilibrium (Newton iterations > 0, tip below rest, clamped
 * nodes exactly at rest); a second frame from the equilibrium needs fewer
 * iterations; a checkpoint resumes bit for bit. */
static void test_quasistatic(void) {
    const char *text =
        "{\"duration\": {\"fps\": 10}, \"integrator\": {\"type\": \"quasistatic\"},"
        " \"bodies\": [{\"generator\": {\"type\": \"box\", \"size\": [1, 0.2, 0.2], "
        "\"center\": [0.5, 0, 0.5], \"cells\": [5, 1, 1]},"
        "  \"material\": {\"model\": \"neo_hookean\", \"youngs\": 1e6},"
        "  \"fixed\": [{\"plane\": {\"point\": [0, 0, 0], \"normal\": [1, 0, 0]}}]}]}";
    defo_scene *s = NULL;
    CHECK_OK(parse(text, &s, NULL));
    if (!s) return;
    defo_simulation *a = NULL, *b = NULL;
    CHECK_OK(defo_simulation_create(s, &a));
    CHECK_OK(defo_simulation_create(s, &b));
    char path[512];
    snprintf(path, sizeof path, "%s/test_scene_qs.ckpt", DEFO_TEST_TMP);
    if (a && b) {
        double x0[3 * 24];
        memcpy(x0, body_x(a, 0), sizeof x0);
        CHECK_OK(defo_simulation_step_frame(a));
        int first = sim_newton_iterations(a);
        CHECK(first > 0);
        CHECK_OK(defo_simulation_save_checkpoint(a, path));
        CHECK_OK(defo_simulation_step_frame(a));
        CHECK(sim_newton_iterations(a) < first);
        CHECK_OK(defo_simulation_load_checkpoint(b, path));
        CHECK_OK(defo_simulation_step_frame(b));
        CHECK(!memcmp(body_x(a, 0), body_x(b, 0), sizeof x0));
        const double *x = body_x(a, 0);
        int clamped = 0;
        double tip = 0;
        for (int i = 0; i < 24; i++) {
            if (x0[3 * i] == 0) clamped += !memcmp(x + 3 * i, x0 + 3 * i, 3 * sizeof(double));
            if (x0[3 * i] == 1) tip = fmin(tip, x[3 * i + 2] - x0[3 * i + 2]);
        }
        CHECK(clamped == 4);
        /* Euler–Bernoulli tip deflection ρ g A L⁴ / (8 E I) = 1000·9.81·0.04 /
         * (8·1e6·0.2⁴/12) = 0.37 m for this bar; linear tets one element
         * thick lock in bending (several times stiffer), so the check is a
         * bracket: clearly sagging, not beyond the beam-theory value */
        TEST_REPORT("tip deflection %.3f m (Euler-Bernoulli 0.37 m)", tip);
        CHECK(tip < -0.05 && tip > -0.5);
        remove(path);
    }
    defo_simulation_destroy(a);
    defo_simulation_destroy(b);
    defo_scene_destroy(s);
}

/* quasistatic loads and moving bones: a bar clamped at x = 0 without
 * gravity bends up under "forces" on its tip nodes and under a "traction"
 * on its tip face (and does not move without them); a fixed set with a
 * "motion" is a moving bone, at rest + velocity·t after the frame.  Loads
 * and motions are refused with the other integrators, plane regions for
 * loads, and a load region selecting nothing when the world is built. */
static double qs_tip_after_frame(const char *loads, const char *fixed_extra) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"duration\": {\"fps\": 10}, \"gravity\": [0, 0, 0],"
             " \"integrator\": {\"type\": \"quasistatic\"},"
             " \"bodies\": [{\"generator\": {\"type\": \"box\", \"size\": [1, 0.2, 0.2], "
             "\"center\": [0.5, 0, 0.5], \"cells\": [5, 1, 1]},"
             "  \"material\": {\"model\": \"neo_hookean\", \"youngs\": 1e6},"
             "  \"fixed\": [{\"plane\": {\"point\": [0, 0, 0], \"normal\": [1, 0, 0]}%s}]%s}]}",
             fixed_extra, loads);
    defo_scene *s = NULL;
    defo_scene_errors e;
    CHECK_OK(parse(text, &s, &e));
    for (int i = 0; i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
    defo_scene_errors_free(&e);
    if (!s) return NAN;
    defo_simulation *sim = NULL;
    CHECK_OK(defo_simulation_create(s, &sim));
    double tip = NAN;
    if (sim) {
        double x0[3 * 24];
        memcpy(x0, body_x(sim, 0), sizeof x0);
        CHECK(defo_simulation_step_frame(sim) >= 0);
        const double *x = body_x(sim, 0);
        tip = 0;
        for (int i = 0; i < 24; i++) {
            if (x0[3 * i] == 1) tip += 0.25 * (x[3 * i + 2] - x0[3 * i + 2]);
            /* the clamped nodes: at rest, or moved by the bone's motion */
            if (x0[3 * i] == 0 && fixed_extra[0])
                CHECK(fabs(x[3 * i + 2] - x0[3 * i + 2] - 0.1 * 0.5) < 1e-12 &&
                      fabs(x[3 * i] - x0[3 * i]) < 1e-12);
            else if (x0[3 * i] == 0)
                CHECK(!memcmp(x + 3 * i, x0 + 3 * i, 3 * sizeof(double)));
        }
    }
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
    return tip;
}

/* Dead loads under the dynamic integrators: elastic and damping forces are
 * internal (they sum to zero), so the total momentum of a free body is
 * (Σ loads)·t — checked for newmark and backward_euler with a force on every
 * node (0.01 N each) plus a traction on the x = 1 face (100 Pa × 0.25 m² =
 * 25 N), no gravity.  Newmark's update conserves it to rounding; backward
 * Euler's to its linear solve, run here to a 1e-12 residual. */
static void test_dynamic_loads(void) {
    const char *integ[2] = {"newmark", "backward_euler"};
    for (int t = 0; t < 2; t++) {
        char text[1400];
        snprintf(text, sizeof text,
                 "{\"duration\": {\"fps\": 30}, \"gravity\": [0, 0, 0],"
                 " \"integrator\": {\"type\": \"%s\"%s},"
                 " \"bodies\": [{\"formulation\": \"%s\", \"generator\": {\"type\": \"box\","
                 " \"size\": [1, 0.5, 0.5], \"center\": [0.5, 0, 0], \"cells\": [4, 2, 2]},"
                 "  \"material\": {\"model\": \"%s\", \"youngs\": 1e4, \"density\": 100},"
                 "  \"forces\": [{\"box\": {\"min\": [-1, -1, -1], \"max\": [2, 1, 1]},"
                 " \"force\": [0, 0, 0.01]}],"
                 "  \"tractions\": [{\"box\": {\"min\": [0.999, -1, -1], \"max\": [1.001, 1, 1]},"
                 " \"traction\": [100, 0, 0]}]}]}",
                 integ[t], t ? ", \"cg\": {\"tolerance\": 1e-12}" : "",
                 t ? "corotated" : "invertible", t ? "corotated" : "neo_hookean");
        defo_scene *s = NULL;
        defo_scene_errors e;
        defo_status st = parse(text, &s, &e);
        CHECK_OK(st);
        if (st) {
            for (int i = 0; i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
            defo_scene_errors_free(&e);
        }
        if (!s) continue;
        defo_simulation *sim = NULL;
        CHECK_OK(defo_simulation_create(s, &sim));
        if (sim) {
            for (int f = 0; f < 3; f++) CHECK(defo_simulation_step_frame(sim) >= 0);
            const defo_mesh *m = sim_mesh(sim, 0);
            const double *v = sim_v(sim, 0);
            const double *mass =
                defo_body_masses(defo_simulation_world(sim), defo_simulation_body(sim, 0));
            double P[3] = {0, 0, 0};
            for (defo_index i = 0; i < m->num_nodes; i++)
                for (int k = 0; k < 3; k++) P[k] += mass[i] * v[3 * i + k];
            const double time = 3.0 / 30.0;
            const double want[3] = {25.0 * time, 0, 0.01 * (double)m->num_nodes * time};
            double err = 0;
            for (int k = 0; k < 3; k++) err = fmax(err, fabs(P[k] - want[k]));
            TEST_REPORT("%s: momentum (%.9f, %.1e, %.9f) N·s, expected (%.9f, 0, %.9f)", integ[t],
                        P[0], P[1], P[2], want[0], want[2]);
            CHECK(err <= 1e-9 * want[0]);
        }
        defo_simulation_destroy(sim);
        defo_scene_destroy(s);
    }
}

static void test_quasistatic_loads(void) {
    double none = qs_tip_after_frame("", "");
    double force =
        qs_tip_after_frame(", \"forces\": [{\"box\": {\"min\": [1, -1, -1], \"max\": [1, 1, 2]}, "
                           "\"force\": [0, 0, 100]}]",
                           "");
    double traction = qs_tip_after_frame(
        ", \"tractions\": [{\"box\": {\"min\": [1, -1, -1], \"max\": [1, 1, 2]}, "
        "\"traction\": [0, 0, -10000]}]",
        "");
    double bone = qs_tip_after_frame("", ", \"motion\": {\"velocity\": [0, 0, 0.5]}");
    TEST_REPORT("tip: unloaded %.3g, forces %.3g, traction %.3g, moving bone %.3g m", none, force,
                traction, bone);
    CHECK(fabs(none) < 1e-9);
    CHECK(force > 0.01);
    CHECK(traction < -0.01);
    /* a rigid translation of the clamp carries the unloaded bar along */
    CHECK(fabs(bone - 0.05) < 1e-6);

    defo_scene *s = NULL;
    defo_scene_errors e;
    const char *bad =
        "{\"bodies\": [{\"generator\": {\"type\": \"box\"},"
        " \"fixed\": [{\"tag\": 1, \"motion\": {\"velocity\": [0, 0, 1], \"spin\": 1}}],"
        " \"forces\": [{\"plane\": {\"point\": [0, 0, 0], \"normal\": [0, 0, 1]}, "
        "\"force\": [0, 0, 1]}, {\"tag\": 1}, {\"tag\": 1, \"force\": [0, 0, \"x\"]}],"
        " \"tractions\": [{\"tag\": 1, \"traction\": [1, 2, 3], \"force\": [0, 0, 0]}]}]}";
    CHECK(parse(bad, &s, &e) == DEFO_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
    CHECK(has_sub(&e, "bodies[0].fixed[0].motion.spin: unknown key"));
    /* a plane region (with its tolerance) selects load nodes too, and a
     * moving clamp is a kinematic handle under every integrator: neither is
     * an error, so the four lines are the four mistakes */
    CHECK(e.count == 4);
    CHECK(has_line(&e, "scene.json: bodies[0].forces[1]: needs \"force\" ([3] N per node)"));
    CHECK(
        has_line(&e, "scene.json: bodies[0].forces[2].force[2]: expected a number, got a string"));
    CHECK(has_sub(&e, "bodies[0].tractions[0].force: unknown key"));
    defo_scene_errors_free(&e);
    CHECK(!s);

    const char *empty = "{\"integrator\": {\"type\": \"quasistatic\"},"
                        " \"bodies\": [{\"generator\": {\"type\": \"box\"},"
                        " \"forces\": [{\"sphere\": {\"center\": [9, 9, 9], \"radius\": 0.1}, "
                        "\"force\": [0, 0, 1]}]}]}";
    CHECK_OK(parse(empty, &s, NULL));
    if (s) {
        defo_simulation *sim = NULL;
        CHECK(defo_simulation_create(s, &sim) == DEFO_ERR_INVALID_ARGUMENT);
        CHECK(strstr(defo_last_error(), "forces[0]: selects no node") != NULL);
        defo_simulation_destroy(sim);
        defo_scene_destroy(s);
    }
}

/* "plasticity" on a corotated body (MG04 §3): a clamped bar sagging under
 * gravity yields (plastic strain > 0, positions differ from the elastic
 * run, which reports 0); the plastic strain is part of the checkpoint
 * (resume bit for bit); an invertible body under newmark yields as well;
 * creep·Δt > 1 is a build error. */
static defo_scene *be_bar(const char *plasticity) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"duration\": {\"fps\": 30}, \"integrator\": {\"type\": \"backward_euler\", "
             "\"time_step\": 0.01},"
             " \"bodies\": [{\"formulation\": \"corotated\", \"generator\": {\"type\": \"box\", "
             "\"size\": [1, 0.2, 0.2], \"center\": [0.5, 0, 0.5], \"cells\": [5, 1, 1]},"
             "  \"material\": {\"model\": \"corotated\", \"youngs\": 1e5}%s,"
             "  \"fixed\": [{\"plane\": {\"point\": [0, 0, 0], \"normal\": [1, 0, 0]}}]}]}",
             plasticity);
    defo_scene *s = NULL;
    CHECK_OK(parse(text, &s, NULL));
    return s;
}

static void test_plasticity(void) {
    defo_scene *se = be_bar("");
    defo_scene *sp = be_bar(", \"plasticity\": {\"yield\": 0, \"creep\": 100, \"max\": 10}");
    defo_simulation *e = NULL, *a = NULL, *b = NULL;
    if (se) CHECK_OK(defo_simulation_create(se, &e));
    if (sp) CHECK_OK(defo_simulation_create(sp, &a));
    if (sp) CHECK_OK(defo_simulation_create(sp, &b));
    char path[512];
    snprintf(path, sizeof path, "%s/test_scene_plastic.ckpt", DEFO_TEST_TMP);
    if (e && a && b) {
        double pe[5 * 6], pa[5 * 6];
        for (int f = 0; f < 3; f++) {
            CHECK(defo_simulation_step_frame(e) >= 0);
            CHECK(defo_simulation_step_frame(a) >= 0);
            if (f == 1) CHECK_OK(defo_simulation_save_checkpoint(a, path));
        }
        CHECK_OK(sim_plastic_strain(e, 0, pe));
        CHECK_OK(sim_plastic_strain(a, 0, pa));
        double me = 0, ma = 0;
        for (int k = 0; k < 30; k++) {
            me = fmax(me, pe[k]);
            ma = fmax(ma, pa[k]);
        }
        TEST_REPORT("largest plastic strain norm %.3g (elastic run %.3g)", ma, me);
        CHECK(me == 0);
        CHECK(ma > 1e-4 && ma <= 10);
        CHECK(memcmp(body_x(a, 0), body_x(e, 0), 24 * 3 * sizeof(double)) != 0);
        CHECK_OK(defo_simulation_load_checkpoint(b, path));
        CHECK_OK(defo_simulation_step_frame(b));
        CHECK(!memcmp(body_x(a, 0), body_x(b, 0), 24 * 3 * sizeof(double)));
        double pb[5 * 6];
        CHECK_OK(sim_plastic_strain(b, 0, pb));
        CHECK(!memcmp(pa, pb, sizeof pa));
        remove(path);
    }
    defo_simulation_destroy(e);
    defo_simulation_destroy(a);
    defo_simulation_destroy(b);
    defo_scene_destroy(se);
    defo_scene_destroy(sp);

    defo_scene *s = be_bar(", \"plasticity\": {\"creep\": 1000}");
    if (s) {
        defo_simulation *sim = NULL;
        CHECK(defo_simulation_create(s, &sim) == DEFO_ERR_INVALID_ARGUMENT);
        CHECK(strstr(defo_last_error(), "bodies[0].plasticity.creep: 1000 /s") != NULL);
        defo_simulation_destroy(sim);
        defo_scene_destroy(s);
    }
    defo_scene_errors err;
    CHECK(parse("{\"bodies\": [{\"generator\": {\"type\": \"box\"},"
                " \"plasticity\": {\"yield\": -1, \"creeep\": 1}}]}",
                &s, &err) == DEFO_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < err.count; i++) TEST_REPORT("%s", err.lines[i]);
    CHECK(has_line(&err, "scene.json: bodies[0].plasticity.yield: -1 is not >= 0"));
    CHECK(has_line(&err, "scene.json: bodies[0].plasticity.creeep: unknown key (did you mean "
                         "'creep'?)"));
    CHECK(err.count == 2);
    defo_scene_errors_free(&err);

    /* the same flow rule on an invertible body (ITF04 forces of the elastic
     * part F F_p⁻¹) stepped by newmark: the sagging bar yields too */
    CHECK_OK(parse("{\"duration\": {\"fps\": 30},"
                   " \"bodies\": [{\"generator\": {\"type\": \"box\", \"size\": [1, 0.2, 0.2],"
                   " \"center\": [0.5, 0, 0.5], \"cells\": [5, 1, 1]},"
                   "  \"material\": {\"youngs\": 1e5},"
                   "  \"plasticity\": {\"yield\": 0, \"creep\": 100, \"max\": 10},"
                   "  \"fixed\": [{\"plane\": {\"point\": [0, 0, 0], \"normal\": [1, 0, 0]}}]}]}",
                   &s, NULL));
    defo_simulation *inv = NULL;
    if (s) CHECK_OK(defo_simulation_create(s, &inv));
    if (inv) {
        for (int f = 0; f < 3; f++) CHECK_OK(defo_simulation_step_frame(inv));
        double pi[5 * 6], mi = 0;
        CHECK_OK(sim_plastic_strain(inv, 0, pi));
        for (int k = 0; k < 30; k++) mi = fmax(mi, pi[k]);
        TEST_REPORT("invertible body under newmark: largest plastic strain norm %.3g", mi);
        CHECK(mi > 1e-4 && mi <= 10);
    }
    defo_simulation_destroy(inv);
    defo_scene_destroy(s);
}

/* MG04 §4 fracture as a scene key, on the tear example's bar (held at x = 0,
 * its end x = 0.4 pulled at 0.5 m/s by a kinematic handle), with MG04 §3
 * plasticity on the same body:
 *   - any formulation and integrator may fracture, with loads too;
 *   - splits happen, each adds one node (node count = initial + splits), the
 *     body ends in >= 2 components; plastic strain builds up alongside;
 *   - the handle's nodes are exactly at X + v·t (analytic: the handle
 *     follows its motion), the clamped ones at X;
 *   - a checkpoint taken after the first splits, restored into a fresh
 *     simulation, continues bit for bit (positions, velocities,
 *     connectivity, plastic strains) through further splits. */
static defo_scene *tear_scene(const char *extra) {
    char text[4096];
    snprintf(text, sizeof text,
             "{\"duration\": {\"fps\": 30}, \"gravity\": [0, 0, 0],"
             " \"integrator\": {\"type\": \"backward_euler\", \"time_step\": 0.005, "
             "\"rayleigh_mass\": 1},"
             " \"bodies\": [{\"formulation\": \"corotated\", \"generator\": {\"type\": \"box\", "
             "\"size\": [0.4, 0.1, 0.1], \"center\": [0.2, 0, 0.3], \"cells\": [12, 3, 3], "
             "\"split\": \"5\"},"
             "  \"material\": {\"model\": \"corotated\", \"youngs\": 1e5, \"poisson\": 0.33},"
             "  \"fracture\": {\"threshold\": 6e3, \"sliver\": 0.05}%s,"
             "  \"fixed\": [{\"box\": {\"min\": [-1, -1, -1], \"max\": [0.001, 1, 1]}},"
             "   {\"box\": {\"min\": [0.399, -1, -1], \"max\": [1, 1, 1]}, "
             "\"motion\": {\"velocity\": [0.5, 0, 0]}}]}]}",
             extra);
    defo_scene *s = NULL;
    CHECK_OK(parse(text, &s, NULL));
    return s;
}

static void test_fracture_scene(void) {
    defo_scene *s = NULL;
    defo_scene_errors e;
    /* fracture on the default invertible body under newmark is a valid scene */
    CHECK_OK(parse("{\"bodies\": [{\"generator\": {\"type\": \"box\"}, \"fracture\": "
                   "{\"threshold\": 1e3}}]}",
                   &s, NULL));
    defo_scene_destroy(s);
    s = NULL;
    CHECK(parse("{\"integrator\": {\"type\": \"quasistatic\"}, \"bodies\": [{\"generator\": "
                "{\"type\": \"box\"}, \"fracture\": {\"treshold\": 1e3}}]}",
                &s, &e) == DEFO_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
    CHECK(e.count == 2);
    CHECK(has_line(&e, "scene.json: bodies[0].fracture.treshold: unknown key (did you mean "
                       "'threshold'?)"));
    CHECK(has_sub(&e, "bodies[0].fracture: needs \"threshold\""));
    defo_scene_errors_free(&e);
    /* loads on a fracturing body are valid (split nodes share them) */
    CHECK_OK(parse("{\"bodies\": [{\"generator\": {\"type\": \"box\"}, \"fracture\": "
                   "{\"threshold\": 1e3}, \"forces\": [{\"tag\": 1, \"force\": [0, 0, 1]}]}]}",
                   &s, NULL));
    defo_scene_destroy(s);
    s = NULL;

    defo_scene *sc =
        tear_scene(", \"plasticity\": {\"yield\": 0.005, \"creep\": 50, \"max\": 0.1}");
    defo_simulation *a = NULL, *b = NULL;
    if (sc) CHECK_OK(defo_simulation_create(sc, &a));
    if (sc) CHECK_OK(defo_simulation_create(sc, &b));
    char path[512];
    snprintf(path, sizeof path, "%s/test_scene_fracture.ckpt", DEFO_TEST_TMP);
    if (a && b) {
        CHECK(defo_simulation_body_fractures(a, 0));
        const defo_index n0 = sim_mesh(a, 0)->num_nodes;
        const defo_index ne = sim_mesh(a, 0)->num_elems;
        defo_index total = 0, at_ckpt = 0;
        for (int f = 0; f < 4; f++) {
            CHECK(defo_simulation_step_frame(a) >= 0);
            total += sim_splits(a);
            if (f == 0) {
                at_ckpt = total;
                CHECK_OK(defo_simulation_save_checkpoint(a, path));
            }
        }
        const defo_mesh *ma = sim_mesh(a, 0);
        defo_index comps = 0;
        CHECK_OK(sim_components(a, 0, &comps));
        TEST_REPORT("splits: %ld in frame 1, %ld in frames 2-4; %ld components", (long)at_ckpt,
                    (long)(total - at_ckpt), (long)comps);
        CHECK(total > at_ckpt);
        CHECK(ma->num_nodes == n0 + total && ma->num_elems > ne); /* bisections */
        CHECK(comps >= 2);
        CHECK(defo_body_num_nodes(defo_simulation_world(a), defo_simulation_body(a, 0)) ==
              n0 + total);
        const defo_index ne1 = ma->num_elems;
        double *pl = malloc((size_t)ne1 * sizeof(double)),
               *pl2 = malloc((size_t)ne1 * sizeof(double));
        double pmax = 0;
        if (pl && pl2) {
            CHECK_OK(sim_plastic_strain(a, 0, pl));
            for (defo_index k = 0; k < ne1; k++) pmax = fmax(pmax, pl[k]);
        }
        CHECK(pmax > 1e-4);
        /* the handle and the clamp: x = X + v t exactly (to rounding) */
        const double *x = sim_x(a, 0);
        const double *v = sim_v(a, 0);
        double t = 4.0 / 30, herr = 0, verr = 0, cmax = 0;
        int handle = 0, clamp = 0;
        for (defo_index k = 0; k < ma->num_nodes; k++) {
            const double *X = ma->x + 3 * k;
            if (fabs(X[0] - 0.4) < 1e-9) {
                handle++;
                herr = fmax(herr, fabs(x[3 * k] - (X[0] + 0.5 * t)));
                herr = fmax(herr, fmax(fabs(x[3 * k + 1] - X[1]), fabs(x[3 * k + 2] - X[2])));
                verr = fmax(verr, fabs(v[3 * k] - 0.5));
            } else if (fabs(X[0]) < 1e-9) {
                clamp++;
                for (int c = 0; c < 3; c++) cmax = fmax(cmax, fabs(x[3 * k + c] - X[c]));
            }
        }
        TEST_REPORT("handle: %d nodes, |x - (X + v t)| <= %.2g m, |v - 0.5| <= %.2g m/s", handle,
                    herr, verr);
        CHECK(handle >= 16 && clamp >= 16);
        CHECK(herr < 1e-14 && verr < 1e-9 && cmax == 0);
        double kin = 0, ela = 0;
        defo_index inv = 1;
        CHECK_OK(sim_energy(a, 0, &kin, &ela));
        CHECK_OK(sim_inverted(a, 0, &inv));
        CHECK(kin > 0 && ela > 0 && inv == 0);
        /* resume from frame 1: the same topology and state after frame 4 */
        CHECK_OK(defo_simulation_load_checkpoint(b, path));
        CHECK(sim_mesh(b, 0)->num_nodes == n0 + at_ckpt);
        for (int f = 1; f < 4; f++) CHECK(defo_simulation_step_frame(b) >= 0);
        const defo_mesh *mb = sim_mesh(b, 0);
        CHECK(mb->num_nodes == ma->num_nodes && mb->num_elems == ne1);
        if (mb->num_nodes == ma->num_nodes && mb->num_elems == ne1) {
            size_t n3 = 3 * (size_t)ma->num_nodes * sizeof(double);
            CHECK(!memcmp(ma->elems, mb->elems, 4 * (size_t)ne1 * sizeof(defo_index)));
            CHECK(!memcmp(ma->x, mb->x, n3));
            CHECK(!memcmp(x, sim_x(b, 0), n3));
            CHECK(!memcmp(v, sim_v(b, 0), n3));
        }
        if (pl && pl2) {
            CHECK_OK(sim_plastic_strain(b, 0, pl2));
            CHECK(!memcmp(pl, pl2, (size_t)ne1 * sizeof(double)));
        }
        free(pl);
        free(pl2);
        remove(path);
    }
    defo_simulation_destroy(a);
    defo_simulation_destroy(b);
    defo_scene_destroy(sc);
}

static void test_demo_scene(void) {
    const char *t = defo_scene_demo_text();
    defo_scene *s = NULL;
    defo_scene_errors e;
    CHECK_OK(defo_scene_parse(t, strlen(t), "demo", NULL, &s, &e));
    for (int i = 0; i < e.count; i++) TEST_REPORT("%s", e.lines[i]);
    defo_scene_errors_free(&e);
    if (!s) return;
    CHECK(defo_scene_num_colliders(s) == 1);
    CHECK(defo_scene_get_outputs(s)->png == 1);
    defo_simulation *sim = NULL;
    CHECK_OK(defo_simulation_create(s, &sim));
    CHECK(sim && defo_simulation_num_bodies(sim) == 1);
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
}

/* colliders[j].separation_speed reaches the world: a block started 5 cm
 * inside the ground rises in its first frame by at most speed × frame time
 * (the documented bound of the push-out), and a faster speed lifts it more;
 * a speed ≤ 0 is refused naming the key. */
static double first_frame_rise(const char *speed) {
    char text[1024];
    snprintf(
        text, sizeof text,
        "{\"duration\": {\"frames\": 1, \"fps\": 30},\n"
        " \"integrator\": {\"type\": \"newmark\"},\n"
        " \"gravity\": [0, 0, 0],\n"
        " \"bodies\": [{\"name\": \"block\", \"generator\": {\"type\": \"box\", "
        "\"center\": [0, 0, 0.05], \"size\": [0.2, 0.2, 0.2], \"cells\": [3, 3, 3]},\n"
        "   \"material\": {\"youngs\": 1e5, \"poisson\": 0.3, \"density\": 1000}}],\n"
        " \"colliders\": [{\"type\": \"plane\", \"point\": [0, 0, 0], \"normal\": [0, 0, 1]%s}]}",
        speed);
    defo_scene *s = NULL;
    defo_simulation *sim = NULL;
    double rise = NAN;
    CHECK_OK(parse(text, &s, NULL));
    if (!s) return rise;
    defo_status st = defo_simulation_create(s, &sim);
    CHECK(st > 0); /* the warning that the block starts inside the ground */
    if (st >= 0) {
        const defo_mesh *m = defo_body_mesh(defo_simulation_world(sim), sim_body(sim, 0));
        double z0 = 1e9, z1 = 1e9;
        for (defo_index i = 0; i < m->num_nodes; i++) z0 = fmin(z0, m->x[3 * i + 2]);
        CHECK_OK(defo_simulation_step_frame(sim));
        const double *x = defo_body_positions(defo_simulation_world(sim), sim_body(sim, 0));
        for (defo_index i = 0; i < m->num_nodes; i++) z1 = fmin(z1, x[3 * i + 2]);
        rise = z1 - z0;
    }
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
    return rise;
}

static void test_separation_speed(void) {
    const double slow = first_frame_rise(""),
                 fast = first_frame_rise(", \"separation_speed\": 1.2");
    TEST_REPORT("lowest node's rise in one frame: %.4f m (0.5 m/s), %.4f m (1.2 m/s)", slow, fast);
    /* 5 cm deep, deeper than either speed moves it in a frame: the depth
     * allowed falls by exactly speed · Δt each step, so the lowest node
     * rises speed · (1/30 s) */
    CHECK(fabs(slow - 0.5 / 30) < 1e-9);
    CHECK(fabs(fast - 1.2 / 30) < 1e-9);
    defo_scene *s = NULL;
    defo_scene_errors e;
    CHECK(parse("{\"bodies\": [{\"generator\": {\"type\": \"box\"}}],\n"
                " \"colliders\": [{\"type\": \"plane\", \"separation_speed\": 0}]}",
                &s, &e) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(has_line(&e, "scene.json: colliders[0].separation_speed: 0 is not > 0"));
    defo_scene_errors_free(&e);
}

/* The plasticity schema (models and their keys, material regions, run-time
 * plasticity edits, anneal schedules, fixed sets let go): every error at
 * once with its path; and a scene using all of them resumed from a
 * checkpoint equals the uninterrupted run bit for bit. */
static void test_plasticity_schema(void) {
    defo_scene *s = NULL;
    defo_scene_errors err;
    CHECK(
        parse(
            "{\"bodies\": [\n"
            " {\"generator\": {\"type\": \"box\"}, \"plasticity\": {\"model\": \"von_mieses\"}},\n"
            " {\"generator\": {\"type\": \"box\"}, \"plasticity\": {\"model\": \"von_mises\", "
            "\"yield\": 1}},\n"
            " {\"generator\": {\"type\": \"box\"}, \"plasticity\": {\"model\": "
            "\"multiplicative\", \"gamma\": 0.01, \"limit\": 0.5, \"goal\": {\"scale\": [1, "
            "-1, 1]}}},\n"
            " {\"generator\": {\"type\": \"box\"},\n"
            "  \"material_regions\": [{\"name\": \"a\", \"box\": {\"min\": [0, 0, 0], \"max\": "
            "[1, 1, 1]}}],\n"
            "  \"material_changes\": [{\"time\": 1, \"region\": \"b\", \"plasticity\": "
            "{\"model\": \"von_mises\", \"yield_stress\": 5, \"hardening\": -2}}],\n"
            "  \"anneal\": [{\"time\": 2}, {\"time\": 1}],\n"
            "  \"fixed\": [{\"tag\": 1, \"release\": -1}]}\n"
            "]}",
            &s, &err) == DEFO_ERR_INVALID_ARGUMENT);
    for (int i = 0; i < err.count; i++) TEST_REPORT("%s", err.lines[i]);
    CHECK(has_line(&err, "scene.json: bodies[0].plasticity.model: unknown value 'von_mieses' "
                         "(did you mean 'von_mises'?)"));
    CHECK(has_line(&err, "scene.json: bodies[1].plasticity.yield: not used by plasticity model "
                         "'von_mises'"));
    CHECK(has_line(&err, "scene.json: bodies[1].plasticity: needs \"yield_stress\" (the uniaxial "
                         "yield stress, Pa > 0)"));
    CHECK(has_sub(&err, "bodies[2].plasticity.limit: 0.5 is not"));
    CHECK(has_sub(&err, "bodies[2].plasticity.goal.scale"));
    CHECK(has_line(&err, "scene.json: bodies[3].material_regions[0]: needs \"material\" or "
                         "\"plasticity\" (or both)"));
    CHECK(has_line(&err, "scene.json: bodies[3].material_changes[0].region: 'b' is none of the "
                         "body's material_regions"));
    CHECK(has_sub(&err, "bodies[3].material_changes[0].plasticity.hardening: -2 is not"));
    CHECK(has_line(&err, "scene.json: bodies[3].anneal[1]: times must increase (1 after 2)"));
    CHECK(has_sub(&err, "bodies[3].fixed[0].release: -1 is not"));
    CHECK(err.count == 10);
    defo_scene_errors_free(&err);

    /* a goal mesh of another size is refused when the world is built */
    char path[512];
    snprintf(path, sizeof path, "%s/test_scene_goal.node", DEFO_TEST_TMP);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "4 3 0 0\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n");
        fclose(f);
        char ele[512];
        snprintf(ele, sizeof ele, "%s/test_scene_goal.ele", DEFO_TEST_TMP);
        f = fopen(ele, "w");
        if (f) fprintf(f, "1 4 0\n1 1 2 3 4\n"), fclose(f);
    }
    char text[2048];
    snprintf(text, sizeof text,
             "{\"bodies\": [{\"generator\": {\"type\": \"box\"}, \"plasticity\": {\"model\": "
             "\"multiplicative\", \"gamma\": 0.01, \"goal\": {\"mesh\": \"%s\"}}}]}",
             path);
    CHECK_OK(parse(text, &s, NULL));
    if (s) {
        defo_simulation *sim = NULL;
        CHECK(defo_simulation_create(s, &sim) == DEFO_ERR_INVALID_ARGUMENT);
        TEST_REPORT("%s", defo_last_error());
        CHECK(strstr(defo_last_error(), "bodies[0].plasticity.goal: ") != NULL &&
              strstr(defo_last_error(), "has 4 nodes and 1 elements, the body 125 and 384") !=
                  NULL);
        defo_simulation_destroy(sim);
        defo_scene_destroy(s);
    }

    /* a handle pulls a corner of a block whose lower half is softer and
     * yields first (von Mises), lets go at 0.1 s; the upper half is heated
     * (mg04) at 0.1 s; the block is annealed at 0.2 s */
    const char *scene =
        "{\"duration\": {\"fps\": 30}, \"gravity\": [0, 0, 0],"
        " \"integrator\": {\"type\": \"backward_euler\", \"time_step\": 0.01, \"rayleigh_mass\": "
        "4},"
        " \"bodies\": [{\"generator\": {\"type\": \"box\", \"size\": [0.4, 0.4, 0.4], \"center\": "
        "[0, 0, 0.2], \"cells\": 2},"
        "  \"material\": {\"youngs\": 2e5, \"poisson\": 0.4},"
        "  \"plasticity\": {\"model\": \"von_mises\", \"yield_stress\": 4000, \"hardening\": 5000},"
        "  \"material_regions\": [{\"name\": \"soft\", \"box\": {\"min\": [-1, -1, -1], \"max\": "
        "[1, 1, 0.2]}, \"material\": {\"youngs\": 1e5}, \"plasticity\": {\"yield_stress\": "
        "1000}}],"
        "  \"material_changes\": [{\"time\": 0.1, \"plasticity\": {\"model\": \"mg04\", "
        "\"yield\": 0.001, \"creep\": 50, \"max\": 1}}],"
        "  \"anneal\": [{\"time\": 0.2}],"
        "  \"fixed\": [{\"plane\": {\"point\": [0, 0, 0], \"normal\": [0, 0, 1]}},"
        "   {\"sphere\": {\"center\": [0.2, 0.2, 0.4], \"radius\": 0.05}, \"motion\": "
        "{\"velocity\": [0.5, 0.5, 0.5]}, \"release\": 0.1}]}]}";
    defo_scene *sc = NULL;
    CHECK_OK(parse(scene, &sc, NULL));
    defo_simulation *a = NULL, *b = NULL;
    if (sc) CHECK_OK(defo_simulation_create(sc, &a));
    if (sc) CHECK_OK(defo_simulation_create(sc, &b));
    snprintf(path, sizeof path, "%s/test_scene_sculpt.ckpt", DEFO_TEST_TMP);
    if (a && b) {
        const defo_world *w = defo_simulation_world(a);
        const defo_body_id id = sim_body(a, 0);
        CHECK(defo_body_num_material_regions(w, id) == 1);
        CHECK(defo_plasticity_num_sets(defo_body_plasticity(w, id)) == 2);
        double ep[48], pmax = 0;
        for (int fr = 0; fr < 9; fr++) {
            CHECK_OK(defo_simulation_step_frame(a));
            if (fr == 4) CHECK_OK(defo_simulation_save_checkpoint(a, path));
            if (fr == 5) {
                CHECK_OK(sim_plastic_strain(a, 0, ep));
                for (int e = 0; e < 48; e++) pmax = fmax(pmax, ep[e]);
            }
        }
        /* after the edit the body's own set is mg04; after the anneal nothing is plastic */
        CHECK(defo_plasticity_get_def(defo_body_plasticity(w, id), 0)->model ==
              DEFO_PLASTICITY_MG04);
        double after = 0;
        CHECK_OK(sim_plastic_strain(a, 0, ep));
        for (int e = 0; e < 48; e++) after = fmax(after, ep[e]);
        TEST_REPORT("largest plastic strain before annealing %.3g, %.3g after", pmax, after);
        CHECK(pmax > 0.01 && after < pmax);
        CHECK_OK(defo_simulation_load_checkpoint(b, path));
        for (int fr = 5; fr < 9; fr++) CHECK_OK(defo_simulation_step_frame(b));
        const size_t n3 = 3 * (size_t)defo_body_num_nodes(w, id);
        CHECK(!memcmp(body_x(a, 0), body_x(b, 0), n3 * sizeof(double)));
        remove(path);
    }
    defo_simulation_destroy(a);
    defo_simulation_destroy(b);
    defo_scene_destroy(sc);
}

int main(void) {
    RUN(test_plasticity_schema);
    RUN(test_valid_scene);
    RUN(test_all_errors);
    RUN(test_syntax_error);
    RUN(test_transform_fixed_spin);
    RUN(test_checkpoint_resume);
    RUN(test_build_errors);
    RUN(test_backward_euler);
    RUN(test_quasistatic);
    RUN(test_quasistatic_loads);
    RUN(test_dynamic_loads);
    RUN(test_plasticity);
    RUN(test_fracture_scene);
    RUN(test_demo_scene);
    RUN(test_separation_speed);
    return test_summary();
}
