/*
 * mesher/shapes.c — the sphere, cylinder and torus generators of defo/mesh.h
 * (tet4 or tet10), made by the mesher: the analytic surface is tessellated
 * finely (edges about h/3), meshed by mesher.c (BCC lattice of spacing h,
 * snapping, then the quality optimisation to dihedral angles >= 20° and
 * altitudes >= 0.2 h), and the boundary moved from the tessellation onto
 * the analytic surface:
 *   - each boundary corner node to its closest point on the surface when
 *     every incident tet stays positive with its smallest dihedral angle
 *     >= min(20°, its angle before) (else half way, else it stays), in
 *     node order;
 *   - tet10: the edge midpoints of those corners (defo_mesh_to_quadratic),
 *     each boundary edge node to the surface where every incident element
 *     keeps det J >= 0.1 of the straight element's at 15 sample points
 *     (mesher_make_tet10).
 * The optimisation is what the earlier snapped lattice lacked: snapping
 * alone leaves boundary slivers of 10°, and the smallest element sets
 * Newmark's stable step (a unit sphere at h = r/4: 10.1° and 1.4 ms then,
 * 20° and 3.4 ms now, for about the same number of tets).
 * Deterministic: the same definition gives the same mesh bit for bit.
 */
#include "mesher/mesher_internal.h"

#include "defo/geometry.h"
#include "defo/math.h"
#include "defo/mesh.h"
#include "base/base.h"

#include <math.h>
#include <string.h>

#define PI 3.14159265358979323846

/* ------------------------------------------------------ the shapes */
typedef enum shape_kind { SHAPE_SPHERE, SHAPE_CYLINDER, SHAPE_TORUS } shape_kind;

typedef struct shape {
    shape_kind kind;
    defo_vec3 c;
    double r;  /* sphere / cylinder radius, torus minor radius */
    double R;  /* torus major radius */
    double hh; /* cylinder half height */
} shape;

/* Unit vector of (x, y) in the plane, or (1, 0) on the axis. */
static void radial(double x, double y, double *ux, double *uy) {
    double rho = sqrt(x * x + y * y);
    if (rho > 0) {
        *ux = x / rho;
        *uy = y / rho;
    } else {
        *ux = 1;
        *uy = 0;
    }
}

/* Closest point on the surface. */
static defo_vec3 shape_project(const shape *sh, defo_vec3 p) {
    defo_vec3 d = defo_v3_sub(p, sh->c);
    switch (sh->kind) {
    case SHAPE_SPHERE: {
        double n = defo_v3_norm(d);
        defo_vec3 u = n > 0 ? defo_v3_scale(d, 1.0 / n) : defo_v3(1, 0, 0);
        return defo_v3_axpy(sh->c, sh->r, u);
    }
    case SHAPE_CYLINDER: {
        double ux, uy, rho = sqrt(d.x * d.x + d.y * d.y);
        radial(d.x, d.y, &ux, &uy);
        double dr = rho - sh->r, dz = fabs(d.z) - sh->hh, sz = d.z < 0 ? -1 : 1;
        defo_vec3 q;
        if (dr <= 0 && dz <= 0) { /* inside: nearest of side and cap */
            if (dr > dz)
                q = defo_v3(sh->r * ux, sh->r * uy, d.z);
            else
                q = defo_v3(d.x, d.y, sz * sh->hh);
        } else { /* outside: clamp onto the solid */
            double rr = fmin(rho, sh->r), zz = fmax(-sh->hh, fmin(sh->hh, d.z));
            q = defo_v3(rr * ux, rr * uy, zz);
        }
        return defo_v3_add(sh->c, q);
    }
    case SHAPE_TORUS: {
        double ux, uy;
        radial(d.x, d.y, &ux, &uy);
        defo_vec3 ring = defo_v3(sh->R * ux, sh->R * uy, 0);
        defo_vec3 t = defo_v3_sub(d, ring);
        double n = defo_v3_norm(t);
        defo_vec3 u = n > 0 ? defo_v3_scale(t, 1.0 / n) : defo_v3(ux, uy, 0);
        return defo_v3_add(sh->c, defo_v3_axpy(ring, sh->r, u));
    }
    }
    return p;
}

