/*
 * math/lanes.h — four doubles in lockstep (GCC and Clang vector extensions):
 * the type, loads and stores, and the lanewise select, max and abs that
 * kernels over four elements at a time need.  Never installed.
 *
 * Every operation is lanewise IEEE arithmetic and contraction is off
 * (docs/architecture.md "Floating point"), so a lane gives bit for bit what
 * the same scalar expression gives: a four-wide kernel is checked against
 * its scalar twin exactly.
 * Without AVX a defo_d4 is two SSE2 registers; the compiler splits it.
 */
#ifndef DEFO_MATH_LANES_H
#define DEFO_MATH_LANES_H

#include <math.h>

typedef double defo_d4 __attribute__((vector_size(32)));
/* The same type at any double's address: a view of lanes kept in memory
 * (double[k][4] arrays) read and written in place.  Loops that copy whole
 * arrays of defo_d4 become block copies (rep movs, tens of cycles): kernels
 * read through views instead. */
typedef double defo_d4u __attribute__((vector_size(32), aligned(8), may_alias));
/* a lane mask: all bits set (true) or clear, what comparisons give */
typedef long long defo_m4 __attribute__((vector_size(32)));

/* Four-wide kernels pay where the CPU has 256-bit registers (AVX2): the
 * functions are compiled for it (DEFO_LANES_TARGET, called only when
 * defo_lanes_supported() says so) or in two versions chosen at load time
 * (DEFO_LANES_CLONES, callable anywhere).  With two SSE2 halves a d4 costs
 * more than the scalar code it replaces, so callers keep a scalar path. */
#if defined(__x86_64__) && defined(__GNUC__)
#define DEFO_LANES_TARGET __attribute__((target("avx2")))
#if defined(__clang__) /* Clang 14 emits no plain symbol for the clones */
#define DEFO_LANES_CLONES
#else
#define DEFO_LANES_CLONES __attribute__((target_clones("avx2", "default")))
#endif
static inline int defo_lanes_supported(void) {
    return __builtin_cpu_supports("avx2");
}
#else
#define DEFO_LANES_TARGET
#define DEFO_LANES_CLONES
static inline int defo_lanes_supported(void) {
    return 0;
}
#endif

/* The helpers are macros (or take pointers): a function passing a 256-bit
 * vector by value has an ABI that depends on the target, and compilers
 * refuse or warn about calls between a kernel compiled for AVX2 and a
 * helper compiled without.  Arguments are evaluated more than once: pass
 * names or plain expressions. */
#define defo_d4_load(p)     (*(const defo_d4u *)(p))
#define defo_d4_store(p, v) (*(defo_d4u *)(p) = (v))
#define defo_d4_splat(a)    ((defo_d4){(a), (a), (a), (a)})
/* m ? a : b per lane */
#define defo_d4_select(m, a, b) ((defo_d4)((((defo_m4)(a)) & (m)) | (((defo_m4)(b)) & ~(m))))
/* a > b ? a : b and a < b ? a : b per lane (the scalar ternaries, NaN included) */
#define defo_d4_max(a, b) defo_d4_select((a) > (b), (a), (b))
#define defo_d4_min(a, b) defo_d4_select((a) < (b), (a), (b))
#define defo_d4_abs(a)                                                                             \
    ((defo_d4)(((defo_m4)(a)) & (defo_m4){0x7fffffffffffffffLL, 0x7fffffffffffffffLL,              \
                                          0x7fffffffffffffffLL, 0x7fffffffffffffffLL}))
/* bit l set where lane l of m is true */
#define defo_m4_bits(m)                                                                            \
    (((m)[0] ? 1u : 0u) | ((m)[1] ? 2u : 0u) | ((m)[2] ? 4u : 0u) | ((m)[3] ? 8u : 0u))

#define DEFO_LANES_INLINE static inline __attribute__((always_inline))

/* *v = √v per lane */
DEFO_LANES_INLINE void defo_d4_sqrt(defo_d4 *v) {
    for (int l = 0; l < 4; l++) (*v)[l] = sqrt((*v)[l]);
}

/* The 4×4 transpose: rows a, b, c, d become the columns (a[l], b[l], c[l], d[l]). */
DEFO_LANES_INLINE void defo_d4_transpose(defo_d4 *a, defo_d4 *b, defo_d4 *c, defo_d4 *d) {
    const defo_d4 t0 = __builtin_shufflevector(*a, *b, 0, 4, 2, 6); /* a0 b0 a2 b2 */
    const defo_d4 t1 = __builtin_shufflevector(*a, *b, 1, 5, 3, 7); /* a1 b1 a3 b3 */
    const defo_d4 t2 = __builtin_shufflevector(*c, *d, 0, 4, 2, 6); /* c0 d0 c2 d2 */
    const defo_d4 t3 = __builtin_shufflevector(*c, *d, 1, 5, 3, 7); /* c1 d1 c3 d3 */
    *a = __builtin_shufflevector(t0, t2, 0, 1, 4, 5);
    *b = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    *c = __builtin_shufflevector(t0, t2, 2, 3, 6, 7);
    *d = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}

#endif
