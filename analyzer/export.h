/* The formats `ggprof export` writes; each returns 0, or -1 with a one-line reason naming the file. */
#ifndef GGPROF_EXPORT_H
#define GGPROF_EXPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "roofline.h"

/* The upstream profiler's three-section text report (ggml_backend_sched_write_profiling_text). */
int ggprof_export_text(sqlite3 *db, const char *path, char *why, size_t why_len);

/* Chrome Trace Event JSON (Perfetto UI, chrome://tracing) and the self-contained HTML timeline (viewer/). */
int ggprof_export_chrome(sqlite3 *db, const char *path, char *why, size_t why_len);
int ggprof_export_html(sqlite3 *db, const char *path, char *why, size_t why_len);
/* --html-max-records N: keep one record in every ceil(total/N) on the HTML timeline; 0 keeps all. */
void ggprof_export_html_set_max_records(long long n);
/* --max-records N (both): above N records, the ops of one graph in every ceil(records / N) only, every graph and
 * split kept, said in the file and on stderr (GGPROF_MODEL_MAX_RECORDS by default; 0: all). */
extern long long ggprof_export_max_records;
/* The line on stderr that says what a sampled export kept. */
void ggprof_export_say_sampled(const char *path, int64_t records, int64_t kept, int64_t every);
/* Their strings, and OTLP's, are schema/v3_format.h's ggprof_json_put with GGPROF_JSON_HTML; their shapes,
 * schema/trace_db.h's ggprof_db_ints. */

/* OpenTelemetry (OTLP/JSON): one ExportTraceServiceRequest per line, llama_decode batches and graphs as spans. */
int ggprof_export_otlp(sqlite3 *db, const char *path, char *why, size_t why_len);

/* An SVG roofline plot of the trace's ops (export_roofline.c), with the roofs set beforehand by 'export' from
 * --roof and --roof-file (the formats share one signature, so the roofs travel beside it). */
int  ggprof_export_roofline(sqlite3 *db, const char *path, char *why, size_t why_len);
void ggprof_export_roofline_set_roofs(const ggprof_roofs *roofs);

#endif
