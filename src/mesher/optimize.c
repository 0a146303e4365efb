/*
 * mesher/optimize.c — quality optimisation of the snapped BCC mesh (step 4
 * of mesher.c): raise the smallest dihedral angle, which bounds the
 * conditioning of the element stiffness, then the smallest altitude, which
 * bounds the stable explicit step, while the boundary stays on the surface
 * and the volume stays the surface's.
 *
 * The quality of a tet is q = min(θ_min, w · a_min): its smallest dihedral
 * angle, and its smallest altitude (3V / face area) scaled so that
 * a_min = target_altitude · h scores the target angle.  Phase 0 uses the
 * angle alone (w = ∞); phase 1 adds the altitude, every change keeping the
 * angles of what it changes >= min(target, before), so the angles reached
 * in phase 0 stay.  Each phase repeats sweeps of four operations, each
 * taken only when it raises the worst q of the tets it changes, until no
 * tet is below the target or a sweep changes nothing:
 *  1. Flips (Freitag and Ollivier-Gooch 1997; Shewchuk's edge removal): for
 *     each tet below the target, the best of removing one of its edges (the
 *     ring of n <= 7 tets around an interior edge becomes the 2n − 4 tets of
 *     the ring polygon's triangulation that maximises the worst q, found by
 *     dynamic programming, coned to the edge's two ends) and of a 2-3 flip
 *     of one of its faces.  Both keep the boundary and the volume.
 *  2. Removal of boundary tets below the target whose four corners are on
 *     the boundary: a wedge with two boundary faces (the boundary edge
 *     between them flips; only when the new boundary edge is not one
 *     already, so the boundary stays manifold) or a cap with three whose
 *     apex has no other tet.  On a nearly flat stretch of surface no node
 *     position can fix these; the volume they hold comes back in the
 *     volume correction.
 *  3. Vertex smoothing that maximises the worst q of the node's star
 *     (Freitag and Ollivier-Gooch), as ITF04 §10's mesher [MBTF03] improves
 *     its elements after compression.  The objective is not smooth; its
 *     ascent direction is the point of least norm in the convex hull of the
 *     gradients of the terms within ACTIVE of the minimum (Gilbert's
 *     iteration).  With θ at edge (a, b) between the faces (a, b, c) and
 *     (a, b, d), n̂ their outward unit normals, h_c the distance of c from
 *     the line ab and t_c the parameter of c's foot on it:
 *         ∂θ/∂x_c = n̂_(abc) / h_c,
 *         ∂θ/∂x_a = −(1−t_c) n̂_(abc)/h_c − (1−t_d) n̂_(abd)/h_d,
 *         ∂θ/∂x_b = −t_c n̂_(abc)/h_c − t_d n̂_(abd)/h_d;
 *     the altitudes' gradients by central differences.  The step is the
 *     linear prediction of where an inactive term becomes the smallest,
 *     halved until q grows.  Boundary nodes on the surface move in the
 *     tangent plane (area normal of their boundary faces) and are projected
 *     back by the closest point (defo_surface_sdf_distance); boundary nodes
 *     that snapping left short of the surface move tangentially without
 *     getting farther from it.
 *  4. Boundary nodes short of the surface try again to reach it (all, 3/4,
 *     1/2, 1/4 of the way) where their star keeps min(target, its worst).
 * Only nodes with a tet below target + MARGIN in their star whose star
 * changed since their last visit are smoothed, so the untouched BCC
 * interior (60°/90° tets) costs nothing after the first quality pass.
 * Flips update the node-to-tet incidence in place.  Finally the volume
 * correction (below) moves boundary nodes along their normals.
 *
 * Invariants: every tet stays positively oriented; no operation lowers the
 * worst q of what it changes below min(target, before), nor in phase 1 an
 * angle below min(target, before); boundary nodes stay within max_dist of
 * the surface.  Determinism: every decision is serial, in tet or node
 * order; parallel loops only fill one slot per tet or face.
 */
#include "mesher/mesher_internal.h"

#include "base/base.h"
#include "base/parallel.h"
#include "defo/math.h"
#include "defo/element.h"

#include <math.h>
#include <string.h>

#define PI_D       3.14159265358979323846
#define ACTIVE     (0.5 * PI_D / 180)  /* angles this close to the minimum are active */
#define MARGIN     (1.0 * PI_D / 180)  /* smooth nodes whose star is below target + MARGIN */
#define GAIN       (0.01 * PI_D / 180) /* a smoothing step must gain at least this */
#define MAX_ACTIVE 64
#define NODE_ITERS 2  /* ascent steps per node visit */
#define SWEEPS     10 /* sweeps at most */
#define SWEEPS_ALT 4
#define FAR        (15.0 * PI_D / 180) /* terms this far above the worst are ignored */

static const int F[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}}; /* face opposite c */
/* edge (a, b) and the two other corners (c, d) */
static const int EDGE[6][4] = {{0, 1, 2, 3}, {0, 2, 1, 3}, {0, 3, 1, 2},
                               {1, 2, 0, 3}, {1, 3, 0, 2}, {2, 3, 0, 1}};

double mesher_tet_max_cos(const double *x, const defo_index *v, double *det) {
    defo_vec3 p[4];
    for (int i = 0; i < 4; i++) p[i] = defo_v3_load(x + 3 * (size_t)v[i]);
    *det = defo_v3_dot(defo_v3_sub(p[1], p[0]),
                       defo_v3_cross(defo_v3_sub(p[2], p[0]), defo_v3_sub(p[3], p[0])));
    defo_vec3 n[4];
    for (int f = 0; f < 4; f++) {
        defo_vec3 a = p[F[f][0]], b = p[F[f][1]], c = p[F[f][2]];
        defo_vec3 nf = defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a));
        double l = defo_v3_norm(nf);
        if (!(l > 0)) return 1.0;
        n[f] = defo_v3_scale(nf, 1.0 / l);
    }
    double mc = -1;
    for (int f = 0; f < 4; f++)
        for (int g = f + 1; g < 4; g++) mc = fmax(mc, -defo_v3_dot(n[f], n[g]));
    return mc;
}

/* The quality the optimisation maximises: the smallest dihedral angle
 * (radians), or alt_w × the smallest altitude when that is smaller, with
 * alt_w = target / (ALT_FRAC h): a tet meets the target when its angles
 * are >= target and its altitudes (3V / face area, the length that bounds
 * a stable explicit step) >= ALT_FRAC h.  -1 when not positively oriented. */
/* The two parts of tet_qual: the cosine of the smallest dihedral angle
 * (2 when not positively oriented) and the smallest altitude. */
static double tet_parts(const double *x, const defo_index *v, double *alt) {
    defo_vec3 p[4];
    for (int i = 0; i < 4; i++) p[i] = defo_v3_load(x + 3 * (size_t)v[i]);
    double det = defo_v3_dot(defo_v3_sub(p[1], p[0]),
                             defo_v3_cross(defo_v3_sub(p[2], p[0]), defo_v3_sub(p[3], p[0])));
    *alt = 0;
    if (!(det > 0)) return 2;
    defo_vec3 n[4];
    double lmax = 0;
    for (int f = 0; f < 4; f++) {
        defo_vec3 a = p[F[f][0]], b = p[F[f][1]], c = p[F[f][2]];
        defo_vec3 nf = defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a));
        double l = defo_v3_norm(nf);
        if (!(l > 0)) return 2;
        lmax = DEFO_MAX(lmax, l);
        n[f] = defo_v3_scale(nf, 1.0 / l);
    }
    double mc = -1;
    for (int f = 0; f < 4; f++)
        for (int g = f + 1; g < 4; g++) {
            double cg = -defo_v3_dot(n[f], n[g]);
            mc = DEFO_MAX(mc, cg);
        }
    *alt = det / lmax; /* altitude to face f = 3V / A_f = det / |n_f| (|n_f| = 2 A_f) */
    return DEFO_MIN(mc, 1.0);
}

