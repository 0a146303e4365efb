/*
 * world/checkpoint.c — the world's state in one versioned binary
 * (defo/world.h): checkpoints on disk and the frame-start snapshot that a
 * failed or interrupted frame returns to.
 *
 * Layout (version 6; native little-endian, as written by this machine):
 *   "DEFOWRLD" | u32 version | u32 bodies | u64 tag | i32 frame | i32 0 |
 *   f64 time | per body:
 *     i32 n | i32 elements | u32 nodes per element | u32 flags
 *       (1 plasticity, 2 fracture, 4 annealed) | u32 generation | u32 removed |
 *     i32 origin (−1: the caller's body; else the body it broke off) | u32 0 |
 *     char name[64] |
 *     origin ≥ 0: i32 nodes | i32 elements | f64 rest x[3·nodes] |
 *       i32 connectivity[npe · elements] (its mesh when it was made) | zeros
 *       to a multiple of 8 |
 *     material (96 bytes) | i32 material regions | i32 0 | their materials
 *       (96 bytes each) |
 *     f64 x[3n] | f64 v[3n] | f64 dead loads[3n] | i32 prescribed set[n] |
 *       zeros to a multiple of 8 |
 *     fracture: u64 state bytes | the fracture state (defo_fracture_save_state:
 *               node and element origins, cracks) | zeros to a multiple of 8 |
 *               i32 connectivity[npe · elements] | zeros to a multiple of 8 |
 *               u8 held[n] (pieces held under equilibrium integrators) | zeros
 *               to a multiple of 8 |
 *     annealed: f64 rest positions[3n] | f64 motion frame[3n] |
 *               f64 density scale[elements] | f64 fibre directions[3 · points]
 *               (bodies with fibres: annealing turns them) |
 *     plasticity: u64 bytes | defo_plasticity_write_state's bytes | zeros to
 *               a multiple of 8 |
 *     u64 rotation bytes | the force model's kept rotations (MTPS08 §4.4
 *       lazy updates; 0 bytes without) |
 *     u64 history bytes | the integrator's history | zeros to a multiple of 8 |
 *   u64 FNV-1a 64 of every byte before it.
 * Everything that carries from one frame to the next is here: the state,
 * the topology of fracturing bodies (an added node's rest position follows
 * from the nodes it was made of; an added element's per-element data —
 * material region, fibres, plastic state — is its parent's), the rest
 * shape of annealed bodies, the plastic state and parameters, the cracks,
 * lazily kept rotations, the integrators' history (BDF2's previous state,
 * the quasistatic equilibria, the rigid contact solve's warm impulses in
 * their own versioned section, integrator/rigid.c).  Restore
 * checks the whole file before it changes anything.
 */
#include "world/world_internal.h"

#include <stdio.h>
#include <string.h>

#define WORLD_MAGIC   "DEFOWRLD"
#define WORLD_VERSION 6u
#define FNV_BASIS     14695981039346656037ull

