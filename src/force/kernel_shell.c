/*
 * force/kernel_shell.c — thin shells and cloth (ITF04 §8) behind the force
 * model handle: tri3 elements with in-plane elasticity in the 2-D diagonal
 * frame and hinge bending between neighbouring triangles.
 *
 * In plane.  F = Ds Dm⁻¹ is 3×2 (Ds = [x1 − x0, x2 − x0], Dm⁻¹ from the
 * element layer's 2-D rest frame), F = U diag(σ1, σ2) Vᵀ with U 3×2 of
 * orthonormal columns and V a rotation: σ1² and V from FᵀF, u1 = F v1/σ1,
 * σ1σ2 = |f1 × f2| (f the columns of F: accurate as the triangle flattens),
 * n̂ = (f1 × f2)/|f1 × f2| and u2 = n̂ × u1, so σ2 ≥ 0 always.  ITF04 §8:
 * a freely moving shell cannot invert — a triangle turned over is a triangle
 * rotated 180° out of plane, and its energy is the same — so no triangle is
 * "inverted" and ψ̃ depends on x alone.  (A sign rule against a
 * state-dependent reference normal, such as the neighbours' normals, makes
 * the energy jump by h A (ψ̃(σ1, −σ2) − ψ̃(σ1, σ2)) whenever a fold turns a
 * triangle past 90° from its neighbours: undamped cloth folding on a
 * collider gained 19 J in one frame from 20 such flips and blew up.)  Only
 * a flat triangle (σ2 = 0: collinear corners) has no normal of its own; it
 * takes its reference normal — the sum of its edge neighbours' unit normals,
 * its own last one without any — so its stress pushes it open on the side
 * of the surface around it (ITF04 §8's special care for degenerate
 * triangles).  The energy is h A ψ̃(σ1, σ2) with ψ̃ the material in
 * plane stress (defo_material_eval_plane), P = U diag(P̂) Vᵀ and the forces
 * f_a = −h A P ∇N_a (ITF04 eq. 2 in 2-D).  The tangent K = −∂f/∂x uses
 * dP/dF in the frame [U n̂] × V (defo_dpdf2: A, B and the out-of-plane
 * P̂i/σi), exact: no TSIF05 §8 definiteness fix on shells (see below).  Damping (ITF04 §6.2 in the rotated frame): P̂_d = μ_d (Ḟ̂ + Ḟ̂ᵀ) +
 * λ*_d tr(Ḟ̂) I on the in-plane Ḟ̂ = Uᵀ Ḟ V, λ*_d = 2μ_dλ_d/(λ_d + 2μ_d),
 * with U, V (and the bending damping's hinge gradients, below) of the
 * step's start x (defo_force_model_track_hinges; the plastic part as it was
 * there): the damping force is D v with D fixed through the step, so the
 * implicit step's ½ h vᵀ D v is an exact potential — with D taken at each
 * iterate its x-derivative was missing from the Hessian, and the damped
 * cloth's Newton converged linearly (about 0.09 a step) instead of
 * quadratically.  Its diagonal blocks are kept for the step.
 * Plasticity (ITF04 §6.3 and §8): the in-plane plastic part F_p (2×2, in
 * the rest frame) is folded into the rest data, F_e = Ds (Dm⁻¹ F_p⁻¹), the
 * weight h A kept.
 *
 * Bending (the hinge energies of [BMF03] and discrete shells [GHDS03]).
 * Each interior edge (a, b) with opposite corners c, d is a hinge with
 * dihedral angle θ = atan2((n1 × n2)·ê, n1·n2), n1 ∝ (b − a) × (c − a) and
 * n2 ∝ (d − a) × (b − a) (both triangles' normals, consistently oriented),
 * and rest angle θ̄ from the rest mesh (plus its plastic part: the
 * plasticity layer's bending strain times 2(A1 + A2)/(h |e|)).  atan2's θ
 * in (−π, π] is moved by whole turns to the branch nearest the hinge's
 * angle at the step's start (θ_ref, defo_force_model_track_hinges, kept in
 * the history record), so the angle and the energy stay continuous when a
 * fold passes ±π (the wrapped angle made the energy jump there).  A
 * triangle's shape operator from its three hinges is
 *     S = Σ_i (θ_i − θ̄_i) |ē_i| / (2A) t_i t_iᵀ
 * (t_i the unit in-plane normal of edge i at rest; the mid-edge normal
 * construction of Grinspun, Gingold, Reisman and Zorin 2006 with the
 * normals fixed by the angles) and its energy is the Kirchhoff plate's
 *     W = A D/2 [(1 − ν) tr(S²) + ν (tr S)²],   D = E h³ / (12 (1 − ν²)),
 * a quadratic form ½ qᵀ K q in the angle changes q with
 * K_ij = A D c_i c_j ((1 − ν)(t_i·t_j)² + ν), c_i = |ē_i|/(2A).  On meshes
 * of congruent triangles (a grid of right triangles, equilateral ones) this
 * reproduces D/2 (κ11² + κ22² + 2νκ11κ22 + 2(1 − ν)κ12²) for every
 * curvature exactly, where one weight per edge (|e|²/(A1 + A2), discrete
 * shells) depends on the direction of bending by up to a factor 3.  A
 * boundary edge has no hinge: its angle is condensed out (the free edge's
 * natural condition, zero moment), K ← K_II − K_IB K_BB⁻¹ K_BI.  Forces
 * f = −Σ (K q)_i ∇θ_i with the exact ∇θ (Bridson et al. 2003):
 *     ∇_c θ = −|e| N1/|N1|²,  ∇_d θ = −|e| N2/|N2|²,
 *     ∇_b θ = −(s_c ∇_c θ + s_d ∇_d θ),  ∇_a θ = −Σ the others,
 * s the opposite corners' parameters along the edge, (p − a)·e/|e|².  The
 * Hessian is Σ_T J_Tᵀ K_T J_T (positive semidefinite, J the angle
 * gradients) plus m_h ∇²θ_h per hinge (m_h the hinge's moment Σ (K q)_h
 * over its two triangles), ∇²θ differentiated from the gradient formulas in
 * closed form.  Bending damping: the damping time times the
 * Gauss–Newton part.  A hinge next to a degenerate (zero-area) triangle has
 * no angle: it is inactive while the triangle is degenerate.
 *
 * The tangent is the exact Hessian, indefinite where the membrane is
 * compressed (P̂i/σi < 0: the sheet buckles) or a hinge term m ∇²θ has a
 * negative eigenvalue; definiteness_fix does not apply to shells.  Newton's
 * CG stops at negative curvature with a descent direction (solver/newton.c)
 * and the line search keeps the energy falling.  A shell cannot invert
 * (ITF04 §8), so the clamping that keeps TSIF05 §8's Newton away from
 * inverted tetrahedra has nothing to guard here, and clamped blocks made
 * Newton converge linearly (about 0.2 a step near the solution: a draped
 * cloth's compressed membrane keeps clamped blocks there) where the exact
 * one converges quadratically; the per-hinge 9×9 eigenproblems it needed
 * were also half of a cloth step's time.
 *
 * Layout: element e's stencil is its corners and the three corners across
 * its edges (a boundary edge repeats the corner opposite it, a slot that
 * stays zero), so every term of the triangle — its in-plane part, its
 * bending energy and the Hessian of the hinges it owns (each hinge is owned
 * by its first triangle) — lives in 6 node slots, gathered per node in slot
 * order and assembled through the stencils' matrix pattern: bitwise
 * identical for any thread count.
 */
#include "force/force_internal.h"

#include "defo/element.h"

#include <stdio.h>

#define SH_NS_FORCE     400
#define SH_NS_APPLY     150
#define SH_NS_DIAG      150
#define SH_NS_ASSEMBLE  600
#define SH_NS_HINGE     300 /* a hinge's Hessian */
#define SH_WORTH(n, ns) DEFO_PARALLEL_WORTH(n, ns)

/* What the kernel reads of a material part (fm->part[k]: material
 * regions give triangles their own): thickness, bending modulus, Poisson,
 * the plane-stress constants, damping blocks and time. */
typedef struct shell_part {
    double h, D, nu;       /* thickness, bending modulus E h³/(12(1 − ν²)), Poisson */
    double membrane_scale; /* λ* + 2μ: the plane-stress P-wave modulus */
    double rest_bound;     /* dpdf2 bound at rest */
    double tau;            /* damping time (bending damping = τ · Gauss–Newton) */
    defo_dpdf2 damp;       /* the damping moduli as blocks (constant) */
} shell_part;

/* A linearisation's frame data: per triangle the frame U (u1, u2: 6), its
 * normal n (3) and G = Dm⁻¹ V (4, row-major); per hinge ∇θ (12) and whether
 * it is live. */
typedef struct sh_lin {
    double *U, *n, *G, *gth;
    unsigned char *live;
} sh_lin;

struct fm_shell {
    defo_index nt, nh;          /* triangles, hinges */
    const double *frame;        /* rest frame (defo_element_rest_frame): b1 b2 Dm⁻¹ */
    const double *area;         /* rest areas */
    defo_index *stencil;        /* 6 per triangle */
    defo_index *nb;             /* 3 per triangle: the triangle across edge i, −1 */
    defo_index *tri_hinge;      /* 3 per triangle */
    int8_t *hmap;               /* 12 per triangle: stencil positions of hinge i's a b c d */
    defo_index *hinge;          /* 4 per hinge */
    defo_index *hinge_tri;      /* 2 per hinge */
    int8_t *hinge_local;        /* 2 per hinge: its local edge in each triangle */
    double *K;                  /* 9 per triangle: the condensed bending form */
    double *theta_rest;         /* per hinge */
    double *theta_ref;          /* per hinge: the angle at the last step's start (branch) */
    double *angle_per_strain;   /* per hinge: 2(A1 + A2)/(h |e|): θ per outer-fibre strain */
    const double *plastic_bend; /* borrowed: plastic bending strain per hinge, or NULL */
    /* at the last evaluation */
    double *nrm;           /* 3 per triangle: (x1 − x0) × (x2 − x0) */
    double *theta;         /* per hinge */
    double *gth;           /* 12 per hinge: ∇θ on a b c d */
    unsigned char *live;   /* per hinge: 1 when both triangles have an area */
    sh_lin ev;             /* the evaluation's: U n G below, gth live above */
    sh_lin dl;             /* the damping's, at the step's start (own arrays) */
    double *nrm_dl;        /* 3 per triangle: the normals there */
    double *ddiag;         /* 9 per node: the damping's diagonal blocks there */
    int ddiag_ok;          /* ddiag is made */
    double *Hh;            /* 78 per hinge: m ∇²θ, packed upper (tangent) */
    double *u;             /* 3 per triangle: K q */
    double *U;             /* 6 per triangle: u1, u2 */
    double *n;             /* 3 per triangle: u1 × u2 */
    double *G;             /* 4 per triangle: Dm⁻¹ V (row-major) */
    double *sig, *phat;    /* 2 per triangle */
    double *s3;            /* per triangle: thickness stretch */
    defo_dpdf2 *dp;        /* per triangle (tangent) */
    shell_part *part_data; /* per material part (fm->part, fm->num_parts) */
    double bend_omega2;    /* rest bound of the bending part's ω² (explicit steps) */
    int tangent_ok;        /* the last evaluation kept the tangent data */
};

