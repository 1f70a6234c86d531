/* ggprof merge: puts traces of several processes (an RPC client and its servers) on one timeline. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "collector_commands.h"
#include "outfile.h"
#include "store.h"
#include "trace.h"
#include "trace_db.h"

const char ggprof_usage_merge[] =
    "usage: ggprof merge " GGPROF_HELP_SYNOPSIS " CLIENT TRACE...\n"
    "\n"
    "Writes one trace with the processes of every input. CLIENT's clock is the reference; each other TRACE is\n"
    "shifted by an offset estimated from matched request and response events: a ggml RPC server's graph\n"
    "computes (found by the port in its command line) are paired in order with CLIENT's splits on the RPC\n"
    "backend of that port (the request) and the client's next wait on that backend (the response); the\n"
    "offset is the middle of the range in which every server compute falls between its request and its\n"
    "response. Traces without such pairs keep their own clock (offset 0), as for processes of one machine.\n"
    "Prints each offset, the width of its range (its uncertainty) and the number of pairs.\n"
    GGPROF_HELP_OPTIONS;

/* The tables a trace holds (schema/trace_db.c), and which of their columns are moments to shift (durations are
 * not). A table the input lacks (an older trace) is skipped; so is `replay` (a table of `ggprof replay`'s results
 * for one trace, not of a process). */
static const struct {
    const char *table;
    const char *time_cols[2]; /* NULL: none */
} k_tables[] = {
    { "processes", { "start_ns" } },  { "ggml_types", { NULL } },       { "backend_list", { NULL } },
    { "nodes", { NULL } },            { "graph_list", { "start_ns" } }, { "split_list", { "start_ns" } },
    { "events", { "start_ns" } },     { "notes", { NULL } },            { "losses", { NULL } },
    { "kernel_list", { "start_ns" } }, { "regions", { "start_ns" } },   { "batches", { "start_ns" } },
    { "batch_seqs", { NULL } },
    { "processes_time", { "fork_ns", "exit_ns" } }, { "thread_idle", { "start_ns", "end_ns" } },
    { "thread_stats", { "first_ns", "last_ns" } },  { "buffer_list", { "alloc_ns", "free_ns" } },
    { "device_memory", { "t_ns" } },  { "plan_list", { "t_ns" } },      { "placements", { NULL } },
    { "node_placements", { NULL } }, { "op_threads", { NULL } },
    { "windows", { "start_ns", "end_ns" } }, /* its id is given anew (the inputs' ids would collide) */
};

/* The per-process keys of meta ("threads.PID": collector/proc_sample.c), copied with the pid shifted. */
static const char *const k_meta_per_pid[] = { "threads", "cpus_allowed", "cpu_quota" };

typedef struct {
    int64_t  offset;    /* add to the input's times */
    int64_t  lo, hi;    /* the range every pair allows */
    int      pairs;
} offset_est;

/* The server's port, from its recorded command line ("... -p 50052 ..." or "--port 50052"); 0 if none. */
static int server_port(sqlite3 *db) {
    sqlite3_stmt *st = NULL;
    int port = 0;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'command'", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        const char *cmd = (const char *) sqlite3_column_text(st, 0);
        if (cmd && strstr(cmd, "rpc-server")) {
            port = 50052; /* ggml-rpc-server's default */
            const char *p = strstr(cmd, " -p ");
            if (!p) p = strstr(cmd, " --port ");
            if (p) port = atoi(strchr(p + 1, ' ') + 1);
        }
    }
    sqlite3_finalize(st);
    return port;
}

