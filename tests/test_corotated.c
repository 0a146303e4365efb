/*
 * tests/test_corotated.c — warped-stiffness corotational FEM (MG04 §2.3–2.4)
 * and its implicit Euler stepper (MG04 §6).
 *
 * References used:
 *   - analytic: Ke = V Beᵀ E Be equals the closed form
 *     V [λ b_i b_jᵀ + μ b_j b_iᵀ + μ (b_i·b_j) I] per block; rigid modes are
 *     in its null space;
 *   - conservation: element forces sum to zero for any deformation (no ghost
 *     forces); a rigidly rotated + translated mesh has zero force;
 *   - linear FEM: at displacement ε·d the forces equal −K (x − x0) up to
 *     O(ε²) (the error ratio between ε and ε/2 is ≈ 4);
 *   - conserved quantity: a bar spun through 180° keeps its volume
 *     (corotated) while linear FEM (Re = I) inflates;
 *   - reference solution: the cantilever's settled deflection equals the
 *     linear static solution K u = f_ext of the same mesh (PCG on the
 *     assembled linear K), at small deflection;
 *   - inversion: an inverted element gets a proper rotation (det +1) and
 *     the stepper brings it back to positive volume;
 *   - determinism: assembly and forces with 1 and 2 threads are bitwise
 *     identical; lazy rotation updates: the accuracy cost is measured against
 *     full updates.
 */
#include "defo/backward_euler.h"
#include "defo/corotated.h"
#include "defo/math.h"
#include "defo/mesh.h"
#include "defo/solver.h"
#include "defo/sparse.h"
#include "determinism.h"
#include "test.h"

/* A preconditioner of the kind (test helper; NULL when creation failed). */
static defo_precond *precond_new(defo_precond_kind kind, int domains) {
    defo_precond_def d = defo_default_precond_def();
    d.kind = kind;
    d.domains = domains;
    defo_precond *P = NULL;
    CHECK_OK(defo_precond_create(&d, &P));
    return P;
}

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

static double max_abs(const double *v, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s = fmax(s, fabs(v[i]));
    return s;
}

static void test_element_stiffness(void) {
    defo_mesh *m = bar(1, 1, 1, 1.0, 0.7, 0.4);
    defo_material_def mat = material(1e6, 0.3);
    defo_corotated *c = NULL;
    CHECK_OK(defo_corotated_create(m, &mat, NULL, &c));
    double mu, lambda;
    defo_lame(1e6, 0.3, &mu, &lambda);
    defo_rest rest;
    CHECK_OK(defo_rest_compute(m, &rest));
    double worst = 0, scale = 0, null_err = 0, sym = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        double K[144];
        defo_corotated_element_stiffness(c, e, K);
        const double *Di = rest.Dm_inv + 9 * e;
        double b[4][3];
        for (int k = 0; k < 3; k++) {
            b[1][k] = Di[k];
            b[2][k] = Di[3 + k];
            b[3][k] = Di[6 + k];
            b[0][k] = -(b[1][k] + b[2][k] + b[3][k]);
        }
        double V = rest.volume[e];
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                double bij = b[i][0] * b[j][0] + b[i][1] * b[j][1] + b[i][2] * b[j][2];
                for (int r = 0; r < 3; r++)
                    for (int q = 0; q < 3; q++) {
                        double ref = V * (lambda * b[i][r] * b[j][q] + mu * b[j][r] * b[i][q] +
                                          (r == q ? mu * bij : 0));
                        double got = K[(3 * i + r) * 12 + 3 * j + q];
                        worst = fmax(worst, fabs(got - ref));
                        scale = fmax(scale, fabs(ref));
                        sym = fmax(sym, fabs(got - K[(3 * j + q) * 12 + 3 * i + r]));
                    }
            }
        /* rigid modes: translation and infinitesimal rotation of the rest shape */
        for (int mode = 0; mode < 6; mode++) {
            double u[12];
            for (int i = 0; i < 4; i++) {
                const double *X = m->x + 3 * m->elems[4 * e + i];
                double w[3] = {0, 0, 0};
                if (mode < 3) {
                    w[mode] = 1;
                } else {
                    double a[3] = {0, 0, 0};
                    a[mode - 3] = 1;
                    w[0] = a[1] * X[2] - a[2] * X[1];
                    w[1] = a[2] * X[0] - a[0] * X[2];
                    w[2] = a[0] * X[1] - a[1] * X[0];
                }
                for (int k = 0; k < 3; k++) u[3 * i + k] = w[k];
            }
            for (int r = 0; r < 12; r++) {
                double s = 0;
                for (int q = 0; q < 12; q++) s += K[r * 12 + q] * u[q];
                null_err = fmax(null_err, fabs(s));
            }
        }
    }
    TEST_REPORT("Ke vs closed form: %.2e relative; rigid modes %.2e; asymmetry %.2e", worst / scale,
                null_err / scale, sym / scale);
    CHECK(worst <= 1e-13 * scale);
    CHECK(null_err <= 1e-12 * scale);
    CHECK(sym <= 1e-13 * scale);
    defo_rest_free(&rest);
    defo_corotated_destroy(c);
    defo_mesh_destroy(m);
}

