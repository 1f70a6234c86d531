/* Findings: one rule, one function, each returning at most one finding with the time at stake, its evidence and
 * what to try; ranked by the time at stake. Every rule's threshold and estimate: docs/findings.md. A rule reads
 * the trace's tables and stays silent when what it reads is absent (an older trace, a JSON profile). */
#include "findings.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "layer_rule.h"
#include "memory.h"
#include "model.h"
#include "sort.h"
#include "sql.h"
#include "v3_format.h"

/* ---------------------------------------------------------------- evidence */

static ggprof_evidence *ev_next(ggprof_finding *f, const char *key) {
    if (f->n_ev == GGPROF_FINDING_MAX_EV) return NULL;
    ggprof_evidence *e = &f->ev[f->n_ev++];
    memset(e, 0, sizeof(*e));
    snprintf(e->key, sizeof(e->key), "%s", key);
    return e;
}
static void ev_text(ggprof_finding *f, const char *key, const char *v) {
    ggprof_evidence *e = v ? ev_next(f, key) : NULL;
    if (e) snprintf(e->val, sizeof(e->val), "%s", v);
}
static void ev_int(ggprof_finding *f, const char *key, int64_t v) {
    ggprof_evidence *e = ev_next(f, key);
    if (e) snprintf(e->val, sizeof(e->val), "%" PRId64, v), e->numeric = 1;
}
static void ev_real(ggprof_finding *f, const char *key, double v) {
    ggprof_evidence *e = isfinite(v) ? ev_next(f, key) : NULL;
    if (e) snprintf(e->val, sizeof(e->val), "%.3g", v), e->numeric = 1;
}
/* The layer of a tensor name, when it has one. */
static void ev_layer(ggprof_finding *f, const char *tensor) {
    int l = tensor ? ggprof_layer_of(tensor) : -1;
    if (l >= 0) ev_int(f, "layer", l);
}
static void advise(ggprof_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void advise(ggprof_finding *f, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->advice, sizeof(f->advice), fmt, ap);
    va_end(ap);
}
static const char *col_text(sqlite3_stmt *st, int i) {
    const unsigned char *s = sqlite3_column_text(st, i);
    return s ? (const char *) s : NULL;
}
static int64_t col_pos(sqlite3_stmt *st, int i) {
    int64_t v = sqlite3_column_int64(st, i);
    return v > 0 ? v : 0;
}

const char *ggprof_finding_ev(const ggprof_finding *f, const char *key) {
    for (int i = 0; i < f->n_ev; i++) {
        if (strcmp(f->ev[i].key, key) == 0) return f->ev[i].val;
    }
    return NULL;
}

/* Prepares sql; NULL when the trace lacks what it reads (the rule stays silent, and the run lists it as silent
 * when it does not fire) or when the query is broken (the run fails with SQLite's message: a typo in a rule must
 * not pass for an older trace). */
static sqlite3_stmt *prep(const ggprof_findings_ctx *c, const char *sql) {
    sqlite3_stmt *st = NULL;
    char          why[256];
    ggprof_sql_rc rc = ggprof_sql_prepare(c->db, sql, &st, why, sizeof(why));
    if (rc == GGPROF_SQL_ABSENT && !c->state->absent[0]) {
        snprintf(c->state->absent, sizeof(c->state->absent), "the trace lacks what it reads (%s)", why);
    } else if (rc == GGPROF_SQL_ERROR && !c->state->error[0]) {
        snprintf(c->state->error, sizeof(c->state->error), "%s", why);
    }
    return st;
}

/* A rule's input that is not a table (an option not given): silent, and --verbose says why. */
static int missing(const ggprof_findings_ctx *c, const char *what) {
    if (!c->state->absent[0]) snprintf(c->state->absent, sizeof(c->state->absent), "%s", what);
    return 0;
}

/* A loader the rule calls failed (not an absent table: those loaders are silent then): the run fails. */
static int failed(const ggprof_findings_ctx *c, const char *why) {
    if (!c->state->error[0]) snprintf(c->state->error, sizeof(c->state->error), "%s", why);
    return -1;
}

/* The rule's threshold name, from its table entry (one place for each number). A name the entry lacks is a bug in
 * the rule: the run fails with it. */
/* A threshold of a rule's table entry by name; NAN when it has none (or rule is NULL). */
static double rule_param(const ggprof_rule *rule, const char *name) {
    for (int i = 0; rule && i < GGPROF_RULE_MAX_PARAMS && rule->params[i].name; i++) {
        if (strcmp(rule->params[i].name, name) == 0) return rule->params[i].value;
    }
    return NAN;
}
static const ggprof_rule *rule_named(const char *name) {
    for (size_t i = 0; i < ggprof_n_rules; i++) {
        if (strcmp(ggprof_rules[i].name, name) == 0) return &ggprof_rules[i];
    }
    return NULL;
}

static double param(const ggprof_findings_ctx *c, const char *name) {
    double v = rule_param(c->rule, name);
    if (!isnan(v)) return v;
    if (!c->state->error[0]) snprintf(c->state->error, sizeof(c->state->error), "no threshold '%s' in its table entry", name);
    return NAN;
}

