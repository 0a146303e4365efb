/*
 * tests/test_mesher.c — the BCC mesher (include/defo/mesher.h) on analytic
 * spheres and tori and on real surfaces (data/meshes/bunny.off, a scan;
 * eight.off, genus 2; see data/meshes/README.md).  The signed distance and
 * winding numbers it queries are tested in test_geometry.c.
 *
 * References used: a brute-force distance to the surface computed by a
 * different method (plane projection + edges, test_surfaces.h), the
 * surface's own enclosed volume (divergence theorem), the analytic volumes
 * of the sphere and the torus, dihedral angles from the mesh module
 * (defo_mesh_quality_summary, not the mesher's own) and the tet10 Jacobian
 * evaluated here and by the element module.
 */
#include "defo/defo.h"
#include "defo/mesher.h"
#include "test.h"
#include "test_surfaces.h"

#include <stdint.h>

static defo_mesh *read_data(const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/meshes/%s", DEFO_DATA_DIR, name);
    defo_mesh *m = NULL;
    int s = defo_mesh_read(path, NULL, &m);
    if (s < 0) {
        fprintf(stderr, "cannot read %s: %s\n", path, defo_last_error());
        return NULL;
    }
    return m;
}

/* ----------------------------------------------------------- mesher */
static void report_hist(const char *label, const defo_quality_summary *q) {
    char buf[512];
    int n = 0;
    for (int b = 0; b < DEFO_QUALITY_BINS; b++)
        if (q->min_dihedral_hist[b])
            n += snprintf(buf + n, sizeof buf - (size_t)n, " [%d,%d):%d", 10 * b, 10 * b + 10,
                          (int)q->min_dihedral_hist[b]);
    if (n == 0) buf[0] = 0;
    TEST_REPORT("min-dihedral histogram %s:%s", label, buf);
}

/* Smallest altitude of any tet (3V / largest face area): the length that
 * bounds a stable explicit step. */
