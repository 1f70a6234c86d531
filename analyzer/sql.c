/* Preparing a query on a trace: an absent table or column told apart from a bug in the query (sql.h). */
#include "sql.h"

#include <stdio.h>
#include <string.h>

/* SQLite says which table or column is missing only in its message: "no such table: X", "no such column: X". A
 * column of a table the trace has is absent too (an older schema); "no such function" is not (a bug here). */
static int is_absent(const char *msg) {
    return msg && (strncmp(msg, "no such table:", 14) == 0 || strncmp(msg, "no such column:", 15) == 0);
}

ggprof_sql_rc ggprof_sql_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, char *why, size_t why_len) {
    *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK && *st) return GGPROF_SQL_OK;
    const char *msg = sqlite3_errmsg(db);
    if (why && why_len) snprintf(why, why_len, "%s", msg ? msg : "unknown SQLite error");
    ggprof_sql_rc rc = is_absent(msg) ? GGPROF_SQL_ABSENT : GGPROF_SQL_ERROR;
    sqlite3_finalize(*st);
    *st = NULL;
    return rc;
}

int ggprof_sql_has_table(sqlite3 *db, const char *name) {
    sqlite3_stmt *st = NULL;
    int           has = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE name = ?1 AND type IN ('table', 'view')", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        has = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return has;
}
