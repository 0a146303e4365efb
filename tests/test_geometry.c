/*
 * tests/test_geometry.c — the geometry module (include/defo/geometry.h):
 * signed distance and winding numbers to triangle surfaces, regions of rest
 * positions, scripted rigid motion.
 *
 * References used: the exact distance to a sphere (the triangulated sphere is
 * inscribed, so its distance differs by at most r - r_in), a brute-force
 * closest point computed by a different method (plane projection + edges,
 * test_surfaces.h), the exact winding number (sum of solid angles); regions
 * against a brute-force test of every node and nodes placed on and just off
 * the region's boundary; motions against positions computed by hand for
 * rotations whose matrices are known in closed form (quarter and half turns
 * about z, the 120° turn about (1,1,1) that permutes the axes) and velocities
 * against central differences of x(t).
 */
#include "defo/geometry.h"
#include "test.h"
#include "test_surfaces.h"

#include <stdint.h>

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
 * plane, each checked against a brute-force test of every node with the
 * tolerance rule of the header (tol = 1e-9 · bounding-box diagonal); marks
 * and node lists agree; bad regions and NULL arguments are refused. */
static void test_regions(void) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 4, bd.cells[1] = 3, bd.cells[2] = 2;
    bd.size[0] = 1.0, bd.size[1] = 0.7, bd.size[2] = 1.3;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    if (!m) return;
    const defo_index n = m->num_nodes;
    const double tol = 1e-9 * sqrt(1.0 + 0.7 * 0.7 + 1.3 * 1.3);
    const double lo[3] = {0.2, -1, -1}, hi[3] = {0.6, 1, 1}, c[3] = {0.5, 0.5, 0.5};
    const double pp[3] = {0.3, 0.2, 0.1}, pn[3] = {1, -2, 0.5};
    defo_region rs[3] = {defo_region_box(lo, hi), defo_region_sphere(c, 0.45),
                         defo_region_plane(pp, pn)};
    unsigned char *mark = malloc((size_t)n);
    for (int t = 0; t < 3; t++) {
        CHECK(rs[t].tolerance == DEFO_REGION_TOLERANCE);
        CHECK_OK(defo_region_mark(m, &rs[t], mark));
        defo_index *nodes = NULL, count = 0, want = 0, k = 0;
        CHECK_OK(defo_region_nodes(m, &rs[t], &nodes, &count));
        int same = 1;
        for (defo_index i = 0; i < n; i++) {
            const double *x = m->x + 3 * i;
            int in;
            if (t == 0) {
                in = 1;
                for (int d = 0; d < 3; d++) in &= x[d] >= lo[d] - tol && x[d] <= hi[d] + tol;
            } else if (t == 1) {
                in = sqrt((x[0] - c[0]) * (x[0] - c[0]) + (x[1] - c[1]) * (x[1] - c[1]) +
                          (x[2] - c[2]) * (x[2] - c[2])) <= 0.45 + tol;
            } else {
                double len = sqrt(dot3(pn, pn));
                in = ((x[0] - pp[0]) * pn[0] + (x[1] - pp[1]) * pn[1] + (x[2] - pp[2]) * pn[2]) /
                         len <=
                     tol;
            }
            same &= mark[i] == in;
            if (in) {
                want++;
                same &= k < count && nodes[k++] == i;
            }
        }
        CHECK_MSG(same && count == want && want > 0 && want < n, "region %d: %d of %d nodes", t,
                  (int)count, (int)n);
        defo_region_nodes_free(nodes);
    }
    defo_region bad = defo_region_sphere(c, -1);
    CHECK(defo_region_mark(m, &bad, mark) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "radius") != NULL);
    CHECK(defo_region_mark(NULL, &bad, mark) == DEFO_ERR_INVALID_ARGUMENT);
    bad = defo_region_box(lo, hi);
    bad.hi[2] = NAN;
    CHECK(defo_region_mark(m, &bad, mark) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "hi[2]") != NULL);
    bad = defo_region_box(lo, hi);
    bad.tolerance = -1e-9;
    CHECK(defo_region_mark(m, &bad, mark) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "tolerance") != NULL);
    const double zero[3] = {0, 0, 0};
    bad = defo_region_plane(pp, zero);
    CHECK(defo_region_mark(m, &bad, mark) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "normal") != NULL);
    bad.kind = (defo_region_kind)42;
    CHECK(defo_region_mark(m, &bad, mark) == DEFO_ERR_INVALID_ARGUMENT);
    defo_index *none_nodes = NULL, none_count = -1;
    CHECK(defo_region_nodes(m, &bad, &none_nodes, &none_count) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(none_nodes == NULL && none_count == 0);
    defo_region tag = defo_region_tag(7); /* no tags: selects nothing */
    CHECK_OK(defo_region_mark(m, &tag, mark));
    int none = 1;
    for (defo_index i = 0; i < n; i++) none &= mark[i] == 0;
    CHECK(none);
    free(mark);
    defo_mesh_destroy(m);
}

