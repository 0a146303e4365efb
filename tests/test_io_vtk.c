/*
 * tests/test_io_vtk.c — VTK XML (.vtu), legacy (.vtk) and .pvd: exact round
 * trips, interoperability with meshio in both directions, and the broken-file
 * corpus data/broken/vtu_* and vtk_*.
 *
 * Reference values: round trips compare bitwise against what was written;
 * interop compares bitwise against meshio's own reading of the same file
 * (an independent implementation); broken files check the status and that
 * the message names the file (and line for text formats).
 */
#include "defo/element.h"
#include "defo/io.h"
#include "io/formats.h"
#include "test.h"

#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define PY "/usr/bin/python3"

typedef defo_status (*reader_fn)(const char *, size_t, const char *, defo_mesh **);

static defo_status read_with(reader_fn fn, const char *path, defo_mesh **m) {
    char *data;
    size_t size;
    *m = NULL;
    defo_status s = defo_read_file(path, &data, &size);
    if (s < 0) return s;
    s = fn(data, size, path, m);
    defo_free(data);
    return s;
}

static defo_write_options wopts(int binary) {
    defo_write_options o;
    memset(&o, 0, sizeof o);
    o.binary = binary;
    o.msh_version = 4;
    return o;
}

/* A tet mesh with random coordinates spanning many magnitudes (so a lossy
 * number format would show), a few boundary triangles and four fields. */
static defo_mesh *make_mesh(int order, int with_tris, int seed) {
    test_rng rng = {0x9E3779B97F4A7C15ULL + (unsigned long long)seed};
    defo_mesh *m = NULL;
    if (defo_mesh_create(order, &m) < 0) return NULL;
    int nn = order == 2 ? 30 : 12, ne = 5;
    for (int i = 0; i < nn; i++) {
        double s = i % 3 == 0 ? 1e-7 : i % 3 == 1 ? 1.0 : 3e5;
        defo_mesh_add_node(m, test_range(&rng, -s, s), test_range(&rng, -s, s),
                           i == 5 ? 0.1 : test_range(&rng, -1, 1), NULL);
    }
    for (int e = 0; e < ne; e++) {
        defo_index n[10];
        int npe = order == 2 ? 10 : 4;
        for (int k = 0; k < npe; k++) n[k] = (defo_index)((e * 2 + k * 3) % nn);
        if (order == 1) n[3] = (defo_index)((e * 2 + 1) % nn);
        defo_mesh_add_elem(m, n, 0);
    }
    if (with_tris) {
        defo_index t[3] = {0, 4, 7}, u[3] = {2, 9, 11};
        defo_mesh_add_tri(m, t, 3, 0);
        defo_mesh_add_tri(m, u, 3, 0);
    }
    double pd[3 * 30], cd[9 * 5], sc[30];
    for (int i = 0; i < 3 * nn; i++) pd[i] = test_range(&rng, -1e3, 1e3);
    for (int i = 0; i < nn; i++) sc[i] = test_range(&rng, 0, 1);
    for (int i = 0; i < 9 * ne; i++) cd[i] = test_range(&rng, -1, 1) * 1e9;
    defo_mesh_add_field(m, "velocity", DEFO_FIELD_POINT, 3, pd);
    defo_mesh_add_field(m, "temperature", DEFO_FIELD_POINT, 1, sc);
    defo_mesh_add_field(m, "stress", DEFO_FIELD_CELL, 9, cd);
    defo_mesh_add_field(m, "von Mises & <co>", DEFO_FIELD_CELL, 1, cd + 7);
    return m;
}

/* Bitwise equality of everything a VTK file carries. */
static void check_same(const defo_mesh *a, const defo_mesh *b, const double *xa) {
    CHECK(b != NULL);
    if (!b) return;
    CHECK(a->num_nodes == b->num_nodes);
    CHECK(a->num_elems == b->num_elems);
    CHECK(a->order == b->order);
    CHECK(a->num_tris == b->num_tris);
    if (a->num_nodes != b->num_nodes || a->num_elems != b->num_elems ||
        a->num_tris != b->num_tris || a->order != b->order)
        return;
    CHECK(memcmp(xa ? xa : a->x, b->x, 3 * sizeof(double) * (size_t)a->num_nodes) == 0);
    if (a->num_elems)
        CHECK(memcmp(a->elems, b->elems,
                     sizeof(defo_index) * (size_t)a->num_elems * (size_t)a->nodes_per_elem) == 0);
    if (a->num_tris)
        CHECK(memcmp(a->tris, b->tris, sizeof(defo_index) * 3 * (size_t)a->num_tris) == 0);
    CHECK(a->num_fields == b->num_fields);
    for (int i = 0; i < a->num_fields; i++) {
        const defo_field *f = &a->fields[i];
        const defo_field *g = defo_mesh_find_field(b, f->name, f->location);
        CHECK_MSG(g != NULL, "field '%s' lost", f->name);
        if (!g) continue;
        CHECK(g->components == f->components);
        size_t n = (size_t)f->components *
                   (size_t)(f->location == DEFO_FIELD_POINT ? a->num_nodes : a->num_elems);
        if (g->components == f->components)
            CHECK_MSG(memcmp(f->data, g->data, n * sizeof(double)) == 0, "field '%s' differs",
                      f->name);
    }
}

static void round_trip(int order, int with_tris, int vtu, int binary) {
    defo_mesh *m = make_mesh(order, with_tris, order * 10 + binary);
    CHECK(m != NULL);
    if (!m) return;
    char path[512];
    snprintf(path, sizeof path, "%s/rt_o%d_t%d_%s.%s", DEFO_TEST_TMP, order, with_tris,
             binary ? "bin" : "ascii", vtu ? "vtu" : "vtk");
    defo_write_options o = wopts(binary);
    CHECK_OK(vtu ? defo_write_vtu(path, m, &o) : defo_write_vtk(path, m, &o));
    defo_mesh *r = NULL;
    CHECK_OK(read_with(vtu ? defo_read_vtu : defo_read_vtk, path, &r));
    check_same(m, r, NULL);
    defo_mesh_destroy(r);
    defo_mesh_destroy(m);
}

/* write -> read is the identity, bitwise, for all four encodings. */
static void test_round_trip_tet4(void) {
    for (int vtu = 0; vtu < 2; vtu++)
        for (int bin = 0; bin < 2; bin++) {
            round_trip(1, 0, vtu, bin);
            round_trip(1, 1, vtu, bin); /* mixed tets + triangles: cell data padded, kept */
        }
}