/* The material part of triangle t. */
static inline const shell_part *tri_part(const defo_force_model *fm, defo_index t) {
    return &fm->shell->part_data[fm->part_of ? fm->part_of[t] : 0];
}

/* ------------------------------------------------------------ small math */
static inline void cross3(const double a[3], const double b[3], double c[3]) {
    c[0] = a[1] * b[2] - a[2] * b[1];
    c[1] = a[2] * b[0] - a[0] * b[2];
    c[2] = a[0] * b[1] - a[1] * b[0];
}
static inline double dot3(const double a[3], const double b[3]) {
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}
static inline void sub3(const double *a, const double *b, double c[3]) {
    c[0] = a[0] - b[0];
    c[1] = a[1] - b[1];
    c[2] = a[2] - b[2];
}

/* Packed upper index of (i, j), i ≤ j, of a 12×12 symmetric matrix. */
static inline int pk(int i, int j) {
    if (i > j) {
        const int t = i;
        i = j;
        j = t;
    }
    return i * 12 - i * (i - 1) / 2 + (j - i);
}

/* ----------------------------------------------------------- the hinge */
/* The continuous hinge angle: atan2's value in (−π, π] moved by whole turns
 * to the branch nearest ref (the angle at the step's start), so a hinge
 * folding through ±π keeps a continuous angle and energy.  No turn (the
 * usual case) leaves raw's bits unchanged. */
#define SH_TWO_PI 6.283185307179586476925286766559
static inline double unwrap_angle(double raw, double ref) {
    const double k = nearbyint((ref - raw) / SH_TWO_PI);
    return k == 0.0 ? raw : raw + SH_TWO_PI * k;
}

/* θ and ∇θ (12: on a b c d) of the hinge p[4] with the triangles' normals
 * N1 = (b − a) × (c − a), N2 = (d − a) × (b − a).  Returns 0 (nothing
 * written) when either triangle has no area relative to the edge. */
static int hinge_angle(const double *p0, const double *p1, const double *p2, const double *p3,
                       double *theta, double g[12]) {
    double e[3], u[3], w[3], N1[3], N2[3];
    sub3(p1, p0, e);
    sub3(p2, p0, u);
    sub3(p3, p0, w);
    cross3(e, u, N1);
    cross3(w, e, N2);
    const double L2 = dot3(e, e), n1 = dot3(N1, N1), n2 = dot3(N2, N2);
    if (!(L2 > 0) || !(n1 > 1e-20 * L2 * L2) || !(n2 > 1e-20 * L2 * L2) || !isfinite(n1 + n2))
        return 0;
    const double L = sqrt(L2);
    double c[3];
    cross3(N1, N2, c);
    *theta = atan2(dot3(c, e) / L, dot3(N1, N2));
    const double s2 = dot3(u, e) / L2, s3 = dot3(w, e) / L2;
    for (int k = 0; k < 3; k++) {
        const double g2 = -L * N1[k] / n1, g3 = -L * N2[k] / n2;
        const double g1 = -(s2 * g2 + s3 * g3);
        g[6 + k] = g2;
        g[9 + k] = g3;
        g[3 + k] = g1;
        g[k] = -(g1 + g2 + g3);
    }
    return 1;
}

/* [a]×, the cross-product matrix (row-major). */
static void crossm(const double a[3], double M[9]) {
    M[0] = 0, M[1] = -a[2], M[2] = a[1];
    M[3] = a[2], M[4] = 0, M[5] = -a[0];
    M[6] = -a[1], M[7] = a[0], M[8] = 0;
}

/* ∇²θ (12×12, row-major; row block b, column block a = ∂g_b/∂p_a) of a live
 * hinge, from the gradient formulas (top of the file) differentiated:
 * ∂N1/∂(a, b, c, d) = ([u]× − [e]×, −[u]×, [e]×, 0),
 * ∂N2/∂(a, b, c, d) = ([e]× − [w]×, [w]×, 0, −[e]×), ∂L = (−ê, ê, 0, 0),
 * ∂(N/|N|²) = (I − 2N̂N̂ᵀ)/|N|² ∂N, and the s parameters' gradients. */
static void hinge_hessian(const double *p0, const double *p1, const double *p2, const double *p3,
                          double H[144]) {
    double e[3], u[3], w[3], N1[3], N2[3];
    sub3(p1, p0, e);
    sub3(p2, p0, u);
    sub3(p3, p0, w);
    cross3(e, u, N1);
    cross3(w, e, N2);
    const double L2 = dot3(e, e), L = sqrt(L2);
    const double eh[3] = {e[0] / L, e[1] / L, e[2] / L};
    double Ce[9], Cu[9], Cw[9];
    crossm(e, Ce);
    crossm(u, Cu);
    crossm(w, Cw);
    double dN1[4][9], dN2[4][9];
    for (int k = 0; k < 9; k++) {
        dN1[0][k] = Cu[k] - Ce[k];
        dN1[1][k] = -Cu[k];
        dN1[2][k] = Ce[k];
        dN1[3][k] = 0;
        dN2[0][k] = Ce[k] - Cw[k];
        dN2[1][k] = Cw[k];
        dN2[2][k] = 0;
        dN2[3][k] = -Ce[k];
    }
    const double dL[4][3] = {{-eh[0], -eh[1], -eh[2]}, {eh[0], eh[1], eh[2]}, {0, 0, 0}, {0, 0, 0}};
    /* g_c (J[2]) and g_d (J[3]) with their Jacobians */
    double J[4][4][9]; /* J[b][a]: ∂g_b/∂p_a */
    double gv[4][3];
    const double *Ns[2] = {N1, N2};
    double(*dNs[2])[9] = {dN1, dN2};
    for (int m = 0; m < 2; m++) {
        const double *N = Ns[m];
        const double nn = dot3(N, N);
        double Dphi[9];
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++)
                Dphi[3 * r + k] = ((r == k ? 1.0 : 0.0) - 2.0 * N[r] * N[k] / nn) / nn;
        for (int r = 0; r < 3; r++) gv[2 + m][r] = -L * N[r] / nn;
        for (int a = 0; a < 4; a++)
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) {
                    double s = -(N[r] / nn) * dL[a][k];
                    for (int j = 0; j < 3; j++) s -= L * Dphi[3 * r + j] * dNs[m][a][3 * j + k];
                    J[2 + m][a][3 * r + k] = s;
                }
    }
    const double ue = dot3(u, e), we = dot3(w, e);
    const double s2 = ue / L2, s3 = we / L2;
    double ds2[4][3], ds3[4][3];
    for (int k = 0; k < 3; k++) {
        ds2[0][k] = (-e[k] - u[k]) / L2 + 2.0 * ue * eh[k] / (L2 * L);
        ds2[1][k] = u[k] / L2 - 2.0 * ue * eh[k] / (L2 * L);
        ds2[2][k] = e[k] / L2;
        ds2[3][k] = 0;
        ds3[0][k] = (-e[k] - w[k]) / L2 + 2.0 * we * eh[k] / (L2 * L);
        ds3[1][k] = w[k] / L2 - 2.0 * we * eh[k] / (L2 * L);
        ds3[2][k] = 0;
        ds3[3][k] = e[k] / L2;
    }
    for (int a = 0; a < 4; a++)
        for (int r = 0; r < 3; r++)
            for (int k = 0; k < 3; k++) {
                const int i = 3 * r + k;
                const double j1 = -(gv[2][r] * ds2[a][k] + s2 * J[2][a][i] + gv[3][r] * ds3[a][k] +
                                    s3 * J[3][a][i]);
                J[1][a][i] = j1;
                J[0][a][i] = -(j1 + J[2][a][i] + J[3][a][i]);
            }
    for (int b = 0; b < 4; b++)
        for (int a = 0; a < 4; a++)
            for (int r = 0; r < 3; r++)
                for (int k = 0; k < 3; k++) H[(3 * b + r) * 12 + 3 * a + k] = J[b][a][3 * r + k];
    /* exactly symmetric */
    for (int i = 0; i < 12; i++)
        for (int j = i + 1; j < 12; j++) {
            const double s = 0.5 * (H[i * 12 + j] + H[j * 12 + i]);
            H[i * 12 + j] = H[j * 12 + i] = s;
        }
}

/* Packed 78 of m ∇²θ (the exact hinge term, indefinite in general). */
static void hinge_term(const double *p0, const double *p1, const double *p2, const double *p3,
                       double m, double out[78]) {
    double H[144];
    hinge_hessian(p0, p1, p2, p3, H);
    for (int i = 0; i < 12; i++)
        for (int j = i; j < 12; j++) out[pk(i, j)] = m * H[i * 12 + j];
}

/* -------------------------------------------------------------- helpers */
static inline const double *node(const double *x, defo_index v) {
    return x + 3 * (size_t)v;
}

/* Dm⁻¹ of triangle t in its rest frame, times the in-plane plastic part's
 * inverse F_p⁻¹ (the 2×2 block of the plasticity layer's 3×3, row-major)
 * when there is one: F_e = Ds Dm⁻¹ F_p⁻¹ (ITF04 §6.3 and §8). */
static void rest_inverse(const defo_force_model *fm, defo_index t, double Di[4]) {
    const double *R = fm->shell->frame + 10 * (size_t)t + 6;
    if (!fm->fp_inv) {
        memcpy(Di, R, 4 * sizeof(double));
        return;
    }
    const double *P = fm->fp_inv + 9 * (size_t)t;
    Di[0] = R[0] * P[0] + R[1] * P[3];
    Di[1] = R[0] * P[1] + R[1] * P[4];
    Di[2] = R[2] * P[0] + R[3] * P[3];
    Di[3] = R[2] * P[1] + R[3] * P[4];
}

