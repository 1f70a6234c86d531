/* Unit tests of the shared-memory ring: order, wrap-around, drops, crash visibility, slot reuse, versions,
 * the collector's pacing, drops counted in records, a header the workload scribbled on, claimed slots mapped once,
 * their owners told once. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "ring.h"

static char g_path[256];

typedef struct {
    int      n;
    uint32_t seq[4096];
    int32_t  pid[4096];
} seen_t;

static void on_msg(const ggprof_ring_slot *slot, const ggprof_msg_hdr *m, void *user) {
    seen_t *s = user;
    const ggprof_msg_event *e = (const void *) m;
    if (s->n < 4096) {
        s->seq[s->n] = e->node_id;
        s->pid[s->n] = slot->pid;
    }
    s->n++;
}

static ggprof_msg_event event(uint32_t seq) {
    ggprof_msg_event e;
    memset(&e, 0, sizeof(e));
    e.h       = (ggprof_msg_hdr){ sizeof(e), GGPROF_MSG_EVENT, 0 };
    e.node_id = seq;
    return e;
}

static void fresh(ggprof_ring *c, ggprof_ring *p, uint64_t cap) {
    snprintf(g_path, sizeof(g_path), "/tmp/ggprof-test-ring-%d", (int) getpid());
    unlink(g_path);
    CHECK(ggprof_ring_create(c, g_path, 4, cap, GGPROF_LEVEL_OP) == 0);
    char why[256];
    CHECK(ggprof_ring_attach(p, g_path, why, sizeof(why)) == 0);
}

static void done(ggprof_ring *c, ggprof_ring *p) {
    ggprof_ring_unmap(p);
    ggprof_ring_unmap(c);
    unlink(g_path);
}

static void test_order_and_wrap(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    ggprof_ring_slot *s = ggprof_ring_claim(&p, 11, 12);
    CHECK(s != NULL);
    seen_t seen = { 0 };
    /* 4096 bytes hold 42 events of 96 bytes; writing 1000 in batches of 10 wraps the ring many times. */
    uint32_t next = 0;
    for (int batch = 0; batch < 100; batch++) {
        for (int i = 0; i < 10; i++) {
            ggprof_msg_event e = event(next++);
            CHECK(ggprof_ring_write(&p, s, &e.h) == 0);
        }
        ggprof_ring_drain(&c, on_msg, &seen);
    }
    CHECK_EQ_INT(seen.n, 1000);
    for (int i = 0; i < 1000; i++) CHECK_EQ_INT(seen.seq[i], i);
    CHECK_EQ_INT(seen.pid[0], 11);
    CHECK_EQ_INT(ggprof_ring_dropped(&c), 0);
    done(&c, &p);
}

static void test_full_ring_drops_and_counts(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    ggprof_ring_slot *s = ggprof_ring_claim(&p, 1, 1);
    int written = 0, dropped = 0;
    for (int i = 0; i < 100; i++) {
        ggprof_msg_event e = event((uint32_t) i);
        if (ggprof_ring_write(&p, s, &e.h) == 0) {
            written++;
        } else {
            dropped++;
        }
    }
    CHECK_EQ_INT(written, 4096 / sizeof(ggprof_msg_event));
    CHECK_EQ_INT(ggprof_ring_dropped(&c), dropped);
    seen_t seen = { 0 };
    ggprof_ring_drain(&c, on_msg, &seen);
    CHECK_EQ_INT(seen.n, written);
    for (int i = 0; i < written; i++) CHECK_EQ_INT(seen.seq[i], i); /* the oldest are kept, never overwritten */
    done(&c, &p);
}

static void test_unpublished_message_is_invisible(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    ggprof_ring_slot *s = ggprof_ring_claim(&p, 1, 1);
    ggprof_msg_event e = event(7);
    CHECK(ggprof_ring_write(&p, s, &e.h) == 0);
    /* A producer killed mid-write has copied bytes but not moved the head: simulate with garbage after it. */
    memset((char *) s + GGPROF_SLOT_HDR + sizeof(e), 0xab, 64);
    seen_t seen = { 0 };
    ggprof_ring_drain(&c, on_msg, &seen);
    CHECK_EQ_INT(seen.n, 1);
    CHECK_EQ_INT(seen.seq[0], 7);
    done(&c, &p);
}

