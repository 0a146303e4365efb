/*
 * petsc/backend.c — the PETSc linear solver backend (defo/petsc.h,
 * defo_linear_backend of defo/solver.h): PETSc's KSP on a distributed
 * block matrix, behind defo_linear_solver, which keeps deciding when the
 * preconditioner is made again (its lag policy).
 *
 * Numbering: a system of n nodes with a layout (every process holds every
 * node's values; node i owned by owner[i]) becomes a PETSc matrix of
 * block rows ordered process by process — rank 0's owned nodes in
 * ascending order, then rank 1's, ... — so each process inserts exactly its
 * own rows (no values travel during assembly: the rows of owned nodes are
 * whole in the caller's matrix, defo/partition.h), and the matrix is the
 * same from run to run.  Without a layout one process owns everything
 * (PETSC_COMM_SELF).
 *
 * Constraints (defo/solver.h): with P_i = I (free), 0 (fixed) or I − n nᵀ
 * (normal) and C_i = I − P_i, the backend solves
 *     (P A P + C) x = P (b − A C x₀) + C x₀,
 * whose solution keeps the constrained components of the guess x₀ and
 * solves the free part exactly as defo's projected CG does.
 *
 * Tolerance: defo's relative residual |S r| ≤ tol |S b| (S the projection)
 * is PETSc's unpreconditioned residual test with rtol scaled by |S b| / |b̃|
 * (b̃ the right-hand side above, whose constrained part is C x₀).  The
 * default Krylov method is CG.  On several processes the preconditioner of
 * assembled systems is GAMG with the rigid-body near-null space of the node
 * coordinates (its iterations stay flat with size: what scales over
 * processes).  On one process it is defo's own (`-pc_type shell`): the
 * two-level preconditioner of defo's PCG (block IC(0) and a coarse rigid-mode
 * correction, defo/solver.h) applied as z = S M⁻¹ S r + C r, and CG
 * multiplies with defo's block product through a shell matrix (no copy into
 * PETSc's AIJ unless -mat_type asks for one), so the Krylov iteration is
 * defo's PCG's.  On the quasistatic squash at 41 K tets this took the
 * one-process CPU from 1.5–1.8× defo's PCG (ICC(0): 27 % more CG
 * iterations) to about 1.05×; `-pc_type icc` and `-pc_type gamg` still
 * choose PETSc's.  A factor that fails (an indefinite diagonal block) is a
 * failed preconditioner for KSP and recovered as a breakdown (below).
 * Newton converges to its tolerance with any of them,
 * so runs on 1 and N processes agree within it.  Jacobi for a shell
 * (matrix-free) system.  The solver's options string, under the solver's
 * own prefix, changes any of it.  Options the solver never read
 * are refused after its first setup (a misspelt name), naming them.
 *
 * GAMG's setups: the first makes everything (aggregates, prolongators,
 * Galerkin coarse operators); a later one keeps the prolongators and makes
 * the coarse operators P_lᵀ A P_l of the matrix of the moment (about a
 * third of a whole setup), and the Chebyshev smoothers estimate their
 * eigenvalue bounds on those operators again (never GAMG's estimate of the
 * first matrix: a polynomial applied beyond its bound is indefinite).  The
 * prolongators are made again when the first solve after a setup needs
 * more than rate_growth × the CG iterations per decade of residual
 * reduction of the first solve after they were made (they no longer fit
 * the matrix), after a breakdown, and at every setup with
 * `-pc_gamg_reuse_interpolation false`.
 *
 * Breakdowns: KSP stopping for a reason that says the preconditioner or the
 * arithmetic failed (an indefinite preconditioner — a GAMG kept by the lag
 * policy while contact stiffens the matrix — a breakdown, a non-finite
 * value) is never handed on: the preconditioner is made again, wholly, for
 * this matrix and the solve repeated (counted as a setup and a recovery);
 * when a fresh one fails too, CG with Jacobi on |diagonal| (counted as a
 * fallback and a recovery); when that fails, an error naming KSP's reason.
 * A Newton step (DEFO_CURVATURE_STOP) is checked to descend: KSP's CG stops
 * at negative curvature only where it changes sign (descent_step).
 *
 * The solution returns to every process whole (a scatter to all), so the
 * Newton iteration above it runs the same everywhere.
 */
#include "petsc/petsc_internal.h"

#include "defo/sparse.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#ifndef DEFO_HAVE_PETSC
typedef int defo_petsc_backend_unused; /* ISO C: no empty translation unit */
#else

typedef struct ps {
    defo_linear_solver_def def;
    char prefix[32];
    MPI_Comm comm;
    int rank, size;
    /* the numbering of the cached layout */
    defo_index n;
    int *owner;     /* n: a copy of the layout's owners (NULL: one process) */
    PetscInt *gid;  /* n: global block row of each node */
    defo_index *my; /* nl: this process's nodes, ascending */
    defo_index nl;
    PetscInt first, rows;
    /* the operator */
    Mat A;
    int shell;                   /* A is a shell around sys->apply */
    int64_t *row_start;          /* nl + 1: owned rows' blocks in cols */
    defo_index *cols;            /* the owned rows' block columns (pattern signature) */
    int64_t cols_cap, max_row;   /* capacity of cols; longest owned row */
    PetscInt *gcols;             /* max_row: one row's global columns */
    PetscScalar *vals;           /* 9 max_row: one row's values */
    double *full, *work, *work2; /* 3n each: whole vectors */
    Vec b, x, xall;
    Vec x0, r, d; /* the guess; a residual and a step (breakdowns, negative curvature) */
    VecScatter toall;
    KSP ksp;
    int options_checked;
    /* the preconditioner was made for the matrix of the next solve:
     * FRESH_COARSE with kept prolongators, FRESH_WHOLE wholly */
    int fresh;
    /* GAMG's prolongators: made (0: the next setup makes them); kept at
     * setups (0: -pc_gamg_reuse_interpolation false); the rates (CG
     * iterations per decade) of the first solve after they were made and
     * of the first solve after the last setup; rate_pending: the next solve
     * is the first after a setup */
    int prol_made, prol_keep, rate_pending;
    double prol_rate, setup_rate;
    /* `-pc_type shell` (the default on one process): defo's own
     * preconditioner of the system's matrix (defo/solver.h), two-level
     * where node coordinates come with the system, else block IC(0) */
    defo_precond *own;
    int own_ok; /* its last setup succeeded */
    /* one process, defo's preconditioner and no -mat_type: the operator is
     * a shell around defo's block product of sys's matrix (no PETSc copy) */
    int own_op;
    defo_index A_n; /* own_op: the node count A was made for */
    /* the solve in progress */
    const defo_linear_system *sys;
    double rnorm0;
    int monitor_it;
} ps;

