/* ggprof report: the upstream profiler's console summary of a trace, then a per-backend summary and trace health. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "accounting.h"
#include "analyzer_commands.h"
#include "findings.h"
#include "json_v3.h"
#include "memory.h"
#include "output.h"
#include "roofline.h"
#include "placement.h"
#include "sql.h"
#include "store.h"
#include "threads.h"
#include "trace.h"
#include "v3_format.h"
#include "views.h"

const char ggprof_usage_report[] =
    "usage: ggprof report TRACE " GGPROF_HELP_SYNOPSIS "\n"
    "\n"
    "Opens with the findings: what the trace says to try, each from one rule (docs/findings.md), the five with\n"
    "the most time at stake. Then prints, for each op, copy and sync kind on each backend: % of recorded time,\n"
    "count, total, average, minimum and maximum duration, traffic (the bytes an op reads and writes under the\n"
    "roofline model, over its time: top-ops' and the HTML page's GB/s; none for copies, syncs and ops the model\n"
    "cannot size) and a representative shape (the upstream profiler's console summary, whose bandwidth, the\n"
    "output's bytes over the time, GGML_PROFILE and export --text keep); then time per backend; for a backend\n"
    "timed on its device (Vulkan, CUDA, OpenCL), its device time: busy, idle gaps while its splits were in\n"
    "flight, how much of the host's waiting for it the device was busy, the share of kernel time joined to a\n"
    "graph node; then the trace's health: graphs, splits whose CPU ticks matched, records dropped; where each\n"
    "node ran and why (Placement). TRACE is a database written by 'ggprof record' or a version-3 JSON profile\n"
    "(.json or .json.gz), ggprof's or the upstream profiler's.\n";


static int64_t scalar(sqlite3 *db, const char *sql, int64_t dflt) {
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_type(st, 0) != SQLITE_NULL) {
        v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

/* record's capture windows (--delay, --duration, SIGUSR1...), from the trace's first record or graph. A trace
 * recorded start to end has one window; one of an older ggprof has no windows table: nothing is printed. */
static void print_windows(sqlite3 *db) {
    int64_t n = scalar(db, "SELECT count(*) FROM windows", 0);
    if (n == 0 || (n == 1 && scalar(db, "SELECT opened_by = 'start' AND closed_by = 'exit' FROM windows", 0))) return;
    int64_t t0 = scalar(db, "SELECT min(t) FROM (SELECT min(start_ns) AS t FROM windows UNION ALL"
                            " SELECT min(start_ns) FROM graphs)", 0);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT w.start_ns, w.end_ns, w.opened_by, w.closed_by, (SELECT count(*) FROM graphs g"
                               " WHERE g.start_ns >= w.start_ns AND g.start_ns <= w.end_ns) FROM windows w ORDER BY w.start_ns",
                           -1, &st, NULL) != SQLITE_OK) {
        return;
    }
    printf("  capture windows: %" PRId64 " (seconds from the first):\n", n);
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *by = (const char *) sqlite3_column_text(st, 2), *until = (const char *) sqlite3_column_text(st, 3);
        char s1[64], s2[64];
        printf("    %9.3f to %9.3f s  %8.3f s  %6" PRId64 " graphs  (opened by %s, closed by %s)\n",
               (double) (sqlite3_column_int64(st, 0) - t0) / 1e9, (double) (sqlite3_column_int64(st, 1) - t0) / 1e9,
               (double) (sqlite3_column_int64(st, 1) - sqlite3_column_int64(st, 0)) / 1e9, (int64_t) sqlite3_column_int64(st, 4),
               by ? ggprof_text_safe(by, s1, sizeof(s1)) : "-", until ? ggprof_text_safe(until, s2, sizeof(s2)) : "-");
    }
    sqlite3_finalize(st);
}