static void test_no_ghost_forces(void) {
    defo_mesh *m = bar(4, 2, 2, 1.0, 0.5, 0.5);
    defo_material_def mat = material(1e6, 0.4);
    defo_corotated *c = NULL;
    CHECK_OK(defo_corotated_create(m, &mat, NULL, &c));
    size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x), *f = malloc(n3 * sizeof *f);
    test_rng rng = {4242};
    /* (a) random large deformation: forces sum to zero */
    for (size_t k = 0; k < n3; k++) x[k] = m->x[k] + test_range(&rng, -0.1, 0.1);
    CHECK_OK(defo_corotated_update_rotations(c, x, NULL));
    CHECK_OK(defo_corotated_forces(c, x, f, NULL));
    double sum[3] = {0, 0, 0};
    for (defo_index i = 0; i < m->num_nodes; i++)
        for (int k = 0; k < 3; k++) sum[k] += f[3 * i + k];
    double fmaxv = max_abs(f, n3);
    double net = fmax(fabs(sum[0]), fmax(fabs(sum[1]), fabs(sum[2])));
    TEST_REPORT("random deformation: |Σ f| / max|f| = %.2e", net / fmaxv);
    CHECK(net <= 1e-12 * fmaxv * m->num_nodes);
    /* (b) rigid rotation by 2 rad about a skew axis + translation: zero force */
    defo_mat3 Q = defo_m3_rotation(defo_v3(1, 2, 3), 2.0);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        defo_vec3 p = defo_m3_mulv(Q, defo_v3_load(m->x + 3 * i));
        defo_v3_store(x + 3 * i, defo_v3_add(p, defo_v3(10, -20, 5)));
    }
    CHECK_OK(defo_corotated_update_rotations(c, x, NULL));
    double energy = 0;
    CHECK_OK(defo_corotated_forces(c, x, f, &energy));
    /* scale: the stiffness scale of an element, E·h² (the force of a unit
     * strain on a face of size h) */
    double h = 0.25, fscale = 1e6 * h * h;
    TEST_REPORT("rigid motion: max|f| = %.2e N (scale %.0f N), energy %.2e J", max_abs(f, n3),
                fscale, energy);
    CHECK(max_abs(f, n3) <= 1e-12 * fscale);
    /* the rotations are the rigid rotation */
    const double *R = defo_corotated_rotations(c);
    double rerr = 0;
    for (defo_index e = 0; e < m->num_elems; e++)
        for (int k = 0; k < 9; k++) rerr = fmax(rerr, fabs(R[9 * e + k] - Q.m[k / 3][k % 3]));
    CHECK(rerr < 1e-12);
    free(x);
    free(f);
    defo_corotated_destroy(c);
    defo_mesh_destroy(m);
}

