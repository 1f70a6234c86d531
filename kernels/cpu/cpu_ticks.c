/* CPU-backend per-op timing: thread 0 calls the abort callback after every computed node (ggml-cpu.c,
 * ggml_graph_compute_thread) and then the barrier; both are visible from outside ggml. */
#include "timing.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine.h"
#include "reach.h"
#include "tick_model.h"

/* Thread 0 reads the clock at every tick and around every barrier: with clock_gettime that timing cost
 * about 3% of a 1.8 ms token here (median split durations with and without it). The time-stamp counter is a
 * few instructions; a split's counter values are put on CLOCK_MONOTONIC by the two anchors read at its start
 * and end, so only ratios within one split on one thread are used (an invariant TSC is required by that
 * much only; elsewhere the clock itself is read). The reader of the CPU_OPS message does that conversion
 * (ggprof_cpu_ops_expand), not the computing thread. */
static inline uint64_t stamp(void) { return ggprof_stamp(); }

/* Thread 0's times for one node, in stamp() units (CPU_OPS carries them so): one stream of lines for the tick and
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
 * ggprof_graph_gen moves with every wrapped ggml call that builds, renames or re-splits graphs (interpose.c).
 * Where ggml is inside the program those calls are direct or inlined, not wrapped: there a plan also holds only
 * while the split's nodes print as they did when it was walked (nodes_print: each node's own fields that decide
 * its ticks and its description, and its sources' addresses, not its sources' fields). A program that writes
 * tensor fields directly, with no ggml call (or a field the print leaves out), is caught by walking again at
 * every PLAN_VERIFY_EVERY-th use: if the walk differs, the trace gets a note and this process keeps no plans any
 * more. */
typedef struct {
    struct ggml_tensor **nodes, **graph_nodes; /* the split: its nodes, inside its graph's */
    int       n, graph_n;
    uint32_t  gen, epoch; /* ggprof_graph_gen and ggprof_desc_epoch when it was walked */
    uint64_t  print;      /* nodes_print when it was walked, where ggml is inside the program (else 0) */
    uint32_t  uses;       /* since the last walk */
    bool      keep;       /* walked, and every description it refers to reached the trace */
    int       n_exp, cap;
    int       model;      /* the tick model it was walked with (tick_model.h) */
    uint32_t  tested;     /* the other models still in the running when it was walked, with their counts: */
    int       alt_count[GGPROF_TICK_MODELS_MAX];
    uint64_t  alt_hash[GGPROF_TICK_MODELS_MAX]; /* (the model's own at [model]) */
    ggprof_tick *exp;     /* each node that ticks, and the node computed with it (RMS_NORM+MUL), or -1 */
    ggprof_cpu_op_id *ids; /* and their descriptions, looked up before the compute (after it, the tensors' metadata
                            * has been evicted by the weights streaming through the caches): the plan on the wire */
    uint32_t  wire_id;    /* its CPU_OPS_PLAN's id (0: none given yet), and whether that reached the ring in the */
    uint32_t  wire_epoch; /* description epoch (ggprof_desc_epoch) it has now: 0 if not */
} split_plan;

#define PLAN_VERIFY_EVERY 16
#define MAX_PLANS         16 /* per thread, by the split's nodes pointer; one more is the verification's scratch */

/* How the CPU splits were planned, for the note at exit: splits that used a kept plan, walks (a new plan, or one
 * out of date), of these the ones the print found changed and the verification walks, and the stamp() units the
 * prints and the walks took with the nodes they covered. */
static struct {
    _Atomic uint64_t kept, walked, changed, verified;
    _Atomic uint64_t print_units, print_nodes, walk_units, walk_nodes;
} g_plan_stats;

typedef struct {
    /* What the tick and the barrier read, in the struct's first cache line. */
    int         n_exp, n_ticks;
    int         limit;           /* ticks kept: one per node at most, whichever model turns out right */
    bool        pending_between; /* a tick just came: the next barrier is the one between nodes */
    bool        alone;           /* one thread computes (its plan said so): ggml's barriers return at once, and
                                  * are not timed (no barrier waits, as in OpenMP builds, whose barrier is then not
                                  * even called): a time-stamp read less a node, 23 ns of a node's ~66 on one VM */
    node_times *times;
    int         cap;
    split_plan *plan;
    ggprof_use_counts *uc;
    uint64_t    anchor_stamp, anchor_ns; /* stamp() and CLOCK_MONOTONIC read together when the split began */
    uint64_t    gc_entry, t0_start;
    uint64_t    end_stamp, end_ns;   /* the anchors read when it ended (cpu_end), for the threads' times */
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
        if (n < s->limit) {
            s->times[n].tick     = stamp();
            s->times[n].bar_exit = 0;
            /* The next node's in-op waits start here (cpu_begin zeroes only the first node's). */
            if (n + 1 < s->limit) s->times[n + 1].inop_wait = 0;
            if (n + 4 < s->limit) __builtin_prefetch(&s->times[n + 4], 1);
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

typedef ggprof_set_abort_fn set_abort_fn;

/* The backend's abort-callback setter: its registry's proc address, or (releases up to late 2024, whose CPU
 * registry answers no proc address) the CPU backend's exported setter in the ggml library. */
static set_abort_fn setter_for(ggml_backend_t backend) {
    const ggprof_ggml *g = &ggprof_eng.g;
    ggml_backend_dev_t dev = g->fn_ggml_backend_get_device(backend);
    ggml_backend_reg_t reg = dev && g->fn_ggml_backend_dev_backend_reg ? g->fn_ggml_backend_dev_backend_reg(dev) : NULL;
    set_abort_fn set =
        reg && g->fn_ggml_backend_reg_get_proc_address
            ? (set_abort_fn) g->fn_ggml_backend_reg_get_proc_address(reg, "ggml_backend_set_abort_callback")
            : NULL;
    if (!set) set = (set_abort_fn) ggprof_ggml_sym(g, "ggml_backend_cpu_set_abort_callback");
    return set;
}

/* The backend the tick was installed on last: every op-level CPU split asks again, and the lock and the search
 * cost thread 0 about 200 TSC cycles a split. Cleared wherever that backend's tick goes. */
static _Atomic(ggml_backend_t) g_last_hooked;

static void cpu_hook_backend(ggml_backend_t backend) {
    if (atomic_load_explicit(&g_last_hooked, memory_order_acquire) == backend) return;
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
        atomic_store_explicit(&g_last_hooked, backend, memory_order_release);
    } else {
        h->installed = false;
    }
}

static void cpu_set_abort_callback(set_abort_fn real, ggml_backend_t backend, ggml_abort_callback cb, void *data) {
    pthread_mutex_lock(&g_hooks_lock);
    cpu_hook *h = (cb == tick_cb) ? NULL : hook_for(backend);
    if (h == NULL) {
        pthread_mutex_unlock(&g_hooks_lock);
        real(backend, cb, data);
        return;
    }
    /* The program's callback is remembered either way. The tick goes in front of it only when ops will be
     * timed (a recording at level op, or a tick already installed); otherwise ggml keeps calling the
     * program's own callback, or none, and cpu_hook_backend installs the tick if the C API starts
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
    ggprof_tick *a = realloc(p->exp, sizeof(ggprof_tick) * (size_t) cap);
    if (a) p->exp = a;
    ggprof_cpu_op_id *f = realloc(p->ids, sizeof(ggprof_cpu_op_id) * (size_t) cap);
    if (f) p->ids = f;
    if (!a || !f) return false;
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
static __thread ggprof_use_counts t_uc; /* the RMS_NORM use counts of the graph walked last (tick_model.h) */
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
        for (size_t l = 0; l < ggprof_eng.g.links_off + sizeof(struct ggml_tensor_links); l += 64) __builtin_prefetch(p + l);
    }
    if (i + 4 < n) {
        const struct ggml_tensor_links *q = ggprof_links(nodes[i + 4]);
        for (int k = 0; k < 3; k++) {
            if (!q->src[k]) continue;
            __builtin_prefetch(q->src[k]);
            __builtin_prefetch((const char *) q->src[k] + 64);
        }
    }
}

