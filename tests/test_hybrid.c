/*
 * tests/test_hybrid.c — the hybrid integrator (MMDJ01 §2.6–2.8): rigid
 * motion between impacts, a static analysis at an impact, fragments as new
 * rigid bodies.
 *
 * The scene: a stone plate 0.6 × 0.3 × 0.05 m (E = 1 GPa, ν = 0.25, ρ =
 * 2500, toughness 10 MPa) falling flat at 5 m/s, spinning slowly, onto a
 * ridge (a cylinder collider across it, 5 cm off its middle), no gravity.
 *
 * What each test checks against:
 *   - test_break_conserves: the impact's analysis bends the plate over the
 *     ridge; it breaks across its length over the ridge (where the two
 *     pieces' rest shapes meet lies within an element of the ridge line,
 *     the plane tilted through the thickness by the shear there) into pieces that are new bodies (the plate's id goes
 *     stale); their total mass equals the plate's, their linear momentum the
 *     plate's after the impact (to rounding, relative 1e-13: MMDJ01 eq. 22
 *     with exact mass properties), their angular momentum about the common
 *     centre the plate's (relative 1e-9, parallel axes).
 *   - test_fragment_size: with fragment_size above the plate's size it
 *     does not break: the impact is analysed, no piece is made.
 *   - test_impact_fields: an impact inside a frame shows in the frame's
 *     stress fields (rigid frames around it show 0), equal to those of a
 *     run whose frame ends at the impact's step.
 *   - test_resume_across_break: a checkpoint before the impact, run on
 *     through it, restored (the pieces go, the plate's id is valid again)
 *     and run again gives the same bytes; and 1 vs 2 threads the same.
 */
#include "defo/collision.h"
#include "defo/fracture.h"
#include "defo/integrator.h"
#include "defo/mesh.h"
#include "defo/rigid.h"
#include "defo/world.h"
#include "determinism.h"
#include "test.h"

typedef struct plate_scene {
    defo_world *w;
    defo_collider *ridge;
    defo_body_id plate;
} plate_scene;

static plate_scene make_plate(double fragment_size, double threshold) {
    plate_scene ps = {NULL, NULL, {-1, 0, 0}};
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = 0.6, bd.size[1] = 0.3, bd.size[2] = 0.05;
    bd.origin[0] = -0.3, bd.origin[1] = -0.15, bd.origin[2] = 0.2;
    bd.cells[0] = 12, bd.cells[1] = 6, bd.cells[2] = 2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &ps.w));
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_HYBRID);
    id.restitution = 0.3;
    id.fragment_size = fragment_size;
    CHECK_OK(defo_world_add_integrator(ps.w, &id, NULL));
    defo_fracture_def fd = defo_default_fracture_def();
    fd.threshold = threshold;
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    b.material.youngs_modulus = 1e9;
    b.material.poisson = 0.25;
    b.material.density = 2500;
    b.fracture = &fd;
    b.integrator = 0;
    b.name = "plate";
    b.velocity[2] = -5;
    b.angular_velocity[0] = 0.3;
    CHECK_OK(defo_world_add_body(ps.w, &b, &ps.plate));
    defo_shape_def sh = defo_default_shape_def();
    sh.type = DEFO_SHAPE_CYLINDER;
    sh.center[0] = 0.05, sh.center[2] = 0.1;
    sh.axis[0] = 0, sh.axis[1] = 1, sh.axis[2] = 0;
    sh.radius = 0.05;
    sh.half_length = 1;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &sh;
    CHECK_OK(defo_collider_create(&cd, &ps.ridge));
    CHECK_OK(defo_world_add_collider(ps.w, ps.ridge));
    defo_mesh_destroy(m);
    return ps;
}

static void free_plate(plate_scene *ps) {
    defo_world_destroy(ps->w);
    defo_collider_destroy(ps->ridge);
}

/* Mass, momentum and angular momentum about the centre of the live bodies. */
static void totals(defo_world *w, double *M, double P[3], double L[3], int *live) {
    double c[3] = {0, 0, 0};
    *M = 0, *live = 0;
    memset(P, 0, 3 * sizeof(double));
    memset(L, 0, 3 * sizeof(double));
    defo_rigid_body rb;
    for (int i = 0; i < defo_world_num_bodies(w); i++) {
        const defo_body_id id = defo_world_body(w, i);
        if (!defo_body_is_valid(w, id)) continue;
        CHECK_OK(defo_body_rigid(w, id, &rb));
        (*live)++;
        *M += rb.mass;
        for (int k = 0; k < 3; k++)
            c[k] += rb.mass * rb.center[k], P[k] += rb.mass * rb.velocity[k];
    }
    for (int k = 0; k < 3; k++) c[k] /= *M;
    for (int i = 0; i < defo_world_num_bodies(w); i++) {
        const defo_body_id id = defo_world_body(w, i);
        if (!defo_body_is_valid(w, id)) continue;
        CHECK_OK(defo_body_rigid(w, id, &rb));
        const double r[3] = {rb.center[0] - c[0], rb.center[1] - c[1], rb.center[2] - c[2]};
        const double *v = rb.velocity;
        L[0] += rb.momentum[0] + rb.mass * (r[1] * v[2] - r[2] * v[1]);
        L[1] += rb.momentum[1] + rb.mass * (r[2] * v[0] - r[0] * v[2]);
        L[2] += rb.momentum[2] + rb.mass * (r[0] * v[1] - r[1] * v[0]);
    }
}

