/* Trace database writer: one prepared statement per table, batched in transactions. */
#include "store.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring.h"
#include "trace_db.h"
#include "v3_format.h"

#include <stdbool.h>

enum { ST_PROC, ST_TYPE, ST_BACKEND, ST_NODE, ST_GRAPH, ST_SPLIT, ST_EVENT, ST_KERNEL, ST_REGION,
       ST_BATCH, ST_BATCH_SEQ, ST_FUSION, ST_BUF_ALLOC, ST_BUF_EVENT, ST_DEVMEM, ST_PLAN, ST_PLACEMENT,
       ST_LOSS, ST_NODE_PLACE, ST_OP_THREAD, ST_THREAD, ST_THREAD_END, ST_COUNT };

/* Each names its columns: the binds below follow these lists, never the order of the DDL's. */
static const char *const k_sql[ST_COUNT] = {
    [ST_PROC] = "INSERT OR REPLACE INTO processes(pid, ppid, exe, ggml_version, ggml_commit, ggml_lib, start_ns) VALUES(?,?,?,?,?,?,?)",
    [ST_TYPE] = "INSERT OR REPLACE INTO ggml_types(pid, type, name, type_size, blck_size) VALUES(?,?,?,?,?)",
    [ST_BACKEND] = "INSERT OR REPLACE INTO backend_list(pid, sched_id, id, name, device, device_type, is_host, "
        "description) VALUES(?,?,?,?,?,?,?,?)",
    [ST_NODE] = "INSERT OR REPLACE INTO nodes(pid, node_id, op, sub_op, sub_op_name, tensor_name, out_type, ne, "
        "n_src, ne_src, nb_src, type_src, op_params, nbytes, op_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_GRAPH] = "INSERT INTO graph_list(pid, graph_id, sched_id, start_ns, duration_ns, n_nodes, n_splits, "
        "batch_id) VALUES(?,?,?,?,?,?,?,?)",
    [ST_SPLIT] = "INSERT INTO split_list(pid, graph_id, split_id, backend_id, sched_id, start_ns, duration_ns, "
        "n_nodes, node_start, ticks_matched, n_ticks, n_expected, engine_ns) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_EVENT] = "INSERT INTO events(pid, tid, type, name, timing, backend_id, sched_id, graph_id, split_id, "
        "node_index, node_id, fused_index, fused_node_id, start_ns, duration_ns, bytes, wait_ns, extra) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_KERNEL] = "INSERT INTO kernel_list(pid, tid, api, device, name, start_ns, duration_ns, stream, "
        "correlation, graph_node, graph_id, sched_id, split_id, backend_id, node_index, node_id) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_REGION] = "INSERT INTO regions(pid, tid, name, depth, start_ns, duration_ns) VALUES(?,?,?,?,?,?)",
    [ST_BATCH] = "INSERT INTO batches(pid, tid, batch_id, api, status, start_ns, duration_ns, n_tokens, n_seqs, "
        "n_outputs) VALUES(?,?,?,?,?,?,?,?,?,?)",
    [ST_BATCH_SEQ] = "INSERT INTO batch_seqs(pid, batch_id, seq_id, n_tokens, pos_min, pos_max, n_outputs) VALUES(?,?,?,?,?,?,?)",
    [ST_FUSION] = "INSERT OR REPLACE INTO temp.dev_fusion(pid, graph_id, sched_id, node_index, label, "
        "fused_index, fused_node_id) VALUES(?,?,?,?,?,?,?)",
    [ST_BUF_ALLOC] = "INSERT INTO buffer_list(pid, buffer_id, handle, buft, device, is_host, source, usage, "
        "size, alignment, alloc_ns) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
    [ST_BUF_EVENT] = "INSERT INTO temp.buffer_events(pid, handle, t_ns, event, usage) VALUES(?,?,?,?,?)",
    [ST_DEVMEM] = "INSERT INTO device_memory(pid, device, dev_type, moment, t_ns, free, total) VALUES(?,?,?,?,?,?,?)",
    [ST_PLAN] = "INSERT OR REPLACE INTO plan_list(pid, plan_id, sched_id, t_ns, n_nodes, n_tensors) VALUES(?,?,?,?,?,?)",
    [ST_PLACEMENT] = "INSERT INTO placements(pid, plan_id, idx, node_id, node_index, first, last, root, flags, "
        "handle, buffer_id, offset, size) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [ST_LOSS] = "INSERT INTO losses(pid, graph_id, records) VALUES(?,?,?)",
    [ST_NODE_PLACE] = "INSERT INTO node_placements(pid, sched_id, graph_id, node_index, node_id, backend_id, "
        "preferred_backend_id, reason, src_nodes) VALUES(?,?,?,?,?,?,?,?,?)",
    [ST_OP_THREAD] = "INSERT INTO op_threads(pid, graph_id, sched_id, split_id, node_index, thread, tid, "
        "busy_ns, wait_ns, imbalance_ns) VALUES(?,?,?,?,?,?,?,?,?,?)",
    [ST_THREAD] = "INSERT OR IGNORE INTO temp.ggml_threads(pid, tid) VALUES(?,?)",
    /* a thread's latest counters: the one its slot's release sent, or the process's exit, whichever was read later */
    [ST_THREAD_END] = "INSERT INTO temp.thread_ends(pid, tid, name, start_ns, at_ns, cpu_ns, runq_ns, slices)"
        " VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(pid, tid) DO UPDATE SET name = excluded.name, at_ns = excluded.at_ns,"
        " cpu_ns = excluded.cpu_ns, runq_ns = excluded.runq_ns, slices = excluded.slices WHERE excluded.at_ns > at_ns",
};


/* (pid, node_id) -> op name, so that an OP record gets its name when it is stored. */
typedef struct {
    uint64_t key;
    uint64_t nbytes;
    char     op[32];
} node_name;

struct ggprof_store {
    sqlite3      *db;
    sqlite3_stmt *st[ST_COUNT];
    node_name    *names;
    size_t        names_cap, names_n;
    ggprof_store_counts counts;
    /* the OP record of the device node whose dispatches are being read (msg_kernel), until another node's come */
    ggprof_msg_event dev;
    int32_t          dev_pid, dev_tid;
    bool             dev_open;
    uint64_t         next_buffer_id;
    int32_t          last_pid, last_tid; /* the thread note_thread saw last (0, 0: none) */
    ggprof_cpu_plans *plans;             /* what names the ops of CPU_OPS messages (CPU_OPS_PLAN) */
};

static int exec(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL); }

int ggprof_store_create(ggprof_store **out, const char *path, char *why, size_t why_len) {
    ggprof_store *s = calloc(1, sizeof(*s));
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return -1;
    }
    /* NOMUTEX: one thread uses a connection; serialized mode locked a mutex around every column read. A named
     * database is the empty private file its caller made (ggprof_outfile_begin): opened, never created here, nor
     * through a link; SQLite makes its journal with the database's mode. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (*path ? SQLITE_OPEN_NOFOLLOW : SQLITE_OPEN_CREATE);
    if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
        snprintf(why, why_len, "cannot create '%s': %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        sqlite3_close(s->db);
        free(s);
        return -1;
    }
    char *err = NULL;
    /* synchronous=OFF: a killed collector still leaves every committed batch (the OS has the pages); only
     * a power cut could lose them, which a profile can afford. */
    exec(s->db, "PRAGMA synchronous=OFF");
    /* A reader of the file being written (sqlite3 on it, as record finishes in the background) delays a commit, and
     * never fails it: a commit that fails stops the storing, as a full disk does. */
    sqlite3_busy_timeout(s->db, 60000);
    if (ggprof_db_create_schema(s->db, &err) != SQLITE_OK) {
        snprintf(why, why_len, "cannot create '%s': %s", *path ? path : "temporary trace", err ? err : "?");
        sqlite3_free(err);
        sqlite3_close(s->db);
        free(s);
        return -1;
    }
    /* The records' index from the start: records come in graph order, so each lands at the index's end, and a
     * database built while the workload runs has it when the run ends (built at the end, it cost 1 s a million). */
    exec(s->db, "CREATE INDEX events_graph ON events(pid, graph_id, split_id)");
    /* device fused groups (msg_fusion), until ggprof_store_finish names their OP records */
    exec(s->db, "CREATE TEMP TABLE buffer_events(pid INTEGER, handle INTEGER, t_ns INTEGER, event INTEGER, usage INTEGER)");
    /* The threads that call into ggml (a record or a llama_decode of theirs), as they come: the collector's /proc
     * sampler keeps their idle time (collector/proc_sample.c); found after the run, it was a scan of every record. */
    exec(s->db, "CREATE TEMP TABLE ggml_threads(pid INTEGER, tid INTEGER, PRIMARY KEY(pid, tid))");
    /* The threads' counters at their end (THREAD_END), for the sampler's thread_stats (collector/proc_sample.c). */
    exec(s->db, "CREATE TEMP TABLE thread_ends(pid INTEGER, tid INTEGER, name TEXT, start_ns INTEGER, at_ns INTEGER,"
                " cpu_ns INTEGER, runq_ns INTEGER, slices INTEGER, PRIMARY KEY(pid, tid))");
    exec(s->db, "CREATE TEMP TABLE dev_fusion(pid INTEGER, graph_id INTEGER, sched_id INTEGER, node_index INTEGER,"
                " label TEXT, fused_index INTEGER, fused_node_id INTEGER, PRIMARY KEY(pid, graph_id, node_index))");
    for (int i = 0; i < ST_COUNT; i++) {
        if (sqlite3_prepare_v2(s->db, k_sql[i], -1, &s->st[i], NULL) != SQLITE_OK) {
            snprintf(why, why_len, "internal: store: %s: %s", k_sql[i], sqlite3_errmsg(s->db));
            sqlite3_close(s->db);
            free(s);
            return -1;
        }
    }
    exec(s->db, "BEGIN");
    *out = s;
    return 0;
}

/* A full disk (or an I/O error) stops storing: the batch it hit is rolled back, what was committed stays, and
 * every later message is skipped. */
static void failed(ggprof_store *s) {
    int e = sqlite3_errcode(s->db);
    if (e == SQLITE_FULL || e == SQLITE_IOERR) {
        s->counts.full = e;
        if (!sqlite3_get_autocommit(s->db)) exec(s->db, "ROLLBACK");
    } else {
        fprintf(stderr, "ggprof: internal: store: %s\n", sqlite3_errmsg(s->db));
    }
}

static void run(ggprof_store *s, sqlite3_stmt *st) {
    if (!s->counts.full && sqlite3_step(st) != SQLITE_DONE) failed(s);
    sqlite3_reset(st);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s, size_t max) {
    sqlite3_bind_text(st, i, s, (int) strnlen(s, max), SQLITE_TRANSIENT);
}

static void bind_id(sqlite3_stmt *st, int i, uint64_t v, uint64_t none) {
    if (v == none) {
        sqlite3_bind_null(st, i);
    } else {
        sqlite3_bind_int64(st, i, (sqlite3_int64) v);
    }
}

static node_name *name_slot(ggprof_store *s, uint64_t key, int insert) {
    if (insert && (s->names_n + 1) * 2 > s->names_cap) {
        size_t cap = s->names_cap ? s->names_cap * 2 : 1024;
        node_name *n = calloc(cap, sizeof(*n));
        if (!n) return NULL;
        for (size_t i = 0; i < s->names_cap; i++) {
            if (!s->names[i].key) continue;
            size_t p = (s->names[i].key * 0x9e3779b97f4a7c15ull) >> 20 & (cap - 1);
            while (n[p].key) p = (p + 1) & (cap - 1);
            n[p] = s->names[i];
        }
        free(s->names);
        s->names     = n;
        s->names_cap = cap;
    }
    if (!s->names_cap) return NULL;
    size_t p = (key * 0x9e3779b97f4a7c15ull) >> 20 & (s->names_cap - 1);
    while (s->names[p].key && s->names[p].key != key) p = (p + 1) & (s->names_cap - 1);
    if (!s->names[p].key) {
        if (!insert) return NULL;
        s->names[p].key = key;
        s->names_n++;
    }
    return &s->names[p];
}

static uint64_t node_key(int32_t pid, uint32_t node_id) { return ((uint64_t) (uint32_t) pid << 32 | node_id) + 1; }

static void store_node(ggprof_store *s, int32_t pid, const ggprof_msg_node *n) {
    sqlite3_stmt *st = s->st[ST_NODE];
    char buf[1024];
    int  nsrc = n->n_src < 0 ? 0 : n->n_src > GGPROF_MAX_SRC ? GGPROF_MAX_SRC : n->n_src;
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int64(st, 2, n->node_id);
    bind_text(st, 3, n->op, sizeof(n->op));
    sqlite3_bind_int(st, 4, n->sub_op);
    bind_text(st, 5, n->sub_op_name, sizeof(n->sub_op_name));
    bind_text(st, 6, n->tensor_name, sizeof(n->tensor_name));
    sqlite3_bind_int(st, 7, n->out_type);
    ggprof_json_i64s(buf, sizeof(buf), n->ne, 4);
    sqlite3_bind_text(st, 8, buf, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 9, nsrc);
    ggprof_json_shapes(buf, sizeof(buf), n->ne_src, nsrc);
    sqlite3_bind_text(st, 10, buf, -1, SQLITE_TRANSIENT);
    ggprof_json_shapes(buf, sizeof(buf), n->nb_src, nsrc);
    sqlite3_bind_text(st, 11, buf, -1, SQLITE_TRANSIENT);
    ggprof_json_i32s(buf, sizeof(buf), n->type_src, nsrc);
    sqlite3_bind_text(st, 12, buf, -1, SQLITE_TRANSIENT);
    ggprof_json_i32s(buf, sizeof(buf), n->op_params, GGPROF_N_OP_PARAMS);
    sqlite3_bind_text(st, 13, buf, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 14, (sqlite3_int64) n->nbytes);
    if (n->op_id >= 0) {
        sqlite3_bind_int(st, 15, n->op_id);
    } else {
        sqlite3_bind_null(st, 15);
    }
    run(s, st);
    node_name *slot = name_slot(s, node_key(pid, n->node_id), 1);
    if (slot) {
        snprintf(slot->op, sizeof(slot->op), "%s", n->op);
        slot->nbytes = n->nbytes;
    }
    s->counts.nodes++;
}

/* temp.ggml_threads gets the thread, unless it was the last one seen (one insert a thread, not a record). */
static void note_thread(ggprof_store *s, int32_t pid, int32_t tid) {
    if (pid == s->last_pid && tid == s->last_tid) return;
    s->last_pid = pid, s->last_tid = tid;
    sqlite3_stmt *st = s->st[ST_THREAD];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, tid);
    run(s, st);
}

