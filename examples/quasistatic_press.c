/*
 * quasistatic_press.c — a soft slab held at both ends, pressed by two rigid
 * cylinders moving down and twisted by its right-end "bone" (TSIF05 §10–11),
 * solved quasistatically frame by frame: a world (defo/world.h) whose one
 * body is stepped by the QUASISTATIC integrator (defo/integrator.h).
 *
 *   cc quasistatic_press.c $(pkg-config --cflags --libs defo) -o quasistatic_press
 *   ./quasistatic_press [OUTDIR] [FRAMES]      (default: press_out, 48)
 *
 * Writes OUTDIR/frame_NNNN.vtu (deformed positions) and OUTDIR/press.pvd for
 * ParaView, and prints one line of solver statistics per frame.
 */
#include <defo/collision.h>
#include <defo/io.h>
#include <defo/mesh.h>
#include <defo/world.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static int fail(const char *what) {
    fprintf(stderr, "quasistatic_press: %s: %s\n", what, defo_last_error());
    return 1;
}

int main(int argc, char **argv) {
    const char *out = argc > 1 ? argv[1] : "press_out";
    int frames = argc > 2 ? atoi(argv[2]) : 48;
    if (frames < 1 || frames > 10000) frames = 48;
    mkdir(out, 0755);

    /* 2 × 0.6 × 0.6 m slab, 9 216 tets */
    defo_box_def bd = defo_default_box_def();
    bd.origin[0] = -1;
    bd.origin[1] = -0.3;
    bd.origin[2] = -0.3;
    bd.size[0] = 2;
    bd.size[1] = bd.size[2] = 0.6;
    bd.cells[0] = 24;
    bd.cells[1] = bd.cells[2] = 8;
    defo_mesh *mesh = NULL;
    if (defo_generate_box(&bd, &mesh) != DEFO_OK) return fail("mesh");

    /* No gravity: the slab is shaped by its bones and the rollers only. */
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *world = NULL;
    if (defo_world_create(&wd, &world) != DEFO_OK) return fail("world");

    /* TSIF05 quasistatics: one equilibrium per frame, started from the last
     * equilibria extrapolated in time; penalty contact 10× stiffer than the
     * default 10 (2μ+λ) h, so the rollers barely sink into the slab. */
    defo_material_def md = defo_default_material(); /* neo-Hookean, E = 1e5 Pa */
    md.poisson = 0.4;
    double mu, lambda;
    defo_lame(md.youngs_modulus, md.poisson, &mu, &lambda);
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    id.predictor = DEFO_PREDICTOR_CUBIC;
    id.contact_stiffness = 10 * 10 * (2 * mu + lambda) * defo_mesh_mean_edge(mesh);
    int integ = -1;
    if (defo_world_add_integrator(world, &id, &integ) != DEFO_OK) return fail("integrator");

    /* The robust setup of TSIF05: constant extrapolation past the
     * compression threshold (§9) and the definiteness fix (§8). */
    defo_body_def body = defo_default_body_def();
    body.mesh = mesh;
    body.material = md;
    body.force.constant_extrapolation = 1;
    body.force.definiteness_fix = 1;
    body.integrator = integ;
    body.name = "slab";
    defo_body_id slab;
    if (defo_world_add_body(world, &body, &slab) != DEFO_OK) return fail("body");

    /* Left end fixed; right end twisted about the slab axis by 180° over
     * the clip (one frame = 1/24 s). */
    const double seconds = frames / 24.0;
    double lo0[3] = {-2, -1, -1}, hi0[3] = {-1 + 1e-9, 1, 1};
    double lo1[3] = {1 - 1e-9, -1, -1}, hi1[3] = {2, 1, 1};
    defo_region left = defo_region_box(lo0, hi0), right = defo_region_box(lo1, hi1);
    defo_motion_def twist = defo_default_motion_def();
    twist.angular_axis[0] = 1;
    twist.angular_axis[2] = 0;
    twist.angular_speed = M_PI / seconds;
    if (defo_body_prescribe(world, slab, &left, NULL, NULL) != DEFO_OK ||
        defo_body_prescribe(world, slab, &right, &twist, NULL) != DEFO_OK)
        return fail("bones");

    /* Two rigid cylinders (axis y) above the slab, moving down 0.3 m. */
    defo_collider *rollers[2] = {NULL, NULL};
    for (int c = 0; c < 2; c++) {
        defo_shape_def sh = defo_default_shape_def();
        sh.type = DEFO_SHAPE_CYLINDER;
        sh.center[0] = c ? 0.45 : -0.45;
        sh.center[1] = 0;
        sh.center[2] = 0.3 + 0.15;
        sh.axis[0] = 0;
        sh.axis[1] = 1;
        sh.axis[2] = 0;
        sh.radius = 0.15;
        sh.half_length = 0.6;
        defo_collider_def cd = defo_default_collider_def();
        cd.num_shapes = 1;
        cd.shapes = &sh;
        cd.motion.velocity[2] = -0.3 / seconds;
        if (defo_collider_create(&cd, &rollers[c]) != DEFO_OK) return fail("collider");
        if (defo_world_add_collider(world, rollers[c]) != DEFO_OK) return fail("contact");
    }

    double *times = malloc(sizeof(double) * (size_t)frames);
    char **names = calloc((size_t)frames, sizeof(char *));
    if (!times || !names) return 1;
    defo_write_options wo = defo_default_write_options();
    int status = 0;
    for (int f = 1; f <= frames; f++) {
        defo_status rc = defo_world_step(world, 1.0 / 24.0);
        defo_step_stats st;
        defo_world_stats(world, &st);
        const double t = defo_world_time(world);
        printf("frame %3d  t %.3f s  newton %2d  cg %4d  residual %.2e f_ref  %s  contacts %d  "
               "inverted %d  %.0f ms\n",
               f, t, st.newton_iterations, st.cg_iterations, st.residual,
               defo_convergence_reason_name(st.reason), (int)st.collisions, (int)st.inverted,
               1e3 * st.seconds);
        if (rc < 0) {
            status = fail("step");
            break;
        }
        char path[1024];
        snprintf(path, sizeof path, "%s/frame_%04d.vtu", out, f);
        wo.positions = defo_body_positions(world, slab);
        if (defo_mesh_write(path, mesh, &wo) != DEFO_OK) {
            status = fail(path);
            break;
        }
        times[f - 1] = t;
        names[f - 1] = malloc(32);
        snprintf(names[f - 1], 32, "frame_%04d.vtu", f);
        if (f == frames) {
            char pvd[1024];
            snprintf(pvd, sizeof pvd, "%s/press.pvd", out);
            if (defo_pvd_write(pvd, times, (const char *const *)names, frames) != DEFO_OK)
                status = fail(pvd);
        }
    }
    for (int f = 0; f < frames; f++) free(names[f]);
    free(names);
    free(times);
    defo_world_destroy(world);
    for (int c = 0; c < 2; c++) defo_collider_destroy(rollers[c]);
    defo_mesh_destroy(mesh);
    return status;
}
