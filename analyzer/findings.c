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

/* Prepares sql; NULL when the trace lacks what it reads (the rule stays silent). */
static sqlite3_stmt *prep(const ggprof_findings_ctx *c, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
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
        if (strcmp(reason, "unsupported") == 0) {
            advise(out, "%s has no %s kernel for this op and type: a newer ggml, or weights of another type", pref,
                   col_text(st, 3) ? col_text(st, 3) : "?");
        } else if (strcmp(reason, "weights_on_host") == 0) {
            advise(out, "its weights are in host memory: more layers on %s (-ngl 99), fewer -ot / --cpu-moe overrides"
                        " if %s's memory allows", pref, pref);
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
 * cpus_allowed.PID, cpu_quota.PID); at stake: all its CPU waits (barriers, kick-off, waits inside ops): with more
 * threads than CPUs a thread off its CPU makes every other wait for it, and -t CPUS removes those waits first. */
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
        double  cpus    = sqlite3_column_type(st, 2) == SQLITE_NULL ? 0 : sqlite3_column_double(st, 2);
        double  quota   = sqlite3_column_type(st, 3) == SQLITE_NULL ? 0 : sqlite3_column_double(st, 3);
        double  usable  = cpus > 0 && quota > 0 ? fmin(cpus, quota) : cpus > 0 ? cpus : quota;
        if (usable <= 0 || threads <= 0 || (double) threads <= usable) continue;
        sqlite3_stmt *w = prep_pid(c, "SELECT CAST(total(CASE WHEN type = 2 THEN duration_ns ELSE wait_ns END) AS"
                                      " INTEGER) FROM events WHERE pid = ?1 AND ((type = 2 AND name IN ('cpu_barrier',"
                                      " 'cpu_kickoff') AND duration_ns > 0) OR (type = 0 AND wait_ns > 0))", pid);
        int64_t waits = 0;
        if (w) {
            if (sqlite3_step(w) == SQLITE_ROW) waits = col_pos(w, 0);
            sqlite3_finalize(w);
        }
        int64_t stake = waits;
        if (fired && stake <= out->at_stake_ns) continue;
        memset(out, 0, sizeof(*out));
        out->pid = pid, out->at_stake_ns = stake;
        ev_text(out, "backend", "CPU");
        ev_int(out, "threads", threads);
        ev_real(out, "cpus", usable);
        ev_int(out, "barrier_ns", waits);
        advise(out, "%" PRId64 " threads on %.3g CPUs: -t %d (threads beyond the CPUs make the others wait at every"
                    " barrier)", threads, usable, (int) floor(usable) > 0 ? (int) floor(usable) : 1);
        out->change.n = 1;
        snprintf(out->change.opt[0].flag, sizeof(out->change.opt[0].flag), "-t");
        snprintf(out->change.opt[0].value, sizeof(out->change.opt[0].value), "%d",
                 (int) floor(usable) > 0 ? (int) floor(usable) : 1);
        fired = 1;
    }
    sqlite3_finalize(st);
    return fired;
}

/* thread_imbalance: per op and backend, the time threads waited for the slowest: with record --threads (op_threads
 * rows of the process) each op's imbalance, slowest minus fastest arrival at its barriers; otherwise thread 0's
 * waits for the slowest (cpu_barrier records after it, its wait_ns inside it), a lower bound of that. Fires above
 * 5% of the recorded time; at stake: those waits. */
#define IMB_THREAD0                                                                                                 \
    "WITH s AS (SELECT pid, sched_id, type, name, duration_ns, wait_ns, backend_id, node_id,"                       \
    "   LAG(type) OVER w AS ptype, LAG(name) OVER w AS pname, LAG(node_id) OVER w AS pnode,"                        \
    "   LAG(backend_id) OVER w AS pbackend FROM events WHERE graph_id IS NOT NULL AND type IN (0, 2)"              \
    "   WINDOW w AS (PARTITION BY pid, graph_id, tid ORDER BY start_ns, rowid)),"                                   \
    " imb0 AS (SELECT pid, sched_id, pname AS op, pnode AS node_id, pbackend AS backend_id, duration_ns AS ns"      \
    "   FROM s WHERE type = 2 AND name = 'cpu_barrier' AND ptype = 0 AND duration_ns > 0"                           \
    "   UNION ALL SELECT pid, sched_id, name, node_id, backend_id, wait_ns FROM s WHERE type = 0 AND wait_ns > 0),"
