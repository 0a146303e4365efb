/*
 * integrator/hybrid.c — MMDJ01's hybrid dynamics (§2.6–2.8): bodies move
 * rigidly between impacts (rigid.c); at an impact the collision's effect is
 * found by a static analysis of the body, whose stresses may break it.
 *
 * An impact is a step in which a contact point approaches a collider faster
 * than the bounce threshold.  Its impulses J_i (defo_rigid_solve_contacts,
 * per node) become nodal forces f_i = J_i / τ over the impact's duration τ =
 * 2 d / c (d the body's rest bounding-box diagonal, c its longitudinal wave
 * speed: a compression wave crosses the body and comes back — the contact
 * time of an elastic rod hitting a rigid wall), turned into the rest frame.
 * The body is anchored as MMDJ01 §2.7.1 says: every node farther than r_coll
 * = impact_radius × d from the impact point (the impulse-weighted mean of
 * the contact points, rest frame) is fixed, the anchored part standing for
 * the body's inertia (at least the farthest half of the nodes by distance
 * when r_coll reaches nearly all of them).  The static equilibrium
 * F(x) = f (MMDJ01 eq. 14; the body's own force model: Green strain
 * St. Venant–Kirchhoff, neo-Hookean or corotated as its material says) is
 * solved by Newton (defo_newton) in the rest frame from the rest shape, and
 * the nodes are placed at that deformed shape by the rigid motion: the
 * world's fracture passes read its stresses (MMDJ01 §2.5 planes at once,
 * defo/fracture.h) until no crack starts; after every crack the analysis is
 * solved again on the cracked body (topology_changed), the same forces on
 * the same nodes.  The world then makes every piece a rigid body of its own
 * (MMDJ01 eq. 22).  The next step starts from the rigid placement again: the
 * deformation lasts only as long as the impact (elastic bodies).
 */
#include "integrator/integrator_internal.h"

typedef struct hy_body {
    defo_newton *newton;
    defo_index cap;
    double *u, *f, *fext; /* 3n: the analysis' positions, forces, the impact's loads */
    unsigned char *fixed; /* n: anchored nodes */
    double point[3];      /* the impact point, rest frame */
    int pending;          /* x shows an impact's analysis */
    double residual_target;
    defo_step_body *b;
    defo_status status;
    int iterations;
} hy_body;

static void hy_free(defo_rb_body *d) {
    hy_body *h = d->extra;
    if (!h) return;
    defo_newton_destroy(h->newton);
    defo_free(h->u);
    defo_free(h->f);
    defo_free(h->fext);
    defo_free(h->fixed);
    defo_free(h);
    d->extra = NULL;
}

static defo_status hy_alloc(const defo_integrator_def *def, defo_step_body *b) {
    defo_rb_body *d = b->data;
    hy_body *h = d->extra;
    if (!h) {
        h = defo_calloc(1, sizeof *h);
        if (!h) return defo_error_oom("hybrid body", sizeof *h);
        d->extra = h;
        d->detach_extra = hy_free;
    }
    if (h->cap != b->n) {
        /* keep the impact's loads of the old nodes (a crack adds nodes) */
        double *fext = defo_calloc(3 * (size_t)b->n + 1, sizeof(double));
        if (!fext) return defo_error_oom("hybrid body", 3 * (size_t)b->n * sizeof(double));
        if (h->fext)
            memcpy(fext, h->fext, 3 * (size_t)(h->cap < b->n ? h->cap : b->n) * sizeof(double));
        defo_free(h->fext);
        h->fext = fext;
        defo_free(h->u);
        defo_free(h->f);
        defo_free(h->fixed);
        h->u = defo_calloc(3 * (size_t)b->n + 1, sizeof(double));
        h->f = defo_calloc(3 * (size_t)b->n + 1, sizeof(double));
        h->fixed = defo_calloc((size_t)b->n + 1, 1);
        if (!h->u || !h->f || !h->fixed)
            return defo_error_oom("hybrid body", 7 * (size_t)b->n * sizeof(double));
        b->anchors = b->anchors ? h->fixed : NULL; /* the analysis redoes them */
        defo_newton_destroy(h->newton);
        h->newton = NULL;
        defo_newton_def nd = def->newton;
        nd.linear = def->linear;
        nd.linear.curvature = DEFO_CURVATURE_STOP;
        defo_status st = defo_newton_create(&nd, b->n, &h->newton);
        if (st) return defo_error_prefix("hybrid body '%s'", b->name);
        h->cap = b->n;
    }
    return DEFO_OK;
}

