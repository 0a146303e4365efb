/*
 * tests/test_sparse.c — 3×3-block CSR matrix, assembly map, preconditioners
 * and PCG (include/defo/sparse.h).
 *
 * References used:
 *   - dense reference: the same random element matrices summed into a dense
 *     3n×3n array by a naive loop; y = A x compared with the dense product;
 *   - pattern: exactly the node pairs that share an element (checked against
 *     a dense adjacency), diagonal present, columns sorted;
 *   - block Jacobi: inverse blocks times the diagonal blocks give I;
 *   - PCG: the solution of an SPD system satisfies A x = b (residual computed
 *     independently with the dense matrix) for every preconditioner, and
 *     fixed nodes keep their initial value;
 *   - subdomain block IC(0): bitwise equal to IC(0) of the matrix with the
 *     couplings between the domains removed (see test_ic0_domains);
 *   - determinism: assembly and PCG iterates with 1 and 2 threads are bitwise
 *     identical (tests/determinism.h).
 */
#include "defo/mesh.h"
#include "defo/solver.h"
#include "defo/sparse.h"
#include "determinism.h"
#include "solver/solver_internal.h"
#include "test.h"

/* A preconditioner of the kind (test helper; NULL when creation failed). */
static defo_precond *precond_new(defo_precond_kind kind, int domains) {
    defo_precond_def d = defo_default_precond_def();
    d.kind = kind;
    d.domains = domains;
    defo_precond *P = NULL;
    CHECK_OK(defo_precond_create(&d, &P));
    return P;
}

static defo_mesh *box(int a, int b, int c) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = a;
    d.cells[1] = b;
    d.cells[2] = c;
    defo_mesh *m = NULL;
    defo_generate_box(&d, &m);
    return m;
}

/* Random symmetric element matrices, diagonally dominant (SPD sum). */
static double *random_elem_mats(defo_index ne, test_rng *rng) {
    double *E = malloc((size_t)ne * 144 * sizeof *E);
    for (defo_index e = 0; e < ne; e++) {
        double *K = E + 144 * (size_t)e;
        for (int i = 0; i < 12; i++)
            for (int j = i; j < 12; j++) K[i * 12 + j] = K[j * 12 + i] = test_range(rng, -1, 1);
        for (int i = 0; i < 12; i++) K[i * 12 + i] = 13.0;
    }
    return E;
}