/* tet_qual from the worst cosine and altitude of a set of tets. */
static double qual_of_parts(double maxcos, double alt, double alt_w, double *theta) {
    *theta = maxcos > 1 ? -1 : acos(fmax(-1.0, maxcos));
    if (*theta < 0) return -1;
    return alt_w > 0 ? fmin(*theta, alt_w * alt) : *theta;
}

static double tet_qual(const double *x, const defo_index *v, double alt_w, double *theta) {
    double alt, c = tet_parts(x, v, &alt);
    return qual_of_parts(c, alt, alt_w, theta);
}

/* The same, any value above Q_CAP (above every threshold the optimisation
 * compares with) stored as Q_CAP: no acos for the BCC interior. */
#define Q_CAP (50.0 * PI_D / 180)
static double tet_q_of(const double *x, const defo_index *v, double alt_w) {
    static const double cos_cap = 0.64278760968653936; /* cos 50° */
    double alt, c = tet_parts(x, v, &alt), theta;
    if (c < cos_cap) return alt_w > 0 ? fmin(Q_CAP, alt_w * alt) : Q_CAP;
    return fmin(qual_of_parts(c, alt, alt_w, &theta), Q_CAP);
}

/* Smallest dihedral angle (radians), -1 when not positively oriented. */
static double tet_min_angle(const double *x, const defo_index *v) {
    double det;
    double c = mesher_tet_max_cos(x, v, &det);
    return det > 0 ? acos(fmax(-1.0, fmin(1.0, c))) : -1;
}

/* The four altitudes of the tet with corners p (det / |n_f|). */
static void tet_altitudes(const defo_vec3 p[4], double alt[4]) {
    double det = defo_v3_dot(defo_v3_sub(p[1], p[0]),
                             defo_v3_cross(defo_v3_sub(p[2], p[0]), defo_v3_sub(p[3], p[0])));
    for (int f = 0; f < 4; f++) {
        defo_vec3 a = p[F[f][0]], b = p[F[f][1]], c = p[F[f][2]];
        alt[f] = det / defo_v3_norm(defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a)));
    }
}

/* The six dihedral angles of tet v and their gradients with respect to its
 * corner s (formulas at the top of the file).  Returns 0 for a tet that is
 * flat. */
static int tet_angles(const double *x, const defo_index *v, int s, double ang[6],
                      defo_vec3 grad[6]);

/* The terms of tet_qual for tet v: six dihedral angles and four scaled
 * altitudes, with their gradients with respect to corner s (angles
 * analytic, altitudes by central differences of step 1e-6 of the tet's
 * size).  Returns 0 for a flat tet. */
static int tet_terms(const double *x, const defo_index *v, int s, double alt_w, double val[10],
                     defo_vec3 grad[10]) {
    if (!tet_angles(x, v, s, val, grad)) return 0;
    if (!(alt_w > 0)) {
        for (int f = 0; f < 4; f++) val[6 + f] = INFINITY, grad[6 + f] = defo_v3(0, 0, 0);
        return 1;
    }
    defo_vec3 p[4];
    for (int i = 0; i < 4; i++) p[i] = defo_v3_load(x + 3 * (size_t)v[i]);
    double alt[4], ap[4], am[4];
    tet_altitudes(p, alt);
    const double eps = 1e-6 * defo_v3_norm(defo_v3_sub(p[(s + 1) % 4], p[s]));
    double g[4][3];
    const defo_vec3 ps = p[s];
    for (int k = 0; k < 3; k++) {
        defo_vec3 d = defo_v3(k == 0, k == 1, k == 2);
        p[s] = defo_v3_axpy(ps, eps, d);
        tet_altitudes(p, ap);
        p[s] = defo_v3_axpy(ps, -eps, d);
        tet_altitudes(p, am);
        for (int f = 0; f < 4; f++) g[f][k] = (ap[f] - am[f]) / (2 * eps);
    }
    p[s] = ps;
    for (int f = 0; f < 4; f++) {
        val[6 + f] = alt_w * alt[f];
        grad[6 + f] = defo_v3(alt_w * g[f][0], alt_w * g[f][1], alt_w * g[f][2]);
    }
    return 1;
}

static int tet_angles(const double *x, const defo_index *v, int s, double ang[6],
                      defo_vec3 grad[6]) {
    defo_vec3 p[4], n[4];
    double a2[4];
    for (int i = 0; i < 4; i++) p[i] = defo_v3_load(x + 3 * (size_t)v[i]);
    for (int f = 0; f < 4; f++) {
        defo_vec3 a = p[F[f][0]], b = p[F[f][1]], c = p[F[f][2]];
        defo_vec3 nf = defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a));
        a2[f] = defo_v3_norm(nf);
        if (!(a2[f] > 0)) return 0;
        n[f] = defo_v3_scale(nf, 1.0 / a2[f]);
    }
    for (int e = 0; e < 6; e++) {
        int a = EDGE[e][0], b = EDGE[e][1], c = EDGE[e][2], d = EDGE[e][3];
        /* face (a,b,c) is the face opposite d, face (a,b,d) opposite c */
        defo_vec3 nc = n[d], nd = n[c];
        ang[e] = acos(fmax(-1.0, fmin(1.0, -defo_v3_dot(nc, nd))));
        defo_vec3 ab = defo_v3_sub(p[b], p[a]);
        double l2 = defo_v3_dot(ab, ab), l = sqrt(l2);
        double hc = a2[d] / l, hd = a2[c] / l; /* twice the face area / edge */
        defo_vec3 gc = defo_v3_scale(nc, 1.0 / hc), gd = defo_v3_scale(nd, 1.0 / hd);
        if (s == c)
            grad[e] = gc;
        else if (s == d)
            grad[e] = gd;
        else {
            double tc = defo_v3_dot(defo_v3_sub(p[c], p[a]), ab) / l2;
            double td = defo_v3_dot(defo_v3_sub(p[d], p[a]), ab) / l2;
            if (s == a)
                grad[e] = defo_v3_scale(
                    defo_v3_add(defo_v3_scale(gc, 1 - tc), defo_v3_scale(gd, 1 - td)), -1);
            else
                grad[e] =
                    defo_v3_scale(defo_v3_add(defo_v3_scale(gc, tc), defo_v3_scale(gd, td)), -1);
        }
    }
    return 1;
}

/* Point of least norm in the convex hull of g[0..n) (Gilbert's iteration). */
static defo_vec3 min_norm_point(const defo_vec3 *g, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (defo_v3_dot(g[i], g[i]) < defo_v3_dot(g[best], g[best])) best = i;
    defo_vec3 c = g[best];
    for (int it = 0; it < 100; it++) {
        double cc = defo_v3_dot(c, c);
        int j = 0;
        double mj = defo_v3_dot(c, g[0]);
        for (int i = 1; i < n; i++) {
            double t = defo_v3_dot(c, g[i]);
            if (t < mj) mj = t, j = i;
        }
        if (mj >= cc * (1 - 1e-9)) break; /* c·g_i ≥ |c|² for all i: optimal */
        defo_vec3 dcg = defo_v3_sub(g[j], c);
        double den = defo_v3_dot(dcg, dcg);
        if (!(den > 0)) break;
        double t = fmin(1.0, fmax(0.0, -defo_v3_dot(c, dcg) / den));
        c = defo_v3_axpy(c, t, dcg);
    }
    return c;
}

/* Node-to-tet incidence that flips update in place: node i's tets are
 * e[off[i] .. off[i] + cnt[i]) (local corner in l), with room for
 * ADJ_SLACK more before a rebuild. */
#define ADJ_SLACK 8
typedef struct adjacency {
    int64_t *off; /* num_nodes + 1 */
    int32_t *cnt;
    defo_index *e;
    int8_t *l;
} adjacency;

