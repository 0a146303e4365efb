/*
 * scene/simulation.c — a world built from a scene, stepped one output frame
 * at a time, with state checkpoints for resuming.
 *
 * Integrators: ITF04 §9 Newmark (defo_world_step) for invertible bodies, or
 * MG04 §6 implicit Euler (defo/backward_euler.h, one stepper per corotated
 * body) followed by the ITF04 §9 node collision step; the world then holds
 * the state for outputs and checkpoints either way.  TSIF05 quasistatics
 * (defo/quasistatic.h): each frame is the equilibrium at the frame's time
 * (fixed sets are bones at rest, colliders penalty contact sources), with
 * v = Δx / frame time stored for the outputs.
 *
 * Build: each body's tet mesh comes from a file (defo_mesh_read, elements
 * reoriented), a generator, or a closed surface through the mesher
 * (defo_mesh_surface, ITF04 §10); its rest positions are transformed
 * x' = R (S x) + t; fixed node sets are selected on the transformed rest
 * positions; the initial velocity is v + ω × (x − c) with c the body's centre
 * of mass.
 *
 * Determinism and resume: a frame is defo_world_step(1/fps) after the
 * material changes scheduled at or before the frame's start time.  The state
 * that carries from one frame to the next is exactly (time, x, v) per body —
 * the elastic forces and rotations are recomputed from x by the same code in
 * the same order (defo_body_set_state), so restoring a checkpoint continues
 * bit for bit.  The checkpoint stores the doubles' bytes (no text rounding).
 *
 * Checkpoint layout (native little-endian doubles, as written by this
 * machine):
 *   "DEFOCKPT" | u32 version (1) | u32 num_bodies | u64 scene hash |
 *   i32 frame | i32 0 | f64 time | per body: i32 n, i32 0, f64 x[3n], f64 v[3n] |
 *   per body with plasticity (MG04 §3): f64 ε_plastic[6 · elements] |
 *   u64 FNV-1a 64 of every byte before it.
 */
#define _POSIX_C_SOURCE 200809L

#include "scene/scene_internal.h"

#include "defo/backward_euler.h"
#include "defo/contact.h"
#include "defo/embed.h"
#include "defo/io.h"
#include "defo/plasticity.h"
#include "defo/quasistatic.h"
#include "defo/solver.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

struct defo_simulation {
    const defo_scene *scene;
    defo_world *world;
    defo_collider **colliders;
    int num_colliders;
    defo_body_id *ids;
    int *applied;                /* per body: scheduled changes applied so far */
    defo_material_def *material; /* per body: current material */
    int num_bodies;
    int frame;
    /* integrator backward_euler (MG04 §6): one stepper per body; the world
     * keeps the state (outputs, checkpoints, energies) and is updated after
     * every frame */
    defo_backward_euler **be;
    unsigned char **collided; /* per body, scratch for defo_collide_nodes */
    unsigned char **fixed;    /* per body: nodes of the fixed sets */
    int be_steps;             /* steps per frame */
    /* MG04 §3 plasticity per corotated body (NULL without "plasticity");
     * plast_saved: ε_plastic at the start of the frame, restored when the
     * frame fails */
    defo_plasticity **plast;
    double **plast_saved;
    /* integrator quasistatic (TSIF05): one Newton solver per body, each
     * frame an equilibrium at the frame's time; v = Δx / frame time */
    defo_quasistatic **qs;
    defo_material **qs_mat; /* borrowed by the solvers */
    double *scratch;        /* 3 × largest body */
    int newton;             /* Newton iterations of the last frame */
    defo_step_stats stats;
    /* "embedded" (MG04 §5.1): per body the surface (rest, transformed like
     * the body) bound to the body's tet mesh, NULL without one */
    defo_embed **embed;
    defo_mesh **embed_surf;
};

void defo_simulation_destroy(defo_simulation *sim) {
    if (!sim) return;
    for (int i = 0; sim->plast && i < sim->num_bodies; i++) {
        defo_plasticity_destroy(sim->plast[i]);
        defo_free(sim->plast_saved[i]);
    }
    defo_free(sim->plast);
    defo_free(sim->plast_saved);
    for (int i = 0; sim->be && i < sim->num_bodies; i++) {
        defo_backward_euler_destroy(sim->be[i]);
        defo_free(sim->collided[i]);
    }
    for (int i = 0; sim->qs && i < sim->num_bodies; i++) {
        defo_quasistatic_destroy(sim->qs[i]);
        defo_material_destroy(sim->qs_mat[i]);
    }
    defo_free(sim->qs);
    defo_free(sim->qs_mat);
    defo_free(sim->scratch);
    for (int i = 0; sim->fixed && i < sim->num_bodies; i++) defo_free(sim->fixed[i]);
    defo_free(sim->fixed);
    defo_free(sim->be);
    defo_free(sim->collided);
    defo_world_destroy(sim->world);
    for (int i = 0; i < sim->num_colliders; i++) defo_collider_destroy(sim->colliders[i]);
    defo_free(sim->colliders);
    defo_free(sim->ids);
    defo_free(sim->applied);
    defo_free(sim->material);
    for (int i = 0; sim->embed && i < sim->num_bodies; i++) {
        defo_embed_destroy(sim->embed[i]);
        defo_mesh_destroy(sim->embed_surf[i]);
    }
    defo_free(sim->embed);
    defo_free(sim->embed_surf);
    defo_free(sim);
}

