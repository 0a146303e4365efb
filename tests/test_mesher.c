/*
 * tests/test_mesher.c — signed distance, winding numbers and the BCC mesher
 * (include/defo/mesher.h) on analytic spheres and on real scanned surfaces
 * (data/meshes/bunny.off, eight.off; see data/meshes/README.md).
 *
 * References used: the exact distance to a sphere (the triangulated sphere is
 * inscribed, so its distance differs by at most r - r_in), a brute-force
 * closest point computed here by a different method (plane projection +
 * edges), the exact winding number (sum of solid angles), the surface's own
 * enclosed volume (divergence theorem) and the tet10 Jacobian evaluated here.
 */
#include "defo/defo.h"
#include "defo/mesher.h"
#include "test.h"

#include <stdint.h>

#define PI 3.14159265358979323846

/* ------------------------------------------------------------ helpers */
/* UV sphere: poles + (nlat-1) rings of nlon vertices, outward CCW. */
static defo_mesh *uv_sphere(double cx, double cy, double cz, double r, int nlat, int nlon) {
    defo_mesh *m = NULL;
    if (defo_mesh_create(0, &m)) return NULL;
    defo_mesh_add_node(m, cx, cy, cz + r, NULL); /* 0: north */
    for (int i = 1; i < nlat; i++) {
        double th = PI * i / nlat;
        for (int j = 0; j < nlon; j++) {
            double ph = 2 * PI * j / nlon;
            defo_mesh_add_node(m, cx + r * sin(th) * cos(ph), cy + r * sin(th) * sin(ph),
                               cz + r * cos(th), NULL);
        }
    }
    defo_index south = m->num_nodes;
    defo_mesh_add_node(m, cx, cy, cz - r, NULL);
#define RING(i, j) (1 + ((i)-1) * nlon + ((j) % nlon))
    for (int j = 0; j < nlon; j++) {
        defo_index t[3] = {0, RING(1, j), RING(1, j + 1)};
        defo_mesh_add_tri(m, t, 3, 0);
    }
    for (int i = 1; i < nlat - 1; i++)
        for (int j = 0; j < nlon; j++) {
            defo_index a = RING(i, j), b = RING(i, j + 1), c = RING(i + 1, j),
                       d = RING(i + 1, j + 1);
            defo_index t1[3] = {a, c, d}, t2[3] = {a, d, b};
            defo_mesh_add_tri(m, t1, 3, 0);
            defo_mesh_add_tri(m, t2, 3, 0);
        }
    for (int j = 0; j < nlon; j++) {
        defo_index t[3] = {south, RING(nlat - 1, j + 1), RING(nlat - 1, j)};
        defo_mesh_add_tri(m, t, 3, 0);
    }
#undef RING
    return m;
}

static double dot3(const double *a, const double *b) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/* Distance from p to segment ab. */
static double seg_dist(const double *p, const double *a, const double *b) {
    double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
           ap[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
    double l2 = dot3(ab, ab), t = l2 > 0 ? dot3(ap, ab) / l2 : 0;
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    double d[3] = {ap[0] - t * ab[0], ap[1] - t * ab[1], ap[2] - t * ab[2]};
    return sqrt(dot3(d, d));
}

/* Distance from p to triangle abc, by projection on the plane then edges
 * (a different algorithm from the library's Voronoi-region walk). */
static double tri_dist(const double *p, const double *a, const double *b, const double *c) {
    double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
           v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
    double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]};
    double nn = dot3(n, n);
    if (nn > 0) {
        double w[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
        double s = dot3(w, n) / nn;
        double q[3] = {w[0] - s * n[0], w[1] - s * n[1], w[2] - s * n[2]};
        /* barycentric of q in (u, v) */
        double uu = dot3(u, u), uv = dot3(u, v), vv = dot3(v, v), qu = dot3(q, u), qv = dot3(q, v);
        double den = uu * vv - uv * uv;
        double beta = (vv * qu - uv * qv) / den, gamma = (uu * qv - uv * qu) / den;
        if (beta >= 0 && gamma >= 0 && beta + gamma <= 1) return fabs(s) * sqrt(nn);
    }
    double d = seg_dist(p, a, b);
    d = fmin(d, seg_dist(p, b, c));
    return fmin(d, seg_dist(p, c, a));
}

static double brute_dist(const defo_mesh *s, const double *p) {
    double best = INFINITY;
    for (defo_index t = 0; t < s->num_tris; t++) {
        const defo_index *v = s->tris + 3 * (size_t)t;
        best = fmin(best, tri_dist(p, s->x + 3 * (size_t)v[0], s->x + 3 * (size_t)v[1],
                                   s->x + 3 * (size_t)v[2]));
    }
    return best;
}

