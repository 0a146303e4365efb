/*
 * scene/simulation.c — a scene's world run frame by frame (defo/scene.h):
 * the world from the builder, the scheduled material and plasticity changes
 * and anneals applied at the first frame whose start time reaches them, one
 * defo_world_step per frame, the bodies' "embedded" surfaces (MG04 §5.1; a
 * fracturing body's cut along its cracks and closed, MG04 §5.2, whenever its
 * mesh has changed), and checkpoints — the world's, tagged with the scene's
 * physics hash.
 *
 * Frame times are frame/fps, not accumulated, so a resumed run and an
 * uninterrupted one see the same start times; the world's checkpoint holds
 * everything a frame depends on, so resuming continues bit for bit.
 */
#include "scene/scene_internal.h"

#include "defo/embed.h"
#include "defo/io.h"
#include "defo/world.h"

#include <math.h>
#include <string.h>

struct defo_simulation {
    const defo_scene *scene;
    scene_build build;
    int *applied;  /* per body: scheduled changes applied so far */
    int *annealed; /* per body: scheduled anneals done so far */
    defo_embed **embed;
    defo_mesh **embed_surf; /* as read and placed */
    defo_mesh **embed_cut;  /* a fracturing body's surface as cut, or NULL */
    defo_index *embed_size; /* 2 per body: the nodes and elements it was bound to */
};

void defo_simulation_destroy(defo_simulation *sim) {
    if (!sim) return;
    for (int i = 0; sim->embed && i < sim->scene->num_bodies; i++) {
        defo_embed_destroy(sim->embed[i]);
        defo_mesh_destroy(sim->embed_surf[i]);
        defo_mesh_destroy(sim->embed_cut[i]);
    }
    defo_free(sim->embed);
    defo_free(sim->embed_surf);
    defo_free(sim->embed_cut);
    defo_free(sim->embed_size);
    defo_free(sim->applied);
    defo_free(sim->annealed);
    scene_build_free(&sim->build);
    defo_free(sim);
}

/* The embedded surface of body i: read, transformed like the body (triangles
 * flipped by a mirroring scale), bound to the body's rest mesh. */
static defo_status add_embedded(defo_simulation *sim, int i) {
    const scene_body *b = &sim->scene->bodies[i];
    defo_mesh *surf = NULL;
    defo_status s = defo_mesh_read(b->embedded_file, NULL, &surf);
    if (s < 0) return s;
    if (surf->num_tris == 0 || surf->nodes_per_tri != 3) {
        defo_mesh_destroy(surf);
        return defo_error(DEFO_ERR_INVALID_MESH, "embedded: '%s' has no 3-node triangles",
                          b->embedded_file);
    }
    const double *R = b->rotation;
    for (defo_index k = 0; k < surf->num_nodes; k++) {
        double *x = surf->x + 3 * (size_t)k;
        double p[3] = {x[0] * b->scale[0], x[1] * b->scale[1], x[2] * b->scale[2]};
        for (int a = 0; a < 3; a++)
            x[a] = R[3 * a] * p[0] + R[3 * a + 1] * p[1] + R[3 * a + 2] * p[2] + b->translate[a];
    }
    if (b->scale[0] * b->scale[1] * b->scale[2] < 0)
        for (defo_index t = 0; t < surf->num_tris; t++) {
            defo_index *tri = surf->tris + 3 * (size_t)t, tmp = tri[1];
            tri[1] = tri[2];
            tri[2] = tmp;
        }
    s = defo_embed_create(defo_body_mesh(sim->build.world, sim->build.ids[i]), surf,
                          &sim->embed[i]);
    if (s < 0) {
        defo_mesh_destroy(surf);
        return defo_error_prefix("embedded '%s'", b->embedded_file);
    }
    sim->embed_surf[i] = surf;
    const defo_mesh *m = defo_body_mesh(sim->build.world, sim->build.ids[i]);
    sim->embed_size[2 * i] = m->num_nodes, sim->embed_size[2 * i + 1] = m->num_elems;
    return DEFO_OK;
}

