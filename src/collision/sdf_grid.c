/*
 * collision/sdf_grid.c — signed-distance grids for penalty contact
 * (TSIF05 §10: rigid objects carry a static level set in their own frame).
 *
 * The grid samples the exact BVH signed distance of a closed triangle surface
 * (defo_surface_sdf, winding-number sign) at the nodes of a regular lattice
 * over the surface's bounding box grown by `padding` cells.  Queries
 * interpolate trilinearly, so φ is continuous and its gradient and (mixed)
 * second derivatives are those of the interpolant: the penalty energy, force
 * and stiffness computed from them are mutually consistent, which keeps the
 * Newton line search honest.  Interpolation error is O(h²) away from the
 * medial axis and O(h) near it (kinks of the exact distance).
 *
 * The grid moves rigidly with a defo_motion_def (defo/geometry.h, as the
 * colliders): a world point is mapped back to the grid frame by the inverse
 * motion (defo_motion_pose_unmap), and gradients / Hessians are rotated
 * forward by R(t).
 *
 * Invariants: immutable once built (queries are thread-safe); sampling is
 * parallel over grid nodes and deterministic.
 */
#include "base/base.h"
#include "base/parallel.h"
#include "defo/contact.h"
#include "defo/geometry.h"
#include "defo/math.h"

#include <math.h>
#include <string.h>

struct defo_sdf_grid {
    int n[3];               /* samples per axis */
    double lo[3];           /* position of sample (0,0,0) in the grid frame */
    double h;               /* spacing */
    double *phi;            /* n[0]·n[1]·n[2], x fastest */
    defo_motion_def motion; /* validated */
};

defo_sdf_grid_def defo_default_sdf_grid_def(void) {
    defo_sdf_grid_def d;
    memset(&d, 0, sizeof d);
    d.cell_size = 0.0;
    d.padding = 3;
    d.motion = defo_default_motion_def();
    return d;
}

void defo_sdf_grid_dims(const defo_sdf_grid *grid, int dims[3], double *cell_size) {
    for (int k = 0; k < 3; k++) dims[k] = grid->n[k];
    if (cell_size) *cell_size = grid->h;
}

defo_status defo_sdf_grid_create(const defo_surface_sdf *sdf, const defo_sdf_grid_def *def,
                                 defo_sdf_grid **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_sdf_grid_create: out is NULL");
    *out = NULL;
    if (!sdf) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_sdf_grid_create: sdf is NULL");
    defo_sdf_grid_def d = def ? *def : defo_default_sdf_grid_def();
    if (!(d.cell_size >= 0.0 || d.cell_size < 0.0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "sdf_grid.cell_size: not a number");
    if (d.padding < 1 || d.padding > 1000)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "sdf_grid.padding: %d is not in [1, 1000]",
                          d.padding);
    defo_status vs = defo_motion_validate(&d.motion, "sdf_grid.motion");
    if (vs != DEFO_OK) return vs;
    const defo_surface_info *info = defo_surface_sdf_info(sdf);
    double ext = 0.0;
    for (int k = 0; k < 3; k++) ext = fmax(ext, info->bbox_hi[k] - info->bbox_lo[k]);
    if (!(ext > 0.0) || !isfinite(ext))
        return defo_error(DEFO_ERR_INVALID_MESH, "defo_sdf_grid_create: surface has no extent");
    double h = d.cell_size > 0.0 ? d.cell_size : ext / 64.0;
    int64_t total = 1;
    int n[3];
    for (int k = 0; k < 3; k++) {
        double cells = ceil((info->bbox_hi[k] - info->bbox_lo[k]) / h) + 2.0 * d.padding;
        if (cells > 4e6)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "sdf_grid.cell_size: %g gives too many cells", h);
        n[k] = (int)cells + 1;
        total *= n[k];
    }
    if (total > INT32_MAX)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "sdf_grid.cell_size: %g gives %lld samples (max 2^31)", h,
                          (long long)total);
    defo_sdf_grid *g = defo_calloc(1, sizeof *g);
    if (!g) return defo_error_oom("sdf grid", sizeof *g);
    g->phi = defo_malloc((size_t)total * sizeof(double));
    if (!g->phi) {
        defo_free(g);
        return defo_error_oom("sdf grid samples", (size_t)total * sizeof(double));
    }
    g->h = h;
    for (int k = 0; k < 3; k++) {
        g->n[k] = n[k];
        g->lo[k] = info->bbox_lo[k] - d.padding * h;
    }
    g->motion = d.motion;
    int64_t nxy = (int64_t)n[0] * n[1];
    DEFO_PARALLEL_FOR
    for (int64_t s = 0; s < total; s++) {
        int64_t k = s / nxy, r = s - k * nxy, j = r / n[0], i = r - j * n[0];
        double p[3] = {g->lo[0] + (double)i * h, g->lo[1] + (double)j * h,
                       g->lo[2] + (double)k * h};
        defo_sdf_sample smp;
        defo_surface_sdf_query(sdf, p, &smp);
        g->phi[s] = smp.distance;
    }
    *out = g;
    return DEFO_OK;
}

