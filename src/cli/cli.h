/*
 * cli/cli.h — the `defo` command: shared helpers of the subcommands.
 *
 * Contract (docs/architecture.md "The command line"): exit 0 on success, 2
 * on bad input with a one-line reason on stderr, 1 on an internal failure.  The CLI uses
 * only the public API (include/defo/).
 */
#ifndef DEFO_CLI_H
#define DEFO_CLI_H

#include "defo/defo.h"
#include "defo/render.h"
#include "defo/scene.h"

#include <stdbool.h>
#include <stdio.h>

enum { CLI_OK = 0, CLI_INTERNAL = 1, CLI_BAD_INPUT = 2 };

/* Print "defo CMD: message" (one line) and return the exit code for status:
 * 2 for input errors, 1 for internal ones. */
int cli_fail(const char *cmd, defo_status status);
/* Print "defo CMD: message" for a usage error and return 2. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Minimal streaming JSON writer (objects, arrays, numbers, strings). */
typedef struct cli_json {
    FILE *f;
    int depth;
    bool need_comma[32];
} cli_json;
void cli_json_begin_object(cli_json *j, const char *key);
void cli_json_end_object(cli_json *j);
void cli_json_begin_array(cli_json *j, const char *key);
void cli_json_end_array(cli_json *j);
void cli_json_number(cli_json *j, const char *key, double v); /* null when not finite */
void cli_json_int(cli_json *j, const char *key, long long v);
void cli_json_string(cli_json *j, const char *key, const char *s);
void cli_json_null(cli_json *j, const char *key);