static void print_health(sqlite3 *db) {
    int64_t graphs = scalar(db, "SELECT count(*) FROM graphs", 0);
    int64_t splits = scalar(db, "SELECT count(*) FROM splits", 0);
    int64_t ticked = scalar(db, "SELECT count(*) FROM splits WHERE ticks_matched IS NOT NULL", 0);
    int64_t matched = scalar(db, "SELECT count(*) FROM splits WHERE ticks_matched = 1", 0);
    int64_t procs = scalar(db, "SELECT count(*) FROM processes", 0);
    int64_t dropped = scalar(db, "SELECT value FROM meta WHERE key = 'dropped_records'", 0);
    char coverage[320];
    /* records since the losses table; before it, the ring's dropped messages (said as unknown records) */
    char dropped_s[32];
    snprintf(dropped_s, sizeof(dropped_s), "%" PRId64, dropped);
    if (ggprof_coverage_line(db, coverage, sizeof(coverage)) && strncmp(coverage, "records lost: unknown", 21) == 0) {
        snprintf(dropped_s, sizeof(dropped_s), "unknown");
    }
    printf("=== Trace ===\n");
    printf("  processes: %" PRId64 "  graphs: %" PRId64 "  splits: %" PRId64 " (CPU ticked: %" PRId64
           ", ticks matched: %" PRId64 ")  dropped records: %s\n",
           procs, graphs, splits, ticked, matched, dropped_s);
    int64_t messages = scalar(db, "SELECT value FROM meta WHERE key = 'dropped_messages'", 0);
    if (messages > 0) {
        printf("  dropped messages: %" PRId64 " (records and what carries none: node descriptions, memory, placements;"
               " record --ring-kib)\n", messages);
    }
    sqlite3_stmt *st = NULL;
    if (coverage[0]) {
        printf("  %s\n", coverage);
        /* which graphs: the first few by id, so that a reader can look at them (report --graphs, export) */
        if (sqlite3_prepare_v2(db, "SELECT pid, graph_id, sum(records) FROM losses WHERE graph_id IS NOT NULL"
                               " GROUP BY pid, graph_id ORDER BY pid, graph_id LIMIT 9", -1, &st, NULL) == SQLITE_OK) {
            int shown = 0;
            while (sqlite3_step(st) == SQLITE_ROW) {
                if (shown == 8) {
                    printf(", ...");
                    break;
                }
                printf("%s%" PRId64 " (%" PRId64 ")", shown++ ? ", " : "  graphs that lost records (records lost): ",
                       (int64_t) sqlite3_column_int64(st, 1), (int64_t) sqlite3_column_int64(st, 2));
            }
            if (shown) printf("\n");
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    if (sqlite3_prepare_v2(db, "SELECT pid, text FROM notes", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            char safe[1024];
            const char *text = (const char *) sqlite3_column_text(st, 1);
            printf("  note (pid %d): %s\n", sqlite3_column_int(st, 0), text ? ggprof_text_safe(text, safe, sizeof(safe)) : "");
        }
    }
    sqlite3_finalize(st);
    print_windows(db);
}

/* ---- device time: busy, idle, waited for, from the device's own timestamps ---- */

/* An interval of one backend of one scheduler of one process. */
typedef struct {
    int64_t  pid, sched, backend;
    uint64_t a, b;
} dev_ivl;

typedef struct {
    dev_ivl *v;
    size_t   n, cap, at; /* at: the first of the backend being read */
} dev_list;

static int dev_load(sqlite3 *db, const char *sql, dev_list *l) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (l->n == l->cap) {
            size_t   cap = l->cap ? 2 * l->cap : 1024;
            dev_ivl *v   = realloc(l->v, cap * sizeof(*v));
            if (!v) break;
            l->v = v, l->cap = cap;
        }
        dev_ivl *x = &l->v[l->n++];
        x->pid = sqlite3_column_int64(st, 0), x->sched = sqlite3_column_int64(st, 1);
        x->backend = sqlite3_column_int64(st, 2);
        x->a = (uint64_t) sqlite3_column_int64(st, 3), x->b = (uint64_t) sqlite3_column_int64(st, 4);
        if (x->b < x->a) x->b = x->a;
    }
    sqlite3_finalize(st);
    return 0;
}

