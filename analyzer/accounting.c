/* The whole run accounted for, per process: wall time cut into categories that add up to it (docs/findings.md).
 * account() runs the phases in order, each filling part of the process's ggprof_acc_proc from the trace and from
 * the intervals the earlier ones loaded. The slices (accounting_slices.c) and the output (accounting_print.c) read
 * what it leaves. */
#include "accounting.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accounting_ivls.h"
#include "llama_regions.h"
#include "process_time.h"
#include "sql.h"

/* ---------------------------------------------------------------- queries on one process */

/* A process's queries: ?1 is its pid. A table or column the trace lacks reads as no rows (an older trace); any other
 * error sets failed, and why says which query (the load then fails with it). */
typedef struct {
    sqlite3 *db;
    int32_t  pid;
    char    *why;
    size_t   why_len;
    int      failed;
} acc_q;

static void q_fail(acc_q *q, const char *msg, const char *sql) {
    if (!q->failed) snprintf(q->why, q->why_len, "accounting: %s (in \"%.60s...\")", msg, sql);
    q->failed = 1;
}

/* The statement, pid bound; NULL when the trace lacks what it reads or on an error (failed). */
static sqlite3_stmt *q_prepare(acc_q *q, const char *sql) {
    sqlite3_stmt *st = NULL;
    char          msg[256];
    ggprof_sql_rc rc = ggprof_sql_prepare(q->db, sql, &st, msg, sizeof(msg));
    if (rc == GGPROF_SQL_ERROR) q_fail(q, msg, sql);
    if (rc != GGPROF_SQL_OK) return NULL;
    sqlite3_bind_int(st, 1, q->pid);
    return st;
}

/* Finalizes st, failing q when its last step was an error (not the end of its rows). */
static void q_done(acc_q *q, sqlite3_stmt *st, int step, const char *sql) {
    if (step != SQLITE_DONE && step != SQLITE_ROW) q_fail(q, sqlite3_errmsg(q->db), sql);
    sqlite3_finalize(st);
}

/* The rows of sql as intervals (start, duration), and the third column into tokens (when not NULL). */
static void load_ivls(acc_q *q, const char *sql, ivl_list *l, ivl_list *tokens) {
    sqlite3_stmt *st = q_prepare(q, sql);
    if (!st) return;
    int step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (ivl_push(l, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) != 0 ||
            (tokens && ivl_push(tokens, sqlite3_column_int64(st, 2), 0) != 0)) {
            q_fail(q, "out of memory", sql);
            break;
        }
    }
    q_done(q, st, step, sql);
}

/* The first column of the first row of sql, dflt when there is none or it is NULL (*found 0). */
static int64_t scalar_pid(acc_q *q, const char *sql, int64_t dflt, int *found) {
    int64_t       v  = dflt;
    sqlite3_stmt *st = q_prepare(q, sql);
    if (found) *found = 0;
    if (!st) return v;
    int step = sqlite3_step(st);
    if (step == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        v = sqlite3_column_int64(st, 0);
        if (found) *found = 1;
    }
    q_done(q, st, step, sql);
    return v;
}