void ggprof_store_event(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_event *e, const char *name,
                        const char *extra) {
    note_thread(s, pid, tid);
    sqlite3_stmt *st = s->st[ST_EVENT];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, tid);
    sqlite3_bind_int(st, 3, e->type);
    sqlite3_bind_text(st, 4, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 5, e->timing);
    sqlite3_bind_int(st, 6, e->backend_id);
    sqlite3_bind_int64(st, 7, e->sched_id);
    bind_id(st, 8, e->graph_id, GGPROF_GRAPH_NONE);
    sqlite3_bind_int(st, 9, e->split_id);
    sqlite3_bind_int(st, 10, e->node_index);
    sqlite3_bind_int64(st, 11, e->node_id);
    sqlite3_bind_int(st, 12, e->fused_index);
    sqlite3_bind_int64(st, 13, e->fused_node_id);
    sqlite3_bind_int64(st, 14, (sqlite3_int64) e->start_ns);
    sqlite3_bind_int64(st, 15, (sqlite3_int64) e->duration_ns);
    sqlite3_bind_int64(st, 16, (sqlite3_int64) e->bytes);
    sqlite3_bind_int64(st, 17, (sqlite3_int64) e->wait_ns);
    if (extra) {
        sqlite3_bind_text(st, 18, extra, -1, SQLITE_TRANSIENT);
    } else {
        sqlite3_bind_null(st, 18);
    }
    run(s, st);
    s->counts.events++;
}

