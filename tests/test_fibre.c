/*
 * tests/test_fibre.c — the fibre term of transversely isotropic bodies in
 * the force layer (ITF04 §6.1, TSIF05 §8, §11; force/kernel_hyperelastic.c)
 * and the fibre fields (defo/fibre.h).
 *
 * References used, per test:
 *   - finite differences: forces = −dE/dx (central differences of the total
 *     energy) and the tangent K d = −df/dx·d (central differences of the
 *     forces), tet4 and tet10, at rest, stretched and compressed along and
 *     across the fibres, near-flat and inverted, with activation;
 *   - consistency: the assembled matrix equals the matrix-free product and
 *     its diagonal blocks the diagonal; with the definiteness fix every
 *     element matrix is positive semidefinite (the isotropic blocks clamped
 *     by TSIF05 §8, the fibre term by its own projection) while without it
 *     the descending limb of the force–length curve makes it indefinite;
 *   - conservation: the forces sum to zero and carry no torque;
 *   - the corotated formulation refuses fibres with its reason; a fibre
 *     material without directions is refused;
 *   - fields: a constant field, cell and node data (an axis: opposite node
 *     vectors interpolate), bad vectors named; the line of action between
 *     the two ends of a bar runs along the bar and, in a bent (L-shaped)
 *     body, turns with it.
 */
#include "defo/element.h"
#include "defo/fibre.h"
#include "defo/io.h"
#include "defo/force_model.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "force/force_internal.h"
#include "test.h"

#include <string.h>

static defo_mesh *box(int cells, int order, double sx, double sy, double sz) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = d.cells[1] = d.cells[2] = cells;
    d.size[0] = sx, d.size[1] = sy, d.size[2] = sz;
    d.order = order;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&d, &m));
    return m;
}

static defo_material_def fibre_material(void) {
    defo_material_def d = defo_default_material();
    d.youngs_modulus = 1e5;
    d.poisson = 0.4;
    d.fibre.passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL;
    d.fibre.exp_stress = 2e4;
    d.fibre.exp_rate = 5;
    d.fibre.linear_stretch = 1.5;
    d.fibre.max_active_stress = 8e4;
    d.fibre.optimal_stretch = 1.05;
    d.fibre.active_width = 0.6;
    return d;
}

typedef struct fixture {
    defo_mesh *mesh;
    defo_element_rest *rest;
    defo_material *mat;
    defo_force_model *fm;
    double *fib, *act;
    size_t m;
} fixture;

static int fixture_init(fixture *fx, defo_mesh *mesh, const defo_material_def *md, int fix,
                        test_rng *r, const double *axis) {
    memset(fx, 0, sizeof *fx);
    fx->mesh = mesh;
    fx->m = 3 * (size_t)mesh->num_nodes;
    if (defo_element_rest_create(mesh, &fx->rest)) return 0;
    const size_t np = defo_fibre_field_points(mesh);
    fx->fib = malloc(3 * np * sizeof(double));
    fx->act = malloc((size_t)mesh->num_elems * sizeof(double));
    /* a random axis per point near the given one (a field that varies) */
    for (size_t p = 0; p < np; p++)
        for (int k = 0; k < 3; k++) fx->fib[3 * p + k] = axis[k] + test_range(r, -0.3, 0.3);
    for (defo_index e = 0; e < mesh->num_elems; e++) fx->act[e] = test_range(r, 0.3, 1.0);
    CHECK_OK(defo_element_rest_set_fibres(fx->rest, fx->fib));
    if (defo_material_create(md, &fx->mat)) return 0;
    defo_force_model_def fd = defo_default_force_model_def();
    fd.definiteness_fix = fix;
    if (defo_force_model_create(mesh, fx->rest, fx->mat, &fd, &fx->fm)) return 0;
    defo_force_model_set_activation(fx->fm, fx->act);
    return 1;
}

static void fixture_free(fixture *fx) {
    defo_force_model_destroy(fx->fm);
    defo_material_destroy(fx->mat);
    defo_element_rest_destroy(fx->rest);
    defo_mesh_destroy(fx->mesh);
    free(fx->fib);
    free(fx->act);
}