/* The tick models: the first still in the running is the one plans are walked with. A model leaves the running
 * when a split's ticks refute it while another model's count agrees with them; a split whose ticks no model
 * explains refutes none (an abort callback of the program's may have stopped the compute). */
static ggprof_tick_env  g_env;
static pthread_once_t   g_env_once = PTHREAD_ONCE_INIT;
static _Atomic uint32_t g_models_alive;
static _Atomic int      g_model;
static _Atomic int      g_notes_left = 3; /* notes about unmatched splits, per process */
static _Atomic bool     g_model_noted;    /* the trace says which model read the first split */

static void cpu_plans_off(const char *why_fmt, const char *arg);
static void read_anchor(uint64_t *st, uint64_t *ns);
static uint64_t g_cal_stamp, g_cal_ns; /* stamp() and the clock read together at the first CPU split */

/* One note at exit: how the CPU splits were planned, and what a print and a walk cost a node (stamp() units put on
 * the clock by the anchors read at the first split and here). */
static void plans_at_exit(void) {
    uint64_t kept = atomic_load(&g_plan_stats.kept), walked = atomic_load(&g_plan_stats.walked);
    uint64_t verified = atomic_load(&g_plan_stats.verified), changed = atomic_load(&g_plan_stats.changed);
    uint64_t pu = atomic_load(&g_plan_stats.print_units), pn = atomic_load(&g_plan_stats.print_nodes);
    uint64_t wu = atomic_load(&g_plan_stats.walk_units), wn = atomic_load(&g_plan_stats.walk_nodes);
    if (kept + walked + verified == 0) return;
    uint64_t st, ns;
    read_anchor(&st, &ns);
    double scale = st > g_cal_stamp && ns > g_cal_ns ? (double) (ns - g_cal_ns) / (double) (st - g_cal_stamp) : 1.0;
    char   print[96] = "";
    if (pn) snprintf(print, sizeof(print), "; printed %.1f ns a node", (double) pu * scale / (double) pn);
    ggprof_trace_note("CPU split plans: %llu splits, %llu on a kept plan, %llu verification walks, %llu walked (%llu "
                      "found changed by their nodes' print); walked %.1f ns a node%s",
                      (unsigned long long) (kept + verified + walked), (unsigned long long) kept,
                      (unsigned long long) verified, (unsigned long long) walked, (unsigned long long) changed,
                      wn ? (double) wu * scale / (double) wn : 0.0, print);
}

static void env_init(void) {
    const char *plans = getenv("GGPROF_PLANS"); /* 0: every split walked (what plans save, and a reference) */
    if (plans && strcmp(plans, "0") == 0) cpu_plans_off("split plans off: %s, so every CPU split is walked anew", "GGPROF_PLANS=0");
    read_anchor(&g_cal_stamp, &g_cal_ns);
    atexit(plans_at_exit);
    const ggprof_ggml *g = &ggprof_eng.g;
    g_env = (ggprof_tick_env){ g->op.none, g->op.reshape, g->op.view, g->op.permute, g->op.transpose,
                               g->op.rms_norm, g->op.mul, g->links_off, g->has_compute_flag, !ggprof_eng.cpu_fusion };
    uint32_t alive = 0;
    for (int m = 0; m < ggprof_n_tick_models; m++) {
        if (ggprof_tick_model_applies(&ggprof_tick_models[m], &g_env)) alive |= 1u << m;
    }
    atomic_store(&g_models_alive, alive);
    atomic_store(&g_model, alive ? __builtin_ctz(alive) : 0);
}

/* Walks a split's nodes into p (which nodes tick under the current model, description ids), and counts the ticks
 * of every other model still in the running; false when out of memory. */
