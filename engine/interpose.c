/* The ggml entry points libggprof.so interposes: scheduler, splits, copies, and the CPU backend's hooks. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "internal.h"
#include "reach.h"
#include "engine.h"
#include "ring.h"
#include "schedulers.h"
#include "timing.h"

static _Atomic uint64_t g_next_graph_id;

/* The CPU timing kernels/cpu registered (timing.h); the wrappers below run only after libggprof.so's constructors. */
static inline const ggprof_cpu_timing *cpu_timing(void) {
    return atomic_load_explicit(&ggprof_cpu, memory_order_relaxed);
}

/* The functions of the wrappers that may be patched where ggml is inside the program (g_entries, at the end). */
static void *_Atomic slot_ggml_backend_sched_graph_compute_async, *_Atomic slot_ggml_backend_sched_graph_compute,
    *_Atomic slot_ggml_backend_tensor_copy, *_Atomic slot_ggml_backend_tensor_set_async,
    *_Atomic slot_ggml_backend_synchronize, *_Atomic slot_ggml_backend_cpu_set_abort_callback,
    *_Atomic slot_ggml_barrier, *_Atomic slot_ggml_graph_compute, *_Atomic slot_ggml_backend_cpu_init,
    *_Atomic slot_ggml_backend_free;
static void hook_backend_iface(ggml_backend_t backend, bool is_cpu);

/* ---- one scheduler graph compute on this thread ---- */

#define MAX_PENDING 256
typedef struct {
    ggprof_sched         *se;
    uint64_t             graph_id;
    int                  level;    /* the recording level for this graph (record --alternate varies it) */
    struct ggml_tensor **nodes;
    int                  n_nodes;
    int                  split_id, last_backend, last_end;
    ggprof_msg_event     pending[MAX_PENDING]; /* copies wait for the split they feed */
    int                  n_pending;
} graph_ctx;

static __thread graph_ctx *t_graph;
static __thread int        t_sched_depth;
static __thread ggprof_place      t_place;  /* the split this thread is computing, for device tracers */
static __thread bool              t_in_split;
/* A device backend's split (not the CPU's, not timed node by node): its nodes, for ggml_is_empty to find the
 * node being recorded, and where the last was found. */
static __thread struct ggml_tensor **t_dev_nodes;
static __thread int                  t_dev_n, t_dev_pos;
static _Atomic int                   g_dev_splits; /* device splits being recorded now, on any thread */
/* which of them the backend asked about (a bit per node): the ones it did not were fused (emit_fusions) */
static __thread uint64_t            *t_dev_called;
static __thread int                  t_dev_called_cap; /* in words */

/* The level the calling thread records at: its scheduler graph's, or the process's outside any. */
static int current_level(void) { return t_graph ? t_graph->level : ggprof_eng.level; }

static void flush_pending(graph_ctx *gc, int split_id, int backend_id) {
    ggprof_api_sched *api = gc->se && ggprof_api_enabled(gc->se->api) ? gc->se->api : NULL;
    for (int i = 0; i < gc->n_pending; i++) {
        gc->pending[i].split_id   = split_id;
        gc->pending[i].backend_id = (int16_t) backend_id;
        ggprof_emit(&gc->pending[i].h);
        if (api) ggprof_api_event(api, &gc->pending[i]);
    }
    gc->n_pending = 0;
}

static void emit_graph(uint64_t graph_id, uint32_t sched_id, int n_nodes, int n_splits, uint64_t t0, uint64_t t1) {
    ggprof_msg_graph m;
    memset(&m, 0, sizeof(m));
    m.h           = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_GRAPH, 0 };
    m.graph_id    = graph_id;
    m.sched_id    = sched_id;
    m.n_nodes     = n_nodes;
    m.n_splits    = n_splits;
    m.batch       = ggprof_t_batch;
    m.start_ns    = t0;
    m.duration_ns = t1 - t0;
    ggprof_emit(&m.h);
}

/* The process's first graph tells the collector that graphs compute (ggprof_ring_began): from then on it reads no
 * ring slot ahead, which at nice 19 on CPUs the workload keeps busy would take a ggml thread's CPU for milliseconds
 * (docs/how-it-works.md, "Overhead"), and its /proc sampler takes its longest period at once. */
static void graphs_began(void) {
    static _Atomic bool began;
    if (!atomic_load_explicit(&began, memory_order_relaxed) && !atomic_exchange(&began, true)) ggprof_emit_began();
}

static enum ggml_status sched_compute(ggml_backend_sched_t sched, struct ggml_cgraph *graph,
                                      enum ggml_status (*real)(ggml_backend_sched_t, struct ggml_cgraph *)) {
    if (t_sched_depth > 0 || !ggprof_engine_ready((const void *) real)) {
        t_sched_depth++;
        enum ggml_status r = real(sched, graph);
        t_sched_depth--;
        return r;
    }
    const ggprof_ggml *g = &ggprof_eng.g;
    graph_ctx gc;
    gc.se           = ggprof_sched_find(sched, true);
    if (ggprof_reach_embedded() && gc.se && !gc.se->iface_hooked) {
        /* CPU backends first: the table's layout is learned from one (ggprof_reach_iface_slot). */
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < gc.se->n; i++) {
                if (gc.se->is_cpu[i] == (pass == 0)) hook_backend_iface(gc.se->backends[i], gc.se->is_cpu[i]);
            }
        }
        gc.se->iface_hooked = true;
    }
    gc.graph_id     = atomic_fetch_add(&g_next_graph_id, 1);
    gc.nodes        = g->fn_ggml_graph_nodes(graph);
    gc.n_nodes      = g->fn_ggml_graph_n_nodes(graph);
    gc.level        = ggprof_eng.level;
    /* --alternate: half the graphs at level graph, so that adjacent graphs of the two kinds measure what the
     * engine's per-split and per-op work costs (tests/bench/overhead_ab.sh). */
    if (ggprof_eng.alternate && !ggprof_alternate_full(gc.graph_id)) gc.level = GGPROF_LEVEL_GRAPH;
    /* --sample N: graph ids that N divides at the level, the others at level graph (their latency stays whole). */
    if (ggprof_eng.sample > 1 && gc.graph_id % ggprof_eng.sample != 0) gc.level = GGPROF_LEVEL_GRAPH;
    /* Outside a capture window, or paused: the graph is computed untouched and nothing of it is sent. */
    int on = ggprof_recording_now();
    if (!on) gc.level = GGPROF_LEVEL_GRAPH - 1;
    gc.split_id     = -1;
    gc.last_backend = -1;
    gc.last_end     = -1;
    gc.n_pending    = 0;
    graphs_began(); /* recorded or not: the CPUs are the workload's from here */
    uint64_t t0 = ggprof_now_ns();
    t_graph = &gc;
    ggprof_t_graph_on = on;
    t_sched_depth++;
    enum ggml_status r = real(sched, graph);
    t_sched_depth--;
    t_graph = NULL;
    uint64_t t1 = ggprof_now_ns();
    if (!on) {
        ggprof_t_graph_on = -1;
        return r;
    }

    GGPROF_GUARD;
    flush_pending(&gc, gc.split_id + 1, -1);
    emit_graph(gc.graph_id, gc.se ? gc.se->id : 0, gc.n_nodes, g->fn_ggml_backend_sched_get_n_splits(sched), t0, t1);
    ggprof_placement_after_graph(sched, graph, gc.graph_id);
    ggprof_memory_after_graph();
    ggprof_profile_graph_recorded();
    ggprof_t_graph_on = -1;
    return r;
}

