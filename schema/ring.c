/* Shared-memory ring: a pool of single-producer slots in one mapped file (see ring.h). */
#include "ring.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static ggprof_ring_slot *slot_at(const ggprof_ring *r, uint32_t i) {
    char *base = (char *) r->file + GGPROF_RING_HDR;
    return (ggprof_ring_slot *) (base + (size_t) i * (GGPROF_SLOT_HDR + r->slot_cap));
}

/* The bytes a ring of this geometry maps, or 0 when it is not a geometry ggprof_ring_create makes, or its size
 * does not fit a size_t. */
static size_t ring_size(uint32_t n_slots, uint64_t slot_cap) {
    if (n_slots == 0 || slot_cap < 4096 || (slot_cap & (slot_cap - 1)) != 0 || slot_cap > SIZE_MAX / 2) return 0;
    size_t per = GGPROF_SLOT_HDR + (size_t) slot_cap;
    if ((size_t) n_slots > (SIZE_MAX - GGPROF_RING_HDR) / per) return 0;
    return GGPROF_RING_HDR + (size_t) n_slots * per;
}

static void cpu_op_count(const ggprof_cpu_interval *iv, void *user) {
    (void) iv;
    ++*(uint64_t *) user;
}

uint64_t ggprof_msg_records(const ggprof_msg_hdr *msg, uint64_t *graph_id) {
    uint64_t n = 0;
    *graph_id  = GGPROF_GRAPH_ANY;
    if (msg->kind == GGPROF_MSG_EVENT && msg->size >= sizeof(ggprof_msg_event)) {
        *graph_id = ((const ggprof_msg_event *) msg)->graph_id;
        n         = 1;
    } else if (msg->kind == GGPROF_MSG_CPU_OPS && msg->size >= sizeof(ggprof_msg_cpu_ops)) {
        *graph_id = ((const ggprof_msg_cpu_ops *) msg)->graph_id;
        ggprof_cpu_ops_expand((const ggprof_msg_cpu_ops *) msg, NULL, cpu_op_count, &n); /* checks n_ops against size */
    }
    return n;
}

static char *slot_data(ggprof_ring_slot *s) { return (char *) s + GGPROF_SLOT_HDR; }

static const char *ring_dir(void) {
    return access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
}

int ggprof_ring_sweep(void) {
    const char *dir = ring_dir();
    DIR        *d   = opendir(dir);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char tag[16], hex[17], end[8];
        int  pid;
        /* ggprof-TAG-PID-RANDOM.ring, as ggprof_ring_temp_path names it, and nothing after */
        if (sscanf(e->d_name, "ggprof-%15[a-z]-%d-%16[0-9a-f]%7s", tag, &pid, hex, end) != 4 || strcmp(end, ".ring") != 0 ||
            strlen(hex) != 16 || pid <= 0 || (strcmp(tag, "record") != 0 && strcmp(tag, "profile") != 0)) {
            continue;
        }
        char path[PATH_MAX];
        struct stat st;
        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int) sizeof(path) || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != getuid()) {
            continue;
        }
        if (kill(pid, 0) == 0 || errno != ESRCH) continue; /* its maker lives (or is not ours to ask) */
        if (unlink(path) == 0) n++;
    }
    closedir(d);
    return n;
}

void ggprof_ring_temp_path(char *buf, size_t len, const char *tag) {
    const char *dir = ring_dir();
    uint64_t rnd = 0;
    if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t) sizeof(rnd)) {
        struct timespec ts; /* no random source (very old kernels): still unique, O_EXCL still holds */
        clock_gettime(CLOCK_MONOTONIC, &ts);
        rnd = (uint64_t) ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t) ts.tv_sec;
    }
    snprintf(buf, len, "%s/ggprof-%s-%d-%016" PRIx64 ".ring", dir, tag, (int) getpid(), rnd);
}

/* The collector's own state of n slots in one block: the tails, the owners seen (ggprof_ring_new_owners), then the
 * mapped flags. */
static uint64_t *collector_side(uint32_t n) { return calloc(n, 2 * sizeof(uint64_t) + 1); }
/* r's owners and mapped flags, where collector_side put them after its tails. */
static void collector_side_split(ggprof_ring *r) {
    r->owners = r->tails + r->n_slots;
    r->mapped = (uint8_t *) (r->tails + 2 * (size_t) r->n_slots);
}

