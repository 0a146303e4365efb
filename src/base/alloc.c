/*
 * base/alloc.c — counted allocation through a user hook.
 *
 * Every block carries a 16-byte header holding its payload size, so the byte
 * count is exact and defo_realloc works with any user allocator (it allocates,
 * copies and frees; the hook has no realloc).  The counters are atomic: objects
 * may be created from several threads.
 *
 * Invariant: defo_allocated_bytes() == sum of payload sizes of live blocks.
 */
#include "base/base.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define HEADER 16
_Static_assert(HEADER % alignof(max_align_t) == 0 && HEADER >= sizeof(size_t),
               "allocation header must keep malloc's alignment");

static void *default_alloc(size_t size, void *user) {
    (void)user;
    return malloc(size);
}
static void default_free(void *p, void *user) {
    (void)user;
    free(p);
}

static defo_alloc_fn g_alloc = default_alloc;
static defo_free_fn g_free = default_free;
static void *g_user;
static _Atomic int64_t g_bytes;
static _Atomic int64_t g_peak;

void defo_set_allocator(defo_alloc_fn alloc, defo_free_fn free_fn, void *user) {
    if (alloc && free_fn) {
        g_alloc = alloc;
        g_free = free_fn;
        g_user = user;
    } else {
        g_alloc = default_alloc;
        g_free = default_free;
        g_user = NULL;
    }
}

int64_t defo_allocated_bytes(void) {
    return atomic_load(&g_bytes);
}
int64_t defo_peak_allocated_bytes(void) {
    return atomic_load(&g_peak);
}
void defo_reset_peak_allocated_bytes(void) {
    atomic_store(&g_peak, atomic_load(&g_bytes));
}

static void count(int64_t delta) {
    int64_t now = atomic_fetch_add(&g_bytes, delta) + delta;
    int64_t peak = atomic_load(&g_peak);
    while (now > peak && !atomic_compare_exchange_weak(&g_peak, &peak, now)) {
    }
}

void *defo_malloc(size_t size) {
    if (size > SIZE_MAX - HEADER || size > (size_t)INT64_MAX / 2) return NULL;
    unsigned char *block = g_alloc(size + HEADER, g_user);
    if (!block) return NULL;
    memcpy(block, &size, sizeof size);
    count((int64_t)size);
    return block + HEADER;
}

void *defo_calloc(size_t n, size_t size) {
    size_t total;
    if (!defo_mul_size(n, size, &total)) return NULL;
    void *p = defo_malloc(total);
    if (p) memset(p, 0, total);
    return p;
}

static size_t block_size(const void *p) {
    size_t size;
    memcpy(&size, (const unsigned char *)p - HEADER, sizeof size);
    return size;
}

void *defo_realloc(void *p, size_t size) {
    if (!p) return defo_malloc(size);
    size_t old = block_size(p);
    void *q = defo_malloc(size);
    if (!q) return NULL;
    memcpy(q, p, old < size ? old : size);
    defo_free(p);
    return q;
}

void defo_free(void *p) {
    if (!p) return;
    size_t size = block_size(p);
    count(-(int64_t)size);
    g_free((unsigned char *)p - HEADER, g_user);
}
