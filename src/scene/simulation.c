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
 * Kinematic handles (backward_euler): a fixed set with a "motion" moves its
 * nodes along x(t) = R(t)(X − pivot) + pivot + velocity·t from their rest
 * positions X; before each step its nodes get v = (x(t_next) − x)/Δt, which
 * the stepper keeps as the CG projection of a fixed node (MG04 §6 with the
 * handle's velocity prescribed), so they land on the motion at each step.
 *
 * Fracture (MG04 §4, bodies with "fracture"): the body gets its own copy of
 * its tet mesh, which the stepper, the plasticity and defo_fracture_step
 * share; each step runs the fracture pass, then the handles, the MG04 §3
 * plastic update and the step (the order defo/fracture.h prescribes).  A
 * split appends a node (the parent's rest position, state and constraint;
 * its fixed set follows its parent) and re-links elements, so the node count
 * grows: the state of a fracturing body lives in its stepper, not in the
 * world (whose body keeps the original topology and is not updated), and the
 * outputs read every body through defo_simulation_body_mesh/_positions/
 * _velocities/_energy/_inverted.
 *
 * Determinism and resume: a frame is defo_world_step(1/fps) after the
 * material changes scheduled at or before the frame's start time.  The state
 * that carries from one frame to the next is exactly (time, x, v) per body —
 * the elastic forces and rotations are recomputed from x by the same code in
 * the same order (defo_body_set_state), so restoring a checkpoint continues
 * bit for bit — plus the plastic strains, and for a fracturing body its
 * topology (connectivity, each added node's parent: its rest position and
 * constraint follow), crack tips and the generator state; the stepper is
 * then rebuilt on the restored mesh exactly as defo_backward_euler_
 * topology_changed rebuilds it.  The checkpoint stores the doubles' bytes
 * (no text rounding).
 *
 * Checkpoint layout (version 2; native little-endian, as written by this
 * machine):
 *   "DEFOCKPT" | u32 version (2) | u32 num_bodies | u64 scene hash |
 *   i32 frame | i32 0 | f64 time | per body: i32 n, i32 0, f64 x[3n], f64 v[3n] |
 *   per body with plasticity (MG04 §3): f64 ε_plastic[6 · elements] |
 *   per body with fracture (MG04 §4): u64 generator state, i32 elements, i32 0,
 *     i32 connectivity[4 · elements], i32 parent[n], u8 crack_tip[n], zero
 *     bytes up to a multiple of 8 |
 *   u64 FNV-1a 64 of every byte before it.
 * Version 1 (no fracture section) is refused with a message.  The same
 * serialisation, kept in memory at the start of each frame, takes a
 * fracturing scene back to that frame when a step fails.
 */
#define _POSIX_C_SOURCE 200809L

#include "scene/scene_internal.h"

#include "defo/backward_euler.h"
#include "defo/contact.h"
#include "defo/embed.h"
#include "defo/force.h"
#include "defo/fracture.h"
#include "defo/geometry.h"
#include "defo/io.h"
#include "defo/math.h"
#include "defo/plasticity.h"
#include "defo/quasistatic.h"
#include "defo/solver.h"

#include "base/parallel.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* A growable byte buffer (checkpoints and the frame-start snapshot). */
typedef struct membuf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} membuf;

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
    double **qs_x;          /* per body 3n: the frame's equilibrium before it is committed */
    double *scratch;        /* 3 × largest body */
    int newton;             /* Newton iterations of the last frame */
    defo_step_stats stats;
    /* "embedded" (MG04 §5.1): per body the surface (rest, transformed like
     * the body) bound to the body's tet mesh, NULL without one */
    defo_embed **embed;
    defo_mesh **embed_surf;
    /* backward_euler: per body the fixed set of each node (the last set that
     * selects it, -1 for none; an added node takes its parent's), fixset_cap
     * entries; the stepper settings every body shares */
    int **fixset;
    defo_index *fixset_cap;
    defo_backward_euler_def be_def;
    /* MG04 §4 fracture, per body with "fracture" (NULL entries otherwise):
     * the body's own tet mesh (grown by the splits), its fracture state, the
     * node count before any split; the ITF04 force model of the current mesh
     * for energies and inverted counts (rebuilt when the node count
     * changed); the splits of the last frame over all bodies */
    int num_fracturing;
    defo_mesh **frac_mesh;
    defo_fracture **frac;
    defo_index *frac_n0;
    defo_material **frac_mat;
    defo_rest *frac_rest;
    defo_force **frac_force;
    defo_index *frac_force_n;
    double *frac_energy;       /* of the last evaluation ... */
    unsigned char *frac_fresh; /* ... valid until the next step or restore */
    defo_index splits;
    membuf snap; /* the state at the start of the frame (fracturing scenes) */
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
        if (sim->qs_x) defo_free(sim->qs_x[i]);
    }
    defo_free(sim->qs_x);
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
    for (int i = 0; sim->fixset && i < sim->num_bodies; i++) defo_free(sim->fixset[i]);
    defo_free(sim->fixset);
    defo_free(sim->fixset_cap);
    for (int i = 0; sim->frac && i < sim->num_bodies; i++) {
        defo_fracture_destroy(sim->frac[i]);
        defo_force_destroy(sim->frac_force[i]);
        defo_rest_free(&sim->frac_rest[i]);
        defo_material_destroy(sim->frac_mat[i]);
        defo_mesh_destroy(sim->frac_mesh[i]);
    }
    defo_free(sim->frac);
    defo_free(sim->frac_force);
    defo_free(sim->frac_rest);
    defo_free(sim->frac_force_n);
    defo_free(sim->frac_energy);
    defo_free(sim->frac_fresh);
    defo_free(sim->frac_mat);
    defo_free(sim->frac_mesh);
    defo_free(sim->frac_n0);
    defo_free(sim->snap.p);
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

