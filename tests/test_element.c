/*
 * tests/test_element.c — the element layer (defo/element.h) against exact
 * integrals and closed forms:
 *   - quadrature rules integrate every monomial up to their degree exactly
 *     (∫_ref ξ1^a ξ2^b ξ3^c = a! b! c! / (a+b+c+3)!);
 *   - shape functions: Kronecker at the nodes, partition of unity, gradients
 *     against central finite differences;
 *   - rest data: tet4 equals ITF04 §3's Dm⁻¹ and V bit for bit; an affine map
 *     (tet4, straight and curved tet10) and a quadratic map (tet10) are
 *     reproduced exactly at the quadrature points (the patch test of the
 *     element layer);
 *   - curved tet10 volume against ∫ det ∇φ of the quadratic map;
 *   - the eigenvalue length in closed form: tet4 (the unit right and the
 *     regular tet, scaled with the element) and a straight tet10 (its P2
 *     gradient products integrated exactly, HRZ masses);
 *   - consistent mass: total, first and second moments exact; HRZ lumping;
 *   - traction loads: t·A/3 per corner (tet4), 0 at corners and t·A/3 per edge
 *     node on a straight 6-node face, the area of a curved face against the
 *     parabolic-segment formula;
 *   - point location round trips; Jacobian quality; refusals.
 */
#include "defo/element.h"
#include "defo/math.h"
#include "defo/mesh.h"

#include "test.h"

static double fact(int n) {
    double f = 1;
    for (int k = 2; k <= n; k++) f *= k;
    return f;
}

/* max relative error of a rule over all monomials of total degree ≤ deg */
static double rule_error(const defo_quadrature *q, int deg, int dim) {
    double worst = 0;
    for (int a = 0; a <= deg; a++)
        for (int b = 0; a + b <= deg; b++)
            for (int c = 0; a + b + c <= deg; c++) {
                if (dim == 2 && c > 0) continue;
                double num = 0;
                for (int p = 0; p < q->num_points; p++) {
                    const double *l = q->point + (dim == 3 ? 4 : 3) * p;
                    num +=
                        q->weight[p] * pow(l[1], a) * pow(l[2], b) * (dim == 3 ? pow(l[3], c) : 1);
                }
                double exact = dim == 3 ? 6.0 * fact(a) * fact(b) * fact(c) / fact(a + b + c + 3)
                                        : 2.0 * fact(a) * fact(b) / fact(a + b + 2);
                worst = fmax(worst, fabs(num - exact) / exact);
            }
    return worst;
}

static void test_rules_exact(void) {
    const defo_element_ops *t4 = defo_element_ops_of(DEFO_ELEMENT_TET4);
    const defo_element_ops *t10 = defo_element_ops_of(DEFO_ELEMENT_TET10);
    CHECK(t4 && t10);
    if (!t4 || !t10) return;
    CHECK(t4->nodes == 4 && t10->nodes == 10 && t4->face_nodes == 3 && t10->face_nodes == 6);
    CHECK(t4->stiffness.num_points == 1 && t10->stiffness.num_points == 4);
    const defo_quadrature *rules[] = {&t4->stiffness, &t4->mass, &t10->stiffness, &t10->mass};
    for (int r = 0; r < 4; r++) {
        double s = 0;
        for (int p = 0; p < rules[r]->num_points; p++) s += rules[r]->weight[p];
        CHECK_NEAR(s, 1.0, 1e-14); /* 64 rounded weights: ~n·ε */
        double err = rule_error(rules[r], rules[r]->degree, 3);
        CHECK_MSG(err < 1e-13, "rule %d degree %d error %g", r, rules[r]->degree, err);
    }
    CHECK(t10->mass.degree >= 7);
    CHECK(t10->stiffness.degree == 2);
    /* the MTPS08 4-point rule is not exact for cubics: the test can tell */
    CHECK(rule_error(&t10->stiffness, 3, 3) > 1e-3);
    /* MTPS08 §4.2 points: a = 1/4 + 3√5/20, b = 1/4 − √5/20 */
    CHECK_NEAR(t10->stiffness.point[0], 0.25 + 3 * sqrt(5.0) / 20, 2e-16);
    CHECK_NEAR(t10->stiffness.point[1], 0.25 - sqrt(5.0) / 20, 2e-16);
    double err = rule_error(&t10->face_rule, 7, 2);
    CHECK_MSG(err < 1e-13, "face rule error %g", err);
    TEST_REPORT(
        "rules: tet10 stiffness %d points (degree %d), mass %d points (degree %d), faces %d",
        t10->stiffness.num_points, t10->stiffness.degree, t10->mass.num_points, t10->mass.degree,
        t10->face_rule.num_points);
    /* tri3 (ITF04 §8): points carry λ3 = 0; the mass rule is exact for
     * quadratics on the triangle (∫ λ1^a λ2^b = 2 a! b! / (a + b + 2)!) */
    const defo_element_ops *t3 = defo_element_ops_of(DEFO_ELEMENT_TRI3);
    CHECK(t3 && t3->nodes == 3 && t3->num_faces == 1 && t3->stiffness.num_points == 1);
    for (int a = 0; t3 && a <= 2; a++)
        for (int b = 0; a + b <= 2; b++) {
            double num = 0;
            for (int p = 0; p < t3->mass.num_points; p++) {
                const double *l = t3->mass.point + 4 * p;
                CHECK(l[3] == 0);
                num += t3->mass.weight[p] * pow(l[1], a) * pow(l[2], b);
            }
            CHECK_NEAR(num, 2.0 * fact(a) * fact(b) / fact(a + b + 2), 1e-15);
        }
    CHECK(defo_element_ops_of((defo_element_kind)7) == NULL);
    CHECK(defo_last_status() == DEFO_ERR_INVALID_ARGUMENT);
}

