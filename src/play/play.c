/*
 * play/play.c — the `defo play` window: input, the time budget, the HUD.
 *
 * Each pass of the loop: input events (GLFW callbacks, or the events file
 * when replaying) are applied in order, each stamped with the scene frame
 * it precedes; then frames are simulated — as many as real time asks
 * (slow motion: a quarter of it) while they fit the time budget of one
 * displayed frame (a 60 Hz display's period less the last picture's time),
 * at least one when one is due; time they could not catch up is dropped, so
 * the session never falls behind, and the HUD says "slower than real time"
 * with the ratio.  Then the picture: the renderer's (view.c), the HUD line
 * drawn on it, shown in the window with glDrawPixels.
 *
 * Replaying, the loop runs one frame per pass, applying each event before
 * the frame it was stamped with: the frames (and so a --record folder) are
 * those of the live session, bit for bit, whatever the machine's speed.
 *
 * Mouse: left drag on a body = spring handle, right drag = hard handle,
 * left drag elsewhere or middle drag = orbit, wheel = zoom; a pinned handle
 * (T while dragging) stays when the button is released, clicking near it
 * takes it again.  Keys: see help_lines.
 */
#define _POSIX_C_SOURCE 200809L
#include "play/play_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef DEFO_PLAY_HAVE_WINDOW
#define GLFW_INCLUDE_NONE
#include <GL/gl.h>
#include <GLFW/glfw3.h>
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const char *help_lines[] = {
    "left drag: spring handle   right drag: hard handle   middle drag / left on empty: orbit",
    "wheel: zoom   T (while dragging): pin   U: release all handles",
    "space: pause   N: one frame   R: reset   A: anneal   M: slow motion",
    "C: stress colours   J: volume change J   W: wireframe   F: fracture on/off",
    "S: screenshot   K: checkpoint (defo run --resume)   H: this help   Q / Esc: quit",
    NULL};

/* ------------------------------------------------------------ session */
typedef struct loop_state {
    play_session ps;
    play_event *queue; /* live: events since the last pass */
    int nqueue, capqueue;
    FILE *log;
    int quit, shots, shot_pending, checkpoints;
    double sim_ms, render_ms, ratio; /* last pass; real-time ratio (smoothed) */
    double step_s, rec_ms;           /* the frames' own time; recording a frame */
    int frames_last;                 /* frames simulated in the last pass */
    char message[2600];              /* shown in the HUD for a few seconds */
    double message_until;
    char *initial; /* the state at the start (checkpoint file) for reset */
    int failed;
    play_handle grabs[256]; /* every handle taken (as last dragged), for info_out */
    int ngrabs, grab_of[PLAY_MAX_HANDLES];
} loop_state;

static void say(loop_state *L, const char *fmt, const char *arg) {
    snprintf(L->message, sizeof L->message, fmt, arg ? arg : "");
    L->message_until = now_s() + 4;
    if (!L->ps.def->quiet) fprintf(stderr, "defo play: %s\n", L->message);
}

static void release_all(play_session *ps) {
    for (int h = 0; h < PLAY_MAX_HANDLES; h++)
        if (ps->handles[h].used) play_release(ps, h);
    ps->drag = -1;
}

/* The state without the session's handles (their loads and prescribed
 * sets), as `defo run` would have it: what checkpoints hold. */
static defo_status with_handles_lifted(loop_state *L, defo_status (*fn)(loop_state *)) {
    play_session *ps = &L->ps;
    void *state = NULL;
    size_t size = 0;
    const uint64_t tag = defo_scene_hash(ps->def->scene);
    defo_status s = defo_world_serialize(ps->world, tag, &state, &size);
    if (s) return s;
    double applied[PLAY_MAX_HANDLES][3 * DEFO_ELEMENT_MAX_NODES * 4];
    int used[PLAY_MAX_HANDLES];
    const int drag = ps->drag;
    for (int h = 0; h < PLAY_MAX_HANDLES; h++) {
        memcpy(applied[h], ps->handles[h].applied, sizeof applied[h]);
        used[h] = ps->handles[h].used;
        if (used[h]) play_release(ps, h);
    }
    s = fn(L);
    defo_status r = defo_world_deserialize(ps->world, tag, state, size);
    defo_free(state);
    for (int h = 0; h < PLAY_MAX_HANDLES; h++) {
        ps->handles[h].used = used[h];
        memcpy(ps->handles[h].applied, applied[h], sizeof applied[h]);
    }
    ps->drag = drag;
    return s ? s : r;
}