static const char *event_name(ggprof_store *s, int32_t pid, const ggprof_msg_event *e) {
    switch (e->type) {
    case GGPROF_REC_OP: {
        node_name *n = name_slot(s, node_key(pid, e->node_id), 0);
        return n ? n->op : "unknown";
    }
    case GGPROF_REC_COPY: return e->sub < 4 ? ggprof_copy_names[e->sub] : "copy";
    case GGPROF_REC_SYNC: return e->sub < GGPROF_SYNC_COUNT ? ggprof_sync_names[e->sub] : "sync";
    }
    return "unknown";
}

/* A CPU split's compact ops become the OP and SYNC records the rest of ggprof reads. */
struct cpu_ctx {
    ggprof_store           *s;
    int32_t                 pid, tid;
    const ggprof_msg_cpu_ops *m;
};

static void store_interval(const ggprof_cpu_interval *iv, void *user) {
    struct cpu_ctx *c = user;
    ggprof_msg_event e;
    memset(&e, 0, sizeof(e));
    e.type          = (uint16_t) iv->type;
    e.sub           = (uint16_t) iv->sync;
    e.timing        = GGPROF_TIMING_CPU_TICK;
    e.backend_id    = (int16_t) c->m->backend_id;
    e.sched_id      = c->m->sched_id;
    e.graph_id      = c->m->graph_id;
    e.split_id      = c->m->split_id;
    e.node_id       = iv->node_id;
    e.fused_node_id = iv->fused_node_id;
    e.node_index    = iv->node_index;
    e.fused_index   = iv->fused_index;
    e.start_ns      = iv->start_ns;
    e.duration_ns   = iv->duration_ns;
    e.wait_ns       = iv->wait_ns;
    const char *name = ggprof_sync_names[iv->sync];
    if (iv->type == GGPROF_REC_OP) {
        node_name *n = name_slot(c->s, node_key(c->pid, iv->node_id), 0);
        name    = n ? n->op : "unknown";
        e.bytes = n ? n->nbytes : 0;
    }
    ggprof_store_event(c->s, c->pid, c->tid, &e, name, NULL);
}

/* Ops whose plan never reached the trace name no node: none of the split's records is stored (a split without its
 * ops would read as a shorter one), and they are counted (meta cpu_ops_unplanned). */
static void store_cpu_ops(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_cpu_ops *m) {
    const ggprof_cpu_op_id *ids = ggprof_cpu_plans_find(s->plans, pid, m);
    if (!ids && m->n_ops) {
        uint64_t graph;
        s->counts.unplanned += ggprof_msg_records(&m->h, &graph);
        return;
    }
    struct cpu_ctx c = { s, pid, tid, m };
    ggprof_cpu_ops_expand(m, ids, store_interval, &c);
}

/* One function per message kind; each binds the message to its statement and counts it. */
static void msg_process(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) pid; /* the message's own: a process describes itself */
    (void) tid;
    const ggprof_msg_process *p = (const void *) m;
    sqlite3_stmt *st = s->st[ST_PROC];
    sqlite3_bind_int(st, 1, p->pid);
    sqlite3_bind_int(st, 2, p->ppid);
    bind_text(st, 3, p->exe, sizeof(p->exe));
    bind_text(st, 4, p->ggml_version, sizeof(p->ggml_version));
    bind_text(st, 5, p->ggml_commit, sizeof(p->ggml_commit));
    bind_text(st, 6, p->ggml_lib, sizeof(p->ggml_lib));
    sqlite3_bind_int64(st, 7, (sqlite3_int64) p->start_ns);
    run(s, st);
    s->counts.processes++;
}

