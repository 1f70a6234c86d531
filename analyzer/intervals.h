/* Time intervals of a trace and the saturating arithmetic on its times: what the accounting of a process
 * (accounting.c) and of its requests (request_time.c) cut wall time with. Header-only (static inline): each file
 * that includes it gets its own copy, and no call crosses the analyzer's layering. Times from a trace may be
 * anything: sums and differences saturate instead of overflowing. */
#ifndef GGPROF_INTERVALS_H
#define GGPROF_INTERVALS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static inline int64_t sat_add(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
static inline int64_t sat_sub(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}
static inline int64_t pos(int64_t v) { return v > 0 ? v : 0; }
static inline int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

typedef struct {
    int64_t a, b;
} ivl;

typedef struct {
    ivl   *v;
    size_t n, cap;
} ivl_list;

/* Appends [a, a + d) (d < 0: empty). Returns 0, or -1 out of memory. */
static inline int ivl_push(ivl_list *l, int64_t a, int64_t d) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        ivl   *v   = realloc(l->v, cap * sizeof(*v));
        if (!v) return -1;
        l->v = v, l->cap = cap;
    }
    l->v[l->n].a   = a;
    l->v[l->n++].b = sat_add(a, pos(d));
    return 0;
}

static inline int ivl_cmp(const void *x, const void *y) {
    const ivl *p = x, *q = y;
    return p->a != q->a ? (p->a < q->a ? -1 : 1) : (p->b != q->b ? (p->b < q->b ? -1 : 1) : 0);
}

/* Sorts and merges overlapping intervals in place; returns their total length. */
static inline int64_t ivl_merge(ivl_list *l) {
    if (!l->n) return 0;
    qsort(l->v, l->n, sizeof(*l->v), ivl_cmp);
    size_t k = 0;
    for (size_t i = 1; i < l->n; i++) {
        if (l->v[i].a <= l->v[k].b) {
            if (l->v[i].b > l->v[k].b) l->v[k].b = l->v[i].b;
        } else {
            l->v[++k] = l->v[i];
        }
    }
    l->n        = k + 1;
    int64_t sum = 0;
    for (size_t i = 0; i < l->n; i++) sum = sat_add(sum, sat_sub(l->v[i].b, l->v[i].a));
    return sum;
}

/* Length of [a, b) covered by the merged list m. */
static inline int64_t ivl_covered(const ivl_list *m, int64_t a, int64_t b) {
    int64_t t = 0;
    size_t  lo = 0, hi = m->n;
    while (lo < hi) { /* the first interval ending after a */
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].b <= a) lo = mid + 1;
        else hi = mid;
    }
    for (size_t i = lo; i < m->n && m->v[i].a < b; i++) {
        int64_t x = m->v[i].a > a ? m->v[i].a : a, y = m->v[i].b < b ? m->v[i].b : b;
        if (y > x) t = sat_add(t, sat_sub(y, x));
    }
    return t;
}

/* The runs of the merged list m outside the merged list u, appended to out (sorted, disjoint). */
static inline int ivl_minus(const ivl_list *m, const ivl_list *u, ivl_list *out) {
    size_t j = 0;
    for (size_t i = 0; i < m->n; i++) {
        int64_t a = m->v[i].a, b = m->v[i].b;
        while (j < u->n && u->v[j].b <= a) j++;
        for (size_t k = j; k < u->n && u->v[k].a < b && a < b; k++) {
            if (u->v[k].a > a && ivl_push(out, a, sat_sub(u->v[k].a, a)) != 0) return -1;
            if (u->v[k].b > a) a = u->v[k].b;
        }
        if (a < b && ivl_push(out, a, sat_sub(b, a)) != 0) return -1;
    }
    return 0;
}

#endif
