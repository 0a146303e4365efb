/*
 * cli/cli.h — the `defo` command: shared helpers of the subcommands.
 *
 * Contract (DESIGN.md "The CLI contract"): exit 0 on success, 2 on bad input
 * with a one-line reason on stderr, 1 on an internal failure.  The CLI uses
 * only the public API (include/defo/).
 */
#ifndef DEFO_CLI_H
#define DEFO_CLI_H

#include "defo/defo.h"

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

/* Print the report of `defo info` for an already loaded mesh (human or JSON).
 * reoriented: elements that had negative volume in the file. */
int cli_report_mesh(const char *path, const defo_mesh *mesh, defo_index reoriented, bool json);

#endif