static double energy(fixture *fx, const double *x) {
    double e = NAN;
    CHECK_OK(defo_force_model_evaluate(fx->fm, x, 0, NULL, &e));
    return e;
}

/* Deformed states: x = F X + small noise with F from the fibre axis a:
 * 0 rest, 1 stretched along, 2 compressed along, 3 stretched across,
 * 4 near-flat across, 5 inverted (a reflection across the fibre). */
static const char *const state_name[6] = {
    "rest", "stretched along", "compressed along", "stretched across", "near-flat", "inverted"};
static void state(const fixture *fx, int which, const double a[3], test_rng *r, double *x) {
    /* b ⊥ a */
    double b[3] = {-a[1], a[0], 0};
    if (fabs(a[2]) > 0.9) b[0] = 1, b[1] = 0, b[2] = 0;
    double nb = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]), na = 0;
    for (int k = 0; k < 3; k++) b[k] /= nb, na += a[k] * a[k];
    double u[3];
    for (int k = 0; k < 3; k++) u[k] = a[k] / sqrt(na);
    double F[3][3];
    static const double along[6] = {1, 1.25, 0.8, 0.95, 1.05, 1.1};
    static const double across[6] = {1, 0.95, 1.05, 1.3, 0.05, -0.4};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            F[i][j] =
                (i == j) + (along[which] - 1) * u[i] * u[j] + (across[which] - 1) * b[i] * b[j];
    const double noise = which == 0 ? 0 : 0.01;
    for (defo_index i = 0; i < fx->mesh->num_nodes; i++) {
        const double *X = fx->mesh->x + 3 * i;
        for (int k = 0; k < 3; k++)
            x[3 * i + k] =
                F[k][0] * X[0] + F[k][1] * X[1] + F[k][2] * X[2] + noise * test_range(r, -1, 1);
    }
}

/* forces = −dE/dx and K d = −df/dx·d, and the sums, per element kind and state */
static void check_fd(int order) {
    test_rng r = {0xf1b7e + (unsigned)order};
    const double axis[3] = {0.8, 0.5, 0.3};
    fixture fx;
    defo_material_def md = fibre_material();
    CHECK(fixture_init(&fx, box(1, order, 1, 1, 1), &md, 0, &r, axis));
    double *x = malloc(fx.m * sizeof *x), *f = malloc(fx.m * sizeof *f), *y = malloc(fx.m * 8);
    double *xp = malloc(fx.m * 8), *fp = malloc(fx.m * 8), *fq = malloc(fx.m * 8),
           *d = malloc(fx.m * 8);
    for (int st = 0; st < 6; st++) {
        state(&fx, st, axis, &r, x);
        double e0;
        CHECK_OK(defo_force_model_evaluate(fx.fm, x, DEFO_EVAL_TANGENT, f, &e0));
        if (st == 5) CHECK(defo_force_model_count_inverted(fx.fm) > 0);
        for (size_t j = 0; j < fx.m; j++) d[j] = test_range(&r, -1, 1);
        defo_force_model_tangent_apply(fx.fm, d, y);
        double fscale = 1e-3, worst_f = 0, sum[3] = {0, 0, 0};
        for (size_t j = 0; j < fx.m; j++) fscale = fmax(fscale, fabs(f[j])), sum[j % 3] += f[j];
        const double h = 1e-6;
        for (size_t j = 0; j < fx.m; j++) {
            memcpy(xp, x, fx.m * 8);
            xp[j] = x[j] + h;
            const double ep = energy(&fx, xp);
            xp[j] = x[j] - h;
            const double em = energy(&fx, xp);
            worst_f = fmax(worst_f, fabs(-(ep - em) / (2 * h) - f[j]) / fscale);
        }
        for (size_t j = 0; j < fx.m; j++) xp[j] = x[j] + h * d[j];
        CHECK_OK(defo_force_model_evaluate(fx.fm, xp, 0, fp, NULL));
        for (size_t j = 0; j < fx.m; j++) xp[j] = x[j] - h * d[j];
        CHECK_OK(defo_force_model_evaluate(fx.fm, xp, 0, fq, NULL));
        double kscale = 1e-3, worst_k = 0;
        for (size_t j = 0; j < fx.m; j++) kscale = fmax(kscale, fabs(y[j]));
        for (size_t j = 0; j < fx.m; j++)
            worst_k = fmax(worst_k, fabs(-(fp[j] - fq[j]) / (2 * h) - y[j]) / kscale);
        TEST_REPORT("tet%d %-16s: forces vs −dE/dx %.1e, tangent vs FD %.1e, |Σf| %.1e (|f| %.2g)",
                    order == 1 ? 4 : 10, state_name[st], worst_f, worst_k,
                    fabs(sum[0]) + fabs(sum[1]) + fabs(sum[2]), fscale);
        CHECK(worst_f < 1e-6);
        CHECK(worst_k < 1e-5);
        CHECK(fabs(sum[0]) + fabs(sum[1]) + fabs(sum[2]) < 1e-11 * fscale);
    }
    free(x), free(f), free(y), free(xp), free(fp), free(fq), free(d);
    fixture_free(&fx);
}

