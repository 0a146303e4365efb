/*
 * tests/test_mesher.c — the BCC mesher (include/defo/mesher.h) on analytic
 * spheres and on real scanned surfaces (data/meshes/bunny.off, eight.off;
 * see data/meshes/README.md).  The signed distance and winding numbers it
 * queries are tested in test_geometry.c.
 *
 * References used: a brute-force distance to the surface computed by a
 * different method (plane projection + edges, test_surfaces.h), the
 * surface's own enclosed volume (divergence theorem) and the tet10 Jacobian
 * evaluated here.
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
static void report_hist(const defo_quality_summary *q) {
    char buf[512];
    int n = 0;
    for (int b = 0; b < DEFO_QUALITY_BINS; b++)
        if (q->min_dihedral_hist[b])
            n += snprintf(buf + n, sizeof buf - (size_t)n, " [%d,%d):%d", 10 * b, 10 * b + 10,
                          (int)q->min_dihedral_hist[b]);
    if (n == 0) buf[0] = 0;
    TEST_REPORT("min-dihedral histogram:%s", buf);
}

/* The acceptance checks on a real surface: no inverted element,
 * min dihedral >= 10°, volume within 3 % of the surface's, every boundary
 * node within h/2 of the surface (brute-force distance computed here),
 * deterministic (two runs, 1 and 2 threads, bit-identical). */
static void check_real_mesh(const char *name, int cells) {
    defo_mesh *s = read_data(name);
    CHECK(s != NULL);
    if (!s) return;
    defo_mesher_def def = defo_default_mesher_def();
    def.cells = cells;
    defo_mesh *m = NULL, *m2 = NULL;
    defo_mesher_report rep;
    defo_set_threads(1);
    CHECK_OK(defo_mesh_surface(s, &def, &m, &rep));
    defo_set_threads(2);
    CHECK_OK(defo_mesh_surface(s, &def, &m2, NULL));
    defo_set_threads(0);
    if (!m || !m2) goto out;
    CHECK(m->order == 1 && m->num_elems > 0);
    defo_index inv = -1;
    CHECK_OK(defo_mesh_count_inverted(m, NULL, &inv, NULL));
    CHECK(inv == 0);
    defo_quality_summary q;
    CHECK_OK(defo_mesh_quality_summary(m, NULL, &q));
    CHECK(q.min_dihedral >= 10.0);
    double vol = 0;
    CHECK_OK(defo_element_volume(m, NULL, &vol));
    double verr = (vol - rep.surface_volume) / rep.surface_volume;
    CHECK(fabs(verr) <= 0.03);
    CHECK_NEAR(rep.volume, vol, 1e-12 * vol);
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
    TEST_REPORT("%s cells %d: h %.4g, %d nodes, %d tets, inverted %d, min/max dihedral %.2f/%.2f "
                "deg, volume %.6g vs surface %.6g (error %+.3f %%), boundary nodes %d (snapped "
                "%d), max boundary distance %.4g = %.3f h, bit-identical (1 vs 2 threads) %s",
                name, cells, rep.h, (int)m->num_nodes, (int)m->num_elems, (int)inv, q.min_dihedral,
                q.max_dihedral, vol, rep.surface_volume, 100 * verr, nb, (int)rep.snapped_nodes,
                maxd, maxd / rep.h, same ? "yes" : "NO");
    report_hist(&q);
out:
    defo_mesh_destroy(m);
    defo_mesh_destroy(m2);
    defo_mesh_destroy(s);
}

static void test_mesh_bunny(void) {
    check_real_mesh("bunny.off", 20);
}
static void test_mesh_eight(void) {
    check_real_mesh("eight.off", 30);
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

/* tet10 on the bunny: det J > 0 at corners, edge nodes, centroid and a 4^3
 * grid of interior points of every element; curved volume within 3 %. */
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
    CHECK(fabs(rep.volume_error) <= 0.03);
    CHECK(rep.edge_nodes_snapped > rep.edge_nodes_boundary / 2);
    TEST_REPORT("tet10 bunny cells 14: %d elements, %d nodes; boundary edge nodes on the surface "
                "%d of %d; det J <= 0 at %d of 35 points/element; min det J / det J(centroid) "
                "%.3f; volume error %+.3f %%",
                (int)m->num_elems, (int)m->num_nodes, (int)rep.edge_nodes_snapped,
                (int)rep.edge_nodes_boundary, bad, min_ratio, 100 * rep.volume_error);
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
    RUN(test_mesh_bunny);
    RUN(test_mesh_eight);
    RUN(test_mesh_tet10);
    RUN(test_bad_surfaces);
    return test_summary();
}