static void test_small_deformation_is_linear(void) {
    defo_mesh *m = bar(3, 2, 2, 1.0, 0.6, 0.6);
    defo_material_def mat = material(1e6, 0.35);
    defo_corotated *c = NULL;
    CHECK_OK(defo_corotated_create(m, &mat, NULL, &c));
    size_t n3 = 3 * (size_t)m->num_nodes;
    /* linear K: assemble with Re = I (the initial rotations) */
    defo_corotated_assemble(c, 1.0, NULL, 0);
    const defo_bcsr *K = defo_corotated_matrix(c);
    double *d = malloc(n3 * sizeof *d), *x = malloc(n3 * sizeof *x), *f = malloc(n3 * sizeof *f),
           *kd = malloc(n3 * sizeof *kd);
    test_rng rng = {31};
    for (size_t k = 0; k < n3; k++) d[k] = test_range(&rng, -1, 1);
    defo_bcsr_multiply(K, d, kd);
    double err[2];
    double eps0 = 1e-3;
    for (int t = 0; t < 2; t++) {
        double eps = eps0 / (1 << t);
        for (size_t k = 0; k < n3; k++) x[k] = m->x[k] + eps * d[k];
        CHECK_OK(defo_corotated_update_rotations(c, x, NULL));
        CHECK_OK(defo_corotated_forces(c, x, f, NULL));
        double e = 0, s = 0;
        for (size_t k = 0; k < n3; k++) {
            e = fmax(e, fabs(f[k] + eps * kd[k]));
            s = fmax(s, fabs(eps * kd[k]));
        }
        err[t] = e / s;
    }
    TEST_REPORT("|f − (−K u)| / |K u|: %.3e at ε=%.0e, %.3e at ε/2 (ratio %.2f, 2 = O(ε²) "
                "absolute)",
                err[0], eps0, err[1], err[0] / err[1]);
    /* relative error O(ε) ⇔ absolute O(ε²) */
    CHECK(err[0] < 20 * eps0);
    CHECK(err[0] / err[1] > 1.8 && err[0] / err[1] < 2.2);
    free(d);
    free(x);
    free(f);
    free(kd);
    defo_corotated_destroy(c);
    defo_mesh_destroy(m);
}

/* Spin a bar about z (its centre at the origin) with angular velocity ω, no
 * gravity, no damping, until it has turned 180°; return the volume ratio. */
static double spin_volume_ratio(int linear, double *angle_out) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 8;
    bd.cells[1] = 2;
    bd.cells[2] = 2;
    bd.size[0] = 1.0;
    bd.size[1] = 0.25;
    bd.size[2] = 0.25;
    bd.origin[0] = -0.5;
    bd.origin[1] = -0.125;
    bd.origin[2] = -0.125;
    defo_mesh *m = NULL;
    defo_generate_box(&bd, &m);
    defo_material_def mat = material(1e6, 0.3);
    defo_backward_euler_def def = defo_default_backward_euler_def();
    def.time_step = 0.005;
    def.gravity[2] = 0;
    def.cg_tolerance = 1e-9;
    def.corotated.linear = linear;
    defo_backward_euler *be = NULL;
    CHECK_OK(defo_backward_euler_create(m, &mat, &def, &be));
    double *x = defo_backward_euler_positions(be), *v = defo_backward_euler_velocities(be);
    const double omega = 2 * 3.14159265358979;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        v[3 * i] = -omega * x[3 * i + 1];
        v[3 * i + 1] = omega * x[3 * i];
    }
    double v0 = 0, v1 = 0, angle = 0, prev = 0;
    defo_mesh_volume(m, NULL, &v0);
    /* the angle of the bar's axis: the two end-face centres */
    for (int step = 0; step < 400 && angle < 3.14159265358979; step++) {
        defo_status st = defo_backward_euler_step(be, NULL);
        if (st < 0) break;
        double ax = 0, ay = 0;
        for (defo_index i = 0; i < m->num_nodes; i++) {
            double sgn = m->x[3 * i] > 0.49 ? 1 : m->x[3 * i] < -0.49 ? -1 : 0;
            ax += sgn * x[3 * i];
            ay += sgn * x[3 * i + 1];
        }
        double a = atan2(ay, ax);
        double da = a - prev;
        if (da < -3.14159265358979) da += 2 * 3.14159265358979;
        if (da > 3.14159265358979) da -= 2 * 3.14159265358979;
        angle += da;
        prev = a;
    }
    defo_mesh_volume(m, x, &v1);
    *angle_out = angle;
    defo_backward_euler_destroy(be);
    defo_mesh_destroy(m);
    return v1 / v0;
}

