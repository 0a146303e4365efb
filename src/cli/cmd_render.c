/*
 * cli/cmd_render.c — `defo render INPUT -o OUT.png [--frame N] [--color FIELD]
 * [--size WxH] [--sheet [--count N] [--cols C]] [--video [--fps F]]
 * (the video plays at the run's frame rate: --fps, else the run's scene, else
 * the .pvd's timestep spacing, else 24)
 * [--backend auto|gl|software]`: headless pictures of simulation frames.
 *
 * INPUT is a mesh file (.vtu or any format defo reads), a .pvd collection, or
 * an output folder (its scene.pvd, else its only .pvd, else
 * frames/frame_*.vtu in name order).  Frames are read with the elements kept
 * as stored, so inverted elements stay inverted and are highlighted.
 *
 * One camera and one colour range for a sequence: both are fitted over up to
 * 16 evenly spaced frames plus the frames drawn, so `--frame 3` and
 * `--frame 7` of one run, the tiles of a sheet and the video frames compare.
 * Default frame: the last.  Default field: the cell field "J" when the frames
 * have it, else a plain colour.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli/cli.h"
#include "defo/math.h"
#include "defo/render.h"
#include "defo/scene.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *cmd = "render";

typedef struct frame_ref {
    char *path;
    double time;
    int has_time;
} frame_ref;

typedef struct frame_list {
    frame_ref *f;
    int count, cap;
} frame_list;

static void frames_free(frame_list *l) {
    for (int i = 0; i < l->count; i++) free(l->f[i].path);
    free(l->f);
    memset(l, 0, sizeof *l);
}

static int frames_add(frame_list *l, const char *dir, const char *file, size_t file_len,
                      double time, int has_time) {
    if (l->count == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        frame_ref *f = realloc(l->f, (size_t)cap * sizeof *f);
        if (!f) return -1;
        l->f = f;
        l->cap = cap;
    }
    size_t dl = (dir && file[0] != '/') ? strlen(dir) : 0;
    char *p = malloc(dl + file_len + 2);
    if (!p) return -1;
    if (dl) {
        memcpy(p, dir, dl);
        p[dl] = '/';
        dl++;
    }
    memcpy(p + dl, file, file_len);
    p[dl + file_len] = 0;
    l->f[l->count++] = (frame_ref){p, time, has_time};
    return 0;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, n = 0;
    char *s = malloc(cap);
    for (size_t r; s && (r = fread(s + n, 1, cap - n - 1, f)) > 0;) {
        n += r;
        if (n + 1 == cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                s = NULL;
            }
            s = t;
        }
    }
    fclose(f);
    if (s) s[n] = 0;
    return s;
}

/* Value of attribute name="..." inside the tag [tag, end), unescaping the
 * five XML entities in place into out (size outsz). */