int ggprof_ring_create(ggprof_ring *r, const char *path, uint32_t n_slots, uint64_t slot_cap, uint32_t level) {
    size_t size = ring_size(n_slots, slot_cap);
    uint64_t *tails = size ? collector_side(n_slots) : NULL;
    if (!tails) {
        errno = size ? ENOMEM : EINVAL;
        return -1;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        free(tails);
        return -1;
    }
    /* Sparse: pages are only backed once a producer touches them. */
    if (ftruncate(fd, (off_t) size) != 0) {
        int e = errno;
        close(fd);
        unlink(path);
        free(tails);
        errno = e;
        return -1;
    }
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        unlink(path);
        free(tails);
        errno = e;
        return -1;
    }
    ggprof_ring_file *f = p;
    f->version  = GGPROF_RING_VERSION;
    f->n_slots  = n_slots;
    f->slot_cap = slot_cap;
    f->level    = level;
    atomic_store(&f->recording, 1);
    *r = (ggprof_ring){ .file = f, .map_size = size, .n_slots = n_slots, .slot_cap = slot_cap, .tails = tails };
    collector_side_split(r);
    /* Each slot's header lies in a page of its own (with the previous slot's last data bytes), which the file's hole
     * leaves unbacked: written here, before any workload runs, the collector's first look at every slot
     * (ggprof_ring_new_owners, ggprof_ring_pace) does not fault them in while the workload loads (64 new pages: 4 ms
     * of CPU on a 2-CPU VM whose every new page is a fault on its host). */
    for (uint32_t i = 0; i < n_slots; i++) atomic_store_explicit(&slot_at(r, i)->state, GGPROF_SLOT_FREE, memory_order_relaxed);
    /* The magic goes last: an engine that sees it sees a complete header. */
    atomic_thread_fence(memory_order_release);
    memcpy(f->magic, GGPROF_RING_MAGIC, sizeof(GGPROF_RING_MAGIC));
    return 0;
}

int ggprof_ring_attach(ggprof_ring *r, const char *path, char *why, size_t why_len) {
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        snprintf(why, why_len, "cannot open ring '%s': %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    /* Only a ring this user made, that no one else can read: records never go to a file someone else planted. */
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_uid != geteuid() && geteuid() != 0) ||
        (st.st_mode & 077) != 0) {
        snprintf(why, why_len, "ring '%s' is not a private file of this user", path);
        close(fd);
        return -1;
    }
    if ((size_t) st.st_size < GGPROF_RING_HDR) {
        snprintf(why, why_len, "ring '%s' is too small to be a ggprof ring", path);
        close(fd);
        return -1;
    }
    void *p = mmap(NULL, (size_t) st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(why, why_len, "cannot map ring '%s': %s", path, strerror(errno));
        return -1;
    }
    ggprof_ring_file *f = p;
    if (memcmp(f->magic, GGPROF_RING_MAGIC, sizeof(GGPROF_RING_MAGIC)) != 0) {
        snprintf(why, why_len, "'%s' is not a ggprof ring (bad magic)", path);
        munmap(p, (size_t) st.st_size);
        return -1;
    }
    atomic_thread_fence(memory_order_acquire);
    if (f->version != GGPROF_RING_VERSION) {
        snprintf(why, why_len, "ring '%s' has version %u, this engine writes version %u", path, f->version,
                 GGPROF_RING_VERSION);
        munmap(p, (size_t) st.st_size);
        return -1;
    }
    /* One copy of the geometry, checked against what is mapped: the producer never reads it again. */
    uint32_t n_slots = f->n_slots;
    uint64_t cap     = f->slot_cap;
    size_t   need    = ring_size(n_slots, cap);
    if (need == 0) {
        snprintf(why, why_len, "ring '%s' has an impossible geometry (%u slots of %" PRIu64 " bytes)", path, n_slots, cap);
        munmap(p, (size_t) st.st_size);
        return -1;
    }
    if ((size_t) st.st_size < need) {
        snprintf(why, why_len, "ring '%s' is truncated (%zu of %zu bytes)", path, (size_t) st.st_size, need);
        munmap(p, (size_t) st.st_size);
        return -1;
    }
    /* A collector that attaches (ggprof collect, for GGML_PROFILE's ring) reads with its own tails, as the one
     * that creates the ring does; the producers never touch them. */
    uint64_t *tails = collector_side(n_slots);
    if (!tails) {
        snprintf(why, why_len, "ring '%s': out of memory", path);
        munmap(p, (size_t) st.st_size);
        return -1;
    }
    *r = (ggprof_ring){ .file = f, .map_size = (size_t) st.st_size, .n_slots = n_slots, .slot_cap = cap, .tails = tails };
    collector_side_split(r);
    atomic_fetch_add(&f->n_processes, 1);
    return 0;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* A first write to a page of shared memory costs a fault (allocation, zeroing): measured at about 15 us, it
 * made every record cost hundreds of ns on the computing thread. Fault the slot in once, when claimed, and
 * write to every page: MADV_POPULATE_WRITE alone maps the pages, yet under a hypervisor that backs guest
 * memory lazily (seen on a KVM guest whose hypervisor shadows its page tables) the first store to each page still costs ~5 us, a host-side fault, for
 * the whole first lap of the ring (tests/bench/ring_write.sh: ~11000 TSC cycles per 4 KiB message on a slot
 * only populated, ~300 once each page was written). Once the pages are backed, non-temporal stores were no
 * faster than memcpy for a split's 4 KiB of ops (same benchmark, and in the engine), so messages are memcpy'd. */
