/*
 * tests/test_force_model.c — the force layer (defo/force_model.h), per
 * element kind (tet4, tet10 straight and curved) and formulation
 * (invertible, corotated), against independent quantities:
 *   - forces = −∂E/∂x (central finite differences of the energy);
 *   - tangent K = −∂f/∂x (central differences of the forces; the invertible
 *     model without the definiteness fix, the corotated one with its
 *     rotations held, where K' is exact);
 *   - assembled matrix = matrix-free products, exactly symmetric, diagonal
 *     blocks equal; with the fix dᵀKd ≥ 0 on inverted states;
 *   - patch tests: an affine deformation gives the same stress at every
 *     point of every element (the closed-form P(A) for the invertible model)
 *     and zero net force on interior nodes; rigid motions give zero force;
 *   - damping: D symmetric, PSD, zero on rigid velocities; corotated D = τK';
 *   - derived fields: uniaxial stretch gives von Mises = E ε (ν = 0);
 *   - the SVD-free path (forces only, material/direct.c) against the SVD path
 *     (a tangent evaluation) at the same x: forces, energy, stress and the
 *     tracked stable time agree to rounding, with both paths in use;
 *   - the four-wide explicit pass of tet4 (neo-Hookean) equals the
 *     one-element pass bit for bit (forces, kept F, flags, stable lengths
 *     and time);
 *   - bitwise identical results for 1 and 2 threads; non-finite input named.
 */
#include "defo/element.h"
#include "defo/force_model.h"
#include "defo/math.h"
#include "defo/mesh.h"

#include "force/force_internal.h" /* which points took the direct path */
#include "test.h"

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct fixture {
    defo_mesh *mesh;
    defo_element_rest *rest;
    defo_material *mat;
    defo_force_model *fm;
    size_t n3;
} fixture;

/* The model of f->mesh (owned by f from here): E = 1e4 Pa, Poisson nu. */
static int make_on(fixture *f, defo_material_model model, defo_formulation form, int fix,
                   double damping, double nu) {
    defo_material_def md = defo_default_material();
    md.model = model;
    md.youngs_modulus = 1e4;
    md.poisson = nu;
    md.damping_time = damping;
    defo_force_model_def fd = defo_default_force_model_def();
    fd.formulation = form;
    fd.definiteness_fix = fix;
    if (defo_element_rest_create(f->mesh, &f->rest) || defo_material_create(&md, &f->mat) ||
        defo_force_model_create(f->mesh, f->rest, f->mat, &fd, &f->fm))
        return 0;
    f->n3 = 3 * (size_t)f->mesh->num_nodes;
    return 1;
}

/* kind: 0 tet4 box, 1 tet10 box, 2 curved tet10 sphere; neo-Hookean */
static int make(fixture *f, int kind, defo_formulation form, int fix, double damping, double nu) {
    memset(f, 0, sizeof *f);
    if (kind == 2) {
        defo_sphere_def sd = defo_default_sphere_def();
        sd.order = 2;
        sd.cell_size = 0.6;
        if (defo_generate_sphere(&sd, &f->mesh)) return 0;
    } else {
        defo_box_def bd = defo_default_box_def();
        bd.order = kind == 1 ? 2 : 1;
        bd.cells[0] = 3, bd.cells[1] = 2, bd.cells[2] = 2;
        if (defo_generate_box(&bd, &f->mesh)) return 0;
    }
    return make_on(f, DEFO_MODEL_NEO_HOOKEAN, form, fix, damping, nu);
}

static void drop(fixture *f) {
    defo_force_model_destroy(f->fm);
    defo_material_destroy(f->mat);
    defo_element_rest_destroy(f->rest);
    defo_mesh_destroy(f->mesh);
}

static double *perturbed(const fixture *f, double amp, unsigned long long seed) {
    double *x = malloc(f->n3 * sizeof *x);
    test_rng r = {seed};
    for (size_t i = 0; i < f->n3; i++) x[i] = f->mesh->x[i] + amp * test_range(&r, -1, 1);
    return x;
}

static const char *kind_name[3] = {"tet4", "tet10", "curved tet10"};

static void test_forces_are_energy_gradient(void) {
    for (int form = 0; form < 2; form++)
        for (int kind = 0; kind < 3; kind++) {
            fixture f;
            CHECK(make(&f, kind, (defo_formulation)form, 1, 0, 0.3));
            double *x = perturbed(&f, 0.08, 11 + kind), *g = malloc(f.n3 * sizeof *g);
            double E = 0;
            CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, g, &E));
            /* corotated: f is the gradient of ½uᵀKu with the rotations held */
            const unsigned hold = form ? DEFO_EVAL_KEEP_ROTATIONS : 0;
            double worst = 0, scale = 0;
            for (size_t i = 0; i < f.n3; i += 7) {
                const double h = 1e-6, xi = x[i];
                double Ep = 0, Em = 0;
                x[i] = xi + h;
                CHECK_OK(defo_force_model_evaluate(f.fm, x, hold, NULL, &Ep));
                x[i] = xi - h;
                CHECK_OK(defo_force_model_evaluate(f.fm, x, hold, NULL, &Em));
                x[i] = xi;
                worst = fmax(worst, fabs(-(Ep - Em) / (2 * h) - g[i]));
                scale = fmax(scale, fabs(g[i]));
            }
            CHECK_MSG(worst < 1e-6 * scale, "%s %s: |f + dE/dx| %g of %g", kind_name[kind],
                      defo_formulation_name((defo_formulation)form), worst, scale);
            free(x);
            free(g);
            drop(&f);
        }
}

