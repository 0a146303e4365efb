/*
 * tests/test_shell.c — shells and cloth (ITF04 §8) in the mesh, element,
 * material and force layers.
 *
 * References used, per test:
 *   - topology: hinge and boundary-edge counts of a grid by counting
 *     (interior edges of an nx × ny grid of right triangles), broken shells
 *     (non-manifold edge, duplicate triangle, zero area, opposite
 *     orientation, a Möbius strip) refused naming the elements;
 *   - element layer: areas, Dm⁻¹ of the 2-D rest frame (Dm Dm⁻¹ = I), lumped
 *     masses ρA/3 and the consistent matrix ρA(1 + δ)/12 summed, embedding
 *     weights reproduce the point, a pressure load t A / 3 per corner;
 *   - plane stress: P̂ = ∂ψ̃/∂σ and A = ∂P̂/∂σ by central differences for
 *     every model, σ3 with zero stress across the thickness (the 3-D
 *     model's P̂3 there), the small-strain moduli E/(1 − ν²) and νE/(1 − ν²);
 *   - forces = −dE/dx and K d = −df/dx d by central differences (in-plane
 *     and bending, flat and curved rest shapes, triangles turned over), the
 *     assembled matrix equal to the product and its diagonal blocks;
 *   - patch test: a uniform in-plane stretch gives every triangle the same
 *     stress and no force at interior nodes; a rigid motion no force;
 *   - bending against the Kirchhoff plate energy D/2 (κ11² + κ22² +
 *     2νκ11κ22 + 2(1 − ν)κ12²) for a cylinder, a twist and a saddle on the
 *     generated grid;
 *   - 1 and 2 threads bit for bit.
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "determinism.h"
#include "test.h"
#include "test_sheets.h"

#include <string.h>

typedef struct shell_fixture {
    defo_mesh *mesh;
    defo_element_rest *rest;
    defo_material *mat;
    defo_force_model *fm;
} shell_fixture;

static int fixture(shell_fixture *f, defo_mesh *m, defo_material_def md) {
    memset(f, 0, sizeof *f);
    f->mesh = m;
    CHECK_OK(defo_element_rest_create(m, &f->rest));
    CHECK_OK(defo_material_create(&md, &f->mat));
    defo_force_model_def fd = defo_default_force_model_def();
    defo_status s = defo_force_model_create(m, f->rest, f->mat, &fd, &f->fm);
    CHECK_OK(s);
    return s == DEFO_OK;
}

static void fixture_free(shell_fixture *f) {
    defo_force_model_destroy(f->fm);
    defo_material_destroy(f->mat);
    defo_element_rest_destroy(f->rest);
    defo_mesh_destroy(f->mesh);
}

static defo_material_def shell_material(defo_material_model model) {
    defo_material_def d = defo_default_material();
    d.model = model;
    d.youngs_modulus = 2e5;
    d.poisson = 0.3;
    d.density = 500;
    d.thickness = 0.02;
    return d;
}

/* ------------------------------------------------------------ topology */
static void test_topology(void) {
    defo_mesh *m = grid(4, 3, 1.0, 0.75);
    CHECK(m->num_nodes == 20 && m->num_elems == 24 && m->nodes_per_elem == 3);
    defo_shell_topology t;
    CHECK_OK(defo_mesh_shell_topology(m, &t));
    /* edges of the grid: 4·4 horizontal + 5·3 vertical + 12 diagonals = 43,
     * boundary 2·4 + 2·3 = 14, hinges 29 */
    CHECK(t.num_hinges == 29);
    CHECK(t.num_boundary_edges == 14);
    for (defo_index h = 0; h < t.num_hinges; h++) {
        /* the second triangle runs the edge the other way */
        const defo_index *tri = m->elems + 3 * t.hinge_tri[2 * h + 1];
        int ok = 0;
        for (int i = 0; i < 3; i++)
            ok |= tri[i] == t.hinge[4 * h + 1] && tri[(i + 1) % 3] == t.hinge[4 * h];
        CHECK(ok);
    }
    defo_shell_topology_free(&t);
    /* flip two triangles: refused, then repaired by orient */
    defo_index *v = m->elems + 3 * 5, tmp = v[1];
    v[1] = v[2], v[2] = tmp;
    v = m->elems + 3 * 17, tmp = v[0];
    v[0] = v[1], v[1] = tmp;
    CHECK(defo_mesh_shell_topology(m, &t) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "oriented opposite") != NULL);
    defo_index flipped = 0;
    CHECK_OK(defo_mesh_orient(m, &flipped));
    CHECK(flipped == 2);
    CHECK_OK(defo_mesh_shell_topology(m, &t));
    defo_shell_topology_free(&t);
    /* a third triangle on an edge */
    defo_index extra;
    CHECK_OK(defo_mesh_add_node(m, 0.1, 0.1, 0.5, &extra));
    const defo_index fin[3] = {0, 6, extra}; /* (0 6) is a diagonal: interior */
    CHECK_OK(defo_mesh_add_elem(m, fin, 0));
    CHECK(defo_mesh_shell_topology(m, &t) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "shared by 3 triangles") != NULL);
    CHECK(strstr(defo_last_error(), "24") != NULL);
    defo_mesh_destroy(m);
    /* a duplicate triangle */
    m = grid(2, 2, 1, 1);
    const defo_index dup[3] = {m->elems[3], m->elems[4], m->elems[5]};
    CHECK_OK(defo_mesh_add_elem(m, dup, 0));
    CHECK(defo_mesh_shell_topology(m, &t) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "elements 1 and 8 are the same triangle") != NULL);
    defo_mesh_destroy(m);
    /* a zero-area triangle */
    m = grid(2, 2, 1, 1);
    defo_element_rest *r = NULL;
    /* the centre node onto the line of nodes 0 and 1: triangle (0 1 4) is flat */
    m->x[3 * 4 + 0] = 0.5 * (m->x[0] + m->x[3 * 1]);
    m->x[3 * 4 + 1] = m->x[3 * 1 + 1];
    CHECK(defo_element_rest_create(m, &r) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "degenerate triangle") != NULL);
    CHECK(defo_mesh_orient(m, NULL) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "element") != NULL);
    defo_mesh_destroy(m);
    /* a Möbius strip is not orientable */
    defo_mesh *mb = NULL;
    CHECK_OK(defo_mesh_create_shell(&mb));
    const int N = 12;
    for (int a = 0; a < N; a++)
        for (int s = -1; s <= 1; s += 2) {
            const double u = 2 * 3.14159265358979 * a / N, w = 0.2 * s;
            CHECK_OK(defo_mesh_add_node(mb, (1 + w * cos(u / 2)) * cos(u),
                                        (1 + w * cos(u / 2)) * sin(u), w * sin(u / 2), NULL));
        }
    for (int a = 0; a < N; a++) {
        const defo_index p0 = 2 * a, p1 = 2 * a + 1;
        defo_index q0 = 2 * ((a + 1) % N), q1 = q0 + 1;
        if (a == N - 1) { /* the half twist joins the sides crossed */
            const defo_index t2 = q0;
            q0 = q1, q1 = t2;
        }
        const defo_index t0[3] = {p0, q0, q1}, t1[3] = {p0, q1, p1};
        CHECK_OK(defo_mesh_add_elem(mb, t0, 0));
        CHECK_OK(defo_mesh_add_elem(mb, t1, 0));
    }
    CHECK(defo_mesh_orient(mb, NULL) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "not orientable") != NULL);
    defo_mesh_destroy(mb);
    /* a surface's triangles make a shell, unused nodes dropped */
    defo_mesh *s = NULL, *sh = NULL;
    CHECK_OK(defo_mesh_create(0, &s));
    for (int i = 0; i < 5; i++) CHECK_OK(defo_mesh_add_node(s, i, i * i, 0, NULL));
    const defo_index tr[3] = {0, 2, 4};
    CHECK_OK(defo_mesh_add_tri(s, tr, 3, 7));
    CHECK_OK(defo_mesh_shell_from_triangles(s, &sh));
    CHECK(sh->num_nodes == 3 && sh->num_elems == 1 && sh->elems[2] == 2 && sh->x[3 * 2] == 4);
    CHECK(sh->elem_tag && sh->elem_tag[0] == 7);
    CHECK(defo_element_ops_for_mesh(sh)->kind == DEFO_ELEMENT_TRI3);
    defo_mesh_destroy(s);
    defo_mesh_destroy(sh);
}