/* Messages built in place (ggprof_ring_reserve, then commit) interleave with copied ones, pad the slot's end as a
 * copy does, are invisible until committed, and a full slot answers NULL without counting a drop. */
static void test_built_in_place(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    ggprof_ring_slot *s = ggprof_ring_claim(&p, 1, 1);
    CHECK(ggprof_ring_reserve(&p, NULL, sizeof(ggprof_msg_event)) == NULL);
    seen_t   seen = { 0 };
    uint32_t next = 0;
    for (int round = 0; round < 50; round++) { /* 96-byte events in a 4096-byte slot: the end is padded often */
        for (int i = 0; i < 10; i++) {
            ggprof_msg_event e = event(next++);
            if (i % 2) {
                CHECK(ggprof_ring_write(&p, s, &e.h) == 0);
                continue;
            }
            void *at = ggprof_ring_reserve(&p, s, sizeof(e));
            CHECK(at != NULL);
            if (!at) break;
            memcpy(at, &e, sizeof(e));
            if (i == 4) { /* not yet committed: nothing of it is read */
                ggprof_ring_drain(&c, on_msg, &seen);
                CHECK_EQ_INT(seen.n, (int) next - 1);
            }
            ggprof_ring_commit(&p, s, sizeof(e));
        }
        ggprof_ring_drain(&c, on_msg, &seen);
    }
    CHECK_EQ_INT(seen.n, 500);
    for (int i = 0; i < 500; i++) CHECK_EQ_INT(seen.seq[i], i);
    /* Full: reserve says no and counts nothing; the write that follows drops and counts. */
    int written = 0;
    for (ggprof_msg_event e = event(0); ggprof_ring_write(&p, s, &e.h) == 0; written++) {}
    CHECK(written > 0);
    uint64_t was = ggprof_ring_dropped(&c);
    CHECK(ggprof_ring_reserve(&p, s, sizeof(ggprof_msg_event)) == NULL);
    CHECK_EQ_INT(ggprof_ring_dropped(&c), was);
    done(&c, &p);
}

static void test_released_slot_is_reused_after_drain(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    ggprof_ring_slot *slots[4];
    for (int i = 0; i < 4; i++) CHECK((slots[i] = ggprof_ring_claim(&p, 1, i)) != NULL);
    CHECK(ggprof_ring_claim(&p, 1, 9) == NULL); /* all taken */
    ggprof_msg_event e = event(1);
    ggprof_ring_write(&p, NULL, &e.h);          /* a thread without a slot drops and counts */
    CHECK_EQ_INT(ggprof_ring_dropped(&c), 1);
    CHECK(ggprof_ring_write(&p, slots[2], &e.h) == 0);
    uint32_t woken = ggprof_ring_wake_seen(&c);
    ggprof_ring_release(&p, slots[2]);
    /* The release moved the wake count: a collector about to sleep on the count it read returns at once. */
    CHECK(ggprof_ring_wake_seen(&c) != woken);
    CHECK(ggprof_ring_wait(&c, woken, 60000));
    CHECK(ggprof_ring_claim(&p, 1, 9) == NULL); /* not before its messages are read */
    seen_t seen = { 0 };
    ggprof_ring_drain(&c, on_msg, &seen);
    CHECK_EQ_INT(seen.n, 1);
    CHECK(ggprof_ring_claim(&p, 1, 9) == slots[2]);
    done(&c, &p);
}

/* A poke from another process (here a child: the ring is shared memory) ends a collector's wait early; a wait on
 * a count that did not move ends with the time. */
static void test_wait_ends_on_a_poke_from_another_process(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    uint32_t seen = ggprof_ring_wake_seen(&c);
    CHECK(!ggprof_ring_wait(&c, seen, 1)); /* nothing moved: the 1 ms pass */
    pid_t child = fork();
    if (child == 0) {
        usleep(20000); /* the parent is (almost certainly) asleep by now; if not, the wait returns at once */
        ggprof_ring_poke(&p);
        _exit(0);
    }
    CHECK(child > 0);
    CHECK(ggprof_ring_wait(&c, seen, 60000)); /* woken, not timed out after a minute */
    CHECK(ggprof_ring_wake_seen(&c) != seen);
    waitpid(child, NULL, 0);
    done(&c, &p);
}