enum { FRESH_COARSE = 1, FRESH_WHOLE = 2 }; /* ps.fresh */

static int g_solvers; /* options prefixes defo1_, defo2_, ... in creation order */

/* ------------------------------------------------------------ helpers */
static int kind_of(const defo_linear_system *sys, defo_index i) {
    return sys->constraint ? sys->constraint[i] : DEFO_CONSTRAINT_NONE;
}

/* P_i (3×3) of node i */
static void proj(const defo_linear_system *sys, defo_index i, double P[9]) {
    const int k = kind_of(sys, i);
    for (int q = 0; q < 9; q++) P[q] = k == DEFO_CONSTRAINT_FIXED ? 0.0 : (q % 4 == 0);
    if (k == DEFO_CONSTRAINT_NORMAL && sys->normal) {
        const double *nn = sys->normal + 3 * (size_t)i;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) P[3 * r + c] -= nn[r] * nn[c];
    }
}

static void mat3_mul(const double *A, const double *B, double *C) {
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 3; c++)
            C[3 * r + c] = A[3 * r] * B[c] + A[3 * r + 1] * B[3 + c] + A[3 * r + 2] * B[6 + c];
}

static void mat3_vec(const double *A, const double *v, double *out) {
    for (int r = 0; r < 3; r++)
        out[r] = A[3 * r] * v[0] + A[3 * r + 1] * v[1] + A[3 * r + 2] * v[2];
}

/* The numbering of sys's layout (kept while the owners are the same). */

/* The matrix, vectors and scatter of the current numbering (PETSc's
 * destroys take NULL handles). */
static void destroy_objects(ps *S) {
    MatDestroy(&S->A);
    VecDestroy(&S->b);
    VecDestroy(&S->x);
    VecDestroy(&S->xall);
    VecDestroy(&S->x0);
    VecDestroy(&S->r);
    VecDestroy(&S->d);
    VecScatterDestroy(&S->toall);
}

static defo_status numbering(ps *S, const defo_linear_system *sys) {
    const defo_layout *L = sys->layout;
    const defo_index n = sys->n;
    if (L && L->size != S->size)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "petsc: a layout of %d processes in a run of %d", L->size, S->size);
    if (S->gid && n == S->n &&
        (!L ? !S->owner : S->owner && memcmp(S->owner, L->owner, (size_t)n * sizeof(int)) == 0))
        return DEFO_OK;
    defo_free(S->owner);
    defo_free(S->gid);
    defo_free(S->my);
    defo_free(S->full);
    defo_free(S->work);
    defo_free(S->work2);
    S->owner = NULL;
    S->gid = defo_malloc((size_t)n * sizeof *S->gid + 1);
    S->my = defo_malloc((size_t)n * sizeof *S->my + 1);
    S->full = defo_malloc(3 * (size_t)n * sizeof(double) + 1);
    S->work = defo_malloc(3 * (size_t)n * sizeof(double) + 1);
    S->work2 = defo_malloc(3 * (size_t)n * sizeof(double) + 1);
    PetscInt *start = defo_calloc((size_t)S->size + 1, sizeof *start);
    if (L) S->owner = defo_malloc((size_t)n * sizeof(int) + 1);
    if (!S->gid || !S->my || !S->full || !S->work || !S->work2 || !start || (L && !S->owner)) {
        defo_free(start);
        defo_free(S->gid);
        S->gid = NULL;
        return defo_error_oom("petsc numbering", (size_t)n * 40);
    }
    S->nl = 0;
    for (defo_index i = 0; i < n; i++) {
        const int o = L ? L->owner[i] : 0;
        if (o < 0 || o >= S->size) {
            defo_free(start);
            defo_free(S->gid);
            S->gid = NULL;
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "petsc: node %ld has owner %d", (long)i,
                              o);
        }
        start[o + 1]++;
    }
    for (int r = 0; r < S->size; r++) start[r + 1] += start[r];
    S->first = start[S->rank];
    S->rows = start[S->size];
    for (defo_index i = 0; i < n; i++) {
        const int o = L ? L->owner[i] : 0;
        S->gid[i] = start[o]++;
        if (o == S->rank) S->my[S->nl++] = i;
    }
    defo_free(start);
    if (L) memcpy(S->owner, L->owner, (size_t)n * sizeof(int));
    S->n = n;
    /* a new numbering: new matrix and vectors */
    destroy_objects(S);
    DEFO_PETSC_CALL(VecCreate(S->comm, &S->b));
    DEFO_PETSC_CALL(VecSetSizes(S->b, 3 * (PetscInt)S->nl, 3 * S->rows));
    DEFO_PETSC_CALL(VecSetBlockSize(S->b, 3));
    DEFO_PETSC_CALL(VecSetType(S->b, VECSTANDARD));
    DEFO_PETSC_CALL(VecDuplicate(S->b, &S->x));
    DEFO_PETSC_CALL(VecDuplicate(S->b, &S->x0));
    DEFO_PETSC_CALL(VecDuplicate(S->b, &S->r));
    DEFO_PETSC_CALL(VecDuplicate(S->b, &S->d));
    DEFO_PETSC_CALL(VecScatterCreateToAll(S->x, &S->toall, &S->xall));
    return DEFO_OK;
}

/* x (global) to every process, node order: out[3i..] = x at node i. */
static defo_status gather(ps *S, Vec x, double *out) {
    DEFO_PETSC_CALL(VecScatterBegin(S->toall, x, S->xall, INSERT_VALUES, SCATTER_FORWARD));
    DEFO_PETSC_CALL(VecScatterEnd(S->toall, x, S->xall, INSERT_VALUES, SCATTER_FORWARD));
    const PetscScalar *a = NULL;
    DEFO_PETSC_CALL(VecGetArrayRead(S->xall, &a));
    for (defo_index i = 0; i < S->n; i++)
        for (int c = 0; c < 3; c++) out[3 * (size_t)i + c] = a[3 * S->gid[i] + c];
    DEFO_PETSC_CALL(VecRestoreArrayRead(S->xall, &a));
    return DEFO_OK;
}

