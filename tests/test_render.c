/*
 * tests/test_render.c — headless pictures (defo_render library).
 *
 * Every picture check is geometric or colorimetric and could fail: the
 * camera must put an object at the origin in the middle of the picture, a
 * box moved to +x on the right half, a field 0|1 at the two ends of the
 * colour map, inverted elements in magenta, and the OpenGL and software
 * backends must agree.  Pictures are written to DEFO_TEST_TMP/render/ so a
 * person can look at them (the contact sheet shows a box sinking into the
 * ground and squashing, coloured by J).
 */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "defo/element.h"
#include "defo/embed.h"
#include "defo/io.h"
#include "defo/mesh.h"
#include "defo/render.h"
#include "test.h"

#include <dirent.h>
#include <link.h>
#include <pthread.h>
#include <sys/stat.h>

#define OUT_DIR DEFO_TEST_TMP "/render"

static defo_renderer *gl_renderer;   /* NULL when EGL is unavailable here */
static defo_renderer *soft_renderer; /* always */

static const unsigned char *px(const defo_image *im, int x, int y) {
    return im->rgb + ((size_t)y * (size_t)im->width + (size_t)x) * 3;
}

/* Body colour (no field) is an orange clay; background and ground are
 * near-grey (blue-ish tint of at most ~20 levels). */
static int is_body(const unsigned char *p) {
    return p[0] > p[2] + 40 && p[0] > p[1] + 15;
}
static int is_greyish(const unsigned char *p) {
    int mx = p[0] > p[1] ? (p[0] > p[2] ? p[0] : p[2]) : (p[1] > p[2] ? p[1] : p[2]);
    int mn = p[0] < p[1] ? (p[0] < p[2] ? p[0] : p[2]) : (p[1] < p[2] ? p[1] : p[2]);
    return mx - mn < 30;
}
static int is_magenta(const unsigned char *p) {
    return p[0] > 70 && p[2] > 70 && p[1] * 3 < p[0] && p[1] * 3 < p[2];
}

static void save(const defo_image *im, const char *name) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", OUT_DIR, name);
    CHECK_OK(defo_image_write_png(path, im));
}

static defo_mesh *make_box(double x0, double y0, double z0, double sx, double sy, double sz,
                           int cells) {
    defo_box_def d = defo_default_box_def();
    d.origin[0] = x0;
    d.origin[1] = y0;
    d.origin[2] = z0;
    d.size[0] = sx;
    d.size[1] = sy;
    d.size[2] = sz;
    d.cells[0] = d.cells[1] = d.cells[2] = cells;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_box(&d, &m));
    return m;
}

/* Colour-map ends: viridis(0) and viridis(1) are matplotlib's end colours
 * (reference values), the diverging map is white-ish in the middle. */
static void test_colormap_ends(void) {
    unsigned char a[3], b[3], m[3];
    defo_colormap_rgb(DEFO_COLORMAP_VIRIDIS, 0.0, a);
    defo_colormap_rgb(DEFO_COLORMAP_VIRIDIS, 1.0, b);
    CHECK(a[0] == 68 && a[1] == 1 && a[2] == 84);
    CHECK(b[0] == 253 && b[1] == 231 && b[2] == 37);
    defo_colormap_rgb(DEFO_COLORMAP_VIRIDIS, -5.0, m); /* clamped */
    CHECK(m[0] == a[0] && m[1] == a[1] && m[2] == a[2]);
    defo_colormap_rgb(DEFO_COLORMAP_DIVERGING, 0.5, m);
    CHECK(m[0] == 221 && m[1] == 221 && m[2] == 221);
    defo_colormap_rgb(DEFO_COLORMAP_DIVERGING, 0.0, a);
    defo_colormap_rgb(DEFO_COLORMAP_DIVERGING, 1.0, b);
    CHECK(a[2] > a[0] && b[0] > b[2]); /* blue end, red end */
}

/* PNG round trip: what is written is read back bit for bit, at its size. */
static void test_png_roundtrip(void) {
    defo_image im;
    const unsigned char grey[3] = {10, 20, 30}, white[3] = {255, 255, 255};
    CHECK_OK(defo_image_create(37, 21, grey, &im));
    defo_image_draw_text(&im, 1, 1, 2, white, "J=1.5");
    int lit = 0;
    for (int i = 0; i < 37 * 21; i++) lit += im.rgb[3 * i] == 255;
    CHECK(lit > 20); /* the font drew something */
    save(&im, "roundtrip.png");
    defo_image back;
    CHECK_OK(defo_image_read_png(OUT_DIR "/roundtrip.png", &back));
    CHECK(back.width == 37 && back.height == 21);
    CHECK(back.rgb && memcmp(back.rgb, im.rgb, 37 * 21 * 3) == 0);
    defo_image_free(&back);
    defo_image_free(&im);
    CHECK(defo_image_read_png(OUT_DIR "/nonexistent.png", &back) == DEFO_ERR_IO);
}

/* A sphere at the origin: the centre pixel is body-coloured, the four
 * corners are background or ground (grey).  Both backends. */
