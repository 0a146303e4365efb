/*
 * tests/test.h — the small harness every defo test uses.
 *
 *   static void test_something(void) { CHECK(x == 1); CHECK_NEAR(a, b, 1e-12); }
 *   int main(void) { RUN(test_something); return test_summary(); }
 *
 * A failing CHECK prints file:line and the expression and marks the current
 * test failed; the test goes on so one run shows every failure.  The summary
 * line is "N passed, M failed".  Tests print what they measured with
 * TEST_REPORT so the numbers in issue notes come from test output.
 */
#ifndef DEFO_TEST_H
#define DEFO_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures_in_current;
static int test_passed_count;
static int test_failed_count;
static const char *test_current_name = "";

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s: CHECK failed: %s\n", __FILE__, __LINE__,                   \
                    test_current_name, #cond);                                                     \
            test_failures_in_current++;                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_MSG(cond, ...)                                                                       \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s: CHECK failed: %s: ", __FILE__, __LINE__,                   \
                    test_current_name, #cond);                                                     \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            test_failures_in_current++;                                                            \
        }                                                                                          \
    } while (0)

/* |a - b| <= tol, and both finite. */
#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double check_a_ = (double)(a), check_b_ = (double)(b), check_t_ = (double)(tol);           \
        if (!(isfinite(check_a_) && isfinite(check_b_) &&                                          \
              fabs(check_a_ - check_b_) <= check_t_)) {                                            \
            fprintf(stderr, "%s:%d: %s: CHECK_NEAR failed: %s = %.17g, %s = %.17g, tol %.3g\n",    \
                    __FILE__, __LINE__, test_current_name, #a, check_a_, #b, check_b_, check_t_);  \
            test_failures_in_current++;                                                            \
        }                                                                                          \
    } while (0)

/* Status must be exactly DEFO_OK; prints defo_last_error() otherwise. */
#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        int check_s_ = (expr);                                                                     \
        if (check_s_ != 0) {                                                                       \
            fprintf(stderr, "%s:%d: %s: %s returned %d: %s\n", __FILE__, __LINE__,                 \
                    test_current_name, #expr, check_s_, defo_last_error());                        \
            test_failures_in_current++;                                                            \
        }                                                                                          \
    } while (0)

#define TEST_REPORT(...)                                                                           \
    do {                                                                                           \
        printf("  [%s] ", test_current_name);                                                      \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
    } while (0)

#define RUN(fn)                                                                                    \
    do {                                                                                           \
        test_current_name = #fn;                                                                   \
        test_failures_in_current = 0;                                                              \
        fn();                                                                                      \
        if (test_failures_in_current) {                                                            \
            test_failed_count++;                                                                   \
            printf("FAIL %s\n", #fn);                                                              \
        } else {                                                                                   \
            test_passed_count++;                                                                   \
            printf("ok   %s\n", #fn);                                                              \
        }                                                                                          \
        fflush(stdout);                                                                            \
    } while (0)

static inline int test_summary(void) {
    printf("%d passed, %d failed\n", test_passed_count, test_failed_count);
    return test_failed_count ? 1 : 0;
}

/* Deterministic pseudo-random numbers for tests (xorshift64*). */
typedef struct test_rng {
    unsigned long long s;
} test_rng;
static inline double test_uniform(test_rng *r) { /* [0, 1) */
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (double)((r->s * 2685821657736338717ULL) >> 11) * (1.0 / 9007199254740992.0);
}
static inline double test_range(test_rng *r, double lo, double hi) {
    return lo + (hi - lo) * test_uniform(r);
}

/* Scale heavy loops down under the sanitizers (they run ~10x slower); the
 * optimised build always runs the full size. */
#ifdef DEFO_SANITIZED
#define TEST_HEAVY(n) ((n) / 10 > 0 ? (n) / 10 : 1)
#else
#define TEST_HEAVY(n) (n)
#endif

#endif