static int xml_attr(const char *tag, const char *end, const char *name, char *out, size_t outsz) {
    size_t nl = strlen(name);
    for (const char *p = tag; p + nl + 2 < end; p++) {
        if (strncmp(p, name, nl) != 0 || p[nl] != '=' || (p[nl + 1] != '"' && p[nl + 1] != '\''))
            continue;
        if (p > tag && p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n' && p[-1] != '\r') continue;
        char q = p[nl + 1];
        const char *v = p + nl + 2;
        size_t o = 0;
        while (v < end && *v != q && o + 1 < outsz) {
            static const char *ent[5][2] = {
                {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}};
            int done = 0;
            for (int k = 0; k < 5 && !done; k++)
                if (!strncmp(v, ent[k][0], strlen(ent[k][0]))) {
                    out[o++] = ent[k][1][0];
                    v += strlen(ent[k][0]);
                    done = 1;
                }
            if (!done) out[o++] = *v++;
        }
        out[o] = 0;
        return 1;
    }
    return 0;
}

/* The .pvd's DataSet entries in file order; paths relative to its folder. */
static int read_pvd(const char *path, frame_list *l) {
    char *text = read_text(path);
    if (!text) {
        fprintf(stderr, "defo %s: %s: cannot open (%s)\n", cmd, path, strerror(errno));
        return CLI_BAD_INPUT;
    }
    char *dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) *slash = 0;
    const char *base = slash ? dir : NULL;
    int rc = CLI_OK;
    for (const char *p = strstr(text, "<DataSet"); p; p = strstr(p + 1, "<DataSet")) {
        const char *end = strchr(p, '>');
        if (!end) break;
        char file[1024], ts[64];
        if (!xml_attr(p, end, "file", file, sizeof file)) continue;
        int has_t = xml_attr(p, end, "timestep", ts, sizeof ts);
        double t = has_t ? strtod(ts, NULL) : 0;
        if (frames_add(l, base, file, strlen(file), t, has_t) != 0) {
            rc = CLI_INTERNAL;
            break;
        }
    }
    free(dir);
    free(text);
    if (rc == CLI_OK && l->count == 0) {
        fprintf(stderr, "defo %s: %s: no <DataSet file=...> entries\n", cmd, path);
        rc = CLI_BAD_INPUT;
    }
    return rc;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* An output folder: scene.pvd, else the only .pvd, else frames/frame_*.vtu. */
static int read_folder(const char *dir, frame_list *l) {
    char path[4096];
    snprintf(path, sizeof path, "%s/scene.pvd", dir);
    struct stat st;
    if (stat(path, &st) == 0) return read_pvd(path, l);
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "defo %s: %s: cannot open folder\n", cmd, dir);
        return CLI_BAD_INPUT;
    }
    char *pvd = NULL;
    int npvd = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (ends_with(e->d_name, ".pvd") && npvd++ == 0) pvd = strdup(e->d_name);
    closedir(d);
    if (npvd == 1 && pvd) {
        snprintf(path, sizeof path, "%s/%s", dir, pvd);
        free(pvd);
        return read_pvd(path, l);
    }
    free(pvd);
    if (npvd > 1) {
        fprintf(stderr, "defo %s: %s: several .pvd files; name one\n", cmd, dir);
        return CLI_BAD_INPUT;
    }
    snprintf(path, sizeof path, "%s/frames", dir);
    d = opendir(path);
    if (!d) {
        fprintf(stderr, "defo %s: %s: no scene.pvd, .pvd or frames/ folder\n", cmd, dir);
        return CLI_BAD_INPUT;
    }
    char **names = NULL;
    int n = 0, cap = 0, rc = CLI_OK;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "frame_", 6) != 0 || !ends_with(e->d_name, ".vtu")) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **t = realloc(names, (size_t)cap * sizeof *t);
            if (!t) {
                rc = CLI_INTERNAL;
                break;
            }
            names = t;
        }
        names[n] = strdup(e->d_name);
        if (!names[n]) {
            rc = CLI_INTERNAL;
            break;
        }
        n++;
    }
    closedir(d);
    if (rc == CLI_OK) qsort(names, (size_t)n, sizeof *names, cmp_str);
    for (int i = 0; i < n && rc == CLI_OK; i++)
        if (frames_add(l, path, names[i], strlen(names[i]), 0, 0) != 0) rc = CLI_INTERNAL;
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (rc == CLI_OK && l->count == 0) {
        fprintf(stderr, "defo %s: %s: no frame_*.vtu files\n", cmd, path);
        rc = CLI_BAD_INPUT;
    }
    return rc;
}

static int load_frame(const frame_ref *f, defo_mesh **out) {
    defo_read_options ro = defo_default_read_options();
    ro.reorient = DEFO_ORIENT_KEEP; /* inverted elements must stay inverted */
    defo_status s = defo_mesh_read(f->path, &ro, out);
    if (s < 0) return cli_fail(cmd, s);
    return CLI_OK;
}

static int parse_size(const char *s, int *w, int *h) {
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || (*end != 'x' && *end != 'X')) return -1;
    const char *t = end + 1;
    long b = strtol(t, &end, 10);
    if (end == t || *end) return -1;
    if (a < 16 || b < 16 || a > 8192 || b > 8192) return -1;
    *w = (int)a;
    *h = (int)b;
    return 0;
}

static int parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* Shell-quote s into buf (single quotes). */
static void shell_quote(const char *s, char *buf, size_t n) {
    size_t o = 0;
    if (o + 1 < n) buf[o++] = '\'';
    for (; *s && o + 5 < n; s++) {
        if (*s == '\'') {
            memcpy(buf + o, "'\\''", 4);
            o += 4;
        } else {
            buf[o++] = *s;
        }
    }
    if (o + 1 < n) buf[o++] = '\'';
    buf[o] = 0;
}

/* Fit the camera box and colour range over the frames in idx: the range is
 * defo_render_auto_range over the values of all those frames pooled (J:
 * [0, 2], like every frame `defo run` draws; other fields: their 1st-99th
 * percentiles), so every picture of the sequence shares it. */
