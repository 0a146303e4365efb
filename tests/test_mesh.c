/*
 * tests/test_mesh.c — mesh lifecycle, orientation, rest data, masses and
 * volumes (now the element layer's, defo/element.h, seen from a mesh),
 * topology and quality, each against an analytic value or an invariant.
 */
#include "defo/element.h"
#include "defo/mesh.h"
#include "defo/math.h"
#include "test.h"

#include <stdint.h>

/* A general (non-symmetric) positively oriented tet. */
static const double tet_x[12] = {0.1, -0.2, 0.3, 1.3, 0.1, 0.2, 0.2, 0.9, 0.5, 0.4, 0.3, 1.6};

static defo_mesh *one_tet(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(1, &m));
    for (int i = 0; i < 4; i++)
        CHECK_OK(defo_mesh_add_node(m, tet_x[3 * i], tet_x[3 * i + 1], tet_x[3 * i + 2], NULL));
    defo_index v[4] = {0, 1, 2, 3};
    CHECK_OK(defo_mesh_add_elem(m, v, 0));
    return m;
}

static defo_mesh *box(int nx, int ny, int nz, defo_box_split split, int order) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = nx, d.cells[1] = ny, d.cells[2] = nz;
    d.size[0] = 1.0, d.size[1] = 0.7, d.size[2] = 1.3;
    d.split = split;
    d.order = order;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&d, &m));
    return m;
}

/* ---------------------------------------------------------------- lifecycle */
static void test_lifecycle_growth(void) {
    defo_mesh *m = NULL;
    CHECK(defo_mesh_create(3, &m) == DEFO_ERR_INVALID_ARGUMENT && m == NULL);
    CHECK_OK(defo_mesh_create(1, &m));
    if (!m) return;
    /* 10000 appends: amortised doubling keeps every coordinate */
    for (int i = 0; i < 10000; i++) CHECK_OK(defo_mesh_add_node(m, i, 2.0 * i, -i, NULL));
    CHECK(m->num_nodes == 10000 && m->node_capacity >= 10000 && m->node_capacity < 40000);
    int good = 1;
    for (int i = 0; i < 10000; i++)
        good &= m->x[3 * i] == i && m->x[3 * i + 1] == 2.0 * i && m->x[3 * i + 2] == -i;
    CHECK(good);
    for (int e = 0; e < 3000; e++) {
        defo_index v[4] = {e, e + 1, e + 2, e + 3};
        CHECK_OK(defo_mesh_add_elem(m, v, e == 1500 ? 7 : 0));
    }
    CHECK(m->num_elems == 3000 && m->elem_tag && m->elem_tag[1500] == 7 && m->elem_tag[0] == 0 &&
          m->elem_tag[2999] == 0);
    defo_index tri3[3] = {0, 1, 2}, tri6[6] = {0, 1, 2, 3, 4, 5};
    CHECK_OK(defo_mesh_add_tri(m, tri3, 3, 2));
    CHECK(defo_mesh_add_tri(m, tri6, 6, 0) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(m->num_tris == 1 && m->tri_tag[0] == 2);
    CHECK_OK(defo_mesh_reserve(m, 20000, 5000, 10));
    CHECK(m->node_capacity >= 20000 && m->elem_capacity >= 5000 && m->num_nodes == 10000);
    CHECK_OK(defo_mesh_validate(m));
    CHECK_OK(defo_mesh_set_group(m, 3, 7, "muscle"));
    CHECK_OK(defo_mesh_set_group(m, 3, 7, "tendon")); /* rename, not add */
    CHECK(m->num_groups == 1 && strcmp(m->groups[0].name, "tendon") == 0);
    CHECK(defo_mesh_set_group(m, 1, 7, "x") == DEFO_ERR_INVALID_ARGUMENT);
    defo_mesh_destroy(m);

    /* order 0 holds triangles only */
    CHECK_OK(defo_mesh_create(0, &m));
    defo_index v[4] = {0, 1, 2, 3};
    CHECK(defo_mesh_add_elem(m, v, 0) == DEFO_ERR_INVALID_ARGUMENT);
    defo_mesh_destroy(m);
}

static void test_validate(void) {
    defo_mesh *m = one_tet();
    CHECK_OK(defo_mesh_validate(m));
    m->elems[2] = 4; /* out of range */
    CHECK(defo_mesh_validate(m) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "element 0") != NULL);
    m->elems[2] = 1; /* repeated */
    CHECK(defo_mesh_validate(m) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "repeats node 1") != NULL);
    m->elems[2] = 2;
    m->x[7] = NAN;
    CHECK(defo_mesh_validate(m) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "node 2") != NULL);
    defo_mesh_destroy(m);
}

