/*
 * solver/precond.c — the preconditioners of PCG on a 3×3-block CSR matrix
 * (MG04 §6: the implicit Euler system (M + ΔtC + Δt²K') v = b; TSIF05 §4:
 * the Newton steps K δx = f): Jacobi, block Jacobi (inverted 3×3 diagonal
 * blocks), block incomplete Cholesky with zero fill-in, a sparse direct
 * Cholesky (solver/cholesky.c, CHOLMOD) and a two-level one: IC(0) plus an
 * additive coarse correction over rigid-body modes of node aggregates.
 * When to refactor them is the linear solver's business (solver/linear.c).
 *
 * Why two levels: MG04's system (M + Δt²K') v = b is dominated by Δt²K'
 * (by ~300× at the issue-6 cantilever), so its slow CG modes are the smooth
 * near-rigid deformations (global bending) that no local preconditioner
 * sees; 64 aggregates × 6 rigid modes capture them: 110 → 44 PCG iterations
 * at n = 13.  Additive, because it costs no extra product: a symmetric
 * multiplicative cycle (coarse, IC(0), coarse) took 35 iterations but two
 * more SpMVs each, and was slower.  The sparse direct factor needs only ~5 iterations when lagged
 * but its fill (16 M nonzeros at n = 13, 12 s to factor with the reference
 * BLAS) makes each application cost ~70 SpMVs, so it loses there.
 *
 * Constraints are projections in CG (solver/pcg_core.h): S per node is I,
 * I − n nᵀ or 0 and the preconditioner is used as S P⁻¹ S, so it only has
 * to approximate A on range(S).
 *
 * Block IC(0): the IKJ form of incomplete LU restricted to A's pattern, on
 * 3×3 blocks in node order.  For symmetric A it is the incomplete Cholesky
 * L D Lᵀ (U = D Lᵀ).  The couplings of fixed nodes are dropped first, so the
 * factor approximates the operator CG sees.  A pivot that is not positive
 * definite (IC(0) can break down for matrices that are not M-matrices)
 * restarts the factorisation on A + α·diag(A) with α = 1e-3, 1e-2, ...
 * Triangular solves are sequential by nature; to use two cores the factor
 * is that of A restricted to D subdomains (couplings between them dropped:
 * a block-Jacobi of IC(0) factors), so factorisation and solves run one
 * subdomain per thread.  Subdomains are slabs of breadth-first levels of
 * A's pattern from a pseudo-peripheral node, so their interface is a
 * cross-section of the body for any node numbering.  D is fixed by the
 * matrix size (2 from 4096 nodes) or by the caller, never by the thread
 * count, so results stay bitwise identical for any number of threads.
 * The solves read L in single precision with D⁻¹ symmetrised: the
 * preconditioner (L D Lᵀ)⁻¹ is an exactly symmetric operator and the
 * factor traffic halves (the rounding of L is far below IC(0)'s own error).
 *
 * Determinism: dot products by defo_dot (fixed blocking); everything else is
 * elementwise or sequential, so iterates do not depend on the thread count.
 */
#include "defo/sparse.h"

#include "defo/cholesky.h"
#include "defo/math.h"

#include "base/parallel.h"
#include "solver/solver_internal.h"

#include <math.h>
#include <string.h>

const char *defo_precond_name(defo_precond_kind kind) {
    switch (kind) {
    case DEFO_PRECOND_NONE:
        return "none";
    case DEFO_PRECOND_JACOBI:
        return "jacobi";
    case DEFO_PRECOND_BLOCK_JACOBI:
        return "block_jacobi";
    case DEFO_PRECOND_BLOCK_IC0:
        return "block_ic0";
    case DEFO_PRECOND_CHOLESKY:
        return "cholesky";
    case DEFO_PRECOND_TWO_LEVEL:
        return "two_level";
    }
    return "unknown";
}

defo_status defo_precond_from_name(const char *name, defo_precond_kind *kind) {
    for (int k = DEFO_PRECOND_NONE; k <= DEFO_PRECOND_TWO_LEVEL; k++)
        if (name && !strcmp(name, defo_precond_name((defo_precond_kind)k))) {
            if (kind) *kind = (defo_precond_kind)k;
            return DEFO_OK;
        }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                      "preconditioner '%s' is not one of none, jacobi, block_jacobi, block_ic0, "
                      "cholesky, two_level",
                      name ? name : "(null)");
}

defo_precond_def defo_default_precond_def(void) {
    defo_precond_def d;
    memset(&d, 0, sizeof d);
    d.kind = DEFO_PRECOND_BLOCK_JACOBI;
    d.domains = 0;
    return d;
}

/* Everything setup allocates (the kind and options stay). */
static void release(defo_precond *P) {
    defo_free(P->inv);
    defo_free(P->factor);
    defo_free(P->lower);
    defo_free(P->inv_pivot);
    defo_free(P->pos);
    defo_free(P->domain_of);
    defo_free(P->domain_rows);
    defo_free(P->lower_col);
    defo_free(P->lower_offset);
    defo_free(P->domain_offset);
    defo_cholesky_destroy(P->cholesky);
    defo_free(P->aggregate);
    defo_free(P->offset);
    defo_free(P->coarse);
    defo_free(P->coarse_work);
    defo_precond_kind kind = P->kind;
    int domains = P->domains, robust = P->robust;
    memset(P, 0, sizeof *P);
    P->kind = kind;
    P->domains = domains;
    P->robust = robust;
}

