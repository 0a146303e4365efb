/*
 * world/world.c — bodies, colliders and frame stepping (DESIGN.md "world").
 *
 * A body owns a copy of its mesh, the rest data, the compiled material, the
 * nonlinear force model and flat state arrays; everything a step needs is
 * allocated in defo_world_add_body, so stepping never allocates.
 *
 * Frame stepping: a frame of length T is cut into k = ceil(T / Δt_stable)
 * equal substeps, so the last substep ends exactly at the frame time and
 * frames never drift.  Δt_stable = min(max_dt, cfl · min_body wave time)
 * (defo_force_wave_time: smallest rest altitude over the dilatational wave
 * speed — explicit elasticity in ITF04 §9 is bound by it).
 */
#include "world/world_internal.h"

#include "base/parallel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

defo_world_def defo_default_world_def(void) {
    defo_world_def d;
    d.gravity[0] = 0;
    d.gravity[1] = 0;
    d.gravity[2] = -9.81;
    d.cfl = 0.5;
    d.max_dt = 1.0 / 240.0;
    d.cg_max_iterations = 200;
    d.cg_tolerance = 1e-8;
    return d;
}

defo_body_def defo_default_body_def(void) {
    defo_body_def d;
    memset(&d, 0, sizeof d);
    d.material = defo_default_material();
    return d;
}

