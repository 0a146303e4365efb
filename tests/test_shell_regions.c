/*
 * tests/test_shell_regions.c — material regions on shells (tri3, ITF04 §8):
 * triangles with their own material (moduli, thickness, density, damping)
 * and plasticity.
 *
 * References used, per test:
 *   - tension: a strip of two halves (E1 t1, E2 t2; ν = 0) clamped at one
 *     end and pulled at the other: springs in series, δ = P/b (½L/(E1 t1) +
 *     ½L/(E2 t2)) at the end and P/b ½L/(E1 t1) at the interface (small
 *     strain, static solve); the mass Σ ρ t A of the halves; again after
 *     the region's material is edited at run time (API);
 *   - bending: a cantilever strip whose clamped part is ten times stiffer
 *     under a tip load P against Euler–Bernoulli per segment,
 *     w = P/(E1 I) (L³ − (L − a)³)/3 + P/(E2 I) (L − a)³/3, within 3 % on
 *     20 cells and the error falling from 10;
 *   - forces = −dE/dx and K d = −df/dx d by central differences on a sheet
 *     of three parts (moduli, thickness and Poisson differing), the assembled
 *     matrix equal to the product; the damping (one part damps) zero off
 *     that part's stencils, assembled equal to the product;
 *   - stable time: a sheet whose one region is 100× stiffer takes the stiff
 *     sheet's membrane wave time (the parts' wave speeds), and an explicit
 *     run of it stays finite with its energy bounded;
 *   - MG04 Fig. 9 on a shell: a strip bent by a held tip rotation, its
 *     right half heated at run time (a low bending_yield): only hinges
 *     touching the heated half flow (those of the cold half keep exactly
 *     0), every bend line touching it does, and released the strip rests
 *     at its new rest angles: the tip angle is the sum of the hinges'
 *     plastic angles (ε_b,p · 2(A1 + A2)/(t |e|)) within 1e-6 (the whole
 *     strip heated, against the flow rule by hand, is test_shell_
 *     plasticity.c's); a checkpoint taken before the heating, restored and
 *     heated again, gives the same bytes;
 *   - 1 and 2 threads bit for bit, and a resumed run equal to an
 *     uninterrupted one bit for bit (positions, velocities, plastic state),
 *     for a cloth whose region has its own material and von Mises and
 *     bending plasticity (in-plane flow only there), the region's thickness
 *     and modulus edited by the API (the checkpoint carries them to a world
 *     built without the edit);
 *   - scenes: material_regions and material_changes of a region on a shell
 *     run; a region of a shell with thickness 0 or selecting no triangle,
 *     and plastic bending keys in a region of a solid, are refused naming
 *     the JSON path.
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/material.h"
#include "defo/mesh.h"
#include "defo/plasticity.h"
#include "defo/scene.h"
#include "defo/world.h"
#include "determinism.h"
#include "test.h"
#include "test_sheets.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static defo_material_def sheet(double E, double t) {
    defo_material_def d = defo_default_material();
    d.model = DEFO_MODEL_STVK;
    d.youngs_modulus = E;
    d.poisson = 0;
    d.density = 1000;
    d.thickness = t;
    return d;
}

/* A static world (no gravity) with one shell body of mesh m. */
static defo_world *static_world(defo_mesh *m, defo_material_def mat, defo_body_id *id) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    wd.gravity[0] = wd.gravity[1] = wd.gravity[2] = 0;
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_STATIC);
    idf.tolerance = 1e-12;
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = mat;
    bd.name = "strip";
    CHECK_OK(defo_world_add_body(w, &bd, id));
    return w;
}

/* The elements right of x = xs (all corners at x ≥ xs). */
static defo_region right_of(double xs) {
    const double lo[3] = {xs - 1e-9, -INFINITY, -INFINITY}, hi[3] = {INFINITY, INFINITY, INFINITY};
    return defo_region_box(lo, hi);
}

