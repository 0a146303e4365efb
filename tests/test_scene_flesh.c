/*
 * tests/test_scene_flesh.c — flesh in scene files (docs/scene-format.md
 * "skeleton", "material.fibres", "activation", "fixed[].bone",
 * "colliders[].bone"): a scene with a BVH skeleton, bone-bound node sets, a
 * bone collider and an activated muscle builds and runs; every broken input
 * is refused with its JSON path (and for a BVH file its file:line).
 *
 * References: the skeleton's own bone transforms (defo/skeleton.h, checked
 * against an independent chain in test_skeleton.c) for the bound nodes;
 * the activation schedule's level at the frame times by hand.
 */
#include "defo/scene.h"
#include "defo/skeleton.h"
#include "defo/world.h"
#include "test.h"

#include <stdio.h>
#include <string.h>

static const char arm_bvh[] = "HIERARCHY\nROOT upper\n{\n  OFFSET 0 0 0\n"
                              "  CHANNELS 3 Zrotation Xrotation Yrotation\n"
                              "  JOINT fore\n  {\n    OFFSET 30 0 0\n"
                              "    CHANNELS 3 Zrotation Xrotation Yrotation\n"
                              "    End Site\n    {\n      OFFSET 30 0 0\n    }\n  }\n}\n"
                              "MOTION\nFrames: 3\nFrame Time: 0.1\n"
                              "0 0 0 0 0 0\n0 0 0 20 0 0\n0 0 0 40 0 0\n";

static void write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

/* Parse text (files relative to the test folder); the status, errors kept. */
static defo_status parse(const char *text, defo_scene **s, defo_scene_errors *e) {
    return defo_scene_parse(text, strlen(text), "scene.json", DEFO_TEST_TMP, s, e);
}

/* One error line containing want. */
static int has_error(const defo_scene_errors *e, const char *want) {
    for (int i = 0; i < e->count; i++)
        if (strstr(e->lines[i], want)) return 1;
    return 0;
}

static const char *good_scene =
    "{\"skeleton\": {\"file\": \"flesh_arm.bvh\", \"transform\": {\"scale\": 0.01}},"
    " \"gravity\": [0, 0, 0], \"duration\": {\"fps\": 10, \"frames\": 2},"
    " \"integrator\": {\"type\": \"quasistatic\"},"
    " \"bodies\": [{\"name\": \"arm\","
    "   \"generator\": {\"type\": \"box\", \"center\": [0.3, 0, 0], \"size\": [0.6, 0.08, 0.08],"
    "                  \"cells\": [15, 2, 2]},"
    "   \"material\": {\"youngs\": 5e4, \"poisson\": 0.4,"
    "     \"fibres\": {\"direction\": [1, 0, 0],"
    "                  \"passive\": {\"curve\": \"exponential\", \"stress\": 1e3, \"rate\": 5},"
    "                  \"active\": {\"max_stress\": 2e4}}},"
    "   \"activation\": [{\"keyframes\": [[0, 0], [0.2, 1]]},"
    "                   {\"box\": {\"min\": [0.5, -1, -1], \"max\": [1, 1, 1]}, \"level\": 0.25}],"
    "   \"fixed\": [{\"box\": {\"min\": [-1, -1, -1], \"max\": [0.16, 1, 1]}, \"bone\": \"upper\"},"
    "             {\"box\": {\"min\": [0.44, -1, -1], \"max\": [1, 1, 1]}, \"bone\": \"fore\"}]}],"
    " \"colliders\": [{\"type\": \"capsule\", \"center\": [0.52, 0, 0], \"axis\": [1, 0, 0],"
    "                  \"radius\": 0.01, \"half_length\": 0.06, \"bone\": \"fore\"}]}";

/* The scene builds and runs: bound nodes at the bone transforms, activation
 * at the scheduled levels, the collider following its bone. */
