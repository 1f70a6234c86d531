/* Unit tests of the CPU_OPS compact form (schema/wire.h): the engine sends a CPU split's raw stamps and the reader
 * converts them (ggprof_cpu_ops_expand). The records must be those the engine made when it converted at the split's
 * end (ring version 5), to the nanosecond: `reference` below is that conversion and that reading, as they were,
 * run beside the new form on random splits (clamps, chunks past GGPROF_CPU_OPS_MAX, stamps out of order). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "harness.h"
#include "store.h"
#include "wire.h"

#define MAX_IV 40000

typedef struct {
    int                 n;
    ggprof_cpu_interval iv[MAX_IV];
} ivs;

static void collect(const ggprof_cpu_interval *iv, void *user) {
    ivs *v = user;
    if (v->n < MAX_IV) v->iv[v->n] = *iv;
    v->n++;
}

/* One split as thread 0 stamped it, and what the engine knew of it in ns. */
typedef struct {
    int      n;
    uint64_t tick[10000], bar_exit[10000], inop_wait[10000];
    uint64_t anchor_stamp, anchor_ns, end_stamp, end_anchor_ns;
    uint64_t start_ns, end_ns, gc_entry, t0_start;
} split;

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(uint64_t below) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return below ? g_rng % below : 0;
}

/* ---- ring version 5: cpu_end's conversion on the computing thread, and the reading of its ns form ---- */

typedef struct {
    uint64_t tick_ns;
    uint32_t barrier_ns, wait_ns;
} v5_op;

static void v5_expand(uint16_t flags, const split *sp, uint64_t start, const v5_op *ops, int n, ivs *out) {
    ggprof_cpu_interval iv;
    uint64_t prev = start;
#define SYNC_TO(kind, end)                                                                                     \
    do {                                                                                                       \
        if ((end) > prev) {                                                                                    \
            memset(&iv, 0, sizeof(iv));                                                                        \
            iv.type = GGPROF_REC_SYNC, iv.sync = (kind), iv.node_index = -1, iv.fused_index = -1;              \
            iv.start_ns = prev, iv.duration_ns = (end) - prev;                                                 \
            collect(&iv, out);                                                                                 \
            prev = (end);                                                                                      \
        }                                                                                                      \
    } while (0)
    uint64_t plan_end = sp->gc_entry, kickoff_end = sp->gc_entry ? sp->t0_start : 0;
    if (flags & GGPROF_CPU_OPS_FIRST) {
        if (plan_end) SYNC_TO(GGPROF_SYNC_CPU_PLAN, plan_end);
        if (kickoff_end) SYNC_TO(GGPROF_SYNC_CPU_KICKOFF, kickoff_end);
    }
    for (int i = 0; i < n; i++) {
        iv.type          = GGPROF_REC_OP;
        iv.sync          = 0;
        iv.node_id       = 0; /* filled by the caller's comparison (ids are copied, not converted) */
        iv.fused_node_id = 0;
        iv.node_index    = 0;
        iv.fused_index   = 0;
        iv.start_ns      = prev;
        iv.duration_ns   = ops[i].tick_ns > prev ? ops[i].tick_ns - prev : 0;
        iv.wait_ns       = ops[i].wait_ns;
        collect(&iv, out);
        if (ops[i].tick_ns > prev) prev = ops[i].tick_ns;
        SYNC_TO(GGPROF_SYNC_CPU_BARRIER, ops[i].tick_ns + ops[i].barrier_ns);
    }
    if (flags & GGPROF_CPU_OPS_LAST) SYNC_TO(GGPROF_SYNC_CPU_JOIN, sp->end_ns);
#undef SYNC_TO
}

