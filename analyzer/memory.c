/* Memory of a trace: buffers over time, compute buffers' peaks, weights and KV cache per layer (memory.h). */
#include "memory.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "sort.h"
#include "v3_format.h"
#include "layer_rule.h"

const char *const ggprof_mem_kind_names[GGPROF_MEM_KINDS] = { "weights", "kv", "compute", "other" };

static int kind_of(const char *s) {
    for (int k = 0; k < GGPROF_MEM_KINDS; k++) {
        if (s && strcmp(s, ggprof_mem_kind_names[k]) == 0) return k;
    }
    return GGPROF_MEM_OTHER;
}

static void copy_text(char *dst, size_t n, const unsigned char *s) { snprintf(dst, n, "%s", s ? (const char *) s : ""); }

#define GROW(arr, n, cap)                                                                                      \
    ((n) < (cap) || ((cap) = (cap) ? 2 * (cap) : 64, ((arr) = realloc_or_free((arr), (cap) * sizeof(*(arr)))) != NULL))
static void *realloc_or_free(void *p, size_t sz) {
    void *q = realloc(p, sz);
    if (!q) free(p);
    return q;
}

static int has_table(sqlite3 *db, const char *name) {
    sqlite3_stmt *st = NULL;
    int           found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

static int load_buffers(sqlite3 *db, ggprof_mem *m) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, buffer_id, name, COALESCE(device, ''), size, kind, alloc_ns,"
                               " COALESCE(free_ns, -1), is_host FROM buffers WHERE size > 0 ORDER BY pid, buffer_id",
                           -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (!GROW(m->bufs, m->n_bufs, cap)) break;
        ggprof_mbuf *b = &m->bufs[m->n_bufs++];
        b->pid = sqlite3_column_int(st, 0);
        b->id  = sqlite3_column_int64(st, 1);
        copy_text(b->name, sizeof(b->name), sqlite3_column_text(st, 2));
        copy_text(b->device, sizeof(b->device), sqlite3_column_text(st, 3));
        b->size     = sqlite3_column_int64(st, 4);
        b->kind     = kind_of((const char *) sqlite3_column_text(st, 5));
        b->alloc_ns = sqlite3_column_int64(st, 6);
        b->free_ns  = sqlite3_column_int64(st, 7);
        b->is_host  = sqlite3_column_int(st, 8);
    }
    sqlite3_finalize(st);
    return m->bufs || !cap ? 0 : -1;
}

static ggprof_mbackend *backend_of(ggprof_mem *m, const ggprof_mbuf *b, size_t *cap) {
    for (size_t i = 0; i < m->n_backends; i++) {
        if (m->backends[i].pid == b->pid && strcmp(m->backends[i].name, b->name) == 0) return &m->backends[i];
    }
    if (!GROW(m->backends, m->n_backends, *cap)) return NULL;
    ggprof_mbackend *x = &m->backends[m->n_backends++];
    memset(x, 0, sizeof(*x));
    x->pid = b->pid;
    snprintf(x->name, sizeof(x->name), "%s", b->name);
    snprintf(x->device, sizeof(x->device), "%s", b->device);
    return x;
}

static int by_time(const void *a, const void *b) {
    const ggprof_mevent *x = a, *y = b;
    if (x->buf->pid != y->buf->pid) return x->buf->pid < y->buf->pid ? -1 : 1;
    if (x->t_ns != y->t_ns) return x->t_ns < y->t_ns ? -1 : 1;
    /* frees before allocations at the same instant: a buffer replaced is not held twice */
    if ((x->delta < 0) != (y->delta < 0)) return x->delta < 0 ? -1 : 1;
    return x->buf->id < y->buf->id ? -1 : x->buf->id > y->buf->id;
}

/* Walks allocations and frees in time order: what each backend and process holds after each, each process's peak,
 * and what each backend held at it. */