static void test_scene_runs(void) {
    write_file(DEFO_TEST_TMP "/flesh_arm.bvh", arm_bvh);
    defo_scene *s = NULL;
    defo_scene_errors e;
    CHECK_OK(parse(good_scene, &s, &e));
    for (int i = 0; i < e.count; i++) fprintf(stderr, "%s\n", e.lines[i]);
    defo_scene_errors_free(&e);
    if (!s) return;
    defo_simulation *sim = NULL;
    CHECK_OK(defo_simulation_create(s, &sim));
    if (!sim) {
        defo_scene_destroy(s);
        return;
    }
    defo_world *w = defo_simulation_world(sim);
    const defo_body_id id = defo_simulation_body(sim, 0);
    const defo_mesh *m = defo_body_mesh(w, id);
    /* the skeleton the scene holds, read again for the reference */
    defo_skeleton_place pl = defo_default_skeleton_place();
    pl.scale = 0.01;
    defo_skeleton *sk = NULL;
    CHECK_OK(defo_skeleton_read_bvh(DEFO_TEST_TMP "/flesh_arm.bvh", &pl, &sk));
    double worst = 0;
    for (int f = 1; f <= 2 && sk; f++) {
        CHECK_OK(defo_simulation_step_frame(sim));
        const double t = 0.1 * f;
        double R[2][9], T[2][3];
        for (int b = 0; b < 2; b++) defo_skeleton_transform(sk, b, t, R[b], T[b], NULL, NULL);
        const double *x = defo_body_positions(w, id);
        for (defo_index i = 0; i < m->num_nodes; i++) {
            const double *X = m->x + 3 * i;
            const int b = X[0] <= 0.16 + 1e-9 ? 0 : X[0] >= 0.44 - 1e-9 ? 1 : -1;
            if (b < 0) continue;
            for (int k = 0; k < 3; k++) {
                const double want =
                    R[b][3 * k] * X[0] + R[b][3 * k + 1] * X[1] + R[b][3 * k + 2] * X[2] + T[b][k];
                worst = fmax(worst, fabs(x[3 * i + k] - want));
            }
        }
        /* the schedule 0 → 1 over 0.2 s on the body, 0.25 on x ≥ 0.5 */
        const double *act = defo_body_activation(w, id);
        double lo = 1, hi = 0;
        for (defo_index el = 0; el < m->num_elems; el++)
            lo = fmin(lo, act[el]), hi = fmax(hi, act[el]);
        CHECK_NEAR(lo, fmin(0.25, 5 * t), 1e-12);
        CHECK_NEAR(hi, fmax(0.25, 5 * t), 1e-12);
    }
    TEST_REPORT("bound nodes vs the bone transforms: worst %.2e m", worst);
    CHECK(worst < 1e-12);
    /* the collider follows the fore bone */
    const defo_collider_def *cd = defo_scene_collider(s, 0);
    CHECK(cd && cd->motion.skeleton != NULL && cd->motion.bone == 1);
    defo_skeleton_destroy(sk);
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
}

/* The skeleton is physics: it changes the hash. */
static void test_hash(void) {
    write_file(DEFO_TEST_TMP "/flesh_arm.bvh", arm_bvh);
    defo_scene *a = NULL, *b = NULL;
    CHECK_OK(parse(good_scene, &a, NULL));
    char text[8192];
    snprintf(text, sizeof text, "%s", good_scene);
    char *at = strstr(text, "\"scale\": 0.01");
    if (at) at[11] = '2'; /* 0.02 */
    CHECK_OK(parse(text, &b, NULL));
    CHECK(a && b && defo_scene_hash(a) != defo_scene_hash(b));
    defo_scene_destroy(a);
    defo_scene_destroy(b);
}

