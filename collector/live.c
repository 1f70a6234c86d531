/* record --metrics: the live aggregates, summed from the ring's messages as the collector drains them (live.h). */
#include "live.h"

#include <pthread.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "requests.h"
#include "wire.h"

/* Latency buckets (seconds): a graph or a token of a small model on a CPU is a millisecond, a large one's prompt on
 * a slow machine seconds; a request from tens of milliseconds to minutes. */
static const double k_graph_le[]   = { 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
static const double k_request_le[] = { 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60, 120, 300 };
#define N_LE 14
_Static_assert(sizeof(k_graph_le) / sizeof(double) == N_LE && sizeof(k_request_le) / sizeof(double) == N_LE, "buckets");

typedef struct {
    uint64_t counts[N_LE + 1];
    double   sum;
} hist;

static void observe(hist *h, const double *le, double v) {
    int i = 0;
    while (i < N_LE && v > le[i]) i++;
    h->counts[i]++;
    h->sum += v;
}

typedef struct {
    int32_t  pid;
    char     name[GGPROF_MAX_STR];
    hist     graph, token, request, prompt;
    uint64_t tokens[2];         /* prompt, generation: every token decoded */
    uint64_t requests, req_tokens[2]; /* answered requests ended, their prompt and generated tokens */
    uint32_t pend_batch;        /* the llama_decode call whose graphs are being summed */
    uint64_t pend_ns;
    /* device kernels: the node of the last one, to count a node's dispatches as one call (as the store does) */
    uint64_t dev_graph;
    uint32_t dev_sched;
    int32_t  dev_split, dev_node;
    bool     dev_open;
} proc;

typedef struct {
    int32_t  pid;
    uint32_t sched;
    int32_t  id;
    char     name[GGPROF_MAX_NAME], device[GGPROF_MAX_NAME];
} backend;

typedef struct {
    int32_t  pid;
    uint32_t node_id;
    int      op;                 /* index in ops */
    uint64_t nbytes;
    int      cache_bk, cache_op; /* the op series of this node on backend cache_bk */
} node;

typedef struct {
    int32_t  pid;
    int      bk, op;             /* bk: index in backends, -1 unknown */
    uint64_t calls, ns, bytes;
} op_series;

typedef struct {
    int32_t  pid;
    int      bk, kind;           /* kind: 0.. sync kinds; copies: direction */
    uint64_t calls, ns, bytes;
} small_series;

typedef struct { /* a record whose node was not described yet */
    int32_t  pid;
    uint32_t node_id;
    int      bk, age;
    uint64_t ns, bytes;
    bool     call;
} pending;

typedef struct {
    ggprof_request q;
    bool           open;
} live_request;

#define VEC(T) struct { T *v; size_t n, cap; }
/* A new last element of vec (uninitialised), or NULL when out of memory. */
#define PUSH(vec) push_slot((void **) &(vec).v, &(vec).n, &(vec).cap, sizeof(*(vec).v))

static void *push_slot(void **v, size_t *n, size_t *cap, size_t size) {
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        void *p = realloc(*v, c * size);
        if (!p) return NULL;
        *v = p, *cap = c;
    }
    return (char *) *v + (*n)++ * size;
}

struct ggprof_live {
    pthread_mutex_t lock;
    VEC(proc) procs;
    VEC(backend) backends;
    VEC(node) nodes;
    ggprof_index node_index;
    VEC(op_series) ops;
    VEC(small_series) syncs, copies, busy, kernels;
    VEC(pending) pend;
    VEC(live_request) reqs;
    char (*op_names)[32];
    size_t n_op_names, cap_op_names;
    ggprof_cpu_plans *plans; /* what names the ops of CPU_OPS messages */
    uint64_t messages;
};

ggprof_live *ggprof_live_new(void) {
    ggprof_live *l = calloc(1, sizeof(*l));
    if (!l) return NULL;
    if (!(l->plans = ggprof_cpu_plans_new())) {
        free(l);
        return NULL;
    }
    pthread_mutex_init(&l->lock, NULL);
    return l;
}