defo_status defo_precond_create(const defo_precond_def *def, defo_precond **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "precond: out is NULL");
    *out = NULL;
    defo_precond_def d = def ? *def : defo_default_precond_def();
    if ((int)d.kind < DEFO_PRECOND_NONE || (int)d.kind > DEFO_PRECOND_TWO_LEVEL)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "precond.kind: %d is unknown", (int)d.kind);
    if (d.domains < 0)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "precond.domains: %d (must be >= 0)",
                          d.domains);
    if (d.kind == DEFO_PRECOND_CHOLESKY && !defo_cholesky_available())
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "precond: cholesky requested but defo was built without CHOLMOD "
                          "(-DDEFO_CHOLMOD=OFF)");
    defo_precond *P = defo_calloc(1, sizeof *P);
    if (!P) return defo_error_oom("preconditioner", sizeof *P);
    P->kind = d.kind;
    P->domains = d.domains;
    *out = P;
    return DEFO_OK;
}

void defo_precond_destroy(defo_precond *P) {
    if (!P) return;
    release(P);
    defo_free(P);
}

defo_precond_kind defo_precond_get_kind(const defo_precond *P) {
    return P->kind;
}

static defo_mat3 load3(const double *v) {
    defo_mat3 m;
    memcpy(m.m, v, 9 * sizeof *v);
    return m;
}
static void store3(double *v, defo_mat3 m) {
    memcpy(v, m.m, 9 * sizeof *v);
}

/* Invert a block expected to be (nearly) symmetric positive definite:
 * leading minors of its symmetric part must be positive, relative to scale. */
static int invert_spd(const double *b, double *out) {
    defo_mat3 m = load3(b);
    double s = defo_m3_maxabs(m);
    double m1 = m.m[0][0];
    double m2 = m.m[0][0] * m.m[1][1] - 0.25 * (m.m[0][1] + m.m[1][0]) * (m.m[0][1] + m.m[1][0]);
    if (!(s > 0) || !(m1 > 1e-12 * s) || !(m2 > 1e-12 * s * s) ||
        !(defo_m3_det(m) > 1e-12 * s * s * s))
        return 0;
    defo_mat3 inv;
    if (!defo_m3_inverse(m, &inv)) return 0;
    store3(out, inv);
    return 1;
}

static int is_fixed(const unsigned char *constraint, defo_index i) {
    return constraint && constraint[i] == DEFO_CONSTRAINT_FIXED;
}

enum { IC0_AUTO_SPLIT_NODES = 4096 };

/* The solves' copy of L: for the h-th row of domain_rows, its blocks below
 * the diagonal within its own domain, at lower_offset[h] .. [h + 1]. */
static void ic0_lower_pattern(defo_precond *P, const defo_bcsr *A) {
    const defo_index n = A->num_rows;
    int64_t t = 0;
    for (defo_index h = 0; h < n; h++) {
        defo_index i = P->domain_rows[h];
        P->lower_offset[h] = t;
        for (int64_t q = A->row_offset[i]; q < A->diag[i]; q++)
            if (P->domain_of[A->col[q]] == P->domain_of[i]) P->lower_col[t++] = A->col[q];
    }
    P->lower_offset[n] = t;
}

/* Subdomains: the nodes in breadth-first order over A's pattern from a
 * pseudo-peripheral node (the last node reached from node 0; further
 * components from the next unvisited node after it) cut into D runs of
 * n/D, so each domain is a slab of graph levels with a cross-section for
 * interface whatever the node numbering.  Each domain's rows are processed
 * in increasing node order.  Depends only on the pattern and D. */
static void ic0_assign_domains(defo_precond *P, const defo_bcsr *A) {
    const defo_index n = A->num_rows;
    const int D = P->num_domains;
    int *dom = P->domain_of;
    defo_index *order = P->domain_rows, *off = P->domain_offset;
    if (D == 1) {
        for (defo_index i = 0; i < n; i++) dom[i] = 0, order[i] = i;
        off[0] = 0;
        off[1] = n;
        ic0_lower_pattern(P, A);
        return;
    }
    /* pass 0 finds the pseudo-peripheral start, pass 1 records the order */
    defo_index start = 0, len = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (defo_index i = 0; i < n; i++) dom[i] = -1;
        len = 0;
        for (defo_index seed = start; len < n;) {
            if (dom[seed] < 0) {
                dom[seed] = 0;
                order[len++] = seed;
                for (defo_index h = len - 1; h < len; h++) {
                    defo_index i = order[h];
                    for (int64_t q = A->row_offset[i]; q < A->row_offset[i + 1]; q++)
                        if (dom[A->col[q]] < 0) {
                            dom[A->col[q]] = 0;
                            order[len++] = A->col[q];
                        }
                }
                if (pass == 0) break; /* only the component of node 0 */
            }
            seed = seed + 1 < n ? seed + 1 : 0;
        }
        if (pass == 0) start = order[len - 1];
    }
    for (defo_index k = 0; k < n; k++) dom[order[k]] = (int)((int64_t)k * D / n);
    /* rows of each domain in increasing node order (counting sort) */
    for (int d = 0; d <= D; d++) off[d] = 0;
    for (defo_index i = 0; i < n; i++) off[dom[i] + 1]++;
    for (int d = 0; d < D; d++) off[d + 1] += off[d];
    for (defo_index i = 0; i < n; i++) order[off[dom[i]]++] = i;
    for (int d = D; d > 0; d--) off[d] = off[d - 1];
    off[0] = 0;
    ic0_lower_pattern(P, A);
}

