/*
 * collision/shapes.c — exact signed distances of the collider primitives.
 *
 * ITF04 §9 represents rigid bodies as implicit surfaces: a node is inside when
 * φ < 0 and is projected to the surface along n = ∇φ by x - φ n.  That
 * projection lands exactly on the surface only if φ is the TRUE signed
 * distance, so every primitive here is exact (not a bound):
 *   plane     φ = (p - c)·n
 *   sphere    φ = |p - c| - r
 *   box       q = |p - c| - h (componentwise); φ = |max(q, 0)| + min(max_i q_i, 0)
 *   cylinder  (ρ, h) = (radial distance, |axial coordinate|); d = (ρ - r, h - L);
 *             φ = |max(d, 0)| + min(max(d_0, d_1), 0)
 *   capsule   φ = distance to the segment c ± L a, minus r
 * Each is evaluated in the shape's local frame (p_local = Rᵀ p_collider, R
 * the shape rotation) and the normal is rotated back.
 *
 * Invariants: n is a unit vector and never NaN.  On medial sets, where ∇φ
 * is undefined (sphere centre, box medial planes, cylinder/capsule axis,
 * cylinder rim bisector), n is one valid deterministic choice: the first
 * coordinate among ties, +axis for a zero axial coordinate, and a fixed unit
 * vector perpendicular to the axis chosen at creation.
 */
#include "collision/collision_internal.h"

#include <math.h>
#include <string.h>

static double dot3(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static int finite3(const double a[3]) {
    return isfinite(a[0]) && isfinite(a[1]) && isfinite(a[2]);
}

/* Unit vector of a (into out); false when |a| is zero or not finite. */
static int unit3(const double a[3], double out[3]) {
    /* Scale first so tiny or huge inputs neither underflow nor overflow. */
    double m = DEFO_MAX(fabs(a[0]), DEFO_MAX(fabs(a[1]), fabs(a[2])));
    if (!(m > 0) || !isfinite(m)) return 0;
    double b[3] = {a[0] / m, a[1] / m, a[2] / m};
    double len = sqrt(dot3(b, b));
    out[0] = b[0] / len;
    out[1] = b[1] / len;
    out[2] = b[2] / len;
    return 1;
}

static const char *shape_name(defo_shape_type t) {
    switch (t) {
    case DEFO_SHAPE_PLANE:
        return "plane";
    case DEFO_SHAPE_SPHERE:
        return "sphere";
    case DEFO_SHAPE_BOX:
        return "box";
    case DEFO_SHAPE_CYLINDER:
        return "cylinder";
    case DEFO_SHAPE_CAPSULE:
        return "capsule";
    case DEFO_SHAPE_MESH:
        return "mesh";
    }
    return "?";
}

defo_shape_def defo_default_shape_def(void) {
    defo_shape_def d;
    memset(&d, 0, sizeof d);
    d.type = DEFO_SHAPE_SPHERE;
    d.normal[2] = 1;
    d.axis[2] = 1;
    d.radius = 1;
    d.half_extent[0] = d.half_extent[1] = d.half_extent[2] = 1;
    d.half_length = 1;
    d.rotation[0] = d.rotation[4] = d.rotation[8] = 1;
    return d;
}

defo_status defo_shape_init(const defo_shape_def *d, int k, defo_shape *s) {
    memset(s, 0, sizeof *s);
    if ((int)d->type < DEFO_SHAPE_PLANE || (int)d->type > DEFO_SHAPE_MESH)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "collider shape %d: unknown type %d", k,
                          (int)d->type);
    const char *name = shape_name(d->type);
    s->type = d->type;
    if (!finite3(d->center))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "collider shape %d (%s): center not finite", k,
                          name);
    memcpy(s->center, d->center, sizeof s->center);

    /* Rotation: orthonormal with det +1 up to a tolerance relative to 1 (its
     * entries are dimensionless). */
    const double *R = d->rotation;
    for (int i = 0; i < 9; i++)
        if (!isfinite(R[i]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "collider shape %d (%s): rotation not finite", k, name);
    double worst = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double rr =
                R[3 * i] * R[3 * j] + R[3 * i + 1] * R[3 * j + 1] + R[3 * i + 2] * R[3 * j + 2];
            worst = DEFO_MAX(worst, fabs(rr - (i == j ? 1.0 : 0.0)));
        }
    double det = R[0] * (R[4] * R[8] - R[5] * R[7]) - R[1] * (R[3] * R[8] - R[5] * R[6]) +
                 R[2] * (R[3] * R[7] - R[4] * R[6]);
    if (worst > 1e-9 || det < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "collider shape %d (%s): rotation is not a proper rotation "
                          "(|R Rt - I| = %.3g, det = %.6g)",
                          k, name, worst, det);
    memcpy(s->rot, R, sizeof s->rot);

    switch (d->type) {
    case DEFO_SHAPE_PLANE:
        if (!unit3(d->normal, s->dir))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "collider shape %d (plane): normal is zero or not finite", k);
        break;
    case DEFO_SHAPE_SPHERE:
        if (!(d->radius > 0) || !isfinite(d->radius))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "collider shape %d (sphere): radius %g must be > 0", k, d->radius);
        s->radius = d->radius;
        s->dir[2] = 1; /* the normal chosen at the centre */
        break;
    case DEFO_SHAPE_BOX:
        for (int i = 0; i < 3; i++) {
            if (!(d->half_extent[i] > 0) || !isfinite(d->half_extent[i]))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "collider shape %d (box): half_extent[%d] = %g must be > 0", k, i,
                                  d->half_extent[i]);
            s->half[i] = d->half_extent[i];
        }
        break;
    case DEFO_SHAPE_CYLINDER:
    case DEFO_SHAPE_CAPSULE:
        if (!unit3(d->axis, s->dir))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "collider shape %d (%s): axis is zero or not finite", k, name);
        if (!(d->radius > 0) || !isfinite(d->radius))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "collider shape %d (%s): radius %g must be > 0", k, name, d->radius);
        if (!isfinite(d->half_length) || d->half_length < 0 ||
            (d->type == DEFO_SHAPE_CYLINDER && !(d->half_length > 0)))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "collider shape %d (%s): half_length %g must be %s", k, name,
                              d->half_length, d->type == DEFO_SHAPE_CYLINDER ? "> 0" : ">= 0");
        s->radius = d->radius;
        s->half_length = d->half_length;
        {
            /* Perpendicular: axis × (the coordinate axis least aligned with it). */
            int m = 0;
            for (int i = 1; i < 3; i++)
                if (fabs(s->dir[i]) < fabs(s->dir[m])) m = i;
            double e[3] = {0, 0, 0}, c[3];
            e[m] = 1;
            c[0] = s->dir[1] * e[2] - s->dir[2] * e[1];
            c[1] = s->dir[2] * e[0] - s->dir[0] * e[2];
            c[2] = s->dir[0] * e[1] - s->dir[1] * e[0];
            if (!unit3(c, s->perp)) return defo_error(DEFO_ERR_INTERNAL, "axis perpendicular");
        }
        break;
    case DEFO_SHAPE_MESH: {
        if (!d->mesh || d->mesh->num_tris == 0)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "collider shape %d (mesh): %s", k,
                              d->mesh ? "the mesh has no triangles" : "no mesh given");
        defo_sdf_def sd = defo_default_sdf_def();
        defo_status st = defo_surface_sdf_create(d->mesh, &sd, &s->sdf);
        if (st) return defo_error_prefix("collider shape %d (mesh)", k);
        const defo_surface_info *info = defo_surface_sdf_info(s->sdf);
        double diag = 0;
        for (int i = 0; i < 3; i++) {
            s->box[i] = info->bbox_lo[i];
            s->box[3 + i] = info->bbox_hi[i];
            diag += (info->bbox_hi[i] - info->bbox_lo[i]) * (info->bbox_hi[i] - info->bbox_lo[i]);
        }
        s->size = 0.5 * sqrt(diag);
        s->dir[2] = 1; /* a normal for a point on a degenerate spot */
        break;
    }
    }
    return DEFO_OK;
}

