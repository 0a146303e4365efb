/*
 * tests/test_muscle.c — transversely isotropic bodies through the world
 * (ITF04 §6.1, TSIF05 §11): passive stretch, isometric and free
 * contraction, activation schedules, every integrator, recovery from
 * inversion.
 *
 * Independent reference (named per test): the analytic homogeneous
 * solution of a uniaxially loaded neo-Hookean bar with axial fibres, in
 * closed form in this file — P̂_i = μ(σ_i − 1/σ_i) + Λ ln(J)/σ_i with
 * J = λ₁λ₂², the lateral stretch from P̂₂ = 0 and the axial nominal stress
 * P̂₁ + T(λ₁), T the fibre curves written out again here:
 *   passive  T_p = P1 (e^{P2(λ−1)} − 1 − P2(λ−1)) for λ > 1,
 *   active   T_a = α σ_max (1 − u²)², u = (λ/λ_o − 1)/w.
 * The bars are 6 (or 4) widths long with clamped ends; their middle is in
 * the uniaxial state (Saint-Venant), where the stretches are measured from
 * the node positions of two cross-sections; the axial force is the same
 * through every section, measured as the reaction on the moving end (the
 * internal forces of its nodes).
 */
#include "defo/element.h"
#include "defo/fibre.h"
#include "defo/force_model.h"
#include "defo/geometry.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/world.h"
#include "determinism.h"
#include "test.h"

#include <string.h>

/* ---------------------------------------------------------- reference */
static const double E_ = 1e5, NU = 0.35;
static const double P1 = 3e4, P2 = 4, SMAX = 6e4, LOPT = 1.0, WIDTH = 0.5;

static double T_passive(double l) {
    const double x = l - 1;
    return x > 0 ? P1 * (exp(P2 * x) - 1 - P2 * x) : 0;
}
static double T_active(double l, double alpha) {
    const double u = (l / LOPT - 1) / WIDTH;
    return fabs(u) < 1 ? alpha * SMAX * (1 - u * u) * (1 - u * u) : 0;
}
static void lame(double *mu, double *la) {
    *mu = E_ / (2 * (1 + NU));
    *la = E_ * NU / ((1 + NU) * (1 - 2 * NU));
}
/* λ₂ with P̂₂(λ₁, λ₂, λ₂) = 0: μ(λ₂² − 1) + Λ ln(λ₁λ₂²) = 0 (Newton). */
static double lateral(double l1) {
    double mu, la, l2 = 1;
    lame(&mu, &la);
    for (int it = 0; it < 60; it++) {
        const double f = mu * (l2 * l2 - 1) + la * log(l1 * l2 * l2),
                     df = 2 * mu * l2 + 2 * la / l2;
        l2 -= f / df;
    }
    return l2;
}
/* Axial nominal stress of the uniaxial state at λ₁ (fibres axial or, with
 * across, along a lateral axis: then λ_f = λ₂ < 1 and no fibre stress). */
static double axial(double l1, double alpha, int across) {
    double mu, la;
    lame(&mu, &la);
    const double l2 = lateral(l1), J = l1 * l2 * l2;
    const double iso = mu * (l1 - 1 / l1) + la * log(J) / l1;
    return across ? iso : iso + T_passive(l1) + T_active(l1, alpha);
}

/* --------------------------------------------------------------- bars */
static defo_material_def muscle(void) {
    defo_material_def d = defo_default_material();
    d.youngs_modulus = E_;
    d.poisson = NU;
    d.fibre.passive = DEFO_FIBRE_PASSIVE_EXPONENTIAL;
    d.fibre.exp_stress = P1;
    d.fibre.exp_rate = P2;
    d.fibre.linear_stretch = 1.6;
    d.fibre.max_active_stress = SMAX;
    d.fibre.optimal_stretch = LOPT;
    d.fibre.active_width = WIDTH;
    return d;
}

typedef struct bar {
    double Q[9]; /* rotation of the whole setup */
    double L;
    defo_mesh *mesh; /* rotated rest mesh */
    double *fib;
    defo_world *w;
    defo_body_id id;
    int far_set;
} bar;

/* A bar along Q e_x, x ∈ [0, L], section [−½, ½]², fibres along Q a;
 * near end clamped, far end clamped (moved later) unless free_end. */
