/*
 * cli/cmd_run.c — `defo run [SCENE.json] [-o OUTDIR] [--frames N]
 * [--threads N] [--quiet] [--resume OUTDIR] [--force]`.
 *
 * Runs never mix in one folder.  OUTDIR must be absent or empty, or hold a
 * resumable run of this same scene (its scene.json byte for byte the scene's
 * canonical copy, and a checkpoint): that run is continued as --resume
 * would.  Anything else is refused (exit 2) unless --force, which first
 * removes the files defo run writes (run_output_clear: scene.pvd,
 * scene.json, stats.jsonl, summary.json, checkpoint.bin, stats.png, the
 * frame files in frames/, surface/, png/ and the caches in cache/) and keeps
 * any other file: defo never deletes what it did not write.
 *
 * Order of work, so that bad input never costs a half-done run: parse and
 * validate the scene, build every body (meshes read, generated or meshed),
 * restore the checkpoint when resuming — and only then create OUTDIR and
 * simulate.  Without SCENE the built-in demo scene runs (defo_scene_demo_text).
 *
 * Stopping (once the outputs are about to be written; before that a signal
 * ends the process the usual way, nothing being written yet).  Ctrl-C
 * (SIGINT) or SIGTERM (what batch schedulers send) sets defo_interrupt and
 * says so: the frame in progress stops at its next safe point — between
 * steps, Newton and CG iterations, well within a second — and goes back to
 * its start; every complete frame and the checkpoint after the last one are
 * kept, summary.json says "interrupted", and the resume command is printed.
 * A second request exits at once (with a message, exit 128 + signal); only
 * while files are written does it wait for that write to finish, so every
 * output file is complete or absent (they are written to a temporary name
 * and renamed) and the checkpoint still matches the frames on disk.
 * Exit: 0 done, 2 bad input (one line), 1 a failed step (e.g. a NaN refused;
 * outputs so far stay valid), 130 / 143 interrupted by SIGINT / SIGTERM
 * (128 + signal, the shell's convention, so a script can tell a run stopped
 * on purpose — resumable — from a failed one).
 *
 * Before the first frame, an integrator that needs many steps a frame (at
 * least STEPS_NOTICE; an explicit one bound by its stability limit) is
 * named with its step count and what would lower it.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *cmd = "run";

/* A frame needing at least this many steps is announced (before the first). */
#define STEPS_NOTICE 100

/* ------------------------------------------------------------ stopping
 * Signal handlers only touch lock-free atomics and sig_atomic_t, and call
 * write, _exit and defo_interrupt (a flag): all async-signal-safe. */
enum { OUT_IDLE = 0, OUT_WRITING = 1, OUT_EXITING = 2 };
static atomic_int stop_count;              /* stop requests so far */
static volatile sig_atomic_t stop_signal;  /* the first one's signal */
static volatile sig_atomic_t exit_pending; /* a second one's, during a write */
static atomic_int out_state;               /* OUT_*: files being written? */
/* several processes: a stop request ends the run at a frame's end, all
 * processes together (docs/distributed.md), never inside a frame */
static volatile sig_atomic_t frame_stops;
static char stop_msg[256], exit_msg[2600]; /* composed before any signal */
static size_t stop_len, exit_len;

static void say(const char *text, size_t n) {
    ssize_t r = write(2, text, n);
    (void)r;
}

static void exit_now(int sig) {
    say(exit_msg, exit_len);
    _exit(128 + sig);
}

static void on_stop(int sig) {
    if (atomic_fetch_add(&stop_count, 1) == 0) {
        stop_signal = sig;
        if (!frame_stops) defo_interrupt(); /* the frame in progress stops at its next safe point */
        say(stop_msg, stop_len);
        return;
    }
    int idle = OUT_IDLE;
    if (atomic_compare_exchange_strong(&out_state, &idle, OUT_EXITING)) exit_now(sig);
    exit_pending = sig; /* files are being written: exit when they are done */
    idle = OUT_IDLE;    /* ... unless that write ended meanwhile */
    if (atomic_compare_exchange_strong(&out_state, &idle, OUT_EXITING)) exit_now(sig);
}