typedef struct opt {
    const defo_surface_sdf *sdf;
    defo_mesh *m;
    adjacency ne;
    uint8_t *alive;        /* per tet slot: 0 once a flip or removal freed it */
    defo_index *free_e;    /* freed slots, reused last-in first-out */
    int64_t n_free, cap_e; /* freed slots; capacity of alive and tet_q */
    uint8_t *gone;         /* per node: removed with its last tet */
    uint8_t *is_bd, *on_surf;
    uint8_t *dirty;    /* per node: its star changed since it was last smoothed */
    defo_index *faces; /* boundary faces, 3 node ids each, outward */
    int64_t n_faces;
    int64_t *bf_off; /* boundary faces around each node (CSR into bf) */
    defo_index *bf;  /* 3 node ids per entry */
    double *tet_q;   /* smallest angle per tet (radians), capped at Q_CAP */
    double h, max_dist, target;
    double alt_w; /* target / (ALT_FRAC h) */
} opt;

/* Worst tet_qual of node i's star with i at p, and its worst dihedral
 * angle in *theta (x is restored). */
static double star_qual(opt *o, defo_index i, const double p[3], double *theta) {
    double *xi = o->m->x + 3 * (size_t)i;
    double old[3] = {xi[0], xi[1], xi[2]};
    memcpy(xi, p, sizeof old);
    double maxcos = -1, alt = INFINITY;
    for (int64_t k = o->ne.off[i]; k < o->ne.off[i] + o->ne.cnt[i] && maxcos <= 1; k++) {
        double a;
        double c = tet_parts(o->m->x, o->m->elems + 4 * (size_t)o->ne.e[k], &a);
        maxcos = DEFO_MAX(maxcos, c);
        alt = DEFO_MIN(alt, a);
    }
    memcpy(xi, old, sizeof old);
    return qual_of_parts(maxcos, alt, o->alt_w, theta);
}

/* A change from worst (q0, θ0) to (q, θ) is acceptable when q >= need and
 * the worst angle does not fall below min(target, θ0): the altitude term
 * never buys its gain with an angle below the target. */
static int accept(const opt *o, double q, double th, double need, double th0) {
    return q >= need && th >= fmin(o->target, th0);
}

/* Area-weighted normal of node i's boundary faces (unit), or zero. */
static defo_vec3 bd_normal(const opt *o, defo_index i) {
    defo_vec3 n = defo_v3(0, 0, 0);
    for (int64_t k = o->bf_off[i]; k < o->bf_off[i + 1]; k++) {
        const defo_index *f = o->bf + 3 * (size_t)k;
        defo_vec3 a = defo_v3_load(o->m->x + 3 * (size_t)f[0]),
                  b = defo_v3_load(o->m->x + 3 * (size_t)f[1]),
                  c = defo_v3_load(o->m->x + 3 * (size_t)f[2]);
        n = defo_v3_add(n, defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a)));
    }
    double l = defo_v3_norm(n);
    return l > 0 ? defo_v3_scale(n, 1 / l) : n;
}

/* Node i moved: refresh its star's qualities and mark its neighbours. */
static void node_moved(opt *o, defo_index i) {
    for (int64_t k = o->ne.off[i]; k < o->ne.off[i] + o->ne.cnt[i]; k++) {
        defo_index e = o->ne.e[k];
        const defo_index *v = o->m->elems + 4 * (size_t)e;
        o->tet_q[e] = tet_q_of(o->m->x, v, o->alt_w);
        for (int c = 0; c < 4; c++) o->dirty[v[c]] = 1;
    }
}

/* Ascent on node i's worst angle (step 3); returns 1 when it moved. */
static int smooth_node(opt *o, defo_index i) {
    double *xi = o->m->x + 3 * (size_t)i;
    double th0;
    double q0 = star_qual(o, i, xi, &th0);
    if (!(q0 > 0)) return 0;
    const int bd = o->is_bd[i], on = o->on_surf[i];
    double d0 = 0;
    if (bd && !on) d0 = defo_surface_sdf_distance(o->sdf, xi, NULL, NULL);
    int moved = 0;
    for (int it = 0; it < NODE_ITERS; it++) {
        defo_vec3 g[MAX_ACTIVE], gi[2 * MAX_ACTIVE];
        double ai[2 * MAX_ACTIVE];
        int na = 0, ni = 0;
        defo_vec3 nrm = defo_v3(0, 0, 0);
        if (bd) nrm = bd_normal(o, i);
        const double far = q0 + FAR; /* terms above this neither act nor limit the step */
        for (int64_t k = o->ne.off[i]; k < o->ne.off[i] + o->ne.cnt[i]; k++) {
            defo_index e = o->ne.e[k];
            if (o->tet_q[e] > far) continue;
            double ang[10];
            defo_vec3 gr[10];
            if (!tet_terms(o->m->x, o->m->elems + 4 * (size_t)e, o->ne.l[k], o->alt_w, ang, gr))
                return moved;
            for (int a = 0; a < 10; a++) {
                defo_vec3 ge = gr[a];
                if (bd) ge = defo_v3_axpy(ge, -defo_v3_dot(ge, nrm), nrm);
                if (ang[a] < q0 + ACTIVE) {
                    if (na < MAX_ACTIVE) g[na++] = ge;
                } else if (ang[a] < far && ni < 2 * MAX_ACTIVE) {
                    gi[ni] = ge, ai[ni] = ang[a], ni++;
                }
            }
        }
        if (na == 0) break;
        defo_vec3 c = min_norm_point(g, na);
        double cn = defo_v3_norm(c);
        if (!(cn > 1e-9 / o->h)) break; /* stationary: no ascent direction */
        defo_vec3 dir = defo_v3_scale(c, 1 / cn);
        double rate = INFINITY;
        for (int a = 0; a < na; a++) rate = fmin(rate, defo_v3_dot(g[a], dir));
        double step = 0.3 * o->h;
        for (int a = 0; a < ni; a++) {
            double sl = defo_v3_dot(gi[a], dir);
            if (sl < rate) step = fmin(step, (ai[a] - q0) / (rate - sl));
        }
        step = fmax(step, 1e-3 * o->h);
        const double need = q0 + GAIN;
        int ok = 0;
        for (int tries = 0; tries < 8 && !ok; tries++, step *= 0.5) {
            double p[3], th;
            for (int k = 0; k < 3; k++) p[k] = xi[k] + step * defo_v3_get(dir, k);
            /* the surface queries cost more than the star: a step whose
             * tangent point already fails is not projected */
            double cq = star_qual(o, i, p, &th);
            if (bd && !accept(o, cq, th, need, th0)) continue;
            if (on) {
                double q[3];
                defo_surface_sdf_distance(o->sdf, p, q, NULL);
                memcpy(p, q, sizeof q);
                cq = star_qual(o, i, p, &th);
            } else if (bd) {
                double d = defo_surface_sdf_distance(o->sdf, p, NULL, NULL);
                if (!(d <= fmin(o->max_dist, d0))) continue;
            }
            if (accept(o, cq, th, need, th0)) {
                memcpy(xi, p, sizeof p);
                q0 = cq;
                th0 = th;
                ok = moved = 1;
            }
        }
        if (!ok) break;
    }
    return moved;
}

/* Step 3 over the dirty nodes with a tet below target + MARGIN.  They are
 * coloured greedily in node order so that no two of one colour share a
 * tet; a colour's nodes read and move nothing another of them touches, so
 * they are smoothed in parallel and the result is that of smoothing them
 * one after the other in colour order, for any thread count.  The
 * qualities and dirty flags of the moved nodes' stars are updated after
 * each colour, serially. */
