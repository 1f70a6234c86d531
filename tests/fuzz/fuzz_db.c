/* libFuzzer target: the trace database reader, on any SQLite file with missing or odd tables. Each input is SQL run
 * against a real trace (samples/traces/llama-dense-f16.json.gz, imported once: the path is FUZZ_DB_BASE, set by
 * fuzz.sh): it drops, renames, empties or rewrites tables, views and values (NULLs, text in number columns, huge
 * and negative ids, shapes that are not JSON...). Then every analysis command reads the result as a user's file
 * would be read: report, top-ops, top-kernels, inefficiency, rollup, diff against itself, the HTML, Chrome and
 * test-file exports, and replay's case grouping. Nothing may crash, hang or leak; a refusal is a fine answer.
 * Inputs that begin with "SQLite format 3" are taken as a database file as they are. */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analyzer_commands.h"
#include "cli.h"
#include "json_v3.h"
#include "trace.h"

static unsigned char *g_base;
static sqlite3_int64  g_base_len;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void) argc;
    (void) argv;
    const char *src = getenv("FUZZ_DB_BASE");
    char why[512];
    sqlite3 *db = src ? ggprof_json_v3_import(src, why, sizeof(why)) : NULL;
    if (!db) {
        fprintf(stderr, "fuzz_db: set FUZZ_DB_BASE to a version-3 JSON trace (%s)\n", src ? why : "unset");
        exit(1);
    }
    g_base = sqlite3_serialize(db, "main", &g_base_len, 0);
    sqlite3_close(db);
    /* The commands print their tables: to /dev/null (libFuzzer reports on stderr). */
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1), close(null);
    return g_base ? 0 : 1;
}

static void run(int (*cmd)(int, char **), int argc, const char *const *argv) {
    char *copy[16];
    for (int i = 0; i < argc && i < 15; i++) copy[i] = (char *) argv[i];
    copy[argc] = NULL;
    cmd(argc, copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    /* A file on tmpfs, not a memfd: SQLite resolves links in a path, and a memfd's link leads nowhere. */
    char path[64];
    snprintf(path, sizeof(path), "/dev/shm/ggprof-fuzz-db-%d.db", (int) getpid());
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return 0;
    bool raw = size >= 16 && memcmp(data, "SQLite format 3", 16) == 0;
    const void *bytes = raw ? (const void *) data : (const void *) g_base;
    size_t      n     = raw ? size : (size_t) g_base_len;
    ssize_t     w     = write(fd, bytes, n);
    close(fd);
    if (w != (ssize_t) n) {
        unlink(path);
        return 0;
    }
    if (!raw) {
        sqlite3 *db = NULL;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
            char *sql = malloc(size + 1);
            if (sql) {
                memcpy(sql, data, size);
                sql[size] = '\0';
                sqlite3_exec(db, sql, NULL, NULL, NULL); /* what fails to run leaves the rest as it was */
                free(sql);
            }
        }
        sqlite3_close(db);
    }
    run(ggprof_cmd_report, 2, (const char *[]) { "report", path });
    run(ggprof_cmd_top_ops, 2, (const char *[]) { "top-ops", path });
    run(ggprof_cmd_memory, 3, (const char *[]) { "memory", path, "--peak" });
    run(ggprof_cmd_top_kernels, 2, (const char *[]) { "top-kernels", path });
    run(ggprof_cmd_inefficiency, 2, (const char *[]) { "inefficiency", path });
    run(ggprof_cmd_rollup, 4, (const char *[]) { "rollup", path, "--by", "layer" });
    run(ggprof_cmd_rollup, 5, (const char *[]) { "rollup", path, "--by", "block", "--ops" });
    run(ggprof_cmd_diff, 3, (const char *[]) { "diff", path, path });
    run(ggprof_cmd_export, 4, (const char *[]) { "export", path, "--html", "/dev/null" });
    run(ggprof_cmd_export, 4, (const char *[]) { "export", path, "--chrome", "/dev/null" });
    run(ggprof_cmd_export, 4, (const char *[]) { "export", path, "--test-file", "/dev/null" });
    run(ggprof_cmd_export, 6, (const char *[]) { "export", path, "--json", "/dev/null", "--text", "/dev/null" });
    unlink(path);
    return 0;
}