static void dense_assemble(const defo_mesh *m, const double *E, double *D) {
    size_t n3 = 3 * (size_t)m->num_nodes;
    memset(D, 0, n3 * n3 * sizeof *D);
    for (defo_index e = 0; e < m->num_elems; e++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                for (int r = 0; r < 3; r++)
                    for (int c = 0; c < 3; c++) {
                        size_t I = 3 * (size_t)m->elems[4 * e + i] + (size_t)r;
                        size_t J = 3 * (size_t)m->elems[4 * e + j] + (size_t)c;
                        D[I * n3 + J] += E[144 * (size_t)e + (size_t)(3 * i + r) * 12 + 3 * j + c];
                    }
}

static void test_pattern_and_multiply(void) {
    defo_mesh *m = box(3, 2, 2);
    defo_bcsr *A = NULL;
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, m->num_nodes, &A));
    defo_index n = m->num_nodes;
    size_t n3 = 3 * (size_t)n;
    /* pattern = node adjacency through elements */
    unsigned char *adj = calloc((size_t)n * (size_t)n, 1);
    for (defo_index e = 0; e < m->num_elems; e++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                adj[(size_t)m->elems[4 * e + i] * (size_t)n + (size_t)m->elems[4 * e + j]] = 1;
    int64_t count = 0;
    int pattern_ok = 1;
    for (defo_index i = 0; i < n; i++) {
        for (defo_index j = 0; j < n; j++) {
            int64_t b = defo_bcsr_find(A, i, j);
            if ((b >= 0) != (adj[(size_t)i * (size_t)n + (size_t)j] || i == j)) pattern_ok = 0;
            count += b >= 0;
        }
        if (defo_bcsr_get_pattern(A)->col[defo_bcsr_get_pattern(A)->diag[i]] != i) pattern_ok = 0;
        for (int64_t k = defo_bcsr_get_pattern(A)->row_offset[i] + 1;
             k < defo_bcsr_get_pattern(A)->row_offset[i + 1]; k++)
            if (defo_bcsr_get_pattern(A)->col[k] <= defo_bcsr_get_pattern(A)->col[k - 1])
                pattern_ok = 0;
    }
    CHECK(pattern_ok);
    /* transpose[b] is the block at (col, row) of b */
    int mirror_ok = 1;
    for (defo_index i = 0; i < n; i++)
        for (int64_t k = defo_bcsr_get_pattern(A)->row_offset[i];
             k < defo_bcsr_get_pattern(A)->row_offset[i + 1]; k++)
            mirror_ok &= defo_bcsr_get_pattern(A)->transpose[k] ==
                         defo_bcsr_find(A, defo_bcsr_get_pattern(A)->col[k], i);
    CHECK(mirror_ok);
    CHECK(count == defo_bcsr_get_pattern(A)->num_blocks);

    test_rng rng = {12345};
    double *E = random_elem_mats(m->num_elems, &rng);
    double *D = malloc(n3 * n3 * sizeof *D), *D2 = malloc(n3 * n3 * sizeof *D2);
    dense_assemble(m, E, D);
    defo_bcsr_assemble(A, E, 2.0);
    defo_bcsr_to_dense(A, D2);
    double maxerr = 0, maxval = 0;
    for (size_t k = 0; k < n3 * n3; k++) {
        maxerr = fmax(maxerr, fabs(D2[k] - 2.0 * D[k]));
        maxval = fmax(maxval, fabs(D[k]));
    }
    /* same sums, possibly in another order: rounding level relative to the entries */
    CHECK(maxerr <= 1e-13 * maxval);
    double *x = malloc(n3 * sizeof *x), *y = malloc(n3 * sizeof *y);
    for (size_t k = 0; k < n3; k++) x[k] = test_range(&rng, -1, 1);
    defo_bcsr_multiply(A, x, y);
    double yerr = 0, ynorm = 0;
    for (size_t r = 0; r < n3; r++) {
        double s = 0;
        for (size_t c = 0; c < n3; c++) s += 2.0 * D[r * n3 + c] * x[c];
        yerr = fmax(yerr, fabs(s - y[r]));
        ynorm = fmax(ynorm, fabs(s));
    }
    TEST_REPORT("%ld nodes, %lld blocks; |A x − dense| / |y| = %.2e", (long)n,
                (long long)defo_bcsr_get_pattern(A)->num_blocks, yerr / ynorm);
    CHECK(yerr <= 1e-13 * ynorm);

    /* diagonal addition */
    double *d = malloc((size_t)n * sizeof *d);
    for (defo_index i = 0; i < n; i++) d[i] = (double)i;
    double before = defo_bcsr_values(A)[9 * defo_bcsr_get_pattern(A)->diag[n - 1] + 4];
    defo_bcsr_add_diagonal(A, d, 0.5);
    CHECK_NEAR(defo_bcsr_values(A)[9 * defo_bcsr_get_pattern(A)->diag[n - 1] + 4] - before,
               0.5 * (n - 1), 1e-12 * n);

    /* block Jacobi: inverse blocks */
    defo_precond *P = precond_new(DEFO_PRECOND_BLOCK_JACOBI, 0);
    CHECK_OK(defo_precond_setup(P, A, NULL, NULL));
    double worst = 0;
    for (defo_index i = 0; i < n; i++) {
        const double *a = defo_bcsr_values(A) + 9 * defo_bcsr_get_pattern(A)->diag[i],
                     *b = P->inv + 9 * (size_t)i;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) {
                double s = 0;
                for (int k = 0; k < 3; k++) s += b[3 * r + k] * a[3 * k + c];
                worst = fmax(worst, fabs(s - (r == c)));
            }
    }
    CHECK(worst < 1e-12);
    defo_precond_destroy(P);
    free(d);
    free(x);
    free(y);
    free(D);
    free(D2);
    free(E);
    free(adj);
    defo_bcsr_destroy(A);
    defo_mesh_destroy(m);
}

