/* Preparing a query on a trace: a table or column an older trace lacks (the caller stays silent) told apart from any
 * other error (a bug in the query: the caller fails with it). Every rule, view and loader of the analyzer prepares
 * through here, so a typo in a query cannot pass for "this trace has no such table". */
#ifndef GGPROF_SQL_H
#define GGPROF_SQL_H

#include <sqlite3.h>
#include <stddef.h>

typedef enum {
    GGPROF_SQL_OK     = 0,  /* *st is ready */
    GGPROF_SQL_ABSENT = 1,  /* the trace lacks a table or column the query reads: *st is NULL, why says which */
    GGPROF_SQL_ERROR  = -1, /* anything else (syntax, an unknown function, out of memory): *st is NULL */
} ggprof_sql_rc;

/* Prepares sql on db. why (may be NULL) gets SQLite's message for ABSENT and ERROR. */
ggprof_sql_rc ggprof_sql_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *why, size_t why_len);

/* Whether db has a table or view of that name (in the main schema). */
int ggprof_sql_has_table(sqlite3 *db, const char *name);

#endif
