/*
 * tests/test_io_gmsh.h — helpers shared by the Gmsh and TetGen io tests:
 * whole-file reads, exact mesh comparison, volumes, the broken-file corpus
 * check, and meshio (run as a separate /usr/bin/python3 process) as an
 * independent reader of the files defo writes.
 */
#ifndef DEFO_TESTS_TEST_IO_GMSH_H
#define DEFO_TESTS_TEST_IO_GMSH_H

#include "defo/io.h"
#include "test.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

static inline char *io_slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    *size = (size_t)n;
    return buf;
}

static inline bool io_file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* 6x the signed volume of element e (corners only). */
static inline double io_tet_det(const defo_mesh *m, defo_index e) {
    const defo_index *v = &m->elems[(size_t)e * (size_t)m->nodes_per_elem];
    const double *a = &m->x[3 * v[0]], *b = &m->x[3 * v[1]], *c = &m->x[3 * v[2]],
                 *d = &m->x[3 * v[3]];
    double u[3], w[3], z[3];
    for (int k = 0; k < 3; k++) {
        u[k] = b[k] - a[k];
        w[k] = c[k] - a[k];
        z[k] = d[k] - a[k];
    }
    return u[0] * (w[1] * z[2] - w[2] * z[1]) - u[1] * (w[0] * z[2] - w[2] * z[0]) +
           u[2] * (w[0] * z[1] - w[1] * z[0]);
}

static inline int32_t io_tag(const int32_t *tags, defo_index i) {
    return tags ? tags[i] : 0;
}

/* Equality: counts, connectivity, tags, groups exactly; coordinates within
 * xtol (0: bitwise). */
static inline bool io_mesh_equal_tol(const defo_mesh *a, const defo_mesh *b, bool groups,
                                     double xtol) {
    if (a->num_nodes != b->num_nodes || a->num_elems != b->num_elems ||
        a->num_tris != b->num_tris || a->nodes_per_elem != b->nodes_per_elem ||
        (a->num_tris && a->nodes_per_tri != b->nodes_per_tri))
        return false;
    if (xtol == 0 && memcmp(a->x, b->x, sizeof(double) * 3 * (size_t)a->num_nodes) != 0)
        return false;
    for (defo_index i = 0; xtol > 0 && i < 3 * a->num_nodes; i++)
        if (!(fabs(a->x[i] - b->x[i]) <= xtol)) return false;
    if (a->num_elems &&
        memcmp(a->elems, b->elems,
               sizeof(defo_index) * (size_t)a->num_elems * (size_t)a->nodes_per_elem) != 0)
        return false;
    if (a->num_tris && memcmp(a->tris, b->tris,
                              sizeof(defo_index) * (size_t)a->num_tris * (size_t)a->nodes_per_tri))
        return false;
    for (defo_index e = 0; e < a->num_elems; e++)
        if (io_tag(a->elem_tag, e) != io_tag(b->elem_tag, e)) return false;
    for (defo_index t = 0; t < a->num_tris; t++)
        if (io_tag(a->tri_tag, t) != io_tag(b->tri_tag, t)) return false;
    if (!groups) return true;
    if (a->num_groups != b->num_groups) return false;
    for (int g = 0; g < a->num_groups; g++) {
        bool found = false;
        for (int h = 0; h < b->num_groups; h++)
            found |= a->groups[g].dim == b->groups[h].dim && a->groups[g].tag == b->groups[h].tag &&
                     strcmp(a->groups[g].name, b->groups[h].name) == 0;
        if (!found) return false;
    }
    return true;
}

static inline bool io_mesh_equal(const defo_mesh *a, const defo_mesh *b, bool groups) {
    return io_mesh_equal_tol(a, b, groups, 0.0);
}

/* First occurrence of a string in a binary buffer. */
static inline const char *io_memfind(const char *buf, size_t size, const char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i + n <= size; i++)
        if (memcmp(buf + i, s, n) == 0) return buf + i;
    return NULL;
}

static inline const defo_group *io_find_group(const defo_mesh *m, const char *name) {
    for (int g = 0; g < m->num_groups; g++)
        if (strcmp(m->groups[g].name, name) == 0) return &m->groups[g];
    return NULL;
}

/* One broken file: its status and the "file:line:" / "file: byte N:" prefix
 * its message must start with (after the directory). */
typedef struct io_broken {
    const char *file;
    int status;
    const char *where; /* e.g. "gmsh_nan.msh:6:" */
    const char *says;  /* a phrase the message must contain */
} io_broken;

static inline void io_check_broken(const io_broken *cases, int n) {
    for (int i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/broken/%s", DEFO_DATA_DIR, cases[i].file);
        int64_t before = defo_allocated_bytes();
        defo_mesh *m = (defo_mesh *)1;
        defo_status s = defo_mesh_read(path, NULL, &m);
        const char *msg = defo_last_error();
        CHECK_MSG(s == cases[i].status, "%s: status %s, expected %s (%s)", cases[i].file,
                  defo_status_name(s), defo_status_name(cases[i].status), msg);
        CHECK_MSG(m == NULL, "%s: *out not NULL after an error", cases[i].file);
        CHECK_MSG(strstr(msg, cases[i].where) != NULL, "%s: message lacks \"%s\": %s",
                  cases[i].file, cases[i].where, msg);
        CHECK_MSG(strstr(msg, cases[i].says) != NULL, "%s: message lacks \"%s\": %s", cases[i].file,
                  cases[i].says, msg);
        /* nothing leaks on the error path (the allocator counts every byte) */
        CHECK_MSG(defo_allocated_bytes() == before, "%s: %lld bytes leaked", cases[i].file,
                  (long long)(defo_allocated_bytes() - before));
        if (s < 0 && m) defo_mesh_destroy(m);
    }
}