void defo_shape_release(defo_shape *s) {
    defo_surface_sdf_destroy(s->sdf);
    s->sdf = NULL;
}

/* A closed surface's signed distance at the local point d (relative to the
 * shape's centre): far from its box, the distance to the box (a lower bound,
 * positive: what matters is only that far points are outside); near it, the
 * exact distance signed by the winding number, the normal from the closest
 * point (the triangle's own normal on the surface). */
static double mesh_phi(const defo_shape *s, const double d[3], double nl[3]) {
    const double margin = 0.1 * s->size;
    double o[3], out = 0;
    for (int i = 0; i < 3; i++) {
        const double lo = s->box[i] - margin, hi = s->box[3 + i] + margin;
        o[i] = d[i] < lo ? d[i] - lo : d[i] > hi ? d[i] - hi : 0.0;
        out += o[i] * o[i];
    }
    if (out > 0) {
        if (!unit3(o, nl)) memcpy(nl, s->dir, 3 * sizeof(double));
        return sqrt(out) + margin;
    }
    defo_sdf_sample q;
    defo_surface_sdf_query(s->sdf, d, &q);
    double e[3] = {d[0] - q.closest[0], d[1] - q.closest[1], d[2] - q.closest[2]};
    const double len = sqrt(dot3(e, e));
    if (len > 1e-12 * s->size) {
        for (int i = 0; i < 3; i++) nl[i] = (q.distance < 0 ? -e[i] : e[i]) / len;
    } else if (!unit3(q.normal, nl)) {
        memcpy(nl, s->dir, 3 * sizeof(double));
    }
    return q.distance;
}