static int fit_sequence(const frame_list *l, const int *idx, int n, const char *field,
                        defo_render_def *def) {
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    double *vals = NULL;
    size_t nvals = 0, cap = 0;
    int rc = CLI_OK;
    for (int i = 0; i < n && rc == CLI_OK; i++) {
        defo_mesh *m = NULL;
        rc = load_frame(&l->f[idx[i]], &m);
        if (rc) break;
        double a[3], b[3];
        defo_status s = defo_mesh_bbox(m, a, b);
        defo_index count = 0;
        if (s >= 0 && field) s = defo_render_field_values(m, field, NULL, &count);
        if (s >= 0 && field && nvals + (size_t)count > cap) {
            cap = 2 * (nvals + (size_t)count) + 1;
            double *t = realloc(vals, cap * sizeof *vals);
            if (!t)
                s = DEFO_ERR_OUT_OF_MEMORY;
            else
                vals = t;
        }
        if (s >= 0 && field) s = defo_render_field_values(m, field, vals + nvals, &count);
        defo_mesh_destroy(m);
        if (s < 0) {
            /* a field missing from one frame: say which frame */
            fprintf(stderr, "defo %s: %s: %s\n", cmd, l->f[idx[i]].path,
                    s == DEFO_ERR_OUT_OF_MEMORY ? "out of memory" : defo_last_error());
            rc = s == DEFO_ERR_OUT_OF_MEMORY ? CLI_INTERNAL : CLI_BAD_INPUT;
            break;
        }
        nvals += (size_t)count;
        for (int k = 0; k < 3; k++) {
            lo[k] = fmin(lo[k], a[k]);
            hi[k] = fmax(hi[k], b[k]);
        }
    }
    if (rc == CLI_OK) {
        for (int k = 0; k < 3; k++) {
            def->frame_lo[k] = lo[k];
            def->frame_hi[k] = hi[k];
        }
        if (field) {
            defo_status s = defo_render_auto_range(field, vals, nvals, def->range);
            if (s < 0) {
                fprintf(stderr, "defo %s: %s\n", cmd, defo_last_error());
                rc = CLI_BAD_INPUT;
            }
            if (strcmp(field, "J") != 0) def->range_note = "1st-99th pct";
        }
    }
    free(vals);
    return rc;
}

/* The scene a `defo run` output folder was made from (DIR/scene.json), for
 * its colliders; NULL (with one warning line) when missing or unreadable. */
static defo_scene *load_run_scene(const char *dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/scene.json", dir);
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "defo %s: warning: %s not found: colliders not drawn\n", cmd, path);
        return NULL;
    }
    defo_scene *scene = NULL;
    defo_scene_errors errs = {0, NULL};
    defo_status s = defo_scene_load(path, &scene, &errs);
    if (s < 0 || !scene) {
        fprintf(stderr, "defo %s: warning: %s: %s: colliders not drawn\n", cmd, path,
                errs.count > 0 ? errs.lines[0] : defo_last_error());
        defo_scene_errors_free(&errs);
        return NULL;
    }
    defo_scene_errors_free(&errs);
    return scene;
}

static int render_frame(defo_renderer *r, const frame_list *l, int i, const defo_scene *scene,
                        defo_render_def *def, defo_image *out) {
    defo_mesh *m = NULL;
    int rc = load_frame(&l->f[i], &m);
    if (rc) return rc;
    defo_render_shape *shapes = NULL;
    int nshapes = 0;
    if (cli_collider_shapes(scene, l->f[i].time, &shapes, &nshapes) != 0) {
        defo_mesh_destroy(m);
        fprintf(stderr, "defo %s: out of memory\n", cmd);
        return CLI_INTERNAL;
    }
    defo_status s = defo_render_mesh(r, def, m, NULL, shapes, nshapes, out);
    free(shapes);
    defo_mesh_destroy(m);
    if (s < 0) {
        fprintf(stderr, "defo %s: %s: %s\n", cmd, l->f[i].path, defo_last_error());
        return s == DEFO_ERR_OUT_OF_MEMORY || s == DEFO_ERR_INTERNAL ? CLI_INTERNAL : CLI_BAD_INPUT;
    }
    return CLI_OK;
}

static void frame_label(const frame_list *l, int i, char *buf, size_t n) {
    if (l->count == 1)
        snprintf(buf, n, "%s", "");
    else if (l->f[i].has_time)
        snprintf(buf, n, "frame %d  t=%.3g s", i, l->f[i].time);
    else
        snprintf(buf, n, "frame %d", i);
}

