/*
 * tests/test_io_surface.c — OBJ, STL, OFF and PLY surfaces: the real scanned
 * meshes in data/meshes (counts from data/meshes/README.md, closedness),
 * conversions by meshio read back to the same triangles and vertex set,
 * hand-written inputs for every syntax variant, the OBJ round trip (bitwise),
 * and the broken-file corpus data/broken/{obj,stl,off,ply}_*.
 */
#include "defo/element.h"
#include "defo/io.h"
#include "io/formats.h"
#include "test.h"

#include <stdint.h>
#include <unistd.h>

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

static defo_status read_mem(reader_fn fn, const char *text, defo_mesh **m) {
    return fn(text, strlen(text), "mem", m);
}

static int cmp_edge(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    return (*x > *y) - (*x < *y);
}

/* Closed and consistently oriented: every directed edge (a,b) appears once
 * and its reverse (b,a) once, i.e. every undirected edge is used twice. */
static int surface_closed(const defo_mesh *m) {
    size_t n = 3 * (size_t)m->num_tris;
    int64_t *e = malloc(n * sizeof(int64_t));
    for (defo_index t = 0; t < m->num_tris; t++)
        for (int k = 0; k < 3; k++) {
            int64_t a = m->tris[3 * t + k], b = m->tris[3 * t + (k + 1) % 3];
            e[3 * t + k] = a * (int64_t)m->num_nodes + b;
        }
    qsort(e, n, sizeof(int64_t), cmp_edge);
    int ok = 1;
    for (size_t i = 0; i < n && ok; i++) {
        if (i + 1 < n && e[i + 1] == e[i]) ok = 0; /* directed edge twice */
        int64_t a = e[i] / m->num_nodes, b = e[i] % m->num_nodes;
        int64_t rev = b * (int64_t)m->num_nodes + a;
        if (!bsearch(&rev, e, n, sizeof(int64_t), cmp_edge)) ok = 0; /* border edge */
    }
    free(e);
    return ok;
}

/* The real meshes: counts as documented, closed after reading. */
static void test_real_meshes(void) {
    const struct {
        const char *file;
        int nv, nt;
    } meshes[] = {{"bunny.off", 1839, 3674}, {"eight.off", 315, 634}};
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/meshes/%s", DEFO_DATA_DIR, meshes[i].file);
        defo_mesh *m = NULL;
        CHECK_OK(read_with(defo_read_off, path, &m));
        if (!m) continue;
        CHECK(m->num_nodes == meshes[i].nv);
        CHECK(m->num_tris == meshes[i].nt);
        CHECK(m->order == 0 && m->num_elems == 0 && m->nodes_per_tri == 3);
        CHECK(surface_closed(m));
        /* Euler characteristic V - E + F = 2 - 2g with E = 3F/2 */
        int genus = (2 - (m->num_nodes - 3 * m->num_tris / 2 + m->num_tris)) / 2;
        TEST_REPORT("%s: %d vertices, %d triangles, closed, genus %d", meshes[i].file,
                    (int)m->num_nodes, (int)m->num_tris, genus);
        CHECK(genus == (i == 0 ? 0 : 2));
        defo_mesh_destroy(m);
    }
}

