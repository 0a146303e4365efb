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

#define LANES PLAST_LANES

/* the vectors never cross a call boundary by value (every helper is
 * inlined): the note on their calling convention does not apply */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/* Four lanes of doubles (GCC's vector extension: one AVX2 instruction or
 * two SSE2 ones per operation), masks of all-ones or zero bits */
typedef double v4 __attribute__((vector_size(8 * LANES)));
typedef long long m4 __attribute__((vector_size(8 * LANES)));

/* m ? a : b, lane by lane */
static inline __attribute__((always_inline)) v4 sel(m4 m, v4 a, v4 b) {
    return (v4)((m & (m4)a) | (~m & (m4)b));
}
static inline __attribute__((always_inline)) v4 splat(double x) {
    v4 r;
    for (int j = 0; j < LANES; j++) r[j] = x;
    return r;
}
static inline __attribute__((always_inline)) m4 splat_bits(unsigned long long x) {
    m4 r;
    for (int j = 0; j < LANES; j++) r[j] = (long long)x;
    return r;
}
static inline __attribute__((always_inline)) v4 vabs(v4 x) {
    return (v4)((m4)x & splat_bits(0x7fffffffffffffffULL));
}
/* copysign(1, x) */
static inline __attribute__((always_inline)) v4 vsign1(v4 x) {
    return (v4)(((m4)x & splat_bits(0x8000000000000000ULL)) | (m4)splat(1.0));
}
static inline __attribute__((always_inline)) v4 vsqrt(v4 x) {
    v4 r;
    for (int j = 0; j < LANES; j++) r[j] = sqrt(x[j]);
    return r;
}

/* The closed form in lanes: a[k] entry k (xx, yy, zz, xy, yz, zx) of the
 * batch's matrices; h[i] their eigenvalues (descending), V[r][c] their
 * rotations; jac all-ones in a lane that needs Jacobi (its h and V then
 * unspecified).  Every operation is the scalar one in each lane. */
