/*
 * tests/test_plasticity_world.c — plastic bodies in the world: what a
 * sculptor relies on (volume kept, never inverted, a permanent shape,
 * control toward a goal, annealing), every model with every formulation and
 * integrator, and resumed runs.
 *
 * References used:
 *   - conserved quantity: the volume of a cube squashed 30 % between clamped
 *     plates and released (plastic flow of the volume-keeping models is
 *     isochoric: V/V0 within 1 % of 1); its height stays within 5 % of the
 *     squashed one (yield far below the applied strain);
 *   - invariant: crushed 97 % and released, no element stays inverted (the
 *     plastic part never inverts), the volume stays within 5 %, and the
 *     equilibrium solvers take Newton iterations after the release (they are
 *     not stuck at a plastic rest shape that is itself inverted);
 *   - closed form: a bar in uniform tension (free, pulled by dead tractions
 *     on both ends) loaded, unloaded and reversed follows the 1D linear
 *     kinematic hardening loop of its measured strain history (MTPS08
 *     Fig. 4) within 1 % of max(|σ|, σ_y);
 *   - plasticity control (ITF04 §7): a block driven affinely past its goal
 *     shape and released ends at the goal (to the tolerance stated there);
 *   - annealing (MTPS08 §5.3): zero force at the committed state; the first
 *     eigenfrequency of a committed bent beam equals that of the same beam
 *     meshed in the bent shape;
 *   - annealing a body with fibres (ITF04 §6.1) carries each fibre with the
 *     material, a ← F a/|F a|: the committed body's energy under a further
 *     deformation equals that of the body meshed in the committed shape
 *     with the carried fibres (and differs from one with the old fibres);
 *   - checkpoints: a resumed run equals the uninterrupted one bit for bit.
 */
#include "defo/element.h"
#include "defo/fibre.h"
#include "defo/mesh.h"
#include "defo/plasticity.h"
#include "defo/solver.h"
#include "defo/world.h"
#include "determinism.h"
#include "test.h"

static defo_mesh *box(int cx, int cy, int cz, double lx, double ly, double lz, int order) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = cx, d.cells[1] = cy, d.cells[2] = cz;
    d.size[0] = lx, d.size[1] = ly, d.size[2] = lz;
    d.order = order;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&d, &m));
    return m;
}

static defo_material_def material(double E, double nu) {
    defo_material_def mat = defo_default_material();
    mat.youngs_modulus = E;
    mat.poisson = nu;
    mat.density = 1000;
    return mat;
}

static double volume(const defo_mesh *m, const double *x) {
    double v = 0;
    CHECK_OK(defo_element_volume(m, x, &v));
    return v;
}

/* mean coordinate k of the nodes whose rest coordinate k is at `at` */
static double face_mean(const defo_mesh *m, const double *x, int k, double at) {
    double s = 0;
    int n = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (fabs(m->x[3 * i + k] - at) < 1e-9) s += x[3 * i + k], n++;
    return n ? s / n : NAN;
}

static const char *model_names[3] = {"mg04", "von_mises", "multiplicative"};

/* The squash of the issue: a 1 m cube (E 1 MPa, ν 0.3) clamped at z = 0 and
 * z = 1, the top plate moved down by `depth` m in 10 frames of 0.1 s, the top
 * released, 12 more frames.  Plasticity: model k with a yield far below the
 * applied strain.  Returns V/V0 after the release; *h the height then,
 * *inv the inverted elements, *iters the Newton iterations of the first
 * frame after the release. */
static double squash(int k, defo_formulation form, defo_integrator_kind kind, double depth,
                     int cells, int order, double *h, defo_index *inv, int *iters) {
    defo_mesh *m = box(cells, cells, cells, 1, 1, 1, order);
    /* the box spans [0, 1]³ */
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = defo_default_integrator_def(kind);
    const double frame = 0.1;
    double dt = frame;
    if (kind == DEFO_INTEGRATOR_BACKWARD_EULER || kind == DEFO_INTEGRATOR_BDF2) {
        idef.time_step = dt = 0.05; /* backward Euler's damping settles the release */
        idef.rayleigh_mass = 10;
    }
    if (kind == DEFO_INTEGRATOR_NEWMARK) idef.rayleigh_mass = 10;
    defo_plasticity_def pd = defo_default_plasticity_def();
    if (k == 0) pd.yield = 0.001, pd.creep = 1 / dt, pd.max = 10;
    if (k == 1) pd = defo_default_von_mises_def(1e3, 0);
    if (k == 2) pd = defo_default_multiplicative_def(0.001);
    if (kind == DEFO_INTEGRATOR_NEWMARK && k == 0) pd.creep = 200; /* its steps are shorter */
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = material(1e6, 0.3);
    bd.material.damping_time = kind == DEFO_INTEGRATOR_NEWMARK ? 0.002 : 0;
    bd.force.formulation = form;
    bd.plasticity = k >= 0 ? &pd : NULL;
    defo_body_id id;
    CHECK_OK(defo_world_add_integrator(w, &idef, &bd.integrator));
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    const double lo0[3] = {-INFINITY, -INFINITY, -INFINITY}, hi0[3] = {INFINITY, INFINITY, 0};
    const double lo1[3] = {-INFINITY, -INFINITY, 1}, hi1[3] = {INFINITY, INFINITY, INFINITY};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    defo_motion_def mo = defo_default_motion_def();
    mo.velocity[2] = -depth / (10 * frame);
    int top = -1;
    CHECK_OK(defo_body_prescribe(w, id, &r0, NULL, NULL));
    CHECK_OK(defo_body_prescribe(w, id, &r1, &mo, &top));
    const double v0 = volume(m, defo_body_positions(w, id));
    /* a crush may leave Newton short of its tolerance in its last frames
     * (elements flattened to 3 % of their height): a warning, not an error */
    for (int f = 0; f < 10; f++) CHECK(defo_world_step(w, frame) >= 0);
    CHECK_OK(defo_body_release(w, id, top));
    defo_step_stats st;
    *iters = 0;
    for (int f = 0; f < 12; f++) {
        const defo_status s = defo_world_step(w, frame);
        defo_world_stats(w, &st);
        if (f == 0) *iters = st.newton_iterations;
        /* after the release every solve converges */
        CHECK_MSG(s == DEFO_OK, "frame %d after the release: %s", f, defo_last_error());
    }
    const double *x = defo_body_positions(w, id);
    *h = face_mean(m, x, 2, 1) - face_mean(m, x, 2, 0);
    CHECK_OK(defo_body_count_inverted(w, id, inv));
    const double v = volume(m, x) / v0;
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return v;
}

