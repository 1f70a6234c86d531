/* ggprof export --otlp: batch and graph spans in the OpenTelemetry protocol's JSON encoding (OTLP/JSON), one
 * ExportTraceServiceRequest per line, as the OpenTelemetry Collector's otlpjsonfile receiver reads them. Each
 * llama_decode call is a trace: its span, and a child span per scheduler graph computed in it; a graph computed
 * outside any call (a program that is not llama.cpp's) is a trace of its own. Per-op detail stays in SQLite. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "trace_db.h"
#include "hash.h"
#include "outfile.h"
#include "v3_format.h"

/* ---------------------------------------------------------------- clocks and ids */

static int64_t meta_int(sqlite3 *db, const char *key, int *found) {
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    *found = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
            v      = sqlite3_column_int64(st, 0);
            *found = 1;
        }
    }
    sqlite3_finalize(st);
    return v;
}

static int64_t scalar(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* What to add to a trace's CLOCK_MONOTONIC times for Unix time: record's pair of clock readings (meta
 * clock_realtime_ns, clock_monotonic_ns); else its start second against the first time in the trace; else 0. */
static int64_t epoch_offset(sqlite3 *db) {
    int f1, f2;
    int64_t real = meta_int(db, "clock_realtime_ns", &f1), mono = meta_int(db, "clock_monotonic_ns", &f2);
    if (f1 && f2) return ggprof_add_sat(real, mono == INT64_MIN ? INT64_MAX : -mono);
    int64_t started = meta_int(db, "started_unix", &f1);
    if (f1) {
        int64_t first = scalar(db, "SELECT min(t) FROM (SELECT min(start_ns) AS t FROM graphs UNION ALL"
                                   " SELECT min(start_ns) FROM batches)");
        int64_t start_ns;
        if (__builtin_mul_overflow(started, (int64_t) 1000000000, &start_ns)) return 0;
        return ggprof_add_sat(start_ns, first == INT64_MIN ? INT64_MAX : -first);
    }
    return 0;
}

typedef struct {
    uint64_t run; /* this recording, so that two runs' ids differ */
} ids;

static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h ? h : 1; /* an all-zero id is invalid */
}

static uint64_t id_of(const ids *k, uint64_t salt, int64_t pid, int64_t a, int64_t b) {
    uint64_t h = ggprof_fnv_step(GGPROF_FNV_OFFSET, k->run);
    h = ggprof_fnv_step(h, salt);
    h = ggprof_fnv_step(h, (uint64_t) pid);
    h = ggprof_fnv_step(h, (uint64_t) a);
    h = ggprof_fnv_step(h, (uint64_t) b);
    return mix(h);
}

/* ---------------------------------------------------------------- writing */

static void put_hex(FILE *f, uint64_t v) { fprintf(f, "\"%016" PRIx64 "\"", v); }

static void attr_str(FILE *f, int *first, const char *key, const char *v) {
    fprintf(f, "%s{\"key\":\"%s\",\"value\":{\"stringValue\":", *first ? "" : ",", key);
    ggprof_json_put(f, v ? v : "", GGPROF_JSON_HTML);
    fputs("}}", f);
    *first = 0;
}

/* int64 values are JSON strings in OTLP/JSON (the protobuf JSON mapping of int64). */
static void attr_int(FILE *f, int *first, const char *key, int64_t v) {
    fprintf(f, "%s{\"key\":\"%s\",\"value\":{\"intValue\":\"%" PRId64 "\"}}", *first ? "" : ",", key, v);
    *first = 0;
}

typedef struct {
    FILE       *f;
    int64_t     offset; /* monotonic -> Unix ns */
    ids         k;
    int64_t     pid;    /* the resource of the open line; -1 none */
    int         spans;  /* in the open line */
    int64_t     lines, n_spans;
    sqlite3_stmt *proc;
} out_t;

static void line_end(out_t *o) {
    if (o->pid < 0) return;
    fputs("]}]}]}\n", o->f);
    o->pid = -1;
    o->lines++;
}

