/* Memory: backend buffers as they are allocated, given a usage and freed; the devices' free and total memory at
 * start, after the first graph and at the end; and, each time ggml-alloc plans a graph's buffers, where every tensor
 * of the graph lies and when it is alive (docs/memory.md). Buffers are state, not events: they are recorded at every
 * level and outside capture windows too, so that what is held is known whenever a window opens. */
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "internal.h"
#include "reach.h"
#include "schedulers.h"

/* What llama.cpp and ggml-alloc call, as ggml.h declares them. */
GGPROF_API ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size);
GGPROF_API void ggml_backend_buffer_free(ggml_backend_buffer_t buffer);
GGPROF_API void ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, int usage);
GGPROF_API ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void *ptr, size_t size);
GGPROF_API ggml_backend_buffer_t ggml_backend_dev_buffer_from_host_ptr(ggml_backend_dev_t dev, void *ptr, size_t size,
                                                                       size_t max_tensor_size);
GGPROF_API bool ggml_gallocr_reserve_n(struct ggml_gallocr *galloc, struct ggml_cgraph *graph,
                                       const int *node_buffer_ids, const int *leaf_buffer_ids);
GGPROF_API bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph *graph);
GGPROF_API bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph);

static void *_Atomic slot_ggml_backend_buft_alloc_buffer, *_Atomic slot_ggml_backend_buffer_free,
    *_Atomic slot_ggml_backend_buffer_set_usage, *_Atomic slot_ggml_backend_cpu_buffer_from_ptr,
    *_Atomic slot_ggml_backend_dev_buffer_from_host_ptr, *_Atomic slot_ggml_gallocr_reserve_n,
    *_Atomic slot_ggml_backend_sched_reserve, *_Atomic slot_ggml_backend_sched_alloc_graph;

static bool buffers_known(const ggprof_ggml *g) {
    return g->fn_ggml_backend_buffer_get_size && g->fn_ggml_backend_buffer_get_type && g->fn_ggml_backend_buft_name &&
           g->fn_ggml_backend_buffer_get_alignment && g->fn_ggml_backend_buffer_get_usage;
}

/* ---- devices ---- */

static _Atomic bool g_buffers_seen;

/* The devices that hold buffers, as their buffer types name them: the registry's device list lives in libggml,
 * which a program may not have (ggml inside it, or only libggml-base resolved), and these are the ones that matter. */
#define MAX_DEVICES 32
static ggml_backend_dev_t g_devs[MAX_DEVICES];
static _Atomic int        g_n_devs;
static pthread_mutex_t    g_devs_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool       g_first_graph_done, g_end_done, g_at_exit;

static void devmem_emit(ggml_backend_dev_t dev, int moment) {
    const ggprof_ggml *g = &ggprof_eng.g;
    ggprof_msg_devmem m;
    memset(&m, 0, sizeof(m));
    m.h        = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_DEVMEM, 0 };
    m.moment   = (uint32_t) moment;
    m.dev_type = g->fn_ggml_backend_dev_type(dev);
    /* At exit the program may already have torn its GPU contexts down: host devices only then. */
    if (moment == GGPROF_DEVMEM_END && m.dev_type != GGML_ABI_DEV_CPU && atomic_load(&g_at_exit)) return;
    size_t fr = 0, tot = 0;
    g->fn_ggml_backend_dev_memory(dev, &fr, &tot);
    m.free  = fr;
    m.total = tot;
    m.t_ns  = ggprof_now_ns();
    const char *name = g->fn_ggml_backend_dev_name(dev);
    strncpy(m.device, name ? name : "", sizeof(m.device) - 1);
    ggprof_emit(&m.h);
}

/* A device seen for the first time: its memory before its first buffer. */
static void device_seen(ggml_backend_dev_t dev) {
    if (!dev || !ggprof_eng.g.fn_ggml_backend_dev_memory) return;
    int n = atomic_load(&g_n_devs);
    for (int i = 0; i < n; i++) {
        if (g_devs[i] == dev) return;
    }
    pthread_mutex_lock(&g_devs_lock);
    n = atomic_load(&g_n_devs);
    bool fresh = n < MAX_DEVICES;
    for (int i = 0; i < n && fresh; i++) fresh = g_devs[i] != dev;
    if (fresh) {
        g_devs[n] = dev;
        atomic_store(&g_n_devs, n + 1);
    }
    pthread_mutex_unlock(&g_devs_lock);
    if (fresh) devmem_emit(dev, GGPROF_DEVMEM_START);
}

