/*
 * tests/test_contact.c — the contact layer between bodies (defo/contact.h)
 * and the geometry it stands on (defo/geometry.h: box hierarchies,
 * closest points).  Checked against brute force (every box, dense sampling
 * of the primitives), finite differences of the penalty energy and of the
 * barrier's force, and conservation of linear momentum by the impulses.
 */
#include "defo/defo.h"
#include "test.h"

static double rnd(unsigned *s) {
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / 16777216.0;
}

/* ------------------------------------------------------------ hierarchy */
typedef struct hits {
    int n;
    unsigned char *seen;
} hits;

static int mark(void *ctx, defo_index i) {
    hits *h = ctx;
    h->seen[i]++;
    h->n++;
    return 0;
}

static int overlaps(const double *a, const double *b) {
    return a[0] <= b[3] && b[0] <= a[3] && a[1] <= b[4] && b[1] <= a[4] && a[2] <= b[5] &&
           b[2] <= a[5];
}

static void test_bvh_matches_brute_force(void) {
    enum { N = 700, Q = 200 };
    double *box = malloc(6 * N * sizeof *box);
    unsigned char *seen = calloc(N, 1);
    unsigned s = 7;
    for (int i = 0; i < N; i++) {
        for (int k = 0; k < 3; k++) {
            double c = rnd(&s), h = 0.02 * rnd(&s);
            box[6 * i + k] = c - h;
            box[6 * i + 3 + k] = c + h;
        }
    }
    defo_bvh *t = NULL;
    CHECK_OK(defo_bvh_create(box, N, &t));
    int mism = 0;
    for (int round = 0; round < 2; round++) {
        if (round == 1) { /* move every box, refit, same answers as brute force */
            for (int i = 0; i < N; i++)
                for (int k = 0; k < 3; k++) {
                    const double d = 0.3 * (rnd(&s) - 0.5);
                    box[6 * i + k] += d;
                    box[6 * i + 3 + k] += d;
                }
            defo_bvh_refit(t, box);
        }
        for (int q = 0; q < Q; q++) {
            double qb[6];
            for (int k = 0; k < 3; k++) {
                double c = rnd(&s), h = 0.1 * rnd(&s);
                qb[k] = c - h;
                qb[3 + k] = c + h;
            }
            memset(seen, 0, N);
            hits h = {0, seen};
            defo_bvh_query(t, qb, mark, &h);
            for (int i = 0; i < N; i++) mism += seen[i] != (unsigned char)overlaps(box + 6 * i, qb);
        }
    }
    CHECK(mism == 0);
    double b[6];
    defo_bvh_bounds(t, b);
    for (int i = 0; i < N; i++)
        for (int k = 0; k < 3; k++) CHECK(b[k] <= box[6 * i + k] && b[3 + k] >= box[6 * i + 3 + k]);
    defo_bvh_destroy(t);
    free(box);
    free(seen);
}

