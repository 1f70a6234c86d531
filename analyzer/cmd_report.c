/* ggprof report: the seed's console summary of a trace, then a per-backend summary and trace health. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json_v3.h"
#include "store.h"
#include "trace.h"
#include "v3_format.h"

const char ggprof_usage_report[] =
    "usage: ggprof report TRACE\n"
    "\n"
    "Prints, for each op, copy and sync kind on each backend: % of recorded time, count, total, average,\n"
    "minimum and maximum duration, bandwidth (bytes / time) and a representative shape (the upstream\n"
    "profiler's console summary); then time per backend and the trace's health: graphs, splits whose CPU\n"
    "ticks matched, records dropped. TRACE is a database written by 'ggprof record' or a version-3 JSON\n"
    "profile (.json or .json.gz), ggprof's or the upstream profiler's.\n";


static int64_t scalar(sqlite3 *db, const char *sql, int64_t dflt) {
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL) {
        v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

/* record's capture windows (--delay, --duration, SIGUSR1...), from the trace's first record or graph. A trace
 * recorded start to end has one window; one of an older ggprof has no windows table: nothing is printed. */
static void print_windows(sqlite3 *db) {
    int64_t n = scalar(db, "SELECT count(*) FROM windows", 0);
    if (n == 0 || (n == 1 && scalar(db, "SELECT opened_by = 'start' AND closed_by = 'exit' FROM windows", 0))) return;
    int64_t t0 = scalar(db, "SELECT min(t) FROM (SELECT min(start_ns) AS t FROM windows UNION ALL"
                            " SELECT min(start_ns) FROM graphs)", 0);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT w.start_ns, w.end_ns, w.opened_by, w.closed_by, (SELECT count(*) FROM graphs g"
                               " WHERE g.start_ns >= w.start_ns AND g.start_ns <= w.end_ns) FROM windows w ORDER BY w.start_ns",
                           -1, &st, NULL) != SQLITE_OK) {
        return;
    }
    printf("  capture windows: %" PRId64 " (seconds from the first):\n", n);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *by = (const char *) sqlite3_column_text(st, 2), *until = (const char *) sqlite3_column_text(st, 3);
        char s1[64], s2[64];
        printf("    %9.3f to %9.3f s  %8.3f s  %6" PRId64 " graphs  (opened by %s, closed by %s)\n",
               (double) (sqlite3_column_int64(st, 0) - t0) / 1e9, (double) (sqlite3_column_int64(st, 1) - t0) / 1e9,
               (double) (sqlite3_column_int64(st, 1) - sqlite3_column_int64(st, 0)) / 1e9, (int64_t) sqlite3_column_int64(st, 4),
               by ? ggprof_text_safe(by, s1, sizeof(s1)) : "-", until ? ggprof_text_safe(until, s2, sizeof(s2)) : "-");
    }
    sqlite3_finalize(st);
}

static void print_health(sqlite3 *db) {
    int64_t graphs = scalar(db, "SELECT count(*) FROM graphs", 0);
    int64_t splits = scalar(db, "SELECT count(*) FROM splits", 0);
    int64_t ticked = scalar(db, "SELECT count(*) FROM splits WHERE ticks_matched IS NOT NULL", 0);
    int64_t matched = scalar(db, "SELECT count(*) FROM splits WHERE ticks_matched = 1", 0);
    int64_t procs = scalar(db, "SELECT count(*) FROM processes", 0);
    int64_t dropped = scalar(db, "SELECT value FROM meta WHERE key = 'dropped_records'", 0);
    printf("=== Trace ===\n");
    printf("  processes: %" PRId64 "  graphs: %" PRId64 "  splits: %" PRId64 " (CPU ticked: %" PRId64
           ", ticks matched: %" PRId64 ")  dropped records: %" PRId64 "\n",
           procs, graphs, splits, ticked, matched, dropped);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, text FROM notes", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            char safe[1024];
            const char *text = (const char *) sqlite3_column_text(st, 1);
            printf("  note (pid %d): %s\n", sqlite3_column_int(st, 0), text ? ggprof_text_safe(text, safe, sizeof(safe)) : "");
        }
    }
    sqlite3_finalize(st);
    print_windows(db);
}

int ggprof_cmd_report(int argc, char **argv) {
    const char *trace = NULL;
    ggprof_args a = { NULL, 0, &trace, 1, 0, "one trace at a time ('%s' is a second)", 0, 0 };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    if (!trace) return ggprof_fail(GGPROF_EXIT_USAGE, "no trace given; usage: ggprof report TRACE");
    sqlite3 *db;
    char why[512];
    ggprof_op_stats s;
    if (ggprof_trace_kind_of(trace) == GGPROF_TRACE_JSON) {
        /* A JSON profile is read once, straight into the statistics: no database is built. What the health
         * section reads (processes, graphs, splits, notes) a version-3 JSON does not carry: an empty trace. */
        if (ggprof_json_v3_op_stats(trace, &s, why, sizeof(why)) != 0) return ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);
        ggprof_store *empty;
        if (ggprof_store_create(&empty, "", why, sizeof(why)) != 0 || !(db = ggprof_store_finish(empty, why, sizeof(why)))) {
            ggprof_op_stats_free(&s);
            return ggprof_fail(GGPROF_EXIT_INTERNAL, "%s", why);
        }
    } else if ((rc = ggprof_trace_open(trace, &db, why, sizeof(why))) != 0) {
        return ggprof_fail(rc, "%s", why);
    } else if (ggprof_op_stats_load(db, &s) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': %s", trace, sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc;
    }
    if (s.n_records == 0) {
        int64_t procs  = scalar(db, "SELECT count(*) FROM processes", 0);
        int64_t graphs = scalar(db, "SELECT count(*) FROM graphs", 0);
        if (graphs) {
            printf("%" PRId64 " graph%s computed, but no op or copy was recorded (the level recorded, or CPU splits whose "
                   "ticks no model explained: see the health and notes below).\n", graphs, graphs == 1 ? " was" : "s were");
        } else {
            printf("No ggml activity was seen in this trace%s.\n",
                   procs ? " (ggml was loaded, but no graph was computed)" : ": no process called ggml");
        }
    } else {
        ggprof_print_summary(stdout, &s);
        ggprof_print_backends(stdout, &s);
    }
    print_health(db);
    ggprof_op_stats_free(&s);
    sqlite3_close(db);
    return fflush(stdout) == 0 ? 0 : GGPROF_EXIT_INTERNAL;
}
