/*
 * io/ioutil.h — the shared machinery of defo's readers and writers.
 *
 * Reading: a whole file is loaded into memory once (O(size)), then parsed by
 * a cursor that tracks the line number for "file:line: reason" messages and
 * byte offsets for binary data.  Number parsing never reads past the buffer
 * end (buffers need not be NUL-terminated) and rejects NaN/Inf.
 *
 * Writing: defo_out writes to "<path>.tmp-<pid>" through a large stdio buffer
 * and renames on success, so an output file is complete or absent.
 */
#ifndef DEFO_IO_IOUTIL_H
#define DEFO_IO_IOUTIL_H

#include "base/base.h"
#include "defo/io.h"

#include <stdbool.h>
#include <stdio.h>

/* --------------------------------------------------------------- input */
/* Read a whole file into a new buffer (defo_free it).  A NUL byte is appended
 * after the data (not counted in *size) for convenience only. */
defo_status defo_read_file(const char *path, char **data, size_t *size);

typedef struct defo_cursor {
    const char *name;  /* file name for messages */
    const char *begin; /* buffer start (for byte offsets) */
    const char *p;     /* current position */
    const char *end;   /* one past the last byte */
    int64_t line;      /* 1-based line number of p */
} defo_cursor;

void defo_cursor_init(defo_cursor *c, const char *name, const void *data, size_t size);
bool defo_cursor_eof(const defo_cursor *c);
/* Raise the given status with "name:line: message". */
defo_status defo_cursor_error(const defo_cursor *c, defo_status status, const char *fmt, ...)
    DEFO_PRINTF(3, 4);
/* Same with "name: byte N: message" for binary data at the cursor. */
defo_status defo_cursor_error_at_byte(const defo_cursor *c, defo_status status, const char *fmt,
                                      ...) DEFO_PRINTF(3, 4);

/* Skip spaces and tabs (not newlines). */
void defo_cursor_skip_blank(defo_cursor *c);
/* Skip spaces, tabs, CR and LF, counting lines. */
void defo_cursor_skip_space(defo_cursor *c);
/* The rest of the current line (without CR/LF) in *line and *len; moves to the
 * start of the next line.  False at end of buffer. */
bool defo_cursor_next_line(defo_cursor *c, const char **line, size_t *len);
/* Next whitespace-separated token (may cross newlines).  False at end. */
bool defo_cursor_token(defo_cursor *c, const char **tok, size_t *len);
/* Parse numbers as whitespace-separated tokens (crossing newlines).  On
 * failure they raise a parse error naming `what` and return it. */
defo_status defo_cursor_int64(defo_cursor *c, const char *what, int64_t *out);
defo_status defo_cursor_double(defo_cursor *c, const char *what, double *out);
/* Copy n raw bytes (binary payloads); error naming `what` when truncated. */
defo_status defo_cursor_bytes(defo_cursor *c, const char *what, void *dst, size_t n);
/* True if the token equals s (case-sensitive). */
bool defo_token_is(const char *tok, size_t len, const char *s);

/* Parse a number from [s, end) exactly (the whole range).  Finite only. */
bool defo_parse_double(const char *s, const char *end, double *out);
bool defo_parse_int64(const char *s, const char *end, int64_t *out);

/* Refuse counts that cannot be right before allocating for them: count must
 * be in [0, DEFO_INDEX_MAX] and count * min_bytes_each <= remaining input. */
defo_status defo_cursor_check_count(const defo_cursor *c, int64_t count, size_t min_bytes_each,
                                    const char *what);

/* -------------------------------------------------------------- output */
typedef struct defo_out {
    FILE *f;
    char *path;     /* final name */
    char *tmp_path; /* temporary name written to */
    char *buffer;   /* stdio buffer */
} defo_out;

defo_status defo_out_open(defo_out *o, const char *path);
/* Flush, check for write errors, close and rename to the final name.  On
 * failure the temporary file is removed and an error naming the path raised. */
defo_status defo_out_commit(defo_out *o);
/* Close and remove the temporary file (after an error). */
void defo_out_abort(defo_out *o);
void defo_out_printf(defo_out *o, const char *fmt, ...) DEFO_PRINTF(2, 3);
void defo_out_write(defo_out *o, const void *data, size_t n);
/* Shortest text that reads back to exactly the same double ("%.17g" style). */
void defo_out_double(defo_out *o, double v);
/* Append the shortest round-trip decimal of v to buf (at least 32 bytes);
 * returns the length. */
int defo_format_double(char *buf, double v);

/* Base64 (RFC 4648) for VTK XML binary payloads. */
size_t defo_base64_encoded_size(size_t n);
void defo_base64_encode(const void *data, size_t n, char *out);
/* Decode into out (capacity >= 3*len/4 + 3); false on a bad character.
 * Concatenated padded streams are accepted (VTK encodes header and data
 * separately). */
bool defo_base64_decode(const char *in, size_t len, void *out, size_t *out_size);

#endif
