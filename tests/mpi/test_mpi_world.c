/*
 * tests/mpi/test_mpi_world.c — a world on several processes
 * (docs/distributed.md), run by ctest under `mpirun -n 1` and `-n 2`.
 * Every process runs every test; each compares what the distributed world
 * does with a world it builds alone (defo's own solvers, one process).
 *
 *   ghosts       a bar of 18 tets split by hand (centroid x < 1.5 on rank
 *                0): every element counted by exactly one process, and a
 *                node vector made whole gives every process the owners'
 *                values bit for bit (widths 3 and 9).
 *   locking      the quasistatic cantilever of tests/test_locking.c (StVK,
 *                P L²/EI = 1, Newton tolerance 1e-11), tet4 and tet10: the
 *                distributed solve (PETSc CG + GAMG) against defo's own
 *                serial one.  Both are equilibria of the serial residual
 *                to the Newton tolerance (evaluated by a force model of
 *                the whole body, independent of the distributed one), and
 *                their tips differ by less than what that tolerance allows:
 *                2 · N · c · r, N free nodes each with a residual force of
 *                at most r = tol · f_ref, c the tip's compliance (tip / P).
 *   implicit     the n = 8 cantilever of bench/scenes (corotated, backward
 *                Euler, Δt = 0.01 s, gravity), CG to 1e-10: every frame's
 *                displacements within 1e-8 (relative to the largest) of
 *                defo's serial run.
 *   resume       BDF2 (history) of an invertible bar with Newton (the joint
 *                factor's record): a distributed run stopped after frame 3
 *                and continued by a one-process world, and the reverse,
 *                equal to the uninterrupted runs within 1e-8 relative.
 * Every distributed state must also be the same bits on every process.
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

/* 1 when x (m doubles) is the same bits on every process */
static int same_everywhere(const double *x, size_t m) {
    if (size == 1) return 1;
    uint64_t h = 1469598103934665603ull;
    for (size_t k = 0; k < m; k++) {
        uint64_t b;
        memcpy(&b, x + k, 8);
        h = (h ^ b) * 1099511628211ull;
    }
    double v[2] = {(double)(h >> 32), (double)(h & 0xffffffffu)}, lo[2], hi[2];
    memcpy(lo, v, sizeof v);
    memcpy(hi, v, sizeof v);
    defo_comm_min(comm, lo, 2);
    defo_comm_max(comm, hi, 2);
    return lo[0] == hi[0] && lo[1] == hi[1];
}

/* ------------------------------------------------------------ ghosts */
static int split_by_x(void *ctx, int body, defo_index e) {
    (void)body;
    const defo_mesh *m = ctx;
    double cx = 0;
    for (int a = 0; a < 4; a++) cx += 0.25 * m->x[3 * (size_t)m->elems[4 * (size_t)e + a]];
    return size > 1 && cx >= 1.5 ? 1 : 0;
}

