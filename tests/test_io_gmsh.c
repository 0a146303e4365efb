/*
 * tests/test_io_gmsh.c — Gmsh .msh 2.2 / 4.1, ASCII / binary (src/io/gmsh.c)
 * and the read/write dispatch (src/io/io.c).
 *
 * References the checks use:
 *   - meshes made by the gmsh CLI (data/gmsh, see its README): counts from
 *     the file headers, analytic volumes (box 2 m^3, halves 1 m^3 each),
 *     boundary groups on the planes x = 0 / x = 2, and meshio (an independent
 *     reader run as /usr/bin/python3) for counts, coordinates and tet10 order;
 *   - tet10 geometry: on a straight-sided mesh every edge node is the exact
 *     midpoint of its corners, which fixes Gmsh's edge-node order;
 *   - exact round trips (write -> read is bitwise) and meshio reading what
 *     defo writes;
 *   - the broken-file corpus data/broken/gmsh_*: status, "file:line:" or
 *     "file: byte N:", and no leak (the allocator's byte count).
 */
#include "test_io_gmsh.h"

#include "defo/element.h"

static char g_path[1024];
static const char *data_path(const char *rel) {
    snprintf(g_path, sizeof g_path, "%s/%s", DEFO_DATA_DIR, rel);
    return g_path;
}
static const char *tmp_path(const char *name) {
    static char buf[1024];
    snprintf(buf, sizeof buf, "%s/%s", DEFO_TEST_TMP, name);
    return buf;
}

/* Node count announced by the $Nodes header (2.2: ASCII count; 4.1: second
 * size_t, ASCII or binary). */
static long header_node_count(const char *buf, size_t size) {
    const char *p = io_memfind(buf, size, "$Nodes\n");
    if (!p) return -1;
    p += 7;
    bool v41 = strncmp(buf, "$MeshFormat\n4.1 ", 16) == 0;
    bool bin = strncmp(buf + 12, "4.1 1 ", 6) == 0 || strncmp(buf + 12, "2.2 1 ", 6) == 0;
    if (v41 && bin) {
        uint64_t h[2];
        if ((size_t)(p - buf) + 16 > size) return -1;
        memcpy(h, p, 16);
        return (long)h[1];
    }
    long a = -1, b = -1;
    if (v41) {
        if (sscanf(p, "%ld %ld", &a, &b) != 2) return -1;
        return b;
    }
    return sscanf(p, "%ld", &a) == 1 ? a : -1;
}

static double max_abs_coord(const defo_mesh *m) {
    double h = 0;
    for (defo_index i = 0; i < 3 * m->num_nodes; i++) h = fmax(h, fabs(m->x[i]));
    return h;
}

/* VTK edge (a, b) of slot 4 + k. */
static const int vtk_edges[6][2] = {{0, 1}, {1, 2}, {0, 2}, {0, 3}, {1, 3}, {2, 3}};

typedef struct gen_file {
    const char *file;
    int order;
    bool box;
} gen_file;

static const gen_file gen_files[] = {
    {"gmsh/box_o1_msh22.msh", 1, true},     {"gmsh/box_o1_msh22_bin.msh", 1, true},
    {"gmsh/box_o1_msh41.msh", 1, true},     {"gmsh/box_o1_msh41_bin.msh", 1, true},
    {"gmsh/box_o2_msh22.msh", 2, true},     {"gmsh/box_o2_msh41_bin.msh", 2, true},
    {"gmsh/sphere_o1_msh41.msh", 1, false}, {"gmsh/sphere_o2_msh22_bin.msh", 2, false},
};