static void msg_type(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_type *t = (const void *) m;
    sqlite3_stmt *st = s->st[ST_TYPE];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, t->type);
    bind_text(st, 3, t->name, sizeof(t->name));
    sqlite3_bind_int64(st, 4, (sqlite3_int64) t->type_size);
    sqlite3_bind_int(st, 5, t->blck_size);
    run(s, st);
}

static void msg_backend(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_backend *b = (const void *) m;
    sqlite3_stmt *st = s->st[ST_BACKEND];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int64(st, 2, b->sched_id);
    sqlite3_bind_int(st, 3, b->backend_id);
    bind_text(st, 4, b->name, sizeof(b->name));
    bind_text(st, 5, b->device, sizeof(b->device));
    sqlite3_bind_int(st, 6, b->device_type);
    sqlite3_bind_int(st, 7, b->is_host);
    bind_text(st, 8, b->description, sizeof(b->description));
    run(s, st);
}

static void msg_graph(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_graph *g = (const void *) m;
    sqlite3_stmt *st = s->st[ST_GRAPH];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int64(st, 2, (sqlite3_int64) g->graph_id);
    sqlite3_bind_int64(st, 3, g->sched_id);
    sqlite3_bind_int64(st, 4, (sqlite3_int64) g->start_ns);
    sqlite3_bind_int64(st, 5, (sqlite3_int64) g->duration_ns);
    sqlite3_bind_int(st, 6, g->n_nodes);
    sqlite3_bind_int(st, 7, g->n_splits);
    if (g->batch) {
        sqlite3_bind_int64(st, 8, g->batch);
    } else {
        sqlite3_bind_null(st, 8);
    }
    run(s, st);
    s->counts.graphs++;
}

static void msg_batch(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    const ggprof_msg_batch *b = (const void *) m;
    note_thread(s, pid, tid);
    sqlite3_stmt *st = s->st[ST_BATCH];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, tid);
    sqlite3_bind_int64(st, 3, b->batch);
    sqlite3_bind_text(st, 4, b->api == 1 ? "encode" : "decode", -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 5, b->status);
    sqlite3_bind_int64(st, 6, (sqlite3_int64) b->start_ns);
    sqlite3_bind_int64(st, 7, (sqlite3_int64) b->duration_ns);
    sqlite3_bind_int(st, 8, b->n_tokens);
    sqlite3_bind_int(st, 9, b->n_seqs);
    sqlite3_bind_int(st, 10, b->n_outputs);
    run(s, st);
    st = s->st[ST_BATCH_SEQ];
    for (int i = 0, n = ggprof_batch_listed(b); i < n; i++) {
        const ggprof_batch_seq *q = &b->seqs[i];
        sqlite3_bind_int(st, 1, pid);
        sqlite3_bind_int64(st, 2, b->batch);
        sqlite3_bind_int(st, 3, q->seq_id);
        sqlite3_bind_int(st, 4, q->n_tokens);
        sqlite3_bind_int(st, 5, q->pos_min);
        sqlite3_bind_int(st, 6, q->pos_max);
        sqlite3_bind_int(st, 7, q->n_outputs);
        run(s, st);
    }
}

static void msg_split(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_split *p = (const void *) m;
    sqlite3_stmt *st = s->st[ST_SPLIT];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int64(st, 2, (sqlite3_int64) p->graph_id);
    sqlite3_bind_int(st, 3, p->split_id);
    sqlite3_bind_int(st, 4, p->backend_id);
    sqlite3_bind_int64(st, 5, p->sched_id);
    sqlite3_bind_int64(st, 6, (sqlite3_int64) p->start_ns);
    sqlite3_bind_int64(st, 7, (sqlite3_int64) p->duration_ns);
    sqlite3_bind_int(st, 8, p->n_nodes);
    sqlite3_bind_int(st, 9, p->node_start);
    if (p->ticks_matched < 0) {
        sqlite3_bind_null(st, 10);
    } else {
        sqlite3_bind_int(st, 10, p->ticks_matched);
    }
    sqlite3_bind_int(st, 11, p->n_ticks);
    sqlite3_bind_int(st, 12, p->n_expected);
    sqlite3_bind_int64(st, 13, (sqlite3_int64) p->engine_ns);
    run(s, st);
    s->counts.splits++;
}

static void msg_event(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    const ggprof_msg_event *e = (const void *) m;
    ggprof_store_event(s, pid, tid, e, event_name(s, pid, e), NULL);
}

/* A device node's OP record (timing DEVICE), made of its dispatches: they come one after another, each joined to
 * the node ggml-vulkan was recording (engine/interpose.c); its time is the dispatches' device time summed, from
 * the first one's start. Written when a dispatch of another node comes, and when the store finishes. */
static void dev_flush(ggprof_store *s) {
    if (!s->dev_open) return;
    s->dev_open = false;
    ggprof_store_event(s, s->dev_pid, s->dev_tid, &s->dev, event_name(s, s->dev_pid, &s->dev), NULL);
}

static void dev_kernel(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_kernel *k) {
    uint64_t dur = k->end_ns > k->start_ns ? k->end_ns - k->start_ns : 0;
    ggprof_msg_event *e = &s->dev;
    if (s->dev_open && s->dev_pid == pid && e->graph_id == k->graph_id && e->split_id == k->split_id &&
        e->node_index == k->node_index && e->sched_id == k->sched_id) {
        e->duration_ns += dur;
        return;
    }
    dev_flush(s);
    memset(e, 0, sizeof(*e));
    e->h           = (ggprof_msg_hdr){ sizeof(*e), GGPROF_MSG_EVENT, 0 };
    e->type        = GGPROF_REC_OP;
    e->timing      = GGPROF_TIMING_DEVICE;
    e->backend_id  = (int16_t) k->backend_id;
    e->sched_id    = k->sched_id;
    e->graph_id    = k->graph_id;
    e->split_id    = k->split_id;
    e->node_index  = k->node_index;
    e->node_id     = k->node_id;
    e->fused_index = -1;
    e->start_ns    = k->start_ns;
    e->duration_ns = dur;
    node_name *n   = name_slot(s, node_key(pid, k->node_id), 0);
    e->bytes       = n ? n->nbytes : 0;
    s->dev_pid = pid, s->dev_tid = tid, s->dev_open = true;
}

