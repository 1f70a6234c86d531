/* CPU threads (docs/analysis.md, "Threads"). The engine times thread 0 only: each op up to its tick, and its wait in
 * the barrier after it (a cpu_barrier record), which is how long the slowest thread finished after thread 0. The
 * other threads are not timed op by op (that would cost every thread at every node): per op, the imbalance given
 * is the slowest thread's lead over thread 0, a lower bound of slowest minus fastest. Per process, the threads ggml
 * was asked to use (the engine's note of ggml_cplan.n_threads) against the CPUs it may use (record's
 * processes_time), and the time its threads waited for a CPU (schedstat's run-queue time). */
#include "threads.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "v3_format.h"

static int64_t col_or(sqlite3_stmt *st, int i, int64_t dflt) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

int ggprof_threads_summary(sqlite3 *db, int pid, ggprof_threads_summary_t *out) {
    memset(out, 0, sizeof(*out));
    out->pid = pid, out->threads_used = out->cpus_allowed = out->oversubscribed = -1, out->cpu_quota = -1;
    out->nivcsw = -1;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT n_threads, n_cpus_allowed, cpu_quota, nivcsw FROM processes_time WHERE pid = ?"
                               " LIMIT 1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, pid);
        if (sqlite3_step(st) == SQLITE_ROW) {
            out->threads_used = (int) col_or(st, 0, -1);
            out->cpus_allowed = (int) col_or(st, 1, -1);
            out->cpu_quota    = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 2);
            out->nivcsw       = col_or(st, 3, -1);
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT sum(cpu_ns), sum(runq_ns) FROM thread_stats WHERE pid = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, pid);
        if (sqlite3_step(st) == SQLITE_ROW) out->cpu_ns = col_or(st, 0, 0), out->runq_ns = col_or(st, 1, 0);
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM graph_list WHERE pid = ?", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, pid);
        if (sqlite3_step(st) == SQLITE_ROW) out->graphs = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    double cpus = out->cpus_allowed > 0 ? out->cpus_allowed : -1;
    if (out->cpu_quota > 0 && (cpus < 0 || out->cpu_quota < cpus)) cpus = out->cpu_quota;
    if (out->threads_used > 0 && cpus > 0) out->oversubscribed = out->threads_used > cpus;
    /* Each cpu_barrier record follows the op it waits after, in the same split of the same thread (schema/wire.c,
     * ggprof_cpu_ops_expand): the previous row of its split is that op. */
    static const char *const sql =
        "WITH e AS (SELECT type, name, duration_ns, wait_ns, LAG(type) OVER w AS ptype, LAG(name) OVER w AS pname"
        "  FROM events WHERE pid = ?1 AND timing = 2 AND type IN (0, 2)"
        "  WINDOW w AS (PARTITION BY graph_id, split_id, tid ORDER BY rowid))"
        " SELECT op, sum(n), sum(busy), sum(w), sum(b), max(b) FROM ("
        "  SELECT name AS op, 1 AS n, max(duration_ns - COALESCE(wait_ns, 0), 0) AS busy,"
        "   min(COALESCE(wait_ns, 0), duration_ns) AS w, 0 AS b FROM e WHERE type = 0"
        "  UNION ALL SELECT CASE WHEN ptype = 0 THEN pname ELSE '(other)' END, 0, 0, 0, duration_ns FROM e"
        "   WHERE type = 2 AND name = 'cpu_barrier')"
        " GROUP BY op ORDER BY 5 DESC, 3 DESC, 1";
    st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_int(st, 1, pid);
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        ggprof_thread_op *n = realloc(out->ops, (out->n_ops + 1) * sizeof(*n));
        if (!n) { rc = -1; break; }
        out->ops = n;
        ggprof_thread_op *o = &n[out->n_ops++];
        const unsigned char *name = sqlite3_column_text(st, 0);
        snprintf(o->op, sizeof(o->op), "%s", name ? (const char *) name : "?");
        o->count          = sqlite3_column_int64(st, 1);
        o->busy_ns        = sqlite3_column_int64(st, 2);
        o->wait_ns        = sqlite3_column_int64(st, 3);
        o->barrier_ns     = sqlite3_column_int64(st, 4);
        o->max_barrier_ns = sqlite3_column_int64(st, 5);
        out->barrier_ns += o->barrier_ns;
    }
    sqlite3_finalize(st);
    if (rc) ggprof_threads_summary_free(out);
    return rc;
}