static bool walk(split_plan *p, struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n,
                 ggprof_use_counts *uc, uint32_t epoch) {
    if (!grow_plan(p, n > 0 ? n : 1)) return false;
    if (graph_n > t_memo_cap) {
        place_memo *m = realloc(t_memo, sizeof(*m) * (size_t) graph_n);
        if (m) {
            memset(m + t_memo_cap, 0, sizeof(*m) * (size_t) (graph_n - t_memo_cap));
            t_memo     = m;
            t_memo_cap = graph_n;
        }
    }
    int      model = atomic_load_explicit(&g_model, memory_order_relaxed);
    uint32_t alive = atomic_load_explicit(&g_models_alive, memory_order_relaxed);
    p->model  = model;
    p->n_exp  = ggprof_tick_walk(&ggprof_tick_models[model], &g_env, nodes, n, graph_nodes, graph_n, uc, p->exp,
                                 &p->alt_hash[model]);
    p->alt_count[model] = p->n_exp;
    p->tested = alive & ~(1u << model);
    for (uint32_t m = p->tested; m; m &= m - 1) {
        int j = __builtin_ctz(m);
        p->alt_count[j] = ggprof_tick_walk(&ggprof_tick_models[j], &g_env, nodes, n, graph_nodes, graph_n, uc, NULL,
                                           &p->alt_hash[j]);
    }
    int  base = (int) (nodes - graph_nodes);
    bool kept = true;
    for (int k = 0; k < p->n_exp; k++) {
        const ggprof_tick *t = &p->exp[k];
        prefetch_ahead(nodes, n, t->node);
        bool k1 = true, k2 = true;
        uint32_t id  = node_id_at(nodes[t->node], base + t->node, epoch, &k1);
        uint32_t fid = t->fused >= 0 ? node_id_at(nodes[t->fused], base + t->fused, epoch, &k2) : 0;
        p->ids[k]    = (ggprof_cpu_op_id){ id, fid, t->node, t->fused >= 0 ? t->fused : -1 };
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
    return a->n_exp == b->n_exp && memcmp(a->exp, b->exp, n * sizeof(ggprof_tick)) == 0 &&
           memcmp(a->ids, b->ids, n * sizeof(ggprof_cpu_op_id)) == 0;
}

/* A split's nodes as a plan sees them, where no wrapped ggml call says when they change (ggml inside the program):
 * per node its address, type and op, flags, shape, op parameters, sources' addresses and data address, so a node
 * rebuilt, re-shaped, re-pointed or moved to other memory prints differently. Each field goes through its own
 * odd multiplier (pairwise differences with few factors of two, so that two swapped pointers do not cancel) into
 * one sum per node, independent products that pipeline, and the sums are chained node by node. It reads the
 * node's first four cache lines (the walk reads about nine a node, its sources' too) and computes no description
 * key: what it costs beside the walk is in the trace's note at exit (plans_at_exit). */
#define PRINT_K(j) (0x9e3779b97f4a7c15ull * (2ull * (j) + 1))

static uint64_t nodes_print(struct ggml_tensor *const *nodes, int n, const struct ggml_tensor *const *graph_nodes,
                            int graph_n) {
    size_t   lo = ggprof_eng.g.links_off;
    uint64_t h  = ((uint64_t) (uintptr_t) nodes * PRINT_K(40) + (uint64_t) (uintptr_t) graph_nodes * PRINT_K(41) +
                  (uint64_t) (uint32_t) n * PRINT_K(42) + (uint64_t) (uint32_t) graph_n * PRINT_K(43));
    for (int i = 0; i < n; i++) {
        const struct ggml_tensor *t = nodes[i];
        if (i + 4 < n) {
            const char *q = (const char *) nodes[i + 4];
            for (size_t l = 0; l < lo + offsetof(struct ggml_tensor_links, name); l += 64) __builtin_prefetch(q + l);
        }
        const struct ggml_tensor_links *l = ggml_abi_links(t, lo);
        uint64_t par[GGML_ABI_MAX_OP_PARAMS / 8];
        memcpy(par, t->op_params, sizeof(par));
        uint64_t a = (uint64_t) (uintptr_t) t * PRINT_K(0) +
                     ((uint64_t) (uint32_t) t->type | (uint64_t) (uint32_t) t->op << 32) * PRINT_K(1) +
                     (uint64_t) (uint32_t) t->flags * PRINT_K(2) + (uint64_t) (uintptr_t) l->data * PRINT_K(3);
        uint64_t b = (uint64_t) t->ne[0] * PRINT_K(4) + (uint64_t) t->ne[1] * PRINT_K(5) +
                     (uint64_t) t->ne[2] * PRINT_K(6) + (uint64_t) t->ne[3] * PRINT_K(7);
        uint64_t c = 0, d = 0;
        for (int k = 0; k < GGML_ABI_MAX_OP_PARAMS / 8; k++) c += par[k] * PRINT_K(8 + k);
        for (int k = 0; k < GGML_ABI_MAX_SRC; k++) d += (uint64_t) (uintptr_t) l->src[k] * PRINT_K(16 + k);
        h = (h ^ (a + b + c + d)) * 0xff51afd7ed558ccdull;
        h ^= h >> 31;
    }
    return h ? h : 1; /* 0: no print taken */
}

static __thread split_plan *t_plans; /* MAX_PLANS + 1 */
static _Atomic bool         g_plans_off;

static void cpu_plans_off(const char *why_fmt, const char *arg) {
    if (!atomic_exchange(&g_plans_off, true)) ggprof_trace_note(why_fmt, arg);
}

/* The plan for this split: kept from an earlier compute while it holds, walked otherwise. */
static split_plan *plan_for(struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n,
                            ggprof_use_counts *uc) {
    if (!t_plans && !(t_plans = calloc(MAX_PLANS + 1, sizeof(split_plan)))) return NULL;
    /* Read before the walk: a change made while it runs leaves the plan out of date for the next compute. */
    uint32_t gen   = ggprof_graph_gen_now();
    uint32_t epoch = ggprof_desc_epoch();
    uintptr_t h    = ((uintptr_t) nodes >> 3) ^ (uintptr_t) n;
    split_plan *p  = &t_plans[(h ^ (h >> 7)) % MAX_PLANS];
    bool off  = atomic_load_explicit(&g_plans_off, memory_order_relaxed);
    bool held = !off && p->keep && p->nodes == nodes && p->n == n && p->graph_nodes == graph_nodes &&
                p->graph_n == graph_n && p->gen == gen && p->epoch == epoch &&
                p->model == atomic_load_explicit(&g_model, memory_order_relaxed) && p->tested == 0;
    /* Where graph-building calls are direct, the generation says nothing: the nodes' print must hold too. */
    uint64_t print = 0;
    if (!off && ggprof_reach_embedded()) {
        uint64_t t0 = stamp();
        print       = nodes_print(nodes, n, (const struct ggml_tensor *const *) graph_nodes, graph_n);
        atomic_fetch_add_explicit(&g_plan_stats.print_units, stamp() - t0, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_plan_stats.print_nodes, (uint64_t) n, memory_order_relaxed);
        if (held && p->print != print) {
            held = false;
            atomic_fetch_add_explicit(&g_plan_stats.changed, 1, memory_order_relaxed);
        }
    }
    if (held && ++p->uses < PLAN_VERIFY_EVERY) {
        atomic_fetch_add_explicit(&g_plan_stats.kept, 1, memory_order_relaxed);
        return p;
    }
    /* Walked into the scratch plan, beside the slot's: where the walk finds what the slot held, the plan the ring
     * has (its CPU_OPS_PLAN) still names the ops, and is not sent again (a program whose every graph call moves
     * the generation walks every split, and would otherwise send a plan with every token). */
    split_plan *fresh = &t_plans[MAX_PLANS];
    uint64_t t0 = stamp();
    if (!walk(fresh, nodes, n, graph_nodes, graph_n, uc, epoch)) return NULL;
    atomic_fetch_add_explicit(&g_plan_stats.walk_units, stamp() - t0, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_plan_stats.walk_nodes, (uint64_t) n, memory_order_relaxed);
    atomic_fetch_add_explicit(held ? &g_plan_stats.verified : &g_plan_stats.walked, 1, memory_order_relaxed);
    fresh->gen   = gen;
    fresh->print = print;
    bool same = p->wire_id && p->cap && same_walk(p, fresh);
    if (held && !same && !atomic_exchange(&g_plans_off, true)) {
        ggprof_note("split plans off: a node of a split changed with no ggml call (a program writing tensor fields "
                    "directly); up to %d computes before this note may carry the node's earlier description",
                    PLAN_VERIFY_EVERY - 1);
    }
    fresh->wire_id    = same ? p->wire_id : 0;
    fresh->wire_epoch = same ? p->wire_epoch : 0;
    split_plan tmp = *p; /* the fresh walk takes the slot; the old arrays become the next scratch */
    *p     = *fresh;
    *fresh = tmp;
    return p;
}

/* stamp() and CLOCK_MONOTONIC read together: the clock between two stamps, retried when they lie far apart (the
 * thread was preempted between the reads, which would skew every tick of the split by as much). */
#define ANCHOR_CLOSE 2000 /* stamp() units between the two stamps around the clock read, at most */
static void read_anchor(uint64_t *st, uint64_t *ns) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 4 && best > ANCHOR_CLOSE; i++) {
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
        free(t_plans[i].exp);
        free(t_plans[i].ids);
    }
    free(t_plans);
    t_plans = NULL;
    free(t_memo);
    t_memo     = NULL;
    t_memo_cap = 0;
    ggprof_use_counts_free(&t_uc);
}

