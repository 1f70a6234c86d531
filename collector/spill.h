/* The collector's spill file: ring messages copied out as they arrive, turned into the database after the run. */
#ifndef GGPROF_SPILL_H
#define GGPROF_SPILL_H

#include <stdint.h>
#include <stdio.h>

#include "ring.h"
#include "store.h"

/* While the workload runs, the collector only moves bytes: storing into SQLite costs microseconds per record,
 * and on a machine whose cores the workload's spinning threads keep busy, that time is taken from them. */
typedef struct {
    FILE    *f;
    uint64_t bytes;
    int      err;
} ggprof_spill;

int    ggprof_spill_open(ggprof_spill *s, const char *path);
/* Moves every published message from the ring to the spill file; returns the bytes moved. */
size_t ggprof_spill_drain(ggprof_spill *s, ggprof_ring *ring);
/* Appends one run of whole messages written by slot's thread. */
void   ggprof_spill_chunk(ggprof_spill *s, const ggprof_ring_slot *slot, const void *bytes, size_t n);
/* Replays the spill file into the store, in the order the messages were drained. Returns 0 or -1. */
int    ggprof_spill_replay(ggprof_spill *s, ggprof_store *store);
void   ggprof_spill_close(ggprof_spill *s);

#endif
