/*
 * tests/test_io_tetgen.c — TetGen .node/.ele/.face (src/io/tetgen.c).
 *
 * References the checks use:
 *   - hand-written files with known content (0- and 1-based, comments,
 *     attributes, markers), analytic volumes;
 *   - TetGen's 10-node order, from tetgen 1.5/1.6 outelements + edge2ver
 *     ((2,3)(0,3)(0,1)(1,2)(1,3)(0,2)): a tet10 whose edge nodes are the
 *     midpoints must read with every VTK-order edge node at its midpoint;
 *   - exact round trips; meshio (separate process) reading defo's tet4
 *     output with identical counts, coordinates and connectivity;
 *   - the broken corpus data/broken/tetgen_*: status, "file:line:", no leak.
 */
#include "test_io_gmsh.h"

static const char *tmp_path(const char *name) {
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/%s", DEFO_TEST_TMP, name);
    return buf;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_tetgen_hand_written(void) {
    /* two tets sharing a face, 0-based, with comments, attributes, markers */
    const char text[] = "# cube corner\n"
                        "5  3  1  1   # points dim attrs markers\n"
                        "0  0 0 0  0.5  1\n"
                        "1  1 0 0  0.5  1\n"
                        "\n"
                        "2  0 1 0  0.5  1\n"
                        "3  0 0 1  0.5  1\n"
                        "4  1 1 1  0.5  0   # interior-ish\n"
                        "# .ele\n"
                        "2 4 1\n"
                        "0  0 1 2 3  3\n"
                        "1  2 1 3 4  -2   # region -2, negatively oriented\n"
                        "# .face\n"
                        "1 1\n"
                        "0  0 2 1  17\n";
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_read_memory(text, sizeof text - 1, "corner.node", NULL, &m);
    /* tet (2,1,3,4): (x1-x2, x3-x2, x4-x2) = (1,-1,0),(0,-1,1),(1,0,1), det = -2:
     * reoriented on read */
    CHECK(s == DEFO_WARN_REPAIRED);
    if (!m) return;
    CHECK(m->num_nodes == 5 && m->num_elems == 2 && m->num_tris == 1);
    CHECK(m->nodes_per_elem == 4 && m->nodes_per_tri == 3);
    CHECK(m->x[3 * 4 + 0] == 1.0 && m->x[3 * 4 + 1] == 1.0 && m->x[3 * 4 + 2] == 1.0);
    CHECK(m->elem_tag && m->elem_tag[0] == 3 && m->elem_tag[1] == -2);
    CHECK(m->tri_tag && m->tri_tag[0] == 17);
    CHECK(m->tris[0] == 0 && m->tris[1] == 2 && m->tris[2] == 1);
    /* analytic volumes: 1/6 and 2/6 */
    CHECK_NEAR(io_tet_det(m, 0), 1.0, 1e-15);
    CHECK_NEAR(io_tet_det(m, 1), 2.0, 1e-15);
    defo_mesh_destroy(m);

    /* 1-based, no attributes, node-only (no "# .ele"): a point cloud */
    const char cloud[] = "3 3 0 0\n1 0 0 0\n2 1.5e-3 0 0\n3 0 -2 7\n";
    m = NULL;
    CHECK_OK(defo_mesh_read_memory(cloud, sizeof cloud - 1, "cloud.node", NULL, &m));
    if (m) CHECK(m->num_nodes == 3 && m->num_elems == 0 && m->x[3] == 1.5e-3 && m->x[8] == 7);
    defo_mesh_destroy(m);
}

static void test_tetgen_tet10_order(void) {
    /* corners of a skewed tet, edge nodes at the midpoints, listed in
     * TetGen's order (2,3)(0,3)(0,1)(1,2)(1,3)(0,2) as node numbers 5..10 */
    const double c[4][3] = {{0, 0, 0}, {2, 0.1, 0}, {0.3, 1.5, 0.2}, {0.1, 0.4, 3}};
    const int tg_edges[6][2] = {{2, 3}, {0, 3}, {0, 1}, {1, 2}, {1, 3}, {0, 2}};
    char text[2048];
    int n = snprintf(text, sizeof text, "10 3 0 0\n");
    for (int i = 0; i < 4; i++)
        n += snprintf(text + n, sizeof text - (size_t)n, "%d %.17g %.17g %.17g\n", i + 1, c[i][0],
                      c[i][1], c[i][2]);
    for (int k = 0; k < 6; k++) {
        const double *a = c[tg_edges[k][0]], *b = c[tg_edges[k][1]];
        n += snprintf(text + n, sizeof text - (size_t)n, "%d %.17g %.17g %.17g\n", 5 + k,
                      0.5 * (a[0] + b[0]), 0.5 * (a[1] + b[1]), 0.5 * (a[2] + b[2]));
    }
    n += snprintf(text + n, sizeof text - (size_t)n, "# .ele\n1 10 0\n1 1 2 3 4 5 6 7 8 9 10\n");
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_read_memory(text, (size_t)n, "quad.node", NULL, &m));
    if (!m) return;
    CHECK(m->order == 2 && m->nodes_per_elem == 10);
    static const int vtk_edges[6][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {2, 3}};
    for (int k = 0; k < 6; k++) {
        const double *a = &m->x[3 * m->elems[vtk_edges[k][0]]];
        const double *b = &m->x[3 * m->elems[vtk_edges[k][1]]];
        const double *mid = &m->x[3 * m->elems[4 + k]];
        for (int j = 0; j < 3; j++) CHECK_NEAR(mid[j], 0.5 * (a[j] + b[j]), 1e-15);
    }
    /* and back: the written .ele lists the same TetGen order */
    CHECK_OK(defo_mesh_write(tmp_path("quad_rt.node"), m, NULL));
    size_t size;
    char *ele = io_slurp(tmp_path("quad_rt.ele"), &size);
    CHECK(ele && strstr(ele, "\n1 1 2 3 4 5 6 7 8 9 10\n") != NULL);
    free(ele);
    defo_mesh_destroy(m);
}

