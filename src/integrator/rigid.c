/*
 * integrator/rigid.c — bodies that move as rigid bodies (MMDJ01 §2.7;
 * defo/rigid.h): the "rigid" integrator, and the motion between impacts of
 * the "hybrid" one (hybrid.c).
 *
 * A body's rigid state (centre, unit quaternion, velocity, angular momentum)
 * comes from its tets (defo_mass_properties_of at rest, density = its lumped
 * mass over its volume) and from its nodes: the centre, the best-fit
 * rotation (polar factor of Σ m (x − c)(X − C)ᵀ), v = Σ m v / M and ω from
 * the nodes' angular momentum about the lumped centre, L = I ω (exact for
 * nodes that move rigidly: the world's initial velocity and spin, or a
 * state set from outside).  After every step the nodes are placed:
 * x = c + R(q) Bᵀ (X − C), v = v_c + ω × (x − c).
 *
 * A step of dt: the loads act as their resultant F at the centre and their
 * moment τ about the lumped centre of mass (uniform gravity on lumped
 * masses: none).  Without contact: defo_rigid_advance (exact for constant
 * F).  With contact: v += dt F/M, L += dt τ, the nodes within reach of a
 * collider this step (the step context's probe, margin = how far a node can
 * move in the step) become contact points, defo_rigid_solve_contacts
 * resolves them (restitution, Coulomb friction, no tunnelling), then the
 * body moves with its new velocities (symplectic Euler: a resting body
 * stays at rest) plus the push-out of what penetrates.  Deterministic.
 *
 * Body–body contact (rigid–rigid, rigid–deformable) takes its points from
 * the contact layer (defo/contact.h: defo_contact_find's pairs give nodes,
 * weights and normals): a pair becomes a defo_rigid_contact with `other`
 * the other rigid body of the solve, or an obstacle whose velocity is the
 * deformable surface's there; defo_rigid_solve_contacts already solves
 * such pairs (tests/test_rigid.c: momentum kept exactly).  The step
 * context's contact callbacks do not yet hand pairs to rigid steppers —
 * defo_rb_step below is where they would be appended to d->contacts after
 * the collider probe (the solve then takes every body of the stepper with
 * its pairs at once, count > 1).
 */
#include "integrator/integrator_internal.h"

#include "defo/rigid.h"

defo_status defo_rb_attach(defo_step_body *b) {
    defo_rb_body *d = defo_calloc(1, sizeof *d);
    if (!d) return defo_error_oom("rigid body", sizeof *d);
    b->data = d;
    defo_status st = defo_rb_resize(b);
    if (st) {
        defo_rb_detach(b);
        return st;
    }
    defo_rb_fit(b);
    return DEFO_OK;
}

void defo_rb_detach(defo_step_body *b) {
    defo_rb_body *d = b->data;
    if (!d) return;
    defo_free(d->probe);
    defo_free(d->contacts);
    defo_free(d->impulse);
    if (d->detach_extra) d->detach_extra(d);
    defo_free(d);
    b->data = NULL;
    b->rigid = NULL;
}

/* Mass properties of the rest shape and the scratch arrays for n nodes. */
defo_status defo_rb_resize(defo_step_body *b) {
    defo_rb_body *d = b->data;
    double M = 0;
    for (defo_index i = 0; i < b->n; i++) M += b->mass[i];
    defo_mass_properties mp;
    defo_status st = defo_mass_properties_of(b->mesh, NULL, 1.0, &mp);
    if (!st) st = defo_mass_properties_of(b->mesh, NULL, M / mp.volume, &d->rest);
    if (st) return defo_error_prefix("body '%s'", b->name);
    const defo_rigid_body keep = d->rb;
    st = defo_rigid_init(&d->rb, &d->rest);
    if (st) return defo_error_prefix("body '%s'", b->name);
    if (d->have) { /* the motion goes on: only the constants changed */
        memcpy(d->rb.center, keep.center, sizeof keep.center);
        memcpy(d->rb.orientation, keep.orientation, sizeof keep.orientation);
        memcpy(d->rb.velocity, keep.velocity, sizeof keep.velocity);
        memcpy(d->rb.momentum, keep.momentum, sizeof keep.momentum);
    }
    d->radius = 0;
    for (defo_index i = 0; i < b->n; i++) {
        const double *X = b->mesh->x + 3 * (size_t)i;
        const double r[3] = {X[0] - d->rest.center[0], X[1] - d->rest.center[1],
                             X[2] - d->rest.center[2]};
        d->radius = fmax(d->radius, sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2]));
    }
    defo_free(d->probe);
    defo_free(d->contacts);
    defo_free(d->impulse);
    d->probe = defo_malloc((size_t)b->n * sizeof *d->probe + 1);
    d->contacts = defo_malloc((size_t)b->n * sizeof *d->contacts + 1);
    d->impulse = defo_calloc(3 * (size_t)b->n + 1, sizeof(double));
    if (!d->probe || !d->contacts || !d->impulse)
        return defo_error_oom("rigid body contacts", (size_t)b->n * 200);
    b->rigid = &d->rb;
    return DEFO_OK;
}