GGPROF_API enum ggml_status ggml_backend_sched_graph_compute_async(ggml_backend_sched_t sched,
                                                                   struct ggml_cgraph *graph) {
    REAL_FROM(slot_ggml_backend_sched_graph_compute_async, ggml_backend_sched_graph_compute_async);
    return sched_compute(sched, graph, real_ggml_backend_sched_graph_compute_async);
}

GGPROF_API enum ggml_status ggml_backend_sched_graph_compute(ggml_backend_sched_t sched, struct ggml_cgraph *graph) {
    REAL_FROM(slot_ggml_backend_sched_graph_compute, ggml_backend_sched_graph_compute);
    return sched_compute(sched, graph, real_ggml_backend_sched_graph_compute);
}

/* An EVENT record timed [t0, t1] on the host, on no node yet (the caller fills node, graph and split). */
static ggprof_msg_event event_msg(uint16_t type, uint16_t timing, uint16_t sub, int backend_id, uint64_t t0,
                                  uint64_t t1) {
    ggprof_msg_event e;
    memset(&e, 0, sizeof(e));
    e.h           = (ggprof_msg_hdr){ sizeof(e), GGPROF_MSG_EVENT, 0 };
    e.type        = type;
    e.timing      = timing;
    e.sub         = sub;
    e.backend_id  = (int16_t) backend_id;
    e.node_index  = -1;
    e.fused_index = -1;
    e.start_ns    = t0;
    e.duration_ns = t1 - t0;
    return e;
}

/* ---- one backend compute: a split of a scheduler graph, or a graph computed directly ---- */

/* A backend we cannot see inside (BLAS; GPUs under --serialize) computes one node at a time, each followed by
 * a synchronize: per-node wall time, at the cost of the backend's own batching. Records say so (timing). */
static enum ggml_status compute_serialized(ggml_backend_t backend, struct ggml_cgraph *cgraph, struct ggml_tensor **nodes,
                                           int n, const ggprof_split_place *w, ggprof_sched *se,
                                           enum ggml_status (*real)(ggml_backend_t, struct ggml_cgraph *)) {
    const ggprof_ggml *g = &ggprof_eng.g;
    ggprof_api_sched *api = ggprof_api_enabled(se->api) ? se->api : NULL;
    for (int i = 0; i < n; i++) {
        struct ggml_tensor *t = nodes[i];
        if (!ggprof_node_computed(g, t)) continue;
        uint32_t id;
        {
            GGPROF_GUARD;
            id = ggprof_node_id(t);
        }
        ggml_cgraph_view_buf v = g->fn_ggml_graph_view(cgraph, i, i + 1);
        uint64_t t0 = ggprof_now_ns();
        enum ggml_status r = real(backend, (struct ggml_cgraph *) &v.g);
        g->fn_ggml_backend_synchronize(backend);
        uint64_t t1 = ggprof_now_ns();
        if (r != GGML_STATUS_SUCCESS) return r;
        GGPROF_GUARD;
        ggprof_msg_event e = event_msg(GGPROF_REC_OP, GGPROF_TIMING_SERIALIZED, 0, w->backend_id, t0, t1);
        e.node_id    = id;
        e.sched_id   = w->sched_id;
        e.graph_id   = w->graph_id;
        e.split_id   = w->split_id;
        e.node_index = w->node_start + i;
        e.bytes      = g->fn_ggml_nbytes(t);
        ggprof_emit(&e.h);
        if (api) ggprof_api_event(api, &e);
    }
    return GGML_STATUS_SUCCESS;
}

/* One backend compute being recorded, from split_begin (before the real compute) to split_end (after it). */
typedef struct {
    graph_ctx           *gc; /* the scheduler graph it belongs to, or NULL: a graph computed directly */
    ggprof_sched         *se;
    ggml_backend_t       backend;
    struct ggml_tensor **nodes;
    int                  n_nodes, backend_id;
    bool                 ticked, serial; /* CPU ops timed by ticks; a backend timed node by node */
    uint64_t             t_in;           /* when the wrapper was entered: the engine's own time counts from here */
    ggprof_split_place   where;
} split_tracker;

