/* Names that the wire enums stand for, and what the engine and the collector read the same way; readers and
 * writers share them. */
#include "wire.h"

#include "hash.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long ggprof_read_small(const char *path, char *buf, unsigned long len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0) return -1;
    buf[n] = 0;
    return (long) n;
}

int ggprof_proc_thread_parse(const char *stat, const char *schedstat, ggprof_proc_thread *t) {
    unsigned long long cpu, runq, slices, start;
    const char *l = strchr(stat, '('), *r = strrchr(stat, ')');
    if (!l || !r || r < l || r[1] != ' ' || !r[2] || sscanf(schedstat, "%llu %llu %llu", &cpu, &runq, &slices) != 3) {
        return -1;
    }
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%.*s", (int) (r - l - 1), l + 1);
    t->state  = r[2];
    t->cpu_ns = cpu, t->runq_ns = runq, t->slices = slices;
    /* after the name: state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime cutime
     * cstime priority nice num_threads itrealvalue starttime */
    if (sscanf(r + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &start) == 1) {
        t->start_ticks = start;
    }
    return 0;
}

const char *const ggprof_sync_names[GGPROF_SYNC_COUNT] = {
    [GGPROF_SYNC_CPU_PLAN]    = "cpu_plan",
    [GGPROF_SYNC_CPU_KICKOFF] = "cpu_kickoff",
    [GGPROF_SYNC_CPU_BARRIER] = "cpu_barrier",
    [GGPROF_SYNC_CPU_JOIN]    = "cpu_join",
    [GGPROF_SYNC_BACKEND_WAIT] = "backend_wait",
};

/* As the upstream profiler names copies; H2H is ours, for copies between two host buffers. */
const char *const ggprof_copy_names[4] = { "copy_H2D", "copy_D2H", "copy_D2D", "copy_H2H" };

const char *const ggprof_place_reason_names[GGPROF_PLACE_COUNT] = {
    [GGPROF_PLACE_PREFERRED]       = "preferred",
    [GGPROF_PLACE_UNSUPPORTED]     = "unsupported",
    [GGPROF_PLACE_WEIGHTS_ON_HOST] = "weights_on_host",
    [GGPROF_PLACE_INPUTS_ON_HOST]  = "inputs_on_host",
    [GGPROF_PLACE_SCHEDULER]       = "scheduler",
};

/* From stamp units to ns, with the arithmetic the engine used when it converted at the split's end (ring version 5
 * and before): the same operations in the same order, so the ns are the same to the last one. Through signed
 * integers: the spans are far below 2^63, where the conversions give the same values, and x86-64 has an
 * instruction for each way. A product outside int64's range (only a crafted message has one) saturates instead of
 * being converted, which C leaves undefined; the scale is finite (a denominator of at least 1). */
static double cpu_scale(const ggprof_msg_cpu_ops *m) {
    return m->end_stamp > m->anchor_stamp
               ? (double) (m->end_anchor_ns - m->anchor_ns) / (double) (m->end_stamp - m->anchor_stamp)
               : 1.0;
}

static uint64_t cpu_span(int64_t units, double scale) {
    double v = (double) units * scale;
    return (uint64_t) (v >= 0x1p63 ? INT64_MAX : v < -0x1p63 ? INT64_MIN : (int64_t) v);
}

static uint64_t cpu_ns(const ggprof_msg_cpu_ops *m, uint64_t stamp, double scale) {
    return m->anchor_ns + cpu_span((int64_t) (stamp - m->anchor_stamp), scale);
}

/* An op's tick in ns, kept in order and inside the split whatever error the anchors carry: at or after the previous
 * op's (floor), at or before the split's end. */
static uint64_t cpu_clamp(uint64_t tick, uint64_t floor, uint64_t end) {
    return tick > end ? end : tick < floor ? floor : tick;
}

