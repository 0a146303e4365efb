/*
 * element/tet.c — the tet4, tet10 and tri3 ops tables (defo/element.h):
 * shape functions, their ξ-gradients, faces, and the rules tabulated once.
 *
 * tet10 shape functions (MTPS08 §4.1, complete quadratics in barycentric
 * form): corner a: N = λ_a(2λ_a − 1), ∂N/∂λ_a = 4λ_a − 1; edge (a, b):
 * N = 4λ_aλ_b, ∂N/∂λ_a = 4λ_b, ∂N/∂λ_b = 4λ_a.  With ξ = (λ1, λ2, λ3) and
 * λ0 = 1 − Σξ: ∂N/∂ξ_k = ∂N/∂λ_k − ∂N/∂λ_0.
 *
 * Faces: face f is opposite corner f, corners counter-clockwise from outside
 * for a positively oriented element (defo_tet_faces of defo/mesh.h), then the
 * edge nodes of its edges (c0,c1) (c1,c2) (c2,c0).
 *
 * tri3 (shells and cloth, ITF04 §8): N_a = λ_a on the triangle (λ3 = 0),
 * reference coordinates ξ = (λ1, λ2) and a third direction along the unit
 * normal (∂N/∂ξ3 = 0), so dX/dξ = [X1 − X0, X2 − X0, N̂] and det J = 2A.
 * Its one face is the triangle itself.
 *
 * The tabulated values live in static arrays filled once (pthread_once), so
 * the ops tables are immutable and safe to read from any thread afterwards.
 */
#include "element/element_internal.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

static void tet4_shape(const double l[4], double *N) {
    for (int a = 0; a < 4; a++) N[a] = l[a];
}