static int timeline(ggprof_mem *m) {
    m->events = calloc(2 * m->n_bufs + 1, sizeof(*m->events));
    if (!m->events) return -1;
    for (size_t i = 0; i < m->n_bufs; i++) {
        const ggprof_mbuf *b = &m->bufs[i];
        m->events[m->n_events++] = (ggprof_mevent){ b->alloc_ns, b->size, 0, 0, b };
        if (b->free_ns >= 0) m->events[m->n_events++] = (ggprof_mevent){ b->free_ns, -b->size, 0, 0, b };
    }
    ggprof_sort(m->events, m->n_events, sizeof(*m->events), by_time);
    size_t bcap = 0, pcap = 0;
    for (size_t i = 0; i < m->n_events; i++) {
        ggprof_mevent   *e  = &m->events[i];
        ggprof_mbackend *bk = backend_of(m, e->buf, &bcap);
        if (!bk) return -1;
        if (!m->n_procs || m->procs[m->n_procs - 1].pid != e->buf->pid) {
            if (!GROW(m->procs, m->n_procs, pcap)) return -1;
            m->procs[m->n_procs++] = (ggprof_mproc){ e->buf->pid, 0, 0 };
        }
        ggprof_mproc *p = &m->procs[m->n_procs - 1];
        bk->held += e->delta;
        if (bk->held > bk->max_held) bk->max_held = bk->held;
        int64_t total = 0;
        for (size_t k = 0; k < m->n_backends; k++) {
            if (m->backends[k].pid == p->pid) total += m->backends[k].held;
        }
        e->held_backend = bk->held, e->held_process = total;
        if (total > p->peak_bytes) p->peak_bytes = total, p->peak_ns = e->t_ns;
    }
    /* What each backend held at its process's peak, by kind: the buffers alive at that instant. */
    for (size_t i = 0; i < m->n_bufs; i++) {
        const ggprof_mbuf *b = &m->bufs[i];
        for (size_t j = 0; j < m->n_procs; j++) {
            const ggprof_mproc *p = &m->procs[j];
            if (p->pid != b->pid || b->alloc_ns > p->peak_ns || (b->free_ns >= 0 && b->free_ns <= p->peak_ns)) continue;
            ggprof_mbackend *bk = backend_of(m, b, &bcap);
            if (bk) bk->at_peak[b->kind] += b->size;
        }
    }
    return 0;
}

/* ---- compute buffers' peaks ---- */

typedef struct {
    int32_t idx, node_index, first, last;
    int64_t offset, size;
    char    op[32], tensor[64], ne[64];
} pl_row;