void defo_sdf_grid_destroy(defo_sdf_grid *grid) {
    if (!grid) return;
    defo_free(grid->phi);
    defo_free(grid);
}

double defo_sdf_grid_phi(const defo_sdf_grid *g, double t, const double x[3], double grad[3],
                         double hess[9]) {
    /* world -> grid frame: p = Rᵀ (x − pivot(t)) + pivot */
    defo_motion_pose P;
    defo_motion_pose_at(&g->motion, t, &P);
    defo_mat3 R;
    memcpy(R.m, P.R, sizeof R.m);
    double p[3];
    defo_motion_pose_unmap(&P, x, p);
    /* cell and local coordinates, clamped to the grid */
    int c[3];
    double u[3], outside = 0.0, clamped[3];
    for (int k = 0; k < 3; k++) {
        double hi = g->lo[k] + (double)(g->n[k] - 1) * g->h;
        clamped[k] = fmin(fmax(p[k], g->lo[k]), hi);
        double d = p[k] - clamped[k];
        outside += d * d;
        double s = (clamped[k] - g->lo[k]) / g->h;
        int ci = (int)floor(s);
        if (ci > g->n[k] - 2) ci = g->n[k] - 2;
        if (ci < 0) ci = 0;
        c[k] = ci;
        u[k] = s - (double)ci;
    }
    outside = sqrt(outside);
    const int64_t nx = g->n[0], nxy = (int64_t)g->n[0] * g->n[1];
    const double *b = g->phi + c[0] + nx * c[1] + nxy * c[2];
    double v[2][2][2];
    for (int dk = 0; dk < 2; dk++)
        for (int dj = 0; dj < 2; dj++)
            for (int di = 0; di < 2; di++) v[dk][dj][di] = b[di + nx * dj + nxy * dk];
    /* trilinear value and derivatives in local coordinates */
    double phi = 0.0, gl[3] = {0, 0, 0}, hxy = 0, hxz = 0, hyz = 0;
    for (int dk = 0; dk < 2; dk++)
        for (int dj = 0; dj < 2; dj++)
            for (int di = 0; di < 2; di++) {
                double wx = di ? u[0] : 1 - u[0], wy = dj ? u[1] : 1 - u[1];
                double wz = dk ? u[2] : 1 - u[2];
                double sx = di ? 1.0 : -1.0, sy = dj ? 1.0 : -1.0, sz = dk ? 1.0 : -1.0;
                double f = v[dk][dj][di];
                phi += wx * wy * wz * f;
                gl[0] += sx * wy * wz * f;
                gl[1] += wx * sy * wz * f;
                gl[2] += wx * wy * sz * f;
                hxy += sx * sy * wz * f;
                hxz += sx * wy * sz * f;
                hyz += wx * sy * sz * f;
            }
    double ih = 1.0 / g->h;
    if (outside > 0.0) {
        /* Beyond the grid: a positive, growing value; the gradient points
         * away from the grid (no contact is ever reported out there). */
        phi += outside;
        if (grad) {
            /* along clamped axes only the distance term varies; along the
             * others the interpolant at the clamped point does */
            double gg[3];
            for (int k = 0; k < 3; k++)
                gg[k] = p[k] != clamped[k] ? (p[k] - clamped[k]) / outside : gl[k] * ih;
            defo_v3_store(grad, defo_m3_mulv(R, defo_v3(gg[0], gg[1], gg[2])));
        }
        if (hess)
            for (int k = 0; k < 9; k++) hess[k] = 0.0;
        return phi;
    }
    if (grad) {
        defo_vec3 gw = defo_m3_mulv(R, defo_v3(gl[0] * ih, gl[1] * ih, gl[2] * ih));
        defo_v3_store(grad, gw);
    }
    if (hess) {
        double s = ih * ih;
        defo_mat3 H = {{{0, hxy * s, hxz * s}, {hxy * s, 0, hyz * s}, {hxz * s, hyz * s, 0}}};
        defo_mat3 W = defo_m3_mult(defo_m3_mul(R, H), R); /* R H Rᵀ */
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) hess[3 * i + j] = W.m[i][j];
    }
    return phi;
}
