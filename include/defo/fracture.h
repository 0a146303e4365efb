/*
 * defo/fracture.h — brittle fracture along planes (MMDJ01 §2.5, after the
 * maximum principal stress criterion of MG04 §4), on any body of the world
 * whatever integrator steps it (tet4 and tet10), growing per unit of time.
 *
 * Every call (before each step, at time t, for a step of dt): for every
 * element the stress at its quadrature points (defo_force_model_stress: the
 * Cauchy stress of an invertible body, MG04's σ = E Be(Reᵀx − x0) of a
 * corotated one) averaged over the incubation time τ — S̄ += (1 −
 * e^(−dt/τ)) (S − S̄), the exact exponential average of a stress held over
 * the step, so a frame-long step sees its stress and a short one the last
 * ~τ of them: a crack needs its stress held about as long as the crack
 * front takes to cross an element (the incubation time criterion of dynamic
 * fracture), not the one-step overshoot of an undamped integrator — and of
 * S̄ the largest principal value σ_max over the points and its unit
 * direction n.
 *
 * A crack starts at the element of largest σ_max above the threshold (ties:
 * the lower index) among those holding no held node (a prescribed node: the
 * stress next to a grip is the grip's, a crack may run through there but
 * not start there): its plane α passes through that element's rest centroid
 * p (the centroid of the original element it came from) with the rest normal
 * N ∝ Fᵀn (the material plane whose current normal is n).  Everything a crack
 * does is decided in rest coordinates, so it does not depend on how the body
 * moves while it grows.  Its front runs out from p at crack_speed: by the end
 * of a step it has reached the elements whose (original) rest centroid lies
 * within ρ = min(radius, crack_speed · (t + dt − t_start)) of p — so a crack
 * covers the same elements after the same time whatever the step (a static
 * integrator's frame-long step reaches radius at once).  Within reach:
 *
 *   tet4: every edge of a reached element whose ends lie strictly on
 *     opposite sides of α is bisected where α crosses it, and every element
 *     holding that edge (reached or not: the mesh stays conforming) is split
 *     in two; the edges are bisected in one global order (by node index), so
 *     the two elements on either side of a face split it alike.  Afterwards
 *     no element has corners on both sides.  Slivers: a node closer to α than
 *     `sliver` times its longest edge counts as lying on α (its side is 0; the
 *     crack passes through it), so every cut edge is cut at a fraction in
 *     [sliver, 1 − sliver] and each bisection keeps at least that fraction of
 *     the volume on either side; the crack surface then deviates from α by at
 *     most sliver · (the longest edge at a node).
 *   tet10: elements are not split; each reached element takes the side of
 *     its centroid (MMDJ01 §2.5 as written).
 *
 * Then every face shared by a reached element on the positive side and a
 * reached element on the negative side opens: each node of an opened face
 * gets one copy per group of its elements still connected through unopened
 * faces around it (tet10: edge nodes too, around their edge); the group with
 * the lowest element keeps the node.  Nodes at the edge of the reached
 * region stay shared (the crack front).  New nodes are appended: a cut
 * point is (1 − w)·a + w·b of its edge's ends (rest position, and the caller
 * interpolates its state), a copy is its node (w = 0); new elements are
 * appended and keep their parent's original element.  No node moves, so no
 * element inverts; rest data of untouched elements never changes.
 *
 * One crack at a time per body: a new one starts when the last has reached
 * its radius (or the whole body) and then crack_speed has had the time to
 * carry the unloading across it again (its radius / crack_speed) — the
 * stresses that started it have relaxed, whatever the integrator — so the
 * split budget is per unit of time, not per step.
 */
#ifndef DEFO_FRACTURE_H
#define DEFO_FRACTURE_H

#include "defo/base.h"
#include "defo/force_model.h"
#include "defo/mesh.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct defo_fracture_def {
    /* toughness: the largest tensile principal stress that breaks [Pa], > 0;
     * default INFINITY (never); MG04 Table 1 "dragon": 60e3 */
    double threshold;
    /* r_frac: a crack reaches the elements whose rest centroid lies within
     * it of its origin [m], > 0; default INFINITY (through the whole body) */
    double radius;
    /* the crack front's speed [m/s], > 0 (INFINITY: at once).  0 (default)
     * in a body definition: the body's longitudinal wave speed √((λ+2μ)/ρ)
     * (MMDJ01 §2.5: brittle cracks run at about the speed of sound), filled
     * in by the world; defo_fracture_create itself needs it > 0. */
    double crack_speed;
    /* tet4: a node within this fraction of its longest edge from the plane
     * lies on it; [0, 0.45]; default 0.2 */
    double sliver;
    /* the incubation time τ [s] ≥ 0 over which the stress is averaged before
     * it is compared with the threshold; 0 (default): two crossings of a
     * mean element edge at crack_speed */
    double incubation;
} defo_fracture_def;
DEFO_API defo_fracture_def defo_default_fracture_def(void);
/* DEFO_ERR_INVALID_ARGUMENT naming the field: "fracture.threshold: 0 is not
 * > 0"; crack_speed may be 0 here (the world's default). */
