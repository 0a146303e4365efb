/*
 * plasticity/plasticity.c — the plasticity object (defo/plasticity.h): the
 * per-point state of any model, the parameter sets, the update driver, the
 * plastic parts handed to the force model, plasticity control's goal,
 * annealing's commit, and the state's bytes for checkpoints.
 *
 * An update: F_e = F F_p⁻¹ at every point (defo_force_model_deformation),
 * then per point, in parallel: a cheap bound clears most elastic points —
 * with C = F_eᵀF_e and d = ‖C − I‖ < 1, every |log σ_i| ≤ ½|c_i − 1|/(1 − d),
 * so ‖ε_e‖ ≤ ½ d/(1 − d) (ε_e = log of F_e's stretch), and a point whose
 * bound is within its model's elastic radius cannot flow; the others run
 * their model's return map (ops table, plasticity_internal.h), which writes
 * a changed point's F_p⁻¹ = exp(−L_p) from the eigendecomposition it made
 * L_p with; the force model is told which points changed.  After a
 * parameter change every point runs its return map once (max and limit
 * apply everywhere).  A solid's points that run their return maps go in
 * batches of PLAST_LANES (flow_batch): each model's map is two halves around
 * its flow (plast_trial), so the batch's decompositions of C = F_eᵀF_e and of
 * the flowed plastic stretch each run in the lanes of one vectorised
 * eigen-solver (sym_eig.c); the arithmetic per point is that of one point
 * alone (defo_plast_flow, which shells take), so batches change no bit.
 *
 * Shells (tri3, bound to a shell force model): the return maps run in the
 * triangle's rest plane (plast_point n = 2: L_p and F_p⁻¹ in the rest
 * plane, F_e = diag(F₂, 1) from the force model), and after them each
 * hinge's plastic bending strain flows (MG04 §3 on the bending strain the
 * force model measures; the force model borrows the array as its rest
 * angles' plastic part), whatever the in-plane model.  von_mises there is
 * the plane-stress return map (von_mises.c), with the element's λ*.
 *
 * tet4 solids: after the return maps, volume-keeping flow trades volume
 * between elements over node patches (patch_volume: the locking fix; without
 * memory for its sums the elements keep their own volume, counted in the
 * stats as unpatched).
 *
 * Invariants: F_p⁻¹ = exp(−L_p) at every point (saved with the state: a
 * restore gives back the same bits); det F_p = exp(tr L_p) within
 * [1/limit, limit]; per-point work, fixed-order reductions: bitwise
 * identical for any thread count.
 */
#include "plasticity/plasticity_internal.h"

#include "base/parallel.h"

struct defo_plasticity {
    defo_index num_elems;
    int points;
    int num_sets;
    defo_plasticity_def *defs;
    int32_t *set_of;      /* per element, NULL: every element in set 0 */
    double *state;        /* PLAST_STATE per point */
    double *fpi;          /* 9 per point: F_p⁻¹ = exp(−L_p) */
    double *F;            /* 9 per point: scratch, F_e */
    unsigned char *flags; /* per point: PLAST_* of the last update */
    unsigned char *changed;
    double *goal_F; /* 9 per point: the goal's deformation gradient, NULL: no goal */
    double *goal_L; /* 6 per point: log of its stretch */
    int dirty;      /* parameters changed: every point runs its return map once */
    /* shells (tri3): points in the rest plane, plastic bending per hinge */
    int plane;
    defo_index nh;               /* hinges (−1: not yet known: before the first bind) */
    double *bend;                /* nh: plastic bending strain ε_b,p */
    double *bstrain;             /* nh: scratch, the bending strain ε_b */
    const defo_index *hinge_tri; /* borrowed from the bound force model: 2 per hinge */
    /* tet4 solids: volume over node patches (patch_volume) */
    double *pv;                /* 2 per element: P_e (0: not in a patch), J_e */
    double *pn;                /* 2 per node: Σ P_e J_e / 4, Σ P_e / 4 */
    defo_index pnodes, pelems; /* nodes pn, elements pv hold */
    int batched;               /* solids' return maps in batches (flow_batch) */
};

/* ------------------------------------------------------------ defs */
defo_plasticity_def defo_default_plasticity_def(void) {
    defo_plasticity_def d;
    memset(&d, 0, sizeof d);
    d.model = DEFO_PLASTICITY_MG04;
    d.yield = INFINITY;
    d.creep = 0;
    d.max = 0;
    d.yield_stress = INFINITY;
    d.gamma = INFINITY;
    d.limit = 4;
    d.bending_yield = INFINITY;
    d.bending_creep = 0;
    d.bending_max = INFINITY;
    return d;
}

defo_plasticity_def defo_plasticity_wax_def(void) {
    defo_plasticity_def d = defo_default_plasticity_def();
    d.yield = 0.01;
    d.creep = 100;
    d.max = 10;
    return d;
}

defo_plasticity_def defo_default_von_mises_def(double yield_stress, double hardening) {
    defo_plasticity_def d = defo_default_plasticity_def();
    d.model = DEFO_PLASTICITY_VON_MISES;
    d.yield_stress = yield_stress;
    d.hardening = hardening;
    d.max = INFINITY;
    return d;
}

defo_plasticity_def defo_default_multiplicative_def(double gamma) {
    defo_plasticity_def d = defo_default_plasticity_def();
    d.model = DEFO_PLASTICITY_MULTIPLICATIVE;
    d.gamma = gamma;
    return d;
}

const plast_ops *defo_plast_ops_of(defo_plasticity_model m) {
    switch (m) {
    case DEFO_PLASTICITY_MG04:
        return &defo_plast_mg04;
    case DEFO_PLASTICITY_VON_MISES:
        return &defo_plast_von_mises;
    case DEFO_PLASTICITY_MULTIPLICATIVE:
        return &defo_plast_multiplicative;
    }
    return NULL;
}

const char *defo_plasticity_model_name(defo_plasticity_model m) {
    const plast_ops *o = defo_plast_ops_of(m);
    return o ? o->name : "unknown";
}

defo_status defo_plasticity_model_from_name(const char *name, defo_plasticity_model *out) {
    for (int m = 0; name && out && m < DEFO_PLASTICITY_MODELS; m++)
        if (!strcmp(name, defo_plast_ops_of((defo_plasticity_model)m)->name)) {
            *out = (defo_plasticity_model)m;
            return DEFO_OK;
        }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                      "plasticity model '%s' is unknown (mg04, von_mises, multiplicative)",
                      name ? name : "(null)");
}

