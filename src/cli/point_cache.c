/*
 * cli/point_cache.c — Blender point caches of every body's surface
 * (outputs.pc2, outputs.mdd): one animated object per body instead of one
 * OBJ file per frame.
 *
 * For body b, in OUTDIR/cache/:
 *   NAME.obj  the surface at rest, written once by the OBJ writer that
 *             writes surface/frame_NNNN.obj (defo_mesh_write_parts), so its
 *             vertices are those of the body's object in every frame OBJ, in
 *             the same order: the nodes its triangles use, in index order
 *             (the boundary of the tet mesh, tet10 faces split in 4, or the
 *             body's "embedded" surface);
 *   NAME.pc2  Point Cache 2, little-endian: "POINTCACHE2\0", int32 version 1,
 *             int32 vertex count, float32 start frame 0, float32 sampling 1
 *             (one sample a frame), int32 sample count, then per frame the
 *             vertices' float32 x y z.  Blender's Mesh Cache modifier
 *             reads it;
 *   NAME.mdd  the same frames as MDD (big-endian: int32 frames, int32
 *             vertices, float32 time of each frame [s], then the frames),
 *             written whole when the run ends, from the .pc2 (outputs.mdd
 *             alone writes the .pc2 too: the .mdd is made from it).
 * NAME is the body's name with every character other than letters, digits,
 * '-', '_' and '.' replaced by '_' (a second body of the same NAME gets
 * "_<index>" appended).
 *
 * The .pc2 grows frame by frame without rewriting what is there: a frame's
 * vertices are appended, then the sample count in the header is raised, so
 * the header only ever counts complete frames (an interrupted write leaves
 * bytes after the last counted frame, which readers skip and a resumed run
 * overwrites).  A resumed run keeps the frames up to its checkpoint's.
 *
 * A body with "fracture" gets no cache: its surface gains vertices and
 * faces as it splits, and a point cache animates one fixed vertex list.
 * Its surface is in the frame OBJs (surface/frame_NNNN.obj, written then
 * whatever outputs.surface_obj says), which tools/blender/defo_import.py
 * loads as a frame sequence; the run says so when it starts.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli/cli.h"
#include "defo/embed.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PC2_HEADER 32

typedef struct cache_body {
    int body;           /* index in the scene */
    char name[128];     /* file name stem */
    defo_index nverts;  /* vertices of the surface */
    defo_index *vert;   /* node (or embedded vertex) of each, in OBJ order */
    int embedded;       /* 1: vertices of the embedded surface */
    double *emb_x;      /* embedded positions (3 per surface vertex) */
    int start, samples; /* first frame of the .pc2, frames in it */
} cache_body;

struct run_cache {
    char dir[2200]; /* OUTDIR/cache */
    defo_simulation *sim;
    double fps;
    int mdd; /* also the .mdd when the run ends */
    int nc;
    cache_body *c;
    float *buf; /* one frame of the largest surface */
    char notes[4096];
};