static int estimate(sqlite3 *client, sqlite3 *server, offset_est *e) {
    memset(e, 0, sizeof(*e));
    int port = server_port(server);
    if (!port) return 0;
    char like[64];
    snprintf(like, sizeof(like), "RPC%%:%d]", port);
    sqlite3_stmt *c = NULL, *s = NULL;
    sqlite3_prepare_v2(client,
                       "SELECT s.start_ns, s.duration_ns, s.sched_id, s.backend_id FROM splits s JOIN backends b"
                       " ON b.pid = s.pid AND b.sched_id = s.sched_id AND b.id = s.backend_id WHERE b.name LIKE ?"
                       " ORDER BY s.start_ns",
                       -1, &c, NULL);
    sqlite3_bind_text(c, 1, like, -1, SQLITE_TRANSIENT);
    sqlite3_prepare_v2(server, "SELECT start_ns, duration_ns FROM graphs ORDER BY start_ns", -1, &s, NULL);
    /* The response: the client's first wait on that backend that ends after the request (RPC computes are
     * asynchronous; ggml_backend_synchronize returns once the server has answered). */
    sqlite3_stmt *w = NULL;
    sqlite3_prepare_v2(client,
                       "SELECT min(start_ns + duration_ns) FROM records WHERE sched_id = ?1 AND backend_id = ?2"
                       " AND type = 2 AND name = 'backend_wait' AND start_ns + duration_ns >= ?3",
                       -1, &w, NULL);
    e->lo = INT64_MIN;
    e->hi = INT64_MAX;
    while (c && s && sqlite3_step(c) == SQLITE_ROW && sqlite3_step(s) == SQLITE_ROW) {
        int64_t c0 = sqlite3_column_int64(c, 0), c1 = c0 + sqlite3_column_int64(c, 1);
        int64_t s0 = sqlite3_column_int64(s, 0), s1 = s0 + sqlite3_column_int64(s, 1);
        sqlite3_bind_int64(w, 1, sqlite3_column_int64(c, 2));
        sqlite3_bind_int64(w, 2, sqlite3_column_int64(c, 3));
        sqlite3_bind_int64(w, 3, c1);
        if (w && sqlite3_step(w) == SQLITE_ROW && sqlite3_column_type(w, 0) != SQLITE_NULL) {
            c1 = sqlite3_column_int64(w, 0);
        }
        sqlite3_reset(w);
        /* The server computes after the request left and finishes before the response arrives. */
        if (c0 - s0 > e->lo) e->lo = c0 - s0;
        if (c1 - s1 < e->hi) e->hi = c1 - s1;
        e->pairs++;
    }
    sqlite3_finalize(c);
    sqlite3_finalize(s);
    sqlite3_finalize(w);
    if (!e->pairs) return 0;
    /* An empty range means the backend did not wait for the server: the lower bound is all that holds. */
    e->offset = e->lo <= e->hi ? e->lo + (e->hi - e->lo) / 2 : e->lo;
    return 1;
}

/* The input's rows into ggprof's tables of out: the input attached read-only and checked (ggprof_db_attach_input),
 * its columns named on both sides, quoted, each one ggprof's (a trace of an older schema, without
 * graph_list.batch_id say, leaves the newer columns NULL). No SQL text or name of the input is run. */