static void msg_kernel(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    const ggprof_msg_kernel *k = (const void *) m;
    sqlite3_stmt *st = s->st[ST_KERNEL];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, tid);
    sqlite3_bind_int(st, 3, (int) k->api);
    sqlite3_bind_int(st, 4, (int) k->device);
    bind_text(st, 5, k->name, sizeof(k->name));
    sqlite3_bind_int64(st, 6, (sqlite3_int64) k->start_ns);
    sqlite3_bind_int64(st, 7, (sqlite3_int64) (k->end_ns > k->start_ns ? k->end_ns - k->start_ns : 0));
    sqlite3_bind_int64(st, 8, (sqlite3_int64) k->stream);
    sqlite3_bind_int64(st, 9, (sqlite3_int64) k->correlation);
    sqlite3_bind_int64(st, 10, (sqlite3_int64) k->graph_node);
    bind_id(st, 11, k->graph_id, GGPROF_GRAPH_NONE);
    sqlite3_bind_int64(st, 12, k->sched_id);
    sqlite3_bind_int(st, 13, k->split_id);
    sqlite3_bind_int(st, 14, k->backend_id);
    sqlite3_bind_int(st, 15, k->node_index);
    sqlite3_bind_int64(st, 16, k->node_id);
    run(s, st);
    s->counts.kernels++;
    /* Vulkan dispatches and CUDA kernels know their node (tests/e2e/vulkan_timestamps.sh, graph_map.h); OpenCL's
     * kernels do not (ggml-opencl is not asked about: it gets no node) */
    if (k->node_id && k->node_index >= 0 && k->graph_id != GGPROF_GRAPH_NONE) {
        dev_kernel(s, pid, tid, k);
    }
}

/* A device node group the backend computed as one: its label, the members' ops joined by '+' as the CPU's fused
 * pairs are (RMS_NORM+MUL), goes on the head's OP record when the store finishes (the group's dispatches may be
 * read before or after this message comes). */
static void msg_fusion(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_fusion *f = (const void *) m;
    if (f->n < 2) return;
    char     label[GGPROF_MAX_STR];
    size_t   len = 0;
    uint32_t n   = f->n < GGPROF_MAX_FUSED ? f->n : GGPROF_MAX_FUSED;
    for (uint32_t i = 0; i < n && len < sizeof(label); i++) {
        const node_name *nn = name_slot(s, node_key(pid, f->node_id[i]), 0);
        len += (size_t) snprintf(label + len, sizeof(label) - len, "%s%s", i ? "+" : "", nn ? nn->op : "unknown");
    }
    if (f->n > n && len < sizeof(label)) snprintf(label + len, sizeof(label) - len, "+%u more", f->n - n);
    sqlite3_stmt *st = s->st[ST_FUSION];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int64(st, 2, (sqlite3_int64) f->graph_id);
    sqlite3_bind_int64(st, 3, f->sched_id);
    sqlite3_bind_int(st, 4, f->head_index);
    bind_text(st, 5, label, sizeof(label));
    sqlite3_bind_int(st, 6, f->head_index + 1);
    sqlite3_bind_int64(st, 7, f->node_id[1]);
    run(s, st);
}

static void msg_region(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    const ggprof_msg_region *r = (const void *) m;
    sqlite3_stmt *st = s->st[ST_REGION];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, tid);
    bind_text(st, 3, r->name, sizeof(r->name));
    sqlite3_bind_int(st, 4, (int) r->depth);
    sqlite3_bind_int64(st, 5, (sqlite3_int64) r->start_ns);
    sqlite3_bind_int64(st, 6, (sqlite3_int64) (r->end_ns > r->start_ns ? r->end_ns - r->start_ns : 0));
    run(s, st);
}

static void msg_note(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_note *n = (const void *) m;
    char text[sizeof(n->text) + 1];
    snprintf(text, sizeof(text), "%.*s", (int) strnlen(n->text, sizeof(n->text)), n->text);
    if (!s->counts.full && ggprof_db_note(s->db, pid, text) != 0) failed(s);
    s->counts.notes++;
}

/* The CPU threads a plan asked for, a number where it arrives (the engine's note says it for people). */
static void msg_cpu_plan(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_cpu_plan *p = (const void *) m;
    if (s->counts.full || p->n_threads <= 0) return;
    if (ggprof_db_put_cpu_threads(s->db, pid, p->n_threads) != 0) failed(s);
}

/* A thread's scheduler counters at its end, or at its process's exit (wire.h): the latest reading is kept. */
static void msg_thread_end(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_thread_end *e  = (const void *) m;
    sqlite3_stmt                *st = s->st[ST_THREAD_END];
    if (e->tid <= 0 || e->at_ns > INT64_MAX || e->start_ns > INT64_MAX || e->cpu_ns > INT64_MAX ||
        e->runq_ns > INT64_MAX || e->slices > INT64_MAX) {
        return;
    }
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, e->tid);
    bind_text(st, 3, e->name, sizeof(e->name));
    sqlite3_bind_int64(st, 4, (sqlite3_int64) e->start_ns);
    sqlite3_bind_int64(st, 5, (sqlite3_int64) e->at_ns);
    sqlite3_bind_int64(st, 6, (sqlite3_int64) e->cpu_ns);
    sqlite3_bind_int64(st, 7, (sqlite3_int64) e->runq_ns);
    sqlite3_bind_int64(st, 8, (sqlite3_int64) e->slices);
    run(s, st);
}

/* What a thread's sink could not write, graph by graph (ring.h): data like any other, its counts only summed. */
static void msg_loss(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_loss *l = (const void *) m;
    sqlite3_stmt *st = s->st[ST_LOSS];
    for (uint32_t i = 0; i < l->n && i < GGPROF_LOSS_MAX; i++) {
        if (l->e[i].records == 0) continue;
        sqlite3_bind_int(st, 1, pid);
        if (l->e[i].graph_id == GGPROF_GRAPH_ANY || l->e[i].graph_id > INT64_MAX) {
            sqlite3_bind_null(st, 2);
        } else {
            sqlite3_bind_int64(st, 2, (sqlite3_int64) l->e[i].graph_id);
        }
        sqlite3_bind_int64(st, 3, (sqlite3_int64) (l->e[i].records > INT32_MAX ? INT32_MAX : l->e[i].records));
        run(s, st);
    }
}

static void msg_node(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    store_node(s, pid, (const void *) m);
}

static void msg_cpu_ops(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    store_cpu_ops(s, pid, tid, (const void *) m);
}

static void msg_cpu_ops_plan(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    if (!s->plans) s->plans = ggprof_cpu_plans_new();
    if (s->plans) ggprof_cpu_plans_add(s->plans, pid, m);
}

/* A buffer's allocation is a row; its usage and its free are events, joined to it when the store finishes: threads
 * drain in no particular order, and a handle (the buffer's address) is reused once it is freed, so which allocation
 * an event belongs to is known only by time (the latest one at that handle before it). */