static double maxdiff(const double *a, const double *b, size_t n, double *scale) {
    double d = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs(a[i] - b[i]));
        s = fmax(s, fabs(a[i]));
    }
    if (scale) *scale = s;
    return d;
}

static void test_tangent_finite_differences(void) {
    for (int form = 0; form < 2; form++)
        for (int kind = 0; kind < 3; kind++) {
            fixture f;
            CHECK(make(&f, kind, (defo_formulation)form, 0, 0, 0.3));
            double *x = perturbed(&f, 0.06, 5 + kind), *d = perturbed(&f, 1.0, 9);
            for (size_t i = 0; i < f.n3; i++) d[i] -= f.mesh->x[i];
            double *y = malloc(f.n3 * sizeof *y), *fp = malloc(f.n3 * sizeof *fp),
                   *fmn = malloc(f.n3 * sizeof *fmn), *fd = malloc(f.n3 * sizeof *fd),
                   *xp = malloc(f.n3 * sizeof *xp);
            CHECK_OK(defo_force_model_evaluate(f.fm, x, DEFO_EVAL_TANGENT, NULL, NULL));
            defo_force_model_tangent_apply(f.fm, d, y);
            const unsigned hold = form ? DEFO_EVAL_KEEP_ROTATIONS : 0;
            const double h = 1e-6;
            for (size_t i = 0; i < f.n3; i++) xp[i] = x[i] + h * d[i];
            CHECK_OK(defo_force_model_evaluate(f.fm, xp, hold, fp, NULL));
            for (size_t i = 0; i < f.n3; i++) xp[i] = x[i] - h * d[i];
            CHECK_OK(defo_force_model_evaluate(f.fm, xp, hold, fmn, NULL));
            for (size_t i = 0; i < f.n3; i++) fd[i] = -(fp[i] - fmn[i]) / (2 * h);
            double s = 0, err = maxdiff(y, fd, f.n3, &s);
            const double fd_err = err / s;
            CHECK_MSG(err < 1e-6 * s, "%s %s: |K d + df| %g of %g", kind_name[kind],
                      defo_formulation_name((defo_formulation)form), err, s);
            /* assembled = matrix-free, exactly symmetric, diagonal blocks agree */
            CHECK_OK(defo_force_model_evaluate(f.fm, x, DEFO_EVAL_TANGENT, NULL, NULL));
            defo_force_model_tangent_apply(f.fm, d, y);
            defo_bcsr *A = defo_force_model_assemble(f.fm, 1.0, 0.0, NULL, 0.0);
            CHECK(A != NULL);
            defo_bcsr_multiply(A, d, fp);
            err = maxdiff(y, fp, f.n3, &s);
            CHECK_MSG(err < 1e-12 * s, "%s %s: assembled vs matrix-free %g of %g", kind_name[kind],
                      defo_formulation_name((defo_formulation)form), err, s);
            const defo_bcsr_pattern *P = defo_bcsr_get_pattern(A);
            const double *val = defo_bcsr_values_const(A);
            int sym = 1;
            for (defo_index I = 0; I < P->num_rows; I++)
                for (int64_t b = P->row_offset[I]; b < P->row_offset[I + 1]; b++)
                    for (int r = 0; r < 3; r++)
                        for (int c = 0; c < 3; c++)
                            sym &= val[9 * b + 3 * r + c] == val[9 * P->transpose[b] + 3 * c + r];
            CHECK(sym);
            double *blk = malloc(9 * (f.n3 / 3) * sizeof *blk);
            defo_force_model_tangent_diagonal(f.fm, blk);
            double db = 0;
            for (defo_index I = 0; I < P->num_rows; I++)
                for (int k = 0; k < 9; k++)
                    db = fmax(db, fabs(blk[9 * I + k] - val[9 * P->diag[I] + k]));
            CHECK_MSG(db < 1e-12 * s, "diagonal blocks %g", db);
            TEST_REPORT("%s %s: tangent vs finite differences %.2g, assembled vs matrix-free %.2g "
                        "(relative)",
                        kind_name[kind], defo_formulation_name((defo_formulation)form), fd_err,
                        err / s);
            free(blk);
            free(x), free(d), free(y), free(fp), free(fmn), free(fd), free(xp);
            drop(&f);
        }
}

/* Smallest Rayleigh quotient found by power iteration on c·I − K (c a
 * Gershgorin bound of the assembled K): an upper bound of λ_min(K), near it. */
static double lowest_curvature(fixture *f) {
    defo_bcsr *A = defo_force_model_assemble(f->fm, 1.0, 0.0, NULL, 0.0);
    const defo_bcsr_pattern *P = defo_bcsr_get_pattern(A);
    const double *val = defo_bcsr_values_const(A);
    double c = 0;
    for (defo_index I = 0; I < P->num_rows; I++)
        for (int r = 0; r < 3; r++) {
            double row = 0;
            for (int64_t b = P->row_offset[I]; b < P->row_offset[I + 1]; b++)
                for (int k = 0; k < 3; k++) row += fabs(val[9 * b + 3 * r + k]);
            c = fmax(c, row);
        }
    double *v = perturbed(f, 1.0, 5), *y = malloc(f->n3 * sizeof *y), rq = 0;
    for (int it = 0; it < 3000; it++) {
        double nv = 0;
        for (size_t i = 0; i < f->n3; i++) nv += v[i] * v[i];
        nv = sqrt(nv);
        for (size_t i = 0; i < f->n3; i++) v[i] /= nv;
        defo_force_model_tangent_apply(f->fm, v, y);
        rq = 0;
        for (size_t i = 0; i < f->n3; i++) rq += v[i] * y[i];
        for (size_t i = 0; i < f->n3; i++) v[i] = c * v[i] - y[i];
    }
    free(v), free(y);
    return rq / c;
}

