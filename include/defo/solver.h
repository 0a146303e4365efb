/*
 * defo/solver.h — the solver layer every integrator shares: operators and
 * constraints over nodal 3-vectors, preconditioners (Jacobi, block Jacobi,
 * block IC(0), two-level, sparse Cholesky), the linear solver
 * (defo_linear_solver: PCG or a direct Cholesky solve, one lag policy for
 * factorised preconditioners) and the Newton driver (defo_newton: line
 * search, forcing, the convergence reason as data; TSIF05 §3–4).  Solvers
 * see operators and matrices (defo/sparse.h), never meshes or physics.
 *
 * Constraints are projections inside CG (docs/architecture.md
 * "Constraints"; ITF04 §9 and [BW98]): a fixed node keeps its whole initial
 * value, a node with a constraint normal n keeps its initial n-component and
 * is free in the plane ⟂ n.  The
 * caller writes the constrained values into the initial guess.
 *
 * Every CG of the library runs the same loop; its dot products use a fixed
 * blocking, so the iterates are bitwise identical for any thread count.
 *
 * Interrupts (defo_interrupt, defo/base.h): every CG iteration and every
 * Newton iteration (and line-search trial) first looks at the flag, so a
 * Ctrl-C stops the longest solve within one iteration: the solve returns
 * DEFO_ERR_INTERRUPTED with x its last iterate (Newton: the last accepted
 * one).  The caller decides what to keep (a world step returns to the
 * frame's start).
 */
#ifndef DEFO_SOLVER_H
#define DEFO_SOLVER_H

#include "defo/base.h"
#include "defo/sparse.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = A x for 3n-vectors; ctx is the caller's. */
typedef void (*defo_linop_fn)(void *ctx, const double *x, double *y);

/* Per-node constraint kinds for defo_cg_solve. */
enum {
    DEFO_CONSTRAINT_NONE = 0,
    DEFO_CONSTRAINT_NORMAL = 1, /* the component along normal[3i..3i+2] (unit) is fixed */
    DEFO_CONSTRAINT_FIXED = 2   /* all three components are fixed */
};

typedef struct defo_cg_def {
    int max_iterations; /* default 200; > 0 */
    /* Stop when |S(b − A x)| ≤ tolerance · |S b| (S the constraint
     * projection); default 1e-8, in (0, 1). */
    double tolerance;
} defo_cg_def;
DEFO_API defo_cg_def defo_default_cg_def(void);

typedef struct defo_cg_result {
    int iterations;
    double residual; /* final relative residual |S r| / |S b| (0 when S b = 0) */
    int converged;   /* 1 when residual ≤ tolerance */
} defo_cg_result;

/* defo_cg_solve: matrix-free Jacobi-preconditioned CG for a symmetric
 * positive (semi)definite operator (the damping solves of the Newmark
 * scheme), the loop of defo_linear_solver with the caller's diagonal.
 * Solve A x = b on the unconstrained subspace, starting from x (in/out).
 *   n          nodes (3n unknowns)
 *   apply      y = A x
 *   inv_diag   3n values: the Jacobi preconditioner 1/diag(A), > 0 (NULL = none)
 *   constraint n kinds (DEFO_CONSTRAINT_*) or NULL (no constraints)
 *   normal     3n unit normals read for DEFO_CONSTRAINT_NORMAL nodes (may be
 *              NULL if no node has that kind)
 *   work       12n doubles of scratch owned by the caller (no allocation here)
 * Returns DEFO_OK, DEFO_WARN_NOT_CONVERGED (x is the last iterate),
 * DEFO_ERR_NUMERICAL when a non-finite value or a non-positive curvature
 * pᵀAp ≤ 0 appears (A not positive definite on the subspace; x is then the
 * last good iterate), or DEFO_ERR_INTERRUPTED (above). */
DEFO_API defo_status defo_cg_solve(const defo_cg_def *def, defo_index n, defo_linop_fn apply,
                                   void *ctx, const double *inv_diag,
                                   const unsigned char *constraint, const double *normal,
                                   const double *b, double *x, double *work,
                                   defo_cg_result *result);