/* defo_bcsr_join against a dense reference: two parts on the diagonal plus
 * coupling blocks (some repeated, some inside a part's pattern, some new),
 * then a refill with other values keeps the pattern and is still exact. */
static void test_join(void) {
    test_rng rng = {42};
    defo_mesh *m1 = box(2, 1, 1), *m2 = box(1, 2, 1);
    defo_bcsr *A1 = NULL, *A2 = NULL, *J = NULL;
    CHECK_OK(defo_bcsr_create(m1->elems, m1->num_elems, 4, m1->num_nodes, &A1));
    CHECK_OK(defo_bcsr_create(m2->elems, m2->num_elems, 4, m2->num_nodes, &A2));
    const size_t n1 = (size_t)m1->num_nodes, n2 = (size_t)m2->num_nodes, n = n1 + n2;
    for (int round = 0; round < 2; round++) {
        double *E1 = random_elem_mats(m1->num_elems, &rng),
               *E2 = random_elem_mats(m2->num_elems, &rng);
        defo_bcsr_assemble(A1, E1, 1.0);
        defo_bcsr_assemble(A2, E2, 1.0);
        enum { NE = 7 };
        const int64_t rc[2 * NE] = {0,
                                    (int64_t)n1,
                                    (int64_t)n1,
                                    0,
                                    1,
                                    2,
                                    1,
                                    2,
                                    (int64_t)n - 1,
                                    3,
                                    3,
                                    (int64_t)n - 1,
                                    (int64_t)n1 + 1,
                                    (int64_t)n1 + 1};
        double val[9 * NE];
        for (int k = 0; k < 9 * NE; k++) val[k] = test_range(&rng, -1, 1);
        const defo_bcsr *parts[2] = {A1, A2};
        const int64_t *before = J ? defo_bcsr_get_pattern(J)->row_offset : NULL;
        CHECK_OK(defo_bcsr_join(&J, parts, 2, rc, val, NE));
        if (round == 1) CHECK(defo_bcsr_get_pattern(J)->row_offset == before); /* kept */
        double *D = calloc(9 * n * n, sizeof *D), *D1 = malloc(9 * n1 * n1 * sizeof *D1),
               *D2 = malloc(9 * n2 * n2 * sizeof *D2), *DJ = malloc(9 * n * n * sizeof *DJ);
        dense_assemble(m1, E1, D1);
        dense_assemble(m2, E2, D2);
        for (size_t i = 0; i < 3 * n1; i++)
            for (size_t j = 0; j < 3 * n1; j++) D[i * 3 * n + j] = D1[i * 3 * n1 + j];
        for (size_t i = 0; i < 3 * n2; i++)
            for (size_t j = 0; j < 3 * n2; j++)
                D[(3 * n1 + i) * 3 * n + 3 * n1 + j] = D2[i * 3 * n2 + j];
        for (int e = 0; e < NE; e++)
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++)
                    D[(3 * (size_t)rc[2 * e] + r) * 3 * n + 3 * (size_t)rc[2 * e + 1] + c] +=
                        val[9 * e + 3 * r + c];
        defo_bcsr_to_dense(J, DJ);
        double worst = 0;
        for (size_t k = 0; k < 9 * n * n; k++) worst = fmax(worst, fabs(D[k] - DJ[k]));
        CHECK(worst == 0.0);
        free(D), free(D1), free(D2), free(DJ), free(E1), free(E2);
    }
    defo_bcsr_destroy(J);
    defo_bcsr_destroy(A1);
    defo_bcsr_destroy(A2);
    defo_mesh_destroy(m1);
    defo_mesh_destroy(m2);
}

