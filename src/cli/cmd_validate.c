/*
 * cli/cmd_validate.c — `defo validate SCENE.json`: parse and check a scene
 * file and print EVERY error, one per line, each with its JSON path
 * ("scene.json: bodies[1].material.poisson: 0.52 is not in [0, 0.5)").
 * Exit 0 when the scene is valid, 2 otherwise.  Meshes are not loaded (that
 * is `defo run`'s first step); referenced files must exist.
 */
#include "cli/cli.h"

#include <string.h>

int cmd_validate(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("validate", "unknown option '%s'", argv[i]);
        if (path) return cli_usage_error("validate", "unexpected argument '%s'", argv[i]);
        path = argv[i];
    }
    if (!path) return cli_usage_error("validate", "missing SCENE.json");
    defo_scene *scene = NULL;
    defo_scene_errors errs;
    defo_status s = defo_scene_load(path, &scene, &errs);
    if (s < 0) {
        if (errs.count == 0) {
            defo_scene_errors_free(&errs);
            return cli_fail("validate", s);
        }
        for (int i = 0; i < errs.count; i++) fprintf(stderr, "%s\n", errs.lines[i]);
        defo_scene_errors_free(&errs);
        return s == DEFO_ERR_OUT_OF_MEMORY ? CLI_INTERNAL : CLI_BAD_INPUT;
    }
    printf("%s: ok: '%s', %d frame%s at %g fps (%.3g s)\n", path, defo_scene_name(scene),
           defo_scene_frames(scene), cli_s(defo_scene_frames(scene)), defo_scene_fps(scene),
           defo_scene_frames(scene) / defo_scene_fps(scene));
    defo_scene_destroy(scene);
    return CLI_OK;
}
