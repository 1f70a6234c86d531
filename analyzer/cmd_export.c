/* ggprof export: writes a trace in other formats; several at once, each named by its option. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "analyzer_commands.h"
#include "export.h"
#include "json_v3.h"
#include "model.h"
#include "placement.h"
#include "roofline.h"
#include "testcases.h"
#include "trace.h"

const char ggprof_usage_export[] =
    "usage: ggprof export TRACE " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Writes TRACE (a trace database or a version-3 JSON profile) in the formats asked for:\n"
    GGPROF_HELP_OPTIONS;

typedef int (*export_fn)(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len);

/* The three formats without options, in the exporters' one signature. */
static int export_text(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len) {
    (void) o;
    return ggprof_export_text(db, path, why, why_len);
}
static int export_json(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len) {
    (void) o;
    return ggprof_json_v3_export(db, path, why, why_len);
}
static int export_otlp(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len) {
    (void) o;
    return ggprof_export_otlp(db, path, why, why_len);
}

static int export_dot(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len) {
    return ggprof_placement_dot(db, path, o->dot_layer, o->dot_graph, why, why_len);
}

/* One row per format: the option that names it and the function that writes it. */
static const struct {
    const char *option;
    export_fn   fn;
    const char *arg, *help; /* for --help */
} k_formats[] = {
    { "--json", export_json, "OUT.json[.gz]",
      "the upstream profiler's version-3 JSON, one record per line (gzip if OUT ends in .gz); the upstream profiler's keys in "
      "the upstream profiler's order, then ggprof's (graph_id, node_index, pid, ...)" },
    { "--text", export_text, "OUT.txt",
      "the upstream profiler's text report: summary, per-backend summary, operations" },
    { "--chrome", ggprof_export_chrome, "OUT.json",
      "Chrome Trace Event JSON for Perfetto UI or chrome://tracing: a row per backend and one for copies per "
      "process, splits and graphs as enclosing slices, flows from copies to ops" },
    { "--html", ggprof_export_html, "OUT.html",
      "one self-contained HTML file: timeline, minimap, stats tree, search, layer x op heat map" },
    { "--roofline", ggprof_export_roofline, "OUT.svg",
      "an SVG roofline plot: ops by arithmetic intensity (FLOP/byte) and achieved GFLOP/s, log-log, each point's "
      "area its total time, with the roof lines of the backends given by --roof or --roof-file" },
    { "--test-file", ggprof_export_test_file, "OUT.txt",
      "one line per distinct op case, as ggml's 'test-backend-ops --test-file' reads it (op and types as the "
      "traced ggml's enum values, shapes, strides, op params; the tensor's name and the backend last), largest "
      "share of op time first; fused pairs and ops without an op id are listed on stdout as '# skipped' lines. "
      "See 'ggprof replay' and docs/replay.md" },
    { "--otlp", export_otlp, "OUT.jsonl",
      "OpenTelemetry traces in OTLP/JSON, one ExportTraceServiceRequest per line (what the Collector's "
      "otlpjsonfile receiver reads): each llama_decode call a trace, its span the parent of the graphs computed "
      "in it; graphs outside any call a trace each. Times on Unix time from record's clock readings; per-op "
      "detail stays in the database" },
    { "--dot", export_dot, "OUT.dot",
      "one layer of one graph as a Graphviz digraph (dot -Tsvg OUT > OUT.svg): a box per node (op, name, shape, "
      "backend, time), filled by backend, the nodes that ran off the best device outlined red with the reason, "
      "edges from sources. See docs/placement.md" },
};
#define N_FORMATS (sizeof(k_formats) / sizeof(k_formats[0]))

/* What a sampled export kept, on stderr. */
static void say_sampled(const char *path, long long max_records, int64_t records, int64_t kept, int64_t every) {
    ggprof_err("'%s': %lld records, more than --max-records %lld: it shows the records of one graph in every %lld"
               " (%lld records) and every graph and split; a window (--from/--to, --graphs) shows all of its records,"
               " --max-records 0 all of the trace's", path, (long long) records, max_records, (long long) every,
               (long long) kept);
}

