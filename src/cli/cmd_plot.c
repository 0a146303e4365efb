/*
 * cli/cmd_plot.c — `defo plot OUTDIR [-o OUT.png] [--size WxH]`: the
 * statistics of a run (OUTDIR/stats.jsonl, one JSON object per frame, see
 * run_output.c) as line plots over simulated time in one PNG (default
 * OUTDIR/stats.png), six panels stacked:
 *
 *   energy [J]          kinetic, elastic and their sum
 *   inverted elements   all bodies
 *   volume ratio        current / rest volume, one line per body
 *   iterations / frame  CG iterations, Newton iterations, substeps
 *   ms / frame          wall-clock time of the frame's simulation
 *   contact             pairs in contact between bodies at the frame's end
 *
 * Each panel has its own y range (the data's, padded by 5 %, not below 0
 * for data that never is; a constant series gets ±5 % of its value, or ±1
 * at 0), labelled at its ends, and the time axis is shared.  The lines are drawn by the picture library
 * (defo_image_draw_line) into a defo_image written as PNG.
 *
 * stats.jsonl is read by key, not by a general JSON parser: the top-level
 * keys come before "bodies", whose objects each carry "name" and
 * "volume_ratio" (the writer's fixed layout); a line without "time" is
 * refused naming its line number.
 */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *cmd = "plot";

#define MAX_BODIES 8

typedef struct series {
    const char *label;
    unsigned char rgb[3];
    double *v; /* one per frame; NAN where absent */
} series;

typedef struct stats {
    int n, cap;
    double *t;
    double *kin, *ela, *tot, *inv, *cg, *newton, *sub, *ms, *contacts;
    double *vol[MAX_BODIES];
    char names[MAX_BODIES][64];
    int nbodies;
} stats;

static void stats_free(stats *s) {
    double **arr[] = {&s->t,  &s->kin,    &s->ela, &s->tot, &s->inv,
                      &s->cg, &s->newton, &s->sub, &s->ms,  &s->contacts};
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) free(*arr[i]);
    for (int b = 0; b < MAX_BODIES; b++) free(s->vol[b]);
}

static int grow(stats *s) {
    if (s->n < s->cap) return 0;
    int cap = s->cap ? 2 * s->cap : 256;
    double **arr[] = {&s->t,      &s->kin,    &s->ela,    &s->tot,    &s->inv,    &s->cg,
                      &s->newton, &s->sub,    &s->ms,     &s->vol[0], &s->vol[1], &s->vol[2],
                      &s->vol[3], &s->vol[4], &s->vol[5], &s->vol[6], &s->vol[7], &s->contacts};
    for (size_t i = 0; i < sizeof arr / sizeof arr[0]; i++) {
        double *p = realloc(*arr[i], (size_t)cap * sizeof(double));
        if (!p) return -1;
        *arr[i] = p;
    }
    s->cap = cap;
    return 0;
}

/* The number after "key": in [p, end), NAN when absent or null. */
static double key_number(const char *p, const char *end, const char *key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\": ", key);
    size_t k = strlen(pat);
    for (const char *q = p; q + k <= end; q++)
        if (!memcmp(q, pat, k)) {
            char *e;
            double v = strtod(q + k, &e);
            return e == q + k ? NAN : v;
        }
    return NAN;
}