/* TSIF05 §8: with the fix the tangent is PSD, also with inverted elements;
 * without it the same state is indefinite (so the check can fail). */
static void test_definiteness_fix(void) {
    for (int kind = 0; kind < 2; kind++) {
        double low[2];
        defo_index inv = 0;
        for (int fix = 0; fix < 2; fix++) {
            fixture f;
            CHECK(make(&f, kind, DEFO_FORMULATION_INVERTIBLE, fix, 0, 0.3));
            double *x = perturbed(&f, 0.45, 3);
            CHECK_OK(defo_force_model_evaluate(f.fm, x, DEFO_EVAL_TANGENT, NULL, NULL));
            inv = defo_force_model_count_inverted(f.fm);
            low[fix] = lowest_curvature(&f);
            free(x);
            drop(&f);
        }
        CHECK(inv > 0);
        CHECK_MSG(low[1] >= -1e-9, "%s with the fix: λ_min/λ_bound = %g", kind_name[kind], low[1]);
        CHECK_MSG(low[0] < -1e-3, "%s without the fix: λ_min/λ_bound = %g", kind_name[kind],
                  low[0]);
        TEST_REPORT("%s: %ld inverted elements; lowest curvature / Gershgorin bound: %.3g without "
                    "the fix, %.3g with it",
                    kind_name[kind], (long)inv, low[0], low[1]);
    }
}

/* Affine x = A X + c: every point of every element has F = A and the
 * stress P(A); interior nodes feel no net force.  Rigid: zero force. */
static void test_patch_and_rigid(void) {
    const double A[9] = {1.05, 0.02, -0.01, 0.01, 0.97, 0.03, -0.02, 0.01, 1.08};
    const double ang = 0.7, cs = cos(ang), sn = sin(ang);
    const double Rg[9] = {cs, -sn, 0, sn, cs, 0, 0, 0, 1};
    for (int form = 0; form < 2; form++)
        for (int kind = 0; kind < 3; kind++) {
            fixture f;
            CHECK(make(&f, kind, (defo_formulation)form, 1, 0, 0.3));
            double *x = malloc(f.n3 * sizeof *x), *g = malloc(f.n3 * sizeof *g);
            for (int rigid = 0; rigid < 2; rigid++) {
                const double *T = rigid ? Rg : A;
                for (size_t i = 0; i < f.n3; i += 3)
                    for (int r = 0; r < 3; r++)
                        x[i + r] = 0.3 + T[3 * r] * f.mesh->x[i] + T[3 * r + 1] * f.mesh->x[i + 1] +
                                   T[3 * r + 2] * f.mesh->x[i + 2];
                double E = 0;
                CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, g, &E));
                /* interior nodes: not on the boundary */
                defo_boundary b;
                CHECK_OK(defo_mesh_boundary(f.mesh, f.mesh->order == 2, &b));
                unsigned char *on = calloc(f.n3 / 3, 1);
                for (size_t k = 0; k < (size_t)b.num_faces * b.nodes_per_face; k++)
                    on[b.faces[k]] = 1;
                defo_boundary_free(&b);
                double worst = 0, scale = 0;
                for (size_t i = 0; i < f.n3 / 3; i++)
                    for (int k = 0; k < 3; k++) {
                        scale = fmax(scale, fabs(g[3 * i + k]));
                        if (rigid || !on[i]) worst = fmax(worst, fabs(g[3 * i + k]));
                    }
                free(on);
                if (rigid) {
                    CHECK_MSG(worst < 1e-9 && fabs(E) < 1e-9, "%s %s rigid: |f| %g, E %g",
                              kind_name[kind], defo_formulation_name((defo_formulation)form), worst,
                              E);
                    continue;
                }
                /* curved tet10: ∇N_a det J = adj(J)ᵀ∇ξN_a is cubic, beyond the 4-point rule
                 * (degree 2), so the net interior force of a constant stress is small but
                 * not zero there (MTPS08 §4.2's choice); straight elements are exact */
                if (kind < 2)
                    CHECK_MSG(scale > 0 && worst < 1e-10 * scale, "%s %s: interior force %g of %g",
                              kind_name[kind], defo_formulation_name((defo_formulation)form), worst,
                              scale);
                else
                    TEST_REPORT("curved tet10 %s: net interior force %.2g of %.3g (4-point rule)",
                                defo_formulation_name((defo_formulation)form), worst, scale);
                /* the same stress at every point */
                double S0[9], S[9], spread = 0, smax = 0;
                defo_force_model_stress(f.fm, 0, 0, S0);
                for (defo_index e = 0; e < f.mesh->num_elems; e++)
                    for (int q = 0; q < defo_force_model_points(f.fm); q++) {
                        defo_force_model_stress(f.fm, e, q, S);
                        for (int k = 0; k < 9; k++) {
                            spread = fmax(spread, fabs(S[k] - S0[k]));
                            smax = fmax(smax, fabs(S0[k]));
                        }
                    }
                CHECK_MSG(spread < 1e-9 * smax, "%s: stress spread %g of %g", kind_name[kind],
                          spread, smax);
                if (form == 0) {
                    /* Cauchy σ = P(A) Aᵀ / det A from the material directly */
                    defo_mat3 Am, P;
                    memcpy(Am.m, A, sizeof A);
                    P = defo_material_P(f.mat, &Am);
                    const defo_mat3 sig = defo_m3_scale(defo_m3_mult(P, Am), 1.0 / defo_m3_det(Am));
                    double err = 0;
                    for (int k = 0; k < 9; k++) err = fmax(err, fabs((&sig.m[0][0])[k] - S0[k]));
                    CHECK_MSG(err < 1e-9 * smax, "Cauchy stress vs P(A)Aᵀ/J: %g", err);
                }
            }
            free(x), free(g);
            drop(&f);
        }
}

