/*
 * tests/test_skeleton.c — animated skeletons (defo/skeleton.h), BVH motion
 * capture, bones as motions (defo/geometry.h) and skeleton-driven flesh
 * (TSIF05 §11).
 *
 * References used, per test:
 *   - joint transforms computed independently in this file from the BVH
 *     numbers (Euler matrices R_z R_x R_y multiplied out, the chain
 *     G_shoulder G_elbow and the bind pose inverted by hand): the
 *     skeleton's bone transforms at the frame times to 1e-13;
 *   - spherical interpolation: halfway between keys of 30° and 60° about z
 *     the rotation is 45°; the joint angle grows linearly in time;
 *   - central differences in time for the velocities Ṙ, Ṫ (and 0 at the
 *     keys of the smooth interpolation);
 *   - malformed BVH files, each kept here, refused with file:line and the
 *     reason; bad joint definitions named;
 *   - a BVH drives a two-bone arm through the world (quasistatic): the
 *     bound nodes sit at M(t) X of the independent transform to 1e-12 every
 *     frame, and at 90° of elbow flexion no element is inverted while the
 *     flesh between the bones has bent; stepped by backward Euler the bound
 *     nodes are on the transforms as well;
 *   - penalty contact against a bone's shape: a capsule collider following
 *     a keyframed bone pushes a soft block up by its travel, no free node
 *     left inside beyond the penalty depth.
 */
#include "defo/collision.h"
#include "defo/geometry.h"
#include "defo/mesh.h"
#include "defo/skeleton.h"
#include "defo/world.h"
#include "test.h"

#include <string.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* A two-bone arm in centimetres: the shoulder translates up (y) and turns
 * about z a little, the elbow flexes 0, 30, 60, 90 degrees about z. */
static const char arm_bvh[] = "HIERARCHY\n"
                              "ROOT shoulder\n"
                              "{\n"
                              "\tOFFSET 0 0 0\n"
                              "\tCHANNELS 6 Xposition Yposition Zposition Zrotation Xrotation "
                              "Yrotation\n"
                              "\tJOINT elbow\n"
                              "\t{\n"
                              "\t\tOFFSET 30 0 0\n"
                              "\t\tCHANNELS 3 Zrotation Xrotation Yrotation\n"
                              "\t\tEnd Site\n"
                              "\t\t{\n"
                              "\t\t\tOFFSET 30 0 0\n"
                              "\t\t}\n"
                              "\t}\n"
                              "}\n"
                              "MOTION\n"
                              "Frames: 4\n"
                              "Frame Time: 0.1\n"
                              "0 0 0 0 0 0 0 0 0\n"
                              "0 1 0 2 0 0 30 0 0\n"
                              "0 2 0 4 0 0 60 0 0\n"
                              "0 3 0 6 0 0 90 0 0\n";

/* the numbers above, for the independent transform */
static const double shoulder_y[4] = {0, 1, 2, 3}, shoulder_z[4] = {0, 2, 4, 6},
                    elbow_z[4] = {0, 30, 60, 90};

static void rotz(double deg, double R[9]) {
    const double a = deg * M_PI / 180, c = cos(a), s = sin(a);
    const double r[9] = {c, -s, 0, s, c, 0, 0, 0, 1};
    memcpy(R, r, sizeof r);
}

/* Bone transform of frame k in world metres (placement: scale 0.01, then a
 * translation d): shoulder G_s = (Rz(θs), (0, y, 0)), elbow G_e = G_s ·
 * (Rz(θe), (30, 0, 0)); bind G_s = I, G_e = (I, (30, 0, 0)).  World
 * x = d + 0.01 G G_b⁻¹ ((x − d)/0.01). */
