/*
 * cli/cmd_mesh.c — `defo mesh SURFACE -o OUT.{vtu,msh,node} [--cells N |
 * --size h] [--order 1|2] [--json]`: a simulation tet mesh from a triangle
 * surface (include/defo/mesher.h).
 *
 * Reports counts, quality (min-dihedral histogram before and after the
 * optimisation), the mesh's volume against the surface's enclosed volume
 * and the largest distance of a boundary node to the surface.  JSON keys are a contract: nodes, elements, order, volume,
 * surface_volume, volume_error, min_dihedral_deg, max_dihedral_deg, inverted,
 * max_boundary_distance, h, seconds (plus min_dihedral_histogram, warnings),
 * and for the optimisation (mesher.h): min_dihedral_deg_snapped and
 * min_dihedral_histogram_snapped (the quality before it), optimize_sweeps,
 * optimize_moves, optimize_flips, optimize_removed, volume_offset,
 * min_altitude, min_altitude_snapped.
 * A surface with problems the mesher can live with (holes, self-intersection,
 * flipped triangles) gives a mesh and "defo mesh: warning: ..." on stderr,
 * exit 0; one it cannot mesh gives a one-line reason and exit 2.
 */
#include "cli/cli.h"
#include "defo/mesher.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_int(const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

static int parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) return 0;
    *out = v;
    return 1;
}