/* The finding's change of the command: flag set to the printf'd value (GGPROF_CHANGE_MAX at most). */
static void change(ggprof_finding *f, const char *flag, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void change(ggprof_finding *f, const char *flag, const char *fmt, ...) {
    if (f->change.n == GGPROF_CHANGE_MAX) return;
    va_list ap;
    va_start(ap, fmt);
    snprintf(f->change.opt[f->change.n].flag, sizeof(f->change.opt[0].flag), "%s", flag);
    vsnprintf(f->change.opt[f->change.n].value, sizeof(f->change.opt[0].value), fmt, ap);
    va_end(ap);
    f->change.n++;
}

/* prep() with ?1 bound to a process's pid: the rules' per-process queries. */
static sqlite3_stmt *prep_pid(const ggprof_findings_ctx *c, const char *sql, int32_t pid) {
    sqlite3_stmt *st = prep(c, sql);
    if (st) sqlite3_bind_int(st, 1, pid);
    return st;
}

/* A backend's label: its name in the trace's list, else ggprof_backend_label's fallback (model.h). */
static void backend_name(const ggprof_findings_ctx *c, int32_t pid, int64_t sched, int64_t id, char *buf, size_t len) {
    char          name[256] = "", fb[48];
    sqlite3_stmt *st        = prep(c, "SELECT name FROM backend_list WHERE pid = ?1 AND sched_id = ?2 AND id = ?3");
    if (st) {
        sqlite3_bind_int(st, 1, pid), sqlite3_bind_int64(st, 2, sched), sqlite3_bind_int64(st, 3, id);
        if (sqlite3_step(st) == SQLITE_ROW && col_text(st, 0)) snprintf(name, sizeof(name), "%s", col_text(st, 0));
        sqlite3_finalize(st);
    }
    snprintf(buf, len, "%s", ggprof_backend_label(name, id, fb, sizeof(fb)));
}

/* The CPUs a process may use, from a row's CPUs allowed (column cpus_col) and CPU quota (quota_col), either NULL or
 * 0 when unknown: the smaller of the two known; 0 when neither is. */
static double usable_cpus(sqlite3_stmt *st, int cpus_col, int quota_col) {
    double cpus  = sqlite3_column_type(st, cpus_col) == SQLITE_NULL ? 0 : sqlite3_column_double(st, cpus_col);
    double quota = sqlite3_column_type(st, quota_col) == SQLITE_NULL ? 0 : sqlite3_column_double(st, quota_col);
    return cpus > 0 && quota > 0 ? fmin(cpus, quota) : cpus > 0 ? cpus : quota;
}

static double share(int64_t part, int64_t whole) { return whole > 0 ? (double) part / (double) whole : 0.0; }

/* ---------------------------------------------------------------- the rules */

/* fallback: nodes that ran off the scheduler's best device (the node_placements table), grouped by reason, op and
 * backend; at stake: their OP time where they ran. */
static int rule_fallback(const ggprof_findings_ctx *c, ggprof_finding *out) {
    sqlite3_stmt *st = prep(c,
        "WITH fb AS (SELECT pid, sched_id, node_id, min(backend_id) AS backend_id, min(preferred_backend_id) AS pref,"
        "   min(reason) AS reason FROM node_placements WHERE reason IS NOT NULL AND reason != 'preferred'"
        "   AND preferred_backend_id IS NOT NULL GROUP BY pid, sched_id, node_id),"
        " ev AS (SELECT pid, node_id, CAST(total(duration_ns) AS INTEGER) AS ns FROM events WHERE type = 0"
        "   AND duration_ns > 0 GROUP BY pid, node_id),"
        " t AS (SELECT fb.*, n.op AS op, n.tensor_name AS tensor, COALESCE(ev.ns, 0) AS ns FROM fb"
        "   LEFT JOIN nodes n ON n.pid = fb.pid AND n.node_id = fb.node_id"
        "   LEFT JOIN ev ON ev.pid = fb.pid AND ev.node_id = fb.node_id)"
        " SELECT pid, sched_id, reason, COALESCE(op, '?'), backend_id, pref, count(*), sum(ns), max(ns), tensor FROM t"
        " GROUP BY pid, sched_id, reason, op, backend_id, pref ORDER BY sum(ns) DESC, count(*) DESC LIMIT 1");
    if (!st) return 0;
    int fired = 0;
    if (sqlite3_step(st) == SQLITE_ROW) {
        int32_t pid = sqlite3_column_int(st, 0);
        int64_t sched = sqlite3_column_int64(st, 1), ns = col_pos(st, 7);
        char    ran[64], pref[64], reason[32];
        snprintf(reason, sizeof(reason), "%s", col_text(st, 2) ? col_text(st, 2) : "?");
        backend_name(c, pid, sched, sqlite3_column_int64(st, 4), ran, sizeof(ran));
        backend_name(c, pid, sched, sqlite3_column_int64(st, 5), pref, sizeof(pref));
        out->pid = pid, out->at_stake_ns = ns;
        ev_text(out, "op", col_text(st, 3));
        ev_layer(out, col_text(st, 9));
        ev_text(out, "backend", ran);
        ev_text(out, "node", col_text(st, 9));
        ev_text(out, "preferred", pref);
        ev_text(out, "reason", reason);
        ev_int(out, "nodes", sqlite3_column_int64(st, 6));
        ev_text(out, "estimate", "upper_bound"); /* the device takes some time for them too */
        if (strcmp(reason, "unsupported") == 0) {
            advise(out, "%s has no %s kernel for this op and type: a newer ggml, or weights of another type", pref,
                   col_text(st, 3) ? col_text(st, 3) : "?");
        } else if (strcmp(reason, "weights_on_host") == 0) {
            advise(out, "its weights are in host memory: more layers on %s (-ngl 99), fewer -ot / --cpu-moe overrides"
                        " if %s's memory allows", pref, pref);
            change(out, "-ngl", "99");
        } else if (strcmp(reason, "inputs_on_host") == 0) {
            advise(out, "its inputs are in host memory: offload the layers that produce them (-ngl), or keep the KV"
                        " cache on %s (no --no-kv-offload)", pref);
        } else {
            advise(out, "the scheduler chose %s over %s: check -ngl, -ot and the backends' priorities", ran, pref);
        }
        fired = 1;
    }
    sqlite3_finalize(st);
    return fired;
}

/* threads_oversubscribed: more compute threads than CPUs the process may use (meta keys threads.PID,
 * cpus_allowed.PID, cpu_quota.PID); at stake: the share of its CPU waits (barriers, kick-off, waits inside ops)
 * the excess threads account for, waits x (threads - CPUs) / threads. Calibrated on the fixture (docs/findings.md):
 * all the waits (191-208 ms for -t 4 on 2 CPUs) were 2.3 times what -t 2 saved (84 ms): the waits that remain at
 * -t CPUS (imbalance, a thread preempted by anything else) are not the excess threads'. */
static int rule_threads_oversubscribed(const ggprof_findings_ctx *c, ggprof_finding *out) {
    sqlite3_stmt *st = prep(c,
        "SELECT CAST(substr(t.key, 9) AS INTEGER) AS pid, CAST(t.value AS INTEGER),"
        " (SELECT CAST(value AS REAL) FROM meta WHERE key = 'cpus_allowed.' || substr(t.key, 9)),"
        " (SELECT CAST(value AS REAL) FROM meta WHERE key = 'cpu_quota.' || substr(t.key, 9))"
        " FROM meta t WHERE t.key LIKE 'threads.%' ORDER BY pid");
    if (!st) return 0;
    int fired = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int32_t pid     = sqlite3_column_int(st, 0);
        int64_t threads = sqlite3_column_int64(st, 1);
        double  usable  = usable_cpus(st, 2, 3);
        if (usable <= 0 || threads <= 0 || (double) threads <= usable) continue;
        sqlite3_stmt *w = prep_pid(c, "SELECT CAST(total(CASE WHEN type = 2 THEN duration_ns ELSE wait_ns END) AS"
                                      " INTEGER) FROM events WHERE pid = ?1 AND ((type = 2 AND name IN ('cpu_barrier',"
                                      " 'cpu_kickoff') AND duration_ns > 0) OR (type = 0 AND wait_ns > 0))", pid);
        int64_t waits = 0;
        if (w) {
            if (sqlite3_step(w) == SQLITE_ROW) waits = col_pos(w, 0);
            sqlite3_finalize(w);
        }
        double  excess = ((double) threads - usable) / (double) threads;
        int64_t stake  = (int64_t) ((double) waits * excess);
        if (fired && stake <= out->at_stake_ns) continue;
        int to = (int) floor(usable) > 0 ? (int) floor(usable) : 1;
        memset(out, 0, sizeof(*out));
        out->pid = pid, out->at_stake_ns = stake;
        ev_text(out, "backend", "CPU");
        ev_int(out, "threads", threads);
        ev_real(out, "cpus", usable);
        ev_int(out, "barrier_ns", waits);
        ev_real(out, "excess_share", excess);
        advise(out, "%" PRId64 " threads on %.3g CPUs: -t %d (threads beyond the CPUs make the others wait at every"
                    " barrier)", threads, usable, to);
        change(out, "-t", "%d", to);
        fired = 1;
    }
    sqlite3_finalize(st);
    return fired;
}

/* thread_imbalance: per op and backend, the time threads waited for the slowest: with record --threads (op_threads
 * rows of the process) each op's imbalance, slowest minus fastest arrival at its barriers; otherwise thread 0's
 * waits for the slowest (cpu_barrier records after it, its wait_ns inside it), a lower bound of that. Fires at
 * its "share" of the recorded time; at stake: those waits. */