static void test_damping(void) {
    for (int form = 0; form < 2; form++)
        for (int kind = 0; kind < 2; kind++) {
            fixture f;
            CHECK(make(&f, kind, (defo_formulation)form, 1, 0.02, 0.3));
            CHECK(defo_force_model_has_damping(f.fm));
            double *x = perturbed(&f, 0.05, 21), *u = perturbed(&f, 1, 22),
                   *v = perturbed(&f, 1, 23);
            double *Du = malloc(f.n3 * sizeof *Du), *Dv = malloc(f.n3 * sizeof *Dv);
            for (size_t i = 0; i < f.n3; i++) u[i] -= f.mesh->x[i], v[i] -= f.mesh->x[i];
            CHECK_OK(defo_force_model_evaluate(f.fm, x, DEFO_EVAL_TANGENT, NULL, NULL));
            defo_force_model_damping_apply(f.fm, u, Du);
            defo_force_model_damping_apply(f.fm, v, Dv);
            double uDv = 0, vDu = 0, uDu = 0;
            for (size_t i = 0; i < f.n3; i++)
                uDv += u[i] * Dv[i], vDu += v[i] * Du[i], uDu += u[i] * Du[i];
            CHECK_NEAR(uDv, vDu, 1e-10 * fabs(uDv));
            CHECK(uDu > 0);
            /* assembled k·K + c·D minus k·K is c·D */
            defo_bcsr *A = defo_force_model_assemble(f.fm, 0.0, 1.0, NULL, 0.0);
            defo_bcsr_multiply(A, u, Dv);
            double s = 0, err = maxdiff(Du, Dv, f.n3, &s);
            CHECK_MSG(err < 1e-12 * s, "%s %s: assembled D %g of %g", kind_name[kind],
                      defo_formulation_name((defo_formulation)form), err, s);
            if (form == 1) { /* D = τ K' */
                defo_force_model_tangent_apply(f.fm, u, Dv);
                for (size_t i = 0; i < f.n3; i++) Dv[i] *= 0.02;
                err = maxdiff(Du, Dv, f.n3, &s);
                CHECK_MSG(err < 1e-12 * s, "corotated D = τK': %g", err);
            }
            /* a rigid velocity (rotation about z at the deformed... rest state) is not damped */
            CHECK_OK(defo_force_model_evaluate(f.fm, f.mesh->x, 0, NULL, NULL));
            for (size_t i = 0; i < f.n3; i += 3) {
                v[i] = -f.mesh->x[i + 1] + 0.1;
                v[i + 1] = f.mesh->x[i];
                v[i + 2] = 0.2;
            }
            defo_force_model_damping_apply(f.fm, v, Dv);
            double mx = 0;
            for (size_t i = 0; i < f.n3; i++) mx = fmax(mx, fabs(Dv[i]));
            CHECK_MSG(mx < 1e-9, "rigid velocity damped: %g", mx);
            free(x), free(u), free(v), free(Du), free(Dv);
            drop(&f);
        }
}

/* Uniaxial stretch F = diag(1 + ε, 1, 1), corotated, ν = 0: σ_xx = E ε, so
 * von Mises = max principal = E ε at every element and node. */
static void test_fields_uniaxial(void) {
    for (int kind = 0; kind < 3; kind++) {
        fixture f;
        CHECK(make(&f, kind, DEFO_FORMULATION_COROTATED, 1, 0, 0.0));
        const double eps = 0.01;
        double *x = malloc(f.n3 * sizeof *x);
        memcpy(x, f.mesh->x, f.n3 * sizeof *x);
        for (size_t i = 0; i < f.n3; i += 3) x[i] *= 1 + eps;
        const size_t ne = (size_t)f.mesh->num_elems, n = f.n3 / 3;
        double *J = malloc(ne * sizeof *J), *vm = malloc(ne * sizeof *vm), *mp = malloc(ne * 8),
               *nvm = malloc(n * 8), *nmp = malloc(n * 8);
        defo_force_fields ff = {J, vm, mp, nvm, nmp, 0, 0, NULL};
        CHECK_OK(defo_force_model_fields(f.fm, x, &ff));
        double worst = 0;
        for (size_t e = 0; e < ne; e++) {
            worst = fmax(worst, fabs(vm[e] - 1e4 * eps) + fabs(mp[e] - 1e4 * eps));
            CHECK_NEAR(J[e], 1 + eps, 1e-12);
        }
        for (size_t i = 0; i < n; i++)
            worst = fmax(worst, fabs(nvm[i] - 1e4 * eps) + fabs(nmp[i] - 1e4 * eps));
        CHECK_MSG(worst < 1e-9, "%s: uniaxial von Mises error %g", kind_name[kind], worst);
        CHECK(ff.inverted == 0 && fabs(ff.min_J - (1 + eps)) < 1e-12);
        free(x), free(J), free(vm), free(mp), free(nvm), free(nmp);
        drop(&f);
    }
}

