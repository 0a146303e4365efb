/*
 * tests/test_partition.c — element partitions of distributed runs
 * (defo/partition.h), on one process: every part's work computed here one
 * after the other.
 *
 *   - every element has exactly one part, parts are balanced, every node's
 *     owner is a part of one of its elements (METIS and coordinate
 *     bisection, tet4 and tet10, 1 to 7 parts);
 *   - the local elements of a part are exactly those touching a node it
 *     owns, and over all parts every element is counted exactly once;
 *   - the claim the distributed force model rests on: a force model over a
 *     part's local elements gives every owned node the force, the tangent
 *     product, the diagonal block and the assembled matrix row of the whole
 *     body's model BIT FOR BIT (same elements, same summation order), and
 *     the parts' counted energies add up to the body's;
 *   - a two-tet mesh split by hand: owners and local sets as the rule says.
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/geometry.h"
#include "defo/mesh.h"
#include "defo/partition.h"
#include "defo/sparse.h"
#include "test.h"

static defo_mesh *bar(int order, int cells) {
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = 1.0, bd.size[1] = 0.25, bd.size[2] = 0.25;
    bd.cells[0] = 4 * cells, bd.cells[1] = cells, bd.cells[2] = cells;
    bd.order = order;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    return m;
}

/* The partition's invariants, and its local sets. */
static void check_partition(const defo_mesh *m, const defo_partition *P, const char *what) {
    const int npe = m->nodes_per_elem, parts = P->parts;
    defo_index *size = calloc((size_t)parts, sizeof *size);
    int *counted = calloc((size_t)m->num_elems, sizeof *counted);
    int bad_part = 0, bad_owner = 0, missing = 0, extra = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        if (P->elem_part[e] < 0 || P->elem_part[e] >= parts)
            bad_part++;
        else
            size[P->elem_part[e]]++;
    }
    /* the owner is the part of one of the node's elements */
    unsigned char *ok = calloc((size_t)m->num_nodes, 1);
    for (defo_index e = 0; e < m->num_elems; e++)
        for (int a = 0; a < npe; a++) {
            const defo_index v = m->elems[(size_t)e * npe + a];
            if (P->node_owner[v] == P->elem_part[e]) ok[v] = 1;
        }
    for (defo_index i = 0; i < m->num_nodes; i++) bad_owner += !ok[i];
    for (int p = 0; p < parts; p++) {
        defo_index *le = NULL, nl = 0;
        unsigned char *cnt = NULL;
        CHECK_OK(defo_partition_local(P, m, p, &le, &cnt, &nl));
        unsigned char *is_local = calloc((size_t)m->num_elems, 1);
        for (defo_index k = 0; k < nl; k++) {
            is_local[le[k]] = 1;
            if (k > 0 && le[k] <= le[k - 1]) extra++; /* ascending */
            if (cnt[k]) counted[le[k]]++;
        }
        /* local = touches an owned node */
        for (defo_index e = 0; e < m->num_elems; e++) {
            int touches = 0;
            for (int a = 0; a < npe; a++)
                touches |= P->node_owner[m->elems[(size_t)e * npe + a]] == p;
            if (touches && !is_local[e]) missing++;
            if (!touches && is_local[e]) extra++;
        }
        free(is_local);
        defo_free(le);
        defo_free(cnt);
    }
    int once = 0;
    for (defo_index e = 0; e < m->num_elems; e++) once += counted[e] == 1;
    defo_index lo = m->num_elems, hi = 0;
    for (int p = 0; p < parts; p++)
        lo = size[p] < lo ? size[p] : lo, hi = size[p] > hi ? size[p] : hi;
    CHECK_MSG(bad_part == 0, "%s: %d elements without a part", what, bad_part);
    CHECK_MSG(bad_owner == 0, "%s: %d nodes owned by none of their elements' parts", what,
              bad_owner);
    CHECK_MSG(missing == 0 && extra == 0, "%s: local sets: %d missing, %d extra", what, missing,
              extra);
    CHECK_MSG(once == m->num_elems, "%s: %ld of %ld elements counted exactly once", what,
              (long)once, (long)m->num_elems);
    /* balance: METIS's default imbalance is 3 %, bisection splits exactly */
    CHECK_MSG(parts == 1 || hi <= 1.05 * (double)m->num_elems / parts + 1, "%s: parts %ld..%ld",
              what, (long)lo, (long)hi);
    free(size);
    free(counted);
    free(ok);
}

