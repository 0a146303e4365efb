/*
 * world/distribute.c — one world on several processes (defo/world.h
 * "distributed runs"; docs/distributed.md).
 *
 * Every process builds the same world from the same scene.  Distributing
 * it gives each body a part per process (defo/partition.h): a local mesh
 * with all the body's nodes and the process's local elements (those
 * touching a node it owns, ascending), its rest data and a force model on
 * it whose outputs are made whole (defo_force_model_set_share): the
 * stepper's view of the body points at that model, so a stepper computes
 * only the process's elements and sees whole vectors.  The state stays
 * whole on every process: positions and velocities follow from whole
 * vectors by the same arithmetic everywhere (the solutions of the
 * distributed solves return whole too), which keeps outputs, statistics,
 * collisions with colliders and checkpoints exactly those a process holds
 * alone, and lets a run resume on any number of processes.
 *
 * Making a node vector whole: each process packs the values of the nodes
 * it owns (ascending), an allgatherv hands every process every owner's
 * values, each unpacks them by the owners' node lists (the same on every
 * process: the partition is).  A ghost's value is its owner's bit for bit.
 *
 * Refused (not distributed yet), naming the body: fracture (the partition
 * would follow the topology), plasticity (its per-point state lives with
 * the whole body's force model), lazily kept corotated rotations (their
 * checkpointed record is per element of the whole body), contact between
 * bodies (its search is not split), Newton or implicit integrators whose
 * linear solves are not the distributed backend ("solver": "petsc").
 *
 * Memory per process: the whole node state and mesh (as on one process),
 * the local elements' rest data, force state and matrix rows; the whole
 * body's force model stays for what is computed from the whole state on
 * one process (outputs: fields, energies).
 */
#include "world/world_internal.h"

#include "defo/partition.h"

#include <math.h>
#include <string.h>

struct world_part {
    const defo_comm *comm;
    defo_partition *P;
    defo_index *elems; /* local elements (body element indices, ascending) */
    unsigned char *counted;
    defo_index ne;
    defo_mesh *mesh; /* all nodes, the local elements */
    defo_element_rest *rest;
    defo_force_model *force;
    double *fibres;     /* the local elements' fibre directions, or NULL */
    double *activation; /* the local elements' levels, or NULL */
    /* making vectors whole */
    defo_index n;
    defo_index *order;    /* n: nodes by owner, ascending within an owner */
    int *count, *displ;   /* size each: nodes per owner, their start in order */
    int *wcount, *wdispl; /* size each: the same times the width of an exchange */
    double *send, *recv;  /* 9 × own nodes, 9 n */
    defo_layout layout;
    defo_force_share share;
};

defo_distribute_def defo_default_distribute_def(void) {
    defo_distribute_def d;
    memset(&d, 0, sizeof d);
    d.method = DEFO_PARTITION_AUTO;
    return d;
}

const defo_comm *defo_world_comm(const defo_world *w) {
    return w ? w->comm : NULL;
}

void defo_world_part_free(world_body *b) {
    struct world_part *p = b->part;
    if (!p) return;
    defo_force_model_destroy(p->force);
    defo_element_rest_destroy(p->rest);
    defo_mesh_destroy(p->mesh);
    defo_partition_destroy(p->P);
    void *a[] = {p->elems, p->counted, p->fibres, p->activation, p->order, p->count,
                 p->displ, p->wcount,  p->wdispl, p->send,       p->recv};
    for (size_t k = 0; k < sizeof a / sizeof a[0]; k++) defo_free(a[k]);
    defo_free(p);
    b->part = NULL;
}

