/* The accounting's categories laid on each process's wall time, as slices that tile it (accounting.h): what
 * export --chrome's "where the time went" row and the HTML page's lane draw. */
#include <stdlib.h>
#include <string.h>

#include "accounting.h"
#include "accounting_ivls.h"

enum { K_STARTUP, K_LOADING, K_CONTEXT, K_HOST, K_GRAPH, K_BUILD, K_IDLE, K_OTHER, K_N };

/* The stretch each category is cut from (account(), accounting.c): compute per backend and copies share the graphs. */
static int kind_of(const char *name) {
    static const char *const names[K_N] = { GGPROF_ACC_STARTUP,   GGPROF_ACC_LOADING, GGPROF_ACC_CONTEXT,
                                            GGPROF_ACC_HOST_GAPS, NULL,               GGPROF_ACC_GRAPH_BUILD,
                                            GGPROF_ACC_IDLE,      GGPROF_ACC_OTHER };
    for (int k = 0; k < K_N; k++) {
        if (names[k] && strcmp(name, names[k]) == 0) return k;
    }
    return strncmp(name, GGPROF_ACC_COMPUTE, strlen(GGPROF_ACC_COMPUTE)) == 0 || strcmp(name, GGPROF_ACC_COPIES) == 0
               ? K_GRAPH
               : -1;
}

/* t inside one of the merged list m's intervals. */
static int ivl_in(const ivl_list *m, int64_t t) {
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->v[mid].b <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo < m->n && m->v[lo].a <= t;
}

typedef struct {
    ggprof_acc_slice *v;
    size_t            n, cap;
} slice_list;

/* Appends [a, b) as name (NULL: not yet given), merged into the last slice when it continues it. */
static int slice_push(slice_list *l, int64_t a, int64_t b, const char *name) {
    if (b <= a) return 0;
    if (l->n && l->v[l->n - 1].end_ns == a && l->v[l->n - 1].name == name) {
        l->v[l->n - 1].end_ns = b;
        return 0;
    }
    if (l->n == l->cap) {
        size_t            cap = l->cap ? 2 * l->cap : 64;
        ggprof_acc_slice *v   = realloc(l->v, cap * sizeof(*v));
        if (!v) return -1;
        l->v = v, l->cap = cap;
    }
    l->v[l->n++] = (ggprof_acc_slice) { a, b, name };
    return 0;
}

/* The wall cut where account() cut it, each piece given the kind of time it is (the rules of account()). */
static int wall_kinds(const ggprof_acc_proc *p, slice_list *runs, int8_t **kinds) {
    const struct ggprof_acc_ivls *k = p->ivls;
    const ivl_list *lists[] = { &k->g, &k->u, &k->idle, &k->ld, &k->setup };
    int64_t u_end = k->u.n ? clamp(k->u.v[k->u.n - 1].b, k->t_work, p->end_ns) : k->t_work;
    size_t  n = 5;
    for (size_t i = 0; i < 5; i++) n += 2 * lists[i]->n;
    int64_t *t = malloc(n * sizeof(*t));
    if (!t) return -1;
    n = 0;
    t[n++] = p->start_ns, t[n++] = p->end_ns, t[n++] = k->t_use, t[n++] = k->t_work, t[n++] = u_end;
    for (size_t i = 0; i < 5; i++) {
        for (size_t j = 0; j < lists[i]->n; j++) t[n++] = lists[i]->v[j].a, t[n++] = lists[i]->v[j].b;
    }
    for (size_t i = 0; i < n; i++) t[i] = clamp(t[i], p->start_ns, p->end_ns);
    ivl_list pts = { 0 };
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) rc = ivl_push(&pts, t[i], 0);
    free(t);
    if (rc != 0) {
        free(pts.v);
        return -1;
    }
    qsort(pts.v, pts.n, sizeof(*pts.v), ivl_cmp);
    int8_t *kv = NULL;
    for (size_t i = 0; rc == 0 && i + 1 < pts.n; i++) {
        int64_t x = pts.v[i].a, y = pts.v[i + 1].a;
        if (y <= x) continue;
        int kind = x < k->t_use          ? K_STARTUP
                   : x < k->t_work       ? (ivl_in(&k->setup, x) ? (ivl_in(&k->ld, x) ? K_LOADING : K_CONTEXT) : K_HOST)
                   : ivl_in(&k->u, x)    ? (ivl_in(&k->g, x) ? K_GRAPH : K_BUILD)
                   : ivl_in(&k->idle, x) ? K_IDLE
                   : x < u_end           ? K_HOST
                                         : K_OTHER;
        if (runs->n && runs->v[runs->n - 1].end_ns == x && kv[runs->n - 1] == kind) {
            runs->v[runs->n - 1].end_ns = y;
            continue;
        }
        if (runs->n == runs->cap) {
            size_t            cap = runs->cap ? 2 * runs->cap : 64;
            ggprof_acc_slice *v   = realloc(runs->v, cap * sizeof(*v));
            int8_t           *w   = v ? realloc(kv, cap) : NULL;
            if (v) runs->v = v;
            if (!w) {
                rc = -1;
                break;
            }
            kv = w, runs->cap = cap;
        }
        runs->v[runs->n] = (ggprof_acc_slice) { x, y, NULL };
        kv[runs->n++]    = (int8_t) kind;
    }
    free(pts.v);
    *kinds = kv;
    return rc;
}