static void expected(int bone, int k, const double d[3], const double X[3], double x[3]) {
    double Rs[9], Re[9], R[9];
    rotz(shoulder_z[k], Rs);
    rotz(elbow_z[k], Re);
    const double Ts[3] = {0, shoulder_y[k], 0};
    double y[3] = {(X[0] - d[0]) / 0.01, (X[1] - d[1]) / 0.01, (X[2] - d[2]) / 0.01};
    if (bone == 1) { /* G_b⁻¹ of the elbow, then its local rotation and offset */
        y[0] -= 30;
        double z[3];
        for (int i = 0; i < 3; i++)
            z[i] = Re[3 * i] * y[0] + Re[3 * i + 1] * y[1] + Re[3 * i + 2] * y[2];
        y[0] = z[0] + 30, y[1] = z[1], y[2] = z[2];
    }
    memcpy(R, Rs, sizeof R);
    for (int i = 0; i < 3; i++)
        x[i] = d[i] + 0.01 * (R[3 * i] * y[0] + R[3 * i + 1] * y[1] + R[3 * i + 2] * y[2] + Ts[i]);
}

static defo_skeleton *arm(const double d[3], defo_interpolation interp) {
    defo_skeleton_place pl = defo_default_skeleton_place();
    pl.scale = 0.01;
    memcpy(pl.translate, d, 3 * sizeof(double));
    pl.interpolation = interp;
    defo_skeleton *sk = NULL;
    CHECK_OK(defo_skeleton_parse_bvh(arm_bvh, sizeof arm_bvh - 1, "arm.bvh", &pl, &sk));
    return sk;
}

/* Bone transforms at the frame times against the independent ones. */
static void test_bvh_transforms(void) {
    const double d[3] = {0.5, -0.2, 1.0};
    defo_skeleton *sk = arm(d, DEFO_INTERP_LINEAR);
    if (!sk) return;
    CHECK(defo_skeleton_num_bones(sk) == 2);
    CHECK(defo_skeleton_find(sk, "elbow") == 1 && defo_skeleton_parent(sk, 1) == 0);
    CHECK(defo_skeleton_find(sk, "wrist") == -1);
    CHECK(!strcmp(defo_skeleton_bone_name(sk, 0), "shoulder"));
    CHECK_NEAR(defo_skeleton_duration(sk), 0.3, 1e-15);
    test_rng r = {42};
    double worst = 0;
    for (int k = 0; k < 4; k++)
        for (int b = 0; b < 2; b++) {
            double R[9], T[3];
            defo_skeleton_transform(sk, b, 0.1 * k, R, T, NULL, NULL);
            for (int n = 0; n < 10; n++) {
                double X[3], x[3], e[3];
                for (int i = 0; i < 3; i++) X[i] = d[i] + test_range(&r, -0.3, 0.6);
                for (int i = 0; i < 3; i++)
                    x[i] = R[3 * i] * X[0] + R[3 * i + 1] * X[1] + R[3 * i + 2] * X[2] + T[i];
                expected(b, k, d, X, e);
                for (int i = 0; i < 3; i++) worst = fmax(worst, fabs(x[i] - e[i]));
            }
        }
    /* the elbow joint's world position: the shoulder's transform of (30, 0, 0) cm */
    double p[3], e[3];
    defo_skeleton_joint_position(sk, 1, 0.3, p);
    const double Xe[3] = {d[0] + 0.3, d[1], d[2]};
    expected(0, 3, d, Xe, e);
    for (int i = 0; i < 3; i++) worst = fmax(worst, fabs(p[i] - e[i]));
    TEST_REPORT("bone transforms vs the independent chain: worst %.2e m", worst);
    CHECK(worst < 1e-13);
    defo_skeleton_destroy(sk);
}

/* Slerp halfway, the angle linear in time, velocities by central
 * differences; the smooth interpolation rests at the keys. */
