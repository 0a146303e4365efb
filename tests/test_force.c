/*
 * tests/test_force.c — invertible FEM element forces and the rotated-frame
 * damping operator (ITF04 eq. 2, §5, §6, §6.2) through the force layer
 * (defo/force_model.h, INVERTIBLE formulation, tet4): the regimes the
 * invertible model exists for — inverted, nearly flat and collapsed
 * elements, per material model.  tests/test_force_model.c covers both
 * formulations and tet10 on mildly deformed states (tangent, assembly,
 * patch tests, fields).
 *
 * References used:
 *   - conservation: forces sum to zero and have zero torque about the origin
 *     for any deformation (translation and rotation invariance of the energy);
 *   - finite differences: G = −∂(Σ V ψ)/∂x by central differences of the
 *     energy, for random, inverted and nearly flat states;
 *   - degenerate elements (a tet collapsed to a point, a line, a plane): the
 *     force is finite and non-zero, a small move along it lowers the energy
 *     and gives a positive volume (it un-inverts);
 *   - damping: D is symmetric PSD (uᵀDv = vᵀDu, vᵀDv ≥ 0), its diagonal
 *     blocks are eᵀDe, rigid velocities are undamped at rest, and the forces
 *     −Dv equal P_d Bm (Bm = −V Dm⁻ᵀ) with P_d from the material's
 *     world-frame formula;
 *   - explicit step scale: the smallest altitude over the wave speed, halved
 *     by the order for tet10;
 *   - determinism: 1 and 2 threads give the same bits (tests/determinism.h).
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "determinism.h"
#include "test.h"

static defo_mesh *one_tet(void) {
    defo_mesh *m = NULL;
    defo_mesh_create(1, &m);
    defo_mesh_add_node(m, 0, 0, 0, NULL);
    defo_mesh_add_node(m, 1, 0.1, 0, NULL);
    defo_mesh_add_node(m, 0.2, 0.9, 0.1, NULL);
    defo_mesh_add_node(m, 0.1, 0.2, 1.1, NULL);
    defo_index e[4] = {0, 1, 2, 3};
    defo_mesh_add_elem(m, e, 0);
    return m;
}

static defo_mesh *small_box(int cells) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = d.cells[1] = d.cells[2] = cells;
    defo_mesh *m = NULL;
    defo_generate_box(&d, &m);
    return m;
}

static defo_material *make_material(defo_material_model model, double damping_time) {
    defo_material_def d = defo_default_material();
    d.model = model;
    d.youngs_modulus = 1e5;
    d.poisson = 0.3;
    d.damping_time = damping_time;
    defo_material *mat = NULL;
    defo_material_create(&d, &mat);
    return mat;
}

typedef struct fixture {
    defo_mesh *mesh;
    defo_element_rest *rest;
    defo_material *mat;
    defo_force_model *force;
} fixture;

/* The invertible model with the material's own inversion extension (ITF04
 * §6; constant_extrapolation off, the default). */
static int fixture_init(fixture *fx, defo_mesh *mesh, defo_material *mat) {
    memset(fx, 0, sizeof *fx);
    fx->mesh = mesh;
    fx->mat = mat;
    if (!mesh || !mat) return 0;
    if (defo_element_rest_create(mesh, &fx->rest)) return 0;
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = DEFO_FORMULATION_INVERTIBLE;
    return defo_force_model_create(mesh, fx->rest, mat, &fd, &fx->force) == DEFO_OK;
}

static void fixture_free(fixture *fx) {
    defo_force_model_destroy(fx->force);
    defo_element_rest_destroy(fx->rest);
    defo_material_destroy(fx->mat);
    defo_mesh_destroy(fx->mesh);
}

static defo_status elastic(fixture *fx, const double *x, double *f, double *e) {
    return defo_force_model_evaluate(fx->force, x, 0, f, e);
}

static double energy_at(fixture *fx, const double *x) {
    double e = NAN;
    elastic(fx, x, NULL, &e);
    return e;
}