static void test_partitions(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = bar(order, order == 1 ? 4 : 2);
        if (!m) return;
        const int parts_list[] = {1, 2, 3, 4, 7};
        for (int method = DEFO_PARTITION_METIS; method <= DEFO_PARTITION_RCB; method++) {
            if (method == DEFO_PARTITION_METIS && !defo_partition_metis_available()) continue;
            for (size_t k = 0; k < sizeof parts_list / sizeof parts_list[0]; k++) {
                defo_partition *P = NULL;
                CHECK_OK(
                    defo_partition_create(m, parts_list[k], (defo_partition_method)method, &P));
                if (!P) continue;
                char what[64];
                snprintf(what, sizeof what, "tet%d %s %d parts", order == 1 ? 4 : 10,
                         defo_partition_method_name(P->method), parts_list[k]);
                check_partition(m, P, what);
                /* the same partition again (every process computes its own) */
                defo_partition *Q = NULL;
                CHECK_OK(
                    defo_partition_create(m, parts_list[k], (defo_partition_method)method, &Q));
                CHECK(Q &&
                      memcmp(P->elem_part, Q->elem_part, (size_t)m->num_elems * sizeof(int)) == 0 &&
                      memcmp(P->node_owner, Q->node_owner, (size_t)m->num_nodes * sizeof(int)) ==
                          0);
                defo_partition_destroy(Q);
                defo_partition_destroy(P);
            }
        }
        TEST_REPORT("tet%d bar, %ld elements: METIS%s and bisection, 1 to 7 parts",
                    order == 1 ? 4 : 10, (long)m->num_elems,
                    defo_partition_metis_available() ? "" : " (not built in)");
        defo_mesh_destroy(m);
    }
}

/* A part's local mesh: every node, the local elements (as the world builds it). */
static defo_mesh *local_mesh(const defo_mesh *m, const defo_index *le, defo_index nl) {
    defo_mesh *lm = NULL;
    CHECK_OK(defo_mesh_create(m->order, &lm));
    CHECK_OK(defo_mesh_reserve(lm, m->num_nodes, nl, 0));
    memcpy(lm->x, m->x, 3 * (size_t)m->num_nodes * sizeof(double));
    lm->num_nodes = m->num_nodes;
    const int npe = m->nodes_per_elem;
    for (defo_index k = 0; k < nl; k++)
        memcpy(lm->elems + (size_t)k * npe, m->elems + (size_t)le[k] * npe,
               (size_t)npe * sizeof(defo_index));
    lm->num_elems = nl;
    return lm;
}