static int by_offset(const void *a, const void *b) {
    const ggprof_mlive *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int by_layer_op(const void *a, const void *b) {
    const ggprof_mlive *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    int c = strcmp(x->op, y->op);
    if (c) return c;
    return x->node_index < y->node_index ? -1 : x->node_index > y->node_index;
}

static int64_t align_up(int64_t v, int64_t a) { return a > 1 ? (v + a - 1) / a * a : v; }

/* One plan's tensors in one compute buffer: the step where they reach furthest, and who is alive there. */
static int plan_peak(const pl_row *r, size_t n, int32_t n_nodes, int64_t align, ggprof_mpeak *out) {
    int64_t best = -1;
    int32_t step = -1;
    for (int32_t s = -1; s < n_nodes; s++) {
        int64_t ext = 0;
        for (size_t i = 0; i < n; i++) {
            if (r[i].first <= s && s <= r[i].last && r[i].offset + align_up(r[i].size, align) > ext) {
                ext = r[i].offset + align_up(r[i].size, align);
            }
        }
        if (ext > best) best = ext, step = s;
    }
    size_t nl = 0;
    for (size_t i = 0; i < n; i++) nl += r[i].first <= step && step <= r[i].last;
    ggprof_mlive *live = calloc(nl + 1, sizeof(*live));
    if (!live) return -1;
    nl = 0;
    for (size_t i = 0; i < n; i++) {
        if (!(r[i].first <= step && step <= r[i].last)) continue;
        ggprof_mlive *l = &live[nl++];
        l->node_index = r[i].node_index;
        l->layer      = ggprof_layer_of(r[i].tensor);
        l->size = r[i].size, l->offset = r[i].offset;
        memcpy(l->op, r[i].op, sizeof(l->op));
        memcpy(l->tensor, r[i].tensor, sizeof(l->tensor));
        memcpy(l->ne, r[i].ne, sizeof(l->ne));
    }
    /* Tensors computed in place share their parent's memory: counted once. */
    ggprof_sort(live, nl, sizeof(*live), by_offset);
    int64_t covered = 0, bytes = 0, end = 0;
    for (size_t i = 0; i < nl; i++) {
        int64_t a = live[i].offset, z = live[i].offset + align_up(live[i].size, align);
        if (i == 0 || live[i].offset != live[i - 1].offset) bytes += live[i].size;
        if (z <= end) continue;
        covered += z - (a > end ? a : end);
        end = z;
    }
    ggprof_sort(live, nl, sizeof(*live), by_layer_op);
    free(out->live);
    out->live = live, out->n_live = nl;
    out->extent = best < 0 ? 0 : best, out->step = step, out->n_nodes = n_nodes;
    out->live_bytes = bytes, out->padding = covered - bytes, out->holes = out->extent - covered;
    return 0;
}

static int load_peaks(sqlite3 *db, ggprof_mem *m) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT p.pid, p.buffer_id, p.plan_id, pl.sched_id, pl.n_nodes, p.idx, p.node_index, p.first,"
                           " p.last, p.offset, p.size, COALESCE(n.op, ''), COALESCE(n.tensor_name, ''),"
                           " COALESCE(n.ne, ''), b.alignment FROM placements p"
                           " JOIN buffers b ON b.pid = p.pid AND b.buffer_id = p.buffer_id AND b.kind = 'compute'"
                           " JOIN plan_list pl ON pl.pid = p.pid AND pl.plan_id = p.plan_id"
                           " LEFT JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id"
                           " WHERE p.root = p.idx AND p.flags & 32 ORDER BY p.pid, p.buffer_id, p.plan_id, p.idx",
                           -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    pl_row *rows = NULL;
    size_t  n = 0, cap = 0, pcap = 0;
    int32_t pid = 0, sched_id = 0, n_nodes = 0;
    int64_t buffer_id = -1, plan_id = -1, align = 1;
    int     rc = 0, more;
    do {
        more = sqlite3_step(st) == SQLITE_ROW;
        int same = more && sqlite3_column_int(st, 0) == pid && sqlite3_column_int64(st, 1) == buffer_id &&
                   sqlite3_column_int64(st, 2) == plan_id;
        if (!same && n) { /* one plan of one buffer read: keep its peak if it is the buffer's largest */
            const ggprof_mbuf *buf = NULL;
            for (size_t i = 0; i < m->n_bufs && !buf; i++) {
                if (m->bufs[i].pid == pid && m->bufs[i].id == buffer_id) buf = &m->bufs[i];
            }
            ggprof_mpeak cand = { 0 };
            if (buf && plan_peak(rows, n, n_nodes, align, &cand) == 0) {
                ggprof_mpeak *slot = NULL;
                for (size_t i = 0; i < m->n_peaks && !slot; i++) {
                    if (m->peaks[i].buf == buf) slot = &m->peaks[i];
                }
                if (!slot && GROW(m->peaks, m->n_peaks, pcap)) {
                    slot = &m->peaks[m->n_peaks++];
                    memset(slot, 0, sizeof(*slot));
                }
                if (slot && (!slot->buf || cand.extent >= slot->extent)) {
                    free(slot->live);
                    *slot          = cand;
                    slot->buf      = buf;
                    slot->plan_id  = plan_id;
                    slot->sched_id = sched_id;
                } else {
                    free(cand.live);
                }
            }
            n = 0;
        }
        if (!more) break;
        pid = sqlite3_column_int(st, 0), buffer_id = sqlite3_column_int64(st, 1), plan_id = sqlite3_column_int64(st, 2);
        sched_id = sqlite3_column_int(st, 3), n_nodes = sqlite3_column_int(st, 4);
        align = sqlite3_column_int64(st, 14);
        if (!GROW(rows, n, cap)) {
            rc = -1;
            break;
        }
        pl_row *r = &rows[n++];
        r->idx = sqlite3_column_int(st, 5), r->node_index = sqlite3_column_int(st, 6);
        r->first = sqlite3_column_int(st, 7), r->last = sqlite3_column_int(st, 8);
        r->offset = sqlite3_column_int64(st, 9), r->size = sqlite3_column_int64(st, 10);
        copy_text(r->op, sizeof(r->op), sqlite3_column_text(st, 11));
        copy_text(r->tensor, sizeof(r->tensor), sqlite3_column_text(st, 12));
        copy_text(r->ne, sizeof(r->ne), sqlite3_column_text(st, 13));
    } while (more);
    sqlite3_finalize(st);
    free(rows);
    /* The node at each peak, whichever buffer it lies in. */
    if (rc == 0 && sqlite3_prepare_v2(db, "SELECT COALESCE(op, ''), COALESCE(tensor_name, '') FROM tensor_placement"
                                          " WHERE pid = ? AND plan_id = ? AND idx = ?", -1, &st, NULL) == SQLITE_OK) {
        for (size_t i = 0; i < m->n_peaks; i++) {
            ggprof_mpeak *p = &m->peaks[i];
            if (p->step < 0) continue;
            sqlite3_bind_int(st, 1, p->buf->pid);
            sqlite3_bind_int64(st, 2, p->plan_id);
            sqlite3_bind_int(st, 3, p->step);
            if (sqlite3_step(st) == SQLITE_ROW) {
                copy_text(p->step_op, sizeof(p->step_op), sqlite3_column_text(st, 0));
                copy_text(p->step_tensor, sizeof(p->step_tensor), sqlite3_column_text(st, 1));
            }
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
    }
    return rc;
}

/* ---- weights and KV cache per layer ---- */

static int load_layers(sqlite3 *db, ggprof_mem *m) {
    sqlite3_stmt *st = NULL;
    /* A tensor the graphs read or write where ggml-alloc did not put it, once per place in its buffer. */
    if (sqlite3_prepare_v2(db,
                           "SELECT p.pid, b.name, b.kind, COALESCE(n.tensor_name, ''),"
                           " COALESCE(ggprof_type_label(t.name, n.out_type), '?'), max(p.size) FROM placements p"
                           " JOIN buffers b ON b.pid = p.pid AND b.buffer_id = p.buffer_id"
                           " LEFT JOIN nodes n ON n.pid = p.pid AND n.node_id = p.node_id"
                           " LEFT JOIN ggml_types t ON t.pid = p.pid AND t.type = n.out_type"
                           " WHERE p.root = p.idx AND NOT p.flags & 32 AND b.kind IN ('weights', 'kv')"
                           " GROUP BY p.pid, p.buffer_id, p.offset ORDER BY 1, 2, 3",
                           -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    size_t cap = 0;
    int    rc  = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int32_t     pid   = sqlite3_column_int(st, 0);
        const char *bk    = (const char *) sqlite3_column_text(st, 1);
        int         kind  = kind_of((const char *) sqlite3_column_text(st, 2));
        int         layer = ggprof_layer_of((const char *) sqlite3_column_text(st, 3));
        const char *type  = (const char *) sqlite3_column_text(st, 4);
        ggprof_mlayer *x  = NULL;
        for (size_t i = 0; i < m->n_layers && !x; i++) {
            ggprof_mlayer *y = &m->layers[i];
            if (y->pid == pid && y->kind == kind && y->layer == layer && strcmp(y->backend, bk ? bk : "") == 0 &&
                strcmp(y->type, type ? type : "") == 0) {
                x = y;
            }
        }
        if (!x) {
            if (!GROW(m->layers, m->n_layers, cap)) {
                rc = -1;
                break;
            }
            x = &m->layers[m->n_layers++];
            memset(x, 0, sizeof(*x));
            x->pid = pid, x->kind = kind, x->layer = layer;
            snprintf(x->backend, sizeof(x->backend), "%s", bk ? bk : "");
            snprintf(x->type, sizeof(x->type), "%s", type ? type : "");
        }
        x->bytes += sqlite3_column_int64(st, 5);
        x->n++;
    }
    sqlite3_finalize(st);
    return rc;
}

static int by_layer(const void *a, const void *b) {
    const ggprof_mlayer *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    int c = strcmp(x->backend, y->backend);
    if (c) return c;
    /* layers in order, what belongs to none (token embeddings, output) last */
    if (x->layer != y->layer) return (unsigned) x->layer < (unsigned) y->layer ? -1 : 1;
    return strcmp(x->type, y->type);
}

static int load_devs(sqlite3 *db, ggprof_mem *m) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, device, moment, t_ns, free, total FROM device_memory ORDER BY pid, t_ns",
                           -1, &st, NULL) != SQLITE_OK) {
        return -1;
    }
    size_t cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW && GROW(m->devs, m->n_devs, cap)) {
        ggprof_mdev *d = &m->devs[m->n_devs++];
        d->pid = sqlite3_column_int(st, 0);
        copy_text(d->device, sizeof(d->device), sqlite3_column_text(st, 1));
        copy_text(d->moment, sizeof(d->moment), sqlite3_column_text(st, 2));
        d->t_ns = sqlite3_column_int64(st, 3), d->free = sqlite3_column_int64(st, 4), d->total = sqlite3_column_int64(st, 5);
    }
    sqlite3_finalize(st);
    return 0;
}