/* ------------------------------------------------------------ shell */
static PetscErrorCode shell_mult(Mat A, Vec X, Vec Y) {
    ps *S = NULL;
    PetscCall(MatShellGetContext(A, &S));
    const defo_linear_system *sys = S->sys;
    if (gather(S, X, S->full)) SETERRQ(S->comm, PETSC_ERR_LIB, "%s", defo_last_error());
    /* w = P x (every node), y = A w, Y = P y + C x (owned nodes) */
    for (defo_index i = 0; i < S->n; i++) {
        double P[9];
        proj(sys, i, P);
        mat3_vec(P, S->full + 3 * (size_t)i, S->work + 3 * (size_t)i);
    }
    if (sys->matrix)
        defo_bcsr_multiply(sys->matrix, S->work, S->work2);
    else
        sys->apply(sys->ctx, S->work, S->work2);
    PetscScalar *y = NULL;
    PetscCall(VecGetArray(Y, &y));
    for (defo_index k = 0; k < S->nl; k++) {
        const defo_index i = S->my[k];
        double P[9], py[3];
        proj(sys, i, P);
        mat3_vec(P, S->work2 + 3 * (size_t)i, py);
        for (int c = 0; c < 3; c++) {
            const double xc = S->full[3 * (size_t)i + c];
            double cx = xc - (P[3 * c] * S->full[3 * (size_t)i] +
                              P[3 * c + 1] * S->full[3 * (size_t)i + 1] +
                              P[3 * c + 2] * S->full[3 * (size_t)i + 2]);
            y[3 * k + c] = py[c] + cx;
        }
    }
    PetscCall(VecRestoreArray(Y, &y));
    return 0;
}

static PetscErrorCode shell_diagonal(Mat A, Vec D) {
    ps *S = NULL;
    PetscCall(MatShellGetContext(A, &S));
    const defo_linear_system *sys = S->sys;
    PetscScalar *d = NULL;
    PetscCall(VecGetArray(D, &d));
    for (defo_index k = 0; k < S->nl; k++) {
        const defo_index i = S->my[k];
        double P[9], T[9], PBP[9];
        proj(sys, i, P);
        const int64_t at = sys->matrix ? defo_bcsr_find(sys->matrix, i, i) : -1;
        const double *Dii = at >= 0         ? defo_bcsr_values_const(sys->matrix) + 9 * at
                            : sys->diagonal ? sys->diagonal + 9 * (size_t)i
                                            : NULL;
        if (Dii) {
            mat3_mul(P, Dii, T);
            mat3_mul(T, P, PBP);
        } else {
            for (int q = 0; q < 9; q++) PBP[q] = (q % 4 == 0);
        }
        for (int c = 0; c < 3; c++) d[3 * k + c] = PBP[4 * c] + (1.0 - P[4 * c]);
    }
    PetscCall(VecRestoreArray(D, &d));
    return 0;
}

/* ------------------------------------------------------------ matrix */
/* The owned rows' pattern of sys's matrix; *changed when it differs from
 * the one A was made for. */
static defo_status owned_pattern(ps *S, const defo_linear_system *sys, int *changed) {
    const defo_bcsr_pattern *pt = defo_bcsr_get_pattern(sys->matrix);
    int64_t total = 0, longest = 0;
    for (defo_index k = 0; k < S->nl; k++) {
        const defo_index i = S->my[k];
        const int64_t len = pt->row_offset[i + 1] - pt->row_offset[i];
        total += len;
        if (len > longest) longest = len;
    }
    int same = S->A && !S->shell && S->row_start && S->row_start[S->nl] == total;
    for (defo_index k = 0; same && k < S->nl; k++) {
        const defo_index i = S->my[k];
        const int64_t len = pt->row_offset[i + 1] - pt->row_offset[i];
        same = len == S->row_start[k + 1] - S->row_start[k] &&
               memcmp(S->cols + S->row_start[k], pt->col + pt->row_offset[i],
                      (size_t)len * sizeof(defo_index)) == 0;
    }
    *changed = !same;
    if (same) return DEFO_OK;
    defo_free(S->row_start);
    defo_free(S->gcols);
    defo_free(S->vals);
    S->gcols = NULL;
    S->vals = NULL;
    S->row_start = defo_malloc(((size_t)S->nl + 1) * sizeof *S->row_start);
    if (total > S->cols_cap || !S->cols) { /* (a process owning no rows: none) */
        defo_free(S->cols);
        S->cols = defo_malloc((size_t)total * sizeof *S->cols + 1);
        S->cols_cap = S->cols ? total : 0;
    }
    S->gcols = defo_malloc((size_t)longest * sizeof *S->gcols + 1);
    S->vals = defo_malloc(9 * (size_t)longest * sizeof *S->vals + 1);
    if (!S->row_start || !S->cols || !S->gcols || !S->vals)
        return defo_error_oom("petsc matrix pattern", (size_t)total * 16);
    S->max_row = longest;
    S->row_start[0] = 0;
    for (defo_index k = 0; k < S->nl; k++) {
        const defo_index i = S->my[k];
        const int64_t len = pt->row_offset[i + 1] - pt->row_offset[i];
        memcpy(S->cols + S->row_start[k], pt->col + pt->row_offset[i],
               (size_t)len * sizeof(defo_index));
        S->row_start[k + 1] = S->row_start[k] + len;
    }
    return DEFO_OK;
}

static defo_status create_matrix(ps *S, const defo_linear_system *sys) {
    MatDestroy(&S->A);
    const PetscInt m = 3 * (PetscInt)S->nl, N = 3 * S->rows;
    if (!sys->matrix || S->own_op) {
        S->shell = !sys->matrix;
        DEFO_PETSC_CALL(MatCreateShell(S->comm, m, m, N, N, S, &S->A));
        DEFO_PETSC_CALL(MatShellSetOperation(S->A, MATOP_MULT, (void (*)(void))shell_mult));
        DEFO_PETSC_CALL(
            MatShellSetOperation(S->A, MATOP_GET_DIAGONAL, (void (*)(void))shell_diagonal));
        return DEFO_OK;
    }
    S->shell = 0;
    PetscInt *dnz = defo_malloc(((size_t)S->nl + 1) * sizeof *dnz);
    PetscInt *onz = defo_malloc(((size_t)S->nl + 1) * sizeof *onz);
    if (!dnz || !onz) {
        defo_free(dnz);
        defo_free(onz);
        return defo_error_oom("petsc preallocation", (size_t)S->nl * 16);
    }
    for (defo_index k = 0; k < S->nl; k++) {
        dnz[k] = onz[k] = 0;
        for (int64_t q = S->row_start[k]; q < S->row_start[k + 1]; q++) {
            const int o = S->owner ? S->owner[S->cols[q]] : 0;
            if (o == S->rank)
                dnz[k]++;
            else
                onz[k]++;
        }
    }
    PetscErrorCode e = MatCreate(S->comm, &S->A);
    if (!e) e = MatSetOptionsPrefix(S->A, S->prefix);
    if (!e) e = MatSetSizes(S->A, m, m, N, N);
    if (!e) e = MatSetBlockSize(S->A, 3);
    if (!e) e = MatSetType(S->A, MATAIJ);
    if (!e) e = MatSetFromOptions(S->A);
    if (!e) e = MatXAIJSetPreallocation(S->A, 3, dnz, onz, NULL, NULL);
    /* PETSc's I-node products (3 rows sharing their columns) prefetch each
     * row ahead and measured 1.8× slower than the plain AIJ product on a
     * squash's stiffness (41 K tets, one process); (after the
     * preallocation: a distributed matrix passes it to its parts) */
    PetscBool aij = PETSC_FALSE;
    if (!e) e = PetscObjectTypeCompareAny((PetscObject)S->A, &aij, MATSEQAIJ, MATMPIAIJ, "");
    if (!e && aij) e = MatSetOption(S->A, MAT_USE_INODES, PETSC_FALSE);
    if (!e) e = MatSetOption(S->A, MAT_NEW_NONZERO_ALLOCATION_ERR, PETSC_TRUE);
    defo_free(dnz);
    defo_free(onz);
    if (e) return defo_petsc_error(e, "creating the matrix");
    return DEFO_OK;
}

