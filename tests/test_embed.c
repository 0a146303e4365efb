/*
 * tests/test_embed.c — MG04 §5.1 embedded high-resolution surface.
 *
 * References used:
 *   - exact reproduction: barycentric interpolation reproduces every affine
 *     map exactly (Σλ = 1, also for extrapolated λ), so at rest the bound
 *     bunny surface is reproduced, under a rigid motion of the tet mesh it
 *     moves rigidly, under an affine map it deforms affinely — all to
 *     rounding (≤ 1e-12 relative to the model size); normals rotate by the
 *     tets' rotation, which for a rigid motion is the motion's rotation;
 *   - brute force: for every 7th vertex, testing every tet agrees with the
 *     grid search on inside/outside, and an inside vertex is bound to the tet
 *     with the largest smallest barycentric coordinate (the tie rule);
 *   - tet10 (MTPS08 §6.2): a quadratic map of the nodes moves the surface by
 *     the same quadratic map, exactly (tet4 corners cannot: checked too);
 *   - normals (MTPS08 §6.2, the cofactor of the map's gradient): A⁻ᵀ n0
 *     under an affine map; outward by the winding number after a quadratic
 *     bend of a tet10 mesh;
 *   - round trip: the OBJ files read back with the same counts.
 */
#include "defo/element.h"
#include "defo/geometry.h"
#include "defo/embed.h"
#include "defo/io.h"
#include "defo/math.h"
#include "defo/mesh.h"
#include "defo/mesher.h"
#include "test.h"

static defo_mesh *g_surface, *g_tets;

static void setup(void) {
    CHECK_OK(defo_mesh_read(DEFO_DATA_DIR "/meshes/bunny.off", NULL, &g_surface));
    defo_mesher_def md = defo_default_mesher_def();
    md.cells = 12;
    defo_status st = defo_mesh_surface(g_surface, &md, &g_tets, NULL);
    CHECK(st >= 0 && g_tets);
}

static double model_size(const defo_mesh *m) {
    double lo[3], hi[3];
    defo_mesh_bbox(m, lo, hi);
    return fmax(fmax(hi[0] - lo[0], hi[1] - lo[1]), hi[2] - lo[2]);
}

/* x' = A x + t on the tet nodes; compares the embedded surface with A p + t
 * and (when rigid) normals with A n0. */
static void check_map(const defo_embed *e, const double A[3][3], const double t[3], int rigid,
                      double *pos_err, double *nrm_err) {
    const size_t nt = (size_t)g_tets->num_nodes, nv = (size_t)g_surface->num_nodes;
    double *x = malloc(3 * nt * sizeof(double)), *p = malloc(3 * nv * sizeof(double)),
           *n = malloc(3 * nv * sizeof(double));
    for (size_t i = 0; i < nt; i++)
        for (int r = 0; r < 3; r++)
            x[3 * i + r] = A[r][0] * g_tets->x[3 * i] + A[r][1] * g_tets->x[3 * i + 1] +
                           A[r][2] * g_tets->x[3 * i + 2] + t[r];
    CHECK_OK(defo_embed_update(e, x, NULL, p, n));
    const double *n0 = defo_embed_rest_normals(e);
    double pe = 0, ne = 0;
    for (size_t i = 0; i < nv; i++)
        for (int r = 0; r < 3; r++) {
            const double *X = g_surface->x + 3 * i;
            double want = A[r][0] * X[0] + A[r][1] * X[1] + A[r][2] * X[2] + t[r];
            pe = fmax(pe, fabs(p[3 * i + r] - want));
            double wn = A[r][0] * n0[3 * i] + A[r][1] * n0[3 * i + 1] + A[r][2] * n0[3 * i + 2];
            if (rigid) ne = fmax(ne, fabs(n[3 * i + r] - wn));
        }
    *pos_err = pe / model_size(g_surface);
    *nrm_err = ne;
    free(x);
    free(p);
    free(n);
}

