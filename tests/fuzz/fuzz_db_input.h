/* What the two trace-database fuzz targets (fuzz_db.c, fuzz_trust.c) share: a real trace as the base, and each
 * input made into a database file, either the input itself (it begins with "SQLite format 3") or the base with
 * the input run on it as SQL. Static functions: each target includes it once. */
#ifndef GGPROF_FUZZ_DB_INPUT_H
#define GGPROF_FUZZ_DB_INPUT_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "json_v3.h"

static unsigned char *g_base;
static sqlite3_int64  g_base_len;

/* The base: FUZZ_DB_BASE (a version-3 JSON trace, set by fuzz.sh) imported, then extra_sql (or NULL) run on it.
 * The commands' tables go to /dev/null (libFuzzer reports on stderr). Exits when there is no base. */
static void fuzz_db_base(const char *who, const char *extra_sql) {
    const char *src = getenv("FUZZ_DB_BASE");
    char why[512];
    sqlite3 *db = src ? ggprof_json_v3_import(src, why, sizeof(why)) : NULL;
    if (!db) {
        fprintf(stderr, "%s: set FUZZ_DB_BASE to a version-3 JSON trace (%s)\n", who, src ? why : "unset");
        exit(1);
    }
    if (extra_sql) sqlite3_exec(db, extra_sql, NULL, NULL, NULL);
    g_base = sqlite3_serialize(db, "main", &g_base_len, 0);
    sqlite3_close(db);
    if (!g_base) exit(1);
    int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1), close(null);
}

/* Writes the input's database at path (a file on tmpfs, not a memfd: SQLite resolves links in a path, and a memfd's
 * link leads nowhere). writable_schema: the input's SQL may rewrite sqlite_master too. Returns 0, or -1 when no
 * file was made. */
static int fuzz_db_write(const char *path, const uint8_t *data, size_t size, bool writable_schema) {
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    bool raw = size >= 16 && memcmp(data, "SQLite format 3", 16) == 0;
    const void *bytes = raw ? (const void *) data : (const void *) g_base;
    size_t      n     = raw ? size : (size_t) g_base_len;
    ssize_t     w     = write(fd, bytes, n);
    close(fd);
    if (w != (ssize_t) n) {
        unlink(path);
        return -1;
    }
    if (raw) return 0;
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK) {
        char *sql = malloc(size + 1);
        if (sql) {
            memcpy(sql, data, size);
            sql[size] = '\0';
            if (writable_schema) sqlite3_exec(db, "PRAGMA writable_schema = ON", NULL, NULL, NULL);
            sqlite3_exec(db, sql, NULL, NULL, NULL); /* what fails to run leaves the rest as it was */
            free(sql);
        }
    }
    sqlite3_close(db);
    return 0;
}

static void fuzz_run(int (*cmd)(int, char **), int argc, const char *const *argv) {
    char *copy[16];
    for (int i = 0; i < argc && i < 15; i++) copy[i] = (char *) argv[i];
    copy[argc] = NULL;
    cmd(argc, copy);
}

#endif
