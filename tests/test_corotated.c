/*
 * tests/test_corotated.c — the corotated kernel of the force model (MG04
 * §2.3–2.4 warped stiffness for tet4, MTPS08 §4.3–4.4 rotations per cubature
 * point for tet10, lazy updates) and implicit Euler of corotated bodies in the
 * world (MG04 §6).
 *
 * References used:
 *   - analytic: the element stiffness equals the Voigt product
 *     Ke = Σ_q w_q B_qᵀ E B_q built here from the rest positions (tet4: one
 *     point, w = V; tet10: the 4-point rule); rigid modes are in its null
 *     space; the assembled K' = Σ R Ke Rᵀ + m M equals a dense sum with R the
 *     polar factor of the SVD (defo_svd3: R = U Vᵀ, ITF04 §5);
 *   - the rotations: R σ(R) recovered from the forces of isolated elements
 *     equals U Vᵀ σ(U Vᵀ) for random deformations, inverted ones included;
 *   - conservation: forces sum to zero for any deformation (no ghost
 *     forces); a rigidly rotated + translated mesh has zero force and zero
 *     strain; a free body keeps its linear momentum through implicit Euler,
 *     and with Rayleigh mass damping α loses it exactly as (1 + Δt α)⁻ⁿ;
 *   - the discrete energy balance of implicit Euler on linear FEM (exact):
 *     E⁺ − E = −½|Δv|²_M − ½|Δx|²_K − Δt v⁺ᵀ C v⁺, C = αM + (β + τ)K;
 *   - linear FEM: at displacement ε·d the forces equal −K ε d up to O(ε²);
 *   - conserved quantity: a bar spun through 180° keeps its volume
 *     (corotated) while linear FEM (R = I) inflates;
 *   - reference solution: the damped cantilever settles at the linear static
 *     solution K u = f_ext of the same mesh (PCG on the assembled linear K);
 *   - kinematic handles: prescribed nodes land exactly on their motion's
 *     positions, and a free bar dragged by one end ends up moving rigidly;
 *   - inversion: the stepper brings an inverted body back to its volume;
 *   - lazy rotations (MTPS08 §4.4): the interval and tolerance rules seen in
 *     the forces; their accuracy cost measured against full updates; a run
 *     resumed from a checkpoint continues bit for bit;
 *   - initial guesses from the last solutions next to the joint Newton
 *     solve: a corotated and an invertible box colliding under one backward
 *     Euler integrator, resumed from a checkpoint, continue bit for bit;
 *   - determinism: forces and assembly bitwise identical for 1 and 2 threads.
 */
#include "defo/cholesky.h"
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/math.h"
#include "defo/mesh.h"
#include "defo/solver.h"
#include "defo/sparse.h"
#include "defo/world.h"
#include "determinism.h"
#include "force/force_internal.h"
#include "test.h"

static const double PI = 3.14159265358979323846;

static defo_mesh *bar_order(int cx, int cy, int cz, double lx, double ly, double lz, int order) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = cx;
    d.cells[1] = cy;
    d.cells[2] = cz;
    d.size[0] = lx;
    d.size[1] = ly;
    d.size[2] = lz;
    d.order = order;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&d, &m));
    return m;
}

static defo_mesh *bar(int cx, int cy, int cz, double lx, double ly, double lz) {
    return bar_order(cx, cy, cz, lx, ly, lz, 1);
}

static defo_material_def material(double E, double nu) {
    defo_material_def mat = defo_default_material();
    mat.youngs_modulus = E;
    mat.poisson = nu;
    mat.density = 1000;
    return mat;
}

static double max_abs(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s = fmax(s, fabs(v[i]));
    return s;
}

/* ------------------------------------------------------------ fixtures */
/* A corotated force model on a mesh (rest data and material owned). */
typedef struct model {
    defo_element_rest *rest;
    defo_material *mat;
    defo_force_model *fm;
} model;

static int model_make(model *m, const defo_mesh *mesh, const defo_material_def *md,
                      const defo_force_model_def *fd_in) {
    memset(m, 0, sizeof *m);
    defo_force_model_def fd = fd_in ? *fd_in : defo_default_force_model_def();
    if (!fd_in) fd.formulation = DEFO_FORMULATION_COROTATED;
    defo_status s = defo_element_rest_create(mesh, &m->rest);
    if (!s) s = defo_material_create(md, &m->mat);
    if (!s) s = defo_force_model_create(mesh, m->rest, m->mat, &fd, &m->fm);
    CHECK_OK(s);
    return s == DEFO_OK;
}

static void model_drop(model *m) {
    defo_force_model_destroy(m->fm);
    defo_material_destroy(m->mat);
    defo_element_rest_destroy(m->rest);
}

static defo_force_model_def corot_def(void) {
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = DEFO_FORMULATION_COROTATED;
    return fd;
}

/* A world with no gravity unless gz != 0, one integrator, one corotated body. */
typedef struct sim {
    defo_world *w;
    defo_body_id id;
} sim;

static int sim_make(sim *s, const defo_mesh *m, const defo_material_def *mat,
                    const defo_force_model_def *fd, const defo_integrator_def *idef, double gz) {
    memset(s, 0, sizeof *s);
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = gz;
    defo_status st = defo_world_create(&wd, &s->w);
    int integ = -1;
    if (!st) st = defo_world_add_integrator(s->w, idef, &integ);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = *mat;
    bd.force = fd ? *fd : corot_def();
    bd.integrator = integ;
    if (!st) st = defo_world_add_body(s->w, &bd, &s->id);
    CHECK_OK(st);
    return st == DEFO_OK;
}

/* Hold the nodes with rest x ≤ xmax (region tolerance) at rest. */
static void sim_clamp(sim *s, double xmax) {
    const double lo[3] = {-INFINITY, -INFINITY, -INFINITY}, hi[3] = {xmax, INFINITY, INFINITY};
    defo_region r = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(s->w, s->id, &r, NULL, NULL));
}

static defo_integrator_def be_def(double dt, double tol) {
    defo_integrator_def d = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    d.time_step = dt;
    d.linear.tolerance = tol;
    return d;
}

/* Mean z displacement of the nodes with rest x ≥ xtip. */
static double tip_z(const defo_mesh *m, const double *x, double xtip) {
    double s = 0;
    int cnt = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] > xtip - 1e-9) {
            s += x[3 * i + 2] - m->x[3 * i + 2];
            cnt++;
        }
    return cnt ? s / cnt : 0;
}

/* ------------------------------------------------- the Voigt reference */
/* K += w Bᵀ E B over P nodes with world gradients g (3 per node): B the 6×3P
 * strain-displacement matrix (Voigt xx yy zz, engineering γxy γyz γzx), E
 * the isotropic 6×6 elasticity matrix (MG04 §2.3). */
static void voigt_add(int P, const double *g, double w, double mu, double lambda, double *K) {
    double B[6][30];
    memset(B, 0, sizeof B);
    for (int a = 0; a < P; a++) {
        const double bx = g[3 * a], by = g[3 * a + 1], bz = g[3 * a + 2];
        B[0][3 * a] = bx;
        B[1][3 * a + 1] = by;
        B[2][3 * a + 2] = bz;
        B[3][3 * a] = by, B[3][3 * a + 1] = bx;
        B[4][3 * a + 1] = bz, B[4][3 * a + 2] = by;
        B[5][3 * a] = bz, B[5][3 * a + 2] = bx;
    }
    double E[6][6];
    memset(E, 0, sizeof E);
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) E[i][j] = lambda;
        E[i][i] += 2 * mu;
        E[i + 3][i + 3] = mu;
    }
    const int n = 3 * P;
    for (int r = 0; r < n; r++)
        for (int c = 0; c < n; c++) {
            double s = 0;
            for (int i = 0; i < 6; i++) {
                double eb = 0;
                for (int j = 0; j < 6; j++) eb += E[i][j] * B[j][c];
                s += B[i][r] * eb;
            }
            K[r * n + c] += w * s;
        }
}

/* World shape gradients (3 per node) and weight of point q of element e at
 * the REST positions: J = Σ_a X_a ∇ξN_aᵀ, ∇N_a = J⁻ᵀ ∇ξN_a, w = ω_q det J / 6.
 * tet4 (one point): ∇N_a = row a−1 of Dm⁻¹, ∇N_0 = −Σ, w = V. */
static void rest_gradients(const defo_mesh *m, defo_index e, int q, double *g, double *w) {
    const defo_element_ops *ops = defo_element_ops_for_mesh(m);
    const int P = ops->nodes;
    const double *gx = ops->stiffness.grad + 3 * P * q;
    const defo_index *v = m->elems + (size_t)e * P;
    defo_mat3 J = defo_m3_zero(), Ji = defo_m3_identity();
    for (int a = 0; a < P; a++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) J.m[r][k] += m->x[3 * (size_t)v[a] + r] * gx[3 * a + k];
    CHECK(defo_m3_inverse(J, &Ji));
    for (int a = 0; a < P; a++)
        for (int r = 0; r < 3; r++)
            g[3 * a + r] =
                Ji.m[0][r] * gx[3 * a] + Ji.m[1][r] * gx[3 * a + 1] + Ji.m[2][r] * gx[3 * a + 2];
    *w = ops->stiffness.weight[q] * defo_m3_det(J) / 6.0;
}