/* ---------------------------------------------------------------- meshio */
typedef struct io_meshio {
    long points, tetra, tetra10, triangle, triangle6;
    double *x;  /* 3 per point, as meshio parsed them */
    long *conn; /* tetra / tetra10 connectivity in meshio's (VTK) order */
    long conn_len;
} io_meshio;

static const char io_meshio_script[] =
    "import sys\n"
    "try:\n"
    "    import meshio\n"
    "except Exception:\n"
    "    print('NOMESHIO'); sys.exit(0)\n"
    "m = meshio.read(sys.argv[1], file_format=sys.argv[2])\n"
    "c = {}\n"
    "for b in m.cells: c[b.type] = c.get(b.type, 0) + len(b.data)\n"
    "print(len(m.points), c.get('tetra', 0), c.get('tetra10', 0), c.get('triangle', 0),"
    " c.get('triangle6', 0))\n"
    "for p in m.points: print(repr(float(p[0])), repr(float(p[1])), repr(float(p[2])))\n"
    "for b in m.cells:\n"
    "    if b.type in ('tetra', 'tetra10'):\n"
    "        for e in b.data: print(' '.join(str(int(v)) for v in e))\n";

/* 1: parsed; 0: meshio or python unavailable (skip); -1: failure. */
static inline int io_run_meshio(const char *path, const char *format, io_meshio *out) {
    memset(out, 0, sizeof *out);
    if (!io_file_exists("/usr/bin/python3")) return 0;
    char script[512], cmd[2048];
    snprintf(script, sizeof script, "%s/io_meshio_dump.py", DEFO_TEST_TMP);
    FILE *f = fopen(script, "w");
    if (!f) return -1;
    fputs(io_meshio_script, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s' '%s' %s 2>/dev/null", script, path, format);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    char word[64];
    int result = -1;
    if (fscanf(p, "%63s", word) == 1) {
        if (strcmp(word, "NOMESHIO") == 0) {
            result = 0;
        } else {
            out->points = atol(word);
            if (fscanf(p, "%ld %ld %ld %ld", &out->tetra, &out->tetra10, &out->triangle,
                       &out->triangle6) == 4 &&
                out->points >= 0) {
                out->x = malloc(sizeof(double) * 3 * (size_t)(out->points + 1));
                long per = out->tetra10 ? 10 : 4;
                out->conn_len = per * (out->tetra + out->tetra10);
                out->conn = malloc(sizeof(long) * (size_t)(out->conn_len + 1));
                result = 1;
                for (long i = 0; result == 1 && i < 3 * out->points; i++) {
                    char num[64];
                    if (fscanf(p, "%63s", num) != 1)
                        result = -1;
                    else
                        out->x[i] = strtod(num, NULL);
                }
                for (long i = 0; result == 1 && i < out->conn_len; i++)
                    if (fscanf(p, "%ld", &out->conn[i]) != 1) result = -1;
            }
        }
    }
    int rc = pclose(p);
    if (result == 1 && rc != 0) result = -1;
    return result;
}

static inline void io_meshio_free(io_meshio *m) {
    free(m->x);
    free(m->conn);
}

/* meshio must see exactly what defo has: counts, coordinates (bitwise) and
 * volume connectivity (both in VTK order). */
static inline void io_compare_meshio(const char *path, const char *format, const defo_mesh *m) {
    io_meshio r;
    int ok = io_run_meshio(path, format, &r);
    if (ok == 0) {
        TEST_REPORT("SKIPPED: /usr/bin/python3 with meshio is not available");
        return;
    }
    CHECK_MSG(ok == 1, "meshio failed to read %s", path);
    if (ok == 1) {
        CHECK_MSG(r.points == m->num_nodes, "%s: meshio %ld points, defo %d", path, r.points,
                  (int)m->num_nodes);
        long tets = m->nodes_per_elem == 10 ? r.tetra10 : r.tetra;
        long tris = m->nodes_per_tri == 6 ? r.triangle6 : r.triangle;
        CHECK_MSG(tets == m->num_elems, "%s: meshio %ld tets, defo %d", path, tets,
                  (int)m->num_elems);
        if (m->num_tris && strcmp(format, "tetgen") != 0) /* meshio skips .face */
            CHECK_MSG(tris == m->num_tris, "%s: meshio %ld triangles, defo %d", path, tris,
                      (int)m->num_tris);
        if (r.points == m->num_nodes)
            CHECK_MSG(memcmp(r.x, m->x, sizeof(double) * 3 * (size_t)r.points) == 0,
                      "%s: meshio coordinates differ", path);
        if (tets == m->num_elems && r.conn_len == (long)m->num_elems * m->nodes_per_elem) {
            long bad = 0;
            for (long i = 0; i < r.conn_len; i++) bad += r.conn[i] != m->elems[i];
            CHECK_MSG(bad == 0, "%s: %ld connectivity entries differ from meshio's", path, bad);
        }
    }
    io_meshio_free(&r);
}

#endif
