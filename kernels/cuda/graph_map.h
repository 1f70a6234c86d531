/* CUDA graph node id -> the ggml node that captured it, and the attribution of one CUPTI kernel record. */
#ifndef GGPROF_GRAPH_MAP_H
#define GGPROF_GRAPH_MAP_H

/* Header-only, no CUDA: tests/unit/test_device_trace.c replays recorded launch, capture and kernel sequences
 * through it on any machine.
 *
 * ggml-cuda records a split's kernels in a CUDA graph (stream capture) and replays it; a replayed kernel's record
 * carries the correlation id of the cudaGraphLaunch (one per replay: which split) and the id of its node in the
 * executable graph (which kernel). The ggml node is known only at capture time:
 * - CUPTI's resource callback GRAPHNODE_CREATED runs on the capturing thread, inside the captured launch, while
 *   the engine marks the ggml node being computed (ggprof_place.node_index): the CUDA node is mapped to that
 *   node's offset in its split (node_index - node_start) and its ggprof node id;
 * - instantiation clones every node (GRAPHNODE_CLONED: clone -> original), and the records name the clone: the
 *   clone takes the original's mapping;
 * - a replay of the graph for a later ggml graph (ggml-cuda reuses or updates the executable graph while the
 *   split's structure is the same) keeps the offsets: the kernel's node is the launching split's node_start plus
 *   the offset. The node id is the capture's: same op, and the shapes of the graph it was captured for.
 * A destroyed node's mapping is dropped (GRAPHNODE_DESTROY_STARTING). A full table maps nothing more (counted by
 * the caller as kernels without a node). Writers are capturing threads, the reader CUPTI's buffer thread: one
 * mutex, taken once per node created and once per replayed kernel record. */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "corr_table.h"
#include "device_api.h"

#define GGPROF_GMAP_BITS 18
#define GGPROF_GMAP_SIZE (1u << GGPROF_GMAP_BITS)

typedef struct {
    uint64_t key;     /* CUDA graph node id; 0: empty */
    int32_t  offset;  /* the ggml node's index in its split */
    uint32_t node_id; /* its ggprof node id */
} ggprof_gmap_entry;

typedef struct {
    pthread_mutex_t   lock;
    uint32_t          n;
    ggprof_gmap_entry e[GGPROF_GMAP_SIZE];
} ggprof_gmap;

#define GGPROF_GMAP_INIT { PTHREAD_MUTEX_INITIALIZER, 0, { { 0, 0, 0 } } }

static inline uint32_t ggprof_gmap_slot(uint64_t key) {
    key *= 0x9e3779b97f4a7c15ull;
    return (uint32_t) (key >> (64 - GGPROF_GMAP_BITS));
}

/* The entry of key, or the empty slot where it would go; called with the lock held. */
static inline ggprof_gmap_entry *ggprof_gmap_find_locked(ggprof_gmap *m, uint64_t key) {
    uint32_t i = ggprof_gmap_slot(key);
    while (m->e[i].key && m->e[i].key != key) i = (i + 1) & (GGPROF_GMAP_SIZE - 1);
    return &m->e[i];
}

/* Maps key; false when the table is (nearly) full. Linear probing stays short below 7/8 full. */
static inline bool ggprof_gmap_put(ggprof_gmap *m, uint64_t key, int32_t offset, uint32_t node_id) {
    if (!key) return false;
    pthread_mutex_lock(&m->lock);
    ggprof_gmap_entry *e = ggprof_gmap_find_locked(m, key);
    bool ok = e->key || m->n < GGPROF_GMAP_SIZE / 8 * 7;
    if (ok) {
        if (!e->key) m->n++;
        *e = (ggprof_gmap_entry){ key, offset, node_id };
    }
    pthread_mutex_unlock(&m->lock);
    return ok;
}

static inline bool ggprof_gmap_get(ggprof_gmap *m, uint64_t key, int32_t *offset, uint32_t *node_id) {
    if (!key) return false;
    pthread_mutex_lock(&m->lock);
    ggprof_gmap_entry *e = ggprof_gmap_find_locked(m, key);
    bool found = e->key != 0;
    if (found) *offset = e->offset, *node_id = e->node_id;
    pthread_mutex_unlock(&m->lock);
    return found;
}

/* Removes key, shifting back the entries after it that probed past its slot (no tombstones). */
static inline void ggprof_gmap_drop(ggprof_gmap *m, uint64_t key) {
    if (!key) return;
    pthread_mutex_lock(&m->lock);
    ggprof_gmap_entry *e = ggprof_gmap_find_locked(m, key);
    if (e->key) {
        uint32_t hole = (uint32_t) (e - m->e), i = hole;
        m->n--;
        for (;;) {
            i = (i + 1) & (GGPROF_GMAP_SIZE - 1);
            if (!m->e[i].key) break;
            uint32_t home = ggprof_gmap_slot(m->e[i].key);
            /* the entry may move to the hole if its home is not in (hole, i] (cyclically) */
            bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
            if (stays) continue;
            m->e[hole] = m->e[i];
            hole       = i;
        }
        m->e[hole].key = 0;
    }
    pthread_mutex_unlock(&m->lock);
}

/* GRAPHNODE_CREATED on the creating thread, whose place is p: a node created while a ggml node is being
 * computed (stream capture of its kernels) is that node's. False: no ggml node current, or the table full. */
static inline bool ggprof_gmap_created(ggprof_gmap *m, uint64_t cuda_node, const ggprof_place *p) {
    if (p->node_index < 0 || p->node_start < 0 || p->node_index < p->node_start) return false;
    return ggprof_gmap_put(m, cuda_node, p->node_index - p->node_start, p->node_id);
}

/* GRAPHNODE_CLONED (instantiation, cudaGraphClone): the clone is its original's node. */
static inline bool ggprof_gmap_cloned(ggprof_gmap *m, uint64_t clone, uint64_t original) {
    int32_t  off;
    uint32_t id;
    return ggprof_gmap_get(m, original, &off, &id) && ggprof_gmap_put(m, clone, off, id);
}

enum ggprof_cuda_attr {
    GGPROF_CUDA_ATTR_NONE  = 0, /* launched outside any ggml split (or its launch was overwritten) */
    GGPROF_CUDA_ATTR_SPLIT = 1, /* the split only */
    GGPROF_CUDA_ATTR_NODE  = 2, /* the split and the node */
};

/* One kernel record: the launch its correlation id names (corr_table.h) gives the split, and the node for a
 * direct launch; a graph kernel's node comes from its graph node id and the launch's node_start. */
static inline enum ggprof_cuda_attr ggprof_cuda_attribute(ggprof_corr_table *t, ggprof_gmap *m, uint32_t corr,
                                                          uint64_t graph_node, ggprof_place *out) {
    if (!ggprof_corr_get(t, corr, out)) return GGPROF_CUDA_ATTR_NONE;
    if (graph_node) {
        int32_t  off;
        uint32_t id;
        out->node_index = -1;
        out->node_id    = 0;
        if (out->node_start >= 0 && ggprof_gmap_get(m, graph_node, &off, &id) && off < out->n_nodes) {
            out->node_index = out->node_start + off;
            out->node_id    = id;
        }
    }
    return out->node_index >= 0 && out->node_id ? GGPROF_CUDA_ATTR_NODE : GGPROF_CUDA_ATTR_SPLIT;
}

#endif