static defo_status body_mesh(const scene_body *b, defo_mesh **out) {
    *out = NULL;
    defo_status s = DEFO_OK;
    switch (b->source) {
    case SRC_FILE: {
        defo_read_options ro = defo_default_read_options();
        ro.reorient = DEFO_ORIENT_REPAIR;
        s = defo_mesh_read(b->file, &ro, out);
        if (s > 0) s = DEFO_OK; /* reoriented: fine for a simulation */
        if (!s && (*out)->order != 1) {
            int order = (*out)->order;
            defo_mesh_destroy(*out);
            *out = NULL;
            return defo_error(DEFO_ERR_UNSUPPORTED,
                              "'%s' is not a tet4 volume mesh (order %d; defo run needs tet4)",
                              b->file, order);
        }
        break;
    }
    case SRC_GENERATOR:
        switch (b->generator) {
        case GEN_BOX:
            s = defo_generate_box(&b->box, out);
            break;
        case GEN_SPHERE:
            s = defo_generate_sphere(&b->sphere, out);
            break;
        case GEN_CYLINDER:
            s = defo_generate_cylinder(&b->cylinder, out);
            break;
        case GEN_TORUS:
            s = defo_generate_torus(&b->torus, out);
            break;
        }
        break;
    case SRC_SURFACE: {
        defo_mesh *surf = NULL;
        s = defo_mesh_read(b->file, NULL, &surf);
        if (s < 0) return s;
        if (surf->num_tris == 0) {
            defo_mesh_destroy(surf);
            return defo_error(DEFO_ERR_INVALID_MESH, "'%s' has no triangles", b->file);
        }
        s = defo_mesh_surface(surf, &b->mesher, out, NULL);
        defo_mesh_destroy(surf);
        break;
    }
    }
    return s < 0 ? s : DEFO_OK;
}

static void transform_nodes(const scene_body *b, defo_mesh *m) {
    const double *R = b->rotation;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        double *x = m->x + 3 * (size_t)i;
        double p[3] = {x[0] * b->scale[0], x[1] * b->scale[1], x[2] * b->scale[2]};
        for (int k = 0; k < 3; k++)
            x[k] = R[3 * k] * p[0] + R[3 * k + 1] * p[1] + R[3 * k + 2] * p[2] + b->translate[k];
    }
    /* a mirroring scale would flip every element: keep them positive */
    if (b->scale[0] * b->scale[1] * b->scale[2] < 0) defo_mesh_orient(m, NULL);
}

/* The embedded surface of body b (index i): read, transformed like the body
 * (triangles flipped by a mirroring scale), bound to the world's tet mesh. */
static defo_status add_embedded(defo_simulation *sim, const scene_body *b, int i) {
    defo_mesh *surf = NULL;
    defo_status s = defo_mesh_read(b->embedded_file, NULL, &surf);
    if (s < 0) return s;
    if (surf->num_tris == 0 || surf->nodes_per_tri != 3) {
        defo_mesh_destroy(surf);
        return defo_error(DEFO_ERR_INVALID_MESH, "embedded: '%s' has no 3-node triangles",
                          b->embedded_file);
    }
    const double *R = b->rotation;
    for (defo_index k = 0; k < surf->num_nodes; k++) {
        double *x = surf->x + 3 * (size_t)k;
        double p[3] = {x[0] * b->scale[0], x[1] * b->scale[1], x[2] * b->scale[2]};
        for (int a = 0; a < 3; a++)
            x[a] = R[3 * a] * p[0] + R[3 * a + 1] * p[1] + R[3 * a + 2] * p[2] + b->translate[a];
    }
    if (b->scale[0] * b->scale[1] * b->scale[2] < 0)
        for (defo_index t = 0; t < surf->num_tris; t++) {
            defo_index *tri = surf->tris + 3 * (size_t)t, tmp = tri[1];
            tri[1] = tri[2];
            tri[2] = tmp;
        }
    s = defo_embed_create(defo_body_mesh(sim->world, sim->ids[i]), surf, &sim->embed[i]);
    if (s < 0) {
        defo_mesh_destroy(surf);
        return defo_error_prefix("embedded '%s'", b->embedded_file);
    }
    sim->embed_surf[i] = surf;
    return DEFO_OK;
}

/* Nodes of fixed set f (elements with the tag for FIX_TAG). */
static defo_index select_fixed(const scene_fix *f, const defo_mesh *m, unsigned char *sel) {
    defo_index count = 0;
    memset(sel, 0, (size_t)m->num_nodes);
    if (f->kind == FIX_TAG) {
        if (!m->elem_tag) return 0;
        for (defo_index e = 0; e < m->num_elems; e++)
            if (m->elem_tag[e] == f->tag)
                for (int k = 0; k < m->nodes_per_elem; k++)
                    sel[m->elems[(size_t)e * (size_t)m->nodes_per_elem + (size_t)k]] = 1;
        for (defo_index i = 0; i < m->num_nodes; i++) count += sel[i];
        return count;
    }
    /* Region tests get a tolerance of 1e-9 of the mesh size, so a box face
     * placed exactly on a layer of nodes selects it despite rounding. */
    double lo[3], hi[3];
    defo_mesh_bbox(m, lo, hi);
    double diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                       (hi[2] - lo[2]) * (hi[2] - lo[2]));
    double tol = 1e-9 * diag;
    for (defo_index i = 0; i < m->num_nodes; i++) {
        const double *x = m->x + 3 * (size_t)i;
        int in = 0;
        if (f->kind == FIX_BOX) {
            in = 1;
            for (int k = 0; k < 3; k++) in = in && x[k] >= f->a[k] - tol && x[k] <= f->b[k] + tol;
        } else if (f->kind == FIX_SPHERE) {
            double d2 = 0;
            for (int k = 0; k < 3; k++) d2 += (x[k] - f->a[k]) * (x[k] - f->a[k]);
            in = sqrt(d2) <= f->radius + tol;
        } else {
            double d = 0;
            for (int k = 0; k < 3; k++) d += (x[k] - f->a[k]) * f->b[k];
            in = d <= tol;
        }
        sel[i] = (unsigned char)in;
        count += in;
    }
    return count;
}