/* Around every file write: a second stop request waits for write_end. */
static void write_begin(void) {
    int idle = OUT_IDLE;
    if (!atomic_compare_exchange_strong(&out_state, &idle, OUT_WRITING))
        for (;;) pause(); /* another thread is ending the process (exit_now) */
}

static void write_end(void) {
    atomic_store(&out_state, OUT_IDLE);
    if (!exit_pending) return;
    int idle = OUT_IDLE;
    if (atomic_compare_exchange_strong(&out_state, &idle, OUT_EXITING)) exit_now(exit_pending);
    for (;;) pause();
}

static const char *signal_name(int sig) {
    return sig == SIGTERM ? "SIGTERM" : "SIGINT";
}

/* Integrators whose frames need many steps, each with what would help
 * (defo_world_steps_per_frame: the explicit stability bound). */
static void announce_steps(defo_world *w, const defo_scene *scene, double frame_dt) {
    for (int k = 0; k < defo_world_num_integrators(w); k++) {
        int used = 0;
        for (int b = 0; b < defo_world_num_bodies(w) && !used; b++)
            used = defo_body_integrator(w, defo_world_body(w, b)) == k;
        if (!used) continue;
        const int steps = defo_world_steps_per_frame(w, k, frame_dt);
        if (steps < STEPS_NOTICE) continue;
        const defo_integrator_def *d = defo_world_integrator(w, k);
        /* the steps its time_step alone would take: more means the
         * explicit stability bound is the limit */
        const double by_time_step = ceil(frame_dt / d->time_step * (1 - 1e-12));
        if (d->kind == DEFO_INTEGRATOR_NEWMARK && steps > by_time_step)
            fprintf(stderr,
                    "defo run: integrator newmark takes %d steps a frame (step %.3g s at %g "
                    "fps, the explicit stability bound of the stiffest, smallest elements): "
                    "for fewer, use an implicit integrator (\"integrator\": {\"type\": "
                    "\"backward_euler\"}), a softer material (lower youngs) or a coarser "
                    "mesh\n",
                    steps, frame_dt / steps, defo_scene_fps(scene));
        else
            fprintf(stderr,
                    "defo run: integrator %s takes %d steps a frame (step %.3g s at %g fps): "
                    "for fewer, raise its time_step\n",
                    defo_integrator_name(d->kind), steps, frame_dt / steps, defo_scene_fps(scene));
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

static void progress(int quiet, int tty, int frame, int total, double t, long inverted,
                     double elapsed, int done_this_run, int remaining, double frame_ms) {
    if (quiet) return;
    if (tty) {
        int width = 30, fill = total ? (int)((double)width * frame / total) : width;
        char bar[64];
        for (int i = 0; i < width; i++) bar[i] = i < fill ? '#' : '-';
        bar[width] = 0;
        double eta = done_this_run ? elapsed / done_this_run * remaining : 0;
        fprintf(stderr, "\r  [%s] %d/%d  t = %.3g s  inverted %ld  ETA %.0f s   ", bar, frame,
                total, t, inverted, eta);
        if (frame == total) fputc('\n', stderr);
    } else {
        fprintf(stderr, "frame %d/%d  t = %.3g s  inverted %ld  %.0f ms\n", frame, total, t,
                inverted, frame_ms);
    }
    fflush(stderr);
}

static int run_scene(int argc, char **argv, const run_dist *d);

int cmd_run(int argc, char **argv) {
    run_dist d;
    int rc = run_dist_start(&d);
    if (rc == CLI_OK) rc = run_scene(argc, argv, &d);
    run_dist_end(&d);
    return rc;
}

static int run_scene(int argc, char **argv, const run_dist *d) {
    const char *scene_path = NULL, *outdir = NULL, *resume = NULL;
    int frames = -1, threads = 0, quiet = 0, force = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-o") || !strcmp(a, "--frames") || !strcmp(a, "--threads") ||
            !strcmp(a, "--resume")) {
            if (i + 1 >= argc) return cli_usage_error(cmd, "%s needs a value", a);
            const char *v = argv[++i];
            if (!strcmp(a, "-o"))
                outdir = v;
            else if (!strcmp(a, "--resume"))
                resume = v;
            else if (!strcmp(a, "--frames")) {
                if (parse_int(v, 1, 10000000, &frames))
                    return cli_usage_error(cmd, "--frames: '%s' is not an integer >= 1", v);
            } else if (parse_int(v, 1, 1024, &threads))
                return cli_usage_error(cmd, "--threads: '%s' is not an integer in [1, 1024]", v);
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q")) {
            quiet = 1;
        } else if (!strcmp(a, "--force")) {
            force = 1;
        } else if (a[0] == '-' && a[1]) {
            return cli_usage_error(cmd, "unknown option '%s'", a);
        } else if (scene_path) {
            return cli_usage_error(cmd, "unexpected argument '%s' (one scene per run)", a);
        } else {
            scene_path = a;
        }
    }
    if (resume && outdir && strcmp(resume, outdir))
        return cli_usage_error(cmd, "--resume %s continues in that folder; drop -o %s", resume,
                               outdir);
    if (resume && force)
        return cli_usage_error(cmd, "--resume continues a run, --force replaces it: not both");
    if (resume) outdir = resume;
    char copy_path[2200];
    if (resume && !scene_path) {
        snprintf(copy_path, sizeof copy_path, "%s/scene.json", resume);
        scene_path = copy_path;
    }
    if (!outdir) outdir = scene_path ? "defo-run" : "defo-demo";
    if (threads) defo_set_threads(threads);
    /* several processes on one machine share its cores */
    if (!threads && d->comm) {
        const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        const long cores = sysconf(_SC_NPROCESSORS_ONLN), per = local ? atol(local) : 1;
        if (cores > 0 && per > 1) defo_set_threads(cores / per > 1 ? (int)(cores / per) : 1);
    }
    /* several processes: rank 0 speaks and writes, the others keep quiet */
    const int rank0 = d->rank == 0;
    frame_stops = d->comm != NULL;
    if (!rank0) {
        quiet = 1;
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) quiet = 1;
    }

    /* 1. scene */
    defo_scene *scene = NULL;
    defo_scene_errors errs;
    defo_status s;
    if (scene_path) {
        s = defo_scene_load(scene_path, &scene, &errs);
    } else {
        const char *text = defo_scene_demo_text();
        s = defo_scene_parse(text, strlen(text), "built-in demo", NULL, &scene, &errs);
    }
    defo_status agreed = run_dist_status(d, s < 0 ? s : DEFO_OK);
    if (agreed < 0 && s >= 0) { /* another process could not read its scene */
        defo_scene_destroy(scene);
        return cli_fail(cmd, agreed);
    }
    if (s < 0) {
        if (errs.count) {
            fprintf(stderr, "defo run: %s", errs.lines[0]);
            if (errs.count > 1)
                fprintf(stderr, " (and %d more errors: see 'defo validate %s')", errs.count - 1,
                        scene_path ? scene_path : "SCENE");
            fputc('\n', stderr);
            defo_scene_errors_free(&errs);
            return s == DEFO_ERR_OUT_OF_MEMORY ? CLI_INTERNAL : CLI_BAD_INPUT;
        }
        return cli_fail(cmd, s);
    }
    int total = frames > 0 ? frames : defo_scene_frames(scene);
    if (run_dist_same_scene(d, scene, total) != CLI_OK) {
        defo_scene_destroy(scene);
        return CLI_BAD_INPUT;
    }

    /* the output folder: never two runs in one (see the top of this file);
     * rank 0 looks, every process follows */
    int clear = 0, folder_rc = CLI_OK;
    const int explicit_resume = resume != NULL;
    if (!resume && rank0) {
        char *dump = defo_scene_dump(scene);
        run_folder_state st = dump ? run_output_folder_state(outdir, dump) : RUN_FOLDER_OTHER;
        defo_free(dump);
        if (st == RUN_FOLDER_SAME_SCENE && !force) {
            resume = outdir; /* the same scene: continue it */
            if (!quiet)
                fprintf(stderr,
                        "defo run: %s holds a run of this scene: continuing it (--force starts "
                        "over)\n",
                        outdir);
        } else if (st == RUN_FOLDER_SAME_SCENE || st == RUN_FOLDER_OTHER) {
            if (!force) {
                fprintf(stderr,
                        "defo run: %s is not empty and holds no run of this scene to continue: "
                        "use --force to replace the run there (only files defo writes are "
                        "removed), or another -o\n",
                        outdir);
                folder_rc = CLI_BAD_INPUT;
            }
            clear = 1; /* once the world is built: bad input costs no files */
        }
    }
    if (run_dist_agree(d, folder_rc, NULL) != CLI_OK) {
        defo_scene_destroy(scene);
        return CLI_BAD_INPUT;
    }
    if (!explicit_resume && run_dist_flag(d, resume != NULL)) resume = outdir;

    /* 2. world */
    double t_start = now_s();
    defo_simulation *sim = NULL;
    s = defo_simulation_create(scene, &sim);
    agreed = run_dist_status(d, s < 0 ? s : DEFO_OK);
    if (agreed < 0) {
        defo_simulation_destroy(sim);
        defo_scene_destroy(scene);
        return cli_fail(cmd, agreed);
    }
    if (s > 0) fprintf(stderr, "defo run: warning: %s\n", defo_last_error());
    /* several processes: each body's elements split among them */
    s = run_dist_world(d, sim);
    if (s < 0) {
        defo_simulation_destroy(sim);
        defo_scene_destroy(scene);
        return cli_fail(cmd, s);
    }
    if (resume) {
        char ck[2200];
        snprintf(ck, sizeof ck, "%s/checkpoint.bin", resume);
        s = run_dist_status(d, defo_simulation_load_checkpoint(sim, ck));
        if (s < 0) {
            defo_simulation_destroy(sim);
            defo_scene_destroy(scene);
            return cli_fail(cmd, s);
        }
    }
    int start = defo_simulation_frame(sim);
    if (resume && start >= total) {
        if (!quiet)
            printf("defo run: %s is already at frame %d of %d: nothing to do\n", resume, start,
                   total);
        defo_simulation_destroy(sim);
        defo_scene_destroy(scene);
        return CLI_OK;
    }

    /* 3. outputs: from here on a stop request keeps what is written whole */
    int tty = isatty(2);
    char more[64] = "";
    if (frames > 0) snprintf(more, sizeof more, " --frames %d", total);
    snprintf(stop_msg, sizeof stop_msg,
             "%sdefo run: stop requested: the frame in progress ends at its next safe point (a "
             "second request exits at once)\n",
             tty && !quiet ? "\n" : "");
    stop_len = strlen(stop_msg);
    snprintf(exit_msg, sizeof exit_msg,
             "%sdefo run: second stop request: exiting now; every frame written is complete\n"
             "defo run: continue with: defo run --resume %s%s\n",
             tty && !quiet ? "\n" : "", outdir, more);
    exit_len = strlen(exit_msg);
    atomic_store(&stop_count, 0);
    atomic_store(&out_state, OUT_IDLE);
    exit_pending = 0;
    defo_interrupt_clear();
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    write_begin();
    if (clear && rank0) {
        int removed = 0;
        if (run_output_clear(outdir, &removed) != 0) {
            fprintf(stderr, "defo run: --force: cannot clear %s: %s\n", outdir, strerror(errno));
            write_end();
            sigaction(SIGINT, &old_int, NULL);
            sigaction(SIGTERM, &old_term, NULL);
            defo_simulation_destroy(sim);
            defo_scene_destroy(scene);
            return CLI_BAD_INPUT;
        }
        if (!quiet)
            fprintf(stderr, "defo run: --force: removed %d file%s of an earlier run from %s\n",
                    removed, cli_s(removed), outdir);
    }
    run_output *out = NULL;
    s = rank0 ? run_output_create(outdir, scene, sim, &out) : DEFO_OK;
    if (!s && resume && rank0) s = run_output_resume(out, start);
    if (!s && !resume && rank0) {
        char *copy = defo_scene_dump(scene);
        if (!copy || run_output_write_text(outdir, "scene.json", copy))
            s = copy ? DEFO_ERR_IO : DEFO_ERR_OUT_OF_MEMORY;
        defo_free(copy);
        if (s) s = run_error(s, "cannot write %s/scene.json", outdir);
    }
    if (!quiet) {
        long nodes = 0, elems = 0;
        for (int b = 0; b < defo_simulation_num_bodies(sim); b++) {
            const defo_mesh *m =
                defo_body_mesh(defo_simulation_world(sim), defo_simulation_body(sim, b));
            nodes += m->num_nodes;
            elems += m->num_elems;
        }
        int nbodies = defo_simulation_num_bodies(sim), ncol = defo_scene_num_colliders(scene);
        fprintf(stderr,
                "defo run: %s: %d bod%s (%ld node%s, %ld element%s), %d collider%s; %sframes "
                "%d..%d at %g fps -> %s\n",
                defo_scene_name(scene), nbodies, nbodies == 1 ? "y" : "ies", nodes, cli_s(nodes),
                elems, cli_s(elems), ncol, cli_s(ncol), resume ? "resuming, " : "", start, total,
                defo_scene_fps(scene), outdir);
        announce_steps(defo_simulation_world(sim), scene, 1.0 / defo_scene_fps(scene));
    }
    run_frame_info fi;
    memset(&fi, 0, sizeof fi);
    double sim_s = 0, out_s = 0;
    if (!s && !resume && rank0) {
        double t0 = now_s();
        fi.frame = 0;
        s = run_output_frame(out, &fi);
        out_s += now_s() - t0;
    }
    write_end();
    if (run_dist_agree(d, s < 0 ? CLI_INTERNAL : CLI_OK, NULL) != CLI_OK && s >= 0)
        s = run_error(DEFO_ERR_IO, "rank 0 could not write %s", outdir);
    if (s < 0) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        run_output_destroy(out);
        defo_simulation_destroy(sim);
        defo_scene_destroy(scene);
        return run_fail(s);
    }

    /* 4. frames */
    long long substeps = 0, cg = 0, newton = 0;
    int rc = CLI_OK, run = 0, unresolved_said = 0, unconverged_said = 0;
    char failure[1024] = "";
    double loop_start = now_s();
    for (int f = start; f < total && !run_dist_flag(d, atomic_load(&stop_count) > 0); f++) {
        double t0 = now_s();
        s = run_dist_status(d, defo_simulation_step_frame(sim));
        double t1 = now_s();
        sim_s += t1 - t0;
        if (s == DEFO_ERR_INTERRUPTED) break; /* the world is at the last frame */
        if (s < 0) {
            snprintf(failure, sizeof failure, "frame %d: %s", f + 1, defo_last_error());
            rc = s == DEFO_ERR_NUMERICAL || s == DEFO_ERR_INTERNAL || s == DEFO_ERR_OUT_OF_MEMORY
                     ? CLI_INTERNAL
                     : CLI_BAD_INPUT;
            break;
        }
        defo_world_stats(defo_simulation_world(sim), &fi.stats);
        if (s > 0 && fi.stats.unresolved > 0 && !unresolved_said++)
            fprintf(stderr, "%sdefo run: warning: frame %d: %s\n", tty && !quiet ? "\n" : "", f + 1,
                    defo_last_error());
        else if (fi.stats.not_converged > 0 && !unconverged_said++)
            /* also without a warning status: the rigid contact solve's
             * passes that reach their sweep cap are counted, not raised */
            fprintf(stderr,
                    "%sdefo run: warning: frame %d: %d solve(s) stopped short of their tolerance "
                    "(largest relative residual %g; stats.jsonl counts them in not_converged)%s%s"
                    "\n",
                    tty && !quiet ? "\n" : "", f + 1, fi.stats.not_converged, fi.stats.residual,
                    s > 0 ? ": " : "", s > 0 ? defo_last_error() : "");
        fi.newton_iters = fi.stats.newton_iterations;
        fi.splits = fi.stats.splits;
        newton += fi.newton_iters;
        fi.frame = f + 1;
        fi.wall_ms = 1e3 * (t1 - t0);
        substeps += fi.stats.steps;
        cg += fi.stats.cg_iterations;
        write_begin();
        s = rank0 ? run_output_frame(out, &fi) : DEFO_OK;
        write_end();
        out_s += now_s() - t1;
        if (run_dist_agree(d, s < 0 ? CLI_INTERNAL : CLI_OK, NULL) != CLI_OK && s >= 0)
            s = run_error(DEFO_ERR_IO, "rank 0 could not write frame %d", f + 1);
        if (s < 0) {
            snprintf(failure, sizeof failure, "frame %d: %s", f + 1, run_last_error());
            rc = CLI_INTERNAL; /* cannot write outputs */
            break;
        }
        run++;
        progress(quiet, tty, f + 1, total, defo_world_time(defo_simulation_world(sim)),
                 (long)fi.stats.inverted, now_s() - loop_start, run, total - f - 1, fi.wall_ms);
    }
    const int interrupted = run_dist_flag(d, atomic_load(&stop_count) > 0);
    if (interrupted && !stop_signal) stop_signal = SIGTERM; /* another process's request */
    int done = defo_simulation_frame(sim);
    if (failure[0]) fprintf(stderr, "%sdefo run: %s\n", tty && !quiet ? "\n" : "", failure);

    run_summary_info si;
    memset(&si, 0, sizeof si);
    si.status = rc ? "failed" : interrupted && done < total ? "interrupted" : "completed";
    si.error = failure[0] ? failure : NULL;
    si.frames_completed = done;
    si.frames_requested = total;
    si.frames_run = run;
    si.substeps = substeps;
    si.cg_iters = cg;
    si.newton_iters = newton;
    si.wall_s = now_s() - t_start;
    si.simulate_s = sim_s;
    si.output_s = out_s;
    write_begin();
    defo_status ss = rank0 ? run_output_summary(out, &si) : DEFO_OK;
    write_end();
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (ss < 0 && !rc) rc = run_fail(ss);
    int peak_frame = -1;
    int peak = rank0 ? run_output_peak_inverted(out, &peak_frame) : 0;
    defo_index final_inv = 0, final_fold = 0;
    defo_world *w = defo_simulation_world(sim);
    for (int b = 0; b < defo_world_num_bodies(w); b++) {
        defo_index bi = 0, bf = 0;
        const defo_body_id id = defo_world_body(w, b);
        if (defo_body_is_valid(w, id) && !defo_body_count_inverted(w, id, &bi)) final_inv += bi;
        if (defo_body_is_valid(w, id) && !defo_body_count_folded(w, id, &bf)) final_fold += bf;
    }
    if (interrupted && done < total && !rc) {
        if (tty && !quiet) fputc('\n', stderr); /* after the progress bar */
        fprintf(stderr,
                "defo run: interrupted after frame %d of %d (%s); every written frame is "
                "complete.\n"
                "defo run: continue with: defo run --resume %s%s\n",
                done, total, signal_name(stop_signal), outdir, more);
        rc = 128 + stop_signal;
    } else if (!rc && !quiet) {
        /* simulated time to 3 significant digits: 2 frames at 30 fps are
         * 0.0667 s (one decimal said 0.1 s) */
        printf("defo run: %d frame%s (%.3g s simulated) in %.3g s; inverted elements: peak %d "
               "(frame %d), %ld at the end\n",
               done, cli_s(done), defo_world_time(w), si.wall_s, peak, peak_frame, (long)final_inv);
        if (final_fold > 0)
            fprintf(stderr,
                    "defo run: warning: %ld curved element%s folded between %s quadrature "
                    "points at the end (det J <= 0 at a corner or edge node; no force unfolds "
                    "it): the stats' \"folded\" field says in which frames\n",
                    (long)final_fold, cli_s(final_fold), final_fold == 1 ? "its" : "their");
        const defo_scene_outputs *o = defo_scene_get_outputs(scene);
        printf("defo run: outputs in %s/:\n", outdir);
        if (o->vtu) printf("  scene.pvd + frames/frame_NNNN.vtu   open in ParaView\n");
        if (o->surface_obj) printf("  surface/frame_NNNN.obj             import in Blender\n");
        if (o->pc2 || o->mdd)
            printf("  cache/NAME.obj + NAME.%s        Blender: the OBJ + a Mesh Cache modifier\n",
                   o->pc2 ? "pc2" : "mdd");
        if (o->png)
            printf("  png/frame_NNNN.png                 pictures (defo render %s --sheet)\n",
                   outdir);
        printf("  stats.jsonl, summary.json          per-frame and total statistics\n");
    }
    run_output_destroy(out);
    defo_simulation_destroy(sim);
    defo_scene_destroy(scene);
    return rc;
}
