/*
 * cli/cmd_validate.c — `defo validate SCENE.json`: parse and check a scene
 * file and print EVERY error, one per line, each with its JSON path
 * ("scene.json: bodies[1].material.poisson: 0.52 is not in [0, 0.5)").
 * Exit 0 when the scene is valid, 2 otherwise.
 *
 * Then every mesh and surface file the scene names (defo_scene_get_file) is
 * opened as `defo run` opens it — defo_mesh_read with the same options, and
 * the same checks on what it got: a body's "mesh" must hold elements, a
 * "surface" triangles, an "embedded" surface 3-node triangles — so a scene
 * validate accepts does not fail at run on its inputs (a NaN coordinate, a
 * damaged compressed .vtu, a surface without triangles).  Each bad file is
 * one more error line "SCENE: bodies[i].mesh: 'path': reason".  (Meshing a
 * surface is left to the run: it can take seconds.)
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
    /* the files, opened as defo run opens them */
    int bad = 0;
    for (int i = 0; i < defo_scene_num_files(scene); i++) {
        defo_scene_file f = defo_scene_get_file(scene, i);
        static const char *const key[3] = {"mesh", "surface.file", "embedded.file"};
        defo_read_options ro = defo_default_read_options();
        ro.reorient = DEFO_ORIENT_REPAIR; /* as the builder reads a body's mesh */
        defo_mesh *m = NULL;
        defo_status rs = defo_mesh_read(f.path, &ro, &m);
        const char *why = NULL;
        if (rs < 0)
            why = defo_last_error();
        else if (f.kind == DEFO_SCENE_FILE_MESH && m->num_elems == 0 &&
                 (m->num_tris == 0 || m->nodes_per_tri != 3))
            why = "holds neither volume elements nor 3-node triangles (a shell); a closed surface "
                  "to fill goes under \"surface\"";
        else if (f.kind == DEFO_SCENE_FILE_SURFACE && m->num_tris == 0)
            why = "has no triangles (a closed surface: .obj .stl .off .ply)";
        else if (f.kind == DEFO_SCENE_FILE_EMBEDDED && (m->num_tris == 0 || m->nodes_per_tri != 3))
            why = "has no 3-node triangles";
        /* triangles given as a body's mesh: a shell, checked as run makes it */
        defo_mesh *shell = NULL;
        defo_shell_topology topo;
        memset(&topo, 0, sizeof topo);
        if (!why && f.kind == DEFO_SCENE_FILE_MESH && m->num_elems == 0 &&
            (defo_mesh_shell_from_triangles(m, &shell) || defo_mesh_validate(shell) ||
             defo_mesh_shell_topology(shell, &topo)))
            why = defo_last_error();
        defo_shell_topology_free(&topo);
        defo_mesh_destroy(shell);
        if (why) {
            fprintf(stderr, "%s: bodies[%d].%s: '%s': %s\n", path, f.body, key[f.kind], f.path,
                    why);
            bad++;
        }
        defo_mesh_destroy(m);
    }
    if (bad) {
        defo_scene_destroy(scene);
        return CLI_BAD_INPUT;
    }
    printf("%s: ok: '%s', %d frame%s at %g fps (%.3g s)\n", path, defo_scene_name(scene),
           defo_scene_frames(scene), cli_s(defo_scene_frames(scene)), defo_scene_fps(scene),
           defo_scene_frames(scene) / defo_scene_fps(scene));
    defo_scene_destroy(scene);
    return CLI_OK;
}