int ggprof_accounting_slices(const ggprof_acc_proc *p, ggprof_acc_slice **out, size_t *n_out) {
    *out = NULL, *n_out = 0;
    if (!p->ivls || p->end_ns <= p->start_ns) return 0;
    slice_list runs = { 0 }, first = { 0 }, fin = { 0 };
    int8_t    *kinds = NULL;
    int64_t    rem[GGPROF_ACC_MAX_CATS];
    int        of_kind[K_N], other = -1;
    for (int k = 0; k < K_N; k++) of_kind[k] = -1;
    for (size_t i = 0; i < p->n_cats; i++) {
        rem[i]   = p->cats[i].ns;
        int kind = kind_of(p->cats[i].name);
        if (kind == K_OTHER) other = (int) i;
        else if (kind >= 0 && kind != K_GRAPH) of_kind[kind] = (int) i;
    }
    if (wall_kinds(p, &runs, &kinds) != 0) goto fail;
    /* The graphs' time shared by compute per backend, copies and the rest (gi[ng]: given later), each run of graphs
     * given to each its share so far (floor(X q / R) at the run's end X, what is owed carried on): over all of the
     * graphs each gets exactly its q. */
    int64_t R = 0, q[GGPROF_ACC_MAX_CATS + 1], asg[GGPROF_ACC_MAX_CATS + 1] = { 0 };
    int     gi[GGPROF_ACC_MAX_CATS + 1], ng = 0;
    for (size_t i = 0; i < runs.n; i++) {
        if (kinds[i] == K_GRAPH) R = sat_add(R, runs.v[i].end_ns - runs.v[i].start_ns);
    }
    int64_t in_g = 0;
    for (size_t i = 0; i < p->n_cats; i++) {
        if (kind_of(p->cats[i].name) != K_GRAPH) continue;
        q[ng]  = rem[i] < R - in_g ? rem[i] : R - in_g;
        in_g  += q[ng];
        rem[i] -= q[ng];
        gi[ng++] = (int) i;
    }
    q[ng] = R - in_g, gi[ng] = -1;
    int64_t X = 0;
    for (size_t i = 0; i < runs.n; i++) {
        int64_t a = runs.v[i].start_ns, b = runs.v[i].end_ns, len = b - a;
        if (kinds[i] != K_GRAPH) {
            int     c    = of_kind[kinds[i]];
            int64_t take = c < 0 ? 0 : rem[c] < len ? rem[c] : len;
            if (c >= 0) rem[c] -= take;
            if (slice_push(&first, a, a + take, c >= 0 ? p->cats[c].name : NULL) != 0 ||
                slice_push(&first, a + take, b, NULL) != 0)
                goto fail;
            continue;
        }
        int64_t X1 = X + len, left = len, d[GGPROF_ACC_MAX_CATS + 1];
        for (int k = 0; k <= ng; k++) {
            int64_t t = (int64_t) ((__int128) X1 * q[k] / R);
            d[k]      = clamp(t - asg[k], 0, left);
            left -= d[k];
        }
        for (int k = 0; k <= ng && left > 0; k++) {
            int64_t e = q[k] - asg[k] - d[k];
            if (e > left) e = left;
            d[k] += e, left -= e;
        }
        int64_t cur = a;
        for (int k = 0; k <= ng; k++) {
            if (slice_push(&first, cur, cur + d[k], gi[k] >= 0 ? p->cats[gi[k]].name : NULL) != 0) goto fail;
            cur += d[k], asg[k] += d[k];
        }
        if (slice_push(&first, cur, b, NULL) != 0) goto fail;
        X = X1;
    }
    /* What no stretch held (time a category has beyond its stretch: cut short, or counted twice by account()) and
     * "other" go, in time order, to the time no category took. */
    size_t c = 0;
    for (size_t i = 0; i < first.n; i++) {
        int64_t a = first.v[i].start_ns, b = first.v[i].end_ns;
        if (first.v[i].name) {
            if (slice_push(&fin, a, b, first.v[i].name) != 0) goto fail;
            continue;
        }
        while (a < b) {
            while (c < p->n_cats && ((int) c == other || rem[c] <= 0)) c++;
            int         k    = c < p->n_cats ? (int) c : other;
            int64_t     take = k >= 0 && rem[k] < b - a ? rem[k] : b - a;
            const char *name = k >= 0 && rem[k] > 0 ? p->cats[k].name : GGPROF_ACC_OTHER;
            if (k >= 0 && rem[k] > 0) rem[k] -= take;
            else take = b - a;
            if (slice_push(&fin, a, a + take, name) != 0) goto fail;
            a += take;
        }
    }
    free(runs.v), free(first.v), free(kinds);
    *out = fin.v, *n_out = fin.n;
    return 0;
fail:
    free(runs.v), free(first.v), free(fin.v), free(kinds);
    return -1;
}