/* Volume and the squashed height: every model, invertible and corotated,
 * quasistatic and backward Euler, on tet4; quasistatic on tet10 (MTPS08
 * §4's quadratic elements).  On tet4 the volume is kept over node patches
 * (plasticity.c): with each element keeping its own volume, linear
 * tetrahedra lock and the height sprang back 10-11 % of the squashed one. */
static void test_squash_and_release_keeps_volume(void) {
    const defo_formulation forms[2] = {DEFO_FORMULATION_INVERTIBLE, DEFO_FORMULATION_COROTATED};
    const defo_integrator_kind kinds[2] = {DEFO_INTEGRATOR_QUASISTATIC,
                                           DEFO_INTEGRATOR_BACKWARD_EULER};
    for (int order = 1; order <= 2; order++)
        for (int k = -1; k < 3; k++)
            for (int f = 0; f < (order == 1 ? 2 : 1); f++)
                for (int i = 0; i < (order == 1 ? 2 : 1); i++) { /* tet10: quasistatic */
                    if (order == 2 && k < 0) continue;
                    double h = 0;
                    defo_index inv = 0;
                    int it = 0;
                    const double v = squash(k, forms[f], kinds[i], 0.3, order == 2 ? 2 : 3, order,
                                            &h, &inv, &it);
                    TEST_REPORT("tet%-2d %-14s %-10s %-14s V/V0 %.4f, height after release %.4f m "
                                "(squashed 0.7)",
                                order == 2 ? 10 : 4, k < 0 ? "elastic" : model_names[k],
                                defo_formulation_name(forms[f]), defo_integrator_name(kinds[i]), v,
                                h);
                    CHECK(fabs(v - 1) <= 0.01);
                    if (k < 0)
                        CHECK(fabs(h - 1) < 0.01);
                    else
                        CHECK(fabs(h - 0.7) <= 0.05 * 0.7);
                    CHECK(inv == 0);
                }
}

/* Crushed 97 % and released, every integrator with the default mg04, every
 * model with the quasistatic solver (tet4, invertible: the formulation that
 * recovers from inversion). */
static void test_crush_and_release(void) {
    const defo_integrator_kind kinds[5] = {DEFO_INTEGRATOR_QUASISTATIC, DEFO_INTEGRATOR_STATIC,
                                           DEFO_INTEGRATOR_BACKWARD_EULER, DEFO_INTEGRATOR_BDF2,
                                           DEFO_INTEGRATOR_NEWMARK};
    for (int i = 0; i < 5; i++)
        for (int k = 0; k < (i == 0 ? 3 : 1); k++) { /* every model once, quasistatic */
            double h = 0;
            defo_index inv = 0;
            int it = 0;
            /* newmark's steps shrink with the crushed elements: a coarser cube */
            const int cells = kinds[i] == DEFO_INTEGRATOR_NEWMARK ? 2 : 3;
            const double v =
                squash(k, DEFO_FORMULATION_INVERTIBLE, kinds[i], 0.97, cells, 1, &h, &inv, &it);
            TEST_REPORT("%-14s %-14s V/V0 %.4f, height %.4f m, %ld inverted, %d Newton "
                        "iterations in the frame after the release",
                        model_names[k], defo_integrator_name(kinds[i]), v, h, (long)inv, it);
            CHECK(inv == 0);
            CHECK(v >= 0.95 && v <= 1.05);
            if (kinds[i] == DEFO_INTEGRATOR_QUASISTATIC || kinds[i] == DEFO_INTEGRATOR_STATIC)
                CHECK(it > 0);
        }
}

/* -------------------------------------------- von Mises bar, uniaxial */
typedef struct vm1d {
    double E, sy, H, ep, alpha;
} vm1d;
static double vm1d_stress(vm1d *v, double eps) {
    const double tr = v->E * (eps - v->ep), xi = tr - v->alpha;
    if (fabs(xi) <= v->sy) return tr;
    const double dg = (fabs(xi) - v->sy) / (v->E + v->H), sg = xi > 0 ? 1 : -1;
    v->ep += sg * dg, v->alpha += sg * v->H * dg;
    return v->E * (eps - v->ep);
}

/* A free bar (1 × 0.2 × 0.2 m, tet4) pulled by equal and opposite dead
 * tractions on its end faces, stepped by backward Euler with strong mass
 * damping so each load level settles (no constraint: the state is uniform). */
