/*
 * world/world.c — bodies, their integrators and the step order (defo/world.h).
 *
 * A body owns a copy of its mesh, the element layer's rest data, its
 * material and force model, and flat per-node arrays; the stepper sees it
 * through its defo_step_body.  Everything a step needs is allocated when the
 * body is added (and when a fracture split grows it, with doubling
 * capacities), so warm steps allocate nothing.
 *
 * Loads: gravity is the consistent body force ∫ρ N_a dV · g (element layer;
 * for tet4 the lumped ρV/4 per corner), plus the user's dead loads.
 *
 * Step order (docs/architecture.md): per integrator, per step of its frame: fracture
 * (topology; the stepper is told), plasticity, prescribed targets at the
 * step's end, the stepper's step; then statistics.  The state at the frame's
 * start is kept (checkpoint format, in memory) so a failed or interrupted
 * frame leaves the world there.  Every frame starts with the steppers'
 * frame_start; a frame depends only on the state a checkpoint holds (lazily
 * kept rotations and lagged factorisations included).
 */
#include "world/world_internal.h"

#include "base/parallel.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static uint32_t next_serial = 1;

defo_world_def defo_default_world_def(void) {
    defo_world_def d;
    d.gravity[0] = 0;
    d.gravity[1] = 0;
    d.gravity[2] = -9.81;
    return d;
}

defo_body_def defo_default_body_def(void) {
    defo_body_def d;
    memset(&d, 0, sizeof d);
    d.material = defo_default_material();
    d.force = defo_default_force_model_def();
    d.integrator = -1;
    d.collide = 1;
    d.self_contact = 0;
    d.friction = 0.5;
    return d;
}

defo_status defo_world_create(const defo_world_def *def, defo_world **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_create: out is NULL");
    *out = NULL;
    defo_world_def d = def ? *def : defo_default_world_def();
    for (int i = 0; i < 3; i++)
        if (!isfinite(d.gravity[i]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "gravity[%d]: %g is not finite", i,
                              d.gravity[i]);
    defo_world *w = defo_calloc(1, sizeof *w);
    if (!w) return defo_error_oom("world", sizeof *w);
    w->def = d;
    w->contact = defo_default_contact_def();
    w->serial = __atomic_fetch_add(&next_serial, 1, __ATOMIC_RELAXED);
    *out = w;
    return DEFO_OK;
}

void defo_world_body_free(defo_world *w, world_body *b) {
    if (b->sb.data && b->integrator >= 0 && b->integrator < w->num_integrators) {
        world_integrator *wi = &w->integrators[b->integrator];
        wi->ops->detach(wi->stepper, &b->sb);
    }
    defo_plasticity_destroy(b->plast);
    defo_fracture_destroy(b->frac);
    defo_world_part_free(b);
    defo_force_model_destroy(b->force);
    defo_material_destroy(b->mat);
    defo_element_rest_destroy(b->rest);
    defo_mesh_destroy(b->mesh);
    defo_mesh_destroy(b->origin_mesh);
    double *a[] = {b->x,    b->v,      b->mass, b->gravity_load,  b->dead,
                   b->load, b->target, b->work, b->traction_load, b->impact_x};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) defo_free(a[i]);
    for (int k = 0; k < b->num_tractions; k++) {
        defo_free(b->tractions[k].elem);
        defo_free(b->tractions[k].face);
        defo_free(b->tractions[k].corners);
        defo_free(b->tractions[k].origin);
    }
    defo_free(b->tractions);
    defo_free(b->prescribed);
    defo_free(b->held);
    defo_free(b->set_of);
    defo_free(b->sets);
    defo_free(b->parent);
    defo_free(b->src);
    defo_world_contact_free(b);
    defo_free(b->fibres);
    defo_world_activation_free(b);
    defo_free(b->density_scale);
    defo_free(b->X0);
    defo_free(b->fibres0);
    for (int k = 0; k < b->num_regions; k++) defo_material_destroy(b->regions[k].mat);
    defo_free(b->regions);
    defo_free(b->part_of);
    memset(b, 0, sizeof *b);
}

void defo_world_destroy(defo_world *w) {
    if (!w) return;
    for (int i = 0; i < w->num_bodies; i++) defo_world_body_free(w, &w->bodies[i]);
    for (int i = 0; i < w->num_integrators; i++)
        w->integrators[i].ops->destroy(w->integrators[i].stepper);
    defo_free(w->bodies);
    defo_free(w->integrators);
    defo_free(w->colliders);
    defo_free(w->snapshot.p);
    defo_free(w->set);
    defo_free(w->cbody);
    defo_free(w->call_of);
    defo_free((void *)w->cx);
    defo_free(w->cf);
    defo_free(w->cv);
    defo_free((void *)w->cm);
    defo_free((void *)w->cs);
    defo_free(w->surface_body);
    defo_contact_list_free(&w->pairs);
    defo_free(w->points);
    defo_free(w->terms);
    defo_free(w->hess);
    defo_free(w->zeros);
    defo_free(w->pair_work);
    defo_free((void *)w->start);
    defo_free(w->fric);
    defo_free(w->fric_S);
    defo_free(w);
}

/* ------------------------------------------------------------ integrators */
defo_status defo_world_add_integrator(defo_world *w, const defo_integrator_def *def, int *index) {
    if (!w || !def) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_add_integrator: NULL");
    defo_status s = defo_integrator_def_validate(def);
    if (s) return s;
    world_integrator *ni =
        defo_realloc(w->integrators, (size_t)(w->num_integrators + 1) * sizeof *ni);
    if (!ni) return defo_error_oom("integrators", sizeof *ni);
    w->integrators = ni;
    world_integrator *wi = &w->integrators[w->num_integrators];
    memset(wi, 0, sizeof *wi);
    wi->def = *def;
    wi->ops = defo_integrator_ops_of(def->kind);
    s = wi->ops->create(def, &wi->stepper);
    if (s) return defo_error_prefix("integrator %s", wi->ops->name);
    if (index) *index = w->num_integrators;
    w->num_integrators++;
    return DEFO_OK;
}

int defo_world_num_integrators(const defo_world *w) {
    return w ? w->num_integrators : 0;
}

const defo_integrator_def *defo_world_integrator(const defo_world *w, int i) {
    return w && i >= 0 && i < w->num_integrators ? &w->integrators[i].def : NULL;
}

/* ------------------------------------------------------------ bodies */
static world_body *get_body(const defo_world *w, defo_body_id id) {
    if (!w || id.world != w->serial || id.index < 0 || id.index >= w->num_bodies ||
        id.generation == 0)
        return NULL;
    world_body *b = &w->bodies[id.index];
    return b->generation == id.generation && !b->removed ? b : NULL;
}

int defo_body_is_valid(const defo_world *w, defo_body_id id) {
    return get_body(w, id) != NULL;
}

int defo_world_num_bodies(const defo_world *w) {
    return w ? w->num_bodies : 0;
}

defo_body_id defo_world_body(const defo_world *w, int i) {
    defo_body_id id = {-1, 0, 0};
    if (w && i >= 0 && i < w->num_bodies && defo_world_live(&w->bodies[i])) {
        id.index = i;
        id.world = w->serial;
        id.generation = w->bodies[i].generation;
    }
    return id;
}

#define GROW(field, type, count)                                                                   \
    do {                                                                                           \
        type *q_ = defo_realloc(b->field, (size_t)(count) * sizeof(type) + 1);                     \
        if (!q_) return defo_error_oom("body state", (size_t)(count) * sizeof(type));              \
        b->field = q_;                                                                             \
    } while (0)

/* Per-node arrays for n nodes (capacity doubling; contents of the first
 * min(old, n) nodes kept, new entries zeroed). */