static void msg_buffer(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_buffer *b = (const void *) m;
    if (b->event != GGPROF_BUF_ALLOC) {
        sqlite3_stmt *st = s->st[ST_BUF_EVENT];
        sqlite3_bind_int(st, 1, pid);
        sqlite3_bind_int64(st, 2, (sqlite3_int64) b->handle);
        sqlite3_bind_int64(st, 3, (sqlite3_int64) b->t_ns);
        sqlite3_bind_int(st, 4, (int) b->event);
        sqlite3_bind_int(st, 5, (int) b->usage);
        run(s, st);
        return;
    }
    sqlite3_stmt *st = s->st[ST_BUF_ALLOC];
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int64(st, 2, (sqlite3_int64) ++s->next_buffer_id);
    sqlite3_bind_int64(st, 3, (sqlite3_int64) b->handle);
    bind_text(st, 4, b->buft, sizeof(b->buft));
    bind_text(st, 5, b->device, sizeof(b->device));
    sqlite3_bind_int(st, 6, (int) b->is_host);
    sqlite3_bind_int(st, 7, (int) b->source);
    sqlite3_bind_int(st, 8, (int) b->usage);
    sqlite3_bind_int64(st, 9, (sqlite3_int64) b->size);
    sqlite3_bind_int64(st, 10, (sqlite3_int64) b->alignment);
    sqlite3_bind_int64(st, 11, (sqlite3_int64) b->t_ns);
    run(s, st);
}

static void msg_devmem(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    static const char *const moments[] = { "start", "first_graph", "end" };
    const ggprof_msg_devmem *d = (const void *) m;
    if (d->moment >= sizeof(moments) / sizeof(moments[0])) return;
    sqlite3_stmt *st = s->st[ST_DEVMEM];
    sqlite3_bind_int(st, 1, pid);
    bind_text(st, 2, d->device, sizeof(d->device));
    sqlite3_bind_int(st, 3, d->dev_type);
    sqlite3_bind_text(st, 4, moments[d->moment], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, (sqlite3_int64) d->t_ns);
    sqlite3_bind_int64(st, 6, (sqlite3_int64) d->free);
    sqlite3_bind_int64(st, 7, (sqlite3_int64) d->total);
    run(s, st);
}

static void msg_placement(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_placement *p = (const void *) m;
    if (p->first_entry == 0) {
        sqlite3_stmt *st = s->st[ST_PLAN];
        sqlite3_bind_int(st, 1, pid);
        sqlite3_bind_int64(st, 2, p->plan);
        sqlite3_bind_int64(st, 3, p->sched_id);
        sqlite3_bind_int64(st, 4, (sqlite3_int64) p->t_ns);
        sqlite3_bind_int(st, 5, p->n_nodes);
        sqlite3_bind_int64(st, 6, p->n_total);
        run(s, st);
    }
    sqlite3_stmt *st = s->st[ST_PLACEMENT];
    for (uint32_t i = 0; i < p->n; i++) {
        const ggprof_placement *e = &p->e[i];
        sqlite3_bind_int(st, 1, pid);
        sqlite3_bind_int64(st, 2, p->plan);
        sqlite3_bind_int64(st, 3, p->first_entry + i);
        sqlite3_bind_int64(st, 4, e->node_id);
        sqlite3_bind_int(st, 5, e->node_index);
        sqlite3_bind_int(st, 6, e->first);
        sqlite3_bind_int(st, 7, e->last);
        sqlite3_bind_int(st, 8, e->root);
        sqlite3_bind_int(st, 9, (int) e->flags);
        sqlite3_bind_int64(st, 10, (sqlite3_int64) e->handle);
        sqlite3_bind_null(st, 11); /* the buffer, by handle and time when the store finishes */
        sqlite3_bind_int64(st, 12, (sqlite3_int64) e->offset);
        sqlite3_bind_int64(st, 13, (sqlite3_int64) e->size);
        run(s, st);
    }
}

static void msg_node_places(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_node_places *p  = (const void *) m;
    sqlite3_stmt                 *st = s->st[ST_NODE_PLACE];
    for (uint32_t i = 0; i < p->n; i++) {
        const ggprof_node_place *e = &p->e[i];
        sqlite3_bind_int(st, 1, pid);
        sqlite3_bind_int64(st, 2, p->sched_id);
        if (p->graph_id == GGPROF_GRAPH_NONE || p->graph_id > INT64_MAX) sqlite3_bind_null(st, 3);
        else sqlite3_bind_int64(st, 3, (sqlite3_int64) p->graph_id);
        sqlite3_bind_int(st, 4, e->node_index);
        sqlite3_bind_int64(st, 5, e->node_id);
        sqlite3_bind_int(st, 6, e->backend_id);
        if (e->preferred_backend_id < 0) sqlite3_bind_null(st, 7);
        else sqlite3_bind_int(st, 7, e->preferred_backend_id);
        if (e->reason < GGPROF_PLACE_COUNT) sqlite3_bind_text(st, 8, ggprof_place_reason_names[e->reason], -1, SQLITE_STATIC);
        else sqlite3_bind_null(st, 8);
        char srcs[GGPROF_MAX_SRC * 12 + 3];
        int  at = snprintf(srcs, sizeof(srcs), "[");
        for (uint32_t j = 0; j < e->n_src && j < GGPROF_MAX_SRC; j++) {
            at += snprintf(srcs + at, sizeof(srcs) - (size_t) at, "%s%" PRId32, j ? "," : "", e->src[j]);
        }
        snprintf(srcs + at, sizeof(srcs) - (size_t) at, "]");
        sqlite3_bind_text(st, 9, srcs, -1, SQLITE_TRANSIENT);
        run(s, st);
    }
}

/* record --threads: a row per CPU op and thread (wire.h, ggprof_msg_cpu_threads). */
static void msg_cpu_threads(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    (void) tid;
    const ggprof_msg_cpu_threads *c  = (const void *) m;
    sqlite3_stmt                 *st = s->st[ST_OP_THREAD];
    if (c->graph_id > INT64_MAX) return;
    for (uint32_t i = 0; i < c->n; i++) {
        const ggprof_cpu_thread_op *e = &c->e[i];
        sqlite3_bind_int(st, 1, pid);
        sqlite3_bind_int64(st, 2, (sqlite3_int64) c->graph_id);
        sqlite3_bind_int64(st, 3, c->sched_id);
        sqlite3_bind_int(st, 4, c->split_id);
        sqlite3_bind_int(st, 5, e->node_index);
        sqlite3_bind_int(st, 6, e->thread);
        sqlite3_bind_int(st, 7, e->tid);
        sqlite3_bind_int64(st, 8, e->busy_ns);
        sqlite3_bind_int64(st, 9, e->wait_ns);
        sqlite3_bind_int64(st, 10, e->imbalance_ns);
        run(s, st);
    }
}

