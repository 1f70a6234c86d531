/* CPU threads (docs/analysis.md, "Threads"). The engine times thread 0: each op up to its tick, and its wait in the
 * barrier after it (a cpu_barrier record), which is how long the slowest thread finished after thread 0. With
 * record --threads it also times every other thread at its barriers (op_threads): per op and thread busy and wait,
 * and the imbalance, slowest minus fastest arrival. Without it, per op, the imbalance given is the slowest thread's
 * lead over thread 0, a lower bound of slowest minus fastest. Per process, the threads ggml was asked to use (the
 * engine's note of ggml_cplan.n_threads) against the CPUs it may use (record's processes_time), and the time its
 * threads waited for a CPU (schedstat's run-queue time). */
#include "threads.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sort.h"
#include "sql.h"
#include "v3_format.h"

static int64_t col_or(sqlite3_stmt *st, int i, int64_t dflt) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

/* A total() of op_threads as ns: the table comes from outside (a trace file), so a sum beyond int64 is clamped. */
static int64_t col_ns(sqlite3_stmt *st, int i) {
    double v = sqlite3_column_double(st, i);
    return !(v > 0) ? 0 : v >= 9.2e18 ? INT64_MAX : (int64_t) v;
}

/* a + b, clamped (a trace's figures are outside data) */
static int64_t add_ns(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}

static int cmp_all(const void *a, const void *b) {
    const ggprof_thread_op_all *x = a, *y = b;
    if (x->imbalance_ns != y->imbalance_ns) return x->imbalance_ns < y->imbalance_ns ? 1 : -1;
    return strcmp(x->op, y->op);
}

/* record --threads: the pid's op_threads rows, per op (the OP record's name) and thread. Negative figures count as
 * 0 and thread numbers from GGPROF_THREADS_MAX on are not read (a trace is outside data). 0, or -1. */
static int read_op_threads(sqlite3 *db, int pid, ggprof_threads_summary_t *out) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT max(thread) FROM op_threads WHERE pid = ?1 AND thread >= 0 AND thread < ?2", -1,
                           &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return 0; /* a trace of an older ggprof: no table */
    }
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, GGPROF_THREADS_MAX);
    int nt = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ? sqlite3_column_int(st, 0) + 1 : 0;
    sqlite3_finalize(st);
    if (nt <= 0 || nt > GGPROF_THREADS_MAX) return 0;
    static const char *const sql =
        "SELECT e.name, t.thread, count(*), total(max(t.busy_ns, 0)), total(max(t.wait_ns, 0)),"
        " total(max(t.imbalance_ns, 0)) FROM op_threads t JOIN events e ON e.pid = t.pid AND e.graph_id = t.graph_id"
        " AND e.split_id = t.split_id AND e.node_index = t.node_index AND e.type = 0"
        " WHERE t.pid = ?1 AND t.thread >= 0 AND t.thread < ?2 GROUP BY e.name, t.thread ORDER BY e.name, t.thread";
    st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) return -1;
    sqlite3_bind_int(st, 1, pid);
    sqlite3_bind_int(st, 2, nt);
    out->n_threads = nt;
    int rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        const unsigned char *name = sqlite3_column_text(st, 0);
        char op[48];
        snprintf(op, sizeof(op), "%s", name ? (const char *) name : "?");
        ggprof_thread_op_all *o = out->n_all ? &out->all[out->n_all - 1] : NULL;
        if (!o || strcmp(o->op, op) != 0) {
            ggprof_thread_op_all *n = realloc(out->all, (out->n_all + 1) * sizeof(*n));
            if (!n) { rc = -1; break; }
            out->all = n;
            o = &n[out->n_all++];
            memset(o, 0, sizeof(*o));
            memcpy(o->op, op, sizeof(op));
            o->busy_ns = calloc((size_t) nt, sizeof(*o->busy_ns));
            o->wait_ns = calloc((size_t) nt, sizeof(*o->wait_ns));
            if (!o->busy_ns || !o->wait_ns) { rc = -1; break; }
        }
        int th = sqlite3_column_int(st, 1);
        /* (names cut at 47 bytes may meet: their figures add up) */
        o->busy_ns[th] = add_ns(o->busy_ns[th], col_ns(st, 3));
        o->wait_ns[th] = add_ns(o->wait_ns[th], col_ns(st, 4));
        if (th == 0) o->count += sqlite3_column_int64(st, 2);
        o->imbalance_ns   = add_ns(o->imbalance_ns, col_ns(st, 5));
        out->imbalance_ns = add_ns(out->imbalance_ns, col_ns(st, 5));
    }
    sqlite3_finalize(st);
    ggprof_sort(out->all, out->n_all, sizeof(*out->all), cmp_all);
    return rc;
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
        out->barrier_ns   = add_ns(out->barrier_ns, o->barrier_ns);
    }
    sqlite3_finalize(st);
    if (rc == 0) rc = read_op_threads(db, pid, out);
    if (rc) ggprof_threads_summary_free(out);
    return rc;
}