static uint32_t chunk_size(uint32_t n) { return (uint32_t) (sizeof(ggprof_msg_cpu_ops) + n * sizeof(ggprof_cpu_op)); }

static uint32_t plan_size(uint32_t n) { return (uint32_t) (sizeof(ggprof_msg_cpu_ops_plan) + n * sizeof(ggprof_cpu_op_id)); }

static void make_thread_key(void) {
    if (pthread_key_create(&g_thread_key, free_thread_state) != 0) g_thread_key = (pthread_key_t) -1;
}

static int cpu_begin(struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n) {
    ggprof_use_counts *uc = &t_uc;
    cpu_split *s = &t_split;
    /* On the heap, not in TLS: 128 KiB of static TLS would go with every thread of every program the library
     * is preloaded into, and only the threads that compute CPU splits at level op need it. */
    if (!s->msg) {
        pthread_once(&g_thread_key_once, make_thread_key);
        if (g_thread_key != (pthread_key_t) -1) pthread_setspecific(g_thread_key, s);
        /* A chunk of ops, or of a plan's ids (send_plan), where the ring has no room. */
        uint32_t ops = chunk_size(GGPROF_CPU_OPS_MAX), plan = plan_size(GGPROF_CPU_OPS_MAX);
        s->msg       = malloc(ops > plan ? ops : plan);
        if (!s->msg) return -1;
    }
    if (!grow_times(s, n > 0 ? n : 1)) return -1;
    pthread_once(&g_env_once, env_init);
    split_plan *p = plan_for(nodes, n, graph_nodes, graph_n, uc);
    if (!p) return -1;
    s->plan  = p;
    s->uc    = uc;
    s->n_exp = p->n_exp;
    /* Room for a tick per node while the models are tested: the right one may expect more than the current. */
    s->limit = p->tested ? n : p->n_exp;
    /* The other nodes' waits are zeroed by the tick before them (tick_cb): a loop here cost about 500 TSC cycles a
     * split on thread 0, over lines the weights had evicted. */
    if (s->limit > 0) s->times[0].inop_wait = 0;
    s->n_ticks         = 0;
    s->pending_between = false;
    s->alone           = false;
    s->gc_entry        = 0;
    s->t0_start        = 0;
    read_anchor(&s->anchor_stamp, &s->anchor_ns);
    if (!activate(s)) return -1;
    return s->n_exp;
}

typedef void (*chunk_fn)(const ggprof_msg_cpu_ops *m, const ggprof_cpu_op_id *ids, void *user);

static _Atomic uint32_t g_next_plan_id = 1;

/* The plan's ops' nodes, once (CPU_OPS_PLAN, in chunks), before the first CPU_OPS that names them, and again in a
 * new description epoch (a forked child: its own process to the reader). Built in the ring where it has room, else
 * in buf (room for GGPROF_CPU_OPS_MAX ids). True when every chunk is in the ring (or the plan has no op); where one
 * is not (the ring full, or none: the C API alone), the next compute tries again. */
static bool send_plan(split_plan *p, void *buf) {
    if (p->n_exp == 0) return true; /* no op to name */
    if (!ggprof_sink_has_ring()) return false;
    uint32_t epoch = ggprof_desc_epoch();
    if (p->wire_id && p->wire_epoch == epoch) return true;
    if (!p->wire_id) p->wire_id = atomic_fetch_add_explicit(&g_next_plan_id, 1, memory_order_relaxed);
    uint32_t total = (uint32_t) p->n_exp, first = 0;
    do {
        uint32_t n = total - first < GGPROF_CPU_OPS_MAX ? total - first : GGPROF_CPU_OPS_MAX;
        ggprof_msg_cpu_ops_plan *m = ggprof_emit_reserve(plan_size(n), GGPROF_MSG_CPU_OPS_PLAN);
        bool in_ring = m != NULL;
        if (!in_ring) m = buf;
        m->h       = (ggprof_msg_hdr){ plan_size(n), GGPROF_MSG_CPU_OPS_PLAN, 0 };
        m->plan_id = p->wire_id;
        m->first   = first;
        m->n       = n;
        m->n_total = total;
        memcpy(m->ids, p->ids + first, (size_t) n * sizeof(ggprof_cpu_op_id));
        if (in_ring) {
            ggprof_emit_commit(m->h.size);
        } else if (ggprof_emit(&m->h) != 0) {
            return false;
        }
        first += n;
    } while (first < total);
    p->wire_epoch = epoch;
    return true;
}

