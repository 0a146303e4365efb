/*
 * tests/test_geometry.c — the geometry module (include/defo/geometry.h):
 * signed distance and winding numbers to triangle surfaces, regions of rest
 * positions.
 *
 * References used: the exact distance to a sphere (the triangulated sphere is
 * inscribed, so its distance differs by at most r - r_in), a brute-force
 * closest point computed by a different method (plane projection + edges,
 * test_surfaces.h), the exact winding number (sum of solid angles); regions
 * against a brute-force test of every node.
 */
#include "defo/geometry.h"
#include "test.h"
#include "test_surfaces.h"

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

/* ------------------------------------------------------------ regions */
/* Regions select node sets of the rest positions: a box, a sphere and a
 * tag, each checked against a brute-force test of every node; marks and
 * node lists agree; a negative radius and NULL arguments are refused. */
static void test_regions(void) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 4, bd.cells[1] = 3, bd.cells[2] = 2;
    bd.size[0] = 1.0, bd.size[1] = 0.7, bd.size[2] = 1.3;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    if (!m) return;
    const defo_index n = m->num_nodes;
    const double lo[3] = {0.2, -1, -1}, hi[3] = {0.6, 1, 1}, c[3] = {0.5, 0.5, 0.5};
    defo_region rs[2] = {defo_region_box(lo, hi), defo_region_sphere(c, 0.45)};
    unsigned char *mark = malloc((size_t)n);
    for (int t = 0; t < 2; t++) {
        CHECK_OK(defo_region_mark(m, &rs[t], mark));
        defo_index *nodes = NULL, count = 0, want = 0, k = 0;
        CHECK_OK(defo_region_nodes(m, &rs[t], &nodes, &count));
        int same = 1;
        for (defo_index i = 0; i < n; i++) {
            const double *x = m->x + 3 * i;
            int in = t == 0 ? x[0] >= lo[0] && x[0] <= hi[0] && x[1] >= lo[1] && x[1] <= hi[1] &&
                                  x[2] >= lo[2] && x[2] <= hi[2]
                            : (x[0] - c[0]) * (x[0] - c[0]) + (x[1] - c[1]) * (x[1] - c[1]) +
                                      (x[2] - c[2]) * (x[2] - c[2]) <=
                                  0.45 * 0.45;
            same &= mark[i] == in;
            if (in) {
                want++;
                same &= k < count && nodes[k++] == i;
            }
        }
        CHECK(same && count == want && want > 0 && want < n);
        defo_region_nodes_free(nodes);
    }
    defo_region neg = defo_region_sphere(c, -1);
    CHECK(defo_region_mark(m, &neg, mark) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(defo_region_mark(NULL, &neg, mark) == DEFO_ERR_INVALID_ARGUMENT);
    defo_region tag = defo_region_tag(7); /* no tags: selects nothing */
    CHECK_OK(defo_region_mark(m, &tag, mark));
    int none = 1;
    for (defo_index i = 0; i < n; i++) none &= mark[i] == 0;
    CHECK(none);
    free(mark);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_sdf_sphere);
    RUN(test_winding_sphere);
    RUN(test_winding_defects);
    RUN(test_regions);
    return test_summary();
}