static defo_status write_checkpoint(loop_state *L) {
    const play_host *h = &L->ps.def->host;
    char dir[2048] = "";
    defo_status s = h->checkpoint ? h->checkpoint(h->ctx, dir, sizeof dir) : DEFO_ERR_UNSUPPORTED;
    if (s == DEFO_OK)
        say(L, "checkpoint: defo run --resume %s continues it", dir);
    else
        say(L, "checkpoint failed: %s", dir[0] ? dir : "not available");
    return s;
}

/* One scene frame: handles, the simulation (its time added to L->step_s),
 * the recording. */
static int tick(loop_state *L) {
    play_session *ps = &L->ps;
    defo_status s = play_apply_handles(ps);
    const double t0 = now_s();
    if (!s) s = defo_simulation_step_frame(ps->def->sim);
    const double ms = 1e3 * (now_s() - t0);
    L->step_s += 1e-3 * ms;
    if (s < 0) {
        fprintf(stderr, "defo play: frame %d: %s\n", defo_simulation_frame(ps->def->sim) + 1,
                defo_last_error());
        L->failed = 1;
        return -1;
    }
    const play_host *h = &ps->def->host;
    if (h->record && h->record(h->ctx, ms) < 0) { /* the host said why */
        L->failed = 1;
        return -1;
    }
    return 0;
}

static void reset(loop_state *L) {
    play_session *ps = &L->ps;
    release_all(ps);
    defo_status s = defo_simulation_load_checkpoint(ps->def->sim, L->initial);
    if (s) {
        say(L, "reset failed: %s", defo_last_error());
        return;
    }
    const play_host *h = &ps->def->host;
    if (h->record && h->record(h->ctx, 0) < 0) L->failed = 1;
    say(L, "reset to frame 0%s", NULL);
}

static void anneal(loop_state *L) {
    /* MTPS08 §5.3: every body's current shape becomes its rest shape, its
     * plastic state reset (defo_body_anneal); a body that cannot (a shape
     * flat or inverted somewhere, a rigid body) is named and left as it is.
     * A key event: a replay anneals at the same frame. */
    defo_world *w = L->ps.world;
    int done = 0, refused = 0;
    char first[2048] = "";
    for (int i = 0; i < defo_world_num_bodies(w); i++) {
        const defo_body_id id = defo_world_body(w, i);
        if (!defo_body_is_valid(w, id)) continue;
        if (defo_body_anneal(w, id) < 0) {
            if (!refused++) snprintf(first, sizeof first, "%s", defo_last_error());
        } else {
            done++;
        }
    }
    char text[2200];
    snprintf(text, sizeof text, "annealed %d bodies (MTPS08 §5.3: the shape is the rest shape)%s%s",
             done, refused ? "; not: " : "", first);
    say(L, "%s", text);
}