static defo_status validate_world_def(const defo_world_def *d) {
    for (int i = 0; i < 3; i++)
        if (!isfinite(d->gravity[i]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "gravity[%d]: %g is not finite", i,
                              d->gravity[i]);
    if (!(d->cfl > 0 && d->cfl <= 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "cfl: %g is not in (0, 1]", d->cfl);
    if (!(d->max_dt > 0) || !isfinite(d->max_dt))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "max_dt: %g is not > 0", d->max_dt);
    if (d->cg_max_iterations <= 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "cg_max_iterations: %d is not > 0",
                          d->cg_max_iterations);
    if (!(d->cg_tolerance > 0 && d->cg_tolerance < 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "cg_tolerance: %g is not in (0, 1)",
                          d->cg_tolerance);
    return DEFO_OK;
}

defo_status defo_world_create(const defo_world_def *def, defo_world **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_create: out is NULL");
    *out = NULL;
    defo_world_def d = def ? *def : defo_default_world_def();
    defo_status s = validate_world_def(&d);
    if (s) return s;
    defo_world *w = defo_calloc(1, sizeof *w);
    if (!w) return defo_error_oom("world", sizeof *w);
    w->def = d;
    *out = w;
    return DEFO_OK;
}

static void body_free(defo_body *b) {
    defo_force_destroy(b->force);
    defo_material_destroy(b->mat);
    defo_rest_free(&b->rest);
    defo_mesh_destroy(b->mesh);
    double *arrays[] = {b->x,  b->v,   b->mass, b->fe,     b->x_new,    b->v_new,   b->fe_new,
                        b->vt, b->rhs, b->tmp,  b->normal, b->inv_diag, b->cg_work, b->fx};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) defo_free(arrays[i]);
    defo_free(b->fixed);
    defo_free(b->constraint);
    defo_free(b->collided);
    memset(b, 0, sizeof *b);
}

void defo_world_destroy(defo_world *w) {
    if (!w) return;
    for (int i = 0; i < w->num_bodies; i++) body_free(&w->bodies[i]);
    defo_free(w->bodies);
    defo_free(w->colliders);
    defo_free(w);
}

static defo_body *get_body(const defo_world *w, defo_body_id id) {
    if (!w || id.index < 0 || id.index >= w->num_bodies || id.generation == 0) return NULL;
    defo_body *b = &w->bodies[id.index];
    return b->generation == id.generation ? b : NULL;
}

int defo_body_is_valid(const defo_world *w, defo_body_id id) {
    return get_body(w, id) != NULL;
}

defo_status defo_body_refresh(defo_body *b) {
    if (!b->dirty) return DEFO_OK;
    defo_status s = defo_force_elastic(b->force, b->x, b->fe, &b->elastic_energy);
    if (s) return defo_error_prefix("body '%s'", b->name);
    b->dirty = 0;
    return DEFO_OK;
}

defo_status defo_world_add_body(defo_world *w, const defo_body_def *def, defo_body_id *out) {
    if (out) {
        out->index = -1;
        out->generation = 0;
    }
    if (!w || !def || !def->mesh)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_add_body: world, def and mesh "
                                                     "are required");
    for (int i = 0; i < 3; i++)
        if (!isfinite(def->velocity[i]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "body velocity[%d] is not finite", i);
    if (w->num_bodies == w->body_capacity) {
        int cap = w->body_capacity ? 2 * w->body_capacity : 4;
        defo_body *nb = defo_realloc(w->bodies, (size_t)cap * sizeof *nb);
        if (!nb) return defo_error_oom("bodies", (size_t)cap * sizeof *nb);
        w->bodies = nb;
        w->body_capacity = cap;
    }
    defo_body *b = &w->bodies[w->num_bodies];
    memset(b, 0, sizeof *b);
    if (def->name)
        snprintf(b->name, sizeof b->name, "%s", def->name);
    else
        snprintf(b->name, sizeof b->name, "body%d", w->num_bodies);
    defo_status s = defo_material_create(&def->material, &b->mat);
    if (s) {
        defo_error_prefix("body '%s': material", b->name);
        body_free(b);
        return s;
    }
    if ((s = defo_mesh_clone(def->mesh, &b->mesh)) || (s = defo_mesh_validate(b->mesh)) ||
        (s = defo_rest_compute(b->mesh, &b->rest)) ||
        (s = defo_force_create(b->mesh, &b->rest, b->mat, &b->force))) {
        defo_error_prefix("body '%s'", b->name);
        body_free(b);
        return s;
    }
    defo_index n = b->mesh->num_nodes;
    size_t m = 3 * (size_t)n;
    b->n = n;
    double **arrays3[] = {&b->x,  &b->v,   &b->fe,  &b->x_new,  &b->v_new,    &b->fe_new,
                          &b->vt, &b->rhs, &b->tmp, &b->normal, &b->inv_diag, &b->fx};
    for (size_t i = 0; i < sizeof arrays3 / sizeof arrays3[0]; i++)
        *arrays3[i] = defo_calloc(m ? m : 1, sizeof(double));
    b->mass = defo_calloc(n ? (size_t)n : 1, sizeof(double));
    b->cg_work = defo_calloc(m ? 4 * m : 1, sizeof(double));
    b->fixed = defo_calloc(n ? (size_t)n : 1, 1);
    b->constraint = defo_calloc(n ? (size_t)n : 1, 1);
    b->collided = defo_calloc(n ? (size_t)n : 1, 1);
    int ok = b->mass && b->cg_work && b->fixed && b->constraint && b->collided;
    for (size_t i = 0; i < sizeof arrays3 / sizeof arrays3[0]; i++) ok = ok && *arrays3[i];
    if (!ok) {
        body_free(b);
        return defo_error_oom("body state", 16 * m * sizeof(double));
    }
    s = defo_mesh_lumped_mass(b->mesh, def->material.density, b->mass);
    if (s) {
        defo_error_prefix("body '%s'", b->name);
        body_free(b);
        return s;
    }
    for (defo_index i = 0; i < n; i++) {
        if (!(b->mass[i] > 0)) {
            body_free(b);
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "body '%s': node %ld belongs to no element (zero mass)", b->name,
                              (long)i);
        }
    }
    memcpy(b->x, b->mesh->x, m * sizeof(double));
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) b->v[3 * (size_t)i + k] = def->velocity[k];
    b->dirty = 1;
    if ((s = defo_body_refresh(b))) {
        body_free(b);
        return s;
    }
    /* Bodies are never removed yet, so every slot is on its first generation;
     * removal (fracture) will bump it so stale ids stop matching. */
    b->generation = 1;
    if (out) {
        out->index = w->num_bodies;
        out->generation = b->generation;
    }
    w->num_bodies++;
    return DEFO_OK;
}

double *defo_body_external_force(defo_world *w, defo_body_id id) {
    defo_body *b = get_body(w, id);
    return b ? b->fx : NULL;
}

