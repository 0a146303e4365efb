/*
 * collision/contact_response.c — what contact pairs do (defo/contact.h):
 * penalty forces for the Newton solves, impulses for the explicit steppers,
 * and the step bound of the Newton line search.
 *
 * Every response works through a pair's linearisation φ(x) = n·Σ wₐxₐ (+ its
 * kept depth), exact for a vertex over a face's interior and to first order
 * elsewhere, whose gradient Σ wₐ eₐ ⊗ n has Σ wₐ = 0.
 *
 * Penalty (TSIF05 §10): ψ = ½ k (δ − φ)² while φ < δ; fₐ = k (δ − φ) wₐ n.
 * The forces sum to zero and, n being parallel to p − q, have no moment:
 * the pair keeps linear and angular momentum.
 *
 * Impulses (ITF04 §9 with the surface of another body in place of a rigid
 * object): with W = Σ wₐ² / mₐ (inverse masses; a prescribed node has none)
 *   position  J_x = (δ − φ)/W when φ < δ:  xₐ += wₐ J_x n / mₐ,
 *   normal    J = −v_N / W when the relative normal velocity v_N =
 *             n·Σ wₐvₐ < 0 (approaching): vₐ += wₐ J n / mₐ (inelastic),
 *   friction  the relative tangential velocity v_T = Σ wₐvₐ − v_N n is reduced
 *             by the impulse min(μ (J + J_x/τ), |v_T|/W) against it — Coulomb,
 *             with the position's impulse counted over the friction time τ as
 *             ITF04 does for colliders; it never reverses the slip.
 * Each impulse moves Σ mₐ Δvₐ = J n Σ wₐ = 0: linear momentum is kept to
 * rounding.  Pairs are swept in order (Gauss–Seidel), a fixed order: the
 * same input gives the same bits.
 *
 * Step bound: the Newton solves must not carry a vertex through a body in one
 * step.  A signed (closed) surface is at least an element thick, so a vertex
 * moving less than half a mean edge relative to it cannot pass through it
 * (it may enter; the signed penalty then pushes it back out); a two-sided
 * surface has no thickness, so relative motion must stay below 0.9 of the
 * current distance (conservative advancement).  Relative motion is bounded
 * by |Δp| + the largest displacement of the other surface's nodes.
 */
#include "collision/contact_internal.h"

#include "base/parallel.h"

#include <math.h>
#include <string.h>

static double pair_phi(const defo_contact_pair *p, const double *const *x) {
    double s[3] = {0, 0, 0};
    for (int a = 0; a < 4; a++) {
        const double *xa = x[p->surface[p->side[a]]] + 3 * (size_t)p->node[a];
        for (int k = 0; k < 3; k++) s[k] += p->w[a] * xa[k];
    }
    return p->n[0] * s[0] + p->n[1] * s[1] + p->n[2] * s[2] + p->kept;
}

void defo_contact_penalty(const defo_contact_pair *pairs, size_t count, const double *const *x,
                          double *energy, double *const *force, double *depth) {
    double e = 0, deep = 0;
    for (size_t i = 0; i < count; i++) {
        const defo_contact_pair *p = &pairs[i];
        const double phi = pair_phi(p, x);
        if (-(phi - p->kept) > deep) deep = -(phi - p->kept);
        const double gap = p->delta - phi;
        if (!(gap > 0)) continue;
        e += 0.5 * p->k * gap * gap;
        for (int a = 0; a < 4; a++) {
            double *f = force ? force[p->surface[p->side[a]]] : NULL;
            if (!f) continue;
            const double c = p->k * gap * p->w[a];
            for (int k = 0; k < 3; k++) f[3 * (size_t)p->node[a] + (size_t)k] += c * p->n[k];
        }
    }
    if (energy) *energy += e;
    if (depth) *depth = deep;
}

size_t defo_contact_respond(const defo_contact_pair *pairs, size_t count, double *const *x,
                            double *const *v, const double *const *inv_mass, double tau,
                            int positions, int sweeps) {
    size_t acted = 0;
    for (int sweep = 0; sweep < sweeps; sweep++) {
        acted = 0;
        for (size_t i = 0; i < count; i++) {
            const defo_contact_pair *p = &pairs[i];
            double *xa[4], *va[4], im[4], W = 0;
            for (int a = 0; a < 4; a++) {
                const int b = p->surface[p->side[a]];
                xa[a] = x[b] + 3 * (size_t)p->node[a];
                va[a] = v[b] + 3 * (size_t)p->node[a];
                im[a] = inv_mass[b][p->node[a]];
                W += p->w[a] * p->w[a] * im[a];
            }
            if (!(W > 0)) continue; /* every node prescribed */
            const double *n = p->n;
            double Jx = 0;
            if (positions) {
                const double phi = pair_phi(p, (const double *const *)x);
                /* a relative tolerance: a pair pushed to δ in a sweep stays
                 * acted on only when it moved back in */
                if (phi < p->delta * (1.0 - 1e-9)) {
                    Jx = (p->delta - phi) / W;
                    for (int a = 0; a < 4; a++)
                        for (int k = 0; k < 3; k++) xa[a][k] += p->w[a] * Jx * im[a] * n[k];
                }
            }
            double vr[3] = {0, 0, 0};
            for (int a = 0; a < 4; a++)
                for (int k = 0; k < 3; k++) vr[k] += p->w[a] * va[a][k];
            const double vn = vr[0] * n[0] + vr[1] * n[1] + vr[2] * n[2];
            double J = 0;
            if (vn < 0) {
                J = -vn / W;
                for (int a = 0; a < 4; a++)
                    for (int k = 0; k < 3; k++) va[a][k] += p->w[a] * J * im[a] * n[k];
            } else if (Jx == 0) {
                continue; /* separating and not overlapping: nothing to do */
            }
            acted++;
            /* friction against the tangential relative velocity */
            const double vnn = vn + J * W; /* the new relative normal velocity */
            double vt[3], lt = 0;
            for (int k = 0; k < 3; k++) {
                vt[k] = vr[k] + (vnn - vn) * n[k] - vnn * n[k];
                lt += vt[k] * vt[k];
            }
            lt = sqrt(lt);
            if (!(lt > 0) || !(p->mu > 0)) continue;
            double Jt = p->mu * (J + Jx / tau);
            if (Jt > lt / W) Jt = lt / W;
            for (int a = 0; a < 4; a++)
                for (int k = 0; k < 3; k++) va[a][k] -= p->w[a] * Jt * im[a] * vt[k] / lt;
        }
        if (!acted) break;
    }
    return acted;
}

