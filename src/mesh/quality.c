/*
 * mesh/quality.c — element shape measures for `defo info` and the generators.
 *
 * Dihedral angle at edge (i,j): the angle inside the tet between the two
 * faces meeting there, π − ∠(n_k, n_l) with n_k, n_l the unit normals of the
 * faces opposite the other two corners k, l (outward for a positive tet; an
 * inverted tet has both normals flipped, which leaves the angle unchanged, so
 * the measure is that of the unsigned shape).  Regular tet: acos(1/3).
 *
 * Aspect ratio: L_max / (2·sqrt(6)·r), r = 3|V| / (sum of face areas) the
 * inradius; the regular tet with edge a has r = a/(2·sqrt(6)), so it scores 1.
 * Scale-invariant, so no tolerance depends on the mesh size.
 */
#include "defo/mesh.h"
#include "defo/math.h"
#include "base/base.h"
#include "mesh/mesh_internal.h"

#include <math.h>
#include <string.h>

#define RAD2DEG (180.0 / 3.14159265358979323846)

/* Corner measures of one tet. */
void defo_tet_quality(const double *x, const defo_index *v, double *dmin, double *dmax,
                      double *aspect) {
    defo_vec3 p[4];
    for (int i = 0; i < 4; i++) p[i] = defo_v3_load(x + 3 * (size_t)v[i]);
    defo_vec3 n[4];
    double area_sum = 0;
    for (int f = 0; f < 4; f++) {
        defo_vec3 a = p[defo_tet_faces[f][0]], b = p[defo_tet_faces[f][1]],
                  c = p[defo_tet_faces[f][2]];
        defo_vec3 cr = defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a));
        area_sum += 0.5 * defo_v3_norm(cr);
        n[f] = defo_v3_normalize(cr);
    }
    double lo = 180, hi = 0, l2 = 0;
    for (int e = 0; e < 6; e++) {
        int i = defo_tet_edges[e][0], j = defo_tet_edges[e][1];
        /* the two corners not on edge (i,j) index the faces meeting at it */
        int k = -1, l = -1;
        for (int c = 0; c < 4; c++)
            if (c != i && c != j) {
                if (k < 0)
                    k = c;
                else
                    l = c;
            }
        double cosang = -defo_v3_dot(n[k], n[l]);
        cosang = fmax(-1.0, fmin(1.0, cosang));
        double ang = acos(cosang) * RAD2DEG;
        lo = fmin(lo, ang);
        hi = fmax(hi, ang);
        l2 = fmax(l2, defo_v3_norm2(defo_v3_sub(p[j], p[i])));
    }
    double six_v = defo_v3_dot(defo_v3_sub(p[1], p[0]),
                               defo_v3_cross(defo_v3_sub(p[2], p[0]), defo_v3_sub(p[3], p[0])));
    double r = area_sum > 0 ? 0.5 * fabs(six_v) / area_sum : 0; /* 3|V|/A, |V| = |6V|/6 */
    double L = sqrt(l2);
    double ar = r > 1e-12 * L ? L / (2.0 * sqrt(6.0) * r) : INFINITY;
    if (!(L > 0)) {
        lo = 0;
        hi = 180;
    }
    *dmin = lo;
    *dmax = hi;
    *aspect = ar;
}

void defo_tri_quality(const double *x, const defo_index *v, double *min_angle, double *max_angle,
                      double *aspect) {
    defo_vec3 p[3];
    for (int i = 0; i < 3; i++) p[i] = defo_v3_load(x + 3 * (size_t)v[i]);
    double len[3], lo = 180, hi = 0, l = 0, per = 0;
    for (int i = 0; i < 3; i++) {
        len[i] = defo_v3_norm(defo_v3_sub(p[(i + 2) % 3], p[(i + 1) % 3])); /* opposite corner i */
        l = fmax(l, len[i]);
        per += len[i];
    }
    for (int i = 0; i < 3; i++) {
        const defo_vec3 a = defo_v3_sub(p[(i + 1) % 3], p[i]),
                        b = defo_v3_sub(p[(i + 2) % 3], p[i]);
        const double ang = atan2(defo_v3_norm(defo_v3_cross(a, b)), defo_v3_dot(a, b)) * 180.0 /
                           3.14159265358979323846;
        lo = fmin(lo, ang);
        hi = fmax(hi, ang);
    }
    const double area =
        0.5 * defo_v3_norm(defo_v3_cross(defo_v3_sub(p[1], p[0]), defo_v3_sub(p[2], p[0])));
    const double r = per > 0 ? 2.0 * area / per : 0.0; /* inradius = area / semi-perimeter */
    *min_angle = l > 0 ? lo : 0;
    *max_angle = l > 0 ? hi : 180;
    *aspect = r > 1e-12 * l ? l / (2.0 * sqrt(3.0) * r) : INFINITY;
}

