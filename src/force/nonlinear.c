/*
 * force/nonlinear.c — invertible FEM element forces and the rotated-frame
 * damping operator (ITF04 §3–5 eq. 2, §6.2; TSIF05 §5).
 *
 * Elastic pass, per tet4 element e (parallel over elements):
 *   F = Ds Dm⁻¹;  F = U F̂ Vᵀ (defo_svd3: det U = det V = +1, σ3 < 0 when
 *   inverted, ITF04 §5);  ψ, P̂ = material(σ) (the inversion extension is the
 *   material's business, ITF04 §6);  B̂m = Vᵀ Bm;  G = U P̂ B̂m (eq. 2);
 *   g0 = −(g1 + g2 + g3), so the element's forces sum to zero exactly up to
 *   rounding, and since P̂ is diagonal (S = F⁻¹P symmetric) they are
 *   torque-free (ITF04 §6).
 * The element's 4 forces go to its own 12-double slot; a node-parallel
 * gather sums the slots of each node in increasing slot order
 * (defo_gather3), so results are bitwise identical for any thread count.
 *
 * U, B̂m and σ are kept: ITF04 §9 diagonalizes F once per time step, and the
 * damping product reuses them.  Because Bm = −V_e Dm⁻ᵀ, Dm⁻¹ V = −B̂mᵀ/V_e,
 * so the rotated velocity gradient needs only the stored data:
 *   Ḟ̂ = Uᵀ Dv Dm⁻¹ V = −(Uᵀ Dv) B̂mᵀ / V_e,
 *   P̂_d = μ_d (Ḟ̂ + Ḟ̂ᵀ) + λ_d tr(Ḟ̂) I,   G_d = U P̂_d B̂m.
 * The map Ḟ̂ → P̂_d is self-adjoint and positive semidefinite, so the
 * operator D with f_d = −D v is symmetric PSD (what CG needs, ITF04 §9).
 *
 * Invariants: no allocation after create; every output is a function of the
 * inputs only (no state besides the stored rotations); a non-finite input
 * never reaches defo_svd3 (it requires finite input) and is reported.
 */
#include "defo/force.h"

#include "base/parallel.h"

#include <math.h>
#include <string.h>

/* Element loops carry an SVD each (hundreds of flops), so a parallel region
 * pays off far below DEFO_PARALLEL_MIN. */
#define FORCE_PARALLEL_MIN 256

struct defo_force {
    const defo_mesh *mesh;
    const defo_rest *rest;
    const defo_material *mat;
    defo_index num_elems, num_nodes;
    defo_incidence inc;
    double *U;      /* 9 per element, row-major */
    double *Bh;     /* B̂m = Vᵀ Bm, 9 per element, row-major */
    double *sigma;  /* 3 per element */
    double *slot;   /* 12 per element: forces on the 4 nodes */
    double *energy; /* V_e ψ_e per element */
    double mu_d, lambda_d;
    int damping;
    double wave_time;
};

static defo_mat3 load9(const double *p) {
    defo_mat3 m;
    memcpy(m.m, p, sizeof m.m);
    return m;
}

/* Smallest altitude of a tetrahedron: 3V / largest face area. */
static double min_altitude(const double *x, const defo_index *v, double vol) {
    double amax = 0;
    for (int f = 0; f < 4; f++) {
        defo_vec3 a = defo_v3_load(x + 3 * v[defo_tet_faces[f][0]]);
        defo_vec3 b = defo_v3_load(x + 3 * v[defo_tet_faces[f][1]]);
        defo_vec3 c = defo_v3_load(x + 3 * v[defo_tet_faces[f][2]]);
        double area = 0.5 * defo_v3_norm(defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a)));
        amax = fmax(amax, area);
    }
    return amax > 0 ? 3.0 * vol / amax : 0.0;
}

void defo_force_destroy(defo_force *f) {
    if (!f) return;
    defo_incidence_free(&f->inc);
    defo_free(f->U);
    defo_free(f->Bh);
    defo_free(f->sigma);
    defo_free(f->slot);
    defo_free(f->energy);
    defo_free(f);
}

