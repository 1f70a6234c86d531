/* The formats `ggprof export` writes; each returns 0, or -1 with a one-line reason naming the file. */
#ifndef GGPROF_EXPORT_H
#define GGPROF_EXPORT_H

#include <sqlite3.h>
#include <stddef.h>

/* The upstream profiler's three-section text report (ggml_backend_sched_write_profiling_text). */
int ggprof_export_text(sqlite3 *db, const char *path, char *why, size_t why_len);

#endif