static void prefault(ggprof_ring_slot *s, uint64_t cap) {
    char  *data = slot_data(s);
    size_t page = (size_t) sysconf(_SC_PAGESIZE);
    madvise((void *) ((uintptr_t) s & ~(page - 1)), GGPROF_SLOT_HDR + cap, MADV_POPULATE_WRITE);
    for (uint64_t off = 0; off < cap; off += page) ((volatile char *) data)[off] = 0;
}

ggprof_ring_slot *ggprof_ring_claim(ggprof_ring *r, int32_t pid, int32_t tid) {
    for (uint32_t i = 0; i < r->n_slots; i++) {
        ggprof_ring_slot *s = slot_at(r, i);
        uint32_t expect = GGPROF_SLOT_FREE;
        if (atomic_load_explicit(&s->state, memory_order_relaxed) != GGPROF_SLOT_FREE) continue;
        if (atomic_compare_exchange_strong(&s->state, &expect, GGPROF_SLOT_CLAIMED)) {
            s->pid = pid;
            s->tid = tid;
            prefault(s, r->slot_cap);
            if (r->file) ggprof_ring_poke(r); /* the collector maps the slot now (ggprof_ring_map_claimed) */
            return s;
        }
    }
    return NULL;
}

int ggprof_ring_write(ggprof_ring *r, ggprof_ring_slot *s, const ggprof_msg_hdr *msg) {
    uint64_t lost, graph;
    return ggprof_ring_write_counted(r, s, msg, &lost, &graph);
}

/* The padding a message of size bytes needs before it at head: a message never wraps, the slot's end is padded
 * first. */
static uint64_t pad_at(uint64_t head, uint64_t size, uint64_t cap) {
    uint64_t pos = head & (cap - 1);
    return pos + size > cap ? cap - pos : 0;
}

/* Where a message of size bytes goes next in the slot, with the padding that must come before it; false when it
 * would not fit (or the header is out of range). */
static bool room_for(const ggprof_ring *r, ggprof_ring_slot *s, uint64_t size, uint64_t *head, uint64_t *pad) {
    const uint64_t cap = r->slot_cap;
    *head = atomic_load_explicit(&s->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&s->tail, memory_order_acquire);
    *pad = pad_at(*head, size, cap);
    /* head and tail lie in memory the workload can write: whatever they say, the bytes written stay in the slot. */
    return size <= cap && tail <= *head && *head + *pad + size - tail <= cap;
}

void *ggprof_ring_reserve(ggprof_ring *r, ggprof_ring_slot *s, uint32_t size) {
    uint64_t head, pad;
    if (s == NULL || !room_for(r, s, size, &head, &pad)) return NULL;
    char *data = slot_data(s);
    uint64_t pos = head & (r->slot_cap - 1);
    if (pad) {
        ggprof_msg_hdr filler = { (uint32_t) pad, GGPROF_MSG_PAD, 0 };
        memcpy(data + pos, &filler, sizeof(filler));
        pos = 0;
    }
    return data + pos;
}