static void reference(const split *sp, ivs *out) {
    static v5_op ops[GGPROF_CPU_OPS_MAX];
    double scale = sp->end_stamp > sp->anchor_stamp
                       ? (double) (sp->end_anchor_ns - sp->anchor_ns) / (double) (sp->end_stamp - sp->anchor_stamp)
                       : 1.0;
#define TO_NS(x) (sp->anchor_ns + (uint64_t) (int64_t) ((double) (int64_t) ((x) - sp->anchor_stamp) * scale))
#define SPAN_NS(x) ((uint64_t) (int64_t) ((double) (int64_t) (x) * scale))
    uint64_t start = sp->start_ns, plan_end = sp->gc_entry, kickoff_end = sp->gc_entry ? sp->t0_start : 0;
    uint64_t last_tick = kickoff_end ? kickoff_end : plan_end ? plan_end : start;
    uint64_t op_start  = last_tick;
    uint16_t flags = GGPROF_CPU_OPS_FIRST;
    int      n     = 0;
    for (int k = 0; k < sp->n; k++) {
        v5_op *op     = &ops[n++];
        uint64_t bar  = sp->bar_exit[k] > sp->tick[k] ? SPAN_NS(sp->bar_exit[k] - sp->tick[k]) : 0;
        uint64_t wait = SPAN_NS(sp->inop_wait[k]);
        uint64_t tick = TO_NS(sp->tick[k]);
        tick          = tick > sp->end_ns ? sp->end_ns : tick < last_tick ? last_tick : tick;
        if (bar > sp->end_ns - tick) bar = sp->end_ns - tick;
        uint64_t span = tick > op_start ? tick - op_start : 0;
        if (wait > span) wait = span;
        last_tick     = tick;
        op_start      = tick + bar;
        op->tick_ns    = tick;
        op->barrier_ns = bar > UINT32_MAX ? UINT32_MAX : (uint32_t) bar;
        op->wait_ns    = wait > UINT32_MAX ? UINT32_MAX : (uint32_t) wait;
        if (n == GGPROF_CPU_OPS_MAX && k + 1 < sp->n) {
            v5_expand(flags, sp, start, ops, n, out);
            start = op->tick_ns + op->barrier_ns;
            flags = 0;
            n     = 0;
        }
    }
    v5_expand(flags | GGPROF_CPU_OPS_LAST, sp, start, ops, n, out);
#undef TO_NS
#undef SPAN_NS
}

/* ---- the raw form: cpu_end's copy (kernels/cpu/cpu_ticks.c) and the reader's conversion ---- */

static void raw(const split *sp, ivs *out) {
    static union {
        ggprof_msg_cpu_ops m;
        char bytes[sizeof(ggprof_msg_cpu_ops) + GGPROF_CPU_OPS_MAX * sizeof(ggprof_cpu_op)];
    } u;
    ggprof_msg_cpu_ops *m = &u.m;
    uint64_t start = sp->start_ns, plan_end = sp->gc_entry, kickoff_end = sp->gc_entry ? sp->t0_start : 0;
    uint64_t floor = kickoff_end ? kickoff_end : plan_end ? plan_end : start;
    uint16_t flags = GGPROF_CPU_OPS_FIRST;
    uint32_t n     = 0;
    for (int k = 0; k < sp->n; k++) {
        ggprof_cpu_op *op = &m->ops[n++];
        uint64_t bar = sp->bar_exit[k] > sp->tick[k] ? sp->bar_exit[k] - sp->tick[k] : 0;
        memset(op, 0, sizeof(*op));
        op->tick    = sp->tick[k];
        op->barrier = bar > UINT32_MAX ? UINT32_MAX : (uint32_t) bar;
        op->wait    = sp->inop_wait[k] > UINT32_MAX ? UINT32_MAX : (uint32_t) sp->inop_wait[k];
        bool last   = k + 1 == sp->n;
        if ((n == GGPROF_CPU_OPS_MAX && !last) || last) {
            uint16_t f = flags | (last ? GGPROF_CPU_OPS_LAST : 0);
            m->h = (ggprof_msg_hdr){ (uint32_t) (sizeof(*m) + n * sizeof(ggprof_cpu_op)), GGPROF_MSG_CPU_OPS, f };
            m->n_ops = n, m->start_ns = start, m->plan_end_ns = plan_end, m->kickoff_end_ns = kickoff_end;
            m->end_ns = sp->end_ns, m->floor_ns = floor;
            m->anchor_stamp = sp->anchor_stamp, m->anchor_ns = sp->anchor_ns;
            m->end_stamp = sp->end_stamp, m->end_anchor_ns = sp->end_anchor_ns;
            ggprof_cpu_ops_expand(m, NULL, collect, out);
            if (!last) ggprof_cpu_ops_carry(m, &floor, &start);
            flags = 0;
            n     = 0;
        }
    }
}