/* 3×3 solve by Cramer's rule (a symmetric positive definite inertia). */
static int solve3(const double A[9], const double b[3], double x[3]) {
    const double det = A[0] * (A[4] * A[8] - A[5] * A[7]) - A[1] * (A[3] * A[8] - A[5] * A[6]) +
                       A[2] * (A[3] * A[7] - A[4] * A[6]);
    if (!(fabs(det) > 0)) return 0;
    double M[9];
    for (int c = 0; c < 3; c++) {
        memcpy(M, A, sizeof M);
        for (int r = 0; r < 3; r++) M[3 * r + c] = b[r];
        x[c] = (M[0] * (M[4] * M[8] - M[5] * M[7]) - M[1] * (M[3] * M[8] - M[5] * M[6]) +
                M[2] * (M[3] * M[7] - M[4] * M[6])) /
               det;
    }
    return 1;
}

void defo_rb_fit(defo_step_body *b) {
    defo_rb_body *d = b->data;
    double M = 0, c[3] = {0, 0, 0}, C[3] = {0, 0, 0}, v[3] = {0, 0, 0};
    for (defo_index i = 0; i < b->n; i++) {
        M += b->mass[i];
        for (int k = 0; k < 3; k++) {
            c[k] += b->mass[i] * b->x[3 * (size_t)i + k];
            C[k] += b->mass[i] * b->mesh->x[3 * (size_t)i + k];
            v[k] += b->mass[i] * b->v[3 * (size_t)i + k];
        }
    }
    for (int k = 0; k < 3; k++) c[k] /= M, C[k] /= M, v[k] /= M;
    defo_mat3 A = defo_m3_zero(), R;
    double Il[9] = {0}, Ll[3] = {0, 0, 0};
    for (defo_index i = 0; i < b->n; i++) {
        const double m = b->mass[i], *x = b->x + 3 * (size_t)i, *X = b->mesh->x + 3 * (size_t)i;
        const double *vi = b->v + 3 * (size_t)i;
        const double r[3] = {x[0] - c[0], x[1] - c[1], x[2] - c[2]};
        const double u[3] = {vi[0] - v[0], vi[1] - v[1], vi[2] - v[2]};
        for (int p = 0; p < 3; p++)
            for (int q = 0; q < 3; q++) A.m[p][q] += m * r[p] * (X[q] - C[q]);
        const double rr = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
        for (int p = 0; p < 3; p++)
            for (int q = 0; q < 3; q++) Il[3 * p + q] += m * ((p == q ? rr : 0.0) - r[p] * r[q]);
        Ll[0] += m * (r[1] * u[2] - r[2] * u[1]);
        Ll[1] += m * (r[2] * u[0] - r[0] * u[2]);
        Ll[2] += m * (r[0] * u[1] - r[1] * u[0]);
    }
    defo_polar3(&A, &R, NULL);
    double P[9];
    memcpy(P, R.m, sizeof P);
    defo_rigid_set_placement(&d->rb, P);
    /* the exact centre, placed: c + P (C_exact − C_lumped) */
    for (int k = 0; k < 3; k++) {
        double s = 0;
        for (int q = 0; q < 3; q++) s += P[3 * k + q] * (d->rest.center[q] - C[q]);
        d->rb.center[k] = c[k] + s;
        d->rb.velocity[k] = v[k];
    }
    double w[3] = {0, 0, 0};
    if (!solve3(Il, Ll, w)) memset(w, 0, sizeof w);
    defo_rigid_set_angular_velocity(&d->rb, w);
    /* the exact centre moves with v + ω × (c − c_lumped) */
    const double e[3] = {d->rb.center[0] - c[0], d->rb.center[1] - c[1], d->rb.center[2] - c[2]};
    d->rb.velocity[0] += w[1] * e[2] - w[2] * e[1];
    d->rb.velocity[1] += w[2] * e[0] - w[0] * e[2];
    d->rb.velocity[2] += w[0] * e[1] - w[1] * e[0];
    d->have = 1;
}