defo_status defo_force_create(const defo_mesh *mesh, const defo_rest *rest,
                              const defo_material *material, defo_force **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_force_create: out is NULL");
    *out = NULL;
    if (!mesh || !rest || !material)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_force_create: mesh, rest and material are required");
    if (mesh->order != 1 || mesh->nodes_per_elem != 4)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "defo_force_create: the nonlinear force model needs a tet4 mesh (order "
                          "1), got order %d",
                          mesh->order);
    if (rest->num_elems != mesh->num_elems || !rest->Bm || (mesh->num_elems > 0 && !rest->volume))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_force_create: rest data has %ld elements, mesh has %ld "
                          "(use defo_rest_compute on this mesh)",
                          (long)rest->num_elems, (long)mesh->num_elems);
    defo_force *f = defo_calloc(1, sizeof *f);
    if (!f) return defo_error_oom("force model", sizeof *f);
    size_t ne = (size_t)mesh->num_elems;
    f->mesh = mesh;
    f->rest = rest;
    f->mat = material;
    f->num_elems = mesh->num_elems;
    f->num_nodes = mesh->num_nodes;
    f->U = defo_malloc(ne * 9 * sizeof(double));
    f->Bh = defo_malloc(ne * 9 * sizeof(double));
    f->sigma = defo_malloc(ne * 3 * sizeof(double));
    f->slot = defo_malloc(ne * 12 * sizeof(double));
    f->energy = defo_malloc(ne * sizeof(double));
    if (!f->U || !f->Bh || !f->sigma || !f->slot || !f->energy) {
        defo_force_destroy(f);
        return defo_error_oom("force model buffers", ne * 42 * sizeof(double));
    }
    defo_status s = defo_incidence_build(&f->inc, mesh->elems, (int64_t)ne, 4, mesh->num_nodes);
    if (s) {
        defo_force_destroy(f);
        return s;
    }
    defo_material_damping_moduli(material, &f->mu_d, &f->lambda_d);
    f->damping = f->mu_d > 0 || f->lambda_d > 0;
    /* Rest state: F = I, U = I, B̂m = Bm, σ = 1 until the first evaluation. */
    for (size_t e = 0; e < ne; e++) {
        defo_mat3 I = defo_m3_identity();
        memcpy(f->U + 9 * e, I.m, sizeof I.m);
        memcpy(f->Bh + 9 * e, rest->Bm + 9 * e, 9 * sizeof(double));
        f->sigma[3 * e] = f->sigma[3 * e + 1] = f->sigma[3 * e + 2] = 1.0;
    }
    /* CFL data: dilatational wave speed c = sqrt((λ + 2μ)/ρ). */
    double rho = defo_material_get_def(material)->density;
    double c = sqrt(defo_material_stiffness_scale(material) / rho);
    double hmin = INFINITY;
    for (size_t e = 0; e < ne; e++)
        hmin = fmin(hmin, min_altitude(mesh->x, mesh->elems + 4 * e, rest->volume[e]));
    f->wave_time = ne > 0 && c > 0 ? hmin / c : INFINITY;
    *out = f;
    return DEFO_OK;
}

/* Name the first element whose energy is not finite, with the likely cause. */
static defo_status report_non_finite(const defo_force *f, const double *x) {
    for (defo_index e = 0; e < f->num_elems; e++) {
        if (isfinite(f->energy[e])) continue;
        const defo_index *v = f->mesh->elems + 4 * (size_t)e;
        for (int a = 0; a < 4; a++) {
            const double *p = x + 3 * (size_t)v[a];
            if (!isfinite(p[0]) || !isfinite(p[1]) || !isfinite(p[2]))
                return defo_error(DEFO_ERR_NUMERICAL,
                                  "element %ld: node %ld has a non-finite position", (long)e,
                                  (long)v[a]);
        }
        const double *sg = f->sigma + 3 * (size_t)e;
        return defo_error(DEFO_ERR_NUMERICAL,
                          "element %ld: non-finite energy (stretches %.3g %.3g %.3g)", (long)e,
                          sg[0], sg[1], sg[2]);
    }
    return defo_error(DEFO_ERR_NUMERICAL, "non-finite total elastic energy");
}

