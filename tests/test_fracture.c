/*
 * tests/test_fracture.c — MG04 §4 fracture by vertex splitting.
 *
 * References used:
 *   - analytic: a ν = 0 bar whose ends move apart at constant speed, started
 *     with the matching linear velocity field, is an exact homogeneous
 *     solution (uniform uniaxial stress E·ε, no inertia): the first split
 *     happens at the first step where E·ε exceeds the threshold, so the
 *     measured σ_max at the first fracture lies in [threshold, threshold +
 *     E·Δε_step]; the end reaction equals E·A·ε;
 *   - topology: the bar ends in two components, each a substantial piece
 *     (one split per step: under this uniform stress, splitting every
 *     element over the threshold at once cuts the bar everywhere without
 *     separating it — measured: 40 splits in one step, never two pieces);
 *   - conservation: total mass and momentum are unchanged by every split
 *     (the split node's lumped mass is shared by its copies); no element is
 *     inverted by splitting (nodes do not move);
 *   - determinism: the same seed gives bitwise identical node and element
 *     arrays; 1 vs 2 threads bitwise identical.
 */
#include "defo/backward_euler.h"
#include "defo/corotated.h"
#include "defo/fracture.h"
#include "defo/mesh.h"
#include "determinism.h"
#include "test.h"

#define L_BAR  1.0
#define E_MOD  1e5
#define THRESH 1e3
#define SPEED  0.005 /* each end [m/s] */
#define DT     0.01

typedef struct pull_result {
    int first_step, separate_step;
    double sigma_first, strain_first, force_first;
    double strain_separate;
    double mass_err, mom_err; /* worst relative change across a fracture call */
    defo_index inverted, components, splits, smallest_piece, num_elems;
    defo_index num_nodes;
    defo_index *elems; /* copies of the final state (malloc) */
    double *x;
} pull_result;

static void pull(int cx, int cyz, uint64_t seed, int max_steps, pull_result *r) {
    memset(r, 0, sizeof *r);
    r->first_step = r->separate_step = -1;
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = cx;
    bd.cells[1] = bd.cells[2] = cyz;
    bd.size[0] = L_BAR;
    bd.size[1] = bd.size[2] = 0.2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_material_def mat = defo_default_material();
    mat.youngs_modulus = E_MOD;
    mat.poisson = 0;
    mat.density = 1000;
    defo_backward_euler_def d = defo_default_backward_euler_def();
    d.time_step = DT;
    d.gravity[2] = 0;
    d.cg_tolerance = 1e-10;
    defo_backward_euler *be = NULL;
    CHECK_OK(defo_backward_euler_create(m, &mat, &d, &be));
    defo_fracture_def fd = defo_default_fracture_def();
    fd.threshold = THRESH;
    fd.seed = seed;
    fd.max_splits = 1; /* crack grows from its tips, one split per step */
    defo_fracture *f = NULL;
    CHECK_OK(defo_fracture_create(m, &mat, &fd, &f));
    {
        double *v = defo_backward_euler_velocities(be);
        unsigned char *con = defo_backward_euler_constraints(be);
        for (defo_index i = 0; i < m->num_nodes; i++) {
            double X = m->x[3 * i];
            v[3 * i] = SPEED * (2 * X / L_BAR - 1);
            if (X < 1e-9 || X > L_BAR - 1e-9) con[i] = DEFO_CONSTRAINT_FIXED;
        }
    }
    double *fel = NULL;
    for (int step = 1; step <= max_steps; step++) {
        CHECK_OK(defo_backward_euler_step(be, NULL));
        /* state before the fracture pass: strain, reaction, mass, momentum */
        const defo_index n0 = m->num_nodes;
        double *x = defo_backward_euler_positions(be);
        double *v = defo_backward_euler_velocities(be);
        const double *mass = defo_backward_euler_mass(be);
        double M0 = 0, P0[3] = {0, 0, 0};
        for (defo_index i = 0; i < n0; i++) {
            M0 += mass[i];
            for (int k = 0; k < 3; k++) P0[k] += mass[i] * v[3 * i + k];
        }
        /* the ends' positions are kinematic: ε from the prescribed motion */
        const double strain = 2 * SPEED * step * DT / L_BAR;
        CHECK_OK(defo_backward_euler_update_rotations(be));
        fel = realloc(fel, 3 * (size_t)n0 * sizeof(double));
        CHECK_OK(defo_corotated_forces(defo_backward_euler_force_model(be), x, fel, NULL));
        double reaction = 0;
        for (defo_index i = 0; i < n0; i++)
            if (m->x[3 * i] > L_BAR - 1e-9) reaction -= fel[3 * i];
        defo_fracture_stats fs;
        CHECK_OK(defo_fracture_step(f, be, &fs));
        mass = defo_backward_euler_mass(be);
        v = defo_backward_euler_velocities(be);
        double M1 = 0, P1[3] = {0, 0, 0};
        for (defo_index i = 0; i < m->num_nodes; i++) {
            M1 += mass[i];
            for (int k = 0; k < 3; k++) P1[k] += mass[i] * v[3 * i + k];
        }
        if (fs.splits > 0) {
            r->mass_err = fmax(r->mass_err, fabs(M1 - M0) / M0);
            double pscale = M0 * SPEED;
            for (int k = 0; k < 3; k++) r->mom_err = fmax(r->mom_err, fabs(P1[k] - P0[k]) / pscale);
            defo_index inv = 0;
            CHECK_OK(defo_mesh_count_inverted(m, defo_backward_euler_positions(be), &inv, NULL));
            r->inverted += inv;
        }
        r->splits += fs.splits;
        if (fs.splits > 0 && r->first_step < 0) {
            r->first_step = step;
            r->sigma_first = fs.max_stress;
            r->strain_first = strain;
            r->force_first = reaction;
        }
        if (fs.components > 1 && r->separate_step < 0) {
            r->separate_step = step;
            r->strain_separate = strain;
        }
        r->components = fs.components;
        if (r->separate_step > 0 && step > r->separate_step + 5) break;
    }
    free(fel);
    defo_index *comp = malloc((size_t)m->num_elems * sizeof(defo_index));
    defo_index nc = 0;
    CHECK_OK(defo_mesh_components(m, comp, &nc));
    r->smallest_piece = m->num_elems;
    for (defo_index c = 0; c < nc; c++) {
        defo_index cnt = 0;
        for (defo_index e = 0; e < m->num_elems; e++) cnt += comp[e] == c;
        if (cnt < r->smallest_piece) r->smallest_piece = cnt;
    }
    free(comp);
    r->num_elems = m->num_elems;
    r->num_nodes = m->num_nodes;
    r->elems = malloc(4 * (size_t)m->num_elems * sizeof(defo_index));
    memcpy(r->elems, m->elems, 4 * (size_t)m->num_elems * sizeof(defo_index));
    r->x = malloc(3 * (size_t)m->num_nodes * sizeof(double));
    memcpy(r->x, defo_backward_euler_positions(be), 3 * (size_t)m->num_nodes * sizeof(double));
    defo_fracture_destroy(f);
    defo_backward_euler_destroy(be);
    defo_mesh_destroy(m);
}