/* The stable time (defo_force_model_stable_time) against the rest wave
 * time: untracked it stays the wave time, the smallest eigenvalue length
 * over c√r₀ (r₀ = the rest tangent bound 3λ + 2μ over λ + 2μ); tracked, a
 * neo-Hookean body squashed uniformly to σ = 0.5 has a tangent bound
 * r = 6..12 times λ + 2μ everywhere, so its stable time is √(r₀/r) of the
 * wave time (exactly, from the material's blocks); the same body at rest or
 * rigidly rotated keeps the wave time, stretched to 1.5 (a softer tangent)
 * keeps it too (the floor at the rest bound), and the corotated formulation
 * keeps it at any state. */
static void test_stable_time(void) {
    fixture f;
    CHECK(make(&f, 0, DEFO_FORMULATION_INVERTIBLE, 1, 0, 0.3));
    const double wave = defo_force_model_wave_time(f.fm);
    double *x = malloc(f.n3 * sizeof *x), *g = malloc(f.n3 * sizeof *g);
    for (size_t i = 0; i < f.n3; i++) x[i] = 0.5 * f.mesh->x[i];
    CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, g, NULL));
    CHECK(defo_force_model_stable_time(f.fm) == wave);
    CHECK(defo_force_model_track_stable_time(f.fm) == 1);
    CHECK(defo_force_model_track_stable_time(f.fm) == 0);
    CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, g, NULL));
    const double squashed = defo_force_model_stable_time(f.fm);
    /* expected: r = the Gershgorin bound of dP/dF at σ = (½, ½, ½) (largest
     * absolute row sum of A and of the pair blocks) over λ + 2μ */
    defo_vec3 ph;
    defo_dpdf dp;
    (void)defo_material_eval(f.mat, defo_v3(0.5, 0.5, 0.5), &ph, &dp);
    double bound = 0;
    for (int i = 0; i < 3; i++)
        bound = fmax(bound, fabs(dp.A[i][0]) + fabs(dp.A[i][1]) + fabs(dp.A[i][2]));
    for (int p = 0; p < 3; p++)
        for (int i = 0; i < 2; i++) bound = fmax(bound, fabs(dp.B[p][i][0]) + fabs(dp.B[p][i][1]));
    const double scale = defo_material_stiffness_scale(f.mat), r = bound / scale;
    /* r₀ from the blocks at rest, the same way */
    (void)defo_material_eval(f.mat, defo_v3(1, 1, 1), &ph, &dp);
    double rest = 0;
    for (int i = 0; i < 3; i++)
        rest = fmax(rest, fabs(dp.A[i][0]) + fabs(dp.A[i][1]) + fabs(dp.A[i][2]));
    const double r0 = rest / scale;
    const double *elen = defo_element_rest_eigen_length(f.rest);
    double emin = INFINITY;
    for (defo_index e = 0; e < f.mesh->num_elems; e++) emin = fmin(emin, elen[e]);
    const double c = sqrt(scale / defo_material_get_def(f.mat)->density);
    CHECK(fabs(wave - emin / (c * sqrt(r0))) <= 1e-14 * wave);
    TEST_REPORT(
        "neo-Hookean squashed to 0.5: stable time %.4g of the wave time (√(r₀/r), r = %.3g, "
        "r₀ = %.4g)",
        squashed / wave, r, r0);
    CHECK(fabs(squashed / wave - sqrt(r0 / r)) < 1e-12);
    CHECK(fabs(r0 - (3 * defo_material_lambda(f.mat) + 2 * defo_material_mu(f.mat)) / scale) <
          1e-12);
    CHECK(r > 6 && r < 12);
    /* a rigid rotation of the rest shape: stretches 1, the wave time */
    for (defo_index i = 0; i < f.mesh->num_nodes; i++) {
        const double *X = f.mesh->x + 3 * i;
        x[3 * i] = -X[1], x[3 * i + 1] = X[0], x[3 * i + 2] = X[2];
    }
    CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, g, NULL));
    CHECK(defo_force_model_stable_time(f.fm) == wave);
    /* stretched to 1.5 the tangent bound falls below the rest one (the
     * logarithm's curvature), but the floor keeps the wave time: a softened
     * body never allows a longer step than at rest */
    (void)defo_material_eval(f.mat, defo_v3(1.5, 1.5, 1.5), &ph, &dp);
    double soft = 0;
    for (int i = 0; i < 3; i++)
        soft = fmax(soft, fabs(dp.A[i][0]) + fabs(dp.A[i][1]) + fabs(dp.A[i][2]));
    CHECK(soft < rest);
    for (size_t i = 0; i < f.n3; i++) x[i] = 1.5 * f.mesh->x[i];
    CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, g, NULL));
    CHECK(defo_force_model_stable_time(f.fm) == wave);
    drop(&f);
    CHECK(make(&f, 0, DEFO_FORMULATION_COROTATED, 1, 0, 0.3));
    for (size_t i = 0; i < f.n3; i++) x[i] = 0.5 * f.mesh->x[i];
    defo_force_model_track_stable_time(f.fm);
    CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, g, NULL));
    CHECK(defo_force_model_stable_time(f.fm) == defo_force_model_wave_time(f.fm));
    drop(&f);
    free(x), free(g);
}