static void test_von_mises_bar(void) {
    const double E = 1e6, sy = 1e3, H = 2.5e5, L = 1;
    defo_mesh *m = box(8, 2, 2, L, 0.2, 0.2, 1);
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    idef.time_step = 0.5;
    idef.rayleigh_mass = 2;
    idef.linear.tolerance = 1e-12;
    defo_plasticity_def pd = defo_default_von_mises_def(sy, H);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = material(E, 0.3);
    bd.material.model = DEFO_MODEL_COROTATED;
    bd.plasticity = &pd;
    defo_body_id id;
    CHECK_OK(defo_world_add_integrator(w, &idef, &bd.integrator));
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    /* the consistent loads of a unit traction +x on x = L and −x on x = 0 */
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *unit = calloc(n3, sizeof *unit), area = 0;
    unsigned char *mark = calloc((size_t)m->num_nodes, 1);
    const double tx[3] = {1, 0, 0}, mx[3] = {-1, 0, 0};
    for (defo_index i = 0; i < m->num_nodes; i++) mark[i] = fabs(m->x[3 * i] - L) < 1e-9;
    CHECK_OK(defo_element_traction_load(m, mark, tx, unit, &area));
    for (defo_index i = 0; i < m->num_nodes; i++) mark[i] = fabs(m->x[3 * i]) < 1e-9;
    CHECK_OK(defo_element_traction_load(m, mark, mx, unit, NULL));
    double *fext = defo_body_external_force(w, id);
    double *vm = malloc((size_t)m->num_elems * sizeof *vm);
    vm1d ref = {E, sy, H, 0, 0};
    /* nominal traction path 0 → 2.6 σ_y → 0.2 σ_y → 1.2 σ_y: the reverse
     * yield at σ_max − 2σ_y = 0.6 σ_y is still in tension (a free bar under
     * compressive dead loads would turn over) */
    const double path[4] = {0, 2.6 * sy, 0.2 * sy, 1.2 * sy};
    double worst = 0, smax = 0, lastT = 0, rev = 0, prev = 0;
    int n = 0;
    for (int leg = 0; leg < 3; leg++)
        for (int k = 1; k <= 10; k++, n++) {
            const double T = path[leg] + (path[leg + 1] - path[leg]) * k / 10.0;
            for (size_t j = 0; j < n3; j++) fext[j] = T * unit[j];
            for (int f = 0; f < 24; f++) CHECK_OK(defo_world_step(w, 0.5));
            const double *x = defo_body_positions(w, id);
            const double eps = log((face_mean(m, x, 0, L) - face_mean(m, x, 0, 0)) / L);
            defo_force_fields ff;
            memset(&ff, 0, sizeof ff);
            ff.von_mises = vm;
            CHECK_OK(defo_body_fields(w, id, &ff));
            double mean = 0;
            for (defo_index e = 0; e < m->num_elems; e++) mean += vm[e];
            const double sig = (T >= 0 ? 1 : -1) * mean / (double)m->num_elems;
            const double ep = ref.ep, want = vm1d_stress(&ref, eps);
            worst = fmax(worst, fabs(sig - want) / fmax(fabs(want), sy));
            if (leg == 0) smax = sig;
            if (leg == 1 && rev == 0 && ref.ep < ep) rev = prev; /* last elastic level */
            prev = sig;
            lastT = T;
        }
    TEST_REPORT("bar in uniform tension, %d load levels: largest stress error against the "
                "closed-form loop of its strain history %.3f %% of max(|σ|, σ_y); σ_max %.1f Pa, "
                "reverse yield below %.1f Pa (σ_max − 2σ_y = %.1f), final traction %.0f Pa",
                n, 100 * worst, smax, rev, smax - 2 * sy, lastT);
    CHECK(worst < 0.01);
    CHECK(rev > 0); /* the loop did yield back */
    free(vm);
    free(unit);
    free(mark);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* ------------------------------------------ multiplicative permanent bend */
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

/* An invertible cantilever (0.6 × 0.1 × 0.1 m, E 100 kPa, damping 0.35 s)
 * under newmark loaded at its tip by 1 N for 0.5 s, then unloaded for 1.5 s;
 * with a plastic model it keeps a permanent bend.  check_resume: the
 * checkpoint taken at the unloading restores bit for bit. */
static double bend(const defo_plasticity_def *pd, double *loaded, int check_resume) {
    const double L = 0.6, F = 1.0;
    defo_mesh *m = box(6, 1, 1, L, 0.1, 0.1, 1);
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = material(1e5, 0.3);
    bd.material.damping_time = 0.35;
    bd.plasticity = pd;
    defo_body_id id;
    CHECK_OK(defo_world_add_integrator(w, &idef, &bd.integrator));
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    const double lo[3] = {-INFINITY, -INFINITY, -INFINITY}, hi[3] = {0, INFINITY, INFINITY};
    defo_region clamp = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, id, &clamp, NULL, NULL));
    double *fext = defo_body_external_force(w, id);
    int tip = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) tip += m->x[3 * i] > L - 1e-9;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] > L - 1e-9) fext[3 * i + 2] = -F / tip;
    for (int f = 0; f < 5; f++) CHECK_OK(defo_world_step(w, 0.1));
    *loaded = tip_z(m, defo_body_positions(w, id), L);
    for (defo_index i = 0; i < m->num_nodes; i++) fext[3 * i + 2] = 0;
    void *s0 = NULL, *s1 = NULL, *s2 = NULL;
    size_t n0 = 0, n1 = 0, n2 = 0;
    if (check_resume) CHECK_OK(defo_world_serialize(w, 1, &s0, &n0));
    for (int f = 0; f < 5; f++) CHECK_OK(defo_world_step(w, 0.1));
    if (check_resume) {
        CHECK_OK(defo_world_serialize(w, 1, &s1, &n1));
        CHECK_OK(defo_world_deserialize(w, 1, s0, n0));
        for (int f = 0; f < 5; f++) CHECK_OK(defo_world_step(w, 0.1));
        CHECK_OK(defo_world_serialize(w, 1, &s2, &n2));
        const int same = n1 == n2 && n1 > 0 && memcmp(s1, s2, n1) == 0;
        TEST_REPORT("%s: %zu-byte checkpoint 0.5 s after unloading %s", model_names[pd->model], n1,
                    same ? "identical after restore and rerun" : "DIFFERS");
        CHECK(same);
        defo_free(s0);
        defo_free(s1);
        defo_free(s2);
    }
    for (int f = 0; f < 10; f++) CHECK_OK(defo_world_step(w, 0.1));
    const double residual = tip_z(m, defo_body_positions(w, id), L);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return residual;
}