static void check_box(const defo_mesh *m) {
    /* analytic: the 2 x 1 x 1 box and its two unit halves (physical 1 and 2) */
    double total = 0, part[3] = {0, 0, 0};
    for (defo_index e = 0; e < m->num_elems; e++) {
        double v = io_tet_det(m, e) / 6.0;
        total += v;
        int32_t t = io_tag(m->elem_tag, e);
        if (t >= 1 && t <= 2) part[t] += v;
    }
    CHECK_NEAR(total, 2.0, 1e-12);
    CHECK_NEAR(part[1], 1.0, 1e-12);
    CHECK_NEAR(part[2], 1.0, 1e-12);
    /* boundary groups: "clamp" (11) lies on x = 0, "load" (12) on x = 2 */
    long on_clamp = 0, on_load = 0, wrong = 0;
    for (defo_index t = 0; t < m->num_tris; t++) {
        int32_t tag = io_tag(m->tri_tag, t);
        double want = tag == 11 ? 0.0 : 2.0;
        for (int k = 0; k < m->nodes_per_tri; k++)
            wrong += fabs(m->x[3 * m->tris[t * m->nodes_per_tri + k]] - want) > 1e-12;
        on_clamp += tag == 11;
        on_load += tag == 12;
    }
    CHECK(on_clamp > 0 && on_load > 0 && on_clamp + on_load == m->num_tris);
    CHECK(wrong == 0);
    const char *names[4] = {"left", "right", "clamp", "load"};
    const int dims[4] = {3, 3, 2, 2}, tags[4] = {1, 2, 11, 12};
    for (int i = 0; i < 4; i++) {
        const defo_group *g = io_find_group(m, names[i]);
        CHECK_MSG(g && g->dim == dims[i] && g->tag == tags[i], "group %s", names[i]);
    }
    CHECK(io_find_group(m, "edge") == NULL); /* dim 1: not a defo group */
}

static void check_sphere(const defo_mesh *m) {
    double total = 0;
    for (defo_index e = 0; e < m->num_elems; e++) total += io_tet_det(m, e) / 6.0;
    double ball = 4.0 / 3.0 * acos(-1.0);
    /* inscribed polyhedron: a little less than the ball */
    CHECK(total < ball && total > 0.85 * ball);
    const defo_group *g = io_find_group(m, "ball"), *s = io_find_group(m, "skin");
    CHECK(g && g->dim == 3 && g->tag == 7);
    CHECK(s && s->dim == 2 && s->tag == 8);
    for (defo_index e = 0; e < m->num_elems; e++) CHECK(io_tag(m->elem_tag, e) == 7);
}

/* Edge nodes: midpoint of their corners (straight edges), or for a curved
 * boundary edge on the unit sphere together with both corners. */
static long bad_edge_nodes(const defo_mesh *m, bool allow_sphere) {
    double h = max_abs_coord(m), tol = 1e-12 * h;
    long bad = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        const defo_index *v = &m->elems[(size_t)e * 10];
        for (int k = 0; k < 6; k++) {
            const double *a = &m->x[3 * v[vtk_edges[k][0]]], *b = &m->x[3 * v[vtk_edges[k][1]]],
                         *c = &m->x[3 * v[4 + k]];
            double d = 0;
            for (int j = 0; j < 3; j++) d = fmax(d, fabs(c[j] - 0.5 * (a[j] + b[j])));
            if (d <= tol) continue;
            if (allow_sphere) {
                double ra = sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
                double rb = sqrt(b[0] * b[0] + b[1] * b[1] + b[2] * b[2]);
                double rc = sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
                /* curved, but still near the straight midpoint (a wrong
                 * slot would be a whole edge away) */
                if (fabs(ra - 1) < 1e-6 && fabs(rb - 1) < 1e-6 && fabs(rc - 1) < 1e-6 && d < 0.1)
                    continue;
            }
            bad++;
        }
    }
    return bad;
}