#define COLOURS 64
static defo_status smooth_pass(opt *o, int64_t *changed) {
    const defo_mesh *m = o->m;
    const defo_index nn = m->num_nodes;
    const double work = o->target + MARGIN;
    defo_index *list = defo_malloc(2 * ((size_t)nn + 1) * sizeof *list);
    int32_t *colour = defo_malloc(((size_t)nn + 1) * sizeof *colour);
    uint8_t *moved = defo_malloc((size_t)nn + 1);
    int64_t start[COLOURS + 2];
    if (!list || !colour || !moved) {
        defo_free(list);
        defo_free(colour);
        defo_free(moved);
        return defo_error_oom("mesher smoothing", (size_t)nn * 13);
    }
    int64_t nw = 0;
    for (defo_index i = 0; i < nn; i++) {
        colour[i] = -1;
        if (!o->dirty[i]) continue;
        o->dirty[i] = 0;
        int bad = 0;
        for (int64_t k = o->ne.off[i]; k < o->ne.off[i] + o->ne.cnt[i] && !bad; k++)
            bad = o->tet_q[o->ne.e[k]] < work;
        if (bad) list[nw++] = i;
    }
    /* greedy colouring; a node finding all COLOURS taken gets COLOURS (done
     * alone, after the others, in node order) */
    memset(start, 0, sizeof start);
    for (int64_t w = 0; w < nw; w++) {
        defo_index i = list[w];
        uint64_t used = 0;
        for (int64_t k = o->ne.off[i]; k < o->ne.off[i] + o->ne.cnt[i]; k++) {
            const defo_index *v = m->elems + 4 * (size_t)o->ne.e[k];
            for (int c = 0; c < 4; c++)
                if (v[c] != i && colour[v[c]] >= 0 && colour[v[c]] < COLOURS)
                    used |= (uint64_t)1 << colour[v[c]];
        }
        int c = 0;
        while (c < COLOURS && (used >> c & 1u)) c++;
        colour[i] = c;
        start[c + 1]++;
    }
    for (int c = 0; c <= COLOURS; c++) start[c + 1] += start[c];
    defo_index *by = list + nn + 1; /* work nodes by colour, node order within */
    {
        int64_t fill[COLOURS + 1];
        memcpy(fill, start, sizeof fill);
        for (int64_t w = 0; w < nw; w++) by[fill[colour[list[w]]]++] = list[w];
    }
    for (int c = 0; c <= COLOURS; c++) {
        const int64_t b = start[c], e = start[c + 1];
        if (c < COLOURS) {
            DEFO_PARALLEL_FOR_IF(e - b >= 256)
            for (int64_t w = b; w < e; w++) moved[w - b] = (uint8_t)smooth_node(o, by[w]);
        } else {
            for (int64_t w = b; w < e; w++) {
                moved[w - b] = (uint8_t)smooth_node(o, by[w]);
                if (moved[w - b]) node_moved(o, by[w]);
            }
        }
        for (int64_t w = b; w < e; w++) {
            if (!moved[w - b]) continue;
            if (c < COLOURS) node_moved(o, by[w]);
            (*changed)++;
        }
    }
    for (int64_t w = 0; w < nw; w++) colour[list[w]] = -1;
    defo_free(list);
    defo_free(colour);
    defo_free(moved);
    return DEFO_OK;
}

/* Step 4: boundary node i short of the surface moves onto it (or part of
 * the way) when its star keeps min(target, its worst angle). */
static int resnap_node(opt *o, defo_index i) {
    double *xi = o->m->x + 3 * (size_t)i;
    double t[3];
    double d = defo_surface_sdf_distance(o->sdf, xi, t, NULL);
    if (!(d > 0)) {
        o->on_surf[i] = 1;
        return 0;
    }
    double th0, th;
    double need = fmin(star_qual(o, i, xi, &th0), o->target);
    const double fr[4] = {1.0, 0.75, 0.5, 0.25};
    for (int f = 0; f < 4; f++) {
        double p[3];
        for (int k = 0; k < 3; k++) p[k] = f == 0 ? t[k] : xi[k] + fr[f] * (t[k] - xi[k]);
        double q = star_qual(o, i, p, &th);
        if (accept(o, q, th, need, th0)) {
            memcpy(xi, p, sizeof p);
            if (f == 0) o->on_surf[i] = 1;
            node_moved(o, i);
            return 1;
        }
    }
    return 0;
}

static int tet_has(const defo_index *v, defo_index a) {
    return v[0] == a || v[1] == a || v[2] == a || v[3] == a;
}

/* Boundary faces from the node-to-tet incidence: face f of tet e is on the
 * boundary when no other tet around its first corner holds the other two.
 * Faces are listed in (tet, face) order, outward (F order), in o->faces,
 * and copied to each corner's list bf. */
static defo_status build_bd_faces(opt *o) {
    const defo_mesh *m = o->m;
    const defo_index nn = m->num_nodes, ne = m->num_elems;
    uint8_t *fl = defo_malloc((size_t)ne + 1);
    if (!fl) return defo_error_oom("mesher optimisation", (size_t)ne);
    const adjacency *inc = &o->ne;
    const uint8_t *alive = o->alive;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(ne))
    for (defo_index e = 0; e < ne; e++) {
        const defo_index *v = m->elems + 4 * (size_t)e;
        uint8_t bits = 0;
        for (int f = 0; f < 4 && alive[e]; f++) {
            defo_index a = v[F[f][0]], b = v[F[f][1]], c = v[F[f][2]];
            /* the boundary node set never changes: a face with an interior
             * corner is interior */
            if (!o->is_bd[a] || !o->is_bd[b] || !o->is_bd[c]) continue;
            /* search the smallest of the three corners' stars */
            defo_index r = a, u = b, t = c;
            if (inc->cnt[u] < inc->cnt[r]) r = b, u = a;
            if (inc->cnt[t] < inc->cnt[r]) t = r, r = c;
            int shared = 0;
            for (int64_t k = inc->off[r]; k < inc->off[r] + inc->cnt[r] && !shared; k++) {
                defo_index g = inc->e[k];
                const defo_index *w = m->elems + 4 * (size_t)g;
                shared = g != e && tet_has(w, u) && tet_has(w, t);
            }
            if (!shared) bits |= (uint8_t)(1u << f);
        }
        fl[e] = bits;
    }
    int64_t nf = 0;
    for (defo_index e = 0; e < ne; e++)
        for (int f = 0; f < 4; f++) nf += fl[e] >> f & 1u;
    o->n_faces = nf;
    o->faces = defo_malloc(3 * ((size_t)nf + 1) * sizeof *o->faces);
    o->bf_off = defo_calloc((size_t)nn + 1, sizeof *o->bf_off);
    o->bf = defo_malloc(9 * ((size_t)nf + 1) * sizeof *o->bf);
    int64_t *fill = defo_malloc(((size_t)nn + 1) * sizeof *fill);
    if (!o->faces || !o->bf_off || !o->bf || !fill) {
        defo_free(fill);
        defo_free(fl);
        return defo_error_oom("mesher optimisation", (size_t)nf * 48);
    }
    int64_t k = 0;
    for (defo_index e = 0; e < ne; e++)
        for (int f = 0; f < 4; f++) {
            if (!(fl[e] >> f & 1u)) continue;
            defo_index *t = o->faces + 3 * (size_t)k++;
            for (int c = 0; c < 3; c++) {
                t[c] = m->elems[4 * (size_t)e + (size_t)F[f][c]];
                o->bf_off[t[c] + 1]++;
            }
        }
    defo_free(fl);
    for (defo_index i = 0; i < nn; i++) o->bf_off[i + 1] += o->bf_off[i];
    memcpy(fill, o->bf_off, (size_t)nn * sizeof *fill);
    for (int64_t f = 0; f < nf; f++)
        for (int c = 0; c < 3; c++) {
            defo_index n = o->faces[3 * (size_t)f + (size_t)c];
            memcpy(o->bf + 3 * (size_t)fill[n]++, o->faces + 3 * (size_t)f, 3 * sizeof *o->bf);
        }
    defo_free(fill);
    return DEFO_OK;
}

/* Is (a, b, c) a boundary face?  (bf lists of a.) */
static int is_bd_face(const opt *o, defo_index a, defo_index b, defo_index c) {
    for (int64_t k = o->bf_off[a]; k < o->bf_off[a + 1]; k++) {
        const defo_index *t = o->bf + 3 * (size_t)k;
        int n = 0;
        for (int z = 0; z < 3; z++) n += t[z] == a || t[z] == b || t[z] == c;
        if (n == 3) return 1;
    }
    return 0;
}