void ggprof_ring_commit(ggprof_ring *r, ggprof_ring_slot *s, uint32_t size) {
    const uint64_t cap  = r->slot_cap;
    uint64_t       head = atomic_load_explicit(&s->head, memory_order_relaxed);
    uint64_t       tail = atomic_load_explicit(&s->tail, memory_order_acquire);
    uint64_t       pad  = pad_at(head, size, cap); /* as ggprof_ring_reserve found it */
    atomic_store_explicit(&s->head, head + pad + size, memory_order_release);
    /* The watermark: the message that fills the slot past half wakes the collector, which may be asleep for up to
     * a second (it sleeps long so as not to preempt the workload's threads; a burst after a quiet stretch would
     * otherwise fill the slot first). Once a drain, at most: the next crossing needs the tail to move. */
    if (head - tail < cap / 2 && head + pad + size - tail >= cap / 2 && r->file) ggprof_ring_poke(r);
}

uint64_t ggprof_ring_count_drop(ggprof_ring *r, ggprof_ring_slot *s, const ggprof_msg_hdr *msg, uint64_t *graph_id) {
    /* Counted on the drop path only: what a message carries costs nothing while the ring accepts. */
    uint64_t lost = ggprof_msg_records(msg, graph_id);
    if (s == NULL) {
        atomic_fetch_add_explicit(&r->file->dropped_noslot, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&r->file->noslot_records, lost, memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&s->dropped_msgs, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->dropped_bytes, msg->size, memory_order_relaxed);
        atomic_fetch_add_explicit(&s->dropped_records, lost, memory_order_relaxed);
    }
    return lost;
}

int ggprof_ring_write_counted(ggprof_ring *r, ggprof_ring_slot *s, const ggprof_msg_hdr *msg, uint64_t *lost,
                              uint64_t *graph_id) {
    *lost = 0;
    void *at = ggprof_ring_reserve(r, s, msg->size);
    if (at == NULL) {
        *lost = ggprof_ring_count_drop(r, s, msg, graph_id);
        return -1;
    }
    memcpy(at, msg, msg->size);
    ggprof_ring_commit(r, s, msg->size);
    return 0;
}

void ggprof_ring_release(ggprof_ring *r, ggprof_ring_slot *s) {
    if (!s) return;
    atomic_store_explicit(&s->state, GGPROF_SLOT_DONE, memory_order_release);
    if (r && r->file) ggprof_ring_poke(r);
}

/* The wake count is a futex word in shared memory: the collector and the engine are different processes, so
 * the operations are the shared (not private) ones. */
uint32_t ggprof_ring_wake_seen(const ggprof_ring *r) { return atomic_load_explicit(&r->file->wake, memory_order_acquire); }

void ggprof_ring_poke(ggprof_ring *r) {
    atomic_fetch_add_explicit(&r->file->wake, 1, memory_order_release);
    syscall(SYS_futex, (uint32_t *) &r->file->wake, FUTEX_WAKE, 1, NULL, NULL, 0);
}

void ggprof_ring_began(ggprof_ring *r) { atomic_fetch_add_explicit(&r->file->computing, 1, memory_order_relaxed); }

bool ggprof_ring_wait(ggprof_ring *r, uint32_t seen, long ms) {
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    /* Returns at once with EAGAIN when the word is no longer `seen`; EINTR (a signal) counts as a wake-up too:
     * the caller looks at the world again either way. */
    long rc = syscall(SYS_futex, (uint32_t *) &r->file->wake, FUTEX_WAIT, seen, &ts, NULL, 0);
    return rc == 0 || errno != ETIMEDOUT || ggprof_ring_wake_seen(r) != seen;
}

/* A slot's head is valid when it is at most a slot's capacity ahead of what the collector read (its own tail, never
 * the one in shared memory). */
static bool head_valid(const ggprof_ring *r, uint64_t head, uint64_t tail) { return head >= tail && head - tail <= r->slot_cap; }

