/*
 * render/image.c — RGB images: PNG files (libpng), a built-in 5x7 bitmap
 * font for labels, blitting, contact sheets and the colour maps.
 *
 * PNGs are written to "<path>.tmp" and renamed, so an output file is either
 * complete or absent (docs/architecture.md: never a half-written output).  The font covers
 * digits, upper-case letters and the punctuation numbers and captions need;
 * lower case is drawn as upper case and anything else as '?'.
 *
 * Colour maps: viridis (matplotlib's perceptually uniform map, 11 samples,
 * linear in between) and Moreland's cool-warm diverging map (5 samples), the
 * latter for J = det F so that 1 (no volume change) is the neutral middle.
 */
#include "render/render_internal.h"

#include <png.h>
#include <stdio.h>
#include <math.h>
#include <string.h>

defo_status defo_image_create(int width, int height, const unsigned char rgb[3], defo_image *out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_image_create: out is NULL");
    out->width = out->height = 0;
    out->rgb = NULL;
    if (width < 1 || height < 1 || width > 65536 || height > 65536)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "image size %dx%d is out of range", width,
                          height);
    size_t n = (size_t)width * (size_t)height * 3;
    unsigned char *p = defo_malloc(n);
    if (!p) return defo_error_oom("image", n);
    for (size_t i = 0; i < n; i += 3) {
        p[i] = rgb ? rgb[0] : 0;
        p[i + 1] = rgb ? rgb[1] : 0;
        p[i + 2] = rgb ? rgb[2] : 0;
    }
    out->width = width;
    out->height = height;
    out->rgb = p;
    return DEFO_OK;
}

void defo_image_free(defo_image *img) {
    if (!img) return;
    defo_free(img->rgb);
    img->rgb = NULL;
    img->width = img->height = 0;
}

/* libpng reports errors by longjmp; the jmp_buf lives in png_struct. */
defo_status defo_image_write_png(const char *path, const defo_image *img) {
    if (!path || !img || !img->rgb || img->width < 1 || img->height < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_image_write_png: bad arguments");
    size_t len = strlen(path);
    char *tmp = defo_malloc(len + 5);
    if (!tmp) return defo_error_oom("file name", len + 5);
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".tmp", 5);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        defo_status s = defo_error(DEFO_ERR_IO, "%s: cannot open for writing", path);
        defo_free(tmp);
        return s;
    }
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_bytep *rows = defo_malloc((size_t)img->height * sizeof *rows);
    volatile int ok = 0;
    if (png && info && rows && !setjmp(png_jmpbuf(png))) {
        png_init_io(png, f);
        png_set_IHDR(png, info, (png_uint_32)img->width, (png_uint_32)img->height, 8,
                     PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                     PNG_FILTER_TYPE_DEFAULT);
        png_set_compression_level(png, 6);
        png_write_info(png, info);
        for (int y = 0; y < img->height; y++)
            rows[y] = img->rgb + (size_t)y * (size_t)img->width * 3;
        png_write_image(png, rows);
        png_write_end(png, NULL);
        ok = 1;
    }
    if (png) png_destroy_write_struct(&png, info ? &info : NULL);
    defo_free(rows);
    if (fclose(f) != 0) ok = 0;
    defo_status s = DEFO_OK;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        s = defo_error(DEFO_ERR_IO, "%s: cannot write PNG", path);
    }
    defo_free(tmp);
    return s;
}

