/*
 * base/base.h — internal helpers shared by every module: raising errors,
 * counted allocation, checked size arithmetic.  Never installed.
 */
#ifndef DEFO_INTERNAL_BASE_H
#define DEFO_INTERNAL_BASE_H

#include "defo/base.h"
#include <stdbool.h>
#include <stddef.h>

#if defined(__GNUC__)
#define DEFO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define DEFO_PRINTF(a, b)
#endif

/* Record status and a printf-style message as the thread's last error and
 * return status, so call sites read `return defo_error(DEFO_ERR_IO, ...)`. */
defo_status defo_error(defo_status status, const char *fmt, ...) DEFO_PRINTF(2, 3);
/* Prefix the current last-error message with "prefix: " (adds context as an
 * error travels up, e.g. the file name).  Returns the last status. */
defo_status defo_error_prefix(const char *fmt, ...) DEFO_PRINTF(1, 2);

/* Counted allocation.  defo_malloc(0) returns a valid unique pointer.
 * Sizes that overflow return NULL.  Nothing here raises an error message:
 * callers decide what failed (use defo_error_oom). */
void *defo_malloc(size_t size);
void *defo_calloc(size_t count, size_t size);
/* Resize keeping the first min(old, new) bytes; NULL on failure (p intact). */
void *defo_realloc(void *p, size_t size);
/* (defo_free is public: defo/base.h) */
/* Raise DEFO_ERR_OUT_OF_MEMORY naming what could not be allocated. */
defo_status defo_error_oom(const char *what, size_t bytes);

/* a*b without overflow into *out; false on overflow. */
static inline bool defo_mul_size(size_t a, size_t b, size_t *out) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

#define DEFO_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DEFO_MAX(a, b) ((a) > (b) ? (a) : (b))
#define DEFO_UNUSED(x) ((void)(x))

#endif