static void test_bind_and_reproduce(void) {
    defo_embed *e = NULL;
    CHECK_OK(defo_embed_create(g_tets, g_surface, &e));
    if (!e) return;
    defo_embed_info info = defo_embed_get_info(e);
    TEST_REPORT("bunny: %ld surface vertices on %ld tets, %ld outside the tet mesh (max distance "
                "%.3g of size %.3g, most negative barycentric %.3f)",
                (long)info.num_vertices, (long)g_tets->num_elems, (long)info.outside,
                info.max_distance, model_size(g_surface), info.most_negative);
    CHECK(info.num_vertices == g_surface->num_nodes);
    double pe, ne;
    const double I[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}, z[3] = {0, 0, 0};
    check_map(e, I, z, 1, &pe, &ne);
    TEST_REPORT("rest: max position error %.2e (relative), normal error %.2e", pe, ne);
    CHECK(pe <= 1e-12);
    CHECK(ne <= 1e-12);
    /* rigid: rotation about an oblique axis, large translation */
    defo_vec3 axis = {0.3, -0.5, 0.81};
    double al = sqrt(axis.x * axis.x + axis.y * axis.y + axis.z * axis.z), ang = 2.1;
    double k[3] = {axis.x / al, axis.y / al, axis.z / al}, c = cos(ang), s = sin(ang);
    double R[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) R[i][j] = (i == j ? c : 0) + (1 - c) * k[i] * k[j];
    R[0][1] -= s * k[2];
    R[0][2] += s * k[1];
    R[1][0] += s * k[2];
    R[1][2] -= s * k[0];
    R[2][0] -= s * k[1];
    R[2][1] += s * k[0];
    const double t[3] = {12.0, -7.5, 30.0};
    check_map(e, (const double(*)[3])R, t, 1, &pe, &ne);
    TEST_REPORT("rigid motion: max position error %.2e (relative), normal error %.2e", pe, ne);
    CHECK(pe <= 1e-12);
    CHECK(ne <= 1e-12);
    /* affine: shear + stretch */
    const double A[3][3] = {{1.3, 0.2, -0.1}, {0.05, 0.8, 0.3}, {-0.2, 0.1, 1.1}};
    check_map(e, A, t, 0, &pe, &ne);
    TEST_REPORT("affine map: max position error %.2e (relative)", pe);
    CHECK(pe <= 1e-12);
    defo_embed_destroy(e);
}

static void test_search_matches_brute_force(void) {
    defo_embed *e = NULL;
    CHECK_OK(defo_embed_create(g_tets, g_surface, &e));
    if (!e) return;
    /* J⁻¹ of a tet4 is Dm⁻¹ (ITF04 §3): λ1..3 = Dm⁻¹ (p − X0) */
    defo_element_rest *rest = NULL;
    CHECK_OK(defo_element_rest_create(g_tets, &rest));
    if (!rest) {
        defo_embed_destroy(e);
        return;
    }
    const double *jinv = defo_element_rest_jinv(rest);
    const defo_index *el = defo_embed_elements(e);
    const double *bary = defo_embed_barycentric(e);
    int bad = 0, checked = 0;
    for (defo_index i = 0; i < g_surface->num_nodes; i += 7) {
        const double *p = g_surface->x + 3 * i;
        const double *l = bary + 4 * i;
        double mn = fmin(fmin(l[0], l[1]), fmin(l[2], l[3]));
        /* brute force: is there a tet containing p with a larger min λ? */
        double best = -INFINITY;
        for (defo_index t = 0; t < g_tets->num_elems; t++) {
            const defo_index *en = g_tets->elems + 4 * t;
            const double *X0 = g_tets->x + 3 * en[0], *Di = jinv + 9 * t;
            double d[3] = {p[0] - X0[0], p[1] - X0[1], p[2] - X0[2]}, lam[4];
            for (int r = 0; r < 3; r++)
                lam[r + 1] = Di[3 * r] * d[0] + Di[3 * r + 1] * d[1] + Di[3 * r + 2] * d[2];
            lam[0] = 1 - lam[1] - lam[2] - lam[3];
            best = fmax(best, fmin(fmin(lam[0], lam[1]), fmin(lam[2], lam[3])));
        }
        /* inside some tet ⇔ bound inside; when inside, the best tet chosen */
        if ((best >= 0) != (mn >= 0)) bad++;
        if (best >= 0 && mn != best) bad++;
        if (el[i] < 0 || el[i] >= g_tets->num_elems) bad++;
        checked++;
    }
    TEST_REPORT("%d vertices checked against all %ld tets, %d mismatches", checked,
                (long)g_tets->num_elems, bad);
    CHECK(bad == 0);
    defo_element_rest_destroy(rest);
    defo_embed_destroy(e);
}

