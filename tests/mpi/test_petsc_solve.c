/*
 * tests/mpi/test_petsc_solve.c — the PETSc backend's linear solves
 * (src/petsc/backend.c) as Newton uses them: CG stopping at non-positive
 * curvature (DEFO_CURVATURE_STOP) and the lag policy of defo_linear_solver
 * (a preconditioner kept while the matrix drifts).  Run by ctest under
 * `mpirun -n 1` and `-n 2` (two processes: the nodes split at x = 0).
 *
 *   squash      one quasistatic frame of a ball pressed into a block (5 K
 *               tets), with the default preconditioner (ICC(0) on one
 *               process, GAMG on two) and with GAMG: Newton converges in
 *               at most 3 iterations more than with defo's PCG.  (Before
 *               the breakdown guards: a kept GAMG's
 *               Chebyshev bound from the matrix before contact stopped CG
 *               at its second iteration, and a squash of 41 K tets ran 60
 *               Newton iterations without converging.)
 *   stiffened   the stiffness of a 12×12×6-cell neo-Hookean block fixed at
 *               its bottom, then the same plus a contact penalty k n nᵀ
 *               (k = 10⁴ × the largest diagonal entry) at its top nodes, as
 *               a sphere collider pressing the block adds it in a Newton
 *               step; GAMG's setup for the second keeps the prolongators
 *               made for the first.  With GAMG's own eigenvalue estimate
 *               of the first matrix bounding its Chebyshev smoothers
 *               (-pc_gamg_use_sa_esteig) that preconditioner is indefinite
 *               on the second: the solve must meet its
 *               tolerance all the same — residual |S(b − A x)| / |S b| ≤
 *               10⁻⁸ by defo's own product (independent of PETSc) — and be
 *               counted as a recovery (stats.recovered); with the defaults
 *               (bounds estimated at each setup) it needs none.
 *   descent     an indefinite system (one free node's diagonal block −I ×
 *               its norm) with the force b on that node: KSP's CG takes a
 *               first direction of negative curvature with a negative
 *               length (it stops only when the curvature changes sign), so
 *               its iterate climbs; the backend must return a descent
 *               direction, bᵀx > 0, counted as negative curvature, as
 *               defo's PCG does (TSIF05 §3).
 * Every process must hold the same solution bits.
 */
#include "defo/defo.h"
#include "defo/petsc.h"
#include "test.h"

static const defo_comm *comm;
static int rank, size;

#define REPORT(...)                                                                                \
    do {                                                                                           \
        if (rank == 0) TEST_REPORT(__VA_ARGS__);                                                   \
    } while (0)

/* A neo-Hookean box fixed at z = 0, its stiffness at rest. */
typedef struct block {
    defo_mesh *mesh;
    defo_element_rest *rest;
    defo_material *mat;
    defo_force_model *fm;
    defo_bcsr *A;
    unsigned char *con; /* FIXED at z = 0 */
    int *owner;         /* two processes: x > 0 on rank 1 */
    defo_layout layout;
    double *b, *x, *r;
} block;

