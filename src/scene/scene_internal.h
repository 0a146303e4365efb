/*
 * scene/scene_internal.h — the parsed scene shared by scene.c (parse and
 * validate) and simulation.c (build, step, checkpoint).  Never installed.
 */
#ifndef DEFO_SCENE_INTERNAL_H
#define DEFO_SCENE_INTERNAL_H

#include "defo/mesh.h"
#include "defo/backward_euler.h"
#include "defo/fracture.h"
#include "defo/mesher.h"
#include "defo/plasticity.h"
#include "defo/quasistatic.h"
#include "defo/scene.h"

#include "base/base.h"

#define SCENE_PATH_MAX 4096

typedef enum { SRC_FILE, SRC_GENERATOR, SRC_SURFACE } scene_source;
typedef enum { GEN_BOX, GEN_SPHERE, GEN_CYLINDER, GEN_TORUS } scene_generator;
typedef enum { FIX_BOX, FIX_SPHERE, FIX_PLANE, FIX_TAG } scene_fix_kind;
typedef enum {
    INTEGRATOR_NEWMARK = 0,
    INTEGRATOR_BACKWARD_EULER = 1,
    INTEGRATOR_QUASISTATIC = 2
} scene_integrator;
typedef enum { FORM_INVERTIBLE = 0, FORM_COROTATED = 1 } scene_formulation;

typedef struct scene_fix {
    scene_fix_kind kind;
    double a[3]; /* box min, sphere centre, plane point */
    double b[3]; /* box max, plane normal */
    double radius;
    int32_t tag;
    int has_motion;         /* "motion" given: a moving bone (quasistatic) or a kinematic
                               handle (backward_euler) */
    defo_motion_def motion; /* scripted rigid motion of the set's rest positions */
} scene_fix;

/* A dead load of the quasistatic integrator: a force per node of the region
 * [N] ("forces") or a traction on the boundary faces in it [Pa]
 * ("tractions").  Regions: FIX_BOX, FIX_SPHERE or FIX_TAG. */
typedef struct scene_load {
    scene_fix region;
    double value[3];
} scene_load;

typedef struct scene_change {
    double time;
    defo_material_def material;
} scene_change;

typedef struct scene_body {
    char name[DEFO_NAME_MAX];
    scene_source source;
    char file[SCENE_PATH_MAX]; /* resolved; SRC_FILE and SRC_SURFACE */
    scene_generator generator;
    defo_box_def box;
    defo_sphere_def sphere;
    defo_cylinder_def cylinder;
    defo_torus_def torus;
    defo_mesher_def mesher;
    double translate[3], rotation[9], scale[3];
    double velocity[3], angular_velocity[3];
    defo_material_def material;
    scene_formulation formulation;
    scene_fix *fixed;
    int num_fixed;
    scene_change *changes; /* ascending time */
    int num_changes;
    scene_load *forces; /* node forces (dead loads) */
    int num_forces;
    scene_load *tractions; /* boundary tractions (dead loads) */
    int num_tractions;
    int has_plasticity;                 /* "plasticity" given (corotated bodies, MG04 §3) */
    defo_plasticity_def plasticity;     /* yield, creep [1/s], max */
    int has_fracture;                   /* "fracture" given (corotated bodies, MG04 §4) */
    defo_fracture_def fracture;         /* threshold [Pa], seed, max_splits */
    int has_embedded;                   /* "embedded" given: MG04 §5.1 surface for the outputs */
    char embedded_file[SCENE_PATH_MAX]; /* resolved */
} scene_body;

typedef struct scene_collider {
    char name[DEFO_NAME_MAX];
    defo_shape_def *shapes;
    defo_collider_def def; /* def.shapes points into shapes */
} scene_collider;

struct defo_scene {
    char name[DEFO_NAME_MAX];
    char base_dir[SCENE_PATH_MAX];
    defo_world_def world;
    scene_integrator integrator;
    defo_backward_euler_def backward_euler; /* MG04 §6, when integrator is backward_euler */
    defo_quasistatic_def quasistatic;       /* TSIF05, when integrator is quasistatic */
    double contact_stiffness;               /* quasistatic penalty [N/m]; 0: the solver's */
    int frames;
    double fps;
    defo_scene_outputs outputs;
    scene_body *bodies;
    int num_bodies;
    scene_collider *colliders;
    int num_colliders;
    uint64_t hash;
    char *canonical; /* json_dumps of the whole document with base_dir (malloc'd by jansson) */
};

/* FNV-1a 64 over bytes, continuing from h (start with SCENE_FNV_BASIS). */
#define SCENE_FNV_BASIS 14695981039346656037ull
uint64_t defo_scene_fnv1a(uint64_t h, const void *data, size_t size);

#endif