/* ------------------------------------------------------------ whole vectors */
static defo_status complete(void *ctx, double *v, int width) {
    struct world_part *p = ctx;
    const defo_comm *c = p->comm;
    const int me = c->rank;
    const size_t w = (size_t)width;
    const defo_index *mine = p->order + p->displ[me];
    for (int k = 0; k < p->count[me]; k++)
        memcpy(p->send + w * (size_t)k, v + w * (size_t)mine[k], w * sizeof(double));
    for (int r = 0; r < c->size; r++) {
        p->wcount[r] = width * p->count[r];
        p->wdispl[r] = width * p->displ[r];
    }
    defo_status s = c->allgatherv(c->ctx, p->send, p->wcount[me], p->recv, p->wcount, p->wdispl);
    if (s) return defo_error_prefix("making a node vector whole");
    for (defo_index k = 0; k < p->n; k++)
        memcpy(v + w * (size_t)p->order[k], p->recv + w * (size_t)k, w * sizeof(double));
    return DEFO_OK;
}

defo_status defo_body_complete(defo_world *w, defo_body_id id, double *v, int width) {
    const defo_partition *P = defo_body_partition(w, id);
    if (!v || (width != 3 && width != 9))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_body_complete: width %d", width);
    if (!P) return DEFO_OK;
    return complete(w->bodies[id.index].part, v, width);
}

const defo_partition *defo_body_partition(const defo_world *w, defo_body_id id) {
    if (!w || !defo_body_is_valid(w, id)) return NULL;
    const struct world_part *p = w->bodies[id.index].part;
    return p ? p->P : NULL;
}

/* ------------------------------------------------------------ a body's part */
/* The partition, the local elements and mesh, the exchange's lists: once
 * per body (the topology does not change in a distributed run). */
static defo_status part_create(defo_world *w, world_body *b, int index, struct world_part **out) {
    const defo_comm *c = w->comm;
    struct world_part *p = defo_calloc(1, sizeof *p);
    if (!p) return defo_error_oom("distributed body", sizeof *p);
    *out = p;
    p->comm = c;
    const defo_mesh *m = b->mesh;
    defo_status s;
    if (w->dist.part_of) {
        int *parts = defo_malloc((size_t)m->num_elems * sizeof *parts + 1);
        if (!parts) return defo_error_oom("element parts", (size_t)m->num_elems * sizeof *parts);
        for (defo_index e = 0; e < m->num_elems; e++)
            parts[e] = w->dist.part_of(w->dist.ctx, index, e);
        s = defo_partition_from_parts(m, c->size, parts, &p->P);
        defo_free(parts);
    } else {
        s = defo_partition_create(m, c->size, w->dist.method, &p->P);
    }
    if (!s) s = defo_partition_local(p->P, m, c->rank, &p->elems, &p->counted, &p->ne);
    if (s) return s;
    /* the local mesh: every node, the local elements in ascending order */
    const int npe = m->nodes_per_elem;
    s = defo_mesh_create(m->order, &p->mesh);
    if (!s) s = defo_mesh_reserve(p->mesh, m->num_nodes, p->ne, 0);
    if (s) return s;
    memcpy(p->mesh->x, m->x, 3 * (size_t)m->num_nodes * sizeof(double));
    p->mesh->num_nodes = m->num_nodes;
    for (defo_index k = 0; k < p->ne; k++)
        memcpy(p->mesh->elems + (size_t)k * (size_t)npe, m->elems + (size_t)p->elems[k] * npe,
               (size_t)npe * sizeof(defo_index));
    p->mesh->num_elems = p->ne;
    s = defo_element_rest_create(p->mesh, &p->rest);
    if (s) return s;
    if (b->fibres) { /* the directions of the local elements' points */
        const int nq = defo_element_rest_ops(p->rest)->stiffness.num_points;
        const size_t per = 3 * (size_t)nq;
        p->fibres = defo_malloc((size_t)p->ne * per * sizeof(double) + 1);
        if (!p->fibres) return defo_error_oom("fibre directions", (size_t)p->ne * per * 8);
        for (defo_index k = 0; k < p->ne; k++)
            memcpy(p->fibres + (size_t)k * per, b->fibres + (size_t)p->elems[k] * per,
                   per * sizeof(double));
        s = defo_element_rest_set_fibres(p->rest, p->fibres);
        if (s) return s;
    }
    /* the exchange: nodes by owner */
    const defo_index n = m->num_nodes;
    p->n = n;
    p->order = defo_malloc((size_t)n * sizeof *p->order + 1);
    p->count = defo_calloc((size_t)c->size, sizeof *p->count);
    p->displ = defo_calloc((size_t)c->size, sizeof *p->displ);
    p->wcount = defo_calloc((size_t)c->size, sizeof *p->wcount);
    p->wdispl = defo_calloc((size_t)c->size, sizeof *p->wdispl);
    if (!p->order || !p->count || !p->displ || !p->wcount || !p->wdispl)
        return defo_error_oom("node exchange", (size_t)n * 8);
    for (defo_index i = 0; i < n; i++) p->count[p->P->node_owner[i]]++;
    for (int r = 1; r < c->size; r++) p->displ[r] = p->displ[r - 1] + p->count[r - 1];
    for (int r = 0; r < c->size; r++) p->wcount[r] = p->displ[r]; /* fill cursor */
    for (defo_index i = 0; i < n; i++) p->order[p->wcount[p->P->node_owner[i]]++] = i;
    if ((int64_t)9 * n > INT32_MAX)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "body '%s': %ld nodes are too many for one exchange message", b->name,
                          (long)n);
    p->send = defo_malloc(9 * (size_t)p->count[c->rank] * sizeof(double) + 1);
    p->recv = defo_malloc(9 * (size_t)n * sizeof(double) + 1);
    if (!p->send || !p->recv) return defo_error_oom("node exchange", 90 * (size_t)n);
    p->layout.rank = c->rank;
    p->layout.size = c->size;
    p->layout.owner = p->P->node_owner;
    p->share.comm = c;
    p->share.counted = p->counted;
    p->share.complete = complete;
    p->share.ctx = p;
    return DEFO_OK;
}