static int block_make(block *k, int cells) {
    memset(k, 0, sizeof *k);
    defo_box_def bd = defo_default_box_def();
    const double sz[3] = {0.4, 0.4, 0.2};
    for (int c = 0; c < 3; c++) {
        bd.size[c] = sz[c];
        bd.cells[c] = c == 2 ? cells / 2 : cells;
        bd.origin[c] = c == 2 ? 0 : -sz[c] / 2;
    }
    bd.split = DEFO_SPLIT_6;
    defo_material_def md = defo_default_material();
    md.youngs_modulus = 1e4;
    md.poisson = 0.4;
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = DEFO_FORMULATION_INVERTIBLE;
    defo_status s = defo_generate_box(&bd, &k->mesh);
    if (!s) s = defo_element_rest_create(k->mesh, &k->rest);
    if (!s) s = defo_material_create(&md, &k->mat);
    if (!s) s = defo_force_model_create(k->mesh, k->rest, k->mat, &fd, &k->fm);
    CHECK_OK(s);
    if (s) return 0;
    const defo_index n = k->mesh->num_nodes;
    const size_t m = 3 * (size_t)n;
    k->con = calloc((size_t)n, 1);
    k->owner = calloc((size_t)n, sizeof(int));
    k->b = calloc(m, sizeof(double));
    k->x = calloc(m, sizeof(double));
    k->r = calloc(m, sizeof(double));
    double psi = 0;
    CHECK_OK(defo_force_model_evaluate(k->fm, k->mesh->x, DEFO_EVAL_TANGENT, k->r, &psi));
    k->A = defo_force_model_assemble(k->fm, 1.0, 0.0, NULL, 0.0);
    CHECK(k->A != NULL);
    for (defo_index i = 0; i < n; i++) {
        const double *p = k->mesh->x + 3 * (size_t)i;
        k->con[i] = p[2] < 1e-9 ? DEFO_CONSTRAINT_FIXED : DEFO_CONSTRAINT_NONE;
        k->owner[i] = size > 1 && p[0] > 0 ? 1 : 0;
    }
    k->layout.rank = rank;
    k->layout.size = size;
    k->layout.owner = k->owner;
    return k->A != NULL;
}

static void block_free(block *k) {
    defo_force_model_destroy(k->fm);
    defo_material_destroy(k->mat);
    defo_element_rest_destroy(k->rest);
    defo_mesh_destroy(k->mesh);
    free(k->con);
    free(k->owner);
    free(k->b);
    free(k->x);
    free(k->r);
    memset(k, 0, sizeof *k);
}

static defo_linear_system block_system(const block *k) {
    defo_linear_system sys;
    memset(&sys, 0, sizeof sys);
    sys.n = k->mesh->num_nodes;
    sys.matrix = k->A;
    sys.constraint = k->con;
    sys.coords = k->mesh->x;
    sys.layout = size > 1 ? &k->layout : NULL;
    return sys;
}

/* Newton's linear solver on the backend (its lag policy: solver/newton.c) */
static defo_linear_solver *newton_solver(const char *options) {
    defo_linear_solver_def d = defo_default_linear_solver_def();
    d.method = DEFO_LINEAR_BACKEND;
    d.backend = defo_petsc_backend();
    d.curvature = DEFO_CURVATURE_STOP;
    d.max_age = 8;
    d.rate_growth = 2.0;
    d.max_iterations = 1000;
    if (options) snprintf(d.backend_options, sizeof d.backend_options, "%s", options);
    defo_linear_solver *s = NULL;
    CHECK_OK(defo_linear_solver_create(&d, &s));
    return s;
}

static int same_everywhere(const double *x, size_t m) {
    if (size == 1) return 1;
    double h[2] = {0, 0};
    for (size_t k = 0; k < m; k++) h[k & 1] += x[k] * (double)(k % 7 + 1);
    double lo[2] = {h[0], h[1]}, hi[2] = {h[0], h[1]};
    defo_comm_min(comm, lo, 2);
    defo_comm_max(comm, hi, 2);
    return lo[0] == hi[0] && lo[1] == hi[1];
}

/* The squash of docs/distributed.md's measurements at 12×12×6 cells (5184
 * tets): a neo-Hookean block fixed at its bottom, a sphere collider moving
 * down 5 cm into it in one quasistatic frame. */
