/* ggprof rollup: time by layer, model block, phase (prompt vs generation) or per-graph latency, from the views. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"
#include "cli.h"
#include "output.h"
#include "trace.h"
#include "views.h"

const char ggprof_usage_rollup[] =
    "usage: ggprof rollup TRACE --by layer|block|phase|graph [--ops] [--format table|csv|json]\n"
    "\n"
    "Rolls the records of TRACE up:\n"
    "  --by layer   per layer (llama.cpp's \"Qcur-3\", GGUF's \"blk.3.\"; '-' for records with none): OP\n"
    "               records, OP time, % of the trace's OP time, then SYNC time (barrier waits) and COPY\n"
    "               time in their own columns\n"
    "  --by block   per model block: attention, ffn, moe, norm, input, output, other, then sync and copy\n"
    "               rows; time and % of the trace's OP time\n"
    "  --by phase   prompt processing vs token generation (tokens in each graph's batch: 1 = generation):\n"
    "               graphs, tokens, graph time, time per token, tokens/s, OP, SYNC and COPY time\n"
    "  --by graph   per phase, the spread of each graph's latency per token: mean, min, median, p90, max,\n"
    "               standard deviation\n"
    "  --ops        with --by layer or block: a row per op (and per sync or copy kind) in each layer or\n"
    "               block\n"
    "  --format F   table (default), csv or json (an array of objects; '-' in a table is null)\n"
    "\n"
    "The same numbers are in the views layer_time, layer_op_time, block_time, block_op_time, graph_phase\n"
    "and phase_time of 'ggprof query'; rules and columns in docs/rollups-and-diff.md and docs/queries.md.\n";

/* A view's value as a cell: d integer, m ns shown in ms, p a real (percentage, rate), s text; NULL is empty. */
static void cell_of(ggprof_table *t, sqlite3_stmt *st, int i, char conv) {
    if (sqlite3_column_type(st, i) == SQLITE_NULL) {
        ggprof_table_null(t);
        return;
    }
    switch (conv) {
    case 'd': ggprof_table_int(t, sqlite3_column_int64(st, i)); break;
    case 'm': ggprof_table_real(t, sqlite3_column_double(st, i) / 1e6); break;
    case 'p': ggprof_table_real(t, sqlite3_column_double(st, i)); break;
    default: ggprof_table_text(t, (const char *) sqlite3_column_text(st, i));
    }
}

/* ------------------------------------------------------------ the roll-ups */

typedef struct {
    const char       *by;
    int               ops; /* --ops */
    const char       *sql;
    const char       *conv; /* per column, see cell_of */
    const ggprof_col *cols;
    size_t            ncol;
} rollup_def;

#define MS(name)  { name, name, "%.3f", 0 }
#define PCT(name) { name, name, "%.2f", 0 }
#define INT(name) { name, name, NULL, 0 }
#define TXT(name) { name, name, NULL, 0 }
static const ggprof_col k_layer_cols[] = { INT("layer"), INT("ops"), MS("op_ms"), PCT("op_pct"), MS("sync_ms"),
                                           MS("copy_ms") };
static const ggprof_col k_layer_op_cols[] = { INT("layer"), TXT("kind"), TXT("name"), INT("count"), MS("time_ms"),
                                              PCT("op_pct") };
static const ggprof_col k_block_cols[] = { TXT("block"), INT("count"), MS("time_ms"), PCT("op_pct"), INT("layers") };
static const ggprof_col k_block_op_cols[] = { TXT("block"), TXT("name"), INT("count"), MS("time_ms"), PCT("op_pct") };
static const ggprof_col k_phase_cols[] = { TXT("phase"), INT("graphs"), INT("tokens"), MS("time_ms"), MS("ms_per_token"),
                                           PCT("tokens_per_s"), MS("op_ms"), MS("sync_ms"), MS("copy_ms") };
static const ggprof_col k_graph_cols[] = { TXT("phase"), INT("graphs"), INT("tokens"), MS("mean_ms"), MS("min_ms"),
                                           MS("median_ms"), MS("p90_ms"), MS("max_ms"), MS("stddev_ms") };
#define NCOL(a) (sizeof(a) / sizeof(a[0]))

static const rollup_def k_rollups[] = {
    { "layer", 0, "SELECT layer, ops, op_ns, op_pct, sync_ns, copy_ns FROM layer_time", "ddmpmm", k_layer_cols,
      NCOL(k_layer_cols) },
    { "layer", 1,
      "SELECT layer, CASE type WHEN 0 THEN 'op' WHEN 1 THEN 'copy' ELSE 'sync' END, name, count, time_ns, op_pct"
      " FROM layer_op_time",
      "dssdmp", k_layer_op_cols, NCOL(k_layer_op_cols) },
    { "block", 0, "SELECT block, count, time_ns, op_pct, layers FROM block_time", "sdmpd", k_block_cols,
      NCOL(k_block_cols) },
    { "block", 1, "SELECT block, name, count, time_ns, op_pct FROM block_op_time", "ssdmp", k_block_op_cols,
      NCOL(k_block_op_cols) },
    { "phase", 0,
      "SELECT phase, graphs, tokens, duration_ns, ns_per_token, 1e9 / ns_per_token, op_ns, sync_ns, copy_ns"
      " FROM phase_time",
      "sddmmpmmm", k_phase_cols, NCOL(k_phase_cols) },
};
#define N_ROLLUPS (sizeof(k_rollups) / sizeof(k_rollups[0]))