static void test_interpolation_and_velocity(void) {
    const double d[3] = {0, 0, 0};
    for (int smooth = 0; smooth <= 1; smooth++) {
        defo_skeleton *sk = arm(d, smooth ? DEFO_INTERP_SMOOTH : DEFO_INTERP_LINEAR);
        if (!sk) return;
        /* the elbow's rotation relative to the shoulder: R_s⁻¹ R_e */
        double Rs[9], Re[9];
        defo_skeleton_transform(sk, 0, 0.15, Rs, NULL, NULL, NULL);
        defo_skeleton_transform(sk, 1, 0.15, Re, NULL, NULL, NULL);
        double c = 0, s = 0; /* (Rsᵀ Re) about z: [0][0], [1][0] */
        for (int i = 0; i < 3; i++) c += Rs[3 * i] * Re[3 * i], s += Rs[3 * i + 1] * Re[3 * i];
        CHECK_NEAR(atan2(s, c) * 180 / M_PI, 45, 1e-12);
        if (!smooth) {
            defo_skeleton_transform(sk, 1, 0.125, Re, NULL, NULL, NULL);
            defo_skeleton_transform(sk, 0, 0.125, Rs, NULL, NULL, NULL);
            c = 0, s = 0;
            for (int i = 0; i < 3; i++) c += Rs[3 * i] * Re[3 * i], s += Rs[3 * i + 1] * Re[3 * i];
            CHECK_NEAR(atan2(s, c) * 180 / M_PI, 37.5, 1e-12);
        }
        double worst = 0;
        for (int b = 0; b < 2; b++)
            for (double t = 0.013; t < 0.3; t += 0.037) {
                const double h = 1e-6;
                double R[9], T[3], Rd[9], Td[3], Rp[9], Tp[3], Rm[9], Tm[3];
                defo_skeleton_transform(sk, b, t, R, T, Rd, Td);
                defo_skeleton_transform(sk, b, t + h, Rp, Tp, NULL, NULL);
                defo_skeleton_transform(sk, b, t - h, Rm, Tm, NULL, NULL);
                for (int i = 0; i < 9; i++)
                    worst = fmax(worst, fabs((Rp[i] - Rm[i]) / (2 * h) - Rd[i]));
                for (int i = 0; i < 3; i++)
                    worst = fmax(worst, fabs((Tp[i] - Tm[i]) / (2 * h) - Td[i]) / 0.1);
            }
        double rest = 0;
        if (smooth)
            for (int k = 0; k < 4; k++) {
                double Rd[9], Td[3];
                defo_skeleton_transform(sk, 1, 0.1 * k, NULL, NULL, Rd, Td);
                for (int i = 0; i < 9; i++) rest = fmax(rest, fabs(Rd[i]));
                for (int i = 0; i < 3; i++) rest = fmax(rest, fabs(Td[i]));
            }
        TEST_REPORT("%s: velocity vs central differences %.2e%s", smooth ? "smooth" : "linear",
                    worst, smooth ? "" : "");
        CHECK(worst < 1e-6);
        if (smooth) CHECK_MSG(rest < 1e-12, "rate at the keys %g", rest);
        defo_skeleton_destroy(sk);
    }
}

/* A bone as a motion: the pose maps like the transform, unmaps back, and
 * its velocity field is Ṫ + Ṙ Rᵀ (x − T). */
static void test_bone_motion(void) {
    const double d[3] = {0.1, 0.2, 0.3};
    defo_skeleton *sk = arm(d, DEFO_INTERP_LINEAR);
    if (!sk) return;
    defo_motion_def m = defo_default_motion_def();
    CHECK(m.skeleton == NULL && m.bone == -1);
    m.skeleton = sk;
    m.bone = 1;
    CHECK_OK(defo_motion_validate(&m, "fixed[0]"));
    defo_motion_pose P;
    defo_motion_pose_at(&m, 0.17, &P);
    double R[9], T[3], Rd[9], Td[3];
    defo_skeleton_transform(sk, 1, 0.17, R, T, Rd, Td);
    const double X[3] = {0.45, 0.21, 0.33};
    double x[3], v[3], back[3];
    defo_motion_pose_map(&P, X, x, v);
    defo_motion_pose_unmap(&P, x, back);
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        const double xi = R[3 * i] * X[0] + R[3 * i + 1] * X[1] + R[3 * i + 2] * X[2] + T[i];
        const double vi = Rd[3 * i] * X[0] + Rd[3 * i + 1] * X[1] + Rd[3 * i + 2] * X[2] + Td[i];
        worst = fmax(worst, fmax(fabs(x[i] - xi), fabs(v[i] - vi)));
        worst = fmax(worst, fabs(back[i] - X[i]));
    }
    CHECK(worst < 1e-14);
    /* bad combinations */
    m.bone = 2;
    CHECK(defo_motion_validate(&m, "fixed[0]") == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "fixed[0]: bone 2") != NULL);
    m.bone = 0;
    m.angular_speed = 1;
    CHECK(defo_motion_validate(&m, "colliders[1].motion") == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "'shoulder'") && strstr(defo_last_error(), "one of them"));
    defo_skeleton_destroy(sk);
}