/* One attempt of the block IC(0) factorisation of the rows of subdomain d
 * with diagonal shift alpha; returns −1 on success or the node whose pivot
 * failed.  Couplings to other subdomains are not in the factor (ic0_apply
 * skips them), so the domains are independent. */
static defo_index ic0_factor_domain(defo_precond *P, const defo_bcsr *A,
                                    const unsigned char *constraint, double alpha, int d) {
    const int64_t *ro = A->row_offset;
    const defo_index *col = A->col;
    const int *dom = P->domain_of;
    const defo_index *rows = P->domain_rows + P->domain_offset[d];
    const defo_index nr = P->domain_offset[d + 1] - P->domain_offset[d];
    double *F = P->factor;
    int64_t *pos = P->pos;
    for (defo_index h = 0; h < nr; h++) {
        defo_index i = rows[h];
        memcpy(F + 9 * ro[i], A->val + 9 * ro[i], (size_t)(ro[i + 1] - ro[i]) * 9 * sizeof *F);
        for (int64_t q = ro[i]; q < ro[i + 1]; q++)
            if (col[q] != i && (is_fixed(constraint, i) || is_fixed(constraint, col[q])))
                memset(F + 9 * q, 0, 9 * sizeof *F);
        if (alpha > 0) {
            double *dg = F + 9 * A->diag[i];
            dg[0] *= 1 + alpha;
            dg[4] *= 1 + alpha;
            dg[8] *= 1 + alpha;
        }
        pos[i] = -1;
    }
    for (defo_index h = 0; h < nr; h++) {
        defo_index i = rows[h];
        for (int64_t q = ro[i]; q < ro[i + 1]; q++)
            if (dom[col[q]] == d) pos[col[q]] = q;
        for (int64_t q = ro[i]; q < ro[i + 1] && col[q] < i; q++) {
            defo_index k = col[q];
            if (dom[k] != d) continue;
            /* L_ik = A_ik U_kk⁻¹ */
            defo_mat3 lik = defo_m3_mul(load3(F + 9 * q), load3(P->inv_pivot + 9 * (int64_t)k));
            store3(F + 9 * q, lik);
            for (int64_t r = A->diag[k] + 1; r < ro[k + 1]; r++) {
                if (dom[col[r]] != d) continue;
                int64_t t = pos[col[r]];
                if (t < 0) continue;
                store3(F + 9 * t,
                       defo_m3_sub(load3(F + 9 * t), defo_m3_mul(lik, load3(F + 9 * r))));
            }
        }
        for (int64_t q = ro[i]; q < ro[i + 1]; q++)
            if (dom[col[q]] == d) pos[col[q]] = -1;
        if (!invert_spd(F + 9 * A->diag[i], P->inv_pivot + 9 * (int64_t)i)) return i;
    }
    /* What the solves read: L in single precision and D⁻¹ made exactly
     * symmetric, so the preconditioner (L D Lᵀ)⁻¹ is a symmetric operator. */
    const int64_t *lo = P->lower_offset + P->domain_offset[d];
    for (defo_index h = 0; h < nr; h++) {
        defo_index i = rows[h];
        float *Lf = P->lower + 9 * lo[h];
        for (int64_t q = ro[i]; q < A->diag[i]; q++) {
            if (dom[col[q]] != d) continue;
            for (int k = 0; k < 9; k++) {
                float v = (float)F[9 * q + k];
                if (!isfinite(v)) return i; /* beyond single precision: shift and retry */
                *Lf++ = v;
            }
        }
        double *b = P->inv_pivot + 9 * (int64_t)i;
        for (int r = 0; r < 3; r++)
            for (int c = r + 1; c < 3; c++)
                b[3 * r + c] = b[3 * c + r] = 0.5 * (b[3 * r + c] + b[3 * c + r]);
    }
    return -1;
}

/* All subdomains, in parallel; the lowest failing node (or −1). */
static defo_index ic0_factor(defo_precond *P, const defo_bcsr *A, const unsigned char *constraint,
                             double alpha) {
    const int D = P->num_domains;
    defo_index bad = DEFO_INDEX_MAX;
#ifdef _OPENMP
/* ~50 ns per block of the pattern (bench_loops' block products) */
#pragma omp parallel for schedule(static, 1)                                                       \
    reduction(min                                                                                  \
              : bad) if (DEFO_PARALLEL_GO(D > 1 && DEFO_PARALLEL_WORTH(P->num_blocks, 50)))
#endif
    for (int d = 0; d < D; d++) {
        defo_index b = ic0_factor_domain(P, A, constraint, alpha, d);
        if (b >= 0 && b < bad) bad = b;
    }
    return bad == DEFO_INDEX_MAX ? -1 : bad;
}

static defo_status ic0_setup(defo_precond *P, const defo_bcsr *A, const unsigned char *constraint) {
    ic0_assign_domains(P, A);
    double alpha = 0;
    for (int attempt = 0; attempt < 8; attempt++) {
        defo_index bad = ic0_factor(P, A, constraint, alpha);
        if (bad < 0) {
            P->shift = alpha;
            return DEFO_OK;
        }
        if (attempt == 0) {
            /* A diagonal block itself indefinite is not a breakdown of
             * IC(0) but a bad matrix: say so rather than shifting. */
            double tmp[9];
            if (!invert_spd(A->val + 9 * A->diag[bad], tmp))
                return defo_error(DEFO_ERR_NUMERICAL,
                                  "incomplete Cholesky: diagonal block of node %ld is not "
                                  "positive definite",
                                  (long)bad);
        }
        alpha = alpha > 0 ? alpha * 10 : 1e-3;
    }
    return defo_error(DEFO_ERR_NUMERICAL,
                      "incomplete Cholesky broke down even with a diagonal shift of %g",
                      alpha / 10);
}