static void test_pcg_solves(void) {
    defo_mesh *m = box(4, 3, 3);
    defo_bcsr *A = NULL;
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, m->num_nodes, &A));
    test_rng rng = {777};
    double *E = random_elem_mats(m->num_elems, &rng);
    defo_bcsr_assemble(A, E, 1.0);
    defo_index n = m->num_nodes;
    size_t n3 = 3 * (size_t)n;
    double *D = malloc(n3 * n3 * sizeof *D);
    defo_bcsr_to_dense(A, D);
    double *b = malloc(n3 * sizeof *b), *x = malloc(n3 * sizeof *x),
           *work = malloc(4 * n3 * sizeof *work);
    unsigned char *con = calloc((size_t)n, 1);
    for (defo_index i = 0; i < n; i += 7) con[i] = DEFO_CONSTRAINT_FIXED;
    for (size_t k = 0; k < n3; k++) b[k] = test_range(&rng, -1, 1);
    defo_precond_kind kinds[4] = {DEFO_PRECOND_NONE, DEFO_PRECOND_JACOBI, DEFO_PRECOND_BLOCK_JACOBI,
                                  DEFO_PRECOND_BLOCK_IC0};
    for (int t = 0; t < 4; t++) {
        defo_precond *P = precond_new(kinds[t], 0);
        CHECK_OK(defo_precond_setup(P, A, con, NULL));
        for (size_t k = 0; k < n3; k++) x[k] = 0.25; /* fixed nodes keep 0.25 */
        defo_cg_def def = defo_default_cg_def();
        def.tolerance = 1e-10;
        def.max_iterations = 1000;
        defo_cg_result res;
        CHECK_OK(defo_pcg_solve(&def, A, P, con, NULL, b, x, work, &res));
        /* independent residual on free rows with the dense matrix */
        double rmax = 0, bmax = 0;
        int fixed_kept = 1;
        for (size_t r = 0; r < n3; r++) {
            if (con[r / 3]) {
                fixed_kept &= x[r] == 0.25;
                continue;
            }
            double s = 0;
            for (size_t c = 0; c < n3; c++) s += D[r * n3 + c] * x[c];
            rmax = fmax(rmax, fabs(s - b[r]));
            bmax = fmax(bmax, fabs(b[r]));
        }
        TEST_REPORT("%-12s %3d iterations, max residual %.2e", defo_precond_name(kinds[t]),
                    res.iterations, rmax / bmax);
        CHECK(rmax <= 1e-8 * bmax);
        CHECK(fixed_kept);
        defo_precond_destroy(P);
    }
    /* fixed iteration count: exactly max_iterations, status OK */
    {
        defo_precond *P = precond_new(DEFO_PRECOND_BLOCK_JACOBI, 0);
        CHECK_OK(defo_precond_setup(P, A, con, NULL));
        memset(x, 0, n3 * sizeof *x);
        defo_cg_def def = defo_default_cg_def();
        def.tolerance = 0;
        def.max_iterations = 5;
        defo_cg_result res;
        CHECK_OK(defo_pcg_solve(&def, A, P, con, NULL, b, x, work, &res));
        CHECK(res.iterations == 5);
        defo_precond_destroy(P);
    }
    free(con);
    free(b);
    free(x);
    free(work);
    free(D);
    free(E);
    defo_bcsr_destroy(A);
    defo_mesh_destroy(m);
}

typedef struct det_ctx {
    defo_mesh *m;
    defo_bcsr *A;
    double *E;
} det_ctx;

static void assemble_and_solve(void *vctx, void *out) {
    det_ctx *c = vctx;
    size_t n3 = 3 * (size_t)c->m->num_nodes;
    defo_bcsr_assemble(c->A, c->E, 1.5);
    double *o = out;
    const int64_t nb = defo_bcsr_get_pattern(c->A)->num_blocks;
    memcpy(o, defo_bcsr_values(c->A), (size_t)nb * 9 * sizeof(double));
    double *b = malloc(n3 * sizeof *b), *work = malloc(4 * n3 * sizeof *work);
    for (size_t k = 0; k < n3; k++) b[k] = sin((double)k);
    double *x = o + nb * 9;
    memset(x, 0, n3 * sizeof *x);
    defo_precond *P = precond_new(DEFO_PRECOND_BLOCK_JACOBI, 0);
    defo_precond_setup(P, c->A, NULL, NULL);
    defo_cg_def def = defo_default_cg_def();
    def.tolerance = 0;
    def.max_iterations = 30;
    defo_pcg_solve(&def, c->A, P, NULL, NULL, b, x, work, NULL);
    defo_precond_destroy(P);
    free(b);
    free(work);
}

