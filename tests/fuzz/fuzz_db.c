/* libFuzzer target: the trace database reader, on any SQLite file with missing or odd tables. Each input is SQL run
 * against a real trace (samples/traces/llama-dense-f16.json.gz, imported once: the path is FUZZ_DB_BASE, set by
 * fuzz.sh): it drops, renames, empties or rewrites tables, views and values (NULLs, text in number columns, huge
 * and negative ids, shapes that are not JSON...). Then every analysis command reads the result as a user's file
 * would be read: report, top-ops, top-kernels, inefficiency, rollup, diff against itself, the HTML, Chrome and
 * test-file exports, and replay's case grouping. Nothing may crash, hang or leak; a refusal is a fine answer.
 * Inputs that begin with "SQLite format 3" are taken as a database file as they are. */
#include "analyzer_commands.h"
#include "cli.h"
#include "fuzz_db_input.h"
#include "trace.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void) argc;
    (void) argv;
    fuzz_db_base("fuzz_db", NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    snprintf(path, sizeof(path), "/dev/shm/ggprof-fuzz-db-%d.db", (int) getpid());
    if (fuzz_db_write(path, data, size, false) != 0) return 0;
    fuzz_run(ggprof_cmd_report, 2, (const char *[]) { "report", path });
    fuzz_run(ggprof_cmd_top_ops, 2, (const char *[]) { "top-ops", path });
    fuzz_run(ggprof_cmd_memory, 3, (const char *[]) { "memory", path, "--peak" });
    fuzz_run(ggprof_cmd_top_kernels, 2, (const char *[]) { "top-kernels", path });
    fuzz_run(ggprof_cmd_inefficiency, 2, (const char *[]) { "inefficiency", path });
    fuzz_run(ggprof_cmd_rollup, 4, (const char *[]) { "rollup", path, "--by", "layer" });
    fuzz_run(ggprof_cmd_rollup, 5, (const char *[]) { "rollup", path, "--by", "block", "--ops" });
    fuzz_run(ggprof_cmd_diff, 3, (const char *[]) { "diff", path, path });
    fuzz_run(ggprof_cmd_export, 4, (const char *[]) { "export", path, "--html", "/dev/null" });
    fuzz_run(ggprof_cmd_export, 4, (const char *[]) { "export", path, "--chrome", "/dev/null" });
    fuzz_run(ggprof_cmd_export, 4, (const char *[]) { "export", path, "--test-file", "/dev/null" });
    fuzz_run(ggprof_cmd_export, 6, (const char *[]) { "export", path, "--json", "/dev/null", "--text", "/dev/null" });
    unlink(path);
    return 0;
}
