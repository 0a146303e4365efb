/*
 * cli/cmd_play.c — `defo play SCENE.json [--size WxH] [--record OUTDIR]
 * [--events FILE] [--threads N] [--force] [--quiet]`: the scene live in a
 * window (src/play), touched with the mouse.
 *
 * --record OUTDIR writes the session as `defo run` writes a run (frames,
 * surfaces, pictures, stats.jsonl, summary.json, scene.json: run_output.c)
 * plus events.txt (the input, replayable), play.json (the camera and the
 * handles taken) and screenshots/; at the end, and on K, checkpoint.bin of
 * the state without the session's handles — so `defo run --resume OUTDIR`
 * continues the session as a batch run.  The folder rules are defo run's:
 * absent or empty, else --force (which removes only what defo writes).
 * Without --record, K writes such a folder on its own (defo-play-NNN: the
 * scene, the checkpoint and one stats line per frame so far, no frames).
 *
 * --events FILE replays a recorded session: the same frames, bit for bit.
 * Exit: 0, 2 bad input (scene, options, events file, no display), 1 a
 * failed frame or write.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli/cli.h"
#include "play/play.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static const char *cmd = "play";

typedef struct play_cli {
    const defo_scene *scene;
    defo_simulation *sim;
    run_output *out; /* --record */
    const char *outdir;
    long long substeps, cg, newton;
    int frames_run;
    double sim_s;
} play_cli;

static int host_shapes(void *ctx, double t, defo_render_shape **out, int *n) {
    play_cli *c = ctx;
    return cli_collider_shapes(c->scene, t, out, n);
}

static defo_status host_record(void *ctx, double wall_ms) {
    play_cli *c = ctx;
    run_frame_info fi;
    memset(&fi, 0, sizeof fi);
    fi.frame = defo_simulation_frame(c->sim);
    fi.wall_ms = wall_ms;
    defo_world_stats(defo_simulation_world(c->sim), &fi.stats);
    if (fi.frame == 0) memset(&fi.stats, 0, sizeof fi.stats); /* a reset */
    fi.newton_iters = fi.stats.newton_iterations;
    fi.splits = fi.stats.splits;
    c->substeps += fi.stats.steps;
    c->cg += fi.stats.cg_iterations;
    c->newton += fi.newton_iters;
    c->frames_run++;
    c->sim_s += 1e-3 * wall_ms;
    defo_status s = run_output_frame(c->out, &fi);
    if (s < 0) fprintf(stderr, "defo play: --record: %s\n", run_last_error());
    return s < 0 ? s : DEFO_OK;
}

/* A resumable run folder: scene.json, one stats line per frame so far and
 * the checkpoint (the recording folder already has the first two).  On
 * failure dir holds the reason. */
static defo_status fail_in(char *dir, size_t size, defo_status s, const char *what,
                           const char *where) {
    snprintf(dir, size, "%s %s: %s", what, where, errno ? strerror(errno) : defo_last_error());
    return s;
}

