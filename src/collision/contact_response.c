/*
 * collision/contact_response.c — what contact pairs do (defo/contact.h):
 * the energy of the Newton solves, the impulses of the explicit steppers,
 * and the step bound of the Newton line search.
 *
 * Every response works through a pair's linearisation φ(x) = n·Σ wₐxₐ (+ its
 * kept depth), exact where the pair was detected, whose gradient
 * Σ wₐ eₐ ⊗ n has Σ wₐ = 0.
 *
 * Energy: barrier pairs ψ = k δ² b(φ/δ), b(u) = −(u − 1)² ln u (IPC, Li et
 * al. 2020), so ψ' = k δ b'(u), ψ'' = k b''(u); signed pairs the penalty
 * ψ = ½ k (δ − φ)² while φ < δ (TSIF05 §10).  Forces fₐ = −ψ'(φ) wₐ n sum to
 * zero and, n being parallel to p − q, have no moment: a pair keeps linear
 * and angular momentum.
 *
 * Impulses (ITF04 §9 with the surface of another body in place of a rigid
 * object): with W = Σ wₐ² / mₐ (inverse masses; a prescribed node has none)
 *   position  J_x = −φ/W when φ < 0 (φ with the kept offset: the caller
 *             sets the target gap):  xₐ += wₐ J_x n / mₐ,
 *   normal    J = −v_N / W when the relative normal velocity v_N =
 *             n·Σ wₐvₐ < 0 (approaching): vₐ += wₐ J n / mₐ (inelastic),
 *   friction  the relative tangential velocity v_T = Σ wₐvₐ − v_N n is reduced
 *             against it, the friction impulse summed over the sweeps held
 *             within μ (ΣJ + ΣJ_x/τ) — Coulomb, with the position's impulse
 *             counted over the friction time τ as ITF04 does for colliders;
 *   and, given the step's start, the relative tangential displacement over
 *             the step likewise within μ ΣJ_x (Coulomb on positions).
 * Each impulse moves Σ mₐ Δvₐ = J n Σ wₐ = 0: linear momentum is kept to
 * rounding.  Sweeps are Jacobi (every pair from the same state, each
 * relaxed by 1/the most pairs at one of its nodes): no pair goes first, so
 * mirror images stay mirrored, and the same input gives the same bits.
 *
 * Step bound: additive CCD (Li, Kaufman, Jiang 2021) over every vertex–
 * triangle and edge–edge pair whose boxes, swept along the step and grown by
 * the thickness, meet: the step is cut to the smallest fraction at which a
 * pair's distance could fall below a tenth of what it is now, so the
 * barrier's distances stay positive along every line search.
 */
#include "collision/contact_internal.h"

#include "base/parallel.h"

#include <math.h>
#include <string.h>

/* pair_work per pair: this sweep's J_x, J, friction (3, velocity),
 * friction (3, position), relaxation ω; then what the sweeps applied: the
 * normal impulses ΣωJ_x, ΣωJ and the friction vectors */
#define PW 17
#define OX 9
#define OV 10
#define TV 11
#define TX 14

static double pair_phi(const defo_contact_pair *p, const double *const *x) {
    double s[3] = {0, 0, 0};
    for (int a = 0; a < 4; a++) {
        const double *xa = x[p->surface[p->side[a]]] + 3 * (size_t)p->node[a];
        for (int k = 0; k < 3; k++) s[k] += p->w[a] * xa[k];
    }
    return p->n[0] * s[0] + p->n[1] * s[1] + p->n[2] * s[2] + p->kept;
}

/* The barrier b(u) = −(u − 1)² ln u on (0, 1) and its first two
 * derivatives (zero at u = 1 with b' and b''; b'' > 0). */
static void barrier(double u, double *b, double *b1, double *b2) {
    const double l = log(u), m = u - 1.0;
    *b = -m * m * l;
    *b1 = -2.0 * m * l - m * m / u;
    *b2 = -2.0 * l - 4.0 * m / u + m * m / (u * u);
}