/* ------------------------------------------------ two-level correction
 * Aggregates: the bounding box of the free nodes is cut into a grid of at
 * most COARSE_TARGET cubic cells; each non-empty cell is one aggregate,
 * numbered in cell order (deterministic).  Coarse basis of aggregate a:
 * translations t and infinitesimal rotations ω about its centre c,
 *   u_i = t + ω × d_i,  d_i = x_i − c,  i.e. R_i = [I | −[d_i]×],
 * the near-null space of elasticity that IC(0) resolves worst (a long
 * cantilever's bending is such a mode globally).  Aggregates of fewer
 * than 3 nodes keep translations only.  A_c = Rᵀ S A S R is dense
 * (≤ 6·COARSE_TARGET unknowns) and factored by a dense Cholesky; a pivot
 * that vanishes (a mode dependent on others) is reset to its diagonal with
 * the column below zeroed, so L_c stays non-singular and the additive
 * preconditioner M_IC0⁻¹ + R (L_c L_cᵀ)⁻¹ Rᵀ stays symmetric positive
 * definite. */
/* 64 aggregates: 384 coarse unknowns, a dense factor of ~20 MFLOP.  On the
 * n = 13 cantilever 32 / 64 / 128 / 256 aggregates gave 48 / 44 / 40 / 37
 * PCG iterations: IC(0) bounds the rest, and the dense factor grows as the
 * cube. */
enum { COARSE_TARGET = 64 };

/* out (3×6) = [I | −[d]×] */
static void rigid_basis(const double *d, int rot, double out[3][6]) {
    memset(out, 0, 18 * sizeof(double));
    for (int k = 0; k < 3; k++) out[k][k] = 1;
    if (!rot) return;
    /* −[d]× = [[0, d2, −d1], [−d2, 0, d0], [d1, −d0, 0]] */
    out[0][4] = d[2];
    out[0][5] = -d[1];
    out[1][3] = -d[2];
    out[1][5] = d[0];
    out[2][3] = d[1];
    out[2][4] = -d[0];
}