static void devmem_all(int moment) {
    if (!ggprof_eng.g.fn_ggml_backend_dev_memory) return;
    int n = atomic_load(&g_n_devs);
    for (int i = 0; i < n; i++) devmem_emit(g_devs[i], moment);
}

/* After the first scheduler graph (interpose.c); and at the end: the first scheduler freed after it (a llama.cpp
 * context's end) or exit, whichever comes first. */
void ggprof_memory_after_graph(void) {
    if (!atomic_load_explicit(&g_first_graph_done, memory_order_relaxed) && !atomic_exchange(&g_first_graph_done, true)) {
        GGPROF_GUARD;
        devmem_all(GGPROF_DEVMEM_FIRST_GRAPH);
        /* A Node addon with ggml inside is found at its first graph (through the scheduler's PLT entry), after its
         * direct calls allocated every buffer. Finding it when it is loaded would take a dlopen wrapper, which changes
         * whose RUNPATH a dlopen searches. */
        const char *late_lib = ggprof_reach_late_lib(); /* "" unless ggml was found late in a library (reach.c) */
        if (late_lib[0] && !atomic_load(&g_buffers_seen)) {
            ggprof_trace_note("memory off in %s: ggml inside a library loaded after start is found at its first graph, "
                              "after its buffers were allocated (no memory records, no tensor placement)", late_lib);
        }
    }
}

void ggprof_memory_at_end(void) {
    /* A scheduler freed before any graph (llama.cpp's fitting pass) is not the end. */
    if (!atomic_load(&g_first_graph_done) || atomic_exchange(&g_end_done, true)) return;
    GGPROF_GUARD;
    devmem_all(GGPROF_DEVMEM_END);
}

static void memory_at_exit(void) {
    atomic_store(&g_at_exit, true);
    ggprof_memory_at_end();
}

/* ---- buffers ---- */


static void emit_buffer(ggml_backend_buffer_t buf, uint32_t event, uint32_t source) {
    const ggprof_ggml *g = &ggprof_eng.g;
    if (!buf || !buffers_known(g)) return;
    if (event == GGPROF_BUF_ALLOC) atomic_store_explicit(&g_buffers_seen, true, memory_order_relaxed);
    static _Atomic bool exit_hooked;
    if (event == GGPROF_BUF_ALLOC && !atomic_exchange(&exit_hooked, true)) atexit(memory_at_exit);
    ggprof_msg_buffer m;
    memset(&m, 0, sizeof(m));
    m.h      = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_BUFFER, 0 };
    m.event  = event;
    m.source = source;
    m.handle = (uint64_t) (uintptr_t) buf;
    m.t_ns   = ggprof_now_ns();
    if (event != GGPROF_BUF_FREE) {
        ggml_backend_buffer_type_t buft = g->fn_ggml_backend_buffer_get_type(buf);
        m.usage     = (uint32_t) g->fn_ggml_backend_buffer_get_usage(buf);
        m.size      = g->fn_ggml_backend_buffer_get_size(buf);
        m.alignment = g->fn_ggml_backend_buffer_get_alignment(buf);
        m.is_host   = g->fn_ggml_backend_buffer_is_host(buf);
        const char *name = buft ? g->fn_ggml_backend_buft_name(buft) : NULL;
        strncpy(m.buft, name ? name : "", sizeof(m.buft) - 1);
        ggml_backend_dev_t dev =
            buft && g->fn_ggml_backend_buft_get_device ? g->fn_ggml_backend_buft_get_device(buft) : NULL;
        if (event == GGPROF_BUF_ALLOC) device_seen(dev);
        const char *dname = dev ? g->fn_ggml_backend_dev_name(dev) : NULL;
        strncpy(m.device, dname ? dname : "", sizeof(m.device) - 1);
    }
    ggprof_emit(&m.h);
}