static void sphere_case(defo_renderer *r, const char *file) {
    defo_sphere_def sd = defo_default_sphere_def();
    sd.radius = 1;
    sd.cell_size = 0.3;
    defo_mesh *m = NULL;
    CHECK_OK(defo_generate_sphere(&sd, &m));
    defo_render_def def = defo_default_render_def();
    def.width = 320;
    def.height = 240;
    defo_image im;
    CHECK_OK(defo_render_mesh(r, &def, m, NULL, NULL, 0, &im));
    CHECK(im.width == 320 && im.height == 240);
    if (im.rgb) {
        CHECK(is_body(px(&im, 160, 120)));
        CHECK(is_greyish(px(&im, 0, 0)) && is_greyish(px(&im, 319, 0)));
        CHECK(is_greyish(px(&im, 0, 239)) && is_greyish(px(&im, 319, 239)));
        /* the sphere fills a good part of the picture but not all of it */
        int body = 0;
        for (int i = 0; i < 320 * 240; i++) body += is_body(im.rgb + 3 * i);
        double frac = body / (320.0 * 240.0);
        TEST_REPORT("%s: sphere covers %.1f%% of the picture", defo_renderer_name(r), 100 * frac);
        CHECK(frac > 0.10 && frac < 0.6);
        save(&im, file);
    }
    defo_image_free(&im);
    defo_mesh_destroy(m);
}

static void test_sphere_centred(void) {
    sphere_case(soft_renderer, "sphere_soft.png");
    if (gl_renderer) sphere_case(gl_renderer, "sphere_gl.png");
}

/* Both backends frame and shade alike: mean colour difference over the
 * picture is small (edges and shadow softness differ a little). */
static void test_backends_agree(void) {
    if (!gl_renderer) {
        TEST_REPORT("OpenGL unavailable here: skipped");
        return;
    }
    defo_mesh *m = make_box(-0.5, -0.5, 0, 1, 1, 1, 2);
    defo_render_def def = defo_default_render_def();
    def.width = 200;
    def.height = 150;
    defo_image a, b;
    CHECK_OK(defo_render_mesh(gl_renderer, &def, m, NULL, NULL, 0, &a));
    CHECK_OK(defo_render_mesh(soft_renderer, &def, m, NULL, NULL, 0, &b));
    if (a.rgb && b.rgb) {
        double diff = 0;
        int mismatch = 0;
        for (int i = 0; i < 200 * 150; i++) {
            for (int k = 0; k < 3; k++) diff += fabs((double)a.rgb[3 * i + k] - b.rgb[3 * i + k]);
            mismatch += is_body(a.rgb + 3 * i) != is_body(b.rgb + 3 * i);
        }
        diff /= 200 * 150 * 3;
        TEST_REPORT("mean |gl - soft| = %.2f levels, body-mask mismatch %d of 30000 pixels", diff,
                    mismatch);
        CHECK(diff < 6.0);
        CHECK(mismatch < 300); /* 1% : silhouette edges only */
    }
    defo_image_free(&a);
    defo_image_free(&b);
    defo_mesh_destroy(m);
}

/* Fixed framing box [-2,2]^3: a box at +x appears on the right half, at -x
 * on the left half (the 3/4 view keeps +x to the right). */
static void box_side_case(defo_renderer *r, double x0, int expect_right) {
    defo_mesh *m = make_box(x0, -0.4, -0.4, 0.8, 0.8, 0.8, 2);
    defo_render_def def = defo_default_render_def();
    def.width = 320;
    def.height = 240;
    for (int k = 0; k < 3; k++) {
        def.frame_lo[k] = -2;
        def.frame_hi[k] = 2;
    }
    defo_image im;
    CHECK_OK(defo_render_mesh(r, &def, m, NULL, NULL, 0, &im));
    if (im.rgb) {
        double sx = 0;
        int n = 0;
        for (int y = 0; y < 240; y++)
            for (int x = 0; x < 320; x++)
                if (is_body(px(&im, x, y))) {
                    sx += x;
                    n++;
                }
        CHECK(n > 200);
        double cx = n ? sx / n : 0;
        TEST_REPORT("%s: box at x0 = %+.1f: body centroid at column %.0f of 320",
                    defo_renderer_name(r), x0, cx);
        CHECK(expect_right ? cx > 180 : cx < 140);
        if (expect_right) save(&im, "box_right.png");
    }
    defo_image_free(&im);
    defo_mesh_destroy(m);
}

static void test_box_position(void) {
    box_side_case(soft_renderer, 0.9, 1);
    box_side_case(soft_renderer, -1.7, 0);
    if (gl_renderer) {
        box_side_case(gl_renderer, 0.9, 1);
        box_side_case(gl_renderer, -1.7, 0);
    }
}

/* A cell field 0 on the left half (x < 0.5) and 1 on the right: object
 * pixels on the left of the picture have viridis-0 hue (purple: blue >>
 * green), on the right viridis-1 hue (yellow: green >> blue).  Lighting
 * scales channels, so hue ratios are what is checked. */