/* The spans of llama.cpp's calls named in names (schema/llama_regions.h), in start order. */
static void load_llama_spans(acc_q *q, const char *const *names, size_t n, ivl_list *l) {
    char   sql[512];
    size_t k = (size_t) snprintf(sql, sizeof(sql), "SELECT start_ns, duration_ns FROM regions WHERE pid = ?1 AND"
                                                   " depth = %d AND name IN (", GGPROF_LLAMA_REGION_DEPTH);
    for (size_t i = 0; i < n && k < sizeof(sql); i++) k += (size_t) snprintf(sql + k, sizeof(sql) - k, "%s'%s'", i ? ", " : "", names[i]);
    if (k < sizeof(sql)) k += (size_t) snprintf(sql + k, sizeof(sql) - k, ") ORDER BY start_ns");
    if (k >= sizeof(sql)) {
        q_fail(q, "llama.cpp's region names do not fit the query", sql);
        return;
    }
    load_ivls(q, sql, l, NULL);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---------------------------------------------------------------- account()'s phases */

/* What the phases hand on: the intervals loaded, and where the run's stretches begin. */
typedef struct {
    ivl_list g;                /* graphs, merged */
    ivl_list b, btok, bout;    /* llama_decode calls in start order, their tokens and outputs */
    ivl_list u;                /* every graph and llama_decode call, merged */
    ivl_list busy_idle, idle;  /* the thread blocked; the part outside u */
    ivl_list ld, setup;        /* llama.cpp's model loads; every set-up call (loads included), merged */
    int64_t  t_use, t_work;    /* the set-up's start; the work's (the first graph or llama_decode call) */
    int64_t  pre_gaps;         /* the program's own code between the set-up calls (measured set-up only) */
    int64_t  gen_a, gen_b;     /* the first one-token llama_decode's start, the last one's end */
} acc_work;

static void work_free(acc_work *w) {
    free(w->g.v), free(w->b.v), free(w->btok.v), free(w->bout.v), free(w->u.v), free(w->busy_idle.v), free(w->idle.v);
    free(w->ld.v), free(w->setup.v);
}

/* The wall: fork to exit as record measured them (process_time.c), else the engine's start of the process, else the
 * first record; to the exit, else the last record. Also the run's page faults and the weights buffers. */
static int find_wall(acc_q *q, ggprof_acc_proc *p) {
    /* Each table on its own: an older trace may lack one. */
    static const char *const k_first[] = {
        "SELECT min(start_ns) FROM events WHERE pid = ?1", "SELECT min(start_ns) FROM graph_list WHERE pid = ?1",
        "SELECT min(start_ns) FROM batches WHERE pid = ?1",
        "SELECT min(alloc_ns) FROM buffer_list WHERE pid = ?1 AND alloc_ns > 0" };
    static const char *const k_last[] = {
        "SELECT max(start_ns + duration_ns) FROM events WHERE pid = ?1",
        "SELECT max(start_ns + duration_ns) FROM graph_list WHERE pid = ?1",
        "SELECT max(start_ns + duration_ns) FROM batches WHERE pid = ?1" };
    int     has;
    int64_t first = INT64_MAX, last = INT64_MIN;
    for (size_t i = 0; i < N_OF(k_first); i++) {
        int64_t v = scalar_pid(q, k_first[i], 0, &has);
        if (has && v < first) first = v;
    }
    for (size_t i = 0; i < N_OF(k_last); i++) {
        int64_t v = scalar_pid(q, k_last[i], 0, &has);
        if (has && v > last) last = v;
    }
    if (first == INT64_MAX) first = 0;
    if (last == INT64_MIN) last = first;
    p->first_use_ns = first;
    ggprof_process_times pt;
    if (ggprof_accounting_times(q->db, q->pid, &pt) != 0) {
        if (!q->failed) snprintf(q->why, q->why_len, "accounting: reading the process's times: %s", sqlite3_errmsg(q->db));
        q->failed = 1;
        return -1;
    }
    p->minflt = pt.has ? pt.minflt : -1, p->majflt = pt.has ? pt.majflt : -1;
    for (size_t i = 0; i < pt.n_buffers; i++) p->weights_bytes = sat_add(p->weights_bytes, pt.buffers[i].size);
    p->n_weights   = (int64_t) pt.n_buffers;
    int64_t pstart = scalar_pid(q, "SELECT start_ns FROM processes WHERE pid = ?1 AND start_ns > 0", 0, &has);
    p->start_ns    = first;
    if (pt.has && pt.fork_ns > 0 && pt.fork_ns <= first) p->start_ns = pt.fork_ns, p->start_known = 1;
    else if (has && pstart < first) p->start_ns = pstart, p->start_known = 1;
    p->end_ns = last > p->start_ns ? last : p->start_ns;
    if (pt.has && pt.exit_ns >= p->end_ns) p->end_ns = pt.exit_ns, p->exit_known = 1;
    ggprof_process_times_free(&pt);
    p->wall_ns = pos(sat_sub(p->end_ns, p->start_ns));
    return q->failed ? -1 : 0;
}

/* The thread whose blocked time is idle: the one calling llama_decode, else the one recording the most. */
static int find_thread(acc_q *q, ggprof_acc_proc *p) {
    int has;
    p->tid = (int) scalar_pid(q, "SELECT tid FROM batches WHERE pid = ?1 GROUP BY tid ORDER BY sum(duration_ns) DESC,"
                                 " tid LIMIT 1", 0, &has);
    if (!has) {
        p->tid = (int) scalar_pid(q, "SELECT tid FROM events WHERE pid = ?1 GROUP BY tid ORDER BY count(*) DESC, tid"
                                     " LIMIT 1", q->pid, NULL);
    }
    return q->failed ? -1 : 0;
}

/* The graphs (the graph list, else each graph's span of records: a JSON profile), the llama_decode calls and the
 * thread's blocked time. */
static int load_work(acc_q *q, const ggprof_acc_proc *p, acc_work *w) {
    load_ivls(q, "SELECT start_ns, duration_ns FROM graph_list WHERE pid = ?1", &w->g, NULL);
    if (!q->failed && w->g.n == 0) {
        load_ivls(q, "SELECT min(start_ns), max(start_ns + duration_ns) - min(start_ns) FROM events"
                     " WHERE pid = ?1 AND graph_id >= 0 GROUP BY sched_id, graph_id", &w->g, NULL);
    }
    load_ivls(q, "SELECT start_ns, duration_ns, n_tokens FROM batches WHERE pid = ?1 ORDER BY start_ns, batch_id",
              &w->b, &w->btok);
    load_ivls(q, "SELECT start_ns, duration_ns, n_outputs FROM batches WHERE pid = ?1 ORDER BY start_ns, batch_id",
              &w->u, &w->bout);
    static const char k_idle[] = "SELECT start_ns, end_ns - start_ns FROM thread_idle WHERE pid = ?1 AND tid = ?2";
    sqlite3_stmt *st = q->failed ? NULL : q_prepare(q, k_idle);
    if (st) {
        sqlite3_bind_int(st, 2, p->tid);
        int step;
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            if (ivl_push(&w->busy_idle, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) != 0) {
                q_fail(q, "out of memory", k_idle);
                break;
            }
        }
        q_done(q, st, step, k_idle);
    }
    for (size_t i = 0; !q->failed && i < w->g.n; i++) {
        if (ivl_push(&w->u, w->g.v[i].a, sat_sub(w->g.v[i].b, w->g.v[i].a)) != 0) q_fail(q, "out of memory", "");
    }
    return q->failed ? -1 : 0;
}