void defo_contact_penalty(const defo_contact_pair *pairs, size_t count, const double *const *x,
                          double *energy, double *const *force, double *hess, double *depth) {
    double e = 0, deep = 0;
    for (size_t i = 0; i < count; i++) {
        const defo_contact_pair *p = &pairs[i];
        const double phi = pair_phi(p, x);
        double c1, c2; /* −ψ'(φ) and ψ''(φ) */
        if (p->barrier) {
            const double u = phi / p->delta;
            if (hess) hess[i] = 0;
            if (!(u < 1.0)) continue;
            if (!(u > 0.0)) { /* through the surface: no energy can say how far */
                e = INFINITY;
                continue;
            }
            double b, b1, b2;
            barrier(u, &b, &b1, &b2);
            e += p->k * p->delta * p->delta * b;
            c1 = -p->k * p->delta * b1;
            c2 = p->k * b2;
        } else {
            if (-(phi - p->kept) > deep) deep = -(phi - p->kept);
            const double gap = p->delta - phi;
            if (hess) hess[i] = 0;
            if (!(gap > 0)) continue;
            e += 0.5 * p->k * gap * gap;
            c1 = p->k * gap;
            c2 = p->k;
        }
        if (hess) hess[i] = c2;
        for (int a = 0; a < 4; a++) {
            double *f = force ? force[p->surface[p->side[a]]] : NULL;
            if (!f) continue;
            const double c = c1 * p->w[a];
            for (int k = 0; k < 3; k++) f[3 * (size_t)p->node[a] + (size_t)k] += c * p->n[k];
        }
    }
    if (energy) *energy += e;
    if (depth) *depth = deep;
}

void defo_contact_pair_curvature(const defo_contact_pair *p, const double *const *x, double S[9]) {
    if (!p->barrier || p->kind != 0) return;
    const double phi = pair_phi(p, x), u = phi / p->delta;
    if (!(u > 0.0 && u < 1.0)) return;
    /* the triangle's nodes that hold the closest point: one (a vertex),
     * two (an edge), three (its inside) */
    int on[3], m = 0;
    for (int a = 1; a < 4; a++)
        if (p->w[a] != 0.0) on[m++] = a;
    if (m == 0 || m == 3) return;
    double b, b1, b2;
    barrier(u, &b, &b1, &b2);
    const double c = p->k * p->delta * b1 / phi; /* ψ'(φ)/φ < 0 */
    double P[9];
    for (int r = 0; r < 3; r++)
        for (int q = 0; q < 3; q++) P[3 * r + q] = (r == q) - p->n[r] * p->n[q];
    if (m == 2) {
        const double *xa = x[p->surface[p->side[on[0]]]] + 3 * (size_t)p->node[on[0]];
        const double *xb = x[p->surface[p->side[on[1]]]] + 3 * (size_t)p->node[on[1]];
        double t[3] = {xb[0] - xa[0], xb[1] - xa[1], xb[2] - xa[2]};
        const double l = sqrt(t[0] * t[0] + t[1] * t[1] + t[2] * t[2]);
        if (!(l > 0.0)) return;
        for (int k = 0; k < 3; k++) t[k] /= l;
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++) P[3 * r + q] -= t[r] * t[q];
    }
    for (int k = 0; k < 9; k++) S[k] += c * P[k];
}

/* Friction of one pair in a sweep (projected Jacobi): the impulse vector
 * that would stop the slip s (tangential, per unit of W) is added to what
 * the pair has applied so far, acc, the sum clamped to the Coulomb bound;
 * out gets the increment. */
static void coulomb(const double s[3], double W, double bound, const double acc[3], double out[3]) {
    double T[3], l = 0;
    for (int k = 0; k < 3; k++) {
        T[k] = acc[k] + s[k] / W;
        l += T[k] * T[k];
    }
    l = sqrt(l);
    const double c = l > bound ? bound / l : 1.0;
    for (int k = 0; k < 3; k++) out[k] = c * T[k] - acc[k];
}

