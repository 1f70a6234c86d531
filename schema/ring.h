/* The shared-memory ring between the engine (producers) and the collector (consumer). */
#ifndef GGPROF_RING_H
#define GGPROF_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* The ring is a file (in /dev/shm) of fixed size: a header page, then n_slots single-producer rings.
 * Each producing thread claims a slot of its own, so a producer never waits for another and a process
 * killed mid-write leaves only its unpublished message behind: the head moves after the bytes are in. */
#define GGPROF_RING_MAGIC   "GGPRING"
#define GGPROF_RING_VERSION 8 /* 8: BATCH ends after its sequences; 7: CPU_OPS_PLAN; 6: raw stamps */
#define GGPROF_RING_HDR     4096
#define GGPROF_SLOT_HDR     256

enum { GGPROF_SLOT_FREE = 0, GGPROF_SLOT_CLAIMED = 1, GGPROF_SLOT_DONE = 2 };
#define GGPROF_RING_SERIALIZE 1u
#define GGPROF_RING_ALTERNATE 2u /* half the scheduler graphs at level graph: the engine's cost, measured */
/* flags >> 16: record --sample N, one scheduler graph in N (graph id % N == 0) at the level, the rest at level
 * graph; 0 or 1: every graph at the level. */
#define GGPROF_RING_SAMPLE_SHIFT 16
/* recording: producers record only when it is exactly GGPROF_REC_ON: the program's own switch (ggprof_pause
 * clears GGPROF_REC_PROGRAM_ON) and the collector's capture windows (it sets GGPROF_REC_COLLECTOR_OFF outside
 * them). */
#define GGPROF_REC_PROGRAM_ON    1u
#define GGPROF_REC_COLLECTOR_OFF 2u
#define GGPROF_REC_ON            GGPROF_REC_PROGRAM_ON

/* record --alternate: whether scheduler graph `graph_id` (counted from 0 in each process) is recorded at the
 * level asked for; the others are recorded at level graph only. A fixed pseudo-random half (splitmix64's
 * finalizer, top bit), not every other graph: consecutive graphs of a llama.cpp run can differ by tens of µs
 * with their parity, and a strict alternation would add that difference to the engine's measured cost. */
static inline bool ggprof_alternate_full(uint64_t graph_id) {
    uint64_t z = graph_id + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return ((z ^ (z >> 31)) >> 63) != 0;
}

typedef struct {
    char     magic[8];
    uint32_t version;
    uint32_t n_slots;
    uint64_t slot_cap;          /* data bytes per slot, a power of two */
    uint32_t level;             /* enum ggprof_level, chosen by the collector */
    uint32_t flags;             /* GGPROF_RING_SERIALIZE: time every non-CPU backend node by node;
                                   GGPROF_RING_ALTERNATE: see record --alternate */
    _Atomic uint64_t dropped_noslot; /* messages lost because every slot was taken */
    _Atomic uint32_t n_processes;    /* processes that attached */
    _Atomic uint32_t recording;      /* GGPROF_REC_ON records; see GGPROF_REC_PROGRAM_ON */
    _Atomic uint32_t wake;           /* moves when a producer releases its slot: the collector sleeps on it */
    _Atomic uint64_t dropped_freed;  /* drops counted in slots that were recycled */
    _Atomic uint64_t noslot_records; /* records (ggprof_msg_records) in the dropped_noslot messages */
    _Atomic uint64_t freed_records;  /* records in the dropped_freed messages */
    /* record --duration: a capture window's end (CLOCK_MONOTONIC ns; 0: none). Producers treat the recording as
     * off from then on, so that the window ends on time though the collector, at nice 19 on a machine whose CPUs
     * the workload keeps busy, may wake a quarter of a second late to close it. A newer field in the header's
     * zeroed room, no version bump: an older engine ignores it (the window ends when the collector wakes), an
     * older collector leaves it 0. */
    _Atomic uint64_t off_at_ns;
    /* Processes that began to compute graphs: each adds 1 as its first graph begins (ggprof_ring_began). From then
     * on the collector reads no slot's pages ahead (ggprof_ring_map_claimed), and its sampler takes its longest
     * period at the wake-up that finds the count moved. Zeroed room as above: an older engine leaves it 0 (slots
     * are read ahead all along, as before), an older collector ignores it. */
    _Atomic uint32_t computing;
    uint32_t         pad1;
} ggprof_ring_file;

typedef struct {
    _Atomic uint32_t state;
    int32_t  pid, tid;
    uint32_t pad0;
    char     line0_pad[64 - 16];
    _Atomic uint64_t head;            /* bytes published, written by the producer only */
    _Atomic uint64_t dropped_msgs;    /* messages that did not fit */
    _Atomic uint64_t dropped_bytes;
    _Atomic uint64_t dropped_records; /* records (ggprof_msg_records) those messages carried */
    char     line1_pad[64 - 32];
    _Atomic uint64_t tail;            /* bytes consumed, written by the collector only */
    char     line2_pad[GGPROF_SLOT_HDR - 128 - 8];
} ggprof_ring_slot;