defo_status defo_world_body_resize(defo_world *w, world_body *b, defo_index n) {
    (void)w;
    if (n > b->cap) {
        defo_index cap = b->cap > 0 ? b->cap : n;
        while (cap < n) cap = cap > DEFO_INDEX_MAX / 2 ? DEFO_INDEX_MAX : 2 * cap;
        const size_t c3 = 3 * (size_t)cap;
        GROW(x, double, c3);
        GROW(v, double, c3);
        GROW(gravity_load, double, c3);
        GROW(dead, double, c3);
        GROW(traction_load, double, c3);
        GROW(load, double, c3);
        GROW(target, double, c3);
        GROW(mass, double, cap);
        GROW(work, double, cap);
        GROW(prescribed, unsigned char, cap);
        GROW(held, unsigned char, cap);
        GROW(set_of, int, cap);
        GROW(parent, defo_index, cap);
        if (b->X0) GROW(X0, double, c3);
        const size_t old = (size_t)b->cap;
        memset(b->x + 3 * old, 0, 3 * (size_t)(cap - b->cap) * sizeof(double));
        memset(b->v + 3 * old, 0, 3 * (size_t)(cap - b->cap) * sizeof(double));
        memset(b->dead + 3 * old, 0, 3 * (size_t)(cap - b->cap) * sizeof(double));
        memset(b->target + 3 * old, 0, 3 * (size_t)(cap - b->cap) * sizeof(double));
        memset(b->prescribed + old, 0, (size_t)(cap - b->cap));
        memset(b->held + old, 0, (size_t)(cap - b->cap));
        for (defo_index i = b->cap; i < cap; i++) b->set_of[i] = -1, b->parent[i] = i;
        b->cap = cap;
    }
    b->n = n;
    return DEFO_OK;
}

static defo_status loads(world_body *b);

/* The tractions' consistent loads on the current connectivity. */
static defo_status traction_loads(world_body *b) {
    memset(b->traction_load, 0, 3 * (size_t)b->n * sizeof(double));
    for (int k = 0; k < b->num_tractions; k++) {
        const world_traction *t = &b->tractions[k];
        defo_status s = defo_element_face_load(b->mesh, t->elem, t->face, t->count, t->t,
                                               b->traction_load, NULL);
        if (s) return defo_error_prefix("body '%s': traction %d", b->name, k);
    }
    return DEFO_OK;
}

/* hybrid: whether an impact may break the body — it fractures and is not
 * below fragment_size³ (default: twice its mean edge, cubed) */
static void set_breaks(const defo_world *w, world_body *b) {
    b->sb.breaks = 0;
    if (!b->frac || !b->rest) return;
    double fs = w->integrators[b->integrator].def.fragment_size, vol = 0;
    if (!(fs > 0)) fs = 2 * defo_mesh_mean_edge(b->mesh);
    const double *ev = defo_element_rest_volume(b->rest);
    for (defo_index e = 0; e < b->mesh->num_elems; e++) vol += ev[e];
    b->sb.breaks = vol >= fs * fs * fs;
}

/* Element e's density [kg/m³]: its material's, times its annealing scale. */
static double element_density(const world_body *b, defo_index e) {
    const int k = b->part_of ? b->part_of[e] : 0;
    const double rho = k ? b->regions[k - 1].mat_def.density : b->mat_def.density;
    return b->density_scale ? rho * b->density_scale[e] : rho;
}

/* Element e's thickness [m]: a shell's, its material's (regions have their
 * own); 1 for solids. */
static double element_thickness(const world_body *b, defo_index e) {
    if (b->mesh->nodes_per_elem != 3) return 1.0;
    const int k = b->part_of ? b->part_of[e] : 0;
    return k ? b->regions[k - 1].mat_def.thickness : b->mat_def.thickness;
}

/* Lumped masses from the elements' densities (a shell's masses are per
 * area: ρ times the thickness). */
static defo_status body_masses(world_body *b) {
    const double th = b->mesh->nodes_per_elem == 3 ? b->mat_def.thickness : 1.0;
    if (!b->density_scale && !b->part_of)
        return defo_element_lumped_mass(b->mesh, b->mat_def.density * th, NULL, b->mass);
    const defo_index ne = b->mesh->num_elems;
    double *rho = defo_malloc((size_t)ne * sizeof *rho + 1);
    if (!rho) return defo_error_oom("densities", (size_t)ne * sizeof *rho);
    for (defo_index e = 0; e < ne; e++) rho[e] = element_density(b, e) * element_thickness(b, e);
    defo_status s = defo_element_lumped_mass(b->mesh, b->mat_def.density * th, rho, b->mass);
    defo_free(rho);
    return s;
}

/* Rest data, force model, masses and gravity load from the body's mesh and
 * material (after creation, a material change or a topology change).  The
 * stepper's view follows. */
defo_status defo_world_body_rebuild(defo_world *w, world_body *b, defo_index old_n) {
    defo_element_rest *rest = NULL;
    defo_material *mat = NULL;
    defo_force_model *force = NULL;
    const int nr = b->num_regions;
    defo_material *rmat[DEFO_MAX_MATERIAL_REGIONS];
    const defo_material *all[DEFO_MAX_MATERIAL_REGIONS + 1];
    memset(rmat, 0, sizeof rmat);
    defo_status s = defo_element_rest_create(b->mesh, &rest);
    if (!s && b->fibres) s = defo_element_rest_set_fibres(rest, b->fibres);
    if (!s) s = defo_material_create(&b->mat_def, &mat);
    for (int k = 0; k < nr && !s; k++) {
        s = defo_material_create(&b->regions[k].mat_def, &rmat[k]);
        if (s) defo_error_prefix("material region %d", k);
    }
    if (!s) s = defo_force_model_create(b->mesh, rest, mat, &b->force_def, &force);
    if (!s && nr) {
        all[0] = mat;
        for (int k = 0; k < nr; k++) all[k + 1] = rmat[k];
        s = defo_force_model_set_materials(force, nr + 1, all, b->part_of);
    }
    if (s) {
        defo_force_model_destroy(force);
        defo_material_destroy(mat);
        for (int k = 0; k < nr; k++) defo_material_destroy(rmat[k]);
        defo_element_rest_destroy(rest);
        return defo_error_prefix("body '%s'", b->name);
    }
    defo_force_model_destroy(b->force);
    defo_material_destroy(b->mat);
    defo_element_rest_destroy(b->rest);
    for (int k = 0; k < nr; k++) {
        defo_material_destroy(b->regions[k].mat);
        b->regions[k].mat = rmat[k];
    }
    b->rest = rest;
    b->mat = mat;
    b->force = force;
    defo_force_model_set_activation(b->force, b->activation);
    if (b->plast) s = defo_plasticity_bind(b->plast, b->force);
    if (!s && b->density_scale) s = defo_force_model_set_density_scale(b->force, b->density_scale);
    if (s) return defo_error_prefix("body '%s'", b->name);
    s = body_masses(b);
    if (s) return defo_error_prefix("body '%s'", b->name);
    /* Gravity.  Equilibrium solvers: consistent, Σ_b Me_ab g per element
     * (∫ρ N_a g dV).  Dynamic integrators: m_a g with the lumped masses they
     * step, so a falling body accelerates uniformly (tet10's consistent load
     * is negative at the corners, its HRZ masses are not: paired with them it
     * would deform a body in free fall).  tet4: both are ρV/4 per corner. */
    const defo_element_ops *ops = defo_element_rest_ops(rest);
    const int p = ops->nodes;
    memset(b->gravity_load, 0, 3 * (size_t)b->n * sizeof(double));
    const double *g = w->def.gravity;
    const int lumped = p != 4 && w->integrators[b->integrator].ops->dynamic;
    if (lumped) {
        for (defo_index i = 0; i < b->n; i++)
            for (int k = 0; k < 3; k++) b->gravity_load[3 * (size_t)i + k] = b->mass[i] * g[k];
    } else if (g[0] != 0 || g[1] != 0 || g[2] != 0) {
        double Me[DEFO_ELEMENT_MAX_NODES * DEFO_ELEMENT_MAX_NODES];
        for (defo_index e = 0; e < b->mesh->num_elems; e++) {
            const defo_index *v = b->mesh->elems + (size_t)e * (size_t)p;
            if (p == 4) {
                /* ρV/4 per corner: the lumped masses' own share, exactly */
                const double mq = 0.25 * element_density(b, e) * defo_element_rest_volume(rest)[e];
                for (int a = 0; a < 4; a++)
                    for (int k = 0; k < 3; k++) b->gravity_load[3 * (size_t)v[a] + k] += mq * g[k];
                continue;
            }
            /* shells: ρ per area */
            s = defo_element_mass_matrix(b->mesh, e,
                                         element_density(b, e) * element_thickness(b, e), Me);
            if (s) return defo_error_prefix("body '%s'", b->name);
            for (int a = 0; a < p; a++) {
                double row = 0;
                for (int c = 0; c < p; c++) row += Me[a * p + c];
                for (int k = 0; k < 3; k++) b->gravity_load[3 * (size_t)v[a] + k] += row * g[k];
            }
        }
    }
    for (defo_index i = 0; i < b->n; i++)
        if (!(b->mass[i] > 0))
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "body '%s': node %ld belongs to no element (zero mass)", b->name,
                              (long)i);
    b->sb.force = b->force;
    b->sb.mesh = b->mesh;
    /* a shell's density per area: ρ times the thickness */
    const double rho =
        b->mat_def.density * (b->mesh->nodes_per_elem == 3 ? b->mat_def.thickness : 1.0);
    b->sb.wave_speed = sqrt(defo_material_stiffness_scale(b->mat) / rho);
    set_breaks(w, b);
    b->sb.n = b->n;
    b->sb.x = b->x;
    b->sb.v = b->v;
    b->sb.mass = b->mass;
    b->sb.load = b->load;
    b->sb.prescribed = b->prescribed;
    b->sb.held = b->held;
    b->sb.target = b->target;
    if (b->part) { /* a distributed run: the stepper sees this process's part */
        s = defo_world_part_rebuild(w, b);
        if (s) return s;
    }
    if (b->sb.data && old_n >= 0) {
        world_integrator *wi = &w->integrators[b->integrator];
        s = wi->ops->topology_changed(wi->stepper, &b->sb, old_n, b->parent);
        if (s) return defo_error_prefix("body '%s'", b->name);
    }
    s = traction_loads(b);
    if (s) return s;
    return defo_world_contact_sources(w, b);
}