static void bar_make(bar *b, double L, int cx, int cyz, int order, const double Q[9],
                     const double a[3], defo_integrator_kind kind, int free_end,
                     const defo_material_def *md) {
    memset(b, 0, sizeof *b);
    memcpy(b->Q, Q, sizeof b->Q);
    b->L = L;
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = L, bd.size[1] = bd.size[2] = 1;
    bd.origin[0] = 0, bd.origin[1] = bd.origin[2] = -0.5;
    bd.cells[0] = cx, bd.cells[1] = bd.cells[2] = cyz;
    bd.order = order;
    CHECK_OK(defo_generate_box(&bd, &b->mesh));
    for (defo_index i = 0; i < b->mesh->num_nodes; i++) {
        double *x = b->mesh->x + 3 * i, y[3];
        for (int k = 0; k < 3; k++)
            y[k] = Q[3 * k] * x[0] + Q[3 * k + 1] * x[1] + Q[3 * k + 2] * x[2];
        memcpy(x, y, sizeof y);
    }
    double qa[3];
    for (int k = 0; k < 3; k++) qa[k] = Q[3 * k] * a[0] + Q[3 * k + 1] * a[1] + Q[3 * k + 2] * a[2];
    b->fib = malloc(3 * defo_fibre_field_points(b->mesh) * sizeof(double));
    CHECK_OK(defo_fibre_field_constant(b->mesh, qa, b->fib));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &b->w));
    defo_integrator_def idf = defo_default_integrator_def(kind);
    int integ = 0;
    CHECK_OK(defo_world_add_integrator(b->w, &idf, &integ));
    defo_body_def body = defo_default_body_def();
    body.mesh = b->mesh;
    body.material = *md;
    body.integrator = integ;
    body.fibres = b->fib;
    body.force.constant_extrapolation =
        kind == DEFO_INTEGRATOR_QUASISTATIC || kind == DEFO_INTEGRATOR_STATIC;
    CHECK_OK(defo_world_add_body(b->w, &body, &b->id));
    const double ex[3] = {Q[0], Q[3], Q[6]}, o[3] = {0, 0, 0};
    const double mex[3] = {-ex[0], -ex[1], -ex[2]}, far[3] = {L * ex[0], L * ex[1], L * ex[2]};
    defo_region near_r = defo_region_plane(o, ex), far_r = defo_region_plane(far, mex);
    CHECK_OK(defo_body_prescribe(b->w, b->id, &near_r, NULL, NULL));
    if (!free_end) CHECK_OK(defo_body_prescribe(b->w, b->id, &far_r, NULL, &b->far_set));
}

static void bar_free(bar *b) {
    defo_world_destroy(b->w);
    defo_mesh_destroy(b->mesh);
    free(b->fib);
}

/* Move the far end to length λ L along the bar. */
static void bar_set_length(bar *b, double lam) {
    const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    const double d = (lam - 1) * b->L, T[3] = {d * b->Q[0], d * b->Q[3], d * b->Q[6]};
    CHECK_OK(defo_body_set_transform(b->w, b->id, b->far_set, I, T));
}

/* Position of node i in the bar frame (Qᵀ x) */
static void bar_frame(const bar *b, const double *x, double y[3]) {
    const double *Q = b->Q;
    for (int k = 0; k < 3; k++) y[k] = Q[k] * x[0] + Q[3 + k] * x[1] + Q[6 + k] * x[2];
}

/* Mean axial stretch between the sections at X = x0 and x1, and the width
 * (y extent) of the section at (x0 + x1)/2 over its rest width 1. */
static void bar_measure(const bar *b, double x0, double x1, double *l1, double *l2) {
    const double *x = defo_body_positions(b->w, b->id);
    double s0 = 0, s1 = 0, ylo = INFINITY, yhi = -INFINITY;
    int n0 = 0, n1 = 0;
    for (defo_index i = 0; i < b->mesh->num_nodes; i++) {
        double X[3], y[3];
        bar_frame(b, b->mesh->x + 3 * i, X);
        bar_frame(b, x + 3 * i, y);
        if (fabs(X[0] - x0) < 1e-9) s0 += y[0], n0++;
        if (fabs(X[0] - x1) < 1e-9) s1 += y[0], n1++;
        if (fabs(X[0] - 0.5 * (x0 + x1)) < 1e-9 && fabs(X[2]) < 1e-9)
            ylo = fmin(ylo, y[1]), yhi = fmax(yhi, y[1]);
    }
    *l1 = (s1 / n1 - s0 / n0) / (x1 - x0);
    *l2 = yhi - ylo;
}

