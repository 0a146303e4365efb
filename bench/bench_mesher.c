/*
 * bench_mesher.c — `defo mesh` speed and memory on the Stanford bunny
 * (data/meshes/bunny.off, or the path in argv[1]): seconds (median of 5
 * runs) and peak bytes allocated by defo for about 10 K, 100 K and 500 K tets
 * (issue 8: goal <= 5 s for 500 K tets), plus the signed-distance build and
 * the cost of one distance and one winding-number query.  Each size is also
 * meshed without the quality optimisation (target_dihedral 0: lattice,
 * snapping, nothing else), so "optimise_s" is what the optimisation costs,
 * and the smallest dihedral angle and altitude are given with and without
 * it.  Prints one JSON object on stdout; asserts nothing.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include "defo/defo.h"
#include "defo/geometry.h"
#include "defo/mesher.h"

#include <stdio.h>
#include <string.h>

#define RUNS 5

int main(int argc, char **argv) {
    char path[1024];
    if (argc > 1) {
        snprintf(path, sizeof path, "%s", argv[1]);
    } else { /* data/ beside this source file's folder */
        snprintf(path, sizeof path, "%s", __FILE__);
        char *slash = strrchr(path, '/');
        if (slash)
            *slash = 0;
        else
            strcpy(path, ".");
        strncat(path, "/../data/meshes/bunny.off", sizeof path - strlen(path) - 1);
    }
    defo_mesh *surf = NULL;
    if (defo_mesh_read(path, NULL, &surf) < 0) {
        fprintf(stderr, "bench_mesher: %s\n", defo_last_error());
        return 1;
    }
    /* signed distance: build and queries on a fixed grid over the box */
    double t0 = bench_now();
    defo_surface_sdf *sdf = NULL;
    if (defo_surface_sdf_create(surf, NULL, &sdf)) {
        fprintf(stderr, "bench_mesher: %s\n", defo_last_error());
        return 1;
    }
    double t_build = bench_now() - t0;
    const defo_surface_info *si = defo_surface_sdf_info(sdf);
    const int g = 40;
    double sink = 0;
    t0 = bench_now();
    for (int i = 0; i < g * g * g; i++) {
        double p[3];
        int ijk[3] = {i % g, i / g % g, i / (g * g)};
        for (int k = 0; k < 3; k++)
            p[k] = si->bbox_lo[k] + (si->bbox_hi[k] - si->bbox_lo[k]) * (ijk[k] + 0.5) / g;
        sink += defo_surface_sdf_distance(sdf, p, NULL, NULL);
    }
    double us_dist = (bench_now() - t0) / (g * g * g) * 1e6;
    t0 = bench_now();
    for (int i = 0; i < g * g * g; i++) {
        double p[3];
        int ijk[3] = {i % g, i / g % g, i / (g * g)};
        for (int k = 0; k < 3; k++)
            p[k] = si->bbox_lo[k] + (si->bbox_hi[k] - si->bbox_lo[k]) * (ijk[k] + 0.5) / g;
        sink += defo_surface_sdf_winding(sdf, p);
    }
    double us_wind = (bench_now() - t0) / (g * g * g) * 1e6;
    defo_surface_sdf_destroy(sdf);

    printf("{\n  \"surface\": \"bunny.off\",\n  \"triangles\": %d,\n  \"threads\": %d,\n",
           (int)surf->num_tris, defo_get_threads());
    printf("  \"sdf_build_s\": %.4f,\n  \"distance_query_us\": %.3f,\n  \"winding_query_us\": "
           "%.3f,\n  \"sizes\": [",
           t_build, us_dist, us_wind);
    const int cells[3] = {16, 35, 60};
    for (int c = 0; c < 3; c++) {
        double t[RUNS], t0s[RUNS];
        defo_mesher_report rep, rep0;
        defo_index tets = 0, nodes = 0;
        int64_t peak = 0;
        for (int r = 0; r < RUNS; r++) {
            for (int opt = 0; opt < 2; opt++) {
                defo_mesher_def def = defo_default_mesher_def();
                def.cells = cells[c];
                if (!opt) def.target_dihedral = 0;
                int64_t base = defo_allocated_bytes();
                defo_reset_peak_allocated_bytes();
                defo_mesh *m = NULL;
                t0 = bench_now();
                defo_status s = defo_mesh_surface(surf, &def, &m, opt ? &rep : &rep0);
                (opt ? t : t0s)[r] = bench_now() - t0;
                if (s < 0) {
                    fprintf(stderr, "bench_mesher: %s\n", defo_last_error());
                    return 1;
                }
                if (opt) {
                    peak = defo_peak_allocated_bytes() - base;
                    tets = m->num_elems;
                    nodes = m->num_nodes;
                }
                defo_mesh_destroy(m);
            }
        }
        double med = bench_median(t, RUNS), med0 = bench_median(t0s, RUNS);
        printf("%s\n    {\"cells\": %d, \"tets\": %d, \"nodes\": %d, \"seconds\": %.3f, "
               "\"seconds_unoptimised\": %.3f, \"optimise_s\": %.3f, \"peak_mb\": %.1f, "
               "\"us_per_tet\": %.2f, \"volume_error\": %.5f, \"volume_error_unoptimised\": "
               "%.5f, \"min_dihedral_deg\": %.2f, \"min_dihedral_deg_unoptimised\": %.2f, "
               "\"min_altitude_h\": %.3f, \"min_altitude_h_unoptimised\": %.3f}",
               c ? "," : "", cells[c], (int)tets, (int)nodes, med, med0, med - med0,
               (double)peak / 1e6, med / (double)tets * 1e6, rep.volume_error, rep0.volume_error,
               rep.quality.min_dihedral, rep0.quality.min_dihedral, rep.min_altitude / rep.h,
               rep0.min_altitude / rep0.h);
    }
    printf("\n  ],\n  \"checksum\": %.6g\n}\n", sink);
    defo_mesh_destroy(surf);
    return 0;
}