GGPROF_API ggml_backend_buffer_t ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
    REAL_FROM(slot_ggml_backend_buft_alloc_buffer, ggml_backend_buft_alloc_buffer);
    if (!ggprof_engine_ready((const void *) real_ggml_backend_buft_alloc_buffer)) {
        return real_ggml_backend_buft_alloc_buffer(buft, size);
    }
    const ggprof_ggml *g = &ggprof_eng.g;
    if (size > 0 && buft && g->fn_ggml_backend_buft_get_device) { /* the device's memory before its first buffer */
        GGPROF_GUARD;
        device_seen(g->fn_ggml_backend_buft_get_device(buft));
    }
    /* Guarded: a host buffer type that wraps ggml_backend_cpu_buffer_from_ptr (ggml-vulkan's, ggml-cuda's pinned
     * memory) is one buffer, of its own type, not a CPU_Mapped one too. */
    GGPROF_GUARD;
    ggml_backend_buffer_t b = real_ggml_backend_buft_alloc_buffer(buft, size);
    emit_buffer(b, GGPROF_BUF_ALLOC, GGPROF_BUF_FROM_BUFT);
    return b;
}

/* Over memory the program has (llama.cpp's mmapped weights). The CPU device's from_host_ptr calls
 * ggml_backend_cpu_buffer_from_ptr: the guard keeps that one buffer from being recorded twice. */
GGPROF_API ggml_backend_buffer_t ggml_backend_cpu_buffer_from_ptr(void *ptr, size_t size) {
    REAL_FROM(slot_ggml_backend_cpu_buffer_from_ptr, ggml_backend_cpu_buffer_from_ptr);
    if (!ggprof_engine_ready((const void *) real_ggml_backend_cpu_buffer_from_ptr)) {
        return real_ggml_backend_cpu_buffer_from_ptr(ptr, size);
    }
    GGPROF_GUARD;
    ggml_backend_buffer_t b = real_ggml_backend_cpu_buffer_from_ptr(ptr, size);
    emit_buffer(b, GGPROF_BUF_ALLOC, GGPROF_BUF_FROM_HOST_PTR);
    return b;
}

GGPROF_API ggml_backend_buffer_t ggml_backend_dev_buffer_from_host_ptr(ggml_backend_dev_t dev, void *ptr, size_t size,
                                                                       size_t max_tensor_size) {
    REAL_FROM(slot_ggml_backend_dev_buffer_from_host_ptr, ggml_backend_dev_buffer_from_host_ptr);
    if (!ggprof_engine_ready((const void *) real_ggml_backend_dev_buffer_from_host_ptr)) {
        return real_ggml_backend_dev_buffer_from_host_ptr(dev, ptr, size, max_tensor_size);
    }
    GGPROF_GUARD;
    ggml_backend_buffer_t b = real_ggml_backend_dev_buffer_from_host_ptr(dev, ptr, size, max_tensor_size);
    emit_buffer(b, GGPROF_BUF_ALLOC, GGPROF_BUF_FROM_HOST_PTR);
    return b;
}

GGPROF_API void ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, int usage) {
    REAL_FROM(slot_ggml_backend_buffer_set_usage, ggml_backend_buffer_set_usage);
    real_ggml_backend_buffer_set_usage(buffer, usage);
    if (ggprof_engine_ready((const void *) real_ggml_backend_buffer_set_usage)) {
        GGPROF_GUARD;
        emit_buffer(buffer, GGPROF_BUF_USAGE, GGPROF_BUF_FROM_BUFT);
    }
}

GGPROF_API void ggml_backend_buffer_free(ggml_backend_buffer_t buffer) {
    REAL_FROM(slot_ggml_backend_buffer_free, ggml_backend_buffer_free);
    if (buffer && ggprof_engine_ready((const void *) real_ggml_backend_buffer_free)) {
        GGPROF_GUARD;
        emit_buffer(buffer, GGPROF_BUF_FREE, GGPROF_BUF_FROM_BUFT);
    }
    real_ggml_backend_buffer_free(buffer);
}

/* ---- placement: where ggml-alloc puts a graph's tensors ---- */

/* The scheduler reserving on this thread, for the plan's sched_id. */
static __thread ggml_backend_sched_t t_sched;
static _Atomic uint32_t              g_next_plan = 1;
static _Atomic bool                  g_alloc_failed_noted;

typedef struct {
    struct ggml_tensor *t;
    bool    restore;  /* ggml-alloc placed it for the reading: put back as it was */
    void   *buffer, *data, *extra;
    int32_t last_use; /* the last node that reads it (-1: none) */
} pl_tensor;

typedef struct {
    pl_tensor        *t;
    ggprof_placement *e;
    uint32_t         *slots; /* open addressing over tensor addresses: index + 1, 0 empty */
    uint32_t          n, cap, mask;
} pl_set;