/* The chunk's header, then out: published where it was built in the ring (in_ring), else emitted from s->msg. */
static void flush_chunk(ggprof_msg_cpu_ops *m, bool in_ring, bool planned, const cpu_split *s,
                        const ggprof_split_place *w, uint16_t flags, int first, uint32_t n, uint64_t start,
                        uint64_t floor, chunk_fn on_chunk, void *user) {
    m->h              = (ggprof_msg_hdr){ chunk_size(n), GGPROF_MSG_CPU_OPS, flags };
    m->graph_id       = w->graph_id;
    m->sched_id       = w->sched_id;
    m->split_id       = w->split_id;
    m->backend_id     = w->backend_id;
    m->n_ops          = n;
    m->start_ns       = start;
    m->plan_end_ns    = s->gc_entry;
    m->kickoff_end_ns = s->gc_entry ? s->t0_start : 0;
    m->end_ns         = w->end_ns;
    m->floor_ns       = floor;
    m->anchor_stamp   = s->anchor_stamp;
    m->anchor_ns      = s->anchor_ns;
    m->end_stamp      = s->end_stamp;
    m->end_anchor_ns  = s->end_ns;
    m->plan_id        = n ? s->plan->wire_id : 0;
    m->first          = (uint32_t) first;
    m->node_start     = w->node_start;
    m->reserved       = 0;
    if (in_ring) {
        ggprof_emit_commit(m->h.size);
    } else if (planned || !n) {
        ggprof_emit(&m->h);
    } else {
        ggprof_emit_dropped(&m->h); /* its plan is not in the ring: the ops would name no node */
    }
    if (on_chunk) on_chunk(m, s->plan->ids + first, user);
}

static int settle_model(cpu_split *s, split_plan *p, int seen);

/* A split whose ticks no model explains: the trace says so, with where the models would have parted. */
static void note_unmatched(const cpu_split *s, const ggprof_split_place *w) {
    if (atomic_fetch_sub(&g_notes_left, 1) <= 0) return;
    const split_plan        *p = s->plan;
    const ggprof_tick_model *m = &ggprof_tick_models[p->model];
    int part = -1, other = -1;
    for (int j = 0; j < ggprof_n_tick_models; j++) {
        if (j == p->model || !ggprof_tick_model_applies(&ggprof_tick_models[j], &g_env)) continue;
        int at = ggprof_tick_models_part(m, &ggprof_tick_models[j], &g_env, p->nodes, p->n, p->graph_nodes,
                                         p->graph_n, s->uc);
        if (at >= 0 && (part < 0 || at < part)) {
            part  = at;
            other = j;
        }
    }
    char where[256] = "no other tick model decides differently on this split";
    if (part >= 0) {
        const struct ggml_tensor *t = p->nodes[part];
        snprintf(where, sizeof(where), "the tick models part first at node %d (%s '%.*s': '%s' and '%s' decide apart)",
                 w->node_start + part, ggprof_eng.g.fn_ggml_op_name(t->op), GGML_ABI_MAX_NAME, ggprof_links(t)->name,
                 m->name, ggprof_tick_models[other].name);
    }
    ggprof_note("CPU split %d of graph %llu: ggml ticked %d times where tick model '%s' expects %d, so its ops are "
                "not timed; %s", w->split_id, (unsigned long long) w->graph_id, s->n_ticks, m->name, p->n_exp, where);
}

/* Whether the split's ticks can be read with a model: the plan's, or another one still in the running whose count
 * matches (the split is walked again with it, and it becomes the current model). Models this split refutes leave
 * the running when another explains it. Two models that agree on the count but not on the nodes leave the split
 * unread: no guessed times. */
static bool settle(cpu_split *s, const ggprof_split_place *w) {
    split_plan *p    = s->plan;
    int         seen = s->n_ticks;
    int r = p->tested ? settle_model(s, p, seen) : seen == p->n_exp;
    if (r == 0) note_unmatched(s, w);
    if (r == 1 && !atomic_load_explicit(&g_model_noted, memory_order_relaxed) && !atomic_exchange(&g_model_noted, true)) {
        ggprof_trace_note("CPU tick model '%s': the first CPU split's %d ticks matched it", ggprof_tick_models[p->model].name,
                          seen);
    }
    return r == 1;
}

/* settle() with models still in the running: 1 read with a model, 0 no model explains the ticks, -1 two models
 * explain them differently. */
static int settle_model(cpu_split *s, split_plan *p, int seen) {
    uint32_t in_test = p->tested | 1u << p->model, agree = 0;
    for (uint32_t m = in_test; m; m &= m - 1) {
        int j = __builtin_ctz(m);
        if (p->alt_count[j] == seen) agree |= 1u << j;
    }
    if (!agree) return 0;
    atomic_fetch_and(&g_models_alive, ~(in_test & ~agree));
    int pick = (agree >> p->model) & 1 ? p->model : __builtin_ctz(agree);
    for (uint32_t m = agree; m; m &= m - 1) {
        if (p->alt_hash[__builtin_ctz(m)] != p->alt_hash[pick]) return -1; /* ambiguous: both stay */
    }
    if (pick != p->model) {
        int was = p->model, was_exp = p->n_exp;
        if (atomic_exchange(&g_model, pick) != pick) {
            ggprof_trace_note("CPU tick model '%s': ggml ticked %d times in a split where model '%s' expects %d",
                              ggprof_tick_models[pick].name, seen, ggprof_tick_models[was].name, was_exp);
        }
        /* Read this split with the model that explains it; the plan holds for later computes from now on. */
        p->wire_id = p->wire_epoch = 0; /* other ops: another plan on the wire */
        if (!walk(p, p->nodes, p->n, p->graph_nodes, p->graph_n, s->uc, p->epoch) || p->n_exp != seen) return 0;
        s->n_exp = p->n_exp;
    }
    /* The models left agree on this split's nodes: they will again, so its plan need not test them any more. */
    p->tested = 0;
    return 1;
}