/* F at point q of element e at positions x (rest gradients). */
static defo_mat3 point_F(const defo_mesh *m, const double *x, defo_index e, int q) {
    const int P = m->nodes_per_elem;
    double g[30], w;
    rest_gradients(m, e, q, g, &w);
    defo_mat3 F;
    memset(&F, 0, sizeof F);
    for (int a = 0; a < P; a++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                F.m[r][k] += x[3 * (size_t)m->elems[(size_t)e * P + a] + r] * g[3 * a + k];
    return F;
}

/* The rotation of the ITF04 §5 SVD: R = U Vᵀ (proper also when inverted). */
static defo_mat3 svd_rotation(const defo_mat3 *F) {
    defo_mat3 U, V;
    defo_vec3 s;
    defo_svd3(F, &U, &s, &V);
    return defo_m3_mul(U, defo_m3_transpose(V));
}

/* Dense Σ_e Σ_q R_q (w_q B_qᵀ E B_q) R_qᵀ · k (+ m·mass on the diagonal),
 * R_q = U Vᵀ of F_q at x (x NULL: R = I). */
static void dense_reference(const defo_mesh *m, const double *x, double mu, double lambda, double k,
                            const double *mass, double mscale, double *D) {
    const int P = m->nodes_per_elem, nq = P == 4 ? 1 : 4, n = 3 * P;
    const size_t n3 = 3 * (size_t)m->num_nodes;
    memset(D, 0, n3 * n3 * sizeof *D);
    double *Ke = malloc((size_t)n * n * sizeof *Ke);
    for (defo_index e = 0; e < m->num_elems; e++)
        for (int q = 0; q < nq; q++) {
            double g[30], w;
            rest_gradients(m, e, q, g, &w);
            memset(Ke, 0, (size_t)n * n * sizeof *Ke);
            voigt_add(P, g, w, mu, lambda, Ke);
            defo_mat3 R = defo_m3_identity();
            if (x) {
                defo_mat3 F = point_F(m, x, e, q);
                R = svd_rotation(&F);
            }
            const defo_index *v = m->elems + (size_t)e * P;
            for (int i = 0; i < P; i++)
                for (int j = 0; j < P; j++)
                    for (int r = 0; r < 3; r++)
                        for (int c = 0; c < 3; c++) {
                            double s = 0; /* (R K_ij Rᵀ)_rc */
                            for (int a = 0; a < 3; a++)
                                for (int b = 0; b < 3; b++)
                                    s += R.m[r][a] * Ke[(3 * i + a) * n + 3 * j + b] * R.m[c][b];
                            D[(3 * (size_t)v[i] + r) * n3 + 3 * (size_t)v[j] + c] += k * s;
                        }
        }
    if (mass)
        for (size_t i = 0; i < n3; i++) D[i * n3 + i] += mscale * mass[i / 3];
    free(Ke);
}

/* ------------------------------------------------------------ kernel tests */
/* The assembled stiffness at rest (R = I) against the Voigt product, for
 * tet4 (MG04 §2.3) and tet10 (MTPS08 §4.2 rule); rigid modes in the null
 * space; exact symmetry. */
static void test_element_stiffness(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = bar_order(order == 1 ? 1 : 2, 1, 1, 1.0, 0.7, 0.4, order);
        defo_material_def mat = material(1e6, 0.3);
        model c;
        if (!model_make(&c, m, &mat, NULL)) return;
        double mu, lambda;
        defo_lame(1e6, 0.3, &mu, &lambda);
        const size_t n3 = 3 * (size_t)m->num_nodes;
        double *D = malloc(n3 * n3 * sizeof *D), *G = malloc(n3 * n3 * sizeof *G);
        dense_reference(m, NULL, mu, lambda, 1.0, NULL, 0, D);
        defo_bcsr_to_dense(defo_force_model_assemble(c.fm, 1.0, 0.0, NULL, 0.0), G);
        double worst = 0, sym = 0, scale = max_abs(D, n3 * n3);
        for (size_t i = 0; i < n3; i++)
            for (size_t j = 0; j < n3; j++) {
                worst = fmax(worst, fabs(G[i * n3 + j] - D[i * n3 + j]));
                sym = fmax(sym, fabs(G[i * n3 + j] - G[j * n3 + i]));
            }
        /* rigid modes: translations and infinitesimal rotations of the rest
         * shape, through the matrix-free product */
        double *u = malloc(n3 * sizeof *u), *y = malloc(n3 * sizeof *y), null_err = 0;
        for (int mode = 0; mode < 6; mode++) {
            for (defo_index i = 0; i < m->num_nodes; i++) {
                const double *X = m->x + 3 * (size_t)i;
                double *w = u + 3 * (size_t)i;
                w[0] = w[1] = w[2] = 0;
                if (mode < 3) {
                    w[mode] = 1;
                } else {
                    double a[3] = {0, 0, 0};
                    a[mode - 3] = 1;
                    w[0] = a[1] * X[2] - a[2] * X[1];
                    w[1] = a[2] * X[0] - a[0] * X[2];
                    w[2] = a[0] * X[1] - a[1] * X[0];
                }
            }
            defo_force_model_tangent_apply(c.fm, u, y);
            null_err = fmax(null_err, max_abs(y, n3));
        }
        TEST_REPORT("%s: K vs Voigt product Σ w Bᵀ E B: %.2e relative; rigid modes %.2e; "
                    "asymmetry %.2e",
                    order == 1 ? "tet4" : "tet10", worst / scale, null_err / scale, sym / scale);
        CHECK(worst <= 1e-13 * scale);
        CHECK(null_err <= 1e-12 * scale);
        CHECK(sym == 0);
        free(u);
        free(y);
        free(D);
        free(G);
        model_drop(&c);
        defo_mesh_destroy(m);
    }
}

/* Assembled k·K' + m·M at a randomly rotated and deformed state against the
 * dense reference with R = U Vᵀ of the SVD (per element for tet4, per
 * cubature point for tet10), and exactly symmetric; tet10's four-wide
 * assembly gives the same bits with AVX2 as without. */
static void test_assembly_matches_dense(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m =
            order == 1 ? bar(4, 3, 2, 1.0, 0.5, 0.4) : bar_order(2, 2, 1, 1.0, 0.5, 0.4, 2);
        defo_material_def mat = material(1e6, 0.3);
        model c;
        if (!model_make(&c, m, &mat, NULL)) return;
        double mu, lambda;
        defo_lame(1e6, 0.3, &mu, &lambda);
        const defo_index n = m->num_nodes;
        const size_t n3 = 3 * (size_t)n;
        double *x = malloc(n3 * sizeof *x), *mass = malloc((size_t)n * sizeof *mass);
        test_rng rng = {31};
        double ang = 0.9, ca = cos(ang), sa = sin(ang);
        for (defo_index i = 0; i < n; i++) {
            const double *X = m->x + 3 * (size_t)i;
            x[3 * i] = ca * X[0] - sa * X[1] + test_range(&rng, -0.03, 0.03);
            x[3 * i + 1] = sa * X[0] + ca * X[1] + test_range(&rng, -0.03, 0.03);
            x[3 * i + 2] = 1.2 * X[2] + test_range(&rng, -0.03, 0.03);
            mass[i] = test_range(&rng, 0.5, 1.5);
        }
        CHECK_OK(defo_force_model_evaluate(c.fm, x, 0, NULL, NULL));
        const defo_bcsr *A = defo_force_model_assemble(c.fm, 0.7, 0.0, mass, 3.0);
        double *D = malloc(n3 * n3 * sizeof *D), *G = malloc(n3 * n3 * sizeof *G);
        dense_reference(m, x, mu, lambda, 0.7, mass, 3.0, D);
        defo_bcsr_to_dense(A, G);
        double err = 0, scale = max_abs(D, n3 * n3);
        int symmetric = 1;
        for (size_t i = 0; i < n3; i++)
            for (size_t j = 0; j < n3; j++) {
                err = fmax(err, fabs(G[i * n3 + j] - D[i * n3 + j]));
                symmetric &= G[i * n3 + j] == G[j * n3 + i];
            }
        TEST_REPORT("%s: max |K'_assembled - K'_dense(U Vᵀ)| = %.1e of max |K'|",
                    order == 1 ? "tet4" : "tet10", err / scale);
        CHECK(err <= 1e-13 * scale);
        CHECK(symmetric);
        if (order == 2) {
            c.fm->corot_plain = 1;
            defo_bcsr_to_dense(defo_force_model_assemble(c.fm, 0.7, 0.0, mass, 3.0), D);
            c.fm->corot_plain = 0;
            CHECK(!memcmp(D, G, n3 * n3 * sizeof *D));
        }
        free(D);
        free(G);
        free(x);
        free(mass);
        model_drop(&c);
        defo_mesh_destroy(m);
    }
}