/* The reference normal of triangle t (ITF04 §8), the side a flat triangle
 * opens to: the sum of its edge neighbours' unit normals at the last pass;
 * its own normal without any. */
static void reference_normal(const struct fm_shell *S, const double *nrm, defo_index t,
                             double r[3]) {
    r[0] = r[1] = r[2] = 0;
    int any = 0;
    for (int i = 0; i < 3; i++) {
        const defo_index o = S->nb[3 * (size_t)t + (size_t)i];
        if (o < 0) continue;
        const double *m = nrm + 3 * (size_t)o;
        const double l = sqrt(dot3(m, m));
        if (!(l > 0) || !isfinite(l)) continue;
        for (int k = 0; k < 3; k++) r[k] += m[k] / l;
        any = 1;
    }
    if (!any || !(dot3(r, r) > 1e-12)) memcpy(r, nrm + 3 * (size_t)t, 3 * sizeof(double));
}

/* F = U diag(σ) Vᵀ of a 3×2 F (columns f0, f1), σ1 ≥ σ2 ≥ 0: U (u1, u2),
 * the frame normal n = u1 × u2, V (row-major 2×2, columns v1 v2).  nref
 * orients a flat F only (σ2 = 0, where f0 × f1 gives no normal). */
static void shell_svd(const double f0[3], const double f1[3], const double nref[3], double U[6],
                      double n[3], double V[4], double sg[2]) {
    double lo, hi, c, s;
    defo_sym2_eigen(dot3(f0, f0), dot3(f0, f1), dot3(f1, f1), &lo, &hi, &c, &s);
    V[0] = c, V[1] = -s, V[2] = s, V[3] = c;
    const double s1 = sqrt(hi > 0 ? hi : 0.0);
    double u1[3] = {c * f0[0] + s * f1[0], c * f0[1] + s * f1[1], c * f0[2] + s * f1[2]};
    double cr[3];
    cross3(f0, f1, cr);
    const double a = sqrt(dot3(cr, cr));
    if (s1 > 0) {
        for (int k = 0; k < 3; k++) u1[k] /= s1;
    } else {
        /* collapsed to a point: any direction in the reference plane */
        const double ax[3] = {fabs(nref[0]) < 0.9 ? 1.0 : 0.0, fabs(nref[0]) < 0.9 ? 0.0 : 1.0, 0};
        cross3(nref, ax, u1);
        const double l = sqrt(dot3(u1, u1));
        for (int k = 0; k < 3; k++) u1[k] = l > 0 ? u1[k] / l : (k == 0);
    }
    double nn[3], s2;
    if (a > 0 && s1 > 0) {
        for (int k = 0; k < 3; k++) nn[k] = cr[k] / a;
        s2 = a / s1;
    } else {
        /* flat: the reference normal made perpendicular to u1 */
        const double d = dot3(nref, u1);
        for (int k = 0; k < 3; k++) nn[k] = nref[k] - d * u1[k];
        double l = sqrt(dot3(nn, nn));
        if (!(l > 0)) {
            const double ax[3] = {fabs(u1[0]) < 0.9 ? 1.0 : 0.0, fabs(u1[0]) < 0.9 ? 0.0 : 1.0, 0};
            cross3(u1, ax, nn);
            l = sqrt(dot3(nn, nn));
        }
        for (int k = 0; k < 3; k++) nn[k] /= l;
        s2 = 0;
    }
    double u2[3];
    cross3(nn, u1, u2);
    memcpy(U, u1, sizeof u1);
    memcpy(U + 3, u2, sizeof u2);
    memcpy(n, nn, sizeof nn);
    sg[0] = s1;
    sg[1] = s2;
}

/* The triangle's F = Ds Dm⁻¹ (3×2) at x by its columns f0, f1, from its
 * rest inverse Di (row-major 2×2). */
static void tri_F(const defo_force_model *fm, defo_index t, const double *x, const double Di[4],
                  double f0[3], double f1[3]) {
    const defo_index *v = fm->mesh->elems + 3 * (size_t)t;
    double d1[3], d2[3];
    sub3(node(x, v[1]), node(x, v[0]), d1);
    sub3(node(x, v[2]), node(x, v[0]), d2);
    for (int r = 0; r < 3; r++) {
        f0[r] = d1[r] * Di[0] + d2[r] * Di[2];
        f1[r] = d1[r] * Di[1] + d2[r] * Di[3];
    }
}

/* ----------------------------------------------------- the in-plane part */
/* Triangle t at x: state (U, n, G, σ, P̂, dP/dF when tangent), energy, the
 * forces on its corners into f (9).  Returns the FM_* flags. */
static unsigned membrane(defo_force_model *fm, defo_index t, const double *x, int tangent,
                         int store, double *psi_out, double f[9]) {
    struct fm_shell *S = fm->shell;
    double Di[4];
    rest_inverse(fm, t, Di);
    double f0[3], f1[3];
    tri_F(fm, t, x, Di, f0, f1);
    unsigned flag = 0;
    if (!isfinite(f0[0] + f0[1] + f0[2] + f1[0] + f1[1] + f1[2])) {
        if (psi_out) *psi_out = 0;
        if (f) memset(f, 0, 9 * sizeof(double));
        return FM_BAD;
    }
    double nref[3];
    reference_normal(S, S->nrm, t, nref);
    double U[6], n[3], V[4], sg[2];
    shell_svd(f0, f1, nref, U, n, V, sg);
    if (!(sg[1] > 1e-12 * sg[0])) flag |= FM_INVERTED; /* flat: no orientation of its own */
    double ph[2], s3;
    defo_dpdf2 dp;
    const shell_part *pp = tri_part(fm, t);
    const defo_material *mat = fm_part_of(fm, t)->mat;
    const double psi = defo_material_eval_plane(
        mat, sg[0], sg[1], &s3, ph, tangent || (store && fm->track_stable_time) ? &dp : NULL);
    const double w = pp->h * S->area[t];
    if (psi_out) *psi_out = w * psi;
    if (!isfinite(psi) || !isfinite(ph[0]) || !isfinite(ph[1])) flag |= FM_BAD;
    /* G = Dm⁻¹ V; ĝ_a = Vᵀ ∇N_a: rows of G for a = 1, 2 */
    const double G[4] = {Di[0] * V[0] + Di[1] * V[2], Di[0] * V[1] + Di[1] * V[3],
                         Di[2] * V[0] + Di[3] * V[2], Di[2] * V[1] + Di[3] * V[3]};
    if (f) {
        /* f_a = −w U diag(P̂) ĝ_a */
        for (int a = 1; a < 3; a++)
            for (int r = 0; r < 3; r++)
                f[3 * a + r] =
                    -w * (U[r] * ph[0] * G[2 * (a - 1)] + U[3 + r] * ph[1] * G[2 * (a - 1) + 1]);
        for (int r = 0; r < 3; r++) f[r] = -(f[3 + r] + f[6 + r]);
    }
    if (store) {
        memcpy(S->U + 6 * (size_t)t, U, sizeof U);
        memcpy(S->n + 3 * (size_t)t, n, sizeof n);
        memcpy(S->G + 4 * (size_t)t, G, sizeof G);
        S->sig[2 * (size_t)t] = sg[0];
        S->sig[2 * (size_t)t + 1] = sg[1];
        S->phat[2 * (size_t)t] = ph[0];
        S->phat[2 * (size_t)t + 1] = ph[1];
        S->s3[t] = s3;
        if (tangent) S->dp[t] = dp;
        if (fm->track_stable_time) {
            const double r = fmax(defo_dpdf2_bound(&dp), pp->rest_bound) / pp->membrane_scale;
            fm->stable_len[t] = fm->elen[t] / sqrt(r);
        }
    }
    return flag;
}

/* ĝ_a (2) of corner a from G (rows 0, 1 for corners 1, 2). */
static inline void ghat(const double *G, int a, double g[2]) {
    if (a == 0) {
        g[0] = -(G[0] + G[2]);
        g[1] = -(G[1] + G[3]);
    } else {
        g[0] = G[2 * (a - 1)];
        g[1] = G[2 * (a - 1) + 1];
    }
}

/* y (9) = w K_m d for the in-plane tangent (or damping) blocks T of triangle
 * t at the last evaluation, d on its corners (9).  The frame's columns
 * c = (u1, u2, n), δF̂_ij = Σ_b (c_i · d_b) ĝ_b[j]. */
static void membrane_apply(const defo_force_model *fm, const sh_lin *L, defo_index t,
                           const defo_dpdf2 *T, const double *d, double *y) {
    const struct fm_shell *S = fm->shell;
    const double *U = L->U + 6 * (size_t)t, *n = L->n + 3 * (size_t)t, *G = L->G + 4 * (size_t)t;
    const double *c[3] = {U, U + 3, n};
    double g[3][2];
    for (int a = 0; a < 3; a++) ghat(G, a, g[a]);
    double F[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    for (int b = 0; b < 3; b++)
        for (int i = 0; i < 3; i++) {
            const double cd = dot3(c[i], d + 3 * b);
            F[i][0] += cd * g[b][0];
            F[i][1] += cd * g[b][1];
        }
    double P[3][2];
    P[0][0] = T->A[0][0] * F[0][0] + T->A[0][1] * F[1][1];
    P[1][1] = T->A[1][0] * F[0][0] + T->A[1][1] * F[1][1];
    P[0][1] = T->B[0][0] * F[0][1] + T->B[0][1] * F[1][0];
    P[1][0] = T->B[1][0] * F[0][1] + T->B[1][1] * F[1][0];
    P[2][0] = T->N[0] * F[2][0];
    P[2][1] = T->N[1] * F[2][1];
    const double w = tri_part(fm, t)->h * S->area[t];
    for (int a = 0; a < 3; a++)
        for (int r = 0; r < 3; r++) {
            double s = 0;
            for (int i = 0; i < 3; i++) s += c[i][r] * (P[i][0] * g[a][0] + P[i][1] * g[a][1]);
            y[3 * a + r] = w * s;
        }
}

/* Block (a, b) of w K_m (3×3 row-major, added to s). */
static void membrane_block(const defo_force_model *fm, const sh_lin *L, defo_index t,
                           const defo_dpdf2 *T, int a, int b, double s[9]) {
    const struct fm_shell *S = fm->shell;
    const double *U = L->U + 6 * (size_t)t, *n = L->n + 3 * (size_t)t, *G = L->G + 4 * (size_t)t;
    const double *c[3] = {U, U + 3, n};
    double ga[2], gb[2];
    ghat(G, a, ga);
    ghat(G, b, gb);
    const double w = tri_part(fm, t)->h * S->area[t];
    /* coefficient of c_i c_kᵀ: Σ_jl T_{ij,kl} ĝa[j] ĝb[l] */
    double C[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    C[0][0] = T->A[0][0] * ga[0] * gb[0] + T->B[0][0] * ga[1] * gb[1];
    C[0][1] = T->A[0][1] * ga[0] * gb[1] + T->B[0][1] * ga[1] * gb[0];
    C[1][0] = T->A[1][0] * ga[1] * gb[0] + T->B[1][0] * ga[0] * gb[1];
    C[1][1] = T->A[1][1] * ga[1] * gb[1] + T->B[1][1] * ga[0] * gb[0];
    C[2][2] = T->N[0] * ga[0] * gb[0] + T->N[1] * ga[1] * gb[1];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++) {
            if (C[i][k] == 0.0) continue;
            const double cw = w * C[i][k];
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 3; q++) s[3 * r + q] += cw * c[i][r] * c[k][q];
        }
}

