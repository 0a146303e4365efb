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
 * A step of dt, all bodies of the stepper together (defo_rb_step): the
 * loads act as their resultant F at the centre and their moment τ about
 * the lumped centre of mass (uniform gravity on lumped masses: none).  A
 * body that touches nothing: defo_rigid_advance (exact for constant F).
 * The bodies in contact: v += dt F/M, L += dt τ, then ONE sequential-impulse
 * solve (defo_rigid_solve_contacts: restitution, Coulomb friction, no
 * tunnelling, push-out of what penetrates) over every contact of every
 * body — so the weight of the top of a stack reaches the ground through
 * the bodies below within the solve — then each moves with its new
 * velocities (symplectic Euler: a resting body stays at rest) plus its
 * push-out.  The contacts:
 *   - colliders: the nodes within reach this step (the step context's
 *     probe, margin = how far a node can move in the step);
 *   - other bodies (MMDJ01 §2.8: fragments meeting fragments): the contact
 *     layer's signed vertex–triangle pairs between the bodies' boundary
 *     surfaces where they are (the step context's body_points; surfaces of
 *     new fragments are made when they appear, the BVHs refit each call),
 *     within δ of a surface or up to one mesh edge through it.  A pair of
 *     two bodies of the stepper joins them (`other`: equal and opposite
 *     impulses); a rigid body of another stepper is an obstacle moving with
 *     its nodes; a deformable body is an obstacle made of its nodes: the
 *     impulse −J reaches them through the pair's barycentric weights and
 *     their lumped masses (Δvₐ = −cₐ J / mₐ; its effective inverse mass
 *     Σ cₐ²/mₐ), and the push-out moves them likewise — so the momentum of
 *     the rigid and deformable bodies together is kept to rounding.  The
 *     normal and gap of a point are the flat faces' (flat_normal: a rigid
 *     body's faces are planes, not the smooth pseudo-normals the layer uses
 *     for deformable surfaces; a vertex within RB_ON_FACE of a face meets
 *     it, and faces meeting only rim to rim — diagonal neighbours in a
 *     pile — make no contact: rims_apart).  Rigid–rigid contact is at φ = 0 (touching);
 *     rigid–deformable at φ = δ, the contact layer's thickness, where a
 *     deformable body's own response holds it off other surfaces.
 *   - Manifolds: the resting points of one pair of bodies (or of a body
 *     and the colliders) are grouped by normal into patches, and a patch
 *     of more than 4 points is solved at 4 of them (deepest, then spanning
 *     the largest area: RB_MANIFOLD below); a deformable body's points and
 *     an impact's (the hybrid's nodal loads) are all kept.  A patch goes
 *     to the solve as one (defo_rigid_contact.patch, its points in a row):
 *     one friction impulse at its centre, and up to four points solved as
 *     one block (defo/rigid.h) — what makes a pile of boxes converge.
 *   - Warm starts: each solve starts from the normal and tangential
 *     impulses of the last step's contacts found again, across frames
 *     (keyed by bodies and vertex or nodes: contact_key); the store is a
 *     section of each body's history, so a run resumed from a checkpoint
 *     takes bit-identical steps.  A solve sweeps until no impulse moves by
 *     more than RB_TOLERANCE of the largest, at most RB_SWEEPS; a pass
 *     that runs out is counted (stats.not_converged, reason
 *     MAX_ITERATIONS, residual its last relative change) and the sweeps in
 *     stats.contact_sweeps.
 *
 * Two-way rigid–deformable contact is staggered: the world steps one
 * integrator's bodies after another's, in slices of the rigid steps when
 * rigid and deformable bodies can touch (world.c).  The deformable
 * steppers' calls leave rigid bodies out (world/contact.c); the rigid
 * stepper's solve exchanges the impulses and pushes both apart.  Limits:
 * the deformable body moves through its slice without seeing the rigid
 * one, so it may go into it by up to their relative motion over a rigid
 * step (found again and pushed out while within one mesh edge; deeper goes
 * through); the deformable body's effective mass at a point is its lumped
 * node masses there (stiffness acts between the steps, not inside the
 * impulse solve).  Rigid–rigid: two edges crossing each other are not a
 * contact of their own (their vertices' pairs hold them; two coarse meshes
 * meeting edge on edge interlock until a vertex goes through, within one
 * mesh edge).  Deterministic: pairs, contacts and sweeps in fixed orders.
 */
#include "integrator/integrator_internal.h"

#include "defo/rigid.h"

#include <stdlib.h>

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
    defo_free(d->impulse);
    defo_free(d->flat);
    defo_free(d->normal);
    if (d->detach_extra) d->detach_extra(d);
    defo_free(d);
    b->data = NULL;
    b->rigid = NULL;
}

#define RB_PI 3.14159265358979323846

/* d->flat: the boundary nodes whose boundary faces (rest shape) all lie
 * in one plane — every face normal within 1e-6 rad of the first; d->normal:
 * the sum of their unit normals, each weighted by its angle at the node. */
