/* CPU-backend per-op timing: thread 0 calls the abort callback after every computed node (ggml-cpu.c,
 * ggml_graph_compute_thread) and then the barrier; both are visible from outside ggml. */
#include "cpu_ticks.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

/* Thread 0 reads the clock at every tick and around every barrier: with clock_gettime that timing cost
 * about 3% of a 1.8 ms token here (median split durations with and without it). The time-stamp counter is a
 * few instructions; a split's counter values are put on CLOCK_MONOTONIC by the two anchors read at its start
 * and end, so only ratios within one split on one thread are used (an invariant TSC is required by that
 * much only; elsewhere the clock itself is read). */
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
static inline uint64_t stamp(void) { return __rdtsc(); }
#else
static inline uint64_t stamp(void) { return ggprof_now_ns(); }
#endif

/* Thread 0's times for one node, in stamp() units until the split ends: one stream of lines for the tick and
 * the barriers to write (the weights streaming between two nodes evict whatever the last node touched). */
typedef struct {
    uint64_t tick;      /* thread 0's tick after the node */
    uint64_t bar_exit;  /* end of the barrier between this node and the next, 0 if none */
    uint64_t inop_wait; /* thread 0's barrier waits inside the node */
} node_times;

/* What the walk over a split's nodes finds before the compute: which nodes tick, which fuse, and their
 * description ids. The walk reads every node's metadata and its sources' (about nine cache lines a node, all
 * cold: the last token's weights went through the caches since), about 8 us of thread 0's time per token of the
 * dense fixture model, on the token's critical path. llama.cpp computes the very same graph token after token
 * (graph reuse), so a plan is kept per split and used again while nothing can have changed the nodes:
 * ggprof_graph_gen moves with every wrapped ggml call that builds, renames or re-splits graphs (interpose.c). A
 * program that writes tensor fields directly, with no ggml call, is caught by walking again at every
 * PLAN_VERIFY_EVERY-th use: if the walk differs, the trace gets a note and this process keeps no plans any more. */
typedef struct {
    struct ggml_tensor **nodes, **graph_nodes; /* the split: its nodes, inside its graph's */
    int       n, graph_n;
    uint32_t  gen, epoch; /* ggprof_graph_gen and ggprof_desc_epoch when it was walked */
    uint32_t  uses;       /* since the last walk */
    bool      keep;       /* walked, and every description it refers to reached the trace */
    int       n_exp, cap;
    int32_t  *exp_node;   /* index in the split of each node that ticks */
    int32_t  *exp_fused;  /* index of the node computed with it (RMS_NORM+MUL), or -1 */
    uint32_t *exp_id;     /* node descriptions, looked up before the compute: after it, the tensors' */
    uint32_t *exp_fid;    /* metadata has been evicted by the weights streaming through the caches */
} split_plan;

#define PLAN_VERIFY_EVERY 16
#define MAX_PLANS         16 /* per thread, by the split's nodes pointer; one more is the verification's scratch */

typedef struct {
    /* What the tick and the barrier read, in the struct's first cache line. */
    int         n_exp, n_ticks;
    bool        pending_between; /* a tick just came: the next barrier is the one between nodes */
    node_times *times;
    int         cap;
    split_plan *plan;
    uint64_t    anchor_stamp, anchor_ns; /* stamp() and CLOCK_MONOTONIC read together when the split began */
    uint64_t    gc_entry, t0_start;
    ggprof_msg_cpu_ops *msg; /* the ops go out in chunks of at most GGPROF_CPU_OPS_MAX, built here */
} cpu_split;

static __thread cpu_split t_split;

/* The splits being timed, found by the calling thread's thread pointer: every thread calls the barrier
 * wrapper at every barrier, and thread 0 the tick after every node, where a general-dynamic TLS access (a
 * call to __tls_get_addr) would cost more than the timing itself. Initial-exec TLS would be one load, but
 * it puts the library's whole TLS block in static TLS, and a dlopen'd library may not get that. The table is
 * one cache line: between two barriers the weights streaming through evict it, so each line read here is a
 * miss on the critical path. */