static void test_obj_round_trip(void) {
    defo_embed *e = NULL;
    CHECK_OK(defo_embed_create(g_tets, g_surface, &e));
    if (!e) return;
    size_t nv = (size_t)g_surface->num_nodes;
    double *p = malloc(3 * nv * sizeof(double)), *n = malloc(3 * nv * sizeof(double));
    CHECK_OK(defo_embed_update(e, g_tets->x, NULL, p, n));
    const char *path = DEFO_TEST_TMP "/embed_bunny.obj";
    CHECK_OK(defo_embed_write_obj(e, path, p, n));
    defo_mesh *back = NULL;
    CHECK_OK(defo_mesh_read(path, NULL, &back));
    if (back) {
        CHECK(back->num_nodes == g_surface->num_nodes);
        CHECK(back->num_tris == g_surface->num_tris);
        defo_mesh_destroy(back);
    }
    const char *bpath = DEFO_TEST_TMP "/embed_boundary.obj";
    CHECK_OK(defo_boundary_write_obj(g_tets, NULL, bpath));
    defo_boundary b;
    CHECK_OK(defo_mesh_boundary(g_tets, 0, &b));
    back = NULL;
    CHECK_OK(defo_mesh_read(bpath, NULL, &back));
    if (back) {
        CHECK(back->num_tris == b.num_faces);
        defo_mesh_destroy(back);
    }
    defo_boundary_free(&b);
    /* a bad path fails cleanly and leaves nothing behind */
    CHECK(defo_embed_write_obj(e, DEFO_TEST_TMP "/no/such/dir/x.obj", p, n) == DEFO_ERR_IO);
    free(p);
    free(n);
    defo_embed_destroy(e);
}

/* defo_boundary_write_obj on a tet10 mesh: each curved 6-node face is the 4
 * flat triangles through its edge nodes (defo_tri6_split).  References: the
 * counts (4 per face, every boundary corner and edge node once), and the
 * enclosed volume of a straight-sided tet10 box, exactly its 2 m^3. */
static void test_boundary_obj_tet10(void) {
    defo_box_def bd = defo_default_box_def();
    bd.order = 2;
    bd.size[0] = 2;
    bd.cells[0] = 3;
    bd.cells[1] = bd.cells[2] = 2;
    defo_mesh *box = NULL;
    CHECK_OK(defo_generate_box(&bd, &box));
    if (!box) return;
    const char *path = DEFO_TEST_TMP "/embed_boundary_tet10.obj";
    CHECK_OK(defo_boundary_write_obj(box, NULL, path));
    defo_boundary b;
    CHECK_OK(defo_mesh_boundary(box, 1, &b));
    char *used = calloc((size_t)box->num_nodes, 1);
    defo_index nused = 0;
    for (size_t k = 0; k < 6 * (size_t)b.num_faces; k++)
        if (!used[b.faces[k]]++) nused++;
    free(used);
    defo_mesh *back = NULL;
    CHECK_OK(defo_mesh_read(path, NULL, &back));
    if (back) {
        CHECK(back->num_tris == 4 * b.num_faces);
        CHECK(back->num_nodes == nused);
        double vol = 0;
        for (defo_index t = 0; t < back->num_tris; t++) {
            defo_vec3 p0 = defo_v3_load(back->x + 3 * back->tris[3 * t]),
                      p1 = defo_v3_load(back->x + 3 * back->tris[3 * t + 1]),
                      p2 = defo_v3_load(back->x + 3 * back->tris[3 * t + 2]);
            vol += defo_v3_dot(p0, defo_v3_cross(p1, p2)) / 6.0;
        }
        CHECK_NEAR(vol, 2.0, 1e-12);
        defo_mesh_destroy(back);
    }
    defo_boundary_free(&b);
    defo_mesh_destroy(box);
}