static void test_ghosts(void) {
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = 3, bd.size[1] = bd.size[2] = 1;
    bd.cells[0] = 3, bd.cells[1] = bd.cells[2] = 1;
    bd.origin[0] = bd.origin[1] = bd.origin[2] = 0;
    defo_mesh *m = NULL;
    defo_world *w = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    CHECK_OK(defo_world_create(NULL, &w));
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    id.linear.method = DEFO_LINEAR_BACKEND;
    CHECK_OK(defo_world_add_integrator(w, &id, NULL));
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    defo_body_id body;
    CHECK_OK(defo_world_add_body(w, &b, &body));
    defo_distribute_def dd = defo_default_distribute_def();
    dd.part_of = split_by_x;
    dd.ctx = m;
    CHECK_OK(defo_world_distribute(w, comm, &dd));
    const defo_partition *P = defo_body_partition(w, body);
    CHECK(size == 1 ? P == NULL : P != NULL);
    if (P) {
        /* the hand split, and every element counted by exactly one process */
        int hand = 1;
        for (defo_index e = 0; e < m->num_elems; e++)
            hand &= P->elem_part[e] == split_by_x(m, 0, e);
        CHECK(hand);
        double *counted = calloc((size_t)m->num_elems, sizeof *counted);
        defo_index *le = NULL, nl = 0;
        unsigned char *cnt = NULL;
        CHECK_OK(defo_partition_local(P, m, rank, &le, &cnt, &nl));
        for (defo_index k = 0; k < nl; k++) counted[le[k]] = cnt[k];
        defo_comm_sum(comm, counted, (int)m->num_elems);
        int once = 0;
        for (defo_index e = 0; e < m->num_elems; e++) once += counted[e] == 1.0;
        CHECK_MSG(once == m->num_elems, "%d of %ld elements counted once", once,
                  (long)m->num_elems);
        defo_free(le);
        defo_free(cnt);
        free(counted);
        /* owned values exact everywhere, ghosts and the rest replaced */
        for (int width = 3; width <= 9; width += 6) {
            const size_t nv = (size_t)width * (size_t)m->num_nodes;
            double *v = malloc(nv * sizeof *v);
            for (defo_index i = 0; i < m->num_nodes; i++)
                for (int c = 0; c < width; c++)
                    v[(size_t)width * i + c] =
                        P->node_owner[i] == rank ? sin(1.0 + 7.0 * i + c) : NAN;
            CHECK_OK(defo_body_complete(w, body, v, width));
            int exact = 1;
            for (defo_index i = 0; i < m->num_nodes; i++)
                for (int c = 0; c < width; c++) {
                    const double want = sin(1.0 + 7.0 * i + c);
                    exact &= memcmp(&v[(size_t)width * i + c], &want, 8) == 0;
                }
            CHECK_MSG(exact, "width %d: a node's value is not its owner's", width);
            free(v);
        }
        defo_index own = 0;
        for (defo_index i = 0; i < m->num_nodes; i++) own += P->node_owner[i] == rank;
        REPORT("%ld tets split by hand, rank 0 owns %ld of %ld nodes: every element counted once, "
               "ghost values equal to their owners' bit for bit",
               (long)m->num_elems, (long)own, (long)m->num_nodes);
    }
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------ cantilevers */
typedef struct bar_def {
    int order, cells[3];
    double size[3];
    defo_integrator_kind kind;
    defo_formulation form;
    defo_material_model model;
    double youngs, poisson, tolerance, cg_tolerance, time_step;
    int backend, distribute, gravity;
    double load; /* tip traction as a fraction of E I / L² (the locking test's P) */
} bar_def;

typedef struct bar {
    defo_mesh *mesh;
    defo_world *world;
    defo_body_id body;
    unsigned char *end; /* nodes of the x = L face */
    double P;           /* total tip load [N] */
} bar;

static void bar_free(bar *b) {
    defo_world_destroy(b->world);
    defo_mesh_destroy(b->mesh);
    free(b->end);
    memset(b, 0, sizeof *b);
}

static int bar_make(const bar_def *d, bar *b) {
    memset(b, 0, sizeof *b);
    defo_box_def bd = defo_default_box_def();
    for (int k = 0; k < 3; k++) {
        bd.size[k] = d->size[k];
        bd.cells[k] = d->cells[k];
        bd.origin[k] = k == 0 ? 0 : -d->size[k] / 2;
    }
    bd.split = DEFO_SPLIT_6;
    bd.order = d->order;
    defo_world_def wd = defo_default_world_def();
    if (!d->gravity) wd.gravity[2] = 0;
    CHECK_OK(defo_generate_box(&bd, &b->mesh));
    CHECK_OK(defo_world_create(&wd, &b->world));
    if (!b->mesh || !b->world) return 0;
    defo_integrator_def id = defo_default_integrator_def(d->kind);
    id.tolerance = d->tolerance;
    if (d->time_step > 0) id.time_step = d->time_step;
    if (d->cg_tolerance > 0) id.linear.tolerance = d->cg_tolerance;
    if (d->backend) id.linear.method = DEFO_LINEAR_BACKEND;
    CHECK_OK(defo_world_add_integrator(b->world, &id, NULL));
    defo_body_def bo = defo_default_body_def();
    bo.mesh = b->mesh;
    bo.material.model = d->model;
    bo.material.youngs_modulus = d->youngs;
    bo.material.poisson = d->poisson;
    bo.material.density = 1000;
    bo.force.formulation = d->form;
    CHECK_OK(defo_world_add_body(b->world, &bo, &b->body));
    const double o[3] = {0, 0, 0}, nx[3] = {1, 0, 0}, pl[3] = {d->size[0], 0, 0},
                 mx[3] = {-1, 0, 0};
    defo_region clamp = defo_region_plane(o, nx);
    CHECK_OK(defo_body_prescribe(b->world, b->body, &clamp, NULL, NULL));
    b->end = calloc((size_t)b->mesh->num_nodes, 1);
    defo_region face = defo_region_plane(pl, mx);
    CHECK_OK(defo_region_mark(b->mesh, &face, b->end));
    if (d->load > 0) {
        const double A = d->size[1], L = d->size[0], I = pow(A, 4) / 12;
        b->P = d->load * d->youngs * I / (L * L);
        const double t[3] = {0, 0, -b->P / (A * A)};
        double area = 0;
        CHECK_OK(defo_element_traction_load(b->mesh, b->end, t,
                                            defo_body_external_force(b->world, b->body), &area));
    }
    if (d->distribute) {
        defo_distribute_def dd = defo_default_distribute_def();
        CHECK_OK(defo_world_distribute(b->world, comm, &dd));
    }
    return 1;
}

/* −mean z displacement of the end face */
static double bar_tip(const bar *b) {
    const double *x = defo_body_positions(b->world, b->body);
    double dz = 0;
    int k = 0;
    for (defo_index i = 0; i < b->mesh->num_nodes; i++)
        if (b->end[i]) dz += x[3 * i + 2] - b->mesh->x[3 * i + 2], k++;
    return -dz / k;
}

/* max over free nodes of |f_int(x) + f_ext| by a whole-body force model, and
 * the reference force f_ref = max |f_ext| + (2μ + λ) h² (the world's) */
static double serial_residual(const bar_def *d, const bar *b, const double *x, double *f_ref) {
    defo_material_def md = defo_default_material();
    md.model = d->model;
    md.youngs_modulus = d->youngs;
    md.poisson = d->poisson;
    md.density = 1000;
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = d->form;
    defo_material *mat = NULL;
    defo_element_rest *rest = NULL;
    defo_force_model *fm = NULL;
    CHECK_OK(defo_material_create(&md, &mat));
    CHECK_OK(defo_element_rest_create(b->mesh, &rest));
    CHECK_OK(defo_force_model_create(b->mesh, rest, mat, &fd, &fm));
    const size_t n3 = 3 * (size_t)b->mesh->num_nodes;
    double *f = malloc(n3 * sizeof *f);
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, f, NULL));
    const double *load = defo_body_loads(b->world, b->body);
    const unsigned char *pre = defo_body_prescribed(b->world, b->body);
    double r = 0, fl = 0;
    for (defo_index i = 0; i < b->mesh->num_nodes; i++) {
        const double *li = load + 3 * (size_t)i;
        fl = fmax(fl, sqrt(li[0] * li[0] + li[1] * li[1] + li[2] * li[2]));
        if (pre[i]) continue;
        double s = 0;
        for (int c = 0; c < 3; c++) s += pow(f[3 * i + c] + li[c], 2);
        r = fmax(r, sqrt(s));
    }
    const double h = defo_mesh_mean_edge(b->mesh);
    *f_ref = fl + defo_material_stiffness_scale(mat) * h * h;
    free(f);
    defo_force_model_destroy(fm);
    defo_element_rest_destroy(rest);
    defo_material_destroy(mat);
    return r;
}