static void test_gmsh_generated_files(void) {
    defo_mesh *first_box1 = NULL;
    for (size_t i = 0; i < sizeof gen_files / sizeof gen_files[0]; i++) {
        const gen_file *gf = &gen_files[i];
        const char *path = data_path(gf->file);
        size_t size;
        char *buf = io_slurp(path, &size);
        CHECK_MSG(buf != NULL, "cannot read %s", path);
        if (!buf) continue;
        defo_mesh *m = NULL;
        defo_status s = defo_mesh_read(path, NULL, &m);
        /* gmsh writes positively oriented tets: no reorientation expected */
        CHECK_MSG(s == DEFO_OK, "%s: %s", gf->file, defo_last_error());
        if (!m) {
            free(buf);
            continue;
        }
        CHECK_MSG(m->num_nodes == header_node_count(buf, size), "%s: %d nodes, header %ld",
                  gf->file, (int)m->num_nodes, header_node_count(buf, size));
        CHECK(m->order == gf->order);
        CHECK(m->nodes_per_elem == (gf->order == 2 ? 10 : 4));
        CHECK(m->num_tris > 0 && m->nodes_per_tri == (gf->order == 2 ? 6 : 3));
        long nonpositive = 0;
        for (defo_index e = 0; e < m->num_elems; e++) nonpositive += !(io_tet_det(m, e) > 0);
        CHECK(nonpositive == 0);
        if (gf->box)
            check_box(m);
        else
            check_sphere(m);
        if (gf->order == 2) {
            long bad = bad_edge_nodes(m, !gf->box);
            CHECK_MSG(bad == 0, "%s: %ld edge nodes are not on their edge", gf->file, bad);
        }
        /* the four encodings of the same gmsh mesh read identically (gmsh
         * prints 16 significant digits in ASCII, so coordinates to 1e-15) */
        if (gf->box && gf->order == 1) {
            if (!first_box1) {
                first_box1 = m;
                m = NULL;
            } else {
                CHECK_MSG(io_mesh_equal_tol(first_box1, m, true, 1e-15 * 2.0), "%s differs from %s",
                          gf->file, gen_files[0].file);
            }
        }
        if (i == 0 || i == 4 || i == 7) {
            io_compare_meshio(path, "gmsh", m ? m : first_box1);
        }
        TEST_REPORT("%s: %d nodes, %d tets, %d triangles, %d groups", gf->file,
                    (int)(m ? m : first_box1)->num_nodes, (int)(m ? m : first_box1)->num_elems,
                    (int)(m ? m : first_box1)->num_tris, (m ? m : first_box1)->num_groups);
        defo_mesh_destroy(m);
        free(buf);
    }
    defo_mesh_destroy(first_box1);
}

/* tet10 from the gmsh installed here, end to end: `gmsh -3 -order 2` on
 * data/gmsh/{box,sphere}.geo (ASCII 4.1 and binary 2.2), read by defo and compared with
 * meshio's reading of the same file (coordinates bitwise, connectivity in VTK
 * order); then through every format defo writes — TetGen .node/.ele (TetGen's
 * -o2 edge order), .vtu ASCII and binary, .vtk, .msh 2.2 binary and 4.1
 * ASCII — each read back bitwise identical.  Independent of the tables: a
 * wrong edge-node slot folds the curved sphere elements (Jacobian quality
 * <= 0), so every element must keep a quality near 1. */