defo_status defo_body_set_material(defo_world *w, defo_body_id id,
                                   const defo_material_def *material) {
    defo_body *b = get_body(w, id);
    if (!b || !material)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_set_material: invalid body id");
    defo_material *mat = NULL;
    defo_force *force = NULL;
    defo_status s = defo_material_create(material, &mat);
    if (!s) s = defo_force_create(b->mesh, &b->rest, mat, &force);
    if (s) {
        defo_force_destroy(force);
        defo_material_destroy(mat);
        return defo_error_prefix("body '%s': material", b->name);
    }
    /* Masses follow the new density. */
    s = defo_mesh_lumped_mass(b->mesh, material->density, b->tmp);
    if (s) {
        defo_force_destroy(force);
        defo_material_destroy(mat);
        return s;
    }
    memcpy(b->mass, b->tmp, (size_t)b->n * sizeof(double));
    defo_force_destroy(b->force);
    defo_material_destroy(b->mat);
    b->force = force;
    b->mat = mat;
    b->dirty = 1;
    return defo_body_refresh(b);
}

defo_status defo_body_fix_node(defo_world *w, defo_body_id id, defo_index node, int fixed) {
    defo_body *b = get_body(w, id);
    if (!b) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_fix_node: invalid body id");
    if (node < 0 || node >= b->n)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_body_fix_node: body '%s' has no node %ld (%ld nodes)", b->name,
                          (long)node, (long)b->n);
    b->fixed[node] = fixed ? 1 : 0;
    if (fixed) b->v[3 * (size_t)node] = b->v[3 * (size_t)node + 1] = b->v[3 * (size_t)node + 2] = 0;
    return DEFO_OK;
}

defo_index defo_body_num_nodes(const defo_world *w, defo_body_id id) {
    defo_body *b = get_body(w, id);
    return b ? b->n : 0;
}
const defo_mesh *defo_body_mesh(const defo_world *w, defo_body_id id) {
    defo_body *b = get_body(w, id);
    return b ? b->mesh : NULL;
}
const double *defo_body_positions(const defo_world *w, defo_body_id id) {
    defo_body *b = get_body(w, id);
    return b ? b->x : NULL;
}
const double *defo_body_velocities(const defo_world *w, defo_body_id id) {
    defo_body *b = get_body(w, id);
    return b ? b->v : NULL;
}

defo_status defo_body_set_state(defo_world *w, defo_body_id id, const double *x, const double *v) {
    defo_body *b = get_body(w, id);
    if (!b) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_set_state: invalid body id");
    size_t m = 3 * (size_t)b->n;
    for (size_t j = 0; j < m; j++)
        if ((x && !isfinite(x[j])) || (v && !isfinite(v[j])))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "defo_body_set_state: body '%s' node %zu: non-finite %s", b->name,
                              j / 3, x && !isfinite(x[j]) ? "position" : "velocity");
    if (x) {
        memcpy(b->x, x, m * sizeof(double));
        b->dirty = 1; /* forces and rotations follow x */
    }
    if (v) memcpy(b->v, v, m * sizeof(double));
    for (defo_index i = 0; i < b->n; i++)
        if (b->fixed[i])
            b->v[3 * (size_t)i] = b->v[3 * (size_t)i + 1] = b->v[3 * (size_t)i + 2] = 0;
    return b->dirty ? defo_body_refresh(b) : DEFO_OK;
}
const double *defo_body_masses(const defo_world *w, defo_body_id id) {
    defo_body *b = get_body(w, id);
    return b ? b->mass : NULL;
}
const char *defo_body_name(const defo_world *w, defo_body_id id) {
    defo_body *b = get_body(w, id);
    return b ? b->name : NULL;
}