/* ------------------------------------------------- momentum conservation */
static void test_sum_and_torque(void) {
    fixture fx;
    CHECK(fixture_init(&fx, small_box(3), make_material(DEFO_MODEL_NEO_HOOKEAN, 0)));
    size_t m = 3 * (size_t)fx.mesh->num_nodes;
    double *x = malloc(m * sizeof *x), *f = malloc(m * sizeof *f);
    test_rng r = {12345};
    double worst_f = 0, worst_t = 0;
    defo_index inverted_seen = 0;
    for (int trial = 0; trial < 20; trial++) {
        /* random displacements up to 0.6 of the cell size: many elements
         * invert, which is the regime the extension exists for */
        double amp = 0.6 / 3.0 * (trial % 4 + 1) / 4.0;
        for (size_t j = 0; j < m; j++) x[j] = fx.mesh->x[j] + test_range(&r, -amp, amp);
        CHECK_OK(elastic(&fx, x, f, NULL));
        inverted_seen += defo_force_model_count_inverted(fx.force);
        double s[3] = {0, 0, 0}, t[3] = {0, 0, 0}, fabs_sum = 0, tscale = 0;
        for (defo_index i = 0; i < fx.mesh->num_nodes; i++) {
            const double *p = x + 3 * i, *q = f + 3 * i;
            for (int k = 0; k < 3; k++) s[k] += q[k];
            t[0] += p[1] * q[2] - p[2] * q[1];
            t[1] += p[2] * q[0] - p[0] * q[2];
            t[2] += p[0] * q[1] - p[1] * q[0];
            double fn = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
            fabs_sum += fn;
            tscale += fn * sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        }
        worst_f = fmax(worst_f, sqrt(s[0] * s[0] + s[1] * s[1] + s[2] * s[2]) / fabs_sum);
        worst_t = fmax(worst_t, sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]) / tscale);
    }
    TEST_REPORT("|sum f|/sum|f| = %.2e, |torque|/sum|x||f| = %.2e, inverted elements seen %ld",
                worst_f, worst_t, (long)inverted_seen);
    CHECK(inverted_seen > 0);
    CHECK(worst_f < 1e-13);
    CHECK(worst_t < 1e-12);
    free(x);
    free(f);
    fixture_free(&fx);
}

/* ----------------------------------------------- finite differences */
/* Worst |f + ∂E/∂x| / max|f| over coordinates; E by central differences
 * with step h (relative to the element size 1). */
static double fd_error(fixture *fx, double *x, double h) {
    size_t m = 3 * (size_t)fx->mesh->num_nodes;
    double *f = malloc(m * sizeof *f);
    elastic(fx, x, f, NULL);
    double fmaxv = 0, err = 0;
    for (size_t j = 0; j < m; j++) fmaxv = fmax(fmaxv, fabs(f[j]));
    for (size_t j = 0; j < m; j++) {
        double x0 = x[j];
        x[j] = x0 + h;
        double ep = energy_at(fx, x);
        x[j] = x0 - h;
        double em = energy_at(fx, x);
        x[j] = x0;
        double g = -(ep - em) / (2 * h);
        err = fmax(err, fabs(g - f[j]));
    }
    free(f);
    return fmaxv > 0 ? err / fmaxv : err;
}

static void fd_family(defo_material_model model, const char *name) {
    fixture fx;
    CHECK(fixture_init(&fx, one_tet(), make_material(model, 0)));
    test_rng r = {777 + (unsigned)model};
    double x[12], worst[3] = {0, 0, 0};
    for (int trial = 0; trial < 60; trial++) {
        int kind = trial % 3; /* 0 random, 1 inverted, 2 nearly flat */
        for (int j = 0; j < 12; j++) x[j] = fx.mesh->x[j] + test_range(&r, -0.3, 0.3);
        if (kind == 1) { /* reflect node 3 through the plane of the others */
            defo_vec3 a = defo_v3_load(x), b = defo_v3_load(x + 3), c = defo_v3_load(x + 6);
            defo_vec3 n = defo_v3_normalize(defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a)));
            defo_vec3 p = defo_v3_load(x + 9);
            double d = defo_v3_dot(defo_v3_sub(p, a), n);
            defo_v3_store(x + 9, defo_v3_axpy(p, -2.0 * d, n));
        } else if (kind == 2) { /* node 3 within 1e-3 of the plane: nearly flat */
            defo_vec3 a = defo_v3_load(x), b = defo_v3_load(x + 3), c = defo_v3_load(x + 6);
            defo_vec3 n = defo_v3_normalize(defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a)));
            defo_vec3 p = defo_v3_load(x + 9);
            double d = defo_v3_dot(defo_v3_sub(p, a), n);
            defo_v3_store(x + 9, defo_v3_axpy(p, -d + test_range(&r, -1e-3, 1e-3), n));
        }
        /* h = 1e-6 of the unit element: truncation ~h² and rounding
         * ~ε E/h are both ≈ 1e-10 relative */
        double e = fd_error(&fx, x, 1e-6);
        worst[kind] = fmax(worst[kind], e);
    }
    TEST_REPORT("%s: worst FD error / max|f|: random %.2e, inverted %.2e, nearly flat %.2e", name,
                worst[0], worst[1], worst[2]);
    /* Nearly flat states sit within 1e-3 of a kink of σ3 ↦ |σ3| ordering;
     * C1 extension keeps ψ C1 there, so a 1e-6 step still resolves it. */
    CHECK(worst[0] < 1e-7);
    CHECK(worst[1] < 1e-7);
    CHECK(worst[2] < 1e-6);
    fixture_free(&fx);
}