/* A small tet4 and tet10 mesh with tags and faces, built from a gmsh file. */
static defo_mesh *load(const char *rel) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", DEFO_DATA_DIR, rel);
    defo_mesh *m = NULL;
    if (defo_mesh_read(path, NULL, &m) != DEFO_OK) return NULL;
    test_rng r = {0xABCDEFULL};
    for (defo_index i = 0; i < 3 * m->num_nodes; i++) m->x[i] += 1e-4 * test_range(&r, -1, 1);
    return m;
}

static void test_tetgen_round_trip(void) {
    const char *src[2] = {"gmsh/box_o1_msh41.msh", "gmsh/box_o2_msh22.msh"};
    for (int i = 0; i < 2; i++) {
        defo_mesh *m = load(src[i]);
        CHECK_MSG(m != NULL, "%s: %s", src[i], defo_last_error());
        if (!m) continue;
        char name[64];
        snprintf(name, sizeof name, "tg_rt_%d.node", i);
        CHECK_OK(defo_mesh_write(tmp_path(name), m, NULL));
        /* reading by .node or by .ele gives the same mesh */
        for (int by = 0; by < 2; by++) {
            snprintf(name, sizeof name, "tg_rt_%d.%s", i, by ? "ele" : "node");
            defo_mesh *back = NULL;
            CHECK_OK(defo_mesh_read(tmp_path(name), NULL, &back));
            if (back) CHECK_MSG(io_mesh_equal(m, back, false), "%s: round trip differs", name);
            defo_mesh_destroy(back);
        }
        /* meshio reads TetGen tet4 (.node + .ele) */
        if (i == 0) {
            snprintf(name, sizeof name, "tg_rt_%d.node", i);
            io_compare_meshio(tmp_path(name), "tetgen", m);
        }
        defo_mesh_destroy(m);
    }
    /* a mesh without triangles removes a stale .face of the same stem */
    defo_mesh *m = load("gmsh/box_o1_msh41.msh");
    if (m) {
        m->num_tris = 0; /* as if the boundary had been dropped */
        CHECK_OK(defo_mesh_write(tmp_path("tg_rt_0.node"), m, NULL));
        CHECK(!io_file_exists(tmp_path("tg_rt_0.face")));
        defo_mesh *back = NULL;
        CHECK_OK(defo_mesh_read(tmp_path("tg_rt_0.node"), NULL, &back));
        if (back) CHECK(back->num_tris == 0 && back->num_elems == m->num_elems);
        defo_mesh_destroy(back);
        defo_mesh_destroy(m);
    }
}