static int cpu_end(const ggprof_split_place *w, int *n_ticks, int *n_expected, chunk_fn on_chunk, void *user) {
    cpu_split *s = deactivate();
    if (!s) return -1;
    if (!settle(s, w)) { /* no guessed times: the split is marked instead */
        *n_ticks    = s->n_ticks;
        *n_expected = s->n_exp;
        return 0;
    }
    *n_ticks    = s->n_ticks;
    *n_expected = s->n_exp;

    /* The anchors at the split's end: with those at its start, they put the stamps on CLOCK_MONOTONIC. The reader
     * converts (ggprof_cpu_ops_expand): here each op is copied as it was stamped, which costs the computing thread
     * about half of what converting did. */
    uint64_t a = w->end_stamp_before, b = w->end_stamp_after;
    if (a && b >= a && b - a <= ANCHOR_CLOSE) {
        s->end_stamp = a + (b - a) / 2;
        s->end_ns    = w->end_ns;
    } else {
        read_anchor(&s->end_stamp, &s->end_ns);
    }
    uint64_t start = w->start_ns, plan_end = s->gc_entry, kickoff_end = s->gc_entry ? s->t0_start : 0;
    uint64_t floor = kickoff_end ? kickoff_end : plan_end ? plan_end : start;
    /* Which node each op is goes once per plan (send_plan); what goes with every compute is the times alone. Where
     * the plan could not be sent (the ring full), the ops are counted as dropped with it, not sent unnamed. Each
     * chunk is built where it will be read, in the thread's ring slot (a copy of ~4 KiB from a buffer of its own cost
     * about 1,000 TSC cycles a split here), or in s->msg where the ring has no room. */
    bool planned = send_plan(s->plan, s->msg);
    const node_times *times = s->times;
    uint16_t          flags = GGPROF_CPU_OPS_FIRST;
    for (int k = 0;;) {
        int      first = k;
        uint32_t n = s->n_exp - k < GGPROF_CPU_OPS_MAX ? (uint32_t) (s->n_exp - k) : GGPROF_CPU_OPS_MAX;
        ggprof_msg_cpu_ops *m = planned || !n ? ggprof_emit_reserve(chunk_size(n), GGPROF_MSG_CPU_OPS) : NULL;
        bool in_ring = m != NULL;
        if (!in_ring) m = s->msg;
        ggprof_cpu_op *ops = m->ops;
        for (uint32_t i = 0; i < n; i++, k++) {
            ggprof_cpu_op    *op = &ops[i];
            const node_times *nt = &times[k];
            uint64_t bar = nt->bar_exit > nt->tick ? nt->bar_exit - nt->tick : 0;
            op->tick     = nt->tick;
            op->barrier  = bar > UINT32_MAX ? UINT32_MAX : (uint32_t) bar;
            op->wait     = nt->inop_wait > UINT32_MAX ? UINT32_MAX : (uint32_t) nt->inop_wait;
        }
        bool last = k >= s->n_exp;
        flush_chunk(m, in_ring, planned, s, w, last ? flags | GGPROF_CPU_OPS_LAST : flags, first, n, start, floor,
                    on_chunk, user);
        if (last) return 1;
        ggprof_cpu_ops_carry(m, &floor, &start); /* where the next chunk's first op starts */
        flags = 0;
    }
}

/* ---- hooks on thread 0 while it computes ---- */

static void cpu_barrier(void (*real)(struct ggml_threadpool *), struct ggml_threadpool *tp) {
    cpu_split *s = active_split();
    if (!s || s->alone) {
        real(tp);
        if (s) s->pending_between = false; /* record --threads' thread0_barrier reads it: no exit to take from a tick */
        return;
    }
    if (s->pending_between) {
        /* The barrier right after a tick: the wait runs from the tick, which was just read. */
        real(tp);
        uint64_t t1 = stamp();
        s->pending_between = false;
        if (s->n_ticks >= 1 && s->n_ticks <= s->limit) s->times[s->n_ticks - 1].bar_exit = t1;
        return;
    }
    uint64_t t0 = stamp();
    real(tp);
    uint64_t t1 = stamp();
    if (s->n_ticks < s->limit) s->times[s->n_ticks].inop_wait += t1 - t0;
}

static void cpu_graph_compute_entry(int n_threads) {
    cpu_split *s = active_split();
    if (!s) return;
    if (!s->gc_entry) s->gc_entry = ggprof_now_ns();
    s->alone = n_threads == 1;
}

static void cpu_thread_start(void) {
    cpu_split *s = active_split();
    if (s && s->gc_entry && !s->t0_start) s->t0_start = ggprof_now_ns();
}

/* Registered with the engine as libggprof.so loads (timing.h), before any wrapper can need it. */
/* The hook stays in the table (a split on another thread may still hold it), emptied: the address, if ggml hands it
 * out again, is a new backend with no tick and no callback of the program's. */
static void cpu_backend_freed(ggml_backend_t backend) {
    pthread_mutex_lock(&g_hooks_lock);
    ggml_backend_t was = backend; /* (the exchange overwrites it when it fails) */
    atomic_compare_exchange_strong(&g_last_hooked, &was, NULL);
    for (int i = 0; i < g_n_hooks; i++) {
        if (g_hooks[i].backend != backend) continue;
        g_hooks[i].installed = false;
        g_hooks[i].app_cb    = NULL;
        g_hooks[i].app_data  = NULL;
    }
    pthread_mutex_unlock(&g_hooks_lock);
}

/* ---- record --threads: every thread's arrival at every barrier of a timed CPU split ---- */

/* Thread 0 publishes its split (g_pub.gen, nonzero) before the compute starts; a thread that finds no split of its
 * own at a barrier (a worker) reads g_pub.gen with one load and, when a split is published, stores one stamp() at
 * its own barrier count into its slot of g_thr, found by its thread pointer. Every thread arrives at the same
 * barriers in the same order, and no thread leaves barrier j before every thread stored its arrival there, so
 * after the compute thread 0 reads the arrivals that line up with its own barriers. One split is published at a
 * time: a second thread's timed split while one is published spoils both (their workers could not be told apart
 * where ggml's barrier is OpenMP's, which names no threadpool), and a worker whose count differs from thread 0's
 * (another compute's thread) is left out. */
#define THR_SLOTS 64
typedef struct {
    _Atomic uintptr_t owner;    /* the worker's thread pointer */
    _Atomic uint32_t  gen, n;   /* the split its arrivals belong to, and how many */
    uint32_t          cap;
    int32_t           tid;
    struct ggml_threadpool *_Atomic tp;
    _Atomic uint64_t *arrive;   /* stamp() at each barrier, by the worker's own count */
} __attribute__((aligned(64))) thr_slot;

static thr_slot g_thr[THR_SLOTS];
static struct {
    _Atomic uint32_t  gen;     /* the published split, 0: none */
    _Atomic uintptr_t owner;   /* its thread 0 */
    _Atomic bool      spoiled;
    _Atomic uint32_t  cap;     /* barriers a worker keeps room for */
    uint32_t          next_gen;
    /* thread 0's own barriers (read and written by the owner only) */
    struct ggml_threadpool *tp;
    uint32_t  n, room;
    int32_t  *op;              /* the op (tick index) each barrier belongs to */
    uint8_t  *between;         /* the barrier right after the op's tick */
    uint64_t *arrive, *exit;
    /* the gather's scratch */
    int64_t  *acc;             /* per op and thread: busy, between wait, in-op wait, imbalance (stamp units) */
    size_t    acc_cap;
    ggprof_msg_cpu_threads *msg;
} g_pub __attribute__((aligned(64)));

static int32_t os_tid(void) { return (int32_t) syscall(SYS_gettid); }

static thr_slot *thr_slot_of(uintptr_t me) {
    uint32_t h = (uint32_t) (((me >> 12) * 0x9E3779B97F4A7C15ull) >> 58);
    for (uint32_t i = 0; i < THR_SLOTS; i++) {
        thr_slot *w = &g_thr[(h + i) % THR_SLOTS];
        uintptr_t o = atomic_load_explicit(&w->owner, memory_order_relaxed);
        if (o == me) return w;
        if (o == 0) {
            uintptr_t expect = 0;
            if (atomic_compare_exchange_strong(&w->owner, &expect, me)) {
                w->tid = os_tid();
                return w;
            }
            if (expect == me) return w;
        }
    }
    return NULL; /* more workers than slots: this one is left out */
}