/* Where the split lies (its scheduler, graph, split number and first node), and how its ops will be timed. */
static void split_begin(split_tracker *st, ggml_backend_t backend, struct ggml_cgraph *cgraph, int level) {
    const ggprof_ggml *g = &ggprof_eng.g;
    graph_ctx *gc = t_graph;
    st->t_in    = ggprof_now_ns();
    st->gc      = gc;
    st->backend = backend;
    GGPROF_GUARD; /* to the end: the rest touches no ggml */
    st->se = gc && gc->se ? gc->se : ggprof_sched_unscheduled(backend);
    ggprof_sched *se = st->se;
    st->nodes      = g->fn_ggml_graph_nodes(cgraph);
    st->n_nodes    = g->fn_ggml_graph_n_nodes(cgraph);
    st->backend_id = ggprof_sched_backend_index(se, backend);
    ggprof_split_place *w = &st->where;
    *w = (ggprof_split_place){ 0 };
    w->sched_id   = se->id;
    w->backend_id = st->backend_id;
    if (gc) {
        ptrdiff_t off = st->nodes - gc->nodes;
        w->node_start = (off >= 0 && off <= gc->n_nodes) ? (int32_t) off : -1;
        if (w->node_start < 0 || w->node_start != gc->last_end || st->backend_id != gc->last_backend) gc->split_id++;
        gc->last_end     = w->node_start >= 0 ? w->node_start + st->n_nodes : -1;
        gc->last_backend = st->backend_id;
        w->graph_id      = gc->graph_id;
        w->split_id      = gc->split_id;
    } else {
        w->graph_id   = atomic_fetch_add(&g_next_graph_id, 1);
        w->split_id   = 0;
        w->node_start = 0;
    }
    int id     = st->backend_id;
    st->ticked = level >= GGPROF_LEVEL_OP && id >= 0 && se->is_cpu[id];
    st->serial = level >= GGPROF_LEVEL_OP && id >= 0 && !se->is_cpu[id] && g->graph_view_ok &&
                 (se->dev_type[id] == GGML_ABI_DEV_ACCEL || ggprof_eng.serialize_gpu);
    if (st->ticked) {
        const ggprof_cpu_timing *cpu = atomic_load_explicit(&ggprof_cpu, memory_order_acquire);
        cpu->hook_backend(backend);
        /* A split of a scheduler graph lies inside that graph; a graph computed directly is its own. */
        st->ticked = cpu->begin(st->nodes, st->n_nodes, gc ? gc->nodes : st->nodes, gc ? gc->n_nodes : st->n_nodes) >= 0;
    }
    t_place    = (ggprof_place){ w->graph_id, w->sched_id, w->split_id, id, w->node_start, st->n_nodes, -1, 0 };
    t_in_split = true;
    bool device = ggprof_eng.device_nodes && id >= 0 && !se->is_cpu[id] && !st->serial && w->node_start >= 0 &&
                  st->n_nodes > 0;
    int  words  = (st->n_nodes + 63) / 64;
    if (device && words > t_dev_called_cap) {
        uint64_t *b = realloc(t_dev_called, (size_t) words * sizeof(*b));
        if (b) t_dev_called = b, t_dev_called_cap = words;
        else device = false;
    }
    if (device) {
        memset(t_dev_called, 0, (size_t) words * sizeof(*t_dev_called));
        atomic_fetch_add_explicit(&g_dev_splits, 1, memory_order_relaxed);
    }
    t_dev_nodes = device ? st->nodes : NULL;
    t_dev_n     = device ? st->n_nodes : 0;
    t_dev_pos   = 0;
}

/* ggml-vulkan records a split node by node in graph order, and the first thing it does for a node is
 * ggml_is_empty(node), through the PLT: on a device split's thread, a call with one of the split's nodes marks
 * it as the node being recorded, for the dispatches that follow (ggprof_current_place). A call with a tensor that
 * is no node changes nothing, nor one with a source of the node being recorded (ggml_vk_set_rows checks its
 * sources, a VIEW node among them, just before its dispatch). The search starts where the last node was found:
 * nodes come in order. */
static void mark_device_node(const struct ggml_tensor *t) {
    if (t_place.node_index >= 0) {
        const struct ggml_tensor_links *cur = ggprof_links(t_dev_nodes[t_dev_pos]);
        for (int s = 0; s < GGML_ABI_MAX_SRC; s++) {
            if (cur->src[s] == t) return;
        }
    }
    for (int k = 0; k < t_dev_n; k++) {
        int i = (t_dev_pos + k) % t_dev_n;
        if (t_dev_nodes[i] != t) continue;
        /* Back to an earlier node: a new pass over the split (ggml-cuda checks every node before it computes
         * them); only the last pass's skips are fusions. */
        if (i < t_dev_pos) memset(t_dev_called, 0, (size_t) ((t_dev_n + 63) / 64) * sizeof(*t_dev_called));
        t_dev_pos          = i;
        t_place.node_index = t_place.node_start + i;
        t_dev_called[i / 64] |= 1ull << (i % 64);
        GGPROF_GUARD;
        t_place.node_id = ggprof_node_id(t);
        return;
    }
}

GGPROF_API bool ggml_is_empty(const struct ggml_tensor *tensor);
static void *_Atomic slot_ggml_is_empty;
static __attribute__((noinline)) bool is_empty_slow(const struct ggml_tensor *tensor, void *caller) {
    bool (*real)(const struct ggml_tensor *) = atomic_load_explicit(&slot_ggml_is_empty, memory_order_acquire);
    if (!real) {
        real = (bool (*)(const struct ggml_tensor *)) ggprof_resolve_real("ggml_is_empty", caller, (void *) ggml_is_empty);
        if (!real) ggprof_missing_real("ggml_is_empty");
        atomic_store_explicit(&slot_ggml_is_empty, (void *) real, memory_order_release);
    }
    if (atomic_load_explicit(&g_dev_splits, memory_order_relaxed) && t_dev_nodes && !ggprof_busy) mark_device_node(tensor);
    return real(tensor);
}

/* ggml-cpu asks about every node, three times, on every thread: the path while no device split is being recorded
 * anywhere is a plain global read and a jump to ggml's (the rest, with the registers it saves, only past it): 72
 * instructions a node down to 18 (callgrind, tests/bench/node_cost.sh). */
