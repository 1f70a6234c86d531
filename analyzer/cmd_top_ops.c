/* ggprof top-ops: ops by total time, per op and backend, with the bytes and FLOPs of the roofline model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"
#include "cli.h"
#include "analyzer_commands.h"
#include "output.h"
#include "roofline.h"
#include "trace.h"

const char ggprof_usage_top_ops[] =
    "usage: ggprof top-ops TRACE " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Ops by total time, one row per op (or fused pair, RMS_NORM+MUL) and backend: count, total, average, share\n"
    "of all recorded time, and the roofline model's figures: achieved GB/s (bytes the op really reads and\n"
    "writes, quantized blocks included), GFLOP/s, arithmetic intensity (FLOP/byte) and, for a backend whose\n"
    "roof is known, roof% (the time the op would take at the roof over the time it took).\n"
    GGPROF_HELP_OPTIONS
    "TRACE is a database written by 'ggprof record' or a version-3 JSON profile. The model and its formulas:\n"
    "docs/analysis.md.\n";

static const ggprof_col k_cols[] = {
    { "op", "op", NULL, GGPROF_COL_FLEX },
    { "backend", "backend", NULL, 0 },
    { "count", "count", NULL, 0 },
    { "total ms", "total_ms", "%.3f", 0 },
    { "avg us", "avg_us", "%.1f", 0 },
    { "time%", "time_pct", "%.1f", 0 },
    { "GB/s", "gbps", "%.2f", 0 },
    { "GFLOP/s", "gflops", "%.2f", 0 },
    { "FLOP/B", "flop_per_byte", "%.2f", 0 },
    { "roof%", "roof_pct", "%.1f", 0 },
    { "total_ns", "total_ns", NULL, GGPROF_COL_NO_TABLE },
    { "min_us", "min_us", "%.1f", GGPROF_COL_NO_TABLE },
    { "max_us", "max_us", "%.1f", GGPROF_COL_NO_TABLE },
    { "bytes", "bytes", "%.0f", GGPROF_COL_NO_TABLE },
    { "flops", "flops", "%.0f", GGPROF_COL_NO_TABLE },
    { "bound", "bound", NULL, GGPROF_COL_NO_TABLE },
};

static int by_time(const void *a, const void *b) {
    const ggprof_rl_row *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns < y->total_ns ? 1 : -1;
    int c = strcmp(x->label, y->label);
    return c ? c : strcmp(x->backend, y->backend);
}

static void roofline_cells(ggprof_table *t, const ggprof_rl_row *r) {
    double v[4];
    ggprof_rl_row_rates(r, &v[0], &v[1], &v[2], &v[3]);
    for (int i = 0; i < 4; i++) ggprof_table_real(t, v[i]);
}

int ggprof_cmd_top_ops(int argc, char **argv) {
    ggprof_rank_opts o;
    int bad = ggprof_rank_opts_parse(&o, argc, argv, "top-ops");
    if (bad) return bad;
    long n_rows = o.n_rows;
    ggprof_format fmt = (ggprof_format) o.format;
    ggprof_rl_groups g;
    ggprof_rl_row *rows;
    size_t n;
    if ((bad = ggprof_rank_rows(&o, 0, &g, &rows, &n)) != 0) return bad;
    ggprof_sort(rows, n, sizeof(*rows), by_time);
    size_t shown = n_rows == 0 || (size_t) n_rows > n ? n : (size_t) n_rows;

    ggprof_table t;
    ggprof_table_init(&t, k_cols, sizeof(k_cols) / sizeof(k_cols[0]));
    snprintf(t.coverage, sizeof(t.coverage), "%s", g.coverage);
    int any_moe = 0;
    for (size_t i = 0; i < shown; i++) {
        const ggprof_rl_row *r = &rows[i];
        any_moe |= r->mul_mat_id;
        ggprof_table_text(&t, r->label);
        ggprof_table_text(&t, r->backend);
        ggprof_table_int(&t, r->count);
        ggprof_table_real(&t, (double) r->total_ns / 1e6);
        ggprof_table_real(&t, (double) r->total_ns / (double) r->count / 1e3);
        ggprof_table_real(&t, g.all_ns ? 100.0 * (double) r->total_ns / (double) g.all_ns : NAN);
        roofline_cells(&t, r);
        ggprof_table_int(&t, (int64_t) r->total_ns);
        ggprof_table_real(&t, (double) r->min_ns / 1e3);
        ggprof_table_real(&t, (double) r->max_ns / 1e3);
        ggprof_table_real(&t, r->bytes_known ? r->bytes : NAN);
        ggprof_table_real(&t, r->flops_known ? r->flops : NAN);
        ggprof_table_text(&t, !r->has_roof ? NULL : r->roof_mem_ns >= r->roof_cmp_ns ? "memory" : "compute");
    }
    if (fmt == GGPROF_FMT_TABLE) {
        if (n == 0) {
            printf("No OP records in this trace.\n%s%s", t.coverage, t.coverage[0] ? "\n" : "");
        } else {
            printf("Top %zu of %zu ops by total time; %.3f ms in ops of %.3f ms recorded.\n", shown, n,
                   (double) g.op_ns / 1e6, (double) g.all_ns / 1e6);
        }
    }
    int rc = 0;
    if ((n || fmt != GGPROF_FMT_TABLE) && ggprof_table_write(&t, fmt, stdout, 80) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing the table failed");
    }
    if (fmt == GGPROF_FMT_TABLE && n) {
        printf("time%%: share of all recorded time (ops, copies, syncs).\n"
               "Bytes: sources read + output written, at the tensors' type sizes%s\n",
               g.types_from_trace ? "." : ",\nggml 0.23's (the trace names no types).");
        if (any_moe) printf("MUL_MAT_ID: weights of at most min(n_expert, n_expert_used x n_tokens) experts.\n");
        ggprof_roofs_describe(stdout, &o.roofs);
    }
    ggprof_table_free(&t);
    free(rows);
    ggprof_rl_groups_free(&g);
    if (fflush(stdout) != 0 || ferror(stdout)) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing to stdout failed");
    return rc;
}