size_t ggprof_ring_map_claimed(ggprof_ring *r) {
    size_t n = 0, page = (size_t) sysconf(_SC_PAGESIZE);
    for (uint32_t i = 0; i < r->n_slots; i++) {
        ggprof_ring_slot *s = slot_at(r, i);
        if (r->mapped[i] || atomic_load_explicit(&s->state, memory_order_acquire) == GGPROF_SLOT_FREE) continue;
        /* Once per slot for the ring's life: the pages stay mapped when the slot goes to another thread. The claimer
         * may still be writing them (it pokes after): a read first allocates the shared file's page, which the
         * claimer's write then finds, the same page in both mappings. */
        const volatile char *data = slot_data(s);
        for (uint64_t off = 0; off < r->slot_cap; off += page) {
            /* the graphs may begin while this reads (at nice 19 it can be preempted for longer than a model's load
             * lasts): it stops there, the rest left to the drains */
            if (off % (64 * page) == 0 && atomic_load_explicit(&r->file->computing, memory_order_relaxed)) return n + off;
            (void) data[off];
        }
        r->mapped[i] = 1;
        n += r->slot_cap;
    }
    return n;
}

size_t ggprof_ring_new_owners(ggprof_ring *r, ggprof_ring_owner_fn fn, void *user) {
    size_t n = 0;
    for (uint32_t i = 0; i < r->n_slots; i++) {
        ggprof_ring_slot *s = slot_at(r, i);
        if (atomic_load_explicit(&s->state, memory_order_acquire) == GGPROF_SLOT_FREE) continue;
        /* The claimer writes pid and tid after the state and pokes after both: a reading in between sees the last
         * owner's (or none), and the poke's wake-up the new one. */
        int32_t  pid = ((volatile ggprof_ring_slot *) s)->pid, tid = ((volatile ggprof_ring_slot *) s)->tid;
        uint64_t who = (uint64_t) (uint32_t) pid << 32 | (uint32_t) tid;
        if (pid <= 0 || tid <= 0 || who == r->owners[i]) continue;
        r->owners[i] = who;
        fn(pid, tid, user);
        n++;
    }
    return n;
}

size_t ggprof_ring_drain_raw(ggprof_ring *r, ggprof_ring_chunk_fn fn, void *user) {
    size_t n = 0;
    const uint64_t cap = r->slot_cap;
    for (uint32_t i = 0; i < r->n_slots; i++) {
        ggprof_ring_slot *s = slot_at(r, i);
        uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
        if (state == GGPROF_SLOT_FREE) continue;
        uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire);
        uint64_t tail = r->tails[i];
        if (!head_valid(r, head, tail)) {
            /* Not a position a producer can reach: the slot's unread bytes are skipped, and reading resumes from
             * where the producer now writes. */
            r->corrupt++;
            r->tails[i] = head;
            atomic_store_explicit(&s->tail, head, memory_order_release);
            tail = head;
        }
        if (head > tail) {
            /* The producer pads to the end before wrapping, so both runs hold whole messages. */
            uint64_t pos = tail & (cap - 1), len = head - tail;
            uint64_t first = len < cap - pos ? len : cap - pos;
            fn(s, slot_data(s) + pos, first, user);
            if (first < len) fn(s, slot_data(s), len - first, user);
            n += len;
            r->tails[i] = head;
            atomic_store_explicit(&s->tail, head, memory_order_release);
        }
        if (state == GGPROF_SLOT_DONE) {
            /* The thread is gone and all it wrote is read: the slot can serve another thread. */
            atomic_store_explicit(&s->head, 0, memory_order_relaxed);
            atomic_store_explicit(&s->tail, 0, memory_order_relaxed);
            r->tails[i] = 0;
            atomic_fetch_add(&r->file->dropped_freed, atomic_exchange(&s->dropped_msgs, 0));
            atomic_fetch_add(&r->file->freed_records, atomic_exchange(&s->dropped_records, 0));
            atomic_store_explicit(&s->dropped_bytes, 0, memory_order_relaxed);
            atomic_store_explicit(&s->state, GGPROF_SLOT_FREE, memory_order_release);
        }
    }
    return n;
}

long ggprof_msgs_foreach(const void *bytes, size_t n, ggprof_msg_fn fn, void *user) {
    const char *p = bytes;
    long count = 0;
    for (size_t off = 0; off < n;) {
        const ggprof_msg_hdr *m = (const ggprof_msg_hdr *) (p + off);
        if (n - off < sizeof(*m) || m->size < sizeof(*m) || (m->size & 7) != 0 || m->size > n - off) return -1;
        if (m->kind != GGPROF_MSG_PAD) {
            fn(m, user);
            count++;
        }
        off += m->size;
    }
    return count;
}