/* A fracturing body's embedded surface after its mesh changed (or a
 * checkpoint was loaded: force): bound again to the mesh as it is, cut where
 * it has come apart and closed (defo_embed_create_cut); the cut surface
 * (the binding's triangles, vertices at their rest positions) replaces the
 * one read while there is a cut. */
static defo_status refresh_embedded(defo_simulation *sim, int i, int force) {
    if (!sim->embed[i] || !sim->scene->bodies[i].has_fracture) return DEFO_OK;
    const defo_mesh *m = defo_body_mesh(sim->build.world, sim->build.ids[i]);
    if (!force && sim->embed_size[2 * i] == m->num_nodes &&
        sim->embed_size[2 * i + 1] == m->num_elems)
        return DEFO_OK;
    defo_embed *e = NULL;
    defo_mesh *cut = NULL;
    defo_status s = defo_embed_create_cut(m, sim->embed_surf[i], &e);
    if (s < 0) return defo_error_prefix("embedded '%s'", sim->scene->bodies[i].embedded_file);
    const defo_index nv = defo_embed_get_info(e).num_vertices, nt = defo_embed_num_triangles(e);
    if (defo_embed_get_info(e).cut_faces > 0) {
        double *X = defo_malloc(3 * (size_t)nv * sizeof(double) + 1);
        s = X ? defo_embed_update(e, m->x, NULL, X, NULL)
              : defo_error_oom("embedded", 24 * (size_t)nv);
        if (!s) s = defo_mesh_create(1, &cut);
        if (!s) s = defo_mesh_reserve(cut, nv, 0, nt);
        for (defo_index v = 0; v < nv && !s; v++)
            s = defo_mesh_add_node(cut, X[3 * v], X[3 * v + 1], X[3 * v + 2], NULL);
        const defo_index *tr = defo_embed_triangles(e);
        for (defo_index t = 0; t < nt && !s; t++)
            s = defo_mesh_add_tri(cut, tr + 3 * (size_t)t, 3, 0);
        defo_free(X);
        if (s) {
            defo_mesh_destroy(cut);
            defo_embed_destroy(e);
            return s;
        }
    }
    defo_embed_destroy(sim->embed[i]);
    defo_mesh_destroy(sim->embed_cut[i]);
    sim->embed[i] = e;
    sim->embed_cut[i] = cut;
    sim->embed_size[2 * i] = m->num_nodes, sim->embed_size[2 * i + 1] = m->num_elems;
    return DEFO_OK;
}

static defo_status refresh_all_embedded(defo_simulation *sim, int force) {
    for (int i = 0; i < sim->scene->num_bodies; i++) {
        defo_status s = refresh_embedded(sim, i, force);
        if (s < 0) return defo_error_prefix("bodies[%d] '%s'", i, sim->scene->bodies[i].name);
    }
    return DEFO_OK;
}

defo_status defo_simulation_create(const defo_scene *scene, defo_simulation **out) {
    if (!scene || !out)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT, "defo_simulation_create: NULL argument");
    *out = NULL;
    defo_simulation *sim = defo_calloc(1, sizeof *sim);
    if (!sim) return defo_error_oom("simulation", sizeof *sim);
    sim->scene = scene;
    const size_t nb = (size_t)scene->num_bodies + 1;
    sim->applied = defo_calloc(nb, sizeof *sim->applied);
    sim->annealed = defo_calloc(nb, sizeof *sim->annealed);
    sim->embed = defo_calloc(nb, sizeof *sim->embed);
    sim->embed_surf = defo_calloc(nb, sizeof *sim->embed_surf);
    sim->embed_cut = defo_calloc(nb, sizeof *sim->embed_cut);
    sim->embed_size = defo_calloc(2 * nb, sizeof *sim->embed_size);
    defo_status s = DEFO_OK;
    if (!sim->applied || !sim->annealed || !sim->embed || !sim->embed_surf || !sim->embed_cut ||
        !sim->embed_size)
        s = defo_error_oom("simulation", nb);
    if (!s) s = scene_build_world(scene, &sim->build);
    for (int i = 0; i < scene->num_bodies && !s; i++)
        if (scene->bodies[i].has_embedded) {
            s = add_embedded(sim, i);
            if (s < 0) defo_error_prefix("bodies[%d] '%s'", i, scene->bodies[i].name);
        }
    if (s < 0) {
        defo_simulation_destroy(sim);
        return s;
    }
    *out = sim;
    if (sim->build.warning[0]) return defo_error(DEFO_WARNING, "%s", sim->build.warning);
    return DEFO_OK;
}

