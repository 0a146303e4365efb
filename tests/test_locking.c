/*
 * tests/test_locking.c — shear locking of linear tetrahedra and its cure by
 * quadratic ones (MTPS08 §4), on a slender cantilever through the whole
 * engine (generator → world → quasistatic integrator → Newton).
 *
 * The cantilever: 1 × 0.1 × 0.1 m, 40 × 4 × 4 cubes each split into 6 tets
 * sharing the cube diagonal, E = 1 MPa, ν = 0.3, clamped at x = 0, a uniform
 * dead traction on the x = L face with total force P = EI/L² (P L²/EI = 1)
 * across the bar.  References (independent of defo):
 *   - StVK, the full load: the inextensible elastica with a follower-free
 *     end load at P L²/EI = 1 gives tip deflection 0.30172 L and tip
 *     shortening 0.05643 L.  tet10 must come within 1 % of both; tet4 on
 *     the same mesh locks (about 0.25 m) — both are reported.
 *   - corotated, 1 % of the load: Euler–Bernoulli P L³ / (3 E I) =
 *     0.0033333 m; tet10 within 1 %.
 * The tip is the mean displacement of the nodes of the end face.
 */
#include "defo/element.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/mesh.h"
#include "defo/world.h"
#include "test.h"

static const double L = 1.0, A = 0.1, E = 1e6, NU = 0.3;

typedef struct tip {
    double deflection; /* −mean z displacement of the end face [m] */
    double shortening; /* −mean x displacement of the end face [m] */
    int newton;
    long nodes, elems;
} tip;

static tip cantilever(int order, defo_formulation form, defo_material_model model, double load) {
    tip r = {NAN, NAN, 0, 0, 0};
    defo_box_def bd = defo_default_box_def();
    bd.size[0] = L, bd.size[1] = A, bd.size[2] = A;
    bd.origin[0] = 0, bd.origin[1] = -A / 2, bd.origin[2] = -A / 2;
    bd.cells[0] = 40, bd.cells[1] = 4, bd.cells[2] = 4;
    bd.split = DEFO_SPLIT_6;
    bd.order = order;
    defo_mesh *m = NULL;
    defo_world *w = NULL;
    unsigned char *end = NULL;
    CHECK_OK(defo_generate_box(&bd, &m));
    defo_world_def wd = defo_default_world_def();
    wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    if (!m || !w) goto out;
    r.nodes = (long)m->num_nodes, r.elems = (long)m->num_elems;
    defo_integrator_def id = defo_default_integrator_def(DEFO_INTEGRATOR_QUASISTATIC);
    id.tolerance = 1e-9;
    CHECK_OK(defo_world_add_integrator(w, &id, NULL));
    defo_body_def b = defo_default_body_def();
    b.mesh = m;
    b.material.model = model;
    b.material.youngs_modulus = E;
    b.material.poisson = NU;
    b.force.formulation = form;
    b.integrator = 0;
    defo_body_id body;
    CHECK_OK(defo_world_add_body(w, &b, &body));
    const double o[3] = {0, 0, 0}, nx[3] = {1, 0, 0}, pl[3] = {L, 0, 0}, mx[3] = {-1, 0, 0};
    defo_region clamp = defo_region_plane(o, nx);
    CHECK_OK(defo_body_prescribe(w, body, &clamp, NULL, NULL));
    /* the end face x = L carries t = P / a² along −z */
    end = calloc((size_t)m->num_nodes, 1);
    defo_region face = defo_region_plane(pl, mx);
    if (!end) goto out;
    CHECK_OK(defo_region_mark(m, &face, end));
    const double I = pow(A, 4) / 12, P = load * E * I / (L * L);
    const double t[3] = {0, 0, -P / (A * A)};
    double area = 0;
    double *f = defo_body_external_force(w, body);
    CHECK_OK(defo_element_traction_load(m, end, t, f, &area));
    CHECK(fabs(area - A * A) < 1e-12);
    defo_status s = defo_world_step(w, 1.0);
    CHECK_MSG(s == DEFO_OK, "tet%d %s: %s", order == 2 ? 10 : 4, defo_formulation_name(form),
              defo_last_error());
    if (s) goto out;
    defo_step_stats st;
    defo_world_stats(w, &st);
    r.newton = st.newton_iterations;
    const double *x = defo_body_positions(w, body);
    double dx = 0, dz = 0;
    int k = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (end[i]) {
            dx += x[3 * i] - m->x[3 * i];
            dz += x[3 * i + 2] - m->x[3 * i + 2];
            k++;
        }
    r.deflection = -dz / k;
    r.shortening = -dx / k;
out:
    free(end);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return r;
}

static void test_locking(void) {
    const double elastica_w = 0.30172 * L, elastica_u = 0.05643 * L;
    tip q = cantilever(2, DEFO_FORMULATION_INVERTIBLE, DEFO_MODEL_STVK, 1.0);
    tip l = cantilever(1, DEFO_FORMULATION_INVERTIBLE, DEFO_MODEL_STVK, 1.0);
    TEST_REPORT("StVK, P L²/EI = 1: tet10 (%ld nodes, %ld elements, %d Newton) deflection "
                "%.5f m, shortening %.5f m; tet4 deflection %.5f m, shortening %.5f m; "
                "elastica %.5f, %.5f m",
                q.nodes, q.elems, q.newton, q.deflection, q.shortening, l.deflection, l.shortening,
                elastica_w, elastica_u);
    CHECK(fabs(q.deflection / elastica_w - 1) < 0.01);
    CHECK(fabs(q.shortening / elastica_u - 1) < 0.01);
    /* linear tets lock: far stiffer than the elastica */
    CHECK(l.deflection < 0.9 * elastica_w);
}

static void test_small_load_corotated(void) {
    const double I = pow(A, 4) / 12, P = 0.01 * E * I / (L * L);
    const double euler_bernoulli = P * L * L * L / (3 * E * I);
    tip q = cantilever(2, DEFO_FORMULATION_COROTATED, DEFO_MODEL_COROTATED, 0.01);
    tip l = cantilever(1, DEFO_FORMULATION_COROTATED, DEFO_MODEL_COROTATED, 0.01);
    TEST_REPORT("corotated, 1 %% load: tet10 %.7f m, tet4 %.7f m, Euler-Bernoulli %.7f m",
                q.deflection, l.deflection, euler_bernoulli);
    CHECK(fabs(q.deflection / euler_bernoulli - 1) < 0.01);
    CHECK(l.deflection < 0.9 * euler_bernoulli);
}

int main(void) {
    RUN(test_locking);
    RUN(test_small_load_corotated);
    return test_summary();
}
