/* Node descriptions: each distinct node sent once, referenced by id from then on. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static pthread_mutex_t g_desc_lock = PTHREAD_MUTEX_INITIALIZER;

#define NODE_CACHE_BITS 14
#define NODE_CACHE_SIZE (1u << NODE_CACHE_BITS)
/* Lookups take no lock: an entry's id is written before its key is published. */
static struct {
    _Atomic uint64_t key;
    uint32_t         id;
} g_nodes[NODE_CACHE_SIZE];
static uint32_t g_next_node_id = 1;

/* The key of a node's description runs for every node of every split, on the thread that computes: its words
 * go through four independent multiply lanes, so the multiplies overlap instead of forming one long chain.
 * Each lane step (h ^ w) * K (K odd) is a bijection of both h and w, so two descriptions of the same length
 * that differ in any word always differ in that lane; the lanes and the length are then mixed together. */
#define KEY_MUL 0x9e3779b97f4a7c15ull
static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * KEY_MUL; }

static uint64_t finish(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1;
}

#define KEY_WORDS (2 + 4 + 4 + GGML_ABI_MAX_NAME / 8 + GGML_ABI_MAX_OP_PARAMS / 8 + GGML_ABI_MAX_SRC * 9)

/* The key covers every field the description carries (the whole name buffer: bytes after its NUL only ever
 * make a second, identical description); a collision of two distinct nodes on 64 bits would merge their
 * descriptions, which is why the key is this wide. */
uint64_t ggprof_node_key(const struct ggml_tensor *t, int is_copy) {
    uint64_t w[KEY_WORDS];
    int      n = 0;
    w[n++] = (uint64_t) (uint32_t) t->type | (uint64_t) (uint32_t) t->op << 32;
    w[n++] = (uint64_t) is_copy;
    memcpy(w + n, t->ne, sizeof(t->ne));
    n += 4;
    memcpy(w + n, t->nb, sizeof(t->nb));
    n += 4;
    const struct ggml_tensor_links *l = ggprof_links(t);
    memcpy(w + n, l->name, sizeof(l->name));
    n += GGML_ABI_MAX_NAME / 8;
    if (!is_copy) {
        memcpy(w + n, t->op_params, sizeof(t->op_params));
        n += GGML_ABI_MAX_OP_PARAMS / 8;
        for (int i = 0; i < GGML_ABI_MAX_SRC; i++) {
            const struct ggml_tensor *s = l->src[i];
            if (!s) continue;
            w[n++] = (uint64_t) i << 32 | (uint32_t) s->type;
            memcpy(w + n, s->ne, sizeof(s->ne));
            memcpy(w + n + 4, s->nb, sizeof(s->nb));
            n += 8;
        }
    }
    uint64_t a = 0x243f6a8885a308d3ull, b = 0x13198a2e03707344ull, c = 0xa4093822299f31d0ull, d = 0x082efa98ec4e6c89ull;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        a = mix(a, w[i]);
        b = mix(b, w[i + 1]);
        c = mix(c, w[i + 2]);
        d = mix(d, w[i + 3]);
    }
    for (; i < n; i++) a = mix(a, w[i]);
    return finish(mix(mix(mix(mix((uint64_t) n, a), b), c), d));
}

/* Types are described as they are first seen: this ggml's ggml_type_name has no bound to enumerate up to. */
static uint8_t g_type_sent[256];

static void note_type(int32_t type) {
    if (type < 0 || type > 255 || g_type_sent[type]) return;
    const ggprof_ggml *g = &ggprof_eng.g;
    ggprof_msg_type m;
    memset(&m, 0, sizeof(m));
    m.h         = (ggprof_msg_hdr){ sizeof(m), GGPROF_MSG_TYPE, 0 };
    m.type      = type;
    m.blck_size = (int32_t) g->fn_ggml_blck_size(type);
    m.type_size = g->fn_ggml_type_size(type);
    snprintf(m.name, sizeof(m.name), "%s", g->fn_ggml_type_name(type));
    if (ggprof_emit(&m.h) == 0) g_type_sent[type] = 1;
}