/* A split of n ops: stamps at ~2.7 GHz, anchors off by up to err (relative), so that some converted ticks land past
 * the split's end or before its start, where the clamps act; now and then a stamp goes backwards (a thread moved). */
static void make_split(split *sp, int n, double err, int back_every) {
    memset(sp, 0, sizeof(*sp));
    sp->n            = n;
    sp->anchor_stamp = 1000000000000ull + rnd(1u << 30);
    sp->anchor_ns    = 5000000000000ull + rnd(1u << 30);
    sp->start_ns     = sp->anchor_ns - rnd(3000);
    int plan         = (int) rnd(3);
    sp->gc_entry     = plan ? sp->start_ns + rnd(4000) : 0;
    sp->t0_start     = plan == 2 ? sp->gc_entry + rnd(2000) : 0;
    uint64_t t       = sp->anchor_stamp + 5000 + rnd(20000);
    for (int k = 0; k < n; k++) {
        t += 50 + rnd(rnd(4) ? 400 : 40000);
        if (back_every && rnd((uint64_t) back_every) == 0) t -= rnd(2000);
        if (back_every && k % GGPROF_CPU_OPS_MAX == GGPROF_CPU_OPS_MAX - 1) t -= 1500; /* a chunk's last op */
        sp->tick[k]      = t;
        uint64_t r       = rnd(8);
        sp->bar_exit[k]  = r == 0 ? 0 : r == 1 ? t - rnd(100) : t + rnd(r == 2 ? 100000 : 600);
        sp->inop_wait[k] = rnd(3) ? 0 : rnd(r == 3 ? 50000 : 300);
        if (sp->bar_exit[k] > t) t = sp->bar_exit[k];
    }
    sp->end_stamp = t + 1000 + rnd(5000);
    double ns     = (double) (sp->end_stamp - sp->anchor_stamp) / 2.7 * (1.0 + err * ((double) rnd(2001) / 1000.0 - 1.0));
    sp->end_anchor_ns = sp->anchor_ns + (uint64_t) ns;
    int64_t off       = (int64_t) rnd(20000) - 10000;
    sp->end_ns        = sp->end_anchor_ns + (uint64_t) off; /* the split's end as the scheduler wrapper read it */
}

static int same(const ivs *a, const ivs *b) {
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n && i < MAX_IV; i++) {
        const ggprof_cpu_interval *x = &a->iv[i], *y = &b->iv[i];
        if (x->type != y->type || x->sync != y->sync || x->start_ns != y->start_ns ||
            x->duration_ns != y->duration_ns || x->wait_ns != y->wait_ns) {
            fprintf(stderr, "  interval %d differs: type %d/%d sync %d/%d start %llu/%llu dur %llu/%llu wait %llu/%llu\n", i,
                    x->type, y->type, x->sync, y->sync, (unsigned long long) x->start_ns, (unsigned long long) y->start_ns,
                    (unsigned long long) x->duration_ns, (unsigned long long) y->duration_ns,
                    (unsigned long long) x->wait_ns, (unsigned long long) y->wait_ns);
            return 0;
        }
    }
    return 1;
}

/* The raw form gives the version-5 records exactly, on splits of one chunk and of several (the carry), with the
 * anchors right, off (clamps at both ends) and with stamps out of order. */
static void test_raw_stamps_give_the_v5_records(void) {
    static split sp;
    static ivs   a, b;
    static const int    sizes[] = { 1, 2, 7, 300, 4095, 4096, 4097, 8192, 9001 };
    static const double errs[]  = { 0.0, 1e-6, 1e-3, 0.05 };
    int splits = 0, clamped = 0, chunked = 0;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (size_t e = 0; e < sizeof(errs) / sizeof(errs[0]); e++) {
            for (int back = 0; back < 2; back++) {
                make_split(&sp, sizes[s], errs[e], back ? 50 : 0);
                a.n = b.n = 0;
                reference(&sp, &a);
                raw(&sp, &b);
                CHECK(a.n >= sizes[s] && a.n <= MAX_IV);
                if (!same(&a, &b)) {
                    fprintf(stderr, "  split of %d ops, anchor error %g, stamps back: %d\n", sizes[s], errs[e], back);
                    CHECK(0);
                }
                splits++;
                chunked += sizes[s] > GGPROF_CPU_OPS_MAX;
                /* the clamps acted: an op of no time (a tick raised to the previous one, or cut at the end) */
                for (int i = 0; i < a.n; i++) {
                    if (a.iv[i].type == GGPROF_REC_OP && a.iv[i].duration_ns == 0) {
                        clamped++;
                        break;
                    }
                }
            }
        }
    }
    CHECK(splits == 72 && chunked == 24);
    CHECK(clamped >= 8); /* the comparison covers the clamps, not only the plain path */
}

