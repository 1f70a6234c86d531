/* Where each node of a scheduler graph ran, and why (docs/placement.md): after a recorded scheduler graph, when its
 * plan is new (a graph of another node count or split count than the last this scheduler sent), the backend the
 * scheduler assigned each node (ggml_backend_sched_get_tensor_backend, what GGML_SCHED_DEBUG=2 prints) and, for a node
 * that did not run on the scheduler's best device, why not. Asked once per plan, never per token. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "internal.h"
#include "schedulers.h"

#define MAX_PLANS 64
typedef struct {
    uint32_t sched_id; /* a scheduler freed and another made at its address gets a new id */
    int      n_nodes, n_splits;
} plan_key;
static plan_key        g_plans[MAX_PLANS];
static int             g_n_plans;
static pthread_mutex_t g_plans_lock = PTHREAD_MUTEX_INITIALIZER;

/* True when (n_nodes, n_splits) differs from what this scheduler sent last; remembers it. */
static bool plan_is_new(uint32_t sched_id, int n_nodes, int n_splits) {
    pthread_mutex_lock(&g_plans_lock);
    plan_key *k = NULL;
    for (int i = 0; i < g_n_plans && !k; i++) {
        if (g_plans[i].sched_id == sched_id) k = &g_plans[i];
    }
    if (!k) k = g_n_plans < MAX_PLANS ? &g_plans[g_n_plans++] : &g_plans[sched_id % MAX_PLANS];
    bool fresh = k->sched_id != sched_id || k->n_nodes != n_nodes || k->n_splits != n_splits;
    *k = (plan_key){ sched_id, n_nodes, n_splits };
    pthread_mutex_unlock(&g_plans_lock);
    return fresh;
}

/* The tensor whose memory t is (a view's source), for where it lies. */
static const struct ggml_tensor *memory_of(const struct ggml_tensor *t) {
    for (int i = 0; i < 8 && ggprof_links(t)->view_src; i++) t = ggprof_links(t)->view_src;
    return t;
}

static bool is_view_op(const ggprof_ggml *g, int32_t op) {
    return op == g->op.view || op == g->op.reshape || op == g->op.permute || op == g->op.transpose;
}

/* Node indexes by tensor address (open addressing; index + 1, 0 empty), for the sources of each node. */
typedef struct {
    struct ggml_tensor *const *nodes;
    uint32_t                  *slot, mask;
} node_map;

static uint32_t *map_at(const node_map *m, const struct ggml_tensor *t) {
    uint64_t h = (uint64_t) (uintptr_t) t * 0x9E3779B97F4A7C15ull;
    for (uint32_t i = (uint32_t) (h >> 32) & m->mask;; i = (i + 1) & m->mask) {
        if (m->slot[i] == 0 || m->nodes[m->slot[i] - 1] == t) return &m->slot[i];
    }
}

/* The node that the scheduler's copy of a split input copies: the copy is named "BACKEND#NAME#N"; the nearest node
 * before node `before` named NAME. -1: none. */
static int32_t copied_node(struct ggml_tensor *const *nodes, int before, const struct ggml_tensor *t) {
    const char *name = ggprof_links(t)->name;
    size_t      len  = strnlen(name, GGML_ABI_MAX_NAME);
    const char *a = memchr(name, '#', len), *b = a ? memrchr(name, '#', len) : NULL;
    if (!a || b <= a + 1) return -1;
    size_t n = (size_t) (b - a - 1);
    for (int k = before - 1; k >= 0; k--) {
        const char *kn = nodes[k] ? ggprof_links(nodes[k])->name : "";
        if (strncmp(kn, a + 1, n) == 0 && kn[n] == '\0') return k;
    }
    return -1;
}

/* The node a source of node `at` is, looking through the scheduler's input copies and through view nodes to the
 * node they view; -1: a leaf. */
static int32_t src_node(const ggprof_ggml *g, const node_map *m, const struct ggml_tensor *t, int at) {
    for (int depth = 0; t && depth < 16; depth++) {
        uint32_t v = *map_at(m, t);
        if (v == 0) {
            int32_t k = copied_node(m->nodes, at, t);
            if (k < 0) return -1;
            v = (uint32_t) k + 1;
            t = m->nodes[k];
        }
        if (!is_view_op(g, t->op)) return (int32_t) v - 1;
        at = (int) v - 1;
        t  = ggprof_links(t)->src[0];
    }
    return -1;
}