/* Is (a, b) an edge of a boundary face? */
static int is_bd_edge(const opt *o, defo_index a, defo_index b) {
    for (int64_t k = o->bf_off[a]; k < o->bf_off[a + 1]; k++) {
        const defo_index *t = o->bf + 3 * (size_t)k;
        if (t[0] == b || t[1] == b || t[2] == b) return 1;
    }
    return 0;
}

static void opt_free_faces(opt *o) {
    defo_free(o->faces);
    defo_free(o->bf_off);
    defo_free(o->bf);
    o->faces = NULL;
    o->bf_off = NULL;
    o->bf = NULL;
}

static void adj_free(adjacency *a) {
    defo_free(a->off);
    defo_free(a->cnt);
    defo_free(a->e);
    defo_free(a->l);
    memset(a, 0, sizeof *a);
}

/* Incidence of the live tets, in tet order, with ADJ_SLACK spare entries
 * per node. */
static defo_status adj_build(opt *o) {
    const defo_mesh *m = o->m;
    adjacency *a = &o->ne;
    adj_free(a);
    const size_t nn = (size_t)m->num_nodes;
    a->off = defo_calloc(nn + 1, sizeof *a->off);
    a->cnt = defo_calloc(nn + 1, sizeof *a->cnt);
    if (!a->off || !a->cnt) return defo_error_oom("mesher optimisation", nn * 12);
    for (defo_index e = 0; e < m->num_elems; e++)
        if (o->alive[e])
            for (int c = 0; c < 4; c++) a->cnt[m->elems[4 * (size_t)e + (size_t)c]]++;
    for (size_t i = 0; i < nn; i++) a->off[i + 1] = a->off[i] + a->cnt[i] + ADJ_SLACK;
    a->e = defo_malloc(((size_t)a->off[nn] + 1) * sizeof *a->e);
    a->l = defo_malloc((size_t)a->off[nn] + 1);
    if (!a->e || !a->l) return defo_error_oom("mesher optimisation", (size_t)a->off[nn] * 5);
    memset(a->cnt, 0, nn * sizeof *a->cnt);
    for (defo_index e = 0; e < m->num_elems; e++) {
        if (!o->alive[e]) continue;
        for (int c = 0; c < 4; c++) {
            defo_index i = m->elems[4 * (size_t)e + (size_t)c];
            int64_t k = a->off[i] + a->cnt[i]++;
            a->e[k] = e;
            a->l[k] = (int8_t)c;
        }
    }
    return DEFO_OK;
}

static void adj_remove(adjacency *a, defo_index i, defo_index e) {
    int64_t last = a->off[i] + a->cnt[i] - 1;
    for (int64_t k = a->off[i]; k <= last; k++)
        if (a->e[k] == e) {
            a->e[k] = a->e[last];
            a->l[k] = a->l[last];
            a->cnt[i]--;
            return;
        }
}

/* 0 when node i's room is full (the caller rebuilds). */
static int adj_add(adjacency *a, defo_index i, defo_index e, int c) {
    if (a->off[i] + a->cnt[i] >= a->off[i + 1]) return 0;
    int64_t k = a->off[i] + a->cnt[i]++;
    a->e[k] = e;
    a->l[k] = (int8_t)c;
    return 1;
}

static void opt_free_topology(opt *o) {
    opt_free_faces(o);
    adj_free(&o->ne);
}

/* Incidence, and (with faces) the boundary faces per node. */
static defo_status opt_topology(opt *o, int faces) {
    defo_status s = adj_build(o);
    if (!s && faces) {
        opt_free_faces(o);
        s = build_bd_faces(o);
    }
    return s;
}

static void all_tet_q(opt *o) {
    const defo_mesh *m = o->m;
    double *q = o->tet_q;
    const uint8_t *alive = o->alive;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(m->num_elems))
    for (defo_index e = 0; e < m->num_elems; e++)
        q[e] = alive[e] ? tet_q_of(m->x, m->elems + 4 * (size_t)e, o->alt_w) : INFINITY;
}

/* ------------------------------------------------------------ flips */
#define MAX_RING 7

/* One round of operations on disjoint node sets: which old tets die, which
 * nodes they touch (lock) or remove (gone), the new tets. */
typedef struct flip_batch {
    uint8_t *dead;   /* per old tet */
    uint8_t *lock;   /* per node */
    uint8_t *gone;   /* per node */
    defo_index *add; /* new tets, 4 ids each */
    int64_t n_add, cap_add;
} flip_batch;

/* tet_qual of a candidate tet; -1 when its worst angle would fall below
 * th_floor = min(target, the worst angle of the tets it replaces). */
static double q_of(const opt *o, defo_index a, defo_index b, defo_index c, defo_index d,
                   double th_floor) {
    defo_index v[4] = {a, b, c, d};
    double th;
    double q = tet_qual(o->m->x, v, o->alt_w, &th);
    return th >= th_floor ? q : -1;
}

/* Tets around the interior edge (c, d) in cyclic order with the ring
 * vertices r[k] (tet k holds r[k], r[k+1]); 0 when the edge is on the
 * boundary, its ring is longer than MAX_RING or touches a locked node. */
static int edge_ring(const opt *o, const flip_batch *fb, defo_index c, defo_index d,
                     defo_index *tets, defo_index *r) {
    defo_index cand[MAX_RING + 1], uv[MAX_RING + 1][2];
    int n = 0;
    for (int64_t k = o->ne.off[c]; k < o->ne.off[c] + o->ne.cnt[c]; k++) {
        defo_index e = o->ne.e[k];
        const defo_index *v = o->m->elems + 4 * (size_t)e;
        if (!tet_has(v, d)) continue;
        if (n == MAX_RING) return 0;
        int z = 0;
        for (int q = 0; q < 4; q++)
            if (v[q] != c && v[q] != d) uv[n][z++] = v[q];
        cand[n++] = e;
    }
    if (n < 3 || fb->lock[c] || fb->lock[d]) return 0;
    for (int k = 0; k < n; k++)
        if (fb->lock[uv[k][0]] || fb->lock[uv[k][1]]) return 0;
    uint8_t used[MAX_RING] = {0};
    tets[0] = cand[0];
    used[0] = 1;
    r[0] = uv[0][0];
    r[1] = uv[0][1];
    for (int k = 1; k < n; k++) {
        int found = -1;
        for (int q = 0; q < n && found < 0; q++) {
            if (used[q]) continue;
            if (uv[q][0] == r[k]) {
                found = q;
                r[k + 1] = uv[q][1];
            } else if (uv[q][1] == r[k]) {
                found = q;
                r[k + 1] = uv[q][0];
            }
        }
        if (found < 0) return 0;
        used[found] = 1;
        tets[k] = cand[found];
    }
    if (r[n] != r[0]) return 0;
    return n;
}

static defo_status batch_add(flip_batch *fb, defo_index a, defo_index b, defo_index c,
                             defo_index d) {
    if (fb->n_add == fb->cap_add) {
        int64_t nc = fb->cap_add ? 2 * fb->cap_add : 256;
        defo_index *p = defo_realloc(fb->add, 4 * (size_t)nc * sizeof *p);
        if (!p) return defo_error_oom("mesher flips", 4 * (size_t)nc * sizeof *p);
        fb->add = p;
        fb->cap_add = nc;
    }
    defo_index *t = fb->add + 4 * (size_t)fb->n_add++;
    t[0] = a, t[1] = b, t[2] = c, t[3] = d;
    return DEFO_OK;
}

/* Best edge removal for edge (c, d) (Shewchuk's: the ring's polygon
 * triangulated by dynamic programming to maximise the worst new tet, each
 * triangle coned to c and d).  Returns the new worst angle (or -1) and, when
 * apply, replaces the ring. */