void ggprof_live_free(ggprof_live *l) {
    if (!l) return;
    free(l->procs.v), free(l->backends.v), free(l->nodes.v), free(l->ops.v), free(l->syncs.v), free(l->copies.v);
    free(l->busy.v), free(l->kernels.v), free(l->pend.v), free(l->reqs.v), free(l->op_names);
    ggprof_index_free(&l->node_index);
    ggprof_cpu_plans_free(l->plans);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

/* ---- lookups (the tables are small but for nodes: a few processes, backends and ops) */

static proc *proc_of(ggprof_live *l, int32_t pid) {
    for (size_t i = l->procs.n; i-- > 0;) {
        if (l->procs.v[i].pid == pid) return &l->procs.v[i];
    }
    proc p;
    memset(&p, 0, sizeof(p));
    p.pid = pid;
    snprintf(p.name, sizeof(p.name), "unknown");
    proc *slot = PUSH(l->procs);
    if (slot) *slot = p;
    return slot;
}

static int backend_of(ggprof_live *l, int32_t pid, uint32_t sched, int32_t id) {
    for (size_t i = 0; i < l->backends.n; i++) {
        const backend *b = &l->backends.v[i];
        if (b->pid == pid && b->sched == sched && b->id == id) return (int) i;
    }
    return -1;
}

static int op_name_of(ggprof_live *l, const char *name) {
    for (size_t i = 0; i < l->n_op_names; i++) {
        if (strncmp(l->op_names[i], name, 31) == 0) return (int) i;
    }
    if (l->n_op_names == l->cap_op_names) {
        size_t c = l->cap_op_names ? l->cap_op_names * 2 : 64;
        char (*p)[32] = realloc(l->op_names, c * sizeof(*p));
        if (!p) return -1;
        l->op_names = p, l->cap_op_names = c;
    }
    snprintf(l->op_names[l->n_op_names], 32, "%s", name);
    return (int) l->n_op_names++;
}

static uint64_t node_hash(const void *ctx, size_t i) {
    const node *n = &((const ggprof_live *) ctx)->nodes.v[i];
    return ggprof_fnv_pid_id(n->pid, n->node_id);
}

static int node_same(const void *ctx, size_t i, const void *key) {
    const node *n = &((const ggprof_live *) ctx)->nodes.v[i], *k = key;
    return n->pid == k->pid && n->node_id == k->node_id;
}

static node *node_of(ggprof_live *l, int32_t pid, uint32_t node_id) {
    if (!l->node_index.n_slot) return NULL;
    node key = { .pid = pid, .node_id = node_id };
    uint32_t *slot = ggprof_index_slot(&l->node_index, ggprof_fnv_pid_id(pid, node_id), node_same, l, &key);
    return *slot ? &l->nodes.v[*slot - 1] : NULL;
}

static op_series *op_series_of(ggprof_live *l, int32_t pid, int bk, int op) {
    for (size_t i = 0; i < l->ops.n; i++) {
        op_series *s = &l->ops.v[i];
        if (s->pid == pid && s->bk == bk && s->op == op) return s;
    }
    op_series *s = PUSH(l->ops);
    if (s) *s = (op_series) { pid, bk, op, 0, 0, 0 };
    return s;
}

static small_series *small_of(ggprof_live *l, void *vec, int32_t pid, int bk, int kind) {
    struct { small_series *v; size_t n, cap; } *t = vec;
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].pid == pid && t->v[i].bk == bk && t->v[i].kind == kind) return &t->v[i];
    }
    (void) l;
    small_series *s = PUSH(*t);
    if (s) *s = (small_series) { pid, bk, kind, 0, 0, 0 };
    return s;
}

/* An OP record's time, on its node's op (later, when the node is not described yet). */
static void add_op(ggprof_live *l, int32_t pid, uint32_t node_id, int bk, uint64_t ns, uint64_t bytes, bool call,
                   bool bytes_known) {
    node *n = node_of(l, pid, node_id);
    if (!n) {
        pending *p = PUSH(l->pend);
        if (p) *p = (pending) { pid, node_id, bk, 0, ns, bytes_known ? bytes : UINT64_MAX, call };
        return;
    }
    op_series *s;
    if (n->cache_op >= 0 && n->cache_bk == bk) {
        s = &l->ops.v[n->cache_op];
    } else {
        s = op_series_of(l, pid, bk, n->op);
        if (!s) return;
        n->cache_bk = bk, n->cache_op = (int) (s - l->ops.v);
    }
    s->calls += call;
    s->ns += ns;
    s->bytes += bytes_known ? bytes : (call ? n->nbytes : 0);
}