/* ------------------------------------------------------------ bytes */
static void put_le32(unsigned char *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * k));
}
static void put_be32(unsigned char *p, uint32_t v) {
    for (int k = 0; k < 4; k++) p[k] = (unsigned char)(v >> (8 * (3 - k)));
}
static uint32_t get_le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint32_t float_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static float bits_float(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ------------------------------------------------------------ the surface */
/* The body's mesh as the frame OBJ writes it: without the triangles of its
 * file, so the writer takes the boundary of the tets. */
static defo_mesh volume_view(const defo_mesh *m) {
    defo_mesh v = *m;
    v.num_tris = 0;
    v.nodes_per_tri = 0;
    v.tris = NULL;
    v.tri_tag = NULL;
    return v;
}

/* The vertices the OBJ writer writes for this part: the nodes its triangles
 * (or the boundary faces of its tets) use, in index order. */
static defo_status surface_vertices(const defo_mesh *part, defo_index **vert, defo_index *count) {
    defo_boundary bd;
    memset(&bd, 0, sizeof bd);
    const defo_index *tris = part->tris;
    int64_t nt = part->num_tris;
    int stride = part->nodes_per_tri;
    if (nt == 0) {
        defo_status s = defo_mesh_boundary(part, part->nodes_per_elem == 10, &bd);
        if (s < 0) return s;
        tris = bd.faces;
        nt = bd.num_faces;
        stride = bd.nodes_per_face;
    }
    unsigned char *used = calloc((size_t)part->num_nodes + 1, 1);
    *vert = malloc(((size_t)part->num_nodes + 1) * sizeof **vert);
    if (!used || !*vert) {
        free(used);
        free(*vert);
        *vert = NULL;
        defo_boundary_free(&bd);
        return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    }
    for (int64_t t = 0; t < nt * stride; t++) used[tris[t]] = 1;
    *count = 0;
    for (defo_index i = 0; i < part->num_nodes; i++)
        if (used[i]) (*vert)[(*count)++] = i;
    free(used);
    defo_boundary_free(&bd);
    return DEFO_OK;
}

static void file_stem(const char *name, int body, char *out, size_t size) {
    size_t n = 0;
    for (const char *c = name; *c && n + 1 < size; c++) {
        int ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                 *c == '-' || *c == '_' || (*c == '.' && n > 0);
        out[n++] = ok ? *c : '_';
    }
    out[n] = 0;
    if (!n) snprintf(out, size, "body%d", body);
}

/* ------------------------------------------------------------ the .pc2 */
static void pc2_path(const run_cache *c, const cache_body *b, const char *ext, char *out,
                     size_t size) {
    snprintf(out, size, "%s/%s.%s", c->dir, b->name, ext);
}

static defo_status write_header(FILE *f, const cache_body *b, const char *path) {
    unsigned char h[PC2_HEADER];
    memcpy(h, "POINTCACHE2", 12);
    put_le32(h + 12, 1);
    put_le32(h + 16, (uint32_t)b->nverts);
    put_le32(h + 20, float_bits((float)b->start));
    put_le32(h + 24, float_bits(1.0f));
    put_le32(h + 28, (uint32_t)b->samples);
    if (fseek(f, 0, SEEK_SET) != 0 || fwrite(h, 1, sizeof h, f) != sizeof h)
        return run_error(DEFO_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return DEFO_OK;
}

/* The body's surface positions now, as float32, into c->buf. */
static defo_status frame_positions(run_cache *c, const cache_body *b) {
    defo_world *w = defo_simulation_world(c->sim);
    const double *x = defo_body_positions(w, defo_simulation_body(c->sim, b->body));
    if (b->embedded) {
        defo_status s = defo_simulation_embedded_positions(c->sim, b->body, b->emb_x);
        if (s < 0) return s;
        x = b->emb_x;
    }
    for (defo_index i = 0; i < b->nverts; i++)
        for (int d = 0; d < 3; d++)
            c->buf[3 * (size_t)i + (size_t)d] = (float)x[3 * (size_t)b->vert[i] + (size_t)d];
    return DEFO_OK;
}

/* Append this frame to b's .pc2: its vertices after the counted frames,
 * then the count (the header never counts a frame not wholly written). */
static defo_status append_frame(run_cache *c, cache_body *b) {
    char path[2400];
    pc2_path(c, b, "pc2", path, sizeof path);
    defo_status s = frame_positions(c, b);
    if (s < 0) return s;
    const size_t n = 3 * (size_t)b->nverts;
    unsigned char *bytes = (unsigned char *)c->buf; /* in place: 4 bytes a float */
    for (size_t k = 0; k < n; k++) put_le32(bytes + 4 * k, float_bits(c->buf[k]));
    FILE *f = fopen(path, "r+b");
    if (!f) return run_error(DEFO_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    const long off = PC2_HEADER + (long)b->samples * (long)(4 * n);
    int bad = fseek(f, off, SEEK_SET) != 0 || fwrite(bytes, 4, n, f) != n || fflush(f) != 0;
    if (!bad) {
        b->samples++;
        s = write_header(f, b, path);
    }
    bad |= fclose(f) != 0;
    if (bad && !s) s = run_error(DEFO_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return s;
}

/* A new .pc2 holding no frame yet (temporary name, then rename). */
static defo_status create_pc2(run_cache *c, cache_body *b, int start) {
    char path[2400], tmp[2500];
    pc2_path(c, b, "pc2", path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    b->start = start;
    b->samples = 0;
    FILE *f = fopen(tmp, "wb");
    if (!f) return run_error(DEFO_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    defo_status s = write_header(f, b, tmp);
    int bad = fclose(f) != 0;
    if (!s && (bad || rename(tmp, path) != 0))
        s = run_error(DEFO_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    if (s) remove(tmp);
    return s;
}

/* Resume: keep the frames start..frame of an earlier run's .pc2 when it is
 * one of this surface; 1 when kept, 0 when it must be made anew. */
static int keep_pc2(run_cache *c, cache_body *b, int frame) {
    char path[2400];
    pc2_path(c, b, "pc2", path, sizeof path);
    FILE *f = fopen(path, "r+b");
    if (!f) return 0;
    unsigned char h[PC2_HEADER];
    int ok = fread(h, 1, sizeof h, f) == sizeof h && !memcmp(h, "POINTCACHE2", 12) &&
             get_le32(h + 12) == 1 && get_le32(h + 16) == (uint32_t)b->nverts &&
             bits_float(get_le32(h + 24)) == 1.0f;
    if (ok) {
        float st = bits_float(get_le32(h + 20));
        int start = (int)st;
        int samples = (int)get_le32(h + 28);
        ok = (float)start == st && start >= 0 && start <= frame && samples > frame - start;
        if (ok) {
            b->start = start;
            b->samples = frame - start + 1;
            const long end = PC2_HEADER + (long)b->samples * 12L * (long)b->nverts;
            ok = write_header(f, b, path) == DEFO_OK && fflush(f) == 0 &&
                 ftruncate(fileno(f), (off_t)end) == 0;
        }
    }
    fclose(f);
    return ok;
}

/* ------------------------------------------------------------ the .mdd */
/* The .pc2's frames as MDD (big-endian, each frame's time [s]), atomically. */
static defo_status write_mdd(const run_cache *c, const cache_body *b) {
    char pc2[2400], path[2400], tmp[2500];
    pc2_path(c, b, "pc2", pc2, sizeof pc2);
    pc2_path(c, b, "mdd", path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *in = fopen(pc2, "rb");
    if (!in) return run_error(DEFO_ERR_IO, "cannot read %s: %s", pc2, strerror(errno));
    FILE *out = fopen(tmp, "wb");
    if (!out) {
        fclose(in);
        return run_error(DEFO_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    }
    const size_t n = 3 * (size_t)b->nverts;
    unsigned char w[8], *bytes = (unsigned char *)c->buf;
    put_be32(w, (uint32_t)b->samples);
    put_be32(w + 4, (uint32_t)b->nverts);
    int bad = fwrite(w, 1, 8, out) != 8;
    for (int k = 0; k < b->samples && !bad; k++) {
        put_be32(w, float_bits((float)((b->start + k) / c->fps)));
        bad = fwrite(w, 1, 4, out) != 4;
    }
    bad |= fseek(in, PC2_HEADER, SEEK_SET) != 0;
    for (int k = 0; k < b->samples && !bad; k++) {
        bad = fread(bytes, 4, n, in) != n;
        for (size_t j = 0; j < n && !bad; j++) put_be32(bytes + 4 * j, get_le32(bytes + 4 * j));
        bad = bad || fwrite(bytes, 4, n, out) != n;
    }
    fclose(in);
    bad |= fclose(out) != 0;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return run_error(DEFO_ERR_IO, "cannot write %s", path);
    }
    return DEFO_OK;
}

/* ------------------------------------------------------------ the run */
static void note(run_cache *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void note(run_cache *c, const char *fmt, ...) {
    size_t n = strlen(c->notes);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes + n, sizeof c->notes - n, fmt, ap);
    va_end(ap);
}

void run_cache_destroy(run_cache *c) {
    if (!c) return;
    for (int i = 0; i < c->nc; i++) {
        free(c->c[i].vert);
        free(c->c[i].emb_x);
    }
    free(c->c);
    free(c->buf);
    free(c);
}

int run_cache_needs_surface_obj(const defo_simulation *sim) {
    for (int b = 0; b < defo_simulation_num_bodies(sim); b++)
        if (defo_simulation_body_fractures(sim, b)) return 1;
    return 0;
}

defo_status run_cache_create(const char *outdir, const defo_scene *scene, defo_simulation *sim,
                             int resume_frame, run_cache **out) {
    *out = NULL;
    const defo_scene_outputs *o = defo_scene_get_outputs(scene);
    if (!o->pc2 && !o->mdd) return DEFO_OK;
    run_cache *c = calloc(1, sizeof *c);
    const int nb = defo_simulation_num_bodies(sim);
    if (c) c->c = calloc((size_t)nb + 1, sizeof *c->c);
    if (!c || !c->c) {
        run_cache_destroy(c);
        return run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    }
    snprintf(c->dir, sizeof c->dir, "%s/cache", outdir);
    c->sim = sim;
    c->fps = defo_scene_fps(scene);
    c->mdd = o->mdd;
    if (mkdir(c->dir, 0777) != 0 && errno != EEXIST) {
        int e = errno;
        run_cache_destroy(c);
        return run_error(DEFO_ERR_IO, "cannot create output folder %s: %s", c->dir, strerror(e));
    }
    defo_world *w = defo_simulation_world(sim);
    defo_status s = DEFO_OK;
    size_t largest = 0;
    for (int b = 0; b < nb && !s; b++) {
        defo_body_id id = defo_simulation_body(sim, b);
        const char *bname = defo_body_name(w, id);
        if (defo_simulation_body_fractures(sim, b)) {
            note(c,
                 "defo run: outputs.pc2: bodies[%d] '%s' has \"fracture\": its surface gains "
                 "vertices and faces as it splits, and a point cache animates one fixed vertex "
                 "list, so it gets no cache; its surface is in surface/frame_NNNN.obj (object "
                 "'%s'%s), which tools/blender/defo_import.py loads as a frame sequence\n",
                 b, bname, bname,
                 o->surface_obj ? "" : ", written although outputs.surface_obj is false");
            continue;
        }
        cache_body *cb = &c->c[c->nc];
        cb->body = b;
        file_stem(bname, b, cb->name, sizeof cb->name);
        for (int k = 0; k < c->nc; k++)
            if (!strcmp(c->c[k].name, cb->name)) {
                size_t l = strlen(cb->name);
                snprintf(cb->name + l, sizeof cb->name - l, "_%d", b);
                break;
            }
        c->nc++;
        const defo_mesh *sf = defo_simulation_embedded_surface(sim, b);
        defo_mesh vol = volume_view(defo_body_mesh(w, id));
        const defo_mesh *part = sf ? sf : &vol;
        cb->embedded = sf != NULL;
        s = surface_vertices(part, &cb->vert, &cb->nverts);
        if (!s && sf) {
            cb->emb_x = malloc((3 * (size_t)sf->num_nodes + 1) * sizeof(double));
            if (!cb->emb_x) s = run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
        }
        if (!s) { /* the surface at rest, named after the body (one object in Blender) */
            char path[2400];
            pc2_path(c, cb, "obj", path, sizeof path);
            defo_write_options wo = defo_default_write_options();
            const char *names[1] = {bname};
            wo.part_names = names;
            s = defo_mesh_write_parts(path, &part, 1, &wo);
        }
        if ((size_t)cb->nverts > largest) largest = (size_t)cb->nverts;
        if (!s) {
            if (resume_frame < 0 || !keep_pc2(c, cb, resume_frame)) {
                if (resume_frame >= 0)
                    note(c,
                         "defo run: cache/%s.pc2 is missing or not a cache of this run: it "
                         "starts anew at frame %d (its start frame)\n",
                         cb->name, resume_frame + 1);
                s = create_pc2(c, cb, resume_frame < 0 ? 0 : resume_frame + 1);
            }
        }
    }
    if (!s) {
        c->buf = malloc((3 * largest + 1) * sizeof *c->buf);
        if (!c->buf) s = run_error(DEFO_ERR_OUT_OF_MEMORY, "out of memory");
    }
    if (s) {
        run_cache_destroy(c);
        return s;
    }
    *out = c;
    return DEFO_OK;
}

const char *run_cache_notes(const run_cache *c) {
    return c ? c->notes : "";
}

defo_status run_cache_frame(run_cache *c, int frame) {
    if (!c) return DEFO_OK;
    for (int i = 0; i < c->nc; i++) {
        cache_body *b = &c->c[i];
        if (frame != b->start + b->samples)
            return run_error(DEFO_ERR_INTERNAL, "cache/%s.pc2: frame %d after frames %d..%d",
                             b->name, frame, b->start, b->start + b->samples - 1);
        defo_status s = append_frame(c, b);
        if (s < 0) return s;
    }
    return DEFO_OK;
}

defo_status run_cache_finish(run_cache *c) {
    if (!c || !c->mdd) return DEFO_OK;
    for (int i = 0; i < c->nc; i++) {
        defo_status s = write_mdd(c, &c->c[i]);
        if (s < 0) return s;
    }
    return DEFO_OK;
}

int run_cache_count(const run_cache *c) {
    return c ? c->nc : 0;
}

const char *run_cache_name(const run_cache *c, int i, int *body) {
    if (!c || i < 0 || i >= c->nc) return NULL;
    if (body) *body = c->c[i].body;
    return c->c[i].name;
}