/* write_obj -> read_obj is the identity (bitwise coordinates, same triangles). */
static void test_obj_round_trip(void) {
    char path[512], out[512];
    snprintf(path, sizeof path, "%s/meshes/bunny.off", DEFO_DATA_DIR);
    snprintf(out, sizeof out, "%s/bunny_rt.obj", DEFO_TEST_TMP);
    defo_mesh *m = NULL, *r = NULL;
    CHECK_OK(read_with(defo_read_off, path, &m));
    if (!m) return;
    /* perturb to values without short decimals, so the writer must be exact */
    for (int i = 0; i < 3 * m->num_nodes; i++) m->x[i] = m->x[i] / 3.0 + 1e-9 * i;
    defo_write_options o;
    memset(&o, 0, sizeof o);
    CHECK_OK(defo_write_obj(out, m, &o));
    CHECK_OK(read_with(defo_read_obj, out, &r));
    if (r) {
        CHECK(r->num_nodes == m->num_nodes && r->num_tris == m->num_tris);
        if (r->num_nodes == m->num_nodes && r->num_tris == m->num_tris) {
            CHECK(memcmp(r->x, m->x, sizeof(double) * 3 * (size_t)m->num_nodes) == 0);
            CHECK(memcmp(r->tris, m->tris, sizeof(defo_index) * 3 * (size_t)m->num_tris) == 0);
        }
    }
    defo_mesh_destroy(r);
    /* positions option */
    double *y = malloc(sizeof(double) * 3 * (size_t)m->num_nodes);
    for (int i = 0; i < 3 * m->num_nodes; i++) y[i] = -m->x[i];
    o.positions = y;
    CHECK_OK(defo_write_obj(out, m, &o));
    CHECK_OK(read_with(defo_read_obj, out, &r));
    if (r && r->num_nodes == m->num_nodes)
        CHECK(memcmp(r->x, y, sizeof(double) * 3 * (size_t)m->num_nodes) == 0);
    defo_mesh_destroy(r);
    free(y);
    defo_mesh_destroy(m);
}

/* A tet mesh without triangles is written as its boundary surface: a single
 * tet gives 4 outward triangles (closed), and only its 4 corners. */
static void test_obj_boundary(void) {
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_create(1, &m));
    defo_mesh_add_node(m, 9, 9, 9, NULL); /* unused: must not be written */
    defo_mesh_add_node(m, 0, 0, 0, NULL);
    defo_mesh_add_node(m, 1, 0, 0, NULL);
    defo_mesh_add_node(m, 0, 1, 0, NULL);
    defo_mesh_add_node(m, 0, 0, 1, NULL);
    defo_index e[4] = {1, 2, 3, 4};
    defo_mesh_add_elem(m, e, 0);
    char out[512];
    snprintf(out, sizeof out, "%s/tet_boundary.obj", DEFO_TEST_TMP);
    CHECK_OK(defo_write_obj(out, m, NULL));
    defo_mesh *r = NULL;
    CHECK_OK(read_with(defo_read_obj, out, &r));
    if (r) {
        CHECK(r->num_nodes == 4 && r->num_tris == 4);
        CHECK(surface_closed(r));
        /* outward: the signed volume of the closed surface is +1/6 */
        double vol = 0;
        for (int t = 0; t < r->num_tris; t++) {
            const double *a = r->x + 3 * r->tris[3 * t], *b = r->x + 3 * r->tris[3 * t + 1],
                         *c = r->x + 3 * r->tris[3 * t + 2];
            vol += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
                    a[2] * (b[0] * c[1] - b[1] * c[0])) /
                   6.0;
        }
        CHECK_NEAR(vol, 1.0 / 6.0, 1e-15);
    }
    defo_mesh_destroy(r);
    defo_mesh_destroy(m);
}

/* Signed volume enclosed by a closed triangle surface (divergence theorem). */
static double enclosed_volume(const defo_mesh *r) {
    double vol = 0;
    for (defo_index t = 0; t < r->num_tris; t++) {
        const double *a = r->x + 3 * r->tris[3 * t], *b = r->x + 3 * r->tris[3 * t + 1],
                     *c = r->x + 3 * r->tris[3 * t + 2];
        vol += (a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0]) +
                a[2] * (b[0] * c[1] - b[1] * c[0])) /
               6.0;
    }
    return vol;
}

/* A tet10 mesh's curved boundary: every 6-node face becomes the 4 flat
 * triangles through its edge nodes.  References: counts (4 triangles per
 * boundary face, every corner and edge node of the boundary a vertex), a
 * closed outward surface, and on a sphere whose boundary edge nodes lie on
 * the sphere the enclosed volume approaches the exact curved volume
 * (defo_element_volume) much closer than the corner-only surface does
 * (piecewise-flat error O(h^2): halving the edge length quarters it). */
