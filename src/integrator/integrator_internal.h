/*
 * integrator/integrator_internal.h — pieces the integrator files share:
 * the implicit velocity solve of backward Euler and BDF2 (implicit.c), the
 * equilibrium solve of the quasistatic and static integrators
 * (equilibrium.c), and small helpers.  Never installed.
 */
#ifndef DEFO_INTEGRATOR_INTERNAL_H
#define DEFO_INTEGRATOR_INTERNAL_H

#include "defo/integrator.h"
#include "defo/math.h"

#include "base/base.h"
#include "base/parallel.h"

#include <math.h>
#include <string.h>

/* First node with a non-finite position or velocity, or −1. */
static inline defo_index defo_first_non_finite(defo_index n, const double *x, const double *v) {
    for (defo_index i = 0; i < n; i++)
        for (int k = 0; k < 3; k++) {
            const size_t j = 3 * (size_t)i + (size_t)k;
            if (!isfinite(x[j]) || (v && !isfinite(v[j]))) return i;
        }
    return -1;
}

/* Every stepper is its definition; the ops below are shared by the
 * integrator files (integrator.c). */
struct defo_stepper {
    defo_integrator_def def;
    struct defo_joint *joint;      /* Newton steppers: the bodies' joint solve */
    struct defo_joint_part *parts; /* scratch: the parts of a step */
    int cap_parts;
    defo_step_body **set; /* scratch: a subset of the step's bodies */
    const double **xs;    /* scratch: per-body pointers */
    double **vs, **ws;
    const double **base;        /* scratch: 2 per body (a step's x_b, v_b) */
    double *hs;                 /* scratch: a step length per body */
    struct defo_rb_scratch *rb; /* rigid, hybrid: the contact solve's scratch */
};
defo_status defo_stepper_create(const defo_integrator_def *def, defo_stepper **out);
void defo_stepper_destroy(defo_stepper *s);
/* Scratch arrays for steps of `count` bodies (grown, never shrunk). */
defo_status defo_stepper_scratch(defo_stepper *s, int count);
/* Equal steps of at most def->time_step (implicit integrators). */
int defo_time_step_steps(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                         double T);
/* One step per frame (equilibrium solvers). */
int defo_one_step(const defo_integrator_def *def, defo_step_body *const *bodies, int count,
                  double T);

/* History hooks of steppers that keep none. */
size_t defo_no_history_bytes(const defo_stepper *s, const defo_step_body *b);
void defo_no_history_save(const defo_stepper *s, const defo_step_body *b, void *out);
defo_status defo_no_history_restore(defo_stepper *s, defo_step_body *b, const void *in,
                                    size_t size);

/* ------------------------------------------------------- joint Newton solve */
/* One body of a joint Newton solve (joint.c): unknowns u (3n) with
 * positions y = base + scale·u. */
typedef struct defo_joint_part {
    defo_step_body *b;
    void *pctx;
    double *u;                       /* in: the start; out: the solution */
    const unsigned char *constraint; /* n: DEFO_CONSTRAINT_FIXED or NONE */
    double scale;                    /* dy/du */
    const double *base;              /* y = base + scale·u (NULL: 0) */
    /* positions the solve may start from without a surface having passed
     * through another (the step's start); NULL: u itself is such a start */
    const double *x_safe;
    const double *y; /* positions at the last evaluation (the part's) */
    double *x_fact;  /* 3n: where the factor was made (history) */
    /* the part's own setting the factor was made with (implicit: h), kept
     * in *param_fact when it is made (may be NULL) */
    double param, *param_fact;
    int *unkept; /* set by the part when its factor must not outlive the step */
    /* f = −∇E_k(u) (3n), *E = E_k(u); the linearisation becomes u's */
    defo_status (*evaluate)(void *pctx, const double *u, double *f, double *E);
    const defo_bcsr *(*matrix)(void *pctx); /* ∇²E_k at the last evaluation */
    void (*apply)(void *pctx, const double *d, double *out);
    void (*diagonal)(void *pctx, double *blocks);
    void (*cap)(void *pctx, const double *u, double *du); /* may be NULL */
    /* the linearisation (for matrix) at positions x and time t: a restored
     * factor made again */
    defo_status (*linearize_at)(void *pctx, const double *x, double t);
    /* the tangent of the following evaluations: exact (1) or projected (0,
     * the default; defo_newton_problem.exact_tangent) */
    void (*exact_tangent)(void *pctx, int exact);
} defo_joint_part;