/* ------------------------------------------------------- closest points */
static void test_closest_points_brute_force(void) {
    unsigned s = 11;
    double worst_t = 0, worst_s = 0;
    for (int trial = 0; trial < 300; trial++) {
        double a[3], b[3], c[3], p[3], q0[3], q1[3];
        for (int k = 0; k < 3; k++) {
            a[k] = rnd(&s), b[k] = rnd(&s), c[k] = rnd(&s), p[k] = 2 * rnd(&s) - 0.5;
            q0[k] = rnd(&s), q1[k] = rnd(&s);
        }
        if (trial % 7 == 0) /* a sliver: c on the line ab */
            for (int k = 0; k < 3; k++) c[k] = a[k] + 0.3 * (b[k] - a[k]);
        double w[3];
        int f;
        const double d2 = defo_point_triangle_closest(p, a, b, c, w, &f);
        CHECK(w[0] >= -1e-12 && w[1] >= -1e-12 && w[2] >= -1e-12);
        CHECK_NEAR(w[0] + w[1] + w[2], 1.0, 1e-12);
        double best = INFINITY;
        for (int i = 0; i <= 200; i++)
            for (int j = 0; i + j <= 200; j++) {
                const double u = i / 200.0, v = j / 200.0;
                double d = 0;
                for (int k = 0; k < 3; k++) {
                    const double x = (1 - u - v) * a[k] + u * b[k] + v * c[k] - p[k];
                    d += x * x;
                }
                best = fmin(best, d);
            }
        CHECK(d2 <= best + 1e-12);
        worst_t = fmax(worst_t, sqrt(best) - sqrt(d2));
        double ss, tt;
        const double e2 = defo_segment_segment_closest(a, b, q0, q1, &ss, &tt);
        double bs = INFINITY;
        for (int i = 0; i <= 400; i++)
            for (int j = 0; j <= 400; j++) {
                double d = 0;
                for (int k = 0; k < 3; k++) {
                    const double x =
                        a[k] + i / 400.0 * (b[k] - a[k]) - q0[k] - j / 400.0 * (q1[k] - q0[k]);
                    d += x * x;
                }
                bs = fmin(bs, d);
            }
        CHECK(e2 <= bs + 1e-12);
        CHECK(ss >= 0 && ss <= 1 && tt >= 0 && tt <= 1);
        worst_s = fmax(worst_s, sqrt(bs) - sqrt(e2));
    }
    /* parallel segments: distance of the lines, a point in the overlap */
    const double p0[3] = {0, 0, 0}, p1[3] = {1, 0, 0}, r0[3] = {0.5, 0.2, 0}, r1[3] = {2, 0.2, 0};
    double ss, tt;
    CHECK_NEAR(defo_segment_segment_closest(p0, p1, r0, r1, &ss, &tt), 0.04, 1e-15);
    CHECK_NEAR(ss, 0.75, 1e-12);
    TEST_REPORT("sampling is never closer than the exact answer; the exact answer is up to %.2e "
                "(triangles) / %.2e (segments) closer than a 200/400-step sampling",
                worst_t, worst_s);
}

/* ------------------------------------------------------- contact surface */
static defo_mesh *box_mesh(double x0, double y0, double z0, double size, int cells, int order) {
    defo_box_def d = defo_default_box_def();
    d.origin[0] = x0, d.origin[1] = y0, d.origin[2] = z0;
    d.size[0] = d.size[1] = d.size[2] = size;
    d.cells[0] = d.cells[1] = d.cells[2] = cells;
    d.order = order;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&d, &m));
    return m;
}

static void test_surface_topology(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = box_mesh(0, 0, 0, 1, 3, order);
        defo_contact_surface_def sd = defo_default_contact_surface_def();
        sd.thickness = 0.01;
        defo_contact_surface *s = NULL;
        CHECK_OK(defo_contact_surface_create(m, &sd, &s));
        defo_index nt, ne, nv;
        double h;
        defo_contact_surface_info(s, &nt, &ne, &nv, &h);
        /* a closed sphere-like surface: V − E + F = 2, every edge in two triangles */
        CHECK(nv - ne + nt == 2);
        CHECK(2 * ne == 3 * nt);
        /* 6 faces of 3x3 squares, 2 triangles each (x4 for tet10 faces) */
        CHECK(nt == 6 * 9 * 2 * (order == 2 ? 4 : 1));
        CHECK(h > 0 && h < 1);
        defo_contact_surface_destroy(s);
        defo_mesh_destroy(m);
    }
}

/* Every pair found between two boxes a gap g apart along x, against a direct
 * computation: each face vertex of one box is g from the other's face. */
