/*
 * play/play_internal.h — the pieces of a `defo play` session shared by its
 * files: events (events.c), what each body shows and how it is picked
 * (view.c), handles (handles.c) and the window loop (play.c).
 */
#ifndef DEFO_PLAY_INTERNAL_H
#define DEFO_PLAY_INTERNAL_H

#include "play/play.h"

#include "defo/element.h"
#include "defo/embed.h"
#include "defo/mesh.h"
#include "defo/world.h"

#include <math.h>
#include <stdio.h>

/* ------------------------------------------------------------- events */
typedef enum play_event_kind {
    PLAY_EV_PRESS,
    PLAY_EV_RELEASE,
    PLAY_EV_MOVE,
    PLAY_EV_KEY,
    PLAY_EV_SCROLL,
    PLAY_EV_RESIZE, /* button = width, key = height */
    PLAY_EV_END
} play_event_kind;

enum { PLAY_MOD_SHIFT = 1, PLAY_MOD_CTRL = 2 }; /* GLFW's bits */

typedef struct play_event {
    int frame; /* the scene frame it precedes */
    play_event_kind kind;
    int button, mods, key;
    double x, y; /* picture pixels from the top left; scroll: y */
} play_event;

void play_event_write(FILE *f, const play_event *e);
/* Read an events file; prints "defo play: FILE:LINE: reason" and returns -1
 * on a bad one. */
int play_events_read(const char *path, play_event **out, int *count, int *width, int *height);

/* ------------------------------------------------------------- bodies */
enum { PLAY_COLOR_PLAIN = 0, PLAY_COLOR_STRESS = 1, PLAY_COLOR_J = 2 };

/* What one scene body shows: its boundary (or embedded surface) at the
 * current positions, with the fields its colours need. */
typedef struct play_body {
    defo_body_id id;
    defo_index nodes; /* node count the caches below were made for */
    defo_boundary bd; /* boundary faces (picking and wireframe of the tet mesh) */
    /* embedded surface (MG04 §5.1) or NULL, and its binding: the
     * simulation's (a fracturing body's is cut along its cracks, MG04 §5.2,
     * and changes as it breaks) */
    const defo_mesh *surface;
    const defo_embed *embed;
    double *sx, *sn, *sval;   /* its positions, normals (MTPS08 §6.2), von Mises values */
    size_t cap_sv;            /* vertices the three arrays hold */
    double *J, *vm, *node_vm; /* fields: per element, per element, per node */
    defo_mesh view;           /* the body's mesh with the fields below */
    defo_field fields[2];
} play_body;

/* A handle: a spring on a surface point (dead loads on its element's nodes
 * with the shape-function weights, MG04) or a hard handle (the nodes near
 * the point prescribed to follow it, MTPS08's handles). */
typedef struct play_handle {
    int used, body, hard, pinned;
    int set;   /* hard: the body's prescribed set */
    int frame; /* grabbed before this frame */
    int nn;
    defo_index node[DEFO_ELEMENT_MAX_NODES * 4];
    double w[DEFO_ELEMENT_MAX_NODES * 4];           /* spring: each node's share, m_i / M */
    double applied[3 * DEFO_ELEMENT_MAX_NODES * 4]; /* spring: the loads added last frame */
    double grab[3];                                 /* the point when grabbed */
    double target[3];                               /* where it is pulled */
    double R[9], T0[3];                             /* hard: x = R X + T0 + (target − grab) */
    double offset[3];   /* spring: the grabbed point from the patch's centre of mass */
    double k, c, reach; /* spring: stiffness [N/m], damping [N s/m], force cap length [m] */
} play_handle;

enum { PLAY_MAX_HANDLES = 32 };

typedef struct play_session {
    const play_def *def;
    defo_world *world;
    defo_renderer *renderer;
    int nb;
    play_body *bodies;
    play_handle handles[PLAY_MAX_HANDLES];
    int drag;  /* handle being dragged, −1 none */
    int orbit; /* camera drag with the button held */
    double cursor[2], orbit_from[2];
    /* view */
    defo_render_def rd;
    double frame_lo[3], frame_hi[3], zoom;
    double vp[16], eye[3]; /* the camera of the last picture */
    int color, wireframe, help, fracture_paused;
    /* time */
    int paused, slow, step_once;
} play_session;

/* view.c */
defo_status play_bodies_create(play_session *ps);
void play_bodies_destroy(play_session *ps);
/* Refresh the caches of every body (after frames ran or fracture). */
defo_status play_bodies_update(play_session *ps);
/* The picture of the current state (HUD drawn by the caller). */
defo_status play_draw(play_session *ps, defo_image *img);
/* Draw the tet meshes' boundary edges over img with the camera. */
void play_draw_wireframe(play_session *ps, defo_image *img);
/* The camera for the current view and picture size (ps->vp, ps->eye). */
defo_status play_camera(play_session *ps);
/* The ray through pixel (x, y): origin and unit direction. */
void play_pixel_ray(const play_session *ps, double x, double y, double o[3], double d[3]);
/* The pixel of world point p (returns 0 behind the camera). */
int play_project(const play_session *ps, const double p[3], double *x, double *y);

/* handles.c */
/* Pick at pixel (x, y) and grab: a hard or spring handle; −1 when the ray
 * hits no body (and the message says nothing was hit). */
int play_grab(play_session *ps, double x, double y, int hard);
/* Move the dragged handle's target to the cursor (on the plane through the
 * grab point facing the camera). */
void play_drag_to(play_session *ps, int h, double x, double y);
/* Remove a handle (its loads or its prescribed set). */
void play_release(play_session *ps, int h);
/* The handle whose target is within r pixels of (x, y), or −1. */
int play_handle_near(play_session *ps, double x, double y, double r);
/* Before each frame: hard handles' transforms and springs' loads. */
defo_status play_apply_handles(play_session *ps);

#endif
