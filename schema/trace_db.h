/* The trace database: its DDL, its version rule, and opening one for reading. */
#ifndef GGPROF_TRACE_DB_H
#define GGPROF_TRACE_DB_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

/* Readers accept versions MIN..CURRENT; a writer always writes CURRENT. */
#define GGPROF_DB_VERSION     4 /* 2: nodes.op_id, the replay table; 3: windows, batches, graph_list.batch_id;
                                 * 4: memory (buffer_list, device_memory, plan_list, placements) */
#define GGPROF_DB_VERSION_MIN 1
#define GGPROF_DB_FORMAT      "ggprof-trace"

/* The replay table (ggprof replay), in every new trace and added to an older one when replay first writes it. */
#define GGPROF_DB_REPLAY_DDL                                                                                   \
    "CREATE TABLE IF NOT EXISTS replay(case_id INTEGER, backend TEXT, op TEXT, op_id INTEGER, test TEXT,"     \
    " count INTEGER, insitu_ns REAL, isolated_ns REAL, ratio REAL, share REAL, n_runs INTEGER,"              \
    " replayed_unix INTEGER);\n"

/* A capture window of record (--delay, --duration, --start-paused, SIGUSR1): when recording was on, on the
 * engine's clock (CLOCK_MONOTONIC ns), and what opened and closed it ("start", "delay", "signal"; "duration",
 * "signal", "exit"). */
typedef struct {
    unsigned long long start_ns, end_ns;
    const char        *opened_by, *closed_by;
} ggprof_window;

/* Stores windows in the trace's windows table (made when an older trace lacks it). Returns 0 or -1. */
int ggprof_windows_store(sqlite3 *db, const ggprof_window *w, int n);

#define GGPROF_DB_WINDOWS_DDL                                                                                 \
    "CREATE TABLE IF NOT EXISTS windows(id INTEGER PRIMARY KEY, start_ns INTEGER, end_ns INTEGER, opened_by TEXT,"\
    " closed_by TEXT);\n"

/* Creates every table and view of the current version in an empty database. Returns SQLITE_OK or an error
 * code with the message in *err (sqlite3_free it). */
int ggprof_db_create_schema(sqlite3 *db, char **err);

/* Checks that db is a ggprof trace of a version this build reads. Returns 0, or -1 with a one-line reason
 * naming what was found and what is accepted. */
int ggprof_db_check(sqlite3 *db, const char *path, char *why, size_t why_len);

/* The label of a record's op, one rule for every view: its own extra label (a device group's, RMS_NORM+MUL),
 * else a fused CPU pair's "OP+OP", else NULL. As SQL over an events row E, its node N and its fused node F (the
 * records view, top-kernels), and as C (the analyzer's passes that read the nodes themselves). */
#define GGPROF_SQL_FUSED_LABEL(E, N, F)                                                                        \
    "COALESCE(" E ".extra, CASE WHEN " E ".type = 0 AND " E ".fused_node_id > 0 THEN " N ".op || '+' || " F ".op END)"
const char *ggprof_fused_label(char *buf, size_t len, const char *extra, const char *op, const char *fused_op);

/* The integers of a shape column the database keeps as JSON text (ne, ne_src, type_src, op_params), in order and
 * flattened ("[[4, 5, 1, 1], [4, 1, 1, 1]]" gives 4 5 1 1 4 1 1 1): at most max of them into out; returns how many. */
int ggprof_db_ints(const char *s, int64_t *out, int max);

#endif