typedef struct defo_joint {
    defo_newton_def def;
    defo_newton *newton;
    int exact;    /* the Newton solve asks for the exact tangent (exact_tangent) */
    defo_index n; /* all parts' nodes */
    int count, cap_parts;
    defo_joint_part *parts;
    defo_index *offset;
    double *u, *f, *coords, *dx, *cforce; /* 3n each */
    unsigned char *constraint;
    defo_bcsr *matrix; /* the joined matrix */
    /* the solve in progress */
    defo_step_body *const *bodies;
    const defo_step_context *ctx;
    double t, dt;
    const double *const *x_start;
    const double **ys;
    double **fs, **dxs;
    const defo_contact_term *terms;
    size_t num_terms;
    int64_t *extra_rc;
    double *extra_val;
    size_t extra_cap, num_extra;
    int held;
    defo_status status;
    /* the factorisation's record (history) */
    int have_fact, rebuild, fact_unkept;
    double t_fact;
    defo_linear_lag lag;
    /* a distributed run: the parts' owners joined (n), NULL on one process */
    int *owner;
    defo_layout layout;
    const defo_layout *lay;
} defo_joint;

defo_status defo_joint_create(const defo_newton_def *def, defo_joint **out);
void defo_joint_destroy(defo_joint *J);
/* The Newton settings of def are those a joint solve takes (the message
 * names the bad field otherwise): checked when a body joins. */
defo_status defo_joint_check(const defo_integrator_def *def);
/* Forget the factor (the operator changed beyond drift). */
void defo_joint_invalidate(defo_joint *J);
/* Newton on the parts together, body–body contact (ctx->contact) between
 * them, until max |f_i| <= target over free nodes; t the time of the
 * positions, x_start/dt the step (separation speed; NULL: none).  Stats of
 * the driver into *stats. */
defo_status defo_joint_solve(defo_joint *J, const defo_joint_part *parts, int count,
                             defo_step_body *const *bodies, const defo_step_context *ctx, double t,
                             const double *const *x_start, double dt, double target, int predicted,
                             defo_newton_stats *stats);
#define DEFO_JOINT_HEAD (16 + 3 * sizeof(double))
size_t defo_joint_record_bytes(const defo_step_body *b);
void defo_joint_record_save(const defo_joint *J, const defo_step_body *b, const double *x_fact,
                            void *out);
defo_status defo_joint_record_restore(defo_joint *J, const defo_step_body *b, double *x_fact,
                                      const void *in);
size_t defo_joint_bytes(const defo_joint *J);