/* Forces-only evaluations take the SVD-free form where it holds; a tangent
 * evaluation takes the SVD everywhere.  At the same x (small and large
 * perturbations, tet4 and tet10) both give the same forces and energy to
 * 1e-12 of their scale, the same Cauchy stress at every point and the same
 * tracked stable time (σ from FᵀF's closed-form eigenvalues: 1e-9; elements
 * left with a rough bound cannot be the minimum).  The
 * large perturbation mixes direct and SVD points, the small one is (nearly:
 * the curved mesh has one distorted point) all direct. */
static void test_direct_path(void) {
    for (int kind = 0; kind < 3; kind++)
        for (int a = 0; a < 2; a++) {
            fixture f;
            CHECK(make(&f, kind, DEFO_FORMULATION_INVERTIBLE, 1, 0, 0.3));
            defo_force_model_track_stable_time(f.fm);
            const defo_index ne = f.mesh->num_elems;
            const int nq = defo_force_model_points(f.fm);
            const size_t np = (size_t)ne * (size_t)nq;
            double *x = perturbed(&f, a ? 0.12 : 0.01, 31 + kind), *g1 = malloc(f.n3 * sizeof *g1),
                   *g2 = malloc(f.n3 * sizeof *g2), *S1 = malloc(9 * np * sizeof *S1);
            double E1 = 0, E2 = 0, scale = 0;
            CHECK_OK(defo_force_model_evaluate(f.fm, x, 0, g1, &E1));
            const double t1 = defo_force_model_stable_time(f.fm);
            size_t direct = 0, rough = 0;
            for (size_t p = 0; p < np; p++) direct += f.fm->direct[p];
            for (defo_index e = 0; e < ne; e++) rough += (f.fm->flag[e] & FM_ROUGH) != 0;
            for (defo_index e = 0; e < ne; e++)
                for (int q = 0; q < nq; q++)
                    defo_force_model_stress(f.fm, e, q, S1 + 9 * ((size_t)e * nq + q));
            CHECK_OK(defo_force_model_evaluate(f.fm, x, DEFO_EVAL_TANGENT, g2, &E2));
            const double t2 = defo_force_model_stable_time(f.fm);
            for (size_t p = 0; p < np; p++) CHECK(!f.fm->direct[p]);
            const double df = maxdiff(g2, g1, f.n3, &scale);
            double ds = 0, ss = 0;
            for (defo_index e = 0; e < ne; e++)
                for (int q = 0; q < nq; q++) {
                    double S2[9];
                    defo_force_model_stress(f.fm, e, q, S2);
                    const double *s1 = S1 + 9 * ((size_t)e * nq + q);
                    for (int k = 0; k < 9; k++) {
                        ds = fmax(ds, fabs(s1[k] - S2[k]));
                        ss = fmax(ss, fabs(S2[k]));
                    }
                }
            TEST_REPORT("%s amplitude %.2f: %zu of %zu points direct, %zu elements left rough; "
                        "forces %.1e, energy %.1e, stress %.1e (relative), stable time %.1e",
                        kind_name[kind], a ? 0.12 : 0.01, direct, np, rough, df / scale,
                        fabs(E1 - E2) / fabs(E2), ds / ss, fabs(t1 - t2) / t2);
            CHECK(a ? direct > np / 4 && direct < np : direct >= np - np / 100);
            if (a) CHECK(rough > 0); /* the rough bounds are in use, the minimum exact */
            CHECK(df <= 1e-12 * scale);
            CHECK(fabs(E1 - E2) <= 1e-12 * fabs(E2));
            CHECK(ds <= 1e-12 * ss);
            CHECK(fabs(t1 - t2) <= 1e-9 * t2);
            free(x), free(g1), free(g2), free(S1);
            drop(&f);
        }
}

/* The stable time of a stiffened body against the true stability limit of
 * the explicit step: where every element is away from rest (squashed to
 * 0.6, perturbed), Newmark's step at the default cfl ½ — half the stable
 * time — must not exceed 2/ω_max, ω_max² the largest |eigenvalue| of
 * M⁻¹K (K the tangent without the definiteness fix, M the lumped masses),
 * found by power iteration on M^{-1/2} K M^{-1/2} to convergence.  The
 * element eigenvalue inequality promises it for every element kind; the
 * report says how close the bound comes (1 = tight). */