static void test_obj_curved_boundary(void) {
    defo_sphere_def sd = defo_default_sphere_def();
    sd.radius = 1;
    sd.cell_size = 0.4;
    sd.order = 2;
    defo_mesh *m = NULL, *lin = NULL;
    CHECK_OK(defo_generate_sphere(&sd, &m));
    sd.order = 1;
    CHECK_OK(defo_generate_sphere(&sd, &lin));
    if (!m || !lin) {
        defo_mesh_destroy(m);
        defo_mesh_destroy(lin);
        return;
    }
    defo_boundary b;
    CHECK_OK(defo_mesh_boundary(m, 1, &b));
    char *used = calloc((size_t)m->num_nodes, 1);
    defo_index nused = 0;
    for (size_t k = 0; k < 6 * (size_t)b.num_faces; k++)
        if (!used[b.faces[k]]++) nused++;
    free(used);
    char out[512];
    snprintf(out, sizeof out, "%s/sphere_tet10.obj", DEFO_TEST_TMP);
    CHECK_OK(defo_mesh_write(out, m, NULL));
    defo_mesh *r = NULL;
    CHECK_OK(read_with(defo_read_obj, out, &r));
    double exact = 0, flat = 0;
    CHECK_OK(defo_element_volume(m, NULL, &exact));
    CHECK_OK(defo_element_volume(lin, NULL, &flat)); /* same corners, flat faces */
    if (r) {
        CHECK_MSG(r->num_tris == 4 * b.num_faces, "%d triangles for %d faces", (int)r->num_tris,
                  (int)b.num_faces);
        CHECK(r->num_nodes == nused);
        CHECK(surface_closed(r));
        double v = enclosed_volume(r);
        TEST_REPORT("sphere r=1 tet10: exact %.6f, OBJ (4 per face) %.6f, corners only %.6f", exact,
                    v, flat);
        CHECK(fabs(v - exact) < 0.35 * fabs(flat - exact));
        CHECK(v < exact && v > flat); /* inscribed both ways, the finer one closer */
    }
    defo_mesh_destroy(r);
    defo_boundary_free(&b);
    /* a straight-sided tet10 (a box) keeps its volume exactly */
    defo_box_def bd = defo_default_box_def();
    bd.order = 2;
    bd.cells[0] = 2;
    bd.cells[1] = bd.cells[2] = 1;
    defo_mesh *box = NULL;
    CHECK_OK(defo_generate_box(&bd, &box));
    snprintf(out, sizeof out, "%s/box_tet10.obj", DEFO_TEST_TMP);
    if (box) CHECK_OK(defo_mesh_write(out, box, NULL));
    r = NULL;
    CHECK_OK(read_with(defo_read_obj, out, &r));
    if (r) {
        CHECK(surface_closed(r));
        CHECK_NEAR(enclosed_volume(r), 1.0, 1e-14);
    }
    defo_mesh_destroy(r);
    defo_mesh_destroy(box);
    defo_mesh_destroy(m);
    defo_mesh_destroy(lin);
}

/* Hand-written syntax variants, checked against the values in the text. */
static void test_obj_syntax(void) {
    const char *obj = "# comment\nmtllib x.mtl\no thing\nv 0 0 0\nv 1 0 0 1.0\nv 1 1 0\nv 0 1 0\n"
                      "vt 0 0\nvn 0 0 1\ng grp\ns off\nusemtl m\n"
                      "f 1/1/1 2/1/1 3/1/1 4/1/1\n" /* quad -> 2 triangles */
                      "f 1//1 3//1 4//1\nf -4 -3 -1\nl 1 2\nv 0 0 1\nf 1/1 2/1 -1/1\n";
    defo_mesh *m = NULL;
    CHECK_OK(read_mem(defo_read_obj, obj, &m));
    if (!m) return;
    CHECK(m->num_nodes == 5 && m->num_tris == 5);
    const defo_index want[15] = {0, 1, 2, 0, 2, 3, 0, 2, 3, 0, 1, 3, 0, 1, 4};
    if (m->num_tris == 5) CHECK(memcmp(m->tris, want, sizeof want) == 0);
    defo_mesh_destroy(m);
}