DEFO_API defo_status defo_fracture_def_validate(const defo_fracture_def *def);

typedef struct defo_fracture_stats {
    defo_index over_threshold; /* elements with σ_max > threshold */
    int cracks;                /* cracks started in the call (0 or 1) */
    int growing;               /* a crack is still growing after the call */
    defo_index edges_cut;      /* edges bisected (tet4) */
    defo_index faces_opened;   /* faces opened */
    defo_index nodes_added;    /* cut points and copies appended */
    defo_index elems_added;    /* elements appended by bisections */
    defo_index components;     /* connected components after the call */
    double max_stress;         /* largest σ_max over all elements [Pa] */
    defo_index max_stress_elem;
} defo_fracture_stats;

/* A crack: where it started and how far it has grown. */
typedef struct defo_crack {
    double origin[3];         /* p, rest coordinates [m] */
    double normal[3];         /* N, unit, rest coordinates */
    double current_normal[3]; /* n, unit, world axes, when it started */
    double stress;            /* σ_max that started it [Pa] */
    defo_index elem;          /* the element it started in (index then) */
    double t_start;           /* [s] */
    double reach;             /* ρ now [m] */
    int done;                 /* reached its radius or the whole body */
} defo_crack;

typedef struct defo_fracture defo_fracture;

/* Fracture state for mesh (tet4 or tet10) as it is now (its elements become
 * the original elements).  def->crack_speed must be > 0. */
DEFO_API defo_status defo_fracture_create(const defo_mesh *mesh, const defo_fracture_def *def,
                                          defo_fracture **out);
DEFO_API void defo_fracture_destroy(defo_fracture *f);

/* One pass at time t for a step of dt > 0 (INFINITY: a crack reaches its
 * radius at once and the next may start) on mesh at positions x with its
 * force model fm (evaluated at x here); held (one flag per node, may be
 * NULL): the prescribed nodes.  Nodes and elements are appended to
 * mesh and connectivity changes; x itself is not touched: the caller grows
 * its state arrays (defo_fracture_node_origin says how to fill new nodes)
 * and rebuilds the force model.  stats may be NULL. */
DEFO_API defo_status defo_fracture_step(defo_fracture *f, defo_mesh *mesh, defo_force_model *fm,
                                        const double *x, const unsigned char *held, double t,
                                        double dt, defo_fracture_stats *stats);

/* Node i is (1 − w[i])·node a[i] + w[i]·node b[i] (original nodes: a = b =
 * i, w = 0; a copy: its node, w = 0; a cut point: its edge's ends); a[i] and
 * b[i] are < i.  num_nodes entries each; any output may be NULL. */
DEFO_API void defo_fracture_node_origin(const defo_fracture *f, const defo_index **a,
                                        const defo_index **b, const double **w);
/* The original element of each element (num_elems entries). */
DEFO_API const defo_index *defo_fracture_elem_origin(const defo_fracture *f);
/* The element each element was split from in the last call (itself for
 * elements that call did not make; a parent precedes its children). */
DEFO_API const defo_index *defo_fracture_elem_parent(const defo_fracture *f);
/* Cracks so far, oldest first (the last may be growing). */
DEFO_API int defo_fracture_num_cracks(const defo_fracture *f);
DEFO_API const defo_crack *defo_fracture_crack(const defo_fracture *f, int i);

/* Checkpoints: the state carried from one call to the next besides the
 * connectivity — node origins (from which the added nodes' rest positions
 * follow), element origins, the cracks and the growing crack's node sides —
 * as bytes.  Check validates bytes and gives the node and element counts
 * they describe; restore (after a successful check) puts back the nodes
 * added after the first n0 of mesh (the original ones), exactly as they
 * were made, and sets mesh->num_elems to the saved count with room
 * reserved: the caller then writes the connectivity. */
DEFO_API size_t defo_fracture_state_bytes(const defo_fracture *f);
DEFO_API void defo_fracture_save_state(const defo_fracture *f, void *out);
DEFO_API defo_status defo_fracture_check_state(const defo_fracture *f, const void *in, size_t size,
                                               defo_index *nodes, defo_index *elems);
DEFO_API defo_status defo_fracture_restore_state(defo_fracture *f, defo_mesh *mesh, defo_index n0,
                                                 const void *in, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_FRACTURE_H */