static int read_stats(const char *path, stats *s) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "defo %s: %s: cannot open (%s); is this a defo run folder?\n", cmd, path,
                strerror(errno));
        return CLI_BAD_INPUT;
    }
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = CLI_OK;
    for (;;) {
        int c;
        size_t len = 0;
        while ((c = fgetc(f)) != EOF && c != '\n') { /* getline without POSIX */
            if (len + 2 > cap) {
                cap = cap ? 2 * cap : 4096;
                char *t = realloc(line, cap);
                if (!t) {
                    rc = CLI_INTERNAL;
                    break;
                }
                line = t;
            }
            line[len++] = (char)c;
        }
        if (rc || (c == EOF && len == 0)) break;
        lineno++;
        line[len] = 0;
        const char *end = line + len, *bodies = strstr(line, "\"bodies\": [");
        const char *top_end = bodies ? bodies : end;
        if (grow(s)) {
            rc = CLI_INTERNAL;
            break;
        }
        int i = s->n;
        s->t[i] = key_number(line, top_end, "time");
        if (!isfinite(s->t[i])) {
            fprintf(stderr, "defo %s: %s:%d: no \"time\": not a stats.jsonl line\n", cmd, path,
                    lineno);
            rc = CLI_BAD_INPUT;
            break;
        }
        s->kin[i] = key_number(line, top_end, "kinetic_energy");
        s->ela[i] = key_number(line, top_end, "elastic_energy");
        s->tot[i] = s->kin[i] + s->ela[i];
        s->inv[i] = key_number(line, top_end, "inverted");
        s->cg[i] = key_number(line, top_end, "cg_iters");
        s->newton[i] = key_number(line, top_end, "newton_iters");
        s->sub[i] = key_number(line, top_end, "substeps");
        s->ms[i] = key_number(line, top_end, "wall_ms");
        s->contacts[i] = key_number(line, top_end, "contacts");
        /* bodies: {"name": "...", ..., "volume_ratio": v} in order */
        int b = 0;
        for (const char *q = bodies; q && b < MAX_BODIES; b++) {
            const char *nm = strstr(q, "{\"name\": \"");
            if (!nm) break;
            const char *next = strstr(nm + 1, "{\"name\": \"");
            const char *bend = next ? next : end;
            s->vol[b][i] = key_number(nm, bend, "volume_ratio");
            if (b >= s->nbodies) {
                const char *a = nm + 10, *z = a;
                while (z < bend && *z != '"') z++;
                snprintf(s->names[b], sizeof s->names[b], "%.*s", (int)(z - a), a);
                s->nbodies = b + 1;
            }
            q = next;
        }
        for (; b < MAX_BODIES; b++) s->vol[b][i] = NAN;
        s->n++;
    }
    free(line);
    fclose(f);
    if (rc == CLI_INTERNAL) fprintf(stderr, "defo %s: out of memory\n", cmd);
    if (rc == CLI_OK && s->n == 0) {
        fprintf(stderr, "defo %s: %s is empty: no frame to plot\n", cmd, path);
        rc = CLI_BAD_INPUT;
    }
    return rc;
}

/* One panel: a frame with a title, y range labels, the series as lines. */
static void draw_panel(defo_image *img, int x0, int y0, int w, int h, const char *title,
                       const stats *s, const series *ser, int nser) {
    const unsigned char ink[3] = {30, 30, 36}, grid[3] = {214, 218, 226},
                        frame[3] = {150, 155, 165};
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < nser; k++)
        for (int i = 0; i < s->n; i++)
            if (isfinite(ser[k].v[i])) {
                lo = fmin(lo, ser[k].v[i]);
                hi = fmax(hi, ser[k].v[i]);
            }
    if (!(lo <= hi)) lo = 0, hi = 1;
    const int nonneg = lo >= 0;
    if (hi - lo <= 1e-12 * fmax(fabs(lo), fabs(hi))) {
        double d = lo != 0 ? 0.05 * fabs(lo) : 1;
        lo -= d;
        hi += d;
    } else {
        double d = 0.05 * (hi - lo);
        lo -= d;
        hi += d;
    }
    if (nonneg && lo < 0) lo = 0; /* counts, energies, times: the axis starts at 0 */
    double t0 = s->t[0], t1 = s->t[s->n - 1];
    if (!(t1 > t0)) t1 = t0 + 1;
    const int left = 80, right = 12, top = 22, bottom = 16;
    int px0 = x0 + left, px1 = x0 + w - right, py0 = y0 + top, py1 = y0 + h - bottom;
    defo_image_draw_text(img, x0 + 8, y0 + 6, 1, ink, title);
    for (int g = 0; g <= 4; g++) {
        double yy = py0 + (py1 - py0) * g / 4.0;
        defo_image_draw_line(img, px0, yy, px1, yy, 1, grid);
    }
    defo_image_draw_line(img, px0, py0, px0, py1, 1, frame);
    defo_image_draw_line(img, px0, py1, px1, py1, 1, frame);
    char lab[32];
    snprintf(lab, sizeof lab, "%.4g", hi);
    defo_image_draw_text(img, px0 - 6 - defo_image_text_width(lab, 1), py0 - 3, 1, ink, lab);
    snprintf(lab, sizeof lab, "%.4g", lo);
    defo_image_draw_text(img, px0 - 6 - defo_image_text_width(lab, 1), py1 - 4, 1, ink, lab);
    /* series and their legend (top right) */
    int lx = px1;
    for (int k = nser - 1; k >= 0; k--) {
        lx -= defo_image_text_width(ser[k].label, 1) + 26;
        defo_image_draw_line(img, lx, y0 + 9, lx + 14, y0 + 9, 3, ser[k].rgb);
        defo_image_draw_text(img, lx + 18, y0 + 6, 1, ink, ser[k].label);
        double px = 0, py = 0;
        int have = 0;
        for (int i = 0; i < s->n; i++) {
            double v = ser[k].v[i];
            if (!isfinite(v)) {
                have = 0;
                continue;
            }
            double x = px0 + (px1 - px0) * (s->t[i] - t0) / (t1 - t0);
            double y = py1 - (py1 - py0) * (v - lo) / (hi - lo);
            if (have)
                defo_image_draw_line(img, px, py, x, y, 2, ser[k].rgb);
            else if (s->n == 1)
                defo_image_draw_line(img, x - 2, y, x + 2, y, 2, ser[k].rgb);
            px = x;
            py = y;
            have = 1;
        }
    }
}

