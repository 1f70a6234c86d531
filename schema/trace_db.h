/* The trace database: its DDL, its version rule, and opening one for reading. */
#ifndef GGPROF_TRACE_DB_H
#define GGPROF_TRACE_DB_H

#include <sqlite3.h>
#include <stddef.h>

/* Readers accept versions MIN..CURRENT; a writer always writes CURRENT. */
#define GGPROF_DB_VERSION     2 /* 2: nodes.op_id, the replay table */
#define GGPROF_DB_VERSION_MIN 1
#define GGPROF_DB_FORMAT      "ggprof-trace"

/* Creates every table and view of the current version in an empty database. Returns SQLITE_OK or an error
 * code with the message in *err (sqlite3_free it). */
int ggprof_db_create_schema(sqlite3 *db, char **err);

/* Checks that db is a ggprof trace of a version this build reads. Returns 0, or -1 with a one-line reason
 * naming what was found and what is accepted. */
int ggprof_db_check(sqlite3 *db, const char *path, char *why, size_t why_len);

#endif