int cmd_mesh(int argc, char **argv) {
    static const char cmd[] = "mesh";
    const char *in = NULL, *out = NULL;
    int json = 0, have_cells = 0, have_size = 0;
    defo_mesher_def def = defo_default_mesher_def();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (++i >= argc) return cli_usage_error(cmd, "%s needs a file name", a);
            out = argv[i];
        } else if (!strcmp(a, "--cells")) {
            if (++i >= argc || !parse_int(argv[i], 1, 4096, &def.cells))
                return cli_usage_error(cmd, "--cells needs an integer in 1..4096");
            have_cells = 1;
        } else if (!strcmp(a, "--size")) {
            if (++i >= argc || !parse_double(argv[i], &def.cell_size) || !(def.cell_size > 0) ||
                def.cell_size > 1e300)
                return cli_usage_error(cmd, "--size needs a positive finite length");
            have_size = 1;
        } else if (!strcmp(a, "--order")) {
            if (++i >= argc || !parse_int(argv[i], 1, 2, &def.order))
                return cli_usage_error(cmd, "--order must be 1 or 2");
        } else if (!strcmp(a, "--json")) {
            json = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error(cmd, "unknown option '%s'", a);
        } else if (!in) {
            in = a;
        } else {
            return cli_usage_error(cmd, "unexpected argument '%s'", a);
        }
    }
    if (!in) return cli_usage_error(cmd, "missing SURFACE (an .obj, .stl, .off or .ply file)");
    if (!out) return cli_usage_error(cmd, "missing -o OUT.{vtu,msh,node}");
    if (have_cells && have_size) return cli_usage_error(cmd, "give --cells or --size, not both");
    defo_format fmt = defo_format_from_path(out);
    if (fmt != DEFO_FORMAT_VTU && fmt != DEFO_FORMAT_MSH && fmt != DEFO_FORMAT_TETGEN)
        return cli_usage_error(cmd, "output '%s' must end in .vtu, .msh or .node", out);

    double t0 = now_seconds();
    defo_mesh *surf = NULL;
    defo_status s = defo_mesh_read(in, NULL, &surf);
    if (s < 0) return cli_fail(cmd, s);
    if (surf->num_tris == 0) {
        int volumetric = surf->num_elems > 0;
        defo_mesh_destroy(surf);
        fprintf(stderr, "defo mesh: %s: %s\n", in,
                volumetric ? "is a volume mesh, not a surface (it has no triangles)"
                           : "surface is empty: it has no triangles");
        return CLI_BAD_INPUT;
    }
    defo_mesh *m = NULL;
    defo_mesher_report rep;
    s = defo_mesh_surface(surf, &def, &m, &rep);
    defo_mesh_destroy(surf);
    if (s < 0) {
        const char *msg = defo_last_error();
        fprintf(stderr, "defo mesh: %s: %s\n", in, msg[0] ? msg : defo_status_name(s));
        return (s == DEFO_ERR_OUT_OF_MEMORY || s == DEFO_ERR_INTERNAL) ? CLI_INTERNAL
                                                                       : CLI_BAD_INPUT;
    }
    char warning[600] = "";
    if (s > 0) snprintf(warning, sizeof warning, "%s", defo_last_error());
    defo_status ws = defo_mesh_write(out, m, NULL);
    double seconds = now_seconds() - t0;
    if (ws < 0) {
        defo_mesh_destroy(m);
        return cli_fail(cmd, ws);
    }
    if (warning[0]) fprintf(stderr, "defo mesh: warning: %s: %s\n", in, warning);
    const defo_quality_summary *q = &rep.quality;
    if (json) {
        cli_json j = {stdout, 0, {false}};
        cli_json_begin_object(&j, NULL);
        cli_json_string(&j, "surface", in);
        cli_json_string(&j, "output", out);
        cli_json_int(&j, "nodes", m->num_nodes);
        cli_json_int(&j, "elements", m->num_elems);
        cli_json_int(&j, "order", m->order);
        cli_json_number(&j, "volume", rep.volume);
        cli_json_number(&j, "surface_volume", rep.surface_volume);
        cli_json_number(&j, "volume_error", rep.volume_error);
        cli_json_number(&j, "min_dihedral_deg", q->min_dihedral);
        cli_json_number(&j, "max_dihedral_deg", q->max_dihedral);
        cli_json_int(&j, "inverted", q->inverted);
        cli_json_number(&j, "max_boundary_distance", rep.max_boundary_distance);
        cli_json_number(&j, "h", rep.h);
        cli_json_number(&j, "seconds", seconds);
        cli_json_int(&j, "boundary_nodes", rep.boundary_nodes);
        cli_json_int(&j, "snapped_nodes", rep.snapped_nodes);
        cli_json_int(&j, "surface_triangles", rep.surface.num_triangles);
        cli_json_int(&j, "surface_open_edges", rep.surface.open_edges);
        cli_json_int(&j, "surface_self_intersections", rep.surface.self_intersections);
        cli_json_int(&j, "optimize_sweeps", rep.optimize_sweeps);
        cli_json_int(&j, "optimize_moves", rep.optimize_moves);
        cli_json_int(&j, "optimize_flips", rep.optimize_flips);
        cli_json_int(&j, "optimize_removed", rep.optimize_deleted);
        cli_json_number(&j, "volume_offset", rep.volume_offset);
        cli_json_number(&j, "min_altitude", rep.min_altitude);
        cli_json_number(&j, "min_altitude_snapped", rep.min_altitude_snapped);
        cli_json_begin_array(&j, "min_dihedral_histogram_snapped");
        for (int b = 0; b < DEFO_QUALITY_BINS; b++)
            cli_json_int(&j, NULL, rep.quality_snapped.min_dihedral_hist[b]);
        cli_json_end_array(&j);
        cli_json_number(&j, "min_dihedral_deg_snapped", rep.quality_snapped.min_dihedral);
        cli_json_begin_array(&j, "min_dihedral_histogram");
        for (int b = 0; b < DEFO_QUALITY_BINS; b++) cli_json_int(&j, NULL, q->min_dihedral_hist[b]);
        cli_json_end_array(&j);
        if (warning[0])
            cli_json_string(&j, "warning", warning);
        else
            cli_json_null(&j, "warning");
        cli_json_end_object(&j);
    } else {
        printf("%s -> %s\n", in, out);
        printf("  surface    %lld triangles, enclosed volume %.6g%s\n",
               (long long)rep.surface.num_triangles, rep.surface_volume,
               rep.surface.open_edges ? " (open)" : ", closed");
        printf("  lattice    BCC, h = %.6g\n", rep.h);
        printf("  mesh       %lld nodes, %lld %s elements\n", (long long)m->num_nodes,
               (long long)m->num_elems, m->order == 2 ? "tet10" : "tet4");
        printf("  volume     %.6g (%+.3f %% of the surface's)\n", rep.volume,
               100 * rep.volume_error);
        const defo_quality_summary *q0 = &rep.quality_snapped;
        printf("  quality    min dihedral %.2f deg, max %.2f deg, inverted %lld; smallest altitude "
               "%.4g (%.3f h)\n",
               q->min_dihedral, q->max_dihedral, (long long)q->inverted, rep.min_altitude,
               rep.h > 0 ? rep.min_altitude / rep.h : 0);
        if (rep.optimize_sweeps > 0) {
            printf("  optimised  from min dihedral %.2f deg, smallest altitude %.3f h: %d sweeps, "
                   "%lld node moves, %lld flips, %lld boundary wedges removed\n",
                   q0->min_dihedral, rep.h > 0 ? rep.min_altitude_snapped / rep.h : 0,
                   rep.optimize_sweeps, (long long)rep.optimize_moves,
                   (long long)rep.optimize_flips, (long long)rep.optimize_deleted);
            printf("  histogram  min dihedral per element, before optimisation:");
            for (int b = 0; b < DEFO_QUALITY_BINS; b++)
                if (q0->min_dihedral_hist[b])
                    printf(" [%d,%d) %lld", 10 * b, 10 * b + 10,
                           (long long)q0->min_dihedral_hist[b]);
            printf("\n             after:");
        } else {
            printf("  histogram  min dihedral per element:");
        }
        for (int b = 0; b < DEFO_QUALITY_BINS; b++)
            if (q->min_dihedral_hist[b])
                printf(" [%d,%d) %lld", 10 * b, 10 * b + 10, (long long)q->min_dihedral_hist[b]);
        printf("\n");
        printf("  boundary   %lld nodes, %lld on the surface; max distance %.4g (%.3f h)\n",
               (long long)rep.boundary_nodes, (long long)rep.snapped_nodes,
               rep.max_boundary_distance, rep.h > 0 ? rep.max_boundary_distance / rep.h : 0);
        if (rep.volume_offset > 0)
            printf(
                "             volume correction: moved along the normal by up to %.4g (%.3f h)\n",
                rep.volume_offset, rep.h > 0 ? rep.volume_offset / rep.h : 0);
        if (m->order == 2)
            printf("  tet10      %lld of %lld boundary edge nodes on the surface\n",
                   (long long)rep.edge_nodes_snapped, (long long)rep.edge_nodes_boundary);
        printf("  time       %.3f s\n", seconds);
    }
    defo_mesh_destroy(m);
    return CLI_OK;
}