/* The axial force: minus the internal forces on the far end's nodes along
 * the bar, from a force model of the same body at its positions. */
static double bar_force(const bar *b, const defo_material_def *md, double alpha) {
    defo_element_rest *rest = NULL;
    defo_material *mat = NULL;
    defo_force_model *fm = NULL;
    CHECK_OK(defo_element_rest_create(b->mesh, &rest));
    CHECK_OK(defo_element_rest_set_fibres(rest, b->fib));
    CHECK_OK(defo_material_create(md, &mat));
    CHECK_OK(defo_force_model_create(b->mesh, rest, mat, NULL, &fm));
    const defo_index ne = b->mesh->num_elems, n = b->mesh->num_nodes;
    double *act = malloc((size_t)ne * sizeof(double)), *f = malloc(3 * (size_t)n * sizeof(double));
    for (defo_index e = 0; e < ne; e++) act[e] = alpha;
    defo_force_model_set_activation(fm, act);
    CHECK_OK(defo_force_model_evaluate(fm, defo_body_positions(b->w, b->id), 0, f, NULL));
    double N = 0;
    for (defo_index i = 0; i < n; i++) {
        double X[3], g[3];
        bar_frame(b, b->mesh->x + 3 * i, X);
        if (X[0] < b->L - 1e-9) continue;
        bar_frame(b, f + 3 * i, g);
        N -= g[0];
    }
    free(act), free(f);
    defo_force_model_destroy(fm);
    defo_material_destroy(mat);
    defo_element_rest_destroy(rest);
    return N;
}

static void random_rotation(test_rng *r, double Q[9]) {
    double q[4], n2;
    do {
        for (int i = 0; i < 4; i++) q[i] = test_range(r, -1, 1);
        n2 = q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3];
    } while (n2 > 1 || n2 < 1e-6);
    const double n = 1 / sqrt(n2), w = q[0] * n, x = q[1] * n, y = q[2] * n, z = q[3] * n;
    const double m[9] = {1 - 2 * (y * y + z * z), 2 * (x * y - w * z),     2 * (x * z + w * y),
                         2 * (x * y + w * z),     1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                         2 * (x * z - w * y),     2 * (y * z + w * x),     1 - 2 * (x * x + y * y)};
    memcpy(Q, m, sizeof m);
}

/* ------------------------------------------------------------- tests */

/* Passive uniaxial stretch to 1.3 along the fibres and across them against
 * the analytic homogeneous solution (stress within 0.5 %), and the whole
 * setup turned by a random rotation giving the same answer. */
static void test_uniaxial_passive(void) {
    const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    test_rng r = {0x6ec7};
    double Q[9];
    random_rotation(&r, Q);
    const defo_material_def md = muscle();
    for (int across = 0; across <= 1; across++) {
        const double a[3] = {across ? 0.0 : 1.0, across ? 1.0 : 0.0, 0};
        double N[2], l1[2], l2[2];
        for (int rot = 0; rot <= 1; rot++) {
            bar b;
            bar_make(&b, 6, 24, 4, 1, rot ? Q : I, a, DEFO_INTEGRATOR_QUASISTATIC, 0, &md);
            for (int k = 1; k <= 3; k++) {
                bar_set_length(&b, 1 + 0.1 * k);
                CHECK_OK(defo_world_step(b.w, 0.25));
            }
            bar_measure(&b, 2, 4, &l1[rot], &l2[rot]);
            N[rot] = bar_force(&b, &md, 0);
            bar_free(&b);
        }
        const double ref = axial(l1[0], 0, across), l2ref = lateral(l1[0]);
        TEST_REPORT("%s the fibres: mid stretch %.5f, lateral %.5f (analytic %.5f), axial force "
                    "%.6g N (analytic %.6g, %+.3f %%); rotated: force %+.1e, stretches %.1e, %.1e",
                    across ? "across" : "along", l1[0], l2[0], l2ref, N[0], ref,
                    100 * (N[0] - ref) / ref, (N[1] - N[0]) / N[0], l1[1] - l1[0], l2[1] - l2[0]);
        CHECK(fabs(N[0] - ref) < 0.005 * ref);
        CHECK(fabs(l2[0] - l2ref) < 0.005 * l2ref);
        CHECK(fabs(N[1] - N[0]) < 1e-6 * fabs(N[0]));
        CHECK(fabs(l1[1] - l1[0]) < 1e-7 && fabs(l2[1] - l2[0]) < 1e-7);
        /* the fibres stiffen along, not across */
        if (!across) CHECK(N[0] > 1.2 * axial(l1[0], 0, 1));
    }
}