/* shape_project as a mesher_closest_fn */
static void shape_closest(const void *ctx, const double p[3], double q[3]) {
    defo_v3_store(q, shape_project(ctx, defo_v3_load(p)));
}

/* ------------------------------------------------------ tessellations */
/* Points a ring of n around the z axis (radius rr, height z) */
static defo_status ring(defo_mesh *s, const shape *sh, int n, double rr, double z) {
    defo_status st = DEFO_OK;
    for (int j = 0; j < n && !st; j++) {
        const double t = 2 * PI * j / n;
        st = defo_mesh_add_node(s, sh->c.x + rr * cos(t), sh->c.y + rr * sin(t), sh->c.z + z, NULL);
    }
    return st;
}

static defo_status tri(defo_mesh *s, defo_index a, defo_index b, defo_index c) {
    const defo_index v[3] = {a, b, c};
    return defo_mesh_add_tri(s, v, 3, 0);
}

/* The closed cylinder surface, outward: nt points around, nz rows up the
 * side, nr rings on each cap (a fan at the centre). */
static defo_status cylinder_surface(const shape *sh, double e, defo_mesh **out) {
    const int nt = (int)fmax(12, ceil(2 * PI * sh->r / e)), nz = (int)fmax(1, ceil(2 * sh->hh / e)),
              nr = (int)fmax(1, ceil(sh->r / e));
    defo_mesh *s = NULL;
    defo_status st = defo_mesh_create(0, &s);
    /* side rows 0..nz (row 0 the bottom rim, row nz the top rim) */
    for (int k = 0; k <= nz && !st; k++) st = ring(s, sh, nt, sh->r, -sh->hh + 2 * sh->hh * k / nz);
    for (int k = 0; k < nz && !st; k++)
        for (int j = 0; j < nt && !st; j++) {
            const defo_index a = k * nt + j, b = k * nt + (j + 1) % nt, c = b + nt, d = a + nt;
            st = tri(s, a, b, c);
            if (!st) st = tri(s, a, c, d);
        }
    /* caps: rings nr-1..1 inside each rim, then the centre */
    for (int cap = 0; cap < 2 && !st; cap++) {
        const double z = cap ? sh->hh : -sh->hh;
        defo_index outer = cap ? (defo_index)nz * nt : 0; /* the rim's first point */
        for (int i = nr - 1; i >= 0 && !st; i--) {
            const defo_index first = s->num_nodes;
            if (i > 0) {
                st = ring(s, sh, nt, sh->r * i / nr, z);
            } else {
                st = defo_mesh_add_node(s, sh->c.x, sh->c.y, sh->c.z + z, NULL);
            }
            for (int j = 0; j < nt && !st; j++) {
                const int j1 = (j + 1) % nt;
                const defo_index q0 = outer + j, q1 = outer + j1;
                if (i > 0) { /* the annulus between this ring (p) and the outer one (q) */
                    const defo_index p0 = first + j, p1 = first + j1;
                    st = cap ? tri(s, p0, q0, q1) : tri(s, p0, q1, q0);
                    if (!st) st = cap ? tri(s, p0, q1, p1) : tri(s, p0, p1, q1);
                } else {
                    st = cap ? tri(s, first, q0, q1) : tri(s, first, q1, q0);
                }
            }
            outer = first;
        }
    }
    if (st) {
        defo_mesh_destroy(s);
        return st;
    }
    *out = s;
    return DEFO_OK;
}

/* A shell (tri3) mesh's triangles as a surface */
static defo_status surface_of_shell(defo_mesh *shell, defo_mesh **out) {
    defo_mesh *s = NULL;
    defo_status st = defo_mesh_create(0, &s);
    for (defo_index i = 0; i < shell->num_nodes && !st; i++)
        st = defo_mesh_add_node(s, shell->x[3 * i], shell->x[3 * i + 1], shell->x[3 * i + 2], NULL);
    for (defo_index e = 0; e < shell->num_elems && !st; e++)
        st = defo_mesh_add_tri(s, shell->elems + 3 * (size_t)e, 3, 0);
    defo_mesh_destroy(shell);
    if (st) {
        defo_mesh_destroy(s);
        return st;
    }
    *out = s;
    return DEFO_OK;
}