static void locking_case(int order, int cells_x) {
    bar_def d;
    memset(&d, 0, sizeof d);
    d.order = order;
    d.cells[0] = cells_x, d.cells[1] = d.cells[2] = cells_x / 10;
    d.size[0] = 1, d.size[1] = d.size[2] = 0.1;
    d.kind = DEFO_INTEGRATOR_QUASISTATIC;
    d.form = DEFO_FORMULATION_INVERTIBLE;
    d.model = DEFO_MODEL_STVK;
    d.youngs = 1e6, d.poisson = 0.3, d.tolerance = 1e-11, d.load = 1;
    bar serial, dist;
    if (!bar_make(&d, &serial)) return;
    d.backend = d.distribute = 1;
    if (!bar_make(&d, &dist)) {
        bar_free(&serial);
        return;
    }
    CHECK_OK(defo_world_step(serial.world, 1.0));
    CHECK_OK(defo_world_step(dist.world, 1.0));
    defo_step_stats s1, s2;
    defo_world_stats(serial.world, &s1);
    defo_world_stats(dist.world, &s2);
    const double *x2 = defo_body_positions(dist.world, dist.body);
    const size_t n3 = 3 * (size_t)dist.mesh->num_nodes;
    CHECK(same_everywhere(x2, n3));
    double fref = 0;
    const double r1 =
        serial_residual(&d, &serial, defo_body_positions(serial.world, serial.body), &fref);
    const double r2 = serial_residual(&d, &dist, x2, &fref);
    const double tip1 = bar_tip(&serial), tip2 = bar_tip(&dist);
    defo_index nfree = 0;
    const unsigned char *pre = defo_body_prescribed(dist.world, dist.body);
    for (defo_index i = 0; i < dist.mesh->num_nodes; i++) nfree += !pre[i];
    const double r = d.tolerance * fref, bound = 2.0 * (double)nfree * (tip1 / serial.P) * r;
    /* both equilibria to the tolerance (a margin for the rounding of the
     * residual's own evaluation, 1e-12 of the forces) */
    CHECK_MSG(r1 <= r * (1 + 1e-3) && r2 <= r * (1 + 1e-3),
              "residuals %g (serial), %g "
              "(distributed), tolerance %g",
              r1, r2, r);
    CHECK_MSG(fabs(tip2 - tip1) <= bound, "tips %.12g %.12g differ by %g > %g", tip1, tip2,
              fabs(tip2 - tip1), bound);
    REPORT("tet%d %d×%d×%d: tip %.6f m serial (%d Newton), %.6f m on %d rank%s (%d Newton, %d CG): "
           "|Δ| %.2g m (Newton tolerance allows %.2g); serial residual of the distributed "
           "solution %.2g ≤ %.2g",
           order == 1 ? 4 : 10, d.cells[0], d.cells[1], d.cells[2], tip1, s1.newton_iterations,
           tip2, size, size == 1 ? "" : "s", s2.newton_iterations, s2.cg_iterations,
           fabs(tip2 - tip1), bound, r2, r);
    bar_free(&serial);
    bar_free(&dist);
}

