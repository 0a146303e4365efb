/*
 * cli/run_output.c — what `defo run` writes in OUTDIR, frame by frame:
 *
 *   frames/frame_NNNN.vtu  ALL bodies merged into one unstructured grid per
 *                          frame (body_id tells them apart).  Point data:
 *                          displacement, velocity; cell data: J, inverted,
 *                          von_mises, max_principal_stress, plastic_strain,
 *                          body_id.
 *   scene.pvd              the collection with each frame's time
 *   surface/frame_NNNN.obj the boundary surface of the merged mesh (Blender);
 *                          a body with an "embedded" surface contributes
 *                          that surface instead (MG04 §5.1)
 *   png/frame_NNNN.png     when the scene asks (colliders drawn too)
 *   stats.jsonl            one JSON object per frame
 *   summary.json           totals, timings, peak inverted, final state, paths
 *   checkpoint.bin         state after the last completed frame (--resume)
 *
 * Frame 0 is the initial state; frame k is the state after k steps.
 *
 * Bodies are read through defo_simulation_body_* (mesh, positions,
 * velocities, energies): a fracturing body (MG04 §4) gains nodes and changes
 * connectivity, so the merged mesh is rebuilt whenever a body's node count
 * changed (a split always adds a node).  Displacement is x − X with X the
 * node's rest position — for a node added by a split, its parent's.  The
 * surface of a fractured body is the boundary of its current tets, crack
 * faces included.
 * Every file is written to a temporary name and renamed, so a Ctrl-C or a
 * crash leaves each file either complete or absent; stats.jsonl and scene.pvd
 * are rewritten whole each frame for the same reason.  The checkpoint is
 * written last, so every frame it covers is already on disk.
 *
 * Stress (cell data): with F = U diag(σ) Vᵀ (ITF04 §5) and P = U diag(P̂) Vᵀ
 * from the body's material, the Cauchy stress P Fᵀ / J has principal values
 * P̂i σi / J along U.  For J < 0.01 (flat or inverted elements, where Cauchy
 * stress is meaningless) the divisor is held at 0.01: the value stays finite
 * and keeps the sign of the Kirchhoff stress P Fᵀ.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli/cli.h"
#include "defo/render.h"
#include "defo/scene.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define J_FLOOR 0.01

/* CLI-side errors (the library's defo_error is internal): the message of the
 * last failing run_output call, or "" when the library set it. */
static char run_msg[1024];

defo_status run_error(defo_status status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run_msg, sizeof run_msg, fmt, ap);
    va_end(ap);
    return status;
}

const char *run_last_error(void) {
    return run_msg[0] ? run_msg : defo_last_error();
}

int run_fail(defo_status status) {
    fprintf(stderr, "defo run: %s\n", run_last_error());
    run_msg[0] = 0;
    return status == DEFO_ERR_INTERNAL || status == DEFO_ERR_OUT_OF_MEMORY ||
                   status == DEFO_ERR_NUMERICAL
               ? CLI_INTERNAL
               : CLI_BAD_INPUT;
}

struct run_output {
    char dir[2048];
    const defo_scene *scene;
    defo_simulation *sim;
    const defo_scene_outputs *o;
    int nb;
    defo_mesh *merged;               /* rest positions of every body (rebuilt after splits) */
    defo_index *node_off, *elem_off; /* nb + 1 */
    double *x, *disp, *vel;          /* 3 per merged node */
    double *J, *inv, *vm, *mp, *plastic, *body_id; /* per merged element */
    double *rest_volume;                           /* per body */
    /* frames written: times and vtu names (for the .pvd), stats lines */
    int count, cap;
    double *times;
    char **files;
    char **lines;
    defo_renderer *renderer;
    double frame_lo[3], frame_hi[3];
    int peak_inverted, peak_frame;
};

/* Body b of the run through the world (defo/world.h). */
static const defo_mesh *body_mesh(const run_output *r, int b) {
    return defo_body_mesh(defo_simulation_world(r->sim), defo_simulation_body(r->sim, b));
}
static const double *body_x(const run_output *r, int b) {
    return defo_body_positions(defo_simulation_world(r->sim), defo_simulation_body(r->sim, b));
}
static const double *body_v(const run_output *r, int b) {
    return defo_body_velocities(defo_simulation_world(r->sim), defo_simulation_body(r->sim, b));
}