static void pull_free(pull_result *r) {
    free(r->elems);
    free(r->x);
}

static void test_bar_pulled_apart(void) {
    pull_result r;
    pull(10, 2, 7, 400, &r);
    const double dsig = E_MOD * 2 * SPEED * DT / L_BAR; /* stress increment per step */
    const double area = 0.2 * 0.2;
    TEST_REPORT("first split at step %d: sigma_max %.4f Pa (threshold %.0f, +%.0f per step), "
                "E*eps %.4f Pa, end force %.6f N vs E*A*eps %.6f N",
                r.first_step, r.sigma_first, THRESH, dsig, E_MOD * r.strain_first, r.force_first,
                E_MOD * area * r.strain_first);
    TEST_REPORT("two pieces at step %d (eps %.5f, load %.1f%% of the threshold load), %ld splits, "
                "%ld components, smallest piece %ld of %ld tets",
                r.separate_step, r.strain_separate, 100 * E_MOD * r.strain_separate / THRESH,
                (long)r.splits, (long)r.components, (long)r.smallest_piece, (long)r.num_elems);
    TEST_REPORT("across splits: mass change %.2e, momentum change %.2e (relative), inverted %ld",
                r.mass_err, r.mom_err, (long)r.inverted);
    CHECK(r.first_step > 0);
    CHECK(r.sigma_first > THRESH);
    CHECK(r.sigma_first <= THRESH + dsig * (1 + 1e-6));
    CHECK_NEAR(r.sigma_first, E_MOD * r.strain_first, 1e-6 * THRESH);
    CHECK_NEAR(r.force_first, E_MOD * area * r.strain_first, 1e-6 * THRESH * area);
    CHECK(r.separate_step >= r.first_step);
    CHECK(E_MOD * r.strain_separate <=
          1.2 * THRESH); /* the cut completes near the threshold load */
    CHECK(r.components == 2);
    CHECK(r.smallest_piece >= r.num_elems / 10);
    CHECK(r.mass_err <= 1e-13);
    CHECK(r.mom_err <= 1e-12);
    CHECK(r.inverted == 0);
    pull_free(&r);
}