/* A fixed set's or load's region as a defo_region (defo/geometry.h), whose
 * one tolerance rule (1e-9 of the rest bounding-box diagonal) lets a box face
 * or a plane placed exactly on a layer of nodes select it despite rounding. */
static defo_region fix_region(const scene_fix *f) {
    switch (f->kind) {
    case FIX_BOX:
        return defo_region_box(f->a, f->b);
    case FIX_SPHERE:
        return defo_region_sphere(f->a, f->radius);
    case FIX_PLANE:
        return defo_region_plane(f->a, f->b);
    case FIX_TAG:
        break;
    }
    return defo_region_tag(f->tag);
}

/* Nodes of fixed set f marked in sel (num_nodes flags); their count, or -1
 * when the region is refused (the error says why). */
static defo_index select_fixed(const scene_fix *f, const defo_mesh *m, unsigned char *sel) {
    defo_region r = fix_region(f);
    if (defo_region_mark(m, &r, sel) != DEFO_OK) return -1;
    defo_index count = 0;
    for (defo_index i = 0; i < m->num_nodes; i++) count += sel[i];
    return count;
}

static defo_status dead_loads(const scene_body *b, const defo_mesh *m, double *f);

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
        if (count < 0) {
            s = defo_error_prefix("bodies[%d].fixed[%d]", index, f);
            break;
        }
        if (!count) {
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "bodies[%d].fixed[%d]: selects no node of body '%s'", index, f, b->name);
            break;
        }
        for (defo_index i = 0; i < n && !s; i++)
            if (sel[i]) {
                /* backward_euler bodies are stepped outside the world: its
                 * fixed flag would only zero a handle's velocity there */
                if (sim->scene->integrator != INTEGRATOR_BACKWARD_EULER)
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
    if (!s && sim->scene->integrator == INTEGRATOR_NEWMARK) { /* dead loads, for every step */
        s = dead_loads(b, m, defo_body_external_force(sim->world, id));
        if (s < 0) defo_error_prefix("bodies[%d]", index);
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
 * after restoring a checkpoint; not for a fracturing body, whose state lives
 * in its stepper). */
static void state_to_stepper(defo_simulation *sim, int i) {
    defo_world *w = sim->world;
    defo_body_id id = sim->ids[i];
    size_t bytes = 3 * (size_t)defo_body_num_nodes(w, id) * sizeof(double);
    memcpy(defo_backward_euler_positions(sim->be[i]), defo_body_positions(w, id), bytes);
    memcpy(defo_backward_euler_velocities(sim->be[i]), defo_body_velocities(w, id), bytes);
}

/* Nodes of body i now (a fracturing body's mesh grows). */
static defo_index body_nodes(const defo_simulation *sim, int i) {
    if (sim->frac && sim->frac[i]) return sim->frac_mesh[i]->num_nodes;
    return defo_body_num_nodes(sim->world, sim->ids[i]);
}

/* Per-node arrays of backward_euler body i sized for its current node count;
 * nodes from `from` on take their parent's fixed set (parents precede
 * children, so one forward pass resolves chains).  Capacity doubles, so a
 * warm step allocates nothing unless it split. */
static defo_status grow_node_arrays(defo_simulation *sim, int i, defo_index from) {
    const defo_index n = body_nodes(sim, i);
    if (n > sim->fixset_cap[i]) {
        defo_index cap = sim->fixset_cap[i] > 0 ? sim->fixset_cap[i] : 16;
        while (cap < n) cap = cap > DEFO_INDEX_MAX / 2 ? DEFO_INDEX_MAX : 2 * cap;
        int *f = defo_realloc(sim->fixset[i], (size_t)cap * sizeof *f);
        if (f) sim->fixset[i] = f;
        unsigned char *c = defo_realloc(sim->collided[i], (size_t)cap + 1);
        if (c) sim->collided[i] = c;
        if (!f || !c) return defo_error_oom("node arrays", (size_t)cap * sizeof *f);
        for (defo_index k = sim->fixset_cap[i]; k < cap; k++) {
            sim->fixset[i][k] = -1;
            sim->collided[i][k] = 0;
        }
        sim->fixset_cap[i] = cap;
    }
    if (sim->frac && sim->frac[i]) {
        const defo_index *parent = defo_fracture_parents(sim->frac[i]);
        for (defo_index k = from; k < n; k++) sim->fixset[i][k] = sim->fixset[i][parent[k]];
    }
    return DEFO_OK;
}

/* A fresh stepper for body i on its current mesh (defo_backward_euler_create
 * computes masses and the model from the mesh exactly as
 * defo_backward_euler_topology_changed does), constraints from the fixed
 * sets.  The caller sets x and v. */
static defo_status make_stepper(defo_simulation *sim, int i) {
    const defo_mesh *m =
        sim->frac && sim->frac[i] ? sim->frac_mesh[i] : defo_body_mesh(sim->world, sim->ids[i]);
    defo_backward_euler_destroy(sim->be[i]);
    sim->be[i] = NULL;
    defo_status s = defo_backward_euler_create(m, &sim->material[i], &sim->be_def, &sim->be[i]);
    if (s < 0)
        return defo_error_prefix("bodies[%d] '%s' (backward_euler)", i,
                                 defo_body_name(sim->world, sim->ids[i]));
    unsigned char *cons = defo_backward_euler_constraints(sim->be[i]);
    for (defo_index n = 0; n < m->num_nodes; n++)
        cons[n] = sim->fixset[i][n] >= 0 ? DEFO_CONSTRAINT_FIXED : DEFO_CONSTRAINT_NONE;
    /* dead loads on the rest mesh (validation keeps them off fracturing bodies) */
    s = dead_loads(&sim->scene->bodies[i], m, defo_backward_euler_external_force(sim->be[i]));
    if (s < 0)
        return defo_error_prefix("bodies[%d] '%s'", i, defo_body_name(sim->world, sim->ids[i]));
    return DEFO_OK;
}

static defo_status create_steppers(defo_simulation *sim) {
    const defo_scene *scene = sim->scene;
    const int nb = sim->num_bodies;
    sim->be = defo_calloc((size_t)nb, sizeof *sim->be);
    sim->collided = defo_calloc((size_t)nb, sizeof *sim->collided);
    sim->plast = defo_calloc((size_t)nb, sizeof *sim->plast);
    sim->plast_saved = defo_calloc((size_t)nb, sizeof *sim->plast_saved);
    sim->fixset = defo_calloc((size_t)nb, sizeof *sim->fixset);
    sim->fixset_cap = defo_calloc((size_t)nb, sizeof *sim->fixset_cap);
    sim->frac = defo_calloc((size_t)nb, sizeof *sim->frac);
    sim->frac_mesh = defo_calloc((size_t)nb, sizeof *sim->frac_mesh);
    sim->frac_n0 = defo_calloc((size_t)nb, sizeof *sim->frac_n0);
    sim->frac_mat = defo_calloc((size_t)nb, sizeof *sim->frac_mat);
    sim->frac_rest = defo_calloc((size_t)nb, sizeof *sim->frac_rest);
    sim->frac_force = defo_calloc((size_t)nb, sizeof *sim->frac_force);
    sim->frac_force_n = defo_calloc((size_t)nb, sizeof *sim->frac_force_n);
    sim->frac_energy = defo_calloc((size_t)nb, sizeof *sim->frac_energy);
    sim->frac_fresh = defo_calloc((size_t)nb, sizeof *sim->frac_fresh);
    if (!sim->be || !sim->collided || !sim->plast || !sim->plast_saved || !sim->fixset ||
        !sim->fixset_cap || !sim->frac || !sim->frac_mesh || !sim->frac_n0 || !sim->frac_mat ||
        !sim->frac_rest || !sim->frac_force || !sim->frac_force_n || !sim->frac_energy ||
        !sim->frac_fresh)
        return defo_error_oom("steppers", 0);
    /* frames are cut into equal steps no longer than time_step */
    defo_backward_euler_def d = scene->backward_euler;
    memcpy(d.gravity, scene->world.gravity, sizeof d.gravity);
    double frame_dt = 1.0 / scene->fps, k = ceil(frame_dt / d.time_step * (1.0 - 1e-12));
    if (k < 1) k = 1;
    if (k > 1e7)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "integrator.time_step: %g s needs %.3g steps per frame",
                          scene->backward_euler.time_step, k);
    d.time_step = frame_dt / k;
    sim->be_steps = (int)k;
    sim->be_def = d;
    for (int i = 0; i < nb; i++) {
        defo_body_id id = sim->ids[i];
        const scene_body *b = &scene->bodies[i];
        /* the world's copy of the mesh lives as long as the simulation; a
         * fracturing body gets its own, which the splits grow */
        const defo_mesh *m = defo_body_mesh(sim->world, id);
        if (b->has_fracture) {
            defo_status s = defo_mesh_clone(m, &sim->frac_mesh[i]);
            if (s < 0) return defo_error_prefix("bodies[%d].fracture", i);
            m = sim->frac_mesh[i];
            sim->frac_n0[i] = m->num_nodes;
            sim->num_fracturing++;
        }
        /* fixed sets in scene order: a node in several follows the last */
        defo_status s = grow_node_arrays(sim, i, 0);
        unsigned char *sel = defo_malloc((size_t)m->num_nodes + 1);
        if (!s && !sel) s = defo_error_oom("fixed nodes", (size_t)m->num_nodes);
        for (int f = 0; f < b->num_fixed && !s; f++) {
            select_fixed(&b->fixed[f], m, sel);
            for (defo_index n = 0; n < m->num_nodes; n++)
                if (sel[n]) sim->fixset[i][n] = f;
        }
        defo_free(sel);
        if (s) return s;
        if (b->has_fracture) {
            s = defo_fracture_create(sim->frac_mesh[i], &sim->material[i], &b->fracture,
                                     &sim->frac[i]);
            if (s < 0) return defo_error_prefix("bodies[%d].fracture", i);
            s = defo_material_create(&sim->material[i], &sim->frac_mat[i]);
            if (s < 0) return defo_error_prefix("bodies[%d] '%s'", i, b->name);
            sim->frac_force_n[i] = -1;
        }
        s = make_stepper(sim, i);
        if (s < 0) return s;
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
        state_to_stepper(sim, i);
    }
    return DEFO_OK;
}