/* Deterministic dot product of two m-vectors (fixed blocking, any thread
 * count gives the same bits). */
DEFO_API double defo_dot(const double *a, const double *b, size_t m);

/* ---------------------------------------------------- preconditioners
 * z = P⁻¹ r for a 3×3-block CSR matrix (defo/sparse.h), an opaque object
 * made from a definition and set up (factored) from a matrix. */
typedef enum defo_precond_kind {
    DEFO_PRECOND_NONE = 0,
    DEFO_PRECOND_JACOBI = 1,       /* 1 / diag(A) */
    DEFO_PRECOND_BLOCK_JACOBI = 2, /* inverted 3×3 diagonal blocks */
    DEFO_PRECOND_BLOCK_IC0 = 3,    /* incomplete block Cholesky, zero fill-in */
    /* sparse direct Cholesky (defo/cholesky.h; needs CHOLMOD): exact for the
     * matrix it was set up with, used lagged while the matrix drifts */
    DEFO_PRECOND_CHOLESKY = 4,
    /* BLOCK_IC0 plus an additive coarse correction R (Rᵀ A R)⁻¹ Rᵀ over the
     * rigid-body modes of geometric node aggregates (needs coords) */
    DEFO_PRECOND_TWO_LEVEL = 5
} defo_precond_kind;

/* Name ("none", "jacobi", "block_jacobi", "block_ic0", "cholesky",
 * "two_level"); "unknown" otherwise. */
DEFO_API const char *defo_precond_name(defo_precond_kind kind);
/* The kind of a name above; DEFO_ERR_INVALID_ARGUMENT (message listing the
 * names) for any other. */
DEFO_API defo_status defo_precond_from_name(const char *name, defo_precond_kind *kind);

typedef struct defo_precond_def {
    defo_precond_kind kind; /* default DEFO_PRECOND_BLOCK_JACOBI */
    /* BLOCK_IC0 / TWO_LEVEL: the factor is that of A restricted to each of
     * `domains` subdomains (slabs of breadth-first levels of A's pattern;
     * couplings between them dropped), so its factorisation and triangular
     * solves run one subdomain per thread.  0 (default) = automatic: 1 below
     * 4096 nodes, else 2.  The result depends on this number, never on the
     * thread count.  >= 0. */
    int domains;
} defo_precond_def;
DEFO_API defo_precond_def defo_default_precond_def(void);

typedef struct defo_precond defo_precond;

/* An empty preconditioner of def's kind (storage comes with the first
 * setup).  Bad kind or domains: DEFO_ERR_INVALID_ARGUMENT; CHOLESKY without
 * CHOLMOD: DEFO_ERR_UNSUPPORTED (defo_cholesky_available()). */
DEFO_API defo_status defo_precond_create(const defo_precond_def *def, defo_precond **out);
DEFO_API void defo_precond_destroy(defo_precond *P);
DEFO_API defo_precond_kind defo_precond_get_kind(const defo_precond *P);

/* (Re)compute the preconditioner of A.  Storage is allocated on the first
 * call and reused while the pattern size stays the same.  constraint (n
 * kinds, may be NULL): BLOCK_IC0 drops the couplings of DEFO_CONSTRAINT_FIXED
 * nodes, so it factors the constrained operator the projected CG actually
 * sees.  A singular or indefinite diagonal block is DEFO_ERR_NUMERICAL naming
 * the node.  BLOCK_IC0 retries with a growing diagonal shift when a pivot is
 * not positive definite.  CHOLESKY factors A (fixed nodes decoupled as for
 * BLOCK_IC0), keeps the symbolic analysis while the pattern is unchanged,
 * and is DEFO_ERR_NUMERICAL for a matrix that is not positive definite.
 * coords (3n node positions, read only here): TWO_LEVEL's aggregates and
 * rigid modes (DEFO_ERR_INVALID_ARGUMENT when NULL); ignored otherwise. */