static void test_fd_tet4(void) {
    check_fd(1);
}
static void test_fd_tet10(void) {
    check_fd(2);
}

/* Assembled matrix = product, diagonal blocks = diagonal; with the fix the
 * matrix is PSD (every quadratic form ≥ 0), without it the active curve's
 * descending limb makes some form negative. */
static void test_assembly_and_definiteness(void) {
    for (int order = 1; order <= 2; order++) {
        test_rng r = {0xa55e + (unsigned)order};
        const double axis[3] = {0, 0, 1};
        int negative[2] = {0, 0};
        double worst = 0;
        for (int fix = 0; fix <= 1; fix++) {
            fixture fx;
            defo_material_def md = fibre_material();
            /* the active limb alone, strong against a soft matrix: its K < 0
             * beyond the optimal stretch dominates */
            md.fibre.passive = DEFO_FIBRE_PASSIVE_NONE;
            md.fibre.optimal_stretch = 0.9;
            md.youngs_modulus = 1e3;
            CHECK(fixture_init(&fx, box(2, order, 1, 1, 1), &md, fix, &r, axis));
            double *x = malloc(fx.m * 8), *d = malloc(fx.m * 8), *y = malloc(fx.m * 8),
                   *z = malloc(fx.m * 8), *diag = malloc(3 * fx.m * 8);
            for (int trial = 0; trial < 20; trial++) {
                state(&fx, 1 + trial % 3, axis, &r, x); /* fibres at 1.25, 0.8, 0.95 */
                CHECK_OK(defo_force_model_evaluate(fx.fm, x, DEFO_EVAL_TANGENT, NULL, NULL));
                const defo_bcsr *A = defo_force_model_assemble(fx.fm, 1, 0, NULL, 0);
                CHECK(A != NULL);
                for (size_t j = 0; j < fx.m; j++) d[j] = test_range(&r, -1, 1);
                defo_force_model_tangent_apply(fx.fm, d, y);
                defo_bcsr_multiply(A, d, z);
                double sc = 1e-9, dy = 0;
                for (size_t j = 0; j < fx.m; j++)
                    sc = fmax(sc, fabs(y[j])), worst = fmax(worst, fabs(y[j] - z[j]));
                worst /= sc;
                for (size_t j = 0; j < fx.m; j++) dy += d[j] * y[j];
                if (dy < -1e-9 * sc) negative[fix]++;
                defo_force_model_tangent_diagonal(fx.fm, diag);
                const double *val = defo_bcsr_values_const(A);
                const defo_bcsr_pattern *pt = defo_bcsr_get_pattern(A);
                for (defo_index i = 0; i < fx.mesh->num_nodes; i++)
                    for (int k = 0; k < 9; k++)
                        worst = fmax(worst, fabs(val[9 * pt->diag[i] + k] - diag[9 * i + k]) / sc);
            }
            free(x), free(d), free(y), free(z), free(diag);
            fixture_free(&fx);
        }
        TEST_REPORT("tet%d: assembled vs product/diagonal %.1e; negative forms without the fix "
                    "%d/20, with it %d/20",
                    order == 1 ? 4 : 10, worst, negative[0], negative[1]);
        CHECK(worst < 1e-12);
        CHECK(negative[0] > 0);
        CHECK(negative[1] == 0);
    }
}

