/* The collector's spill file: ring messages copied out as they arrive, turned into the database after the run. */
#ifndef GGPROF_SPILL_H
#define GGPROF_SPILL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ring.h"
#include "store.h"

/* While the workload runs, the collector only moves bytes: storing into SQLite costs microseconds per record,
 * and on a machine whose cores the workload's spinning threads keep busy, that time is taken from them.
 * Frames are written whole or not at all: when the disk fills, the file is cut back to its last whole frame,
 * and what comes after is counted as lost, never half-written. */
/* A flight recorder's segment: records (not descriptions) spilled one after another, dropped whole, oldest first. */
typedef struct {
    int      fd;
    uint64_t good_end;
    uint64_t graphs; /* GRAPH messages in it */
} ggprof_spill_seg;

#define GGPROF_SPILL_MAX_SEGS 64

typedef struct {
    int      fd;
    uint64_t bytes;     /* message bytes written */
    uint64_t good_end;  /* the file's length in whole frames */
    int      err;       /* errno of the first failed write, 0 if none: what came after is lost */
    /* record --max-mb: descriptions stay in the file above; records go to segments beside it (PATH.N), and the
     * oldest segments are dropped so that the segments hold at most keep_max bytes plus the one being written. */
    uint64_t         keep_max, seg_max;
    char             path[4096];
    ggprof_spill_seg seg[GGPROF_SPILL_MAX_SEGS]; /* seg[first..first+n_segs), ring indices */
    int              first, n_segs, next_name, rotate;
    uint64_t         dropped_bytes, dropped_segs, dropped_graphs;
    /* record's database, built while the workload runs: the file's frames before built are in the store, and the
     * descriptions of those before desc_built (a build stopped in its records' pass) */
    uint64_t built, desc_built;
    /* record --metrics: each drained run of messages is also shown to tap (the live aggregates, live.h) */
    void (*tap)(int32_t pid, const void *bytes, size_t n, void *user);
    void *tap_user;
} ggprof_spill;

/* Creates (or takes over) the spill file, locked, mode 0600: 0, -2 when another collector holds it, -3 when it
 * belongs to another user (or is not a regular file), -1 with errno. */
int    ggprof_spill_open(ggprof_spill *s, const char *path);
/* Keeps at most about max_bytes of records from now on (record --max-mb): the flight recorder. Returns 0 or -1. */
int    ggprof_spill_bound(ggprof_spill *s, const char *path, uint64_t max_bytes);
/* Moves every published message from the ring to the spill file; returns the bytes moved (lost ones included). */
size_t ggprof_spill_drain(ggprof_spill *s, ggprof_ring *ring);
/* Appends one run of whole messages written by slot's thread. */
void   ggprof_spill_chunk(ggprof_spill *s, const ggprof_ring_slot *slot, const void *bytes, size_t n);
/* Whether the database may be built while the workload runs: not for a flight recorder (--max-mb: its oldest
 * records may still go), nor on a disk short of room (the end's replay then gives the database the spill's room). */
bool   ggprof_spill_can_build(ggprof_spill *s);
/* Stores the frames from built to end (a drain's end: a record's description is drained in the same drain or an
 * earlier one, so their descriptions then their records store as the whole file's two passes would), committed.
 * It only reads the file: another thread may append to it meanwhile. stop (NULL: none) set by another thread ends
 * the records' pass at the next frame: built moves there, the next build or replay goes on from it (record's end
 * need not wait for a round of the builder). Returns 0, or -1 when it cannot be read. */
int    ggprof_spill_build(ggprof_spill *s, ggprof_store *store, uint64_t end, const atomic_bool *stop);
/* The bytes of frames not stored yet (a flight recorder's segments included): what the end's replay has to do. */
uint64_t ggprof_spill_unbuilt(const ggprof_spill *s);
/* Replays the spill file's frames not built yet into the store, in the order the messages were drained. With release, the file's space is
 * given back to the file system behind each committed batch (record's last replay: on a full disk the database
 * grows into it). Returns 0, or -1 when the file could not be read back. */
int    ggprof_spill_replay(ggprof_spill *s, ggprof_store *store, bool release);
void   ggprof_spill_close(ggprof_spill *s);

#endif
