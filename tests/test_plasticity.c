/*
 * tests/test_plasticity.c — MG04 §3 strain plasticity on the corotated model.
 *
 * References used:
 *   - hand computation: under a prescribed uniaxial stretch s (x = X + s·X_x
 *     e_x, so ε_total = (s,0,0,0,0,0) in every element and Re = I), MG04's
 *     update is the scalar recursion p ← p + Δt c_creep (s − p) while
 *     s − p > c_yield, then p ← min(p, c_max): closed form
 *     p_n = s(1 − (1 − Δt c_creep)^n);
 *   - consistency: f_plastic cancels the elastic force exactly when
 *     ε_total = ε_plastic (the element sits in its plastic rest shape);
 *   - conservation: plastic forces sum to zero for any state (no ghost
 *     forces);
 *   - dynamics: a ν = 0 bar held stretched by its clamped ends (an exact
 *     homogeneous equilibrium) creeps as the hand computation says; released,
 *     it settles at the length L(1 + p) (residual deformation), and with
 *     c_yield = ∞ back at L;
 *   - determinism: 1 vs 2 threads bitwise.
 */
#include "defo/backward_euler.h"
#include "defo/corotated.h"
#include "defo/mesh.h"
#include "defo/plasticity.h"
#include "determinism.h"
#include "test.h"

static defo_mesh *bar(int cx, int cy, int cz, double lx, double ly, double lz) {
    defo_box_def d = defo_default_box_def();
    d.cells[0] = cx;
    d.cells[1] = cy;
    d.cells[2] = cz;
    d.size[0] = lx;
    d.size[1] = ly;
    d.size[2] = lz;
    defo_mesh *m = NULL;
    defo_generate_box(&d, &m);
    return m;
}

static defo_material_def material(double E, double nu) {
    defo_material_def mat = defo_default_material();
    mat.youngs_modulus = E;
    mat.poisson = nu;
    mat.density = 1000;
    return mat;
}

/* Scalar MG04 recursion for the uniaxial case (the "hand computation"). */
static double hand_plastic(double s, double yield, double rate, double cmax, int steps) {
    double p = 0;
    for (int n = 0; n < steps; n++) {
        if (s - p > yield) p += rate * (s - p);
        if (fabs(p) > cmax) p = cmax;
    }
    return p;
}

static void test_prescribed_strain_history(void) {
    defo_mesh *m = bar(5, 1, 1, 1.0, 0.2, 0.2);
    defo_material_def mat = material(1e5, 0.3);
    defo_corotated *c = NULL;
    CHECK_OK(defo_corotated_create(m, &mat, NULL, &c));
    const double s = 0.05, dt = 0.01;
    double *x = malloc(3 * (size_t)m->num_nodes * sizeof(double));
    for (defo_index i = 0; i < m->num_nodes; i++) {
        x[3 * i] = m->x[3 * i] * (1 + s);
        x[3 * i + 1] = m->x[3 * i + 1];
        x[3 * i + 2] = m->x[3 * i + 2];
    }
    CHECK_OK(defo_corotated_update_rotations(c, x, NULL));
    /* case 1: yield stops the creep (s·0.8^5 = 0.016 < 0.02 < s·0.8^4);
     * case 2: c_max caps it (p_5 = 0.0336 > 0.03) */
    const double yields[2] = {0.02, 0.01}, maxes[2] = {1.0, 0.03};
    for (int cs = 0; cs < 2; cs++) {
        defo_plasticity_def pd = {yields[cs], 20.0, maxes[cs]};
        defo_plasticity *p = NULL;
        CHECK_OK(defo_plasticity_create(m, c, &pd, &p));
        double worst = 0;
        for (int n = 1; n <= 12; n++) {
            defo_plasticity_stats st;
            CHECK_OK(defo_plasticity_update(p, c, x, dt, NULL, &st));
            double expect = hand_plastic(s, pd.yield, dt * pd.creep, pd.max, n);
            const double *ep = defo_plasticity_strain(p);
            for (defo_index e = 0; e < m->num_elems; e++) {
                worst = fmax(worst, fabs(ep[6 * e] - expect));
                for (int k = 1; k < 6; k++) worst = fmax(worst, fabs(ep[6 * e + k]));
            }
        }
        /* closed forms of the hand computation */
        double final = hand_plastic(s, pd.yield, 0.2, pd.max, 12);
        if (cs == 0) CHECK_NEAR(final, s * (1 - pow(0.8, 5)), 1e-15);
        if (cs == 1) CHECK_NEAR(final, 0.03, 0);
        TEST_REPORT("case %d: final eps_plastic_xx %.6f, max deviation from hand computation %.2e",
                    cs, defo_plasticity_strain(p)[0], worst);
        CHECK(worst <= 1e-12 * s);
        defo_plasticity_destroy(p);
    }
    free(x);
    defo_corotated_destroy(c);
    defo_mesh_destroy(m);
}