static double vdiff(const double a[3], const double b[3]) {
    return sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                (a[2] - b[2]) * (a[2] - b[2]));
}
static double vnorm(const double a[3]) {
    return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

static void test_break_conserves(void) {
    plate_scene ps = make_plate(0, 1e7);
    double M0 = 0, P0[3], L0[3], M1 = 0, P1[3], L1[3];
    int live = 0, frame_broken = -1, impacts = 0;
    for (int f = 0; f < 40 && frame_broken < 0; f++) {
        totals(ps.w, &M0, P0, L0, &live);
        CHECK_OK(defo_world_step(ps.w, 1.0 / 240));
        defo_step_stats st;
        defo_world_stats(ps.w, &st);
        impacts += st.impacts;
        if (st.fragments > 0) frame_broken = f;
    }
    totals(ps.w, &M1, P1, L1, &live);
    /* where the pieces meet: the largest rest x of the one on the left and
     * the smallest of the other */
    double left_max = -INFINITY, right_min = INFINITY;
    for (int i = 0; i < defo_world_num_bodies(ps.w); i++) {
        const defo_body_id id = defo_world_body(ps.w, i);
        if (!defo_body_is_valid(ps.w, id)) continue;
        const defo_mesh *m = defo_body_mesh(ps.w, id);
        double lo = INFINITY, hi = -INFINITY;
        for (defo_index k = 0; k < m->num_nodes; k++)
            lo = fmin(lo, m->x[3 * k]), hi = fmax(hi, m->x[3 * k]);
        if (lo < -0.299) left_max = hi;
        if (hi > 0.299) right_min = lo;
    }
    const double dm = fabs(M1 - M0) / M0, dp = vdiff(P1, P0) / vnorm(P0),
                 dl = vdiff(L1, L0) / vnorm(L0);
    TEST_REPORT("broke in frame %d (%d impact analysed) into %d bodies meeting at x = %.4f / "
                "%.4f (the ridge at 0.05); mass %.2e, momentum %.2e, angular momentum about the "
                "centre %.2e (relative changes)",
                frame_broken, impacts, live, left_max, right_min, dm, dp, dl);
    CHECK(frame_broken > 0 && impacts >= 1);
    CHECK(live >= 2);
    CHECK(!defo_body_is_valid(ps.w, ps.plate)); /* MMDJ01: the old body is deleted */
    /* the crack across the plate over the ridge, within an element (5 cm) */
    CHECK(live == 2);
    CHECK(fabs(left_max - 0.05) <= 0.05 + 1e-12 && fabs(right_min - 0.05) <= 0.05 + 1e-12);
    CHECK(dm <= 1e-14);
    CHECK(dp <= 1e-13);
    CHECK(dl <= 1e-9);
    free_plate(&ps);
}

static void test_fragment_size(void) {
    plate_scene ps = make_plate(1.0, 1e7);
    int impacts = 0, fragments = 0;
    for (int f = 0; f < 40; f++) {
        CHECK_OK(defo_world_step(ps.w, 1.0 / 240));
        defo_step_stats st;
        defo_world_stats(ps.w, &st);
        impacts += st.impacts, fragments += st.fragments;
    }
    TEST_REPORT("fragment_size 1 m: %d impacts, %d pieces", impacts, fragments);
    CHECK(fragments == 0);
    CHECK(defo_body_is_valid(ps.w, ps.plate));
    free_plate(&ps);
}

/* The largest von Mises stress of the body's frame fields [Pa]. */
static double frame_von_mises(defo_world *w, defo_body_id id) {
    const defo_index ne = defo_body_mesh(w, id)->num_elems;
    double *vm = calloc((size_t)ne, sizeof *vm), top = 0;
    defo_force_fields ff = {0};
    ff.von_mises = vm;
    CHECK_OK(defo_body_fields(w, id, &ff));
    for (defo_index e = 0; e < ne; e++) top = vm[e] > top ? vm[e] : top;
    free(vm);
    return top;
}

/* An impact in the middle of a frame shows in that frame's stress fields:
 * the analysis' shape is held for the frame, where the steps after the
 * impact put the body back at its rigid shape.  Frames of 1/30 s (8 hybrid
 * steps each), the plate breakable but too tough to crack (threshold 1e12
 * Pa).  Independent answers: before the impact and in the frames after it
 * the plate moves rigidly, so its fields are 0 to rounding; the impact
 * frame's largest von Mises stress equals that of a run in frames of one
 * step (1/240 s), whose impact frame ends at the analysis itself. */
static void test_impact_fields(void) {
    double top[2] = {0, 0}, before = 0, after = 0;
    int frame[2] = {-1, -1};
    for (int run = 0; run < 2; run++) {
        plate_scene ps = make_plate(0, 1e12);
        const int per = run ? 1 : 8;
        for (int f = 0; f < 64 / per; f++) {
            CHECK_OK(defo_world_step(ps.w, per / 240.0));
            defo_step_stats st;
            defo_world_stats(ps.w, &st);
            const double vm = frame_von_mises(ps.w, ps.plate);
            if (st.impacts && frame[run] < 0)
                frame[run] = f, top[run] = vm;
            else if (run == 0 && frame[run] < 0)
                before = fmax(before, vm);
            else if (run == 0 && !st.impacts)
                after = fmax(after, vm);
        }
        free_plate(&ps);
    }
    TEST_REPORT("first impact in frame %d of 1/30 s: von Mises up to %.6g Pa (frames of one step: "
                "frame %d, %.6g Pa); rigid frames before %.3g, after %.3g Pa",
                frame[0], top[0], frame[1], top[1], before, after);
    CHECK(frame[0] >= 0 && frame[1] >= 0);
    CHECK(top[0] > 1e5);
    CHECK(fabs(top[0] - top[1]) <= 1e-9 * top[1]);
    CHECK(before < 1e-6 * top[0] && after < 1e-6 * top[0]);
}

static void resume_bytes(void *ctx, void *out) {
    (void)ctx;
    plate_scene ps = make_plate(0, 1e7);
    uint64_t *h = out;
    void *data = NULL;
    size_t n = 0;
    for (int f = 0; f < 12; f++) (void)defo_world_step(ps.w, 1.0 / 240);
    if (defo_world_serialize(ps.w, 9, &data, &n) == DEFO_OK) {
        uint64_t s = 1469598103934665603ull;
        for (size_t k = 0; k < n; k++) s = (s ^ ((unsigned char *)data)[k]) * 1099511628211ull;
        h[0] = s;
        h[1] = (uint64_t)defo_world_num_bodies(ps.w);
    }
    defo_free(data);
    free_plate(&ps);
}

static void test_resume_across_break(void) {
    plate_scene ps = make_plate(0, 1e7);
    for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(ps.w, 1.0 / 240));
    void *s0 = NULL, *s1 = NULL, *s2 = NULL;
    size_t n0 = 0, n1 = 0, n2 = 0;
    CHECK_OK(defo_world_serialize(ps.w, 9, &s0, &n0));
    for (int f = 3; f < 12; f++) CHECK_OK(defo_world_step(ps.w, 1.0 / 240));
    const int bodies = defo_world_num_bodies(ps.w);
    CHECK_OK(defo_world_serialize(ps.w, 9, &s1, &n1));
    CHECK_OK(defo_world_deserialize(ps.w, 9, s0, n0));
    const int back = defo_world_num_bodies(ps.w), valid = defo_body_is_valid(ps.w, ps.plate);
    for (int f = 3; f < 12; f++) CHECK_OK(defo_world_step(ps.w, 1.0 / 240));
    CHECK_OK(defo_world_serialize(ps.w, 9, &s2, &n2));
    const int same = n1 == n2 && !memcmp(s1, s2, n1);
    if (!same && n1 == n2)
        for (size_t q = 0; q < n1; q++)
            if (((unsigned char *)s1)[q] != ((unsigned char *)s2)[q]) {
                TEST_REPORT("first difference at byte %zu of %zu", q, n1);
                break;
            }
    if (n1 != n2) TEST_REPORT("sizes %zu vs %zu", n1, n2);
    /* into a world that never broke: the pieces are made from the file and
     * go on as in the first world */
    for (int f = 12; f < 20; f++) CHECK_OK(defo_world_step(ps.w, 1.0 / 240));
    void *s3 = NULL, *s4 = NULL;
    size_t n3 = 0, n4 = 0;
    CHECK_OK(defo_world_serialize(ps.w, 9, &s3, &n3));
    plate_scene fresh = make_plate(0, 1e7);
    CHECK_OK(defo_world_deserialize(fresh.w, 9, s1, n1));
    for (int f = 12; f < 20; f++) CHECK_OK(defo_world_step(fresh.w, 1.0 / 240));
    CHECK_OK(defo_world_serialize(fresh.w, 9, &s4, &n4));
    const int same_fresh = n3 == n4 && !memcmp(s3, s4, n3);
    TEST_REPORT("%d bodies after the break; restored before it: %d (plate valid: %d); run again "
                "%s; loaded into a fresh world %s",
                bodies, back, valid, same ? "identical" : "DIFFERS",
                same_fresh ? "identical" : "DIFFERS");
    CHECK(bodies > 1 && back == 1 && valid);
    CHECK(same && same_fresh);
    defo_free(s0);
    defo_free(s1);
    defo_free(s2);
    defo_free(s3);
    defo_free(s4);
    free_plate(&fresh);
    free_plate(&ps);
    uint64_t h[2];
    CHECK(test_bitwise_same_for_threads(resume_bytes, NULL, sizeof h, 2));
}

int main(void) {
    RUN(test_break_conserves);
    RUN(test_fragment_size);
    RUN(test_impact_fields);
    RUN(test_resume_across_break);
    return test_summary();
}