/* The owned rows of P A P + C into S->A (assembled systems). */
static defo_status fill_matrix(ps *S, const defo_linear_system *sys) {
    const defo_bcsr_pattern *pt = defo_bcsr_get_pattern(sys->matrix);
    const double *val = defo_bcsr_values_const(sys->matrix);
    const int has_con = sys->constraint != NULL;
    for (defo_index k = 0; k < S->nl; k++) {
        const defo_index i = S->my[k];
        const int64_t b0 = pt->row_offset[i], len = pt->row_offset[i + 1] - b0;
        double Pi[9];
        const int ki = kind_of(sys, i);
        if (has_con) proj(sys, i, Pi);
        for (int64_t q = 0; q < len; q++) {
            const defo_index j = pt->col[b0 + q];
            S->gcols[q] = S->gid[j];
            double B[9];
            const double *A = val + 9 * (size_t)(b0 + q);
            if (!has_con ||
                (ki == DEFO_CONSTRAINT_NONE && kind_of(sys, j) == DEFO_CONSTRAINT_NONE)) {
                memcpy(B, A, sizeof B);
            } else {
                double Pj[9], T[9];
                proj(sys, j, Pj);
                mat3_mul(Pi, A, T);
                mat3_mul(T, Pj, B);
                if (j == i)
                    for (int c = 0; c < 9; c++) B[c] += (c % 4 == 0) - Pi[c];
            }
            /* PETSc's blocked row layout: row r of the block row holds every
             * block's row r */
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++)
                    S->vals[(size_t)r * 3 * (size_t)len + 3 * (size_t)q + (size_t)c] = B[3 * r + c];
        }
        const PetscInt row = S->gid[i];
        DEFO_PETSC_CALL(
            MatSetValuesBlocked(S->A, 1, &row, (PetscInt)len, S->gcols, S->vals, INSERT_VALUES));
    }
    DEFO_PETSC_CALL(MatAssemblyBegin(S->A, MAT_FINAL_ASSEMBLY));
    DEFO_PETSC_CALL(MatAssemblyEnd(S->A, MAT_FINAL_ASSEMBLY));
    return DEFO_OK;
}

/* GAMG's near-null space: the six rigid-body modes at the node coordinates. */
static defo_status near_null_space(ps *S, const defo_linear_system *sys) {
    if (S->shell || S->own_op || !sys->coords) return DEFO_OK;
    Vec c = NULL;
    MatNullSpace nsp = NULL;
    DEFO_PETSC_CALL(VecDuplicate(S->x, &c));
    PetscScalar *a = NULL;
    DEFO_PETSC_CALL(VecGetArray(c, &a));
    for (defo_index k = 0; k < S->nl; k++)
        for (int q = 0; q < 3; q++) a[3 * k + q] = sys->coords[3 * (size_t)S->my[k] + q];
    DEFO_PETSC_CALL(VecRestoreArray(c, &a));
    PetscErrorCode e = MatNullSpaceCreateRigidBody(c, &nsp);
    if (!e) e = MatSetNearNullSpace(S->A, nsp);
    MatNullSpaceDestroy(&nsp);
    VecDestroy(&c);
    if (e) return defo_petsc_error(e, "the rigid-body near-null space");
    return DEFO_OK;
}

/* ------------------------------------------------------------ KSP */
static PetscErrorCode monitor(KSP ksp, PetscInt it, PetscReal rnorm, void *ctx) {
    (void)ksp;
    ps *S = ctx;
    if (it == 0) S->rnorm0 = rnorm;
    S->monitor_it = (int)it;
    /* one process: an interrupt stops the solve at once (several processes
     * stop together at a frame's end: docs/distributed.md) */
    if (S->size == 1 && defo_interrupt_requested())
        SETERRQ(PETSC_COMM_SELF, PETSC_ERR_USER, "interrupted");
    return 0;
}

/* Options the solver's objects never read: a misspelt name (refused). */
static defo_status check_options(ps *S) {
    if (S->options_checked) return DEFO_OK;
    S->options_checked = 1;
    PetscInt count = 0;
    char **names = NULL, **values = NULL;
    DEFO_PETSC_CALL(PetscOptionsLeftGet(NULL, &count, &names, &values));
    char bad[400];
    bad[0] = '\0';
    const size_t pl = strlen(S->prefix);
    for (PetscInt k = 0; k < count; k++)
        if (strncmp(names[k], S->prefix, pl) == 0 &&
            strlen(bad) + strlen(names[k]) + 4 < sizeof bad) {
            strcat(bad, bad[0] ? ", -" : "-");
            strcat(bad, names[k] + pl);
        }
    PetscOptionsLeftRestore(NULL, &count, &names, &values);
    if (bad[0])
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "petsc_options: %s not used by the solver (misspelt, or not an option of "
                          "its Krylov method or preconditioner)",
                          bad);
    return DEFO_OK;
}

/* ------------------------------------------------------------ defo's
 * preconditioner as PETSc's PCSHELL: z = S M⁻¹ S r + C r, M the two-level
 * (or block IC(0)) preconditioner of sys's matrix with its fixed nodes'
 * couplings dropped — what defo's projected PCG applies, so the Krylov
 * iteration is defo's own; the identity on the constrained components of
 * (P A P + C).  One process (the block rows in node order). */