static void test_gmsh_live_tet10(void) {
    if (system("gmsh --version >/dev/null 2>&1") != 0) {
        TEST_REPORT("SKIPPED: gmsh is not installed");
        return;
    }
    const char *geos[2] = {"box", "sphere"};
    const char *fmts[2][2] = {{"msh41", ""}, {"msh22", "-bin"}};
    for (int g = 0; g < 2; g++)
        for (int f = 0; f < 2; f++) {
            char name[128], out[1024], cmd[2600];
            snprintf(name, sizeof name, "live_%s_o2_%s%s.msh", geos[g], fmts[f][0], fmts[f][1]);
            snprintf(out, sizeof out, "%s", tmp_path(name));
            snprintf(cmd, sizeof cmd,
                     "gmsh -3 -order 2 -format %s %s '%s/gmsh/%s.geo' -o '%s' >/dev/null 2>&1",
                     fmts[f][0], fmts[f][1], DEFO_DATA_DIR, geos[g], out);
            CHECK_MSG(system(cmd) == 0, "gmsh failed: %s", cmd);
            defo_mesh *m = NULL;
            CHECK_OK(defo_mesh_read(out, NULL, &m));
            if (!m) continue;
            CHECK(m->order == 2 && m->nodes_per_elem == 10 && m->nodes_per_tri == 6);
            io_compare_meshio(out, "gmsh", m);
            double worst = 0, vol = 0;
            defo_index we = -1;
            CHECK_OK(defo_element_jacobian_quality(m, NULL, NULL, &worst, &we));
            CHECK_OK(defo_element_volume(m, NULL, &vol));
            double want = g == 0 ? 2.0 : 4.0 / 3.0 * acos(-1.0);
            TEST_REPORT("%s: %d nodes, %d tet10, worst Jacobian quality %.4f, volume %.6f "
                        "(exact %.6f)",
                        name, (int)m->num_nodes, (int)m->num_elems, worst, vol, want);
            CHECK(worst > 0.5);
            CHECK(fabs(vol - want) < (g == 0 ? 1e-12 : 2e-3) * want);
            /* through every writer and back, bitwise */
            const char *chain[6] = {"chain.node", "chain_bin.vtu", "chain_asc.vtu",
                                    "chain.vtk",  "chain_v2.msh",  "chain_v4.msh"};
            defo_mesh *cur = m;
            for (int c = 0; c < 6; c++) {
                defo_write_options wo = defo_default_write_options();
                wo.binary = c != 2 && c != 5;
                wo.msh_version = c == 4 ? 2 : 4;
                CHECK_OK(defo_mesh_write(tmp_path(chain[c]), cur, &wo));
                defo_mesh *next = NULL;
                CHECK_OK(defo_mesh_read(tmp_path(chain[c]), NULL, &next));
                if (!next) break;
                bool same = next->num_nodes == m->num_nodes && next->num_elems == m->num_elems &&
                            next->nodes_per_elem == 10 &&
                            memcmp(next->x, m->x, 3 * sizeof(double) * (size_t)m->num_nodes) == 0 &&
                            memcmp(next->elems, m->elems,
                                   10 * sizeof(defo_index) * (size_t)m->num_elems) == 0;
                CHECK_MSG(same, "%s: %s differs from the gmsh mesh", name, chain[c]);
                if (c == 1 || c == 5)
                    io_compare_meshio(tmp_path(chain[c]), c == 1 ? "vtu" : "gmsh", next);
                if (cur != m) defo_mesh_destroy(cur);
                cur = next;
            }
            if (cur != m) defo_mesh_destroy(cur);
            defo_mesh_destroy(m);
        }
}

/* Read a data file, perturb the coordinates (non-trivial doubles) and tag
 * elements in runs so the 4.1 writer needs several blocks per entity. */
static defo_mesh *load_perturbed(const char *rel, bool zero_tags) {
    defo_mesh *m = NULL;
    if (defo_mesh_read(data_path(rel), NULL, &m) != DEFO_OK) return NULL;
    test_rng r = {0x1234567ULL};
    for (defo_index i = 0; i < 3 * m->num_nodes; i++) m->x[i] += 1e-4 * test_range(&r, -1, 1);
    for (defo_index e = 0; e < m->num_elems; e++)
        if (m->elem_tag)
            m->elem_tag[e] = (zero_tags && (e / 7) % 3 == 0) ? 0 : 5 + (int32_t)(e / 7) % 3;
    return m;
}