defo_status defo_body_energy(defo_world *w, defo_body_id id, double *kinetic, double *elastic,
                             double *gravitational) {
    defo_body *b = get_body(w, id);
    if (!b) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_energy: invalid body id");
    defo_status s = defo_body_refresh(b);
    if (s) return s;
    /* Per-node terms then a fixed-order sum: thread-count independent. */
    if (kinetic) {
        for (defo_index i = 0; i < b->n; i++) {
            const double *v = b->v + 3 * (size_t)i;
            b->tmp[i] = 0.5 * b->mass[i] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        }
        *kinetic = defo_sum(b->tmp, (size_t)b->n);
    }
    if (elastic) *elastic = b->elastic_energy;
    if (gravitational) {
        const double *g = w->def.gravity;
        for (defo_index i = 0; i < b->n; i++) {
            const double *x = b->x + 3 * (size_t)i;
            b->tmp[i] = -b->mass[i] * (g[0] * x[0] + g[1] * x[1] + g[2] * x[2]);
        }
        *gravitational = defo_sum(b->tmp, (size_t)b->n);
    }
    return DEFO_OK;
}

defo_status defo_body_count_inverted(defo_world *w, defo_body_id id, defo_index *count) {
    defo_body *b = get_body(w, id);
    if (!b || !count)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_count_inverted: invalid body id");
    defo_status s = defo_body_refresh(b);
    if (s) return s;
    *count = defo_force_count_inverted(b->force);
    return DEFO_OK;
}

defo_status defo_world_add_collider(defo_world *w, defo_collider *c) {
    if (!w || !c)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_add_collider: NULL argument");
    if (w->num_colliders == w->collider_capacity) {
        int cap = w->collider_capacity ? 2 * w->collider_capacity : 4;
        defo_collider **nc = defo_realloc(w->colliders, (size_t)cap * sizeof *nc);
        if (!nc) return defo_error_oom("colliders", (size_t)cap * sizeof *nc);
        w->colliders = nc;
        w->collider_capacity = cap;
    }
    w->colliders[w->num_colliders++] = c;
    return DEFO_OK;
}

double defo_world_stable_dt(const defo_world *w) {
    double dt = w->def.max_dt;
    for (int i = 0; i < w->num_bodies; i++) {
        const defo_body *b = &w->bodies[i];
        if (b->generation) dt = fmin(dt, w->def.cfl * defo_force_wave_time(b->force));
    }
    return dt;
}

double defo_world_time(const defo_world *w) {
    return w->time;
}

defo_status defo_world_set_time(defo_world *w, double time) {
    if (!w || !isfinite(time))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_set_time: time %g is not finite",
                          time);
    w->time = time;
    return DEFO_OK;
}

void defo_world_stats(const defo_world *w, defo_step_stats *out) {
    *out = w->stats;
}

static void stats_begin(defo_world *w) {
    memset(&w->stats, 0, sizeof w->stats);
}

static void stats_end(defo_world *w) {
    defo_index inv = 0;
    for (int i = 0; i < w->num_bodies; i++)
        if (w->bodies[i].generation) inv += defo_force_count_inverted(w->bodies[i].force);
    w->stats.inverted = inv;
}

defo_status defo_world_substep(defo_world *w, double dt) {
    if (!w || !(dt > 0) || !isfinite(dt))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_substep: dt %g is not > 0", dt);
    stats_begin(w);
    defo_status s = defo_newmark_step(w, dt);
    if (s < 0) return s;
    w->time += dt;
    w->stats.substeps = 1;
    w->stats.dt = dt;
    stats_end(w);
    return s;
}

defo_status defo_world_step(defo_world *w, double frame_dt) {
    if (!w || !(frame_dt > 0) || !isfinite(frame_dt))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_step: frame_dt %g is not > 0",
                          frame_dt);
    double stable = defo_world_stable_dt(w);
    double k = ceil(frame_dt / stable * (1.0 - 1e-12));
    if (!(k >= 1)) k = 1;
    if (k > 1e9)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_world_step: frame_dt %g needs %.3g substeps of %g s", frame_dt, k,
                          stable);
    int steps = (int)k;
    double dt = frame_dt / k, t0 = w->time;
    stats_begin(w);
    w->stats.dt = dt;
    defo_status worst = DEFO_OK;
    for (int i = 0; i < steps; i++) {
        defo_status s = defo_newmark_step(w, dt);
        if (s < 0) return s;
        if (s > 0) worst = s;
        w->time = t0 + frame_dt * ((double)(i + 1) / k);
        w->stats.substeps = i + 1;
    }
    w->time = t0 + frame_dt;
    stats_end(w);
    return worst;
}