defo_status defo_plasticity_def_validate(const defo_plasticity_def *d) {
    if (!d) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: def is NULL");
    const plast_ops *o = defo_plast_ops_of(d->model);
    if (!o) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "model: %d is unknown", (int)d->model);
    if (!(d->limit >= 1) || !isfinite(d->limit))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "limit: %g must be a finite value >= 1 (the largest stretch of the "
                          "plastic part)",
                          d->limit);
    if (d->volumetric != 0 && d->volumetric != 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "volumetric: %d is not 0 or 1", d->volumetric);
    if (!(d->bending_yield >= 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bending_yield: %g is not >= 0",
                          d->bending_yield);
    if (!(d->bending_creep >= 0) || !isfinite(d->bending_creep))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bending_creep: %g is not a finite value >= 0",
                          d->bending_creep);
    if (!(d->bending_max >= 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bending_max: %g is not >= 0", d->bending_max);
    return o->check ? o->check(d) : DEFO_OK;
}

int defo_plasticity_def_equal(const defo_plasticity_def *a, const defo_plasticity_def *b) {
    return a->model == b->model && a->yield == b->yield && a->creep == b->creep &&
           a->max == b->max && a->volumetric == b->volumetric &&
           a->yield_stress == b->yield_stress && a->hardening == b->hardening &&
           a->isotropic_hardening == b->isotropic_hardening && a->gamma == b->gamma &&
           a->limit == b->limit && a->bending_yield == b->bending_yield &&
           a->bending_creep == b->bending_creep && a->bending_max == b->bending_max;
}

/* -------------------------------------------------- shared arithmetic */
defo_mat3 defo_plast_sym_exp(const double *a) {
    defo_mat3 Q;
    double l[3];
    defo_plast_sym_eig(a, l, &Q);
    const double e[3] = {exp(l[0]), exp(l[1]), exp(l[2])};
    double s[6];
    plast_sym_from_eigen(&Q, e, s);
    return plast_sym_to_m3(s);
}

/* V of a rotation about z with first column (c, s, 0) */
static void plane_rotation(double c, double s, defo_mat3 *V) {
    *V = defo_m3_identity();
    V->m[0][0] = c, V->m[0][1] = -s, V->m[1][0] = s, V->m[1][1] = c;
}

void defo_plast_eig_of(const double *L, int n, plast_eig *e) {
    e->n = n;
    if (n == 3) {
        defo_plast_sym_eig(L, e->h, &e->V);
        return;
    }
    double lo, hi, c, s;
    defo_sym2_eigen(L[0], L[3], L[1], &lo, &hi, &c, &s);
    e->h[0] = hi, e->h[1] = lo, e->h[2] = 0;
    plane_rotation(c, s, &e->V);
}

/* n = 2: the in-plane block from (c, s) and h[0], h[1] */
static void plane_store(const plast_eig *e, double *L, double *fpi) {
    const double c = e->V.m[0][0], s = e->V.m[1][0];
    L[0] = e->h[0] * c * c + e->h[1] * s * s;
    L[1] = e->h[0] * s * s + e->h[1] * c * c;
    L[3] = (e->h[0] - e->h[1]) * c * s;
    L[2] = L[4] = L[5] = 0;
    if (!fpi) return;
    const double a = exp(-e->h[0]), b = exp(-e->h[1]);
    fpi[0] = a * c * c + b * s * s;
    fpi[4] = a * s * s + b * c * c;
    fpi[1] = fpi[3] = (a - b) * c * s;
    fpi[2] = fpi[5] = fpi[6] = fpi[7] = 0;
    fpi[8] = 1;
}

void defo_plast_eig_store(const plast_eig *e, double *L, double *fpi) {
    if (e->n == 2) {
        plane_store(e, L, fpi);
        return;
    }
    plast_sym_from_eigen(&e->V, e->h, L);
    if (!fpi) return;
    const double m[3] = {exp(-e->h[0]), exp(-e->h[1]), exp(-e->h[2])};
    double a[6];
    plast_sym_from_eigen(&e->V, m, a);
    const defo_mat3 A = plast_sym_to_m3(a);
    memcpy(fpi, A.m, 9 * sizeof(double));
}

int defo_plast_may_project(const double *L, double max, double limit) {
    const double n = plast_sym_norm(L);
    return n > max || sqrt(3.0) * n > log(limit);
}

int defo_plast_limit(double *h, int n, double limit, int isochoric) {
    const double lam = log(limit);
    double t = 0;
    for (int i = 0; i < n; i++) t += h[i];
    if (isochoric) {
        /* the mean m (clamped to |n m| ≤ Λ), the deviator scaled by the
         * largest s ≤ 1 keeping every m + s d_i within ±Λ */
        const double m0 = t / n;
        const double m = fmax(-lam / n, fmin(lam / n, m0));
        double sc = 1;
        for (int i = 0; i < n; i++) {
            const double di = h[i] - m0;
            if (di > 0) sc = fmin(sc, (lam - m) / di);
            if (di < 0) sc = fmin(sc, (lam + m) / -di);
        }
        if (sc >= 1 && m == m0) return 0;
        for (int i = 0; i < n; i++) h[i] = m + sc * (h[i] - m0);
        return 1;
    }
    int moved = 0;
    for (int i = 0; i < n; i++)
        if (fabs(h[i]) > lam) h[i] = copysign(lam, h[i]), moved = 1;
    t = 0;
    for (int i = 0; i < n; i++) t += h[i];
    if (fabs(t) > lam) { /* a common shift: stays within ±Λ (see the header) */
        const double sh = (copysign(lam, t) - t) / n;
        for (int i = 0; i < n; i++) h[i] += sh;
        moved = 1;
    }
    return moved;
}

/* defo_plast_push in the rest plane */
static int plane_push(const double *fpi, const defo_mat3 *W, const double *d, plast_eig *out,
                      defo_mat3 *Q) {
    /* S = the block's inverse; G = S W exp(d): C = G Gᵀ = S exp(2Δ) S */
    const double a = fpi[0], b = fpi[1], cc = fpi[3], dd = fpi[4], det = a * dd - b * cc;
    if (!(det > 0) || !isfinite(det)) return 0;
    const double S[2][2] = {{dd / det, -b / det}, {-cc / det, a / det}};
    const double c = W->m[0][0], s = W->m[1][0];
    const double Wm[2][2] = {{c, -s}, {s, c}}, ed[2] = {exp(d[0]), exp(d[1])};
    double G[2][2];
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 2; k++) G[r][k] = (S[r][0] * Wm[0][k] + S[r][1] * Wm[1][k]) * ed[k];
    const double C00 = G[0][0] * G[0][0] + G[0][1] * G[0][1];
    const double C01 = G[0][0] * G[1][0] + G[0][1] * G[1][1];
    const double C11 = G[1][0] * G[1][0] + G[1][1] * G[1][1];
    double lo, hi, vc, vs;
    defo_sym2_eigen(C00, C01, C11, &lo, &hi, &vc, &vs);
    out->n = 2;
    plane_rotation(vc, vs, &out->V);
    if (!(lo > 0) || !(hi < INFINITY)) return 0;
    /* the product of the eigenvalues is det C exactly: the small one from it */
    const double dC = C00 * C11 - C01 * C01;
    out->h[0] = 0.5 * log(hi);
    out->h[1] = dC > 0 ? 0.5 * (log(dC) - log(hi)) : 0.5 * log(lo);
    out->h[2] = 0;
    if (Q) { /* Q = W exp(d) Wᵀ S V exp(−h) Vᵀ, a rotation about z */
        const double eh[2] = {exp(-out->h[0]), exp(-out->h[1])};
        const double Vm[2][2] = {{vc, -vs}, {vs, vc}};
        double A[2][2], B[2][2], AS[2][2];
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < 2; k++) {
                A[r][k] = Wm[r][0] * ed[0] * Wm[k][0] + Wm[r][1] * ed[1] * Wm[k][1];
                B[r][k] = Vm[r][0] * eh[0] * Vm[k][0] + Vm[r][1] * eh[1] * Vm[k][1];
            }
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < 2; k++) AS[r][k] = A[r][0] * S[0][k] + A[r][1] * S[1][k];
        *Q = defo_m3_identity();
        for (int r = 0; r < 2; r++)
            for (int k = 0; k < 2; k++) Q->m[r][k] = AS[r][0] * B[0][k] + AS[r][1] * B[1][k];
    }
    return isfinite(out->h[0]) && isfinite(out->h[1]);
}

int defo_plast_push_begin(const double *fpi, const defo_mat3 *W, const double *d, plast_push *pp) {
    defo_mat3 A;
    memcpy(A.m, fpi, sizeof A.m);
    if (!defo_m3_inverse(A, &pp->S)) return 0;
    /* G = S W exp(d): C = G Gᵀ = S exp(2Δ) S */
    const defo_mat3 SW = defo_m3_mul(pp->S, *W);
    defo_mat3 G;
    for (int k = 0; k < 3; k++) pp->ed[k] = exp(d[k]);
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) G.m[r][k] = SW.m[r][k] * pp->ed[k];
    const defo_mat3 C = defo_m3_mult(G, G);
    plast_m3_to_sym(&C, pp->c);
    return 1;
}

int defo_plast_push_end(const plast_push *pp, const defo_mat3 *W, const double c[3],
                        const defo_mat3 *V, plast_eig *out, defo_mat3 *Q) {
    out->n = 3;
    out->V = *V;
    if (!(c[2] > 0) || !(c[0] < INFINITY)) return 0;
    out->h[0] = 0.5 * log(c[0]), out->h[1] = 0.5 * log(c[1]), out->h[2] = 0.5 * log(c[2]);
    if (Q) { /* Q = exp(Δ) S exp(−L_new) = W exp(d) Wᵀ S V exp(−h) Vᵀ */
        double a[6], b[6];
        const double ih[3] = {exp(-out->h[0]), exp(-out->h[1]), exp(-out->h[2])};
        plast_sym_from_eigen(W, pp->ed, a);
        plast_sym_from_eigen(&out->V, ih, b);
        *Q = defo_m3_mul(defo_m3_mul(plast_sym_to_m3(a), pp->S), plast_sym_to_m3(b));
    }
    return isfinite(out->h[0]) && isfinite(out->h[1]) && isfinite(out->h[2]);
}

int defo_plast_push(const double *fpi, int n, const defo_mat3 *W, const double *d, plast_eig *out,
                    defo_mat3 *Q) {
    if (n == 2) return plane_push(fpi, W, d, out, Q);
    out->n = 3;
    plast_push pp;
    if (!defo_plast_push_begin(fpi, W, d, &pp)) return 0;
    double c[3];
    defo_mat3 V;
    defo_plast_sym_eig(pp.c, c, &V);
    return defo_plast_push_end(&pp, W, c, &V, out, Q);
}

