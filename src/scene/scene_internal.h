/*
 * scene/scene_internal.h — the parsed scene shared by the scene module's
 * files: schema.c (what a scene may say, validated), scene.c (the public
 * scene object), builder.c (scene → world) and simulation.c (a built scene
 * run frame by frame).  Never installed.
 */
#ifndef DEFO_SCENE_INTERNAL_H
#define DEFO_SCENE_INTERNAL_H

#include "defo/force_model.h"
#include "defo/fracture.h"
#include "defo/geometry.h"
#include "defo/integrator.h"
#include "defo/mesh.h"
#include "defo/mesher.h"
#include "defo/plasticity.h"
#include "defo/scene.h"
#include "defo/skeleton.h"

#include "scene/json_check.h"

#include "base/base.h"

#define SCENE_PATH_MAX JV_PATH_MAX

typedef enum { SRC_FILE, SRC_GENERATOR, SRC_SURFACE } scene_source;
typedef enum {
    GEN_BOX,
    GEN_SPHERE,
    GEN_CYLINDER,
    GEN_TORUS,
    /* shells (tri3, ITF04 §8) */
    GEN_RECTANGLE,
    GEN_SPHERE_SHELL,
    GEN_TORUS_SHELL
} scene_generator;

/* A node set of the transformed rest mesh (fixed sets, loads). */
typedef struct scene_fix {
    defo_region region;
    int has_motion;         /* "motion" given: the set follows it */
    defo_motion_def motion; /* scripted rigid motion of the set's rest positions */
    double release;         /* fixed sets: freed at this time [s]; INFINITY: never */
} scene_fix;

/* A dead load: a force per node of the region [N] ("forces") or a traction
 * on the boundary faces in it [Pa] ("tractions"). */
typedef struct scene_load {
    scene_fix region;
    double value[3];
} scene_load;

/* Where a body's ITF04 §6.1 fibre directions come from (material.fibres). */
typedef enum {
    FIBRES_NONE = 0,
    FIBRES_DIRECTION, /* one direction (the scene's frame) */
    FIBRES_FIELD,     /* a 3-component cell or point array of the mesh file */
    FIBRES_LINE       /* a line of action between two node sets */
} scene_fibre_source;

typedef struct scene_fibres {
    scene_fibre_source source;
    double direction[3];
    char field[DEFO_NAME_MAX];
    scene_fix from, to;
} scene_fibres;

/* One activation group (bodies[i].activation). */
typedef struct scene_activation {
    int has_region;
    scene_fix region;
    int num_keys;
    double *times, *levels; /* num_keys each */
    double level;
    defo_interpolation interpolation;
} scene_activation;

/* A scheduled run-time edit of a body's own elements (region −1) or of one
 * of its material regions: the whole material and/or plasticity after it
 * (a change edits the target's previous values). */
typedef struct scene_change {
    double time;
    int region;
    int has_material, has_plasticity;
    defo_material_def material;
    defo_plasticity_def plasticity;
} scene_change;

/* A material region: the elements of `region` (all four corners in it, or
 * its tag) with their own material and, optionally, plasticity. */
typedef struct scene_region {
    char name[DEFO_NAME_MAX];
    scene_fix region;
    defo_material_def material;
    int has_plasticity;
    defo_plasticity_def plasticity;
} scene_region;

/* ITF04 §7 goal shape of a body's plasticity */
typedef enum { GOAL_NONE, GOAL_SCALE, GOAL_MESH } scene_goal;

/* One integrator of the scene with the force options its "integrator"
 * object carries for the bodies it steps (kept there for scene files
 * written before those options moved to the force model). */
typedef struct scene_integrator {
    defo_integrator_def def;
    int rotation_interval; /* corotated bodies, MTPS08 §4.4; −1: the default */
    double lazy_tolerance; /* −1: the default */
    int definiteness_fix;  /* invertible bodies, TSIF05 §8; −1: the default */
} scene_integrator;