static void test_shape_functions(void) {
    for (int kind = 0; kind < 2; kind++) {
        const defo_element_ops *o = defo_element_ops_of((defo_element_kind)kind);
        /* node reference positions: corners, edge midpoints */
        double nodes[10][4];
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < 4; k++) nodes[a][k] = a == k;
        for (int e = 0; e < 6; e++)
            for (int k = 0; k < 4; k++)
                nodes[4 + e][k] =
                    (k == defo_tet_edges[e][0] || k == defo_tet_edges[e][1]) ? 0.5 : 0;
        double N[10], dN[30];
        for (int a = 0; a < o->nodes; a++) {
            o->shape(nodes[a], N);
            for (int b = 0; b < o->nodes; b++) CHECK_NEAR(N[b], a == b ? 1.0 : 0.0, 1e-15);
        }
        test_rng rng = {42};
        double worst = 0;
        for (int t = 0; t < 50; t++) {
            double xi[3] = {test_uniform(&rng) / 3, test_uniform(&rng) / 3, test_uniform(&rng) / 3};
            double l[4] = {1 - xi[0] - xi[1] - xi[2], xi[0], xi[1], xi[2]};
            o->shape(l, N);
            o->shape_grad(l, dN);
            double s = 0, g[3] = {0, 0, 0};
            for (int a = 0; a < o->nodes; a++) {
                s += N[a];
                for (int k = 0; k < 3; k++) g[k] += dN[3 * a + k];
            }
            CHECK_NEAR(s, 1.0, 1e-14);
            for (int k = 0; k < 3; k++) CHECK_NEAR(g[k], 0.0, 1e-13);
            const double h = 1e-6;
            for (int k = 0; k < 3; k++) {
                double lp[4], lm[4], Np[10], Nm[10];
                memcpy(lp, l, sizeof l);
                memcpy(lm, l, sizeof l);
                lp[k + 1] += h, lp[0] -= h;
                lm[k + 1] -= h, lm[0] += h;
                o->shape(lp, Np);
                o->shape(lm, Nm);
                for (int a = 0; a < o->nodes; a++)
                    worst = fmax(worst, fabs((Np[a] - Nm[a]) / (2 * h) - dN[3 * a + k]));
            }
        }
        CHECK_MSG(worst < 1e-8, "%s gradient vs finite differences %g", o->name, worst);
        /* tabulated values equal the functions */
        for (int q = 0; q < o->stiffness.num_points; q++) {
            o->shape(o->stiffness.point + 4 * q, N);
            o->shape_grad(o->stiffness.point + 4 * q, dN);
            for (int a = 0; a < o->nodes; a++) CHECK(N[a] == o->stiffness.shape[o->nodes * q + a]);
            for (int a = 0; a < 3 * o->nodes; a++)
                CHECK(dN[a] == o->stiffness.grad[3 * o->nodes * q + a]);
        }
        /* faces: corners of face f are those of defo_tet_faces, edge nodes join them */
        for (int f = 0; f < 4; f++) {
            for (int c = 0; c < 3; c++)
                CHECK(o->face[o->face_nodes * f + c] == defo_tet_faces[f][c]);
            for (int c = 0; o->face_nodes == 6 && c < 3; c++) {
                int en = o->face[6 * f + 3 + c] - 4;
                int a = defo_tet_faces[f][c], b = defo_tet_faces[f][(c + 1) % 3];
                CHECK(en >= 0 && en < 6);
                if (en >= 0 && en < 6)
                    CHECK((defo_tet_edges[en][0] == a && defo_tet_edges[en][1] == b) ||
                          (defo_tet_edges[en][0] == b && defo_tet_edges[en][1] == a));
            }
        }
    }
}

/* A single tet (corners below) as tet4 or tet10 with straight edges. */
static defo_mesh *one_tet(int order) {
    defo_mesh *m = NULL;
    if (defo_mesh_create(1, &m)) return NULL;
    const double X[4][3] = {{0.1, 0.2, -0.1}, {1.3, 0.1, 0.2}, {0.2, 1.1, 0.0}, {0.3, 0.4, 0.9}};
    for (int a = 0; a < 4; a++) defo_mesh_add_node(m, X[a][0], X[a][1], X[a][2], NULL);
    defo_index v[4] = {0, 1, 2, 3};
    defo_mesh_add_elem(m, v, 7);
    if (order == 1) return m;
    defo_mesh *q = NULL;
    defo_mesh_to_quadratic(m, &q);
    defo_mesh_destroy(m);
    return q;
}

static void affine(const double A[9], const double c[3], const double *X, double *x) {
    for (int r = 0; r < 3; r++)
        x[r] = c[r] + A[3 * r] * X[0] + A[3 * r + 1] * X[1] + A[3 * r + 2] * X[2];
}