/* ----------------------------------------------------------- step bound */
typedef struct sb_ctx {
    const defo_contact_surface *B;
    const double *dxb;
    const double *p;
    const double *dp; /* Δp (NULL: 0) */
    double limit;     /* allowed relative motion (signed surfaces) */
    double alpha;     /* running bound */
    defo_index self;  /* the vertex's node when B is its own surface, else −1 */
} sb_ctx;

static double norm3(const double *a) {
    return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
}

static int sb_visit(void *vctx, defo_index t) {
    sb_ctx *c = vctx;
    const defo_index *v = c->B->tri + 3 * (size_t)t;
    if (c->self >= 0 && (v[0] == c->self || v[1] == c->self || v[2] == c->self)) return 0;
    if (c->self >= 0 && defo_contact_excluded(c->B, 0, c->B->vert_of[c->self], t)) return 0;
    /* the relative motion of p and any point of the triangle is at most the
     * largest relative motion of p and a corner (a convex combination) */
    double l = 0;
    for (int a = 0; a < 3; a++) {
        double r[3];
        for (int k = 0; k < 3; k++)
            r[k] = (c->dp ? c->dp[k] : 0.0) - (c->dxb ? c->dxb[3 * (size_t)v[a] + k] : 0.0);
        l = fmax(l, norm3(r));
    }
    if (!(l > 0)) return 0;
    double lim = c->limit;
    if (c->B->two_sided) {
        double w[3];
        const double *x = c->B->x;
        const double d = sqrt(defo_point_triangle_closest(
            c->p, x + 3 * (size_t)v[0], x + 3 * (size_t)v[1], x + 3 * (size_t)v[2], w, NULL));
        lim = 0.9 * d;
    }
    if (c->alpha * l > lim) c->alpha = lim / l;
    return 0;
}

double defo_contact_step_bound(const defo_contact_body *bodies, int count,
                               const double *const *dx) {
    double alpha = 1.0;
    if (!bodies || count <= 0 || !dx) return alpha;
    for (int ia = 0; ia < count; ia++) {
        const defo_contact_surface *A = bodies[ia].surface;
        const double *dxa = dx[ia];
        for (int ib = 0; ib < count; ib++) {
            const defo_contact_surface *B = bodies[ib].surface;
            if (ia == ib && !A->self_contact) continue;
            const double *dxb = dx[ib];
            if (!dxa && !dxb) continue;
            /* B's largest surface displacement grows its box */
            double mb = 0, ma = 0;
            if (dxb)
                for (defo_index v = 0; v < B->nv; v++)
                    mb = fmax(mb, norm3(dxb + 3 * (size_t)B->vert[v]));
            if (dxa)
                for (defo_index v = 0; v < A->nv; v++)
                    ma = fmax(ma, norm3(dxa + 3 * (size_t)A->vert[v]));
            double ab[6], bb[6];
            defo_contact_surface_bounds(A, ab);
            defo_contact_surface_bounds(B, bb);
            const double grow = ma + mb;
            if (!(ab[0] <= bb[3] + grow && bb[0] <= ab[3] + grow && ab[1] <= bb[4] + grow &&
                  bb[1] <= ab[4] + grow && ab[2] <= bb[5] + grow && bb[2] <= ab[5] + grow))
                continue;
            sb_ctx c;
            c.B = B;
            c.dxb = dxb;
            c.limit = 0.5 * B->mean_edge;
            c.alpha = alpha;
            for (defo_index v = 0; v < A->nv; v++) {
                const defo_index node = A->vert[v];
                const double *p = bodies[ia].x + 3 * (size_t)node;
                const double *d = dxa ? dxa + 3 * (size_t)node : NULL;
                c.p = p;
                c.dp = d;
                c.self = ia == ib ? node : -1;
                /* the swept vertex, grown by what B's nodes may move and the reach */
                const double g = mb + B->reach;
                double q[6];
                for (int k = 0; k < 3; k++) {
                    const double e = d ? p[k] + d[k] : p[k];
                    q[k] = fmin(p[k], e) - g;
                    q[3 + k] = fmax(p[k], e) + g;
                }
                defo_bvh_query(B->tri_bvh, q, sb_visit, &c);
            }
            alpha = c.alpha;
        }
    }
    return alpha;
}
