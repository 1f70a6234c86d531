/* CPU-backend per-op timing: thread 0 calls the abort callback after every computed node (ggml-cpu.c,
 * ggml_graph_compute_thread) and then the barrier; both are visible from outside ggml. */
#include "cpu_ticks.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

typedef struct {
    int       n_exp, cap;
    int32_t  *exp_node;   /* index in the split of each node that ticks */
    int32_t  *exp_fused;  /* index of the node computed with it (RMS_NORM+MUL), or -1 */
    uint64_t *tick;       /* thread 0's tick after the node */
    uint64_t *bar_exit;   /* end of the barrier between this node and the next, 0 if none */
    uint64_t *inop_wait;  /* thread 0's barrier waits inside the node */
    int       n_ticks;
    bool      pending_between; /* a tick just came: the next barrier is the one between nodes */
    uint64_t  gc_entry, t0_start;
    struct ggml_tensor **nodes;
} cpu_split;

static __thread cpu_split  t_split;
static __thread cpu_split *t_active; /* set only on the thread computing, only while it computes */

/* ---- the abort-callback hook, per CPU backend ---- */

typedef struct {
    ggml_backend_t      backend;
    ggml_abort_callback app_cb;
    void               *app_data;
    bool                installed;
} cpu_hook;

#define MAX_HOOKS 64
static cpu_hook        g_hooks[MAX_HOOKS];
static int             g_n_hooks;
static pthread_mutex_t g_hooks_lock = PTHREAD_MUTEX_INITIALIZER;

static bool tick_cb(void *data) {
    cpu_hook  *h = data;
    cpu_split *s = t_active;
    if (s) {
        if (s->n_ticks < s->n_exp) {
            s->tick[s->n_ticks]     = ggprof_now_ns();
            s->bar_exit[s->n_ticks] = 0;
        }
        s->n_ticks++;
        s->pending_between = true;
    }
    return h->app_cb ? h->app_cb(h->app_data) : false;
}

static cpu_hook *hook_for(ggml_backend_t backend) {
    for (int i = 0; i < g_n_hooks; i++) {
        if (g_hooks[i].backend == backend) return &g_hooks[i];
    }
    if (g_n_hooks == MAX_HOOKS) return NULL;
    cpu_hook *h = &g_hooks[g_n_hooks++];
    memset(h, 0, sizeof(*h));
    h->backend = backend;
    return h;
}

typedef void (*set_abort_fn)(ggml_backend_t, ggml_abort_callback, void *);

static set_abort_fn setter_for(ggml_backend_t backend) {
    const ggprof_ggml *g = &ggprof_eng.g;
    ggml_backend_dev_t dev = g->ggml_backend_get_device(backend);
    ggml_backend_reg_t reg = dev ? g->ggml_backend_dev_backend_reg(dev) : NULL;
    return reg ? (set_abort_fn) g->reg_get_proc_address(reg, "ggml_backend_set_abort_callback") : NULL;
}

void ggprof_cpu_hook_backend(ggml_backend_t backend) {
    pthread_mutex_lock(&g_hooks_lock);
    cpu_hook *h = hook_for(backend);
    if (h && !h->installed) {
        set_abort_fn set = setter_for(backend);
        if (set) {
            set(backend, tick_cb, h);
            h->installed = true;
        }
    }
    pthread_mutex_unlock(&g_hooks_lock);
}

void ggprof_cpu_set_abort_callback(set_abort_fn real, ggml_backend_t backend, ggml_abort_callback cb, void *data) {
    pthread_mutex_lock(&g_hooks_lock);
    cpu_hook *h = (cb == tick_cb) ? NULL : hook_for(backend);
    if (h == NULL) {
        pthread_mutex_unlock(&g_hooks_lock);
        real(backend, cb, data);
        return;
    }
    h->app_cb   = cb;
    h->app_data = data;
    h->installed = true;
    pthread_mutex_unlock(&g_hooks_lock);
    real(backend, tick_cb, h);
}

/* ---- which nodes tick: the CPU backend's rules in ggml 0.23 ---- */

void ggprof_use_counts_reset(ggprof_use_counts *u) { u->built = false; u->n = 0; }

static uint32_t ptr_hash(const void *p, int cap) {
    uint64_t v = (uint64_t) (uintptr_t) p * 0x9e3779b97f4a7c15ull;
    return (uint32_t) (v >> 32) & (uint32_t) (cap - 1);
}