static void test_fd_corotated(void) {
    fd_family(DEFO_MODEL_COROTATED, "corotated");
}
static void test_fd_neo_hookean(void) {
    fd_family(DEFO_MODEL_NEO_HOOKEAN, "neo_hookean");
}
static void test_fd_stvk(void) {
    fd_family(DEFO_MODEL_STVK, "stvk");
}

/* A mesh: FD on a few random coordinates of a deformed box. */
static void test_fd_mesh(void) {
    fixture fx;
    CHECK(fixture_init(&fx, small_box(2), make_material(DEFO_MODEL_NEO_HOOKEAN, 0)));
    size_t m = 3 * (size_t)fx.mesh->num_nodes;
    double *x = malloc(m * sizeof *x);
    test_rng r = {99};
    for (size_t j = 0; j < m; j++) x[j] = fx.mesh->x[j] + test_range(&r, -0.15, 0.15);
    double e = fd_error(&fx, x, 1e-6);
    TEST_REPORT("box 2x2x2 (%ld tets), %ld inverted: FD error / max|f| = %.2e",
                (long)fx.mesh->num_elems, (long)defo_force_model_count_inverted(fx.force), e);
    CHECK(e < 1e-6);
    free(x);
    fixture_free(&fx);
}

/* -------------------------------------------------- degenerate elements */
static void degenerate_case(defo_material_model model, const char *what, const double *x0) {
    fixture fx;
    CHECK(fixture_init(&fx, one_tet(), make_material(model, 0)));
    double f[12], x[12];
    memcpy(x, x0, sizeof x);
    double e0 = NAN;
    CHECK_OK(elastic(&fx, x, f, &e0));
    double fn = 0;
    for (int j = 0; j < 12; j++) fn = fmax(fn, fabs(f[j]));
    CHECK(isfinite(fn) && fn > 0);
    /* step so that the largest node move is 1e-3 of the element size */
    double eps = 1e-3 / fn;
    for (int j = 0; j < 12; j++) x[j] += eps * f[j];
    double e1 = energy_at(&fx, x);
    defo_vec3 a = defo_v3_load(x);
    double vol = defo_v3_dot(defo_v3_sub(defo_v3_load(x + 3), a),
                             defo_v3_cross(defo_v3_sub(defo_v3_load(x + 6), a),
                                           defo_v3_sub(defo_v3_load(x + 9), a))) /
                 6.0;
    TEST_REPORT("%s (%s): max|f| %.3g, energy %.6g -> %.6g, volume 0 -> %.3g", what,
                defo_material_model_name(model), fn, e0, e1, vol);
    CHECK(e1 < e0);
    CHECK(vol > 0);
    fixture_free(&fx);
}

static void test_degenerate(void) {
    /* collapsed to a point */
    double pt[12] = {0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3, 0.3};
    /* collapsed to a line (x axis) */
    double ln[12] = {0, 0, 0, 1, 0, 0, 0.2, 0, 0, 0.6, 0, 0};
    /* collapsed to a plane (z = 0) */
    double pl[12] = {0, 0, 0, 1, 0.1, 0, 0.2, 0.9, 0, 0.1, 0.2, 0};
    defo_material_model models[2] = {DEFO_MODEL_COROTATED, DEFO_MODEL_NEO_HOOKEAN};
    for (int k = 0; k < 2; k++) {
        degenerate_case(models[k], "point", pt);
        degenerate_case(models[k], "line", ln);
        degenerate_case(models[k], "plane", pl);
    }
}

