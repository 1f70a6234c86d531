/* The upstream profiler's version-3 JSON: written from any trace, read into a trace database. */
#ifndef GGPROF_JSON_V3_H
#define GGPROF_JSON_V3_H

#include <sqlite3.h>
#include <stddef.h>

#include "summary.h"
#include "wire.h"

/* Writes the records of db in the upstream profiler's layout (keys and order of ggml_backend_sched_write_profiling_json,
 * one record per line), then ggprof's own keys after the upstream profiler's. Gzip when path ends in ".gz".
 * Returns 0, or -1 with a reason naming the file. */
int ggprof_json_v3_export(sqlite3 *db, const char *path, char *why, size_t why_len);

/* The records array written while a trace grows (record, as its database is built during the run): each add
 * writes the records stored after the last add, compressed, to PATH.records beside the JSON; the export then
 * writes the head and copies them, and writes only the records after them. */
typedef struct ggprof_json_v3_stream ggprof_json_v3_stream;
ggprof_json_v3_stream *ggprof_json_v3_stream_open(const char *path);
int  ggprof_json_v3_stream_add(ggprof_json_v3_stream *s, sqlite3 *db);
/* Writes out the records added so far and ends the stream's compressing threads (a fork may follow: record's finish
 * in the background); the export writes every record after them. 0, or -1 when they could not be written (the
 * export then writes them all again). */
int  ggprof_json_v3_stream_pause(ggprof_json_v3_stream *s);
/* ggprof_json_v3_export with what s wrote (s NULL: all of it); the same bytes, uncompressed, either way. */
int  ggprof_json_v3_export_stream(sqlite3 *db, const char *path, ggprof_json_v3_stream *s, char *why, size_t why_len);
/* Removes PATH.records and frees s (NULL: nothing). */
void ggprof_json_v3_stream_free(ggprof_json_v3_stream *s);

/* Reads a version-3 profile (gzip or not; one record per line, pretty-printed or minified) into a new
 * temporary trace database, one record at a time. Returns the database, or NULL with a one-line reason that
 * names the file and the byte offset or record number at fault. */
sqlite3 *ggprof_json_v3_import(const char *path, char *why, size_t why_len);

/* The per-op statistics of a version-3 profile, read in one pass without a database: the same as
 * ggprof_op_stats_load on what ggprof_json_v3_import returns. each (may be NULL) is called with every record as
 * it is added to its group g (the record's name, its extra, the node it describes): what a caller adds to the
 * statistics of its own (report's traffic). Returns 0, or -1 with a reason as above. */
typedef void (*ggprof_json_v3_each)(void *user, ggprof_op_stat *g, int type, const char *name, const char *extra,
                                    const ggprof_msg_node *m);
int ggprof_json_v3_op_stats(const char *path, ggprof_op_stats *out, ggprof_json_v3_each each, void *user, char *why,
                            size_t why_len);

#endif