static int copy_input(sqlite3 *out, const char *path, int64_t offset, int64_t pid_shift, char *why, size_t len) {
    if (ggprof_db_attach_input(out, path, "src", why, len) != 0) return -1;
    int rc = 0;
    for (size_t t = 0; rc == 0 && t < sizeof(k_tables) / sizeof(k_tables[0]); t++) {
        const char *table = k_tables[t].table;
        sqlite3_stmt *st  = NULL;
        if (sqlite3_prepare_v2(out, "SELECT name FROM pragma_table_info(?1, 'src') ORDER BY cid", -1, &st, NULL) != SQLITE_OK) {
            rc = -1;
            break;
        }
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        char *cols = sqlite3_mprintf("%s", ""), *vals = sqlite3_mprintf("%s", "");
        while (cols && vals && sqlite3_step(st) == SQLITE_ROW) {
            const char *col = (const char *) sqlite3_column_text(st, 0);
            if (strcmp(table, "windows") == 0 && strcmp(col, "id") == 0) continue;
            const char *sep = *cols ? ", " : "";
            char *c = sqlite3_mprintf("%s%s\"%w\"", cols, sep, col), *v;
            if (strcmp(col, "pid") == 0) {
                v = sqlite3_mprintf("%s%s\"pid\" + %lld", vals, sep, (long long) pid_shift);
            } else if ((k_tables[t].time_cols[0] && strcmp(col, k_tables[t].time_cols[0]) == 0) ||
                       (k_tables[t].time_cols[1] && strcmp(col, k_tables[t].time_cols[1]) == 0)) {
                v = sqlite3_mprintf("%s%s\"%w\" + %lld", vals, sep, col, (long long) offset); /* NULL stays NULL */
            } else {
                v = sqlite3_mprintf("%s%s\"%w\"", vals, sep, col);
            }
            sqlite3_free(cols);
            sqlite3_free(vals);
            cols = c, vals = v;
        }
        sqlite3_finalize(st);
        char *sql = cols && vals && *cols ? sqlite3_mprintf("INSERT INTO main.\"%w\"(%s) SELECT %s FROM src.\"%w\"", table,
                                                            cols, vals, table)
                                          : NULL;
        char *err = NULL;
        if (sql && sqlite3_exec(out, sql, NULL, NULL, &err) != SQLITE_OK) {
            snprintf(why, len, "merging '%s' (%s): %s", path, table, err ? err : "?");
            rc = -1;
        } else if (!cols || !vals) {
            snprintf(why, len, "out of memory");
            rc = -1;
        }
        sqlite3_free(err);
        sqlite3_free(sql);
        sqlite3_free(cols);
        sqlite3_free(vals);
    }
    for (size_t k = 0; rc == 0 && k < sizeof(k_meta_per_pid) / sizeof(k_meta_per_pid[0]); k++) {
        sqlite3_stmt *st = NULL;
        const char *sql = "INSERT OR REPLACE INTO main.meta(key, value) SELECT ?1 || '.' || (CAST(substr(key, length(?1) + 2) AS INTEGER)"
                          " + ?2), value FROM src.meta WHERE key GLOB ?1 || '.[0-9]*'";
        if (sqlite3_prepare_v2(out, sql, -1, &st, NULL) != SQLITE_OK) {
            snprintf(why, len, "merging '%s' (meta): %s", path, sqlite3_errmsg(out));
            rc = -1;
            break;
        }
        sqlite3_bind_text(st, 1, k_meta_per_pid[k], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, pid_shift);
        if (sqlite3_step(st) != SQLITE_DONE) {
            snprintf(why, len, "merging '%s' (meta): %s", path, sqlite3_errmsg(out));
            rc = -1;
        }
        sqlite3_finalize(st);
    }
    return sqlite3_exec(out, "DETACH DATABASE src", NULL, NULL, NULL) == SQLITE_OK ? rc : -1;
}