static void test_off_syntax(void) {
    const char *off = "# leading comment\nCOFF # colours follow\n\n5 2 0\n0 0 0 255 0 0 255\n"
                      "1 0 0 0 255 0 255\n1 1 0 1 1 1 1\n0 1 0 # comment\n0.5 0.5 1 1 1 1 1\n"
                      "4 0 1 2 3 255 0 0\n3 0 1 4\n";
    defo_mesh *m = NULL;
    CHECK_OK(read_mem(defo_read_off, off, &m));
    if (!m) return;
    CHECK(m->num_nodes == 5 && m->num_tris == 3);
    CHECK(m->x[12] == 0.5 && m->x[14] == 1.0);
    const defo_index want[9] = {0, 1, 2, 0, 2, 3, 0, 1, 4};
    if (m->num_tris == 3) CHECK(memcmp(m->tris, want, sizeof want) == 0);
    defo_mesh_destroy(m);
    /* counts on the header line */
    CHECK_OK(read_mem(defo_read_off, "OFF 3 1 0\n0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n", &m));
    if (m) CHECK(m->num_nodes == 3 && m->num_tris == 1);
    defo_mesh_destroy(m);
}

/* ASCII STL: welding shares the two corners of the common edge. */
static void test_stl_ascii(void) {
    const char *stl = "solid two\n facet normal 0 0 1\n  outer loop\n   vertex 0 0 0\n"
                      "   vertex 1 0 0\n   vertex 1 1 0\n  endloop\n endfacet\n"
                      " facet normal 0 0 1\n  outer loop\n   vertex 0 0 0\n   vertex 1 1 0\n"
                      "   vertex 0 1 0\n  endloop\n endfacet\nendsolid two\n";
    defo_mesh *m = NULL;
    CHECK_OK(read_mem(defo_read_stl, stl, &m));
    if (!m) return;
    CHECK(m->num_nodes == 4 && m->num_tris == 2);
    const defo_index want[6] = {0, 1, 2, 0, 2, 3};
    if (m->num_tris == 2) CHECK(memcmp(m->tris, want, sizeof want) == 0);
    defo_mesh_destroy(m);
}

static void put_f32(unsigned char *p, float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    for (int k = 0; k < 4; k++) p[k] = (unsigned char)(u >> (8 * k));
}

/* Binary STL whose 80-byte header starts with "solid": detected by size. */
static void test_stl_binary_solid_header(void) {
    unsigned char buf[84 + 2 * 50];
    memset(buf, 0, sizeof buf);
    memcpy(buf, "solid exported by a CAD tool", 28);
    buf[80] = 2;
    const float v[2][9] = {{0, 0, 0, 1, 0, 0, 1, 1, 0}, {0, 0, 0, 1, 1, 0, 0, 1, 0.1f}};
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 9; k++) put_f32(buf + 84 + 50 * t + 12 + 4 * k, v[t][k]);
    defo_mesh *m = NULL;
    CHECK_OK(defo_read_stl((const char *)buf, sizeof buf, "bin.stl", &m));
    if (!m) return;
    CHECK(m->num_nodes == 4 && m->num_tris == 2);
    CHECK(m->x[11] == (double)0.1f); /* float -> double exactly */
    defo_mesh_destroy(m);
}

/* PLY: extra vertex properties of every size are skipped correctly, uchar
 * and int list counts, an unrelated element, ASCII and binary. */