void ggprof_threads_summary_free(ggprof_threads_summary_t *s) {
    free(s->ops);
    s->ops   = NULL;
    s->n_ops = 0;
    for (size_t i = 0; i < s->n_all; i++) free(s->all[i].busy_ns), free(s->all[i].wait_ns);
    free(s->all);
    s->all   = NULL;
    s->n_all = 0;
}

/* Each process report's Threads section shows (record measured it, and it computed on ggml's CPU backend): fn with
 * its summary and its affinity list (NULL if unknown). */
typedef void (*proc_fn)(FILE *f, const ggprof_threads_summary_t *s, const char *cpu_list, int *first);
static void each_process(FILE *f, sqlite3 *db, proc_fn fn) {
    sqlite3_stmt *ps = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, cpus_allowed FROM processes_time ORDER BY fork_ns, pid", -1, &ps, NULL) != SQLITE_OK) {
        sqlite3_finalize(ps);
        return; /* a trace of an older ggprof, or not made by record */
    }
    int first = 1;
    while (sqlite3_step(ps) == SQLITE_ROW) {
        int pid = sqlite3_column_int(ps, 0);
        const unsigned char *list = sqlite3_column_text(ps, 1);
        ggprof_threads_summary_t s;
        if (ggprof_threads_summary(db, pid, &s) != 0) continue;
        if (s.threads_used >= 0 || s.n_ops || s.n_all) fn(f, &s, list ? (const char *) list : NULL, &first);
        ggprof_threads_summary_free(&s);
    }
    sqlite3_finalize(ps);
}