/* Crafted messages (another process writes the ring): anchors that make the scale huge, stamps far from them,
 * an n_ops past the size. Expand gives records inside the split or none, and never reads past the message. */
static void test_crafted_messages(void) {
    static union {
        ggprof_msg_cpu_ops m;
        char bytes[sizeof(ggprof_msg_cpu_ops) + 4 * sizeof(ggprof_cpu_op)];
    } u;
    ggprof_msg_cpu_ops *m = &u.m;
    static ivs v;
    for (int i = 0; i < 2000; i++) {
        for (size_t j = 0; j < sizeof(u.bytes) / 8; j++) ((uint64_t *) u.bytes)[j] = (rnd(2) ? g_rng : rnd(3000));
        m->h     = (ggprof_msg_hdr){ (uint32_t) sizeof(u.bytes), GGPROF_MSG_CPU_OPS, (uint16_t) rnd(4) };
        m->n_ops = (uint32_t) rnd(6); /* 5: past the message's end */
        if (rnd(2)) m->start_ns = 1000, m->floor_ns = 1000, m->end_ns = 100000;
        v.n = 0;
        static ggprof_cpu_op_id ids[4] = { { 1, 0, 0, -1 }, { 2, 3, 1, 2 }, { 4, 0, 2, -1 }, { 5, 0, 3, -1 } };
        ggprof_cpu_ops_expand(m, rnd(2) ? ids : NULL, collect, &v);
        if (m->n_ops > 4) CHECK_EQ_INT(v.n, 0);
        for (int k = 0; k < v.n; k++) {
            if (v.iv[k].type != GGPROF_REC_OP || (m->h.flags & GGPROF_CPU_OPS_FIRST)) continue;
            /* an op's end never passes the split's end, nor its start goes below where the chunk starts */
            if (m->start_ns <= m->end_ns && m->floor_ns <= m->end_ns) CHECK(v.iv[k].start_ns + v.iv[k].duration_ns <= m->end_ns);
        }
    }
}

/* ---- plans: which node each op is, sent once (CPU_OPS_PLAN), kept by the reader (ggprof_cpu_plans) ---- */

static union {
    ggprof_msg_cpu_ops_plan m;
    char bytes[sizeof(ggprof_msg_cpu_ops_plan) + GGPROF_CPU_OPS_MAX * sizeof(ggprof_cpu_op_id)];
} g_plan;

/* The chunk of plan_id (n_total ids) from first, n ids: op i is node 100 + i at place i, fused with the next node
 * every third op; salt moves the ids, for a plan of the same id in another process. */
static const ggprof_msg_hdr *plan_chunk(uint32_t plan_id, uint32_t first, uint32_t n, uint32_t n_total, uint32_t salt) {
    ggprof_msg_cpu_ops_plan *m = &g_plan.m;
    m->h       = (ggprof_msg_hdr){ (uint32_t) (sizeof(*m) + n * sizeof(ggprof_cpu_op_id)), GGPROF_MSG_CPU_OPS_PLAN, 0 };
    m->plan_id = plan_id, m->first = first, m->n = n, m->n_total = n_total;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = first + i;
        m->ids[i]  = (ggprof_cpu_op_id){ 100 + k + salt, k % 3 ? 0 : 200 + k + salt, (int32_t) k, k % 3 ? -1 : (int32_t) k + 1 };
    }
    return &m->h;
}

