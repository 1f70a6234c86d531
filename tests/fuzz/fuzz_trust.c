/* libFuzzer target: a trace from anyone is data, never code (docs/trace-database.md, "What a trace may contain").
 * Each input is SQL run against a real trace (FUZZ_DB_BASE, as fuzz_db.c), with the schema writable: it may rewrite
 * the text of any table, view, index or trigger in sqlite_master, add columns of any name, add windows, processes
 * and their ggml_lib, extreme times. Then the commands that cut a window (--from/--to, --graphs, --process,
 * --window), merge and replay read it. The oracle besides ASan and UBSan: the commands run in an empty folder, and
 * any file that appears there (an ATTACH of a relative name, a table created by a trace's SQL) aborts. replay runs
 * with PATH empty and no test-backend-ops beside this program, so it reads the trace and picks the binary, finds
 * none and runs nothing; a replay that ran a trace's path would leave its marker, the planted program of the seeds
 * (which is never there: the seeds name it only). Inputs that begin with "SQLite format 3" are the file itself. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyzer_commands.h"
#include "cli.h"
#include "collector_commands.h"
#include "fuzz_db_input.h"

static char g_dir[64];

static void remove_dir(void) { rmdir(g_dir); }

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void) argc;
    (void) argv;
    /* a capture window and a process, so that --window 1 and --process cut something */
    fuzz_db_base("fuzz_trust", "INSERT INTO windows(id, start_ns, end_ns, opened_by, closed_by) SELECT 1, min(start_ns),"
                               " max(start_ns), 'start', 'exit' FROM events;"
                               "INSERT INTO processes(pid, exe) SELECT DISTINCT pid, 'llama' FROM events");
    /* the empty folder the commands run in, and no test-backend-ops anywhere replay looks */
    snprintf(g_dir, sizeof(g_dir), "/dev/shm/ggprof-fuzz-trust-%d", (int) getpid());
    if (mkdir(g_dir, 0700) != 0 || chdir(g_dir) != 0) return 1;
    atexit(remove_dir);
    setenv("PATH", "", 1);
    return 0;
}

/* Aborts when the folder the commands ran in holds a file: a trace made ggprof write one. */
static void nothing_written(void) {
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            fprintf(stderr, "fuzz_trust: a trace made ggprof write '%s'\n", e->d_name);
            abort();
        }
    }
    if (d) closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[80], merged[80];
    snprintf(path, sizeof(path), "/dev/shm/ggprof-fuzz-trust-%d.db", (int) getpid());
    snprintf(merged, sizeof(merged), "/dev/shm/ggprof-fuzz-trust-%d-merged.db", (int) getpid());
    if (fuzz_db_write(path, data, size, true) != 0) return 0;
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && (e = readdir(d))) { /* what the making left (the input's SQL may write anything): not the readers' */
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlink(e->d_name);
    }
    if (d) closedir(d);
    /* the windows: all for report, one (from the input's length) for the rest */
    static const char *const windows[][4] = {
        { "--from", "0", "--to", "0.01" }, { "--graphs", "0-3", NULL, NULL }, { "--process", "1", NULL, NULL },
        { "--window", "1", NULL, NULL },
    };
    const char *const *wo;
    int wn;
#define WIN(...) (const char *[]) { __VA_ARGS__, wo[0], wo[1], wo[2], wo[3] }
    for (int i = 0; i < 4; i++) { /* report with each window, the others with one */
        wo = windows[i], wn = wo[2] ? 4 : 2;
        fuzz_run(ggprof_cmd_report, 2 + wn, WIN("report", path));
    }
    wo = windows[size % 4], wn = wo[2] ? 4 : 2;
    fuzz_run(ggprof_cmd_top_ops, 2 + wn, WIN("top-ops", path));
    fuzz_run(ggprof_cmd_top_kernels, 2 + wn, WIN("top-kernels", path));
    fuzz_run(ggprof_cmd_inefficiency, 2 + wn, WIN("inefficiency", path));
    fuzz_run(ggprof_cmd_rollup, 4 + wn, WIN("rollup", path, "--by", "layer"));
    fuzz_run(ggprof_cmd_diff, 3 + wn, WIN("diff", path, path));
    fuzz_run(ggprof_cmd_export, 4 + wn, WIN("export", path, "--chrome", "/dev/null"));
    fuzz_run(ggprof_cmd_export, 4 + wn, WIN("export", path, "--otlp", "/dev/null"));
    fuzz_run(ggprof_cmd_memory, 2, (const char *[]) { "memory", path });
    fuzz_run(ggprof_cmd_query, 3, (const char *[]) { "query", path, "SELECT count(*) FROM records" });
    fuzz_run(ggprof_cmd_merge, 5, (const char *[]) { "merge", "-o", merged, path, path });
    fuzz_run(ggprof_cmd_replay, 4, (const char *[]) { "replay", path, "-n", "2" });
    nothing_written();
    unlink(merged);
    unlink(path);
    return 0;
}