static void test_fields(void) {
    defo_mesh *m = one_tet();
    double temp[4] = {1, 2, 3, 4}, vel[12], stress[9];
    for (int i = 0; i < 12; i++) vel[i] = 0.5 * i;
    for (int i = 0; i < 9; i++) stress[i] = -i;
    CHECK_OK(defo_mesh_add_field(m, "temperature", DEFO_FIELD_POINT, 1, temp));
    CHECK_OK(defo_mesh_add_field(m, "velocity", DEFO_FIELD_POINT, 3, vel));
    CHECK_OK(defo_mesh_add_field(m, "stress", DEFO_FIELD_CELL, 9, stress));
    temp[0] = 99; /* the mesh holds a copy */
    const defo_field *f = defo_mesh_find_field(m, "temperature", DEFO_FIELD_POINT);
    CHECK(f && f->components == 1 && f->data[0] == 1 && f->data[3] == 4);
    CHECK(defo_mesh_find_field(m, "temperature", DEFO_FIELD_CELL) == NULL);
    CHECK(defo_mesh_find_field(m, "nope", DEFO_FIELD_POINT) == NULL);
    f = defo_mesh_find_field(m, "stress", DEFO_FIELD_CELL);
    CHECK(f && f->components == 9 && f->data[8] == -8);
    /* replace by name */
    CHECK_OK(defo_mesh_add_field(m, "temperature", DEFO_FIELD_POINT, 1, temp));
    CHECK(m->num_fields == 3);
    f = defo_mesh_find_field(m, "temperature", DEFO_FIELD_POINT);
    CHECK(f && f->data[0] == 99);
    /* fields follow the node count: new entries are zero, old ones kept */
    for (int i = 0; i < 100; i++) CHECK_OK(defo_mesh_add_node(m, i, 0, 0, NULL));
    f = defo_mesh_find_field(m, "velocity", DEFO_FIELD_POINT);
    CHECK(f && f->data[11] == 5.5 && f->data[3 * 103 + 2] == 0);
    char long_name[100];
    memset(long_name, 'a', 99);
    long_name[99] = 0;
    CHECK(defo_mesh_add_field(m, long_name, DEFO_FIELD_POINT, 1, temp) ==
          DEFO_ERR_INVALID_ARGUMENT);
    CHECK(defo_mesh_add_field(m, "zero", DEFO_FIELD_POINT, 0, temp) == DEFO_ERR_INVALID_ARGUMENT);
    defo_mesh_destroy(m);
}

/* A clone is equal in every array and independent of the original. */
/* defo_mesh_mean_edge against a hand count: the corner tet (0,0,0),
 * (1,0,0), (0,1,0), (0,0,2) has edges 1, 1, 2, √2, √5, √5 — mean
 * (4 + √2 + 2√5)/6; with a second copy shifted by 10 in x the mean is the
 * same (each edge counted once per element); no elements: 0. */
static void test_mean_edge(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(1, &m));
    if (!m) return;
    CHECK(defo_mesh_mean_edge(m) == 0.0);
    const double p[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 2}};
    for (int c = 0; c < 2; c++) {
        for (int k = 0; k < 4; k++)
            CHECK_OK(defo_mesh_add_node(m, p[k][0] + 10 * c, p[k][1], p[k][2], NULL));
        const defo_index e[4] = {4 * c, 4 * c + 1, 4 * c + 2, 4 * c + 3};
        CHECK_OK(defo_mesh_add_elem(m, e, 0));
        const double want = (4 + sqrt(2.0) + 2 * sqrt(5.0)) / 6;
        CHECK(fabs(defo_mesh_mean_edge(m) - want) < 1e-15 * want);
    }
    defo_mesh_destroy(m);
}

