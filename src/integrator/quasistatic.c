/*
 * integrator/quasistatic.c — robust quasistatic Newton–Raphson (TSIF05).
 *
 * Per frame: place the prescribed ("bone") nodes at time t (TSIF05 §11), then
 * iterate  K_k Δx = f(x_k),  x_{k+1} = x_k + α Δx  until the residual force
 * on the free nodes is below tolerance · f_ref (defo/quasistatic.h).
 *
 * Element kernel (TSIF05 §5–9), per tetrahedron with D̂ = Dm⁻¹ V and d_m its
 * rows (m = 1..3), d_0 = −(d_1 + d_2 + d_3):
 *   F = Ds Dm⁻¹ = U F̂ Vᵀ (ITF04 §5 signs),   f_m = −vol · U (P̂ ∘ d_m)
 *   (the columns of G = P Bm, Bm = −vol Dm⁻ᵀ).  The force differential
 *   (TSIF05 eq. 4) for δx is δF̂ = Uᵀ δDs D̂, δP̂ = dP/dF : δF̂, δf_m =
 *   −vol U δP̂ d_m.  Hence K = −∂f/∂x has 3×3 blocks
 *       K_mn = vol · U K̂_mn Uᵀ,   K̂_mn[:, k] = δP̂(e_k d_nᵀ) d_m,
 *   K̂_mn written out from the dP/dF blocks (element_block); the assembled
 *   path sums the 10 blocks m ≤ n of each element straight into the block
 *   matrix (no per-element 12×12 buffer); the matrix-free path applies
 *   δF̂ → δP̂ → δf directly per product.
 * Definiteness (TSIF05 §6–8): δxᵀKδx = vol δF̂ : dP/dF : δF̂, so clamping the
 * eigenvalues of the blocks A, B12, B13, B23 (defo_dpdf_project_psd) makes
 * every element matrix, hence K, positive semidefinite: CG never meets
 * negative curvature (counted; 0 with the fix).
 * Constant extrapolation (TSIF05 §9): ψ, P̂ and dP/dF at σ clamped to
 * max(σ, c) through a DEFO_INVERSION_CLAMP copy of the material.  Measured on
 * the scattered-recovery test (1536 tets): with it Newton reaches the rest
 * shape in ~80–95 iterations; with neo-Hookean's own C1 extension (huge
 * energies for deeply inverted elements) it stalls in a tangled local
 * minimum with inverted elements.
 *
 * Newton iteration, line search and linear solves: the shared driver of
 * defo/solver.h (defo_newton), on the frame's problem — energy E = Σ vol ψ −
 * f_extᵀx + Σ kφ²/2 at time t, force f = −∇E, its Hessian K (elastic part
 * made PSD by the fix, penalty contact blocks added into the assembled
 * matrix or into the matrix-free product), steps capped at the larger of
 * the rest and current bounding-box diagonals, bones as fixed nodes.  Its
 * line search accepts a decrease of the free residual norm where the
 * extrapolated ψ is flat below c while the force is not; its linear solver
 * keeps the block IC(0) / two-level factor of K (rigid modes about the
 * current positions) lagged over iterations and frames, or factors K with
 * sparse Cholesky for exact steps (newton.linear).
 *
 * Predictor (beyond the paper): with moving bones the previous equilibrium
 * is a poor start — the bones jumped, the flesh did not.  The last 2 or 3
 * equilibria extrapolated to t (Lagrange in t) are a start close to the
 * next equilibrium; it is kept only when its energy is below that of the
 * previous equilibrium with the bones moved, which needs only the elements
 * at the bones (the rest of the element state is still that of the previous
 * equilibrium).  Newton then runs unchanged from there (same stopping test,
 * same answer within the tolerance).
 *
 * Speed (issue 5).  bench_quasistatic: bar 4×1×1 twisted at 90°/s by its
 * end bones, 30 frames/s, neo-Hookean, tolerance 1e-6, steady state (after
 * 4 frames); a 2-core VM shared with other work, so times are medians of 5
 * runs and vary up to 1.5× between quiet and busy periods; Newton
 * iterations per frame (N) and CG iterations per Newton iteration are exact.
 *   12 288 tets, ms per frame, 1 / 2 threads:
 *     before (block Jacobi, TARGET forcing, previous equilibrium, 12×12
 *       element buffers): 216–338 / 217–399 ms; N 5.7–6.0, CG 120;
 *     now: 26–37 / 16–26 ms (27–62 frames/s); N 1.43–1.5, CG 8.5,
 *       0.2 factorisations per frame.
 *   One lever at a time from now's defaults (1 thread, one sweep, 37 ms):
 *     precond jacobi 40 ms (CG 83), block_jacobi 42 (CG 79), block_ic0 40
 *       (CG 26), two_level 37 (CG 8.5);
 *     predictor none 124 ms (N 6.4), linear 54 (N 2.6), quadratic 38
 *       (N 1.9), cubic 37 (N 1.5);
 *     forcing: at 12 K the frames are mostly one step solved by the TARGET
 *       rule either way (TARGET 25–39 ms, N 1.33); Eisenstat–Walker pays
 *       where steps are many: 98 K with a frame unpredicted 14 vs 22 CG per
 *       Newton iteration, the scattered recovery 335 vs 2119 CG in total;
 *     assembly straight into the matrix: 7.7 → ~5 ms per assembly at 12 K
 *       (1 thread), no 12×12 buffers (486 MB at 421 K tets);
 *     two IC(0) subdomains from 2048 nodes: 25.6 → 19.8 ms (2 threads).
 *   98 304 tets: before 801 / 457 ms per Newton iteration, N 3–3.7, CG
 *     305; now 178 / 100 ms per frame, N 1.0, CG 14.
 *   421 824 tets: a Newton iteration (= a frame) 0.96 s / 0.56 s, CG 20,
 *     640 MB; with factorisations included (0.67 per frame) 0.93 / 0.69 s.
 *   Profile now (12 K, 2 threads): SVD and material 47 %, assembly 25 %,
 *   CG 17 %, factorisation 5 %.
 *
 * Invariants: per-element results go to per-slot buffers and are gathered per
 * node in fixed order (base/parallel.h), assembly sums each block's sources
 * in slot order, dots use defo_dot, sums defo_sum in fixed chunks: every
 * iterate is bitwise identical for any thread count.  No allocation inside
 * solve once warm (the matrix, the factor and the predictor's history are
 * allocated in the first frames).
 */
#include "defo/quasistatic.h"

#include "base/base.h"
#include "base/parallel.h"
#include "defo/math.h"
#include "defo/solver.h"

#include <math.h>
#include <string.h>
#include <time.h>

typedef struct qs_bone {
    defo_motion_def motion;
    int explicit_transform;
    double R[9], T[3];
} qs_bone;

enum { QS_INVERTED = 1, QS_CLAMPED = 2, QS_BAD = 4 };

