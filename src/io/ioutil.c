/*
 * io/ioutil.c — file loading, the parsing cursor, atomic output and base64
 * shared by every reader and writer (see ioutil.h).
 *
 * Invariants: the cursor never reads at or past `end`; number parsers accept
 * only finite values and the whole token; defo_out leaves either the complete
 * file under its final name or nothing.
 */
#include "io/ioutil.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------------ files */
defo_status defo_read_file(const char *path, char **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return defo_error(DEFO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return defo_error(DEFO_ERR_IO, "%s: cannot seek (not a regular file?)", path);
    }
    long len = ftell(f);
    if (len < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return defo_error(DEFO_ERR_IO, "%s: cannot determine the file size", path);
    }
    char *buf = defo_malloc((size_t)len + 1);
    if (!buf) {
        fclose(f);
        return defo_error_oom(path, (size_t)len + 1);
    }
    size_t got = fread(buf, 1, (size_t)len, f);
    int err = ferror(f);
    fclose(f);
    if (got != (size_t)len || err) {
        defo_free(buf);
        return defo_error(DEFO_ERR_IO, "%s: read error after %zu of %ld bytes", path, got, len);
    }
    buf[len] = '\0';
    *data = buf;
    *size = (size_t)len;
    return DEFO_OK;
}

/* ----------------------------------------------------------------- cursor */
void defo_cursor_init(defo_cursor *c, const char *name, const void *data, size_t size) {
    c->name = name ? name : "<memory>";
    c->begin = data;
    c->p = data;
    c->end = c->begin + size;
    c->line = 1;
}

bool defo_cursor_eof(const defo_cursor *c) {
    return c->p >= c->end;
}

defo_status defo_cursor_error(const defo_cursor *c, defo_status status, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return defo_error(status, "%s:%lld: %s", c->name, (long long)c->line, msg);
}

defo_status defo_cursor_error_at_byte(const defo_cursor *c, defo_status status, const char *fmt,
                                      ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return defo_error(status, "%s: byte %lld: %s", c->name, (long long)(c->p - c->begin), msg);
}

void defo_cursor_skip_blank(defo_cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t')) c->p++;
}

void defo_cursor_skip_space(defo_cursor *c) {
    while (c->p < c->end) {
        char ch = *c->p;
        if (ch == '\n')
            c->line++;
        else if (ch != ' ' && ch != '\t' && ch != '\r' && ch != '\f' && ch != '\v')
            break;
        c->p++;
    }
}

bool defo_cursor_next_line(defo_cursor *c, const char **line, size_t *len) {
    if (c->p >= c->end) return false;
    const char *start = c->p;
    const char *nl = memchr(start, '\n', (size_t)(c->end - start));
    const char *stop = nl ? nl : c->end;
    const char *trim = stop;
    if (trim > start && trim[-1] == '\r') trim--;
    *line = start;
    *len = (size_t)(trim - start);
    if (nl) {
        c->p = nl + 1;
        c->line++;
    } else {
        c->p = c->end;
    }
    return true;
}

static bool is_space(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v';
}

bool defo_cursor_token(defo_cursor *c, const char **tok, size_t *len) {
    defo_cursor_skip_space(c);
    if (c->p >= c->end) return false;
    const char *start = c->p;
    while (c->p < c->end && !is_space(*c->p)) c->p++;
    *tok = start;
    *len = (size_t)(c->p - start);
    return true;
}

bool defo_token_is(const char *tok, size_t len, const char *s) {
    size_t n = strlen(s);
    return n == len && memcmp(tok, s, n) == 0;
}

bool defo_parse_double(const char *s, const char *end, double *out) {
    char buf[128];
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    /* strtod accepts "nan", "inf" and hex floats; refuse the first two. */
    char *stop;
    errno = 0;
    double v = strtod(buf, &stop);
    if (stop != buf + n) return false;
    if (!isfinite(v)) return false;
    if (errno == ERANGE && fabs(v) > 1.0) return false; /* overflow; underflow to 0 is fine */
    *out = v;
    return true;
}