static void test_rotation_without_inflation(void) {
    double a_cor = 0, a_lin = 0;
    double r_cor = spin_volume_ratio(0, &a_cor);
    double r_lin = spin_volume_ratio(1, &a_lin);
    TEST_REPORT("spun through %.0f°: corotated volume ratio %.4f; linear FEM (Re = I) %.4f "
                "(after %.0f°)",
                a_cor * 180 / 3.14159265358979, r_cor, r_lin, a_lin * 180 / 3.14159265358979);
    CHECK(a_cor >= 3.14159265358979);
    CHECK(fabs(r_cor - 1) < 0.01);
    CHECK(fabs(r_lin - 1) > 0.05);
}

static void test_cantilever_static(void) {
    /* Stiff enough that the deflection is small (linear regime): tip
     * deflection ~ qL⁴/(8EI) ≈ 2 mm for 1 m × 0.25² m, E = 1e8. */
    defo_mesh *m = bar(8, 2, 2, 1.0, 0.25, 0.25);
    defo_material_def mat = material(1e8, 0.3);
    defo_backward_euler_def def = defo_default_backward_euler_def();
    def.time_step = 0.02;
    def.rayleigh_mass = 5;
    def.rayleigh_stiffness = 1e-3;
    def.cg_tolerance = 1e-10;
    defo_backward_euler *be = NULL;
    CHECK_OK(defo_backward_euler_create(m, &mat, &def, &be));
    unsigned char *con = defo_backward_euler_constraints(be);
    defo_index n = m->num_nodes;
    for (defo_index i = 0; i < n; i++)
        if (m->x[3 * i] < 1e-9) con[i] = DEFO_CONSTRAINT_FIXED;
    for (int s = 0; s < 300; s++) CHECK_OK(defo_backward_euler_step(be, NULL));
    const double *x = defo_backward_euler_positions(be);
    /* reference: K u = M g with the linear K of the same mesh */
    defo_corotated *lin = NULL;
    CHECK_OK(defo_corotated_create(m, &mat, NULL, &lin));
    defo_corotated_assemble(lin, 1.0, NULL, 0);
    size_t n3 = 3 * (size_t)n;
    double *b = calloc(n3, sizeof *b), *u = calloc(n3, sizeof *u),
           *work = malloc(4 * n3 * sizeof *work);
    const double *mass = defo_backward_euler_mass(be);
    for (defo_index i = 0; i < n; i++) b[3 * i + 2] = -9.81 * mass[i];
    defo_precond *P = precond_new(DEFO_PRECOND_BLOCK_IC0, 0);
    CHECK_OK(defo_precond_setup(P, defo_corotated_matrix(lin), con, NULL));
    defo_cg_def cg = defo_default_cg_def();
    cg.tolerance = 1e-12;
    cg.max_iterations = 5000;
    CHECK_OK(defo_pcg_solve(&cg, defo_corotated_matrix(lin), P, con, NULL, b, u, work, NULL));
    double tip_sim = 0, tip_ref = 0;
    int cnt = 0;
    for (defo_index i = 0; i < n; i++)
        if (m->x[3 * i] > 1 - 1e-9) {
            tip_sim += x[3 * i + 2] - m->x[3 * i + 2];
            tip_ref += u[3 * i + 2];
            cnt++;
        }
    tip_sim /= cnt;
    tip_ref /= cnt;
    double speed = max_abs(defo_backward_euler_velocities(be), n3);
    TEST_REPORT("tip deflection: settled %.6f m, linear static %.6f m (diff %.3f %%), residual "
                "speed %.1e m/s",
                tip_sim, tip_ref, 100 * fabs(tip_sim / tip_ref - 1), speed);
    CHECK(fabs(tip_sim / tip_ref - 1) < 0.01);
    defo_precond_destroy(P);
    free(b);
    free(u);
    free(work);
    defo_corotated_destroy(lin);
    defo_backward_euler_destroy(be);
    defo_mesh_destroy(m);
}

