/*
 * cli/run_output.c — what `defo run` writes in OUTDIR, frame by frame:
 *
 *   frames/frame_NNNN.vtu  ALL bodies in one unstructured grid per frame
 *                          (body_id tells them apart), each body keeping its
 *                          cell type: tet4 as VTK_TETRA, tet10 as
 *                          VTK_QUADRATIC_TETRA, so ParaView draws tet10
 *                          bodies curved (defo_mesh_write_parts).  Point
 *                          data: displacement, velocity; cell data: J,
 *                          inverted, von_mises, max_principal_stress,
 *                          min_principal_stress (compression < 0),
 *                          plastic_strain, body_id.
 *   scene.pvd              the collection with each frame's time
 *   surface/frame_NNNN.obj one object per body (Blender): its boundary
 *                          surface (curved tet10 faces split in 4), or for a
 *                          body with an "embedded" surface that surface
 *                          (MG04 §5.1)
 *   png/frame_NNNN.png     when the scene asks (colliders drawn too; a body
 *                          with an embedded surface is drawn as that surface)
 *   cache/NAME.obj, .pc2, .mdd  when the scene asks (outputs.pc2, .mdd): a
 *                          Blender point cache of each body's surface
 *                          beside its rest surface (point_cache.c)
 *   stats.jsonl            one JSON object per frame
 *   summary.json           totals, timings, peak inverted, final state, paths
 *   checkpoint.bin         state after the last completed frame (--resume)
 *
 * Frame 0 is the initial state; frame k is the state after k steps.
 *
 * Bodies are read through the world (defo_body_*: mesh, positions,
 * velocities, energies) and written as "parts" of one grid: the per-node and
 * per-element output arrays hold every body one after the other (node_off,
 * elem_off), each body's view is its own mesh with fields pointing into its
 * slice.  A fracturing body (MG04 §4) gains nodes and changes connectivity,
 * so the arrays are rebuilt whenever a body's node count changed (a split
 * always adds a node).  Displacement is x − X with X the
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
#include "defo/embed.h"
#include "defo/render.h"
#include "defo/scene.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Output fields: name, location and the DEFO_OUT_FIELD_* bit. */
#define NUM_OUT_FIELDS 12
static const struct {
    unsigned bit;
    const char *name;
    defo_field_location loc;
    int comps;
} out_fields[NUM_OUT_FIELDS] = {
    {DEFO_OUT_FIELD_DISPLACEMENT, "displacement", DEFO_FIELD_POINT, 3},
    {DEFO_OUT_FIELD_VELOCITY, "velocity", DEFO_FIELD_POINT, 3},
    {DEFO_OUT_FIELD_J, "J", DEFO_FIELD_CELL, 1},
    {DEFO_OUT_FIELD_INVERTED, "inverted", DEFO_FIELD_CELL, 1},
    {DEFO_OUT_FIELD_VON_MISES, "von_mises", DEFO_FIELD_CELL, 1},
    {DEFO_OUT_FIELD_MAX_PRINCIPAL, "max_principal_stress", DEFO_FIELD_CELL, 1},
    {DEFO_OUT_FIELD_PLASTIC_STRAIN, "plastic_strain", DEFO_FIELD_CELL, 1},
    {DEFO_OUT_FIELD_BODY_ID, "body_id", DEFO_FIELD_CELL, 1},
    {DEFO_OUT_FIELD_MIN_PRINCIPAL, "min_principal_stress", DEFO_FIELD_CELL, 1},
    {DEFO_OUT_FIELD_ACTIVATION, "activation", DEFO_FIELD_CELL, 1},
    {DEFO_OUT_FIELD_CONTACT, "contact", DEFO_FIELD_POINT, 1},
    {DEFO_OUT_FIELD_PLASTIC_BENDING, "plastic_bending", DEFO_FIELD_CELL, 1}};