/* Refusals: corotated with fibres (its reason), fibres without directions. */
static void test_refusals(void) {
    defo_mesh *m = box(1, 1, 1, 1, 1);
    defo_element_rest *rest = NULL;
    CHECK_OK(defo_element_rest_create(m, &rest));
    defo_material_def md = fibre_material();
    defo_material *mat = NULL;
    CHECK_OK(defo_material_create(&md, &mat));
    defo_force_model *fm = NULL;
    defo_force_model_def fd = defo_default_force_model_def();
    CHECK(defo_force_model_create(m, rest, mat, &fd, &fm) == DEFO_ERR_INVALID_ARGUMENT && !fm);
    CHECK(strstr(defo_last_error(), "no fibre directions") != NULL);
    double *dir = malloc(3 * defo_fibre_field_points(m) * sizeof(double));
    CHECK_OK(defo_fibre_field_constant(m, (double[3]){1, 0, 0}, dir));
    CHECK_OK(defo_element_rest_set_fibres(rest, dir));
    fd.formulation = DEFO_FORMULATION_COROTATED;
    CHECK(defo_force_model_create(m, rest, mat, &fd, &fm) == DEFO_ERR_UNSUPPORTED && !fm);
    CHECK(strstr(defo_last_error(), "corotated") && strstr(defo_last_error(), "|F a|"));
    /* a zero direction in the per-point data is named */
    dir[3 * 2 + 0] = dir[3 * 2 + 1] = dir[3 * 2 + 2] = 0;
    CHECK(defo_element_rest_set_fibres(rest, dir) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "element 2 point 0") != NULL);
    dir[3 * 2] = NAN;
    CHECK(defo_element_rest_set_fibres(rest, dir) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "not finite") != NULL);
    free(dir);
    defo_material_destroy(mat);
    defo_element_rest_destroy(rest);
    defo_mesh_destroy(m);
}

/* Constant, cell and node fields; bad vectors named. */
static void test_fields(void) {
    defo_mesh *m = box(2, 2, 1, 1, 1);
    const size_t np = defo_fibre_field_points(m);
    CHECK(np == 4 * (size_t)m->num_elems);
    double *out = malloc(3 * np * 8), *cells = malloc(3 * (size_t)m->num_elems * 8),
           *nodes = malloc(3 * (size_t)m->num_nodes * 8);
    CHECK_OK(defo_fibre_field_constant(m, (double[3]){0, 3, 4}, out));
    CHECK(out[0] == 0 && fabs(out[1] - 0.6) < 1e-15 && fabs(out[3 * np - 1] - 0.8) < 1e-15);
    CHECK(defo_fibre_field_constant(m, (double[3]){0, 0, 0}, out) == DEFO_ERR_INVALID_ARGUMENT);
    for (defo_index e = 0; e < m->num_elems; e++)
        cells[3 * e] = 1 + e, cells[3 * e + 1] = 0, cells[3 * e + 2] = 0;
    CHECK_OK(defo_fibre_field_cells(m, cells, out));
    CHECK(out[3 * 4 * 5] == 1 && out[3 * 4 * 5 + 1] == 0);
    cells[3 * 3 + 1] = NAN;
    CHECK(defo_fibre_field_cells(m, cells, out) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "element 3") && strstr(defo_last_error(), "not finite"));
    /* node axes along ±z (opposite signs alternate): every point along z */
    for (defo_index i = 0; i < m->num_nodes; i++)
        nodes[3 * i] = 0, nodes[3 * i + 1] = 0, nodes[3 * i + 2] = i % 2 ? 1 : -2;
    CHECK_OK(defo_fibre_field_nodes(m, nodes, out));
    double worst = 0;
    for (size_t p = 0; p < np; p++) worst = fmax(worst, 1 - fabs(out[3 * p + 2]));
    CHECK(worst < 1e-14);
    nodes[3 * 7 + 2] = 0;
    CHECK(defo_fibre_field_nodes(m, nodes, out) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "node 7") && strstr(defo_last_error(), "zero"));
    free(out), free(cells), free(nodes);
    defo_mesh_destroy(m);
}

/* The line of action between the two ends of a bar runs along the bar; in
 * an L-shaped body (two bars meeting at a corner) it turns with the body:
 * along x in the first leg, along y in the second. */