static void test_clone(void) {
    defo_mesh *m = box(2, 2, 2, DEFO_SPLIT_5, 2);
    if (!m) return;
    m->elem_tag = NULL;
    double *cell = calloc((size_t)m->num_elems, sizeof *cell);
    for (defo_index e = 0; e < m->num_elems; e++) cell[e] = 0.25 * e;
    CHECK_OK(defo_mesh_add_field(m, "J", DEFO_FIELD_CELL, 1, cell));
    CHECK_OK(defo_mesh_set_group(m, 3, 1, "body"));
    defo_index tri[6] = {0, 1, 2, 3, 4, 5};
    CHECK_OK(defo_mesh_add_tri(m, tri, 6, 5));
    defo_mesh *c = NULL;
    CHECK_OK(defo_mesh_clone(m, &c));
    if (!c) return;
    CHECK(c->num_nodes == m->num_nodes && c->num_elems == m->num_elems && c->order == 2 &&
          c->num_tris == 1 && c->nodes_per_tri == 6);
    CHECK(memcmp(c->x, m->x, 3 * (size_t)m->num_nodes * sizeof(double)) == 0);
    CHECK(memcmp(c->elems, m->elems, 10 * (size_t)m->num_elems * sizeof(defo_index)) == 0);
    CHECK(memcmp(c->tris, m->tris, 6 * sizeof(defo_index)) == 0 && c->tri_tag[0] == 5);
    CHECK(c->num_groups == 1 && strcmp(c->groups[0].name, "body") == 0);
    const defo_field *f = defo_mesh_find_field(c, "J", DEFO_FIELD_CELL);
    CHECK(f && f->data != m->fields[0].data &&
          memcmp(f->data, cell, (size_t)m->num_elems * sizeof *cell) == 0);
    c->x[0] += 1; /* independent */
    CHECK(m->x[0] != c->x[0]);
    CHECK_OK(defo_mesh_add_node(c, 0, 0, 0, NULL)); /* and growable */
    free(cell);
    defo_mesh_destroy(c);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------- orientation */
/* Reverse k chosen elements of a valid mesh; orient must flip exactly those
 * back.  For tet10 the edge nodes must follow: each edge node of the result
 * must still be the midpoint of its two corners (straight-sided mesh). */
static void check_orient(int order) {
    defo_mesh *m = box(3, 2, 2, DEFO_SPLIT_6, order);
    if (!m) return;
    int npe = m->nodes_per_elem;
    defo_index flipped = -1;
    CHECK_OK(defo_mesh_orient(m, &flipped));
    CHECK(flipped == 0);
    const int bad[5] = {0, 3, 17, 40, 71};
    for (int i = 0; i < 5; i++) {
        defo_index *v = m->elems + (size_t)bad[i] * npe;
        defo_index t = v[2];
        v[2] = v[3];
        v[3] = t; /* swap corners 2,3: edges (0,2)<->(0,3), (1,2)<->(1,3) */
        if (npe == 10) {
            t = v[6], v[6] = v[7], v[7] = t;
            t = v[5], v[5] = v[8], v[8] = t;
        }
    }
    defo_index inv = 0, first = -1;
    CHECK_OK(defo_mesh_count_inverted(m, NULL, &inv, &first));
    CHECK(inv == 5 && first == 0);
    CHECK_OK(defo_mesh_orient(m, &flipped));
    CHECK(flipped == 5);
    CHECK_OK(defo_mesh_count_inverted(m, NULL, &inv, NULL));
    CHECK(inv == 0);
    if (npe == 10) {
        double worst = 0;
        for (defo_index e = 0; e < m->num_elems; e++)
            for (int k = 0; k < 6; k++) {
                const defo_index *v = m->elems + (size_t)e * 10;
                defo_vec3 a = defo_v3_load(m->x + 3 * v[defo_tet_edges[k][0]]);
                defo_vec3 b = defo_v3_load(m->x + 3 * v[defo_tet_edges[k][1]]);
                defo_vec3 mid = defo_v3_load(m->x + 3 * v[4 + k]);
                worst = fmax(worst,
                             defo_v3_norm(defo_v3_sub(mid, defo_v3_scale(defo_v3_add(a, b), 0.5))));
            }
        CHECK(worst < 1e-14);
    }
    defo_mesh_destroy(m);
}
static void test_orient_tet4(void) {
    check_orient(1);
}
static void test_orient_tet10(void) {
    check_orient(2);
}

/* A flat element is rejected by index and nothing changes, even elements
 * that would have been flipped (atomicity). */
static void test_orient_flat(void) {
    defo_mesh *m = box(2, 2, 2, DEFO_SPLIT_5, 1);
    if (!m) return;
    defo_index *v = m->elems + 4 * 2;
    defo_index t = v[0];
    v[0] = v[1];
    v[1] = t; /* element 2 reversed */
    /* element 17 made flat: its 4th corner replaced by a new node at the
     * centroid of the other three (moving a shared node would touch others) */
    defo_index w = -1;
    const defo_index *u = m->elems + 4 * 17;
    double p[3];
    for (int k = 0; k < 3; k++)
        p[k] = (m->x[3 * u[0] + k] + m->x[3 * u[1] + k] + m->x[3 * u[2] + k]) / 3;
    CHECK_OK(defo_mesh_add_node(m, p[0], p[1], p[2], &w));
    m->elems[4 * 17 + 3] = w;
    size_t bytes = 4 * (size_t)m->num_elems * sizeof(defo_index);
    defo_index *before = malloc(bytes);
    memcpy(before, m->elems, bytes);
    defo_index flipped = 7;
    CHECK(defo_mesh_orient(m, &flipped) == DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "element 17 has zero volume") != NULL);
    CHECK(memcmp(before, m->elems, bytes) == 0);
    CHECK(flipped == 0);
    defo_element_rest *rest = NULL;
    CHECK(defo_element_rest_create(m, &rest) == DEFO_ERR_INVALID_MESH && rest == NULL);
    /* relative tolerance: the same flat shape is rejected at any scale, and
     * a tiny but well-shaped mesh is accepted */
    for (defo_index i = 0; i < m->num_nodes * 3; i++) m->x[i] *= 1e-9;
    CHECK(defo_mesh_orient(m, &flipped) == DEFO_ERR_INVALID_MESH);
    free(before);
    defo_mesh_destroy(m);
    m = box(2, 2, 2, DEFO_SPLIT_5, 1);
    for (defo_index i = 0; i < m->num_nodes * 3; i++) m->x[i] *= 1e-9;
    CHECK_OK(defo_mesh_orient(m, &flipped));
    CHECK(flipped == 0);
    defo_mesh_destroy(m);
}