static void test_field_colours(void) {
    defo_mesh *m = make_box(0, 0, 0, 1, 0.4, 0.4, 4);
    size_t ne = (size_t)m->num_elems;
    double *f = malloc(ne * sizeof *f);
    for (size_t e = 0; e < ne; e++) {
        double cx = 0;
        for (int k = 0; k < 4; k++) cx += m->x[3 * (size_t)m->elems[4 * e + (size_t)k]] / 4;
        f[e] = cx < 0.5 ? 0.0 : 1.0;
    }
    CHECK_OK(defo_mesh_add_field(m, "f", DEFO_FIELD_CELL, 1, f));
    free(f);
    defo_render_def def = defo_default_render_def();
    def.width = 400;
    def.height = 300;
    def.field = "f";
    defo_renderer *rs[2] = {soft_renderer, gl_renderer};
    for (int ri = 0; ri < 2; ri++) {
        if (!rs[ri]) continue;
        defo_image im;
        CHECK_OK(defo_render_mesh(rs[ri], &def, m, NULL, NULL, 0, &im));
        if (!im.rgb) continue;
        /* object columns (non-grey pixels left of the legend panel at x >= 300),
         * then the left and right quarters of that extent */
        int xmin = 300, xmax = -1;
        for (int y = 0; y < 300; y++)
            for (int x = 0; x < 300; x++)
                if (!is_greyish(px(&im, x, y))) {
                    xmin = x < xmin ? x : xmin;
                    xmax = x > xmax ? x : xmax;
                }
        CHECK(xmax - xmin > 100);
        int q = (xmax - xmin) / 4;
        int purple_left = 0, yellow_left = 0, purple_right = 0, yellow_right = 0;
        for (int y = 0; y < 300; y++)
            for (int x = xmin; x <= xmax; x++) {
                const unsigned char *p = px(&im, x, y);
                int purple = p[2] > 2 * p[1] + 10 && p[0] > p[1];
                int yellow = p[1] > 2 * p[2] + 30 && p[0] > 2 * p[2];
                if (x < xmin + q) {
                    purple_left += purple;
                    yellow_left += yellow;
                } else if (x > xmax - q) {
                    purple_right += purple;
                    yellow_right += yellow;
                }
            }
        TEST_REPORT("%s: purple left %d right %d, yellow left %d right %d",
                    defo_renderer_name(rs[ri]), purple_left, purple_right, yellow_left,
                    yellow_right);
        CHECK(purple_left > 1000 && yellow_right > 1000);
        CHECK(purple_right == 0 && yellow_left == 0);
        if (ri == 0) save(&im, "field_halves.png");
        defo_image_free(&im);
    }
    defo_mesh_destroy(m);
}

/* Mirrored positions (x -> -x) invert every element: the picture is
 * magenta; the same mesh unmirrored has no magenta pixel. */
static void test_inverted_highlight(void) {
    defo_mesh *m = make_box(-0.5, -0.5, 0, 1, 1, 1, 2);
    size_t n = 3 * (size_t)m->num_nodes;
    double *x = malloc(n * sizeof *x);
    memcpy(x, m->x, n * sizeof *x);
    for (size_t i = 0; i < n; i += 3) x[i] = -x[i];
    defo_render_def def = defo_default_render_def();
    def.width = 240;
    def.height = 180;
    defo_renderer *rs[2] = {soft_renderer, gl_renderer};
    for (int ri = 0; ri < 2; ri++) {
        if (!rs[ri]) continue;
        defo_image a, b;
        CHECK_OK(defo_render_mesh(rs[ri], &def, m, x, NULL, 0, &a));
        CHECK_OK(defo_render_mesh(rs[ri], &def, m, NULL, NULL, 0, &b));
        if (a.rgb && b.rgb) {
            int mag_a = 0, mag_b = 0;
            for (int i = 0; i < 240 * 180; i++) {
                mag_a += is_magenta(a.rgb + 3 * i);
                mag_b += is_magenta(b.rgb + 3 * i);
            }
            TEST_REPORT("%s: magenta pixels inverted %d, upright %d", defo_renderer_name(rs[ri]),
                        mag_a, mag_b);
            CHECK(is_magenta(px(&a, 120, 90)));
            CHECK(mag_a > 2000 && mag_b == 0);
            if (ri == 0) save(&a, "inverted.png");
        }
        defo_image_free(&a);
        defo_image_free(&b);
    }
    /* highlighting off: no magenta */
    def.highlight_inverted = 0;
    defo_image c;
    CHECK_OK(defo_render_mesh(soft_renderer, &def, m, x, NULL, 0, &c));
    if (c.rgb) CHECK(!is_magenta(px(&c, 120, 90)) && is_body(px(&c, 120, 90)));
    defo_image_free(&c);
    free(x);
    defo_mesh_destroy(m);
}

/* A tet10 sphere looks curved: its 6-node boundary faces are drawn as 4 flat
 * triangles through the edge nodes, which lie on the sphere.  Reference: the
 * silhouette of a fine tet4 sphere (cell 0.08) under the same fixed camera;
 * a coarse tet10 sphere's silhouette area must be much closer to it than the
 * coarse tet4 sphere with the same corners (faceted, visibly smaller; drawn
 * from its corners only, the tet10 sphere would be exactly as small).  Not
 * 4x closer, as the halved chords alone would give: the mesher leaves some
 * boundary nodes off the sphere (r >= 0.954). */
static void test_tet10_curved(void) {
    double area[3];
    const double cells[3] = {0.08, 0.5, 0.5};
    const int orders[3] = {1, 1, 2};
    for (int c = 0; c < 3; c++) {
        defo_sphere_def sd = defo_default_sphere_def();
        sd.radius = 1;
        sd.cell_size = cells[c];
        sd.order = orders[c];
        defo_mesh *m = NULL;
        CHECK_OK(defo_generate_sphere(&sd, &m));
        defo_render_def def = defo_default_render_def();
        def.width = 640;
        def.height = 480;
        def.ground = 0;
        for (int k = 0; k < 3; k++) {
            def.frame_lo[k] = -0.8;
            def.frame_hi[k] = 0.8;
        }
        defo_image im = {0, 0, NULL};
        if (m) CHECK_OK(defo_render_mesh(soft_renderer, &def, m, NULL, NULL, 0, &im));
        int body = 0;
        for (int i = 0; im.rgb && i < 640 * 480; i++) body += !is_greyish(im.rgb + 3 * i);
        area[c] = body;
        if (c == 2 && im.rgb) save(&im, "sphere_tet10.png");
        if (c == 1 && im.rgb) save(&im, "sphere_tet4_coarse.png");
        defo_image_free(&im);
        defo_mesh_destroy(m);
    }
    TEST_REPORT("silhouette pixels: fine tet4 %.0f, coarse tet4 %.0f, coarse tet10 %.0f", area[0],
                area[1], area[2]);
    CHECK(fabs(area[2] - area[0]) < 0.65 * fabs(area[1] - area[0]));
}

