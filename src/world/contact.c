/*
 * world/contact.c — how contact reaches the steppers (defo/integrator.h).
 *
 * Colliders: the ITF04 §9 response of dynamic steppers is the collision
 * module's one routine (defo_collision_respond) over the world's colliders;
 * the TSIF05 §10 penalty term of the Newton solves is defo_penalty_eval with
 * one source per collider at the body's stiffness (the integrator's
 * contact_stiffness, or 10 (2μ+λ) h with h the body's mean rest edge).
 * Prescribed nodes never collide.
 *
 * Bodies (defo/contact.h): every colliding body keeps a contact surface of
 * its boundary.  A stepper's call names some bodies with their positions of
 * the moment (a Newton iterate, a Newmark update); every other colliding
 * body takes part where it is, as an obstacle: paired with the call's
 * bodies, never moved, its nodes outside the solve.  Each call moves the
 * surfaces (their boxes: the detection refits only the surfaces it looks
 * into, so bodies far from every other cost their boxes), finds the pairs
 * (defo_contact_find, a sort and sweep over the boxes) and then adds the
 * penalty with its Hessian terms, bounds a Newton step, or applies the
 * impulses.  A pair that started the step interpenetrating is held back by
 * the depth it had less separation_speed·Δt (its φ shifted by that much), so
 * bodies placed inside each other come apart slowly instead of launching.
 */
#include "world/world_internal.h"

#include <math.h>
#include <string.h>
#include <time.h>

defo_status defo_world_respond(void *ctx, const defo_step_body *sb, double t_end, double dt,
                               double tau, const double *x_prev, double *x, double *v,
                               unsigned char *constraint, double *normal, double *friction,
                               defo_index *hits) {
    defo_world *w = ctx;
    return defo_collision_respond(w->colliders, w->num_colliders, t_end, dt, tau, sb->n, x_prev,
                                  sb->prescribed, x, v, constraint, normal, friction, hits);
}

defo_status defo_world_penalty(void *ctx, const defo_step_body *sb, double t, const double *x,
                               const double *x_start, double dt, double *energy, double *force,
                               double *blocks, defo_index *count, defo_index *capped) {
    defo_world *w = ctx;
    world_body *b = &w->bodies[sb->index];
    double e = 0;
    defo_status s = defo_penalty_eval(b->src, b->num_src, t, b->n, x, b->prescribed, x_start, dt,
                                      energy ? &e : NULL, force, blocks, count, capped, b->work);
    if (!s && energy) *energy += e;
    return s;
}

defo_contact_def defo_default_contact_def(void) {
    defo_contact_def d;
    memset(&d, 0, sizeof d);
    d.enabled = 1;
    d.thickness = 0.1;
    d.stiffness = 0;
    d.separation_speed = 0.5;
    d.sweeps = 64;
    return d;
}

const defo_contact_def *defo_world_contact(const defo_world *w) {
    return w ? &w->contact : NULL;
}

/* The body's contact surface for its current mesh (none when it does not
 * collide or contact is off). */
static defo_status make_surface(defo_world *w, world_body *b) {
    defo_contact_surface_destroy(b->surface);
    b->surface = NULL;
    if (!w->contact.enabled || !b->collide) return DEFO_OK;
    defo_contact_surface_def sd = defo_default_contact_surface_def();
    const double h = defo_mesh_mean_edge(b->mesh);
    sd.thickness = w->contact.thickness * h;
    sd.reach = h;
    sd.self_contact = b->self_contact;
    defo_status s = defo_contact_surface_create(b->mesh, &sd, &b->surface);
    if (s) return defo_error_prefix("body '%s': contact surface", b->name);
    s = defo_contact_surface_update(b->surface, b->x);
    if (s) return defo_error_prefix("body '%s': contact surface", b->name);
    defo_free(b->inv_mass);
    defo_free(b->in_contact);
    b->inv_mass = defo_malloc(((size_t)b->cap + 1) * sizeof *b->inv_mass);
    b->in_contact = defo_calloc((size_t)b->cap + 1, sizeof *b->in_contact);
    if (!b->inv_mass || !b->in_contact)
        return defo_error_oom("contact", 2 * (size_t)b->cap * sizeof(double));
    return DEFO_OK;
}