static void test_line_of_action(void) {
    defo_mesh *m = box(4, 1, 4, 1, 1);
    const defo_index n = m->num_nodes;
    unsigned char *from = calloc((size_t)n, 1), *to = calloc((size_t)n, 1);
    for (defo_index i = 0; i < n; i++) {
        from[i] = m->x[3 * i] < 1e-9;
        to[i] = m->x[3 * i] > 4 - 1e-9;
    }
    double *out = malloc(3 * defo_fibre_field_points(m) * 8);
    defo_fibre_line_stats st;
    CHECK_OK(defo_fibre_field_line_of_action(m, from, to, out, &st));
    double worst = 0;
    for (size_t p = 0; p < defo_fibre_field_points(m); p++) worst = fmax(worst, 1 - out[3 * p]);
    TEST_REPORT("bar: worst 1 − a·x %.1e (CG %d iterations, residual %.1e)", worst, st.iterations,
                st.residual);
    CHECK(worst < 1e-8);
    /* attachments that hold whole elements (x ≤ 1, x ≥ 3): those take
     * their neighbours' axis, still along the bar */
    for (defo_index i = 0; i < n; i++) {
        from[i] = m->x[3 * i] < 1 + 1e-9;
        to[i] = m->x[3 * i] > 3 - 1e-9;
    }
    CHECK_OK(defo_fibre_field_line_of_action(m, from, to, out, &st));
    worst = 0;
    for (size_t p = 0; p < defo_fibre_field_points(m); p++)
        worst = fmax(worst, 1 - fabs(out[3 * p]));
    TEST_REPORT("bar with thick attachments: worst 1 − |a·x| %.1e", worst);
    CHECK(worst < 1e-8);
    for (defo_index i = 0; i < n; i++) {
        from[i] = m->x[3 * i] < 1e-9;
        to[i] = m->x[3 * i] > 4 - 1e-9;
    }
    /* bad sets */
    CHECK(defo_fibre_field_line_of_action(m, from, from, out, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "both point sets") != NULL);
    memset(to, 0, (size_t)n);
    CHECK(defo_fibre_field_line_of_action(m, from, to, out, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "'to' point set selects no node") != NULL);
    free(from), free(to), free(out);
    defo_mesh_destroy(m);

    /* L shape: cells of a 4 x 4 x 1 box with x < 1 or y < 1 kept */
    defo_mesh *b = box(8, 1, 4, 4, 1), *L = NULL;
    CHECK_OK(defo_mesh_create(1, &L));
    for (defo_index i = 0; i < b->num_nodes; i++)
        defo_mesh_add_node(L, b->x[3 * i], b->x[3 * i + 1], b->x[3 * i + 2], NULL);
    for (defo_index e = 0; e < b->num_elems; e++) {
        double c[3] = {0, 0, 0};
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < 3; k++) c[k] += 0.25 * b->x[3 * b->elems[4 * e + a] + k];
        if (c[0] < 1 || c[1] < 1) defo_mesh_add_elem(L, b->elems + 4 * e, 0);
    }
    /* drop the nodes of no element by marking them in neither set: they
     * are ignored (zero rows) */
    const defo_index nl = L->num_nodes;
    from = calloc((size_t)nl, 1), to = calloc((size_t)nl, 1);
    for (defo_index i = 0; i < nl; i++) {
        from[i] = L->x[3 * i] > 4 - 1e-9 && L->x[3 * i + 1] < 1 + 1e-9; /* end of the x leg */
        to[i] = L->x[3 * i + 1] > 4 - 1e-9 && L->x[3 * i] < 1 + 1e-9;   /* end of the y leg */
    }
    out = malloc(3 * defo_fibre_field_points(L) * 8);
    CHECK_OK(defo_fibre_field_line_of_action(L, from, to, out, &st));
    double wx = 0, wy = 0;
    for (defo_index e = 0; e < L->num_elems; e++) {
        double c[3] = {0, 0, 0};
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < 3; k++) c[k] += 0.25 * L->x[3 * L->elems[4 * e + a] + k];
        if (c[0] > 3 && c[1] < 1) wx = fmax(wx, 1 - fabs(out[3 * e])); /* far in the x leg */
        if (c[1] > 3 && c[0] < 1) wy = fmax(wy, 1 - fabs(out[3 * e + 1]));
    }
    TEST_REPORT("L shape: far in the x leg worst 1 − |a·x| %.2e, in the y leg 1 − |a·y| %.2e", wx,
                wy);
    CHECK(wx < 0.02 && wy < 0.02);
    free(from), free(to), free(out);
    defo_mesh_destroy(L);
    defo_mesh_destroy(b);
}