struct run_output {
    char dir[2048];
    const defo_scene *scene;
    defo_simulation *sim;
    const defo_scene_outputs *o;
    /* the world's live bodies (the scene's, and pieces the hybrid integrator
     * made: bodies come and go), scene_of: the scene body each is, or −1 */
    int nb, cap_nb, scene_nb;
    defo_body_id *ids;
    int *scene_of;
    defo_index *node_off, *elem_off; /* nb + 1: each body's slice of the arrays below */
    double *x, *disp, *vel;          /* 3 per node of every body */
    double *touch;                   /* 1 per node: in body–body contact */
    double *J, *inv, *vm, *mp, *plastic, *body_id, *mn, *act, *bend; /* per element, all bodies */
    double *rest_volume;                                             /* per body */
    /* each body as a part of the frame: its mesh with fields into its slices */
    defo_mesh *views;
    defo_field *view_fields; /* NUM_OUT_FIELDS per body */
    /* bodies with an "embedded" surface (MG04 §5.1): its current positions
     * (the surface and its binding are the simulation's, cut along the
     * cracks of a fracturing body, MG04 §5.2) */
    double **emb_x;
    double *obj_x; /* positions of every OBJ part, in order */
    /* frames written: times and vtu names (for the .pvd), stats lines */
    int count, cap;
    double *times;
    char **files;
    char **lines;
    defo_renderer *renderer;
    double frame_lo[3], frame_hi[3];
    int peak_inverted, peak_frame;
    long peak_pairs;   /* most contact pairs between bodies in a frame */
    double peak_depth; /* deepest signed pair, and its frame */
    int depth_frame;
    int skip_checkpoints;
    /* point caches: made by the first frame written (or by a resume) */
    run_cache *cache;
    int cache_ready;
    int surface_obj; /* frame OBJs: asked for, or standing in for a cache (fracture) */
};

/* The contact peaks of the run so far, with frame k's pairs and depth. */
static void contact_peaks(run_output *r, int k, long pairs, double depth) {
    if (pairs > r->peak_pairs) r->peak_pairs = pairs;
    if (depth > r->peak_depth) {
        r->peak_depth = depth;
        r->depth_frame = k;
    }
}

/* Body b of the run through the world (defo/world.h). */
static const defo_mesh *body_mesh(const run_output *r, int b) {
    return defo_body_mesh(defo_simulation_world(r->sim), r->ids[b]);
}
static const double *body_x(const run_output *r, int b) {
    return defo_body_positions(defo_simulation_world(r->sim), r->ids[b]);
}
static const double *body_v(const run_output *r, int b) {
    return defo_body_velocities(defo_simulation_world(r->sim), r->ids[b]);
}
/* its embedded surface's binding and positions (scene bodies only) */
static const defo_embed *body_embed(const run_output *r, int b) {
    return r->scene_of[b] >= 0 ? defo_simulation_embedding(r->sim, r->scene_of[b]) : NULL;
}
static double *body_emb_x(const run_output *r, int b) {
    return r->scene_of[b] >= 0 ? r->emb_x[r->scene_of[b]] : NULL;
}
static const defo_mesh *body_surface(const run_output *r, int b) {
    return r->scene_of[b] >= 0 ? defo_simulation_embedded_surface(r->sim, r->scene_of[b]) : NULL;
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

static void free_arrays(run_output *r) {
    double **arrays[] = {&r->x,       &r->disp,    &r->vel,   &r->J,  &r->inv, &r->vm,    &r->mp,
                         &r->plastic, &r->body_id, &r->obj_x, &r->mn, &r->act, &r->touch, &r->bend};
    for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++) {
        free(*arrays[i]);
        *arrays[i] = NULL;
    }
}

void run_output_destroy(run_output *r) {
    if (!r) return;
    free_arrays(r);
    free(r->rest_volume);
    free(r->node_off);
    free(r->elem_off);
    for (int i = 0; i < r->scene_nb; i++)
        if (r->emb_x) free(r->emb_x[i]);
    free(r->ids);
    free(r->scene_of);
    free(r->views);
    free(r->view_fields);
    free(r->emb_x);
    for (int i = 0; i < r->count; i++) {
        free(r->files[i]);
        free(r->lines[i]);
    }
    free(r->times);
    free(r->files);
    free(r->lines);
    defo_renderer_destroy(r->renderer);
    run_cache_destroy(r->cache);
    free(r);
}

const char *run_output_dir(const run_output *r) {
    return r->dir;
}

/* The output arrays of every body's current mesh (each body's slice at
 * node_off / elem_off) with each body's rest data; called at the start and
 * whenever a body's node count changed (fracture).  Returns a defo_status. */