static void test_gmsh_round_trip(void) {
    /* the third pass mixes tagged and untagged elements: meshio 5.0 cannot
     * read such 4.1 files (it drops cell data of entities without a
     * physical tag and then fails), so that pass is checked by defo only */
    const char *sources[3] = {"gmsh/box_o1_msh41.msh", "gmsh/sphere_o2_msh22_bin.msh",
                              "gmsh/box_o2_msh22.msh"};
    for (int s = 0; s < 3; s++) {
        defo_mesh *m = load_perturbed(sources[s], s == 2);
        CHECK_MSG(m != NULL, "%s: %s", sources[s], defo_last_error());
        if (!m) continue;
        CHECK_OK(defo_mesh_set_group(m, 3, 6, "middle \"quoted\"")); /* quotes become ' */
        for (int version = 2; version <= 4; version += 2)
            for (int binary = 0; binary <= 1; binary++) {
                char name[64];
                snprintf(name, sizeof name, "rt_%d_v%d_%s.msh", s, version, binary ? "bin" : "asc");
                const char *path = tmp_path(name);
                defo_write_options wo = defo_default_write_options();
                wo.msh_version = version;
                wo.binary = binary;
                CHECK_OK(defo_mesh_write(path, m, &wo));
                defo_mesh *back = NULL;
                CHECK_OK(defo_mesh_read(path, NULL, &back));
                if (back) {
                    CHECK_MSG(io_mesh_equal(m, back, false), "%s: round trip differs", name);
                    const defo_group *g = io_find_group(back, "middle 'quoted'");
                    CHECK(g && g->dim == 3 && g->tag == 6);
                    CHECK(back->num_groups == m->num_groups);
                }
                defo_mesh_destroy(back);
                /* meshio reads what defo wrote: counts, coordinates, tet order */
                if (s < 2) io_compare_meshio(path, "gmsh", m);
            }
        /* positions override: deformed state written instead of rest state */
        double *y = malloc(sizeof(double) * 3 * (size_t)m->num_nodes);
        for (defo_index i = 0; i < 3 * m->num_nodes; i++) y[i] = 2.0 * m->x[i] + 1.0;
        defo_write_options wo = defo_default_write_options();
        wo.positions = y;
        const char *path = tmp_path("rt_positions.msh");
        CHECK_OK(defo_mesh_write(path, m, &wo));
        defo_mesh *back = NULL;
        CHECK_OK(defo_mesh_read(path, NULL, &back));
        if (back) CHECK(memcmp(back->x, y, sizeof(double) * 3 * (size_t)m->num_nodes) == 0);
        defo_mesh_destroy(back);
        free(y);
        defo_mesh_destroy(m);
    }
}

static void test_gmsh_sparse_tags(void) {
    /* node tags far apart and unordered, elements referring to them: the
     * map must not allocate by the largest tag (peak bytes stay small) */
    const char text[] = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"
                        "$Nodes\n5\n"
                        "900000000000 0 0 0\n7 1 0 0\n123456789 0 1 0\n3 0 0 1\n42 1 1 1\n"
                        "$EndNodes\n$Elements\n3\n"
                        "10 15 2 0 0 7\n"  /* a point: skipped */
                        "11 1 2 0 0 7 3\n" /* a line: skipped */
                        "12 4 2 4 4 900000000000 7 123456789 3\n"
                        "$EndElements\n";
    int64_t before = defo_allocated_bytes();
    defo_reset_peak_allocated_bytes();
    defo_mesh *m = NULL;
    CHECK_OK(defo_mesh_read_memory(text, sizeof text - 1, "sparse.msh", NULL, &m));
    int64_t peak = defo_peak_allocated_bytes() - before;
    CHECK(peak < 64 * 1024);
    if (m) {
        CHECK(m->num_nodes == 5 && m->num_elems == 1 && m->num_tris == 0);
        CHECK(m->elems[0] == 0 && m->elems[1] == 1 && m->elems[2] == 2 && m->elems[3] == 3);
        CHECK(m->elem_tag && m->elem_tag[0] == 4);
        TEST_REPORT("sparse tags up to 9e11: peak %lld bytes", (long long)peak);
    }
    defo_mesh_destroy(m);
}

static void test_gmsh_absurd_count_no_allocation(void) {
    /* "2000000000 nodes" in a 60-byte file: refused before any allocation */
    int64_t before = defo_allocated_bytes();
    defo_reset_peak_allocated_bytes();
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_read(data_path("broken/gmsh_huge_count.msh"), NULL, &m);
    CHECK(s == DEFO_ERR_PARSE && m == NULL);
    CHECK(defo_peak_allocated_bytes() - before < 64 * 1024);
    CHECK(defo_allocated_bytes() == before);
}

