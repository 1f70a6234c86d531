/* FNV-1a, the one non-cryptographic hash of ggprof (interning names, matching groups, keys of graphs). */
#ifndef GGPROF_HASH_H
#define GGPROF_HASH_H

#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#define GGPROF_FNV_OFFSET 14695981039346656037ull
#define GGPROF_FNV_PRIME  1099511628211ull

/* One step: a byte, or a whole 64-bit word where the words are the unit (pointers, indices). */
static inline uint64_t ggprof_fnv_step(uint64_t h, uint64_t v) { return (h ^ v) * GGPROF_FNV_PRIME; }

static inline uint64_t ggprof_fnv_bytes(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = GGPROF_FNV_OFFSET;
    for (size_t i = 0; i < n; i++) h = ggprof_fnv_step(h, b[i]);
    return h;
}

/* The same over a large block, a 64-bit word per step (the tail byte by byte), each step folding the high bits
 * down so that every bit of a word reaches the low bits of the hash: 8 times fewer steps than ggprof_fnv_bytes,
 * for keys of a kilobyte (node descriptions read from JSON). */
static inline uint64_t ggprof_fnv_words(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = GGPROF_FNV_OFFSET;
    size_t   i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = ggprof_fnv_step(h, w);
        h ^= h >> 31;
    }
    for (; i < n; i++) h = ggprof_fnv_step(h, b[i]);
    return h;
}

static inline uint64_t ggprof_fnv_str(const char *s) {
    uint64_t h = GGPROF_FNV_OFFSET;
    for (; *s; s++) h = ggprof_fnv_step(h, (unsigned char) *s);
    return h;
}

/* A process's object by its id (a node description, a graph). */
static inline uint64_t ggprof_fnv_pid_id(int64_t pid, int64_t id) {
    return ggprof_fnv_step(ggprof_fnv_step(GGPROF_FNV_OFFSET, (uint64_t) pid), (uint64_t) id);
}

/* An open-addressing index over entries the caller keeps in an array of its own (names, nodes, groups): a slot
 * holds an entry's index + 1, 0 when empty, and the table doubles to stay at most half full. One way for every
 * hash table of ggprof's. */
typedef struct {
    uint32_t *slot;
    size_t    n_slot;
} ggprof_index;

/* Room for one more entry beside n: when the table would pass half full it doubles (from 1024 slots), and the
 * entries first..n-1 go back in by hash(ctx, i). 0, or -1 when out of memory. */
static inline int ggprof_index_reserve(ggprof_index *x, size_t first, size_t n, uint64_t (*hash)(const void *ctx, size_t i),
                                       const void *ctx) {
    if ((n + 1) * 2 <= x->n_slot) return 0;
    size_t n_slot = x->n_slot ? x->n_slot * 2 : 1024;
    uint32_t *slot = (uint32_t *) calloc(n_slot, sizeof(*slot));
    if (!slot) return -1;
    for (size_t i = first; i < n; i++) {
        size_t p = hash(ctx, i) & (n_slot - 1);
        while (slot[p]) p = (p + 1) & (n_slot - 1);
        slot[p] = (uint32_t) i + 1;
    }
    free(x->slot);
    x->slot   = slot;
    x->n_slot = n_slot;
    return 0;
}

/* The slot of the entry with hash h for which same(ctx, i, key) holds, or the empty slot where it would go (*slot
 * 0: store its index + 1 there). The index must have slots (ggprof_index_reserve first). */
static inline uint32_t *ggprof_index_slot(const ggprof_index *x, uint64_t h, int (*same)(const void *ctx, size_t i, const void *key),
                                          const void *ctx, const void *key) {
    size_t p = h & (x->n_slot - 1);
    while (x->slot[p] && !same(ctx, x->slot[p] - 1, key)) p = (p + 1) & (x->n_slot - 1);
    return &x->slot[p];
}

static inline void ggprof_index_free(ggprof_index *x) {
    free(x->slot);
    x->slot   = NULL;
    x->n_slot = 0;
}

#endif