static void test_pairs_between_boxes(void) {
    const double g = 0.004, delta = 0.01;
    defo_mesh *a = box_mesh(0, 0, 0, 1, 2, 1), *b = box_mesh(1 + g, 0, 0, 1, 2, 1);
    defo_contact_surface_def sd = defo_default_contact_surface_def();
    sd.thickness = delta;
    defo_contact_surface *sa = NULL, *sb = NULL;
    CHECK_OK(defo_contact_surface_create(a, &sd, &sa));
    CHECK_OK(defo_contact_surface_create(b, &sd, &sb));
    defo_contact_body cb[2] = {{sa, a->x, 1e3, 0.5, 0}, {sb, b->x, 2e3, 0.2, 0}};
    defo_contact_list L = {0};
    CHECK_OK(defo_contact_find(cb, 2, DEFO_CONTACT_SIGNED, &L));
    int vt = 0, ee = 0, bad = 0;
    for (size_t i = 0; i < L.count; i++) {
        const defo_contact_pair *p = &L.pairs[i];
        if (p->kind == 0) {
            vt++;
            /* along B's pseudo-normal: the face's (φ = g), an edge's
             * (g/√2) or a corner's (g/√3) */
            bad += fabs(p->phi - g * fabs(p->n[0])) > 1e-12;
            bad += fabs(p->n[0]) < 1 / sqrt(3.0) - 1e-12;
            /* a's vertex pushed towards −x, b's towards +x */
            bad += p->surface[0] == 0 ? p->n[0] > 0 : p->n[0] < 0;
        } else {
            ee++;
        }
        bad += fabs(p->k - 1e3) > 0 || fabs(p->mu - sqrt(0.1)) > 1e-15;
        double sw = p->w[0] + p->w[1] + p->w[2] + p->w[3];
        bad += fabs(sw) > 1e-14;
    }
    /* 9 face vertices on each side, each paired with the other box */
    CHECK(vt == 18);
    CHECK(bad == 0);
    TEST_REPORT("two boxes %.3g apart (thickness %.3g): %d vertex-triangle, %d edge-edge pairs", g,
                delta, vt, ee);
    /* a vertex pushed inside the other box is found with φ < 0, pushed out */
    double *x2 = malloc(3 * (size_t)b->num_nodes * sizeof *x2);
    memcpy(x2, b->x, 3 * (size_t)b->num_nodes * sizeof *x2);
    int moved = -1;
    for (defo_index i = 0; i < b->num_nodes; i++)
        if (fabs(b->x[3 * i] - (1 + g)) < 1e-12 && fabs(b->x[3 * i + 1] - 0.5) < 1e-12 &&
            fabs(b->x[3 * i + 2] - 0.5) < 1e-12)
            moved = (int)i;
    CHECK(moved >= 0);
    x2[3 * moved] = 1 - 0.05; /* 0.05 inside a */
    CHECK_OK(defo_contact_surface_update(sb, x2));
    cb[1].x = x2;
    L.count = 0;
    CHECK_OK(defo_contact_find(cb, 2, DEFO_CONTACT_SIGNED, &L));
    int found = 0;
    for (size_t i = 0; i < L.count; i++) {
        const defo_contact_pair *p = &L.pairs[i];
        if (p->kind == 0 && p->surface[0] == 1 && p->node[0] == moved) {
            found = 1;
            CHECK_NEAR(p->phi, -0.05, 1e-12);
            CHECK_NEAR(p->n[0], 1.0, 1e-12); /* back out through a's face x = 1 */
        }
    }
    CHECK(found);
    free(x2);
    defo_contact_list_free(&L);
    defo_contact_surface_destroy(sa);
    defo_contact_surface_destroy(sb);
    defo_mesh_destroy(a);
    defo_mesh_destroy(b);
}

/* The penalty's forces against central differences of its energy (pairs
 * held: the linearisation the Newton solves use between detections). */