/* Malformed BVH files: each refused naming the file, line and reason. */
static void test_bvh_errors(void) {
    static const struct {
        const char *text, *expect;
    } bad[] = {
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 3 Zrotation Xrotation Yrotation\n}\nMOTION\n"
         "Frames: 3\nFrame Time: 0.1\n0 0 0\n1 1 1\n2 2\n",
         "b.bvh:12: truncated: frame 2 of 3 ends after 2 of 3 values"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 2 Zrotation Wrotation\n}\n",
         "b.bvh:5: joint 'a': unknown channel 'Wrotation'"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nJOINT b\n{\nOFFSET 1 0 0\n}\n",
         "truncated: joint 'a' is not closed"},
        {"HIERARCHY\nROOT a\n{\nOFSET 0 0 0\n}\n", "b.bvh:4: joint 'a': unknown keyword 'OFSET'"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nJOINT a\n{\nOFFSET 1 0 0\n}\n}\n",
         "b.bvh:5: joint 'a' is named twice"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\n}\n", "truncated: no MOTION section"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Zrotation\n}\nMOTION\nFrames: 1\n"
         "Frame Time: 0\n0\n",
         "b.bvh:9: Frame Time: 0 is not > 0"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Zrotation\n}\nMOTION\nFrames: 2\n"
         "Frame Time: 0.1\n0\nnan\n",
         "b.bvh:11: frame 1, value 0: 'nan' is not a finite number"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Zrotation\n}\nMOTION\nFrames: 1\n"
         "Frame Time: 0.1\n0\n7\n",
         "b.bvh:11: more values after the 1 frames"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 1 Zrotation\n}\nMOTION\nFrames: 999999999\n"
         "Frame Time: 0.1\n0\n",
         "b.bvh:8: truncated: Frames: 999999999 needs"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0\nCHANNELS 1 Zrotation\n}\n",
         "b.bvh:5: expected a finite number for OFFSET, found 'CHANNELS'"},
        {"HIERARCHY\nROOT a\n{\nOFFSET 0 0 0\nCHANNELS 2 Zrotation Zrotation\n}\n",
         "channel Zrotation listed twice"},
        {"HIERARCHY\nROOT\n{\n", "b.bvh:2: ROOT without a name"},
        {"HIERARCH\n", "b.bvh:1: expected 'HIERARCHY' at the start of a BVH file"},
        {"", "truncated: expected 'HIERARCHY'"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        defo_skeleton *sk = (defo_skeleton *)1;
        const defo_status s =
            defo_skeleton_parse_bvh(bad[i].text, strlen(bad[i].text), "b.bvh", NULL, &sk);
        CHECK_MSG(s == DEFO_ERR_PARSE && sk == NULL, "case %zu: status %d", i, (int)s);
        CHECK_MSG(strstr(defo_last_error(), bad[i].expect) != NULL, "case %zu: got '%s'", i,
                  defo_last_error());
    }
    defo_skeleton *sk = NULL;
    CHECK(defo_skeleton_read_bvh(DEFO_TEST_TMP "/no_such.bvh", NULL, &sk) == DEFO_ERR_IO);
    /* joint definitions */
    const double q[4] = {1, 0, 0, 0}, qz[4] = {0, 0, 0, 0}, times[2] = {0, 0};
    defo_joint_def j[2] = {{"a", -1, {0, 0, 0}, 0, NULL, NULL, NULL},
                           {"a", 0, {1, 0, 0}, 0, NULL, NULL, NULL}};
    CHECK(defo_skeleton_create(j, 2, NULL, &sk) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "already the name") != NULL);
    j[1].name = "b";
    j[1].parent = 1;
    CHECK(defo_skeleton_create(j, 2, NULL, &sk) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "not an earlier joint") != NULL);
    j[1].parent = 0;
    j[1].num_keys = 1, j[1].times = times, j[1].rotations = qz;
    CHECK(defo_skeleton_create(j, 2, NULL, &sk) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "rotation is zero") != NULL);
    j[1].num_keys = 2, j[1].rotations = (const double[8]){1, 0, 0, 0, 1, 0, 0, 0};
    CHECK(defo_skeleton_create(j, 2, NULL, &sk) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "key 1 time 0 does not follow 0") != NULL);
    j[1].num_keys = 1, j[1].rotations = q;
    defo_skeleton_place pl = defo_default_skeleton_place();
    pl.scale = -1;
    CHECK(defo_skeleton_create(j, 2, &pl, &sk) == DEFO_ERR_INVALID_ARGUMENT);
    pl = defo_default_skeleton_place();
    pl.bind_frame = 3;
    CHECK(defo_skeleton_create(j, 2, &pl, &sk) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "bind_frame 3") != NULL);
    CHECK_OK(defo_skeleton_create(j, 2, NULL, &sk));
    defo_skeleton_destroy(sk);
}