static void test_attach_rejects_other_versions(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    ggprof_ring_unmap(&p);
    c.file->version = GGPROF_RING_VERSION + 1;
    char why[256] = "";
    CHECK(ggprof_ring_attach(&p, g_path, why, sizeof(why)) == -1);
    CHECK(strstr(why, "version") != NULL);
    c.file->version = GGPROF_RING_VERSION;
    memcpy(c.file->magic, "NOTRING", 8);
    CHECK(ggprof_ring_attach(&p, g_path, why, sizeof(why)) == -1);
    CHECK(strstr(why, "not a ggprof ring") != NULL);
    ggprof_ring_unmap(&c);
    unlink(g_path);
    CHECK(ggprof_ring_attach(&p, g_path, why, sizeof(why)) == -1);
    CHECK(strstr(why, g_path) != NULL);
}

/* Large messages take the non-temporal copy: their bytes must arrive intact, across the wrap too. */
typedef struct {
    int      n, bad;
} big_seen_t;

static void on_big(const ggprof_ring_slot *slot, const ggprof_msg_hdr *m, void *user) {
    (void) slot;
    big_seen_t *b = user;
    const unsigned char *p = (const unsigned char *) m;
    for (uint32_t i = sizeof(*m); i < m->size; i++) b->bad += p[i] != (unsigned char) (i * 7 + b->n);
    b->n++;
}

static void test_large_messages_arrive_intact(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    ggprof_ring_slot *s = ggprof_ring_claim(&p, 1, 1);
    big_seen_t seen = { 0, 0 };
    union {
        ggprof_msg_hdr h;
        unsigned char  b[1000];
    } m;
    for (int k = 0; k < 40; k++) {
        m.h = (ggprof_msg_hdr){ 1000, GGPROF_MSG_EVENT, 0 };
        for (uint32_t i = sizeof(m.h); i < 1000; i++) m.b[i] = (unsigned char) (i * 7 + k);
        CHECK(ggprof_ring_write(&p, s, &m.h) == 0);
        ggprof_ring_drain(&c, on_big, &seen);
    }
    CHECK_EQ_INT(seen.n, 40);
    CHECK_EQ_INT(seen.bad, 0);
    done(&c, &p);
}

static void write_bytes(ggprof_ring *p, ggprof_ring_slot *s, uint64_t n) { /* in 64-byte messages */
    union {
        ggprof_msg_hdr h;
        unsigned char  b[64];
    } m;
    memset(&m, 0, sizeof(m));
    m.h = (ggprof_msg_hdr){ 64, GGPROF_MSG_EVENT, 0 };
    for (uint64_t i = 0; i < n; i += 64) CHECK(ggprof_ring_write(p, s, &m.h) == 0);
}

static void drop_all(const ggprof_ring_slot *slot, const ggprof_msg_hdr *m, void *user) {
    (void) slot;
    (void) m;
    (void) user;
}

/* The collector drains a slot once it holds drain_at bytes (or always, with 0) and sleeps until a slot would
 * reach it at the rate it saw, 5 ms to max_ms. */
static void test_pacer_drains_when_needed_and_sleeps_by_rate(void) {
    ggprof_ring c, p;
    const uint64_t cap = 64 * 1024;
    fresh(&c, &p, cap);
    ggprof_ring_pacer pacer = { 0, 0, 0 };
    long ms = -1;
    CHECK(!ggprof_ring_pace(&pacer, &c, cap / 4, 200, &ms)); /* nothing written: no drain, longest sleep */
    CHECK_EQ_INT((int) ms, 200);
    ggprof_ring_slot *s = ggprof_ring_claim(&p, 1, 1);
    write_bytes(&p, s, 3 * cap / 16); /* 3/16 of a slot in 200 ms: 1/16 left to a quarter, 67 ms at that rate */
    CHECK(!ggprof_ring_pace(&pacer, &c, cap / 4, 200, &ms));
    CHECK_EQ_INT((int) ms, 66);
    write_bytes(&p, s, cap / 16); /* a quarter: drain; a whole quarter left at 1/16 per 66 ms: capped at 200 */
    CHECK(ggprof_ring_pace(&pacer, &c, cap / 4, 200, &ms));
    CHECK_EQ_INT((int) ms, 200);
    ggprof_ring_drain(&c, drop_all, NULL);
    write_bytes(&p, s, cap); /* a whole slot in 200 ms: a quarter takes 50 ms */
    CHECK(ggprof_ring_pace(&pacer, &c, cap / 4, 200, &ms));
    CHECK_EQ_INT((int) ms, 50);
    ggprof_ring_drain(&c, drop_all, NULL);
    CHECK(!ggprof_ring_pace(&pacer, &c, cap / 4, 200, &ms)); /* nothing new: back to the longest sleep */
    CHECK_EQ_INT((int) ms, 200);
    CHECK(ggprof_ring_pace(&pacer, &c, 0, 50, &ms)); /* drain_at 0: always */
    CHECK_EQ_INT((int) ms, 50);
    ggprof_ring_release(&p, s); /* a finished thread's slot is freed by a drain: drain even when nearly empty */
    CHECK(ggprof_ring_pace(&pacer, &c, cap / 4, 200, &ms));
    done(&c, &p);
}

