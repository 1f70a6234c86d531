/* Version-3 JSON, written: the upstream profiler's writer layout, records straight from the trace database. */
#include "json_v3.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gzout.h"
#include "model.h"
#include "progress.h"
#include "trace_db.h"
#include "v3_format.h"
#include "hash.h"

/* ---------------------------------------------------------------- export */

/* A JSON string, or null for NULL. Every string is escaped, whatever a tensor was named. */
static int put_str(gzout *o, const unsigned char *s) {
    char buf[1024];
    ggprof_json_string(buf, sizeof(buf), (const char *) s);
    return ggprof_gzout_puts(o, buf);
}

static const unsigned char *col_text(sqlite3_stmt *st, int i) { return sqlite3_column_text(st, i); }

/* A node's part of its records' lines (`, "tensor_name": ...` to `"sub_op": N`), made once per node, and its
 * op for the label of a fused pair. The records view's defaults for a record without a node. */
typedef struct {
    int32_t pid;
    int64_t node_id;
    char   *part, *op, *tensor; /* tensor: NULL when none or empty */
} node_part;

typedef struct {
    node_part   *v;
    size_t       n;
    ggprof_index index;
    char        *none; /* the part of a record with no node */
} node_parts;

static uint64_t part_hash(const void *ctx, size_t i) {
    const node_part *x = &((const node_parts *) ctx)->v[i];
    return ggprof_fnv_pid_id(x->pid, x->node_id);
}

static int same_part(const void *ctx, size_t i, const void *key) {
    const node_part *x = &((const node_parts *) ctx)->v[i], *k = key;
    return x->pid == k->pid && x->node_id == k->node_id;
}

static const node_part *part_find(const node_parts *t, int32_t pid, int64_t node_id) {
    if (!t->index.n_slot) return NULL;
    node_part k = { pid, node_id, NULL, NULL, NULL };
    uint32_t i  = *ggprof_index_slot(&t->index, ggprof_fnv_pid_id(pid, node_id), same_part, t, &k);
    return i ? &t->v[i - 1] : NULL;
}

static char *node_line(const char *tensor, const char *ne, int out_type, int n_src, const char *ne_src, const char *nb_src,
                       const char *type_src, const char *op_params, int sub_op) {
    ggprof_v3_fields f = { .tensor_name = tensor, .ne = ne, .out_type = out_type, .n_src = n_src, .ne_src = ne_src,
                           .nb_src = nb_src, .type_src = type_src, .op_params = op_params, .sub_op = sub_op };
    char line[8192];
    ggprof_v3_record_node(line, sizeof(line), &f);
    return strdup(line);
}

static const char k_no_ne[] = "[0, 0, 0, 0]", k_no_params[] = "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]";

/* The nodes as the model reads them (model.c: the one loader of the nodes table), each made into its part with the
 * records view's defaults for what a node lacks. */
static int parts_load(sqlite3 *db, node_parts *t) {
    memset(t, 0, sizeof(*t));
    if (!(t->none = node_line(NULL, k_no_ne, -1, 0, "[]", "[]", "[]", k_no_params, -1))) return -1;
    ggprof_model m;
    char         why[256];
    if (ggprof_model_nodes_load(db, &m, why, sizeof(why)) != 0) return -1;
    int rc = 0;
    if (m.n_nodes && !(t->v = calloc(m.n_nodes, sizeof(*t->v)))) rc = -1;
    for (size_t i = 0; rc == 0 && i < m.n_nodes; i++) {
        const ggprof_model_node *n = &m.nodes[i];
        if (ggprof_index_reserve(&t->index, 0, t->n, part_hash, t) != 0) {
            rc = -1;
            break;
        }
        const char *tensor = n->tensor_name && *n->tensor_name ? n->tensor_name : NULL;
        node_part  *x      = &t->v[t->n];
        x->pid = n->pid, x->node_id = n->node_id;
        x->part   = node_line(tensor, n->ne ? n->ne : k_no_ne, (int) n->out_type, (int) n->n_src,
                              n->ne_src ? n->ne_src : "[]", n->nb_src ? n->nb_src : "[]", n->type_src ? n->type_src : "[]",
                              n->op_params ? n->op_params : k_no_params, (int) n->sub_op);
        x->op     = n->op ? strdup(n->op) : NULL;
        x->tensor = tensor ? strdup(tensor) : NULL;
        if (!x->part || (n->op && !x->op) || (tensor && !x->tensor)) {
            free(x->part), free(x->op), free(x->tensor);
            rc = -1;
            break;
        }
        *ggprof_index_slot(&t->index, ggprof_fnv_pid_id(n->pid, n->node_id), same_part, t, x) = (uint32_t) ++t->n;
    }
    ggprof_model_free(&m);
    return rc;
}