/* ---------------------------------------------------------------- rest data */
/* The element layer's tet4 rest data (ITF04 §3): J⁻¹·Dm = I; weight = V =
 * det(Dm)/6; the force of a constant stress P on node i is P b_i with
 * b_i = −w J⁻ᵀ ∇ξN_i, which must be A_i N_i / 3 with N_i the outward unit
 * normal of the face opposite node i (analytic, from cross products; the old
 * Bm columns, now for all four nodes); the b_i sum to zero (closed element). */
static void test_rest_data(void) {
    defo_mesh *m = one_tet();
    defo_element_rest *r = NULL;
    CHECK_OK(defo_element_rest_create(m, &r));
    if (!r) return;
    const defo_element_ops *ops = defo_element_rest_ops(r);
    CHECK(ops->kind == DEFO_ELEMENT_TET4 && defo_element_rest_num_elems(r) == 1);
    defo_vec3 p[4];
    for (int i = 0; i < 4; i++) p[i] = defo_v3_load(tet_x + 3 * i);
    defo_mat3 dm = defo_m3_from_cols(defo_v3_sub(p[1], p[0]), defo_v3_sub(p[2], p[0]),
                                     defo_v3_sub(p[3], p[0]));
    defo_mat3 inv;
    memcpy(inv.m, defo_element_rest_jinv(r), sizeof inv.m);
    defo_mat3 id = defo_m3_mul(inv, dm);
    CHECK(defo_m3_maxabs(defo_m3_sub(id, defo_m3_identity())) < 1e-14);
    const double w = defo_element_rest_weight(r)[0];
    CHECK_NEAR(w, defo_m3_det(dm) / 6, 1e-15);
    CHECK_NEAR(defo_element_rest_volume(r)[0], defo_m3_det(dm) / 6, 1e-15);
    CHECK(w > 0);
    const defo_mat3 inv_t = defo_m3_transpose(inv);
    defo_vec3 sum = defo_v3(0, 0, 0);
    for (int i = 0; i < 4; i++) {
        const double *g = ops->stiffness.grad + 3 * i; /* ∇ξN_i at the centroid */
        defo_vec3 b = defo_v3_scale(defo_m3_mulv(inv_t, defo_v3(g[0], g[1], g[2])), -w);
        sum = defo_v3_add(sum, b);
        /* outward area vector of face opposite node i: from defo_tet_faces */
        const int *f = defo_tet_faces[i];
        defo_vec3 an = defo_v3_scale(
            defo_v3_cross(defo_v3_sub(p[f[1]], p[f[0]]), defo_v3_sub(p[f[2]], p[f[0]])), 0.5);
        /* outward check independent of the table: points away from node i */
        CHECK(defo_v3_dot(an, defo_v3_sub(p[f[0]], p[i])) > 0);
        CHECK(defo_v3_norm(defo_v3_sub(b, defo_v3_scale(an, 1.0 / 3))) < 1e-14);
    }
    CHECK(defo_v3_norm(sum) < 1e-14);
    defo_element_rest_destroy(r);
    defo_mesh_destroy(m);
}

/* -------------------------------------------------------------------- mass */
/* ∫λ^k dV over a tet = k!·3!/(k+3)!·V (exact monomial formula).  From it the
 * consistent-mass diagonal of tet10 shape functions, independently of the
 * library: corner N = λ(2λ-1), edge N = 4λaλb. */
static double fact(int n) {
    return n <= 1 ? 1 : n * fact(n - 1);
}
static double mono(int a, int b) { /* ∫λ0^a λ1^b / V */
    return fact(a) * fact(b) * 6.0 / fact(a + b + 3);
}