static void test_inversion_recovery(void) {
    defo_mesh *m = bar(2, 2, 2, 1.0, 1.0, 1.0);
    defo_material_def mat = material(1e5, 0.3);
    defo_backward_euler_def def = defo_default_backward_euler_def();
    def.gravity[2] = 0;
    def.rayleigh_mass = 2;
    def.cg_tolerance = 1e-8;
    defo_backward_euler *be = NULL;
    CHECK_OK(defo_backward_euler_create(m, &mat, &def, &be));
    double *x = defo_backward_euler_positions(be);
    /* push the corner node (1,1,1) through the body to (0.3, 0.3, 0.3): its
     * elements are inverted */
    defo_index corner = -1;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] > 0.99 && m->x[3 * i + 1] > 0.99 && m->x[3 * i + 2] > 0.99) corner = i;
    CHECK(corner >= 0);
    x[3 * corner] = x[3 * corner + 1] = x[3 * corner + 2] = 0.3;
    defo_index inv0 = 0;
    defo_mesh_count_inverted(m, x, &inv0, NULL);
    defo_corotated *c = defo_backward_euler_force_model(be);
    CHECK_OK(defo_corotated_update_rotations(c, x, NULL));
    CHECK(defo_corotated_count_inverted(c) == inv0);
    const double *R = defo_corotated_rotations(c);
    double worst_det = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        defo_mat3 Rm;
        memcpy(Rm.m, R + 9 * e, sizeof Rm.m);
        worst_det = fmax(worst_det, fabs(defo_m3_det(Rm) - 1));
    }
    int steps = 0;
    defo_index inv = inv0;
    for (; steps < 300 && inv > 0; steps++) {
        CHECK_OK(defo_backward_euler_step(be, NULL));
        defo_mesh_count_inverted(m, x, &inv, NULL);
    }
    for (int s = 0; s < 200; s++) defo_backward_euler_step(be, NULL);
    double vol0 = 0, vol = 0;
    defo_mesh_volume(m, NULL, &vol0);
    defo_mesh_volume(m, x, &vol);
    defo_mesh_count_inverted(m, x, &inv, NULL);
    TEST_REPORT("%ld inverted elements, max |det R − 1| = %.1e; none inverted after %d steps; "
                "volume %.4f of rest after 200 more",
                (long)inv0, worst_det, steps, vol / vol0);
    CHECK(inv0 > 0);
    CHECK(worst_det < 1e-12);
    CHECK(inv == 0);
    CHECK(fabs(vol / vol0 - 1) < 0.01);
    defo_backward_euler_destroy(be);
    defo_mesh_destroy(m);
}

/* The rotations of non-inverted elements (scaled Newton polar iteration)
 * against the SVD polar factor defo_polar3 of the same F, for random
 * deformations from mild to strongly anisotropic (stretch ratios up to
 * ~1e3), and proper (det +1) for inverted ones. */