void defo_rb_place(defo_step_body *b) {
    defo_rb_body *d = b->data;
    double P[9], w[3];
    defo_rigid_placement(&d->rb, P);
    defo_rigid_angular_velocity(&d->rb, w);
    const double *c = d->rb.center, *C = d->rest.center;
    for (defo_index i = 0; i < b->n; i++) {
        const double *X = b->mesh->x + 3 * (size_t)i;
        const double r0[3] = {X[0] - C[0], X[1] - C[1], X[2] - C[2]};
        double *x = b->x + 3 * (size_t)i, *v = b->v + 3 * (size_t)i;
        double r[3];
        for (int k = 0; k < 3; k++)
            r[k] = P[3 * k] * r0[0] + P[3 * k + 1] * r0[1] + P[3 * k + 2] * r0[2];
        for (int k = 0; k < 3; k++) x[k] = c[k] + r[k];
        v[0] = d->rb.velocity[0] + w[1] * r[2] - w[2] * r[1];
        v[1] = d->rb.velocity[1] + w[2] * r[0] - w[0] * r[2];
        v[2] = d->rb.velocity[2] + w[0] * r[1] - w[1] * r[0];
    }
}

/* One step of body b (see the top); approach (may be NULL) gets the largest
 * approach speed of a contact point before the impulses. */
defo_status defo_rb_step(const defo_integrator_def *def, defo_step_body *b,
                         const defo_step_context *ctx, double *approach) {
    defo_rb_body *d = b->data;
    const double dt = ctx->dt;
    if (approach) *approach = 0;
    for (defo_index i = 0; i < b->n; i++)
        if (b->prescribed && b->prescribed[i])
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "body '%s': node %ld is fixed, but a rigid body moves as one piece "
                              "(support it with a collider instead)",
                              b->name, (long)i);
    /* the loads: resultant and moment about the lumped centre */
    double F[3] = {0, 0, 0}, tau[3] = {0, 0, 0}, M = 0, cl[3] = {0, 0, 0};
    for (defo_index i = 0; i < b->n; i++) {
        M += b->mass[i];
        for (int k = 0; k < 3; k++) cl[k] += b->mass[i] * b->x[3 * (size_t)i + k];
    }
    for (int k = 0; k < 3; k++) cl[k] /= M;
    for (defo_index i = 0; i < b->n; i++) {
        const double *f = b->load + 3 * (size_t)i, *x = b->x + 3 * (size_t)i;
        const double r[3] = {x[0] - cl[0], x[1] - cl[1], x[2] - cl[2]};
        for (int k = 0; k < 3; k++) F[k] += f[k];
        tau[0] += r[1] * f[2] - r[2] * f[1];
        tau[1] += r[2] * f[0] - r[0] * f[2];
        tau[2] += r[0] * f[1] - r[1] * f[0];
    }
    memset(d->impulse, 0, 3 * (size_t)b->n * sizeof(double));
    d->num_contacts = 0;
    defo_index found = 0;
    if (ctx->probe) {
        double w[3];
        defo_rigid_angular_velocity(&d->rb, w);
        const double vn =
            sqrt(d->rb.velocity[0] * d->rb.velocity[0] + d->rb.velocity[1] * d->rb.velocity[1] +
                 d->rb.velocity[2] * d->rb.velocity[2]);
        const double wn = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]);
        const double fn = sqrt(F[0] * F[0] + F[1] * F[1] + F[2] * F[2]) / d->rb.mass;
        /* how far a node can move in the step, and a little more */
        const double margin = (vn + wn * d->radius) * dt + fn * dt * dt + 1e-3 * d->radius;
        defo_status st = ctx->probe(ctx->ctx, b, ctx->t, b->x, margin, d->probe, b->n, &found);
        if (st) return defo_error_prefix("body '%s'", b->name);
        if (found > b->n) found = b->n;
    }
    if (found == 0) {
        defo_status st = defo_rigid_advance(&d->rb, F, tau, dt);
        if (st) return defo_error_prefix("body '%s'", b->name);
        defo_rb_place(b);
        return DEFO_OK;
    }
    for (int k = 0; k < 3; k++) {
        d->rb.velocity[k] += dt * F[k] / d->rb.mass;
        d->rb.momentum[k] += dt * tau[k];
    }
    double largest = 0;
    for (defo_index q = 0; q < found; q++) {
        const defo_node_contact *p = &d->probe[q];
        defo_rigid_contact *k = &d->contacts[q];
        memset(k, 0, sizeof *k);
        k->body = 0;
        k->other = -1;
        memcpy(k->point, b->x + 3 * (size_t)p->node, sizeof k->point);
        memcpy(k->normal, p->normal, sizeof k->normal);
        k->gap = p->phi;
        memcpy(k->obstacle_velocity, p->velocity, sizeof k->obstacle_velocity);
        k->friction = p->friction;
        double u[3];
        defo_rigid_velocity_at(&d->rb, k->point, u);
        const double vn = (u[0] - p->velocity[0]) * p->normal[0] +
                          (u[1] - p->velocity[1]) * p->normal[1] +
                          (u[2] - p->velocity[2]) * p->normal[2];
        /* an approach that reaches the surface within the step */
        if (vn < 0 && vn * dt <= -fmax(p->phi, 0.0)) largest = fmax(largest, -vn);
    }
    if (approach) *approach = largest;
    defo_rigid_contact_def cd = defo_default_rigid_contact_def();
    cd.restitution = def->restitution;
    double push[6];
    defo_status st = defo_rigid_solve_contacts(&d->rb, 1, d->contacts, (int)found, &cd, dt, push);
    if (st) return defo_error_prefix("body '%s'", b->name);
    d->num_contacts = (int)found;
    defo_index touching = 0;
    for (defo_index q = 0; q < found; q++) {
        const defo_rigid_contact *k = &d->contacts[q];
        memcpy(d->impulse + 3 * (size_t)d->probe[q].node, k->impulse, 3 * sizeof(double));
        touching += k->normal_impulse > 0;
    }
    b->stats.collisions = touching;
    /* the motion with the new velocities, then the push-out */
    st = defo_rigid_advance(&d->rb, NULL, NULL, dt);
    if (st) return defo_error_prefix("body '%s'", b->name);
    defo_rigid_displace(&d->rb, push, push + 3, dt);
    defo_rb_place(b);
    return DEFO_OK;
}