size_t defo_contact_respond(const defo_contact_pair *pairs, size_t count, double *const *x,
                            const double *const *x_start, double *const *v,
                            const double *const *inv_mass, double tau, int positions, int sweeps,
                            double *const *node_work, double *pair_work) {
    /* the relaxation of each pair: 1 / the most pairs at one of its nodes */
    for (size_t i = 0; i < count; i++)
        for (int a = 0; a < 4; a++)
            node_work[pairs[i].surface[pairs[i].side[a]]][pairs[i].node[a]] = 0;
    for (size_t i = 0; i < count; i++) {
        for (int a = 0; a < 4; a++)
            node_work[pairs[i].surface[pairs[i].side[a]]][pairs[i].node[a]] += 1;
        memset(pair_work + PW * i, 0, PW * sizeof *pair_work);
    }
    const int rub = positions && x_start;
    size_t acted = 0;
    /* friction sweeps, then (if they did not settle: friction along tilted
     * normals can feed approach back in) normal-only sweeps, which only push
     * apart and so settle as averaged projections do; the friction applied
     * stays within its bound, the normal impulses only growing */
    for (int sweep = 0, rubs = 1; sweep < 2 * sweeps; sweep++) {
        if (sweep == sweeps) {
            if (!acted) break;
            rubs = 0;
        }
        acted = 0;
        /* every pair's impulses from the same state */
        for (size_t i = 0; i < count; i++) {
            const defo_contact_pair *p = &pairs[i];
            double *o = pair_work + PW * i;
            memset(o, 0, 9 * sizeof *o);
            double W = 0, most = 1;
            double vr[3] = {0, 0, 0}, ur[3] = {0, 0, 0};
            for (int a = 0; a < 4; a++) {
                const int b = p->surface[p->side[a]];
                const double im = inv_mass[b][p->node[a]];
                W += p->w[a] * p->w[a] * im;
                if (im > 0) most = fmax(most, node_work[b][p->node[a]]);
                const double *va = v[b] + 3 * (size_t)p->node[a];
                for (int k = 0; k < 3; k++) vr[k] += p->w[a] * va[k];
                if (rub) {
                    const double *xa = x[b] + 3 * (size_t)p->node[a];
                    const double *sa = x_start[b] + 3 * (size_t)p->node[a];
                    for (int k = 0; k < 3; k++) ur[k] += p->w[a] * (xa[k] - sa[k]);
                }
            }
            if (!(W > 0)) continue; /* every node prescribed */
            const double *n = p->n;
            double Jx = 0;
            if (positions) {
                const double phi = pair_phi(p, (const double *const *)x);
                /* below its target (the surface, less a kept depth or
                 * plus a held gap): pushed back onto it */
                if (phi < -1e-9 * p->delta) Jx = -phi / W;
            }
            const double vn = vr[0] * n[0] + vr[1] * n[1] + vr[2] * n[2];
            const double J = vn < 0 ? -vn / W : 0.0;
            const double Nx = o[OX] + Jx, Nv = o[OV] + J; /* the normal impulses, this one's too */
            if (Nv == 0 && Nx == 0) continue;             /* separating and never overlapping */
            /* converged: no pair more than 1e-5 of its thickness through,
             * none approaching faster than that per τ */
            acted += Jx * W > 1e-5 * p->delta || J * W * tau > 1e-5 * p->delta;
            o[0] = Jx;
            o[1] = J;
            o[8] = 1.0 / most;
            if (!rubs || !(p->mu > 0)) continue;
            /* Coulomb against the relative tangential velocity, the bound
             * counting the position's impulse over the friction time τ */
            double t[3];
            for (int k = 0; k < 3; k++) t[k] = vr[k] - vn * n[k];
            coulomb(t, W, p->mu * (Nv + Nx / tau), o + TV, o + 2);
            /* and against the relative tangential displacement over the
             * step, at most μ times the normal push (a push along a normal
             * the mesh tilts, or a body's elastic bulge, would otherwise
             * walk a resting stack sideways however large μ is) */
            if (rub && Nx > 0) {
                const double un = ur[0] * n[0] + ur[1] * n[1] + ur[2] * n[2];
                for (int k = 0; k < 3; k++) t[k] = ur[k] - un * n[k];
                coulomb(t, W, p->mu * Nx, o + TX, o + 5);
            }
        }
        /* then applied, each relaxed: Σ mₐ Δvₐ = 0 pair by pair */
        for (size_t i = 0; i < count; i++) {
            const defo_contact_pair *p = &pairs[i];
            double *o = pair_work + PW * i;
            const double r = o[8];
            if (r == 0) continue;
            o[OX] += r * o[0];
            o[OV] += r * o[1];
            for (int k = 0; k < 3; k++) {
                o[TV + k] += r * o[2 + k];
                o[TX + k] += r * o[5 + k];
            }
            for (int a = 0; a < 4; a++) {
                const int b = p->surface[p->side[a]];
                const double im = inv_mass[b][p->node[a]] * r * p->w[a];
                if (im == 0) continue;
                double *xa = x[b] + 3 * (size_t)p->node[a], *va = v[b] + 3 * (size_t)p->node[a];
                for (int k = 0; k < 3; k++) {
                    xa[k] += im * (o[0] * p->n[k] - o[5 + k]);
                    va[k] += im * (o[1] * p->n[k] - o[2 + k]);
                }
            }
        }
        if (!acted) break;
    }
    return acted;
}