static defo_status coarse_setup(defo_precond *P, const defo_bcsr *A,
                                const unsigned char *constraint) {
    const defo_index n = A->num_rows;
    const double *x = P->coords;
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    int any = 0;
    for (defo_index i = 0; i < n; i++) {
        if (is_fixed(constraint, i)) continue;
        for (int k = 0; k < 3; k++) {
            double v = x[3 * (int64_t)i + k];
            if (!isfinite(v))
                return defo_error(DEFO_ERR_NUMERICAL,
                                  "two-level preconditioner: non-finite position of node %ld",
                                  (long)i);
            if (!any || v < lo[k]) lo[k] = v;
            if (!any || v > hi[k]) hi[k] = v;
        }
        any = 1;
    }
    /* cell size: from the longest extent, doubled until the grid has at
     * most COARSE_TARGET cells (flat or thin bodies included) */
    double ext = DEFO_MAX(hi[0] - lo[0], DEFO_MAX(hi[1] - lo[1], hi[2] - lo[2]));
    int cells[3] = {1, 1, 1};
    double h = ext > 0 ? ext / COARSE_TARGET : 1.0;
    for (int guard = 0; guard < 64; guard++) {
        for (int k = 0; k < 3; k++) {
            double c = ceil((hi[k] - lo[k]) / h);
            cells[k] = c < 1 ? 1 : c > COARSE_TARGET ? COARSE_TARGET : (int)c;
        }
        if (cells[0] * cells[1] * cells[2] <= COARSE_TARGET) break;
        h *= 1.25;
    }
    int cell_agg[COARSE_TARGET];
    int count[COARSE_TARGET];
    double centre[3 * COARSE_TARGET];
    for (int c = 0; c < COARSE_TARGET; c++) cell_agg[c] = -1;
    for (defo_index i = 0; i < n; i++) {
        P->aggregate[i] = -1;
        if (is_fixed(constraint, i)) continue;
        int idx[3];
        for (int k = 0; k < 3; k++) {
            int c = (int)((x[3 * (int64_t)i + k] - lo[k]) / h);
            idx[k] = c < 0 ? 0 : c >= cells[k] ? cells[k] - 1 : c;
        }
        int cell = (idx[2] * cells[1] + idx[1]) * cells[0] + idx[0];
        cell_agg[cell] = 0;
        P->aggregate[i] = cell; /* renumbered below */
    }
    int na = 0;
    for (int c = 0; c < COARSE_TARGET; c++)
        if (cell_agg[c] == 0) cell_agg[c] = na++;
    memset(count, 0, sizeof count);
    memset(centre, 0, sizeof centre);
    for (defo_index i = 0; i < n; i++) {
        if (P->aggregate[i] < 0) continue;
        int a = cell_agg[P->aggregate[i]];
        P->aggregate[i] = a;
        count[a]++;
        for (int k = 0; k < 3; k++) centre[3 * a + k] += x[3 * (int64_t)i + k];
    }
    for (int a = 0; a < na; a++)
        for (int k = 0; k < 3; k++) centre[3 * a + k] /= count[a];
    for (defo_index i = 0; i < n; i++) {
        int a = P->aggregate[i];
        for (int k = 0; k < 3; k++)
            P->offset[3 * (int64_t)i + k] =
                a < 0 || count[a] < 3 ? 0 : x[3 * (int64_t)i + k] - centre[3 * a + k];
    }
    const size_t nc = 6 * (size_t)na;
    /* storage for the largest coarse space (COARSE_TARGET aggregates, ~1.2 MB)
     * once: the aggregate count changes as a body moves, and a refactorisation
     * must not allocate */
    if (!P->coarse) {
        const size_t ncmax = 6 * (size_t)COARSE_TARGET;
        P->coarse = defo_malloc(ncmax * ncmax * sizeof *P->coarse);
        P->coarse_work = defo_malloc(ncmax * sizeof *P->coarse_work);
        if (!P->coarse || !P->coarse_work) {
            defo_free(P->coarse);
            defo_free(P->coarse_work);
            P->coarse = P->coarse_work = NULL;
            P->num_aggregates = 0;
            return defo_error_oom("two-level coarse matrix", ncmax * ncmax * sizeof(double));
        }
    }
    P->num_aggregates = na;
    /* A_c = Σ_{I,J free} R_Iᵀ A_IJ R_J */
    double *C = P->coarse;
    memset(C, 0, nc * nc * sizeof *C);
    for (defo_index i = 0; i < n; i++) {
        int a = P->aggregate[i];
        if (a < 0) continue;
        double Ri[3][6];
        rigid_basis(P->offset + 3 * (int64_t)i, count[a] >= 3, Ri);
        for (int64_t q = A->row_offset[i]; q < A->row_offset[i + 1]; q++) {
            defo_index j = A->col[q];
            int b = P->aggregate[j];
            if (b < 0) continue;
            double Rj[3][6], T[3][6];
            rigid_basis(P->offset + 3 * (int64_t)j, count[b] >= 3, Rj);
            const double *v = A->val + 9 * q;
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 6; c++)
                    T[r][c] =
                        v[3 * r] * Rj[0][c] + v[3 * r + 1] * Rj[1][c] + v[3 * r + 2] * Rj[2][c];
            for (int r = 0; r < 6; r++) {
                double *row = C + (6 * (size_t)a + (size_t)r) * nc + 6 * (size_t)b;
                for (int c = 0; c < 6; c++)
                    row[c] += Ri[0][r] * T[0][c] + Ri[1][r] * T[1][c] + Ri[2][r] * T[2][c];
            }
        }
    }
    /* dense Cholesky in place (lower triangle, row-major) */
    for (size_t j = 0; j < nc; j++) {
        double djj = C[j * nc + j];
        double d = djj;
        for (size_t k = 0; k < j; k++) d -= C[j * nc + k] * C[j * nc + k];
        int dead = !(d > 1e-10 * djj) || !(djj > 0);
        double ljj = dead ? (djj > 0 ? sqrt(djj) : 1.0) : sqrt(d);
        C[j * nc + j] = ljj;
        for (size_t i = j + 1; i < nc; i++) {
            if (dead) {
                C[i * nc + j] = 0;
                continue;
            }
            double s = C[i * nc + j];
            for (size_t k = 0; k < j; k++) s -= C[i * nc + k] * C[j * nc + k];
            C[i * nc + j] = s / ljj;
        }
    }
    return DEFO_OK;
}

/* z += R (L_c L_cᵀ)⁻¹ Rᵀ r */
static void coarse_apply(const defo_precond *P, const double *r, double *z) {
    const defo_index n = P->n;
    const size_t nc = 6 * (size_t)P->num_aggregates;
    if (!nc) return;
    double *w = P->coarse_work;
    const double *L = P->coarse;
    memset(w, 0, nc * sizeof *w);
    for (defo_index i = 0; i < n; i++) {
        int a = P->aggregate[i];
        if (a < 0) continue;
        const double *d = P->offset + 3 * (int64_t)i, *ri = r + 3 * (int64_t)i;
        double *wa = w + 6 * (size_t)a;
        wa[0] += ri[0];
        wa[1] += ri[1];
        wa[2] += ri[2];
        wa[3] += d[1] * ri[2] - d[2] * ri[1]; /* d × r */
        wa[4] += d[2] * ri[0] - d[0] * ri[2];
        wa[5] += d[0] * ri[1] - d[1] * ri[0];
    }
    for (size_t j = 0; j < nc; j++) { /* L y = w */
        double s = w[j];
        for (size_t k = 0; k < j; k++) s -= L[j * nc + k] * w[k];
        w[j] = s / L[j * nc + j];
    }
    for (size_t j = nc; j-- > 0;) { /* Lᵀ x = y by columns of Lᵀ: row j of L, contiguous */
        double xj = w[j] / L[j * nc + j];
        w[j] = xj;
        const double *Lj = L + j * nc;
        for (size_t k = 0; k < j; k++) w[k] -= Lj[k] * xj;
    }
    for (defo_index i = 0; i < n; i++) {
        int a = P->aggregate[i];
        if (a < 0) continue;
        const double *d = P->offset + 3 * (int64_t)i, *wa = w + 6 * (size_t)a;
        double *zi = z + 3 * (int64_t)i;
        zi[0] += wa[0] + wa[4] * d[2] - wa[5] * d[1]; /* t + ω × d */
        zi[1] += wa[1] + wa[5] * d[0] - wa[3] * d[2];
        zi[2] += wa[2] + wa[3] * d[1] - wa[4] * d[0];
    }
}