defo_status defo_world_add_body(defo_world *w, const defo_body_def *def, defo_body_id *out) {
    return defo_world_add_body_state(w, def, NULL, NULL, out);
}

defo_status defo_world_add_body_state(defo_world *w, const defo_body_def *def, const double *x0,
                                      const double *v0, defo_body_id *out) {
    if (out) out->index = -1, out->world = 0, out->generation = 0;
    if (!w || !def || !def->mesh)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_world_add_body: world, def and mesh are required");
    for (int i = 0; i < 3; i++)
        if (!isfinite(def->velocity[i]) || !isfinite(def->angular_velocity[i]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "body velocity or angular_velocity[%d] is not finite", i);
    if ((def->collide != 0 && def->collide != 1) ||
        (def->self_contact != 0 && def->self_contact != 1))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "body collide (%d) and self_contact (%d) must be 0 or 1", def->collide,
                          def->self_contact);
    if (!(def->friction >= 0) || !isfinite(def->friction))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "body friction %g is not >= 0", def->friction);
    if (w->num_integrators == 0) {
        defo_integrator_def nd = defo_default_integrator_def(DEFO_INTEGRATOR_NEWMARK);
        defo_status s = defo_world_add_integrator(w, &nd, NULL);
        if (s) return s;
    }
    const int integ = def->integrator < 0 ? 0 : def->integrator;
    if (integ >= w->num_integrators)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "body integrator %d: the world has %d integrators", def->integrator,
                          w->num_integrators);
    if (w->num_bodies == w->body_capacity) {
        int cap = w->body_capacity ? 2 * w->body_capacity : 4;
        world_body *nb = defo_realloc(w->bodies, (size_t)cap * sizeof *nb);
        if (!nb) return defo_error_oom("bodies", (size_t)cap * sizeof *nb);
        /* the stepper views point into the bodies' own arrays, not at the
         * bodies: moving the structs keeps them valid */
        w->bodies = nb;
        w->body_capacity = cap;
        defo_step_body **set = defo_realloc(w->set, (size_t)cap * sizeof *set);
        if (!set) return defo_error_oom("bodies", (size_t)cap * sizeof *set);
        w->set = set;
    }
    world_body *b = &w->bodies[w->num_bodies];
    memset(b, 0, sizeof *b);
    if (def->name)
        snprintf(b->name, sizeof b->name, "%s", def->name);
    else
        snprintf(b->name, sizeof b->name, "body%d", w->num_bodies);
    b->integrator = integ;
    b->origin = -1;
    b->mat_def = def->material;
    if (def->fracture) b->frac_def = *def->fracture;
    b->force_def = def->force;
    b->collide = def->collide;
    b->self_contact = def->self_contact;
    b->friction = def->friction;
    defo_status s = defo_material_def_validate(&def->material);
    if (!s) s = defo_mesh_clone(def->mesh, &b->mesh);
    if (!s) s = defo_mesh_validate(b->mesh);
    if (!s && !defo_element_ops_for_mesh(b->mesh)) s = defo_last_status();
    if (!s) s = defo_world_body_resize(w, b, b->mesh->num_nodes);
    if (!s) {
        b->n0 = b->n;
        b->ne0 = b->mesh->num_elems;
        memcpy(b->x, b->mesh->x, 3 * (size_t)b->n * sizeof(double));
        for (defo_index i = 0; i < b->n; i++) b->parent[i] = i;
        if (def->plasticity) {
            const defo_element_ops *ops = defo_element_ops_for_mesh(b->mesh);
            s = defo_plasticity_create(def->plasticity, b->mesh->num_elems,
                                       ops->stiffness.num_points, &b->plast);
        }
    }
    if (!s && def->fracture && b->mesh->nodes_per_elem == 3)
        s = defo_error(DEFO_ERR_UNSUPPORTED,
                       "fracture of a shell (tri3) is not available (the cracks cut tetrahedra)");
    if (!s && def->fibres) {
        /* ITF04 §6.1 directions per stiffness point (checked by the rest data) */
        const defo_element_ops *ops = defo_element_ops_for_mesh(b->mesh);
        const size_t v = 3 * (size_t)b->mesh->num_elems * (size_t)ops->stiffness.num_points;
        b->fibres = defo_malloc(v * sizeof(double) + 1);
        if (!b->fibres)
            s = defo_error_oom("fibre directions", v * sizeof(double));
        else
            memcpy(b->fibres, def->fibres, v * sizeof(double));
    }
    if (!s) {
        b->mean_edge = defo_mesh_mean_edge(b->mesh);
        s = defo_world_body_rebuild(w, b, -1);
    }
    if (!s && def->fracture) {
        /* the crack speed by default: the longitudinal wave speed (MMDJ01 §2.5) */
        defo_fracture_def fd = *def->fracture;
        if (fd.crack_speed == 0)
            fd.crack_speed = sqrt(defo_material_stiffness_scale(b->mat) / b->mat_def.density);
        s = defo_fracture_create(b->mesh, &fd, &b->frac);
        set_breaks(w, b);
    }
    if (s) {
        defo_error_prefix("body '%s'", b->name);
        defo_world_body_free(w, b);
        return s;
    }
    /* initial velocity: v + ω × (x − c), c the centre of mass */
    double c[3] = {0, 0, 0}, mt = 0;
    for (defo_index i = 0; i < b->n; i++) {
        mt += b->mass[i];
        for (int k = 0; k < 3; k++) c[k] += b->mass[i] * b->x[3 * (size_t)i + k];
    }
    for (int k = 0; k < 3; k++) c[k] /= mt;
    const double *om = def->angular_velocity;
    for (defo_index i = 0; i < b->n; i++) {
        const double *p = b->x + 3 * (size_t)i;
        const double r[3] = {p[0] - c[0], p[1] - c[1], p[2] - c[2]};
        double *q = b->v + 3 * (size_t)i;
        q[0] = def->velocity[0] + om[1] * r[2] - om[2] * r[1];
        q[1] = def->velocity[1] + om[2] * r[0] - om[0] * r[2];
        q[2] = def->velocity[2] + om[0] * r[1] - om[1] * r[0];
    }
    if (x0) memcpy(b->x, x0, 3 * (size_t)b->n * sizeof(double));
    if (v0) memcpy(b->v, v0, 3 * (size_t)b->n * sizeof(double));
    b->sb.index = w->num_bodies;
    b->sb.name = b->name;
    world_integrator *wi = &w->integrators[integ];
    s = wi->ops->attach(wi->stepper, &b->sb);
    if (!s) s = loads(b);
    if (s) {
        defo_error_prefix("body '%s' (%s)", b->name, wi->ops->name);
        defo_world_body_free(w, b);
        return s;
    }
    /* Bodies are not removed yet (fracture splits within a body), so every
     * slot is on its first generation; removal will bump it. */
    b->generation = 1;
    if (out) {
        out->index = w->num_bodies;
        out->world = w->serial;
        out->generation = b->generation;
    }
    w->num_bodies++;
    return DEFO_OK;
}