int ggprof_mem_load(sqlite3 *db, ggprof_mem *m, char *why, size_t why_len) {
    memset(m, 0, sizeof(*m));
    if (!has_table(db, "buffer_list")) return 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT min(t) FROM (SELECT min(start_ns) AS t FROM processes UNION ALL"
                               " SELECT min(alloc_ns) FROM buffer_list)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        m->t0 = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    if (load_buffers(db, m) != 0 || timeline(m) != 0 || load_peaks(db, m) != 0 || load_layers(db, m) != 0 ||
        load_devs(db, m) != 0) {
        snprintf(why, why_len, "reading the trace's memory: %s", sqlite3_errmsg(db));
        ggprof_mem_free(m);
        return -1;
    }
    ggprof_sort(m->layers, m->n_layers, sizeof(*m->layers), by_layer);
    if (m->n_bufs == 0) ggprof_mem_free(m); /* nothing held: nothing for the caller to free */
    m->present = m->n_bufs > 0;
    return 0;
}

void ggprof_mem_free(ggprof_mem *m) {
    for (size_t i = 0; i < m->n_peaks; i++) free(m->peaks[i].live);
    free(m->bufs);
    free(m->backends);
    free(m->procs);
    free(m->events);
    free(m->peaks);
    free(m->layers);
    free(m->devs);
    memset(m, 0, sizeof(*m));
}