static PetscErrorCode own_setup(PC pc) {
    ps *S = NULL;
    PetscCall(PCShellGetContext(pc, &S));
    const defo_linear_system *sys = S->sys;
    if (!sys || !sys->matrix)
        SETERRQ(S->comm, PETSC_ERR_SUP, "defo's preconditioner needs an assembled matrix");
    const defo_precond_kind want = sys->coords ? DEFO_PRECOND_TWO_LEVEL : DEFO_PRECOND_BLOCK_IC0;
    if (S->own && defo_precond_get_kind(S->own) != want) {
        defo_precond_destroy(S->own);
        S->own = NULL;
    }
    if (!S->own) {
        defo_precond_def d = defo_default_precond_def();
        d.kind = want;
        if (defo_precond_create(&d, &S->own))
            SETERRQ(S->comm, PETSC_ERR_LIB, "%s", defo_last_error());
    }
    /* a factor that fails (an indefinite diagonal block) is a failed
     * preconditioner for KSP (KSP_DIVERGED_PC_FAILED): the backend then makes
     * it again and falls back to Jacobi on |diagonal| (file comment) */
    S->own_ok = defo_precond_setup(S->own, sys->matrix, sys->constraint, sys->coords) == DEFO_OK;
    if (!S->own_ok) PetscCall(PCSetFailedReason(pc, PC_FACTOR_NUMERIC_ZEROPIVOT));
    return 0;
}

static PetscErrorCode own_apply(PC pc, Vec X, Vec Y) {
    ps *S = NULL;
    PetscCall(PCShellGetContext(pc, &S));
    const defo_linear_system *sys = S->sys;
    if (!S->own_ok) {
        PetscCall(PCSetFailedReason(pc, PC_FACTOR_NUMERIC_ZEROPIVOT));
        PetscCall(VecCopy(X, Y));
        return 0;
    }
    const PetscScalar *x = NULL;
    PetscScalar *y = NULL;
    PetscCall(VecGetArrayRead(X, &x));
    for (defo_index i = 0; i < S->n; i++) {
        double P[9];
        proj(sys, i, P);
        mat3_vec(P, x + 3 * S->gid[i], S->work + 3 * (size_t)i);
    }
    defo_precond_apply(S->own, S->work, S->work2);
    PetscCall(VecGetArray(Y, &y));
    for (defo_index i = 0; i < S->n; i++) {
        double P[9], pz[3], px[3];
        const double *xi = x + 3 * S->gid[i];
        proj(sys, i, P);
        mat3_vec(P, S->work2 + 3 * (size_t)i, pz);
        mat3_vec(P, xi, px);
        for (int c = 0; c < 3; c++) y[3 * S->gid[i] + c] = pz[c] + (xi[c] - px[c]);
    }
    PetscCall(VecRestoreArray(Y, &y));
    PetscCall(VecRestoreArrayRead(X, &x));
    return 0;
}

/* pc is PCSHELL: defo's preconditioner, or a refusal where it cannot be. */
static defo_status own_attach(ps *S, PC pc) {
    if (S->size > 1)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "petsc: -pc_type shell (defo's own preconditioner) runs on one process; "
                          "on %d use gamg (the default there) or another PETSc preconditioner",
                          S->size);
    if (S->shell)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "petsc: -pc_type shell (defo's own preconditioner) needs an assembled "
                          "matrix; this system is matrix-free");
    DEFO_PETSC_CALL(PCShellSetContext(pc, S));
    DEFO_PETSC_CALL(PCShellSetSetUp(pc, own_setup));
    DEFO_PETSC_CALL(PCShellSetApply(pc, own_apply));
    DEFO_PETSC_CALL(PCShellSetName(pc, "defo two-level"));
    return DEFO_OK;
}

static defo_status make_ksp(ps *S) {
    if (S->ksp) return DEFO_OK;
    DEFO_PETSC_CALL(KSPCreate(S->comm, &S->ksp));
    DEFO_PETSC_CALL(KSPSetOptionsPrefix(S->ksp, S->prefix));
    DEFO_PETSC_CALL(KSPSetType(S->ksp, KSPCG));
    DEFO_PETSC_CALL(KSPSetNormType(S->ksp, KSP_NORM_UNPRECONDITIONED));
    PC pc = NULL;
    DEFO_PETSC_CALL(KSPGetPC(S->ksp, &pc));
    DEFO_PETSC_CALL(PCSetType(pc, S->shell ? PCJACOBI : PCGAMG));
    if (!S->shell) {
        /* setups keep the prolongators (file comment); the Chebyshev
         * smoothers estimate their own bounds at each setup: GAMG's
         * smoothed-aggregation estimate is of the matrix its prolongators
         * were made from, too small once contact stiffens the system, and a
         * Chebyshev polynomial applied beyond its bound is indefinite
         * (measured: every later Newton step of a squash stopped CG at its
         * second iteration) */
        DEFO_PETSC_CALL(PCGAMGSetReuseInterpolation(pc, PETSC_TRUE));
        DEFO_PETSC_CALL(PCGAMGSetUseSAEstEig(pc, PETSC_FALSE));
        /* one process: defo's own preconditioner unless -pc_type says
         * otherwise (file comment) */
        PetscBool named = PETSC_FALSE;
        DEFO_PETSC_CALL(PetscOptionsHasName(NULL, S->prefix, "-pc_type", &named));
        if (S->size == 1 && !named) DEFO_PETSC_CALL(PCSetType(pc, PCSHELL));
    }
    DEFO_PETSC_CALL(KSPMonitorSet(S->ksp, monitor, S, NULL));
    DEFO_PETSC_CALL(KSPSetFromOptions(S->ksp));
    PetscBool own = PETSC_FALSE;
    DEFO_PETSC_CALL(PetscObjectTypeCompare((PetscObject)pc, PCSHELL, &own));
    if (own) {
        defo_status st = own_attach(S, pc);
        if (st) {
            KSPDestroy(&S->ksp);
            return st;
        }
    }
    PetscBool keep = PETSC_TRUE, set = PETSC_FALSE;
    DEFO_PETSC_CALL(
        PetscOptionsGetBool(NULL, S->prefix, "-pc_gamg_reuse_interpolation", &keep, &set));
    S->prol_keep = !set || keep;
    S->prol_made = 0;
    return DEFO_OK;
}

static defo_status operator_of(ps *S, const defo_linear_system *sys, int *changed) {
    defo_status st = numbering(S, sys);
    if (st) return st;
    *changed = 0;
    if (sys->matrix && S->own_op) { /* a shell around the matrix of the moment */
        if (!S->A || S->shell || S->A_n != sys->n) {
            *changed = 1;
            st = create_matrix(S, sys);
            S->A_n = sys->n;
        }
    } else if (sys->matrix) {
        st = owned_pattern(S, sys, changed);
        if (!st && *changed) st = create_matrix(S, sys);
        if (!st) st = fill_matrix(S, sys);
    } else if (!S->A || !S->shell) {
        *changed = 1;
        st = create_matrix(S, sys);
    }
    return st;
}

