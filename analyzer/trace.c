/* Opening traces and the seed's per-op aggregation, shared by every analyzer command. */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json_v3.h"
#include "trace_db.h"
#include "views.h"

ggprof_trace_kind ggprof_trace_kind_of(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return GGPROF_TRACE_OTHER;
    unsigned char head[16] = { 0 };
    size_t n = fread(head, 1, sizeof(head), f);
    fclose(f);
    size_t ws = 0;
    while (ws < n && (head[ws] == ' ' || head[ws] == '\n' || head[ws] == '\r' || head[ws] == '\t')) ws++;
    if (n == 16 && memcmp(head, "SQLite format 3", 16) == 0) return GGPROF_TRACE_DB;
    if ((n >= 2 && head[0] == 0x1f && head[1] == 0x8b) || (ws < n && head[ws] == '{')) return GGPROF_TRACE_JSON;
    return GGPROF_TRACE_OTHER;
}

int ggprof_trace_open(const char *path, sqlite3 **db, char *why, size_t why_len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "cannot open '%s': %s", path, strerror(errno));
        return GGPROF_EXIT_USAGE;
    }
    fclose(f);
    ggprof_trace_kind kind = ggprof_trace_kind_of(path);
    if (kind == GGPROF_TRACE_DB) {
        /* Read-write when allowed: a collector that was killed mid-batch leaves a hot journal, which only a
         * writer can roll back; the trace is then readable up to its last committed batch. */
        int mode = access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
        if (sqlite3_open_v2(path, db, mode | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) { /* one thread per connection */
            snprintf(why, why_len, "cannot open '%s': %s", path, sqlite3_errmsg(*db));
            sqlite3_close(*db);
            return GGPROF_EXIT_USAGE;
        }
        if (ggprof_db_check(*db, path, why, why_len) != 0) {
            sqlite3_close(*db);
            return GGPROF_EXIT_USAGE;
        }
        (void) ggprof_views_create(*db); /* best effort: rollup and diff create them again and say why not */
        return 0;
    }
    if (kind == GGPROF_TRACE_JSON) {
        *db = ggprof_json_v3_import(path, why, why_len);
        if (*db) (void) ggprof_views_create(*db);
        return *db ? 0 : GGPROF_EXIT_USAGE;
    }
    snprintf(why, why_len,
             "'%s' is not a ggprof trace (neither a trace database nor a version-3 JSON profile); expected a file "
             "written by 'ggprof record'",
             path);
    return GGPROF_EXIT_USAGE;
}

/* "[[a, b, c, d], [e, f, g, h]]" -> up to three shapes. */
static void parse_shapes(const char *s, int64_t out[3][4]) {
    memset(out, 0, sizeof(int64_t) * 12);
    if (!s) return;
    int src = -1, dim = 0;
    for (const char *p = s; *p && src < 3; p++) {
        if (*p == '[' && p != s) {
            src++;
            dim = 0;
        } else if ((*p >= '0' && *p <= '9') || *p == '-') {
            char *end;
            long long v = strtoll(p, &end, 10);
            if (src >= 0 && src < 3 && dim < 4) out[src][dim++] = v;
            p = end - 1;
        }
    }
}

int ggprof_op_stats_load(sqlite3 *db, ggprof_op_stats *out) {
    memset(out, 0, sizeof(*out));
    sqlite3_stmt *st = NULL, *shape = NULL;
    if (sqlite3_prepare_v2(db, "SELECT type, backend_id, name, duration_ns, bytes, pid, node_id FROM events ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT ne_src FROM nodes WHERE pid = ? AND node_id = ?", -1, &shape, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return -1;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *) sqlite3_column_text(st, 2);
        int is_new = 0;
        ggprof_op_stat *s = ggprof_op_stats_add(out, sqlite3_column_int(st, 0), sqlite3_column_int(st, 1),
                                                name ? name : "unknown", (uint64_t) sqlite3_column_int64(st, 3),
                                                (uint64_t) sqlite3_column_int64(st, 4), &is_new);
        if (is_new && s) {
            sqlite3_bind_int64(shape, 1, sqlite3_column_int64(st, 5));
            sqlite3_bind_int64(shape, 2, sqlite3_column_int64(st, 6));
            if (sqlite3_step(shape) == SQLITE_ROW) parse_shapes((const char *) sqlite3_column_text(shape, 0), s->rep_ne_src);
            sqlite3_reset(shape);
        }
    }
    sqlite3_finalize(st);
    sqlite3_finalize(shape);
    /* Backend names: the first scheduler that has the id (one scheduler in the usual run). */
    sqlite3_prepare_v2(db, "SELECT name FROM backends WHERE id = ? ORDER BY pid, sched_id LIMIT 1", -1, &st, NULL);
    for (size_t i = 0; i < out->n; i++) {
        sqlite3_bind_int(st, 1, out->v[i].backend_id);
        snprintf(out->v[i].backend, sizeof(out->v[i].backend), "%s",
                 sqlite3_step(st) == SQLITE_ROW ? (const char *) sqlite3_column_text(st, 0) : "unknown");
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    ggprof_op_stats_sort(out);
    return 0;
}