/* The shape's surface with edges of about e */
static defo_status tessellate(const shape *sh, double e, defo_mesh **out) {
    defo_mesh *shell = NULL;
    defo_status st = DEFO_OK;
    switch (sh->kind) {
    case SHAPE_SPHERE: {
        defo_sphere_shell_def d = defo_default_sphere_shell_def();
        defo_v3_store(d.center, sh->c);
        d.radius = sh->r;
        d.cell_size = fmax(e, 1.0515 * sh->r / 2000);
        st = defo_generate_sphere_shell(&d, &shell);
        break;
    }
    case SHAPE_TORUS: {
        defo_torus_shell_def d = defo_default_torus_shell_def();
        defo_v3_store(d.center, sh->c);
        d.major_radius = sh->R;
        d.minor_radius = sh->r;
        d.cells[0] = (int)fmin(1e5, fmax(12, ceil(2 * PI * (sh->R + sh->r) / e)));
        d.cells[1] = (int)fmin(1e5, fmax(6, ceil(2 * PI * sh->r / e)));
        st = defo_generate_torus_shell(&d, &shell);
        break;
    }
    case SHAPE_CYLINDER:
        return cylinder_surface(sh, e, out);
    }
    if (st) return st;
    return surface_of_shell(shell, out);
}

/* ------------------------------------------------------ the boundary */
/* Boundary corner nodes onto the analytic surface (see the top). */
static defo_status snap_corners(defo_mesh *m, const shape *sh, double min_deg) {
    defo_boundary bd;
    defo_status s = defo_mesh_boundary(m, 0, &bd);
    if (s) return s;
    defo_node_elems ne;
    s = defo_mesh_node_elems(m, &ne);
    unsigned char *is_bd = defo_calloc((size_t)m->num_nodes + 1, 1);
    if (s || !is_bd) {
        defo_boundary_free(&bd);
        if (!s) defo_node_elems_free(&ne);
        defo_free(is_bd);
        return s ? s : defo_error_oom("generator", (size_t)m->num_nodes);
    }
    for (size_t i = 0; i < 3 * (size_t)bd.num_faces; i++) is_bd[bd.faces[i]] = 1;
    defo_boundary_free(&bd);
    const double cos_min = cos(min_deg * PI / 180);
    for (defo_index i = 0; i < m->num_nodes; i++) {
        if (!is_bd[i]) continue;
        const int64_t b = ne.offset[i], cnt = ne.offset[i + 1] - b;
        double *xi = m->x + 3 * (size_t)i, old_cos[64];
        if (cnt > 64) continue;
        for (int64_t k = 0; k < cnt; k++) {
            double det;
            old_cos[k] = mesher_tet_max_cos(m->x, m->elems + 4 * (size_t)ne.elem[b + k], &det);
        }
        const double old[3] = {xi[0], xi[1], xi[2]};
        double q[3];
        shape_closest(sh, old, q);
        const double fr[2] = {1.0, 0.5};
        for (int f = 0; f < 2; f++) {
            for (int r = 0; r < 3; r++) xi[r] = f == 0 ? q[r] : old[r] + fr[f] * (q[r] - old[r]);
            int ok = 1;
            for (int64_t k = 0; k < cnt && ok; k++) {
                double det;
                const double c =
                    mesher_tet_max_cos(m->x, m->elems + 4 * (size_t)ne.elem[b + k], &det);
                ok = det > 0 && (c <= cos_min || c <= old_cos[k]);
            }
            if (ok) break;
            memcpy(xi, old, sizeof old);
        }
    }
    defo_free(is_bd);
    defo_node_elems_free(&ne);
    return DEFO_OK;
}