static void test_penalty_gradient(void) {
    defo_mesh *a = box_mesh(0, 0, 0, 1, 2, 1), *b = box_mesh(0.3, 0.2, 0.995, 1, 2, 1);
    defo_contact_surface_def sd = defo_default_contact_surface_def();
    sd.thickness = 0.02;
    defo_contact_surface *sa = NULL, *sb = NULL;
    CHECK_OK(defo_contact_surface_create(a, &sd, &sa));
    CHECK_OK(defo_contact_surface_create(b, &sd, &sb));
    defo_contact_body cb[2] = {{sa, a->x, 5e3, 0.5, 0}, {sb, b->x, 5e3, 0.5, 0}};
    defo_contact_list L = {0};
    CHECK_OK(defo_contact_find(cb, 2, DEFO_CONTACT_SIGNED, &L));
    CHECK(L.count > 0);
    const size_t na = 3 * (size_t)a->num_nodes, nb = 3 * (size_t)b->num_nodes;
    double *xa = malloc(na * sizeof *xa), *xb = malloc(nb * sizeof *xb);
    double *fa = calloc(na, sizeof *fa), *fb = calloc(nb, sizeof *fb);
    memcpy(xa, a->x, na * sizeof *xa);
    memcpy(xb, b->x, nb * sizeof *xb);
    const double *x[2] = {xa, xb};
    double *f[2] = {fa, fb};
    double E = 0, depth = 0;
    defo_contact_penalty(L.pairs, L.count, x, &E, f, NULL, &depth);
    CHECK(E > 0);
    double worst = 0, fmax_ = 0, sum[3] = {0, 0, 0};
    for (int side = 0; side < 2; side++) {
        double *xs = side ? xb : xa;
        const size_t m = side ? nb : na;
        for (size_t j = 0; j < m; j++) {
            const double h = 1e-7, keep = xs[j];
            double Ep = 0, Em = 0;
            xs[j] = keep + h;
            defo_contact_penalty(L.pairs, L.count, x, &Ep, NULL, NULL, NULL);
            xs[j] = keep - h;
            defo_contact_penalty(L.pairs, L.count, x, &Em, NULL, NULL, NULL);
            xs[j] = keep;
            const double fd = -(Ep - Em) / (2 * h), fa_ = (side ? fb : fa)[j];
            worst = fmax(worst, fabs(fd - fa_));
            fmax_ = fmax(fmax_, fabs(fa_));
            sum[j % 3] += fa_;
        }
    }
    CHECK(worst <= 1e-6 * fmax_);
    /* equal and opposite: the forces sum to zero (linear momentum) */
    for (int k = 0; k < 3; k++) CHECK(fabs(sum[k]) <= 1e-12 * fmax_);
    TEST_REPORT("%zu pairs, energy %.4g J, |f - (-dE/dx)| <= %.2e of max |f| %.3g", L.count, E,
                worst / fmax_, fmax_);
    free(xa), free(xb), free(fa), free(fb);
    defo_contact_list_free(&L);
    defo_contact_surface_destroy(sa);
    defo_contact_surface_destroy(sb);
    defo_mesh_destroy(a);
    defo_mesh_destroy(b);
}

/* One barrier pair of vertex p against triangle T (x[0] = p, x[1] = T's
 * three corners), found afresh at p: its closest point, weights, normal. */
static defo_contact_pair barrier_pair(const double *const *x, double delta, double k) {
    defo_contact_pair P;
    memset(&P, 0, sizeof P);
    double w[3];
    const double *t = x[1];
    const double d2 = defo_point_triangle_closest(x[0], t, t + 3, t + 6, w, NULL);
    P.surface[1] = 1;
    P.side[1] = P.side[2] = P.side[3] = 1;
    P.w[0] = 1.0;
    for (int a = 0; a < 3; a++) {
        P.node[a + 1] = a;
        P.w[a + 1] = -w[a];
    }
    P.phi = sqrt(d2);
    for (int c = 0; c < 3; c++)
        P.n[c] = (x[0][c] - (w[0] * t[c] + w[1] * t[3 + c] + w[2] * t[6 + c])) / P.phi;
    P.delta = delta;
    P.k = k;
    P.barrier = 1;
    return P;
}

/* The barrier's exact tangent at its vertex (defo_contact_pair_curvature
 * added to ψ'' n nᵀ) against central differences of its force with the
 * pair found again at every point — the true distance's Hessian — for a
 * vertex nearest to a corner, to an edge and to the inside of a
 * triangle.  The Gauss–Newton term alone misses the first two by the
 * order of itself (why the exact tangent is needed near a solution). */