/* ------------------------------------------------------------ friction */
/* Two unit vectors completing n to an orthonormal frame (columns of T). */
static void tangent_plane(const double n[3], double T[6]) {
    double a[3] = {1, 0, 0};
    if (fabs(n[0]) > 0.6) a[0] = 0, a[1] = 1;
    double t1[3] = {n[1] * a[2] - n[2] * a[1], n[2] * a[0] - n[0] * a[2],
                    n[0] * a[1] - n[1] * a[0]};
    const double l = sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2]);
    for (int k = 0; k < 3; k++) t1[k] /= l;
    const double t2[3] = {n[1] * t1[2] - n[2] * t1[1], n[2] * t1[0] - n[0] * t1[2],
                          n[0] * t1[1] - n[1] * t1[0]};
    for (int k = 0; k < 3; k++) {
        T[2 * k] = t1[k];
        T[2 * k + 1] = t2[k];
    }
}

defo_status defo_contact_friction_lag(const defo_contact_pair *pairs, size_t count,
                                      const double *const *x, double eps_rel,
                                      defo_contact_friction **out, size_t *num, size_t *cap) {
    if (!(eps_rel > 0)) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "friction: eps %g", eps_rel);
    for (size_t i = 0; i < count; i++) {
        const defo_contact_pair *p = &pairs[i];
        if (!(p->mu > 0)) continue;
        const double phi = pair_phi(p, x);
        double lambda = 0;
        if (p->barrier) {
            const double u = phi / p->delta;
            if (!(u > 0 && u < 1)) continue;
            double b, b1, b2;
            barrier(u, &b, &b1, &b2);
            lambda = -p->k * p->delta * b1;
        } else {
            if (!(phi < p->delta)) continue;
            lambda = p->k * (p->delta - phi);
        }
        if (!(lambda > 0)) continue;
        if (*num == *cap) {
            size_t c = *cap ? 2 * *cap : 256;
            defo_contact_friction *nf = defo_realloc(*out, c * sizeof *nf);
            if (!nf) return defo_error_oom("friction", c * sizeof *nf);
            *out = nf;
            *cap = c;
        }
        defo_contact_friction *f = &(*out)[(*num)++];
        memset(f, 0, sizeof *f);
        f->surface[0] = p->surface[0];
        f->surface[1] = p->surface[1];
        for (int a = 0; a < 4; a++) {
            f->side[a] = p->side[a];
            f->node[a] = p->node[a];
            f->w[a] = p->w[a];
            const double *xa = x[p->surface[p->side[a]]] + 3 * (size_t)p->node[a];
            for (int k = 0; k < 3; k++) f->r0[k] += p->w[a] * xa[k];
        }
        tangent_plane(p->n, f->T);
        f->force = lambda;
        f->mu = p->mu;
        f->eps = eps_rel * p->delta;
    }
    return DEFO_OK;
}