/* The rotations, seen through the forces of isolated elements: for a tet4
 * element f_a = −V R σ Dm⁻ᵀ e_a (a = 1..3), so R σ = −[f1 f2 f3] Dmᵀ / V, with
 * σ = λ tr ε I + 2με, ε = sym(Rᵀ F) − I.  Reference: the same with R = U Vᵀ of
 * the SVD.  Random deformations from mild to strongly anisotropic (stretch
 * ratios ~1e3), inverted ones included (there both are the ITF04 §5
 * rotation, proper).  The polar Newton iteration the kernel uses for
 * non-inverted elements is checked against the SVD factor to 1e-10 of the
 * stress scale. */
static void test_rotations_match_svd_polar(void) {
    const int ne = 1200;
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(1, &m));
    test_rng rng = {808};
    for (int e = 0; e < ne; e++) {
        double base[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
        defo_index v[4];
        for (int a = 0; a < 4; a++) {
            for (int k = 0; k < 3; k++)
                base[a][k] = 0.1 * (base[a][k] + test_range(&rng, -0.2, 0.2));
            CHECK_OK(defo_mesh_add_node(m, base[a][0] + e, base[a][1], base[a][2], &v[a]));
        }
        CHECK_OK(defo_mesh_add_elem(m, v, 0));
    }
    defo_material_def mat = material(1e6, 0.3);
    model c;
    if (!model_make(&c, m, &mat, NULL)) return;
    double mu, lambda;
    defo_lame(1e6, 0.3, &mu, &lambda);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x), *f = malloc(n3 * sizeof *f);
    double worst = 0;
    long checked = 0, inverted = 0;
    for (int trial = 0; trial < 3; trial++) {
        for (int e = 0; e < ne; e++) {
            double A[9];
            const double amp = (e % 3 == 0) ? 30 : 1;
            for (int k = 0; k < 9; k++) A[k] = test_range(&rng, -1, 1) * amp;
            const double noise = trial == 0 ? 0.001 : 0.02;
            for (int a = 0; a < 4; a++) {
                const size_t i = 3 * (size_t)(4 * e + a);
                for (int r = 0; r < 3; r++)
                    x[i + r] = A[3 * r] * (m->x[i] - e) + A[3 * r + 1] * m->x[i + 1] +
                               A[3 * r + 2] * m->x[i + 2] + test_range(&rng, -noise, noise);
            }
        }
        CHECK_OK(defo_force_model_evaluate(c.fm, x, 0, f, NULL));
        for (int e = 0; e < ne; e++) {
            defo_mat3 Dm, F = point_F(m, x, e, 0);
            const double *X0 = m->x + 12 * (size_t)e;
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) Dm.m[r][k] = X0[3 * (k + 1) + r] - X0[r];
            const double V = defo_m3_det(Dm) / 6;
            /* model: R σ = −G Dmᵀ / V */
            defo_mat3 Gm, Rs_model;
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) Gm.m[r][k] = f[3 * (size_t)(4 * e + k + 1) + r];
            Rs_model = defo_m3_scale(defo_m3_mul(Gm, defo_m3_transpose(Dm)), -1.0 / V);
            /* reference */
            defo_mat3 R = svd_rotation(&F), E = defo_m3_mul(defo_m3_transpose(R), F), sig;
            double tr = E.m[0][0] + E.m[1][1] + E.m[2][2] - 3;
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++)
                    sig.m[r][k] = mu * (E.m[r][k] + E.m[k][r] - 2.0 * (r == k)) +
                                  (r == k ? lambda * tr : 0.0);
            defo_mat3 ref = defo_m3_mul(R, sig);
            const double scale = (2 * mu + 3 * lambda) * (1 + defo_m3_maxabs(F));
            double d = 0;
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) d = fmax(d, fabs(Rs_model.m[r][k] - ref.m[r][k]));
            worst = fmax(worst, d / scale);
            if (defo_m3_det(F) <= 0)
                inverted++;
            else
                checked++;
        }
    }
    TEST_REPORT("%ld elements (%ld inverted): max |R σ(R) − U Vᵀ σ(U Vᵀ)| = %.1e of (2μ+3λ)(1+|F|)",
                checked + inverted, inverted, worst);
    CHECK(checked > 1000);
    CHECK(inverted > 0);
    CHECK(worst < 1e-10);
    free(x);
    free(f);
    model_drop(&c);
    defo_mesh_destroy(m);
}

static void test_no_ghost_forces(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = bar_order(4, 2, 2, 1.0, 0.5, 0.5, order);
        defo_material_def mat = material(1e6, 0.4);
        model c;
        if (!model_make(&c, m, &mat, NULL)) return;
        TEST_REPORT("tet%d:", order == 1 ? 4 : 10);
        size_t n3 = 3 * (size_t)m->num_nodes;
        const size_t ns = 6 * (size_t)defo_force_model_points(c.fm) * (size_t)m->num_elems;
        double *x = malloc(n3 * sizeof *x), *f = malloc(n3 * sizeof *f);
        double *eps = malloc(ns * sizeof *eps);
        test_rng rng = {4242};
        /* (a) random large deformation: forces sum to zero */
        for (size_t k = 0; k < n3; k++) x[k] = m->x[k] + test_range(&rng, -0.1, 0.1);
        CHECK_OK(defo_force_model_evaluate(c.fm, x, 0, f, NULL));
        double sum[3] = {0, 0, 0};
        for (defo_index i = 0; i < m->num_nodes; i++)
            for (int k = 0; k < 3; k++) sum[k] += f[3 * i + k];
        double fmaxv = max_abs(f, n3);
        double net = fmax(fabs(sum[0]), fmax(fabs(sum[1]), fabs(sum[2])));
        TEST_REPORT("random deformation: |Σ f| / max|f| = %.2e", net / fmaxv);
        CHECK(net <= 1e-12 * fmaxv * m->num_nodes);
        /* (b) rigid rotation by 2 rad about a skew axis + translation: zero force */
        defo_mat3 Q = defo_m3_rotation(defo_v3_normalize(defo_v3(1, 2, 3)), 2.0);
        for (defo_index i = 0; i < m->num_nodes; i++) {
            defo_vec3 p = defo_m3_mulv(Q, defo_v3_load(m->x + 3 * i));
            defo_v3_store(x + 3 * i, defo_v3_add(p, defo_v3(10, -20, 5)));
        }
        double energy = 0;
        CHECK_OK(defo_force_model_evaluate(c.fm, x, 0, f, &energy));
        /* scale: the stiffness scale of an element, E·h² (the force of a unit
     * strain on a face of size h) */
        double h = 0.25, fscale = 1e6 * h * h;
        TEST_REPORT("rigid motion: max|f| = %.2e N (scale %.0f N), energy %.2e J", max_abs(f, n3),
                    fscale, energy);
        CHECK(max_abs(f, n3) <= 1e-12 * fscale);
        /* the rotations are the rigid rotation: the stress R σ Rᵀ with
         * σ from sym(Rᵀ Q) − I vanishes only for R = Q */
        double serr = 0;
        for (defo_index e = 0; e < m->num_elems; e++)
            for (int q = 0; q < defo_force_model_points(c.fm); q++) {
                double sg[9];
                defo_force_model_stress(c.fm, e, q, sg);
                for (int k = 0; k < 9; k++) eps[k] = sg[k] / 1e6; /* strain-sized: over E */
                serr = fmax(serr, max_abs(eps, 9));
            }
        TEST_REPORT("rigid motion: max |stress| / E = %.1e", serr);
        CHECK(serr < 1e-12);
        free(x);
        free(f);
        free(eps);
        model_drop(&c);
        defo_mesh_destroy(m);
    }
}

static void test_small_deformation_is_linear(void) {
    defo_mesh *m = bar(3, 2, 2, 1.0, 0.6, 0.6);
    defo_material_def mat = material(1e6, 0.35);
    model c;
    if (!model_make(&c, m, &mat, NULL)) return;
    size_t n3 = 3 * (size_t)m->num_nodes;
    /* linear K: assembled with R = I (a new model is at rest) */
    const defo_bcsr *K = defo_force_model_assemble(c.fm, 1.0, 0.0, NULL, 0.0);
    double *d = malloc(n3 * sizeof *d), *x = malloc(n3 * sizeof *x), *f = malloc(n3 * sizeof *f),
           *kd = malloc(n3 * sizeof *kd);
    test_rng rng = {31};
    for (size_t k = 0; k < n3; k++) d[k] = test_range(&rng, -1, 1);
    defo_bcsr_multiply(K, d, kd);
    double err[2];
    double eps0 = 1e-3;
    for (int t = 0; t < 2; t++) {
        double eps = eps0 / (1 << t);
        for (size_t k = 0; k < n3; k++) x[k] = m->x[k] + eps * d[k];
        CHECK_OK(defo_force_model_evaluate(c.fm, x, 0, f, NULL));
        double e = 0, s = 0;
        for (size_t k = 0; k < n3; k++) {
            e = fmax(e, fabs(f[k] + eps * kd[k]));
            s = fmax(s, fabs(eps * kd[k]));
        }
        err[t] = e / s;
    }
    TEST_REPORT("|f − (−K u)| / |K u|: %.3e at ε=%.0e, %.3e at ε/2 (ratio %.2f, 2 = O(ε²) "
                "absolute)",
                err[0], eps0, err[1], err[0] / err[1]);
    /* relative error O(ε) ⇔ absolute O(ε²) */
    CHECK(err[0] < 20 * eps0);
    CHECK(err[0] / err[1] > 1.8 && err[0] / err[1] < 2.2);
    free(d);
    free(x);
    free(f);
    free(kd);
    model_drop(&c);
    defo_mesh_destroy(m);
}