defo_status defo_world_set_contact(defo_world *w, const defo_contact_def *def) {
    if (!w || !def) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_set_contact: NULL");
    if (def->enabled != 0 && def->enabled != 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact.enabled: %d is not 0 or 1",
                          def->enabled);
    if (!(def->thickness > 0 && def->thickness <= 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact.thickness: %g is not in (0, 1]",
                          def->thickness);
    if (!(def->stiffness >= 0) || !isfinite(def->stiffness))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact.stiffness: %g is not >= 0",
                          def->stiffness);
    if (!(def->separation_speed > 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact.separation_speed: %g is not > 0",
                          def->separation_speed);
    if (def->sweeps < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "contact.sweeps: %d is not >= 1", def->sweeps);
    w->contact = *def;
    for (int i = 0; i < w->num_bodies; i++) {
        if (!defo_world_live(&w->bodies[i])) continue;
        defo_status s = make_surface(w, &w->bodies[i]);
        if (s) return s;
    }
    return DEFO_OK;
}

void defo_world_contact_free(world_body *b) {
    defo_contact_surface_destroy(b->surface);
    b->surface = NULL;
    defo_free(b->inv_mass);
    b->inv_mass = NULL;
    defo_free(b->in_contact);
    b->in_contact = NULL;
}

/* The nodes of the pairs just found that touch (φ below the pair's
 * thickness, every node with a weight), per body of the detection's
 * surfaces: what defo_body_contact_nodes reports.  O(nodes + pairs). */
static void mark_touching(defo_world *w, int ns) {
    for (int j = 0; j < ns; j++) {
        const world_body *b = &w->bodies[w->surface_body[j]];
        if (b->in_contact) memset(b->in_contact, 0, (size_t)b->n * sizeof *b->in_contact);
    }
    for (size_t i = 0; i < w->pairs.count; i++) {
        const defo_contact_pair *p = &w->pairs.pairs[i];
        if (!(p->phi < p->delta)) continue;
        for (int a = 0; a < 4; a++) {
            if (p->w[a] == 0.0) continue;
            const world_body *b = &w->bodies[w->surface_body[p->surface[p->side[a]]]];
            if (b->in_contact && p->node[a] >= 0 && p->node[a] < b->n)
                b->in_contact[p->node[a]] = 1.0;
        }
    }
}

defo_status defo_body_contact_nodes(const defo_world *w, defo_body_id id, double *out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_contact_nodes: out is NULL");
    if (!defo_body_is_valid(w, id))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_contact_nodes: invalid body id");
    const world_body *b = &w->bodies[id.index];
    if (b->in_contact)
        memcpy(out, b->in_contact, (size_t)b->n * sizeof *out);
    else
        memset(out, 0, (size_t)b->n * sizeof *out);
    return DEFO_OK;
}

defo_status defo_world_probe(void *ctx, const defo_step_body *sb, double t, const double *x,
                             double margin, defo_node_contact *out, defo_index cap,
                             defo_index *count) {
    defo_world *w = ctx;
    defo_index k = 0;
    for (defo_index i = 0; i < sb->n; i++) {
        if (sb->prescribed && sb->prescribed[i]) continue;
        const double *p = x + 3 * (size_t)i;
        double best = INFINITY, n[3] = {0, 0, 1}, vel[3] = {0, 0, 0}, mu = 0;
        for (int c = 0; c < w->num_colliders; c++) {
            double nc[3], vc[3];
            const double phi = defo_collider_phi(w->colliders[c], t, p, nc, vc);
            if (!isfinite(phi))
                return defo_error(DEFO_ERR_NUMERICAL,
                                  "body '%s': node %ld: collider %d: "
                                  "non-finite distance",
                                  sb->name, (long)i, c);
            if (phi < best) {
                best = phi;
                memcpy(n, nc, sizeof n);
                memcpy(vel, vc, sizeof vel);
                mu = defo_collider_friction(w->colliders[c]);
            }
        }
        if (!(best < margin)) continue;
        if (k < cap) {
            defo_node_contact *o = &out[k];
            o->node = i;
            o->phi = best;
            memcpy(o->normal, n, sizeof n);
            memcpy(o->velocity, vel, sizeof vel);
            o->friction = mu;
        }
        k++;
    }
    *count = k;
    return DEFO_OK;
}

defo_status defo_world_contact_sources(defo_world *w, world_body *b) {
    defo_contact_source *ns = defo_realloc(b->src, (size_t)(w->num_colliders + 1) * sizeof *ns);
    if (!ns) return defo_error_oom("contact sources", sizeof *ns);
    b->src = ns;
    double k = w->integrators[b->integrator].def.contact_stiffness;
    if (!(k > 0)) k = 10.0 * defo_material_stiffness_scale(b->mat) * defo_world_body_length(b);
    for (int c = 0; c < w->num_colliders; c++)
        b->src[c] = defo_contact_from_collider(w->colliders[c], k);
    b->num_src = w->num_colliders;
    return make_surface(w, b);
}

int defo_world_has_body_contact(const defo_world *w) {
    if (!w->contact.enabled) return 0;
    int surfaces = 0;
    for (int i = 0; i < w->num_bodies; i++) {
        const world_body *b = &w->bodies[i];
        if (!defo_world_live(b) || !b->surface) continue;
        if (b->self_contact) return 1;
        surfaces++;
    }
    return surfaces >= 2;
}

/* ------------------------------------------------------------ a call */
static double now_seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static defo_status scratch(defo_world *w) {
    const int n = w->body_capacity > 0 ? w->body_capacity : 1;
    if (w->cbody && w->num_surfaces >= n) return DEFO_OK;
    defo_free(w->cbody);
    defo_free(w->call_of);
    defo_free((void *)w->cx);
    defo_free(w->cf);
    defo_free(w->cv);
    defo_free((void *)w->cm);
    defo_free((void *)w->cs);
    defo_free(w->surface_body);
    defo_free((void *)w->start);
    w->start = defo_calloc((size_t)n, sizeof *w->start);
    w->cbody = defo_calloc((size_t)n, sizeof *w->cbody);
    w->call_of = defo_malloc((size_t)n * sizeof *w->call_of);
    w->cx = defo_calloc((size_t)n, sizeof *w->cx);
    w->cf = defo_calloc((size_t)n, sizeof *w->cf);
    w->cv = defo_calloc((size_t)n, sizeof *w->cv);
    w->cm = defo_calloc((size_t)n, sizeof *w->cm);
    w->cs = defo_calloc((size_t)n, sizeof *w->cs);
    w->surface_body = defo_calloc((size_t)n, sizeof *w->surface_body);
    if (!w->cbody || !w->call_of || !w->cx || !w->cf || !w->cv || !w->cm || !w->cs ||
        !w->surface_body || !w->start) {
        w->num_surfaces = 0;
        return defo_error_oom("contact scratch", (size_t)n * 80);
    }
    for (int i = 0; i < n; i++) w->call_of[i] = -1;
    w->num_surfaces = n; /* capacity */
    return DEFO_OK;
}

/* The colliding bodies of a call: the call's at x (NULL: where they are),
 * the others where they are, obstacles; surfaces updated.  *ns surfaces. */
static defo_status gather(defo_world *w, defo_step_body *const *bodies, int count,
                          const double *const *x, int *ns) {
    defo_status s = scratch(w);
    if (s) return s;
    for (int i = 0; i < count; i++) w->call_of[bodies[i]->index] = i;
    /* a call of deformable bodies leaves the rigid ones out: the rigid
     * steppers meet deformable bodies in their own solve, both ways */
    const int deformable = count > 0 && !bodies[0]->rigid;
    int n = 0;
    for (int i = 0; i < w->num_bodies && !s; i++) {
        world_body *b = &w->bodies[i];
        if (!defo_world_live(b) || !b->surface) continue;
        const int ci = w->call_of[i];
        if (ci < 0 && deformable && b->sb.rigid) continue;
        const double *xi = ci >= 0 && x ? x[ci] : b->x;
        s = defo_contact_surface_move(b->surface, xi); /* refit by a detection that needs it */
        if (s) {
            defo_error_prefix("body '%s': contact", b->name);
            break;
        }
        double k = w->contact.stiffness;
        if (!(k > 0)) k = 10.0 * defo_material_stiffness_scale(b->mat) * defo_world_body_length(b);
        w->cbody[n].surface = b->surface;
        w->cbody[n].x = xi;
        w->cbody[n].stiffness = k;
        w->cbody[n].friction = b->friction;
        w->cbody[n].obstacle = ci < 0;
        w->surface_body[n] = i;
        n++;
    }
    for (int i = 0; i < count; i++) w->call_of[bodies[i]->index] = -1;
    *ns = n;
    return s;
}

/* The call index of surface j's body, −1 for an obstacle. */
static int call_index(defo_world *w, defo_step_body *const *bodies, int count, int j) {
    const int b = w->surface_body[j];
    for (int i = 0; i < count; i++)
        if (bodies[i]->index == b) return i;
    return -1;
}

/* Each pair's depth held back: what it had at the start (start[b] by body,
 * NULL: where the body is) less a step's separation. */
static defo_index keep_depths(defo_world *w, const double *const *start, double dt, int ns,
                              int hold) {
    for (int j = 0; j < ns; j++) {
        const int b = w->surface_body[j];
        w->cs[j] = start[b] ? start[b] : w->bodies[b].x;
    }
    defo_index held = 0;
    const double sep = w->contact.separation_speed * dt;
    for (size_t i = 0; i < w->pairs.count; i++) {
        defo_contact_pair *p = &w->pairs.pairs[i];
        if (p->barrier) continue;
        double phi0 = 0;
        for (int a = 0; a < 4; a++) {
            const double *xa = w->cs[p->surface[p->side[a]]] + 3 * (size_t)p->node[a];
            phi0 += p->w[a] * (p->n[0] * xa[0] + p->n[1] * xa[1] + p->n[2] * xa[2]);
        }
        const double keep = -phi0 - sep;
        p->kept = keep > 0 ? keep : 0.0;
        held += p->kept > 0;
        /* hold: a pair that was within the skin at the start is held at
         * its start gap (never closer within a step), one farther out at δ:
         * the projection then stops approach, as the normal impulse does,
         * and a body resting in the skin is not kicked out to δ each step
         * (which shakes a stack) nor let through the surface (which lets
         * the triangles of two sheets of one fold cross) */
        if (hold && phi0 > 0) p->kept = -fmin(phi0, p->delta);
    }
    return held;
}

/* The static zone of friction: slips below a hundredth of the thickness
 * per solve count as sticking. */
#define FRICTION_EPS_REL 1e-2

defo_status defo_world_contact_begin(void *ctx, defo_step_body *const *bodies, int count,
                                     const double *const *x_start, double dt) {
    defo_world *w = ctx;
    const double t0 = now_seconds();
    int ns = 0;
    defo_status s = gather(w, bodies, count, x_start, &ns);
    /* what lies inside another body at the start is pushed apart by signed
     * pairs; everything else meets through barriers */
    if (!s) s = defo_contact_classify(w->cbody, ns);
    w->pairs.count = 0;
    w->respond_pairs = 0;
    if (!s) s = defo_contact_find(w->cbody, ns, DEFO_CONTACT_BARRIER, &w->pairs);
    if (s) return s;
    for (int i = 0; i < w->num_bodies; i++) w->start[i] = NULL;
    for (int i = 0; i < count; i++) w->start[bodies[i]->index] = x_start[i];
    w->start_dt = dt;
    for (int j = 0; j < ns; j++) w->cx[j] = w->cbody[j].x;
    if (dt > 0) (void)keep_depths(w, w->start, dt, ns, 0);
    /* Coulomb friction of the solve, lagged from here */
    w->num_fric = 0;
    s = defo_contact_friction_lag(w->pairs.pairs, w->pairs.count, w->cx, FRICTION_EPS_REL, &w->fric,
                                  &w->num_fric, &w->fric_cap);
    if (!s && w->num_fric) {
        defo_free(w->fric_S);
        w->fric_S = defo_malloc(9 * w->fric_cap * sizeof *w->fric_S);
        if (!w->fric_S) s = defo_error_oom("friction", 72 * w->fric_cap);
    }
    w->stats.contact_seconds += now_seconds() - t0;
    return s;
}

static defo_status grow_terms(defo_world *w, size_t need) {
    if (need <= w->terms_cap) return DEFO_OK;
    size_t c = w->terms_cap ? w->terms_cap : 256;
    while (c < need) c *= 2;
    defo_contact_term *nt = defo_realloc(w->terms, c * sizeof *nt);
    if (nt) w->terms = nt;
    double *hh = defo_realloc(w->hess, c * sizeof *hh);
    if (hh) w->hess = hh;
    if (!nt || !hh) return defo_error_oom("contact terms", c * sizeof *nt);
    w->terms_cap = c;
    return DEFO_OK;
}

defo_status defo_world_body_contact(void *ctx, defo_step_body *const *bodies, int count,
                                    const double *const *x, int exact, double *energy,
                                    double *const *force, const defo_contact_term **terms,
                                    size_t *num_terms, defo_index *held, int *lagged) {
    defo_world *w = ctx;
    const double t0 = now_seconds();
    if (terms) *terms = NULL;
    if (num_terms) *num_terms = 0;
    if (held) *held = 0;
    if (lagged) *lagged = w->num_fric > 0;
    int ns = 0;
    defo_status s = gather(w, bodies, count, x, &ns);
    if (s) return s;
    w->pairs.count = 0;
    w->respond_pairs = 0;
    s = defo_contact_find(w->cbody, ns, DEFO_CONTACT_BARRIER, &w->pairs);
    if (s) return s;
    mark_touching(w, ns);
    if (w->start_dt > 0) {
        const defo_index h = keep_depths(w, w->start, w->start_dt, ns, 0);
        if (held) *held = h;
    }
    for (int j = 0; j < ns; j++) {
        const int ci = call_index(w, bodies, count, j);
        w->cx[j] = w->cbody[j].x;
        w->cf[j] = ci >= 0 && force ? force[ci] : NULL;
    }
    s = grow_terms(w, w->pairs.count + w->num_fric);
    if (s) return s;
    double depth = 0;
    defo_contact_penalty(w->pairs.pairs, w->pairs.count, w->cx, energy, w->cf, w->hess, &depth);
    if (w->num_fric)
        defo_contact_friction_eval(w->fric, w->num_fric, w->cx, energy, w->cf, w->fric_S);
    /* the Hessian terms: the active pairs' ψ'' n nᵀ, then friction's */
    size_t nt = 0;
    for (size_t i = 0; i < w->pairs.count; i++) {
        if (!(w->hess[i] > 0)) continue;
        const defo_contact_pair *p = &w->pairs.pairs[i];
        defo_contact_term *T = &w->terms[nt++];
        for (int a = 0; a < 4; a++) {
            T->body[a] = call_index(w, bodies, count, p->surface[p->side[a]]);
            T->node[a] = p->node[a];
            T->w[a] = p->w[a];
        }
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++) T->S[3 * r + q] = w->hess[i] * p->n[r] * p->n[q];
        if (exact) defo_contact_pair_curvature(p, w->cx, T->S);
    }
    for (size_t i = 0; i < w->num_fric; i++) {
        const defo_contact_friction *f = &w->fric[i];
        defo_contact_term *T = &w->terms[nt++];
        for (int a = 0; a < 4; a++) {
            T->body[a] = call_index(w, bodies, count, f->surface[f->side[a]]);
            T->node[a] = f->node[a];
            T->w[a] = f->w[a];
        }
        memcpy(T->S, w->fric_S + 9 * i, sizeof T->S);
    }
    if (terms) *terms = w->terms;
    if (num_terms) *num_terms = nt;
    w->stats.contacts = (defo_index)(nt - w->num_fric);
    if (depth > w->stats.contact_depth) w->stats.contact_depth = depth;
    w->stats.contact_seconds += now_seconds() - t0;
    return DEFO_OK;
}