static void add_unknown_op(ggprof_live *l, const pending *p) {
    int op = op_name_of(l, "unknown");
    op_series *s = op >= 0 ? op_series_of(l, p->pid, p->bk, op) : NULL;
    if (!s) return;
    s->calls += p->call, s->ns += p->ns, s->bytes += p->bytes == UINT64_MAX ? 0 : p->bytes;
}

/* ---- requests (schema/requests.h: the rule rollup --by request applies) */

static void request_end(ggprof_live *l, live_request *r) {
    r->open = false;
    if (!ggprof_request_answered(&r->q)) return;
    proc *p = proc_of(l, (int32_t) r->q.pid);
    if (!p) return;
    p->requests++;
    p->req_tokens[0] += (uint64_t) r->q.prompt_tokens;
    p->req_tokens[1] += (uint64_t) ggprof_request_generated(&r->q);
    observe(&p->request, k_request_le, (double) (r->q.last_end_ns - r->q.first_ns) / 1e9);
    observe(&p->prompt, k_request_le, (double) r->q.prompt_ns / 1e9);
}

static void request_batch(ggprof_live *l, proc *p, const ggprof_request_batch *b) {
    live_request *r = NULL, *free_slot = NULL;
    for (size_t i = 0; i < l->reqs.n; i++) {
        live_request *x = &l->reqs.v[i];
        if (x->open && x->q.pid == b->pid && x->q.seq == b->seq) r = x;
        if (!x->open && !free_slot) free_slot = x;
    }
    int64_t prompt_before = r ? r->q.prompt_tokens : 0, gen_before = r ? r->q.gen_decodes : 0;
    if (r && ggprof_request_continues(&r->q, b)) {
        ggprof_request_add(&r->q, b);
    } else {
        if (r) {
            request_end(l, r);
            free_slot = r;
        }
        if (!free_slot) {
            free_slot = PUSH(l->reqs);
            if (!free_slot) return;
            free_slot->open = false;
        }
        r = free_slot;
        prompt_before = gen_before = 0;
        ggprof_request_begin(&r->q, b);
        r->open = true;
    }
    p->tokens[0] += (uint64_t) (r->q.prompt_tokens - prompt_before);
    p->tokens[1] += (uint64_t) (r->q.gen_decodes - gen_before);
}

/* ---- messages */

static void on_interval(const ggprof_cpu_interval *iv, void *user) {
    void **c = user;
    ggprof_live *l = c[0];
    const ggprof_msg_cpu_ops *m = c[1];
    int32_t pid = *(const int32_t *) c[2];
    int bk = *(const int *) c[3];
    if (iv->type == GGPROF_REC_OP) {
        add_op(l, pid, iv->node_id, bk, iv->duration_ns, 0, true, false);
    } else {
        small_series *s = small_of(l, &l->syncs, pid, bk, iv->sync);
        if (s) s->calls++, s->ns += iv->duration_ns;
    }
    (void) m;
}