static void test_rotations_match_svd_polar(void) {
    defo_mesh *m = bar(5, 3, 3, 1.0, 0.6, 0.6);
    defo_material_def mat = material(1e6, 0.3);
    defo_corotated *c = NULL;
    CHECK_OK(defo_corotated_create(m, &mat, NULL, &c));
    defo_rest rest;
    CHECK_OK(defo_rest_compute(m, &rest));
    const size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x);
    test_rng rng = {808};
    double worst = 0, worst_det = 0;
    long checked = 0, inverted = 0;
    for (int trial = 0; trial < 40; trial++) {
        double noise = trial < 20 ? 0.01 : 0.2, A[9];
        for (int k = 0; k < 9; k++) A[k] = test_range(&rng, -1, 1) * (trial % 3 == 0 ? 30 : 1);
        for (size_t i = 0; i < n3; i += 3)
            for (int r = 0; r < 3; r++)
                x[i + (size_t)r] = A[3 * r] * m->x[i] + A[3 * r + 1] * m->x[i + 1] +
                                   A[3 * r + 2] * m->x[i + 2] + test_range(&rng, -noise, noise);
        CHECK_OK(defo_corotated_update_rotations(c, x, NULL));
        const double *Rall = defo_corotated_rotations(c);
        for (defo_index e = 0; e < m->num_elems; e++) {
            const defo_index *en = m->elems + 4 * (size_t)e;
            defo_mat3 Ds, Di, F, R;
            for (int j = 0; j < 3; j++)
                for (int r = 0; r < 3; r++)
                    Ds.m[r][j] =
                        x[3 * (size_t)en[j + 1] + (size_t)r] - x[3 * (size_t)en[0] + (size_t)r];
            memcpy(Di.m, rest.Dm_inv + 9 * (size_t)e, sizeof Di.m);
            F = defo_m3_mul(Ds, Di);
            memcpy(R.m, Rall + 9 * (size_t)e, sizeof R.m);
            worst_det = fmax(worst_det, fabs(defo_m3_det(R) - 1));
            if (defo_m3_det(F) <= 0) {
                inverted++;
                continue;
            }
            defo_mat3 Rs;
            defo_polar3(&F, &Rs, NULL);
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) worst = fmax(worst, fabs(R.m[r][k] - Rs.m[r][k]));
            checked++;
        }
    }
    TEST_REPORT("%ld elements: max |R - polar_svd(F)| = %.1e; %ld inverted, max |det R - 1| = %.1e",
                checked, worst, inverted, worst_det);
    CHECK(checked > 1000);
    CHECK(inverted > 0);
    CHECK(worst < 1e-10);
    CHECK(worst_det < 1e-12);
    free(x);
    defo_rest_free(&rest);
    defo_corotated_destroy(c);
    defo_mesh_destroy(m);
}

/* Assembled K' = scale·Σ_e Re Ke Reᵀ + mass_scale·M against a dense
 * reference summed naively from defo_corotated_rotations and
 * defo_corotated_element_stiffness, at a randomly rotated and deformed
 * state; and exactly symmetric (the lower blocks are the mirrored upper). */
static void test_assembly_matches_dense(void) {
    defo_mesh *m = bar(4, 3, 2, 1.0, 0.5, 0.4);
    defo_material_def mat = material(1e6, 0.3);
    defo_corotated *c = NULL;
    CHECK_OK(defo_corotated_create(m, &mat, NULL, &c));
    const defo_index n = m->num_nodes;
    const size_t n3 = 3 * (size_t)n;
    double *x = malloc(n3 * sizeof *x), *mass = malloc((size_t)n * sizeof *mass);
    test_rng rng = {31};
    double ang = 0.9, ca = cos(ang), sa = sin(ang);
    for (defo_index i = 0; i < n; i++) {
        const double *X = m->x + 3 * (size_t)i;
        x[3 * i] = ca * X[0] - sa * X[1] + test_range(&rng, -0.05, 0.05);
        x[3 * i + 1] = sa * X[0] + ca * X[1] + test_range(&rng, -0.05, 0.05);
        x[3 * i + 2] = 1.2 * X[2] + test_range(&rng, -0.05, 0.05);
        mass[i] = test_range(&rng, 0.5, 1.5);
    }
    CHECK_OK(defo_corotated_update_rotations(c, x, NULL));
    defo_corotated_assemble(c, 0.7, mass, 3.0);
    const defo_bcsr *A = defo_corotated_matrix(c);
    double *D = calloc(n3 * n3, sizeof *D), *G = malloc(n3 * n3 * sizeof *G);
    const double *Rall = defo_corotated_rotations(c);
    double Ke[144];
    for (defo_index e = 0; e < m->num_elems; e++) {
        defo_corotated_element_stiffness(c, e, Ke);
        const double *R = Rall + 9 * (size_t)e;
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++)
                for (int r = 0; r < 3; r++)
                    for (int q = 0; q < 3; q++) {
                        double v = 0; /* (R K_ij Rᵀ)_rq */
                        for (int a = 0; a < 3; a++)
                            for (int b = 0; b < 3; b++)
                                v += R[3 * r + a] * Ke[(3 * i + a) * 12 + 3 * j + b] * R[3 * q + b];
                        size_t I = 3 * (size_t)m->elems[4 * e + i] + (size_t)r;
                        size_t J = 3 * (size_t)m->elems[4 * e + j] + (size_t)q;
                        D[I * n3 + J] += 0.7 * v;
                    }
    }
    for (size_t i = 0; i < n3; i++) D[i * n3 + i] += 3.0 * mass[i / 3];
    defo_bcsr_to_dense(A, G);
    double err = 0, scale = max_abs(D, n3 * n3);
    int symmetric = 1;
    for (size_t i = 0; i < n3; i++)
        for (size_t j = 0; j < n3; j++) {
            err = fmax(err, fabs(G[i * n3 + j] - D[i * n3 + j]));
            symmetric &= G[i * n3 + j] == G[j * n3 + i];
        }
    TEST_REPORT("max |K'_assembled - K'_dense| = %.1e of max |K'|", err / scale);
    CHECK(err <= 1e-13 * scale);
    CHECK(symmetric);
    free(D);
    free(G);
    free(x);
    free(mass);
    defo_corotated_destroy(c);
    defo_mesh_destroy(m);
}