static void test_ply_syntax(void) {
    const char *ascii = "ply\nformat ascii 1.0\ncomment made by hand\n"
                        "element vertex 4\nproperty uchar red\nproperty double x\n"
                        "property float y\nproperty short s\nproperty float z\n"
                        "property list uchar float junk\n"
                        "element face 2\nproperty int flags\nproperty list int int vertex_index\n"
                        "element edge 1\nproperty int a\nproperty int b\nend_header\n"
                        "1 0 0 7 0 2 9 9\n2 1 0 7 0 0\n3 1 1 7 0 1 5\n4 0.5 0.25 7 2 0\n"
                        "0 4 0 1 2 3\n1 3 0 1 3\n0 1\n";
    defo_mesh *m = NULL;
    CHECK_OK(read_mem(defo_read_ply, ascii, &m));
    if (m) {
        CHECK(m->num_nodes == 4 && m->num_tris == 3);
        CHECK(m->x[9] == 0.5 && m->x[10] == 0.25 && m->x[11] == 2);
        const defo_index want[9] = {0, 1, 2, 0, 2, 3, 0, 1, 3};
        if (m->num_tris == 3) CHECK(memcmp(m->tris, want, sizeof want) == 0);
    }
    defo_mesh_destroy(m);

    /* binary little endian: vertex = x(double) flag(uchar) y(double) z(float) */
    const char *head = "ply\nformat binary_little_endian 1.0\nelement vertex 3\n"
                       "property double x\nproperty uchar flag\nproperty double y\n"
                       "property float z\nelement face 1\nproperty list uchar int "
                       "vertex_indices\nend_header\n";
    unsigned char buf[512];
    size_t n = strlen(head);
    memcpy(buf, head, n);
    const double xs[3] = {0.1, 1.0 / 3.0, -2.5}, ys[3] = {1e-300, 2, 3};
    for (int i = 0; i < 3; i++) {
        memcpy(buf + n, &xs[i], 8), n += 8; /* little-endian host assumed (checked below) */
        buf[n++] = 0xAB;
        memcpy(buf + n, &ys[i], 8), n += 8;
        float z = (float)i;
        memcpy(buf + n, &z, 4), n += 4;
    }
    buf[n++] = 3;
    int32_t idx[3] = {2, 0, 1};
    memcpy(buf + n, idx, 12), n += 12;
    const uint16_t one = 1;
    unsigned char lo;
    memcpy(&lo, &one, 1);
    if (lo != 1) return; /* big-endian host: the hand-built buffer is not little-endian */
    CHECK_OK(defo_read_ply((const char *)buf, n, "bin.ply", &m));
    if (m) {
        CHECK(m->num_nodes == 3 && m->num_tris == 1);
        CHECK(m->x[3] == 1.0 / 3.0 && m->x[1] == 1e-300 && m->x[8] == 2.0);
        CHECK(m->tris[0] == 2 && m->tris[1] == 0 && m->tris[2] == 1);
    }
    defo_mesh_destroy(m);
}

/* ------------------------------------------------------------ meshio */
static int have_meshio(void) {
    int ok = access(PY, X_OK) == 0 && system(PY " -c 'import meshio' >/dev/null 2>&1") == 0;
    if (!ok) TEST_REPORT("SKIPPED: %s cannot import meshio", PY);
    return ok;
}

typedef struct vkey {
    double x, y, z;
} vkey;
static int vkey_cmp(const void *pa, const void *pb) {
    const vkey *a = pa, *b = pb;
    if (a->x != b->x) return a->x < b->x ? -1 : 1;
    if (a->y != b->y) return a->y < b->y ? -1 : 1;
    return (a->z > b->z) - (a->z < b->z);
}

/* Sorted vertex set of m, with coordinates rounded to float when as_float. */
static vkey *vertex_set(const defo_mesh *m, int as_float) {
    vkey *k = malloc(sizeof(vkey) * (size_t)(m->num_nodes + 1));
    for (int i = 0; i < m->num_nodes; i++) {
        k[i] = (vkey){m->x[3 * i], m->x[3 * i + 1], m->x[3 * i + 2]};
        if (as_float) {
            /* through memory: the rounding must not be optimised away */
            volatile float f[3] = {(float)k[i].x, (float)k[i].y, (float)k[i].z};
            k[i].x = f[0];
            k[i].y = f[1];
            k[i].z = f[2];
        }
    }
    qsort(k, (size_t)m->num_nodes, sizeof(vkey), vkey_cmp);
    return k;
}

/* meshio converts bunny.off to STL (binary and ASCII), PLY (both) and OBJ;
 * defo reads each back to the same triangle count, a closed surface and the
 * same vertex set (STL after welding, at float precision since STL stores
 * float32). */