static void on_msg(ggprof_live *l, int32_t pid, const ggprof_msg_hdr *m) {
    l->messages++;
    switch (m->kind) {
    case GGPROF_MSG_PROCESS: {
        if (m->size < sizeof(ggprof_msg_process)) return;
        const ggprof_msg_process *pm = (const void *) m;
        proc *p = proc_of(l, pm->pid);
        if (!p) return;
        char exe[GGPROF_MAX_STR];
        snprintf(exe, sizeof(exe), "%.*s", (int) sizeof(pm->exe), pm->exe);
        const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
        snprintf(p->name, sizeof(p->name), "%s", base);
        return;
    }
    case GGPROF_MSG_BACKEND: {
        if (m->size < sizeof(ggprof_msg_backend)) return;
        const ggprof_msg_backend *b = (const void *) m;
        if (backend_of(l, pid, b->sched_id, b->backend_id) >= 0) return;
        backend x = { pid, b->sched_id, b->backend_id, "", "" };
        snprintf(x.name, sizeof(x.name), "%.*s", (int) sizeof(b->name), b->name);
        snprintf(x.device, sizeof(x.device), "%.*s", (int) sizeof(b->device), b->device);
        backend *slot = PUSH(l->backends);
        if (slot) *slot = x;
        return;
    }
    case GGPROF_MSG_NODE: {
        if (m->size < sizeof(ggprof_msg_node)) return;
        const ggprof_msg_node *n = (const void *) m;
        char op[33];
        snprintf(op, sizeof(op), "%.*s", (int) sizeof(n->op), n->op);
        node *old = node_of(l, pid, n->node_id);
        int   opi = op_name_of(l, op);
        if (opi < 0) return;
        if (old) { /* described again: a new description under the same id */
            old->op = opi, old->nbytes = n->nbytes, old->cache_op = -1;
            return;
        }
        if (ggprof_index_reserve(&l->node_index, 0, l->nodes.n, node_hash, l) != 0) return;
        node *x = PUSH(l->nodes);
        if (!x) return;
        *x = (node) { pid, n->node_id, opi, n->nbytes, -2, -1 };
        node key = { .pid = pid, .node_id = n->node_id };
        *ggprof_index_slot(&l->node_index, ggprof_fnv_pid_id(pid, n->node_id), node_same, l, &key) = (uint32_t) l->nodes.n;
        return;
    }
    case GGPROF_MSG_GRAPH: {
        if (m->size < sizeof(ggprof_msg_graph)) return;
        const ggprof_msg_graph *g = (const void *) m;
        proc *p = proc_of(l, pid);
        if (!p) return;
        observe(&p->graph, k_graph_le, (double) g->duration_ns / 1e9);
        if (g->batch) {
            if (p->pend_batch != g->batch) p->pend_batch = g->batch, p->pend_ns = 0;
            p->pend_ns += g->duration_ns;
        }
        return;
    }
    case GGPROF_MSG_BATCH: {
        if (m->size < GGPROF_BATCH_SIZE(0)) return;
        const ggprof_msg_batch *b = (const void *) m;
        proc *p = proc_of(l, pid);
        if (!p || b->status != 0) return;
        if (p->pend_batch == b->batch && b->n_tokens > 0) {
            observe(&p->token, k_graph_le, (double) p->pend_ns / 1e9 / b->n_tokens);
        }
        p->pend_batch = 0;
        for (int i = 0, n = ggprof_batch_listed(b); i < n; i++) {
            const ggprof_batch_seq *s = &b->seqs[i];
            ggprof_request_batch rb = { pid, s->seq_id, b->batch, (int64_t) b->start_ns, (int64_t) b->duration_ns,
                                        b->n_seqs, s->n_tokens, s->pos_min, s->pos_max, s->n_outputs };
            request_batch(l, p, &rb);
        }
        return;
    }
    case GGPROF_MSG_SPLIT: {
        if (m->size < sizeof(ggprof_msg_split)) return;
        const ggprof_msg_split *s = (const void *) m;
        small_series *b = small_of(l, &l->busy, pid, backend_of(l, pid, s->sched_id, s->backend_id), 0);
        if (b) b->calls++, b->ns += s->duration_ns;
        return;
    }
    case GGPROF_MSG_EVENT: {
        if (m->size < sizeof(ggprof_msg_event)) return;
        const ggprof_msg_event *e = (const void *) m;
        int bk = backend_of(l, pid, e->sched_id, e->backend_id);
        if (e->type == GGPROF_REC_OP) {
            add_op(l, pid, e->node_id, bk, e->duration_ns, e->bytes, true, true);
        } else if (e->type == GGPROF_REC_COPY) {
            small_series *s = small_of(l, &l->copies, pid, -1, e->sub < 4 ? e->sub : 4);
            if (s) s->calls++, s->ns += e->duration_ns, s->bytes += e->bytes;
        } else if (e->type == GGPROF_REC_SYNC) {
            small_series *s = small_of(l, &l->syncs, pid, bk, e->sub < GGPROF_SYNC_COUNT ? e->sub : GGPROF_SYNC_COUNT);
            if (s) s->calls++, s->ns += e->duration_ns;
        }
        return;
    }
    case GGPROF_MSG_CPU_OPS: {
        if (m->size < sizeof(ggprof_msg_cpu_ops)) return;
        const ggprof_msg_cpu_ops *c = (const void *) m;
        if (c->n_ops > (m->size - sizeof(ggprof_msg_cpu_ops)) / sizeof(ggprof_cpu_op)) return;
        const ggprof_cpu_op_id *ids = ggprof_cpu_plans_find(l->plans, pid, c);
        if (!ids && c->n_ops) return; /* its plan never came: no node to name (the trace counts these) */
        int bk = backend_of(l, pid, c->sched_id, c->backend_id);
        void *ctx[4] = { l, (void *) c, &pid, &bk };
        ggprof_cpu_ops_expand(c, ids, on_interval, ctx);
        return;
    }
    case GGPROF_MSG_CPU_OPS_PLAN:
        ggprof_cpu_plans_add(l->plans, pid, m);
        return;
    case GGPROF_MSG_KERNEL: {
        if (m->size < sizeof(ggprof_msg_kernel)) return;
        const ggprof_msg_kernel *k = (const void *) m;
        uint64_t ns = k->end_ns > k->start_ns ? k->end_ns - k->start_ns : 0;
        small_series *s = small_of(l, &l->kernels, pid, (int) k->api, (int) k->device);
        if (s) s->calls++, s->ns += ns;
        /* a node's dispatches, one after another, are one OP record of the trace (schema/store.c) */
        if (!k->node_id || k->node_index < 0 || k->graph_id == GGPROF_GRAPH_NONE) return;
        proc *p = proc_of(l, pid);
        if (!p) return;
        bool same = p->dev_open && p->dev_graph == k->graph_id && p->dev_split == k->split_id &&
                    p->dev_node == k->node_index && p->dev_sched == k->sched_id;
        p->dev_open = true, p->dev_graph = k->graph_id, p->dev_split = k->split_id, p->dev_node = k->node_index;
        p->dev_sched = k->sched_id;
        add_op(l, pid, k->node_id, backend_of(l, pid, k->sched_id, k->backend_id), ns, 0, !same, false);
        return;
    }
    default: return; /* kinds this aggregator does not know (or need) */
    }
}