#define MAX_ACTIVE 4
static struct {
    _Atomic uintptr_t owner[MAX_ACTIVE];
    cpu_split        *split[MAX_ACTIVE];
} g_active __attribute__((aligned(64))); /* one cache line, read at every barrier by every thread */

static inline uintptr_t thread_id(void) {
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11 && (defined(__x86_64__) || defined(__aarch64__))
    return (uintptr_t) __builtin_thread_pointer();
#else
    return (uintptr_t) pthread_self();
#endif
}

/* The split the calling thread is computing, or NULL: the owner's entry is only ever written by the owner,
 * so a thread that finds its own id there reads its own earlier store. */
static inline cpu_split *active_split(void) {
    uintptr_t me = thread_id();
    for (int i = 0; i < MAX_ACTIVE; i++) {
        if (atomic_load_explicit(&g_active.owner[i], memory_order_relaxed) == me) return g_active.split[i];
    }
    return NULL;
}

static bool activate(cpu_split *s) {
    uintptr_t me = thread_id();
    for (int i = 0; i < MAX_ACTIVE; i++) { /* a split this thread left active (its compute never returned) */
        if (atomic_load_explicit(&g_active.owner[i], memory_order_relaxed) == me) {
            g_active.split[i] = s;
            return true;
        }
    }
    for (int i = 0; i < MAX_ACTIVE; i++) {
        uintptr_t expect = 0;
        if (atomic_load_explicit(&g_active.owner[i], memory_order_relaxed) != 0) continue;
        if (atomic_compare_exchange_strong(&g_active.owner[i], &expect, me)) {
            g_active.split[i] = s; /* read only by this thread, after this store */
            return true;
        }
    }
    return false; /* more threads computing CPU splits at once than MAX_ACTIVE: this one is not timed */
}