/* Shared by processes built apart (a ring outlives neither side's build, but the collector reads what any engine
 * of the same version wrote): each field where the other side expects it, head and tail on lines of their own. */
_Static_assert(sizeof(ggprof_ring_file) == 96 && sizeof(ggprof_ring_file) <= GGPROF_RING_HDR, "ring header layout");
_Static_assert(sizeof(ggprof_ring_slot) == GGPROF_SLOT_HDR, "slot header layout");
_Static_assert(offsetof(ggprof_ring_slot, head) == 64 && offsetof(ggprof_ring_slot, tail) == 128,
               "a slot's head and tail each on a cache line of its own");

/* The sink's account of what it dropped, graph by graph: a thread keeps the records it could not write (per
 * graph id, GGPROF_GRAPH_ANY once its table is full) and sends them as one LOSS message once its slot accepts
 * again, and when it ends. The counters above stay exact whether or not a LOSS message gets through. */
#define GGPROF_LOSS_MAX   64
#define GGPROF_GRAPH_ANY  UINT64_MAX /* records outside any graph, or of graphs the table had no room to name */
typedef struct {
    uint64_t graph_id;
    uint64_t records;
} ggprof_loss_entry;
typedef struct {
    ggprof_msg_hdr    h;
    uint32_t          n, pad;
    ggprof_loss_entry e[GGPROF_LOSS_MAX];
} ggprof_msg_loss;

/* The records (rows of the trace's events table) a message makes: 1 for an EVENT, a CPU_OPS message's ops and
 * syncs as the collector expands them, 0 for any other kind. *graph_id: the graph they belong to. */
uint64_t ggprof_msg_records(const ggprof_msg_hdr *msg, uint64_t *graph_id);

/* Each side's own copy of the geometry, taken once when it creates or attaches: the header lies in memory the
 * workload can write, so nothing is sized or indexed from it after that. The collector also keeps its own tail of
 * each slot (tails), and counts the times a slot's head was out of the possible range (corrupt). */
typedef struct {
    ggprof_ring_file *file;
    size_t            map_size;
    uint32_t          n_slots;
    uint64_t          slot_cap;
    uint64_t         *tails;   /* collector only: bytes consumed per slot */
    uint64_t         *owners;  /* collector only, in tails' block: the slot's pid << 32 | tid when last seen */
    uint8_t          *mapped;  /* collector only, in tails' block: the slot's pages were read once (map_claimed) */
    uint64_t          corrupt; /* collector only: slots skipped, their head beyond what a producer can write */
} ggprof_ring;

/* Collector side. Errors return -1 with errno set. */
/* A name for a new ring: /dev/shm (or $TMPDIR, or /tmp) / ggprof-TAG-PID-RANDOM.ring, with 64 bits from the
 * kernel's random source, so that no other user can guess it and plant a file or a link there first (and
 * ggprof_ring_create makes it with O_EXCL, mode 0600, whatever happens). */
void ggprof_ring_temp_path(char *buf, size_t len, const char *tag);
/* Removes the rings of this user left in that folder by a maker that no longer runs (a collector or a GGML_PROFILE
 * program killed before it could remove its own: its written pages stay in memory while the name does). A process
 * still mapping one keeps its memory; the name only goes. Returns how many went. */
int  ggprof_ring_sweep(void);
int  ggprof_ring_create(ggprof_ring *r, const char *path, uint32_t n_slots, uint64_t slot_cap, uint32_t level);
/* Collector side: reads one byte of every page of each slot claimed since the last call (a thread's first record
 * claims one and pokes the ring). Under a hypervisor that fills its shadow of the guest's page tables lazily, the
 * collector's first read of each page of its own mapping costs a fault on the host (about 3 us here), which a drain
 * would otherwise pay on every page of a slot's first lap, while the workload computes. Only before the workload's
 * graphs compute (the header's computing still 0): there it is free, a model's load leaving a CPU to spare; once
 * they do, a slot read whole at once (4 MiB, 4-6 ms here) is that long taken from a ggml thread, where a drain reads
 * only what it copies. Returns the bytes read. */
size_t ggprof_ring_map_claimed(ggprof_ring *r);
/* Collector side: calls fn with the pid and tid of each slot's owner not seen there at the last call: a thread that
 * began to record since (its first record claims a slot and pokes the ring). record's /proc sampler follows it from
 * then, not from its next listing of the threads, which waits while graphs compute. Returns how many. */
typedef void (*ggprof_ring_owner_fn)(int32_t pid, int32_t tid, void *user);
size_t ggprof_ring_new_owners(ggprof_ring *r, ggprof_ring_owner_fn fn, void *user);
/* Hands every published byte to fn, in runs of whole messages (PAD messages included), and frees the slots
 * of threads that finished; returns the bytes read. Copying runs rather than messages keeps the collector's
 * share of the CPU small while the workload runs. */