/* The BVH drives a two-bone arm: a 0.6 × 0.08 × 0.08 m bar of flesh along x
 * from the shoulder, the first 0.16 m bound to the shoulder bone, the last
 * 0.16 m to the elbow bone (joint at 0.3 m), the 0.28 m between free.
 * Quasistatic (TSIF05): each frame the equilibrium with the bones moved. */
static void test_bvh_drives_arm(void) {
    const double d[3] = {0, 0, 0};
    defo_skeleton *sk = arm(d, DEFO_INTERP_LINEAR);
    if (!sk) return;
    defo_box_def bd = defo_default_box_def();
    const double size[3] = {0.6, 0.08, 0.08}, origin[3] = {0, -0.04, -0.04};
    memcpy(bd.size, size, sizeof size);
    memcpy(bd.origin, origin, sizeof origin);
    bd.cells[0] = 30, bd.cells[1] = 4, bd.cells[2] = 4;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def qd = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    int integ = 0;
    CHECK_OK(defo_world_add_integrator(w, &qd, &integ));
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    b.integrator = integ;
    b.material.youngs_modulus = 5e4;
    b.material.poisson = 0.4;
    b.force.constant_extrapolation = 1;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &b, &id));
    const double lo0[3] = {-1, -1, -1}, hi0[3] = {0.16, 1, 1}, lo1[3] = {0.44, -1, -1},
                 hi1[3] = {1, 1, 1};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    defo_motion_def m0 = defo_default_motion_def(), m1 = defo_default_motion_def();
    m0.skeleton = m1.skeleton = sk;
    m0.bone = 0, m1.bone = 1;
    CHECK_OK(defo_body_prescribe(w, id, &r0, &m0, NULL));
    CHECK_OK(defo_body_prescribe(w, id, &r1, &m1, NULL));
    const defo_index n = defo_body_num_nodes(w, id);
    double worst = 0;
    defo_index inverted = -1;
    for (int k = 1; k <= 3; k++) {
        CHECK_OK(defo_world_step(w, 0.1));
        const double *x = defo_body_positions(w, id);
        for (defo_index i = 0; i < n; i++) {
            const double *X = m->x + 3 * i;
            const int bone = X[0] <= 0.16 + 1e-9 ? 0 : X[0] >= 0.44 - 1e-9 ? 1 : -1;
            if (bone < 0) continue;
            double e[3];
            expected(bone, k, d, X, e);
            for (int c = 0; c < 3; c++) worst = fmax(worst, fabs(x[3 * i + c] - e[c]));
        }
        CHECK_OK(defo_body_count_inverted(w, id, &inverted));
        defo_step_stats st;
        defo_world_stats(w, &st);
        TEST_REPORT("frame %d (elbow %g°): inverted %ld, Newton %d, not converged %d", k,
                    elbow_z[k], (long)inverted, st.newton_iterations, st.not_converged);
        CHECK(st.not_converged == 0);
    }
    /* the flesh bent: the free middle's outer edge (x = 0.3, y = −0.04) moved
     * toward the outside of the bend by a good part of a centimetre */
    const double *x = defo_body_positions(w, id);
    double moved = 0;
    for (defo_index i = 0; i < n; i++)
        if (fabs(m->x[3 * i] - 0.3) < 1e-9 && m->x[3 * i + 1] < -0.04 + 1e-9)
            moved = fmax(moved, hypot(x[3 * i] - m->x[3 * i], x[3 * i + 1] - m->x[3 * i + 1]));
    TEST_REPORT("bound nodes vs the independent joint transforms: worst %.2e m; inverted at 90°: "
                "%ld; outer elbow moved %.3f m",
                worst, (long)inverted, moved);
    CHECK(worst < 1e-12);
    CHECK(inverted == 0);
    CHECK(moved > 0.02);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    defo_skeleton_destroy(sk);
}

