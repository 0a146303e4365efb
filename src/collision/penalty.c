/*
 * collision/penalty.c — penalty contact forces and stiffness (TSIF05 §10).
 *
 * For every node and every contact source with φ(x) < 0:
 *     ψ = k φ²/2,   f = −k φ ∇φ,   K = k (∇φ∇φᵀ + [φ∇²φ]₊),
 * [·]₊ the positive semidefinite part (negative eigenvalues dropped).  The
 * Gauss–Newton term k∇φ∇φᵀ is always PSD; the curvature term is PSD inside
 * concave parts of a source and negative inside convex ones (φ < 0 and
 * ∇²φ ≥ 0 there), where TSIF05 §10 omits it.  Dropping it changes the Newton
 * path, never the equilibrium (the force is exact).
 *
 * Collider curvature: colliders expose φ and n = ∇φ only, so ∇²φ is the
 * central difference of n with a step of 1e-4 of the collider's size,
 * symmetrised.  At medial points that difference is large and arbitrary; the
 * projection and the factor φ (small near the surface, where contact lives)
 * keep it harmless.
 *
 * Invariants: per-node outputs only (no write conflicts), energies summed with
 * defo_sum (fixed blocking): bitwise identical for any thread count.
 */
#include "base/base.h"
#include "base/parallel.h"
#include "collision/collision_internal.h"
#include "defo/contact.h"
#include "defo/math.h"

#include <math.h>
#include <string.h>

#ifdef _OPENMP
#define PENALTY_CRITICAL _Pragma("omp critical(defo_penalty_bad)")
#define PENALTY_ATOMIC   _Pragma("omp atomic")
#else
#define PENALTY_CRITICAL
#define PENALTY_ATOMIC
#endif

defo_contact_source defo_contact_from_collider(const defo_collider *c, double stiffness) {
    defo_contact_source s;
    memset(&s, 0, sizeof s);
    s.kind = DEFO_CONTACT_COLLIDER;
    s.collider = c;
    s.stiffness = stiffness;
    s.curvature = 1;
    return s;
}

defo_contact_source defo_contact_from_grid(const defo_sdf_grid *g, double stiffness) {
    defo_contact_source s;
    memset(&s, 0, sizeof s);
    s.kind = DEFO_CONTACT_SDF_GRID;
    s.grid = g;
    s.stiffness = stiffness;
    s.curvature = 1;
    return s;
}

double defo_contact_phi(const defo_contact_source *src, double t, const double x[3], double grad[3],
                        double hess[9]) {
    if (src->kind == DEFO_CONTACT_SDF_GRID) return defo_sdf_grid_phi(src->grid, t, x, grad, hess);
    double n[3];
    double phi = defo_collider_phi(src->collider, t, x, n, NULL);
    if (grad) memcpy(grad, n, sizeof n);
    if (hess) {
        double h = 1e-4 * defo_collider_size(src->collider);
        double d[3][3];
        for (int k = 0; k < 3; k++) {
            double xp[3] = {x[0], x[1], x[2]}, xm[3] = {x[0], x[1], x[2]}, np[3], nm[3];
            xp[k] += h;
            xm[k] -= h;
            (void)defo_collider_phi(src->collider, t, xp, np, NULL);
            (void)defo_collider_phi(src->collider, t, xm, nm, NULL);
            for (int i = 0; i < 3; i++) d[i][k] = (np[i] - nm[i]) / (2 * h);
        }
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) hess[3 * i + j] = 0.5 * (d[i][j] + d[j][i]);
    }
    return phi;
}

/* Positive semidefinite part of a symmetric 3×3 matrix. */
static defo_mat3 psd_part(const defo_mat3 *A) {
    defo_vec3 lam;
    defo_mat3 Q;
    defo_sym3_eigen(A, &lam, &Q);
    double l[3] = {fmax(lam.x, 0.0), fmax(lam.y, 0.0), fmax(lam.z, 0.0)};
    defo_mat3 r = defo_m3_zero();
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            r.m[i][j] = Q.m[i][0] * l[0] * Q.m[j][0] + Q.m[i][1] * l[1] * Q.m[j][1] +
                        Q.m[i][2] * l[2] * Q.m[j][2];
    return r;
}