static defo_status host_checkpoint(void *ctx, char *dir, size_t size) {
    play_cli *c = ctx;
    char path[2300];
    if (c->out) {
        snprintf(dir, size, "%s", c->outdir);
    } else {
        int k = 1;
        struct stat st;
        for (; k < 1000; k++) {
            snprintf(dir, size, "defo-play-%03d", k);
            if (stat(dir, &st) != 0) break;
        }
        char name[64];
        snprintf(name, sizeof name, "%s", dir);
        errno = 0;
        if (mkdir(name, 0777) != 0) return fail_in(dir, size, DEFO_ERR_IO, "cannot create", name);
        char *copy = defo_scene_dump(c->scene);
        if (!copy || run_output_write_text(name, "scene.json", copy)) {
            defo_free(copy);
            return fail_in(dir, size, DEFO_ERR_IO, "cannot write scene.json in", name);
        }
        defo_free(copy);
        const int frame = defo_simulation_frame(c->sim);
        size_t cap = 64 * ((size_t)frame + 1) + 1, n = 0;
        char *lines = malloc(cap);
        if (!lines) return fail_in(dir, size, DEFO_ERR_OUT_OF_MEMORY, "out of memory in", name);
        for (int f = 0; f <= frame; f++)
            n += (size_t)snprintf(lines + n, cap - n,
                                  "{\"frame\": %d, \"time\": %.17g, \"source\": \"defo play\"}\n",
                                  f, f / defo_scene_fps(c->scene));
        int bad = run_output_write_text(name, "stats.jsonl", lines);
        free(lines);
        if (bad) return fail_in(dir, size, DEFO_ERR_IO, "cannot write stats.jsonl in", name);
    }
    snprintf(path, sizeof path, "%s/checkpoint.bin", dir);
    errno = 0;
    defo_status s = defo_simulation_save_checkpoint(c->sim, path);
    if (s) {
        char where[2300];
        snprintf(where, sizeof where, "%s", path);
        return fail_in(dir, size, s, "cannot write", where);
    }
    return DEFO_OK;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_size(const char *s, int *w, int *h) {
    char x;
    if (sscanf(s, "%d%c%d", w, &x, h) != 3 || (x != 'x' && x != 'X') || *w < 16 || *h < 16 ||
        *w > 8192 || *h > 8192)
        return -1;
    return 0;
}

int cmd_play(int argc, char **argv) {
    const char *scene_path = NULL, *record = NULL, *events = NULL;
    int width = 1280, height = 720, threads = 0, force = 0, quiet = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--size") || !strcmp(a, "--record") || !strcmp(a, "--events") ||
            !strcmp(a, "--threads")) {
            if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "--size")) {
                if (parse_size(v, &width, &height))
                    return cli_usage_error(cmd, "--size: '%s' is not WxH with each in [16, 8192]",
                                           v);
            } else if (!strcmp(a, "--record")) {
                record = v;
            } else if (!strcmp(a, "--events")) {
                events = v;
            } else {
                char *end;
                long t = strtol(v, &end, 10);
                if (*end || t < 1 || t > 1024)
                    return cli_usage_error(cmd, "--threads: '%s' is not an integer in [1, 1024]",
                                           v);
                threads = (int)t;
            }
        } else if (!strcmp(a, "--force")) {
            force = 1;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error(cmd, "unknown option '%s'", a);
        } else if (scene_path) {
            return cli_usage_error(cmd, "unexpected argument '%s' (one scene)", a);
        } else {
            scene_path = a;
        }
    }
    if (!scene_path) return cli_usage_error(cmd, "a scene is needed: defo play SCENE.json");
    if (threads) defo_set_threads(threads);

    defo_scene *scene = NULL;
    defo_scene_errors errs;
    defo_status s = defo_scene_load(scene_path, &scene, &errs);
    if (s < 0) {
        if (errs.count) {
            fprintf(stderr, "defo play: %s", errs.lines[0]);
            if (errs.count > 1)
                fprintf(stderr, " (and %d more errors: see 'defo validate %s')", errs.count - 1,
                        scene_path);
            fputc('\n', stderr);
            defo_scene_errors_free(&errs);
            return s == DEFO_ERR_OUT_OF_MEMORY ? CLI_INTERNAL : CLI_BAD_INPUT;
        }
        return cli_fail(cmd, s);
    }
    if (record) {
        char *dump = defo_scene_dump(scene);
        run_folder_state st = dump ? run_output_folder_state(record, dump) : RUN_FOLDER_OTHER;
        defo_free(dump);
        if ((st == RUN_FOLDER_SAME_SCENE || st == RUN_FOLDER_OTHER) && !force) {
            fprintf(stderr,
                    "defo play: --record %s: the folder is not empty; use --force to replace the "
                    "run there (only files defo writes are removed), or another folder\n",
                    record);
            defo_scene_destroy(scene);
            return CLI_BAD_INPUT;
        }
    }
    defo_simulation *sim = NULL;
    s = defo_simulation_create(scene, &sim);
    if (s < 0) {
        defo_scene_destroy(scene);
        return cli_fail(cmd, s);
    }
    if (s > 0 && !quiet) fprintf(stderr, "defo play: warning: %s\n", defo_last_error());

    play_cli c;
    memset(&c, 0, sizeof c);
    c.scene = scene;
    c.sim = sim;
    c.outdir = record;
    char events_out[2300], shots[2300], info[2300];
    int rc = CLI_OK;
    const double t_start = now_s();
    if (record) {
        int removed = 0;
        if (run_output_clear(record, &removed) != 0) {
            fprintf(stderr, "defo play: --force: cannot clear %s: %s\n", record, strerror(errno));
            rc = CLI_BAD_INPUT;
        }
        if (!rc) s = run_output_create(record, scene, sim, &c.out);
        if (!rc && s) rc = run_fail(s);
        if (!rc) {
            /* checkpoints only without the session's handles (play.c) */
            run_output_skip_checkpoints(c.out);
            char *copy = defo_scene_dump(scene);
            if (!copy || run_output_write_text(record, "scene.json", copy))
                rc = run_fail(run_error(DEFO_ERR_IO, "cannot write %s/scene.json", record));
            defo_free(copy);
        }
        if (!rc) {
            run_frame_info fi;
            memset(&fi, 0, sizeof fi);
            s = run_output_frame(c.out, &fi);
            if (s) rc = run_fail(s);
        }
        snprintf(shots, sizeof shots, "%s/screenshots", record);
        if (!rc && mkdir(shots, 0777) != 0 && errno != EEXIST) {
            fprintf(stderr, "defo play: cannot create %s: %s\n", shots, strerror(errno));
            rc = CLI_BAD_INPUT;
        }
        snprintf(events_out, sizeof events_out, "%s/events.txt", record);
        snprintf(info, sizeof info, "%s/play.json", record);
    } else {
        snprintf(shots, sizeof shots, ".");
    }
    if (!rc) {
        play_def pd;
        memset(&pd, 0, sizeof pd);
        pd.scene = scene;
        pd.sim = sim;
        pd.width = width;
        pd.height = height;
        pd.events_in = events;
        pd.events_out = record ? events_out : NULL;
        pd.shot_dir = shots;
        pd.info_out = record ? info : NULL;
        pd.quiet = quiet;
        /* the camera: defo run's framing (bodies and solid colliders at the
         * start, grown by half their size) */
        for (int k = 0; k < 3; k++) {
            pd.frame_lo[k] = INFINITY;
            pd.frame_hi[k] = -INFINITY;
        }
        defo_world *w = defo_simulation_world(sim);
        for (int b = 0; b < defo_simulation_num_bodies(sim); b++) {
            double lo[3], hi[3];
            if (defo_mesh_bbox(defo_body_mesh(w, defo_simulation_body(sim, b)), lo, hi) < 0)
                continue;
            for (int k = 0; k < 3; k++) {
                pd.frame_lo[k] = fmin(pd.frame_lo[k], lo[k]);
                pd.frame_hi[k] = fmax(pd.frame_hi[k], hi[k]);
            }
        }
        cli_fit_colliders(scene, pd.frame_lo, pd.frame_hi);
        for (int k = 0; k < 3; k++) {
            const double ext = pd.frame_hi[k] - pd.frame_lo[k];
            pd.frame_lo[k] -= 0.25 * ext;
            pd.frame_hi[k] += 0.25 * ext;
        }
        pd.host.ctx = &c;
        pd.host.shapes = host_shapes;
        pd.host.record = record ? host_record : NULL;
        pd.host.checkpoint = host_checkpoint;
        rc = play_run(&pd);
    }
    if (c.out) {
        run_summary_info si;
        memset(&si, 0, sizeof si);
        si.status = rc ? "failed" : "completed";
        si.frames_completed = defo_simulation_frame(sim);
        si.frames_requested = si.frames_completed;
        si.frames_run = c.frames_run;
        si.substeps = c.substeps;
        si.cg_iters = c.cg;
        si.newton_iters = c.newton;
        si.wall_s = now_s() - t_start;
        si.simulate_s = c.sim_s;
        if (run_output_summary(c.out, &si) < 0 && !rc) rc = run_fail(DEFO_ERR_IO);
        if (!rc && !quiet)
            printf("defo play: session recorded in %s/ (replay: defo play %s --events "
                   "%s/events.txt; continue as a run: defo run --resume %s)\n",
                   record, scene_path, record, record);
    }
    run_output_destroy(c.out);
    defo_simulation_destroy(sim);
    defo_scene_destroy(scene);
    return rc;
}