static __attribute__((noinline)) void thr_new_split(thr_slot *w, uint32_t gen, struct ggml_threadpool *tp) {
    uint32_t cap = atomic_load_explicit(&g_pub.cap, memory_order_relaxed);
    if (cap > w->cap) {
        _Atomic uint64_t *a = realloc(w->arrive, (size_t) cap * sizeof(*a));
        if (a) w->arrive = a, w->cap = cap;
    }
    atomic_store_explicit(&w->tp, tp, memory_order_relaxed);
    atomic_store_explicit(&w->n, 0, memory_order_relaxed);
    atomic_store_explicit(&w->gen, gen, memory_order_relaxed);
}

/* A worker at a barrier of a published split: one stamp, by its count. The barrier that follows orders it before
 * thread 0's read. */
static inline void thr_arrive(uint32_t gen, struct ggml_threadpool *tp) {
    uint64_t  t = stamp();
    thr_slot *w = thr_slot_of(thread_id());
    if (!w) return;
    if (atomic_load_explicit(&w->gen, memory_order_relaxed) != gen) thr_new_split(w, gen, tp);
    uint32_t j = atomic_load_explicit(&w->n, memory_order_relaxed);
    if (j < w->cap) atomic_store_explicit(&w->arrive[j], t, memory_order_relaxed);
    atomic_store_explicit(&w->n, j + 1, memory_order_relaxed);
}

static bool thr_room(uint32_t need) {
    if (need <= g_pub.room) return true;
    int32_t  *op = realloc(g_pub.op, need * sizeof(*op));
    if (op) g_pub.op = op;
    uint8_t  *bw = realloc(g_pub.between, need);
    if (bw) g_pub.between = bw;
    uint64_t *ar = realloc(g_pub.arrive, need * sizeof(*ar));
    if (ar) g_pub.arrive = ar;
    uint64_t *ex = realloc(g_pub.exit, need * sizeof(*ex));
    if (ex) g_pub.exit = ex;
    if (!op || !bw || !ar || !ex) return false;
    g_pub.room = need;
    return true;
}

static int cpu_begin_threads(struct ggml_tensor **nodes, int n, struct ggml_tensor **graph_nodes, int graph_n) {
    int r = cpu_begin(nodes, n, graph_nodes, graph_n);
    if (r < 0) return r;
    uintptr_t me = thread_id(), expect = 0;
    if (!atomic_compare_exchange_strong(&g_pub.owner, &expect, me)) {
        if (expect != me) atomic_store(&g_pub.spoiled, true); /* another thread's split is published */
        return r;
    }
    /* Barriers: one after each node, a few inside some ops (ggml's chunked matrix products, its fused ops). */
    uint32_t cap = (uint32_t) (n > 0 && n < (1 << 24) ? 4 * n + 16 : 16);
    if (!thr_room(cap)) {
        atomic_store(&g_pub.owner, 0);
        return r;
    }
    g_pub.n  = 0;
    g_pub.tp = NULL;
    atomic_store(&g_pub.spoiled, false);
    atomic_store_explicit(&g_pub.cap, cap, memory_order_relaxed);
    if (++g_pub.next_gen == 0) g_pub.next_gen = 1;
    atomic_store_explicit(&g_pub.gen, g_pub.next_gen, memory_order_release);
    return r;
}

/* Thread 0's barrier, as cpu_barrier times it, with the barrier's op, thread 0's arrival and the exit kept. */
static void thread0_barrier(cpu_split *s, void (*real)(struct ggml_threadpool *), struct ggml_threadpool *tp) {
    bool     between = s->pending_between;
    int      k       = between ? s->n_ticks - 1 : s->n_ticks;
    bool     kept    = between ? k >= 0 && k < s->limit : k < s->limit;
    uint64_t before  = !between && kept ? s->times[k].inop_wait : 0, t0 = stamp();
    cpu_barrier(real, tp);
    uint64_t t1 = stamp(), a = t0, e = t1;
    if (kept && between) a = s->times[k].tick, e = s->times[k].bar_exit;
    else if (kept) a = t1 - (s->times[k].inop_wait - before); /* the wait cpu_barrier counted, to the exit */
    uint32_t j = g_pub.n++;
    if (j >= g_pub.room) return;
    g_pub.tp         = tp;
    g_pub.op[j]      = k;
    g_pub.between[j] = between;
    g_pub.arrive[j]  = a;
    g_pub.exit[j]    = e;
}

static void cpu_barrier_threads(void (*real)(struct ggml_threadpool *), struct ggml_threadpool *tp) {
    cpu_split *s = active_split();
    if (!s) {
        uint32_t gen = atomic_load_explicit(&g_pub.gen, memory_order_acquire);
        if (gen) thr_arrive(gen, tp);
        real(tp);
        return;
    }
    if (atomic_load_explicit(&g_pub.owner, memory_order_relaxed) == thread_id() &&
        atomic_load_explicit(&g_pub.gen, memory_order_relaxed)) {
        thread0_barrier(s, real, tp);
        return;
    }
    cpu_barrier(real, tp);
}

static int cmp_slot_tid(const void *a, const void *b) {
    int32_t x = (*(thr_slot *const *) a)->tid, y = (*(thr_slot *const *) b)->tid;
    return (x > y) - (x < y);
}

static uint32_t sat32(int64_t v) { return v <= 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t) v; }