#define IMB_THREAD0                                                                                                 \
    "WITH s AS (SELECT pid, sched_id, type, name, duration_ns, wait_ns, backend_id, node_id,"                       \
    "   LAG(type) OVER w AS ptype, LAG(name) OVER w AS pname, LAG(node_id) OVER w AS pnode,"                        \
    "   LAG(backend_id) OVER w AS pbackend FROM events WHERE graph_id IS NOT NULL AND type IN (0, 2)"              \
    "   WINDOW w AS (PARTITION BY pid, graph_id, tid ORDER BY start_ns, rowid)),"                                   \
    " imb0 AS (SELECT pid, sched_id, pname AS op, pnode AS node_id, pbackend AS backend_id, duration_ns AS ns"      \
    "   FROM s WHERE type = 2 AND name = 'cpu_barrier' AND ptype = 0 AND duration_ns > 0"                           \
    "   UNION ALL SELECT pid, sched_id, name, node_id, backend_id, wait_ns FROM s WHERE type = 0 AND wait_ns > 0),"
/* A process with more threads than CPUs: its waits are threads_oversubscribed's (which advises -t), not counted
 * again here. */
#define IMB_REST                                                                                                    \
    " over AS (SELECT CAST(substr(t.key, 9) AS INTEGER) AS pid FROM meta t"                                        \
    "   LEFT JOIN meta c ON c.key = 'cpus_allowed.' || substr(t.key, 9)"                                            \
    "   LEFT JOIN meta q ON q.key = 'cpu_quota.' || substr(t.key, 9) WHERE t.key LIKE 'threads.%'"                  \
    "   AND min(COALESCE(CAST(c.value AS REAL), 1e18), COALESCE(CAST(q.value AS REAL), 1e18)) < 1e18"               \
    "   AND CAST(t.value AS REAL) > min(COALESCE(CAST(c.value AS REAL), 1e18), COALESCE(CAST(q.value AS REAL), 1e18))),"\
    " per_node AS (SELECT pid, sched_id, op, backend_id, node_id, total(ns) AS ns, count(*) AS n FROM imb"         \
    "   WHERE pid NOT IN (SELECT pid FROM over) GROUP BY pid, sched_id, op, backend_id, node_id),"                   \
    " per_op AS (SELECT p.pid, p.sched_id, p.op, p.backend_id, CAST(min(sum(p.ns), 9.2e18) AS INTEGER) AS ns,"     \
    "   sum(p.n) AS n, max(p.ns), n.tensor_name AS tensor FROM per_node p LEFT JOIN nodes n ON n.pid = p.pid"       \
    "   AND n.node_id = p.node_id GROUP BY p.pid, p.sched_id, p.op, p.backend_id)"                                  \
    " SELECT pid, sched_id, op, backend_id, ns, n, tensor,"                                                         \
    "   (SELECT CAST(total(duration_ns) AS INTEGER) FROM events e WHERE e.pid = per_op.pid AND e.type IN (0, 1, 2)" \
    "    AND e.duration_ns > 0) FROM per_op ORDER BY ns DESC LIMIT 1"
/* Whether a process's threads waited runnable for a CPU for cpu_contention's share of their time or more: its barrier
 * waits are then other work's taking the cores (cpu_contention ranks that), not an imbalance between its threads. */
static int contended(const ggprof_findings_ctx *c, int32_t pid) {
    if (!ggprof_sql_has_table(c->db, "thread_stats")) return 0;
    double min_share = rule_param(rule_named("cpu_contention"), "share");
    sqlite3_stmt *st = prep_pid(c, "SELECT min(total(max(cpu_ns, 0)), 9.2e18), min(total(max(runq_ns, 0)), 9.2e18)"
                                   " FROM thread_stats WHERE pid = ?1", pid);
    int busy = 0;
    if (st && sqlite3_step(st) == SQLITE_ROW) {
        int64_t cpu = col_pos(st, 0), runq = col_pos(st, 1); /* as cpu_contention reads and shares them */
        busy = runq > 0 && share(runq, cpu + runq) >= min_share;
    }
    sqlite3_finalize(st);
    return busy;
}

static int rule_thread_imbalance(const ggprof_findings_ctx *c, ggprof_finding *out) {
    int per_thread = 0;
    if (ggprof_sql_has_table(c->db, "op_threads")) {
        sqlite3_stmt *any = prep(c, "SELECT 1 FROM op_threads LIMIT 1");
        per_thread = any && sqlite3_step(any) == SQLITE_ROW;
        sqlite3_finalize(any);
    }
    sqlite3_stmt *st = prep(c, per_thread
        ? IMB_THREAD0 " imb AS (SELECT * FROM imb0 WHERE pid NOT IN (SELECT pid FROM op_threads)"
          "   UNION ALL SELECT e.pid, e.sched_id, e.name, e.node_id, e.backend_id, t.imbalance_ns FROM op_threads t"
          "   JOIN events e ON e.pid = t.pid AND e.graph_id = t.graph_id AND e.split_id = t.split_id"
          "   AND e.node_index = t.node_index AND e.type = 0 WHERE t.thread = 0 AND t.imbalance_ns > 0)," IMB_REST
        : IMB_THREAD0 " imb AS (SELECT * FROM imb0)," IMB_REST);
    if (!st) return 0;
    int fired = 0;
    if (sqlite3_step(st) == SQLITE_ROW && share(col_pos(st, 4), col_pos(st, 7)) >= param(c, "share") &&
        !contended(c, sqlite3_column_int(st, 0))) {
        char be[64];
        out->pid = sqlite3_column_int(st, 0), out->at_stake_ns = col_pos(st, 4);
        backend_name(c, out->pid, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 3), be, sizeof(be));
        ev_text(out, "op", col_text(st, 2));
        ev_layer(out, col_text(st, 6));
        ev_text(out, "backend", be);
        ev_text(out, "node", col_text(st, 6));
        ev_int(out, "barriers", sqlite3_column_int64(st, 5));
        ev_real(out, "share_of_recorded", share(col_pos(st, 4), col_pos(st, 7)));
        /* the process's own: a merged trace may hold one process recorded with --threads and one without */
        sqlite3_stmt *own = per_thread ? prep_pid(c, "SELECT 1 FROM op_threads WHERE pid = ?1 LIMIT 1", out->pid) : NULL;
        ev_text(out, "measured", own && sqlite3_step(own) == SQLITE_ROW ? "every thread" : "thread 0");
        sqlite3_finalize(own);
        ev_text(out, "estimate", "upper_bound"); /* the waits themselves: a fix removes at most them */
        advise(out, "threads wait for the slowest after %s: -t at or under the physical cores, cores free of other"
                    " work, or --cpu-strict 1 to pin them", col_text(st, 2) ? col_text(st, 2) : "this op");
        fired = 1;
    }
    sqlite3_finalize(st);
    return fired;
}
#undef IMB_THREAD0
#undef IMB_REST