/* Broken inputs: each refused, naming where. */
static void test_bad_scenes(void) {
    write_file(DEFO_TEST_TMP "/flesh_arm.bvh", arm_bvh);
    write_file(DEFO_TEST_TMP "/flesh_cut.bvh",
               "HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Zrotation\n}\nMOTION\nFrames: 3\n"
               "Frame Time: 0.1\n0\n1\n");
    static const char *const body = "\"generator\": {\"type\": \"box\"}";
    static const struct {
        const char *skeleton, *body_extra, *material_extra, *colliders, *expect;
    } cases[] = {
        {NULL, "", ", \"fibres\": {\"direction\": [0, 0, 0], \"passive\": {}}", NULL,
         "bodies[0].material.fibres.direction: the direction is zero"},
        {NULL, ", \"activation\": 1.5",
         ", \"fibres\": {\"direction\": [1, 0, 0], \"active\": "
         "{\"max_stress\": 1e4}}",
         NULL, "bodies[0].activation: 1.5 is not in [0, 1]"},
        {NULL, ", \"activation\": {\"keyframes\": [[0, 0], [1, 2]]}",
         ", \"fibres\": {\"direction\": [1, 0, 0], \"active\": {\"max_stress\": 1e4}}", NULL,
         "bodies[0].activation.keyframes[1][1]: level 2 is not in [0, 1]"},
        {NULL, ", \"activation\": 0.5", "", NULL,
         "bodies[0].activation: the material has no active fibre term"},
        {"{\"file\": \"flesh_cut.bvh\"}", "", "", NULL,
         "skeleton.file: " DEFO_TEST_TMP "/flesh_cut.bvh:11: truncated: frame 2 of 3"},
        {"{\"file\": \"flesh_arm.bvh\"}",
         ", \"fixed\": [{\"box\": {\"min\": [0, 0, 0], \"max\": [1, 1, 1]}, \"bone\": \"foer\"}]",
         "", NULL,
         "bodies[0].fixed[0].bone: 'foer' is not a bone of the skeleton (bones: upper, "
         "fore)"},
        {NULL, ", \"fixed\": [{\"tag\": 1, \"bone\": \"fore\"}]", "", NULL,
         "bodies[0].fixed[0].bone: 'fore': the scene has no \"skeleton\""},
        {"{\"file\": \"flesh_arm.bvh\"}", "", "",
         "[{\"type\": \"sphere\", \"bone\": \"upper\", \"motion\": {\"velocity\": [1, 0, 0]}}]",
         "colliders[0].bone: give \"bone\" or \"motion\", not both"},
        {"{\"joints\": [{\"name\": \"a\"}, {\"name\": \"b\", \"parent\": \"c\"}]}", "", "", NULL,
         "skeleton.joints[1].parent: 'c' is not an earlier joint"},
        {"{\"file\": \"flesh_arm.bvh\", \"joints\": []}", "", "", NULL,
         "skeleton: give \"file\" (a .bvh motion capture) or \"joints\", not both"},
        {NULL, "", ", \"model\": \"transversely_isotropic\"", NULL,
         "bodies[0].material.model: not a model: a transversely isotropic material"},
        {NULL, ", \"formulation\": \"corotated\"",
         ", \"fibres\": {\"direction\": [1, 0, 0], "
         "\"passive\": {}}",
         NULL, "bodies[0].formulation: 'corotated' cannot carry a fibre term"},
        {NULL, ", \"material_changes\": [{\"time\": 1, \"material\": {\"fibres\": {}}}]", "", NULL,
         "bodies[0].material_changes[0].material.fibres: not in material_changes"},
        {NULL, "", ", \"fibres\": {\"passive\": {\"curve\": \"exponential\"}}", NULL,
         "bodies[0].material.fibres: a fibre term needs its directions"},
        {NULL, "", ", \"fibres\": {\"field\": \"fibre\", \"passive\": {}}", NULL,
         "bodies[0].material.fibres.field: 'fibre': a field is read from the body's \"mesh\""},
        {NULL, "",
         ", \"fibres\": {\"direction\": [1, 0, 0], \"active\": {\"max_stress\": 1e4, "
         "\"width\": 1}}",
         NULL, "bodies[0].material.fibres.active.width: 1 is not in (0, 1)"},
        {NULL, "", ", \"fibres\": {\"direction\": [1, 0, 0], \"passive\": {\"curve\": \"expo\"}}",
         NULL,
         "bodies[0].material.fibres.passive.curve: unknown value 'expo' (one of: "
         "exponential, polynomial)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[4096], sk[512] = "", col[512] = "";
        if (cases[i].skeleton) snprintf(sk, sizeof sk, "\"skeleton\": %s, ", cases[i].skeleton);
        if (cases[i].colliders)
            snprintf(col, sizeof col, ", \"colliders\": %s", cases[i].colliders);
        snprintf(text, sizeof text, "{%s\"bodies\": [{%s, \"material\": {\"youngs\": 1e5%s}%s}]%s}",
                 sk, body, cases[i].material_extra, cases[i].body_extra, col);
        defo_scene *s = NULL;
        defo_scene_errors e;
        const defo_status st = parse(text, &s, &e);
        CHECK_MSG(st == DEFO_ERR_INVALID_ARGUMENT && !s, "case %zu: status %d", i, (int)st);
        CHECK_MSG(has_error(&e, cases[i].expect), "case %zu: wanted '%s', got %d lines: %s", i,
                  cases[i].expect, e.count, e.count ? e.lines[0] : "");
        defo_scene_errors_free(&e);
        defo_scene_destroy(s);
    }
}

/* A field the mesh file does not have: refused when the world is built,
 * naming the body, the key and the arrays the file does have. */
static void test_missing_field(void) {
    write_file(DEFO_TEST_TMP "/flesh_tet.vtu",
               "<VTKFile type=\"UnstructuredGrid\" version=\"1.0\"><UnstructuredGrid>"
               "<Piece NumberOfPoints=\"4\" NumberOfCells=\"1\"><Points><DataArray "
               "type=\"Float64\" NumberOfComponents=\"3\" format=\"ascii\">0 0 0 1 0 0 0 1 0 0 0 "
               "1</DataArray></Points><Cells><DataArray type=\"Int64\" Name=\"connectivity\" "
               "format=\"ascii\">0 1 2 3</DataArray><DataArray type=\"Int64\" Name=\"offsets\" "
               "format=\"ascii\">4</DataArray><DataArray type=\"UInt8\" Name=\"types\" "
               "format=\"ascii\">10</DataArray></Cells><CellData><DataArray type=\"Float64\" "
               "Name=\"dir\" NumberOfComponents=\"3\" format=\"ascii\">0 0 1</DataArray>"
               "</CellData></Piece></UnstructuredGrid></VTKFile>\n");
    const char *text = "{\"bodies\": [{\"mesh\": \"flesh_tet.vtu\", \"material\": {\"fibres\": "
                       "{\"field\": \"fibre\", \"passive\": {}}}}]}";
    defo_scene *s = NULL;
    CHECK_OK(parse(text, &s, NULL));
    defo_simulation *sim = NULL;
    CHECK(s && defo_simulation_create(s, &sim) == DEFO_ERR_INVALID_ARGUMENT && !sim);
    CHECK_MSG(strstr(defo_last_error(), "bodies[0]") &&
                  strstr(defo_last_error(), "'fibre' is not a 3-component cell or point array") &&
                  strstr(defo_last_error(), "'dir' (3)"),
              "%s", defo_last_error());
    defo_scene_destroy(s);
    /* the right name builds: the file's cell array along z */
    text = "{\"bodies\": [{\"mesh\": \"flesh_tet.vtu\", \"material\": {\"fibres\": "
           "{\"field\": \"dir\", \"passive\": {}}}}]}";
    CHECK_OK(parse(text, &s, NULL));
    CHECK(s && defo_simulation_create(s, &sim) == DEFO_OK && sim);
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
}

/* A run resumed from a checkpoint equals the uninterrupted one bit for bit:
 * bones and activation are functions of time. */
static void test_resume(void) {
    write_file(DEFO_TEST_TMP "/flesh_arm.bvh", arm_bvh);
    defo_scene *s = NULL;
    CHECK_OK(parse(good_scene, &s, NULL));
    if (!s) return;
    defo_simulation *a = NULL, *b = NULL;
    CHECK_OK(defo_simulation_create(s, &a));
    CHECK_OK(defo_simulation_create(s, &b));
    if (!a || !b) return;
    const char *ck = DEFO_TEST_TMP "/flesh_resume.ckpt";
    for (int f = 0; f < 3; f++) CHECK_OK(defo_simulation_step_frame(a));
    CHECK_OK(defo_simulation_step_frame(b));
    CHECK_OK(defo_simulation_save_checkpoint(b, ck));
    defo_simulation_destroy(b);
    b = NULL;
    CHECK_OK(defo_simulation_create(s, &b));
    CHECK_OK(defo_simulation_load_checkpoint(b, ck));
    for (int f = 0; f < 2; f++) CHECK_OK(defo_simulation_step_frame(b));
    const defo_body_id ia = defo_simulation_body(a, 0), ib = defo_simulation_body(b, 0);
    const defo_index n = defo_body_num_nodes(defo_simulation_world(a), ia);
    CHECK(memcmp(defo_body_positions(defo_simulation_world(a), ia),
                 defo_body_positions(defo_simulation_world(b), ib),
                 3 * (size_t)n * sizeof(double)) == 0);
    defo_simulation_destroy(a);
    defo_simulation_destroy(b);
    defo_scene_destroy(s);
}

int main(void) {
    RUN(test_scene_runs);
    RUN(test_hash);
    RUN(test_bad_scenes);
    RUN(test_missing_field);
    RUN(test_resume);
    return test_summary();
}