/* ------------------------------------------------- the static analysis */
static defo_status an_evaluate(void *ctx, const double *x, double *f, double *energy) {
    hy_body *h = ctx;
    defo_step_body *b = h->b;
    const size_t m = 3 * (size_t)b->n;
    double psi = 0;
    defo_status s = defo_force_model_evaluate(b->force, x, DEFO_EVAL_TANGENT, f, &psi);
    if (s) return s;
    double work = 0;
    for (size_t j = 0; j < m; j++) {
        f[j] += h->fext[j];
        work += h->fext[j] * x[j];
    }
    if (energy) *energy = psi - work;
    return isfinite(psi) ? DEFO_OK : defo_error(DEFO_ERR_NUMERICAL, "non-finite energy");
}
static const defo_bcsr *an_matrix(void *ctx) {
    hy_body *h = ctx;
    defo_bcsr *A = defo_force_model_assemble(h->b->force, 1.0, 0.0, NULL, 0.0);
    if (!A) h->status = defo_last_status();
    return A;
}
static void an_apply(void *ctx, const double *dx, double *y) {
    hy_body *h = ctx;
    defo_force_model_tangent_apply(h->b->force, dx, y);
}
static void an_diagonal(void *ctx, double *blocks) {
    hy_body *h = ctx;
    defo_force_model_tangent_diagonal(h->b->force, blocks);
}

static double bbox_diagonal(const double *x, defo_index n) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], x[3 * (size_t)i + k]);
            hi[k] = fmax(hi[k], x[3 * (size_t)i + k]);
        }
    return sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                (hi[2] - lo[2]) * (hi[2] - lo[2]));
}

/* The analysis of the impact held in h (loads fext, point) on b's current
 * mesh: anchors, Newton from the rest shape, the nodes placed at the
 * deformed shape by the rigid motion. */
static defo_status analyse(const defo_integrator_def *def, defo_step_body *b) {
    defo_rb_body *d = b->data;
    hy_body *h = d->extra;
    const defo_index n = b->n;
    const double *X = b->mesh->x;
    const double diag = bbox_diagonal(X, n);
    const double r_coll = def->impact_radius * diag;
    double far = 0;
    for (defo_index i = 0; i < n; i++) {
        const double *p = X + 3 * (size_t)i;
        far = fmax(far, sqrt((p[0] - h->point[0]) * (p[0] - h->point[0]) +
                             (p[1] - h->point[1]) * (p[1] - h->point[1]) +
                             (p[2] - h->point[2]) * (p[2] - h->point[2])));
    }
    /* anchors beyond r_coll; at least the farther half of the reach */
    const double r = fmin(r_coll, 0.5 * far);
    defo_index anchored = 0;
    for (defo_index i = 0; i < n; i++) {
        const double *p = X + 3 * (size_t)i;
        const double dist = sqrt((p[0] - h->point[0]) * (p[0] - h->point[0]) +
                                 (p[1] - h->point[1]) * (p[1] - h->point[1]) +
                                 (p[2] - h->point[2]) * (p[2] - h->point[2]));
        h->fixed[i] = dist > r ? DEFO_CONSTRAINT_FIXED : DEFO_CONSTRAINT_NONE;
        anchored += h->fixed[i] != 0;
    }
    if (anchored == 0 || anchored == n) return DEFO_OK; /* nothing to solve */
    double fbig = 0;
    for (defo_index i = 0; i < n; i++)
        if (!h->fixed[i]) {
            const double *f = h->fext + 3 * (size_t)i;
            fbig = fmax(fbig, sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]));
        }
    if (!(fbig > 0)) return DEFO_OK;
    memcpy(h->u, X, 3 * (size_t)n * sizeof(double));
    h->b = b;
    h->status = DEFO_OK;
    /* every analysis from scratch: no factorisation carried from an earlier
     * impact (it would be history a checkpoint does not hold) */
    defo_newton_invalidate(h->newton);
    defo_newton_problem p;
    memset(&p, 0, sizeof p);
    p.n = n;
    p.ctx = h;
    p.evaluate = an_evaluate;
    p.matrix = an_matrix;
    p.apply = an_apply;
    p.diagonal = an_diagonal;
    p.constraint = h->fixed;
    double E = 0;
    defo_status st = an_evaluate(h, h->u, h->f, &E);
    defo_newton_stats ns;
    memset(&ns, 0, sizeof ns);
    if (!st)
        st = defo_newton_solve(h->newton, &p, fmax(def->tolerance * fbig, b->residual_floor), h->u,
                               h->f, E, 0, &ns);
    b->stats.newton_iterations += ns.iterations;
    b->stats.cg_iterations += ns.cg_iterations;
    if (ns.cg_iterations > b->stats.cg_max_iterations)
        b->stats.cg_max_iterations = ns.cg_iterations;
    b->stats.solver_recoveries += ns.recoveries;
    if (st > 0) b->stats.not_converged++;
    if (st < 0) return defo_error_prefix("body '%s': impact analysis", b->name);
    /* place the deformed shape */
    double P[9];
    defo_rigid_placement(&d->rb, P);
    const double *c = d->rb.center, *C = d->rest.center;
    for (defo_index i = 0; i < n; i++) {
        const double *u = h->u + 3 * (size_t)i;
        const double r0[3] = {u[0] - C[0], u[1] - C[1], u[2] - C[2]};
        for (int k = 0; k < 3; k++)
            b->x[3 * (size_t)i + k] =
                c[k] + P[3 * k] * r0[0] + P[3 * k + 1] * r0[1] + P[3 * k + 2] * r0[2];
    }
    h->pending = 1;
    b->impact = 1;
    b->anchors = h->fixed;
    return st;
}

