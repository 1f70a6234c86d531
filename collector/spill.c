/* Spill file: frames of (pid, tid, message) appended while the workload runs, replayed into the store after. */
#include "spill.h"

#include <stdlib.h>
#include <string.h>

/* A frame: who wrote the bytes, how many, then the bytes (whole messages). */
typedef struct {
    int32_t  pid, tid;
    uint32_t n, pad;
} frame;

int ggprof_spill_open(ggprof_spill *s, const char *path) {
    memset(s, 0, sizeof(*s));
    s->f = fopen(path, "w+b");
    if (!s->f) return -1;
    setvbuf(s->f, NULL, _IOFBF, 1 << 20);
    return 0;
}

void ggprof_spill_chunk(ggprof_spill *s, const ggprof_ring_slot *slot, const void *bytes, size_t n) {
    frame fr = { slot->pid, slot->tid, (uint32_t) n, 0 };
    if (fwrite(&fr, sizeof(fr), 1, s->f) != 1 || fwrite(bytes, n, 1, s->f) != 1) s->err = 1;
    s->bytes += n;
}

static void on_chunk(const ggprof_ring_slot *slot, const void *bytes, size_t n, void *user) {
    ggprof_spill_chunk(user, slot, bytes, n);
}

size_t ggprof_spill_drain(ggprof_spill *s, ggprof_ring *ring) { return ggprof_ring_drain_raw(ring, on_chunk, s); }

struct replay {
    ggprof_store *store;
    frame         fr;
    uint64_t      n;
    int           pass;
};

/* Descriptions first, records second: a thread may reference a node that another thread described, and
 * the ring's slots are drained one after another, so the description can come later in the file. */
static int is_description(int kind) {
    return kind == GGPROF_MSG_PROCESS || kind == GGPROF_MSG_TYPE || kind == GGPROF_MSG_BACKEND ||
           kind == GGPROF_MSG_NODE;
}

static void replay_msg(const ggprof_msg_hdr *m, void *user) {
    struct replay *r = user;
    if (is_description(m->kind) != (r->pass == 0)) return;
    ggprof_store_msg(r->store, r->fr.pid, r->fr.tid, m);
    if (++r->n % 200000 == 0) ggprof_store_commit(r->store);
}

static int replay_pass(ggprof_spill *s, struct replay *r, char **buf, size_t *cap) {
    rewind(s->f);
    while (fread(&r->fr, sizeof(r->fr), 1, s->f) == 1) {
        if (r->fr.n > *cap) {
            char *b = realloc(*buf, r->fr.n);
            if (!b) return -1;
            *buf = b;
            *cap = r->fr.n;
        }
        if (fread(*buf, r->fr.n, 1, s->f) != 1 || ggprof_msgs_foreach(*buf, r->fr.n, replay_msg, r) < 0) return -1;
    }
    return ferror(s->f) ? -1 : 0;
}

int ggprof_spill_replay(ggprof_spill *s, ggprof_store *store) {
    if (fflush(s->f) != 0 || s->err) return -1;
    long end = ftell(s->f);
    struct replay r = { store, { 0 }, 0, 0 };
    char  *buf = NULL;
    size_t cap = 0;
    int    rc  = 0;
    for (r.pass = 0; r.pass < 2 && rc == 0; r.pass++) rc = replay_pass(s, &r, &buf, &cap);
    free(buf);
    /* Back to the end: the spill may go on growing (GGML_PROFILE replays it at every flush). */
    if (fseek(s->f, end, SEEK_SET) != 0) rc = -1;
    return rc;
}

void ggprof_spill_close(ggprof_spill *s) {
    if (s->f) fclose(s->f);
    s->f = NULL;
}