static void describe(ggprof_msg_node *m, const struct ggml_tensor *t, int is_copy) {
    const ggprof_ggml *g = &ggprof_eng.g;
    memset(m, 0, sizeof(*m));
    m->h = (ggprof_msg_hdr){ sizeof(*m), GGPROF_MSG_NODE, 0 };
    const struct ggml_tensor_links *l = ggprof_links(t);
    snprintf(m->tensor_name, sizeof(m->tensor_name), "%.*s", GGML_ABI_MAX_NAME, l->name);
    m->sub_op = -1;
    for (int i = 0; i < GGPROF_MAX_SRC; i++) m->type_src[i] = -1;
    if (is_copy) {
        /* The upstream profiler describes a copy by its input tensor as source 0 and no output. */
        m->out_type = -1;
        m->op_id    = -1;
        m->n_src    = 1;
        for (int d = 0; d < 4; d++) {
            m->ne_src[0][d] = t->ne[d];
            m->nb_src[0][d] = (int64_t) t->nb[d];
        }
        m->type_src[0] = t->type;
        m->nbytes      = g->fn_ggml_nbytes(t);
        note_type(t->type);
        return;
    }
    snprintf(m->op, sizeof(m->op), "%s", g->fn_ggml_op_name(t->op));
    m->op_id = t->op;
    m->out_type = t->type;
    memcpy(m->ne, t->ne, sizeof(m->ne));
    memcpy(m->op_params, t->op_params, sizeof(m->op_params));
    m->nbytes = g->fn_ggml_nbytes(t);
    if (t->op == g->op.unary) {
        m->sub_op = t->op_params[0];
        if (g->fn_ggml_unary_op_name) {
            snprintf(m->sub_op_name, sizeof(m->sub_op_name), "%s", g->fn_ggml_unary_op_name(m->sub_op));
        }
    } else if (t->op == g->op.glu) {
        m->sub_op = t->op_params[0];
        snprintf(m->sub_op_name, sizeof(m->sub_op_name), "%s", g->fn_ggml_glu_op_name(m->sub_op));
    }
    /* n_src counts up to the last present source, as the upstream profiler's record does. */
    for (int i = 0; i < GGPROF_MAX_SRC; i++) {
        const struct ggml_tensor *s = l->src[i];
        if (!s) continue;
        m->n_src = i + 1;
        for (int d = 0; d < 4; d++) {
            m->ne_src[i][d] = s->ne[d];
            m->nb_src[i][d] = (int64_t) s->nb[d];
        }
        m->type_src[i] = s->type;
        note_type(s->type);
    }
    note_type(t->type);
}

/* Descriptions by id, kept once the upstream profiler's C API is in use: its records carry every field of the node. */
static ggprof_msg_node **g_descs;
static uint32_t          g_descs_cap;
static bool              g_keep_descs;

static void keep_description(const ggprof_msg_node *m) {
    if (m->node_id >= g_descs_cap) {
        uint32_t cap = g_descs_cap ? g_descs_cap * 2 : 1024;
        while (cap <= m->node_id) cap *= 2;
        ggprof_msg_node **d = realloc(g_descs, cap * sizeof(*d));
        if (!d) return;
        memset(d + g_descs_cap, 0, (cap - g_descs_cap) * sizeof(*d));
        g_descs     = d;
        g_descs_cap = cap;
    }
    ggprof_msg_node *copy = malloc(sizeof(*copy));
    if (!copy) return;
    *copy = *m;
    free(g_descs[m->node_id]);
    g_descs[m->node_id] = copy;
}

const ggprof_msg_node *ggprof_node_desc(uint32_t id) {
    pthread_mutex_lock(&g_desc_lock);
    const ggprof_msg_node *d = id < g_descs_cap ? g_descs[id] : NULL;
    pthread_mutex_unlock(&g_desc_lock);
    return d;
}