static void test_gmsh_broken_corpus(void) {
    static const io_broken cases[] = {
        {"gmsh_truncated_nodes.msh", DEFO_ERR_PARSE, "gmsh_truncated_nodes.msh:5:", "cannot fit"},
        {"gmsh_count_mismatch.msh", DEFO_ERR_PARSE, "gmsh_count_mismatch.msh:10:", "$EndNodes"},
        {"gmsh_node_out_of_range.msh", DEFO_ERR_PARSE,
         "gmsh_node_out_of_range.msh:13:", "node tag 9 is not in $Nodes"},
        {"gmsh_nan.msh", DEFO_ERR_PARSE, "gmsh_nan.msh:7:", "finite"},
        {"gmsh_inf.msh", DEFO_ERR_PARSE, "gmsh_inf.msh:8:", "finite"},
        {"gmsh_hexahedron.msh", DEFO_ERR_UNSUPPORTED, "gmsh_hexahedron.msh:17:",
         "element type 5 (8-node hexahedron) is not supported; defo needs tetrahedra"},
        {"gmsh_mixed_orders.msh", DEFO_ERR_UNSUPPORTED,
         "gmsh_mixed_orders.msh:20:", "mixes 10-node tetrahedron and 4-node tetrahedron"},
        {"gmsh_absurd_count.msh", DEFO_ERR_UNSUPPORTED, "gmsh_absurd_count.msh:5:", "nodes count"},
        {"gmsh_huge_count.msh", DEFO_ERR_PARSE, "gmsh_huge_count.msh:5:", "cannot fit"},
        {"gmsh_bad_section_end.msh", DEFO_ERR_PARSE,
         "gmsh_bad_section_end.msh:10:", "expected $EndNodes, found \"$EndNode\""},
        {"gmsh_version3.msh", DEFO_ERR_UNSUPPORTED,
         "gmsh_version3.msh:2:", "msh version 3.0 is not supported"},
        {"gmsh_version40.msh", DEFO_ERR_UNSUPPORTED,
         "gmsh_version40.msh:2:", "msh version 4 is not supported"},
        {"gmsh_version1.msh", DEFO_ERR_PARSE,
         "gmsh_version1.msh:1:", "must start with $MeshFormat"},
        {"gmsh_duplicate_node.msh", DEFO_ERR_PARSE,
         "gmsh_duplicate_node.msh:4:", "node tag 2 appears twice"},
        {"gmsh_elements_first.msh", DEFO_ERR_PARSE,
         "gmsh_elements_first.msh:4:", "$Elements before $Nodes"},
        {"gmsh_unterminated_section.msh", DEFO_ERR_PARSE,
         "gmsh_unterminated_section.msh:15:", "has no $EndComments"},
        {"gmsh_text_outside.msh", DEFO_ERR_PARSE,
         "gmsh_text_outside.msh:11:", "outside any section"},
        {"gmsh_negative_tags.msh", DEFO_ERR_PARSE,
         "gmsh_negative_tags.msh:13:", "absurd number of tags -3"},
        {"gmsh_41_node_blocks.msh", DEFO_ERR_PARSE,
         "gmsh_41_node_blocks.msh:12:", "node blocks hold 3 nodes but the header announces 4"},
        {"gmsh_41_pyramid.msh", DEFO_ERR_UNSUPPORTED,
         "gmsh_41_pyramid.msh:20:", "element type 7 (5-node pyramid) is not supported"},
        {"gmsh_41_element_count.msh", DEFO_ERR_PARSE, "gmsh_41_element_count.msh:19:",
         "element blocks hold 1 elements but the header announces 2"},
        {"gmsh_41_node_tag_range.msh", DEFO_ERR_PARSE,
         "gmsh_41_node_tag_range.msh:10:", "node tag 40 is outside the announced range [1, 4]"},
        {"gmsh_41_bin_truncated.msh", DEFO_ERR_PARSE,
         "gmsh_41_bin_truncated.msh: byte 79:", "cannot fit"},
        {"gmsh_41_bin_bad_endian.msh", DEFO_ERR_PARSE,
         "gmsh_41_bin_bad_endian.msh: byte 20:", "endianness"},
        {"gmsh_22_bin_nan.msh", DEFO_ERR_PARSE, "gmsh_22_bin_nan.msh: byte 117:", "finite"},
        {"gmsh_22_bin_node_range.msh", DEFO_ERR_PARSE,
         "gmsh_22_bin_node_range.msh: byte 224:", "node tag 99 is not in $Nodes"},
        {"gmsh_22_bin_group_count.msh", DEFO_ERR_PARSE,
         "gmsh_22_bin_group_count.msh: byte 196:", "element group of 5 elements"},
    };
    io_check_broken(cases, (int)(sizeof cases / sizeof cases[0]));
}