/* Opens a line (an ExportTraceServiceRequest) for process pid: its resource and ggprof's scope. */
static void line_begin(out_t *o, int64_t pid) {
    line_end(o);
    const char *exe = NULL, *ver = NULL;
    sqlite3_reset(o->proc);
    sqlite3_bind_int64(o->proc, 1, pid);
    if (sqlite3_step(o->proc) == SQLITE_ROW) {
        exe = (const char *) sqlite3_column_text(o->proc, 0);
        ver = (const char *) sqlite3_column_text(o->proc, 1);
    }
    const char *base = exe && strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
    fputs("{\"resourceSpans\":[{\"resource\":{\"attributes\":[", o->f);
    int first = 1;
    attr_str(o->f, &first, "service.name", base && *base ? base : "ggml");
    attr_int(o->f, &first, "process.pid", pid);
    if (exe && *exe) attr_str(o->f, &first, "process.executable.path", exe);
    if (ver && *ver) attr_str(o->f, &first, "ggml.version", ver);
    fputs("]},\"scopeSpans\":[{\"scope\":{\"name\":\"ggprof\"},\"spans\":[", o->f);
    o->pid   = pid;
    o->spans = 0;
}

static void span_begin(out_t *o, uint64_t trace_hi, uint64_t trace_lo, uint64_t span, uint64_t parent, const char *name,
                       int64_t start_ns, int64_t duration_ns) {
    fputs(o->spans++ ? ",{" : "{", o->f);
    fprintf(o->f, "\"traceId\":\"%016" PRIx64 "%016" PRIx64 "\",\"spanId\":", trace_hi, trace_lo);
    put_hex(o->f, span);
    if (parent) {
        fputs(",\"parentSpanId\":", o->f);
        put_hex(o->f, parent);
    }
    fputs(",\"name\":", o->f);
    ggprof_json_put(o->f, name, GGPROF_JSON_HTML);
    /* kind 1: SPAN_KIND_INTERNAL; times: fixed64, decimal strings */
    fprintf(o->f, ",\"kind\":1,\"startTimeUnixNano\":\"%" PRIu64 "\",\"endTimeUnixNano\":\"%" PRIu64 "\",\"attributes\":[",
            (uint64_t) ggprof_add_sat(start_ns, o->offset),
            (uint64_t) ggprof_add_sat(ggprof_add_sat(start_ns, duration_ns), o->offset));
    o->n_spans++;
}

/* A graph's span under parent (0: a root), in the trace (hi, lo). */
static void graph_span(out_t *o, sqlite3_stmt *g, uint64_t hi, uint64_t lo, uint64_t parent) {
    int64_t pid = sqlite3_column_int64(g, 0), graph = sqlite3_column_int64(g, 1);
    span_begin(o, hi, lo, id_of(&o->k, 2, pid, graph, 0), parent, "ggml graph", sqlite3_column_int64(g, 3),
               sqlite3_column_int64(g, 4));
    int first = 1;
    attr_int(o->f, &first, "ggml.graph.id", graph);
    attr_int(o->f, &first, "ggml.sched.id", sqlite3_column_int64(g, 2));
    if (sqlite3_column_type(g, 5) != SQLITE_NULL) attr_int(o->f, &first, "ggml.graph.n_nodes", sqlite3_column_int64(g, 5));
    if (sqlite3_column_type(g, 6) != SQLITE_NULL) attr_int(o->f, &first, "ggml.graph.n_splits", sqlite3_column_int64(g, 6));
    if (sqlite3_column_type(g, 8) != SQLITE_NULL) attr_int(o->f, &first, "ggml.graph.n_tokens", sqlite3_column_int64(g, 8));
    attr_str(o->f, &first, "ggml.graph.phase", (const char *) sqlite3_column_text(g, 9));
    attr_int(o->f, &first, "ggml.graph.op_ns", sqlite3_column_int64(g, 10));
    attr_int(o->f, &first, "ggml.graph.sync_ns", sqlite3_column_int64(g, 11));
    attr_int(o->f, &first, "ggml.graph.copy_ns", sqlite3_column_int64(g, 12));
    fputs("]}", o->f);
}

/* A batch's sequence ids, "0,1", as group_concat(seq_id, ',') over its batch_seqs rows in table order (has 0:
 * none, NULL). */
typedef struct {
    int     started, has, step;
    int64_t pid, batch;
    char   *text;
    size_t  len, cap;
} seq_ids;

static int seq_ids_add(seq_ids *x, const char *v) {
    size_t n = strlen(v) + 2;
    if (x->len + n > x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        while (cap < x->len + n) cap *= 2;
        char *t = realloc(x->text, cap);
        if (!t) return -1;
        x->text = t, x->cap = cap;
    }
    x->len += (size_t) sprintf(x->text + x->len, "%s%s", x->has ? "," : "", v);
    x->has = 1;
    return 0;
}