static void test_locking(void) {
    /* a fifth of the locking test's cells along each side: the full load
     * takes 26 (tet4) and 38 (tet10) Newton iterations, each a GAMG setup */
    locking_case(1, 20);
    locking_case(2, 10);
}

/* max |a − b| / max |a − X| (displacements) */
static double rel_diff(const defo_mesh *m, const double *a, const double *b) {
    double d = 0, u = 0;
    for (size_t k = 0; k < 3 * (size_t)m->num_nodes; k++) {
        d = fmax(d, fabs(a[k] - b[k]));
        u = fmax(u, fabs(a[k] - m->x[k]));
    }
    return u > 0 ? d / u : d;
}

static void test_implicit(void) {
    bar_def d;
    memset(&d, 0, sizeof d);
    d.order = 1;
#ifdef DEFO_SANITIZED
    d.cells[0] = 16, d.cells[1] = d.cells[2] = 4;
#else
    d.cells[0] = 32, d.cells[1] = d.cells[2] = 8;
#endif
    d.size[0] = 1, d.size[1] = d.size[2] = 0.25;
    d.kind = DEFO_INTEGRATOR_BACKWARD_EULER;
    d.form = DEFO_FORMULATION_COROTATED;
    d.model = DEFO_MODEL_COROTATED;
    d.youngs = 1e6, d.poisson = 0.45, d.tolerance = 1e-6, d.cg_tolerance = 1e-10;
    d.time_step = 0.01;
    d.gravity = 1;
    bar serial, dist;
    if (!bar_make(&d, &serial)) return;
    d.backend = d.distribute = 1;
    if (!bar_make(&d, &dist)) {
        bar_free(&serial);
        return;
    }
    const int frames = 8;
    double worst = 0;
    int same = 1;
    for (int f = 0; f < frames; f++) {
        CHECK_OK(defo_world_step(serial.world, 0.01));
        CHECK_OK(defo_world_step(dist.world, 0.01));
        const double *x2 = defo_body_positions(dist.world, dist.body);
        const double e = rel_diff(serial.mesh, defo_body_positions(serial.world, serial.body), x2);
        CHECK_MSG(e <= 1e-8, "frame %d: relative difference %g", f + 1, e);
        worst = fmax(worst, e);
        same &= same_everywhere(x2, 3 * (size_t)dist.mesh->num_nodes);
    }
    CHECK(same);
    REPORT("n = %d cantilever, backward Euler, %d frames on %d rank%s: every frame within %.2g "
           "(relative) of the serial run, tip %.4g m",
           d.cells[1], frames, size, size == 1 ? "" : "s", worst, bar_tip(&dist));
    bar_free(&serial);
    bar_free(&dist);
}