static int reason_of(const ggprof_ggml *g, ggml_backend_t preferred, const struct ggml_tensor *node) {
    if (g->fn_ggml_backend_supports_op && !g->fn_ggml_backend_supports_op(preferred, node)) {
        return GGPROF_PLACE_UNSUPPORTED;
    }
    bool input = node->flags & GGML_ABI_FLAG_INPUT;
    const struct ggml_tensor_links *l = ggprof_links(node);
    for (int j = 0; j < GGML_ABI_MAX_SRC; j++) {
        if (!l->src[j]) continue;
        const struct ggml_tensor *m = memory_of(l->src[j]);
        if (l->src[j]->flags & GGML_ABI_FLAG_INPUT || m->flags & GGML_ABI_FLAG_INPUT) input = true;
        if (!m->buffer || !g->fn_ggml_backend_buffer_is_host(m->buffer)) continue;
        int usage = g->fn_ggml_backend_buffer_get_usage ? g->fn_ggml_backend_buffer_get_usage(m->buffer) : -1;
        if (usage == GGML_ABI_BUFFER_USAGE_WEIGHTS) return GGPROF_PLACE_WEIGHTS_ON_HOST;
        /* A host buffer that is not the compute buffer: the KV cache kept on the host, an input the program set. */
        if (usage == 0) input = true;
    }
    return input ? GGPROF_PLACE_INPUTS_ON_HOST : GGPROF_PLACE_SCHEDULER;
}

void ggprof_placement_after_graph(ggml_backend_sched_t sched, struct ggml_cgraph *graph, uint64_t graph_id) {
    const ggprof_ggml *g = &ggprof_eng.g;
    if (!sched || !graph || !g->fn_ggml_backend_sched_get_tensor_backend) return;
    int                  n_nodes = g->fn_ggml_graph_n_nodes(graph);
    struct ggml_tensor **nodes   = g->fn_ggml_graph_nodes(graph);
    ggprof_sched        *se      = ggprof_sched_find(sched, false);
    if (!se || n_nodes <= 0 || n_nodes > (1 << 24) || !nodes ||
        !plan_is_new(se->id, n_nodes, g->fn_ggml_backend_sched_get_n_splits(sched))) {
        return;
    }
    GGPROF_GUARD;
    int best = -1; /* the scheduler's highest-priority device */
    for (int i = 0; i < se->n && best < 0; i++) {
        if (!se->is_cpu[i] && se->dev_type[i] != GGML_ABI_DEV_ACCEL) best = i;
    }
    size_t                  sz = sizeof(ggprof_msg_node_places) + GGPROF_NODE_PLACES_CHUNK * sizeof(ggprof_node_place);
    ggprof_msg_node_places *m  = malloc(sz);
    ggprof_node_place      *e  = malloc((size_t) n_nodes * sizeof(*e));
    uint32_t                n  = 0, slots = 1;
    while (slots < 2 * (uint32_t) n_nodes) slots <<= 1;
    node_map map = { nodes, calloc(slots, sizeof(uint32_t)), slots - 1 };
    if (!m || !e || !map.slot) goto out;
    for (int i = 0; i < n_nodes; i++) {
        if (nodes[i]) *map_at(&map, nodes[i]) = (uint32_t) i + 1;
    }
    for (int i = 0; i < n_nodes; i++) {
        struct ggml_tensor *t = nodes[i];
        if (!t || is_view_op(g, t->op)) continue; /* as GGML_SCHED_DEBUG: views run nowhere */
        ggml_backend_t b  = g->fn_ggml_backend_sched_get_tensor_backend(sched, t);
        int            id = b ? ggprof_sched_backend_index(se, b) : -1;
        if (id < 0) continue;
        ggprof_node_place *p = &e[n++];
        *p = (ggprof_node_place){ .node_index = i, .node_id = ggprof_node_id(t), .backend_id = (int16_t) id,
                                  .preferred_backend_id = -1, .reason = GGPROF_PLACE_PREFERRED };
        const struct ggml_tensor_links *l = ggprof_links(t);
        for (int j = 0; j < GGML_ABI_MAX_SRC && j < GGPROF_MAX_SRC; j++) {
            int32_t k = l->src[j] ? src_node(g, &map, l->src[j], i) : -1;
            if (k >= 0) p->src[p->n_src++] = k;
        }
        for (int j = p->n_src; j < GGPROF_MAX_SRC; j++) p->src[j] = -1;
        if (best >= 0 && id != best) {
            p->preferred_backend_id = (int16_t) best;
            p->reason               = (uint16_t) reason_of(g, se->backends[best], t);
        }
    }
    for (uint32_t first = 0; first < n; first += GGPROF_NODE_PLACES_CHUNK) {
        uint32_t k = n - first < GGPROF_NODE_PLACES_CHUNK ? n - first : GGPROF_NODE_PLACES_CHUNK;
        memset(m, 0, sizeof(*m));
        m->h = (ggprof_msg_hdr){ (uint32_t) (sizeof(*m) + k * sizeof(*e)), GGPROF_MSG_NODE_PLACES, 0 };
        m->sched_id = se->id, m->first_entry = first, m->n = k, m->n_total = n, m->graph_id = graph_id;
        memcpy(m->e, e + first, k * sizeof(*e));
        ggprof_emit(&m->h);
    }
out:
    free(m);
    free(e);
    free(map.slot);
}