static void test_lumped_mass(void) {
    const double rho = 1070; /* kg/m^3, flesh */
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = box(3, 2, 4, DEFO_SPLIT_6, order);
        if (!m) return;
        double *mass = malloc((size_t)m->num_nodes * sizeof *mass);
        CHECK_OK(defo_element_lumped_mass(m, rho, NULL, mass));
        double total = 0, mn = INFINITY;
        for (defo_index i = 0; i < m->num_nodes; i++) total += mass[i], mn = fmin(mn, mass[i]);
        double V = 1.0 * 0.7 * 1.3;
        CHECK_NEAR(total, rho * V, 1e-12 * rho * V); /* conserved quantity: ρV */
        CHECK(mn > 0);
        /* per-element density: two materials */
        double *dens = malloc((size_t)m->num_elems * sizeof *dens);
        double expect = 0, vol = 0;
        defo_element_rest *r = NULL;
        CHECK_OK(defo_element_rest_create(m, &r));
        const double *ve = r ? defo_element_rest_volume(r) : NULL;
        for (defo_index e = 0; ve && e < m->num_elems; e++) {
            dens[e] = e % 2 ? 1000 : 7800;
            expect += dens[e] * ve[e];
            vol += ve[e];
        }
        CHECK_NEAR(vol, V, 1e-12);
        CHECK_OK(defo_element_lumped_mass(m, 0.0, dens, mass));
        total = 0;
        for (defo_index i = 0; i < m->num_nodes; i++) total += mass[i];
        CHECK_NEAR(total, expect, 1e-12 * expect);
        dens[3] = -1;
        CHECK(defo_element_lumped_mass(m, 0.0, dens, mass) == DEFO_ERR_INVALID_ARGUMENT);
        CHECK(strstr(defo_last_error(), "element 3") != NULL);
        CHECK(defo_element_lumped_mass(m, NAN, NULL, mass) == DEFO_ERR_INVALID_ARGUMENT);
        defo_element_rest_destroy(r);
        free(dens);
        free(mass);
        defo_mesh_destroy(m);
    }
    /* one tet10: HRZ values against the monomial formula */
    defo_mesh *t4 = one_tet(), *t10 = NULL;
    CHECK_OK(defo_mesh_to_quadratic(t4, &t10));
    if (!t10) return;
    double mass[10], V = 0;
    CHECK_OK(defo_element_volume(t4, NULL, &V));
    CHECK_OK(defo_element_lumped_mass(t10, 1.0, NULL, mass));
    double corner = 4 * mono(4, 0) - 4 * mono(3, 0) + mono(2, 0); /* ∫(2λ²-λ)² / V */
    double edge = 16 * mono(2, 2);                                /* ∫16λa²λb² / V */
    CHECK_NEAR(corner, 1.0 / 70, 1e-15);
    CHECK_NEAR(edge, 8.0 / 105, 1e-15);
    double scale = 1.0 / (4 * corner + 6 * edge);
    for (int i = 0; i < 4; i++) CHECK_NEAR(mass[i], scale * corner * V, 1e-15);
    for (int i = 4; i < 10; i++) CHECK_NEAR(mass[i], scale * edge * V, 1e-15);
    CHECK_NEAR(mass[0], V / 36, 1e-15);
    CHECK_NEAR(mass[4], 4 * V / 27, 1e-15);
    TEST_REPORT("tet10 HRZ: corner %.6f V (1/36), edge %.6f V (4/27)", mass[0] / V, mass[4] / V);
    defo_mesh_destroy(t4);
    defo_mesh_destroy(t10);
}

/* Volume of a curved tet10.  Moving only edge node (0,1) by δ changes the
 * map to x = x_lin + δ·N4, N4 = 4λ0λ1, so J = Dm + δ ⊗ ∇ξN4 (rank one) and,
 * by the matrix determinant lemma, det J = det Dm (1 + ∇ξN4 · Dm⁻¹δ) exactly.
 * ∫∇ξN4 over the reference tet = (∇λ0 + ∇λ1)/6 = (0,-1,-1)/6, hence the
 * analytic V = V0 + det Dm · ((0,-1,-1)·Dm⁻¹δ)/6. */
static void test_volume_tet10(void) {
    defo_mesh *t4 = one_tet(), *t10 = NULL;
    CHECK_OK(defo_mesh_to_quadratic(t4, &t10));
    if (!t10) return;
    defo_vec3 delta = defo_v3(0.05, -0.1, 0.07);
    t10->x[3 * 4 + 0] += delta.x, t10->x[3 * 4 + 1] += delta.y, t10->x[3 * 4 + 2] += delta.z;
    double V = 0, V4 = 0;
    CHECK_OK(defo_element_volume(t10, NULL, &V));
    CHECK_OK(defo_element_volume(t4, NULL, &V4));
    defo_vec3 p[4];
    for (int i = 0; i < 4; i++) p[i] = defo_v3_load(tet_x + 3 * i);
    defo_mat3 dm = defo_m3_from_cols(defo_v3_sub(p[1], p[0]), defo_v3_sub(p[2], p[0]),
                                     defo_v3_sub(p[3], p[0])),
              inv;
    CHECK(defo_m3_inverse(dm, &inv));
    defo_vec3 w = defo_m3_mulv(inv, delta);
    double exact = V4 + defo_m3_det(dm) * (-w.y - w.z) / 6;
    CHECK_NEAR(V, exact, 1e-14);
    CHECK(fabs(V - V4) > 1e-3); /* the bulge is really there */
    TEST_REPORT("curved tet10 volume %.9f, analytic %.9f (straight %.9f)", V, exact, V4);
    /* straight tet10 = tet4 volume to rounding */
    defo_mesh_destroy(t10);
    CHECK_OK(defo_mesh_to_quadratic(t4, &t10));
    CHECK_OK(defo_element_volume(t10, NULL, &V));
    CHECK_NEAR(V, V4, 1e-14);
    defo_mesh_destroy(t4);
    defo_mesh_destroy(t10);
}