/* Apply one input event (live or replayed) to the session. */
static void apply_event(loop_state *L, const play_event *e) {
    play_session *ps = &L->ps;
    switch (e->kind) {
    case PLAY_EV_MOVE:
        ps->cursor[0] = e->x;
        ps->cursor[1] = e->y;
        if (ps->drag >= 0) {
            play_drag_to(ps, ps->drag, e->x, e->y);
            if (L->grab_of[ps->drag] >= 0) L->grabs[L->grab_of[ps->drag]] = ps->handles[ps->drag];
        } else if (ps->orbit) {
            ps->rd.azimuth_deg -= 0.3 * (e->x - ps->orbit_from[0]);
            ps->rd.elevation_deg += 0.3 * (e->y - ps->orbit_from[1]);
            ps->rd.elevation_deg = fmax(-85, fmin(85, ps->rd.elevation_deg));
            ps->orbit_from[0] = e->x;
            ps->orbit_from[1] = e->y;
        }
        break;
    case PLAY_EV_PRESS: {
        ps->cursor[0] = e->x;
        ps->cursor[1] = e->y;
        play_camera(ps);
        int h = -1;
        if (e->button == 0 || e->button == 1) {
            h = play_handle_near(ps, e->x, e->y, 12);
            if (h < 0) h = play_grab(ps, e->x, e->y, e->button == 1);
        }
        if (h >= 0 && !ps->handles[h].pinned && L->ngrabs < 256) {
            L->grab_of[h] = L->ngrabs++; /* a new handle (a pinned one is taken again) */
        }
        if (h >= 0) {
            ps->drag = h;
            ps->handles[h].pinned = 0;
        } else if (e->button != 1) {
            ps->orbit = 1;
            ps->orbit_from[0] = e->x;
            ps->orbit_from[1] = e->y;
        }
        break;
    }
    case PLAY_EV_RELEASE:
        if (ps->drag >= 0 && L->grab_of[ps->drag] >= 0)
            L->grabs[L->grab_of[ps->drag]] = ps->handles[ps->drag];
        if (ps->drag >= 0 && !ps->handles[ps->drag].pinned) play_release(ps, ps->drag);
        ps->drag = -1;
        ps->orbit = 0;
        break;
    case PLAY_EV_SCROLL:
        ps->zoom *= pow(0.9, e->y);
        ps->zoom = fmax(0.05, fmin(20, ps->zoom));
        break;
    case PLAY_EV_RESIZE:
        ps->rd.width = e->button;
        ps->rd.height = e->key;
        break;
    case PLAY_EV_END:
        L->quit = 1;
        break;
    case PLAY_EV_KEY:
        switch (e->key) {
        case ' ':
            ps->paused = !ps->paused;
            break;
        case 'N':
            ps->step_once = 1;
            break;
        case 'R':
            reset(L);
            break;
        case 'A':
            anneal(L);
            break;
        case 'C':
            ps->color = ps->color == PLAY_COLOR_STRESS ? PLAY_COLOR_PLAIN : PLAY_COLOR_STRESS;
            break;
        case 'J':
            ps->color = ps->color == PLAY_COLOR_J ? PLAY_COLOR_PLAIN : PLAY_COLOR_J;
            break;
        case 'W':
            ps->wireframe = !ps->wireframe;
            break;
        case 'F': {
            ps->fracture_paused = !ps->fracture_paused;
            int any = 0;
            for (int i = 0; i < ps->nb; i++)
                if (defo_simulation_body_fractures(ps->def->sim, i)) {
                    defo_body_pause_fracture(ps->world, ps->bodies[i].id, ps->fracture_paused);
                    any = 1;
                }
            say(L, any ? "fracture %s" : "no body of this scene fractures (%s)",
                ps->fracture_paused ? "paused" : "on");
            break;
        }
        case 'M':
            ps->slow = !ps->slow;
            break;
        case 'S':
            L->shot_pending = 1;
            break;
        case 'K':
            with_handles_lifted(L, write_checkpoint);
            break;
        case 'T':
            if (ps->drag >= 0) {
                ps->handles[ps->drag].pinned = 1;
                say(L, "handle pinned (U releases every handle)%s", NULL);
            }
            break;
        case 'U':
            release_all(ps);
            break;
        case 'H':
            ps->help = !ps->help;
            break;
        case 'Q':
        case 256: /* escape */
            L->quit = 1;
            break;
        default:
            break;
        }
        break;
    }
}