void defo_contact_friction_eval(const defo_contact_friction *fr, size_t count,
                                const double *const *x, double *energy, double *const *force,
                                double *S) {
    double e = 0;
    for (size_t i = 0; i < count; i++) {
        const defo_contact_friction *f = &fr[i];
        double r[3] = {-f->r0[0], -f->r0[1], -f->r0[2]};
        for (int a = 0; a < 4; a++) {
            const double *xa = x[f->surface[f->side[a]]] + 3 * (size_t)f->node[a];
            for (int k = 0; k < 3; k++) r[k] += f->w[a] * xa[k];
        }
        const double *T = f->T;
        const double u[2] = {T[0] * r[0] + T[2] * r[1] + T[4] * r[2],
                             T[1] * r[0] + T[3] * r[1] + T[5] * r[2]};
        const double y = sqrt(u[0] * u[0] + u[1] * u[1]), ep = f->eps, c = f->mu * f->force;
        double f0, f1, f1p;
        if (y >= ep) {
            f0 = y, f1 = 1, f1p = 0;
        } else {
            f0 = -y * y * y / (3 * ep * ep) + y * y / ep + ep / 3;
            f1 = -y * y / (ep * ep) + 2 * y / ep;
            f1p = -2 * y / (ep * ep) + 2 / ep;
        }
        e += c * f0;
        /* −∇D = −c f₁(y)/y T u per unit weight (y → 0: f₁/y → 2/ε) */
        const double g = y > 0 ? f1 / y : 2 / ep;
        const double tu[3] = {T[0] * u[0] + T[1] * u[1], T[2] * u[0] + T[3] * u[1],
                              T[4] * u[0] + T[5] * u[1]};
        if (force)
            for (int a = 0; a < 4; a++) {
                double *fa = force[f->surface[f->side[a]]];
                if (!fa) continue;
                for (int k = 0; k < 3; k++)
                    fa[3 * (size_t)f->node[a] + (size_t)k] -= c * g * f->w[a] * tu[k];
            }
        if (S) {
            /* in the plane: M = f₁' ûûᵀ + (f₁/y)(I − ûûᵀ); S = c T M Tᵀ */
            double M[4];
            if (y > 0) {
                const double uh[2] = {u[0] / y, u[1] / y};
                for (int p = 0; p < 2; p++)
                    for (int q = 0; q < 2; q++)
                        M[2 * p + q] = f1p * uh[p] * uh[q] + g * ((p == q) - uh[p] * uh[q]);
            } else {
                M[0] = M[3] = 2 / ep;
                M[1] = M[2] = 0;
            }
            double *o = S + 9 * i;
            for (int p = 0; p < 3; p++)
                for (int q = 0; q < 3; q++) {
                    double v = 0;
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++) v += T[2 * p + a] * M[2 * a + b] * T[2 * q + b];
                    o[3 * p + q] = c * v;
                }
        }
    }
    if (energy) *energy += e;
}

/* ----------------------------------------------------------- step bound */
/* Additive CCD (Li, Kaufman, Jiang 2021, "Codimensional Incremental
 * Potential Contact", Alg. 1) of one pair of primitives: the four nodes at
 * x[0..3] move by dx[0..3] (vertex + triangle: 1 + 3; two edges: 2 + 2).
 * With the displacements centred and l_p bounding how fast the distance can
 * shrink, the pair advances by steps (1 − s)·d/l_p, then 0.9·d/l_p, each
 * certain not to close the gap, until its distance falls below s·d₀ or the
 * whole step (1) is covered.  Returns the fraction of the step that keeps
 * the distance above s·d₀. */
#define ACCD_S        0.1
#define ACCD_MAX_ITER 200

static double pair_dist(int kind, double y[4][3]) {
    double w[3], s, t;
    if (kind == 0) return sqrt(defo_point_triangle_closest(y[0], y[1], y[2], y[3], w, NULL));
    return sqrt(defo_segment_segment_closest(y[0], y[1], y[2], y[3], &s, &t));
}

