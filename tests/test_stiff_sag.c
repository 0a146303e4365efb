/*
 * tests/test_stiff_sag.c — equilibrium solves whose tolerance cannot lie
 * (MMDJ01 §2.3 static analysis of stiff bodies).
 *
 * What each test checks against:
 *   - test_sag_every_stiffness: a tet10 cantilever 1 × 0.1 × 0.1 m (20 × 2
 *     × 2 cubes) clamped at x = 0 under its own weight, E = 1e4 … 1e11 Pa,
 *     at the default tolerance (1e-6), static and quasistatic: the tip sag
 *     against Timoshenko beam theory δ = qL⁴/(8EI) + qL²/(2κGA), κ = 5/6,
 *     within 2 %, and against a solve at tolerance 1e-11 within 1e-6
 *     (Newton converged, not stopped at the unloaded state).  The density is
 *     2500 kg/m³ (stone) from E = 1e9 up and scaled with E below, so every
 *     sag stays a small strain (the beam theory's range): the load to
 *     stiffness ratio falls 100× from 1e9 to 1e11 Pa — the stiff range
 *     where a residual measured against (2μ+λ)h² returned the unloaded body.
 *   - test_floor_is_said: the same cantilever 1e7 m from the origin: the
 *     round-off of the elastic forces there (ε (2μ+λ) h |x|) exceeds the
 *     target the loads set, so the solve cannot resolve them; it must say so
 *     (DEFO_WARN_NOT_CONVERGED, stats.unresolved = 1) instead of returning
 *     the unloaded body as converged.
 */
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/mesh.h"
#include "defo/world.h"
#include "test.h"

static const double L = 1.0, A = 0.1, NU = 0.3;

typedef struct sag {
    double sag;
    int newton, unresolved;
    defo_status status;
} sag;

static sag run(double E, double rho, double offset, double tol, defo_integrator_kind kind) {
    sag r = {NAN, 0, 0, DEFO_OK};
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = L, bd.size[1] = A, bd.size[2] = A;
    bd.origin[0] = offset, bd.origin[1] = -A / 2, bd.origin[2] = -A / 2;
    bd.cells[0] = 20, bd.cells[1] = 2, bd.cells[2] = 2;
    bd.order = 2;
    defo_mesh *m = NULL;
    defo_world *w = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    if (!m || !w) goto out;
    defo_integrator_def id = defo_default_integrator_def(kind);
    if (tol > 0) id.tolerance = tol;
    CHECK_OK(defo_world_add_integrator(w, &id, NULL));
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    b.material.youngs_modulus = E;
    b.material.poisson = NU;
    b.material.density = rho;
    b.integrator = 0;
    defo_body_id body;
    CHECK_OK(defo_world_add_body(w, &b, &body));
    const double o[3] = {offset, 0, 0}, nx[3] = {1, 0, 0};
    defo_region clamp = defo_region_plane(o, nx);
    CHECK_OK(defo_body_prescribe(w, body, &clamp, NULL, NULL));
    r.status = defo_world_step(w, 1.0);
    defo_step_stats st;
    defo_world_stats(w, &st);
    r.newton = st.newton_iterations;
    r.unresolved = st.unresolved;
    const double *x = defo_body_positions(w, body);
    double s = 0;
    int k = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (fabs(m->x[3 * i] - (offset + L)) < 1e-9 * fmax(1, offset))
            s += x[3 * i + 2] - m->x[3 * i + 2], k++;
    r.sag = -s / k;
out:
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return r;
}

static double density_for(double E) {
    return fmin(2500, 2500 * E / 1e9);
}

static double timoshenko(double E, double rho) {
    const double Aa = A * A, I = pow(A, 4) / 12, G = E / (2 * (1 + NU));
    const double q = rho * 9.81 * Aa;
    return q * pow(L, 4) / (8 * E * I) + q * L * L / (2 * (5.0 / 6) * G * Aa);
}

static void test_sag_every_stiffness(void) {
    for (int e = 4; e <= 11; e++) {
        const double E = pow(10.0, e), rho = density_for(E), timo = timoshenko(E, rho);
        const sag tight = run(E, rho, 0, 1e-11, DEFO_INTEGRATOR_STATIC);
        for (int q = 0; q < 2; q++) {
            const defo_integrator_kind kind =
                q ? DEFO_INTEGRATOR_QUASISTATIC : DEFO_INTEGRATOR_STATIC;
            const sag d = run(E, rho, 0, 0, kind);
            TEST_REPORT("E %.0e Pa %-11s: sag %.6e m (%d Newton), Timoshenko %.6e m (%.4f), "
                        "tolerance 1e-11 %.6e m",
                        E, defo_integrator_name(kind), d.sag, d.newton, timo, d.sag / timo,
                        tight.sag);
            CHECK_MSG(d.status == DEFO_OK, "%s", defo_last_error());
            CHECK(d.newton > 0 && d.unresolved == 0);
            CHECK_MSG(fabs(d.sag / timo - 1) < 0.02, "E %g: %.4f of Timoshenko", E, d.sag / timo);
            CHECK_MSG(fabs(d.sag - tight.sag) < 1e-6 * tight.sag, "E %g: %.9e vs %.9e", E, d.sag,
                      tight.sag);
        }
    }
}

static void test_floor_is_said(void) {
    const double E = 1e11, rho = 2500;
    const sag far = run(E, rho, 1e7, 0, DEFO_INTEGRATOR_STATIC);
    TEST_REPORT("1e7 m from the origin: status %d, %d Newton, unresolved %d, sag %.3e m",
                far.status, far.newton, far.unresolved, far.sag);
    CHECK(far.status == DEFO_WARN_NOT_CONVERGED);
    CHECK(far.unresolved == 1);
    CHECK(strstr(defo_last_error(), "does not resolve its loads") != NULL);
}

int main(void) {
    RUN(test_sag_every_stiffness);
    RUN(test_floor_is_said);
    return test_summary();
}