/* ITF04 §6.3's multiplicative model (mg04 and von_mises resume bit for bit
 * in test_scene's sculpting scene; each Newmark run here costs seconds
 * under the sanitizers) */
static void test_permanent_bend(void) {
    defo_plasticity_def defs[3] = {defo_default_plasticity_def(),
                                   defo_default_von_mises_def(200, 0),
                                   defo_default_multiplicative_def(0.002)};
    defs[0].yield = 0.002, defs[0].creep = 20, defs[0].max = 0.1;
    double load_e = 0, res_e = bend(NULL, &load_e, 0);
    TEST_REPORT("elastic: tip %.4f m under load, %.5f m 1.5 s after", load_e, res_e);
    CHECK(fabs(res_e / load_e) < 0.02);
    for (int k = 2; k < 3; k++) {
        double load = 0;
        const double res = bend(&defs[k], &load, 1);
        TEST_REPORT("%s: tip %.4f m under load, %.4f m 1.5 s after (%.0f %% kept)", model_names[k],
                    load, res, 100 * res / load);
        CHECK(load < -0.005);
        CHECK(res / load > 0.3);
    }
}

/* ------------------------------------------------- plasticity control */
/* A 0.5 m block (tet4) driven affinely to diag(1/√s, 1/√s, s), s from 1 to
 * 0.45 in 10 quasistatic frames (every node prescribed), then released and
 * left to settle under backward Euler: with the goal diag(1.25, 1.25, 0.64)
 * (ITF04 §7) the plastic flow stops at the goal and the free block takes
 * its shape; without, it keeps the driven one. */
static double control(int with_goal, double *goal_error) {
    defo_mesh *m = box(2, 2, 2, 0.5, 0.5, 0.5, 1);
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    idef.time_step = 0.05;
    idef.rayleigh_mass = 20;
    defo_plasticity_def pd = defo_default_multiplicative_def(0.005);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = material(1e5, 0.3);
    bd.plasticity = &pd;
    defo_body_id id;
    CHECK_OK(defo_world_add_integrator(w, &idef, &bd.integrator));
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    const double G[3] = {1.25, 1.25, 0.64};
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *goal = malloc(n3 * sizeof *goal);
    for (size_t j = 0; j < n3; j++) goal[j] = m->x[j] * G[j % 3];
    if (with_goal) CHECK_OK(defo_body_set_plastic_goal(w, id, goal, m->num_nodes));
    const double lo[3] = {-INFINITY, -INFINITY, -INFINITY}, hi[3] = {INFINITY, INFINITY, INFINITY};
    defo_region all = defo_region_box(lo, hi);
    int set = -1;
    CHECK_OK(defo_body_prescribe(w, id, &all, NULL, &set));
    for (int f = 1; f <= 10; f++) {
        const double s = 1 - 0.055 * f, a = 1 / sqrt(s), T[3] = {0, 0, 0};
        const double A[9] = {a, 0, 0, 0, a, 0, 0, 0, s};
        CHECK_OK(defo_body_set_transform(w, id, set, A, T));
        CHECK_OK(defo_world_step(w, 0.1));
    }
    CHECK_OK(defo_body_release(w, id, set));
    for (int f = 0; f < 20; f++) CHECK_OK(defo_world_step(w, 0.1));
    const double *x = defo_body_positions(w, id);
    const double h = face_mean(m, x, 2, 0.5) - face_mean(m, x, 2, 0);
    /* the plastic parts against the goal's log stretch */
    const defo_plasticity *p = defo_body_plasticity(w, id);
    double err = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        double Lp[6];
        defo_plasticity_log(p, e, 0, Lp);
        const double d[6] = {
            Lp[0] - log(G[0]), Lp[1] - log(G[1]), Lp[2] - log(G[2]), Lp[3], Lp[4], Lp[5]};
        err = fmax(err, sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] +
                             2 * (d[3] * d[3] + d[4] * d[4] + d[5] * d[5])));
    }
    *goal_error = err;
    free(goal);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return h / 0.5;
}

static void test_plasticity_control(void) {
    double e1 = 0, e0 = 0;
    const double h1 = control(1, &e1), h0 = control(0, &e0);
    TEST_REPORT("driven to 0.45 of its height past the goal 0.64 and released: with the goal "
                "%.4f (largest |log F_p − log F_goal| %.4f), without %.4f (%.4f)",
                h1, e1, h0, e0);
    /* tolerance: the yield γ = 0.005 of the elastic part, and 1 % of the
     * goal's log stretch for the last step's overshoot */
    CHECK(fabs(h1 - 0.64) <= 0.64 * 0.01);
    CHECK(e1 <= 0.01);
    CHECK(fabs(h0 - 0.45) <= 0.45 * 0.02);
    CHECK(e0 > 0.2);
}

/* ------------------------------------------------------- annealing */
/* A tet10 cube squashed 30 % (quasistatic, von Mises), released, annealed:
 * the committed state carries no elastic energy and a further frame does
 * not move it. */