/* ------------------------------------------------- implicit velocity solve */
/* Per-body state of backward Euler and BDF2. */
typedef struct defo_implicit_body {
    defo_step_body *b;
    defo_linear_solver *linear; /* corotated (linear) steps */
    defo_index cap;
    double *xb, *vb; /* BDF2: the step's base position and velocity */
    double *vn;      /* the unknown velocity */
    double *y;       /* positions of the current iterate xb + h vn */
    double *f, *rhs, *tmp;
    double *normal, *friction;
    double *diag;   /* 9n: damping diagonal blocks */
    double *cblock; /* 9n: penalty contact blocks at the iterate (Newton steps) */
    defo_index contacts;
    int have_contact;
    int capped; /* the factor must not outlive the step: the penalty held nodes back
                 * (separation_speed), or the damping is the step's (a shell) */
    unsigned char *constraint, *contact;
    /* BDF2 history: the previous state */
    double *x_prev, *v_prev;
    int have_prev;
    /* Newton bodies: the velocity the last step's solve found, before the
     * collision response moved its contact nodes back to the surface — the
     * next solve's start (history: checkpoints hold it) */
    double *v_solved;
    int have_solved;
    /* the step being solved (Newton parts) */
    const double *x_base, *v_base;
    double h, alpha, beta, t_end;
    double h_lin;  /* the step length of the linearisation (h, or h_fact when rebuilt) */
    unsigned eval; /* the Newton evaluations' flags (the exact tangent or not) */
    const defo_step_context *ctx;
    defo_status status;
    /* the lagged factorisation carried from frame to frame: the positions
     * and step it was made at (history), so a restored run rebuilds the
     * same factor before its first step; the lag state is the body's own
     * (corotated) or the joint solve's (Newton) */
    double *x_fact;
    double h_fact, t_fact; /* t_fact: the step's end (penalty contact) */
    int have_fact, rebuild;
    /* corotated bodies with kept rotations (MTPS08 §4.4): the rotation serial
     * the factor was made with (defo_force_model_rotation_serial) */
    uint64_t serial_fact;
    const defo_bcsr *A_fact; /* the matrix factored (the force model's), or NULL */
    defo_linear_lag lag;
} defo_implicit_body;

defo_status defo_implicit_attach(const defo_integrator_def *def, defo_step_body *b, int history);
void defo_implicit_detach(defo_step_body *b);
defo_status defo_implicit_resize(defo_step_body *b, defo_index old_n, const defo_index *parent);
/* The ops backward Euler and BDF2 share (implicit.c). */
void defo_implicit_op_detach(defo_stepper *s, defo_step_body *b);
defo_status defo_implicit_op_topology_changed(defo_stepper *s, defo_step_body *b, defo_index old_n,
                                              const defo_index *parent);
void defo_implicit_op_frame_start(defo_stepper *s, defo_step_body *b);
size_t defo_implicit_op_bytes(const defo_stepper *s, const defo_step_body *b);
/* The factorisation record (history of backward Euler and BDF2). */
size_t defo_implicit_fact_bytes(const defo_step_body *b);
void defo_implicit_fact_save(const defo_stepper *s, const defo_step_body *b, void *out);
defo_status defo_implicit_fact_restore(defo_stepper *s, defo_step_body *b, const void *in);

/* One step of the bodies: for each body i solve
 *   M (v⁺ − v_b) = h_i (f(x_b + h_i v⁺) + f_ext − C v⁺)
 * for v⁺ with x_b = xb[i], v_b = vb[i], and commit x = x_b + h_i v⁺, v = v⁺
 * (then the responses, over ctx->dt).  xb[i], vb[i] may be the body's x, v
 * themselves (backward Euler).  Invertible bodies are solved together, as
 * one Newton problem with body–body contact (joint.c); corotated ones by
 * MG04 §6's one linear solve each (rotations of xⁿ). */
defo_status defo_implicit_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                               const double *const *xb, const double *const *vb, const double *h,
                               const defo_step_context *ctx);

/* --------------------------------------------------- equilibrium solve */
typedef struct defo_equilibrium_body defo_equilibrium_body;
defo_status defo_equilibrium_attach(const defo_integrator_def *def, defo_step_body *b);
void defo_equilibrium_detach(defo_step_body *b);
/* One equilibrium of the bodies at the step's end (prescribed nodes at
 * their targets), from x, solved together (joint.c); with_time: quasistatic
 * (predictor, v = Δx/dt) or static (v = 0). */
defo_status defo_equilibrium_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                                  const defo_step_context *ctx, int with_time);
defo_status defo_equilibrium_resize(defo_step_body *b);
size_t defo_equilibrium_history_bytes(const defo_step_body *b);
void defo_equilibrium_save_history(const defo_stepper *s, const defo_step_body *b, void *out);
defo_status defo_equilibrium_restore_history(defo_stepper *s, defo_step_body *b, const void *in,
                                             size_t size);