/* defo_plast_elastic_log of F_e's 2×2 block */
static int plane_elastic_log(const defo_mat3 *Fe, double *eps, double *l, defo_mat3 *V) {
    const double f00 = Fe->m[0][0], f01 = Fe->m[0][1], f10 = Fe->m[1][0], f11 = Fe->m[1][1];
    const double det = f00 * f11 - f01 * f10;
    if (!isfinite(f00 + f01 + f10 + f11) || !(det > 0)) return 0;
    double lo, hi, c, s;
    defo_sym2_eigen(f00 * f00 + f10 * f10, f00 * f01 + f10 * f11, f01 * f01 + f11 * f11, &lo, &hi,
                    &c, &s);
    /* σ1 σ2 = det: the small one from the product (accurate when flat) */
    if (!(hi > 0) || !(hi < INFINITY)) return 0;
    const double s1 = sqrt(hi), s2 = det / s1;
    plast_eig e = {.n = 2, .h = {log(s1), log(s2), 0}};
    if (!isfinite(e.h[0]) || !isfinite(e.h[1])) return 0;
    plane_rotation(c, s, &e.V);
    if (eps) plane_store(&e, eps, NULL);
    if (l) l[0] = e.h[0], l[1] = e.h[1], l[2] = 0;
    if (V) *V = e.V;
    return 1;
}

int defo_plast_elastic_log_begin(const defo_mat3 *Fe, double c[6], double *det) {
    if (!defo_m3_isfinite(*Fe)) return 0;
    *det = defo_m3_det(*Fe);
    if (!(*det > 0)) return 0; /* flat or inverted: σ₃ ≤ 0 */
    const defo_mat3 C = defo_m3_tmul(*Fe, *Fe);
    plast_m3_to_sym(&C, c);
    return 1;
}

int defo_plast_elastic_log_end(const defo_mat3 *Fe, double det, const double lam[3],
                               const defo_mat3 *v0, double *eps, double *l, defo_mat3 *V) {
    /* σ² and V from C = F_eᵀF_e in closed form; its smallest eigenvalue
     * carries an error ε λ₁, so a nearly flat F_e takes the SVD */
    double g[3];
    defo_mat3 v = *v0;
    if (lam[2] > 1e-6 * lam[0] && lam[0] < INFINITY) {
        g[0] = 0.5 * log(lam[0]), g[1] = 0.5 * log(lam[1]);
        g[2] = log(det) - g[0] - g[1]; /* σ₁σ₂σ₃ = det F_e */
    } else {
        defo_mat3 u;
        defo_vec3 sg;
        defo_svd3(Fe, &u, &sg, &v);
        if (!(sg.z > 0) || !(sg.x < INFINITY)) return 0;
        g[0] = log(sg.x), g[1] = log(sg.y), g[2] = log(sg.z);
    }
    if (!isfinite(g[0] + g[1] + g[2])) return 0;
    if (eps) plast_sym_from_eigen(&v, g, eps);
    if (l) l[0] = g[0], l[1] = g[1], l[2] = g[2];
    if (V) *V = v;
    return 1;
}

int defo_plast_elastic_log(const defo_mat3 *Fe, int n, double *eps, double *l, defo_mat3 *V) {
    if (n == 2) return plane_elastic_log(Fe, eps, l, V);
    double c[6], det, lam[3];
    defo_mat3 v;
    if (!defo_plast_elastic_log_begin(Fe, c, &det)) return 0;
    defo_plast_sym_eig(c, lam, &v);
    return defo_plast_elastic_log_end(Fe, det, lam, &v, eps, l, V);
}

void defo_plast_log_strain(const plast_point *in, double eps[6]) {
    if (in->n == 2) {
        const plast_eig e = {.V = in->V, .h = {in->l[0], in->l[1], 0}, .n = 2};
        plane_store(&e, eps, NULL);
        return;
    }
    plast_sym_from_eigen(&in->V, in->l, eps);
}

unsigned defo_plast_flow(const plast_ops *o, const defo_plasticity_def *d, plast_point *in,
                         double *state) {
    in->log_ok = defo_plast_elastic_log(&in->Fe, in->n, NULL, in->l, &in->V);
    plast_trial t = {0};
    o->trial(d, in, state, &t);
    if (t.done) return t.fl;
    if (t.want_eig) {
        double h[3];
        defo_mat3 V;
        defo_plast_sym_eig(t.aux, h, &V);
        o->direct(d, in, &t, h, &V);
    }
    plast_eig e = {0};
    defo_mat3 Q = defo_m3_identity();
    const int ok = t.push && defo_plast_push(in->fpi, in->n, &t.W, t.d, &e, t.want_q ? &Q : NULL);
    return o->finish(d, in, state, &t, ok, &e, &Q);
}

/* ------------------------------------------------------------ object */
void defo_plasticity_destroy(defo_plasticity *p) {
    if (!p) return;
    defo_free(p->defs);
    defo_free(p->set_of);
    defo_free(p->state);
    defo_free(p->fpi);
    defo_free(p->F);
    defo_free(p->flags);
    defo_free(p->changed);
    defo_free(p->goal_F);
    defo_free(p->goal_L);
    defo_free(p->bend);
    defo_free(p->bstrain);
    defo_free(p->pv);
    defo_free(p->pn);
    defo_free(p);
}

static size_t num_points(const defo_plasticity *p) {
    return (size_t)p->num_elems * (size_t)p->points;
}

static void reset_points(defo_plasticity *p) {
    const size_t np = num_points(p);
    memset(p->state, 0, PLAST_STATE * np * sizeof(double));
    if (p->bend) memset(p->bend, 0, (size_t)p->nh * sizeof(double));
    for (size_t pq = 0; pq < np; pq++)
        for (int k = 0; k < 9; k++) p->fpi[9 * pq + (size_t)k] = (k % 4 == 0) ? 1.0 : 0.0;
}

defo_status defo_plasticity_create(const defo_plasticity_def *def, defo_index num_elems, int points,
                                   defo_plasticity **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: out is NULL");
    *out = NULL;
    defo_plasticity_def d = def ? *def : defo_default_plasticity_def();
    defo_status s = defo_plasticity_def_validate(&d);
    if (s) return defo_error_prefix("plasticity");
    if (num_elems < 0 || points < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: %ld elements of %d points",
                          (long)num_elems, points);
    defo_plasticity *p = defo_calloc(1, sizeof *p);
    if (!p) return defo_error_oom("plasticity", sizeof *p);
    p->num_elems = num_elems;
    p->points = points;
    p->num_sets = 1;
    p->nh = -1;
    p->batched = 1;
    const size_t np = num_points(p);
    p->defs = defo_malloc(sizeof *p->defs);
    p->state = defo_malloc(PLAST_STATE * np * sizeof(double) + 1);
    p->fpi = defo_malloc(9 * np * sizeof(double) + 1);
    p->F = defo_malloc(9 * np * sizeof(double) + 1);
    p->flags = defo_calloc(np + 1, 1);
    p->changed = defo_calloc(np + 1, 1);
    if (!p->defs || !p->state || !p->fpi || !p->F || !p->flags || !p->changed) {
        defo_plasticity_destroy(p);
        return defo_error_oom("plastic state", (PLAST_STATE + 20) * np * sizeof(double));
    }
    p->defs[0] = d;
    reset_points(p);
    *out = p;
    return DEFO_OK;
}

/* The stored state's extras (beyond L_p) of set k's points: zero. */
static void reset_extras(defo_plasticity *p, int k) {
    for (defo_index e = 0; e < p->num_elems; e++) {
        if ((p->set_of ? p->set_of[e] : 0) != k) continue;
        for (int q = 0; q < p->points; q++) {
            double *st = p->state + PLAST_STATE * ((size_t)e * (size_t)p->points + (size_t)q);
            memset(st + 6, 0, (PLAST_STATE - 6) * sizeof(double));
        }
    }
}