static void test_anneal_zero_residual(void) {
    defo_mesh *m = box(2, 2, 2, 1, 1, 1, 2);
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    defo_plasticity_def pd = defo_default_von_mises_def(1e3, 1e5);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = material(1e6, 0.3);
    bd.plasticity = &pd;
    defo_body_id id;
    CHECK_OK(defo_world_add_integrator(w, &idef, &bd.integrator));
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    const double lo0[3] = {-INFINITY, -INFINITY, -INFINITY}, hi0[3] = {INFINITY, INFINITY, 0};
    const double lo1[3] = {-INFINITY, -INFINITY, 1}, hi1[3] = {INFINITY, INFINITY, INFINITY};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    defo_motion_def mo = defo_default_motion_def();
    mo.velocity[2] = -0.3;
    int top = -1;
    CHECK_OK(defo_body_prescribe(w, id, &r0, NULL, NULL));
    CHECK_OK(defo_body_prescribe(w, id, &r1, &mo, &top));
    for (int f = 0; f < 10; f++) CHECK_OK(defo_world_step(w, 0.1));
    CHECK_OK(defo_body_release(w, id, top));
    for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(w, 0.1));
    double e0 = 0, e1 = 0;
    CHECK_OK(defo_body_energy(w, id, NULL, &e0, NULL));
    const double m0 = 0, *mass = defo_body_masses(w, id);
    double mt0 = m0, mt1 = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) mt0 += mass[i];
    CHECK_OK(defo_body_anneal(w, id));
    CHECK_OK(defo_body_energy(w, id, NULL, &e1, NULL));
    mass = defo_body_masses(w, id);
    for (defo_index i = 0; i < m->num_nodes; i++) mt1 += mass[i];
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x0 = malloc(n3 * sizeof *x0), moved = 0;
    memcpy(x0, defo_body_positions(w, id), n3 * sizeof *x0);
    CHECK_OK(defo_world_step(w, 0.1));
    defo_step_stats st;
    defo_world_stats(w, &st);
    const double *x = defo_body_positions(w, id);
    for (size_t j = 0; j < n3; j++) moved = fmax(moved, fabs(x[j] - x0[j]));
    double ep_max = 0, *ep = malloc((size_t)m->num_elems * sizeof *ep);
    CHECK_OK(defo_body_plastic_strain(w, id, ep));
    for (defo_index e = 0; e < m->num_elems; e++) ep_max = fmax(ep_max, ep[e]);
    TEST_REPORT("elastic energy %.3e J before annealing, %.3e J after; a frame later the nodes "
                "moved %.1e m (%d Newton iterations); plastic strain %.1e; mass %.6f -> %.6f kg",
                e0, e1, moved, st.newton_iterations, ep_max, mt0, mt1);
    CHECK(e0 > 1);
    CHECK(e1 <= 1e-20 * 1e6);
    /* an inverted shape is no rest shape: refused naming the element, the
     * body unchanged */
    {
        const size_t n3i = 3 * (size_t)m->num_nodes;
        double *xs = malloc(n3i * sizeof *xs), *xi = malloc(n3i * sizeof *xi);
        memcpy(xs, defo_body_positions(w, id), n3i * sizeof *xs);
        for (size_t j = 0; j < n3i; j++) xi[j] = j % 3 == 2 ? -xs[j] : xs[j];
        CHECK_OK(defo_body_set_state(w, id, xi, NULL));
        CHECK(defo_body_anneal(w, id) == DEFO_ERR_INVALID_ARGUMENT);
        TEST_REPORT("anneal of a mirrored shape: %s", defo_last_error());
        CHECK(strstr(defo_last_error(), "cannot anneal") != NULL);
        CHECK_OK(defo_body_set_state(w, id, xs, NULL));
        double e2 = 0;
        CHECK_OK(defo_body_energy(w, id, NULL, &e2, NULL));
        CHECK(e2 == e1);
        /* a goal of the wrong size, or on a body without plasticity */
        CHECK(defo_body_set_plastic_goal(w, id, xs, m->num_nodes - 1) == DEFO_ERR_INVALID_ARGUMENT);
        CHECK(strstr(defo_last_error(), "the goal shape has") != NULL);
        free(xs);
        free(xi);
    }
    CHECK(moved <= 1e-12);
    CHECK(ep_max == 0);
    CHECK(fabs(mt1 - mt0) <= 1e-12 * mt0);
    free(x0);
    free(ep);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* The period of the lateral (y) oscillation of the tip (rest x ≥ L) of a
 * cantilever clamped at x ≤ 0 started by the velocity field
 * v = 0.01 (x/L)² e_y: mean spacing of the zero crossings of the tip's y
 * about its start, over 2.5 periods or so, sampled every 2 ms. */
/* The lateral period of a clamped beam's tip: its end nodes are those at
 * x = L in the straight mesh s (a mesh cloned from it numbers them alike,
 * whatever shape it rests in). */
static double tip_period(defo_world *w, defo_body_id id, double L, const defo_mesh *s) {
    const defo_mesh *m = defo_body_mesh(w, id);
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *v = calloc(n3, sizeof *v);
    const double *x = defo_body_positions(w, id);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double r = x[3 * i] / L;
        v[3 * i + 1] = r > 0 ? 0.01 * r * r : 0;
    }
    CHECK_OK(defo_body_set_state(w, id, NULL, v));
    double y0 = 0, prev = 0, t = 0, first = -1, last = -1;
    int tips = 0, crossings = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (s->x[3 * i] > L - 1e-6) y0 += x[3 * i + 1], tips++;
    y0 /= tips;
    for (int f = 0; f < 2500 && crossings < 6; f++) {
        CHECK_OK(defo_world_step(w, 0.002));
        t += 0.002;
        x = defo_body_positions(w, id);
        double y = 0;
        for (defo_index i = 0; i < m->num_nodes; i++)
            if (s->x[3 * i] > L - 1e-6) y += x[3 * i + 1];
        y = y / tips - y0;
        if (f > 0 && ((prev < 0 && y >= 0) || (prev > 0 && y <= 0))) {
            const double tc = t - 0.002 * y / (y - prev);
            if (first < 0) first = tc;
            last = tc;
            crossings++;
        }
        prev = y;
    }
    free(v);
    return crossings > 1 ? 2 * (last - first) / (crossings - 1) : NAN;
}

/* A Newmark cantilever world (0.3 × 0.06 × 0.06 m, E 10 MPa) on mesh m,
 * clamped at x ≤ 0. */