static defo_status add_body(defo_simulation *sim, const scene_body *b, int index) {
    defo_mesh *m = NULL;
    defo_status s = body_mesh(b, &m);
    if (s < 0) return defo_error_prefix("bodies[%d] '%s'", index, b->name);
    transform_nodes(b, m);
    defo_body_def bd = defo_default_body_def();
    bd.mesh = m;
    bd.material = b->material;
    bd.name = b->name;
    for (int k = 0; k < 3; k++) bd.velocity[k] = b->velocity[k];
    s = defo_world_add_body(sim->world, &bd, &sim->ids[index]);
    if (s < 0) {
        defo_mesh_destroy(m);
        return defo_error_prefix("bodies[%d]", index);
    }
    defo_body_id id = sim->ids[index];
    defo_index n = m->num_nodes;
    unsigned char *sel = defo_malloc((size_t)n ? (size_t)n : 1);
    double *v = defo_malloc(3 * (size_t)n * sizeof(double));
    if (!sel || !v) {
        defo_free(sel);
        defo_free(v);
        defo_mesh_destroy(m);
        return defo_error_oom("body", 3 * (size_t)n * sizeof(double));
    }
    for (int f = 0; f < b->num_fixed && !s; f++) {
        defo_index count = select_fixed(&b->fixed[f], m, sel);
        if (!count) {
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "bodies[%d].fixed[%d]: selects no node of body '%s'", index, f, b->name);
            break;
        }
        for (defo_index i = 0; i < n && !s; i++)
            if (sel[i]) {
                s = defo_body_fix_node(sim->world, id, i, 1);
                if (!sim->fixed[index]) sim->fixed[index] = defo_calloc((size_t)n, 1);
                if (!sim->fixed[index]) s = defo_error_oom("fixed nodes", (size_t)n);
                if (!s) sim->fixed[index][i] = 1;
            }
    }
    double w2 = b->angular_velocity[0] * b->angular_velocity[0] +
                b->angular_velocity[1] * b->angular_velocity[1] +
                b->angular_velocity[2] * b->angular_velocity[2];
    if (!s && w2 > 0) {
        const double *mass = defo_body_masses(sim->world, id);
        const double *x = defo_body_positions(sim->world, id);
        double c[3] = {0, 0, 0}, mt = 0;
        for (defo_index i = 0; i < n; i++) {
            mt += mass[i];
            for (int k = 0; k < 3; k++) c[k] += mass[i] * x[3 * (size_t)i + k];
        }
        for (int k = 0; k < 3; k++) c[k] /= mt;
        const double *w = b->angular_velocity;
        for (defo_index i = 0; i < n; i++) {
            const double *p = x + 3 * (size_t)i;
            double r[3] = {p[0] - c[0], p[1] - c[1], p[2] - c[2]};
            double *q = v + 3 * (size_t)i;
            q[0] = b->velocity[0] + w[1] * r[2] - w[2] * r[1];
            q[1] = b->velocity[1] + w[2] * r[0] - w[0] * r[2];
            q[2] = b->velocity[2] + w[0] * r[1] - w[1] * r[0];
        }
        s = defo_body_set_state(sim->world, id, NULL, v);
    }
    defo_free(sel);
    defo_free(v);
    defo_mesh_destroy(m);
    if (!s && b->has_embedded) {
        s = add_embedded(sim, b, index);
        if (s < 0) return defo_error_prefix("bodies[%d] '%s'", index, b->name);
    }
    return s;
}

/* Copy the world's state of body i into its stepper (after building and
 * after restoring a checkpoint). */
static void state_to_stepper(defo_simulation *sim, int i) {
    defo_world *w = sim->world;
    defo_body_id id = sim->ids[i];
    size_t bytes = 3 * (size_t)defo_body_num_nodes(w, id) * sizeof(double);
    memcpy(defo_backward_euler_positions(sim->be[i]), defo_body_positions(w, id), bytes);
    memcpy(defo_backward_euler_velocities(sim->be[i]), defo_body_velocities(w, id), bytes);
}