static defo_status generate_shape(const shape *sh, double h, int order, const char *fn,
                                  defo_mesh **out) {
    *out = NULL;
    if (order != 1 && order != 2)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: order %d (must be 1 or 2)", fn, order);
    if (!(h > 0) || !isfinite(h))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: cell_size %g (must be > 0)", fn, h);
    defo_mesh *surface = NULL, *m = NULL;
    defo_status s = tessellate(sh, h / 3, &surface);
    if (s) return defo_error_prefix("%s", fn);
    defo_mesher_def md = defo_default_mesher_def();
    md.cell_size = h;
    md.order = 1;
    s = defo_mesh_surface(surface, &md, &m, NULL);
    defo_mesh_destroy(surface);
    if (s == DEFO_WARNING) { /* the tessellation is closed and manifold by construction */
        s = defo_error(DEFO_ERR_INTERNAL, "%s: the shape's surface: %s", fn, defo_last_error());
    } else if (s == DEFO_ERR_INVALID_ARGUMENT) { /* nothing inside at this resolution */
        defo_mesh_destroy(m);
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: cell_size %g is too large for the shape (%s)", fn, h,
                          defo_last_error());
    } else if (s) {
        defo_mesh_destroy(m);
        return defo_error_prefix("%s", fn);
    }
    if (!s) s = snap_corners(m, sh, md.target_dihedral);
    if (!s && order == 2) s = mesher_make_tet10(&m, shape_closest, sh, md.tet10_min_jacobian, NULL);
    if (s) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return DEFO_OK;
}

static int finite3(const double c[3]) {
    return isfinite(c[0]) && isfinite(c[1]) && isfinite(c[2]);
}

defo_sphere_def defo_default_sphere_def(void) {
    defo_sphere_def d;
    memset(&d, 0, sizeof d);
    d.radius = 1;
    d.cell_size = 0; /* radius / 4 */
    d.order = 1;
    return d;
}

defo_status defo_generate_sphere(const defo_sphere_def *def, defo_mesh **out) {
    static const char fn[] = "defo_generate_sphere";
    if (!def || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    if (!(def->radius > 0 && isfinite(def->radius)) || !finite3(def->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: radius %g (must be > 0)", fn,
                          def->radius);
    shape sh = {SHAPE_SPHERE, defo_v3_load(def->center), def->radius, 0, 0};
    double h = def->cell_size > 0 ? def->cell_size : 0.25 * def->radius;
    return generate_shape(&sh, h, def->order, fn, out);
}

defo_cylinder_def defo_default_cylinder_def(void) {
    defo_cylinder_def d;
    memset(&d, 0, sizeof d);
    d.radius = 0.5;
    d.height = 2;
    d.cell_size = 0; /* radius / 4 */
    d.order = 1;
    return d;
}

defo_status defo_generate_cylinder(const defo_cylinder_def *def, defo_mesh **out) {
    static const char fn[] = "defo_generate_cylinder";
    if (!def || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    if (!(def->radius > 0 && isfinite(def->radius)) ||
        !(def->height > 0 && isfinite(def->height)) || !finite3(def->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: radius %g, height %g (both must be > 0)",
                          fn, def->radius, def->height);
    shape sh = {SHAPE_CYLINDER, defo_v3_load(def->center), def->radius, 0, 0.5 * def->height};
    double h = def->cell_size > 0 ? def->cell_size : 0.25 * def->radius;
    return generate_shape(&sh, h, def->order, fn, out);
}

defo_torus_def defo_default_torus_def(void) {
    defo_torus_def d;
    memset(&d, 0, sizeof d);
    d.major_radius = 1;
    d.minor_radius = 0.4;
    d.cell_size = 0; /* minor_radius / 3 */
    d.order = 1;
    return d;
}

defo_status defo_generate_torus(const defo_torus_def *def, defo_mesh **out) {
    static const char fn[] = "defo_generate_torus";
    if (!def || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "%s: NULL argument", fn);
    *out = NULL;
    if (!(def->minor_radius > 0 && def->major_radius > def->minor_radius &&
          isfinite(def->major_radius)) ||
        !finite3(def->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: major radius %g, minor radius %g (need major > minor > 0)", fn,
                          def->major_radius, def->minor_radius);
    shape sh = {SHAPE_TORUS, defo_v3_load(def->center), def->minor_radius, def->major_radius, 0};
    double h = def->cell_size > 0 ? def->cell_size : def->minor_radius / 3;
    return generate_shape(&sh, h, def->order, fn, out);
}
