/*
 * cli/cmd_demo.c — `defo demo`: what `make demo` runs until the simulation
 * commands land.  It generates a torus of tetrahedra (the shape of ITF04's
 * Fig. 2), writes it for ParaView (.vtu) and Gmsh (.msh) and its boundary for
 * Blender (.obj), reads the .vtu back, and reports what defo sees in it.
 */
#include "cli/cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int cmd_demo(int argc, char **argv) {
    const char *outdir = "defo-demo";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-o") && i + 1 < argc)
            outdir = argv[++i];
        else
            return cli_usage_error("demo", "unexpected argument '%s'", argv[i]);
    }
    if (mkdir(outdir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "defo demo: cannot create %s: %s\n", outdir, strerror(errno));
        return CLI_BAD_INPUT;
    }

    defo_torus_def td = defo_default_torus_def();
    td.major_radius = 1.0;
    td.minor_radius = 0.4;
    td.cell_size = 0.1;
    defo_mesh *torus = NULL;
    defo_status s = defo_generate_torus(&td, &torus);
    if (s < 0) return cli_fail("demo", s);
    printf("defo demo: generated a torus (major radius %.2f m, tube radius %.2f m, cell %.2f m): "
           "%lld nodes, %lld tetrahedra\n",
           td.major_radius, td.minor_radius, td.cell_size, (long long)torus->num_nodes,
           (long long)torus->num_elems);

    char vtu[1024], msh[1024], obj[1024];
    snprintf(vtu, sizeof vtu, "%s/torus.vtu", outdir);
    snprintf(msh, sizeof msh, "%s/torus.msh", outdir);
    snprintf(obj, sizeof obj, "%s/torus.obj", outdir);
    /* Cell field: each element's minimum dihedral angle, to colour by in ParaView. */
    double *min_dihedral = malloc((size_t)torus->num_elems * sizeof *min_dihedral);
    if (!min_dihedral) {
        defo_mesh_destroy(torus);
        fprintf(stderr, "defo demo: out of memory\n");
        return CLI_INTERNAL;
    }
    s = defo_mesh_quality(torus, NULL, min_dihedral, NULL, NULL);
    if (s >= 0)
        s = defo_mesh_add_field(torus, "min_dihedral_deg", DEFO_FIELD_CELL, 1, min_dihedral);
    free(min_dihedral);
    defo_write_options wo = defo_default_write_options();
    if (s >= 0) s = defo_mesh_write(vtu, torus, &wo);
    if (s >= 0) s = defo_mesh_write(msh, torus, &wo);
    if (s >= 0) s = defo_mesh_write(obj, torus, &wo);
    if (s < 0) {
        defo_mesh_destroy(torus);
        return cli_fail("demo", s);
    }
    printf("defo demo: wrote %s (ParaView), %s (Gmsh), %s (Blender: boundary surface)\n", vtu, msh,
           obj);
    defo_mesh_destroy(torus);

    defo_mesh *back = NULL;
    s = defo_mesh_read(vtu, NULL, &back);
    if (s < 0) return cli_fail("demo", s);
    printf("defo demo: read %s back; what defo sees:\n", vtu);
    int rc = cli_report_mesh(vtu, back, false);
    defo_mesh_destroy(back);
    return rc;
}