int cmd_render(int argc, char **argv) {
    const char *input = NULL, *out = NULL, *field = NULL, *backend_name = "auto";
    long frame = -1, count = 12, cols = 0, fps_arg = 0;
    int frame_given = 0, sheet = 0, video = 0, w = 0, h = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has_next = i + 1 < argc;
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!has_next) return cli_usage_error(cmd, "%s needs a file name", a);
            out = argv[++i];
        } else if (!strcmp(a, "--frame")) {
            if (!has_next || parse_int(argv[i + 1], -1000000000L, 1000000000L, &frame))
                return cli_usage_error(cmd, "--frame needs an integer (negative: from the end)");
            frame_given = 1;
            i++;
        } else if (!strcmp(a, "--color") || !strcmp(a, "--colour")) {
            if (!has_next) return cli_usage_error(cmd, "--color needs a field name");
            field = argv[++i];
        } else if (!strcmp(a, "--size")) {
            if (!has_next || parse_size(argv[i + 1], &w, &h))
                return cli_usage_error(cmd, "--size '%s': expected WxH with 16..8192 each",
                                       has_next ? argv[i + 1] : "");
            i++;
        } else if (!strcmp(a, "--sheet")) {
            sheet = 1;
        } else if (!strcmp(a, "--count")) {
            if (!has_next || parse_int(argv[i + 1], 1, 100, &count))
                return cli_usage_error(cmd, "--count needs an integer in 1..100");
            i++;
        } else if (!strcmp(a, "--cols")) {
            if (!has_next || parse_int(argv[i + 1], 1, 100, &cols))
                return cli_usage_error(cmd, "--cols needs an integer in 1..100");
            i++;
        } else if (!strcmp(a, "--video")) {
            video = 1;
        } else if (!strcmp(a, "--fps")) {
            if (!has_next || parse_int(argv[i + 1], 1, 240, &fps_arg))
                return cli_usage_error(cmd, "--fps needs an integer in 1..240");
            i++;
        } else if (!strcmp(a, "--backend")) {
            if (!has_next) return cli_usage_error(cmd, "--backend needs auto, gl or software");
            backend_name = argv[++i];
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error(cmd, "unknown option '%s'", a);
        } else if (!input) {
            input = a;
        } else {
            return cli_usage_error(cmd, "unexpected argument '%s'", a);
        }
    }
    if (!input) return cli_usage_error(cmd, "no INPUT (a .vtu, a .pvd or an output folder)");
    if (!out) return cli_usage_error(cmd, "no output: -o OUT.png (OUT.mp4 with --video)");
    if (sheet && video) return cli_usage_error(cmd, "--sheet and --video exclude each other");
    defo_render_backend backend;
    if (!strcmp(backend_name, "auto"))
        backend = DEFO_RENDER_AUTO;
    else if (!strcmp(backend_name, "gl") || !strcmp(backend_name, "opengl"))
        backend = DEFO_RENDER_OPENGL;
    else if (!strcmp(backend_name, "software"))
        backend = DEFO_RENDER_SOFTWARE;
    else
        return cli_usage_error(cmd, "--backend '%s': expected auto, gl or software", backend_name);
    if (w == 0) {
        w = sheet ? 400 : 800;
        h = sheet ? 300 : 600;
    }
    if (video && (w % 2 || h % 2))
        return cli_usage_error(cmd, "--video needs an even --size (H.264 4:2:0)");

    /* the frames */
    frame_list l = {0};
    struct stat st;
    int rc;
    if (stat(input, &st) != 0) {
        fprintf(stderr, "defo %s: %s: no such file or folder\n", cmd, input);
        return CLI_BAD_INPUT;
    }
    if (S_ISDIR(st.st_mode))
        rc = read_folder(input, &l);
    else if (ends_with(input, ".pvd"))
        rc = read_pvd(input, &l);
    else
        rc = frames_add(&l, NULL, input, strlen(input), 0, 0) ? CLI_INTERNAL : CLI_OK;
    if (rc) {
        frames_free(&l);
        return rc;
    }
    long frame_arg = frame;
    if (frame < 0) frame += l.count;
    if (frame_given && (frame < 0 || frame >= l.count)) {
        fprintf(stderr, "defo %s: --frame %ld is out of range: the input has %d frame%s (0..%d)\n",
                cmd, frame_arg, l.count, l.count == 1 ? "" : "s", l.count - 1);
        frames_free(&l);
        return CLI_BAD_INPUT;
    }
    if (!frame_given) frame = l.count - 1;

    /* which frames are drawn */
    int ndraw = 1;
    int *draw = malloc((size_t)(l.count + 1) * sizeof *draw);
    int *fit = malloc((size_t)(l.count + 17) * sizeof *fit);
    if (!draw || !fit) {
        free(draw);
        free(fit);
        frames_free(&l);
        fprintf(stderr, "defo %s: out of memory\n", cmd);
        return CLI_INTERNAL;
    }
    draw[0] = (int)frame;
    if (sheet) {
        ndraw = (int)(count < l.count ? count : l.count);
        for (int i = 0; i < ndraw; i++)
            draw[i] =
                ndraw == 1 ? l.count - 1 : (int)((double)i * (l.count - 1) / (ndraw - 1) + 0.5);
    } else if (video) {
        ndraw = l.count;
        for (int i = 0; i < ndraw; i++) draw[i] = i;
    }
    int nfit = 0;
    int nsample = l.count < 16 ? l.count : 16;
    for (int i = 0; i < nsample; i++)
        fit[nfit++] = nsample == 1 ? 0 : (int)((double)i * (l.count - 1) / (nsample - 1) + 0.5);
    if (!sheet)
        fit[nfit++] = draw[0];
    else
        for (int i = 0; i < ndraw && nfit < l.count + 17; i++)
            if (draw[i] != fit[0]) fit[nfit++] = draw[i];

    /* default field: J when the frame has it */
    defo_mesh *first = NULL;
    rc = load_frame(&l.f[draw[0]], &first);
    if (rc == CLI_OK && !field && defo_mesh_find_field(first, "J", DEFO_FIELD_CELL)) field = "J";
    if (rc == CLI_OK && field && field[0]) {
        double lo, hi;
        defo_status s = defo_render_field_range(first, field, &lo, &hi);
        if (s < 0) {
            fprintf(stderr, "defo %s: %s: %s\n", cmd, l.f[draw[0]].path, defo_last_error());
            rc = CLI_BAD_INPUT;
        }
    }
    defo_mesh_destroy(first);

    defo_render_def def = defo_default_render_def();
    def.width = w;
    def.height = h;
    def.field = field && field[0] ? field : NULL;
    if (rc == CLI_OK) rc = fit_sequence(&l, fit, nfit, def.field, &def);

    /* colliders of a `defo run` output folder (or a .pvd inside one), drawn in
     * single frames, sheets and videos; loaded after the input checks so errors stay
     * one line */
    defo_scene *scene = NULL;
    if (rc == CLI_OK && (S_ISDIR(st.st_mode) || ends_with(input, ".pvd"))) {
        char *dir = strdup(input);
        if (dir && !S_ISDIR(st.st_mode)) {
            char *slash = strrchr(dir, '/');
            if (slash)
                *slash = 0;
            else
                strcpy(dir, ".");
        }
        if (dir) scene = load_run_scene(dir);
        free(dir);
        cli_fit_colliders(scene, def.frame_lo, def.frame_hi);
    }

    /* the colour range, said in every message: one rule with defo run's pictures */
    char range_text[128] = "no field";
    if (def.field)
        snprintf(range_text, sizeof range_text, "%s in [%.6g, %.6g]%s", def.field, def.range[0],
                 def.range[1], strcmp(def.field, "J") ? " (1st-99th percentile)" : "");
    /* --video plays at the run's frame rate: --fps, else the scene's (a run
     * folder's scene.json), else the spacing of the .pvd's timesteps, else 24 */
    double fps = 24;
    const char *fps_from = "default";
    if (fps_arg > 0) {
        fps = (double)fps_arg;
        fps_from = "--fps";
    } else if (scene) {
        fps = defo_scene_fps(scene);
        fps_from = "the scene";
    } else if (l.count > 1 && l.f[0].has_time && l.f[l.count - 1].has_time &&
               l.f[l.count - 1].time > l.f[0].time) {
        fps = (l.count - 1) / (l.f[l.count - 1].time - l.f[0].time);
        fps_from = "the frame times";
    }
    defo_renderer *r = NULL;
    if (rc == CLI_OK) {
        defo_status s = defo_renderer_create(backend, &r);
        if (s < 0) rc = cli_fail(cmd, s);
    }

    char label[96];
    if (rc == CLI_OK && !sheet && !video) {
        defo_image im;
        frame_label(&l, draw[0], label, sizeof label);
        def.caption = label;
        rc = render_frame(r, &l, draw[0], scene, &def, &im);
        if (rc == CLI_OK) {
            defo_status s = defo_image_write_png(out, &im);
            if (s < 0)
                rc = cli_fail(cmd, s);
            else
                printf("wrote %s (%dx%d, frame %d of %d, %s, %s)\n", out, w, h, draw[0], l.count,
                       defo_renderer_name(r), range_text);
        }
        defo_image_free(&im);
    } else if (rc == CLI_OK && sheet) {
        defo_image *tiles = calloc((size_t)ndraw, sizeof *tiles);
        char(*labels)[96] = calloc((size_t)ndraw, sizeof *labels);
        const char **lp = calloc((size_t)ndraw, sizeof *lp);
        if (!tiles || !labels || !lp) rc = CLI_INTERNAL;
        for (int i = 0; i < ndraw && rc == CLI_OK; i++) {
            frame_label(&l, draw[i], labels[i], sizeof labels[i]);
            lp[i] = labels[i]; /* under the tile, not on it */
            def.caption = NULL;
            rc = render_frame(r, &l, draw[i], scene, &def, &tiles[i]);
        }
        if (rc == CLI_OK) {
            const char *base = strrchr(input, '/');
            base = base && base[1] ? base + 1 : input;
            char title[256];
            snprintf(title, sizeof title, "%s  %s", base, def.field ? def.field : "");
            int c = cols > 0 ? (int)cols : ndraw <= 4 ? ndraw : ndraw <= 9 ? 3 : 4;
            defo_image sh;
            defo_status s = defo_image_sheet(tiles, lp, ndraw, c, title, &sh);
            if (s >= 0) s = defo_image_write_png(out, &sh);
            if (s < 0)
                rc = cli_fail(cmd, s);
            else
                printf("wrote %s (%dx%d, %d frames of %d, %s, %s)\n", out, sh.width, sh.height,
                       ndraw, l.count, defo_renderer_name(r), range_text);
            defo_image_free(&sh);
        }
        for (int i = 0; tiles && i < ndraw; i++) defo_image_free(&tiles[i]);
        free(tiles);
        free(labels);
        free(lp);
    } else if (rc == CLI_OK && video) {
        if (system("command -v ffmpeg >/dev/null 2>&1") != 0) {
            fprintf(stderr, "defo %s: ffmpeg is not installed: --video skipped\n", cmd);
        } else {
            size_t n = strlen(out);
            char *tmp = malloc(n + 9);
            char qtmp[4200], command[4600];
            if (!tmp) rc = CLI_INTERNAL;
            if (tmp) {
                snprintf(tmp, n + 9, "%s.tmp.mp4", out);
                shell_quote(tmp, qtmp, sizeof qtmp);
                snprintf(command, sizeof command,
                         "ffmpeg -y -loglevel error -f rawvideo -pix_fmt rgb24 -s %dx%d -r %.9g "
                         "-i - -c:v libx264 -pix_fmt yuv420p %s",
                         w, h, fps, qtmp);
                FILE *pipe = popen(command, "w");
                if (!pipe) rc = CLI_INTERNAL;
                for (int i = 0; i < ndraw && rc == CLI_OK; i++) {
                    defo_image im;
                    frame_label(&l, draw[i], label, sizeof label);
                    def.caption = label;
                    rc = render_frame(r, &l, draw[i], scene, &def, &im);
                    if (rc == CLI_OK &&
                        fwrite(im.rgb, 3, (size_t)w * (size_t)h, pipe) != (size_t)w * (size_t)h)
                        rc = CLI_INTERNAL;
                    defo_image_free(&im);
                }
                if (pipe && pclose(pipe) != 0 && rc == CLI_OK) rc = CLI_INTERNAL;
                if (rc == CLI_OK && rename(tmp, out) != 0) rc = CLI_INTERNAL;
                if (rc != CLI_OK) {
                    remove(tmp);
                    fprintf(stderr, "defo %s: writing %s with ffmpeg failed\n", cmd, out);
                } else {
                    printf("wrote %s (%d frames, %dx%d at %g fps from %s, %s)\n", out, ndraw, w, h,
                           fps, fps_from, defo_renderer_name(r));
                }
                free(tmp);
            }
        }
    }
    defo_renderer_destroy(r);
    defo_scene_destroy(scene);
    free(draw);
    free(fit);
    frames_free(&l);
    return rc;
}