/* --------------------------------------------------------- damping */
static void test_damping_operator(void) {
    fixture fx;
    CHECK(fixture_init(&fx, small_box(2), make_material(DEFO_MODEL_COROTATED, 0.01)));
    defo_index n = fx.mesh->num_nodes;
    size_t m = 3 * (size_t)n;
    double *x = malloc(m * sizeof *x), *u = malloc(m * sizeof *u), *v = malloc(m * sizeof *v);
    double *Du = malloc(m * sizeof *Du), *Dv = malloc(m * sizeof *Dv);
    double *dg = malloc(3 * m * sizeof *dg);
    double *e = calloc(m, sizeof *e), *fd = malloc(m * sizeof *fd);
    test_rng r = {4242};
    for (size_t j = 0; j < m; j++) x[j] = fx.mesh->x[j] + test_range(&r, -0.2, 0.2);
    for (size_t j = 0; j < m; j++) u[j] = test_range(&r, -1, 1);
    for (size_t j = 0; j < m; j++) v[j] = test_range(&r, -1, 1);
    CHECK_OK(elastic(&fx, x, NULL, NULL));
    CHECK(defo_force_model_has_damping(fx.force));
    defo_force_model_damping_apply(fx.force, u, Du);
    defo_force_model_damping_apply(fx.force, v, Dv);
    double uDv = 0, vDu = 0, vDv = 0, scale = 0;
    for (size_t j = 0; j < m; j++) {
        uDv += u[j] * Dv[j];
        vDu += v[j] * Du[j];
        vDv += v[j] * Dv[j];
        scale += fabs(u[j] * Dv[j]);
    }
    TEST_REPORT("symmetry |uDv - vDu|/sum|u.Dv| = %.2e, vDv = %.4g", fabs(uDv - vDu) / scale, vDv);
    CHECK(fabs(uDv - vDu) <= 1e-13 * scale);
    CHECK(vDv > 0);
    /* the damping force */
    for (size_t j = 0; j < m; j++) fd[j] = -Dv[j];
    /* diagonal blocks (3×3 per node, row-major) = e_iᵀ D e_j within the node */
    defo_force_model_damping_diagonal(fx.force, dg);
    double derr = 0, dmax = 0;
    for (size_t j = 0; j < m; j += 7) {
        e[j] = 1;
        defo_force_model_damping_apply(fx.force, e, Du);
        e[j] = 0;
        const size_t node = j / 3, col = j % 3;
        for (size_t row = 0; row < 3; row++) {
            derr = fmax(derr, fabs(Du[3 * node + row] - dg[9 * node + 3 * row + col]));
            dmax = fmax(dmax, fabs(dg[9 * node + 3 * row + col]));
        }
    }
    TEST_REPORT("diagonal blocks: max error %.2e relative to %.3g", derr, dmax);
    CHECK(derr <= 1e-12 * dmax);
    /* forces = P_d Bm per element with the material's world-frame P_d,
     * Bm = −V Dm⁻ᵀ from the element layer's tet4 rest data (J⁻¹ = Dm⁻¹, w = V) */
    const double *jinv = defo_element_rest_jinv(fx.rest), *wt = defo_element_rest_weight(fx.rest);
    double *ref = calloc(m, sizeof *ref);
    for (defo_index el = 0; el < fx.mesh->num_elems; el++) {
        const defo_index *nd = fx.mesh->elems + 4 * el;
        defo_mat3 Ds, Dvm, Dmi;
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 3; i++) {
                Ds.m[i][k] = x[3 * nd[k + 1] + i] - x[3 * nd[0] + i];
                Dvm.m[i][k] = v[3 * nd[k + 1] + i] - v[3 * nd[0] + i];
            }
        memcpy(Dmi.m, jinv + 9 * el, sizeof Dmi.m);
        const defo_mat3 Bm = defo_m3_scale(defo_m3_transpose(Dmi), -wt[el]);
        defo_mat3 F = defo_m3_mul(Ds, Dmi), Fd = defo_m3_mul(Dvm, Dmi), U, V;
        defo_vec3 s;
        defo_svd3(&F, &U, &s, &V);
        defo_mat3 Pd = defo_material_damping_P(fx.mat, &U, &V, &Fd);
        defo_mat3 G = defo_m3_mul(Pd, Bm);
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 3; i++) {
                ref[3 * nd[k + 1] + i] += G.m[i][k];
                ref[3 * nd[0] + i] -= G.m[i][k];
            }
    }
    double rerr = 0, rmax = 0;
    for (size_t j = 0; j < m; j++) {
        rerr = fmax(rerr, fabs(ref[j] - fd[j]));
        rmax = fmax(rmax, fabs(ref[j]));
    }
    TEST_REPORT("vs material damping_P: %.2e relative", rerr / rmax);
    CHECK(rerr <= 1e-12 * rmax);
    /* rigid velocity at rest: no damping force */
    CHECK_OK(elastic(&fx, fx.mesh->x, NULL, NULL));
    for (defo_index i = 0; i < n; i++) {
        const double *p = fx.mesh->x + 3 * i;
        v[3 * i] = 0.3 + 0.7 * p[1] - 0.2 * p[2];
        v[3 * i + 1] = -0.1 - 0.7 * p[0] + 0.5 * p[2];
        v[3 * i + 2] = 0.2 + 0.2 * p[0] - 0.5 * p[1];
    }
    defo_force_model_damping_apply(fx.force, v, fd);
    double rig = 0;
    for (size_t j = 0; j < m; j++) rig = fmax(rig, fabs(fd[j]));
    TEST_REPORT("rigid velocity at rest: max damping force %.2e (vs %.3g for random v)", rig, dmax);
    CHECK(rig <= 1e-12 * dmax);
    free(ref);
    free(x);
    free(u);
    free(v);
    free(Du);
    free(Dv);
    free(dg);
    free(e);
    free(fd);
    fixture_free(&fx);
}