static defo_world *beam_world(const defo_mesh *m, const defo_plasticity_def *pd, double damping,
                              defo_body_id *id) {
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = material(1e7, 0.3);
    bd.material.damping_time = damping;
    bd.plasticity = pd;
    CHECK_OK(defo_world_add_integrator(w, &idef, &bd.integrator));
    CHECK_OK(defo_world_add_body(w, &bd, id));
    const double lo[3] = {-INFINITY, -INFINITY, -INFINITY}, hi[3] = {1e-9, INFINITY, INFINITY};
    defo_region clamp = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, *id, &clamp, NULL, NULL));
    return w;
}

static void test_anneal_bent_beam_frequency(void) {
    const double L = 0.3;
    defo_mesh *m = box(6, 1, 1, L, 0.06, 0.06, 1);
    for (defo_index i = 0; i < m->num_nodes; i++) m->x[3 * i + 1] -= 0.03, m->x[3 * i + 2] -= 0.03;
    /* bent 0.1 m at the tip by a handle beyond yield, released, settled */
    defo_plasticity_def pd = defo_default_multiplicative_def(0.002);
    defo_body_id id;
    defo_world *w = beam_world(m, &pd, 0.01, &id);
    const double lo[3] = {L - 1e-9, -INFINITY, -INFINITY}, hi[3] = {INFINITY, INFINITY, INFINITY};
    defo_region tipr = defo_region_box(lo, hi);
    defo_motion_def mo = defo_default_motion_def();
    mo.velocity[2] = -0.4;
    int handle = -1;
    CHECK_OK(defo_body_prescribe(w, id, &tipr, &mo, &handle));
    for (int f = 0; f < 5; f++) CHECK_OK(defo_world_step(w, 0.05));
    CHECK_OK(defo_body_release(w, id, handle));
    /* damping time 0.01 s: the first mode (~0.05 s) is damped at ζ ≈ 0.6 */
    for (int f = 0; f < 8; f++) CHECK_OK(defo_world_step(w, 0.05));
    const double bent = tip_z(m, defo_body_positions(w, id), L);
    CHECK_OK(defo_body_anneal(w, id));
    /* the checkpoint keeps the committed rest shape: restored into a world
     * that never annealed, the next frames are the same bytes */
    void *s0 = NULL, *s1 = NULL, *s2 = NULL;
    size_t n0 = 0, n1 = 0, n2 = 0;
    CHECK_OK(defo_world_serialize(w, 7, &s0, &n0));
    for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(w, 0.05));
    CHECK_OK(defo_world_serialize(w, 7, &s1, &n1));
    defo_body_id id2;
    defo_world *w2 = beam_world(m, &pd, 0.01, &id2);
    int h2 = -1;
    CHECK_OK(defo_body_prescribe(w2, id2, &tipr, &mo, &h2));
    CHECK_OK(defo_world_deserialize(w2, 7, s0, n0));
    for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(w2, 0.05));
    CHECK_OK(defo_world_serialize(w2, 7, &s2, &n2));
    CHECK(n1 == n2 && memcmp(s1, s2, n1) == 0);
    defo_world_destroy(w2);
    defo_free(s0);
    defo_free(s1);
    defo_free(s2);
    /* undamped, the committed beam's lateral period */
    defo_material_def md = material(1e7, 0.3);
    CHECK_OK(defo_body_set_material(w, id, &md));
    const double *x = defo_body_positions(w, id);
    defo_mesh *mb = NULL;
    CHECK_OK(defo_mesh_clone(m, &mb));
    memcpy(mb->x, x, 3 * (size_t)m->num_nodes * sizeof(double));
    CHECK_OK(defo_body_set_state(w, id, NULL, NULL));
    const double t_commit = tip_period(w, id, L, m);
    /* the beam meshed in the bent shape, and the straight one */
    defo_body_id ib, is;
    defo_world *wb = beam_world(mb, NULL, 0, &ib), *ws = beam_world(m, NULL, 0, &is);
    const double t_mesh = tip_period(wb, ib, L, m), t_straight = tip_period(ws, is, L, m);
    TEST_REPORT("tip bent %.4f m; lateral period: committed %.5f s, meshed bent %.5f s (%.3f %%), "
                "straight %.5f s",
                bent, t_commit, t_mesh, 100 * (t_commit / t_mesh - 1), t_straight);
    CHECK(bent < -0.03);
    CHECK(fabs(t_commit / t_mesh - 1) <= 0.01);
    CHECK(fabs(t_straight / t_mesh - 1) > 0.01); /* the bend matters: the check can tell */
    defo_world_destroy(wb);
    defo_world_destroy(ws);
    defo_world_destroy(w);
    defo_mesh_destroy(mb);
    defo_mesh_destroy(m);
}

/* A world of one tet4 cube [0, 1]³ with a fibre material (constant fibre
 * direction a) whose rest shape is `rest` (NULL: the cube). */
static defo_world *fibre_world(const double a[3], const double *rest, defo_mesh **mesh,
                               defo_body_id *id) {
    defo_mesh *m = box(2, 2, 2, 1, 1, 1, 1);
    if (rest) memcpy(m->x, rest, 3 * (size_t)m->num_nodes * sizeof(double));
    const size_t np = defo_fibre_field_points(m);
    double *fib = malloc(3 * np * sizeof *fib);
    CHECK_OK(defo_fibre_field_constant(m, a, fib));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = material(1e5, 0.4);
    bd.material.fibre.passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL;
    bd.material.fibre.exp_stress = 2e4;
    bd.material.fibre.exp_rate = 5;
    bd.material.fibre.linear_stretch = 1.5;
    bd.fibres = fib;
    CHECK_OK(defo_world_add_integrator(w, &idef, &bd.integrator));
    CHECK_OK(defo_world_add_body(w, &bd, id));
    free(fib);
    *mesh = m;
    return w;
}

/* y = G x for every node */
static void affine(const double G[9], const double *x, double *y, defo_index n) {
    for (defo_index i = 0; i < n; i++)
        for (int r = 0; r < 3; r++)
            y[3 * i + r] =
                G[3 * r] * x[3 * i] + G[3 * r + 1] * x[3 * i + 1] + G[3 * r + 2] * x[3 * i + 2];
}