/* The same arm stepped dynamically (backward Euler): the bound nodes are on
 * the bone transforms at every frame end too. */
static void test_bvh_drives_arm_dynamic(void) {
    const double d[3] = {0, 0, 0};
    defo_skeleton *sk = arm(d, DEFO_INTERP_LINEAR);
    if (!sk) return;
    defo_box_def bd = defo_default_box_def();
    const double size[3] = {0.6, 0.08, 0.08}, origin[3] = {0, -0.04, -0.04};
    memcpy(bd.size, size, sizeof size);
    memcpy(bd.origin, origin, sizeof origin);
    bd.cells[0] = 15, bd.cells[1] = 2, bd.cells[2] = 2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    int integ = 0;
    CHECK_OK(defo_world_add_integrator(w, &idf, &integ));
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    b.integrator = integ;
    b.material.youngs_modulus = 5e4;
    b.material.damping_time = 0.01;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &b, &id));
    const double lo0[3] = {-1, -1, -1}, hi0[3] = {0.16, 1, 1}, lo1[3] = {0.44, -1, -1},
                 hi1[3] = {1, 1, 1};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    defo_motion_def m0 = defo_default_motion_def(), m1 = defo_default_motion_def();
    m0.skeleton = m1.skeleton = sk;
    m0.bone = 0, m1.bone = 1;
    CHECK_OK(defo_body_prescribe(w, id, &r0, &m0, NULL));
    CHECK_OK(defo_body_prescribe(w, id, &r1, &m1, NULL));
    double worst = 0;
    for (int k = 1; k <= 3; k++) {
        CHECK_OK(defo_world_step(w, 0.1));
        const double *x = defo_body_positions(w, id);
        for (defo_index i = 0; i < m->num_nodes; i++) {
            const double *X = m->x + 3 * i;
            const int bone = X[0] <= 0.16 + 1e-9 ? 0 : X[0] >= 0.44 - 1e-9 ? 1 : -1;
            if (bone < 0) continue;
            double e[3];
            expected(bone, k, d, X, e);
            for (int c = 0; c < 3; c++) worst = fmax(worst, fabs(x[3 * i + c] - e[c]));
        }
    }
    TEST_REPORT("backward Euler: bound nodes vs the joint transforms %.2e m", worst);
    CHECK(worst < 1e-12);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    defo_skeleton_destroy(sk);
}