static const char one_tet_fmt[] = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"
                                  "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n$EndNodes\n"
                                  "$Elements\n1\n1 4 2 1 1 %s\n$EndElements\n";

static void test_gmsh_orientation_policy(void) {
    char text[512];
    /* corners 1 3 2 4: det = -1, so the tet is negatively oriented */
    snprintf(text, sizeof text, one_tet_fmt, "1 3 2 4");
    defo_mesh *m = NULL;
    defo_status s = defo_mesh_read_memory(text, strlen(text), "flip.msh", NULL, &m);
    CHECK(s == DEFO_WARN_REPAIRED);
    CHECK(strstr(defo_last_error(), "flip.msh: reoriented 1 elements with negative volume"));
    if (m) CHECK(io_tet_det(m, 0) > 0); /* analytic: |det| = 1 after the flip */
    if (m) CHECK_NEAR(io_tet_det(m, 0), 1.0, 1e-15);
    defo_mesh_destroy(m);

    defo_read_options ro = defo_default_read_options();
    ro.reorient = 0;
    m = (defo_mesh *)1;
    s = defo_mesh_read_memory(text, strlen(text), "flip.msh", &ro, &m);
    CHECK(s == DEFO_ERR_INVALID_MESH && m == NULL);
    CHECK(strstr(defo_last_error(), "flip.msh: element 0 is negatively oriented"));

    /* degenerate (flat) tet: an error with either policy */
    const char flat[] = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n"
                        "$Nodes\n4\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 1 1 0\n$EndNodes\n"
                        "$Elements\n1\n1 4 2 1 1 1 2 3 4\n$EndElements\n";
    m = NULL;
    s = defo_mesh_read_memory(flat, sizeof flat - 1, "flat.msh", NULL, &m);
    CHECK(s == DEFO_ERR_INVALID_MESH && m == NULL);
    CHECK(strstr(defo_last_error(), "flat.msh") != NULL);

    /* an element repeating a node is refused by validation */
    snprintf(text, sizeof text, one_tet_fmt, "1 2 3 3");
    s = defo_mesh_read_memory(text, strlen(text), "repeat.msh", NULL, &m);
    CHECK(s == DEFO_ERR_INVALID_MESH && m == NULL);
    CHECK(strstr(defo_last_error(), "repeat.msh") != NULL);
}

/* Every prefix and many corrupted copies of a real file: never a crash
 * (ASan/UBSan watch), never a leak, messages always name the file. */
static void test_gmsh_truncation_and_corruption(void) {
    const char *files[3] = {"gmsh/box_o1_msh41_bin.msh", "gmsh/box_o1_msh22_bin.msh",
                            "gmsh/box_o1_msh41.msh"};
    long ok = 0, failed = 0;
    int64_t before = defo_allocated_bytes();
    for (int f = 0; f < 3; f++) {
        size_t size;
        char *buf = io_slurp(data_path(files[f]), &size);
        if (!buf) continue;
        size_t step = size / (size_t)TEST_HEAVY(1500) + 1;
        for (size_t n = 0; n < size; n += step) {
            char *copy = malloc(n + 1); /* exact size: ASan sees overreads */
            memcpy(copy, buf, n);
            defo_mesh *m = NULL;
            defo_status s = defo_mesh_read_memory(copy, n, "cut.msh", NULL, &m);
            if (s >= 0) {
                ok++;
                defo_mesh_destroy(m);
            } else {
                failed++;
                CHECK(strstr(defo_last_error(), "cut.msh") == defo_last_error());
            }
            free(copy);
        }
        test_rng r = {0xC0FFEEULL + (unsigned)f};
        for (int t = 0; t < TEST_HEAVY(1500); t++) {
            char *copy = malloc(size);
            memcpy(copy, buf, size);
            for (int k = 0; k < 4; k++) {
                size_t at = (size_t)(test_uniform(&r) * (double)size);
                copy[at] = (char)(int)(test_uniform(&r) * 256);
            }
            defo_mesh *m = NULL;
            defo_status s = defo_mesh_read_memory(copy, size, "flip.msh", NULL, &m);
            if (s >= 0) {
                ok++;
                defo_mesh_destroy(m);
            } else {
                failed++;
                CHECK(strstr(defo_last_error(), "flip.msh") == defo_last_error());
            }
            free(copy);
        }
        free(buf);
    }
    CHECK(defo_allocated_bytes() == before);
    TEST_REPORT("%ld damaged inputs refused with a message, %ld still readable", failed, ok);
}