/* The graphs' and llama_decode calls' sums: prompt and generation, the first token, graph build, copies, and the
 * thread's idle time outside them (a blocked llama_decode is waiting for its device: compute or graph build). */
static int count_work(acc_q *q, ggprof_acc_proc *p, acc_work *w) {
    p->n_graphs  = (int64_t) w->g.n;
    p->graphs_ns = ivl_merge(&w->g);
    if (w->g.n) p->first_graph_ns = w->g.v[0].a, p->last_graph_end_ns = w->g.v[w->g.n - 1].b;
    w->gen_a = INT64_MAX, w->gen_b = INT64_MIN;
    for (size_t i = 0; i < w->b.n; i++) {
        int64_t d = sat_sub(w->b.v[i].b, w->b.v[i].a);
        p->batch_ns = sat_add(p->batch_ns, d);
        if (w->btok.v[i].a > 1) {
            p->prompt_ns = sat_add(p->prompt_ns, d), p->n_prompt_batches++;
            p->n_prompt_tokens = sat_add(p->n_prompt_tokens, w->btok.v[i].a);
        } else {
            p->generation_ns = sat_add(p->generation_ns, d), p->n_gen_batches++;
            if (w->b.v[i].a < w->gen_a) w->gen_a = w->b.v[i].a;
            if (w->b.v[i].b > w->gen_b) w->gen_b = w->b.v[i].b;
        }
        if (!p->first_token_ns && w->bout.v[i].a > 0) p->first_token_ns = w->b.v[i].b;
    }
    int64_t in_u = ivl_merge(&w->u);
    ivl_merge(&w->busy_idle);
    if (ivl_minus(&w->busy_idle, &w->u, &w->idle) != 0) {
        q_fail(q, "out of memory", "");
        return -1;
    }
    ivl_merge(&w->idle);
    p->graph_build_ns = pos(sat_sub(in_u, p->graphs_ns));
    p->copies_ns = scalar_pid(q, "SELECT CAST(total(duration_ns) AS INTEGER) FROM events WHERE pid = ?1 AND type = 1"
                                 " AND duration_ns > 0", 0, NULL);
    if (w->g.n) p->before_first_graph_ns = pos(sat_sub(p->first_graph_ns, p->start_ns));
    return q->failed ? -1 : 0;
}