struct walk {
    ggprof_live *l;
    int32_t      pid;
};

static void on_walk(const ggprof_msg_hdr *m, void *user) {
    struct walk *w = user;
    on_msg(w->l, w->pid, m);
}

void ggprof_live_chunk(ggprof_live *l, int32_t pid, const void *bytes, size_t n) {
    struct walk w = { l, pid };
    pthread_mutex_lock(&l->lock);
    ggprof_msgs_foreach(bytes, n, on_walk, &w);
    pthread_mutex_unlock(&l->lock);
}

void ggprof_live_settle(ggprof_live *l, uint64_t now_ns, int final) {
    pthread_mutex_lock(&l->lock);
    size_t keep = 0;
    for (size_t i = 0; i < l->pend.n; i++) {
        pending p = l->pend.v[i];
        if (node_of(l, p.pid, p.node_id)) {
            add_op(l, p.pid, p.node_id, p.bk, p.ns, p.bytes, p.call, p.bytes != UINT64_MAX);
        } else if (final || ++p.age > 4) {
            add_unknown_op(l, &p);
        } else {
            l->pend.v[keep++] = p;
        }
    }
    l->pend.n = keep;
    for (size_t i = 0; i < l->reqs.n; i++) {
        live_request *r = &l->reqs.v[i];
        if (r->open && (final || (now_ns > (uint64_t) r->q.last_end_ns &&
                                  now_ns - (uint64_t) r->q.last_end_ns > 2 * GGPROF_REQUEST_IDLE_NS))) {
            request_end(l, r);
        }
    }
    pthread_mutex_unlock(&l->lock);
}

/* ---- the exposition */

typedef struct {
    char pid[16];
    ggprof_metric_label l[5];
    int n;
} labels;

/* process and pid, then backend and device when bk >= -1 (-1: a backend the trace did not describe). */
static void labels_of(const ggprof_live *l, labels *x, int32_t pid, int bk, bool with_backend) {
    const char *name = "unknown";
    for (size_t i = 0; i < l->procs.n; i++) {
        if (l->procs.v[i].pid == pid) name = l->procs.v[i].name;
    }
    snprintf(x->pid, sizeof(x->pid), "%d", pid);
    x->l[0] = (ggprof_metric_label) { "process", name };
    x->l[1] = (ggprof_metric_label) { "pid", x->pid };
    x->n    = 2;
    if (with_backend) {
        const backend *b = bk >= 0 ? &l->backends.v[bk] : NULL;
        x->l[x->n++] = (ggprof_metric_label) { "backend", b ? b->name : "unknown" };
        x->l[x->n++] = (ggprof_metric_label) { "device", b ? b->device : "" };
    }
}

