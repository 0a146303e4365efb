/*
 * cli/main.c — `defo` entry point: dispatch to subcommands, shared error
 * reporting and the small JSON writer.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, execv */
#include "cli/cli.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *usage_text =
    "usage: defo COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  info MESH [--json]        counts, volume, bounding box, quality, inverted elements,\n"
    "                            boundary faces, components\n"
    "  convert IN OUT [--ascii] [--msh-version 2|4] [--compress]\n"
    "                            convert between .node/.ele, .msh, .vtu, .vtk, .obj\n"
    "                            (--compress: zlib-compressed .vtu)\n"
    "                            (surfaces .stl .off .ply are read)\n"
    "  demo [-o OUTDIR]          generate a mesh, write it for ParaView and Blender, report it\n"
    "  mesh SURFACE -o OUT [--cells N|--size H] [--order 1|2] [--json]\n"
    "                            tet mesh (.vtu .msh .node) from a closed surface\n"
    "  render INPUT -o OUT.png [--frame N] [--color FIELD] [--size WxH] [--sheet] [--video]\n"
    "                            picture of a .vtu, .pvd or output folder (headless)\n"
    "  run [SCENE.json] [-o OUTDIR] [--frames N] [--threads N] [--quiet] [--resume OUTDIR]\n"
    "      [--force]             simulate a scene (without SCENE: the built-in demo) and write\n"
    "                            .pvd/.vtu frames, .obj surfaces, PNGs, stats.jsonl, "
    "summary.json;\n"
    "                            an OUTDIR holding another run is refused (--force replaces it)\n"
    "  play SCENE.json [--size WxH] [--record OUTDIR] [--events FILE] [--force]\n"
    "                            the scene live in a window: drag bodies with the mouse\n"
    "                            (H in the window for the keys); --record writes the session\n"
    "                            like run plus its events, --events replays them\n"
    "  plot OUTDIR [-o OUT.png]  energies, inverted elements, volume ratio, iterations and ms\n"
    "                            per frame of a run over time (default OUTDIR/stats.png)\n"
    "  validate SCENE.json       check a scene file; every error with its JSON path\n"
    "  --version                 print the version\n"
    "\n"
    "exit status: 0 success, 2 bad input (reason on stderr), 1 internal failure\n";

int cli_fail(const char *cmd, defo_status status) {
    const char *msg = defo_last_error();
    fprintf(stderr, "defo %s: %s\n", cmd, msg[0] ? msg : defo_status_name(status));
    if (status == DEFO_ERR_INTERNAL || status == DEFO_ERR_OUT_OF_MEMORY) return CLI_INTERNAL;
    return CLI_BAD_INPUT;
}

const char *cli_s(long long n) {
    return n == 1 ? "" : "s";
}

int cli_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "defo %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'defo --help')\n");
    va_end(ap);
    return CLI_BAD_INPUT;
}

/* ------------------------------------------------------------ JSON writer */
static void json_sep(cli_json *j, const char *key) {
    if (j->depth > 0) {
        if (j->need_comma[j->depth]) fputc(',', j->f);
        j->need_comma[j->depth] = true;
        fputc('\n', j->f);
        for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
    }
    if (key) {
        fputc('"', j->f);
        fputs(key, j->f);
        fputs("\": ", j->f);
    }
}

static void json_open(cli_json *j, const char *key, char c) {
    json_sep(j, key);
    fputc(c, j->f);
    if (j->depth < 31) j->depth++;
    j->need_comma[j->depth] = false;
}

static void json_close(cli_json *j, char c) {
    bool had = j->need_comma[j->depth];
    if (j->depth > 0) j->depth--;
    if (had) {
        fputc('\n', j->f);
        for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
    }
    fputc(c, j->f);
    if (j->depth == 0) fputc('\n', j->f);
}

void cli_json_begin_object(cli_json *j, const char *key) {
    json_open(j, key, '{');
}
void cli_json_end_object(cli_json *j) {
    json_close(j, '}');
}
void cli_json_begin_array(cli_json *j, const char *key) {
    json_open(j, key, '[');
}
void cli_json_end_array(cli_json *j) {
    json_close(j, ']');
}

void cli_json_number(cli_json *j, const char *key, double v) {
    json_sep(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.17g", v);
    else
        fputs("null", j->f);
}

void cli_json_int(cli_json *j, const char *key, long long v) {
    json_sep(j, key);
    fprintf(j->f, "%lld", v);
}

void cli_json_null(cli_json *j, const char *key) {
    json_sep(j, key);
    fputs("null", j->f);
}

void cli_json_string(cli_json *j, const char *key, const char *s) {
    json_sep(j, key);
    fputc('"', j->f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(j->f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(j->f, "\\u%04x", *p);
        else
            fputc(*p, j->f);
    }
    fputc('"', j->f);
}

/* OpenMP's runtime reads its wait policy once, when it loads (before main).
 * Its default lets a waiting thread spin ~300 000 pauses (~10 ms here)
 * before it sleeps: with other processes on the cores, the spinning thread
 * holds a core the thread it waits for needs, and a parallel region can wait
 * a time slice (bench_threads, every loop threaded: 7-28x slower than one
 * thread).  Unless the user chose a policy, defo restarts itself once with a
 * short spin (~35 µs, enough to bridge the serial gaps between the regions
 * of a CG iteration): the thread governor's trials then cost little on a
 * loaded machine (2-thread/1-thread ratio with 2 busy processes: up to 1.23
 * with the default spin, at most 1.05 with this one). */
static void short_spin(char **argv) {
#if defined(_OPENMP) && defined(__linux__)
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("GOMP_SPINCOUNT", "1000", 1) != 0) return;
    execv("/proc/self/exe", argv);
    unsetenv("GOMP_SPINCOUNT"); /* not restarted: the default policy stays */
#else
    (void)argv;
#endif
}

int main(int argc, char **argv) {
    if (argc >= 2 &&
        (!strcmp(argv[1], "run") || !strcmp(argv[1], "mesh") || !strcmp(argv[1], "play")))
        short_spin(argv);
    if (argc < 2) {
        fputs(usage_text, stderr);
        return CLI_BAD_INPUT;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "version")) {
        printf("defo %s\n", defo_version());
        return CLI_OK;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage_text, stdout);
        return CLI_OK;
    }
    if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "convert")) return cmd_convert(argc - 1, argv + 1);
    if (!strcmp(cmd, "demo")) return cmd_demo(argc - 1, argv + 1);
    if (!strcmp(cmd, "render")) return cmd_render(argc - 1, argv + 1);
    if (!strcmp(cmd, "play")) return cmd_play(argc - 1, argv + 1);
    if (!strcmp(cmd, "mesh")) return cmd_mesh(argc - 1, argv + 1);
    if (!strcmp(cmd, "plot")) return cmd_plot(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "validate")) return cmd_validate(argc - 1, argv + 1);
    fprintf(
        stderr,
        "defo: unknown command '%s' (commands: run, play, validate, info, convert, mesh, render, "
        "plot, demo; see 'defo --help')\n",
        cmd);
    return CLI_BAD_INPUT;
}