/* After cpu_end emitted the ops: per op and thread, busy and wait from the arrivals, as CPU_THREADS messages. */
static void emit_threads(const cpu_split *s, const ggprof_split_place *w, uint32_t gen) {
    uint32_t nb = g_pub.n;
    if (nb == 0 || nb > g_pub.room) return;
    thr_slot *work[THR_SLOTS];
    int       nw = 0;
    for (int i = 0; i < THR_SLOTS; i++) {
        thr_slot *t = &g_thr[i];
        if (atomic_load_explicit(&t->owner, memory_order_relaxed) == 0 ||
            atomic_load_explicit(&t->gen, memory_order_acquire) != gen ||
            atomic_load_explicit(&t->n, memory_order_relaxed) != nb || t->cap < nb ||
            atomic_load_explicit(&t->tp, memory_order_relaxed) != g_pub.tp) {
            continue;
        }
        work[nw++] = t;
    }
    if (nw == 0) return;
    qsort(work, (size_t) nw, sizeof(work[0]), cmp_slot_tid);
    int    nt = nw + 1, nops = s->n_exp;
    size_t need = (size_t) nops * (size_t) nt * 4;
    if (need > g_pub.acc_cap) {
        int64_t *a = realloc(g_pub.acc, need * sizeof(*a));
        if (!a) return;
        g_pub.acc = a, g_pub.acc_cap = need;
    }
    if (!g_pub.msg) {
        g_pub.msg = malloc(sizeof(ggprof_msg_cpu_threads) + GGPROF_CPU_THREADS_MAX * sizeof(ggprof_cpu_thread_op));
        if (!g_pub.msg) return;
    }
    memset(g_pub.acc, 0, need * sizeof(*g_pub.acc));
    double scale = s->end_stamp > s->anchor_stamp
                       ? (double) (s->end_ns - s->anchor_ns) / (double) (s->end_stamp - s->anchor_stamp)
                       : 1.0;
#define SPAN_NS(x) ((int64_t) ((double) (int64_t) (x) * scale))
    /* Where the first op starts, as cpu_end has it, in stamp() units. */
    uint64_t first_ns = s->gc_entry ? (s->t0_start ? s->t0_start : s->gc_entry) : w->start_ns;
    uint64_t first    = s->anchor_stamp + (uint64_t) (int64_t) ((double) (int64_t) (first_ns - s->anchor_ns) / scale);
#define ACC(k, i, f) g_pub.acc[((size_t) (k) * (size_t) nt + (size_t) (i)) * 4 + (f)]
    /* A barrier releases when its last thread arrives: a worker's wait runs to that release, its busy time from the
     * release before. Thread 0's runs to its own exit, as its SYNC records have it (they also hold its wake-up, and
     * a preemption between the release and its stamp); so every thread's busy + wait over the split adds up to the
     * same span, up to thread 0's last wake-up. */
    uint64_t release = first;
    for (uint32_t j = 0; j < nb; j++) {
        int k = g_pub.op[j];
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < nt; i++) {
            uint64_t a = i == 0 ? g_pub.arrive[j] : atomic_load_explicit(&work[i - 1]->arrive[j], memory_order_relaxed);
            lo = a < lo ? a : lo, hi = a > hi ? a : hi;
        }
        if (k >= 0 && k < nops) {
            for (int i = 0; i < nt; i++) {
                uint64_t a = i == 0 ? g_pub.arrive[j] : atomic_load_explicit(&work[i - 1]->arrive[j], memory_order_relaxed);
                uint64_t from = i == 0 ? (j ? g_pub.exit[j - 1] : first) : release, to = i == 0 ? g_pub.exit[j] : hi;
                /* (a worker may start before thread 0 saw the kick-off end: its time before that is nobody's) */
                if ((int64_t) (a - from) < 0) a = from;
                if ((int64_t) (to - a) < 0) a = to;
                ACC(k, i, 0) += (int64_t) (a - from);
                ACC(k, i, g_pub.between[j] ? 1 : 2) += (int64_t) (to - a);
            }
            ACC(k, 0, 3) += (int64_t) (hi - lo) + 1; /* +1: the op has a barrier (taken off below) */
        }
        release = hi;
    }
    const split_plan *p = s->plan;
    ggprof_msg_cpu_threads *m = g_pub.msg;
    uint32_t n = 0;
    for (int k = 0; k < nops; k++) {
        if (ACC(k, 0, 3) == 0) continue; /* no barrier ends this op */
        for (int i = 0; i < nt; i++) {
            ggprof_cpu_thread_op *o = &m->e[n++];
            o->node_index   = w->node_start + p->exp[k].node;
            o->tid          = i == 0 ? os_tid() : work[i - 1]->tid;
            o->thread       = (uint16_t) i;
            o->reserved     = 0;
            o->busy_ns      = sat32(SPAN_NS(ACC(k, i, 0)));
            /* as cpu_end converts thread 0's: the wait after the tick, and those inside the op */
            o->wait_ns      = sat32((int64_t) sat32(SPAN_NS(ACC(k, i, 1))) + (int64_t) sat32(SPAN_NS(ACC(k, i, 2))));
            o->imbalance_ns = i == 0 ? sat32(SPAN_NS(ACC(k, 0, 3) - 1)) : 0;
            if (n == GGPROF_CPU_THREADS_MAX) {
                m->h = (ggprof_msg_hdr){ (uint32_t) (sizeof(*m) + n * sizeof(m->e[0])), GGPROF_MSG_CPU_THREADS, 0 };
                m->graph_id = w->graph_id, m->sched_id = w->sched_id, m->split_id = w->split_id;
                m->n = n, m->n_threads = (uint32_t) nt;
                ggprof_emit(&m->h);
                n = 0;
            }
        }
    }
    if (n) {
        m->h = (ggprof_msg_hdr){ (uint32_t) (sizeof(*m) + n * sizeof(m->e[0])), GGPROF_MSG_CPU_THREADS, 0 };
        m->graph_id = w->graph_id, m->sched_id = w->sched_id, m->split_id = w->split_id;
        m->n = n, m->n_threads = (uint32_t) nt;
        ggprof_emit(&m->h);
    }
#undef ACC
#undef SPAN_NS
}

static int cpu_end_threads(const ggprof_split_place *w, int *n_ticks, int *n_expected, chunk_fn on_chunk, void *user) {
    bool     mine = atomic_load_explicit(&g_pub.owner, memory_order_relaxed) == thread_id();
    uint32_t gen  = mine ? atomic_exchange(&g_pub.gen, 0) : 0; /* no worker stores from here on */
    int      r    = cpu_end(w, n_ticks, n_expected, on_chunk, user);
    if (!mine) return r;
    if (r == 1 && gen && !atomic_load(&g_pub.spoiled)) emit_threads(&t_split, w, gen);
    atomic_store(&g_pub.owner, 0);
    return r;
}

static const ggprof_cpu_timing cpu_timing_threads = {
    cpu_plans_off, cpu_hook_backend, cpu_set_abort_callback, cpu_begin_threads, cpu_end_threads, cpu_barrier_threads,
    cpu_graph_compute_entry, cpu_thread_start, cpu_backend_freed,
};

static const ggprof_cpu_timing cpu_timing = {
    cpu_plans_off, cpu_hook_backend, cpu_set_abort_callback, cpu_begin, cpu_end, cpu_barrier, cpu_graph_compute_entry,
    cpu_thread_start, cpu_backend_freed,
};
static void __attribute__((constructor(101))) cpu_register(void) {
    /* record --threads (GGPROF_THREADS=1): the table whose begin, end and barrier also time the other threads;
     * without it not one instruction of that is on any thread's path. */
    const char *thr = getenv("GGPROF_THREADS");
    ggprof_register_cpu_timing(thr && strcmp(thr, "1") == 0 ? &cpu_timing_threads : &cpu_timing);
}