/* Smallest distance from c to the triangles' planes (inscribed radius). */
static double inscribed_radius(const defo_mesh *s, const double *c) {
    double rin = INFINITY;
    for (defo_index t = 0; t < s->num_tris; t++) {
        const double *a = s->x + 3 * (size_t)s->tris[3 * t],
                     *b = s->x + 3 * (size_t)s->tris[3 * t + 1],
                     *e = s->x + 3 * (size_t)s->tris[3 * t + 2];
        double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]},
               v[3] = {e[0] - a[0], e[1] - a[1], e[2] - a[2]};
        double n[3] = {u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2],
                       u[0] * v[1] - u[1] * v[0]};
        double w[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        rin = fmin(rin, fabs(dot3(w, n)) / sqrt(dot3(n, n)));
    }
    return rin;
}

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

/* ---------------------------------------------------- signed distance */
/* BVH distance == brute force (relative 1e-12); within r - r_in of the
 * analytic sphere distance; sign right wherever it is unambiguous. */
static void test_sdf_sphere(void) {
    const double c[3] = {0.3, -0.2, 0.1}, r = 1.5;
    defo_mesh *s = uv_sphere(c[0], c[1], c[2], r, 24, 48);
    CHECK(s != NULL);
    if (!s) return;
    defo_surface_sdf *sdf = NULL;
    CHECK_OK(defo_surface_sdf_create(s, NULL, &sdf));
    if (!sdf) {
        defo_mesh_destroy(s);
        return;
    }
    const defo_surface_info *info = defo_surface_sdf_info(sdf);
    CHECK(info->open_edges == 0 && info->nonmanifold_edges == 0 && info->flipped == 0);
    CHECK(info->self_intersections == 0);
    double rin = inscribed_radius(s, c), gap = r - rin;
    CHECK(info->volume > 4.0 / 3 * PI * rin * rin * rin && info->volume < 4.0 / 3 * PI * r * r * r);
    test_rng rng = {12345};
    const int n = TEST_HEAVY(3000);
    double max_rel = 0, max_gap = 0;
    int wrong_sign = 0;
    for (int i = 0; i < n; i++) {
        double p[3];
        for (int k = 0; k < 3; k++) p[k] = c[k] + test_range(&rng, -2.5, 2.5);
        defo_sdf_sample q;
        defo_surface_sdf_query(sdf, p, &q);
        double ref = brute_dist(s, p);
        max_rel = fmax(max_rel, fabs(fabs(q.distance) - ref) / fmax(ref, 1e-300));
        /* the closest point is that far from p */
        double e[3] = {q.closest[0] - p[0], q.closest[1] - p[1], q.closest[2] - p[2]};
        max_rel = fmax(max_rel, fabs(sqrt(dot3(e, e)) - ref) / fmax(ref, 1e-300));
        double rho = sqrt((p[0] - c[0]) * (p[0] - c[0]) + (p[1] - c[1]) * (p[1] - c[1]) +
                          (p[2] - c[2]) * (p[2] - c[2]));
        max_gap = fmax(max_gap, fabs(fabs(q.distance) - fabs(rho - r)));
        if (rho < rin && !(q.distance < 0)) wrong_sign++;
        if (rho > r && !(q.distance > 0)) wrong_sign++;
    }
    TEST_REPORT("%d points: max relative distance error vs brute force %.2e; max |d - d_sphere| "
                "%.3e (bound r - r_in = %.3e); wrong signs %d",
                n, max_rel, max_gap, gap, wrong_sign);
    CHECK(max_rel <= 1e-12);
    CHECK(max_gap <= gap * (1 + 1e-9));
    CHECK(wrong_sign == 0);
    defo_surface_sdf_destroy(sdf);
    defo_mesh_destroy(s);
}

/* Exact winding number is 1 inside, 0 outside (to rounding); the
 * hierarchical one agrees within a few 1e-3 and classifies every point. */