/* ------------------------------------------------------------ HUD */
static void hud(loop_state *L, defo_image *img) {
    play_session *ps = &L->ps;
    const int sc = img->height >= 600 ? 2 : 1;
    const unsigned char ink[3] = {25, 25, 30}, warn[3] = {200, 30, 30};
    defo_step_stats st;
    defo_world_stats(ps->world, &st);
    defo_index inv = 0;
    for (int i = 0; i < ps->nb; i++) {
        defo_index c = 0;
        defo_body_count_inverted(ps->world, ps->bodies[i].id, &c);
        inv += c;
    }
    const defo_integrator_def *id = defo_world_integrator(ps->world, 0);
    char line[320], rec[48] = "";
    if (ps->def->host.record) snprintf(rec, sizeof rec, "  record %.1f ms", L->rec_ms);
    snprintf(line, sizeof line,
             "frame %d  t %.2f s  sim %.1f ms x%d  render %.1f ms%s  steps/frame %d  inverted "
             "%ld  %s",
             defo_simulation_frame(ps->def->sim), defo_world_time(ps->world), L->sim_ms,
             L->frames_last, L->render_ms, rec, st.steps, (long)inv,
             id ? defo_integrator_name(id->kind) : "-");
    defo_image_draw_text(img, 8 * sc, 8 * sc, sc, ink, line);
    int y = 20 * sc;
    char state[256] = "";
    if (ps->paused) strcat(state, "PAUSED  ");
    if (ps->slow) strcat(state, "slow motion x0.25  ");
    if (ps->fracture_paused) strcat(state, "fracture off  ");
    if (!ps->paused && L->ratio < 0.95) {
        char r[64];
        snprintf(r, sizeof r, "slower than real time (x%.2f)  ", L->ratio);
        defo_image_draw_text(img, 8 * sc, y, sc, warn, r);
        y += 12 * sc;
    }
    if (state[0]) {
        defo_image_draw_text(img, 8 * sc, y, sc, ink, state);
        y += 12 * sc;
    }
    if (L->message[0] && now_s() < L->message_until) {
        defo_image_draw_text(img, 8 * sc, y, sc, ink, L->message);
        y += 12 * sc;
    }
    if (ps->help)
        for (int i = 0; help_lines[i]; i++, y += 10 * sc)
            defo_image_draw_text(img, 8 * sc, y, sc, ink, help_lines[i]);
    else
        defo_image_draw_text(img, 8 * sc, img->height - 12 * sc, sc, ink, "H: help");
    /* handles: a ring at each target, a line to the grabbed point */
    const unsigned char hc[3] = {240, 160, 20}, pc[3] = {40, 110, 240};
    for (int h = 0; h < PLAY_MAX_HANDLES; h++) {
        const play_handle *hd = &ps->handles[h];
        if (!hd->used) continue;
        double tx, ty;
        if (!play_project(ps, hd->target, &tx, &ty)) continue;
        const unsigned char *c = hd->pinned ? pc : hc;
        for (int k = 0; k < 16; k++) {
            const double a0 = 2 * 3.14159265358979 * k / 16,
                         a1 = 2 * 3.14159265358979 * (k + 1) / 16;
            defo_image_draw_line(img, tx + 6 * sc * cos(a0), ty + 6 * sc * sin(a0),
                                 tx + 6 * sc * cos(a1), ty + 6 * sc * sin(a1), sc, c);
        }
    }
}

static void screenshot(loop_state *L, const defo_image *img) {
    char path[2300];
    snprintf(path, sizeof path, "%s/play_%04d.png", L->ps.def->shot_dir, L->shots++);
    if (defo_image_write_png(path, img) == DEFO_OK)
        say(L, "screenshot %s", path);
    else
        say(L, "screenshot failed: %s", defo_last_error());
}

/* ------------------------------------------------------------ window */
#ifdef DEFO_PLAY_HAVE_WINDOW
static loop_state *g_loop; /* GLFW callbacks have no user pointer of ours beyond the window's */

static void push(loop_state *L, play_event e) {
    e.frame = defo_simulation_frame(L->ps.def->sim);
    if (L->nqueue == L->capqueue) {
        int cap = L->capqueue ? 2 * L->capqueue : 64;
        play_event *q = realloc(L->queue, (size_t)cap * sizeof *q);
        if (!q) return;
        L->queue = q;
        L->capqueue = cap;
    }
    L->queue[L->nqueue++] = e;
}

static void scale_cursor(GLFWwindow *w, double *x, double *y) {
    int ww, wh, fw, fh;
    glfwGetWindowSize(w, &ww, &wh);
    glfwGetFramebufferSize(w, &fw, &fh);
    if (ww > 0 && wh > 0) {
        *x *= (double)fw / ww;
        *y *= (double)fh / wh;
    }
}

static void on_cursor(GLFWwindow *w, double x, double y) {
    if (!g_loop || g_loop->ps.def->events_in) return;
    scale_cursor(w, &x, &y);
    play_event e = {0, PLAY_EV_MOVE, 0, 0, 0, x, y};
    push(g_loop, e);
}

static void on_button(GLFWwindow *w, int button, int action, int mods) {
    if (!g_loop || g_loop->ps.def->events_in || button > 2) return;
    double x, y;
    glfwGetCursorPos(w, &x, &y);
    scale_cursor(w, &x, &y);
    /* GLFW: 0 left, 1 right, 2 middle */
    play_event e = {
        0, action == GLFW_PRESS ? PLAY_EV_PRESS : PLAY_EV_RELEASE, button, mods & 3, 0, x, y};
    push(g_loop, e);
}