/* ------------------------------------------------------------ the ops */
static defo_status hy_attach(defo_stepper *s, defo_step_body *b) {
    defo_status st = defo_rb_attach(b);
    if (!st) st = hy_alloc(&s->def, b);
    if (st) defo_rb_detach(b);
    return st;
}
static void hy_detach(defo_stepper *s, defo_step_body *b) {
    defo_rb_forget(s, b);
    defo_rb_detach(b);
}

#define HY_BOUNCE 0.05 /* [m/s]: slower approaches are resting contact */

static defo_status hy_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    defo_status warn = DEFO_OK;
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_rb_body *d = b->data;
        hy_body *h = d->extra;
        if (h->pending) { /* the impact is over: the rigid shape again */
            defo_rb_place(b);
            h->pending = 0;
            b->impact = 0;
            b->anchors = NULL;
        }
    }
    /* the rigid motion of all bodies together: contacts with colliders,
     * with each other (fragments meeting fragments, MMDJ01 §2.8) and with
     * other bodies, in one solve */
    defo_status st = defo_stepper_scratch(s, count);
    if (!st) st = defo_rb_step(s, bodies, count, ctx, s->hs);
    if (st) return st;
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_rb_body *d = b->data;
        hy_body *h = d->extra;
        const double approach = s->hs[i];
        if (!(approach > HY_BOUNCE) || !b->breaks || !(b->wave_speed > 0)) continue;
        /* the impact: forces over its duration, rest frame */
        const double tau = 2 * bbox_diagonal(b->mesh->x, b->n) / b->wave_speed;
        double P[9], wsum = 0;
        defo_rigid_placement(&d->rb, P);
        memset(h->fext, 0, 3 * (size_t)b->n * sizeof(double));
        memset(h->point, 0, sizeof h->point);
        for (defo_index k = 0; k < b->n; k++) {
            const double *J = d->impulse + 3 * (size_t)k;
            const double jn = sqrt(J[0] * J[0] + J[1] * J[1] + J[2] * J[2]);
            if (!(jn > 0)) continue;
            double *f = h->fext + 3 * (size_t)k;
            for (int q = 0; q < 3; q++)
                f[q] = (P[q] * J[0] + P[3 + q] * J[1] + P[6 + q] * J[2]) / tau;
            for (int q = 0; q < 3; q++) h->point[q] += jn * b->mesh->x[3 * (size_t)k + q];
            wsum += jn;
        }
        if (!(wsum > 0)) continue;
        for (int q = 0; q < 3; q++) h->point[q] /= wsum;
        st = analyse(&s->def, b);
        if (st < 0) return st;
        if (st > 0) warn = st;
    }
    return warn;
}

static defo_status hy_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                       const defo_index *parent) {
    (void)old_n, (void)parent;
    defo_rb_forget(s, b);
    defo_status st = defo_rb_resize(b);
    if (!st) st = hy_alloc(&s->def, b);
    if (st) return st;
    defo_rb_body *d = b->data;
    hy_body *h = d->extra;
    /* a crack during an impact's analysis: the same loads on the cracked
     * body (new nodes carry none) */
    if (h->pending) {
        st = analyse(&s->def, b);
        if (st < 0) return st;
    }
    return DEFO_OK;
}