/* ----------------------------------------------------------- the bending */
/* The hinge gradient of local edge i of triangle t at stencil position p
 * (3 values), or NULL when the hinge is absent, inactive, or misses p. */
static const double *hinge_grad_at(const struct fm_shell *S, const sh_lin *L, defo_index t, int i,
                                   int p) {
    const defo_index h = S->tri_hinge[3 * (size_t)t + (size_t)i];
    if (h < 0 || !L->live[h]) return NULL;
    const int8_t *m = S->hmap + 12 * (size_t)t + 4 * (size_t)i;
    for (int k = 0; k < 4; k++)
        if (m[k] == p) return L->gth + 12 * (size_t)h + 3 * (size_t)k;
    return NULL;
}

/* q_i = θ − θ̄ of triangle t's hinges (0 where absent or inactive). */
static void angle_changes(const struct fm_shell *S, defo_index t, const double *theta,
                          const unsigned char *live, double q[3]) {
    for (int i = 0; i < 3; i++) {
        const defo_index h = S->tri_hinge[3 * (size_t)t + (size_t)i];
        q[i] = 0;
        if (h < 0 || !live[h]) continue;
        double rest = S->theta_rest[h];
        if (S->plastic_bend) rest += S->plastic_bend[h] * S->angle_per_strain[h];
        q[i] = theta[h] - rest;
    }
}

/* Bending energy and forces of triangle t (into the 6 stencil slots f, 18
 * values, added) at the last hinge pass; u = K q is kept. */
static double bending(defo_force_model *fm, defo_index t, double *f) {
    struct fm_shell *S = fm->shell;
    double q[3];
    angle_changes(S, t, S->theta, S->live, q);
    const double *K = S->K + 9 * (size_t)t;
    double u[3];
    for (int i = 0; i < 3; i++) u[i] = K[3 * i] * q[0] + K[3 * i + 1] * q[1] + K[3 * i + 2] * q[2];
    memcpy(S->u + 3 * (size_t)t, u, sizeof u);
    for (int i = 0; i < 3; i++) {
        const defo_index h = S->tri_hinge[3 * (size_t)t + (size_t)i];
        if (h < 0 || !S->live[h] || u[i] == 0.0) continue;
        const int8_t *m = S->hmap + 12 * (size_t)t + 4 * (size_t)i;
        const double *g = S->gth + 12 * (size_t)h;
        for (int k = 0; k < 4; k++)
            for (int r = 0; r < 3; r++) f[3 * m[k] + r] -= u[i] * g[3 * k + r];
    }
    return 0.5 * (q[0] * u[0] + q[1] * u[1] + q[2] * u[2]);
}

/* y (18, added) += scale · (Σ J_iᵀ K_ij J_j) d on the stencil of t (the
 * Gauss–Newton part), d given per stencil position (18). */
static void bending_gn_apply(const struct fm_shell *S, const sh_lin *L, defo_index t,
                             const double *d, double scale, double *y) {
    double z[3] = {0, 0, 0};
    const double *K = S->K + 9 * (size_t)t;
    for (int i = 0; i < 3; i++) {
        const defo_index h = S->tri_hinge[3 * (size_t)t + (size_t)i];
        if (h < 0 || !L->live[h]) continue;
        const int8_t *m = S->hmap + 12 * (size_t)t + 4 * (size_t)i;
        const double *g = L->gth + 12 * (size_t)h;
        for (int k = 0; k < 4; k++) z[i] += dot3(g + 3 * k, d + 3 * m[k]);
    }
    for (int i = 0; i < 3; i++) {
        const defo_index h = S->tri_hinge[3 * (size_t)t + (size_t)i];
        if (h < 0 || !L->live[h]) continue;
        const double c = scale * (K[3 * i] * z[0] + K[3 * i + 1] * z[1] + K[3 * i + 2] * z[2]);
        const int8_t *m = S->hmap + 12 * (size_t)t + 4 * (size_t)i;
        const double *g = L->gth + 12 * (size_t)h;
        for (int k = 0; k < 4; k++)
            for (int r = 0; r < 3; r++) y[3 * m[k] + r] += c * g[3 * k + r];
    }
}

/* 1 when t owns hinge i's Hessian term (it is the hinge's first triangle). */
static inline int owns(const struct fm_shell *S, defo_index t, int i) {
    const defo_index h = S->tri_hinge[3 * (size_t)t + (size_t)i];
    return h >= 0 && S->hinge_tri[2 * (size_t)h] == t && S->live[h];
}

/* -------------------------------------------------------------- passes */
/* The triangles' (unnormalised) normals at x into nrm (3 per triangle);
 * a worksharing loop: inside a parallel region, or serial. */
static void tri_normals(const defo_force_model *fm, const double *x, double *nrm) {
    const defo_index nt = fm->shell->nt;
    const defo_index *el = fm->mesh->elems;
    DEFO_FOR
    for (defo_index t = 0; t < nt; t++) {
        const defo_index *v = el + 3 * (size_t)t;
        double a[3], b[3];
        sub3(node(x, v[1]), node(x, v[0]), a);
        sub3(node(x, v[2]), node(x, v[0]), b);
        cross3(a, b, nrm + 3 * (size_t)t);
    }
}

/* The triangles' normals and the hinges' angles and gradients at x. */
static void hinge_pass(defo_force_model *fm, const double *x) {
    struct fm_shell *S = fm->shell;
    const defo_index nh = S->nh;
    tri_normals(fm, x, S->nrm);
    DEFO_FOR
    for (defo_index h = 0; h < nh; h++) {
        const defo_index *p = S->hinge + 4 * (size_t)h;
        S->live[h] =
            (unsigned char)hinge_angle(node(x, p[0]), node(x, p[1]), node(x, p[2]), node(x, p[3]),
                                       &S->theta[h], S->gth + 12 * (size_t)h);
        if (!S->live[h]) {
            S->theta[h] = 0;
            memset(S->gth + 12 * (size_t)h, 0, 12 * sizeof(double));
        } else {
            S->theta[h] = unwrap_angle(S->theta[h], S->theta_ref[h]);
        }
    }
}

defo_status defo_fm_shell_evaluate(defo_force_model *fm, const double *x, unsigned flags,
                                   double *force, double *energy) {
    struct fm_shell *S = fm->shell;
    const defo_index nt = S->nt, nh = S->nh;
    const int tangent = (flags & DEFO_EVAL_TANGENT) != 0;
    defo_index inverted = 0, bad = 0;
    DEFO_PARALLEL_REGION_IF(SH_WORTH(nt, SH_NS_FORCE + (tangent ? SH_NS_HINGE : 0))) {
        hinge_pass(fm, x);
        DEFO_FOR_SUM(inverted, bad)
        for (defo_index t = 0; t < nt; t++) {
            double *sl = fm->slot + 18 * (size_t)t, psi_m = 0;
            memset(sl, 0, 18 * sizeof(double));
            const unsigned fl = membrane(fm, t, x, tangent, 1, &psi_m, sl);
            const double psi_b = bending(fm, t, sl);
            fm->elem_energy[t] = psi_m + psi_b;
            fm->flag[t] = (unsigned char)fl;
            for (int k = 0; k < 18; k++)
                if (!isfinite(sl[k])) fm->flag[t] |= FM_BAD;
            inverted += (fl & FM_INVERTED) != 0;
            bad += (fm->flag[t] & FM_BAD) != 0;
        }
        if (tangent && !bad) {
            DEFO_FOR
            for (defo_index h = 0; h < nh; h++) {
                if (!S->live[h]) continue;
                const defo_index *p = S->hinge + 4 * (size_t)h;
                const defo_index t0 = S->hinge_tri[2 * (size_t)h],
                                 t1 = S->hinge_tri[2 * (size_t)h + 1];
                const double m = S->u[3 * (size_t)t0 + (size_t)S->hinge_local[2 * (size_t)h]] +
                                 S->u[3 * (size_t)t1 + (size_t)S->hinge_local[2 * (size_t)h + 1]];
                hinge_term(node(x, p[0]), node(x, p[1]), node(x, p[2]), node(x, p[3]), m,
                           S->Hh + 78 * (size_t)h);
            }
        }
        if (force && !bad) defo_gather3_team(&fm->inc, fm->slot, force);
    }
    S->tangent_ok = tangent;
    fm->inverted = inverted;
    if (bad) return defo_fm_report_bad(fm, x);
    if (fm->track_stable_time) {
        double t = INFINITY;
        for (defo_index e = 0; e < nt; e++) t = fmin(t, fm->stable_len[e]);
        const double tm = t / fm->wave_speed;
        fm->stable_time = 4.0 / sqrt(16.0 / (tm * tm) + S->bend_omega2);
    }
    if (energy) *energy = defo_fm_sum_energy(fm);
    return DEFO_OK;
}

