/*
 * defo/scene.h — JSON scene files: parse, validate, build a world, step it
 * frame by frame and checkpoint it (docs/scene-format.md is the reference of
 * every key).
 *
 * Three objects:
 *   defo_scene      a parsed and validated scene (immutable).  Parsing
 *                   collects EVERY error, each as one line
 *                   "NAME: json.path: reason" (e.g. "scene.json:
 *                   bodies[1].material.poisson: 0.52 is not in [0, 0.5)"),
 *                   with "did you mean 'poisson'?" for a misspelt key and
 *                   line:column for JSON syntax errors (jansson).
 *   defo_simulation the world built from a scene: meshes loaded or generated
 *                   (or meshed from a surface), transformed, materials,
 *                   fixed node sets, colliders (owned here; the world borrows
 *                   them), the material schedule; stepped one output frame at
 *                   a time.
 *   checkpoint      the simulation state after a frame (time, x, v per body)
 *                   in a small versioned binary file with a checksum and the
 *                   scene's physics hash, so a resumed run continues bit for
 *                   bit and a checkpoint of another scene is refused.
 *
 * Units: SI (m, kg, s, Pa, rad).  Ownership: every object returned is owned
 * by the caller and freed with its _destroy / _free function.
 */
#ifndef DEFO_SCENE_H
#define DEFO_SCENE_H

#include "defo/collision.h"
#include "defo/embed.h"
#include "defo/material.h"
#include "defo/world.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every message of a failed parse, each one line without a newline. */
typedef struct defo_scene_errors {
    int count;
    char **lines;
} defo_scene_errors;
DEFO_API void defo_scene_errors_free(defo_scene_errors *errors);

typedef struct defo_scene defo_scene;

/* Parse and validate a scene from text.  name prefixes the messages (the
 * file name); base_dir resolves relative file paths (NULL: the current
 * folder), unless the scene sets "base_dir" itself.  On error *out is NULL,
 * errors (may be NULL) receives every message and the thread's last error
 * holds the first one.  DEFO_ERR_PARSE for JSON syntax, DEFO_ERR_INVALID_ARGUMENT
 * for a valid JSON document that is not a valid scene. */
DEFO_API defo_status defo_scene_parse(const char *text, size_t length, const char *name,
                                      const char *base_dir, defo_scene **out,
                                      defo_scene_errors *errors);
/* Read path and parse it (name = path, base_dir = the file's folder).  A
 * missing or unreadable file is DEFO_ERR_IO. */
DEFO_API defo_status defo_scene_load(const char *path, defo_scene **out, defo_scene_errors *errors);
DEFO_API void defo_scene_destroy(defo_scene *scene);

/* The built-in demo scene (JSON text, compiled in, no files needed): a soft
 * torus dropped onto the ground collapses into a puddle with many
 * inverted elements, then its stiffness is restored and it recovers. */
DEFO_API const char *defo_scene_demo_text(void);

/* The scene's title ("name"; default "scene"). */
DEFO_API const char *defo_scene_name(const defo_scene *scene);
DEFO_API int defo_scene_frames(const defo_scene *scene); /* number of output frames */
DEFO_API double defo_scene_fps(const defo_scene *scene); /* frames per second */
/* 64-bit hash of the physics (bodies, colliders, gravity, integrator, in
 * canonical form): outputs and duration do not change it. */
DEFO_API uint64_t defo_scene_hash(const defo_scene *scene);
/* The scene as canonical JSON text with "base_dir" set to the absolute folder
 * its files were resolved against, so the copy can be re-parsed from any
 * folder.  Free with defo_free (defo/base.h). */
DEFO_API char *defo_scene_dump(const defo_scene *scene);

/* What the scene asks to write (docs/scene-format.md "outputs"). */
typedef struct defo_scene_outputs {
    int vtu;                       /* frames/frame_NNNN.vtu + scene.pvd; default 1 */
    int surface_obj;               /* surface/frame_NNNN.obj; default 1 */
    int png;                       /* png/frame_NNNN.png; default 0 */
    int png_width;                 /* pixels, 16..8192; default 640 */
    int png_height;                /* pixels, 16..8192; default 480 */
    char png_color[DEFO_NAME_MAX]; /* cell or point field; default "J"; "" = plain */
    int checkpoint;                /* checkpoint.bin each frame (needed by --resume); default 1 */
    /* which frame fields: bit per DEFO_OUT_FIELD_*; default all */
    unsigned fields;
    /* Blender point caches of every body's surface: cache/NAME.obj (rest)
     * with cache/NAME.pc2 (pc2) and/or cache/NAME.mdd (mdd); default 0 */
    int pc2;
    int mdd;
} defo_scene_outputs;
enum {
    DEFO_OUT_FIELD_DISPLACEMENT = 1u << 0,
    DEFO_OUT_FIELD_VELOCITY = 1u << 1,
    DEFO_OUT_FIELD_J = 1u << 2,
    DEFO_OUT_FIELD_INVERTED = 1u << 3,
    DEFO_OUT_FIELD_VON_MISES = 1u << 4,
    DEFO_OUT_FIELD_MAX_PRINCIPAL = 1u << 5,
    DEFO_OUT_FIELD_PLASTIC_STRAIN = 1u << 6,
    DEFO_OUT_FIELD_BODY_ID = 1u << 7,
    DEFO_OUT_FIELD_MIN_PRINCIPAL = 1u << 8,
    DEFO_OUT_FIELD_ACTIVATION = 1u << 9,
    DEFO_OUT_FIELD_CONTACT = 1u << 10,
    DEFO_OUT_FIELD_PLASTIC_BENDING = 1u << 11,
    DEFO_OUT_FIELD_ALL = 0xfffu
};
DEFO_API const defo_scene_outputs *defo_scene_get_outputs(const defo_scene *scene);