static uint32_t pl_find(pl_set *s, const struct ggml_tensor *t, bool add) {
    uint64_t h = (uint64_t) (uintptr_t) t * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = (uint32_t) (h >> 32) & s->mask;; i = (i + 1) & s->mask) {
        uint32_t v = s->slots[i];
        if (v == 0) {
            if (!add || s->n == s->cap) return UINT32_MAX;
            s->t[s->n] = (pl_tensor){ .t = (struct ggml_tensor *) t, .last_use = -1 };
            s->slots[i] = ++s->n;
            return s->n - 1;
        }
        if (s->t[v - 1].t == t) return v - 1;
    }
}

static void send_plan(pl_set *s, uint32_t sched_id, int n_nodes) {
    uint32_t plan = atomic_fetch_add(&g_next_plan, 1);
    uint64_t t    = ggprof_now_ns();
    size_t   sz   = sizeof(ggprof_msg_placement) + GGPROF_PLACEMENT_CHUNK * sizeof(ggprof_placement);
    ggprof_msg_placement *m = malloc(sz);
    if (!m) return;
    for (uint32_t first = 0; first < s->n; first += GGPROF_PLACEMENT_CHUNK) {
        uint32_t n = s->n - first < GGPROF_PLACEMENT_CHUNK ? s->n - first : GGPROF_PLACEMENT_CHUNK;
        memset(m, 0, sizeof(*m));
        m->h = (ggprof_msg_hdr){ (uint32_t) (sizeof(*m) + n * sizeof(ggprof_placement)), GGPROF_MSG_PLACEMENT, 0 };
        m->plan = plan, m->sched_id = sched_id, m->first_entry = first, m->n = n, m->n_total = s->n;
        m->n_nodes = n_nodes, m->t_ns = t;
        memcpy(m->e, s->e + first, n * sizeof(ggprof_placement));
        ggprof_emit(&m->h);
    }
    free(m);
}

/* Reads the plan ggml-alloc just made for graph: it allocates the graph from the plan (what the program's next
 * ggml_gallocr_alloc_graph would do), reads each tensor's buffer and offset, and puts back every field the
 * allocation set, so that the program's graph is as it left it. */