typedef struct det_ctx {
    defo_corotated *c;
    const double *x;
    size_t n3;
    int64_t nb;
} det_ctx;

static void det_compute(void *vctx, void *out) {
    det_ctx *d = vctx;
    defo_corotated_invalidate_rotations(d->c);
    defo_corotated_update_rotations(d->c, d->x, NULL);
    double *o = out;
    defo_corotated_forces(d->c, d->x, o, o + d->n3);
    defo_corotated_assemble(d->c, 0.7, NULL, 0);
    memcpy(o + d->n3 + 1, defo_bcsr_values(defo_corotated_matrix(d->c)),
           (size_t)d->nb * 9 * sizeof(double));
}

static void test_determinism(void) {
    defo_mesh *m = bar(16, 6, 6, 1.0, 0.3, 0.3);
    defo_material_def mat = material(1e6, 0.45);
    defo_corotated *c = NULL;
    CHECK_OK(defo_corotated_create(m, &mat, NULL, &c));
    size_t n3 = 3 * (size_t)m->num_nodes;
    double *x = malloc(n3 * sizeof *x);
    test_rng rng = {5};
    for (size_t k = 0; k < n3; k++) x[k] = m->x[k] * 1.1 + test_range(&rng, -0.01, 0.01);
    det_ctx d = {c, x, n3, defo_bcsr_get_pattern(defo_corotated_matrix(c))->num_blocks};
    CHECK(test_bitwise_same_for_threads(det_compute, &d,
                                        (n3 + 1 + 9 * (size_t)d.nb) * sizeof(double), 2));
    free(x);
    defo_corotated_destroy(c);
    defo_mesh_destroy(m);
}

/* Run the cantilever (coarse: 16×4×4 cubes) for 20 steps; mean tip
 * displacement. */
static double cantilever_tip(defo_corotated_def cd, double *updates_per_step) {
    defo_mesh *m = bar(16, 4, 4, 1.0, 0.25, 0.25);
    defo_material_def mat = material(1e6, 0.45);
    defo_backward_euler_def def = defo_default_backward_euler_def();
    def.corotated = cd;
    defo_backward_euler *be = NULL;
    CHECK_OK(defo_backward_euler_create(m, &mat, &def, &be));
    unsigned char *con = defo_backward_euler_constraints(be);
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] < 1e-9) con[i] = DEFO_CONSTRAINT_FIXED;
    double upd = 0;
    int steps = TEST_HEAVY(40) > 20 ? 40 : 20;
    for (int s = 0; s < steps; s++) {
        defo_backward_euler_stats st;
        CHECK_OK(defo_backward_euler_step(be, &st));
        upd += (double)st.rotations_updated / m->num_elems;
    }
    const double *x = defo_backward_euler_positions(be);
    double tip = 0;
    int cnt = 0;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (m->x[3 * i] > 1 - 1e-9) {
            tip += x[3 * i + 2] - m->x[3 * i + 2];
            cnt++;
        }
    *updates_per_step = upd / steps;
    defo_backward_euler_destroy(be);
    defo_mesh_destroy(m);
    return tip / cnt;
}