static char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int make_dir(const char *path) {
    if (mkdir(path, 0777) != 0 && errno != EEXIST) return -1;
    return 0;
}

/* Write text to path atomically. */
static int write_atomic(const char *path, const char *text, size_t n) {
    char tmp[2300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    int bad = fwrite(text, 1, n, f) != n;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return -1;
    }
    return 0;
}

void run_output_destroy(run_output *r) {
    if (!r) return;
    defo_mesh_destroy(r->merged);
    double *arrays[] = {r->x,  r->disp, r->vel,     r->J,       r->inv,
                        r->vm, r->mp,   r->plastic, r->body_id, r->rest_volume};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) free(arrays[i]);
    free(r->node_off);
    free(r->elem_off);
    for (int i = 0; i < r->count; i++) {
        free(r->files[i]);
        free(r->lines[i]);
    }
    free(r->times);
    free(r->files);
    free(r->lines);
    defo_renderer_destroy(r->renderer);
    free(r);
}

const char *run_output_dir(const run_output *r) {
    return r->dir;
}

/* The merged mesh of every body's current mesh (rest positions) with its
 * rest data and the per-node and per-element arrays; called at the start and
 * whenever a body's node count changed (fracture).  Returns a defo_status. */
static defo_status build_merged(run_output *r) {
    defo_mesh_destroy(r->merged);
    r->merged = NULL;
    double **arrays[] = {&r->x,  &r->disp, &r->vel,     &r->J,      &r->inv,
                         &r->vm, &r->mp,   &r->plastic, &r->body_id};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        free(*arrays[i]);
        *arrays[i] = NULL;
    }
    /* one grid of one element kind (the bodies' order) */
    defo_status s = defo_mesh_create(body_mesh(r, 0)->order, &r->merged);
    for (int b = 0; b < r->nb && !s; b++) {
        const defo_mesh *m = body_mesh(r, b);
        if (m->order != r->merged->order)
            return run_error(DEFO_ERR_UNSUPPORTED,
                             "bodies of different element orders in one scene cannot share the "
                             "frame grid yet");
        r->node_off[b + 1] = r->node_off[b] + m->num_nodes;
        r->elem_off[b + 1] = r->elem_off[b] + m->num_elems;
        s = defo_mesh_reserve(r->merged, r->node_off[b + 1], r->elem_off[b + 1], 0);
        for (defo_index i = 0; i < m->num_nodes && !s; i++)
            s = defo_mesh_add_node(r->merged, m->x[3 * (size_t)i], m->x[3 * (size_t)i + 1],
                                   m->x[3 * (size_t)i + 2], NULL);
        const int p = m->nodes_per_elem;
        for (defo_index e = 0; e < m->num_elems && !s; e++) {
            defo_index nodes[DEFO_ELEMENT_MAX_NODES];
            for (int k = 0; k < p; k++)
                nodes[k] = m->elems[(size_t)p * (size_t)e + k] + r->node_off[b];
            s = defo_mesh_add_elem(r->merged, nodes, 0);
        }
    }
    if (s) return s;
    size_t n3 = 3 * (size_t)r->merged->num_nodes + 1, ne = (size_t)r->merged->num_elems + 1;
    r->x = malloc(n3 * sizeof(double));
    r->disp = malloc(n3 * sizeof(double));
    r->vel = malloc(n3 * sizeof(double));
    double **cell[] = {&r->J, &r->inv, &r->vm, &r->mp, &r->plastic, &r->body_id};
    int ok = r->x && r->disp && r->vel;
    for (size_t i = 0; i < 6; i++) ok = ok && (*cell[i] = calloc(ne, sizeof(double)));
    if (!ok) return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; b < r->nb; b++)
        for (defo_index e = r->elem_off[b]; e < r->elem_off[b + 1]; e++) r->body_id[e] = b;
    return DEFO_OK;
}