GGPROF_API bool ggml_is_empty(const struct ggml_tensor *tensor) {
    bool (*real)(const struct ggml_tensor *) = atomic_load_explicit(&slot_ggml_is_empty, memory_order_acquire);
    if (__builtin_expect(real != NULL && !atomic_load_explicit(&g_dev_splits, memory_order_relaxed), 1)) return real(tensor);
    return is_empty_slow(tensor, __builtin_return_address(0));
}

/* After a device split: each node the backend asked ggml_is_empty about, with the nodes after it that it did not
 * (it fused them into this one and skipped them), is a group, sent as one FUSION message; the collector names the
 * head's OP record after the group (RMS_NORM+MUL). Nodes before the first asked about belong to no group; a split
 * whose nodes were never asked about (a backend that does not call ggml_is_empty) sends nothing. */
static void emit_fusions(const split_tracker *st) {
    const ggprof_split_place *w = &st->where;
#define CALLED(i) ((t_dev_called[(i) / 64] >> ((i) % 64)) & 1)
    for (int i = 0; i < t_dev_n;) {
        if (!CALLED(i)) {
            i++;
            continue;
        }
        int end = i + 1;
        while (end < t_dev_n && !CALLED(end)) end++;
        if (end - i > 1) {
            ggprof_msg_fusion m;
            memset(&m, 0, sizeof(m));
            m.h          = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_FUSION, 0 };
            m.graph_id   = w->graph_id;
            m.sched_id   = w->sched_id;
            m.split_id   = w->split_id;
            m.head_index = w->node_start + i;
            m.n          = (uint32_t) (end - i);
            for (int k = 0; k < end - i && k < GGPROF_MAX_FUSED; k++) m.node_id[k] = ggprof_node_id(t_dev_nodes[i + k]);
            ggprof_emit(&m.h);
        }
        i = end;
    }
#undef CALLED
}

/* The split computed in [t0, t1]: the copies that fed it, its CPU ops, the SPLIT record (and a GRAPH record for
 * a graph computed directly). */
static void split_end(split_tracker *st, uint64_t t0, uint64_t t1) {
    t_in_split = false;
    GGPROF_GUARD;
    if (t_dev_nodes) {
        emit_fusions(st);
        atomic_fetch_sub_explicit(&g_dev_splits, 1, memory_order_relaxed);
    }
    t_dev_nodes = NULL;
    graph_ctx *gc = st->gc;
    ggprof_split_place *w = &st->where;
    if (gc) flush_pending(gc, w->split_id, st->backend_id);
    w->start_ns = t0;
    w->end_ns   = t1;
    int n_ticks = 0, n_expected = 0;
    ggprof_api_sched *api = gc && ggprof_api_enabled(st->se->api) ? st->se->api : NULL;
    int matched = st->ticked ? atomic_load_explicit(&ggprof_cpu, memory_order_acquire)
                                   ->end(w, &n_ticks, &n_expected, api ? ggprof_api_cpu_chunk : NULL, api)
                             : -1;
    ggprof_msg_split s;
    memset(&s, 0, sizeof(s));
    s.h             = (ggprof_msg_hdr){ sizeof(s), GGPROF_MSG_SPLIT, 0 };
    s.graph_id      = w->graph_id;
    s.sched_id      = w->sched_id;
    s.split_id      = w->split_id;
    s.backend_id    = st->backend_id;
    s.n_nodes       = st->n_nodes;
    s.node_start    = w->node_start;
    s.ticks_matched = matched;
    s.n_ticks       = n_ticks;
    s.n_expected    = n_expected;
    s.start_ns      = t0;
    s.duration_ns   = t1 - t0;
    s.engine_ns     = (t0 - st->t_in) + (ggprof_now_ns() - t1);
    ggprof_emit(&s.h);
    if (!gc) emit_graph(w->graph_id, 0, st->n_nodes, 1, t0, t1);
}

typedef enum ggml_status (*compute_fn)(ggml_backend_t, struct ggml_cgraph *);
static __thread bool t_in_compute; /* a backend compute is being recorded on this thread (PLT and table both) */

/* One backend compute, reached through the PLT (ggml_backend_graph_compute_async) or through the backend's
 * interface table (ggml inside the program, where that call is inlined: iface_graph_compute). */
static enum ggml_status backend_compute(ggml_backend_t backend, struct ggml_cgraph *cgraph, compute_fn real) {
    /* Ready first: on the first call it sets the engine up, level included. */
    bool ready = ggprof_engine_ready((const void *) real);
    int  level = current_level();
    if (!ready || level < GGPROF_LEVEL_SPLIT || t_in_compute) return real(backend, cgraph);
    t_in_compute = true;
    split_tracker st;
    split_begin(&st, backend, cgraph, level);
    uint64_t t0 = ggprof_now_ns();
    enum ggml_status r = st.serial ? compute_serialized(backend, cgraph, st.nodes, st.n_nodes, &st.where, st.se, real)
                                   : real(backend, cgraph);
    uint64_t a  = st.ticked ? ggprof_stamp() : 0;
    uint64_t t1 = ggprof_now_ns();
    st.where.end_stamp_before = a;
    st.where.end_stamp_after  = st.ticked ? ggprof_stamp() : 0;
    split_end(&st, t0, t1);
    t_in_compute = false;
    return r;
}

GGPROF_API enum ggml_status ggml_backend_graph_compute_async(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    REAL(ggml_backend_graph_compute_async);
    return backend_compute(backend, cgraph, real_ggml_backend_graph_compute_async);
}

/* ---- the backends' interface tables: ggml inside the program ---- */

/* Each hooked backend and the graph_compute it had. A backend's table is its own copy (struct ggml_backend holds
 * the iface by value), written once here before any compute on it; entries are never removed (a backend freed
 * and made again at the same address gets its entry updated). */
#define MAX_IFACE 32
static struct {
    _Atomic(ggml_backend_t) backend;
    _Atomic(compute_fn)     real;
} g_iface[MAX_IFACE];
static _Atomic int     g_n_iface;
static pthread_mutex_t g_iface_lock = PTHREAD_MUTEX_INITIALIZER;

