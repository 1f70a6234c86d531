/* Opening traces and the upstream profiler's per-op aggregation, shared by every analyzer command. */
#include "trace.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "json_v3.h"
#include "trace_db.h"
#include "trace_lock.h"
#include "views.h"

/* Every reader of a trace comes through here first: a trace that record is finishing in the background (its
 * OUT.lock held) is waited for, with one line. */
ggprof_trace_kind ggprof_trace_kind_of(const char *path) {
    ggprof_trace_wait(path);
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
    ggprof_trace_wait(path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "cannot open '%s': %s", path, strerror(errno));
        return GGPROF_EXIT_USAGE;
    }
    fclose(f);
    ggprof_trace_kind kind = ggprof_trace_kind_of(path);
    if (kind == GGPROF_TRACE_DB) {
        if (ggprof_db_open_input(path, db, why, why_len) != 0) return GGPROF_EXIT_USAGE;
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

/* ------------------------------------------------------------ windows */

/* fmt: sqlite3_mprintf's (%q, %Q, %w). */
static int exec_fmt(sqlite3 *db, char *why, size_t why_len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *sql = sqlite3_vmprintf(fmt, ap);
    va_end(ap);
    char *err = NULL;
    int rc    = sql ? sqlite3_exec(db, sql, NULL, NULL, &err) : SQLITE_NOMEM;
    if (rc != SQLITE_OK) snprintf(why, why_len, "cutting the window: %s", err ? err : sqlite3_errstr(rc));
    sqlite3_free(err);
    sqlite3_free(sql);
    return rc == SQLITE_OK ? 0 : -1;
}

static int64_t scalar_at(sqlite3 *db, const char *sql, int64_t arg, int64_t none) {
    sqlite3_stmt *st = NULL;
    int64_t v        = none;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, arg);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

/* 1 when table t of schema s has column c. */
static int has_column(sqlite3 *db, const char *s, const char *t, const char *c) {
    char *sql = sqlite3_mprintf("SELECT count(*) FROM pragma_table_info(%Q, %Q) WHERE name = %Q", t, s, c);
    int64_t n = sql ? scalar_at(db, sql, 0, 0) : 0;
    sqlite3_free(sql);
    return n > 0;
}

/* What a window keeps of table t (schema s), as an SQL condition on its rows: a graph's rows when the graph is
 * in temp.win_graphs, a row of no graph (or of a table of times: batches, regions, kernels) when it starts
 * in [lo, hi), and the rows of process pid. "1" keeps all. */
static char *window_where(sqlite3 *db, const char *s, const char *t, const ggprof_window_opts *w, int64_t lo, int64_t hi) {
    /* node_placements: a plan's rows name its first graph and hold for later ones: kept whole */
    int graphs = has_column(db, s, t, "graph_id") && has_column(db, s, t, "pid") && strcmp(t, "batches") != 0 &&
                 strcmp(t, "node_placements") != 0;
    int timed  = has_column(db, s, t, "start_ns") &&
                (graphs || strcmp(t, "batches") == 0 || strcmp(t, "regions") == 0 || strcmp(t, "kernel_list") == 0);
    char pid[64] = "";
    if (w->has_pid && has_column(db, s, t, "pid")) snprintf(pid, sizeof(pid), " AND pid = %lld", w->pid);
    char time[96] = "1";
    if (w->has_graphs && graphs) {
        snprintf(time, sizeof(time), "0"); /* rows of no graph are in no graph's range */
    } else if (timed && !w->has_graphs) {
        snprintf(time, sizeof(time), "start_ns >= %lld AND start_ns < %lld", (long long) lo, (long long) hi);
    }
    if (graphs) {
        /* (a CASE around the IN made SQLite run its subquery per row: 20 s on 1M records) */
        return sqlite3_mprintf("((graph_id IS NULL AND %s) OR (graph_id IS NOT NULL AND (pid, graph_id) IN"
                               " (SELECT pid, graph_id FROM temp.win_graphs)))%s", time, pid);
    }
    return sqlite3_mprintf("(%s)%s", time, pid);
}

/* The window's bounds on the trace's clock, and its graphs into temp.win_graphs of db (schema s holds the
 * trace). Returns 0, GGPROF_EXIT_USAGE for a window the trace does not have, or -1. */
static int window_graphs(sqlite3 *db, const char *s, const ggprof_window_opts *w, int64_t *lo, int64_t *hi, char *why,
                         size_t why_len) {
    *lo = INT64_MIN, *hi = INT64_MAX;
    if (w->window) {
        char *sql = sqlite3_mprintf("SELECT %s FROM %s.windows WHERE id = ?", "start_ns", s);
        int64_t start = has_column(db, s, "windows", "id") ? scalar_at(db, sql, w->window, INT64_MIN) : INT64_MIN;
        sqlite3_free(sql);
        sql = sqlite3_mprintf("SELECT %s FROM %s.windows WHERE id = ?", "end_ns", s);
        int64_t end = start == INT64_MIN ? INT64_MIN : scalar_at(db, sql, w->window, INT64_MAX);
        sqlite3_free(sql);
        if (start == INT64_MIN) {
            sql = sqlite3_mprintf("SELECT count(*) FROM %s.windows", s);
            int64_t n = has_column(db, s, "windows", "id") ? scalar_at(db, sql, 0, 0) : 0;
            sqlite3_free(sql);
            snprintf(why, why_len, "--window %ld: the trace has %lld capture window%s (1 to %lld)", w->window, (long long) n,
                     n == 1 ? "" : "s", (long long) n);
            if (n == 0) snprintf(why, why_len, "--window %ld: the trace has no capture windows (record --delay, --duration"
                                               " or SIGUSR1 make them)", w->window);
            return GGPROF_EXIT_USAGE;
        }
        *lo = start, *hi = end;
    }
    if (w->has_from || w->has_to) {
        char *sql = sqlite3_mprintf("SELECT min(t) FROM (SELECT min(start_ns) AS t FROM %s.events UNION ALL"
                                    " SELECT min(start_ns) FROM %s.graph_list UNION ALL SELECT min(start_ns) FROM %s.split_list)",
                                    s, s, s);
        int64_t t0 = sql ? scalar_at(db, sql, 0, 0) : 0;
        sqlite3_free(sql);
        int64_t from = ggprof_add_sat(t0, ggprof_ns_of_s(w->from_s)), to = ggprof_add_sat(t0, ggprof_ns_of_s(w->to_s));
        if (w->has_from && from > *lo) *lo = from;
        if (w->has_to && to < *hi) *hi = to;
    }
    char cond[256];
    snprintf(cond, sizeof(cond), "start_ns >= %lld AND start_ns < %lld", (long long) *lo, (long long) *hi);
    if (w->has_graphs) {
        snprintf(cond + strlen(cond), sizeof(cond) - strlen(cond), " AND graph_id BETWEEN %lld AND %lld", w->graph_lo, w->graph_hi);
    }
    if (w->has_pid) snprintf(cond + strlen(cond), sizeof(cond) - strlen(cond), " AND pid = %lld", w->pid);
    /* The graphs: the graph list's, or (a trace read from JSON has none) each graph's first record. */
    char *sql = sqlite3_mprintf("SELECT count(*) FROM %s.graph_list", s);
    int listed = sql && scalar_at(db, sql, 0, 0) > 0;
    sqlite3_free(sql);
    char *from = listed ? sqlite3_mprintf("%s.graph_list", s)
                        : sqlite3_mprintf("(SELECT pid, graph_id, min(start_ns) AS start_ns FROM %s.events GROUP BY pid, graph_id)", s);
    int rc = from ? exec_fmt(db, why, why_len,
                             "CREATE TEMP TABLE win_graphs(pid INTEGER, graph_id INTEGER, PRIMARY KEY(pid, graph_id)) WITHOUT ROWID;"
                             "INSERT OR IGNORE INTO temp.win_graphs SELECT pid, graph_id FROM %s WHERE graph_id IS NOT NULL AND %s",
                             from, cond)
                  : -1;
    sqlite3_free(from);
    return rc;
}

/* The tables of schema s (what a window filters), NULL-terminated; sqlite3_free each and the array. */
static char **table_names(sqlite3 *db, const char *s) {
    char *sql = sqlite3_mprintf("SELECT name FROM %s.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%%'"
                                " ORDER BY rowid", s);
    sqlite3_stmt *st = NULL;
    char **v = sqlite3_malloc(sizeof(*v));
    size_t n = 0;
    if (v && sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            char **w = sqlite3_realloc(v, (int) ((n + 2) * sizeof(*v)));
            if (!w) break;
            v      = w;
            v[n++] = sqlite3_mprintf("%s", (const char *) sqlite3_column_text(st, 0));
        }
    }
    if (v) v[n] = NULL;
    sqlite3_finalize(st);
    sqlite3_free(sql);
    return v;
}