defo_status defo_image_read_png(const char *path, defo_image *out) {
    if (!path || !out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_image_read_png: NULL");
    out->width = out->height = 0;
    out->rgb = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return defo_error(DEFO_ERR_IO, "%s: cannot open", path);
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_bytep *volatile rows = NULL;
    unsigned char *volatile pix = NULL;
    volatile int ok = 0;
    volatile png_uint_32 w = 0, h = 0;
    if (png && info && !setjmp(png_jmpbuf(png))) {
        png_init_io(png, f);
        png_read_info(png, info);
        w = png_get_image_width(png, info);
        h = png_get_image_height(png, info);
        if (w > 0 && h > 0 && w <= 65536 && h <= 65536) {
            png_set_expand(png);
            png_set_strip_16(png);
            png_set_strip_alpha(png);
            png_set_gray_to_rgb(png);
            png_read_update_info(png, info);
            if (png_get_rowbytes(png, info) == (size_t)w * 3) {
                pix = defo_malloc((size_t)w * h * 3);
                rows = defo_malloc(h * sizeof(png_bytep));
                if (pix && rows) {
                    for (png_uint_32 y = 0; y < h; y++) rows[y] = pix + (size_t)y * w * 3;
                    png_read_image(png, rows);
                    ok = 1;
                }
            }
        }
    }
    if (png) png_destroy_read_struct(&png, info ? &info : NULL, NULL);
    fclose(f);
    defo_free(rows);
    if (!ok) {
        defo_free(pix);
        return defo_error(DEFO_ERR_PARSE, "%s: not a readable 8-bit PNG", path);
    }
    out->width = (int)w;
    out->height = (int)h;
    out->rgb = pix;
    return DEFO_OK;
}

/* ------------------------------------------------------------------ font */
/* 5x7 glyphs: 7 rows, bit 4 is the leftmost column. */
typedef struct glyph {
    char c;
    unsigned char rows[7];
} glyph;

static const glyph font[] = {
    {' ', {0, 0, 0, 0, 0, 0, 0}},
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'A', {0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'B', {0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E}},
    {'C', {0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E}},
    {'D', {0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C}},
    {'E', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F}},
    {'F', {0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10}},
    {'G', {0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F}},
    {'H', {0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11}},
    {'I', {0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'J', {0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C}},
    {'K', {0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11}},
    {'L', {0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F}},
    {'M', {0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11}},
    {'N', {0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11}},
    {'O', {0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'P', {0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10}},
    {'Q', {0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D}},
    {'R', {0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11}},
    {'S', {0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E}},
    {'T', {0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'U', {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E}},
    {'V', {0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04}},
    {'W', {0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A}},
    {'X', {0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11}},
    {'Y', {0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04}},
    {'Z', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F}},
    {'.', {0, 0, 0, 0, 0, 0x0C, 0x0C}},
    {',', {0, 0, 0, 0, 0x0C, 0x04, 0x08}},
    {'-', {0, 0, 0, 0x1F, 0, 0, 0}},
    {'+', {0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0}},
    {'=', {0, 0, 0x1F, 0, 0x1F, 0, 0}},
    {':', {0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0}},
    {';', {0, 0x0C, 0x0C, 0, 0x0C, 0x04, 0x08}},
    {'/', {0, 0x01, 0x02, 0x04, 0x08, 0x10, 0}},
    {'(', {0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02}},
    {')', {0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08}},
    {'[', {0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E}},
    {']', {0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E}},
    {'<', {0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02}},
    {'>', {0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08}},
    {'%', {0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03}},
    {'_', {0, 0, 0, 0, 0, 0, 0x1F}},
    {'\'', {0x0C, 0x04, 0x08, 0, 0, 0, 0}},
    {'"', {0x0A, 0x0A, 0x0A, 0, 0, 0, 0}},
    {'*', {0, 0x04, 0x15, 0x0E, 0x15, 0x04, 0}},
    {'!', {0x04, 0x04, 0x04, 0x04, 0x04, 0, 0x04}},
    {'|', {0x04, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04}},
    {'#', {0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A}},
    {'?', {0x0E, 0x11, 0x01, 0x02, 0x04, 0, 0x04}},
};

static const glyph *find_glyph(char c) {
    if (c >= 'a' && c <= 'z') c = (char)(c - 'a' + 'A');
    size_t n = sizeof font / sizeof font[0];
    for (size_t i = 0; i < n; i++)
        if (font[i].c == c) return &font[i];
    return &font[n - 1]; /* '?' */
}

int defo_image_text_width(const char *text, int scale) {
    if (!text || !text[0]) return 0;
    return (int)strlen(text) * 6 * scale - scale;
}

void defo_image_draw_text(defo_image *img, int x, int y, int scale, const unsigned char rgb[3],
                          const char *text) {
    if (!img || !img->rgb || !text || scale < 1) return;
    for (const char *p = text; *p; p++, x += 6 * scale) {
        const glyph *g = find_glyph(*p);
        for (int r = 0; r < 7; r++)
            for (int col = 0; col < 5; col++) {
                if (!(g->rows[r] & (0x10 >> col))) continue;
                for (int dy = 0; dy < scale; dy++)
                    for (int dx = 0; dx < scale; dx++) {
                        int px = x + col * scale + dx, py = y + r * scale + dy;
                        if (px < 0 || py < 0 || px >= img->width || py >= img->height) continue;
                        unsigned char *d =
                            img->rgb + ((size_t)py * (size_t)img->width + (size_t)px) * 3;
                        d[0] = rgb[0];
                        d[1] = rgb[1];
                        d[2] = rgb[2];
                    }
            }
    }
}

void defo_image_draw_line(defo_image *img, double x0, double y0, double x1, double y1, int width,
                          const unsigned char rgb[3]) {
    if (!img || !img->rgb || width < 1 || !isfinite(x0) || !isfinite(y0) || !isfinite(x1) ||
        !isfinite(y1))
        return;
    /* a width x width square stamped at every pixel step along the segment
     * (DDA over the longer axis), clipped to the image */
    double dx = x1 - x0, dy = y1 - y0;
    double len = fmax(fabs(dx), fabs(dy));
    if (len > 1e6) return; /* far outside any picture */
    int steps = (int)ceil(len) + 1;
    int lo = -(width - 1) / 2;
    for (int i = 0; i < steps; i++) {
        double t = steps > 1 ? (double)i / (steps - 1) : 0;
        int cx = (int)floor(x0 + t * dx + 0.5), cy = (int)floor(y0 + t * dy + 0.5);
        for (int oy = lo; oy < lo + width; oy++)
            for (int ox = lo; ox < lo + width; ox++) {
                int px = cx + ox, py = cy + oy;
                if (px < 0 || py < 0 || px >= img->width || py >= img->height) continue;
                unsigned char *d = img->rgb + ((size_t)py * (size_t)img->width + (size_t)px) * 3;
                d[0] = rgb[0];
                d[1] = rgb[1];
                d[2] = rgb[2];
            }
    }
}

void defo_image_blit(defo_image *dst, const defo_image *src, int x, int y) {
    if (!dst || !src || !dst->rgb || !src->rgb) return;
    for (int sy = 0; sy < src->height; sy++) {
        int dy = y + sy;
        if (dy < 0 || dy >= dst->height) continue;
        for (int sx = 0; sx < src->width; sx++) {
            int dx = x + sx;
            if (dx < 0 || dx >= dst->width) continue;
            memcpy(dst->rgb + ((size_t)dy * (size_t)dst->width + (size_t)dx) * 3,
                   src->rgb + ((size_t)sy * (size_t)src->width + (size_t)sx) * 3, 3);
        }
    }
}

defo_status defo_image_sheet(const defo_image *tiles, const char *const *labels, int count,
                             int cols, const char *title, defo_image *out) {
    if (!out) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_image_sheet: out is NULL");
    out->rgb = NULL;
    out->width = out->height = 0;
    if (!tiles || count < 1 || cols < 1)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_image_sheet: no tiles");
    int tw = tiles[0].width, th = tiles[0].height;
    for (int i = 0; i < count; i++)
        if (tiles[i].width != tw || tiles[i].height != th || !tiles[i].rgb)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "defo_image_sheet: tile %d is not %dx%d like tile 0", i, tw, th);
    if (cols > count) cols = count;
    int rows = (count + cols - 1) / cols;
    int scale = th >= 300 ? 2 : 1;
    int margin = 8 * scale, label_h = labels ? 7 * scale + 6 * scale : 0;
    int title_h = title && title[0] ? 7 * 2 * scale + 10 * scale : 0;
    int W = margin + cols * (tw + margin);
    int H = title_h + margin + rows * (th + label_h + margin);
    const unsigned char bg[3] = {34, 36, 40}, fg[3] = {235, 235, 235};
    defo_status s = defo_image_create(W, H, bg, out);
    if (s < 0) return s;
    if (title_h) defo_image_draw_text(out, margin, margin, 2 * scale, fg, title);
    for (int i = 0; i < count; i++) {
        int x = margin + (i % cols) * (tw + margin);
        int y = title_h + margin + (i / cols) * (th + label_h + margin);
        defo_image_blit(out, &tiles[i], x, y);
        if (labels && labels[i])
            defo_image_draw_text(out, x, y + th + 3 * scale, scale, fg, labels[i]);
    }
    return DEFO_OK;
}

/* ------------------------------------------------------------- colour maps */
static const unsigned char viridis[11][3] = {
    {68, 1, 84},    {72, 36, 117},  {65, 68, 135},  {53, 95, 141},  {42, 120, 142}, {33, 145, 140},
    {34, 168, 132}, {68, 191, 112}, {122, 209, 81}, {189, 223, 38}, {253, 231, 37}};
static const unsigned char coolwarm[5][3] = {
    {59, 76, 192}, {141, 176, 254}, {221, 221, 221}, {244, 154, 123}, {180, 4, 38}};

void defo_colormap_rgb(defo_colormap map, double t, unsigned char rgb[3]) {
    if (!(t > 0)) t = 0; /* NaN -> 0 */
    if (t > 1) t = 1;
    const unsigned char(*tab)[3] = map == DEFO_COLORMAP_DIVERGING ? coolwarm : viridis;
    int n = map == DEFO_COLORMAP_DIVERGING ? 5 : 11;
    double u = t * (n - 1);
    int i = (int)u;
    if (i >= n - 1) i = n - 2;
    double f = u - i;
    for (int k = 0; k < 3; k++)
        rgb[k] = (unsigned char)(tab[i][k] + f * (tab[i + 1][k] - tab[i][k]) + 0.5);
}