/* The process of the accounting with the most of a quantity. */
typedef int64_t (*acc_get)(const ggprof_acc_proc *p);
static const ggprof_acc_proc *acc_max(const ggprof_findings_ctx *c, acc_get get) {
    const ggprof_acc_proc *best = NULL;
    for (size_t i = 0; c->acc && i < c->acc->n_procs; i++) {
        if (!best || get(&c->acc->procs[i]) > get(best)) best = &c->acc->procs[i];
    }
    return best;
}
static int64_t get_host_gaps(const ggprof_acc_proc *p) { return p->host_gaps_ns; }
static int64_t get_graph_build(const ggprof_acc_proc *p) { return p->graph_build_ns; }
static int64_t get_copies(const ggprof_acc_proc *p) { return p->copies_ns; }
static int64_t get_startup(const ggprof_acc_proc *p) { return p->before_first_graph_ns; }

/* host_gap: host time between graphs outside llama_decode, its "share" of the process's wall time or more. */
static int rule_host_gap(const ggprof_findings_ctx *c, ggprof_finding *out) {
    const ggprof_acc_proc *p = acc_max(c, get_host_gaps);
    if (!p || p->n_graphs < param(c, "graphs") || share(p->host_gaps_ns, p->wall_ns) < param(c, "share")) return 0;
    out->pid = p->pid, out->at_stake_ns = p->host_gaps_ns;
    ev_int(out, "host_gaps_ns", p->host_gaps_ns);
    ev_int(out, "wall_ns", p->wall_ns);
    ev_int(out, "graphs", p->n_graphs);
    sqlite3_stmt *st = prep_pid(c, "SELECT graph_id, start_ns - LAG(start_ns + duration_ns) OVER (ORDER BY start_ns)"
                                   " AS gap FROM graph_list WHERE pid = ?1 ORDER BY gap DESC LIMIT 1", p->pid);
    if (st) {
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 1) != SQLITE_NULL) {
            ev_int(out, "longest_gap_ns", col_pos(st, 1));
            ev_int(out, "before_graph", sqlite3_column_int64(st, 0));
        }
        sqlite3_finalize(st);
    }
    ev_text(out, "estimate", "upper_bound");
    advise(out, "the devices wait for the program between graphs (sampling, tokenizing, the application): batch"
                " requests (-np, more tokens per llama_decode), move work off the thread that calls llama_decode");
    return 1;
}

/* graph_build: time inside llama_decode outside the graph computes, its "share" of llama_decode's or more. */
static int rule_graph_build(const ggprof_findings_ctx *c, ggprof_finding *out) {
    const ggprof_acc_proc *p = acc_max(c, get_graph_build);
    if (!p || p->batch_ns <= 0 || share(p->graph_build_ns, p->batch_ns) < param(c, "share")) return 0;
    out->pid = p->pid, out->at_stake_ns = p->graph_build_ns;
    ev_int(out, "graph_build_ns", p->graph_build_ns);
    ev_int(out, "decode_ns", p->batch_ns);
    ev_real(out, "share_of_decode", share(p->graph_build_ns, p->batch_ns));
    ev_text(out, "estimate", "upper_bound");
    advise(out, "llama_decode spends this building and planning graphs: a llama.cpp that reuses the graph between"
                " tokens, or more tokens per llama_decode (-b, -ub, -np) to spread the build");
    return 1;
}

/* copies: COPY records' time, its "share" of the graphs' time or more; evidence: the tensor copied for the most
 * time. */
static int rule_copies(const ggprof_findings_ctx *c, ggprof_finding *out) {
    const ggprof_acc_proc *p = acc_max(c, get_copies);
    if (!p || p->graphs_ns <= 0 || share(p->copies_ns, p->graphs_ns) < param(c, "share")) return 0;
    out->pid = p->pid, out->at_stake_ns = p->copies_ns;
    sqlite3_stmt *st = prep_pid(c, "SELECT COALESCE(NULLIF(n.tensor_name, ''), e.extra), e.sched_id, e.backend_id,"
                                   " total(e.duration_ns) AS ns, sum(e.bytes), count(*) FROM events e LEFT JOIN nodes n"
                                   " ON n.pid = e.pid AND n.node_id = e.node_id WHERE e.pid = ?1 AND e.type = 1"
                                   " AND e.duration_ns > 0 GROUP BY 1, 2, 3 ORDER BY ns DESC LIMIT 1", p->pid);
    if (st) {
        if (sqlite3_step(st) == SQLITE_ROW) {
            char be[64];
            backend_name(c, p->pid, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2), be, sizeof(be));
            ev_text(out, "op", "COPY");
            ev_layer(out, col_text(st, 0));
            ev_text(out, "backend", be);
            ev_text(out, "node", col_text(st, 0));
            ev_int(out, "node_copy_bytes", col_pos(st, 4));
        }
        sqlite3_finalize(st);
    }
    ev_int(out, "copies_ns", p->copies_ns);
    ev_real(out, "share_of_graphs", share(p->copies_ns, p->graphs_ns));
    ev_text(out, "estimate", "upper_bound");
    advise(out, "copies between backends: all layers on the device (-ngl 99) where memory allows, fewer -ot /"
                " --cpu-moe overrides, or the whole model on one backend");
    change(out, "-ngl", "99");
    return 1;
}

/* loading: the time before the first graph, its "share" of the process's wall time or more, when the trace knows the process's
 * start or its buffers' allocations. At stake: all of it (a process kept running for many requests pays it once);
 * the advice follows its largest part: the process's own start, the model's loading, or the context's set-up. */
static int rule_loading(const ggprof_findings_ctx *c, ggprof_finding *out) {
    const ggprof_acc_proc *p = acc_max(c, get_startup);
    if (!p || !p->n_graphs || share(p->before_first_graph_ns, p->wall_ns) < param(c, "share")) return 0;
    sqlite3_stmt *st = prep_pid(c, "SELECT count(*), CAST(total(size) AS INTEGER) FROM buffers WHERE pid = ?1"
                                   " AND kind = 'weights'", p->pid);
    int64_t n_bufs = 0, weights = 0;
    if (st) {
        if (sqlite3_step(st) == SQLITE_ROW) n_bufs = sqlite3_column_int64(st, 0), weights = col_pos(st, 1);
        sqlite3_finalize(st);
    }
    if (!p->start_known && !n_bufs) return 0; /* the first record is not the process's start: nothing to tell */
    /* Its advice is about a model's weights: a program that loads none to speak of (a sample whose start is a
     * device's set-up) has no loading to cut. */
    if (n_bufs && (double) weights < param(c, "weights")) return 0;
    out->pid = p->pid, out->at_stake_ns = p->before_first_graph_ns;
    ev_int(out, "before_first_graph_ns", p->before_first_graph_ns);
    ev_int(out, "wall_ns", p->wall_ns);
    ev_int(out, "startup_ns", p->before_setup_ns);
    ev_int(out, "loading_ns", p->loading_ns);
    ev_int(out, "context_setup_ns", p->context_ns);
    if (n_bufs) ev_real(out, "weights_mib", GGPROF_MIB(weights));
    ev_text(out, "estimate", "upper_bound");
    const char *keep = "keep one process running for many requests (llama-server, whisper-server)";
    if (p->loading_ns >= p->before_setup_ns && p->loading_ns >= p->context_ns) {
        ev_text(out, "largest", "loading");
        advise(out, "loading the model dominates this run: %s; --no-mmap (or mmap from the page cache) for a faster"
                    " load; a smaller quantization", keep);
    } else if (p->before_setup_ns >= p->context_ns) {
        ev_text(out, "largest", "startup");
        advise(out, "the process's start (before ggml is first used: its libraries loaded and initialized, the"
                    " program's own set-up) dominates this run: %s", keep);
    } else {
        ev_text(out, "largest", "context_setup");
        advise(out, "creating the context dominates this run: %s; a smaller context (-c) or batch (-b, -ub) to"
                    " allocate less", keep);
    }
    return 1;
}

