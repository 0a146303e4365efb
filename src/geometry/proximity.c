/*
 * geometry/proximity.c — closest points between the primitives of triangle
 * surfaces (defo/geometry.h): a point and a triangle, two segments.  The
 * contact layer's distances and their gradients come from here: by the
 * envelope theorem the gradient of d = min |p − Σ wᵢxᵢ| with respect to
 * each corner is −wᵢ (p − q)/d at the minimiser, whatever feature (face,
 * edge, corner) holds it, so the weights returned here are all a caller
 * needs.
 *
 * Point–triangle: Ericson, Real-Time Collision Detection §5.1.5 (Voronoi
 * regions of the corners, edges and face), with the feature reported and a
 * zero-area triangle answered by its nearest edge.  Segment–segment:
 * Ericson §5.1.9, with parallel segments answered at the middle of their
 * overlap (a unique, continuous choice) and degenerate segments as points.
 * Tolerances are relative to the segments' own lengths, never absolute.
 */
#include "defo/geometry.h"

#include <math.h>

static double dot3(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

static double clamp01(double v) {
    return v < 0 ? 0 : (v > 1 ? 1 : v);
}

static double dist2_at(const double p[3], const double a[3], const double b[3], const double c[3],
                       const double w[3]) {
    double s = 0;
    for (int k = 0; k < 3; k++) {
        const double d = p[k] - (w[0] * a[k] + w[1] * b[k] + w[2] * c[k]);
        s += d * d;
    }
    return s;
}

/* The closest point of segment (a, b) as weights (1 − t, t). */
static double seg_param(const double p[3], const double a[3], const double b[3]) {
    double ab[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    double ap[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
    const double l2 = dot3(ab, ab);
    return l2 > 0 ? clamp01(dot3(ap, ab) / l2) : 0.0;
}

double defo_point_triangle_closest(const double p[3], const double a[3], const double b[3],
                                   const double c[3], double w[3], int *feature) {
    double ab[3], ac[3], ap[3], bp[3], cp[3];
    for (int k = 0; k < 3; k++) {
        ab[k] = b[k] - a[k];
        ac[k] = c[k] - a[k];
        ap[k] = p[k] - a[k];
        bp[k] = p[k] - b[k];
        cp[k] = p[k] - c[k];
    }
    int f = 0;
    const double d1 = dot3(ab, ap), d2 = dot3(ac, ap);
    const double d3 = dot3(ab, bp), d4 = dot3(ac, bp);
    const double d5 = dot3(ab, cp), d6 = dot3(ac, cp);
    const double vc = d1 * d4 - d3 * d2, vb = d5 * d2 - d1 * d6, va = d3 * d6 - d5 * d4;
    if (d1 <= 0 && d2 <= 0) {
        w[0] = 1, w[1] = 0, w[2] = 0, f = 4;
    } else if (d3 >= 0 && d4 <= d3) {
        w[0] = 0, w[1] = 1, w[2] = 0, f = 5;
    } else if (vc <= 0 && d1 >= 0 && d3 <= 0 && d1 - d3 > 0) {
        const double t = d1 / (d1 - d3);
        w[0] = 1 - t, w[1] = t, w[2] = 0, f = 1;
    } else if (d6 >= 0 && d5 <= d6) {
        w[0] = 0, w[1] = 0, w[2] = 1, f = 6;
    } else if (vb <= 0 && d2 >= 0 && d6 <= 0 && d2 - d6 > 0) {
        const double t = d2 / (d2 - d6);
        w[0] = 1 - t, w[1] = 0, w[2] = t, f = 3;
    } else if (va <= 0 && d4 - d3 >= 0 && d5 - d6 >= 0 && (d4 - d3) + (d5 - d6) > 0) {
        const double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        w[0] = 0, w[1] = 1 - t, w[2] = t, f = 2;
    } else if (va + vb + vc > 0) {
        const double s = va + vb + vc;
        w[1] = vb / s;
        w[2] = vc / s;
        w[0] = 1 - w[1] - w[2];
        f = 0;
    } else {
        /* zero area: the nearest of the three edges */
        double best = INFINITY;
        const double *P[3][2] = {{a, b}, {b, c}, {c, a}};
        for (int e = 0; e < 3; e++) {
            const double t = seg_param(p, P[e][0], P[e][1]);
            double we[3] = {0, 0, 0};
            we[e] = 1 - t;
            we[(e + 1) % 3] = t;
            const double d = dist2_at(p, a, b, c, we);
            if (d < best) {
                best = d;
                w[0] = we[0], w[1] = we[1], w[2] = we[2];
                f = e == 0 ? 1 : e == 1 ? 2 : 3;
            }
        }
    }
    if (feature) *feature = f;
    return dist2_at(p, a, b, c, w);
}

double defo_segment_segment_closest(const double p0[3], const double p1[3], const double q0[3],
                                    const double q1[3], double *s_out, double *t_out) {
    double d1[3], d2[3], r[3];
    for (int k = 0; k < 3; k++) {
        d1[k] = p1[k] - p0[k];
        d2[k] = q1[k] - q0[k];
        r[k] = p0[k] - q0[k];
    }
    const double a = dot3(d1, d1), e = dot3(d2, d2), f = dot3(d2, r);
    double s = 0, t = 0;
    if (!(a > 0) && !(e > 0)) {
        s = t = 0;
    } else if (!(a > 0)) {
        s = 0;
        t = clamp01(f / e);
    } else {
        const double c = dot3(d1, r);
        if (!(e > 0)) {
            t = 0;
            s = clamp01(-c / a);
        } else {
            const double b = dot3(d1, d2), den = a * e - b * b;
            if (den > 1e-14 * a * e) {
                s = clamp01((b * f - c * e) / den);
            } else {
                /* parallel: the middle of the overlap of q's projection on p */
                const double u0 = clamp01(-c / a), u1 = clamp01((b - c) / a);
                s = 0.5 * (u0 + u1);
            }
            t = (b * s + f) / e;
            if (t < 0) {
                t = 0;
                s = clamp01(-c / a);
            } else if (t > 1) {
                t = 1;
                s = clamp01((b - c) / a);
            }
        }
    }
    double d2s = 0;
    for (int k = 0; k < 3; k++) {
        const double d = p0[k] + s * d1[k] - q0[k] - t * d2[k];
        d2s += d * d;
    }
    if (s_out) *s_out = s;
    if (t_out) *t_out = t;
    return d2s;
}