/* The legend counts EVERY inverted element, not only those with a boundary
 * face: the centre node of a 4x4x4-cube box pushed past its neighbours
 * (0.25 away; the boundary is 0.5 away) inverts interior elements only.  No face is magenta, yet the legend shows
 * its magenta "inverted N of M" swatch (the count agreeing with
 * defo_element_jacobian_quality <= 0); upright, no magenta at all.  (Before,
 * the legend counted elements with a boundary face: 0 here, no swatch.) */
static void test_inverted_count_all(void) {
    defo_mesh *m = make_box(-0.5, -0.5, 0, 1, 1, 1, 4);
    size_t n = 3 * (size_t)m->num_nodes;
    double *x = malloc(n * sizeof *x);
    memcpy(x, m->x, n * sizeof *x);
    defo_index centre = -1;
    for (defo_index i = 0; i < m->num_nodes; i++)
        if (fabs(m->x[3 * i]) < 1e-12 && fabs(m->x[3 * i + 1]) < 1e-12 &&
            fabs(m->x[3 * i + 2] - 0.5) < 1e-12)
            centre = i;
    CHECK(centre >= 0);
    if (centre >= 0) x[3 * centre] = 0.4; /* past the x = 0.25 layer, inside the box */
    double *q = malloc((size_t)m->num_elems * sizeof *q),
           *J = malloc((size_t)m->num_elems * sizeof *J);
    CHECK_OK(defo_element_jacobian_quality(m, x, q, NULL, NULL));
    int inverted = 0;
    for (defo_index e = 0; e < m->num_elems; e++) {
        inverted += !(q[e] > 0);
        J[e] = 1;
    }
    CHECK(inverted > 0);
    CHECK_OK(defo_mesh_add_field(m, "J", DEFO_FIELD_CELL, 1, J));
    defo_render_def def = defo_default_render_def();
    def.width = 320;
    def.height = 240;
    def.field = "J";
    defo_image a = {0, 0, NULL}, b = {0, 0, NULL};
    CHECK_OK(defo_render_mesh(soft_renderer, &def, m, x, NULL, 0, &a));
    CHECK_OK(defo_render_mesh(soft_renderer, &def, m, NULL, NULL, 0, &b));
    int mag_body = 0, mag_legend = 0, mag_b = 0;
    for (int y = 0; a.rgb && b.rgb && y < 240; y++)
        for (int xx = 0; xx < 320; xx++) {
            int in_legend = xx > 250 && y < 170;
            if (is_magenta(px(&a, xx, y))) {
                if (in_legend)
                    mag_legend++;
                else
                    mag_body++;
            }
            mag_b += is_magenta(px(&b, xx, y));
        }
    TEST_REPORT("%d interior elements inverted: magenta pixels on the body %d, in the legend %d",
                inverted, mag_body, mag_legend);
    CHECK(mag_body == 0 && mag_legend > 20 && mag_b == 0);
    save(&a, "inverted_interior.png");
    defo_image_free(&a);
    defo_image_free(&b);
    free(q);
    free(J);
    free(x);
    defo_mesh_destroy(m);
}

/* Bounding box and count of the pixels where two pictures differ. */
typedef struct pixel_box {
    int x0, y0, x1, y1; /* inclusive; x0 > x1 when none differ */
    long count;
} pixel_box;

static pixel_box diff_box(const defo_image *a, const defo_image *b) {
    pixel_box r = {a->width, a->height, -1, -1, 0};
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width; x++)
            if (memcmp(px(a, x, y), px(b, x, y), 3)) {
                r.count++;
                r.x0 = x < r.x0 ? x : r.x0;
                r.x1 = x > r.x1 ? x : r.x1;
                r.y0 = y < r.y0 ? y : r.y0;
                r.y1 = y > r.y1 ? y : r.y1;
            }
    return r;
}

/* The legend's pixel extent: the pixels a legend changes (the picture with
 * the legend against the same picture without it) are its panel — colour
 * bar, labels, field name — and, when elements are inverted, one line
 * "inverted N of M" with its magenta swatch.  That line must not widen the
 * panel: at the sheet's tile size (400x300) and at 640x480, the panel over
 * the bar keeps the width it has with nothing inverted, and the line adds
 * one strip of at most 12 px (24 at text scale 2) under it.  (It used to widen
 * the whole translucent panel to the line's width: a rectangle across the
 * top right of every frame with inversions, 3-4x the panel's area.) */