static uint64_t fnv1a(uint64_t h, const void *data, size_t size) {
    const unsigned char *p = data;
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

void defo_world_buf_put(world_buf *b, const void *src, size_t n) {
    if (b->oom || !n) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        unsigned char *q = defo_realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void pad8(world_buf *b) {
    static const unsigned char zero[8] = {0};
    defo_world_buf_put(b, zero, (8 - b->n % 8) % 8);
}

/* The body's material as 2 int32 + 11 doubles (96 bytes; version 6 added
 * the thickness: a shell's, or a shell region's, edited at run time):
 * material changes are part of the state a frame depends on. */
#define MATERIAL_BYTES 96
static void pack_material(const defo_material_def *m, unsigned char *o) {
    const int32_t model = (int32_t)m->model, mode = (int32_t)m->inversion.mode;
    const double d[11] = {m->youngs_modulus,
                          m->poisson,
                          m->density,
                          m->inversion.threshold,
                          m->biphasic.compression_threshold,
                          m->biphasic.elongation_threshold,
                          m->biphasic.rest_slope,
                          m->biphasic.compression_slope,
                          m->biphasic.elongation_slope,
                          m->damping_time,
                          m->thickness};
    memcpy(o, &model, 4);
    memcpy(o + 4, &mode, 4);
    memcpy(o + 8, d, sizeof d);
}
static void unpack_material(const unsigned char *in, defo_material_def *m) {
    int32_t model, mode;
    double d[11];
    memcpy(&model, in, 4);
    memcpy(&mode, in + 4, 4);
    memcpy(d, in + 8, sizeof d);
    m->model = (defo_material_model)model;
    m->inversion.mode = (defo_inversion_mode)mode;
    m->youngs_modulus = d[0], m->poisson = d[1], m->density = d[2];
    m->inversion.threshold = d[3];
    m->biphasic.compression_threshold = d[4], m->biphasic.elongation_threshold = d[5];
    m->biphasic.rest_slope = d[6], m->biphasic.compression_slope = d[7];
    m->biphasic.elongation_slope = d[8];
    m->damping_time = d[9];
    m->thickness = d[10];
}

_Static_assert(sizeof(int) == sizeof(int32_t), "set_of is written as int32");

/* checksum: 0 for the in-memory snapshot of the frame start (it cannot be
 * damaged; the sum would cost a pass over every byte each frame) */
static defo_status serialize(const defo_world *w, uint64_t tag, world_buf *b, int checksum) {
    b->n = 0;
    b->oom = 0;
    const uint32_t version = WORLD_VERSION, nb = (uint32_t)w->num_bodies;
    const int32_t frame = w->frame, zero = 0;
    defo_world_buf_put(b, WORLD_MAGIC, 8);
    defo_world_buf_put(b, &version, 4);
    defo_world_buf_put(b, &nb, 4);
    defo_world_buf_put(b, &tag, 8);
    defo_world_buf_put(b, &frame, 4);
    defo_world_buf_put(b, &zero, 4);
    defo_world_buf_put(b, &w->time, 8);
    for (int i = 0; i < w->num_bodies; i++) {
        const world_body *bd = &w->bodies[i];
        const int32_t n = bd->n, ne = bd->mesh->num_elems;
        const uint32_t npe = (uint32_t)bd->mesh->nodes_per_elem,
                       flags = (bd->plast ? 1u : 0u) | (bd->frac ? 2u : 0u) |
                               (bd->density_scale ? 4u : 0u);
        defo_world_buf_put(b, &n, 4);
        defo_world_buf_put(b, &ne, 4);
        defo_world_buf_put(b, &npe, 4);
        defo_world_buf_put(b, &flags, 4);
        /* the slot: its generation, whether removed, where it came from */
        const uint32_t gen = bd->generation, removed = (uint32_t)bd->removed;
        const int32_t origin = bd->origin, pad = 0;
        defo_world_buf_put(b, &gen, 4);
        defo_world_buf_put(b, &removed, 4);
        defo_world_buf_put(b, &origin, 4);
        defo_world_buf_put(b, &pad, 4);
        char name[DEFO_NAME_MAX];
        memset(name, 0, sizeof name);
        snprintf(name, sizeof name, "%s", bd->name);
        defo_world_buf_put(b, name, sizeof name);
        if (bd->origin >= 0) { /* a piece the world made: its mesh then */
            const defo_mesh *om = bd->origin_mesh;
            const int32_t n0 = om->num_nodes, ne0 = om->num_elems;
            defo_world_buf_put(b, &n0, 4);
            defo_world_buf_put(b, &ne0, 4);
            defo_world_buf_put(b, om->x, 3 * (size_t)n0 * sizeof(double));
            defo_world_buf_put(b, om->elems, (size_t)npe * (size_t)ne0 * sizeof(defo_index));
            pad8(b);
        }
        unsigned char mat[MATERIAL_BYTES];
        pack_material(&bd->mat_def, mat);
        defo_world_buf_put(b, mat, MATERIAL_BYTES);
        const int32_t nreg[2] = {bd->num_regions, 0};
        defo_world_buf_put(b, nreg, sizeof nreg);
        for (int k = 0; k < bd->num_regions; k++) {
            pack_material(&bd->regions[k].mat_def, mat);
            defo_world_buf_put(b, mat, MATERIAL_BYTES);
        }
        defo_world_buf_put(b, bd->x, 3 * (size_t)n * sizeof(double));
        defo_world_buf_put(b, bd->v, 3 * (size_t)n * sizeof(double));
        /* the dead loads: fracture splits share them between copies */
        defo_world_buf_put(b, bd->dead, 3 * (size_t)n * sizeof(double));
        /* the prescribed set of each node (released sets, split copies) */
        defo_world_buf_put(b, bd->set_of, (size_t)n * sizeof(int32_t));
        pad8(b);
        if (bd->frac) {
            const uint64_t fb = defo_fracture_state_bytes(bd->frac);
            defo_world_buf_put(b, &fb, 8);
            const size_t at = b->n;
            unsigned char tmp[8] = {0};
            for (uint64_t k = 0; k < fb && !b->oom; k += 8)
                defo_world_buf_put(b, tmp, fb - k < 8 ? (size_t)(fb - k) : 8);
            if (!b->oom) defo_fracture_save_state(bd->frac, b->p + at);
            pad8(b);
            defo_world_buf_put(b, bd->mesh->elems, (size_t)npe * (size_t)ne * sizeof(defo_index));
            pad8(b);
            defo_world_buf_put(b, bd->held, (size_t)n);
            pad8(b);
        }
        if (bd->density_scale) {
            defo_world_buf_put(b, bd->mesh->x, 3 * (size_t)n * sizeof(double));
            defo_world_buf_put(b, bd->X0, 3 * (size_t)n * sizeof(double));
            defo_world_buf_put(b, bd->density_scale, (size_t)ne * sizeof(double));
            if (bd->fibres)
                defo_world_buf_put(b, bd->fibres,
                                   3 * (size_t)ne * (size_t)defo_force_model_points(bd->force) *
                                       sizeof(double));
        }
        if (bd->plast) {
            const uint64_t pb = (uint64_t)defo_plasticity_state_bytes(bd->plast);
            defo_world_buf_put(b, &pb, 8);
            if (pb && !b->oom) {
                const size_t at = b->n;
                unsigned char tmp[8] = {0};
                for (uint64_t k = 0; k < pb && !b->oom; k += 8)
                    defo_world_buf_put(b, tmp, pb - k < 8 ? (size_t)(pb - k) : 8);
                if (!b->oom) defo_plasticity_write_state(bd->plast, b->p + at);
            }
            pad8(b);
        }
        const uint64_t rb = defo_force_model_history_bytes(bd->force);
        defo_world_buf_put(b, &rb, 8);
        if (rb && !b->oom) {
            const size_t at = b->n;
            unsigned char tmp[8] = {0};
            for (uint64_t k = 0; k < rb && !b->oom; k += 8) defo_world_buf_put(b, tmp, 8);
            if (!b->oom) defo_force_model_save_history(bd->force, b->p + at);
        }
        const world_integrator *wi = &w->integrators[bd->integrator];
        const uint64_t hb = wi->ops->history_bytes(wi->stepper, &bd->sb);
        defo_world_buf_put(b, &hb, 8);
        if (hb && !b->oom) {
            const size_t at = b->n;
            defo_world_buf_put(b, NULL, 0);
            /* reserve, then let the stepper write in place */
            unsigned char tmp[8] = {0};
            for (uint64_t k = 0; k < hb && !b->oom; k += 8)
                defo_world_buf_put(b, tmp, hb - k < 8 ? (size_t)(hb - k) : 8);
            if (!b->oom) wi->ops->save_history(wi->stepper, &bd->sb, b->p + at);
        }
        pad8(b);
    }
    const uint64_t sum = checksum ? fnv1a(FNV_BASIS, b->p, b->n) : 0;
    defo_world_buf_put(b, &sum, 8);
    if (b->oom) return defo_error_oom("world state", b->n);
    return DEFO_OK;
}

/* A reader over a checked buffer. */
typedef struct rd {
    const unsigned char *p;
    size_t n, at;
    int bad;
} rd;

static const unsigned char *take(rd *r, size_t n) {
    if (r->bad || n > r->n - r->at) {
        r->bad = 1;
        return NULL;
    }
    const unsigned char *q = r->p + r->at;
    r->at += n;
    return q;
}
static void skip_pad(rd *r) {
    take(r, (8 - r->at % 8) % 8);
}

/* Check (apply = 0) or apply (1) a serialised state. */
static defo_status restore(defo_world *w, uint64_t tag, const unsigned char *buf, size_t size,
                           const char *what, int apply, int checksum) {
    if (size < 48)
        return defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint (%zu bytes)", what, size);
    if (memcmp(buf, WORLD_MAGIC, 8) != 0) {
        if (memcmp(buf, "DEFOCKPT", 8) == 0)
            return defo_error(DEFO_ERR_PARSE,
                              "%s: a checkpoint of an older defo (before the one-world format); "
                              "run the scene again from the start",
                              what);
        return defo_error(DEFO_ERR_PARSE, "%s: not a defo checkpoint", what);
    }
    uint64_t sum;
    memcpy(&sum, buf + size - 8, 8);
    if (checksum && fnv1a(FNV_BASIS, buf, size - 8) != sum)
        return defo_error(DEFO_ERR_PARSE, "%s: checksum mismatch (damaged checkpoint)", what);
    rd r = {buf, size - 8, 8, 0};
    uint32_t version, nb;
    uint64_t t64;
    int32_t frame;
    double time;
    memcpy(&version, take(&r, 4), 4);
    memcpy(&nb, take(&r, 4), 4);
    memcpy(&t64, take(&r, 8), 8);
    memcpy(&frame, take(&r, 4), 4);
    take(&r, 4);
    memcpy(&time, take(&r, 8), 8);
    if (version != WORLD_VERSION)
        return defo_error(DEFO_ERR_PARSE,
                          "%s: checkpoint version %u, this defo reads version %u only; run the "
                          "scene again from the start",
                          what, version, WORLD_VERSION);
    /* bodies the world made (pieces, origin ≥ 0) come and go with the
     * checkpoint; the caller's must all be there */
    int own = 0;
    for (int i = 0; i < w->num_bodies; i++) own += w->bodies[i].origin < 0;
    if (t64 != tag || nb < (uint32_t)own || nb > (uint32_t)DEFO_INDEX_MAX)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "%s: the checkpoint was written by a different scene (tag %016llx, this "
                          "one %016llx; %u bodies, this one %d)",
                          what, (unsigned long long)t64, (unsigned long long)tag, nb, own);
    for (int i = (int)nb; i < w->num_bodies; i++)
        if (w->bodies[i].origin < 0)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "%s: body %d ('%s') is not in the checkpoint", what, i,
                              w->bodies[i].name);
    if (!isfinite(time) || frame < 0)
        return defo_error(DEFO_ERR_PARSE, "%s: bad time or frame", what);
    /* apply: slots past the checkpoint's go (pieces made after it) */
    if (apply)
        while (w->num_bodies > (int)nb) defo_world_body_free(w, &w->bodies[--w->num_bodies]);
    int remake = -1; /* from this slot on, the world's pieces are made again */
    for (int i = 0; i < (int)nb; i++) {
        int32_t n, ne;
        uint32_t npe, flags, gen, removed;
        int32_t origin;
        const unsigned char *h = take(&r, 32);
        if (!h) break;
        memcpy(&n, h, 4), memcpy(&ne, h + 4, 4), memcpy(&npe, h + 8, 4), memcpy(&flags, h + 12, 4);
        memcpy(&gen, h + 16, 4), memcpy(&removed, h + 20, 4), memcpy(&origin, h + 24, 4);
        const unsigned char *nm = take(&r, DEFO_NAME_MAX);
        if ((npe != 3 && npe != 4 && npe != 10) || n < 0 || ne < 0 || gen == 0 || removed > 1 ||
            origin < -1 || origin >= i || (nm && nm[DEFO_NAME_MAX - 1] != 0))
            return defo_error(DEFO_ERR_PARSE, "%s: body %d: bad header", what, i);
        /* a piece: its mesh when it was made */
        int32_t n0 = 0, ne0 = 0;
        const unsigned char *X0 = NULL, *E0 = NULL;
        if (origin >= 0) {
            const unsigned char *g = take(&r, 8);
            if (g) memcpy(&n0, g, 4), memcpy(&ne0, g + 4, 4);
            if (n0 <= 0 || ne0 <= 0 || n0 > n || ne0 > ne)
                return defo_error(DEFO_ERR_PARSE, "%s: body %d: bad piece", what, i);
            X0 = take(&r, 3 * (size_t)n0 * sizeof(double));
            E0 = take(&r, (size_t)npe * (size_t)ne0 * sizeof(defo_index));
            skip_pad(&r);
            for (size_t q = 0; E0 && q < (size_t)npe * (size_t)ne0; q++) {
                int32_t v;
                memcpy(&v, E0 + 4 * q, 4);
                if (v < 0 || v >= n0)
                    return defo_error(DEFO_ERR_PARSE, "%s: body %d: bad piece", what, i);
            }
            for (size_t q = 0; X0 && q < 3 * (size_t)n0; q++) {
                double v;
                memcpy(&v, X0 + 8 * q, 8);
                if (!isfinite(v))
                    return defo_error(DEFO_ERR_PARSE, "%s: body %d: bad piece", what, i);
            }
        }
        if (r.bad) break;
        /* the world's slot: kept, or (a piece) made from the checkpoint */
        world_body *bd = i < w->num_bodies ? &w->bodies[i] : NULL;
        if (origin < 0 && remake >= 0)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "%s: body %d: a body of the caller's after pieces the world made "
                              "differently",
                              what, i);
        if (origin < 0 && (!bd || bd->origin >= 0))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "%s: body %d is the scene's in the checkpoint, a piece here", what,
                              i);
        if (origin >= 0 && bd &&
            (remake >= 0 || bd->origin != origin || !bd->origin_mesh ||
             bd->origin_mesh->num_nodes != n0 || bd->origin_mesh->num_elems != ne0 ||
             memcmp(bd->origin_mesh->x, X0, 3 * (size_t)n0 * sizeof(double)) != 0 ||
             memcmp(bd->origin_mesh->elems, E0, (size_t)npe * (size_t)ne0 * sizeof(defo_index))))
            bd = NULL;
        if (!bd && remake < 0) remake = i;
        if (!bd && !apply) {
            /* to be made: its blocks are read, checked as the pieces are
             * made (apply) */
            const unsigned char *nrg = take(&r, MATERIAL_BYTES + 8);
            int32_t nr = 0;
            if (nrg) memcpy(&nr, nrg + MATERIAL_BYTES, 4);
            if (nr < 0 || nr > 1 << 20)
                return defo_error(DEFO_ERR_PARSE, "%s: body %d: bad region count", what, i);
            if (!take(&r, (size_t)nr * MATERIAL_BYTES + 9 * (size_t)n * sizeof(double)) ||
                !take(&r, (size_t)n * sizeof(int32_t)))
                break;
            skip_pad(&r);
            uint64_t len = 0;
            if (flags & 2u) {
                const unsigned char *g = take(&r, 8);
                if (g) memcpy(&len, g, 8);
                take(&r, (size_t)len);
                skip_pad(&r);
                take(&r, (size_t)npe * (size_t)ne * sizeof(defo_index));
                skip_pad(&r);
                take(&r, (size_t)n);
                skip_pad(&r);
            }
            if (flags & 4u) /* pieces carry no fibres */
                take(&r, (6 * (size_t)n + (size_t)ne) * sizeof(double));
            if (flags & 1u) {
                const unsigned char *g = take(&r, 8);
                if (g) memcpy(&len, g, 8);
                take(&r, (size_t)len);
                skip_pad(&r);
            }
            for (int blk = 0; blk < 2; blk++) { /* kept rotations, the integrator's history */
                const unsigned char *g = take(&r, 8);
                if (g) memcpy(&len, g, 8);
                take(&r, (size_t)len);
            }
            skip_pad(&r);
            continue;
        }
        if (!bd) {
            /* apply: make the piece again, as the world made it */
            while (w->num_bodies > i) defo_world_body_free(w, &w->bodies[--w->num_bodies]);
            const world_body *ob = &w->bodies[origin];
            defo_mesh *pm = NULL;
            defo_status ms = defo_mesh_create(npe == 10 ? 2 : 1, &pm);
            for (int32_t k = 0; k < n0 && !ms; k++) {
                double X[3];
                memcpy(X, X0 + 24 * (size_t)k, 24);
                ms = defo_mesh_add_node(pm, X[0], X[1], X[2], NULL);
            }
            for (int32_t e = 0; e < ne0 && !ms; e++) {
                defo_index ev[DEFO_ELEMENT_MAX_NODES];
                memcpy(ev, E0 + (size_t)npe * 4 * (size_t)e, (size_t)npe * 4);
                ms = defo_mesh_add_elem(pm, ev, 0);
            }
            defo_body_def def = defo_default_body_def();
            def.mesh = pm;
            def.material = ob->mat_def;
            def.force = ob->force_def;
            def.integrator = ob->integrator;
            char name[DEFO_NAME_MAX];
            memcpy(name, nm, DEFO_NAME_MAX);
            def.name = name;
            const defo_plasticity_def pd =
                ob->plast ? *defo_plasticity_get_def(ob->plast, 0) : defo_default_plasticity_def();
            const defo_fracture_def fd = ob->frac_def;
            def.plasticity = ob->plast ? &pd : NULL;
            def.fracture = ob->frac ? &fd : NULL;
            defo_body_id id;
            if (!ms) ms = defo_world_add_body_state(w, &def, NULL, NULL, &id);
            if (!ms) {
                bd = &w->bodies[i];
                bd->origin = origin;
                bd->origin_mesh = pm;
                pm = NULL;
            }
            defo_mesh_destroy(pm);
            if (ms) return defo_error_prefix("%s: body %d: making it again", what, i);
        }
        /* plasticity and annealing may have come at run time: the
         * checkpoint's say */
        const uint32_t want_flags = bd->frac ? 2u : 0u;
        if ((bd->frac ? ne < bd->ne0 : ne != bd->mesh->num_elems) ||
            npe != (uint32_t)bd->mesh->nodes_per_elem || (flags & ~5u) != want_flags ||
            (bd->frac ? n < bd->n0 : n != bd->n))
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "%s: body %d ('%s') has %d nodes and %d elements in the checkpoint, "
                              "%ld and %ld here",
                              what, i, bd->name, (int)n, (int)ne, (long)bd->n,
                              (long)bd->mesh->num_elems);
        const unsigned char *mat = take(&r, MATERIAL_BYTES);
        defo_material_def md = bd->mat_def;
        if (mat) {
            unpack_material(mat, &md);
            if (defo_material_def_validate(&md))
                return defo_error(DEFO_ERR_PARSE, "%s: body %d: bad material (%s)", what, i,
                                  defo_last_error());
        }
        const unsigned char *nreg = take(&r, 8);
        int32_t regions = 0;
        if (nreg) memcpy(&regions, nreg, 4);
        if (nreg && regions != bd->num_regions)
            return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                              "%s: body %d ('%s') has %d material regions in the checkpoint, %d "
                              "here",
                              what, i, bd->name, (int)regions, bd->num_regions);
        const unsigned char *rmat = take(&r, (size_t)bd->num_regions * MATERIAL_BYTES);
        for (int k = 0; rmat && k < bd->num_regions; k++) {
            defo_material_def rdef = bd->regions[k].mat_def; /* fields the record leaves out */
            unpack_material(rmat + (size_t)k * MATERIAL_BYTES, &rdef);
            if (defo_material_def_validate(&rdef))
                return defo_error(DEFO_ERR_PARSE, "%s: body %d: bad material of region %d (%s)",
                                  what, i, k, defo_last_error());
        }
        const unsigned char *xv = take(&r, 9 * (size_t)n * sizeof(double));
        const unsigned char *so = take(&r, (size_t)n * sizeof(int32_t));
        skip_pad(&r);
        for (int32_t k = 0; so && k < n; k++) {
            int32_t v;
            memcpy(&v, so + 4 * (size_t)k, 4);
            if (v < -1 || v >= bd->num_sets)
                return defo_error(DEFO_ERR_PARSE, "%s: body %d: node %d in set %d of %d", what, i,
                                  (int)k, (int)v, bd->num_sets);
        }
        const unsigned char *fr = NULL, *fst = NULL, *pl = NULL, *hd = NULL;
        uint64_t fb = 0, values = 0, hb = 0;
        if (bd->frac) {
            const unsigned char *g = take(&r, 8);
            if (g) memcpy(&fb, g, 8);
            fst = take(&r, (size_t)fb);
            skip_pad(&r);
            fr = take(&r, (size_t)npe * (size_t)ne * sizeof(defo_index));
            skip_pad(&r);
            hd = take(&r, (size_t)n);
            skip_pad(&r);
            for (int32_t k = 0; hd && k < n; k++)
                if (hd[k] > 1)
                    return defo_error(DEFO_ERR_PARSE, "%s: body %d: node %d held flag %d", what, i,
                                      (int)k, (int)hd[k]);
            defo_index fn = 0, fne = 0;
            if (fst && defo_fracture_check_state(bd->frac, fst, (size_t)fb, &fn, &fne))
                return defo_error_prefix("%s: body %d", what, i);
            if (fst && (fn != n || fne != ne))
                return defo_error(DEFO_ERR_PARSE,
                                  "%s: body %d: fracture state of %ld nodes, %ld "
                                  "elements in a body of %d, %d",
                                  what, i, (long)fn, (long)fne, (int)n, (int)ne);
            for (size_t q = 0; fr && q < (size_t)npe * (size_t)ne; q++) {
                int32_t v;
                memcpy(&v, fr + 4 * q, 4);
                if (v < 0 || v >= n)
                    return defo_error(DEFO_ERR_PARSE, "%s: body %d: element %zu has node %d of %d",
                                      what, i, q / npe, (int)v, (int)n);
            }
        }
        const unsigned char *an = NULL;
        const size_t nfib =
            bd->fibres ? 3 * (size_t)ne * (size_t)defo_force_model_points(bd->force) : 0;
        if (flags & 4u) {
            an = take(&r, (6 * (size_t)n + (size_t)ne + nfib) * sizeof(double));
            for (size_t k = 0; an && k < 6 * (size_t)n + (size_t)ne + nfib; k++) {
                double v;
                memcpy(&v, an + 8 * k, 8);
                const int dens = k >= 6 * (size_t)n && k < 6 * (size_t)n + (size_t)ne;
                if (!isfinite(v) || (dens && !(v > 0)))
                    return defo_error(DEFO_ERR_PARSE, "%s: body %d: bad rest shape", what, i);
            }
        }
        if (flags & 1u) {
            const unsigned char *g = take(&r, 8);
            if (g) memcpy(&values, g, 8);
            pl = take(&r, (size_t)values);
            skip_pad(&r);
            if (pl) {
                /* checked on a scratch copy: nothing changes before the apply pass */
                defo_plasticity *tmp = NULL;
                defo_status ps =
                    defo_plasticity_create(NULL, ne, defo_force_model_points(bd->force), &tmp);
                if (!ps) ps = defo_plasticity_read_state(tmp, pl, (size_t)values);
                defo_plasticity_destroy(tmp);
                if (ps)
                    return defo_error(DEFO_ERR_PARSE, "%s: body %d: %s", what, i,
                                      defo_last_error());
            }
        }
        uint64_t rb = 0;
        const unsigned char *g = take(&r, 8);
        if (g) memcpy(&rb, g, 8);
        if (!r.bad && rb != (uint64_t)defo_force_model_history_bytes(bd->force))
            return defo_error(DEFO_ERR_PARSE, "%s: body %d: rotation record size", what, i);
        const unsigned char *rot = take(&r, (size_t)rb);
        g = take(&r, 8);
        if (g) memcpy(&hb, g, 8);
        const unsigned char *hist = take(&r, (size_t)hb);
        skip_pad(&r);
        if (r.bad) break;
        if (!apply) continue;
        /* apply body i (a held impact shape is the last frame's: gone) */
        defo_status s = DEFO_OK;
        bd->generation = gen;
        bd->removed = (int)removed;
        bd->impact_n = 0;
        if (bd->frac) {
            defo_mesh *m = bd->mesh;
            const defo_index old_n = bd->n, old_ne = m->num_elems;
            s = defo_fracture_restore_state(bd->frac, m, bd->n0, fst, (size_t)fb);
            if (!s) {
                memcpy(m->elems, fr, (size_t)npe * (size_t)ne * sizeof(defo_index));
                const defo_index *org = defo_fracture_elem_origin(bd->frac);
                for (defo_index e = bd->ne0; m->elem_tag && e < ne; e++)
                    m->elem_tag[e] = m->elem_tag[org[e]];
                s = defo_world_body_resize(w, bd, n);
            }
            if (!s) {
                const defo_index *pa;
                defo_fracture_node_origin(bd->frac, &pa, NULL, NULL);
                for (defo_index k = 0; k < n; k++) bd->parent[k] = pa[k];
                s = defo_world_elements_follow(bd, old_ne, NULL);
            }
            for (int k = 0; k < bd->num_tractions && !s; k++)
                s = defo_world_traction_remap(bd, &bd->tractions[k]);
            if (!s) s = defo_world_body_rebuild(w, bd, old_n < n ? old_n : n);
        }
        int rebuild = 0;
        if (!s && !defo_world_material_equal(&md, &bd->mat_def)) {
            bd->mat_def = md;
            rebuild = 1;
        }
        for (int k = 0; !s && k < bd->num_regions; k++) {
            defo_material_def rdef = bd->regions[k].mat_def; /* fields the record leaves out */
            unpack_material(rmat + (size_t)k * MATERIAL_BYTES, &rdef);
            if (!defo_world_material_equal(&rdef, &bd->regions[k].mat_def)) {
                bd->regions[k].mat_def = rdef;
                rebuild = 1;
            }
        }
        if (!s && an) { /* the annealed rest shape */
            if (!bd->density_scale)
                bd->density_scale = defo_malloc((size_t)ne * sizeof(double) + 1);
            if (!bd->X0) bd->X0 = defo_malloc(3 * (size_t)bd->cap * sizeof(double) + 1);
            if (nfib && !bd->fibres0) { /* the first rest shape's, before the record's */
                bd->fibres0 = defo_malloc(nfib * sizeof(double) + 1);
                if (bd->fibres0) memcpy(bd->fibres0, bd->fibres, nfib * sizeof(double));
            }
            if (!bd->density_scale || !bd->X0 || (nfib && !bd->fibres0))
                return defo_error_oom("checkpoint", 3 * (size_t)n * 8);
            memcpy(bd->mesh->x, an, 3 * (size_t)n * sizeof(double));
            memcpy(bd->X0, an + 3 * (size_t)n * sizeof(double), 3 * (size_t)n * sizeof(double));
            memcpy(bd->density_scale, an + 6 * (size_t)n * sizeof(double),
                   (size_t)ne * sizeof(double));
            if (nfib)
                memcpy(bd->fibres, an + (6 * (size_t)n + (size_t)ne) * sizeof(double),
                       nfib * sizeof(double));
            rebuild = 1;
        } else if (!s && bd->density_scale) { /* back to the first rest shape */
            memcpy(bd->mesh->x, bd->X0, 3 * (size_t)n * sizeof(double));
            if (bd->fibres0) memcpy(bd->fibres, bd->fibres0, nfib * sizeof(double));
            defo_free(bd->density_scale);
            defo_free(bd->X0);
            defo_free(bd->fibres0);
            bd->density_scale = bd->X0 = bd->fibres0 = NULL;
            rebuild = 1;
        }
        if (!s && pl && !bd->plast) {
            s = defo_plasticity_create(NULL, ne, defo_force_model_points(bd->force), &bd->plast);
        } else if (!s && !pl && bd->plast) {
            defo_plasticity_destroy(bd->plast);
            bd->plast = NULL;
            s = defo_force_model_set_plastic(bd->force, NULL);
        }
        if (!s && pl) s = defo_plasticity_read_state(bd->plast, pl, (size_t)values);
        if (!s) defo_world_region_sets(bd); /* the regions' sets are the state's */
        if (!s && (rebuild || an))
            s = defo_world_body_rebuild(w, bd, -1);
        else if (!s && bd->plast)
            s = defo_plasticity_bind(bd->plast, bd->force);
        if (!s && an) bd->mean_edge = defo_mesh_mean_edge(bd->mesh);
        if (s) return defo_error_prefix("%s: body %d", what, i);
        memcpy(bd->x, xv, 3 * (size_t)n * sizeof(double));
        memcpy(bd->v, xv + 3 * (size_t)n * sizeof(double), 3 * (size_t)n * sizeof(double));
        memcpy(bd->dead, xv + 6 * (size_t)n * sizeof(double), 3 * (size_t)n * sizeof(double));
        for (int32_t k = 0; k < n; k++) {
            int32_t v;
            memcpy(&v, so + 4 * (size_t)k, 4);
            bd->set_of[k] = v;
            bd->prescribed[k] = v >= 0;
        }
        s = defo_force_model_restore_history(bd->force, rot, (size_t)rb);
        if (s) return defo_error_prefix("%s: body %d", what, i);
        if (hd) memcpy(bd->held, hd, (size_t)n);
        world_integrator *wi = &w->integrators[bd->integrator];
        s = wi->ops->restore_history(wi->stepper, &bd->sb, hist, (size_t)hb);
        if (s) return defo_error_prefix("%s: body %d", what, i);
        /* the state is the checkpoint's; what steppers carry comes back from
         * the history they just restored (restore_history resets the rest) */
        bd->sb.changed = 0;
    }
    if (r.bad || r.at != r.n)
        return defo_error(DEFO_ERR_PARSE, "%s: %s checkpoint", what,
                          r.bad ? "truncated" : "oversized");
    if (apply) {
        w->time = time;
        w->frame = frame;
    }
    return DEFO_OK;
}