/* The run's stretches before the work: startup, loading, context set-up (the work begins with the first llama_decode
 * or graph). Measured where the engine timed llama.cpp's set-up calls (schema/llama_regions.h): startup to the
 * first of them, loading the model-load calls, context set-up the context-creation calls, and the program's own code
 * between them host gaps; else inferred: startup to ggml's first use, loading to the context's first buffer (its KV
 * cache or compute buffer), context set-up to the work. */
static int cut_setup(acc_q *q, ggprof_acc_proc *p, acc_work *w) {
    static const char *const k_load[] = GGPROF_LLAMA_NAMES(GGPROF_LLAMA_LOAD_CALLS);
    static const char *const k_ctx[]  = GGPROF_LLAMA_NAMES(GGPROF_LLAMA_CONTEXT_CALLS);
    load_llama_spans(q, k_load, N_OF(k_load), &w->ld);
    load_llama_spans(q, k_ctx, N_OF(k_ctx), &w->setup);
    for (size_t i = 0; !q->failed && i < w->ld.n; i++) {
        if (ivl_push(&w->setup, w->ld.v[i].a, sat_sub(w->ld.v[i].b, w->ld.v[i].a)) != 0) q_fail(q, "out of memory", "");
    }
    if (q->failed) return -1;
    ivl_merge(&w->ld);
    ivl_merge(&w->setup);
    const ivl_list *u = &w->u;
    if (w->setup.n) {
        p->setup_measured = 1;
        w->t_use           = clamp(w->setup.v[0].a, p->start_ns, p->end_ns);
        w->t_work          = u->n ? clamp(u->v[0].a, w->t_use, p->end_ns) : p->end_ns;
        int64_t in_setup   = ivl_covered(&w->setup, w->t_use, w->t_work);
        p->loading_ns      = ivl_covered(&w->ld, w->t_use, w->t_work);
        p->context_ns      = pos(sat_sub(in_setup, p->loading_ns));
        w->pre_gaps        = pos(sat_sub(sat_sub(w->t_work, w->t_use), in_setup));
    } else {
        w->t_use      = clamp(p->first_use_ns, p->start_ns, p->end_ns);
        w->t_work     = u->n ? clamp(u->v[0].a, w->t_use, p->end_ns) : p->end_ns;
        int64_t t_ctx = clamp(scalar_pid(q, "SELECT min(alloc_ns) FROM buffers WHERE pid = ?1 AND kind IN ('kv',"
                                            " 'compute') AND alloc_ns > 0", w->t_work, NULL), w->t_use, w->t_work);
        p->loading_ns = sat_sub(t_ctx, w->t_use);
        p->context_ns = sat_sub(w->t_work, t_ctx);
    }
    p->before_setup_ns = sat_sub(w->t_use, p->start_ns);
    return q->failed ? -1 : 0;
}

/* [a, b) cut into graphs (g), llama_decode outside them (u less g), the thread blocked outside both (idle) and the
 * rest (host work). */