/* ------------------------------------------------------------ elements */
static void test_element(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create_shell(&m));
    CHECK_OK(defo_mesh_add_node(m, 0.1, 0.2, 0.3, NULL));
    CHECK_OK(defo_mesh_add_node(m, 1.1, 0.5, 0.1, NULL));
    CHECK_OK(defo_mesh_add_node(m, 0.4, 1.4, 0.9, NULL));
    const defo_index t[3] = {0, 1, 2};
    CHECK_OK(defo_mesh_add_elem(m, t, 0));
    defo_element_rest *r = NULL;
    CHECK_OK(defo_element_rest_create(m, &r));
    const double *X = m->x;
    const double e1[3] = {X[3] - X[0], X[4] - X[1], X[5] - X[2]};
    const double e2[3] = {X[6] - X[0], X[7] - X[1], X[8] - X[2]};
    const double c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                         e1[0] * e2[1] - e1[1] * e2[0]};
    const double A = 0.5 * sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
    CHECK_NEAR(defo_element_rest_volume(r)[0], A, 1e-15);
    CHECK_NEAR(defo_element_rest_weight(r)[0], A, 1e-15);
    /* Dm Dm⁻¹ = I with Dm = Bᵀ [e1 e2] */
    const double *fr = defo_element_rest_frame(r);
    CHECK(fr != NULL);
    double Dm[2][2];
    for (int i = 0; i < 2; i++) {
        Dm[i][0] = fr[3 * i] * e1[0] + fr[3 * i + 1] * e1[1] + fr[3 * i + 2] * e1[2];
        Dm[i][1] = fr[3 * i] * e2[0] + fr[3 * i + 1] * e2[1] + fr[3 * i + 2] * e2[2];
    }
    const double *Di = fr + 6;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            CHECK_NEAR(Dm[i][0] * Di[j] + Dm[i][1] * Di[2 + j], i == j ? 1.0 : 0.0, 1e-14);
    /* masses: ρ per area */
    double mass[3], Me[9], total = 0;
    CHECK_OK(defo_element_lumped_mass(m, 7.0, NULL, mass));
    for (int a = 0; a < 3; a++) CHECK_NEAR(mass[a], 7.0 * A / 3, 1e-14);
    CHECK_OK(defo_element_mass_matrix(m, 0, 7.0, Me));
    for (int k = 0; k < 9; k++) {
        CHECK_NEAR(Me[k], 7.0 * A * (k % 4 == 0 ? 2.0 : 1.0) / 12.0, 1e-14);
        total += Me[k];
    }
    CHECK_NEAR(total, 7.0 * A, 1e-14);
    double area = 0;
    CHECK_OK(defo_element_volume(m, NULL, &area));
    CHECK_NEAR(area, A, 1e-15);
    /* embedding weights of a point on the triangle, and of one above it */
    const double w[3] = {0.2, 0.5, 0.3};
    double p[3], b[4];
    for (int k = 0; k < 3; k++) p[k] = w[0] * X[k] + w[1] * X[3 + k] + w[2] * X[6 + k];
    CHECK_OK(defo_element_locate(m, NULL, 0, p, b, NULL));
    for (int a = 0; a < 3; a++) CHECK_NEAR(b[a], w[a], 1e-14);
    CHECK(b[3] == 0);
    for (int k = 0; k < 3; k++) p[k] += 0.3 * c[k];
    CHECK_OK(defo_element_locate(m, NULL, 0, p, b, NULL));
    for (int a = 0; a < 3; a++) CHECK_NEAR(b[a], w[a], 1e-14);
    /* a pressure load: t A / 3 per corner */
    unsigned char mark[3] = {1, 1, 1};
    const double tr[3] = {0, 0, -100};
    double f[9] = {0}, la = 0;
    CHECK_OK(defo_element_traction_load(m, mark, tr, f, &la));
    CHECK_NEAR(la, A, 1e-15);
    for (int a = 0; a < 3; a++) CHECK_NEAR(f[3 * a + 2], -100 * A / 3, 1e-12);
    defo_boundary bd;
    CHECK_OK(defo_mesh_boundary(m, 0, &bd));
    CHECK(bd.num_faces == 1 && bd.faces[1] == 1 && bd.elem[0] == 0);
    defo_boundary_free(&bd);
    defo_element_rest_destroy(r);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------- plane stress */