/* MTPS08 §4.4 rules, seen in the forces: a mesh evaluated at rest, then
 * rigidly rotated, keeps R = I (forces of linear FEM, not zero) until its
 * rotations are recomputed (zero force). */
static void test_lazy_rotation_rules(void) {
    defo_mesh *m = bar(2, 2, 2, 1.0, 1.0, 1.0);
    defo_material_def mat = material(1e6, 0.3);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x), *f = malloc(n3 * sizeof *f);
    const double fscale = 1e6 * 0.25; /* E h² */
    /* rotate about z by angle a: max row sum of |R − I| = |1 − cos a| + |sin a| */
    for (int rule = 0; rule < 2; rule++) {
        defo_force_model_def fd = corot_def();
        if (rule == 0) {
            fd.rotation_interval = 4;
        } else {
            fd.rotation_interval = 0;
            fd.lazy_tolerance = 0.1;
        }
        model c;
        if (!model_make(&c, m, &mat, &fd)) return;
        CHECK_OK(defo_force_model_evaluate(c.fm, m->x, 0, f, NULL)); /* computes every R (= I) */
        int stale[4];
        const double angles[2] = {0.05, 0.2}; /* row-sum distances 0.051, 0.219 */
        for (int u = 0; u < 4; u++) {
            const double a = rule == 0 ? 0.3 : angles[u < 2 ? 0 : 1];
            for (defo_index i = 0; i < m->num_nodes; i++) {
                const double *X = m->x + 3 * (size_t)i;
                x[3 * i] = cos(a) * X[0] - sin(a) * X[1];
                x[3 * i + 1] = sin(a) * X[0] + cos(a) * X[1];
                x[3 * i + 2] = X[2];
            }
            CHECK_OK(defo_force_model_evaluate(c.fm, x, 0, f, NULL));
            stale[u] = max_abs(f, n3) > 1e-6 * fscale;
            /* an evaluation with the rotations kept never recomputes them */
            CHECK_OK(defo_force_model_evaluate(c.fm, x, DEFO_EVAL_KEEP_ROTATIONS, f, NULL));
        }
        if (rule == 0) {
            TEST_REPORT("rotation_interval 4: updates 1-4 after a rotation stale = %d %d %d %d",
                        stale[0], stale[1], stale[2], stale[3]);
            CHECK(stale[0] && stale[1] && stale[2] && !stale[3]);
        } else {
            TEST_REPORT("lazy_tolerance 0.1: rotation by 0.05 rad stale = %d %d, by 0.2 rad %d %d",
                        stale[0], stale[1], stale[2], stale[3]);
            CHECK(stale[0] && stale[1] && !stale[2] && !stale[3]);
        }
        model_drop(&c);
    }
    free(x);
    free(f);
    defo_mesh_destroy(m);
}

/* DEFO_EVAL_ROTATIONS_ONLY renews exactly the rotations a full evaluation
 * renews: forces at y with the rotations of x agree bit for bit either way
 * (the implicit step's predicted-end rotations), the rotation serial moves
 * alike, and the flag is refused with outputs or on an invertible model. */
static void test_rotations_only(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = bar_order(3, 2, 2, 1.5, 1.0, 1.0, order);
        defo_material_def mat = material(1e6, 0.3);
        const size_t n3 = 3 * (size_t)m->num_nodes;
        double *x = malloc(n3 * sizeof *x), *y = malloc(n3 * sizeof *y);
        double *fa = malloc(n3 * sizeof *fa), *fb = malloc(n3 * sizeof *fb);
        srand(7);
        for (size_t k = 0; k < n3; k++) {
            const double r = (double)rand() / RAND_MAX - 0.5;
            x[k] = m->x[k] + 0.08 * r + (k % 3 == 0 ? 0.3 * m->x[k + 1] : 0.0);
            y[k] = x[k] + 0.01 * ((double)rand() / RAND_MAX - 0.5);
        }
        defo_force_model_def fd = corot_def();
        model a, b;
        if (!model_make(&a, m, &mat, &fd) || !model_make(&b, m, &mat, &fd)) return;
        CHECK_OK(defo_force_model_evaluate(a.fm, x, 0, fa, NULL));
        CHECK_OK(defo_force_model_evaluate(b.fm, x, DEFO_EVAL_ROTATIONS_ONLY, NULL, NULL));
        const uint64_t sa = defo_force_model_rotation_serial(a.fm);
        const uint64_t sb = defo_force_model_rotation_serial(b.fm);
        double ea = 0, eb = 0;
        CHECK_OK(defo_force_model_evaluate(a.fm, y, DEFO_EVAL_KEEP_ROTATIONS, fa, &ea));
        CHECK_OK(defo_force_model_evaluate(b.fm, y, DEFO_EVAL_KEEP_ROTATIONS, fb, &eb));
        const int same = memcmp(fa, fb, n3 * sizeof *fa) == 0 && ea == eb;
        TEST_REPORT("tet%d: forces at y with x's rotations, full vs rotations-only evaluation: "
                    "%s; rotation serial %llu vs %llu",
                    order == 1 ? 4 : 10, same ? "bitwise equal" : "DIFFER", (unsigned long long)sa,
                    (unsigned long long)sb);
        CHECK(same);
        CHECK(sa == sb);
        CHECK(max_abs(fa, n3) > 0);
        CHECK(defo_force_model_evaluate(b.fm, x, DEFO_EVAL_ROTATIONS_ONLY, fb, NULL) ==
              DEFO_ERR_INVALID_ARGUMENT);
        model inv;
        defo_force_model_def fi = defo_default_force_model_def();
        fi.formulation = DEFO_FORMULATION_INVERTIBLE;
        if (model_make(&inv, m, &mat, &fi)) {
            CHECK(defo_force_model_evaluate(inv.fm, x, DEFO_EVAL_ROTATIONS_ONLY, NULL, NULL) ==
                  DEFO_ERR_INVALID_ARGUMENT);
            model_drop(&inv);
        }
        model_drop(&a);
        model_drop(&b);
        free(x);
        free(y);
        free(fa);
        free(fb);
        defo_mesh_destroy(m);
    }
}

typedef struct det_ctx {
    const defo_mesh *m;
    const double *x;
    size_t n3;
    int64_t nb;
} det_ctx;

static void det_compute(void *vctx, void *out) {
    det_ctx *d = vctx;
    defo_material_def mat = material(1e6, 0.45);
    model c;
    if (!model_make(&c, d->m, &mat, NULL)) return;
    double *o = out;
    CHECK_OK(defo_force_model_evaluate(c.fm, d->x, 0, o, o + d->n3));
    const defo_bcsr *A = defo_force_model_assemble(c.fm, 0.7, 0.0, NULL, 0.0);
    CHECK(A != NULL);
    if (!A) {
        model_drop(&c);
        return;
    }
    memcpy(o + d->n3 + 1, defo_bcsr_values_const(A), (size_t)d->nb * 9 * sizeof(double));
    model_drop(&c);
}

static void test_determinism(void) {
    defo_mesh *m = bar(16, 6, 6, 1.0, 0.3, 0.3);
    size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x);
    test_rng rng = {5};
    for (size_t k = 0; k < n3; k++) x[k] = m->x[k] * 1.1 + test_range(&rng, -0.01, 0.01);
    defo_bcsr *A = NULL;
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, m->num_nodes, &A));
    det_ctx d = {m, x, n3, defo_bcsr_get_pattern(A)->num_blocks};
    defo_bcsr_destroy(A);
    CHECK(test_bitwise_same_for_threads(det_compute, &d,
                                        (n3 + 1 + 9 * (size_t)d.nb) * sizeof(double), 2));
    free(x);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------ implicit Euler (world) */
/* Spin a bar about z (its centre at the origin) with angular velocity ω, no
 * gravity, no damping, until it has turned 180°; return the volume ratio. */
static double spin_volume_ratio(int linear, double *angle_out) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 8;
    bd.cells[1] = 2;
    bd.cells[2] = 2;
    bd.size[0] = 1.0;
    bd.size[1] = 0.25;
    bd.size[2] = 0.25;
    bd.origin[0] = -0.5;
    bd.origin[1] = -0.125;
    bd.origin[2] = -0.125;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_material_def mat = material(1e6, 0.3);
    defo_force_model_def fd = corot_def();
    fd.linear = linear;
    defo_integrator_def id = be_def(0.005, 1e-9);
    sim s;
    if (!sim_make(&s, m, &mat, &fd, &id, 0)) return 0;
    const double omega = 2 * PI;
    const double *x = defo_body_positions(s.w, s.id);
    double *v = malloc(3 * (size_t)m->num_nodes * sizeof *v);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        v[3 * i] = -omega * x[3 * i + 1];
        v[3 * i + 1] = omega * x[3 * i];
        v[3 * i + 2] = 0;
    }
    CHECK_OK(defo_body_set_state(s.w, s.id, NULL, v));
    free(v);
    double v0 = 0, v1 = 0, angle = 0, prev = 0;
    CHECK_OK(defo_element_volume(m, NULL, &v0));
    /* the angle of the bar's axis: the two end-face centres */
    for (int step = 0; step < 400 && angle < PI; step++) {
        if (defo_world_step(s.w, 0.005) < 0) break;
        x = defo_body_positions(s.w, s.id);
        double ax = 0, ay = 0;
        for (defo_index i = 0; i < m->num_nodes; i++) {
            double sgn = m->x[3 * i] > 0.49 ? 1 : m->x[3 * i] < -0.49 ? -1 : 0;
            ax += sgn * x[3 * i];
            ay += sgn * x[3 * i + 1];
        }
        double a = atan2(ay, ax);
        double da = a - prev;
        if (da < -PI) da += 2 * PI;
        if (da > PI) da -= 2 * PI;
        angle += da;
        prev = a;
    }
    CHECK_OK(defo_element_volume(m, defo_body_positions(s.w, s.id), &v1));
    *angle_out = angle;
    defo_world_destroy(s.w);
    defo_mesh_destroy(m);
    return v1 / v0;
}

