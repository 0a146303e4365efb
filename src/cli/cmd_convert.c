/*
 * cli/cmd_convert.c — `defo convert IN OUT`: between every volume format defo
 * reads and writes (.node/.ele, .msh 2.2/4.1, .vtu, .vtk) and from surfaces
 * (.obj, .stl, .off, .ply) to .obj/.vtu/.vtk.  Formats come from the
 * extensions; --ascii selects text payloads, --msh-version the Gmsh version,
 * --compress zlib-compressed .vtu arrays (what ParaView and meshio write).
 *
 * Elements are converted as stored: a frame of a simulation with inverted or
 * flat elements is data, so they are kept and reported (one line on stderr
 * with their counts), not reoriented or refused.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

int cmd_convert(int argc, char **argv) {
    const char *in = NULL, *out = NULL;
    defo_write_options wo = defo_default_write_options();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--ascii")) {
            wo.binary = 0;
        } else if (!strcmp(argv[i], "--binary")) {
            wo.binary = 1;
        } else if (!strcmp(argv[i], "--compress")) {
            wo.compress = 1;
        } else if (!strcmp(argv[i], "--msh-version")) {
            if (i + 1 >= argc) return cli_usage_error("convert", "--msh-version needs 2 or 4");
            const char *v = argv[++i];
            if (!strcmp(v, "2") || !strcmp(v, "2.2"))
                wo.msh_version = 2;
            else if (!strcmp(v, "4") || !strcmp(v, "4.1"))
                wo.msh_version = 4;
            else
                return cli_usage_error("convert", "--msh-version: '%s' is not 2 or 4", v);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            return cli_usage_error("convert", "unknown option '%s'", argv[i]);
        } else if (!in) {
            in = argv[i];
        } else if (!out) {
            out = argv[i];
        } else {
            return cli_usage_error("convert", "unexpected argument '%s'", argv[i]);
        }
    }
    if (!in || !out) return cli_usage_error("convert", "usage: defo convert IN OUT");
    if (wo.compress && defo_format_from_path(out) != DEFO_FORMAT_VTU)
        return cli_usage_error("convert", "--compress writes .vtu only (not %s)", out);
    if (wo.compress && !wo.binary)
        return cli_usage_error("convert", "--compress and --ascii exclude each other");
    if (defo_format_from_path(out) == DEFO_FORMAT_AUTO)
        return cli_usage_error(
            "convert", "%s: unknown output format (use .node, .msh, .vtu, .vtk or .obj)", out);

    defo_read_options ro = defo_default_read_options();
    ro.reorient = DEFO_ORIENT_KEEP;
    defo_mesh *mesh = NULL;
    defo_status s = defo_mesh_read(in, &ro, &mesh);
    if (s < 0) return cli_fail("convert", s);
    if (s > 0) fprintf(stderr, "defo convert: warning: %s\n", defo_last_error());
    orient_counts oc = cli_orientation_counts(mesh);
    if (oc.inverted || oc.flat)
        fprintf(stderr,
                "defo convert: %s: kept as stored: %lld inverted element%s, %lld flat element%s "
                "(first: %lld)\n",
                in, (long long)oc.inverted, cli_s(oc.inverted), (long long)oc.flat, cli_s(oc.flat),
                (long long)(oc.inverted ? oc.first_inverted : oc.first_flat));
    s = defo_mesh_write(out, mesh, &wo);
    if (s < 0) {
        defo_mesh_destroy(mesh);
        return cli_fail("convert", s);
    }
    if (defo_format_from_path(out) == DEFO_FORMAT_OBJ) {
        /* an OBJ holds a surface (a volume mesh's boundary, curved faces split
         * in 4): report what the file has, read back */
        defo_mesh *back = NULL;
        s = defo_mesh_read(out, NULL, &back);
        if (s < 0) {
            defo_mesh_destroy(mesh);
            return cli_fail("convert", s);
        }
        printf("wrote %s (obj): %lld vertices, %lld triangles%s\n", out, (long long)back->num_nodes,
               (long long)back->num_tris,
               mesh->num_elems > 0 && mesh->num_tris == 0 ? " (the boundary of the volume mesh)"
                                                          : "");
        defo_mesh_destroy(back);
    } else {
        printf("wrote %s (%s): %lld nodes, %lld elements, %lld triangles\n", out,
               defo_format_name(defo_format_from_path(out)), (long long)mesh->num_nodes,
               (long long)mesh->num_elems, (long long)mesh->num_tris);
    }
    defo_mesh_destroy(mesh);
    return CLI_OK;
}