static void use_counts_build(ggprof_use_counts *u, struct ggml_tensor **nodes, int n) {
    const ggprof_ggml *g = &ggprof_eng.g;
    int n_rms = 0;
    for (int i = 0; i < n; i++) n_rms += nodes[i]->op == g->op.rms_norm;
    int cap = 16;
    while (cap < 2 * n_rms) cap *= 2;
    if (cap > u->cap) {
        u->keys   = realloc(u->keys, sizeof(*u->keys) * (size_t) cap);
        u->counts = realloc(u->counts, sizeof(*u->counts) * (size_t) cap);
        u->cap    = cap;
    }
    u->n = cap;
    memset(u->keys, 0, sizeof(*u->keys) * (size_t) cap);
    memset(u->counts, 0, sizeof(*u->counts) * (size_t) cap);
    for (int i = 0; i < n; i++) {
        if (nodes[i]->op != g->op.rms_norm) continue;
        uint32_t p = ptr_hash(nodes[i], cap);
        while (u->keys[p] && u->keys[p] != nodes[i]) p = (p + 1) & (uint32_t) (cap - 1);
        u->keys[p] = nodes[i];
    }
    /* ggml counts one use per source slot of every node in the graph (ggml_visit_parents_graph). */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < GGML_ABI_MAX_SRC; k++) {
            const struct ggml_tensor *s = nodes[i]->src[k];
            if (!s || s->op != g->op.rms_norm) continue;
            uint32_t p = ptr_hash(s, cap);
            while (u->keys[p] && u->keys[p] != s) p = (p + 1) & (uint32_t) (cap - 1);
            if (u->keys[p] == s) u->counts[p]++;
        }
    }
    u->built = true;
}

static int use_count(const ggprof_use_counts *u, const struct ggml_tensor *t) {
    uint32_t p = ptr_hash(t, u->n);
    while (u->keys[p]) {
        if (u->keys[p] == t) return u->counts[p];
        p = (p + 1) & (uint32_t) (u->n - 1);
    }
    return 0;
}

static bool same_shape(const struct ggml_tensor *a, const struct ggml_tensor *b) {
    return memcmp(a->ne, b->ne, sizeof(a->ne)) == 0;
}

/* ggml_cpu_try_fuse_ops: RMS_NORM followed by MUL, all F32, the norm used once and only by the MUL. */
static bool fuses(struct ggml_tensor **nodes, int n, int i, struct ggml_tensor **graph_nodes, int graph_n,
                  ggprof_use_counts *uc) {
    const ggprof_ggml *g = &ggprof_eng.g;
    struct ggml_tensor *node = nodes[i];
    if (!ggprof_eng.cpu_fusion || node->op != g->op.rms_norm || i + 1 >= n) return false;
    struct ggml_tensor *mul = nodes[i + 1];
    if (mul->op != g->op.mul || !(mul->flags & GGML_ABI_FLAG_COMPUTE)) return false;
    if (node->view_src != NULL || (node->flags & GGML_ABI_FLAG_OUTPUT)) return false;
    if (mul->src[0] != node && mul->src[1] != node) return false;
    if (!same_shape(mul, node)) return false;
    const struct ggml_tensor *w = (mul->src[0] == node) ? mul->src[1] : mul->src[0];
    if (node->src[0]->type != GGML_ABI_TYPE_F32 || mul->type != GGML_ABI_TYPE_F32 || w->type != GGML_ABI_TYPE_F32 ||
        w->ne[0] != node->ne[0] || w->nb[0] != sizeof(float)) {
        return false;
    }
    if (!uc->built) use_counts_build(uc, graph_nodes, graph_n);
    return use_count(uc, node) == 1;
}

static bool grow(cpu_split *s, int need) {
    if (need <= s->cap) return true;
    int cap = s->cap ? s->cap : 256;
    while (cap < need) cap *= 2;
    int32_t  *a = realloc(s->exp_node, sizeof(int32_t) * (size_t) cap);
    if (a) s->exp_node = a;
    int32_t  *b = realloc(s->exp_fused, sizeof(int32_t) * (size_t) cap);
    if (b) s->exp_fused = b;
    uint64_t *c = realloc(s->tick, sizeof(uint64_t) * (size_t) cap);
    if (c) s->tick = c;
    uint64_t *d = realloc(s->bar_exit, sizeof(uint64_t) * (size_t) cap);
    if (d) s->bar_exit = d;
    uint64_t *e = realloc(s->inop_wait, sizeof(uint64_t) * (size_t) cap);
    if (e) s->inop_wait = e;
    if (!a || !b || !c || !d || !e) return false;
    s->cap = cap;
    return true;
}