static double accd(int kind, const double *const x[4], const double *const dx[4]) {
    double p[4][3], m[3] = {0, 0, 0};
    for (int a = 0; a < 4; a++)
        for (int k = 0; k < 3; k++) m[k] += 0.25 * (dx[a] ? dx[a][k] : 0.0);
    for (int a = 0; a < 4; a++)
        for (int k = 0; k < 3; k++) p[a][k] = (dx[a] ? dx[a][k] : 0.0) - m[k];
    const int split = kind == 0 ? 1 : 2;
    double l1 = 0, l2 = 0;
    for (int a = 0; a < 4; a++) {
        const double l = sqrt(p[a][0] * p[a][0] + p[a][1] * p[a][1] + p[a][2] * p[a][2]);
        if (a < split)
            l1 = fmax(l1, l);
        else
            l2 = fmax(l2, l);
    }
    const double lp = l1 + l2;
    if (!(lp > 0)) return 1.0;
    double y[4][3];
    for (int a = 0; a < 4; a++)
        for (int k = 0; k < 3; k++) y[a][k] = x[a][k];
    double d = pair_dist(kind, y);
    const double g = ACCD_S * d;
    double t = 0, tl = (1.0 - ACCD_S) * d / lp;
    for (int it = 0; it < ACCD_MAX_ITER; it++) {
        for (int a = 0; a < 4; a++)
            for (int k = 0; k < 3; k++) y[a][k] = x[a][k] + (t + tl) * (dx[a] ? dx[a][k] : 0.0);
        d = pair_dist(kind, y);
        if (t > 0 && d < g) return t;
        t += tl;
        if (t >= 1.0) return 1.0;
        tl = 0.9 * d / lp;
    }
    return t;
}

typedef struct sb_ctx {
    const defo_contact_body *ba, *bb;
    int ia, ib;
    const double *dxa, *dxb;
    defo_index item; /* vertex (node) or edge of A */
    double alpha;
} sb_ctx;

static int inside_of(const defo_contact_surface *S, defo_index node, int other) {
    if (!S->any_inside) return 0;
    const defo_index v = S->vert_of[node];
    return v >= 0 && S->inside[v] == other;
}

static int sb_tri(void *vctx, defo_index t) {
    sb_ctx *c = vctx;
    const defo_contact_surface *A = c->ba->surface, *B = c->bb->surface;
    const defo_index *v = B->tri + 3 * (size_t)t;
    const defo_index node = c->item;
    if (A == B) {
        if (v[0] == node || v[1] == node || v[2] == node) return 0;
        if (defo_contact_excluded(B, 0, A->vert_of[node], t)) return 0;
    }
    for (int a = 0; a < 3; a++)
        if (inside_of(B, v[a], c->ia)) return 0;
    const double *x[4] = {c->ba->x + 3 * (size_t)node, c->bb->x + 3 * (size_t)v[0],
                          c->bb->x + 3 * (size_t)v[1], c->bb->x + 3 * (size_t)v[2]};
    const double *d[4] = {
        c->dxa ? c->dxa + 3 * (size_t)node : NULL, c->dxb ? c->dxb + 3 * (size_t)v[0] : NULL,
        c->dxb ? c->dxb + 3 * (size_t)v[1] : NULL, c->dxb ? c->dxb + 3 * (size_t)v[2] : NULL};
    const double a = accd(0, x, d);
    if (a < c->alpha) c->alpha = a;
    return 0;
}

static int sb_edge(void *vctx, defo_index e2) {
    sb_ctx *c = vctx;
    const defo_contact_surface *A = c->ba->surface, *B = c->bb->surface;
    if (A == B && e2 <= c->item) return 0;
    const defo_index *ea = A->edge + 2 * (size_t)c->item, *eb = B->edge + 2 * (size_t)e2;
    if (A == B) {
        if (ea[0] == eb[0] || ea[0] == eb[1] || ea[1] == eb[0] || ea[1] == eb[1]) return 0;
        if (defo_contact_excluded(A, 1, c->item, e2)) return 0;
    }
    if (inside_of(A, ea[0], c->ib) || inside_of(A, ea[1], c->ib) || inside_of(B, eb[0], c->ia) ||
        inside_of(B, eb[1], c->ia))
        return 0;
    const double *x[4] = {c->ba->x + 3 * (size_t)ea[0], c->ba->x + 3 * (size_t)ea[1],
                          c->bb->x + 3 * (size_t)eb[0], c->bb->x + 3 * (size_t)eb[1]};
    const double *d[4] = {
        c->dxa ? c->dxa + 3 * (size_t)ea[0] : NULL, c->dxa ? c->dxa + 3 * (size_t)ea[1] : NULL,
        c->dxb ? c->dxb + 3 * (size_t)eb[0] : NULL, c->dxb ? c->dxb + 3 * (size_t)eb[1] : NULL};
    const double a = accd(1, x, d);
    if (a < c->alpha) c->alpha = a;
    return 0;
}

