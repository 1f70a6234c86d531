/* FNV-1a, the one non-cryptographic hash of ggprof (interning names, matching groups, keys of graphs). */
#ifndef GGPROF_HASH_H
#define GGPROF_HASH_H

#include <stddef.h>
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

#endif