struct defo_quasistatic {
    const defo_mesh *mesh;
    const defo_material *mat; /* the material the kernels evaluate */
    defo_material *own_mat;   /* CLAMP-mode copy for constant extrapolation */
    defo_quasistatic_def def;
    defo_rest rest;
    defo_index n, ne;
    double c;     /* compression threshold of the material */
    double stiff; /* 2μ + λ */
    double h;     /* mean rest edge length */
    double fref;  /* reference force */
    double diag;  /* rest bounding-box diagonal */
    /* per element: state of the last evaluation */
    double *U, *Dh; /* 9 each */
    defo_dpdf *dpdf;
    double *psi; /* vol·ψ */
    unsigned char *flag;
    double *slot;  /* 12 per element (forces / products per slot) */
    double *slot9; /* 36 per element: diagonal blocks (matrix-free preconditioner) */
    defo_incidence inc;
    /* loads and constraints */
    double *fext;
    unsigned char *constraint;
    int *node_bone;
    qs_bone *bones;
    int num_bones;
    defo_contact_source *src;
    int num_src;
    double *cblock; /* 9n contact blocks of the last evaluation */
    double *pwork;  /* n */
    defo_index contacts;
    double last_t;
    /* linear algebra: K assembled into A (elastic + contact blocks) or
     * applied matrix-free; Newton and its linear solves by the shared
     * driver */
    int use_matrix;
    defo_bcsr *A;
    int assembled;
    defo_newton *newton;
    double frame_t;          /* the time the Newton problem evaluates at */
    defo_index max_inverted; /* over the frame's accepted iterates */
    double *f, *xt, *ft;
    /* predictor: the last two equilibria this solver returned */
    double *xh[4]; /* 3n each, newest first (2, 3 or 4 kept: LINEAR .. CUBIC) */
    double th[4];
    int nhist;
    /* the element state (psi) is that of xh[0], whose total energy is E_h0 */
    int state_at_h0;
    double E_h0;
    /* elements with a bone node (lazily rebuilt after add_bone) and their
     * energy changes when only the bones move */
    defo_index *bone_elem;
    double *bone_dpsi;
    defo_index num_bone_elem;
    int bone_elem_dirty;
};

/* ------------------------------------------------------------ definition */
defo_quasistatic_def defo_default_quasistatic_def(void) {
    defo_quasistatic_def d;
    memset(&d, 0, sizeof d);
    d.tolerance = 1e-6;
    d.definiteness_fix = 1;
    d.constant_extrapolation = 1;
    d.linear = DEFO_QS_LINEAR_AUTO;
    d.predictor = DEFO_QS_PREDICTOR_CUBIC;
    d.newton = defo_default_newton_def(); /* two-level, lagged (8, 2×), EW forcing */
    return d;
}

/* Equilibria the predictor extrapolates from. */
static int history_size(const defo_quasistatic_def *d) {
    return d->frame_local                                ? 0
           : d->predictor == DEFO_QS_PREDICTOR_CUBIC     ? 4
           : d->predictor == DEFO_QS_PREDICTOR_QUADRATIC ? 3
           : d->predictor == DEFO_QS_PREDICTOR_LINEAR    ? 2
                                                         : 0;
}

static defo_status validate_def(const defo_quasistatic_def *d) {
    if (!(d->tolerance > 0.0 && d->tolerance < 1.0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "quasistatic.tolerance: %g is not in (0, 1)",
                          d->tolerance);
    if (d->linear < DEFO_QS_LINEAR_AUTO || d->linear > DEFO_QS_LINEAR_MATRIX_FREE)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "quasistatic.linear: %d is unknown",
                          (int)d->linear);
    const defo_linear_solver_def *l = &d->newton.linear;
    if (l->method == DEFO_LINEAR_CHOLESKY && d->linear == DEFO_QS_LINEAR_MATRIX_FREE)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "quasistatic.newton.linear.method: cholesky needs the assembled "
                          "stiffness (linear auto or assembled, not matrix_free)");
    if (l->precond.kind != DEFO_PRECOND_JACOBI && l->precond.kind != DEFO_PRECOND_BLOCK_JACOBI &&
        l->precond.kind != DEFO_PRECOND_BLOCK_IC0 && l->precond.kind != DEFO_PRECOND_TWO_LEVEL)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "quasistatic.newton.linear.precond: %s (%d) is not one of jacobi, "
                          "block_jacobi, block_ic0, two_level",
                          defo_precond_name(l->precond.kind), (int)l->precond.kind);
    if (d->frame_local != 0 && d->frame_local != 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "quasistatic.frame_local: %d is not 0 or 1",
                          d->frame_local);
    if (d->predictor < DEFO_QS_PREDICTOR_NONE || d->predictor > DEFO_QS_PREDICTOR_CUBIC)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "quasistatic.predictor: %d is unknown",
                          (int)d->predictor);
    for (int k = 0; k < 3; k++)
        if (!isfinite(d->gravity[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "quasistatic.gravity: not finite");
    return DEFO_OK;
}

/* ------------------------------------------------------------ lifetime */
static void update_reference(defo_quasistatic *qs) {
    double m = 0.0;
    for (defo_index i = 0; i < qs->n; i++) {
        const double *f = qs->fext + 3 * (size_t)i;
        m = fmax(m, sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]));
    }
    qs->fref = m + qs->stiff * qs->h * qs->h;
}

void defo_quasistatic_destroy(defo_quasistatic *qs) {
    if (!qs) return;
    defo_rest_free(&qs->rest);
    defo_material_destroy(qs->own_mat);
    defo_free(qs->U);
    defo_free(qs->Dh);
    defo_free(qs->dpdf);
    defo_free(qs->psi);
    defo_free(qs->flag);
    defo_free(qs->slot);
    defo_free(qs->slot9);
    defo_incidence_free(&qs->inc);
    defo_free(qs->fext);
    defo_free(qs->constraint);
    defo_free(qs->node_bone);
    defo_free(qs->bones);
    defo_free(qs->src);
    defo_free(qs->cblock);
    defo_free(qs->pwork);
    defo_bcsr_destroy(qs->A);
    defo_newton_destroy(qs->newton);
    defo_free(qs->f);
    defo_free(qs->xt);
    defo_free(qs->ft);
    for (int k = 0; k < 4; k++) defo_free(qs->xh[k]);
    defo_free(qs->bone_elem);
    defo_free(qs->bone_dpsi);
    defo_free(qs);
}

static void *alloc_n(size_t count, size_t size, int *fail) {
    void *p = defo_calloc(count ? count : 1, size);
    if (!p) *fail = 1;
    return p;
}