size_t defo_precond_bytes(const defo_precond *P) {
    if (!P) return 0;
    const size_t n = (size_t)P->n, nb = (size_t)P->num_blocks;
    size_t b = sizeof *P;
    if (P->inv) b += (P->kind == DEFO_PRECOND_JACOBI ? 3 : 9) * n * sizeof(double);
    if (P->factor) /* factor, its float copy of L, pivots, scratch, domains */
        b += nb * (9 * sizeof(double) + 9 * sizeof(float) + sizeof(defo_index)) +
             n * (9 * sizeof(double) + 2 * sizeof(int64_t) + sizeof(int) + sizeof(defo_index)) +
             ((size_t)P->num_domains + 1) * sizeof(defo_index);
    if (P->aggregate) b += n * (sizeof(defo_index) + 3 * sizeof(double));
    if (P->coarse) { /* allocated once at its largest size */
        const size_t ncmax = 6 * (size_t)COARSE_TARGET;
        b += (ncmax * ncmax + ncmax) * sizeof(double);
    }
    return b + defo_cholesky_bytes(P->cholesky);
}

double defo_precond_apply_bytes(const defo_precond *P) {
    const double m = 3.0 * (double)P->n, vec = 2 * 8 * m; /* r read, z written */
    switch (P->kind) {
    case DEFO_PRECOND_JACOBI:
        return vec + 8 * m;
    case DEFO_PRECOND_BLOCK_JACOBI:
        return vec + 24 * m;
    case DEFO_PRECOND_BLOCK_IC0:
    case DEFO_PRECOND_TWO_LEVEL: {
        /* two sweeps over L (floats and columns), the pivots, z twice more */
        const double nl = (double)P->lower_offset[P->n];
        double b = vec + 2 * nl * (9 * sizeof(float) + sizeof(defo_index)) + 24 * m + 2 * 8 * m +
                   (double)P->n * (sizeof(defo_index) + sizeof(int64_t));
        if (P->kind == DEFO_PRECOND_TWO_LEVEL) {
            const double nc = 6.0 * P->num_aggregates;
            b += nc * nc * 8 + 2 * (8 * m + 3 * 8 * m + (double)P->n * sizeof(defo_index));
        }
        return b;
    }
    case DEFO_PRECOND_CHOLESKY:
        return vec + 2.0 * (double)defo_cholesky_bytes(P->cholesky);
    case DEFO_PRECOND_NONE:
    default:
        return vec;
    }
}

/* The inverse of a diagonal block, robust (P->robust): invertible blocks
 * (trace > 0, det > 1e-9 trace³) inverted, others scalar 1 / max(b_kk,
 * floor) per component. */
static void invert_robust(const double *b, double floor_, int block, double *out) {
    for (int k = 0; k < 9; k++) out[k] = 0.0;
    defo_mat3 M = load3(b), Mi;
    double tr = b[0] + b[4] + b[8];
    if (block && tr > 0.0 && defo_m3_det(M) > 1e-9 * tr * tr * tr && defo_m3_inverse(M, &Mi) &&
        defo_m3_isfinite(Mi)) {
        store3(out, Mi);
        return;
    }
    for (int k = 0; k < 3; k++) out[4 * k] = 1.0 / fmax(b[4 * k], floor_);
}

defo_status defo_precond_setup_diagonal(defo_precond *P, defo_index n, const double *blocks,
                                        const int64_t *diag, const unsigned char *constraint) {
    const int block = P->kind == DEFO_PRECOND_BLOCK_JACOBI;
    const size_t per = block ? 9 : 3;
    if (P->n != n || !P->inv) {
        release(P);
        P->n = n;
        P->inv = defo_malloc((size_t)n * per * sizeof *P->inv + 1);
        if (!P->inv) return defo_error_oom("preconditioner", (size_t)n * per * sizeof(double));
    }
#define DIAG_BLOCK(i) (blocks + 9 * (diag ? diag[i] : (int64_t)(i)))
    if (P->robust) {
        double mx = 0.0;
        for (defo_index i = 0; i < n; i++) {
            if (is_fixed(constraint, i)) continue;
            for (int k = 0; k < 3; k++) {
                double v = DIAG_BLOCK(i)[4 * k];
                if (isfinite(v) && v > mx) mx = v;
            }
        }
        const double floor_ = mx > 0.0 ? 1e-12 * mx : 1.0;
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
        for (defo_index i = 0; i < n; i++) {
            double out[9];
            if (is_fixed(constraint, i))
                memset(out, 0, sizeof out);
            else
                invert_robust(DIAG_BLOCK(i), floor_, block, out);
            if (block)
                memcpy(P->inv + 9 * (int64_t)i, out, sizeof out);
            else
                for (int k = 0; k < 3; k++) P->inv[3 * (int64_t)i + k] = out[4 * k];
        }
        return DEFO_OK;
    }
    defo_index bad = -1;
    if (!block) {
        for (defo_index i = 0; i < n; i++) {
            const double *d = DIAG_BLOCK(i);
            for (int k = 0; k < 3; k++) {
                if (!(d[4 * k] > 0) || !isfinite(d[4 * k])) {
                    if (bad < 0) bad = i;
                    P->inv[3 * (int64_t)i + k] = 0;
                } else {
                    P->inv[3 * (int64_t)i + k] = 1.0 / d[4 * k];
                }
            }
        }
        if (bad >= 0)
            return defo_error(DEFO_ERR_NUMERICAL,
                              "Jacobi preconditioner: non-positive diagonal at node %ld",
                              (long)bad);
        return DEFO_OK;
    }
    DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_NODES(n))
    for (defo_index i = 0; i < n; i++) {
        if (!invert_spd(DIAG_BLOCK(i), P->inv + 9 * (int64_t)i)) {
            memset(P->inv + 9 * (int64_t)i, 0, 9 * sizeof(double));
#ifdef _OPENMP
#pragma omp critical(defo_precond_bad)
#endif
            if (bad < 0 || i < bad) bad = i;
        }
    }