int cmd_info(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_render(int argc, char **argv);
int cmd_mesh(int argc, char **argv);
int cmd_play(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_validate(int argc, char **argv);

/* `defo run` on several processes (run_dist.c; docs/distributed.md): the
 * processes of the run (comm NULL on one), and the agreements that keep
 * them on one path. */
typedef struct run_dist {
    const defo_comm *comm;
    int rank, size;
} run_dist;
/* Join the run's other processes when started by mpirun (MPI and PETSc
 * started); CLI_OK, or an exit code (built without PETSc on N > 1). */
int run_dist_start(run_dist *d);
void run_dist_end(run_dist *d);
/* The largest exit code of all processes; with status, the first failing
 * rank's error becomes everyone's (when the code is not CLI_OK). */
int run_dist_agree(const run_dist *d, int code, defo_status *status);
/* One status for all processes (defo_comm_agree). */
defo_status run_dist_status(const run_dist *d, defo_status s);
/* 1 when any process passes 1. */
int run_dist_flag(const run_dist *d, int flag);
/* The same scene (physics hash, frames, fps) on every process?  CLI_OK, or
 * CLI_BAD_INPUT everywhere (rank 0 says which differ). */
int run_dist_same_scene(const run_dist *d, const defo_scene *scene, int total);
/* Spread the simulation's world over the processes. */
defo_status run_dist_world(const run_dist *d, defo_simulation *sim);

/* `defo run` outputs (run_output.c): frames, surfaces, pictures, stats.jsonl,
 * summary.json and the checkpoint in one folder. */
typedef struct run_output run_output;
typedef struct run_frame_info {
    int frame;      /* 0 = initial state */
    double wall_ms; /* simulation time of this frame */
    int newton_iters;
    defo_index splits; /* nodes cracks added in this frame (defo_step_stats.splits) */
    defo_step_stats stats;
} run_frame_info;
typedef struct run_summary_info {
    const char *status; /* "completed", "interrupted", "failed" */
    const char *error;  /* message when failed, else NULL */
    int frames_completed, frames_requested, frames_run;
    long long substeps, cg_iters, newton_iters;
    double wall_s, simulate_s, output_s;
} run_summary_info;
defo_status run_output_create(const char *outdir, const defo_scene *scene, defo_simulation *sim,
                              run_output **out);
void run_output_destroy(run_output *r);
const char *run_output_dir(const run_output *r);
defo_status run_output_frame(run_output *r, const run_frame_info *info);
defo_status run_output_resume(run_output *r, int frame);
defo_status run_output_summary(run_output *r, const run_summary_info *info);
int run_output_peak_inverted(const run_output *r, int *frame);
/* Frames without checkpoint.bin (defo play writes it itself, without its
 * handles). */
void run_output_skip_checkpoints(run_output *r);
int run_output_write_text(const char *dir, const char *file, const char *text);
/* What OUTDIR holds before a run: nothing (absent or empty), a resumable
 * run of this very scene (its scene.json equal to scene_dump, and a
 * checkpoint), or anything else. */
typedef enum run_folder_state {
    RUN_FOLDER_ABSENT,
    RUN_FOLDER_EMPTY,
    RUN_FOLDER_SAME_SCENE,
    RUN_FOLDER_OTHER
} run_folder_state;
run_folder_state run_output_folder_state(const char *dir, const char *scene_dump);
/* Remove the files defo run writes from dir (scene.pvd, scene.json,
 * stats.jsonl, summary.json, checkpoint.bin, stats.png, frames/frame_*.vtu,
 * surface/frame_*.obj, png/frame_*.png, the .obj, .pc2 and .mdd files in
 * cache/, and their .tmp files) and the four subfolders when that leaves
 * them empty; other files stay.  *removed counts the files.  0, or -1 with
 * errno. */
int run_output_clear(const char *dir, int *removed);
/* Errors raised by the CLI side of `defo run` (run_output.c): record a
 * message and return status; run_last_error gives it (or the library's);
 * run_fail prints "defo run: message" and returns the exit code. */
defo_status run_error(defo_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
const char *run_last_error(void);
int run_fail(defo_status status);

/* Blender point caches of the bodies' surfaces (point_cache.c): OUTDIR/cache/
 * NAME.obj (rest surface), NAME.pc2 grown frame by frame, NAME.mdd when the
 * run ends.  run_cache_create makes none (*out NULL) unless the scene asks
 * for outputs.pc2 or outputs.mdd; resume_frame < 0 starts new caches, else
 * an earlier run's frames up to resume_frame are kept.  Bodies with
 * "fracture" get none: run_cache_notes says so (lines for stderr). */
typedef struct run_cache run_cache;
defo_status run_cache_create(const char *outdir, const defo_scene *scene, defo_simulation *sim,
                             int resume_frame, run_cache **out);
void run_cache_destroy(run_cache *c);
const char *run_cache_notes(const run_cache *c);
/* Append frame `frame` (the next one) of every cached body. */
defo_status run_cache_frame(run_cache *c, int frame);
/* The .mdd files (when asked), from the .pc2 files. */
defo_status run_cache_finish(run_cache *c);
/* Caches written: body index and file stem of cache i (NULL out of range). */
int run_cache_count(const run_cache *c);
const char *run_cache_name(const run_cache *c, int i, int *body);
/* 1 when some body fractures: its surface is then written as frame OBJs. */
int run_cache_needs_surface_obj(const defo_simulation *sim);

/* "s" unless n is 1: "1 body", "2 bodies" are spelt out where they differ. */
const char *cli_s(long long n);

/* Elements negatively oriented (inverted) and flat (|det| <= 1e-12 L^3 of
 * their corner tetrahedron, L its longest edge) as stored; the first of each
 * or -1.  Frames are inspected as they are (defo info, defo convert). */
typedef struct orient_counts {
    defo_index inverted, flat, first_inverted, first_flat;
} orient_counts;
orient_counts cli_orientation_counts(const defo_mesh *mesh);

/* Print the report of `defo info` for an already loaded mesh (human or JSON),
 * as stored: inverted and flat elements are counted, not repaired. */
int cli_report_mesh(const char *path, const defo_mesh *mesh, bool json);

/* scene_draw.c: a scene's colliders for the renderer (defo run's PNGs and
 * defo render of a run folder).  cli_fit_colliders grows [lo, hi] by each
 * solid shape at t = 0 (centre ± its largest size; planes are skipped);
 * cli_collider_shapes returns the shapes placed at time t in a malloc'ed
 * array (*out NULL when there are none; -1 when out of memory). */
void cli_fit_colliders(const defo_scene *scene, double lo[3], double hi[3]);
int cli_collider_shapes(const defo_scene *scene, double t, defo_render_shape **out, int *n);

#endif