static void on_key(GLFWwindow *w, int key, int scancode, int action, int mods) {
    (void)w;
    (void)scancode;
    if (!g_loop || action != GLFW_PRESS) return;
    if (g_loop->ps.def->events_in) {
        if (key == GLFW_KEY_ESCAPE || key == GLFW_KEY_Q) g_loop->quit = 1;
        return;
    }
    play_event e = {0, PLAY_EV_KEY, 0, mods & 3, key == GLFW_KEY_ESCAPE ? 256 : key, 0, 0};
    push(g_loop, e);
}

static void on_scroll(GLFWwindow *w, double dx, double dy) {
    (void)w;
    (void)dx;
    if (!g_loop || g_loop->ps.def->events_in) return;
    play_event e = {0, PLAY_EV_SCROLL, 0, 0, 0, 0, dy};
    push(g_loop, e);
}

static void on_size(GLFWwindow *w, int width, int height) {
    (void)w;
    if (!g_loop || g_loop->ps.def->events_in || width < 16 || height < 16) return;
    play_event e = {
        0, PLAY_EV_RESIZE, width > 8192 ? 8192 : width, 0, height > 8192 ? 8192 : height, 0, 0};
    push(g_loop, e);
}

static void show(GLFWwindow *win, const defo_image *img) {
    int fw, fh;
    glfwGetFramebufferSize(win, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(0.2f, 0.2f, 0.22f, 1);
    glClear(GL_COLOR_BUFFER_BIT);
    glMatrixMode(GL_PROJECTION);
    glLoadIdentity();
    glMatrixMode(GL_MODELVIEW);
    glLoadIdentity();
    glPixelStorei(GL_UNPACK_ALIGNMENT, 1);
    /* rows top to bottom: start at the top-left corner, draw downward */
    glRasterPos2f(-1, 1);
    glPixelZoom(1, -1);
    glDrawPixels(img->width, img->height, GL_RGB, GL_UNSIGNED_BYTE, img->rgb);
    glfwSwapBuffers(win);
}
#endif

/* ------------------------------------------------------------ run */
static int run_window(loop_state *L, play_event *replay, int nreplay) {
#ifndef DEFO_PLAY_HAVE_WINDOW
    (void)L;
    (void)replay;
    (void)nreplay;
    (void)tick; /* the loop's pieces, unused without a window */
    (void)apply_event;
    (void)hud;
    (void)screenshot;
    fprintf(stderr, "defo play: this defo was built without a window library (GLFW: apt-get "
                    "install libglfw3-dev, then rebuild); use defo run SCENE.json (pictures with "
                    "\"outputs\": {\"png\": ...}) and defo render OUTDIR instead\n");
    return 2;
#else
    play_session *ps = &L->ps;
    const play_def *def = ps->def;
    if (!glfwInit()) {
        const char *why = NULL;
        glfwGetError(&why);
        fprintf(stderr,
                "defo play: no display to open a window on (%s); defo play needs one (under a "
                "virtual display: xvfb-run defo play ...). Without a display, defo run SCENE.json "
                "simulates to files (\"outputs\": {\"png\": ...} for pictures) and defo render "
                "OUTDIR draws them\n",
                why ? why : "GLFW could not initialise");
        return 2;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 2);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 1);
    char title[256];
    snprintf(title, sizeof title, "defo play: %s", defo_scene_name(def->scene));
    GLFWwindow *win = glfwCreateWindow(ps->rd.width, ps->rd.height, title, NULL, NULL);
    if (!win) {
        const char *why = NULL;
        glfwGetError(&why);
        fprintf(stderr, "defo play: cannot open a window (%s); use defo run / defo render\n",
                why ? why : "no reason given");
        glfwTerminate();
        return 2;
    }
    glfwMakeContextCurrent(win);
    if (!def->quiet)
        fprintf(stderr, "defo play: %s: %d bod%s, renderer %s; H in the window for help\n",
                defo_scene_name(def->scene), ps->nb, ps->nb == 1 ? "y" : "ies",
                defo_renderer_name(ps->renderer));
    glfwSwapInterval(0); /* the loop paces itself (the time budget) */
    g_loop = L;
    glfwSetCursorPosCallback(win, on_cursor);
    glfwSetMouseButtonCallback(win, on_button);
    glfwSetKeyCallback(win, on_key);
    glfwSetScrollCallback(win, on_scroll);
    glfwSetFramebufferSizeCallback(win, on_size);

    defo_image img = {0, 0, NULL};
    const double dt = 1.0 / defo_scene_fps(def->scene), period = 1.0 / 60;
    double acc = 0, t_prev = now_s(), warned = 0;
    int ri = 0;
    L->ratio = 1;
    while (!L->quit && !L->failed && !glfwWindowShouldClose(win)) {
        glfwPollEvents();
        const double t_pass = now_s();
        int frames = 0;
        double sim_s = 0;
        L->step_s = 0;
        if (replay) {
            /* every event stamped with this frame, then (not paused) one frame */
            const int frame = defo_simulation_frame(def->sim);
            while (ri < nreplay && replay[ri].frame == frame && !L->quit) {
                play_event_write(L->log, &replay[ri]);
                apply_event(L, &replay[ri++]);
            }
            if (L->quit || (ri >= nreplay && ps->paused && !ps->step_once)) break;
            if (ps->paused && !ps->step_once && ri < nreplay && replay[ri].frame != frame) {
                fprintf(stderr,
                        "defo play: %s: paused at frame %d but the next event is for frame %d\n",
                        def->events_in, frame, replay[ri].frame);
                L->failed = 2;
                break;
            }
            if (!ps->paused || ps->step_once) {
                const double t0 = now_s();
                if (tick(L) < 0) break;
                sim_s += now_s() - t0;
                frames = 1;
                ps->step_once = 0;
            }
            if (ri >= nreplay && !L->quit) L->quit = 1; /* the events ended: so does the session */
        } else {
            for (int i = 0; i < L->nqueue && !L->quit; i++) {
                play_event_write(L->log, &L->queue[i]);
                apply_event(L, &L->queue[i]);
            }
            L->nqueue = 0;
            const double real = t_pass - t_prev;
            t_prev = t_pass;
            if (!ps->paused) acc += real * (ps->slow ? 0.25 : 1.0);
            const double budget = fmax(period - 1e-3 * L->render_ms, 0.4 * period);
            while (!L->failed && (ps->step_once || (!ps->paused && acc >= dt))) {
                if (frames > 0 && now_s() - t_pass > budget) break;
                const double t0 = now_s();
                if (tick(L) < 0) break;
                sim_s += now_s() - t0;
                frames++;
                if (ps->step_once)
                    ps->step_once = 0;
                else
                    acc -= dt;
            }
            /* never behind: what did not fit is dropped (and said) */
            if (!ps->paused && real > 0) {
                const double want = real * (ps->slow ? 0.25 : 1.0);
                const double got = frames * dt;
                const double r = want > 0 ? fmin(1.0, (got + (acc < dt ? acc : 0)) / want) : 1;
                L->ratio = 0.9 * L->ratio + 0.1 * r;
                if (acc > dt) acc = fmod(acc, dt);
                if (L->ratio < 0.8 && !warned && !def->quiet) {
                    fprintf(stderr,
                            "defo play: this scene runs slower than real time here (x%.2f): "
                            "%.1f ms a frame of %.1f ms\n",
                            L->ratio, frames ? 1e3 * sim_s / frames : 0.0, 1e3 * dt);
                    warned = 1;
                }
            }
        }
        if (L->failed) break;
        L->frames_last = frames;
        if (frames) {
            L->sim_ms = 1e3 * L->step_s / frames;
            L->rec_ms = 1e3 * (sim_s - L->step_s) / frames;
        }
        /* the picture */
        const double r0 = now_s();
        defo_image_free(&img);
        defo_status s = play_bodies_update(ps);
        if (!s) s = play_draw(ps, &img);
        if (s) {
            fprintf(stderr, "defo play: drawing: %s\n", defo_last_error());
            L->failed = 1;
            break;
        }
        L->render_ms = 1e3 * (now_s() - r0);
        hud(L, &img);
        if (L->shot_pending) {
            screenshot(L, &img);
            L->shot_pending = 0;
        }
        show(win, &img);
        if (!replay && ps->paused && !L->nqueue) glfwWaitEventsTimeout(0.05);
    }
    /* the session's end, for a replay of it */
    play_event end = {defo_simulation_frame(def->sim), PLAY_EV_END, 0, 0, 0, 0, 0};
    if (!replay) play_event_write(L->log, &end);
    defo_image_free(&img);
    g_loop = NULL;
    glfwDestroyWindow(win);
    glfwTerminate();
    return L->failed == 2 ? 2 : L->failed ? 1 : 0;
#endif
}