static void test_barrier_curvature(void) {
    double tri[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
    const double ps[3][3] = {{-0.01, -0.012, 0.005}, {0.4, -0.01, 0.008}, {0.2, 0.25, 0.01}};
    const char *where[3] = {"corner", "edge", "inside"};
    const double delta = 0.05, k = 1e3;
    for (int c = 0; c < 3; c++) {
        double p[3] = {ps[c][0], ps[c][1], ps[c][2]};
        const double *x[2] = {p, tri};
        defo_contact_pair P = barrier_pair(x, delta, k);
        double hess = 0, S[9];
        defo_contact_penalty(&P, 1, x, NULL, NULL, &hess, NULL);
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++) S[3 * r + q] = hess * P.n[r] * P.n[q];
        double gn = 0, ex = 0, ref = 0;
        double G[9];
        memcpy(G, S, sizeof G);
        defo_contact_pair_curvature(&P, x, S);
        for (int j = 0; j < 3; j++) {
            double fp[3] = {0, 0, 0}, fm[3] = {0, 0, 0}, ft[9] = {0};
            const double h = 1e-7, keep = p[j];
            double *fpp[2] = {fp, ft}, *fmm[2] = {fm, ft};
            p[j] = keep + h;
            defo_contact_pair Q = barrier_pair(x, delta, k);
            defo_contact_penalty(&Q, 1, x, NULL, fpp, NULL, NULL);
            p[j] = keep - h;
            Q = barrier_pair(x, delta, k);
            defo_contact_penalty(&Q, 1, x, NULL, fmm, NULL, NULL);
            p[j] = keep;
            for (int r = 0; r < 3; r++) {
                const double fd = -(fp[r] - fm[r]) / (2 * h); /* ∂²E/∂p_r∂p_j */
                ref = fmax(ref, fabs(fd));
                ex = fmax(ex, fabs(S[3 * r + j] - fd));
                gn = fmax(gn, fabs(G[3 * r + j] - fd));
            }
        }
        TEST_REPORT("vertex nearest to the %s (φ = %.4f δ): |H − FD| %.1e with the curvature, "
                    "%.1e Gauss–Newton alone, of |H| %.3g",
                    where[c], P.phi / delta, ex / ref, gn / ref, ref);
        CHECK(ex <= 1e-5 * ref);
        if (c < 2)
            CHECK(gn >= 0.05 * ref);
        else
            CHECK(gn <= 1e-5 * ref); /* the inside: the plane's distance is linear in p */
    }
}

/* Impulses (two boxes overlapping and approaching, with friction): momentum
 * kept to rounding, approaching velocities removed, pairs pushed out. */