static int box_meets(const double a[6], const double b[6]) {
    return a[0] <= b[3] && b[0] <= a[3] && a[1] <= b[4] && b[1] <= a[4] && a[2] <= b[5] &&
           b[2] <= a[5];
}

static double norm3(const double *a) {
    return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

static double max_disp(const defo_contact_surface *S, const double *dx) {
    double m = 0;
    if (!dx) return 0;
    for (defo_index v = 0; v < S->nv; v++) m = fmax(m, norm3(dx + 3 * (size_t)S->vert[v]));
    return m;
}

/* The box of a primitive moved from x by dx (NULL: not moving), grown. */
static void swept(const double *x, const double *dx, const defo_index *nodes, int count,
                  double grow, double q[6]) {
    for (int k = 0; k < 3; k++) q[k] = INFINITY, q[3 + k] = -INFINITY;
    for (int a = 0; a < count; a++) {
        const double *p = x + 3 * (size_t)nodes[a];
        for (int k = 0; k < 3; k++) {
            const double e = dx ? p[k] + dx[3 * (size_t)nodes[a] + k] : p[k];
            q[k] = fmin(q[k], fmin(p[k], e) - grow);
            q[3 + k] = fmax(q[3 + k], fmax(p[k], e) + grow);
        }
    }
}

double defo_contact_step_bound(const defo_contact_body *bodies, int count,
                               const double *const *dx) {
    double alpha = 1.0;
    if (!bodies || count <= 0 || !dx) return alpha;
    /* each surface's largest move once (not once per pair of surfaces) */
    for (int ia = 0; ia < count; ia++)
        bodies[ia].surface->disp = max_disp(bodies[ia].surface, dx[ia]);
    for (int ia = 0; ia < count; ia++) {
        const defo_contact_surface *A = bodies[ia].surface;
        const double *dxa = dx[ia];
        const double ma = A->disp;
        for (int ib = 0; ib < count; ib++) {
            const defo_contact_surface *B = bodies[ib].surface;
            if (ia == ib && !A->self_contact) continue;
            const double *dxb = dx[ib];
            if (!dxa && !dxb) continue;
            const double mb = B->disp;
            double ab[6], bb[6];
            defo_contact_surface_bounds(A, ab);
            defo_contact_surface_bounds(B, bb);
            const double grow = ma + mb;
            if (!(ab[0] <= bb[3] + grow && bb[0] <= ab[3] + grow && ab[1] <= bb[4] + grow &&
                  bb[1] <= ab[4] + grow && ab[2] <= bb[5] + grow && bb[2] <= ab[5] + grow))
                continue;
            sb_ctx c = {&bodies[ia], &bodies[ib], ia, ib, dxa, dxb, 0, alpha};
            /* vertices of A against B's triangles: the swept vertex grown by
             * what B's nodes may move and the thickness */
            const double g = mb + fmax(A->thickness, B->thickness);
            for (defo_index v = 0; v < A->nv; v++) {
                const defo_index node = A->vert[v];
                if (inside_of(A, node, ib)) continue;
                double q[6];
                swept(bodies[ia].x, dxa, &node, 1, g, q);
                if (!box_meets(q, B->box)) continue; /* the hierarchy's root refuses it */
                defo_contact_surface_refit(bodies[ib].surface);
                c.item = node;
                defo_bvh_query(B->tri_bvh, q, sb_tri, &c);
            }
            /* edges, once per unordered pair: for two-sided surfaces only
             * (a closed surface is at least an element thick: its vertices
             * and triangles hold it; the barrier takes no edge pairs) */
            if (ib >= ia && (A->two_sided || B->two_sided)) {
                for (defo_index e = 0; e < A->ne; e++) {
                    double q[6];
                    swept(bodies[ia].x, dxa, A->edge + 2 * (size_t)e, 2, g, q);
                    if (!box_meets(q, B->box)) continue;
                    defo_contact_surface_refit(bodies[ib].surface);
                    c.item = e;
                    defo_bvh_query(B->edge_bvh, q, sb_edge, &c);
                }
            }
            alpha = c.alpha;
        }
    }
    return alpha;
}