/* The camera of the last picture and every handle taken, for tools and
 * tests: a recorded frame's node projects to a pixel with view_proj. */
static void write_info(loop_state *L, const char *path) {
    char tmp[2300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    const play_session *ps = &L->ps;
    fprintf(f, "{\"width\": %d, \"height\": %d, \"frame\": %d,\n \"view_proj\": [", ps->rd.width,
            ps->rd.height, defo_simulation_frame(ps->def->sim));
    for (int k = 0; k < 16; k++) fprintf(f, "%s%.17g", k ? ", " : "", ps->vp[k]);
    fprintf(f, "],\n \"eye\": [%.17g, %.17g, %.17g],\n \"handles\": [", ps->eye[0], ps->eye[1],
            ps->eye[2]);
    for (int g = 0; g < L->ngrabs; g++) {
        const play_handle *h = &L->grabs[g];
        fprintf(f, "%s\n  {\"body\": %d, \"hard\": %d, \"frame\": %d, \"nodes\": [", g ? "," : "",
                h->body, h->hard, h->frame);
        for (int a = 0; a < h->nn; a++) fprintf(f, "%s%ld", a ? ", " : "", (long)h->node[a]);
        fprintf(f, "], \"grab\": [%.17g, %.17g, %.17g], \"target\": [%.17g, %.17g, %.17g]}",
                h->grab[0], h->grab[1], h->grab[2], h->target[0], h->target[1], h->target[2]);
    }
    fprintf(f, "]}\n");
    if (fclose(f) != 0 || rename(tmp, path) != 0) remove(tmp);
}

int play_run(const play_def *def) {
    loop_state *L = calloc(1, sizeof *L);
    if (!L) return 1;
    play_session *ps = &L->ps;
    ps->def = def;
    ps->world = defo_simulation_world(def->sim);
    ps->drag = -1;
    ps->zoom = 1;
    for (int h = 0; h < PLAY_MAX_HANDLES; h++) L->grab_of[h] = -1;
    ps->rd = defo_default_render_def();
    ps->rd.width = def->width;
    ps->rd.height = def->height;
    ps->rd.fast = 1;
    memcpy(ps->frame_lo, def->frame_lo, sizeof ps->frame_lo);
    memcpy(ps->frame_hi, def->frame_hi, sizeof ps->frame_hi);
    play_event *replay = NULL;
    int nreplay = 0, rc = 0;
    if (def->events_in) {
        int w = def->width, h = def->height;
        if (play_events_read(def->events_in, &replay, &nreplay, &w, &h) != 0) {
            free(L);
            return 2;
        }
        ps->rd.width = w;
        ps->rd.height = h;
    }
    if (def->events_out) {
        L->log = fopen(def->events_out, "w");
        if (!L->log) {
            fprintf(stderr, "defo play: cannot write %s: %s\n", def->events_out, strerror(errno));
            free(replay);
            free(L);
            return 1;
        }
        fprintf(L->log, "# defo play events 1 (src/play/events.c); scene %s\nsize %d %d\n",
                defo_scene_name(def->scene), ps->rd.width, ps->rd.height);
    }
    /* the start, for R (reset): a checkpoint file beside the screenshots */
    char tmp[2300];
    snprintf(tmp, sizeof tmp, "%s/.defo-play-start-%ld.bin", def->shot_dir, (long)getpid());
    L->initial = tmp;
    defo_status s = defo_simulation_save_checkpoint(def->sim, tmp);
    if (s) {
        fprintf(stderr, "defo play: %s\n", defo_last_error());
        rc = 1;
    }
    if (!rc && defo_renderer_create(DEFO_RENDER_AUTO, &ps->renderer) < 0) {
        fprintf(stderr, "defo play: %s\n", defo_last_error());
        rc = 1;
    }
    if (!rc && play_bodies_create(ps) != DEFO_OK) {
        fprintf(stderr, "defo play: %s\n", defo_last_error());
        rc = 1;
    }
    if (!rc) rc = run_window(L, replay, nreplay);
    /* the end state as a checkpoint `defo run --resume` continues (recording) */
    if (rc == 0 && def->host.record && def->host.checkpoint)
        if (with_handles_lifted(L, write_checkpoint) != DEFO_OK) rc = 1;
    remove(tmp);
    if (def->info_out && rc == 0) write_info(L, def->info_out);
    if (L->log) fclose(L->log);
    play_bodies_destroy(ps);
    defo_renderer_destroy(ps->renderer);
    free(L->queue);
    free(replay);
    free(L);
    return rc;
}
