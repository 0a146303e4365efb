/*
 * world/world_internal.h — the world's layout, shared by world.c (bodies,
 * step order), contact.c (the collision callbacks handed to the steppers)
 * and checkpoint.c.  Never installed; no other module includes it.
 */
#ifndef DEFO_WORLD_INTERNAL_H
#define DEFO_WORLD_INTERNAL_H

#include "defo/collision.h"
#include "defo/contact.h"
#include "defo/element.h"
#include "defo/world.h"

#include "base/base.h"

/* A prescribed node set: a scripted motion of the rest positions, or an
 * explicit transform. */
typedef struct world_set {
    defo_motion_def motion;
    int explicit_transform;
    double R[9], T[3];
} world_set;

/* A dead traction on fixed element faces (defo_body_add_traction). */
typedef struct world_traction {
    double t[3];
    defo_index count;
    defo_index *elem;
    int8_t *face;
    /* the faces as added: rest triangles (9 each) of original elements, so
     * bisected faces stay loaded (topology.c) */
    defo_index rec_count;
    double *corners;
    defo_index *origin;
} world_traction;

/* An activation group (defo_body_add_activation): its schedule, or a
 * controller's constant level. */
typedef struct world_activation {
    int num_keys;
    double *times, *levels;
    double level;
    defo_interpolation interpolation;
} world_activation;

/* A material region (defo_body_add_material_region): its elements take its
 * material and, when it has one, its plasticity parameter set. */
typedef struct world_region {
    defo_material_def mat_def;
    defo_material *mat;
    int plast_set; /* its set in the body's plasticity; 0: the body's own */
} world_region;

typedef struct world_body {
    uint32_t generation; /* 0: free slot */
    /* 1: removed (a hybrid body that broke into pieces): its id is stale,
     * its data kept so a restored checkpoint can bring it back */
    int removed;
    /* −1: added by the caller; else the body it broke off (a fragment made
     * by the world: origin_mesh is its mesh when it was made) */
    int origin;
    defo_mesh *origin_mesh;
    defo_fracture_def frac_def;
    char name[DEFO_NAME_MAX];
    defo_mesh *mesh; /* own copy: fracture appends nodes and relinks elements */
    defo_element_rest *rest;
    defo_material_def mat_def;
    defo_material *mat;
    defo_force_model_def force_def;
    defo_force_model *force;
    int integrator;
    defo_index n, cap; /* nodes, and what the per-node arrays hold */
    double *x, *v, *mass;
    double *gravity_load;  /* 3n: ∫ρN_a dV · g (consistent) */
    double *dead;          /* 3n: the user's dead loads */
    double *traction_load; /* 3n: Σ of the tractions' consistent loads */
    double *load;          /* 3n: dead + tractions + gravity, what the stepper sees */
    double *target;        /* 3n: prescribed positions at the end of the step */
    double *work;          /* n: per-node scratch (energy sums, penalty) */
    unsigned char *prescribed;
    /* n: nodes of a piece that broke off a body under an equilibrium
     * integrator, held rigidly where it broke (topology.c) */
    unsigned char *held;
    int *set_of; /* n: prescribed set of each node, −1 for none */
    world_set *sets;
    int num_sets;
    world_traction *tractions;
    int num_tractions;
    defo_index *parent; /* n */
    defo_index n0;      /* nodes before any split */
    defo_index ne0;     /* elements before any split */
    double mean_edge;   /* rest, for tolerances and penalty stiffness */
    defo_plasticity *plast;
    /* annealing (defo_body_anneal; NULL until the first): each element's
     * density over its material's (it keeps its mass as its rest volume
     * changes), and the rest positions the prescribed motions are written
     * for (the body's first rest shape) */
    double *density_scale;
    double *X0;
    double *fibres0; /* the fibre directions of the first rest shape (bodies with fibres) */
    world_region *regions;
    int num_regions;
    int32_t *part_of; /* per element: 0 the body's material, k + 1 region k's */
    defo_fracture *frac;
    int frac_paused;        /* defo_body_pause_fracture */
    double *fibres;         /* 3 per (element, point): ITF04 §6.1 directions, or NULL */
    world_activation *acts; /* activation groups */
    int num_acts;
    int *act_of;              /* per element: its group, −1 none (NULL without groups) */
    double *activation;       /* per element: the levels the force model reads */
    defo_contact_source *src; /* TSIF05 §10 penalty sources (equilibrium solvers) */
    int num_src;
    /* contact with other bodies (contact.c) */
    int collide, self_contact;
    double friction;
    defo_contact_surface *surface; /* NULL: does not collide */
    double *inv_mass;              /* n: 1/m, 0 for prescribed nodes (the response) */
    double *in_contact; /* n: 1 for nodes of the last detection's touching pairs, else 0 */
    /* hybrid: the deformed shape of the frame's last impact analysis, for
     * the frame's stress fields (defo_body_fields); impact_n 0: none */
    double *impact_x;
    defo_index impact_cap, impact_n;
    defo_step_body sb;       /* the stepper's view */
    struct world_part *part; /* a distributed run: this process's part (distribute.c) */
} world_body;