/* F at each stiffness point from the rest data: F = (Σ_a x_a ∇ξN_aᵀ) J⁻¹ */
static void gradient_at(const defo_element_rest *rest, const defo_mesh *m, const double *x,
                        defo_index e, int q, double F[9]) {
    const defo_element_ops *o = defo_element_rest_ops(rest);
    const double *Ji = defo_element_rest_jinv(rest) + 9 * ((size_t)e * o->stiffness.num_points + q);
    const double *g = o->stiffness.grad + 3 * o->nodes * q;
    double H[9] = {0};
    for (int a = 0; a < o->nodes; a++) {
        const double *p = x + 3 * (size_t)m->elems[(size_t)e * o->nodes + a];
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) H[3 * r + k] += p[r] * g[3 * a + k];
    }
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            F[3 * r + k] = H[3 * r] * Ji[k] + H[3 * r + 1] * Ji[3 + k] + H[3 * r + 2] * Ji[6 + k];
}

/* ITF04 §3: for tet4 the rest data is Dm⁻¹ with Dm = [X1−X0, X2−X0, X3−X0]
 * (the inverse as the transposed cofactor matrix over det Dm) and the weight
 * and volume are det Dm / 6 — computed here from the corners, bit for bit. */
static void test_rest_tet4_matches_itf04(void) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 3, bd.cells[1] = 2, bd.cells[2] = 2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_element_rest *r = NULL;
    CHECK_OK(defo_element_rest_create(m, &r));
    CHECK(defo_element_rest_num_elems(r) == m->num_elems);
    int same = 1;
    for (defo_index e = 0; e < m->num_elems; e++) {
        const defo_index *v = m->elems + 4 * e;
        const defo_vec3 X0 = defo_v3_load(m->x + 3 * v[0]);
        const defo_mat3 Dm = defo_m3_from_cols(defo_v3_sub(defo_v3_load(m->x + 3 * v[1]), X0),
                                               defo_v3_sub(defo_v3_load(m->x + 3 * v[2]), X0),
                                               defo_v3_sub(defo_v3_load(m->x + 3 * v[3]), X0));
        const double det = defo_m3_det(Dm);
        const defo_mat3 inv = defo_m3_scale(defo_m3_transpose(defo_m3_cofactor(Dm)), 1.0 / det);
        same &= memcmp(defo_element_rest_jinv(r) + 9 * e, inv.m, 9 * sizeof(double)) == 0;
        same &= defo_element_rest_weight(r)[e] == det / 6.0;
        same &= defo_element_rest_volume(r)[e] == det / 6.0;
    }
    CHECK(same);
    defo_element_rest_destroy(r);
    defo_mesh_destroy(m);
}

/* The eigenvalue length (defo_element_rest_eigen_length) in closed form for
 * tet4: ℓ = 2/√λmax(Σ_a ∇N_a∇N_aᵀ).  The unit right tet has gradients e1,
 * e2, e3 and −(1,1,1): Σ = I + 11ᵀ, λmax = 4, ℓ = 1.  A regular tet's sum is
 * isotropic, (4/h²)/3 · I with h its altitude, so ℓ = √3 h.  ℓ is a length:
 * scaled by s under a rigid motion and scaling by s. */