/* below_roof: the op and backend furthest below its roof (--roof): roof% under "roof_pct" and its time above the
 * roof its "share" of the ops' time or more; at stake: its time less its time at the roof. */
static int rule_below_roof(const ggprof_findings_ctx *c, ggprof_finding *out) {
    if (!c->roofs || !c->roofs->n) return missing(c, "no roofs given (--roof, --roof-file)");
    double roof_share = param(c, "roof_pct") / 100.0, min_share = param(c, "share");
    ggprof_rl_groups g;
    ggprof_rl_row   *rows = NULL;
    size_t           n    = 0;
    char             why[256];
    if (ggprof_rl_groups_load(c->db, &g, why, sizeof(why)) != 0) return failed(c, why);
    int fired = 0;
    if (ggprof_rl_rollup(&g, c->roofs, 0, &rows, &n) == 0) {
        const ggprof_rl_row *best = NULL;
        double               best_stake = 0;
        for (size_t i = 0; i < n; i++) {
            const ggprof_rl_row *r = &rows[i];
            if (!r->has_roof || !r->total_ns) continue;
            double stake = (double) r->total_ns - r->roof_ns;
            if (r->roof_ns / (double) r->total_ns < roof_share && stake >= min_share * (double) g.op_ns &&
                stake > best_stake) {
                best = r, best_stake = stake;
            }
        }
        if (best) {
            double gbps, gflops, fpb, roof_pct;
            ggprof_rl_row_rates(best, &gbps, &gflops, &fpb, &roof_pct);
            out->at_stake_ns = (int64_t) best_stake;
            ev_text(out, "op", best->label);
            ev_text(out, "backend", best->backend);
            ev_real(out, "roof_pct", roof_pct);
            ev_real(out, "gbps", gbps);
            ev_real(out, "gflops", gflops);
            ev_int(out, "count", best->count);
            ev_text(out, "estimate", "upper_bound");
            advise(out, "%s on %s runs at %.3g%% of its roof: 'ggprof inefficiency' for its shapes; a type"
                        " with a faster kernel (q4_0, q8_0 on CPU), more tokens per graph (-ub), fewer threads"
                        " contending for memory", best->label, best->backend, roof_pct);
            fired = 1;
        }
    }
    free(rows);
    ggprof_rl_groups_free(&g);
    return fired;
}

/* What the trace says of ggml-blas against the CPU on the prompts' matmuls: per weights' shape (src0's ne0, ne1)
 * that both computed for batches of more than one token, BLAS's time against the CPU's time per token times BLAS's
 * tokens. Decode's one-token matmuls are not compared (a matrix-vector product is another kernel). */
typedef enum { BLAS_NONE, BLAS_UNKNOWN, BLAS_SLOWER, BLAS_FASTER } blas_verdict;
static blas_verdict blas_vs_cpu(const ggprof_findings_ctx *c, int64_t *blas_ns, int64_t *cpu_ns) {
    *blas_ns = *cpu_ns = 0;
    sqlite3_stmt *st = prep(c, "SELECT 1 FROM backend_list WHERE name LIKE 'BLAS%' LIMIT 1");
    int has = st && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (!has) return BLAS_NONE;
    st = prep(c,
        "WITH m AS (SELECT b.name LIKE 'BLAS%' AS blas, json_extract(n.ne_src, '$[0][0]') AS k,"
        "   json_extract(n.ne_src, '$[0][1]') AS r, json_extract(n.ne_src, '$[1][1]') AS tok, e.duration_ns AS ns"
        "   FROM events e JOIN nodes n ON n.pid = e.pid AND n.node_id = e.node_id JOIN backend_list b ON b.pid = e.pid"
        "   AND b.sched_id = e.sched_id AND b.id = e.backend_id WHERE e.type = 0 AND n.op = 'MUL_MAT'"
        "   AND e.duration_ns > 0 AND json_valid(n.ne_src)),"
        " s AS (SELECT total(CASE WHEN blas THEN ns END) AS bns, total(CASE WHEN blas THEN tok END) AS btok,"
        "   total(CASE WHEN NOT blas THEN ns END) AS cns, total(CASE WHEN NOT blas THEN tok END) AS ctok"
        "   FROM m WHERE tok > 1 GROUP BY k, r)"
        " SELECT min(total(bns), 9.2e18), min(total(cns / ctok * btok), 9.2e18), count(*) FROM s"
        " WHERE btok > 0 AND ctok > 0");
    blas_verdict v = BLAS_UNKNOWN;
    if (st && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 2) > 0) {
        *blas_ns = col_pos(st, 0), *cpu_ns = col_pos(st, 1);
        v = *blas_ns > *cpu_ns ? BLAS_SLOWER : BLAS_FASTER;
    }
    sqlite3_finalize(st);
    return v;
}

/* small_ubatch: prompts (batches of more than one token) computed in graphs of fewer than "ubatch" tokens each.
 * The advice knows the build: ggml-blas takes a MUL_MAT only when its ne0, ne1 and ne10 are "blas_min_batch" or
 * more, so on a build with BLAS a larger ubatch moves the prompt's matmuls to it, which on the fixture's OpenBLAS
 * build was slower than ggml's CPU kernels (-ub 512: 144 ms slower, docs/findings.md). Without BLAS, or where the
 * trace shows BLAS faster than the CPU on the same weights, -ub "target"; where it shows BLAS slower or cannot tell,
 * -ub blas_min_batch - 1 (fewer graphs, the matmuls kept on the CPU), or a build without BLAS when the ubatch is
 * that large already. At stake: per such batch, (graphs - ceil(tokens / the advised ubatch)) x the part of a graph
 * that fewer graphs save: every node's launch and barrier and the small ops, i.e. the batch's graphs' time outside
 * their matmuls, in the batch's shortest graph (the first graph of a run also pays for cold weights). A larger
 * ubatch also streams each weight fewer times, but on the CPU its matmuls become compute-bound and cost about as
 * much per token: counting whole graphs, the former estimate, was 2.5-3 times what -ub 31 and -ub 512 realized
 * (docs/findings.md). A trace without op records (level graph) has no matmul times: the whole shortest graph,
 * evidence estimate=upper_bound. */