DEFO_API defo_status defo_precond_setup(defo_precond *P, const defo_bcsr *A,
                                        const unsigned char *constraint, const double *coords);
/* z = P⁻¹ r (3n each) with the last setup. */
DEFO_API void defo_precond_apply(const defo_precond *P, const double *r, double *z);
/* Bytes the preconditioner holds (the object and what setup allocated). */
DEFO_API size_t defo_precond_bytes(const defo_precond *P);

/* Preconditioned CG on a BCSR matrix with the constraint projections of
 * defo_cg_solve (constraint kinds per node, normals for
 * DEFO_CONSTRAINT_NORMAL; the constrained values are taken from the initial
 * x).  P (set up) may be NULL (no preconditioner).  work: 4 · 3n doubles.
 * def->tolerance = 0 runs exactly def->max_iterations iterations (MG04 §6
 * interactive mode) and returns DEFO_OK; otherwise the tolerance must be in
 * (0, 1) and reaching max_iterations returns DEFO_WARN_NOT_CONVERGED (x is
 * the last iterate).  Iterates are bitwise identical for any thread
 * count. */
DEFO_API defo_status defo_pcg_solve(const defo_cg_def *def, const defo_bcsr *A,
                                    const defo_precond *P, const unsigned char *constraint,
                                    const double *normal, const double *b, double *x, double *work,
                                    defo_cg_result *result);

/* ---------------------------------------------------- distributed layout
 * The nodes of a system spread over the processes of a distributed run
 * (docs/distributed.md): every process holds every node's values (the
 * world keeps them whole), each node is owned by one process, and a
 * distributed solver backend solves for the owned rows of each process
 * (the other rows of a process's matrix may be partial).  NULL in a
 * system: one process owns everything. */
typedef struct defo_layout {
    int rank, size;   /* this process; processes */
    const int *owner; /* n: the process owning each node */
} defo_layout;

/* ---------------------------------------------------- linear solver
 * defo_linear_solver: the object an integrator owns per body to solve
 * A x = b on the free subspace of per-node constraints (projections, as
 * defo_cg_solve), A symmetric positive (semi)definite there.  Either PCG
 * with a preconditioner (the loop every CG of defo runs) or a direct sparse
 * Cholesky solve.  It keeps the preconditioner between solves and decides
 * when to refactor it with ONE rule for every caller (the lag policy below).
 * The system is described per call (defo_linear_system); buffers are
 * allocated on the first solve at full size, so warm solves allocate
 * nothing.  Iterates are bitwise identical for any thread count. */
typedef enum defo_linear_method {
    DEFO_LINEAR_PCG = 0,
    /* Sparse Cholesky of the assembled matrix (CHOLMOD, defo/cholesky.h;
     * fixed nodes decoupled), factored for every solve: exact.  A failed
     * factorisation (matrix not positive definite) falls back to PCG with
     * block Jacobi for that solve (defo_linear_stats.fallback).  Needs the
     * matrix and no DEFO_CONSTRAINT_NORMAL node. */
    DEFO_LINEAR_CHOLESKY = 1,
    /* A solver behind defo_linear_backend (below; the PETSc backend,
     * defo/petsc.h): its Krylov method and preconditioner on the owned rows
     * of a distributed layout, defo's lag policy deciding when its
     * preconditioner is made again. */
    DEFO_LINEAR_BACKEND = 2
} defo_linear_method;

/* ---------------------------------------------------- solver backends
 * A linear solver outside defo (the PETSc backend, defo/petsc.h) behind
 * defo_linear_solver: the solver layer never links one, it calls this
 * table.  One state per defo_linear_solver. */