static const char *squash_scene(const char *solver, const char *options) {
    static char text[1700];
    char opt[120] = "";
    if (options) snprintf(opt, sizeof opt, ", \"petsc_options\": \"%s\"", options);
    snprintf(text, sizeof text,
             "{\"name\": \"squash\", \"duration\": {\"frames\": 1, \"fps\": 10},\n"
             " \"integrator\": {\"type\": \"quasistatic\", \"tolerance\": 1e-5, "
             "\"max_iterations\": 60, \"solver\": \"%s\"%s},\n"
             " \"bodies\": [{\"name\": \"block\",\n"
             "   \"generator\": {\"type\": \"box\", \"center\": [0, 0, 0.1], \"size\": "
             "[0.4, 0.4, 0.2], \"cells\": [12, 12, 6], \"split\": \"6\"},\n"
             "   \"material\": {\"model\": \"neo_hookean\", \"youngs\": 1e4, "
             "\"poisson\": 0.4, \"density\": 1000, \"inversion\": {\"mode\": \"c1\", "
             "\"threshold\": 0.3}},\n"
             "   \"fixed\": [{\"plane\": {\"point\": [0, 0, 0], \"normal\": [0, 0, 1]}}]}],\n"
             " \"colliders\": [{\"name\": \"ball\", \"type\": \"sphere\", \"center\": "
             "[0, 0, 0.3], \"radius\": 0.1, \"motion\": {\"velocity\": [0, 0, -0.5]}}]}\n",
             solver, opt);
    return text;
}

/* One frame of the squash (options: petsc_options, or NULL); its
 * statistics. */
static int squash_frame(const char *solver, const char *options, int distribute,
                        defo_step_stats *st) {
    const char *text = squash_scene(solver, options);
    defo_scene *scene = NULL;
    defo_scene_errors errs;
    memset(&errs, 0, sizeof errs);
    defo_simulation *sim = NULL;
    defo_status s = defo_scene_parse(text, strlen(text), "squash", ".", &scene, &errs);
    defo_scene_errors_free(&errs);
    if (!s) s = defo_simulation_create(scene, &sim);
    if (!s && distribute) {
        defo_distribute_def dd = defo_default_distribute_def();
        s = defo_world_distribute(defo_simulation_world(sim), comm, &dd);
    }
    if (!s) s = defo_simulation_step_frame(sim);
    CHECK_MSG(s >= 0, "squash (%s): %s", solver, defo_last_error());
    if (s >= 0) defo_world_stats(defo_simulation_world(sim), st);
    defo_simulation_destroy(sim);
    defo_scene_destroy(scene);
    return s >= 0;
}

static void test_squash(void) {
    defo_step_stats own;
    memset(&own, 0, sizeof own);
    if (!squash_frame("pcg", NULL, 0, &own)) return;
    CHECK_MSG(own.reason == DEFO_REASON_CONVERGED && own.not_converged == 0,
              "squash (pcg): not converged");
    /* -mat_type baij: a block matrix type (the I-node option is AIJ's
     * only); on one process only, GAMG takes no distributed BAIJ matrix */
    const char *opts[] = {NULL, "-pc_type gamg", "-mat_type baij", "-pc_type icc"};
    for (int o = 0; o < (size > 1 ? 2 : 4); o++) {
        const char *name = opts[o] ? opts[o] : "default";
        defo_step_stats ps;
        memset(&ps, 0, sizeof ps);
        if (!squash_frame("petsc", opts[o], size > 1, &ps)) return;
        CHECK_MSG(ps.reason == DEFO_REASON_CONVERGED && ps.not_converged == 0,
                  "squash (%s): not converged after %d Newton iterations (residual %g)", name,
                  ps.newton_iterations, ps.residual);
        CHECK_MSG(ps.newton_iterations <= own.newton_iterations + 3,
                  "squash (%s): %d Newton iterations on PETSc, %d on defo's PCG", name,
                  ps.newton_iterations, own.newton_iterations);
        /* one process: the default is defo's own preconditioner inside
         * KSP's CG, so the Krylov iteration is defo's PCG's (the two CG
         * loops differ in rounding and in their stopping tests only) */
        if (size == 1 && !opts[o])
            CHECK_MSG(abs(ps.cg_iterations - own.cg_iterations) <= own.cg_iterations / 20 + 2,
                      "squash (default): %d CG iterations on PETSc, %d on defo's PCG",
                      ps.cg_iterations, own.cg_iterations);
        REPORT("squash (%s): Newton iterations %d (PETSc, %d CG, %d setups, %d recovered) and "
               "%d (defo's PCG, %d CG)",
               name, ps.newton_iterations, ps.cg_iterations, ps.precond_setups,
               ps.solver_recoveries, own.newton_iterations, own.cg_iterations);
    }
}