static void test_plane_stress(void) {
    const defo_material_model models[] = {DEFO_MODEL_COROTATED, DEFO_MODEL_NEO_HOOKEAN,
                                          DEFO_MODEL_STVK, DEFO_MODEL_BIPHASIC};
    const double pts[][2] = {{1.0, 1.0},  {1.2, 0.9},   {0.7, 0.6}, {1.5, 1.5},
                             {1.1, 0.25}, {1.05, -0.2}, {0.4, 0.1}, {2.5, 0.8}};
    double worst_p = 0, worst_a = 0, worst_s3 = 0;
    for (size_t mi = 0; mi < 4; mi++) {
        defo_material_def md = shell_material(models[mi]);
        defo_material *mat = NULL;
        CHECK_OK(defo_material_create(&md, &mat));
        for (size_t k = 0; k < sizeof pts / sizeof pts[0]; k++) {
            const double s1 = pts[k][0], s2 = pts[k][1], h = 1e-6;
            double ph[2], s3;
            defo_dpdf2 d;
            defo_material_eval_plane(mat, s1, s2, &s3, ph, &d);
            /* P̂ = ∂ψ̃/∂σ */
            const double scale = md.youngs_modulus;
            for (int i = 0; i < 2; i++) {
                const double a[2] = {s1 + (i == 0 ? h : 0), s2 + (i == 1 ? h : 0)};
                const double bm[2] = {s1 - (i == 0 ? h : 0), s2 - (i == 1 ? h : 0)};
                const double fd = (defo_material_eval_plane(mat, a[0], a[1], NULL, NULL, NULL) -
                                   defo_material_eval_plane(mat, bm[0], bm[1], NULL, NULL, NULL)) /
                                  (2 * h);
                worst_p = fmax(worst_p, fabs(fd - ph[i]) / scale);
                CHECK_MSG(fabs(fd - ph[i]) < 1e-6 * scale, "model %zu σ (%g, %g): P̂%d %g fd %g", mi,
                          s1, s2, i, ph[i], fd);
                double pa[2], pb[2];
                defo_material_eval_plane(mat, a[0], a[1], NULL, pa, NULL);
                defo_material_eval_plane(mat, bm[0], bm[1], NULL, pb, NULL);
                /* the biphasic curve is only C1 at rest (material.h): no
                 * second derivative at a stretch of exactly 1 */
                if (models[mi] == DEFO_MODEL_BIPHASIC && (s1 == 1.0 || s2 == 1.0)) continue;
                for (int r = 0; r < 2; r++) {
                    const double fa = (pa[r] - pb[r]) / (2 * h);
                    worst_a = fmax(worst_a, fabs(fa - d.A[r][i]) / scale);
                    CHECK_MSG(fabs(fa - d.A[r][i]) < 1e-5 * scale,
                              "model %zu σ (%g, %g): A[%d][%d] %g fd %g", mi, s1, s2, r, i,
                              d.A[r][i], fa);
                }
            }
            /* no stress across the thickness */
            defo_vec3 p3;
            defo_material_eval(mat, defo_v3(s1, s2, s3), &p3, NULL);
            worst_s3 = fmax(worst_s3, fabs(p3.z) / scale);
            CHECK_MSG(fabs(p3.z) < 1e-10 * scale, "model %zu: P̂3 %g at σ3 %g", mi, p3.z, s3);
            /* B and N from the in-plane stresses */
            if (fabs(s1 - s2) > 1e-3) {
                const double q1 = (ph[0] - ph[1]) / (s1 - s2), q2 = (ph[0] + ph[1]) / (s1 + s2);
                CHECK_NEAR(d.B[0][0], 0.5 * (q1 + q2), 1e-8 * scale);
                CHECK_NEAR(d.B[0][1], 0.5 * (q1 - q2), 1e-8 * scale);
            }
            CHECK_NEAR(d.N[0], ph[0] / s1, 1e-9 * scale);
        }
        /* small strain: the plane-stress moduli */
        defo_dpdf2 d;
        defo_material_eval_plane(mat, 1.0, 1.0, NULL, NULL, &d);
        const double E = md.youngs_modulus, nu = md.poisson;
        CHECK_NEAR(d.A[0][0], E / (1 - nu * nu), 1e-9 * E);
        CHECK_NEAR(d.A[0][1], nu * E / (1 - nu * nu), 1e-9 * E);
        defo_material_destroy(mat);
    }
    TEST_REPORT("P̂ vs FD %.2g, A vs FD %.2g, P̂3 at σ3 %.2g (relative to E)", worst_p, worst_a,
                worst_s3);
}