static inline __attribute__((always_inline)) void eig_lanes(const v4 a[6], v4 h[3], v4 V[3][3],
                                                            m4 *jac) {
    const v4 q = (a[0] + a[1] + a[2]) / 3;
    v4 b0 = a[0] - q, b1 = a[1] - q, b2 = a[2] - q, b3 = a[3], b4 = a[4], b5 = a[5];
    /* p² with ‖B‖² = 6p² */
    const v4 p2 = (b0 * b0 + b1 * b1 + b2 * b2 + 2 * (b3 * b3 + b4 * b4 + b5 * b5)) / 6;
    v4 m = splat(0); /* a NaN is skipped here and makes p2 NaN */
    for (int k = 0; k < 6; k++) {
        const v4 f = vabs(a[k]);
        m = sel(f > m, f, m);
    }
    *jac = ~(p2 > 0x1p-100 * m * m) | ~(m < 0x1p200) | ~(m > 0x1p-200);
    /* B = (A − qI)/p has the eigenvalues y of y³ − 3y = det B (2 cos(φ +
     * 2πk/3) with 2 cos 3φ = det B), all in [−2, 2].  The one farther from
     * the other two (the largest when det B ≥ 0) is well conditioned: the
     * largest root z of z³ − 3z = |det B| =: t in [√3, 2] (dz/dt within
     * [1/9, 1/6]), with the sign of det B: a degree-6 polynomial (error
     * below 4e-7 on [0, 2]), then one Halley step (cubic convergence:
     * below 1e-19). */
    const v4 sp = vsqrt(p2), ip = 1 / sp;
    b0 *= ip, b1 *= ip, b2 *= ip, b3 *= ip, b4 *= ip, b5 *= ip;
    const v4 det = b0 * (b1 * b2 - b4 * b4) - b3 * (b3 * b2 - b4 * b5) + b5 * (b3 * b4 - b1 * b5);
    const v4 ad = vabs(det), t = sel(ad < 2, ad, splat(2.0));
    v4 z = 1.73205118 +
           t * (0.16665562 +
                t * (-0.0239763376 +
                     t * (0.00592722289 +
                          t * (-0.00155353136 + t * (0.000312777004 - 3.16796301e-05 * t)))));
    {
        const v4 z2 = z * z, f = z * (z2 - 3) - t, f1 = 3 * (z2 - 1), f2 = 6 * z;
        z -= 2 * f * f1 / (2 * f1 * f1 - f * f2);
    }
    const m4 top = det >= 0;
    const v4 b = sel(top, z, -z);
    /* its unit vector v: the longest of the cross products of two rows of
     * B − bI (each row of the adjugate is a multiple of it), chosen by
     * index */
    const v4 r00 = b0 - b, r01 = b3, r02 = b5, r10 = b3, r11 = b1 - b, r12 = b4, r20 = b5, r21 = b4,
             r22 = b2 - b;
    const v4 c00 = r01 * r12 - r02 * r11, c01 = r02 * r10 - r00 * r12, c02 = r00 * r11 - r01 * r10;
    const v4 c10 = r01 * r22 - r02 * r21, c11 = r02 * r20 - r00 * r22, c12 = r00 * r21 - r01 * r20;
    const v4 c20 = r11 * r22 - r12 * r21, c21 = r12 * r20 - r10 * r22, c22 = r10 * r21 - r11 * r20;
    const v4 n0 = c00 * c00 + c01 * c01 + c02 * c02, n1 = c10 * c10 + c11 * c11 + c12 * c12,
             n2 = c20 * c20 + c21 * c21 + c22 * c22;
    const m4 k0 = (n0 >= n1) & (n0 >= n2), k1 = ~(n0 >= n1) & (n1 >= n2);
    const v4 nk = sel(k0, n0, sel(k1, n1, n2));
    const v4 ck0 = sel(k0, c00, sel(k1, c10, c20)), ck1 = sel(k0, c01, sel(k1, c11, c21)),
             ck2 = sel(k0, c02, sel(k1, c12, c22));
    const v4 inv = 1 / vsqrt(nk);
    const v4 v0 = ck0 * inv, v1 = ck1 * inv, v2 = ck2 * inv;
    /* u, w with (u, w, v) orthonormal, without branches or square roots
     * (Duff et al. 2017, "Building an orthonormal basis, revisited") */
    const v4 sg = vsign1(v2), ca = -1 / (sg + v2), cb = v0 * v1 * ca;
    const v4 u0 = 1 + sg * v0 * v0 * ca, u1 = sg * cb, u2 = -sg * v0;
    const v4 w0 = cb, w1 = sg + v1 * v1 * ca, w2 = -v1;
    /* the plane's entries p, r, s = uᵀBu, uᵀBw, wᵀBw; the pair is m ± ρ,
     * m = (p + s)/2, ρ = √(δ² + r²), δ = (p − s)/2, and the larger one's
     * direction (δ + ρ, r) or, for δ < 0, the same line as (r, ρ − δ) (no
     * cancellation either way) */
    const v4 bu0 = b0 * u0 + b3 * u1 + b5 * u2, bu1 = b3 * u0 + b1 * u1 + b4 * u2,
             bu2 = b5 * u0 + b4 * u1 + b2 * u2;
    const v4 bw0 = b0 * w0 + b3 * w1 + b5 * w2, bw1 = b3 * w0 + b1 * w1 + b4 * w2,
             bw2 = b5 * w0 + b4 * w1 + b2 * w2;
    const v4 pp = u0 * bu0 + u1 * bu1 + u2 * bu2, pr = u0 * bw0 + u1 * bw1 + u2 * bw2,
             ps = w0 * bw0 + w1 * bw1 + w2 * bw2;
    const v4 mean = 0.5 * (pp + ps), dl = 0.5 * (pp - ps), rho = vsqrt(dl * dl + pr * pr);
    const v4 hi = mean + rho, lo = mean - rho;
    const m4 pos = dl >= 0;
    const v4 cx = sel(pos, dl + rho, pr), cy = sel(pos, pr, rho - dl);
    const v4 cn = cx * cx + cy * cy; /* 0 only when the pair is equal: any direction */
    const m4 some = cn > 0;
    const v4 ic = sel(some, 1 / vsqrt(sel(some, cn, splat(1.0))), splat(0.0));
    const v4 c = sel(some, cx * ic, splat(1.0)), s = cy * ic;
    /* the pair's directions; v first (det B ≥ 0) or last */
    const v4 e00 = sel(top, v0, c * u0 + s * w0), e01 = sel(top, v1, c * u1 + s * w1),
             e02 = sel(top, v2, c * u2 + s * w2);
    const v4 e20 = sel(top, -s * u0 + c * w0, v0), e21 = sel(top, -s * u1 + c * w1, v1),
             e22 = sel(top, -s * u2 + c * w2, v2);
    v4 l0 = sel(top, b, hi), l1 = sel(top, hi, lo), l2 = sel(top, lo, b);
    /* rounding may break the order by an ulp where values meet */
    l1 = sel(l1 > l0, l0, l1);
    l2 = sel(l2 > l1, l1, l2);
    h[0] = q + sp * l0, h[1] = q + sp * l1, h[2] = q + sp * l2;
    /* det V = +1: the middle column from the other two */
    V[0][0] = e00, V[1][0] = e01, V[2][0] = e02;
    V[0][1] = e21 * e02 - e22 * e01;
    V[1][1] = e22 * e00 - e20 * e02;
    V[2][1] = e20 * e01 - e21 * e00;
    V[0][2] = e20, V[1][2] = e21, V[2][2] = e22;
}

static void eig_base(const v4 a[6], v4 h[3], v4 V[3][3], m4 *jac) {
    eig_lanes(a, h, V, jac);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void eig_avx2(const v4 a[6], v4 h[3], v4 V[3][3], m4 *jac) {
    eig_lanes(a, h, V, jac);
}
static int have_avx2(void) {
    return __builtin_cpu_supports("avx2");
}
#else
#define eig_avx2 eig_base
static int have_avx2(void) {
    return 0;
}
#endif

int defo_plast_sym_eig_with(int avx2, const double *const a[PLAST_LANES], double h[][3],
                            defo_mat3 V[]) {
    if (avx2 && !have_avx2()) return 0;
    v4 al[6], hl[3], Vl[3][3];
    m4 jac;
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
    defo_plast_sym_eig_with(have_avx2(), a, h, V);
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