static void test_round_trip_tet10(void) {
    for (int vtu = 0; vtu < 2; vtu++)
        for (int bin = 0; bin < 2; bin++) round_trip(2, 0, vtu, bin);
}

/* opts->positions replaces mesh->x in the file (deformed output). */
static void test_positions_option(void) {
    defo_mesh *m = make_mesh(1, 0, 3);
    double *y = malloc(sizeof(double) * 3 * (size_t)m->num_nodes);
    for (int i = 0; i < 3 * m->num_nodes; i++) y[i] = m->x[i] * 1.5 + 0.25;
    for (int vtu = 0; vtu < 2; vtu++) {
        char path[512];
        snprintf(path, sizeof path, "%s/positions.%s", DEFO_TEST_TMP, vtu ? "vtu" : "vtk");
        defo_write_options o = wopts(1);
        o.positions = y;
        CHECK_OK(vtu ? defo_write_vtu(path, m, &o) : defo_write_vtk(path, m, &o));
        defo_mesh *r = NULL;
        CHECK_OK(read_with(vtu ? defo_read_vtu : defo_read_vtk, path, &r));
        check_same(m, r, y);
        defo_mesh_destroy(r);
    }
    free(y);
    defo_mesh_destroy(m);
}

/* A triangle-only surface round-trips through .vtu as triangles, no elements. */
static void test_surface_vtu(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(0, &m));
    defo_mesh_add_node(m, 0, 0, 0, NULL);
    defo_mesh_add_node(m, 1, 0, 0, NULL);
    defo_mesh_add_node(m, 0, 1, 0, NULL);
    defo_mesh_add_node(m, 0.1, 0.2, 1, NULL);
    defo_index t[2][3] = {{0, 1, 2}, {0, 3, 1}};
    defo_mesh_add_tri(m, t[0], 3, 0);
    defo_mesh_add_tri(m, t[1], 3, 0);
    char path[512];
    snprintf(path, sizeof path, "%s/surface.vtu", DEFO_TEST_TMP);
    defo_write_options o = wopts(0);
    CHECK_OK(defo_write_vtu(path, m, &o));
    defo_mesh *r = NULL;
    CHECK_OK(read_with(defo_read_vtu, path, &r));
    check_same(m, r, NULL);
    if (r) CHECK(r->order == 0 && r->nodes_per_tri == 3);
    defo_mesh_destroy(r);
    defo_mesh_destroy(m);
}

/* A hand-written .vtu exercising the tokenizer: comments, attribute order,
 * single quotes, odd whitespace, FieldData, big-endian UInt64 headers. */