typedef struct defo_linear_system defo_linear_system;
typedef struct defo_linear_solver_def defo_linear_solver_def;
/* What one backend solve did. */
typedef struct defo_backend_result {
    int iterations;
    double initial;  /* |S r₀| / |S b| at the start */
    double residual; /* |S r| / |S b| at the end (0 when S b = 0) */
    int converged;   /* tolerance met */
    int hit_max;     /* stopped at the iteration cap */
    int negative;    /* stopped at non-positive curvature (DEFO_CURVATURE_STOP) */
    int setup;       /* 1: the solve made its preconditioner again (a new pattern, or
                      * the lagged one broke down on this matrix) */
    int fallback;    /* 1: the fresh preconditioner broke down too; solved with Jacobi */
    int retried;     /* 1: the kept preconditioner broke down; made again and solved again */
} defo_backend_result;
typedef struct defo_linear_backend {
    const char *name;
    defo_status (*create)(const defo_linear_solver_def *def, void **state);
    void (*destroy)(void *state);
    /* make the preconditioner of the system (its matrix or operator, its
     * constraints and coordinates) */
    defo_status (*setup)(void *state, const defo_linear_system *sys);
    /* solve A x = b on the free subspace (x: guess and constrained values
     * in, solution out, whole on every process) with the preconditioner of
     * the last setup and the operator of sys; tolerance as
     * defo_linear_solver_solve; returns DEFO_OK, DEFO_WARN_NOT_CONVERGED or
     * an error with the backend's message */
    defo_status (*solve)(void *state, const defo_linear_system *sys, const double *b, double *x,
                         double tolerance, defo_backend_result *out);
    size_t (*bytes)(const void *state);
} defo_linear_backend;
#define DEFO_BACKEND_OPTIONS_MAX 512

/* What PCG does at a direction with pᵀAp ≤ 0. */
typedef enum defo_curvature_mode {
    DEFO_CURVATURE_ERROR = 0, /* DEFO_ERR_NUMERICAL: A is not positive definite */
    /* Stop and keep the last iterate (the preconditioned residual when it
     * happens at the first iteration): a descent direction for a Newton
     * step (TSIF05 §3).  Counted in defo_linear_stats.negative_curvature. */
    DEFO_CURVATURE_STOP = 1
} defo_curvature_mode;

struct defo_linear_solver_def {
    defo_linear_method method; /* default PCG */
    /* PCG's preconditioner (default block Jacobi).  JACOBI / BLOCK_JACOBI
     * are rebuilt for every solve, robustly: a node whose diagonal block is
     * not positive definite gets 1 / max(a_kk, 1e-12 · the largest diagonal
     * entry).  BLOCK_IC0, TWO_LEVEL and CHOLESKY are factorisations, kept
     * and refactored by the lag policy; a factorisation that fails falls
     * back to block Jacobi for that solve (stats.fallback).  Without an
     * assembled matrix (matrix-free) block Jacobi from the system's
     * diagonal blocks stands in for them. */
    defo_precond_def precond;
    int max_iterations; /* tolerance mode: the cap; default 1000, > 0 */
    /* Relative residual |S r| ≤ tolerance · |S b| to stop at; default 1e-8,
     * in (0, 1) unless fixed_iterations > 0 (then [0, 1): 0 = none).  A
     * solve may override it (Newton forcing). */
    double tolerance;
    /* > 0: exactly this many iterations (MG04 §6 interactive mode), fewer
     * only when a tolerance > 0 is met first; reaching the count is not a
     * warning.  0 (default): tolerance mode, max_iterations the cap. */
    int fixed_iterations;
    defo_curvature_mode curvature; /* default ERROR */
    /* Lag policy of the factorised preconditioners: refactor when there is
     * no valid factor, after max_age solves with it (0 = no limit), when the
     * last solve needed more than rate_growth × the CG iterations per decade
     * of residual reduction of the first solve with the factor (a solve
     * that hit max_iterations in tolerance mode always does), or after
     * defo_linear_solver_invalidate.  Iterations per decade =
     * max(iterations / max(log10(|r₀| / |r|), 0.5), 1): a worse
     * preconditioner shows in fixed-iteration mode as less reduction, and a
     * near-exact factor (Cholesky: one iteration, fifteen decades) is
     * compared with one iteration per decade, not with its overshoot.
     * Defaults 0 and 2 (> 0). */
    int max_age;
    double rate_growth;
    /* > 0: PCG starts from the caller's x corrected by its A-orthogonal
     * projection onto the span of the last `history` solutions (successive
     * right-hand sides, Fischer 1998: the best guess in x + that span in
     * the A-norm, never worse than x), at the cost of one product of the
     * matrix with all of them.  The solutions are kept by the solver
     * (defo_linear_solver_history_*: checkpoints).  0 (default): x as given.
     * At most DEFO_LINEAR_HISTORY_MAX. */
    int history;
    /* DEFO_LINEAR_BACKEND: the solver (NULL: an integrator takes the PETSc
     * backend, defo_petsc_backend()) and its options in the backend's own
     * syntax (PETSc's options database: "-pc_type gamg -ksp_rtol 1e-8"),
     * NUL-terminated; "" = its defaults */
    const defo_linear_backend *backend;
    char backend_options[DEFO_BACKEND_OPTIONS_MAX];
};
enum { DEFO_LINEAR_HISTORY_MAX = 16 };
DEFO_API defo_linear_solver_def defo_default_linear_solver_def(void);