/* Build the merged mesh and the output folders.  Returns a defo_status. */
defo_status run_output_create(const char *outdir, const defo_scene *scene, defo_simulation *sim,
                              run_output **out) {
    *out = NULL;
    run_output *r = calloc(1, sizeof *r);
    if (!r) return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(r->dir, sizeof r->dir, "%s", outdir);
    r->scene = scene;
    r->sim = sim;
    r->o = defo_scene_get_outputs(scene);
    r->nb = defo_simulation_num_bodies(sim);
    r->peak_frame = -1;
    char sub[2200];
    int bad = make_dir(outdir);
    snprintf(sub, sizeof sub, "%s/frames", outdir);
    if (!bad && r->o->vtu) bad = make_dir(sub);
    snprintf(sub, sizeof sub, "%s/surface", outdir);
    if (!bad && r->o->surface_obj) bad = make_dir(sub);
    snprintf(sub, sizeof sub, "%s/png", outdir);
    if (!bad && r->o->png) bad = make_dir(sub);
    if (bad) {
        int e = errno;
        run_output_destroy(r);
        return run_error(DEFO_ERR_IO, "cannot create output folder %s: %s", sub, strerror(e));
    }
    r->node_off = calloc((size_t)r->nb + 1, sizeof *r->node_off);
    r->elem_off = calloc((size_t)r->nb + 1, sizeof *r->elem_off);
    r->rest_volume = calloc((size_t)r->nb + 1, sizeof(double));
    defo_status s = DEFO_OK;
    if (!r->node_off || !r->elem_off || !r->rest_volume)
        s = run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    /* rest volumes: a split moves no rest position, so they never change */
    for (int b = 0; b < r->nb && !s; b++)
        s = defo_element_volume(body_mesh(r, b), NULL, &r->rest_volume[b]);
    if (!s) s = build_merged(r);
    if (s) {
        run_output_destroy(r);
        return s;
    }
    if (r->o->png) {
        s = defo_renderer_create(DEFO_RENDER_AUTO, &r->renderer);
        if (s) {
            run_output_destroy(r);
            return s;
        }
        /* one camera for the whole sequence: the initial bounding box of
         * the bodies and solid colliders, grown by half its size, so the
         * bodies stay in view as they fall and spread */
        defo_mesh_bbox(r->merged, r->frame_lo, r->frame_hi);
        /* ... and the colliders' solid shapes at t = 0 (a ball among gears
         * must show the gears) */
        cli_fit_colliders(scene, r->frame_lo, r->frame_hi);
        for (int k = 0; k < 3; k++) {
            double ext = r->frame_hi[k] - r->frame_lo[k];
            r->frame_lo[k] -= 0.25 * ext;
            r->frame_hi[k] += 0.25 * ext;
        }
    }
    *out = r;
    return DEFO_OK;
}

/* Current state into the merged arrays and the per-element fields. */
static defo_status compute_fields(run_output *r, double *min_j) {
    *min_j = INFINITY;
    int changed = 0;
    for (int b = 0; b < r->nb; b++)
        changed |= body_mesh(r, b)->num_nodes != r->node_off[b + 1] - r->node_off[b];
    if (changed) {
        defo_status s = build_merged(r);
        if (s) return s;
    }
    for (int b = 0; b < r->nb; b++) {
        const double *x = body_x(r, b), *v = body_v(r, b);
        size_t off = 3 * (size_t)r->node_off[b],
               n3 = 3 * (size_t)(r->node_off[b + 1] - r->node_off[b]);
        memcpy(r->x + off, x, n3 * sizeof(double));
        memcpy(r->vel + off, v, n3 * sizeof(double));
        for (size_t j = 0; j < n3; j++) r->disp[off + j] = x[j] - r->merged->x[off + j];
        /* J and stresses: the body's force model (derived fields) */
        const defo_index e0 = r->elem_off[b];
        defo_force_fields ff = {r->J + e0, r->vm + e0, r->mp + e0, NULL, NULL, 0, 0};
        defo_status s =
            defo_body_fields(defo_simulation_world(r->sim), defo_simulation_body(r->sim, b), &ff);
        if (s) return s;
        for (defo_index e = e0; e < r->elem_off[b + 1]; e++) r->inv[e] = r->J[e] <= 0 ? 1 : 0;
        if (ff.min_J < *min_j) *min_j = ff.min_J;
        /* MG04 §3 plastic strain norm per element (0 for bodies without plasticity). */
        s = defo_body_plastic_strain(defo_simulation_world(r->sim), defo_simulation_body(r->sim, b),
                                     r->plastic + e0);
        if (s) return s;
    }
    return DEFO_OK;
}