defo_status defo_world_serialize(const defo_world *w, uint64_t tag, void **data, size_t *size) {
    if (!w || !data || !size)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_serialize: NULL");
    world_buf b = {NULL, 0, 0, 0};
    defo_status s = serialize(w, tag, &b, 1);
    if (s) {
        defo_free(b.p);
        return s;
    }
    *data = b.p;
    *size = b.n;
    return DEFO_OK;
}

defo_status defo_world_deserialize(defo_world *w, uint64_t tag, const void *data, size_t size) {
    if (!w || !data) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_deserialize: NULL");
    defo_status s = restore(w, tag, data, size, "state", 0, 1);
    if (!s) s = restore(w, tag, data, size, "state", 1, 1);
    return s;
}

defo_status defo_world_save(const defo_world *w, uint64_t tag, const char *path) {
    if (!w || !path) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_save: NULL");
    world_buf b = {NULL, 0, 0, 0};
    defo_status s = serialize(w, tag, &b, 1);
    if (s) {
        defo_free(b.p);
        return s;
    }
    char tmp[4096 + 16];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        defo_free(b.p);
        return defo_error(DEFO_ERR_IO, "%s: cannot create the checkpoint", tmp);
    }
    int err = fwrite(b.p, 1, b.n, f) != b.n;
    defo_free(b.p);
    if (fclose(f) != 0) err = 1;
    if (err || rename(tmp, path) != 0) {
        remove(tmp);
        return defo_error(DEFO_ERR_IO, "%s: cannot write the checkpoint", path);
    }
    return DEFO_OK;
}