/* Colliders as defined (shapes in the collider frame and their motion), for
 * drawing.  NULL when i is out of range. */
DEFO_API int defo_scene_num_colliders(const defo_scene *scene);
DEFO_API const defo_collider_def *defo_scene_collider(const defo_scene *scene, int i);

/* The mesh and surface files a scene names (paths resolved against its
 * base_dir), which defo_simulation_create reads with defo_mesh_read: tools
 * check them ahead of a run (defo validate opens each as the run would). */
typedef enum defo_scene_file_kind {
    DEFO_SCENE_FILE_MESH = 0,    /* bodies[i].mesh: a volume mesh (elements reoriented) */
    DEFO_SCENE_FILE_SURFACE = 1, /* bodies[i].surface.file: a closed triangle surface to mesh */
    DEFO_SCENE_FILE_EMBEDDED = 2 /* bodies[i].embedded.file: 3-node triangles (MG04 §5.1) */
} defo_scene_file_kind;
typedef struct defo_scene_file {
    defo_scene_file_kind kind;
    int body;         /* index in "bodies" */
    const char *path; /* resolved; valid while the scene lives */
} defo_scene_file;
DEFO_API int defo_scene_num_files(const defo_scene *scene);
/* File i (0 <= i < defo_scene_num_files), bodies in order, each body's
 * mesh or surface before its embedded surface; path NULL when out of range. */
DEFO_API defo_scene_file defo_scene_get_file(const defo_scene *scene, int i);

/* ------------------------------------------------------------ simulation */
/* A scene built into a world (src/scene/builder.c) and run frame by frame:
 * the scheduled material changes, the world's frame step, the bodies'
 * "embedded" surfaces, checkpoints tagged with the scene's physics hash.
 * Everything else is the world's (defo_simulation_world, defo/world.h). */
typedef struct defo_simulation defo_simulation;

/* Build the world: load/generate/mesh every body, apply transforms,
 * velocities, fixed node sets, loads, colliders, integrators.  Errors name
 * the body ("bodies[0] 'bunny': ...") and are input errors (exit 2 in the
 * CLI) unless out of memory.  DEFO_WARNING (the simulation made, *out set)
 * when a body starts inside a collider: the message names each such body
 * and collider, its nodes inside, the deepest, and how it will be pushed
 * out (defo_collider_def.separation_speed). */
DEFO_API defo_status defo_simulation_create(const defo_scene *scene, defo_simulation **out);
DEFO_API void defo_simulation_destroy(defo_simulation *sim);

DEFO_API defo_world *defo_simulation_world(defo_simulation *sim);
DEFO_API int defo_simulation_num_bodies(const defo_simulation *sim);
/* The world id of scene body i. */
DEFO_API defo_body_id defo_simulation_body(const defo_simulation *sim, int i);
/* The body's "embedded" surface (MG04 §5.1; rest positions transformed like
 * the body, 3-node triangles), NULL when it has none.  A fracturing body's
 * once it has come apart: the surface cut along the cracks and closed with
 * caps (MG04 §5.2, defo_embed_create_cut), one closed surface per piece —
 * it changes as the body breaks further (after defo_simulation_step_frame
 * and defo_simulation_load_checkpoint). */
DEFO_API const defo_mesh *defo_simulation_embedded_surface(const defo_simulation *sim, int i);
/* Its binding to the body's tets (the element and coordinates of each
 * vertex of defo_simulation_embedded_surface), NULL when it has none. */
DEFO_API const defo_embed *defo_simulation_embedding(const defo_simulation *sim, int i);
/* Its current vertex positions (3 per vertex of that surface) from the
 * body's current positions (defo_embed_update). */
DEFO_API defo_status defo_simulation_embedded_positions(const defo_simulation *sim, int i,
                                                        double *positions);
/* 1 when body i has "fracture". */
DEFO_API int defo_simulation_body_fractures(const defo_simulation *sim, int i);
/* Frames completed so far (0 at the start). */
DEFO_API int defo_simulation_frame(const defo_simulation *sim);
/* Advance one output frame (1/fps s): scheduled material changes whose time
 * has come are applied first, then defo_world_step.  On error the world is
 * left at the last completed frame (defo_world_step's guarantee). */
DEFO_API defo_status defo_simulation_step_frame(defo_simulation *sim);

/* Write the world's state after the current frame (defo_world_save, tagged
 * with the scene's physics hash) atomically. */
DEFO_API defo_status defo_simulation_save_checkpoint(const defo_simulation *sim, const char *path);
/* Restore a checkpoint written by the same scene.  DEFO_ERR_PARSE for a
 * damaged file or one of another version (an older defo's: run the scene
 * again), DEFO_ERR_INVALID_ARGUMENT for one of another scene (hash or body
 * sizes differ).  Scheduled material changes up to the checkpoint's time
 * are re-applied. */
DEFO_API defo_status defo_simulation_load_checkpoint(defo_simulation *sim, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* DEFO_SCENE_H */
