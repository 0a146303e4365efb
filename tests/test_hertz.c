/*
 * tests/test_hertz.c — contact between two elastic bodies against Hertz's
 * solution (the body–body barrier of the Newton solves, defo/contact.h).
 *
 * Two equal neo-Hookean spheres (R = 0.1 m, E = 1e5 Pa, ν = 0.3, tet10)
 * touch at their poles; the lower one is held by the cap below 0.85 R from
 * its centre, the upper one's cap above 0.85 R is moved 10 mm down in one
 * static solve, so the spheres press on each other with a force F.  Hertz
 * for two equal spheres: R* = R/2, E* = E / (2(1 − ν²)), contact radius
 * a = (3 F R* / (4 E*))^{1/3}, pressure p(r) = p₀ √(1 − r²/a²).
 *
 * The measurement is independent of the contact code: at equilibrium (no
 * gravity) a free node's contact force is minus its elastic force, computed
 * here by a force model of the test's own on the lower sphere's final
 * positions.  F is the sum of those forces along z; the radius comes from
 * their second moment about the force's centre, which for the Hertz
 * pressure is ∫p r² dA / ∫p dA = 2a²/5, so a = √(5/2 · Σ fᵢ rᵢ² / Σ fᵢ): a
 * moment of the whole distribution, not the edge of a patch that a mesh
 * cannot place between its nodes.
 *
 * The meshes: each sphere is the quality mesher's tet10 mesh (smallest
 * dihedral angle ≥ 20°) of an icosphere of 72 000 triangles (chord error
 * 4e-6 m), at cell size R/4 and R/5; the upper one turned 0.3 rad about the
 * axis, so the two surfaces' nodes do not face each other.  A lattice
 * sphere (defo_generate_sphere) is not used: its snapped boundary keeps
 * slivers down to 10°, whose stiff ring pressed like a flat punch and put
 * a 20 % too large where the patch reached it.  The contact thickness is
 * 0.03 of the mean edge: the press then converges in one Newton solve of
 * 26 and 40 iterations, where at the default 0.1 the first solve stops at
 * its 100 iterations and the load steps of the equilibrium solver take 214
 * and 240 (a −0.90 % and +0.25 %: the skin hardly widens the patch).
 *
 * Checked: a within 10 % of Hertz on both meshes and closer on the finer;
 * the force centred on the axis (within a tenth of a).  Sanitizer builds run
 * the coarse mesh only and check that it converges (the figures are the
 * optimised build's).
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/mesher.h"
#include "defo/world.h"
#include "test.h"

static const double R = 0.1, E = 1e5, NU = 0.3, TURN = 0.3, PRESS = 0.01, SKIN = 0.03;

typedef struct hertz {
    double force, radius, hertz; /* F [N], measured a and Hertz's a [m] */
    double centre;               /* the force's centre off the axis [m] */
    int newton;
    defo_status status;
    defo_index tets;
} hertz;

/* The mesher's tet10 sphere of cell size h centred at (0, 0, cz), turned
 * by angle about z. */
static defo_mesh *sphere(double h, double cz, double angle) {
    defo_sphere_shell_def ss = defo_default_sphere_shell_def();
    ss.radius = R;
    ss.center[2] = cz;
    ss.subdivisions = 60;
    defo_mesh *shell = NULL, *surf = NULL, *m = NULL;
    CHECK_OK(defo_generate_sphere_shell(&ss, &shell));
    CHECK_OK(defo_mesh_create(0, &surf));
    if (!shell || !surf) goto out;
    for (defo_index i = 0; i < shell->num_nodes; i++) {
        const double *p = shell->x + 3 * i;
        CHECK_OK(defo_mesh_add_node(surf, p[0], p[1], p[2], NULL));
    }
    for (defo_index e = 0; e < shell->num_elems; e++)
        CHECK_OK(defo_mesh_add_tri(surf, shell->elems + 3 * e, 3, 0));
    defo_mesher_def md = defo_default_mesher_def();
    md.cell_size = h;
    md.order = 2;
    defo_mesher_report rep;
    CHECK_OK(defo_mesh_surface(surf, &md, &m, &rep));
    if (m) CHECK(rep.quality.min_dihedral >= 20 - 1e-9);
    const double c = cos(angle), s = sin(angle);
    for (defo_index i = 0; m && i < m->num_nodes; i++) {
        double *p = m->x + 3 * i;
        const double x0 = p[0], y0 = p[1];
        p[0] = c * x0 - s * y0;
        p[1] = s * x0 + c * y0;
    }
out:
    defo_mesh_destroy(shell);
    defo_mesh_destroy(surf);
    return m;
}