static void test_vtu_tokenizer(void) {
    /* big-endian binary points: 4 points, header UInt64 = 96 */
    unsigned char raw[8 + 96];
    uint64_t nb = 96;
    for (int k = 0; k < 8; k++) raw[k] = (unsigned char)(nb >> (56 - 8 * k));
    double pts[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0.1, 0.2, 1};
    for (int i = 0; i < 12; i++) {
        uint64_t u;
        memcpy(&u, &pts[i], 8);
        for (int k = 0; k < 8; k++) raw[8 + 8 * i + k] = (unsigned char)(u >> (56 - 8 * k));
    }
    char b64[256];
    defo_base64_encode(raw, sizeof raw, b64);
    b64[defo_base64_encoded_size(sizeof raw)] = '\0';
    char doc[2048];
    snprintf(
        doc, sizeof doc,
        "<?xml version='1.0' encoding='utf-8'?>\n<!-- <VTKFile type=\"PolyData\"> -->\n"
        "<VTKFile header_type='UInt64'  byte_order = \"BigEndian\" type=\"UnstructuredGrid\">\n"
        "<UnstructuredGrid><FieldData><DataArray type=\"String\" Name=\"x\" "
        "format=\"ascii\">65 0</DataArray></FieldData>\n"
        "<Piece NumberOfCells=\"1\"\n NumberOfPoints=\"4\">\n"
        "<PointData><DataArray format=\"ascii\" NumberOfComponents=\"1\" Name=\"id\" "
        "type=\"Int32\">\n 7\n 8 9\t10 </DataArray></PointData>\n"
        "<Points><DataArray NumberOfComponents=\"3\" format=\"binary\" type=\"Float64\">\n"
        "   %s\n</DataArray></Points>\n"
        "<Cells><DataArray Name=\"types\" type=\"UInt8\" format=\"ascii\">10</DataArray>\n"
        "<DataArray Name=\"offsets\" type=\"Int64\" format=\"ascii\">4</DataArray>"
        "<DataArray Name=\"connectivity\" type=\"Int64\" format=\"ascii\">0 1 2 "
        "3</DataArray>\n</Cells></Piece></UnstructuredGrid></VTKFile>\n",
        b64);
    defo_mesh *m = NULL;
    CHECK_OK(defo_read_vtu(doc, strlen(doc), "tok.vtu", &m));
    if (!m) return;
    CHECK(m->num_nodes == 4 && m->num_elems == 1 && m->order == 1);
    CHECK(memcmp(m->x, pts, sizeof pts) == 0); /* big-endian decoded exactly */
    const defo_field *f = defo_mesh_find_field(m, "id", DEFO_FIELD_POINT);
    CHECK(f && f->components == 1 && f->data[0] == 7 && f->data[3] == 10);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------ meshio */
static int have_meshio(void) {
    static int cached = -1;
    if (cached < 0)
        cached = system(PY " -c 'import meshio' >/dev/null 2>&1") == 0 && access(PY, X_OK) == 0;
    if (!cached) TEST_REPORT("SKIPPED: %s cannot import meshio", PY);
    return cached;
}

static const char *DUMP_PY =
    "import sys, meshio, numpy as np\n"
    "m = meshio.read(sys.argv[1])\n"
    "o = ['points %d %d' % (len(m.points), m.points.size)]\n"
    "o.append(' '.join(repr(float(v)) for v in m.points.ravel()))\n"
    "for b in m.cells:\n"
    "    o.append('cells %s %d' % (b.type, b.data.size))\n"
    "    o.append(' '.join(str(int(v)) for v in b.data.ravel()))\n"
    "for k, v in m.point_data.items():\n"
    "    v = np.asarray(v).reshape(len(m.points), -1)\n"
    "    o.append('pdata %s %d %d' % (k.replace(' ', '%20'), v.shape[1], v.size))\n"
    "    o.append(' '.join(repr(float(x)) for x in v.ravel()))\n"
    "for k, blocks in m.cell_data.items():\n"
    "    for b, v in zip(m.cells, blocks):\n"
    "        if b.type in ('tetra', 'tetra10'):\n"
    "            v = np.asarray(v).reshape(len(b.data), -1)\n"
    "            o.append('cdata %s %d %d' % (k.replace(' ', '%20'), v.shape[1], v.size))\n"
    "            o.append(' '.join(repr(float(x)) for x in v.ravel()))\n"
    "o.append('end')\n"
    "print('\\n'.join(o))\n";

/* Run a python script file with one argument; stdout into a malloc'd string. */
static char *run_py(const char *script_name, const char *script, const char *arg) {
    char spath[512], cmd[1200];
    snprintf(spath, sizeof spath, "%s/%s", DEFO_TEST_TMP, script_name);
    FILE *f = fopen(spath, "w");
    if (!f) return NULL;
    fputs(script, f);
    fclose(f);
    snprintf(cmd, sizeof cmd, PY " '%s' '%s' 2>&1", spath, arg);
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    buf[n] = '\0';
    int rc = pclose(p);
    if (rc != 0) {
        fprintf(stderr, "python failed (%d): %s\n", rc, buf);
        free(buf);
        return NULL;
    }
    return buf;
}

static char *next_tok(char **p) {
    char *s = *p;
    while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r') s++;
    if (!*s) return NULL;
    char *e = s;
    while (*e && *e != ' ' && *e != '\n' && *e != '\t' && *e != '\r') e++;
    if (*e) *e++ = '\0';
    *p = e;
    return s;
}

/* Compare defo's mesh with meshio's dump of the same file, bitwise. */
static void compare_dump(const defo_mesh *m, char *dump, const char *what) {
    char *p = dump, *t;
    int checked_fields = 0;
    double maxdiff = 0;
    while ((t = next_tok(&p)) && strcmp(t, "end") != 0) {
        if (strcmp(t, "points") == 0) {
            long n = atol(next_tok(&p)), size = atol(next_tok(&p));
            CHECK_MSG(n == m->num_nodes, "%s: %ld points vs %d", what, n, (int)m->num_nodes);
            for (long i = 0; i < size; i++) {
                double v = strtod(next_tok(&p), NULL);
                if (i < 3L * m->num_nodes) maxdiff = fmax(maxdiff, fabs(v - m->x[i]));
                if (i < 3L * m->num_nodes && memcmp(&v, &m->x[i], 8) != 0) {
                    CHECK_MSG(0, "%s: coordinate %ld: meshio %.17g defo %.17g", what, i, v,
                              m->x[i]);
                    break;
                }
            }
        } else if (strcmp(t, "cells") == 0) {
            char *type = next_tok(&p);
            long size = atol(next_tok(&p));
            int tet = strcmp(type, "tetra") == 0 || strcmp(type, "tetra10") == 0;
            int tri = strcmp(type, "triangle") == 0 || strcmp(type, "triangle6") == 0;
            CHECK_MSG(tet || tri, "%s: unexpected meshio cell type %s", what, type);
            long want =
                tet ? (long)m->num_elems * m->nodes_per_elem : (long)m->num_tris * m->nodes_per_tri;
            CHECK_MSG(size == want, "%s: %s has %ld indices, defo %ld", what, type, size, want);
            const defo_index *c = tet ? m->elems : m->tris;
            int bad = 0;
            for (long i = 0; i < size; i++) {
                long v = atol(next_tok(&p));
                if (i < want && v != c[i]) bad++;
            }
            CHECK_MSG(bad == 0, "%s: %d %s indices differ", what, bad, type);
        } else if (strcmp(t, "pdata") == 0 || strcmp(t, "cdata") == 0) {
            defo_field_location loc = t[0] == 'p' ? DEFO_FIELD_POINT : DEFO_FIELD_CELL;
            char name[DEFO_NAME_MAX], *raw = next_tok(&p);
            size_t o = 0;
            for (size_t i = 0; raw[i] && o + 1 < sizeof name; i++) {
                if (strncmp(raw + i, "%20", 3) == 0)
                    name[o++] = ' ', i += 2;
                else
                    name[o++] = raw[i];
            }
            name[o] = '\0';
            int comps = atoi(next_tok(&p));
            long size = atol(next_tok(&p));
            const defo_field *f = defo_mesh_find_field(m, name, loc);
            CHECK_MSG(f != NULL, "%s: field '%s' missing in defo's mesh", what, name);
            if (f) CHECK(f->components == comps);
            int bad = 0;
            for (long i = 0; i < size; i++) {
                double v = strtod(next_tok(&p), NULL);
                if (f && f->components == comps && memcmp(&v, &f->data[i], 8) != 0) bad++;
            }
            CHECK_MSG(bad == 0, "%s: field '%s': %d values differ", what, name, bad);
            checked_fields++;
        } else {
            CHECK_MSG(0, "%s: bad dump token '%s'", what, t);
            break;
        }
    }
    TEST_REPORT("%s: %d nodes, %d elems, %d fields compared; max |dx| = %.17g", what,
                (int)m->num_nodes, (int)m->num_elems, checked_fields, maxdiff);
}

/* defo writes; meshio reads the same values (bitwise) in all four encodings. */
static void test_meshio_reads_defo(void) {
    if (!have_meshio()) return;
    for (int order = 1; order <= 2; order++)
        for (int vtu = 0; vtu < 2; vtu++)
            for (int bin = 0; bin < 2; bin++) {
                defo_mesh *m = make_mesh(order, order == 1, 40 + bin);
                char path[512];
                snprintf(path, sizeof path, "%s/to_meshio_o%d_%s.%s", DEFO_TEST_TMP, order,
                         bin ? "bin" : "ascii", vtu ? "vtu" : "vtk");
                defo_write_options o = wopts(bin);
                CHECK_OK(vtu ? defo_write_vtu(path, m, &o) : defo_write_vtk(path, m, &o));
                char *dump = run_py("dump.py", DUMP_PY, path);
                CHECK_MSG(dump != NULL, "meshio could not read %s", path);
                if (dump) compare_dump(m, dump, strrchr(path, '/') + 1);
                free(dump);
                defo_mesh_destroy(m);
            }
}

static const char *WRITE_PY =
    "import sys, meshio, numpy as np\n"
    "d = sys.argv[1]\n"
    "rng = np.random.default_rng(7)\n"
    "pts = rng.uniform(-1, 1, (10, 3)) * np.array([1e-3, 1.0, 1e3])\n"
    "cells = [('tetra', np.array([[0,1,2,3],[1,2,3,4],[4,5,6,7],[6,7,8,9],[0,5,9,2]]))]\n"
    "pd = {'temperature': rng.uniform(0, 1, 10), 'velocity': rng.uniform(-1, 1, (10, 3))}\n"
    "cd = {'stress': [rng.uniform(0, 1, 5)], 'label': [np.arange(5, dtype=np.int32)]}\n"
    "m = meshio.Mesh(pts, cells, point_data=pd, cell_data=cd)\n"
    "meshio.write(d + '/mio_ascii.vtu', m, binary=False)\n"
    "meshio.write(d + '/mio_binary.vtu', m, binary=True, compression=None)\n"
    "meshio.write(d + '/mio_binary64.vtu', m, binary=True, compression=None, "
    "header_type='UInt64')\n"
    "meshio.write(d + '/mio_zlib.vtu', m, binary=True)\n"
    "meshio.write(d + '/mio_ascii.vtk', m, binary=False)\n"
    "meshio.write(d + '/mio_binary.vtk', m, binary=True)\n"
    "meshio.vtk.write(d + '/mio_42_ascii.vtk', m, fmt_version='4.2', binary=False)\n"
    "meshio.vtk.write(d + '/mio_42_binary.vtk', m, fmt_version='4.2', binary=True)\n"
    "print('written')\n";

/* meshio writes; defo reads what meshio reads back from the same files. */
static void test_defo_reads_meshio(void) {
    if (!have_meshio()) return;
    char *out = run_py("write.py", WRITE_PY, DEFO_TEST_TMP);
    CHECK_MSG(out && strstr(out, "written"), "meshio failed to write: %s", out ? out : "");
    free(out);
    const char *files[] = {"mio_ascii.vtu",    "mio_binary.vtu", "mio_binary64.vtu",
                           "mio_ascii.vtk",    "mio_binary.vtk", "mio_42_ascii.vtk",
                           "mio_42_binary.vtk"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", DEFO_TEST_TMP, files[i]);
        defo_mesh *m = NULL;
        int vtu = strstr(files[i], ".vtu") != NULL;
        CHECK_OK(read_with(vtu ? defo_read_vtu : defo_read_vtk, path, &m));
        if (!m) continue;
        CHECK(m->num_nodes == 10 && m->num_elems == 5 && m->num_fields == 4);
        char *dump = run_py("dump.py", DUMP_PY, path);
        CHECK(dump != NULL);
        if (dump) compare_dump(m, dump, files[i]);
        free(dump);
        defo_mesh_destroy(m);
    }
    /* zlib-compressed .vtu (meshio's default): the same values meshio reads */
    char path[512];
    snprintf(path, sizeof path, "%s/mio_zlib.vtu", DEFO_TEST_TMP);
    defo_mesh *m = NULL;
    CHECK_OK(read_with(defo_read_vtu, path, &m));
    if (m) {
        CHECK(m->num_nodes == 10 && m->num_elems == 5 && m->num_fields == 4);
        char *dump = run_py("dump.py", DUMP_PY, path);
        CHECK(dump != NULL);
        if (dump) compare_dump(m, dump, "mio_zlib.vtu");
        free(dump);
    }
    defo_mesh_destroy(m);
}

/* defo writes zlib-compressed .vtu on request: read back bitwise (tet4 with
 * triangles, tet10, 1 and 2 blocks of 32 KiB and more), meshio reads the same
 * values, and the file is smaller than the uncompressed one when the data
 * repeat. */
static void test_compressed_write(void) {
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = make_mesh(order, order == 1, 70 + order);
        if (!m) continue;
        char path[512], plain[512];
        snprintf(path, sizeof path, "%s/zlib_o%d.vtu", DEFO_TEST_TMP, order);
        defo_write_options o = wopts(1);
        o.compress = 1;
        CHECK_OK(defo_write_vtu(path, m, &o));
        defo_mesh *r = NULL;
        CHECK_OK(read_with(defo_read_vtu, path, &r));
        check_same(m, r, NULL);
        defo_mesh_destroy(r);
        if (have_meshio()) {
            char *dump = run_py("dump.py", DUMP_PY, path);
            CHECK_MSG(dump != NULL, "meshio could not read %s", path);
            if (dump) compare_dump(m, dump, strrchr(path, '/') + 1);
            free(dump);
        }
        /* ASCII cannot be compressed: refused, nothing written */
        snprintf(plain, sizeof plain, "%s/zlib_ascii.vtu", DEFO_TEST_TMP);
        o.binary = 0;
        CHECK(defo_write_vtu(plain, m, &o) == DEFO_ERR_INVALID_ARGUMENT);
        CHECK(access(plain, F_OK) != 0);
        defo_mesh_destroy(m);
    }
    /* a box of 8000 nodes: Points (192 000 bytes) span several 32 KiB blocks */
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = bd.cells[1] = bd.cells[2] = 19;
    defo_mesh *box = NULL;
    CHECK_OK(defo_generate_box(&bd, &box));
    if (!box) return;
    char path[512], plain[512];
    snprintf(path, sizeof path, "%s/zlib_box.vtu", DEFO_TEST_TMP);
    snprintf(plain, sizeof plain, "%s/plain_box.vtu", DEFO_TEST_TMP);
    defo_write_options o = wopts(1);
    CHECK_OK(defo_write_vtu(plain, box, &o));
    o.compress = 1;
    CHECK_OK(defo_write_vtu(path, box, &o));
    defo_mesh *r = NULL;
    CHECK_OK(read_with(defo_read_vtu, path, &r));
    check_same(box, r, NULL);
    defo_mesh_destroy(r);
    struct stat a, b;
    if (stat(path, &a) == 0 && stat(plain, &b) == 0) {
        TEST_REPORT("box of %d nodes, %d tets: .vtu %lld bytes, zlib %lld bytes",
                    (int)box->num_nodes, (int)box->num_elems, (long long)b.st_size,
                    (long long)a.st_size);
        CHECK(a.st_size < b.st_size / 2);
    }
    if (have_meshio()) {
        char *dump = run_py("dump.py", DUMP_PY, path);
        CHECK_MSG(dump != NULL, "meshio could not read %s", path);
        if (dump) compare_dump(box, dump, "zlib_box.vtu");
        free(dump);
    }
    defo_mesh_destroy(box);
}