static void test_determinism(void) {
    /* big enough that the parallel loops really split (> DEFO_PARALLEL_MIN blocks) */
    defo_mesh *m = box(12, 8, 8);
    defo_bcsr *A = NULL;
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, m->num_nodes, &A));
    test_rng rng = {99};
    double *E = random_elem_mats(m->num_elems, &rng);
    det_ctx c = {m, A, E};
    size_t bytes = ((size_t)defo_bcsr_get_pattern(A)->num_blocks * 9 + 3 * (size_t)m->num_nodes) *
                   sizeof(double);
    CHECK(test_bitwise_same_for_threads(assemble_and_solve, &c, bytes, 2));
    free(E);
    defo_bcsr_destroy(A);
    defo_mesh_destroy(m);
}

/* Subdomain IC(0): the factor for D contiguous node ranges must be exactly
 * the IC(0) factor of A with the couplings between ranges removed (a
 * reference computed with one domain on that modified matrix): applications
 * compared bit for bit.  PCG with it still solves A x = b (dense residual),
 * and the result is the same with 1 and 2 threads. */
typedef struct ic0_ctx {
    const defo_bcsr *A;
    const double *r;
    int domains;
} ic0_ctx;

static void ic0_domains_apply(void *vctx, void *out) {
    ic0_ctx *c = vctx;
    defo_precond *P = precond_new(DEFO_PRECOND_BLOCK_IC0, c->domains);
    defo_precond_setup(P, c->A, NULL, NULL);
    defo_precond_apply(P, c->r, out);
    defo_precond_destroy(P);
}