/* ---- the backends' table: `memory` and `report` ---- */

static const ggprof_col k_backend_cols[] = {
    { "pid", "pid", NULL, 0 },
    { "backend", "backend", NULL, GGPROF_COL_FLEX },
    { "weights", "weights_mib", "%.2f", 0 },
    { "kv", "kv_mib", "%.2f", 0 },
    { "compute", "compute_mib", "%.2f", 0 },
    { "other", "other_mib", "%.2f", 0 },
    { "total", "total_mib", "%.2f", 0 },
    { "max held", "max_held_mib", "%.2f", 0 },
    { "device", "device", NULL, GGPROF_COL_NO_TABLE },
    { "weights_bytes", "weights_bytes", NULL, GGPROF_COL_NO_TABLE },
    { "kv_bytes", "kv_bytes", NULL, GGPROF_COL_NO_TABLE },
    { "compute_bytes", "compute_bytes", NULL, GGPROF_COL_NO_TABLE },
    { "other_bytes", "other_bytes", NULL, GGPROF_COL_NO_TABLE },
    { "total_bytes", "total_bytes", NULL, GGPROF_COL_NO_TABLE },
    { "max_held_bytes", "max_held_bytes", NULL, GGPROF_COL_NO_TABLE },
};

void ggprof_mem_backends_table(ggprof_table *t, const ggprof_mem *m) {
    ggprof_table_init(t, k_backend_cols, sizeof(k_backend_cols) / sizeof(k_backend_cols[0]));
    for (size_t i = 0; i < m->n_backends; i++) {
        const ggprof_mbackend *b = &m->backends[i];
        int64_t total = 0;
        for (int k = 0; k < GGPROF_MEM_KINDS; k++) total += b->at_peak[k];
        ggprof_table_int(t, b->pid);
        ggprof_table_text(t, b->name);
        for (int k = 0; k < GGPROF_MEM_KINDS; k++) ggprof_table_real(t, GGPROF_MIB(b->at_peak[k]));
        ggprof_table_real(t, GGPROF_MIB(total));
        ggprof_table_real(t, GGPROF_MIB(b->max_held));
        ggprof_table_text(t, b->device[0] ? b->device : NULL);
        for (int k = 0; k < GGPROF_MEM_KINDS; k++) ggprof_table_int(t, b->at_peak[k]);
        ggprof_table_int(t, total);
        ggprof_table_int(t, b->max_held);
    }
}