/* ------------------------------------------------ history (checkpoints) */
#define RB_HISTORY (14 * sizeof(double))
size_t defo_rb_history_bytes(const defo_step_body *b) {
    (void)b;
    return RB_HISTORY;
}
void defo_rb_save(const defo_step_body *b, void *out) {
    const defo_rb_body *d = b->data;
    double h[14];
    memcpy(h, d->rb.center, 24);
    memcpy(h + 3, d->rb.orientation, 32);
    memcpy(h + 7, d->rb.velocity, 24);
    memcpy(h + 10, d->rb.momentum, 24);
    h[13] = d->have;
    memcpy(out, h, sizeof h);
}
defo_status defo_rb_restore(defo_step_body *b, const void *in, size_t size) {
    defo_rb_body *d = b->data;
    if (size != RB_HISTORY)
        return defo_error(DEFO_ERR_PARSE, "rigid state of body '%s': %zu bytes, %zu expected",
                          b->name, size, (size_t)RB_HISTORY);
    double h[14];
    memcpy(h, in, sizeof h);
    for (int k = 0; k < 14; k++)
        if (!isfinite(h[k]))
            return defo_error(DEFO_ERR_PARSE, "rigid state of body '%s': not finite", b->name);
    const double qn = h[3] * h[3] + h[4] * h[4] + h[5] * h[5] + h[6] * h[6];
    if (fabs(qn - 1) > 1e-9 || (h[13] != 0 && h[13] != 1))
        return defo_error(DEFO_ERR_PARSE, "rigid state of body '%s': bad orientation", b->name);
    memcpy(d->rb.center, h, 24);
    memcpy(d->rb.orientation, h + 3, 32);
    memcpy(d->rb.velocity, h + 7, 24);
    memcpy(d->rb.momentum, h + 10, 24);
    d->have = h[13] != 0;
    return DEFO_OK;
}

/* ------------------------------------------------------ the rigid ops */
static defo_status rg_attach(defo_stepper *s, defo_step_body *b) {
    (void)s;
    return defo_rb_attach(b);
}
static void rg_detach(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_rb_detach(b);
}
static defo_status rg_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    for (int i = 0; i < count; i++) {
        defo_status st = defo_rb_step(&s->def, bodies[i], ctx, NULL);
        if (st) return st;
    }
    return DEFO_OK;
}
static defo_status rg_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                       const defo_index *parent) {
    (void)s, (void)old_n, (void)parent;
    return defo_rb_resize(b);
}
void defo_rb_frame_start(defo_step_body *b) {
    /* a state set from outside: the rigid state from the nodes */
    if (b->changed & DEFO_CHANGED_STATE) defo_rb_fit(b);
}
static void rg_frame_start(defo_stepper *s, defo_step_body *b) {
    (void)s;
    defo_rb_frame_start(b);
}
static size_t rg_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return defo_rb_history_bytes(b);
}
static void rg_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    (void)s;
    defo_rb_save(b, out);
}
static defo_status rg_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size) {
    (void)s;
    return defo_rb_restore(b, in, size);
}
static size_t rg_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return sizeof(defo_rb_body) + (size_t)b->n * (sizeof(defo_node_contact) +
                                                  sizeof(defo_rigid_contact) + 3 * sizeof(double));
}

const defo_integrator_ops defo_rigid_ops = {DEFO_INTEGRATOR_RIGID,
                                            "rigid",
                                            1,
                                            defo_time_step_steps,
                                            defo_stepper_create,
                                            defo_stepper_destroy,
                                            rg_attach,
                                            rg_detach,
                                            rg_step,
                                            rg_topology_changed,
                                            rg_frame_start,
                                            rg_history_bytes,
                                            rg_save,
                                            rg_restore,
                                            rg_bytes};