static void test_ic0_domains(void) {
    defo_mesh *m = box(9, 4, 4);
    defo_bcsr *A = NULL, *B = NULL;
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, m->num_nodes, &A));
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, m->num_nodes, &B));
    test_rng rng = {4242};
    double *E = random_elem_mats(m->num_elems, &rng);
    defo_bcsr_assemble(A, E, 1.0);
    const defo_index n = m->num_nodes;
    const size_t n3 = 3 * (size_t)n;
    double *r = malloc(n3 * sizeof *r), *z = malloc(n3 * sizeof *z),
           *zref = malloc(n3 * sizeof *zref);
    for (size_t k = 0; k < n3; k++) r[k] = test_range(&rng, -1, 1);
    const int Ds[3] = {2, 3, 7};
    for (int t = 0; t < 3; t++) {
        const int D = Ds[t];
        /* B = A without the couplings between the subdomains setup chose */
        defo_precond *Q = precond_new(DEFO_PRECOND_BLOCK_IC0, D);
        CHECK_OK(defo_precond_setup(Q, A, NULL, NULL));
        memcpy(defo_bcsr_values(B), defo_bcsr_values(A),
               (size_t)defo_bcsr_get_pattern(A)->num_blocks * 9 * sizeof(double));
        defo_index dropped = 0, count[8] = {0};
        for (defo_index i = 0; i < n; i++) {
            count[Q->domain_of[i]]++;
            for (int64_t q = defo_bcsr_get_pattern(B)->row_offset[i];
                 q < defo_bcsr_get_pattern(B)->row_offset[i + 1]; q++)
                if (Q->domain_of[i] != Q->domain_of[defo_bcsr_get_pattern(B)->col[q]]) {
                    memset(defo_bcsr_values(B) + 9 * q, 0, 9 * sizeof(double));
                    dropped++;
                }
        }
        /* balanced, and a slab: the interface is a small part of the pattern */
        for (int d = 0; d < D; d++) CHECK(count[d] == n / D || count[d] == n / D + 1);
        TEST_REPORT("%d domains: %ld of %ld blocks dropped", D, (long)dropped,
                    (long)defo_bcsr_get_pattern(A)->num_blocks);
        CHECK(dropped < defo_bcsr_get_pattern(A)->num_blocks / (D == 7 ? 2 : 5));
        defo_precond_destroy(Q);
        CHECK(dropped > 0);
        ic0_ctx ref = {B, r, 1}, dom = {A, r, D};
        ic0_domains_apply(&ref, zref);
        ic0_domains_apply(&dom, z);
        CHECK(memcmp(z, zref, n3 * sizeof *z) == 0);
        CHECK(test_bitwise_same_for_threads(ic0_domains_apply, &dom, n3 * sizeof(double), 2));
        /* PCG on A with the split factor: dense residual */
        defo_precond *P = precond_new(DEFO_PRECOND_BLOCK_IC0, D);
        CHECK_OK(defo_precond_setup(P, A, NULL, NULL));
        CHECK(P->num_domains == D);
        double *x = calloc(n3, sizeof *x), *work = malloc(4 * n3 * sizeof *work);
        defo_cg_def def = defo_default_cg_def();
        def.tolerance = 1e-10;
        def.max_iterations = 1000;
        defo_cg_result res;
        CHECK_OK(defo_pcg_solve(&def, A, P, NULL, NULL, r, x, work, &res));
        double *D2 = malloc(n3 * n3 * sizeof *D2);
        defo_bcsr_to_dense(A, D2);
        double rmax = 0, bmax = 0;
        for (size_t i = 0; i < n3; i++) {
            double s = 0;
            for (size_t j = 0; j < n3; j++) s += D2[i * n3 + j] * x[j];
            rmax = fmax(rmax, fabs(s - r[i]));
            bmax = fmax(bmax, fabs(r[i]));
        }
        TEST_REPORT("block_ic0 with %d domains: %d iterations, max residual %.2e", D,
                    res.iterations, rmax / bmax);
        CHECK(rmax <= 1e-8 * bmax);
        free(D2);
        free(x);
        free(work);
        defo_precond_destroy(P);
    }
    /* any numbering: the same mesh with randomly permuted nodes still gets
     * two slabs (a range split of a random numbering would cut ~half) */
    {
        defo_index *perm = malloc((size_t)n * sizeof *perm);
        defo_index *conn = malloc((size_t)m->num_elems * 4 * sizeof *conn);
        for (defo_index i = 0; i < n; i++) perm[i] = i;
        for (defo_index i = n - 1; i > 0; i--) {
            defo_index j = (defo_index)(test_range(&rng, 0, 1) * (double)(i + 1)) % (i + 1);
            defo_index t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        for (size_t k = 0; k < (size_t)m->num_elems * 4; k++) conn[k] = perm[m->elems[k]];
        defo_bcsr *C = NULL;
        CHECK_OK(defo_bcsr_create(conn, m->num_elems, 4, n, &C));
        defo_bcsr_assemble(C, E, 1.0);
        defo_precond *Q = precond_new(DEFO_PRECOND_BLOCK_IC0, 2);
        CHECK_OK(defo_precond_setup(Q, C, NULL, NULL));
        defo_index dropped = 0;
        for (defo_index i = 0; i < n; i++)
            for (int64_t q = defo_bcsr_get_pattern(C)->row_offset[i];
                 q < defo_bcsr_get_pattern(C)->row_offset[i + 1]; q++)
                dropped += Q->domain_of[i] != Q->domain_of[defo_bcsr_get_pattern(C)->col[q]];
        TEST_REPORT("permuted numbering, 2 domains: %ld of %ld blocks dropped", (long)dropped,
                    (long)defo_bcsr_get_pattern(C)->num_blocks);
        CHECK(dropped < defo_bcsr_get_pattern(C)->num_blocks / 5);
        defo_precond_destroy(Q);
        defo_bcsr_destroy(C);
        free(conn);
        free(perm);
    }
    /* automatic: one domain below 4096 nodes; negative is refused */
    defo_precond *P = precond_new(DEFO_PRECOND_BLOCK_IC0, 0);
    CHECK_OK(defo_precond_setup(P, A, NULL, NULL));
    CHECK(P->num_domains == 1);
    defo_precond_destroy(P);
    P = NULL;
    defo_precond_def bad = defo_default_precond_def();
    bad.kind = DEFO_PRECOND_BLOCK_IC0;
    bad.domains = -1;
    CHECK(defo_precond_create(&bad, &P) == DEFO_ERR_INVALID_ARGUMENT && !P);
    CHECK(strstr(defo_last_error(), "domains") != NULL);
    free(r);
    free(z);
    free(zref);
    free(E);
    defo_bcsr_destroy(A);
    defo_bcsr_destroy(B);
    defo_mesh_destroy(m);
}