/* Marked nodes of region r on m as a bit mask (m has at most 32 nodes). */
static uint32_t mark_bits(const defo_mesh *m, const defo_region *r) {
    unsigned char mark[32];
    if (defo_region_mark(m, r, mark) != DEFO_OK) return 0xffffffffu;
    uint32_t bits = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) bits |= (uint32_t)mark[i] << i;
    return bits;
}

/* The tolerance: nodes exactly on a box face, a sphere or a plane are
 * selected, nodes 0.5e-9·D outside too, nodes 2e-9·D outside are not (D the
 * bounding-box diagonal of the rest positions); with tolerance 0 only the
 * nodes exactly on the boundary are.  The same for a non-unit and an oblique
 * plane normal. */
static void test_region_tolerance(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(1, &m));
    if (!m) return;
    /* corners 0, 1 fix the bounding box [0,1]^3: D = sqrt(3) */
    const double D = sqrt(3.0), in = 0.5e-9 * D, out = 2e-9 * D;
    const double s = sqrt(0.5);
    const double pts[][3] = {
        {0, 0, 0},                              /* 0: corner */
        {1, 1, 1},                              /* 1: corner */
        {0.5, 0.25, 0.25},                      /* 2: on x = 0.5 */
        {0.5 + in, 0.25, 0.25},                 /* 3: inside the tolerance */
        {0.5 + out, 0.25, 0.25},                /* 4: outside it */
        {0.25, 0.25, 0.75},                     /* 5: on the oblique plane */
        {0.25 + s * out, 0.25 + s * out, 0.75}, /* 6: outside the oblique plane */
        {0.25 + s * in, 0.25 + s * in, 0.75},   /* 7: inside its tolerance */
    };
    const int np = (int)(sizeof pts / sizeof pts[0]);
    for (int i = 0; i < np; i++)
        CHECK_OK(defo_mesh_add_node(m, pts[i][0], pts[i][1], pts[i][2], NULL));
    const uint32_t all = (1u << np) - 1;
    /* box [0, 0.5] in x (the whole cube in y, z) */
    const double blo[3] = {0, 0, 0}, bhi[3] = {0.5, 1, 1};
    defo_region box = defo_region_box(blo, bhi);
    uint32_t want = all & ~(1u << 1) & ~(1u << 4);
    CHECK_MSG(mark_bits(m, &box) == want, "box: %#x, want %#x", mark_bits(m, &box), want);
    box.tolerance = 0;
    want = all & ~(1u << 1) & ~(1u << 3) & ~(1u << 4);
    CHECK_MSG(mark_bits(m, &box) == want, "exact box: %#x, want %#x", mark_bits(m, &box), want);
    /* plane x = 0.5 with normal +x, as unit and as a longer vector */
    const double p0[3] = {0.5, 0, 0}, nx[3] = {1, 0, 0}, nx3[3] = {3, 0, 0};
    defo_region pl = defo_region_plane(p0, nx), pl3 = defo_region_plane(p0, nx3);
    want = all & ~(1u << 1) & ~(1u << 4);
    CHECK_MSG(mark_bits(m, &pl) == want, "plane: %#x, want %#x", mark_bits(m, &pl), want);
    CHECK(mark_bits(m, &pl3) == want);
    /* the opposite side: x >= 0.5, the plane itself and node 3 included */
    const double mx[3] = {-1, 0, 0};
    defo_region pm = defo_region_plane(p0, mx);
    want = (1u << 1) | (1u << 2) | (1u << 3) | (1u << 4);
    CHECK_MSG(mark_bits(m, &pm) == want, "plane -x: %#x, want %#x", mark_bits(m, &pm), want);
    /* oblique plane x + y = 0.5 through node 5, normal (1,1,0)/√2 */
    const double q0[3] = {0.5, 0, 0.3}, nq[3] = {1, 1, 0};
    defo_region ob = defo_region_plane(q0, nq);
    uint32_t got = mark_bits(m, &ob);
    CHECK_MSG((got >> 5 & 1) && (got >> 7 & 1) && !(got >> 6 & 1) && (got & 1) && !(got >> 1 & 1),
              "oblique plane: %#x", got);
    /* sphere of radius 0.5 about (0, 0.25, 0.25): node 2 on it */
    const double c0[3] = {0, 0.25, 0.25};
    defo_region sp = defo_region_sphere(c0, 0.5);
    got = mark_bits(m, &sp);
    CHECK_MSG((got >> 2 & 1) && (got >> 3 & 1) && !(got >> 4 & 1), "sphere: %#x", got);
    sp.tolerance = 0;
    got = mark_bits(m, &sp);
    CHECK_MSG((got >> 2 & 1) && !(got >> 3 & 1) && !(got >> 4 & 1), "exact sphere: %#x", got);
    defo_mesh_destroy(m);

    /* A generated bar moved by 0.1 m along y (as a scene's "translate"
     * moves rest positions): a flat box min = max = the decimal 0.1 + j·h a
     * user would type selects exactly node layer j, for every j, whatever
     * the rounding of the generated and translated coordinates; the exact
     * test (tolerance 0) misses layers. */
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 2, bd.cells[1] = 10, bd.cells[2] = 2;
    bd.size[0] = 0.1, bd.size[1] = 0.7, bd.size[2] = 0.1;
    CHECK_OK(defo_generate_box(&bd, &m));
    if (!m) return;
    for (defo_index i = 0; i < m->num_nodes; i++) m->x[3 * i + 1] += 0.1;
    int wrong = 0, missed_exact = 0;
    for (int j = 0; j <= 10; j++) {
        char buf[32];
        snprintf(buf, sizeof buf, "%.2f", 0.1 + 0.07 * j); /* "0.31", as written in a scene */
        const double y = strtod(buf, NULL);
        const double lo[3] = {-1, y, -1}, hi[3] = {1, y, 1};
        defo_region r = defo_region_box(lo, hi);
        defo_index *nodes = NULL, count = 0;
        CHECK_OK(defo_region_nodes(m, &r, &nodes, &count));
        defo_region_nodes_free(nodes);
        wrong += count != 9;
        r.tolerance = 0;
        CHECK_OK(defo_region_nodes(m, &r, &nodes, &count));
        defo_region_nodes_free(nodes);
        missed_exact += count != 9;
    }
    TEST_REPORT("bar of 11 node layers, flat box on each: %d layers missed with the tolerance, "
                "%d without it",
                wrong, missed_exact);
    CHECK(wrong == 0);
    CHECK(missed_exact > 0); /* the case the tolerance exists for does occur */
    defo_mesh_destroy(m);
}