static void write_ops(const ggprof_live *l, ggprof_metrics_out *o) {
    static const struct { const char *name, *help; int what; } fam[] = {
        { "ggml_op_seconds", "Time of ggml ops (OP records), by op, backend and device.", 0 },
        { "ggml_op_calls", "ggml ops computed (OP records).", 1 },
        { "ggml_op_output_bytes", "Bytes of the ops' output tensors.", 2 },
    };
    for (int f = 0; f < 3; f++) {
        ggprof_metrics_family(o, fam[f].name, GGPROF_METRIC_COUNTER, fam[f].help);
        for (size_t i = 0; i < l->ops.n; i++) {
            const op_series *s = &l->ops.v[i];
            labels x;
            labels_of(l, &x, s->pid, s->bk, true);
            x.l[x.n++] = (ggprof_metric_label) { "op", l->op_names[s->op] };
            double v = f == 0 ? (double) s->ns / 1e9 : f == 1 ? (double) s->calls : (double) s->bytes;
            ggprof_metrics_sample(o, fam[f].name, "_total", x.l, x.n, NULL, NULL, v);
        }
    }
}

static void write_small(const ggprof_live *l, ggprof_metrics_out *o) {
    ggprof_metrics_family(o, "ggml_sync_seconds", GGPROF_METRIC_COUNTER,
                          "Time in no op (SYNC records: CPU plan, kick-off, barrier waits, join, backend waits), by kind.");
    for (size_t i = 0; i < l->syncs.n; i++) {
        const small_series *s = &l->syncs.v[i];
        labels x;
        labels_of(l, &x, s->pid, s->bk, true);
        x.l[x.n++] = (ggprof_metric_label) { "kind", s->kind < GGPROF_SYNC_COUNT ? ggprof_sync_names[s->kind] : "sync" };
        ggprof_metrics_sample(o, "ggml_sync_seconds", "_total", x.l, x.n, NULL, NULL, (double) s->ns / 1e9);
    }
    static const struct { const char *name, *help; int what; } cf[] = {
        { "ggml_copy_seconds", "Time of tensor copies between backends, by direction.", 0 },
        { "ggml_copy_bytes", "Bytes copied between backends, by direction.", 2 },
        { "ggml_copies", "Tensor copies between backends, by direction.", 1 },
    };
    for (int f = 0; f < 3; f++) {
        ggprof_metrics_family(o, cf[f].name, GGPROF_METRIC_COUNTER, cf[f].help);
        for (size_t i = 0; i < l->copies.n; i++) {
            const small_series *s = &l->copies.v[i];
            labels x;
            labels_of(l, &x, s->pid, -1, false);
            x.l[x.n++] = (ggprof_metric_label) { "direction", s->kind < 4 ? ggprof_copy_names[s->kind] : "copy" };
            double v = cf[f].what == 0 ? (double) s->ns / 1e9 : cf[f].what == 1 ? (double) s->calls : (double) s->bytes;
            ggprof_metrics_sample(o, cf[f].name, "_total", x.l, x.n, NULL, NULL, v);
        }
    }
    ggprof_metrics_family(o, "ggml_backend_busy_seconds", GGPROF_METRIC_COUNTER,
                          "Time each backend spent computing its splits (split records; levels split and op).");
    for (size_t i = 0; i < l->busy.n; i++) {
        const small_series *s = &l->busy.v[i];
        labels x;
        labels_of(l, &x, s->pid, s->bk, true);
        ggprof_metrics_sample(o, "ggml_backend_busy_seconds", "_total", x.l, x.n, NULL, NULL, (double) s->ns / 1e9);
    }
    ggprof_metrics_family(o, "ggml_device_kernel_seconds", GGPROF_METRIC_COUNTER,
                          "Device time of GPU kernels, on the device's clock (CUDA, Vulkan, OpenCL), by device.");
    static const char *const apis[] = { "unknown", "cuda", "opencl", "vulkan" };
    for (size_t i = 0; i < l->kernels.n; i++) {
        const small_series *s = &l->kernels.v[i];
        labels x;
        char dev[48];
        labels_of(l, &x, s->pid, -1, false);
        snprintf(dev, sizeof(dev), "%s:%d", apis[s->bk >= 0 && s->bk < 4 ? s->bk : 0], s->kind);
        x.l[x.n++] = (ggprof_metric_label) { "device", dev };
        ggprof_metrics_sample(o, "ggml_device_kernel_seconds", "_total", x.l, x.n, NULL, NULL, (double) s->ns / 1e9);
    }
}