/* Gmsh data views as fibre fields: "fibre" per element = (1, y_c, 0) and
 * "node_fibre" per node = (x, 1, 0), written by meshio (data/gmsh/README.md)
 * in 2.2 ASCII and binary and 4.1 binary; the cell entries of triangles and
 * lines are skipped. */
static void test_gmsh_views(void) {
    static const char *const files[3] = {"fibre_views_msh22.msh", "fibre_views_msh22_bin.msh",
                                         "fibre_views_msh41_bin.msh"};
    for (int f = 0; f < 3; f++) {
        char path[512];
        snprintf(path, sizeof path, "%s/gmsh/%s", DEFO_DATA_DIR, files[f]);
        defo_mesh *m = NULL;
        CHECK(defo_mesh_read(path, NULL, &m) >= 0);
        if (!m) continue;
        const defo_field *c = defo_mesh_find_field(m, "fibre", DEFO_FIELD_CELL);
        const defo_field *p = defo_mesh_find_field(m, "node_fibre", DEFO_FIELD_POINT);
        CHECK(c && c->components == 3 && p && p->components == 3);
        double worst = 0;
        for (defo_index e = 0; c && e < m->num_elems; e++) {
            double yc = 0;
            for (int a = 0; a < 4; a++) yc += 0.25 * m->x[3 * m->elems[4 * e + a] + 1];
            worst = fmax(worst, fabs(c->data[3 * e] - 1) + fabs(c->data[3 * e + 1] - yc) +
                                    fabs(c->data[3 * e + 2]));
        }
        for (defo_index i = 0; p && i < m->num_nodes; i++)
            worst = fmax(worst, fabs(p->data[3 * i] - m->x[3 * i]) + fabs(p->data[3 * i + 1] - 1) +
                                    fabs(p->data[3 * i + 2]));
        TEST_REPORT("%s: %ld tets, worst view error %.1e", files[f], (long)m->num_elems, worst);
        CHECK(worst < 1e-12);
        double *out = malloc(3 * defo_fibre_field_points(m) * sizeof(double));
        if (c) CHECK_OK(defo_fibre_field_cells(m, c->data, out));
        if (p) CHECK_OK(defo_fibre_field_nodes(m, p->data, out));
        free(out);
        defo_mesh_destroy(m);
    }
    /* a view before the elements, and one naming a node that does not exist */
    static const char head[] = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n4\n1 0 0 0\n2 1 0 "
                               "0\n3 0 1 0\n4 0 0 1\n$EndNodes\n";
    static const char view[] = "$ElementData\n1\n\"fibre\"\n1\n0.0\n3\n0\n3\n1\n1 1 0 0\n"
                               "$EndElementData\n";
    static const char elems[] = "$Elements\n1\n1 4 2 0 0 1 2 3 4\n$EndElements\n";
    static const char node_view[] = "$NodeData\n1\n\"nf\"\n0\n3\n0\n3\n1\n9 1 0 0\n"
                                    "$EndNodeData\n";
    char text[1024];
    defo_mesh *m = NULL;
    snprintf(text, sizeof text, "%s%s%s", head, view, elems);
    CHECK(defo_mesh_read_memory(text, strlen(text), "v.msh", NULL, &m) == DEFO_ERR_PARSE && !m);
    CHECK(strstr(defo_last_error(), "v.msh:11: $ElementData before any tetrahedron") != NULL);
    snprintf(text, sizeof text, "%s%s%s", head, elems, node_view);
    CHECK(defo_mesh_read_memory(text, strlen(text), "v.msh", NULL, &m) == DEFO_ERR_PARSE && !m);
    CHECK(strstr(defo_last_error(), "node tag 9 is not in $Nodes") != NULL);
    snprintf(text, sizeof text, "%s%s%s", head, elems, view);
    CHECK(defo_mesh_read_memory(text, strlen(text), "v.msh", NULL, &m) >= 0 && m);
    const defo_field *f = m ? defo_mesh_find_field(m, "fibre", DEFO_FIELD_CELL) : NULL;
    CHECK(f && f->data[0] == 1 && f->data[1] == 0);
    defo_mesh_destroy(m);
}