bool defo_parse_int64(const char *s, const char *end, int64_t *out) {
    const char *p = s;
    bool neg = false;
    if (p < end && (*p == '+' || *p == '-')) neg = *p++ == '-';
    if (p == end) return false;
    uint64_t v = 0;
    for (; p < end; p++) {
        if (*p < '0' || *p > '9') return false;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return false;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1) return false;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX) return false;
        *out = (int64_t)v;
    }
    return true;
}

static void describe_token(const char *tok, size_t len, char *buf, size_t cap) {
    size_t n = len < cap - 4 ? len : cap - 4;
    memcpy(buf, tok, n);
    buf[n] = '\0';
    if (n < len) strcat(buf, "...");
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)buf[i] < 32 || (unsigned char)buf[i] > 126) buf[i] = '?';
}

defo_status defo_cursor_int64(defo_cursor *c, const char *what, int64_t *out) {
    const char *tok;
    size_t len;
    if (!defo_cursor_token(c, &tok, &len))
        return defo_cursor_error(c, DEFO_ERR_PARSE, "unexpected end of file reading %s", what);
    if (!defo_parse_int64(tok, tok + len, out)) {
        char shown[40];
        describe_token(tok, len, shown, sizeof shown);
        return defo_cursor_error(c, DEFO_ERR_PARSE, "expected an integer for %s, found '%s'", what,
                                 shown);
    }
    return DEFO_OK;
}

defo_status defo_cursor_double(defo_cursor *c, const char *what, double *out) {
    const char *tok;
    size_t len;
    if (!defo_cursor_token(c, &tok, &len))
        return defo_cursor_error(c, DEFO_ERR_PARSE, "unexpected end of file reading %s", what);
    if (!defo_parse_double(tok, tok + len, out)) {
        char shown[40];
        describe_token(tok, len, shown, sizeof shown);
        return defo_cursor_error(c, DEFO_ERR_PARSE, "expected a finite number for %s, found '%s'",
                                 what, shown);
    }
    return DEFO_OK;
}

defo_status defo_cursor_bytes(defo_cursor *c, const char *what, void *dst, size_t n) {
    if ((size_t)(c->end - c->p) < n)
        return defo_cursor_error_at_byte(c, DEFO_ERR_PARSE,
                                         "truncated: %s needs %zu bytes, %zu remain", what, n,
                                         (size_t)(c->end - c->p));
    memcpy(dst, c->p, n);
    c->p += n;
    return DEFO_OK;
}

defo_status defo_cursor_check_count(const defo_cursor *c, int64_t count, size_t min_bytes_each,
                                    const char *what) {
    if (count < 0)
        return defo_cursor_error(c, DEFO_ERR_PARSE, "negative %s count %lld", what,
                                 (long long)count);
    if (count > DEFO_INDEX_MAX)
        return defo_cursor_error(c, DEFO_ERR_UNSUPPORTED,
                                 "%s count %lld exceeds defo's limit of %ld", what,
                                 (long long)count, (long)DEFO_INDEX_MAX);
    size_t remaining = (size_t)(c->end - c->p);
    if (min_bytes_each > 0 && (uint64_t)count > remaining / min_bytes_each)
        return defo_cursor_error(c, DEFO_ERR_PARSE,
                                 "%s count %lld cannot fit in the %zu bytes that remain (truncated "
                                 "file or wrong count)",
                                 what, (long long)count, remaining);
    return DEFO_OK;
}

/* ----------------------------------------------------------------- output */
#define OUT_BUFFER (1 << 20)