typedef struct world_integrator {
    defo_integrator_def def;
    const defo_integrator_ops *ops;
    defo_stepper *stepper;
} world_integrator;

/* A growable byte buffer. */
typedef struct world_buf {
    unsigned char *p;
    size_t n, cap;
    int oom;
} world_buf;

struct defo_world {
    defo_world_def def;
    uint32_t serial;
    world_body *bodies;
    int num_bodies, body_capacity;
    world_integrator *integrators;
    int num_integrators;
    defo_collider **colliders;
    int num_colliders, collider_capacity;
    double time;
    int frame;
    defo_step_stats stats;
    world_buf snapshot;   /* the state at the frame's start */
    defo_step_body **set; /* scratch: the bodies of one integrator */
    /* contact between bodies (contact.c) */
    defo_contact_def contact;
    defo_contact_body *cbody; /* scratch: one per body */
    int *call_of;             /* scratch: each body's index in a stepper's call, or −1 */
    const double **cx;        /* scratch: per-surface pointers */
    double **cf, **cv;
    const double **cm, **cs;
    int *surface_body; /* the body of each surface of a call */
    int num_surfaces;
    defo_contact_list pairs;
    defo_body_point *points; /* the rigid steppers' contact points (body_points) */
    size_t points_cap;
    int respond_pairs; /* pairs holds the last explicit position pass's */
    defo_contact_term *terms;
    double *hess; /* terms_cap: each pair's ψ'' */
    size_t terms_cap;
    double *zeros; /* for bodies held still: no inverse mass */
    defo_index zeros_n;
    double *pair_work; /* the response's, 7 per pair */
    size_t pair_work_cap;
    /* the Newton solve in progress (contact_begin): each body's positions at
     * its start (by body index; NULL outside it), the step, the friction
     * lagged from there and its Hessians */
    const double **start;
    double start_dt;
    defo_contact_friction *fric;
    size_t num_fric, fric_cap;
    double *fric_S;
    /* a distributed run (distribute.c): the processes, NULL on one */
    const defo_comm *comm;
    defo_distribute_def dist;
};

/* The length that scales a body's stiffness per node, (2μ + λ) times it:
 * the mean rest edge of a solid, the thickness of a shell (tri3, ITF04 §8:
 * its in-plane stiffness per node is E h, not E times an edge). */
static inline double defo_world_body_length(const world_body *b) {
    return b->mesh->nodes_per_elem == 3 ? b->mat_def.thickness : b->mean_edge;
}

/* activation.c: the levels at time t into b->activation; 1 when any changed */
int defo_world_activation_update(world_body *b, double t);
void defo_world_activation_free(world_body *b);

/* contact.c: the step context's callbacks */
defo_status defo_world_respond(void *ctx, const defo_step_body *b, double t_end, double dt,
                               double tau, const double *x_prev, double *x, double *v,
                               unsigned char *constraint, double *normal, double *friction,
                               defo_index *hits);
defo_status defo_world_penalty(void *ctx, const defo_step_body *b, double t, const double *x,
                               const double *x_start, double dt, double *energy, double *force,
                               double *blocks, defo_index *count, defo_index *capped);
defo_status defo_world_probe(void *ctx, const defo_step_body *b, double t, const double *x,
                             double margin, defo_node_contact *out, defo_index cap,
                             defo_index *count);
/* (Re)build body b's penalty sources for its integrator's stiffness, and
 * its contact surface for its (new) mesh. */