double defo_world_contact_bound(void *ctx, defo_step_body *const *bodies, int count,
                                const double *const *x, const double *const *dx) {
    defo_world *w = ctx;
    const double t0 = now_seconds();
    int ns = 0;
    if (gather(w, bodies, count, x, &ns)) return 1.0;
    for (int j = 0; j < ns; j++) {
        const int ci = call_index(w, bodies, count, j);
        w->cs[j] = ci >= 0 ? dx[ci] : NULL;
    }
    const double a = defo_contact_step_bound(w->cbody, ns, w->cs);
    w->stats.contact_seconds += now_seconds() - t0;
    return a;
}

defo_status defo_world_contact_respond(void *ctx, defo_step_body *const *bodies, int count,
                                       double dt, double tau, const double *const *x_prev,
                                       double *const *x, double *const *v, int positions,
                                       defo_index *pairs) {
    defo_world *w = ctx;
    const double t0 = now_seconds();
    if (pairs) *pairs = 0;
    int ns = 0;
    defo_status s = gather(w, bodies, count, (const double *const *)x, &ns);
    if (s) return s;
    /* a velocity pass keeps the position pass's pairs (the world's pair
     * list is that pass's while respond_pairs is set) */
    if (!(w->respond_pairs && !positions)) {
        w->pairs.count = 0;
        s = defo_contact_find(w->cbody, ns, DEFO_CONTACT_SIGNED, &w->pairs);
        if (s) return s;
        mark_touching(w, ns);
    }
    w->respond_pairs = positions;
    if (w->pairs.count == 0) {
        w->stats.contacts = 0;
        w->stats.contact_seconds += now_seconds() - t0;
        return DEFO_OK;
    }
    const int rub = positions && x_prev;
    if (rub) {
        for (int i = 0; i < w->num_bodies; i++) w->start[i] = NULL;
        for (int i = 0; i < count; i++) w->start[bodies[i]->index] = x_prev[i];
        (void)keep_depths(w, w->start, dt, ns, 1);
        for (int i = 0; i < count; i++) w->start[bodies[i]->index] = NULL;
    }
    /* inverse masses: 0 for prescribed nodes and bodies held still */
    defo_index most = 0;
    for (int j = 0; j < ns; j++) {
        const world_body *b = &w->bodies[w->surface_body[j]];
        if (b->n > most) most = b->n;
    }
    if (most > w->zeros_n) {
        defo_free(w->zeros);
        w->zeros = defo_calloc((size_t)most + 1, sizeof *w->zeros);
        if (!w->zeros) {
            w->zeros_n = 0;
            return defo_error_oom("contact", (size_t)most * sizeof(double));
        }
        w->zeros_n = most;
    }
    for (int j = 0; j < ns; j++) {
        world_body *b = &w->bodies[w->surface_body[j]];
        const int ci = call_index(w, bodies, count, j);
        w->cf[j] = ci >= 0 ? x[ci] : b->x;
        w->cv[j] = ci >= 0 ? v[ci] : b->v;
        if (ci >= 0) {
            for (defo_index i = 0; i < b->n; i++)
                b->inv_mass[i] = b->prescribed[i] ? 0.0 : 1.0 / b->mass[i];
            w->cm[j] = b->inv_mass;
        } else {
            w->cm[j] = w->zeros;
        }
    }
    if (w->pairs.count > w->pair_work_cap) {
        size_t c = w->pair_work_cap ? w->pair_work_cap : 256;
        while (c < w->pairs.count) c *= 2;
        double *pw = defo_realloc(w->pair_work, 17 * c * sizeof *pw);
        if (!pw) return defo_error_oom("contact response", 17 * c * sizeof *pw);
        w->pair_work = pw;
        w->pair_work_cap = c;
    }
    for (int j = 0; j < ns; j++) w->cx[j] = w->bodies[w->surface_body[j]].work;
    const size_t acted = defo_contact_respond(
        w->pairs.pairs, w->pairs.count, w->cf, rub ? w->cs : NULL, w->cv, w->cm, tau, positions,
        w->contact.sweeps, (double *const *)w->cx, w->pair_work);
    if (pairs) *pairs = (defo_index)acted;
    w->stats.contacts = (defo_index)w->pairs.count;
    for (size_t i = 0; i < w->pairs.count; i++) {
        if (-w->pairs.pairs[i].phi > w->stats.contact_depth)
            w->stats.contact_depth = -w->pairs.pairs[i].phi;
    }
    w->stats.contact_seconds += now_seconds() - t0;
    return DEFO_OK;
}