static void test_bbox(void) {
    defo_mesh *m = one_tet();
    double lo[3], hi[3];
    CHECK_OK(defo_mesh_bbox(m, lo, hi));
    CHECK(lo[0] == 0.1 && lo[1] == -0.2 && lo[2] == 0.2 && hi[0] == 1.3 && hi[1] == 0.9 &&
          hi[2] == 1.6);
    defo_mesh_destroy(m);
    CHECK_OK(defo_mesh_create(1, &m));
    CHECK(defo_mesh_bbox(m, lo, hi) == DEFO_ERR_INVALID_MESH);
    defo_mesh_destroy(m);
}

/* ---------------------------------------------------------------- topology */
static void test_edges_and_euler(void) {
    defo_mesh *m = one_tet();
    defo_edges ed;
    CHECK_OK(defo_mesh_edges(m, 1, &ed));
    CHECK(ed.num_edges == 6);
    for (int k = 0; k < 6; k++) {
        /* elem_edges maps VTK edge k to the sorted pair of its corners */
        defo_index e = ed.elem_edges[k];
        defo_index a = defo_tet_edges[k][0], b = defo_tet_edges[k][1];
        CHECK(ed.nodes[2 * e] == (a < b ? a : b) && ed.nodes[2 * e + 1] == (a < b ? b : a));
    }
    defo_edges_free(&ed);
    defo_mesh_destroy(m);
    /* solid box (a ball): V - E + F - T = 1 with F = (4T + boundary)/2 */
    for (int split = 0; split < 3; split++) {
        m = box(3, 4, 2, (defo_box_split)split, 1);
        if (!m) return;
        CHECK_OK(defo_mesh_edges(m, 0, &ed));
        defo_boundary b;
        CHECK_OK(defo_mesh_boundary(m, 0, &b));
        long F = (4L * m->num_elems + b.num_faces) / 2;
        long chi = (long)m->num_nodes - ed.num_edges + F - m->num_elems;
        CHECK_MSG(chi == 1, "split %d: V-E+F-T = %ld", split, chi);
        int sorted = 1;
        for (defo_index k = 1; k < ed.num_edges; k++)
            sorted &= ed.nodes[2 * k - 2] < ed.nodes[2 * k] ||
                      (ed.nodes[2 * k - 2] == ed.nodes[2 * k] &&
                       ed.nodes[2 * k - 1] < ed.nodes[2 * k + 1]);
        CHECK(sorted);
        if (split == 0) {
            /* Kuhn on 3x4x2 cells (4x5x3 nodes): axis edges x 3·5·3, y 4·4·3,
             * z 4·5·2; one diagonal per face: xy 3·4·3, yz 4·2·4, xz 3·2·5;
             * one per cube 3·4·2 */
            long expect = 45 + 48 + 40 + 36 + 32 + 30 + 24;
            CHECK(ed.num_edges == expect);
        }
        defo_boundary_free(&b);
        defo_edges_free(&ed);
        defo_mesh_destroy(m);
    }
}

/* Boundary of a box: area 2(ab+bc+ca), every face outward (normal points away
 * from its element's centroid) and Σ A n·c = 3V (divergence theorem); tet10
 * boundary triangles carry the edge nodes of their corner pairs. */
static void test_boundary(void) {
    defo_mesh *m = box(3, 2, 4, DEFO_SPLIT_5, 2);
    if (!m) return;
    defo_boundary b;
    CHECK_OK(defo_mesh_boundary(m, 1, &b));
    CHECK(b.nodes_per_face == 6);
    CHECK(b.num_faces == 2 * 2 * (3 * 2 + 2 * 4 + 3 * 4));
    double area = 0, flux = 0;
    int outward = 1, midpoints = 1;
    for (defo_index f = 0; f < b.num_faces; f++) {
        const defo_index *t = b.faces + 6 * f;
        defo_vec3 p0 = defo_v3_load(m->x + 3 * t[0]), p1 = defo_v3_load(m->x + 3 * t[1]),
                  p2 = defo_v3_load(m->x + 3 * t[2]);
        defo_vec3 an = defo_v3_scale(defo_v3_cross(defo_v3_sub(p1, p0), defo_v3_sub(p2, p0)), 0.5);
        defo_vec3 c = defo_v3_scale(defo_v3_add(defo_v3_add(p0, p1), p2), 1.0 / 3);
        const defo_index *v = m->elems + 10 * (size_t)b.elem[f];
        defo_vec3 ec = defo_v3(0, 0, 0);
        for (int a = 0; a < 4; a++) ec = defo_v3_axpy(ec, 0.25, defo_v3_load(m->x + 3 * v[a]));
        outward &= defo_v3_dot(an, defo_v3_sub(c, ec)) > 0;
        /* the face is opposite local corner local_face: that corner is not on it */
        for (int k = 0; k < 3; k++) outward &= t[k] != v[b.local_face[f]];
        area += defo_v3_norm(an);
        flux += defo_v3_dot(an, c);
        defo_vec3 q[3] = {p0, p1, p2};
        for (int k = 0; k < 3; k++) {
            defo_vec3 mid = defo_v3_scale(defo_v3_add(q[k], q[(k + 1) % 3]), 0.5);
            midpoints &= defo_v3_norm(defo_v3_sub(mid, defo_v3_load(m->x + 3 * t[3 + k]))) < 1e-14;
        }
    }
    CHECK(outward);
    CHECK(midpoints);
    double A = 2 * (1.0 * 0.7 + 0.7 * 1.3 + 1.3 * 1.0), V = 1.0 * 0.7 * 1.3;
    CHECK_NEAR(area, A, 1e-12);
    CHECK_NEAR(flux, 3 * V, 1e-12);
    defo_boundary_free(&b);
    /* a face shared by three elements is invalid */
    defo_mesh *t = one_tet();
    defo_index v1[4] = {0, 2, 1, 3};
    CHECK_OK(defo_mesh_add_elem(t, v1, 0));
    CHECK_OK(defo_mesh_add_elem(t, v1, 0));
    CHECK(defo_mesh_boundary(t, 0, &b) == DEFO_ERR_INVALID_MESH);
    CHECK(b.faces == NULL);
    defo_mesh_destroy(t);
    defo_mesh_destroy(m);
}

