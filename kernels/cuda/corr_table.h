/* Launch correlation id -> the ggml split being computed, written on the launching thread, read by CUPTI's. */
#ifndef GGPROF_CORR_TABLE_H
#define GGPROF_CORR_TABLE_H

/* Header-only, no CUDA: tests/unit/test_device_trace.c tests it on any machine.
 *
 * CUPTI reports a kernel long after its launch, on its own thread, with the correlation id of the API call
 * that launched it. The launch callback runs on the launching thread, where ggprof_current_place() knows the
 * split. Correlation ids grow by one per API call, so a direct-mapped table indexed by the id's low bits
 * holds the last 2^16 launches without hashing or locks: an entry is overwritten only after 65,536 more
 * launches, far more than CUPTI keeps unreported between two flushes (every 500 ms). Each entry is a small
 * seqlock (the key is cleared while the place is written, published after it), so a reader never takes half
 * of one launch and half of another. */

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "device_api.h"

#define GGPROF_CORR_BITS 16
#define GGPROF_CORR_SIZE (1u << GGPROF_CORR_BITS)

typedef struct {
    _Atomic uint64_t key;     /* correlation id + 1; 0: empty or being written */
    _Atomic uint64_t word[5]; /* the place, packed */
} ggprof_corr_entry;

typedef struct {
    ggprof_corr_entry e[GGPROF_CORR_SIZE];
} ggprof_corr_table;

static inline void ggprof_corr_put(ggprof_corr_table *t, uint32_t corr, const ggprof_place *p) {
    ggprof_corr_entry *e = &t->e[corr & (GGPROF_CORR_SIZE - 1)];
    atomic_store_explicit(&e->key, 0, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&e->word[0], p->graph_id, memory_order_relaxed);
    atomic_store_explicit(&e->word[1], (uint64_t) p->sched_id << 32 | (uint32_t) p->split_id, memory_order_relaxed);
    atomic_store_explicit(&e->word[2], (uint64_t) (uint32_t) p->backend_id << 32 | (uint32_t) p->node_start,
                          memory_order_relaxed);
    atomic_store_explicit(&e->word[3], (uint64_t) (uint32_t) p->node_index << 32 | (uint32_t) p->n_nodes,
                          memory_order_relaxed);
    atomic_store_explicit(&e->word[4], p->node_id, memory_order_relaxed);
    atomic_store_explicit(&e->key, (uint64_t) corr + 1, memory_order_release);
}

/* True and the place when `corr` was recorded (and not yet overwritten). */
static inline bool ggprof_corr_get(ggprof_corr_table *t, uint32_t corr, ggprof_place *out) {
    ggprof_corr_entry *e = &t->e[corr & (GGPROF_CORR_SIZE - 1)];
    uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
    if (k != (uint64_t) corr + 1) return false;
    uint64_t w0 = atomic_load_explicit(&e->word[0], memory_order_relaxed);
    uint64_t w1 = atomic_load_explicit(&e->word[1], memory_order_relaxed);
    uint64_t w2 = atomic_load_explicit(&e->word[2], memory_order_relaxed);
    uint64_t w3 = atomic_load_explicit(&e->word[3], memory_order_relaxed);
    uint64_t w4 = atomic_load_explicit(&e->word[4], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&e->key, memory_order_relaxed) != k) return false; /* rewritten meanwhile */
    out->graph_id   = w0;
    out->sched_id   = (uint32_t) (w1 >> 32);
    out->split_id   = (int32_t) (uint32_t) w1;
    out->backend_id = (int32_t) (uint32_t) (w2 >> 32);
    out->node_start = (int32_t) (uint32_t) w2;
    out->n_nodes    = (int32_t) (uint32_t) w3;
    out->node_index = (int32_t) (uint32_t) (w3 >> 32);
    out->node_id    = (uint32_t) w4;
    return true;
}

#endif