#undef DIAG_BLOCK
    if (bad >= 0)
        return defo_error(DEFO_ERR_NUMERICAL,
                          "block-Jacobi preconditioner: diagonal block of node %ld is not "
                          "positive definite",
                          (long)bad);
    return DEFO_OK;
}

defo_status defo_precond_setup(defo_precond *P, const defo_bcsr *A, const unsigned char *constraint,
                               const double *coords) {
    if (!P || !A) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "precond: missing argument");
    const defo_precond_kind kind = P->kind;
    const defo_index n = A->num_rows;
    const int ic0 = kind == DEFO_PRECOND_BLOCK_IC0 || kind == DEFO_PRECOND_TWO_LEVEL;
    if (kind == DEFO_PRECOND_TWO_LEVEL && !coords)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "two-level preconditioner: node coordinates not given");
    if (kind == DEFO_PRECOND_JACOBI || kind == DEFO_PRECOND_BLOCK_JACOBI)
        return defo_precond_setup_diagonal(P, n, A->val, A->diag, constraint);
    if (kind == DEFO_PRECOND_NONE) {
        P->n = n;
        return DEFO_OK;
    }
    if (P->n != n || (ic0 && P->num_blocks != A->num_blocks) ||
        (kind == DEFO_PRECOND_CHOLESKY && !P->cholesky)) {
        release(P);
        P->n = n;
        size_t m = 3 * (size_t)n;
        if (kind == DEFO_PRECOND_TWO_LEVEL) {
            P->aggregate = defo_malloc((size_t)n * sizeof *P->aggregate + 1);
            P->offset = defo_malloc(m * sizeof *P->offset + 1);
            if (!P->aggregate || !P->offset) {
                release(P);
                return defo_error_oom("two-level preconditioner", m * sizeof(double));
            }
        }
        if (ic0) {
            P->num_blocks = A->num_blocks;
            P->factor = defo_malloc((size_t)A->num_blocks * 9 * sizeof *P->factor + 1);
            P->lower = defo_malloc((size_t)A->num_blocks * 9 * sizeof *P->lower + 1);
            P->inv_pivot = defo_malloc(3 * m * sizeof *P->inv_pivot + 1);
            P->pos = defo_malloc((size_t)n * sizeof *P->pos + 1);
            P->domain_of = defo_malloc((size_t)n * sizeof *P->domain_of + 1);
            P->domain_rows = defo_malloc((size_t)n * sizeof *P->domain_rows + 1);
            P->lower_col = defo_malloc((size_t)A->num_blocks * sizeof *P->lower_col + 1);
            P->lower_offset = defo_malloc(((size_t)n + 1) * sizeof *P->lower_offset);
            if (!P->factor || !P->lower || !P->inv_pivot || !P->pos || !P->domain_of ||
                !P->domain_rows || !P->lower_col || !P->lower_offset) {
                release(P);
                return defo_error_oom("incomplete Cholesky factor",
                                      (size_t)A->num_blocks * 9 * sizeof(double));
            }
        } else if (kind == DEFO_PRECOND_CHOLESKY) {
            defo_status st = defo_cholesky_create(&P->cholesky);
            if (st) {
                release(P);
                return defo_error_prefix("preconditioner");
            }
        }
    }
    P->shift = 0;
    if (ic0) {
        int D = P->domains ? P->domains : n >= IC0_AUTO_SPLIT_NODES ? 2 : 1;
        D = D > n ? (n > 0 ? (int)n : 1) : D;
        if (D != P->num_domains || !P->domain_offset) {
            defo_free(P->domain_offset);
            P->domain_offset = defo_malloc(((size_t)D + 1) * sizeof *P->domain_offset);
            if (!P->domain_offset) {
                P->num_domains = 0;
                return defo_error_oom("incomplete Cholesky domains", (size_t)D * 8);
            }
            P->num_domains = D;
        }
    }
    switch (kind) {
    case DEFO_PRECOND_BLOCK_IC0:
        return ic0_setup(P, A, constraint);
    case DEFO_PRECOND_TWO_LEVEL: {
        defo_status st = ic0_setup(P, A, constraint);
        if (st) return st;
        P->coords = coords;
        st = coarse_setup(P, A, constraint);
        P->coords = NULL;
        return st;
    }
    case DEFO_PRECOND_CHOLESKY:
        if (defo_cholesky_factor(P->cholesky, A, constraint))
            return defo_error_prefix("preconditioner");
        return DEFO_OK;
    default:
        break;
    }
    return defo_error(DEFO_ERR_INVALID_ARGUMENT, "precond: unknown kind %d", (int)kind);
}

