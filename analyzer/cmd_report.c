/* ggprof report: the seed's console summary of a trace, then a per-backend summary and trace health. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "trace.h"

const char ggprof_usage_report[] =
    "usage: ggprof report TRACE\n"
    "\n"
    "Prints, for each op, copy and sync kind on each backend: % of recorded time, count, total, average,\n"
    "minimum and maximum duration, bandwidth (bytes / time) and a representative shape (the upstream\n"
    "profiler's console summary); then time per backend and the trace's health: graphs, splits whose CPU\n"
    "ticks matched, records dropped. TRACE is a database written by 'ggprof record' or a version-3 JSON\n"
    "profile (.json or .json.gz), ggprof's or the upstream profiler's.\n";

static const char *const k_type3[] = { "OP  ", "COPY", "SYNC" };

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

void ggprof_print_summary(FILE *fp, const ggprof_op_stats *s) {
    fprintf(fp, "\n=== Profiling Summary ===\n");
    for (size_t i = 0; i < s->n; i++) {
        const ggprof_op_stat *o = &s->v[i];
        double pct = s->grand_total_ns ? 100.0 * (double) o->total_ns / (double) s->grand_total_ns : 0.0;
        fprintf(fp, "  [%s] backend %d %-28s %7.1f%%  count=%-6" PRId64 "  total=%8.2f ms  avg=%8.2f us  min=%8.2f us  max=%8.2f us",
               k_type3[o->type < 3 ? o->type : 0], o->backend_id, o->name, pct, o->count, (double) o->total_ns / 1e6,
               (double) o->total_ns / (double) o->count / 1e3, (double) o->min_ns / 1e3, (double) o->max_ns / 1e3);
        char bw[32];
        ggprof_fmt_bandwidth(bw, sizeof(bw), o->bytes, o->total_ns);
        if (bw[0]) fprintf(fp, "  %9s", bw);
        const int64_t *ne = o->rep_ne_src[0];
        if (ne[0] > 0 || ne[1] > 0) {
            fprintf(fp, "  [%" PRId64 " x %" PRId64, ne[0], ne[1]);
            if (ne[2] > 1) fprintf(fp, " x %" PRId64, ne[2]);
            if (ne[3] > 1) fprintf(fp, " x %" PRId64, ne[3]);
            fprintf(fp, "]");
        }
        fprintf(fp, "\n");
    }
    fprintf(fp, "  ---\n  Total: %.2f ms  (%" PRId64 " records, %zu unique ops)\n\n", (double) s->grand_total_ns / 1e6,
           s->n_records, s->n);
}

void ggprof_print_backends(FILE *fp, const ggprof_op_stats *s) {
    fprintf(fp, "=== Per-Backend Summary ===\n");
    int seen[64] = { 0 };
    for (size_t i = 0; i < s->n; i++) {
        int b = s->v[i].backend_id;
        if (b < -1 || b >= 63 || seen[b + 1]) continue;
        seen[b + 1] = 1;
        uint64_t ns[3] = { 0 }, bytes[3] = { 0 };
        int64_t  count[3] = { 0 };
        for (size_t j = 0; j < s->n; j++) {
            const ggprof_op_stat *o = &s->v[j];
            if (o->backend_id != b || o->type > 2) continue;
            ns[o->type] += o->total_ns;
            bytes[o->type] += o->bytes;
            count[o->type] += o->count;
        }
        uint64_t total = ns[0] + ns[1] + ns[2];
        fprintf(fp, "  Backend %d (%s): %.2f ms (%.1f%%)\n", b, b < 0 ? "none" : s->v[i].backend, (double) total / 1e6,
               s->grand_total_ns ? 100.0 * (double) total / (double) s->grand_total_ns : 0.0);
        static const char *const label[3] = { "OPs:  ", "COPYs:", "SYNCs:" };
        for (int t = 0; t < 3; t++) {
            if (!count[t]) continue;
            char bw[32];
            ggprof_fmt_bandwidth(bw, sizeof(bw), bytes[t], ns[t]);
            fprintf(fp, "    %s %" PRId64 " calls, %.2f ms%s%s\n", label[t], count[t], (double) ns[t] / 1e6, bw[0] ? ", " : "",
                   bw);
        }
    }
    fprintf(fp, "\n");
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
            printf("  note (pid %d): %s\n", sqlite3_column_int(st, 0), (const char *) sqlite3_column_text(st, 1));
        }
    }
    sqlite3_finalize(st);
}

int ggprof_cmd_report(int argc, char **argv) {
    if (argc != 2 || argv[1][0] == '-') {
        return ggprof_fail(GGPROF_EXIT_USAGE, "%s; usage: ggprof report TRACE",
                           argc < 2 ? "no trace given" : argv[1][0] == '-' ? "unknown option" : "one trace at a time");
    }
    sqlite3 *db;
    char why[512];
    int rc = ggprof_trace_open(argv[1], &db, why, sizeof(why));
    if (rc) return ggprof_fail(rc, "%s", why);
    ggprof_op_stats s;
    if (ggprof_op_stats_load(db, &s) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': %s", argv[1], sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc;
    }
    if (s.n_records == 0) {
        int64_t procs = scalar(db, "SELECT count(*) FROM processes", 0);
        printf("No ggml activity was seen in this trace%s.\n",
               procs ? " (ggml was loaded, but no graph was computed)" : ": no process called ggml");
    } else {
        ggprof_print_summary(stdout, &s);
        ggprof_print_backends(stdout, &s);
    }
    print_health(db);
    ggprof_op_stats_free(&s);
    sqlite3_close(db);
    return fflush(stdout) == 0 ? 0 : GGPROF_EXIT_INTERNAL;
}