/* Isometric: a bar held at 0.9, 1.0 and 1.15 of its length, activated to
 * α = 1, develops the active curve's force at that length, σ_max f_L(λ) A,
 * within 1 % (the difference of the reactions with and without α). */
static void test_isometric(void) {
    const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, a[3] = {1, 0, 0};
    const defo_material_def md = muscle();
    static const double lengths[3] = {0.9, 1.0, 1.15};
    for (int k = 0; k < 3; k++) {
        bar b;
        bar_make(&b, 4, 16, 4, 1, I, a, DEFO_INTEGRATOR_QUASISTATIC, 0, &md);
        const double lam = lengths[k];
        bar_set_length(&b, 0.5 * (1 + lam));
        CHECK_OK(defo_world_step(b.w, 0.25));
        bar_set_length(&b, lam);
        CHECK_OK(defo_world_step(b.w, 0.25));
        const double N0 = bar_force(&b, &md, 0);
        defo_activation_def ad = defo_default_activation_def();
        ad.level = 1;
        CHECK_OK(defo_body_add_activation(b.w, b.id, &ad, NULL));
        CHECK_OK(defo_world_step(b.w, 0.25));
        const double N1 = bar_force(&b, &md, 1);
        const double want = T_active(lam, 1) * 1.0; /* rest area 1 m² */
        double l1, l2;
        bar_measure(&b, 1.5, 2.5, &l1, &l2);
        TEST_REPORT("held at %.2f: active force %.6g N, σ_max f_L(λ) A = %.6g (%+.3f %%); mid "
                    "stretch %.5f",
                    lam, N1 - N0, want, 100 * (N1 - N0 - want) / want, l1);
        CHECK(fabs(N1 - N0 - want) < 0.01 * want);
        bar_free(&b);
    }
}

/* Free contraction: one end clamped, the activation ramped 0 → 1 by a
 * schedule; the middle contracts along the fibres and bulges across as
 * the analytic homogeneous solution says (P̂₁ + T(λ₁) = 0, P̂₂ = 0) within
 * 0.5 %, the volume kept as far as the compressibility allows
 * (J analytic), tet4 and tet10. */
static void test_free_contraction(void) {
    const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, a[3] = {1, 0, 0};
    const defo_material_def md = muscle();
    /* analytic: bisection on λ₁ ∈ [0.5, 1] for P̂₁ + T = 0 */
    double lo = 0.5, hi = 1.0;
    for (int it = 0; it < 100; it++) {
        const double mid = 0.5 * (lo + hi);
        if (axial(mid, 1, 0) > 0)
            hi = mid;
        else
            lo = mid;
    }
    const double l1a = 0.5 * (lo + hi), l2a = lateral(l1a), Ja = l1a * l2a * l2a;
    for (int order = 1; order <= 2; order++) {
        bar b;
        bar_make(&b, 6, order == 1 ? 24 : 12, order == 1 ? 4 : 2, order, I, a,
                 DEFO_INTEGRATOR_QUASISTATIC, 1, &md);
        const double times[2] = {0, 1}, levels[2] = {0, 1};
        defo_activation_def ad = defo_default_activation_def();
        ad.num_keys = 2, ad.times = times, ad.levels = levels;
        int g = -1;
        CHECK_OK(defo_body_add_activation(b.w, b.id, &ad, &g));
        CHECK(g == 0);
        for (int k = 1; k <= 4; k++) {
            CHECK_OK(defo_world_step(b.w, 0.25));
            CHECK_NEAR(defo_body_activation(b.w, b.id)[0], 0.25 * k, 1e-15);
        }
        double l1, l2;
        bar_measure(&b, 2, 4, &l1, &l2);
        const double J = l1 * l2 * l2;
        TEST_REPORT("tet%d: contracted to %.5f along (analytic %.5f), %.5f across (%.5f); J %.5f "
                    "(analytic %.5f)",
                    order == 1 ? 4 : 10, l1, l1a, l2, l2a, J, Ja);
        CHECK(fabs(l1 - l1a) < 0.005 * l1a);
        CHECK(fabs(l2 - l2a) < 0.005 * l2a);
        CHECK(l1 < 0.97 && l2 > 1.01); /* it contracted and bulged */
        CHECK(fabs(J - Ja) < 0.005);
        bar_free(&b);
    }
}