/* A CPU_OPS message of n ops, no plan or join: n OP records, and a SYNC record per barrier wait. */
static void cpu_ops(ggprof_msg_cpu_ops *m, uint32_t n, uint64_t graph_id) {
    memset(m, 0, sizeof(*m) + n * sizeof(ggprof_cpu_op));
    m->h        = (ggprof_msg_hdr){ (uint32_t) (sizeof(*m) + n * sizeof(ggprof_cpu_op)), GGPROF_MSG_CPU_OPS, 0 };
    m->graph_id = graph_id;
    m->n_ops    = n;
    m->start_ns = 1000;
    m->end_ns   = 1000000; /* anchors all 0: a stamp is its ns */
    for (uint32_t i = 0; i < n; i++) {
        m->ops[i].tick       = 1000 + 10 * (i + 1);
        m->ops[i].barrier    = i % 2 ? 3 : 0; /* every other op waits: a cpu_barrier record */
    }
}

/* Drops are counted in the records the messages carried, not in messages: a CPU_OPS message of 100 ops that did
 * not fit is 150 records lost (100 ops, 50 barrier waits), and the sink learns its graph. */
static void test_drops_are_counted_in_records(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    ggprof_msg_cpu_ops *m = malloc(sizeof(*m) + 100 * sizeof(ggprof_cpu_op));
    cpu_ops(m, 100, 42);
    uint64_t graph = 0;
    CHECK_EQ_INT(ggprof_msg_records(&m->h, &graph), 150);
    CHECK_EQ_INT(graph, 42);
    ggprof_ring_slot *s = ggprof_ring_claim(&p, 1, 1);
    int written = 0, dropped = 0;
    for (int i = 0; i < 5; i++) {
        uint64_t lost = 99, g = 0;
        if (ggprof_ring_write_counted(&p, s, &m->h, &lost, &g) == 0) {
            written++;
            CHECK_EQ_INT(lost, 0);
        } else {
            dropped++;
            CHECK_EQ_INT(lost, 150);
            CHECK_EQ_INT(g, 42);
        }
    }
    ggprof_msg_event e = event(1);
    ggprof_ring_write(&p, NULL, &e.h); /* no slot: one record */
    CHECK(written > 0 && dropped > 0);
    CHECK_EQ_INT(ggprof_ring_dropped(&c), dropped + 1);
    CHECK_EQ_INT(ggprof_ring_dropped_records(&c), 150 * dropped + 1);
    ggprof_ring_release(&p, s); /* recycled: the slot's count moves to the header, the total stays */
    ggprof_ring_drain(&c, drop_all, NULL);
    CHECK_EQ_INT(ggprof_ring_dropped_records(&c), 150 * dropped + 1);
    free(m);
    done(&c, &p);
}

typedef struct {
    uint64_t bytes;
    int      calls;
} chunks_t;

static void count_chunk(const ggprof_ring_slot *slot, const void *bytes, size_t n, void *user) {
    (void) slot;
    (void) bytes;
    chunks_t *c = user;
    c->bytes += n;
    c->calls++;
}

/* The workload can write the header and the slots' heads: the collector sizes nothing from the header after it
 * created the ring, and a head out of the possible range costs that slot's unread bytes only. */