/* defo_dot: the documented grouping (sequential sums of 4096-entry blocks,
 * combined in block order) reproduced by a plain loop, bit for bit, with 1
 * and 2 threads, for lengths on both sides of the parallel threshold. */
typedef struct dot_ctx {
    const double *a, *b;
    size_t m;
} dot_ctx;

static void dot_compute(void *vctx, void *out) {
    dot_ctx *c = vctx;
    *(double *)out = defo_dot(c->a, c->b, c->m);
}

static void test_dot(void) {
    const size_t sizes[4] = {1000, 4097, 65537, 300001};
    double *a = malloc(sizes[3] * sizeof *a), *b = malloc(sizes[3] * sizeof *b);
    test_rng rng = {2718};
    for (size_t i = 0; i < sizes[3]; i++) {
        a[i] = test_range(&rng, -1, 1);
        b[i] = test_range(&rng, -1e3, 1e3);
    }
    for (int t = 0; t < 4; t++) {
        size_t m = sizes[t];
        double ref = 0;
        for (size_t lo = 0; lo < m; lo += 4096) {
            double s = 0;
            for (size_t i = lo; i < m && i < lo + 4096; i++) s += a[i] * b[i];
            ref += s;
        }
        dot_ctx c = {a, b, m};
        double got;
        dot_compute(&c, &got);
        CHECK(memcmp(&got, &ref, sizeof got) == 0);
        CHECK(test_bitwise_same_for_threads(dot_compute, &c, sizeof(double), 2));
    }
    free(a);
    free(b);
}

/* defo_precond_bytes accounts for what setup allocated: compared with the
 * library allocator's live byte count, for block Jacobi, block IC(0) and
 * two-level (within 1 %: the allocator rounds each request up by a byte). */
static void test_precond_bytes(void) {
    defo_mesh *m = box(12, 8, 8);
    defo_bcsr *A = NULL;
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, m->num_nodes, &A));
    test_rng rng = {11};
    double *E = random_elem_mats(m->num_elems, &rng);
    defo_bcsr_assemble(A, E, 1.0);
    const defo_precond_kind kinds[3] = {DEFO_PRECOND_BLOCK_JACOBI, DEFO_PRECOND_BLOCK_IC0,
                                        DEFO_PRECOND_TWO_LEVEL};
    for (int t = 0; t < 3; t++) {
        int64_t before = defo_allocated_bytes();
        defo_precond *P = precond_new(kinds[t], 0);
        CHECK_OK(defo_precond_setup(P, A, NULL, m->x));
        double live = (double)(defo_allocated_bytes() - before);
        double said = (double)defo_precond_bytes(P);
        TEST_REPORT("%s: allocated %.0f bytes, defo_precond_bytes %.0f",
                    defo_precond_name(kinds[t]), live, said);
        CHECK(live > 0 && fabs(said - live) <= 0.01 * live);
        defo_precond_destroy(P);
    }
    free(E);
    defo_bcsr_destroy(A);
    defo_mesh_destroy(m);
}

/* The IC(0) and two-level preconditioners are symmetric positive definite
 * operators (what PCG needs): for random u, v, uᵀP⁻¹v = vᵀP⁻¹u to rounding
 * (the backward sweep must use Lᵀ of the same single-precision L the
 * forward sweep uses) and uᵀP⁻¹u > 0; on an SPD matrix with 2 subdomains. */