static void test_rotation_without_inflation(void) {
    double a_cor = 0, a_lin = 0;
    double r_cor = spin_volume_ratio(0, &a_cor);
    double r_lin = spin_volume_ratio(1, &a_lin);
    TEST_REPORT("spun through %.0f°: corotated volume ratio %.4f; linear FEM (R = I) %.4f "
                "(after %.0f°)",
                a_cor * 180 / PI, r_cor, r_lin, a_lin * 180 / PI);
    CHECK(a_cor >= PI);
    CHECK(fabs(r_cor - 1) < 0.01);
    CHECK(fabs(r_lin - 1) > 0.05);
}

static void test_cantilever_static(void) {
    /* Stiff enough that the deflection is small (linear regime): tip
     * deflection ~ qL⁴/(8EI) ≈ 2 mm for 1 m × 0.25² m, E = 1e8. */
    defo_mesh *m = bar(8, 2, 2, 1.0, 0.25, 0.25);
    defo_material_def mat = material(1e8, 0.3);
    defo_integrator_def id = be_def(0.02, 1e-10);
    id.rayleigh_mass = 5;
    id.rayleigh_stiffness = 1e-3;
    sim s;
    if (!sim_make(&s, m, &mat, NULL, &id, -9.81)) return;
    sim_clamp(&s, 0);
    /* 300 steps of 0.02 s in frames of 10 steps */
    for (int f = 0; f < 30; f++) CHECK_OK(defo_world_step(s.w, 0.2));
    const double *x = defo_body_positions(s.w, s.id);
    const defo_index n = m->num_nodes;
    const size_t n3 = 3 * (size_t)n;
    /* reference: K u = M g with the linear K of the same mesh (tet4: the
     * consistent gravity load is the lumped m·g per node) */
    model lin;
    if (!model_make(&lin, m, &mat, NULL)) return;
    const defo_bcsr *K = defo_force_model_assemble(lin.fm, 1.0, 0.0, NULL, 0.0);
    double *b = calloc(n3, sizeof *b), *u = calloc(n3, sizeof *u),
           *work = malloc(4 * n3 * sizeof *work);
    unsigned char *con = calloc((size_t)n, 1);
    const double *mass = defo_body_masses(s.w, s.id);
    for (defo_index i = 0; i < n; i++) {
        b[3 * i + 2] = -9.81 * mass[i];
        if (m->x[3 * i] < 1e-9) con[i] = DEFO_CONSTRAINT_FIXED;
    }
    defo_precond_def pd = defo_default_precond_def();
    pd.kind = DEFO_PRECOND_BLOCK_IC0;
    defo_precond *P = NULL;
    CHECK_OK(defo_precond_create(&pd, &P));
    CHECK_OK(defo_precond_setup(P, K, con, NULL));
    defo_cg_def cg = defo_default_cg_def();
    cg.tolerance = 1e-12;
    cg.max_iterations = 5000;
    CHECK_OK(defo_pcg_solve(&cg, K, P, con, NULL, b, u, work, NULL));
    double tip_sim = tip_z(m, x, 1.0), tip_ref = 0;
    int cnt = 0;
    for (defo_index i = 0; i < n; i++)
        if (m->x[3 * i] > 1 - 1e-9) {
            tip_ref += u[3 * i + 2];
            cnt++;
        }
    tip_ref /= cnt;
    double speed = max_abs(defo_body_velocities(s.w, s.id), n3);
    TEST_REPORT("tip deflection: settled %.6f m, linear static %.6f m (diff %.3f %%), residual "
                "speed %.1e m/s",
                tip_sim, tip_ref, 100 * fabs(tip_sim / tip_ref - 1), speed);
    CHECK(fabs(tip_sim / tip_ref - 1) < 0.01);
    defo_precond_destroy(P);
    free(b);
    free(u);
    free(work);
    free(con);
    model_drop(&lin);
    defo_world_destroy(s.w);
    defo_mesh_destroy(m);
}

static void test_inversion_recovery(void) {
    defo_mesh *m = bar(2, 2, 2, 1.0, 1.0, 1.0);
    defo_material_def mat = material(1e5, 0.3);
    defo_integrator_def id = be_def(0.01, 1e-8);
    id.rayleigh_mass = 2;
    sim s;
    if (!sim_make(&s, m, &mat, NULL, &id, 0)) return;
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x);
    memcpy(x, m->x, n3 * sizeof *x);
    /* push the corner node (1,1,1) through the body to (0.3, 0.3, 0.3): its
     * elements are inverted */
    defo_index corner = -1;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] > 0.99 && m->x[3 * i + 1] > 0.99 && m->x[3 * i + 2] > 0.99) corner = i;
    CHECK(corner >= 0);
    x[3 * corner] = x[3 * corner + 1] = x[3 * corner + 2] = 0.3;
    CHECK_OK(defo_body_set_state(s.w, s.id, x, NULL));
    defo_index inv0 = 0, inv_model = -1;
    CHECK_OK(defo_mesh_count_inverted(m, x, &inv0, NULL));
    CHECK_OK(defo_body_count_inverted(s.w, s.id, &inv_model));
    CHECK(inv_model == inv0);
    int steps = 0;
    defo_index inv = inv0;
    for (; steps < 300 && inv > 0; steps++) {
        CHECK_OK(defo_world_step(s.w, 0.01));
        CHECK_OK(defo_mesh_count_inverted(m, defo_body_positions(s.w, s.id), &inv, NULL));
    }
    CHECK_OK(defo_world_step(s.w, 2.0)); /* 200 more steps */
    const double *xe = defo_body_positions(s.w, s.id);
    double vol0 = 0, vol = 0;
    CHECK_OK(defo_element_volume(m, NULL, &vol0));
    CHECK_OK(defo_element_volume(m, xe, &vol));
    CHECK_OK(defo_mesh_count_inverted(m, xe, &inv, NULL));
    TEST_REPORT("%ld inverted elements (force model: %ld); none inverted after %d steps; "
                "volume %.4f of rest after 200 more",
                (long)inv0, (long)inv_model, steps, vol / vol0);
    CHECK(inv0 > 0);
    CHECK(inv == 0);
    CHECK(fabs(vol / vol0 - 1) < 0.01);
    free(x);
    defo_world_destroy(s.w);
    defo_mesh_destroy(m);
}

/* A free body (no prescribed node, no gravity): implicit Euler conserves its
 * linear momentum exactly (1ᵀK' = 0, forces sum to zero; the step is
 * solved by the direct solver, or PCG to 1e-13 without CHOLMOD); Rayleigh
 * mass damping α scales it by exactly 1/(1 + Δt α) per step. */
static void test_momentum(void) {
    defo_mesh *m = bar(6, 2, 2, 0.6, 0.2, 0.2);
    defo_material_def mat = material(1e5, 0.3);
    mat.damping_time = 0.01; /* τK' damping, sums to zero too */
    const double dt = 0.01;
    const size_t n3 = 3 * (size_t)m->num_nodes;
    for (int damped = 0; damped < 2; damped++) {
        defo_integrator_def id = be_def(dt, 1e-13);
        id.rayleigh_stiffness = 1e-3;
        id.rayleigh_mass = damped ? 0.5 : 0;
        if (defo_cholesky_available()) id.linear.method = DEFO_LINEAR_CHOLESKY;
        sim s;
        if (!sim_make(&s, m, &mat, NULL, &id, 0)) return;
        test_rng rng = {77};
        double *v = malloc(n3 * sizeof *v);
        for (size_t k = 0; k < n3; k++) v[k] = test_range(&rng, -0.5, 0.5) + (k % 3 == 0);
        CHECK_OK(defo_body_set_state(s.w, s.id, NULL, v));
        free(v);
        const double *mass = defo_body_masses(s.w, s.id);
        double P0[3] = {0, 0, 0}, mt = 0;
        const double *vv = defo_body_velocities(s.w, s.id);
        for (defo_index i = 0; i < m->num_nodes; i++) {
            mt += mass[i];
            for (int k = 0; k < 3; k++) P0[k] += mass[i] * vv[3 * i + k];
        }
        const double pscale = mt * 0.5;
        double worst = 0;
        const int steps = 40;
        for (int st = 1; st <= steps; st++) {
            CHECK_OK(defo_world_step(s.w, dt));
            vv = defo_body_velocities(s.w, s.id);
            double P[3] = {0, 0, 0};
            for (defo_index i = 0; i < m->num_nodes; i++)
                for (int k = 0; k < 3; k++) P[k] += mass[i] * vv[3 * i + k];
            const double decay = pow(1 + dt * id.rayleigh_mass, -st);
            for (int k = 0; k < 3; k++) worst = fmax(worst, fabs(P[k] - decay * P0[k]) / pscale);
        }
        TEST_REPORT("%s: α = %.1f /s, %d steps: max |P − P0 (1+Δtα)^-n| = %.1e of m|v|",
                    defo_cholesky_available() ? "direct solve" : "PCG 1e-13", id.rayleigh_mass,
                    steps, worst);
        CHECK(worst < 1e-10);
        defo_world_destroy(s.w);
    }
    defo_mesh_destroy(m);
}