static int dev_key_cmp(const dev_ivl *x, const dev_ivl *k) {
    if (x->pid != k->pid) return x->pid < k->pid ? -1 : 1;
    if (x->sched != k->sched) return x->sched < k->sched ? -1 : 1;
    return x->backend == k->backend ? 0 : x->backend < k->backend ? -1 : 1;
}

/* The intervals of backend k (the lists are sorted by backend, then start), merged where they overlap, into out
 * (reused); their total length. */
static uint64_t dev_merge(dev_list *l, const dev_ivl *k, dev_list *out) {
    out->n = 0;
    while (l->at < l->n && dev_key_cmp(&l->v[l->at], k) < 0) l->at++;
    uint64_t total = 0;
    for (; l->at < l->n && dev_key_cmp(&l->v[l->at], k) == 0; l->at++) {
        const dev_ivl *x = &l->v[l->at];
        if (out->n && x->a <= out->v[out->n - 1].b) {
            if (x->b > out->v[out->n - 1].b) out->v[out->n - 1].b = x->b;
            continue;
        }
        if (out->n == out->cap) {
            size_t   cap = out->cap ? 2 * out->cap : 1024;
            dev_ivl *v   = realloc(out->v, cap * sizeof(*v));
            if (!v) break;
            out->v = v, out->cap = cap;
        }
        out->v[out->n++] = *x;
    }
    for (size_t i = 0; i < out->n; i++) total += out->v[i].b - out->v[i].a;
    return total;
}

/* Length of the intersection of two merged lists. */
static uint64_t dev_overlap(const dev_list *x, const dev_list *y) {
    uint64_t t = 0;
    for (size_t i = 0, j = 0; i < x->n && j < y->n;) {
        uint64_t a = x->v[i].a > y->v[j].a ? x->v[i].a : y->v[j].a, b = x->v[i].b < y->v[j].b ? x->v[i].b : y->v[j].b;
        if (b > a) t += b - a;
        if (x->v[i].b < y->v[j].b) i++;
        else j++;
    }
    return t;
}

/* The stretches of the windows that no busy interval covers: how many, and the longest. */
static void dev_gaps(const dev_list *win, const dev_list *busy, uint64_t *n, uint64_t *longest) {
    *n = *longest = 0;
    size_t j = 0;
    for (size_t i = 0; i < win->n; i++) {
        uint64_t at = win->v[i].a, end = win->v[i].b;
        while (j < busy->n && busy->v[j].b <= at) j++;
        for (size_t k = j; at < end; k++) {
            uint64_t next = k < busy->n && busy->v[k].a < end ? busy->v[k].a : end;
            if (next > at) {
                (*n)++;
                if (next - at > *longest) *longest = next - at;
            }
            if (k >= busy->n || busy->v[k].a >= end) break;
            if (busy->v[k].b > at) at = busy->v[k].b;
        }
    }
}

/* For each backend whose kernels the device timed: busy time (the union of its kernels), the time its splits were
 * in flight (from each split's start to its end or its last kernel's, whichever is later) and the idle gaps in it,
 * and how much of the host's backend_wait the device was busy for. Kernels outside any split are counted apart. */
