/* The upstream profiler's version-3 JSON: written from any trace, read into a trace database. */
#ifndef GGPROF_JSON_V3_H
#define GGPROF_JSON_V3_H

#include <sqlite3.h>
#include <stddef.h>

#include "summary.h"

/* Writes the records of db in the seed's layout (keys and order of ggml_backend_sched_write_profiling_json,
 * one record per line), then ggprof's own keys after the seed's. Gzip when path ends in ".gz".
 * Returns 0, or -1 with a reason naming the file. */
int ggprof_json_v3_export(sqlite3 *db, const char *path, char *why, size_t why_len);

/* Reads a version-3 profile (gzip or not; one record per line, pretty-printed or minified) into a new
 * temporary trace database, one record at a time. Returns the database, or NULL with a one-line reason that
 * names the file and the byte offset or record number at fault. */
sqlite3 *ggprof_json_v3_import(const char *path, char *why, size_t why_len);

/* The per-op statistics of a version-3 profile, read in one pass without a database: the same as
 * ggprof_op_stats_load on what ggprof_json_v3_import returns. Returns 0, or -1 with a reason as above. */
int ggprof_json_v3_op_stats(const char *path, ggprof_op_stats *out, char *why, size_t why_len);

#endif
