/*
 * play/play.h — `defo play`: a scene simulated live in a window, touched
 * with the mouse (MG04's interactive virtual materials, MTPS08's handles).
 *
 * The session owns nothing of the engine: it steps a defo_simulation one
 * scene frame (1/fps) at a time through the public API, draws it with the
 * renderer (defo/render.h: the pictures defo render makes, shown in a GLFW
 * window), and touches it only through defo/world.h — spring handles as dead
 * loads, hard handles as prescribed node sets.  The engine never knows a
 * window.
 *
 * Determinism: every input is an event stamped with the scene frame it
 * precedes; the simulation depends only on the events and their stamps, never
 * on wall time (the time budget only decides how many frames run between two
 * displayed ones).  So a session recorded with its events (--record) replays
 * (--events) to bit-identical frames.
 *
 * The command (cli/cmd_play.c) parses arguments, builds the simulation and
 * hands the session a host: collider shapes for the pictures, and the
 * recording and checkpoint writers of `defo run`'s output folder.
 */
#ifndef DEFO_PLAY_H
#define DEFO_PLAY_H

#include "defo/render.h"
#include "defo/scene.h"

/* What the command does for the session. */
typedef struct play_host {
    void *ctx;
    /* the colliders' shapes at time t: a malloc'ed array in *out (NULL when
     * there are none), their count in *n; -1 when out of memory */
    int (*shapes)(void *ctx, double t, defo_render_shape **out, int *n);
    /* after every simulated frame (and after a reset to frame 0), when
     * recording (NULL: not recording): write it as `defo run` does (frames,
     * surfaces, stats); on failure it prints why */
    defo_status (*record)(void *ctx, double wall_ms);
    /* write the current state as a folder that `defo run --resume DIR`
     * continues; dir receives the folder, or on failure the reason (NULL:
     * not available) */
    defo_status (*checkpoint)(void *ctx, char *dir, size_t size);
} play_host;

typedef struct play_def {
    const defo_scene *scene;
    defo_simulation *sim;
    int width, height;      /* window size (pixels) */
    const char *events_in;  /* replay these events (NULL: live input) */
    const char *events_out; /* write the session's events here (NULL: none) */
    const char *shot_dir;   /* screenshots go here */
    const char *info_out;   /* at the end: the camera and the handles as JSON (NULL: none) */
    double frame_lo[3], frame_hi[3]; /* the camera's framing box at the start */
    int quiet;
    play_host host;
} play_def;

/* Run the session until the window closes (or, replaying, the events end).
 * Returns the command's exit code: 0, 2 (bad input: no display, a bad
 * events file) or 1 (a failed frame, a failed write); messages on stderr. */
int play_run(const play_def *def);

#endif