static double edge_removal(opt *o, flip_batch *fb, defo_index c, defo_index d, double old_q,
                           int apply, defo_status *st) {
    defo_index tets[MAX_RING], r[MAX_RING + 1];
    int n = edge_ring(o, fb, c, d, tets, r);
    if (!n) return -1;
    const double *x = o->m->x;
    /* orientation: det(c, d, r0, r1) > 0 puts d on the positive side of
     * every ring triangle taken in cycle order */
    double det;
    defo_index v0[4] = {c, d, r[0], r[1]};
    (void)mesher_tet_max_cos(x, v0, &det);
    const int s = det > 0 ? 1 : -1;
    double floor = o->target; /* min(target, the ring's worst angle) */
    for (int k = 0; k < n; k++)
        floor = fmin(floor, tet_min_angle(x, o->m->elems + 4 * (size_t)tets[k]));
    double best[MAX_RING][MAX_RING];
    int arg[MAX_RING][MAX_RING];
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            best[i][j] = j == i + 1 ? INFINITY : -1;
            arg[i][j] = -1;
        }
    for (int len = 2; len < n; len++)
        for (int i = 0; i + len < n; i++) {
            int j = i + len;
            for (int k = i + 1; k < j; k++) {
                defo_index a = r[i], b = r[k], e = r[j];
                double q1 = s > 0 ? q_of(o, a, b, e, d, floor) : q_of(o, e, b, a, d, floor);
                double q2 = s > 0 ? q_of(o, e, b, a, c, floor) : q_of(o, a, b, e, c, floor);
                double q = fmin(fmin(q1, q2), fmin(best[i][k], best[k][j]));
                if (q > best[i][j]) best[i][j] = q, arg[i][j] = k;
            }
        }
    double nq = best[0][n - 1];
    if (!apply) return nq;
    if (!(nq > old_q)) return -1;
    /* emit the triangles of the chosen triangulation */
    int stack[MAX_RING * 2][2], sp = 0;
    stack[sp][0] = 0, stack[sp][1] = n - 1, sp++;
    while (sp) {
        sp--;
        int i = stack[sp][0], j = stack[sp][1];
        if (j <= i + 1) continue;
        int k = arg[i][j];
        defo_index a = r[i], b = r[k], e = r[j];
        defo_status t1 = s > 0 ? batch_add(fb, a, b, e, d) : batch_add(fb, e, b, a, d);
        defo_status t2 = s > 0 ? batch_add(fb, e, b, a, c) : batch_add(fb, a, b, e, c);
        if (t1 || t2) {
            *st = t1 ? t1 : t2;
            return -1;
        }
        stack[sp][0] = i, stack[sp][1] = k, sp++;
        stack[sp][0] = k, stack[sp][1] = j, sp++;
    }
    for (int k = 0; k < n; k++) fb->dead[tets[k]] = 1;
    fb->lock[c] = fb->lock[d] = 1;
    for (int k = 0; k < n; k++) fb->lock[r[k]] = 1;
    return nq;
}

/* 2-3 flip of the face of tet e opposite its corner f: the face (a, b, c)
 * between e = (a, b, c, p) and its neighbour (a, b, c, q) becomes the three
 * tets around the new edge (p, q). */
static double face_flip(opt *o, flip_batch *fb, defo_index e, int f, double old_q, int apply,
                        defo_status *st) {
    const defo_mesh *m = o->m;
    const defo_index *v = m->elems + 4 * (size_t)e;
    defo_index a = v[F[f][0]], b = v[F[f][1]], c = v[F[f][2]], p = v[f];
    defo_index nb = -1, q = -1;
    if (fb->lock[a] || fb->lock[b] || fb->lock[c] || fb->lock[p]) return -1;
    for (int64_t k = o->ne.off[a]; k < o->ne.off[a] + o->ne.cnt[a]; k++) {
        defo_index g = o->ne.e[k];
        const defo_index *w = m->elems + 4 * (size_t)g;
        if (g == e || !tet_has(w, b) || !tet_has(w, c)) continue;
        nb = g;
        for (int z = 0; z < 4; z++)
            if (w[z] != a && w[z] != b && w[z] != c) q = w[z];
    }
    if (nb < 0 || fb->lock[q] || fb->dead[nb]) return -1;
    double q_old = fmin(old_q, o->tet_q[nb]);
    /* (a, b, c) in F order has its normal pointing away from p, so q is on
     * its positive side and (a, b, p, q), (b, c, p, q), (c, a, p, q) are
     * positive when the segment pq crosses the triangle */
    const double floor = fmin(
        o->target, fmin(tet_min_angle(m->x, v), tet_min_angle(m->x, m->elems + 4 * (size_t)nb)));
    double nq = fmin(fmin(q_of(o, a, b, p, q, floor), q_of(o, b, c, p, q, floor)),
                     q_of(o, c, a, p, q, floor));
    if (!apply) return nq;
    if (!(nq > q_old)) return -1;
    defo_status s1 = batch_add(fb, a, b, p, q), s2 = batch_add(fb, b, c, p, q),
                s3 = batch_add(fb, c, a, p, q);
    if (s1 || s2 || s3) {
        *st = s1 ? s1 : s2 ? s2 : s3;
        return -1;
    }
    fb->dead[e] = fb->dead[nb] = 1;
    fb->lock[a] = fb->lock[b] = fb->lock[c] = fb->lock[p] = fb->lock[q] = 1;
    return nq;
}

/* Step 2 for tet e (corners all on the boundary, below target): a wedge
 * with two boundary faces whose removal leaves the boundary manifold, or a
 * cap with three whose apex has no other tet.  Returns 1 when marked. */
static int remove_flat(opt *o, flip_batch *fb, defo_index e) {
    const defo_index *v = o->m->elems + 4 * (size_t)e;
    for (int c = 0; c < 4; c++)
        if (!o->is_bd[v[c]]) return 0;
    int fbd[4], nf = 0;
    for (int f = 0; f < 4; f++) {
        fbd[f] = is_bd_face(o, v[F[f][0]], v[F[f][1]], v[F[f][2]]);
        nf += fbd[f];
    }
    if (nf == 2) {
        int c = -1, d = -1; /* the corners opposite the boundary faces */
        for (int f = 0; f < 4; f++)
            if (fbd[f]) {
                if (c < 0)
                    c = f;
                else
                    d = f;
            }
        /* the faces opposite the two others become boundary: their shared
         * edge (v[c], v[d]) must not be a boundary edge already */
        if (is_bd_edge(o, v[c], v[d])) return 0;
    } else if (nf == 3) {
        int a = 0;
        for (int f = 0; f < 4; f++)
            if (!fbd[f]) a = f;
        if (o->ne.cnt[v[a]] != 1) return 0;
        fb->gone[v[a]] = 1;
    } else {
        return 0;
    }
    fb->dead[e] = 1;
    for (int c = 0; c < 4; c++) fb->lock[v[c]] = 1;
    return 1;
}

/* One round over the tets below target, in order: the best flip of step 1
 * if one raises the worst angle of the tets it replaces, else (with
 * remove) the removal of step 2.  Returns the number of operations. */