static void parts_free(node_parts *t) {
    for (size_t i = 0; i < t->n; i++) {
        free(t->v[i].part);
        free(t->v[i].op);
        free(t->v[i].tensor);
    }
    free(t->v);
    ggprof_index_free(&t->index);
    free(t->none);
}

/* Records in file order, straight from the events table (the records view's joins cost more than the rest):
 * their own fields, their node's part, ggprof's keys (after the upstream profiler's, so that readers of the upstream profiler's format
 * find theirs in place). The extra key is the records view's: the record's own, else a fused pair's "OP+OP",
 * else a copy's tensor. */
/* What of the records array is written: the last record's rowid, how many, their durations, and whether any
 * was a device record (timing 4: ggprof_store_finish may still name it). */
typedef struct {
    int64_t  last;
    uint64_t rows;
    int64_t  sum_ns;
    bool     device;
} records_done;

/* The records after d->last, each on its line after the separator; the line after the last is the caller's. */
static int write_records(sqlite3 *db, gzout *o, const node_parts *parts, records_done *d, ggprof_progress *prog) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT type, name, backend_id, split_id, start_ns, duration_ns, bytes, extra, node_id,"
                               " fused_node_id, graph_id, node_index, pid, tid, sched_id, timing, wait_ns, rowid FROM events"
                               " WHERE rowid > ? ORDER BY rowid", -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    sqlite3_bind_int64(st, 1, d->last);
    static char out[1 << 16];
    size_t n_out = 0;
    uint64_t row = d->rows;
    int step, rc = 0;
    while ((step = sqlite3_step(st)) == SQLITE_ROW && rc == 0) {
        if ((row & 4095) == 0) ggprof_progress_update(prog, row);
        d->last = sqlite3_column_int64(st, 17);
        /* a trace's durations are data: the sum saturates rather than overflow (fuzz_db) */
        int64_t dur = sqlite3_column_int64(st, 5);
        if (__builtin_add_overflow(d->sum_ns, dur, &d->sum_ns)) d->sum_ns = dur < 0 ? INT64_MIN : INT64_MAX;
        if (sqlite3_column_int(st, 15) == 4) d->device = true;
        int32_t pid          = sqlite3_column_int(st, 12);
        int type             = sqlite3_column_int(st, 0);
        const node_part *n   = sqlite3_column_type(st, 8) == SQLITE_NULL ? NULL : part_find(parts, pid, sqlite3_column_int64(st, 8));
        const char *extra    = (const char *) col_text(st, 7);
        char fused[512];
        if (!extra && type == 0 && sqlite3_column_int64(st, 9) > 0 && n) {
            const node_part *f = part_find(parts, pid, sqlite3_column_int64(st, 9));
            if (f) extra = ggprof_fused_label(fused, sizeof(fused), NULL, n->op, f->op);
        }
        if (!extra && type == 1 && n) extra = n->tensor;
        ggprof_v3_fields f = {
            .type = type, .name = (const char *) col_text(st, 1), .backend_id = sqlite3_column_int(st, 2),
            .split_id = sqlite3_column_int(st, 3), .start_ns = (uint64_t) sqlite3_column_int64(st, 4),
            .duration_ns = (uint64_t) sqlite3_column_int64(st, 5), .bytes = (uint64_t) sqlite3_column_int64(st, 6),
            .extra = extra,
        };
        char line[8192];
        size_t p = ggprof_v3_record_head(line, sizeof(line), &f);
        const char *part = n ? n->part : parts->none;
        size_t lp        = strlen(part);
        if (p + lp < sizeof(line)) {
            memcpy(line + p, part, lp + 1);
            p += lp;
        }
        p += ggprof_v3_record_ggprof_keys(line + p, sizeof(line) - p, sqlite3_column_type(st, 10) != SQLITE_NULL,
                                          sqlite3_column_int64(st, 10), sqlite3_column_int(st, 11), pid,
                                          sqlite3_column_int(st, 13), sqlite3_column_int(st, 14), sqlite3_column_int(st, 15),
                                          sqlite3_column_int64(st, 16));
        if (n_out + p + 8 > sizeof(out)) {
            rc = ggprof_gzout_write(o, out, n_out);
            n_out = 0;
        }
        const char *sep = row++ ? ",\n    " : "    ";
        memcpy(out + n_out, sep, strlen(sep));
        n_out += strlen(sep);
        memcpy(out + n_out, line, p);
        n_out += p;
    }
    if (rc == 0 && n_out) rc = ggprof_gzout_write(o, out, n_out);
    sqlite3_finalize(st);
    d->rows = row;
    return rc == 0 && step == SQLITE_DONE ? 0 : rc ? -2 : -1;
}