static defo_status build_arrays(run_output *r) {
    free_arrays(r);
    defo_status s = DEFO_OK;
    size_t obj_nodes = 0;
    for (int b = 0; b < r->nb && !s; b++) {
        const defo_mesh *m = body_mesh(r, b);
        const defo_mesh *sf = body_surface(r, b);
        r->node_off[b + 1] = r->node_off[b] + m->num_nodes;
        r->elem_off[b + 1] = r->elem_off[b] + m->num_elems;
        obj_nodes += (size_t)(sf ? sf->num_nodes : m->num_nodes);
    }
    if (s) return s;
    size_t n3 = 3 * (size_t)r->node_off[r->nb] + 1, ne = (size_t)r->elem_off[r->nb] + 1;
    r->x = malloc(n3 * sizeof(double));
    r->disp = malloc(n3 * sizeof(double));
    r->vel = malloc(n3 * sizeof(double));
    r->obj_x = malloc((3 * obj_nodes + 1) * sizeof(double));
    r->touch = calloc((size_t)r->node_off[r->nb] + 1, sizeof(double));
    double **cell[] = {&r->J,       &r->inv, &r->vm,  &r->mp,  &r->plastic,
                       &r->body_id, &r->mn,  &r->act, &r->bend};
    int ok = r->x && r->disp && r->vel && r->obj_x && r->touch;
    for (size_t i = 0; i < sizeof cell / sizeof cell[0]; i++)
        ok = ok && (*cell[i] = calloc(ne, sizeof(double)));
    if (!ok) return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    for (int b = 0; b < r->nb; b++)
        for (defo_index e = r->elem_off[b]; e < r->elem_off[b + 1]; e++)
            r->body_id[e] = r->ids[b].index; /* the world's index: stable across frames */
    return DEFO_OK;
}

/* Each body's view for the frame: its current mesh (connectivity, rest
 * positions; no triangles, groups or tags of its file) with the fields in
 * mask pointing into its slices. */
static void set_views(run_output *r, unsigned mask) {
    const double *data[NUM_OUT_FIELDS] = {r->disp,    r->vel,     r->J,  r->inv, r->vm,    r->mp,
                                          r->plastic, r->body_id, r->mn, r->act, r->touch, r->bend};
    for (int b = 0; b < r->nb; b++) {
        defo_mesh *v = &r->views[b];
        *v = *body_mesh(r, b);
        v->num_tris = 0;
        v->nodes_per_tri = 0;
        v->tris = NULL;
        v->tri_tag = NULL;
        v->elem_tag = NULL;
        v->num_groups = 0;
        v->groups = NULL;
        v->fields = r->view_fields + (size_t)b * NUM_OUT_FIELDS;
        v->num_fields = 0;
        for (int i = 0; i < NUM_OUT_FIELDS; i++) {
            if (!(mask & out_fields[i].bit)) continue;
            defo_field *f = &v->fields[v->num_fields++];
            memset(f, 0, sizeof *f);
            snprintf(f->name, sizeof f->name, "%s", out_fields[i].name);
            f->location = out_fields[i].loc;
            f->components = out_fields[i].comps;
            size_t off = f->location == DEFO_FIELD_POINT
                             ? (size_t)out_fields[i].comps * (size_t)r->node_off[b]
                             : (size_t)r->elem_off[b];
            f->data = (double *)data[i] + off;
        }
    }
}

/* The world's live bodies now; when they are not those of the last call,
 * the per-body arrays again (*changed = 1; rest volumes: a crack moves no
 * rest position, so a body's never changes). */
static defo_status refresh_bodies(run_output *r, int *changed) {
    defo_world *w = defo_simulation_world(r->sim);
    const int nw = defo_world_num_bodies(w);
    int live = 0, same = 1;
    for (int i = 0; i < nw; i++) {
        const defo_body_id id = defo_world_body(w, i);
        if (!defo_body_is_valid(w, id)) continue;
        same &= live < r->nb && r->ids[live].index == id.index &&
                r->ids[live].generation == id.generation;
        live++;
    }
    *changed = !(same && live == r->nb && r->ids);
    if (!*changed) return DEFO_OK;
    if (live + 1 > r->cap_nb) {
        const int cap = 2 * live + 4;
        defo_body_id *ids = realloc(r->ids, (size_t)cap * sizeof *ids);
        if (ids) r->ids = ids;
        int *so = realloc(r->scene_of, (size_t)cap * sizeof *so);
        if (so) r->scene_of = so;
        if (!ids || !so) return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
        r->cap_nb = cap;
    }
    r->nb = 0;
    for (int i = 0; i < nw; i++) {
        const defo_body_id id = defo_world_body(w, i);
        if (!defo_body_is_valid(w, id)) continue;
        r->ids[r->nb] = id;
        r->scene_of[r->nb] = -1;
        for (int j = 0; j < r->scene_nb; j++) {
            const defo_body_id sj = defo_simulation_body(r->sim, j);
            if (sj.index == id.index && sj.generation == id.generation) r->scene_of[r->nb] = j;
        }
        r->nb++;
    }
    size_t nb1 = (size_t)r->nb + 1;
    free(r->node_off);
    free(r->elem_off);
    free(r->rest_volume);
    free(r->views);
    free(r->view_fields);
    r->node_off = calloc(nb1, sizeof *r->node_off);
    r->elem_off = calloc(nb1, sizeof *r->elem_off);
    r->rest_volume = calloc(nb1, sizeof(double));
    r->views = calloc(nb1, sizeof *r->views);
    r->view_fields = calloc(nb1 * NUM_OUT_FIELDS, sizeof *r->view_fields);
    if (!r->node_off || !r->elem_off || !r->rest_volume || !r->views || !r->view_fields)
        return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    defo_status s = DEFO_OK;
    for (int b = 0; b < r->nb && !s; b++) {
        /* the rest volume of the body as it was made (its original elements) */
        s = defo_element_volume(body_mesh(r, b), NULL, &r->rest_volume[b]);
    }
    return s;
}