static int parse_size(const char *v, int *w, int *h) {
    char *e;
    long a = strtol(v, &e, 10);
    if (*e != 'x') return -1;
    long b = strtol(e + 1, &e, 10);
    if (*e || a < 320 || b < 400 || a > 8192 || b > 8192) return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

int cmd_plot(int argc, char **argv) {
    const char *dir = NULL, *out = NULL;
    int w = 900, h = 1000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a file name", a);
            out = argv[++i];
        } else if (!strcmp(a, "--size")) {
            if (i + 1 >= argc || parse_size(argv[i + 1], &w, &h))
                return cli_usage_error(cmd, "--size: expected WxH, at least 320x400");
            i++;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error(cmd, "unknown option '%s'", a);
        } else if (!dir) {
            dir = a;
        } else {
            return cli_usage_error(cmd, "unexpected argument '%s'", a);
        }
    }
    if (!dir) return cli_usage_error(cmd, "missing OUTDIR (the folder of a defo run)");
    char path[4200], outpath[4200];
    snprintf(path, sizeof path, "%s/stats.jsonl", dir);
    snprintf(outpath, sizeof outpath, "%s/stats.png", dir);
    if (!out) out = outpath;
    stats s;
    memset(&s, 0, sizeof s);
    int rc = read_stats(path, &s);
    if (rc) {
        stats_free(&s);
        return rc;
    }
    const unsigned char bg[3] = {250, 250, 252};
    defo_image img;
    defo_status st = defo_image_create(w, h, bg, &img);
    if (st < 0) {
        stats_free(&s);
        return cli_fail(cmd, st);
    }
    static const unsigned char pal[MAX_BODIES][3] = {
        {31, 119, 180},  {255, 127, 14}, {44, 160, 44},   {214, 39, 40},
        {148, 103, 189}, {140, 86, 75},  {227, 119, 194}, {127, 127, 127}};
    series energy[3] = {{"kinetic", {31, 119, 180}, s.kin},
                        {"elastic", {255, 127, 14}, s.ela},
                        {"total", {40, 40, 40}, s.tot}};
    series inverted[1] = {{"inverted", {214, 39, 40}, s.inv}};
    series vol[MAX_BODIES];
    for (int b = 0; b < s.nbodies; b++)
        vol[b] = (series){s.names[b], {pal[b][0], pal[b][1], pal[b][2]}, s.vol[b]};
    series iters[3] = {{"CG", {31, 119, 180}, s.cg},
                       {"Newton", {214, 39, 40}, s.newton},
                       {"substeps", {44, 160, 44}, s.sub}};
    series ms[1] = {{"ms", {148, 103, 189}, s.ms}};
    series contacts[1] = {{"pairs", {23, 190, 207}, s.contacts}};
    const unsigned char ink[3] = {30, 30, 36};
    char title[512];
    snprintf(title, sizeof title, "%s: %d frame%s, t = %.4g .. %.4g s", dir, s.n, cli_s(s.n),
             s.t[0], s.t[s.n - 1]);
    defo_image_draw_text(&img, 12, 10, 2, ink, title);
    int top = 34, ph = (h - top - 24) / 6;
    draw_panel(&img, 0, top, w, ph, "energy [J]", &s, energy, 3);
    draw_panel(&img, 0, top + ph, w, ph, "inverted elements", &s, inverted, 1);
    draw_panel(&img, 0, top + 2 * ph, w, ph, "volume ratio (current / rest)", &s, vol, s.nbodies);
    draw_panel(&img, 0, top + 3 * ph, w, ph, "iterations per frame", &s, iters, 3);
    draw_panel(&img, 0, top + 4 * ph, w, ph, "ms per frame (simulation)", &s, ms, 1);
    draw_panel(&img, 0, top + 5 * ph, w, ph, "contact pairs between bodies", &s, contacts, 1);
    char tl[64];
    snprintf(tl, sizeof tl, "time [s]: %.4g .. %.4g", s.t[0], s.t[s.n - 1]);
    defo_image_draw_text(&img, 80, h - 16, 1, ink, tl);
    st = defo_image_write_png(out, &img);
    defo_image_free(&img);
    int frames = s.n;
    stats_free(&s);
    if (st < 0) return cli_fail(cmd, st);
    printf("wrote %s (%dx%d: energy, inverted, volume ratio, iterations, ms per frame over %d "
           "frame%s)\n",
           out, w, h, frames, cli_s(frames));
    return CLI_OK;
}