/* ----------------------------------------------------- determinism */
typedef struct det_ctx {
    fixture *fx;
    const double *x, *v;
} det_ctx;

static void det_compute(void *vctx, void *out) {
    det_ctx *c = vctx;
    size_t m = 3 * (size_t)c->fx->mesh->num_nodes;
    double *o = out;
    elastic(c->fx, c->x, o, o + 2 * m);
    defo_force_model_damping_apply(c->fx->force, c->v, o + m);
}

static void test_determinism(void) {
    fixture fx;
    defo_torus_def td = defo_default_torus_def();
    td.cell_size = td.minor_radius / 3; /* thousands of tets: the loops run in parallel */
    defo_mesh *mesh = NULL;
    CHECK_OK(defo_generate_torus(&td, &mesh));
    CHECK(fixture_init(&fx, mesh, make_material(DEFO_MODEL_NEO_HOOKEAN, 0.01)));
    size_t m = 3 * (size_t)mesh->num_nodes;
    double *x = malloc(m * sizeof *x), *v = malloc(m * sizeof *v);
    test_rng r = {5};
    for (size_t j = 0; j < m; j++) x[j] = mesh->x[j] + test_range(&r, -0.05, 0.05);
    for (size_t j = 0; j < m; j++) v[j] = test_range(&r, -1, 1);
    det_ctx c = {&fx, x, v};
    TEST_REPORT("torus: %ld nodes, %ld tets", (long)mesh->num_nodes, (long)mesh->num_elems);
    CHECK(test_bitwise_same_for_threads(det_compute, &c, (2 * m + 1) * sizeof(double), 2));
    free(x);
    free(v);
    fixture_free(&fx);
}

/* ----------------------------------------------------- errors and CFL */
/* Smallest altitude 3V / (largest face area) of the corners of element 0. */
/* 2/√λmax(Σ_a ∇N_a∇N_aᵀ) of the first element (tet4), from its corners:
 * ∇N_1..3 are the rows of Dm⁻¹, ∇N_0 minus their sum. */
