/*
 * world/contact.c — how contact reaches the steppers (defo/integrator.h): the
 * ITF04 §9 response of dynamic steppers is the collision module's one
 * routine (defo_collision_respond) over the world's colliders; the TSIF05
 * §10 penalty term of the equilibrium solvers is defo_penalty_eval with one
 * source per collider at the body's stiffness (the integrator's
 * contact_stiffness, or 10 (2μ+λ) h with h the body's mean rest edge).
 * Prescribed nodes never collide.
 */
#include "world/world_internal.h"

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

defo_status defo_world_contact_sources(defo_world *w, world_body *b) {
    defo_contact_source *ns = defo_realloc(b->src, (size_t)(w->num_colliders + 1) * sizeof *ns);
    if (!ns) return defo_error_oom("contact sources", sizeof *ns);
    b->src = ns;
    double k = w->integrators[b->integrator].def.contact_stiffness;
    if (!(k > 0)) k = 10.0 * defo_material_stiffness_scale(b->mat) * b->mean_edge;
    for (int c = 0; c < w->num_colliders; c++)
        b->src[c] = defo_contact_from_collider(w->colliders[c], k);
    b->num_src = w->num_colliders;
    return DEFO_OK;
}