defo_status defo_plasticity_set_regions(defo_plasticity *p, int num_sets,
                                        const defo_plasticity_def *defs, const int32_t *set_of) {
    if (!p || !defs || num_sets < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: bad parameter sets");
    for (int k = 0; k < num_sets; k++)
        if (defo_plasticity_def_validate(&defs[k]))
            return defo_error_prefix("plasticity set %d", k);
    for (defo_index e = 0; set_of && e < p->num_elems; e++)
        if (set_of[e] < 0 || set_of[e] >= num_sets)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: element %ld in set %d of %d",
                              (long)e, (int)set_of[e], num_sets);
    defo_plasticity_def *nd = defo_malloc((size_t)num_sets * sizeof *nd);
    int32_t *ns = set_of ? defo_malloc((size_t)p->num_elems * sizeof *ns + 1) : NULL;
    if (!nd || (set_of && !ns)) {
        defo_free(nd);
        defo_free(ns);
        return defo_error_oom("plasticity sets", (size_t)num_sets * sizeof *nd);
    }
    memcpy(nd, defs, (size_t)num_sets * sizeof *nd);
    if (ns) memcpy(ns, set_of, (size_t)p->num_elems * sizeof *ns);
    /* a point whose model changes keeps L_p and starts its extras anew */
    for (defo_index e = 0; e < p->num_elems; e++) {
        const int a = p->set_of ? p->set_of[e] : 0, b = ns ? ns[e] : 0;
        if (p->defs[a].model == nd[b].model) continue;
        for (int q = 0; q < p->points; q++)
            memset(p->state + PLAST_STATE * ((size_t)e * (size_t)p->points + (size_t)q) + 6, 0,
                   (PLAST_STATE - 6) * sizeof(double));
    }
    defo_free(p->defs);
    defo_free(p->set_of);
    p->defs = nd;
    p->set_of = ns;
    p->num_sets = num_sets;
    p->dirty = 1;
    return DEFO_OK;
}

/* Grow a buffer of `old` records to `count` of `rec` bytes; new records
 * are element e's copies of element parent[e − old_ne]'s (records per
 * element: `per`). */
static void *grow_copy(void *buf, size_t rec, size_t per, defo_index old_ne, defo_index ne,
                       const defo_index *parent) {
    unsigned char *nb = defo_malloc((size_t)ne * per * rec + 1);
    if (!nb) return NULL;
    memcpy(nb, buf, (size_t)old_ne * per * rec);
    for (defo_index e = old_ne; e < ne; e++)
        memcpy(nb + (size_t)e * per * rec, nb + (size_t)parent[e - old_ne] * per * rec, per * rec);
    return nb;
}

defo_status defo_plasticity_grow(defo_plasticity *p, defo_index num_elems,
                                 const defo_index *parent) {
    if (!p || num_elems < p->num_elems || (num_elems > p->num_elems && !parent))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity grow: bad arguments");
    const defo_index old = p->num_elems;
    for (defo_index e = old; e < num_elems; e++)
        if (parent[e - old] < 0 || parent[e - old] >= e)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "plasticity grow: element %ld has parent %ld (an older element)",
                              (long)e, (long)parent[e - old]);
    if (num_elems == old) return DEFO_OK;
    const size_t NQ = (size_t)p->points;
    double *st = grow_copy(p->state, PLAST_STATE * sizeof(double), NQ, old, num_elems, parent);
    double *fpi = grow_copy(p->fpi, 9 * sizeof(double), NQ, old, num_elems, parent);
    double *F = defo_malloc(9 * (size_t)num_elems * NQ * sizeof(double) + 1);
    unsigned char *fl = defo_calloc((size_t)num_elems * NQ + 1, 1);
    unsigned char *ch = defo_calloc((size_t)num_elems * NQ + 1, 1);
    int32_t *so =
        p->set_of ? grow_copy(p->set_of, sizeof(int32_t), 1, old, num_elems, parent) : NULL;
    double *gF =
        p->goal_F ? grow_copy(p->goal_F, 9 * sizeof(double), NQ, old, num_elems, parent) : NULL;
    double *gL =
        p->goal_L ? grow_copy(p->goal_L, 6 * sizeof(double), NQ, old, num_elems, parent) : NULL;
    if (!st || !fpi || !F || !fl || !ch || (p->set_of && !so) || (p->goal_F && !gF) ||
        (p->goal_L && !gL)) {
        defo_free(st), defo_free(fpi), defo_free(F), defo_free(fl), defo_free(ch);
        defo_free(so), defo_free(gF), defo_free(gL);
        return defo_error_oom("plastic state", (size_t)num_elems * NQ * 40 * sizeof(double));
    }
    defo_free(p->state), defo_free(p->fpi), defo_free(p->F), defo_free(p->flags);
    defo_free(p->changed), defo_free(p->set_of), defo_free(p->goal_F), defo_free(p->goal_L);
    p->state = st, p->fpi = fpi, p->F = F, p->flags = fl, p->changed = ch;
    p->set_of = so, p->goal_F = gF, p->goal_L = gL;
    p->num_elems = num_elems;
    return DEFO_OK;
}

int defo_plasticity_num_sets(const defo_plasticity *p) {
    return p ? p->num_sets : 0;
}

int defo_plasticity_set_of(const defo_plasticity *p, defo_index e) {
    return p && p->set_of && e >= 0 && e < p->num_elems ? p->set_of[e] : 0;
}

const defo_plasticity_def *defo_plasticity_get_def(const defo_plasticity *p, int set) {
    return p && set >= 0 && set < p->num_sets ? &p->defs[set] : NULL;
}

defo_status defo_plasticity_set_def(defo_plasticity *p, int set, const defo_plasticity_def *def) {
    if (!p || !def || set < 0 || set >= p->num_sets)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: no parameter set %d", set);
    if (defo_plasticity_def_validate(def)) return defo_error_prefix("plasticity");
    if (defo_plasticity_def_equal(def, &p->defs[set])) return DEFO_OK;
    if (def->model != p->defs[set].model) reset_extras(p, set);
    p->defs[set] = *def;
    p->dirty = 1;
    return DEFO_OK;
}

defo_status defo_plasticity_bind(defo_plasticity *p, defo_force_model *fm) {
    if (!p || !fm) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    if (defo_force_model_points(fm) != p->points)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "plasticity: %d points per element, the force model has %d", p->points,
                          defo_force_model_points(fm));
    for (int k = 0; !defo_force_model_is_shell(fm) && k < p->num_sets; k++)
        if (p->defs[k].bending_yield < INFINITY || p->defs[k].bending_creep > 0 ||
            p->defs[k].bending_max < INFINITY)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "plasticity: bending_yield, bending_creep, bending_max: plastic "
                              "bending is for shells (tri3 bodies), this body is a solid");
    if (defo_force_model_is_shell(fm)) {
        const defo_index nh = defo_force_model_num_hinges(fm);
        if (p->nh >= 0 && p->nh != nh)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "plasticity: a plastic bending state of %ld hinges, the shell has "
                              "%ld",
                              (long)p->nh, (long)nh);
        p->plane = 1;
        double *bs = defo_malloc((size_t)nh * sizeof(double) + 1);
        double *bd = p->bend ? p->bend : defo_calloc((size_t)nh + 1, sizeof(double));
        if (!bs || !bd) {
            defo_free(bs);
            if (bd != p->bend) defo_free(bd);
            return defo_error_oom("plastic bending", 2 * (size_t)nh * sizeof(double));
        }
        defo_free(p->bstrain);
        p->bstrain = bs;
        p->bend = bd;
        p->nh = nh;
        p->hinge_tri = defo_force_model_hinge_triangles(fm);
        defo_force_model_set_plastic_bending(fm, p->bend);
    }
    return defo_force_model_set_plastic(fm, p->fpi);
}

const double *defo_plasticity_bending(const defo_plasticity *p, defo_index *count) {
    if (count) *count = p && p->nh > 0 ? p->nh : 0;
    return p ? p->bend : NULL;
}

const double *defo_plasticity_inverse(const defo_plasticity *p) {
    return p ? p->fpi : NULL;
}

void defo_plasticity_log(const defo_plasticity *p, defo_index e, int q, double out[6]) {
    memcpy(out, p->state + PLAST_STATE * ((size_t)e * (size_t)p->points + (size_t)q),
           6 * sizeof(double));
}

/* ------------------------------------------------------------ update */
/* The bound of the header: ‖ε_e‖ ≤ ½ d/(1 − d), d = ‖F_eᵀF_e − I‖ (INFINITY
 * when d ≥ 1). */
static double elastic_bound(const double *F) {
    double d2 = 0;
    for (int i = 0; i < 3; i++)
        for (int j = i; j < 3; j++) {
            const double c = F[i] * F[j] + F[3 + i] * F[3 + j] + F[6 + i] * F[6 + j] - (i == j);
            d2 += (i == j ? 1.0 : 2.0) * c * c;
        }
    const double d = sqrt(d2);
    return d < 1 ? 0.5 * d / (1 - d) * (1 + 1e-12) : INFINITY;
}

/* Plastic bending of a shell's hinges (defo/plasticity.h, "Shells"): per
 * hinge, independent, so any thread count gives the same bits. */