/* Owned rows of the parts' models equal the whole model's, bit for bit. */
static void test_owned_rows_exact(void) {
    for (int order = 1; order <= 2; order++) {
        for (int form = 0; form < 2; form++) {
            defo_mesh *m = bar(order, 2);
            defo_material_def md = defo_default_material();
            md.model = form ? DEFO_MODEL_COROTATED : DEFO_MODEL_NEO_HOOKEAN;
            md.youngs_modulus = 1e5;
            md.poisson = 0.35;
            defo_material *mat = NULL;
            defo_element_rest *rest = NULL;
            defo_force_model *fm = NULL;
            defo_force_model_def fd = defo_default_force_model_def();
            fd.formulation = form ? DEFO_FORMULATION_COROTATED : DEFO_FORMULATION_INVERTIBLE;
            CHECK_OK(defo_material_create(&md, &mat));
            CHECK_OK(defo_element_rest_create(m, &rest));
            CHECK_OK(defo_force_model_create(m, rest, mat, &fd, &fm));
            /* a bent and twisted state */
            const size_t n3 = 3 * (size_t)m->num_nodes;
            double *x = malloc(n3 * sizeof *x), *f = malloc(n3 * sizeof *f),
                   *d = malloc(n3 * sizeof *d), *y = malloc(n3 * sizeof *y),
                   *fl = malloc(n3 * sizeof *fl), *yl = malloc(n3 * sizeof *yl),
                   *diag = malloc(3 * n3 * sizeof *diag), *diagl = malloc(3 * n3 * sizeof *diagl);
            for (defo_index i = 0; i < m->num_nodes; i++) {
                const double *X = m->x + 3 * (size_t)i;
                const double a = 0.6 * X[0];
                x[3 * i] = X[0] + 0.02 * sin(7.0 * X[1]);
                x[3 * i + 1] = cos(a) * X[1] - sin(a) * X[2];
                x[3 * i + 2] = sin(a) * X[1] + cos(a) * X[2] + 0.1 * X[0] * X[0];
                for (int c = 0; c < 3; c++) d[3 * i + c] = sin(1.0 + i + 0.3 * c);
            }
            double E = 0;
            /* forces only first (tet4 neo-Hookean: the four-wide pass), kept in fl */
            CHECK_OK(defo_force_model_evaluate(fm, x, 0, fl, NULL));
            double *f0 = malloc(n3 * sizeof *f0);
            memcpy(f0, fl, n3 * sizeof *f0);
            CHECK_OK(defo_force_model_evaluate(fm, x, DEFO_EVAL_TANGENT, f, &E));
            defo_force_model_tangent_apply(fm, d, y);
            defo_force_model_tangent_diagonal(fm, diag);
            const defo_bcsr *A = defo_force_model_assemble(fm, 1.0, 0.0, NULL, 0.0);
            const defo_bcsr_pattern *pa = defo_bcsr_get_pattern(A);
            const double *va = defo_bcsr_values_const(A);
            defo_partition *P = NULL;
            CHECK_OK(defo_partition_create(m, 3, DEFO_PARTITION_AUTO, &P));
            int mism_f = 0, mism_y = 0, mism_d = 0, mism_row = 0;
            double Esum = 0;
            for (int p = 0; P && p < 3; p++) {
                defo_index *le = NULL, nl = 0;
                unsigned char *cnt = NULL;
                CHECK_OK(defo_partition_local(P, m, p, &le, &cnt, &nl));
                defo_mesh *lm = local_mesh(m, le, nl);
                defo_element_rest *lr = NULL;
                defo_force_model *lf = NULL;
                CHECK_OK(defo_element_rest_create(lm, &lr));
                CHECK_OK(defo_force_model_create(lm, lr, mat, &fd, &lf));
                CHECK_OK(defo_force_model_evaluate(lf, x, 0, fl, NULL));
                for (defo_index i = 0; i < m->num_nodes; i++)
                    if (P->node_owner[i] == p)
                        mism_f += memcmp(f0 + 3 * i, fl + 3 * i, 3 * sizeof(double)) != 0;
                CHECK_OK(defo_force_model_evaluate(lf, x, DEFO_EVAL_TANGENT, fl, NULL));
                defo_force_model_tangent_apply(lf, d, yl);
                defo_force_model_tangent_diagonal(lf, diagl);
                const defo_bcsr *B = defo_force_model_assemble(lf, 1.0, 0.0, NULL, 0.0);
                const defo_bcsr_pattern *pb = defo_bcsr_get_pattern(B);
                const double *vb = defo_bcsr_values_const(B);
                for (defo_index i = 0; i < m->num_nodes; i++) {
                    if (P->node_owner[i] != p) continue;
                    mism_f += memcmp(f + 3 * i, fl + 3 * i, 3 * sizeof(double)) != 0;
                    mism_y += memcmp(y + 3 * i, yl + 3 * i, 3 * sizeof(double)) != 0;
                    mism_d += memcmp(diag + 9 * i, diagl + 9 * i, 9 * sizeof(double)) != 0;
                    const int64_t la = pa->row_offset[i + 1] - pa->row_offset[i],
                                  lb = pb->row_offset[i + 1] - pb->row_offset[i];
                    mism_row += la != lb ||
                                memcmp(pa->col + pa->row_offset[i], pb->col + pb->row_offset[i],
                                       (size_t)la * sizeof(defo_index)) != 0 ||
                                memcmp(va + 9 * pa->row_offset[i], vb + 9 * pb->row_offset[i],
                                       9 * (size_t)la * sizeof(double)) != 0;
                }
                /* the counted elements' energies: each at x through energy_of */
                if (!form) {
                    double e = 0;
                    for (defo_index k = 0; k < nl; k++) {
                        if (!cnt[k]) continue;
                        double ek = 0;
                        CHECK_OK(defo_force_model_energy_of(lf, x, &k, 1, &ek));
                        e += ek;
                    }
                    Esum += e;
                }
                defo_force_model_destroy(lf);
                defo_element_rest_destroy(lr);
                defo_mesh_destroy(lm);
                defo_free(le);
                defo_free(cnt);
            }
            CHECK_MSG(mism_f + mism_y + mism_d + mism_row == 0,
                      "tet%d %s: owned nodes differing from the whole model: forces %d, products "
                      "%d, diagonal blocks %d, matrix rows %d",
                      order == 1 ? 4 : 10, form ? "corotated" : "invertible", mism_f, mism_y,
                      mism_d, mism_row);
            if (!form) CHECK_NEAR(Esum, E, 1e-12 * fabs(E));
            TEST_REPORT("tet%d %s, 3 parts: owned nodes' forces, products, diagonal blocks and "
                        "matrix rows bit for bit the whole model's%s",
                        order == 1 ? 4 : 10, form ? "corotated" : "invertible",
                        form ? "" : "; counted energies sum to the body's");
            defo_partition_destroy(P);
            free(x), free(f), free(f0), free(d), free(y), free(fl), free(yl), free(diag),
                free(diagl);
            defo_force_model_destroy(fm);
            defo_element_rest_destroy(rest);
            defo_material_destroy(mat);
            defo_mesh_destroy(m);
        }
    }
}

