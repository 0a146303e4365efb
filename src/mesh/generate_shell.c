/*
 * mesh/generate_shell.c — generated shell meshes (defo/mesh.h): a rectangle
 * of right triangles, a sphere's surface and a torus's surface (or a sweep of
 * it: ITF04 Fig. 8's half torus), consistently oriented, deterministic.
 *
 * The rectangle's cells are cut along the same diagonal: the congruent
 * triangles on which the hinge bending of the force layer reproduces the
 * Kirchhoff plate's energy for every curvature (force/kernel_shell.c).  The
 * sphere is an icosahedron whose faces are cut into k² triangles and pushed
 * onto the sphere (a geodesic sphere: no poles, nearly equal triangles).
 */
#include "defo/mesh.h"
#include "base/base.h"

#include <math.h>
#include <string.h>

#define PI 3.14159265358979323846

static int finite3(const double *v) {
    return isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2]);
}

defo_rectangle_def defo_default_rectangle_def(void) {
    defo_rectangle_def d;
    memset(&d, 0, sizeof d);
    d.size[0] = d.size[1] = 1;
    d.cells[0] = d.cells[1] = 10;
    return d;
}

defo_status defo_generate_rectangle(const defo_rectangle_def *def, defo_mesh **out) {
    if (!def || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_generate_rectangle: NULL argument");
    *out = NULL;
    if (!(def->size[0] > 0 && def->size[1] > 0 && isfinite(def->size[0]) &&
          isfinite(def->size[1])) ||
        !finite3(def->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "rectangle: size (%g, %g) must be > 0 and the centre finite",
                          def->size[0], def->size[1]);
    int c[2] = {def->cells[0], def->cells[1]};
    if (def->cell_size > 0)
        for (int k = 0; k < 2; k++) {
            const double n = ceil(def->size[k] / def->cell_size - 1e-9);
            c[k] = n < 1 ? 1 : n > 1e5 ? 100001 : (int)n;
        }
    if (c[0] < 1 || c[1] < 1 || (double)c[0] * (double)c[1] > 5e7)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "rectangle: cells (%d, %d) must be >= 1 and at most 5e7 in all", c[0],
                          c[1]);
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_create_shell(&m);
    const defo_index nx = c[0] + 1, ny = c[1] + 1;
    if (!s) s = defo_mesh_reserve(m, nx * ny, 2 * (defo_index)c[0] * c[1], 0);
    for (defo_index j = 0; !s && j < ny; j++)
        for (defo_index i = 0; !s && i < nx; i++)
            s = defo_mesh_add_node(m, def->center[0] + def->size[0] * ((double)i / c[0] - 0.5),
                                   def->center[1] + def->size[1] * ((double)j / c[1] - 0.5),
                                   def->center[2], NULL);
    for (defo_index j = 0; !s && j < c[1]; j++)
        for (defo_index i = 0; !s && i < c[0]; i++) {
            const defo_index a = j * nx + i, b = a + 1, cc = a + nx + 1, d = a + nx;
            const defo_index t0[3] = {a, b, cc}, t1[3] = {a, cc, d};
            s = defo_mesh_add_elem(m, t0, 0);
            if (!s) s = defo_mesh_add_elem(m, t1, 0);
        }
    if (s) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return DEFO_OK;
}

defo_sphere_shell_def defo_default_sphere_shell_def(void) {
    defo_sphere_shell_def d;
    memset(&d, 0, sizeof d);
    d.radius = 1;
    d.subdivisions = 8;
    return d;
}

defo_status defo_generate_sphere_shell(const defo_sphere_shell_def *def, defo_mesh **out) {
    if (!def || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_generate_sphere_shell: NULL argument");
    *out = NULL;
    if (!(def->radius > 0 && isfinite(def->radius)) || !finite3(def->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "sphere_shell: radius %g must be > 0 and the centre finite", def->radius);
    int k = def->subdivisions;
    if (def->cell_size > 0) {
        /* an icosahedron's edge is 1.05 r; k cuts make it 1.05 r / k */
        const double n = ceil(1.0515 * def->radius / def->cell_size);
        k = n > 2000 ? 2001 : (int)n;
    }
    if (k < 1 || k > 2000)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "sphere_shell: subdivisions %d must be in [1, 2000]", k);
    const double t = (1.0 + sqrt(5.0)) / 2.0;
    const double V[12][3] = {{-1, t, 0}, {1, t, 0}, {-1, -t, 0}, {1, -t, 0},
                             {0, -1, t}, {0, 1, t}, {0, -1, -t}, {0, 1, -t},
                             {t, 0, -1}, {t, 0, 1}, {-t, 0, -1}, {-t, 0, 1}};
    static const int F[20][3] = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                                 {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                                 {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                                 {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
    /* every face's (k+1)(k+2)/2 lattice points, shared ones merged through
     * a key on the icosahedron's vertices and edges */
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_create_shell(&m);
    const defo_index per = (defo_index)(k + 1) * (k + 2) / 2;
    defo_index *id = defo_malloc((size_t)(20 * per) * sizeof *id + 1);
    /* edge points: 30 edges × (k − 1), found by the sorted vertex pair */
    defo_index *edge_base = defo_malloc(12 * 12 * sizeof *edge_base + 1);
    if (!id || !edge_base) s = s ? s : defo_error_oom("sphere shell", (size_t)(20 * per) * 8);
    if (!s) {
        for (int i = 0; i < 144; i++) edge_base[i] = -1;
        /* the 12 vertices first */
        for (int v = 0; v < 12 && !s; v++) {
            const double l = sqrt(V[v][0] * V[v][0] + V[v][1] * V[v][1] + V[v][2] * V[v][2]);
            s = defo_mesh_add_node(m, def->center[0] + def->radius * V[v][0] / l,
                                   def->center[1] + def->radius * V[v][1] / l,
                                   def->center[2] + def->radius * V[v][2] / l, NULL);
        }
    }
    for (int f = 0; f < 20 && !s; f++) {
        const int c0 = F[f][0], c1 = F[f][1], c2 = F[f][2];
        /* lattice point (i, j): c0 + i/k (c1 − c0) + j/k (c2 − c0), i + j ≤ k */
        for (int j = 0; j <= k && !s; j++)
            for (int i = 0; i + j <= k && !s; i++) {
                const int r = j * (k + 1) - j * (j - 1) / 2 + i; /* index within the face */
                defo_index node = -1;
                if (i == 0 && j == 0)
                    node = c0;
                else if (i == k && j == 0)
                    node = c1;
                else if (i == 0 && j == k)
                    node = c2;
                else {
                    /* on an edge of the icosahedron: shared with the neighbour */
                    int a = -1, b = -1, pos = 0;
                    if (j == 0)
                        a = c0, b = c1, pos = i;
                    else if (i == 0)
                        a = c0, b = c2, pos = j;
                    else if (i + j == k)
                        a = c1, b = c2, pos = j;
                    if (a >= 0) {
                        const int lo = a < b ? a : b, hi = a < b ? b : a;
                        const int p = a < b ? pos : k - pos;
                        if (edge_base[lo * 12 + hi] < 0) {
                            edge_base[lo * 12 + hi] = m->num_nodes;
                            for (int q = 1; q < k && !s; q++) {
                                double x[3];
                                for (int c = 0; c < 3; c++)
                                    x[c] = V[lo][c] + (V[hi][c] - V[lo][c]) * q / k;
                                const double l = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
                                s = defo_mesh_add_node(m, def->center[0] + def->radius * x[0] / l,
                                                       def->center[1] + def->radius * x[1] / l,
                                                       def->center[2] + def->radius * x[2] / l,
                                                       NULL);
                            }
                        }
                        node = edge_base[lo * 12 + hi] + p - 1;
                    } else {
                        double x[3];
                        for (int c = 0; c < 3; c++)
                            x[c] = V[c0][c] + (V[c1][c] - V[c0][c]) * i / k +
                                   (V[c2][c] - V[c0][c]) * j / k;
                        const double l = sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
                        node = m->num_nodes;
                        s = defo_mesh_add_node(m, def->center[0] + def->radius * x[0] / l,
                                               def->center[1] + def->radius * x[1] / l,
                                               def->center[2] + def->radius * x[2] / l, NULL);
                    }
                }
                id[(size_t)f * (size_t)per + (size_t)r] = node;
            }
        const defo_index *fid = id + (size_t)f * (size_t)per;
        for (int j = 0; j < k && !s; j++)
            for (int i = 0; i + j < k && !s; i++) {
                const int r00 = j * (k + 1) - j * (j - 1) / 2 + i;
                const int r01 = (j + 1) * (k + 1) - (j + 1) * j / 2 + i;
                const defo_index up[3] = {fid[r00], fid[r00 + 1], fid[r01]};
                s = defo_mesh_add_elem(m, up, 0);
                if (!s && i + j + 1 < k) {
                    const defo_index dn[3] = {fid[r00 + 1], fid[r01 + 1], fid[r01]};
                    s = defo_mesh_add_elem(m, dn, 0);
                }
            }
    }
    defo_free(id);
    defo_free(edge_base);
    /* the icosahedron's faces above are listed counter-clockwise from
     * outside: every triangle's normal points out */
    if (s) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return DEFO_OK;
}

defo_torus_shell_def defo_default_torus_shell_def(void) {
    defo_torus_shell_def d;
    memset(&d, 0, sizeof d);
    d.major_radius = 1;
    d.minor_radius = 0.4;
    d.sweep = 360;
    d.cells[0] = 48;
    d.cells[1] = 16;
    return d;
}

defo_status defo_generate_torus_shell(const defo_torus_shell_def *def, defo_mesh **out) {
    if (!def || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_generate_torus_shell: NULL argument");
    *out = NULL;
    if (!(def->minor_radius > 0 && def->major_radius > def->minor_radius &&
          isfinite(def->major_radius)) ||
        !finite3(def->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "torus_shell: radii (%g, %g) need 0 < minor_radius < major_radius",
                          def->major_radius, def->minor_radius);
    if (!(def->sweep > 0 && def->sweep <= 360))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "torus_shell: sweep %g is not in (0, 360]",
                          def->sweep);
    const int nu = def->cells[0], nv = def->cells[1];
    if (nu < 1 || nv < 3 || (double)nu * nv > 5e7)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "torus_shell: cells (%d, %d) must be >= 1 around the axis and >= 3 "
                          "around the tube",
                          nu, nv);
    const int closed = def->sweep == 360;
    const int ru = closed ? nu : nu + 1; /* rings of nodes around the axis */
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_create_shell(&m);
    if (!s) s = defo_mesh_reserve(m, (defo_index)ru * nv, 2 * (defo_index)nu * nv, 0);
    const double R = def->major_radius, r = def->minor_radius, sw = def->sweep * PI / 180.0;
    for (int a = 0; a < ru && !s; a++) {
        const double u = sw * a / nu, cu = cos(u), su = sin(u);
        for (int b = 0; b < nv && !s; b++) {
            const double v = 2 * PI * b / nv, rr = R + r * cos(v);
            s = defo_mesh_add_node(m, def->center[0] + rr * cu, def->center[1] + rr * su,
                                   def->center[2] + r * sin(v), NULL);
        }
    }
    for (int a = 0; a < nu && !s; a++)
        for (int b = 0; b < nv && !s; b++) {
            const defo_index p = (defo_index)a * nv + b, q = (defo_index)a * nv + (b + 1) % nv;
            const defo_index pn = (defo_index)((a + 1) % ru) * nv + b,
                             qn = (defo_index)((a + 1) % ru) * nv + (b + 1) % nv;
            /* outward normals: ∂u × ∂v points out of the tube */
            const defo_index t0[3] = {p, pn, qn}, t1[3] = {p, qn, q};
            s = defo_mesh_add_elem(m, t0, 0);
            if (!s) s = defo_mesh_add_elem(m, t1, 0);
        }
    if (s) {
        defo_mesh_destroy(m);
        return s;
    }
    *out = m;
    return DEFO_OK;
}
