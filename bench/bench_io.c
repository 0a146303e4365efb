/*
 * bench_io.c — read and write throughput of the volume formats at about
 * 1 M tetrahedra (issue: "a 1 M-tet mesh is read and written without
 * quadratic behaviour"), plus the topology passes `defo info` runs.
 * Prints one JSON object; medians of 3 runs.  DEFO_BENCH_CELLS overrides the
 * box resolution (default 55: 55³·6 = 998 250 tets).
 */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include "defo/defo.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RUNS 3

typedef struct case_def {
    const char *name;
    const char *ext;
    int binary;
    int msh_version;
} case_def;

int main(void) {
    int cells = 55;
    const char *env = getenv("DEFO_BENCH_CELLS");
    if (env) cells = atoi(env);
    if (cells < 2 || cells > 200) cells = 55;
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = bd.cells[1] = bd.cells[2] = cells;
    defo_mesh *mesh = NULL;
    double t0 = bench_now();
    if (defo_generate_box(&bd, &mesh) < 0) {
        fprintf(stderr, "bench_io: %s\n", defo_last_error());
        return 1;
    }
    double gen_s = bench_now() - t0;

    char dir[] = "/tmp/defo-bench-io-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("bench_io: mkdtemp");
        return 1;
    }
    const case_def cases[] = {
        {"vtu_binary", "vtu", 1, 4},  {"vtu_ascii", "vtu", 0, 4},    {"msh41_binary", "msh", 1, 4},
        {"msh41_ascii", "msh", 0, 4}, {"msh22_binary", "msh", 1, 2}, {"vtk_binary", "vtk", 1, 4},
        {"tetgen", "node", 0, 4},
    };
    const int ncases = (int)(sizeof cases / sizeof cases[0]);

    printf("{\n  \"bench\": \"io\",\n  \"nodes\": %ld,\n  \"elements\": %ld,\n"
           "  \"generate_box_s\": %.4f,\n  \"runs\": %d,\n  \"formats\": [",
           (long)mesh->num_nodes, (long)mesh->num_elems, gen_s, RUNS);
    for (int c = 0; c < ncases; c++) {
        char path[256];
        snprintf(path, sizeof path, "%s/mesh_%s.%s", dir, cases[c].name, cases[c].ext);
        defo_write_options wo = defo_default_write_options();
        wo.binary = cases[c].binary;
        wo.msh_version = cases[c].msh_version;
        double w[RUNS], r[RUNS];
        int ok = 1;
        for (int k = 0; k < RUNS && ok; k++) {
            double a = bench_now();
            ok = defo_mesh_write(path, mesh, &wo) >= 0;
            w[k] = bench_now() - a;
            defo_mesh *back = NULL;
            a = bench_now();
            ok = ok && defo_mesh_read(path, NULL, &back) >= 0;
            r[k] = bench_now() - a;
            ok = ok && back->num_elems == mesh->num_elems;
            defo_mesh_destroy(back);
        }
        if (!ok) {
            fprintf(stderr, "bench_io: %s: %s\n", cases[c].name, defo_last_error());
            return 1;
        }
        double mb = bench_file_mb(path);
        if (!strcmp(cases[c].ext, "node")) {
            char ele[256];
            snprintf(ele, sizeof ele, "%s/mesh_%s.ele", dir, cases[c].name);
            mb += bench_file_mb(ele);
        }
        double wm = bench_median(w, RUNS), rm = bench_median(r, RUNS);
        printf(
            "%s\n    {\"format\": \"%s\", \"mb\": %.2f, \"write_s\": %.4f, \"write_mb_s\": %.1f, "
            "\"read_s\": %.4f, \"read_mb_s\": %.1f}",
            c ? "," : "", cases[c].name, mb, wm, mb / wm, rm, mb / rm);
        remove(path);
    }
    printf("\n  ],\n");

    /* Topology passes behind `defo info`. */
    double tb[RUNS], te[RUNS], tq[RUNS], tc[RUNS];
    for (int k = 0; k < RUNS; k++) {
        defo_boundary b;
        defo_edges e;
        defo_quality_summary q;
        defo_index nc;
        double a = bench_now();
        defo_mesh_boundary(mesh, 0, &b);
        tb[k] = bench_now() - a;
        a = bench_now();
        defo_mesh_edges(mesh, 0, &e);
        te[k] = bench_now() - a;
        a = bench_now();
        defo_mesh_quality_summary(mesh, NULL, &q);
        tq[k] = bench_now() - a;
        a = bench_now();
        defo_mesh_components(mesh, NULL, &nc);
        tc[k] = bench_now() - a;
        defo_boundary_free(&b);
        defo_edges_free(&e);
    }
    printf("  \"boundary_s\": %.4f,\n  \"edges_s\": %.4f,\n  \"quality_s\": %.4f,\n"
           "  \"components_s\": %.4f,\n  \"peak_bytes\": %lld\n}\n",
           bench_median(tb, RUNS), bench_median(te, RUNS), bench_median(tq, RUNS),
           bench_median(tc, RUNS), (long long)defo_peak_allocated_bytes());
    defo_mesh_destroy(mesh);
    rmdir(dir);
    return 0;
}