/* Tag regions select the nodes of the elements with the tag, nothing else;
 * a tag no element carries selects nothing. */
static void test_region_tag(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(1, &m));
    if (!m) return;
    for (int i = 0; i < 7; i++) CHECK_OK(defo_mesh_add_node(m, i, (i * i) % 5, (i * 3) % 4, NULL));
    const defo_index e0[4] = {0, 1, 2, 3}, e1[4] = {1, 2, 3, 4}, e2[4] = {2, 3, 4, 5};
    CHECK_OK(defo_mesh_add_elem(m, e0, 7));
    CHECK_OK(defo_mesh_add_elem(m, e1, 0));
    CHECK_OK(defo_mesh_add_elem(m, e2, 9));
    defo_region r7 = defo_region_tag(7), r9 = defo_region_tag(9), r8 = defo_region_tag(8);
    CHECK_MSG(mark_bits(m, &r7) == 0x0f, "tag 7: %#x", mark_bits(m, &r7));
    CHECK_MSG(mark_bits(m, &r9) == 0x3c, "tag 9: %#x", mark_bits(m, &r9)); /* node 6: in none */
    CHECK(mark_bits(m, &r8) == 0);
    defo_index *nodes = NULL, count = 0;
    CHECK_OK(defo_region_nodes(m, &r9, &nodes, &count));
    CHECK(count == 4 && nodes && nodes[0] == 2 && nodes[1] == 3 && nodes[2] == 4 && nodes[3] == 5);
    defo_region_nodes_free(nodes);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------- motion */