void defo_world_part_sync(world_body *b) {
    struct world_part *p = b->part;
    if (!p || !b->activation || !p->activation) return;
    for (defo_index k = 0; k < p->ne; k++) p->activation[k] = b->activation[p->elems[k]];
}

defo_status defo_world_part_rebuild(defo_world *w, world_body *b) {
    (void)w;
    struct world_part *p = b->part;
    defo_force_model *force = NULL;
    defo_status s = defo_force_model_create(p->mesh, p->rest, b->mat, &b->force_def, &force);
    if (!s && b->activation && !p->activation) {
        p->activation = defo_calloc((size_t)p->ne + 1, sizeof(double));
        if (!p->activation) s = defo_error_oom("activation", (size_t)p->ne * sizeof(double));
    }
    if (!s) {
        defo_world_part_sync(b);
        defo_force_model_set_activation(force, p->activation);
        s = defo_force_model_set_share(force, &p->share);
    }
    if (s) {
        defo_force_model_destroy(force);
        return defo_error_prefix("body '%s': its part on this process", b->name);
    }
    defo_force_model_destroy(p->force);
    p->force = force;
    b->sb.force = force;
    b->sb.mesh = p->mesh;
    b->sb.layout = &p->layout;
    return DEFO_OK;
}

/* ------------------------------------------------------------ distribute */
/* What a distributed run does not do yet, for body b (or DEFO_OK). */
static defo_status refusal(const defo_world *w, const world_body *b) {
    const char *what = NULL;
    if (b->frac)
        what = "fracture changes the topology, which the partition does not follow yet";
    else if (b->plast)
        what = "plasticity keeps its per-point state with the whole body's force model";
    else if (b->force_def.formulation == DEFO_FORMULATION_COROTATED && !b->force_def.linear &&
             b->force_def.rotation_interval != 1)
        what = "lazily kept rotations (rotation_interval other than 1) are checkpointed per "
               "element of the whole body";
    if (what)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "body '%s': %s: distributed runs do not take it yet (run it on one "
                          "process)",
                          b->name, what);
    const world_integrator *wi = &w->integrators[b->integrator];
    if (wi->def.kind != DEFO_INTEGRATOR_NEWMARK && wi->def.linear.method != DEFO_LINEAR_BACKEND)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "body '%s': its integrator (%s) solves with %s, which runs on one "
                          "process: a distributed run needs \"solver\": \"petsc\"",
                          b->name, wi->ops->name,
                          wi->def.linear.method == DEFO_LINEAR_CHOLESKY ? "cholesky" : "pcg");
    return DEFO_OK;
}