static int find_slot(uint64_t key, uint32_t *pos_out) {
    uint32_t pos = (uint32_t) (key >> (64 - NODE_CACHE_BITS));
    for (uint32_t probe = 0; probe < NODE_CACHE_SIZE; probe++, pos = (pos + 1) & (NODE_CACHE_SIZE - 1)) {
        uint64_t k = atomic_load_explicit(&g_nodes[pos].key, memory_order_acquire);
        if (k == key) {
            *pos_out = pos;
            return 1;
        }
        if (k == 0) break;
    }
    *pos_out = pos;
    return 0;
}

/* Bumped whenever the descriptions sent so far stop counting (a forked child, the C API starting to keep
 * them): ids remembered outside this file are only good for the epoch they were given in. */
static _Atomic uint32_t g_desc_epoch = 1;

uint32_t ggprof_desc_epoch(void) { return atomic_load_explicit(&g_desc_epoch, memory_order_acquire); }

static uint32_t lookup_or_send(const struct ggml_tensor *t, int is_copy, uint64_t key, bool *kept) {
    uint32_t pos;
    if (kept) *kept = false;
    if (find_slot(key, &pos)) {
        if (kept) *kept = true;
        return g_nodes[pos].id;
    }
    pthread_mutex_lock(&g_desc_lock);
    if (find_slot(key, &pos)) { /* another thread described it meanwhile */
        pthread_mutex_unlock(&g_desc_lock);
        if (kept) *kept = true;
        return g_nodes[pos].id;
    }
    ggprof_msg_node m;
    describe(&m, t, is_copy);
    m.node_id = g_next_node_id++;
    /* Cache only what reached the ring, so a dropped description is sent again next time. Past 3/4 full the
     * table stops growing and new descriptions are sent each time: correct, only larger. */
    bool sent = ggprof_emit(&m.h) == 0 || !ggprof_sink_has_ring(); /* no ring: nothing to send again */
    if (g_keep_descs) keep_description(&m);
    if (sent && g_next_node_id <= NODE_CACHE_SIZE * 3 / 4 &&
        atomic_load_explicit(&g_nodes[pos].key, memory_order_relaxed) == 0) {
        g_nodes[pos].id = m.node_id;
        atomic_store_explicit(&g_nodes[pos].key, key, memory_order_release);
        if (kept) *kept = true;
    }
    pthread_mutex_unlock(&g_desc_lock);
    return m.node_id;
}

uint32_t ggprof_node_id(const struct ggml_tensor *t) { return lookup_or_send(t, 0, ggprof_node_key(t, 0), NULL); }
uint32_t ggprof_node_id_keyed(const struct ggml_tensor *t, uint64_t key, bool *kept) {
    return lookup_or_send(t, 0, key, kept);
}
uint32_t ggprof_copy_node_id(const struct ggml_tensor *t) { return lookup_or_send(t, 1, ggprof_node_key(t, 1), NULL); }


/* In a forked child: forget the descriptions sent so far (its trace is its own). */
static void ggprof_desc_after_fork(void) {
    for (uint32_t i = 0; i < NODE_CACHE_SIZE; i++) atomic_store(&g_nodes[i].key, 0);
    atomic_fetch_add(&g_desc_epoch, 1);
    memset(g_type_sent, 0, sizeof(g_type_sent));
    pthread_mutex_init(&g_desc_lock, NULL);
}

static void __attribute__((constructor(101))) desc_register(void) { ggprof_sink_on_fork(ggprof_desc_after_fork); }

void ggprof_desc_keep(void) {
    pthread_mutex_lock(&g_desc_lock);
    if (!g_keep_descs) {
        /* Nodes already described were not kept: forget them, so that each is described (and kept) again. */
        g_keep_descs = true;
        for (uint32_t i = 0; i < NODE_CACHE_SIZE; i++) atomic_store(&g_nodes[i].key, 0);
        atomic_fetch_add(&g_desc_epoch, 1);
    }
    pthread_mutex_unlock(&g_desc_lock);
}