static cpu_split *deactivate(void) {
    uintptr_t me = thread_id();
    for (int i = 0; i < MAX_ACTIVE; i++) {
        if (atomic_load_explicit(&g_active.owner[i], memory_order_relaxed) == me) {
            cpu_split *s = g_active.split[i];
            atomic_store(&g_active.owner[i], 0);
            return s;
        }
    }
    return NULL;
}

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
    cpu_split *s = active_split();
    if (s) {
        int n = s->n_ticks;
        if (n < s->n_exp) {
            s->times[n].tick     = stamp();
            s->times[n].bar_exit = 0;
            if (n + 4 < s->n_exp) __builtin_prefetch(&s->times[n + 4], 1);
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
    bool install = h && !h->installed;
    if (install) h->installed = true;
    pthread_mutex_unlock(&g_hooks_lock);
    if (!install) return;
    /* Outside the lock: the setter a backend hands out may be our own wrapper (its GOT entry is interposed),
     * which takes the lock again. */
    set_abort_fn set = setter_for(backend);
    if (set) {
        set(backend, tick_cb, h);
    } else {
        h->installed = false;
    }
}

void ggprof_cpu_set_abort_callback(set_abort_fn real, ggml_backend_t backend, ggml_abort_callback cb, void *data) {
    pthread_mutex_lock(&g_hooks_lock);
    cpu_hook *h = (cb == tick_cb) ? NULL : hook_for(backend);
    if (h == NULL) {
        pthread_mutex_unlock(&g_hooks_lock);
        real(backend, cb, data);
        return;
    }
    /* The program's callback is remembered either way. The tick goes in front of it only when ops will be
     * timed (a recording at level op, or a tick already installed); otherwise ggml keeps calling the
     * program's own callback, or none, and ggprof_cpu_hook_backend installs the tick if the C API starts
     * profiling later. */
    h->app_cb    = cb;
    h->app_data  = data;
    bool tick    = h->installed || ggprof_ticks_wanted();
    h->installed = tick;
    pthread_mutex_unlock(&g_hooks_lock);
    if (tick) {
        real(backend, tick_cb, h);
    } else {
        real(backend, cb, data);
    }
}

/* ---- which nodes tick: the CPU backend's rules in ggml 0.23 ---- */

static void use_counts_reset(ggprof_use_counts *u) {
    u->built     = false;
    u->n         = 0;
    u->graph_key = 0;
}

static void use_counts_for_graph(ggprof_use_counts *u, struct ggml_tensor **nodes, int n) {
    uint64_t h = 0xcbf29ce484222325ull ^ (uint64_t) n;
    for (int i = 0; i < n; i++) h = (h ^ (uint64_t) (uintptr_t) nodes[i]) * 0x100000001b3ull;
    if (h == u->graph_key && u->built) return;
    use_counts_reset(u);
    u->graph_key = h;
}

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

static bool grow_times(cpu_split *s, int need) {
    if (need <= s->cap) return true;
    int cap = s->cap ? s->cap : 256;
    while (cap < need) cap *= 2;
    node_times *t = realloc(s->times, sizeof(node_times) * (size_t) cap);
    if (!t) return false;
    s->times = t;
    s->cap   = cap;
    return true;
}

static bool grow_plan(split_plan *p, int need) {
    if (need <= p->cap) return true;
    int cap = p->cap ? p->cap : 256;
    while (cap < need) cap *= 2;
    int32_t  *a = realloc(p->exp_node, sizeof(int32_t) * (size_t) cap);
    if (a) p->exp_node = a;
    int32_t  *b = realloc(p->exp_fused, sizeof(int32_t) * (size_t) cap);
    if (b) p->exp_fused = b;
    uint32_t *f = realloc(p->exp_id, sizeof(uint32_t) * (size_t) cap);
    if (f) p->exp_id = f;
    uint32_t *h = realloc(p->exp_fid, sizeof(uint32_t) * (size_t) cap);
    if (h) p->exp_fid = h;
    if (!a || !b || !f || !h) return false;
    p->cap = cap;
    return true;
}

/* Description ids remembered by the node's place in its graph, per thread: llama.cpp computes the same graph
 * token after token, so a node whose key is the one remembered for its place takes the remembered id without a
 * probe of the engine's shared table (a random access into 256 KiB that the weights evict every token). */
typedef struct {
    uint64_t key;
    uint32_t id, epoch;
} place_memo;

static __thread place_memo *t_memo;
static __thread int         t_memo_cap;

static uint32_t node_id_at(const struct ggml_tensor *t, int place, uint32_t epoch, bool *kept) {
    uint64_t key = ggprof_node_key(t, 0);
    if (place >= 0 && place < t_memo_cap) {
        place_memo *m = &t_memo[place];
        if (m->key == key && m->epoch == epoch) return m->id;
        uint32_t id = ggprof_node_id_keyed(t, key, kept);
        *m = (place_memo){ *kept ? key : 0, id, epoch };
        return id;
    }
    return ggprof_node_id_keyed(t, key, kept);
}

/* The nodes' metadata is cold here (the last token's weights went through the caches since): ask for the
 * lines a key reads a few nodes ahead, the node's own (the whole struct: shape, op, sources, name) eight
 * ahead, then its first sources' shapes four ahead, once their pointers have arrived. The time before a
 * split's compute fell by a quarter (~12000 to ~9000 TSC cycles, median of 193 splits, four runs each). */
static inline void prefetch_ahead(struct ggml_tensor **nodes, int n, int i) {
    if (i + 8 < n) {
        const char *p = (const char *) nodes[i + 8];
        for (size_t l = 0; l < sizeof(struct ggml_tensor); l += 64) __builtin_prefetch(p + l);
    }
    if (i + 4 < n) {
        const struct ggml_tensor *q = nodes[i + 4];
        for (int k = 0; k < 3; k++) {
            if (!q->src[k]) continue;
            __builtin_prefetch(q->src[k]);
            __builtin_prefetch((const char *) q->src[k] + 64);
        }
    }
}

/* Walks a split's nodes into p (which nodes tick, fusion, description ids); false when out of memory. */
static bool walk(split_plan *p, struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n,
                 ggprof_use_counts *uc, uint32_t epoch) {
    const ggprof_ggml *g = &ggprof_eng.g;
    if (!grow_plan(p, n > 0 ? n : 1)) return false;
    if (graph_n > t_memo_cap) {
        place_memo *m = realloc(t_memo, sizeof(*m) * (size_t) graph_n);
        if (m) {
            memset(m + t_memo_cap, 0, sizeof(*m) * (size_t) (graph_n - t_memo_cap));
            t_memo     = m;
            t_memo_cap = graph_n;
        }
    }
    use_counts_for_graph(uc, graph_nodes, graph_n);
    int  base = (int) (nodes - graph_nodes);
    bool kept = true;
    p->n_exp  = 0;
    for (int i = 0; i < n; i++) {
        const struct ggml_tensor *t = nodes[i];
        prefetch_ahead(nodes, n, i);
        if (!ggprof_node_computed(g, t)) continue;
        int  k = p->n_exp++;
        bool k1 = true, k2 = true;
        p->exp_node[k]  = i;
        p->exp_fused[k] = -1;
        p->exp_id[k]    = node_id_at(t, base + i, epoch, &k1);
        p->exp_fid[k]   = 0;
        if (fuses(nodes, n, i, graph_nodes, graph_n, uc)) {
            p->exp_fused[k] = ++i;
            p->exp_fid[k]   = node_id_at(nodes[i], base + i, epoch, &k2);
        }
        kept = kept && k1 && k2;
    }
    p->nodes       = nodes;
    p->n           = n;
    p->graph_nodes = graph_nodes;
    p->graph_n     = graph_n;
    p->epoch       = epoch;
    p->uses        = 0;
    p->keep        = kept;
    return true;
}

static bool same_walk(const split_plan *a, const split_plan *b) {
    size_t n = (size_t) a->n_exp;
    return a->n_exp == b->n_exp && memcmp(a->exp_node, b->exp_node, n * sizeof(int32_t)) == 0 &&
           memcmp(a->exp_fused, b->exp_fused, n * sizeof(int32_t)) == 0 &&
           memcmp(a->exp_id, b->exp_id, n * sizeof(uint32_t)) == 0 &&
           memcmp(a->exp_fid, b->exp_fid, n * sizeof(uint32_t)) == 0;
}

static __thread split_plan *t_plans; /* MAX_PLANS + 1 */
static _Atomic bool         g_plans_off;

/* The plan for this split: kept from an earlier compute while it holds, walked otherwise. */
static split_plan *plan_for(struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n,
                            ggprof_use_counts *uc) {
    if (!t_plans && !(t_plans = calloc(MAX_PLANS + 1, sizeof(split_plan)))) return NULL;
    /* Read before the walk: a change made while it runs leaves the plan out of date for the next compute. */
    uint32_t gen   = ggprof_graph_gen_now();
    uint32_t epoch = ggprof_desc_epoch();
    uintptr_t h    = ((uintptr_t) nodes >> 3) ^ (uintptr_t) n;
    split_plan *p  = &t_plans[(h ^ (h >> 7)) % MAX_PLANS];
    bool held = p->keep && p->nodes == nodes && p->n == n && p->graph_nodes == graph_nodes && p->graph_n == graph_n &&
                p->gen == gen && p->epoch == epoch && !atomic_load_explicit(&g_plans_off, memory_order_relaxed);
    if (held && ++p->uses < PLAN_VERIFY_EVERY) return p;
    split_plan *fresh = held ? &t_plans[MAX_PLANS] : p;
    if (!walk(fresh, nodes, n, graph_nodes, graph_n, uc, epoch)) return NULL;
    fresh->gen = gen;
    if (held) {
        if (!same_walk(p, fresh) && !atomic_exchange(&g_plans_off, true)) {
            ggprof_note("split plans off: a node of a split changed with no ggml call (a program writing tensor fields "
                        "directly); up to %d computes before this note may carry the node's earlier description",
                        PLAN_VERIFY_EVERY - 1);
        }
        split_plan tmp = *p; /* the fresh walk takes the slot; the old arrays become the next scratch */
        *p = *fresh;
        *fresh = tmp;
    }
    return p;
}

/* stamp() and CLOCK_MONOTONIC read together: the clock between two stamps, retried when they lie far apart (the
 * thread was preempted between the reads, which would skew every tick of the split by as much). */
static void read_anchor(uint64_t *st, uint64_t *ns) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 4 && best > 2000; i++) {
        uint64_t a = stamp(), t = ggprof_now_ns(), b = stamp();
        if (b - a < best) {
            best = b - a;
            *st  = a + (b - a) / 2;
            *ns  = t;
        }
    }
}