static defo_status bending_flow(defo_plasticity *p, defo_force_model *fm, const double *x,
                                double dt, defo_index *bent, double *bmax) {
    int any = 0;
    for (int k = 0; k < p->num_sets; k++)
        any |= p->defs[k].bending_yield < INFINITY || p->defs[k].bending_max < INFINITY;
    if (!any) return DEFO_OK;
    defo_status s = defo_force_model_bending_strain(fm, x, p->bstrain);
    if (s) return defo_error_prefix("plasticity");
    const defo_index nh = p->nh;
    defo_index n = 0;
    DEFO_PARALLEL_REGION_IF(DEFO_PARALLEL_WORTH(nh, 20)) {
        DEFO_FOR_SUM(n)
        for (defo_index h = 0; h < nh; h++) {
            /* a hinge between two sets yields with the one that yields
             * first (the lower bending_yield: the weaker side's fibre) */
            const defo_index t = p->hinge_tri[2 * (size_t)h], u = p->hinge_tri[2 * (size_t)h + 1];
            const defo_plasticity_def *d = &p->defs[p->set_of ? p->set_of[t] : 0];
            const defo_plasticity_def *du = &p->defs[p->set_of ? p->set_of[u] : 0];
            if (du->bending_yield < d->bending_yield) d = du;
            const double eb = p->bstrain[h], old = p->bend[h];
            double bp = old;
            if (isfinite(eb)) { /* NaN: next to a degenerate triangle, no flow */
                const double e = eb - bp;
                if (fabs(e) > d->bending_yield) bp += fmin(1.0, dt * d->bending_creep) * e;
            }
            if (fabs(bp) > d->bending_max) bp = copysign(d->bending_max, bp);
            n += bp != old;
            p->bend[h] = bp;
        }
    }
    double m = 0;
    for (defo_index h = 0; h < nh; h++) m = fmax(m, fabs(p->bend[h]));
    *bent = n;
    *bmax = m;
    return DEFO_OK;
}

/* 1 when set d's flow keeps volume (the default of every model; not the
 * volumetric rules, not control toward a goal) */
static int keeps_volume(const defo_plasticity *p, const defo_plasticity_def *d) {
    if (d->volumetric) return 0;
    return d->model != DEFO_PLASTICITY_MULTIPLICATIVE || !p->goal_L;
}

/* Volume over node patches (tet4 solids; after the return maps).  A linear
 * tet has one F, and flow that keeps every element's volume on its own
 * locks: the elements' volume-keeping plastic shapes rarely fit together,
 * and a squashed block springs back part of the way (10 % of its height in
 * the squash-and-release check; tet10 2 %).  As F-bar and nodal-averaged
 * tets do for the volume, the constraint is kept on average over node
 * patches instead.  With P_e = V_e det F_p the plastic volume of element
 * e (V_e its rest volume) and J_e = det F_e its elastic volume ratio, over
 * the elements that flowed this update: each node takes ρ_n = Σ_e∋n P_e J_e
 * / Σ_e∋n P_e, each element J̄_e = the mean of its nodes' ρ_n, and c = Σ P_e
 * J_e / Σ P_e; the element's plastic volume then relaxes toward its
 * patch's elastic volume ratio,
 *     P_e ← P_e (1 + r (J_e − J̄_e) / c)   (F_p scaled by the cube root),
 * r the flow's rate (mg04: min(1, Δt c_creep); the others 1).  Since
 * Σ_e P_e J̄_e = Σ_n ρ_n Σ_e∋n P_e/4 = Σ_e P_e J_e, the total plastic
 * volume Σ P_e is unchanged (exactly, to rounding, as long as no factor is
 * clamped to [1/2, 2] or by the limit surface): flow still keeps the body's
 * volume, but an element's volume may trade with its neighbours' — only
 * the part of the elastic volume change that differs from the
 * neighbourhood's, which is the locking part (a smooth volume change has
 * J_e = J̄_e and stays elastic).  The scaling commutes with every F_p: L_p
 * gains s/3 I and F_p⁻¹ the factor e^(−s/3), s the log of the factor.
 * Elements flat or inverted, or of a set that does not keep volume, take
 * no part.  The sums serial in a fixed order, the scaling per element: the
 * same bits for any thread count. */
static defo_index patch_volume(defo_plasticity *p, const defo_force_model *fm, double dt) {
    const defo_mesh *m = defo_force_model_mesh(fm);
    if (p->plane || p->points != 1 || !m || m->nodes_per_elem != 4 || m->num_elems != p->num_elems)
        return 0;
    const defo_index ne = p->num_elems, nn = m->num_nodes;
    defo_index flowed = 0;
    for (defo_index e = 0; e < ne; e++) flowed += (p->flags[e] & PLAST_FLOWED) != 0;
    if (!flowed) return 0;
    if (!p->pv || p->pnodes != nn || p->pelems != ne) {
        double *a = defo_realloc(p->pv, 2 * (size_t)ne * sizeof(double) + 1);
        if (a) p->pv = a;
        double *b = defo_realloc(p->pn, 2 * (size_t)nn * sizeof(double) + 1);
        if (b) p->pn = b;
        /* no memory: each element that flowed keeps its own volume (counted
         * in the stats: unpatched) */
        if (!a || !b) return flowed;
        p->pnodes = nn, p->pelems = ne;
    }
    /* each element's P_e and J_e (independent: in parallel), then the sums
     * in element order */
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(flowed, 60))
    for (defo_index e = 0; e < ne; e++) {
        double *pv = p->pv + 2 * (size_t)e;
        pv[0] = 0;
        const defo_plasticity_def *d = &p->defs[p->set_of ? p->set_of[e] : 0];
        if ((p->flags[e] & (PLAST_FLOWED | PLAST_CAPPED)) != PLAST_FLOWED || !keeps_volume(p, d))
            continue;
        const defo_index *v = m->elems + 4 * (size_t)e;
        const double *F = p->F + 9 * (size_t)e, *x0 = m->x + 3 * v[0];
        const double J = F[0] * (F[4] * F[8] - F[5] * F[7]) - F[1] * (F[3] * F[8] - F[5] * F[6]) +
                         F[2] * (F[3] * F[7] - F[4] * F[6]);
        double a[3][3];
        for (int k = 0; k < 3; k++)
            for (int i = 0; i < 3; i++) a[k][i] = m->x[3 * v[k + 1] + i] - x0[i];
        const double V = fabs(a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
                              a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                              a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0])) /
                         6;
        const double P = V * exp(plast_sym_trace(p->state + PLAST_STATE * (size_t)e));
        if (!(J > 0) || !(P > 0) || !isfinite(J * P)) continue;
        pv[0] = P, pv[1] = J;
    }
    memset(p->pn, 0, 2 * (size_t)nn * sizeof(double));
    double sp = 0, spj = 0;
    for (defo_index e = 0; e < ne; e++) {
        const double *pv = p->pv + 2 * (size_t)e, P = pv[0], J = pv[1];
        if (!(P > 0)) continue;
        const defo_index *v = m->elems + 4 * (size_t)e;
        sp += P, spj += P * J;
        for (int k = 0; k < 4; k++) {
            p->pn[2 * v[k]] += 0.25 * P * J;
            p->pn[2 * v[k] + 1] += 0.25 * P;
        }
    }
    if (!(sp > 0)) return 0;
    const double c = spj / sp;
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_WORTH(flowed, 60))
    for (defo_index e = 0; e < ne; e++) {
        const double *pv = p->pv + 2 * (size_t)e;
        if (!(pv[0] > 0)) continue;
        const defo_plasticity_def *d = &p->defs[p->set_of ? p->set_of[e] : 0];
        const defo_index *v = m->elems + 4 * (size_t)e;
        double Jb = 0;
        for (int k = 0; k < 4; k++) Jb += p->pn[2 * v[k]] / p->pn[2 * v[k] + 1];
        Jb *= 0.25;
        const double r = d->model == DEFO_PLASTICITY_MG04 ? fmin(1.0, dt * d->creep) : 1.0;
        double *L = p->state + PLAST_STATE * (size_t)e;
        const double lam = log(d->limit), t = plast_sym_trace(L);
        /* the factor within [1/2, 2], det F_p within the limit surface */
        double sv = log(fmax(0.5, fmin(2.0, 1 + r * (pv[1] - Jb) / c)));
        sv = fmax(-lam - t, fmin(lam - t, sv));
        if (sv == 0) continue;
        /* each eigenvalue of L_p within ±Λ (|h_i| ≤ ‖L_p‖ clears most):
         * the shift shrinks to fit */
        if (plast_sym_norm(L) + fabs(sv) / 3 > lam) {
            plast_eig eg;
            defo_plast_eig_of(L, 3, &eg);
            for (int i = 0; i < 3; i++) {
                if (eg.h[i] + sv / 3 > lam) sv = 3 * (lam - eg.h[i]);
                if (eg.h[i] + sv / 3 < -lam) sv = 3 * (-lam - eg.h[i]);
            }
        }
        L[0] += sv / 3, L[1] += sv / 3, L[2] += sv / 3;
        const double f = exp(-sv / 3);
        for (int k = 0; k < 9; k++) p->fpi[9 * (size_t)e + (size_t)k] *= f;
        p->changed[e] = 1;
    }
    return 0;
}