/* The discrete energy balance of implicit Euler, exact for linear FEM
 * (R = I): with E = ½vᵀMv + ½uᵀKu and C = αM + (β + τ)K,
 *   E⁺ − E = −½|v⁺ − v|²_M − ½|x⁺ − x|²_K − Δt v⁺ᵀ C v⁺
 * (dot M(v⁺−v) = −Δt(K u⁺ + C v⁺) with v⁺ = (x⁺−x)/Δt).  Checked per step on a
 * clamped cantilever swinging from an initial velocity, undamped (only the
 * scheme's numerical dissipation) and damped (material τ and Rayleigh). */
static void test_energy_balance(void) {
    defo_mesh *m = bar(8, 2, 2, 1.0, 0.2, 0.2);
    defo_material_def mat = material(1e5, 0.3);
    const double dt = 0.01;
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *xo = malloc(n3 * sizeof *xo), *vo = malloc(n3 * sizeof *vo);
    double *d = malloc(n3 * sizeof *d), *kd = malloc(n3 * sizeof *kd);
    double ratio[2];
    for (int damped = 0; damped < 2; damped++) {
        defo_material_def md = mat;
        md.damping_time = damped ? 0.005 : 0;
        defo_force_model_def fd = corot_def();
        fd.linear = 1;
        defo_integrator_def id = be_def(dt, 1e-12);
        id.rayleigh_mass = damped ? 0.5 : 0;
        id.rayleigh_stiffness = damped ? 1e-3 : 0;
        sim s;
        if (!sim_make(&s, m, &md, &fd, &id, 0)) return;
        sim_clamp(&s, 0);
        model lin;
        if (!model_make(&lin, m, &mat, &fd)) return;
        for (defo_index i = 0; i < m->num_nodes; i++) {
            const double X = m->x[3 * i];
            vo[3 * i] = vo[3 * i + 1] = 0;
            vo[3 * i + 2] = X * X; /* a bending velocity, 1 m/s at the tip */
        }
        CHECK_OK(defo_body_set_state(s.w, s.id, NULL, vo));
        const double *mass = defo_body_masses(s.w, s.id);
        double kin, el, E0 = 0, worst = 0, Eprev = 0;
        CHECK_OK(defo_body_energy(s.w, s.id, &kin, &el, NULL));
        E0 = Eprev = kin + el;
        const double beta_c = id.rayleigh_stiffness + md.damping_time;
        for (int st = 0; st < 60; st++) {
            memcpy(xo, defo_body_positions(s.w, s.id), n3 * sizeof *xo);
            memcpy(vo, defo_body_velocities(s.w, s.id), n3 * sizeof *vo);
            CHECK_OK(defo_world_step(s.w, dt));
            const double *x = defo_body_positions(s.w, s.id), *v = defo_body_velocities(s.w, s.id);
            CHECK_OK(defo_body_energy(s.w, s.id, &kin, &el, NULL));
            const double E = kin + el;
            /* ½|Δv|²_M, ½|Δx|²_K, Δt v⁺ᵀ C v⁺ */
            double dv2 = 0, dx2 = 0, cv = 0;
            for (size_t k = 0; k < n3; k++) {
                d[k] = x[k] - xo[k];
                dv2 += mass[k / 3] * (v[k] - vo[k]) * (v[k] - vo[k]);
            }
            defo_force_model_tangent_apply(lin.fm, d, kd);
            for (size_t k = 0; k < n3; k++) dx2 += d[k] * kd[k];
            defo_force_model_tangent_apply(lin.fm, v, kd);
            for (size_t k = 0; k < n3; k++)
                cv += id.rayleigh_mass * mass[k / 3] * v[k] * v[k] + beta_c * v[k] * kd[k];
            const double balance = E - Eprev + 0.5 * dv2 + 0.5 * dx2 + dt * cv;
            worst = fmax(worst, fabs(balance) / E0);
            CHECK(E <= Eprev);
            Eprev = E;
        }
        ratio[damped] = Eprev / E0;
        TEST_REPORT("%s: E after 60 steps %.4f of E0 = %.4e J; energy balance residual max %.1e "
                    "of E0",
                    damped ? "damped (τ 5 ms, α 0.5, β 1 ms)" : "undamped", ratio[damped], E0,
                    worst);
        CHECK(worst < 1e-8);
        model_drop(&lin);
        defo_world_destroy(s.w);
    }
    CHECK(ratio[1] < ratio[0]);
    free(xo);
    free(vo);
    free(d);
    free(kd);
    defo_mesh_destroy(m);
}

/* A free bar spun about its long axis' normal at omega with no gravity,
 * stepped by integrator `type` for `seconds`: E_max and E_end over E0 (the
 * energy after the first step, kinetic + elastic). */
static void spin_energy(defo_formulation form, defo_integrator_kind type, double dt, double omega,
                        double seconds, double *e_max, double *e_end) {
    defo_mesh *m = bar(10, 2, 2, 1.0, 0.2, 0.2);
    defo_material_def mat = material(5e4, 0.3);
    mat.model = DEFO_MODEL_COROTATED;
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = form;
    defo_integrator_def id = defo_default_integrator_def(type);
    id.time_step = dt;
    id.linear.tolerance = 1e-10;
    *e_max = *e_end = NAN;
    sim s;
    if (!sim_make(&s, m, &mat, &fd, &id, 0)) return;
    const size_t n = (size_t)m->num_nodes;
    double c[2] = {0, 0};
    for (size_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) c[k] += m->x[3 * i + (size_t)k] / (double)n;
    double *v = calloc(3 * n, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        v[3 * i] = -omega * (m->x[3 * i + 1] - c[1]);
        v[3 * i + 1] = omega * (m->x[3 * i] - c[0]);
    }
    CHECK_OK(defo_body_set_state(s.w, s.id, NULL, v));
    free(v);
    double E0 = 0, Emax = 0, E = 0;
    const int steps = (int)lround(seconds / dt);
    for (int st = 0; st < steps; st++) {
        if (defo_world_step(s.w, dt) < 0) break;
        double kin = 0, el = 0;
        CHECK_OK(defo_body_energy(s.w, s.id, &kin, &el, NULL));
        E = kin + el;
        if (st == 0) E0 = E;
        Emax = fmax(Emax, E);
    }
    *e_max = Emax / E0;
    *e_end = E / E0;
    defo_world_destroy(s.w);
    defo_mesh_destroy(m);
}

/* Rotations taken once per step (the linear corotated step) must not feed
 * energy into a turning body.  Taken at the step's start (MG04 §6 as
 * written), the step's own turn reads as stretch: this bar under BDF2 gained
 * 1.9x its energy in 3 s at dt 0.01 and 1.1e7x at dt 0.04, and under
 * backward Euler kept 0.98 of it where the Newton solve keeps 0.65.
 * Checked against a conserved quantity (no energy gain: BDF2 on a linear
 * step only dissipates) and against an independent solve of the same
 * physics: the invertible formulation with the corotated material, Newton
 * solved to convergence each step, whose energy decay the linear step must
 * follow. */
static void test_spin_energy_bdf2(void) {
    const double omega = 3.0;
    double inv_max, inv_end;
    spin_energy(DEFO_FORMULATION_INVERTIBLE, DEFO_INTEGRATOR_BDF2, 0.01, omega, 3.0, &inv_max,
                &inv_end);
    const double dts[2] = {0.01, 0.04};
    for (int i = 0; i < 2; i++) {
        double e_max, e_end;
        spin_energy(DEFO_FORMULATION_COROTATED, DEFO_INTEGRATOR_BDF2, dts[i], omega, 3.0, &e_max,
                    &e_end);
        TEST_REPORT("corotated BDF2, dt %.2f, 3 s at %.0f rad/s: E max %.4f, end %.4f of E0",
                    dts[i], omega, e_max, e_end);
        CHECK(e_max <= 1.01);
        CHECK(e_end > 0.9);
        if (i == 0) {
            TEST_REPORT("invertible (Newton) BDF2, dt 0.01: E max %.4f, end %.4f of E0", inv_max,
                        inv_end);
            CHECK(fabs(e_end - inv_end) < 0.01 * inv_end);
        }
    }
    /* backward Euler: the same agreement (its damping is the integrator's) */
    double be_cor_max, be_cor_end, be_inv_max, be_inv_end;
    spin_energy(DEFO_FORMULATION_COROTATED, DEFO_INTEGRATOR_BACKWARD_EULER, 0.01, omega, 3.0,
                &be_cor_max, &be_cor_end);
    spin_energy(DEFO_FORMULATION_INVERTIBLE, DEFO_INTEGRATOR_BACKWARD_EULER, 0.01, omega, 3.0,
                &be_inv_max, &be_inv_end);
    TEST_REPORT("backward Euler, dt 0.01: E end %.4f corotated, %.4f invertible (Newton)",
                be_cor_end, be_inv_end);
    CHECK(be_cor_max <= 1.01);
    CHECK(fabs(be_cor_end - be_inv_end) < 0.01 * be_inv_end);
}