/* ------------------------------------------------------------- forces */
/* A deformed state of a grid: curved out of plane, stretched, sheared. */
static void deform(const defo_mesh *m, double amp, double *x) {
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *X = m->x + 3 * (size_t)i;
        x[3 * i] = 1.05 * X[0] + 0.1 * X[1] + 0.02 * sin(3 * X[1]);
        x[3 * i + 1] = 0.95 * X[1] - 0.05 * X[0];
        x[3 * i + 2] = X[2] + amp * (sin(2.1 * X[0] + 0.4) * cos(1.7 * X[1]) + 0.3 * X[0] * X[1]);
    }
}

static double energy_at(defo_force_model *fm, const double *x) {
    double e = 0;
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, NULL, &e));
    return e;
}

/* Work–energy along the straight path from x0 to x1 in 400 steps: the
 * largest |ΔE + ½ (f_k + f_k+1)·Δx| of a step (the trapezoid rule's work,
 * second order in the step) relative to the energy change over the path.
 * An energy that jumps (a triangle's orientation sign flipping on the way)
 * leaves one step's ΔE unmatched by any work. */
static double path_work(defo_force_model *fm, const double *x0, const double *x1, defo_index n) {
    const size_t m = 3 * (size_t)n;
    const int steps = 400;
    double *x = malloc(m * sizeof *x), *f = calloc(m, sizeof *f), *fp = calloc(m, sizeof *fp);
    double e = 0, ep = 0, worst = 0, emin = INFINITY, emax = -INFINITY;
    for (int k = 0; k <= steps; k++) {
        const double s = (double)k / steps;
        for (size_t j = 0; j < m; j++) x[j] = x0[j] + s * (x1[j] - x0[j]);
        CHECK_OK(defo_force_model_evaluate(fm, x, 0, f, &e));
        emin = fmin(emin, e), emax = fmax(emax, e);
        if (k > 0) {
            double work = 0;
            for (size_t j = 0; j < m; j++) work += 0.5 * (f[j] + fp[j]) * (x1[j] - x0[j]) / steps;
            worst = fmax(worst, fabs(e - ep + work));
        }
        memcpy(fp, f, m * sizeof *fp);
        ep = e;
    }
    free(x), free(f), free(fp);
    return worst / (emax - emin);
}