/* What a thread that timed CPU splits holds on the heap (the ops buffer, times, plans, ids by place) goes when
 * the thread ends: a program that starts a thread per request would otherwise leave ~150 KiB with each. */
static pthread_key_t  g_thread_key;
static pthread_once_t g_thread_key_once = PTHREAD_ONCE_INIT;

static void free_thread_state(void *unused) {
    (void) unused;
    cpu_split *s = &t_split;
    free(s->times);
    free(s->msg);
    memset(s, 0, sizeof(*s));
    for (int i = 0; t_plans && i <= MAX_PLANS; i++) {
        free(t_plans[i].exp_node);
        free(t_plans[i].exp_fused);
        free(t_plans[i].exp_id);
        free(t_plans[i].exp_fid);
    }
    free(t_plans);
    t_plans = NULL;
    free(t_memo);
    t_memo     = NULL;
    t_memo_cap = 0;
}

static void make_thread_key(void) {
    if (pthread_key_create(&g_thread_key, free_thread_state) != 0) g_thread_key = (pthread_key_t) -1;
}

int ggprof_cpu_begin(struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n,
                     ggprof_use_counts *uc) {
    cpu_split *s = &t_split;
    /* On the heap, not in TLS: 128 KiB of static TLS would go with every thread of every program the library
     * is preloaded into, and only the threads that compute CPU splits at level op need it. */
    if (!s->msg) {
        pthread_once(&g_thread_key_once, make_thread_key);
        if (g_thread_key != (pthread_key_t) -1) pthread_setspecific(g_thread_key, s);
        s->msg = malloc(sizeof(ggprof_msg_cpu_ops) + GGPROF_CPU_OPS_MAX * sizeof(ggprof_cpu_op));
        if (!s->msg) return -1;
    }
    if (!grow_times(s, n > 0 ? n : 1)) return -1;
    split_plan *p = plan_for(nodes, n, graph_nodes, graph_n, uc);
    if (!p) return -1;
    s->plan  = p;
    s->n_exp = p->n_exp;
    for (int k = 0; k < s->n_exp; k++) s->times[k].inop_wait = 0;
    s->n_ticks         = 0;
    s->pending_between = false;
    s->gc_entry        = 0;
    s->t0_start        = 0;
    read_anchor(&s->anchor_stamp, &s->anchor_ns);
    if (!activate(s)) return -1;
    return s->n_exp;
}