defo_world *defo_simulation_world(defo_simulation *sim) {
    return sim->build.world;
}
int defo_simulation_num_bodies(const defo_simulation *sim) {
    return sim->scene->num_bodies;
}
defo_body_id defo_simulation_body(const defo_simulation *sim, int i) {
    defo_body_id none = {-1, 0, 0};
    return i >= 0 && i < sim->scene->num_bodies ? sim->build.ids[i] : none;
}
const defo_mesh *defo_simulation_embedded_surface(const defo_simulation *sim, int i) {
    if (i < 0 || i >= sim->scene->num_bodies) return NULL;
    return sim->embed_cut[i] ? sim->embed_cut[i] : sim->embed_surf[i];
}
const defo_embed *defo_simulation_embedding(const defo_simulation *sim, int i) {
    return i >= 0 && i < sim->scene->num_bodies ? sim->embed[i] : NULL;
}
defo_status defo_simulation_embedded_positions(const defo_simulation *sim, int i,
                                               double *positions) {
    if (i < 0 || i >= sim->scene->num_bodies || !sim->embed[i] || !positions)
        return defo_error(DEFO_ERR_INVALID_ARGUMENT,
                          "defo_simulation_embedded_positions: body %d has no embedded surface", i);
    return defo_embed_update(sim->embed[i],
                             defo_body_positions(sim->build.world, sim->build.ids[i]), NULL,
                             positions, NULL);
}
int defo_simulation_body_fractures(const defo_simulation *sim, int i) {
    return i >= 0 && i < sim->scene->num_bodies && sim->scene->bodies[i].has_fracture;
}
int defo_simulation_frame(const defo_simulation *sim) {
    return defo_world_frame(sim->build.world);
}

/* Apply the scheduled changes with time <= t (a tolerance of 1e-9 frame so a
 * change at a frame time is applied at that frame whatever the rounding). */
static defo_status apply_changes(defo_simulation *sim, double t) {
    const double eps = 1e-9 / sim->scene->fps;
    for (int i = 0; i < sim->scene->num_bodies; i++) {
        const scene_body *b = &sim->scene->bodies[i];
        int k = sim->applied[i], last = -1;
        while (k < b->num_changes && b->changes[k].time <= t + eps) last = k++;
        if (last < 0) continue;
        /* each target's latest material and plasticity (a change carries the
         * whole of both after it) */
        for (int r = -1; r < b->num_regions; r++) {
            int lm = -1, lp = -1;
            for (int j = sim->applied[i]; j <= last; j++) {
                if (b->changes[j].region != r) continue;
                if (b->changes[j].has_material) lm = j;
                if (b->changes[j].has_plasticity) lp = j;
            }
            defo_status s = DEFO_OK;
            if (lm >= 0)
                s = defo_body_set_region_material(sim->build.world, sim->build.ids[i], r,
                                                  &b->changes[lm].material);
            if (s < 0) return defo_error_prefix("bodies[%d].material_changes[%d]", i, lm);
            if (lp >= 0)
                s = defo_body_set_plasticity(sim->build.world, sim->build.ids[i], r,
                                             &b->changes[lp].plasticity);
            if (s < 0) return defo_error_prefix("bodies[%d].material_changes[%d]", i, lp);
        }
        sim->applied[i] = k;
    }
    return DEFO_OK;
}

