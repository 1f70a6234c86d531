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

int ggprof_trace_open(const char *path, sqlite3 **db, char *why, size_t why_len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_len, "cannot open '%s': %s", path, strerror(errno));
        return GGPROF_EXIT_USAGE;
    }
    unsigned char head[16] = { 0 };
    size_t n = fread(head, 1, sizeof(head), f);
    fclose(f);
    size_t ws = 0;
    while (ws < n && (head[ws] == ' ' || head[ws] == '\n' || head[ws] == '\r' || head[ws] == '\t')) ws++;
    if (n == 16 && memcmp(head, "SQLite format 3", 16) == 0) {
        /* Read-write when allowed: a collector that was killed mid-batch leaves a hot journal, which only a
         * writer can roll back; the trace is then readable up to its last committed batch. */
        int mode = access(path, W_OK) == 0 ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
        if (sqlite3_open_v2(path, db, mode, NULL) != SQLITE_OK) {
            snprintf(why, why_len, "cannot open '%s': %s", path, sqlite3_errmsg(*db));
            sqlite3_close(*db);
            return GGPROF_EXIT_USAGE;
        }
        if (ggprof_db_check(*db, path, why, why_len) != 0) {
            sqlite3_close(*db);
            return GGPROF_EXIT_USAGE;
        }
        return 0;
    }
    if ((n >= 2 && head[0] == 0x1f && head[1] == 0x8b) || (ws < n && head[ws] == '{')) {
        *db = ggprof_json_v3_import(path, why, why_len);
        return *db ? 0 : GGPROF_EXIT_USAGE;
    }
    snprintf(why, why_len,
             "'%s' is not a ggprof trace (neither a trace database nor a version-3 JSON profile); expected a file "
             "written by 'ggprof record'",
             path);
    return GGPROF_EXIT_USAGE;
}

void ggprof_fmt_ne(char *buf, size_t len, const int64_t ne[4]) {
    if (ne[0] == 0 && ne[1] == 0 && ne[2] == 0 && ne[3] == 0) {
        buf[0] = '\0';
        return;
    }
    int nd = 4;
    while (nd > 1 && ne[nd - 1] <= 1) nd--;
    size_t p = (size_t) snprintf(buf, len, "[");
    for (int i = 0; i < nd && p < len; i++) p += (size_t) snprintf(buf + p, len - p, "%s%" PRId64, i ? ", " : "", ne[i]);
    if (p < len) snprintf(buf + p, len - p, "]");
}

void ggprof_fmt_bandwidth(char *buf, size_t len, uint64_t bytes, uint64_t ns) {
    if (!bytes || !ns) {
        buf[0] = '\0';
        return;
    }
    double gbps = (double) bytes / (double) ns;
    if (gbps >= 1000.0) {
        snprintf(buf, len, "%.2f TB/s", gbps / 1000.0);
    } else {
        snprintf(buf, len, "%.2f GB/s", gbps);
    }
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

static int cmp_total(const void *a, const void *b) {
    const ggprof_op_stat *x = a, *y = b;
    if (x->total_ns != y->total_ns) return x->total_ns < y->total_ns ? 1 : -1;
    if (x->type != y->type) return x->type - y->type;
    if (x->backend_id != y->backend_id) return x->backend_id - y->backend_id;
    return strcmp(x->name, y->name);
}

int ggprof_op_stats_load(sqlite3 *db, ggprof_op_stats *out) {
    memset(out, 0, sizeof(*out));
    size_t cap = 0;
    sqlite3_stmt *st = NULL, *shape = NULL;
    if (sqlite3_prepare_v2(db, "SELECT type, backend_id, name, duration_ns, bytes, pid, node_id FROM events ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT ne_src FROM nodes WHERE pid = ? AND node_id = ?", -1, &shape, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return -1;
    }
    /* Few distinct groups (tens): a linear scan with a one-entry cache beats a hash table here. */
    size_t last = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int type = sqlite3_column_int(st, 0), backend = sqlite3_column_int(st, 1);
        const char *name = (const char *) sqlite3_column_text(st, 2);
        if (!name) name = "unknown";
        uint64_t dur = (uint64_t) sqlite3_column_int64(st, 3), bytes = (uint64_t) sqlite3_column_int64(st, 4);
        ggprof_op_stat *s = NULL;
        if (out->n && out->v[last].type == type && out->v[last].backend_id == backend &&
            strcmp(out->v[last].name, name) == 0) {
            s = &out->v[last];
        }
        for (size_t i = 0; !s && i < out->n; i++) {
            if (out->v[i].type == type && out->v[i].backend_id == backend && strcmp(out->v[i].name, name) == 0) {
                s    = &out->v[i];
                last = i;
            }
        }
        if (!s) {
            if (out->n == cap) {
                cap = cap ? cap * 2 : 64;
                ggprof_op_stat *v = realloc(out->v, cap * sizeof(*v));
                if (!v) break;
                out->v = v;
            }
            s = &out->v[last = out->n++];
            memset(s, 0, sizeof(*s));
            s->type       = type;
            s->backend_id = backend;
            s->min_ns     = UINT64_MAX;
            snprintf(s->name, sizeof(s->name), "%s", name);
            sqlite3_bind_int64(shape, 1, sqlite3_column_int64(st, 5));
            sqlite3_bind_int64(shape, 2, sqlite3_column_int64(st, 6));
            if (sqlite3_step(shape) == SQLITE_ROW) parse_shapes((const char *) sqlite3_column_text(shape, 0), s->rep_ne_src);
            sqlite3_reset(shape);
        }
        s->total_ns += dur;
        s->bytes += bytes;
        s->count++;
        if (dur < s->min_ns) s->min_ns = dur;
        if (dur > s->max_ns) s->max_ns = dur;
        out->grand_total_ns += dur;
        out->n_records++;
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
    qsort(out->v, out->n, sizeof(*out->v), cmp_total);
    return 0;
}

void ggprof_op_stats_free(ggprof_op_stats *s) {
    free(s->v);
    memset(s, 0, sizeof(*s));
}