defo_status defo_force_elastic(defo_force *f, const double *x, double *out_force, double *energy) {
    const defo_index ne = f->num_elems;
    const defo_index *elems = f->mesh->elems;
    const double *Dm_inv = f->rest->Dm_inv, *Bm = f->rest->Bm, *vol = f->rest->volume;
    const defo_material *mat = f->mat;
    double *Us = f->U, *Bhs = f->Bh, *sig = f->sigma, *slot = f->slot, *en = f->energy;
    DEFO_PARALLEL_FOR_IF(ne > FORCE_PARALLEL_MIN)
    for (defo_index e = 0; e < ne; e++) {
        const defo_index *v = elems + 4 * (size_t)e;
        defo_vec3 x0 = defo_v3_load(x + 3 * (size_t)v[0]);
        defo_mat3 Ds = defo_m3_from_cols(defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[1]), x0),
                                         defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[2]), x0),
                                         defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[3]), x0));
        defo_mat3 F = defo_m3_mul(Ds, load9(Dm_inv + 9 * (size_t)e));
        double *g = slot + 12 * (size_t)e;
        if (!defo_m3_isfinite(F)) { /* defo_svd3 needs finite input: flag and move on */
            memset(g, 0, 12 * sizeof(double));
            sig[3 * (size_t)e] = sig[3 * (size_t)e + 1] = sig[3 * (size_t)e + 2] = NAN;
            en[e] = NAN;
            continue;
        }
        defo_mat3 U, V;
        defo_vec3 s, ph;
        defo_svd3(&F, &U, &s, &V);
        double psi = defo_material_eval(mat, s, &ph, NULL);
        defo_mat3 Bh = defo_m3_tmul(V, load9(Bm + 9 * (size_t)e));
        /* G = U P̂ B̂m, P̂ diagonal: scale U's columns. */
        defo_mat3 UP = U;
        for (int r = 0; r < 3; r++) {
            UP.m[r][0] *= ph.x;
            UP.m[r][1] *= ph.y;
            UP.m[r][2] *= ph.z;
        }
        defo_mat3 G = defo_m3_mul(UP, Bh);
        for (int r = 0; r < 3; r++) {
            g[3 + r] = G.m[r][0];
            g[6 + r] = G.m[r][1];
            g[9 + r] = G.m[r][2];
            g[r] = -(G.m[r][0] + G.m[r][1] + G.m[r][2]);
        }
        memcpy(Us + 9 * (size_t)e, U.m, sizeof U.m);
        memcpy(Bhs + 9 * (size_t)e, Bh.m, sizeof Bh.m);
        sig[3 * (size_t)e] = s.x;
        sig[3 * (size_t)e + 1] = s.y;
        sig[3 * (size_t)e + 2] = s.z;
        en[e] = vol[e] * psi;
    }
    double total = defo_sum(en, (size_t)ne);
    if (!isfinite(total)) return report_non_finite(f, x);
    if (out_force) defo_gather3(&f->inc, slot, out_force);
    if (energy) *energy = total;
    return DEFO_OK;
}

/* slot ← per-element G_d = U P̂_d B̂m for velocities v (the damping force
 * +P_d Bm; D v is its negative). */