/* Kinematic handles (defo_body_prescribe with a motion): a free bar whose
 * x = 0 end is dragged along +y at 0.5 m/s.  The handle nodes land exactly
 * on X + V t at every frame end, and with damping the whole bar ends up
 * moving rigidly with the handle (the steady state of a damped body dragged
 * at constant velocity with no other load).  A second handle that spins the
 * far end about the bar's axis lands on R(t)(X − pivot) + pivot, checked
 * against defo_motion_eval. */
static void test_kinematic_handles(void) {
    defo_mesh *m = bar(8, 2, 2, 1.0, 0.2, 0.2);
    /* stiff enough that the first bending mode (~3 Hz) is damped within the
     * run by τ + β (damping ratio ~0.2); no mass damping, which would drag */
    defo_material_def mat = material(1e7, 0.3);
    mat.damping_time = 0.01;
    defo_integrator_def id = be_def(0.01, 1e-10);
    id.rayleigh_stiffness = 1e-2;
    sim s;
    if (!sim_make(&s, m, &mat, NULL, &id, 0)) return;
    const double V = 0.5;
    defo_motion_def drag = defo_default_motion_def();
    drag.velocity[1] = V;
    const double lo[3] = {-INFINITY, -INFINITY, -INFINITY}, hi[3] = {0, INFINITY, INFINITY};
    defo_region r = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(s.w, s.id, &r, &drag, NULL));
    double place = 0, rigid = 0;
    for (int f = 1; f <= 200; f++) {
        CHECK_OK(defo_world_step(s.w, 0.02));
        const double t = defo_world_time(s.w);
        const double *x = defo_body_positions(s.w, s.id);
        for (defo_index i = 0; i < m->num_nodes; i++)
            if (m->x[3 * i] < 1e-9) {
                double p[3];
                defo_motion_eval(&drag, t, m->x + 3 * i, p, NULL);
                for (int k = 0; k < 3; k++) place = fmax(place, fabs(x[3 * i + k] - p[k]));
            }
    }
    const double *v = defo_body_velocities(s.w, s.id);
    for (defo_index i = 0; i < m->num_nodes; i++)
        for (int k = 0; k < 3; k++) rigid = fmax(rigid, fabs(v[3 * i + k] - (k == 1 ? V : 0)));
    TEST_REPORT("dragged handle: placement error %.1e m over 4 s; after 4 s max |v − V| = %.1e "
                "m/s (V = %.1f)",
                place, rigid, V);
    CHECK(place <= 1e-14);
    CHECK(rigid < 1e-3 * V);
    defo_world_destroy(s.w);

    /* twist: x = 0 clamped, x = 1 end spun about the bar axis at 1 rad/s */
    if (!sim_make(&s, m, &mat, NULL, &id, 0)) return;
    sim_clamp(&s, 0);
    defo_motion_def spin = defo_default_motion_def();
    spin.pivot[1] = spin.pivot[2] = 0.1;
    spin.angular_axis[0] = 1, spin.angular_axis[1] = 0, spin.angular_axis[2] = 0;
    spin.angular_speed = 1.0;
    const double lo2[3] = {1, -INFINITY, -INFINITY}, hi2[3] = {INFINITY, INFINITY, INFINITY};
    r = defo_region_box(lo2, hi2);
    CHECK_OK(defo_body_prescribe(s.w, s.id, &r, &spin, NULL));
    place = 0;
    double twist = 0;
    for (int f = 1; f <= 25; f++) {
        CHECK_OK(defo_world_step(s.w, 0.02));
        const double t = defo_world_time(s.w);
        const double *x = defo_body_positions(s.w, s.id);
        for (defo_index i = 0; i < m->num_nodes; i++)
            if (m->x[3 * i] > 1 - 1e-9) {
                double p[3];
                defo_motion_eval(&spin, t, m->x + 3 * i, p, NULL);
                for (int k = 0; k < 3; k++) place = fmax(place, fabs(x[3 * i + k] - p[k]));
            }
        /* the mid-span section turns about the axis too (less than the end) */
        double ang = 0;
        int cnt = 0;
        for (defo_index i = 0; i < m->num_nodes; i++)
            if (fabs(m->x[3 * i] - 0.5) < 1e-9 && fabs(m->x[3 * i + 1] - 0.2) < 1e-9 &&
                fabs(m->x[3 * i + 2] - 0.2) < 1e-9) {
                ang += atan2(x[3 * i + 2] - 0.1, x[3 * i + 1] - 0.1) - PI / 4;
                cnt++;
            }
        if (cnt) twist = ang / cnt;
    }
    TEST_REPORT("spun handle: placement error %.1e m over 0.5 s; mid-span corner turned %.3f rad "
                "(end 0.5 rad)",
                place, twist);
    CHECK(place <= 1e-14);
    CHECK(twist > 0.1 && twist < 0.5);
    defo_world_destroy(s.w);
    defo_mesh_destroy(m);
}

/* Run the cantilever (coarse: 16×4×4 cubes) for 20 steps in one frame (the
 * lazy state carries through a frame); mean tip displacement. */
static double cantilever_tip(defo_force_model_def fd) {
    defo_mesh *m = bar(16, 4, 4, 1.0, 0.25, 0.25);
    defo_material_def mat = material(1e6, 0.45);
    defo_integrator_def id = be_def(0.01, 1e-6);
    sim s;
    if (!sim_make(&s, m, &mat, &fd, &id, -9.81)) return 0;
    sim_clamp(&s, 0);
    const int steps = TEST_HEAVY(40) > 20 ? 40 : 20;
    CHECK_OK(defo_world_step(s.w, 0.01 * steps));
    double tip = tip_z(m, defo_body_positions(s.w, s.id), 1.0);
    defo_world_destroy(s.w);
    defo_mesh_destroy(m);
    return tip;
}

/* The accuracy cost of lazy rotations (MTPS08 §4.4) against full updates;
 * which rotations are recomputed is test_lazy_rotation_rules. */
static void test_lazy_rotations(void) {
    defo_force_model_def full = corot_def();
    double tip_full = cantilever_tip(full);
    defo_force_model_def lazy = full;
    lazy.rotation_interval = 0;
    lazy.lazy_tolerance = 0.1;
    double tip_lazy = cantilever_tip(lazy);
    defo_force_model_def every4 = full;
    every4.rotation_interval = 4;
    double tip_int = cantilever_tip(every4);
    TEST_REPORT("tip: full %.5f m; lazy tol 0.1: %.5f m (%.2f %% off); every 4th update: %.5f m "
                "(%.2f %% off)",
                tip_full, tip_lazy, 100 * fabs(tip_lazy / tip_full - 1), tip_int,
                100 * fabs(tip_int / tip_full - 1));
    CHECK(tip_full < -0.01);
    CHECK(fabs(tip_lazy / tip_full - 1) < 0.1);
    CHECK(fabs(tip_int / tip_full - 1) < 0.1);
}

/* Lazy rotations are not in a checkpoint, so every frame starts them
 * afresh: a run restored from a checkpoint — into the same world or into a
 * new one, as a resumed process does — continues bit for bit, with
 * rotation_interval 5 (frames of 4 steps: the update rhythm is not aligned
 * with frames) and with a lazy tolerance. */
static void test_lazy_resume(void) {
    defo_mesh *m = bar(8, 2, 2, 1.0, 0.25, 0.25);
    defo_material_def mat = material(1e5, 0.3);
    defo_integrator_def id = be_def(0.01, 1e-6);
    for (int rule = 0; rule < 2; rule++) {
        defo_force_model_def fd = corot_def();
        fd.rotation_interval = rule == 0 ? 5 : 0;
        fd.lazy_tolerance = rule == 0 ? 0 : 0.01;
        sim a, b;
        if (!sim_make(&a, m, &mat, &fd, &id, -9.81) || !sim_make(&b, m, &mat, &fd, &id, -9.81))
            return;
        sim_clamp(&a, 0);
        sim_clamp(&b, 0);
        void *s0 = NULL, *s1 = NULL, *s2 = NULL, *s3 = NULL;
        size_t n0 = 0, n1 = 0, n2 = 0, n3 = 0;
        for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(a.w, 0.04));
        CHECK_OK(defo_world_serialize(a.w, 1, &s0, &n0));
        for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(a.w, 0.04));
        CHECK_OK(defo_world_serialize(a.w, 1, &s1, &n1));
        CHECK_OK(defo_world_deserialize(a.w, 1, s0, n0));
        for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(a.w, 0.04));
        CHECK_OK(defo_world_serialize(a.w, 1, &s2, &n2));
        CHECK_OK(defo_world_deserialize(b.w, 1, s0, n0));
        for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(b.w, 0.04));
        CHECK_OK(defo_world_serialize(b.w, 1, &s3, &n3));
        const int same = n1 == n2 && memcmp(s1, s2, n1) == 0;
        const int fresh = n1 == n3 && memcmp(s1, s3, n1) == 0;
        TEST_REPORT("%s: resumed in the same world %s, in a new world %s",
                    rule == 0 ? "rotation_interval 5" : "lazy_tolerance 0.01",
                    same ? "identical" : "DIFFERS", fresh ? "identical" : "DIFFERS");
        CHECK(same && fresh);
        defo_free(s0);
        defo_free(s1);
        defo_free(s2);
        defo_free(s3);
        defo_world_destroy(a.w);
        defo_world_destroy(b.w);
    }
    defo_mesh_destroy(m);
}