static void test_legend_extent(void) {
    defo_mesh *m = make_box(-0.5, -0.5, 0, 1, 1, 1, 4);
    size_t n = 3 * (size_t)m->num_nodes;
    double *x = malloc(n * sizeof *x), *J = malloc((size_t)m->num_elems * sizeof *J);
    memcpy(x, m->x, n * sizeof *x);
    for (defo_index i = 0; i < m->num_nodes; i++) /* the centre node past its neighbours */
        if (fabs(m->x[3 * i]) < 1e-12 && fabs(m->x[3 * i + 1]) < 1e-12 &&
            fabs(m->x[3 * i + 2] - 0.5) < 1e-12)
            x[3 * i] = 0.4;
    for (defo_index e = 0; e < m->num_elems; e++) J[e] = 0.5 + (double)(e % 7) / 6;
    CHECK_OK(defo_mesh_add_field(m, "J", DEFO_FIELD_CELL, 1, J));
    const int sizes[2][2] = {{400, 300}, {640, 480}};
    for (int k = 0; k < 2; k++) {
        const int sc = sizes[k][1] >= 480 ? 2 : 1;
        defo_render_def def = defo_default_render_def();
        def.width = sizes[k][0];
        def.height = sizes[k][1];
        def.field = "J";
        defo_image im[2][2]; /* [inverted][legend] */
        pixel_box box[2];
        for (int inv = 0; inv < 2; inv++) {
            for (int leg = 0; leg < 2; leg++) {
                def.legend = leg;
                CHECK_OK(defo_render_mesh(soft_renderer, &def, m, inv ? x : NULL, NULL, 0,
                                          &im[inv][leg]));
            }
            box[inv] = diff_box(&im[inv][0], &im[inv][1]);
        }
        const pixel_box *a = &box[0], *b = &box[1];
        /* the pixels of the inverted picture's legend beside the panel (left
         * of it, in the panel's rows) and under it */
        long beside = 0;
        int below_y1 = a->y1;
        for (int y = 0; y < def.height; y++)
            for (int xx = 0; xx < def.width; xx++) {
                if (!memcmp(px(&im[1][0], xx, y), px(&im[1][1], xx, y), 3)) continue;
                if (y <= a->y1 && xx < a->x0) beside++;
                if (y > a->y1 && y > below_y1) below_y1 = y;
            }
        TEST_REPORT("%dx%d: legend without inversions x %d..%d y %d..%d (%ld px); with the "
                    "inverted line x %d..%d y %d..%d (%ld px), %ld px beside the panel, a strip of "
                    "%d px under it",
                    def.width, def.height, a->x0, a->x1, a->y0, a->y1, a->count, b->x0, b->x1,
                    b->y0, b->y1, b->count, beside, below_y1 - a->y1);
        CHECK(a->count > 0 && b->count > a->count); /* both drawn; the line adds pixels */
        CHECK(b->x1 == a->x1 && b->y0 == a->y0);    /* one anchor, the top right corner */
        CHECK(beside == 0);
        CHECK(below_y1 - a->y1 <= 12 * sc);
        /* the line adds at most its strip: the legend's width by 12 px a text scale */
        CHECK(b->count - a->count <= (long)(b->x1 - b->x0 + 1) * 12 * sc);
        /* the magenta swatch is drawn in the strip */
        int mag = 0;
        for (int y = a->y1 + 1; y <= below_y1; y++)
            for (int xx = b->x0; xx <= b->x1; xx++) mag += is_magenta(px(&im[1][1], xx, y));
        CHECK(mag > 20 * sc * sc);
        if (k == 0) save(&im[1][1], "legend_inverted.png");
        for (int inv = 0; inv < 2; inv++)
            for (int leg = 0; leg < 2; leg++) defo_image_free(&im[inv][leg]);
    }
    free(J);
    free(x);
    defo_mesh_destroy(m);
}

/* Automatic colour ranges: J is [0, 2] whatever its values (the sheet and
 * every frame agree); other fields use their 1st and 99th percentiles
 * (nearest rank), so one outlier of 1e6 among 0..99 leaves the range 1..99. */
static void test_auto_range(void) {
    double v[101], r[2];
    for (int i = 0; i < 100; i++) v[i] = 99 - i;
    v[100] = 1e6;
    CHECK_OK(defo_render_auto_range("von_mises", v, 101, r));
    TEST_REPORT("0..99 and 1e6: range [%g, %g]", r[0], r[1]);
    CHECK(r[0] == 1 && r[1] == 99);
    double j[3] = {0.97, 1.0, 1.01};
    CHECK_OK(defo_render_auto_range("J", j, 3, r));
    CHECK(r[0] == 0 && r[1] == 2);
    double c[4] = {5, 5, 5, NAN};
    CHECK_OK(defo_render_auto_range("s", c, 4, r));
    CHECK(r[0] == 5 && r[1] == 5);
    CHECK(defo_render_auto_range("s", c + 3, 1, r) == DEFO_ERR_INVALID_ARGUMENT);
}

/* A body drawn through its embedded surface (MG04 §5.1): a sphere surface
 * bound to a 2x2x2-cube box.  Drawn plain, the picture is exactly the sphere
 * surface drawn on its own (same triangles), not the box; coloured by a cell
 * field that is 0 on the box's tets at x < 0 and 1 on the others, the
 * sphere's left and right show the two ends of the colour map. */