static defo_status create_steppers(defo_simulation *sim) {
    const defo_scene *scene = sim->scene;
    sim->be = defo_calloc((size_t)sim->num_bodies, sizeof *sim->be);
    sim->collided = defo_calloc((size_t)sim->num_bodies, sizeof *sim->collided);
    sim->plast = defo_calloc((size_t)sim->num_bodies, sizeof *sim->plast);
    sim->plast_saved = defo_calloc((size_t)sim->num_bodies, sizeof *sim->plast_saved);
    if (!sim->be || !sim->collided || !sim->plast || !sim->plast_saved)
        return defo_error_oom("steppers", 0);
    for (int i = 0; i < sim->num_bodies; i++) {
        defo_body_id id = sim->ids[i];
        /* the world's copy of the mesh lives as long as the simulation */
        const defo_mesh *m = defo_body_mesh(sim->world, id);
        defo_backward_euler_def d = scene->backward_euler;
        memcpy(d.gravity, scene->world.gravity, sizeof d.gravity);
        /* frames are cut into equal steps no longer than time_step */
        double frame_dt = 1.0 / scene->fps, k = ceil(frame_dt / d.time_step * (1.0 - 1e-12));
        if (k < 1) k = 1;
        if (k > 1e7)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "integrator.time_step: %g s needs %.3g steps per frame",
                              scene->backward_euler.time_step, k);
        d.time_step = frame_dt / k;
        sim->be_steps = (int)k;
        defo_status s = defo_backward_euler_create(m, &sim->material[i], &d, &sim->be[i]);
        if (s < 0)
            return defo_error_prefix("bodies[%d] '%s' (backward_euler)", i,
                                     defo_body_name(sim->world, id));
        const scene_body *b = &scene->bodies[i];
        if (b->has_plasticity) {
            /* MG04 §3: c_creep·Δt ≤ 1 (1/Δt absorbs the excess at once) */
            if (b->plasticity.creep * d.time_step > 1)
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "bodies[%d].plasticity.creep: %g /s times the step %g s "
                                  "exceeds 1 (lower creep or integrator.time_step)",
                                  i, b->plasticity.creep, d.time_step);
            s = defo_plasticity_create(m, defo_backward_euler_force_model(sim->be[i]),
                                       &b->plasticity, &sim->plast[i]);
            if (s < 0) return defo_error_prefix("bodies[%d].plasticity", i);
            sim->plast_saved[i] = defo_malloc(6 * (size_t)m->num_elems * sizeof(double) + 1);
            if (!sim->plast_saved[i]) return defo_error_oom("plastic strain", (size_t)m->num_elems);
        }
        sim->collided[i] = defo_calloc((size_t)m->num_nodes + 1, 1);
        if (!sim->collided[i]) return defo_error_oom("collision flags", (size_t)m->num_nodes);
        /* the world's fixed nodes: velocity 0 in the world state */
        unsigned char *cons = defo_backward_euler_constraints(sim->be[i]);
        for (defo_index n = 0; n < m->num_nodes; n++)
            cons[n] = sim->fixed && sim->fixed[i] && sim->fixed[i][n] ? DEFO_CONSTRAINT_FIXED
                                                                      : DEFO_CONSTRAINT_NONE;
        state_to_stepper(sim, i);
    }
    return DEFO_OK;
}

/* The fixed sets of body b as quasistatic bones (TSIF05 §11), selected on
 * the solver's rest mesh m. */
static defo_status add_bones(defo_quasistatic *qs, const scene_body *b, const defo_mesh *m) {
    size_t n = (size_t)m->num_nodes;
    unsigned char *sel = defo_malloc(n + 1);
    defo_index *nodes = defo_malloc((n + 1) * sizeof *nodes);
    defo_status s = DEFO_OK;
    if (!sel || !nodes) s = defo_error_oom("bone nodes", n);
    for (int f = 0; f < b->num_fixed && !s; f++) {
        defo_index count = select_fixed(&b->fixed[f], m, sel);
        if (!count) break; /* reported by add_body */
        count = 0;
        for (size_t k = 0; k < n; k++)
            if (sel[k]) nodes[count++] = (defo_index)k;
        s = defo_quasistatic_add_bone_nodes(
            qs, nodes, count, b->fixed[f].has_motion ? &b->fixed[f].motion : NULL, NULL);
        if (s < 0) defo_error_prefix("fixed[%d]", f);
    }
    defo_free(sel);
    defo_free(nodes);
    return s;
}

/* A load region as a defo_region, widened by the same 1e-9-of-the-size
 * tolerance as the fixed sets. */
static defo_region load_region(const scene_fix *f, const defo_mesh *m) {
    double lo[3], hi[3];
    defo_mesh_bbox(m, lo, hi);
    double tol = 1e-9 * sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                             (hi[2] - lo[2]) * (hi[2] - lo[2]));
    if (f->kind == FIX_TAG) return defo_region_tag(f->tag);
    if (f->kind == FIX_SPHERE) return defo_region_sphere(f->a, f->radius + tol);
    double a[3], c[3];
    for (int k = 0; k < 3; k++) {
        a[k] = f->a[k] - tol;
        c[k] = f->b[k] + tol;
    }
    return defo_region_box(a, c);
}

/* "forces" (per node) and "tractions" (on the boundary faces in the region)
 * as quasistatic dead loads; a region that loads nothing is an error. */
static defo_status add_loads(defo_quasistatic *qs, const scene_body *b, const defo_mesh *m) {
    for (int f = 0; f < b->num_forces; f++) {
        defo_region r = load_region(&b->forces[f].region, m);
        defo_index *nodes = NULL, count = 0;
        defo_status s = defo_region_nodes(m, &r, &nodes, &count);
        defo_region_nodes_free(nodes);
        if (!s && !count)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "forces[%d]: selects no node", f);
        if (!s) s = defo_quasistatic_add_node_force(qs, &r, b->forces[f].value);
        if (s < 0) return defo_error_prefix("forces[%d]", f);
    }
    for (int f = 0; f < b->num_tractions; f++) {
        defo_region r = load_region(&b->tractions[f].region, m);
        double area = 0;
        defo_status s = defo_quasistatic_add_traction(qs, &r, b->tractions[f].value, &area);
        if (s < 0) return defo_error_prefix("tractions[%d]", f);
        if (!(area > 0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "tractions[%d]: selects no boundary face",
                              f);
    }
    return DEFO_OK;
}