defo_status defo_fm_shell_energy_of(const defo_force_model *fm, const double *x,
                                    const defo_index *elems, defo_index count, double *energy) {
    const struct fm_shell *S = fm->shell;
    double total = 0;
    for (defo_index k = 0; k < count; k++) {
        const defo_index t = elems[k];
        /* in plane: the same arithmetic without touching the model's state
         * (the reference normal from the triangles' normals at x) */
        double Di[4];
        rest_inverse(fm, t, Di);
        double f0[3], f1[3];
        tri_F(fm, t, x, Di, f0, f1);
        double nref[3] = {0, 0, 0};
        int any = 0;
        for (int i = 0; i < 3; i++) {
            const defo_index o = S->nb[3 * (size_t)t + (size_t)i];
            if (o < 0) continue;
            const defo_index *w = fm->mesh->elems + 3 * (size_t)o;
            double a[3], b[3], m[3];
            sub3(node(x, w[1]), node(x, w[0]), a);
            sub3(node(x, w[2]), node(x, w[0]), b);
            cross3(a, b, m);
            const double l = sqrt(dot3(m, m));
            if (!(l > 0)) continue;
            for (int c = 0; c < 3; c++) nref[c] += m[c] / l;
            any = 1;
        }
        if (!any || !(dot3(nref, nref) > 1e-12)) { /* its own normal */
            const defo_index *v = fm->mesh->elems + 3 * (size_t)t;
            double d1[3], d2[3];
            sub3(node(x, v[1]), node(x, v[0]), d1);
            sub3(node(x, v[2]), node(x, v[0]), d2);
            cross3(d1, d2, nref);
        }
        double U[6], n[3], V[4], sg[2];
        shell_svd(f0, f1, nref, U, n, V, sg);
        const double psi =
            defo_material_eval_plane(fm_part_of(fm, t)->mat, sg[0], sg[1], NULL, NULL, NULL);
        total += tri_part(fm, t)->h * S->area[t] * psi;
        /* bending of its hinges at x */
        double theta[3];
        unsigned char live[3];
        double q[3] = {0, 0, 0};
        for (int i = 0; i < 3; i++) {
            const defo_index h = S->tri_hinge[3 * (size_t)t + (size_t)i];
            if (h < 0) continue;
            const defo_index *p = S->hinge + 4 * (size_t)h;
            double g[12];
            live[i] = (unsigned char)hinge_angle(node(x, p[0]), node(x, p[1]), node(x, p[2]),
                                                 node(x, p[3]), &theta[i], g);
            if (!live[i]) continue;
            theta[i] = unwrap_angle(theta[i], S->theta_ref[h]);
            double rest = S->theta_rest[h];
            if (S->plastic_bend) rest += S->plastic_bend[h] * S->angle_per_strain[h];
            q[i] = theta[i] - rest;
        }
        const double *K = S->K + 9 * (size_t)t;
        for (int i = 0; i < 3; i++)
            total += 0.5 * q[i] * (K[3 * i] * q[0] + K[3 * i + 1] * q[1] + K[3 * i + 2] * q[2]);
    }
    *energy = total;
    if (!isfinite(total))
        return defo_error(DEFO_ERR_NUMERICAL, "shell energy of an element set: not finite");
    return DEFO_OK;
}

/* d and y per stencil position of triangle t. */
static void gather_stencil(const struct fm_shell *S, defo_index t, const double *d, double *ds) {
    const defo_index *st = S->stencil + 6 * (size_t)t;
    for (int p = 0; p < 6; p++) memcpy(ds + 3 * p, d + 3 * (size_t)st[p], 3 * sizeof(double));
}

/* mode 0: the tangent K d; mode 1: the damping D d. */
static void shell_apply(defo_force_model *fm, const double *d, double *y, int mode) {
    struct fm_shell *S = fm->shell;
    const defo_index nt = S->nt;
    DEFO_PARALLEL_REGION_IF(SH_WORTH(nt, SH_NS_APPLY)) {
        DEFO_FOR
        for (defo_index t = 0; t < nt; t++) {
            double ds[18], *sl = fm->slot + 18 * (size_t)t;
            gather_stencil(S, t, d, ds);
            memset(sl, 0, 18 * sizeof(double));
            const defo_dpdf2 *T = mode ? &tri_part(fm, t)->damp : &S->dp[t];
            const sh_lin *L = mode ? &S->dl : &S->ev;
            membrane_apply(fm, L, t, T, ds, sl);
            bending_gn_apply(S, L, t, ds, mode ? tri_part(fm, t)->tau : 1.0, sl);
            if (mode) continue;
            for (int i = 0; i < 3; i++) {
                if (!owns(S, t, i)) continue;
                const defo_index h = S->tri_hinge[3 * (size_t)t + (size_t)i];
                const double *Hp = S->Hh + 78 * (size_t)h;
                const int8_t *m = S->hmap + 12 * (size_t)t + 4 * (size_t)i;
                double dh[12];
                for (int k = 0; k < 4; k++) memcpy(dh + 3 * k, ds + 3 * m[k], 3 * sizeof(double));
                for (int r = 0; r < 12; r++) {
                    double s = 0;
                    for (int c = 0; c < 12; c++) s += Hp[pk(r, c)] * dh[c];
                    sl[3 * m[r / 3] + r % 3] += s;
                }
            }
        }
        defo_gather3_team(&fm->inc, fm->slot, y);
    }
}

void defo_fm_shell_tangent_apply(defo_force_model *fm, const double *d, double *y) {
    shell_apply(fm, d, y, 0);
}

void defo_fm_shell_damping_apply(defo_force_model *fm, const double *v, double *y) {
    shell_apply(fm, v, y, 1);
}

/* Block (p, q) of triangle t's element matrix (stencil positions), added to
 * s: mode 0 the tangent, 1 the damping. */
static void shell_block(const defo_force_model *fm, defo_index t, int p, int q, int mode,
                        double s[9]) {
    const struct fm_shell *S = fm->shell;
    const sh_lin *L = mode ? &S->dl : &S->ev;
    if (p < 3 && q < 3)
        membrane_block(fm, L, t, mode ? &tri_part(fm, t)->damp : &S->dp[t], p, q, s);
    const double *K = S->K + 9 * (size_t)t;
    const double scale = mode ? tri_part(fm, t)->tau : 1.0;
    for (int i = 0; i < 3; i++) {
        const double *gi = hinge_grad_at(S, L, t, i, p);
        if (!gi) continue;
        for (int j = 0; j < 3; j++) {
            const double *gj = hinge_grad_at(S, L, t, j, q);
            if (!gj) continue;
            const double k = scale * K[3 * i + j];
            for (int r = 0; r < 3; r++)
                for (int c = 0; c < 3; c++) s[3 * r + c] += k * gi[r] * gj[c];
        }
    }
    if (mode) return;
    for (int i = 0; i < 3; i++) {
        if (!owns(S, t, i)) continue;
        const defo_index h = S->tri_hinge[3 * (size_t)t + (size_t)i];
        const int8_t *m = S->hmap + 12 * (size_t)t + 4 * (size_t)i;
        int kp = -1, kq = -1;
        for (int k = 0; k < 4; k++) {
            if (m[k] == p) kp = k;
            if (m[k] == q) kq = k;
        }
        if (kp < 0 || kq < 0) continue;
        const double *Hp = S->Hh + 78 * (size_t)h;
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 3; c++) s[3 * r + c] += Hp[pk(3 * kp + r, 3 * kq + c)];
    }
}

static void shell_diagonal(defo_force_model *fm, double *blocks, int mode) {
    struct fm_shell *S = fm->shell;
    const defo_index nt = S->nt;
    const size_t nb = 9 * (size_t)fm->n * sizeof(double);
    if (mode && S->ddiag_ok) { /* the damping's, kept for the step */
        memcpy(blocks, S->ddiag, nb);
        return;
    }
    DEFO_PARALLEL_REGION_IF(SH_WORTH(nt, SH_NS_DIAG)) {
        DEFO_FOR
        for (defo_index t = 0; t < nt; t++) {
            double *sl = fm->slot + 54 * (size_t)t;
            memset(sl, 0, 54 * sizeof(double));
            for (int p = 0; p < 6; p++) shell_block(fm, t, p, p, mode, sl + 9 * p);
        }
        defo_fm_gather9_team(fm, fm->slot, blocks);
    }
    if (mode) {
        memcpy(S->ddiag, blocks, nb);
        S->ddiag_ok = 1;
    }
}

void defo_fm_shell_tangent_diagonal(defo_force_model *fm, double *blocks) {
    shell_diagonal(fm, blocks, 0);
}

void defo_fm_shell_damping_diagonal(defo_force_model *fm, double *blocks) {
    shell_diagonal(fm, blocks, 1);
}

static void assemble_row(const defo_force_model *fm, const defo_bcsr_pattern *A, double *val,
                         double k, double c, defo_index I) {
    for (int64_t b = A->diag[I]; b < A->row_offset[I + 1]; b++) {
        double s[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0}, t[9] = {0, 0, 0, 0, 0, 0, 0, 0, 0};
        for (int64_t q = A->src_offset[b]; q < A->src_offset[b + 1]; q++) {
            int64_t e;
            int i, j;
            fm_slot(6, A->src[q], &e, &i, &j);
            if (k != 0.0) shell_block(fm, (defo_index)e, i, j, 0, s);
            if (c != 0.0) shell_block(fm, (defo_index)e, i, j, 1, t);
        }
        for (int r = 0; r < 9; r++) s[r] = k * s[r] + c * t[r];
        double *v = val + 9 * b;
        if (b == A->diag[I]) {
            for (int r = 0; r < 3; r++)
                for (int q = 0; q < 3; q++) v[3 * r + q] = 0.5 * (s[3 * r + q] + s[3 * q + r]);
            continue;
        }
        double *tr = val + 9 * A->transpose[b];
        for (int r = 0; r < 3; r++)
            for (int q = 0; q < 3; q++) v[3 * r + q] = tr[3 * q + r] = s[3 * r + q];
    }
}

void defo_fm_shell_assemble(defo_force_model *fm, double k, double c) {
    const defo_bcsr_pattern *A = defo_bcsr_get_pattern(fm->A);
    double *val = defo_bcsr_values(fm->A);
    const defo_index nr = A->num_rows;
    const double cd = fm->damping ? c : 0.0;
    DEFO_PARALLEL_FOR_IF(SH_WORTH(fm->shell->nt, SH_NS_ASSEMBLE))
    for (defo_index I = 0; I < nr; I++) assemble_row(fm, A, val, k, cd, I);
}

/* ------------------------------------------------------------- queries */
/* Flat triangles at x: σ2 ≤ 1e-12 σ1 (or not finite), the membrane's
 * FM_INVERTED test; a shell has no other inversion (ITF04 §8). */