static void test_eigen_length(void) {
    const double right[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    const double a = 0.3, h = a * sqrt(2.0 / 3.0);
    const double regular[4][3] = {
        {0, 0, 0}, {a, 0, 0}, {0.5 * a, 0.5 * sqrt(3.0) * a, 0}, {0.5 * a, sqrt(3.0) * a / 6.0, h}};
    const double want[2] = {1.0, sqrt(3.0) * h};
    for (int shape = 0; shape < 2; shape++)
        for (int moved = 0; moved < 2; moved++) {
            defo_mesh *m = NULL;
            CHECK_OK(defo_mesh_create(1, &m));
            const double(*X)[3] = shape ? regular : right;
            /* moved: scaled by 2.5, rotated about (1, 2, 2)/3 by 0.7 rad, shifted */
            const defo_mat3 R = defo_m3_rotation(defo_v3(1.0 / 3, 2.0 / 3, 2.0 / 3), 0.7);
            for (int k = 0; k < 4; k++) {
                defo_vec3 p = defo_v3(X[k][0], X[k][1], X[k][2]);
                if (moved)
                    p = defo_v3_add(defo_v3_scale(defo_m3_mulv(R, p), 2.5), defo_v3(3, -1, 2));
                defo_mesh_add_node(m, p.x, p.y, p.z, NULL);
            }
            const defo_index v[4] = {0, 1, 2, 3};
            defo_mesh_add_elem(m, v, 0);
            defo_element_rest *r = NULL;
            CHECK_OK(defo_element_rest_create(m, &r));
            const double l = defo_element_rest_eigen_length(r)[0],
                         expect = want[shape] * (moved ? 2.5 : 1.0);
            CHECK_MSG(fabs(l - expect) <= 1e-13 * expect, "shape %d moved %d: %.17g, want %.17g",
                      shape, moved, l, expect);
            defo_element_rest_destroy(r);
            defo_mesh_destroy(m);
        }
}

/* The straight tet10's eigenvalue length in closed form, with one_tet's
 * corners: with barycentric λ and G_pr = ∇λ_p·∇λ_r, the gradients
 * ∇N = (4λ_i − 1)∇λ_i (corner i) and 4(λ_j∇λ_i + λ_i∇λ_j) (edge ij) are
 * linear in λ, so K_ab = ∫∇N_a·∇N_b dV follows from ∫1 = V, ∫λ_q = V/4,
 * ∫λ_qλ_s = V(1 + δ_qs)/20; the HRZ masses are V/36 (corner) and 4V/27
 * (edge).  γ = λmax(m^{-1/2} K m^{-1/2}) by power iteration; ℓ = 4/√γ. */
static void test_eigen_length_tet10(void) {
    defo_mesh *m = one_tet(2);
    CHECK(m != NULL);
    if (!m) return;
    defo_element_rest *r = NULL;
    CHECK_OK(defo_element_rest_create(m, &r));
    /* ∇λ: rows of Dm⁻¹ for λ1..3, minus their sum for λ0 */
    defo_vec3 X[4];
    for (int a = 0; a < 4; a++) X[a] = defo_v3_load(m->x + 3 * m->elems[a]);
    const defo_mat3 Dm = defo_m3_from_cols(defo_v3_sub(X[1], X[0]), defo_v3_sub(X[2], X[0]),
                                           defo_v3_sub(X[3], X[0]));
    defo_mat3 Di;
    CHECK(defo_m3_inverse(Dm, &Di));
    const double V = defo_m3_det(Dm) / 6.0;
    double gl[4][3];
    for (int k = 0; k < 3; k++) {
        gl[0][k] = 0;
        for (int p = 1; p < 4; p++) gl[0][k] -= gl[p][k] = Di.m[p - 1][k];
    }
    double G[4][4];
    for (int p = 0; p < 4; p++)
        for (int q = 0; q < 4; q++)
            G[p][q] = gl[p][0] * gl[q][0] + gl[p][1] * gl[q][1] + gl[p][2] * gl[q][2];
    /* node a's gradient: Σ_p (al[a][p] + Σ_q be[a][p][q] λ_q) ∇λ_p */
    double al[10][4] = {{0}}, be[10][4][4] = {{{0}}}, mass[10];
    static const int edge[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
    for (int i = 0; i < 4; i++) al[i][i] = -1, be[i][i][i] = 4, mass[i] = V / 36;
    for (int e = 0; e < 6; e++) {
        const int i = edge[e][0], j = edge[e][1];
        be[4 + e][i][j] = 4, be[4 + e][j][i] = 4, mass[4 + e] = 4 * V / 27;
    }
    double K[10][10];
    for (int a = 0; a < 10; a++)
        for (int b = 0; b < 10; b++) {
            double k = 0;
            for (int p = 0; p < 4; p++)
                for (int q = 0; q < 4; q++) {
                    double sa = 0, sb = 0, quad = 0;
                    for (int u = 0; u < 4; u++) {
                        sa += be[a][p][u], sb += be[b][q][u];
                        for (int w = 0; w < 4; w++)
                            quad += be[a][p][u] * be[b][q][w] * V * (1 + (u == w)) / 20;
                    }
                    k += G[p][q] *
                         (al[a][p] * al[b][q] * V + (al[a][p] * sb + al[b][q] * sa) * V / 4 + quad);
                }
            K[a][b] = k / sqrt(mass[a] * mass[b]);
        }
    double u[10], y[10], gamma = 0, last = 0;
    for (int a = 0; a < 10; a++) u[a] = 1.0 + 0.1 * a;
    for (int it = 0; it < 5000; it++) {
        double n = 0;
        for (int a = 0; a < 10; a++) n += u[a] * u[a];
        for (int a = 0; a < 10; a++) u[a] /= sqrt(n);
        last = gamma, gamma = 0;
        for (int a = 0; a < 10; a++) {
            y[a] = 0;
            for (int b = 0; b < 10; b++) y[a] += K[a][b] * u[b];
            gamma += u[a] * y[a];
        }
        memcpy(u, y, sizeof u);
    }
    const double want = 4.0 / sqrt(gamma), got = defo_element_rest_eigen_length(r)[0];
    TEST_REPORT("straight tet10: eigenvalue length %.15g, closed form %.15g (power iteration "
                "settled to %.1e)",
                got, want, fabs(gamma - last) / gamma);
    CHECK(fabs(gamma - last) <= 1e-14 * gamma);
    CHECK(fabs(got - want) <= 1e-12 * want);
    defo_element_rest_destroy(r);
    defo_mesh_destroy(m);
}

/* A linear field is reproduced exactly by both kinds (also on a curved tet10
 * mesh); a quadratic one by tet10: F at every quadrature point equals ∇φ. */
static void test_patch_fields(void) {
    const double A[9] = {1.1, 0.2, -0.1, 0.05, 0.9, 0.3, -0.2, 0.1, 1.2}, c[3] = {0.3, -0.2, 0.5};
    for (int order = 1; order <= 2; order++) {
        defo_sphere_def sd = defo_default_sphere_def();
        sd.order = order;
        sd.cell_size = 0.5; /* curved boundary edges for tet10 */
        defo_mesh *m = NULL;
        CHECK_OK(defo_generate_sphere(&sd, &m));
        defo_element_rest *r = NULL;
        CHECK_OK(defo_element_rest_create(m, &r));
        const int nq = defo_element_rest_ops(r)->stiffness.num_points;
        double *x = malloc(3 * (size_t)m->num_nodes * sizeof *x);
        for (defo_index i = 0; i < m->num_nodes; i++) affine(A, c, m->x + 3 * i, x + 3 * i);
        double worst = 0;
        for (defo_index e = 0; e < m->num_elems; e++)
            for (int q = 0; q < nq; q++) {
                double F[9];
                gradient_at(r, m, x, e, q, F);
                for (int k = 0; k < 9; k++) worst = fmax(worst, fabs(F[k] - A[k]));
            }
        CHECK_MSG(worst < 1e-13, "order %d affine patch: |F - A| = %g", order, worst);
        TEST_REPORT("order %d, %ld elements: affine map reproduced to %.2g", order,
                    (long)m->num_elems, worst);
        free(x);
        defo_element_rest_destroy(r);
        defo_mesh_destroy(m);
    }
    /* quadratic φ(X) = X + (0.3 X0², 0.2 X0 X1, −0.1 X2²) on straight tet10 */
    defo_box_def bd = defo_default_box_def();
    bd.order = 2;
    bd.cells[0] = bd.cells[1] = bd.cells[2] = 2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_element_rest *r = NULL;
    CHECK_OK(defo_element_rest_create(m, &r));
    const defo_element_ops *o = defo_element_rest_ops(r);
    double *x = malloc(3 * (size_t)m->num_nodes * sizeof *x);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *X = m->x + 3 * i;
        x[3 * i] = X[0] + 0.3 * X[0] * X[0];
        x[3 * i + 1] = X[1] + 0.2 * X[0] * X[1];
        x[3 * i + 2] = X[2] - 0.1 * X[2] * X[2];
    }
    double worst = 0;
    for (defo_index e = 0; e < m->num_elems; e++)
        for (int q = 0; q < o->stiffness.num_points; q++) {
            /* the quadrature point's rest position */
            double X[3] = {0, 0, 0};
            for (int a = 0; a < 10; a++)
                for (int k = 0; k < 3; k++)
                    X[k] += o->stiffness.shape[10 * q + a] * m->x[3 * m->elems[10 * e + a] + k];
            const double G[9] = {1 + 0.6 * X[0], 0, 0, 0.2 * X[1], 1 + 0.2 * X[0], 0, 0, 0,
                                 1 - 0.2 * X[2]};
            double F[9];
            gradient_at(r, m, x, e, q, F);
            for (int k = 0; k < 9; k++) worst = fmax(worst, fabs(F[k] - G[k]));
        }
    CHECK_MSG(worst < 1e-13, "tet10 quadratic patch: |F - ∇φ| = %g", worst);
    /* the same field on tet4 is not reproduced (the test can fail) */
    defo_mesh *m4 = NULL;
    bd.order = 1;
    CHECK_OK(defo_generate_box(&bd, &m4));
    defo_element_rest *r4 = NULL;
    CHECK_OK(defo_element_rest_create(m4, &r4));
    double w4 = 0;
    for (defo_index e = 0; e < m4->num_elems; e++) {
        double X[3] = {0, 0, 0};
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < 3; k++) X[k] += 0.25 * m4->x[3 * m4->elems[4 * e + a] + k];
        double F[9];
        gradient_at(r4, m4, x, e, 0, F); /* x: the first nodes coincide (corners first) */
        w4 = fmax(w4, fabs(F[0] - (1 + 0.6 * X[0])));
    }
    CHECK(w4 > 1e-3);
    TEST_REPORT("quadratic map: tet10 error %.2g, tet4 error %.2g", worst, w4);
    free(x);
    defo_element_rest_destroy(r);
    defo_element_rest_destroy(r4);
    defo_mesh_destroy(m);
    defo_mesh_destroy(m4);
}