static double dist3(const double *a, const double *b) {
    double d[3] = {a[0] - b[0], a[1] - b[1], a[2] - b[2]};
    return sqrt(dot3(d, d));
}

/* Positions against closed forms: a rotation about z (axis given as (0,0,2))
 * through a pivot, composed with a translation, at the quarter, eighth and
 * half turn; the 120° turn about (1,1,1), which maps (x,y,z) to (z,x,y), and
 * the full turn.  At rest nothing moves, bit for bit. */
static void test_motion_closed_form(void) {
    defo_motion_def m = defo_default_motion_def();
    m.pivot[0] = 1, m.pivot[1] = 2, m.pivot[2] = 0.5;
    m.velocity[0] = 0.3, m.velocity[1] = -0.1, m.velocity[2] = 0.2;
    m.angular_axis[2] = 2;
    m.angular_speed = PI / 2;
    CHECK_OK(defo_motion_validate(&m, NULL));
    const double p[3] = {2, 2, 1}; /* p − pivot = (1, 0, 0.5) */
    const double s = sqrt(0.5);
    /* x = pivot + R(θ)(1, 0, 0.5) + v t = (1 + cos θ, 2 + sin θ, 1) + v t */
    const double ts[4] = {0, 0.5, 1, 2};
    const double want[4][3] = {
        {2, 2, 1}, {1 + s + 0.15, 2 + s - 0.05, 1.1}, {1.3, 2.9, 1.2}, {0.6, 1.8, 1.4}};
    double worst = 0;
    for (int k = 0; k < 4; k++) {
        double x[3];
        defo_motion_eval(&m, ts[k], p, x, NULL);
        worst = fmax(worst, dist3(x, want[k]));
    }
    /* 120° about (1,1,1): R r = (r2, r0, r1) */
    defo_motion_def c = defo_default_motion_def();
    c.pivot[0] = 0.5, c.pivot[1] = -1, c.pivot[2] = 2;
    c.velocity[0] = 1, c.velocity[2] = -1;
    c.angular_axis[0] = c.angular_axis[1] = c.angular_axis[2] = 1;
    c.angular_speed = 2 * PI / 3;
    const double q[3] = {1.5, 1, 5}; /* q − pivot = (1, 2, 3) */
    const double want1[3] = {0.5 + 3 + 1, -1 + 1, 2 + 2 - 1}, want3[3] = {1.5 + 3, 1, 5 - 3};
    double x1[3], x3[3], R[9];
    defo_motion_eval(&c, 1, q, x1, NULL);
    defo_motion_eval(&c, 3, q, x3, NULL);
    worst = fmax(worst, fmax(dist3(x1, want1), dist3(x3, want3)));
    defo_motion_rotation(&c, 1, R);
    const double Rwant[9] = {0, 0, 1, 1, 0, 0, 0, 1, 0};
    double rerr = 0;
    for (int k = 0; k < 9; k++) rerr = fmax(rerr, fabs(R[k] - Rwant[k]));
    TEST_REPORT("max position error vs closed forms %.2e; 120° rotation matrix error %.2e", worst,
                rerr);
    CHECK(worst < 1e-14 * 8);
    CHECK(rerr < 1e-15 * 4);
    /* at rest (default) and at t = 0: exactly the input point */
    defo_motion_def rest = defo_default_motion_def();
    double x[3];
    const double odd[3] = {1e-300, -3.7e12, 0.1};
    defo_motion_eval(&rest, 12.5, odd, x, NULL);
    CHECK(x[0] == odd[0] && x[1] == odd[1] && x[2] == odd[2]);
    defo_motion_eval(&c, 0, q, x, NULL);
    CHECK(x[0] == q[0] && x[1] == q[1] && x[2] == q[2]);
}

/* Velocities against central differences of x(t) (h = 1e-5 s, error
 * O(h²)), for points of a general motion (oblique non-unit axis, pivot,
 * translation) at several times; the pose maps back (unmap ∘ map = id) and
 * its R is a rotation. */