/* MTPS08 §6.2: a surface bound to tet10 elements follows every quadratic map
 * of the nodes exactly (Σ N_a = 1 and the quadratic shape functions
 * reproduce quadratics, also for extrapolated coordinates); bound to the tet4
 * corners it does not (so the check can fail).  φ(X) = X + (a X1², b X0 X2,
 * c X2²) / L, L the model size. */
static void quadratic_map(const double *X, double L, double *x) {
    x[0] = X[0] + 0.3 * X[1] * X[1] / L;
    x[1] = X[1] - 0.2 * X[0] * X[2] / L;
    x[2] = X[2] + 0.25 * X[2] * X[2] / L;
}

static double quadratic_error(const defo_mesh *tets) {
    defo_embed *e = NULL;
    CHECK_OK(defo_embed_create(tets, g_surface, &e));
    if (!e) return INFINITY;
    const double L = model_size(g_surface);
    const size_t nt = (size_t)tets->num_nodes, nv = (size_t)g_surface->num_nodes;
    double *x = malloc(3 * nt * sizeof(double)), *p = malloc(3 * nv * sizeof(double));
    for (size_t i = 0; i < nt; i++) quadratic_map(tets->x + 3 * i, L, x + 3 * i);
    CHECK_OK(defo_embed_update(e, x, NULL, p, NULL));
    double err = 0;
    for (size_t i = 0; i < nv; i++) {
        double want[3];
        quadratic_map(g_surface->x + 3 * i, L, want);
        for (int r = 0; r < 3; r++) err = fmax(err, fabs(p[3 * i + r] - want[r]));
    }
    free(x);
    free(p);
    defo_embed_destroy(e);
    return err / L;
}

/* MTPS08 §6.2 stress colours: node values interpolated with the quadratic
 * shape functions reproduce a quadratic field at the vertices exactly
 * (tet10), the linear ones do not (tet4: checked too). */
static double field_error(const defo_mesh *tets) {
    defo_embed *e = NULL;
    CHECK_OK(defo_embed_create(tets, g_surface, &e));
    if (!e) return INFINITY;
    const double L = model_size(g_surface);
    double *nodev = malloc((size_t)tets->num_nodes * sizeof(double)),
           *out = malloc((size_t)g_surface->num_nodes * sizeof(double));
    for (defo_index i = 0; i < tets->num_nodes; i++) {
        const double *X = tets->x + 3 * i;
        nodev[i] = 1 + (X[0] * X[1] - 0.5 * X[2] * X[2]) / (L * L);
    }
    CHECK_OK(defo_embed_interpolate(e, nodev, out));
    double err = 0;
    for (defo_index i = 0; i < g_surface->num_nodes; i++) {
        const double *X = g_surface->x + 3 * i;
        err = fmax(err, fabs(out[i] - (1 + (X[0] * X[1] - 0.5 * X[2] * X[2]) / (L * L))));
    }
    free(nodev);
    free(out);
    defo_embed_destroy(e);
    return err;
}

static void test_interpolate(void) {
    defo_mesh *q = NULL;
    CHECK_OK(defo_mesh_to_quadratic(g_tets, &q));
    if (!q) return;
    const double e10 = field_error(q), e4 = field_error(g_tets);
    TEST_REPORT("quadratic field at the vertices from node values: error %.2e (tet10), %.2e (tet4)",
                e10, e4);
    CHECK(e10 <= 1e-12);
    CHECK(e4 > 1e-5);
    defo_mesh_destroy(q);
}

