/*
 * plasticity/sym_eig.c — the symmetric 3×3 eigen-solver of the return maps
 * (defo_plast_sym_eig_lanes, plasticity_internal.h), PLAST_LANES matrices at
 * a time.
 *
 * One closed form without branches on the data (Smith 1961's cubic for the
 * eigenvalue farther from the other two, its eigenvector from a cross
 * product, then the symmetric 2×2 problem in the plane normal to it), so
 * the matrices of a batch run in the lanes of a vector unit.  Every
 * lane does the same operations in the same order as any other lane and as
 * the one-matrix call (defo_plast_sym_eig is a batch with the matrix in
 * its first lane): a matrix gets the same bits whichever batch and lane it
 * lands in.  Built twice on x86-64, for the baseline (SSE2: two lanes per
 * instruction) and for AVX2 (four), chosen at run time; with contraction off
 * (no FMA) and +, −, ×, ÷, √ correctly rounded in every lane, both builds
 * give the same bits (tests/test_plasticity.c compares them).  A multiple of
 * I, entries out of range or not finite go to cyclic Jacobi
 * (defo_sym3_eigen) after the batch.
 */
#include "plasticity/plasticity_internal.h"

#include "math/lanes.h"

#include <stdint.h>

#define LANES PLAST_LANES
_Static_assert(PLAST_LANES == 4, "the batch is math/lanes.h's four lanes");

/* per lane: √x, and copysign(1, x) (value forms of math/lanes.h's helpers;
 * statement expressions, so no vector crosses a call) */
#define VSQRT(x)                                                                                   \
    __extension__({                                                                                \
        defo_d4 t_ = (x);                                                                          \
        defo_d4_sqrt(&t_);                                                                         \
        t_;                                                                                        \
    })
#define VSIGN1(x)                                                                                  \
    ((defo_d4)((((defo_m4)(x)) & (defo_m4){INT64_MIN, INT64_MIN, INT64_MIN, INT64_MIN}) |          \
               (defo_m4)defo_d4_splat(1.0)))

/* The closed form in lanes: a[k] entry k (xx, yy, zz, xy, yz, zx) of the
 * batch's matrices; h[i] their eigenvalues (descending), V[r][c] their
 * rotations; jac all-ones in a lane that needs Jacobi (its h and V then
 * unspecified).  Every operation is the scalar one in each lane. */