/* Curved tet10 volume: nodes mapped by φ(X) = X + ε (X1², X2², X0²), a
 * quadratic map the element represents exactly, with the cubic
 * det ∇φ = 1 + 8ε³ X0 X1 X2.  ∫ X0 X1 X2 dV of a tet in closed form from
 * ∫ λ_i λ_j λ_k dV = V/20, V/60, V/120 (all equal, two equal, distinct). */
static void test_curved_volume(void) {
    defo_mesh *m = one_tet(2);
    CHECK(m != NULL);
    if (!m) return;
    const double eps = 0.4;
    double V = 0, cubic = 0;
    {
        defo_element_rest *r = NULL;
        CHECK_OK(defo_element_rest_create(m, &r));
        V = defo_element_rest_volume(r)[0];
        defo_element_rest_destroy(r);
        const double *X = m->x; /* corners are nodes 0..3 */
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < 4; k++) {
                    double c = (i == j && j == k)             ? 1.0 / 20
                               : (i == j || j == k || i == k) ? 1.0 / 60
                                                              : 1.0 / 120;
                    cubic += c * X[3 * i] * X[3 * j + 1] * X[3 * k + 2];
                }
        cubic *= V;
    }
    for (defo_index i = 0; i < m->num_nodes; i++) {
        double *X = m->x + 3 * i, Y[3] = {X[0], X[1], X[2]};
        X[0] += eps * Y[1] * Y[1];
        X[1] += eps * Y[2] * Y[2];
        X[2] += eps * Y[0] * Y[0];
    }
    defo_element_rest *r = NULL;
    CHECK_OK(defo_element_rest_create(m, &r));
    double expect = V + 8 * eps * eps * eps * cubic, got = 0;
    CHECK_OK(defo_element_volume(m, NULL, &got));
    CHECK_NEAR(defo_element_rest_volume(r)[0], expect, 1e-14 * expect);
    CHECK_NEAR(got, expect, 1e-14 * expect);
    /* the 4-point stiffness weights integrate the cubic det J only approximately */
    double w = 0;
    for (int q = 0; q < 4; q++) w += defo_element_rest_weight(r)[q];
    CHECK(fabs(w - expect) > 1e-9 * expect);
    TEST_REPORT("curved tet10 volume %.15g (exact %.15g; 4-point rule %.15g)", got, expect, w);
    /* consistent mass of the curved element sums to ρ times its exact volume */
    double Me[100];
    CHECK_OK(defo_element_mass_matrix(m, 0, 1000.0, Me));
    double s = 0;
    for (int k = 0; k < 100; k++) s += Me[k];
    CHECK_NEAR(s, 1000.0 * expect, 1e-13 * 1000 * expect);
    defo_element_rest_destroy(r);
    defo_mesh_destroy(m);
}