/* The same world on every process?  A few sums of what the scene builds. */
static defo_status same_world(defo_world *w) {
    double f[8] = {
        (double)w->num_bodies, (double)w->num_integrators, (double)w->num_colliders, 0, 0, 0, 0, 0};
    for (int i = 0; i < w->num_bodies; i++) {
        const world_body *b = &w->bodies[i];
        f[3] += b->n;
        f[4] += b->mesh->num_elems;
        for (size_t k = 0; k < 3 * (size_t)b->n; k++) f[5] += fabs(b->x[k]) * (double)(k % 7 + 1);
        for (defo_index k = 0; k < b->n; k++) f[6] += b->mass[k];
    }
    for (int i = 0; i < w->num_integrators; i++)
        f[7] += (double)(w->integrators[i].def.kind + 1) * (i + 1) +
                w->integrators[i].def.tolerance + w->integrators[i].def.time_step;
    double lo[8], hi[8];
    memcpy(lo, f, sizeof f);
    memcpy(hi, f, sizeof f);
    defo_status s = defo_comm_min(w->comm, lo, 8);
    if (!s) s = defo_comm_max(w->comm, hi, 8);
    if (s) return s;
    static const char *const what[8] = {"bodies",   "integrators", "colliders", "nodes",
                                        "elements", "positions",   "masses",    "integrators"};
    for (int k = 0; k < 8; k++)
        if (lo[k] != hi[k])
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "the processes of this run built different worlds (their %s "
                              "differ: %.17g on one, %.17g on another): every process must read "
                              "the same scene and files",
                              what[k], lo[k], hi[k]);
    return DEFO_OK;
}

defo_status defo_world_distribute(defo_world *w, const defo_comm *comm,
                                  const defo_distribute_def *def) {
    if (!w || !comm || comm->size < 1 || comm->rank < 0 || comm->rank >= comm->size ||
        !comm->allgather || !comm->allgatherv || !comm->broadcast)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_distribute: a complete comm");
    if (w->comm) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "the world is distributed already");
    if (comm->size == 1) return DEFO_OK;
    w->dist = def ? *def : defo_default_distribute_def();
    const defo_comm *saved = w->comm;
    w->comm = comm;
    defo_status s = same_world(w);
    if (!s && defo_world_has_body_contact(w))
        s = defo_error(DEFO_ERR_UNSUPPORTED,
                       "contact between bodies: distributed runs do not search it yet (run the "
                       "scene on one process, or set the bodies' collide to false)");
    for (int i = 0; i < w->num_bodies && !s; i++)
        if (w->bodies[i].generation) s = refusal(w, &w->bodies[i]);
    /* every process has refused or none (the refusals are the same world's) */
    s = defo_comm_agree(comm, s);
    for (int i = 0; i < w->num_bodies && !s; i++) {
        world_body *b = &w->bodies[i];
        if (!b->generation) continue;
        s = part_create(w, b, i, &b->part);
        if (!s) s = defo_world_part_rebuild(w, b);
        if (s) defo_error_prefix("body '%s'", b->name);
        s = defo_comm_agree(comm, s);
    }
    if (s) {
        for (int i = 0; i < w->num_bodies; i++) {
            world_body *b = &w->bodies[i];
            if (!b->part) continue;
            defo_world_part_free(b);
            b->sb.force = b->force;
            b->sb.mesh = b->mesh;
            b->sb.layout = NULL;
        }
        w->comm = saved;
        return s;
    }
    /* what the steppers kept of the whole bodies' models */
    for (int i = 0; i < w->num_bodies; i++) w->bodies[i].sb.changed |= DEFO_CHANGED_MODEL;
    return DEFO_OK;
}