DEFO_LANES_INLINE void eig_lanes(const defo_d4 a[6], defo_d4 h[3], defo_d4 V[3][3], defo_m4 *jac) {
    const defo_d4 q = (a[0] + a[1] + a[2]) / 3;
    defo_d4 b0 = a[0] - q, b1 = a[1] - q, b2 = a[2] - q, b3 = a[3], b4 = a[4], b5 = a[5];
    /* p² with ‖B‖² = 6p² */
    const defo_d4 p2 = (b0 * b0 + b1 * b1 + b2 * b2 + 2 * (b3 * b3 + b4 * b4 + b5 * b5)) / 6;
    defo_d4 m = defo_d4_splat(0); /* a NaN is skipped here and makes p2 NaN */
    for (int k = 0; k < 6; k++) {
        const defo_d4 f = defo_d4_abs(a[k]);
        m = defo_d4_select(f > m, f, m);
    }
    *jac = ~(p2 > 0x1p-100 * m * m) | ~(m < 0x1p200) | ~(m > 0x1p-200);
    /* B = (A − qI)/p has the eigenvalues y of y³ − 3y = det B (2 cos(φ +
     * 2πk/3) with 2 cos 3φ = det B), all in [−2, 2].  The one farther from
     * the other two (the largest when det B ≥ 0) is well conditioned: the
     * largest root z of z³ − 3z = |det B| =: t in [√3, 2] (dz/dt within
     * [1/9, 1/6]), with the sign of det B: a degree-6 polynomial (error
     * below 4e-7 on [0, 2]), then one Halley step (cubic convergence:
     * below 1e-19). */
    const defo_d4 sp = VSQRT(p2), ip = 1 / sp;
    b0 *= ip, b1 *= ip, b2 *= ip, b3 *= ip, b4 *= ip, b5 *= ip;
    const defo_d4 det =
        b0 * (b1 * b2 - b4 * b4) - b3 * (b3 * b2 - b4 * b5) + b5 * (b3 * b4 - b1 * b5);
    const defo_d4 ad = defo_d4_abs(det), t = defo_d4_select(ad < 2, ad, defo_d4_splat(2.0));
    defo_d4 z = 1.73205118 +
                t * (0.16665562 +
                     t * (-0.0239763376 +
                          t * (0.00592722289 +
                               t * (-0.00155353136 + t * (0.000312777004 - 3.16796301e-05 * t)))));
    {
        const defo_d4 z2 = z * z, f = z * (z2 - 3) - t, f1 = 3 * (z2 - 1), f2 = 6 * z;
        z -= 2 * f * f1 / (2 * f1 * f1 - f * f2);
    }
    const defo_m4 top = det >= 0;
    const defo_d4 b = defo_d4_select(top, z, -z);
    /* its unit vector v: the longest of the cross products of two rows of
     * B − bI (each row of the adjugate is a multiple of it), chosen by
     * index */
    const defo_d4 r00 = b0 - b, r01 = b3, r02 = b5, r10 = b3, r11 = b1 - b, r12 = b4, r20 = b5,
                  r21 = b4, r22 = b2 - b;
    const defo_d4 c00 = r01 * r12 - r02 * r11, c01 = r02 * r10 - r00 * r12,
                  c02 = r00 * r11 - r01 * r10;
    const defo_d4 c10 = r01 * r22 - r02 * r21, c11 = r02 * r20 - r00 * r22,
                  c12 = r00 * r21 - r01 * r20;
    const defo_d4 c20 = r11 * r22 - r12 * r21, c21 = r12 * r20 - r10 * r22,
                  c22 = r10 * r21 - r11 * r20;
    const defo_d4 n0 = c00 * c00 + c01 * c01 + c02 * c02, n1 = c10 * c10 + c11 * c11 + c12 * c12,
                  n2 = c20 * c20 + c21 * c21 + c22 * c22;
    const defo_m4 k0 = (n0 >= n1) & (n0 >= n2), k1 = ~(n0 >= n1) & (n1 >= n2);
    const defo_d4 nk = defo_d4_select(k0, n0, defo_d4_select(k1, n1, n2));
    const defo_d4 ck0 = defo_d4_select(k0, c00, defo_d4_select(k1, c10, c20)),
                  ck1 = defo_d4_select(k0, c01, defo_d4_select(k1, c11, c21)),
                  ck2 = defo_d4_select(k0, c02, defo_d4_select(k1, c12, c22));
    const defo_d4 inv = 1 / VSQRT(nk);
    const defo_d4 v0 = ck0 * inv, v1 = ck1 * inv, v2 = ck2 * inv;
    /* u, w with (u, w, v) orthonormal, without branches or square roots
     * (Duff et al. 2017, "Building an orthonormal basis, revisited") */
    const defo_d4 sg = VSIGN1(v2), ca = -1 / (sg + v2), cb = v0 * v1 * ca;
    const defo_d4 u0 = 1 + sg * v0 * v0 * ca, u1 = sg * cb, u2 = -sg * v0;
    const defo_d4 w0 = cb, w1 = sg + v1 * v1 * ca, w2 = -v1;
    /* the plane's entries p, r, s = uᵀBu, uᵀBw, wᵀBw; the pair is m ± ρ,
     * m = (p + s)/2, ρ = √(δ² + r²), δ = (p − s)/2, and the larger one's
     * direction (δ + ρ, r) or, for δ < 0, the same line as (r, ρ − δ) (no
     * cancellation either way) */
    const defo_d4 bu0 = b0 * u0 + b3 * u1 + b5 * u2, bu1 = b3 * u0 + b1 * u1 + b4 * u2,
                  bu2 = b5 * u0 + b4 * u1 + b2 * u2;
    const defo_d4 bw0 = b0 * w0 + b3 * w1 + b5 * w2, bw1 = b3 * w0 + b1 * w1 + b4 * w2,
                  bw2 = b5 * w0 + b4 * w1 + b2 * w2;
    const defo_d4 pp = u0 * bu0 + u1 * bu1 + u2 * bu2, pr = u0 * bw0 + u1 * bw1 + u2 * bw2,
                  ps = w0 * bw0 + w1 * bw1 + w2 * bw2;
    const defo_d4 mean = 0.5 * (pp + ps), dl = 0.5 * (pp - ps), rho = VSQRT(dl * dl + pr * pr);
    const defo_d4 hi = mean + rho, lo = mean - rho;
    const defo_m4 pos = dl >= 0;
    const defo_d4 cx = defo_d4_select(pos, dl + rho, pr), cy = defo_d4_select(pos, pr, rho - dl);
    const defo_d4 cn = cx * cx + cy * cy; /* 0 only when the pair is equal: any direction */
    const defo_m4 some = cn > 0;
    const defo_d4 ic = defo_d4_select(some, 1 / VSQRT(defo_d4_select(some, cn, defo_d4_splat(1.0))),
                                      defo_d4_splat(0.0));
    const defo_d4 c = defo_d4_select(some, cx * ic, defo_d4_splat(1.0)), s = cy * ic;
    /* the pair's directions; v first (det B ≥ 0) or last */
    const defo_d4 e00 = defo_d4_select(top, v0, c * u0 + s * w0),
                  e01 = defo_d4_select(top, v1, c * u1 + s * w1),
                  e02 = defo_d4_select(top, v2, c * u2 + s * w2);
    const defo_d4 e20 = defo_d4_select(top, -s * u0 + c * w0, v0),
                  e21 = defo_d4_select(top, -s * u1 + c * w1, v1),
                  e22 = defo_d4_select(top, -s * u2 + c * w2, v2);
    defo_d4 l0 = defo_d4_select(top, b, hi), l1 = defo_d4_select(top, hi, lo),
            l2 = defo_d4_select(top, lo, b);
    /* rounding may break the order by an ulp where values meet */
    l1 = defo_d4_select(l1 > l0, l0, l1);
    l2 = defo_d4_select(l2 > l1, l1, l2);
    h[0] = q + sp * l0, h[1] = q + sp * l1, h[2] = q + sp * l2;
    /* det V = +1: the middle column from the other two */
    V[0][0] = e00, V[1][0] = e01, V[2][0] = e02;
    V[0][1] = e21 * e02 - e22 * e01;
    V[1][1] = e22 * e00 - e20 * e02;
    V[2][1] = e20 * e01 - e21 * e00;
    V[0][2] = e20, V[1][2] = e21, V[2][2] = e22;
}