int ggprof_cmd_merge(int argc, char **argv) {
    const char *out = NULL;
    const ggprof_opt opts[] = {
        { "--output", "-o", GGPROF_OPT_STRING, &out, NULL, "OUT.db", "the merged trace to write (needed)" },
    };
    const char **in = calloc((size_t) argc, sizeof(*in)); /* CLIENT TRACE... */
    if (!in) return ggprof_fail(GGPROF_EXIT_INTERNAL, "out of memory");
    ggprof_args a = { opts, 1, in, argc, 0, "%s", 0, 0, NULL };
    int bad = ggprof_parse_args(argc, argv, &a);
    if (!bad && (!out || a.n_pos < 2)) bad = ggprof_fail(GGPROF_EXIT_USAGE, "usage: ggprof merge -o OUT.db CLIENT TRACE...");
    if (bad) {
        free(in);
        return bad;
    }
    char why[512];
    int n = a.n_pos;
    sqlite3 **dbs = calloc((size_t) n, sizeof(*dbs));
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        rc = ggprof_trace_open(in[i], &dbs[i], why, sizeof(why));
        if (rc) ggprof_err("%s", why);
        else if (strstr(in[i], ".json")) rc = ggprof_fail(GGPROF_EXIT_USAGE, "merge takes trace databases; '%s' is JSON", in[i]);
    }
    ggprof_store *store = NULL;
    ggprof_outfile of = { .tmp = "" }; /* OUT written beside it, renamed over it once whole */
    if (!rc) {
        int ofd = ggprof_outfile_begin(&of, out);
        if (ofd < 0) rc = ggprof_fail(GGPROF_EXIT_USAGE, "cannot write '%s': %s", out, strerror(errno));
        else if (close(ofd), ggprof_store_create(&store, of.tmp, why, sizeof(why)) != 0) rc = ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);
    }
    sqlite3 *o = store ? ggprof_store_finish(store, why, sizeof(why)) : NULL;
    if (!rc && !o) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "%s", why);
    /* again (the hidden file, renamed over OUT at the end), with URI names on: the inputs attach read-only
     * (file:...?mode=ro); "./" keeps a name that begins with "file:" a file name */
    if (o) {
        sqlite3_close(o);
        o = NULL;
        char *name = sqlite3_mprintf("%s%s", strncmp(of.tmp, "file:", 5) == 0 ? "./" : "", of.tmp);
        if (!name || sqlite3_open_v2(name, &o, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
            if (!rc) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot open '%s' again: %s", out, o ? sqlite3_errmsg(o) : "?");
            sqlite3_close(o);
            o = NULL;
        }
        sqlite3_free(name);
        if (o) ggprof_db_harden(o, 1);
    }
    /* All offsets first, while the client's trace is open. */
    offset_est *est = calloc((size_t) n, sizeof(*est));
    for (int i = 1; i < n && !rc && est; i++) {
        if (estimate(dbs[0], dbs[i], &est[i])) {
            printf("%s: offset %+" PRId64 " ns (range %" PRId64 " ns, %d matched request/response pairs)\n",
                   in[i], est[i].offset, est[i].lo <= est[i].hi ? est[i].hi - est[i].lo : -1, est[i].pairs);
        } else {
            printf("%s: offset 0 (no RPC requests of the client matched; same clock assumed)\n", in[i]);
        }
    }
    for (int i = 0; i < n && !rc && est; i++) {
        offset_est e = est[i];
        /* Processes of different machines may share a pid: keep them apart. */
        int64_t shift = 0;
        sqlite3_stmt *st = NULL;
        sqlite3_prepare_v2(dbs[i], "SELECT pid FROM processes", -1, &st, NULL);
        while (st && sqlite3_step(st) == SQLITE_ROW) {
            sqlite3_stmt *chk = NULL;
            sqlite3_prepare_v2(o, "SELECT count(*) FROM processes WHERE pid = ?", -1, &chk, NULL);
            sqlite3_bind_int64(chk, 1, sqlite3_column_int64(st, 0));
            if (sqlite3_step(chk) == SQLITE_ROW && sqlite3_column_int(chk, 0) > 0) shift = 10000000LL * i;
            sqlite3_finalize(chk);
        }
        sqlite3_finalize(st);
        sqlite3_close(dbs[i]);
        dbs[i] = NULL;
        if (copy_input(o, in[i], e.offset, shift, why, sizeof(why)) != 0) rc = ggprof_fail(GGPROF_EXIT_USAGE, "%s", why);
        char key[32];
        snprintf(key, sizeof(key), "merged.%d", i);
        if (!rc && ggprof_db_meta(o, key, in[i]) != 0) {
            rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write meta '%s' into '%s': %s", key, out, sqlite3_errmsg(o));
        }
    }
    for (int i = 0; i < n; i++) sqlite3_close(dbs[i]);
    free(dbs);
    free(est);
    free(in);
    if (o && sqlite3_close(o) != SQLITE_OK && !rc) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot close '%s'", out);
    if (out && ggprof_outfile_end(&of, !rc) != 0) rc = ggprof_fail(GGPROF_EXIT_INTERNAL, "cannot write '%s': %s", out, strerror(errno));
    return rc;
}