defo_status defo_quasistatic_create(const defo_mesh *mesh, const defo_material *material,
                                    const defo_quasistatic_def *def, defo_quasistatic **out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_quasistatic_create: out is NULL");
    *out = NULL;
    if (!mesh || !material)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_quasistatic_create: NULL mesh/material");
    if (mesh->order != 1 || mesh->nodes_per_elem != 4)
        return defo_error(DEFO_ERR_UNSUPPORTED, "quasistatic: only tet4 meshes are supported");
    if (mesh->num_elems < 1)
        return defo_error(DEFO_ERR_INVALID_MESH, "quasistatic: the mesh has no elements");
    defo_quasistatic_def d = def ? *def : defo_default_quasistatic_def();
    defo_status st = validate_def(&d);
    if (st != DEFO_OK) return st;
    defo_quasistatic *qs = defo_calloc(1, sizeof *qs);
    if (!qs) return defo_error_oom("quasistatic", sizeof *qs);
    qs->mesh = mesh;
    qs->mat = material;
    qs->def = d;
    qs->n = mesh->num_nodes;
    qs->ne = mesh->num_elems;
    qs->c = defo_material_get_def(material)->inversion.threshold;
    qs->stiff = defo_material_stiffness_scale(material);
    qs->use_matrix = d.linear != DEFO_QS_LINEAR_MATRIX_FREE;
    st = defo_rest_compute(mesh, &qs->rest);
    if (st != DEFO_OK) {
        defo_free(qs);
        return st;
    }
    if (d.constant_extrapolation) {
        /* TSIF05 §9: ψ, P̂ and dP/dF all evaluated at σ clamped to the
         * material's compression threshold. */
        defo_material_def md = *defo_material_get_def(material);
        md.inversion.mode = DEFO_INVERSION_CLAMP;
        st = defo_material_create(&md, &qs->own_mat);
        if (st != DEFO_OK) {
            defo_quasistatic_destroy(qs);
            return st;
        }
        qs->mat = qs->own_mat;
    }
    size_t n = (size_t)qs->n, ne = (size_t)qs->ne;
    int fail = 0;
    qs->U = alloc_n(9 * ne, sizeof(double), &fail);
    qs->Dh = alloc_n(9 * ne, sizeof(double), &fail);
    qs->dpdf = alloc_n(ne, sizeof(defo_dpdf), &fail);
    qs->psi = alloc_n(ne, sizeof(double), &fail);
    qs->flag = alloc_n(ne, 1, &fail);
    qs->slot = alloc_n(12 * ne, sizeof(double), &fail);
    qs->fext = alloc_n(3 * n, sizeof(double), &fail);
    qs->constraint = alloc_n(n, 1, &fail);
    qs->node_bone = alloc_n(n, sizeof(int), &fail);
    qs->cblock = alloc_n(9 * n, sizeof(double), &fail);
    qs->pwork = alloc_n(n, sizeof(double), &fail);
    qs->f = alloc_n(3 * n, sizeof(double), &fail);
    qs->xt = alloc_n(3 * n, sizeof(double), &fail);
    qs->ft = alloc_n(3 * n, sizeof(double), &fail);
    if (!qs->use_matrix) qs->slot9 = alloc_n(36 * ne, sizeof(double), &fail);
    for (int k = 0; k < history_size(&d); k++) qs->xh[k] = alloc_n(3 * n, sizeof(double), &fail);
    if (fail) {
        defo_quasistatic_destroy(qs);
        return defo_error_oom("quasistatic buffers", 200 * ne);
    }
    for (size_t i = 0; i < n; i++) qs->node_bone[i] = -1;
    st = defo_incidence_build(&qs->inc, mesh->elems, qs->ne, 4, qs->n);
    if (st != DEFO_OK) {
        defo_quasistatic_destroy(qs);
        return st;
    }
    if (qs->use_matrix) {
        st = defo_bcsr_create(mesh->elems, qs->ne, 4, qs->n, &qs->A);
        if (st != DEFO_OK) {
            defo_quasistatic_destroy(qs);
            return st;
        }
    }
    {
        defo_newton_def nd = d.newton;
        /* Two IC(0) subdomains from 2048 nodes when not set (fixed by the
         * size, so results never depend on the thread count; defo_precond's
         * own rule splits from 4096): factorisation and solves then use
         * both cores.  Measured at 12 K tets (2673 nodes), 2 threads: 25.6 →
         * 19.8 ms per frame, 8.8 → 8.9 CG iterations per Newton iteration.
         * Below, the cut costs more iterations than the second core saves. */
        if (nd.linear.precond.domains == 0 && qs->n >= DEFO_PARALLEL_MIN)
            nd.linear.precond.domains = 2;
        st = defo_newton_create(&nd, qs->n, &qs->newton);
        if (st != DEFO_OK) {
            defo_quasistatic_destroy(qs);
            return defo_error_prefix("quasistatic");
        }
    }
    /* mean rest edge length (6 edges per element, each counted per element) */
    double hsum = 0.0;
    for (size_t e = 0; e < ne; e++) {
        const defo_index *v = mesh->elems + 4 * e;
        for (int a = 0; a < 6; a++) {
            const double *p0 = mesh->x + 3 * (size_t)v[defo_tet_edges[a][0]];
            const double *p1 = mesh->x + 3 * (size_t)v[defo_tet_edges[a][1]];
            double dx = p1[0] - p0[0], dy = p1[1] - p0[1], dz = p1[2] - p0[2];
            hsum += sqrt(dx * dx + dy * dy + dz * dz);
        }
    }
    qs->h = hsum / (6.0 * (double)ne);
    {
        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (size_t i = 0; i < n; i++)
            for (int k = 0; k < 3; k++) {
                lo[k] = fmin(lo[k], mesh->x[3 * i + (size_t)k]);
                hi[k] = fmax(hi[k], mesh->x[3 * i + (size_t)k]);
            }
        qs->diag = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                        (hi[2] - lo[2]) * (hi[2] - lo[2]));
    }
    /* gravity: ρ g times the lumped volume (vol/4 per corner) */
    if (d.gravity[0] != 0.0 || d.gravity[1] != 0.0 || d.gravity[2] != 0.0) {
        double rho = defo_material_get_def(material)->density;
        for (size_t e = 0; e < ne; e++) {
            double w = 0.25 * rho * qs->rest.volume[e];
            for (int a = 0; a < 4; a++)
                for (int k = 0; k < 3; k++)
                    qs->fext[3 * (size_t)mesh->elems[4 * e + (size_t)a] + (size_t)k] +=
                        w * d.gravity[k];
        }
    }
    update_reference(qs);
    *out = qs;
    return DEFO_OK;
}

double defo_quasistatic_default_penalty(const defo_quasistatic *qs) {
    return 10.0 * qs->stiff * qs->h;
}

double defo_quasistatic_reference_force(const defo_quasistatic *qs) {
    return qs->fref;
}

/* ------------------------------------------------------------ bones, loads */
defo_status defo_quasistatic_add_bone_nodes(defo_quasistatic *qs, const defo_index *nodes,
                                            defo_index count, const defo_motion_def *motion,
                                            int *bone) {
    if (!qs || (count > 0 && !nodes))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_bone: NULL argument");
    if (count < 1) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_bone: no nodes selected");
    for (defo_index i = 0; i < count; i++)
        if (nodes[i] < 0 || nodes[i] >= qs->n)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_bone: node %d out of range",
                              (int)nodes[i]);
    qs_bone b;
    memset(&b, 0, sizeof b);
    b.motion = defo_default_motion_def();
    if (motion) {
        defo_status st = defo_motion_validate(motion, "add_bone: motion");
        if (st != DEFO_OK) return st;
        b.motion = *motion;
    }
    qs_bone *nb = defo_realloc(qs->bones, sizeof(qs_bone) * (size_t)(qs->num_bones + 1));
    if (!nb) return defo_error_oom("bones", sizeof(qs_bone));
    qs->bones = nb;
    qs->bones[qs->num_bones] = b;
    for (defo_index i = 0; i < count; i++) {
        qs->node_bone[nodes[i]] = qs->num_bones;
        qs->constraint[nodes[i]] = DEFO_CONSTRAINT_FIXED;
    }
    /* the constrained operator and the equilibria change */
    defo_newton_invalidate(qs->newton);
    qs->nhist = 0;
    qs->bone_elem_dirty = 1;
    if (bone) *bone = qs->num_bones;
    qs->num_bones++;
    return DEFO_OK;
}