#define IMB_REST                                                                                                    \
    " per_node AS (SELECT pid, sched_id, op, backend_id, node_id, total(ns) AS ns, count(*) AS n FROM imb"         \
    "   GROUP BY pid, sched_id, op, backend_id, node_id),"                                                          \
    " per_op AS (SELECT p.pid, p.sched_id, p.op, p.backend_id, CAST(min(sum(p.ns), 9.2e18) AS INTEGER) AS ns,"     \
    "   sum(p.n) AS n, max(p.ns), n.tensor_name AS tensor FROM per_node p LEFT JOIN nodes n ON n.pid = p.pid"       \
    "   AND n.node_id = p.node_id GROUP BY p.pid, p.sched_id, p.op, p.backend_id)"                                  \
    " SELECT pid, sched_id, op, backend_id, ns, n, tensor,"                                                         \
    "   (SELECT CAST(total(duration_ns) AS INTEGER) FROM events e WHERE e.pid = per_op.pid AND e.type IN (0, 1, 2)" \
    "    AND e.duration_ns > 0) FROM per_op ORDER BY ns DESC LIMIT 1"
static int rule_thread_imbalance(const ggprof_findings_ctx *c, ggprof_finding *out) {
    sqlite3_stmt *any = prep(c, "SELECT 1 FROM op_threads LIMIT 1");
    int per_thread = any && sqlite3_step(any) == SQLITE_ROW;
    sqlite3_finalize(any);
    sqlite3_stmt *st = prep(c, per_thread
        ? IMB_THREAD0 " imb AS (SELECT * FROM imb0 WHERE pid NOT IN (SELECT pid FROM op_threads)"
          "   UNION ALL SELECT e.pid, e.sched_id, e.name, e.node_id, e.backend_id, t.imbalance_ns FROM op_threads t"
          "   JOIN events e ON e.pid = t.pid AND e.graph_id = t.graph_id AND e.split_id = t.split_id"
          "   AND e.node_index = t.node_index AND e.type = 0 WHERE t.thread = 0 AND t.imbalance_ns > 0)," IMB_REST
        : IMB_THREAD0 " imb AS (SELECT * FROM imb0)," IMB_REST);
    if (!st) return 0;
    int fired = 0;
    if (sqlite3_step(st) == SQLITE_ROW && share(col_pos(st, 4), col_pos(st, 7)) >= 0.05) {
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
        sqlite3_stmt *own = prep_pid(c, "SELECT 1 FROM op_threads WHERE pid = ?1 LIMIT 1", out->pid);
        ev_text(out, "measured", own && sqlite3_step(own) == SQLITE_ROW ? "every thread" : "thread 0");
        sqlite3_finalize(own);
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

/* host_gap: host time between graphs outside llama_decode above 10% of the process's wall time. */
static int rule_host_gap(const ggprof_findings_ctx *c, ggprof_finding *out) {
    const ggprof_acc_proc *p = acc_max(c, get_host_gaps);
    if (!p || p->n_graphs < 2 || share(p->host_gaps_ns, p->wall_ns) < 0.10) return 0;
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
    advise(out, "the devices wait for the program between graphs (sampling, tokenizing, the application): batch"
                " requests (-np, more tokens per llama_decode), move work off the thread that calls llama_decode");
    return 1;
}

/* graph_build: time inside llama_decode outside the graph computes above 10% of the time in llama_decode. */
static int rule_graph_build(const ggprof_findings_ctx *c, ggprof_finding *out) {
    const ggprof_acc_proc *p = acc_max(c, get_graph_build);
    if (!p || share(p->graph_build_ns, p->batch_ns) < 0.10) return 0;
    out->pid = p->pid, out->at_stake_ns = p->graph_build_ns;
    ev_int(out, "graph_build_ns", p->graph_build_ns);
    ev_int(out, "decode_ns", p->batch_ns);
    ev_real(out, "share_of_decode", share(p->graph_build_ns, p->batch_ns));
    advise(out, "llama_decode spends this building and planning graphs: a llama.cpp that reuses the graph between"
                " tokens, or more tokens per llama_decode (-b, -ub, -np) to spread the build");
    return 1;
}

/* copies: COPY records' time above 10% of the graphs' time; evidence: the tensor copied for the most time. */
static int rule_copies(const ggprof_findings_ctx *c, ggprof_finding *out) {
    const ggprof_acc_proc *p = acc_max(c, get_copies);
    if (!p || p->graphs_ns <= 0 || share(p->copies_ns, p->graphs_ns) < 0.10) return 0;
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
    advise(out, "copies between backends: all layers on the device (-ngl 99) where memory allows, fewer -ot /"
                " --cpu-moe overrides, or the whole model on one backend");
    return 1;
}

/* loading: the time before the first graph above half the process's wall time, when the trace knows the process's
 * start or its buffers' allocations. At stake: all of it (a process kept running for many requests pays it once);
 * the advice follows its largest part: the process's own start, the model's loading, or the context's set-up. */
static int rule_loading(const ggprof_findings_ctx *c, ggprof_finding *out) {
    const ggprof_acc_proc *p = acc_max(c, get_startup);
    if (!p || !p->n_graphs || share(p->before_first_graph_ns, p->wall_ns) < 0.5) return 0;
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
    if (n_bufs && weights < (1 << 20)) return 0;
    out->pid = p->pid, out->at_stake_ns = p->before_first_graph_ns;
    ev_int(out, "before_first_graph_ns", p->before_first_graph_ns);
    ev_int(out, "wall_ns", p->wall_ns);
    ev_int(out, "startup_ns", p->before_setup_ns);
    ev_int(out, "loading_ns", p->loading_ns);
    ev_int(out, "context_setup_ns", p->context_ns);
    if (n_bufs) ev_real(out, "weights_mib", GGPROF_MIB(weights));
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

/* below_roof: the op and backend furthest below its roof (--roof): roof% under 20 and its time above the roof at
 * least 5% of the ops' time; at stake: its time less its time at the roof. */
static int rule_below_roof(const ggprof_findings_ctx *c, ggprof_finding *out) {
    if (!c->roofs || !c->roofs->n) return 0;
    ggprof_rl_groups g;
    ggprof_rl_row   *rows = NULL;
    size_t           n    = 0;
    char             why[256];
    if (ggprof_rl_groups_load(c->db, &g, why, sizeof(why)) != 0) return 0;
    int fired = 0;
    if (ggprof_rl_rollup(&g, c->roofs, 0, &rows, &n) == 0) {
        const ggprof_rl_row *best = NULL;
        double               best_stake = 0;
        for (size_t i = 0; i < n; i++) {
            const ggprof_rl_row *r = &rows[i];
            if (!r->has_roof || !r->total_ns) continue;
            double stake = (double) r->total_ns - r->roof_ns;
            if (r->roof_ns / (double) r->total_ns < 0.20 && stake >= 0.05 * (double) g.op_ns && stake > best_stake) {
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

/* small_ubatch: prompts (batches of more than one token) computed in graphs of fewer than 128 tokens each; at
 * stake: each graph beyond ceil(tokens / 512) costs at least the batch's shortest graph. */
static int rule_small_ubatch(const ggprof_findings_ctx *c, ggprof_finding *out) {
    sqlite3_stmt *st = prep(c,
        "SELECT b.pid, b.batch_id, b.n_tokens, count(*) AS graphs, min(g.duration_ns), g.sched_id"
        " FROM batches b JOIN graph_list g ON g.pid = b.pid AND g.batch_id = b.batch_id"
        " WHERE b.n_tokens > 1 GROUP BY b.pid, b.batch_id HAVING graphs > 1 AND 1.0 * b.n_tokens / graphs < 128");
    if (!st) return 0;
    int64_t stake = 0, n_batches = 0, worst = -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t tokens = col_pos(st, 2), graphs = col_pos(st, 3), need = (tokens + 511) / 512;
        int64_t s = graphs > need ? (graphs - need) * col_pos(st, 4) : 0;
        stake = stake + s < stake ? INT64_MAX : stake + s;
        n_batches++;
        if (s > worst) {
            worst = s;
            memset(out, 0, sizeof(*out));
            out->pid = sqlite3_column_int(st, 0);
            ev_int(out, "batch", sqlite3_column_int64(st, 1));
            ev_int(out, "tokens", tokens);
            ev_int(out, "graphs", graphs);
            ev_int(out, "ubatch_tokens", (tokens + graphs - 1) / graphs);
        }
    }
    sqlite3_finalize(st);
    if (!n_batches) return 0;
    out->at_stake_ns = stake;
    ev_int(out, "batches", n_batches);
    advise(out, "prompts computed %s tokens a graph: -ub 512 (and -b at least as large) computes them in fewer,"
                " larger graphs", ggprof_finding_ev(out, "ubatch_tokens"));
    return 1;
}

/* peak_tensor: a compute buffer whose peak is mostly one tensor (half or more of the peak's extent, and 1 MiB or
 * more); memory, not time: at stake 0. */
static int rule_peak_tensor(const ggprof_findings_ctx *c, ggprof_finding *out) {
    ggprof_mem m;
    char       why[256];
    if (ggprof_mem_load(c->db, &m, why, sizeof(why)) != 0) return 0;
    int                 fired = 0;
    const ggprof_mpeak *best  = NULL;
    const ggprof_mlive *big   = NULL;
    for (size_t i = 0; m.present && i < m.n_peaks; i++) {
        const ggprof_mpeak *pk = &m.peaks[i];
        const ggprof_mlive *top = NULL;
        for (size_t j = 0; j < pk->n_live; j++) {
            if (!top || pk->live[j].size > top->size) top = &pk->live[j];
        }
        if (!top || pk->extent < (1 << 20) || 2 * top->size < pk->extent) continue;
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

const ggprof_rule ggprof_rules[] = {
    { "fallback", rule_fallback, "any node off the best device; at stake: those nodes' time" },
    { "threads_oversubscribed", rule_threads_oversubscribed, "threads > CPUs allowed; at stake: barrier waits x excess" },
    { "thread_imbalance", rule_thread_imbalance, "one op's barrier waits >= 5% of the recorded time" },
    { "host_gap", rule_host_gap, "host time between graphs >= 10% of the wall time" },
    { "graph_build", rule_graph_build, "llama_decode outside graphs >= 10% of llama_decode" },
    { "copies", rule_copies, "copies >= 10% of the graphs' time" },
    { "loading", rule_loading, "before the first graph >= 50% of the wall time" },
    { "below_roof", rule_below_roof, "roof% < 20 and time above the roof >= 5% of ops (needs --roof)" },
    { "small_ubatch", rule_small_ubatch, "a prompt in graphs of < 128 tokens" },
    { "peak_tensor", rule_peak_tensor, "one tensor >= half a compute buffer's peak (>= 1 MiB)" },
};
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
    ggprof_findings_ctx c = { db, acc, roofs, 0, 0 };
    for (size_t i = 0; i < acc->n_procs; i++) {
        c.wall_ns += acc->procs[i].wall_ns, c.graphs_ns += acc->procs[i].graphs_ns;
    }
    f->v = calloc(ggprof_n_rules, sizeof(*f->v));
    if (!f->v) {
        ggprof_accounting_free(&own);
        snprintf(why, why_len, "findings: out of memory");
        return -1;
    }
    for (size_t i = 0; i < ggprof_n_rules; i++) {
        ggprof_finding *out = &f->v[f->n];
        memset(out, 0, sizeof(*out));
        if (ggprof_rules[i].fn(&c, out) == 1) {
            out->rule = ggprof_rules[i].name;
            if (out->at_stake_ns < 0) out->at_stake_ns = 0;
            f->n++;
        }
    }
    ggprof_sort(f->v, f->n, sizeof(*f->v), by_stake);
    ggprof_accounting_free(&own);
    return 0;
}

void ggprof_findings_free(ggprof_findings *f) {
    free(f->v);
    memset(f, 0, sizeof(*f));
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
    }
    if (f->n > max) fprintf(out, "  ... and %zu more ('report --format json' lists them all)\n", f->n - max);
    fprintf(out, "\n");
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
        fputs(i + 1 < f->n ? "},\n" : "}\n", out);
    }
    if (f->n) fprintf(out, "%s]", indent);
}