static void test_seed_reproducible(void) {
    pull_result a, b, c;
    pull(10, 2, 42, 400, &a);
    pull(10, 2, 42, 400, &b);
    pull(10, 2, 43, 400, &c);
    CHECK(a.num_nodes == b.num_nodes && a.num_elems == b.num_elems);
    if (a.num_nodes == b.num_nodes) {
        CHECK(memcmp(a.elems, b.elems, 4 * (size_t)a.num_elems * sizeof(defo_index)) == 0);
        CHECK(memcmp(a.x, b.x, 3 * (size_t)a.num_nodes * sizeof(double)) == 0);
    }
    int differ = c.num_nodes != a.num_nodes ||
                 memcmp(a.elems, c.elems, 4 * (size_t)a.num_elems * sizeof(defo_index)) != 0;
    TEST_REPORT("seed 42 twice: identical; seed 43 %s (%ld vs %ld nodes)",
                differ ? "differs" : "gives the same cracks", (long)c.num_nodes, (long)a.num_nodes);
    CHECK(c.components == 2);
    pull_free(&a);
    pull_free(&b);
    pull_free(&c);
}

#define DET_MAX_NODES 4000
#define DET_ELEMS     1536 /* 16×4×4 cubes × 6 */
#define DET_BYTES     (DET_MAX_NODES * 3 * sizeof(double) + sizeof(defo_index) * (4 * DET_ELEMS + 1))
static void det_compute(void *ctx, void *out) {
    (void)ctx;
    pull_result r;
    pull(16, 4, 5, TEST_HEAVY(200), &r);
    memset(out, 0, DET_BYTES);
    double *xo = out;
    if (r.num_nodes <= DET_MAX_NODES) memcpy(xo, r.x, 3 * (size_t)r.num_nodes * sizeof(double));
    defo_index *eo = (defo_index *)(xo + 3 * DET_MAX_NODES);
    eo[0] = r.num_nodes;
    memcpy(eo + 1, r.elems, 4 * (size_t)r.num_elems * sizeof(defo_index));
    pull_free(&r);
}

static void test_threads_bitwise(void) {
    /* 16×4×4 cubes = 1536 tets: the element loops run in parallel */
    CHECK(test_bitwise_same_for_threads(det_compute, NULL, DET_BYTES, 2));
}

/* Once warm, a step of a body below its threshold (fracture pass, then the
 * implicit Euler step) allocates nothing: counted through the allocator hook. */
static long alloc_calls;
static void *count_alloc(size_t size, void *user) {
    (void)user;
    alloc_calls++;
    return malloc(size);
}
static void count_free(void *p, void *user) {
    (void)user;
    free(p);
}

static void test_no_allocation_without_splits(void) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 6;
    bd.cells[1] = bd.cells[2] = 2;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_material_def mat = defo_default_material();
    mat.youngs_modulus = 1e5;
    mat.poisson = 0.3;
    defo_backward_euler *be = NULL;
    CHECK_OK(defo_backward_euler_create(m, &mat, NULL, &be));
    defo_fracture_def fd = defo_default_fracture_def();
    fd.threshold = 1e12; /* never reached */
    defo_fracture *f = NULL;
    CHECK_OK(defo_fracture_create(m, &mat, &fd, &f));
    defo_fracture_stats fs;
    for (int k = 0; k < 2; k++) { /* warm-up */
        CHECK_OK(defo_fracture_step(f, be, &fs));
        CHECK_OK(defo_backward_euler_step(be, NULL));
    }
    defo_set_allocator(count_alloc, count_free, NULL);
    alloc_calls = 0;
    for (int k = 0; k < 5; k++) {
        CHECK_OK(defo_fracture_step(f, be, &fs));
        CHECK_OK(defo_backward_euler_step(be, NULL));
    }
    defo_set_allocator(NULL, NULL, NULL);
    TEST_REPORT("%ld allocations in 5 warm steps; %ld component(s)", alloc_calls,
                (long)fs.components);
    CHECK(alloc_calls == 0);
    CHECK(fs.splits == 0 && fs.components == 1);
    defo_fracture_destroy(f);
    defo_backward_euler_destroy(be);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_bar_pulled_apart);
    RUN(test_seed_reproducible);
    RUN(test_threads_bitwise);
    RUN(test_no_allocation_without_splits);
    return test_summary();
}