static void test_scribbled_header_and_head(void) {
    ggprof_ring c, p;
    const uint64_t cap = 4096;
    fresh(&c, &p, cap);
    ggprof_ring_slot *s = ggprof_ring_claim(&p, 1, 1);
    write_bytes(&p, s, 1024);
    char why[128];
    CHECK(ggprof_ring_header_intact(&c, why, sizeof(why)));
    c.file->n_slots  = 1u << 20; /* what a hostile workload writes */
    c.file->slot_cap = 1ull << 40;
    CHECK(!ggprof_ring_header_intact(&c, why, sizeof(why)));
    CHECK(strstr(why, "n_slots") && strstr(why, "slot_cap"));
    chunks_t got = { 0, 0 };
    ggprof_ring_drain_raw(&c, count_chunk, &got); /* the old code walked a million slots here: SIGSEGV */
    CHECK_EQ_INT(got.bytes, 1024);
    CHECK_EQ_INT(c.corrupt, 0);
    long ms;
    ggprof_ring_pacer pacer = { 0, 0, 0 };
    ggprof_ring_pace(&pacer, &c, cap / 4, 200, &ms);
    write_bytes(&p, s, 512);
    atomic_store(&s->head, 1ull << 40); /* the old code copied a terabyte from here: EFAULT */
    CHECK(ggprof_ring_pace(&pacer, &c, cap / 4, 200, &ms)); /* the drain is due, to skip it */
    got = (chunks_t){ 0, 0 };
    ggprof_ring_drain_raw(&c, count_chunk, &got);
    CHECK_EQ_INT(got.bytes, 0);
    CHECK_EQ_INT(c.corrupt, 1);
    write_bytes(&p, s, 256); /* the producer goes on from the head it finds: read again */
    ggprof_ring_drain_raw(&c, count_chunk, &got);
    CHECK_EQ_INT(got.bytes, 256);
    CHECK_EQ_INT(c.corrupt, 1);
    atomic_store(&s->tail, 0); /* a tail moved back: the collector's own tail decides what is read */
    ggprof_ring_drain_raw(&c, count_chunk, &got);
    CHECK_EQ_INT(got.bytes, 256);
    atomic_store(&s->head, 5); /* behind what was read */
    ggprof_ring_drain_raw(&c, count_chunk, &got);
    CHECK_EQ_INT(got.bytes, 256);
    CHECK_EQ_INT(c.corrupt, 2);
    done(&c, &p);
}

/* A geometry that overflows the size computation, or that no create makes, is refused at attach. */
static void test_attach_rejects_impossible_geometry(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 4096);
    ggprof_ring_unmap(&p);
    char why[256];
    c.file->n_slots  = 0xffffffffu;
    c.file->slot_cap = 1ull << 62; /* n_slots * (256 + cap) wraps to a small number in 64 bits */
    CHECK(ggprof_ring_attach(&p, g_path, why, sizeof(why)) == -1);
    CHECK(strstr(why, "geometry") != NULL);
    c.file->n_slots  = 4;
    c.file->slot_cap = 4096 + 8; /* not a power of two */
    CHECK(ggprof_ring_attach(&p, g_path, why, sizeof(why)) == -1);
    c.file->slot_cap = 4096;
    CHECK(ggprof_ring_attach(&p, g_path, why, sizeof(why)) == 0);
    done(&c, &p);
}

/* The collector maps a slot once, when it first sees it claimed; a slot handed to another thread is not read again. */
static void test_claimed_slots_mapped_once(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 64u << 10);
    uint32_t seen = ggprof_ring_wake_seen(&c);
    CHECK_EQ_INT(ggprof_ring_map_claimed(&c), 0);
    ggprof_ring_slot *a = ggprof_ring_claim(&p, 1, 1);
    CHECK(ggprof_ring_wake_seen(&c) != seen); /* the claim pokes the collector */
    CHECK_EQ_INT(ggprof_ring_map_claimed(&c), 64u << 10);
    CHECK_EQ_INT(ggprof_ring_map_claimed(&c), 0);
    ggprof_ring_release(&p, a);
    ggprof_ring_drain_raw(&c, NULL, NULL); /* frees it: nothing was written */
    ggprof_ring_slot *b = ggprof_ring_claim(&p, 1, 2);
    CHECK(b == a);
    ggprof_ring_claim(&p, 1, 3);
    CHECK_EQ_INT(ggprof_ring_map_claimed(&c), 64u << 10);
    /* once the producers' graphs compute, a slot claimed is left to the drains */
    ggprof_ring_began(&p);
    CHECK_EQ_INT(atomic_load(&c.file->computing), 1);
    ggprof_ring_slot *d = ggprof_ring_claim(&p, 1, 4);
    CHECK(d != NULL);
    CHECK_EQ_INT(ggprof_ring_map_claimed(&c), 0);
    CHECK_EQ_INT(ggprof_ring_map_claimed(&c), 0); /* nor later */
    done(&c, &p);
}

