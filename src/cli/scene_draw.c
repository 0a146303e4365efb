/*
 * cli/scene_draw.c — a scene's colliders as the renderer draws them, shared by
 * `defo run` (its PNGs) and `defo render` (a run folder, from its scene.json),
 * so both place the same shapes at the same times and frame them alike.
 *
 * Placement follows the colliders' scripted motion (defo/geometry.h):
 * x(t) = R(t)(p − pivot) + pivot + v t, drawn as the rotation R(t) and the
 * translation x(t) of the collider frame's origin.
 */
#include "cli/cli.h"
#include "defo/render.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cli_fit_colliders(const defo_scene *scene, double lo[3], double hi[3]) {
    for (int c = 0; scene && c < defo_scene_num_colliders(scene); c++) {
        const defo_collider_def *cd = defo_scene_collider(scene, c);
        for (int i = 0; i < cd->num_shapes; i++) {
            const defo_shape_def *sh = &cd->shapes[i];
            if (sh->type == DEFO_SHAPE_PLANE) continue; /* the ground: drawn, never framed */
            double ext = 0;
            if (sh->type == DEFO_SHAPE_BOX)
                ext = sqrt(sh->half_extent[0] * sh->half_extent[0] +
                           sh->half_extent[1] * sh->half_extent[1] +
                           sh->half_extent[2] * sh->half_extent[2]);
            else if (sh->type == DEFO_SHAPE_SPHERE)
                ext = sh->radius;
            else if (sh->type == DEFO_SHAPE_MESH && sh->mesh)
                for (defo_index v = 0; v < sh->mesh->num_nodes; v++) {
                    const double *x = sh->mesh->x + 3 * (size_t)v;
                    ext = fmax(ext, sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]));
                }
            else
                ext = sh->radius + sh->half_length;
            for (int k = 0; k < 3; k++) {
                const double *R = sh->rotation + 3 * k;
                double ck = R[0] * sh->center[0] + R[1] * sh->center[1] + R[2] * sh->center[2];
                lo[k] = fmin(lo[k], ck - ext);
                hi[k] = fmax(hi[k], ck + ext);
            }
        }
    }
}

int cli_collider_shapes(const defo_scene *scene, double t, defo_render_shape **out, int *n) {
    *out = NULL;
    *n = 0;
    if (!scene) return 0;
    int nshapes = 0;
    for (int c = 0; c < defo_scene_num_colliders(scene); c++)
        nshapes += defo_scene_collider(scene, c)->num_shapes;
    if (nshapes == 0) return 0;
    defo_render_shape *shapes = calloc((size_t)nshapes, sizeof *shapes);
    if (!shapes) return -1;
    int k = 0;
    for (int c = 0; c < defo_scene_num_colliders(scene); c++) {
        const defo_collider_def *cd = defo_scene_collider(scene, c);
        defo_motion_pose P;
        defo_motion_pose_at(&cd->motion, t, &P);
        const double origin[3] = {0, 0, 0};
        double tr[3];
        defo_motion_pose_map(&P, origin, tr, NULL);
        for (int s = 0; s < cd->num_shapes; s++, k++) {
            shapes[k] = defo_render_shape_from(&cd->shapes[s]);
            memcpy(shapes[k].rotation, P.R, sizeof P.R);
            memcpy(shapes[k].translation, tr, sizeof tr);
        }
    }
    *out = shapes;
    *n = k;
    return 0;
}