static void hy_frame_start(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_rb_frame_start(b);
}

/* history: the rigid state, whether x shows an impact's analysis the world
 * has not yet broken the body by, and then that impact (its point, its
 * loads, its anchors: a crack re-analyses with them); last the contact
 * solve's warm impulses (defo_rb_warm_save) */
static size_t pending_bytes(const defo_step_body *b) {
    return 24 + 24 * (size_t)b->n + ((size_t)b->n + 7) / 8 * 8;
}
static size_t hy_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    const defo_rb_body *d = b->data;
    const hy_body *h = d->extra;
    return defo_rb_history_bytes(b) + 8 + (h->pending ? pending_bytes(b) : 0) +
           defo_rb_warm_bytes(s, b);
}
static void hy_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    const defo_rb_body *d = b->data;
    const hy_body *h = d->extra;
    unsigned char *o = out;
    defo_rb_save(b, o);
    o += defo_rb_history_bytes(b);
    const double pending = h->pending;
    memcpy(o, &pending, 8);
    o += 8;
    defo_rb_warm_save(s, b, o + (h->pending ? pending_bytes(b) : 0));
    if (!h->pending) return;
    memcpy(o, h->point, 24);
    memcpy(o + 24, h->fext, 24 * (size_t)b->n);
    memset(o + 24 + 24 * (size_t)b->n, 0, ((size_t)b->n + 7) / 8 * 8);
    memcpy(o + 24 + 24 * (size_t)b->n, h->fixed, (size_t)b->n);
}
static defo_status hy_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size) {
    defo_rb_body *d = b->data;
    hy_body *h = d->extra;
    const size_t rb = defo_rb_history_bytes(b);
    double pending = 0;
    if (size >= rb + 8) memcpy(&pending, (const unsigned char *)in + rb, 8);
    const size_t head = rb + 8 + (pending != 0 ? pending_bytes(b) : 0);
    if ((pending != 0 && pending != 1) || size < head)
        return defo_error(DEFO_ERR_PARSE, "hybrid state of body '%s': %zu bytes, bad impact record",
                          b->name, size);
    const unsigned char *p = (const unsigned char *)in + rb + 8;
    /* the warm impulses after it (none in a history from before them) */
    defo_status st = defo_rb_warm_restore(s, b, (const unsigned char *)in + head, size - head, 0);
    if (st) return st;
    if (pending != 0) {
        double pt[3];
        memcpy(pt, p, 24);
        for (size_t k = 0; k < 3 * (size_t)b->n + 3; k++) {
            double v;
            memcpy(&v, p + 8 * k, 8);
            if (!isfinite(v))
                return defo_error(DEFO_ERR_PARSE, "hybrid state of body '%s': impact not finite",
                                  b->name);
        }
        for (defo_index i = 0; i < b->n; i++)
            if (p[24 + 24 * (size_t)b->n + (size_t)i] > DEFO_CONSTRAINT_FIXED)
                return defo_error(DEFO_ERR_PARSE, "hybrid state of body '%s': bad anchors",
                                  b->name);
    }
    st = defo_rb_restore(b, in, rb);
    if (!st) st = defo_rb_warm_restore(s, b, (const unsigned char *)in + head, size - head, 1);
    if (st) return st;
    h->pending = pending != 0;
    if (h->pending) {
        memcpy(h->point, p, 24);
        memcpy(h->fext, p + 24, 24 * (size_t)b->n);
        memcpy(h->fixed, p + 24 + 24 * (size_t)b->n, (size_t)b->n);
    }
    /* x shows the analysis; the world breaks the body at the next step */
    b->impact = h->pending;
    b->anchors = h->pending ? h->fixed : NULL;
    return DEFO_OK;
}
static size_t hy_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    const defo_rb_body *d = b->data;
    const hy_body *h = d->extra;
    return sizeof(defo_rb_body) + sizeof(hy_body) +
           (size_t)b->n * (sizeof(defo_node_contact) + 12 * sizeof(double) + 1) +
           defo_newton_bytes(h->newton);
}

const defo_integrator_ops defo_hybrid_ops = {DEFO_INTEGRATOR_HYBRID,
                                             "hybrid",
                                             1,
                                             defo_time_step_steps,
                                             defo_stepper_create,
                                             defo_stepper_destroy,
                                             hy_attach,
                                             hy_detach,
                                             hy_step,
                                             hy_topology_changed,
                                             hy_frame_start,
                                             hy_history_bytes,
                                             hy_save,
                                             hy_restore,
                                             hy_bytes};