static void test_forces_balance_and_sum(void) {
    defo_mesh *m = bar(4, 2, 2, 1.0, 0.3, 0.25);
    defo_material_def mat = material(1e5, 0.35);
    defo_corotated *c = NULL;
    CHECK_OK(defo_corotated_create(m, &mat, NULL, &c));
    defo_plasticity *p = NULL;
    CHECK_OK(defo_plasticity_create(m, c, NULL, &p));
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof(double)), *fe = malloc(n3 * sizeof(double)),
           *fp = malloc(n3 * sizeof(double));
    /* (a) a rotated affine stretch with ε_plastic = its strain: forces cancel */
    const double s = 0.04, ang = 0.7, ca = cos(ang), sa = sin(ang);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        double X = m->x[3 * i] * (1 + s), Y = m->x[3 * i + 1], Z = m->x[3 * i + 2];
        x[3 * i] = ca * X - sa * Y + 3.0;
        x[3 * i + 1] = sa * X + ca * Y - 1.0;
        x[3 * i + 2] = Z + 0.5;
    }
    CHECK_OK(defo_corotated_update_rotations(c, x, NULL));
    double *ep = defo_plasticity_strain(p);
    for (defo_index e = 0; e < m->num_elems; e++) {
        for (int k = 0; k < 6; k++) ep[6 * e + k] = 0;
        ep[6 * e] = s;
    }
    CHECK_OK(defo_corotated_forces(c, x, fe, NULL));
    CHECK_OK(defo_plasticity_forces(p, c, fp));
    double fmax_ = 0, resid = 0;
    for (size_t j = 0; j < n3; j++) {
        fmax_ = fmax(fmax_, fabs(fe[j]));
        resid = fmax(resid, fabs(fe[j] + fp[j]));
    }
    TEST_REPORT("plastic rest shape: max |f_el| %.3e, max |f_el + f_plastic| %.3e", fmax_, resid);
    CHECK(fmax_ > 1);
    CHECK(resid <= 1e-10 * fmax_);
    /* (b) random positions and random plastic strains: Σ f_plastic = 0 */
    test_rng rng = {12345};
    for (size_t j = 0; j < n3; j++) x[j] = m->x[j] + test_range(&rng, -0.03, 0.03);
    for (size_t k = 0; k < 6 * (size_t)m->num_elems; k++) ep[k] = test_range(&rng, -0.1, 0.1);
    CHECK_OK(defo_corotated_update_rotations(c, x, NULL));
    CHECK_OK(defo_plasticity_forces(p, c, fp));
    double sum[3] = {0, 0, 0}, mag = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        for (int k = 0; k < 3; k++) {
            sum[k] += fp[3 * i + k];
            mag += fabs(fp[3 * i + k]);
        }
    TEST_REPORT("random state: |sum f_plastic| = %.2e of sum |f| = %.2e",
                fabs(sum[0]) + fabs(sum[1]) + fabs(sum[2]), mag);
    CHECK(fabs(sum[0]) + fabs(sum[1]) + fabs(sum[2]) <= 1e-12 * mag);
    /* bad parameters are refused */
    defo_plasticity_def bad = {0.01, -1, 1};
    CHECK(defo_plasticity_set_def(p, &bad) == DEFO_ERR_INVALID_ARGUMENT);
    defo_plasticity_def fast = {0.01, 1000, 1};
    CHECK_OK(defo_plasticity_set_def(p, &fast));
    CHECK(defo_plasticity_update(p, c, x, 0.01, fp, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    free(x);
    free(fe);
    free(fp);
    defo_plasticity_destroy(p);
    defo_corotated_destroy(c);
    defo_mesh_destroy(m);
}

/* Mean x of the nodes on the face X = xface, at positions x. */
static double face_x(const defo_mesh *m, const double *x, double xface) {
    double s = 0;
    int n = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (fabs(m->x[3 * i] - xface) < 1e-9) {
            s += x[3 * i];
            n++;
        }
    return s / n;
}

/* Hold a ν = 0 bar stretched by s for `hold` steps, release, settle; returns
 * the settled length and writes the plastic strain at release (xx) and the
 * largest change of ε_plastic during the release into *p_release, *drift. */
static double load_release(double yield, int hold, double *p_release, double *drift) {
    const double L = 1.0, s = 0.05, dt = 0.01;
    defo_mesh *m = bar(10, 2, 2, L, 0.2, 0.2);
    defo_material_def mat = material(1e5, 0.0);
    defo_backward_euler_def bd = defo_default_backward_euler_def();
    bd.time_step = dt;
    bd.gravity[2] = 0;
    bd.rayleigh_mass = 2.0;
    bd.cg_tolerance = 1e-10;
    defo_backward_euler *be = NULL;
    CHECK_OK(defo_backward_euler_create(m, &mat, &bd, &be));
    defo_plasticity_def pd = {yield, 20.0, 1.0};
    defo_plasticity *p = NULL;
    CHECK_OK(defo_plasticity_create(m, defo_backward_euler_force_model(be), &pd, &p));
    double *x = defo_backward_euler_positions(be);
    unsigned char *con = defo_backward_euler_constraints(be);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        x[3 * i] = m->x[3 * i] * (1 + s);
        if (m->x[3 * i] < 1e-9 || m->x[3 * i] > L - 1e-9) con[i] = DEFO_CONSTRAINT_FIXED;
    }
    for (int n = 0; n < hold; n++) {
        CHECK_OK(defo_plasticity_step(p, be, dt, NULL));
        CHECK_OK(defo_backward_euler_step(be, NULL));
    }
    const size_t ne6 = 6 * (size_t)m->num_elems;
    double *ep0 = malloc(ne6 * sizeof(double));
    memcpy(ep0, defo_plasticity_strain(p), ne6 * sizeof(double));
    *p_release = ep0[0];
    con = defo_backward_euler_constraints(be);
    memset(con, 0, (size_t)m->num_nodes);
    for (int n = 0; n < 700; n++) {
        CHECK_OK(defo_plasticity_step(p, be, dt, NULL));
        CHECK_OK(defo_backward_euler_step(be, NULL));
    }
    double d = 0;
    const double *ep = defo_plasticity_strain(p);
    for (size_t k = 0; k < ne6; k++) d = fmax(d, fabs(ep[k] - ep0[k]));
    *drift = d;
    x = defo_backward_euler_positions(be);
    double len = face_x(m, x, L) - face_x(m, x, 0);
    free(ep0);
    defo_plasticity_destroy(p);
    defo_backward_euler_destroy(be);
    defo_mesh_destroy(m);
    return len;
}