static void test_respond_momentum(void) {
    defo_mesh *a = box_mesh(0, 0, 0, 1, 2, 1), *b = box_mesh(0.2, 0.1, 0.99, 1, 2, 1);
    defo_contact_surface_def sd = defo_default_contact_surface_def();
    sd.thickness = 0.02;
    defo_contact_surface *sa = NULL, *sb = NULL;
    CHECK_OK(defo_contact_surface_create(a, &sd, &sa));
    CHECK_OK(defo_contact_surface_create(b, &sd, &sb));
    const size_t na = (size_t)a->num_nodes, nb = (size_t)b->num_nodes;
    double *xa = malloc(3 * na * sizeof *xa), *xb = malloc(3 * nb * sizeof *xb);
    double *va = malloc(3 * na * sizeof *va), *vb = malloc(3 * nb * sizeof *vb);
    double *ia = malloc(na * sizeof *ia), *ib = malloc(nb * sizeof *ib);
    memcpy(xa, a->x, 3 * na * sizeof *xa);
    memcpy(xb, b->x, 3 * nb * sizeof *xb);
    unsigned s = 5;
    double p0[3] = {0, 0, 0};
    for (size_t i = 0; i < na; i++) {
        ia[i] = 1.0 / (0.5 + rnd(&s));
        va[3 * i] = 0.1 * rnd(&s), va[3 * i + 1] = 0.3, va[3 * i + 2] = 1.0;
        for (int k = 0; k < 3; k++) p0[k] += va[3 * i + k] / ia[i];
    }
    for (size_t i = 0; i < nb; i++) {
        ib[i] = 1.0 / (0.5 + rnd(&s));
        vb[3 * i] = -0.2, vb[3 * i + 1] = 0.1 * rnd(&s), vb[3 * i + 2] = -1.0;
        for (int k = 0; k < 3; k++) p0[k] += vb[3 * i + k] / ib[i];
    }
    defo_contact_body cb[2] = {{sa, xa, 1e3, 0.4, 0}, {sb, xb, 1e3, 0.4, 0}};
    defo_contact_list L = {0};
    CHECK_OK(defo_contact_find(cb, 2, DEFO_CONTACT_SIGNED, &L));
    CHECK(L.count > 0);
    double *x[2] = {xa, xb}, *v[2] = {va, vb};
    const double *im[2] = {ia, ib};
    double *nwa = malloc(na * sizeof *nwa), *nwb = malloc(nb * sizeof *nwb);
    double *nw[2] = {nwa, nwb};
    double *pw = malloc(17 * L.count * sizeof *pw);
    const size_t acted =
        defo_contact_respond(L.pairs, L.count, x, NULL, v, im, 1e-3, 1, 200, nw, pw);
    free(nwa), free(nwb), free(pw);
    double p1[3] = {0, 0, 0}, scale = 0;
    for (size_t i = 0; i < na; i++)
        for (int k = 0; k < 3; k++)
            p1[k] += va[3 * i + k] / ia[i], scale += fabs(va[3 * i + k] / ia[i]);
    for (size_t i = 0; i < nb; i++)
        for (int k = 0; k < 3; k++)
            p1[k] += vb[3 * i + k] / ib[i], scale += fabs(vb[3 * i + k] / ib[i]);
    for (int k = 0; k < 3; k++) CHECK(fabs(p1[k] - p0[k]) <= 1e-13 * scale);
    /* after the sweeps: no pair approaches, none is through its surface */
    const double *xc[2] = {xa, xb};
    double worst_v = 0, worst_x = 0;
    for (size_t i = 0; i < L.count; i++) {
        const defo_contact_pair *p = &L.pairs[i];
        double vr[3] = {0, 0, 0}, phi = 0;
        for (int q = 0; q < 4; q++) {
            const double *xs = xc[p->surface[p->side[q]]] + 3 * (size_t)p->node[q];
            const double *vs = v[p->surface[p->side[q]]] + 3 * (size_t)p->node[q];
            for (int k = 0; k < 3; k++) vr[k] += p->w[q] * vs[k], phi += p->w[q] * xs[k] * p->n[k];
        }
        worst_v = fmin(worst_v, vr[0] * p->n[0] + vr[1] * p->n[1] + vr[2] * p->n[2]);
        worst_x = fmax(worst_x, -phi);
    }
    /* settled as the response promises: nothing approaches faster than
     * 1e-5 of the thickness per τ, nothing is through by more than that */
    CHECK(worst_v > -1e-5 * sd.thickness / 1e-3);
    CHECK(worst_x < 1e-5 * sd.thickness);
    TEST_REPORT("%zu pairs (%zu unsettled): momentum kept to %.1e "
                "of sum |p|, slowest approach %.2e m/s, deepest %.2e m through a surface",
                L.count, acted,
                fmax(fabs(p1[0] - p0[0]), fmax(fabs(p1[1] - p0[1]), fabs(p1[2] - p0[2]))) / scale,
                worst_v, worst_x);
    free(xa), free(xb), free(va), free(vb), free(ia), free(ib);
    defo_contact_list_free(&L);
    defo_contact_surface_destroy(sa);
    defo_contact_surface_destroy(sb);
    defo_mesh_destroy(a);
    defo_mesh_destroy(b);
}

/* Self contact of a body at rest finds nothing: adjacent triangles never
 * repel (tet4 and the 4 flat triangles of each tet10 face). */