static void test_tet10_quadratic_map(void) {
    defo_mesh *q = NULL;
    CHECK_OK(defo_mesh_to_quadratic(g_tets, &q));
    if (!q) return;
    const double e10 = quadratic_error(q), e4 = quadratic_error(g_tets);
    TEST_REPORT("quadratic map of the nodes: embedded surface error %.2e (tet10), %.2e (tet4), "
                "relative to the model size",
                e10, e4);
    CHECK(e10 <= 1e-12);
    CHECK(e4 > 1e-4);
    defo_mesh_destroy(q);
}

/* A milder quadratic bend than quadratic_map, whose image of the bunny does
 * not overlap itself (the ears stay apart). */
static void bend_map(const double *X, double L, double *x) {
    x[0] = X[0] + 0.15 * X[1] * X[1] / L;
    x[1] = X[1] - 0.1 * X[0] * X[2] / L;
    x[2] = X[2] + 0.125 * X[2] * X[2] / L;
}

/* Normals of the deformed surface (MTPS08 §6.2: the cofactor of the map's
 * gradient): under an affine map A exactly A⁻ᵀ n0 normalised (the normal's
 * transform); under a quadratic bend of a tet10 mesh they are the exact
 * cof(∇φ) n0 (the tet10 reproduces the bend and its gradient) and every one
 * points outward — p + δn is outside the deformed surface and p − δn inside, by its
 * exact generalised winding number (δ 1 % of the vertex's shortest
 * deformed edge). */