static void read_plan(struct ggml_gallocr *galloc, struct ggml_cgraph *graph) {
    ggprof_ggml *g = &ggprof_eng.g;
    if (!buffers_known(g) || !g->fn_ggml_gallocr_alloc_graph || !g->fn_ggml_backend_buffer_get_alloc_size ||
        !g->fn_ggml_backend_buffer_get_base) {
        return;
    }
    int                  n_nodes = g->fn_ggml_graph_n_nodes(graph);
    struct ggml_tensor **nodes   = g->fn_ggml_graph_nodes(graph);
    if (n_nodes <= 0 || !nodes) return;
    pl_set s = { 0 };
    const struct ggml_cgraph_abi *gl = (const struct ggml_cgraph_abi *) graph;
    s.cap = (uint32_t) n_nodes * (GGML_ABI_MAX_SRC + 2) + (gl->n_leafs > 0 && gl->n_leafs < (1 << 24) ? (uint32_t) gl->n_leafs : 0) + 16;
    uint32_t slots = 1;
    while (slots < 2 * s.cap) slots <<= 1;
    s.mask  = slots - 1;
    s.t     = malloc(s.cap * sizeof(*s.t));
    s.e     = calloc(s.cap, sizeof(*s.e));
    s.slots = calloc(slots, sizeof(*s.slots));
    if (!s.t || !s.e || !s.slots) goto out;

    /* Nodes first, so that an entry's index is its node index; then their sources and the views' sources. */
    for (int i = 0; i < n_nodes; i++) pl_find(&s, nodes[i], true);
    /* The graph's leafs too: ggml-alloc places them all before the first node, read or not. They are not in ggml's
     * API: read from struct ggml_cgraph, trusted only when its nodes are where the accessors say. */
    const struct ggml_cgraph_abi *ga = (const struct ggml_cgraph_abi *) graph;
    if (ga->n_nodes == n_nodes && (void *) ga->nodes == (void *) nodes && ga->n_leafs >= 0 && ga->leafs) {
        for (int i = 0; i < ga->n_leafs; i++) pl_find(&s, (const struct ggml_tensor *) ga->leafs[i], true);
    }
    for (int i = 0; i < n_nodes; i++) {
        const struct ggml_tensor_links *l = ggprof_links(nodes[i]);
        for (int j = 0; j < GGML_ABI_MAX_SRC; j++) {
            if (!l->src[j]) continue;
            uint32_t k = pl_find(&s, l->src[j], true);
            if (k != UINT32_MAX) s.t[k].last_use = i;
        }
    }
    for (uint32_t k = 0; k < s.n; k++) {
        const struct ggml_tensor_links *l = ggprof_links(s.t[k].t);
        if (l->view_src) pl_find(&s, l->view_src, true);
    }
    for (uint32_t k = 0; k < s.n; k++) {
        pl_tensor                      *p = &s.t[k];
        const struct ggml_tensor_links *l = ggprof_links(p->t);
        p->buffer = p->t->buffer, p->data = l->data, p->extra = l->extra;
        p->restore = p->data == NULL;
    }
    if (!g->fn_ggml_gallocr_alloc_graph(galloc, graph)) {
        if (!atomic_exchange(&g_alloc_failed_noted, true)) {
            ggprof_trace_note("memory: a graph's placement could not be read (ggml_gallocr_alloc_graph refused the plan "
                              "it had just made): its compute buffer has no peak");
        }
    } else {
        for (uint32_t k = 0; k < s.n; k++) {
            pl_tensor                      *p = &s.t[k];
            const struct ggml_tensor_links *l = ggprof_links(p->t);
            ggprof_placement               *e = &s.e[k];
            bool is_node = k < (uint32_t) n_nodes;
            e->node_id    = ggprof_node_id(p->t);
            e->node_index = is_node ? (int32_t) k : -1;
            e->root       = (int32_t) k;
            e->flags      = (is_node ? 0 : GGPROF_PL_LEAF) | (p->t->flags & GGML_ABI_FLAG_INPUT ? GGPROF_PL_INPUT : 0) |
                       (p->t->flags & GGML_ABI_FLAG_OUTPUT ? GGPROF_PL_OUTPUT : 0) |
                       (is_node && ggprof_node_computed(g, p->t) ? GGPROF_PL_COMPUTED : 0) |
                       (p->restore ? GGPROF_PL_PLANNED : 0);
            if (l->view_src) {
                uint32_t r = pl_find(&s, l->view_src, false);
                if (r != UINT32_MAX) e->root = (int32_t) r;
                e->flags |= GGPROF_PL_VIEW;
            }
            if (p->t->buffer && l->data) {
                char *base = g->fn_ggml_backend_buffer_get_base(p->t->buffer);
                e->handle  = (uint64_t) (uintptr_t) p->t->buffer;
                e->offset  = (uint64_t) ((char *) l->data - base);
                e->size    = l->view_src ? 0 : g->fn_ggml_backend_buffer_get_alloc_size(p->t->buffer, p->t);
            }
            e->first = is_node && !(p->t->flags & GGML_ABI_FLAG_INPUT) ? (int32_t) k : -1;
            e->last  = p->last_use;
        }
        /* A tensor lives until the last reader of it or of any of its views; outputs, and tensors with a view that
         * nothing reads, are never freed (ggml-alloc counts views and children alike). */
        for (uint32_t k = 0; k < s.n; k++) {
            ggprof_placement *e = &s.e[k];
            if (e->root == (int32_t) k) continue;
            ggprof_placement *r    = &s.e[e->root];
            bool              kept = e->node_index >= 0 && s.t[k].last_use < 0;
            int32_t           upto = kept ? n_nodes - 1 : s.t[k].last_use;
            if (upto > r->last) r->last = upto;
        }
        /* ggml-alloc frees a tensor when its last reader is done: one that nothing reads is never freed. */
        for (uint32_t k = 0; k < s.n; k++) {
            ggprof_placement *e = &s.e[k];
            if (e->flags & GGPROF_PL_OUTPUT || !(e->flags & GGPROF_PL_PLANNED) || e->last < 0) e->last = n_nodes - 1;
            if (e->last < e->first) e->last = e->first;
        }
        ggprof_sched *se = t_sched ? ggprof_sched_find(t_sched, true) : NULL;
        send_plan(&s, se ? se->id : 0, n_nodes);
    }
    /* Put back what the allocation set: the program allocates the graph itself when it computes it. */
    for (uint32_t k = 0; k < s.n; k++) {
        pl_tensor *p = &s.t[k];
        if (!p->restore) continue;
        struct ggml_tensor_links *l = (struct ggml_tensor_links *) ggprof_links(p->t);
        p->t->buffer = p->buffer;
        l->data      = p->data;
        l->extra     = p->extra;
    }
out:
    free(s.t);
    free(s.e);
    free(s.slots);
}