static void test_embedded_surface(void) {
    defo_mesh *box = make_box(-1, -1, -1, 2, 2, 2, 2);
    defo_sphere_def sd = defo_default_sphere_def();
    sd.radius = 0.8;
    sd.cell_size = 0.2;
    defo_mesh *ball = NULL, *surf = NULL;
    CHECK_OK(defo_generate_sphere(&sd, &ball));
    defo_boundary bd;
    CHECK_OK(defo_mesh_boundary(ball, 0, &bd));
    CHECK_OK(defo_mesh_create(0, &surf));
    for (defo_index i = 0; i < ball->num_nodes; i++)
        defo_mesh_add_node(surf, ball->x[3 * i], ball->x[3 * i + 1], ball->x[3 * i + 2], NULL);
    for (defo_index f = 0; f < bd.num_faces; f++) defo_mesh_add_tri(surf, bd.faces + 3 * f, 3, 0);
    defo_boundary_free(&bd);
    defo_embed *emb = NULL;
    CHECK_OK(defo_embed_create(box, surf, &emb));
    if (!emb) return;
    defo_render_def def = defo_default_render_def();
    def.width = 320;
    def.height = 240;
    def.ground = 0;
    for (int k = 0; k < 3; k++) {
        def.frame_lo[k] = -1;
        def.frame_hi[k] = 1;
    }
    defo_render_part part;
    memset(&part, 0, sizeof part);
    part.mesh = box;
    part.surface = surf;
    part.surface_elem = defo_embed_elements(emb);
    part.surface_bary = defo_embed_barycentric(emb);
    defo_image a = {0, 0, NULL}, b = {0, 0, NULL}, c = {0, 0, NULL};
    CHECK_OK(defo_render_parts(soft_renderer, &def, &part, 1, NULL, 0, &a));
    CHECK_OK(defo_render_mesh(soft_renderer, &def, surf, NULL, NULL, 0, &b));
    CHECK_OK(defo_render_mesh(soft_renderer, &def, box, NULL, NULL, 0, &c));
    if (a.rgb && b.rgb && c.rgb) {
        CHECK(memcmp(a.rgb, b.rgb, 320 * 240 * 3) == 0);
        CHECK(memcmp(a.rgb, c.rgb, 320 * 240 * 3) != 0);
        save(&a, "embedded_plain.png");
    }
    double *f = malloc((size_t)box->num_elems * sizeof *f);
    for (defo_index e = 0; e < box->num_elems; e++) {
        double cx = 0;
        for (int k = 0; k < 4; k++) cx += box->x[3 * box->elems[4 * e + k]] / 4;
        f[e] = cx < 0 ? 0 : 1;
    }
    CHECK_OK(defo_mesh_add_field(box, "f", DEFO_FIELD_CELL, 1, f));
    free(f);
    def.field = "f";
    defo_image d = {0, 0, NULL};
    CHECK_OK(defo_render_parts(soft_renderer, &def, &part, 1, NULL, 0, &d));
    int purple = 0, yellow = 0;
    for (int i = 0; d.rgb && i < 320 * 240; i++) {
        const unsigned char *p = d.rgb + 3 * i;
        purple += p[2] > 2 * p[1] + 10 && p[0] > p[1];
        yellow += p[1] > 2 * p[2] + 30 && p[0] > 2 * p[2];
    }
    TEST_REPORT("embedded sphere coloured by the box's tets: purple %d, yellow %d pixels", purple,
                yellow);
    CHECK(purple > 1000 && yellow > 1000);
    if (d.rgb) save(&d, "embedded_field.png");
    /* a point field needs the barycentric coordinates */
    double *pf = calloc((size_t)box->num_nodes, sizeof *pf);
    CHECK_OK(defo_mesh_add_field(box, "pf", DEFO_FIELD_POINT, 1, pf));
    free(pf);
    def.field = "pf";
    part.surface_bary = NULL;
    defo_image e2 = {0, 0, NULL};
    CHECK(defo_render_parts(soft_renderer, &def, &part, 1, NULL, 0, &e2) ==
          DEFO_ERR_INVALID_ARGUMENT);
    defo_image_free(&a);
    defo_image_free(&b);
    defo_image_free(&c);
    defo_image_free(&d);
    defo_embed_destroy(emb);
    defo_mesh_destroy(surf);
    defo_mesh_destroy(ball);
    defo_mesh_destroy(box);
}

/* Errors: a missing field names the available ones; bad sizes; empty mesh. */
static void test_errors(void) {
    defo_mesh *m = make_box(0, 0, 0, 1, 1, 1, 1);
    double *v = calloc((size_t)m->num_nodes * 3, sizeof *v);
    CHECK_OK(defo_mesh_add_field(m, "velocity", DEFO_FIELD_POINT, 3, v));
    free(v);
    defo_render_def def = defo_default_render_def();
    def.field = "stress";
    defo_image im;
    CHECK(defo_render_mesh(soft_renderer, &def, m, NULL, NULL, 0, &im) ==
          DEFO_ERR_INVALID_ARGUMENT);
    CHECK(strstr(defo_last_error(), "stress") && strstr(defo_last_error(), "velocity"));
    CHECK(im.rgb == NULL);
    def = defo_default_render_def();
    def.width = 4;
    CHECK(defo_render_mesh(soft_renderer, &def, m, NULL, NULL, 0, &im) ==
          DEFO_ERR_INVALID_ARGUMENT);
    defo_mesh *empty = NULL;
    CHECK_OK(defo_mesh_create(1, &empty));
    CHECK(defo_render_mesh(soft_renderer, NULL, empty, NULL, NULL, 0, &im) ==
          DEFO_ERR_INVALID_MESH);
    double lo, hi;
    CHECK(defo_render_field_range(m, "nope", &lo, &hi) == DEFO_ERR_INVALID_ARGUMENT);
    CHECK_OK(defo_render_field_range(m, "velocity", &lo, &hi));
    CHECK(lo == 0 && hi == 0);
    defo_mesh_destroy(empty);
    defo_mesh_destroy(m);
}

/* Colliders are drawn: a sphere collider beside the body shows up as
 * collider-coloured (blue-grey) pixels where it stands; a +z plane is the
 * ground (no extra square). */