/* Kinematic handles of body i: before the step that ends at t1 (length dt),
 * every node of a fixed set with a "motion" gets v = (x(t1) − x)/dt with
 * x(t) = R(t)(X − pivot) + pivot + velocity·t (X its rest position; a split
 * copy's is its parent's). */
static void set_handles(defo_simulation *sim, int i, double t1, double dt) {
    const scene_body *b = &sim->scene->bodies[i];
    int any = 0;
    for (int f = 0; f < b->num_fixed; f++) any |= b->fixed[f].has_motion;
    if (!any) return;
    const defo_mesh *m =
        sim->frac && sim->frac[i] ? sim->frac_mesh[i] : defo_body_mesh(sim->world, sim->ids[i]);
    const double *x = defo_backward_euler_positions(sim->be[i]);
    double *v = defo_backward_euler_velocities(sim->be[i]);
    const int *fs = sim->fixset[i];
    for (defo_index n = 0; n < m->num_nodes; n++) {
        if (fs[n] < 0 || !b->fixed[fs[n]].has_motion) continue;
        double target[3];
        defo_motion_eval(&b->fixed[fs[n]].motion, t1, m->x + 3 * (size_t)n, target, NULL);
        for (int a = 0; a < 3; a++)
            v[3 * (size_t)n + (size_t)a] = (target[a] - x[3 * (size_t)n + (size_t)a]) / dt;
    }
}