static void test_meshio_conversions(void) {
    if (!have_meshio()) return;
    char src[512], cmd[2048];
    snprintf(src, sizeof src, "%s/meshes/bunny.off", DEFO_DATA_DIR);
    snprintf(cmd, sizeof cmd,
             PY " -c \"import meshio, sys; m = meshio.read('%s'); d = '%s'; "
                "meshio.write(d + '/bunny_bin.stl', m, binary=True); "
                "meshio.write(d + '/bunny_ascii.stl', m, binary=False); "
                "meshio.write(d + '/bunny_bin.ply', m, binary=True); "
                "meshio.write(d + '/bunny_ascii.ply', m, binary=False); "
                "meshio.write(d + '/bunny.obj', m)\" >/dev/null 2>&1",
             src, DEFO_TEST_TMP);
    CHECK(system(cmd) == 0);
    defo_mesh *ref = NULL;
    CHECK_OK(read_with(defo_read_off, src, &ref));
    if (!ref) return;
    const struct {
        const char *file;
        reader_fn fn;
        int as_float, same_order;
    } conv[] = {{"bunny_bin.stl", defo_read_stl, 1, 0},
                {"bunny_ascii.stl", defo_read_stl, 0, 0}, /* meshio writes the decimals */
                {"bunny_bin.ply", defo_read_ply, 0, 1},
                {"bunny_ascii.ply", defo_read_ply, 0, 1},
                {"bunny.obj", defo_read_obj, 0, 1}};
    for (size_t i = 0; i < sizeof conv / sizeof conv[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", DEFO_TEST_TMP, conv[i].file);
        defo_mesh *m = NULL;
        CHECK_OK(read_with(conv[i].fn, path, &m));
        if (!m) continue;
        CHECK_MSG(m->num_tris == ref->num_tris, "%s: %d triangles", conv[i].file, (int)m->num_tris);
        CHECK_MSG(m->num_nodes == ref->num_nodes, "%s: %d vertices", conv[i].file,
                  (int)m->num_nodes);
        CHECK_MSG(surface_closed(m), "%s: not closed", conv[i].file);
        if (m->num_nodes == ref->num_nodes) {
            vkey *a = vertex_set(ref, conv[i].as_float), *b = vertex_set(m, 0);
            int first = -1;
            for (int v = 0; v < m->num_nodes && first < 0; v++)
                if (memcmp(&a[v], &b[v], sizeof(vkey)) != 0) first = v;
            CHECK_MSG(first < 0,
                      "%s: vertex set differs at %d: (%.17g %.17g %.17g) vs (%.17g %.17g %.17g)",
                      conv[i].file, first, first < 0 ? 0 : a[first].x, first < 0 ? 0 : a[first].y,
                      first < 0 ? 0 : a[first].z, first < 0 ? 0 : b[first].x,
                      first < 0 ? 0 : b[first].y, first < 0 ? 0 : b[first].z);
            free(a);
            free(b);
        }
        if (conv[i].same_order && m->num_tris == ref->num_tris && m->num_nodes == ref->num_nodes)
            CHECK(memcmp(m->tris, ref->tris, sizeof(defo_index) * 3 * (size_t)m->num_tris) == 0);
        TEST_REPORT("%s: %d vertices, %d triangles, closed %d", conv[i].file, (int)m->num_nodes,
                    (int)m->num_tris, surface_closed(m));
        defo_mesh_destroy(m);
    }
    defo_mesh_destroy(ref);
}

/* ------------------------------------------------------------ broken */
typedef struct broken_case {
    const char *file;
    defo_status status;
    char where; /* 'L': "file:line:", 'B': "file: byte N:", 'N': "file:" */
} broken_case;

static void test_broken_corpus(void) {
    static const broken_case cases[] = {
        {"obj_index_range.obj", DEFO_ERR_PARSE, 'L'},
        {"obj_zero_index.obj", DEFO_ERR_PARSE, 'L'},
        {"obj_nan.obj", DEFO_ERR_PARSE, 'L'},
        {"obj_two_vertex_face.obj", DEFO_ERR_PARSE, 'L'},
        {"obj_no_faces.obj", DEFO_ERR_PARSE, 'N'},
        {"obj_bad_number.obj", DEFO_ERR_PARSE, 'L'},
        {"stl_truncated_binary.stl", DEFO_ERR_PARSE, 'B'},
        {"stl_nan_binary.stl", DEFO_ERR_PARSE, 'B'},
        {"stl_ascii_truncated.stl", DEFO_ERR_PARSE, 'L'},
        {"stl_ascii_bad_keyword.stl", DEFO_ERR_PARSE, 'L'},
        {"stl_ascii_no_endsolid.stl", DEFO_ERR_PARSE, 'L'},
        {"off_truncated.off", DEFO_ERR_PARSE, 'L'},
        {"off_index_range.off", DEFO_ERR_PARSE, 'L'},
        {"off_absurd_count.off", DEFO_ERR_PARSE, 'L'},
        {"off_bad_header.off", DEFO_ERR_PARSE, 'L'},
        {"off_face_size.off", DEFO_ERR_PARSE, 'L'},
        {"off_negative_count.off", DEFO_ERR_PARSE, 'L'},
        {"ply_truncated_binary.ply", DEFO_ERR_PARSE, 'B'},
        {"ply_absurd_count.ply", DEFO_ERR_PARSE, 'L'},
        {"ply_index_range.ply", DEFO_ERR_PARSE, 'L'},
        {"ply_no_end_header.ply", DEFO_ERR_PARSE, 'L'},
        {"ply_missing_xyz.ply", DEFO_ERR_PARSE, 'N'},
        {"ply_bad_format.ply", DEFO_ERR_UNSUPPORTED, 'L'},
        {"ply_nan.ply", DEFO_ERR_PARSE, 'B'},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/broken/%s", DEFO_DATA_DIR, cases[i].file);
        const char *ext = strrchr(cases[i].file, '.') + 1;
        reader_fn fn = strcmp(ext, "obj") == 0   ? defo_read_obj
                       : strcmp(ext, "stl") == 0 ? defo_read_stl
                       : strcmp(ext, "off") == 0 ? defo_read_off
                                                 : defo_read_ply;
        defo_mesh *m = (defo_mesh *)&m; /* must be reset to NULL */
        defo_status s = read_with(fn, path, &m);
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

/* Every prefix of each format is read or refused cleanly (ASan: no
 * overread, no leak), and *out is NULL exactly when refused. */
static void test_truncations(void) {
    const char *texts[] = {
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 2 3\nf 1 2 4\n",
        "OFF\n4 2 0\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n3 0 1 2\n3 0 1 3\n",
        "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n"
        "property float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n"
        "0 0 0\n1 0 0\n0 1 0\n3 0 1 2\n",
        "solid s\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\n"
        "endloop\nendfacet\nendsolid s\n"};
    reader_fn fns[] = {defo_read_obj, defo_read_off, defo_read_ply, defo_read_stl};
    for (int f = 0; f < 4; f++) {
        size_t size = strlen(texts[f]);
        int refused = 0;
        for (size_t n = 0; n <= size; n++) {
            char *copy = malloc(n ? n : 1);
            memcpy(copy, texts[f], n);
            defo_mesh *m = NULL;
            defo_status s = fns[f](copy, n, "t", &m);
            CHECK((s < 0) == (m == NULL));
            if (s < 0) refused++;
            defo_mesh_destroy(m);
            free(copy);
        }
        CHECK(refused > 0);
        TEST_REPORT("format %d: %d of %zu prefixes refused", f, refused, size + 1);
    }
}

int main(void) {
    RUN(test_real_meshes);
    RUN(test_obj_round_trip);
    RUN(test_obj_boundary);
    RUN(test_obj_curved_boundary);
    RUN(test_obj_syntax);
    RUN(test_off_syntax);
    RUN(test_stl_ascii);
    RUN(test_stl_binary_solid_header);
    RUN(test_ply_syntax);
    RUN(test_meshio_conversions);
    RUN(test_broken_corpus);
    RUN(test_truncations);
    return test_summary();
}