static defo_status create_solvers(defo_simulation *sim) {
    const defo_scene *scene = sim->scene;
    int nb = sim->num_bodies;
    sim->qs = defo_calloc((size_t)nb, sizeof *sim->qs);
    sim->qs_mat = defo_calloc((size_t)nb, sizeof *sim->qs_mat);
    if (!sim->qs || !sim->qs_mat) return defo_error_oom("solvers", 0);
    defo_index most = 0;
    for (int i = 0; i < nb; i++) {
        defo_body_id id = sim->ids[i];
        const defo_mesh *m = defo_body_mesh(sim->world, id);
        if (m->num_nodes > most) most = m->num_nodes;
        defo_quasistatic_def d = scene->quasistatic;
        memcpy(d.gravity, scene->world.gravity, sizeof d.gravity);
        defo_status s = defo_material_create(&sim->material[i], &sim->qs_mat[i]);
        if (!s) s = defo_quasistatic_create(m, sim->qs_mat[i], &d, &sim->qs[i]);
        /* fixed sets are bones, in scene order (a node in several sets
         * follows the last): held at rest, or moved by their "motion" */
        const scene_body *b = &scene->bodies[i];
        if (!s) s = add_bones(sim->qs[i], b, m);
        if (!s) s = add_loads(sim->qs[i], b, m);
        /* colliders are TSIF05 §10 penalty contact sources */
        double k = scene->contact_stiffness > 0 || !sim->qs[i]
                       ? scene->contact_stiffness
                       : defo_quasistatic_default_penalty(sim->qs[i]);
        for (int c = 0; !s && c < sim->num_colliders; c++) {
            defo_contact_source src = defo_contact_from_collider(sim->colliders[c], k);
            s = defo_quasistatic_add_contact(sim->qs[i], &src);
        }
        if (s < 0)
            return defo_error_prefix("bodies[%d] '%s' (quasistatic)", i,
                                     defo_body_name(sim->world, id));
    }
    sim->scratch = defo_malloc(3 * (size_t)most * sizeof(double) + 1);
    if (!sim->scratch) return defo_error_oom("scratch", 3 * (size_t)most * sizeof(double));
    return DEFO_OK;
}

defo_status defo_simulation_create(const defo_scene *scene, defo_simulation **out) {
    if (!scene || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_simulation_create: NULL argument");
    *out = NULL;
    defo_simulation *sim = defo_calloc(1, sizeof *sim);
    if (!sim) return defo_error_oom("simulation", sizeof *sim);
    sim->scene = scene;
    int nb = scene->num_bodies, nc = scene->num_colliders;
    sim->ids = defo_calloc((size_t)nb + 1, sizeof *sim->ids);
    sim->applied = defo_calloc((size_t)nb + 1, sizeof *sim->applied);
    sim->material = defo_calloc((size_t)nb + 1, sizeof *sim->material);
    sim->colliders = defo_calloc((size_t)nc + 1, sizeof *sim->colliders);
    sim->fixed = defo_calloc((size_t)nb + 1, sizeof *sim->fixed);
    sim->embed = defo_calloc((size_t)nb + 1, sizeof *sim->embed);
    sim->embed_surf = defo_calloc((size_t)nb + 1, sizeof *sim->embed_surf);
    if (!sim->ids || !sim->applied || !sim->material || !sim->colliders || !sim->fixed ||
        !sim->embed || !sim->embed_surf) {
        defo_simulation_destroy(sim);
        return defo_error_oom("simulation", (size_t)nb * sizeof *sim->material);
    }
    defo_status s = defo_world_create(&scene->world, &sim->world);
    for (int i = 0; i < nc && !s; i++) {
        s = defo_collider_create(&scene->colliders[i].def, &sim->colliders[i]);
        if (s) {
            defo_error_prefix("colliders[%d]", i);
            break;
        }
        sim->num_colliders++;
        s = defo_world_add_collider(sim->world, sim->colliders[i]);
    }
    for (int i = 0; i < nb && !s; i++) {
        sim->material[i] = scene->bodies[i].material;
        s = add_body(sim, &scene->bodies[i], i);
        sim->num_bodies = i + 1;
    }
    if (!s && scene->integrator == INTEGRATOR_BACKWARD_EULER) s = create_steppers(sim);
    if (!s && scene->integrator == INTEGRATOR_QUASISTATIC) s = create_solvers(sim);
    if (!s && scene->integrator == INTEGRATOR_NEWMARK) {
        /* refuse now what defo_world_step would refuse at the first frame */
        double k = (1.0 / scene->fps) / defo_world_stable_dt(sim->world);
        if (!(k <= 1e7))
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "integrator: a frame needs %.3g substeps of %.3g s (explicit "
                           "elasticity: stiffer or finer bodies need smaller steps); lower "
                           "youngs, coarsen the mesh or raise fps",
                           k, defo_world_stable_dt(sim->world));
    }
    if (s < 0) {
        defo_simulation_destroy(sim);
        return s;
    }
    *out = sim;
    return DEFO_OK;
}

defo_world *defo_simulation_world(defo_simulation *sim) {
    return sim->world;
}
int defo_simulation_num_bodies(const defo_simulation *sim) {
    return sim->num_bodies;
}
defo_body_id defo_simulation_body(const defo_simulation *sim, int i) {
    defo_body_id none = {-1, 0};
    return i >= 0 && i < sim->num_bodies ? sim->ids[i] : none;
}
const defo_material_def *defo_simulation_body_material(const defo_simulation *sim, int i) {
    return i >= 0 && i < sim->num_bodies ? &sim->material[i] : NULL;
}
const defo_mesh *defo_simulation_embedded_surface(const defo_simulation *sim, int i) {
    return i >= 0 && i < sim->num_bodies && sim->embed_surf ? sim->embed_surf[i] : NULL;
}
defo_status defo_simulation_embedded_positions(const defo_simulation *sim, int i,
                                               double *positions) {
    if (i < 0 || i >= sim->num_bodies || !sim->embed || !sim->embed[i] || !positions)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_simulation_embedded_positions: body %d has no embedded surface", i);
    return defo_embed_update(sim->embed[i], defo_body_positions(sim->world, sim->ids[i]), NULL,
                             positions, NULL);
}
int defo_simulation_frame(const defo_simulation *sim) {
    return sim->frame;
}

