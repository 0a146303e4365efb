/*
 * defo/base.h — conventions every defo module shares: export macro, version,
 * status codes and the last-error message, the allocator hook, threads.
 *
 * Conventions (docs/conventions.md has the full page):
 *   - Functions that can fail return defo_status: 0 ok, negative error,
 *     positive warning.  The message behind the most recent non-zero status
 *     on the calling thread is defo_last_error().
 *   - Arrays passed in are borrowed for the duration of the call unless the
 *     function's comment says it copies or takes ownership.
 *   - All memory defo allocates goes through the allocator hook and is
 *     counted (defo_allocated_bytes).
 */
#ifndef DEFO_BASE_H
#define DEFO_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------- export */
#if defined(_WIN32)
#define DEFO_API
#elif defined(__GNUC__)
#define DEFO_API __attribute__((visibility("default")))
#else
#define DEFO_API
#endif

/* ------------------------------------------------------------ version */
#define DEFO_VERSION_MAJOR  0
#define DEFO_VERSION_MINOR  1
#define DEFO_VERSION_PATCH  0
#define DEFO_VERSION_STRING "0.1.0"
/* Single integer for comparisons: major*10000 + minor*100 + patch. */
#define DEFO_VERSION (DEFO_VERSION_MAJOR * 10000 + DEFO_VERSION_MINOR * 100 + DEFO_VERSION_PATCH)

/* Version of the library actually linked, "MAJOR.MINOR.PATCH". */
DEFO_API const char *defo_version(void);
/* Same as DEFO_VERSION, for the linked library. */
DEFO_API int defo_version_number(void);

/* ------------------------------------------------------------- status */
/* Index type for nodes, elements and faces.  32 bits: up to 2^31-1 of each,
 * which readers and generators check before allocating. */
typedef int32_t defo_index;
#define DEFO_INDEX_MAX INT32_MAX

typedef int defo_status;
enum {
    DEFO_OK = 0,
    /* warnings (positive): the result is usable */
    DEFO_WARNING = 1,            /* generic warning; message says what */
    DEFO_WARN_REPAIRED = 2,      /* input was repaired (e.g. reoriented elements) */
    DEFO_WARN_NOT_CONVERGED = 3, /* iteration limit reached; result is the last iterate */
    /* errors (negative): outputs are untouched or released */
    DEFO_ERR_INVALID_ARGUMENT = -1, /* API misuse or a parameter out of range */
    DEFO_ERR_OUT_OF_MEMORY = -2,
    DEFO_ERR_IO = -3,           /* a file could not be opened, read or written */
    DEFO_ERR_PARSE = -4,        /* malformed input data; message has file:line */
    DEFO_ERR_UNSUPPORTED = -5,  /* well-formed input defo cannot use (named) */
    DEFO_ERR_INVALID_MESH = -6, /* degenerate or inconsistent geometry/topology */
    DEFO_ERR_NUMERICAL = -7,    /* a computation would produce NaN/Inf */
    DEFO_ERR_INTERNAL = -8,     /* a bug in defo: please report */
    DEFO_ERR_INTERRUPTED = -9 /* stopped by defo_interrupt(); the state is the last complete one */
};

/* Short constant name of a status, e.g. "DEFO_ERR_PARSE". */
DEFO_API const char *defo_status_name(defo_status status);
/* Message of the most recent error or warning raised on this thread, or "" if
 * none since defo_clear_error().  Valid until the next defo call on this thread. */
DEFO_API const char *defo_last_error(void);
/* Status that went with defo_last_error(). */
DEFO_API defo_status defo_last_status(void);
DEFO_API void defo_clear_error(void);

/* ---------------------------------------------------------- allocator */
/* alloc must return memory aligned for any type (like malloc) or NULL.
 * free receives only pointers alloc returned. */
typedef void *(*defo_alloc_fn)(size_t size, void *user);
typedef void (*defo_free_fn)(void *ptr, void *user);

/* Route every allocation defo makes through alloc/free (NULL, NULL restores
 * malloc/free).  Set it before creating any object: memory must be released
 * by the allocator that made it. */
DEFO_API void defo_set_allocator(defo_alloc_fn alloc, defo_free_fn free_fn, void *user);
/* Bytes currently allocated by defo (payload, without bookkeeping). */
DEFO_API int64_t defo_allocated_bytes(void);
/* Largest value defo_allocated_bytes() has had since the last reset. */
DEFO_API int64_t defo_peak_allocated_bytes(void);
DEFO_API void defo_reset_peak_allocated_bytes(void);
/* Release memory defo handed to the caller to own (a serialized checkpoint,
 * a scene dump), with the allocator that made it.  NULL is fine. */
DEFO_API void defo_free(void *ptr);

/* ---------------------------------------------------------- interrupt */
/* Ask the running simulation to stop at its next safe point (between steps,
 * Newton and CG iterations): the call in progress returns
 * DEFO_ERR_INTERRUPTED with the state of the last complete frame.
 * Async-signal-safe (sets a flag): call it from a SIGINT/SIGTERM handler. */
DEFO_API void defo_interrupt(void);
/* 1 when an interrupt was requested and not cleared. */
DEFO_API int defo_interrupt_requested(void);
DEFO_API void defo_interrupt_clear(void);

/* ------------------------------------------------------------ threads */
/* Number of threads defo's parallel loops use (<= 0: the OpenMP default).
 * Results are bitwise identical for any thread count. */
DEFO_API void defo_set_threads(int threads);
DEFO_API int defo_get_threads(void);

/* Whether a loop large enough for threads uses them.  ADAPTIVE (the
 * default): defo times stretches of its work with its threads and with one,
 * now and then, and keeps whichever is faster — so on a machine whose other
 * processes keep the cores busy it runs about as fast as on one thread
 * instead of waiting for its threads, and on a quiet machine it uses them.
 * ALWAYS: every such loop uses every thread (determinism tests, scaling
 * benchmarks).  A process-wide setting; results are bitwise identical
 * under either. */
typedef enum defo_thread_policy {
    DEFO_THREADS_ADAPTIVE = 0,
    DEFO_THREADS_ALWAYS = 1
} defo_thread_policy;
DEFO_API void defo_set_thread_policy(defo_thread_policy policy);
DEFO_API defo_thread_policy defo_get_thread_policy(void);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_BASE_H */
