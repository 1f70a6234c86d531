/* ggprof inefficiency: op and shape groups ranked by time per output byte (the upstream profiler's ranking), with roof%. */
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

const char ggprof_usage_inefficiency[] =
    "usage: ggprof inefficiency TRACE " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "The upstream profiler's inefficiency ranking: groups of executions of one op on one backend with the same\n"
    "source and output shapes, ranked by time per output byte (ns/B: duration / bytes written; higher is\n"
    "worse). Each row also has the roofline model's GB/s, GFLOP/s and, when the backend's roof is known, roof%\n"
    "(time at the roof / time taken): a high ns/B with a low roof% is an op worth a look. The shape column\n"
    "reads 'q4_0[512,1408] f32[512,2]': the first two sources' types and shapes (CSV and JSON add the output's).\n"
    GGPROF_HELP_OPTIONS
    "TRACE is a database written by 'ggprof record' or a version-3 JSON profile. See docs/analysis.md.\n";

static const ggprof_col k_cols[] = {
    { "op", "op", NULL, GGPROF_COL_FLEX },
    { "backend", "backend", NULL, 0 },
    { "count", "count", NULL, 0 },
    { "avg us", "avg_us", "%.1f", 0 },
    { "ns/B", "ns_per_byte", "%.3f", 0 },
    { "roof%", "roof_pct", "%.1f", 0 },
    { "shape", "shape", NULL, GGPROF_COL_FLEX },
    { "out", "out_shape", NULL, GGPROF_COL_NO_TABLE },
    { "out_bytes", "out_bytes", "%.0f", GGPROF_COL_NO_TABLE },
    { "total_ns", "total_ns", NULL, GGPROF_COL_NO_TABLE },
    { "gbps", "gbps", "%.2f", GGPROF_COL_NO_TABLE },
    { "gflops", "gflops", "%.2f", GGPROF_COL_NO_TABLE },
    { "flop_per_byte", "flop_per_byte", "%.2f", GGPROF_COL_NO_TABLE },
};

static double ns_per_byte(const ggprof_rl_row *r) {
    return r->bytes_known && r->bytes_written > 0 ? (double) r->total_ns / r->bytes_written : NAN;
}

static int by_ns_per_byte(const void *a, const void *b) {
    const ggprof_rl_row *x = a, *y = b;
    double nx = ns_per_byte(x), ny = ns_per_byte(y);
    if (isnan(nx) != isnan(ny)) return isnan(nx) ? 1 : -1; /* groups that write nothing known go last */
    if (!isnan(nx) && nx != ny) return nx < ny ? 1 : -1;
    if (x->total_ns != y->total_ns) return x->total_ns < y->total_ns ? 1 : -1;
    return x->first_seq < y->first_seq ? -1 : x->first_seq > y->first_seq;
}

int ggprof_cmd_inefficiency(int argc, char **argv) {
    ggprof_rank_opts o;
    int bad = ggprof_rank_opts_parse(&o, argc, argv, "inefficiency");
    if (bad) return bad;
    long n_rows = o.n_rows;
    ggprof_format fmt = (ggprof_format) o.format;
    ggprof_rl_groups g;
    ggprof_rl_row *rows;
    size_t n;
    if ((bad = ggprof_rank_rows(&o, 1, &g, &rows, &n)) != 0) return bad;
    ggprof_sort(rows, n, sizeof(*rows), by_ns_per_byte);
    size_t shown = n_rows == 0 || (size_t) n_rows > n ? n : (size_t) n_rows;

    ggprof_table t;
    ggprof_table_init(&t, k_cols, sizeof(k_cols) / sizeof(k_cols[0]));
    snprintf(t.coverage, sizeof(t.coverage), "%s", g.coverage);
    for (size_t i = 0; i < shown; i++) {
        const ggprof_rl_row *r = &rows[i];
        double gbps, gflops, ai, roof;
        ggprof_rl_row_rates(r, &gbps, &gflops, &ai, &roof);
        ggprof_table_text(&t, r->label);
        ggprof_table_text(&t, r->backend);
        ggprof_table_int(&t, r->count);
        ggprof_table_real(&t, (double) r->total_ns / (double) r->count / 1e3);
        ggprof_table_real(&t, ns_per_byte(r));
        ggprof_table_real(&t, roof);
        ggprof_table_text(&t, r->shape);
        ggprof_table_text(&t, r->out_shape);
        ggprof_table_real(&t, r->bytes_known ? r->bytes_written / (double) r->count : NAN);
        ggprof_table_int(&t, (int64_t) r->total_ns);
        ggprof_table_real(&t, gbps);
        ggprof_table_real(&t, gflops);
        ggprof_table_real(&t, ai);
    }
    if (fmt == GGPROF_FMT_TABLE) {
        if (n == 0) {
            printf("No OP records in this trace.\n%s%s", t.coverage, t.coverage[0] ? "\n" : "");
        } else {
            printf("The %zu of %zu op and shape groups with the most time per output byte (ns/B).\n", shown, n);
        }
    }
    int rc = 0;
    if ((n || fmt != GGPROF_FMT_TABLE) && ggprof_table_write(&t, fmt, stdout, 80) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing the table failed");
    }
    if (fmt == GGPROF_FMT_TABLE && n) {
        printf("Output bytes as the model counts them (SET_ROWS, CPY: the rows written)%s.\n",
               g.types_from_trace ? "" : ";\ntype sizes are ggml 0.23's (the trace names no types)");
        ggprof_roofs_describe(stdout, &o.roofs);
    }
    ggprof_table_free(&t);
    free(rows);
    ggprof_rl_groups_free(&g);
    if (fflush(stdout) != 0 || ferror(stdout)) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing to stdout failed");
    return rc;
}