defo_index defo_fm_shell_count_inverted_at(const defo_force_model *fm, const double *x) {
    const struct fm_shell *S = fm->shell;
    defo_index count = 0;
    for (defo_index t = 0; t < S->nt; t++) {
        double Di[4], f0[3], f1[3], m[3];
        rest_inverse(fm, t, Di);
        tri_F(fm, t, x, Di, f0, f1);
        double lo, hi, c, sn;
        defo_sym2_eigen(dot3(f0, f0), dot3(f0, f1), dot3(f1, f1), &lo, &hi, &c, &sn);
        cross3(f0, f1, m);
        /* σ1σ2 = |f0 × f1|, σ1² = hi: σ2 > 1e-12 σ1 ⇔ |f0 × f1| > 1e-12 σ1² */
        if (!(sqrt(dot3(m, m)) > 1e-12 * hi)) count++;
    }
    return count;
}

/* Principal Cauchy stresses of triangle t at the last evaluation: the
 * plane-stress state τ_i = P̂_i σ_i / J (J = σ1σ2σ3 held at ≥ 0.01), world
 * tensor U diag(τ) Uᵀ; returns the area stretch σ1σ2. */
double defo_fm_shell_stress(const defo_force_model *fm, defo_index t, double sigma[9],
                            double pr[3]) {
    const struct fm_shell *S = fm->shell;
    const double *sg = S->sig + 2 * (size_t)t, *ph = S->phat + 2 * (size_t)t;
    const double *U = S->U + 6 * (size_t)t;
    const double J = sg[0] * sg[1] * S->s3[t], d = J > 0.01 ? J : 0.01;
    const double tau[2] = {ph[0] * sg[0] / d, ph[1] * sg[1] / d};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++)
            sigma[3 * r + k] = U[r] * tau[0] * U[k] + U[3 + r] * tau[1] * U[3 + k];
    pr[0] = fmax(tau[0], fmax(tau[1], 0.0));
    pr[2] = fmin(tau[0], fmin(tau[1], 0.0));
    pr[1] = tau[0] + tau[1] - pr[0] - pr[2];
    return sg[0] * sg[1];
}

const defo_index *defo_fm_shell_stencil(const defo_force_model *fm) {
    return fm->shell->stencil;
}

defo_index defo_force_model_num_hinges(const defo_force_model *fm) {
    return fm && fm->shell ? fm->shell->nh : 0;
}

defo_status defo_force_model_bending_strain(defo_force_model *fm, const double *x, double *strain) {
    if (!fm || !fm->shell || !x || !strain)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "bending strain: a shell force model, positions and an output are "
                          "needed");
    struct fm_shell *S = fm->shell;
    hinge_pass(fm, x);
    for (defo_index h = 0; h < S->nh; h++)
        strain[h] = S->live[h] ? (S->theta[h] - S->theta_rest[h]) / S->angle_per_strain[h] : NAN;
    return DEFO_OK;
}

void defo_force_model_set_plastic_bending(defo_force_model *fm, const double *strain) {
    if (fm && fm->shell) fm->shell->plastic_bend = strain;
}

defo_status defo_force_model_hinge_angles(defo_force_model *fm, const double *x, double *theta,
                                          double *rest) {
    if (!fm || !fm->shell)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "hinge angles: not a shell force model");
    struct fm_shell *S = fm->shell;
    if (theta) {
        if (!x) x = fm->mesh->x;
        hinge_pass(fm, x);
        for (defo_index h = 0; h < S->nh; h++) theta[h] = S->live[h] ? S->theta[h] : NAN;
    }
    if (rest)
        for (defo_index h = 0; h < S->nh; h++)
            rest[h] = S->theta_rest[h] +
                      (S->plastic_bend ? S->plastic_bend[h] * S->angle_per_strain[h] : 0.0);
    return DEFO_OK;
}

const defo_index *defo_force_model_hinges(const defo_force_model *fm) {
    return fm && fm->shell ? fm->shell->hinge : NULL;
}

int defo_force_model_is_shell(const defo_force_model *fm) {
    return fm && fm->shell;
}

const defo_index *defo_force_model_hinge_triangles(const defo_force_model *fm) {
    return fm && fm->shell ? fm->shell->hinge_tri : NULL;
}

/* The step's start x: the hinges' branches (θ_ref) and the damping's
 * linearisation (S->dl: the frames and hinge gradients at x). */
static void step_start(defo_force_model *fm, const double *x) {
    struct fm_shell *S = fm->shell;
    const defo_index nt = S->nt, nh = S->nh;
    DEFO_PARALLEL_REGION_IF(SH_WORTH(nt, SH_NS_FORCE)) {
        tri_normals(fm, x, S->nrm_dl);
        DEFO_FOR
        for (defo_index t = 0; t < nt; t++) {
            double Di[4], f0[3], f1[3], nref[3], U[6], n[3], V[4], sg[2];
            rest_inverse(fm, t, Di);
            tri_F(fm, t, x, Di, f0, f1);
            reference_normal(S, S->nrm_dl, t, nref);
            shell_svd(f0, f1, nref, U, n, V, sg);
            const double G[4] = {Di[0] * V[0] + Di[1] * V[2], Di[0] * V[1] + Di[1] * V[3],
                                 Di[2] * V[0] + Di[3] * V[2], Di[2] * V[1] + Di[3] * V[3]};
            memcpy(S->dl.U + 6 * (size_t)t, U, sizeof U);
            memcpy(S->dl.n + 3 * (size_t)t, n, sizeof n);
            memcpy(S->dl.G + 4 * (size_t)t, G, sizeof G);
        }
        DEFO_FOR
        for (defo_index h = 0; h < nh; h++) {
            const defo_index *p = S->hinge + 4 * (size_t)h;
            double *g = S->dl.gth + 12 * (size_t)h, th;
            S->dl.live[h] = (unsigned char)hinge_angle(node(x, p[0]), node(x, p[1]), node(x, p[2]),
                                                       node(x, p[3]), &th, g);
            if (S->dl.live[h])
                S->theta_ref[h] = unwrap_angle(th, S->theta_ref[h]);
            else
                memset(g, 0, 12 * sizeof(double));
        }
    }
    S->ddiag_ok = 0;
}

void defo_force_model_track_hinges(defo_force_model *fm, const double *x) {
    if (fm && fm->shell && x) step_start(fm, x);
}

int defo_force_model_damping_of_step(const defo_force_model *fm) {
    return fm && fm->shell && defo_force_model_has_damping(fm);
}

/* History record of a shell: the hinges' branch angles θ_ref (f64 each). */
size_t defo_fm_shell_history_bytes(const defo_force_model *fm) {
    return (size_t)fm->shell->nh * sizeof(double);
}

void defo_fm_shell_save_history(const defo_force_model *fm, void *out) {
    memcpy(out, fm->shell->theta_ref, (size_t)fm->shell->nh * sizeof(double));
}

defo_status defo_fm_shell_restore_history(defo_force_model *fm, const void *in) {
    struct fm_shell *S = fm->shell;
    for (defo_index h = 0; h < S->nh; h++) {
        double v;
        memcpy(&v, (const unsigned char *)in + 8 * (size_t)h, 8);
        if (!isfinite(v))
            return defo_error(DEFO_ERR_PARSE, "force model: hinge %ld: non-finite angle", (long)h);
    }
    memcpy(S->theta_ref, in, (size_t)S->nh * sizeof(double));
    return DEFO_OK;
}

/* Stable lengths after the in-plane plastic parts, the density scale or
 * the material parts changed: a triangle's rest length times √(density
 * scale) over the largest singular value of its F_p⁻¹ (2×2 block) and part
 * 0's membrane wave speed over its own part's, as the tets' (force_model.c),
 * and the wave time with the bending bound. */
void defo_fm_shell_plastic_changed(defo_force_model *fm) {
    struct fm_shell *S = fm->shell;
    double lmin = INFINITY;
    for (defo_index e = 0; e < S->nt; e++) {
        const shell_part *pp = tri_part(fm, e);
        const double r0 = sqrt(pp->rest_bound / pp->membrane_scale);
        double worst = 1.0;
        if (fm->fp_inv) {
            const double *P = fm->fp_inv + 9 * (size_t)e;
            double lo, hi, c, sn;
            defo_sym2_eigen(P[0] * P[0] + P[3] * P[3], P[0] * P[1] + P[3] * P[4],
                            P[1] * P[1] + P[4] * P[4], &lo, &hi, &c, &sn);
            worst = fmax(1.0, sqrt(fmax(hi, 0.0) * (1 + 1e-9)));
        }
        const double ds = fm->density_scale ? sqrt(fm->density_scale[e]) : 1.0;
        fm->elen_own[e] =
            fm->elen_rest[e] * ds / worst * (fm->wave_speed / fm_part_of(fm, e)->wave_speed);
        if (!fm->track_stable_time) fm->stable_len[e] = fm->elen_own[e] / r0;
        lmin = fmin(lmin, fm->elen_own[e] / r0);
    }
    const double tm = S->nt > 0 ? lmin / fm->wave_speed : INFINITY;
    fm->wave_time = S->nt > 0 ? 4.0 / sqrt(16.0 / (tm * tm) + S->bend_omega2) : INFINITY;
    if (!fm->track_stable_time) fm->stable_time = fm->wave_time;
}

double defo_force_model_plane_lambda(const defo_force_model *fm, defo_index e) {
    const fm_part *pt = fm_part_of(fm, e);
    return 2 * pt->mu * pt->lambda / (pt->lambda + 2 * pt->mu);
}

/* The deformation of triangle t (Ds Dm⁻¹, times F_p⁻¹ when elastic) as the
 * 3×3 diag(F₂, 1), F₂ its in-plane part in a frame of the deformed triangle
 * (F₂ᵀF₂ = FᵀF: the rest-frame stretch the plasticity layer needs; the
 * rotation into space is dropped). */
void defo_fm_shell_deformation(const defo_force_model *fm, const double *x, int elastic,
                               double *F) {
    const struct fm_shell *S = fm->shell;
    for (defo_index t = 0; t < S->nt; t++) {
        double Di[4];
        if (elastic)
            rest_inverse(fm, t, Di);
        else
            memcpy(Di, S->frame + 10 * (size_t)t + 6, 4 * sizeof(double));
        double f0[3], f1[3];
        tri_F(fm, t, x, Di, f0, f1);
        /* e1 = f0/|f0|, e2 ⟂ e1 in the plane of f0, f1: F₂ upper triangular */
        const double a = sqrt(dot3(f0, f0)), p = a > 0 ? dot3(f0, f1) / a : 0.0;
        double c[3];
        cross3(f0, f1, c);
        const double q = a > 0 ? sqrt(dot3(c, c)) / a : sqrt(dot3(f1, f1));
        double *o = F + 9 * (size_t)t;
        o[0] = a, o[1] = p, o[2] = 0;
        o[3] = 0, o[4] = q, o[5] = 0;
        o[6] = 0, o[7] = 0, o[8] = 1;
    }
}