static void test_self_contact_at_rest(void) {
    for (int order = 1; order <= 2; order++) {
        defo_box_def d = defo_default_box_def();
        d.size[0] = 4, d.size[1] = d.size[2] = 0.5;
        d.cells[0] = 16, d.cells[1] = d.cells[2] = 2;
        d.order = order;
        defo_mesh *m = NULL;
        CHECK_OK(defo_generate_box(&d, &m));
        defo_contact_surface_def sd = defo_default_contact_surface_def();
        sd.thickness = 0.05;
        sd.self_contact = 1;
        defo_contact_surface *s = NULL;
        CHECK_OK(defo_contact_surface_create(m, &sd, &s));
        defo_contact_body cb = {s, m->x, 1e3, 0.5, 0};
        defo_contact_list L = {0};
        CHECK_OK(defo_contact_find(&cb, 1, DEFO_CONTACT_SIGNED, &L));
        CHECK(L.count == 0);
        /* fold the bar's right half back over its left: pairs appear */
        double *x = malloc(3 * (size_t)m->num_nodes * sizeof *x);
        for (defo_index i = 0; i < m->num_nodes; i++) {
            const double *X = m->x + 3 * i;
            x[3 * i] = X[0], x[3 * i + 1] = X[1], x[3 * i + 2] = X[2];
            if (X[0] > 2.0) x[3 * i] = 4.0 - X[0], x[3 * i + 2] = 1.0 + 0.01 - X[2];
        }
        CHECK_OK(defo_contact_surface_update(s, x));
        cb.x = x;
        CHECK_OK(defo_contact_find(&cb, 1, DEFO_CONTACT_SIGNED, &L));
        CHECK(L.count > 0);
        TEST_REPORT("tet%d bar: 0 pairs at rest, %zu when folded onto itself", order == 1 ? 4 : 10,
                    L.count);
        free(x);
        defo_contact_list_free(&L);
        defo_contact_surface_destroy(s);
        defo_mesh_destroy(m);
    }
}

/* Two pairs equal field by field, bit for bit (not their padding). */
static int same_pair(const defo_contact_pair *a, const defo_contact_pair *b) {
#define SAME(f) (memcmp(&a->f, &b->f, sizeof a->f) == 0)
    return SAME(surface) && SAME(kind) && SAME(side) && SAME(node) && SAME(w) && SAME(n) &&
           SAME(phi) && SAME(delta) && SAME(k) && SAME(mu) && SAME(kept) && SAME(id) &&
           SAME(barrier);
#undef SAME
}

/* Surfaces moved lazily (defo_contact_surface_move: box only, refit by the
 * detection that needs it) give the pairs and step bounds of surfaces
 * updated in full, bit for bit, as a sheared box comes from far away into
 * another (its box meets the other's only in the last steps) while a third
 * stays far: what the world's per-call skip of far bodies relies on.  The
 * step bound is also taken from a position whose box is apart, with a move
 * dx that carries it through the other within the step. */