typedef struct scene_body {
    char name[DEFO_NAME_MAX];
    scene_source source;
    char file[SCENE_PATH_MAX]; /* resolved; SRC_FILE and SRC_SURFACE */
    scene_generator generator;
    defo_box_def box;
    defo_sphere_def sphere;
    defo_cylinder_def cylinder;
    defo_torus_def torus;
    defo_rectangle_def rectangle;
    defo_sphere_shell_def sphere_shell;
    defo_torus_shell_def torus_shell;
    defo_mesher_def mesher;
    double translate[3], rotation[9], scale[3];
    double velocity[3], angular_velocity[3];
    defo_material_def material;
    defo_formulation formulation;
    int integrator; /* index in defo_scene.integrators */
    scene_fix *fixed;
    int num_fixed;
    scene_change *changes; /* ascending time */
    int num_changes;
    scene_load *forces;
    int num_forces;
    scene_load *tractions;
    int num_tractions;
    int has_plasticity;
    defo_plasticity_def plasticity;
    scene_goal goal;
    double goal_scale[3];           /* GOAL_SCALE: about the rest bounding box's centre */
    char goal_file[SCENE_PATH_MAX]; /* GOAL_MESH: the same nodes, transformed like the body */
    scene_region *regions;
    int num_regions;
    double *anneal; /* ascending times of "anneal" (MTPS08 §5.3) */
    int num_anneal;
    int has_fracture;
    defo_fracture_def fracture;
    int has_embedded;
    char embedded_file[SCENE_PATH_MAX];
    int collide, self_contact; /* contact with other bodies and itself */
    double friction;
    scene_fibres fibres;
    scene_activation *acts;
    int num_acts;
} scene_body;

typedef struct scene_collider {
    char name[DEFO_NAME_MAX];
    defo_shape_def *shapes;
    defo_mesh **meshes;    /* per shape: a mesh shape's triangles (owned), else NULL */
    defo_collider_def def; /* def.shapes points into shapes */
} scene_collider;

struct defo_scene {
    char name[DEFO_NAME_MAX];
    char base_dir[SCENE_PATH_MAX];
    double gravity[3];
    scene_integrator *integrators; /* [0]: the top-level "integrator" */
    int num_integrators;
    int frames;
    double fps;
    defo_scene_outputs outputs;
    scene_body *bodies;
    int num_bodies;
    scene_collider *colliders;
    int num_colliders;
    defo_contact_def contact; /* the top-level "contact" */
    defo_skeleton *skeleton;  /* "skeleton" (TSIF05 §11), or NULL */
    uint64_t hash;
    char *canonical; /* the whole document with base_dir, as JSON text */
};

/* schema.c: the whole document into s (errors into c) */
void scene_parse_root(jv_ctx *c, json_t *root, defo_scene *s, const char *base_dir);
/* schema.c: one region (box, sphere, plane when allow_plane, or tag) of f
 * into x; 1 when exactly one is given */
int scene_parse_region(jv_ctx *c, json_t *f, const jv_path *fp, scene_fix *x, int allow_plane);

/* schema_flesh.c: skeletons, bones, fibres and activation (ITF04 §6.1,
 * TSIF05 §11) */
void scene_parse_skeleton(jv_ctx *c, json_t *o, const jv_path *p, defo_scene *s);
/* m[key], a bone name, into motion (skeleton and bone); 1 when given */
int scene_parse_bone(jv_ctx *c, json_t *m, const jv_path *p, const defo_scene *s,
                     defo_motion_def *motion);
/* material.fibres: the curves into mat (material_changes too) */
void scene_parse_fibre_curves(jv_ctx *c, json_t *f, const jv_path *p, defo_material_def *mat);
/* material.fibres: where the directions come from (a body's material) */
void scene_parse_fibre_source(jv_ctx *c, json_t *f, const jv_path *p, scene_body *b);
void scene_parse_activation(jv_ctx *c, json_t *v, const jv_path *p, scene_body *b);
/* the combinations refused with their reason (parse_root, once per body) */
void scene_check_fibres(jv_ctx *c, const jv_path *p, const scene_body *b);
void scene_body_flesh_free(scene_body *b);
/* FNV-1a 64 over bytes, continuing from h (start with SCENE_FNV_BASIS). */
#define SCENE_FNV_BASIS 14695981039346656037ull
uint64_t defo_scene_fnv1a(uint64_t h, const void *data, size_t size);

/* builder.c: the world of a scene.  The world borrows the colliders (owned
 * by the caller, num_colliders of them, created here) and embeds nothing. */
typedef struct scene_build {
    defo_world *world;
    defo_collider **colliders;
    int num_colliders;
    defo_body_id *ids;
    char warning[1024]; /* bodies that start inside a collider ("" when none) */
} scene_build;
defo_status scene_build_world(const defo_scene *s, scene_build *out);
void scene_build_free(scene_build *b);
/* the tet mesh of body b, transformed (for building and for validate) */
defo_status scene_body_mesh(const scene_body *b, defo_mesh **out);
/* builder_flesh.c: body b's fibre directions on its transformed mesh m
 * (*out NULL without fibres; defo_free it), and its activation groups */
defo_status scene_body_fibres(const scene_body *b, const defo_mesh *m, double **out);
defo_status scene_body_activation(const scene_body *b, defo_world *w, defo_body_id id);

#endif