/* Two disjoint boxes in one mesh: 2 components, labels by first element. */
static void test_components(void) {
    defo_mesh *a = box(2, 2, 2, DEFO_SPLIT_6, 1), *b = box(1, 3, 1, DEFO_SPLIT_24, 1);
    if (!a || !b) return;
    defo_index off = a->num_nodes, na = a->num_elems;
    for (defo_index i = 0; i < b->num_nodes; i++)
        CHECK_OK(defo_mesh_add_node(a, b->x[3 * i] + 5, b->x[3 * i + 1], b->x[3 * i + 2], NULL));
    for (defo_index e = 0; e < b->num_elems; e++) {
        defo_index v[4];
        for (int k = 0; k < 4; k++) v[k] = b->elems[4 * e + k] + off;
        CHECK_OK(defo_mesh_add_elem(a, v, 0));
    }
    defo_index *comp = malloc((size_t)a->num_elems * sizeof *comp), nc = 0;
    CHECK_OK(defo_mesh_components(a, comp, &nc));
    CHECK(nc == 2);
    int ok = 1;
    for (defo_index e = 0; e < a->num_elems; e++) ok &= comp[e] == (e < na ? 0 : 1);
    CHECK(ok);
    free(comp);
    defo_mesh_destroy(a);
    defo_mesh_destroy(b);
}

/* Node→element incidence: every (element, local) pair appears exactly once,
 * under the right node, in increasing element order. */
static void test_node_elems(void) {
    defo_mesh *m = box(2, 3, 2, DEFO_SPLIT_5, 2);
    if (!m) return;
    defo_node_elems ne;
    CHECK_OK(defo_mesh_node_elems(m, &ne));
    CHECK(ne.offset[m->num_nodes] == 10 * (int64_t)m->num_elems);
    int ok = 1;
    for (defo_index n = 0; n < m->num_nodes; n++)
        for (int64_t k = ne.offset[n]; k < ne.offset[n + 1]; k++) {
            ok &= m->elems[10 * (size_t)ne.elem[k] + ne.local[k]] == n;
            if (k > ne.offset[n]) ok &= ne.elem[k] > ne.elem[k - 1];
        }
    CHECK(ok);
    defo_node_elems_free(&ne);
    defo_mesh_destroy(m);
}

/* tet10 elevation: one node per unique edge at its midpoint, shared. */
static void test_to_quadratic(void) {
    defo_mesh *m = box(2, 2, 3, DEFO_SPLIT_6, 1), *q = NULL;
    if (!m) return;
    defo_edges ed;
    CHECK_OK(defo_mesh_edges(m, 0, &ed));
    CHECK_OK(defo_mesh_to_quadratic(m, &q));
    if (!q) return;
    CHECK(q->num_nodes == m->num_nodes + ed.num_edges && q->order == 2);
    double worst = 0;
    for (defo_index e = 0; e < q->num_elems; e++)
        for (int k = 0; k < 6; k++) {
            const defo_index *v = q->elems + 10 * (size_t)e;
            defo_vec3 a = defo_v3_load(q->x + 3 * v[defo_tet_edges[k][0]]),
                      b = defo_v3_load(q->x + 3 * v[defo_tet_edges[k][1]]);
            worst = fmax(worst, defo_v3_norm(defo_v3_sub(defo_v3_load(q->x + 3 * v[4 + k]),
                                                         defo_v3_scale(defo_v3_add(a, b), 0.5))));
        }
    CHECK(worst < 1e-15);
    defo_edges_free(&ed);
    defo_mesh_destroy(q);
    defo_mesh_destroy(m);
}