/* Penalty contact against a bone's shape (TSIF05 §10–11): a capsule
 * collider following a keyframed bone rises 2 cm into a soft block 10 cm
 * tall held at its top; quasistatic.  The block is pushed up (its bottom
 * middle rises with the bone) and no free node stays inside the capsule by
 * more than a small penalty depth. */
static void test_bone_collider(void) {
    /* one joint translating +z by 4 cm over 1 s (scene keyframes' form) */
    const double times[2] = {0, 1}, q[8] = {1, 0, 0, 0, 1, 0, 0, 0}, tr[6] = {0, 0, 0, 0, 0, 0.02};
    const defo_joint_def j = {"bone", -1, {0, 0, 0}, 2, times, q, tr};
    defo_skeleton *sk = NULL;
    CHECK_OK(defo_skeleton_create(&j, 1, NULL, &sk));
    defo_box_def bd = defo_default_box_def();
    const double size[3] = {0.2, 0.1, 0.1}, origin[3] = {-0.1, -0.05, 0.0};
    memcpy(bd.size, size, sizeof size);
    memcpy(bd.origin, origin, sizeof origin);
    bd.cells[0] = 12, bd.cells[1] = 6, bd.cells[2] = 6;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_shape_def cap = defo_default_shape_def();
    cap.type = DEFO_SHAPE_CAPSULE;
    cap.center[2] = -0.041; /* touching the bottom face at rest */
    cap.axis[0] = 0, cap.axis[1] = 1, cap.axis[2] = 0;
    cap.radius = 0.04;
    cap.half_length = 0.1;
    defo_collider_def cd = defo_default_collider_def();
    cd.num_shapes = 1;
    cd.shapes = &cap;
    cd.motion.skeleton = sk;
    cd.motion.bone = 0;
    defo_collider *col = NULL;
    CHECK_OK(defo_collider_create(&cd, &col));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    int integ = 0;
    CHECK_OK(defo_world_add_integrator(w, &idf, &integ));
    CHECK_OK(defo_world_add_collider(w, col));
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    b.integrator = integ;
    b.material.youngs_modulus = 2e4;
    b.material.poisson = 0.4;
    b.force.constant_extrapolation = 1;
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &b, &id));
    const double top[3] = {0, 0, 0.1}, down[3] = {0, 0, -1};
    defo_region held = defo_region_plane(top, down);
    CHECK_OK(defo_body_prescribe(w, id, &held, NULL, NULL));
    for (int f = 0; f < 4; f++) CHECK_OK(defo_world_step(w, 0.25));
    const double *x = defo_body_positions(w, id);
    double deepest = 0, rise = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double phi = defo_collider_phi(col, 1.0, x + 3 * i, NULL, NULL);
        if (m->x[3 * i + 2] < 0.1 - 1e-9) deepest = fmax(deepest, -phi);
        if (fabs(m->x[3 * i]) < 1e-9 && fabs(m->x[3 * i + 1]) < 1e-9 && m->x[3 * i + 2] < 1e-9)
            rise = x[3 * i + 2] - m->x[3 * i + 2];
    }
    TEST_REPORT("bone capsule risen 2 cm: the block's bottom middle rose %.4f m, deepest free node "
                "%.2e m inside",
                rise, deepest);
    CHECK(rise > 0.018);
    CHECK(deepest < 2e-3);
    defo_world_destroy(w);
    defo_collider_destroy(col);
    defo_mesh_destroy(m);
    defo_skeleton_destroy(sk);
}

int main(void) {
    RUN(test_bvh_transforms);
    RUN(test_interpolation_and_velocity);
    RUN(test_bone_motion);
    RUN(test_bvh_errors);
    RUN(test_bvh_drives_arm);
    RUN(test_bvh_drives_arm_dynamic);
    RUN(test_bone_collider);
    return test_summary();
}