/* z = (L D Lᵀ)⁻¹ r on the rows of subdomain d with the pattern of A
 * restricted to them: L y = r row by row, w = D⁻¹ y, then Lᵀ z = w row by
 * row backwards (row i of L, read once more, scatters z_i into the rows
 * before it). */
static void ic0_apply_domain(const defo_precond *P, const double *r, double *z, int d) {
    const defo_index *rows = P->domain_rows + P->domain_offset[d];
    const int64_t *lo = P->lower_offset + P->domain_offset[d];
    const defo_index nr = P->domain_offset[d + 1] - P->domain_offset[d];
    const defo_index *lcol = P->lower_col;
    const float *L = P->lower;
    for (defo_index h = 0; h < nr; h++) { /* L y = r (unit lower) */
        const defo_index i = rows[h];
        double s0 = r[3 * (int64_t)i], s1 = r[3 * (int64_t)i + 1], s2 = r[3 * (int64_t)i + 2];
        for (int64_t t = lo[h]; t < lo[h + 1]; t++) {
            const float *v = L + 9 * t;
            const double *y = z + 3 * (int64_t)lcol[t];
            s0 -= (double)v[0] * y[0] + (double)v[1] * y[1] + (double)v[2] * y[2];
            s1 -= (double)v[3] * y[0] + (double)v[4] * y[1] + (double)v[5] * y[2];
            s2 -= (double)v[6] * y[0] + (double)v[7] * y[1] + (double)v[8] * y[2];
        }
        z[3 * (int64_t)i] = s0;
        z[3 * (int64_t)i + 1] = s1;
        z[3 * (int64_t)i + 2] = s2;
    }
    for (defo_index h = 0; h < nr; h++) { /* w = D⁻¹ y */
        const defo_index i = rows[h];
        const double *b = P->inv_pivot + 9 * (int64_t)i;
        double *w = z + 3 * (int64_t)i, s0 = w[0], s1 = w[1], s2 = w[2];
        w[0] = b[0] * s0 + b[1] * s1 + b[2] * s2;
        w[1] = b[3] * s0 + b[4] * s1 + b[5] * s2;
        w[2] = b[6] * s0 + b[7] * s1 + b[8] * s2;
    }
    for (defo_index h = nr - 1; h >= 0; h--) { /* Lᵀ z = w, z_i final here */
        const defo_index i = rows[h];
        const double x0 = z[3 * (int64_t)i], x1 = z[3 * (int64_t)i + 1], x2 = z[3 * (int64_t)i + 2];
        for (int64_t t = lo[h]; t < lo[h + 1]; t++) {
            const float *v = L + 9 * t;
            double *w = z + 3 * (int64_t)lcol[t];
            w[0] -= (double)v[0] * x0 + (double)v[3] * x1 + (double)v[6] * x2;
            w[1] -= (double)v[1] * x0 + (double)v[4] * x1 + (double)v[7] * x2;
            w[2] -= (double)v[2] * x0 + (double)v[5] * x1 + (double)v[8] * x2;
        }
    }
}

static void ic0_apply(const defo_precond *P, const double *r, double *z) {
    const int D = P->num_domains;
#ifdef _OPENMP
/* two sweeps over L's blocks, ~4 ns per block each, and a pivot per row */
#pragma omp parallel for schedule(                                                                 \
    static, 1) if (DEFO_PARALLEL_GO(D > 1 &&                                                       \
                                    DEFO_PARALLEL_WORTH(8 * P->lower_offset[P->n] + 6 * P->n, 1)))
#endif
    for (int d = 0; d < D; d++) ic0_apply_domain(P, r, z, d);
}

void defo_precond_apply(const defo_precond *P, const double *r, double *z) {
    const defo_index n = P->n;
    const size_t m = 3 * (size_t)n;
    switch (P->kind) {
    case DEFO_PRECOND_JACOBI:
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
        for (size_t i = 0; i < m; i++) z[i] = P->inv[i] * r[i];
        return;
    case DEFO_PRECOND_BLOCK_JACOBI:
        DEFO_PARALLEL_FOR_IF(DEFO_PARALLEL_VECTOR(m))
        for (defo_index i = 0; i < n; i++) {
            const double *b = P->inv + 9 * (int64_t)i;
            const double *ri = r + 3 * (int64_t)i;
            double *zi = z + 3 * (int64_t)i;
            double r0 = ri[0], r1 = ri[1], r2 = ri[2];
            zi[0] = b[0] * r0 + b[1] * r1 + b[2] * r2;
            zi[1] = b[3] * r0 + b[4] * r1 + b[5] * r2;
            zi[2] = b[6] * r0 + b[7] * r1 + b[8] * r2;
        }
        return;
    case DEFO_PRECOND_BLOCK_IC0:
        ic0_apply(P, r, z);
        return;
    case DEFO_PRECOND_TWO_LEVEL:
        ic0_apply(P, r, z);
        coarse_apply(P, r, z);
        return;
    case DEFO_PRECOND_CHOLESKY:
        /* fails only without a valid factor, which setup rules out */
        if (defo_cholesky_solve(P->cholesky, r, z)) memcpy(z, r, m * sizeof *z);
        return;
    case DEFO_PRECOND_NONE:
    default:
        memcpy(z, r, m * sizeof *z);
        return;
    }
}