/* The system of one solve (all arrays borrowed for the call). */
struct defo_linear_system {
    defo_index n; /* nodes: 3n unknowns */
    /* The assembled A (n block rows), or NULL: matrix-free (then apply and,
     * for a preconditioner, diagonal are needed). */
    const defo_bcsr *matrix;
    defo_linop_fn apply; /* y = A x; NULL = multiply by matrix */
    void *ctx;           /* apply's */
    /* 9n: the 3×3 diagonal blocks of A (row-major) for (block) Jacobi when
     * there is no matrix; ignored with one */
    const double *diagonal;
    const unsigned char *constraint; /* n DEFO_CONSTRAINT_* kinds, or NULL */
    const double *normal;            /* 3n unit normals of NORMAL nodes, or NULL */
    const double *coords;            /* 3n node positions: TWO_LEVEL (else NULL) */
    /* 1: matrix and constraints are those of the last solve of this solver
     * (the caller knows, e.g. corotated rotations kept by the MTPS08 §4.4
     * lazy rule): a direct solve keeps its factorisation unless invalidated.
     * Default 0: the direct method factors at every solve. */
    int same_matrix;
    /* 1: make no new preconditioner for this system: the kept (lagged) one
     * serves, block Jacobi when there is none (a Newton step on the exact,
     * possibly indefinite, tangent preconditioned by the factor of the
     * positive semidefinite one).  Default 0. */
    int keep_precond;
    /* the nodes' owners in a distributed run (NULL: one process); needs
     * DEFO_LINEAR_BACKEND when there are several processes */
    const defo_layout *layout;
};

/* What one solve did (data, never an error). */
typedef struct defo_linear_stats {
    int iterations;         /* PCG iterations (0 for a direct solve) */
    double residual;        /* final |S r| / |S b| */
    int converged;          /* tolerance met (a direct solve: 1) */
    int negative_curvature; /* DEFO_CURVATURE_STOP: 1 when PCG stopped at pᵀAp ≤ 0 */
    int refactored;         /* 1 when a factorisation (preconditioner or direct) was made */
    int fallback;           /* 1 when a failed factorisation made it block-Jacobi PCG */
    /* 1 when the solve recovered from a failed preconditioner: block Jacobi
     * after a failed factorisation, or a backend's preconditioner that broke
     * down, made again or replaced by Jacobi (defo_backend_result) */
    int recovered;
} defo_linear_stats;

typedef struct defo_linear_solver defo_linear_solver;

/* Bad settings: DEFO_ERR_INVALID_ARGUMENT naming the field; CHOLESKY (method
 * or preconditioner) without CHOLMOD: DEFO_ERR_UNSUPPORTED. */
DEFO_API defo_status defo_linear_solver_create(const defo_linear_solver_def *def,
                                               defo_linear_solver **out);