/* The shape measures of element e (tet or, in a shell, triangle). */
static void elem_quality(const defo_mesh *mesh, const double *x, size_t e, double *lo, double *hi,
                         double *ar) {
    const defo_index *v = mesh->elems + e * (size_t)mesh->nodes_per_elem;
    if (mesh->nodes_per_elem == 3)
        defo_tri_quality(x, v, lo, hi, ar);
    else
        defo_tet_quality(x, v, lo, hi, ar);
}

defo_status defo_mesh_quality(const defo_mesh *mesh, const double *x, double *min_dihedral,
                              double *max_dihedral, double *aspect) {
    if (!mesh) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_quality: mesh is NULL");
    int npe = mesh->nodes_per_elem;
    if (mesh->num_elems > 0 && npe != 4 && npe != 10 && npe != 3)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_quality: mesh has no elements");
    for (size_t i = 0; i < (size_t)mesh->num_elems * (size_t)npe; i++)
        if (mesh->elems[i] < 0 || mesh->elems[i] >= mesh->num_nodes)
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "element %ld refers to node %ld, but there are %ld nodes",
                              (long)(i / (size_t)npe), (long)mesh->elems[i], (long)mesh->num_nodes);
    if (!x) x = mesh->x;
    for (size_t e = 0; e < (size_t)mesh->num_elems; e++) {
        double lo, hi, ar;
        elem_quality(mesh, x, e, &lo, &hi, &ar);
        if (min_dihedral) min_dihedral[e] = lo;
        if (max_dihedral) max_dihedral[e] = hi;
        if (aspect) aspect[e] = ar;
    }
    return DEFO_OK;
}

defo_status defo_mesh_quality_summary(const defo_mesh *mesh, const double *x,
                                      defo_quality_summary *out) {
    if (!out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_mesh_quality_summary: out is NULL");
    memset(out, 0, sizeof *out);
    out->worst_elem = -1;
    defo_status s = defo_mesh_quality(mesh, x, NULL, NULL, NULL); /* validates */
    if (s) return s;
    if (!x) x = mesh->x;
    out->num_elems = mesh->num_elems;
    out->min_dihedral = mesh->num_elems ? 180 : 0;
    out->max_dihedral = 0;
    double asum = 0;
    defo_index acount = 0;
    for (size_t e = 0; e < (size_t)mesh->num_elems; e++) {
        double lo, hi, ar;
        elem_quality(mesh, x, e, &lo, &hi, &ar);
        if (lo < out->min_dihedral || out->worst_elem < 0) {
            if (lo < out->min_dihedral) out->worst_elem = (defo_index)e;
            if (out->worst_elem < 0) out->worst_elem = (defo_index)e;
            out->min_dihedral = fmin(out->min_dihedral, lo);
        }
        out->max_dihedral = fmax(out->max_dihedral, hi);
        out->worst_aspect = fmax(out->worst_aspect, ar);
        if (isfinite(ar)) {
            asum += ar;
            acount++;
        }
        int bin = (int)(lo / 10.0);
        if (bin < 0) bin = 0;
        if (bin >= DEFO_QUALITY_BINS) bin = DEFO_QUALITY_BINS - 1;
        out->min_dihedral_hist[bin]++;
    }
    out->mean_aspect = acount ? asum / acount : 0;
    return defo_mesh_count_inverted(mesh, x, &out->inverted, NULL);
}