defo_status defo_world_contact_sources(defo_world *w, world_body *b);
/* Body–body contact (the step context's contact, contact_bound and
 * contact_respond; NULL ctx entries when fewer than two surfaces). */
defo_status defo_world_contact_begin(void *ctx, defo_step_body *const *bodies, int count,
                                     const double *const *x_start, double dt);
defo_status defo_world_body_contact(void *ctx, defo_step_body *const *bodies, int count,
                                    const double *const *x, int exact, double *energy,
                                    double *const *force, const defo_contact_term **terms,
                                    size_t *num_terms, defo_index *held, int *lagged);
double defo_world_contact_bound(void *ctx, defo_step_body *const *bodies, int count,
                                const double *const *x, const double *const *dx);
defo_status defo_world_contact_respond(void *ctx, defo_step_body *const *bodies, int count,
                                       double dt, double tau, const double *const *x_prev,
                                       double *const *x, double *const *v, int positions,
                                       defo_index *pairs);
defo_status defo_world_body_points(void *ctx, defo_step_body *const *bodies, int count,
                                   const defo_body_point **points, size_t *num_points);
/* 1 when body–body contact can act (enabled, and two colliding bodies or
 * one with self contact). */
int defo_world_has_body_contact(const defo_world *w);
/* Free a body's contact data. */
void defo_world_contact_free(world_body *b);

/* world.c, used by checkpoint.c */
void defo_world_body_free(defo_world *w, world_body *b);
defo_status defo_world_body_resize(defo_world *w, world_body *b, defo_index n);
defo_status defo_world_body_rebuild(defo_world *w, world_body *b, defo_index old_n);
/* The stepper's loads and residual scales from the dead loads, tractions and
 * gravity (every frame start, and after a topology change). */
defo_status defo_world_body_loads(world_body *b);
/* Field by field (a struct's padding may differ). */
int defo_world_material_equal(const defo_material_def *a, const defo_material_def *b);
/* The plasticity parameter sets of body b from its regions (after a region
 * got its own plasticity). */
defo_status defo_world_plastic_sets(world_body *b);
/* Each region's set back from the body's plasticity (after a restore). */
void defo_world_region_sets(world_body *b);

/* world.c: a body with initial positions and velocities (NULL: rest, and
 * the def's velocity and spin) */
defo_status defo_world_add_body_state(defo_world *w, const defo_body_def *def, const double *x,
                                      const double *v, defo_body_id *out);
/* a live body of the world (not a free slot, not removed) */
static inline int defo_world_live(const world_body *b) {
    return b->generation != 0 && !b->removed;
}

/* fragments.c: keep a hybrid body's impact shape (its x just after the
 * analysis) for the frame's stress fields, which the next step's rigid
 * placement would otherwise undo; the copy's capacity is kept. */
defo_status defo_world_hold_impact(world_body *b);
/* fragments.c: the hybrid integrator's impacts and the pieces they make */
defo_status defo_world_hybrid_impacts(defo_world *w, int integ, double t);

/* topology.c: a fracture pass and what it changes besides the mesh */
defo_status defo_world_fracture(defo_world *w, world_body *b, double t, double dt);
defo_status defo_world_traction_record(world_body *b, world_traction *t);
defo_status defo_world_traction_remap(world_body *b, world_traction *t);
/* Per-element data (plastic state, material region, density scale, fibre
 * directions) for the mesh's element count: after a pass (parent: the
 * pass's defo_fracture_elem_parent; elements from old_ne on are new) each
 * new element takes its parent's; after a restore (parent NULL) each
 * element past the originals its original's, and the plastic state is made
 * anew for the checkpoint's to overwrite. */
defo_status defo_world_elements_follow(world_body *b, defo_index old_ne, const defo_index *parent);
/* distribute.c: body b's part again after its force model was rebuilt
 * (the stepper's view then points at the part); the step's per-element
 * inputs (activation levels) copied to the part; the part freed */
defo_status defo_world_part_rebuild(defo_world *w, world_body *b);
void defo_world_part_sync(world_body *b);
void defo_world_part_free(world_body *b);

/* checkpoint.c */
void defo_world_buf_put(world_buf *b, const void *src, size_t n);
/* the state at the frame's start, kept for a failed or interrupted frame */
defo_status defo_world_save_snapshot(defo_world *w);
defo_status defo_world_restore_snapshot(defo_world *w);

#endif