/* Two tets sharing the face (1, 2, 3), split by hand. */
static void test_by_hand(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(1, &m));
    const double X[5][3] = {{0, 0, -1}, {1, 0, 0}, {0, 1, 0}, {0, 0, 0}, {0.3, 0.3, 1}};
    for (int i = 0; i < 5; i++) CHECK_OK(defo_mesh_add_node(m, X[i][0], X[i][1], X[i][2], NULL));
    const defo_index e0[4] = {0, 1, 2, 3}, e1[4] = {4, 1, 3, 2};
    CHECK_OK(defo_mesh_add_elem(m, e0, 0));
    CHECK_OK(defo_mesh_add_elem(m, e1, 0));
    CHECK_OK(defo_mesh_orient(m, NULL));
    const int parts[2] = {0, 1};
    defo_partition *P = NULL;
    CHECK_OK(defo_partition_from_parts(m, 2, parts, &P));
    if (!P) return;
    /* nodes in index order, each to the candidate part owning fewest so far:
     * 0 → 0 (only), 1 → 1 (0 has 1, 1 has 0), 2 → 0 (tie: the lowest),
     * 3 → 1, 4 → 1 (only) */
    const int want[5] = {0, 1, 0, 1, 1};
    CHECK(memcmp(P->node_owner, want, sizeof want) == 0);
    for (int p = 0; p < 2; p++) {
        defo_index *le = NULL, nl = 0;
        unsigned char *cnt = NULL;
        CHECK_OK(defo_partition_local(P, m, p, &le, &cnt, &nl));
        /* both elements touch nodes of both parts: each is local to both,
         * counted by its first node's owner (elem 0 by part 0, elem 1 by 1) */
        CHECK(nl == 2 && le[0] == 0 && le[1] == 1);
        CHECK(nl == 2 && cnt[0] == (p == 0) && cnt[1] == (p == 1));
        defo_free(le);
        defo_free(cnt);
    }
    defo_partition_destroy(P);
    const int bad[2] = {0, 2};
    CHECK(defo_partition_from_parts(m, 2, bad, &P) == DEFO_ERR_INVALID_ARGUMENT && !P);
    CHECK(strstr(defo_last_error(), "element 1 has part 2") != NULL);
    CHECK(defo_partition_create(m, 0, DEFO_PARTITION_AUTO, &P) == DEFO_ERR_INVALID_ARGUMENT);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_partitions);
    RUN(test_owned_rows_exact);
    RUN(test_by_hand);
    return test_summary();
}