static double min_altitude(const defo_mesh *m) {
    double best = INFINITY;
    for (defo_index e = 0; e < m->num_elems; e++) {
        const double *p[4];
        for (int c = 0; c < 4; c++) p[c] = m->x + 3 * (size_t)m->elems[4 * (size_t)e + (size_t)c];
        double u[3], v[3], w[3];
        for (int k = 0; k < 3; k++) {
            u[k] = p[1][k] - p[0][k];
            v[k] = p[2][k] - p[0][k];
            w[k] = p[3][k] - p[0][k];
        }
        double vol = fabs(u[0] * (v[1] * w[2] - v[2] * w[1]) - u[1] * (v[0] * w[2] - v[2] * w[0]) +
                          u[2] * (v[0] * w[1] - v[1] * w[0])) /
                     6;
        static const int F[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};
        double amax = 0;
        for (int f = 0; f < 4; f++) {
            const double *a = p[F[f][0]], *b = p[F[f][1]], *c = p[F[f][2]];
            double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
                   ac[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
            double n[3] = {ab[1] * ac[2] - ab[2] * ac[1], ab[2] * ac[0] - ab[0] * ac[2],
                           ab[0] * ac[1] - ab[1] * ac[0]};
            amax = fmax(amax, 0.5 * sqrt(dot3(n, n)));
        }
        best = fmin(best, 3 * vol / amax);
    }
    return best;
}

/* The acceptance checks of the quality optimisation on one surface: no
 * inverted element, min dihedral >= 20° (measured by the mesh module), volume
 * within 1 % of the surface's enclosed volume, every boundary node within
 * h/2 of the surface (brute-force distance computed here), bit-identical
 * meshes for 1 and 2 threads.  The mesh before the optimisation (target 0)
 * must have had elements below 20°, so the check is not vacuous; its
 * histogram and smallest altitude are reported beside the optimised one's.
 * exact_volume > 0 is the analytic volume of the shape the surface
 * approximates (reported, and checked within 1 % too). */
static void check_quality_mesh(const char *name, const defo_mesh *s, int cells,
                               double exact_volume) {
    defo_mesher_def def = defo_default_mesher_def();
    def.cells = cells;
    defo_mesh *m = NULL, *m2 = NULL, *m0 = NULL;
    defo_mesher_report rep, rep0;
    defo_set_threads(1);
    CHECK_OK(defo_mesh_surface(s, &def, &m, &rep));
    defo_set_threads(2);
    CHECK_OK(defo_mesh_surface(s, &def, &m2, NULL));
    defo_set_threads(0);
    defo_mesher_def def0 = def;
    def0.target_dihedral = 0;
    CHECK_OK(defo_mesh_surface(s, &def0, &m0, &rep0));
    if (!m || !m2 || !m0) goto out;
    CHECK(m->order == 1 && m->num_elems > 0);
    defo_index inv = -1;
    CHECK_OK(defo_mesh_count_inverted(m, NULL, &inv, NULL));
    CHECK(inv == 0);
    defo_quality_summary q, q0;
    CHECK_OK(defo_mesh_quality_summary(m, NULL, &q));
    CHECK_OK(defo_mesh_quality_summary(m0, NULL, &q0));
    CHECK_MSG(q.min_dihedral >= 20.0, "%s: min dihedral %.3f", name, q.min_dihedral);
    CHECK(q0.min_dihedral >= 10.0 && q0.min_dihedral < 20.0);
    CHECK(rep0.optimize_sweeps == 0 && rep.optimize_sweeps > 0);
    /* the report's "before" is the unoptimised mesh's quality */
    CHECK(rep.quality_snapped.min_dihedral == q0.min_dihedral);
    double vol = 0;
    CHECK_OK(defo_element_volume(m, NULL, &vol));
    double verr = (vol - rep.surface_volume) / rep.surface_volume;
    CHECK_MSG(fabs(verr) <= 0.01, "%s: volume error %.4f", name, verr);
    CHECK_NEAR(rep.volume, vol, 1e-12 * vol);
    if (exact_volume > 0) CHECK(fabs(vol - exact_volume) <= 0.01 * exact_volume);
    /* boundary nodes against the brute-force distance */
    defo_boundary bd;
    double maxd = 0;
    CHECK_OK(defo_mesh_boundary(m, 0, &bd));
    char *mark = calloc((size_t)m->num_nodes, 1);
    for (size_t i = 0; i < 3 * (size_t)bd.num_faces; i++) mark[bd.faces[i]] = 1;
    int nb = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (mark[i]) {
            maxd = fmax(maxd, brute_dist(s, m->x + 3 * (size_t)i));
            nb++;
        }
    free(mark);
    defo_boundary_free(&bd);
    CHECK(maxd <= 0.5 * rep.h);
    CHECK_NEAR(maxd, rep.max_boundary_distance, 1e-12 * rep.h);
    /* determinism */
    int same = m->num_nodes == m2->num_nodes && m->num_elems == m2->num_elems &&
               !memcmp(m->x, m2->x, 3 * sizeof(double) * (size_t)m->num_nodes) &&
               !memcmp(m->elems, m2->elems, 4 * sizeof(defo_index) * (size_t)m->num_elems);
    CHECK(same);
    double alt = min_altitude(m), alt0 = min_altitude(m0);
    CHECK(alt > alt0);
    double verr0 = (rep0.volume - rep.surface_volume) / rep.surface_volume;
    TEST_REPORT("%s cells %d: h %.4g, %d nodes, %d tets (before: %d), inverted %d, min dihedral "
                "%.2f deg (before: %.2f), max %.2f; volume %.6g vs surface %.6g: error %+.3f %% "
                "(before: %+.3f %%)%s; boundary nodes %d, max distance %.3f h; smallest "
                "altitude %.3f h (before: %.3f h); %d sweeps, %lld moves, %lld flips, %lld "
                "wedges removed, volume offset <= %.3f h; bit-identical (1 vs 2 threads) %s",
                name, cells, rep.h, (int)m->num_nodes, (int)m->num_elems, (int)m0->num_elems,
                (int)inv, q.min_dihedral, q0.min_dihedral, q.max_dihedral, vol, rep.surface_volume,
                100 * verr, 100 * verr0, "", nb, maxd / rep.h, alt / rep.h, alt0 / rep.h,
                rep.optimize_sweeps, (long long)rep.optimize_moves, (long long)rep.optimize_flips,
                (long long)rep.optimize_deleted, rep.volume_offset / rep.h, same ? "yes" : "NO");
    if (exact_volume > 0)
        TEST_REPORT("%s: analytic volume %.6g, mesh %+.3f %%, triangulated surface %+.3f %%", name,
                    exact_volume, 100 * (vol / exact_volume - 1),
                    100 * (rep.surface_volume / exact_volume - 1));
    report_hist("before", &q0);
    report_hist("after", &q);
out:
    defo_mesh_destroy(m);
    defo_mesh_destroy(m2);
    defo_mesh_destroy(m0);
}

static void check_real_mesh(const char *name, int cells) {
    defo_mesh *s = read_data(name);
    CHECK(s != NULL);
    if (!s) return;
    check_quality_mesh(name, s, cells, 0);
    defo_mesh_destroy(s);
}

static void test_mesh_bunny(void) {
    check_real_mesh("bunny.off", 20);
    check_real_mesh("bunny.off", 25);
}
static void test_mesh_eight(void) {
    check_real_mesh("eight.off", 30);
}
static void test_mesh_sphere_quality(void) {
    defo_mesh *s = uv_sphere(0, 0, 0, 1, 48, 96);
    check_quality_mesh("sphere r=1 (48x96 UV)", s, 16, 4.0 / 3.0 * PI);
    defo_mesh_destroy(s);
}
static void test_mesh_torus_quality(void) {
    const double R = 1, r = 0.35;
    defo_mesh *s = torus_surface(R, r, 128, 48);
    check_quality_mesh("torus R=1 r=0.35 (128x48)", s, 20, 2 * PI * PI * R * r * r);
    defo_mesh_destroy(s);
}

/* det J of a tet10 (VTK order) at barycentric l, computed here. */
static double detj10(const double *x, const defo_index *v, const double l[4]) {
    static const int E[6][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {2, 3}};
    double J[3][3] = {{0}};
    for (int nd = 0; nd < 10; nd++) {
        double g[4] = {0, 0, 0, 0}; /* dN/dL */
        if (nd < 4)
            g[nd] = 4 * l[nd] - 1;
        else {
            g[E[nd - 4][0]] = 4 * l[E[nd - 4][1]];
            g[E[nd - 4][1]] = 4 * l[E[nd - 4][0]];
        }
        for (int q = 0; q < 3; q++)
            for (int r = 0; r < 3; r++)
                J[r][q] += x[3 * (size_t)v[nd] + (size_t)r] * (g[q + 1] - g[0]);
    }
    return J[0][0] * (J[1][1] * J[2][2] - J[1][2] * J[2][1]) -
           J[0][1] * (J[1][0] * J[2][2] - J[1][2] * J[2][0]) +
           J[0][2] * (J[1][0] * J[2][1] - J[1][1] * J[2][0]);
}

/* tet10 on the bunny: the edge nodes are placed after the corners were
 * optimised; det J > 0 at corners, edge nodes, centroid and a 4^3 grid of
 * interior points of every element, and by defo_element_jacobian_quality;
 * curved volume within 1 %. */
static void test_mesh_tet10(void) {
    defo_mesh *s = read_data("bunny.off");
    if (!s) {
        CHECK(0);
        return;
    }
    defo_mesher_def def = defo_default_mesher_def();
    def.cells = 14;
    def.order = 2;
    defo_mesh *m = NULL;
    defo_mesher_report rep;
    CHECK_OK(defo_mesh_surface(s, &def, &m, &rep));
    if (!m) {
        defo_mesh_destroy(s);
        return;
    }
    CHECK(m->order == 2 && m->nodes_per_elem == 10);
    int bad = 0;
    double min_ratio = INFINITY;
    for (defo_index e = 0; e < m->num_elems; e++) {
        const defo_index *v = m->elems + 10 * (size_t)e;
        for (int a = 0; a <= 4; a++)
            for (int b = 0; a + b <= 4; b++)
                for (int c = 0; a + b + c <= 4; c++) {
                    double l[4] = {a / 4.0, b / 4.0, c / 4.0, (4 - a - b - c) / 4.0};
                    double dj = detj10(m->x, v, l);
                    if (!(dj > 0)) bad++;
                    double l0[4] = {0.25, 0.25, 0.25, 0.25};
                    min_ratio = fmin(min_ratio, dj / detj10(m->x, v, l0));
                }
    }
    CHECK(bad == 0);
    /* the element module's measure agrees: positive everywhere */
    double worst = 0;
    defo_index worst_e = -1;
    CHECK_OK(defo_element_jacobian_quality(m, NULL, NULL, &worst, &worst_e));
    CHECK(worst > 0);
    CHECK(rep.quality.min_dihedral >= 20.0); /* of the corner tets */
    CHECK(fabs(rep.volume_error) <= 0.01);
    CHECK(rep.edge_nodes_snapped > rep.edge_nodes_boundary / 2);
    TEST_REPORT(
        "tet10 bunny cells 14: %d elements, %d nodes; boundary edge nodes on the surface "
        "%d of %d; det J <= 0 at %d of 35 points/element; min det J / det J(centroid) "
        "%.3f; defo_element_jacobian_quality worst %.3f; corner min dihedral %.2f deg; volume "
        "error %+.3f %%",
        (int)m->num_elems, (int)m->num_nodes, (int)rep.edge_nodes_snapped,
        (int)rep.edge_nodes_boundary, bad, min_ratio, worst, rep.quality.min_dihedral,
        100 * rep.volume_error);
    defo_mesh_destroy(m);
    defo_mesh_destroy(s);
}

/* Analytic check of the whole pipeline: a fine triangulated sphere meshes
 * to a volume within 3 % of 4/3 π r^3. */
static void test_mesh_sphere_volume(void) {
    defo_mesh *s = uv_sphere(0, 0, 0, 1, 32, 64);
    defo_mesher_def def = defo_default_mesher_def();
    def.cells = 16;
    defo_mesh *m = NULL;
    defo_mesher_report rep;
    CHECK_OK(defo_mesh_surface(s, &def, &m, &rep));
    double exact = 4.0 / 3.0 * PI;
    CHECK(fabs(rep.volume - exact) <= 0.03 * exact);
    CHECK(rep.quality.inverted == 0 && rep.quality.min_dihedral >= 10);
    TEST_REPORT("sphere r=1 cells 16: volume %.5f vs 4/3 pi %.5f (%+.2f %%), min dihedral %.2f",
                rep.volume, exact, 100 * (rep.volume / exact - 1), rep.quality.min_dihedral);
    defo_mesh_destroy(m);
    defo_mesh_destroy(s);
}

/* Bad surfaces: clear errors, or a mesh with a warning. */
static void test_bad_surfaces(void) {
    defo_mesh *m = NULL, *e = NULL;
    defo_mesher_def def = defo_default_mesher_def();
    def.cells = 10;
    /* empty */
    CHECK_OK(defo_mesh_create(0, &e));
    CHECK(defo_mesh_surface(e, &def, &m, NULL) == DEFO_ERR_INVALID_MESH && m == NULL);
    CHECK(strstr(defo_last_error(), "empty") != NULL);
    defo_mesh_destroy(e);
    /* non-finite coordinate */
    defo_mesh *s = uv_sphere(0, 0, 0, 1, 8, 16);
    s->x[3 * 5 + 1] = NAN;
    CHECK(defo_mesh_surface(s, &def, &m, NULL) == DEFO_ERR_INVALID_MESH && m == NULL);
    CHECK(strstr(defo_last_error(), "non-finite") != NULL);
    defo_mesh_destroy(s);
    /* bad definition */
    s = uv_sphere(0, 0, 0, 1, 8, 16);
    def.order = 3;
    CHECK(defo_mesh_surface(s, &def, &m, NULL) == DEFO_ERR_INVALID_ARGUMENT && m == NULL);
    def.order = 1;
    def.cells = 0;
    CHECK(defo_mesh_surface(s, &def, &m, NULL) == DEFO_ERR_INVALID_ARGUMENT && m == NULL);
    def.cells = 10;
    def.target_dihedral = 60;
    CHECK(defo_mesh_surface(s, &def, &m, NULL) == DEFO_ERR_INVALID_ARGUMENT && m == NULL);
    CHECK(strstr(defo_last_error(), "target_dihedral") != NULL);
    def.target_dihedral = 20;
    def.max_boundary_distance = 0;
    CHECK(defo_mesh_surface(s, &def, &m, NULL) == DEFO_ERR_INVALID_ARGUMENT && m == NULL);
    CHECK(strstr(defo_last_error(), "max_boundary_distance") != NULL);
    def.max_boundary_distance = 0.45;
    def.target_altitude = -0.1;
    CHECK(defo_mesh_surface(s, &def, &m, NULL) == DEFO_ERR_INVALID_ARGUMENT && m == NULL);
    CHECK(strstr(defo_last_error(), "target_altitude") != NULL);
    def.target_altitude = 0.2;
    /* small hole: a mesh anyway, with a warning that says so */
    memcpy(s->tris + 3 * 40, s->tris + 3 * (s->num_tris - 1), 3 * sizeof(defo_index));
    s->num_tris--;
    defo_mesher_report rep;
    CHECK(defo_mesh_surface(s, &def, &m, &rep) == DEFO_WARNING && m != NULL);
    CHECK(strstr(defo_last_error(), "open") != NULL);
    CHECK(rep.quality.inverted == 0 && fabs(rep.volume_error) < 0.05);
    TEST_REPORT("one triangle missing: warning \"%s\", volume error %+.2f %%", defo_last_error(),
                100 * rep.volume_error);
    defo_mesh_destroy(m);
    m = NULL;
    defo_mesh_destroy(s);
    /* a hemisphere cap (half the surface missing) encloses nothing: error */
    s = uv_sphere(0, 0, 0, 1, 8, 16);
    s->num_tris = 16 * 3; /* north cap only */
    int st = defo_mesh_surface(s, &def, &m, NULL);
    CHECK(st == DEFO_ERR_INVALID_MESH && m == NULL);
    CHECK(strstr(defo_last_error(), "nothing inside") != NULL);
    defo_mesh_destroy(s);
    /* two overlapping spheres in one surface: self-intersecting, meshed as the union */
    s = uv_sphere(0, 0, 0, 1, 16, 32);
    defo_mesh *s2 = uv_sphere(0.8, 0, 0, 1, 16, 32);
    defo_index off = s->num_nodes;
    for (defo_index i = 0; i < s2->num_nodes; i++)
        defo_mesh_add_node(s, s2->x[3 * i], s2->x[3 * i + 1], s2->x[3 * i + 2], NULL);
    for (defo_index t = 0; t < s2->num_tris; t++) {
        defo_index v[3] = {s2->tris[3 * t] + off, s2->tris[3 * t + 1] + off,
                           s2->tris[3 * t + 2] + off};
        defo_mesh_add_tri(s, v, 3, 0);
    }
    def.cells = 14;
    CHECK(defo_mesh_surface(s, &def, &m, &rep) == DEFO_WARNING && m != NULL);
    CHECK(strstr(defo_last_error(), "self-intersecting") != NULL);
    /* union of two unit balls at distance 0.8: 2·(4/3 π) - lens, lens = π(4+d)(2-d)²/12 */
    double d = 0.8, uni = 2 * 4.0 / 3 * PI - PI * (4 + d) * (2 - d) * (2 - d) / 12;
    if (m) {
        double vol = 0;
        CHECK_OK(defo_element_volume(m, NULL, &vol));
        CHECK(fabs(vol - uni) < 0.06 * uni);
        CHECK(rep.quality.inverted == 0);
        TEST_REPORT("overlapping spheres: \"%s\"; volume %.4f vs union %.4f", defo_last_error(),
                    vol, uni);
    }
    defo_mesh_destroy(m);
    defo_mesh_destroy(s2);
    defo_mesh_destroy(s);
}

int main(void) {
    RUN(test_mesh_sphere_volume);
    RUN(test_mesh_sphere_quality);
    RUN(test_mesh_torus_quality);
    RUN(test_mesh_bunny);
    RUN(test_mesh_eight);
    RUN(test_mesh_tet10);
    RUN(test_bad_surfaces);
    return test_summary();
}