static enum ggml_status iface_graph_compute(ggml_backend_t backend, struct ggml_cgraph *cgraph) {
    int n = atomic_load_explicit(&g_n_iface, memory_order_acquire);
    for (int i = 0; i < n; i++) {
        if (atomic_load_explicit(&g_iface[i].backend, memory_order_relaxed) == backend) {
            return backend_compute(backend, cgraph, atomic_load_explicit(&g_iface[i].real, memory_order_relaxed));
        }
    }
    ggprof_missing_real("graph_compute of a hooked backend");
}

/* Puts iface_graph_compute in the backend's table (ggml inside the program only: elsewhere the PLT brings every
 * split). The slot is found from a CPU backend (reach.c); a backend whose slot does not hold a function of the
 * program is left alone. */
static void hook_backend_iface(ggml_backend_t backend, bool is_cpu) {
    if (!ggprof_reach_embedded() || !backend) return;
    long off = ggprof_reach_iface_slot(is_cpu ? backend : NULL);
    if (off == -1 && is_cpu) {
        static _Atomic bool said;
        if (!atomic_exchange(&said, true)) {
            ggprof_trace_note("splits off: where a backend keeps graph_compute cannot be told (no body of "
                              "ggml_backend_graph_compute_async to read, no symbol ggml_backend_cpu_graph_compute)");
        }
    }
    if (off <= 0) return;
    _Atomic(compute_fn) *slot = (_Atomic(compute_fn) *) ((char *) backend + off);
    static bool said;
    pthread_mutex_lock(&g_iface_lock);
    if (!said) {
        said = true;
        ggprof_trace_note("backend computes reached through each backend's interface table (graph_compute at byte %ld)",
                          off);
    }
    compute_fn cur = atomic_load(slot);
    if (cur && cur != iface_graph_compute) {
        int n = atomic_load(&g_n_iface), i = 0;
        while (i < n && atomic_load(&g_iface[i].backend) != backend) i++;
        if (i < MAX_IFACE) {
            atomic_store(&g_iface[i].real, cur);
            atomic_store(&g_iface[i].backend, backend);
            if (i == n) atomic_store_explicit(&g_n_iface, n + 1, memory_order_release);
            atomic_store(slot, iface_graph_compute);
        }
    }
    pthread_mutex_unlock(&g_iface_lock);
}

bool ggprof_current_place(ggprof_place *out) {
    if (!t_in_split) {
        memset(out, 0, sizeof(*out));
        out->graph_id = GGPROF_GRAPH_NONE;
        out->split_id = out->backend_id = out->node_start = out->node_index = -1;
        return false;
    }
    *out = t_place;
    return true;
}

/* ---- copies ---- */

static bool buffer_is_host(ggml_backend_buffer_t buf) {
    return buf == NULL || ggprof_eng.g.fn_ggml_backend_buffer_is_host(buf);
}

static void record_copy(const struct ggml_tensor *src, int dir, uint64_t t0, uint64_t t1, uint64_t bytes,
                        uint64_t offset) {
    ggprof_msg_event e = event_msg(GGPROF_REC_COPY, GGPROF_TIMING_HOST_CALL, (uint16_t) dir, -1, t0, t1);
    e.node_id = ggprof_copy_node_id(src);
    e.bytes   = bytes;
    e.wait_ns = offset;
    graph_ctx *gc = t_graph;
    if (gc && gc->n_pending < MAX_PENDING) {
        e.graph_id = gc->graph_id;
        e.sched_id = gc->se ? gc->se->id : 0;
        gc->pending[gc->n_pending++] = e;
        return;
    }
    e.graph_id = gc ? gc->graph_id : GGPROF_GRAPH_NONE;
    e.split_id = gc ? gc->split_id + 1 : -1;
    ggprof_emit(&e.h);
}

static int copy_dir(bool src_host, bool dst_host) {
    if (src_host) return dst_host ? GGPROF_COPY_H2H : GGPROF_COPY_H2D;
    return dst_host ? GGPROF_COPY_D2H : GGPROF_COPY_D2D;
}

GGPROF_API void ggml_backend_tensor_copy(const struct ggml_tensor *src, struct ggml_tensor *dst) {
    REAL_FROM(slot_ggml_backend_tensor_copy, ggml_backend_tensor_copy);
    if (!ggprof_engine_ready((const void *) real_ggml_backend_tensor_copy) || current_level() < GGPROF_LEVEL_SPLIT) {
        real_ggml_backend_tensor_copy(src, dst);
        return;
    }
    uint64_t t0 = ggprof_now_ns();
    real_ggml_backend_tensor_copy(src, dst);
    uint64_t t1 = ggprof_now_ns();
    GGPROF_GUARD;
    record_copy(src, copy_dir(buffer_is_host(src->buffer), buffer_is_host(dst->buffer)), t0, t1,
                ggprof_eng.g.fn_ggml_nbytes(src), 0);
}

GGPROF_API void ggml_backend_tensor_set_async(ggml_backend_t backend, struct ggml_tensor *tensor, const void *data,
                                              size_t offset, size_t size) {
    REAL_FROM(slot_ggml_backend_tensor_set_async, ggml_backend_tensor_set_async);
    if (!ggprof_engine_ready((const void *) real_ggml_backend_tensor_set_async) ||
        current_level() < GGPROF_LEVEL_SPLIT) {
        real_ggml_backend_tensor_set_async(backend, tensor, data, offset, size);
        return;
    }
    uint64_t t0 = ggprof_now_ns();
    real_ggml_backend_tensor_set_async(backend, tensor, data, offset, size);
    uint64_t t1 = ggprof_now_ns();
    GGPROF_GUARD;
    /* The source is host memory; only the bytes asked for move (the scheduler's MoE expert copies). */
    record_copy(tensor, copy_dir(true, buffer_is_host(tensor->buffer)), t0, t1, size, offset);
}