typedef void (*ggprof_ring_chunk_fn)(const ggprof_ring_slot *slot, const void *bytes, size_t n, void *user);
size_t ggprof_ring_drain_raw(ggprof_ring *r, ggprof_ring_chunk_fn fn, void *user);
/* The same, message by message (PAD skipped); returns messages read. */
typedef void (*ggprof_ring_msg_fn)(const ggprof_ring_slot *slot, const ggprof_msg_hdr *msg, void *user);
size_t ggprof_ring_drain(ggprof_ring *r, ggprof_ring_msg_fn fn, void *user);
/* Walks the messages of a run of bytes; returns messages seen, or -1 if a header is corrupt. */
typedef void (*ggprof_msg_fn)(const ggprof_msg_hdr *msg, void *user);
long ggprof_msgs_foreach(const void *bytes, size_t n, ggprof_msg_fn fn, void *user);
uint64_t ggprof_ring_dropped(const ggprof_ring *r);
/* The records those messages carried (ggprof_msg_records), every slot and the header together. */
uint64_t ggprof_ring_dropped_records(const ggprof_ring *r);
/* Collector side: whether the header's geometry (or magic, version) is still what was created; if not, why names
 * the fields the workload changed. */
bool ggprof_ring_header_intact(const ggprof_ring *r, char *why, size_t why_len);
/* Paces a collector between drains. Each wake-up of the collector can take a core from a workload whose
 * threads spin in ggml's barriers, and each drain copies bytes: both are kept for when they are needed. Call
 * it after each sleep: it returns true when the collector should drain now (a slot holds drain_at bytes or
 * more, drain_at 0 meaning always, or a finished thread's slot waits to be freed) and sets *sleep_ms to the
 * next sleep, 5 to max_ms: until a slot filling at the rate seen since the last call (all slots together)
 * would hold drain_at bytes (an eighth of a slot with drain_at 0). It reads only the slots' headers. */
typedef struct {
    uint64_t backlog;  /* unread bytes left after the last call */
    long     slept_ms; /* the sleep it last asked for */
    uint64_t grew;     /* the bytes the producers published between the last two calls: > 0 while graphs compute */
} ggprof_ring_pacer;
bool ggprof_ring_pace(ggprof_ring_pacer *p, const ggprof_ring *r, uint64_t drain_at, long max_ms, long *sleep_ms);

/* Engine side. attach returns 0, or -1 with a reason in why (the ring is missing or of another version). */
int  ggprof_ring_attach(ggprof_ring *r, const char *path, char *why, size_t why_len);
ggprof_ring_slot *ggprof_ring_claim(ggprof_ring *r, int32_t pid, int32_t tid);
/* Copies one message (size a multiple of 8, header filled) and publishes it; 0 if written, -1 if dropped. The
 * message that fills the slot past half pokes the collector (ggprof_ring_poke: one system call a drain). */
int  ggprof_ring_write(ggprof_ring *r, ggprof_ring_slot *s, const ggprof_msg_hdr *msg);
/* The same; on a drop, *lost and *graph_id say what the message carried (ggprof_msg_records). */
int  ggprof_ring_write_counted(ggprof_ring *r, ggprof_ring_slot *s, const ggprof_msg_hdr *msg, uint64_t *lost,
                               uint64_t *graph_id);
/* Counts msg as dropped, as a write that found no room does, without trying to write it (a message that must not
 * go without another that did not fit); returns the records it carried, *graph_id their graph. */
uint64_t ggprof_ring_count_drop(ggprof_ring *r, ggprof_ring_slot *s, const ggprof_msg_hdr *msg, uint64_t *graph_id);
/* The same in two steps, for a message built in place: room for size bytes (a multiple of 8) in the slot, or NULL
 * where ggprof_ring_write would drop it (nothing counted: write it then, which counts the drop); then, once the
 * message is whole there, header filled, commit publishes it (with nothing written to the slot in between). */
void *ggprof_ring_reserve(ggprof_ring *r, ggprof_ring_slot *s, uint32_t size);
void  ggprof_ring_commit(ggprof_ring *r, ggprof_ring_slot *s, uint32_t size);
/* A producer that ends (its thread exits) hands its slot back: the collector frees it once it has read it,
 * and is woken for that (ggprof_ring_poke): a program that starts and ends threads faster than the collector's
 * sleeps would otherwise run out of slots. */
void ggprof_ring_release(ggprof_ring *r, ggprof_ring_slot *s);

/* Collector side: waking up early. Read the wake count, look at the world, then wait: the wait returns at once
 * if the count moved since it was read (a release, or a poke from a signal handler), else after ms or at the next
 * move. Returns true when woken by a move rather than by the time. ggprof_ring_poke is async-signal-safe. */
uint32_t ggprof_ring_wake_seen(const ggprof_ring *r);
bool     ggprof_ring_wait(ggprof_ring *r, uint32_t seen, long ms);
void     ggprof_ring_poke(ggprof_ring *r);
/* A producing process's first graph begins: counted in the header's computing (the collector sees it when it
 * next wakes: no system call here). */
void     ggprof_ring_began(ggprof_ring *r);
void ggprof_ring_unmap(ggprof_ring *r);

#endif