static int rule_small_ubatch(const ggprof_findings_ctx *c, ggprof_finding *out) {
    int64_t      blas_ns, cpu_ns;
    blas_verdict blas   = blas_vs_cpu(c, &blas_ns, &cpu_ns);
    double       target = param(c, "target"), min_batch = param(c, "blas_min_batch");
    if (!(target >= 1) || !(min_batch >= 2)) return -1;
    int64_t keep_cpu = (int64_t) min_batch - 1;
    sqlite3_stmt *st = prep(c,
        "WITH mm AS (SELECT pid, graph_id, total(duration_ns) AS ns FROM events WHERE type = 0"
        "   AND name IN ('MUL_MAT', 'MUL_MAT_ID') AND duration_ns > 0 GROUP BY pid, graph_id),"
        " g AS (SELECT g.pid, g.batch_id, g.duration_ns AS d, mm.ns AS mm, row_number() OVER (PARTITION BY g.pid,"
        "   g.batch_id ORDER BY g.duration_ns, g.graph_id) AS k FROM graph_list g"
        "   LEFT JOIN mm ON mm.pid = g.pid AND mm.graph_id = g.graph_id)"
        " SELECT b.pid, b.batch_id, b.n_tokens, count(*) AS graphs, min(g.d),"
        "   max(CASE WHEN g.k = 1 THEN max(g.d - g.mm, 0) END), count(g.mm)"
        " FROM batches b JOIN g ON g.pid = b.pid AND g.batch_id = b.batch_id"
        " WHERE b.n_tokens > 1 GROUP BY b.pid, b.batch_id HAVING graphs > 1 AND 1.0 * b.n_tokens / graphs < ?1");
    if (!st) return 0;
    sqlite3_bind_double(st, 1, param(c, "ubatch"));
    /* the ubatch advised: the target, or one BLAS does not take */
    int     on_cpu = blas == BLAS_SLOWER || blas == BLAS_UNKNOWN;
    int64_t stake = 0, n_batches = 0, worst = -1, ub_max = 0, whole_graphs = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t tokens = col_pos(st, 2), graphs = col_pos(st, 3), ub = (tokens + graphs - 1) / (graphs ? graphs : 1);
        int64_t advised = on_cpu && ub < keep_cpu ? keep_cpu : (int64_t) target;
        int64_t need = (tokens + advised - 1) / advised;
        /* every graph of the batch has its matmuls timed: the part outside them; else the whole shortest graph */
        int     timed = sqlite3_column_int64(st, 6) == graphs;
        int64_t per   = timed ? col_pos(st, 5) : col_pos(st, 4);
        whole_graphs += !timed;
        int64_t s = graphs > need ? (graphs - need) * per : 0;
        stake = stake + s < stake ? INT64_MAX : stake + s;
        n_batches++;
        if (ub > ub_max) ub_max = ub;
        if (s > worst) {
            worst = s;
            memset(out, 0, sizeof(*out));
            out->pid = sqlite3_column_int(st, 0);
            ev_int(out, "batch", sqlite3_column_int64(st, 1));
            ev_int(out, "tokens", tokens);
            ev_int(out, "graphs", graphs);
            ev_int(out, "ubatch_tokens", ub);
            ev_int(out, "graph_saved_ns", per);
        }
    }
    sqlite3_finalize(st);
    if (!n_batches) return 0;
    out->at_stake_ns = stake;
    ev_int(out, "batches", n_batches);
    const char *ub = ggprof_finding_ev(out, "ubatch_tokens");
    static const char *const verdict[] = { "none", "unknown", "slower", "faster" };
    if (blas != BLAS_NONE) {
        ev_text(out, "blas", verdict[blas]);
        if (blas != BLAS_UNKNOWN) ev_int(out, "blas_ns", blas_ns), ev_int(out, "cpu_same_tokens_ns", cpu_ns);
    }
    /* whole graphs counted (no matmul times), or advice that is a rebuild, not one change of options */
    if (whole_graphs || (on_cpu && ub_max >= keep_cpu)) ev_text(out, "estimate", "upper_bound");
    if (!on_cpu) {
        advise(out, "prompts computed %s tokens a graph: -ub %.0f (and -b at least as large) computes them in fewer,"
                    " larger graphs%s", ub, target,
               blas == BLAS_FASTER ? " (this build's BLAS takes their matmuls, and was faster than the CPU here)" : "");
        change(out, "-ub", "%.0f", target);
        change(out, "-b", "%.0f", target);
    } else if (ub_max < keep_cpu) {
        advise(out, "prompts computed %s tokens a graph on a build with BLAS, which takes the matmuls of %.0f tokens"
                    " or more and %s: -ub %" PRId64 " computes them in fewer graphs and keeps them on the CPU; -ub %.0f"
                    " only on a build without BLAS", ub, min_batch,
               blas == BLAS_SLOWER ? "was slower than the CPU here" : "may be slower than the CPU (the trace cannot tell)",
               keep_cpu, target);
        change(out, "-ub", "%" PRId64, keep_cpu);
    } else {
        advise(out, "prompts computed %s tokens a graph, their matmuls on BLAS, which %s: a build without BLAS"
                    " (GGML_BLAS=OFF), then -ub %.0f", ub,
               blas == BLAS_SLOWER ? "was slower than the CPU here" : "may be slower than the CPU (the trace cannot tell)",
               target);
    }
    return 1;
}

/* cpu_contention: the process's threads were runnable but off a CPU (schedstat's run-queue wait, thread_stats) for
 * "share" or more of the time they wanted one, while its compute threads did not outnumber the CPUs it may use:
 * other work on the machine took them. At stake: the threads' summed wait, in the graphs' share of the run (a
 * thread kept off its CPU holds every other at the next barrier), at most the graphs' time. One thread's share of
 * the wait, the former estimate, was 0.37 of what freeing the cores realized (tests/bench/try_accuracy.sh,
 * docs/findings.md). */
static int rule_cpu_contention(const ggprof_findings_ctx *c, ggprof_finding *out) {
    sqlite3_stmt *st = prep(c,
        "SELECT p.pid, p.n_threads, p.n_cpus_allowed, p.cpu_quota, p.nivcsw,"
        " (SELECT min(total(max(t.cpu_ns, 0)), 9.2e18) FROM thread_stats t WHERE t.pid = p.pid),"
        " (SELECT min(total(max(t.runq_ns, 0)), 9.2e18) FROM thread_stats t WHERE t.pid = p.pid)"
        " FROM processes_time p WHERE p.n_threads > 0 ORDER BY p.pid");
    if (!st) return 0;
    double min_share = param(c, "share");
    int    fired     = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int32_t pid     = sqlite3_column_int(st, 0);
        int64_t threads = sqlite3_column_int64(st, 1);
        double  usable  = usable_cpus(st, 2, 3);
        int64_t cpu = col_pos(st, 5), runq = col_pos(st, 6);
        if (usable <= 0 || (double) threads > usable || runq <= 0) continue; /* more threads: oversubscribed */
        double waiting = share(runq, cpu + runq);
        if (waiting < min_share) continue;
        const ggprof_acc_proc *p = NULL;
        for (size_t i = 0; c->acc && i < c->acc->n_procs; i++) {
            if (c->acc->procs[i].pid == pid) p = &c->acc->procs[i];
        }
        if (!p || p->graphs_ns <= 0 || p->wall_ns <= 0) continue;
        /* every thread's wait, not one thread's: the threads meet at a barrier after each node, so a thread kept
         * off its CPU holds them all, and the waits of different threads fall at different moments and add up */
        int64_t stake = (int64_t) fmin((double) p->graphs_ns, (double) runq * share(p->graphs_ns, p->wall_ns));
        if (fired && stake <= out->at_stake_ns) continue;
        memset(out, 0, sizeof(*out));
        out->pid = pid, out->at_stake_ns = stake;
        ev_text(out, "backend", "CPU");
        ev_int(out, "runq_ns", runq);
        ev_int(out, "cpu_ns", cpu);
        ev_real(out, "waiting_share", waiting);
        ev_int(out, "threads", threads);
        ev_real(out, "cpus", usable);
        if (sqlite3_column_type(st, 4) != SQLITE_NULL) ev_int(out, "nivcsw", sqlite3_column_int64(st, 4));
        advise(out, "the threads waited for a CPU %.3g%% of the time they were runnable, with %" PRId64 " threads on"
                    " %.3g CPUs: other work on the machine takes these cores; stop it, or pin the run and the other"
                    " work to separate cores (taskset -c, --cpu-mask)", 100.0 * waiting, threads, usable);
        fired = 1;
    }
    sqlite3_finalize(st);
    return fired;
}