/* Every integrator steps an activated muscle: it shortens, stays finite and
 * uninverted. */
static void test_every_integrator(void) {
    const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, a[3] = {1, 0, 0};
    defo_material_def md = muscle();
    md.density = 1000;
    md.damping_time = 0.01;
    static const defo_integrator_kind kinds[5] = {
        DEFO_INTEGRATOR_NEWMARK, DEFO_INTEGRATOR_BACKWARD_EULER, DEFO_INTEGRATOR_BDF2,
        DEFO_INTEGRATOR_QUASISTATIC, DEFO_INTEGRATOR_STATIC};
    for (int k = 0; k < 5; k++) {
        bar b;
        bar_make(&b, 3, 6, 2, 1, I, a, kinds[k], 1, &md);
        defo_activation_def ad = defo_default_activation_def();
        ad.level = 1;
        CHECK_OK(defo_body_add_activation(b.w, b.id, &ad, NULL));
        for (int f = 0; f < 6; f++) CHECK_OK(defo_world_step(b.w, 1.0 / 30));
        double tip = -INFINITY;
        const double *x = defo_body_positions(b.w, b.id);
        for (defo_index i = 0; i < b.mesh->num_nodes; i++) {
            CHECK(isfinite(x[3 * i]) && isfinite(x[3 * i + 1]) && isfinite(x[3 * i + 2]));
            tip = fmax(tip, x[3 * i]);
        }
        defo_index inv = -1;
        CHECK_OK(defo_body_count_inverted(b.w, b.id, &inv));
        TEST_REPORT("%s: free end at %.4f m (rest 3), inverted %ld", defo_integrator_name(kinds[k]),
                    tip, (long)inv);
        CHECK(tip < 2.97);
        CHECK(inv == 0);
        bar_free(&b);
    }
}

/* The inversion extension still acts: a muscle block whose top is pushed
 * through its bottom (half its elements inverted) recovers its shape under
 * activation, with backward Euler. */
static void test_recovers_from_inversion(void) {
    const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, a[3] = {1, 0, 0};
    defo_material_def md = muscle();
    md.damping_time = 0.02;
    bar b;
    bar_make(&b, 2, 4, 3, 1, I, a, DEFO_INTEGRATOR_BACKWARD_EULER, 1, &md);
    defo_activation_def ad = defo_default_activation_def();
    ad.level = 0.5;
    CHECK_OK(defo_body_add_activation(b.w, b.id, &ad, NULL));
    const defo_index n = b.mesh->num_nodes;
    double *x = malloc(3 * (size_t)n * sizeof(double));
    memcpy(x, b.mesh->x, 3 * (size_t)n * sizeof(double));
    for (defo_index i = 0; i < n; i++)
        if (x[3 * i] > 1e-9) x[3 * i + 2] = -0.8 * x[3 * i + 2]; /* mirror z: inverts */
    CHECK_OK(defo_body_set_state(b.w, b.id, x, NULL));
    defo_index inv0 = 0, inv = -1;
    CHECK_OK(defo_body_count_inverted(b.w, b.id, &inv0));
    for (int f = 0; f < 30 && inv != 0; f++) {
        CHECK_OK(defo_world_step(b.w, 1.0 / 30));
        CHECK_OK(defo_body_count_inverted(b.w, b.id, &inv));
    }
    TEST_REPORT("inverted elements: %ld at the start, %ld after the frames", (long)inv0, (long)inv);
    CHECK(inv0 > (defo_index)b.mesh->num_elems / 3);
    CHECK(inv == 0);
    free(x);
    bar_free(&b);
}