/* A corotated box (its own linear solve, initial guesses from its last
 * solutions: defo_linear_solver_def.history) and an invertible box (the
 * joint Newton solve, no guesses) in one backward Euler integrator, thrown
 * at each other.  A run resumed from a checkpoint taken while they touch
 * continues bit for bit (the history travels in the checkpoint), into the
 * same world and into a new one, and 1 and 2 threads give the same bits. */
typedef struct mixed_run {
    int frames, resume_at; /* resume_at < 0: uninterrupted */
    defo_index contacts;   /* most pairs in contact at a frame's end */
} mixed_run;

static defo_world *mixed_world(defo_body_id id[2]) {
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = be_def(1.0 / 240, 1e-8);
    int ig = -1;
    CHECK_OK(defo_world_add_integrator(w, &idef, &ig));
    for (int k = 0; k < 2; k++) {
        defo_box_def bx = defo_default_box_def();
        bx.cells[0] = bx.cells[1] = bx.cells[2] = 3;
        for (int a = 0; a < 3; a++) bx.size[a] = 0.3;
        bx.origin[0] = k ? 0.02 : -0.32;
        bx.origin[1] = k ? -0.1 : -0.2;
        bx.origin[2] = -0.15;
        defo_mesh *m = NULL;
        CHECK_OK(defo_generate_box(&bx, &m));
        defo_body_def bd = defo_default_body_def();
        bd.mesh = m;
        bd.material = material(1e5, 0.3);
        if (k == 0) bd.force = corot_def();
        bd.integrator = ig;
        bd.velocity[0] = k ? -1.0 : 1.0;
        CHECK_OK(defo_world_add_body(w, &bd, &id[k]));
        defo_mesh_destroy(m);
    }
    return w;
}

/* out: both bodies' positions after the run */
static void mixed_compute(void *vctx, void *out) {
    mixed_run *r = vctx;
    defo_body_id id[2], jd[2];
    defo_world *w = mixed_world(id);
    void *rec = NULL;
    size_t nrec = 0;
    for (int f = 0; f < r->frames; f++) {
        if (f == r->resume_at) {
            CHECK_OK(defo_world_serialize(w, 1, &rec, &nrec));
            for (int g = f; g < r->frames; g++) CHECK_OK(defo_world_step(w, 1.0 / 60));
            CHECK_OK(defo_world_deserialize(w, 1, rec, nrec)); /* back, and again */
        }
        CHECK_OK(defo_world_step(w, 1.0 / 60));
        defo_step_stats st;
        defo_world_stats(w, &st);
        if (st.contacts > r->contacts) r->contacts = st.contacts;
    }
    if (rec && r->resume_at >= 0) { /* and in a fresh world from the record */
        defo_world *v = mixed_world(jd);
        CHECK_OK(defo_world_deserialize(v, 1, rec, nrec));
        for (int g = r->resume_at; g < r->frames; g++) CHECK_OK(defo_world_step(v, 1.0 / 60));
        for (int k = 0; k < 2; k++) {
            const size_t bytes = 3 * (size_t)defo_body_num_nodes(w, id[k]) * sizeof(double);
            CHECK(memcmp(defo_body_positions(w, id[k]), defo_body_positions(v, jd[k]), bytes) == 0);
        }
        defo_world_destroy(v);
    }
    defo_free(rec);
    unsigned char *o = out;
    for (int k = 0; k < 2; k++) {
        const size_t bytes = 3 * (size_t)defo_body_num_nodes(w, id[k]) * sizeof(double);
        memcpy(o, defo_body_positions(w, id[k]), bytes);
        o += bytes;
    }
    defo_world_destroy(w);
}

static void test_history_with_joint_solve(void) {
    defo_body_id id[2];
    defo_world *w = mixed_world(id);
    const size_t bytes = 3 *
                         (size_t)(defo_body_num_nodes(w, id[0]) + defo_body_num_nodes(w, id[1])) *
                         sizeof(double);
    defo_world_destroy(w);
    unsigned char *a = malloc(bytes), *b = malloc(bytes);
    mixed_run plain = {8, -1, 0}, resumed = {8, 5, 0};
    mixed_compute(&plain, a);
    mixed_compute(&resumed, b);
    TEST_REPORT("corotated + invertible box, backward Euler: %ld pairs in contact at most; resumed "
                "at frame 5 %s",
                (long)plain.contacts, memcmp(a, b, bytes) ? "DIFFERS" : "identical");
    CHECK(plain.contacts > 0);
    CHECK(memcmp(a, b, bytes) == 0);
    CHECK(test_bitwise_same_for_threads(mixed_compute, &plain, bytes, 2));
    free(a);
    free(b);
}

static void test_errors(void) {
    defo_mesh *m = bar(1, 1, 1, 1, 1, 1);
    /* a bad material: refused by the world, no body added */
    defo_material_def mat = material(-1, 0.3);
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(NULL, &w));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = mat;
    bd.force = corot_def();
    defo_body_id id;
    CHECK(defo_world_add_body(w, &bd, &id) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(!defo_body_is_valid(w, id));
    CHECK(defo_world_num_bodies(w) == 0);
    /* a bad time step */
    defo_integrator_def idef = be_def(0, 1e-6);
    CHECK(defo_world_add_integrator(w, &idef, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "time_step") != NULL);
    defo_world_destroy(w);
    /* non-finite positions are refused by set_state; finite positions whose
     * differences overflow are refused by the step, naming the element, and
     * leave the world at the frame's start */
    mat = material(1e5, 0.3);
    sim s;
    idef = be_def(0.01, 1e-6);
    if (!sim_make(&s, m, &mat, NULL, &idef, -9.81)) return;
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x);
    memcpy(x, m->x, n3 * sizeof *x);
    x[5] = NAN;
    CHECK(defo_body_set_state(s.w, s.id, x, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    x[5] = 1.7e308;
    x[8] = -1.7e308;
    CHECK_OK(defo_body_set_state(s.w, s.id, x, NULL));
    CHECK(defo_world_step(s.w, 0.01) == DEFO_ERR_NUMERICAL);
    CHECK(strstr(defo_last_error(), "element") != NULL);
    CHECK(defo_world_time(s.w) == 0);
    CHECK(memcmp(defo_body_positions(s.w, s.id), x, n3 * sizeof *x) == 0);
    free(x);
    defo_world_destroy(s.w);
    /* tet10 corotated bodies are supported now (MTPS08 §4.3, formerly
     * DEFO_ERR_UNSUPPORTED): one step of a free tet10 body under gravity
     * gives it the momentum Σm · g Δt (internal forces sum to zero) */
    defo_mesh *q = NULL;
    CHECK_OK(defo_mesh_to_quadratic(m, &q));
    if (sim_make(&s, q, &mat, NULL, &idef, -9.81)) {
        CHECK_OK(defo_world_step(s.w, 0.01));
        const double *vq = defo_body_velocities(s.w, s.id), *mq = defo_body_masses(s.w, s.id);
        double pz = 0, mt = 0;
        for (defo_index i = 0; i < q->num_nodes; i++) {
            pz += mq[i] * vq[3 * i + 2];
            mt += mq[i];
        }
        TEST_REPORT("tet10 body after one step: momentum %.12f N·s, Σm g Δt %.12f N·s", pz,
                    -9.81 * 0.01 * mt);
        CHECK_NEAR(pz, -9.81 * 0.01 * mt, 1e-6 * 9.81 * 0.01 * mt);
        defo_world_destroy(s.w);
    }
    defo_mesh_destroy(q);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_element_stiffness);
    RUN(test_assembly_matches_dense);
    RUN(test_rotations_match_svd_polar);
    RUN(test_no_ghost_forces);
    RUN(test_small_deformation_is_linear);
    RUN(test_lazy_rotation_rules);
    RUN(test_rotations_only);
    RUN(test_determinism);
    RUN(test_rotation_without_inflation);
    RUN(test_cantilever_static);
    RUN(test_inversion_recovery);
    RUN(test_momentum);
    RUN(test_energy_balance);
    RUN(test_spin_energy_bdf2);
    RUN(test_kinematic_handles);
    RUN(test_lazy_rotations);
    RUN(test_lazy_resume);
    RUN(test_history_with_joint_solve);
    RUN(test_errors);
    return test_summary();
}