/* The host waiting for a backend that computes asynchronously (GPU, RPC): the response to its requests. */
GGPROF_API void ggml_backend_synchronize(ggml_backend_t backend) {
    REAL_FROM(slot_ggml_backend_synchronize, ggml_backend_synchronize);
    if (!ggprof_engine_ready((const void *) real_ggml_backend_synchronize) || current_level() < GGPROF_LEVEL_SPLIT) {
        real_ggml_backend_synchronize(backend);
        return;
    }
    /* CPU and accelerators that compute on the host (BLAS) return at once: no record for them, and no clock read
     * either (llama.cpp synchronizes every backend after each token, and a clock read right after a compute is a
     * cold one: 430 TSC cycles a call with the two reads, 160 with the lookup alone, on the 2-CPU VM). Finding
     * the backend calls no ggml. */
    uint32_t sched_id = 0;
    bool     host     = false;
    int      id       = ggprof_sched_locate(backend, t_graph ? t_graph->se : NULL, &sched_id, &host);
    if (id < 0 || host) {
        real_ggml_backend_synchronize(backend);
        return;
    }
    uint64_t t0 = ggprof_now_ns();
    real_ggml_backend_synchronize(backend);
    uint64_t t1 = ggprof_now_ns();
    GGPROF_GUARD;
    ggprof_msg_event e = event_msg(GGPROF_REC_SYNC, GGPROF_TIMING_HOST_CALL, GGPROF_SYNC_BACKEND_WAIT, id, t0, t1);
    e.sched_id = sched_id;
    e.graph_id = t_graph ? t_graph->graph_id : GGPROF_GRAPH_NONE;
    e.split_id = t_graph ? t_graph->split_id : -1;
    ggprof_emit(&e.h);
}

/* ---- scheduler life ---- */

GGPROF_API ggml_backend_sched_t ggml_backend_sched_new(ggml_backend_t *backends, ggml_backend_buffer_type_t *bufts,
                                                       int n_backends, size_t graph_size, bool parallel,
                                                       bool op_offload) {
    REAL(ggml_backend_sched_new);
    ggml_backend_sched_t s = real_ggml_backend_sched_new(backends, bufts, n_backends, graph_size, parallel, op_offload);
    if (s && ggprof_engine_ready((const void *) real_ggml_backend_sched_new)) {
        GGPROF_GUARD;
        ggprof_api_sched *old_api = NULL;
        ggprof_sched_register(s, &old_api);
        ggprof_api_free(old_api);
    }
    return s;
}

GGPROF_API void ggml_backend_sched_free(ggml_backend_sched_t sched) {
    REAL(ggml_backend_sched_free);
    if (ggprof_engine_ready((const void *) real_ggml_backend_sched_free)) {
        ggprof_api_free(ggprof_sched_forget(sched));
        ggprof_memory_at_end();
        /* GGML_PROFILE writes its profile when a scheduler is freed (or at exit, whichever comes first). */
        ggprof_profile_sched_freed();
    }
    real_ggml_backend_sched_free(sched);
}

/* ---- calls that can change a graph's nodes: split plans are walked again after any of them ---- */

/* Nodes change where a graph is built (names and flags are set as it is), and where the scheduler rewrites its
 * copy of a graph and the nodes' sources when it splits one. A graph is rebuilt where an old one lay only in a
 * context made afresh: a ggml_init (llama.cpp hands it the same buffer for every graph it builds) or a
 * ggml_reset. ggml_format_name is left out: it is variadic with no va_list form to forward to, and it names
 * nodes while a graph is built, after a ggml_init. */
#define CHANGES_GRAPHS(ret, fn, params, args)                                                                  \
    GGPROF_API ret fn params {                                                                                 \
        REAL(fn);                                                                                              \
        ggprof_graph_changed();                                                                                \
        return real_##fn args;                                                                                 \
    }
#define CHANGES_GRAPHS_VOID(fn, params, args)                                                                  \
    GGPROF_API void fn params {                                                                                \
        REAL(fn);                                                                                              \
        ggprof_graph_changed();                                                                                \
        real_##fn args;                                                                                        \
    }

GGPROF_API struct ggml_context *ggml_init(struct ggml_init_params params) {
    REAL(ggml_init);
    /* The CPU backend makes and frees a context too small for one tensor at every graph compute (ggml_cpu_init):
     * no graph can be built in it. */
    if (params.mem_buffer != NULL || params.mem_size >= sizeof(struct ggml_tensor)) ggprof_graph_changed();
    return real_ggml_init(params);
}
CHANGES_GRAPHS_VOID(ggml_reset, (struct ggml_context *ctx), (ctx))
CHANGES_GRAPHS(struct ggml_tensor *, ggml_set_name, (struct ggml_tensor *t, const char *name), (t, name))
CHANGES_GRAPHS_VOID(ggml_set_input, (struct ggml_tensor *t), (t))
CHANGES_GRAPHS_VOID(ggml_set_output, (struct ggml_tensor *t), (t))
CHANGES_GRAPHS_VOID(ggml_set_param, (struct ggml_tensor *t), (t))
CHANGES_GRAPHS_VOID(ggml_set_loss, (struct ggml_tensor *t), (t))
CHANGES_GRAPHS_VOID(ggml_build_forward_expand, (struct ggml_cgraph *g, struct ggml_tensor *t), (g, t))
CHANGES_GRAPHS_VOID(ggml_graph_add_node, (struct ggml_cgraph *g, struct ggml_tensor *t), (g, t))
CHANGES_GRAPHS_VOID(ggml_graph_clear, (struct ggml_cgraph *g), (g))
CHANGES_GRAPHS_VOID(ggml_graph_cpy, (struct ggml_cgraph *src, struct ggml_cgraph *dst), (src, dst))
CHANGES_GRAPHS_VOID(ggml_backend_sched_reset, (ggml_backend_sched_t sched), (sched))
CHANGES_GRAPHS_VOID(ggml_backend_sched_split_graph, (ggml_backend_sched_t sched, struct ggml_cgraph *g), (sched, g))
/* ggml_backend_sched_alloc_graph and ggml_backend_sched_reserve change graphs too: memory.c wraps them. */
CHANGES_GRAPHS_VOID(ggml_backend_sched_set_tensor_backend,
                    (ggml_backend_sched_t sched, struct ggml_tensor *t, ggml_backend_t b), (sched, t, b))

