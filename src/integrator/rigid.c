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
 *     for deformable surfaces).  Rigid–rigid contact is at φ = 0 (touching);
 *     rigid–deformable at φ = δ, the contact layer's thickness, where a
 *     deformable body's own response holds it off other surfaces.
 *   - Warm starts: within a frame each step's solve starts from the
 *     normal impulses of the last step's contacts found again (keyed by
 *     bodies and nodes; RB_SWEEPS sweeps); a frame's first step starts
 *     cold (RB_COLD_SWEEPS).  Nothing is carried across frames, so a frame
 *     resumed from a checkpoint takes bit-identical steps.
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
    if (d->detach_extra) d->detach_extra(d);
    defo_free(d);
    b->data = NULL;
    b->rigid = NULL;
}

/* d->flat: the boundary nodes whose boundary faces (rest shape) all lie
 * in one plane — every face normal within 1e-6 rad of the first. */
static defo_status flat_nodes(defo_step_body *b, defo_rb_body *d) {
    defo_free(d->flat);
    d->flat = NULL;
    defo_boundary bd;
    defo_status st = defo_mesh_boundary(b->mesh, b->mesh->order == 2, &bd);
    if (st) return st;
    double *first = defo_calloc(3 * (size_t)b->n + 1, sizeof(double));
    d->flat = defo_malloc((size_t)b->n + 1);
    if (!first || !d->flat) {
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
#define RB_SWEEPS      50  /* Gauss–Seidel sweeps of a warm-started solve, at most */
#define RB_COLD_SWEEPS 300 /* of a cold one (a frame's first step) */
/* Where each contact of the solve came from: a collider (node of the
 * body's own) or a body point (flip: the solve's body is the point's side
 * 1). */
typedef struct rb_source {
    const defo_body_point *pt;
    defo_index node;
    int flip;
} rb_source;

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
    uint64_t *key; /* per contact: what it joins (warm_key) */
    size_t cap_contacts;
    /* the last step's impulses by contact key, sorted (a warm start for the
     * next step of the same frame; cleared at a frame's start, so a frame
     * resumed from a checkpoint takes the same steps) */
    uint64_t *warm_key;
    double *warm; /* 4 per key: normal, tangent */
    size_t warm_n, warm_cap;
    /* deformable bodies met: their nodes' push-out pseudo-velocities (3n,
     * by world index), which of them this step */
    double **dpush;
    defo_index *dpush_n;
    int cap_dpush;
    defo_step_body **used;
    int num_used;
};

void defo_rb_scratch_free(struct defo_rb_scratch *r) {
    if (!r) return;
    defo_free(r->rb);
    defo_free(r->push);
    defo_free(r->load);
    defo_free(r->touch);
    defo_free(r->call_of);
    defo_free(r->contacts);
    defo_free(r->src);
    defo_free(r->key);
    defo_free(r->warm_key);
    defo_free(r->warm);
    for (int i = 0; i < r->cap_dpush; i++) defo_free(r->dpush[i]);
    defo_free(r->dpush);
    defo_free(r->dpush_n);
    defo_free(r->used);
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
    defo_free(r->contacts);
    defo_free(r->src);
    defo_free(r->key);
    r->contacts = defo_malloc(c * sizeof *r->contacts);
    r->src = defo_malloc(c * sizeof *r->src);
    r->key = defo_malloc(c * sizeof *r->key);
    r->cap_contacts = 0;
    if (!r->contacts || !r->src || !r->key)
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

/* What contact c joins: the bodies (world indices) and the nodes of each
 * side (a collider contact: the body's node). */
static uint64_t contact_key(defo_step_body *const *bodies, const defo_rigid_contact *k,
                            const rb_source *src) {
    uint64_t h = 14695981039346656037u;
    h = mix(h, (uint64_t)bodies[k->body]->index);
    if (!src->pt) return mix(mix(h, 0xC0111DE5u), (uint64_t)src->node);
    const defo_body_point *pt = src->pt;
    h = mix(h, (uint64_t)pt->body[1 - src->flip]->index + 1);
    for (int sd = 0; sd < 2; sd++) {
        const int s = sd == 0 ? src->flip : 1 - src->flip;
        for (int a = 0; a < pt->nodes[s]; a++) h = mix(h, (uint64_t)pt->node[s][a]);
        h = mix(h, 0xFFFFFFFFu);
    }
    return h;
}

static void rb_warm_clear(struct defo_rb_scratch *r) {
    if (r) r->warm_n = 0;
}

/* The last step's impulse of each contact found again (by key). */
static void warm_take(struct defo_rb_scratch *r, size_t nc) {
    for (size_t c = 0; c < nc; c++) {
        defo_rigid_contact *k = &r->contacts[c];
        size_t lo = 0, hi = r->warm_n;
        while (lo < hi) {
            const size_t mid = lo + (hi - lo) / 2;
            if (r->warm_key[mid] < r->key[c])
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < r->warm_n && r->warm_key[lo] == r->key[c]) {
            k->normal_impulse = r->warm[4 * lo];
            memset(k->tangent_impulse, 0, sizeof k->tangent_impulse);
        }
    }
}

/* Keep this step's impulses by key, sorted (insertion sort of the
 * touching contacts: a fixed order for equal keys). */
static defo_status warm_keep(struct defo_rb_scratch *r, size_t nc) {
    if (nc > r->warm_cap) {
        size_t c = r->warm_cap ? r->warm_cap : 64;
        while (c < nc) c *= 2;
        defo_free(r->warm_key);
        defo_free(r->warm);
        r->warm_key = defo_malloc(c * sizeof *r->warm_key);
        r->warm = defo_malloc(4 * c * sizeof *r->warm);
        r->warm_cap = r->warm_n = 0;
        if (!r->warm_key || !r->warm) return defo_error_oom("rigid contacts", 40 * c);
        r->warm_cap = c;
    }
    size_t n = 0;
    for (size_t c = 0; c < nc; c++) {
        const defo_rigid_contact *k = &r->contacts[c];
        if (!(k->normal_impulse > 0)) continue;
        size_t j = n++;
        while (j > 0 && r->warm_key[j - 1] > r->key[c]) {
            r->warm_key[j] = r->warm_key[j - 1];
            memcpy(r->warm + 4 * j, r->warm + 4 * (j - 1), 4 * sizeof(double));
            j--;
        }
        r->warm_key[j] = r->key[c];
        r->warm[4 * j] = k->normal_impulse;
        memcpy(r->warm + 4 * j + 1, k->tangent_impulse, 3 * sizeof(double));
    }
    r->warm_n = n;
    return DEFO_OK;
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
 *     −1e-9) takes the face normal (outward) and its height over the face;
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
        if (beta < -1e-9 || gamma < -1e-9 || beta + gamma > 1 + 1e-9) {
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
                if (bc[q] <= 1e-9)
                    for (int m = 0; m < 3; m++)
                        if (m != q && !r1->flat[pt->node[1][m]]) return 0;
        }
        /* a closed surface's triangles turn outward (the contact layer's
         * face normals); a shell's have no side: the layer's says which */
        const double l = sqrt(ff);
        const double sg = b1->mesh->nodes_per_elem != 3 || dot3(f, n) >= 0 ? 1.0 : -1.0;
        for (int k = 0; k < 3; k++) n[k] = sg * f[k] / l;
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
        if (approach) {
            approach[k->body] = fmax(approach[k->body], a);
            if (k->other >= 0) approach[k->other] = fmax(approach[k->other], a);
        }
    }
    if (nc > 0) {
        for (size_t c = 0; c < nc; c++)
            r->key[c] = contact_key(bodies, &r->contacts[c], &r->src[c]);
        defo_rigid_contact_def cd = defo_default_rigid_contact_def();
        cd.restitution = s->def.restitution;
        /* a frame's first step starts cold: more sweeps; the next start
         * from the last step's impulses */
        cd.warm_start = r->warm_n > 0;
        cd.iterations = cd.warm_start ? RB_SWEEPS : RB_COLD_SWEEPS;
        if (cd.warm_start) warm_take(r, nc);
        st = defo_rigid_solve_contacts(r->rb, count, r->contacts, (int)nc, &cd, dt, r->push);
        if (!st) st = warm_keep(r, nc);
        if (st) return st;
    } else {
        r->warm_n = 0;
    }
    /* the deformable bodies' nodes pushed out of the rigid ones */
    for (int u = 0; u < r->num_used; u++) {
        defo_step_body *b = r->used[u];
        const double *p = r->dpush[b->index];
        for (size_t j = 0; j < 3 * (size_t)b->n; j++) b->x[j] += dt * p[j];
    }
    for (int i = 0; i < count; i++) {
        defo_step_body *b = bodies[i];
        defo_rb_body *d = b->data;
        b->stats.collisions = 0;
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
    (void)s;
    defo_rb_detach(b);
}
static defo_status rg_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                           const defo_step_context *ctx) {
    return defo_rb_step(s, bodies, count, ctx, NULL);
}
static defo_status rg_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                       const defo_index *parent) {
    (void)s, (void)old_n, (void)parent;
    return defo_rb_resize(b);
}
void defo_rb_frame_start_all(defo_stepper *s) {
    rb_warm_clear(s->rb);
}
void defo_rb_frame_start(defo_step_body *b) {
    /* a state set from outside: the rigid state from the nodes */
    if (b->changed & DEFO_CHANGED_STATE) defo_rb_fit(b);
}
static void rg_frame_start(defo_stepper *s, defo_step_body *b) {
    rb_warm_clear(s->rb);
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