static void write_procs(const ggprof_live *l, ggprof_metrics_out *o) {
    static const struct { const char *name, *help; int type; } fam[] = {
        { "ggml_graph_seconds", "Latency of each scheduler graph compute.", GGPROF_METRIC_HISTOGRAM },
        { "ggml_graph_token_seconds", "Graph time per token of each llama_decode call: its graphs' time over its tokens.",
          GGPROF_METRIC_HISTOGRAM },
        { "llama_tokens", "Tokens decoded, by phase (prompt or generation, by the request rule of rollup --by request).",
          GGPROF_METRIC_COUNTER },
        { "llama_requests", "Requests answered and ended (the rule of rollup --by request: llama.cpp's warm-up left out).",
          GGPROF_METRIC_COUNTER },
        { "llama_requests_in_flight", "Requests begun and not ended (a request ends when its sequence starts another, "
          "or has been idle 2 s).", GGPROF_METRIC_GAUGE },
        { "llama_request_seconds", "Latency of each answered request: its first batch's start to its last batch's end.",
          GGPROF_METRIC_HISTOGRAM },
        { "llama_request_prompt_seconds", "Prompt time of each answered request (its prompt batches' llama_decode time).",
          GGPROF_METRIC_HISTOGRAM },
        { "llama_request_tokens", "Tokens of the answered requests, by phase (prompt; generation: the generated tokens).",
          GGPROF_METRIC_COUNTER },
    };
    for (int f = 0; f < 8; f++) {
        ggprof_metrics_family(o, fam[f].name, fam[f].type, fam[f].help);
        for (size_t i = 0; i < l->procs.n; i++) {
            const proc *p = &l->procs.v[i];
            labels x;
            labels_of(l, &x, p->pid, -1, false);
            switch (f) {
            case 0: ggprof_metrics_histogram(o, fam[f].name, x.l, x.n, k_graph_le, p->graph.counts, N_LE, p->graph.sum); break;
            case 1: ggprof_metrics_histogram(o, fam[f].name, x.l, x.n, k_graph_le, p->token.counts, N_LE, p->token.sum); break;
            case 2:
            case 7:
                for (int ph = 0; ph < 2; ph++) {
                    x.l[2] = (ggprof_metric_label) { "phase", ph ? "generation" : "prompt" };
                    ggprof_metrics_sample(o, fam[f].name, "_total", x.l, 3, NULL, NULL,
                                          (double) (f == 2 ? p->tokens[ph] : p->req_tokens[ph]));
                }
                break;
            case 3: ggprof_metrics_sample(o, fam[f].name, "_total", x.l, x.n, NULL, NULL, (double) p->requests); break;
            case 4: {
                uint64_t n = 0;
                for (size_t k = 0; k < l->reqs.n; k++) {
                    const live_request *r = &l->reqs.v[k];
                    n += r->open && r->q.pid == p->pid && ggprof_request_answered(&r->q);
                }
                ggprof_metrics_sample(o, fam[f].name, "", x.l, x.n, NULL, NULL, (double) n);
                break;
            }
            case 5: ggprof_metrics_histogram(o, fam[f].name, x.l, x.n, k_request_le, p->request.counts, N_LE, p->request.sum); break;
            case 6: ggprof_metrics_histogram(o, fam[f].name, x.l, x.n, k_request_le, p->prompt.counts, N_LE, p->prompt.sum); break;
            }
        }
    }
}

void ggprof_live_write(ggprof_live *l, ggprof_metrics_out *o) {
    pthread_mutex_lock(&l->lock);
    write_ops(l, o);
    write_small(l, o);
    write_procs(l, o);
    ggprof_metrics_family(o, "ggprof_collector_messages", GGPROF_METRIC_COUNTER,
                          "Messages the collector read from the ring.");
    ggprof_metrics_sample(o, "ggprof_collector_messages", "_total", NULL, 0, NULL, NULL, (double) l->messages);
    pthread_mutex_unlock(&l->lock);
    ggprof_metrics_end(o);
}