/* forces vs −dE/dx and K d vs −df/dx d at x; returns the relative errors */
static void fd_check(defo_force_model *fm, const double *x, defo_index n, double *ferr,
                     double *kerr) {
    const size_t m = 3 * (size_t)n;
    double *f = calloc(m, sizeof *f), *xp = malloc(m * sizeof *xp), *fp = calloc(m, sizeof *fp),
           *fm_ = calloc(m, sizeof *fm_), *d = malloc(m * sizeof *d), *y = calloc(m, sizeof *y);
    CHECK_OK(defo_force_model_evaluate(fm, x, DEFO_EVAL_TANGENT, f, NULL));
    double fbig = 0;
    for (size_t j = 0; j < m; j++) fbig = fmax(fbig, fabs(f[j]));
    double worst = 0;
    const double h = 1e-7;
    for (size_t j = 0; j < m; j += (m > 60 ? 7 : 1)) {
        memcpy(xp, x, m * sizeof *xp);
        xp[j] = x[j] + h;
        const double ep = energy_at(fm, xp);
        xp[j] = x[j] - h;
        const double em = energy_at(fm, xp);
        worst = fmax(worst, fabs(-(ep - em) / (2 * h) - f[j]));
    }
    *ferr = worst / fbig;
    /* tangent: at x again (evaluate with the tangent) */
    for (size_t j = 0; j < m; j++) d[j] = sin(1.3 * (double)j + 0.2);
    CHECK_OK(defo_force_model_evaluate(fm, x, DEFO_EVAL_TANGENT, f, NULL));
    defo_force_model_tangent_apply(fm, d, y);
    const double hh = 1e-6;
    for (size_t j = 0; j < m; j++) xp[j] = x[j] + hh * d[j];
    CHECK_OK(defo_force_model_evaluate(fm, xp, 0, fp, NULL));
    for (size_t j = 0; j < m; j++) xp[j] = x[j] - hh * d[j];
    CHECK_OK(defo_force_model_evaluate(fm, xp, 0, fm_, NULL));
    double kw = 0, ky = 0;
    for (size_t j = 0; j < m; j++) {
        kw = fmax(kw, fabs(-(fp[j] - fm_[j]) / (2 * hh) - y[j]));
        ky = fmax(ky, fabs(y[j]));
    }
    *kerr = kw / ky;
    free(f), free(xp), free(fp), free(fm_), free(d), free(y);
}

static void test_forces_fd(void) {
    const defo_material_model models[] = {DEFO_MODEL_COROTATED, DEFO_MODEL_NEO_HOOKEAN,
                                          DEFO_MODEL_STVK};
    double wf = 0, wk = 0, wp = 0;
    for (size_t mi = 0; mi < 3; mi++)
        for (int rest_curved = 0; rest_curved < 2; rest_curved++) {
            defo_mesh *m = grid(4, 3, 0.8, 0.6);
            if (rest_curved) /* a curved rest shape: rest angles not zero */
                for (defo_index i = 0; i < m->num_nodes; i++)
                    m->x[3 * i + 2] = 0.3 * m->x[3 * i] * m->x[3 * i] - 0.2 * m->x[3 * i + 1];
            shell_fixture f;
            defo_material_def md = shell_material(models[mi]);
            md.thickness = 0.05; /* bending and stretching comparable */
            if (!fixture(&f, m, md)) continue;
            double *x = malloc(3 * (size_t)m->num_nodes * sizeof *x);
            deform(m, 0.15, x);
            double fe, ke;
            fd_check(f.fm, x, m->num_nodes, &fe, &ke);
            CHECK_MSG(fe < 1e-6, "model %zu curved %d: forces vs -dE/dx %.3g", mi, rest_curved, fe);
            CHECK_MSG(ke < 1e-5, "model %zu curved %d: K d vs -df/dx d %.3g", mi, rest_curved, ke);
            wf = fmax(wf, fe), wk = fmax(wk, ke);
            /* node 6 pushed through its triangles, which turn over: no
             * triangle of a shell is inverted (ITF04 §8), and the energy is
             * continuous along the way (path_work) */
            double *x0 = malloc(3 * (size_t)m->num_nodes * sizeof *x0);
            memcpy(x0, x, 3 * (size_t)m->num_nodes * sizeof *x0);
            x[3 * 6 + 0] = x[3 * 1 + 0] - 0.05;
            x[3 * 6 + 1] = x[3 * 1 + 1] - 0.1;
            const double pw = path_work(f.fm, x0, x, m->num_nodes);
            CHECK_MSG(pw < 1e-3, "model %zu: work vs energy along the turn-over %.3g", mi, pw);
            wp = fmax(wp, pw);
            free(x0);
            defo_index inv = defo_force_model_count_inverted_at(f.fm, x);
            CHECK(inv == 0);
            fd_check(f.fm, x, m->num_nodes, &fe, &ke);
            CHECK_MSG(fe < 1e-6, "model %zu inverted: forces %.3g", mi, fe);
            CHECK_MSG(ke < 1e-5, "model %zu inverted: K d %.3g", mi, ke);
            CHECK(defo_force_model_count_inverted(f.fm) == inv);
            wf = fmax(wf, fe), wk = fmax(wk, ke);
            free(x);
            fixture_free(&f);
        }
    TEST_REPORT("forces vs -dE/dx %.2g, K d vs -df/dx d %.2g (relative), work vs energy along a "
                "turn-over %.2g (relative)",
                wf, wk, wp);
}

/* The assembled matrix equals the product and its diagonal blocks, the
 * forces sum to zero. */
