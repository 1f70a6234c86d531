/* Writes what the engine sent into a trace database (schema/trace_db.c); also used to import JSON traces. */
#ifndef GGPROF_STORE_H
#define GGPROF_STORE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

typedef struct ggprof_store ggprof_store;

typedef struct {
    uint64_t events, nodes, graphs, splits, processes, notes, kernels;
    uint64_t unplanned; /* CPU op records left out, their plan (CPU_OPS_PLAN) not seen: counted, not stored */
    int      full;    /* SQLITE_FULL or an I/O error stopped storing: the batch it hit is rolled back, what was
                       * committed before stays, later messages are not stored */
} ggprof_store_counts;

/* Creates a new trace database in the empty file at path, made by ggprof_outfile_begin (outfile.h), or "" for a
 * private temporary one. Returns 0, or -1 with a reason. */
int  ggprof_store_create(ggprof_store **out, const char *path, char *why, size_t why_len);
/* One message from the ring, written by process pid, thread tid. */
void ggprof_store_msg(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_hdr *m);
/* One record with its name given (imports name records themselves); extra may be NULL. */
void ggprof_store_event(ggprof_store *s, int32_t pid, int32_t tid, const ggprof_msg_event *e, const char *name,
                        const char *extra);
/* Meta key = value in the trace (ggprof_db_meta, trace_db.h), in the store's batch; _int: an integer's digits. */
void ggprof_store_meta(ggprof_store *s, const char *key, const char *value);
void ggprof_store_meta_int(ggprof_store *s, const char *key, int64_t value);
/* Makes everything stored so far durable: a reader sees it even if the collector dies afterwards. */
int  ggprof_store_commit(ggprof_store *s);
ggprof_store_counts ggprof_store_get_counts(const ggprof_store *s);
/* The database being written, to read what is stored so far (record writes the JSON as it grows); never to write. */
sqlite3 *ggprof_store_db(ggprof_store *s);
/* Commits and builds the indexes; returns the database (the store is freed) or NULL with a reason. */
sqlite3 *ggprof_store_finish(ggprof_store *s, char *why, size_t why_len);

#endif