/* ------------------------------------------------------------ resume */
static bar_def resume_def(int distribute) {
    bar_def d;
    memset(&d, 0, sizeof d);
    d.order = 1;
    d.cells[0] = 12, d.cells[1] = d.cells[2] = 3;
    d.size[0] = 1, d.size[1] = d.size[2] = 0.25;
    d.kind = DEFO_INTEGRATOR_BDF2;
    d.form = DEFO_FORMULATION_INVERTIBLE;
    d.model = DEFO_MODEL_NEO_HOOKEAN;
    d.youngs = 2e5, d.poisson = 0.4, d.tolerance = 1e-10, d.time_step = 1.0 / 60;
    d.gravity = 1, d.backend = 1, d.distribute = distribute;
    return d;
}

/* k frames on a world (distributed or not), its state handed to a fresh
 * world of the other kind, K − k more: the final positions */
static void resumed(int first_distributed, int k, int K, double *out) {
    bar_def d = resume_def(first_distributed);
    bar a, b;
    if (!bar_make(&d, &a)) return;
    for (int f = 0; f < k; f++) CHECK_OK(defo_world_step(a.world, 1.0 / 30));
    void *data = NULL;
    size_t bytes = 0;
    CHECK_OK(defo_world_serialize(a.world, 7, &data, &bytes));
    d.distribute = !first_distributed;
    if (bar_make(&d, &b)) {
        CHECK_OK(defo_world_deserialize(b.world, 7, data, bytes));
        for (int f = k; f < K; f++) CHECK_OK(defo_world_step(b.world, 1.0 / 30));
        memcpy(out, defo_body_positions(b.world, b.body),
               3 * (size_t)b.mesh->num_nodes * sizeof(double));
        bar_free(&b);
    }
    defo_free(data);
    bar_free(&a);
}

static void test_resume(void) {
    const int k = 3, K = 6;
    double err[2] = {0, 0};
    for (int first = 0; first < 2; first++) {
        bar_def d = resume_def(first);
        bar u;
        if (!bar_make(&d, &u)) return;
        for (int f = 0; f < K; f++) CHECK_OK(defo_world_step(u.world, 1.0 / 30));
        const size_t n3 = 3 * (size_t)u.mesh->num_nodes;
        double *x = malloc(n3 * sizeof *x);
        resumed(first, k, K, x);
        err[first] = rel_diff(u.mesh, defo_body_positions(u.world, u.body), x);
        CHECK(same_everywhere(x, n3));
        CHECK_MSG(err[first] <= 1e-8, "%s → %s: relative difference %g",
                  first ? "distributed" : "one process", first ? "one process" : "distributed",
                  err[first]);
        free(x);
        bar_free(&u);
    }
    REPORT("BDF2, stopped after frame %d of %d: %d rank%s → 1 differs from uninterrupted by %.2g, "
           "1 → %d by %.2g (relative)",
           k, K, size, size == 1 ? "" : "s", err[1], size, err[0]);
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
#ifdef DEFO_SANITIZED
    if (rank == 0)
        printf("sanitizer build: leak detection off (OpenMPI's plugins leak at exit from "
               "unloaded code); address and undefined-behaviour checks on\n");
#endif
    RUN(test_ghosts);
    RUN(test_locking);
    RUN(test_implicit);
    RUN(test_resume);
    int rc = test_summary();
    defo_petsc_finalize();
    return rc;
}
