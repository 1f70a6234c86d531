/* Spill file: frames of (pid, tid, message) appended while the workload runs, replayed into the store after. */
#include "spill.h"

#include "outfile.h"
#include "progress.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>

/* A frame: who wrote the bytes, how many, then the bytes (whole messages). */
typedef struct {
    int32_t  pid, tid;
    uint32_t n, pad;
} frame;

int ggprof_spill_open(ggprof_spill *s, const char *path) {
    memset(s, 0, sizeof(*s));
    s->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (s->fd < 0) return -1;
    /* The lock says a collector is writing beside this output; it goes with the process, so a spill left by one
     * that died is taken over (and emptied) by the next. */
    if (flock(s->fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(s->fd);
        s->fd = -1;
        errno = e;
        return e == EWOULDBLOCK ? -2 : -1;
    }
    /* One left by someone else (planted in a shared folder) is never written into: it is not ours to empty, and
     * they could read what we put there. One of ours is made private again. */
    if (ggprof_private_check(s->fd) != 0) {
        close(s->fd);
        s->fd = -1;
        return -3;
    }
    if (ftruncate(s->fd, 0) != 0) {
        close(s->fd);
        s->fd = -1;
        return -1;
    }
    return 0;
}

static void write_frame_to(ggprof_spill *s, int fd, uint64_t *good_end, const ggprof_ring_slot *slot, const void *bytes,
                           size_t n);

static void write_frame(ggprof_spill *s, const ggprof_ring_slot *slot, const void *bytes, size_t n) {
    write_frame_to(s, s->fd, &s->good_end, slot, bytes, n);
}

static void write_frame_to(ggprof_spill *s, int fd, uint64_t *good_end_p, const ggprof_ring_slot *slot, const void *bytes,
                           size_t n) {
    if (s->err) return;
    uint64_t good_end = *good_end_p;
    frame  fr   = { slot->pid, slot->tid, (uint32_t) n, 0 };
    size_t want = sizeof(fr) + n, done = 0;
    /* At explicit offsets, so that a short write (a full disk) is retried for the rest, then cut back whole. */
    while (done < want) {
        struct iovec iov[2] = { { (char *) &fr + (done < sizeof(fr) ? done : sizeof(fr)), done < sizeof(fr) ? sizeof(fr) - done : 0 },
                                { (char *) bytes + (done > sizeof(fr) ? done - sizeof(fr) : 0), n - (done > sizeof(fr) ? done - sizeof(fr) : 0) } };
        ssize_t w = pwritev(fd, iov, 2, (off_t) (good_end + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            s->err = w < 0 ? errno : ENOSPC;
            if (ftruncate(fd, (off_t) good_end) != 0) { /* replay reads up to good_end only anyway */ }
            return;
        }
        done += (size_t) w;
    }
    *good_end_p = good_end + want;
    s->bytes += n;
}

/* Frames of at most this many bytes of whole messages: on a disk that fills, a frame is kept or lost whole. */
#define FRAME_MAX (64u << 10)

/* Descriptions first, records second: a thread may reference a node that another thread described, and
 * the ring's slots are drained one after another, so the description can come later in the file. */
/* What every later record needs, kept whole by the flight recorder: descriptions, and memory (the buffers a program
 * holds are state: dropping the segment that saw one allocated would lose it for good). */
static int is_description(int kind) {
    return kind == GGPROF_MSG_PROCESS || kind == GGPROF_MSG_TYPE || kind == GGPROF_MSG_BACKEND ||
           kind == GGPROF_MSG_NODE || kind == GGPROF_MSG_NOTE || kind == GGPROF_MSG_BUFFER ||
           kind == GGPROF_MSG_DEVMEM || kind == GGPROF_MSG_PLACEMENT || kind == GGPROF_MSG_CPU_PLAN ||
           kind == GGPROF_MSG_CPU_OPS_PLAN;
}

/* ---- the flight recorder's segments */

static ggprof_spill_seg *seg_at(ggprof_spill *s, int i) { return &s->seg[(s->first + i) % GGPROF_SPILL_MAX_SEGS]; }

static void seg_name(const ggprof_spill *s, int n, char *buf, size_t len) { snprintf(buf, len, "%s.%d", s->path, n); }

/* Drops the oldest segment: its file goes, what it held is counted. */
static void seg_drop(ggprof_spill *s) {
    ggprof_spill_seg *g = seg_at(s, 0);
    char name[4200];
    seg_name(s, s->next_name - s->n_segs, name, sizeof(name));
    unlink(name);
    close(g->fd);
    s->dropped_bytes += g->good_end;
    s->dropped_graphs += g->graphs;
    s->dropped_segs++;
    s->first = (s->first + 1) % GGPROF_SPILL_MAX_SEGS;
    s->n_segs--;
}

/* A new segment to write records into; the oldest go while the rest hold more than keep_max. */
static int seg_open(ggprof_spill *s) {
    uint64_t kept = 0;
    for (int i = 0; i < s->n_segs; i++) kept += seg_at(s, i)->good_end;
    while (s->n_segs && (kept + s->seg_max > s->keep_max || s->n_segs == GGPROF_SPILL_MAX_SEGS)) {
        kept -= seg_at(s, 0)->good_end;
        seg_drop(s);
    }
    char name[4200];
    seg_name(s, s->next_name, name, sizeof(name));
    /* a new file, as every file ggprof makes: one planted at the name (another user's, a link) is replaced, never
     * written into, or the segment fails */
    int fd = ggprof_private_create(name, O_RDWR);
    if (fd < 0) return -1;
    s->next_name++;
    ggprof_spill_seg *g = seg_at(s, s->n_segs++);
    *g = (ggprof_spill_seg) { fd, 0, 0 };
    s->rotate = 0;
    return 0;
}

int ggprof_spill_bound(ggprof_spill *s, const char *path, uint64_t max_bytes) {
    snprintf(s->path, sizeof(s->path), "%s", path);
    s->keep_max = max_bytes;
    s->seg_max  = max_bytes / 8 > (256u << 10) ? max_bytes / 8 : (256u << 10);
    if (s->seg_max > max_bytes) s->seg_max = max_bytes;
    return seg_open(s);
}

/* Whole messages of one kind (descriptions, or records) at p, up to a frame: to the file or the open segment. A
 * full segment is rotated after a GRAPH message (the last a thread sends of a graph), so that a segment dropped
 * takes whole graphs with it. */
static size_t bounded_piece(ggprof_spill *s, const ggprof_ring_slot *slot, const char *p, size_t n) {
    int desc = is_description(((const ggprof_msg_hdr *) p)->kind);
    size_t piece = 0;
    uint64_t graphs = 0;
    int ends_graph = 0;
    while (piece < n) {
        const ggprof_msg_hdr *h = (const void *) (p + piece);
        if (h->size == 0 || h->size > n - piece) {
            if (!piece) piece = n; /* not a boundary we can trust: the rest goes whole */
            break;
        }
        if (is_description(h->kind) != desc || (piece && piece + h->size > FRAME_MAX)) break;
        piece += h->size;
        if (h->kind == GGPROF_MSG_GRAPH) {
            graphs++;
            if (s->rotate) {
                ends_graph = 1;
                break;
            }
        }
    }
    if (desc) {
        write_frame(s, slot, p, piece);
        return piece;
    }
    ggprof_spill_seg *g = seg_at(s, s->n_segs - 1);
    write_frame_to(s, g->fd, &g->good_end, slot, p, piece);
    g->graphs += graphs;
    if (g->good_end >= s->seg_max) s->rotate = 1;
    if (ends_graph && seg_open(s) != 0 && !s->err) s->err = errno;
    return piece;
}

void ggprof_spill_chunk(ggprof_spill *s, const ggprof_ring_slot *slot, const void *bytes, size_t n) {
    if (s->keep_max) {
        const char *p = bytes;
        while (n && !s->err) {
            size_t piece = bounded_piece(s, slot, p, n);
            p += piece;
            n -= piece;
        }
        return;
    }
    const char *p = bytes;
    while (n) {
        size_t piece = 0;
        while (piece < n) {
            const ggprof_msg_hdr *h = (const void *) (p + piece);
            if (h->size == 0 || h->size > n - piece) { /* not a message boundary we can trust: keep the rest whole */
                piece = n;
                break;
            }
            if (piece && piece + h->size > FRAME_MAX) break;
            piece += h->size;
        }
        write_frame(s, slot, p, piece);
        p += piece;
        n -= piece;
    }
}

static void on_chunk(const ggprof_ring_slot *slot, const void *bytes, size_t n, void *user) {
    ggprof_spill *s = user;
    ggprof_spill_chunk(s, slot, bytes, n);
    if (s->tap) s->tap(slot->pid, bytes, n, s->tap_user);
}

size_t ggprof_spill_drain(ggprof_spill *s, ggprof_ring *ring) { return ggprof_ring_drain_raw(ring, on_chunk, s); }

struct replay {
    ggprof_store *store;
    frame         fr;
    uint64_t      n;
    int           pass;
    bool          committed; /* a batch was committed since the last frame began */
    const atomic_bool *stop; /* set: the records' pass ends at the next frame, at stopped */
    bool          stopped;
    uint64_t      stopped_at;
};


/* A commit every this many rows (a CPU_OPS message alone makes a row per op): what a full disk takes at most from a
 * trace, since SQLite rolls back the batch it hits. */
#define COMMIT_EVERY 4096

static void replay_msg(const ggprof_msg_hdr *m, void *user) {
    struct replay *r = user;
    if (is_description(m->kind) != (r->pass == 0)) return;
    ggprof_store_msg(r->store, r->fr.pid, r->fr.tid, m);
    ggprof_store_counts c = ggprof_store_get_counts(r->store);
    uint64_t rows = c.events + c.nodes + c.graphs + c.splits + c.kernels;
    if (rows - r->n >= COMMIT_EVERY) {
        r->n = rows;
        if (ggprof_store_commit(r->store) == 0) r->committed = true;
    }
}

/* Gives the spill's pages below upto back to the file system (the file keeps its size; reads there get zeros). */
static void release_upto(ggprof_spill *s, uint64_t *released, uint64_t upto) {
    upto &= ~(uint64_t) 4095;
    if (upto > *released &&
        fallocate(s->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) *released, (off_t) (upto - *released)) == 0) {
        *released = upto;
    }
}

/* The spill's bytes at off: from memory when the replay holds them all, else from the file. */
static bool read_at(int fd, const char *mem, uint64_t off, void *dst, size_t n) {
    if (mem) { /* mem: the bytes from where the replay starts (take_into_memory), pointed back by that much */
        memcpy(dst, mem + off, n);
        return true;
    }
    return pread(fd, dst, n, (off_t) off) == (ssize_t) n;
}

/* One pass over the frames of a file (fd, or mem when the replay holds them) up to good_end; base: where its
 * bytes start in the progress count. */
static int replay_pass(ggprof_spill *s, int fd, uint64_t from, uint64_t good_end, const char *mem, struct replay *r,
                       char **buf, size_t *cap, bool release, ggprof_progress *prog, uint64_t base) {
    uint64_t off = from, released = 0;
    while (off + sizeof(frame) <= good_end) {
        if (r->pass == 1 && r->stop && atomic_load(r->stop)) {
            r->stopped    = true;
            r->stopped_at = off;
            return 0;
        }
        ggprof_progress_update(prog, base + off - from);
        if (!read_at(fd, mem, off, &r->fr, sizeof(r->fr)) || off + sizeof(frame) + r->fr.n > good_end) return -1;
        if (r->fr.n > *cap) {
            char *b = realloc(*buf, r->fr.n);
            if (!b) return -1;
            *buf = b;
            *cap = r->fr.n;
        }
        if (!read_at(fd, mem, off + sizeof(frame), *buf, r->fr.n)) return -1;
        r->committed = false;
        if (ggprof_msgs_foreach(*buf, r->fr.n, replay_msg, r) < 0) return -1;
        /* Every frame before this one is in a committed batch now: its pages go back to the file system. */
        if (release && !mem && r->committed) release_upto(s, &released, off);
        off += sizeof(frame) + r->fr.n;
    }
    return 0;
}

/* The disk filled while spilling and the spill cannot move into memory: its last two thirds go (whole frames), so
 * that the first third, the earliest records, can be stored. */
static void make_room(ggprof_spill *s) {
    uint64_t off = 0, keep = 0;
    frame    fr;
    while (off + sizeof(fr) <= s->good_end && off <= s->good_end / 3) {
        if (pread(s->fd, &fr, sizeof(fr), (off_t) off) != (ssize_t) sizeof(fr)) break;
        keep = off;
        off += sizeof(fr) + fr.n;
    }
    if (ftruncate(s->fd, (off_t) keep) == 0) s->good_end = keep;
}

/* A disk that filled while spilling, or with less room than the database needs (about three times the spill):
 * the spill moves into memory and gives all its space to the database. Returns the bytes, or NULL (then, on a
 * full disk, the spill's last two thirds make room instead). */
static bool disk_tight(ggprof_spill *s) {
    struct statvfs vfs;
    return s->err || (fstatvfs(s->fd, &vfs) == 0 && (uint64_t) vfs.f_bavail * vfs.f_frsize < 3 * s->good_end);
}

/* Only the bytes not built yet (from s->built) are taken; the pointer returned is that much before them, as
 * read_at indexes it by file offset. */
static char *take_into_memory(ggprof_spill *s, char **block) {
    *block = NULL;
    if (!disk_tight(s)) return NULL;
    uint64_t n   = s->good_end - s->built;
    char    *mem = n <= (1ull << 30) ? malloc(n ? n : 1) : NULL;
    if (mem && (pread(s->fd, mem, n, (off_t) s->built) != (ssize_t) n || ftruncate(s->fd, 0) != 0)) {
        free(mem);
        mem = NULL;
    }
    if (!mem && s->err && !s->built) make_room(s);
    *block = mem;
    return mem ? mem - s->built : NULL;
}

/* Where a pass over the file starts: the descriptions' pass after those a stopped build stored already. */
static uint64_t pass_from(const ggprof_spill *s, int pass) {
    return pass == 0 && s->desc_built > s->built ? s->desc_built : s->built;
}

int ggprof_spill_replay(ggprof_spill *s, ggprof_store *store, bool release) {
    struct replay r = { store, { 0 }, 0, 0, false, NULL, false, 0 };
    ggprof_store_counts c = ggprof_store_get_counts(store);
    r.n = c.events + c.nodes + c.graphs + c.splits + c.kernels;
    /* A flight recorder's spill is bounded: it stays on disk, its segments read in order after the file. */
    char  *block = NULL;
    char  *mem   = release && !s->keep_max ? take_into_memory(s, &block) : NULL;
    char  *buf   = NULL;
    size_t cap   = 0;
    int    rc    = 0;
    uint64_t segs = 0, n = s->good_end - s->built;
    for (int i = 0; i < s->n_segs; i++) segs += seg_at(s, i)->good_end;
    ggprof_progress prog;
    ggprof_progress_start(&prog, "building the trace database", 2 * n + segs);
    for (r.pass = 0; r.pass < 2 && rc == 0; r.pass++) {
        uint64_t base = (uint64_t) r.pass * n;
        rc = replay_pass(s, s->fd, pass_from(s, r.pass), s->good_end, mem, &r, &buf, &cap,
                         release && r.pass == 1 && !s->keep_max, &prog, base);
        for (int i = 0; r.pass == 1 && i < s->n_segs && rc == 0; i++) {
            ggprof_spill_seg *g = seg_at(s, i);
            rc = replay_pass(s, g->fd, 0, g->good_end, NULL, &r, &buf, &cap, false, &prog, 2 * n);
        }
        ggprof_store_commit(store); /* the descriptions first: records without them would be nameless */
    }
    ggprof_progress_end(&prog);
    free(buf);
    free(block);
    return rc;
}

bool ggprof_spill_can_build(ggprof_spill *s) { return !s->keep_max && !disk_tight(s); }

int ggprof_spill_build(ggprof_spill *s, ggprof_store *store, uint64_t end, const atomic_bool *stop) {
    struct replay r = { store, { 0 }, 0, 0, false, stop, false, 0 };
    ggprof_store_counts c = ggprof_store_get_counts(store);
    r.n = c.events + c.nodes + c.graphs + c.splits + c.kernels;
    char  *buf = NULL;
    size_t cap = 0;
    int    rc  = 0;
    ggprof_progress quiet = { 0 }; /* inactive: the workload's terminal is not ours while it runs */
    for (r.pass = 0; r.pass < 2 && rc == 0; r.pass++) {
        rc = replay_pass(s, s->fd, pass_from(s, r.pass), end, NULL, &r, &buf, &cap, false, &quiet, 0);
        ggprof_store_commit(store);
    }
    free(buf);
    if (rc == 0 && r.stopped) { /* the descriptions to end are stored, the records to stopped_at */
        s->desc_built = end;
        s->built      = r.stopped_at;
    } else if (rc == 0) {
        s->built = end;
    }
    return rc;
}

uint64_t ggprof_spill_unbuilt(const ggprof_spill *s) {
    uint64_t n = s->good_end - s->built;
    for (int i = 0; i < s->n_segs; i++) n += s->seg[(s->first + i) % GGPROF_SPILL_MAX_SEGS].good_end;
    return n;
}

void ggprof_spill_close(ggprof_spill *s) {
    if (s->fd >= 0) close(s->fd);
    s->fd = -1;
    while (s->n_segs) { /* the segments go with it: what they held is in the database or dropped */
        s->dropped_bytes -= seg_at(s, 0)->good_end, s->dropped_graphs -= seg_at(s, 0)->graphs, s->dropped_segs--;
        seg_drop(s);
    }
}