static void test_anneal_carries_fibres(void) {
    const double a[3] = {1, 0, 0};
    const double A[9] = {1.2, 0, 0, 0.4, 0.9, 0, 0.1, 0, 1.0};    /* the committed shape */
    const double G[9] = {1.25, 0.05, 0, 0, 0.9, 0, 0, 0.1, 0.95}; /* then deformed by */
    defo_mesh *m = NULL, *mb = NULL, *mc = NULL;
    defo_body_id id, ib, ic;
    defo_world *w = fibre_world(a, NULL, &m, &id);
    const defo_index n = m->num_nodes;
    const size_t n3 = 3 * (size_t)n;
    double *xa = malloc(n3 * sizeof *xa), *y = malloc(n3 * sizeof *y);
    affine(A, m->x, xa, n);
    CHECK_OK(defo_body_set_state(w, id, xa, NULL));
    CHECK_OK(defo_body_anneal(w, id));
    /* the body meshed in the committed shape, fibres A a/|A a| (carried)
     * and a (left behind) */
    const double l = sqrt(1.2 * 1.2 + 0.4 * 0.4 + 0.1 * 0.1);
    const double ac[3] = {1.2 / l, 0.4 / l, 0.1 / l};
    defo_world *wb = fibre_world(ac, xa, &mb, &ib), *wc = fibre_world(a, xa, &mc, &ic);
    affine(G, xa, y, n);
    double e = 0, eb = 0, ec = 0;
    CHECK_OK(defo_body_set_state(w, id, y, NULL));
    CHECK_OK(defo_body_set_state(wb, ib, y, NULL));
    CHECK_OK(defo_body_set_state(wc, ic, y, NULL));
    CHECK_OK(defo_body_energy(w, id, NULL, &e, NULL));
    CHECK_OK(defo_body_energy(wb, ib, NULL, &eb, NULL));
    CHECK_OK(defo_body_energy(wc, ic, NULL, &ec, NULL));
    /* the checkpoint keeps the carried fibres: restored into a world that
     * never annealed, the energy and a step are the same bytes */
    void *s0 = NULL, *s1 = NULL, *s2 = NULL;
    size_t n0 = 0, n1 = 0, n2 = 0;
    CHECK_OK(defo_world_serialize(w, 3, &s0, &n0));
    defo_mesh *m2 = NULL;
    defo_body_id id2;
    defo_world *w2 = fibre_world(a, NULL, &m2, &id2);
    CHECK_OK(defo_world_deserialize(w2, 3, s0, n0));
    double e2 = 0;
    CHECK_OK(defo_body_energy(w2, id2, NULL, &e2, NULL));
    CHECK_OK(defo_world_step(w, 0.01));
    CHECK_OK(defo_world_step(w2, 0.01));
    CHECK_OK(defo_world_serialize(w, 3, &s1, &n1));
    CHECK_OK(defo_world_serialize(w2, 3, &s2, &n2));
    TEST_REPORT("energy after annealing and a further deformation %.10e J; meshed committed, "
                "fibres carried %.10e J (%.1e relative), fibres left behind %.6e J; restored "
                "%.10e J, a step after %s",
                e, eb, fabs(e / eb - 1), ec, e2,
                n1 == n2 && memcmp(s1, s2, n1) == 0 ? "identical" : "DIFFERS");
    CHECK(fabs(e / eb - 1) <= 1e-10);
    CHECK(fabs(ec / eb - 1) > 0.01); /* the fibres matter: the check can tell */
    CHECK(e2 == e);
    CHECK(n1 == n2 && memcmp(s1, s2, n1) == 0);
    defo_free(s0);
    defo_free(s1);
    defo_free(s2);
    defo_world_destroy(w);
    defo_world_destroy(w2);
    defo_world_destroy(wb);
    defo_world_destroy(wc);
    defo_mesh_destroy(m);
    defo_mesh_destroy(m2);
    defo_mesh_destroy(mb);
    defo_mesh_destroy(mc);
    free(xa);
    free(y);
}

/* ------------------------------------------------- material regions */
/* A bar of two materials (x ≤ 0.5: E1, x ≥ 0.5: E2; ν = 0) clamped at
 * x = 0 and pulled by a traction T on x = 1, solved statically: the two
 * halves are springs in series, δ = T (0.5/E1 + 0.5/E2) (small strain).
 * Then MG04 Fig. 9: the right half is heated at run time (its yield drops
 * below the stress) and only its elements flow; a checkpoint taken before
 * the heating restores the regions bit for bit. */