static void test_stable_limit(void) {
    for (int kind = 0; kind < 3; kind++) {
        fixture f;
        CHECK(make(&f, kind, DEFO_FORMULATION_INVERTIBLE, 0, 0, 0.3));
        const size_t n3 = f.n3, nn = n3 / 3;
        double *x = perturbed(&f, 0.03, 5 + kind), *g = malloc(n3 * sizeof *g),
               *m = malloc(nn * sizeof *m), *u = malloc(n3 * sizeof *u),
               *y = malloc(n3 * sizeof *y);
        for (size_t i = 0; i < n3; i++) x[i] *= 0.6;
        const double rho = defo_material_get_def(f.mat)->density;
        CHECK_OK(defo_element_lumped_mass(f.mesh, rho, NULL, m));
        defo_force_model_track_stable_time(f.fm);
        CHECK_OK(defo_force_model_evaluate(f.fm, x, DEFO_EVAL_TANGENT, g, NULL));
        const double step = 0.5 * defo_force_model_stable_time(f.fm);
        test_rng r = {99};
        for (size_t i = 0; i < n3; i++) u[i] = test_range(&r, -1, 1);
        double lam = 0, last = 0;
        for (int it = 0; it < 4000; it++) {
            double nu = 0;
            for (size_t i = 0; i < n3; i++) nu += u[i] * u[i];
            for (size_t i = 0; i < n3; i++) u[i] /= sqrt(nu) * sqrt(m[i / 3]);
            defo_force_model_tangent_apply(f.fm, u, y); /* y = K M^{-1/2} û */
            double rq = 0;
            for (size_t i = 0; i < n3; i++) {
                y[i] /= sqrt(m[i / 3]);
                rq += y[i] * u[i] * sqrt(m[i / 3]);
            }
            last = lam, lam = rq;
            memcpy(u, y, n3 * sizeof *u);
        }
        const double limit = 2.0 / sqrt(fabs(lam));
        TEST_REPORT("%s squashed to 0.6: Newmark step %.4g of the limit 2/ω_max = %.4g s (power "
                    "iteration settled to %.1e)",
                    kind_name[kind], step / limit, limit, fabs(lam - last) / fabs(lam));
        CHECK(step <= limit);
        CHECK(fabs(lam - last) <= 1e-6 * fabs(lam));
        free(x), free(g), free(m), free(u), free(y);
        drop(&f);
    }
}

/* The four-wide explicit pass of tet4 (hyper_tet4_block, neo-Hookean)
 * against the one-element pass at the same x, bit for bit: forces, the kept
 * F, the per-element flags and stable lengths, the stable time — tracked and
 * untracked, near rest, stretched and tangled (some lanes inverted), on 72
 * and 30 elements (the last two one by one).  StVK takes no four-wide pass
 * (it has no rough bound: a tracked pass would redo every lane). */
static void test_lanes_bitwise(void) {
    static const int cells[2][3] = {{3, 2, 2}, {5, 1, 1}};
    long finished = 0, left = 0;
    for (int mesh = 0; mesh < 2; mesh++) {
        fixture f;
        memset(&f, 0, sizeof f);
        defo_box_def bd = defo_default_box_def();
        memcpy(bd.cells, cells[mesh], sizeof bd.cells);
        CHECK_OK(defo_generate_box(&bd, &f.mesh));
        CHECK(make_on(&f, DEFO_MODEL_NEO_HOOKEAN, DEFO_FORMULATION_INVERTIBLE, 1, 0, 0.3));
        defo_force_model *fm = f.fm;
        if (!fm || !fm->jinv4) {
            TEST_REPORT("this CPU has no 256-bit lanes: the four-wide pass is never taken");
            drop(&f);
            return;
        }
        const defo_index ne = f.mesh->num_elems;
        const size_t n3 = f.n3;
        double *x = malloc(n3 * sizeof *x), *g1 = malloc(n3 * sizeof *g1),
               *g2 = malloc(n3 * sizeof *g2), *M1 = malloc(9 * (size_t)ne * sizeof *M1),
               *L1 = malloc((size_t)ne * sizeof *L1);
        unsigned char *fl1 = malloc((size_t)ne), *d1 = malloc((size_t)ne);
        for (int track = 0; track < 2; track++)
            for (int a = 0; a < 3; a++) {
                static const double amp[3] = {0.005, 0.08, 0.25};
                test_rng r = {77 + (unsigned long long)(10 * a + mesh)};
                for (size_t i = 0; i < n3; i++)
                    x[i] = f.mesh->x[i] * (a == 1 ? 1.3 : 1.0) + amp[a] * test_range(&r, -1, 1);
                if (track) defo_force_model_track_stable_time(fm);
                fm->lanes = 1;
                CHECK_OK(defo_force_model_evaluate(fm, x, 0, g1, NULL));
                const double t1 = defo_force_model_stable_time(fm);
                const defo_index lanes = fm->lane_elems;
                memcpy(M1, fm->M, 9 * (size_t)ne * sizeof *M1);
                memcpy(L1, fm->stable_len, (size_t)ne * sizeof *L1);
                memcpy(fl1, fm->flag, (size_t)ne), memcpy(d1, fm->direct, (size_t)ne);
                fm->lanes = 0;
                CHECK_OK(defo_force_model_evaluate(fm, x, 0, g2, NULL));
                CHECK(fm->lane_elems == 0);
                CHECK(memcmp(g1, g2, n3 * sizeof *g1) == 0);
                CHECK(memcmp(M1, fm->M, 9 * (size_t)ne * sizeof *M1) == 0);
                CHECK(memcmp(L1, fm->stable_len, (size_t)ne * sizeof *L1) == 0);
                CHECK(memcmp(fl1, fm->flag, (size_t)ne) == 0);
                CHECK(memcmp(d1, fm->direct, (size_t)ne) == 0);
                const double t2 = defo_force_model_stable_time(fm);
                CHECK(memcmp(&t1, &t2, sizeof t1) == 0);
                /* near rest every full block is four-wide; tangled, some
                 * lanes are left (the inverted ones) */
                if (a == 0) CHECK(lanes == ne - ne % 4);
                if (a == 2)
                    CHECK_MSG(lanes > 0 && lanes < ne - ne % 4, "%ld of %ld four-wide", (long)lanes,
                              (long)ne);
                finished += lanes;
                left += ne - lanes;
            }
        free(x), free(g1), free(g2), free(M1), free(L1), free(fl1), free(d1);
        drop(&f);
    }
    fixture f;
    memset(&f, 0, sizeof f);
    defo_box_def bd = defo_default_box_def();
    CHECK_OK(defo_generate_box(&bd, &f.mesh));
    CHECK(make_on(&f, DEFO_MODEL_STVK, DEFO_FORMULATION_INVERTIBLE, 1, 0, 0.3));
    if (f.fm) CHECK(!f.fm->lanes && !f.fm->jinv4);
    drop(&f);
    TEST_REPORT("four-wide = one by one, bit for bit: %ld elements finished four-wide, %ld "
                "one by one",
                finished, left);
}