static void test_winding_sphere(void) {
    const double c[3] = {0, 0, 0}, r = 1;
    defo_mesh *s = uv_sphere(c[0], c[1], c[2], r, 16, 32);
    defo_surface_sdf *sdf = NULL;
    CHECK_OK(defo_surface_sdf_create(s, NULL, &sdf));
    if (!sdf) {
        defo_mesh_destroy(s);
        return;
    }
    double rin = inscribed_radius(s, c);
    test_rng rng = {777};
    const int n = TEST_HEAVY(2000);
    double max_exact = 0, max_fast = 0;
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        double p[3];
        for (int k = 0; k < 3; k++) p[k] = test_range(&rng, -2, 2);
        double rho = sqrt(dot3(p, p));
        if (rho > rin && rho < r) continue; /* between the polyhedron and the sphere */
        double ref = rho < rin ? 1.0 : 0.0;
        double we = defo_surface_sdf_winding_exact(sdf, p), wf = defo_surface_sdf_winding(sdf, p);
        max_exact = fmax(max_exact, fabs(we - ref));
        max_fast = fmax(max_fast, fabs(wf - we));
        if ((wf > 0.5) != (ref > 0.5)) wrong++;
    }
    TEST_REPORT("exact winding max error %.2e; hierarchical - exact max %.2e; misclassified %d",
                max_exact, max_fast, wrong);
    CHECK(max_exact < 1e-10);
    CHECK(max_fast < 0.05);
    CHECK(wrong == 0);
    defo_surface_sdf_destroy(sdf);
    defo_mesh_destroy(s);
}

/* A few triangles removed (small holes) and a few flipped: points at least
 * 0.1 r from the surface are still classified right by |w| > 1/2, without
 * repair; with repair the flips are found and the volume is restored. */
static void test_winding_defects(void) {
    const double r = 1;
    defo_mesh *s = uv_sphere(0, 0, 0, r, 16, 32);
    defo_surface_sdf *ref = NULL;
    CHECK_OK(defo_surface_sdf_create(s, NULL, &ref));
    /* flip triangles 100, 300, 500, 700 (swap two corners) */
    const int flips[4] = {100, 300, 500, 700};
    for (int f = 0; f < 4; f++) {
        defo_index *t = s->tris + 3 * flips[f];
        defo_index tmp = t[1];
        t[1] = t[2];
        t[2] = tmp;
    }
    defo_surface_sdf *rep = NULL, *raw = NULL;
    CHECK_OK(defo_surface_sdf_create(s, NULL, &rep));
    defo_sdf_def d = defo_default_sdf_def();
    d.repair_orientation = 0;
    /* remove 3 triangles far apart: holes (copy the last over them) */
    const int holes[3] = {200, 400, 600};
    for (int h = 0; h < 3; h++) {
        memcpy(s->tris + 3 * holes[h], s->tris + 3 * (s->num_tris - 1), 3 * sizeof(defo_index));
        s->num_tris--;
    }
    CHECK_OK(defo_surface_sdf_create(s, &d, &raw));
    if (!ref || !rep || !raw) goto out;
    const defo_surface_info *ir = defo_surface_sdf_info(rep), *i0 = defo_surface_sdf_info(ref);
    CHECK(ir->flipped == 4);
    CHECK_NEAR(ir->volume, i0->volume, 1e-12 * i0->volume);
    const defo_surface_info *iw = defo_surface_sdf_info(raw);
    CHECK(iw->open_edges == 9); /* 3 separate triangles' edges */
    test_rng rng = {99};
    int wrong = 0, tested = 0;
    double max_dev = 0;
    for (int i = 0; i < TEST_HEAVY(2000); i++) {
        double p[3];
        for (int k = 0; k < 3; k++) p[k] = test_range(&rng, -1.6, 1.6);
        double rho = sqrt(dot3(p, p));
        if (fabs(rho - r) < 0.1 * r) continue;
        double w = defo_surface_sdf_winding(raw, p);
        int inside = fabs(w) > 0.5;
        if (inside != (rho < r)) wrong++;
        max_dev = fmax(max_dev, fabs(w - (rho < r ? 1.0 : 0.0)));
        tested++;
    }
    TEST_REPORT("3 holes + 4 flipped triangles: %d points, misclassified %d, max |w - w_ideal| "
                "%.3f; repair found %d flips",
                tested, wrong, max_dev, (int)ir->flipped);
    CHECK(wrong == 0);
    CHECK(tested > 100);
out:
    defo_surface_sdf_destroy(ref);
    defo_surface_sdf_destroy(rep);
    defo_surface_sdf_destroy(raw);
    defo_mesh_destroy(s);
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
    CHECK_OK(defo_mesh_volume(m, NULL, &vol));
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
        CHECK_OK(defo_mesh_volume(m, NULL, &vol));
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
    RUN(test_sdf_sphere);
    RUN(test_winding_sphere);
    RUN(test_winding_defects);
    RUN(test_mesh_sphere_volume);
    RUN(test_mesh_bunny);
    RUN(test_mesh_eight);
    RUN(test_mesh_tet10);
    RUN(test_bad_surfaces);
    return test_summary();
}