/* A CPU_OPS chunk of n ops naming plan_id from first, the split's first node at node_start, 1 us an op. */
static ggprof_msg_cpu_ops *ops_chunk(uint32_t plan_id, uint32_t first, uint32_t n, int32_t node_start) {
    static union {
        ggprof_msg_cpu_ops m;
        char bytes[sizeof(ggprof_msg_cpu_ops) + GGPROF_CPU_OPS_MAX * sizeof(ggprof_cpu_op)];
    } u;
    ggprof_msg_cpu_ops *m = &u.m;
    memset(m, 0, sizeof(*m) + n * sizeof(ggprof_cpu_op));
    m->h       = (ggprof_msg_hdr){ (uint32_t) (sizeof(*m) + n * sizeof(ggprof_cpu_op)), GGPROF_MSG_CPU_OPS, 0 };
    m->n_ops   = n, m->plan_id = plan_id, m->first = first, m->node_start = node_start;
    m->start_ns = m->floor_ns = 1000, m->end_ns = 1000 + 1000 * (uint64_t) (n + 1); /* anchors 0: a stamp is its ns */
    for (uint32_t i = 0; i < n; i++) m->ops[i].tick = 1000 + 1000 * (uint64_t) (i + 1);
    return m;
}

/* The ops of a chunk are named by their plan, in and across its chunks, per process; a chunk whose plan (or that
 * part of it) never came is named by none; plans out of order or crafted are refused, never read past. */
static void test_plans_name_the_ops(void) {
    static ivs v;
    ggprof_cpu_plans *t = ggprof_cpu_plans_new();
    CHECK(t != NULL);
    CHECK(ggprof_cpu_plans_find(t, 7, ops_chunk(3, 0, 5, 0)) == NULL); /* nothing yet */
    CHECK_EQ_INT(ggprof_cpu_plans_add(t, 7, plan_chunk(3, 0, GGPROF_CPU_OPS_MAX, 5000, 0)), 0);
    /* the second chunk's ops are not named until the plan's second chunk came */
    ggprof_msg_cpu_ops *m = ops_chunk(3, GGPROF_CPU_OPS_MAX, 904, 10);
    CHECK(ggprof_cpu_plans_find(t, 7, m) == NULL);
    CHECK_EQ_INT(ggprof_cpu_plans_add(t, 7, plan_chunk(3, 4000, 5, 5000, 0)), -1); /* out of order */
    CHECK_EQ_INT(ggprof_cpu_plans_add(t, 7, plan_chunk(3, GGPROF_CPU_OPS_MAX, 904, 5000, 0)), 0);
    const ggprof_cpu_op_id *ids = ggprof_cpu_plans_find(t, 7, m);
    CHECK(ids != NULL);
    v.n = 0;
    ggprof_cpu_ops_expand(m, ids, collect, &v);
    int ops = 0;
    for (int i = 0; i < v.n; i++) {
        const ggprof_cpu_interval *iv = &v.iv[i];
        if (iv->type != GGPROF_REC_OP) continue;
        uint32_t k = GGPROF_CPU_OPS_MAX + (uint32_t) ops++;
        CHECK_EQ_INT(iv->node_id, 100 + k);
        CHECK_EQ_INT(iv->node_index, 10 + (int) k);
        CHECK_EQ_INT(iv->fused_node_id, k % 3 ? 0 : 200 + k);
        CHECK_EQ_INT(iv->fused_index, k % 3 ? -1 : 10 + (int) k + 1);
    }
    CHECK_EQ_INT(ops, 904);
    /* past the plan's end, or another plan id, or another process: none */
    CHECK(ggprof_cpu_plans_find(t, 7, ops_chunk(3, 4990, 11, 0)) == NULL);
    CHECK(ggprof_cpu_plans_find(t, 7, ops_chunk(4, 0, 5, 0)) == NULL);
    CHECK(ggprof_cpu_plans_find(t, 8, ops_chunk(3, 0, 5, 0)) == NULL);
    /* the same plan id in another process is its own plan */
    CHECK_EQ_INT(ggprof_cpu_plans_add(t, 8, plan_chunk(3, 0, 6, 6, 50)), 0);
    ids = ggprof_cpu_plans_find(t, 8, ops_chunk(3, 0, 6, 0));
    CHECK(ids != NULL && ids[5].node_id == 155);
    CHECK_EQ_INT(ggprof_cpu_plans_find(t, 7, ops_chunk(3, 0, 6, 0))[5].node_id, 105);
    /* crafted: no id, ids past the message, a first past the total, more ids than a chunk holds */
    const ggprof_msg_hdr *c = plan_chunk(9, 0, 4, 4, 0);
    ((ggprof_msg_cpu_ops_plan *) &g_plan.m)->plan_id = 0;
    CHECK_EQ_INT(ggprof_cpu_plans_add(t, 7, c), -1);
    c = plan_chunk(9, 0, 4, 4, 0);
    g_plan.m.h.size = (uint32_t) (sizeof(g_plan.m) + 3 * sizeof(ggprof_cpu_op_id));
    CHECK_EQ_INT(ggprof_cpu_plans_add(t, 7, c), -1);
    CHECK_EQ_INT(ggprof_cpu_plans_add(t, 7, plan_chunk(9, 5, 0, 4, 0)), -1);
    c = plan_chunk(9, 0, 4, 4, 0);
    g_plan.m.n = GGPROF_CPU_OPS_MAX + 1;
    CHECK_EQ_INT(ggprof_cpu_plans_add(t, 7, c), -1);
    CHECK(ggprof_cpu_plans_find(t, 7, ops_chunk(9, 0, 1, 0)) == NULL);
    /* many plans: the index grows, every one still found */
    for (uint32_t id = 100; id < 3100; id++) CHECK_EQ_INT(ggprof_cpu_plans_add(t, 9, plan_chunk(id, 0, 2, 2, id)), 0);
    int found = 0;
    for (uint32_t id = 100; id < 3100; id++) {
        ids = ggprof_cpu_plans_find(t, 9, ops_chunk(id, 1, 1, 0));
        found += ids && ids[0].node_id == 101 + id;
    }
    CHECK_EQ_INT(found, 3000);
    ggprof_cpu_plans_free(t);
}

