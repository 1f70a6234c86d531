/* ggprof top-kernels: the longest single op executions, each joined to its graph node (graph id, node index). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "analyzer_commands.h"
#include "output.h"
#include "roofline.h"
#include "trace.h"
#include "trace_db.h"

const char ggprof_usage_top_kernels[] =
    "usage: ggprof top-kernels TRACE " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "The longest individual op executions (OP records), longest first: op (or fused pair), backend, duration,\n"
    "the graph node it computed (graph id, node index: join keys to the graphs and splits views), the output\n"
    "tensor's name, and the execution's achieved GB/s and GFLOP/s under the roofline model (docs/analysis.md)\n"
    "and, when its backend's roof is known, roof% (its time at the roof / its time).\n"
    "CSV and JSON add the start time, process, split and the output and source shapes.\n"
    GGPROF_HELP_OPTIONS
    "TRACE is a database written by 'ggprof record' or a version-3 JSON profile.\n";

static const ggprof_col k_cols[] = {
    { "op", "op", NULL, GGPROF_COL_FLEX },
    { "backend", "backend", NULL, 0 },
    { "us", "duration_us", "%.1f", 0 },
    { "graph", "graph_id", NULL, 0 },
    { "node", "node_index", NULL, 0 },
    { "tensor", "tensor", NULL, GGPROF_COL_FLEX },
    { "GB/s", "gbps", "%.2f", 0 },
    { "GFLOP/s", "gflops", "%.2f", 0 },
    { "roof%", "roof_pct", "%.1f", 0 },
    { "duration_ns", "duration_ns", NULL, GGPROF_COL_NO_TABLE },
    { "start_ns", "start_ns", NULL, GGPROF_COL_NO_TABLE },
    { "pid", "pid", NULL, GGPROF_COL_NO_TABLE },
    { "split", "split_id", NULL, GGPROF_COL_NO_TABLE },
    { "ne", "ne", NULL, GGPROF_COL_NO_TABLE },
    { "sources", "sources", NULL, GGPROF_COL_NO_TABLE },
};

int ggprof_cmd_top_kernels(int argc, char **argv) {
    ggprof_rank_opts o;
    int bad = ggprof_rank_opts_parse(&o, argc, argv, "top-kernels");
    if (bad) return bad;
    const char *trace = o.trace;
    long n_rows = o.n_rows;
    ggprof_format fmt = (ggprof_format) o.format;
    ggprof_roofs roofs = o.roofs;
    char why[512];

    sqlite3 *db;
    int rc = ggprof_trace_open_window(trace, &o.window, &db, why, sizeof(why));
    if (rc) return ggprof_fail(rc, "%s", why);
    /* Ties (equal durations, common with coarse clocks) keep the trace's order, so output is reproducible. */
    static const char sql[] =
        "SELECT e.name, " GGPROF_SQL_FUSED_LABEL("e", "n", "f") ","
        " COALESCE((SELECT b.name FROM backends b WHERE b.pid = e.pid AND b.sched_id = e.sched_id"
        "   AND b.id = e.backend_id), (SELECT b.name FROM backends b WHERE b.id = e.backend_id"
        "   ORDER BY b.pid, b.sched_id LIMIT 1), 'unknown'),"
        " e.duration_ns, e.graph_id, e.node_index, NULLIF(n.tensor_name, ''), e.start_ns, e.pid, e.split_id,"
        " n.sub_op_name, n.ne, COALESCE(n.out_type, -1), COALESCE(n.n_src, 0), n.ne_src, n.type_src, n.op_params,"
        " COALESCE(n.sub_op, -1) FROM events e LEFT JOIN nodes n ON n.pid = e.pid AND n.node_id = e.node_id"
        " LEFT JOIN nodes f ON f.pid = e.pid AND f.node_id = e.fused_node_id"
        " WHERE e.type = 0 ORDER BY e.duration_ns DESC, e.rowid LIMIT ?";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': %s", trace, sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc;
    }
    sqlite3_bind_int64(st, 1, n_rows ? (sqlite3_int64) n_rows : -1);
    ggprof_table t;
    ggprof_table_init(&t, k_cols, sizeof(k_cols) / sizeof(k_cols[0]));
    ggprof_table_coverage(&t, db);
    ggprof_rl_types types;
    int32_t types_pid = -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *) sqlite3_column_text(st, 0), *fused = (const char *) sqlite3_column_text(st, 1);
        int32_t pid = sqlite3_column_int(st, 8);
        if (pid != types_pid) {
            ggprof_rl_types_load(db, pid, &types);
            types_pid = pid;
        }
        ggprof_rl_node node;
        ggprof_rl_node_from_text(&node, name, fused, (const char *) sqlite3_column_text(st, 10),
                                 sqlite3_column_int(st, 17), (const char *) sqlite3_column_text(st, 11), sqlite3_column_int(st, 12),
                                 sqlite3_column_int(st, 13), (const char *) sqlite3_column_text(st, 14),
                                 (const char *) sqlite3_column_text(st, 15), (const char *) sqlite3_column_text(st, 16));
        ggprof_rl_cost cost;
        ggprof_rl_cost_of(&node, &types, &cost);
        double ns = (double) sqlite3_column_int64(st, 3);
        ggprof_table_text(&t, fused && strchr(fused, '+') ? fused : name ? name : "unknown");
        ggprof_table_text(&t, (const char *) sqlite3_column_text(st, 2));
        ggprof_table_real(&t, ns / 1e3);
        if (sqlite3_column_type(st, 4) == SQLITE_NULL) {
            ggprof_table_null(&t);
        } else {
            ggprof_table_int(&t, sqlite3_column_int64(st, 4));
        }
        if (sqlite3_column_int64(st, 5) < 0) {
            ggprof_table_null(&t); /* a profile without node indices (the upstream profiler's) */
        } else {
            ggprof_table_int(&t, sqlite3_column_int64(st, 5));
        }
        ggprof_table_text(&t, (const char *) sqlite3_column_text(st, 6));
        ggprof_table_real(&t, cost.bytes_known && ns > 0 ? (cost.bytes_read + cost.bytes_written) / ns : NAN);
        ggprof_table_real(&t, cost.flops_known && ns > 0 ? cost.flops / ns : NAN);
        const ggprof_roof *roof = ggprof_roofs_find(&roofs, (const char *) sqlite3_column_text(st, 2));
        ggprof_table_real(&t, roof && cost.flops_known && cost.bytes_known && ns > 0
                                  ? 100.0 * ggprof_rl_roof_ns(roof, &cost) / ns : NAN);
        ggprof_table_int(&t, sqlite3_column_int64(st, 3));
        ggprof_table_int(&t, sqlite3_column_int64(st, 7));
        ggprof_table_int(&t, pid);
        ggprof_table_int(&t, sqlite3_column_int64(st, 9));
        char ne[96], src[160];
        ggprof_fmt_ne(ne, sizeof(ne), node.ne);
        ggprof_rl_shape(src, sizeof(src), &node, &types);
        ggprof_table_text(&t, ne);
        ggprof_table_text(&t, src);
    }
    sqlite3_finalize(st);
    if (step != SQLITE_DONE) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': %s", trace, sqlite3_errmsg(db));
        ggprof_table_free(&t);
        sqlite3_close(db);
        return rc;
    }
    sqlite3_close(db);
    size_t n = ggprof_table_rows(&t);
    if (fmt == GGPROF_FMT_TABLE) {
        if (n == 0) {
            printf("No OP records in this trace.\n%s%s", t.coverage, t.coverage[0] ? "\n" : "");
        } else {
            printf("The %zu longest op executions (graph, node: the node's place in its graph).\n", n);
        }
    }
    if ((n || fmt != GGPROF_FMT_TABLE) && ggprof_table_write(&t, fmt, stdout, 80) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing the table failed");
    }
    ggprof_table_free(&t);
    if (fflush(stdout) != 0 || ferror(stdout)) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing to stdout failed");
    return rc;
}
