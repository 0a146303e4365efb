/*
 * world/world_internal.h — the body and world structs shared by world.c and
 * the integrators (src/integrator/).  Never installed.
 *
 * Hot state (x, v, forces) and the per-step scratch are flat 3n arrays
 * allocated once when the body is added: a warm step allocates nothing.
 */
#ifndef DEFO_WORLD_INTERNAL_H
#define DEFO_WORLD_INTERNAL_H

#include "defo/force.h"
#include "defo/solver.h"
#include "defo/world.h"

#include "base/base.h"

typedef struct defo_body {
    char name[DEFO_NAME_MAX];
    uint32_t generation; /* 0: slot unused */
    defo_mesh *mesh;     /* owned copy (rest positions) */
    defo_rest rest;
    defo_material *mat;
    defo_force *force; /* holds U, B̂m, σ of the current x */
    defo_index n;
    double *x, *v; /* current state */
    double *mass;  /* lumped, kg */
    double *fe;    /* elastic force at x (valid unless dirty) */
    double *fx;    /* external dead load [N] per node, set by the caller (0 initially) */
    double elastic_energy;
    double elastic_energy_new; /* at x_new, during a step */
    unsigned char *fixed;
    int dirty; /* x may have changed outside a step: recompute fe */
    /* scratch, 3n each unless noted */
    double *x_new, *v_new, *fe_new, *vt, *rhs, *tmp, *normal, *inv_diag;
    double *cg_work;           /* 12n */
    unsigned char *constraint; /* n: DEFO_CONSTRAINT_* kinds for CG */
    unsigned char *collided;   /* n */
    int stepped;               /* force rotations were moved to x_new this substep */
} defo_body;

struct defo_world {
    defo_world_def def;
    defo_body *bodies;
    int num_bodies, body_capacity;
    defo_collider **colliders;
    int num_colliders, collider_capacity;
    double time;
    defo_step_stats stats;
};

/* Bring fe (and the stored rotations) up to date with x if the body is
 * dirty.  Errors name the body. */
defo_status defo_body_refresh(defo_body *b);

/* ITF04 §9 Newmark step of length dt for every body from world->time;
 * accumulates into world->stats; on error no body's state changes. */
defo_status defo_newmark_step(defo_world *world, double dt);

#endif