/* |S(b − A x)| / |S b| by defo's own product (S: the fixed nodes out) */
static double block_residual(const block *k) {
    const defo_index n = k->mesh->num_nodes;
    defo_bcsr_multiply(k->A, k->x, k->r);
    double rr = 0, bb = 0;
    for (defo_index i = 0; i < n; i++)
        for (int c = 0; c < 3; c++) {
            if (k->con[i] == DEFO_CONSTRAINT_FIXED) continue;
            const size_t q = 3 * (size_t)i + (size_t)c;
            rr += (k->b[q] - k->r[q]) * (k->b[q] - k->r[q]);
            bb += k->b[q] * k->b[q];
        }
    return bb > 0 ? sqrt(rr / bb) : 0.0;
}

static void test_stiffened(void) {
    const char *opts[] = {"-pc_type gamg -pc_gamg_use_sa_esteig true", "-pc_type gamg"};
    for (int o = 0; o < 2; o++) {
        block k;
        if (!block_make(&k, 12)) {
            block_free(&k);
            return;
        }
        const defo_index n = k.mesh->num_nodes;
        const size_t m = 3 * (size_t)n;
        const defo_bcsr_pattern *pt = defo_bcsr_get_pattern(k.A);
        const double *val = defo_bcsr_values_const(k.A);
        double top = 0, big = 0;
        for (defo_index i = 0; i < n; i++) {
            top = fmax(top, k.mesh->x[3 * (size_t)i + 2]);
            for (int c = 0; c < 3; c++)
                big = fmax(big, val[9 * (size_t)pt->diag[i] + 4 * (size_t)c]);
        }
        for (size_t q = 0; q < m; q++) k.b[q] = q % 3 == 2 ? -1.0 : 0.1;
        defo_linear_solver *s = newton_solver(opts[o]);
        defo_linear_system sys = block_system(&k);
        defo_linear_stats st[2];
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1) { /* the contact penalty k e_z e_zᵀ at the top nodes */
                double *blocks = calloc(9 * (size_t)n, sizeof(double));
                CHECK(blocks != NULL);
                if (!blocks) break;
                for (defo_index i = 0; i < n; i++)
                    if (k.mesh->x[3 * (size_t)i + 2] > top - 1e-9)
                        blocks[9 * (size_t)i + 8] = 1e4 * big;
                defo_bcsr_add_diagonal_blocks(k.A, blocks, 1.0);
                free(blocks);
                defo_linear_solver_invalidate(s); /* a setup on kept prolongators */
            }
            memset(k.x, 0, m * sizeof(double));
            defo_status rs = defo_linear_solver_solve(s, &sys, k.b, k.x, 1e-8, &st[pass]);
            CHECK_MSG(rs == DEFO_OK, "stiffened (%s), solve %d: %s", opts[o], pass + 1,
                      defo_last_error());
            const double res = block_residual(&k);
            CHECK_MSG(res <= 1e-8 * 1.0001 && !st[pass].negative_curvature,
                      "stiffened (%s), solve %d: residual %g by defo's product", opts[o], pass + 1,
                      res);
            CHECK(same_everywhere(k.x, m));
        }
        CHECK_MSG(st[0].refactored && st[1].refactored, "stiffened (%s): setups not counted",
                  opts[o]);
        if (o == 0)
            CHECK_MSG(st[1].recovered, "stiffened (%s): the breakdown was not counted", opts[o]);
        else
            CHECK_MSG(!st[1].recovered, "stiffened (%s): %d recovered (bounds of each setup)",
                      opts[o], st[1].recovered);
        REPORT("stiffened (%s): %d and %d iterations, recovered %d", opts[o], st[0].iterations,
               st[1].iterations, st[1].recovered);
        defo_linear_solver_destroy(s);
        block_free(&k);
    }
}