struct per_msg {
    ggprof_ring_msg_fn       fn;
    void                    *user;
    const ggprof_ring_slot  *slot;
    size_t                   count;
};

static void one_msg(const ggprof_msg_hdr *m, void *user) {
    struct per_msg *pm = user;
    pm->fn(pm->slot, m, pm->user);
}

static void chunk_msgs(const ggprof_ring_slot *slot, const void *bytes, size_t n, void *user) {
    struct per_msg *pm = user;
    pm->slot = slot;
    long c = ggprof_msgs_foreach(bytes, n, one_msg, pm);
    if (c > 0) pm->count += (size_t) c;
}

size_t ggprof_ring_drain(ggprof_ring *r, ggprof_ring_msg_fn fn, void *user) {
    struct per_msg pm = { fn, user, NULL, 0 };
    ggprof_ring_drain_raw(r, chunk_msgs, &pm);
    return pm.count;
}

uint64_t ggprof_ring_dropped(const ggprof_ring *r) {
    uint64_t n = atomic_load(&r->file->dropped_noslot) + atomic_load(&r->file->dropped_freed);
    for (uint32_t i = 0; i < r->n_slots; i++) n += atomic_load(&slot_at(r, i)->dropped_msgs);
    return n;
}

uint64_t ggprof_ring_dropped_records(const ggprof_ring *r) {
    uint64_t n = atomic_load(&r->file->noslot_records) + atomic_load(&r->file->freed_records);
    for (uint32_t i = 0; i < r->n_slots; i++) n += atomic_load(&slot_at(r, i)->dropped_records);
    return n;
}

bool ggprof_ring_header_intact(const ggprof_ring *r, char *why, size_t why_len) {
    const ggprof_ring_file *f = r->file;
    int n = snprintf(why, why_len, "%s", "");
    if (memcmp(f->magic, GGPROF_RING_MAGIC, sizeof(GGPROF_RING_MAGIC)) != 0) n += snprintf(why + n, why_len - (size_t) n, " magic");
    if (f->version != GGPROF_RING_VERSION && (size_t) n < why_len) n += snprintf(why + n, why_len - (size_t) n, " version");
    if (f->n_slots != r->n_slots && (size_t) n < why_len) n += snprintf(why + n, why_len - (size_t) n, " n_slots");
    if (f->slot_cap != r->slot_cap && (size_t) n < why_len) n += snprintf(why + n, why_len - (size_t) n, " slot_cap");
    return n == 0;
}

bool ggprof_ring_pace(ggprof_ring_pacer *p, const ggprof_ring *r, uint64_t drain_at, long max_ms, long *sleep_ms) {
    const long lo = 5, hi = max_ms > lo ? max_ms : lo;
    uint64_t total = 0, fullest = 0;
    bool     done  = false;
    for (uint32_t i = 0; i < r->n_slots; i++) {
        const ggprof_ring_slot *s = slot_at(r, i);
        uint32_t state = atomic_load_explicit(&s->state, memory_order_acquire);
        if (state == GGPROF_SLOT_FREE) continue;
        done |= state == GGPROF_SLOT_DONE;
        uint64_t head = atomic_load_explicit(&s->head, memory_order_acquire), tail = r->tails[i];
        if (!head_valid(r, head, tail)) { /* the drain skips it */
            done = true;
            continue;
        }
        uint64_t b = head - tail;
        total += b;
        fullest = b > fullest ? b : fullest;
    }
    /* Nothing is read between two calls but by a drain, after which the backlog is counted as 0: what it grew
     * by is what the producers published meanwhile. */
    uint64_t grew   = total > p->backlog ? total - p->backlog : 0;
    bool     drain  = done || fullest >= drain_at;
    uint64_t target = drain_at ? drain_at : r->slot_cap / 8;
    uint64_t left   = drain ? target : target - fullest;
    double   ms     = grew ? (double) left * (double) (p->slept_ms > 0 ? p->slept_ms : lo) / (double) grew : (double) hi;
    p->slept_ms     = ms < lo ? lo : ms > hi ? hi : (long) ms;
    p->backlog      = drain ? 0 : total;
    p->grew         = grew;
    *sleep_ms       = p->slept_ms;
    return drain;
}

void ggprof_ring_unmap(ggprof_ring *r) {
    if (r->file) munmap(r->file, r->map_size);
    free(r->tails);
    r->tails = NULL;
    r->file  = NULL;
}