/* Elements per work item of the update (points batched within one) */
#define UPDATE_BLOCK 64
#define PLAST_BATCH  PLAST_LANES

static const defo_plasticity_def *def_of(const defo_plasticity *p, defo_index e) {
    return &p->defs[p->set_of ? p->set_of[e] : 0];
}

/* What point pq's return map reads (its logarithm not yet) */
static void point_in(const defo_plasticity *p, const defo_force_model *fm, size_t pq, double dt,
                     plast_point *in) {
    const defo_index e = (defo_index)(pq / (size_t)p->points);
    const defo_plasticity_def *d = def_of(p, e);
    memcpy(in->Fe.m, p->F + 9 * pq, sizeof in->Fe.m);
    in->dt = dt;
    in->mu = defo_force_model_shear_modulus(fm, e);
    in->lambda = p->plane ? defo_force_model_plane_lambda(fm, e) : 0.0;
    in->n = p->plane ? 2 : 3;
    in->goal = p->goal_L && d->model == DEFO_PLASTICITY_MULTIPLICATIVE ? p->goal_L + 6 * pq : NULL;
    in->fpi = p->fpi + 9 * pq;
    in->log_ok = 0;
}

static void point_done(defo_plasticity *p, size_t pq, unsigned fl) {
    p->flags[pq] = (unsigned char)(fl | 16); /* 16: checked */
    p->changed[pq] = (fl & PLAST_CHANGED) != 0;
}

/* The return maps of up to PLAST_BATCH solid points together: defo_plast_flow's
 * steps, each eigen-decomposition of the batch in one defo_plast_sym_eig_lanes
 * (an idle lane gets a fixed matrix): every point gets the bits
 * defo_plast_flow gives it, whatever its batch and lane. */
static void flow_batch(defo_plasticity *p, const defo_force_model *fm, const size_t *pq, int n,
                       double dt) {
    static const double idle[6] = {3, 2, 1, 0, 0, 0};
    plast_point in[PLAST_BATCH];
    plast_trial t[PLAST_BATCH];
    plast_push pp[PLAST_BATCH];
    const plast_ops *o[PLAST_BATCH];
    const defo_plasticity_def *d[PLAST_BATCH];
    double c[PLAST_BATCH][6], det[PLAST_BATCH], lam[PLAST_BATCH][3];
    int ok[PLAST_BATCH], any = 0;
    defo_mat3 V[PLAST_BATCH];
    const double *a[PLAST_BATCH];
    for (int j = 0; j < PLAST_BATCH; j++) {
        a[j] = idle;
        if (j >= n) continue;
        d[j] = def_of(p, (defo_index)(pq[j] / (size_t)p->points));
        o[j] = defo_plast_ops_of(d[j]->model);
        point_in(p, fm, pq[j], dt, &in[j]);
        ok[j] = defo_plast_elastic_log_begin(&in[j].Fe, c[j], &det[j]);
        if (ok[j]) a[j] = c[j];
    }
    defo_plast_sym_eig_lanes(a, lam, V);
    for (int j = 0; j < n; j++) {
        in[j].log_ok = ok[j] && defo_plast_elastic_log_end(&in[j].Fe, det[j], lam[j], &V[j], NULL,
                                                           in[j].l, &in[j].V);
        memset(&t[j], 0, sizeof t[j]);
        o[j]->trial(d[j], &in[j], p->state + PLAST_STATE * pq[j], &t[j]);
        a[j] = !t[j].done && t[j].want_eig ? t[j].aux : idle;
        any |= !t[j].done && t[j].want_eig;
    }
    if (any) { /* the flows' axes */
        defo_plast_sym_eig_lanes(a, lam, V);
        for (int j = 0; j < n; j++)
            if (!t[j].done && t[j].want_eig) o[j]->direct(d[j], &in[j], &t[j], lam[j], &V[j]);
    }
    any = 0;
    for (int j = 0; j < n; j++) {
        ok[j] =
            !t[j].done && t[j].push && defo_plast_push_begin(in[j].fpi, &t[j].W, t[j].d, &pp[j]);
        a[j] = ok[j] ? pp[j].c : idle;
        any |= ok[j];
    }
    if (any) defo_plast_sym_eig_lanes(a, lam, V);
    for (int j = 0; j < n; j++) {
        if (t[j].done) {
            point_done(p, pq[j], t[j].fl);
            continue;
        }
        plast_eig e = {0};
        defo_mat3 Q = defo_m3_identity();
        ok[j] = ok[j] &&
                defo_plast_push_end(&pp[j], &t[j].W, lam[j], &V[j], &e, t[j].want_q ? &Q : NULL);
        point_done(
            p, pq[j],
            o[j]->finish(d[j], &in[j], p->state + PLAST_STATE * pq[j], &t[j], ok[j], &e, &Q));
    }
}

void defo_plast_set_batched(defo_plasticity *p, int on) {
    p->batched = on;
}

defo_status defo_plasticity_update(defo_plasticity *p, defo_force_model *fm, const double *x,
                                   double dt, defo_plasticity_stats *stats) {
    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->min_det = stats->max_det = 1;
    }
    if (!p || !fm || !x)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    if (!(dt > 0) || !isfinite(dt))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: time step %g must be > 0", dt);
    if (defo_force_model_points(fm) != p->points)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: not this force model's");
    for (int k = 0; k < p->num_sets; k++)
        if (p->defs[k].model == DEFO_PLASTICITY_MG04 && p->defs[k].creep * dt > 1)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "plasticity: c_creep %g exceeds 1/dt = %g (MG04 §3: c_creep in "
                              "[0, 1/dt]; lower creep or the time step)",
                              p->defs[k].creep, 1 / dt);
    for (int k = 0; p->plane && k < p->num_sets; k++)
        if (p->defs[k].bending_creep * dt > 1)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "plasticity: bending_creep %g exceeds 1/dt = %g (lower it or the "
                              "time step)",
                              p->defs[k].bending_creep, 1 / dt);
    defo_status s = defo_force_model_deformation(fm, x, 1, p->F);
    if (s) return defo_error_prefix("plasticity");
    const int NQ = p->points, all = p->dirty;
    const defo_index ne = p->num_elems, nb = (ne + UPDATE_BLOCK - 1) / UPDATE_BLOCK;
    DEFO_PARALLEL_REGION_IF(DEFO_PARALLEL_WORTH(ne * NQ, 60)) {
        DEFO_FOR
        for (defo_index b = 0; b < nb; b++) {
            /* the points of UPDATE_BLOCK elements that fail the bound,
             * PLAST_BATCH at a time (solids) */
            size_t batch[PLAST_BATCH];
            int nbat = 0;
            const defo_index e1 =
                b * UPDATE_BLOCK + UPDATE_BLOCK < ne ? b * UPDATE_BLOCK + UPDATE_BLOCK : ne;
            for (defo_index e = b * UPDATE_BLOCK; e < e1; e++) {
                const defo_plasticity_def *d = def_of(p, e);
                const plast_ops *o = defo_plast_ops_of(d->model);
                const double mu = defo_force_model_shear_modulus(fm, e);
                const double ls = p->plane ? defo_force_model_plane_lambda(fm, e) : 0.0;
                const double stiff = p->plane ? 2 * (mu + ls) : 2 * mu;
                for (int q = 0; q < NQ; q++) {
                    const size_t pq = (size_t)e * (size_t)NQ + (size_t)q;
                    p->changed[pq] = 0;
                    p->flags[pq] = 0;
                    if (!all && elastic_bound(p->F + 9 * pq) <=
                                    o->radius(d, p->state + PLAST_STATE * pq, stiff))
                        continue;
                    if (p->plane || !p->batched) {
                        plast_point in;
                        point_in(p, fm, pq, dt, &in);
                        point_done(p, pq, defo_plast_flow(o, d, &in, p->state + PLAST_STATE * pq));
                        continue;
                    }
                    batch[nbat++] = pq;
                    if (nbat == PLAST_BATCH) flow_batch(p, fm, batch, nbat, dt), nbat = 0;
                }
            }
            if (nbat) flow_batch(p, fm, batch, nbat, dt);
        }
    }
    p->dirty = 0;
    const defo_index unpatched = patch_volume(p, fm, dt);
    defo_force_model_plastic_changed(fm, p->changed);
    defo_index bent = 0;
    double bmax = 0;
    if (p->plane && p->nh > 0) {
        s = bending_flow(p, fm, x, dt, &bent, &bmax);
        if (s) return s;
    }
    if (stats) {
        stats->bending_yielding = bent;
        stats->unpatched = unpatched;
        stats->max_bending_strain = bmax;
        const size_t np = num_points(p);
        double n2 = 0, tlo = 0, thi = 0;
        for (size_t pq = 0; pq < np; pq++) {
            const unsigned f = p->flags[pq];
            stats->yielding += (f & PLAST_FLOWED) != 0;
            stats->capped += (f & PLAST_CAPPED) != 0;
            stats->skipped += (f & PLAST_SKIPPED) != 0;
            stats->checked += (f & 16) != 0;
            const double *L = p->state + PLAST_STATE * pq, t = plast_sym_trace(L);
            n2 = fmax(n2, plast_sym_dot(L, L));
            tlo = t < tlo ? t : tlo;
            thi = t > thi ? t : thi;
        }
        stats->max_plastic_strain = sqrt(n2);
        stats->min_det = exp(tlo); /* det F_p = exp(tr L_p) */
        stats->max_det = exp(thi);
    }
    return DEFO_OK;
}