DEFO_API void defo_linear_solver_destroy(defo_linear_solver *s);
DEFO_API const defo_linear_solver_def *defo_linear_solver_get_def(const defo_linear_solver *s);

/* Solve A x = b for the free components of x; x holds the initial guess and
 * the constrained values on input (all zero: no first product).  tolerance
 * > 0 overrides def.tolerance for this solve.  Returns DEFO_OK,
 * DEFO_WARN_NOT_CONVERGED (tolerance mode, max_iterations reached; x is the
 * last iterate) or an error: DEFO_ERR_NUMERICAL (non-finite values,
 * non-positive curvature in ERROR mode; x the last good iterate),
 * DEFO_ERR_INVALID_ARGUMENT (a system that does not fit the settings),
 * DEFO_ERR_INTERRUPTED (x the last iterate).  stats may be NULL. */
DEFO_API defo_status defo_linear_solver_solve(defo_linear_solver *s, const defo_linear_system *sys,
                                              const double *b, double *x, double tolerance,
                                              defo_linear_stats *stats);
/* The operator changed beyond drift (constraints, topology, a frame that
 * must not depend on earlier ones): the next solve refactors. */
DEFO_API void defo_linear_solver_invalidate(defo_linear_solver *s);
/* The lag policy's state: whether a factor is held, its age in solves and
 * the convergence rates it is judged by.  A factor is a function of the
 * system it was made from, so (the system, this state) restores a solver
 * exactly: checkpoints keep what the system was made from, not the factor. */
typedef struct defo_linear_lag {
    int valid, age;
    double first_rate, last_rate;
} defo_linear_lag;
DEFO_API void defo_linear_solver_get_lag(const defo_linear_solver *s, defo_linear_lag *out);
/* Make the factor of sys (as a solve that refactors would) and set the lag
 * state; lag->valid == 0, or a kind without a factor, only invalidates.
 * Bitwise the solver a run had when it made its factor from sys. */
DEFO_API defo_status defo_linear_solver_restore_lag(defo_linear_solver *s,
                                                    const defo_linear_system *sys,
                                                    const defo_linear_lag *lag);

/* The solutions kept for initial guesses (def.history > 0; nothing
 * otherwise): bytes of the record for n nodes (0 without history), the
 * record, and the history restored from one (its count checked).  A
 * different n than the solves' starts an empty history.  Forgetting it
 * (a changed topology) makes the next guesses the caller's x again. */
DEFO_API size_t defo_linear_solver_history_bytes(const defo_linear_solver *s, defo_index n);
DEFO_API void defo_linear_solver_history_save(const defo_linear_solver *s, defo_index n, void *out);
DEFO_API defo_status defo_linear_solver_history_restore(defo_linear_solver *s, defo_index n,
                                                        const void *in);
DEFO_API void defo_linear_solver_forget_history(defo_linear_solver *s);
/* Bytes held (buffers, preconditioners, factor). */
DEFO_API size_t defo_linear_solver_bytes(const defo_linear_solver *s);

/* ---------------------------------------------------- Newton driver
 * defo_newton: minimises an energy E(x) over 3n unknowns (n nodes) with
 * per-node constraints (DEFO_CONSTRAINT_FIXED nodes keep their values) by
 * Newton's method with a backtracking line search, the linear steps solved
 * inexactly by a defo_linear_solver (TSIF05 §3–4: K Δx = f with K = ∇²E
 * made positive (semi)definite by the caller, so PCG applies; any
 * non-positive curvature left stops CG with a descent direction).
 * Shared by every solver that minimises an energy (the quasistatic solver,
 * implicit integrators written as minimisations). */

/* Why an iteration stopped — one enum for every solver and integrator. */
typedef enum defo_convergence_reason {
    DEFO_REASON_CONVERGED = 0,
    DEFO_REASON_MAX_ITERATIONS = 1, /* the iteration limit was reached */
    /* no step along the Newton direction reduced the energy or the
     * residual, several times in a row */
    DEFO_REASON_STALLED = 2,
    DEFO_REASON_NUMERICAL = 3,  /* a non-finite value appeared; x is the last finite iterate */
    DEFO_REASON_INTERRUPTED = 4 /* defo_interrupt() was called; x is the last accepted iterate */
} defo_convergence_reason;
/* "converged", "max_iterations", "stalled", "numerical", "interrupted";
 * "unknown" otherwise. */