/* Apply the scheduled changes with time <= t (a tolerance of 1e-9 frame so a
 * change at a frame time is applied at that frame whatever the rounding of
 * the accumulated time). */
static defo_status apply_changes(defo_simulation *sim, double t) {
    double eps = 1e-9 / sim->scene->fps;
    for (int i = 0; i < sim->num_bodies; i++) {
        const scene_body *b = &sim->scene->bodies[i];
        int k = sim->applied[i];
        int last = -1;
        while (k < b->num_changes && b->changes[k].time <= t + eps) last = k++;
        if (last < 0) continue;
        defo_status s = defo_body_set_material(sim->world, sim->ids[i], &b->changes[last].material);
        if (s < 0) return defo_error_prefix("bodies[%d].material_changes[%d]", i, last);
        sim->applied[i] = k;
        sim->material[i] = b->changes[last].material;
    }
    return DEFO_OK;
}

/* Bytes of body i's plastic strain (6 per element). */
static size_t plastic_bytes(const defo_simulation *sim, int i) {
    return 6 * (size_t)defo_body_mesh(sim->world, sim->ids[i])->num_elems * sizeof(double);
}

defo_status defo_simulation_plastic_strain(defo_simulation *sim, int i, double *out) {
    if (!sim || !out || i < 0 || i >= sim->num_bodies)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_simulation_plastic_strain: bad argument");
    defo_index ne = defo_body_mesh(sim->world, sim->ids[i])->num_elems;
    const double *eps = sim->plast && sim->plast[i] ? defo_plasticity_strain(sim->plast[i]) : NULL;
    for (defo_index e = 0; e < ne; e++) {
        double n2 = 0;
        for (int k = 0; eps && k < 6; k++) n2 += eps[6 * (size_t)e + k] * eps[6 * (size_t)e + k];
        out[e] = sqrt(n2);
    }
    return DEFO_OK;
}

/* MG04 §6 implicit Euler steps for every body, then ITF04 §9 node
 * collisions (projection, normal velocity, friction) after each step; the
 * world receives the state at the end of the frame.  On failure every
 * stepper goes back to the world's state: the frame is not taken. */
static defo_status step_backward_euler(defo_simulation *sim, double frame_dt) {
    defo_world *w = sim->world;
    double t0 = defo_world_time(w), k = sim->be_steps, dt = frame_dt / k;
    defo_step_stats *st = &sim->stats;
    memset(st, 0, sizeof *st);
    st->dt = dt;
    defo_status worst = DEFO_OK, s = DEFO_OK;
    for (int i = 0; i < sim->num_bodies; i++)
        if (sim->plast[i])
            memcpy(sim->plast_saved[i], defo_plasticity_strain(sim->plast[i]),
                   plastic_bytes(sim, i));
    for (int j = 0; j < sim->be_steps && !s; j++) {
        double t1 = t0 + frame_dt * ((double)(j + 1) / k);
        for (int i = 0; i < sim->num_bodies && !s; i++) {
            defo_backward_euler_stats bs;
            /* MG04 §3: plastic flow with this step's rotations, then the step */
            if (sim->plast[i]) s = defo_plasticity_step(sim->plast[i], sim->be[i], dt, NULL);
            if (!s) s = defo_backward_euler_step(sim->be[i], &bs);
            if (s < 0) {
                defo_error_prefix("body '%s' at t = %g s", defo_body_name(w, sim->ids[i]), t1);
                break;
            }
            if (s > 0) {
                worst = s;
                st->cg_not_converged++;
                s = DEFO_OK;
            }
            st->cg_iterations += bs.cg_iterations;
            if (bs.cg_iterations > st->cg_max_iterations) st->cg_max_iterations = bs.cg_iterations;
            if (bs.cg_residual > st->cg_residual) st->cg_residual = bs.cg_residual;
            defo_index n = defo_body_num_nodes(w, sim->ids[i]), hits = 0;
            s = defo_collide_nodes(sim->colliders, sim->num_colliders, t1, dt, n,
                                   defo_backward_euler_positions(sim->be[i]),
                                   defo_backward_euler_velocities(sim->be[i]), sim->collided[i],
                                   NULL, &hits);
            st->collisions += hits;
        }
        st->substeps = j + 1;
    }
    for (int i = 0; i < sim->num_bodies && !s; i++)
        s = defo_body_set_state(w, sim->ids[i], defo_backward_euler_positions(sim->be[i]),
                                defo_backward_euler_velocities(sim->be[i]));
    if (s < 0) {
        for (int i = 0; i < sim->num_bodies; i++) {
            state_to_stepper(sim, i);
            if (sim->plast[i])
                memcpy(defo_plasticity_strain(sim->plast[i]), sim->plast_saved[i],
                       plastic_bytes(sim, i));
        }
        return s;
    }
    defo_world_set_time(w, t0 + frame_dt);
    for (int i = 0; i < sim->num_bodies; i++) {
        defo_index inv = 0;
        defo_body_count_inverted(w, sim->ids[i], &inv);
        st->inverted += inv;
    }
    st->inverted_peak = st->inverted;
    return worst;
}

/* TSIF05: each body's equilibrium at the end of the frame, starting from
 * the previous one; the world receives x and v = Δx / frame time.  On
 * failure the world is unchanged. */