defo_status defo_quasistatic_add_bone(defo_quasistatic *qs, const defo_region *region,
                                      const defo_motion_def *motion, int *bone) {
    if (!qs || !region) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_bone: NULL argument");
    defo_index *nodes = NULL, count = 0;
    defo_status st = defo_region_nodes(qs->mesh, region, &nodes, &count);
    if (st != DEFO_OK) return st;
    st = defo_quasistatic_add_bone_nodes(qs, nodes, count, motion, bone);
    defo_free(nodes);
    return st;
}

defo_status defo_quasistatic_set_bone_transform(defo_quasistatic *qs, int bone, const double R[9],
                                                const double T[3]) {
    if (!qs || !R || !T || bone < 0 || bone >= qs->num_bones)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "set_bone_transform: bad bone %d", bone);
    for (int k = 0; k < 9; k++)
        if (!isfinite(R[k])) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bone R: not finite");
    for (int k = 0; k < 3; k++)
        if (!isfinite(T[k])) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "bone T: not finite");
    qs_bone *b = &qs->bones[bone];
    b->explicit_transform = 1;
    memcpy(b->R, R, sizeof b->R);
    memcpy(b->T, T, sizeof b->T);
    return DEFO_OK;
}

defo_status defo_quasistatic_add_node_force(defo_quasistatic *qs, const defo_region *region,
                                            const double force[3]) {
    if (!qs || !region || !force)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_node_force: NULL argument");
    for (int k = 0; k < 3; k++)
        if (!isfinite(force[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_node_force: force not finite");
    defo_index *nodes = NULL, count = 0;
    defo_status st = defo_region_nodes(qs->mesh, region, &nodes, &count);
    if (st != DEFO_OK) return st;
    for (defo_index i = 0; i < count; i++)
        for (int k = 0; k < 3; k++) qs->fext[3 * (size_t)nodes[i] + (size_t)k] += force[k];
    defo_free(nodes);
    update_reference(qs);
    qs->nhist = 0;
    return DEFO_OK;
}

defo_status defo_quasistatic_add_load(defo_quasistatic *qs, const double *f) {
    if (!qs || !f) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_load: NULL argument");
    const size_t m = 3 * (size_t)qs->n;
    for (size_t j = 0; j < m; j++)
        if (!isfinite(f[j]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_load: node %ld: load not finite",
                              (long)(j / 3));
    for (size_t j = 0; j < m; j++) qs->fext[j] += f[j];
    update_reference(qs);
    qs->nhist = 0;
    return DEFO_OK;
}

defo_status defo_quasistatic_add_traction(defo_quasistatic *qs, const defo_region *region,
                                          const double traction[3], double *area) {
    if (!qs || !region || !traction)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_traction: NULL argument");
    for (int k = 0; k < 3; k++)
        if (!isfinite(traction[k]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_traction: traction not finite");
    unsigned char *mark = defo_malloc((size_t)qs->n + 1);
    if (!mark) return defo_error_oom("traction mark", (size_t)qs->n);
    /* t·A/3 per corner of each boundary triangle in the region (mesh module) */
    defo_status st = defo_region_mark(qs->mesh, region, mark);
    if (st == DEFO_OK) st = defo_mesh_add_traction(qs->mesh, mark, traction, qs->fext, area);
    defo_free(mark);
    if (st != DEFO_OK) return st;
    update_reference(qs);
    qs->nhist = 0;
    return DEFO_OK;
}

defo_status defo_quasistatic_add_contact(defo_quasistatic *qs, const defo_contact_source *source) {
    if (!qs || !source) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "add_contact: NULL argument");
    const void *shape = source->kind == DEFO_CONTACT_SDF_GRID ? (const void *)source->grid
                                                              : (const void *)source->collider;
    if (!shape || !(source->stiffness > 0.0) || !isfinite(source->stiffness))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "add_contact: missing shape or stiffness %g not > 0", source->stiffness);
    defo_contact_source *ns =
        defo_realloc(qs->src, sizeof(defo_contact_source) * (size_t)(qs->num_src + 1));
    if (!ns) return defo_error_oom("contact sources", sizeof *ns);
    qs->src = ns;
    qs->src[qs->num_src++] = *source;
    qs->nhist = 0;
    return DEFO_OK;
}

size_t defo_quasistatic_bytes(const defo_quasistatic *qs) {
    size_t n = (size_t)qs->n, ne = (size_t)qs->ne;
    /* per element U, Dh, slot, psi, flag, rest; per node f, xt, ft, f_ext,
     * contact blocks and scratch */
    size_t b = sizeof *qs + ne * (18 + 12 + 1 + 9 + 3) * sizeof(double) + ne * sizeof(defo_dpdf) +
               ne + n * (3 * 4 + 9 + 1) * sizeof(double) + n * (1 + sizeof(int)) +
               (n + 1 + 4 * ne) * sizeof(int64_t);
    if (qs->slot9) b += 36 * ne * sizeof(double);
    if (qs->A) b += defo_bcsr_bytes(qs->A);
    b += (size_t)history_size(&qs->def) * 3 * n * sizeof(double);
    return b + defo_newton_bytes(qs->newton);
}

/* ------------------------------------------------------------ kernels */
static void place_bones(const defo_quasistatic *qs, double t, double *x) {
    if (qs->num_bones == 0) return;
    const double *X = qs->mesh->x;
    for (defo_index i = 0; i < qs->n; i++) {
        int bi = qs->node_bone[i];
        if (bi < 0) continue;
        const qs_bone *b = &qs->bones[bi];
        const double *Xi = X + 3 * (size_t)i;
        double *xi = x + 3 * (size_t)i;
        if (b->explicit_transform) {
            for (int k = 0; k < 3; k++)
                xi[k] = b->R[3 * k] * Xi[0] + b->R[3 * k + 1] * Xi[1] + b->R[3 * k + 2] * Xi[2] +
                        b->T[k];
            continue;
        }
        defo_motion_eval(&b->motion, t, Xi, xi, NULL);
    }
}

static inline defo_mat3 load_m3(const double *p) {
    defo_mat3 m;
    memcpy(m.m, p, 9 * sizeof(double));
    return m;
}
static inline void store_m3(double *p, const defo_mat3 *m) {
    memcpy(p, m->m, 9 * sizeof(double));
}

/* Element rows d_0..d_3 of D̂ = Dm⁻¹V (d_0 = −Σ). */
static inline void elem_rows(const double *Dh, defo_vec3 d[4]) {
    d[1] = defo_v3(Dh[0], Dh[1], Dh[2]);
    d[2] = defo_v3(Dh[3], Dh[4], Dh[5]);
    d[3] = defo_v3(Dh[6], Dh[7], Dh[8]);
    d[0] = defo_v3(-(d[1].x + d[2].x + d[3].x), -(d[1].y + d[2].y + d[3].y),
                   -(d[1].z + d[2].z + d[3].z));
}

/* Σ v[0..n) with a grouping independent of the thread count and without
 * allocation: defo_sum (fixed blocks, ≤ 64 of them on its stack) over
 * consecutive chunks of 64 blocks, added in order. */
static double sum_fixed(const double *v, size_t n) {
    const size_t chunk = (size_t)64 * 4096;
    double s = 0.0;
    for (size_t i = 0; i < n; i += chunk) s += defo_sum(v + i, n - i < chunk ? n - i : chunk);
    return s;
}

/* Evaluate forces (f, 3n: elastic + external + contact) and energy at x,
 * storing the per-element linearisation.  Returns DEFO_ERR_NUMERICAL when
 * an element produces a non-finite value. */
static defo_status evaluate(defo_quasistatic *qs, double t, const double *x, double *f,
                            double *energy) {
    const defo_index ne = qs->ne;
    const defo_index *conn = qs->mesh->elems;
    const int fix = qs->def.definiteness_fix;
    qs->state_at_h0 = 0;
    DEFO_PARALLEL_FOR
    for (defo_index e = 0; e < ne; e++) {
        const defo_index *v = conn + 4 * (size_t)e;
        defo_vec3 x0 = defo_v3_load(x + 3 * (size_t)v[0]);
        defo_mat3 Ds = defo_m3_from_cols(defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[1]), x0),
                                         defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[2]), x0),
                                         defo_v3_sub(defo_v3_load(x + 3 * (size_t)v[3]), x0));
        defo_mat3 Dmi = load_m3(qs->rest.Dm_inv + 9 * (size_t)e);
        defo_mat3 F = defo_m3_mul(Ds, Dmi);
        unsigned char fl = 0;
        double *sl = qs->slot + 12 * (size_t)e;
        if (!defo_m3_isfinite(F)) {
            qs->flag[e] = QS_BAD;
            qs->psi[e] = NAN;
            for (int k = 0; k < 12; k++) sl[k] = 0.0;
            continue;
        }
        defo_mat3 U, V;
        defo_vec3 sig, phat;
        defo_svd3(&F, &U, &sig, &V);
        defo_dpdf dp;
        double psi;
        psi = defo_material_eval(qs->mat, sig, &phat, &dp);
        if (sig.z <= 0.0) fl |= QS_INVERTED;
        if (fix && defo_dpdf_project_psd(&dp) > 0) fl |= QS_CLAMPED;
        double vol = qs->rest.volume[e];
        defo_mat3 Dh = defo_m3_mul(Dmi, V);
        store_m3(qs->U + 9 * (size_t)e, &U);
        store_m3(qs->Dh + 9 * (size_t)e, &Dh);
        qs->dpdf[e] = dp;
        qs->psi[e] = vol * psi;
        defo_vec3 d[4];
        elem_rows(qs->Dh + 9 * (size_t)e, d);
        int finite = isfinite(psi);
        for (int m = 0; m < 4; m++) {
            defo_vec3 w = defo_v3(phat.x * d[m].x, phat.y * d[m].y, phat.z * d[m].z);
            defo_vec3 fm = defo_v3_scale(defo_m3_mulv(U, w), -vol);
            defo_v3_store(sl + 3 * m, fm);
            finite &= isfinite(fm.x) && isfinite(fm.y) && isfinite(fm.z);
        }
        if (!finite) fl |= QS_BAD;
        qs->flag[e] = fl;
    }
    for (defo_index e = 0; e < ne; e++)
        if (qs->flag[e] & QS_BAD)
            return defo_error(DEFO_ERR_NUMERICAL,
                              "quasistatic: element %d gives a non-finite force", (int)e);
    qs->assembled = 0;
    qs->last_t = t;
    if (f) {
        defo_gather3(&qs->inc, qs->slot, f);
        const size_t m = 3 * (size_t)qs->n;
        DEFO_PARALLEL_FOR
        for (size_t i = 0; i < m; i++) f[i] += qs->fext[i];
    }
    double pen = 0.0;
    qs->contacts = 0;
    if (qs->num_src > 0) {
        defo_status st = defo_penalty_eval(qs->src, qs->num_src, t, qs->n, x, qs->constraint, &pen,
                                           f, qs->cblock, &qs->contacts, qs->pwork);
        if (st != DEFO_OK) return st;
    }
    if (energy) {
        double e_el = sum_fixed(qs->psi, (size_t)ne);
        double e_ext = defo_dot(qs->fext, x, 3 * (size_t)qs->n);
        *energy = e_el - e_ext + pen;
        if (!isfinite(*energy))
            return defo_error(DEFO_ERR_NUMERICAL, "quasistatic: non-finite energy");
    }
    return DEFO_OK;
}