static void test_lazy_refit_equals_update(void) {
    enum { STEPS = 12 };
    defo_mesh *m[3] = {box_mesh(0, 0, 0, 1, 2, 1), box_mesh(0, 0, 0, 1, 2, 1),
                       box_mesh(0, 0, 0, 1, 2, 1)};
    const double start[3] = {0, 3.0, -4.0}; /* x offsets; body 1 approaches body 0 */
    defo_contact_surface_def sd = defo_default_contact_surface_def();
    sd.thickness = 0.05;
    defo_contact_surface *eager[3], *lazy[3];
    double *x[3], *dx[3];
    for (int i = 0; i < 3; i++) {
        CHECK_OK(defo_contact_surface_create(m[i], &sd, &eager[i]));
        CHECK_OK(defo_contact_surface_create(m[i], &sd, &lazy[i]));
        x[i] = malloc(3 * (size_t)m[i]->num_nodes * sizeof(double));
        dx[i] = calloc(3 * (size_t)m[i]->num_nodes, sizeof(double));
    }
    defo_contact_list Le = {0}, Ll = {0};
    int steps_with_pairs = 0, mismatches = 0;
    double first_box_gap = -1;
    for (int k = 0; k <= STEPS; k++) {
        /* body 1 slides in along −x, sheared (its normals turn) and tilted */
        const double u = 1.0 - (double)k / STEPS, off = 0.9 + (start[1] - 0.9) * u * u * u;
        for (int i = 0; i < 3; i++)
            for (defo_index n = 0; n < m[i]->num_nodes; n++) {
                const double *r = m[i]->x + 3 * n;
                double *p = x[i] + 3 * n;
                const double shear = i == 1 ? 0.02 * k : 0.0;
                p[0] = r[0] + (i == 1 ? off : start[i]) + shear * r[2];
                p[1] = r[1] + (i == 1 ? 0.01 * k * r[0] : 0.0);
                /* all rise 2 m a step: a hierarchy not refit is far off */
                p[2] = r[2] + 2.0 * (k + 1) + (i == 1 ? 0.003 * k : 0.002 * k * r[1]);
            }
        for (int i = 0; i < 3; i++) {
            CHECK_OK(defo_contact_surface_update(eager[i], x[i]));
            CHECK_OK(defo_contact_surface_move(lazy[i], x[i]));
        }
        double b0[6], b1[6], e0[6];
        defo_contact_surface_bounds(lazy[0], b0);
        defo_contact_surface_bounds(lazy[1], b1);
        defo_contact_surface_bounds(eager[0], e0);
        mismatches += memcmp(b0, e0, sizeof b0) != 0; /* the box moves at once */
        if (first_box_gap < 0 && k == 0) first_box_gap = b1[0] - b0[3];
        defo_contact_body ce[3], cl[3];
        for (int i = 0; i < 3; i++) {
            ce[i] = (defo_contact_body){eager[i], x[i], 1e3, 0.3, 0};
            cl[i] = (defo_contact_body){lazy[i], x[i], 1e3, 0.3, 0};
        }
        for (int mode = 0; mode < 2; mode++) {
            Le.count = Ll.count = 0;
            if (mode == DEFO_CONTACT_BARRIER) {
                CHECK_OK(defo_contact_classify(ce, 3));
                CHECK_OK(defo_contact_classify(cl, 3));
            }
            CHECK_OK(defo_contact_find(ce, 3, (defo_contact_mode)mode, &Le));
            CHECK_OK(defo_contact_find(cl, 3, (defo_contact_mode)mode, &Ll));
            mismatches += Le.count != Ll.count;
            for (size_t i = 0; i < Le.count && i < Ll.count; i++)
                mismatches += !same_pair(&Le.pairs[i], &Ll.pairs[i]);
            if (mode == 0) steps_with_pairs += Le.count > 0;
        }
        /* a move of body 1 over the next step of 2.5 m along −x, through
         * body 0 (at the first step their boxes are apart) */
        for (defo_index n = 0; n < m[1]->num_nodes; n++) dx[1][3 * n] = -2.5;
        for (int i = 0; i < 3; i++) CHECK_OK(defo_contact_surface_move(lazy[i], x[i]));
        const double ae = defo_contact_step_bound(ce, 3, (const double *const *)dx);
        const double al = defo_contact_step_bound(cl, 3, (const double *const *)dx);
        mismatches += memcmp(&ae, &al, sizeof ae) != 0;
        if (k == 0) CHECK(al < 1.0); /* the swept vertices reach body 0 */
    }
    CHECK(first_box_gap > 0.5); /* the bodies' boxes (grown by the reach) start apart */
    CHECK(steps_with_pairs >= 4);
    CHECK(mismatches == 0);
    TEST_REPORT("lazy refit: %d of %d steps with pairs, %d mismatches against a full update",
                steps_with_pairs, STEPS + 1, mismatches);
    defo_contact_list_free(&Le);
    defo_contact_list_free(&Ll);
    for (int i = 0; i < 3; i++) {
        defo_contact_surface_destroy(eager[i]);
        defo_contact_surface_destroy(lazy[i]);
        defo_mesh_destroy(m[i]);
        free(x[i]);
        free(dx[i]);
    }
}

int main(void) {
    RUN(test_bvh_matches_brute_force);
    RUN(test_closest_points_brute_force);
    RUN(test_surface_topology);
    RUN(test_pairs_between_boxes);
    RUN(test_penalty_gradient);
    RUN(test_barrier_curvature);
    RUN(test_respond_momentum);
    RUN(test_self_contact_at_rest);
    RUN(test_lazy_refit_equals_update);
    return test_summary();
}