/* ------------------------------------------------------------- tension */
static void test_tension_series(void) {
    const double L = 1, b = 0.2, E1 = 1e9, t1 = 1e-3, E2 = 4e9, t2 = 2e-3, P = 20;
    const int nx = 10, ny = 2;
    defo_mesh *m = grid(nx, ny, L, b);
    defo_body_id id;
    defo_world *w = static_world(m, sheet(E1, t1), &id);
    defo_material_def m2 = sheet(E2, t2);
    m2.density = 3000;
    const defo_region right = right_of(0);
    int reg = -1;
    CHECK_OK(defo_body_add_material_region(w, id, &right, &m2, NULL, &reg));
    CHECK(reg == 0);
    const double clo[3] = {-1, -1, -1}, chi[3] = {-0.5 * L + 1e-9, 1, 1};
    defo_region clamp = defo_region_box(clo, chi);
    CHECK_OK(defo_body_prescribe(w, id, &clamp, NULL, NULL));
    /* the end's consistent load of a uniform traction: P/ny per node, half
     * at the corners */
    double *f = defo_body_external_force(w, id);
    const defo_index n = defo_body_num_nodes(w, id);
    for (defo_index i = 0; i < n; i++)
        if (m->x[3 * i] > 0.5 * L - 1e-9)
            f[3 * i] = P / ny * (fabs(fabs(m->x[3 * i + 1]) - 0.5 * b) < 1e-9 ? 0.5 : 1.0);
    CHECK_OK(defo_world_step(w, 1.0));
    const double *x = defo_body_positions(w, id);
    double dend = 0, dmid = 0, mass = 0;
    int ne = 0, nm = 0;
    for (defo_index i = 0; i < n; i++) {
        const double X = m->x[3 * i];
        if (X > 0.5 * L - 1e-9) dend += x[3 * i] - X, ne++;
        if (fabs(X) < 1e-9) dmid += x[3 * i] - X, nm++;
        mass += defo_body_masses(w, id)[i];
    }
    dend /= ne, dmid /= nm;
    const double want = P / b * (0.5 * L / (E1 * t1) + 0.5 * L / (E2 * t2));
    const double wmid = P / b * 0.5 * L / (E1 * t1);
    const double wmass = 1000 * t1 * 0.5 * L * b + 3000 * t2 * 0.5 * L * b;
    TEST_REPORT("two-part strip in tension: end %.6e m (springs in series %.6e, %.2e relative), "
                "interface %.6e (%.6e); mass %.6f kg (%.6f)",
                dend, want, fabs(dend / want - 1), dmid, wmid, mass, wmass);
    CHECK(fabs(dend / want - 1) < 1e-3);
    CHECK(fabs(dmid / wmid - 1) < 1e-3);
    CHECK(fabs(mass - wmass) < 1e-12 * wmass);
    /* edited at run time: the right half thinner and softer */
    m2.youngs_modulus = 1e9, m2.thickness = 5e-4;
    CHECK_OK(defo_body_set_region_material(w, id, reg, &m2));
    CHECK_OK(defo_world_step(w, 1.0));
    x = defo_body_positions(w, id);
    dend = 0, mass = 0;
    for (defo_index i = 0; i < n; i++) {
        if (m->x[3 * i] > 0.5 * L - 1e-9) dend += x[3 * i] - m->x[3 * i];
        mass += defo_body_masses(w, id)[i];
    }
    dend /= ne;
    const double want2 = P / b * (0.5 * L / (E1 * t1) + 0.5 * L / (1e9 * 5e-4));
    const double wmass2 = 1000 * t1 * 0.5 * L * b + 3000 * 5e-4 * 0.5 * L * b;
    TEST_REPORT("edited (E2 %.3g Pa, t2 %.3g m): end %.6e m (%.6e, %.2e relative); mass %.6f kg "
                "(%.6f)",
                m2.youngs_modulus, m2.thickness, dend, want2, fabs(dend / want2 - 1), mass, wmass2);
    CHECK(fabs(dend / want2 - 1) < 1e-3);
    CHECK(fabs(mass - wmass2) < 1e-12 * wmass2);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------- bending */
/* Cantilever of nx free cells (clamped as in test_shell_world.c: the first
 * two node columns fixed, lengths from the fixed strip's middle), its
 * elements left of node column k + 1 ten times stiffer: a = (k − ½) hx. */
static double cantilever_two(int nx, int k) {
    const double L0 = 0.1, b = 0.02, t = 1e-3, E = 1e9, ratio = 10;
    const double hx = L0 / (nx + 0.5), L = (nx + 0.5) * hx, a = (k - 0.5) * hx;
    defo_mesh *m = grid(nx + 1, 2, (nx + 1) * hx, b);
    defo_body_id id;
    defo_world *w = static_world(m, sheet(E, t), &id);
    const double x0 = -0.5 * (nx + 1) * hx;
    /* the stiff part: the body's material is the soft one, a region the
     * stiff one (elements left of x0 + k hx) */
    const double slo[3] = {-INFINITY, -INFINITY, -INFINITY},
                 shi[3] = {x0 + k * hx + 1e-9, INFINITY, INFINITY};
    defo_region stiff = defo_region_box(slo, shi);
    const defo_material_def ms = sheet(ratio * E, t);
    CHECK_OK(defo_body_add_material_region(w, id, &stiff, &ms, NULL, NULL));
    const double lo[3] = {x0 - 1e-9, -1, -1}, hi[3] = {x0 + hx + 1e-9, 1, 1};
    defo_region r = defo_region_box(lo, hi);
    CHECK_OK(defo_body_prescribe(w, id, &r, NULL, NULL));
    const double I = b * t * t * t / 12, E1 = ratio * E, E2 = E;
    const double per_P = (L * L * L - pow(L - a, 3)) / (3 * E1 * I) + pow(L - a, 3) / (3 * E2 * I);
    const double P = 1e-3 * L / per_P; /* tip deflection L/1000: linear */
    double *f = defo_body_external_force(w, id);
    const defo_index n = defo_body_num_nodes(w, id);
    int ntip = 0;
    for (defo_index i = 0; i < n; i++) ntip += m->x[3 * i] > -x0 - 1e-9;
    for (defo_index i = 0; i < n; i++)
        if (m->x[3 * i] > -x0 - 1e-9) f[3 * i + 2] = P / ntip;
    CHECK_OK(defo_world_step(w, 1.0));
    const double *x = defo_body_positions(w, id);
    double wt = 0;
    for (defo_index i = 0; i < n; i++)
        if (m->x[3 * i] > -x0 - 1e-9) wt += x[3 * i + 2] / ntip;
    const double want = P * per_P;
    TEST_REPORT("cantilever %d cells, stiff (10x) part a = %.4f of L = %.4f: tip %.6g m, beam "
                "theory per segment %.6g m (%.2f %%)",
                nx, a, L, wt, want, 100 * (wt / want - 1));
    defo_world_destroy(w);
    defo_mesh_destroy(m);
    return fabs(wt / want - 1);
}

static void test_cantilever_two_parts(void) {
    const double e10 = cantilever_two(10, 5), e20 = cantilever_two(20, 10);
    CHECK(e20 < 0.03);
    CHECK(e20 < e10);
}

/* ------------------------------------------------- forces and tangent */
typedef struct parts_model {
    defo_mesh *mesh;
    defo_element_rest *rest;
    defo_material *mat[3];
    int32_t *part_of;
    defo_force_model *fm;
} parts_model;

/* A sheet of three parts by x: the base material, a stiffer thicker one
 * and a softer thinner one with another Poisson ratio and damping. */
static parts_model parts_make(defo_mesh *m, double E0, double scale) {
    parts_model pm;
    memset(&pm, 0, sizeof pm);
    pm.mesh = m;
    CHECK_OK(defo_element_rest_create(m, &pm.rest));
    defo_material_def d[3] = {sheet(E0, 0.05), sheet(E0 * scale, 0.08), sheet(E0 / 3, 0.03)};
    d[0].model = d[1].model = d[2].model = DEFO_MODEL_NEO_HOOKEAN;
    d[0].poisson = 0.3, d[2].poisson = 0.45;
    d[1].density = 2500;
    d[2].damping_time = 0.01;
    for (int k = 0; k < 3; k++) CHECK_OK(defo_material_create(&d[k], &pm.mat[k]));
    defo_force_model_def fd = defo_default_force_model_def();
    fd.definiteness_fix = 0;
    CHECK_OK(defo_force_model_create(m, pm.rest, pm.mat[0], &fd, &pm.fm));
    pm.part_of = calloc((size_t)m->num_elems, sizeof *pm.part_of);
    for (defo_index e = 0; e < m->num_elems; e++) {
        double cx = 0;
        for (int a = 0; a < 3; a++) cx += m->x[3 * m->elems[3 * e + a]] / 3;
        pm.part_of[e] = cx < -0.15 ? 0 : cx < 0.15 ? 1 : 2;
    }
    const defo_material *all[3] = {pm.mat[0], pm.mat[1], pm.mat[2]};
    CHECK_OK(defo_force_model_set_materials(pm.fm, 3, all, pm.part_of));
    return pm;
}

static void parts_drop(parts_model *pm) {
    defo_force_model_destroy(pm->fm);
    for (int k = 0; k < 3; k++) defo_material_destroy(pm->mat[k]);
    defo_element_rest_destroy(pm->rest);
    defo_mesh_destroy(pm->mesh);
    free(pm->part_of);
}

static double energy_at(defo_force_model *fm, const double *x) {
    double e = 0;
    CHECK_OK(defo_force_model_evaluate(fm, x, 0, NULL, &e));
    return e;
}

static void test_forces_fd(void) {
    defo_mesh *m = grid(6, 3, 0.9, 0.6);
    for (defo_index i = 0; i < m->num_nodes; i++) /* curved at rest */
        m->x[3 * i + 2] = 0.3 * m->x[3 * i] * m->x[3 * i] - 0.2 * m->x[3 * i + 1];
    parts_model pm = parts_make(m, 1e6, 4);
    const defo_index n = m->num_nodes;
    const size_t k = 3 * (size_t)n;
    double *x = malloc(k * sizeof *x), *xp = malloc(k * sizeof *xp), *f = calloc(k, sizeof *f),
           *fp = calloc(k, sizeof *fp), *fq = calloc(k, sizeof *fq), *d = malloc(k * sizeof *d),
           *y = calloc(k, sizeof *y), *z = calloc(k, sizeof *z);
    for (defo_index i = 0; i < n; i++) {
        const double *X = m->x + 3 * (size_t)i;
        x[3 * i] = 1.04 * X[0] + 0.1 * X[1];
        x[3 * i + 1] = 0.97 * X[1] - 0.05 * X[0];
        x[3 * i + 2] = X[2] + 0.15 * sin(2.1 * X[0] + 0.4) * cos(1.7 * X[1]);
    }
    CHECK_OK(defo_force_model_evaluate(pm.fm, x, DEFO_EVAL_TANGENT, f, NULL));
    double fbig = 0, worst = 0;
    for (size_t j = 0; j < k; j++) fbig = fmax(fbig, fabs(f[j]));
    const double h = 1e-7;
    for (size_t j = 0; j < k; j++) {
        memcpy(xp, x, k * sizeof *xp);
        xp[j] = x[j] + h;
        const double ep = energy_at(pm.fm, xp);
        xp[j] = x[j] - h;
        const double em = energy_at(pm.fm, xp);
        worst = fmax(worst, fabs(-(ep - em) / (2 * h) - f[j]));
    }
    for (size_t j = 0; j < k; j++) d[j] = sin(1.3 * (double)j + 0.2);
    CHECK_OK(defo_force_model_evaluate(pm.fm, x, DEFO_EVAL_TANGENT, f, NULL));
    defo_force_model_tangent_apply(pm.fm, d, y);
    defo_bcsr *A = defo_force_model_assemble(pm.fm, 1.0, 0.0, NULL, 0.0);
    CHECK(A != NULL);
    if (A) defo_bcsr_multiply(A, d, z);
    const double hh = 1e-6;
    for (size_t j = 0; j < k; j++) xp[j] = x[j] + hh * d[j];
    CHECK_OK(defo_force_model_evaluate(pm.fm, xp, 0, fp, NULL));
    for (size_t j = 0; j < k; j++) xp[j] = x[j] - hh * d[j];
    CHECK_OK(defo_force_model_evaluate(pm.fm, xp, 0, fq, NULL));
    double kw = 0, ky = 0, aw = 0;
    for (size_t j = 0; j < k; j++) {
        kw = fmax(kw, fabs(-(fp[j] - fq[j]) / (2 * hh) - y[j]));
        ky = fmax(ky, fabs(y[j]));
        aw = fmax(aw, fabs(y[j] - z[j]));
    }
    /* damping: only part 2 damps, so D d is zero off the stencils of part-2
     * triangles (corners and the corners across their edges: bending); the
     * assembled D equals the product */
    defo_force_model_damping_apply(pm.fm, d, y);
    A = defo_force_model_assemble(pm.fm, 0.0, 1.0, NULL, 0.0);
    CHECK(A != NULL);
    if (A) defo_bcsr_multiply(A, d, z);
    unsigned char *damped = calloc((size_t)n, 1);
    defo_shell_topology tp;
    CHECK_OK(defo_mesh_shell_topology(m, &tp));
    for (defo_index e = 0; e < m->num_elems; e++)
        for (int a = 0; pm.part_of[e] == 2 && a < 3; a++) {
            damped[m->elems[3 * e + a]] = 1;
            if (tp.tri_opposite[3 * e + a] >= 0) damped[tp.tri_opposite[3 * e + a]] = 1;
        }
    double dw = 0, dy = 0, undamped = 0;
    int ndamped = 0;
    for (defo_index i = 0; i < n; i++) {
        ndamped += damped[i];
        for (int c = 0; c < 3; c++) {
            const size_t j = 3 * (size_t)i + (size_t)c;
            dw = fmax(dw, fabs(y[j] - z[j]));
            dy = fmax(dy, fabs(y[j]));
            if (!damped[i]) undamped = fmax(undamped, fabs(y[j]));
        }
    }
    free(damped);
    defo_shell_topology_free(&tp);
    TEST_REPORT("three parts: forces vs -dE/dx %.2g, K d vs -df/dx d %.2g, assembled vs product "
                "%.2g (relative); damping on %d of %ld nodes, elsewhere %.2g, assembled vs "
                "product %.2g",
                worst / fbig, kw / ky, aw / ky, ndamped, (long)n, undamped, dw / dy);
    CHECK(worst / fbig < 1e-6);
    CHECK(kw / ky < 1e-5);
    CHECK(aw <= 1e-12 * ky);
    CHECK(dy > 0 && undamped == 0 && ndamped < n);
    CHECK(dw <= 1e-12 * dy);
    free(x), free(xp), free(f), free(fp), free(fq), free(d), free(y), free(z);
    parts_drop(&pm);
}

/* --------------------------------------------------------- stable time */
static double wave_time_of(double E_region, int region) {
    defo_mesh *m = grid(8, 8, 0.5, 0.5);
    defo_element_rest *rest = NULL;
    defo_material *m0 = NULL, *m1 = NULL;
    defo_force_model *fm = NULL;
    CHECK_OK(defo_element_rest_create(m, &rest));
    defo_material_def d0 = sheet(5e5, 5e-4), d1 = sheet(E_region, 5e-4);
    d0.model = d1.model = DEFO_MODEL_NEO_HOOKEAN;
    CHECK_OK(defo_material_create(&d0, &m0));
    CHECK_OK(defo_material_create(&d1, &m1));
    CHECK_OK(defo_force_model_create(m, rest, region ? m0 : m1, NULL, &fm));
    int32_t *po = calloc((size_t)m->num_elems, sizeof *po);
    for (defo_index e = 0; e < m->num_elems; e++)
        po[e] = m->x[3 * m->elems[3 * e]] > 0 && m->x[3 * m->elems[3 * e + 1]] > 0 &&
                m->x[3 * m->elems[3 * e + 2]] > 0;
    const defo_material *all[2] = {m0, m1};
    if (region) CHECK_OK(defo_force_model_set_materials(fm, 2, all, po));
    const double t = defo_force_model_wave_time(fm);
    defo_force_model_destroy(fm);
    defo_material_destroy(m0);
    defo_material_destroy(m1);
    defo_element_rest_destroy(rest);
    defo_mesh_destroy(m);
    free(po);
    return t;
}

static void test_stable_time(void) {
    const double soft = wave_time_of(5e5, 0), stiff = wave_time_of(5e7, 0),
                 mixed = wave_time_of(5e7, 1);
    TEST_REPORT("wave time: soft sheet %.4g s, 100x stiffer sheet %.4g s, soft sheet with a "
                "100x stiffer region %.4g s",
                soft, stiff, mixed);
    CHECK(fabs(stiff / soft - 0.1) < 0.01); /* ω ∝ √E */
    CHECK(fabs(mixed / stiff - 1) < 0.02);
    /* the mixed cloth under explicit Newmark at that step: finite, its
     * energy bounded by the work of gravity */
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_mesh *m = grid(8, 8, 0.5, 0.5);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = sheet(5e5, 5e-4);
    bd.material.model = DEFO_MODEL_NEO_HOOKEAN;
    bd.material.density = 300;
    bd.name = "cloth";
    defo_body_id id;
    CHECK_OK(defo_world_add_body(w, &bd, &id));
    defo_material_def ms = bd.material;
    ms.youngs_modulus = 5e7;
    const double lo[3] = {0, 0, -1}, hi[3] = {1, 1, 1};
    defo_region q = defo_region_box(lo, hi);
    CHECK_OK(defo_body_add_material_region(w, id, &q, &ms, NULL, NULL));
    const double plo[3] = {-0.26, 0.24, -1}, phi[3] = {0.26, 0.26, 1};
    defo_region edge = defo_region_box(plo, phi);
    CHECK_OK(defo_body_prescribe(w, id, &edge, NULL, NULL));
    double k0 = 0, e0 = 0, g0 = 0, k1 = 0, e1 = 0, g1 = 0;
    CHECK_OK(defo_body_energy(w, id, &k0, &e0, &g0));
    for (int f = 0; f < 4; f++) CHECK_OK(defo_world_step(w, 1.0 / 60));
    CHECK_OK(defo_body_energy(w, id, &k1, &e1, &g1));
    const double *x = defo_body_positions(w, id);
    int finite = 1;
    for (defo_index i = 0; i < 3 * m->num_nodes; i++) finite &= isfinite(x[i]) != 0;
    TEST_REPORT("explicit: after 4 frames kinetic %.4g J, elastic %.4g J, gravity released "
                "%.4g J",
                k1, e1, g0 - g1);
    CHECK(finite);
    CHECK(g0 - g1 > 0 && k1 + e1 <= (g0 - g1) * (1 + 1e-6));
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------ MG04 Fig. 9 on a strip */
static void test_heated_half_yields(void) {
    const int nx = 8, nhot = 4; /* bend lines 1..7; 4..7 touch the right half */
    const double L = 0.1, b = 0.02, t = 1e-3, hx = L / nx, phi = 0.1;
    const double r = 0.3, dt = 1.0;
    defo_mesh *m = grid(nx, 1, L, b);
    defo_body_id id;
    defo_world *w = static_world(m, sheet(1e9, t), &id);
    /* the right half: its own (same) material, plasticity that never
     * yields until heated */
    const defo_region right = right_of(0);
    const defo_material_def mr = sheet(1e9, t);
    const defo_plasticity_def cold = defo_default_plasticity_def();
    int reg = -1;
    CHECK_OK(defo_body_add_material_region(w, id, &right, &mr, &cold, &reg));
    int tip_set = -1;
    const double x0 = -0.5 * L, al = bend_strip(w, id, L, hx, nx, phi, &tip_set);
    CHECK_OK(defo_world_step(w, dt));
    CHECK_NEAR(tip_angle(w, id, m, -x0 - hx, -x0), al, 1e-9);
    void *s0 = NULL, *s1 = NULL, *s2 = NULL;
    size_t n0 = 0, n1 = 0, n2 = 0;
    CHECK_OK(defo_world_serialize(w, 3, &s0, &n0));
    /* heated: a bending yield of 0.3 of the held bending strain */
    const double eps = phi * t / (2 * hx), Y = 0.3 * eps;
    defo_plasticity_def hot = cold;
    hot.bending_yield = Y, hot.bending_creep = r / dt;
    CHECK_OK(defo_body_set_plasticity(w, id, reg, &hot));
    const int steps = 8;
    for (int j = 0; j < steps; j++) CHECK_OK(defo_world_step(w, dt));
    CHECK_OK(defo_body_release(w, id, tip_set));
    for (int j = 0; j < 2; j++) CHECK_OK(defo_world_step(w, dt));
    const double kept = tip_angle(w, id, m, -x0 - hx, -x0);
    /* the hinges' plastic strains by side */
    defo_index nh = 0;
    const double *bp = defo_plasticity_bending(defo_body_plasticity(w, id), &nh);
    defo_shell_topology tp;
    CHECK_OK(defo_mesh_shell_topology(m, &tp));
    CHECK(tp.num_hinges == nh);
    int cold_flowed = 0, hot_flowed = 0;
    double hot_max = 0, sum = 0;
    for (defo_index h = 0; h < nh; h++) {
        int touches_hot = 0; /* a triangle of the hinge in the right half */
        for (int s = 0; s < 2; s++) {
            const defo_index *v = m->elems + 3 * tp.hinge_tri[2 * h + s];
            touches_hot |= m->x[3 * v[0]] + m->x[3 * v[1]] + m->x[3 * v[2]] > 0;
        }
        if (!touches_hot) cold_flowed += bp[h] != 0;

        if (touches_hot && fabs(bp[h]) > 1e-3 * eps) hot_flowed++;
        if (touches_hot) hot_max = fmax(hot_max, fabs(bp[h]));
        sum += bp[h] * 2 * hx / t; /* its rest angle's change, 2(A1 + A2)/(t |e|) per strain */
    }
    TEST_REPORT("strip heated on its right half: hinges that flowed: %d touching the heated half "
                "(largest plastic bending strain %.4g, held %.4g, yield %.4g), %d in the cold "
                "half; released tip %.6f rad, the hinges' plastic angles sum to %.6f (%.2g "
                "relative)",
                hot_flowed, hot_max, eps, Y, cold_flowed, kept, fabs(sum), kept / fabs(sum) - 1);
    CHECK(cold_flowed == 0);
    CHECK(hot_flowed == nhot);
    CHECK(hot_max > Y);
    CHECK(fabs(kept / fabs(sum) - 1) < 1e-6);
    defo_shell_topology_free(&tp);
    CHECK_OK(defo_world_serialize(w, 3, &s1, &n1));
    /* restored to before the heating, the same edit: the same bytes */
    CHECK_OK(defo_world_deserialize(w, 3, s0, n0));
    CHECK_OK(defo_body_set_region_material(w, id, reg, &mr)); /* unchanged: a no-op */
    CHECK_OK(defo_body_set_plasticity(w, id, reg, &hot));
    for (int j = 0; j < steps; j++) CHECK_OK(defo_world_step(w, dt));
    CHECK_OK(defo_body_release(w, id, tip_set));
    for (int j = 0; j < 2; j++) CHECK_OK(defo_world_step(w, dt));
    CHECK_OK(defo_world_serialize(w, 3, &s2, &n2));
    CHECK(n1 == n2 && memcmp(s1, s2, n1) == 0);
    /* annealed (the regions' parts kept): at rest at zero energy, the mass
     * unchanged, and it stays */
    double mass0 = 0, mass1 = 0, ke = 0, ee = 0, ge = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) mass0 += defo_body_masses(w, id)[i];
    CHECK_OK(defo_body_anneal(w, id));
    for (defo_index i = 0; i < m->num_nodes; i++) mass1 += defo_body_masses(w, id)[i];
    CHECK_OK(defo_body_energy(w, id, &ke, &ee, &ge));
    CHECK_OK(defo_world_step(w, dt));
    const double after = tip_angle(w, id, m, -x0 - hx, -x0);
    TEST_REPORT("annealed: elastic energy %.3g J, tip %.9f rad after a step (%.9f), mass %.9g kg "
                "(%.9g), regions %d",
                ee, after, kept, mass1, mass0, defo_body_num_material_regions(w, id));
    CHECK(ee < 1e-20);
    CHECK_NEAR(after, kept, 1e-9);
    CHECK_NEAR(mass1, mass0, 1e-12 * mass0);
    CHECK(defo_body_num_material_regions(w, id) == 1);
    defo_free(s0);
    defo_free(s1);
    defo_free(s2);
    defo_world_destroy(w);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------- threads and resume */
/* A cloth pinned at two corners falling under backward Euler; its right
 * half is heavier, stiffer, more damped and plastic (von Mises in plane,
 * plastic bending), the left elastic. */
static defo_world *two_part_cloth(defo_body_id *id, defo_mesh **mesh) {
    defo_world *w = NULL;
    defo_world_def wd = defo_default_world_def();
    CHECK_OK(defo_world_create(&wd, &w));
    defo_integrator_def idf = defo_default_integrator_def(DEFO_INTEGRATOR_BACKWARD_EULER);
    idf.time_step = 1.0 / 120;
    CHECK_OK(defo_world_add_integrator(w, &idf, NULL));
    defo_mesh *m = grid(6, 6, 0.4, 0.4);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = sheet(5e5, 5e-4);
    bd.material.model = DEFO_MODEL_NEO_HOOKEAN;
    bd.material.poisson = 0.3, bd.material.density = 300, bd.material.damping_time = 0.004;
    bd.name = "cloth";
    CHECK_OK(defo_world_add_body(w, &bd, id));
    defo_material_def mr = bd.material;
    mr.youngs_modulus = 2e6, mr.density = 600, mr.thickness = 8e-4, mr.damping_time = 0.008;
    defo_plasticity_def pd = defo_default_von_mises_def(300, 5e4);
    pd.bending_yield = 1e-4, pd.bending_creep = 50;
    const defo_region right = right_of(0);
    CHECK_OK(defo_body_add_material_region(w, *id, &right, &mr, &pd, NULL));
    const double lo0[3] = {-0.21, 0.19, -1}, hi0[3] = {-0.19, 0.21, 1};
    const double lo1[3] = {0.19, 0.19, -1}, hi1[3] = {0.21, 0.21, 1};
    defo_region r0 = defo_region_box(lo0, hi0), r1 = defo_region_box(lo1, hi1);
    CHECK_OK(defo_body_prescribe(w, *id, &r0, NULL, NULL));
    CHECK_OK(defo_body_prescribe(w, *id, &r1, NULL, NULL));
    if (mesh)
        *mesh = m;
    else
        defo_mesh_destroy(m);
    return w;
}

static void three_frames(void *ctx, void *out) {
    (void)ctx;
    defo_body_id id;
    defo_world *w = two_part_cloth(&id, NULL);
    for (int f = 0; f < 3; f++) CHECK_OK(defo_world_step(w, 1.0 / 30));
    memcpy(out, defo_body_positions(w, id), 3 * 49 * sizeof(double));
    defo_world_destroy(w);
}

static void test_threads(void) {
    CHECK(test_bitwise_same_for_threads(three_frames, NULL, 3 * 49 * sizeof(double), 2));
}

static void test_resume(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/test_shell_regions.ckpt", DEFO_TEST_TMP);
    defo_body_id id, jd;
    defo_mesh *m = NULL;
    defo_world *a = two_part_cloth(&id, &m);
    /* the region thinner and softer (API): the checkpoint carries it
     * to a world built without the edit */
    defo_material_def mr = *defo_body_region_material(a, id, 0);
    mr.thickness = 6e-4, mr.youngs_modulus = 1.5e6;
    CHECK_OK(defo_body_set_region_material(a, id, 0, &mr));
    for (int f = 0; f < 2; f++) CHECK_OK(defo_world_step(a, 1.0 / 30));
    CHECK_OK(defo_world_save(a, 7, path));
    for (int f = 0; f < 2; f++) CHECK_OK(defo_world_step(a, 1.0 / 30));
    defo_world *b = two_part_cloth(&jd, NULL);
    CHECK_OK(defo_world_load(b, 7, path));
    CHECK(defo_body_region_material(b, jd, 0)->thickness == 6e-4);
    for (int f = 0; f < 2; f++) CHECK_OK(defo_world_step(b, 1.0 / 30));
    const size_t bytes = 3 * (size_t)defo_body_num_nodes(a, id) * sizeof(double);
    CHECK(memcmp(defo_body_positions(a, id), defo_body_positions(b, jd), bytes) == 0);
    CHECK(memcmp(defo_body_velocities(a, id), defo_body_velocities(b, jd), bytes) == 0);
    const defo_plasticity *pa = defo_body_plasticity(a, id), *pb = defo_body_plasticity(b, jd);
    defo_index na = 0, nb = 0;
    const double *ba = defo_plasticity_bending(pa, &na), *bb = defo_plasticity_bending(pb, &nb);
    CHECK(na == nb && na > 0 && memcmp(ba, bb, (size_t)na * sizeof(double)) == 0);
    /* in-plane flow only in the plastic (right) half */
    double left = 0, right = 0, bend = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        double La[6], Lb[6];
        defo_plasticity_log(pa, e, 0, La);
        defo_plasticity_log(pb, e, 0, Lb);
        CHECK(memcmp(La, Lb, sizeof La) == 0);
        const double l = sqrt(La[0] * La[0] + La[1] * La[1] + La[2] * La[2] + 2 * La[3] * La[3]);
        double cx = 0;
        for (int c = 0; c < 3; c++) cx += m->x[3 * m->elems[3 * e + c]] / 3;
        if (cx < 0)
            left = fmax(left, l);
        else
            right = fmax(right, l);
    }
    for (defo_index h = 0; h < na; h++) bend = fmax(bend, fabs(ba[h]));
    TEST_REPORT("two-part cloth resumed bit for bit; largest in-plane plastic strain: %.3g in "
                "the plastic half, %.3g in the elastic half; plastic bending %.3g",
                right, left, bend);
    CHECK(right > 0 && left == 0 && bend > 0);
    defo_world_destroy(a);
    defo_world_destroy(b);
    defo_mesh_destroy(m);
    remove(path);
}

/* -------------------------------------------------------------- scenes */
static void test_scenes(void) {
    const char *good =
        "{\"integrator\": {\"type\": \"backward_euler\", \"time_step\": 0.01}, \"duration\": "
        "{\"fps\": 50}, \"bodies\": [{\"name\": \"sheet\", \"generator\": {\"type\": "
        "\"rectangle\", \"cells\": 4}, \"material\": {\"thickness\": 0.001, \"youngs\": "
        "1e6}, \"fixed\": [{\"box\": {\"min\": [-1, -1, -1], \"max\": [-0.49, 1, 1]}}], "
        "\"material_regions\": [{\"name\": \"hot\", \"box\": {\"min\": [-1, -1, -1], \"max\": "
        "[0, 1, 1]}, \"material\": {\"thickness\": 0.002, \"density\": 2000}, \"plasticity\": "
        "{\"bending_yield\": 1}}], \"material_changes\": [{\"time\": 0.01, \"region\": \"hot\", "
        "\"plasticity\": {\"bending_yield\": 1e-5, \"bending_creep\": 10}}]}]}";
    defo_scene *s = NULL;
    defo_scene_errors e;
    CHECK_OK(defo_scene_parse(good, strlen(good), "scene.json", NULL, &s, &e));
    defo_simulation *sim = NULL;
    if (s) CHECK_OK(defo_simulation_create(s, &sim));
    for (int f = 0; sim && f < 3; f++) CHECK_OK(defo_simulation_step_frame(sim));
    if (sim) {
        defo_world *w = defo_simulation_world(sim);
        const defo_body_id b0 = defo_world_body(w, 0);
        defo_index nh = 0;
        const double *bp = defo_plasticity_bending(defo_body_plasticity(w, b0), &nh);
        double bmax = 0;
        for (defo_index h = 0; h < nh; h++) bmax = fmax(bmax, fabs(bp[h]));
        TEST_REPORT("scene: a sheet whose clamped half is heated at 0.01 s sags, plastic bending "
                    "%.3g",
                    bmax);
        CHECK(bmax > 0);
        CHECK(defo_body_num_material_regions(w, b0) == 1);
    }
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
    /* thickness 0 in a region of a shell: refused as parsed */
    const char *thin =
        "{\"bodies\": [{\"name\": \"sheet\", \"generator\": {\"type\": \"rectangle\"}, "
        "\"material\": {\"thickness\": 0.001}, \"material_regions\": [{\"box\": {\"min\": [0, -1, "
        "-1], \"max\": [1, 1, 1]}, \"material\": {\"thickness\": 0}}]}]}";
    s = NULL;
    CHECK(defo_scene_parse(thin, strlen(thin), "scene.json", NULL, &s, &e) != DEFO_OK);
    int found = 0;
    for (int i = 0; i < e.count; i++) {
        TEST_REPORT("%s", e.lines[i]);
        found += strstr(e.lines[i], "bodies[0].material_regions[0].material.thickness: 0") != NULL;
    }
    CHECK(found == 1);
    defo_scene_errors_free(&e);
    defo_scene_destroy(s);
    /* the bending keys in a region of a solid: refused as parsed */
    const char *solid = "{\"bodies\": [{\"name\": \"cube\", \"generator\": {\"type\": \"box\"}, "
                        "\"material_regions\": [{\"box\": {\"min\": [0, -1, -1], \"max\": [1, 1, "
                        "1]}, \"plasticity\": {\"bending_yield\": 0.01}}]}]}";
    s = NULL;
    CHECK(defo_scene_parse(solid, strlen(solid), "scene.json", NULL, &s, &e) != DEFO_OK);
    found = 0;
    for (int i = 0; i < e.count; i++) {
        TEST_REPORT("%s", e.lines[i]);
        found += strstr(e.lines[i], "bodies[0].material_regions[0].plasticity.bending_yield: "
                                    "plastic bending is for shells") != NULL;
    }
    CHECK(found == 1);
    defo_scene_errors_free(&e);
    defo_scene_destroy(s);
    /* a region selecting no triangle: refused when built, with its path */
    const char *far =
        "{\"bodies\": [{\"name\": \"sheet\", \"generator\": {\"type\": \"rectangle\"}, "
        "\"material\": {\"thickness\": 0.001}, \"material_regions\": [{\"name\": \"far\", "
        "\"box\": {\"min\": [5, 5, 5], \"max\": [6, 6, 6]}, \"material\": {\"density\": 10}}]}]}";
    s = NULL;
    sim = NULL;
    CHECK_OK(defo_scene_parse(far, strlen(far), "scene.json", NULL, &s, &e));
    if (s) CHECK(defo_simulation_create(s, &sim) != DEFO_OK);
    TEST_REPORT("%s", defo_last_error());
    CHECK(strstr(defo_last_error(), "bodies[0].material_regions[0] 'far'") &&
          strstr(defo_last_error(), "selects no element"));
    defo_simulation_destroy(sim);
    defo_scene_destroy(s);
}

int main(void) {
    RUN(test_tension_series);
    RUN(test_cantilever_two_parts);
    RUN(test_forces_fd);
    RUN(test_stable_time);
    RUN(test_heated_half_yields);
    RUN(test_threads);
    RUN(test_resume);
    RUN(test_scenes);
    return test_summary();
}