/* defo_force_model_forget_history says 1 exactly when rotations are kept
 * between evaluations: a corotated model with rotation_interval 1 recomputes
 * every rotation whatever its lazy_tolerance (1 there made the world drop
 * every implicit factorisation at each frame start); interval 0 with a
 * tolerance, or 5, keeps them; linear and invertible models keep nothing. */
static void test_forget_history(void) {
    fixture f;
    CHECK(make(&f, 0, DEFO_FORMULATION_COROTATED, 1, 0, 0.3));
    if (!f.fm) return;
    struct {
        int interval, linear;
        double tol;
        int keeps;
    } cases[] = {{1, 0, 0, 0}, {1, 0, 0.1, 0}, {0, 0, 0.1, 1}, {5, 0, 0, 1}, {5, 1, 0.1, 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        defo_force_model_def fd = defo_default_force_model_def();
        fd.formulation = DEFO_FORMULATION_COROTATED;
        fd.rotation_interval = cases[k].interval;
        fd.lazy_tolerance = cases[k].tol;
        fd.linear = cases[k].linear;
        defo_force_model *fm = NULL;
        CHECK_OK(defo_force_model_create(f.mesh, f.rest, f.mat, &fd, &fm));
        if (fm) CHECK(defo_force_model_forget_history(fm) == cases[k].keeps);
        defo_force_model_destroy(fm);
    }
    defo_force_model_def fd = defo_default_force_model_def();
    defo_force_model *fm = NULL;
    CHECK_OK(defo_force_model_create(f.mesh, f.rest, f.mat, &fd, &fm));
    if (fm) CHECK(defo_force_model_forget_history(fm) == 0);
    defo_force_model_destroy(fm);
    drop(&f);
}

static void test_threads_bitwise(void) {
#ifdef _OPENMP
    for (int form = 0; form < 2; form++)
        for (int kind = 0; kind < 2; kind++) {
            fixture f;
            CHECK(make(&f, kind, (defo_formulation)form, 1, 0.01, 0.3));
            double *x = perturbed(&f, 0.1, 31), *out[2];
            for (int t = 0; t < 2; t++) {
                omp_set_num_threads(t + 1);
                out[t] = malloc(3 * f.n3 * sizeof(double));
                double E;
                CHECK_OK(defo_force_model_evaluate(f.fm, x, DEFO_EVAL_TANGENT, out[t], &E));
                defo_force_model_tangent_apply(f.fm, x, out[t] + f.n3);
                defo_force_model_damping_apply(f.fm, x, out[t] + 2 * f.n3);
                defo_bcsr *A = defo_force_model_assemble(f.fm, 1.0, 0.5, NULL, 0.0);
                double h = 0;
                const double *val = defo_bcsr_values_const(A);
                for (int64_t k = 0; k < 9 * defo_bcsr_get_pattern(A)->num_blocks; k++)
                    h += val[k] * (double)(k % 7 + 1);
                out[t] = realloc(out[t], (3 * f.n3 + 1) * sizeof(double));
                out[t][3 * f.n3] = h;
            }
            CHECK(memcmp(out[0], out[1], (3 * f.n3 + 1) * sizeof(double)) == 0);
            free(out[0]), free(out[1]), free(x);
            drop(&f);
        }
    omp_set_num_threads(2);
#endif
}

static void test_non_finite_named(void) {
    for (int form = 0; form < 2; form++) {
        fixture f;
        CHECK(make(&f, 1, (defo_formulation)form, 1, 0, 0.3));
        double *x = perturbed(&f, 0.01, 1), *g = malloc(f.n3 * sizeof *g);
        x[3 * 5 + 1] = NAN;
        CHECK(defo_force_model_evaluate(f.fm, x, 0, g, NULL) == DEFO_ERR_NUMERICAL);
        CHECK(strstr(defo_last_error(), "node 5 has a non-finite position") != NULL);
        x[3 * 5 + 1] = 1e250;
        CHECK(defo_force_model_evaluate(f.fm, x, 0, g, NULL) == DEFO_ERR_NUMERICAL);
        free(x), free(g);
        drop(&f);
    }
}

int main(void) {
    RUN(test_forces_are_energy_gradient);
    RUN(test_tangent_finite_differences);
    RUN(test_definiteness_fix);
    RUN(test_patch_and_rigid);
    RUN(test_damping);
    RUN(test_fields_uniaxial);
    RUN(test_stable_time);
    RUN(test_stable_limit);
    RUN(test_direct_path);
    RUN(test_lanes_bitwise);
    RUN(test_forget_history);
    RUN(test_threads_bitwise);
    RUN(test_non_finite_named);
    return test_summary();
}