static void print_devices(sqlite3 *db) {
    if (scalar(db, "SELECT count(*) FROM kernel_list", 0) == 0) return;
    dev_list kern = { 0 }, win = { 0 }, wait = { 0 }, mk = { 0 }, mw = { 0 }, mh = { 0 };
    dev_load(db, "SELECT pid, sched_id, backend_id, start_ns, start_ns + duration_ns FROM kernel_list"
                 " WHERE graph_id IS NOT NULL ORDER BY pid, sched_id, backend_id, start_ns", &kern);
    dev_load(db, "WITH ke AS (SELECT pid, graph_id, split_id, max(start_ns + duration_ns) AS e FROM kernel_list"
                 " WHERE graph_id IS NOT NULL GROUP BY pid, graph_id, split_id)"
                 " SELECT s.pid, s.sched_id, s.backend_id, s.start_ns, max(s.start_ns + s.duration_ns, ke.e)"
                 " FROM split_list s JOIN ke ON ke.pid = s.pid AND ke.graph_id = s.graph_id AND ke.split_id = s.split_id"
                 " ORDER BY s.pid, s.sched_id, s.backend_id, s.start_ns", &win);
    dev_load(db, "SELECT pid, sched_id, backend_id, start_ns, start_ns + duration_ns FROM events WHERE type = 2"
                 " AND name = 'backend_wait' ORDER BY pid, sched_id, backend_id, start_ns", &wait);
    printf("=== Device Time (device timestamps) ===\n");
    sqlite3_stmt *st = NULL;
    /* per split first: a split is matched when every one of its kernels was joined to a node */
    if (sqlite3_prepare_v2(db, "SELECT k.pid, k.sched_id, k.backend_id, COALESCE(b.name, '?'), sum(k.n), sum(k.ns),"
                               " sum(k.joined_ns), count(*), sum(k.n_joined = k.n) FROM (SELECT pid, sched_id, backend_id,"
                               " count(*) AS n, sum(duration_ns) AS ns, sum(CASE WHEN node_index >= 0 AND node_id > 0"
                               " THEN duration_ns ELSE 0 END) AS joined_ns, sum(node_index >= 0 AND node_id > 0) AS n_joined"
                               " FROM kernel_list WHERE graph_id IS NOT NULL GROUP BY pid, graph_id, split_id, sched_id,"
                               " backend_id) k LEFT JOIN backend_list b ON b.pid = k.pid AND b.sched_id = k.sched_id"
                               " AND b.id = k.backend_id GROUP BY k.pid, k.sched_id, k.backend_id"
                               " ORDER BY k.pid, k.sched_id, k.backend_id", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            dev_ivl key = { sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), 0, 0 };
            char safe[256];
            const char *name = (const char *) sqlite3_column_text(st, 3);
            int64_t n = sqlite3_column_int64(st, 4);
            double  sum = (double) sqlite3_column_int64(st, 5), on_node = (double) sqlite3_column_int64(st, 6);
            uint64_t busy = dev_merge(&kern, &key, &mk), flight = dev_merge(&win, &key, &mw);
            uint64_t waited = dev_merge(&wait, &key, &mh), gaps, longest;
            uint64_t in_flight_busy = dev_overlap(&mk, &mw);
            dev_gaps(&mw, &mk, &gaps, &longest);
            int64_t splits = sqlite3_column_int64(st, 7), matched = sqlite3_column_int64(st, 8);
            printf("  Backend %" PRId64 " (%s), pid %" PRId64 ": %" PRId64 " kernels, %.1f%% of their time joined to a"
                   " graph node\n", key.backend, ggprof_text_safe(name ? name : "?", safe, sizeof(safe)), key.pid, n,
                   sum > 0 ? 100.0 * on_node / sum : 0.0);
            printf("    splits: %" PRId64 ", every kernel joined to a node in %" PRId64 "%s\n", splits, matched,
                   matched < splits ? " (the notes below say why not in the others)" : "");
            printf("    busy %.2f ms of the %.2f ms its splits were in flight (%.1f%%); idle %.2f ms in %" PRIu64
                   " gaps (longest %.3f ms)\n", (double) busy / 1e6, (double) flight / 1e6,
                   flight ? 100.0 * (double) in_flight_busy / (double) flight : 0.0,
                   (double) (flight - in_flight_busy) / 1e6, gaps, (double) longest / 1e6);
            if (waited) {
                printf("    the host waited %.2f ms for it (backend_wait); the device was busy for %.1f%% of that\n",
                       (double) waited / 1e6, 100.0 * (double) dev_overlap(&mk, &mh) / (double) waited);
            }
        }
    }
    sqlite3_finalize(st);
    int64_t outside = scalar(db, "SELECT count(*) FROM kernel_list WHERE graph_id IS NULL", 0);
    if (outside) {
        printf("  outside any ggml split: %" PRId64 " kernels, %.2f ms\n", outside,
               (double) scalar(db, "SELECT sum(duration_ns) FROM kernel_list WHERE graph_id IS NULL", 0) / 1e6);
    }
    printf("\n");
    free(kern.v), free(win.v), free(wait.v), free(mk.v), free(mw.v), free(mh.v);
}