defo_status defo_world_overlaps(defo_world *w, defo_body_overlap *out, int max, int *count) {
    if (!w || !count || max < 0 || (max > 0 && !out))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_overlaps: bad arguments");
    *count = 0;
    int ns = 0;
    defo_status s = gather(w, NULL, 0, NULL, &ns);
    if (s) return s;
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ns; b++) {
            if (a == b) continue;
            const world_body *wa = &w->bodies[w->surface_body[a]];
            double box[6];
            defo_contact_surface_bounds(wa->surface, box);
            const double size = fmax(box[3] - box[0], fmax(box[4] - box[1], box[5] - box[2]));
            defo_index n = 0, node = -1;
            double depth = 0;
            s = defo_contact_inside(&w->cbody[a], &w->cbody[b], 1e-9 * size, &n, &node, &depth);
            if (s) return s;
            if (!n) continue;
            if (*count < max)
                out[*count] =
                    (defo_body_overlap){w->surface_body[a], w->surface_body[b], n, node, depth};
            (*count)++;
        }
    return DEFO_OK;
}

/* The rigid steppers' body–body contact: the signed pairs of the call's
 * bodies (and every other colliding body, an obstacle) where they are, as
 * points with each side's nodes and weights (a pair's |wₐ|).  A body's pairs with itself are left
 * out (a rigid body does not fold onto itself). */