double defo_shape_size(const defo_shape *s) {
    switch (s->type) {
    case DEFO_SHAPE_PLANE:
        return 0;
    case DEFO_SHAPE_SPHERE:
        return s->radius;
    case DEFO_SHAPE_BOX:
        return DEFO_MAX(s->half[0], DEFO_MAX(s->half[1], s->half[2]));
    case DEFO_SHAPE_CYLINDER:
    case DEFO_SHAPE_CAPSULE:
        return DEFO_MAX(s->radius, s->radius + s->half_length);
    case DEFO_SHAPE_MESH:
        return s->size;
    }
    return 0;
}

/* Radial unit vector of d (component perpendicular to the axis a is dr, of
 * length rho), falling back to the fixed perpendicular on the axis. */
static void radial_dir(const defo_shape *s, const double dr[3], double out[3]) {
    if (!unit3(dr, out)) memcpy(out, s->perp, 3 * sizeof(double));
}

double defo_shape_phi(const defo_shape *s, const double p[3], double n[3]) {
    const double *R = s->rot;
    /* Local coordinates relative to the centre: d = Rᵀ p - c. */
    double d[3];
    for (int i = 0; i < 3; i++)
        d[i] = R[i] * p[0] + R[3 + i] * p[1] + R[6 + i] * p[2] - s->center[i];
    double phi, nl[3] = {0, 0, 1};

    switch (s->type) {
    case DEFO_SHAPE_PLANE:
        phi = dot3(d, s->dir);
        memcpy(nl, s->dir, sizeof nl);
        break;
    case DEFO_SHAPE_SPHERE: {
        double len = sqrt(dot3(d, d));
        phi = len - s->radius;
        if (!unit3(d, nl)) memcpy(nl, s->dir, sizeof nl);
        break;
    }
    case DEFO_SHAPE_BOX: {
        double q[3], o[3];
        int imax = 0;
        for (int i = 0; i < 3; i++) {
            q[i] = fabs(d[i]) - s->half[i];
            o[i] = q[i] > 0 ? (d[i] < 0 ? -q[i] : q[i]) : 0.0;
            if (q[i] > q[imax]) imax = i;
        }
        if (q[imax] > 0) {
            /* Outside: distance to the nearest point of the box, the clamped point. */
            phi = sqrt(dot3(o, o));
            if (!unit3(o, nl)) { /* unreachable: q[imax] > 0 makes o nonzero */
                nl[0] = nl[1] = nl[2] = 0;
                nl[imax] = d[imax] < 0 ? -1 : 1;
            }
        } else {
            /* Inside: the nearest face is the one with the largest q (first on ties). */
            phi = q[imax];
            nl[0] = nl[1] = nl[2] = 0;
            nl[imax] = d[imax] < 0 ? -1 : 1;
        }
        break;
    }
    case DEFO_SHAPE_CYLINDER: {
        const double *a = s->dir;
        double h = dot3(d, a);
        double dr[3] = {d[0] - h * a[0], d[1] - h * a[1], d[2] - h * a[2]};
        double rho = sqrt(dot3(dr, dr));
        double er = rho - s->radius, eh = fabs(h) - s->half_length;
        double ur[3], sa = h < 0 ? -1.0 : 1.0;
        radial_dir(s, dr, ur);
        if (er > 0 && eh > 0) { /* outside, nearest point on the rim circle */
            double len = hypot(er, eh);
            phi = len;
            for (int i = 0; i < 3; i++) nl[i] = (er * ur[i] + eh * sa * a[i]) / len;
        } else if (er > 0 || (er <= 0 && eh <= 0 && er >= eh)) {
            phi = er > 0 ? er : DEFO_MAX(er, eh); /* side wall */
            memcpy(nl, ur, sizeof nl);
        } else {
            phi = eh > 0 ? eh : DEFO_MAX(er, eh); /* cap */
            for (int i = 0; i < 3; i++) nl[i] = sa * a[i];
        }
        break;
    }
    case DEFO_SHAPE_CAPSULE: {
        const double *a = s->dir;
        double h = dot3(d, a);
        double hc = h < -s->half_length ? -s->half_length : h > s->half_length ? s->half_length : h;
        double e[3] = {d[0] - hc * a[0], d[1] - hc * a[1], d[2] - hc * a[2]};
        phi = sqrt(dot3(e, e)) - s->radius;
        if (!unit3(e, nl)) memcpy(nl, s->perp, sizeof nl);
        break;
    }
    case DEFO_SHAPE_MESH:
        phi = mesh_phi(s, d, nl);
        break;
    default:
        phi = INFINITY;
        break;
    }
    if (n) {
        /* Back to the collider frame: n = R nl. */
        n[0] = R[0] * nl[0] + R[1] * nl[1] + R[2] * nl[2];
        n[1] = R[3] * nl[0] + R[4] * nl[1] + R[5] * nl[2];
        n[2] = R[6] * nl[0] + R[7] * nl[1] + R[8] * nl[2];
    }
    return phi;
}
