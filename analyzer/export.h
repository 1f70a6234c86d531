/* The formats `ggprof export` writes; each returns 0, or -1 with a one-line reason naming the file. */
#ifndef GGPROF_EXPORT_H
#define GGPROF_EXPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "roofline.h"

/* What the command line says to the exporters, in one struct passed to each (no exporter reads a command's
 * globals). */
typedef struct {
    /* --max-records N (chrome, html): above N records, the ops of one graph in every ceil(records / N) only, every
     * graph and split kept, said in the file and through sampled (GGPROF_MODEL_MAX_RECORDS by default; 0: all). */
    long long max_records;
    /* --html-max-records N: keep one record in every ceil(total/N) on the HTML timeline; 0 keeps all. */
    long long html_max_records;
    /* --roof, --roof-file: the roof lines of the roofline plot. */
    ggprof_roofs roofs;
    /* --min-share PCT (test file): only the cases of at least PCT% of the trace's op time. */
    double min_share;
    /* Says what a sampled export kept (the command's line on stderr); NULL says nothing. */
    void (*sampled)(const char *path, long long max_records, int64_t records, int64_t kept, int64_t every);
} ggprof_export_opts;

/* The formats without options (text, OTLP, and json_v3.h's JSON) take none: record's --profile writes them too. */

/* The upstream profiler's three-section text report (ggml_backend_sched_write_profiling_text). */
int ggprof_export_text(sqlite3 *db, const char *path, char *why, size_t why_len);

/* Chrome Trace Event JSON (Perfetto UI, chrome://tracing) and the self-contained HTML timeline (viewer/). Their
 * strings, and OTLP's, are schema/v3_format.h's ggprof_json_put with GGPROF_JSON_HTML; their shapes,
 * schema/trace_db.h's ggprof_db_ints; their records, types and backends, model.h's. */
int ggprof_export_chrome(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len);
int ggprof_export_html(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len);

/* OpenTelemetry (OTLP/JSON): one ExportTraceServiceRequest per line, llama_decode batches and graphs as spans. */
int ggprof_export_otlp(sqlite3 *db, const char *path, char *why, size_t why_len);

/* An SVG roofline plot of the trace's ops (export_roofline.c), with o->roofs. */
int ggprof_export_roofline(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len);

/* The trace's distinct op cases as test-backend-ops reads them, o->min_share and up (testcases.c). */
int ggprof_export_test_file(sqlite3 *db, const char *path, const ggprof_export_opts *o, char *why, size_t why_len);

#endif