/* sq: batch_seqs ordered by pid, batch_id, rowid; batches are asked for in that order (again for a repeated one). */
static int seq_ids_of(seq_ids *x, sqlite3_stmt *sq, int64_t pid, int64_t batch) {
    if (x->started && x->pid == pid && x->batch == batch) return 0;
    if (!x->started) x->step = sqlite3_step(sq);
    x->started = 1, x->pid = pid, x->batch = batch, x->has = 0, x->len = 0;
    while (x->step == SQLITE_ROW && (sqlite3_column_int64(sq, 0) < pid ||
                                      (sqlite3_column_int64(sq, 0) == pid && sqlite3_column_int64(sq, 1) < batch))) {
        x->step = sqlite3_step(sq);
    }
    while (x->step == SQLITE_ROW && sqlite3_column_int64(sq, 0) == pid && sqlite3_column_int64(sq, 1) == batch) {
        const char *v = (const char *) sqlite3_column_text(sq, 2);
        if (v && seq_ids_add(x, v) != 0) return -1;
        x->step = sqlite3_step(sq);
    }
    return 0;
}

int ggprof_export_otlp(sqlite3 *db, const char *path, char *why, size_t why_len) {
    ggprof_outfile of; /* a new private file, renamed over path when whole (outfile.h) */
    FILE *f = ggprof_outfile_open(&of, path);
    if (!f) {
        snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno));
        return -1;
    }
    int found;
    out_t o = { f, epoch_offset(db), { 0 }, -1, 0, 0, 0, NULL };
    o.k.run = mix((uint64_t) meta_int(db, "clock_realtime_ns", &found) ^ (uint64_t) meta_int(db, "started_unix", &found) ^
                  (uint64_t) scalar(db, "SELECT min(start_ns) FROM graphs"));
    /* Batches of a trace of an older ggprof: none (the table is missing). */
    int has_batches = scalar(db, "SELECT count(*) FROM pragma_table_info('graph_list') WHERE name = 'batch_id'") > 0 &&
                      scalar(db, "SELECT count(*) FROM sqlite_master WHERE name = 'batches'") > 0;
    sqlite3_stmt *b = NULL, *g = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT exe, ggml_version FROM processes WHERE pid = ?", -1, &o.proc, NULL);
    if (rc == SQLITE_OK) {
        /* graph_phase: the graphs of the graph list, or of a trace read from JSON (which has none) their spans */
        rc = sqlite3_prepare_v2(
            db, has_batches ? "SELECT p.pid, p.graph_id, p.sched_id, p.start_ns, p.duration_ns, g.n_nodes, g.n_splits,"
                              " g.batch_id, p.n_tokens, p.phase, p.op_ns, p.sync_ns, p.copy_ns FROM graph_phase p"
                              " LEFT JOIN graph_list g ON g.pid = p.pid AND g.graph_id = p.graph_id"
                              " ORDER BY p.pid, g.batch_id IS NULL, g.batch_id, p.start_ns, p.graph_id"
                            : "SELECT p.pid, p.graph_id, p.sched_id, p.start_ns, p.duration_ns, g.n_nodes, g.n_splits,"
                              " NULL, p.n_tokens, p.phase, p.op_ns, p.sync_ns, p.copy_ns FROM graph_phase p"
                              " LEFT JOIN graph_list g ON g.pid = p.pid AND g.graph_id = p.graph_id"
                              " ORDER BY p.pid, p.start_ns, p.graph_id",
            -1, &g, NULL);
    }
    if (rc == SQLITE_OK && has_batches) {
        rc = sqlite3_prepare_v2(db, "SELECT b.pid, b.batch_id, b.tid, b.api, b.status, b.start_ns, b.duration_ns, b.n_tokens,"
                                    " b.n_seqs, b.n_outputs FROM batches b ORDER BY b.pid, b.batch_id",
                                -1, &b, NULL);
    }
    /* Each batch's sequence ids, merged alongside the batches in their order: a subquery per batch scanned
     * batch_seqs (no index) once per batch, 20 us per record on a long run. */
    sqlite3_stmt *sq = NULL;
    if (rc == SQLITE_OK && has_batches) {
        rc = sqlite3_prepare_v2(db, "SELECT pid, batch_id, seq_id FROM batch_seqs ORDER BY pid, batch_id, rowid", -1, &sq, NULL);
    }
    seq_ids ids = { 0 };
    int gstep = rc == SQLITE_OK ? sqlite3_step(g) : SQLITE_ERROR;
    int bstep = rc == SQLITE_OK && b ? sqlite3_step(b) : SQLITE_DONE;
    /* Batches in order, each with the graphs that name it; then the graphs of no batch, a trace each. */
    while (rc == SQLITE_OK && bstep == SQLITE_ROW) {
        int64_t pid = sqlite3_column_int64(b, 0), batch = sqlite3_column_int64(b, 1);
        line_begin(&o, pid);
        uint64_t hi = id_of(&o.k, 1, pid, batch, 1), lo = id_of(&o.k, 1, pid, batch, 2), span = id_of(&o.k, 3, pid, batch, 0);
        const char *api = (const char *) sqlite3_column_text(b, 3);
        span_begin(&o, hi, lo, span, 0, api && strcmp(api, "encode") == 0 ? "llama_encode" : "llama_decode",
                   sqlite3_column_int64(b, 5), sqlite3_column_int64(b, 6));
        int first = 1;
        attr_int(f, &first, "llama.batch.id", batch);
        attr_int(f, &first, "llama.batch.n_tokens", sqlite3_column_int64(b, 7));
        attr_int(f, &first, "llama.batch.n_seqs", sqlite3_column_int64(b, 8));
        attr_int(f, &first, "llama.batch.n_outputs", sqlite3_column_int64(b, 9));
        if (seq_ids_of(&ids, sq, pid, batch) != 0) rc = SQLITE_NOMEM;
        attr_str(f, &first, "llama.batch.seq_ids", ids.has ? ids.text : NULL);
        attr_int(f, &first, "thread.id", sqlite3_column_int64(b, 2));
        int status = sqlite3_column_int(b, 4);
        if (status) {
            /* STATUS_CODE_ERROR */
            fprintf(f, "],\"status\":{\"code\":2,\"message\":\"llama_decode returned %d\"}}", status);
        } else {
            fputs("]}", f);
        }
        while (gstep == SQLITE_ROW && sqlite3_column_int64(g, 0) < pid) gstep = sqlite3_step(g); /* graphs of no batch */
        /* graphs are ordered by pid, batch: those of this batch come next */
        while (gstep == SQLITE_ROW && sqlite3_column_int64(g, 0) == pid && sqlite3_column_type(g, 7) != SQLITE_NULL &&
               sqlite3_column_int64(g, 7) <= batch) {
            if (sqlite3_column_int64(g, 7) == batch) graph_span(&o, g, hi, lo, span);
            gstep = sqlite3_step(g);
        }
        line_end(&o);
        bstep = sqlite3_step(b);
    }
    if (b && bstep != SQLITE_DONE) rc = SQLITE_ERROR;
    sqlite3_reset(g);
    gstep = rc == SQLITE_OK ? sqlite3_step(g) : SQLITE_ERROR;
    while (rc == SQLITE_OK && gstep == SQLITE_ROW) {
        if (sqlite3_column_type(g, 7) == SQLITE_NULL) {
            int64_t pid = sqlite3_column_int64(g, 0), graph = sqlite3_column_int64(g, 1);
            if (o.pid != pid || o.spans >= 256) line_begin(&o, pid); /* lines of up to 256 spans */
            graph_span(&o, g, id_of(&o.k, 4, pid, graph, 1), id_of(&o.k, 4, pid, graph, 2), 0);
        }
        gstep = sqlite3_step(g);
    }
    line_end(&o);
    if (rc == SQLITE_OK && gstep != SQLITE_DONE) rc = SQLITE_ERROR;
    if (rc != SQLITE_OK) snprintf(why, why_len, "cannot read the trace for '%s': %s", path, sqlite3_errmsg(db));
    sqlite3_finalize(b);
    sqlite3_finalize(sq);
    free(ids.text);
    sqlite3_finalize(g);
    sqlite3_finalize(o.proc);
    if (ggprof_outfile_close(&of, f, rc != SQLITE_OK) != 0) {
        if (rc == SQLITE_OK) snprintf(why, why_len, "cannot write '%s': %s", path, strerror(errno ? errno : EIO));
        return -1;
    }
    return rc == SQLITE_OK ? 0 : -1;
}