defo_status defo_world_body_points(void *ctx, defo_step_body *const *bodies, int count,
                                   const defo_body_point **points, size_t *num_points) {
    defo_world *w = ctx;
    const double t0 = now_seconds();
    *points = NULL;
    *num_points = 0;
    int ns = 0;
    defo_status s = gather(w, bodies, count, NULL, &ns);
    w->pairs.count = 0;
    w->respond_pairs = 0;
    if (!s) s = defo_contact_find(w->cbody, ns, DEFO_CONTACT_SIGNED, &w->pairs);
    if (s) return s;
    mark_touching(w, ns);
    if (w->pairs.count > w->points_cap) {
        size_t c = w->points_cap ? w->points_cap : 256;
        while (c < w->pairs.count) c *= 2;
        defo_body_point *np = defo_realloc(w->points, c * sizeof *np);
        if (!np) return defo_error_oom("contact points", c * sizeof *np);
        w->points = np;
        w->points_cap = c;
    }
    size_t k = 0;
    for (size_t i = 0; i < w->pairs.count; i++) {
        const defo_contact_pair *p = &w->pairs.pairs[i];
        defo_step_body *sb0 = &w->bodies[w->surface_body[p->surface[0]]].sb;
        defo_step_body *sb1 = &w->bodies[w->surface_body[p->surface[1]]].sb;
        if (sb0 == sb1) continue;
        defo_body_point *q = &w->points[k++];
        q->body[0] = sb0;
        q->body[1] = sb1;
        q->nodes[0] = q->nodes[1] = 0;
        for (int a = 0; a < 4; a++) {
            /* every node of the features, zero weights too (a triangle
             * stays a triangle when the closest point is on its edge) */
            const int side = p->side[a];
            if (q->nodes[side] == 3) continue; /* never: a triangle has 3 */
            q->node[side][q->nodes[side]] = p->node[a];
            q->weight[side][q->nodes[side]++] = fabs(p->w[a]);
        }
        if (!q->nodes[0] || !q->nodes[1]) {
            k--;
            continue;
        }
        memcpy(q->normal, p->n, sizeof q->normal);
        q->gap = p->phi;
        q->thickness = p->delta;
        q->friction = p->mu;
    }
    *points = w->points;
    *num_points = k;
    w->stats.contacts = (defo_index)k;
    w->stats.contact_seconds += now_seconds() - t0;
    return DEFO_OK;
}