static ggprof_acc_span span_of(const ivl_list *g, const ivl_list *u, const ivl_list *idle, int64_t a, int64_t b) {
    ggprof_acc_span s = { 0 };
    if (b <= a) return s;
    s.ns             = sat_sub(b, a);
    s.compute_ns     = ivl_covered(g, a, b);
    s.graph_build_ns = pos(sat_sub(ivl_covered(u, a, b), s.compute_ns));
    s.idle_ns        = ivl_covered(idle, a, b);
    s.host_ns        = pos(sat_sub(sat_sub(sat_sub(s.ns, s.compute_ns), s.graph_build_ns), s.idle_ns));
    return s;
}

/* The work's stretch: idle and host gaps, and the spans of time to first token and of generation. */
static void cut_work(ggprof_acc_proc *p, const acc_work *w) {
    const ivl_list *u     = &w->u;
    int64_t         u_end = u->n ? clamp(u->v[u->n - 1].b, w->t_work, p->end_ns) : w->t_work;
    p->idle_ns            = ivl_covered(&w->idle, w->t_work, p->end_ns);
    p->host_gaps_ns = sat_add(w->pre_gaps, pos(sat_sub(sat_sub(sat_sub(u_end, w->t_work), ivl_covered(u, w->t_work, u_end)),
                                                       ivl_covered(&w->idle, w->t_work, u_end))));
    if (p->first_token_ns) {
        p->ttft         = span_of(&w->g, u, &w->idle, w->t_work, clamp(p->first_token_ns, w->t_work, p->end_ns));
        p->ttft.host_ns = sat_add(p->ttft.host_ns, w->pre_gaps);
    }
    if (p->n_gen_batches) p->gen = span_of(&w->g, u, &w->idle, w->gen_a, w->gen_b);
}

/* llama.cpp's own "load time" and "total time" (common_perf_print), computed as llama_context computes them from
 * the engine's spans (schema/llama_regions.h): its start is the last llama_perf_context_reset before the call that
 * reads it, else the start of the last model load before it (the model's t_start_us); load time ends with the first
 * llama_decode that had tokens, total time with the last llama_perf_context call. -1: none. */
static int llama_counters(acc_q *q, ggprof_acc_proc *p, const acc_work *w) {
    static const char *const k_reset[] = GGPROF_LLAMA_NAMES(GGPROF_LLAMA_PERF_RESET_CALLS);
    static const char *const k_perf[]  = GGPROF_LLAMA_NAMES(GGPROF_LLAMA_PERF_CALLS);
    const ivl_list *b = &w->b, *btok = &w->btok, *ld = &w->ld;
    p->llama_load_ns = p->llama_total_ns = -1;
    ivl_list rs = { 0 }, pc = { 0 };
    load_llama_spans(q, k_reset, N_OF(k_reset), &rs);
    load_llama_spans(q, k_perf, N_OF(k_perf), &pc);
    if (q->failed) {
        free(rs.v), free(pc.v);
        return -1;
    }
    int64_t t[2] = { INT64_MIN, pc.n ? pc.v[pc.n - 1].a : INT64_MIN }, end[2] = { INT64_MIN, pc.n ? pc.v[pc.n - 1].b : 0 };
    for (size_t i = 0; i < b->n; i++) {
        if (btok->v[i].a > 0) {
            t[0] = b->v[i].a, end[0] = b->v[i].b;
            break;
        }
    }
    for (int k = 0; k < 2; k++) {
        if (t[k] == INT64_MIN) continue;
        int64_t from = INT64_MIN;
        for (size_t i = 0; i < rs.n && rs.v[i].a < t[k]; i++) from = rs.v[i].a;
        for (size_t i = 0; from == INT64_MIN && i < ld->n; i++) {
            if (ld->v[i].a < t[k] && (i + 1 == ld->n || ld->v[i + 1].a >= t[k])) from = ld->v[i].a;
        }
        if (from != INT64_MIN && end[k] >= from) *(k ? &p->llama_total_ns : &p->llama_load_ns) = sat_sub(end[k], from);
    }
    free(rs.v), free(pc.v);
    return 0;
}

/* Adds a category of at most what is left of the wall time. */
static void cat_take(ggprof_acc_proc *p, int64_t *left, const char *name, int64_t ns) {
    ns = pos(ns);
    if (ns > *left) ns = *left;
    if (p->n_cats == GGPROF_ACC_MAX_CATS) return;
    ggprof_acc_cat *c = &p->cats[p->n_cats++];
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->ns = ns;
    *left -= ns;
}