static void print_proc(FILE *f, const ggprof_threads_summary_t *s, const char *list, int *first) {
    int pid = s->pid;
    if (*first) fprintf(f, "\nThreads:\n"), *first = 0;
    char cpus[64] = "unknown", quota[48] = "none", used[32] = "unknown";
    char list_safe[64];
    if (s->cpus_allowed > 0) {
        const char *l = list ? ggprof_text_safe(list, list_safe, sizeof(list_safe)) : "";
        snprintf(cpus, sizeof(cpus), "%d (%.40s)", s->cpus_allowed, l);
    }
    if (s->cpu_quota > 0) snprintf(quota, sizeof(quota), "%.2f CPUs", s->cpu_quota);
    if (s->threads_used > 0) snprintf(used, sizeof(used), "%d", s->threads_used);
    fprintf(f, "  pid %d: ggml CPU threads %s, CPUs allowed %s, cgroup quota %s: %s\n", pid, used, cpus, quota,
            s->oversubscribed == 1 ? "OVERSUBSCRIBED (more threads than CPUs)"
            : s->oversubscribed == 0 ? "not oversubscribed" : "oversubscription unknown");
    fprintf(f, "  pid %d: threads on a CPU %.1f ms, runnable but waiting for a CPU %.1f ms", pid, (double) s->cpu_ns / 1e6,
            (double) s->runq_ns / 1e6);
    if (s->nivcsw >= 0 && s->graphs > 0) {
        fprintf(f, "; involuntary context switches %" PRId64 " (%.1f per graph: the process's whole run, loading"
                   " included, over its %" PRId64 " graphs)", s->nivcsw, (double) s->nivcsw / (double) s->graphs, s->graphs);
    }
    fprintf(f, "\n");
    char safe[48];
    if (s->n_all) {
        fprintf(f, "  pid %d: per op and thread (record --threads; ns; imbalance: slowest minus fastest arrival at the"
                   " op's barriers):\n", pid);
        fprintf(f, "    %-24s %8s %14s %6s %14s %14s\n", "op", "count", "imbalance_ns", "thread", "busy_ns", "wait_ns");
        for (size_t i = 0; i < s->n_all; i++) {
            const ggprof_thread_op_all *o = &s->all[i];
            for (int t = 0; t < s->n_threads; t++) {
                if (t == 0) {
                    fprintf(f, "    %-24s %8" PRId64 " %14" PRId64, ggprof_text_safe(o->op, safe, sizeof(safe)), o->count,
                            o->imbalance_ns);
                } else {
                    fprintf(f, "    %-24s %8s %14s", "", "", "");
                }
                fprintf(f, " %6d %14" PRId64 " %14" PRId64 "\n", t, o->busy_ns[t], o->wait_ns[t]);
            }
        }
        fprintf(f, "    %-24s %8s %14" PRId64 "\n", "total", "", s->imbalance_ns);
    } else if (s->n_ops) {
        fprintf(f, "  pid %d: per op, thread 0 (barrier after = the slowest thread's lead over thread 0; ns;"
                   " `ggprof record --threads` times every thread):\n", pid);
        fprintf(f, "    %-24s %8s %14s %12s %14s %14s\n", "op", "count", "busy_ns", "wait_ns", "barrier_ns", "max_barrier_ns");
        for (size_t i = 0; i < s->n_ops; i++) {
            const ggprof_thread_op *o = &s->ops[i];
            fprintf(f, "    %-24s %8" PRId64 " %14" PRId64 " %12" PRId64 " %14" PRId64 " %14" PRId64 "\n",
                    ggprof_text_safe(o->op, safe, sizeof(safe)), o->count, o->busy_ns, o->wait_ns, o->barrier_ns,
                    o->max_barrier_ns);
        }
        fprintf(f, "    %-24s %8s %14s %12s %14" PRId64 "\n", "total", "", "", "", s->barrier_ns);
    }
}

void ggprof_threads_print(FILE *f, sqlite3 *db) { each_process(f, db, print_proc); }

static void json_int(FILE *f, int64_t v) { v < 0 ? fputs("null", f) : fprintf(f, "%" PRId64, v); }

/* Without op_threads an op has thread 0 only: its wait is its waits inside the op and in the barrier after it, and
 * its imbalance the slowest thread's lead over it (per_thread false says so). */
static void json_proc(FILE *f, const ggprof_threads_summary_t *s, const char *list, int *first) {
    (void) list;
    fprintf(f, "%s\n    {\"pid\": %d, \"threads_used\": ", *first ? "" : ",", s->pid);
    *first = 0;
    json_int(f, s->threads_used);
    fprintf(f, ", \"cpus_allowed\": ");
    json_int(f, s->cpus_allowed);
    if (s->cpu_quota > 0) fprintf(f, ", \"cpu_quota\": %.4g", s->cpu_quota);
    else fprintf(f, ", \"cpu_quota\": null");
    fprintf(f, ", \"oversubscribed\": %s, \"nivcsw\": ", s->oversubscribed == 1 ? "true" : s->oversubscribed == 0 ? "false" : "null");
    json_int(f, s->nivcsw);
    if (s->nivcsw >= 0 && s->graphs > 0) fprintf(f, ", \"nivcsw_per_graph\": %.4g", (double) s->nivcsw / (double) s->graphs);
    else fprintf(f, ", \"nivcsw_per_graph\": null");
    fprintf(f, ", \"per_thread\": %s, \"ops\": [", s->n_all ? "true" : "false");
    size_t n = s->n_all ? s->n_all : s->n_ops;
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%s\n      {\"op\": ", i ? "," : "");
        if (s->n_all) {
            const ggprof_thread_op_all *o = &s->all[i];
            ggprof_json_put(f, o->op, 0);
            fprintf(f, ", \"count\": %" PRId64 ", \"threads\": [", o->count);
            for (int t = 0; t < s->n_threads; t++) {
                fprintf(f, "%s{\"thread\": %d, \"busy_ns\": %" PRId64 ", \"wait_ns\": %" PRId64 "}", t ? ", " : "", t,
                        o->busy_ns[t], o->wait_ns[t]);
            }
            fprintf(f, "], \"imbalance_ns\": %" PRId64 "}", o->imbalance_ns);
        } else {
            const ggprof_thread_op *o = &s->ops[i];
            ggprof_json_put(f, o->op, 0);
            int64_t wait = add_ns(o->wait_ns, o->barrier_ns);
            fprintf(f, ", \"count\": %" PRId64 ", \"threads\": [{\"thread\": 0, \"busy_ns\": %" PRId64 ", \"wait_ns\": %" PRId64
                       "}], \"imbalance_ns\": %" PRId64 "}", o->count, o->busy_ns, wait, o->barrier_ns);
        }
    }
    fprintf(f, "%s]}", n ? "\n    " : "");
}