/* Activation API: bad levels and keys refused; a tag region; the last
 * group wins; a controller's level replaces the schedule. */
static void test_activation_api(void) {
    const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, a[3] = {1, 0, 0};
    const defo_material_def md = muscle();
    bar b;
    bar_make(&b, 2, 4, 1, 1, I, a, DEFO_INTEGRATOR_QUASISTATIC, 1, &md);
    CHECK(defo_body_activation(b.w, b.id) == NULL);
    defo_activation_def ad = defo_default_activation_def();
    ad.level = 1.5;
    CHECK(defo_body_add_activation(b.w, b.id, &ad, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "1.5 is not in [0, 1]") != NULL);
    const double t2[2] = {0, 1}, lv[2] = {0, -0.1}, tb[2] = {1, 1};
    ad.num_keys = 2, ad.times = t2, ad.levels = lv;
    CHECK(defo_body_add_activation(b.w, b.id, &ad, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "key 1: level -0.1") != NULL);
    ad.times = tb, ad.levels = t2;
    CHECK(defo_body_add_activation(b.w, b.id, &ad, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "does not follow") != NULL);
    /* whole body 0.2, then the half x > 1 at 0.7 */
    ad = defo_default_activation_def();
    ad.level = 0.2;
    int g0, g1;
    CHECK_OK(defo_body_add_activation(b.w, b.id, &ad, &g0));
    const double lo[3] = {1, -9, -9}, hi[3] = {9, 9, 9};
    defo_region half = defo_region_box(lo, hi);
    ad.region = &half;
    ad.level = 0.7;
    CHECK_OK(defo_body_add_activation(b.w, b.id, &ad, &g1));
    const double *act = defo_body_activation(b.w, b.id);
    int n2 = 0, n7 = 0;
    for (defo_index e = 0; e < b.mesh->num_elems; e++) n2 += act[e] == 0.2, n7 += act[e] == 0.7;
    CHECK(n2 == n7 && n2 + n7 == b.mesh->num_elems);
    CHECK_OK(defo_body_set_activation(b.w, b.id, g1, 0.4));
    CHECK(act[b.mesh->num_elems - 1] == 0.4);
    CHECK(defo_body_set_activation(b.w, b.id, 2, 0.4) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(defo_body_set_activation(b.w, b.id, g1, NAN) == DEFO_ERR_INVALID_ARGUMENT);
    const double far_lo[3] = {50, 50, 50}, far_hi[3] = {60, 60, 60};
    defo_region nowhere = defo_region_box(far_lo, far_hi);
    ad.region = &nowhere;
    CHECK(defo_body_add_activation(b.w, b.id, &ad, NULL) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "selects no element") != NULL);
    bar_free(&b);
}

/* 1 and 2 threads: the same positions after an activated quasistatic frame. */
static void run_frame(void *ctx, void *out) {
    (void)ctx;
    const double I[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, a[3] = {0.8, 0.6, 0};
    const defo_material_def md = muscle();
    bar b;
    bar_make(&b, 3, 12, 3, 1, I, a, DEFO_INTEGRATOR_QUASISTATIC, 1, &md);
    defo_activation_def ad = defo_default_activation_def();
    ad.level = 0.8;
    CHECK_OK(defo_body_add_activation(b.w, b.id, &ad, NULL));
    CHECK_OK(defo_world_step(b.w, 0.1));
    memcpy(out, defo_body_positions(b.w, b.id), 3 * (size_t)b.mesh->num_nodes * sizeof(double));
    bar_free(&b);
}
static void test_threads(void) {
    const size_t bytes = 3 * (size_t)(13 * 4 * 4) * sizeof(double);
    CHECK(test_bitwise_same_for_threads(run_frame, NULL, bytes, 2));
}

int main(void) {
    RUN(test_uniaxial_passive);
    RUN(test_isometric);
    RUN(test_free_contraction);
    RUN(test_every_integrator);
    RUN(test_recovers_from_inversion);
    RUN(test_activation_api);
    RUN(test_threads);
    return test_summary();
}
