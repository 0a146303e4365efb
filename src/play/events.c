/*
 * play/events.c — the input events of a `defo play` session as text, one per
 * line, each stamped with the scene frame it precedes:
 *
 *   # defo play events 1
 *   size W H                      the window's picture size at the start
 *   F press BUTTON MODS X Y       a mouse button (0 left, 1 right, 2 middle)
 *   F release BUTTON MODS X Y
 *   F move X Y                    the cursor (picture pixels from the top left)
 *   F key KEY MODS                a key (GLFW key code: letters are 'A'..'Z')
 *   F scroll DY
 *   F resize W H
 *   F end                         the session closed after frame F
 *
 * Coordinates are written with 17 significant digits, so a replay sees the
 * doubles the live session saw.  A bad line is an error naming file:line.
 */
#define _POSIX_C_SOURCE 200809L
#include "play/play_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *kind_name[] = {"press", "release", "move", "key", "scroll", "resize", "end"};

void play_event_write(FILE *f, const play_event *e) {
    if (!f) return;
    fprintf(f, "%d %s", e->frame, kind_name[e->kind]);
    switch (e->kind) {
    case PLAY_EV_PRESS:
    case PLAY_EV_RELEASE:
        fprintf(f, " %d %d %.17g %.17g", e->button, e->mods, e->x, e->y);
        break;
    case PLAY_EV_MOVE:
        fprintf(f, " %.17g %.17g", e->x, e->y);
        break;
    case PLAY_EV_KEY:
        fprintf(f, " %d %d", e->key, e->mods);
        break;
    case PLAY_EV_SCROLL:
        fprintf(f, " %.17g", e->y);
        break;
    case PLAY_EV_RESIZE:
        fprintf(f, " %d %d", e->button, e->key);
        break;
    case PLAY_EV_END:
        break;
    }
    fputc('\n', f);
    fflush(f);
}

static int bad(const char *path, int line, const char *what) {
    fprintf(stderr, "defo play: %s:%d: %s\n", path, line, what);
    return -1;
}

int play_events_read(const char *path, play_event **out, int *count, int *width, int *height) {
    *out = NULL;
    *count = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "defo play: --events %s: %s\n", path, strerror(errno));
        return -1;
    }
    char buf[512];
    int line = 0, cap = 0, n = 0, rc = 0, have_size = 0;
    play_event *ev = NULL;
    while (fgets(buf, sizeof buf, f)) {
        line++;
        char *s = buf;
        while (*s == ' ' || *s == '\t') s++;
        if (*s == '#' || *s == '\n' || *s == 0) continue;
        if (!strncmp(s, "size ", 5)) {
            if (sscanf(s + 5, "%d %d", width, height) != 2 || *width < 16 || *height < 16 ||
                *width > 8192 || *height > 8192) {
                rc = bad(path, line, "size W H: two integers in [16, 8192]");
                break;
            }
            have_size = 1;
            continue;
        }
        play_event e;
        memset(&e, 0, sizeof e);
        char kind[16];
        int used = 0;
        if (sscanf(s, "%d %15s%n", &e.frame, kind, &used) != 2 || e.frame < 0) {
            rc = bad(path, line, "expected 'FRAME KIND ...' with FRAME >= 0");
            break;
        }
        const char *a = s + used;
        int k = 0, ok = 0;
        for (; k < (int)(sizeof kind_name / sizeof kind_name[0]); k++)
            if (!strcmp(kind, kind_name[k])) break;
        e.kind = (play_event_kind)k;
        switch (e.kind) {
        case PLAY_EV_PRESS:
        case PLAY_EV_RELEASE:
            ok = sscanf(a, "%d %d %lf %lf", &e.button, &e.mods, &e.x, &e.y) == 4 && e.button >= 0 &&
                 e.button <= 2;
            break;
        case PLAY_EV_MOVE:
            ok = sscanf(a, "%lf %lf", &e.x, &e.y) == 2;
            break;
        case PLAY_EV_KEY:
            ok = sscanf(a, "%d %d", &e.key, &e.mods) == 2;
            break;
        case PLAY_EV_SCROLL:
            ok = sscanf(a, "%lf", &e.y) == 1;
            break;
        case PLAY_EV_RESIZE:
            ok = sscanf(a, "%d %d", &e.button, &e.key) == 2 && e.button >= 16 && e.key >= 16 &&
                 e.button <= 8192 && e.key <= 8192;
            break;
        case PLAY_EV_END:
            ok = 1;
            break;
        default:
            ok = 0;
        }
        if (ok && (e.kind == PLAY_EV_PRESS || e.kind == PLAY_EV_RELEASE || e.kind == PLAY_EV_MOVE ||
                   e.kind == PLAY_EV_SCROLL))
            ok = isfinite(e.x) && isfinite(e.y);
        if (!ok) {
            char msg[128];
            snprintf(msg, sizeof msg, "bad '%s' event (see the top of src/play/events.c)", kind);
            rc = bad(path, line, msg);
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            play_event *q = realloc(ev, (size_t)cap * sizeof *q);
            if (!q) {
                rc = bad(path, line, "out of memory");
                break;
            }
            ev = q;
        }
        ev[n++] = e;
    }
    fclose(f);
    if (!rc && !have_size) rc = bad(path, line, "no 'size W H' line");
    if (rc) {
        free(ev);
        return rc;
    }
    *out = ev;
    *count = n;
    return 0;
}