void ggprof_threads_json(FILE *f, sqlite3 *db) {
    fputc('[', f);
    each_process(f, db, json_proc);
    fputs("\n  ]", f);
}

/* ------------------------------------------------------------ the threads' slices (for the exports) */

void ggprof_thread_slices_free(ggprof_thread_slices *s) {
    for (size_t i = 0; i < s->n; i++) free(s->v[i].name);
    free(s->v);
    memset(s, 0, sizeof(*s));
}

static int cmp_thread_slice(const void *a, const void *b) {
    const ggprof_thread_slice *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    if (x->dur_ns != y->dur_ns) return x->dur_ns > y->dur_ns ? -1 : 1;
    if (x->what != y->what) return x->what < y->what ? -1 : 1;
    return (x->order > y->order) - (x->order < y->order);
}

/* The rows of one table (a table or column an older trace lacks: none): pid, tid, start, duration, name, then nv
 * values. Returns 0, or -1 with a one-line reason. */
static int thread_slices_add(sqlite3 *db, ggprof_thread_slices *s, const char *sql, int what, int nv, char *why,
                             size_t why_len) {
    sqlite3_stmt *st = NULL;
    char          msg[256];
    ggprof_sql_rc pr = ggprof_sql_prepare(db, sql, &st, msg, sizeof(msg));
    if (pr != GGPROF_SQL_OK) {
        if (pr == GGPROF_SQL_ERROR) snprintf(why, why_len, "thread slices: %s", msg);
        return pr == GGPROF_SQL_ABSENT ? 0 : -1;
    }
    int rc = 0, step = SQLITE_DONE;
    while (rc == 0 && (step = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t start = sqlite3_column_int64(st, 2), dur = sqlite3_column_int64(st, 3);
        if (start < 0 || dur < 0 || start > INT64_MAX - dur) continue;
        if (s->n == s->cap) {
            size_t               cap = s->cap ? 2 * s->cap : 256;
            ggprof_thread_slice *v   = realloc(s->v, cap * sizeof(*v));
            if (!v) {
                rc = -1;
                break;
            }
            s->v = v, s->cap = cap;
        }
        ggprof_thread_slice *t = &s->v[s->n];
        memset(t, 0, sizeof(*t));
        t->pid = sqlite3_column_int64(st, 0), t->tid = sqlite3_column_int64(st, 1);
        t->start_ns = start, t->dur_ns = dur, t->what = what, t->order = (int64_t) s->n;
        for (int k = 0; k < nv; k++) t->v[k] = sqlite3_column_int64(st, 5 + k);
        const char *name = (const char *) sqlite3_column_text(st, 4);
        if (name && name[0] && !(t->name = strdup(name))) rc = -1;
        s->n++;
    }
    if (rc != 0) snprintf(why, why_len, "thread slices: out of memory");
    else if (step != SQLITE_DONE) snprintf(why, why_len, "thread slices: %s", sqlite3_errmsg(db)), rc = -1;
    sqlite3_finalize(st);
    return rc;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *) a, y = *(const int64_t *) b;
    return (x > y) - (x < y);
}