static char *dup_string(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = defo_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

defo_status defo_out_open(defo_out *o, const char *path) {
    memset(o, 0, sizeof *o);
    size_t n = strlen(path) + 32;
    o->path = dup_string(path);
    o->tmp_path = defo_malloc(n);
    o->buffer = defo_malloc(OUT_BUFFER);
    if (!o->path || !o->tmp_path || !o->buffer) {
        defo_free(o->path);
        defo_free(o->tmp_path);
        defo_free(o->buffer);
        memset(o, 0, sizeof *o);
        return defo_error_oom("output file buffer", OUT_BUFFER);
    }
    snprintf(o->tmp_path, n, "%s.tmp-%ld", path, (long)getpid());
    o->f = fopen(o->tmp_path, "wb");
    if (!o->f) {
        defo_status s = defo_error(DEFO_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
        defo_free(o->path);
        defo_free(o->tmp_path);
        defo_free(o->buffer);
        memset(o, 0, sizeof *o);
        return s;
    }
    setvbuf(o->f, o->buffer, _IOFBF, OUT_BUFFER);
    return DEFO_OK;
}

static void out_release(defo_out *o) {
    defo_free(o->path);
    defo_free(o->tmp_path);
    defo_free(o->buffer);
    memset(o, 0, sizeof *o);
}

defo_status defo_out_commit(defo_out *o) {
    if (!o->f) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "output file is not open");
    int bad = ferror(o->f);
    int close_err = fclose(o->f);
    o->f = NULL;
    if (bad || close_err != 0) {
        defo_status s = defo_error(DEFO_ERR_IO, "%s: write failed (disk full?)", o->path);
        remove(o->tmp_path);
        out_release(o);
        return s;
    }
    if (rename(o->tmp_path, o->path) != 0) {
        defo_status s = defo_error(DEFO_ERR_IO, "%s: cannot rename temporary file: %s", o->path,
                                   strerror(errno));
        remove(o->tmp_path);
        out_release(o);
        return s;
    }
    out_release(o);
    return DEFO_OK;
}

void defo_out_abort(defo_out *o) {
    if (o->f) {
        fclose(o->f);
        remove(o->tmp_path);
    }
    out_release(o);
}

void defo_out_printf(defo_out *o, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(o->f, fmt, ap);
    va_end(ap);
}

void defo_out_write(defo_out *o, const void *data, size_t n) {
    if (n) fwrite(data, 1, n, o->f);
}

int defo_format_double(char *buf, double v) {
    /* Shortest of 15, 16, 17 significant digits that reads back exactly:
     * most values need 15-17, short ones (0.5, 1) come out short.  A %g with
     * 17 digits needs at most 24 bytes ("-1.2345678901234567e-308"). */
    int n = snprintf(buf, 32, "%.15g", v);
    if (strtod(buf, NULL) == v) return n;
    n = snprintf(buf, 32, "%.16g", v);
    if (strtod(buf, NULL) == v) return n;
    return snprintf(buf, 32, "%.17g", v);
}

void defo_out_double(defo_out *o, double v) {
    char buf[32];
    int n = defo_format_double(buf, v);
    fwrite(buf, 1, (size_t)n, o->f);
}

/* ----------------------------------------------------------------- base64 */
static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t defo_base64_encoded_size(size_t n) {
    return (n + 2) / 3 * 4;
}

void defo_base64_encode(const void *data, size_t n, char *out) {
    const unsigned char *s = data;
    size_t i = 0;
    for (; i + 3 <= n; i += 3) {
        unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
        *out++ = b64[v >> 18];
        *out++ = b64[(v >> 12) & 63];
        *out++ = b64[(v >> 6) & 63];
        *out++ = b64[v & 63];
    }
    if (i < n) {
        unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0u);
        *out++ = b64[v >> 18];
        *out++ = b64[(v >> 12) & 63];
        *out++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
        *out++ = '=';
    }
}

static int b64_value(char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

bool defo_base64_decode(const char *in, size_t len, void *out, size_t *out_size) {
    /* Accepts concatenated padded streams ("AAA=BBBB"): VTK writers often
     * encode the block header and the data separately.  A '=' ends the
     * current stream; leftover bits of a quantum are dropped. */
    unsigned char *d = out;
    size_t o = 0;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        char ch = in[i];
        if (is_space(ch)) continue;
        if (ch == '=') {
            acc = 0;
            bits = 0;
            continue;
        }
        int v = b64_value(ch);
        if (v < 0) return false;
        acc = ((acc << 6) | (unsigned)v) & 0xFFFFFFu;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            d[o++] = (unsigned char)((acc >> bits) & 0xFF);
        }
    }
    *out_size = o;
    return true;
}