static void test_descent(void) {
    block k;
    if (!block_make(&k, 6)) {
        block_free(&k);
        return;
    }
    const defo_index n = k.mesh->num_nodes;
    const size_t m = 3 * (size_t)n;
    /* a free node in the middle: its diagonal block −|A_ii| I */
    defo_index mid = -1;
    double best = 1e300;
    for (defo_index i = 0; i < n; i++) {
        const double *p = k.mesh->x + 3 * (size_t)i;
        const double d = p[0] * p[0] + p[1] * p[1] + (p[2] - 0.1) * (p[2] - 0.1);
        if (k.con[i] == DEFO_CONSTRAINT_NONE && d < best) best = d, mid = i;
    }
    double *blocks = calloc(9 * (size_t)n, sizeof(double));
    CHECK(blocks != NULL && mid >= 0);
    if (!blocks || mid < 0) {
        free(blocks);
        block_free(&k);
        return;
    }
    defo_force_model_tangent_diagonal(k.fm, blocks);
    double *bi = blocks + 9 * (size_t)mid;
    const double a = fmax(fmax(bi[0], bi[4]), bi[8]);
    for (defo_index i = 0; i < n; i++)
        for (int q = 0; q < 9; q++)
            blocks[9 * (size_t)i + q] = i == mid ? -(q % 4 == 0 ? 2.0 * a : 0.0) : 0.0;
    defo_bcsr_add_diagonal_blocks(k.A, blocks, 1.0);
    free(blocks);
    k.b[3 * (size_t)mid + 2] = -1.0;
    const char *opts[] = {NULL, "-pc_type gamg", "-pc_type jacobi"};
    for (int o = 0; o < 3; o++) {
        defo_linear_solver *s = newton_solver(opts[o]);
        defo_linear_system sys = block_system(&k);
        defo_linear_stats st;
        memset(k.x, 0, m * sizeof(double));
        defo_status rs = defo_linear_solver_solve(s, &sys, k.b, k.x, 1e-8, &st);
        CHECK_MSG(rs >= 0, "descent (%s): %s", opts[o] ? opts[o] : "default", defo_last_error());
        double g = 0;
        for (size_t j = 0; j < m; j++) g += k.b[j] * k.x[j];
        CHECK_MSG(g > 0, "descent (%s): bᵀx = %g is not > 0 (an ascent direction)",
                  opts[o] ? opts[o] : "default", g);
        CHECK_MSG(st.negative_curvature, "descent (%s): not counted as negative curvature",
                  opts[o] ? opts[o] : "default");
        /* one process, default: defo's incomplete factor of this matrix
         * fails at the negative block, and the fallback is counted */
        if (size == 1 && !opts[o])
            CHECK_MSG(st.recovered, "descent (default): the failed factor was not counted");
        CHECK(same_everywhere(k.x, m));
        REPORT("descent (%s): bᵀx = %.3e, %d iterations", opts[o] ? opts[o] : "default", g,
               st.iterations);
        defo_linear_solver_destroy(s);
    }
    if (size > 1) { /* defo's own preconditioner is a one-process one */
        defo_linear_solver *s = newton_solver("-pc_type shell");
        defo_linear_system sys = block_system(&k);
        defo_linear_stats st;
        memset(k.x, 0, m * sizeof(double));
        const defo_status rs = defo_linear_solver_solve(s, &sys, k.b, k.x, 1e-8, &st);
        CHECK_MSG(rs == DEFO_ERR_UNSUPPORTED && strstr(defo_last_error(), "one process"),
                  "-pc_type shell on %d processes: %d, %s", size, (int)rs, defo_last_error());
        defo_linear_solver_destroy(s);
    }
    block_free(&k);
}

int main(int argc, char **argv) {
    if (defo_petsc_initialize(&argc, &argv)) {
        fprintf(stderr, "%s\n", defo_last_error());
        return 1;
    }
    comm = defo_petsc_comm();
    rank = comm->rank;
    size = comm->size;
    if (rank == 0) printf("%d process%s\n", size, size == 1 ? "" : "es");
    RUN(test_squash);
    RUN(test_stiffened);
    RUN(test_descent);
    int rc = test_summary();
    defo_petsc_finalize();
    return rc;
}