static void test_lazy_rotations(void) {
    defo_corotated_def full = defo_default_corotated_def();
    double u_full = 0, u_lazy = 0, u_int = 0;
    double tip_full = cantilever_tip(full, &u_full);
    defo_corotated_def lazy = full;
    lazy.rotation_interval = 0;
    lazy.lazy_tolerance = 0.1; /* MTPS08 §4.4 */
    double tip_lazy = cantilever_tip(lazy, &u_lazy);
    defo_corotated_def every4 = full;
    every4.rotation_interval = 4;
    double tip_int = cantilever_tip(every4, &u_int);
    TEST_REPORT("tip: full %.5f m; lazy tol 0.1: %.5f m (%.2f %% off, %.1f %% of rotations "
                "recomputed per step); every 4th step: %.5f m (%.2f %% off, %.1f %%)",
                tip_full, tip_lazy, 100 * fabs(tip_lazy / tip_full - 1), 100 * u_lazy, tip_int,
                100 * fabs(tip_int / tip_full - 1), 100 * u_int);
    CHECK(u_lazy < 1 && u_int < 0.3);
    CHECK(fabs(tip_lazy / tip_full - 1) < 0.1);
    CHECK(fabs(tip_int / tip_full - 1) < 0.1);
}

static void test_errors(void) {
    defo_mesh *m = bar(1, 1, 1, 1, 1, 1);
    defo_material_def mat = material(-1, 0.3);
    defo_corotated *c = NULL;
    CHECK(defo_corotated_create(m, &mat, NULL, &c) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(c == NULL);
    mat = material(1e5, 0.3);
    defo_backward_euler_def def = defo_default_backward_euler_def();
    def.time_step = 0;
    defo_backward_euler *be = NULL;
    CHECK(defo_backward_euler_create(m, &mat, &def, &be) == DEFO_ERR_INVALID_ARGUMENT);
    def = defo_default_backward_euler_def();
    CHECK_OK(defo_backward_euler_create(m, &mat, &def, &be));
    /* a NaN position: refused, state untouched */
    double *x = defo_backward_euler_positions(be);
    x[5] = NAN;
    CHECK(defo_backward_euler_step(be, NULL) == DEFO_ERR_NUMERICAL);
    CHECK(defo_backward_euler_time(be) == 0);
    CHECK(strstr(defo_last_error(), "element") != NULL);
    /* finite positions whose differences overflow: also refused */
    x[5] = 1.7e308;
    x[8] = -1.7e308;
    CHECK(defo_backward_euler_step(be, NULL) == DEFO_ERR_NUMERICAL);
    CHECK(defo_backward_euler_time(be) == 0);
    CHECK(strstr(defo_last_error(), "element") != NULL);
    defo_backward_euler_destroy(be);
    defo_mesh *q = NULL;
    defo_mesh_to_quadratic(m, &q);
    CHECK(defo_corotated_create(q, &mat, NULL, &c) == DEFO_ERR_UNSUPPORTED);
    defo_mesh_destroy(q);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_element_stiffness);
    RUN(test_assembly_matches_dense);
    RUN(test_rotations_match_svd_polar);
    RUN(test_no_ghost_forces);
    RUN(test_small_deformation_is_linear);
    RUN(test_rotation_without_inflation);
    RUN(test_cantilever_static);
    RUN(test_inversion_recovery);
    RUN(test_determinism);
    RUN(test_lazy_rotations);
    RUN(test_errors);
    return test_summary();
}