static void test_colliders(void) {
    defo_mesh *m = make_box(-0.5, -0.5, 0, 1, 1, 1, 2);
    defo_render_shape s[3];
    defo_shape_def sp = defo_default_shape_def();
    sp.type = DEFO_SHAPE_SPHERE;
    sp.radius = 0.5;
    s[0] = defo_render_shape_from(&sp);
    s[0].translation[0] = 1.4; /* to the right of the box */
    s[0].translation[2] = 0.5;
    defo_shape_def pl = defo_default_shape_def();
    pl.type = DEFO_SHAPE_PLANE;
    pl.normal[0] = pl.normal[1] = 0;
    pl.normal[2] = 1;
    pl.center[0] = pl.center[1] = pl.center[2] = 0;
    s[1] = defo_render_shape_from(&pl);
    defo_shape_def cap = defo_default_shape_def();
    cap.type = DEFO_SHAPE_CAPSULE;
    cap.radius = 0.15;
    cap.half_length = 0.6;
    cap.axis[0] = 1;
    cap.axis[1] = cap.axis[2] = 0;
    s[2] = defo_render_shape_from(&cap);
    s[2].translation[1] = -1.0;
    s[2].translation[2] = 0.15;
    defo_render_def def = defo_default_render_def();
    def.width = 320;
    def.height = 240;
    for (int k = 0; k < 3; k++) {
        def.frame_lo[k] = -1.6;
        def.frame_hi[k] = 1.6;
    }
    defo_renderer *rs[2] = {soft_renderer, gl_renderer};
    for (int ri = 0; ri < 2; ri++) {
        if (!rs[ri]) continue;
        defo_image im;
        CHECK_OK(defo_render_mesh(rs[ri], &def, m, NULL, s, 3, &im));
        if (!im.rgb) continue;
        int right = 0, left = 0;
        for (int y = 0; y < 240; y++)
            for (int x = 0; x < 320; x++) {
                const unsigned char *p = px(&im, x, y);
                int blue_grey = p[2] > p[0] + 15 && p[2] > p[1] + 3 && !is_body(p);
                if (x > 200) right += blue_grey;
                if (x < 120) left += blue_grey;
            }
        TEST_REPORT("%s: collider-coloured pixels right %d left %d", defo_renderer_name(rs[ri]),
                    right, left);
        CHECK(right > 300);
        CHECK(right > 3 * left);
        if (ri == 0) save(&im, "colliders.png");
        defo_image_free(&im);
    }
    defo_mesh_destroy(m);
}

/* A sequence: a box falls onto the ground, then squashes (analytic
 * deformation x' = c + S (x - c), J = sx sy sz per element) and shows a
 * contact sheet.  Checks: the sheet has the computed size; the J legend is
 * centred on 1; frames are written as .vtu + .pvd for the CLI. */
static void test_sequence_sheet(void) {
    defo_mesh *m = make_box(-0.5, -0.5, 0.0, 1, 1, 1, 4);
    enum { NF = 8 };
    size_t n = 3 * (size_t)m->num_nodes;
    double *x = malloc(n * sizeof *x);
    double *J = malloc((size_t)m->num_elems * sizeof *J);
    defo_image tiles[NF];
    char labels[NF][32];
    const char *lab[NF];
    defo_render_def def = defo_default_render_def();
    def.width = 320;
    def.height = 240;
    def.field = "J";
    def.range[0] = 0.4;
    def.range[1] = 1.6;
    /* framing box over all frames: from z = 0 (squashed) to z = 2.2 (start) */
    double lo[3] = {-0.9, -0.9, 0}, hi[3] = {0.9, 0.9, 2.2};
    memcpy(def.frame_lo, lo, sizeof lo);
    memcpy(def.frame_hi, hi, sizeof hi);
    def.ground_height_set = 1;
    def.ground_height = 0;
    char files[NF][256];
    const char *fp[NF];
    double times[NF];
    mkdir(OUT_DIR "/seq", 0755);
    mkdir(OUT_DIR "/seq/frames", 0755);
    for (int f = 0; f < NF; f++) {
        double t = (double)f / (NF - 1);
        /* first half: fall from height 1.2 to 0; second half: squash */
        double drop = t < 0.5 ? 1.2 * (1 - (2 * t) * (2 * t)) : 0;
        double sq = t < 0.5 ? 0 : (t - 0.5) * 2; /* 0..1 */
        double sz = 1 - 0.55 * sq, sxy = 1 + 0.35 * sq;
        for (size_t i = 0; i < n; i += 3) {
            x[i] = sxy * m->x[i];
            x[i + 1] = sxy * m->x[i + 1];
            x[i + 2] = sz * m->x[i + 2] + drop;
        }
        for (defo_index e = 0; e < m->num_elems; e++) J[e] = sxy * sxy * sz;
        CHECK_OK(defo_mesh_add_field(m, "J", DEFO_FIELD_CELL, 1, J));
        snprintf(labels[f], sizeof labels[f], "frame %d  t=%.2f s", f, t);
        lab[f] = labels[f];
        CHECK_OK(defo_render_mesh(gl_renderer ? gl_renderer : soft_renderer, &def, m, x, NULL, 0,
                                  &tiles[f]));
        /* the frame as a simulation would write it: deformed positions */
        snprintf(files[f], sizeof files[f], OUT_DIR "/seq/frames/frame_%04d.vtu", f);
        fp[f] = files[f];
        times[f] = t;
        defo_write_options wo = defo_default_write_options();
        wo.positions = x;
        CHECK_OK(defo_mesh_write(files[f], m, &wo));
    }
    CHECK_OK(defo_pvd_write(OUT_DIR "/seq/scene.pvd", times, fp, NF));
    defo_image sheet;
    CHECK_OK(defo_image_sheet(tiles, lab, NF, 4, "box falls and squashes: J = det F", &sheet));
    /* layout: margin 8, 4 columns of 320, 2 rows of 240 + label 13, title 24 */
    CHECK(sheet.width == 8 + 4 * (320 + 8));
    CHECK(sheet.height == 24 + 8 + 2 * (240 + 13 + 8));
    /* the last tile is squashed: J = 1.35^2 * 0.45 = 0.82 < 1, the blue side
     * of the diverging map; the first is neutral (J = 1: grey-white) */
    if (tiles[NF - 1].rgb && tiles[0].rgb) {
        int blue_last = 0, blue_first = 0;
        for (int i = 0; i < 320 * 240; i++) {
            const unsigned char *p = tiles[NF - 1].rgb + 3 * i, *q = tiles[0].rgb + 3 * i;
            blue_last += p[2] > p[0] + 40;
            blue_first += q[2] > q[0] + 40;
        }
        TEST_REPORT("bluish (J < 1) pixels: first frame %d, last frame %d", blue_first, blue_last);
        CHECK(blue_last > 1000 && blue_first < blue_last / 4);
    }
    save(&sheet, "sheet.png");
    defo_image_free(&sheet);
    for (int f = 0; f < NF; f++) defo_image_free(&tiles[f]);
    free(x);
    free(J);
    defo_mesh_destroy(m);
}

