/*
 * bench/bench_math.c — ns per 3×3 decomposition on one core: defo_svd3,
 * defo_sym3_eigen, defo_polar3 over pre-generated random matrices (entries
 * uniform in [-1, 1]; symmetric ones for the eigen-solver).  Each figure is
 * the median over the repetitions of (time for `passes` sweeps over all
 * samples) / (passes × samples).  Results are folded into a checksum that is
 * printed, so nothing can be optimised away.
 *
 * Output: one JSON object on stdout.
 *   bench_math [samples_log2 (default 16)] [repetitions (default 9)]
 */
#include "defo/base.h"
#include "defo/math.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* xorshift64*, uniform in [-1, 1). */
static double rnd(unsigned long long *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

enum { KIND_SVD, KIND_EIG, KIND_POLAR };

static double run(int kind, const defo_mat3 *F, const defo_mat3 *A, int n, int passes,
                  double *checksum) {
    double sum = 0;
    double t0 = now_ns();
    for (int p = 0; p < passes; p++) {
        for (int i = 0; i < n; i++) {
            defo_mat3 U, V;
            defo_vec3 s;
            if (kind == KIND_SVD) {
                defo_svd3(&F[i], &U, &s, &V);
                sum += s.z + U.m[2][2] + V.m[1][2];
            } else if (kind == KIND_EIG) {
                defo_sym3_eigen(&A[i], &s, &U);
                sum += s.y + U.m[2][1];
            } else {
                defo_polar3(&F[i], &U, &V);
                sum += U.m[0][1] + V.m[2][2];
            }
        }
    }
    double t1 = now_ns();
    *checksum += sum;
    return (t1 - t0) / ((double)passes * n);
}

int main(int argc, char **argv) {
    int lg = argc > 1 ? atoi(argv[1]) : 16;
    int reps = argc > 2 ? atoi(argv[2]) : 9;
    if (lg < 4 || lg > 24) lg = 16;
    if (reps < 1 || reps > 101) reps = 9;
    int n = 1 << lg;
    int passes = (1 << 20) / n > 0 ? (1 << 20) / n : 1; /* ~1M decompositions per repetition */
    defo_set_threads(1);

    defo_mat3 *F = malloc((size_t)n * sizeof *F);
    defo_mat3 *A = malloc((size_t)n * sizeof *A);
    double *t = malloc((size_t)reps * sizeof *t);
    if (!F || !A || !t) {
        fprintf(stderr, "bench_math: out of memory\n");
        return 1;
    }
    unsigned long long seed = 0x2545F4914F6CDD1DULL;
    for (int k = 0; k < n; k++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) F[k].m[i][j] = rnd(&seed);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) A[k].m[i][j] = F[k].m[i][j] + F[k].m[j][i];

    double checksum = 0, res[3];
    for (int kind = 0; kind < 3; kind++) {
        run(kind, F, A, n, 1, &checksum); /* warm-up */
        for (int r = 0; r < reps; r++) t[r] = run(kind, F, A, n, passes, &checksum);
        res[kind] = median(t, reps);
    }
    printf("{\"bench\":\"math\",\"svd3_ns\":%.1f,\"sym3_eigen_ns\":%.1f,\"polar3_ns\":%.1f,"
           "\"samples\":%d,\"passes\":%d,\"repetitions\":%d,\"checksum\":%.6g}\n",
           res[0], res[1], res[2], n, passes, reps, checksum);
    free(F);
    free(A);
    free(t);
    return 0;
}