/* ------------------------------------------------------------ parts */
/* defo_mesh_write_parts: a tet4 box and a tet10 sphere in ONE .vtu, each with
 * its own cell type.  References: meshio's reading (tetra then tetra10
 * blocks, points, connectivity offset by the box's nodes, point and cell
 * fields, bitwise), and defo's own reading of the mixed grid: one tet10 mesh
 * whose sphere part is the sphere as written, whose box cells have their
 * corners and edge-midpoint nodes (appended after the file's points, point
 * data the mean of the edge ends), with the summed volume and a warning. */
static void test_parts_mixed_orders(void) {
    defo_box_def bd = defo_default_box_def();
    bd.cells[0] = 2;
    bd.cells[1] = bd.cells[2] = 1;
    defo_sphere_def sd = defo_default_sphere_def();
    sd.center[0] = 3;
    sd.radius = 0.6;
    sd.cell_size = 0.3;
    sd.order = 2;
    defo_mesh *box = NULL, *ball = NULL;
    CHECK_OK(defo_generate_box(&bd, &box));
    CHECK_OK(defo_generate_sphere(&sd, &ball));
    if (!box || !ball) {
        defo_mesh_destroy(box);
        defo_mesh_destroy(ball);
        return;
    }
    const defo_mesh *parts[2] = {box, ball};
    for (int p = 0; p < 2; p++) {
        defo_mesh *m = (defo_mesh *)parts[p];
        size_t nn = (size_t)m->num_nodes, ne = (size_t)m->num_elems;
        double *pd = malloc(3 * nn * sizeof *pd), *cd = malloc(ne * sizeof *cd);
        for (size_t i = 0; i < 3 * nn; i++) pd[i] = m->x[i] * m->x[i] + (double)p;
        for (size_t e = 0; e < ne; e++) cd[e] = (double)(100 * p) + (double)e / 7.0;
        CHECK_OK(defo_mesh_add_field(m, "disp", DEFO_FIELD_POINT, 3, pd));
        CHECK_OK(defo_mesh_add_field(m, "J", DEFO_FIELD_CELL, 1, cd));
        free(pd);
        free(cd);
    }
    for (int variant = 0; variant < 3; variant++) {
        char path[512];
        snprintf(path, sizeof path, "%s/parts_%d.vtu", DEFO_TEST_TMP, variant);
        defo_write_options o = wopts(variant != 0);
        o.compress = variant == 2;
        CHECK_OK(defo_mesh_write_parts(path, parts, 2, &o));
        if (have_meshio() && variant < 2) {
            char *dump = run_py("dump.py", DUMP_PY, path);
            CHECK(dump != NULL);
            if (dump) {
                char want[128];
                snprintf(want, sizeof want, "cells tetra %d", 4 * (int)box->num_elems);
                CHECK_MSG(strstr(dump, want) != NULL, "meshio: no '%s'", want);
                snprintf(want, sizeof want, "cells tetra10 %d", 10 * (int)ball->num_elems);
                CHECK_MSG(strstr(dump, want) != NULL, "meshio: no '%s'", want);
                /* the whole connectivity in meshio's order: box, then the ball offset */
                char *c = strstr(dump, "cells tetra ");
                long bad = 0;
                if (c) {
                    c = strchr(c, '\n') + 1;
                    for (defo_index k = 0; k < 4 * box->num_elems; k++)
                        bad += strtol(c, &c, 10) != box->elems[k];
                    c = strstr(c, "cells tetra10 ");
                    c = c ? strchr(c, '\n') + 1 : NULL;
                    for (defo_index k = 0; c && k < 10 * ball->num_elems; k++)
                        bad += strtol(c, &c, 10) != ball->elems[k] + box->num_nodes;
                }
                CHECK_MSG(bad == 0, "%ld connectivity entries differ", bad);
                free(dump);
            }
        }
        defo_mesh *r = NULL;
        defo_status s = read_with(defo_read_vtu, path, &r);
        CHECK(s == DEFO_WARNING);
        if (variant == 0) TEST_REPORT("%s", defo_last_error());
        if (!r) continue;
        defo_index n0 = box->num_nodes + ball->num_nodes;
        CHECK(r->order == 2 && r->num_elems == box->num_elems + ball->num_elems);
        CHECK(memcmp(r->x, box->x, 24 * (size_t)box->num_nodes) == 0);
        CHECK(memcmp(r->x + 3 * box->num_nodes, ball->x, 24 * (size_t)ball->num_nodes) == 0);
        long bad = 0;
        const defo_field *pd = defo_mesh_find_field(r, "disp", DEFO_FIELD_POINT);
        const defo_field *cd = defo_mesh_find_field(r, "J", DEFO_FIELD_CELL);
        CHECK(pd && cd);
        for (defo_index e = 0; pd && cd && e < r->num_elems; e++) {
            const defo_index *v = r->elems + 10 * (size_t)e;
            if (e < box->num_elems) {
                for (int k = 0; k < 4; k++) bad += v[k] != box->elems[4 * (size_t)e + (size_t)k];
                for (int k = 0; k < 6; k++) {
                    defo_index a = v[defo_tet_edges[k][0]], b = v[defo_tet_edges[k][1]],
                               mid = v[4 + k];
                    bad += mid < n0;
                    for (int j = 0; j < 3; j++) {
                        bad += r->x[3 * mid + j] != 0.5 * (r->x[3 * a + j] + r->x[3 * b + j]);
                        bad += pd->data[3 * mid + j] !=
                               0.5 * (pd->data[3 * a + j] + pd->data[3 * b + j]);
                    }
                }
                bad += cd->data[e] != (double)e / 7.0;
            } else {
                defo_index f = e - box->num_elems;
                for (int k = 0; k < 10; k++)
                    bad += v[k] != ball->elems[10 * (size_t)f + (size_t)k] + box->num_nodes;
                bad += cd->data[e] != 100.0 + (double)f / 7.0;
            }
        }
        CHECK_MSG(bad == 0, "variant %d: %ld mismatches in the mixed grid read back", variant, bad);
        double v_box = 0, v_ball = 0, v_all = 0;
        CHECK_OK(defo_element_volume(box, NULL, &v_box));
        CHECK_OK(defo_element_volume(ball, NULL, &v_ball));
        CHECK_OK(defo_element_volume(r, NULL, &v_all));
        CHECK_NEAR(v_all, v_box + v_ball, 1e-12 * (v_box + v_ball));
        defo_mesh_destroy(r);
    }
    /* a part without a field the first has is refused, nothing written */
    defo_mesh *bare = NULL;
    CHECK_OK(defo_mesh_clone(ball, &bare));
    if (bare) {
        for (int i = 0; i < bare->num_fields; i++) defo_free(bare->fields[i].data);
        bare->num_fields = 0;
        const defo_mesh *bad_parts[2] = {box, bare};
        char path[512];
        snprintf(path, sizeof path, "%s/parts_bad.vtu", DEFO_TEST_TMP);
        CHECK(defo_mesh_write_parts(path, bad_parts, 2, NULL) == DEFO_ERR_INVALID_ARGUMENT);
        CHECK(strstr(defo_last_error(), "part 1") != NULL);
        CHECK(access(path, F_OK) != 0);
        CHECK(defo_mesh_write_parts(DEFO_TEST_TMP "/parts.msh", parts, 2, NULL) ==
              DEFO_ERR_UNSUPPORTED);
    }
    defo_mesh_destroy(bare);
    defo_mesh_destroy(box);
    defo_mesh_destroy(ball);
}