/* ---------------------------------------------------------- stats line */
typedef struct sbuf {
    char *s;
    size_t n, cap;
} sbuf;

#if defined(__GNUC__)
static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#endif
static void sb_printf(sbuf *b, const char *fmt, ...) {
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
        va_end(ap);
        if (k < 0) return;
        if (b->s && b->n + (size_t)k < b->cap) {
            b->n += (size_t)k;
            return;
        }
        size_t cap = (b->cap + (size_t)k + 64) * 2;
        char *s = realloc(b->s, cap);
        if (!s) return;
        b->s = s;
        b->cap = cap;
    }
}

static void sb_num(sbuf *b, const char *key, double v) {
    if (isfinite(v))
        sb_printf(b, "\"%s\": %.17g", key, v);
    else
        sb_printf(b, "\"%s\": null", key);
}

static void sb_str(sbuf *b, const char *s) {
    sb_printf(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            sb_printf(b, "\\%c", *p);
        else if (*p < 0x20)
            sb_printf(b, "\\u%04x", *p);
        else
            sb_printf(b, "%c", *p);
    }
    sb_printf(b, "\"");
}

static defo_status write_index_files(run_output *r) {
    char path[2200];
    if (r->o->vtu) {
        snprintf(path, sizeof path, "%s/scene.pvd", r->dir);
        defo_status s = defo_pvd_write(path, r->times, (const char *const *)r->files, r->count);
        if (s) return s;
    }
    size_t total = 1;
    for (int i = 0; i < r->count; i++) total += strlen(r->lines[i]) + 1;
    char *text = malloc(total);
    if (!text) return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    size_t n = 0;
    for (int i = 0; i < r->count; i++) {
        size_t l = strlen(r->lines[i]);
        memcpy(text + n, r->lines[i], l);
        n += l;
        text[n++] = '\n';
    }
    snprintf(path, sizeof path, "%s/stats.jsonl", r->dir);
    int bad = write_atomic(path, text, n);
    free(text);
    return bad ? run_error(DEFO_ERR_IO, "cannot write %s", path) : DEFO_OK;
}

/* The surface OBJ when some body has an "embedded" surface (MG04 §5.1):
 * every body in order, an embedded one as its embedded surface at the
 * current positions, the others as their tet boundary (only the nodes it
 * uses).  Written atomically. */