static int64_t ops_round(opt *o, flip_batch *fb, int remove, int64_t *n_removed, defo_status *st) {
    defo_mesh *m = o->m;
    int64_t nops = 0;
    const defo_index ne0 = m->num_elems;
    for (defo_index e = 0; e < ne0 && !*st; e++) {
        if (!(o->tet_q[e] < o->target) || fb->dead[e] || !o->alive[e]) continue;
        const defo_index *v = m->elems + 4 * (size_t)e;
        if (fb->lock[v[0]] || fb->lock[v[1]] || fb->lock[v[2]] || fb->lock[v[3]]) continue;
        double best = o->tet_q[e];
        int kind = -1, which = -1;
        for (int k = 0; k < 6; k++) {
            double nq = edge_removal(o, fb, v[EDGE[k][0]], v[EDGE[k][1]], 0, 0, st);
            if (nq > best) best = nq, kind = 0, which = k;
        }
        for (int f = 0; f < 4; f++) {
            double nq = face_flip(o, fb, e, f, 0, 0, st);
            if (nq > best) best = nq, kind = 1, which = f;
        }
        double got = -1;
        if (kind == 0) {
            /* apply against the true worst angle of the ring it replaces */
            defo_index c = v[EDGE[which][0]], d = v[EDGE[which][1]];
            defo_index tets[MAX_RING], r[MAX_RING + 1];
            int n = edge_ring(o, fb, c, d, tets, r);
            double oq = INFINITY;
            for (int k = 0; k < n; k++) oq = fmin(oq, o->tet_q[tets[k]]);
            got = edge_removal(o, fb, c, d, oq, 1, st);
        } else if (kind == 1) {
            got = face_flip(o, fb, e, which, o->tet_q[e], 1, st);
        }
        if (got > 0) {
            nops++;
        } else if (remove && remove_flat(o, fb, e)) {
            nops++;
            (*n_removed)++;
        }
    }
    return nops;
}

/* ------------------------------------------------- volume correction */
/* Inscribed in a convex patch, a triangle lies inside the surface by about
 * its centroid's depth g_f (the chord error, O(h²/R)), so a mesh whose
 * boundary nodes sit on a curved surface encloses less than it.  Each
 * boundary node moves along its normal by δ_i = −κ ḡ_i, ḡ_i the mean signed
 * centroid depth of its boundary faces (negative inside), with κ from the
 * linearised volume change Σ δ_i A_i/3 = V_surface − V_mesh (A_i the area of
 * its faces), |δ_i| ≤ VOL_MAX_OFFSET h; a move is taken when the node's star
 * keeps min(target, its worst angle). */
#define VOL_MAX_OFFSET 0.2
static defo_status volume_correction(opt *o, double surface_volume, int exact_volume,
                                     double *max_offset) {
    defo_mesh *m = o->m;
    const defo_index nn = m->num_nodes;
    const int64_t nbf = o->n_faces;
    const defo_index *faces = o->faces;
    defo_status s = DEFO_OK;
    double *fg = defo_malloc(2 * ((size_t)nbf + 1) * sizeof *fg);
    double *ng = defo_calloc(2 * ((size_t)nn + 1), sizeof *ng);
    double *x0 = defo_malloc(3 * ((size_t)nn + 1) * sizeof *x0);
    if (!fg || !ng || !x0) {
        defo_free(fg);
        defo_free(ng);
        defo_free(x0);
        return defo_error_oom("mesher volume correction", (size_t)nn * 40);
    }
    for (int pass = 0; pass < 2; pass++) {
        DEFO_PARALLEL_FOR_IF(nbf >= 256)
        for (int64_t f = 0; f < nbf; f++) {
            const defo_index *t = faces + 3 * (size_t)f;
            defo_vec3 a = defo_v3_load(m->x + 3 * (size_t)t[0]),
                      b = defo_v3_load(m->x + 3 * (size_t)t[1]),
                      c = defo_v3_load(m->x + 3 * (size_t)t[2]);
            defo_vec3 n = defo_v3_cross(defo_v3_sub(b, a), defo_v3_sub(c, a));
            defo_vec3 g = defo_v3_scale(defo_v3_add(defo_v3_add(a, b), c), 1.0 / 3);
            double p[3] = {g.x, g.y, g.z}, q[3];
            double d = defo_surface_sdf_distance(o->sdf, p, q, NULL);
            /* inside when the closest point lies along the outward normal */
            double side = defo_v3_dot(defo_v3_sub(defo_v3_load(q), g), n);
            fg[2 * (size_t)f] = side > 0 ? -d : d;
            fg[2 * (size_t)f + 1] = 0.5 * defo_v3_norm(n);
        }
        memset(ng, 0, 2 * ((size_t)nn + 1) * sizeof *ng);
        for (int64_t f = 0; f < nbf; f++)
            for (int c = 0; c < 3; c++) {
                defo_index i = faces[3 * (size_t)f + (size_t)c];
                ng[2 * (size_t)i] += fg[2 * (size_t)f] * fg[2 * (size_t)f + 1];
                ng[2 * (size_t)i + 1] += fg[2 * (size_t)f + 1];
            }
        double vol = 0, lin = 0;
        s = defo_element_volume(m, NULL, &vol);
        if (s) break;
        for (defo_index i = 0; i < nn; i++) {
            if (!(ng[2 * (size_t)i + 1] > 0)) continue;
            ng[2 * (size_t)i] /= ng[2 * (size_t)i + 1]; /* area-weighted mean depth */
            lin += ng[2 * (size_t)i] * ng[2 * (size_t)i + 1] / 3;
        }
        /* δ_i = −κ ḡ_i: ΔV = Σ δ_i A_i/3 = −κ lin */
        if (!(fabs(lin) > 0)) break;
        /* without a trustworthy enclosed volume (holes, self-intersections,
         * non-manifold edges), the chord error of a quadratic patch alone:
         * its mean depth over a triangle is 3/4 of the centroid's */
        double kappa = exact_volume ? fmax(-4.0, fmin(4.0, -(surface_volume - vol) / lin)) : 0.75;
        memcpy(x0, m->x, 3 * (size_t)nn * sizeof *x0);
        double offset = *max_offset;
        int64_t moved = 0;
        for (defo_index i = 0; i < nn; i++) {
            if (!(ng[2 * (size_t)i + 1] > 0)) continue;
            double delta = -kappa * ng[2 * (size_t)i];
            delta = fmax(-VOL_MAX_OFFSET * o->h, fmin(VOL_MAX_OFFSET * o->h, delta));
            if (fabs(delta) < 1e-6 * o->h) continue;
            defo_vec3 nrm = bd_normal(o, i);
            double *xi = m->x + 3 * (size_t)i, p[3];
            for (int k = 0; k < 3; k++) p[k] = xi[k] + delta * defo_v3_get(nrm, k);
            if (defo_surface_sdf_distance(o->sdf, p, NULL, NULL) > o->max_dist) continue;
            double th0, th;
            double need = fmin(star_qual(o, i, xi, &th0), o->target);
            double q = star_qual(o, i, p, &th);
            if (accept(o, q, th, need, th0)) {
                memcpy(xi, p, sizeof p);
                offset = fmax(offset, fabs(delta));
                moved++;
            }
        }
        /* the linearisation can overshoot on a coarse mesh of thin parts:
         * keep the pass only if it brought the volume closer */
        double vol1 = 0;
        s = defo_element_volume(m, NULL, &vol1);
        if (s || (exact_volume && !(fabs(surface_volume - vol1) < fabs(surface_volume - vol)))) {
            memcpy(m->x, x0, 3 * (size_t)nn * sizeof *x0);
            break;
        }
        *max_offset = offset;
        if (!moved || !exact_volume) break;
    }
    defo_free(fg);
    defo_free(ng);
    defo_free(x0);
    return s;
}

/* Apply a batch in place: free the dead tets' slots, put the new tets in
 * freed slots (last freed first) or at the end, update the incidence (a
 * full rebuild only when a node's room is exhausted), mark the touched
 * nodes dirty; the boundary faces are rebuilt when tets were removed. */