static void test_tangent_consistency(void) {
    defo_mesh *m = grid(5, 4, 1, 0.8);
    shell_fixture f;
    if (!fixture(&f, m, shell_material(DEFO_MODEL_NEO_HOOKEAN))) return;
    const defo_index n = m->num_nodes;
    const size_t k = 3 * (size_t)n;
    double *x = malloc(k * sizeof *x), *d = malloc(k * sizeof *d), *y = malloc(k * sizeof *y),
           *z = malloc(k * sizeof *z), *force = malloc(k * sizeof *force),
           *diag = malloc(9 * (size_t)n * sizeof *diag);
    deform(m, 0.3, x);
    /* compress it: indefinite membrane blocks (the exact tangent) */
    for (size_t j = 0; j < k; j += 3) x[j] *= 0.7;
    CHECK_OK(defo_force_model_evaluate(f.fm, x, DEFO_EVAL_TANGENT, force, NULL));
    double sum[3] = {0, 0, 0}, fm = 0;
    for (defo_index i = 0; i < n; i++)
        for (int c = 0; c < 3; c++)
            sum[c] += force[3 * i + c], fm = fmax(fm, fabs(force[3 * i + c]));
    for (int c = 0; c < 3; c++) CHECK_NEAR(sum[c], 0, 1e-12 * fm * n);
    defo_bcsr *A = defo_force_model_assemble(f.fm, 1.0, 0.0, NULL, 0.0);
    CHECK(A != NULL);
    double worst = 0, ym = 0;
    for (int trial = 0; trial < 4; trial++) {
        for (size_t j = 0; j < k; j++) d[j] = sin(0.7 * (double)j * (trial + 1) + trial);
        defo_force_model_tangent_apply(f.fm, d, y);
        defo_bcsr_multiply(A, d, z);
        for (size_t j = 0; j < k; j++) {
            worst = fmax(worst, fabs(y[j] - z[j]));
            ym = fmax(ym, fabs(y[j]));
        }
    }
    CHECK_MSG(worst <= 1e-12 * ym, "assembled vs product %.3g of %.3g", worst, ym);
    defo_force_model_tangent_diagonal(f.fm, diag);
    const defo_bcsr_pattern *P = defo_bcsr_get_pattern(A);
    const double *val = defo_bcsr_values_const(A);
    double dw = 0;
    for (defo_index i = 0; i < n; i++)
        for (int c = 0; c < 9; c++) dw = fmax(dw, fabs(diag[9 * i + c] - val[9 * P->diag[i] + c]));
    CHECK_MSG(dw <= 1e-12 * ym, "diagonal blocks %.3g", dw);
    free(x), free(d), free(y), free(z), free(force), free(diag);
    fixture_free(&f);
}

/* The damping is linearised at the step's start (defo_force_model_track_
 * hinges): D v the same whichever point the model was evaluated at since,
 * another start another D; the assembled damping matrix is the product and
 * symmetric (the implicit step's potential ½ h vᵀ D v is exact). */
static void test_damping_of_step(void) {
    defo_mesh *m = grid(5, 4, 1, 0.8), *m2 = grid(5, 4, 1, 0.8);
    defo_material_def md = shell_material(DEFO_MODEL_NEO_HOOKEAN);
    md.damping_time = 0.01;
    shell_fixture f, g;
    if (!fixture(&f, m, md) || !fixture(&g, m2, md)) return;
    const defo_index n = m->num_nodes;
    const size_t k = 3 * (size_t)n;
    double *x0 = malloc(k * sizeof *x0), *x1 = malloc(k * sizeof *x1), *v = malloc(k * sizeof *v),
           *w = malloc(k * sizeof *w), *y0 = malloc(k * sizeof *y0), *y1 = malloc(k * sizeof *y1),
           *y2 = malloc(k * sizeof *y2), *z = malloc(k * sizeof *z);
    deform(m, 0.3, x0);
    deform(m, 0.6, x1);
    for (size_t j = 0; j < k; j++) v[j] = sin(0.9 * (double)j + 0.2), w[j] = cos(0.4 * (double)j);
    CHECK(defo_force_model_damping_of_step(f.fm));
    defo_force_model_track_hinges(f.fm, x0);
    CHECK_OK(defo_force_model_evaluate(f.fm, x0, DEFO_EVAL_TANGENT, NULL, NULL));
    defo_force_model_damping_apply(f.fm, v, y0);
    CHECK_OK(defo_force_model_evaluate(f.fm, x1, DEFO_EVAL_TANGENT, NULL, NULL));
    defo_force_model_damping_apply(f.fm, v, y1);
    CHECK(memcmp(y0, y1, k * sizeof *y0) == 0);
    /* another step's start: another damping */
    defo_force_model_track_hinges(g.fm, x1);
    CHECK_OK(defo_force_model_evaluate(g.fm, x0, DEFO_EVAL_TANGENT, NULL, NULL));
    defo_force_model_damping_apply(g.fm, v, y2);
    double diff = 0, ym = 0;
    for (size_t j = 0; j < k; j++)
        diff = fmax(diff, fabs(y2[j] - y0[j])), ym = fmax(ym, fabs(y0[j]));
    CHECK_MSG(diff > 1e-3 * ym, "the damping did not follow the step's start (%.3g of %.3g)", diff,
              ym);
    /* the assembled damping (k = 0, c = 1) at x1 is the product, symmetric */
    defo_bcsr *A = defo_force_model_assemble(f.fm, 0.0, 1.0, NULL, 0.0);
    CHECK(A != NULL);
    double worst = 0, vdw = 0, wdv = 0;
    if (A) {
        defo_bcsr_multiply(A, v, z);
        for (size_t j = 0; j < k; j++) worst = fmax(worst, fabs(z[j] - y0[j]));
    }
    defo_force_model_damping_apply(f.fm, w, y2);
    for (size_t j = 0; j < k; j++) vdw += v[j] * y2[j], wdv += w[j] * y0[j];
    CHECK_MSG(worst <= 1e-12 * ym, "assembled damping vs product %.3g of %.3g", worst, ym);
    CHECK_NEAR(vdw, wdv, 1e-12 * (fabs(vdw) + fabs(wdv)));
    TEST_REPORT("damping of the step's start: another start changes D v by %.3g of %.3g, "
                "assembled vs product %.3g",
                diff, ym, worst);
    free(x0), free(x1), free(v), free(w), free(y0), free(y1), free(y2), free(z);
    fixture_free(&f);
    fixture_free(&g);
}