/* ------------------------------------------------------------ lifecycle */
void defo_fm_shell_destroy(struct fm_shell *S) {
    if (!S) return;
    void *a[] = {S->stencil,   S->nb,          S->tri_hinge, S->hmap,       S->hinge,
                 S->hinge_tri, S->hinge_local, S->K,         S->theta_rest, S->angle_per_strain,
                 S->nrm,       S->theta,       S->gth,       S->live,       S->Hh,
                 S->u,         S->U,           S->n,         S->G,          S->sig,
                 S->phat,      S->s3,          S->dp,        S->theta_ref,  S->part_data,
                 S->dl.U,      S->dl.n,        S->dl.G,      S->dl.gth,     S->dl.live,
                 S->nrm_dl,    S->ddiag};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) defo_free(a[i]);
    defo_free(S);
}

size_t defo_fm_shell_bytes(const defo_force_model *fm) {
    const struct fm_shell *S = fm->shell;
    const size_t nt = (size_t)S->nt, nh = (size_t)S->nh;
    return sizeof *S + (size_t)fm->num_parts * sizeof(shell_part) +
           nt * (6 * sizeof(defo_index) * 2 + 12 + 9 * 8 + 3 * 8 + 3 * 8 + 6 * 8 + 3 * 8 + 4 * 8 +
                 5 * 8 + sizeof(defo_dpdf2)) +
           nh * (4 * sizeof(defo_index) + 2 * sizeof(defo_index) + 2 + 8 * 3 + 8 + 12 * 8 + 1 +
                 78 * 8) +
           nt * 16 * 8 + nh * (12 * 8 + 1) + 9 * 8 * (size_t)fm->n; /* the damping's */
}

/* The rest bound of the bending part's ω² over the whole body (Gershgorin
 * on M^{-1/2} K_b M^{-1/2} with the lumped masses, K_b = Σ J_Tᵀ K_T J_T at
 * rest): each node's row sum of block norms. */
static double bending_omega2(defo_force_model *fm, const double *mass) {
    struct fm_shell *S = fm->shell;
    const defo_index n = fm->n;
    double *row = defo_calloc((size_t)n + 1, sizeof(double));
    if (!row) return INFINITY;
    for (defo_index t = 0; t < S->nt; t++) {
        const defo_index *st = S->stencil + 6 * (size_t)t;
        for (int p = 0; p < 6; p++)
            for (int q = 0; q < 6; q++) {
                double s[9] = {0};
                const double *K = S->K + 9 * (size_t)t;
                for (int i = 0; i < 3; i++) {
                    const double *gi = hinge_grad_at(S, &S->ev, t, i, p);
                    if (!gi) continue;
                    for (int j = 0; j < 3; j++) {
                        const double *gj = hinge_grad_at(S, &S->ev, t, j, q);
                        if (!gj) continue;
                        for (int r = 0; r < 3; r++)
                            for (int c = 0; c < 3; c++)
                                s[3 * r + c] += K[3 * i + j] * gi[r] * gj[c];
                    }
                }
                double f = 0;
                for (int k = 0; k < 9; k++) f += s[k] * s[k];
                const double mp = mass[st[p]], mq = mass[st[q]];
                if (mp > 0 && mq > 0) row[st[p]] += sqrt(f) / sqrt(mp * mq);
            }
    }
    double w2 = 0;
    for (defo_index i = 0; i < n; i++) w2 = fmax(w2, row[i]);
    defo_free(row);
    return w2;
}

static defo_status shell_parts(defo_force_model *fm);

defo_status defo_fm_shell_create(defo_force_model *fm) {
    const defo_mesh *mesh = fm->mesh;
    const defo_material_def *md = defo_material_get_def(fm->part[0].mat);
    if (fm->def.formulation != DEFO_FORMULATION_INVERTIBLE)
        return defo_error(DEFO_ERR_UNSUPPORTED,
                          "force model: shells take the invertible formulation (ITF04 §8's "
                          "diagonalized in-plane model); for corotated linear elasticity choose "
                          "the material model 'corotated'");
    if (defo_material_has_fibres(fm->part[0].mat))
        return defo_error(DEFO_ERR_UNSUPPORTED, "force model: shells have no fibre term");
    if (!(md->thickness > 0))
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "force model: a shell needs a thickness > 0 (material thickness is %g)",
                          md->thickness);
    defo_shell_topology tp;
    defo_status st = defo_mesh_shell_topology(mesh, &tp);
    if (st) return st;
    struct fm_shell *S = defo_calloc(1, sizeof *S);
    if (!S) {
        defo_shell_topology_free(&tp);
        return defo_error_oom("shell model", sizeof *S);
    }
    fm->shell = S;
    const size_t nt = (size_t)mesh->num_elems, nh = (size_t)tp.num_hinges;
    S->nt = mesh->num_elems;
    S->nh = tp.num_hinges;
    S->frame = defo_element_rest_frame(fm->rest);
    S->area = defo_element_rest_volume(fm->rest);
    S->stencil = defo_malloc(6 * nt * sizeof(defo_index) + 1);
    S->nb = defo_malloc(3 * nt * sizeof(defo_index) + 1);
    S->hmap = defo_malloc(12 * nt + 1);
    S->K = defo_calloc(9 * nt + 1, sizeof(double));
    S->theta_rest = defo_malloc(nh * sizeof(double) + 1);
    S->theta_ref = defo_malloc(nh * sizeof(double) + 1);
    S->angle_per_strain = defo_malloc(nh * sizeof(double) + 1);
    S->hinge_local = defo_malloc(2 * nh + 1);
    S->nrm = defo_malloc(3 * nt * sizeof(double) + 1);
    S->theta = defo_calloc(nh + 1, sizeof(double));
    S->gth = defo_calloc(12 * nh + 1, sizeof(double));
    S->live = defo_calloc(nh + 1, 1);
    S->Hh = defo_calloc(78 * nh + 1, sizeof(double));
    S->u = defo_calloc(3 * nt + 1, sizeof(double));
    S->U = defo_calloc(6 * nt + 1, sizeof(double));
    S->n = defo_calloc(3 * nt + 1, sizeof(double));
    S->G = defo_calloc(4 * nt + 1, sizeof(double));
    S->sig = defo_calloc(2 * nt + 1, sizeof(double));
    S->phat = defo_calloc(2 * nt + 1, sizeof(double));
    S->s3 = defo_calloc(nt + 1, sizeof(double));
    S->dp = defo_calloc(nt + 1, sizeof(defo_dpdf2));
    S->dl.U = defo_calloc(6 * nt + 1, sizeof(double));
    S->dl.n = defo_calloc(3 * nt + 1, sizeof(double));
    S->dl.G = defo_calloc(4 * nt + 1, sizeof(double));
    S->dl.gth = defo_calloc(12 * nh + 1, sizeof(double));
    S->dl.live = defo_calloc(nh + 1, 1);
    S->nrm_dl = defo_calloc(3 * nt + 1, sizeof(double));
    S->ddiag = defo_calloc(9 * (size_t)mesh->num_nodes + 1, sizeof(double));
    S->ev = (sh_lin){S->U, S->n, S->G, S->gth, S->live};
    /* take the topology's arrays */
    S->hinge = tp.hinge;
    S->hinge_tri = tp.hinge_tri;
    S->tri_hinge = tp.tri_hinge;
    tp.hinge = tp.hinge_tri = tp.tri_hinge = NULL;
    if (!S->frame || !S->stencil || !S->nb || !S->hmap || !S->K || !S->theta_rest ||
        !S->theta_ref || !S->angle_per_strain || !S->hinge_local || !S->nrm || !S->theta ||
        !S->gth || !S->live || !S->Hh || !S->u || !S->U || !S->n || !S->G || !S->sig || !S->phat ||
        !S->s3 || !S->dp || !S->dl.U || !S->dl.n || !S->dl.G || !S->dl.gth || !S->dl.live ||
        !S->nrm_dl || !S->ddiag) {
        defo_shell_topology_free(&tp);
        return defo_error_oom("shell model", nt * 600 + nh * 800);
    }
    for (size_t t = 0; t < nt; t++) {
        const defo_index *v = mesh->elems + 3 * t;
        for (int i = 0; i < 3; i++) {
            const defo_index o = tp.tri_opposite[3 * t + (size_t)i];
            S->stencil[6 * t + (size_t)i] = v[i];
            S->stencil[6 * t + 3 + (size_t)i] = o >= 0 ? o : v[i];
            const defo_index h = S->tri_hinge[3 * t + (size_t)i];
            int8_t *m = S->hmap + 12 * t + 4 * (size_t)i;
            S->nb[3 * t + (size_t)i] = -1;
            m[0] = m[1] = m[2] = m[3] = -1;
            if (h < 0) continue;
            const int first = S->hinge_tri[2 * (size_t)h] == (defo_index)t;
            S->nb[3 * t + (size_t)i] = S->hinge_tri[2 * (size_t)h + (first ? 1 : 0)];
            S->hinge_local[2 * (size_t)h + (first ? 0 : 1)] = (int8_t)i;
            /* a b as the first triangle runs the edge; c in the first, d in the second */
            m[0] = (int8_t)(first ? (i + 1) % 3 : (i + 2) % 3);
            m[1] = (int8_t)(first ? (i + 2) % 3 : (i + 1) % 3);
            m[2] = (int8_t)(first ? i : 3 + i);
            m[3] = (int8_t)(first ? 3 + i : i);
        }
    }
    defo_shell_topology_free(&tp);
    /* rest angles and the angle per outer-fibre strain */
    for (size_t h = 0; h < nh; h++) {
        const defo_index *p = S->hinge + 4 * h;
        double g[12], th = 0;
        if (!hinge_angle(node(mesh->x, p[0]), node(mesh->x, p[1]), node(mesh->x, p[2]),
                         node(mesh->x, p[3]), &th, g))
            return defo_error(DEFO_ERR_INVALID_MESH,
                              "force model: hinge (%ld %ld) next to a degenerate triangle "
                              "(element %ld or %ld)",
                              (long)p[0], (long)p[1], (long)S->hinge_tri[2 * h],
                              (long)S->hinge_tri[2 * h + 1]);
        S->theta_rest[h] = S->theta_ref[h] = th;
    }
    return shell_parts(fm);
}