/* The ITF04 force model of fracturing body i's current mesh (energies and
 * inverted counts, as the world evaluates its bodies), rebuilt after splits;
 * evaluated at the current positions once per state. */
static defo_status frac_force_eval(defo_simulation *sim, int i, double *energy) {
    defo_mesh *m = sim->frac_mesh[i];
    if (sim->frac_fresh[i] && sim->frac_force_n[i] == m->num_nodes) {
        if (energy) *energy = sim->frac_energy[i];
        return DEFO_OK;
    }
    if (!sim->frac_force[i] || sim->frac_force_n[i] != m->num_nodes) {
        defo_force_destroy(sim->frac_force[i]);
        sim->frac_force[i] = NULL;
        defo_rest_free(&sim->frac_rest[i]);
        defo_status s = defo_rest_compute(m, &sim->frac_rest[i]);
        if (!s) s = defo_force_create(m, &sim->frac_rest[i], sim->frac_mat[i], &sim->frac_force[i]);
        if (s < 0) return defo_error_prefix("body '%s'", defo_body_name(sim->world, sim->ids[i]));
        sim->frac_force_n[i] = m->num_nodes;
    }
    double e = 0;
    defo_status s =
        defo_force_elastic(sim->frac_force[i], defo_backward_euler_positions(sim->be[i]), NULL, &e);
    if (s < 0) return defo_error_prefix("body '%s'", defo_body_name(sim->world, sim->ids[i]));
    sim->frac_energy[i] = e;
    sim->frac_fresh[i] = 1;
    if (energy) *energy = e;
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
        if (count <= 0) break; /* reported by add_body */
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

/* "forces" (N per node) and "tractions" (Pa on the boundary faces in the
 * region) as a dead-load vector f (3n, overwritten) for the dynamic
 * integrators; a region that loads nothing is an error. */
static defo_status dead_loads(const scene_body *b, const defo_mesh *m, double *f) {
    const defo_index n = m->num_nodes;
    memset(f, 0, 3 * (size_t)n * sizeof *f);
    if (!b->num_forces && !b->num_tractions) return DEFO_OK;
    unsigned char *mark = defo_malloc((size_t)n + 1);
    if (!mark) return defo_error_oom("loads", (size_t)n);
    defo_status s = DEFO_OK;
    for (int k = 0; k < b->num_forces + b->num_tractions && !s; k++) {
        const int trac = k >= b->num_forces, j = trac ? k - b->num_forces : k;
        const scene_load *ld = trac ? &b->tractions[j] : &b->forces[j];
        defo_region r = fix_region(&ld->region);
        s = defo_region_mark(m, &r, mark);
        if (!s && !trac) {
            defo_index count = 0;
            for (defo_index i = 0; i < n; i++) {
                if (!mark[i]) continue;
                count++;
                for (int c = 0; c < 3; c++) f[3 * (size_t)i + (size_t)c] += ld->value[c];
            }
            if (!count) s = defo_error(DEFO_ERR_INVALID_ARGUMENT, "forces[%d]: selects no node", j);
        } else if (!s) {
            double area = 0;
            s = defo_mesh_add_traction(m, mark, ld->value, f, &area);
            if (!s && !(area > 0))
                s = defo_error(DEFO_ERR_INVALID_ARGUMENT, "tractions[%d]: selects no boundary face",
                               j);
        }
    }
    defo_free(mark);
    return s;
}

/* The scene's dead loads as quasistatic f_ext (the same vector the dynamic
 * integrators get). */
static defo_status add_loads(defo_quasistatic *qs, const scene_body *b, const defo_mesh *m) {
    if (!b->num_forces && !b->num_tractions) return DEFO_OK;
    double *f = defo_malloc(3 * (size_t)m->num_nodes * sizeof *f + 1);
    if (!f) return defo_error_oom("loads", 3 * (size_t)m->num_nodes * sizeof *f);
    defo_status s = dead_loads(b, m, f);
    if (!s) s = defo_quasistatic_add_load(qs, f);
    defo_free(f);
    return s;
}

static defo_status create_solvers(defo_simulation *sim) {
    const defo_scene *scene = sim->scene;
    int nb = sim->num_bodies;
    sim->qs = defo_calloc((size_t)nb, sizeof *sim->qs);
    sim->qs_mat = defo_calloc((size_t)nb, sizeof *sim->qs_mat);
    sim->qs_x = defo_calloc((size_t)nb, sizeof *sim->qs_x);
    if (!sim->qs || !sim->qs_mat || !sim->qs_x) return defo_error_oom("solvers", 0);
    for (int i = 0; i < nb; i++) {
        size_t m = 3 * (size_t)defo_body_num_nodes(sim->world, sim->ids[i]);
        sim->qs_x[i] = defo_malloc(m * sizeof(double) + 1);
        if (!sim->qs_x[i]) return defo_error_oom("solvers", m * sizeof(double));
    }
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
/* ------------------------------------------------- bodies as written out */
const defo_mesh *defo_simulation_body_mesh(const defo_simulation *sim, int i) {
    if (!sim || i < 0 || i >= sim->num_bodies) return NULL;
    if (sim->frac && sim->frac[i]) return sim->frac_mesh[i];
    return defo_body_mesh(sim->world, sim->ids[i]);
}
const double *defo_simulation_body_positions(const defo_simulation *sim, int i) {
    if (!sim || i < 0 || i >= sim->num_bodies) return NULL;
    if (sim->frac && sim->frac[i]) return defo_backward_euler_positions(sim->be[i]);
    return defo_body_positions(sim->world, sim->ids[i]);
}
const double *defo_simulation_body_velocities(const defo_simulation *sim, int i) {
    if (!sim || i < 0 || i >= sim->num_bodies) return NULL;
    if (sim->frac && sim->frac[i]) return defo_backward_euler_velocities(sim->be[i]);
    return defo_body_velocities(sim->world, sim->ids[i]);
}
int defo_simulation_body_fractures(const defo_simulation *sim, int i) {
    return sim && i >= 0 && i < sim->num_bodies && sim->frac && sim->frac[i];
}

defo_status defo_simulation_body_energy(defo_simulation *sim, int i, double *kinetic,
                                        double *elastic) {
    if (!sim || i < 0 || i >= sim->num_bodies)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_simulation_body_energy: bad body %d", i);
    if (!(sim->frac && sim->frac[i]))
        return defo_body_energy(sim->world, sim->ids[i], kinetic, elastic, NULL);
    if (kinetic) {
        /* ½ Σ m v², per-node terms then the fixed-order sum (as the world) */
        const double *m = defo_backward_euler_mass(sim->be[i]);
        const double *v = defo_backward_euler_velocities(sim->be[i]);
        const defo_index n = body_nodes(sim, i);
        double *t = defo_malloc((size_t)n * sizeof(double) + 1);
        if (!t) return defo_error_oom("energy", (size_t)n * sizeof(double));
        for (defo_index k = 0; k < n; k++) {
            const double *q = v + 3 * (size_t)k;
            t[k] = 0.5 * m[k] * (q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
        }
        *kinetic = defo_sum(t, (size_t)n);
        defo_free(t);
    }
    return elastic ? frac_force_eval(sim, i, elastic) : DEFO_OK;
}

defo_status defo_simulation_body_inverted(defo_simulation *sim, int i, defo_index *count) {
    if (!sim || !count || i < 0 || i >= sim->num_bodies)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_simulation_body_inverted: bad body %d",
                          i);
    if (!(sim->frac && sim->frac[i]))
        return defo_body_count_inverted(sim->world, sim->ids[i], count);
    defo_status s = frac_force_eval(sim, i, NULL);
    if (s < 0) return s;
    *count = defo_force_count_inverted(sim->frac_force[i]);
    return DEFO_OK;
}

defo_status defo_simulation_body_components(const defo_simulation *sim, int i, defo_index *count) {
    if (!sim || !count || i < 0 || i >= sim->num_bodies)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_simulation_body_components: bad body %d",
                          i);
    return defo_mesh_components(defo_simulation_body_mesh(sim, i), NULL, count);
}

defo_index defo_simulation_splits(const defo_simulation *sim) {
    return sim ? sim->splits : 0;
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

/* MG04 §6 implicit Euler steps for every body — each preceded by the MG04 §4
 * fracture pass (bodies with "fracture"), the kinematic handles and the
 * MG04 §3 plastic update — then ITF04 §9 node collisions (projection, normal
 * velocity, friction) after each step; the world receives the state at the
 * end of the frame (fracturing bodies keep theirs in their steppers).  On
 * failure every body goes back to the frame's start: the frame is not
 * taken. */
static defo_status serialize(const defo_simulation *sim, membuf *b);
static defo_status restore(defo_simulation *sim, const unsigned char *buf, size_t size,
                           const char *what);

static defo_status step_backward_euler(defo_simulation *sim, double frame_dt) {
    defo_world *w = sim->world;
    double t0 = defo_world_time(w), k = sim->be_steps, dt = frame_dt / k;
    defo_step_stats *st = &sim->stats;
    memset(st, 0, sizeof *st);
    st->dt = dt;
    sim->splits = 0;
    for (int i = 0; i < sim->num_bodies; i++) sim->frac_fresh[i] = 0;
    defo_status worst = DEFO_OK, s = DEFO_OK;
    if (sim->num_fracturing) {
        /* the topology may change within the frame: keep the whole state */
        s = serialize(sim, &sim->snap);
        if (s < 0) return s;
    } else {
        for (int i = 0; i < sim->num_bodies; i++)
            if (sim->plast[i])
                memcpy(sim->plast_saved[i], defo_plasticity_strain(sim->plast[i]),
                       plastic_bytes(sim, i));
    }
    /* a frame starts from x and v alone, as a run resumed here would */
    for (int i = 0; i < sim->num_bodies; i++) defo_backward_euler_refresh(sim->be[i]);
    for (int j = 0; j < sim->be_steps && !s; j++) {
        double t1 = t0 + frame_dt * ((double)(j + 1) / k);
        for (int i = 0; i < sim->num_bodies && !s; i++) {
            defo_backward_euler_stats bs;
            memset(&bs, 0, sizeof bs);
            /* MG04 §4 before §3 and the step (defo/fracture.h) */
            if (sim->frac[i]) {
                defo_index before = sim->frac_mesh[i]->num_nodes;
                defo_fracture_stats fs;
                s = defo_fracture_step(sim->frac[i], sim->be[i], &fs);
                if (!s && fs.splits > 0) s = grow_node_arrays(sim, i, before);
                sim->splits += fs.splits;
            }
            if (!s) set_handles(sim, i, t1, dt);
            /* MG04 §3: plastic flow with this step's rotations, then the step */
            if (!s && sim->plast[i]) s = defo_plasticity_step(sim->plast[i], sim->be[i], dt, NULL);
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
            defo_index n = body_nodes(sim, i), hits = 0;
            s = defo_collide_nodes(sim->colliders, sim->num_colliders, t1, dt, n,
                                   defo_backward_euler_positions(sim->be[i]),
                                   defo_backward_euler_velocities(sim->be[i]), sim->collided[i],
                                   NULL, &hits);
            st->collisions += hits;
        }
        st->substeps = j + 1;
    }
    /* the world's bodies take the state (and evaluate it: a non-finite
     * energy refuses the frame); a fracturing body's ITF04 evaluation is the
     * same check */
    for (int i = 0; i < sim->num_bodies && !s; i++)
        s = sim->frac[i]
                ? frac_force_eval(sim, i, NULL)
                : defo_body_set_state(w, sim->ids[i], defo_backward_euler_positions(sim->be[i]),
                                      defo_backward_euler_velocities(sim->be[i]));
    if (s < 0) {
        if (sim->num_fracturing) {
            /* keep the step's message: the restore only repeats what worked */
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", defo_last_error());
            defo_status r = restore(sim, sim->snap.p, sim->snap.n, "frame start");
            if (r < 0) return r;
            return defo_error(s, "%s", msg);
        }
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
        defo_simulation_body_inverted(sim, i, &inv);
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
    double **xs = sim->qs_x;
    defo_status s = DEFO_OK;
    for (int i = 0; i < nb && !s; i++) {
        defo_body_id id = sim->ids[i];
        size_t m = 3 * (size_t)defo_body_num_nodes(w, id);
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
#define CKPT_VERSION 2u

static void put(membuf *b, const void *src, size_t n) {
    if (b->oom || !n) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        unsigned char *q = defo_realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

/* Bytes of the fracture section of a body with n nodes and ne elements. */
static size_t frac_section_bytes(size_t n, size_t ne) {
    size_t bytes = 16 + 16 * ne + 5 * n;
    return bytes + (8 - bytes % 8) % 8;
}

/* The whole state in checkpoint layout (header comment), checksum last.
 * The buffer keeps its capacity between calls. */
static defo_status serialize(const defo_simulation *sim, membuf *b) {
    b->n = 0;
    b->oom = 0;
    uint32_t version = CKPT_VERSION, nb = (uint32_t)sim->num_bodies;
    uint64_t hash = sim->scene->hash;
    int32_t frame = sim->frame, zero = 0;
    double t = defo_world_time(sim->world);
    put(b, CKPT_MAGIC, 8);
    put(b, &version, 4);
    put(b, &nb, 4);
    put(b, &hash, 8);
    put(b, &frame, 4);
    put(b, &zero, 4);
    put(b, &t, 8);
    for (int i = 0; i < sim->num_bodies; i++) {
        int32_t n = body_nodes(sim, i);
        put(b, &n, 4);
        put(b, &zero, 4);
        put(b, defo_simulation_body_positions(sim, i), 3 * (size_t)n * sizeof(double));
        put(b, defo_simulation_body_velocities(sim, i), 3 * (size_t)n * sizeof(double));
    }
    /* MG04 §3 plastic strains (state too), bodies with plasticity only */
    for (int i = 0; sim->plast && i < sim->num_bodies; i++)
        if (sim->plast[i]) put(b, defo_plasticity_strain(sim->plast[i]), plastic_bytes(sim, i));
    /* MG04 §4 topology, crack tips and generator, fracturing bodies only */
    for (int i = 0; sim->frac && i < sim->num_bodies; i++) {
        if (!sim->frac[i]) continue;
        const defo_mesh *m = sim->frac_mesh[i];
        uint64_t rng = defo_fracture_rng_state(sim->frac[i]);
        int32_t ne = m->num_elems;
        put(b, &rng, 8);
        put(b, &ne, 4);
        put(b, &zero, 4);
        put(b, m->elems, 4 * (size_t)ne * sizeof(defo_index));
        put(b, defo_fracture_parents(sim->frac[i]), (size_t)m->num_nodes * sizeof(defo_index));
        put(b, defo_fracture_crack_tips(sim->frac[i]), (size_t)m->num_nodes);
        static const unsigned char pad[8] = {0};
        size_t used = 16 + 16 * (size_t)ne + 5 * (size_t)m->num_nodes;
        put(b, pad, frac_section_bytes((size_t)m->num_nodes, (size_t)ne) - used);
    }
    uint64_t sum = defo_scene_fnv1a(SCENE_FNV_BASIS, b->p, b->n);
    put(b, &sum, 8);
    if (b->oom) return defo_error_oom("checkpoint", b->n);
    return DEFO_OK;
}

defo_status defo_simulation_save_checkpoint(const defo_simulation *sim, const char *path) {
    membuf b = {NULL, 0, 0, 0};
    defo_status s = serialize(sim, &b);
    if (s < 0) {
        defo_free(b.p);
        return s;
    }
    char tmp[SCENE_PATH_MAX + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        defo_free(b.p);
        return defo_error(DEFO_ERR_IO, "%s: cannot create the checkpoint", tmp);
    }
    int err = fwrite(b.p, 1, b.n, f) != b.n;
    defo_free(b.p);
    if (fclose(f) != 0) err = 1;
    if (err || rename(tmp, path) != 0) {
        remove(tmp);
        return defo_error(DEFO_ERR_IO, "%s: cannot write the checkpoint", path);
    }
    return DEFO_OK;
}

/* Put fracturing body i back to a saved topology and state: the mesh's
 * added nodes re-made from their parents' rest positions, connectivity,
 * tips, parents and generator, then a stepper built on it (as
 * defo_backward_euler_topology_changed would) with x and v.  The arrays were
 * checked by restore(). */
static defo_status restore_fracture_body(defo_simulation *sim, int i, defo_index n,
                                         const unsigned char *xv, const unsigned char *sec) {
    defo_mesh *m = sim->frac_mesh[i];
    const size_t ne = (size_t)m->num_elems;
    uint64_t rng;
    memcpy(&rng, sec, 8);
    defo_index *parent = defo_malloc((size_t)n * sizeof *parent + 1);
    if (!parent) return defo_error_oom("checkpoint parents", (size_t)n * sizeof *parent);
    memcpy(parent, sec + 16 + 16 * ne, (size_t)n * sizeof *parent);
    defo_status s = DEFO_OK;
    m->num_nodes = sim->frac_n0[i];
    for (defo_index k = sim->frac_n0[i]; k < n && !s; k++) {
        double X[3];
        memcpy(X, m->x + 3 * (size_t)parent[k], sizeof X);
        s = defo_mesh_add_node(m, X[0], X[1], X[2], NULL);
    }
    if (!s) {
        memcpy(m->elems, sec + 16, 4 * ne * sizeof(defo_index));
        s = defo_fracture_restore(sim->frac[i], rng, sec + 16 + 16 * ne + 4 * (size_t)n, parent);
    }
    defo_free(parent);
    if (!s) s = grow_node_arrays(sim, i, sim->frac_n0[i]);
    if (!s) s = make_stepper(sim, i);
    if (s < 0) return defo_error_prefix("bodies[%d] fracture state", i);
    size_t bytes = 3 * (size_t)n * sizeof(double);
    memcpy(defo_backward_euler_positions(sim->be[i]), xv, bytes);
    memcpy(defo_backward_euler_velocities(sim->be[i]), xv + bytes, bytes);
    sim->frac_force_n[i] = -1;
    sim->frac_fresh[i] = 0;
    return DEFO_OK;
}

/* Check a serialised state (what names it in messages) completely, then
 * apply it.  Nothing changes when the check fails. */
static defo_status restore(defo_simulation *sim, const unsigned char *buf, size_t size,
                           const char *what) {
    if (size < 48)
        return defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint (%zu bytes)", what, size);
    uint64_t sum, hash;
    uint32_t version, nb;
    int32_t frame;
    double t;
    memcpy(&sum, buf + size - 8, 8);
    if (memcmp(buf, CKPT_MAGIC, 8) != 0)
        return defo_error(DEFO_ERR_PARSE, "%s: not a defo checkpoint", what);
    if (defo_scene_fnv1a(SCENE_FNV_BASIS, buf, size - 8) != sum)
        return defo_error(DEFO_ERR_PARSE, "%s: checksum mismatch (damaged checkpoint)", what);
    memcpy(&version, buf + 8, 4);
    memcpy(&nb, buf + 12, 4);
    memcpy(&hash, buf + 16, 8);
    memcpy(&frame, buf + 24, 4);
    memcpy(&t, buf + 32, 8);
    if (version != CKPT_VERSION)
        return defo_error(DEFO_ERR_PARSE,
                          "%s: checkpoint version %u, this defo reads version %u only (written "
                          "by %s defo); run the scene again from the start",
                          what, version, CKPT_VERSION,
                          version < CKPT_VERSION ? "an older" : "a newer");
    if (hash != sim->scene->hash || nb != (uint32_t)sim->num_bodies)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: the checkpoint was written by a different scene (physics hash "
                          "%016llx, this scene %016llx)",
                          what, (unsigned long long)hash, (unsigned long long)sim->scene->hash);
    const size_t end = size - 8;
    const int nbodies = sim->num_bodies;
    size_t *xv_off = defo_calloc((size_t)nbodies + 1, sizeof *xv_off);
    size_t *pl_off = defo_calloc((size_t)nbodies + 1, sizeof *pl_off);
    size_t *fr_off = defo_calloc((size_t)nbodies + 1, sizeof *fr_off);
    int32_t *nodes = defo_calloc((size_t)nbodies + 1, sizeof *nodes);
    defo_status s = DEFO_OK;
    if (!xv_off || !pl_off || !fr_off || !nodes) s = defo_error_oom("checkpoint", 0);
    size_t off = 40;
    for (int i = 0; i < nbodies && !s; i++) {
        int32_t n;
        if (off + 8 > end) {
            s = defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint", what);
            break;
        }
        memcpy(&n, buf + off, 4);
        off += 8;
        const int frac = sim->frac && sim->frac[i];
        const defo_index want =
            frac ? sim->frac_n0[i] : defo_body_num_nodes(sim->world, sim->ids[i]);
        if (frac ? n < want : n != want) {
            s = defo_error(DEFO_ERR_INVALID_ARGUMENT,
                           "%s: body %d has %d nodes in the checkpoint, %s%d in the scene", what, i,
                           (int)n, frac ? "at least " : "", (int)want);
            break;
        }
        size_t bytes = 3 * (size_t)n * sizeof(double);
        if (2 * bytes > end - off) {
            s = defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint", what);
            break;
        }
        nodes[i] = n;
        xv_off[i] = off;
        off += 2 * bytes;
    }
    for (int i = 0; !s && sim->plast && i < nbodies; i++) {
        if (!sim->plast[i]) continue;
        if (plastic_bytes(sim, i) > end - off) {
            s = defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint", what);
            break;
        }
        pl_off[i] = off;
        off += plastic_bytes(sim, i);
    }
    for (int i = 0; !s && sim->frac && i < nbodies; i++) {
        if (!sim->frac[i]) continue;
        const size_t n = (size_t)nodes[i], ne = (size_t)sim->frac_mesh[i]->num_elems;
        int32_t ne_saved = -1;
        if (16 <= end - off) memcpy(&ne_saved, buf + off + 8, 4);
        if ((size_t)ne_saved != ne || frac_section_bytes(n, ne) > end - off) {
            s = defo_error(DEFO_ERR_PARSE, "%s: body %d: damaged fracture section", what, i);
            break;
        }
        /* connectivity within the nodes, parents before children */
        const unsigned char *el = buf + off + 16, *pa = el + 16 * ne;
        for (size_t q = 0; q < 4 * ne && !s; q++) {
            int32_t v;
            memcpy(&v, el + 4 * q, 4);
            if (v < 0 || (size_t)v >= n)
                s = defo_error(DEFO_ERR_PARSE, "%s: body %d: element %zu has node %d of %zu", what,
                               i, q / 4, (int)v, n);
        }
        for (size_t k = 0; k < n && !s; k++) {
            int32_t v;
            memcpy(&v, pa + 4 * k, 4);
            int ok = k < (size_t)sim->frac_n0[i] ? v == (int32_t)k : v >= 0 && (size_t)v < k;
            if (!ok)
                s = defo_error(DEFO_ERR_PARSE, "%s: body %d: node %zu has parent %d", what, i, k,
                               (int)v);
        }
        fr_off[i] = off;
        off += frac_section_bytes(n, ne);
    }
    if (!s && off != end)
        s = defo_error(DEFO_ERR_PARSE, "%s: %zu unexpected bytes", what, end - off);
    /* Valid: re-apply the schedule up to the checkpoint, then the state. */
    if (!s) {
        for (int i = 0; i < nbodies; i++) sim->applied[i] = 0;
        sim->frame = frame;
        if (frame > 0) s = apply_changes(sim, (double)(frame - 1) / sim->scene->fps);
    }
    for (int i = 0; i < nbodies && !s; i++) {
        const unsigned char *xv = buf + xv_off[i];
        if (sim->frac && sim->frac[i]) {
            s = restore_fracture_body(sim, i, nodes[i], xv, buf + fr_off[i]);
            continue;
        }
        size_t cnt = 3 * (size_t)nodes[i];
        double *x = defo_malloc(cnt * sizeof(double) + 1);
        double *v = defo_malloc(cnt * sizeof(double) + 1);
        if (!x || !v) {
            s = defo_error_oom("checkpoint state", cnt * sizeof(double));
        } else {
            memcpy(x, xv, cnt * sizeof(double));
            memcpy(v, xv + cnt * sizeof(double), cnt * sizeof(double));
            s = defo_body_set_state(sim->world, sim->ids[i], x, v);
        }
        defo_free(x);
        defo_free(v);
    }
    for (int i = 0; !s && sim->plast && i < nbodies; i++)
        if (sim->plast[i])
            memcpy(defo_plasticity_strain(sim->plast[i]), buf + pl_off[i], plastic_bytes(sim, i));
    if (!s) s = defo_world_set_time(sim->world, t);
    for (int i = 0; !s && sim->be && i < nbodies; i++)
        if (!(sim->frac && sim->frac[i])) state_to_stepper(sim, i);
    defo_free(xv_off);
    defo_free(pl_off);
    defo_free(fr_off);
    defo_free(nodes);
    return s;
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
    defo_status s = got != (size_t)size ? defo_error(DEFO_ERR_IO, "%s: read error", path)
                                        : restore(sim, buf, (size_t)size, path);
    defo_free(buf);
    return s;
}