/* The four-wide explicit tet4 pass with a fibre term (lanewise, the curves
 * by defo_material_fibre_stress4) equals the one-element pass bit for bit: forces, kept F, fibre state,
 * flags, stable lengths and time, near rest, stretched and tangled (where
 * inverted lanes go one by one), untracked and tracked. */
static void test_lanes_bitwise(void) {
    test_rng r = {0x1a7e5};
    const double axis[3] = {0.3, 0.9, 0.2};
    fixture fx;
    defo_material_def md = fibre_material();
    CHECK(fixture_init(&fx, box(3, 1, 1, 1, 1), &md, 1, &r, axis));
    defo_force_model *fm = fx.fm;
    if (!fm || !fm->jinv4) {
        TEST_REPORT("this CPU has no 256-bit lanes: the four-wide pass is never taken");
        fixture_free(&fx);
        return;
    }
    const defo_index ne = fx.mesh->num_elems;
    double *x = malloc(fx.m * 8), *g1 = malloc(fx.m * 8), *g2 = malloc(fx.m * 8),
           *M1 = malloc(9 * (size_t)ne * 8), *L1 = malloc((size_t)ne * 8),
           *B1 = malloc(FM_FIB * (size_t)ne * 8);
    unsigned char *fl1 = malloc((size_t)ne);
    long finished = 0, left = 0;
    for (int track = 0; track < 2; track++)
        for (int a = 0; a < 3; a++) {
            static const double amp[3] = {0.005, 0.05, 0.3};
            for (size_t i = 0; i < fx.m; i++)
                x[i] = fx.mesh->x[i] * (a == 1 ? 1.25 : 1.0) + amp[a] * test_range(&r, -1, 1);
            if (track) defo_force_model_track_stable_time(fm);
            fm->lanes = 1;
            CHECK_OK(defo_force_model_evaluate(fm, x, 0, g1, NULL));
            const double t1 = defo_force_model_stable_time(fm);
            const defo_index lanes = fm->lane_elems;
            memcpy(M1, fm->M, 9 * (size_t)ne * 8);
            memcpy(L1, fm->stable_len, (size_t)ne * 8);
            memcpy(B1, fm->fib, FM_FIB * (size_t)ne * 8);
            memcpy(fl1, fm->flag, (size_t)ne);
            fm->lanes = 0;
            CHECK_OK(defo_force_model_evaluate(fm, x, 0, g2, NULL));
            const double t2 = defo_force_model_stable_time(fm);
            CHECK(memcmp(g1, g2, fx.m * 8) == 0);
            CHECK(memcmp(M1, fm->M, 9 * (size_t)ne * 8) == 0);
            CHECK(memcmp(L1, fm->stable_len, (size_t)ne * 8) == 0);
            CHECK(memcmp(B1, fm->fib, FM_FIB * (size_t)ne * 8) == 0);
            CHECK(memcmp(fl1, fm->flag, (size_t)ne) == 0);
            CHECK(memcmp(&t1, &t2, sizeof t1) == 0);
            if (a == 0) CHECK(lanes == ne - ne % 4);
            finished += lanes;
            left += ne - lanes;
        }
    TEST_REPORT("fibre four-wide = one by one, bit for bit: %ld elements four-wide, %ld one by one",
                finished, left);
    CHECK(left > 0);
    free(x), free(g1), free(g2), free(M1), free(L1), free(B1), free(fl1);
    fixture_free(&fx);
}

int main(void) {
    RUN(test_fd_tet4);
    RUN(test_fd_tet10);
    RUN(test_assembly_and_definiteness);
    RUN(test_refusals);
    RUN(test_fields);
    RUN(test_line_of_action);
    RUN(test_gmsh_views);
    RUN(test_lanes_bitwise);
    return test_summary();
}