void ggprof_cpu_ops_carry(const ggprof_msg_cpu_ops *m, uint64_t *floor_ns, uint64_t *start_ns) {
    /* The clamped tick of the last op is the clamp of the latest one's (a tick past the end makes every later one the
     * end; otherwise each is the largest so far): one conversion for the chunk, not one an op. "Latest" by the
     * signed distance from the anchor, which the conversion keeps in order. */
    uint32_t at = 0;
    for (uint32_t i = 1; i < m->n_ops; i++) {
        if ((int64_t) (m->ops[i].tick - m->anchor_stamp) >= (int64_t) (m->ops[at].tick - m->anchor_stamp)) at = i;
    }
    double   scale = cpu_scale(m);
    uint64_t tick  = cpu_clamp(cpu_ns(m, m->ops[at].tick, scale), m->floor_ns, m->end_ns);
    uint64_t bar   = cpu_span((int64_t) m->ops[m->n_ops - 1].barrier, scale);
    if (bar > m->end_ns - tick) bar = m->end_ns - tick;
    *floor_ns = tick;
    *start_ns = tick + bar;
}

static uint32_t sat32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t) v; }

/* A node's index in its graph: the split's first node's plus its place (wrapping, as a crafted message may ask). */
static int32_t node_at(int32_t start, int32_t place) { return (int32_t) ((uint32_t) start + (uint32_t) place); }

void ggprof_cpu_ops_expand(const ggprof_msg_cpu_ops *m, const ggprof_cpu_op_id *ids,
                           void (*fn)(const ggprof_cpu_interval *iv, void *user), void *user) {
    if (m->h.size < sizeof(*m) + (size_t) m->n_ops * sizeof(ggprof_cpu_op)) return;
    ggprof_cpu_interval iv;
    uint64_t prev = m->start_ns;
#define SYNC_TO(kind, end)                                                                                     \
    do {                                                                                                       \
        if ((end) > prev) {                                                                                    \
            memset(&iv, 0, sizeof(iv));                                                                        \
            iv.type = GGPROF_REC_SYNC, iv.sync = (kind), iv.node_index = -1, iv.fused_index = -1;              \
            iv.start_ns = prev, iv.duration_ns = (end) - prev;                                                 \
            fn(&iv, user);                                                                                     \
            prev = (end);                                                                                      \
        }                                                                                                      \
    } while (0)
    if (m->h.flags & GGPROF_CPU_OPS_FIRST) {
        if (m->plan_end_ns) SYNC_TO(GGPROF_SYNC_CPU_PLAN, m->plan_end_ns);
        if (m->kickoff_end_ns) SYNC_TO(GGPROF_SYNC_CPU_KICKOFF, m->kickoff_end_ns);
    }
    double   scale = cpu_scale(m);
    uint64_t end = m->end_ns, last_tick = m->floor_ns;
    uint64_t op_start = (m->h.flags & GGPROF_CPU_OPS_FIRST) ? m->floor_ns : m->start_ns; /* the last op's + barrier */
    for (uint32_t i = 0; i < m->n_ops; i++) {
        const ggprof_cpu_op *op = &m->ops[i];
        uint64_t bar  = cpu_span((int64_t) op->barrier, scale);
        uint64_t wait = cpu_span((int64_t) op->wait, scale);
        /* The op inside [its start, the split's end], the barrier after it and its own waits inside what is left
         * to them. */
        uint64_t tick = cpu_clamp(cpu_ns(m, op->tick, scale), last_tick, end);
        if (bar > end - tick) bar = end - tick;
        uint64_t span = tick > op_start ? tick - op_start : 0;
        if (wait > span) wait = span;
        last_tick = tick;
        op_start  = tick + bar;
        uint32_t barrier_ns = sat32(bar);
        iv.type          = GGPROF_REC_OP;
        iv.sync          = 0;
        const ggprof_cpu_op_id *id = ids ? &ids[i] : NULL;
        iv.node_id       = id ? id->node_id : 0;
        iv.fused_node_id = id ? id->fused_node_id : 0;
        iv.node_index    = id ? node_at(m->node_start, id->node) : -1;
        iv.fused_index   = id && id->fused >= 0 ? node_at(m->node_start, id->fused) : -1;
        iv.start_ns      = prev;
        iv.duration_ns   = tick > prev ? tick - prev : 0;
        iv.wait_ns       = sat32(wait);
        fn(&iv, user);
        if (tick > prev) prev = tick;
        SYNC_TO(GGPROF_SYNC_CPU_BARRIER, tick + barrier_ns);
    }
    if (m->h.flags & GGPROF_CPU_OPS_LAST) SYNC_TO(GGPROF_SYNC_CPU_JOIN, m->end_ns);
#undef SYNC_TO
}

