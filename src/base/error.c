/*
 * base/error.c — status names and the per-thread last-error message.
 *
 * Invariant: defo_last_error() always returns a NUL-terminated string owned by
 * the calling thread; messages longer than the buffer are truncated with "...".
 */
#include "base/base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DEFO_ERROR_CAPACITY 1024

static _Thread_local char g_message[DEFO_ERROR_CAPACITY];
static _Thread_local defo_status g_status;

static void set_truncation_mark(int written) {
    if (written >= DEFO_ERROR_CAPACITY) memcpy(g_message + DEFO_ERROR_CAPACITY - 4, "...", 4);
}

defo_status defo_error(defo_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(g_message, sizeof g_message, fmt, ap);
    va_end(ap);
    if (n < 0) g_message[0] = '\0';
    set_truncation_mark(n);
    g_status = status;
    return status;
}

defo_status defo_error_prefix(const char *fmt, ...) {
    char prefix[DEFO_ERROR_CAPACITY];
    char old[DEFO_ERROR_CAPACITY];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n < 0) return g_status;
    memcpy(old, g_message, sizeof old);
    n = snprintf(g_message, sizeof g_message, "%s: %s", prefix, old);
    set_truncation_mark(n);
    return g_status;
}

defo_status defo_error_oom(const char *what, size_t bytes) {
    return defo_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory allocating %zu bytes for %s", bytes,
                      what);
}

const char *defo_last_error(void) {
    return g_message;
}
defo_status defo_last_status(void) {
    return g_status;
}

void defo_clear_error(void) {
    g_message[0] = '\0';
    g_status = DEFO_OK;
}

const char *defo_status_name(defo_status status) {
    switch (status) {
    case DEFO_OK:
        return "DEFO_OK";
    case DEFO_WARNING:
        return "DEFO_WARNING";
    case DEFO_WARN_REPAIRED:
        return "DEFO_WARN_REPAIRED";
    case DEFO_WARN_NOT_CONVERGED:
        return "DEFO_WARN_NOT_CONVERGED";
    case DEFO_ERR_INVALID_ARGUMENT:
        return "DEFO_ERR_INVALID_ARGUMENT";
    case DEFO_ERR_OUT_OF_MEMORY:
        return "DEFO_ERR_OUT_OF_MEMORY";
    case DEFO_ERR_IO:
        return "DEFO_ERR_IO";
    case DEFO_ERR_PARSE:
        return "DEFO_ERR_PARSE";
    case DEFO_ERR_UNSUPPORTED:
        return "DEFO_ERR_UNSUPPORTED";
    case DEFO_ERR_INVALID_MESH:
        return "DEFO_ERR_INVALID_MESH";
    case DEFO_ERR_NUMERICAL:
        return "DEFO_ERR_NUMERICAL";
    case DEFO_ERR_INTERNAL:
        return "DEFO_ERR_INTERNAL";
    case DEFO_ERR_INTERRUPTED:
        return "DEFO_ERR_INTERRUPTED";
    default:
        return status > 0 ? "DEFO_WARNING(unknown)" : "DEFO_ERR(unknown)";
    }
}

/* ---------------------------------------------------------- interrupt */
#include <signal.h>

static volatile sig_atomic_t interrupt_flag;

void defo_interrupt(void) {
    interrupt_flag = 1;
}

int defo_interrupt_requested(void) {
    return interrupt_flag != 0;
}

void defo_interrupt_clear(void) {
    interrupt_flag = 0;
}