defo_status defo_plasticity_norms(const defo_plasticity *p, double *out) {
    if (!p || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    for (defo_index e = 0; e < p->num_elems; e++) {
        double m = 0;
        for (int q = 0; q < p->points; q++)
            m = fmax(m, plast_sym_norm(p->state +
                                       PLAST_STATE * ((size_t)e * (size_t)p->points + (size_t)q)));
        out[e] = m;
    }
    return DEFO_OK;
}

/* ------------------------------------------------------------ goal */
/* log of the stretch of G (det G > 0): ½ log of GᵀG's eigenvalues */
static int stretch_log(const double *G, double *L) {
    defo_mat3 g, Q;
    memcpy(g.m, G, sizeof g.m);
    if (!defo_m3_isfinite(g) || !(defo_m3_det(g) > 0)) return 0;
    const defo_mat3 C = defo_m3_tmul(g, g);
    defo_vec3 c;
    defo_sym3_eigen(&C, &c, &Q);
    if (!(c.z > 0)) return 0;
    const double h[3] = {0.5 * log(c.x), 0.5 * log(c.y), 0.5 * log(c.z)};
    plast_sym_from_eigen(&Q, h, L);
    return 1;
}

defo_status defo_plasticity_set_goal(defo_plasticity *p, const defo_force_model *fm,
                                     const double *goal_x, defo_index num_nodes) {
    if (!p) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity: missing argument");
    if (!goal_x) {
        defo_free(p->goal_F);
        defo_free(p->goal_L);
        p->goal_F = p->goal_L = NULL;
        return DEFO_OK;
    }
    if (!fm || defo_force_model_points(fm) != p->points)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity goal: not this force model's");
    (void)num_nodes; /* the caller checks the count against the mesh */
    const size_t np = num_points(p);
    double *F = defo_malloc(9 * np * sizeof(double) + 1),
           *L = defo_malloc(6 * np * sizeof(double) + 1);
    defo_status s = F && L ? defo_force_model_deformation(fm, goal_x, 0, F)
                           : defo_error_oom("plasticity goal", 15 * np * sizeof(double));
    for (size_t pq = 0; !s && pq < np; pq++)
        if (!stretch_log(F + 9 * pq, L + 6 * pq))
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "plasticity goal: the goal shape is flat or inverted at element %zu",
                           pq / (size_t)p->points);
    if (s) {
        defo_free(F);
        defo_free(L);
        return s;
    }
    defo_free(p->goal_F);
    defo_free(p->goal_L);
    p->goal_F = F;
    p->goal_L = L;
    return DEFO_OK;
}

int defo_plasticity_has_goal(const defo_plasticity *p) {
    return p && p->goal_F;
}

defo_status defo_plasticity_commit(defo_plasticity *p, const double *F_commit) {
    if (!p || !F_commit)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "plasticity commit: missing argument");
    const size_t np = num_points(p);
    if (p->goal_F) {
        for (size_t pq = 0; pq < np; pq++) {
            defo_mat3 G, C, Ci = defo_m3_identity();
            memcpy(G.m, p->goal_F + 9 * pq, sizeof G.m);
            memcpy(C.m, F_commit + 9 * pq, sizeof C.m);
            if (!defo_m3_inverse(C, &Ci) || !(defo_m3_det(C) > 0))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "anneal: element %zu is flat or inverted",
                                  pq / (size_t)p->points);
            const defo_mat3 N = defo_m3_mul(G, Ci);
            double Ln[6];
            if (!stretch_log(&N.m[0][0], Ln))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "anneal: the goal is inverted relative to the committed shape at "
                                  "element %zu",
                                  pq / (size_t)p->points);
        }
        for (size_t pq = 0; pq < np; pq++) {
            defo_mat3 G, C, Ci = defo_m3_identity();
            memcpy(G.m, p->goal_F + 9 * pq, sizeof G.m);
            memcpy(C.m, F_commit + 9 * pq, sizeof C.m);
            (void)defo_m3_inverse(C, &Ci); /* checked above */
            const defo_mat3 N = defo_m3_mul(G, Ci);
            memcpy(p->goal_F + 9 * pq, N.m, sizeof N.m);
            stretch_log(&N.m[0][0], p->goal_L + 6 * pq);
        }
    }
    reset_points(p);
    p->dirty = 0;
    return DEFO_OK;
}

/* ------------------------------------------------------------ bytes */
/* Layout (version 2): "PLST" u32 version | i32 elements | i32 points |
 * i32 sets | i32 state width | i32 goal | i32 dirty | per set: i32 model,
 * i32 volumetric, f64 yield, creep, max, yield_stress, hardening,
 * isotropic_hardening, gamma, limit, bending_yield, bending_creep,
 * bending_max | i32 set_of[elements] when sets > 1 | zero to 8 | f64
 * state[width · points] | f64 F_p⁻¹[9 · points] (as the return maps
 * computed it: recomputing it from L_p would round otherwise) | goal: f64
 * F[9 · points] | f64 L[6 · points] | i64 hinges (−1: not bound to a
 * shell yet) | f64 plastic bending strain[hinges].  Version 1 (sets of
 * 72 bytes without the bending values, no hinges) is read too. */
#define PLAST_MAGIC   "PLST"
#define PLAST_VERSION 2u
#define SET_BYTES     96
#define SET_BYTES_V1  72

static size_t header_bytes_of(int sets, defo_index ne, size_t set_bytes) {
    size_t b = 32 + (size_t)sets * set_bytes;
    if (sets > 1) b += 4 * (size_t)ne;
    return (b + 7) / 8 * 8;
}

static size_t header_bytes(const defo_plasticity *p) {
    return header_bytes_of(p->num_sets, p->num_elems, SET_BYTES);
}

size_t defo_plasticity_state_bytes(const defo_plasticity *p) {
    if (!p) return 0;
    const size_t np = num_points(p);
    return header_bytes(p) + (PLAST_STATE + 9) * np * 8 + (p->goal_F ? 15 * np * 8 : 0) + 8 +
           (p->nh > 0 ? (size_t)p->nh * 8 : 0);
}

static void pack_def(const defo_plasticity_def *d, unsigned char *o) {
    const int32_t i[2] = {(int32_t)d->model, (int32_t)d->volumetric};
    const double v[11] = {d->yield,         d->creep,      d->max,
                          d->yield_stress,  d->hardening,  d->isotropic_hardening,
                          d->gamma,         d->limit,      d->bending_yield,
                          d->bending_creep, d->bending_max};
    memcpy(o, i, 8);
    memcpy(o + 8, v, 88);
}

static void unpack_def(const unsigned char *in, defo_plasticity_def *d, int v1) {
    int32_t i[2];
    double v[11];
    memcpy(i, in, 8);
    memcpy(v, in + 8, v1 ? 64 : 88);
    *d = defo_default_plasticity_def();
    d->model = (defo_plasticity_model)i[0];
    d->volumetric = i[1];
    d->yield = v[0], d->creep = v[1], d->max = v[2], d->yield_stress = v[3];
    d->hardening = v[4], d->isotropic_hardening = v[5], d->gamma = v[6], d->limit = v[7];
    if (!v1) d->bending_yield = v[8], d->bending_creep = v[9], d->bending_max = v[10];
}