/* The records array written while the trace grows (record): its lines, compressed, in a file beside the JSON. */
struct ggprof_json_v3_stream {
    char         body[4200];
    gzout       *o;
    records_done d;
    node_parts   parts;
    int64_t      nodes_mark; /* the nodes' last rowid when parts was loaded; -1: not loaded */
    bool         failed;
};

static int64_t nodes_mark(sqlite3 *db) {
    sqlite3_stmt *st = NULL;
    int64_t mark = 0;
    if (sqlite3_prepare_v2(db, "SELECT COALESCE(max(rowid), 0) FROM nodes", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        mark = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return mark;
}

ggprof_json_v3_stream *ggprof_json_v3_stream_open(const char *path) {
    ggprof_json_v3_stream *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    size_t n = strlen(path);
    snprintf(s->body, sizeof(s->body), "%s.records", path);
    s->nodes_mark = -1;
    if (!(s->o = ggprof_gzout_open(s->body, n > 3 && strcmp(path + n - 3, ".gz") == 0, 3))) {
        free(s);
        return NULL;
    }
    return s;
}

int ggprof_json_v3_stream_add(ggprof_json_v3_stream *s, sqlite3 *db) {
    if (!s || s->failed || !s->o) return -1;
    int64_t mark = nodes_mark(db);
    if (mark != s->nodes_mark) { /* a node described since: its part, for the records that name it */
        parts_free(&s->parts);
        s->nodes_mark = mark;
        if (parts_load(db, &s->parts) != 0) s->failed = true;
    }
    ggprof_progress quiet = { 0 }; /* inactive: nothing is shown while the workload runs */
    if (!s->failed && write_records(db, s->o, &s->parts, &s->d, &quiet) != 0) s->failed = true;
    return s->failed ? -1 : 0;
}

int ggprof_json_v3_stream_pause(ggprof_json_v3_stream *s) {
    if (!s || !s->o) return s ? -1 : 0;
    if (ggprof_gzout_close(s->o) != 0) s->failed = true;
    s->o = NULL;
    return s->failed ? -1 : 0;
}

void ggprof_json_v3_stream_free(ggprof_json_v3_stream *s) {
    if (!s) return;
    if (s->o) ggprof_gzout_close(s->o);
    if (s->nodes_mark >= 0) parts_free(&s->parts);
    unlink(s->body);
    free(s);
}

int ggprof_json_v3_export(sqlite3 *db, const char *path, char *why, size_t why_len) {
    return ggprof_json_v3_export_stream(db, path, NULL, why, why_len);
}

int ggprof_json_v3_export_stream(sqlite3 *db, const char *path, ggprof_json_v3_stream *s, char *why, size_t why_len) {
    size_t n  = strlen(path);
    int    gz = n > 3 && strcmp(path + n - 3, ".gz") == 0;
    /* The records written while the trace grew are kept unless a device record is among them (the store's end
     * may still name it): then, or when writing them failed, the whole array is written again. */
    records_done d = { 0, 0, 0, false };
    FILE *body = NULL;
    if (s) {
        int body_rc = s->o ? ggprof_gzout_close(s->o) : 0; /* none: paused, its records written whole */
        s->o = NULL;
        if (!s->failed && body_rc == 0 && !s->d.device && s->d.rows && (body = fopen(s->body, "rb"))) d = s->d;
    }
    node_parts parts;
    if (parts_load(db, &parts) != 0) {
        snprintf(why, why_len, "cannot read the trace for '%s': %s", path, sqlite3_errmsg(db));
        parts_free(&parts);
        if (body) fclose(body);
        return -1;
    }
    gzout *o = ggprof_gzout_open(path, gz, 3);
    if (!o) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        parts_free(&parts);
        if (body) fclose(body);
        return -1;
    }
    sqlite3_stmt *st = NULL;
    int64_t total_records = (int64_t) d.rows, total_ns = d.sum_ns;
    if (sqlite3_prepare_v2(db, "SELECT count(*), COALESCE(sum(duration_ns), 0) FROM events WHERE rowid > ?", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_bind_int64(st, 1, d.last) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        total_records += (int64_t) sqlite3_column_int64(st, 0);
        total_ns += (int64_t) sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    char head[256];
    snprintf(head, sizeof(head), "{\n  \"version\": 3,\n  \"profiler\": \"ggml\",\n  \"total_records\": %" PRId64
                                 ",\n  \"total_ns\": %" PRId64 ",\n", total_records, total_ns);
    ggprof_gzout_puts(o, head);
    ggprof_gzout_puts(o, "  \"backends\": [\n");
    sqlite3_prepare_v2(db, "SELECT id, name, device, device_type, pid, sched_id FROM backends ORDER BY pid, sched_id, id",
                       -1, &st, NULL);
    int first = 1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!first) ggprof_gzout_puts(o, ",\n");
        first = 0;
        snprintf(head, sizeof(head), "    {\"id\": %d, \"name\": ", sqlite3_column_int(st, 0));
        ggprof_gzout_puts(o, head);
        put_str(o, col_text(st, 1));
        ggprof_gzout_puts(o, ", \"device\": ");
        put_str(o, col_text(st, 2));
        snprintf(head, sizeof(head), ", \"device_type\": %d, \"pid\": %d, \"sched_id\": %d}", sqlite3_column_int(st, 3),
                 sqlite3_column_int(st, 4), sqlite3_column_int(st, 5));
        ggprof_gzout_puts(o, head);
    }
    sqlite3_finalize(st);
    ggprof_gzout_puts(o, first ? "  ],\n" : "\n  ],\n");
    ggprof_gzout_puts(o, "  \"records\": [\n");
    int rc = 0;
    if (body) {
        rc = ggprof_gzout_splice(o, body) ? -2 : 0;
        fclose(body);
    }
    ggprof_progress prog;
    char what[300];
    snprintf(what, sizeof(what), "writing '%s'", path);
    ggprof_progress_start(&prog, what, (uint64_t) total_records);
    if (rc == 0) rc = write_records(db, o, &parts, &d, &prog);
    ggprof_progress_end(&prog);
    parts_free(&parts);
    if (rc == 0 && d.rows) rc = ggprof_gzout_puts(o, "\n") ? -2 : 0;
    ggprof_gzout_puts(o, "  ]\n}\n");
    int close_rc = ggprof_gzout_close(o);
    if (rc == -1) {
        snprintf(why, why_len, "cannot read the trace for '%s': %s", path, sqlite3_errmsg(db));
        return -1;
    }
    if (rc || close_rc) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    return 0;
}