/* Why graphs were recorded without a single op: the level asked for, no split reaching the engine (ggml inside
 * the program where its backend computes could not be reached: the engine's note says which), or CPU splits whose
 * ticks no model explained. */
static const char *no_op_cause(sqlite3 *db) {
    static char cause[640];
    sqlite3_stmt *st = NULL;
    char level[16] = "", reach[512] = "";
    if (sqlite3_prepare_v2(db, "SELECT (SELECT value FROM meta WHERE key = 'level'),"
                               " (SELECT text FROM notes WHERE text LIKE 'off in %' LIMIT 1)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *l = sqlite3_column_text(st, 0), *r = sqlite3_column_text(st, 1);
        snprintf(level, sizeof(level), "%s", l ? (const char *) l : "");
        snprintf(reach, sizeof(reach), "%s", r ? (const char *) r : "");
    }
    sqlite3_finalize(st);
    int64_t splits = scalar(db, "SELECT count(*) FROM splits", 0);
    if (strcmp(level, "graph") == 0 || strcmp(level, "split") == 0) {
        snprintf(cause, sizeof(cause), "the trace was recorded at level %s (record --level op times ops)", level);
    } else if (splits == 0) {
        snprintf(cause, sizeof(cause), "no backend compute reached ggprof%s%s", reach[0] ? "; the engine noted: " : "",
                 reach);
    } else {
        snprintf(cause, sizeof(cause), "%s", "no CPU split's ticks matched a tick model (see the health and notes below)");
    }
    return cause;
}

/* What the program held in ggml's buffers: `ggprof memory`'s table and lines, computed by the same code. */
static void print_memory(sqlite3 *db) {
    ggprof_mem m;
    char       why[256];
    if (ggprof_mem_load(db, &m, why, sizeof(why)) != 0) {
        printf("\nMemory: %s\n", why);
        return;
    }
    if (!m.present) return;
    printf("\nMemory held in ggml's backend buffers at each process's peak, MiB ('ggprof memory' for the tensors):\n");
    ggprof_table t;
    ggprof_mem_backends_table(&t, &m);
    ggprof_table_write(&t, GGPROF_FMT_TABLE, stdout, 80);
    ggprof_table_free(&t);
    ggprof_mem_print_summary(stdout, &m, "  ");
    ggprof_mem_free(&m);
}

static const ggprof_col k_finding_cols[] = {
    { "rule", "rule", NULL, 0 },
    { "at stake ms", "at_stake_ms", "%.3f", 0 },
    { "at_stake_ns", "at_stake_ns", NULL, GGPROF_COL_NO_TABLE },
    { "pid", "pid", NULL, 0 },
    { "op", "op", NULL, 0 },
    { "layer", "layer", NULL, 0 },
    { "backend", "backend", NULL, 0 },
    { "node", "node", NULL, GGPROF_COL_FLEX },
    { "evidence", "evidence", NULL, GGPROF_COL_NO_TABLE },
    { "advice", "advice", NULL, GGPROF_COL_NO_TABLE },
};

/* The findings one a row: what --format csv writes. */
static int write_findings_csv(const ggprof_findings *f) {
    ggprof_table t;
    ggprof_table_init(&t, k_finding_cols, sizeof(k_finding_cols) / sizeof(k_finding_cols[0]));
    for (size_t i = 0; i < f->n; i++) {
        const ggprof_finding *x = &f->v[i];
        char ev[1024];
        size_t p = 0;
        ev[0] = '\0';
        for (int k = 0; k < x->n_ev && p < sizeof(ev); k++) {
            p += (size_t) snprintf(ev + p, sizeof(ev) - p, "%s%s=%s", k ? "; " : "", x->ev[k].key, x->ev[k].val);
        }
        ggprof_table_text(&t, x->rule);
        ggprof_table_real(&t, (double) x->at_stake_ns / 1e6);
        ggprof_table_int(&t, x->at_stake_ns);
        ggprof_table_int(&t, x->pid);
        ggprof_table_text(&t, ggprof_finding_ev(x, "op"));
        ggprof_table_text(&t, ggprof_finding_ev(x, "layer"));
        ggprof_table_text(&t, ggprof_finding_ev(x, "backend"));
        ggprof_table_text(&t, ggprof_finding_ev(x, "node"));
        ggprof_table_text(&t, ev);
        ggprof_table_text(&t, x->advice);
    }
    int rc = ggprof_table_write(&t, GGPROF_FMT_CSV, stdout, 80);
    ggprof_table_free(&t);
    return rc;
}

static const char *const k_rec_type[] = { "op", "copy", "sync" };

/* ---------------------------------------------------------------- traffic: the roofline model's bytes */

/* One OP record's bytes read and written, as the roofline model costs its node (roofline.c: what the HTML page's
 * GB/s and top-ops divide by the time), added to its group; a record the model cannot size, or one that is no
 * op, leaves its group's traffic unknown (< 0). */
static void add_traffic(ggprof_op_stat *g, int is_op, const ggprof_rl_cost *c) {
    if (g->traffic < 0) return;
    g->traffic = is_op && c && c->bytes_known ? g->traffic + c->bytes_read + c->bytes_written : -1;
}

typedef struct {
    ggprof_rl_types types; /* a JSON profile's: the built-in ids, as its import would have */
} json_traffic;

static void json_record_traffic(void *user, ggprof_op_stat *g, int type, const char *name, const char *extra,
                                const ggprof_msg_node *m) {
    json_traffic *t = user;
    ggprof_rl_node n;
    ggprof_rl_cost c;
    if (type == 0) {
        ggprof_rl_node_from_msg(&n, name, extra, m);
        ggprof_rl_cost_of(&n, &t->types, &c);
    }
    add_traffic(g, type == 0, type == 0 ? &c : NULL);
}

/* The stat of (type, backend, name) in s, or NULL. */
static int stat_is(const ggprof_op_stat *o, int type, int backend, const char *name) {
    return o->type == type && o->backend_id == backend && strcmp(o->name, name) == 0;
}

static ggprof_op_stat *stat_find(ggprof_op_stats *s, int type, int backend, const char *name, size_t *hint) {
    if (*hint < s->n && stat_is(&s->v[*hint], type, backend, name)) return &s->v[*hint];
    for (size_t i = 0; i < s->n; i++) {
        if (stat_is(&s->v[i], type, backend, name)) return &s->v[*hint = i];
    }
    return NULL;
}

/* Each record of a trace database costed by the group the roofline groups put it in, the HTML page's rule. */
static int db_traffic(sqlite3 *db, ggprof_op_stats *s, char *why, size_t why_len) {
    ggprof_rl_groups g;
    if (ggprof_rl_groups_load_records(db, &g, why, why_len) != 0) return -1;
    sqlite3_stmt *st = NULL;
    int rc = ggprof_sql_prepare(db, "SELECT rowid, type, backend_id, name FROM events ORDER BY rowid", &st, why, why_len);
    size_t hint = 0;
    while (rc == GGPROF_SQL_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *) sqlite3_column_text(st, 3);
        int type = sqlite3_column_int(st, 1);
        ggprof_op_stat *o = stat_find(s, type, sqlite3_column_int(st, 2), name ? name : "unknown", &hint);
        const ggprof_rl_group *x = type == 0 ? ggprof_rl_group_of(&g, sqlite3_column_int64(st, 0)) : NULL;
        if (o) add_traffic(o, x != NULL, x ? &x->cost : NULL);
    }
    sqlite3_finalize(st);
    ggprof_rl_groups_free(&g);
    return rc == GGPROF_SQL_ERROR ? -1 : 0;
}