/* The fixed sets whose "release" time is <= t are freed (again: freeing a
 * free set changes nothing, so a resumed run may repeat it). */
static defo_status apply_releases(defo_simulation *sim, double t) {
    const double eps = 1e-9 / sim->scene->fps;
    for (int i = 0; i < sim->scene->num_bodies; i++) {
        const scene_body *b = &sim->scene->bodies[i];
        for (int f = 0; f < b->num_fixed; f++) {
            if (!(b->fixed[f].release <= t + eps)) continue;
            defo_status s = defo_body_release(sim->build.world, sim->build.ids[i], f);
            if (s < 0) return defo_error_prefix("bodies[%d].fixed[%d]", i, f);
        }
    }
    return DEFO_OK;
}

/* The scheduled anneals with time <= t (MTPS08 §5.3); run = 0 only marks
 * them done (a checkpoint's state has them). */
static defo_status apply_anneals(defo_simulation *sim, double t, int run) {
    const double eps = 1e-9 / sim->scene->fps;
    for (int i = 0; i < sim->scene->num_bodies; i++) {
        const scene_body *b = &sim->scene->bodies[i];
        int done = 0;
        while (sim->annealed[i] < b->num_anneal && b->anneal[sim->annealed[i]] <= t + eps) {
            if (run && !done) {
                defo_status s = defo_body_anneal(sim->build.world, sim->build.ids[i]);
                if (s < 0) return defo_error_prefix("bodies[%d].anneal[%d]", i, sim->annealed[i]);
                done = 1; /* several due at once: the shape is committed once */
            }
            sim->annealed[i]++;
        }
    }
    return DEFO_OK;
}

defo_status defo_simulation_step_frame(defo_simulation *sim) {
    const double frame_dt = 1.0 / sim->scene->fps;
    const int frame = defo_world_frame(sim->build.world);
    defo_status s = apply_changes(sim, (double)frame * frame_dt);
    if (s >= 0) s = apply_releases(sim, (double)frame * frame_dt);
    if (s >= 0) s = apply_anneals(sim, (double)frame * frame_dt, 1);
    if (s < 0) return s;
    /* the world's clock as frame/fps: resumed and uninterrupted runs agree */
    s = defo_world_set_time(sim->build.world, (double)frame * frame_dt, frame);
    if (s < 0) return s;
    s = defo_world_step(sim->build.world, frame_dt);
    if (s < 0) return s;
    const defo_status r = refresh_all_embedded(sim, 0);
    return r < 0 ? r : s;
}

defo_status defo_simulation_save_checkpoint(const defo_simulation *sim, const char *path) {
    return defo_world_save(sim->build.world, sim->scene->hash, path);
}

defo_status defo_simulation_load_checkpoint(defo_simulation *sim, const char *path) {
    /* the materials of the checkpoint's time first: masses and rest data
     * follow the material, and the state restored next is checked against
     * them */
    defo_status s = defo_world_load(sim->build.world, sim->scene->hash, path);
    if (s < 0) return s;
    const int frame = defo_world_frame(sim->build.world);
    for (int i = 0; i < sim->scene->num_bodies; i++) sim->applied[i] = sim->annealed[i] = 0;
    if (frame > 0) s = apply_changes(sim, (double)(frame - 1) / sim->scene->fps);
    if (frame > 0 && s >= 0) s = apply_releases(sim, (double)(frame - 1) / sim->scene->fps);
    if (frame > 0 && s >= 0) s = apply_anneals(sim, (double)(frame - 1) / sim->scene->fps, 0);
    if (s < 0) return s;
    const defo_status r = refresh_all_embedded(sim, 1);
    return r < 0 ? r : s;
}
