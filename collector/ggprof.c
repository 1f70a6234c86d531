/* ggprof: one binary, one table of subcommands; each lives in its own file with its usage prose and its option
 * table, from which ggprof_help prints its help. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "analyzer_commands.h"
#include "collector_commands.h"
#include "device_api.h"
#include "ring.h"
#include "trace_db.h"
#include "v3_format.h"

/* ggprof's version is set in one place, the Makefile: GGPROF_VERSION, the release number, and GGPROF_GIT, what
 * git says of the checkout it was built from (`git describe --tags --always`, and -dirty for uncommitted changes;
 * empty outside one). */
#ifndef GGPROF_VERSION
#define GGPROF_VERSION "unknown"
#endif
#ifndef GGPROF_GIT
#define GGPROF_GIT ""
#endif

static const char k_usage_version[] =
    "usage: ggprof version   (or ggprof --version)\n\n"
    "Prints ggprof's version (the release, and the git checkout it was built from when it was built from one),\n"
    "then the versions of what its parts must agree on: the ring and its messages between libggprof.so and the\n"
    "collector (libggprof.so attaches only to a ring of its own version), the trace database it writes\n"
    "and the oldest one it reads, and the API libggprof.so lends its device plugins.\n";

static int cmd_version(int argc, char **argv) {
    ggprof_args a = { NULL, 0, NULL, 0, 0, "takes no arguments ('%s'); see 'ggprof version --help'", 0, 0, NULL };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    printf("ggprof %s%s%s%s\n", GGPROF_VERSION, *GGPROF_GIT ? " (git " : "", GGPROF_GIT, *GGPROF_GIT ? ")" : "");
    printf("ring and wire messages: version %d\n", GGPROF_RING_VERSION);
    printf("trace database: version %d (reads %d to %d)\n", GGPROF_DB_VERSION, GGPROF_DB_VERSION_MIN,
           GGPROF_DB_VERSION);
    printf("device plugin API: version %d\n", GGPROF_DEVICE_API_VERSION);
    return ggprof_close_output(stdout, "stdout") == 0 ? GGPROF_EXIT_OK : GGPROF_EXIT_INTERNAL;
}

static const ggprof_cmd k_cmds[] = {
    { "record", ggprof_cmd_record, "run a command with the engine injected and store its trace", ggprof_usage_record },
    { "top", ggprof_cmd_top, "live table of a running 'record --metrics': ops, tokens/s, requests, busy", ggprof_usage_top },
    { "collect", ggprof_cmd_collect, "(internal) the collector GGML_PROFILE starts", ggprof_usage_collect },
    { "merge", ggprof_cmd_merge, "put traces of a client and its RPC servers on one timeline", ggprof_usage_merge },
    { "report", ggprof_cmd_report, "print the per-op and per-backend summary of a trace", ggprof_usage_report },
    { "query", ggprof_cmd_query, "run SQL on a trace database", ggprof_usage_query },
    { "export", ggprof_cmd_export, "write a trace as JSON v3, text report, ...", ggprof_usage_export },
    { "top-ops", ggprof_cmd_top_ops, "ops by total time, with achieved GB/s, GFLOP/s and roof%", ggprof_usage_top_ops },
    { "memory", ggprof_cmd_memory, "memory held per backend and kind, compute buffers' peaks and the tensors there",
      ggprof_usage_memory },
    { "top-kernels", ggprof_cmd_top_kernels, "the longest single op executions, with their graph nodes",
      ggprof_usage_top_kernels },
    { "inefficiency", ggprof_cmd_inefficiency, "op and shape groups ranked by time per output byte",
      ggprof_usage_inefficiency },
    { "calibrate", ggprof_cmd_calibrate, "measure this CPU's memory and matmul roofs", ggprof_usage_calibrate },
    { "rollup", ggprof_cmd_rollup, "time by layer, model block, phase or per-graph latency", ggprof_usage_rollup },
    { "diff", ggprof_cmd_diff, "compare two traces op by op, beyond noise; gate CI with --fail-above", ggprof_usage_diff },
    { "replay", ggprof_cmd_replay, "run the trace's op cases alone in test-backend-ops, beside their in-situ time",
      ggprof_usage_replay },
    { "try", ggprof_cmd_try, "rerun a trace's command with each finding's change and measure what it saves",
      ggprof_usage_try },
    { "version", cmd_version, "ggprof's version, and its ring's and trace database's (also: --version)",
      k_usage_version },
};
#define N_CMDS (sizeof(k_cmds) / sizeof(k_cmds[0]))

static const ggprof_cmd *find(const char *name) {
    for (size_t i = 0; i < N_CMDS; i++) {
        if (strcmp(k_cmds[i].name, name) == 0) return &k_cmds[i];
    }
    return NULL;
}

static void usage(FILE *out) {
    fprintf(out, "usage: ggprof COMMAND [ARGS]\n\n"
                 "Profiles unmodified ggml programs (llama.cpp, whisper.cpp, node-llama-cpp...) from outside.\n\n"
                 "commands:\n");
    for (size_t i = 0; i < N_CMDS; i++) fprintf(out, "  %-14s %s\n", k_cmds[i].name, k_cmds[i].summary);
    fprintf(out, "\n'ggprof help COMMAND' or 'ggprof COMMAND --help' shows a command's options;\n"
                 "'ggprof --version' prints the versions.\n");
}

int main(int argc, char **argv) {
    if (argc < 2 || ggprof_is_help(argv[1])) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? GGPROF_EXIT_USAGE : GGPROF_EXIT_OK;
    }
    if (strcmp(argv[1], "help") == 0) {
        /* help --options CMD (not in the usage): the names of the options CMD parses, for tests/e2e/help_options.sh */
        int names = argc >= 3 && strcmp(argv[2], "--options") == 0;
        if (argc < 3 + names) {
            usage(stdout);
            return GGPROF_EXIT_OK;
        }
        const ggprof_cmd *c = find(argv[2 + names]);
        if (!c) return ggprof_fail(GGPROF_EXIT_USAGE, "unknown command '%s'; see 'ggprof help'", argv[2 + names]);
        ggprof_cmd_name = c->name;
        return ggprof_help(c, names);
    }
    const ggprof_cmd *c = find(strcmp(argv[1], "--version") == 0 ? "version" : argv[1]);
    if (!c) {
        char safe[256];
        fprintf(stderr, "ggprof: unknown command '%s'; commands are:", ggprof_text_safe(argv[1], safe, sizeof(safe)));
        for (size_t i = 0; i < N_CMDS; i++) fprintf(stderr, " %s", k_cmds[i].name);
        fputc('\n', stderr);
        return GGPROF_EXIT_USAGE;
    }
    ggprof_cmd_name = c->name;
    if (argc >= 3 && ggprof_is_help(argv[2])) return ggprof_help(c, 0);
    return c->fn(argc - 1, argv + 1);
}