void defo_plasticity_write_state(const defo_plasticity *p, void *out) {
    unsigned char *o = out;
    const size_t np = num_points(p), hb = header_bytes(p);
    memset(o, 0, hb);
    const uint32_t version = PLAST_VERSION;
    const int32_t h[6] = {(int32_t)p->num_elems, p->points,         p->num_sets,
                          PLAST_STATE,           p->goal_F != NULL, p->dirty};
    memcpy(o, PLAST_MAGIC, 4);
    memcpy(o + 4, &version, 4);
    memcpy(o + 8, h, sizeof h);
    size_t at = 32;
    for (int k = 0; k < p->num_sets; k++, at += SET_BYTES) pack_def(&p->defs[k], o + at);
    if (p->num_sets > 1) memcpy(o + at, p->set_of, 4 * (size_t)p->num_elems);
    at = hb;
    memcpy(o + at, p->state, PLAST_STATE * np * 8);
    at += PLAST_STATE * np * 8;
    memcpy(o + at, p->fpi, 9 * np * 8);
    at += 9 * np * 8;
    if (p->goal_F) {
        memcpy(o + at, p->goal_F, 9 * np * 8);
        memcpy(o + at + 9 * np * 8, p->goal_L, 6 * np * 8);
        at += 15 * np * 8;
    }
    const int64_t nh = p->nh;
    memcpy(o + at, &nh, 8);
    if (p->nh > 0) memcpy(o + at + 8, p->bend, (size_t)p->nh * 8);
}

defo_status defo_plasticity_read_state(defo_plasticity *p, const void *in, size_t size) {
    const unsigned char *b = in;
    if (!p || !b || size < 32 || memcmp(b, PLAST_MAGIC, 4) != 0)
        return defo_error(DEFO_ERR_PARSE, "plastic state: not a plastic state");
    uint32_t version;
    int32_t h[6];
    memcpy(&version, b + 4, 4);
    memcpy(h, b + 8, sizeof h);
    if (version != PLAST_VERSION && version != 1u)
        return defo_error(DEFO_ERR_PARSE, "plastic state: version %u (this defo reads 1 and %u)",
                          version, PLAST_VERSION);
    const int v1 = version == 1u;
    const size_t set_bytes = v1 ? SET_BYTES_V1 : SET_BYTES;
    if (h[0] != p->num_elems || h[1] != p->points || h[3] != PLAST_STATE || h[2] < 1 ||
        h[2] > 1000000 || (h[4] != 0 && h[4] != 1) || (h[5] != 0 && h[5] != 1))
        return defo_error(DEFO_ERR_PARSE,
                          "plastic state: %d elements of %d points (width %d), here %ld of %d",
                          (int)h[0], (int)h[1], (int)h[3], (long)p->num_elems, p->points);
    const int sets = h[2], goal = h[4];
    const size_t np = num_points(p);
    const size_t hb = header_bytes_of(sets, p->num_elems, set_bytes);
    const size_t body = hb + (PLAST_STATE + 9) * np * 8 + (goal ? 15 * np * 8 : 0);
    int64_t nh = -1;
    if (!v1 && size >= body + 8) memcpy(&nh, b + body, 8);
    if (nh < -1 || nh > (int64_t)(size / 8))
        return defo_error(DEFO_ERR_PARSE, "plastic state: %lld hinges", (long long)nh);
    if (p->nh >= 0 && nh >= 0 && nh != p->nh)
        return defo_error(DEFO_ERR_PARSE, "plastic state: %lld hinges, here %ld", (long long)nh,
                          (long)p->nh);
    const size_t want = body + (v1 ? 0 : 8 + (nh > 0 ? (size_t)nh * 8 : 0));
    if (size != want)
        return defo_error(DEFO_ERR_PARSE, "plastic state: %zu bytes, expected %zu", size, want);
    double *bend = nh >= 0 ? defo_malloc((size_t)(nh > 0 ? nh : 0) * 8 + 1) : NULL;
    if (nh >= 0 && !bend) return defo_error_oom("plastic state", (size_t)nh * 8);
    if (nh > 0) memcpy(bend, b + body + 8, (size_t)nh * 8);
    for (int64_t k = 0; k < nh; k++)
        if (!isfinite(bend[k])) {
            defo_free(bend);
            return defo_error(DEFO_ERR_PARSE, "plastic state: hinge %lld: a non-finite value",
                              (long long)k);
        }
    defo_plasticity_def *defs = defo_malloc((size_t)sets * sizeof *defs);
    int32_t *set_of = sets > 1 ? defo_malloc(4 * (size_t)p->num_elems + 1) : NULL;
    double *gF = goal ? defo_malloc(9 * np * 8 + 1) : NULL,
           *gL = goal ? defo_malloc(6 * np * 8 + 1) : NULL;
    defo_status s = DEFO_OK;
    if (!defs || (sets > 1 && !set_of) || (goal && (!gF || !gL)))
        s = defo_error_oom("plastic state", want);
    for (int k = 0; !s && k < sets; k++) {
        unpack_def(b + 32 + (size_t)k * set_bytes, &defs[k], v1);
        if (defo_plasticity_def_validate(&defs[k]))
            s = defo_error(DEFO_ERR_PARSE, "plastic state: set %d: %s", k, defo_last_error());
    }
    if (!s && set_of) {
        memcpy(set_of, b + 32 + (size_t)sets * set_bytes, 4 * (size_t)p->num_elems);
        for (defo_index e = 0; !s && e < p->num_elems; e++)
            if (set_of[e] < 0 || set_of[e] >= sets)
                s = defo_error(DEFO_ERR_PARSE, "plastic state: element %ld in set %d of %d",
                               (long)e, (int)set_of[e], sets);
    }
    const unsigned char *st = b + hb;
    for (size_t k = 0; !s && k < (PLAST_STATE + 9) * np + (goal ? 15 * np : 0); k++) {
        double v;
        memcpy(&v, st + 8 * k, 8);
        if (!isfinite(v)) s = defo_error(DEFO_ERR_PARSE, "plastic state: a non-finite value");
    }
    /* every L_p within its set's limit surface (‖L_p‖ ≤ √3 log limit) */
    for (size_t pq = 0; !s && pq < np; pq++) {
        double L[6];
        memcpy(L, st + 8 * PLAST_STATE * pq, sizeof L);
        const defo_index e = (defo_index)(pq / (size_t)p->points);
        const double lim = defs[set_of ? set_of[e] : 0].limit;
        if (plast_sym_norm(L) > sqrt(3.0) * log(lim) * (1 + 1e-9) + 1e-12)
            s = defo_error(DEFO_ERR_PARSE, "plastic state: element %ld beyond its limit", (long)e);
        /* F_p⁻¹ = exp(−L_p): its determinant exp(−tr L_p) */
        defo_mat3 A;
        memcpy(A.m, st + 8 * (PLAST_STATE * np + 9 * pq), sizeof A.m);
        if (!s && !(fabs(log(fabs(defo_m3_det(A))) + plast_sym_trace(L)) < 1e-9))
            s = defo_error(DEFO_ERR_PARSE, "plastic state: element %ld: F_p⁻¹ is not exp(−L_p)",
                           (long)e);
    }
    if (s) {
        defo_free(defs);
        defo_free(set_of);
        defo_free(gF);
        defo_free(gL);
        defo_free(bend);
        return s;
    }
    if (bend && p->bend && p->nh == (defo_index)nh) { /* in place: the force model borrows it */
        memcpy(p->bend, bend, (size_t)p->nh * 8);
        defo_free(bend);
    } else if (bend) { /* unbound: the next bind checks the count */
        defo_free(p->bend);
        p->bend = bend;
        p->nh = (defo_index)nh;
    } else if (p->bend) {
        memset(p->bend, 0, (size_t)p->nh * 8);
    }
    defo_free(p->defs);
    defo_free(p->set_of);
    defo_free(p->goal_F);
    defo_free(p->goal_L);
    p->defs = defs;
    p->set_of = set_of;
    p->num_sets = sets;
    p->dirty = h[5];
    memcpy(p->state, st, PLAST_STATE * np * 8);
    memcpy(p->fpi, st + PLAST_STATE * np * 8, 9 * np * 8);
    p->goal_F = gF;
    p->goal_L = gL;
    if (goal) {
        memcpy(gF, st + (PLAST_STATE + 9) * np * 8, 9 * np * 8);
        memcpy(gL, st + (PLAST_STATE + 9) * np * 8 + 9 * np * 8, 6 * np * 8);
    }
    return DEFO_OK;
}