defo_status defo_penalty_eval(const defo_contact_source *src, int num_sources, double t,
                              defo_index n, const double *x, const unsigned char *skip,
                              const double *x_start, double dt, double *energy, double *force,
                              double *block, defo_index *count, defo_index *capped, double *work) {
    if (n < 0 || num_sources < 0 || (num_sources > 0 && !src) || (n > 0 && (!x || !work)) ||
        (x_start && !(dt > 0 && isfinite(dt))))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_penalty_eval: bad arguments");
    for (int s = 0; s < num_sources; s++) {
        const void *p = src[s].kind == DEFO_CONTACT_SDF_GRID ? (const void *)src[s].grid
                                                             : (const void *)src[s].collider;
        if (!p || !(src[s].stiffness > 0.0) || !isfinite(src[s].stiffness))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "contact source %d: missing shape or stiffness not > 0", s);
    }
    defo_index bad = -1, contacts = 0, held = 0;
    /* ~40 ns per node and source (a shape's distance and gradient) */
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH((double)n * num_sources, 40))
    for (defo_index i = 0; i < n; i++) {
        double e = 0.0, f[3] = {0, 0, 0};
        double K[9] = {0};
        int hits = 0, kept = 0;
        if (!skip || !skip[i]) {
            for (int s = 0; s < num_sources; s++) {
                double g[3], H[9];
                double phi = defo_contact_phi(&src[s], t, x + 3 * (size_t)i, g, NULL);
                if (phi < 0 && x_start && src[s].kind == DEFO_CONTACT_COLLIDER) {
                    /* inside at the step's start: only the depth beyond what
                     * separation_speed allows is penalised */
                    const double keep = defo_collider_kept_depth(
                        src[s].collider,
                        defo_collider_phi(src[s].collider, t - dt, x_start + 3 * (size_t)i, NULL,
                                          NULL),
                        dt);
                    phi += keep;
                    kept += keep > 0;
                }
                if (!isfinite(phi)) {
                    PENALTY_CRITICAL {
                        if (bad < 0 || i < bad) bad = i;
                    }
                    continue;
                }
                if (phi >= 0.0) continue;
                hits++;
                double k = src[s].stiffness;
                e += 0.5 * k * phi * phi;
                for (int a = 0; a < 3; a++) f[a] -= k * phi * g[a];
                if (block) {
                    for (int a = 0; a < 3; a++)
                        for (int b = 0; b < 3; b++) K[3 * a + b] += k * g[a] * g[b];
                    if (src[s].curvature) {
                        (void)defo_contact_phi(&src[s], t, x + 3 * (size_t)i, NULL, H);
                        defo_mat3 C;
                        for (int a = 0; a < 3; a++)
                            for (int b = 0; b < 3; b++) C.m[a][b] = phi * H[3 * a + b];
                        if (defo_m3_isfinite(C)) {
                            defo_mat3 Cp = psd_part(&C);
                            for (int a = 0; a < 3; a++)
                                for (int b = 0; b < 3; b++) K[3 * a + b] += k * Cp.m[a][b];
                        }
                    }
                }
            }
        }
        work[i] = e;
        if (force)
            for (int a = 0; a < 3; a++) force[3 * (size_t)i + (size_t)a] += f[a];
        if (block) memcpy(block + 9 * (size_t)i, K, sizeof K);
        if (hits) {
            PENALTY_ATOMIC
            contacts += hits;
        }
        if (kept) {
            PENALTY_ATOMIC
            held += kept;
        }
    }
    if (bad >= 0)
        return defo_error(DEFO_ERR_NUMERICAL, "penalty contact: non-finite distance at node %d",
                          (int)bad);
    if (energy) *energy = defo_sum(work, (size_t)n);
    if (count) *count = contacts;
    if (capped) *capped = held;
    return DEFO_OK;
}