static void test_load_and_release(void) {
    /* plastic: hold 10 steps; the creep stops after 5 (hand computation) */
    double p_rel = 0, drift = 0;
    double len = load_release(0.02, 10, &p_rel, &drift);
    double p_hand = hand_plastic(0.05, 0.02, 0.2, 1.0, 10);
    TEST_REPORT("yield 0.02: eps_plastic %.8f (hand %.8f), settled length %.8f (hand 1+p = %.8f), "
                "plastic drift after release %.2e",
                p_rel, p_hand, len, 1 + p_hand, drift);
    CHECK_NEAR(p_rel, p_hand, 1e-9);
    CHECK_NEAR(len, 1 + p_hand, 1e-6);
    CHECK(drift <= 1e-9);
    /* elastic: returns to rest */
    len = load_release(INFINITY, 10, &p_rel, &drift);
    TEST_REPORT("yield inf: eps_plastic %.3g, settled length %.8f", p_rel, len);
    CHECK(p_rel == 0);
    CHECK_NEAR(len, 1.0, 1e-6);
}

typedef struct det_ctx {
    defo_mesh *m;
    double *x;
} det_ctx;

static void det_compute(void *vctx, void *out) {
    det_ctx *ctx = vctx;
    defo_material_def mat = material(1e5, 0.3);
    defo_corotated *c = NULL;
    defo_corotated_create(ctx->m, &mat, NULL, &c);
    defo_plasticity_def pd = {0.005, 50, 0.2};
    defo_plasticity *p = NULL;
    defo_plasticity_create(ctx->m, c, &pd, &p);
    defo_corotated_update_rotations(c, ctx->x, NULL);
    double *f = out;
    for (int n = 0; n < 3; n++) defo_plasticity_update(p, c, ctx->x, 0.01, f, NULL);
    memcpy(f + 3 * (size_t)ctx->m->num_nodes, defo_plasticity_strain(p),
           6 * (size_t)ctx->m->num_elems * sizeof(double));
    defo_plasticity_destroy(p);
    defo_corotated_destroy(c);
}

static void test_determinism(void) {
    det_ctx ctx;
    ctx.m = bar(12, 8, 8, 1.5, 1.0, 1.0); /* 4608 tets: above the parallel threshold */
    size_t n3 = 3 * (size_t)ctx.m->num_nodes;
    ctx.x = malloc(n3 * sizeof(double));
    test_rng rng = {99};
    for (size_t j = 0; j < n3; j++) ctx.x[j] = ctx.m->x[j] * 1.02 + test_range(&rng, -0.01, 0.01);
    size_t bytes = (n3 + 6 * (size_t)ctx.m->num_elems) * sizeof(double);
    CHECK(test_bitwise_same_for_threads(det_compute, &ctx, bytes, 2));
    free(ctx.x);
    defo_mesh_destroy(ctx.m);
}

int main(void) {
    RUN(test_prescribed_strain_history);
    RUN(test_forces_balance_and_sum);
    RUN(test_load_and_release);
    RUN(test_determinism);
    return test_summary();
}