/* --format json: the accounting, the findings, the op statistics and the trace's health, one object. */
static void write_json(sqlite3 *db, const ggprof_accounting *acc, const ggprof_findings *f, const ggprof_op_stats *s) {
    printf("{\n  \"accounting\": ");
    ggprof_accounting_json(stdout, acc, "  ", 0);
    printf(",\n  \"findings\": ");
    ggprof_findings_json(stdout, f, "  ", 0);
    printf(",\n  \"threads\": ");
    ggprof_threads_json(stdout, db);
    printf(",\n  \"ops\": [");
    for (size_t i = 0; i < s->n; i++) {
        const ggprof_op_stat *o = &s->v[i];
        printf("%s\n    {\"type\": \"%s\", \"name\": ", i ? "," : "", o->type >= 0 && o->type < 3 ? k_rec_type[o->type] : "?");
        ggprof_json_put(stdout, o->name, 0);
        printf(", \"backend\": ");
        ggprof_json_put(stdout, o->backend, 0);
        printf(", \"count\": %" PRId64 ", \"total_ns\": %" PRIu64 ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64
               ", \"bytes\": %" PRIu64, o->count, o->total_ns, o->min_ns, o->max_ns, o->bytes);
        if (o->traffic < 0) printf(", \"traffic_bytes\": null}");
        else printf(", \"traffic_bytes\": %.0f}", o->traffic);
    }
    printf("%s],\n  \"trace\": {\"processes\": %" PRId64 ", \"graphs\": %" PRId64 ", \"splits\": %" PRId64
           ", \"records\": %" PRId64 ", \"dropped_records\": %" PRId64 "}\n}\n", s->n ? "\n  " : "",
           scalar(db, "SELECT count(*) FROM processes", 0), scalar(db, "SELECT count(*) FROM graphs", 0),
           scalar(db, "SELECT count(*) FROM splits", 0), s->n_records,
           scalar(db, "SELECT value FROM meta WHERE key = 'dropped_records'", 0));
}