/* The sampler places an idle run's edges within a few milliseconds (docs/how-it-works.md); the engine times a call's
 * edges exactly, and at each the thread ran. An idle span with such an edge strictly inside it was really blocked on
 * one side of it: it keeps the widest piece between the edges, where nearly all of it lay, and so nests with the
 * thread's calls. The slices of [a, b) are those of one thread, sorted. Returns 0, or -1 out of memory. */
static int idle_clip_thread(ggprof_thread_slice *v, size_t a, size_t b) {
    size_t n = 0;
    for (size_t i = a; i < b; i++) n += v[i].what != GGPROF_TS_IDLE ? 2 : 0;
    if (n == 0 || n == 2 * (b - a)) return 0;
    int64_t *e = malloc(n * sizeof(*e));
    if (!e) return -1;
    n = 0;
    for (size_t i = a; i < b; i++) {
        if (v[i].what == GGPROF_TS_IDLE) continue;
        e[n++] = v[i].start_ns, e[n++] = v[i].start_ns + v[i].dur_ns;
    }
    qsort(e, n, sizeof(*e), cmp_i64);
    for (size_t i = a; i < b; i++) {
        ggprof_thread_slice *t = &v[i];
        if (t->what != GGPROF_TS_IDLE) continue;
        int64_t s = t->start_ns, end = s + t->dur_ns;
        size_t  lo = 0, hi = n; /* the first edge after s */
        while (lo < hi) {
            size_t m = lo + (hi - lo) / 2;
            if (e[m] <= s) lo = m + 1;
            else hi = m;
        }
        int64_t best_s = s, best_e = end, from = s;
        for (size_t j = lo; j < n && e[j] < end; j++) {
            if (j == lo) best_e = e[j]; /* the first piece, [s, e[lo]) */
            else if (e[j] - from > best_e - best_s) best_s = from, best_e = e[j];
            from = e[j];
        }
        if (lo < n && e[lo] < end && end - from > best_e - best_s) best_s = from, best_e = end;
        t->start_ns = best_s, t->dur_ns = best_e - best_s;
    }
    free(e);
    return 0;
}

int ggprof_thread_slices_load(sqlite3 *db, ggprof_thread_slices *s, char *why, size_t why_len) {
    memset(s, 0, sizeof(*s));
    int rc = thread_slices_add(db, s, "SELECT pid, tid, start_ns, duration_ns, name, depth FROM regions",
                               GGPROF_TS_REGION, 1, why, why_len);
    if (rc == 0) {
        rc = thread_slices_add(db, s, "SELECT pid, tid, start_ns, duration_ns, api, batch_id, n_tokens, n_seqs,"
                                      " n_outputs, status FROM batches", GGPROF_TS_BATCH, 5, why, why_len);
    }
    if (rc == 0) {
        rc = thread_slices_add(db, s, "SELECT pid, tid, start_ns, end_ns - start_ns, NULL FROM thread_idle"
                                      " WHERE end_ns >= start_ns", GGPROF_TS_IDLE, 0, why, why_len);
    }
    if (rc != 0) {
        ggprof_thread_slices_free(s);
        return -1;
    }
    ggprof_sort(s->v, s->n, sizeof(*s->v), cmp_thread_slice);
    for (size_t a = 0, b; a < s->n && rc == 0; a = b) {
        for (b = a + 1; b < s->n && s->v[b].pid == s->v[a].pid && s->v[b].tid == s->v[a].tid; b++) {}
        rc = idle_clip_thread(s->v, a, b);
    }
    if (rc != 0) {
        snprintf(why, why_len, "thread slices: out of memory");
        ggprof_thread_slices_free(s);
        return -1;
    }
    ggprof_sort(s->v, s->n, sizeof(*s->v), cmp_thread_slice);
    return 0;
}