static double tet4_eigen_length(const defo_mesh *m) {
    defo_vec3 p[4];
    for (int a = 0; a < 4; a++) p[a] = defo_v3_load(m->x + 3 * m->elems[a]);
    const defo_mat3 Dm = defo_m3_from_cols(defo_v3_sub(p[1], p[0]), defo_v3_sub(p[2], p[0]),
                                           defo_v3_sub(p[3], p[0]));
    defo_mat3 Di;
    if (!defo_m3_inverse(Dm, &Di)) return NAN;
    defo_mat3 S = defo_m3_zero();
    defo_vec3 g0 = defo_v3(0, 0, 0);
    for (int a = 0; a < 3; a++) {
        const defo_vec3 g = defo_v3(Di.m[a][0], Di.m[a][1], Di.m[a][2]);
        S = defo_m3_add(S, defo_m3_outer(g, g));
        g0 = defo_v3_sub(g0, g);
    }
    S = defo_m3_add(S, defo_m3_outer(g0, g0));
    defo_vec3 l;
    defo_mat3 Q;
    defo_sym3_eigen(&S, &l, &Q);
    return 2.0 / sqrt(l.x);
}

static void test_errors(void) {
    fixture fx;
    CHECK(fixture_init(&fx, one_tet(), make_material(DEFO_MODEL_COROTATED, 0)));
    double x[12];
    memcpy(x, fx.mesh->x, sizeof x);
    x[7] = NAN;
    double f[12];
    CHECK(elastic(&fx, x, f, NULL) == DEFO_ERR_NUMERICAL);
    CHECK(strstr(defo_last_error(), "element 0") && strstr(defo_last_error(), "node 2"));
    /* the model is usable again after a good evaluation: at rest F = I to
     * rounding, so the forces are rounding noise of E·L² = 1e5 N */
    CHECK_OK(elastic(&fx, fx.mesh->x, f, NULL));
    double fmx = 0;
    for (int j = 0; j < 12; j++) fmx = fmax(fmx, fabs(f[j]));
    CHECK(fmx < 1e-9 * 1e5);
    /* CFL wave time: the eigenvalue length over c√r₀, c = sqrt((λ + 2μ)/ρ),
     * r₀ = (3λ + 2μ)/(λ + 2μ), at cfl ½ the element's bound of 2/ω */
    const double lam = defo_material_lambda(fx.mat), mu = defo_material_mu(fx.mat);
    double c = sqrt(defo_material_stiffness_scale(fx.mat) / 1000.0);
    const double want =
        tet4_eigen_length(fx.mesh) / (c * sqrt((3 * lam + 2 * mu) / (lam + 2 * mu)));
    double wt = defo_force_model_wave_time(fx.force);
    TEST_REPORT("wave time %.6g s, 2/√λmax(Σ∇N∇Nᵀ) / (c√r₀) = %.6g s", wt, want);
    CHECK_NEAR(wt, want, 1e-13 * want);
    /* tet10 (the old kernel refused it): the same formula with its own
     * eigenvalue length (test_element checks it in closed form) — edge nodes
     * and HRZ masses give a higher bound, so a shorter time */
    defo_mesh *q = NULL;
    CHECK_OK(defo_mesh_to_quadratic(fx.mesh, &q));
    defo_element_rest *rq = NULL;
    CHECK_OK(defo_element_rest_create(q, &rq));
    defo_force_model *fq = NULL;
    defo_force_model_def fd = defo_default_force_model_def();
    CHECK_OK(defo_force_model_create(q, rq, fx.mat, &fd, &fq));
    if (fq) {
        const double w10 = defo_force_model_wave_time(fq),
                     want10 = defo_element_rest_eigen_length(rq)[0] /
                              (c * sqrt((3 * lam + 2 * mu) / (lam + 2 * mu)));
        TEST_REPORT("tet10 of the same corners: wave time %.4g of tet4's", w10 / wt);
        CHECK_NEAR(w10, want10, 1e-13 * want10);
        CHECK(w10 < wt);
    }
    defo_force_model_destroy(fq);
    defo_element_rest_destroy(rq);
    defo_mesh_destroy(q);
    fixture_free(&fx);
}

int main(void) {
    RUN(test_sum_and_torque);
    RUN(test_fd_corotated);
    RUN(test_fd_neo_hookean);
    RUN(test_fd_stvk);
    RUN(test_fd_mesh);
    RUN(test_degenerate);
    RUN(test_damping_operator);
    RUN(test_determinism);
    RUN(test_errors);
    return test_summary();
}