/* Block (m, n), m ≤ n, of element e's stiffness, B = vol U K̂_mn Uᵀ
 * (row-major; top of the file).  K̂_mn[:, k] = δP̂(e_k d_nᵀ) d_m written out
 * with the block form of dP/dF (defo/material.h): for δF̂ = e_k d_nᵀ only
 * row k is nonzero, so
 *   K̂_mn[a][a] = A_aa d_m,a d_n,a + Σ_{b≠a} S_ab d_m,b d_n,b,
 *   K̂_mn[a][k] = A_ak d_m,a d_n,k + T_ak d_n,a d_m,k        (k ≠ a),
 * with, for the pair p = (i, j), i < j, of blocks B_p:
 *   S_ij = B_p[0][0], S_ji = B_p[1][1], T_ij = B_p[0][1], T_ji = B_p[1][0]. */
static void element_block(const defo_quasistatic *qs, int64_t e, int m, int n, double *B) {
    const double *U = qs->U + 9 * e;
    const defo_dpdf *dp = &qs->dpdf[e];
    const double *Dh = qs->Dh + 9 * e;
    double dm[3], dn[3];
    for (int k = 0; k < 3; k++) {
        dm[k] = m ? Dh[3 * (m - 1) + k] : -(Dh[k] + Dh[3 + k] + Dh[6 + k]);
        dn[k] = n ? Dh[3 * (n - 1) + k] : -(Dh[k] + Dh[3 + k] + Dh[6 + k]);
    }
    const double S01 = dp->B[0][0][0], S10 = dp->B[0][1][1], T01 = dp->B[0][0][1],
                 T10 = dp->B[0][1][0];
    const double S02 = dp->B[1][0][0], S20 = dp->B[1][1][1], T02 = dp->B[1][0][1],
                 T20 = dp->B[1][1][0];
    const double S12 = dp->B[2][0][0], S21 = dp->B[2][1][1], T12 = dp->B[2][0][1],
                 T21 = dp->B[2][1][0];
    double Kh[3][3];
    Kh[0][0] = dp->A[0][0] * dm[0] * dn[0] + S01 * dm[1] * dn[1] + S02 * dm[2] * dn[2];
    Kh[1][1] = dp->A[1][1] * dm[1] * dn[1] + S10 * dm[0] * dn[0] + S12 * dm[2] * dn[2];
    Kh[2][2] = dp->A[2][2] * dm[2] * dn[2] + S20 * dm[0] * dn[0] + S21 * dm[1] * dn[1];
    Kh[0][1] = dp->A[0][1] * dm[0] * dn[1] + T01 * dn[0] * dm[1];
    Kh[1][0] = dp->A[1][0] * dm[1] * dn[0] + T10 * dn[1] * dm[0];
    Kh[0][2] = dp->A[0][2] * dm[0] * dn[2] + T02 * dn[0] * dm[2];
    Kh[2][0] = dp->A[2][0] * dm[2] * dn[0] + T20 * dn[2] * dm[0];
    Kh[1][2] = dp->A[1][2] * dm[1] * dn[2] + T12 * dn[1] * dm[2];
    Kh[2][1] = dp->A[2][1] * dm[2] * dn[1] + T21 * dn[2] * dm[1];
    const double vol = qs->rest.volume[e];
    double W[3][3];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            W[i][k] = U[3 * i] * Kh[0][k] + U[3 * i + 1] * Kh[1][k] + U[3 * i + 2] * Kh[2][k];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            B[3 * i + j] =
                vol * (W[i][0] * U[3 * j] + W[i][1] * U[3 * j + 1] + W[i][2] * U[3 * j + 2]);
}