/* ---- the plans of CPU_OPS messages, as a reader keeps them */

typedef struct {
    int32_t           pid;
    uint32_t          plan_id;
    uint32_t          n, n_total; /* ids received (in order), and the plan's size */
    ggprof_cpu_op_id *ids;
} cpu_plan;

struct ggprof_cpu_plans {
    cpu_plan    *p;
    size_t       n, cap;
    ggprof_index index;
};

typedef struct {
    int32_t  pid;
    uint32_t plan_id;
} plan_key;

static uint64_t plan_hash(const void *ctx, size_t i) {
    const cpu_plan *p = &((const ggprof_cpu_plans *) ctx)->p[i];
    return ggprof_fnv_pid_id(p->pid, p->plan_id);
}

static int plan_same(const void *ctx, size_t i, const void *key) {
    const cpu_plan *p = &((const ggprof_cpu_plans *) ctx)->p[i];
    const plan_key *k = key;
    return p->pid == k->pid && p->plan_id == k->plan_id;
}

ggprof_cpu_plans *ggprof_cpu_plans_new(void) { return calloc(1, sizeof(ggprof_cpu_plans)); }

void ggprof_cpu_plans_free(ggprof_cpu_plans *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) free(t->p[i].ids);
    free(t->p);
    ggprof_index_free(&t->index);
    free(t);
}

int ggprof_cpu_plans_add(ggprof_cpu_plans *t, int32_t pid, const ggprof_msg_hdr *h) {
    const ggprof_msg_cpu_ops_plan *m = (const void *) h;
    if (h->size < sizeof(*m) || m->plan_id == 0 || m->n > GGPROF_CPU_OPS_MAX ||
        m->n > (h->size - sizeof(*m)) / sizeof(ggprof_cpu_op_id) || m->first > m->n_total || m->n > m->n_total - m->first) {
        return -1;
    }
    if (ggprof_index_reserve(&t->index, 0, t->n, plan_hash, t) != 0) return -1;
    plan_key  key  = { pid, m->plan_id };
    uint32_t *slot = ggprof_index_slot(&t->index, ggprof_fnv_pid_id(pid, m->plan_id), plan_same, t, &key);
    cpu_plan *p;
    if (*slot) {
        p = &t->p[*slot - 1];
        if (m->first == 0) p->n = 0, p->n_total = m->n_total; /* sent again: it starts over */
        if (m->first != p->n || m->n_total != p->n_total) return -1;
    } else {
        if (m->first != 0) return -1; /* its start never came: the rest cannot be placed */
        if (t->n == t->cap) {
            size_t    cap = t->cap ? t->cap * 2 : 64;
            cpu_plan *np  = realloc(t->p, cap * sizeof(*np));
            if (!np) return -1;
            t->p   = np;
            t->cap = cap;
        }
        p     = &t->p[t->n];
        *p    = (cpu_plan){ pid, m->plan_id, 0, m->n_total, NULL };
        *slot = (uint32_t) ++t->n;
    }
    if (m->n) {
        ggprof_cpu_op_id *ids = realloc(p->ids, (size_t) (p->n + m->n) * sizeof(*ids));
        if (!ids) return -1;
        memcpy(ids + p->n, m->ids, (size_t) m->n * sizeof(*ids));
        p->ids = ids;
        p->n += m->n;
    }
    return 0;
}

const ggprof_cpu_op_id *ggprof_cpu_plans_find(const ggprof_cpu_plans *t, int32_t pid, const ggprof_msg_cpu_ops *m) {
    if (!t || m->n_ops == 0 || m->plan_id == 0 || t->n == 0) return NULL;
    plan_key  key  = { pid, m->plan_id };
    uint32_t *slot = ggprof_index_slot(&t->index, ggprof_fnv_pid_id(pid, m->plan_id), plan_same, t, &key);
    if (!*slot) return NULL;
    const cpu_plan *p = &t->p[*slot - 1];
    return m->first <= p->n && m->n_ops <= p->n - m->first ? p->ids + m->first : NULL;
}