/* peak_tensor: a compute buffer whose peak is mostly one tensor (its "share" of the peak's extent or more, and a
 * peak of "peak" bytes or more); memory, not time: at stake 0. */
static int rule_peak_tensor(const ggprof_findings_ctx *c, ggprof_finding *out) {
    ggprof_mem m;
    char       why[256];
    if (ggprof_mem_load(c->db, &m, why, sizeof(why)) != 0) return failed(c, why);
    if (!m.present) missing(c, "the trace records no memory (buffers, plans)");
    double              min_share = param(c, "share"), min_peak = param(c, "peak");
    int                 fired = 0;
    const ggprof_mpeak *best  = NULL;
    const ggprof_mlive *big   = NULL;
    for (size_t i = 0; m.present && i < m.n_peaks; i++) {
        const ggprof_mpeak *pk = &m.peaks[i];
        const ggprof_mlive *top = NULL;
        for (size_t j = 0; j < pk->n_live; j++) {
            if (!top || pk->live[j].size > top->size) top = &pk->live[j];
        }
        if (!top || (double) pk->extent < min_peak || (double) top->size < min_share * (double) pk->extent) continue;
        if (!best || pk->extent > best->extent) best = pk, big = top;
    }
    if (best) {
        out->pid = best->buf->pid, out->at_stake_ns = 0;
        ev_text(out, "op", big->op);
        if (big->layer >= 0) ev_int(out, "layer", big->layer);
        ev_text(out, "backend", best->buf->name);
        ev_text(out, "node", big->tensor);
        ev_real(out, "tensor_mib", GGPROF_MIB(big->size));
        ev_real(out, "peak_mib", GGPROF_MIB(best->extent));
        advise(out, "one tensor (%s, %s) is most of the %s compute buffer's peak: a smaller -ub shrinks it"
                    " (activations grow with the tokens a graph), -fa on for attention scores", big->tensor, big->op,
               best->buf->name);
        fired = 1;
    }
    ggprof_mem_free(&m);
    return fired;
}

#define SHARE(name, v, what) { name, v, "fraction", what }
const ggprof_rule ggprof_rules[] = {
    { "fallback", rule_fallback, "any node off the best device; at stake: those nodes' time", { { 0 } } },
    { "threads_oversubscribed", rule_threads_oversubscribed,
      "threads > CPUs allowed; at stake: CPU waits x (threads - CPUs) / threads", { { 0 } } },
    { "thread_imbalance", rule_thread_imbalance, "one op's barrier waits >= {share} of the recorded time",
      { SHARE("share", 0.05, "one op's waits for the slowest thread, of the process's recorded time") } },
    { "cpu_contention", rule_cpu_contention,
      "threads <= CPUs allowed, yet waiting for a CPU >= {share} of their runnable time; at stake: the wait per thread"
      " in the graphs",
      { SHARE("share", 0.20, "run-queue wait, of the threads' time on a CPU or waiting for one") } },
    { "host_gap", rule_host_gap, "host time between graphs >= {share} of the wall time, {graphs} or more",
      { SHARE("share", 0.10, "host time between graphs, of the process's wall time"),
        { "graphs", 2, "graphs", "the fewest graphs a process must have computed" } } },
    { "graph_build", rule_graph_build, "llama_decode outside graphs >= {share} of llama_decode",
      { SHARE("share", 0.10, "time in llama_decode outside the graphs, of llama_decode's") } },
    { "copies", rule_copies, "copies >= {share} of the graphs' time",
      { SHARE("share", 0.10, "COPY records' time, of the graphs' time") } },
    { "loading", rule_loading, "before the first graph >= {share} of the wall time, weights >= {weights}",
      { SHARE("share", 0.50, "time before the first graph, of the process's wall time"),
        { "weights", 1 << 20, "bytes", "the least weights a process must load, where its buffers are known" } } },
    { "below_roof", rule_below_roof, "roof% < {roof_pct} and time above the roof >= {share} of ops (needs --roof)",
      { { "roof_pct", 20, "percent", "the op's speed, of its roof" },
        SHARE("share", 0.05, "the op's time above its roof, of all ops' time") } },
    { "small_ubatch", rule_small_ubatch,
      "a prompt in graphs of < {ubatch}; advice -ub {target}, or -ub under {blas_min_batch} on a BLAS build",
      { { "ubatch", 128, "tokens", "tokens a graph under which a prompt fires the rule" },
        { "target", 512, "tokens", "the ubatch advised (and -b), without BLAS or with a faster BLAS" },
        { "blas_min_batch", 32, "tokens", "ggml-blas's min_batch: it takes MUL_MATs of this many tokens or more" } } },
    { "peak_tensor", rule_peak_tensor, "one tensor >= {share} of a compute buffer's peak (>= {peak})",
      { SHARE("share", 0.50, "the largest live tensor, of the compute buffer's peak"),
        { "peak", 1 << 20, "bytes", "the least peak of a compute buffer" } } },
};
#undef SHARE
const size_t ggprof_n_rules = sizeof(ggprof_rules) / sizeof(ggprof_rules[0]);

/* ---------------------------------------------------------------- running and writing */

static int by_stake(const void *a, const void *b) {
    const ggprof_finding *x = a, *y = b;
    if (x->at_stake_ns != y->at_stake_ns) return x->at_stake_ns < y->at_stake_ns ? 1 : -1;
    return strcmp(x->rule, y->rule);
}

int ggprof_findings_run(sqlite3 *db, const ggprof_accounting *acc, const ggprof_roofs *roofs, ggprof_findings *f,
                        char *why, size_t why_len) {
    memset(f, 0, sizeof(*f));
    ggprof_accounting own = { 0 };
    if (!acc) {
        if (ggprof_accounting_load(db, &own, why, why_len) != 0) return -1;
        acc = &own;
    }
    ggprof_rule_state   state;
    ggprof_findings_ctx c = { db, acc, roofs, 0, 0, NULL, &state };
    for (size_t i = 0; i < acc->n_procs; i++) {
        c.wall_ns += acc->procs[i].wall_ns, c.graphs_ns += acc->procs[i].graphs_ns;
    }
    f->v      = calloc(ggprof_n_rules, sizeof(*f->v));
    f->silent = calloc(ggprof_n_rules, sizeof(*f->silent));
    if (!f->v || !f->silent) {
        ggprof_findings_free(f);
        ggprof_accounting_free(&own);
        snprintf(why, why_len, "findings: out of memory");
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < ggprof_n_rules && !rc; i++) {
        ggprof_finding *out = &f->v[f->n];
        memset(out, 0, sizeof(*out));
        memset(&state, 0, sizeof(state));
        c.rule    = &ggprof_rules[i];
        int fired = ggprof_rules[i].fn(&c, out);
        if (fired < 0 || state.error[0]) {
            snprintf(why, why_len, "findings: rule %s failed: %s", ggprof_rules[i].name,
                     state.error[0] ? state.error : "an error in the rule");
            rc = -1;
        } else if (fired == 1) {
            out->rule = ggprof_rules[i].name;
            if (out->at_stake_ns < 0) out->at_stake_ns = 0;
            f->n++;
        } else if (state.absent[0]) {
            ggprof_rule_silence *q = &f->silent[f->n_silent++];
            q->rule = ggprof_rules[i].name;
            snprintf(q->why, sizeof(q->why), "%s", state.absent);
        }
    }
    ggprof_accounting_free(&own);
    if (rc) {
        ggprof_findings_free(f);
        return rc;
    }
    ggprof_sort(f->v, f->n, sizeof(*f->v), by_stake);
    return 0;
}