/* Σ Me = ρV, Σ_ab Me_ab X_b = ρ ∫X, Σ_ab X_a Me_ab X_bᵀ = ρ ∫ X Xᵀ with the
 * exact tet moments ∫ X Xᵀ = V/20 (Σ_i X_i X_iᵀ + s sᵀ), s = Σ corners. */
static void test_consistent_mass_moments(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = one_tet(order);
        const int p = order == 1 ? 4 : 10;
        const double rho = 900;
        double Me[100];
        CHECK_OK(defo_element_mass_matrix(m, 0, rho, Me));
        defo_element_rest *r = NULL;
        CHECK_OK(defo_element_rest_create(m, &r));
        const double V = defo_element_rest_volume(r)[0];
        double s[3] = {0, 0, 0};
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < 3; k++) s[k] += m->x[3 * a + k];
        double total = 0, first[3] = {0, 0, 0}, second[3][3] = {{0}};
        for (int a = 0; a < p; a++)
            for (int b = 0; b < p; b++) {
                const double *Xa = m->x + 3 * m->elems[a], *Xb = m->x + 3 * m->elems[b];
                total += Me[a * p + b];
                for (int k = 0; k < 3; k++) {
                    first[k] += Me[a * p + b] * Xb[k];
                    for (int l = 0; l < 3; l++) second[k][l] += Xa[k] * Me[a * p + b] * Xb[l];
                }
            }
        CHECK_NEAR(total, rho * V, 1e-13 * rho * V);
        for (int k = 0; k < 3; k++) CHECK_NEAR(first[k], rho * V * s[k] / 4, 1e-13 * rho * V);
        for (int k = 0; k < 3; k++)
            for (int l = 0; l < 3; l++) {
                double ex = s[k] * s[l];
                for (int a = 0; a < 4; a++) ex += m->x[3 * a + k] * m->x[3 * a + l];
                CHECK_NEAR(second[k][l], rho * V * ex / 20, 1e-13 * rho * V);
            }
        /* symmetric; tet4 closed form ρV/20 (1 + δ_ab) */
        for (int a = 0; a < p; a++)
            for (int b = 0; b < p; b++) CHECK_NEAR(Me[a * p + b], Me[b * p + a], 1e-15 * rho * V);
        if (order == 1) CHECK_NEAR(Me[0], rho * V / 10, 1e-14 * rho * V);
        /* lumped: tet4 ρV/4; tet10 HRZ ρV/36 and 4ρV/27 */
        double lm[10];
        CHECK_OK(defo_element_lumped_mass(m, rho, NULL, lm));
        for (int a = 0; a < p; a++) {
            double ex = order == 1 ? rho * V / 4 : (a < 4 ? rho * V / 36 : 4 * rho * V / 27);
            CHECK_NEAR(lm[a], ex, 1e-13 * rho * V);
        }
        defo_element_rest_destroy(r);
        defo_mesh_destroy(m);
    }
}