static void names_free(char **v) {
    for (size_t i = 0; v && v[i]; i++) sqlite3_free(v[i]);
    sqlite3_free(v);
}

/* A private trace database of what window w keeps of the trace at path (read by *db): ggprof's own tables (those
 * the trace has, with the columns it has), views and indexes, with fewer rows (events keep their row ids, the
 * records' order). No SQL text of the trace is run: its rows are read into tables ggprof makes from its own schema,
 * the trace attached read-only to a connection without triggers or untrusted functions. A trace read from JSON
 * (already a private database) is cut in place. */
static int window_cut(const char *path, ggprof_trace_kind kind, sqlite3 **db, const ggprof_window_opts *w, char *why,
                      size_t why_len) {
    sqlite3 *out = *db;
    const char *s = "main";
    int64_t lo, hi;
    int rc;
    if (kind == GGPROF_TRACE_DB) {
        sqlite3_close(*db);
        *db = NULL;
        if (sqlite3_open_v2("", &out, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                            NULL) != SQLITE_OK) {
            snprintf(why, why_len, "cutting the window: %s", sqlite3_errmsg(out));
            sqlite3_close(out);
            return -1;
        }
        ggprof_db_harden(out, 0); /* the attached trace's views off too; ggprof's go into main at the end */
        s = "src";
        /* checked again: the file may have changed since it was opened */
        if (ggprof_db_attach_input(out, path, "src", why, why_len) != 0) {
            rc = GGPROF_EXIT_USAGE;
            goto fail;
        }
    }
    if ((rc = window_graphs(out, s, w, &lo, &hi, why, why_len)) != 0) goto fail;
    char **tables = table_names(out, s);
    rc = tables ? exec_fmt(out, why, why_len, "BEGIN") : -1;
    for (size_t i = 0; rc == 0 && tables[i]; i++) {
        const char *t = tables[i];
        char *where   = window_where(out, s, t, w, lo, hi);
        if (!where) {
            rc = -1;
        } else if (kind == GGPROF_TRACE_DB) {
            /* ggprof's table, then the trace's rows into the columns both have (events with their row ids: the
             * records' order, the pass's seq) */
            char *cols = ggprof_db_create_table(out, t) == SQLITE_OK ? ggprof_db_column_list(out, "src", t) : NULL;
            int ids    = strcmp(t, "events") == 0;
            rc = cols ? exec_fmt(out, why, why_len, "INSERT INTO main.\"%w\"(%s%s) SELECT %s%s FROM src.\"%w\" WHERE %s"
                                                    " ORDER BY rowid",
                                 t, ids ? "rowid, " : "", cols, ids ? "rowid, " : "", cols, t, where)
                      : -1;
            sqlite3_free(cols);
        } else {
            rc = strcmp(where, "(1)") == 0 ? 0 : exec_fmt(out, why, why_len, "DELETE FROM main.\"%w\" WHERE NOT (%s)", t, where);
        }
        sqlite3_free(where);
    }
    names_free(tables);
    if (rc == 0) rc = exec_fmt(out, why, why_len, "COMMIT; DROP TABLE temp.win_graphs");
    if (rc == 0 && kind == GGPROF_TRACE_DB) {
        rc = exec_fmt(out, why, why_len, "DETACH src");
        /* ggprof's indexes (on the tables there are) and views, from ggprof's own text */
        for (const char *ix = GGPROF_DB_INDEX_DDL; rc == 0 && *ix;) {
            const char *e = strchr(ix, ';');
            char *one     = sqlite3_mprintf("%.*s", (int) (e - ix), ix);
            if (one) sqlite3_exec(out, one, NULL, NULL, NULL);
            sqlite3_free(one);
            ix = e + 1;
        }
        if (rc == 0) {
            ggprof_db_harden(out, 1);
            if (ggprof_db_create_views(out, "main") != SQLITE_OK) rc = -1;
        }
    }
    if (rc != 0) goto fail;
    *db = out;
    return 0;
fail:
    if (rc == -1 && !why[0]) snprintf(why, why_len, "cutting the window: %s", sqlite3_errmsg(out));
    sqlite3_close(out);
    *db = NULL;
    return rc == GGPROF_EXIT_USAGE ? rc : GGPROF_EXIT_INTERNAL;
}

int ggprof_trace_open_window(const char *path, const ggprof_window_opts *w, sqlite3 **db, char *why, size_t why_len) {
    int rc = ggprof_trace_open(path, db, why, why_len);
    if (rc || !w || !w->set) return rc;
    why[0] = '\0';
    if ((rc = window_cut(path, ggprof_trace_kind_of(path), db, w, why, why_len)) != 0) return rc;
    (void) ggprof_views_create(*db);
    return 0;
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
            if (sqlite3_step(shape) == SQLITE_ROW) ggprof_db_ints((const char *) sqlite3_column_text(shape, 0), &s->rep_ne_src[0][0], 12);
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