DEFO_API const char *defo_convergence_reason_name(defo_convergence_reason reason);

/* Forcing term η of the inexact Newton step: CG stops when the relative
 * residual of K Δx = f is ≤ η.  Either way η is clamped to [cg_min_tolerance,
 * cg_max_tolerance] and never made smaller than 0.5·target/|f|∞ (solving
 * further than the Newton target is wasted, Kelley 1995 §6.3). */
typedef enum defo_forcing {
    /* η = 0.5·target/|f|∞ (clamped): every step solved at once to the
     * accuracy the Newton target needs */
    DEFO_FORCING_TARGET = 0,
    /* Eisenstat–Walker choice 2 (SIAM J. Sci. Comput. 17, 1996): η_k =
     * 0.9 (|f_k|₂/|f_{k−1}|₂)², safeguarded by 0.9 η_{k−1}² when that is >
     * 0.1; η_0 = cg_max_tolerance, or the TARGET rule when the solve starts
     * from a predicted point (near the answer: one accurate step) */
    DEFO_FORCING_EISENSTAT_WALKER = 1
} defo_forcing;

typedef struct defo_newton_def {
    int max_iterations; /* Newton iterations per solve; default 100, >= 1 */
    /* Backtracking on E (Armijo, c₁ = 1e-4), also accepting a decrease of
     * the free residual norm (an energy extrapolated flat past a threshold,
     * TSIF05 §9, has a force but no energy slope); up to 40 halvings, then
     * the capped full step is taken anyway.  Default 1; 0 = full steps. */
    int line_search;
    defo_forcing forcing;    /* default EISENSTAT_WALKER */
    double cg_min_tolerance; /* default 1e-10 */
    double cg_max_tolerance; /* default 0.1; 0 < min <= max < 1 */
    /* Line search on: full steps forced in a row before the solve stops
     * as DEFO_REASON_STALLED.  Default 10, >= 0. */
    int max_forced_steps;
    /* The steps' solver.  Default: PCG, two-level preconditioner lagged
     * (max_age 8, rate_growth 2), DEFO_CURVATURE_STOP, max_iterations
     * 2000; the tolerance is the forcing term's. */
    defo_linear_solver_def linear;
} defo_newton_def;
DEFO_API defo_newton_def defo_default_newton_def(void);

/* The problem: callbacks on the caller's ctx.  Unknowns are 3 per node. */
typedef struct defo_newton_problem {
    defo_index n;
    void *ctx;
    /* f = −∇E(x) (3n) and *energy = E(x); keep the linearisation at x for
     * the calls below.  Non-finite values: an error status (the solve stops
     * as DEFO_REASON_NUMERICAL after restoring the state at its x). */
    defo_status (*evaluate)(void *ctx, const double *x, double *f, double *energy);
    /* ∇²E at the last evaluation, assembled (may be NULL, or return NULL:
     * matrix-free, then apply and diagonal are used) */
    const defo_bcsr *(*matrix)(void *ctx);
    void (*apply)(void *ctx, const double *d, double *y);     /* y = ∇²E d */
    void (*diagonal)(void *ctx, double *blocks);              /* 9n diagonal blocks of ∇²E */
    void (*cap_step)(void *ctx, const double *x, double *dx); /* may be NULL */
    /* The tangent of the following evaluations: 1 the exact ∇²E, 0 the
     * problem's positive semidefinite one (the definiteness fix, TSIF05 §8;
     * the default).  May be NULL: one tangent.  The driver turns to the
     * exact tangent where full steps stop reducing the residual fast —
     * near the solution, where the projected tangent converges only
     * linearly — and back at non-positive curvature, a cut step or a slow
     * one; every solve ends with the projected one. */
    void (*exact_tangent)(void *ctx, int exact);
    /* after each accepted iterate x (statistics; may be NULL) */
    void (*accepted)(void *ctx, const double *x);
    /* after a linear step that made a new factor from the system at x (a
     * caller that checkpoints the lag keeps x; may be NULL) */
    void (*factored)(void *ctx, const double *x);
    const unsigned char *constraint; /* n kinds (FIXED; NONE), or NULL */
    /* 3n node positions for the two-level preconditioner; NULL = the
     * current iterate (the unknowns are positions) */
    const double *coords;
    /* the nodes' owners in a distributed run (NULL: one process): every
     * vector the problem hands over is whole on every process, so the
     * iteration runs the same on each; the linear steps go to the backend */
    const defo_layout *layout;
} defo_newton_problem;