int ggprof_cmd_report(int argc, char **argv) {
    const char *trace = NULL;
    ggprof_window_opts window = { 0 };
    int format = GGPROF_FMT_TABLE;
    ggprof_roofs roofs = { 0 };
    int verbose = 0, list_rules = 0;
    const ggprof_opt opts[] = {
        { "--format", NULL, GGPROF_OPT_CALL, &format, ggprof_format_opt, "table|csv|json",
          "table (default); csv: the findings, one a row; json: {\"accounting\": per process, the wall time in "
          "categories, and per request of a server, \"findings\": every finding ranked, \"threads\": per process, each "
          "op's busy and wait per thread, \"ops\", \"trace\"}" },
        { "--roof", NULL, GGPROF_OPT_CALL, &roofs, ggprof_roofs_opt, "BACKEND=GBPS,GFLOPS[,GFLOPS_F16]",
          "a backend's roofs, for the below_roof rule (as top-ops takes them; repeatable)" },
        { "--roof-file", NULL, GGPROF_OPT_CALL, &roofs, ggprof_roofs_opt, "FILE",
          "roofs, one SPEC a line, as 'ggprof calibrate -o FILE' writes them" },
        { "--verbose", "-v", GGPROF_OPT_FLAG, &verbose, NULL, NULL,
          "also say on stderr, one line each, which rules stayed silent because the trace lacks what they read" },
        { "--list-rules", NULL, GGPROF_OPT_FLAG, &list_rules, NULL, NULL,
          "print every rule, its thresholds and their values (with --format json: {\"rules\": [...]}), and no "
          "trace is read" },
    };
    ggprof_args a = { opts, (int) (sizeof(opts) / sizeof(opts[0])), &trace, 1, 0, "one trace at a time ('%s' is a second)",
                      0, 0, &window };
    int rc = ggprof_parse_args(argc, argv, &a);
    if (rc) return rc;
    if (list_rules) {
        if (trace) return ggprof_fail(GGPROF_EXIT_USAGE, "--list-rules reads no trace ('%s' given)", trace);
        ggprof_rules_list(stdout, format == GGPROF_FMT_JSON);
        return fflush(stdout) == 0 ? 0 : GGPROF_EXIT_INTERNAL;
    }
    if (!trace) return ggprof_fail(GGPROF_EXIT_USAGE, "no trace given; usage: ggprof report TRACE");
    sqlite3 *db;
    char why[512];
    ggprof_op_stats s;
    int fast_json = ggprof_trace_kind_of(trace) == GGPROF_TRACE_JSON && !window.set && format == GGPROF_FMT_TABLE;
    if (fast_json) {
        /* A JSON profile is read once, straight into the statistics: no database is built. What the health
         * section reads (processes, graphs, splits, notes) a version-3 JSON does not carry: an empty trace. */
        json_traffic jt;
        ggprof_rl_types_builtin(&jt.types);
        if (ggprof_json_v3_op_stats(trace, &s, json_record_traffic, &jt, why, sizeof(why)) != 0) {
            return ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);
        }
        ggprof_store *empty;
        if (ggprof_store_create(&empty, "", why, sizeof(why)) != 0 || !(db = ggprof_store_finish(empty, why, sizeof(why)))) {
            ggprof_op_stats_free(&s);
            return ggprof_fail(GGPROF_EXIT_INTERNAL, "%s", why);
        }
        (void) ggprof_views_create(db); /* the functions the sections' queries call (ggprof_type_label...) */
    } else if ((rc = ggprof_trace_open_window(trace, &window, &db, why, sizeof(why))) != 0) {
        return ggprof_fail(rc, "%s", why);
    } else if (ggprof_op_stats_load(db, &s) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': %s", trace, sqlite3_errmsg(db));
        sqlite3_close(db);
        return rc;
    } else if (db_traffic(db, &s, why, sizeof(why)) != 0) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': %s", trace, why);
        ggprof_op_stats_free(&s);
        sqlite3_close(db);
        return rc;
    }
    /* The findings need the trace's tables: a JSON profile read straight into the statistics has none. */
    ggprof_accounting acc = { 0 };
    ggprof_findings   found = { 0 };
    if (!fast_json && (ggprof_accounting_load(db, &acc, why, sizeof(why)) != 0 ||
                       ggprof_findings_run(db, &acc, &roofs, &found, why, sizeof(why)) != 0)) {
        rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "reading '%s': %s", trace, why);
        ggprof_accounting_free(&acc);
        ggprof_op_stats_free(&s);
        sqlite3_close(db);
        return rc;
    }
    for (size_t i = 0; verbose && i < found.n_silent; i++) {
        char safe[256];
        ggprof_err("rule %s is silent: %s", found.silent[i].rule,
                   ggprof_text_safe(found.silent[i].why, safe, sizeof(safe)));
    }
    if (format != GGPROF_FMT_TABLE) {
        if (format == GGPROF_FMT_JSON) write_json(db, &acc, &found, &s);
        else if (write_findings_csv(&found) != 0) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "writing the table failed");
        ggprof_findings_free(&found);
        ggprof_accounting_free(&acc);
        ggprof_op_stats_free(&s);
        sqlite3_close(db);
        return rc ? rc : fflush(stdout) == 0 ? 0 : GGPROF_EXIT_INTERNAL;
    }
    if (fast_json) {
        printf("=== Findings ===\n  Not computed: a JSON profile is summed straight from the file (--format json\n"
               "  reads it into a database, and finds them).\n\n");
    } else {
        ggprof_findings_print(stdout, &found, 5);
        ggprof_accounting_print(stdout, &acc);
    }
    ggprof_findings_free(&found);
    ggprof_accounting_free(&acc);
    if (s.n_records == 0) {
        int64_t procs  = scalar(db, "SELECT count(*) FROM processes", 0);
        int64_t graphs = scalar(db, "SELECT count(*) FROM graphs", 0);
        if (graphs) {
            printf("%" PRId64 " graph%s computed, but no op or copy was recorded: %s.\n", graphs,
                   graphs == 1 ? " was" : "s were", no_op_cause(db));
        } else {
            printf("No ggml activity was seen in this trace%s.\n",
                   procs ? " (ggml was loaded, but no graph was computed)" : ": no process called ggml");
        }
    } else {
        ggprof_print_report_summary(stdout, &s);
    }
    print_devices(db);
    print_memory(db);
    ggprof_placement_print(stdout, db);
    ggprof_threads_print(stdout, db);
    print_health(db);
    ggprof_op_stats_free(&s);
    sqlite3_close(db);
    return fflush(stdout) == 0 ? 0 : GGPROF_EXIT_INTERNAL;
}