/* The material parts' constants (thickness, bending modulus, plane-stress
 * modulus, damping blocks, rest bound; each part's membrane wave speed in
 * fm->part), the angle per outer-fibre strain of each hinge and the
 * triangles' condensed bending forms, from fm->part (at creation and when
 * material regions give triangles their own parts).
 *
 * A hinge between two parts.  Its angle is the curvature across the edge
 * integrated over the hinge's strip, half of it in each triangle: under a
 * bending moment m per length carried across the edge (the moment is
 * continuous there, the curvature jumps) the strip's halves bend in series,
 * θ ∝ m (1/D1 + 1/D2)/2, so the hinge's modulus is the harmonic mean
 * D_h = 2 D1 D2 / (D1 + D2) — a two-segment beam's compliance, exact for
 * the midpoint rule over the strip.  (The arithmetic mean, each triangle's
 * own D on the full angle, makes an interface hinge as stiff as the mean of
 * its sides and misses the soft side's compliance over half a strip: a
 * cantilever whose clamped part is ten times stiffer deflects 10.4 % and
 * 4.8 % less than beam theory per segment on 10 and 20 cells, the harmonic
 * mean 1.5 % and 1.0 % more; tests/test_shell_regions.c.)  A triangle's form then takes its hinges'
 * moduli as K_ij = A c_i c_j √(D_i D_j) ((1 − ν)(t_i·t_j)² + ν), which is
 * diag(√D) K̂ diag(√D), positive semidefinite as K̂, and the form above
 * when every D_i is the triangle's own; a boundary edge takes the
 * triangle's D.  The outer-fibre strain of an interface hinge is that of the
 * mean of its triangles' thicknesses. */
static defo_status shell_parts(defo_force_model *fm) {
    struct fm_shell *S = fm->shell;
    const defo_mesh *mesh = fm->mesh;
    const size_t nt = (size_t)S->nt, nh = (size_t)S->nh;
    shell_part *pt = defo_calloc((size_t)fm->num_parts, sizeof *pt);
    if (!pt) return defo_error_oom("shell parts", (size_t)fm->num_parts * sizeof *pt);
    for (int k = 0; k < fm->num_parts; k++) {
        fm_part *fp = &fm->part[k];
        const defo_material_def *md = defo_material_get_def(fp->mat);
        if (defo_material_has_fibres(fp->mat) || !(md->thickness > 0)) {
            defo_free(pt);
            if (!(md->thickness > 0))
                return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                                  "force model: material %d: a shell needs a thickness > 0 "
                                  "(material thickness is %g)",
                                  k, md->thickness);
            return defo_error(DEFO_ERR_UNSUPPORTED,
                              "force model: material %d: shells have no fibre term", k);
        }
        shell_part *pp = &pt[k];
        pp->h = md->thickness;
        pp->nu = md->poisson;
        pp->D = md->youngs_modulus * pp->h * pp->h * pp->h / (12.0 * (1.0 - pp->nu * pp->nu));
        /* membrane constants: plane-stress modulus, damping blocks, rest bound */
        const double mu = fp->mu, la = fp->lambda;
        const double lstar = la + 2 * mu > 0 ? 2 * mu * la / (la + 2 * mu) : 0;
        pp->membrane_scale = lstar + 2 * mu;
        const double mud = fp->mu_d, lad = fp->lambda_d;
        const double ldstar = lad + 2 * mud > 0 ? 2 * mud * lad / (lad + 2 * mud) : 0;
        pp->damp.A[0][0] = pp->damp.A[1][1] = 2 * mud + ldstar;
        pp->damp.A[0][1] = pp->damp.A[1][0] = ldstar;
        pp->damp.B[0][0] = pp->damp.B[0][1] = pp->damp.B[1][0] = pp->damp.B[1][1] = mud;
        pp->tau = mu > 0 ? mud / mu : 0.0;
        defo_dpdf2 d0;
        defo_material_eval_plane(fp->mat, 1.0, 1.0, NULL, NULL, &d0);
        pp->rest_bound = defo_dpdf2_bound(&d0);
        /* the CFL data in the membrane's terms (the stable times' wave speed) */
        fp->wave_speed = sqrt(pp->membrane_scale / md->density);
        fp->stiffness_scale = pp->membrane_scale;
        fp->rest_bound = pp->rest_bound;
    }
    defo_free(S->part_data);
    S->part_data = pt;
    for (size_t h = 0; h < nh; h++) {
        const defo_index *p = S->hinge + 4 * h;
        const defo_index t0 = S->hinge_tri[2 * h], t1 = S->hinge_tri[2 * h + 1];
        double e[3];
        sub3(node(mesh->x, p[1]), node(mesh->x, p[0]), e);
        const double a2 = S->area[t0] + S->area[t1];
        const double th = 0.5 * (tri_part(fm, t0)->h + tri_part(fm, t1)->h);
        S->angle_per_strain[h] = 2.0 * a2 / (th * sqrt(dot3(e, e)));
    }
    /* the condensed bending forms */
    for (size_t t = 0; t < nt; t++) {
        const shell_part *pp = tri_part(fm, (defo_index)t);
        double Dh[3]; /* the modulus of each edge's hinge (see above) */
        for (int i = 0; i < 3; i++) {
            const defo_index o = S->nb[3 * t + (size_t)i];
            const double Do = o >= 0 ? tri_part(fm, o)->D : pp->D;
            Dh[i] = Do == pp->D ? pp->D : 2.0 * pp->D * Do / (pp->D + Do);
        }
        const defo_index *v = mesh->elems + 3 * t;
        const double A = S->area[t], *nn = S->frame + 10 * t; /* b1, b2 span the plane */
        double N[3];
        cross3(nn, nn + 3, N);
        double c[3], tt[3][3];
        for (int i = 0; i < 3; i++) {
            double e[3];
            sub3(node(mesh->x, v[(i + 2) % 3]), node(mesh->x, v[(i + 1) % 3]), e);
            const double l = sqrt(dot3(e, e));
            c[i] = l / (2.0 * A);
            cross3(e, N, tt[i]);
            for (int k = 0; k < 3; k++) tt[i][k] /= l;
        }
        double K[3][3];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                const double d = dot3(tt[i], tt[j]);
                const double Dij = i == j || Dh[i] == Dh[j] ? Dh[i] : sqrt(Dh[i] * Dh[j]);
                K[i][j] = A * Dij * c[i] * c[j] * ((1.0 - pp->nu) * d * d + pp->nu);
            }
        int inner[3], ni = 0, bd[3], nbd = 0;
        for (int i = 0; i < 3; i++) {
            if (S->tri_hinge[3 * t + (size_t)i] >= 0)
                inner[ni++] = i;
            else
                bd[nbd++] = i;
        }
        double Kc[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
        if (ni > 0) {
            /* K_II − K_IB K_BB⁻¹ K_BI over the boundary edges */
            double Binv[2][2] = {{0, 0}, {0, 0}};
            if (nbd == 1) Binv[0][0] = 1.0 / K[bd[0]][bd[0]];
            if (nbd == 2) {
                const double a = K[bd[0]][bd[0]], b = K[bd[0]][bd[1]], d = K[bd[1]][bd[1]];
                const double det = a * d - b * b;
                Binv[0][0] = d / det, Binv[0][1] = Binv[1][0] = -b / det, Binv[1][1] = a / det;
            }
            for (int x = 0; x < ni; x++)
                for (int y = 0; y < ni; y++) {
                    const int i = inner[x], j = inner[y];
                    double s = K[i][j];
                    for (int a = 0; a < nbd; a++)
                        for (int b = 0; b < nbd; b++) s -= K[i][bd[a]] * Binv[a][b] * K[bd[b]][j];
                    Kc[i][j] = s;
                }
        }
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) S->K[9 * t + (size_t)(3 * i + j)] = Kc[i][j];
    }
    step_start(fm, mesh->x); /* the damping's linearisation at rest */
    return DEFO_OK;
}

/* The explicit step data (after the incidence): the membrane wave speed
 * and lengths and the bending bound with the lumped masses (each
 * triangle's part's ρ h). */
defo_status defo_fm_shell_stable_time(defo_force_model *fm) {
    struct fm_shell *S = fm->shell;
    fm->wave_speed = fm->part[0].wave_speed;
    double lmin = INFINITY;
    for (defo_index e = 0; e < S->nt; e++) {
        const shell_part *pp = tri_part(fm, e);
        fm->stable_len[e] = fm->elen[e] / sqrt(pp->rest_bound / pp->membrane_scale);
        lmin = fmin(lmin, fm->stable_len[e]);
    }
    double *mass = defo_malloc((size_t)fm->n * sizeof(double) + 1);
    double *rho = fm->part_of ? defo_malloc((size_t)S->nt * sizeof(double) + 1) : NULL;
    if (!mass || (fm->part_of && !rho)) {
        defo_free(mass);
        defo_free(rho);
        return defo_error_oom("shell masses", (size_t)fm->n * sizeof(double));
    }
    for (defo_index e = 0; rho && e < S->nt; e++)
        rho[e] = defo_material_get_def(fm_part_of(fm, e)->mat)->density * tri_part(fm, e)->h;
    const double rho0 = defo_material_get_def(fm->part[0].mat)->density * S->part_data[0].h;
    defo_status st = defo_element_lumped_mass(fm->mesh, rho0, rho, mass);
    /* the hinges' gradients at rest for the bound */
    if (!st) {
        hinge_pass(fm, fm->mesh->x);
        S->bend_omega2 = bending_omega2(fm, mass);
    }
    defo_free(mass);
    defo_free(rho);
    if (st) return st;
    const double tm = S->nt > 0 ? lmin / fm->wave_speed : INFINITY;
    /* ω bounds add in quadrature at most: λmax(A + B) ≤ λmax(A) + λmax(B),
     * and ω = 4/time in the wave time's convention (force_model.h) */
    fm->wave_time = S->nt > 0 ? 4.0 / sqrt(16.0 / (tm * tm) + S->bend_omega2) : INFINITY;
    fm->stable_time = fm->wave_time;
    return DEFO_OK;
}

/* Material regions (defo_force_model_set_materials): the parts' constants
 * and bending forms again, the bending bound with the parts' masses; the
 * stable lengths follow (defo_fm_shell_plastic_changed). */
defo_status defo_fm_shell_set_parts(defo_force_model *fm) {
    defo_status st = shell_parts(fm);
    if (!st) st = defo_fm_shell_stable_time(fm);
    return st;
}