typedef void (*store_fn)(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m);
static const store_fn k_store[] = {
    [GGPROF_MSG_PROCESS] = msg_process,
    [GGPROF_MSG_TYPE] = msg_type,
    [GGPROF_MSG_BACKEND] = msg_backend,
    [GGPROF_MSG_GRAPH] = msg_graph,
    [GGPROF_MSG_SPLIT] = msg_split,
    [GGPROF_MSG_EVENT] = msg_event,
    [GGPROF_MSG_KERNEL] = msg_kernel,
    [GGPROF_MSG_REGION] = msg_region,
    [GGPROF_MSG_BATCH] = msg_batch,
    [GGPROF_MSG_FUSION] = msg_fusion,
    [GGPROF_MSG_NOTE] = msg_note,
    [GGPROF_MSG_NODE] = msg_node,
    [GGPROF_MSG_CPU_OPS] = msg_cpu_ops,
    [GGPROF_MSG_BUFFER] = msg_buffer,
    [GGPROF_MSG_DEVMEM] = msg_devmem,
    [GGPROF_MSG_PLACEMENT] = msg_placement,
    [GGPROF_MSG_LOSS] = msg_loss,
    [GGPROF_MSG_NODE_PLACES] = msg_node_places,
    [GGPROF_MSG_CPU_THREADS] = msg_cpu_threads,
    [GGPROF_MSG_CPU_PLAN] = msg_cpu_plan,
    [GGPROF_MSG_THREAD_END] = msg_thread_end,
    [GGPROF_MSG_CPU_OPS_PLAN] = msg_cpu_ops_plan,
};

/* The size each kind's message has: a shorter one (a buggy or hostile process writes what it likes into its slot)
 * is skipped, never read past its end. */
static const uint32_t k_min_size[] = {
    [GGPROF_MSG_PROCESS] = sizeof(ggprof_msg_process), [GGPROF_MSG_TYPE] = sizeof(ggprof_msg_type),
    [GGPROF_MSG_BACKEND] = sizeof(ggprof_msg_backend), [GGPROF_MSG_NODE] = sizeof(ggprof_msg_node),
    [GGPROF_MSG_GRAPH] = sizeof(ggprof_msg_graph),     [GGPROF_MSG_SPLIT] = sizeof(ggprof_msg_split),
    [GGPROF_MSG_EVENT] = sizeof(ggprof_msg_event),     [GGPROF_MSG_NOTE] = sizeof(ggprof_msg_note),
    [GGPROF_MSG_CPU_OPS] = sizeof(ggprof_msg_cpu_ops), [GGPROF_MSG_KERNEL] = sizeof(ggprof_msg_kernel),
    [GGPROF_MSG_REGION] = sizeof(ggprof_msg_region), [GGPROF_MSG_BATCH] = GGPROF_BATCH_SIZE(0),
    [GGPROF_MSG_FUSION] = sizeof(ggprof_msg_fusion), [GGPROF_MSG_BUFFER] = sizeof(ggprof_msg_buffer),
    [GGPROF_MSG_DEVMEM] = sizeof(ggprof_msg_devmem), [GGPROF_MSG_PLACEMENT] = sizeof(ggprof_msg_placement),
    [GGPROF_MSG_LOSS] = sizeof(ggprof_msg_loss),
    [GGPROF_MSG_NODE_PLACES] = sizeof(ggprof_msg_node_places),
    [GGPROF_MSG_CPU_THREADS] = sizeof(ggprof_msg_cpu_threads),
    [GGPROF_MSG_CPU_PLAN] = sizeof(ggprof_msg_cpu_plan),
    [GGPROF_MSG_THREAD_END] = sizeof(ggprof_msg_thread_end),
    [GGPROF_MSG_CPU_OPS_PLAN] = sizeof(ggprof_msg_cpu_ops_plan),
};

void ggprof_store_msg(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m) {
    /* A newer engine's message (or PAD, FLUSH: nothing to store) is skipped, and the rest stays readable. */
    if (m->kind >= sizeof(k_store) / sizeof(k_store[0]) || !k_store[m->kind] || m->size < k_min_size[m->kind]) return;
    if (m->kind == GGPROF_MSG_CPU_OPS &&
        ((const ggprof_msg_cpu_ops *) m)->n_ops > (m->size - sizeof(ggprof_msg_cpu_ops)) / sizeof(ggprof_cpu_op)) {
        return;
    }
    if (m->kind == GGPROF_MSG_PLACEMENT &&
        ((const ggprof_msg_placement *) m)->n > (m->size - sizeof(ggprof_msg_placement)) / sizeof(ggprof_placement)) {
        return;
    }
    if (m->kind == GGPROF_MSG_NODE_PLACES &&
        ((const ggprof_msg_node_places *) m)->n > (m->size - sizeof(ggprof_msg_node_places)) / sizeof(ggprof_node_place)) {
        return;
    }
    if (m->kind == GGPROF_MSG_CPU_THREADS &&
        ((const ggprof_msg_cpu_threads *) m)->n > (m->size - sizeof(ggprof_msg_cpu_threads)) / sizeof(ggprof_cpu_thread_op)) {
        return;
    }
    k_store[m->kind](s, pid, tid, m);
}

void ggprof_store_meta(ggprof_store *s, const char *key, const char *value) {
    if (!s->counts.full && ggprof_db_meta(s->db, key, value) != 0) failed(s);
}

void ggprof_store_meta_int(ggprof_store *s, const char *key, int64_t value) {
    if (!s->counts.full && ggprof_db_meta_int(s->db, key, value) != 0) failed(s);
}

int ggprof_store_commit(ggprof_store *s) {
    if (s->counts.full) return -1;
    if (exec(s->db, "COMMIT") != SQLITE_OK) {
        s->counts.full = sqlite3_errcode(s->db);
        if (!sqlite3_get_autocommit(s->db)) exec(s->db, "ROLLBACK");
        return -1;
    }
    return exec(s->db, "BEGIN") == SQLITE_OK ? 0 : -1;
}

ggprof_store_counts ggprof_store_get_counts(const ggprof_store *s) { return s->counts; }

sqlite3 *ggprof_store_db(ggprof_store *s) { return s->db; }