static void damping_slots(defo_force *f, const double *v, double sign) {
    const defo_index ne = f->num_elems;
    const defo_index *elems = f->mesh->elems;
    const double *vol = f->rest->volume, *Us = f->U, *Bhs = f->Bh;
    const double mu_d = f->mu_d, la_d = f->lambda_d;
    double *slot = f->slot;
    DEFO_PARALLEL_FOR_IF(ne > FORCE_PARALLEL_MIN)
    for (defo_index e = 0; e < ne; e++) {
        const defo_index *n = elems + 4 * (size_t)e;
        defo_vec3 v0 = defo_v3_load(v + 3 * (size_t)n[0]);
        defo_mat3 Dv = defo_m3_from_cols(defo_v3_sub(defo_v3_load(v + 3 * (size_t)n[1]), v0),
                                         defo_v3_sub(defo_v3_load(v + 3 * (size_t)n[2]), v0),
                                         defo_v3_sub(defo_v3_load(v + 3 * (size_t)n[3]), v0));
        defo_mat3 U = load9(Us + 9 * (size_t)e), Bh = load9(Bhs + 9 * (size_t)e);
        /* Ḟ̂ = −(Uᵀ Dv) B̂mᵀ / V_e */
        defo_mat3 Fh = defo_m3_scale(defo_m3_mult(defo_m3_tmul(U, Dv), Bh), -1.0 / vol[e]);
        double tr = la_d * (Fh.m[0][0] + Fh.m[1][1] + Fh.m[2][2]);
        defo_mat3 Ph;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) Ph.m[i][j] = mu_d * (Fh.m[i][j] + Fh.m[j][i]);
        for (int i = 0; i < 3; i++) Ph.m[i][i] += tr;
        defo_mat3 G = defo_m3_scale(defo_m3_mul(defo_m3_mul(U, Ph), Bh), sign);
        double *g = slot + 12 * (size_t)e;
        for (int r = 0; r < 3; r++) {
            g[3 + r] = G.m[r][0];
            g[6 + r] = G.m[r][1];
            g[9 + r] = G.m[r][2];
            g[r] = -(G.m[r][0] + G.m[r][1] + G.m[r][2]);
        }
    }
}

void defo_force_damping(defo_force *f, const double *v, double *out_force) {
    if (!f->damping) {
        memset(out_force, 0, 3 * (size_t)f->num_nodes * sizeof(double));
        return;
    }
    damping_slots(f, v, 1.0);
    defo_gather3(&f->inc, f->slot, out_force);
}

void defo_force_damping_apply(defo_force *f, const double *v, double *out) {
    if (!f->damping) {
        memset(out, 0, 3 * (size_t)f->num_nodes * sizeof(double));
        return;
    }
    damping_slots(f, v, -1.0);
    defo_gather3(&f->inc, f->slot, out);
}

/* Diagonal of D: moving node a alone along axis i gives Ḟ̂ = u wᵀ with u the
 * i-th row of U and w = −b̂_a / V_e (b̂_0 = −Σ b̂_k), so
 * D_(a,i),(a,i) = V_e (μ_d (|w|² + (u·w)²) + λ_d (u·w)²). */
void defo_force_damping_diagonal(defo_force *f, double *out) {
    const defo_index ne = f->num_elems;
    const double *vol = f->rest->volume, *Us = f->U, *Bhs = f->Bh;
    const double mu_d = f->mu_d, la_d = f->lambda_d;
    double *slot = f->slot;
    DEFO_PARALLEL_FOR_IF(ne > FORCE_PARALLEL_MIN)
    for (defo_index e = 0; e < ne; e++) {
        defo_mat3 U = load9(Us + 9 * (size_t)e), Bh = load9(Bhs + 9 * (size_t)e);
        double inv = -1.0 / vol[e];
        defo_vec3 w[4];
        w[1] = defo_v3_scale(defo_m3_col(&Bh, 0), inv);
        w[2] = defo_v3_scale(defo_m3_col(&Bh, 1), inv);
        w[3] = defo_v3_scale(defo_m3_col(&Bh, 2), inv);
        w[0] = defo_v3_scale(defo_v3_add(defo_v3_add(w[1], w[2]), w[3]), -1.0);
        double *g = slot + 12 * (size_t)e;
        for (int a = 0; a < 4; a++) {
            double ww = defo_v3_norm2(w[a]);
            for (int i = 0; i < 3; i++) {
                double uw = defo_v3_dot(defo_m3_row(&U, i), w[a]);
                g[3 * a + i] = vol[e] * (mu_d * (ww + uw * uw) + la_d * uw * uw);
            }
        }
    }
    defo_gather3(&f->inc, slot, out);
}

int defo_force_has_damping(const defo_force *f) {
    return f->damping;
}

const double *defo_force_sigma(const defo_force *f) {
    return f->sigma;
}

defo_index defo_force_count_inverted(const defo_force *f) {
    defo_index count = 0;
    for (defo_index e = 0; e < f->num_elems; e++) count += f->sigma[3 * (size_t)e + 2] <= 0;
    return count;
}

double defo_force_wave_time(const defo_force *f) {
    return f->wave_time;
}