size_t defo_equilibrium_bytes(const defo_step_body *b);
/* The ops quasistatic and static share (equilibrium.c). */
defo_status defo_equilibrium_op_attach(defo_stepper *s, defo_step_body *b);
void defo_equilibrium_op_detach(defo_stepper *s, defo_step_body *b);
defo_status defo_equilibrium_op_topology_changed(defo_stepper *s, defo_step_body *b,
                                                 defo_index old_n, const defo_index *parent);
void defo_equilibrium_op_frame_start(defo_stepper *s, defo_step_body *b);
size_t defo_equilibrium_op_history_bytes(const defo_stepper *s, const defo_step_body *b);
void defo_equilibrium_op_save(const defo_stepper *s, const defo_step_body *b, void *out);
defo_status defo_equilibrium_op_restore(defo_stepper *s, defo_step_body *b, const void *in,
                                        size_t size);
size_t defo_equilibrium_op_bytes(const defo_stepper *s, const defo_step_body *b);

#endif

/* ------------------------------------------------------ rigid motion */
/* Per-body state of the rigid and hybrid integrators (rigid.c). */
#include "defo/rigid.h"
typedef struct defo_rb_body {
    defo_rigid_body rb;
    defo_mass_properties rest; /* of the rest shape (density: lumped mass / volume) */
    double radius;             /* largest |X − C| */
    int have;                  /* the state is set */
    defo_node_contact *probe;  /* n: scratch */
    int num_contacts;          /* of probe: the nodes near a collider */
    double *impulse;           /* 3n: the contact impulse each node took in the last step */
    /* n: 1 for a boundary node whose boundary faces all lie in one plane
     * (inside a flat part of the surface), at rest */
    unsigned char *flat;
    /* 3n: the angle-weighted sum of a boundary node's boundary face normals
     * (rest frame; 0 inside), whose part along a face says where its body
     * lies */
    double *normal;
    void *extra; /* the hybrid's */
    void (*detach_extra)(struct defo_rb_body *d);
} defo_rb_body;
defo_status defo_rb_attach(defo_step_body *b);
void defo_rb_detach(defo_step_body *b);
defo_status defo_rb_resize(defo_step_body *b);
/* The rigid state from the nodes (x, v, lumped masses). */
void defo_rb_fit(defo_step_body *b);
/* The nodes from the rigid state. */
void defo_rb_place(defo_step_body *b);
/* One step of the bodies of a rigid stepper together (rigid.c): their
 * contacts with colliders, with each other and with every other colliding
 * body in one sequential-impulse solve.  approach (count, may be NULL) gets
 * each body's largest approach speed of a contact point before the
 * impulses. */
defo_status defo_rb_step(defo_stepper *s, defo_step_body *const *bodies, int count,
                         const defo_step_context *ctx, double *approach);
void defo_rb_scratch_free(struct defo_rb_scratch *r);
void defo_rb_frame_start(defo_step_body *b);
size_t defo_rb_history_bytes(const defo_step_body *b);
void defo_rb_save(const defo_step_body *b, void *out);
defo_status defo_rb_restore(defo_step_body *b, const void *in, size_t size);
/* The contact solve's warm impulses of the contacts body b owns, a section
 * of its history (rigid.c); restore checks it (apply 0) or replaces b's
 * (size 0: none, a history from before the section). */
size_t defo_rb_warm_bytes(const defo_stepper *s, const defo_step_body *b);
void defo_rb_warm_save(const defo_stepper *s, const defo_step_body *b, void *out);
defo_status defo_rb_warm_restore(defo_stepper *s, defo_step_body *b, const void *in, size_t size,
                                 int apply);
/* The warm impulses of b's contacts forgotten (b leaves, or its nodes were
 * renumbered). */
void defo_rb_forget(defo_stepper *s, const defo_step_body *b);