/* The categories, in order, each of at most what is left of the wall. Compute per backend: its splits' time, else
 * its OP and SYNC records' (a JSON profile, or level op only), scaled into the graphs' time less the copies when they
 * add up to more (backends computing at once). */
static int take_categories(acc_q *q, ggprof_acc_proc *p, const acc_work *w) {
    int64_t left = p->wall_ns;
    cat_take(p, &left, GGPROF_ACC_STARTUP, p->before_setup_ns);
    cat_take(p, &left, GGPROF_ACC_LOADING, p->loading_ns);
    cat_take(p, &left, GGPROF_ACC_CONTEXT, p->context_ns);
    const char *sql = scalar_pid(q, "SELECT count(*) FROM split_list WHERE pid = ?1", 0, NULL)
        ? "SELECT ggprof_backend_label(b.name, s.backend_id), CAST(total(s.duration_ns) AS INTEGER)"
          " FROM split_list s LEFT JOIN backend_list b ON b.pid = s.pid AND b.sched_id = s.sched_id"
          " AND b.id = s.backend_id WHERE s.pid = ?1 AND s.duration_ns > 0 GROUP BY 1 ORDER BY 2 DESC, 1"
        : "SELECT ggprof_backend_label(b.name, e.backend_id), CAST(total(e.duration_ns) AS INTEGER)"
          " FROM events e LEFT JOIN backend_list b ON b.pid = e.pid AND b.sched_id = e.sched_id"
          " AND b.id = e.backend_id WHERE e.pid = ?1 AND e.type IN (0, 2) AND e.duration_ns > 0 GROUP BY 1"
          " ORDER BY 2 DESC, 1";
    int64_t       in_graphs = w->g.n ? pos(sat_sub(p->graphs_ns, p->copies_ns)) : INT64_MAX, sum = 0;
    sqlite3_stmt *st        = q->failed ? NULL : q_prepare(q, sql);
    int           step      = SQLITE_DONE;
    for (int pass = 0; st && pass < 2 && step == SQLITE_DONE; pass++) {
        while ((step = sqlite3_step(st)) == SQLITE_ROW) {
            int64_t ns = pos(sqlite3_column_int64(st, 1));
            if (pass == 0) {
                sum = sat_add(sum, ns);
                continue;
            }
            if (sum > in_graphs) ns = (int64_t) ((double) ns * ((double) in_graphs / (double) sum));
            char        name[72];
            const char *bn = (const char *) sqlite3_column_text(st, 0);
            snprintf(name, sizeof(name), GGPROF_ACC_COMPUTE "%.60s", bn ? bn : "?");
            cat_take(p, &left, name, ns);
        }
        if (step == SQLITE_DONE) sqlite3_reset(st);
    }
    if (st) q_done(q, st, step, sql);
    cat_take(p, &left, GGPROF_ACC_COPIES, p->copies_ns);
    cat_take(p, &left, GGPROF_ACC_GRAPH_BUILD, p->graph_build_ns);
    cat_take(p, &left, GGPROF_ACC_HOST_GAPS, p->host_gaps_ns);
    cat_take(p, &left, GGPROF_ACC_IDLE, p->idle_ns);
    cat_take(p, &left, GGPROF_ACC_OTHER, left);
    return q->failed ? -1 : 0;
}

/* Moves what the slices need into p (w's lists left empty). */
static int keep_ivls(acc_q *q, ggprof_acc_proc *p, acc_work *w) {
    struct ggprof_acc_ivls *k = calloc(1, sizeof(*k));
    if (!k) {
        q_fail(q, "out of memory", "");
        return -1;
    }
    k->g = w->g, k->u = w->u, k->idle = w->idle, k->ld = w->ld, k->setup = w->setup;
    k->t_use = w->t_use, k->t_work = w->t_work;
    memset(&w->g, 0, sizeof(w->g)), memset(&w->u, 0, sizeof(w->u)), memset(&w->idle, 0, sizeof(w->idle));
    memset(&w->ld, 0, sizeof(w->ld)), memset(&w->setup, 0, sizeof(w->setup));
    p->ivls = k;
    return 0;
}

