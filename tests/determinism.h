/*
 * tests/determinism.h — run a computation with 1 and with 2 threads and
 * compare the outputs bit for bit (docs/architecture.md "Threads": results
 * are bitwise identical for any thread count).  Every parallel kernel's test uses it:
 *
 *   static void compute(void *ctx, void *out) { ... fill out ... }
 *   CHECK(test_bitwise_same_for_threads(compute, &ctx, bytes, 3));
 */
#ifndef DEFO_TEST_DETERMINISM_H
#define DEFO_TEST_DETERMINISM_H

#include "defo/base.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*test_compute_fn)(void *ctx, void *out);

/* Runs fn with 1 thread, then with 2..max_threads threads; true when every
 * run's out_bytes of output are identical to the 1-thread run. */
static inline int test_bitwise_same_for_threads(test_compute_fn fn, void *ctx, size_t out_bytes,
                                                int max_threads) {
    unsigned char *ref = calloc(out_bytes ? out_bytes : 1, 1);
    unsigned char *got = calloc(out_bytes ? out_bytes : 1, 1);
    int saved = defo_get_threads();
    defo_thread_policy saved_policy = defo_get_thread_policy();
    defo_set_thread_policy(DEFO_THREADS_ALWAYS); /* threads really used, not only allowed */
    int same = ref && got;
    if (same) {
        defo_set_threads(1);
        fn(ctx, ref);
        for (int t = 2; t <= max_threads && same; t++) {
            memset(got, 0xA5, out_bytes);
            defo_set_threads(t);
            fn(ctx, got);
            if (memcmp(ref, got, out_bytes) != 0) {
                size_t i = 0;
                while (i < out_bytes && ref[i] == got[i]) i++;
                fprintf(stderr, "determinism: %d threads differ from 1 thread at byte %zu\n", t, i);
                same = 0;
            }
        }
    }
    defo_set_threads(saved);
    defo_set_thread_policy(saved_policy);
    free(ref);
    free(got);
    return same;
}

#endif