sqlite3 *ggprof_store_finish(ggprof_store *s, char *why, size_t why_len) {
    dev_flush(s);
    sqlite3 *db   = s->db;
    int      full = s->counts.full;
    if (s->counts.unplanned && !full) {
        char text[160];
        snprintf(text, sizeof(text), "%llu CPU op records left out: their split's plan (CPU_OPS_PLAN) is not in the trace",
                 (unsigned long long) s->counts.unplanned);
        if (ggprof_db_meta_int(db, "cpu_ops_unplanned", (int64_t) s->counts.unplanned) != 0 || ggprof_db_note(db, 0, text) != 0) {
            full = sqlite3_errcode(db);
        }
    }
    for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(s->st[i]);
    ggprof_cpu_plans_free(s->plans);
    free(s->names);
    free(s);
    char *err = NULL;
    if (!full && sqlite3_exec(db, "COMMIT", NULL, NULL, &err) != SQLITE_OK) {
        full = sqlite3_errcode(db);
        if (full != SQLITE_FULL && full != SQLITE_IOERR) {
            snprintf(why, why_len, "cannot finish the trace database: %s", err ? err : "?");
            sqlite3_free(err);
            sqlite3_close(db);
            return NULL;
        }
        sqlite3_free(err);
        err = NULL;
    }
    if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    /* Device fused groups name their head's OP record; on a full disk the records stay, named by the head's op.
     * Only when there are any: the join scans every record (0.5 s for 10M). */
    sqlite3_stmt *any = NULL;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM temp.dev_fusion LIMIT 1", -1, &any, NULL) == SQLITE_OK &&
        sqlite3_step(any) == SQLITE_ROW) {
        sqlite3_exec(db,
                     "UPDATE events SET extra = f.label, fused_index = f.fused_index, fused_node_id = f.fused_node_id"
                     " FROM temp.dev_fusion f WHERE events.timing = 4 AND events.type = 0 AND f.pid = events.pid"
                     " AND f.graph_id = events.graph_id AND f.node_index = events.node_index",
                     NULL, NULL, NULL);
    }
    sqlite3_finalize(any);
    sqlite3_exec(db,
                 "DROP TABLE temp.dev_fusion;"
                 /* Device kernels not joined to a node, counted with why (none on a split ggprof could match). */
                 "INSERT INTO notes SELECT pid, printf('device: %d %s kernels (%.3f ms of device time) ran outside any"
                 " ggml split: the program launched them itself, not a backend computing a scheduler''s graph',"
                 " count(*), CASE api WHEN 1 THEN 'cuda' WHEN 2 THEN 'opencl' ELSE 'vulkan' END,"
                 " sum(duration_ns) / 1e6) FROM kernel_list WHERE graph_id IS NULL GROUP BY pid, api;"
                 "INSERT INTO notes SELECT pid, printf('device: %d %s kernels (%.3f ms) in %d splits not joined to a"
                 " node: %s', count(*), CASE api WHEN 1 THEN 'cuda' WHEN 2 THEN 'opencl' ELSE 'vulkan' END,"
                 " sum(duration_ns) / 1e6, count(DISTINCT graph_id || ':' || split_id), CASE api"
                 " WHEN 2 THEN 'OpenCL kernels are joined to their split only'"
                 " WHEN 1 THEN 'no node was being computed at the launch (GGPROF_DEVICE_NODES=0?), or its CUDA graph node"
                 " was not captured under ggprof' ELSE 'no node was being recorded at the dispatch (GGPROF_DEVICE_NODES=0, or a backend"
                 " that does not ask ggml_is_empty about its nodes)' END) FROM kernel_list WHERE graph_id IS NOT NULL AND"
                 " (node_index < 0 OR node_id = 0) GROUP BY pid, api;",
                 NULL, NULL, NULL);
    /* Buffers: each free and usage joins the latest allocation at its handle before it (msg_buffer); a buffer whose
     * free was not seen ends where its handle is given to another. Then placements find their buffer alike. */
    sqlite3_exec(db,
                 "CREATE INDEX temp.buffer_events_handle ON buffer_events(pid, handle, t_ns);"
                 "CREATE INDEX buffer_handle ON buffer_list(pid, handle, alloc_ns);"
                 "CREATE TEMP TABLE buffer_next AS SELECT b.pid, b.buffer_id, (SELECT min(n.alloc_ns) FROM buffer_list n"
                 " WHERE n.pid = b.pid AND n.handle = b.handle AND n.alloc_ns > b.alloc_ns) AS next_ns FROM buffer_list b;"
                 "UPDATE buffer_list SET free_ns = COALESCE((SELECT min(e.t_ns) FROM temp.buffer_events e, temp.buffer_next x"
                 " WHERE x.pid = buffer_list.pid AND x.buffer_id = buffer_list.buffer_id AND e.pid = buffer_list.pid"
                 " AND e.handle = buffer_list.handle AND e.event = 2 AND e.t_ns >= buffer_list.alloc_ns"
                 " AND (x.next_ns IS NULL OR e.t_ns <= x.next_ns)), (SELECT x.next_ns FROM temp.buffer_next x"
                 " WHERE x.pid = buffer_list.pid AND x.buffer_id = buffer_list.buffer_id));"
                 "UPDATE buffer_list SET usage = (SELECT e.usage FROM temp.buffer_events e WHERE e.pid = buffer_list.pid"
                 " AND e.handle = buffer_list.handle AND e.event = 1 AND e.t_ns >= buffer_list.alloc_ns"
                 " AND (buffer_list.free_ns IS NULL OR e.t_ns <= buffer_list.free_ns) ORDER BY e.t_ns DESC LIMIT 1)"
                 " WHERE EXISTS (SELECT 1 FROM temp.buffer_events e WHERE e.pid = buffer_list.pid"
                 " AND e.handle = buffer_list.handle AND e.event = 1 AND e.t_ns >= buffer_list.alloc_ns"
                 " AND (buffer_list.free_ns IS NULL OR e.t_ns <= buffer_list.free_ns));"
                 "DROP TABLE temp.buffer_next; DROP TABLE temp.buffer_events;"
                 "UPDATE placements SET buffer_id = (SELECT b.buffer_id FROM buffer_list b JOIN plan_list pl"
                 " ON pl.pid = b.pid AND pl.plan_id = placements.plan_id WHERE b.pid = placements.pid"
                 " AND b.handle = placements.handle AND b.alloc_ns <= pl.t_ns AND (b.free_ns IS NULL OR b.free_ns >= pl.t_ns)"
                 " ORDER BY b.alloc_ns DESC LIMIT 1) WHERE handle != 0",
                 NULL, NULL, NULL);
    /* The indexes only speed readers up: a disk too full for them leaves a trace that reads without them. */
    if (sqlite3_exec(db,
                     "CREATE INDEX splits_graph ON split_list(pid, graph_id);"
                     "CREATE INDEX placements_buffer ON placements(pid, buffer_id);"
                     "CREATE INDEX placements_plan ON placements(pid, plan_id, idx);",
                     NULL, NULL, &err) != SQLITE_OK && sqlite3_errcode(db) != SQLITE_FULL &&
        sqlite3_errcode(db) != SQLITE_IOERR) {
        snprintf(why, why_len, "cannot finish the trace database: %s", err ? err : "?");
        sqlite3_free(err);
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_free(err);
    return db;
}
