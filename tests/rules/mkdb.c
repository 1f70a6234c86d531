/* The fast rule tests' empty trace (tests/rules/run.sh): every table and view of the current trace schema, from
 * schema/trace_db.c's own DDL, and no rows; the cases insert theirs with the sqlite3 shell. usage: mkdb OUT.db */
#include <sqlite3.h>
#include <stdio.h>
#include <unistd.h>

#include "trace_db.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: mkdb OUT.db (a new file: an empty trace of schema version %d)\n", GGPROF_DB_VERSION);
        return 2;
    }
    if (access(argv[1], F_OK) == 0) {
        fprintf(stderr, "mkdb: '%s' exists; give a new file\n", argv[1]);
        return 2;
    }
    sqlite3 *db  = NULL;
    char    *err = NULL;
    if (sqlite3_open(argv[1], &db) != SQLITE_OK || ggprof_db_create_schema(db, &err) != SQLITE_OK) {
        fprintf(stderr, "mkdb: '%s': %s\n", argv[1], err ? err : sqlite3_errmsg(db));
        sqlite3_free(err);
        sqlite3_close(db);
        return 1;
    }
    return sqlite3_close(db) == SQLITE_OK ? 0 : 1;
}