/* ---------------------------------------------------------- patch test */
static void test_patch(void) {
    defo_mesh *m = grid(6, 5, 1.2, 1.0);
    shell_fixture f;
    if (!fixture(&f, m, shell_material(DEFO_MODEL_NEO_HOOKEAN))) return;
    const defo_index n = m->num_nodes;
    double *x = malloc(3 * (size_t)n * sizeof *x), *force = malloc(3 * (size_t)n * sizeof *force);
    /* uniform stretch 1.2 × 0.9, then a rotation about (1, 1, 1) */
    const double c = cos(0.7), s = sin(0.7), k[3] = {1 / sqrt(3.), 1 / sqrt(3.), 1 / sqrt(3.)};
    for (defo_index i = 0; i < n; i++) {
        const double p[3] = {1.2 * m->x[3 * i], 0.9 * m->x[3 * i + 1], m->x[3 * i + 2]};
        const double kp = k[0] * p[0] + k[1] * p[1] + k[2] * p[2];
        const double kx[3] = {k[1] * p[2] - k[2] * p[1], k[2] * p[0] - k[0] * p[2],
                              k[0] * p[1] - k[1] * p[0]};
        for (int r = 0; r < 3; r++)
            x[3 * i + r] = p[r] * c + kx[r] * s + k[r] * kp * (1 - c) + 0.3 * r;
    }
    CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, force, NULL));
    /* the same stress everywhere */
    double sig0[9], spread = 0, smax = 0;
    defo_force_model_stress(f.fm, 0, 0, sig0);
    for (defo_index e = 0; e < m->num_elems; e++) {
        double sg[9];
        defo_force_model_stress(f.fm, e, 0, sg);
        for (int q = 0; q < 9; q++) {
            spread = fmax(spread, fabs(sg[q] - sig0[q]));
            smax = fmax(smax, fabs(sg[q]));
        }
    }
    CHECK_MSG(spread <= 1e-9 * smax, "stress spread %.3g of %.3g", spread, smax);
    /* no force at interior nodes; boundary forces balance */
    double fi = 0, fb = 0;
    for (defo_index i = 0; i < n; i++) {
        const int ix = (int)(i % 7), iy = (int)(i / 7);
        const double a = sqrt(force[3 * i] * force[3 * i] + force[3 * i + 1] * force[3 * i + 1] +
                              force[3 * i + 2] * force[3 * i + 2]);
        if (ix > 0 && ix < 6 && iy > 0 && iy < 5)
            fi = fmax(fi, a);
        else
            fb = fmax(fb, a);
    }
    CHECK_MSG(fi <= 1e-10 * fb, "interior force %.3g, boundary %.3g", fi, fb);
    TEST_REPORT("uniform stretch: stress spread %.2g, interior force %.2g (relative)",
                spread / smax, fi / fb);
    /* a rigid motion: no force, no energy */
    double e = 1;
    for (defo_index i = 0; i < n; i++) {
        const double *p = m->x + 3 * i;
        x[3 * i] = c * p[0] - s * p[2] + 2;
        x[3 * i + 1] = p[1] - 1;
        x[3 * i + 2] = s * p[0] + c * p[2];
    }
    CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, force, &e));
    double fr = 0;
    for (size_t j = 0; j < 3 * (size_t)n; j++) fr = fmax(fr, fabs(force[j]));
    CHECK(fr < 1e-9 * fb);
    CHECK(fabs(e) < 1e-18);
    free(x), free(force);
    fixture_free(&f);
}

/* ------------------------------------------------ bending vs Kirchhoff */
/* Energy per area of the grid pushed onto z = ½(k11 x² + 2 k12 xy + k22
 * y²), interior triangles only (a band of two cells kept off the edges). */
static double bend_density(defo_force_model *fm, const defo_mesh *m, const double K[3], int cells) {
    const size_t k = 3 * (size_t)m->num_nodes;
    double *x = malloc(k * sizeof *x);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double X = m->x[3 * i], Y = m->x[3 * i + 1];
        x[3 * i] = X, x[3 * i + 1] = Y;
        x[3 * i + 2] = 0.5 * (K[0] * X * X + 2 * K[1] * X * Y + K[2] * Y * Y);
    }
    defo_index *list = malloc((size_t)m->num_elems * sizeof *list), cnt = 0;
    double area = 0;
    const double h = 1.0 / cells;
    for (defo_index e = 0; e < m->num_elems; e++) {
        const defo_index *v = m->elems + 3 * e;
        double cx = 0, cy = 0;
        for (int a = 0; a < 3; a++) cx += m->x[3 * v[a]] / 3, cy += m->x[3 * v[a] + 1] / 3;
        if (fabs(cx) < 0.5 - 2 * h && fabs(cy) < 0.5 - 2 * h) {
            list[cnt++] = e;
            area += 0.5 * h * h;
        }
    }
    double e0 = 0;
    CHECK_OK(defo_force_model_energy_of(fm, x, list, cnt, &e0));
    free(x);
    free(list);
    return e0 / area;
}