static void eig_base(const defo_d4 a[6], defo_d4 h[3], defo_d4 V[3][3], defo_m4 *jac) {
    eig_lanes(a, h, V, jac);
}

/* the AVX2 build (math/lanes.h: a plain one where the CPU has no AVX2) */
DEFO_LANES_TARGET static void eig_avx2(const defo_d4 a[6], defo_d4 h[3], defo_d4 V[3][3],
                                       defo_m4 *jac) {
    eig_lanes(a, h, V, jac);
}

int defo_plast_sym_eig_with(int avx2, const double *const a[PLAST_LANES], double h[][3],
                            defo_mat3 V[]) {
    if (avx2 && !defo_lanes_supported()) return 0;
    defo_d4 al[6], hl[3], Vl[3][3];
    defo_m4 jac;
    for (int j = 0; j < LANES; j++)
        for (int k = 0; k < 6; k++) al[k][j] = a[j][k];
    if (avx2)
        eig_avx2(al, hl, Vl, &jac);
    else
        eig_base(al, hl, Vl, &jac);
    for (int j = 0; j < LANES; j++) {
        if (jac[j]) { /* (nearly) a multiple of I, or not finite, or out of range */
            const defo_mat3 A = plast_sym_to_m3(a[j]);
            defo_vec3 l;
            defo_sym3_eigen(&A, &l, &V[j]);
            h[j][0] = l.x, h[j][1] = l.y, h[j][2] = l.z;
            continue;
        }
        for (int i = 0; i < 3; i++) {
            h[j][i] = hl[i][j];
            for (int r = 0; r < 3; r++) V[j].m[r][i] = Vl[r][i][j];
        }
    }
    return 1;
}

void defo_plast_sym_eig_lanes(const double *const a[PLAST_LANES], double h[][3], defo_mat3 V[]) {
    defo_plast_sym_eig_with(defo_lanes_supported(), a, h, V);
}

void defo_plast_sym_eig(const double *a, double h[3], defo_mat3 *V) {
    static const double idle[6] = {3, 2, 1, 0, 0, 0}; /* the other lanes: no Jacobi */
    const double *in[PLAST_LANES];
    for (int j = 0; j < PLAST_LANES; j++) in[j] = j ? idle : a;
    double hh[PLAST_LANES][3];
    defo_mat3 VV[PLAST_LANES];
    defo_plast_sym_eig_lanes(in, hh, VV);
    memcpy(h, hh[0], sizeof hh[0]);
    *V = VV[0];
}