void ggprof_threads_summary_free(ggprof_threads_summary_t *s) {
    free(s->ops);
    s->ops   = NULL;
    s->n_ops = 0;
}

void ggprof_threads_print(FILE *f, sqlite3 *db) {
    sqlite3_stmt *ps = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, cpus_allowed FROM processes_time ORDER BY fork_ns, pid", -1, &ps, NULL) != SQLITE_OK) {
        return; /* a trace of an older ggprof, or not made by record */
    }
    bool title = false;
    while (sqlite3_step(ps) == SQLITE_ROW) {
        int pid = sqlite3_column_int(ps, 0);
        const unsigned char *list = sqlite3_column_text(ps, 1);
        ggprof_threads_summary_t s;
        if (ggprof_threads_summary(db, pid, &s) != 0) continue;
        if (s.threads_used < 0 && s.n_ops == 0) { /* no ggml CPU compute in this process */
            ggprof_threads_summary_free(&s);
            continue;
        }
        if (!title) fprintf(f, "\nThreads:\n"), title = true;
        char cpus[64] = "unknown", quota[48] = "none", used[32] = "unknown";
        if (s.cpus_allowed > 0) snprintf(cpus, sizeof(cpus), "%d (%.40s)", s.cpus_allowed, list ? (const char *) list : "");
        if (s.cpu_quota > 0) snprintf(quota, sizeof(quota), "%.2f CPUs", s.cpu_quota);
        if (s.threads_used > 0) snprintf(used, sizeof(used), "%d", s.threads_used);
        fprintf(f, "  pid %d: ggml CPU threads %s, CPUs allowed %s, cgroup quota %s: %s\n", pid, used, cpus, quota,
                s.oversubscribed == 1 ? "OVERSUBSCRIBED (more threads than CPUs)"
                : s.oversubscribed == 0 ? "not oversubscribed" : "oversubscription unknown");
        fprintf(f, "  pid %d: threads on a CPU %.1f ms, runnable but waiting for a CPU %.1f ms", pid, (double) s.cpu_ns / 1e6,
                (double) s.runq_ns / 1e6);
        if (s.nivcsw >= 0 && s.graphs > 0) {
            fprintf(f, "; involuntary context switches %" PRId64 " (%.1f per graph, the process's over the run)", s.nivcsw,
                    (double) s.nivcsw / (double) s.graphs);
        }
        fprintf(f, "\n");
        if (s.n_ops) {
            fprintf(f, "  pid %d: per op, thread 0 (barrier after = the slowest thread's lead over thread 0; ns):\n", pid);
            fprintf(f, "    %-24s %8s %14s %12s %14s %14s\n", "op", "count", "busy_ns", "wait_ns", "barrier_ns", "max_barrier_ns");
            for (size_t i = 0; i < s.n_ops; i++) {
                const ggprof_thread_op *o = &s.ops[i];
                char safe[48];
                fprintf(f, "    %-24s %8" PRId64 " %14" PRId64 " %12" PRId64 " %14" PRId64 " %14" PRId64 "\n",
                        ggprof_text_safe(o->op, safe, sizeof(safe)), o->count, o->busy_ns, o->wait_ns, o->barrier_ns,
                        o->max_barrier_ns);
            }
            fprintf(f, "    %-24s %8s %14s %12s %14" PRId64 "\n", "total", "", "", "", s.barrier_ns);
        }
        ggprof_threads_summary_free(&s);
    }
    sqlite3_finalize(ps);
}