GGPROF_API bool ggml_gallocr_reserve_n(struct ggml_gallocr *galloc, struct ggml_cgraph *graph,
                                       const int *node_buffer_ids, const int *leaf_buffer_ids) {
    REAL_FROM(slot_ggml_gallocr_reserve_n, ggml_gallocr_reserve_n);
    bool ok = real_ggml_gallocr_reserve_n(galloc, graph, node_buffer_ids, leaf_buffer_ids);
    if (ok && graph && ggprof_engine_ready((const void *) real_ggml_gallocr_reserve_n)) {
        GGPROF_GUARD;
        read_plan(galloc, graph);
    }
    return ok;
}

/* The scheduler's two ways into ggml_gallocr_reserve_n: both name the scheduler of the plans they make, and change
 * graphs too (ggprof_graph_gen). */
static bool with_sched(ggml_backend_sched_t sched, struct ggml_cgraph *graph,
                       bool (*real)(ggml_backend_sched_t, struct ggml_cgraph *)) {
    ggprof_graph_changed();
    ggml_backend_sched_t outer = t_sched;
    t_sched = sched;
    bool ok = real(sched, graph);
    t_sched = outer;
    return ok;
}

GGPROF_API bool ggml_backend_sched_reserve(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    REAL_FROM(slot_ggml_backend_sched_reserve, ggml_backend_sched_reserve);
    return with_sched(sched, graph, real_ggml_backend_sched_reserve);
}

GGPROF_API bool ggml_backend_sched_alloc_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    REAL_FROM(slot_ggml_backend_sched_alloc_graph, ggml_backend_sched_alloc_graph);
    return with_sched(sched, graph, real_ggml_backend_sched_alloc_graph);
}

/* Patched where ggml is inside the program (reach.c). */
GGPROF_SELF_ALIAS(ggml_backend_buft_alloc_buffer)
GGPROF_SELF_ALIAS(ggml_backend_buffer_free)
GGPROF_SELF_ALIAS(ggml_backend_buffer_set_usage)
GGPROF_SELF_ALIAS(ggml_backend_cpu_buffer_from_ptr)
GGPROF_SELF_ALIAS(ggml_backend_dev_buffer_from_host_ptr)
GGPROF_SELF_ALIAS(ggml_gallocr_reserve_n)
GGPROF_SELF_ALIAS(ggml_backend_sched_reserve)
GGPROF_SELF_ALIAS(ggml_backend_sched_alloc_graph)
static const ggprof_entry g_memory_entries[] = {
    { "ggml_backend_buft_alloc_buffer", GGPROF_SELF(ggml_backend_buft_alloc_buffer), &slot_ggml_backend_buft_alloc_buffer,
      "buffer records" },
    { "ggml_backend_buffer_free", GGPROF_SELF(ggml_backend_buffer_free), &slot_ggml_backend_buffer_free,
      "buffer frees" },
    { "ggml_backend_buffer_set_usage", GGPROF_SELF(ggml_backend_buffer_set_usage), &slot_ggml_backend_buffer_set_usage,
      "buffer usages" },
    { "ggml_backend_cpu_buffer_from_ptr", GGPROF_SELF(ggml_backend_cpu_buffer_from_ptr),
      &slot_ggml_backend_cpu_buffer_from_ptr, "mapped weight buffers" },
    { "ggml_backend_dev_buffer_from_host_ptr", GGPROF_SELF(ggml_backend_dev_buffer_from_host_ptr),
      &slot_ggml_backend_dev_buffer_from_host_ptr, "mapped weight buffers" },
    { "ggml_gallocr_reserve_n", GGPROF_SELF(ggml_gallocr_reserve_n), &slot_ggml_gallocr_reserve_n, "tensor placement" },
    { "ggml_backend_sched_reserve", GGPROF_SELF(ggml_backend_sched_reserve), &slot_ggml_backend_sched_reserve,
      "the scheduler of a placement" },
    { "ggml_backend_sched_alloc_graph", GGPROF_SELF(ggml_backend_sched_alloc_graph),
      &slot_ggml_backend_sched_alloc_graph, "the scheduler of a placement" },
};

const ggprof_entry *ggprof_memory_entries(int *n) {
    *n = (int) (sizeof(g_memory_entries) / sizeof(g_memory_entries[0]));
    return g_memory_entries;
}