int ggprof_cpu_begin(struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n,
                     ggprof_use_counts *uc) {
    const ggprof_ggml *g = &ggprof_eng.g;
    cpu_split *s = &t_split;
    if (!grow(s, n > 0 ? n : 1)) return -1;
    s->n_exp = 0;
    for (int i = 0; i < n; i++) {
        const struct ggml_tensor *t = nodes[i];
        if (t->op == g->op.none || t->op == g->op.reshape || t->op == g->op.view || t->op == g->op.permute ||
            t->op == g->op.transpose || !(t->flags & GGML_ABI_FLAG_COMPUTE)) {
            continue;
        }
        int k = s->n_exp++;
        s->exp_node[k]  = i;
        s->exp_fused[k] = -1;
        s->inop_wait[k] = 0;
        if (fuses(nodes, n, i, graph_nodes, graph_n, uc)) s->exp_fused[k] = ++i;
    }
    s->nodes           = nodes;
    s->n_ticks         = 0;
    s->pending_between = false;
    s->gc_entry        = 0;
    s->t0_start        = 0;
    t_active           = s;
    return s->n_exp;
}

static void emit_event(const ggprof_split_place *w, int type, int sub, uint32_t node_id, int32_t node_index,
                       int32_t fused_index, uint32_t fused_id, uint64_t start, uint64_t end, uint64_t bytes,
                       uint64_t wait) {
    ggprof_msg_event e;
    memset(&e, 0, sizeof(e));
    e.h             = (ggprof_msg_hdr){ sizeof(e), GGPROF_MSG_EVENT, 0 };
    e.type          = (uint16_t) type;
    e.timing        = GGPROF_TIMING_CPU_TICK;
    e.sub           = (uint16_t) sub;
    e.backend_id    = (int16_t) w->backend_id;
    e.node_id       = node_id;
    e.sched_id      = w->sched_id;
    e.graph_id      = w->graph_id;
    e.split_id      = w->split_id;
    e.node_index    = node_index;
    e.fused_index   = fused_index;
    e.fused_node_id = fused_id;
    e.start_ns      = start;
    e.duration_ns   = end > start ? end - start : 0;
    e.bytes         = bytes;
    e.wait_ns       = wait;
    ggprof_emit(&e.h);
}

static void emit_sync(const ggprof_split_place *w, int kind, uint64_t start, uint64_t end) {
    if (end > start) emit_event(w, GGPROF_REC_SYNC, kind, 0, -1, -1, 0, start, end, 0, 0);
}

int ggprof_cpu_end(const ggprof_split_place *w, int *n_ticks, int *n_expected) {
    cpu_split *s = t_active;
    t_active     = NULL;
    if (!s) return -1;
    *n_ticks    = s->n_ticks;
    *n_expected = s->n_exp;
    if (s->n_ticks != s->n_exp) return 0; /* no guessed times: the split is marked instead */

    const ggprof_ggml *g = &ggprof_eng.g;
    uint64_t prev = w->start_ns;
    if (s->gc_entry) {
        emit_sync(w, GGPROF_SYNC_CPU_PLAN, prev, s->gc_entry);
        prev = s->gc_entry;
        if (s->t0_start) {
            emit_sync(w, GGPROF_SYNC_CPU_KICKOFF, prev, s->t0_start);
            prev = s->t0_start;
        }
    }
    for (int k = 0; k < s->n_exp; k++) {
        struct ggml_tensor *t = s->nodes[s->exp_node[k]];
        int32_t  fi  = s->exp_fused[k];
        uint32_t fid = fi >= 0 ? ggprof_node_id(s->nodes[fi]) : 0;
        emit_event(w, GGPROF_REC_OP, 0, ggprof_node_id(t), w->node_start + s->exp_node[k],
                   fi >= 0 ? w->node_start + fi : -1, fid, prev, s->tick[k], g->ggml_nbytes(t), s->inop_wait[k]);
        prev = s->tick[k];
        if (s->bar_exit[k]) {
            emit_sync(w, GGPROF_SYNC_CPU_BARRIER, prev, s->bar_exit[k]);
            prev = s->bar_exit[k];
        }
    }
    emit_sync(w, GGPROF_SYNC_CPU_JOIN, prev, w->end_ns);
    return 1;
}

/* ---- hooks on thread 0 while it computes ---- */

void ggprof_cpu_barrier(void (*real)(struct ggml_threadpool *), struct ggml_threadpool *tp) {
    cpu_split *s = t_active;
    if (!s) {
        real(tp);
        return;
    }
    uint64_t t0 = ggprof_now_ns();
    real(tp);
    uint64_t t1 = ggprof_now_ns();
    if (s->pending_between) {
        s->pending_between = false;
        if (s->n_ticks >= 1 && s->n_ticks <= s->n_exp) s->bar_exit[s->n_ticks - 1] = t1;
    } else if (s->n_ticks < s->n_exp) {
        s->inop_wait[s->n_ticks] += t1 - t0;
    }
}

void ggprof_cpu_graph_compute_entry(void) {
    cpu_split *s = t_active;
    if (s && !s->gc_entry) s->gc_entry = ggprof_now_ns();
}

void ggprof_cpu_thread_start(void) {
    cpu_split *s = t_active;
    if (s && s->gc_entry && !s->t0_start) s->t0_start = ggprof_now_ns();
}