static defo_status write_embedded_obj(run_output *r, const char *path) {
    defo_world *w = defo_simulation_world(r->sim);
    sbuf out = {NULL, 0, 0};
    defo_status s = DEFO_OK;
    long base = 1; /* OBJ indices are 1-based and global */
    sb_printf(&out, "# defo run surface (embedded surfaces and tet boundaries)\n");
    for (int b = 0; b < r->nb && !s; b++) {
        defo_body_id id = defo_simulation_body(r->sim, b);
        sb_printf(&out, "o ");
        sb_printf(&out, "%s\n", defo_body_name(w, id));
        const defo_mesh *surf = defo_simulation_embedded_surface(r->sim, b);
        if (surf) {
            double *pos = malloc(3 * (size_t)surf->num_nodes * sizeof(double) + 1);
            if (!pos) {
                s = run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            s = defo_simulation_embedded_positions(r->sim, b, pos);
            for (defo_index i = 0; i < surf->num_nodes && !s; i++)
                sb_printf(&out, "v %.17g %.17g %.17g\n", pos[3 * (size_t)i], pos[3 * (size_t)i + 1],
                          pos[3 * (size_t)i + 2]);
            for (defo_index t = 0; t < surf->num_tris && !s; t++) {
                const defo_index *tri = surf->tris + 3 * (size_t)t;
                sb_printf(&out, "f %ld %ld %ld\n", base + (long)tri[0], base + (long)tri[1],
                          base + (long)tri[2]);
            }
            base += (long)surf->num_nodes;
            free(pos);
            continue;
        }
        const defo_mesh *m = body_mesh(r, b);
        const double *x = body_x(r, b);
        defo_boundary bd;
        memset(&bd, 0, sizeof bd);
        s = defo_mesh_boundary(m, 0, &bd);
        if (s < 0) break;
        long *map = malloc((size_t)m->num_nodes * sizeof *map + 1);
        if (!map) {
            defo_boundary_free(&bd);
            s = run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
            break;
        }
        for (defo_index i = 0; i < m->num_nodes; i++) map[i] = -1;
        long used = 0;
        for (size_t k = 0; k < 3 * (size_t)bd.num_faces; k++)
            if (map[bd.faces[k]] < 0) map[bd.faces[k]] = 0;
        for (defo_index i = 0; i < m->num_nodes; i++)
            if (map[i] == 0) {
                map[i] = base + used++;
                sb_printf(&out, "v %.17g %.17g %.17g\n", x[3 * (size_t)i], x[3 * (size_t)i + 1],
                          x[3 * (size_t)i + 2]);
            }
        for (defo_index f = 0; f < bd.num_faces; f++) {
            const defo_index *fc = bd.faces + 3 * (size_t)f;
            sb_printf(&out, "f %ld %ld %ld\n", map[fc[0]], map[fc[1]], map[fc[2]]);
        }
        base += used;
        free(map);
        defo_boundary_free(&bd);
    }
    if (!s && !out.s) s = run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    if (!s && write_atomic(path, out.s, out.n)) s = run_error(DEFO_ERR_IO, "cannot write %s", path);
    free(out.s);
    return s;
}

/* Draw the frame: merged mesh with its fields, colliders at time t. */
static defo_status render_frame(run_output *r, int frame, double t, const char *path) {
    defo_render_shape *shapes = NULL;
    int nshapes = 0;
    if (cli_collider_shapes(r->scene, t, &shapes, &nshapes) != 0)
        return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    defo_render_def rd = defo_default_render_def();
    rd.width = r->o->png_width;
    rd.height = r->o->png_height;
    memcpy(rd.frame_lo, r->frame_lo, sizeof rd.frame_lo);
    memcpy(rd.frame_hi, r->frame_hi, sizeof rd.frame_hi);
    rd.field = r->o->png_color[0] ? r->o->png_color : NULL;
    if (rd.field && !strcmp(rd.field, "J")) {
        rd.range[0] = 0; /* white at J = 1 on the diverging map */
        rd.range[1] = 2;
    }
    char caption[128];
    snprintf(caption, sizeof caption, "frame %d  t = %.2f s", frame, t);
    rd.caption = caption;
    defo_image img = {0, 0, NULL};
    defo_status s = defo_render_mesh(r->renderer, &rd, r->merged, r->x, shapes, nshapes, &img);
    free(shapes);
    if (s < 0) return s;
    s = defo_image_write_png(path, &img);
    defo_image_free(&img);
    return s;
}

defo_status run_output_frame(run_output *r, const run_frame_info *fi) {
    defo_world *w = defo_simulation_world(r->sim);
    double min_j;
    defo_status s = compute_fields(r, &min_j);
    if (s) return s;
    int frame = fi->frame;
    double t = defo_world_time(w);
    char name[64], path[2200];
    unsigned f = r->o->fields;
    defo_mesh *m = r->merged;
    struct {
        unsigned bit;
        const char *name;
        defo_field_location loc;
        int comps;
        const double *data;
    } fields[] = {{DEFO_OUT_FIELD_DISPLACEMENT, "displacement", DEFO_FIELD_POINT, 3, r->disp},
                  {DEFO_OUT_FIELD_VELOCITY, "velocity", DEFO_FIELD_POINT, 3, r->vel},
                  {DEFO_OUT_FIELD_J, "J", DEFO_FIELD_CELL, 1, r->J},
                  {DEFO_OUT_FIELD_INVERTED, "inverted", DEFO_FIELD_CELL, 1, r->inv},
                  {DEFO_OUT_FIELD_VON_MISES, "von_mises", DEFO_FIELD_CELL, 1, r->vm},
                  {DEFO_OUT_FIELD_MAX_PRINCIPAL, "max_principal_stress", DEFO_FIELD_CELL, 1, r->mp},
                  {DEFO_OUT_FIELD_PLASTIC_STRAIN, "plastic_strain", DEFO_FIELD_CELL, 1, r->plastic},
                  {DEFO_OUT_FIELD_BODY_ID, "body_id", DEFO_FIELD_CELL, 1, r->body_id}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0] && !s; i++)
        if ((f & fields[i].bit) || r->o->png)
            s = defo_mesh_add_field(m, fields[i].name, fields[i].loc, fields[i].comps,
                                    fields[i].data);
    if (s) return s;
    defo_write_options wo = defo_default_write_options();
    wo.positions = r->x;
    snprintf(name, sizeof name, "frames/frame_%04d.vtu", frame);
    if (r->o->vtu) {
        /* only the requested fields go into the .vtu: write from a view
         * without the others */
        int saved = m->num_fields;
        defo_field tmpf[8];
        int kept = 0;
        for (int i = 0; i < m->num_fields; i++) {
            int want = 1;
            for (size_t j = 0; j < sizeof fields / sizeof fields[0]; j++)
                if (!strcmp(m->fields[i].name, fields[j].name) && !(f & fields[j].bit)) want = 0;
            if (want && kept < 8) tmpf[kept++] = m->fields[i];
        }
        defo_field *orig = m->fields;
        m->fields = tmpf;
        m->num_fields = kept;
        snprintf(path, sizeof path, "%s/%s", r->dir, name);
        s = defo_mesh_write(path, m, &wo);
        m->fields = orig;
        m->num_fields = saved;
        if (s < 0) return s;
    }
    if (r->o->surface_obj) {
        snprintf(path, sizeof path, "%s/surface/frame_%04d.obj", r->dir, frame);
        int embedded = 0;
        for (int b = 0; b < r->nb; b++)
            embedded |= defo_simulation_embedded_surface(r->sim, b) != NULL;
        s = embedded ? write_embedded_obj(r, path) : defo_mesh_write(path, m, &wo);
        if (s < 0) return s;
    }
    if (r->o->png) {
        snprintf(path, sizeof path, "%s/png/frame_%04d.png", r->dir, frame);
        s = render_frame(r, frame, t, path);
        if (s < 0) return s;
    }
    /* stats line */
    sbuf b = {NULL, 0, 0};
    defo_index inverted = 0;
    double kin = 0, ela = 0;
    sb_printf(&b, "{\"frame\": %d, ", frame);
    sb_num(&b, "time", t);
    sb_printf(&b, ", ");
    sb_num(&b, "wall_ms", fi->wall_ms);
    sb_printf(&b, ", \"substeps\": %d, \"newton_iters\": %d, \"cg_iters\": %d, ", fi->stats.steps,
              fi->stats.newton_iterations, fi->stats.cg_iterations);
    sb_num(&b, "residual", fi->stats.residual);
    sb_printf(&b, ", \"dt\": ");
    sb_printf(&b, "%.17g", fi->stats.dt);
    sb_printf(&b, ", \"inverted_peak\": %ld, \"collisions\": %ld, \"splits\": %ld, ",
              (long)fi->stats.inverted_peak, (long)fi->stats.collisions, (long)fi->stats.splits);
    sbuf bodies = {NULL, 0, 0};
    for (int i = 0; i < r->nb && !s; i++) {
        defo_body_id id = defo_simulation_body(r->sim, i);
        defo_index bi = 0, comps = 0;
        double k = 0, e = 0, vol = 0;
        s = defo_body_count_inverted(w, id, &bi);
        if (!s) s = defo_body_energy(w, id, &k, &e, NULL);
        if (!s) s = defo_element_volume(body_mesh(r, i), body_x(r, i), &vol);
        if (!s) s = defo_body_components(w, id, &comps);
        inverted += bi;
        kin += k;
        ela += e;
        sb_printf(&bodies, "%s{\"name\": ", i ? ", " : "");
        sb_str(&bodies, defo_body_name(w, id));
        sb_printf(&bodies, ", \"inverted\": %ld, \"components\": %ld, ", (long)bi, (long)comps);
        sb_num(&bodies, "volume_ratio", vol / r->rest_volume[i]);
        sb_printf(&bodies, "}");
    }
    sb_printf(&b, "\"inverted\": %ld, ", (long)inverted);
    sb_num(&b, "min_J", min_j);
    sb_printf(&b, ", ");
    sb_num(&b, "kinetic_energy", kin);
    sb_printf(&b, ", ");
    sb_num(&b, "elastic_energy", ela);
    sb_printf(&b, ", \"bodies\": [%s]}", bodies.s ? bodies.s : "");
    free(bodies.s);
    if (s || !b.s) {
        free(b.s);
        return s ? s : run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (inverted > r->peak_inverted || r->peak_frame < 0) {
        if (inverted > r->peak_inverted || r->peak_frame < 0) r->peak_frame = frame;
        if (inverted > r->peak_inverted) r->peak_inverted = (int)inverted;
    }
    /* frame k replaces any later entries (a resumed run) */
    while (r->count > frame) {
        r->count--;
        free(r->files[r->count]);
        free(r->lines[r->count]);
    }
    if (r->count == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        double *tt = realloc(r->times, (size_t)cap * sizeof *tt);
        if (tt) r->times = tt;
        char **ff = realloc(r->files, (size_t)cap * sizeof *ff);
        if (ff) r->files = ff;
        char **ll = realloc(r->lines, (size_t)cap * sizeof *ll);
        if (ll) r->lines = ll;
        if (!tt || !ff || !ll) {
            free(b.s);
            return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
        }
        r->cap = cap;
    }
    r->times[r->count] = t;
    r->files[r->count] = xstrdup(name);
    r->lines[r->count] = b.s;
    r->count++;
    s = write_index_files(r);
    if (s) return s;
    if (r->o->checkpoint) {
        snprintf(path, sizeof path, "%s/checkpoint.bin", r->dir);
        s = defo_simulation_save_checkpoint(r->sim, path);
    }
    return s;
}

/* Resume: take frames 0..frame of an earlier run's stats.jsonl (the .pvd is
 * rebuilt from the frame times k/fps as written). */
defo_status run_output_resume(run_output *r, int frame) {
    char path[2200];
    snprintf(path, sizeof path, "%s/stats.jsonl", r->dir);
    FILE *f = fopen(path, "rb");
    if (!f) return run_error(DEFO_ERR_IO, "%s: missing (not a defo run folder?)", path);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int k = 0;
    defo_status s = DEFO_OK;
    while (k <= frame && (len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n') line[len - 1] = 0;
        if (r->count == r->cap) {
            int nc = r->cap ? 2 * r->cap : 64;
            double *tt = realloc(r->times, (size_t)nc * sizeof *tt);
            if (tt) r->times = tt;
            char **ff = realloc(r->files, (size_t)nc * sizeof *ff);
            if (ff) r->files = ff;
            char **ll = realloc(r->lines, (size_t)nc * sizeof *ll);
            if (ll) r->lines = ll;
            if (!tt || !ff || !ll) {
                s = run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
                break;
            }
            r->cap = nc;
        }
        char name[64];
        snprintf(name, sizeof name, "frames/frame_%04d.vtu", k);
        const char *tp = strstr(line, "\"time\": ");
        r->times[r->count] = tp ? strtod(tp + 8, NULL) : k / defo_scene_fps(r->scene);
        r->files[r->count] = xstrdup(name);
        r->lines[r->count] = xstrdup(line);
        const char *ip = strstr(line, "\"inverted\": ");
        int inv = ip ? atoi(ip + 12) : 0;
        if (inv > r->peak_inverted || r->peak_frame < 0) {
            r->peak_inverted = inv > r->peak_inverted ? inv : r->peak_inverted;
            r->peak_frame = k;
        }
        r->count++;
        k++;
    }
    free(line);
    fclose(f);
    if (!s && k != frame + 1)
        s = run_error(DEFO_ERR_PARSE, "%s has %d frames, the checkpoint is at frame %d", path, k,
                      frame);
    return s;
}

int run_output_peak_inverted(const run_output *r, int *frame) {
    if (frame) *frame = r->peak_frame;
    return r->peak_inverted;
}

/* summary.json (atomically). */
defo_status run_output_summary(run_output *r, const run_summary_info *si) {
    char path[2200], tmp[2300];
    snprintf(path, sizeof path, "%s/summary.json", r->dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) return run_error(DEFO_ERR_IO, "cannot write %s", tmp);
    defo_world *w = defo_simulation_world(r->sim);
    cli_json j = {f, 0, {0}};
    cli_json_begin_object(&j, NULL);
    cli_json_string(&j, "scene", defo_scene_name(r->scene));
    cli_json_string(&j, "status", si->status);
    if (si->error && si->error[0]) cli_json_string(&j, "error", si->error);
    cli_json_int(&j, "frames_completed", si->frames_completed);
    cli_json_int(&j, "frames_requested", si->frames_requested);
    cli_json_number(&j, "fps", defo_scene_fps(r->scene));
    cli_json_number(&j, "time", defo_world_time(w));
    cli_json_begin_object(&j, "totals");
    cli_json_int(&j, "substeps", si->substeps);
    cli_json_int(&j, "cg_iters", si->cg_iters);
    cli_json_int(&j, "newton_iters", si->newton_iters);
    cli_json_end_object(&j);
    cli_json_begin_object(&j, "timings");
    cli_json_number(&j, "wall_s", si->wall_s);
    cli_json_number(&j, "simulate_s", si->simulate_s);
    cli_json_number(&j, "output_s", si->output_s);
    cli_json_number(&j, "ms_per_frame", si->frames_run ? 1e3 * si->wall_s / si->frames_run : 0);
    cli_json_int(&j, "threads", defo_get_threads());
    cli_json_end_object(&j);
    cli_json_begin_object(&j, "peak_inverted");
    cli_json_int(&j, "count", r->peak_inverted);
    cli_json_int(&j, "frame", r->peak_frame);
    cli_json_end_object(&j);
    cli_json_begin_object(&j, "final");
    cli_json_begin_array(&j, "bodies");
    defo_index total_inv = 0;
    for (int i = 0; i < r->nb; i++) {
        defo_body_id id = defo_simulation_body(r->sim, i);
        const defo_mesh *m = body_mesh(r, i);
        defo_index bi = 0, comps = 0;
        double vol = 0;
        defo_body_count_inverted(w, id, &bi);
        defo_body_components(w, id, &comps);
        defo_element_volume(m, body_x(r, i), &vol);
        total_inv += bi;
        cli_json_begin_object(&j, NULL);
        cli_json_string(&j, "name", defo_body_name(w, id));
        cli_json_int(&j, "nodes", m->num_nodes);
        cli_json_int(&j, "elements", m->num_elems);
        cli_json_int(&j, "components", comps);
        cli_json_int(&j, "inverted", bi);
        cli_json_number(&j, "volume_ratio", vol / r->rest_volume[i]);
        cli_json_end_object(&j);
    }
    cli_json_end_array(&j);
    cli_json_int(&j, "inverted", total_inv);
    cli_json_end_object(&j);
    cli_json_begin_object(&j, "outputs");
    cli_json_string(&j, "dir", r->dir);
    if (r->o->vtu) {
        cli_json_string(&j, "pvd", "scene.pvd");
        cli_json_string(&j, "frames", "frames/frame_NNNN.vtu");
    }
    if (r->o->surface_obj) cli_json_string(&j, "surface", "surface/frame_NNNN.obj");
    if (r->o->png) cli_json_string(&j, "png", "png/frame_NNNN.png");
    cli_json_string(&j, "stats", "stats.jsonl");
    if (r->o->checkpoint) cli_json_string(&j, "checkpoint", "checkpoint.bin");
    cli_json_string(&j, "scene_copy", "scene.json");
    cli_json_end_object(&j);
    cli_json_end_object(&j);
    int bad = ferror(f);
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return run_error(DEFO_ERR_IO, "cannot write %s", path);
    }
    return DEFO_OK;
}

int run_output_write_text(const char *dir, const char *file, const char *text) {
    char path[2200];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return write_atomic(path, text, strlen(text));
}
