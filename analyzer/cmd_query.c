/* ggprof query: SQL on a trace, rows printed as the sqlite3 shell prints them by default. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "analyzer_commands.h"
#include "trace.h"
#include "v3_format.h"

const char ggprof_usage_query[] =
    "usage: ggprof query " GGPROF_HELP_SYNOPSIS "TRACE \"SQL\"\n"
    "\n"
    "Runs SQL on the trace database and prints each row with its columns separated by '|' (as the sqlite3\n"
    "shell does by default; NULL prints as nothing). A control character other than a newline or a tab, and a\n"
    "byte that is not UTF-8, is written out (\\x1b): a value never reaches the terminal as a control. Views for\n"
    "scripts: backends, graphs, splits, records, kernels (docs/trace-database.md), and the roll-ups op_layers,\n"
    "layer_time, layer_op_time, block_time, block_op_time, graph_phase, phase_time (docs/queries.md). A JSON\n"
    "profile given as TRACE is read into a temporary database first.\n";

int ggprof_cmd_query(int argc, char **argv) {
    /* No option: the table ends at TRACE, so that the SQL is taken as it is, even one that starts with "--". */
    ggprof_args a = { NULL, 0, NULL, 0, 0, NULL, 1, 0, NULL };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    if (argc - a.next != 2) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "%s; usage: ggprof query TRACE \"SQL\"",
                           argc - a.next < 2 ? "needs a trace and an SQL statement" : "too many arguments (quote the SQL)");
    }
    sqlite3 *db;
    char why[512];
    if ((rc = ggprof_trace_open(argv[a.next], &db, why, sizeof(why))) != 0) return ggprof_fail(rc, "%s", why);
    const char *sql = argv[a.next + 1];
    while (sql && *sql) {
        sqlite3_stmt *st = NULL;
        const char *tail = NULL;
        if (sqlite3_prepare_v2(db, sql, -1, &st, &tail) != SQLITE_OK) {
            rc = ggprof_fail(GGPROF_EXIT_USAGE, "SQL error: %s", sqlite3_errmsg(db));
            break;
        }
        if (!st) break; /* only whitespace or comments left */
        int step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            int n = sqlite3_column_count(st);
            for (int i = 0; i < n; i++) {
                const unsigned char *v = sqlite3_column_text(st, i);
                if (i) putchar('|');
                if (v) ggprof_text_write(stdout, (const char *) v, (size_t) sqlite3_column_bytes(st, i), 1);
            }
            putchar('\n');
        }
        if (step != SQLITE_DONE) {
            rc = ggprof_fail(GGPROF_EXIT_USAGE, "SQL error: %s", sqlite3_errmsg(db));
            sqlite3_finalize(st);
            break;
        }
        sqlite3_finalize(st);
        sql = tail;
    }
    sqlite3_close(db);
    if (fflush(stdout) != 0 && !rc) rc = GGPROF_EXIT_INTERNAL;
    return rc;
}