static hertz press_spheres(double h) {
    hertz r = {NAN, NAN, NAN, NAN, 0, DEFO_OK, 0};
    const double gap = 0.01 * h; /* inside the contact skin: touching at rest */
    defo_mesh *m[2] = {sphere(h, -R - gap / 2, 0), sphere(h, R + gap / 2, TURN)};
    defo_world *w = NULL;
    defo_material *mat = NULL;
    defo_element_rest *rest = NULL;
    defo_force_model *fm = NULL;
    double *f = NULL;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    if (!m[0] || !m[1] || !w) goto out;
    defo_contact_def cd = defo_default_contact_def();
    cd.thickness = SKIN;
    CHECK_OK(defo_world_set_contact(w, &cd));
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_STATIC);
    CHECK_OK(defo_world_add_integrator(w, &id, NULL));
    defo_material_def md = defo_default_material();
    md.model = DEFO_MODEL_NEO_HOOKEAN;
    md.youngs_modulus = E;
    md.poisson = NU;
    defo_body_id body[2];
    for (int s = 0; s < 2; s++) {
        defo_body_def b = defo_default_body_def();
        b.mesh = m[s];
        b.material = md;
        b.integrator = 0;
        CHECK_OK(defo_world_add_body(w, &b, &body[s]));
        const double p[3] = {0, 0, s ? R + 0.85 * R : -R - 0.85 * R}, n[3] = {0, 0, s ? -1 : 1};
        defo_region cap = defo_region_plane(p, n);
        defo_motion_def mo = defo_default_motion_def();
        mo.velocity[2] = -PRESS;
        CHECK_OK(defo_body_prescribe(w, body[s], &cap, s ? &mo : NULL, NULL));
    }
    r.status = defo_world_step(w, 1.0);
    defo_step_stats st;
    defo_world_stats(w, &st);
    r.newton = st.newton_iterations;
    /* the lower sphere's elastic forces, by a model of the test's own */
    CHECK_OK(defo_material_create(&md, &mat));
    CHECK_OK(defo_element_rest_create(m[0], &rest));
    if (!mat || !rest) goto out;
    defo_force_model_def fd = defo_default_force_model_def();
    CHECK_OK(defo_force_model_create(m[0], rest, mat, &fd, &fm));
    const defo_index n = m[0]->num_nodes;
    f = calloc(3 * (size_t)n, sizeof *f);
    if (!fm || !f) goto out;
    const double *x = defo_body_positions(w, body[0]);
    const unsigned char *held = defo_body_prescribed(w, body[0]);
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, f, NULL));
    double F = 0, M1[2] = {0, 0}, M2 = 0;
    for (defo_index i = 0; i < n; i++) {
        if (held[i]) continue;
        const double p = f[3 * i + 2]; /* = −(contact force)_z: the upper sphere presses down */
        const double dx = x[3 * i], dy = x[3 * i + 1];
        F += p;
        M1[0] += p * dx;
        M1[1] += p * dy;
        M2 += p * (dx * dx + dy * dy);
    }
    r.force = F;
    const double cx = M1[0] / F, cy = M1[1] / F;
    r.centre = hypot(cx, cy);
    r.radius = sqrt(2.5 * (M2 / F - cx * cx - cy * cy));
    const double Rs = R / 2, Es = E / (2 * (1 - NU * NU));
    r.hertz = cbrt(3 * F * Rs / (4 * Es));
    r.tets = m[0]->num_elems;
out:
    free(f);
    defo_force_model_destroy(fm);
    defo_element_rest_destroy(rest);
    defo_material_destroy(mat);
    defo_world_destroy(w);
    defo_mesh_destroy(m[0]);
    defo_mesh_destroy(m[1]);
    return r;
}

static void test_hertz_spheres(void) {
#ifdef DEFO_SANITIZED
    const int meshes = 1;
#else
    const int meshes = 2;
#endif
    double err[2] = {NAN, NAN};
    for (int k = 0; k < meshes; k++) {
        const double h = R / (4 + k);
        const hertz r = press_spheres(h);
        err[k] = r.radius / r.hertz - 1;
        TEST_REPORT("h = R/%d: %ld tet10 per sphere, %d Newton: F %.3f N, a %.5f m, Hertz %.5f m "
                    "(%+.2f %%), centre %.1e m off the axis",
                    4 + k, (long)r.tets, r.newton, r.force, r.radius, r.hertz, 100 * err[k],
                    r.centre);
        CHECK_MSG(r.status == DEFO_OK, "%s", defo_last_error());
        CHECK(r.force > 0);
#ifndef DEFO_SANITIZED
        CHECK_MSG(fabs(err[k]) < 0.10, "h = R/%d: a %+.2f %% off Hertz", 4 + k, 100 * err[k]);
        CHECK(r.centre < 0.1 * r.hertz);
#endif
    }
#ifndef DEFO_SANITIZED
    CHECK_MSG(fabs(err[1]) < fabs(err[0]), "finer mesh farther from Hertz: %+.2f %% vs %+.2f %%",
              100 * err[1], 100 * err[0]);
#endif
}

int main(void) {
    RUN(test_hertz_spheres);
    return test_summary();
}