defo_status defo_body_prescribe(defo_world *w, defo_body_id id, const defo_region *region,
                                const defo_motion_def *motion, int *set) {
    world_body *b = get_body(w, id);
    if (!b || !region)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_prescribe: invalid body id");
    if (motion) {
        defo_status s = defo_motion_validate(motion, "motion");
        if (s) return s;
    }
    /* regions select on the rest positions of the original nodes */
    defo_index *nodes = NULL, count = 0;
    defo_status s = defo_region_nodes(b->mesh, region, &nodes, &count);
    if (s) return s;
    if (count == 0) {
        defo_region_nodes_free(nodes);
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "selects no node of body '%s'", b->name);
    }
    world_set *ns = defo_realloc(b->sets, (size_t)(b->num_sets + 1) * sizeof *ns);
    if (!ns) {
        defo_region_nodes_free(nodes);
        return defo_error_oom("prescribed sets", sizeof *ns);
    }
    b->sets = ns;
    world_set *st = &b->sets[b->num_sets];
    memset(st, 0, sizeof *st);
    st->motion = motion ? *motion : defo_default_motion_def();
    for (defo_index k = 0; k < count; k++) {
        b->set_of[nodes[k]] = b->num_sets;
        b->prescribed[nodes[k]] = 1;
    }
    /* nodes split from them follow */
    for (defo_index i = b->n0; i < b->n; i++)
        if (b->set_of[b->parent[i]] == b->num_sets)
            b->set_of[i] = b->num_sets, b->prescribed[i] = 1;
    defo_region_nodes_free(nodes);
    if (set) *set = b->num_sets;
    b->num_sets++;
    b->sb.changed |= DEFO_CHANGED_MODEL; /* other constraints */
    return DEFO_OK;
}

defo_status defo_body_release(defo_world *w, defo_body_id id, int set) {
    world_body *b = get_body(w, id);
    if (!b || set < 0 || set >= b->num_sets)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_release: bad body or set %d", set);
    for (defo_index i = 0; i < b->n; i++)
        if (b->set_of[i] == set) b->set_of[i] = -1, b->prescribed[i] = 0;
    b->sb.changed |= DEFO_CHANGED_MODEL; /* other constraints */
    return DEFO_OK;
}