static defo_status flat_nodes(defo_step_body *b, defo_rb_body *d) {
    defo_free(d->flat);
    defo_free(d->normal);
    d->flat = NULL;
    defo_boundary bd;
    defo_status st = defo_mesh_boundary(b->mesh, b->mesh->order == 2, &bd);
    if (st) return st;
    double *first = defo_calloc(3 * (size_t)b->n + 1, sizeof(double));
    d->flat = defo_malloc((size_t)b->n + 1);
    d->normal = defo_calloc(3 * (size_t)b->n + 1, sizeof(double));
    if (!first || !d->flat || !d->normal) {
        defo_free(first);
        defo_boundary_free(&bd);
        return defo_error_oom("rigid body", 25 * (size_t)b->n);
    }
    memset(d->flat, 2, (size_t)b->n); /* 2: not on the boundary */
    const double *X = b->mesh->x;
    for (defo_index f = 0; f < bd.num_faces; f++) {
        const defo_index *v = bd.faces + (size_t)bd.nodes_per_face * (size_t)f;
        const double *p = X + 3 * (size_t)v[0], *q = X + 3 * (size_t)v[1],
                     *r = X + 3 * (size_t)v[2];
        const double u[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
        const double w[3] = {r[0] - p[0], r[1] - p[1], r[2] - p[2]};
        double nf[3] = {u[1] * w[2] - u[2] * w[1], u[2] * w[0] - u[0] * w[2],
                        u[0] * w[1] - u[1] * w[0]};
        const double l = sqrt(nf[0] * nf[0] + nf[1] * nf[1] + nf[2] * nf[2]);
        if (!(l > 0)) continue;
        for (int k = 0; k < 3; k++) nf[k] /= l;
        for (int a = 0; a < bd.nodes_per_face; a++) {
            const defo_index i = v[a];
            double *o = first + 3 * (size_t)i;
            /* angle-weighted: a box's corner leans along its diagonal
             * however its faces are split (a mid-edge node: π) */
            double ang = RB_PI;
            if (a < 3) {
                const double *c = X + 3 * (size_t)v[a], *e1 = X + 3 * (size_t)v[(a + 1) % 3],
                             *e2 = X + 3 * (size_t)v[(a + 2) % 3];
                const double g[3] = {e1[0] - c[0], e1[1] - c[1], e1[2] - c[2]};
                const double h[3] = {e2[0] - c[0], e2[1] - c[1], e2[2] - c[2]};
                const double gh = g[0] * h[0] + g[1] * h[1] + g[2] * h[2];
                const double gg = g[0] * g[0] + g[1] * g[1] + g[2] * g[2];
                const double hh = h[0] * h[0] + h[1] * h[1] + h[2] * h[2];
                ang = acos(fmax(-1.0, fmin(1.0, gh / sqrt(gg * hh))));
            }
            for (int k = 0; k < 3; k++) d->normal[3 * (size_t)i + k] += ang * nf[k];
            if (d->flat[i] == 2) {
                memcpy(o, nf, sizeof nf);
                d->flat[i] = 1;
            } else if (o[0] * nf[0] + o[1] * nf[1] + o[2] * nf[2] < 1 - 5e-13) {
                d->flat[i] = 0;
            }
        }
    }
    for (defo_index i = 0; i < b->n; i++) d->flat[i] = d->flat[i] == 1;
    defo_free(first);
    defo_boundary_free(&bd);
    return DEFO_OK;
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
    defo_free(d->impulse);
    d->probe = defo_malloc((size_t)b->n * sizeof *d->probe + 1);
    d->impulse = defo_calloc(3 * (size_t)b->n + 1, sizeof(double));
    if (!d->probe || !d->impulse) return defo_error_oom("rigid body contacts", (size_t)b->n * 200);
    st = flat_nodes(b, d);
    if (st) return defo_error_prefix("body '%s'", b->name);
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

/* ------------------------------------------------------------- a step */
/* Gauss–Seidel sweeps of a solve at most, each pass; the velocity pass
 * stops when no accumulated impulse moved by more than RB_TOLERANCE of the
 * largest in a sweep (the head-on test's exact velocities and spin-free
 * rebound need it), the push-out pass at RB_PUSH_TOLERANCE of the velocity
 * pass's largest impulse (what it leaves, ~1e-4 g dt² of position, the next
 * step removes); a cap reached is counted: stats.not_converged */
#define RB_SWEEPS         300
#define RB_TOLERANCE      1e-9
#define RB_PUSH_TOLERANCE 1e-4
/* Contact manifolds: the resting points of one pair of bodies (or of a body
 * and the colliders) whose normals agree within RB_MANIFOLD_COS are one
 * patch; a patch of more than RB_MANIFOLD points is solved at RB_MANIFOLD of
 * them: the deepest (of equally deep ones, within RB_GAP_TIE, the farthest
 * from the patch's centre, so that a flat face keeps its corners from step
 * to step and their warm starts), the farthest from it, the one spanning
 * the largest triangle with those, the one adding the most area (the usual
 * reduction of game-physics engines).  For rigid bodies the velocity at a
 * point of the patch is an affine function of the point and the gap of a
 * flat patch too, so the kept points hold every point inside their hull (a
 * rectangular face: all of it).  A patch any point of which approaches faster than
 * RB_RESTING keeps all its points: an impact's impulses are the hybrid's
 * nodal loads. */
#define RB_MANIFOLD     4
#define RB_MANIFOLD_COS 0.999
#define RB_RESTING      0.05 /* [m/s] (the default bounce threshold) */
#define RB_GAP_TIE      1e-5 /* gaps this close (of the patch's size) are equally deep */
/* Where each contact of the solve came from: a collider (node of the
 * body's own) or a body point (flip: the solve's body is the point's side
 * 1). */
typedef struct rb_source {
    const defo_body_point *pt;
    defo_index node;
    int flip;
} rb_source;

/* A contact's impulse kept for the next step (warm start): what it joins
 * (key: bodies and nodes; owner: the world index of the contact's body;
 * other: of the other side's, −1 a collider), its normal and tangential
 * impulse. */
typedef struct rb_warm {
    uint64_t key;
    int32_t owner, other;
    double j[4];
} rb_warm;

/* A contact in the sort of the manifold pass and the warm store. */
typedef struct rb_order {
    int32_t a, b; /* group: world indices */
    uint32_t seq; /* contact index */
    uint64_t key;
} rb_order;

struct defo_rb_scratch {
    int cap_bodies;
    defo_rigid_body *rb; /* the bodies' states, side by side for the solve */
    double *push;        /* 6 per body */
    double *load;        /* 6 per body: F, τ */
    unsigned char *touch;
    int *call_of; /* world body index → call index (−1) */
    int cap_index;
    defo_rigid_contact *contacts;
    rb_source *src;
    uint64_t *key;   /* per contact: what it joins (contact_key) */
    int32_t *other;  /* per contact: the other side's world index (−1: a collider) */
    double *speed;   /* per contact: its approach speed */
    int *patch;      /* per contact: its manifold patch (−1: none) */
    rb_order *order; /* per contact: the sort */
    int *patch_body, *patch_other, *patch_dropped;
    int *dest;          /* per contact: the sort by patch (manifolds) */
    unsigned char *tmp; /* per contact: room for one of the arrays above */
    size_t cap_contacts;
    /* the last step's impulses by (owner, key), sorted: the next step
     * starts from them (kept across frames; in checkpoints) */
    rb_warm *warm;
    unsigned char *taken; /* per warm entry: given to a contact this step */
    size_t warm_n, warm_cap;
    /* deformable bodies met: their nodes' push-out pseudo-velocities (3n,
     * by world index), which of them this step */
    double **dpush;
    defo_index *dpush_n;
    int cap_dpush;
    defo_step_body **used;
    int num_used;
    void *work; /* the contact solve's workspace (grown) */
    size_t cap_work;
};

/* The per-contact arrays (scratch_contacts sizes them together). */
static void free_contact_arrays(struct defo_rb_scratch *r) {
    defo_free(r->contacts);
    defo_free(r->src);
    defo_free(r->key);
    defo_free(r->other);
    defo_free(r->speed);
    defo_free(r->patch);
    defo_free(r->order);
    defo_free(r->patch_body);
    defo_free(r->patch_other);
    defo_free(r->patch_dropped);
    defo_free(r->dest);
    defo_free(r->tmp);
}

void defo_rb_scratch_free(struct defo_rb_scratch *r) {
    if (!r) return;
    defo_free(r->rb);
    defo_free(r->push);
    defo_free(r->load);
    defo_free(r->touch);
    defo_free(r->call_of);
    free_contact_arrays(r);
    defo_free(r->warm);
    defo_free(r->taken);
    for (int i = 0; i < r->cap_dpush; i++) defo_free(r->dpush[i]);
    defo_free(r->dpush);
    defo_free(r->dpush_n);
    defo_free(r->used);
    defo_free(r->work);
    defo_free(r);
}

/* The push-out array of deformable body b, zeroed at its first use in the
 * step (grown; kept between steps). */
static double *deformable_push(struct defo_rb_scratch *r, defo_step_body *b) {
    if (b->index >= r->cap_dpush) {
        const int c = b->index + 16;
        double **np = defo_realloc(r->dpush, (size_t)c * sizeof *np);
        if (np) r->dpush = np;
        defo_index *nn = defo_realloc(r->dpush_n, (size_t)c * sizeof *nn);
        if (nn) r->dpush_n = nn;
        defo_step_body **nu = defo_realloc(r->used, (size_t)c * sizeof *nu);
        if (nu) r->used = nu;
        if (!np || !nn || !nu) return NULL;
        for (int i = r->cap_dpush; i < c; i++) r->dpush[i] = NULL, r->dpush_n[i] = -1;
        r->cap_dpush = c;
    }
    for (int i = 0; i < r->num_used; i++)
        if (r->used[i] == b) return r->dpush[b->index];
    if (r->dpush_n[b->index] < b->n) {
        defo_free(r->dpush[b->index]);
        r->dpush[b->index] = defo_malloc(3 * (size_t)b->n * sizeof(double) + 1);
        r->dpush_n[b->index] = r->dpush[b->index] ? b->n : -1;
        if (!r->dpush[b->index]) return NULL;
    }
    memset(r->dpush[b->index], 0, 3 * (size_t)b->n * sizeof(double));
    r->used[r->num_used++] = b;
    return r->dpush[b->index];
}

static defo_status scratch_bodies(defo_stepper *s, int count) {
    if (!s->rb) {
        s->rb = defo_calloc(1, sizeof *s->rb);
        if (!s->rb) return defo_error_oom("rigid contacts", sizeof *s->rb);
    }
    struct defo_rb_scratch *r = s->rb;
    if (count <= r->cap_bodies) return DEFO_OK;
    defo_free(r->rb);
    defo_free(r->push);
    defo_free(r->load);
    defo_free(r->touch);
    r->rb = defo_malloc((size_t)count * sizeof *r->rb);
    r->push = defo_malloc(6 * (size_t)count * sizeof(double));
    r->load = defo_malloc(6 * (size_t)count * sizeof(double));
    r->touch = defo_malloc((size_t)count);
    r->cap_bodies = 0;
    if (!r->rb || !r->push || !r->load || !r->touch)
        return defo_error_oom("rigid contacts", (size_t)count * 300);
    r->cap_bodies = count;
    return DEFO_OK;
}

static defo_status scratch_contacts(struct defo_rb_scratch *r, size_t need) {
    if (need <= r->cap_contacts) return DEFO_OK;
    size_t c = r->cap_contacts ? r->cap_contacts : 64;
    while (c < need) c *= 2;
    free_contact_arrays(r);
    r->contacts = defo_malloc(c * sizeof *r->contacts);
    r->src = defo_malloc(c * sizeof *r->src);
    r->key = defo_malloc(c * sizeof *r->key);
    r->other = defo_malloc(c * sizeof *r->other);
    r->speed = defo_malloc(c * sizeof *r->speed);
    r->patch = defo_malloc(c * sizeof *r->patch);
    r->order = defo_malloc(c * sizeof *r->order);
    r->patch_body = defo_malloc(c * sizeof *r->patch_body);
    r->patch_other = defo_malloc(c * sizeof *r->patch_other);
    r->patch_dropped = defo_malloc(c * sizeof *r->patch_dropped);
    r->dest = defo_malloc(c * sizeof *r->dest);
    r->tmp = defo_malloc(c * sizeof *r->contacts);
    r->cap_contacts = 0;
    if (!r->contacts || !r->src || !r->key || !r->other || !r->speed || !r->patch || !r->order ||
        !r->patch_body || !r->patch_other || !r->patch_dropped || !r->dest || !r->tmp)
        return defo_error_oom("rigid contacts", c * sizeof *r->contacts);
    r->cap_contacts = c;
    return DEFO_OK;
}

/* ------------------------------------------------------ warm starts */
static uint64_t mix(uint64_t h, uint64_t v) {
    for (int k = 0; k < 8; k++) {
        h ^= (v >> (8 * k)) & 0xffu;
        h *= 1099511628211u; /* FNV-1a */
    }
    return h;
}

/* What contact c joins (its identity from step to step): the bodies
 * (world indices) and
 *   - a collider contact: the body's node;
 *   - a vertex of a rigid body against a face of another rigid body: the
 *     vertex, which side it is on and the face's direction (the axis
 *     nearest the normal, signed) — not the triangle: a vertex resting on
 *     a flat face crosses the face's mesh edges, and one on an edge is
 *     given to either triangle by rounding;
 *   - otherwise the nodes of each side. */
static uint64_t contact_key(defo_step_body *const *bodies, const defo_rigid_contact *k,
                            const rb_source *src) {
    uint64_t h = 14695981039346656037u;
    h = mix(h, (uint64_t)bodies[k->body]->index);
    if (!src->pt) return mix(mix(h, 0xC0111DE5u), (uint64_t)src->node);
    const defo_body_point *pt = src->pt;
    h = mix(h, (uint64_t)pt->body[1 - src->flip]->index + 1);
    if (pt->body[0]->rigid && pt->body[1]->rigid && pt->nodes[0] == 1 && pt->nodes[1] == 3) {
        int axis = 0;
        for (int q = 1; q < 3; q++)
            if (fabs(k->normal[q]) > fabs(k->normal[axis])) axis = q;
        const uint64_t dir = 2 * (uint64_t)axis + (k->normal[axis] < 0);
        return mix(mix(mix(h, 0x7E47E8u + (uint64_t)src->flip), (uint64_t)pt->node[0][0]), dir);
    }
    for (int sd = 0; sd < 2; sd++) {
        const int s = sd == 0 ? src->flip : 1 - src->flip;
        for (int a = 0; a < pt->nodes[s]; a++) h = mix(h, (uint64_t)pt->node[s][a]);
        h = mix(h, 0xFFFFFFFFu);
    }
    return h;
}

static int order_cmp(const void *x, const void *y) {
    const rb_order *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    if (p->b != q->b) return p->b < q->b ? -1 : 1;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return (p->seq > q->seq) - (p->seq < q->seq);
}

/* The first warm entry of owner at or after key (warm_n: none). */
static size_t warm_find(const struct defo_rb_scratch *r, int32_t owner, uint64_t key) {
    size_t lo = 0, hi = r->warm_n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const rb_warm *e = &r->warm[mid];
        if (e->owner < owner || (e->owner == owner && e->key < key))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The last step's impulse of each contact found again (by owner and key);
 * how many were.  Contacts of one key (a vertex on two triangles of one
 * face, at their common edge) take its entries one each, in order: one
 * impulse given to both would press twice. */
static size_t warm_take(struct defo_rb_scratch *r, defo_step_body *const *bodies, size_t nc) {
    size_t found = 0;
    if (r->warm_n) memset(r->taken, 0, r->warm_n);
    for (size_t c = 0; c < nc; c++) {
        defo_rigid_contact *k = &r->contacts[c];
        const int32_t owner = bodies[k->body]->index;
        size_t at = warm_find(r, owner, r->key[c]);
        while (at < r->warm_n && r->taken[at] && r->warm[at].owner == owner &&
               r->warm[at].key == r->key[c])
            at++;
        if (at < r->warm_n && r->warm[at].owner == owner && r->warm[at].key == r->key[c]) {
            k->normal_impulse = r->warm[at].j[0];
            memcpy(k->tangent_impulse, r->warm[at].j + 1, sizeof k->tangent_impulse);
            r->taken[at] = 1;
            found++;
        }
    }
    return found;
}

static defo_status warm_reserve(struct defo_rb_scratch *r, size_t n) {
    if (n <= r->warm_cap) return DEFO_OK;
    size_t c = r->warm_cap ? r->warm_cap : 64;
    while (c < n) c *= 2;
    rb_warm *w = defo_realloc(r->warm, c * sizeof *w);
    if (w) r->warm = w;
    unsigned char *t = defo_realloc(r->taken, c);
    if (t) r->taken = t;
    if (!w || !t) return defo_error_oom("rigid contacts", c * sizeof *w);
    r->warm = w;
    r->warm_cap = c;
    return DEFO_OK;
}

/* Keep this step's impulses, sorted by (owner, key, contact order). */
static defo_status warm_keep(struct defo_rb_scratch *r, defo_step_body *const *bodies, size_t nc) {
    defo_status st = warm_reserve(r, nc);
    if (st) return st;
    size_t n = 0;
    for (size_t c = 0; c < nc; c++) {
        const defo_rigid_contact *k = &r->contacts[c];
        if (!(k->normal_impulse > 0)) continue;
        r->order[n++] = (rb_order){bodies[k->body]->index, 0, (uint32_t)c, r->key[c]};
    }
    if (n > 1) qsort(r->order, n, sizeof *r->order, order_cmp);
    for (size_t e = 0; e < n; e++) {
        const size_t c = r->order[e].seq;
        const defo_rigid_contact *k = &r->contacts[c];
        rb_warm *w = &r->warm[e];
        w->key = r->key[c];
        w->owner = r->order[e].a;
        w->other = r->other[c];
        w->j[0] = k->normal_impulse;
        memcpy(w->j + 1, k->tangent_impulse, 3 * sizeof(double));
    }
    r->warm_n = n;
    return DEFO_OK;
}

/* Forget the warm impulses of contacts of world body `index` (it left the
 * stepper, or its nodes were renumbered). */
static void warm_forget(struct defo_rb_scratch *r, int index) {
    if (!r) return;
    size_t n = 0;
    for (size_t e = 0; e < r->warm_n; e++)
        if (r->warm[e].owner != index && r->warm[e].other != index) r->warm[n++] = r->warm[e];
    r->warm_n = n;
}

/* The range of owner's entries. */
static void warm_range(const struct defo_rb_scratch *r, int32_t owner, size_t *lo, size_t *hi) {
    *lo = warm_find(r, owner, 0);
    *hi = *lo;
    while (*hi < r->warm_n && r->warm[*hi].owner == owner) ++*hi;
}

/* The warm impulses of a body in its history (the contacts it owns):
 *   u64 RB_WARM_TAG | u32 version (1) | u32 count |
 *   per contact: u64 key | i32 other | i32 0 | f64 normal | f64 tangent[3].
 * A history without the section (written before it existed) restores with
 * none: that body's contacts start cold. */
#define RB_WARM_TAG     0x4D5241574252ull /* "RBWARM" */
#define RB_WARM_VERSION 1u
#define RB_WARM_ENTRY   48
size_t defo_rb_warm_bytes(const defo_stepper *s, const defo_step_body *b) {
    size_t lo = 0, hi = 0;
    if (s->rb) warm_range(s->rb, b->index, &lo, &hi);
    return 16 + RB_WARM_ENTRY * (hi - lo);
}
void defo_rb_warm_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    size_t lo = 0, hi = 0;
    if (s->rb) warm_range(s->rb, b->index, &lo, &hi);
    unsigned char *o = out;
    const uint64_t tag = RB_WARM_TAG;
    const uint32_t head[2] = {RB_WARM_VERSION, (uint32_t)(hi - lo)};
    memcpy(o, &tag, 8);
    memcpy(o + 8, head, 8);
    o += 16;
    for (size_t e = lo; e < hi; e++, o += RB_WARM_ENTRY) {
        const rb_warm *w = &s->rb->warm[e];
        const int32_t oi[2] = {w->other, 0};
        memcpy(o, &w->key, 8);
        memcpy(o + 8, oi, 8);
        memcpy(o + 16, w->j, 32);
    }
}
defo_status defo_rb_warm_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size,
                                 int apply) {
    const unsigned char *p = in;
    uint64_t tag = 0;
    uint32_t head[2] = {0, 0};
    if (size > 0) {
        if (size < 16)
            return defo_error(DEFO_ERR_PARSE, "warm impulses of body '%s': %zu bytes", b->name,
                              size);
        memcpy(&tag, p, 8);
        memcpy(head, p + 8, 8);
        if (tag != RB_WARM_TAG)
            return defo_error(DEFO_ERR_PARSE, "warm impulses of body '%s': not a warm section",
                              b->name);
        if (head[0] != RB_WARM_VERSION)
            return defo_error(DEFO_ERR_PARSE,
                              "warm impulses of body '%s': version %u, this defo reads version %u",
                              b->name, head[0], RB_WARM_VERSION);
        if (size != 16 + RB_WARM_ENTRY * (size_t)head[1])
            return defo_error(DEFO_ERR_PARSE,
                              "warm impulses of body '%s': %zu bytes for %u contacts", b->name,
                              size, head[1]);
    }
    const size_t n = head[1];
    uint64_t last = 0;
    for (size_t e = 0; e < n; e++) {
        const unsigned char *q = p + 16 + RB_WARM_ENTRY * e;
        uint64_t key;
        int32_t oi[2];
        double j[4];
        memcpy(&key, q, 8);
        memcpy(oi, q + 8, 8);
        memcpy(j, q + 16, 32);
        if ((e > 0 && key < last) || oi[0] < -1 || oi[1] != 0 || !(j[0] > 0) ||
            !isfinite(j[0] + j[1] + j[2] + j[3]))
            return defo_error(DEFO_ERR_PARSE, "warm impulses of body '%s': contact %zu is bad",
                              b->name, e);
        last = key;
    }
    if (!apply) return DEFO_OK;
    if (!s->rb) {
        s->rb = defo_calloc(1, sizeof *s->rb);
        if (!s->rb) return defo_error_oom("rigid contacts", sizeof *s->rb);
    }
    struct defo_rb_scratch *r = s->rb;
    size_t lo, hi;
    warm_range(r, b->index, &lo, &hi);
    defo_status st = warm_reserve(r, r->warm_n - (hi - lo) + n);
    if (st) return st;
    if (r->warm_n > hi) memmove(r->warm + lo + n, r->warm + hi, (r->warm_n - hi) * sizeof *r->warm);
    r->warm_n = r->warm_n - (hi - lo) + n;
    for (size_t e = 0; e < n; e++) {
        const unsigned char *q = p + 16 + RB_WARM_ENTRY * e;
        rb_warm *w = &r->warm[lo + e];
        memcpy(&w->key, q, 8);
        memcpy(&w->other, q + 8, 4);
        memcpy(w->j, q + 16, 32);
        w->owner = b->index;
    }
    return DEFO_OK;
}
void defo_rb_forget(defo_stepper *s, const defo_step_body *b) {
    warm_forget(s->rb, b->index);
}

static defo_status scratch_index(struct defo_rb_scratch *r, int most) {
    if (most < r->cap_index) return DEFO_OK;
    int c = r->cap_index ? r->cap_index : 16;
    while (c <= most) c *= 2;
    int *n = defo_realloc(r->call_of, (size_t)c * sizeof *n);
    if (!n) return defo_error_oom("rigid contacts", (size_t)c * sizeof *n);
    r->call_of = n;
    r->cap_index = c;
    return DEFO_OK;
}

/* The position and velocity of side s of a body point (Σ cₐ xₐ, Σ cₐ vₐ). */
static void side_point(const defo_body_point *pt, int s, double x[3], double v[3]) {
    const defo_step_body *b = pt->body[s];
    for (int k = 0; k < 3; k++) {
        x[k] = 0;
        if (v) v[k] = 0;
    }
    for (int a = 0; a < pt->nodes[s]; a++) {
        const size_t j = 3 * (size_t)pt->node[s][a];
        for (int k = 0; k < 3; k++) {
            x[k] += pt->weight[s][a] * b->x[j + k];
            if (v) v[k] += pt->weight[s][a] * b->v[j + k];
        }
    }
}

static double dot3(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
static void cross3(const double a[3], const double b[3], double c[3]) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}

/* The normal and gap of a point for flat-faced bodies.  The contact layer
 * turns a vertex over a triangle's edge or corner, and crossing edges, by
 * the two surfaces' pseudo-normals (smooth for deformable surfaces); a box
 * sliding across the edges of another box's meshed face would meet a
 * tilted normal at every mesh edge, and a vertex inside a flat face of one
 * box meeting the bottom edge of another (both faces in one plane) would
 * snag it.  Here, a vertex of a rigid body:
 *   - whose projection falls on the triangle (barycentric coordinates ≥
 *     −RB_ON_FACE) takes the face normal (outward) and its height over the
 *     face;
 *   - otherwise, when the vertex lies inside a flat part of its body's
 *     surface (defo_rb_body.flat), makes no contact (returns 0): such a
 *     vertex meets only a face, and what it meets at the other body's edges
 *     and corners is held by the other body's own vertices against its
 *     face; a corner or edge vertex keeps the layer's normal, unless that
 *     runs across the direction between the closest points (then the two
 *     are apart by their distance: the pseudo-normals of two corners a
 *     mesh edge apart say nothing of a side);
 * and two edges of rigid bodies make no contact (their vertices' pairs hold
 * them; a true edge-on-edge crossing of two coarse meshes is caught only
 * once a vertex goes through, within the contact layer's reach). */
/* How far (of the triangle's heights) a vertex's projection may fall
 * outside a triangle and still meet its face: two flat faces resting on
 * each other are offset by the jitter of the resting solve (~1e-6 m), and a
 * vertex of one on the other's rim must meet the face (its normal, its
 * height), not turn into a corner contact whose direction that jitter
 * decides.  Counting such a vertex on the face moves a support point by at
 * most 1e-3 of a mesh edge: the moment arm of a resting face changes by
 * that fraction. */
#define RB_ON_FACE 1e-3

/* The part of a rigid body's node normal (d->normal, placed as the body
 * is) across the unit n, scaled by w, added to t. */
static void add_across(const defo_rb_body *d, defo_index node, double w, const double n[3],
                       double t[3]) {
    double P[9];
    defo_rigid_placement(&d->rb, P);
    const double *N = d->normal + 3 * (size_t)node;
    double m[3];
    for (int k = 0; k < 3; k++) m[k] = P[3 * k] * N[0] + P[3 * k + 1] * N[1] + P[3 * k + 2] * N[2];
    const double mn = dot3(m, n);
    for (int k = 0; k < 3; k++) t[k] += w * (m[k] - mn * n[k]);
}

/* 1 when the vertex of rigid body 0 and the face of rigid body 1 (outward
 * unit normal n, the vertex's projection at barycentric coordinates
 * 1 − β − γ, β, γ) meet only along their rims: the vertex on its body's
 * crease, its projection on the rim of the other's face (no weight on the
 * face's inner nodes), and the two faces lying on either side of it.  The
 * part of a rim node's normal along the face points out of its face (away
 * from where the face lies): two faces meeting at a rim overlap where
 * those parts point alike — by less than the sum of the faces' half-angles
 * there (90° along an edge, 45° at a box's corner) — and along a line or
 * at a point only beyond it.  Apart here: more than RB_RIMS_APART.  Two
 * boxes side by side and one on top of the first touch the second's top
 * edge along a line, boxes on a grid touch corner to corner: such
 * contacts carry no area, the faces that do overlap hold the bodies, and
 * their direction is decided by rounding (the line of two edges has every
 * normal between the faces'), so they are not contacts. */
#define RB_RIMS_APART 67.5 /* [°]: between 45° (edge and corner overlap) and 90° */
static int rims_apart(const defo_body_point *pt, const defo_rb_body *r0, const defo_rb_body *r1,
                      double beta, double gamma, const double n[3]) {
    const defo_index v = pt->node[0][0];
    if (r0->flat[v]) return 0;
    const double bc[3] = {1 - beta - gamma, beta, gamma};
    double inner = 0; /* the projection's weight on the face's inner nodes */
    for (int a = 0; a < 3; a++)
        if (r1->flat[pt->node[1][a]]) inner += fmax(bc[a], 0.0);
    if (inner > RB_ON_FACE) return 0;
    double ta[3] = {0, 0, 0}, tb[3] = {0, 0, 0};
    add_across(r0, v, 1.0, n, ta);
    for (int a = 0; a < 3; a++)
        if (!r1->flat[pt->node[1][a]]) add_across(r1, pt->node[1][a], fmax(bc[a], 0.0), n, tb);
    const double la = sqrt(dot3(ta, ta)), lb = sqrt(dot3(tb, tb));
    return la > 0.1 && lb > 0.1 && dot3(ta, tb) < cos(RB_RIMS_APART * RB_PI / 180) * la * lb;
}

static int flat_normal(const defo_body_point *pt, double n[3], double *gap) {
    const defo_step_body *b0 = pt->body[0], *b1 = pt->body[1];
    if (pt->nodes[0] == 1 && pt->nodes[1] == 3) {
        const double *p = b0->x + 3 * (size_t)pt->node[0][0];
        const double *a = b1->x + 3 * (size_t)pt->node[1][0];
        const double *b = b1->x + 3 * (size_t)pt->node[1][1];
        const double *c = b1->x + 3 * (size_t)pt->node[1][2];
        const double u[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
        const double v[3] = {c[0] - a[0], c[1] - a[1], c[2] - a[2]};
        const double d[3] = {p[0] - a[0], p[1] - a[1], p[2] - a[2]};
        double f[3];
        cross3(u, v, f);
        const double ff = dot3(f, f);
        if (!(ff > 0)) return 1;
        /* barycentric coordinates of p's projection */
        double t[3];
        cross3(d, v, t);
        const double beta = dot3(t, f) / ff;
        cross3(u, d, t);
        const double gamma = dot3(t, f) / ff;
        if (beta < -RB_ON_FACE || gamma < -RB_ON_FACE || beta + gamma > 1 + RB_ON_FACE) {
            const defo_rb_body *r0 = b0->rigid ? b0->data : NULL;
            if (r0 && r0->flat && r0->flat[pt->node[0][0]]) return 0;
            /* the layer's normal at a corner is the difference of the two
             * pseudo-normals; where it runs across p − q (more than 60°
             * off, either way) it does not say a side: apart by |p − q| */
            double q[3], e[3];
            side_point(pt, 1, q, NULL);
            for (int k = 0; k < 3; k++) e[k] = p[k] - q[k];
            const double le = sqrt(dot3(e, e));
            if (le > 0 && fabs(dot3(e, n)) < 0.5 * le) {
                for (int k = 0; k < 3; k++) n[k] = e[k] / le;
                *gap = le;
            }
            return 1;
        }
        /* on the triangle's boundary, a vertex inside a flat part of its
         * body meets this face only where the boundary lies inside a flat
         * part of the other (its nodes flat): at the other's crease it
         * is the other's own vertices that touch (a box's bottom edge
         * sliding over a vertex of the plane it rests on) */
        const defo_rb_body *r0 = b0->rigid ? b0->data : NULL;
        const defo_rb_body *r1 = b1->rigid ? b1->data : NULL;
        if (r0 && r0->flat && r0->flat[pt->node[0][0]] && r1 && r1->flat) {
            const double bc[3] = {1 - beta - gamma, beta, gamma};
            for (int q = 0; q < 3; q++)
                if (bc[q] <= RB_ON_FACE)
                    for (int m = 0; m < 3; m++)
                        if (m != q && !r1->flat[pt->node[1][m]]) return 0;
        }
        /* a closed surface's triangles turn outward (the contact layer's
         * face normals); a shell's have no side: the layer's says which */
        const double l = sqrt(ff);
        const double sg = b1->mesh->nodes_per_elem != 3 || dot3(f, n) >= 0 ? 1.0 : -1.0;
        for (int k = 0; k < 3; k++) n[k] = sg * f[k] / l;
        if (r0 && r1 && r0->normal && r1->normal && rims_apart(pt, r0, r1, beta, gamma, n))
            return 0;
        *gap = dot3(d, n);
        return 1;
    }
    return !(b0->rigid && b1->rigid);
}

/* Body point pt as contact k on call body i (its side `side`): the other
 * side a body of the call, a rigid body of another stepper (an obstacle
 * moving with its nodes' velocity) or a deformable body (its nodes, with
 * their lumped masses, take the opposite impulse; the gap counts from the
 * contact layer's thickness δ, where the deformable body's own response
 * holds it off a rigid one). */
static int point_contact(const defo_body_point *pt, int side, int i, const int *call_of,
                         double *push, defo_rigid_contact *k) {
    const int o = 1 - side;
    const defo_step_body *ob = pt->body[o];
    memset(k, 0, sizeof *k);
    k->body = i;
    k->other = call_of[ob->index];
    double p0[3], p1[3], vo[3];
    side_point(pt, side, p0, NULL);
    side_point(pt, o, p1, vo);
    double n[3] = {pt->normal[0], pt->normal[1], pt->normal[2]}, gap = pt->gap;
    if (!flat_normal(pt, n, &gap)) return 0;
    const double sg = side == 0 ? 1.0 : -1.0;
    for (int q = 0; q < 3; q++) {
        k->point[q] = 0.5 * (p0[q] + p1[q]);
        k->normal[q] = sg * n[q];
    }
    k->gap = gap;
    k->friction = pt->friction;
    if (k->other >= 0 || ob->rigid) {
        if (k->other < 0) memcpy(k->obstacle_velocity, vo, sizeof vo);
        return 1;
    }
    k->gap -= pt->thickness;
    k->nodes = pt->nodes[o];
    for (int a = 0; a < k->nodes; a++) {
        const defo_index nd = pt->node[o][a];
        k->weight[a] = pt->weight[o][a];
        k->inv_mass[a] = (ob->prescribed && ob->prescribed[nd]) || !(ob->mass[nd] > 0)
                             ? 0.0
                             : 1.0 / ob->mass[nd];
        k->node_velocity[a] = ob->v + 3 * (size_t)nd;
        k->node_push[a] = push + 3 * (size_t)nd;
    }
    return 1;
}

/* The approach speed of contact k before the impulses (0: separating, or
 * not reaching the surface within the step). */
static double approach_of(const defo_rigid_contact *k, const defo_rigid_body *rb, double dt) {
    double u[3], w[3] = {0, 0, 0};
    defo_rigid_velocity_at(&rb[k->body], k->point, u);
    if (k->other >= 0) {
        defo_rigid_velocity_at(&rb[k->other], k->point, w);
    } else if (k->nodes > 0) {
        for (int a = 0; a < k->nodes; a++)
            for (int q = 0; q < 3; q++) w[q] += k->weight[a] * k->node_velocity[a][q];
    } else {
        memcpy(w, k->obstacle_velocity, sizeof w);
    }
    const double vn =
        (u[0] - w[0]) * k->normal[0] + (u[1] - w[1]) * k->normal[1] + (u[2] - w[2]) * k->normal[2];
    return vn < 0 && vn * dt <= -fmax(k->gap, 0.0) ? -vn : 0.0;
}

/* The impulse J of a contact on body b at its side's nodes (a collider's
 * node, or the point's nodes by their weights), into d->impulse. */
static void node_impulse(defo_step_body *b, const rb_source *src, int side, const double J[3],
                         double sign) {
    defo_rb_body *d = b->data;
    if (!src->pt) {
        for (int q = 0; q < 3; q++) d->impulse[3 * (size_t)src->node + q] += sign * J[q];
        return;
    }
    for (int a = 0; a < src->pt->nodes[side]; a++)
        for (int q = 0; q < 3; q++)
            d->impulse[3 * (size_t)src->pt->node[side][a] + q] +=
                sign * src->pt->weight[side][a] * J[q];
}

/* ------------------------------------------------- contact manifolds */
/* Signed area of the triangle p, q, u about the unit normal n (twice it). */
static double area2(const double p[3], const double q[3], const double u[3], const double n[3]) {
    const double a[3] = {q[0] - p[0], q[1] - p[1], q[2] - p[2]};
    const double b[3] = {u[0] - p[0], u[1] - p[1], u[2] - p[2]};
    double c[3];
    cross3(a, b, c);
    return dot3(c, n);
}

/* Better: value v over best (ties, within tol, to the smaller key). */
static int better(double v, uint64_t key, double best, uint64_t best_key, double tol) {
    return v > best + tol || (v >= best - tol && key < best_key);
}

/* The patch [first, first + m) of r->order (its contacts): keep RB_MANIFOLD
 * of them (above), mark the rest in r->patch as −2. n: the patch's normal. */
static void reduce_patch(struct defo_rb_scratch *r, const rb_order *o, size_t m,
                         const double n[3]) {
    const defo_rigid_contact *K = r->contacts;
    size_t pick[RB_MANIFOLD];
    /* the patch's centre and size (squared distance from it, across n) */
    double mid[3] = {0, 0, 0}, span = 0;
    for (size_t e = 0; e < m; e++)
        for (int q = 0; q < 3; q++) mid[q] += K[o[e].seq].point[q] / (double)m;
    double *far = r->speed; /* scratch: the dropped points' speeds are not needed */
    for (size_t e = 0; e < m; e++) {
        const double *x = K[o[e].seq].point;
        const double d[3] = {x[0] - mid[0], x[1] - mid[1], x[2] - mid[2]};
        const double dn = dot3(d, n);
        far[o[e].seq] = dot3(d, d) - dn * dn;
        span = fmax(span, far[o[e].seq]);
    }
    /* distances and areas within RB_ON_FACE of the patch's are equal (the
     * smaller key wins): a vertex of one body and the other's vertex it
     * rests on are one point of the patch, kept from step to step as the
     * same contact (its warm start) whichever the rounding favours */
    const double tie = RB_ON_FACE * span + 1e-300;
    /* the deepest; gaps within RB_GAP_TIE of the patch's size are equally
     * deep (a flat face resting, or tilted over an edge), and of those the
     * farthest from the centre (a corner of the patch) */
    const double gap_tie = RB_GAP_TIE * sqrt(span);
    size_t p0 = 0;
    for (size_t e = 1; e < m; e++) {
        const double g = K[o[e].seq].gap, g0 = K[o[p0].seq].gap;
        if (g < g0 - gap_tie ||
            (g <= g0 + gap_tie && better(far[o[e].seq], o[e].key, far[o[p0].seq], o[p0].key, tie)))
            p0 = e;
    }
    pick[0] = p0;
    /* the farthest from it, across the normal */
    const double *x0 = K[o[p0].seq].point;
    size_t p1 = p0;
    double best = -1;
    for (size_t e = 0; e < m; e++) {
        if (e == p0) continue;
        const double *x = K[o[e].seq].point;
        const double d[3] = {x[0] - x0[0], x[1] - x0[1], x[2] - x0[2]};
        const double dn = dot3(d, n), v = dot3(d, d) - dn * dn;
        if (p1 == p0 || better(v, o[e].key, best, o[p1].key, tie)) p1 = e, best = v;
    }
    pick[1] = p1;
    /* the largest triangle with them (either side), then the most area
     * added beyond the triangle's edges */
    const double *x1 = K[o[p1].seq].point;
    size_t p2 = p0;
    best = -1;
    for (size_t e = 0; e < m; e++) {
        if (e == p0 || e == p1) continue;
        const double v = fabs(area2(x0, x1, K[o[e].seq].point, n));
        if (p2 == p0 || better(v, o[e].key, best, o[p2].key, tie)) p2 = e, best = v;
    }
    pick[2] = p2;
    const double *x2 = K[o[p2].seq].point;
    const double sg = area2(x0, x1, x2, n) >= 0 ? 1.0 : -1.0;
    size_t p3 = p0;
    best = -1;
    for (size_t e = 0; e < m; e++) {
        if (e == p0 || e == p1 || e == p2) continue;
        const double *x = K[o[e].seq].point;
        const double v = fmax(0.0, -sg * area2(x0, x1, x, n)) +
                         fmax(0.0, -sg * area2(x1, x2, x, n)) +
                         fmax(0.0, -sg * area2(x2, x0, x, n));
        if (p3 == p0 || better(v, o[e].key, best, o[p3].key, tie)) p3 = e, best = v;
    }
    pick[3] = p3;
    for (size_t e = 0; e < m; e++) {
        int kept = 0;
        for (int q = 0; q < RB_MANIFOLD; q++) kept |= pick[q] == e;
        if (!kept) r->patch[o[e].seq] = -2;
    }
}

/* a[i] = a[dest[i]] for i < n, dest a permutation (elements of size es;
 * tmp: room for n). */
static void permute(void *a, size_t es, const int *dest, size_t n, unsigned char *tmp) {
    memcpy(tmp, a, n * es);
    for (size_t i = 0; i < n; i++)
        memcpy((unsigned char *)a + i * es, tmp + (size_t)dest[i] * es, es);
}

/* The solve's contacts [0, nc) reduced to manifolds (above): the dropped
 * ones removed, the rest patch by patch (in the order the patches were
 * found, each patch's points in their order, then the points of no patch
 * in theirs: the solve takes a patch's points in a row, as one block) and
 * numbered for the solve (defo_rigid_contact.patch); r->patch of each kept one
 * names its patch (−1: none), and patch_body, patch_other (call indices,
 * other −1), patch_dropped say where the dropped points were and how many.
 * Returns the contacts left. */
static size_t manifolds(struct defo_rb_scratch *r, defo_step_body *const *bodies, size_t nc,
                        int *num_patches) {
    size_t m = 0;
    for (size_t c = 0; c < nc; c++) {
        const defo_rigid_contact *k = &r->contacts[c];
        r->patch[c] = -1;
        if (k->nodes > 0) continue; /* a deformable body's points: each its own */
        const int32_t a = bodies[k->body]->index, b = r->other[c];
        /* a pair of bodies of the call is one group, whichever side owns
         * the point */
        const int swap = k->other >= 0 && b < a;
        r->order[m++] = (rb_order){swap ? b : a, swap ? a : b, (uint32_t)c, r->key[c]};
    }
    if (m > 1) qsort(r->order, m, sizeof *r->order, order_cmp);
    int np = 0;
    for (size_t g0 = 0; g0 < m;) {
        size_t g1 = g0 + 1;
        while (g1 < m && r->order[g1].a == r->order[g0].a && r->order[g1].b == r->order[g0].b) g1++;
        /* the group's patches: greedy by normal (oriented from the group's
         * first body), same friction, same obstacle velocity (colliders) */
        for (size_t e = g0; e < g1; e++) {
            const uint32_t c0 = r->order[e].seq;
            if (r->patch[c0] != -1) continue;
            const defo_rigid_contact *k0 = &r->contacts[c0];
            const double s0 = bodies[k0->body]->index == r->order[e].a ? 1.0 : -1.0;
            const double n0[3] = {s0 * k0->normal[0], s0 * k0->normal[1], s0 * k0->normal[2]};
            const int p = np++;
            size_t cnt = 0;
            double fastest = 0;
            /* gather the patch's contacts at the front of [e, g1) */
            for (size_t f = e; f < g1; f++) {
                const uint32_t c = r->order[f].seq;
                if (r->patch[c] != -1) continue;
                const defo_rigid_contact *k = &r->contacts[c];
                const double s = bodies[k->body]->index == r->order[f].a ? 1.0 : -1.0;
                if (s * dot3(k->normal, n0) < RB_MANIFOLD_COS || k->friction != k0->friction)
                    continue;
                if (!r->src[c].pt && memcmp(k->obstacle_velocity, k0->obstacle_velocity,
                                            sizeof k->obstacle_velocity) != 0)
                    continue;
                r->patch[c] = p;
                fastest = fmax(fastest, r->speed[c]);
                const rb_order t = r->order[e + cnt];
                r->order[e + cnt] = r->order[f];
                r->order[f] = t;
                cnt++;
            }
            r->patch_body[p] = k0->body;
            r->patch_other[p] = k0->other;
            r->patch_dropped[p] = 0;
            if (cnt > RB_MANIFOLD && !(fastest > RB_RESTING)) {
                reduce_patch(r, r->order + e, cnt, n0);
                r->patch_dropped[p] = (int)cnt - RB_MANIFOLD;
            }
            e += cnt - 1;
        }
        g0 = g1;
    }
    *num_patches = np;
    size_t n = 0;
    for (size_t c = 0; c < nc; c++) {
        if (r->patch[c] == -2) continue;
        if (n != c) {
            r->contacts[n] = r->contacts[c];
            r->src[n] = r->src[c];
            r->key[n] = r->key[c];
            r->other[n] = r->other[c];
            r->speed[n] = r->speed[c];
            r->patch[n] = r->patch[c];
        }
        n++;
    }
    /* the kept contacts patch by patch, r->dest[new] = old (most often
     * already so: a body's collider contacts come together) */
    if (n == 0) return 0;
    int *at = (int *)r->tmp; /* per patch: its next place */
    for (int p = 0; p <= np; p++) at[p] = 0;
    for (size_t c = 0; c < n; c++)
        if (r->patch[c] >= 0) at[r->patch[c] + 1]++;
    for (int p = 0; p < np; p++) at[p + 1] += at[p];
    size_t alone = (size_t)at[np];
    int moved = 0;
    for (size_t c = 0; c < n; c++) {
        const size_t to = r->patch[c] >= 0 ? (size_t)at[r->patch[c]]++ : alone++;
        r->dest[to] = (int)c;
        moved |= to != c;
    }
    if (moved) {
        permute(r->contacts, sizeof *r->contacts, r->dest, n, r->tmp);
        permute(r->src, sizeof *r->src, r->dest, n, r->tmp);
        permute(r->key, sizeof *r->key, r->dest, n, r->tmp);
        permute(r->other, sizeof *r->other, r->dest, n, r->tmp);
        permute(r->speed, sizeof *r->speed, r->dest, n, r->tmp);
        permute(r->patch, sizeof *r->patch, r->dest, n, r->tmp);
    }
    /* a patch of two points or more: its number (from 1) in the solve */
    for (size_t c = 0; c < n; c++) {
        const int p = r->patch[c];
        const int before = c > 0 && r->patch[c - 1] == p, after = c + 1 < n && r->patch[c + 1] == p;
        r->contacts[c].patch = p >= 0 && (before || after) ? p + 1 : 0;
    }
    return n;
}

defo_status defo_rb_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                         const defo_step_context *ctx, double *approach) {
    const double dt = ctx->dt;
    if (count <= 0) return DEFO_OK;
    defo_status st = scratch_bodies(s, count);
    if (st) return st;
    struct defo_rb_scratch *r = s->rb;
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_rb_body *d = b->data;
        if (approach) approach[i] = 0;
        for (defo_index j = 0; j < b->n; j++)
            if (b->prescribed && b->prescribed[j])
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "body '%s': node %ld is fixed, but a rigid body moves as one "
                                  "piece (support it with a collider instead)",
                                  b->name, (long)j);
        /* the loads: resultant and moment about the lumped centre */
        double *F = r->load + 6 * (size_t)i, *tau = F + 3, M = 0, cl[3] = {0, 0, 0};
        memset(F, 0, 6 * sizeof(double));
        for (defo_index j = 0; j < b->n; j++) {
            M += b->mass[j];
            for (int k = 0; k < 3; k++) cl[k] += b->mass[j] * b->x[3 * (size_t)j + k];
        }
        for (int k = 0; k < 3; k++) cl[k] /= M;
        for (defo_index j = 0; j < b->n; j++) {
            const double *f = b->load + 3 * (size_t)j, *x = b->x + 3 * (size_t)j;
            const double rr[3] = {x[0] - cl[0], x[1] - cl[1], x[2] - cl[2]};
            for (int k = 0; k < 3; k++) F[k] += f[k];
            tau[0] += rr[1] * f[2] - rr[2] * f[1];
            tau[1] += rr[2] * f[0] - rr[0] * f[2];
            tau[2] += rr[0] * f[1] - rr[1] * f[0];
        }
        memset(d->impulse, 0, 3 * (size_t)b->n * sizeof(double));
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
            st = ctx->probe(ctx->ctx, b, ctx->t, b->x, margin, d->probe, b->n, &found);
            if (st) return defo_error_prefix("body '%s'", b->name);
            if (found > b->n) found = b->n;
        }
        d->num_contacts = (int)found;
        total += (size_t)found;
    }
    /* the bodies' points with each other and with every other body */
    const defo_body_point *pts = NULL;
    size_t num_pts = 0;
    if (ctx->body_points) {
        st = ctx->body_points(ctx->ctx, bodies, count, &pts, &num_pts);
        if (st) return st;
    }
    int most = 0;
    for (int i = 0; i < count; i++) most = bodies[i]->index > most ? bodies[i]->index : most;
    for (size_t q = 0; q < num_pts; q++)
        for (int sd = 0; sd < 2; sd++)
            most = pts[q].body[sd]->index > most ? pts[q].body[sd]->index : most;
    st = scratch_index(r, most);
    if (!st) st = scratch_contacts(r, total + num_pts);
    if (st) return st;
    for (int i = 0; i <= most; i++) r->call_of[i] = -1;
    for (int i = 0; i < count; i++) r->call_of[bodies[i]->index] = i;
    /* the solve's contacts: each body's with colliders, then the points */
    size_t nc = 0;
    r->num_used = 0;
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_rb_body *d = b->data;
        for (int q = 0; q < d->num_contacts; q++) {
            const defo_node_contact *p = &d->probe[q];
            defo_rigid_contact *k = &r->contacts[nc];
            memset(k, 0, sizeof *k);
            k->body = i;
            k->other = -1;
            memcpy(k->point, b->x + 3 * (size_t)p->node, sizeof k->point);
            memcpy(k->normal, p->normal, sizeof k->normal);
            k->gap = p->phi;
            memcpy(k->obstacle_velocity, p->velocity, sizeof k->obstacle_velocity);
            k->friction = p->friction;
            r->src[nc++] = (rb_source){NULL, p->node, 0};
        }
    }
    for (size_t q = 0; q < num_pts; q++) {
        const defo_body_point *pt = &pts[q];
        const int i0 = r->call_of[pt->body[0]->index], i1 = r->call_of[pt->body[1]->index];
        const int side = i0 >= 0 ? 0 : 1, i = i0 >= 0 ? i0 : i1;
        if (i < 0) continue;
        defo_step_body *ob = pt->body[1 - side];
        double *push = NULL;
        if (r->call_of[ob->index] < 0 && !ob->rigid) {
            push = deformable_push(r, ob);
            if (!push) return defo_error_oom("rigid contacts", 24 * (size_t)ob->n);
        }
        if (!point_contact(pt, side, i, r->call_of, push, &r->contacts[nc])) continue;
        r->src[nc++] = (rb_source){pt, -1, side};
    }
    /* the bodies in contact step by symplectic Euler: the loads' impulse,
     * the contact impulses, then the motion with the new velocities */
    memset(r->touch, 0, (size_t)count);
    for (size_t c = 0; c < nc; c++) {
        r->touch[r->contacts[c].body] = 1;
        if (r->contacts[c].other >= 0) r->touch[r->contacts[c].other] = 1;
    }
    for (int i = 0; i < count; i++) {
        defo_rb_body *d = bodies[i]->data;
        if (r->touch[i])
            for (int k = 0; k < 3; k++) {
                d->rb.velocity[k] += dt * r->load[6 * (size_t)i + k] / d->rb.mass;
                d->rb.momentum[k] += dt * r->load[6 * (size_t)i + 3 + k];
            }
        r->rb[i] = d->rb;
    }
    for (size_t c = 0; c < nc; c++) {
        defo_rigid_contact *k = &r->contacts[c];
        const double a = approach_of(k, r->rb, dt);
        r->speed[c] = a;
        r->key[c] = contact_key(bodies, k, &r->src[c]);
        r->other[c] = r->src[c].pt ? r->src[c].pt->body[1 - r->src[c].flip]->index : -1;
        if (approach) {
            approach[k->body] = fmax(approach[k->body], a);
            if (k->other >= 0) approach[k->other] = fmax(approach[k->other], a);
        }
    }
    int num_patches = 0;
    nc = manifolds(r, bodies, nc, &num_patches);
    if (nc > 0) {
        defo_rigid_contact_def cd = defo_default_rigid_contact_def();
        cd.restitution = s->def.restitution;
        cd.iterations = RB_SWEEPS;
        cd.tolerance = RB_TOLERANCE;
        cd.push_tolerance = RB_PUSH_TOLERANCE;
        /* from the last step's impulses of the contacts found again (the
         * others from zero) */
        const size_t loaded = r->warm_n, found = warm_take(r, bodies, nc);
        cd.warm_start = found > 0;
        const size_t ws = defo_rigid_solve_bytes(count, r->contacts, (int)nc);
        if (ws > r->cap_work) {
            defo_free(r->work);
            r->work = defo_malloc(ws);
            r->cap_work = r->work ? ws : 0;
            if (!r->work) return defo_error_oom("rigid contacts", ws);
        }
        cd.workspace = r->work;
        defo_rigid_solve_stats ss;
        st = defo_rigid_solve_contacts(r->rb, count, r->contacts, (int)nc, &cd, dt, r->push, &ss);
        if (!st) st = warm_keep(r, bodies, nc);
        if (st) return st;
        /* the sweeps, and a pass that ran out of them */
        defo_step_body_stats *bs = &bodies[0]->stats;
        bs->contact_sweeps += ss.sweeps[0] + ss.sweeps[1];
        bs->contacts_loaded += (int)loaded;
        bs->contacts_refound += (int)found;
        for (int pass = 0; pass < 2; pass++)
            if (!ss.converged[pass]) {
                bs->not_converged++;
                bs->reason = bs->reason > DEFO_REASON_MAX_ITERATIONS ? bs->reason
                                                                     : DEFO_REASON_MAX_ITERATIONS;
                bs->residual = fmax(bs->residual, ss.change[pass]);
            }
    } else {
        r->warm_n = 0;
    }
    /* the deformable bodies' nodes pushed out of the rigid ones: their x
     * moved besides their own steps, so what their steppers kept of the
     * last x (Newmark's f_e) is stale, as after a restored state */
    for (int u = 0; u < r->num_used; u++) {
        defo_step_body *b = r->used[u];
        const double *p = r->dpush[b->index];
        int moved = 0;
        for (size_t j = 0; j < 3 * (size_t)b->n; j++) {
            b->x[j] += dt * p[j];
            moved |= p[j] != 0;
        }
        if (moved) b->changed |= DEFO_CHANGED_STATE;
    }
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_rb_body *d = b->data;
        if (!r->touch[i]) {
            st = defo_rigid_advance(&d->rb, r->load + 6 * (size_t)i, r->load + 6 * (size_t)i + 3,
                                    dt);
        } else {
            d->rb = r->rb[i];
            st = defo_rigid_advance(&d->rb, NULL, NULL, dt);
            if (!st)
                defo_rigid_displace(&d->rb, r->push + 6 * (size_t)i, r->push + 6 * (size_t)i + 3,
                                    dt);
        }
        if (st) return defo_error_prefix("body '%s'", b->name);
    }
    /* each contact's impulse at the nodes it acted through (the hybrid's
     * impact loads), and who touches */
    for (size_t c = 0; c < nc; c++) {
        const defo_rigid_contact *k = &r->contacts[c];
        const rb_source *src = &r->src[c];
        if (!(k->normal_impulse > 0)) continue;
        /* a touching patch: its dropped points touch too */
        if (r->patch[c] >= 0) {
            const int p = r->patch[c];
            bodies[r->patch_body[p]]->stats.collisions += r->patch_dropped[p];
            if (r->patch_other[p] >= 0)
                bodies[r->patch_other[p]]->stats.collisions += r->patch_dropped[p];
            r->patch_dropped[p] = 0;
        }
        bodies[k->body]->stats.collisions++;
        node_impulse(bodies[k->body], src, src->flip, k->impulse, 1);
        if (k->other >= 0) {
            bodies[k->other]->stats.collisions++;
            node_impulse(bodies[k->other], src, 1 - src->flip, k->impulse, -1);
        }
    }
    for (int i = 0; i < count; i++) defo_rb_place(bodies[i]);
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
    defo_rb_forget(s, b);
    defo_rb_detach(b);
}
static defo_status rg_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    return defo_rb_step(s, bodies, count, ctx, NULL);
}
static defo_status rg_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                       const defo_index *parent) {
    (void)old_n, (void)parent;
    defo_rb_forget(s, b);
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
/* history: the rigid state, then the warm impulses */
static size_t rg_history_bytes(const defo_stepper *s, const defo_step_body *b) {
    return defo_rb_history_bytes(b) + defo_rb_warm_bytes(s, b);
}
static void rg_save(const defo_stepper *s, const defo_step_body *b, void *out) {
    defo_rb_save(b, out);
    defo_rb_warm_save(s, b, (unsigned char *)out + defo_rb_history_bytes(b));
}
static defo_status rg_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size) {
    const size_t rb = defo_rb_history_bytes(b);
    const unsigned char *warm = (const unsigned char *)in + rb;
    defo_status st = size < rb ? DEFO_OK : defo_rb_warm_restore(s, b, warm, size - rb, 0);
    if (!st) st = defo_rb_restore(b, in, size < rb ? size : rb);
    if (!st) st = defo_rb_warm_restore(s, b, warm, size - rb, 1);
    return st;
}
static size_t rg_bytes(const defo_stepper *s, const defo_step_body *b) {
    (void)s;
    return sizeof(defo_rb_body) + (size_t)b->n * (sizeof(defo_node_contact) + 3 * sizeof(double));
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