static void test_traction_loads(void) {
    /* unit cube of 2×2×2 cells, traction on the face x = 1 (area 1) */
    for (int order = 1; order <= 2; order++) {
        defo_box_def bd = defo_default_box_def();
        bd.order = order;
        bd.cells[0] = bd.cells[1] = bd.cells[2] = 2;
        defo_mesh *m = NULL;
        CHECK_OK(defo_generate_box(&bd, &m));
        unsigned char *mark = calloc((size_t)m->num_nodes, 1);
        for (defo_index i = 0; i < m->num_nodes; i++) mark[i] = m->x[3 * i] > 1 - 1e-12;
        double *f = calloc(3 * (size_t)m->num_nodes, sizeof *f);
        const double t[3] = {0, 0, -100};
        double area = 0;
        CHECK_OK(defo_element_traction_load(m, mark, t, f, &area));
        CHECK_NEAR(area, 1.0, 1e-14);
        double fz = 0, corner = 0, edge = 0;
        for (defo_index i = 0; i < m->num_nodes; i++) {
            fz += f[3 * i + 2];
            if (order == 2 && i < 27) corner += fabs(f[3 * i + 2]); /* box corners come first */
            if (order == 2 && i >= 27) edge += f[3 * i + 2];
        }
        CHECK_NEAR(fz, -100.0, 1e-12);
        if (order == 2) {
            /* straight 6-node faces: nothing on the corners (∫ l(2l−1) dA = 0) */
            CHECK_NEAR(corner, 0.0, 1e-12);
            CHECK_NEAR(edge, -100.0, 1e-12);
        }
        free(mark);
        free(f);
        defo_mesh_destroy(m);
    }
    /* a curved 6-node face: triangle (0,0,0) (1,0,0) (0,1,0) with the edge
     * node of (1,2) moved by δ(1,1,0): area 1/2 + 4δ/3 (parabolic segment:
     * 2/3 · chord · sagitta = 2/3 · √2 · δ√2) */
    defo_mesh *m = one_tet(2);
    const double P[4][3] = {{0, 0, 1}, {0, 0, 0}, {1, 0, 0}, {0, 1, 0}}; /* face 0 = (1,2,3) */
    const defo_index *v = m->elems; /* local node a is global node v[a] */
    for (int a = 0; a < 4; a++) memcpy(m->x + 3 * v[a], P[a], sizeof P[a]);
    for (int e = 0; e < 6; e++)
        for (int k = 0; k < 3; k++)
            m->x[3 * v[4 + e] + k] =
                0.5 * (P[defo_tet_edges[e][0]][k] + P[defo_tet_edges[e][1]][k]);
    const double delta = 0.1;
    /* edge (2,3) is VTK edge 5: local node 9 */
    m->x[3 * v[9]] += delta;
    m->x[3 * v[9] + 1] += delta;
    unsigned char mark[10] = {0};
    for (int a = 1; a < 4; a++) mark[v[a]] = 1;
    double f[30] = {0}, area = 0;
    const double t[3] = {0, 0, 1};
    CHECK_OK(defo_element_traction_load(m, mark, t, f, &area));
    CHECK_NEAR(area, 0.5 + 4 * delta / 3, 1e-14);
    double fz = 0;
    for (int i = 0; i < 10; i++) fz += f[3 * i + 2];
    CHECK_NEAR(fz, area, 1e-14);
    TEST_REPORT("curved face area %.15g (exact %.15g)", area, 0.5 + 4 * delta / 3);
    defo_mesh_destroy(m);
}

static void test_locate_and_quality(void) {
    defo_mesh *m = one_tet(2);
    /* curve the element: move edge node 4 off the (0,1) edge */
    const defo_index *v = m->elems;
    m->x[3 * v[4] + 2] += 0.08;
    test_rng rng = {7};
    double worst = 0;
    for (int t = 0; t < 100; t++) {
        double xi[3] = {test_uniform(&rng) / 3, test_uniform(&rng) / 3, test_uniform(&rng) / 3};
        double l[4] = {1 - xi[0] - xi[1] - xi[2], xi[0], xi[1], xi[2]}, N[10], p[3] = {0, 0, 0};
        defo_element_ops_of(DEFO_ELEMENT_TET10)->shape(l, N);
        for (int a = 0; a < 10; a++)
            for (int k = 0; k < 3; k++) p[k] += N[a] * m->x[3 * v[a] + k];
        double b[4];
        int ok = 0;
        CHECK_OK(defo_element_locate(m, NULL, 0, p, b, &ok));
        CHECK(ok);
        for (int k = 0; k < 4; k++) worst = fmax(worst, fabs(b[k] - l[k]));
    }
    CHECK_MSG(worst < 1e-12, "tet10 locate round trip %g", worst);
    double q[1], lo = 0;
    defo_index le = -2;
    CHECK_OK(defo_element_jacobian_quality(m, NULL, q, &lo, &le));
    CHECK(q[0] < 1.0 && q[0] > 0.3 && le == 0);
    /* fold it: the edge node past the opposite corner side */
    m->x[3 * v[4]] = 2.5;
    CHECK_OK(defo_element_jacobian_quality(m, NULL, q, &lo, &le));
    CHECK(q[0] <= 0.0);
    defo_element_rest *r = NULL;
    CHECK(defo_element_rest_create(m, &r) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "element 0") != NULL);
    defo_mesh_destroy(m);
    m = one_tet(2);
    CHECK_OK(defo_element_jacobian_quality(m, NULL, q, &lo, &le));
    CHECK_NEAR(q[0], 1.0, 1e-13);
    defo_mesh_destroy(m);
}

/* det of the position map's ξ-derivatives at barycentric point l, by
 * central differences of the shape functions (exact for the quadratic map up
 * to rounding): independent of defo_element_jacobian. */
static double map_det_fd(const defo_mesh *m, const double *x, const double l[4]) {
    const defo_element_ops *ops = defo_element_ops_of(DEFO_ELEMENT_TET10);
    const double h = 1e-5;
    double J[9];
    for (int d = 0; d < 3; d++) {
        double p[2][3] = {{0, 0, 0}, {0, 0, 0}};
        for (int sgn = 0; sgn < 2; sgn++) {
            double ll[4] = {l[0], l[1], l[2], l[3]}, N[10];
            const double t = sgn ? h : -h;
            ll[0] -= t;
            ll[d + 1] += t;
            ops->shape(ll, N);
            for (int a = 0; a < 10; a++)
                for (int k = 0; k < 3; k++) p[sgn][k] += N[a] * x[3 * (size_t)m->elems[a] + k];
        }
        for (int k = 0; k < 3; k++) J[3 * k + d] = (p[1][k] - p[0][k]) / (2 * h);
    }
    return J[0] * (J[4] * J[8] - J[5] * J[7]) - J[1] * (J[3] * J[8] - J[5] * J[6]) +
           J[2] * (J[3] * J[7] - J[4] * J[6]);
}