/* The lines around the backends' table: each process's peak, each compute buffer's peak, the devices. */
void ggprof_mem_print_summary(FILE *out, const ggprof_mem *m, const char *indent) {
    char s1[160], s2[160];
    for (size_t i = 0; i < m->n_procs; i++) {
        fprintf(out, "%spid %" PRId32 ": %.2f MiB held at most, %.3f s after the start\n", indent, m->procs[i].pid,
                GGPROF_MIB(m->procs[i].peak_bytes), (double) (m->procs[i].peak_ns - m->t0) / 1e9);
    }
    for (size_t i = 0; i < m->n_peaks; i++) {
        const ggprof_mpeak *p = &m->peaks[i];
        fprintf(out, "%s%s compute buffer %.2f MiB (pid %" PRId32 ", plan %" PRId64 "): peak ", indent,
                ggprof_text_safe(p->buf->name, s1, sizeof(s1)), GGPROF_MIB(p->buf->size), p->buf->pid, p->plan_id);
        if (p->step < 0) {
            fprintf(out, "before the first node");
        } else {
            fprintf(out, "at node %d of %d, %s %s", p->step, p->n_nodes, ggprof_text_safe(p->step_op, s1, sizeof(s1)),
                    ggprof_text_safe(p->step_tensor, s2, sizeof(s2)));
        }
        fprintf(out, "; %zu tensors alive: %.2f MiB + %.1f KiB alignment + %.1f KiB free between them\n", p->n_live,
                GGPROF_MIB(p->live_bytes), (double) p->padding / 1024.0, (double) p->holes / 1024.0);
    }
    for (size_t i = 0; i < m->n_devs; i++) {
        const ggprof_mdev *d = &m->devs[i];
        fprintf(out, "%sdevice %s (pid %" PRId32 "), %s: %.2f MiB free of %.2f MiB\n", indent,
                ggprof_text_safe(d->device, s1, sizeof(s1)), d->pid, ggprof_text_safe(d->moment, s2, sizeof(s2)),
                GGPROF_MIB(d->free), GGPROF_MIB(d->total));
    }
}