typedef void (*chunk_fn)(const ggprof_msg_cpu_ops *m, void *user);

static void flush_chunk(ggprof_msg_cpu_ops *m, const ggprof_split_place *w, uint16_t flags, uint32_t n,
                        uint64_t start, uint64_t plan_end, uint64_t kickoff_end, chunk_fn on_chunk, void *user) {
    m->h              = (ggprof_msg_hdr){ (uint32_t) (sizeof(*m) + n * sizeof(ggprof_cpu_op)), GGPROF_MSG_CPU_OPS, flags };
    m->graph_id       = w->graph_id;
    m->sched_id       = w->sched_id;
    m->split_id       = w->split_id;
    m->backend_id     = w->backend_id;
    m->n_ops          = n;
    m->start_ns       = start;
    m->plan_end_ns    = plan_end;
    m->kickoff_end_ns = kickoff_end;
    m->end_ns         = (flags & GGPROF_CPU_OPS_LAST) ? w->end_ns : 0;
    ggprof_emit(&m->h);
    if (on_chunk) on_chunk(m, user);
}

int ggprof_cpu_end(const ggprof_split_place *w, int *n_ticks, int *n_expected, chunk_fn on_chunk, void *user) {
    cpu_split *s = deactivate();
    if (!s) return -1;
    *n_ticks    = s->n_ticks;
    *n_expected = s->n_exp;
    if (s->n_ticks != s->n_exp) return 0; /* no guessed times: the split is marked instead */

    /* From stamp() units to nanoseconds on CLOCK_MONOTONIC, through the anchors at both ends of the split. */
    uint64_t end_stamp, end_ns;
    read_anchor(&end_stamp, &end_ns);
    double   scale     = end_stamp > s->anchor_stamp ? (double) (end_ns - s->anchor_ns) / (double) (end_stamp - s->anchor_stamp)
                                                     : 1.0;
#define TO_NS(x) (s->anchor_ns + (uint64_t) ((double) ((x) - s->anchor_stamp) * scale))
#define SPAN_NS(x) ((uint64_t) ((double) (x) * scale))
    uint64_t start = w->start_ns, plan_end = s->gc_entry, kickoff_end = s->gc_entry ? s->t0_start : 0;
    uint64_t last_tick = kickoff_end ? kickoff_end : plan_end ? plan_end : start;
    uint64_t op_start  = last_tick;
    const split_plan *p = s->plan;
    uint16_t flags = GGPROF_CPU_OPS_FIRST;
    uint32_t n     = 0;
    for (int k = 0; k < s->n_exp; k++) {
        ggprof_cpu_op *op = &s->msg->ops[n++];
        int32_t fi        = p->exp_fused[k];
        const node_times *nt = &s->times[k];
        uint64_t bar      = nt->bar_exit > nt->tick ? SPAN_NS(nt->bar_exit - nt->tick) : 0;
        uint64_t wait     = SPAN_NS(nt->inop_wait);
        op->node_id       = p->exp_id[k];
        op->fused_node_id = p->exp_fid[k];
        op->node_index    = w->node_start + p->exp_node[k];
        op->fused_index   = fi >= 0 ? w->node_start + fi : -1;
        /* Converted times stay in order and inside the split, whatever error the anchors carry: the op inside
         * [its start, the split's end], the barrier after it and its own waits inside what is left to them. */
        uint64_t tick     = TO_NS(nt->tick);
        tick              = tick > w->end_ns ? w->end_ns : tick < last_tick ? last_tick : tick;
        if (bar > w->end_ns - tick) bar = w->end_ns - tick;
        uint64_t span     = tick > op_start ? tick - op_start : 0;
        if (wait > span) wait = span;
        last_tick         = tick;
        op_start          = tick + bar;
        op->tick_ns       = tick;
        op->barrier_ns    = bar > UINT32_MAX ? UINT32_MAX : (uint32_t) bar;
        op->wait_ns       = wait > UINT32_MAX ? UINT32_MAX : (uint32_t) wait;
        if (n == GGPROF_CPU_OPS_MAX && k + 1 < s->n_exp) {
            flush_chunk(s->msg, w, flags, n, start, plan_end, kickoff_end, on_chunk, user);
            start = op->tick_ns + op->barrier_ns;
            flags = 0;
            n     = 0;
        }
    }
    flush_chunk(s->msg, w, flags | GGPROF_CPU_OPS_LAST, n, start, plan_end, kickoff_end, on_chunk, user);
#undef TO_NS
#undef SPAN_NS
    return 1;
}

/* ---- hooks on thread 0 while it computes ---- */

void ggprof_cpu_barrier(void (*real)(struct ggml_threadpool *), struct ggml_threadpool *tp) {
    cpu_split *s = active_split();
    if (!s) {
        real(tp);
        return;
    }
    if (s->pending_between) {
        /* The barrier right after a tick: the wait runs from the tick, which was just read. */
        real(tp);
        uint64_t t1 = stamp();
        s->pending_between = false;
        if (s->n_ticks >= 1 && s->n_ticks <= s->n_exp) s->times[s->n_ticks - 1].bar_exit = t1;
        return;
    }
    uint64_t t0 = stamp();
    real(tp);
    uint64_t t1 = stamp();
    if (s->n_ticks < s->n_exp) s->times[s->n_ticks].inop_wait += t1 - t0;
}

void ggprof_cpu_graph_compute_entry(void) {
    cpu_split *s = active_split();
    if (s && !s->gc_entry) s->gc_entry = ggprof_now_ns();
}

void ggprof_cpu_thread_start(void) {
    cpu_split *s = active_split();
    if (s && s->gc_entry && !s->t0_start) s->t0_start = ggprof_now_ns();
}
