/*
 * test_base.c — status/error messages, the counted allocator hook, and the
 * determinism machinery (incidence, gather, sum) with 1 and 2 threads.
 */
#include "base/base.h"
#include "base/parallel.h"
#include "determinism.h"
#include "test.h"

#include <stdint.h>

static void test_version(void) {
    CHECK(strcmp(defo_version(), DEFO_VERSION_STRING) == 0);
    CHECK(defo_version_number() == DEFO_VERSION);
    CHECK(DEFO_VERSION ==
          DEFO_VERSION_MAJOR * 10000 + DEFO_VERSION_MINOR * 100 + DEFO_VERSION_PATCH);
}

static void test_errors(void) {
    defo_clear_error();
    CHECK(defo_last_status() == DEFO_OK);
    CHECK(defo_last_error()[0] == '\0');
    defo_status s = defo_error(DEFO_ERR_PARSE, "%s:%d: bad token '%s'", "mesh.msh", 12, "x");
    CHECK(s == DEFO_ERR_PARSE);
    CHECK(defo_last_status() == DEFO_ERR_PARSE);
    CHECK(strcmp(defo_last_error(), "mesh.msh:12: bad token 'x'") == 0);
    defo_error_prefix("reading %s", "scene.json");
    CHECK(strcmp(defo_last_error(), "reading scene.json: mesh.msh:12: bad token 'x'") == 0);
    CHECK(strcmp(defo_status_name(DEFO_ERR_PARSE), "DEFO_ERR_PARSE") == 0);
    CHECK(strcmp(defo_status_name(DEFO_WARN_REPAIRED), "DEFO_WARN_REPAIRED") == 0);
    /* An over-long message is truncated and marked, never overflows. */
    char big[3000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    defo_error(DEFO_ERR_IO, "%s", big);
    size_t n = strlen(defo_last_error());
    CHECK(n < 1024);
    CHECK(strcmp(defo_last_error() + n - 3, "...") == 0);
    defo_clear_error();
}

/* A user allocator that counts its own calls and can be told to fail. */
typedef struct counting {
    int64_t allocs, frees;
    int64_t fail_at; /* fail the allocation with this ordinal (1-based); 0 never */
} counting;

static void *counting_alloc(size_t size, void *user) {
    counting *c = user;
    c->allocs++;
    if (c->fail_at && c->allocs == c->fail_at) return NULL;
    return malloc(size);
}
static void counting_free(void *p, void *user) {
    counting *c = user;
    c->frees++;
    free(p);
}

static void test_allocator(void) {
    counting c = {0, 0, 0};
    int64_t before = defo_allocated_bytes();
    defo_set_allocator(counting_alloc, counting_free, &c);
    double *a = defo_malloc(100 * sizeof(double));
    CHECK(a != NULL);
    CHECK(defo_allocated_bytes() == before + (int64_t)(100 * sizeof(double)));
    a = defo_realloc(a, 1000 * sizeof(double));
    CHECK(a != NULL);
    CHECK(defo_allocated_bytes() == before + (int64_t)(1000 * sizeof(double)));
    CHECK(defo_peak_allocated_bytes() >= before + (int64_t)(1100 * sizeof(double)));
    int *z = defo_calloc(7, sizeof(int));
    CHECK(z && z[0] == 0 && z[6] == 0);
    defo_free(z);
    defo_free(a);
    CHECK(defo_allocated_bytes() == before);
    CHECK(c.allocs == c.frees && c.allocs == 3); /* malloc, realloc, calloc */
    /* Overflowing sizes are refused, never wrapped. */
    CHECK(defo_calloc(SIZE_MAX / 2, 4) == NULL);
    CHECK(defo_malloc(SIZE_MAX - 4) == NULL);
    /* A failing allocator yields NULL and counts nothing. */
    c.fail_at = c.allocs + 1;
    CHECK(defo_malloc(64) == NULL);
    CHECK(defo_allocated_bytes() == before);
    defo_set_allocator(NULL, NULL, NULL);
}

/* Random "elements" of 4 nodes scattering 3-vectors to nodes: the gather must
 * equal a sequential reference exactly and be identical for 1 and 2 threads. */
typedef struct scatter_case {
    defo_index num_nodes;
    int64_t num_elems;
    defo_index *conn;
    double *per_slot;
    defo_incidence inc;
} scatter_case;

static void gather_compute(void *ctx, void *out) {
    scatter_case *sc = ctx;
    defo_gather3(&sc->inc, sc->per_slot, out);
}

static void sum_compute(void *ctx, void *out) {
    scatter_case *sc = ctx;
    double s = defo_sum(sc->per_slot, (size_t)(sc->num_elems * 12));
    memcpy(out, &s, sizeof s);
}

static void test_gather_determinism(void) {
    scatter_case sc;
    sc.num_nodes = 20000;
    sc.num_elems = 100000;
    test_rng rng = {12345};
    sc.conn = malloc((size_t)sc.num_elems * 4 * sizeof *sc.conn);
    sc.per_slot = malloc((size_t)sc.num_elems * 12 * sizeof *sc.per_slot);
    for (int64_t i = 0; i < sc.num_elems * 4; i++)
        sc.conn[i] = (defo_index)(test_uniform(&rng) * sc.num_nodes);
    /* Values of mixed magnitude make any change of summation order visible. */
    for (int64_t i = 0; i < sc.num_elems * 12; i++)
        sc.per_slot[i] = test_range(&rng, -1, 1) * pow(10.0, test_range(&rng, -8, 8));
    CHECK_OK(defo_incidence_build(&sc.inc, sc.conn, sc.num_elems, 4, sc.num_nodes));
    CHECK(sc.inc.offset[sc.num_nodes] == sc.num_elems * 4);

    /* Reference: sequential scatter in increasing slot order. */
    double *ref = calloc((size_t)sc.num_nodes * 3, sizeof *ref);
    for (int64_t s = 0; s < sc.num_elems * 4; s++)
        for (int k = 0; k < 3; k++) ref[3 * sc.conn[s] + k] += sc.per_slot[3 * s + k];
    double *got = malloc((size_t)sc.num_nodes * 3 * sizeof *got);
    defo_set_threads(2);
    defo_gather3(&sc.inc, sc.per_slot, got);
    CHECK(memcmp(ref, got, (size_t)sc.num_nodes * 3 * sizeof *got) == 0);

    CHECK(test_bitwise_same_for_threads(gather_compute, &sc,
                                        (size_t)sc.num_nodes * 3 * sizeof(double), 2));
    CHECK(test_bitwise_same_for_threads(sum_compute, &sc, sizeof(double), 2));

    /* An out-of-range node index is an error naming the element. */
    sc.conn[17] = sc.num_nodes;
    defo_incidence bad;
    CHECK(defo_incidence_build(&bad, sc.conn, sc.num_elems, 4, sc.num_nodes) ==
          DEFO_ERR_INVALID_MESH);
    CHECK(strstr(defo_last_error(), "element 4") != NULL);

    defo_incidence_free(&sc.inc);
    free(ref);
    free(got);
    free(sc.conn);
    free(sc.per_slot);
}

static void test_sum(void) {
    /* Exactly representable values: the blocked sum must be exact. */
    size_t n = 100003;
    double *v = malloc(n * sizeof *v);
    double expect = 0;
    for (size_t i = 0; i < n; i++) {
        v[i] = (double)(i % 97) - 48.0;
        expect += v[i];
    }
    CHECK(defo_sum(v, n) == expect);
    CHECK(defo_sum(v, 0) == 0.0);
    free(v);
}

int main(void) {
    RUN(test_version);
    RUN(test_errors);
    RUN(test_allocator);
    RUN(test_gather_determinism);
    RUN(test_sum);
    return test_summary();
}