/* The slots' headers are backed as the ring is made (before a workload runs), so that the collector's first look at
 * every slot does not fault each page in then: each header is resident before anything reads it. */
static void test_slot_headers_backed_at_create(void) {
    ggprof_ring c;
    const uint64_t cap = 4u << 20; /* slots far enough apart that no readahead of the file's first page reaches them */
    snprintf(g_path, sizeof(g_path), "/tmp/ggprof-test-ring-%d", (int) getpid());
    unlink(g_path);
    CHECK(ggprof_ring_create(&c, g_path, 4, cap, GGPROF_LEVEL_OP) == 0); /* no producer attached: nothing read */
    long page = sysconf(_SC_PAGESIZE);
    for (uint32_t i = 0; i < c.n_slots; i++) {
        char *hdr = (char *) c.file + GGPROF_RING_HDR + (size_t) i * (GGPROF_SLOT_HDR + cap);
        unsigned char in = 0;
        CHECK(mincore((void *) ((uintptr_t) hdr & ~(uintptr_t) (page - 1)), (size_t) page, &in) == 0);
        CHECK_EQ_INT(in & 1, 1);
    }
    ggprof_ring_unmap(&c);
    unlink(g_path);
}

/* ggprof_ring_new_owners' callback: the owners in order, as pid * 1000 + tid. */
typedef struct {
    int n, who[8];
} owners_seen;
static void on_owner(int32_t pid, int32_t tid, void *user) {
    owners_seen *o = user;
    if (o->n < 8) o->who[o->n] = pid * 1000 + tid;
    o->n++;
}

/* Each thread that claims a slot is told once, a slot handed to another thread again; a slot claimed whose owner is
 * not written yet (pid 0) is told once it is. */
static void test_new_owners_told_once(void) {
    ggprof_ring c, p;
    fresh(&c, &p, 64u << 10);
    owners_seen o = { 0 };
    CHECK_EQ_INT(ggprof_ring_new_owners(&c, on_owner, &o), 0);
    ggprof_ring_slot *a = ggprof_ring_claim(&p, 7, 11);
    ggprof_ring_claim(&p, 7, 12);
    CHECK_EQ_INT(ggprof_ring_new_owners(&c, on_owner, &o), 2);
    CHECK(o.n == 2 && o.who[0] == 7011 && o.who[1] == 7012);
    CHECK_EQ_INT(ggprof_ring_new_owners(&c, on_owner, &o), 0);
    ggprof_ring_release(&p, a);
    CHECK_EQ_INT(ggprof_ring_new_owners(&c, on_owner, &o), 0); /* released, not yet freed: the same owner */
    ggprof_ring_drain_raw(&c, NULL, NULL);
    ggprof_ring_slot *b = ggprof_ring_claim(&p, 7, 13);
    CHECK(b == a);
    b->pid = 0, b->tid = 0; /* as between the claimer's state and its pid */
    CHECK_EQ_INT(ggprof_ring_new_owners(&c, on_owner, &o), 0);
    b->pid = 7, b->tid = 13;
    CHECK_EQ_INT(ggprof_ring_new_owners(&c, on_owner, &o), 1);
    CHECK(o.n == 3 && o.who[2] == 7013);
    done(&c, &p);
}

int main(void) {
    int failures = 0;
    RUN(test_order_and_wrap);
    RUN(test_full_ring_drops_and_counts);
    RUN(test_unpublished_message_is_invisible);
    RUN(test_built_in_place);
    RUN(test_released_slot_is_reused_after_drain);
    RUN(test_wait_ends_on_a_poke_from_another_process);
    RUN(test_attach_rejects_other_versions);
    RUN(test_large_messages_arrive_intact);
    RUN(test_pacer_drains_when_needed_and_sleeps_by_rate);
    RUN(test_drops_are_counted_in_records);
    RUN(test_scribbled_header_and_head);
    RUN(test_attach_rejects_impossible_geometry);
    RUN(test_claimed_slots_mapped_once);
    RUN(test_new_owners_told_once);
    RUN(test_slot_headers_backed_at_create);
    return failures ? 1 : 0;
}