static defo_status apply_batch(opt *o, flip_batch *fb, defo_index ne0, int removed) {
    defo_mesh *m = o->m;
    int rebuild = 0;
    for (defo_index e = 0; e < ne0; e++) {
        if (!fb->dead[e]) continue;
        for (int c = 0; c < 4; c++) adj_remove(&o->ne, m->elems[4 * (size_t)e + (size_t)c], e);
        o->alive[e] = 0;
        o->tet_q[e] = INFINITY;
        o->free_e[o->n_free++] = e;
    }
    for (defo_index i = 0; i < m->num_nodes; i++) {
        o->dirty[i] |= fb->lock[i];
        o->gone[i] |= fb->gone[i];
    }
    for (int64_t k = 0; k < fb->n_add; k++) {
        defo_index e;
        if (o->n_free) {
            e = o->free_e[--o->n_free];
        } else {
            e = m->num_elems;
            if ((int64_t)e + 1 > o->cap_e) {
                int64_t nc = 2 * o->cap_e + 64;
                uint8_t *al = defo_realloc(o->alive, (size_t)nc);
                if (al) o->alive = al;
                double *q = defo_realloc(o->tet_q, (size_t)nc * sizeof *q);
                if (q) o->tet_q = q;
                defo_index *fr = defo_realloc(o->free_e, (size_t)nc * sizeof *fr);
                if (fr) o->free_e = fr;
                if (!al || !q || !fr) return defo_error_oom("mesher flips", (size_t)nc * 13);
                o->cap_e = nc;
            }
            defo_status s = defo_mesh_reserve(m, m->num_nodes, e + 1, m->num_tris);
            if (s) return s;
            if (m->elem_tag) m->elem_tag[e] = 0;
            m->num_elems = e + 1;
        }
        memcpy(m->elems + 4 * (size_t)e, fb->add + 4 * (size_t)k, 4 * sizeof *m->elems);
        o->alive[e] = 1;
        o->tet_q[e] = tet_q_of(m->x, m->elems + 4 * (size_t)e, o->alt_w);
        for (int c = 0; c < 4; c++)
            if (!adj_add(&o->ne, m->elems[4 * (size_t)e + (size_t)c], e, c)) rebuild = 1;
    }
    defo_status s = rebuild ? adj_build(o) : DEFO_OK;
    if (!s && removed) {
        opt_free_faces(o);
        s = build_bd_faces(o);
    }
    return s;
}

/* Drop the freed tet slots and the gone nodes (keeping the order of the
 * others), then rebuild the incidence and the boundary faces. */
static defo_status compact(opt *o) {
    defo_mesh *m = o->m;
    defo_index *map = defo_malloc(((size_t)m->num_nodes + 1) * sizeof *map);
    if (!map) return defo_error_oom("mesher optimisation", (size_t)m->num_nodes * sizeof *map);
    defo_index nn = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        map[i] = o->gone[i] ? -1 : nn;
        if (o->gone[i]) continue;
        memmove(m->x + 3 * (size_t)nn, m->x + 3 * (size_t)i, 3 * sizeof *m->x);
        o->is_bd[nn] = o->is_bd[i];
        o->on_surf[nn] = o->on_surf[i];
        o->dirty[nn] = o->dirty[i];
        o->gone[nn] = 0;
        nn++;
    }
    m->num_nodes = nn;
    defo_index ne = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        if (!o->alive[e]) continue;
        for (int c = 0; c < 4; c++)
            m->elems[4 * (size_t)ne + (size_t)c] = map[m->elems[4 * (size_t)e + (size_t)c]];
        o->tet_q[ne] = o->tet_q[e];
        o->alive[ne] = 1;
        ne++;
    }
    m->num_elems = ne;
    o->n_free = 0;
    defo_free(map);
    return opt_topology(o, 1);
}

/* Rounds of steps 1-2 until none applies (at most max_rounds). */
static defo_status ops_rounds(opt *o, int max_rounds, int64_t *n_ops, int64_t *n_removed) {
    defo_status s = DEFO_OK;
    for (int round = 0; round < max_rounds && !s; round++) {
        flip_batch fb;
        memset(&fb, 0, sizeof fb);
        fb.dead = defo_calloc((size_t)o->m->num_elems + 1, 1);
        fb.lock = defo_calloc(2 * ((size_t)o->m->num_nodes + 1), 1);
        if (!fb.dead || !fb.lock) s = defo_error_oom("mesher flips", (size_t)o->m->num_elems);
        int64_t removed = 0, n = 0;
        const defo_index ne0 = o->m->num_elems;
        if (!s) {
            fb.gone = fb.lock + o->m->num_nodes + 1;
            n = ops_round(o, &fb, 1, &removed, &s);
        }
        if (!s && n) s = apply_batch(o, &fb, ne0, removed > 0);
        *n_ops += n - removed;
        *n_removed += removed;
        defo_free(fb.dead);
        defo_free(fb.lock);
        defo_free(fb.add);
        if (!n) break;
    }
    return s;
}

/* Sweeps of steps 1-4 until no tet is below the target or nothing
 * changes (at most max_sweeps). */
static defo_status sweeps(opt *o, int max_sweeps, defo_mesher_report *rep) {
    defo_mesh *m = o->m;
    defo_status s = DEFO_OK;
    for (int sweep = 0; !s && sweep < max_sweeps; sweep++) {
        int64_t changed = 0, nops = 0, nrem = 0;
        s = ops_rounds(o, 4, &nops, &nrem);
        if (s) break;
        rep->optimize_flips += nops;
        rep->optimize_deleted += nrem;
        changed += nops + nrem;
        s = smooth_pass(o, &changed);
        if (s) break;
        for (defo_index i = 0; i < m->num_nodes; i++)
            if (o->is_bd[i] && !o->on_surf[i]) changed += resnap_node(o, i);
        rep->optimize_sweeps++;
        rep->optimize_moves += changed - nops - nrem;
        int64_t below = 0;
        for (defo_index e = 0; e < m->num_elems; e++) below += o->tet_q[e] < o->target;
        if (!changed || !below) break;
    }
    return s;
}

defo_status mesher_optimize(const defo_surface_sdf *sdf, defo_mesh *m, uint8_t *is_bd,
                            uint8_t *on_surf, double h, double target_deg, double alt_frac,
                            double max_dist, defo_mesher_report *rep) {
    opt o;
    memset(&o, 0, sizeof o);
    o.sdf = sdf;
    o.m = m;
    o.is_bd = is_bd;
    o.on_surf = on_surf;
    o.h = h;
    o.max_dist = max_dist;
    /* a hair above the target so the reported angle (computed another way) is >= it */
    o.target = (target_deg + 1e-6) * PI_D / 180;
    o.cap_e = (int64_t)m->num_elems + 64;
    o.tet_q = defo_malloc((size_t)o.cap_e * sizeof *o.tet_q);
    o.alive = defo_malloc((size_t)o.cap_e);
    o.free_e = defo_malloc((size_t)o.cap_e * sizeof *o.free_e);
    o.dirty = defo_malloc((size_t)m->num_nodes + 1);
    o.gone = defo_calloc((size_t)m->num_nodes + 1, 1);
    defo_status s = DEFO_OK;
    if (!o.tet_q || !o.alive || !o.free_e || !o.dirty || !o.gone)
        s = defo_error_oom("mesher optimisation", (size_t)m->num_elems * 21);
    if (!s) {
        memset(o.alive, 1, (size_t)o.cap_e);
        s = opt_topology(&o, 1);
    }
    if (!s) {
        memset(o.dirty, 1, (size_t)m->num_nodes + 1);
        all_tet_q(&o);
    }
    /* phase 0: the angles alone; phase 1: the altitudes too, the angles
     * kept >= the target (accept) */
    for (int phase = 0; phase < 2 && !s; phase++) {
        o.alt_w = phase ? o.target / (alt_frac * h) : 0;
        if (phase && !(alt_frac > 0)) break;
        if (phase) {
            memset(o.dirty, 1, (size_t)m->num_nodes + 1);
            all_tet_q(&o);
        }
        s = sweeps(&o, phase ? SWEEPS_ALT : SWEEPS, rep);
    }
    const defo_surface_info *si = &rep->surface;
    const int exact = si->open_edges == 0 && si->nonmanifold_edges == 0 &&
                      si->self_intersections == 0 && si->volume != 0;
    if (!s) s = compact(&o);
    if (!s) s = volume_correction(&o, rep->surface_volume, exact, &rep->volume_offset);
    defo_free(o.tet_q);
    defo_free(o.alive);
    defo_free(o.free_e);
    defo_free(o.dirty);
    defo_free(o.gone);
    opt_free_topology(&o);
    return s;
}