static defo_status step_quasistatic(defo_simulation *sim, double frame_dt) {
    defo_world *w = sim->world;
    double t1 = defo_world_time(w) + frame_dt;
    defo_step_stats *st = &sim->stats;
    memset(st, 0, sizeof *st);
    st->substeps = 1;
    st->dt = frame_dt;
    sim->newton = 0;
    defo_status worst = DEFO_OK;
    int nb = sim->num_bodies;
    /* solve every body first (into its own copy), commit only when all did */
    double **xs = defo_calloc((size_t)nb, sizeof *xs);
    if (!xs) return defo_error_oom("frame", 0);
    defo_status s = DEFO_OK;
    for (int i = 0; i < nb && !s; i++) {
        defo_body_id id = sim->ids[i];
        size_t m = 3 * (size_t)defo_body_num_nodes(w, id);
        xs[i] = defo_malloc(m * sizeof(double) + 1);
        if (!xs[i]) {
            s = defo_error_oom("frame", m * sizeof(double));
            break;
        }
        memcpy(xs[i], defo_body_positions(w, id), m * sizeof(double));
        defo_quasistatic_stats qs;
        memset(&qs, 0, sizeof qs);
        s = defo_quasistatic_solve(sim->qs[i], t1, xs[i], &qs);
        sim->newton += qs.newton_iterations;
        st->cg_iterations += qs.cg_iterations;
        if (qs.cg_iterations > st->cg_max_iterations) st->cg_max_iterations = qs.cg_iterations;
        /* residual relative to the solver's reference force */
        double rel = qs.reference_force > 0 ? qs.residual / qs.reference_force : qs.residual;
        if (rel > st->cg_residual) st->cg_residual = rel;
        st->collisions += qs.contacts;
        if (qs.max_inverted > st->inverted_peak) st->inverted_peak = qs.max_inverted;
        if (s < 0) {
            defo_error_prefix("body '%s' at t = %g s", defo_body_name(w, id), t1);
        } else if (s > 0) {
            st->cg_not_converged++;
            worst = s;
            s = DEFO_OK;
        }
    }
    for (int i = 0; i < nb && !s; i++) {
        defo_body_id id = sim->ids[i];
        size_t m = 3 * (size_t)defo_body_num_nodes(w, id);
        const double *x0 = defo_body_positions(w, id);
        for (size_t j = 0; j < m; j++) sim->scratch[j] = (xs[i][j] - x0[j]) / frame_dt;
        s = defo_body_set_state(w, id, xs[i], sim->scratch);
    }
    for (int i = 0; i < nb; i++) defo_free(xs[i]);
    defo_free(xs);
    if (s < 0) return s;
    defo_world_set_time(w, t1);
    for (int i = 0; i < nb; i++) {
        defo_index inv = 0;
        defo_body_count_inverted(w, sim->ids[i], &inv);
        st->inverted += inv;
    }
    if (st->inverted > st->inverted_peak) st->inverted_peak = st->inverted;
    return worst;
}

int defo_simulation_newton_iterations(const defo_simulation *sim) {
    return sim->newton;
}

defo_status defo_simulation_step_frame(defo_simulation *sim) {
    double frame_dt = 1.0 / sim->scene->fps;
    /* Frame times as frame/fps, not accumulated: a resumed run and an
     * uninterrupted one see the same start time. */
    defo_status s = apply_changes(sim, (double)sim->frame * frame_dt);
    if (s < 0) return s;
    if (sim->be)
        s = step_backward_euler(sim, frame_dt);
    else if (sim->qs)
        s = step_quasistatic(sim, frame_dt);
    else
        s = defo_world_step(sim->world, frame_dt);
    if (s < 0) return s;
    sim->frame++;
    return s;
}

void defo_simulation_stats(const defo_simulation *sim, defo_step_stats *out) {
    if (sim->be || sim->qs)
        *out = sim->stats;
    else
        defo_world_stats(sim->world, out);
}

/* --------------------------------------------------------- checkpoints */
#define CKPT_MAGIC   "DEFOCKPT"
#define CKPT_VERSION 1u

typedef struct wbuf {
    FILE *f;
    uint64_t h;
    int err;
} wbuf;

static void put(wbuf *w, const void *p, size_t n) {
    if (w->err) return;
    w->h = defo_scene_fnv1a(w->h, p, n);
    if (fwrite(p, 1, n, w->f) != n) w->err = 1;
}

