/* Opening any trace the analyzer reads: a trace database, or a version-3 JSON profile (gzip or not). */
#ifndef GGPROF_TRACE_H
#define GGPROF_TRACE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "summary.h"

/* Returns 0 with *db open, or an exit code (GGPROF_EXIT_USAGE for a bad file) with a one-line reason. */
int ggprof_trace_open(const char *path, sqlite3 **db, char *why, size_t why_len);

/* The same, of what window w keeps (every analysis command's --from, --to, --graphs, --process, --window; w
 * NULL or unset: all of it): a private database with the trace's tables, views and indexes and the window's rows.
 * A window the trace lacks (--window N) is GGPROF_EXIT_USAGE with a reason. */
struct ggprof_window_opts;
int ggprof_trace_open_window(const char *path, const struct ggprof_window_opts *w, sqlite3 **db, char *why, size_t why_len);

/* What path holds, from its first bytes: a trace database, a version-3 JSON profile, or neither (or no file). */
typedef enum { GGPROF_TRACE_OTHER, GGPROF_TRACE_DB, GGPROF_TRACE_JSON } ggprof_trace_kind;
ggprof_trace_kind ggprof_trace_kind_of(const char *path);

int  ggprof_op_stats_load(sqlite3 *db, ggprof_op_stats *out);
#endif