static int run_view(sqlite3 *db, const rollup_def *d, ggprof_table *t) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, d->sql, -1, &st, NULL) != SQLITE_OK) return -1;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        for (size_t c = 0; c < d->ncol; c++) cell_of(t, st, (int) c, d->conv[c]);
    }
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return x < y ? -1 : x > y;
}

/* Linear interpolation between the closest ranks (numpy's default), on sorted values. */
static double quantile(const double *v, size_t n, double q) {
    double pos = q * (double) (n - 1);
    size_t lo  = (size_t) pos;
    if (lo + 1 >= n) return v[n - 1];
    return v[lo] + (pos - (double) lo) * (v[lo + 1] - v[lo]);
}

static void graph_row(ggprof_table *t, const char *phase, double *v, size_t n, long long tokens) {
    ggprof_sort(v, n, sizeof(*v), cmp_double);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    double mean = sum / (double) n;
    for (size_t i = 0; i < n; i++) sq += (v[i] - mean) * (v[i] - mean);
    ggprof_table_text(t, phase);
    ggprof_table_int(t, (int64_t) n);
    ggprof_table_int(t, tokens);
    ggprof_table_real(t, mean / 1e6);
    ggprof_table_real(t, v[0] / 1e6);
    ggprof_table_real(t, quantile(v, n, 0.5) / 1e6);
    ggprof_table_real(t, quantile(v, n, 0.9) / 1e6);
    ggprof_table_real(t, v[n - 1] / 1e6);
    ggprof_table_real(t, n > 1 ? sqrt(sq / (double) (n - 1)) / 1e6 : NAN);
}

/* Per phase, the distribution of graph latency per token (graph duration / tokens in its batch). */
static int run_graphs(sqlite3 *db, ggprof_table *t) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT phase, ns_per_token, n_tokens FROM graph_phase WHERE ns_per_token IS NOT NULL"
                           " ORDER BY CASE phase WHEN 'prompt' THEN 0 WHEN 'generation' THEN 1 ELSE 2 END",
                           -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    double *v = NULL;
    size_t n = 0, cap = 0;
    long long tokens = 0;
    char phase[32] = "";
    int step, rc = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *) sqlite3_column_text(st, 0);
        if (n && strcmp(p, phase) != 0) {
            graph_row(t, phase, v, n, tokens);
            n = 0, tokens = 0;
        }
        snprintf(phase, sizeof(phase), "%s", p);
        if (n == cap) {
            cap      = cap ? cap * 2 : 256;
            double *w = realloc(v, cap * sizeof(*w));
            if (!w) {
                rc = -1;
                break;
            }
            v = w;
        }
        v[n++] = sqlite3_column_double(st, 1);
        tokens += sqlite3_column_int64(st, 2);
    }
    if (n && rc == 0) graph_row(t, phase, v, n, tokens);
    free(v);
    sqlite3_finalize(st);
    return rc == 0 && step == SQLITE_DONE ? 0 : -1;
}

int ggprof_cmd_rollup(int argc, char **argv) {
    const char *trace = NULL, *by = NULL, *format = "table";
    int ops = 0;
    const ggprof_opt opts[] = {
        { "--by", NULL, GGPROF_OPT_STRING, &by, NULL },
        { "--format", NULL, GGPROF_OPT_STRING, &format, NULL },
        { "--ops", NULL, GGPROF_OPT_FLAG, &ops, NULL },
    };
    ggprof_args a = { opts, 3, &trace, 1, 0, "one trace at a time ('%s' is a second)", 0, 0 };
    int bad = ggprof_parse_args(argc, argv, &a);
    if (bad) return bad;
    if (!trace) return ggprof_fail(GGPROF_EXIT_USAGE, "no trace given; usage: ggprof rollup TRACE --by layer|block|phase|graph");
    if (!by) return ggprof_fail(GGPROF_EXIT_USAGE, "no --by given; expected --by layer, block, phase or graph");
    ggprof_format fmt;
    if (ggprof_format_parse(format, &fmt) != 0) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "unknown format '%s'; expected table, csv or json", format);
    }
    const rollup_def *d = NULL;
    for (size_t i = 0; i < N_ROLLUPS && !d; i++) {
        if (strcmp(k_rollups[i].by, by) == 0 && k_rollups[i].ops == ops) d = &k_rollups[i];
    }
    int is_graph = strcmp(by, "graph") == 0;
    if (!d && !is_graph) {
        if (strcmp(by, "phase") == 0) return ggprof_fail(GGPROF_EXIT_USAGE, "--ops goes with --by layer or block");
        return ggprof_fail(GGPROF_EXIT_USAGE, "unknown --by '%s'; expected layer, block, phase or graph", by);
    }
    if (is_graph && ops) return ggprof_fail(GGPROF_EXIT_USAGE, "--ops goes with --by layer or block");

    sqlite3 *db;
    char why[512];
    int rc = ggprof_trace_open(trace, &db, why, sizeof(why));
    if (rc) return ggprof_fail(rc, "%s", why);
    if (ggprof_views_create(db) != SQLITE_OK) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "creating the roll-up views on '%s': %s", trace, sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc;
    }
    ggprof_table t;
    ggprof_table_init(&t, is_graph ? k_graph_cols : d->cols, is_graph ? NCOL(k_graph_cols) : d->ncol);
    if ((is_graph ? run_graphs(db, &t) : run_view(db, d, &t)) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': %s", trace, sqlite3_errmsg(db));
    } else if (ggprof_table_write(&t, fmt, stdout, 80) != 0 || fflush(stdout) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write the output");
    }
    ggprof_table_free(&t);
    sqlite3_close(db);
    return rc;
}