defo_status defo_simulation_save_checkpoint(const defo_simulation *sim, const char *path) {
    char tmp[SCENE_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return defo_error(DEFO_ERR_IO, "%s: cannot create the checkpoint", tmp);
    wbuf w = {f, SCENE_FNV_BASIS, 0};
    uint32_t version = CKPT_VERSION, nb = (uint32_t)sim->num_bodies;
    uint64_t hash = sim->scene->hash;
    int32_t frame = sim->frame, zero = 0;
    double t = defo_world_time(sim->world);
    put(&w, CKPT_MAGIC, 8);
    put(&w, &version, 4);
    put(&w, &nb, 4);
    put(&w, &hash, 8);
    put(&w, &frame, 4);
    put(&w, &zero, 4);
    put(&w, &t, 8);
    for (int i = 0; i < sim->num_bodies; i++) {
        int32_t n = defo_body_num_nodes(sim->world, sim->ids[i]);
        put(&w, &n, 4);
        put(&w, &zero, 4);
        put(&w, defo_body_positions(sim->world, sim->ids[i]), 3 * (size_t)n * sizeof(double));
        put(&w, defo_body_velocities(sim->world, sim->ids[i]), 3 * (size_t)n * sizeof(double));
    }
    /* MG04 §3 plastic strains (state too), bodies with plasticity only */
    for (int i = 0; sim->plast && i < sim->num_bodies; i++)
        if (sim->plast[i]) put(&w, defo_plasticity_strain(sim->plast[i]), plastic_bytes(sim, i));
    uint64_t sum = w.h;
    if (!w.err && fwrite(&sum, 1, 8, f) != 8) w.err = 1;
    if (fclose(f) != 0) w.err = 1;
    if (w.err || rename(tmp, path) != 0) {
        remove(tmp);
        return defo_error(DEFO_ERR_IO, "%s: cannot write the checkpoint", path);
    }
    return DEFO_OK;
}

defo_status defo_simulation_load_checkpoint(defo_simulation *sim, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return defo_error(DEFO_ERR_IO, "%s: no checkpoint to resume from", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size < 48) {
        fclose(f);
        return defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint (%ld bytes)", path, size);
    }
    unsigned char *buf = defo_malloc((size_t)size);
    if (!buf) {
        fclose(f);
        return defo_error_oom("checkpoint", (size_t)size);
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    fclose(f);
    defo_status s = DEFO_OK;
    uint64_t sum;
    uint32_t version, nb;
    uint64_t hash;
    int32_t frame;
    double t;
    if (got != (size_t)size) {
        s = defo_error(DEFO_ERR_IO, "%s: read error", path);
        goto done;
    }
    memcpy(&sum, buf + size - 8, 8);
    if (memcmp(buf, CKPT_MAGIC, 8) != 0) {
        s = defo_error(DEFO_ERR_PARSE, "%s: not a defo checkpoint", path);
        goto done;
    }
    if (defo_scene_fnv1a(SCENE_FNV_BASIS, buf, (size_t)size - 8) != sum) {
        s = defo_error(DEFO_ERR_PARSE, "%s: checksum mismatch (damaged checkpoint)", path);
        goto done;
    }
    memcpy(&version, buf + 8, 4);
    memcpy(&nb, buf + 12, 4);
    memcpy(&hash, buf + 16, 8);
    memcpy(&frame, buf + 24, 4);
    memcpy(&t, buf + 32, 8);
    if (version != CKPT_VERSION) {
        s = defo_error(DEFO_ERR_PARSE, "%s: checkpoint version %u (this defo reads %u)", path,
                       version, CKPT_VERSION);
        goto done;
    }
    if (hash != sim->scene->hash || nb != (uint32_t)sim->num_bodies) {
        s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                       "%s: the checkpoint was written by a different scene (physics hash "
                       "%016llx, this scene %016llx)",
                       path, (unsigned long long)hash, (unsigned long long)sim->scene->hash);
        goto done;
    }
    size_t off = 40;
    for (int i = 0; i < sim->num_bodies && !s; i++) {
        int32_t n;
        if (off + 8 > (size_t)size - 8) {
            s = defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint", path);
            break;
        }
        memcpy(&n, buf + off, 4);
        off += 8;
        size_t bytes = 3 * (size_t)(n < 0 ? 0 : n) * sizeof(double);
        if (n != defo_body_num_nodes(sim->world, sim->ids[i])) {
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "%s: body %d has %d nodes in the checkpoint, %d in the scene", path, i,
                           (int)n, (int)defo_body_num_nodes(sim->world, sim->ids[i]));
            break;
        }
        if (off + 2 * bytes > (size_t)size - 8) {
            s = defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint", path);
            break;
        }
        off += 2 * bytes;
    }
    for (int i = 0; !s && sim->plast && i < sim->num_bodies; i++) {
        if (!sim->plast[i]) continue;
        if (off + plastic_bytes(sim, i) > (size_t)size - 8) {
            s = defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint", path);
            break;
        }
        off += plastic_bytes(sim, i);
    }
    if (!s && off != (size_t)size - 8)
        s = defo_error(DEFO_ERR_PARSE, "%s: %zu unexpected bytes", path, (size_t)size - 8 - off);
    if (s) goto done;
    /* Valid: re-apply the schedule up to the checkpoint, then the state. */
    for (int i = 0; i < sim->num_bodies; i++) sim->applied[i] = 0;
    sim->frame = frame;
    if (frame > 0 && (s = apply_changes(sim, (double)(frame - 1) / sim->scene->fps)) < 0) goto done;
    off = 40;
    for (int i = 0; i < sim->num_bodies && !s; i++) {
        int32_t n;
        memcpy(&n, buf + off, 4);
        off += 8;
        size_t cnt = 3 * (size_t)n;
        double *x = defo_malloc(cnt * sizeof(double) + 1);
        double *v = defo_malloc(cnt * sizeof(double) + 1);
        if (!x || !v) {
            s = defo_error_oom("checkpoint state", cnt * sizeof(double));
        } else {
            memcpy(x, buf + off, cnt * sizeof(double));
            memcpy(v, buf + off + cnt * sizeof(double), cnt * sizeof(double));
            s = defo_body_set_state(sim->world, sim->ids[i], x, v);
        }
        defo_free(x);
        defo_free(v);
        off += 2 * cnt * sizeof(double);
    }
    for (int i = 0; !s && sim->plast && i < sim->num_bodies; i++) {
        if (!sim->plast[i]) continue;
        memcpy(defo_plasticity_strain(sim->plast[i]), buf + off, plastic_bytes(sim, i));
        off += plastic_bytes(sim, i);
    }
    if (!s) s = defo_world_set_time(sim->world, t);
    for (int i = 0; !s && sim->be && i < sim->num_bodies; i++) state_to_stepper(sim, i);
done:
    defo_free(buf);
    return s;
}