/* The preconditioner of sys's matrix: GAMG on its kept prolongators, or
 * wholly (whole, or by the rule of the file comment). */
static defo_status setup_at(ps *S, const defo_linear_system *sys, int whole) {
    int changed = 0;
    S->sys = sys;
    defo_status st = operator_of(S, sys, &changed);
    if (!st && S->ksp && changed) { /* another matrix type or size: a fresh KSP */
        KSPDestroy(&S->ksp);
    }
    if (!st) st = near_null_space(S, sys);
    if (!st) st = make_ksp(S);
    if (st) return st;
    PC pc = NULL;
    PetscBool gamg = PETSC_FALSE;
    DEFO_PETSC_CALL(KSPGetPC(S->ksp, &pc));
    DEFO_PETSC_CALL(PetscObjectTypeCompare((PetscObject)pc, PCGAMG, &gamg));
    const double growth = S->def.rate_growth > 0 ? S->def.rate_growth : 2.0;
    whole =
        whole || !gamg || !S->prol_made || !S->prol_keep || S->setup_rate > growth * S->prol_rate;
    if (gamg) DEFO_PETSC_CALL(PCGAMGSetReuseInterpolation(pc, whole ? PETSC_FALSE : PETSC_TRUE));
    /* a shell's values change with sys's matrix without PETSc seeing it:
     * its state moves so that the setup below is not skipped */
    if (S->own_op) {
        DEFO_PETSC_CALL(MatAssemblyBegin(S->A, MAT_FINAL_ASSEMBLY));
        DEFO_PETSC_CALL(MatAssemblyEnd(S->A, MAT_FINAL_ASSEMBLY));
    }
    DEFO_PETSC_CALL(KSPSetOperators(S->ksp, S->A, S->A));
    DEFO_PETSC_CALL(KSPSetReusePreconditioner(S->ksp, PETSC_FALSE));
    DEFO_PETSC_CALL(KSPSetUp(S->ksp));
    DEFO_PETSC_CALL(KSPSetReusePreconditioner(S->ksp, PETSC_TRUE));
    if (gamg) DEFO_PETSC_CALL(PCGAMGSetReuseInterpolation(pc, PETSC_TRUE));
    S->fresh = whole ? FRESH_WHOLE : FRESH_COARSE;
    if (whole) S->prol_made = 1, S->prol_rate = 0.0;
    S->rate_pending = 1;
    return check_options(S);
}

/* A PETSc error code as a status. */
static defo_status petsc_status(PetscErrorCode e, const char *what) {
    return e ? defo_petsc_error(e, what) : DEFO_OK;
}

/* KSP's stops that say nothing of the system but that the preconditioner
 * or the arithmetic failed (an indefinite preconditioner, a breakdown, a
 * non-finite value): solved again, never handed on.  Reaching the cap and
 * a direction of non-positive curvature (KSP_DIVERGED_INDEFINITE_MAT) are
 * the matrix's and have their own answers. */
static int broke_down(KSPConvergedReason reason) {
    return reason < 0 && reason != KSP_DIVERGED_ITS && reason != KSP_DIVERGED_INDEFINITE_MAT;
}

/* KSPSolve of S->b from the guess in S->x; an interrupt in the monitor
 * becomes DEFO_ERR_INTERRUPTED. */
static defo_status run_ksp(ps *S, KSP ksp, KSPConvergedReason *reason, PetscInt *its,
                           PetscReal *rnorm) {
    S->rnorm0 = 0.0;
    S->monitor_it = 0;
    PetscErrorCode e = KSPSolve(ksp, S->b, S->x);
    if (e) {
        if (defo_interrupt_requested()) {
            defo_status r = defo_petsc_error(e, "KSPSolve");
            (void)r;
            return defo_error(DEFO_ERR_INTERRUPTED, "petsc: CG interrupted");
        }
        return defo_petsc_error(e, "KSPSolve");
    }
    DEFO_PETSC_CALL(KSPGetConvergedReason(ksp, reason));
    DEFO_PETSC_CALL(KSPGetIterationNumber(ksp, its));
    DEFO_PETSC_CALL(KSPGetResidualNorm(ksp, rnorm));
    return DEFO_OK;
}

/* CG with Jacobi on |diagonal| for the operator S->A (the fallback after a
 * breakdown; no options prefix: petsc_options chose what broke). */
static defo_status make_jacobi(ps *S, double rtol, PetscInt maxit, KSP *out) {
    PC pc = NULL;
    PetscErrorCode e = KSPCreate(S->comm, out);
    if (!e) e = KSPSetType(*out, KSPCG);
    if (!e) e = KSPSetNormType(*out, KSP_NORM_UNPRECONDITIONED);
    if (!e) e = KSPSetOperators(*out, S->A, S->A);
    if (!e) e = KSPGetPC(*out, &pc);
    if (!e) e = PCSetType(pc, PCJACOBI);
    if (!e) e = PCJacobiSetUseAbs(pc, PETSC_TRUE);
    if (!e) e = KSPMonitorSet(*out, monitor, S, NULL);
    if (!e) e = KSPSetTolerances(*out, rtol, 0.0, PETSC_DEFAULT, maxit);
    if (!e) e = KSPSetInitialGuessNonzero(*out, PETSC_TRUE);
    if (e) {
        KSPDestroy(out);
        return defo_petsc_error(e, "the Jacobi fallback");
    }
    return DEFO_OK;
}

/* A Newton step (DEFO_CURVATURE_STOP): S->x must be x₀ plus a descent
 * direction d of the quadratic model at x₀, r₀ᵀd > 0 (r₀ = b̃ − Ã x₀), as
 * defo's PCG returns by stopping at the first pᵀAp ≤ 0 (TSIF05 §3).  KSP's
 * CG stops only when the curvature changes sign or is 0 — it takes a first
 * direction of negative curvature with a negative length, an ascent
 * direction, and it may even converge on an indefinite matrix to a point
 * the model does not descend to — so its iterate is checked; one that does
 * not descend is replaced by the preconditioned residual M⁻¹ r₀ when that
 * descends, else by r₀ (*replaced = 1). */
static defo_status descent_step(ps *S, KSP ksp, int *replaced) {
    *replaced = 0;
    PetscScalar g = 0.0;
    DEFO_PETSC_CALL(MatMult(S->A, S->x0, S->r));
    DEFO_PETSC_CALL(VecAYPX(S->r, -1.0, S->b));
    DEFO_PETSC_CALL(VecWAXPY(S->d, -1.0, S->x0, S->x));
    DEFO_PETSC_CALL(VecDot(S->r, S->d, &g));
    if (g > 0.0 && isfinite(g)) return DEFO_OK;
    *replaced = 1;
    PC pc = NULL;
    DEFO_PETSC_CALL(KSPGetPC(ksp, &pc));
    DEFO_PETSC_CALL(PCApply(pc, S->r, S->d));
    DEFO_PETSC_CALL(VecDot(S->r, S->d, &g));
    if (!(g > 0.0 && isfinite(g))) DEFO_PETSC_CALL(VecCopy(S->r, S->d));
    DEFO_PETSC_CALL(VecWAXPY(S->x, 1.0, S->x0, S->d));
    return DEFO_OK;
}