static void test_motion_velocity(void) {
    defo_motion_def m = defo_default_motion_def();
    m.pivot[0] = -0.4, m.pivot[1] = 0.7, m.pivot[2] = 1.1;
    m.velocity[0] = 0.25, m.velocity[1] = -0.6, m.velocity[2] = 0.05;
    m.angular_axis[0] = 0.3, m.angular_axis[1] = -2, m.angular_axis[2] = 0.9;
    m.angular_speed = 1.7;
    test_rng rng = {2024};
    double worst_fd = 0, worst_round = 0, worst_orth = 0;
    const double h = 1e-5;
    for (int k = 0; k < 50; k++) {
        double p[3], t = test_range(&rng, -3, 3);
        for (int d = 0; d < 3; d++) p[d] = test_range(&rng, -2, 2);
        double x[3], v[3], xp[3], xm[3], back[3];
        defo_motion_eval(&m, t, p, x, v);
        defo_motion_eval(&m, t + h, p, xp, NULL);
        defo_motion_eval(&m, t - h, p, xm, NULL);
        for (int d = 0; d < 3; d++)
            worst_fd = fmax(worst_fd, fabs((xp[d] - xm[d]) / (2 * h) - v[d]) / (1 + fabs(v[d])));
        defo_motion_pose P;
        defo_motion_pose_at(&m, t, &P);
        double vp[3], xo[3];
        defo_motion_pose_map(&P, p, xo, NULL);
        defo_motion_pose_velocity(&P, x, vp);
        CHECK(xo[0] == x[0] && xo[1] == x[1] && xo[2] == x[2]);
        CHECK(vp[0] == v[0] && vp[1] == v[1] && vp[2] == v[2]);
        defo_motion_pose_unmap(&P, x, back);
        worst_round = fmax(worst_round, dist3(back, p));
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double rr = 0;
                for (int l = 0; l < 3; l++) rr += P.R[3 * i + l] * P.R[3 * j + l];
                worst_orth = fmax(worst_orth, fabs(rr - (i == j)));
            }
    }
    TEST_REPORT("velocity vs central difference: max relative error %.2e; unmap(map(p)) - p "
                "%.2e; |R Rᵀ - I| %.2e",
                worst_fd, worst_round, worst_orth);
    CHECK(worst_fd < 1e-8);
    CHECK(worst_round < 1e-14 * 10);
    CHECK(worst_orth < 1e-15 * 4);
}

/* Validation: every value finite, a nonzero axis when rotating; messages
 * name the motion and the field. */
static void test_motion_validate(void) {
    defo_motion_def m = defo_default_motion_def();
    CHECK_OK(defo_motion_validate(&m, "bone"));
    m.velocity[1] = NAN;
    CHECK(defo_motion_validate(&m, "colliders[2].motion") == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "colliders[2].motion") != NULL);
    CHECK(strstr(defo_last_error(), "velocity[1]") != NULL);
    m = defo_default_motion_def();
    m.pivot[2] = INFINITY;
    CHECK(defo_motion_validate(&m, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "pivot[2]") != NULL);
    m = defo_default_motion_def();
    m.angular_speed = NAN;
    CHECK(defo_motion_validate(&m, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    m = defo_default_motion_def();
    m.angular_axis[2] = 0;
    CHECK_OK(defo_motion_validate(&m, NULL)); /* no rotation: any axis */
    m.angular_speed = 1;
    CHECK(defo_motion_validate(&m, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "angular_axis") != NULL);
    m.angular_axis[0] = 1e-300; /* tiny but nonzero: normalised without underflow */
    CHECK_OK(defo_motion_validate(&m, NULL));
    double R[9];
    defo_motion_rotation(&m, PI / 2, R); /* a quarter turn about +x */
    CHECK_NEAR(R[5], -1, 1e-15);
    CHECK_NEAR(R[7], 1, 1e-15);
    m.angular_axis[0] = 0;
    m.angular_axis[1] = 1e300;           /* huge: |a|² would overflow */
    defo_motion_rotation(&m, PI / 2, R); /* a quarter turn about +y */
    CHECK_NEAR(R[2], 1, 1e-15);
    CHECK_NEAR(R[6], -1, 1e-15);
    CHECK(defo_motion_validate(NULL, NULL) == DEFO_ERR_INVALID_ARGUMENT);
}

int main(void) {
    RUN(test_sdf_sphere);
    RUN(test_winding_sphere);
    RUN(test_winding_defects);
    RUN(test_regions);
    RUN(test_region_tolerance);
    RUN(test_region_tag);
    RUN(test_motion_closed_form);
    RUN(test_motion_velocity);
    RUN(test_motion_validate);
    return test_summary();
}