/* ---- the CPU backend: abort-callback setters, barrier, compute entry, thread start ---- */

typedef void (*set_abort_fn)(ggml_backend_t, ggml_abort_callback, void *);

/* Setters handed out by backends' proc addresses that do not already lead to our wrapper below (a backend
 * built with hidden symbols): the program gets wrapped_set_abort_callback instead, which finds the real one
 * here by the backend's registry. */
#define MAX_SETTERS 16
static struct {
    ggml_backend_reg_t reg;
    set_abort_fn       real;
} g_setters[MAX_SETTERS];
static int             g_n_setters;
static pthread_mutex_t g_setters_lock = PTHREAD_MUTEX_INITIALIZER;

static void wrapped_set_abort_callback(ggml_backend_t backend, ggml_abort_callback cb, void *data) {
    const ggprof_ggml *g = &ggprof_eng.g;
    ggml_backend_dev_t dev = g->fn_ggml_backend_get_device(backend);
    ggml_backend_reg_t reg = dev && g->fn_ggml_backend_dev_backend_reg ? g->fn_ggml_backend_dev_backend_reg(dev) : NULL;
    pthread_mutex_lock(&g_setters_lock);
    set_abort_fn real = NULL;
    for (int i = 0; i < g_n_setters; i++) {
        if (g_setters[i].reg == reg) real = g_setters[i].real;
    }
    pthread_mutex_unlock(&g_setters_lock);
    if (real) cpu_timing()->set_abort_callback(real, backend, cb, data);
}

GGPROF_API void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend, ggml_abort_callback cb, void *data);

GGPROF_API void *ggml_backend_reg_get_proc_address(ggml_backend_reg_t reg, const char *name) {
    REAL(ggml_backend_reg_get_proc_address);
    void *p = real_ggml_backend_reg_get_proc_address(reg, name);
    /* llama.cpp sets its abort callback through this address. The CPU backend's already points at our
     * ggml_backend_cpu_set_abort_callback (its GOT entry is interposed); any other gets a wrapper. */
    if (p && name && strcmp(name, "ggml_backend_set_abort_callback") == 0 &&
        p != (void *) ggml_backend_cpu_set_abort_callback && !ggprof_eng.broken) {
        pthread_mutex_lock(&g_setters_lock);
        bool known = false;
        for (int i = 0; i < g_n_setters; i++) known |= g_setters[i].reg == reg;
        if (!known && g_n_setters < MAX_SETTERS) {
            g_setters[g_n_setters].reg    = reg;
            g_setters[g_n_setters++].real = (set_abort_fn) p;
            known = true;
        }
        pthread_mutex_unlock(&g_setters_lock);
        if (known) return (void *) wrapped_set_abort_callback;
    }
    return p;
}

GGPROF_API void ggml_backend_cpu_set_abort_callback(ggml_backend_t backend, ggml_abort_callback cb, void *data) {
    REAL_FROM(slot_ggml_backend_cpu_set_abort_callback, ggml_backend_cpu_set_abort_callback);
    /* This may come before the engine knows whether it records (the setter lives in the CPU library, not in
     * libggml-base): remember the callback anyway; the tick callback only forwards to it when idle. */
    if (ggprof_eng.broken) {
        real_ggml_backend_cpu_set_abort_callback(backend, cb, data);
    } else {
        cpu_timing()->set_abort_callback(real_ggml_backend_cpu_set_abort_callback, backend, cb, data);
    }
}

GGPROF_API void ggml_barrier(struct ggml_threadpool *tp) {
    REAL_FROM(slot_ggml_barrier, ggml_barrier);
    if (ggprof_reach_barrier_via_gomp()) {
        real_ggml_barrier(tp); /* its GOMP_barrier call is timed below */
        return;
    }
    cpu_timing()->barrier(real_ggml_barrier, tp);
}

/* In OpenMP builds ggml_barrier is `#pragma omp barrier`: a call to libgomp's GOMP_barrier, a shared library's
 * function that the program reaches through its PLT. Where ggml is inside the program, LTO inlines ggml_barrier
 * into its callers (114 call sites in the fixture's static llama-completion, 1 call left to the function): there
 * the waits are timed here instead, the same waits (ggml_barrier returns early only with one thread, where no
 * GOMP_barrier is called either). Which of the two times them is decided once, when ggml is found (reach.c): no
 * thread-local state on this path, which every thread takes at every barrier. */
static void (*_Atomic g_real_gomp_barrier)(void);
static void gomp_barrier_call(struct ggml_threadpool *tp) {
    (void) tp;
    atomic_load_explicit(&g_real_gomp_barrier, memory_order_relaxed)();
}

GGPROF_API void GOMP_barrier(void);
GGPROF_API void GOMP_barrier(void) {
    REAL(GOMP_barrier);
    if (!ggprof_reach_barrier_via_gomp()) {
        real_GOMP_barrier();
        return;
    }
    /* Stored once: every thread passes here at every barrier, and a store each time would move the line between
     * the CPUs at each one (about 470 TSC cycles a move on the 2-CPU VM it was measured on). */
    if (atomic_load_explicit(&g_real_gomp_barrier, memory_order_relaxed) != real_GOMP_barrier) {
        atomic_store_explicit(&g_real_gomp_barrier, real_GOMP_barrier, memory_order_relaxed);
    }
    cpu_timing()->barrier(gomp_barrier_call, NULL);
}

GGPROF_API enum ggml_status ggml_graph_compute(struct ggml_cgraph *cgraph, struct ggml_cplan *cplan) {
    REAL_FROM(slot_ggml_graph_compute, ggml_graph_compute);
    /* The threads the plan asks for (ggml_cplan.n_threads follows work_size and work_data in every release):
     * with one, ggml's barriers return at once and the tick's barrier is not timed; and noted each time it exceeds
     * the most noted: `ggprof report`'s Threads against the CPUs (analyzer/threads.c). */
    int nt = cplan ? *(const int *) ((const char *) cplan + 2 * sizeof(void *)) : 0;
    cpu_timing()->graph_compute_entry(nt);
    graphs_began(); /* a program that computes without the scheduler */
    static _Atomic int most_threads;
    int was = atomic_load(&most_threads);
    if (nt > was && nt < 65536 && atomic_compare_exchange_strong(&most_threads, &was, nt)) {
        ggprof_msg_cpu_plan m = { { sizeof(m), GGPROF_MSG_CPU_PLAN, 0 }, nt, 0 }; /* the number, for the readers */
        ggprof_emit(&m.h);
        ggprof_trace_note("CPU threads: %d", nt);
    }
    return real_ggml_graph_compute(cgraph, cplan);
}