static void test_two_material_bar(void) {
    const double E1 = 1e6, E2 = 4e6, T = 200;
    defo_mesh *m = box(10, 2, 2, 1, 0.2, 0.2, 1);
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    defo_world *w = NULL;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idef = defo_default_integrator_def(DEFO_INTEGRATOR_STATIC);
    idef.tolerance = 1e-12;
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = material(E1, 0);
    bd.material.model = DEFO_MODEL_COROTATED;
    defo_body_id id;
    CHECK_OK(defo_world_add_integrator(w, &idef, &bd.integrator));
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    const double lo[3] = {0.5, -INFINITY, -INFINITY}, hi[3] = {INFINITY, INFINITY, INFINITY};
    defo_region right = defo_region_box(lo, hi);
    defo_material_def m2 = material(E2, 0);
    m2.model = DEFO_MODEL_COROTATED;
    m2.density = 3000;
    int reg = -1;
    CHECK_OK(defo_body_add_material_region(w, id, &right, &m2, NULL, &reg));
    CHECK(reg == 0 && defo_body_num_material_regions(w, id) == 1);
    const double clo[3] = {-INFINITY, -INFINITY, -INFINITY}, chi[3] = {0, INFINITY, INFINITY};
    defo_region clamp = defo_region_box(clo, chi);
    CHECK_OK(defo_body_prescribe(w, id, &clamp, NULL, NULL));
    const double tlo[3] = {1, -INFINITY, -INFINITY}, thi[3] = {INFINITY, INFINITY, INFINITY};
    defo_region end = defo_region_box(tlo, thi);
    const double t[3] = {T, 0, 0};
    CHECK_OK(defo_body_add_traction(w, id, &end, t, NULL));
    CHECK_OK(defo_world_step(w, 0.1));
    const double *x = defo_body_positions(w, id);
    const double d = face_mean(m, x, 0, 1) - 1, want = T * (0.5 / E1 + 0.5 / E2);
    const double dm = face_mean(m, x, 0, 0.5) - 0.5;
    /* the masses follow each half's density: 0.02 m³ · 1000 + 0.02 m³ · 3000 */
    double mass = 0;
    for (defo_index k = 0; k < m->num_nodes; k++) mass += defo_body_masses(w, id)[k];
    TEST_REPORT("two-material bar: end displacement %.6e m (springs in series %.6e, %.2e "
                "relative), at the interface %.6e (%.6e); mass %.3f kg (80)",
                d, want, fabs(d / want - 1), dm, T * 0.5 / E1, mass);
    CHECK(fabs(d / want - 1) < 1e-3);
    CHECK(fabs(dm / (T * 0.5 / E1) - 1) < 1e-3);
    CHECK(fabs(mass - 80) < 1e-9);
    /* bad regions */
    const double flo[3] = {5, 5, 5}, fhi[3] = {6, 6, 6};
    defo_region far = defo_region_box(flo, fhi);
    CHECK(defo_body_add_material_region(w, id, &far, &m2, NULL, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "selects no element") != NULL);
    defo_plasticity_def bad = defo_default_von_mises_def(-1, 0);
    CHECK(defo_body_add_material_region(w, id, &right, &m2, &bad, NULL) ==
          DEFO_ERR_INVALID_ARGUMENT);
    CHECK(defo_body_set_plasticity(w, id, 3, &bad) == DEFO_ERR_INVALID_ARGUMENT);
    /* heating the right half: von Mises with σ_y below the stress T there */
    void *s0 = NULL, *s1 = NULL, *s2 = NULL;
    size_t n0 = 0, n1 = 0, n2 = 0;
    CHECK_OK(defo_world_serialize(w, 3, &s0, &n0));
    defo_plasticity_def hot = defo_default_von_mises_def(0.5 * T, 0);
    CHECK_OK(defo_body_set_plasticity(w, id, reg, &hot));
    for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(w, 0.1));
    CHECK_OK(defo_world_serialize(w, 3, &s1, &n1));
    double *ep = malloc((size_t)m->num_elems * sizeof *ep);
    CHECK_OK(defo_body_plastic_strain(w, id, ep));
    int flowed_left = 0, flowed_right = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        double cx = 0;
        for (int a = 0; a < 4; a++) cx += 0.25 * m->x[3 * m->elems[4 * e + a]];
        if (ep[e] > 0 && cx < 0.5) flowed_left++;
        if (ep[e] > 0 && cx > 0.5) flowed_right++;
    }
    TEST_REPORT("heated right half: %d elements flowed there, %d in the left half", flowed_right,
                flowed_left);
    CHECK(flowed_right == m->num_elems / 2 && flowed_left == 0);
    /* a world built without the heating takes the heated state: the
     * region's own parameter set comes back with it (the same edit again
     * changes nothing), and the next frame is the same bytes */
    {
        defo_world *w2 = NULL;
        defo_body_id id2;
        CHECK_OK(defo_world_create(&wd, &w2));
        CHECK_OK(defo_world_add_integrator(w2, &idef, &bd.integrator));
        CHECK_OK(defo_world_add_body(w2, &bd, &id2));
        CHECK_OK(defo_body_add_material_region(w2, id2, &right, &m2, NULL, NULL));
        CHECK_OK(defo_body_prescribe(w2, id2, &clamp, NULL, NULL));
        CHECK_OK(defo_body_add_traction(w2, id2, &end, t, NULL));
        CHECK_OK(defo_world_deserialize(w2, 3, s1, n1));
        CHECK_OK(defo_body_set_plasticity(w2, id2, reg, &hot));
        CHECK(defo_plasticity_num_sets(defo_body_plasticity(w2, id2)) == 2);
        void *a = NULL, *c2 = NULL;
        size_t na = 0, nc = 0;
        CHECK_OK(defo_world_step(w, 0.1));
        CHECK_OK(defo_world_step(w2, 0.1));
        CHECK_OK(defo_world_serialize(w, 3, &a, &na));
        CHECK_OK(defo_world_serialize(w2, 3, &c2, &nc));
        CHECK(na == nc && memcmp(a, c2, na) == 0);
        defo_free(a);
        defo_free(c2);
        defo_world_destroy(w2);
    }
    /* restored to before the heating, the same edit gives the same bytes */
    CHECK_OK(defo_world_deserialize(w, 3, s0, n0));
    CHECK_OK(defo_body_set_plasticity(w, id, reg, &hot));
    for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(w, 0.1));
    CHECK_OK(defo_world_serialize(w, 3, &s2, &n2));
    CHECK(n1 == n2 && memcmp(s1, s2, n1) == 0);
    defo_free(s0);
    defo_free(s1);
    defo_free(s2);
    free(ep);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_two_material_bar);
    RUN(test_squash_and_release_keeps_volume);
    RUN(test_crush_and_release);
    RUN(test_von_mises_bar);
    RUN(test_permanent_bend);
    RUN(test_plasticity_control);
    RUN(test_anneal_zero_residual);
    RUN(test_anneal_bent_beam_frequency);
    RUN(test_anneal_carries_fibres);
    return test_summary();
}