/* defo_element_fold_state: a tet10 whose edge node (0,1) slides to 0.2 of
 * the edge folds at corner 0 (the edge's tangent there is 4 x_m − 3 x_0 −
 * x_1 = −0.2 (x_1 − x_0)) while det J stays positive at all four stiffness
 * points — "folded between", not inverted; mirrored, it is inverted (tet4
 * and tet10); at rest neither.  Signs checked by differences of the map. */
static void test_fold_state(void) {
    defo_mesh *m = one_tet(2);
    const defo_element_ops *ops = defo_element_ops_of(DEFO_ELEMENT_TET10);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x);
    memcpy(x, m->x, n3 * sizeof *x);
    const defo_index *v = m->elems;
    for (int k = 0; k < 3; k++)
        x[3 * v[4] + k] = x[3 * v[0] + k] + 0.2 * (x[3 * v[1] + k] - x[3 * v[0] + k]);
    const double corner0[4] = {1, 0, 0, 0};
    double qmin = INFINITY;
    for (int q = 0; q < ops->stiffness.num_points; q++)
        qmin = fmin(qmin, map_det_fd(m, x, ops->stiffness.point + 4 * q));
    const double dc = map_det_fd(m, x, corner0);
    unsigned char st = 9;
    defo_index ni = -1, nf = -1;
    CHECK_OK(defo_element_fold_state(m, x, &st, &ni, &nf));
    TEST_REPORT("edge node at 0.2: det J (differences) %.3g at corner 0, ≥ %.3g at the stiffness "
                "points; state %d, inverted %ld, folded %ld",
                dc, qmin, st, (long)ni, (long)nf);
    CHECK(dc < 0 && qmin > 0);
    CHECK(st == DEFO_FOLD_BETWEEN && ni == 0 && nf == 1);
    ni = -1; /* the inverted count alone (stiffness points only): the same 0 */
    CHECK_OK(defo_element_fold_state(m, x, NULL, &ni, NULL));
    CHECK(ni == 0);
    CHECK_OK(defo_element_fold_state(m, NULL, &st, &ni, &nf));
    CHECK(st == DEFO_FOLD_NONE && ni == 0 && nf == 0);
    for (size_t k = 0; k < n3; k += 3) x[k] = -m->x[k]; /* mirrored in x */
    for (size_t k = 1; k < n3; k++)
        if (k % 3) x[k] = m->x[k];
    CHECK_OK(defo_element_fold_state(m, x, &st, &ni, &nf));
    CHECK(st == DEFO_FOLD_INVERTED && ni == 1 && nf == 0);
    defo_mesh_destroy(m);
    m = one_tet(1);
    double x4[12];
    for (int k = 0; k < 12; k++) x4[k] = k % 3 ? m->x[k] : -m->x[k];
    CHECK_OK(defo_element_fold_state(m, x4, &st, &ni, &nf));
    CHECK(st == DEFO_FOLD_INVERTED && ni == 1 && nf == 0);
    CHECK_OK(defo_element_fold_state(m, NULL, &st, &ni, &nf));
    CHECK(st == DEFO_FOLD_NONE && ni == 0 && nf == 0);
    defo_mesh_destroy(m);
    free(x);
}

static void test_refusals(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(0, &m));
    defo_element_rest *r = NULL;
    CHECK(defo_element_rest_create(m, &r) == DEFO_ERR_INVALID_ARGUMENT && r == NULL);
    CHECK(strstr(defo_last_error(), "tet4 or tet10") != NULL);
    defo_mesh_destroy(m);
    /* a flat tet */
    CHECK_OK(defo_mesh_create(1, &m));
    defo_mesh_add_node(m, 0, 0, 0, NULL);
    defo_mesh_add_node(m, 1, 0, 0, NULL);
    defo_mesh_add_node(m, 0, 1, 0, NULL);
    defo_mesh_add_node(m, 1, 1, 0, NULL);
    defo_index v[4] = {0, 1, 2, 3};
    defo_mesh_add_elem(m, v, 0);
    CHECK(defo_element_rest_create(m, &r) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "element 0 is degenerate") != NULL);
    double mass[4];
    CHECK(defo_element_lumped_mass(m, -1, NULL, mass) == DEFO_ERR_INVALID_ARGUMENT);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_rules_exact);
    RUN(test_shape_functions);
    RUN(test_rest_tet4_matches_itf04);
    RUN(test_eigen_length);
    RUN(test_eigen_length_tet10);
    RUN(test_patch_fields);
    RUN(test_curved_volume);
    RUN(test_consistent_mass_moments);
    RUN(test_traction_loads);
    RUN(test_locate_and_quality);
    RUN(test_fold_state);
    RUN(test_refusals);
    return test_summary();
}