static void ivls_free(struct ggprof_acc_ivls *k) {
    if (!k) return;
    free(k->g.v), free(k->u.v), free(k->idle.v), free(k->ld.v), free(k->setup.v);
    free(k);
}

/* One process's accounting, phase by phase. Returns 0, or -1 with q's reason. */
static int account(acc_q *q, ggprof_acc_proc *p) {
    acc_work w  = { 0 };
    int      rc = find_wall(q, p);
    if (rc == 0) rc = find_thread(q, p);
    if (rc == 0) rc = load_work(q, p, &w);
    if (rc == 0) rc = count_work(q, p, &w);
    if (rc == 0) rc = cut_setup(q, p, &w);
    if (rc == 0) cut_work(p, &w);
    if (rc == 0) rc = llama_counters(q, p, &w);
    if (rc == 0) rc = take_categories(q, p, &w);
    if (rc == 0) rc = keep_ivls(q, p, &w);
    work_free(&w);
    return rc;
}

/* ---------------------------------------------------------------- the processes */

/* The processes of the trace: every pid with records, graphs or llama_decode calls. */
static int list_procs(sqlite3 *db, ggprof_accounting *a, char *why, size_t why_len) {
    static const char sql[] = "SELECT pid FROM events UNION SELECT pid FROM graph_list UNION SELECT pid FROM batches"
                              " ORDER BY 1";
    sqlite3_stmt *st = NULL;
    char          msg[256];
    if (ggprof_sql_prepare(db, sql, &st, msg, sizeof(msg)) != GGPROF_SQL_OK) {
        snprintf(why, why_len, "accounting: %s", msg);
        return -1;
    }
    size_t cap = 0;
    int    step;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_type(st, 0) == SQLITE_NULL) continue;
        if (a->n_procs == cap) {
            cap                = cap ? 2 * cap : 4;
            ggprof_acc_proc *v = realloc(a->procs, cap * sizeof(*v));
            if (!v) {
                snprintf(why, why_len, "accounting: out of memory");
                sqlite3_finalize(st);
                return -1;
            }
            a->procs = v;
        }
        ggprof_acc_proc *p = &a->procs[a->n_procs++];
        memset(p, 0, sizeof(*p));
        p->pid = sqlite3_column_int(st, 0);
    }
    if (step != SQLITE_DONE) snprintf(why, why_len, "accounting: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return step == SQLITE_DONE ? 0 : -1;
}

int ggprof_accounting_load(sqlite3 *db, ggprof_accounting *a, char *why, size_t why_len) {
    memset(a, 0, sizeof(*a));
    int rc = list_procs(db, a, why, why_len);
    for (size_t i = 0; rc == 0 && i < a->n_procs; i++) {
        acc_q q = { db, a->procs[i].pid, why, why_len, 0 };
        rc      = account(&q, &a->procs[i]);
    }
    for (size_t i = 0; rc == 0 && i < a->n_procs; i++) {
        if ((rc = ggprof_request_times(db, a->procs[i].pid, a->procs[i].tid, &a->procs[i].requests)) != 0) {
            snprintf(why, why_len, "accounting: out of memory");
        }
    }
    if (rc != 0) ggprof_accounting_free(a);
    return rc;
}

void ggprof_accounting_free(ggprof_accounting *a) {
    for (size_t i = 0; i < a->n_procs; i++) {
        ggprof_request_times_free(&a->procs[i].requests);
        ivls_free(a->procs[i].ivls);
    }
    free(a->procs);
    memset(a, 0, sizeof(*a));
}

int64_t ggprof_accounting_cat(const ggprof_acc_proc *p, const char *name) {
    for (size_t i = 0; i < p->n_cats; i++) {
        if (strcmp(p->cats[i].name, name) == 0) return p->cats[i].ns;
    }
    return 0;
}