defo_status defo_body_set_transform(defo_world *w, defo_body_id id, int set, const double R[9],
                                    const double T[3]) {
    world_body *b = get_body(w, id);
    if (!b || !R || !T || set < 0 || set >= b->num_sets)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_set_transform: bad body or set %d",
                          set);
    for (int k = 0; k < 9; k++)
        if (!isfinite(R[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "set transform: R[%d] is not finite", k);
    for (int k = 0; k < 3; k++)
        if (!isfinite(T[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "set transform: T[%d] is not finite", k);
    world_set *s = &b->sets[set];
    s->explicit_transform = 1;
    memcpy(s->R, R, sizeof s->R);
    memcpy(s->T, T, sizeof s->T);
    return DEFO_OK;
}

defo_status defo_body_pause_fracture(defo_world *w, defo_body_id id, int paused) {
    world_body *b = get_body(w, id);
    if (!b)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_pause_fracture: invalid body id");
    b->frac_paused = paused != 0;
    return DEFO_OK;
}

double *defo_body_external_force(defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->dead : NULL;
}

defo_status defo_body_add_traction(defo_world *w, defo_body_id id, const defo_region *region,
                                   const double traction[3], double *area) {
    if (area) *area = 0;
    world_body *b = get_body(w, id);
    if (!b || !region || !traction)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_add_traction: invalid body id");
    for (int k = 0; k < 3; k++)
        if (!isfinite(traction[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "traction[%d] = %g is not finite", k,
                              traction[k]);
    unsigned char *mark = defo_calloc((size_t)b->n + 1, 1);
    if (!mark) return defo_error_oom("traction marks", (size_t)b->n);
    defo_status s = defo_region_mark(b->mesh, region, mark);
    defo_boundary bd;
    memset(&bd, 0, sizeof bd);
    if (!s) s = defo_mesh_boundary(b->mesh, 0, &bd);
    world_traction t;
    memset(&t, 0, sizeof t);
    memcpy(t.t, traction, sizeof t.t);
    if (!s) {
        for (defo_index q = 0; q < bd.num_faces; q++) {
            const defo_index *v = bd.faces + 3 * (size_t)q;
            t.count += mark[v[0]] && mark[v[1]] && mark[v[2]];
        }
        t.elem = defo_malloc((size_t)t.count * sizeof *t.elem + 1);
        t.face = defo_malloc((size_t)t.count + 1);
        if (!t.elem || !t.face) s = defo_error_oom("traction faces", (size_t)t.count * 5);
    }
    defo_index k = 0;
    for (defo_index q = 0; !s && q < bd.num_faces; q++) {
        const defo_index *v = bd.faces + 3 * (size_t)q;
        if (!(mark[v[0]] && mark[v[1]] && mark[v[2]])) continue;
        t.elem[k] = bd.elem[q];
        t.face[k] = bd.local_face[q];
        k++;
    }
    defo_boundary_free(&bd);
    defo_free(mark);
    double a = 0, *scratch = NULL;
    if (!s && t.count == 0)
        s = defo_error(DEFO_ERR_INVALID_ARGUMENT, "selects no boundary face of body '%s'", b->name);
    if (!s) s = defo_world_traction_record(b, &t);
    if (!s) {
        scratch = defo_calloc(3 * (size_t)b->n + 1, sizeof(double));
        s = scratch ? defo_element_face_load(b->mesh, t.elem, t.face, t.count, t.t, scratch, &a)
                    : defo_error_oom("traction", 3 * (size_t)b->n * sizeof(double));
        defo_free(scratch);
    }
    world_traction *nt = NULL;
    if (!s) {
        nt = defo_realloc(b->tractions, (size_t)(b->num_tractions + 1) * sizeof *nt);
        if (!nt) s = defo_error_oom("tractions", sizeof *nt);
    }
    if (s) {
        defo_free(t.elem);
        defo_free(t.face);
        defo_free(t.corners);
        defo_free(t.origin);
        return s;
    }
    b->tractions = nt;
    b->tractions[b->num_tractions++] = t;
    if (area) *area = a;
    s = traction_loads(b);
    return s ? s : loads(b);
}

int defo_world_material_equal(const defo_material_def *a, const defo_material_def *b) {
    return a->model == b->model && a->youngs_modulus == b->youngs_modulus &&
           a->poisson == b->poisson && a->density == b->density &&
           a->inversion.mode == b->inversion.mode &&
           a->inversion.threshold == b->inversion.threshold &&
           a->biphasic.compression_threshold == b->biphasic.compression_threshold &&
           a->biphasic.elongation_threshold == b->biphasic.elongation_threshold &&
           a->biphasic.rest_slope == b->biphasic.rest_slope &&
           a->biphasic.compression_slope == b->biphasic.compression_slope &&
           a->biphasic.elongation_slope == b->biphasic.elongation_slope &&
           a->damping_time == b->damping_time && a->fibre.passive == b->fibre.passive &&
           a->fibre.exp_stress == b->fibre.exp_stress && a->fibre.exp_rate == b->fibre.exp_rate &&
           a->fibre.linear_stretch == b->fibre.linear_stretch && a->fibre.poly2 == b->fibre.poly2 &&
           a->fibre.poly3 == b->fibre.poly3 &&
           a->fibre.max_active_stress == b->fibre.max_active_stress &&
           a->fibre.optimal_stretch == b->fibre.optimal_stretch &&
           a->fibre.active_width == b->fibre.active_width && a->thickness == b->thickness;
}

defo_status defo_body_set_material(defo_world *w, defo_body_id id, const defo_material_def *mat) {
    world_body *b = get_body(w, id);
    if (!b || !mat)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_set_material: invalid body id");
    defo_status s = defo_material_def_validate(mat);
    if (s) return defo_error_prefix("body '%s': material", b->name);
    if (defo_world_material_equal(mat, &b->mat_def)) return DEFO_OK; /* nothing changes */
    const defo_material_def old = b->mat_def;
    b->mat_def = *mat;
    s = defo_world_body_rebuild(w, b, -1);
    if (s) {
        b->mat_def = old;
        (void)defo_world_body_rebuild(w, b, -1);
        return s;
    }
    b->sb.changed |= DEFO_CHANGED_MODEL;
    return DEFO_OK;
}

defo_status defo_world_plastic_sets(world_body *b) {
    if (!b->plast) return DEFO_OK;
    defo_plasticity_def defs[DEFO_MAX_MATERIAL_REGIONS + 1];
    int n = 1;
    defs[0] = *defo_plasticity_get_def(b->plast, 0);
    for (int k = 0; k < b->num_regions; k++)
        if (b->regions[k].plast_set > 0) {
            const defo_plasticity_def *d =
                defo_plasticity_get_def(b->plast, b->regions[k].plast_set);
            defs[n] = d ? *d : defs[0];
            b->regions[k].plast_set = n++;
        }
    int32_t *set_of = NULL;
    if (n > 1) {
        set_of = defo_malloc((size_t)b->mesh->num_elems * sizeof *set_of + 1);
        if (!set_of) return defo_error_oom("plasticity sets", (size_t)b->mesh->num_elems * 4);
        for (defo_index e = 0; e < b->mesh->num_elems; e++) {
            const int k = b->part_of ? b->part_of[e] : 0;
            set_of[e] = k ? b->regions[k - 1].plast_set : 0;
        }
    }
    defo_status s = defo_plasticity_set_regions(b->plast, n, defs, set_of);
    defo_free(set_of);
    return s;
}

void defo_world_region_sets(world_body *b) {
    for (int k = 0; k < b->num_regions; k++) {
        b->regions[k].plast_set = 0;
        for (defo_index e = 0; b->plast && b->part_of && e < b->mesh->num_elems; e++)
            if (b->part_of[e] == k + 1) {
                b->regions[k].plast_set = defo_plasticity_set_of(b->plast, e);
                break;
            }
    }
}

defo_status defo_body_add_material_region(defo_world *w, defo_body_id id, const defo_region *region,
                                          const defo_material_def *material,
                                          const defo_plasticity_def *plasticity, int *index) {
    world_body *b = get_body(w, id);
    if (index) *index = -1;
    if (!b || !region || !material)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_body_add_material_region: invalid body id");
    if (b->num_regions >= DEFO_MAX_MATERIAL_REGIONS)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "body '%s': at most %d material regions",
                          b->name, DEFO_MAX_MATERIAL_REGIONS);
    defo_status s = defo_material_def_validate(material);
    if (s) return defo_error_prefix("body '%s': material region", b->name);
    if (plasticity && defo_plasticity_def_validate(plasticity))
        return defo_error_prefix("body '%s': material region plasticity", b->name);
    const defo_index ne = b->mesh->num_elems;
    unsigned char *mark = defo_malloc((size_t)ne + 1);
    int32_t *old = defo_malloc((size_t)ne * sizeof *old + 1);
    if (!mark || !old) {
        defo_free(mark);
        defo_free(old);
        return defo_error_oom("material region", (size_t)ne * 5);
    }
    s = defo_region_elements(b->mesh, region, mark);
    defo_index count = 0;
    for (defo_index e = 0; !s && e < ne; e++) count += mark[e];
    if (!s && count == 0)
        s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                       "selects no element of body '%s' (an element belongs to a region when all "
                       "its corners do: a tetrahedron's four, a triangle's three)",
                       b->name);
    int32_t *po = b->part_of;
    if (!s) {
        world_region *nr = defo_realloc(b->regions, (size_t)(b->num_regions + 1) * sizeof *nr);
        if (nr) b->regions = nr;
        if (!po) po = defo_calloc((size_t)ne + 1, sizeof *po);
        if (!nr || !po) s = defo_error_oom("material region", (size_t)ne * 4);
    }
    if (s) {
        if (po != b->part_of) defo_free(po);
        defo_free(mark);
        defo_free(old);
        return s;
    }
    const int had_part_of = b->part_of != NULL, had_plast = b->plast != NULL;
    b->part_of = po;
    memcpy(old, po, (size_t)ne * sizeof *old);
    const int k = b->num_regions++;
    world_region *r = &b->regions[k];
    memset(r, 0, sizeof *r);
    r->mat_def = *material;
    for (defo_index e = 0; e < ne; e++)
        if (mark[e]) po[e] = k + 1;
    defo_free(mark);
    if (plasticity && !b->plast) {
        defo_plasticity_def base = defo_default_plasticity_def(); /* elsewhere: never yields */
        s = defo_plasticity_create(&base, ne, defo_force_model_points(b->force), &b->plast);
    }
    if (!s && plasticity) {
        r->plast_set = 1 + defo_plasticity_num_sets(b->plast); /* a new set (renumbered) */
        s = defo_world_plastic_sets(b);
        if (!s) s = defo_plasticity_set_def(b->plast, r->plast_set, plasticity);
    } else if (!s) {
        s = defo_world_plastic_sets(b);
    }
    if (!s) s = defo_world_body_rebuild(w, b, -1);
    if (s) { /* back to the regions before */
        memcpy(po, old, (size_t)ne * sizeof *old);
        b->num_regions--;
        if (!had_part_of) {
            defo_free(b->part_of);
            b->part_of = NULL;
        }
        if (!had_plast) {
            defo_plasticity_destroy(b->plast);
            b->plast = NULL;
        }
        defo_free(old);
        (void)defo_world_plastic_sets(b);
        (void)defo_world_body_rebuild(w, b, -1);
        return s;
    }
    defo_free(old);
    b->sb.changed |= DEFO_CHANGED_MODEL;
    if (index) *index = k;
    return loads(b);
}

int defo_body_num_material_regions(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->num_regions : 0;
}

const defo_material_def *defo_body_region_material(const defo_world *w, defo_body_id id,
                                                   int region) {
    world_body *b = get_body(w, id);
    if (!b) return NULL;
    if (region == -1) return &b->mat_def;
    return region >= 0 && region < b->num_regions ? &b->regions[region].mat_def : NULL;
}

defo_status defo_body_set_region_material(defo_world *w, defo_body_id id, int region,
                                          const defo_material_def *mat) {
    world_body *b = get_body(w, id);
    if (!b || !mat)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_body_set_region_material: invalid body id");
    if (region == -1) return defo_body_set_material(w, id, mat);
    if (region < 0 || region >= b->num_regions)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "body '%s' has no material region %d", b->name,
                          region);
    defo_status s = defo_material_def_validate(mat);
    if (s) return defo_error_prefix("body '%s': material region %d", b->name, region);
    world_region *r = &b->regions[region];
    if (defo_world_material_equal(mat, &r->mat_def)) return DEFO_OK;
    const defo_material_def old = r->mat_def;
    r->mat_def = *mat;
    s = defo_world_body_rebuild(w, b, -1);
    if (s) {
        r->mat_def = old;
        (void)defo_world_body_rebuild(w, b, -1);
        return s;
    }
    b->sb.changed |= DEFO_CHANGED_MODEL;
    return loads(b);
}

defo_status defo_body_set_state(defo_world *w, defo_body_id id, const double *x, const double *v) {
    world_body *b = get_body(w, id);
    if (!b) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_set_state: invalid body id");
    const size_t m = 3 * (size_t)b->n;
    for (size_t j = 0; j < m; j++)
        if ((x && !isfinite(x[j])) || (v && !isfinite(v[j])))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "defo_body_set_state: body '%s' node %zu: non-finite %s", b->name,
                              j / 3, x && !isfinite(x[j]) ? "position" : "velocity");
    if (x) memcpy(b->x, x, m * sizeof(double));
    if (v) memcpy(b->v, v, m * sizeof(double));
    b->sb.changed |= DEFO_CHANGED_STATE;
    return DEFO_OK;
}

defo_index defo_body_num_nodes(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->n : 0;
}
const double *defo_body_loads(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->load : NULL;
}
const defo_mesh *defo_body_mesh(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->mesh : NULL;
}
const double *defo_body_positions(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->x : NULL;
}
const double *defo_body_velocities(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->v : NULL;
}
const double *defo_body_masses(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->mass : NULL;
}
const char *defo_body_name(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->name : NULL;
}
const defo_material_def *defo_body_material(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? &b->mat_def : NULL;
}
int defo_body_integrator(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->integrator : -1;
}
const defo_index *defo_body_parents(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->parent : NULL;
}
const unsigned char *defo_body_prescribed(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->prescribed : NULL;
}

defo_status defo_body_energy(defo_world *w, defo_body_id id, double *kinetic, double *elastic,
                             double *gravitational) {
    world_body *b = get_body(w, id);
    if (!b) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_energy: invalid body id");
    /* per-node terms then a fixed-order sum: any thread count */
    if (kinetic) {
        for (defo_index i = 0; i < b->n; i++) {
            const double *v = b->v + 3 * (size_t)i;
            b->work[i] = 0.5 * b->mass[i] * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        }
        *kinetic = defo_sum(b->work, (size_t)b->n);
    }
    if (elastic) {
        defo_status s =
            defo_force_model_evaluate(b->force, b->x, DEFO_EVAL_KEEP_ROTATIONS, NULL, elastic);
        if (s) return defo_error_prefix("body '%s'", b->name);
    }
    if (gravitational) {
        for (defo_index i = 0; i < b->n; i++) {
            const double *x = b->x + 3 * (size_t)i, *g = b->gravity_load + 3 * (size_t)i;
            b->work[i] = -(g[0] * x[0] + g[1] * x[1] + g[2] * x[2]);
        }
        *gravitational = defo_sum(b->work, (size_t)b->n);
    }
    return DEFO_OK;
}

defo_status defo_body_fields(defo_world *w, defo_body_id id, defo_force_fields *out) {
    world_body *b = get_body(w, id);
    if (!b || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_fields: invalid body id");
    /* a hybrid body shows the frame's last impact, which the steps after it
     * undid (rigid motion does not change the stresses' invariants) */
    const double *x = b->impact_n == b->n ? b->impact_x : b->x;
    defo_status s = defo_force_model_fields(b->force, x, out);
    return s ? defo_error_prefix("body '%s'", b->name) : DEFO_OK;
}

defo_status defo_body_count_inverted(const defo_world *w, defo_body_id id, defo_index *count) {
    world_body *b = get_body(w, id);
    if (!b || !count)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_count_inverted: invalid body id");
    *count = defo_force_model_count_inverted_at(b->force, b->x);
    return DEFO_OK;
}

defo_status defo_body_count_folded(const defo_world *w, defo_body_id id, defo_index *count) {
    world_body *b = get_body(w, id);
    if (!b || !count)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_count_folded: invalid body id");
    defo_status s = defo_element_fold_state(b->mesh, b->x, NULL, NULL, count);
    return s ? defo_error_prefix("body '%s'", b->name) : DEFO_OK;
}

defo_status defo_body_components(const defo_world *w, defo_body_id id, defo_index *count) {
    world_body *b = get_body(w, id);
    if (!b || !count)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_components: invalid body id");
    return defo_mesh_components(b->mesh, NULL, count);
}

defo_status defo_body_rigid(const defo_world *w, defo_body_id id, defo_rigid_body *out) {
    world_body *b = get_body(w, id);
    if (!b || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_rigid: invalid body id");
    if (!b->sb.rigid)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "body '%s' is not stepped rigidly (integrator %s)", b->name,
                          w->integrators[b->integrator].ops->name);
    *out = *b->sb.rigid;
    return DEFO_OK;
}

const defo_crack *defo_body_cracks(const defo_world *w, defo_body_id id, int *count) {
    world_body *b = get_body(w, id);
    const int n = b && b->frac ? defo_fracture_num_cracks(b->frac) : 0;
    if (count) *count = n;
    return n ? defo_fracture_crack(b->frac, 0) : NULL;
}

defo_status defo_body_plastic_strain(const defo_world *w, defo_body_id id, double *out) {
    world_body *b = get_body(w, id);
    if (!b || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_plastic_strain: invalid body id");
    if (!b->plast) {
        memset(out, 0, (size_t)b->mesh->num_elems * sizeof *out);
        return DEFO_OK;
    }
    return defo_plasticity_norms(b->plast, out);
}

defo_status defo_body_plastic_bending(const defo_world *w, defo_body_id id, double *out) {
    world_body *b = get_body(w, id);
    if (!b || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_plastic_bending: invalid body id");
    const defo_index ne = b->mesh->num_elems;
    memset(out, 0, (size_t)ne * sizeof *out);
    defo_index nh = 0;
    const double *bend = b->plast ? defo_plasticity_bending(b->plast, &nh) : NULL;
    const defo_index *tri = defo_force_model_hinge_triangles(b->force);
    if (!bend || !tri || nh != defo_force_model_num_hinges(b->force)) return DEFO_OK;
    for (defo_index h = 0; h < nh; h++)
        for (int k = 0; k < 2; k++) {
            const defo_index t = tri[2 * (size_t)h + (size_t)k];
            if (t >= 0 && t < ne) out[t] = fmax(out[t], fabs(bend[h]));
        }
    return DEFO_OK;
}

defo_status defo_body_set_plasticity(defo_world *w, defo_body_id id, int region,
                                     const defo_plasticity_def *plasticity) {
    world_body *b = get_body(w, id);
    if (!b || !plasticity)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_set_plasticity: invalid body id");
    if (region < -1 || region >= b->num_regions)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_body_set_plasticity: body '%s' has no material region %d", b->name,
                          region);
    if (defo_plasticity_def_validate(plasticity))
        return defo_error_prefix("body '%s': plasticity", b->name);
    defo_status s = DEFO_OK;
    if (!b->plast) {
        /* the body's own elements never yield when only a region is given one */
        defo_plasticity_def base = defo_default_plasticity_def();
        s = defo_plasticity_create(region == -1 ? plasticity : &base, b->mesh->num_elems,
                                   defo_force_model_points(b->force), &b->plast);
        if (!s) s = defo_world_plastic_sets(b);
        if (!s) s = defo_plasticity_bind(b->plast, b->force);
        if (s) {
            defo_plasticity_destroy(b->plast);
            b->plast = NULL;
            defo_force_model_set_plastic(b->force, NULL);
            return defo_error_prefix("body '%s'", b->name);
        }
        b->sb.changed |= DEFO_CHANGED_MODEL;
        if (region == -1) return DEFO_OK;
    }
    int set = 0;
    if (region >= 0) {
        world_region *r = &b->regions[region];
        if (r->plast_set == 0) { /* the region's own set from now on */
            r->plast_set = 1 + defo_plasticity_num_sets(b->plast);
            s = defo_world_plastic_sets(b);
            if (s) return defo_error_prefix("body '%s'", b->name);
        }
        set = r->plast_set;
    }
    if (defo_plasticity_set_def(b->plast, set, plasticity))
        return defo_error_prefix("body '%s'", b->name);
    return DEFO_OK;
}

const defo_plasticity *defo_body_plasticity(const defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    return b ? b->plast : NULL;
}

defo_status defo_body_set_plastic_goal(defo_world *w, defo_body_id id, const double *goal_x,
                                       defo_index num_nodes) {
    world_body *b = get_body(w, id);
    if (!b)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_set_plastic_goal: invalid body id");
    if (!b->plast)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "body '%s': a goal shape needs plasticity (multiplicative)", b->name);
    if (goal_x && num_nodes != b->n)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "body '%s': the goal shape has %ld nodes, the body %ld", b->name,
                          (long)num_nodes, (long)b->n);
    for (size_t k = 0; goal_x && k < 3 * (size_t)num_nodes; k++)
        if (!isfinite(goal_x[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "body '%s': goal position of node %zu is not finite", b->name, k / 3);
    defo_status s = defo_plasticity_set_goal(b->plast, b->force, goal_x, num_nodes);
    if (s) return defo_error_prefix("body '%s'", b->name);
    return DEFO_OK;
}

defo_status defo_body_anneal(defo_world *w, defo_body_id id) {
    world_body *b = get_body(w, id);
    if (!b) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_anneal: invalid body id");
    const defo_index ne = b->mesh->num_elems;
    const size_t np = (size_t)ne * (size_t)defo_force_model_points(b->force);
    /* the new rest data must exist: the current shape as a mesh */
    defo_mesh *m = NULL;
    defo_element_rest *rest = NULL;
    double *F = defo_malloc(9 * np * sizeof(double) + 1);
    double *scale = defo_malloc((size_t)ne * sizeof(double) + 1);
    defo_status s =
        F && scale ? defo_mesh_clone(b->mesh, &m) : defo_error_oom("anneal", 9 * np * 8);
    if (!s) {
        memcpy(m->x, b->x, 3 * (size_t)b->n * sizeof(double));
        s = defo_element_rest_create(m, &rest);
        if (s) {
            char msg[512];
            snprintf(msg, sizeof msg, "%s", defo_last_error());
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "body '%s': cannot anneal: the current shape is no rest shape (%s)",
                           b->name, msg);
        }
    }
    if (!s) s = defo_force_model_deformation(b->force, b->x, 0, F);
    if (!s && !b->X0) { /* the prescribed motions' frame: the first rest shape */
        b->X0 = defo_malloc(3 * (size_t)b->cap * sizeof(double) + 1);
        if (!b->X0)
            s = defo_error_oom("anneal", 3 * (size_t)b->cap * sizeof(double));
        else
            memcpy(b->X0, b->mesh->x, 3 * (size_t)b->n * sizeof(double));
    }
    if (!s && b->plast) s = defo_plasticity_commit(b->plast, F);
    if (!s) {
        /* each element keeps its mass: ρ_e V_e stays */
        const double *v0 = defo_element_rest_volume(b->rest), *v1 = defo_element_rest_volume(rest);
        for (defo_index e = 0; e < ne; e++)
            scale[e] = (b->density_scale ? b->density_scale[e] : 1.0) * v0[e] / v1[e];
    }
    /* fibres (ITF04 §6.1) are material lines: carried to the new rest shape,
     * a ← F a / |F a| at each point (the first rest shape's kept) */
    if (!s && b->fibres && !b->fibres0) {
        b->fibres0 = defo_malloc(3 * np * sizeof(double) + 1);
        if (!b->fibres0)
            s = defo_error_oom("anneal", 3 * np * sizeof(double));
        else
            memcpy(b->fibres0, b->fibres, 3 * np * sizeof(double));
    }
    for (size_t pq = 0; !s && b->fibres && pq < np; pq++) {
        double *a = b->fibres + 3 * pq, c[3];
        const double *Fq = F + 9 * pq;
        for (int r = 0; r < 3; r++)
            c[r] = Fq[3 * r] * a[0] + Fq[3 * r + 1] * a[1] + Fq[3 * r + 2] * a[2];
        const double l = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
        if (l > 0)
            for (int r = 0; r < 3; r++) a[r] = c[r] / l;
    }
    defo_element_rest_destroy(rest);
    defo_mesh_destroy(m);
    defo_free(F);
    if (s) {
        defo_free(scale);
        return s;
    }
    defo_free(b->density_scale);
    b->density_scale = scale;
    memcpy(b->mesh->x, b->x, 3 * (size_t)b->n * sizeof(double));
    s = defo_world_body_rebuild(w, b, -1);
    b->mean_edge = defo_mesh_mean_edge(b->mesh);
    b->sb.changed |= DEFO_CHANGED_MODEL;
    if (!s) s = loads(b);
    return s;
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
    for (int i = 0; i < w->num_bodies; i++) {
        defo_status s = defo_world_contact_sources(w, &w->bodies[i]);
        if (s) return s;
    }
    return DEFO_OK;
}

/* ------------------------------------------------------------ stepping */
double defo_world_time(const defo_world *w) {
    return w->time;
}
int defo_world_frame(const defo_world *w) {
    return w->frame;
}
defo_status defo_world_set_time(defo_world *w, double time, int frame) {
    if (!w || !isfinite(time) || frame < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_set_time: time %g, frame %d", time,
                          frame);
    w->time = time;
    w->frame = frame;
    return DEFO_OK;
}
void defo_world_stats(const defo_world *w, defo_step_stats *out) {
    *out = w->stats;
}

int defo_world_steps_per_frame(const defo_world *w, int integ, double frame_dt) {
    if (!w || integ < 0 || integ >= w->num_integrators) return -1;
    world_integrator *wi = &w->integrators[integ];
    int count = 0;
    for (int i = 0; i < w->num_bodies; i++)
        if (defo_world_live(&w->bodies[i]) && w->bodies[i].integrator == integ)
            w->set[count++] = &w->bodies[i].sb;
    return wi->ops->steps(&wi->def, w->set, count, frame_dt);
}

/* The prescribed positions at time t into out (3 per node; only the
 * prescribed nodes' are written; motions move the first rest shape). */
static void targets_at(const world_body *b, double t, double *out) {
    const double *X = b->X0 ? b->X0 : b->mesh->x;
    for (int s = 0; s < b->num_sets; s++) {
        const world_set *st = &b->sets[s];
        defo_motion_pose pose;
        if (!st->explicit_transform) defo_motion_pose_at(&st->motion, t, &pose);
        for (defo_index i = 0; i < b->n; i++) {
            if (b->set_of[i] != s) continue;
            const double *Xi = X + 3 * (size_t)i;
            double *xi = out + 3 * (size_t)i;
            if (st->explicit_transform) {
                for (int k = 0; k < 3; k++)
                    xi[k] = st->R[3 * k] * Xi[0] + st->R[3 * k + 1] * Xi[1] +
                            st->R[3 * k + 2] * Xi[2] + st->T[k];
            } else {
                defo_motion_pose_map(&pose, Xi, xi, NULL);
            }
        }
    }
}

static void place_targets(world_body *b, double t) {
    targets_at(b, t, b->target);
}

/* defo_step_context.targets */
static void world_targets(void *ctx, const defo_step_body *sb, double t, double *out) {
    const defo_world *w = ctx;
    targets_at(&w->bodies[sb->index], t, out);
}

/* The stepper's loads (dead + gravity) and the scales of its residuals.
 * The reference force is the largest load on a free node — the loads
 * actually applied: a stiffness scale (2μ+λ)h² in it dwarfed the loads of
 * stiff bodies (E = 1e8 under its weight: ~3e5 N against ~0.5 N a node), so
 * a solve "converged" at the unloaded state.  (2μ+λ)h² is the reference only
 * when no load acts (motion prescribed, contact).  The residual floor is the
 * round-off of the elastic forces: a node's force is a sum of stresses
 * (2μ+λ)·strain times areas h², the strain made of position differences
 * whose round-off is ε·max|x|, so |f| cannot be resolved below ~ε (2μ+λ) h
 * max|x| (measured on a tet10 cantilever: 1.0–1.4 times that); no solve
 * aims below 16 times it.  The dead loads are the caller's writable array: a
 * non-finite entry is refused here, naming the node, before it can reach a
 * solver as a NaN. */
static defo_status loads(world_body *b) {
    const size_t m = 3 * (size_t)b->n;
    double fbig = 0, xbig = 0;
    for (size_t j = 0; j < m; j++) {
        if (!isfinite(b->dead[j]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "body '%s': external force of node %zu is not finite (%g)", b->name,
                              j / 3, b->dead[j]);
        b->load[j] = b->dead[j] + b->traction_load[j] + b->gravity_load[j];
    }
    for (defo_index i = 0; i < b->n; i++) {
        const double *f = b->load + 3 * (size_t)i;
        if (!b->prescribed[i] && !b->held[i])
            fbig = fmax(fbig, sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]));
    }
    for (size_t j = 0; j < m; j++) xbig = fmax(xbig, fmax(fabs(b->x[j]), fabs(b->mesh->x[j])));
    const double h = b->mean_edge, k = defo_material_stiffness_scale(b->mat),
                 t = b->mat_def.thickness;
    /* with no load: the force that strains an element by its size; a
     * shell's that bends a hinge by a radian, (2μ + λ) t³ / h ~ 12 D / h
     * (ITF04 §8) */
    const double scale = b->mesh->nodes_per_elem == 3 ? t * t * t / h : h * h;
    b->sb.reference_force = fbig > 0 ? fbig : k * scale;
    b->sb.loaded = fbig > 0;
    /* round-off of the elastic forces: a stress k·ε carried by an element's
     * cross-section (h², a shell's h·t) at strains resolved to ε max|x| / h */
    const double section = b->mesh->nodes_per_elem == 3 ? t : h;
    b->sb.residual_floor = 16 * DBL_EPSILON * k * section * xbig;
    return DEFO_OK;
}

defo_status defo_world_body_loads(world_body *b) {
    return loads(b);
}

static double now_seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void merge_stats(defo_step_stats *w, const defo_step_body_stats *b) {
    w->newton_iterations += b->newton_iterations;
    w->cg_iterations += b->cg_iterations;
    if (b->cg_max_iterations > w->cg_max_iterations) w->cg_max_iterations = b->cg_max_iterations;
    if (b->residual > w->residual) w->residual = b->residual;
    w->not_converged += b->not_converged;
    w->unresolved += b->unresolved;
    if (b->reason > w->reason) w->reason = b->reason;
    w->negative_curvature += b->negative_curvature;
    w->backtracks += b->backtracks;
    w->exact_iterations += b->exact_iterations;
    w->precond_setups += b->precond_setups;
    w->solver_recoveries += b->solver_recoveries;
    w->contact_sweeps += b->contact_sweeps;
    w->contacts_loaded += b->contacts_loaded;
    w->contacts_refound += b->contacts_refound;
}

/* One integrator's bodies through the frame [t0, t0 + T]. */
static defo_status step_integrator(defo_world *w, int integ, double t0, double T) {
    world_integrator *wi = &w->integrators[integ];
    int count = 0;
    for (int i = 0; i < w->num_bodies; i++)
        if (defo_world_live(&w->bodies[i]) && w->bodies[i].integrator == integ)
            w->set[count++] = &w->bodies[i].sb;
    if (!count) return DEFO_OK;
    const int k = wi->ops->steps(&wi->def, w->set, count, T);
    if (k < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "integrator %s: a frame of %g s needs more than 1e9 steps (stiffer or "
                          "finer bodies need smaller explicit steps: lower youngs, coarsen the "
                          "mesh or use an implicit integrator)",
                          wi->ops->name, T);
    const double dt = T / k;
    if (w->stats.dt == 0 || dt < w->stats.dt) w->stats.dt = dt;
    defo_step_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.dt = dt;
    ctx.ctx = w;
    ctx.targets = world_targets;
    if (w->num_colliders > 0) {
        ctx.respond = defo_world_respond;
        ctx.penalty = defo_world_penalty;
        ctx.probe = defo_world_probe;
    }
    if (defo_world_has_body_contact(w)) {
        ctx.contact_begin = defo_world_contact_begin;
        ctx.contact = defo_world_body_contact;
        ctx.contact_bound = defo_world_contact_bound;
        ctx.contact_respond = defo_world_contact_respond;
        ctx.body_points = defo_world_body_points;
    }
    defo_status worst = DEFO_OK;
    for (int j = 0; j < k; j++) {
        if (defo_interrupt_requested())
            return defo_error(DEFO_ERR_INTERRUPTED, "interrupted at t = %g s", t0 + T * j / k);
        ctx.t = t0 + T * ((double)j / k);
        const double t1 = t0 + T * ((double)(j + 1) / k);
        const int hybrid = wi->ops->kind == DEFO_INTEGRATOR_HYBRID;
        if (hybrid) {
            /* the last step's impacts break bodies into new ones (MMDJ01 §2.7) */
            defo_status s = defo_world_hybrid_impacts(w, integ, ctx.t);
            if (s) return s;
            count = 0;
            for (int i = 0; i < w->num_bodies; i++)
                if (defo_world_live(&w->bodies[i]) && w->bodies[i].integrator == integ)
                    w->set[count++] = &w->bodies[i].sb;
        }
        for (int i = 0; i < count; i++) {
            world_body *b = &w->bodies[w->set[i]->index];
            defo_status s = DEFO_OK;
            if (b->frac && !b->frac_paused && !hybrid) s = defo_world_fracture(w, b, ctx.t, dt);
            /* shells: each hinge's angle continues on the branch it has now */
            defo_force_model_track_hinges(b->force, b->x);
            if (!s && b->plast) {
                defo_plasticity_stats ps;
                s = defo_plasticity_update(b->plast, b->force, b->x, dt, &ps);
                if (s) defo_error_prefix("body '%s': plasticity", b->name);
                w->stats.yielding += (int)(ps.yielding + ps.bending_yielding);
                w->stats.unpatched += (int)ps.unpatched;
                /* the plastic parts moved: forces are another function of x */
                if (ps.yielding > 0 || ps.capped > 0 || ps.bending_yielding > 0)
                    b->sb.changed |= DEFO_CHANGED_MODEL;
            }
            if (s) return s;
            place_targets(b, t1);
            /* the fibre activation at the step's end, as the targets */
            if (defo_world_activation_update(b, t1)) b->sb.changed |= DEFO_CHANGED_MODEL;
            if (b->part) defo_world_part_sync(b);
            memset(&b->sb.stats, 0, sizeof b->sb.stats);
        }
        defo_status s = wi->ops->step(wi->stepper, w->set, count, &ctx);
        for (int i = 0; i < count; i++) w->set[i]->changed = 0;
        /* a hybrid step's impacts: counted in the step that analysed them,
         * their shape held for the frame's fields (they break bodies at the
         * next step's start) */
        for (int i = 0; i < count && s >= 0 && hybrid; i++)
            if (w->set[i]->impact) {
                w->stats.impacts++;
                s = defo_world_hold_impact(&w->bodies[w->set[i]->index]);
            }
        if (s < 0) return s;
        if (s > 0) worst = s;
        defo_index inv = 0;
        int extra = 0;
        for (int i = 0; i < count; i++) {
            merge_stats(&w->stats, &w->set[i]->stats);
            inv += defo_force_model_count_inverted(w->set[i]->force);
            if (w->set[i]->stats.extra_steps > extra) extra = w->set[i]->stats.extra_steps;
        }
        if (inv > w->stats.inverted_peak) w->stats.inverted_peak = inv;
        w->stats.steps += 1 + extra;
    }
    for (int i = 0; i < count; i++) w->stats.collisions += w->set[i]->stats.collisions;
    return worst;
}

/* The slices a frame is stepped in: the most steps of a rigid or hybrid
 * integrator when its bodies can touch a deformable body, else 1. */
static int rigid_slices(defo_world *w, double frame_dt) {
    if (!defo_world_has_body_contact(w)) return 1;
    int rigid = 0, deformable = 0;
    for (int i = 0; i < w->num_bodies; i++) {
        const world_body *b = &w->bodies[i];
        if (!defo_world_live(b) || !b->surface) continue;
        const defo_integrator_kind kind = w->integrators[b->integrator].ops->kind;
        if (kind == DEFO_INTEGRATOR_RIGID || kind == DEFO_INTEGRATOR_HYBRID)
            rigid = 1;
        else if (w->integrators[b->integrator].ops->dynamic)
            deformable = 1;
    }
    if (!rigid || !deformable) return 1;
    int most = 1;
    for (int g = 0; g < w->num_integrators; g++) {
        const defo_integrator_kind kind = w->integrators[g].ops->kind;
        if (kind != DEFO_INTEGRATOR_RIGID && kind != DEFO_INTEGRATOR_HYBRID) continue;
        const int k = defo_world_steps_per_frame(w, g, frame_dt);
        if (k > most) most = k;
    }
    return most;
}

defo_status defo_world_step(defo_world *w, double frame_dt) {
    if (!w || !(frame_dt > 0) || !isfinite(frame_dt))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_step: frame_dt %g is not > 0",
                          frame_dt);
    const double t_start = now_seconds();
    memset(&w->stats, 0, sizeof w->stats);
    defo_status s = defo_world_save_snapshot(w);
    if (s) return s;
    for (int i = 0; i < w->num_bodies; i++) {
        world_body *b = &w->bodies[i];
        if (!defo_world_live(b)) continue;
        world_integrator *wi = &w->integrators[b->integrator];
        /* lazily kept rotations (MTPS08 §4.4) and what is made from them
         * carry on: checkpoints hold them (plastic flow is flagged in the
         * step that makes it) */
        wi->ops->frame_start(wi->stepper, &b->sb);
        b->sb.changed = 0;
        b->impact_n = 0;
        s = loads(b);
        if (s) return s;
    }
    defo_status worst = DEFO_OK;
    /* rigid bodies meeting deformable ones exchange impulses in the rigid
     * stepper's solve (src/integrator/rigid.c): the dynamic integrators then
     * go through the frame together, slice by slice of the rigid steps, so
     * each sees the other at most one rigid step old (a frame's lag lets a
     * heavy block load a soft body's few surface nodes with a frame's weight
     * at once); the equilibrium integrators solve once, at the frame's end */
    const int slices = rigid_slices(w, frame_dt);
    const defo_index touching = w->stats.collisions;
    for (int k = 0; k < slices && s >= 0; k++) {
        const double t0 = w->time + frame_dt * ((double)k / slices);
        const double T = frame_dt * ((double)(k + 1) / slices) - frame_dt * ((double)k / slices);
        /* what the statistics say of contact is the frame's end */
        w->stats.collisions = touching;
        for (int integ = 0; integ < w->num_integrators && s >= 0; integ++) {
            const int dynamic = w->integrators[integ].ops->dynamic;
            if (slices > 1 && !dynamic && k < slices - 1) continue;
            s = slices > 1 && !dynamic ? step_integrator(w, integ, w->time, frame_dt)
                                       : step_integrator(w, integ, t0, T);
            if (s > 0) worst = s;
        }
    }
    if (s < 0) {
        defo_status keep = s;
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", defo_last_error());
        defo_world_restore_snapshot(w);
        return defo_error(keep, "%s", msg);
    }
    w->time += frame_dt;
    w->frame++;
    defo_index inv = 0;
    for (int i = 0; i < w->num_bodies; i++) {
        if (!defo_world_live(&w->bodies[i])) continue;
        defo_index c = 0;
        defo_body_id id = defo_world_body(w, i);
        if (defo_body_count_inverted(w, id, &c) == DEFO_OK) inv += c;
    }
    w->stats.inverted = inv;
    if (inv > w->stats.inverted_peak) w->stats.inverted_peak = inv;
    w->stats.seconds = now_seconds() - t_start;
    return worst;
}