/* ------------------------------------------------------------ appended */
/* Appended data as VTK and ParaView write it (vtkXMLUnstructuredGridWriter's
 * default data mode): every DataArray format="appended" with an offset into
 * <AppendedData encoding="raw"> (or "base64"), each array [byte count]
 * [values] or, with zlib, [#blocks][block][last][sizes][blocks] (blocks of 64
 * bytes here, so arrays span several).  Built here byte by byte with UInt32
 * and UInt64 headers; each must read exactly as the inline file of the same
 * mesh.  Raw bytes include '<' (0x3C), which no tokenizer may look at. */
typedef struct abuf {
    unsigned char *p;
    size_t n, cap;
} abuf;

static void ab_put(abuf *b, const void *p, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = 2 * (b->n + n) + 256;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void ab_int(abuf *b, uint64_t v, int hs) {
    if (hs == 8)
        ab_put(b, &v, 8);
    else {
        uint32_t w = (uint32_t)v;
        ab_put(b, &w, 4);
    }
}

/* One array's appended bytes (header + data, optionally zlib in 64-byte blocks). */
static void ab_array(abuf *b, const void *data, size_t n, int hs, int zlib) {
    if (!zlib) {
        ab_int(b, n, hs);
        ab_put(b, data, n);
        return;
    }
    const size_t bs = 64;
    size_t nb = (n + bs - 1) / bs;
    abuf z = {0};
    uint64_t *sizes = calloc(nb + 1, sizeof *sizes);
    for (size_t k = 0; k < nb; k++) {
        size_t len = k + 1 == nb ? n - k * bs : bs;
        uLongf out = compressBound((uLong)len);
        unsigned char *tmp = malloc(out);
        compress2(tmp, &out, (const unsigned char *)data + k * bs, (uLong)len, 9);
        ab_put(&z, tmp, out);
        sizes[k] = out;
        free(tmp);
    }
    ab_int(b, nb, hs);
    ab_int(b, bs, hs);
    ab_int(b, n % bs, hs);
    for (size_t k = 0; k < nb; k++) ab_int(b, sizes[k], hs);
    ab_put(b, z.p, z.n);
    free(z.p);
    free(sizes);
}

static char *appended_vtu(const defo_mesh *m, int hs, int zlib, int base64, size_t *size) {
    const defo_field *vel = defo_mesh_find_field(m, "velocity", DEFO_FIELD_POINT);
    const defo_field *st = defo_mesh_find_field(m, "stress", DEFO_FIELD_CELL);
    size_t nc = (size_t)m->num_elems, npe = (size_t)m->nodes_per_elem;
    int64_t *conn = malloc(nc * npe * sizeof *conn), *offs = malloc(nc * sizeof *offs);
    uint8_t *types = malloc(nc);
    for (size_t i = 0; i < nc * npe; i++) conn[i] = m->elems[i];
    for (size_t c = 0; c < nc; c++) {
        offs[c] = (int64_t)((c + 1) * npe);
        types[c] = npe == 10 ? 24 : 10;
    }
    const void *data[6] = {vel->data, st->data, m->x, conn, offs, types};
    size_t bytes[6] = {
        24 * (size_t)m->num_nodes, 72 * nc, 24 * (size_t)m->num_nodes, 8 * nc * npe, 8 * nc, nc};
    size_t off[6];
    abuf app = {0};
    for (int a = 0; a < 6; a++) {
        abuf one = {0};
        ab_array(&one, data[a], bytes[a], hs, zlib);
        off[a] = app.n;
        if (base64) {
            char *t = malloc(defo_base64_encoded_size(one.n) + 1);
            defo_base64_encode(one.p, one.n, t);
            ab_put(&app, t, defo_base64_encoded_size(one.n));
            free(t);
        } else {
            ab_put(&app, one.p, one.n);
        }
        free(one.p);
    }
    char head[4096];
    int k = snprintf(
        head, sizeof head,
        "<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" "
        "byte_order=\"LittleEndian\" header_type=\"%s\"%s>\n<UnstructuredGrid>\n"
        "<Piece NumberOfPoints=\"%d\" NumberOfCells=\"%d\">\n"
        "<PointData><DataArray type=\"Float64\" Name=\"velocity\" NumberOfComponents=\"3\" "
        "format=\"appended\" offset=\"%zu\"/></PointData>\n"
        "<CellData><DataArray type=\"Float64\" Name=\"stress\" NumberOfComponents=\"9\" "
        "format=\"appended\" offset=\"%zu\"/></CellData>\n"
        "<Points><DataArray type=\"Float64\" NumberOfComponents=\"3\" format=\"appended\" "
        "offset=\"%zu\"/></Points>\n<Cells>\n"
        "<DataArray type=\"Int64\" Name=\"connectivity\" format=\"appended\" offset=\"%zu\"/>\n"
        "<DataArray type=\"Int64\" Name=\"offsets\" format=\"appended\" offset=\"%zu\"/>\n"
        "<DataArray type=\"UInt8\" Name=\"types\" format=\"appended\" offset=\"%zu\"/>\n"
        "</Cells>\n</Piece>\n</UnstructuredGrid>\n<AppendedData encoding=\"%s\">\n   _",
        hs == 8 ? "UInt64" : "UInt32", zlib ? " compressor=\"vtkZLibDataCompressor\"" : "",
        (int)m->num_nodes, (int)nc, off[0], off[1], off[2], off[3], off[4], off[5],
        base64 ? "base64" : "raw");
    const char *tail = "\n</AppendedData>\n</VTKFile>\n";
    *size = (size_t)k + app.n + strlen(tail);
    char *doc = malloc(*size + 1);
    memcpy(doc, head, (size_t)k);
    memcpy(doc + k, app.p, app.n);
    memcpy(doc + k + app.n, tail, strlen(tail) + 1);
    free(app.p);
    free(conn);
    free(offs);
    free(types);
    return doc;
}

static void test_appended(void) {
    int cases = 0;
    for (int order = 1; order <= 2; order++) {
        defo_mesh *m = make_mesh(order, 0, 90 + order);
        if (!m) continue;
        for (int hs = 4; hs <= 8; hs += 4)
            for (int zlib = 0; zlib < 2; zlib++)
                for (int b64 = 0; b64 < 2; b64++) {
                    size_t size;
                    char *doc = appended_vtu(m, hs, zlib, b64, &size);
                    int has_lt = 0;
                    for (size_t i = 0; !b64 && i < size; i++) has_lt += doc[i] == '<';
                    defo_mesh *r = NULL;
                    defo_status s = defo_read_vtu(doc, size, "appended.vtu", &r);
                    CHECK_MSG(s == DEFO_OK, "order %d header %d zlib %d base64 %d: %s", order, hs,
                              zlib, b64, defo_last_error());
                    if (r) {
                        CHECK(r->num_nodes == m->num_nodes && r->num_elems == m->num_elems &&
                              r->order == order);
                        CHECK(memcmp(r->x, m->x, 24 * (size_t)m->num_nodes) == 0);
                        CHECK(memcmp(r->elems, m->elems,
                                     sizeof(defo_index) * (size_t)m->num_elems *
                                         (size_t)m->nodes_per_elem) == 0);
                        const defo_field *a = defo_mesh_find_field(r, "velocity", DEFO_FIELD_POINT),
                                         *b = defo_mesh_find_field(r, "stress", DEFO_FIELD_CELL);
                        const defo_field *a0 =
                                             defo_mesh_find_field(m, "velocity", DEFO_FIELD_POINT),
                                         *b0 = defo_mesh_find_field(m, "stress", DEFO_FIELD_CELL);
                        CHECK(a && b && r->num_fields == 2);
                        if (a && b) {
                            CHECK(memcmp(a->data, a0->data, 24 * (size_t)m->num_nodes) == 0);
                            CHECK(memcmp(b->data, b0->data, 72 * (size_t)m->num_elems) == 0);
                        }
                        cases++;
                    }
                    defo_mesh_destroy(r);
                    /* every prefix is refused or read, never misread (ASan) */
                    int refused = 0;
                    for (size_t cut = 1; cut < size; cut += 1 + size / 97) {
                        defo_mesh *t = NULL;
                        if (defo_read_vtu(doc, cut, "cut.vtu", &t) < 0) refused++;
                        defo_mesh_destroy(t);
                    }
                    CHECK(refused > 0);
                    if (order == 1 && hs == 4 && zlib == 0 && b64 == 0)
                        TEST_REPORT("raw appended tet4: %zu bytes, %d of them '<'", size, has_lt);
                    free(doc);
                }
        defo_mesh_destroy(m);
    }
    TEST_REPORT("%d appended files (raw/base64, zlib or not, UInt32/UInt64, tet4/tet10) read "
                "exactly",
                cases);
    CHECK(cases == 16);
}

/* ------------------------------------------------------------ pvd */
static void test_pvd(void) {
    char path[512], f0[512], f1[512];
    snprintf(path, sizeof path, "%s/series.pvd", DEFO_TEST_TMP);
    snprintf(f0, sizeof f0, "%s/frames/frame_0000.vtu", DEFO_TEST_TMP);
    snprintf(f1, sizeof f1, "/elsewhere/a&b.vtu");
    const char *files[3] = {f0, f1, "rel/frame_0002.vtu"};
    double times[3] = {0.0, 0.1, 1.0 / 3.0};
    CHECK_OK(defo_pvd_write(path, times, files, 3));
    char *data;
    size_t size;
    CHECK_OK(defo_read_file(path, &data, &size));
    if (!data) return;
    /* relative to the .pvd's folder; others kept; '&' escaped; times exact */
    CHECK(strstr(data, "file=\"frames/frame_0000.vtu\"") != NULL);
    CHECK(strstr(data, "file=\"/elsewhere/a&amp;b.vtu\"") != NULL);
    CHECK(strstr(data, "timestep=\"0.1\"") != NULL);
    CHECK(strstr(data, "timestep=\"0.33333333333333331\"") != NULL ||
          strstr(data, "timestep=\"0.3333333333333333\"") != NULL);
    CHECK(strstr(data, "type=\"Collection\"") != NULL);
    defo_free(data);
    /* a folder that does not exist: an error naming it, and no file left */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.pvd", DEFO_TEST_TMP);
    CHECK(defo_pvd_write(bad, times, files, 3) < 0);
    CHECK(access(bad, F_OK) != 0);
    CHECK(defo_pvd_write(path, times, NULL, 3) == DEFO_ERR_INVALID_ARGUMENT);
}

/* A failed write leaves neither a partial file nor the temporary. */
static void test_atomic_write_failure(void) {
    defo_mesh *m = make_mesh(1, 0, 1);
    char bad[512];
    snprintf(bad, sizeof bad, "%s/missing_dir/out.vtu", DEFO_TEST_TMP);
    defo_write_options o = wopts(1);
    CHECK(defo_write_vtu(bad, m, &o) < 0);
    CHECK(access(bad, F_OK) != 0);
    CHECK(strstr(defo_last_error(), "missing_dir") != NULL);
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------ broken */
typedef struct broken_case {
    const char *file;
    defo_status status;
    char where; /* 'L': "file:line:", 'B': "file: byte N:", 'N': "file:" */
} broken_case;

static void test_broken_corpus(void) {
    static const broken_case cases[] = {
        {"vtu_truncated.vtu", DEFO_ERR_PARSE, 'L'},
        {"vtu_count_mismatch.vtu", DEFO_ERR_PARSE, 'L'},
        {"vtu_index_range.vtu", DEFO_ERR_PARSE, 'L'},
        {"vtu_nan.vtu", DEFO_ERR_PARSE, 'L'},
        {"vtu_hexahedron.vtu", DEFO_ERR_UNSUPPORTED, 'L'},
        {"vtu_bad_base64.vtu", DEFO_ERR_PARSE, 'L'},
        {"vtu_malformed_xml.vtu", DEFO_ERR_PARSE, 'L'},
        {"vtu_compressed.vtu", DEFO_ERR_PARSE, 'L'},       /* corrupt zlib block */
        {"vtu_zlib_huge_block.vtu", DEFO_ERR_PARSE, 'L'},  /* 4 GB from 18 bytes */
        {"vtu_zlib_block_count.vtu", DEFO_ERR_PARSE, 'L'}, /* 1e6 blocks announced */
        {"vtu_lz4.vtu", DEFO_ERR_UNSUPPORTED, 'L'},
        {"vtu_appended.vtu", DEFO_ERR_PARSE, 'L'}, /* appended, no <AppendedData> */
        {"vtu_absurd_count.vtu", DEFO_ERR_PARSE, 'L'},
        {"vtu_binary_header.vtu", DEFO_ERR_PARSE, 'L'},
        {"vtu_unterminated_attr.vtu", DEFO_ERR_PARSE, 'L'},
        {"vtk_truncated.vtk", DEFO_ERR_PARSE, 'L'},
        {"vtk_cells_count.vtk", DEFO_ERR_PARSE, 'L'},
        {"vtk_index_range.vtk", DEFO_ERR_PARSE, 'L'},
        {"vtk_inf.vtk", DEFO_ERR_PARSE, 'L'},
        {"vtk_wedge.vtk", DEFO_ERR_UNSUPPORTED, 'L'},
        {"vtk_absurd_count.vtk", DEFO_ERR_PARSE, 'L'},
        {"vtk_polydata.vtk", DEFO_ERR_UNSUPPORTED, 'L'},
        {"vtk_field_tuples.vtk", DEFO_ERR_PARSE, 'L'},
        {"vtk_cell_data_count.vtk", DEFO_ERR_PARSE, 'L'},
        {"vtk_binary_truncated.vtk", DEFO_ERR_PARSE, 'L'},
        {"vtk_binary_nan.vtk", DEFO_ERR_PARSE, 'B'},
        {"vtk_binary_cells.vtk", DEFO_ERR_PARSE, 'B'},
        {"vtk_not_vtk.vtk", DEFO_ERR_PARSE, 'L'},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/broken/%s", DEFO_DATA_DIR, cases[i].file);
        defo_mesh *m = (defo_mesh *)&m; /* must be reset to NULL */
        int vtu = strstr(cases[i].file, ".vtu") != NULL;
        defo_status s = read_with(vtu ? defo_read_vtu : defo_read_vtk, path, &m);
        const char *msg = defo_last_error();
        CHECK_MSG(s == cases[i].status, "%s: status %s, expected %s (%s)", cases[i].file,
                  defo_status_name(s), defo_status_name(cases[i].status), msg);
        CHECK_MSG(m == NULL, "%s: *out not NULL", cases[i].file);
        const char *at = strstr(msg, path);
        CHECK_MSG(at != NULL, "%s: message does not name the file: %s", cases[i].file, msg);
        if (at) {
            const char *after = at + strlen(path);
            int ok = cases[i].where == 'L'   ? after[0] == ':' && after[1] >= '0' && after[1] <= '9'
                     : cases[i].where == 'B' ? strncmp(after, ": byte ", 7) == 0
                                             : after[0] == ':';
            CHECK_MSG(ok, "%s: message lacks the %s: %s", cases[i].file,
                      cases[i].where == 'L' ? "line" : "byte offset", msg);
        }
        printf("  %-28s %s\n", cases[i].file,
               strstr(msg, "/broken/") ? strstr(msg, "/broken/") + 8 : msg);
    }
}

/* Every prefix of a valid file is either read or refused cleanly (ASan
 * checks no byte past the end is touched and nothing leaks). */
static void test_truncations(void) {
    for (int vtu = 0; vtu < 2; vtu++)
        for (int bin = 0; bin < 2; bin++) {
            defo_mesh *m = make_mesh(1, 1, 5);
            char path[512];
            snprintf(path, sizeof path, "%s/trunc_%d.%s", DEFO_TEST_TMP, bin, vtu ? "vtu" : "vtk");
            defo_write_options o = wopts(bin);
            CHECK_OK(vtu ? defo_write_vtu(path, m, &o) : defo_write_vtk(path, m, &o));
            defo_mesh_destroy(m);
            char *data;
            size_t size;
            CHECK_OK(defo_read_file(path, &data, &size));
            int refused = 0, step = (int)TEST_HEAVY(1) == 1 ? 1 : 7;
            for (size_t n = 0; n < size; n += (size_t)step) {
                char *copy = malloc(n ? n : 1); /* exact size so ASan sees overreads */
                memcpy(copy, data, n);
                defo_mesh *r = NULL;
                defo_status s = (vtu ? defo_read_vtu : defo_read_vtk)(copy, n, "t", &r);
                if (s < 0) refused++;
                CHECK((s < 0) == (r == NULL));
                defo_mesh_destroy(r);
                free(copy);
            }
            /* .vtu: every proper prefix but the trailing newline is refused.
             * Legacy files have no end marker: a cut at a section boundary or
             * (ASCII) inside a section's last number is a well-formed shorter file,
             * so a few percent of its prefixes are accepted. */
            int total = (int)(size / (size_t)step);
            int allowed = vtu ? 2 : total / 50;
            CHECK_MSG(refused >= total - allowed, "%s: %d of %d prefixes refused", path, refused,
                      total);
            TEST_REPORT("%s: %d of %d prefixes refused", strrchr(path, '/') + 1, refused, total);
            defo_free(data);
        }
}

int main(void) {
    RUN(test_round_trip_tet4);
    RUN(test_round_trip_tet10);
    RUN(test_positions_option);
    RUN(test_surface_vtu);
    RUN(test_vtu_tokenizer);
    RUN(test_meshio_reads_defo);
    RUN(test_defo_reads_meshio);
    RUN(test_compressed_write);
    RUN(test_appended);
    RUN(test_parts_mixed_orders);
    RUN(test_pvd);
    RUN(test_atomic_write_failure);
    RUN(test_broken_corpus);
    RUN(test_truncations);
    return test_summary();
}