/* K = Σ_e K_e + contact into A without per-element buffers (as corotated.c): each
 * block (I, J), J ≥ I, is the sum over its sources (e, i, j) — the bcsr
 * assembly map, in increasing slot order, so the sum does not depend on the
 * thread count — of element_block (transposed when i > j; a diagonal
 * element block taken symmetric from its lower triangle); block (J, I) is
 * its transpose.  K is exactly symmetric.  Parallel over block rows. */
static void assemble(defo_quasistatic *qs) {
    if (qs->assembled) return;
    const defo_bcsr_pattern *A = defo_bcsr_get_pattern(qs->A);
    double *val = defo_bcsr_values(qs->A);
    const defo_index nr = A->num_rows;
    DEFO_PARALLEL_FOR
    for (defo_index I = 0; I < nr; I++) {
        for (int64_t b = A->diag[I]; b < A->row_offset[I + 1]; b++) {
            double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
            for (int64_t k = A->src_offset[b]; k < A->src_offset[b + 1]; k++) {
                int64_t e;
                int i, j;
                defo_bcsr_slot(A->src[k], 4, &e, &i, &j);
                double B[9];
                element_block(qs, e, i < j ? i : j, i < j ? j : i, B);
                if (i == j) {
                    for (int r = 0; r < 3; r++)
                        for (int q = 0; q < 3; q++)
                            s[3 * r + q] += r >= q ? B[3 * r + q] : B[3 * q + r];
                } else if (i < j) {
                    for (int q = 0; q < 9; q++) s[q] += B[q];
                } else {
                    for (int r = 0; r < 3; r++)
                        for (int q = 0; q < 3; q++) s[3 * r + q] += B[3 * q + r];
                }
            }
            double *v = val + 9 * b;
            memcpy(v, s, sizeof s);
            if (b != A->diag[I]) {
                double *w = val + 9 * A->transpose[b];
                for (int r = 0; r < 3; r++)
                    for (int q = 0; q < 3; q++) w[3 * q + r] = s[3 * r + q];
            }
        }
    }
    /* the penalty contact blocks (TSIF05 §10) are part of K */
    if (qs->num_src > 0) defo_bcsr_add_diagonal_blocks(qs->A, qs->cblock, 1.0);
    qs->assembled = 1;
}

/* Matrix-free elastic product y = K d (TSIF05 eq. 4 per element). */
static void apply_matrix_free(defo_quasistatic *qs, const double *dx, double *y) {
    const defo_index *conn = qs->mesh->elems;
    DEFO_PARALLEL_FOR
    for (defo_index e = 0; e < qs->ne; e++) {
        const defo_index *v = conn + 4 * (size_t)e;
        defo_vec3 d0 = defo_v3_load(dx + 3 * (size_t)v[0]);
        defo_mat3 dDs = defo_m3_from_cols(defo_v3_sub(defo_v3_load(dx + 3 * (size_t)v[1]), d0),
                                          defo_v3_sub(defo_v3_load(dx + 3 * (size_t)v[2]), d0),
                                          defo_v3_sub(defo_v3_load(dx + 3 * (size_t)v[3]), d0));
        defo_mat3 U = load_m3(qs->U + 9 * (size_t)e);
        defo_mat3 Dh = load_m3(qs->Dh + 9 * (size_t)e);
        defo_mat3 dFh = defo_m3_tmul(U, defo_m3_mul(dDs, Dh));
        defo_mat3 dPh = defo_dpdf_apply(&qs->dpdf[e], &dFh);
        defo_mat3 W = defo_m3_mul(U, dPh);
        double vol = qs->rest.volume[e];
        defo_vec3 d[4];
        elem_rows(qs->Dh + 9 * (size_t)e, d);
        double *sl = qs->slot + 12 * (size_t)e;
        for (int m = 0; m < 4; m++)
            defo_v3_store(sl + 3 * m, defo_v3_scale(defo_m3_mulv(W, d[m]), vol));
    }
    defo_gather3(&qs->inc, qs->slot, y);
}

/* y = K d (elastic + contact), no constraints. */
static void apply_K(defo_quasistatic *qs, const double *dx, double *y) {
    if (qs->use_matrix) {
        assemble(qs);
        defo_bcsr_multiply(qs->A, dx, y);
        return;
    }
    apply_matrix_free(qs, dx, y);
    if (qs->num_src > 0) {
        DEFO_PARALLEL_FOR
        for (defo_index i = 0; i < qs->n; i++) {
            const double *C = qs->cblock + 9 * (size_t)i;
            const double *a = dx + 3 * (size_t)i;
            double *b = y + 3 * (size_t)i;
            for (int k = 0; k < 3; k++)
                b[k] += C[3 * k] * a[0] + C[3 * k + 1] * a[1] + C[3 * k + 2] * a[2];
        }
    }
}

void defo_quasistatic_apply_stiffness(defo_quasistatic *qs, const double *d, double *y) {
    apply_K(qs, d, y);
}

const defo_bcsr *defo_quasistatic_stiffness(defo_quasistatic *qs) {
    if (!qs->use_matrix) return NULL;
    assemble(qs);
    return qs->A;
}

defo_status defo_quasistatic_evaluate(defo_quasistatic *qs, double t, const double *x,
                                      double *force, double *energy) {
    if (!qs || !x) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "evaluate: NULL argument");
    return evaluate(qs, t, x, force ? force : qs->f, energy);
}

/* The 3×3 diagonal blocks of K (elastic + contact), 9 per node, for the
 * linear solver's (block) Jacobi when K is matrix-free: per element the
 * blocks K_mm = vol U K̂_mm Uᵀ (K̂_mm[:, k] = δP̂(e_k d_mᵀ) d_m), gathered per
 * node in slot order. */
static void diagonal_blocks(defo_quasistatic *qs, double *blocks) {
    const defo_index n = qs->n;
    DEFO_PARALLEL_FOR
    for (defo_index e = 0; e < qs->ne; e++) {
        defo_mat3 U = load_m3(qs->U + 9 * (size_t)e);
        const defo_dpdf *dp = &qs->dpdf[e];
        double vol = qs->rest.volume[e];
        defo_vec3 d[4];
        elem_rows(qs->Dh + 9 * (size_t)e, d);
        for (int m = 0; m < 4; m++) {
            defo_mat3 Kh;
            for (int k = 0; k < 3; k++) {
                defo_mat3 dF = defo_m3_zero();
                dF.m[k][0] = d[m].x;
                dF.m[k][1] = d[m].y;
                dF.m[k][2] = d[m].z;
                defo_mat3 dP = defo_dpdf_apply(dp, &dF);
                defo_vec3 col = defo_m3_mulv(dP, d[m]);
                Kh.m[0][k] = col.x;
                Kh.m[1][k] = col.y;
                Kh.m[2][k] = col.z;
            }
            defo_mat3 B = defo_m3_scale(defo_m3_mult(defo_m3_mul(U, Kh), U), vol);
            store_m3(qs->slot9 + 36 * (size_t)e + 9 * (size_t)m, &B);
        }
    }
    DEFO_PARALLEL_FOR
    for (defo_index i = 0; i < n; i++) {
        double B[9] = {0};
        for (int64_t s = qs->inc.offset[i]; s < qs->inc.offset[i + 1]; s++) {
            const double *src = qs->slot9 + 9 * qs->inc.slot[s];
            for (int k = 0; k < 9; k++) B[k] += src[k];
        }
        if (qs->num_src > 0)
            for (int k = 0; k < 9; k++) B[k] += qs->cblock[9 * (size_t)i + (size_t)k];
        memcpy(blocks + 9 * (size_t)i, B, sizeof B);
    }
}