static void test_normals_outward(void) {
    defo_embed *e = NULL;
    CHECK_OK(defo_embed_create(g_tets, g_surface, &e));
    if (!e) return;
    const size_t nt = (size_t)g_tets->num_nodes, nv = (size_t)g_surface->num_nodes;
    double *x = malloc(3 * nt * sizeof(double)), *p = malloc(3 * nv * sizeof(double)),
           *n = malloc(3 * nv * sizeof(double));
    const double A[3][3] = {{1.3, 0.2, -0.1}, {0.05, 0.8, 0.3}, {-0.2, 0.1, 1.1}};
    /* A⁻ᵀ by cofactors: cof(A) / det A */
    double C[3][3];
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            C[r][c] = A[(r + 1) % 3][(c + 1) % 3] * A[(r + 2) % 3][(c + 2) % 3] -
                      A[(r + 1) % 3][(c + 2) % 3] * A[(r + 2) % 3][(c + 1) % 3];
    for (size_t i = 0; i < nt; i++)
        for (int r = 0; r < 3; r++)
            x[3 * i + r] = A[r][0] * g_tets->x[3 * i] + A[r][1] * g_tets->x[3 * i + 1] +
                           A[r][2] * g_tets->x[3 * i + 2];
    CHECK_OK(defo_embed_update(e, x, NULL, p, n));
    const double *n0 = defo_embed_rest_normals(e);
    double aff = 0;
    for (size_t i = 0; i < nv; i++) {
        double w[3], l = 0;
        for (int r = 0; r < 3; r++) {
            w[r] = C[r][0] * n0[3 * i] + C[r][1] * n0[3 * i + 1] + C[r][2] * n0[3 * i + 2];
            l += w[r] * w[r];
        }
        for (int r = 0; r < 3; r++) aff = fmax(aff, fabs(n[3 * i + r] - w[r] / sqrt(l)));
    }
    defo_embed_destroy(e);
    /* the quadratic bend on the tet10 mesh */
    defo_mesh *q = NULL;
    CHECK_OK(defo_mesh_to_quadratic(g_tets, &q));
    defo_mesh *bent = NULL;
    CHECK_OK(defo_mesh_clone(g_surface, &bent));
    long inward = 0, checked = 0;
    double exact = 0;
    if (q && bent) {
        CHECK_OK(defo_embed_create(q, g_surface, &e));
        const double L = model_size(g_surface);
        double *xq = malloc(3 * (size_t)q->num_nodes * sizeof(double));
        for (defo_index i = 0; i < q->num_nodes; i++) bend_map(q->x + 3 * i, L, xq + 3 * i);
        if (e) CHECK_OK(defo_embed_update(e, xq, NULL, p, n));
        n0 = defo_embed_rest_normals(e);
        /* the exact normal: cof(∇φ) n0, normalised */
        for (size_t i = 0; n0 && i < nv; i++) {
            const double *X = g_surface->x + 3 * i;
            const double G[3][3] = {{1, 0.3 * X[1] / L, 0},
                                    {-0.1 * X[2] / L, 1, -0.1 * X[0] / L},
                                    {0, 0, 1 + 0.25 * X[2] / L}};
            double w[3], l = 0;
            for (int r = 0; r < 3; r++) {
                w[r] = 0;
                for (int c = 0; c < 3; c++)
                    w[r] += (G[(r + 1) % 3][(c + 1) % 3] * G[(r + 2) % 3][(c + 2) % 3] -
                             G[(r + 1) % 3][(c + 2) % 3] * G[(r + 2) % 3][(c + 1) % 3]) *
                            n0[3 * i + (size_t)c];
                l += w[r] * w[r];
            }
            for (int r = 0; r < 3; r++) exact = fmax(exact, fabs(n[3 * i + r] - w[r] / sqrt(l)));
        }
        memcpy(bent->x, p, 3 * nv * sizeof(double));
        defo_surface_sdf *sdf = NULL;
        CHECK_OK(defo_surface_sdf_create(bent, NULL, &sdf));
        /* δ: a hundredth of the shortest deformed edge at the vertex (thin
         * features such as the ears stay thicker than 2δ) */
        double *dv = malloc(nv * sizeof(double));
        for (size_t i = 0; i < nv; i++) dv[i] = INFINITY;
        for (defo_index t = 0; t < g_surface->num_tris; t++)
            for (int k = 0; k < 3; k++) {
                const defo_index a = g_surface->tris[3 * t + k],
                                 b = g_surface->tris[3 * t + (k + 1) % 3];
                double l = 0;
                for (int r = 0; r < 3; r++)
                    l += (p[3 * a + r] - p[3 * b + r]) * (p[3 * a + r] - p[3 * b + r]);
                dv[a] = fmin(dv[a], 0.01 * sqrt(l));
                dv[b] = fmin(dv[b], 0.01 * sqrt(l));
            }
        for (size_t i = 0; sdf && i < nv; i++) {
            const double d = dv[i];
            double out[3], in[3];
            for (int r = 0; r < 3; r++) {
                out[r] = p[3 * i + r] + d * n[3 * i + r];
                in[r] = p[3 * i + r] - d * n[3 * i + r];
            }
            const double wo = defo_surface_sdf_winding_exact(sdf, out),
                         wi = defo_surface_sdf_winding_exact(sdf, in);
            inward += !(wo < 0.5 && wi > 0.5);
            checked++;
        }
        defo_surface_sdf_destroy(sdf);
        free(dv);
        free(xq);
        defo_embed_destroy(e);
    }
    TEST_REPORT("affine map: normals off A^-T n0 by %.2e; quadratic bend (tet10): off cof(grad "
                "phi) n0 by %.2e, %ld of %ld normals not outward by the winding number",
                aff, exact, inward, checked);
    CHECK(aff <= 1e-12);
    CHECK(exact <= 1e-10);
    CHECK(checked == (long)nv && inward == 0);
    defo_mesh_destroy(bent);
    defo_mesh_destroy(q);
    free(x);
    free(p);
    free(n);
}

int main(void) {
    setup();
    if (!g_tets) return 1;
    RUN(test_bind_and_reproduce);
    RUN(test_search_matches_brute_force);
    RUN(test_obj_round_trip);
    RUN(test_boundary_obj_tet10);
    RUN(test_tet10_quadratic_map);
    RUN(test_normals_outward);
    RUN(test_interpolate);
    defo_mesh_destroy(g_tets);
    defo_mesh_destroy(g_surface);
    return test_summary();
}