int ggprof_cmd_export(int argc, char **argv) {
    const char *trace = NULL;
    const char *out[N_FORMATS] = { 0 };
    long max_records = -1;
    double min_share = 0;
    ggprof_roofs roofs = { .n = 0 };
    ggprof_window_opts window = { 0 };
    ggprof_opt opts[N_FORMATS + 7];
    for (size_t f = 0; f < N_FORMATS; f++) {
        opts[f] = (ggprof_opt){ k_formats[f].option, NULL, GGPROF_OPT_STRING, &out[f], NULL, k_formats[f].arg,
                                k_formats[f].help };
    }
    opts[N_FORMATS] = (ggprof_opt){ "--html-max-records", NULL, GGPROF_OPT_COUNT, &max_records, NULL, "N",
                                    "keep one record in every ceil(total/N) on the HTML timeline (stats stay exact)" };
    opts[N_FORMATS + 1] = (ggprof_opt){ "--roof", NULL, GGPROF_OPT_CALL, &roofs, ggprof_roofs_opt,
                                        "BACKEND=GBPS,GFLOPS[,GFLOPS_F16]",
                                        "with --roofline: a backend's memory and compute roofs (repeatable); with --html: the findings' "
                                        "below_roof, as report --roof" };
    opts[N_FORMATS + 2] = (ggprof_opt){ "--roof-file", NULL, GGPROF_OPT_CALL, &roofs, ggprof_roofs_opt, "FILE",
                                        "with --roofline and --html: roofs, one a line, as 'ggprof calibrate -o FILE' writes them" };
    opts[N_FORMATS + 3] = (ggprof_opt){ "--min-share", NULL, GGPROF_OPT_PERCENT, &min_share, NULL, "PCT",
                                        "with --test-file: only the cases of at least PCT% of the trace's op time" };
    long max_shown = -1;
    opts[N_FORMATS + 4] = (ggprof_opt){ "--max-records", NULL, GGPROF_OPT_COUNT, &max_shown, NULL, "N",
                                        "--chrome and --html of a trace of more than N records (default 1048576; 0: "
                                        "no limit) read the records of one graph in every ceil(records/N) only, and "
                                        "every graph and split, so that a long run's file opens in Perfetto UI and a "
                                        "browser: said on stderr and in the file (\"sampled\"); a WINDOW has them all" };
    long dot_layer = -1, dot_graph = -1;
    opts[N_FORMATS + 5] = (ggprof_opt){ "--layer", NULL, GGPROF_OPT_COUNT, &dot_layer, NULL, "N",
                                        "with --dot: the layer to draw (default: the lowest)" };
    opts[N_FORMATS + 6] = (ggprof_opt){ "--graph", NULL, GGPROF_OPT_COUNT, &dot_graph, NULL, "ID",
                                        "with --dot: the graph to draw (default: the first graph of the largest plan)" };
    ggprof_args a = { opts, N_FORMATS + 7, &trace, 1, 0, "one trace at a time ('%s' is a second)", 0, 0, &window };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    int n_out = 0;
    for (size_t f = 0; f < N_FORMATS; f++) n_out += out[f] != NULL;
    ggprof_export_opts eo = { .max_records      = max_shown >= 0 ? max_shown : GGPROF_MODEL_MAX_RECORDS,
                              .html_max_records = max_records >= 0 ? max_records : 0,
                              .roofs            = roofs,
                              .min_share        = min_share,
                              .dot_layer        = dot_layer > 100000 ? 100000 : (int) dot_layer,
                              .dot_graph        = dot_graph,
                              .sampled          = say_sampled };
    if (!trace) return ggprof_fail(GGPROF_EXIT_USAGE, "no trace given; usage: ggprof export TRACE --FORMAT OUT...");
    if (!n_out) return ggprof_fail(GGPROF_EXIT_USAGE, "no output asked for; see 'ggprof export --help'");
    if ((dot_layer >= 0 || dot_graph >= 0) && !out[N_FORMATS - 1]) {
        return ggprof_fail(GGPROF_EXIT_USAGE, "--layer and --graph go with --dot OUT.dot");
    }
    sqlite3 *db;
    char why[512];
    rc = ggprof_trace_open_window(trace, &window, &db, why, sizeof(why));
    if (rc) return ggprof_fail(rc, "%s", why);
    for (size_t f = 0; f < N_FORMATS && rc == 0; f++) {
        if (out[f] && k_formats[f].fn(db, out[f], &eo, why, sizeof(why)) != 0) rc = ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);
    }
    sqlite3_close(db);
    return rc;
}