static int64_t q_one(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* The store names ops by the plans it has seen, in whichever order the plan and the ops come (the spill's replay
 * stores descriptions first); ops whose plan never came are not stored, and the trace counts them and says so. */
static void test_store_needs_the_plan(void) {
    char why[256];
    ggprof_store *st = NULL;
    CHECK_EQ_INT(ggprof_store_create(&st, "", why, sizeof(why)), 0);
    if (!st) return;
    ggprof_store_msg(st, 7, 7, &ops_chunk(3, 0, 4, 20)->h); /* plan 3 not seen yet, nor ever */
    CHECK_EQ_INT(ggprof_store_get_counts(st).unplanned, 4);
    CHECK_EQ_INT(ggprof_store_get_counts(st).events, 0);
    ggprof_store_msg(st, 7, 7, plan_chunk(5, 0, 4, 4, 0));
    ggprof_store_msg(st, 7, 7, &ops_chunk(5, 0, 4, 20)->h);
    CHECK_EQ_INT(ggprof_store_get_counts(st).events, 4);
    ggprof_store_msg(st, 8, 8, &ops_chunk(5, 0, 4, 20)->h); /* another process's plan 5: never sent */
    CHECK_EQ_INT(ggprof_store_get_counts(st).unplanned, 8);
    sqlite3 *db = ggprof_store_finish(st, why, sizeof(why));
    CHECK(db != NULL);
    if (!db) return;
    CHECK_EQ_INT(q_one(db, "SELECT count(*) FROM events WHERE pid = 7 AND type = 0 AND node_id BETWEEN 100 AND 103 "
                           "AND node_index BETWEEN 20 AND 23"), 4);
    CHECK_EQ_INT(q_one(db, "SELECT count(*) FROM events WHERE fused_node_id = 200 AND fused_index = 21"), 1);
    CHECK_EQ_INT(q_one(db, "SELECT value FROM meta WHERE key = 'cpu_ops_unplanned'"), 8);
    CHECK_EQ_INT(q_one(db, "SELECT count(*) FROM notes WHERE text LIKE '8 CPU op records left out%'"), 1);
    sqlite3_close(db);
}

int main(void) {
    int failures = 0;
    RUN(test_raw_stamps_give_the_v5_records);
    RUN(test_crafted_messages);
    RUN(test_plans_name_the_ops);
    RUN(test_store_needs_the_plan);
    return failures ? 1 : 0;
}