/* Thread-local storage the driver leaves on the calling thread.  glibc
 * allocates the TLS of a library loaded by dlopen lazily, per thread, on the
 * heap; a thread that exists from the start holds TLS blocks only of the
 * libraries whose TLS is static (allocated for every thread at its creation),
 * which is exactly the set a freshly created thread holds.  The OpenGL backend
 * keeps every EGL/GL call on its own thread (render/gl.c), so after rendering
 * the calling thread must hold no block a fresh thread lacks — with the calls
 * on this thread it held llvmpipe's libLLVM block, the one the leak checker of
 * older ASan runtimes mis-sizes at exit and crashes on by chance.  Also: a
 * renderer that comes and goes leaves no thread behind (counted in /proc). */
typedef struct tls_modules {
    int n;
    size_t id[256];
    char name[256][160];
} tls_modules;

static int add_tls_module(struct dl_phdr_info *info, size_t size, void *data) {
    (void)size;
    tls_modules *t = data;
    if (info->dlpi_tls_modid != 0 && info->dlpi_tls_data != NULL && t->n < 256) {
        t->id[t->n] = info->dlpi_tls_modid;
        snprintf(t->name[t->n], sizeof t->name[0], "%s", info->dlpi_name);
        t->n++;
    }
    return 0;
}

static void *fresh_thread_tls(void *arg) {
    dl_iterate_phdr(add_tls_module, arg);
    return NULL;
}

static int count_threads(void) {
    DIR *d = opendir("/proc/self/task");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static void test_gl_thread_state(void) {
    if (!gl_renderer) {
        TEST_REPORT("OpenGL unavailable here: skipped");
        return;
    }
    defo_mesh *m = make_box(-0.5, -0.5, 0, 1, 1, 1, 2);
    defo_render_def def = defo_default_render_def();
    def.width = 160;
    def.height = 120;
    defo_image im;
    CHECK_OK(defo_render_mesh(gl_renderer, &def, m, NULL, NULL, 0, &im));
    defo_image_free(&im);
    /* a second renderer created, used and destroyed: no thread left over */
    int before = count_threads();
    defo_renderer *r = NULL;
    CHECK_OK(defo_renderer_create(DEFO_RENDER_OPENGL, &r));
    if (r) {
        CHECK_OK(defo_render_mesh(r, &def, m, NULL, NULL, 0, &im));
        defo_image_free(&im);
    }
    defo_renderer_destroy(r);
    int after = count_threads();
    TEST_REPORT("threads before a renderer %d, after it is destroyed %d", before, after);
    CHECK(before > 0 && after == before);
    defo_mesh_destroy(m);

    static tls_modules fresh, mine;
    fresh.n = mine.n = 0;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fresh_thread_tls, &fresh) == 0);
    pthread_join(t, NULL);
    dl_iterate_phdr(add_tls_module, &mine);
    int lazy = 0;
    for (int i = 0; i < mine.n; i++) {
        int in_fresh = 0;
        for (int j = 0; j < fresh.n; j++) in_fresh |= fresh.id[j] == mine.id[i];
        CHECK_MSG(in_fresh, "this thread holds the lazily allocated TLS of %s", mine.name[i]);
        lazy += !in_fresh;
    }
    TEST_REPORT("TLS blocks: this thread %d, a fresh thread %d, lazily allocated here %d", mine.n,
                fresh.n, lazy);
    CHECK(fresh.n > 0);
}

int main(void) {
    mkdir(DEFO_TEST_TMP, 0755);
    mkdir(OUT_DIR, 0755);
    if (defo_renderer_create(DEFO_RENDER_OPENGL, &gl_renderer) < 0) {
        printf("  OpenGL/EGL unavailable (%s): software backend only\n", defo_last_error());
        gl_renderer = NULL;
    } else {
        printf("  backend: %s\n", defo_renderer_name(gl_renderer));
    }
    CHECK_OK(defo_renderer_create(DEFO_RENDER_SOFTWARE, &soft_renderer));
    RUN(test_colormap_ends);
    RUN(test_png_roundtrip);
    RUN(test_sphere_centred);
    RUN(test_backends_agree);
    RUN(test_box_position);
    RUN(test_field_colours);
    RUN(test_inverted_highlight);
    RUN(test_tet10_curved);
    RUN(test_inverted_count_all);
    RUN(test_legend_extent);
    RUN(test_auto_range);
    RUN(test_embedded_surface);
    RUN(test_errors);
    RUN(test_colliders);
    RUN(test_sequence_sheet);
    RUN(test_gl_thread_state);
    defo_renderer_destroy(gl_renderer);
    defo_renderer_destroy(soft_renderer);
    return test_summary();
}