defo_status defo_world_load(defo_world *w, uint64_t tag, const char *path) {
    if (!w || !path) return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_world_load: NULL");
    FILE *f = fopen(path, "rb");
    if (!f) return defo_error(DEFO_ERR_IO, "%s: no checkpoint to resume from", path);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (size < 48) {
        fclose(f);
        return defo_error(DEFO_ERR_PARSE, "%s: truncated checkpoint (%ld bytes)", path, size);
    }
    unsigned char *buf = defo_malloc((size_t)size);
    if (!buf) {
        fclose(f);
        return defo_error_oom("checkpoint", (size_t)size);
    }
    size_t got = fread(buf, 1, (size_t)size, f);
    fclose(f);
    defo_status s = got != (size_t)size ? defo_error(DEFO_ERR_IO, "%s: read error", path)
                                        : restore(w, tag, buf, (size_t)size, path, 0, 1);
    if (!s) s = restore(w, tag, buf, (size_t)size, path, 1, 1);
    defo_free(buf);
    return s;
}

defo_status defo_world_save_snapshot(defo_world *w) {
    return serialize(w, 0, &w->snapshot, 0);
}

defo_status defo_world_restore_snapshot(defo_world *w) {
    return restore(w, 0, w->snapshot.p, w->snapshot.n, "frame start", 1, 0);
}