static void test_precond_symmetric(void) {
    defo_mesh *m = box(12, 8, 8); /* 1053 nodes */
    defo_bcsr *A = NULL;
    CHECK_OK(defo_bcsr_create(m->elems, m->num_elems, 4, m->num_nodes, &A));
    test_rng rng = {404};
    double *E = random_elem_mats(m->num_elems, &rng);
    defo_bcsr_assemble(A, E, 1.0);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *u = malloc(n3 * sizeof *u), *v = malloc(n3 * sizeof *v), *pu = malloc(n3 * sizeof *pu),
           *pv = malloc(n3 * sizeof *pv);
    const defo_precond_kind kinds[2] = {DEFO_PRECOND_BLOCK_IC0, DEFO_PRECOND_TWO_LEVEL};
    for (int t = 0; t < 2; t++) {
        defo_precond *P = precond_new(kinds[t], 2);
        CHECK_OK(defo_precond_setup(P, A, NULL, m->x));
        double worst = 0;
        int positive = 1;
        for (int trial = 0; trial < 5; trial++) {
            for (size_t k = 0; k < n3; k++) {
                u[k] = test_range(&rng, -1, 1);
                v[k] = test_range(&rng, -1, 1);
            }
            defo_precond_apply(P, u, pu);
            defo_precond_apply(P, v, pv);
            double a = 0, b = 0, c = 0, na = 0, nb = 0;
            for (size_t k = 0; k < n3; k++) {
                a += u[k] * pv[k];
                b += v[k] * pu[k];
                c += u[k] * pu[k];
                na += pu[k] * pu[k];
                nb += pv[k] * pv[k];
            }
            worst = fmax(worst, fabs(a - b) / sqrt(sqrt(na * nb) * (double)n3));
            positive &= c > 0;
        }
        TEST_REPORT("%s: |uᵀP⁻¹v − vᵀP⁻¹u| / (|u| |P⁻¹v|) ≤ %.1e", defo_precond_name(kinds[t]),
                    worst);
        CHECK(worst < 1e-13);
        CHECK(positive);
        defo_precond_destroy(P);
    }
    free(u);
    free(v);
    free(pu);
    free(pv);
    free(E);
    defo_bcsr_destroy(A);
    defo_mesh_destroy(m);
}

static void test_errors(void) {
    defo_bcsr *A = NULL;
    defo_index bad[4] = {0, 1, 2, 9};
    CHECK(defo_bcsr_create(bad, 1, 4, 4, &A) == DEFO_ERR_INVALID_MESH && !A);
    CHECK(defo_bcsr_create(NULL, 1, 4, 4, &A) == DEFO_ERR_INVALID_ARGUMENT && !A);
    /* indefinite diagonal block is refused with the node named */
    defo_index ok[4] = {0, 1, 2, 3};
    CHECK_OK(defo_bcsr_create(ok, 1, 4, 4, &A));
    defo_precond *P = precond_new(DEFO_PRECOND_BLOCK_JACOBI, 0);
    CHECK(defo_precond_setup(P, A, NULL, NULL) == DEFO_ERR_NUMERICAL);
    CHECK(strstr(defo_last_error(), "node 0") != NULL);
    defo_precond_destroy(P);
    P = precond_new(DEFO_PRECOND_BLOCK_IC0, 0);
    CHECK(defo_precond_setup(P, A, NULL, NULL) == DEFO_ERR_NUMERICAL);
    defo_precond_destroy(P);
    /* names: every kind round-trips, an unknown name is refused */
    for (int k = DEFO_PRECOND_NONE; k <= DEFO_PRECOND_TWO_LEVEL; k++) {
        defo_precond_kind got = DEFO_PRECOND_NONE;
        CHECK_OK(defo_precond_from_name(defo_precond_name((defo_precond_kind)k), &got));
        CHECK(got == (defo_precond_kind)k);
    }
    CHECK(defo_precond_from_name("ic0", NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "block_ic0") != NULL);
    defo_bcsr_destroy(A);
}

int main(void) {
    RUN(test_pattern_and_multiply);
    RUN(test_join);
    RUN(test_pcg_solves);
    RUN(test_determinism);
    RUN(test_ic0_domains);
    RUN(test_dot);
    RUN(test_precond_bytes);
    RUN(test_precond_symmetric);
    RUN(test_errors);
    return test_summary();
}