static void test_tetgen_broken_corpus(void) {
    static const io_broken cases[] = {
        {"tetgen_truncated.node", DEFO_ERR_PARSE, "tetgen_truncated.node:1:", "cannot fit"},
        {"tetgen_index_range.node", DEFO_ERR_PARSE,
         "tetgen_index_range.ele:3:", "node index 7 is out of range [1, 4]"},
        {"tetgen_nan.node", DEFO_ERR_PARSE, "tetgen_nan.node:3:", "not a finite number"},
        {"tetgen_extra_tets.ele", DEFO_ERR_PARSE,
         "tetgen_extra_tets.ele:3:", "more tetrahedra than the 1 the header announces"},
        {"tetgen_dim2.node", DEFO_ERR_UNSUPPORTED, "tetgen_dim2.node:1:", "dimension 2"},
        {"tetgen_8nodes.node", DEFO_ERR_UNSUPPORTED,
         "tetgen_8nodes.ele:1:", "8 nodes per tetrahedron"},
        {"tetgen_absurd_count.node", DEFO_ERR_UNSUPPORTED,
         "tetgen_absurd_count.node:1:", "exceeds defo's limit"},
        {"tetgen_base2.node", DEFO_ERR_PARSE, "tetgen_base2.node:2:", "must be 0 or 1"},
        {"tetgen_gap.node", DEFO_ERR_PARSE, "tetgen_gap.node:4:", "point number 4, expected 3"},
        {"tetgen_region.ele", DEFO_ERR_UNSUPPORTED,
         "tetgen_region.ele:2:", "region attribute 1.5 is not an integer"},
        {"tetgen_face_range.node", DEFO_ERR_PARSE,
         "tetgen_face_range.face:3:", "node index 99 is out of range"},
        {"tetgen_bad_token.node", DEFO_ERR_PARSE,
         "tetgen_bad_token.ele:3:", "\"x\" is not an integer"},
        {"tetgen_missing_values.node", DEFO_ERR_PARSE,
         "tetgen_missing_values.node:4:", "point has 4 values, the header announces 5"},
        {"tetgen_huge_ele.node", DEFO_ERR_PARSE, "tetgen_huge_ele.ele:1:", "cannot fit"},
    };
    io_check_broken(cases, (int)(sizeof cases / sizeof cases[0]));
}

static void test_tetgen_missing_files(void) {
    /* named .ele must exist; a .node alone is a point cloud */
    write_text(tmp_path("lonely.node"), "1 3 0 0\n0 1 2 3\n");
    remove(tmp_path("lonely.ele"));
    remove(tmp_path("lonely.face"));
    defo_mesh *m = (defo_mesh *)1;
    CHECK(defo_mesh_read(tmp_path("lonely.ele"), NULL, &m) == DEFO_ERR_IO && m == NULL);
    CHECK(strstr(defo_last_error(), "lonely.ele") != NULL);
    CHECK_OK(defo_mesh_read(tmp_path("lonely.node"), NULL, &m));
    if (m) CHECK(m->num_nodes == 1 && m->x[2] == 3.0);
    defo_mesh_destroy(m);
}

static void test_tetgen_truncation_sweep(void) {
    /* every prefix of a small two-part buffer: no crash, no leak */
    const char text[] = "5 3 1 1\n0 0 0 0 0.5 1\n1 1 0 0 0.5 1\n2 0 1 0 0.5 1\n3 0 0 1 0.5 1\n"
                        "4 1 1 1 0.5 0\n# .ele\n2 4 1\n0 0 1 2 3 3\n1 1 2 4 3 2\n"
                        "# .face\n1 1\n0 0 2 1 17\n";
    int64_t before = defo_allocated_bytes();
    long ok = 0, failed = 0;
    for (size_t n = 0; n < sizeof text - 1; n++) {
        char *copy = malloc(n + 1);
        memcpy(copy, text, n);
        defo_mesh *m = NULL;
        defo_status s = defo_mesh_read_memory(copy, n, "cut.node", NULL, &m);
        if (s >= 0) {
            ok++;
            defo_mesh_destroy(m);
        } else {
            failed++;
            CHECK(strstr(defo_last_error(), "cut.") == defo_last_error());
        }
        free(copy);
    }
    CHECK(defo_allocated_bytes() == before);
    TEST_REPORT("%ld prefixes refused with a message, %ld readable", failed, ok);
}

int main(void) {
    RUN(test_tetgen_hand_written);
    RUN(test_tetgen_tet10_order);
    RUN(test_tetgen_round_trip);
    RUN(test_tetgen_broken_corpus);
    RUN(test_tetgen_missing_files);
    RUN(test_tetgen_truncation_sweep);
    return test_summary();
}