static void test_bending_kirchhoff(void) {
    const int cells = 20;
    double worst = 0;
    for (int vi = 0; vi < 2; vi++) {
        const double nu = vi ? 0.3 : 0.0;
        defo_mesh *m = grid(cells, cells, 1.0, 1.0);
        defo_material_def md = shell_material(DEFO_MODEL_COROTATED);
        md.poisson = nu;
        md.thickness = 0.01;
        shell_fixture f;
        if (!fixture(&f, m, md)) continue;
        const double D = md.youngs_modulus * pow(md.thickness, 3) / (12 * (1 - nu * nu));
        /* cylinder, cylinder along y, twist, saddle, sphere */
        const double k = 1e-4; /* membrane energy of the bent sheet ~ 4e-5 of bending */
        const double cases[5][3] = {{k, 0, 0}, {0, 0, k}, {0, k, 0}, {k, 0, -k}, {k, 0, k}};
        for (int c = 0; c < 5; c++) {
            const double *K = cases[c];
            const double want =
                0.5 * D *
                (K[0] * K[0] + K[2] * K[2] + 2 * nu * K[0] * K[2] + 2 * (1 - nu) * K[1] * K[1]);
            const double got = bend_density(f.fm, m, K, cells);
            const double rel = fabs(got - want) / want;
            worst = fmax(worst, rel);
            CHECK_MSG(rel < 2e-3, "ν %g case %d: %.6g, Kirchhoff %.6g", nu, c, got, want);
        }
        fixture_free(&f);
    }
    TEST_REPORT("bending energy density vs Kirchhoff: worst %.2g (cylinders, twist, saddle, "
                "sphere; ν 0 and 0.3)",
                worst);
}

/* ---------------------------------------------------------- threads */
typedef struct thread_ctx {
    defo_force_model *fm;
    const double *x, *d;
    defo_index n;
} thread_ctx;

static void compute(void *vctx, void *out) {
    thread_ctx *c = vctx;
    const size_t k = 3 * (size_t)c->n;
    double *o = out;
    CHECK_OK(defo_force_model_evaluate(c->fm, c->x, DEFO_EVAL_TANGENT, o, o + k));
    defo_force_model_tangent_apply(c->fm, c->d, o + k + 1);
    defo_force_model_tangent_diagonal(c->fm, o + 2 * k + 1);
    defo_bcsr *A = defo_force_model_assemble(c->fm, 1.0, 0.0, NULL, 0.0);
    defo_bcsr_multiply(A, c->d, o + 2 * k + 1 + 9 * (size_t)c->n);
}

static void test_threads(void) {
    defo_mesh *m = grid(60, 60, 1, 1);
    shell_fixture f;
    if (!fixture(&f, m, shell_material(DEFO_MODEL_NEO_HOOKEAN))) return;
    const size_t k = 3 * (size_t)m->num_nodes;
    double *x = malloc(k * sizeof *x), *d = malloc(k * sizeof *d);
    deform(m, 0.2, x);
    for (size_t j = 0; j < k; j++) d[j] = cos(0.37 * (double)j);
    thread_ctx c = {f.fm, x, d, m->num_nodes};
    CHECK(
        test_bitwise_same_for_threads(compute, &c, (3 * k + 1 + 9 * (size_t)m->num_nodes) * 8, 2));
    free(x), free(d);
    fixture_free(&f);
}

/* ----------------------------------------------------------- refusals */
static void test_refusals(void) {
    defo_mesh *m = grid(2, 2, 1, 1);
    defo_element_rest *r = NULL;
    CHECK_OK(defo_element_rest_create(m, &r));
    defo_material_def md = shell_material(DEFO_MODEL_NEO_HOOKEAN);
    md.thickness = 0;
    defo_material *mat = NULL;
    CHECK_OK(defo_material_create(&md, &mat));
    defo_force_model *fm = NULL;
    CHECK(defo_force_model_create(m, r, mat, NULL, &fm) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "thickness") != NULL);
    defo_material_destroy(mat);
    md.thickness = -1;
    CHECK(defo_material_def_validate(&md) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "thickness: -1") != NULL);
    md.thickness = 0.01;
    CHECK_OK(defo_material_create(&md, &mat));
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = DEFO_FORMULATION_COROTATED;
    CHECK(defo_force_model_create(m, r, mat, &fd, &fm) == DEFO_ERR_UNSUPPORTED);
    CHECK(strstr(defo_last_error(), "invertible") != NULL);
    defo_material_destroy(mat);
    defo_element_rest_destroy(r);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_topology);
    RUN(test_element);
    RUN(test_plane_stress);
    RUN(test_forces_fd);
    RUN(test_tangent_consistency);
    RUN(test_damping_of_step);
    RUN(test_patch);
    RUN(test_bending_kirchhoff);
    RUN(test_threads);
    RUN(test_refusals);
    return test_summary();
}
