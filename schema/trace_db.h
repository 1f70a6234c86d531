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

/* A trace database from anyone is data, never code (docs/trace-database.md). Opens the one at path for reading:
 * read-only, SQLITE_DBCONFIG_DEFENSIVE, untrusted schema, its triggers and views off, its version checked and every
 * table and column checked against ggprof's schema; ggprof's own views are then made TEMP from ggprof's text.
 * Returns 0, or -1 with a one-line reason naming the file (and the table and column refused). */
int ggprof_db_open_input(const char *path, sqlite3 **db, char *why, size_t why_len);

/* The same settings on any connection that reads or attaches a trace: defensive, untrusted schema, no triggers, no
 * extension loading; own_views 0: no views of a main or attached schema either (TEMP views stay). */
void ggprof_db_harden(sqlite3 *db, int own_views);

/* Refuses (-1, one line naming path, table and column) a table of schema (main, or an attached name) that is not
 * a ggprof table, or a column that is not one of that table's in version GGPROF_DB_VERSION or older. */
int ggprof_db_check_columns(sqlite3 *db, const char *schema, const char *path, char *why, size_t why_len);

/* Attaches the trace at path to db as schema `as`, read-only (a file: URI with mode=ro; db opened with
 * SQLITE_OPEN_URI), db hardened (ggprof_db_harden, its own views kept as they were), the trace's tables and columns
 * checked (ggprof_db_check_columns). 0, or -1 with a one-line reason. */
int ggprof_db_attach_input(sqlite3 *db, const char *path, const char *as, char *why, size_t why_len);

/* The columns table t of schema s has, each quoted ("a", "b"), for an INSERT or SELECT list; sqlite3_free it;
 * NULL on error. */
char *ggprof_db_column_list(sqlite3 *db, const char *s, const char *t);

/* ggprof's table name, from ggprof's own DDL, in main of db. SQLITE_OK, or an error (SQLITE_ERROR: no such table). */
int ggprof_db_create_table(sqlite3 *db, const char *name);

/* ggprof's views in schema ("temp" or "main") from ggprof's own text, those whose tables and columns db has. */
int ggprof_db_create_views(sqlite3 *db, const char *schema);

/* Writing a trace: every writer (the store, record's end, the /proc sampler, merge) adds notes, meta keys and rows
 * through these, so that none depends on a table's column order or formats a value into SQL text. Each returns 0,
 * or -1 with SQLite's error in sqlite3_errmsg(db) (sqlite3_errcode(db): SQLITE_FULL on a full disk); a statement
 * that does not prepare (a bug: a column renamed) also prints one line naming it. */

/* A note (report shows them; kept word for word): pid 0 for record's own. */
int ggprof_db_note(sqlite3 *db, int32_t pid, const char *text);
/* Meta key = value, replacing an earlier value; ggprof_db_meta_int writes value's decimal digits. A key of one
 * process is "KEY.PID" (threads.PID). */
int ggprof_db_meta(sqlite3 *db, const char *key, const char *value);
int ggprof_db_meta_int(sqlite3 *db, const char *key, int64_t value);
/* The records the ring lost (its counters, exact): the losses the threads' LOSS messages named (table losses) and
 * one row (pid and graph_id NULL) for the rest. */
int ggprof_db_put_lost_records(sqlite3 *db, uint64_t lost);
/* The CPU threads a ggml_graph_compute plan of process pid asked for (the engine's CPU_PLAN message), as meta key
 * threads.PID, kept at the most seen; and reading it back (-1: unknown, none was sent). */
int     ggprof_db_put_cpu_threads(sqlite3 *db, int32_t pid, int64_t n_threads);
int64_t ggprof_db_cpu_threads(sqlite3 *db, int32_t pid);

/* Prepares sql (an INSERT naming its columns, values bound by name: VALUES(:pid, ...)) on db. 0, or -1 after one
 * line on stderr naming the statement and SQLite's reason. */
int ggprof_db_prepare_write(sqlite3 *db, const char *sql, sqlite3_stmt **st);
/* Binds by parameter name (":pid"); NULL text binds NULL. Returns 0, or -1 (no such parameter: a bug). */
int ggprof_db_bind_int(sqlite3_stmt *st, const char *name, int64_t v);
int ggprof_db_bind_real(sqlite3_stmt *st, const char *name, double v);
int ggprof_db_bind_text(sqlite3_stmt *st, const char *name, const char *v);
int ggprof_db_bind_null(sqlite3_stmt *st, const char *name);
/* Steps st once and resets it (bindings kept): 0 when it wrote, -1 on an error. */
int ggprof_db_step_write(sqlite3_stmt *st);

/* The indexes a finished trace has (the readers' speed only). */
#define GGPROF_DB_INDEX_DDL                                                                                    \
    "CREATE INDEX IF NOT EXISTS events_graph ON events(pid, graph_id, split_id);"                             \
    "CREATE INDEX IF NOT EXISTS splits_graph ON split_list(pid, graph_id);"                                   \
    "CREATE INDEX IF NOT EXISTS placements_buffer ON placements(pid, buffer_id);"                             \
    "CREATE INDEX IF NOT EXISTS placements_plan ON placements(pid, plan_id, idx);"                            \
    "CREATE INDEX IF NOT EXISTS buffer_handle ON buffer_list(pid, handle, alloc_ns);"

/* a + b for times read from a trace (any int64_t it holds), clamped to int64_t's range instead of overflowing. */
static inline int64_t ggprof_add_sat(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

/* s seconds in ns, clamped to int64_t's range (NaN: 0). */
static inline int64_t ggprof_ns_of_s(double s) {
    double ns = s * 1e9;
    return ns != ns ? 0 : ns >= 9.2e18 ? INT64_MAX : ns <= -9.2e18 ? INT64_MIN : (int64_t) ns;
}

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