void ggprof_findings_free(ggprof_findings *f) {
    free(f->v);
    free(f->silent);
    memset(f, 0, sizeof(*f));
}

void ggprof_rule_param_text(const ggprof_rule_param *p, char *buf, size_t len) {
    if (strcmp(p->unit, "fraction") == 0) snprintf(buf, len, "%.4g%%", 100.0 * p->value);
    else if (strcmp(p->unit, "percent") == 0) snprintf(buf, len, "%.4g", p->value);
    else if (strcmp(p->unit, "bytes") == 0 && p->value >= 1 << 20) snprintf(buf, len, "%.4g MiB", p->value / (1 << 20));
    else snprintf(buf, len, "%.4g %s", p->value, p->unit);
}

void ggprof_rule_threshold_text(const ggprof_rule *r, char *buf, size_t len) {
    size_t at = 0;
    buf[0]    = '\0';
    for (const char *s = r->threshold; *s && at + 1 < len;) {
        const char *end = *s == '{' ? strchr(s, '}') : NULL;
        const ggprof_rule_param *p = NULL;
        for (int i = 0; end && i < GGPROF_RULE_MAX_PARAMS && r->params[i].name; i++) {
            if (strlen(r->params[i].name) == (size_t) (end - s - 1) && !strncmp(r->params[i].name, s + 1, (size_t) (end - s - 1))) {
                p = &r->params[i];
            }
        }
        if (p) {
            char v[48];
            ggprof_rule_param_text(p, v, sizeof(v));
            at += (size_t) snprintf(buf + at, len - at, "%s", v);
            s = end + 1;
        } else {
            buf[at++] = *s++;
            buf[at]   = '\0';
        }
        if (at >= len) at = len - 1;
    }
}

void ggprof_rules_list(FILE *out, int json) {
    if (json) fputs("{\"rules\": [", out);
    for (size_t i = 0; i < ggprof_n_rules; i++) {
        const ggprof_rule *r = &ggprof_rules[i];
        char text[512];
        ggprof_rule_threshold_text(r, text, sizeof(text));
        if (!json) {
            fprintf(out, "%-24s %s\n", r->name, text);
            for (int k = 0; k < GGPROF_RULE_MAX_PARAMS && r->params[k].name; k++) {
                char v[48];
                ggprof_rule_param_text(&r->params[k], v, sizeof(v));
                fprintf(out, "%-24s   %s = %s: %s\n", "", r->params[k].name, v, r->params[k].what);
            }
            continue;
        }
        fprintf(out, "%s\n  {\"rule\": ", i ? "," : "");
        ggprof_json_put(out, r->name, 0);
        fputs(", \"threshold\": ", out);
        ggprof_json_put(out, text, 0);
        fputs(", \"params\": [", out);
        for (int k = 0; k < GGPROF_RULE_MAX_PARAMS && r->params[k].name; k++) {
            fprintf(out, "%s{\"name\": ", k ? ", " : "");
            ggprof_json_put(out, r->params[k].name, 0);
            fprintf(out, ", \"value\": %.17g, \"unit\": ", r->params[k].value);
            ggprof_json_put(out, r->params[k].unit, 0);
            fputs(", \"what\": ", out);
            ggprof_json_put(out, r->params[k].what, 0);
            fputs("}", out);
        }
        fputs("]}", out);
    }
    if (json) fputs("\n]}\n", out);
}

void ggprof_findings_print(FILE *out, const ggprof_findings *f, size_t max) {
    fprintf(out, "=== Findings (ranked by the time at stake; docs/findings.md) ===\n");
    if (!f->n) fprintf(out, "  No rule fired: nothing stands out in this trace.\n");
    for (size_t i = 0; i < f->n && i < max; i++) {
        const ggprof_finding *x = &f->v[i];
        char safe[160], advice[1024];
        fprintf(out, "  %zu. %s: %.3f ms at stake (pid %d)\n", i + 1, x->rule, (double) x->at_stake_ns / 1e6, x->pid);
        fprintf(out, "     ");
        for (int k = 0; k < x->n_ev; k++) {
            fprintf(out, "%s%s=%s", k ? ", " : "", x->ev[k].key, ggprof_text_safe(x->ev[k].val, safe, sizeof(safe)));
        }
        fprintf(out, "\n     try: %s\n", ggprof_text_safe(x->advice, advice, sizeof(advice)));
        if (x->change.n) {
            fprintf(out, "     change:");
            for (int k = 0; k < x->change.n && k < GGPROF_CHANGE_MAX; k++) {
                fprintf(out, " %s %s", x->change.opt[k].flag, x->change.opt[k].value);
            }
            fprintf(out, "\n");
        }
    }
    if (f->n > max) fprintf(out, "  ... and %zu more ('report --format json' lists them all)\n", f->n - max);
    fprintf(out, "\n");
}

void ggprof_change_json(FILE *out, const ggprof_change *ch, unsigned json_flags) {
    fputc('{', out);
    for (int k = 0; k < ch->n && k < GGPROF_CHANGE_MAX; k++) {
        if (k) fputs(", ", out);
        ggprof_json_put(out, ch->opt[k].flag, json_flags);
        fputs(": ", out);
        ggprof_json_put(out, ch->opt[k].value, json_flags);
    }
    fputc('}', out);
}

void ggprof_findings_json(FILE *out, const ggprof_findings *f, const char *indent, unsigned json_flags) {
    fputs(f->n ? "[\n" : "[]", out);
    for (size_t i = 0; i < f->n; i++) {
        const ggprof_finding *x = &f->v[i];
        fprintf(out, "%s  {\"rule\": ", indent);
        ggprof_json_put(out, x->rule, json_flags);
        fprintf(out, ", \"at_stake_ns\": %" PRId64 ", \"pid\": %d, \"evidence\": {", x->at_stake_ns, x->pid);
        for (int k = 0; k < x->n_ev; k++) {
            if (k) fputs(", ", out);
            ggprof_json_put(out, x->ev[k].key, json_flags);
            fputs(": ", out);
            if (x->ev[k].numeric) fputs(x->ev[k].val, out);
            else ggprof_json_put(out, x->ev[k].val, json_flags);
        }
        fputs("}, \"advice\": ", out);
        ggprof_json_put(out, x->advice, json_flags);
        fputs(", \"change\": ", out);
        ggprof_change_json(out, &x->change, json_flags);
        fputs(i + 1 < f->n ? "},\n" : "}\n", out);
    }
    if (f->n) fprintf(out, "%s]", indent);
}