/* ------------------------------------------------------------ backend ops */
static defo_status ps_create(const defo_linear_solver_def *def, void **state) {
    *state = NULL;
    defo_status st = defo_petsc_initialize(NULL, NULL);
    if (st) return st;
    ps *S = defo_calloc(1, sizeof *S);
    if (!S) return defo_error_oom("petsc solver", sizeof *S);
    S->def = *def;
    snprintf(S->prefix, sizeof S->prefix, "defo%d_", ++g_solvers);
    const defo_comm *c = defo_petsc_comm();
    S->comm = c && c->size > 1 ? PETSC_COMM_WORLD : PETSC_COMM_SELF;
    S->rank = c && c->size > 1 ? c->rank : 0;
    S->size = c && c->size > 1 ? c->size : 1;
    /* the options string under this solver's prefix: -name → -defoK_name */
    const char *o = def->backend_options;
    char buf[4 * DEFO_BACKEND_OPTIONS_MAX];
    size_t at = 0;
    for (size_t k = 0; o[k] && at + 40 < sizeof buf; k++) {
        const int starts =
            o[k] == '-' && (k == 0 || o[k - 1] == ' ' || o[k - 1] == '\t') &&
            ((o[k + 1] >= 'a' && o[k + 1] <= 'z') || (o[k + 1] >= 'A' && o[k + 1] <= 'Z'));
        buf[at++] = o[k];
        if (starts) at += (size_t)snprintf(buf + at, sizeof buf - at, "%s", S->prefix);
    }
    buf[at] = '\0';
    if (buf[0]) {
        PetscErrorCode e = PetscOptionsInsertString(NULL, buf);
        if (e) {
            defo_free(S);
            return defo_petsc_error(e, "petsc_options");
        }
    }
    /* one process with defo's preconditioner (no -pc_type, or shell) and
     * no -mat_type: CG multiplies with defo's block product (file comment) */
    char pc_type[64] = "";
    PetscBool pc_set = PETSC_FALSE, mat_set = PETSC_FALSE;
    PetscErrorCode e =
        PetscOptionsGetString(NULL, S->prefix, "-pc_type", pc_type, sizeof pc_type, &pc_set);
    if (!e) e = PetscOptionsHasName(NULL, S->prefix, "-mat_type", &mat_set);
    if (e) {
        defo_free(S);
        return defo_petsc_error(e, "petsc_options");
    }
    S->own_op = S->size == 1 && (!pc_set || !strcmp(pc_type, "shell")) && !mat_set;
    *state = S;
    return DEFO_OK;
}

static void ps_destroy(void *state) {
    ps *S = state;
    if (!S) return;
    KSPDestroy(&S->ksp);
    destroy_objects(S);
    defo_precond_destroy(S->own);
    void *a[] = {S->owner, S->gid,  S->my,   S->row_start, S->cols,
                 S->gcols, S->vals, S->full, S->work,      S->work2};
    for (size_t k = 0; k < sizeof a / sizeof a[0]; k++) defo_free(a[k]);
    defo_free(S);
}

static defo_status ps_setup(void *state, const defo_linear_system *sys) {
    return setup_at(state, sys, 0);
}

/* The right-hand side P (b − A C x₀) + C x₀ and the guess into S->b, S->x;
 * *bnorm = |S b| (the free part of b). */
static defo_status load_system(ps *S, const defo_linear_system *sys, const double *b,
                               const double *x0, double *bnorm) {
    /* w = C x₀ (every node); A w where any is nonzero */
    int any = 0;
    for (defo_index i = 0; i < S->n; i++) {
        double P[9];
        proj(sys, i, P);
        const double *xi = x0 + 3 * (size_t)i;
        for (int r = 0; r < 3; r++) {
            double w = xi[r] - (P[3 * r] * xi[0] + P[3 * r + 1] * xi[1] + P[3 * r + 2] * xi[2]);
            S->work[3 * (size_t)i + r] = w;
            any |= w != 0.0;
        }
    }
    if (any) {
        if (sys->matrix)
            defo_bcsr_multiply(sys->matrix, S->work, S->work2);
        else
            sys->apply(sys->ctx, S->work, S->work2);
    }
    PetscScalar *pb = NULL, *px = NULL;
    DEFO_PETSC_CALL(VecGetArray(S->b, &pb));
    DEFO_PETSC_CALL(VecGetArray(S->x, &px));
    double ss = 0.0;
    for (defo_index k = 0; k < S->nl; k++) {
        const defo_index i = S->my[k];
        double P[9], r[3], pr[3], pbv[3];
        proj(sys, i, P);
        for (int c = 0; c < 3; c++)
            r[c] = b[3 * (size_t)i + c] - (any ? S->work2[3 * (size_t)i + c] : 0.0);
        mat3_vec(P, r, pr);
        mat3_vec(P, b + 3 * (size_t)i, pbv);
        for (int c = 0; c < 3; c++) {
            pb[3 * k + c] = pr[c] + S->work[3 * (size_t)i + c];
            px[3 * k + c] = x0[3 * (size_t)i + c];
            ss += pbv[c] * pbv[c];
        }
    }
    DEFO_PETSC_CALL(VecRestoreArray(S->b, &pb));
    DEFO_PETSC_CALL(VecRestoreArray(S->x, &px));
    double all = ss;
    if (S->size > 1 && MPI_Allreduce(&ss, &all, 1, MPI_DOUBLE, MPI_SUM, S->comm) != MPI_SUCCESS)
        return defo_error(DEFO_ERR_IO, "MPI: the right-hand side's norm");
    *bnorm = sqrt(all);
    return DEFO_OK;
}