static void tet4_grad(const double l[4], double *dN) {
    (void)l;
    static const double g[12] = {-1, -1, -1, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    memcpy(dN, g, sizeof g);
}

static void tri3_shape(const double l[4], double *N) {
    for (int a = 0; a < 3; a++) N[a] = l[a];
}

static void tri3_grad(const double l[4], double *dN) {
    (void)l;
    static const double g[9] = {-1, -1, 0, 1, 0, 0, 0, 1, 0};
    memcpy(dN, g, sizeof g);
}

/* The triangle rules: its centroid, and the degree-2 rule of the points
 * (2/3, 1/6, 1/6) and permutations, weights 1/3 (λ3 = 0). */
static const double tri_centroid_point[1][4] = {{1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 0.0}};
static const double tri_centroid_weight[1] = {1.0};
static const double tri3pt_point[3][4] = {{2.0 / 3.0, 1.0 / 6.0, 1.0 / 6.0, 0.0},
                                          {1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0, 0.0},
                                          {1.0 / 6.0, 1.0 / 6.0, 2.0 / 3.0, 0.0}};
static const double tri3pt_weight[3] = {1.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0};

static void tet10_shape(const double l[4], double *N) {
    for (int a = 0; a < 4; a++) N[a] = l[a] * (2.0 * l[a] - 1.0);
    for (int e = 0; e < 6; e++) N[4 + e] = 4.0 * l[defo_tet_edges[e][0]] * l[defo_tet_edges[e][1]];
}

static void tet10_grad(const double l[4], double *dN) {
    double dl[10][4]; /* ∂N/∂λ */
    memset(dl, 0, sizeof dl);
    for (int a = 0; a < 4; a++) dl[a][a] = 4.0 * l[a] - 1.0;
    for (int e = 0; e < 6; e++) {
        int a = defo_tet_edges[e][0], b = defo_tet_edges[e][1];
        dl[4 + e][a] = 4.0 * l[b];
        dl[4 + e][b] = 4.0 * l[a];
    }
    for (int n = 0; n < 10; n++)
        for (int k = 0; k < 3; k++) dN[3 * n + k] = dl[n][k + 1] - dl[n][0];
}

void defo_tri6_shape(const double l[3], double N[6]) {
    for (int a = 0; a < 3; a++) N[a] = l[a] * (2.0 * l[a] - 1.0);
    N[3] = 4.0 * l[0] * l[1];
    N[4] = 4.0 * l[1] * l[2];
    N[5] = 4.0 * l[2] * l[0];
}

/* Local node of the edge node joining corners a and b of a tet10. */
static int edge_node(int a, int b) {
    for (int e = 0; e < 6; e++)
        if ((defo_tet_edges[e][0] == a && defo_tet_edges[e][1] == b) ||
            (defo_tet_edges[e][0] == b && defo_tet_edges[e][1] == a))
            return 4 + e;
    return -1;
}

static int tet4_faces[4 * 3], tet10_faces[4 * 6];
static double t4_stiff_shape[1 * 4], t4_stiff_grad[1 * 12];
static double t4_mass_shape[4 * 4], t4_mass_grad[4 * 12];
static double t4_face_shape[16 * 3];
static double t10_stiff_shape[4 * 10], t10_stiff_grad[4 * 30];
static double t10_mass_shape[64 * 10], t10_mass_grad[64 * 30];
static double t10_face_shape[16 * 6];

static int tri3_faces[3] = {0, 1, 2};
static double tr_stiff_shape[1 * 3], tr_stiff_grad[1 * 9];
static double tr_mass_shape[3 * 3], tr_mass_grad[3 * 9];

static defo_element_ops ops_tet4, ops_tet10, ops_tri3;

static defo_quadrature rule(int n, int degree, const double *pt, const double *w, double *shape,
                            double *grad, int nodes, void (*sh)(const double *, double *),
                            void (*gr)(const double *, double *)) {
    for (int q = 0; q < n; q++) {
        sh(pt + 4 * q, shape + nodes * q);
        gr(pt + 4 * q, grad + 3 * nodes * q);
    }
    defo_quadrature r = {n, degree, pt, w, shape, grad};
    return r;
}

static defo_quadrature face_rule(int face_nodes, double *shape) {
    for (int q = 0; q < 16; q++) {
        const double *l = defo_rule_tri16_point[q];
        if (face_nodes == 3)
            memcpy(shape + 3 * q, l, 3 * sizeof(double));
        else
            defo_tri6_shape(l, shape + 6 * q);
    }
    defo_quadrature r = {16, 7, &defo_rule_tri16_point[0][0], defo_rule_tri16_weight, shape, NULL};
    return r;
}

static void init_tables(void) {
    for (int f = 0; f < 4; f++) {
        for (int c = 0; c < 3; c++) {
            tet4_faces[3 * f + c] = defo_tet_faces[f][c];
            tet10_faces[6 * f + c] = defo_tet_faces[f][c];
        }
        for (int c = 0; c < 3; c++)
            tet10_faces[6 * f + 3 + c] =
                edge_node(defo_tet_faces[f][c], defo_tet_faces[f][(c + 1) % 3]);
    }
    defo_element_ops *o = &ops_tet4;
    o->kind = DEFO_ELEMENT_TET4;
    o->name = "tet4";
    o->order = 1;
    o->nodes = 4;
    o->corners = 4;
    o->num_faces = 4;
    o->face_nodes = 3;
    o->face = tet4_faces;
    o->shape = tet4_shape;
    o->shape_grad = tet4_grad;
    o->stiffness = rule(1, 1, &defo_rule_centroid_point[0][0], defo_rule_centroid_weight,
                        t4_stiff_shape, t4_stiff_grad, 4, tet4_shape, tet4_grad);
    o->mass = rule(4, 2, &defo_rule_stroud4_point[0][0], defo_rule_stroud4_weight, t4_mass_shape,
                   t4_mass_grad, 4, tet4_shape, tet4_grad);
    o->face_rule = face_rule(3, t4_face_shape);

    o = &ops_tet10;
    o->kind = DEFO_ELEMENT_TET10;
    o->name = "tet10";
    o->order = 2;
    o->nodes = 10;
    o->corners = 4;
    o->num_faces = 4;
    o->face_nodes = 6;
    o->face = tet10_faces;
    o->shape = tet10_shape;
    o->shape_grad = tet10_grad;
    o->stiffness = rule(4, 2, &defo_rule_stroud4_point[0][0], defo_rule_stroud4_weight,
                        t10_stiff_shape, t10_stiff_grad, 10, tet10_shape, tet10_grad);
    o->mass = rule(64, 7, &defo_rule_tet64_point[0][0], defo_rule_tet64_weight, t10_mass_shape,
                   t10_mass_grad, 10, tet10_shape, tet10_grad);
    o->face_rule = face_rule(6, t10_face_shape);

    o = &ops_tri3;
    o->kind = DEFO_ELEMENT_TRI3;
    o->name = "tri3";
    o->order = 1;
    o->nodes = 3;
    o->corners = 3;
    o->num_faces = 1;
    o->face_nodes = 3;
    o->face = tri3_faces;
    o->shape = tri3_shape;
    o->shape_grad = tri3_grad;
    o->stiffness = rule(1, 1, &tri_centroid_point[0][0], tri_centroid_weight, tr_stiff_shape,
                        tr_stiff_grad, 3, tri3_shape, tri3_grad);
    o->mass = rule(3, 2, &tri3pt_point[0][0], tri3pt_weight, tr_mass_shape, tr_mass_grad, 3,
                   tri3_shape, tri3_grad);
    o->face_rule = ops_tet4.face_rule; /* the same 3-node face */
}

static pthread_once_t once = PTHREAD_ONCE_INIT;

const defo_element_ops *defo_element_ops_of(defo_element_kind kind) {
    pthread_once(&once, init_tables);
    switch (kind) {
    case DEFO_ELEMENT_TET4:
        return &ops_tet4;
    case DEFO_ELEMENT_TET10:
        return &ops_tet10;
    case DEFO_ELEMENT_TRI3:
        return &ops_tri3;
    }
    defo_error(DEFO_ERR_INVALID_ARGUMENT, "element kind %d is unknown", (int)kind);
    return NULL;
}

const defo_element_ops *defo_element_ops_for_mesh(const defo_mesh *mesh) {
    if (!mesh) {
        defo_error(DEFO_ERR_INVALID_ARGUMENT, "element ops: mesh is NULL");
        return NULL;
    }
    if (mesh->order == 1 && mesh->nodes_per_elem == 4)
        return defo_element_ops_of(DEFO_ELEMENT_TET4);
    if (mesh->order == 2 && mesh->nodes_per_elem == 10)
        return defo_element_ops_of(DEFO_ELEMENT_TET10);
    if (mesh->order == 1 && mesh->nodes_per_elem == 3)
        return defo_element_ops_of(DEFO_ELEMENT_TRI3);
    defo_error(DEFO_ERR_INVALID_ARGUMENT,
               "the mesh holds no elements (order %d, %d nodes per element): a volume mesh of "
               "tet4 or tet10 elements or a shell of triangles (defo_mesh_shell_from_triangles) "
               "is needed",
               mesh->order, mesh->nodes_per_elem);
    return NULL;
}

void defo_element_jacobian(const defo_element_ops *ops, const double *x, const defo_index *v,
                           const double bary[4], double J[9]) {
    double dN[3 * DEFO_ELEMENT_MAX_NODES];
    ops->shape_grad(bary, dN);
    for (int k = 0; k < 9; k++) J[k] = 0.0;
    for (int a = 0; a < ops->nodes; a++) {
        const double *p = x + 3 * (size_t)v[a];
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) J[3 * r + k] += p[r] * dN[3 * a + k];
    }
    if (ops->kind == DEFO_ELEMENT_TRI3) {
        /* third column: the unit normal (zero for a degenerate triangle) */
        const double n[3] = {J[3] * J[7] - J[6] * J[4], J[6] * J[1] - J[0] * J[7],
                             J[0] * J[4] - J[3] * J[1]};
        const double l = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        for (int r = 0; r < 3; r++) J[3 * r + 2] = l > 0 ? n[r] / l : 0.0;
    }
}

double defo_element_ref_measure(const defo_element_ops *ops) {
    return ops->kind == DEFO_ELEMENT_TRI3 ? 0.5 : 1.0 / 6.0;
}

double defo_element_corner_length(const double *x, const defo_index *v) {
    return defo_element_corner_length_n(x, v, 4);
}

double defo_element_corner_length_n(const double *x, const defo_index *v, int corners) {
    double l2 = 0;
    for (int e = 0; e < (corners == 3 ? 3 : 6); e++) {
        const double *a = x + 3 * (size_t)v[defo_tet_edges[e][0]];
        const double *b = x + 3 * (size_t)v[defo_tet_edges[e][1]];
        double d0 = b[0] - a[0], d1 = b[1] - a[1], d2 = b[2] - a[2];
        double s = d0 * d0 + d1 * d1 + d2 * d2;
        if (s > l2) l2 = s;
    }
    return sqrt(l2);
}