static void test_io_dispatch_and_write_errors(void) {
    CHECK(defo_format_from_path("a/b.MSH") == DEFO_FORMAT_MSH);
    CHECK(defo_format_from_path("x.node") == DEFO_FORMAT_TETGEN);
    CHECK(defo_format_from_path("x.ele") == DEFO_FORMAT_TETGEN);
    CHECK(defo_format_from_path("x.vtu") == DEFO_FORMAT_VTU);
    CHECK(defo_format_from_path("x.Ply") == DEFO_FORMAT_PLY);
    CHECK(defo_format_from_path("x.txt") == DEFO_FORMAT_AUTO);
    CHECK(strcmp(defo_format_name(DEFO_FORMAT_MSH), "msh") == 0);
    defo_write_options wo = defo_default_write_options();
    CHECK(wo.binary == 1 && wo.msh_version == 4 && wo.positions == NULL);
    CHECK(defo_default_read_options().reorient == 1);

    defo_mesh *m = NULL;
    CHECK(defo_mesh_read(data_path("gmsh/box_o1_msh22.msh"), NULL, &m) == DEFO_OK);
    if (!m) return;
    wo.msh_version = 3;
    CHECK(defo_mesh_write(tmp_path("bad_version.msh"), m, &wo) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK(!io_file_exists(tmp_path("bad_version.msh")));
    wo.msh_version = 4;
    /* a directory that does not exist: IO error, nothing left behind */
    CHECK(defo_mesh_write(tmp_path("no/such/dir/x.msh"), m, &wo) == DEFO_ERR_IO);
    CHECK(defo_mesh_write(tmp_path("x.unknown"), m, &wo) == DEFO_ERR_UNSUPPORTED);
    defo_mesh *r = (defo_mesh *)1;
    CHECK(defo_mesh_read(tmp_path("does_not_exist.msh"), NULL, &r) == DEFO_ERR_IO && !r);
    CHECK(defo_mesh_read(tmp_path("x.unknown"), NULL, &r) == DEFO_ERR_UNSUPPORTED && !r);
    /* an explicit format overrides the extension */
    CHECK_OK(defo_mesh_write(
        tmp_path("as_msh.data"), m,
        &(defo_write_options){.format = DEFO_FORMAT_MSH, .binary = 0, .msh_version = 2}));
    defo_read_options ro = defo_default_read_options();
    ro.format = DEFO_FORMAT_MSH;
    CHECK_OK(defo_mesh_read(tmp_path("as_msh.data"), &ro, &r));
    if (r) CHECK(io_mesh_equal(m, r, true));
    if (r != (defo_mesh *)1) defo_mesh_destroy(r);
    defo_mesh_destroy(m);
}

int main(void) {
    RUN(test_gmsh_generated_files);
    RUN(test_gmsh_live_tet10);
    RUN(test_gmsh_round_trip);
    RUN(test_gmsh_sparse_tags);
    RUN(test_gmsh_absurd_count_no_allocation);
    RUN(test_gmsh_broken_corpus);
    RUN(test_gmsh_orientation_policy);
    RUN(test_gmsh_truncation_and_corruption);
    RUN(test_io_dispatch_and_write_errors);
    return test_summary();
}