static defo_status ps_solve(void *state, const defo_linear_system *sys, const double *b, double *x,
                            double tolerance, defo_backend_result *out) {
    ps *S = state;
    memset(out, 0, sizeof *out);
    S->sys = sys;
    int changed = 0;
    defo_status st = S->ksp ? operator_of(S, sys, &changed) : DEFO_OK;
    if (st) return st;
    if (!S->ksp || changed) { /* a new pattern or size: the preconditioner again */
        st = setup_at(S, sys, 1);
        if (st) return st;
        out->setup = 1;
    }
    /* (0: made for an earlier matrix, the lag policy) */
    const int fresh = S->fresh;
    S->fresh = 0;
    double bnorm = 0.0, bfull = 0.0;
    st = load_system(S, sys, b, x, &bnorm);
    if (st) return st;
    DEFO_PETSC_CALL(VecNorm(S->b, NORM_2, &bfull));
    const defo_linear_solver_def *d = &S->def;
    const int fixed = d->fixed_iterations > 0;
    double tol = tolerance > 0 ? tolerance : d->tolerance;
    if (bnorm == 0.0) { /* nothing free to solve for: x keeps its constrained values */
        for (defo_index i = 0; i < S->n; i++) {
            double P[9];
            proj(sys, i, P);
            double *xi = x + 3 * (size_t)i, px[3];
            mat3_vec(P, xi, px);
            for (int c = 0; c < 3; c++) xi[c] -= px[c];
        }
        out->converged = 1;
        return DEFO_OK;
    }
    double rtol = tol > 0 && bfull > 0 ? tol * bnorm / bfull : 0.0;
    if (!(rtol < 1.0)) rtol = 0.999;
    const double rt = fixed && tol == 0 ? 1e-300 : rtol;
    const PetscInt maxit = fixed ? d->fixed_iterations : d->max_iterations;
    DEFO_PETSC_CALL(KSPSetTolerances(S->ksp, rt, 0.0, PETSC_DEFAULT, maxit));
    DEFO_PETSC_CALL(KSPSetInitialGuessNonzero(S->ksp, PETSC_TRUE));
    DEFO_PETSC_CALL(VecCopy(S->x, S->x0));
    KSPConvergedReason reason = KSP_CONVERGED_ITERATING;
    PetscInt its = 0;
    PetscReal rnorm = 0.0;
    st = run_ksp(S, S->ksp, &reason, &its, &rnorm);
    if (st) return st;
    out->initial = S->rnorm0 / bnorm;
    int total = (int)its;
    if (broke_down(reason) && fresh != FRESH_WHOLE) {
        /* the preconditioner was made for an earlier matrix (the lag
         * policy) or on prolongators of one: made wholly for this one, and
         * the solve again */
        st = setup_at(S, sys, 1);
        if (st) return st;
        out->setup = 1;
        out->retried = 1;
        DEFO_PETSC_CALL(VecCopy(S->x0, S->x));
        st = run_ksp(S, S->ksp, &reason, &its, &rnorm);
        if (st) return st;
        total += (int)its;
    }
    if (S->rate_pending && !broke_down(reason) && its > 0) {
        /* the first solve after a setup: how well the prolongators fit */
        const double red = S->rnorm0 > 0 ? rnorm / S->rnorm0 : 1.0;
        const double rate = fmax((double)its / fmax(-log10(fmax(red, 1e-300)), 0.5), 1.0);
        S->setup_rate = rate;
        if (S->prol_rate == 0.0) S->prol_rate = rate;
        S->rate_pending = 0;
    }
    KSP jacobi = NULL;
    if (broke_down(reason)) {
        /* a fresh preconditioner broke down too: Jacobi on |diagonal|,
         * positive definite wherever the matrix is */
        st = make_jacobi(S, rt, maxit, &jacobi);
        if (!st) st = petsc_status(VecCopy(S->x0, S->x), "VecCopy");
        if (!st) st = run_ksp(S, jacobi, &reason, &its, &rnorm);
        if (st) {
            KSPDestroy(&jacobi);
            return st;
        }
        out->fallback = 1;
        total += (int)its;
    }
    out->iterations = total;
    out->residual = rnorm / bnorm;
    out->converged = reason > 0 || (fixed && reason == KSP_DIVERGED_ITS);
    out->hit_max = reason == KSP_DIVERGED_ITS;
    if (d->curvature == DEFO_CURVATURE_STOP &&
        (reason > 0 || reason == KSP_DIVERGED_ITS || reason == KSP_DIVERGED_INDEFINITE_MAT)) {
        int replaced = 0;
        st = descent_step(S, jacobi ? jacobi : S->ksp, &replaced);
        out->negative = reason == KSP_DIVERGED_INDEFINITE_MAT || replaced;
        if (replaced) out->converged = 0;
    } else if (reason < 0 && reason != KSP_DIVERGED_ITS) {
        st = defo_error(DEFO_ERR_NUMERICAL,
                        "petsc: the %s solve failed: %s after %d iterations (relative residual "
                        "%g)%s",
                        d->curvature == DEFO_CURVATURE_STOP ? "Newton step" : "linear",
                        KSPConvergedReasons[reason], total, out->residual,
                        out->fallback ? ", with the preconditioner made for this matrix and "
                                        "with Jacobi"
                                      : "");
    }
    KSPDestroy(&jacobi);
    if (st) return st;
    st = gather(S, S->x, S->full);
    if (st) return st;
    /* x = P x + C x₀: the constrained components exactly those of the guess
     * (x holds x₀ still); the preconditioner couples them to the free ones,
     * so CG leaves them right only to its tolerance */
    for (defo_index i = 0; i < S->n; i++) {
        double *xi = x + 3 * (size_t)i;
        const double *si = S->full + 3 * (size_t)i;
        if (kind_of(sys, i) == DEFO_CONSTRAINT_NONE) {
            for (int c = 0; c < 3; c++) xi[c] = si[c];
            continue;
        }
        double P[9], ps_[3], px[3];
        proj(sys, i, P);
        mat3_vec(P, si, ps_);
        mat3_vec(P, xi, px);
        for (int c = 0; c < 3; c++) xi[c] = ps_[c] + (xi[c] - px[c]);
    }
    for (size_t k = 0; k < 3 * (size_t)S->n; k++)
        if (!isfinite(x[k]))
            return defo_error(DEFO_ERR_NUMERICAL, "petsc: the solution is not finite at node %ld",
                              (long)(k / 3));
    if (out->hit_max && !fixed)
        return defo_error(DEFO_WARN_NOT_CONVERGED,
                          "petsc: CG stopped at %d iterations (relative residual %g, tolerance %g)",
                          (int)its, out->residual, tol);
    return DEFO_OK;
}

static size_t ps_bytes(const void *state) {
    const ps *S = state;
    if (!S) return 0;
    return sizeof *S + (size_t)S->n * (sizeof(PetscInt) + sizeof(defo_index) + sizeof(int) + 72) +
           (size_t)S->cols_cap * (sizeof(defo_index) + 72);
}

static const defo_linear_backend g_backend = {
    "petsc", ps_create, ps_destroy, ps_setup, ps_solve, ps_bytes,
};

const defo_linear_backend *defo_petsc_backend(void) {
    return &g_backend;
}

#endif