/* OpenMP builds call omp_get_thread_num once per thread, right after the team started (ggml_graph_compute):
 * on thread 0 that is the end of the kick-off. */
GGPROF_API int omp_get_thread_num(void) {
    REAL(omp_get_thread_num);
    cpu_timing()->thread_start();
    return real_omp_get_thread_num();
}

/* A CPU backend made outside any scheduler (a program that computes with ggml_backend_graph_compute): where ggml is
 * inside the program, its table is hooked here, since no scheduler will show it. */
GGPROF_API ggml_backend_t ggml_backend_cpu_init(void) {
    REAL_FROM(slot_ggml_backend_cpu_init, ggml_backend_cpu_init);
    ggml_backend_t b = real_ggml_backend_cpu_init();
    if (b && ggprof_engine_ready((const void *) real_ggml_backend_cpu_init)) hook_backend_iface(b, true);
    return b;
}

/* A backend freed: the CPU timing forgets it (ggml may hand its address to the next backend it makes). Before the
 * real free, which may be the last use of the address. */
GGPROF_API void ggml_backend_free(ggml_backend_t backend) {
    REAL_FROM(slot_ggml_backend_free, ggml_backend_free);
    const ggprof_cpu_timing *cpu = atomic_load_explicit(&ggprof_cpu, memory_order_acquire);
    if (backend && cpu) cpu->backend_freed(backend);
    real_ggml_backend_free(backend);
}

/* The entry points patched where a program or library has ggml inside and calls them directly (reach.c), each
 * with what goes without it. The rest are reached through the backends' tables (graph_compute) or not at all
 * (the graph-building calls: split plans are off there; ggml_is_empty: device ops stay split-level). */
GGPROF_SELF_ALIAS(ggml_backend_sched_graph_compute_async)
GGPROF_SELF_ALIAS(ggml_backend_sched_graph_compute)
GGPROF_SELF_ALIAS(ggml_backend_cpu_init)
GGPROF_SELF_ALIAS(ggml_backend_free)
GGPROF_SELF_ALIAS(ggml_backend_cpu_set_abort_callback)
GGPROF_SELF_ALIAS(ggml_barrier)
GGPROF_SELF_ALIAS(ggml_graph_compute)
GGPROF_SELF_ALIAS(ggml_backend_tensor_copy)
GGPROF_SELF_ALIAS(ggml_backend_tensor_set_async)
GGPROF_SELF_ALIAS(ggml_backend_synchronize)
static const ggprof_entry g_entries[] = {
    { "ggml_backend_sched_graph_compute_async", GGPROF_SELF(ggml_backend_sched_graph_compute_async),
      &slot_ggml_backend_sched_graph_compute_async, "scheduler graphs" },
    { "ggml_backend_sched_graph_compute", GGPROF_SELF(ggml_backend_sched_graph_compute),
      &slot_ggml_backend_sched_graph_compute, "scheduler graphs" },
    { "ggml_backend_cpu_init", GGPROF_SELF(ggml_backend_cpu_init), &slot_ggml_backend_cpu_init,
      "CPU backends computed without a scheduler" },
    { "ggml_backend_free", GGPROF_SELF(ggml_backend_free), &slot_ggml_backend_free,
      "CPU backends made again at a freed one's address" },
    { "ggml_backend_cpu_set_abort_callback", GGPROF_SELF(ggml_backend_cpu_set_abort_callback),
      &slot_ggml_backend_cpu_set_abort_callback, "the program's abort callback behind the tick" },
    { "ggml_barrier", GGPROF_SELF(ggml_barrier), &slot_ggml_barrier, "barrier records" },
    { "ggml_graph_compute", GGPROF_SELF(ggml_graph_compute), &slot_ggml_graph_compute, "the CPU's kick-off time" },
    { "ggml_backend_tensor_copy", GGPROF_SELF(ggml_backend_tensor_copy), &slot_ggml_backend_tensor_copy,
      "copies between backends" },
    { "ggml_backend_tensor_set_async", GGPROF_SELF(ggml_backend_tensor_set_async), &slot_ggml_backend_tensor_set_async,
      "expert copies" },
    { "ggml_backend_synchronize", GGPROF_SELF(ggml_backend_synchronize), &slot_ggml_backend_synchronize,
      "waits for asynchronous backends" },
};

#define N_ENTRIES ((int) (sizeof(g_entries) / sizeof(g_entries[0])))

/* The three lists, made once (at load, one thread). */
static const ggprof_entry *ggprof_interpose_entries(int *n) {
    static ggprof_entry all[N_ENTRIES + 32];
    static int          n_all;
    if (!n_all) {
        const ggprof_entry *(*const more[])(int *) = { ggprof_llama_entries, ggprof_memory_entries };
        memcpy(all, g_entries, sizeof(g_entries));
        n_all = N_ENTRIES;
        for (size_t m = 0; m < sizeof(more) / sizeof(more[0]); m++) {
            int                 nl = 0;
            const ggprof_entry *l  = more[m](&nl);
            for (int i = 0; i < nl && n_all < (int) (sizeof(all) / sizeof(all[0])); i++) all[n_all++] = l[i];
        }
    }
    *n = n_all;
    return all;
}

/* reach.c is handed them before it looks at the program (its constructor runs after those of priority 101). */
static void __attribute__((constructor(101))) entries_register(void) {
    int                 n = 0;
    const ggprof_entry *e = ggprof_interpose_entries(&n);
    ggprof_reach_set_entries(e, n);
}