static defo_index count_flag(const defo_quasistatic *qs, unsigned char bit) {
    defo_index c = 0;
    for (defo_index e = 0; e < qs->ne; e++) c += (qs->flag[e] & bit) ? 1 : 0;
    return c;
}

static double now_seconds(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Limit the largest nodal displacement of a step to the larger of the rest
 * and current bounding-box diagonals: a nearly singular (clamped) stiffness
 * can give huge components that no line search would recover from in a few
 * halvings, while a scattered start needs steps of its own size. */
static void cap_step(const defo_quasistatic *qs, const double *x, double *dx) {
    const size_t m = 3 * (size_t)qs->n;
    double mx = 0.0, lo[3] = {INFINITY, INFINITY, INFINITY},
           hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    for (defo_index i = 0; i < qs->n; i++) {
        const double *a = dx + 3 * (size_t)i, *p = x + 3 * (size_t)i;
        mx = fmax(mx, a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], p[k]);
            hi[k] = fmax(hi[k], p[k]);
        }
    }
    mx = sqrt(mx);
    double cur = sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                      (hi[2] - lo[2]) * (hi[2] - lo[2]));
    double cap = fmax(qs->diag, cur);
    if (mx > cap) {
        double s = cap / mx;
        for (size_t i = 0; i < m; i++) dx[i] *= s;
    }
}

/* The predictor of defo_qs_predictor applies: x (as passed in, before the
 * bones are placed) is the equilibrium returned last, enough of them are
 * known at increasing times, and t lies ahead of the newest by at most 4 of
 * its last interval. */
static int can_extrapolate(const defo_quasistatic *qs, double t, const double *x) {
    int need = history_size(&qs->def);
    if (need == 0 || qs->nhist < need) return 0;
    for (int k = 0; k + 1 < need; k++)
        if (!(qs->th[k] > qs->th[k + 1])) return 0;
    double sc = (t - qs->th[0]) / (qs->th[0] - qs->th[1]);
    if (!(sc > 0.0 && sc <= 4.0)) return 0;
    return memcmp(x, qs->xh[0], 3 * (size_t)qs->n * sizeof(double)) == 0;
}

/* Extrapolate the last equilibria to t into qs->xt by the Lagrange
 * polynomial through them (linear or quadratic in t), bones placed at t. */
static void extrapolate(defo_quasistatic *qs, double t) {
    const size_t m = 3 * (size_t)qs->n;
    const int h = history_size(&qs->def);
    /* Lagrange weights w_j = Π_{l≠j} (t − t_l)/(t_j − t_l) */
    double w[4] = {0.0, 0.0, 0.0, 0.0};
    for (int j = 0; j < h; j++) {
        w[j] = 1.0;
        for (int l = 0; l < h; l++)
            if (l != j) w[j] *= (t - qs->th[l]) / (qs->th[j] - qs->th[l]);
    }
    const double *x0 = qs->xh[0], *x1 = qs->xh[1];
    const double *x2 = h > 2 ? qs->xh[2] : x1, *x3 = h > 3 ? qs->xh[3] : x1;
    double *xt = qs->xt;
    DEFO_PARALLEL_FOR
    for (size_t i = 0; i < m; i++)
        xt[i] = w[0] * x0[i] + w[1] * x1[i] + w[2] * x2[i] + w[3] * x3[i];
    place_bones(qs, t, xt);
}

/* The elements with a bone node, listed once after the bones change (at the
 * start of a solve, so warm frames allocate nothing); 0 on allocation
 * failure (the predictor then compares full evaluations). */
static int build_bone_elems(defo_quasistatic *qs) {
    if (!qs->bone_elem_dirty) return qs->bone_elem != NULL;
    defo_free(qs->bone_elem);
    defo_free(qs->bone_dpsi);
    qs->bone_elem = NULL;
    qs->bone_dpsi = NULL;
    qs->num_bone_elem = 0;
    const defo_index *conn = qs->mesh->elems;
    defo_index c = 0;
    for (defo_index e = 0; e < qs->ne; e++) {
        const defo_index *v = conn + 4 * (size_t)e;
        c += qs->constraint[v[0]] || qs->constraint[v[1]] || qs->constraint[v[2]] ||
             qs->constraint[v[3]];
    }
    qs->bone_elem = defo_malloc(sizeof(defo_index) * ((size_t)c + 1));
    qs->bone_dpsi = defo_malloc(sizeof(double) * ((size_t)c + 1));
    if (!qs->bone_elem || !qs->bone_dpsi) {
        defo_free(qs->bone_elem);
        defo_free(qs->bone_dpsi);
        qs->bone_elem = NULL;
        qs->bone_dpsi = NULL;
        return 0;
    }
    c = 0;
    for (defo_index e = 0; e < qs->ne; e++) {
        const defo_index *v = conn + 4 * (size_t)e;
        if (qs->constraint[v[0]] || qs->constraint[v[1]] || qs->constraint[v[2]] ||
            qs->constraint[v[3]])
            qs->bone_elem[c++] = e;
    }
    qs->num_bone_elem = c;
    qs->bone_elem_dirty = 0;
    return 1;
}

/* Total energy at xb = xh[0] with only the bones moved, while the element
 * state is still that of xh[0] (energy E_h0) and there is no contact (its
 * energy depends on t everywhere): E_h0 plus the energy change of the
 * elements with a bone node, minus f_extᵀ(xb − xh[0]) on the bones.  A
 * fraction of a full evaluation (only those elements' SVDs).  0 when not
 * available or not finite. */
static int energy_bones_moved(defo_quasistatic *qs, const double *xb, double *E) {
    if (!qs->state_at_h0 || qs->num_src > 0 || !build_bone_elems(qs)) return 0;
    const defo_index *conn = qs->mesh->elems;
    const defo_index nb = qs->num_bone_elem;
    DEFO_PARALLEL_FOR_IF(nb > DEFO_PARALLEL_MIN)
    for (defo_index k = 0; k < nb; k++) {
        defo_index e = qs->bone_elem[k];
        const defo_index *v = conn + 4 * (size_t)e;
        defo_vec3 x0 = defo_v3_load(xb + 3 * (size_t)v[0]);
        defo_mat3 Ds = defo_m3_from_cols(defo_v3_sub(defo_v3_load(xb + 3 * (size_t)v[1]), x0),
                                         defo_v3_sub(defo_v3_load(xb + 3 * (size_t)v[2]), x0),
                                         defo_v3_sub(defo_v3_load(xb + 3 * (size_t)v[3]), x0));
        defo_mat3 F = defo_m3_mul(Ds, load_m3(qs->rest.Dm_inv + 9 * (size_t)e));
        double dpsi = NAN;
        if (defo_m3_isfinite(F)) {
            defo_mat3 U, V;
            defo_vec3 sig;
            defo_svd3(&F, &U, &sig, &V);
            dpsi = qs->rest.volume[e] * defo_material_eval(qs->mat, sig, NULL, NULL) - qs->psi[e];
        }
        qs->bone_dpsi[k] = dpsi;
    }
    double dext = 0.0;
    for (defo_index i = 0; i < qs->n; i++)
        if (qs->constraint[i])
            for (int k = 0; k < 3; k++) {
                size_t j = 3 * (size_t)i + (size_t)k;
                dext += qs->fext[j] * (xb[j] - qs->xh[0][j]);
            }
    *E = qs->E_h0 + sum_fixed(qs->bone_dpsi, (size_t)nb) - dext;
    return isfinite(*E);
}