/* The output arrays and folders.  Returns a defo_status. */
defo_status run_output_create(const char *outdir, const defo_scene *scene, defo_simulation *sim,
                              run_output **out) {
    *out = NULL;
    run_output *r = calloc(1, sizeof *r);
    if (!r) return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    snprintf(r->dir, sizeof r->dir, "%s", outdir);
    r->scene = scene;
    r->sim = sim;
    r->o = defo_scene_get_outputs(scene);
    r->scene_nb = defo_simulation_num_bodies(sim);
    r->peak_frame = -1;
    /* a fracturing body's surface cannot be a point cache: its frame OBJs
     * stand in for it (point_cache.c) */
    r->surface_obj =
        r->o->surface_obj || ((r->o->pc2 || r->o->mdd) && run_cache_needs_surface_obj(sim));
    char sub[2200];
    int bad = make_dir(outdir);
    snprintf(sub, sizeof sub, "%s/frames", outdir);
    if (!bad && r->o->vtu) bad = make_dir(sub);
    snprintf(sub, sizeof sub, "%s/surface", outdir);
    if (!bad && r->surface_obj) bad = make_dir(sub);
    snprintf(sub, sizeof sub, "%s/png", outdir);
    if (!bad && r->o->png) bad = make_dir(sub);
    if (bad) {
        int e = errno;
        run_output_destroy(r);
        return run_error(DEFO_ERR_IO, "cannot create output folder %s: %s", sub, strerror(e));
    }
    size_t sb1 = (size_t)r->scene_nb + 1;
    r->emb_x = calloc(sb1, sizeof *r->emb_x);
    defo_status s = DEFO_OK;
    if (!r->emb_x) s = run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    int changed = 0;
    if (!s) s = refresh_bodies(r, &changed);
    if (!s) s = build_arrays(r);
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
        for (int k = 0; k < 3; k++) {
            r->frame_lo[k] = INFINITY;
            r->frame_hi[k] = -INFINITY;
        }
        for (int b = 0; b < r->nb; b++) {
            double lo[3], hi[3];
            if (defo_mesh_bbox(body_mesh(r, b), lo, hi) < 0) continue;
            for (int k = 0; k < 3; k++) {
                r->frame_lo[k] = fmin(r->frame_lo[k], lo[k]);
                r->frame_hi[k] = fmax(r->frame_hi[k], hi[k]);
            }
        }
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

/* Current state into the output arrays and the per-element fields. */
static defo_status compute_fields(run_output *r, double *min_j) {
    *min_j = INFINITY;
    int changed = 0;
    defo_status rs = refresh_bodies(r, &changed);
    if (rs) return rs;
    for (int b = 0; b < r->nb; b++)
        changed |= body_mesh(r, b)->num_nodes != r->node_off[b + 1] - r->node_off[b];
    if (changed) {
        defo_status s = build_arrays(r);
        if (s) return s;
    }
    for (int b = 0; b < r->nb; b++) {
        const double *x = body_x(r, b), *v = body_v(r, b);
        size_t off = 3 * (size_t)r->node_off[b],
               n3 = 3 * (size_t)(r->node_off[b + 1] - r->node_off[b]);
        memcpy(r->x + off, x, n3 * sizeof(double));
        memcpy(r->vel + off, v, n3 * sizeof(double));
        const defo_mesh *bm = body_mesh(r, b);
        for (size_t j = 0; j < n3; j++) r->disp[off + j] = x[j] - bm->x[j];
        /* J and stresses: the body's force model (derived fields) */
        const defo_index e0 = r->elem_off[b];
        defo_force_fields ff = {r->J + e0, r->vm + e0, r->mp + e0, NULL, NULL, 0, 0, r->mn + e0};
        defo_world *w = defo_simulation_world(r->sim);
        defo_status s = defo_body_fields(w, r->ids[b], &ff);
        if (s) return s;
        for (defo_index e = e0; e < r->elem_off[b + 1]; e++) r->inv[e] = r->J[e] <= 0 ? 1 : 0;
        if (ff.min_J < *min_j) *min_j = ff.min_J;
        /* ‖log F_p‖ per element (0 for bodies without plasticity). */
        s = defo_body_plastic_strain(w, r->ids[b], r->plastic + e0);
        if (s) return s;
        s = defo_body_contact_nodes(w, r->ids[b], r->touch + r->node_off[b]);
        if (s) return s;
        /* shells: |ε_b,p| per triangle (0 for tets and without bending flow) */
        s = defo_body_plastic_bending(w, r->ids[b], r->bend + e0);
        if (s) return s;
        /* the activation the last step used (0 for bodies without) */
        const double *act = defo_body_activation(w, r->ids[b]);
        const size_t ne = (size_t)(r->elem_off[b + 1] - e0);
        if (act)
            memcpy(r->act + e0, act, ne * sizeof(double));
        else
            memset(r->act + e0, 0, ne * sizeof(double));
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

/* The embedded surfaces' current positions (MG04 §5.1). */
static defo_status update_embedded(run_output *r) {
    for (int b = 0; b < r->scene_nb; b++) {
        const defo_mesh *sf = defo_simulation_embedded_surface(r->sim, b);
        if (!sf) continue;
        /* a fracturing body's surface changes as it is cut */
        double *x = realloc(r->emb_x[b], (3 * (size_t)sf->num_nodes + 1) * sizeof(double));
        if (!x) return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
        r->emb_x[b] = x;
        defo_status s = defo_simulation_embedded_positions(r->sim, b, r->emb_x[b]);
        if (s < 0) return s;
    }
    return DEFO_OK;
}

/* surface/frame_NNNN.obj: one object per body, named after it — its boundary
 * (tet10: each curved face as 4 triangles), or its embedded surface. */
static defo_status write_obj(run_output *r, const char *path) {
    defo_world *w = defo_simulation_world(r->sim);
    const defo_mesh **parts = calloc((size_t)r->nb + 1, sizeof *parts);
    const char **names = calloc((size_t)r->nb + 1, sizeof *names);
    if (!parts || !names) {
        free(parts);
        free(names);
        return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    }
    size_t off = 0;
    for (int b = 0; b < r->nb; b++) {
        const defo_mesh *sf = body_surface(r, b);
        parts[b] = sf ? sf : &r->views[b];
        names[b] = defo_body_name(w, r->ids[b]);
        size_t n3 = 3 * (size_t)parts[b]->num_nodes;
        memcpy(r->obj_x + off, sf ? body_emb_x(r, b) : r->x + 3 * (size_t)r->node_off[b],
               n3 * sizeof(double));
        off += n3;
    }
    defo_write_options wo = defo_default_write_options();
    wo.positions = r->obj_x;
    wo.part_names = names;
    defo_status s = defo_mesh_write_parts(path, parts, r->nb, &wo);
    free(parts);
    free(names);
    return s;
}

/* Draw the frame: every body (through its embedded surface when it has one)
 * with its fields, colliders at time t.  The colour range is the renderer's
 * automatic one (defo_render_auto_range: J [0, 2], stresses 1st-99th
 * percentile of this frame), the one defo render uses for sequences. */
static defo_status render_frame(run_output *r, int frame, double t, const char *path) {
    defo_render_shape *shapes = NULL;
    int nshapes = 0;
    if (cli_collider_shapes(r->scene, t, &shapes, &nshapes) != 0)
        return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    defo_render_part *parts = calloc((size_t)r->nb + 1, sizeof *parts);
    if (!parts) {
        free(shapes);
        return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int b = 0; b < r->nb; b++) {
        parts[b].mesh = &r->views[b];
        parts[b].positions = r->x + 3 * (size_t)r->node_off[b];
        if (body_embed(r, b)) {
            parts[b].surface = body_surface(r, b);
            parts[b].surface_positions = body_emb_x(r, b);
            parts[b].surface_elem = defo_embed_elements(body_embed(r, b));
            parts[b].surface_bary = defo_embed_barycentric(body_embed(r, b));
        }
    }
    defo_render_def rd = defo_default_render_def();
    rd.width = r->o->png_width;
    rd.height = r->o->png_height;
    memcpy(rd.frame_lo, r->frame_lo, sizeof rd.frame_lo);
    memcpy(rd.frame_hi, r->frame_hi, sizeof rd.frame_hi);
    rd.field = r->o->png_color[0] ? r->o->png_color : NULL;
    char caption[128];
    snprintf(caption, sizeof caption, "frame %d  t = %.3g s", frame, t);
    rd.caption = caption;
    defo_image img = {0, 0, NULL};
    defo_status s = defo_render_parts(r->renderer, &rd, parts, r->nb, shapes, nshapes, &img);
    free(shapes);
    free(parts);
    if (s < 0) return s;
    s = defo_image_write_png(path, &img);
    defo_image_free(&img);
    return s;
}

/* The point caches (when the scene asks): new ones (resume_frame < 0) or an
 * earlier run's continued after resume_frame; what they cannot hold is said
 * on stderr. */
static defo_status start_cache(run_output *r, int resume_frame) {
    r->cache_ready = 1;
    defo_status s = run_cache_create(r->dir, r->scene, r->sim, resume_frame, &r->cache);
    const char *notes = run_cache_notes(r->cache);
    if (notes[0]) fputs(notes, stderr);
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
    if (r->o->vtu || r->surface_obj || r->o->png) s = update_embedded(r);
    if (s) return s;
    defo_write_options wo = defo_default_write_options();
    wo.positions = r->x;
    snprintf(name, sizeof name, "frames/frame_%04d.vtu", frame);
    if (r->o->vtu) {
        /* every body one part of the grid, with the requested fields */
        set_views(r, f);
        const defo_mesh **parts = calloc((size_t)r->nb + 1, sizeof *parts);
        if (!parts) return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
        for (int b = 0; b < r->nb; b++) parts[b] = &r->views[b];
        snprintf(path, sizeof path, "%s/%s", r->dir, name);
        s = defo_mesh_write_parts(path, parts, r->nb, &wo);
        free(parts);
        if (s < 0) return s;
    }
    if (r->surface_obj) {
        snprintf(path, sizeof path, "%s/surface/frame_%04d.obj", r->dir, frame);
        set_views(r, 0);
        s = write_obj(r, path);
        if (s < 0) return s;
    }
    if (r->o->png) {
        snprintf(path, sizeof path, "%s/png/frame_%04d.png", r->dir, frame);
        set_views(r, DEFO_OUT_FIELD_ALL);
        s = render_frame(r, frame, t, path);
        if (s < 0) return s;
    }
    if (!r->cache_ready) {
        s = start_cache(r, -1);
        if (s < 0) return s;
    }
    s = run_cache_frame(r->cache, frame);
    if (s < 0) return s;
    /* stats line */
    sbuf b = {NULL, 0, 0};
    defo_index inverted = 0, folded = 0;
    double kin = 0, ela = 0;
    sb_printf(&b, "{\"frame\": %d, ", frame);
    sb_num(&b, "time", t);
    sb_printf(&b, ", ");
    sb_num(&b, "wall_ms", fi->wall_ms);
    sb_printf(&b,
              ", \"substeps\": %d, \"newton_iters\": %d, \"exact_iters\": %d, \"cg_iters\": %d, ",
              fi->stats.steps, fi->stats.newton_iterations, fi->stats.exact_iterations,
              fi->stats.cg_iterations);
    sb_num(&b, "residual", fi->stats.residual);
    sb_printf(&b, ", \"not_converged\": %d", fi->stats.not_converged);
    sb_printf(&b, ", \"solver_recoveries\": %d", fi->stats.solver_recoveries);
    sb_printf(&b, ", \"contact_sweeps\": %d", fi->stats.contact_sweeps);
    sb_printf(&b, ", \"contacts_loaded\": %d, \"contacts_refound\": %d", fi->stats.contacts_loaded,
              fi->stats.contacts_refound);
    sb_printf(&b, ", \"dt\": ");
    sb_printf(&b, "%.17g", fi->stats.dt);
    sb_printf(&b, ", \"inverted_peak\": %ld, \"collisions\": %ld, \"splits\": %ld, ",
              (long)fi->stats.inverted_peak, (long)fi->stats.collisions, (long)fi->stats.splits);
    sb_printf(&b, "\"contacts\": %ld, ", (long)fi->stats.contacts);
    sb_num(&b, "contact_depth", fi->stats.contact_depth);
    sb_printf(&b, ", ");
    sb_num(&b, "contact_ms", 1e3 * fi->stats.contact_seconds);
    sb_printf(&b, ", ");
    sb_printf(&b, "\"cracks\": %d, \"held\": %d, \"impacts\": %d, \"fragments\": %d, ",
              fi->stats.cracks, fi->stats.held, fi->stats.impacts, fi->stats.fragments);
    sb_printf(&b, "\"unresolved\": %d, ", fi->stats.unresolved);
    sb_printf(&b, "\"yielding\": %d, \"unpatched\": %d, ", fi->stats.yielding, fi->stats.unpatched);
    sbuf bodies = {NULL, 0, 0};
    for (int i = 0; i < r->nb && !s; i++) {
        defo_body_id id = r->ids[i];
        defo_index bi = 0, bf = 0, comps = 0;
        double k = 0, e = 0, vol = 0;
        s = defo_body_count_inverted(w, id, &bi);
        if (!s) s = defo_body_count_folded(w, id, &bf);
        if (!s) s = defo_body_energy(w, id, &k, &e, NULL);
        if (!s) s = defo_element_volume(body_mesh(r, i), body_x(r, i), &vol);
        if (!s) s = defo_body_components(w, id, &comps);
        inverted += bi;
        folded += bf;
        kin += k;
        ela += e;
        sb_printf(&bodies, "%s{\"name\": ", i ? ", " : "");
        sb_str(&bodies, defo_body_name(w, id));
        sb_printf(&bodies, ", \"inverted\": %ld, \"folded\": %ld, \"components\": %ld, ", (long)bi,
                  (long)bf, (long)comps);
        sb_num(&bodies, "volume_ratio", vol / r->rest_volume[i]);
        sb_printf(&bodies, "}");
    }
    sb_printf(&b, "\"inverted\": %ld, \"folded\": %ld, ", (long)inverted, (long)folded);
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
    contact_peaks(r, frame, (long)fi->stats.contacts, fi->stats.contact_depth);
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
    if (r->o->checkpoint && !r->skip_checkpoints) {
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
        const char *cp = strstr(line, "\"contacts\": "), *dp = strstr(line, "\"contact_depth\": ");
        contact_peaks(r, k, cp ? atol(cp + 12) : 0, dp ? strtod(dp + 17, NULL) : 0);
        r->count++;
        k++;
    }
    free(line);
    fclose(f);
    if (!s && k != frame + 1)
        s = run_error(DEFO_ERR_PARSE, "%s has %d frames, the checkpoint is at frame %d", path, k,
                      frame);
    if (!s) s = start_cache(r, frame);
    return s;
}

void run_output_skip_checkpoints(run_output *r) {
    r->skip_checkpoints = 1;
}

int run_output_peak_inverted(const run_output *r, int *frame) {
    if (frame) *frame = r->peak_frame;
    return r->peak_inverted;
}

/* summary.json (atomically), after the .mdd caches (made from the .pc2). */
defo_status run_output_summary(run_output *r, const run_summary_info *si) {
    defo_status cs = run_cache_finish(r->cache);
    if (cs < 0) return cs;
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
    cli_json_begin_object(&j, "peak_contact");
    cli_json_int(&j, "pairs", r->peak_pairs);
    cli_json_number(&j, "depth", r->peak_depth);
    cli_json_int(&j, "depth_frame", r->peak_depth > 0 ? r->depth_frame : -1);
    cli_json_end_object(&j);
    cli_json_begin_object(&j, "final");
    cli_json_begin_array(&j, "bodies");
    defo_index total_inv = 0;
    for (int i = 0; i < r->nb; i++) {
        defo_body_id id = r->ids[i];
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
    if (r->surface_obj) cli_json_string(&j, "surface", "surface/frame_NNNN.obj");
    if (r->cache) { /* each cached body: its rest surface and its caches */
        cli_json_begin_array(&j, "caches");
        for (int i = 0; i < run_cache_count(r->cache); i++) {
            int b = 0;
            const char *stem = run_cache_name(r->cache, i, &b);
            char file[256];
            cli_json_begin_object(&j, NULL);
            cli_json_string(&j, "body", defo_body_name(w, defo_simulation_body(r->sim, b)));
            snprintf(file, sizeof file, "cache/%s.obj", stem);
            cli_json_string(&j, "obj", file);
            snprintf(file, sizeof file, "cache/%s.pc2", stem);
            cli_json_string(&j, "pc2", file);
            if (r->o->mdd) {
                snprintf(file, sizeof file, "cache/%s.mdd", stem);
                cli_json_string(&j, "mdd", file);
            }
            cli_json_end_object(&j);
        }
        cli_json_end_array(&j);
        cli_json_begin_array(&j, "uncached"); /* bodies with fracture: frame OBJs */
        for (int b = 0; b < r->nb; b++)
            if (defo_simulation_body_fractures(r->sim, b))
                cli_json_string(&j, NULL, defo_body_name(w, defo_simulation_body(r->sim, b)));
        cli_json_end_array(&j);
    }
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

/* ------------------------------------------------------------ the folder */
/* The files defo run writes: in OUTDIR, and frame_NNNN.EXT in its subfolders
 * (each possibly with a .tmp suffix of an interrupted write). */
static const char *const top_files[] = {
    "scene.pvd", "scene.json", "stats.jsonl", "summary.json", "checkpoint.bin", "stats.png", NULL};
static const struct {
    const char *dir, *ext;
} frame_files[] = {{"frames", ".vtu"}, {"surface", ".obj"}, {"png", ".png"}};
/* cache/ is defo's: every .obj, .pc2 and .mdd there (point_cache.c) */
static const char *const cache_exts[] = {".obj", ".pc2", ".mdd", NULL};

static int is_cache_file(const char *name) {
    size_t n = strlen(name);
    if (n > 4 && !strcmp(name + n - 4, ".tmp")) n -= 4;
    for (int i = 0; cache_exts[i]; i++)
        if (n > 4 && !strncmp(name + n - 4, cache_exts[i], 4)) return 1;
    return 0;
}

static int is_frame_file(const char *name, const char *ext) {
    size_t n = strlen(name), e = strlen(ext);
    if (n > 4 && !strcmp(name + n - 4, ".tmp")) n -= 4;
    if (strncmp(name, "frame_", 6) != 0 || n < 6 + e + 1 || strncmp(name + n - e, ext, e) != 0)
        return 0;
    for (size_t i = 6; i < n - e; i++)
        if (name[i] < '0' || name[i] > '9') return 0;
    return 1;
}

static int is_top_file(const char *name) {
    size_t n = strlen(name);
    for (int i = 0; top_files[i]; i++) {
        size_t k = strlen(top_files[i]);
        if (!strcmp(name, top_files[i]) ||
            (n == k + 4 && !strncmp(name, top_files[i], k) && !strcmp(name + k, ".tmp")))
            return 1;
    }
    return 0;
}

run_folder_state run_output_folder_state(const char *dir, const char *scene_dump) {
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? RUN_FOLDER_ABSENT : RUN_FOLDER_OTHER;
    int any = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) any = 1;
    closedir(d);
    if (!any) return RUN_FOLDER_EMPTY;
    /* the same scene (its canonical copy, byte for byte) with a checkpoint */
    char path[2300];
    snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return RUN_FOLDER_OTHER;
    fclose(f);
    snprintf(path, sizeof path, "%s/scene.json", dir);
    f = fopen(path, "rb");
    if (!f) return RUN_FOLDER_OTHER;
    size_t n = strlen(scene_dump), got = 0;
    char *buf = malloc(n + 2);
    if (buf) got = fread(buf, 1, n + 1, f);
    fclose(f);
    int same = buf && got == n && memcmp(buf, scene_dump, n) == 0;
    free(buf);
    return same ? RUN_FOLDER_SAME_SCENE : RUN_FOLDER_OTHER;
}

int run_output_clear(const char *dir, int *removed) {
    *removed = 0;
    char path[2600];
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    for (struct dirent *e; (e = readdir(d));)
        if (is_top_file(e->d_name)) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (remove(path) != 0) {
                closedir(d);
                return -1;
            }
            (*removed)++;
        }
    closedir(d);
    for (size_t k = 0; k < sizeof frame_files / sizeof frame_files[0]; k++) {
        char sub[2100];
        snprintf(sub, sizeof sub, "%s/%s", dir, frame_files[k].dir);
        d = opendir(sub);
        if (!d) continue;
        for (struct dirent *e; (e = readdir(d));)
            if (is_frame_file(e->d_name, frame_files[k].ext)) {
                snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
                if (remove(path) != 0) {
                    closedir(d);
                    return -1;
                }
                (*removed)++;
            }
        closedir(d);
        rmdir(sub); /* only when nothing else is left in it */
    }
    char sub[2100];
    snprintf(sub, sizeof sub, "%s/cache", dir);
    d = opendir(sub);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d));)
        if (is_cache_file(e->d_name)) {
            snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
            if (remove(path) != 0) {
                closedir(d);
                return -1;
            }
            (*removed)++;
        }
    closedir(d);
    rmdir(sub);
    return 0;
}