typedef struct defo_newton_stats {
    int iterations;         /* Newton iterations */
    int cg_iterations;      /* total */
    int negative_curvature; /* CG stops at pᵀKp ≤ 0 */
    int backtracks;         /* line-search halvings */
    defo_convergence_reason reason;
    double residual;         /* max over free nodes of |f_i| at the end */
    double initial_residual; /* the same at the start */
    double energy;           /* E at the end */
    int precond_setups;      /* factorisations (preconditioner or direct) */
    int fallbacks;           /* solves with block Jacobi after a failed factorisation */
    int recoveries;          /* linear solves that recovered (defo_linear_stats.recovered) */
    /* the exact tangent (defo_newton_problem.exact_tangent): turns to it,
     * iterations with it, and its CG stops at non-positive curvature (each
     * a turn back; negative_curvature counts the projected tangent's) */
    int exact_turns, exact_iterations, exact_curvature;
    double linear_seconds; /* wall time of the linear steps, assembly included */
} defo_newton_stats;

typedef struct defo_newton defo_newton;

/* A driver for problems of n nodes (buffers allocated here). */
DEFO_API defo_status defo_newton_create(const defo_newton_def *def, defo_index n,
                                        defo_newton **out);
DEFO_API void defo_newton_destroy(defo_newton *N);
DEFO_API const defo_newton_def *defo_newton_get_def(const defo_newton *N);

/* Iterate from x (in/out, constrained values already in place) until the
 * max over free nodes of |f_i| ≤ target (absolute).  f0 (3n) and E0: the
 * evaluation at x when the caller has it (the linearisation kept by the
 * problem must then be x's), else f0 = NULL.  predicted: x is a predicted
 * start (forcing rule).  Returns DEFO_OK (converged), DEFO_WARN_NOT_CONVERGED
 * (stats->reason says why; x the last accepted iterate) or an error (an
 * evaluation or linear solve failed: DEFO_REASON_NUMERICAL, x the last
 * finite iterate, the problem's state restored to it; an interrupt:
 * DEFO_ERR_INTERRUPTED, DEFO_REASON_INTERRUPTED, x the last accepted
 * iterate).  When the solve ends, the problem's linearisation is that of the
 * returned x. */
DEFO_API defo_status defo_newton_solve(defo_newton *N, const defo_newton_problem *p, double target,
                                       double *x, const double *f0, double E0, int predicted,
                                       defo_newton_stats *stats);
/* The problem's operator changed beyond drift: refactor at the next step. */
DEFO_API void defo_newton_invalidate(defo_newton *N);
/* The lag state of the driver's linear solver (defo_linear_lag). */
DEFO_API void defo_newton_get_lag(const defo_newton *N, defo_linear_lag *out);
/* Make the factor of the problem's system at x (its matrix at the last
 * evaluation, which the caller made at x; coords as in a solve) and set the
 * lag state: the driver as it was when it factored at x. */
DEFO_API defo_status defo_newton_restore_lag(defo_newton *N, const defo_newton_problem *p,
                                             const double *x, const defo_linear_lag *lag);
/* Bytes held (buffers and the linear solver). */
DEFO_API size_t defo_newton_bytes(const defo_newton *N);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_SOLVER_H */