/* Start from the extrapolated guess if its energy is below Eref (the energy
 * of x): x, f, *E and the element state become the guess's.  Returns 0
 * otherwise, the element state then being that of the guess (the caller
 * re-evaluates x). */
static int try_prediction(defo_quasistatic *qs, double t, double *x, double *f, double Eref,
                          double *E) {
    const size_t m = 3 * (size_t)qs->n;
    extrapolate(qs, t);
    double Ep = 0.0;
    if (evaluate(qs, t, qs->xt, qs->ft, &Ep) != DEFO_OK || !(Ep < Eref)) return 0;
    memcpy(x, qs->xt, m * sizeof(double));
    memcpy(f, qs->ft, m * sizeof(double));
    *E = Ep;
    return 1;
}

/* After a converged frame: remember its equilibrium for the predictor. */
static void remember(defo_quasistatic *qs, double t, const double *x, double E) {
    int h = history_size(&qs->def);
    if (h == 0) return;
    double *oldest = qs->xh[h - 1];
    for (int k = h - 1; k > 0; k--) {
        qs->xh[k] = qs->xh[k - 1];
        qs->th[k] = qs->th[k - 1];
    }
    qs->xh[0] = oldest;
    memcpy(qs->xh[0], x, 3 * (size_t)qs->n * sizeof(double));
    qs->th[0] = t;
    if (qs->nhist < h) qs->nhist++;
    qs->state_at_h0 = 1; /* the last evaluation was at x */
    qs->E_h0 = E;
}

/* ------------------------------------------------------------ Newton */
/* The frame as a problem for the shared Newton driver: E = Σ vol ψ −
 * f_extᵀx + Σ kφ²/2 at time frame_t, K its (definiteness-fixed) Hessian. */
static defo_status nt_evaluate(void *ctx, const double *x, double *f, double *energy) {
    defo_quasistatic *qs = ctx;
    return evaluate(qs, qs->frame_t, x, f, energy);
}
static const defo_bcsr *nt_matrix(void *ctx) {
    defo_quasistatic *qs = ctx;
    if (!qs->use_matrix) return NULL;
    assemble(qs);
    return qs->A;
}
static void nt_apply(void *ctx, const double *d, double *y) {
    apply_K(ctx, d, y);
}
static void nt_diagonal(void *ctx, double *blocks) {
    diagonal_blocks(ctx, blocks);
}
static void nt_cap_step(void *ctx, const double *x, double *dx) {
    cap_step(ctx, x, dx);
}
static void nt_accepted(void *ctx, const double *x) {
    defo_quasistatic *qs = ctx;
    (void)x;
    defo_index inv = count_flag(qs, QS_INVERTED);
    if (inv > qs->max_inverted) qs->max_inverted = inv;
}

defo_status defo_quasistatic_solve(defo_quasistatic *qs, double t, double *x,
                                   defo_quasistatic_stats *stats) {
    if (!qs || !x) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "quasistatic_solve: NULL argument");
    if (!isfinite(t))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "quasistatic_solve: t not finite");
    const size_t m = 3 * (size_t)qs->n;
    for (size_t i = 0; i < m; i++)
        if (!isfinite(x[i]))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "quasistatic_solve: position of node %zu is not finite", i / 3);
    double t0 = now_seconds();
    defo_quasistatic_stats s;
    memset(&s, 0, sizeof s);
    s.reference_force = qs->fref;
    if (history_size(&qs->def) > 0 && qs->bone_elem_dirty) build_bone_elems(qs);
    const int predict = can_extrapolate(qs, t, x);
    if (qs->def.frame_local) defo_newton_invalidate(qs->newton); /* nothing from earlier frames */
    place_bones(qs, t, x);
    double E = 0.0;
    double *f = qs->f;
    defo_status st = DEFO_OK, ret = DEFO_OK;
    /* The predictor's start is kept only if it lowers the energy below that
     * of x (bones at t).  That energy needs only the elements at the bones
     * when x is the last equilibrium and no contact moves (one full
     * evaluation per frame instead of two). */
    double Eb = 0.0;
    int tried = 0;
    if (predict && energy_bones_moved(qs, x, &Eb)) {
        tried = 1;
        s.predicted = try_prediction(qs, t, x, f, Eb, &E);
    }
    if (!s.predicted) {
        st = evaluate(qs, t, x, f, &E);
        if (st == DEFO_OK && predict && !tried) {
            s.predicted = try_prediction(qs, t, x, f, E, &E);
            if (!s.predicted) st = evaluate(qs, t, x, f, &E);
        }
        if (st != DEFO_OK) {
            s.reason = DEFO_REASON_NUMERICAL;
            ret = st;
            goto done;
        }
    }
    qs->max_inverted = count_flag(qs, QS_INVERTED);
    qs->frame_t = t;
    defo_newton_problem p;
    memset(&p, 0, sizeof p);
    p.n = qs->n;
    p.ctx = qs;
    p.evaluate = nt_evaluate;
    p.matrix = nt_matrix;
    p.apply = nt_apply;
    p.diagonal = nt_diagonal;
    p.cap_step = nt_cap_step;
    p.accepted = nt_accepted;
    p.constraint = qs->constraint;
    const double target = qs->def.tolerance * qs->fref;
    defo_newton_stats ns;
    ret = defo_newton_solve(qs->newton, &p, target, x, f, E, s.predicted, &ns);
    s.newton_iterations = ns.iterations;
    s.cg_iterations = ns.cg_iterations;
    s.negative_curvature = ns.negative_curvature;
    s.line_search_backtracks = ns.backtracks;
    s.reason = ns.reason;
    s.residual = ns.residual;
    s.initial_residual = ns.initial_residual;
    s.precond_setups = ns.precond_setups;
    s.precond_fallbacks = ns.fallbacks;
    s.linear_seconds = ns.linear_seconds;
    s.max_inverted = qs->max_inverted;
    E = ns.energy;
    if (ret == DEFO_WARN_NOT_CONVERGED)
        defo_error(DEFO_WARN_NOT_CONVERGED,
                   "quasistatic: not converged at t = %g (%s after %d iterations, residual %g N, "
                   "target %g N)",
                   t, defo_convergence_reason_name(s.reason), s.newton_iterations, s.residual,
                   target);
    if (s.reason == DEFO_REASON_CONVERGED)
        remember(qs, t, x, E);
    else
        qs->nhist = 0;
done:
    s.energy = E;
    s.inverted = count_flag(qs, QS_INVERTED);
    s.clamped_elements = count_flag(qs, QS_CLAMPED);
    s.contacts = qs->contacts;
    s.seconds = now_seconds() - t0;
    if (stats) *stats = s;
    return ret;
}