/* ---------------------------------------------------------------- quality */
static void test_quality(void) {
    /* regular tet: vertices of a cube's alternate corners */
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(1, &m));
    CHECK_OK(defo_mesh_add_node(m, 1, 1, 1, NULL));
    CHECK_OK(defo_mesh_add_node(m, 1, -1, -1, NULL));
    CHECK_OK(defo_mesh_add_node(m, -1, 1, -1, NULL));
    CHECK_OK(defo_mesh_add_node(m, -1, -1, 1, NULL));
    defo_index v[4] = {0, 1, 2, 3};
    CHECK_OK(defo_mesh_add_elem(m, v, 0));
    defo_index fl;
    CHECK_OK(defo_mesh_orient(m, &fl));
    double lo, hi, ar;
    CHECK_OK(defo_mesh_quality(m, NULL, &lo, &hi, &ar));
    double reg = acos(1.0 / 3) * 180 / 3.14159265358979323846; /* 70.5288° */
    CHECK_NEAR(lo, reg, 1e-10);
    CHECK_NEAR(hi, reg, 1e-10);
    CHECK_NEAR(ar, 1.0, 1e-12);
    defo_quality_summary q;
    CHECK_OK(defo_mesh_quality_summary(m, NULL, &q));
    CHECK(q.min_dihedral_hist[7] == 1 && q.inverted == 0 && q.worst_elem == 0);
    /* right-corner tet (0, e1, e2, e3): dihedral angles 90° at the three axis
     * edges, acos(1/sqrt(3)) = 54.74° at the three slanted ones; inradius
     * 1/(3+sqrt(3)), longest edge sqrt(2) */
    defo_mesh *c = one_tet();
    const double corner[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(c->x, corner, sizeof corner);
    CHECK_OK(defo_mesh_quality(c, NULL, &lo, &hi, &ar));
    CHECK_NEAR(lo, acos(1 / sqrt(3.0)) * 180 / 3.14159265358979323846, 1e-10);
    CHECK_NEAR(hi, 90, 1e-10);
    CHECK_NEAR(ar, sqrt(2.0) * (3 + sqrt(3.0)) / (2 * sqrt(6.0)), 1e-12);
    /* deformed positions: an inverted copy is counted, same angles */
    double x[12];
    memcpy(x, corner, sizeof x);
    x[11] = -1;
    CHECK_OK(defo_mesh_quality_summary(c, x, &q));
    CHECK(q.inverted == 1);
    CHECK_NEAR(q.min_dihedral, 54.735610317245346, 1e-9);
    /* flat: infinite aspect ratio */
    x[11] = 0;
    CHECK_OK(defo_mesh_quality(c, x, &lo, &hi, &ar));
    CHECK(isinf(ar));
    defo_mesh_destroy(c);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------- failing allocator */
/* Make allocation k fail (CHOLMOD-style): every call must either succeed or
 * fail with DEFO_ERR_OUT_OF_MEMORY, and nothing may leak. */
static int64_t alloc_budget;
static void *failing_alloc(size_t size, void *user) {
    (void)user;
    if (alloc_budget-- == 0) return NULL;
    return malloc(size);
}
static void plain_free(void *p, void *user) {
    (void)user;
    free(p);
}

static void test_out_of_memory(void) {
    int64_t base = defo_allocated_bytes();
    defo_set_allocator(failing_alloc, plain_free, NULL);
    int failures = 0, bad = 0;
    for (int k = 0; k < TEST_HEAVY(400); k++) {
        alloc_budget = k;
        defo_sphere_def d = defo_default_sphere_def();
        d.cell_size = 0.5;
        d.order = 2;
        defo_mesh *m = NULL;
        defo_status s = defo_generate_sphere(&d, &m);
        if (s == DEFO_OK) {
            defo_boundary b;
            s = defo_mesh_boundary(m, 1, &b);
            if (!s) defo_boundary_free(&b);
            defo_mesh *c = NULL;
            if (!s) s = defo_mesh_clone(m, &c);
            defo_mesh_destroy(c);
            /* a failed append leaves the mesh valid */
            for (int i = 0; i < 200 && !s; i++) s = defo_mesh_add_node(m, 0, 0, 0, NULL);
            CHECK_OK(defo_mesh_validate(m));
            defo_mesh_destroy(m);
        } else {
            bad |= m != NULL;
        }
        if (s) {
            failures++;
            bad |= s != DEFO_ERR_OUT_OF_MEMORY;
        }
        bad |= defo_allocated_bytes() != base;
    }
    defo_set_allocator(NULL, NULL, NULL);
    CHECK(!bad);
    CHECK(failures > 0);
    TEST_REPORT("%d injected allocation failures handled", failures);
}

int main(void) {
    RUN(test_lifecycle_growth);
    RUN(test_validate);
    RUN(test_fields);
    RUN(test_clone);
    RUN(test_mean_edge);
    RUN(test_orient_tet4);
    RUN(test_orient_tet10);
    RUN(test_orient_flat);
    RUN(test_rest_data);
    RUN(test_lumped_mass);
    RUN(test_volume_tet10);
    RUN(test_bbox);
    RUN(test_edges_and_euler);
    RUN(test_boundary);
    RUN(test_components);
    RUN(test_node_elems);
    RUN(test_to_quadratic);
    RUN(test_quality);
    RUN(test_out_of_memory);
    return test_summary();
}
